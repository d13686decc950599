// vLLM's draws for the same seed: harness/client/numpy_random against numpy itself
// (tests/client/numpy_reference.py, run by a python3 that has numpy; skipped, saying so, when none
// has). Checked: default_rng's integers() on every path (32-bit Lemire, the full 32-bit range,
// 64-bit Lemire, negative lows) and random(); the legacy np.random.gamma below, at and above shape
// 1; vLLM's arrival schedule (serve.py get_request) and RandomDataset's lengths and output lengths.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "harness/client/datasets_tokens.hpp"
#include "harness/client/datasets_vllm.hpp"
#include "harness/client/numpy_random.hpp"
#include "harness/client/python_random.hpp"
#include "harness/client/schedule.hpp"
#include "tests/client/numpy_reference.hpp"
#include "tests/support/process.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::client {
namespace {

TEST(NumpyRandom, DefaultRngIntegersAndRandomAreNumpys) {
  for (const std::uint64_t seed : {0ULL, 1ULL, 42ULL, 2026ULL, (1ULL << 33) + 5}) {
    NUMPY_OR_SKIP(expected, "generator " + std::to_string(seed));
    NumpyGenerator g(seed);
    std::vector<double> ours;
    for (int i = 0; i < 50; ++i) ours.push_back(static_cast<double>(g.integers(0, 100)));
    for (int i = 0; i < 20; ++i) ours.push_back(static_cast<double>(g.integers(5, 1000000)));
    for (int i = 0; i < 10; ++i) ours.push_back(static_cast<double>(g.integers(0, 1LL << 40)));
    for (int i = 0; i < 5; ++i) ours.push_back(static_cast<double>(g.integers(0, 1LL << 32)));
    for (int i = 0; i < 7; ++i) ours.push_back(g.random());
    for (int i = 0; i < 9; ++i) ours.push_back(static_cast<double>(g.integers(-3, 4)));
    for (int i = 0; i < 3; ++i) ours.push_back(static_cast<double>(g.integers(0, 1LL << 62)));
    ours.push_back(static_cast<double>(g.integers(0, 151643)));
    ASSERT_EQ(ours.size(), expected->size());
    for (std::size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i], (*expected)[i]) << "seed " << seed << ", draw " << i;
  }
  // Bounds hold and another seed draws otherwise.
  NumpyGenerator a(7), b(8);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto x = a.integers(10, 20);
    EXPECT_GE(x, 10);
    EXPECT_LT(x, 20);
    differ += x != b.integers(10, 20) ? 1 : 0;
  }
  EXPECT_GT(differ, 500);
}

TEST(NumpyRandom, LegacyGammaIsNumpysForEveryShapeBranch) {
  for (const std::uint32_t seed : {0u, 3u, 123456u}) {
    for (const auto& [shape, scale] : {std::pair{1.0, 0.01}, std::pair{0.3, 2.0}, std::pair{0.7, 0.5}, std::pair{2.5, 1.0}, std::pair{10.0, 0.1}}) {
      NUMPY_OR_SKIP(expected, "gamma " + std::to_string(seed) + " " + std::to_string(shape) + " " + std::to_string(scale) + " 200");
      NumpyRandomState r(seed);
      ASSERT_EQ(expected->size(), 200u);
      for (std::size_t i = 0; i < expected->size(); ++i)
        EXPECT_DOUBLE_EQ(r.gamma(shape, scale), (*expected)[i]) << "seed " << seed << " shape " << shape << " draw " << i;
    }
  }
}

TEST(NumpyRandom, ArrivalScheduleIsVllmsForTheSameSeed) {
  for (const std::uint64_t seed : {0ULL, 1ULL, 99ULL}) {
    for (const double burstiness : {1.0, 0.5, 3.0}) {
      const double rate = 40;
      NUMPY_OR_SKIP(expected, "schedule " + std::to_string(seed) + " 300 40 " + std::to_string(burstiness));
      const auto ours = arrival_offsets_s(300, rate, burstiness, seed);
      ASSERT_EQ(ours.size(), expected->size());
      for (std::size_t i = 0; i < ours.size(); ++i)
        EXPECT_NEAR(ours[i], (*expected)[i], 1e-12) << "seed " << seed << " burstiness " << burstiness << " request " << i;
    }
  }
  // Not a constant: the next seed's schedule differs by far more than the tolerance.
  EXPECT_GT(std::abs(arrival_offsets_s(10, 40, 1, 0)[0] - arrival_offsets_s(10, 40, 1, 1)[0]), 1e-4);
}

TEST(NumpyRandom, RandomDatasetLengthsAreVllmsForTheSameSeed) {
  const auto tok = tokenizer::Tokenizer::load(tokenizer::testing::tiny_qwen2());
  RandomDatasetConfig rc;
  rc.input_len = 60;
  rc.range_ratio = 0.5;  // input lengths in [30, 90]
  rc.output_len = 40;
  rc.output_range_ratio = 0.25;  // [30, 50]
  rc.prefix_len = 4;
  const std::size_t n = 40, allowed = tok.vocab_size() - tok.special_ids().size();
  ASSERT_EQ(tok.num_special_tokens_to_add(), 0u);
  for (const std::uint64_t seed : {0ULL, 5ULL, 31337ULL}) {
    NUMPY_OR_SKIP(expected, "random " + std::to_string(seed) + " " + std::to_string(n) + " 30 90 30 50 " +
                                std::to_string(tok.vocab_size()) + " " + std::to_string(allowed) + " 4");
    ASSERT_EQ(expected->size(), 3 * n + 4);
    const auto prompts = random_token_prompts(tok, rc, n, seed);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(prompts[i].output_len, static_cast<std::int64_t>((*expected)[n + i])) << "seed " << seed << " request " << i;
      if (prompts[i].mismatch == 0) {
        EXPECT_EQ(prompts[i].prompt_len, 4 + static_cast<std::int64_t>((*expected)[i])) << "seed " << seed << " request " << i;
      }
    }
  }
}

}  // namespace
}  // namespace encbench::client

namespace encbench::client {
namespace {

std::vector<double> as_doubles(const std::vector<std::size_t>& v) { return {v.begin(), v.end()}; }

TEST(NumpyRandom, HuggingFaceShufflesAreNumpysDraws) {
  for (const std::uint64_t seed : {0ULL, 17ULL, 4242ULL}) {
    NUMPY_OR_SKIP(perm, "permutation " + std::to_string(seed) + " 257");
    EXPECT_EQ(as_doubles(numpy_permutation(257, seed)), *perm) << "seed " << seed;
    // A buffer smaller than the rows (the replacement path and its batches of 1,000 draws), and
    // one larger (the final shuffle alone, which is the permutation).
    NUMPY_OR_SKIP(stream, "hf_stream " + std::to_string(seed) + " 1500 7");
    EXPECT_EQ(as_doubles(hf_streaming_shuffle_order(1500, seed, 7)), *stream) << "seed " << seed;
    EXPECT_EQ(hf_streaming_shuffle_order(257, seed), numpy_permutation(257, seed));
  }
}

}  // namespace
}  // namespace encbench::client

namespace encbench::client {
namespace {

std::vector<double> source_rows(const Dataset& ds) {
  std::vector<double> rows;
  for (const auto& s : ds.samples) rows.push_back(static_cast<double>(s.source_row));
  return rows;
}

// End to end through load_dataset: custom rows in vLLM's order (Python's shuffle, then
// random.choices when the file is short), hf rows in the streamed HF dataset's order.
TEST(NumpyRandom, FileDatasetRowsAreInVllmsOrder) {
  tokenizer::testing::TempDir dir;
  std::string rows;
  for (int k = 0; k < 23; ++k) rows += "{\"prompt\": \"row " + std::to_string(k) + "\"}\n";
  const auto custom = dir.write("custom.jsonl", rows);
  GenerateConfig gen;
  gen.layout = "vision-arena-bench";
  gen.num = 12;
  gen.width = 8;
  gen.height = 8;
  gen.out = dir.path() / "va.jsonl";
  generate_dataset(gen);
  for (const std::uint64_t seed : {0ULL, 3ULL, 99ULL}) {
    for (const std::size_t want : {10u, 23u, 40u}) {
      NUMPY_OR_SKIP(expected, "py_rows " + std::to_string(seed) + " 23 " + std::to_string(want));
      DatasetConfig cfg;
      cfg.name = "custom";
      cfg.path = custom.string();
      cfg.num_prompts = want;
      cfg.seed = seed;
      EXPECT_EQ(source_rows(load_dataset(cfg)), *expected) << "seed " << seed << " want " << want;
    }
    NUMPY_OR_SKIP(perm, "permutation " + std::to_string(seed) + " 12");
    DatasetConfig cfg;
    cfg.name = "hf";
    cfg.path = gen.out.string();
    cfg.num_prompts = 12;
    cfg.seed = seed;
    EXPECT_EQ(source_rows(load_dataset(cfg)), *perm) << "seed " << seed;
  }
}

}  // namespace
}  // namespace encbench::client

namespace encbench::client {
namespace {

// BurstGPT: vLLM filters the CSV (Model GPT-4, Response tokens > 0) and takes pandas'
// sample(n, random_state=seed) of it; the rows picked are numpy's legacy RandomState draws.
TEST(NumpyRandom, BurstGptRowsAreVllmsSampleForTheSameSeed) {
  tokenizer::testing::TempDir dir;
  std::string csv = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
  std::vector<std::size_t> filtered_index_of_line(2, 0);  // file line -> index among the kept rows
  std::size_t kept = 0;
  for (int k = 0; k < 45; ++k) {
    const bool keep = k % 3 != 1;  // every third row another model
    csv += std::to_string(k) + (keep ? ",GPT-4," : ",ChatGPT,") + std::to_string(k + 1) + ",5,6,Conversation log\n";
    filtered_index_of_line.push_back(keep ? kept++ : 999999);
  }
  const auto file = dir.write("burst.csv", csv);
  const auto tok = tokenizer::Tokenizer::load(tokenizer::testing::tiny_qwen2());
  for (const std::uint64_t seed : {0ULL, 8ULL, 1234ULL}) {
    for (const std::size_t n : {7u, 30u, 50u}) {
      NUMPY_OR_SKIP(expected, "legacy_pick " + std::to_string(seed) + " " + std::to_string(kept) + " " + std::to_string(n));
      DatasetConfig cfg;
      cfg.name = "burstgpt";
      cfg.path = file.string();
      cfg.num_prompts = n;
      cfg.seed = seed;
      std::vector<double> picked;
      for (const auto& s : load_burstgpt(cfg, tok).samples) picked.push_back(static_cast<double>(filtered_index_of_line.at(s.source_row)));
      EXPECT_EQ(picked, *expected) << "seed " << seed << " n " << n;
    }
  }
}

}  // namespace
}  // namespace encbench::client

namespace encbench::client {
namespace {

// sonnet's extra lines: random.choices from Python's random seeded with --seed.
TEST(NumpyRandom, PythonChoicesAreCPythons) {
  for (const std::uint64_t seed : {0ULL, 77ULL, (1ULL << 35) + 1}) {
    for (const std::size_t n : {1u, 14u, 1000u}) {
      NUMPY_OR_SKIP(expected, "py_choices " + std::to_string(seed) + " " + std::to_string(n) + " 300");
      PythonRandom rng(seed);
      std::vector<double> ours;
      for (int k = 0; k < 300; ++k) ours.push_back(static_cast<double>(rng.choice_index(n)));
      EXPECT_EQ(ours, *expected) << "seed " << seed << " n " << n;
    }
  }
}

}  // namespace
}  // namespace encbench::client
