// vision-arena datasets from parquet: the same samples in the same order as from the JSONL export
// of the same rows, for three seeds, both of vLLM's hf orders and oversampling; a Hugging Face id
// resolved in the local hub cache (refs/main, the --hf-split's shards); a directory of shards; a
// column of the wrong type refused in one line naming the file and the column.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "harness/client/dataset.hpp"
#include "harness/core/error.hpp"

using namespace encbench::client;
namespace fs = std::filesystem;

namespace {

fs::path parquet_data(const std::string& name) {
  const char* source = std::getenv("ENCBENCH_SOURCE_DIR");
  return fs::path(source != nullptr ? source : ".") / "tests" / "parquet" / "data" / name;
}

Dataset load(const fs::path& path, std::uint64_t seed, std::size_t n, bool streaming, const std::string& split = "train") {
  DatasetConfig c;
  c.name = "hf";
  c.path = path.string();
  c.seed = seed;
  c.num_prompts = n;
  c.hf_streaming = streaming;
  c.hf_split = split;
  return load_dataset(c);
}

void expect_same_samples(const Dataset& a, const Dataset& b, const std::string& where) {
  EXPECT_EQ(a.layout, b.layout) << where;
  EXPECT_EQ(a.source_rows, b.source_rows) << where;
  EXPECT_EQ(a.oversampled, b.oversampled) << where;
  ASSERT_EQ(a.samples.size(), b.samples.size()) << where;
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    EXPECT_EQ(a.samples[i].source_row, b.samples[i].source_row) << where << " sample " << i;
    EXPECT_EQ(a.samples[i].prompt, b.samples[i].prompt) << where << " sample " << i;
    EXPECT_EQ(a.samples[i].image_urls, b.samples[i].image_urls) << where << " sample " << i;
  }
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("encbench_parquet_ds_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST(ParquetDataset, SameSamplesInTheSameOrderAsTheJsonlExportForThreeSeeds) {
  for (const char* name : {"bench_v2_snappy_dict", "bench_v1_gzip", "chat_v2_gzip_dict", "chat_v1_snappy"}) {
    for (const std::uint64_t seed : {0u, 1u, 42u}) {
      for (const bool streaming : {true, false}) {
        for (const std::size_t n : {std::size_t{5}, std::size_t{40}}) {  // 40: oversampled past the file's rows
          const std::string where = std::string(name) + " seed " + std::to_string(seed) + (streaming ? " stream" : " no-stream") +
                                    " n " + std::to_string(n);
          const Dataset from_parquet = load(parquet_data(std::string(name) + ".parquet"), seed, n, streaming);
          const Dataset from_jsonl = load(parquet_data(std::string(name) + ".jsonl"), seed, n, streaming);
          expect_same_samples(from_parquet, from_jsonl, where);
          EXPECT_EQ(from_parquet.samples.size(), n);
        }
      }
    }
  }
  // The seeds do pick different orders (else the check above says little).
  EXPECT_NE(load(parquet_data("bench_v1_gzip.parquet"), 0, 5, true).samples[0].source_row +
                load(parquet_data("bench_v1_gzip.parquet"), 0, 5, true).samples[1].source_row * 100,
            load(parquet_data("bench_v1_gzip.parquet"), 1, 5, true).samples[0].source_row +
                load(parquet_data("bench_v1_gzip.parquet"), 1, 5, true).samples[1].source_row * 100);
}

TEST(ParquetDataset, HuggingFaceIdFromTheLocalHubCacheFollowsRefsMainAndTheSplit) {
  const fs::path cache = temp_dir("hub");
  const fs::path repo = cache / "datasets--acme--vision-bench";
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << "0123abcd";
  fs::create_directories(repo / "snapshots" / "0123abcd" / "data");
  fs::create_directories(repo / "snapshots" / "ffff0000" / "data");  // another revision, not main
  const fs::path data = repo / "snapshots" / "0123abcd" / "data";
  fs::copy_file(parquet_data("bench_v2_zstd.parquet"), data / "train-00000-of-00002.parquet");
  fs::copy_file(parquet_data("bench_v1_gzip.parquet"), data / "train-00001-of-00002.parquet");
  fs::copy_file(parquet_data("chat_v1_snappy.parquet"), data / "test-00000-of-00001.parquet");
  fs::copy_file(parquet_data("chat_v1_snappy.parquet"), repo / "snapshots" / "ffff0000" / "data" / "train-00000-of-00001.parquet");
  // The JSONL export of the train split: the two shards' rows in shard order.
  const fs::path jsonl = cache / "train.jsonl";
  {
    std::ofstream out(jsonl);
    out << std::ifstream(parquet_data("bench_v2_zstd.jsonl")).rdbuf() << std::ifstream(parquet_data("bench_v1_gzip.jsonl")).rdbuf();
  }
  ASSERT_EQ(::setenv("HF_HUB_CACHE", cache.c_str(), 1), 0);
  EXPECT_NO_THROW(require_dataset_path_exists("acme/vision-bench"));
  for (const std::uint64_t seed : {0u, 7u}) {
    const Dataset by_id = load("acme/vision-bench", seed, 30, false);
    EXPECT_EQ(by_id.source_rows, 46u);
    EXPECT_EQ(by_id.layout, "vision-arena-bench");
    expect_same_samples(by_id, load(jsonl, seed, 30, false), "by id, seed " + std::to_string(seed));
    expect_same_samples(load(data, seed, 30, false), by_id, "the snapshot's folder");
  }
  const Dataset test_split = load("acme/vision-bench", 0, 4, true, "test");
  EXPECT_EQ(test_split.layout, "visionarena-chat");
  EXPECT_EQ(test_split.source_rows, 11u);
  try {
    load("acme/vision-bench", 0, 4, true, "validation");
    ADD_FAILURE() << "a split with no shard must be refused";
  } catch (const encbench::InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("no parquet shard of split 'validation'"), std::string::npos) << e.what();
  }
  try {
    require_dataset_path_exists("acme/not-cached");
    ADD_FAILURE() << "an id not in the cache must be refused";
  } catch (const encbench::InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("not in the local Hugging Face cache (" + cache.string()), std::string::npos) << e.what();
  }
  ::unsetenv("HF_HUB_CACHE");
  fs::remove_all(cache);
}

TEST(ParquetDataset, ColumnsOfTheWrongTypeAreOneLineNamingFileAndColumn) {
  const fs::path bad = parquet_data("bad_images_as_text.parquet");
  try {
    load(bad, 0, 2, true);
    ADD_FAILURE() << "images as text must be refused";
  } catch (const encbench::InvalidInput& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(bad.string() + ": column 'images': expected a list of images", 0), 0u) << m;
    EXPECT_NE(m.find("struct<bytes: binary, path: string>"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}
