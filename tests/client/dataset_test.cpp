// Datasets: both VisionArena layouts (JSONL, JSON array, file, directory, bytes and path images),
// random-mm, custom; images arrive as JPEG data URLs of the original size; errors are clear.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "harness/client/dataset.hpp"
#include "harness/client/image.hpp"
#include "harness/client/request_builder.hpp"
#include "harness/core/base64.hpp"
#include "harness/core/error.hpp"
#include "harness/imaging/decode.hpp"

using namespace encbench::client;
using encbench::Base64Form;
using encbench::base64_decode;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("encbench_client_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

RgbImage decode_data_url(const std::string& url) {
  const std::string prefix = "data:image/jpeg;base64,";
  EXPECT_EQ(url.rfind(prefix, 0), 0u);
  std::string raw;
  EXPECT_TRUE(base64_decode(url.substr(prefix.size()), Base64Form::lenient, raw));
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0xFF);  // JPEG SOI
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0xD8);
  return decode_image(raw, "test");
}

std::string expect_invalid(const std::function<void()>& f) {
  try {
    f();
  } catch (const encbench::InvalidInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InvalidInput";
  return {};
}
// A generated sample of 16x16 images in `layout` (custom, custom_image) written to dir/file.
fs::path generate_small(const fs::path& dir, const std::string& layout, int num, const std::string& file,
                        const std::string& image_ref = "bytes") {
  GenerateConfig gen;
  gen.layout = layout;
  gen.image_ref = image_ref;
  gen.num = num;
  gen.width = 16;
  gen.height = 16;
  gen.out = dir / file;
  generate_dataset(gen);
  return gen.out;
}

// A file dataset's config: `num_prompts` rows of `path` read as `name`.
DatasetConfig file_dataset(const std::string& name, const fs::path& path, std::size_t num_prompts, int custom_output_len) {
  DatasetConfig cfg;
  cfg.name = name;
  cfg.path = path.string();
  cfg.num_prompts = num_prompts;
  cfg.custom_output_len = custom_output_len;
  return cfg;
}
}  // namespace

TEST(Image, Base64RoundTrip) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    std::string back;
    ASSERT_TRUE(base64_decode(base64_encode(s), Base64Form::lenient, back));
    EXPECT_EQ(back, s);
  }
  EXPECT_EQ(base64_encode("Man"), "TWFu");
  std::string out;
  EXPECT_FALSE(base64_decode("@@@", Base64Form::lenient, out));
}

TEST(Dataset, VisionArenaBenchLayoutFromGeneratedJsonl) {
  const auto dir = temp_dir("va_bench");
  GenerateConfig gen;
  gen.layout = "vision-arena-bench";
  gen.num = 6;
  gen.width = 64;
  gen.height = 48;
  gen.out = dir / "bench.jsonl";
  ASSERT_EQ(generate_dataset(gen), 6u);
  DatasetConfig cfg;
  cfg.name = "hf";
  cfg.path = gen.out.string();
  cfg.num_prompts = 6;
  const Dataset ds = load_dataset(cfg);
  EXPECT_EQ(ds.layout, "vision-arena-bench");
  ASSERT_EQ(ds.samples.size(), 6u);
  EXPECT_TRUE(ds.multimodal);
  EXPECT_FALSE(ds.ignore_eos_default);
  // Prompt = turns[0][0].content of the row the sample came from.
  std::ifstream in(gen.out);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  for (const auto& s : ds.samples) {
    EXPECT_EQ(s.prompt, rows[s.source_row]["turns"][0][0]["content"].get<std::string>());
    ASSERT_EQ(s.image_urls.size(), 1u);
    const RgbImage img = decode_data_url(s.image_urls[0]);
    EXPECT_EQ(img.info.width, 64);
    EXPECT_EQ(img.info.height, 48);
    EXPECT_EQ(s.output_len, 128);
  }
  // Shuffled with the seed: deterministic, and a different seed gives another order.
  std::vector<std::size_t> order, order_again, order_other;
  for (const auto& s : ds.samples) order.push_back(s.source_row);
  for (const auto& s : load_dataset(cfg).samples) order_again.push_back(s.source_row);
  cfg.seed = 99;
  for (const auto& s : load_dataset(cfg).samples) order_other.push_back(s.source_row);
  EXPECT_EQ(order, order_again);
  EXPECT_NE(order, order_other);
}

TEST(Dataset, VisionArenaChatLayoutFromDirectoryWithPathImagesAndOversampling) {
  const auto dir = temp_dir("va_chat");
  GenerateConfig gen;
  gen.layout = "visionarena-chat";
  gen.num = 3;
  gen.width = 32;
  gen.height = 32;
  gen.image_ref = "path";
  gen.image_format = "jpeg";
  gen.out = dir / "train.jsonl";
  generate_dataset(gen);
  DatasetConfig cfg;
  cfg.name = "vision-arena";
  cfg.path = dir.string();  // a directory holding the file
  cfg.num_prompts = 10;
  cfg.output_len = 33;
  const Dataset ds = load_dataset(cfg);
  EXPECT_EQ(ds.layout, "visionarena-chat");
  EXPECT_EQ(ds.samples.size(), 10u);
  EXPECT_EQ(ds.oversampled, 7u);
  for (const auto& s : ds.samples) {
    EXPECT_NE(s.prompt.find("(sample "), std::string::npos);
    EXPECT_EQ(s.output_len, 33);
    EXPECT_EQ(decode_data_url(s.image_urls.at(0)).info.width, 32);
  }
  cfg.oversample = false;
  EXPECT_EQ(load_dataset(cfg).samples.size(), 3u);
}

TEST(Dataset, JsonArrayAndImageForms) {
  const auto dir = temp_dir("array");
  const std::string png = encode_png(synthetic_image(20, 10, 1));
  {
    std::ofstream f(dir / "img.png", std::ios::binary);
    f << png;
  }
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back({{"turns", {{{{"role", "user"}, {"content", "q0"}}}}}, {"images", {{{"bytes", base64_encode(png)}}}}});
  rows.push_back({{"turns", {{{{"role", "user"}, {"content", "q1"}}}}}, {"images", {"img.png"}}});
  rows.push_back({{"turns", {{{{"role", "user"}, {"content", "q2"}}}}}, {"images", {{{"url", "https://example.com/x.jpg"}}}}});
  {
    std::ofstream f(dir / "rows.json");
    f << rows.dump();
  }
  DatasetConfig cfg;
  cfg.name = "hf";
  cfg.path = (dir / "rows.json").string();
  cfg.num_prompts = 3;
  cfg.shuffle = false;
  const Dataset ds = load_dataset(cfg);
  ASSERT_EQ(ds.samples.size(), 3u);
  EXPECT_EQ(decode_data_url(ds.samples[0].image_urls[0]).info.width, 20);  // PNG bytes -> RGB -> JPEG
  EXPECT_EQ(decode_data_url(ds.samples[1].image_urls[0]).info.height, 10); // relative path
  EXPECT_EQ(ds.samples[2].image_urls[0], "https://example.com/x.jpg"); // remote URLs pass through
}

TEST(Dataset, RandomMmIsDeterministicWithRequestedSizes) {
  DatasetConfig cfg;
  cfg.name = "random-mm";
  cfg.num_prompts = 4;
  cfg.seed = 5;
  cfg.random.input_len = 12;
  cfg.random.output_len = 9;
  cfg.random.mm_base_items = 2;
  cfg.random.buckets = parse_bucket_config("{(24, 40, 1): 1.0}");
  const Dataset a = load_dataset(cfg);
  const Dataset b = load_dataset(cfg);
  EXPECT_TRUE(a.ignore_eos_default);
  ASSERT_EQ(a.samples.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a.samples[i].prompt, b.samples[i].prompt);
    EXPECT_EQ(a.samples[i].image_urls, b.samples[i].image_urls);
    EXPECT_EQ(a.samples[i].prompt_len, 12);
    EXPECT_EQ(count_words(a.samples[i].prompt), 12);
    EXPECT_EQ(a.samples[i].output_len, 9);
    ASSERT_EQ(a.samples[i].image_urls.size(), 2u);
    const RgbImage img = decode_data_url(a.samples[i].image_urls[0]);
    EXPECT_EQ(img.info.width, 40);
    EXPECT_EQ(img.info.height, 24);
  }
  cfg.seed = 6;
  EXPECT_NE(load_dataset(cfg).samples[0].prompt, a.samples[0].prompt);
  const auto buckets = parse_bucket_config("{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}");
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[1].width, 1280);
  EXPECT_THROW(parse_bucket_config("{(256, 256, 4): 1.0}"), encbench::InvalidInput);
}

TEST(Dataset, CustomJsonlUsesRowOutputTokensWithMinusOne) {
  const auto dir = temp_dir("custom");
  const fs::path file = generate_small(dir, "custom", 4, "custom.jsonl");
  // vllm: -1 takes each row's output_tokens
  const Dataset ds = load_dataset(file_dataset("custom", file, 4, -1));
  EXPECT_EQ(ds.layout, "custom");
  EXPECT_FALSE(ds.multimodal);
  std::ifstream in(file);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  for (const auto& s : ds.samples) {
    EXPECT_EQ(s.output_len, rows[s.source_row]["output_tokens"].get<int>());
    EXPECT_GE(s.output_len, 16);
    EXPECT_LE(s.output_len, 63);
    EXPECT_EQ(s.prompt, rows[s.source_row]["prompt"].get<std::string>());
    EXPECT_TRUE(s.image_urls.empty());
  }
}

TEST(Dataset, CustomImageCarriesImageFilesAsDataUrls) {
  const auto dir = temp_dir("custom_image");
  const fs::path file = generate_small(dir, "custom_image", 3, "ci.jsonl", "path");
  const Dataset ds = load_dataset(file_dataset("custom_image", file, 3, 7));
  EXPECT_TRUE(ds.multimodal);
  for (const auto& s : ds.samples) {
    ASSERT_EQ(s.image_urls.size(), 1u);
    EXPECT_EQ(s.image_urls[0].rfind("data:image/jpeg;base64,", 0), 0u);
    EXPECT_EQ(s.output_len, 7);
  }
}

// vLLM's custom_mm (CustomMMDataset): the custom_image rows, but only image_files[0] is sent.
TEST(Dataset, CustomMmSendsOnlyTheFirstImageFile) {
  const auto dir = temp_dir("custom_mm");
  const fs::path generated = generate_small(dir, "custom_image", 3, "ci.jsonl", "path");
  // Rows with two image files each: row k lists image k, then image k+1.
  std::vector<std::string> files;
  {
    std::ifstream in(generated);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) files.push_back(nlohmann::json::parse(line)["image_files"][0]);
  }
  ASSERT_EQ(files.size(), 3u);
  {
    std::ofstream out(dir / "mm.jsonl");
    for (std::size_t k = 0; k < 3; ++k)
      out << nlohmann::json{{"prompt", "row " + std::to_string(k)}, {"image_files", {files[k], files[(k + 1) % 3]}}}.dump() << "\n";
  }
  DatasetConfig cfg = file_dataset("custom_image", dir / "mm.jsonl", 3, 9);
  cfg.shuffle = false;
  const Dataset all = load_dataset(cfg);
  cfg.name = "custom_mm";
  const Dataset by_path = load_dataset(cfg);  // vLLM's default: file:// URLs for the server to read
  cfg.client_side_images = true;              // --custom-ensure-client-side-data: data URLs
  const Dataset first = load_dataset(cfg);
  EXPECT_EQ(first.layout, "custom_mm");
  EXPECT_TRUE(first.multimodal);
  ASSERT_EQ(first.samples.size(), 3u);
  ASSERT_EQ(by_path.samples.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(all.samples[k].image_urls.size(), 2u);
    ASSERT_EQ(first.samples[k].image_urls.size(), 1u);
    EXPECT_EQ(first.samples[k].image_urls[0], all.samples[k].image_urls[0]);
    EXPECT_NE(first.samples[k].image_urls[0], all.samples[k].image_urls[1]);
    EXPECT_EQ(first.samples[k].prompt, "row " + std::to_string(k));
    EXPECT_EQ(first.samples[k].output_len, 9);
    // The first file, absolute, as a file:// URL (the rows name it relative to the dataset file).
    ASSERT_EQ(by_path.samples[k].image_urls.size(), 1u);
    EXPECT_EQ(by_path.samples[k].image_urls[0], "file://" + (fs::absolute(dir) / files[k]).lexically_normal().string());
  }
}

TEST(Dataset, RandomOutputRangeAndImageCountWithinLimit) {
  DatasetConfig cfg;
  cfg.name = "random-mm";
  cfg.num_prompts = 200;
  cfg.random.input_len = 4;
  cfg.random.output_len = 10;
  cfg.random.output_range_ratio = 0.5;  // [5, 15]
  cfg.random.mm_base_items = 4;
  cfg.random.mm_items_range_ratio = 1.0;  // [0, 8], capped at the limit 2 before the draw
  cfg.random.mm_limit_images = 2;
  cfg.random.buckets = parse_bucket_config("{(8, 8, 1): 1.0}");
  const Dataset ds = load_dataset(cfg);
  std::map<std::size_t, int> counts;
  int lo = 1000, hi = 0;
  for (const auto& s : ds.samples) {
    ++counts[s.image_urls.size()];
    lo = std::min(lo, s.output_len);
    hi = std::max(hi, s.output_len);
  }
  EXPECT_GE(lo, 5);
  EXPECT_LE(hi, 15);
  EXPECT_LT(lo, 8);   // the range is used, not a fixed length
  EXPECT_GT(hi, 12);
  // Uniform over {0, 1, 2}: each about 67 of 200 (clamping after the draw would give 2 in ~75 %).
  for (std::size_t k = 0; k <= 2; ++k) {
    EXPECT_GT(counts[k], 40) << k;
    EXPECT_LT(counts[k], 95) << k;
  }
  EXPECT_EQ(counts.size(), 3u);
}

TEST(Dataset, ClearErrors) {
  DatasetConfig cfg;
  cfg.name = "hf";
  cfg.path = "lmarena-ai/vision-arena-bench-v0.1";
  const std::string hf = expect_invalid([&] { load_dataset(cfg); });
  EXPECT_NE(hf.find("Hugging Face"), std::string::npos);
  EXPECT_NE(hf.find("docs/client.md"), std::string::npos);  // the export recipe lives there
  EXPECT_LE(std::count(hf.begin(), hf.end(), '\n'), 2) << hf;
  cfg.path = "/nonexistent/dir/file.jsonl";
  EXPECT_NE(expect_invalid([&] { load_dataset(cfg); }).find("no such file or directory"), std::string::npos);
  // One slash and a dataset file's name: a missing file, not a Hugging Face id.
  cfg.path = "out/nope.jsonl";
  const std::string missing = expect_invalid([&] { load_dataset(cfg); });
  EXPECT_EQ(missing, "--dataset-path 'out/nope.jsonl': no such file or directory");
  cfg.path = "/nonexistent/dir/file.jsonl";
  cfg.name = "sharegpt";
  EXPECT_NE(expect_invalid([&] { load_dataset(cfg); }).find("unknown --dataset-name 'sharegpt'"), std::string::npos);
  const auto dir = temp_dir("bad");
  {
    std::ofstream f(dir / "bad.jsonl");
    f << "{\"turns\": [[{\"content\": \"ok\"}]]}\n{not json\n";
  }
  cfg.name = "hf";
  cfg.path = (dir / "bad.jsonl").string();
  EXPECT_NE(expect_invalid([&] { load_dataset(cfg); }).find("line 2"), std::string::npos);
  {
    std::ofstream f(dir / "other.jsonl");
    f << "{\"question\": \"x\"}\n";
  }
  cfg.path = (dir / "other.jsonl").string();
  EXPECT_NE(expect_invalid([&] { load_dataset(cfg); }).find("neither 'turns'"), std::string::npos);
  // Rows that name a device as their image, or hold non-bytes in a byte array (fuzz_dataset's
  // seeds): refused with the reason, never read forever or thrown as a JSON type error.
  const auto rows_with_image = [&](const std::string& name, const std::string& image) {
    std::ofstream(dir / name) << R"({"conversation": [[{"role": "user", "content": "q"}]], "images": [)" << image
                              << "]}\n";
    cfg.path = (dir / name).string();
    return expect_invalid([&] { load_dataset(cfg); });
  };
  EXPECT_NE(rows_with_image("zero.jsonl", R"({"path": "/dev/zero"})").find("not a regular file"), std::string::npos);
  EXPECT_NE(rows_with_image("bytes.jsonl", R"({"bytes": [255, "x"]})").find("not a byte value"), std::string::npos);
  EXPECT_NE(rows_with_image("big.jsonl", R"({"bytes": [256]})").find("not a byte value"), std::string::npos);
}

TEST(RequestBuilder, ChatBodyShapeLikeVllm) {
  SampleRequest s;
  s.prompt = "What is this?";
  s.image_urls = {"data:image/jpeg;base64,AAAA"};
  s.output_len = 7;
  RequestOptions o;
  o.model = "m";
  o.extra_body = {{"temperature", 0.5}, {"max_completion_tokens", 9}};
  const auto body = nlohmann::json::parse(build_body(s, o));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"][0]["type"], "text");
  EXPECT_EQ(body["messages"][0]["content"][0]["text"], "What is this?");
  EXPECT_EQ(body["messages"][0]["content"][1]["image_url"]["url"], "data:image/jpeg;base64,AAAA");
  EXPECT_EQ(body["max_completion_tokens"], 9);  // extra_body overrides, as vllm's update() last
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_FALSE(body.contains("ignore_eos"));
  EXPECT_EQ(body["temperature"], 0.5);
  o.mode = RequestMode::non_stream;
  o.ignore_eos = true;
  const auto ns = nlohmann::json::parse(build_body(s, o));
  EXPECT_EQ(ns["stream"], false);
  EXPECT_FALSE(ns.contains("stream_options"));
  EXPECT_EQ(ns["ignore_eos"], true);
  o.backend = Backend::openai;
  EXPECT_THROW(build_body(s, o), encbench::InvalidInput);
}

TEST(Image, RgbaIsCompositedOnWhiteLikeVllm) {
  // Pixel 0: transparent black -> white; pixel 1: opaque red stays red; pixel 2: red at alpha 128.
  const std::uint8_t rgba[] = {0, 0, 0, 0, 255, 0, 0, 255, 255, 0, 0, 128};
  const std::string png = encbench::imaging::encode_png(rgba, 3, 1, 4);
  const RgbImage img = decode_image(png, "test");
  ASSERT_EQ(img.rgb.size(), 9u);
  EXPECT_EQ(img.rgb[0], 255);
  EXPECT_EQ(img.rgb[1], 255);
  EXPECT_EQ(img.rgb[2], 255);
  EXPECT_EQ(img.rgb[3], 255);
  EXPECT_EQ(img.rgb[4], 0);
  EXPECT_EQ(img.rgb[5], 0);
  EXPECT_EQ(img.rgb[6], 255);
  EXPECT_GE(img.rgb[7], 126);  // 255 * (1 - 128/255) = 127
  EXPECT_LE(img.rgb[7], 128);
  EXPECT_EQ(img.rgb[7], img.rgb[8]);
}
