// The chat template in vLLM's datasets (harness/client/datasets_chat_template.cpp): custom prompts
// become the user turn of the tokenizer's template and sonnet counts (and, except to openai-chat,
// sends) its prompts templated. Expected texts come from Jinja2 in python3 and expected lengths
// from tokenizers.js (tests/node) on those texts: vLLM's formula computed by independent
// implementations. The tokenizer is the test's tiny Qwen2-layout one; its directory gets a
// tokenizer_config.json or chat_template.jinja holding a real Qwen template.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/datasets_tokens.hpp"
#include "harness/core/error.hpp"
#include "harness/tokenizer/chat_template.hpp"
#include "tests/tokenizer/jinja_reference.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::client {
namespace {

using Json = nlohmann::ordered_json;
using tokenizer::testing::jinja2_reference;
using tokenizer::testing::read_text;
using tokenizer::testing::source_dir;
using tokenizer::testing::TempDir;

std::string template_text(const char* file) { return read_text(source_dir() / "tests/tokenizer/data/chat_templates" / file); }

// A tokenizer directory: the tiny tokenizer, and the template in the config or in its own file.
std::filesystem::path tokenizer_dir(const TempDir& dir, const std::string& chat_template, bool as_jinja_file) {
  const auto root = dir.path() / "model";
  std::filesystem::create_directories(root);
  std::filesystem::copy_file(tokenizer::testing::tiny_qwen2() / "tokenizer.json", root / "tokenizer.json");
  Json config = {{"bos_token", nullptr}, {"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}};
  if (as_jinja_file) dir.write("model/chat_template.jinja", chat_template);
  else config["chat_template"] = chat_template;
  dir.write("model/tokenizer_config.json", config.dump());
  return root;
}

Json user_turn_variables(const std::string& text, const Json& kwargs) {
  Json v = {{"messages", Json::array({{{"role", "user"}, {"content", text}}})}, {"tools", nullptr}, {"documents", nullptr},
            {"add_generation_prompt", true}, {"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}};
  for (const auto& [k, x] : kwargs.items()) v[k] = x;
  return v;
}

// Token counts of `texts` by tokenizers.js (the tiny tokenizer adds no special tokens, so
// tokenizer(text).input_ids has as many); nullopt with `why` when node cannot run.
std::optional<std::vector<std::int64_t>> tokenizers_js_counts(const std::vector<std::string>& texts, std::string& why) {
  TempDir dir;
  const auto path = dir.write("texts.json", nlohmann::json(texts).dump());
  const auto ref = tokenizer::testing::run_reference(tokenizer::testing::tiny_qwen2() / "tokenizer.json", path, why);
  if (!ref) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const auto& ids : (*ref)["ids"]) out.push_back(static_cast<std::int64_t>(ids.size()));
  return out;
}

DatasetConfig custom_config(const std::filesystem::path& jsonl, const std::string& kwargs, bool skip) {
  DatasetConfig c;
  c.name = "custom";
  c.path = jsonl.string();
  c.num_prompts = 5;
  c.shuffle = false;
  c.chat_template.kwargs_json = kwargs;
  c.chat_template.skip = skip;
  return c;
}

TEST(DatasetChatTemplate, CustomPromptsAreTheRenderedUserTurnCountedAsVllmCounts) {
  TempDir dir;
  const auto model = tokenizer_dir(dir, template_text("qwen3.jinja"), false);
  const std::vector<std::string> prompts = {"What is the capital of India?", "Grüße, 中文 and \"quotes\"",
                                            "  spaced  \n lines \n", "{{ not a tag }}", "<think>x</think> y"};
  std::string rows;
  for (const auto& p : prompts) rows += nlohmann::json{{"prompt", p}, {"output_tokens", 9}}.dump() + "\n";
  const auto jsonl = dir.write("custom.jsonl", rows);
  const Json kwargs = {{"enable_thinking", false}};
  const auto loaded = load_tokenized_dataset(custom_config(jsonl, kwargs.dump(), false), model.string(), "", false);
  ASSERT_EQ(loaded.dataset.samples.size(), prompts.size());
  EXPECT_NE(loaded.tokens.note.find("chat template"), std::string::npos) << loaded.tokens.note;
  Json variables = Json::array();
  for (const auto& p : prompts) variables.push_back(user_turn_variables(p, kwargs));
  std::string why;
  const auto rendered = jinja2_reference(template_text("qwen3.jinja"), variables, why);
  if (!rendered) GTEST_SKIP() << why;
  std::vector<std::string> texts;
  for (const auto& r : *rendered) texts.push_back(r.text);
  const auto counts = tokenizers_js_counts(texts, why);
  if (!counts) GTEST_SKIP() << why;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto& s = loaded.dataset.samples[i];
    ASSERT_TRUE((*rendered)[i].ok);
    EXPECT_EQ(s.prompt, (*rendered)[i].text);  // sent templated, as vLLM's CustomDataset
    EXPECT_NE(s.prompt.find("<think>\n\n</think>\n\n"), std::string::npos);  // the kwargs reached the template
    EXPECT_EQ(s.prompt_len, (*counts)[i]);
    EXPECT_EQ(s.text_tokens, s.prompt_len);
  }
  // --skip-chat-template: as written, counted as written.
  const auto skipped = load_tokenized_dataset(custom_config(jsonl, "", true), model.string(), "", false);
  const auto raw_counts = tokenizers_js_counts(prompts, why);
  ASSERT_TRUE(raw_counts.has_value()) << why;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(skipped.dataset.samples[i].prompt, prompts[i]);
    EXPECT_EQ(skipped.dataset.samples[i].prompt_len, (*raw_counts)[i]);
    EXPECT_GT(loaded.dataset.samples[i].prompt_len, (*raw_counts)[i] + 5);  // the template's tokens on top
  }
  EXPECT_THROW(load_tokenized_dataset(custom_config(jsonl, "[1]", false), model.string(), "", false), InvalidInput);
}

TEST(DatasetChatTemplate, SonnetCountsTemplatedAndSendsTemplatedExceptToTheChatBackend) {
  TempDir dir;
  const auto model = tokenizer_dir(dir, template_text("qwen2.5.jinja"), true);
  std::vector<std::string> poem;
  std::string text;
  for (int k = 0; k < 30; ++k) {
    poem.push_back("line " + std::to_string(k) + " of the sonnet, with words to count\n");
    text += poem.back();
  }
  const auto path = dir.write("sonnet.txt", text);
  // vLLM's numbers from the references: avg tokens per line, base_offset of the templated base.
  const std::string base = "Pick as many lines as you can from these poem lines:\n";
  std::string why;
  const auto base_rendered = jinja2_reference(template_text("qwen2.5.jinja"), Json::array({user_turn_variables(base, Json::object())}), why);
  if (!base_rendered) GTEST_SKIP() << why;
  std::vector<std::string> count_these = poem;
  count_these.push_back(base_rendered->front().text);
  const auto counts = tokenizers_js_counts(count_these, why);
  if (!counts) GTEST_SKIP() << why;
  double total = 0;
  for (std::size_t k = 0; k < poem.size(); ++k) total += static_cast<double>((*counts)[k]);
  const double avg = total / static_cast<double>(poem.size());
  const double base_offset = static_cast<double>(counts->back());
  DatasetConfig c;
  c.name = "sonnet";
  c.path = path.string();
  c.num_prompts = 8;
  c.seed = 3;
  c.vllm_text.sonnet_prefix_len = static_cast<int>(base_offset + 2 * avg);
  c.vllm_text.sonnet_input_len = static_cast<int>(base_offset + 6.2 * avg) + 1;  // 6 lines fit
  const auto n_input = static_cast<std::size_t>(std::nearbyint((c.vllm_text.sonnet_input_len - base_offset) / avg));
  c.chat_template.chat_backend = true;
  const auto raw = load_tokenized_dataset(c, model.string(), "", false);
  c.chat_template.chat_backend = false;
  const auto formatted = load_tokenized_dataset(c, model.string(), "", false);
  ASSERT_EQ(raw.dataset.samples.size(), 8u);
  ASSERT_EQ(formatted.dataset.samples.size(), 8u);
  EXPECT_NE(formatted.tokens.note.find("chat_template.jinja"), std::string::npos) << formatted.tokens.note;
  Json variables = Json::array();
  for (const auto& s : raw.dataset.samples) variables.push_back(user_turn_variables(s.prompt, Json::object()));
  const auto rendered = jinja2_reference(template_text("qwen2.5.jinja"), variables, why);
  ASSERT_TRUE(rendered.has_value()) << why;
  std::vector<std::string> texts;
  for (const auto& r : *rendered) texts.push_back(r.text);
  const auto templated_counts = tokenizers_js_counts(texts, why);
  ASSERT_TRUE(templated_counts.has_value()) << why;
  for (std::size_t i = 0; i < 8; ++i) {
    const auto& r = raw.dataset.samples[i];
    ASSERT_EQ(r.prompt.rfind(base, 0), 0u);  // the chat backend gets the raw prompt...
    EXPECT_EQ(static_cast<std::size_t>(std::count(r.prompt.begin(), r.prompt.end(), '\n')), n_input + 1);
    EXPECT_EQ(r.prompt_len, (*templated_counts)[i]);  // ...counted templated
    EXPECT_LE(r.prompt_len, c.vllm_text.sonnet_input_len);
    EXPECT_EQ(formatted.dataset.samples[i].prompt, (*rendered)[i].text);  // completions get the template
    EXPECT_EQ(formatted.dataset.samples[i].prompt_len, r.prompt_len);
  }
}

TEST(DatasetChatTemplate, LoadingFollowsTransformers) {
  TempDir dir;
  const auto root = dir.path() / "m";
  std::filesystem::create_directories(root);
  EXPECT_FALSE(tokenizer::load_chat_template(root).has_value());  // nothing there: no template
  dir.write("m/tokenizer_config.json",
            Json{{"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                 {"eos_token", "</s>"},
                 {"chat_template", Json::array({{{"name", "tool_use"}, {"template", "T"}}, {{"name", "default"}, {"template", "{{ bos_token }}D{{ eos_token }}"}}})}}
                .dump());
  auto t = tokenizer::load_chat_template(root / "tokenizer.json");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->apply(Json::array(), false), "<s>D</s>");  // the "default" entry, AddedToken content
  dir.write("m/chat_template.jinja", "J{{ messages|length }}{{ x }}\n");  // the file wins over the config
  t = tokenizer::load_chat_template(root);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->apply(Json::array({{{"role", "user"}, {"content", "a"}}}), true, {{"x", 5}}), "J15");
  dir.write("m/chat_template.jinja", "ok\n{% for m in messages %}\n  {{ m.content | nosuch }}\n{% endfor %}");
  try {
    tokenizer::load_chat_template(root);
    FAIL() << "an unknown filter must be refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("chat_template.jinja:3:18: No filter named 'nosuch'."), std::string::npos) << e.what();
  }
  std::filesystem::remove(root / "chat_template.jinja");
  dir.write("m/tokenizer_config.json", Json{{"chat_template", Json::array({{{"name", "tool_use"}, {"template", "T"}}})}}.dump());
  EXPECT_THROW(tokenizer::load_chat_template(root), InvalidInput);  // several, none "default"
  dir.write("m/tokenizer_config.json", "{not json");
  EXPECT_THROW(tokenizer::load_chat_template(root), InvalidInput);
}

TEST(DatasetChatTemplate, BenchServeExitsTwoOnABadTemplateNamingFileAndPlace) {
  TempDir dir;
  const auto model = tokenizer_dir(dir, "{% for m in messages %}{{ m.content }}\n{% if %}{% endfor %}", true);
  const auto jsonl = dir.write("c.jsonl", "{\"prompt\": \"hi\"}\n");
  const auto run = [&](const std::string& extra) {
    const std::string cmd = std::string(ENCBENCH_EXE) + " bench serve --base-url http://127.0.0.1:9 --model m --num-prompts 1 "
                            "--dataset-name custom --dataset-path '" + jsonl.string() + "' --tokenizer '" + model.string() +
                            "' " + extra + " > '" + (dir.path() / "out.txt").string() + "' 2>&1";
    const int status = std::system(cmd.c_str());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir.path() / "out.txt"));
  };
  auto [code, out] = run("");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("chat_template.jinja:2:7: expected an expression, got '%}'"), std::string::npos) << out;
  dir.write("model/chat_template.jinja", "{{ raise_exception('only system and user roles, got ' ~ messages[0].role) }}");
  std::tie(code, out) = run("");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("only system and user roles, got user"), std::string::npos) << out;
  std::tie(code, out) = run("--chat-template-kwargs '[1]'");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--chat-template-kwargs"), std::string::npos) << out;
}

}  // namespace
}  // namespace encbench::client
