#pragma once
// One monotonic clock for the whole program: integer nanoseconds since an arbitrary epoch.
// Every recorded time (host spans, device op submit/start/end, request timings) uses it, so
// times from different threads and layers can be compared directly.
#include <chrono>
#include <cstdint>
#include <ctime>

namespace encbench {

using Nanos = std::int64_t;

inline Nanos now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time consumed by the calling thread (CLOCK_THREAD_CPUTIME_ID): time the thread was
// preempted or blocked does not count, so it does not move with machine load the way wall time
// does. A syscall (~0.1-0.5 us), not a vDSO read: call it per device API call, not per element.
inline Nanos thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<Nanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline double ns_to_us(Nanos ns) { return static_cast<double>(ns) / 1e3; }
inline double ns_to_ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }
inline double ns_to_s(Nanos ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace encbench
