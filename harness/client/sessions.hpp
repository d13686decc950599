#pragma once
// Multi-turn sessions (`encbench bench multi-turn`): each dataset row's conversation sent as a
// chat client sends it, following vLLM's benchmarks/multi_turn (benchmark_serving_multi_turn.py):
// a session's turn k+1 is sent after turn k's answer has fully arrived, plus a think time; its
// messages are the whole history re-sent (the user turns, the server's own answers as the
// assistant turns, the row's image on the first user turn every time); at most
// `max_sessions_in_flight` sessions are active at once (vLLM's --max-active-conversations), each
// worker taking the next session when its session ends. Records are per turn; the summary keeps
// the first turns' TTFT apart from the later turns'.
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/dataset.hpp"
#include "harness/client/metrics.hpp"
#include "harness/client/records.hpp"

namespace encbench::client {

// --think-time: "0" (none), "constant:S", "uniform:A:B" or "exponential:MEAN", in seconds.
struct ThinkTime {
  enum class Kind { none, constant, uniform, exponential } kind = Kind::none;
  double a = 0, b = 0;
  double draw(std::mt19937_64& rng) const;  // seconds
};
ThinkTime parse_think_time(const std::string& text);  // InvalidInput naming --think-time

struct SessionRunConfig {
  std::string url;                        // the chat completions endpoint
  std::string model;
  std::vector<std::string> headers;       // extra "Name: value" lines
  std::size_t max_sessions_in_flight = 1; // --max-concurrency, counted in sessions
  std::size_t max_turns = 0;              // user turns per session (0: all the row has)
  ThinkTime think;
  std::uint64_t seed = 0;                 // think times: session i draws from mt19937_64(seed + i)
  double timeout_s = 600;                 // per turn
  std::string request_id_prefix = "mt-";  // ids: PREFIX<session>-<turn>
};

struct TurnRecord {
  std::size_t session = 0, turn = 0;      // turn 0: the first user message
  std::size_t history_messages = 0;       // messages sent (history + this turn)
  std::size_t request_bytes = 0;
  double think_s = 0;                     // waited before this turn (0 for turn 0)
  RequestRecord record;
};

struct SessionRunResult {
  std::vector<TurnRecord> turns;          // in completion order
  Nanos start_ns = 0, end_ns = 0;
  std::size_t sessions = 0, peak_sessions_in_flight = 0;
};

// Runs every sample as one session (turn 0: its prompt and images, then later_user_turns).
SessionRunResult run_sessions(const std::vector<SampleRequest>& sessions, const SessionRunConfig& config);

struct SessionMetrics {
  std::size_t sessions = 0, turns = 0, failed_turns = 0;
  double duration_s = 0, turn_throughput = 0;
  MetricSummary ttft_first_turn, ttft_later_turns, e2el_all;
  std::vector<MetricSummary> ttft_by_turn;  // index = turn
  std::size_t peak_sessions_in_flight = 0;
};
SessionMetrics calculate_session_metrics(const SessionRunResult& run, const std::vector<double>& percentiles);
void print_session_block(std::ostream& out, const SessionMetrics& m);
nlohmann::ordered_json session_json(const SessionMetrics& m, const SessionRunResult& run);

}  // namespace encbench::client
