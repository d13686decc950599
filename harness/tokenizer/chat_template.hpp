#pragma once
// A model's chat template, rendered as transformers' tokenizer.apply_chat_template(messages,
// add_generation_prompt=..., tokenize=False, **kwargs) renders it: a Jinja2 subset (lexer, parser,
// evaluator in jinja_*.cpp) in the environment transformers builds (ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loopcontrols, tojson with ensure_ascii=False, raise_exception,
// strftime_now), with the tokenizer's special tokens and the caller's kwargs as variables.
// docs/client.md ("Chat templates") lists what is supported and what is not.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::tokenizer {

namespace jinja {
struct Stmt;
}

struct ChatTemplateLimits {
  std::size_t max_output_bytes = std::size_t{64} << 20;
  std::uint64_t max_steps = 50'000'000;  // expression/statement evaluations in one render
  int max_call_depth = 64;               // nested macro calls
};

class ChatTemplate {
 public:
  // Parses the template text. InvalidInput "SOURCE:LINE:COLUMN: message" when it does not parse
  // or names an unknown filter or test.
  static ChatTemplate parse(const std::string& text, const std::string& source);

  // apply_chat_template(messages, add_generation_prompt, tokenize=False, **kwargs): the variables
  // are messages, tools=None, documents=None, add_generation_prompt, the special tokens, then
  // `kwargs` (an object; its keys override the others, as transformers merges them).
  // InvalidInput "SOURCE: message" when rendering fails (raise_exception, undefined access, ...).
  std::string apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                    const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const;
  // The template with exactly these variables (an object).
  std::string render(const nlohmann::ordered_json& variables) const;

  const std::string& source() const { return source_; }
  // transformers' special_tokens_map: bos_token, eos_token, ... as the tokenizer config sets them.
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
  ChatTemplateLimits limits;

 private:
  std::shared_ptr<const std::vector<jinja::Stmt>> body_;
  std::string source_;
};

// The chat template of a tokenizer, found as transformers' tokenizer finds it next to the
// tokenizer files: `chat_template.jinja` in the directory, else tokenizer_config.json's
// "chat_template" (a string, or a list of {"name", "template"} from which "default" is used),
// with the config's special tokens. `tokenizer_path` is a tokenizer.json or its directory.
// nullopt when there is none; InvalidInput (naming the file) when a file is unreadable, not JSON,
// has no "default" among several templates, or the template does not parse.
std::optional<ChatTemplate> load_chat_template(const std::filesystem::path& tokenizer_path);

}  // namespace encbench::tokenizer
