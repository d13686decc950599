// bench serve's vision metrics (harness/client/vision_metrics.hpp): the real binary against the
// scripted server over a JSONL of 320x240 and 800x600 images, alternating. Checked against what
// is known without encbench's code: the pixels (the images' own sizes), the request bytes (the
// bodies the server received), the vision tokens (the server's scripted usage.prompt_tokens minus
// the tokenizer's text tokens; without a tokenizer, Qwen2.5-VL's smart_resize by hand: 320x240 ->
// 308x252 -> 11x9 merged patches = 99 tokens, 800x600 -> 812x588 -> 29x21 = 609), and TTFT per
// image-size bucket against the scripted first-chunk delays (10 ms for the small images, 80 ms
// for the large).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/client/image.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_server.hpp"

namespace {

namespace fs = std::filesystem;
using encbench::testing::Script;
using encbench::testing::ServerConfig;
using encbench::testing::TestServer;
using nlohmann::json;

constexpr int kRows = 8;

fs::path temp_dir(const std::string& tag) {
  const auto d = fs::temp_directory_path() / ("encbench-vision-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Row i: a 320x240 image when i is even, 800x600 when odd.
fs::path write_dataset(const fs::path& dir) {
  const fs::path file = dir / "va.jsonl";
  std::ofstream out(file);
  for (int i = 0; i < kRows; ++i) {
    const bool small = i % 2 == 0;
    const auto image = encbench::client::synthetic_image(small ? 320 : 800, small ? 240 : 600, 7 + i);
    const json row = {{"turns", json::array({json::array({{{"role", "user"}, {"content", "Describe picture number " + std::to_string(i)}}})})},
                      {"images", json::array({{{"bytes", encbench::client::base64_encode(encbench::client::encode_png(image))}}})}};
    out << row.dump() << "\n";
  }
  return file;
}

ServerConfig scripted_server() {
  Script small, large;
  small.ttft_ms = 10;
  small.prompt_tokens = 500;
  large.ttft_ms = 80;
  large.prompt_tokens = 1500;
  ServerConfig sc;
  sc.scripts = {small, large};  // request i (no shuffle: row i) uses scripts[i % 2]
  return sc;
}

struct BenchRun {
  encbench::testing::CommandOutcome outcome;
  json result;
};

BenchRun bench(int port, const fs::path& dir, const fs::path& dataset, const std::string& extra) {
  const std::string command = std::string("timeout 120 ") + ENCBENCH_EXE +
                              " bench serve --backend openai-chat --endpoint /v1/chat/completions --port " + std::to_string(port) +
                              " --model qwen2.5-vl-7b --dataset-name hf --dataset-path " + dataset.string() +
                              " --num-prompts 8 --disable-shuffle --hf-output-len 4 --max-concurrency 1 --disable-tqdm"
                              " --save-result --save-detailed --result-dir " + dir.string() + " --result-filename r.json " + extra + " 2>&1";
  BenchRun run{encbench::testing::run_command(command), json()};
  std::ifstream in(dir / "r.json");
  if (in) run.result = json::parse(in);
  return run;
}

const json& bucket(const json& result, const std::string& label) {
  for (const auto& b : result.at("ttft_by_image_size"))
    if (b.at("bucket") == label) return b;
  static const json none;
  ADD_FAILURE() << "no bucket " << label << " in " << result.at("ttft_by_image_size").dump();
  return none;
}

void expect_common(const BenchRun& run, const TestServer& server) {
  const json& r = run.result;
  ASSERT_TRUE(r.is_object()) << run.outcome.output;
  EXPECT_EQ(r.at("completed"), kRows);  // vLLM's keys stay
  EXPECT_EQ(r.at("images_sent"), kRows);
  EXPECT_EQ(r.at("images_completed"), kRows);
  EXPECT_NEAR(r.at("image_throughput").get<double>(), kRows / r.at("duration").get<double>(), 1e-9);
  EXPECT_DOUBLE_EQ(r.at("mean_image_pixels").get<double>(), (320.0 * 240 + 800.0 * 600) / 2);
  EXPECT_DOUBLE_EQ(r.at("median_image_pixels").get<double>(), (320.0 * 240 + 800.0 * 600) / 2);
  EXPECT_DOUBLE_EQ(r.at("p99_image_pixels").get<double>(), 800.0 * 600);
  double body_bytes = 0;
  for (const auto& s : server.served()) body_bytes += static_cast<double>(s.body_bytes);
  EXPECT_EQ(server.served().size(), static_cast<std::size_t>(kRows));
  EXPECT_DOUBLE_EQ(r.at("mean_request_bytes").get<double>(), body_bytes / kRows);
  const json& small = bucket(r, "< 0.25 MP");
  const json& large = bucket(r, "0.25-1 MP");
  EXPECT_EQ(small.value("count", 0), kRows / 2);
  EXPECT_EQ(large.value("count", 0), kRows / 2);
  EXPECT_GE(small.value("mean_ttft_ms", 0.0), 10.0);
  EXPECT_LT(small.value("mean_ttft_ms", 1e9), 50.0);
  EXPECT_GE(large.value("mean_ttft_ms", 0.0), 80.0);
  EXPECT_LT(large.value("mean_ttft_ms", 1e9), 120.0);
  EXPECT_EQ(r.at("ttft_by_image_size").size(), 2u);  // only buckets that hold requests
  const std::string& out = run.outcome.output;
  EXPECT_NE(out.find("Vision (beyond vllm)"), std::string::npos) << out;
  EXPECT_NE(out.find("Images sent:                             8"), std::string::npos) << out;
  EXPECT_NE(out.find("< 0.25 MP  n 4"), std::string::npos) << out;
}

}  // namespace

TEST(BenchServeVision, ModelGeometryWithoutATokenizer) {
  TestServer server(scripted_server());
  server.start();
  const auto dir = temp_dir("geometry");
  const BenchRun run = bench(server.port(), dir, write_dataset(dir), "");  // no tokenizer found for the model name
  EXPECT_EQ(run.outcome.rc, 0) << run.outcome.output;
  expect_common(run, server);
  EXPECT_EQ(run.result.value("vision_tokens_source", ""), "model_geometry");
  EXPECT_EQ(run.result.value("vision_tokens_from_model_geometry", 0), kRows);
  EXPECT_DOUBLE_EQ(run.result.value("mean_vision_tokens", 0.0), (99.0 + 609.0) / 2);
  EXPECT_DOUBLE_EQ(run.result.value("p99_vision_tokens", 0.0), 609.0);
  EXPECT_NE(run.outcome.output.find("Vision tokens from:                      model geometry"), std::string::npos);
  fs::remove_all(dir);
}

TEST(BenchServeVision, ServerUsageMinusTextTokensWithATokenizer) {
  TestServer server(scripted_server());
  server.start();
  const auto dir = temp_dir("usage");
  const std::string tokenizer = std::string(ENCBENCH_TEST_SOURCE_DIR) + "/tests/tokenizer/data/tiny-qwen2/tokenizer.json";
  const BenchRun run = bench(server.port(), dir, write_dataset(dir), "--tokenizer " + tokenizer);
  EXPECT_EQ(run.outcome.rc, 0) << run.outcome.output;
  expect_common(run, server);
  EXPECT_EQ(run.result.value("vision_tokens_source", ""), "server_usage");
  EXPECT_EQ(run.result.value("vision_tokens_from_server_usage", 0), kRows);
  // The expected split: each request's scripted prompt_tokens minus its own text tokens.
  const auto text = run.result.at("input_text_tokens").get<std::vector<std::int64_t>>();
  ASSERT_EQ(text.size(), static_cast<std::size_t>(kRows));
  double sum = 0;
  for (int i = 0; i < kRows; ++i) {
    EXPECT_GT(text[static_cast<std::size_t>(i)], 0);
    sum += (i % 2 == 0 ? 500.0 : 1500.0) - static_cast<double>(text[static_cast<std::size_t>(i)]);
  }
  EXPECT_DOUBLE_EQ(run.result.value("mean_vision_tokens", 0.0), sum / kRows);
  fs::remove_all(dir);
}
