#pragma once
// A Hugging Face `tokenizer.json` of the byte-level BPE kind (GPT-2, Llama 3, Qwen2/Qwen3 as
// they ship it): normalizer (none or NFC), Split pre-tokenizer regex (pretokenizer.hpp), byte-level
// alphabet, BPE merges by rank, added and special tokens matched before everything else, and a
// TemplateProcessing post-processor for add_special_tokens. Anything else in the file is refused
// at load (InvalidInput naming the file and the entry), never approximated.
//
// encode() is const and keeps no cache: safe to call from several threads.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "harness/tokenizer/pretokenizer.hpp"

namespace encbench::tokenizer {

using TokenId = std::int32_t;

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;
};

class Tokenizer {
 public:
  // `path`: a tokenizer.json, or a model directory that holds one.
  static Tokenizer load(const std::filesystem::path& path);
  // The file's text; `source` names it in error messages.
  static Tokenizer parse(std::string_view json_text, const std::string& source);

  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = false) const;
  // The UTF-8 text of `ids` (byte-level tokens joined, then invalid UTF-8 replaced by U+FFFD as
  // Hugging Face's decoder does). Ids out of range throw InvalidInput.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  // Hugging Face's `tokenizer.vocab_size`: the model's vocabulary, without added tokens.
  std::size_t vocab_size() const { return vocab_size_; }
  // len(tokenizer): one past the largest id (vocabulary and added tokens).
  std::size_t size() const { return id_bytes_.size(); }
  // all_special_ids: the added tokens marked special, in id order.
  std::vector<TokenId> special_ids() const;
  // Tokens TemplateProcessing adds to one sequence (num_special_tokens_to_add(pair=False)).
  std::size_t num_special_tokens_to_add() const { return prefix_ids_.size() + suffix_ids_.size(); }
  std::optional<TokenId> token_id(std::string_view token) const;
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  SplitPattern split_pattern() const { return pattern_; }
  const std::string& source() const { return source_; }

 private:
  struct Merge {
    std::int32_t rank;
    TokenId result;
  };
  void encode_segment(std::string_view text, std::vector<TokenId>& out) const;
  void bpe(std::string_view word, std::vector<TokenId>& out) const;
  // The leftmost-longest added token at or after `from`: {position, index in added_} or npos.
  std::pair<std::size_t, std::size_t> find_added(std::string_view text, std::size_t from) const;
  const Merge* merge_of(TokenId left, TokenId right) const;

  friend struct TokenizerBuilder;
  std::string source_;
  SplitPattern pattern_ = SplitPattern::qwen2;
  bool use_split_ = true, nfc_ = false, ignore_merges_ = false;
  std::size_t vocab_size_ = 0;
  std::vector<std::string> id_bytes_;                     // raw bytes of each id ("" for a gap)
  std::unordered_map<std::string, TokenId> bytes_to_id_;  // raw bytes -> model vocab id
  std::array<TokenId, 256> byte_ids_{};                   // the single-byte tokens
  std::unordered_map<std::uint64_t, Merge> merges_;       // (left << 32 | right) -> rank, result
  std::vector<AddedToken> added_;                         // sorted by content length, longest first
  std::array<bool, 256> added_first_byte_{};
  std::vector<bool> is_special_;
  std::vector<TokenId> prefix_ids_, suffix_ids_;          // TemplateProcessing "single"
};

}  // namespace encbench::tokenizer
