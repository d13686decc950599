#pragma once
// Reading result files of every kind into one plain shape the comparison, the gate, the history
// and the HTML report all work from. Reading only: no statistics decisions are made here.
//
// Kinds (detected by keys, see docs/reports.md):
//   serving  vllm bench serve --save-result JSON, or encbench's "encbench-serve-bench"
//   encode   "schema":"encbench-encode"
//   ab       "schema":"encbench-ab" (two encode-shaped results "a" and "b")
//   gbench   Google Benchmark JSON (context + benchmarks[])
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::reports {

// preset_ab: `encbench run` (encbench-preset-ab/1): one serving run per encoder preset ("arm")
// plus the server's encoder counters; metric names carry the arm ("a.mean_ttft_ms", "b.idle_pct").
enum class ResultKind { serving, encode, ab, gbench, preset_ab };
std::string to_string(ResultKind kind);

// Which way is better. `none`: informational (counts, configuration echoes).
enum class Better { lower, higher, none };
std::string to_string(Better better);

// Metric groups, in table order. Throughput and latency are what the default gate watches.
enum class MetricGroup { throughput, latency, device, exact, info };
std::string to_string(MetricGroup group);
std::string group_title(MetricGroup group);  // "Throughput", "Latency", ...

// How a metric's value is derived from its samples, so that merged runs recompute it exactly
// like the tool that produced it (numpy conventions).
enum class Statistic { point, mean, median, percentile };

struct Metric {
  std::string name;    // stable key: vllm's JSON key where one exists ("mean_ttft_ms")
  std::string label;   // the seeds' row label ("Mean TTFT (ms)")
  std::string unit;    // "ms", "req/s", "ns", "" ...
  MetricGroup group = MetricGroup::info;
  Better better = Better::none;
  double value = 0;    // as reported by the producing tool
  // Independent observations the value summarises: per-request values (TTFTs, ITLs, ...),
  // per-forward times, Google Benchmark repetitions, or one value per merged run. Empty when the
  // result carries none (a single-run throughput).
  std::vector<double> samples;
  std::string sample_kind;             // "requests", "itl chunks", "forwards", "repetitions", "runs"
  Statistic statistic = Statistic::point;
  double percentile_q = 0;             // for Statistic::percentile
  std::optional<std::string> text;     // string-valued metrics (accuracy verdict)
  // After merge_runs pooled the samples of several runs: each run's own value of this metric.
  // Samples of one run share its conditions (machine state, process, code layout), so they are
  // not independent across runs; compare requires a change to clear the spread of these too.
  std::vector<double> run_values;
};

// What must match between two results before they may be compared.
struct Identity {
  std::string model;
  std::string device;
  std::string dataset;
  std::string scenario;  // load / inputs / benchmark executable, canonical text
};

struct RunResult {
  ResultKind kind = ResultKind::serving;
  std::string source;         // path(s) it was read from
  std::string producer;       // "vllm", "encbench", "google-benchmark"
  Identity identity;
  std::string git_sha;        // from the envelope when present
  std::string created_utc;
  nlohmann::json machine;     // envelope "machine" or Google Benchmark "context" (subset)
  std::vector<Metric> metrics;
  std::vector<std::string> notes;  // non-fatal observations (e.g. toggles differ)
  std::size_t run_count = 1;       // > 1 after merge_runs
  nlohmann::json raw;              // the document, for the HTML report (detailed lists, timeline)

  const Metric* find(const std::string& name) const;
};

// Deterministic metrics: instruction counts (Valgrind), virtual-clock times of the sim device and
// the allocator's device-memory figures. Their names contain "instructions", "virtual",
// "device_memory" or "bytes_allocated"; compare judges them by threshold alone (no U
// test, which needs a spread they do not have). (tables.hpp's is_deterministic_metric, for
// display, also counts exact-checked values such as syncs and byte counts.)
bool deterministic_by_name(const std::string& name);

// Kind detection by keys; throws InvalidInput naming the file and what is missing.
ResultKind detect_kind(const nlohmann::json& doc, const std::string& source);

// Parses one document / file. Throws InvalidInput on anything it cannot interpret.
RunResult parse_result(const nlohmann::json& doc, const std::string& source);
RunResult load_result(const std::filesystem::path& path);

// A path may be a file, a directory (every *.json / *.json.gz inside, sorted), or a
// comma-separated list of those. Several runs of one kind are merged into one RunResult.
std::vector<std::filesystem::path> expand_inputs(const std::string& spec);
RunResult load_results_merged(const std::string& spec);

// Merges repeated runs of one configuration (refuses mismatches like compare does): per-request
// samples are concatenated and their statistic recomputed; single-value metrics become one
// sample per run and their value the median of the runs.
RunResult merge_runs(const std::vector<RunResult>& runs);

// Throws InvalidInput with the reason when two results must not be compared.
void require_comparable(const RunResult& base, const RunResult& next);

// Per-request samples in ms of a serving result's detailed lists, successful requests only
// (vllm's semantics): keys ttft, tpot (needs output_lens), itl (chunks), e2el, client_queue_time.
std::map<std::string, std::vector<double>> per_request_samples_ms(const nlohmann::json& doc,
                                                                  const std::string& source);

// The seeds' label of a vLLM serving key ("mean_ttft_ms" -> "Mean TTFT (ms)") for the keys a
// published table carries; nullptr for others.
const char* serving_metric_label(const std::string& key);
// Those keys in the seeds' table order (throughput, duration, tokens, TTFT, TPOT, ITL).
std::vector<std::string> published_metric_keys();

// The value of `metric` recomputed from samples with numpy conventions.
double statistic_of(const Metric& metric, const std::vector<double>& samples);

}  // namespace encbench::reports
