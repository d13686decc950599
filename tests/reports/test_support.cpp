#include "test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>

#include "harness/core/stats.hpp"
#include "harness/core/mix64.hpp"

namespace encbench::reports::test {

std::filesystem::path source_root() {
  const char* src = std::getenv("ENCBENCH_SOURCE_DIR");
  return src ? src : ENCBENCH_TEST_SOURCE_DIR;
}

std::filesystem::path fixture(const std::string& name) {
  return source_root() / "tests" / "reports" / "fixtures" / name;
}

std::filesystem::path temp_dir(const std::string& tag) {
  const char* env_bin = std::getenv("ENCBENCH_BINARY_DIR");
  const char* bin = env_bin ? env_bin : ENCBENCH_TEST_BINARY_DIR;
  std::filesystem::path base = bin ? std::filesystem::path(bin) / "test-output" / "reports"
                                   : std::filesystem::temp_directory_path() / "encbench-reports-tests";
  std::random_device rd;
  auto dir = base / (tag + "-" + std::to_string(rd()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

namespace {
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() { return splitmix64_next(state); }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0; }
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
};
}  // namespace

std::vector<double> lognormal(std::uint64_t seed, std::size_t n, double median, double sigma) {
  SplitMix64 rng{seed * 7919 + 17};
  std::vector<double> out(n);
  for (auto& v : out) v = median * std::exp(sigma * rng.normal());
  return out;
}

nlohmann::json crafted_serving(std::uint64_t seed, std::size_t n, double ttft_scale, double itl_scale) {
  const auto ttft = lognormal(seed, n, 0.60, 0.30);
  SplitMix64 rng{seed * 104729 + 3};
  // Arrivals follow one fixed schedule whatever the seed, as vllm's --seed fixes them for both
  // sides of a comparison; only the server-side latencies vary with the seed.
  SplitMix64 schedule{42};
  std::vector<double> ttfts, lats, starts, outs, ins;
  nlohmann::json itls = nlohmann::json::array();
  std::vector<double> all_itl_ms, tpots_ms;
  double t = 1000.0;
  double total_out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    t += 0.05 + 0.1 * schedule.uniform();
    starts.push_back(t);
    const double first = ttft[i] * ttft_scale;
    const int k = 8;
    nlohmann::json gaps = nlohmann::json::array();
    double sum = 0;
    for (int j = 1; j < k; ++j) {
      const double g = itl_scale * 0.030 * std::exp(0.25 * rng.normal());
      gaps.push_back(g);
      all_itl_ms.push_back(g * 1e3);
      sum += g;
    }
    itls.push_back(gaps);
    ttfts.push_back(first);
    lats.push_back(first + sum);
    tpots_ms.push_back(sum * 1e3 / (k - 1));
    outs.push_back(k);
    ins.push_back(100);
    total_out += k;
  }
  double end = 0;
  for (std::size_t i = 0; i < n; ++i) end = std::max(end, starts[i] + lats[i]);
  const double duration = end - 1000.0;
  std::vector<double> ttft_ms, e2el_ms;
  for (std::size_t i = 0; i < n; ++i) {
    ttft_ms.push_back(ttfts[i] * 1e3);
    e2el_ms.push_back(lats[i] * 1e3);
  }
  nlohmann::json doc = {
      {"date", "20261122-010000"}, {"endpoint_type", "openai-chat"}, {"backend", "openai-chat"},
      {"label", nullptr}, {"model_id", "Qwen/Qwen3-VL-8B-Instruct"}, {"tokenizer_id", "Qwen/Qwen3-VL-8B-Instruct"},
      {"num_prompts", n}, {"request_rate", "inf"}, {"burstiness", 1.0}, {"max_concurrency", 16},
      {"duration", duration}, {"completed", n}, {"failed", 0}, {"total_input_tokens", 100.0 * n},
      {"total_output_tokens", total_out}, {"request_throughput", n / duration}, {"request_goodput", nullptr},
      {"output_throughput", total_out / duration}, {"total_token_throughput", (total_out + 100.0 * n) / duration},
      {"input_lens", ins}, {"output_lens", outs}, {"ttfts", ttfts}, {"itls", itls}, {"latencies", lats},
      {"start_times", starts}, {"queue_times", std::vector<double>(n, 0.0)},
      {"generated_texts", std::vector<std::string>(n, "x")}, {"errors", std::vector<std::string>(n, "")},
      {"max_output_tokens_per_s", 120.0}, {"max_concurrent_requests", 16}};
  auto put = [&](const std::string& key, const std::vector<double>& xs) {
    doc["mean_" + key + "_ms"] = stats::mean(xs);
    doc["median_" + key + "_ms"] = stats::median(xs);
    doc["std_" + key + "_ms"] = stats::stdev_population(xs);
    doc["p99_" + key + "_ms"] = stats::percentile(xs, 99);
  };
  put("ttft", ttft_ms);
  put("tpot", tpots_ms);
  put("itl", all_itl_ms);
  put("e2el", e2el_ms);
  return doc;
}

void write_json(const std::filesystem::path& path, const nlohmann::json& doc) {
  std::ofstream(path) << doc.dump(1) << "\n";
}

}  // namespace encbench::reports::test
