#include "harness/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <queue>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/tokenizer/unicode.hpp"

namespace encbench::tokenizer {

using nlohmann::json;

namespace {

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for U+0100 upwards.
std::array<char32_t, 256> byte_to_char() {
  std::array<char32_t, 256> map{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    map[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return map;
}

// A vocab token's byte-level string -> its raw bytes; nullopt when a character is outside the
// byte-level alphabet (such a token can never be produced from text).
std::optional<std::string> token_bytes(const std::string& token, const std::array<int, 324>& char_to_byte) {
  std::string out;
  out.reserve(token.size());
  for (std::size_t pos = 0; pos < token.size();) {
    std::size_t len = 0;
    const char32_t cp = decode_utf8(token, pos, len);
    if (cp >= char_to_byte.size() || char_to_byte[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(char_to_byte[cp]));
    pos += len;
  }
  return out;
}

std::string type_of(const json& j) {
  if (!j.is_object()) return "";
  const auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool is_false_or_absent(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() || (it->is_boolean() && !it->get<bool>());
}

bool is_empty_or_absent(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

// One tokenizer.json's model, normalizer, pre-tokenizer, added tokens and post-processor, each read
// and validated by one function that names the entry it refuses.
}  // namespace

struct TokenizerBuilder {
  Tokenizer& t;
  const std::string& src;
  std::unordered_map<std::string, TokenId> token_ids;  // vocab token string -> id
  std::int64_t id_limit = 0;  // ids stay below vocab + added tokens + 65536 (a gap, not gigabytes)

  [[noreturn]] void fail(const std::string& entry, const std::string& why) const {
    throw InvalidInput(src + ": " + entry + ": " + why);
  }
  void set_bytes(TokenId id, std::string bytes) {
    const auto index = static_cast<std::size_t>(id);
    if (t.id_bytes_.size() <= index) t.id_bytes_.resize(index + 1);
    t.id_bytes_[index] = std::move(bytes);
  }

  void read_model(const json& model) {
    if (!model.is_object()) fail("model", "missing or not an object");
    const std::string type = type_of(model);
    if (type != "BPE") fail("model.type", "'" + type + "' is not supported (only byte-level \"BPE\")");
    if (!is_false_or_absent(model, "byte_fallback")) fail("model.byte_fallback", "byte fallback is not supported");
    if (model.contains("dropout") && !model["dropout"].is_null()) fail("model.dropout", "BPE dropout is not supported");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (!is_empty_or_absent(model, key)) fail(std::string("model.") + key, "is not supported");
    if (model.contains("ignore_merges")) {
      if (!model["ignore_merges"].is_boolean()) fail("model.ignore_merges", "not a boolean");
      t.ignore_merges_ = model["ignore_merges"].get<bool>();
    }
    read_vocab(model.contains("vocab") ? model["vocab"] : json());
    read_merges(model.contains("merges") ? model["merges"] : json());
  }

  void read_vocab(const json& vocab) {
    if (!vocab.is_object()) fail("model.vocab", "missing or not an object of token -> id");
    std::array<int, 324> char_to_byte;
    char_to_byte.fill(-1);
    const auto map = byte_to_char();
    for (int b = 0; b < 256; ++b) char_to_byte[map[static_cast<std::size_t>(b)]] = b;
    for (const auto& [token, id_json] : vocab.items()) {
      if (!id_json.is_number_integer() || id_json.get<std::int64_t>() < 0 || id_json.get<std::int64_t>() >= id_limit)
        fail("model.vocab['" + token + "']", "the id must be an integer in [0, " + std::to_string(id_limit) +
                                                  ") (the token count + 65536)");
      const auto id = static_cast<TokenId>(id_json.get<std::int64_t>());
      if (static_cast<std::size_t>(id) < t.id_bytes_.size() && !t.id_bytes_[static_cast<std::size_t>(id)].empty())
        fail("model.vocab['" + token + "']", "id " + std::to_string(id) + " is used twice");
      token_ids.emplace(token, id);
      const auto bytes = token_bytes(token, char_to_byte);
      if (!bytes || bytes->empty()) {
        set_bytes(id, token);  // unreachable from text; decodes as its own string
        continue;
      }
      t.bytes_to_id_.emplace(*bytes, id);
      set_bytes(id, *bytes);
    }
    t.vocab_size_ = vocab.size();
    for (int b = 0; b < 256; ++b) {
      const auto it = t.bytes_to_id_.find(std::string(1, static_cast<char>(b)));
      if (it == t.bytes_to_id_.end()) {
        std::ostringstream hex;
        hex << std::hex << b;
        fail("model.vocab", "no token for byte 0x" + hex.str() + " (a byte-level vocab has all 256)");
      }
      t.byte_ids_[static_cast<std::size_t>(b)] = it->second;
    }
  }

  // A merge is "left right" (older files) or ["left", "right"].
  std::pair<std::string, std::string> merge_parts(const json& m, const std::string& entry) const {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const auto space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        fail(entry, "'" + s + "' is not two tokens separated by one space");
      return {s.substr(0, space), s.substr(space + 1)};
    }
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      return {m[0].get<std::string>(), m[1].get<std::string>()};
    fail(entry, "a merge is \"left right\" or [\"left\", \"right\"]");
  }

  void read_merges(const json& merges) {
    if (!merges.is_array()) fail("model.merges", "missing or not an array");
    t.merges_.reserve(merges.size());
    for (std::size_t i = 0; i < merges.size(); ++i) {
      const std::string entry = "model.merges[" + std::to_string(i) + "]";
      const auto parts = merge_parts(merges[i], entry);
      const std::string& left = parts.first;
      const std::string& right = parts.second;
      const auto id_of = [&](const std::string& token) {
        const auto it = token_ids.find(token);
        if (it == token_ids.end()) fail(entry, "'" + left + " " + right + "': token '" + token + "' is not in model.vocab");
        return it->second;
      };
      const TokenId l = id_of(left), r = id_of(right), result = id_of(left + right);
      const std::uint64_t key = (static_cast<std::uint64_t>(l) << 32) | static_cast<std::uint32_t>(r);
      t.merges_.emplace(key, Tokenizer::Merge{static_cast<std::int32_t>(i), result});  // first rank wins
    }
  }

  void read_normalizer(const json& n) {
    if (n.is_null()) return;
    const std::string type = type_of(n);
    if (type == "NFC") {
      t.nfc_ = true;
      return;
    }
    if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
      for (const auto& inner : n["normalizers"]) read_normalizer(inner);
      return;
    }
    fail("normalizer", "type '" + type + "' is not supported (none or NFC)");
  }

  void read_split(const json& split) {
    const auto pattern = split.contains("pattern") ? split["pattern"] : json();
    if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
      fail("pre_tokenizer.Split.pattern", "must be {\"Regex\": ...}");
    const auto found = split_pattern_from_regex(pattern["Regex"].get<std::string>());
    if (!found) fail("pre_tokenizer.Split.pattern.Regex", "not one of the known patterns (Qwen2, Llama 3, GPT-2)");
    if (!split.contains("behavior") || split["behavior"] != "Isolated" || !is_false_or_absent(split, "invert"))
      fail("pre_tokenizer.Split", "only behavior \"Isolated\" without invert is supported");
    t.pattern_ = *found;
    t.use_split_ = true;
  }

  void read_byte_level(const json& b, bool after_split) {
    if (!is_false_or_absent(b, "add_prefix_space")) fail("pre_tokenizer.ByteLevel.add_prefix_space", "must be false");
    const bool use_regex = !b.contains("use_regex") || (b["use_regex"].is_boolean() && b["use_regex"].get<bool>());
    if (after_split && use_regex) fail("pre_tokenizer.ByteLevel.use_regex", "must be false after a Split");
    if (!after_split) {
      t.use_split_ = use_regex;
      t.pattern_ = SplitPattern::gpt2;
    }
  }

  void read_pre_tokenizer(const json& p) {
    if (p.is_null()) {
      t.use_split_ = false;
      return;
    }
    const std::string type = type_of(p);
    if (type == "ByteLevel") return read_byte_level(p, false);
    const json* steps = type == "Sequence" && p.contains("pretokenizers") ? &p["pretokenizers"] : nullptr;
    if (steps == nullptr || !steps->is_array() || steps->size() != 2 || type_of((*steps)[0]) != "Split" ||
        type_of((*steps)[1]) != "ByteLevel")
      fail("pre_tokenizer", "only ByteLevel or Sequence[Split, ByteLevel] is supported (type '" + type + "')");
    read_split((*steps)[0]);
    read_byte_level((*steps)[1], true);
  }

  void read_added_tokens(const json& added) {
    if (added.is_null()) return;
    if (!added.is_array()) fail("added_tokens", "not an array");
    for (std::size_t i = 0; i < added.size(); ++i) {
      const json& a = added[i];
      const std::string entry = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string() || a["content"].get<std::string>().empty())
        fail(entry, "needs an integer id and a non-empty content");
      const std::int64_t id = a["id"].get<std::int64_t>();
      if (id < 0 || id >= id_limit)
        fail(entry, "id must be in [0, " + std::to_string(id_limit) + ") (the token count + 65536)");
      for (const char* key : {"single_word", "lstrip", "rstrip"})
        if (!is_false_or_absent(a, key)) fail(entry + "." + key, "is not supported (false only)");
      AddedToken token{static_cast<TokenId>(id), a["content"].get<std::string>(),
                       a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>()};
      set_bytes(token.id, token.content);
      t.added_first_byte_[static_cast<unsigned char>(token.content[0])] = true;
      t.added_.push_back(std::move(token));
    }
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  }

  TokenId special_id(const json& specials, const std::string& name, const std::string& entry) const {
    const auto it = specials.is_object() ? specials.find(name) : specials.end();
    if (it == specials.end() || !it->contains("ids") || !(*it)["ids"].is_array() || (*it)["ids"].size() != 1 ||
        !(*it)["ids"][0].is_number_integer())
      fail(entry, "special token '" + name + "' needs one id in special_tokens");
    const std::int64_t id = (*it)["ids"][0].get<std::int64_t>();
    if (id < 0 || static_cast<std::size_t>(id) >= t.id_bytes_.size())
      fail(entry, "special token '" + name + "' has id " + std::to_string(id) + ", not a token of the file");
    return static_cast<TokenId>(id);
  }

  void read_template(const json& p) {
    const json single = p.contains("single") ? p["single"] : json();
    if (!single.is_array()) fail("post_processor.single", "not an array");
    bool seen_sequence = false;
    for (std::size_t i = 0; i < single.size(); ++i) {
      const std::string entry = "post_processor.single[" + std::to_string(i) + "]";
      const json& piece = single[i];
      if (piece.is_object() && piece.contains("Sequence")) {
        seen_sequence = true;
      } else if (piece.is_object() && piece.contains("SpecialToken") && piece["SpecialToken"].contains("id") &&
                 piece["SpecialToken"]["id"].is_string()) {
        const TokenId id = special_id(p.contains("special_tokens") ? p["special_tokens"] : json(),
                                      piece["SpecialToken"]["id"].get<std::string>(), entry);
        (seen_sequence ? t.suffix_ids_ : t.prefix_ids_).push_back(id);
      } else {
        fail(entry, "neither a Sequence nor a SpecialToken");
      }
    }
  }

  void read_post_processor(const json& p) {
    const std::string type = type_of(p);
    if (p.is_null() || type == "ByteLevel") return;
    if (type == "TemplateProcessing") return read_template(p);
    if (type == "Sequence" && p.contains("processors") && p["processors"].is_array()) {
      for (const auto& inner : p["processors"]) read_post_processor(inner);
      return;
    }
    fail("post_processor", "type '" + type + "' is not supported (ByteLevel, TemplateProcessing)");
  }

  void read_decoder(const json& d) {
    if (!d.is_null() && type_of(d) != "ByteLevel")
      fail("decoder", "type '" + type_of(d) + "' is not supported (ByteLevel)");
  }

  void finish() {
    t.is_special_.assign(t.id_bytes_.size(), false);
    for (const auto& a : t.added_)
      if (a.special) t.is_special_[static_cast<std::size_t>(a.id)] = true;
  }
};

Tokenizer Tokenizer::parse(std::string_view json_text, const std::string& source) {
  const json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) throw InvalidInput(source + ": not valid JSON");
  if (!j.is_object()) throw InvalidInput(source + ": not a tokenizer.json (the top level is not an object)");
  Tokenizer t;
  t.source_ = source;
  const auto get = [&](const char* key) { return j.contains(key) ? j[key] : json(); };
  const json model = get("model"), added = get("added_tokens");
  const std::size_t vocab_entries = model.is_object() && model.contains("vocab") ? model["vocab"].size() : 0;
  TokenizerBuilder b{t, source, {}, static_cast<std::int64_t>(vocab_entries + (added.is_array() ? added.size() : 0) + 65536)};
  b.read_model(model);
  b.read_normalizer(get("normalizer"));
  b.read_pre_tokenizer(get("pre_tokenizer"));
  b.read_added_tokens(added);
  b.read_post_processor(get("post_processor"));
  b.read_decoder(get("decoder"));
  b.finish();
  return t;
}

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
  std::error_code ec;
  const auto file = std::filesystem::is_directory(path, ec) ? path / "tokenizer.json" : path;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InvalidInput("--tokenizer: cannot read " + file.string() + " (a tokenizer.json or a directory holding one)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), file.string());
}

}  // namespace encbench::tokenizer

namespace encbench::tokenizer {

const Tokenizer::Merge* Tokenizer::merge_of(TokenId left, TokenId right) const {
  const auto it = merges_.find((static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint32_t>(right));
  return it == merges_.end() ? nullptr : &it->second;
}

namespace {
struct Symbol {
  TokenId id;
  std::int32_t prev, next;  // -1 at the ends; a merged-away symbol has id -1
};
struct Candidate {
  std::int32_t rank, left, right;  // positions in the symbol list
  TokenId left_id, right_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};
}  // namespace

// BPE of one pre-tokenized word: the lowest-ranked adjacent pair merges first, the leftmost of equal
// ranks first (as Hugging Face's Word::merge_all), with a heap of candidates checked when popped.
void Tokenizer::bpe(std::string_view word, std::vector<TokenId>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    const auto it = bytes_to_id_.find(std::string(word));
    if (it != bytes_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<Symbol> symbols(word.size());
  const auto n = static_cast<std::int32_t>(word.size());
  for (std::int32_t i = 0; i < n; ++i)
    symbols[static_cast<std::size_t>(i)] = {byte_ids_[static_cast<unsigned char>(word[static_cast<std::size_t>(i)])],
                                            i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto push = [&](std::int32_t left, std::int32_t right) {
    if (left < 0 || right < 0) return;
    const TokenId l = symbols[static_cast<std::size_t>(left)].id, r = symbols[static_cast<std::size_t>(right)].id;
    if (const Merge* m = merge_of(l, r)) heap.push({m->rank, left, right, l, r});
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = symbols[static_cast<std::size_t>(c.left)];
    Symbol& right = symbols[static_cast<std::size_t>(c.right)];
    if (left.id != c.left_id || right.id != c.right_id || left.next != c.right) continue;  // stale
    left.id = merge_of(c.left_id, c.right_id)->result;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = c.left;
    right.id = -1;
    push(left.prev, c.left);
    push(c.left, left.next);
  }
  for (std::int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next)
    out.push_back(symbols[static_cast<std::size_t>(i)].id);
}

void Tokenizer::encode_segment(std::string_view text, std::vector<TokenId>& out) const {
  std::string normalized;
  if (nfc_ && !nfc_quick_check(text)) {
    normalized = nfc(text);
    text = normalized;
  }
  if (!use_split_) {
    if (!text.empty()) bpe(text, out);
    return;
  }
  split_pieces(pattern_, text, [&](std::string_view piece) { bpe(piece, out); });
}

std::pair<std::size_t, std::size_t> Tokenizer::find_added(std::string_view text, std::size_t from) const {
  constexpr auto none = std::string_view::npos;
  if (added_.empty()) return {none, none};
  for (std::size_t pos = from; pos < text.size(); ++pos) {
    if (!added_first_byte_[static_cast<unsigned char>(text[pos])]) continue;
    for (std::size_t k = 0; k < added_.size(); ++k)  // longest first
      if (text.compare(pos, added_[k].content.size(), added_[k].content) == 0) return {pos, k};
  }
  return {none, none};
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 8);
  if (add_special_tokens) out.insert(out.end(), prefix_ids_.begin(), prefix_ids_.end());
  for (std::size_t pos = 0; pos < text.size();) {
    const auto [at, index] = find_added(text, pos);
    const std::size_t end = at == std::string_view::npos ? text.size() : at;
    encode_segment(text.substr(pos, end - pos), out);
    if (at == std::string_view::npos) break;
    out.push_back(added_[index].id);
    pos = at + added_[index].content.size();
  }
  if (add_special_tokens) out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (const TokenId id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= id_bytes_.size())
      throw InvalidInput(source_ + ": decode: token id " + std::to_string(id) + " is not in [0, " +
                         std::to_string(id_bytes_.size()) + ")");
    if (skip_special_tokens && is_special_[static_cast<std::size_t>(id)]) continue;
    bytes += id_bytes_[static_cast<std::size_t>(id)];
  }
  return utf8_lossy(bytes);
}

std::vector<TokenId> Tokenizer::special_ids() const {
  std::vector<TokenId> ids;
  for (const auto& a : added_)
    if (a.special) ids.push_back(a.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::optional<TokenId> Tokenizer::token_id(std::string_view token) const {
  for (const auto& a : added_)
    if (a.content == token) return a.id;
  const auto it = bytes_to_id_.find(std::string(token));
  if (it != bytes_to_id_.end()) return it->second;
  return std::nullopt;
}

}  // namespace encbench::tokenizer
