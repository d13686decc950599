#include "harness/client/datasets_parquet.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "harness/core/error.hpp"
#include "harness/parquet/metadata.hpp"

namespace encbench::client {

namespace fs = std::filesystem;

std::vector<fs::path> hf_hub_cache_roots() {
  std::vector<fs::path> roots;
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  if (!env("HF_HUB_CACHE").empty()) roots.emplace_back(env("HF_HUB_CACHE"));
  if (!env("HF_HOME").empty()) roots.push_back(fs::path(env("HF_HOME")) / "hub");
  if (!env("XDG_CACHE_HOME").empty()) roots.push_back(fs::path(env("XDG_CACHE_HOME")) / "huggingface" / "hub");
  if (!env("HOME").empty()) roots.push_back(fs::path(env("HOME")) / ".cache" / "huggingface" / "hub");
  return roots;
}

std::optional<fs::path> find_hf_cached_dataset(const std::string& id) {
  const auto slash = id.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string folder = "datasets--" + id.substr(0, slash) + "--" + id.substr(slash + 1);
  std::error_code ec;
  for (const fs::path& root : hf_hub_cache_roots()) {
    const fs::path repo = root / folder;
    if (!fs::is_directory(repo / "snapshots", ec)) continue;
    std::ifstream ref(repo / "refs" / "main");
    std::string revision;
    if (ref && std::getline(ref, revision) && !revision.empty() && revision.find('/') == std::string::npos &&
        fs::is_directory(repo / "snapshots" / revision, ec))
      return repo / "snapshots" / revision;
    std::vector<fs::path> snapshots;
    for (const auto& entry : fs::directory_iterator(repo / "snapshots", ec))
      if (entry.is_directory()) snapshots.push_back(entry.path());
    if (snapshots.size() == 1) return snapshots.front();
    require(snapshots.empty(), repo.string() + ": " + std::to_string(snapshots.size()) +
                                   " snapshots and no refs/main naming one; pass the snapshot folder as --dataset-path");
  }
  return std::nullopt;
}

namespace {

bool in_split(const fs::path& relative, const std::string& split) {
  const std::string name = relative.filename().string();
  if (name.rfind(split + "-", 0) == 0 || name.rfind(split + ".", 0) == 0) return true;
  for (const auto& part : relative.parent_path())
    if (part == split) return true;
  return false;
}

std::vector<fs::path> shards_in(const fs::path& dir, const std::string& split, bool split_required) {
  std::vector<fs::path> all, matching;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().extension() != ".parquet" || !fs::is_regular_file(it->path(), ec)) continue;  // follows the hub's blob links
    all.push_back(it->path());
    if (in_split(fs::relative(it->path(), dir, ec), split)) matching.push_back(it->path());
  }
  std::sort(all.begin(), all.end());
  std::sort(matching.begin(), matching.end());
  if (!matching.empty()) return matching;
  if (split_required && !all.empty())
    throw InvalidInput(dir.string() + ": no parquet shard of split '" + split + "' (--hf-split); shards: " +
                       fs::relative(all.front(), dir, ec).string() + (all.size() > 1 ? ", ..." : ""));
  return all;
}

}  // namespace

std::vector<fs::path> parquet_shards(const std::string& path, const std::string& split) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::path(path).extension() == ".parquet" ? std::vector<fs::path>{path} : std::vector<fs::path>{};
  if (fs::is_directory(path, ec)) return shards_in(path, split, false);
  if (const auto snapshot = find_hf_cached_dataset(path)) {
    std::vector<fs::path> shards = shards_in(*snapshot, split, true);
    require(!shards.empty(), snapshot->string() + ": no parquet files in the cached dataset '" + path +
                                 "' (another format: export it to JSONL, docs/client.md)");
    return shards;
  }
  return {};
}

ParquetRows::ParquetRows(const std::vector<fs::path>& shards) {
  require(!shards.empty(), "no parquet shards to read");
  for (const fs::path& shard : shards) {
    files_.emplace_back(shard);
    offsets_.push_back(total_);
    total_ += static_cast<std::size_t>(files_.back().num_rows());
    require(files_.back().column_names() == files_.front().column_names(),
            shard.string() + ": columns differ from those of " + files_.front().path().string());
  }
}

std::string ParquetRows::check_vision_arena_layout() const {
  const parquet::ParquetFile& file = files_.front();
  const auto names = file.column_names();
  const auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  const std::string key = has("turns") ? "turns" : has("conversation") ? "conversation" : "";
  require(!key.empty(), file.path().string() + ": no column 'turns' (lmarena-ai/vision-arena-bench-v0.1) or 'conversation' "
                        "(lmarena-ai/VisionArena-Chat); the file has: " + [&] {
                          std::string all;
                          for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
                          return all;
                        }());
  bool content_ok = false, image_ok = !has("images");
  std::string seen_images;
  for (const auto& leaf : file.leaves()) {
    const bool byte_array = leaf.physical_type == 6;  // BYTE_ARRAY
    if (leaf.path.rfind(key + ".", 0) == 0 && leaf.path.size() > 8 && leaf.path.compare(leaf.path.size() - 8, 8, ".content") == 0)
      content_ok = byte_array;
    if (leaf.path == "images" || leaf.path.rfind("images.", 0) == 0) {
      seen_images += (seen_images.empty() ? "" : ", ") + leaf.path + " (" + parquet::physical_type_name(leaf.physical_type) + ")";
      const auto ends = [&](const std::string& tail) {
        return leaf.path.size() > tail.size() && leaf.path.compare(leaf.path.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (byte_array && (ends(".bytes") || ends(".path"))) image_ok = true;
    }
  }
  require(content_ok, file.path().string() + ": column '" + key + "': expected a list of lists of {content: string, role: string} "
                                             "(a BYTE_ARRAY leaf " + key + ".list.element.list.element.content)");
  require(image_ok, file.path().string() + ": column 'images': expected a list of images as the datasets library writes "
                                           "them, struct<bytes: binary, path: string>; the file has " + seen_images);
  return key;
}

std::vector<nlohmann::json> ParquetRows::read(const std::vector<std::size_t>& sorted_rows, const std::vector<std::string>& columns) const {
  std::vector<nlohmann::json> out;
  out.reserve(sorted_rows.size());
  std::size_t k = 0;
  for (std::size_t f = 0; f < files_.size(); ++f) {
    const std::size_t end = f + 1 < files_.size() ? offsets_[f + 1] : total_;
    std::vector<std::int64_t> local;
    for (; k < sorted_rows.size() && sorted_rows[k] < end; ++k) local.push_back(static_cast<std::int64_t>(sorted_rows[k] - offsets_[f]));
    if (local.empty()) continue;
    const auto names = files_[f].column_names();
    std::vector<std::string> present;
    for (const auto& c : columns)
      if (std::find(names.begin(), names.end(), c) != names.end()) present.push_back(c);
    for (auto& row : files_[f].read_rows(local, present)) out.push_back(std::move(row));
  }
  return out;
}

}  // namespace encbench::client
