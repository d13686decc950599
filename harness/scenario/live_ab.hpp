#pragma once
// `encbench bench ab`: A/B of two live OpenAI-compatible servers in interleaved rounds.
//
// Round r runs both arms, A then B in odd rounds and B then A in even ones (ABBA...), so drift of
// the machine falls on both alike. Each arm of each round runs on a freshly started server
// (server_recipe.hpp: start in its own process group, wait for GET /health or /v1/models, the
// bench serve run with its warm-ups, /metrics before and after, /start_profile../stop_profile
// with --profile, then SIGTERM to the group, SIGKILL after the grace period, the port checked
// free). A URL arm is a server already running: it is only checked ready and measured.
//
// Then: per-round values of the headline metrics, the seeds' Before/After/Comparison table over
// the pooled rounds (the judgement: the rounds are the unit, each verdict with its change, interval
// and the MDE of its own test; judgement.hpp), the minimum detectable effect of each headline metric
// (ab_power.hpp), the --plan answer, versioned JSON (encbench-live-ab/1) of every round and a
// self-contained HTML page.
//
// Faults: a server that exits before it is ready, never becomes ready, dies during its round, a
// fixed port already taken, a URL that refuses connections: the run stops with one message naming
// the arm and round, every server it started is stopped, and the rounds that finished are written
// (exit 1). SIGINT/SIGTERM (stop_fd): the same, exit 130.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/bench.hpp"
#include "harness/core/clock.hpp"
#include "harness/scenario/ab_power.hpp"
#include "harness/scenario/server_recipe.hpp"

namespace encbench::scenario {

struct LiveAbOptions {
  std::vector<ArmRecipe> arms;      // [0] Before, [1] After
  int rounds = 3;                   // interleaved rounds (each arm once per round)
  double ready_timeout_s = 600;     // per start, until GET /health or /v1/models answers 200
  double stop_grace_s = 30;         // SIGTERM -> SIGKILL
  std::optional<double> plan_change;  // --plan: relative change to plan rounds for
  judgement::Settings judging;      // threshold, alpha and power of the verdicts
  std::filesystem::path out_dir = "ab";  // ab.json, ab.html, round-<r>-<arm>/ (logs, serving.json)
  int stop_fd = -1;                 // readable => stop (SIGINT/SIGTERM via signalfd)
  // Called when the round's server is ready, right before warm-ups and the measured run (pgid 0
  // for a URL arm). Tests use it to end a server or interrupt the run at a known point.
  std::function<void(const std::string& arm, int round, pid_t pgid)> on_ready;
  // Called after the measured run while the round's server still runs (`bench sweep serve
  // --after-bench-cmd`); what it returns is kept as the round's server record "after_bench".
  std::function<nlohmann::json(const std::string& arm, int round, const std::string& base_url,
                                const std::filesystem::path& round_dir)>
      after_measured;
  std::string progress_tag = "[ab]";  // prefix of the progress lines
};

// A round that could not finish (the message names the arm and the round), and one stopped by
// SIGINT/SIGTERM.
class RoundFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class RoundInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LiveAbRun {
  nlohmann::json result;                // schema encbench-live-ab / 1
  std::filesystem::path json_path, html_path;  // html_path empty when no comparison was possible
  std::string failure;                  // "" = every round finished
  bool interrupted = false;
  bool no_verdict = false;              // a round failed requests or the client fell behind
  int exit_code() const { return interrupted ? 130 : failure.empty() && !no_verdict ? 0 : 1; }
};

// One arm of one round, as it finished.
struct LiveArmRound {
  int round = 0;
  int position = 0;            // 0: ran first in its round
  nlohmann::json serving;      // vLLM's result keys, per-request arrays included
  nlohmann::json server;       // how the server was started, readied, stopped (times in ms)
  std::string block;           // vLLM's printed block
  std::vector<std::string> invalid;  // guard failures (failed requests, client lag, the server's own)
  nlohmann::json server_side;  // an in-process server's round_record() (null for other arms)
};

// The rounds as they finished: by_arm[a] holds arm a's rounds (possibly none); run carries
// failure / interrupted.
struct LiveAbRounds {
  std::vector<std::vector<LiveArmRound>> by_arm;
  LiveAbRun run;
};

// One arm's round on a freshly started server: its directory options.out_dir/round-<r>-<arm>
// (logs, serving.json), start, readiness, warm-ups, the measured run, after_measured, stop. The
// server record holds ready_ms (start to ready) and first_token_ms (start to the first token it
// served). Throws RoundFailure / RoundInterrupted; every server it started is stopped either way.
LiveArmRound run_arm_round(const client::BenchConfig& base, const ArmRecipe& arm, int round, int position,
                           const LiveAbOptions& options, std::ostream& progress);

void validate(const LiveAbOptions& options);  // throws InvalidInput naming the flag

// The interleaved rounds alone (no report): `encbench run --clock real` adds its own sections.
LiveAbRounds run_live_ab_rounds(const client::BenchConfig& base, const LiveAbOptions& options, std::ostream& progress);

// `base` is the bench serve configuration of every round (its target is replaced per arm):
// run_live_ab_rounds, then report_live_ab.
LiveAbRun run_live_ab(const client::BenchConfig& base, const LiveAbOptions& options,
                      const std::vector<std::string>& argv, std::ostream& out, std::ostream& progress);

// The reporting half (live_ab_report.cpp): per-round values, the pooled comparison, verdict,
// MDE, plan on `out`; JSON and HTML written into options.out_dir. by_arm[a]: arm a's finished
// rounds (possibly none). `run` carries failure / interrupted in and the paths out.
LiveAbRun report_live_ab(const LiveAbOptions& options, const std::vector<std::vector<LiveArmRound>>& by_arm,
                         LiveAbRun run, const std::vector<std::string>& argv, std::ostream& out, std::ostream& progress);

}  // namespace encbench::scenario
