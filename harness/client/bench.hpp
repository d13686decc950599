#pragma once
// `encbench bench serve` as a library: configuration (plain data, validated once) ->
// run_benchmark -> BenchResult (records + metrics) -> printers / JSON. The CLI only fills
// BenchConfig; preset A/B scenario runners and profilers reuse the same pieces.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/client/dataset.hpp"
#include "harness/client/send_loop.hpp"
#include "harness/client/vision_metrics.hpp"
#include "harness/client/metrics.hpp"
#include "harness/client/probe.hpp"
#include "harness/client/records.hpp"
#include "harness/client/schedule.hpp"
#include "harness/client/shard.hpp"
#include "harness/core/clock_anchor.hpp"

namespace encbench::client {

// The server could not be reached at all (refused, DNS, timeout): the run never started.
class ServerUnreachable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BenchConfig {
  // ---- target (vllm names)
  Backend backend = Backend::openai;
  std::string backend_name;                   // as given ("vllm" is vllm's alias of openai); "" -> to_string(backend)
  std::string base_url;                       // --base-url; else http://{host}:{port}
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string endpoint = "/v1/completions";
  bool endpoint_given = false;                // openai-chat without --endpoint -> /v1/chat/completions
  std::string model;                          // "" -> first id from GET /v1/models
  std::string served_model_name;
  std::string label;
  std::string tokenizer;                      // --tokenizer: a tokenizer.json, its directory or a cached hub id
  bool skip_tokenizer_init = false;           // --skip-tokenizer-init: no tokenizer (word counts)
  // ---- workload
  DatasetConfig dataset;
  double request_rate = INFINITY;
  double burstiness = 1.0;
  RampUp ramp_up = RampUp::none;              // --ramp-up-strategy (needs --request-rate inf)
  int ramp_up_start_rps = -1, ramp_up_end_rps = -1;  // -1 = not given
  int max_concurrency = 0;                    // 0 = unset
  int max_connections = 0;                    // 0 = from the open-file limit (SendLoopConfig)
  std::uint64_t seed = 0;
  bool ignore_eos = false;
  std::optional<int> logprobs;                // --logprobs (completions payload)
  bool insecure = false;                      // --insecure: no TLS certificate check
  nlohmann::json sampling = nlohmann::json::object();   // the sampling flags actually given
  nlohmann::json extra_body = nlohmann::json::object(); // --extra-body
  std::vector<std::pair<std::string, std::string>> headers;  // --header K=V
  std::string request_id_prefix;              // "" -> bench-<8 hex>-
  RequestMode request_mode = RequestMode::stream;
  double timeout_s = 21600;                   // per request (vllm's aiohttp session: 6 h)
  // Per-request bounds against a misbehaving server (SendLoopConfig says what each does).
  double idle_timeout_s = kDefaultIdleTimeoutS;          // --idle-timeout (0 = none)
  std::int64_t max_response_bytes = kDefaultMaxResponseBytes;  // --max-response-bytes
  std::int64_t max_output_chunks = kDefaultMaxOutputChunks;    // --max-output-chunks
  bool allow_all_failed = false;              // --allow-all-failed: exit 0 even when no request succeeded
  int num_warmups = 0;
  double ready_check_timeout_s = 0;
  bool strict_success = false;                // --strict-success: streams without [DONE] / with error events fail
  double probe_request_rate = 0;              // --probe-request-rate: > 0 sends vLLM's probes (probe.hpp)
  std::vector<std::string> lora_modules;      // --lora-modules: request i's model is one of them (lora.hpp)
  std::string lora_assignment = "random";     // --lora-assignment: random | round-robin
  // ---- metrics and output
  std::vector<std::string> percentile_metrics{"ttft", "tpot", "itl"};
  std::vector<double> metric_percentiles{99};
  std::map<std::string, double> goodput_slo_ms;
  bool save_result = false, save_detailed = false, append_result = false;
  std::string result_dir, result_filename;
  std::vector<std::pair<std::string, std::string>> metadata;  // --metadata K=V
  bool progress = false;                      // bar on stderr (the CLI decides: tty && !--disable-tqdm)
  int stop_fd = -1;
  double drain_timeout_s = 10;
  std::vector<std::string> argv;              // for the result envelope
  // ---- server side
  bool profile = false;          // --profile: POST /start_profile after warmup, /stop_profile after the run
  bool scrape_metrics = false;   // --scrape-metrics: GET /metrics before and after, report the deltas
  // ---- sharded load generation: set when started by mpirun; nullptr = one process.
  Coordinator* coordinator = nullptr;
};

// Checks every value once (throws InvalidInput with the flag's name).
void validate(const BenchConfig& config);
std::string api_url(const BenchConfig& config);
std::string base_url(const BenchConfig& config);

struct BenchResult {
  std::string model_id;                       // resolved model
  std::string server_device;                  // the server's own device when it says (encbench serve)
  std::string api_url;
  std::string date;                           // YYYYmmdd-HHMMSS, local time after the run (as vllm)
  // --ramp-up-strategy: vllm's rps_change_events (rps, local ISO time of the release that passed it)
  std::vector<std::pair<int, std::string>> rps_change_events;
  std::string dataset_layout;
  std::size_t dataset_rows = 0, oversampled = 0, total_image_bytes = 0;
  std::string tokenizer_file;                 // the tokenizer.json used ("" : prompt lengths are words)
  std::string tokenizer_note;                 // how prompts were made and counted: the caller says it once
  std::vector<std::int64_t> text_tokens, vision_tokens;  // per request index (-1: unknown)
  std::vector<std::size_t> image_counts, image_bytes;    // per request index (--plot-dataset-stats)
  std::vector<VisionRequestInfo> vision_requests;        // per request index: images, pixels, body bytes, tokens
  VisionMetrics vision;                                  // beside `metrics`: images, pixels, bytes, vision tokens
  bool ignore_eos = false;
  SendLoopResult run;
  std::vector<RequestRecord> probe_records;   // --probe-request-rate: every probe, in send order
  ServingMetrics metrics;
  Nanos prepare_ns = 0;                       // dataset + request building (outside the timed run)
  std::int64_t client_peak_rss_kib = 0;       // this process's peak RSS after the run (getrusage)
  // --profile: the server's /stop_profile JSON (encbench servers: the encoder summary); null when
  // profiling was off or failed; profile_message says why ("server does not support profiling").
  nlohmann::json server_profile;
  std::string profile_message;
  // This process's clocks read right after /stop_profile answered: with the server's own anchor
  // in server_profile.engine_timeline.clock, it maps the server's times onto run.records'
  // (harness/client/server_timeline.hpp).
  ClockAnchor profile_clock;
  // --scrape-metrics: Prometheus samples (name{labels} -> after - before); null when off.
  nlohmann::json server_metrics_delta;
  std::string metrics_message;
  // Sharded runs: false on ranks other than 0 (they print and write nothing). `sharding` holds
  // the ranks, hosts, per-rank dispatch lag / CPU and clock offsets (null for one process).
  bool root = true;
  nlohmann::json sharding;
};

// POST {base}{path} with an empty JSON body; returns (HTTP status, body). Status 0: unreachable.
std::pair<long, std::string> post_empty(const std::string& url, double timeout_s = 30);
// GET url; returns (HTTP status, body). Status 0: unreachable (body: curl's reason).
std::pair<long, std::string> get_url(const std::string& url, double timeout_s = 30);
// GET {base}/metrics; parses "name{labels} value" lines (comments skipped) into a flat map.
std::map<std::string, double> parse_prometheus_text(const std::string& text);
// The "Encoder device (server side)" and "Server metrics" sections (when present).
void print_server_sections(std::ostream& out, const BenchResult& result);

// Python's str(float) for the values vLLM prints or puts in file names and JSON ("inf", "10.0",
// "2.5", "0.1234567": the shortest repr that round-trips).
std::string python_float(double v);

// GET {base}/v1/models with the given header lines -> (data[0].id, data[0].root) as vllm's
// get_first_model_from_server: the id is sent as "model", the root is the result's model_id
// (root falls back to the id when the server has none). Throws ServerUnreachable or InvalidInput.
// `server_device`, when given, receives data[0].encbench_device (what an encbench server runs on;
// "" from other servers).
std::pair<std::string, std::string> first_model_id_and_root(const std::string& base_url,
                                                            const std::vector<std::string>& headers,
                                                            double timeout_s = 30, std::string* server_device = nullptr);
// The id alone, with only the OPENAI_API_KEY header (kept for existing callers).
std::string first_model_from_server(const std::string& base_url, double timeout_s = 30);
// Opens (and closes) one TCP connection to the URL's host; throws ServerUnreachable on failure.
void check_reachable(const std::string& url, double timeout_s = 10);

// Everything a run needs before its first request: the dataset read and tokenized, the model
// asked of the server (or the server's port checked), the requests built and the schedule drawn.
// Sharded, every rank has agreed on it. Plain data: a caller may print its header between the two.
struct PreparedBenchmark {
  BenchResult result;                   // the run's fields known before sending (model id, dataset)
  std::string model_name;               // sent as "model" ("" = result.model_id)
  std::vector<PreparedRequest> requests;
  std::vector<Nanos> offsets;           // each request's send time from the run's start
  std::vector<double> ramp_rates;       // --ramp-up-strategy: the rate at each send
  PreparedRequest probe;                // --probe-request-rate's request
};

// Throws InvalidInput for the user's errors (a missing dataset file) and ServerUnreachable when
// nothing answers at the server's address; nothing is sent in either case.
PreparedBenchmark prepare_benchmark(const BenchConfig& config);
// Sends the prepared requests (ready check and warm-ups first) and measures them.
BenchResult run_prepared_benchmark(const BenchConfig& config, PreparedBenchmark prepared);
// prepare_benchmark, then run_prepared_benchmark.
BenchResult run_benchmark(const BenchConfig& config);

// vllm's "Serving Benchmark Result" block, byte-for-byte the same layout.
void print_vllm_block(std::ostream& out, const BenchConfig& config, const BenchResult& result);
// Our own section (schedule-relative latency, dispatch lag, client cost), printed after it.
void print_client_block(std::ostream& out, const BenchConfig& config, const BenchResult& result);
// The first errors, as vllm prints them before the block (capped at 10).
void print_errors(std::ostream& out, const BenchResult& result);

// vllm's result dict (same keys and order) + our keys + the encbench envelope (schema
// "encbench-serve-bench"/1). Detailed per-request arrays only with save_detailed.
nlohmann::json to_vllm_json(const BenchConfig& config, const BenchResult& result);
// vllm's compute_result_filename: {label|backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json
std::string result_filename(const BenchConfig& config, const BenchResult& result);
// vLLM's Path(file_name).with_suffix(suffix) for the plots beside the result: the result file's
// path (under --result-dir) with its last extension replaced, e.g. ".timeline.html".
std::filesystem::path result_sibling_path(const BenchConfig& config, const BenchResult& result, const std::string& suffix);
// Writes the JSON where --result-dir/--result-filename say; returns the path.
std::string save_result(const BenchConfig& config, const BenchResult& result);

}  // namespace encbench::client
