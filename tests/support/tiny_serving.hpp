#pragma once
// The smallest real serving set-up the scenario tests start from: `encbench serve`'s options for
// the tiny Qwen3-VL preset on the simulated Ascend 910B (port 0, profiling on), and a bench
// serve configuration of a few random text requests against it.
#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include "harness/client/bench.hpp"
#include "harness/server/serve_command.hpp"

namespace encbench::testing {

inline constexpr const char* kTinyModel = "tiny-qwen3-vl";

// Profiles (and the encoder's profile summaries) go to `profile_dir`.
inline server::ServeOptions tiny_server_options(const std::filesystem::path& profile_dir) {
  const char* source = std::getenv("ENCBENCH_SOURCE_DIR");
  server::ServeOptions o;
  o.port = 0;
  o.model = kTinyModel;
  o.device = "sim:ascend-910b";
  o.profiles_dir = std::filesystem::path(source ? source : ".") / "scenarios/devices";
  o.profile_dir = profile_dir;
  o.enable_profiling = true;
  o.encoder_preset = "baseline";
  return o;
}

// `prompts` random text requests (8 tokens in, 2 out) with --profile, against the server on `port`.
inline client::BenchConfig tiny_random_bench(std::uint16_t port, int prompts = 3) {
  client::BenchConfig bc;
  bc.port = port;
  bc.model = kTinyModel;
  bc.dataset.name = "random";
  bc.dataset.num_prompts = prompts;
  bc.dataset.random.input_len = 8;
  bc.dataset.random.output_len = 2;
  bc.profile = true;
  return bc;
}

}  // namespace encbench::testing
