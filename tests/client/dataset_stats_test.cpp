// --plot-dataset-stats (vLLM's generate_dataset_stats_plot): the real binary against the scripted
// server writes vLLM's <result name>.dataset_stats.png (read back with our libpng decoder), for
// image requests also <result name>.dataset_stats.html (and, with --plot-timeline, vLLM's
// <result name>.timeline.html) beside the result, and the data it drew is the run's own (vLLM's
// input_lens / output_lens of the saved result, one image per random-mm request). A path that
// cannot be written exits 2 naming it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/imaging/decode.hpp"
#include "tests/support/test_server.hpp"

namespace {

std::string run_and_capture(const std::string& command, int& rc) {
  std::string output;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return output;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) output.append(buf, n);
  const int status = pclose(p);
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PlotDatasetStats, WritesVllmsPanelsBesideTheResultFromTheRunsLengths) {
  encbench::testing::TestServer server(encbench::testing::ServerConfig{});
  server.start();
  const auto dir = std::filesystem::temp_directory_path() / ("encbench-dsstats-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  int rc = -1;
  const std::string out = run_and_capture(
      std::string("timeout 120 ") + ENCBENCH_EXE + " bench serve --backend openai-chat --port " + std::to_string(server.port()) +
          " --model m --dataset-name random-mm --random-input-len 8 --random-output-len 5 --random-range-ratio 0.5"
          " --random-mm-bucket-config '{(16, 16, 1): 1.0}' --num-prompts 12 --disable-tqdm --skip-tokenizer-init"
          " --save-result --save-detailed --result-dir " + dir.string() + " --result-filename r.json --plot-dataset-stats"
          " --plot-timeline",
      rc);
  server.stop();
  ASSERT_EQ(rc, 0) << out;
  const auto png_path = dir / "r.dataset_stats.png";  // vLLM: Path(result).with_suffix(".dataset_stats.png")
  EXPECT_NE(out.find("Dataset statistics plot saved to: " + png_path.string()), std::string::npos) << out;
  std::ifstream png_in(png_path, std::ios::binary);
  ASSERT_TRUE(png_in.good()) << out;
  const std::string png((std::istreambuf_iterator<char>(png_in)), std::istreambuf_iterator<char>());
  const auto image = encbench::imaging::decode_rgb(reinterpret_cast<const std::uint8_t*>(png.data()), png.size(),
                                                   encbench::imaging::Limits{});
  EXPECT_EQ(image.info.format, encbench::imaging::Format::png);
  EXPECT_EQ(image.info.width, 2100);  // vLLM's figsize (14, 10) at dpi 150
  EXPECT_EQ(image.info.height, 1500);
  std::size_t non_white = 0;
  for (const auto v : image.rgb) non_white += v != 255 ? 1 : 0;
  EXPECT_GT(non_white, image.rgb.size() / 20) << "the four panels' bars, frames and text";
  const auto page_path = dir / "r.dataset_stats.html";  // ours, for the images vLLM's figure leaves out
  std::ifstream page_in(page_path);
  ASSERT_TRUE(page_in.good()) << out;
  std::stringstream ss;
  ss << page_in.rdbuf();
  const std::string page = ss.str();
  // vLLM's timeline name: Path(result).with_suffix(".timeline.html"), and no other page.
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "r.timeline.html")) << out;
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 4u) << "r.json, r.dataset_stats.png, r.dataset_stats.html, r.timeline.html";
  // vLLM's four panels, then images per request and image bytes (the requests carried images).
  EXPECT_EQ(count(page, "<svg "), 6u);
  for (const char* title : {"Prompt Tokens Distribution", "Output Tokens Distribution", "Prompt + Output Tokens Distribution",
                            "Tokens per request", "Images per Request"})
    EXPECT_NE(page.find(title), std::string::npos) << title;
  const std::string open = "<script id=\"dataset-stats\" type=\"application/json\">";
  const auto at = page.find(open);
  ASSERT_NE(at, std::string::npos);
  const auto data = nlohmann::json::parse(page.substr(at + open.size(), page.find("</script>", at) - at - open.size()));
  std::ifstream result_in(dir / "r.json");
  const auto result = nlohmann::json::parse(result_in);
  EXPECT_EQ(data["input_lens"], result["input_lens"]);
  EXPECT_EQ(data["output_lens"], result["output_lens"]);
  ASSERT_EQ(data["image_counts"].size(), 12u);
  for (const auto& c : data["image_counts"]) EXPECT_EQ(c, 1.0);
  for (const auto& kb : data["image_kib"]) EXPECT_GT(kb.get<double>(), 0.1);
  // Output lengths spread over [floor(5 * 0.5), ceil(5 * 1.5)] = [2, 8] tokens, as asked.
  for (const auto& o : data["output_lens"]) {
    EXPECT_GE(o.get<int>(), 2);
    EXPECT_LE(o.get<int>(), 8);
  }
  std::filesystem::remove_all(dir);
}

// Text requests get the PNG alone; a result directory under a regular file cannot hold it: exit 2
// with a line naming the path.
TEST(PlotDatasetStats, TextRunWritesOnlyThePngAndAnUnwritablePathExitsTwo) {
  encbench::testing::TestServer server(encbench::testing::ServerConfig{});
  server.start();
  const auto dir = std::filesystem::temp_directory_path() / ("encbench-dsstats-text-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string base = std::string("timeout 120 ") + ENCBENCH_EXE + " bench serve --port " + std::to_string(server.port()) +
                           " --model m --dataset-name random --random-input-len 8 --random-output-len 4 --num-prompts 5"
                           " --disable-tqdm --skip-tokenizer-init --result-filename r.json --plot-dataset-stats";
  int rc = -1;
  std::string out = run_and_capture(base + " --result-dir " + dir.string(), rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "r.dataset_stats.png")) << out;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.dataset_stats.html")) << "no images, no image page";
  std::ofstream(dir / "file") << "x";
  out = run_and_capture(base + " --result-dir " + (dir / "file" / "sub").string(), rc);
  server.stop();
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--plot-dataset-stats: cannot write " + (dir / "file" / "sub" / "r.dataset_stats.png").string()),
            std::string::npos)
      << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
