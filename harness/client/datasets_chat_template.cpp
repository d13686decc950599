#include "harness/client/datasets_chat_template.hpp"

#include "harness/core/error.hpp"

namespace encbench::client {

std::optional<tokenizer::ChatTemplate> find_chat_template(const std::filesystem::path& tokenizer_file, std::string& note) {
  auto found = tokenizer::load_chat_template(tokenizer_file);
  const auto dir = tokenizer_file.has_parent_path() ? tokenizer_file.parent_path() : std::filesystem::path(".");
  if (!found)
    note = "no chat template next to the tokenizer (" + dir.string() +
           " has no chat_template.jinja and no chat_template in tokenizer_config.json): prompts counted and sent "
           "without one (vLLM would stop with an error)";
  else
    note = "chat template " + found->source();
  return found;
}

std::string render_user_turn(const tokenizer::ChatTemplate& chat_template, const std::string& text,
                             const nlohmann::ordered_json& kwargs) {
  const nlohmann::ordered_json messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", text}}});
  return chat_template.apply(messages, true, kwargs);
}

nlohmann::ordered_json chat_template_kwargs(const ChatTemplateConfig& config) {
  if (config.kwargs_json.empty()) return nlohmann::ordered_json::object();
  auto j = nlohmann::ordered_json::parse(config.kwargs_json, nullptr, false);
  require(!j.is_discarded() && j.is_object(), "--chat-template-kwargs must be a JSON object, got '" + config.kwargs_json + "'");
  return j;
}

std::string apply_custom_chat_template(Dataset& dataset, const ChatTemplateConfig& config,
                                       const std::filesystem::path& tokenizer_file) {
  if (config.skip) return "--skip-chat-template: custom prompts sent and counted as written";
  const auto kwargs = chat_template_kwargs(config);
  std::string note;
  const auto chat_template = find_chat_template(tokenizer_file, note);
  if (!chat_template) return note;
  // Oversampled rows repeat earlier ones: render each distinct prompt once.
  std::string last_in, last_out;
  for (auto& s : dataset.samples) {
    if (s.prompt != last_in) {
      last_in = s.prompt;
      last_out = render_user_turn(*chat_template, s.prompt, kwargs);
    }
    s.prompt = last_out;
  }
  return note + ": custom prompts rendered as the user turn (add_generation_prompt, as vLLM sends and counts them)";
}

}  // namespace encbench::client
