#pragma once
// The split regex of byte-level BPE tokenizers, matched by hand (std::regex is orders of magnitude
// too slow and has no \p{L}). Two patterns are known, exactly as tokenizer.json spells them:
//   Qwen2/Qwen3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Llama 3:      the same with \p{N}{1,3}
// and GPT-2's ByteLevel(use_regex=true) pattern:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Matching is leftmost-first over the alternatives, as Oniguruma (Hugging Face tokenizers) does;
// the case-insensitive contractions fold ASCII letters only (as tokenizers.js does).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace encbench::tokenizer {

enum class SplitPattern { qwen2, llama3, gpt2 };

// The pattern a tokenizer.json regex string names, or nullopt for one not implemented here.
std::optional<SplitPattern> split_pattern_from_regex(std::string_view regex);
const char* split_pattern_regex(SplitPattern pattern);

// Calls emit(piece) for each match of the pattern over text, in order; the pieces cover text.
template <typename Emit>
void split_pieces(SplitPattern pattern, std::string_view text, Emit&& emit);

// The end of the match that starts at `pos` (pos < text.size(); always > pos).
std::size_t match_end(SplitPattern pattern, std::string_view text, std::size_t pos);

template <typename Emit>
void split_pieces(SplitPattern pattern, std::string_view text, Emit&& emit) {
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = match_end(pattern, text, pos);
    emit(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace encbench::tokenizer
