#include "harness/client/schedule.hpp"

#include <algorithm>
#include <cmath>
#include "harness/client/numpy_random.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {

namespace {
// vLLM seeds numpy's global generator with --seed (np.random.seed, which takes 0..2^32-1) and draws
// the gaps from it with np.random.gamma: the same stream for the same seed. Larger seeds (vLLM
// refuses them) keep their low 32 bits.
std::uint32_t vllm_global_seed(std::uint64_t seed) { return static_cast<std::uint32_t>(seed); }
}  // namespace

std::vector<double> arrival_offsets_s(std::size_t count, double request_rate, double burstiness,
                                      std::uint64_t seed, std::uint64_t skip_draws) {
  require(!std::isnan(request_rate) && request_rate > 0,
          "--request-rate must be > 0 (or inf), got " + std::to_string(request_rate));
  require(!std::isnan(burstiness) && burstiness > 0,
          "--burstiness must be > 0 (or inf), got " + std::to_string(burstiness));
  std::vector<double> offsets(count, 0.0);
  if (count == 0 || std::isinf(request_rate)) return offsets;
  NumpyRandomState rng(vllm_global_seed(seed));
  rng.skip(skip_draws);
  double cumulative = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double gap = std::isinf(burstiness) ? 1.0 / request_rate : rng.gamma(burstiness, 1.0 / (request_rate * burstiness));
    cumulative += gap;
    offsets[i] = cumulative;
  }
  const double target_last = static_cast<double>(count) / request_rate;
  if (offsets.back() > 0) {
    const double scale = target_last / offsets.back();
    for (double& t : offsets) t *= scale;
  }
  offsets.back() = target_last;  // exact, whatever the rounding of the scale
  return offsets;
}

std::vector<Nanos> arrival_offsets_ns(std::size_t count, double request_rate, double burstiness,
                                      std::uint64_t seed, std::uint64_t skip_draws) {
  return to_offsets_ns(arrival_offsets_s(count, request_rate, burstiness, seed, skip_draws));
}

RampUp parse_ramp_up(const std::string& name) {
  if (name == "linear") return RampUp::linear;
  if (name == "exponential") return RampUp::exponential;
  throw InvalidInput("--ramp-up-strategy must be linear or exponential, got '" + name + "'");
}

double ramp_up_rate(RampUp strategy, double start, double end, std::size_t index, std::size_t count) {
  const double progress = static_cast<double>(index) / static_cast<double>(std::max<std::size_t>(count, 2) - 1);
  if (strategy == RampUp::linear) return start + (end - start) * progress;
  return start * std::pow(end / start, progress);
}

std::vector<double> ramp_up_offsets_s(std::size_t count, RampUp strategy, int start_rps, int end_rps,
                                      double burstiness, std::uint64_t seed, std::vector<double>* rates,
                                      std::uint64_t skip_draws) {
  require(strategy != RampUp::none, "ramp_up_offsets_s needs a ramp-up strategy");
  require(!std::isnan(burstiness) && burstiness > 0, "--burstiness must be > 0 (or inf)");
  NumpyRandomState rng(vllm_global_seed(seed));
  rng.skip(skip_draws);
  std::vector<double> offsets(count, 0.0);
  double cumulative = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double rate = ramp_up_rate(strategy, start_rps, end_rps, i, count);
    // vllm asserts this (a linear ramp from 0 stops there at its first request).
    require(rate > 0, "ramp-up rate of request " + std::to_string(i) + " is " + std::to_string(rate) +
                          " (vllm: 'Obtained non-positive request rate'); use --ramp-up-start-rps >= 1");
    if (rates) rates->push_back(rate);
    const double gap = std::isinf(burstiness) ? 1.0 / rate : rng.gamma(burstiness, 1.0 / (rate * burstiness));
    cumulative += gap;
    offsets[i] = cumulative;
  }
  return offsets;
}

std::vector<RpsChange> rps_change_events(const std::vector<double>& rates, int start_rps) {
  std::vector<RpsChange> events{{start_rps, 0}};
  int last = start_rps;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const int current = static_cast<int>(rates[i]);  // Python int(): toward zero
    if (current > last) {
      for (int v = last + 1; v <= current; ++v) events.push_back({v, i});
      last = current;
    }
  }
  return events;
}

std::vector<Nanos> to_offsets_ns(const std::vector<double>& seconds) {
  std::vector<Nanos> out(seconds.size());
  for (std::size_t i = 0; i < seconds.size(); ++i) out[i] = static_cast<Nanos>(std::llround(seconds[i] * 1e9));
  return out;
}

}  // namespace encbench::client
