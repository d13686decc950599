#include "harness/client/dataset.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "harness/client/datasets_parquet.hpp"
#include "harness/client/datasets_random_mm.hpp"
#include "harness/client/image.hpp"
#include "harness/client/numpy_random.hpp"
#include "harness/client/python_random.hpp"
#include "harness/core/base64.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::client {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& known_dataset_names() {
  static const std::vector<std::string> kNames{"hf", "vision-arena", "random-mm", "random", "custom", "custom_image", "custom_mm"};
  return kNames;
}

std::int64_t count_words(const std::string& text) {
  std::int64_t n = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

std::vector<ImageBucket> parse_bucket_config(const std::string& text) {
  // vllm's Python-literal form "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}": (height, width, frames).
  const std::string example = "expected e.g. \"{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}\", got '" + text + "'";
  std::vector<ImageBucket> buckets;
  double total = 0;
  std::size_t pos = 0;
  auto skip_space = [&] {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  };
  auto expect_char = [&](char c) {
    skip_space();
    require(pos < text.size() && text[pos] == c, "--random-mm-bucket-config: " + example);
    ++pos;
  };
  auto number = [&]() {
    skip_space();
    const char* begin = text.c_str() + pos;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    require(end != begin, "--random-mm-bucket-config: " + example);
    pos += static_cast<std::size_t>(end - begin);
    return v;
  };
  while ((pos = text.find('(', pos)) != std::string::npos) {
    ++pos;
    const double h = number();
    expect_char(',');
    const double w = number();
    expect_char(',');
    const double frames = number();
    expect_char(')');
    expect_char(':');
    const double p = number();
    require(h >= 1 && w >= 1 && h <= 16384 && w <= 16384 && h == std::floor(h) && w == std::floor(w) && p >= 0 &&
                frames >= 1 && frames == std::floor(frames),
            "--random-mm-bucket-config: bad entry in " + text);
    // vLLM drops zero-probability buckets before sampling, so a video bucket at 0 (its default
    // config has one) is accepted; a video bucket that could be drawn is not.
    require(frames == 1 || p == 0, "--random-mm-bucket-config: only images (frames = 1) are supported, got " + text);
    if (frames != 1) continue;
    // A Python dict literal keeps a repeated key at its first place with its last value.
    const auto same = std::find_if(buckets.begin(), buckets.end(), [&](const ImageBucket& b) {
      return b.height == static_cast<int>(h) && b.width == static_cast<int>(w);
    });
    if (same != buckets.end()) {
      total -= same->probability;
      same->probability = p;
    } else {
      buckets.push_back({static_cast<int>(h), static_cast<int>(w), p});
    }
    total += p;
  }
  require(!buckets.empty() && total > 0, "--random-mm-bucket-config: " + example);
  return buckets;
}

namespace {

// A --dataset-path that is no local file but has the shape of a Hugging Face id, owner/name: one
// slash, not a relative or absolute path, no local directory called owner, and a name that is
// not a dataset file's (out/nope.jsonl is a missing file, not an id).
bool looks_like_hf_id(const std::string& path) {
  const auto slash = path.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == path.size()) return false;
  if (path.find('/', slash + 1) != std::string::npos || path.front() == '.' || path.front() == '~') return false;
  std::error_code ec;
  if (fs::exists(path.substr(0, slash), ec)) return false;
  const std::string ext = fs::path(path).extension().string();
  for (const char* file_ext : {".jsonl", ".json", ".gz", ".csv", ".txt", ".parquet", ".arrow"})
    if (ext == file_ext) return false;
  return true;
}

fs::path resolve_dataset_file(const std::string& path, const std::string& split) {
  require(!path.empty(), "--dataset-path is required for this --dataset-name");
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> candidates;
    for (const auto& entry : fs::recursive_directory_iterator(path, ec)) {
      const auto ext = entry.path().extension().string();
      if (entry.is_regular_file() && (ext == ".jsonl" || ext == ".json" || ext == ".gz")) candidates.push_back(entry.path());
    }
    std::sort(candidates.begin(), candidates.end());
    require(!candidates.empty(), "no .jsonl or .json file in dataset directory " + path);
    for (const auto& c : candidates)
      if (c.filename().string().find(split) != std::string::npos) return c;
    return candidates.front();
  }
  require_dataset_path_exists(path);
  throw InvalidInput("--dataset-path '" + path + "' is neither a regular file nor a directory");
}

std::vector<json> read_rows(const fs::path& file) {
  const std::string text = read_file_maybe_gz(file);
  std::size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<json> rows;
  if (first != std::string::npos && text[first] == '[') {
    json doc = json::parse(text, nullptr, false);
    require(!doc.is_discarded() && doc.is_array(), "dataset " + file.string() + " is not a valid JSON array");
    for (auto& row : doc) rows.push_back(std::move(row));
    return rows;
  }
  std::istringstream in(text);
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json row = json::parse(line, nullptr, false);
    require(!row.is_discarded(), "dataset " + file.string() + " line " + std::to_string(line_no) + " is not valid JSON");
    rows.push_back(std::move(row));
  }
  return rows;
}

// An image file a dataset row names: a regular file of at most kMaxImageFileBytes (a row naming
// /dev/zero, a FIFO or a device would otherwise read forever or block).
constexpr std::uintmax_t kMaxImageFileBytes = 256ull << 20;

std::string read_binary(const fs::path& path) {
  std::error_code ec;
  require(fs::is_regular_file(path, ec), "image file " + path.string() + " is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  require(!ec && size <= kMaxImageFileBytes, "image file " + path.string() + " is larger than " +
                                                 std::to_string(kMaxImageFileBytes >> 20) + " MiB");
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), "cannot read image file " + path.string());
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

// One image item of a row -> URL for the request (JPEG data URL unless it is a remote URL; with
// transcode off, the image's own bytes, undecoded, as application/octet-stream).
std::string image_item_to_url(const json& item, const fs::path& base_dir, const std::string& where,
                              bool transcode = true) {
  auto from_bytes = [&](const std::string& bytes) {
    if (!transcode) return "data:application/octet-stream;base64," + base64_encode(bytes);
    return jpeg_data_url(encode_jpeg(decode_image(bytes, where)));
  };
  auto from_path = [&](const std::string& p) {
    fs::path path = p.rfind("file://", 0) == 0 ? fs::path(p.substr(7)) : fs::path(p);
    if (path.is_relative()) path = base_dir / path;
    return from_bytes(read_binary(path));
  };
  auto from_string = [&](const std::string& s) -> std::string {
    if (s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0) return s;
    if (s.rfind("data:", 0) == 0) {
      const auto comma = s.find(',');
      std::string raw;
      require(comma != std::string::npos && s.find(";base64") < comma && base64_decode(s.substr(comma + 1), Base64Form::lenient, raw),
              "bad data URL image " + where);
      return from_bytes(raw);
    }
    return from_path(s);
  };
  if (item.is_string()) return from_string(item.get<std::string>());
  require(item.is_object(), "image " + where + " must be an object {bytes|path|url} or a string");
  if (auto b = item.find("bytes"); b != item.end() && !b->is_null()) {
    if (b->is_binary()) {  // a parquet image column's struct<bytes: binary, path: string>
      const auto& raw = b->get_binary();
      return from_bytes(std::string(raw.begin(), raw.end()));
    }
    if (b->is_string()) {
      std::string raw;
      require(base64_decode(b->get<std::string>(), Base64Form::lenient, raw), "image " + where + ": 'bytes' is not base64");
      return from_bytes(raw);
    }
    if (b->is_array()) {
      std::string raw;
      for (const auto& v : *b) {
        require(v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= 255,
                "image " + where + ": 'bytes' holds " + v.dump() + ", not a byte value 0..255");
        raw.push_back(static_cast<char>(v.get<int>()));
      }
      return from_bytes(raw);
    }
    throw InvalidInput("image " + where + ": 'bytes' must be a base64 string or an array of byte values");
  }
  if (auto p = item.find("path"); p != item.end() && p->is_string()) return from_path(p->get<std::string>());
  if (auto u = item.find("url"); u != item.end() && u->is_string()) return from_string(u->get<std::string>());
  if (auto u = item.find("image_url"); u != item.end()) {
    if (u->is_string()) return from_string(u->get<std::string>());
    if (u->is_object() && u->contains("url")) return from_string((*u)["url"].get<std::string>());
  }
  throw InvalidInput("image " + where + " has none of bytes, path, url");
}

std::string first_turn_content(const json& row, const char* key, std::size_t row_no) {
  const std::string where = "row " + std::to_string(row_no) + ": ";
  auto it = row.find(key);
  require(it != row.end() && it->is_array() && !it->empty(), where + "'" + key + "' must be a non-empty list");
  const json* turn = &it->front();
  if (turn->is_array()) {  // turns[0][0]
    require(!turn->empty(), where + "'" + key + "[0]' is empty");
    turn = &turn->front();
  }
  require(turn->is_object() && turn->contains("content"), where + "'" + key + "[0][0].content' is missing");
  const json& content = (*turn)["content"];
  if (content.is_string()) return content.get<std::string>();
  // Some exports store typed parts: take the text parts.
  std::string text;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.value("type", "") == "text") text += part.value("text", "");
  require(!text.empty(), where + "'" + key + "[0][0].content' is not text");
  return text;
}

// Every user message after the first of the row's conversation, flattened in order (turns of
// messages, or messages), text content only.
std::vector<std::string> later_user_turns(const json& row, const char* key) {
  std::vector<std::string> out;
  bool first = true;
  const auto visit = [&](const json& m) {
    if (!m.is_object() || m.value("role", "") != "user" || !m.contains("content") || !m["content"].is_string()) return;
    if (!first) out.push_back(m["content"].get<std::string>());
    first = false;
  };
  const auto it = row.find(key);
  if (it == row.end() || !it->is_array()) return out;
  for (const auto& turn : *it) {
    if (turn.is_array()) for (const auto& m : turn) visit(m);
    else visit(turn);
  }
  return out;
}

// vLLM's custom_mm sends a local image as a file:// URL for the server to read (process_image:
// "file://" + the path). A relative path is made absolute against the dataset file's directory
// here (vLLM sends it as written, which no server resolves); the server must allow the directory
// (vLLM and encbench serve: --allowed-local-media-path).
std::string file_url(const std::string& ref, const fs::path& base_dir) {
  fs::path path = ref.rfind("file://", 0) == 0 ? fs::path(ref.substr(7)) : fs::path(ref);
  if (path.is_relative()) path = fs::absolute(base_dir / path);
  return "file://" + path.lexically_normal().string();
}

// vLLM's row order for a file dataset (identity when shuffle is off), then the first `want`, then
// vLLM's maybe_oversample_requests when the file is short: random.seed(seed) and
// random.choices(rows, k=missing). The shuffle is the one vLLM's loader does: Python's
// random.shuffle after random.seed(seed) for the custom datasets; for hf (Hugging Face datasets)
// the streamed dataset's shuffle(seed) (a 1,000-row buffer drawing from numpy's default_rng(seed)),
// or with --no-stream the loaded dataset's default_rng(seed).permutation(n). Rows are the file's
// rows in order, as one shard of the dataset on the hub.
std::vector<std::size_t> pick_rows(std::size_t n, const DatasetConfig& config, bool python_shuffle, std::size_t& oversampled) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  if (config.shuffle) {
    if (python_shuffle) PythonRandom(config.seed).shuffle(order);
    else order = config.hf_streaming ? hf_streaming_shuffle_order(n, config.seed) : numpy_permutation(n, config.seed);
  }
  const std::size_t want = config.num_prompts;
  if (order.size() > want) order.resize(want);
  oversampled = 0;
  if (order.size() < want && config.oversample && n > 0) {
    PythonRandom rng(config.seed);
    const std::size_t have = order.size();
    while (order.size() < want) {
      order.push_back(order[rng.choice_index(have)]);
      ++oversampled;
    }
  }
  return order;
}

// The dataset's rows as JSON objects: a JSONL / JSON file read whole, or parquet shards of which
// only the rows picked are read (datasets_parquet.hpp).
struct DatasetRows {
  std::vector<json> loaded;                 // JSONL / JSON: every row
  std::optional<ParquetRows> parquet;       // parquet: read on demand
  std::size_t size() const { return parquet ? parquet->size() : loaded.size(); }
};

// The rows at `order`'s distinct indices, by index (each row once, however often it is picked).
std::map<std::size_t, json> fetch_rows(DatasetRows& rows, const std::vector<std::size_t>& order, const std::vector<std::string>& columns) {
  std::vector<std::size_t> wanted(order);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::map<std::size_t, json> out;
  if (rows.parquet) {
    std::vector<json> got = rows.parquet->read(wanted, columns);
    for (std::size_t i = 0; i < wanted.size(); ++i) out.emplace(wanted[i], std::move(got[i]));
  } else {
    for (std::size_t i : wanted) out.emplace(i, std::move(rows.loaded[i]));
    rows.loaded.clear();
  }
  return out;
}

// The vision-arena layout from the rows' keys: turns (vision-arena-bench-v0.1) or conversation (VisionArena-Chat).
const char* vision_arena_key(DatasetRows& rows, Dataset& ds) {
  std::string key;
  if (rows.parquet) {
    key = rows.parquet->check_vision_arena_layout();
  } else {
    require(rows.loaded.front().is_object(), "dataset rows must be JSON objects");
    key = rows.loaded.front().contains("turns") ? "turns" : rows.loaded.front().contains("conversation") ? "conversation" : "";
  }
  if (key == "turns") {
    ds.layout = "vision-arena-bench";
    return "turns";
  }
  if (key == "conversation") {
    ds.layout = "visionarena-chat";
    return "conversation";
  }
  throw InvalidInput("dataset " + ds.file.string() +
                     ": rows have neither 'turns' (lmarena-ai/vision-arena-bench-v0.1) nor 'conversation' "
                     "(lmarena-ai/VisionArena-Chat); for {prompt, images} rows use --dataset-name custom");
}

// first_image_only: vLLM's custom_mm (CustomMMDataset) sends only image_files[0] of each row.
Dataset load_file_dataset(const DatasetConfig& config, bool custom, bool custom_image = false, bool first_image_only = false) {
  Dataset ds;
  DatasetRows source;
  const std::vector<fs::path> shards = custom ? std::vector<fs::path>{} : parquet_shards(config.path, config.hf_split);
  if (!shards.empty()) {
    source.parquet.emplace(shards);
    ds.file = source.parquet->first_file();
  } else {
    ds.file = resolve_dataset_file(config.path, config.hf_split);
    source.loaded = read_rows(ds.file);
  }
  require(source.size() > 0, "dataset " + ds.file.string() + " has no rows");
  ds.source_rows = source.size();
  const char* key = nullptr;
  if (custom) ds.layout = first_image_only ? "custom_mm" : custom_image ? "custom_image" : "custom";
  else key = vision_arena_key(source, ds);
  const auto order = pick_rows(source.size(), config, custom, ds.oversampled);
  std::map<std::size_t, json> rows = fetch_rows(source, order, key ? std::vector<std::string>{key, "images"} : std::vector<std::string>{});
  const fs::path base_dir = ds.file.parent_path();
  std::map<std::size_t, SampleRequest> converted;  // each row converted once, even when duplicated
  for (std::size_t row_index : order) {
    auto found = converted.find(row_index);
    if (found == converted.end()) {
      json row = std::move(rows.at(row_index));
      require(row.is_object(), "row " + std::to_string(row_index) + " is not a JSON object");
      SampleRequest s;
      s.source_row = row_index;
      const std::string where = "(row " + std::to_string(row_index) + " of " + ds.file.string() + ")";
      if (custom) {
        require(row.contains("prompt") && row["prompt"].is_string(), "custom dataset row " + std::to_string(row_index) + " needs a string 'prompt'");
        s.prompt = row["prompt"].get<std::string>();
        if (custom_image) {
          const auto files = row.find("image_files");
          require(files != row.end() && files->is_array() && !files->empty(), "'image_files' must be a non-empty list " + where);
          for (const auto& f : *files) {
            require(f.is_string(), "'image_files' entries must be strings " + where);
            const std::string ref = f.get<std::string>();
            const bool url = ref.rfind("http://", 0) == 0 || ref.rfind("https://", 0) == 0 || ref.rfind("data:image/", 0) == 0;
            if (!url && first_image_only && !config.client_side_images) {
              s.image_urls.push_back(file_url(ref, base_dir));
            } else {
              s.image_urls.push_back(url ? ref : image_item_to_url(json{{"path", ref.rfind("file://", 0) == 0 ? ref.substr(7) : ref}}, base_dir, where, config.transcode_images));
            }
            if (first_image_only) break;
          }
        } else {
          require(!row.contains("images") && !row.contains("image_files"),
                  "--dataset-name custom is text-only (as vllm's); rows with images need --dataset-name custom_image "
                  "and an 'image_files' list " + where);
        }
        if (config.custom_output_len == -1) {
          const auto ot = row.find("output_tokens");
          require(ot != row.end() && ot->is_number_integer(),
                  "If no output length is provided the custom dataset must contain an integer 'output_tokens' field "
                  "(--custom-output-len -1) " + where);
          s.output_len = ot->get<int>();
        } else {
          s.output_len = config.custom_output_len;
        }
      } else {
        s.prompt = first_turn_content(row, key, row_index);
        s.later_user_turns = later_user_turns(row, key);
        if (auto imgs = row.find("images"); imgs != row.end() && imgs->is_array() && !imgs->empty())
          s.image_urls.push_back(image_item_to_url(imgs->front(), base_dir, where, config.transcode_images));  // images[0] only, as vllm
        s.output_len = config.output_len.value_or(128);
      }
      require(s.output_len > 0, "output length must be > 0 " + where);
      s.prompt_len = count_words(s.prompt);
      found = converted.emplace(row_index, std::move(s)).first;
    }
    ds.samples.push_back(found->second);
    if (!found->second.image_urls.empty()) ds.multimodal = true;
  }
  return ds;
}

const char* const kWords[] = {"the", "image", "shows", "a", "small", "red", "house", "near", "river", "what",
                              "color", "is", "sky", "describe", "scene", "count", "objects", "left", "right", "under",
                              "table", "chart", "value", "text", "sign", "read", "explain", "why", "how", "many"};

// `random` without a tokenizer: random-word prompts (random-mm adds vLLM's items: datasets_random_mm.hpp).
Dataset load_random_dataset(const DatasetConfig& config) {
  const RandomDatasetConfig& rc = config.random;
  require(rc.input_len >= 0 && rc.output_len > 0, "--random-input-len must be >= 0 and --random-output-len > 0");
  require(rc.range_ratio >= 0 && rc.range_ratio < 1, "input_range_ratio must be in [0, 1) (--random-range-ratio)");
  require(rc.output_range_ratio >= 0 && rc.output_range_ratio < 1, "output_range_ratio must be in [0, 1) (--random-range-ratio)");
  Dataset ds;
  ds.layout = "random";
  ds.ignore_eos_default = true;
  ds.source_rows = config.num_prompts;
  std::mt19937_64 rng(config.seed);
  auto uniform_len = [&](int base, double ratio) {
    const int lo = static_cast<int>(std::floor(base * (1 - ratio)));
    const int hi = static_cast<int>(std::ceil(base * (1 + ratio)));
    return std::uniform_int_distribution<int>(lo, std::max(lo, hi))(rng);
  };
  std::uniform_int_distribution<std::size_t> word_pick(0, std::size(kWords) - 1);
  require(rc.prefix_len >= 0, "--random-prefix-len must be >= 0");
  std::string prefix;  // drawn once, shared by every prompt (vllm's get_prefix)
  for (int w = 0; w < rc.prefix_len; ++w) {
    if (w) prefix += ' ';
    prefix += kWords[word_pick(rng)];
  }
  for (std::size_t i = 0; i < config.num_prompts; ++i) {
    SampleRequest s;
    s.source_row = i;
    s.prompt = prefix;
    int words = uniform_len(rc.input_len, rc.range_ratio);
    require(rc.prefix_len + words >= 1, "--random-input-len is too small: the prompt would be empty");
    if (rc.prefix_len > 0 && words > 0) s.prompt += ' ';
    for (int w = 0; w < words; ++w) {
      if (w) s.prompt += ' ';
      s.prompt += kWords[word_pick(rng)];
    }
    s.prompt_len = rc.prefix_len + words;
    // vllm get_sampling_params: [floor(L(1-r)), ceil(L(1+r))], both bounds at least 1.
    {
      const int lo = std::max(1, static_cast<int>(std::floor(rc.output_len * (1 - rc.output_range_ratio))));
      const int hi = std::max(1, static_cast<int>(std::ceil(rc.output_len * (1 + rc.output_range_ratio))));
      s.output_len = std::uniform_int_distribution<int>(lo, std::max(lo, hi))(rng);
    }
    ds.samples.push_back(std::move(s));
  }
  return ds;
}

}  // namespace

void require_dataset_path_exists(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return;
  // A Hugging Face id like "lmarena-ai/vision-arena-bench-v0.1" is looked up in the local hub
  // cache (datasets_parquet.hpp); when it is not there, the message says where it looked and how
  // to fill the cache (the network is never used).
  if (looks_like_hf_id(path)) {
    if (find_hf_cached_dataset(path)) return;
    std::string roots;
    for (const auto& r : hf_hub_cache_roots()) roots += (roots.empty() ? "" : ", ") + r.string();
    throw InvalidInput("--dataset-path '" + path + "': no such file or directory, and not in the local Hugging Face cache (" +
                       roots + "); fill it with `huggingface-cli download --repo-type dataset " + path +
                       "` (or `vllm bench serve --no-stream` once), or pass a parquet or JSONL file (docs/client.md)");
  }
  throw InvalidInput("--dataset-path '" + path + "': no such file or directory");
}

Dataset load_dataset(const DatasetConfig& config) {
  require(config.num_prompts > 0, "--num-prompts must be > 0");
  if (config.output_len) require(*config.output_len > 0, "--output-len must be > 0");
  const std::string& name = config.name;
  if (name == "hf" || name == "vision-arena") return load_file_dataset(config, false);
  if (name == "custom") return load_file_dataset(config, true);
  if (name == "custom_image") return load_file_dataset(config, true, true);
  if (name == "custom_mm") return load_file_dataset(config, true, true, true);
  if (name == "random-mm") return load_random_mm(config, nullptr);
  if (name == "random") return load_random_dataset(config);
  std::string known;
  for (const auto& k : known_dataset_names()) known += (known.empty() ? "" : ", ") + k;
  throw InvalidInput("unknown --dataset-name '" + name + "' (supported: " + known + ")");
}

std::size_t generate_dataset(const GenerateConfig& config) {
  require(config.layout == "vision-arena-bench" || config.layout == "visionarena-chat" || config.layout == "custom" ||
              config.layout == "custom_image",
          "--layout must be vision-arena-bench, visionarena-chat or custom, got '" + config.layout + "'");
  require(config.num > 0, "--num must be > 0");
  require(config.width > 0 && config.height > 0 && config.width <= 8192 && config.height <= 8192,
          "--width/--height must be in 1..8192");
  require(config.image_format == "png" || config.image_format == "jpeg", "--image-format must be png or jpeg");
  require(config.image_ref == "bytes" || config.image_ref == "path", "--image-ref must be bytes or path");
  require(!config.out.empty(), "--out is required");
  static const char* const kQuestions[] = {
      "What is shown in this image?", "Describe the colors and shapes in this picture.",
      "How many distinct shapes can you count?", "Which corner of the image is the brightest?",
      "Write a short caption for this image.", "Is there a circle in the picture? Where?",
      "Explain the gradient direction in the background.", "What would be a good title for this artwork?"};
  std::error_code ec;
  if (config.out.has_parent_path()) fs::create_directories(config.out.parent_path(), ec);
  // Written under a name of this process and thread, then renamed into place: runs that make the
  // same sample at once (run --grid's worker processes, experiments side by side) each read a
  // whole file, never one another writes over.
  const fs::path partial = config.out.string() + ".partial-" + std::to_string(::getpid()) + "-" +
                           std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  std::ofstream out(partial, std::ios::trunc);
  require(static_cast<bool>(out), "cannot write " + config.out.string());
  std::mt19937_64 rng(config.seed);
  const fs::path image_dir = config.out.parent_path() / (config.out.stem().string() + "_images");
  if (config.image_ref == "path") fs::create_directories(image_dir, ec);
  for (std::size_t i = 0; i < config.num; ++i) {
    const std::string question = std::string(kQuestions[rng() % std::size(kQuestions)]) + " (sample " + std::to_string(i) + ")";
    const RgbImage image = synthetic_image(config.width, config.height, rng());
    const std::string bytes = config.image_format == "png" ? encode_png(image) : encode_jpeg(image, 90);
    json image_item;
    if (config.image_ref == "bytes") {
      image_item = {{"bytes", base64_encode(bytes)}};
    } else {
      const std::string name = "img_" + std::to_string(i) + (config.image_format == "png" ? ".png" : ".jpg");
      std::ofstream img(image_dir / name, std::ios::binary | std::ios::trunc);
      img.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      require(static_cast<bool>(img), "cannot write " + (image_dir / name).string());
      image_item = {{"path", (image_dir.filename() / name).string()}};
    }
    json row;
    if (config.layout == "vision-arena-bench") {
      row = {{"question_id", "gen-" + std::to_string(i)},
             {"turns", json::array({json::array({{{"role", "user"}, {"content", question}}})})},
             {"images", json::array({image_item})}};
    } else if (config.layout == "visionarena-chat") {
      row = {{"conversation_id", "gen-" + std::to_string(i)},
             {"model", "synthetic"},
             {"conversation", json::array({json::array({{{"role", "user"}, {"content", question}},
                                                       {{"role", "assistant"}, {"content", "A synthetic answer."}}})})},
             {"images", json::array({image_item})}};
    } else if (config.layout == "custom_image") {
      const std::string ref = image_item.contains("path") ? image_item["path"].get<std::string>()
                                                           : "data:image/" + std::string(config.image_format == "png" ? "png" : "jpeg") +
                                                                 ";base64," + image_item["bytes"].get<std::string>();
      row = {{"prompt", question}, {"image_files", json::array({ref})}, {"output_tokens", 16 + static_cast<int>(rng() % 48)}};
    } else {
      row = {{"prompt", question}, {"output_tokens", 16 + static_cast<int>(rng() % 48)}};
    }
    out << row.dump() << '\n';
  }
  out.close();
  if (!out) {
    fs::remove(partial, ec);
    throw InvalidInput("error writing " + config.out.string());
  }
  fs::rename(partial, config.out, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(partial, ec);
    throw InvalidInput("cannot write " + config.out.string() + ": " + why);
  }
  return config.num;
}

}  // namespace encbench::client
