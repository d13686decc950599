#pragma once
// The arrival schedule, computed once before the run (vllm >= PR #21108 semantics):
// gap_i = 0 for an infinite rate; 1/rate when burstiness is infinite; otherwise
// gamma(shape=burstiness, scale=1/(rate*burstiness)) drawn from a generator seeded with --seed.
// The cumulative offsets are rescaled so the last equals exactly N/rate; the first request is
// still delayed by its own (scaled) gap. The loop sends request i at start + offset_i (absolute),
// never "sleep after send", so lateness never accumulates.
//
// The draws are vLLM's own: numpy's legacy global generator after np.random.seed(--seed) and
// np.random.gamma (harness/client/numpy_random.hpp), so a seed gives vLLM's schedule to the last
// bit of the gaps (tests/client/numpy_random_test.cpp compares with numpy).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/core/clock.hpp"

namespace encbench::client {

// Offsets in seconds from the benchmark start. Throws InvalidInput for rate <= 0 or NaN,
// burstiness <= 0 or NaN. skip_draws: 32-bit draws the dataset already took from vLLM's global
// np.random after the seed (Dataset::numpy_global_draws); the gaps are drawn after them, as vLLM's.
std::vector<double> arrival_offsets_s(std::size_t count, double request_rate, double burstiness,
                                      std::uint64_t seed, std::uint64_t skip_draws = 0);
std::vector<Nanos> arrival_offsets_ns(std::size_t count, double request_rate, double burstiness,
                                      std::uint64_t seed, std::uint64_t skip_draws = 0);

// vllm's --ramp-up-strategy (serve.py _get_current_request_rate / get_request): request i runs at
// rate r_i = start + (end - start) * p (linear) or start * (end / start)^p (exponential), with
// p = i / max(N - 1, 1); its gap is 1/r_i (burstiness inf) or gamma(burstiness, 1/(r_i *
// burstiness)); the gaps are summed and NOT rescaled. `rates` (optional) receives every r_i.
enum class RampUp { none, linear, exponential };
RampUp parse_ramp_up(const std::string& name);  // "linear" | "exponential"; throws InvalidInput
double ramp_up_rate(RampUp strategy, double start_rps, double end_rps, std::size_t index, std::size_t count);
std::vector<double> ramp_up_offsets_s(std::size_t count, RampUp strategy, int start_rps, int end_rps,
                                      double burstiness, std::uint64_t seed, std::vector<double>* rates = nullptr,
                                      std::uint64_t skip_draws = 0);
std::vector<Nanos> to_offsets_ns(const std::vector<double>& seconds);

// vllm's rps_change_events: the start rate at the run start, then every integer rate passed when
// request i is released (one event per integer, all stamped with that release).
struct RpsChange {
  int rps = 0;
  std::size_t request_index = 0;  // the request whose release crossed it (0 for the first)
};
std::vector<RpsChange> rps_change_events(const std::vector<double>& rates, int start_rps);

}  // namespace encbench::client
