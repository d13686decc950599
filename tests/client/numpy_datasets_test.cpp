// vLLM's random-mm, prefix_repetition and timed_trace datasets for the same seed, against
// tests/client/numpy_reference.py, which copies the structure of vLLM's own functions
// (vllm/benchmarks/datasets/datasets.py @ 003cf0297cf60998854c652a0ca2b310dd3375af) and calls numpy
// and CPython as they do. The prompts use a toy tokenizer (the 256 byte tokens and two
// letter-pair merges) whose decode and encode the script does by hand: its merges make re-encoding
// shorter now and then, so the padding draws run too.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/dataset.hpp"
#include "harness/client/datasets_random_mm.hpp"
#include "harness/client/datasets_tokens.hpp"
#include "harness/client/datasets_vllm.hpp"
#include "harness/client/image.hpp"
#include "harness/client/numpy_random.hpp"
#include "harness/client/python_random.hpp"
#include "harness/client/schedule.hpp"
#include "harness/core/base64.hpp"
#include "harness/core/error.hpp"
#include "tests/client/numpy_reference.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::client {
namespace {

using tokenizer::TokenId;

// The 256 byte tokens (ids 0..255), then the merges "ab", "cd", ..., "yz" (256..268): random-mm's
// prompts are runs of consecutive ids, which re-encode shorter whenever they cross the letters, so
// vLLM's padding draws happen in every seed below.
std::string toy_tokenizer_json() {
  std::vector<std::pair<std::string, std::string>> merges;
  for (char c = 'a'; c < 'z'; c += 2) merges.emplace_back(std::string(1, c), std::string(1, static_cast<char>(c + 1)));
  return tokenizer::testing::hand_tokenizer(merges);
}

void append(std::vector<double>& out, std::initializer_list<double> values) { out.insert(out.end(), values); }

TEST(NumpyDatasets, GeneratorChoiceAndUint8ArraysAreNumpys) {
  for (const std::uint64_t seed : {0ULL, 3ULL, 2026ULL}) {
    NUMPY_OR_FAIL(expected, "mm_draws " + std::to_string(seed));
    NumpyGenerator g(seed);
    std::vector<double> ours{static_cast<double>(g.integers(0, 151643))};  // leaves half a 64-bit draw
    std::vector<std::uint8_t> bytes(5 * 7 * 3);
    g.fill_uint8(bytes.data(), bytes.size());
    ours.insert(ours.end(), bytes.begin(), bytes.end());
    for (int k = 0; k < 20; ++k) ours.push_back(static_cast<double>(g.choice({0.2, 0.5, 0.3})));
    bytes.assign(2 * 3 * 3, 0);
    g.fill_uint8(bytes.data(), bytes.size());
    ours.insert(ours.end(), bytes.begin(), bytes.end());
    ours.push_back(static_cast<double>(g.choice({1.0})));  // one bucket still draws a double
    ours.push_back(static_cast<double>(g.integers(1, 4)));
    ours.push_back(static_cast<double>(g.integers(1, 2)));  // draws nothing, as numpy
    bytes.assign(3, 0);
    g.fill_uint8(bytes.data(), bytes.size());
    ours.insert(ours.end(), bytes.begin(), bytes.end());
    EXPECT_EQ(ours, *expected) << "seed " << seed;
  }
  NumpyGenerator g(1);
  EXPECT_THROW(g.choice({0.5, 0.6}), InvalidInput);  // numpy: probabilities do not sum to 1
  EXPECT_THROW(g.choice({1.5, -0.5}), InvalidInput);
}

TEST(NumpyDatasets, PythonStrHashIsCPythonsForAHashSeed) {
  const std::vector<std::string> keys{"5:16", "-3:4", "123456789012:16", "0:0", "a", "exactly8", "seventeen chars!!"};
  for (const std::uint32_t hash_seed : {0u, 1u, 42u, 4294967295u}) {
    std::string args = "pyhash " + std::to_string(hash_seed);
    for (const auto& k : keys) args += " '" + k + "'";
    NUMPY_OR_FAIL(expected, args);
    ASSERT_EQ(expected->size(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      EXPECT_EQ(static_cast<double>(static_cast<std::uint32_t>(python_str_hash(keys[i], hash_seed))), (*expected)[i])
          << keys[i] << " PYTHONHASHSEED=" << hash_seed;
  }
  EXPECT_NE(python_str_hash("5:16", 0), python_str_hash("5:16", 1));
  EXPECT_EQ(python_str_hash("", 7), 0);
}

// vLLM's RandomMultiModalDataset with the same seed: prompt ids, lengths, item counts, sizes and
// every pixel, request by request; the bucket config is parsed as the CLI parses it.
TEST(NumpyDatasets, RandomMmIsVllmsRequestByRequest) {
  tokenizer::testing::TempDir dir;
  const auto tok_path = dir.write("toy.json", toy_tokenizer_json());
  const auto tok = tokenizer::Tokenizer::load(tok_path);
  ASSERT_EQ(tok.vocab_size(), 269u);
  const std::string buckets = "{(4, 6, 1): 0.25, (3, 5, 1): 0.75, (720, 1280, 16): 0.0, (2, 2, 1): 0.5}";
  DatasetConfig config;
  config.name = "random-mm";
  config.num_prompts = 9;
  config.random.input_len = 40;
  config.random.output_len = 6;
  config.random.range_ratio = config.random.output_range_ratio = 0.5;
  config.random.prefix_len = 3;
  config.random.mm_base_items = 2;
  config.random.mm_items_range_ratio = 1.0;  // [0, 4] items, capped at the limit 3
  config.random.mm_limit_images = 3;
  config.random.buckets = parse_bucket_config(buckets);
  ASSERT_EQ(config.random.buckets.size(), 3u);  // the video bucket at 0 is dropped, as vLLM drops it
  std::size_t images = 0;
  for (const std::uint64_t seed : {0ULL, 7ULL, 31ULL}) {
    config.seed = seed;
    NUMPY_OR_FAIL(expected, "random_mm " + tok_path.string() + " " + std::to_string(seed) + " 9 40 6 0.5 3 2 1.0 3 '" + buckets + "'");
    std::map<std::size_t, std::vector<MmImage>> drawn;
    const Dataset ds = load_random_mm(config, &tok, [&](std::size_t i, const MmImage& image) { drawn[i].push_back(image); });
    ASSERT_EQ(ds.samples.size(), 9u);
    std::vector<double> ours;
    for (std::size_t i = 0; i < ds.samples.size(); ++i) {
      const auto& s = ds.samples[i];
      const auto ids = tok.encode(s.prompt);
      append(ours, {static_cast<double>(s.prompt_len), static_cast<double>(s.output_len), static_cast<double>(ids.size())});
      ours.insert(ours.end(), ids.begin(), ids.end());
      ours.push_back(static_cast<double>(drawn[i].size()));
      EXPECT_EQ(s.image_urls.size(), drawn[i].size());
      for (std::size_t k = 0; k < drawn[i].size(); ++k) {
        const MmImage& m = drawn[i][k];
        append(ours, {static_cast<double>(m.height), static_cast<double>(m.width)});
        ours.insert(ours.end(), m.rgb.begin(), m.rgb.end());
        // Sent as vLLM's process_image sends it: a JPEG data URL of that size.
        std::string jpeg;
        ASSERT_TRUE(base64_decode(std::string_view(s.image_urls[k]).substr(s.image_urls[k].find(',') + 1), Base64Form::lenient, jpeg));
        const auto decoded = decode_image(jpeg, "random-mm image");
        EXPECT_EQ(decoded.info.format, imaging::Format::jpeg);
        EXPECT_EQ(decoded.info.width, m.width);
        EXPECT_EQ(decoded.info.height, m.height);
        ++images;
      }
    }
    ASSERT_EQ(ours.size(), expected->size()) << "seed " << seed;
    for (std::size_t k = 0; k < ours.size(); ++k) ASSERT_EQ(ours[k], (*expected)[k]) << "seed " << seed << ", value " << k;
  }
  EXPECT_GT(images, 10u);
  // Through the CLI's loader (the tokenizer found from --tokenizer): the same dataset.
  config.seed = 7;
  const auto via_cli = load_tokenized_dataset(config, tok_path.string(), "", false).dataset;
  const auto direct = load_random_mm(config, &tok);
  ASSERT_EQ(via_cli.samples.size(), direct.samples.size());
  for (std::size_t i = 0; i < direct.samples.size(); ++i) {
    EXPECT_EQ(via_cli.samples[i].prompt, direct.samples[i].prompt);
    EXPECT_EQ(via_cli.samples[i].image_urls, direct.samples[i].image_urls);
  }
}

// vLLM's PrefixRepetitionRandomDataset: the prompts (text, length, order) and the global numpy
// state it leaves for get_request's gaps.
TEST(NumpyDatasets, PrefixRepetitionIsVllmsAndItsGapsContinueTheGlobalState) {
  tokenizer::testing::TempDir dir;
  const auto tok_path = dir.write("toy.json", toy_tokenizer_json());
  const auto tok = tokenizer::Tokenizer::load(tok_path);
  for (const std::uint64_t seed : {0ULL, 5ULL, 1234ULL}) {
    NUMPY_OR_FAIL(expected, "prefix_rep " + tok_path.string() + " " + std::to_string(seed) + " 11 6 5 3");
    DatasetConfig config;
    config.name = "prefix_repetition";
    config.num_prompts = 11;  // divmod(11, 3) = (3, 2): 4 + 4 + 3 prompts
    config.seed = seed;
    config.vllm_text = {std::nullopt, 6, 5, 3, 9};
    const Dataset ds = load_prefix_repetition(config, tok);
    std::vector<double> ours;
    for (const auto& s : ds.samples) {
      append(ours, {static_cast<double>(s.prompt_len), static_cast<double>(s.prompt.size())});
      for (const char c : s.prompt) ours.push_back(static_cast<unsigned char>(c));
      EXPECT_EQ(s.output_len, 9);
    }
    EXPECT_GT(ds.numpy_global_draws, 11u * 5u);
    NumpyRandomState global(static_cast<std::uint32_t>(seed));
    global.skip(ds.numpy_global_draws);
    for (int k = 0; k < 3; ++k) ours.push_back(global.gamma(1.0, 1.0));
    ASSERT_EQ(ours.size(), expected->size()) << "seed " << seed;
    for (std::size_t k = 0; k < ours.size(); ++k) EXPECT_EQ(ours[k], (*expected)[k]) << "seed " << seed << ", value " << k;
    // The schedule continues from there, as vLLM's np.random.gamma after the dataset's draws.
    const auto shifted = arrival_offsets_s(2, 1.0, 1.0, seed, ds.numpy_global_draws);
    EXPECT_NEAR(shifted[0] / shifted[1], (*expected)[ours.size() - 3] / ((*expected)[ours.size() - 3] + (*expected)[ours.size() - 2]), 1e-12);
  }
}

// vLLM's TimedTrace._expand_prompt: rows sharing hash ids share chunks, the last chunk is cut to the
// input length, a row with too few hash ids is short, an input length of 0 is empty.
TEST(NumpyDatasets, TimedTraceChunksAreVllmsUnderAPythonHashSeed) {
  tokenizer::testing::TempDir dir;
  const std::string trace =
      "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [1, 2, 3]}\n"
      "{\"timestamp\": 5, \"input_length\": 37, \"output_length\": 3, \"hash_ids\": [1, 2, 7, 9]}\n"
      "{\"timestamp\": 9, \"input_length\": 50, \"output_length\": 3, \"hash_ids\": [-4, 2]}\n"
      "{\"timestamp\": 9, \"input_length\": 0, \"output_length\": 3, \"hash_ids\": [5]}\n"
      "{\"timestamp\": 12, \"input_length\": 16, \"output_length\": 3, \"hash_ids\": [123456789012, 1]}\n";
  const auto trace_path = dir.write("trace.jsonl", trace);
  const auto tok_file = tokenizer::testing::tiny_qwen2() / "tokenizer.json";
  const auto tok = tokenizer::Tokenizer::load(tok_file);
  for (const std::uint32_t hash_seed : {0u, 3u}) {
    NUMPY_OR_FAIL(expected, "timed_trace " + tok_file.string() + " " + trace_path.string() + " 16 " + std::to_string(hash_seed));
    TimedTracePrompts prompts(tok, 16, hash_seed);
    std::vector<double> ours;
    for (const auto& [hashes, length] : std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{
             {{1, 2, 3}, 40}, {{1, 2, 7, 9}, 37}, {{-4, 2}, 50}, {{5}, 0}, {{123456789012, 1}, 16}}) {
      const auto ids = prompts.expand(hashes, length);
      ours.push_back(static_cast<double>(ids.size()));
      ours.insert(ours.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(ours, *expected) << "PYTHONHASHSEED=" << hash_seed;
  }
  // The loader uses them (PYTHONHASHSEED unset here: 0) and counts the ids.
  DatasetConfig config;
  config.name = "timed_trace";
  config.path = trace_path.string();
  config.num_prompts = 10;
  const Dataset ds = load_timed_trace(config, tok);
  ASSERT_EQ(ds.samples.size(), 5u);
  EXPECT_EQ(ds.samples[0].prompt_len, 40);
  EXPECT_EQ(ds.samples[1].prompt_len, 37);
  EXPECT_EQ(ds.samples[2].prompt_len, 32);  // two hash ids of 16 for 50 tokens
  EXPECT_EQ(ds.samples[3].prompt_len, 0);
  TimedTracePrompts zero(tok, 16, 0);
  EXPECT_EQ(ds.samples[0].prompt, tok.decode(zero.expand({1, 2, 3}, 40)));
}

}  // namespace
}  // namespace encbench::client
