// Encoding throughput of the byte-level BPE tokenizer (harness/tokenizer) on one core: tokens/s
// over a fixed text of the repository's docs and multilingual lines, with the test tokenizer
// (tests/tokenizer/data/tiny-qwen2, Qwen2's layout and regex, 1,756 tokens) or the one
// ENCBENCH_TOKENIZER names (a real model's tokenizer.json or directory). Also the full random-prompt
// path's inner step: decode of 1,024 ids then re-encode. And the chat template's cost per prompt
// (custom/sonnet render each prompt once at dataset load): Qwen3's template, one user turn.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "harness/micro/registry.hpp"
#include "harness/tokenizer/chat_template.hpp"
#include "harness/tokenizer/tokenizer.hpp"

namespace encbench::micro {
namespace {

std::filesystem::path source_dir() {
  const char* env = std::getenv("ENCBENCH_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? std::filesystem::path(env) : std::filesystem::path(ENCBENCH_MICRO_SOURCE_DIR);
}

tokenizer::Tokenizer bench_tokenizer() {
  const char* env = std::getenv("ENCBENCH_TOKENIZER");
  return tokenizer::Tokenizer::load(env != nullptr && *env != '\0' ? std::filesystem::path(env)
                                                                    : source_dir() / "tests/tokenizer/data/tiny-qwen2");
}

std::string bench_text() {
  std::string text;
  for (const char* doc : {"docs/client.md", "docs/server.md", "docs/design.md"}) {
    std::ifstream in(source_dir() / doc, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    text += s.str();
  }
  const std::string lines =
      "Le benchmark mesure le co\xC3\xBBt de l'encodage d'images. \xE8\xA7\x86\xE8\xA7\x89\xE7\xBC\x96\xE7\xA0\x81"
      "\xE5\x99\xA8\xE7\x9A\x84\xE5\x90\x9E\xE5\x90\x90\xE9\x87\x8F 12345 \xD0\x9E\xD0\xB1\xD1\x80\xD0\xB0\xD0\xB1"
      "\xD0\xBE\xD1\x82\xD0\xBA\xD0\xB0 \xF0\x9F\x99\x82\n";
  for (int i = 0; i < 200; ++i) text += lines;
  return text;
}

void tokenizer_encode(benchmark::State& state) {
  const auto tok = bench_tokenizer();
  const std::string text = bench_text();
  std::size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = tok.encode(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(tokens));  // items/s = tokens/s
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["tokens_per_call"] = static_cast<double>(tokens) / static_cast<double>(state.iterations());
}

void tokenizer_decode_reencode(benchmark::State& state) {
  const auto tok = bench_tokenizer();
  std::mt19937 rng(1);
  std::vector<tokenizer::TokenId> ids(1024);
  for (auto& id : ids) id = static_cast<tokenizer::TokenId>(rng() % tok.vocab_size());
  std::size_t tokens = 0;
  for (auto _ : state) {
    const auto again = tok.encode(tok.decode(ids));
    tokens += again.size();
    benchmark::DoNotOptimize(again.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(tokens));
}

void chat_template_user_turn(benchmark::State& state) {
  std::ifstream in(source_dir() / "tests/tokenizer/data/chat_templates/qwen3.jinja", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const auto t = tokenizer::ChatTemplate::parse(text.str(), "qwen3.jinja");
  const nlohmann::ordered_json messages = nlohmann::ordered_json::array(
      {{{"role", "user"}, {"content", bench_text().substr(0, static_cast<std::size_t>(state.range(0)))}}});
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string out = t.apply(messages, true);
    bytes += out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));  // items/s = prompts/s
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}

}  // namespace

void register_tokenizer_benchmarks() {
  benchmark::RegisterBenchmark("chat_template_user_turn", chat_template_user_turn)->Arg(2048)->Arg(65536)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("tokenizer_encode", tokenizer_encode)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("tokenizer_decode_reencode_1024", tokenizer_decode_reencode)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace encbench::micro
