#pragma once
// vision-arena datasets read from parquet (datasets_parquet.cpp): the Hugging Face hub's own
// format, as `vllm bench serve --dataset-name hf` finds it in the local hub cache.
//
// --dataset-path may be a Hugging Face id (owner/name) resolved in the local hub cache
// ($HF_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub:
// datasets--OWNER--NAME/snapshots/<refs/main>/...), a parquet file, or a directory holding
// parquet shards; the shards of --hf-split are read in path order, as one table.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/parquet/reader.hpp"

namespace encbench::client {

// The hub cache folders searched for an id, in order (only those set / existing).
std::vector<std::filesystem::path> hf_hub_cache_roots();
// The snapshot folder of dataset `id` in the first cache root holding it (refs/main's revision,
// else the only snapshot), or nullopt.
std::optional<std::filesystem::path> find_hf_cached_dataset(const std::string& id);

// The parquet shards `path` names for `split`: a .parquet file; a directory's .parquet files
// whose name starts with "<split>-" / "<split>." or that lie in a folder named <split> (all of
// them when none does); an id in the hub cache (its split's shards; InvalidInput when it has none).
// Empty when `path` is none of these (a JSONL file or a directory without parquet).
std::vector<std::filesystem::path> parquet_shards(const std::string& path, const std::string& split);

// Shards read as one table: row i of the whole is row i - offset of its shard.
class ParquetRows {
 public:
  explicit ParquetRows(const std::vector<std::filesystem::path>& shards);
  std::size_t size() const { return total_; }
  const std::filesystem::path& first_file() const { return files_.front().path(); }
  // The first file's top-level columns (every shard must have the same).
  std::vector<std::string> column_names() const { return files_.front().column_names(); }
  // The vision-arena layout's key column (turns | conversation) after checking the leaf types of
  // it and of `images`: InvalidInput naming the file, the column and what was expected.
  std::string check_vision_arena_layout() const;
  // Rows at `sorted_rows` (ascending, distinct) with only `columns`.
  std::vector<nlohmann::json> read(const std::vector<std::size_t>& sorted_rows, const std::vector<std::string>& columns) const;

 private:
  std::vector<parquet::ParquetFile> files_;
  std::vector<std::size_t> offsets_;
  std::size_t total_ = 0;
};

}  // namespace encbench::client
