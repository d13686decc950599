#pragma once
// Helpers of the tokenizer tests: where the sources are, temporary files, a tokenizer.json built
// from a hand-written vocab and merges.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::tokenizer::testing {

inline std::filesystem::path source_dir() {
  const char* src = std::getenv("ENCBENCH_SOURCE_DIR");
  return src != nullptr ? std::filesystem::path(src) : std::filesystem::path(ENCBENCH_TEST_SOURCE_DIR);
}

inline std::filesystem::path tiny_qwen2() { return source_dir() / "tests/tokenizer/data/tiny-qwen2"; }

// A file under the test's own temporary directory, removed with it.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("encbench_tokenizer_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

// GPT-2's byte -> character map (the test's own copy, written from the published algorithm).
inline std::string byte_level(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) {
    int cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174))) {
      int n = 0;
      for (int x = 0; x < b; ++x)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174))) ++n;
      cp = 256 + n;
    }
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return out;
}

// A Qwen2-layout tokenizer.json: the 256 byte tokens (ids 0..255), then `merges` (raw byte
// strings, in rank order; each merge's result gets the next id), then `added` special tokens.
inline std::string hand_tokenizer(const std::vector<std::pair<std::string, std::string>>& merges,
                                  const std::vector<std::string>& added = {}) {
  nlohmann::json vocab = nlohmann::json::object(), merge_list = nlohmann::json::array();
  for (int b = 0; b < 256; ++b) vocab[byte_level(std::string(1, static_cast<char>(b)))] = b;
  int next = 256;
  for (const auto& [l, r] : merges) {
    merge_list.push_back({byte_level(l), byte_level(r)});
    if (!vocab.contains(byte_level(l + r))) vocab[byte_level(l + r)] = next++;
  }
  nlohmann::json added_json = nlohmann::json::array();
  for (const auto& a : added)
    added_json.push_back({{"id", next++}, {"content", a}, {"special", true}, {"normalized", false}});
  const char* regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  nlohmann::json doc = {
      {"added_tokens", added_json},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}}}};
  return doc.dump();
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the node reference; nullopt (with `why`) when it cannot run here.
inline std::optional<nlohmann::json> run_reference(const std::filesystem::path& tokenizer_json,
                                            const std::filesystem::path& texts_json, std::string& why) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    why = "node not found (scripts/install-deps.sh --test installs it)";
    return std::nullopt;
  }
  const auto script = source_dir() / "tests/node/tokenizer_reference.mjs";
  const auto out = texts_json.parent_path() / "reference.json";
  const std::string cmd = "node '" + script.string() + "' '" + tokenizer_json.string() + "' '" +
                          texts_json.string() + "' > '" + out.string() + "' 2> '" + out.string() + ".err'";
  const int status = std::system(cmd.c_str());
  if (status != 0) {
    why = "tokenizers.js did not run (" + read_text(out.string() + ".err") +
          "); tests/node/install.sh installs @huggingface/tokenizers";
    return std::nullopt;
  }
  return nlohmann::json::parse(read_text(out));
}

}  // namespace encbench::tokenizer::testing
