#pragma once
// The client-side chat template of vLLM's benchmark datasets (vllm/benchmarks/datasets, pinned in
// docs/client.md): CustomDataset renders each prompt as the single user turn of the tokenizer's
// chat template (add_generation_prompt=True, --chat-template-kwargs as template variables) unless
// --skip-chat-template, and counts the rendered text; SonnetDataset counts its base prompt and
// every prompt rendered the same way. The template is the tokenizer's (tokenizer/chat_template.hpp).
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/client/dataset.hpp"
#include "harness/tokenizer/chat_template.hpp"

namespace encbench::client {

// The tokenizer's chat template (next to `tokenizer_file`), or nullopt with `note` saying that
// none was found. InvalidInput when one exists but does not load (it names the file).
std::optional<tokenizer::ChatTemplate> find_chat_template(const std::filesystem::path& tokenizer_file, std::string& note);

// apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
// tokenize=False, **kwargs).
std::string render_user_turn(const tokenizer::ChatTemplate& chat_template, const std::string& text,
                             const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object());

// --chat-template-kwargs as an object ({} when empty); InvalidInput when it is not one.
nlohmann::ordered_json chat_template_kwargs(const ChatTemplateConfig& config);

// vLLM's CustomDataset.sample: every prompt of a `custom` dataset replaced by its rendered user
// turn (unless --skip-chat-template). Returns one line for stderr saying what was done.
std::string apply_custom_chat_template(Dataset& dataset, const ChatTemplateConfig& config,
                                       const std::filesystem::path& tokenizer_file);

}  // namespace encbench::client
