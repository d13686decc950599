#include "harness/tokenizer/chat_template.hpp"

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/tokenizer/jinja_ast.hpp"

namespace encbench::tokenizer {

ChatTemplate ChatTemplate::parse(const std::string& text, const std::string& source) {
  ChatTemplate t;
  t.source_ = source;
  try {
    t.body_ = std::make_shared<const jinja::Body>(jinja::parse(jinja::lex(text)));
  } catch (const jinja::TemplateSyntaxError& e) {
    throw InvalidInput(source + ":" + e.what());
  }
  return t;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& variables) const {
  jinja::ValueDict context;
  for (const auto& [k, v] : variables.items()) context.emplace_back(k, jinja::from_json(v));
  jinja::RenderLimits limits{this->limits.max_output_bytes, this->limits.max_steps, this->limits.max_call_depth};
  try {
    return jinja::render(*body_, context, limits);
  } catch (const jinja::TemplateRuntimeError& e) {
    throw InvalidInput(source_ + ": " + e.what());
  }
}

std::string ChatTemplate::apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                const nlohmann::ordered_json& kwargs) const {
  // transformers' render_jinja_template: render(messages=..., tools=..., documents=...,
  // add_generation_prompt=..., **{**special_tokens_map, **kwargs}).
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  variables["messages"] = messages;
  variables["tools"] = nullptr;
  variables["documents"] = nullptr;
  variables["add_generation_prompt"] = add_generation_prompt;
  for (const auto& [k, v] : special_tokens.items()) variables[k] = v;
  if (kwargs.is_object())
    for (const auto& [k, v] : kwargs.items()) variables[k] = v;
  return render(variables);
}

namespace {

nlohmann::ordered_json read_json(const std::filesystem::path& file) {
  const std::string text = read_file_maybe_gz(file);
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InvalidInput(file.string() + ": not valid JSON");
  return j;
}

// A special token in tokenizer_config.json: a string, or an AddedToken object {"content": ...}.
std::optional<std::string> token_text(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

// transformers' special_tokens_map: the special-token attributes that are set, as strings.
nlohmann::ordered_json special_tokens_of(const nlohmann::ordered_json& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (!config.contains(key)) continue;
    if (auto text = token_text(config[key])) out[key] = *text;
  }
  if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& t : config["additional_special_tokens"])
      if (auto text = token_text(t)) list.push_back(*text);
    if (!list.empty()) out["additional_special_tokens"] = list;
  }
  return out;
}

// tokenizer_config.json's "chat_template": a string, or named templates of which "default" is used
// (transformers raises without one when no template is named, as here).
std::optional<std::string> config_template(const nlohmann::ordered_json& config, const std::filesystem::path& file) {
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return std::nullopt;
  const auto& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (!t.is_array()) throw InvalidInput(file.string() + ": chat_template must be a string or a list of {\"name\", \"template\"}");
  for (const auto& entry : t) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["template"].is_string())
      throw InvalidInput(file.string() + ": each chat_template entry must be {\"name\", \"template\"}");
    if (entry["name"] == "default") return entry["template"].get<std::string>();
  }
  throw InvalidInput(file.string() + ": this model has multiple chat templates with no default specified");
}

}  // namespace

std::optional<ChatTemplate> load_chat_template(const std::filesystem::path& tokenizer_path) {
  std::error_code ec;
  const auto dir = std::filesystem::is_directory(tokenizer_path, ec) ? tokenizer_path : tokenizer_path.parent_path();
  const auto jinja_file = dir / "chat_template.jinja", config_file = dir / "tokenizer_config.json";
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (std::filesystem::exists(config_file, ec)) config = read_json(config_file);
  if (!config.is_object()) throw InvalidInput(config_file.string() + ": not a JSON object");
  std::optional<ChatTemplate> out;
  if (std::filesystem::exists(jinja_file, ec)) {
    out = ChatTemplate::parse(read_file_maybe_gz(jinja_file), jinja_file.string());
  } else if (auto text = config_template(config, config_file)) {
    out = ChatTemplate::parse(*text, config_file.string() + " (chat_template)");
  }
  if (out) out->special_tokens = special_tokens_of(config);
  return out;
}

}  // namespace encbench::tokenizer
