#pragma once
// Relating two processes' steady clocks (now_ns()): each reads its steady and system clocks
// together and names its boot. Same boot id: the same CLOCK_MONOTONIC, so times compare as they
// are (exact; a container with its own time namespace would break this, encbench never sets one).
// Otherwise the system clocks bridge them, and the alignment is only as good as the two hosts'
// clock sync (NTP: typically well under 1 ms on a LAN).
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

#include "harness/core/clock.hpp"

namespace encbench {

struct ClockAnchor {
  Nanos steady_ns = 0;          // now_ns()
  std::int64_t system_ns = 0;   // system_clock, ns since the Unix epoch, read right after
  std::string boot_id;          // /proc/sys/kernel/random/boot_id ("" where there is none)
};

inline std::string host_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

inline ClockAnchor clock_anchor_now() {
  ClockAnchor a;
  a.steady_ns = now_ns();
  a.system_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  a.boot_id = host_boot_id();
  return a;
}

}  // namespace encbench
