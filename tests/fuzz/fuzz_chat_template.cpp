// libFuzzer target: the chat-template renderer (harness/tokenizer/chat_template). First byte
// even: the rest is a template (as chat_template.jinja or tokenizer_config.json's chat_template
// holds it), parsed, then rendered with a conversation that has every message kind (system, user,
// assistant with reasoning and tool calls, tool, content parts), tools and special tokens. First
// byte odd: the rest is a JSON message list rendered by Qwen3's real template (shipped with the
// tests). Property: a string within the output bound, or InvalidInput; never a crash, hang, leak.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/tokenizer/chat_template.hpp"

namespace {

using encbench::tokenizer::ChatTemplate;
using Json = nlohmann::ordered_json;

// Small bounds so that a slow input costs milliseconds, not the fuzzer's time.
encbench::tokenizer::ChatTemplateLimits fuzz_limits() {
  encbench::tokenizer::ChatTemplateLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_steps = 200000;
  limits.max_call_depth = 16;
  return limits;
}

const Json& conversation() {
  static const Json messages = Json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image", "image": "a.jpg"}]},
    {"role": "assistant", "content": "<think>\nlook\n</think>\n\nA cat.", "reasoning_content": "look"},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2.5}}}]},
    {"role": "tool", "content": "{\"temp\": 21}"},
    {"role": "user", "content": "Thanks ü 中"}])");
  return messages;
}

const Json& variables() {
  static const Json kwargs = {
      {"tools", Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])")},
      {"enable_thinking", false},
      {"date_string", "26 Nov 2026"}};
  return kwargs;
}

std::optional<ChatTemplate> qwen3() {
  std::ifstream in(std::string(ENCBENCH_SOURCE_DIR) + "/tests/tokenizer/data/chat_templates/qwen3.jinja", std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  auto t = ChatTemplate::parse(text.str(), "qwen3.jinja");
  t.limits = fuzz_limits();
  return t;
}

void check(const std::string& out) {
  if (out.size() > fuzz_limits().max_output_bytes) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] & 1) {
      static const std::optional<ChatTemplate> real = qwen3();
      const Json messages = Json::parse(rest, nullptr, false);
      if (real && !messages.is_discarded()) check(real->apply(messages, true, variables()));
      return 0;
    }
    auto t = ChatTemplate::parse(rest, "fuzz.jinja");
    t.limits = fuzz_limits();
    t.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    check(t.apply(conversation(), true, variables()));
    check(t.apply(Json::array(), false));
  } catch (const encbench::InvalidInput&) {
  }
  return 0;
}
