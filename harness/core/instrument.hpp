#pragma once
// Valgrind (callgrind) client requests for instruction counts, usable from any library.
//
// Outside Valgrind every request is a few no-op instructions (Valgrind's "magic sequence"), so the
// hooks may stay in production code. encbench-instr (harness/micro/instr_main.cpp) runs its cases
// under `valgrind --tool=callgrind --collect-atstart=no`: it calls begin() before a measured
// region and end() after it; dump(name) writes the counts since the last dump into a file whose
// `desc: Trigger: Client Request: <name>` line names the region.
//
// pause()/resume() bracket harness bookkeeping that must not count as the measured code's work
// (the simulated device's clock, recorder and queue model: harness/device/virtual_device.cpp).
// They nest and only act between begin() and end(), so bookkeeping during set-up is not switched
// *on* by mistake (callgrind only has a toggle, not on/off).
#include <atomic>
#include <string>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define ENCBENCH_HAVE_CALLGRIND 1
#endif
#endif

namespace encbench::instrument {

namespace detail {
// Collection state this process asked callgrind for. One measuring thread at a time (the
// encoder's host thread); atomics only so that a device worker thread reading it is not a race.
inline std::atomic<bool> measuring{false};
inline std::atomic<int> paused_depth{0};
inline void toggle() {
#ifdef ENCBENCH_HAVE_CALLGRIND
  CALLGRIND_TOGGLE_COLLECT;
#endif
}
}  // namespace detail

// True when this process runs under Valgrind (any tool).
inline bool running_on_valgrind() {
#ifdef ENCBENCH_HAVE_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

// True when this build can issue callgrind requests at all.
constexpr bool available() {
#ifdef ENCBENCH_HAVE_CALLGRIND
  return true;
#else
  return false;
#endif
}

// Starts counting (collection on). Counts since the last dump are discarded first.
inline void begin() {
  if (detail::measuring.exchange(true)) return;
#ifdef ENCBENCH_HAVE_CALLGRIND
  CALLGRIND_ZERO_STATS;
#endif
  detail::paused_depth.store(0);
  detail::toggle();
}

// Stops counting (collection off).
inline void end() {
  if (!detail::measuring.exchange(false)) return;
  if (detail::paused_depth.load() == 0) detail::toggle();
  detail::paused_depth.store(0);
}

// Writes the counts collected since the last dump (or begin) under `name`, and zeroes them.
inline void dump(const std::string& name) {
#ifdef ENCBENCH_HAVE_CALLGRIND
  CALLGRIND_DUMP_STATS_AT(name.c_str());
#else
  (void)name;
#endif
}

// Excludes harness bookkeeping from the count; nests. No-op outside begin()..end().
inline void pause() {
  if (!detail::measuring.load(std::memory_order_relaxed)) return;
  if (detail::paused_depth.fetch_add(1) == 0) detail::toggle();
}
inline void resume() {
  if (!detail::measuring.load(std::memory_order_relaxed)) return;
  if (detail::paused_depth.fetch_sub(1) == 1) detail::toggle();
}

// RAII pause.
class Paused {
 public:
  Paused() { pause(); }
  ~Paused() { resume(); }
  Paused(const Paused&) = delete;
  Paused& operator=(const Paused&) = delete;
};

}  // namespace encbench::instrument
