#include "harness/cli/cmd_bench_multi_turn.hpp"

#include <fstream>
#include <iostream>

#include "harness/client/datasets_tokens.hpp"
#include "harness/client/sessions.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::cli {

void add_multi_turn_flags(CLI::App* app, MultiTurnFlags& flags) {
  app->add_option("--think-time", flags.think_time,
                  "Wait between a turn's answer and the next turn: 0, constant:S, uniform:A:B or exponential:MEAN (seconds)")
      ->capture_default_str();
  app->add_option("--max-turns", flags.max_turns, "User turns per session at most (0: every one the conversation has)")
      ->capture_default_str();
  app->add_option("--multi-turn-result", flags.result_file, "Write the sessions' result as versioned JSON (encbench-multi-turn/1)");
}

int run_bench_multi_turn(const client::BenchConfig& config, const MultiTurnFlags& flags) {
  require(config.backend == client::Backend::openai_chat, "bench multi-turn sends chat histories: --backend openai-chat");
  require(!config.model.empty(), "bench multi-turn needs --model (the name each request carries)");
  client::SessionRunConfig sc;
  sc.think = client::parse_think_time(flags.think_time);
  const client::TokenizedDataset loaded =
      client::load_tokenized_dataset(config.dataset, config.tokenizer, config.model, config.skip_tokenizer_init);
  if (!loaded.tokens.note.empty()) std::cerr << "bench multi-turn: " << loaded.tokens.note << "\n";
  sc.url = client::api_url(config);
  sc.model = config.served_model_name.empty() ? config.model : config.served_model_name;
  for (const auto& [k, v] : config.headers) sc.headers.push_back(k + ": " + v);
  sc.max_sessions_in_flight = config.max_concurrency > 0 ? static_cast<std::size_t>(config.max_concurrency) : 1;
  sc.max_turns = flags.max_turns;
  sc.seed = config.seed;
  sc.timeout_s = config.timeout_s;
  const client::SessionRunResult run = client::run_sessions(loaded.dataset.samples, sc);
  const client::SessionMetrics m = client::calculate_session_metrics(run, config.metric_percentiles);
  client::print_session_block(std::cout, m);
  if (!flags.result_file.empty()) {
    nlohmann::ordered_json j;
    const nlohmann::json envelope = make_result_envelope("encbench-multi-turn", 1, config.argv, "none");
    for (const auto& [k, v] : envelope.items()) j[k] = v;
    j["api_url"] = sc.url;
    j["model"] = sc.model;
    j["dataset"] = {{"name", config.dataset.name}, {"path", config.dataset.path}, {"layout", loaded.dataset.layout}};
    j["think_time"] = flags.think_time;
    j["max_sessions_in_flight"] = sc.max_sessions_in_flight;
    const nlohmann::ordered_json sessions = client::session_json(m, run);  // kept alive while iterated
    for (const auto& [k, v] : sessions.items()) j[k] = v;
    std::ofstream out(flags.result_file);
    require(static_cast<bool>(out << j.dump(2) << "\n"), "cannot write " + flags.result_file);
  }
  if (m.turns > 0 && m.failed_turns == m.turns) {
    std::cerr << "encbench: every turn failed (first: " << run.turns.front().record.error << ")\n";
    return 4;
  }
  return 0;
}

}  // namespace encbench::cli
