#include "harness/core/text_escape.hpp"
#include "harness/client/bench.hpp"
#include "harness/client/lora.hpp"
#include "harness/client/datasets_tokens.hpp"

#include <curl/curl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <bit>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "harness/client/request_builder.hpp"
#include "harness/client/schedule.hpp"
#include "harness/core/error.hpp"
#include "harness/core/number_format.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/core/version.hpp"

namespace encbench::client {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// This process's peak resident set so far (getrusage's ru_maxrss; Linux counts KiB).
std::int64_t process_peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss);
}

}  // namespace

namespace {
// snprintf into a string of the needed size: long labels and paths are never cut.
template <typename... Args>
std::string sformat(const char* fmt, Args... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return {};
  std::string out(static_cast<std::size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

}  // namespace

std::string base_url(const BenchConfig& c) {
  std::string base = !c.base_url.empty() ? c.base_url : "http://" + c.host + ":" + std::to_string(c.port);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

std::string api_url(const BenchConfig& c) {
  std::string endpoint = c.endpoint;
  if (c.backend == Backend::openai_chat && !c.endpoint_given) endpoint = "/v1/chat/completions";
  if (!endpoint.empty() && endpoint.front() != '/') endpoint.insert(endpoint.begin(), '/');
  return base_url(c) + endpoint;
}

void validate(const BenchConfig& c) {
  require(!std::isnan(c.request_rate) && c.request_rate > 0, "--request-rate must be > 0 or inf");
  require(!std::isnan(c.burstiness) && c.burstiness > 0, "--burstiness must be > 0");
  require(c.max_concurrency >= 0, "--max-concurrency must be >= 1 (or unset)");
  require(c.num_warmups >= 0, "--num-warmups must be >= 0");
  require(c.ready_check_timeout_s >= 0, "--ready-check-timeout-sec must be >= 0");
  require(c.timeout_s >= 0, "--timeout must be >= 0");
  require(c.idle_timeout_s >= 0, "--idle-timeout must be >= 0 (0 = none)");
  require(c.max_response_bytes >= 1, "--max-response-bytes must be >= 1");
  require(c.max_output_chunks >= 1, "--max-output-chunks must be >= 1");
  require(c.port > 0 && c.port < 65536, "--port must be in 1..65535");
  require(c.dataset.num_prompts > 0, "--num-prompts must be > 0");
  for (double p : c.metric_percentiles) require(p >= 0 && p <= 100, "--metric-percentiles values must be in [0, 100]");
  const auto& known = known_percentile_metrics();
  for (const auto& m : c.percentile_metrics)
    require(std::find(known.begin(), known.end(), m) != known.end(),
            "--percentile-metrics: unknown metric '" + m + "' (ttft, tpot, itl, e2el, client_queue_time, e2el_including_client_queue)");
  for (const auto& [k, v] : c.goodput_slo_ms) {
    require(k == "ttft" || k == "tpot" || k == "e2el", "--goodput: invalid metric name '" + k + "' (ttft, tpot, e2el)");
    require(v >= 0, "--goodput: the SLO for " + k + " must be >= 0 ms");
  }
  const std::string url = api_url(c);
  require(url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0, "--base-url must start with http:// or https://");
  if (c.backend == Backend::openai_chat)
    require(url.size() >= 16 && url.substr(url.size() - 16) == "chat/completions",
            "--backend openai-chat needs an endpoint ending in chat/completions (got " + url + ")");
  else
    require(url.size() >= 11 && url.substr(url.size() - 11) == "completions",
            "--backend openai needs an endpoint ending in completions (got " + url + ")");
  require(c.extra_body.is_object(), "--extra-body must be a JSON object");
  if (c.ramp_up != RampUp::none) {
    // vllm main_async's checks, in its order and words.
    require(std::isinf(c.request_rate),
            "When using ramp-up, do not specify --request-rate. The request rate will be controlled by ramp-up "
            "parameters. Please remove the --request-rate argument.");
    require(c.ramp_up_start_rps != -1 && c.ramp_up_end_rps != -1,
            "When using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must be specified");
    require(c.ramp_up_start_rps >= 0 && c.ramp_up_end_rps >= 0, "Ramp-up start and end RPS must be non-negative");
    require(c.ramp_up_start_rps <= c.ramp_up_end_rps, "Ramp-up start RPS must be less than end RPS");
    require(!(c.ramp_up == RampUp::exponential && c.ramp_up_start_rps == 0),
            "For exponential ramp-up, the start RPS cannot be 0.");
  }
}

namespace {

size_t collect(char* data, size_t size, size_t count, void* userp) {
  static_cast<std::string*>(userp)->append(data, size * count);
  return size * count;
}

std::string local_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Python's datetime.isoformat() in local time: YYYY-mm-ddTHH:MM:SS[.ffffff].
std::string iso_local(std::chrono::system_clock::time_point tp) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count();
  const std::time_t t = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[48];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (const long frac = static_cast<long>(us % 1'000'000); frac != 0) {
    char f[16];
    std::snprintf(f, sizeof f, ".%06ld", frac);
    out += f;
  }
  return out;
}


std::string random_prefix() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return std::string("bench-") + buf + "-";
}

std::vector<std::string> header_lines(const BenchConfig& c) {
  std::vector<std::string> lines;
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key) lines.push_back(std::string("Authorization: Bearer ") + key);
  for (const auto& [k, v] : c.headers) lines.push_back(k + ": " + v);
  return lines;
}

}  // namespace

std::string python_float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::floor(v) == v && std::fabs(v) < 1e16) return numbers::fixed(v, 1);
  return percentile_label(v);
}

std::string first_model_from_server(const std::string& base, double timeout_s) {
  std::vector<std::string> headers;
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key) headers.push_back(std::string("Authorization: Bearer ") + key);
  return first_model_id_and_root(base, headers, timeout_s).first;
}

std::pair<std::string, std::string> first_model_id_and_root(const std::string& base, const std::vector<std::string>& extra_headers,
                                                            double timeout_s, std::string* server_device) {
  global_curl_init();
  const std::string url = base + "/v1/models";
  std::unique_ptr<CURL, void (*)(CURL*)> easy(curl_easy_init(), curl_easy_cleanup);
  std::string body;
  char err[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  for (const auto& line : extra_headers) headers = curl_slist_append(headers, line.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(easy.get(), CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(easy.get());
  curl_slist_free_all(headers);
  if (rc != CURLE_OK)
    throw ServerUnreachable("cannot reach " + url + ": " + curl_easy_strerror(rc) + (err[0] ? std::string(" (") + err + ")" : "") +
                            "; is the server running? (or pass --model to skip the model lookup)");
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (status != 200 || doc.is_discarded() || !doc.contains("data") || !doc["data"].is_array() || doc["data"].empty() ||
      !doc["data"][0].contains("id"))
    throw InvalidInput("GET " + url + " returned HTTP " + std::to_string(status) + " without a model list; pass --model");
  const auto& first = doc["data"][0];
  require(first["id"].is_string(), "GET " + url + ": data[0].id is not a string");
  const std::string id = first["id"].get<std::string>();
  const std::string root = first.contains("root") && first["root"].is_string() ? first["root"].get<std::string>() : id;
  if (server_device && first.contains("encbench_device") && first["encbench_device"].is_string())
    *server_device = first["encbench_device"].get<std::string>();
  return {id, root};
}

namespace {

std::pair<long, std::string> http_call(const std::string& url, bool post, double timeout_s) {
  global_curl_init();
  std::unique_ptr<CURL, void (*)(CURL*)> easy(curl_easy_init(), curl_easy_cleanup);
  std::string body;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(easy.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(easy.get(), CURLOPT_HTTPHEADER, headers);
  if (post) curl_easy_setopt(easy.get(), CURLOPT_POSTFIELDS, "{}");
  const CURLcode rc = curl_easy_perform(easy.get());
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) return {0, curl_easy_strerror(rc)};
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  return {status, body};
}

// Short message from an error body (OpenAI error object or plain text).
std::string error_text(const std::string& body) {
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_discarded() && doc.contains("error")) {
    const auto& e = doc["error"];
    if (e.is_object() && e.contains("message")) return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace

std::pair<long, std::string> post_empty(const std::string& url, double timeout_s) {
  return http_call(url, true, timeout_s);
}

std::pair<long, std::string> get_url(const std::string& url, double timeout_s) { return http_call(url, false, timeout_s); }

std::map<std::string, double> parse_prometheus_text(const std::string& text) {
  std::map<std::string, double> samples;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // The value follows the last space outside the label set.
    const auto close = line.rfind('}');
    const auto space = line.find(' ', close == std::string::npos ? 0 : close);
    if (space == std::string::npos) continue;
    const std::string name = line.substr(0, space);
    std::istringstream value_in(line.substr(space + 1));
    double value = 0;
    if (value_in >> value) samples[name] = value;
  }
  return samples;
}

void check_reachable(const std::string& url, double timeout_s) {
  global_curl_init();
  std::unique_ptr<CURL, void (*)(CURL*)> easy(curl_easy_init(), curl_easy_cleanup);
  char err[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(easy.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, err);
  const CURLcode rc = curl_easy_perform(easy.get());
  if (rc != CURLE_OK)
    throw ServerUnreachable("cannot reach " + url + ": " + curl_easy_strerror(rc) + (err[0] ? std::string(" (") + err + ")" : ""));
}

namespace {

BenchResult run_prepared(const BenchConfig& config, Coordinator* co, BenchResult result,
                         const std::vector<PreparedRequest>& all_requests, const std::vector<Nanos>& all_offsets,
                         const std::vector<double>& ramp_rates, const PreparedRequest& probe);

// Dataset, model, prebuilt requests and the global schedule (every rank builds all of it).
void prepare_run(const BenchConfig& config, int ranks, const std::string& prefix, BenchResult& result, std::string& model_name,
                 std::vector<PreparedRequest>& requests, std::vector<Nanos>& offsets, std::vector<double>& ramp_rates,
                 PreparedRequest& probe) {
  // A --max-connections the open-file limit cannot hold is refused before any dataset or server work.
  resolve_connection_limit(config.max_connections);
  // The cap is split across ranks; a rank with a share of 0 would run uncapped.
  require(config.max_concurrency == 0 || config.max_concurrency >= ranks,
          "--max-concurrency " + std::to_string(config.max_concurrency) + " is split across the " + std::to_string(ranks) +
              " MPI ranks: give at least one slot per rank");
  // Dataset first: a bad file is the user's error (exit 2) whether or not a server is up.
  // Tokenized here, before the run (harness/client/datasets_tokens.hpp); the note is the caller's
  // to say, once per process however many runs it makes (a sweep's points, an A/B's rounds).
  TokenizedDataset loaded = load_tokenized_dataset(config.dataset, config.tokenizer, config.model, config.skip_tokenizer_init);
  Dataset& dataset = loaded.dataset;
  const DatasetTokens& tokens = loaded.tokens;
  result.tokenizer_note = tokens.note;
  result.tokenizer_file = tokens.tokenizer_file;
  result.dataset_layout = dataset.layout;
  result.dataset_rows = dataset.source_rows;
  result.oversampled = dataset.oversampled;
  require(!(dataset.multimodal && config.backend == Backend::openai),
          "dataset '" + dataset.layout + "' is multimodal: use --backend openai-chat --endpoint /v1/chat/completions");
  model_name = config.served_model_name;
  if (config.model.empty()) {
    // vllm: model_name = data[0].id (sent), model_id = data[0].root (reported), --header applied.
    auto [id, root] = first_model_id_and_root(base_url(config), header_lines(config), 30, &result.server_device);
    model_name = id;
    result.model_id = root;
  } else {
    result.model_id = config.model;
    check_reachable(result.api_url);
  }
  RequestOptions options;
  options.backend = config.backend;
  options.mode = config.request_mode;
  options.model = model_name.empty() ? result.model_id : model_name;
  options.ignore_eos = config.ignore_eos || dataset.ignore_eos_default;
  options.logprobs = config.logprobs;
  result.ignore_eos = options.ignore_eos;
  options.extra_body = config.sampling;
  for (const auto& [k, v] : config.extra_body.items()) options.extra_body[k] = v;
  options.headers = header_lines(config);
  options.request_id_prefix = prefix;
  probe = make_probe_request(options);
  if (!config.lora_modules.empty())
    options.model_per_request = assign_lora_modules(config.lora_modules, config.lora_assignment, dataset.samples.size(), config.seed);
  requests = prepare_requests(dataset.samples, options);
  for (const auto& r : requests) {
    result.total_image_bytes += r.image_bytes;
    result.text_tokens.push_back(r.text_tokens);
    result.vision_tokens.push_back(r.vision_tokens);
    result.image_counts.push_back(r.image_count);
    result.image_bytes.push_back(r.image_bytes);
    result.vision_requests.push_back({r.image_count, r.image_pixels, r.body.size(), r.text_tokens, r.vision_tokens});
  }
  // timed_trace (self-timed): the trace's timestamps are the schedule (datasets_vllm.hpp).
  if (!dataset.arrival_s.empty() && config.dataset.vllm_text.self_timed) {
    offsets = to_offsets_ns(dataset.arrival_s);
    return;
  }
  offsets = config.ramp_up == RampUp::none
                ? arrival_offsets_ns(requests.size(), config.request_rate, config.burstiness, config.seed,
                                     dataset.numpy_global_draws)
                : to_offsets_ns(ramp_up_offsets_s(requests.size(), config.ramp_up, config.ramp_up_start_rps,
                                                  config.ramp_up_end_rps, config.burstiness, config.seed, &ramp_rates,
                                                  dataset.numpy_global_draws));
}

// What every rank of a sharded run must agree on before anything is sent: "key=value" lines,
// the most telling first (first_disagreement reports the first line that differs).
std::string fingerprint(const BenchConfig& c, const std::string& model, const std::vector<PreparedRequest>& requests,
                        const std::vector<Nanos>& offsets) {
  std::uint64_t data = 0xcbf29ce484222325ULL, sched = data;
  for (const auto& r : requests) {
    data = fnv1a64(r.body, data);
    for (const auto& h : r.headers) data = fnv1a64(h, data);
  }
  for (Nanos o : offsets) sched = fnv1a64(std::to_string(o), sched);
  std::ostringstream f;
  f << "prepared=ok\n"
    << "encbench=" << kVersion << " " << kGitSha << " " << sizeof(void*) * 8 << "-bit"
    << (std::endian::native == std::endian::little ? " little-endian" : " big-endian") << "\n"
    << "--seed=" << c.seed << "\n--num-prompts=" << requests.size() << "\n--request-rate=" << python_float(c.request_rate)
    << "\n--burstiness=" << python_float(c.burstiness) << "\n--dataset-name=" << c.dataset.name
    << "\nmodel=" << model << "\n"
    << "dataset digest (request bodies, FNV-1a)=" << sformat("%016llx", static_cast<unsigned long long>(data)) << "\n"
    << "schedule digest=" << sformat("%016llx", static_cast<unsigned long long>(sched)) << "\n";
  // The arguments themselves, after the program path (which may differ between hosts).
  for (std::size_t i = 1; i < c.argv.size(); ++i)
    f << "argument " << i << (i > 1 ? " (after " + c.argv[i - 1] + ")" : std::string()) << "=" << c.argv[i] << "\n";
  return f.str();
}

}  // namespace

PreparedBenchmark prepare_benchmark(const BenchConfig& config) {
  validate(config);
  Coordinator* const co = config.coordinator;
  PreparedBenchmark p;
  p.result.api_url = api_url(config);
  const Nanos prep_start = now_ns();
  // Sharded: everything up to the agreement may fail on one rank only (a missing dataset file on
  // one host, an unreachable server); the failure becomes that rank's fingerprint, so every rank
  // stops together with the reason instead of waiting for a rank that left.
  std::exception_ptr local_error;
  const std::string prefix = !config.request_id_prefix.empty() ? config.request_id_prefix
                             : co ? co->broadcast(random_prefix(), 300)  // one prefix: ids stay unique across ranks
                                  : random_prefix();
  try {
    prepare_run(config, co ? co->size() : 1, prefix, p.result, p.model_name, p.requests, p.offsets, p.ramp_rates,
                p.probe);
  } catch (...) {
    if (!co) throw;
    local_error = std::current_exception();
  }
  p.result.prepare_ns = now_ns() - prep_start;
  if (co) {
    std::string mine;
    if (local_error) {
      try {
        std::rethrow_exception(local_error);
      } catch (const std::exception& e) {
        mine = std::string("prepared=failed on ") + co->host() + ": " + e.what() + "\n";
      }
    } else {
      mine = fingerprint(config, p.model_name.empty() ? p.result.model_id : p.model_name, p.requests, p.offsets);
    }
    // Preparing a large image dataset can take minutes on a slow host: generous bounds.
    const auto all = co->gather(mine, 3600);
    const std::string verdict = co->broadcast(co->rank() == 0 ? first_disagreement(all) : std::string(), 3600);
    // Every rank stops. The same failure everywhere (same bad flag on all ranks) is printed by
    // rank 0 alone; a failure that differs is printed by the rank that had it.
    if (local_error && co->rank() != 0 && verdict.empty()) throw PeerStopped("same error as rank 0");
    if (local_error) std::rethrow_exception(local_error);
    if (!verdict.empty()) {
      if (co->rank() != 0) throw PeerStopped(verdict);
      throw InvalidInput("the " + std::to_string(co->size()) + " ranks disagree, nothing was sent: " + verdict);
    }
  }
  return p;
}

BenchResult run_prepared_benchmark(const BenchConfig& config, PreparedBenchmark prepared) {
  Coordinator* const co = config.coordinator;
  try {
    return run_prepared(config, co, std::move(prepared.result), prepared.requests, prepared.offsets,
                        prepared.ramp_rates, prepared.probe);
  } catch (const std::exception& e) {
    if (co) co->fail(e.what());  // the others may be waiting in a collective: stop the group
    throw;
  }
}

BenchResult run_benchmark(const BenchConfig& config) {
  return run_prepared_benchmark(config, prepare_benchmark(config));
}

namespace {

// The send loop's settings from the flags; a sharded run splits the concurrency cap across ranks.
SendLoopConfig engine_config(const BenchConfig& config, Coordinator* co, const std::string& url, ConnectionShare& connections) {
  SendLoopConfig engine;
  engine.connections = &connections;
  engine.url = url;
  engine.backend = config.backend;
  engine.mode = config.request_mode;
  engine.max_concurrency = config.max_concurrency;
  engine.max_connections = config.max_connections;
  engine.timeout_s = config.timeout_s;
  engine.idle_timeout_s = config.idle_timeout_s;
  engine.max_response_bytes = config.max_response_bytes;
  engine.max_output_chunks = config.max_output_chunks;
  engine.stop_fd = config.stop_fd;
  engine.drain_timeout_s = config.drain_timeout_s;
  engine.strict_success = config.strict_success;
  engine.insecure = config.insecure;
  if (co && config.max_concurrency > 0) {
    // The global cap split across ranks (no borrowing between them): rank r gets
    // floor(cap / size) plus one of the remainder.
    engine.max_concurrency = config.max_concurrency / co->size() + (co->rank() < config.max_concurrency % co->size() ? 1 : 0);
  }
  return engine;
}

// vllm's ready check (the first sampled request, every 5 s, until it succeeds: wait_for_endpoint)
// and warmups (copies of it, concurrently, capped like the run, discarded).
void ready_check_and_warmups(const BenchConfig& config, const SendLoopConfig& engine, const PreparedRequest& first) {
  // vllm's ready check and warmups send the first sample without a request id (its test_input
  // has none), so they never reuse the measured request 0's x-request-id.
  PreparedRequest test_request = first;
  std::erase_if(test_request.headers, [](const std::string& h) { return h.rfind("x-request-id:", 0) == 0; });
  if (config.ready_check_timeout_s > 0) {
    const Nanos deadline = now_ns() + static_cast<Nanos>(config.ready_check_timeout_s * 1e9);
    std::string last_error;
    for (;;) {
      auto probe = run_requests(engine, {test_request}, {0});
      if (probe.records.front().success) break;
      last_error = probe.records.front().error;
      if (now_ns() + 5'000'000'000LL > deadline)
        throw ServerUnreachable("Initial test run failed within --ready-check-timeout-sec " +
                                python_float(config.ready_check_timeout_s) + " s: " + last_error);
      std::this_thread::sleep_for(std::chrono::seconds(5));
    }
  }
  if (config.num_warmups > 0) {
    std::vector<PreparedRequest> warm(static_cast<std::size_t>(config.num_warmups), test_request);
    run_requests(engine, warm, std::vector<Nanos>(warm.size(), 0));
  }
}

// What the server-side windows (/metrics scrape, profiler) saw when they opened.
struct ServerWindows {
  std::map<std::string, double> metrics_before;
  bool metrics_ok = false;
  bool profiling = false;
};

// Opened after the warmups, so they cover exactly the measured requests.
ServerWindows open_server_windows(const BenchConfig& config, const std::string& base, BenchResult& result) {
  ServerWindows w;
  if (config.scrape_metrics) {
    const auto [status, body] = http_call(base + "/metrics", false, 30);
    if (status == 200) {
      w.metrics_before = parse_prometheus_text(body);
      w.metrics_ok = true;
    } else {
      result.metrics_message = "server metrics unavailable: GET /metrics answered " +
                               (status == 0 ? body : "HTTP " + std::to_string(status));
    }
  }
  if (config.profile) {
    const auto [status, body] = post_empty(base + "/start_profile");
    if (status == 200) {
      w.profiling = true;
    } else if (status == 404) {
      result.profile_message = "server does not support profiling (POST /start_profile answered 404); continuing without it";
    } else {
      result.profile_message = "POST /start_profile failed (" + (status == 0 ? body : "HTTP " + std::to_string(status) + ": " + error_text(body)) +
                               "); continuing without profiling";
    }
  }
  return w;
}

// Stops the profiler (its reply is the server's profile) and stores the /metrics differences.
void close_server_windows(const ServerWindows& w, const std::string& base, BenchResult& result) {
  if (w.profiling) {
    const auto [status, body] = post_empty(base + "/stop_profile", 120);
    result.profile_clock = clock_anchor_now();
    const auto doc = nlohmann::json::parse(body, nullptr, false);
    if (status == 200) {
      result.server_profile = doc.is_discarded() ? nlohmann::json{{"raw", body}} : doc;
    } else {
      result.profile_message = "POST /stop_profile failed (" + (status == 0 ? body : "HTTP " + std::to_string(status) + ": " + error_text(body)) + ")";
    }
  }
  if (!w.metrics_ok) return;
  const auto [status, body] = http_call(base + "/metrics", false, 30);
  if (status != 200) {
    result.metrics_message = "server metrics unavailable after the run: HTTP " + std::to_string(status);
    return;
  }
  const auto after = parse_prometheus_text(body);
  nlohmann::json delta = nlohmann::json::object();
  for (const auto& [name, value] : after) {
    const auto it = w.metrics_before.find(name);
    const double d = value - (it == w.metrics_before.end() ? 0.0 : it->second);
    if (d != 0) delta[name] = d;
  }
  result.server_metrics_delta = delta;
}

// Every rank's times onto rank 0's clock, then rank 0 gathers the raw records and merges them in
// global index order: the metrics are computed from them exactly as for one process. False on
// ranks other than 0 (they report nothing).
bool gather_shards(const BenchConfig& config, Coordinator& co, const CommonStart& common, const std::vector<Nanos>& all_offsets,
                   BenchResult& result) {
  shift_times(result.run, common.clock_offset_ns);
  const nlohmann::json mine = rank_summary(co.rank(), co.host(), result.run, common);
  const double schedule_s = all_offsets.empty() ? 0 : static_cast<double>(all_offsets.back()) / 1e9;
  const double bound = config.timeout_s > 0 ? schedule_s + config.timeout_s + config.drain_timeout_s + 300 : 0;
  const auto parts = co.gather(encode_shard(result.run, mine), bound);
  if (co.rank() != 0) return false;
  std::vector<SendLoopResult> shards;
  nlohmann::json per_rank = nlohmann::json::array();
  for (const auto& part : parts) {
    auto [run, summary] = decode_shard(part);
    shards.push_back(std::move(run));
    per_rank.push_back(std::move(summary));
  }
  result.run = merge_shards(std::move(shards), common.start_ns);
  std::vector<std::string> hosts;
  for (const auto& r : per_rank) {
    const std::string h = r.value("host", std::string());
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  }
  result.sharding = {{"ranks", co.size()},
                     {"hosts", hosts},
                     {"shard_by", "request-index-round-robin"},
                     {"clock_offset_method", "ping-pong to rank 0 after MPI_Barrier, best of 16 round trips"},
                     {"align_ms", static_cast<double>(common.align_ns) / 1e6},
                     {"per_rank", per_rank}};
  return true;
}

BenchResult run_prepared(const BenchConfig& config, Coordinator* co, BenchResult result,
                         const std::vector<PreparedRequest>& all_requests, const std::vector<Nanos>& all_offsets,
                         const std::vector<double>& ramp_rates, const PreparedRequest& probe) {
  const bool root = co == nullptr || co->rank() == 0;
  result.root = root;
  // This rank's shard (round-robin by global index); one process sends everything.
  std::vector<PreparedRequest> shard_requests;
  std::vector<Nanos> shard_offsets;
  if (co) {
    for (std::size_t i : shard_indices(all_requests.size(), co->rank(), co->size())) {
      shard_requests.push_back(all_requests[i]);
      shard_offsets.push_back(all_offsets[i]);
    }
  }
  const std::vector<PreparedRequest>& requests = co ? shard_requests : all_requests;
  const std::vector<Nanos>& offsets = co ? shard_offsets : all_offsets;

  // One connection cache for the ready check, the warm-ups and the measured run (vLLM's one
  // aiohttp ClientSession): the run reuses the warm-ups' connections.
  ConnectionShare connections;
  SendLoopConfig engine = engine_config(config, co, result.api_url, connections);
  if (root) ready_check_and_warmups(config, engine, all_requests.front());
  const std::string base = base_url(config);
  const ServerWindows windows = root ? open_server_windows(config, base, result) : ServerWindows{};
  engine.progress = config.progress && root;
  CommonStart common;
  if (co) {
    // Rank 0 did the ready check and warmups above: the barrier waits for them.
    const double bound = config.ready_check_timeout_s + (config.num_warmups > 0 ? config.timeout_s : 0) + 300;
    common = co->common_start(0.1, bound);
    engine.start_at_ns = common.start_ns;
  }
  const auto wall_before = std::chrono::system_clock::now();
  const Nanos mono_before = now_ns();
  // vLLM starts its probe task just before the run and stops it once every request returned.
  std::optional<ProbeLoop> probes;
  if (root && config.probe_request_rate > 0) probes.emplace(engine, probe, config.probe_request_rate);
  result.run = run_requests(engine, requests, offsets);
  if (probes) result.probe_records = probes->finish(result.run.interrupted);
  if (co && !gather_shards(config, *co, common, all_offsets, result)) return result;
  result.date = local_date();  // vllm takes it after the run
  result.client_peak_rss_kib = process_peak_rss_kib();
  if (config.ramp_up != RampUp::none) {
    // Stamped with each crossing request's release time (the first: the run start), as vllm's
    // datetime.now().isoformat() at the yield.
    for (const auto& ev : rps_change_events(ramp_rates, config.ramp_up_start_rps)) {
      const auto& rec = result.run.records[ev.request_index];
      const Nanos mono = ev.rps == config.ramp_up_start_rps ? result.run.start_ns : (rec.arrival_ns ? rec.arrival_ns : rec.intended_ns);
      result.rps_change_events.emplace_back(ev.rps, iso_local(wall_before + std::chrono::nanoseconds(mono - mono_before)));
    }
  }
  close_server_windows(windows, base, result);

  MetricsOptions mopts;
  mopts.percentiles = config.metric_percentiles;
  mopts.goodput_slo_ms = config.goodput_slo_ms;
  mopts.finite_rate = std::isfinite(config.request_rate);
  mopts.mode = config.request_mode;
  result.metrics = calculate_metrics(result.run.records, result.run.end_ns - result.run.start_ns, mopts, result.run.start_ns);
  result.vision = calculate_vision_metrics(result.run.records, result.vision_requests, result.metrics.duration_s, mopts.percentiles);
  return result;
}

}  // namespace

// ---------------------------------------------------------------------------------- printing
void print_server_sections(std::ostream& out, const BenchResult& r) {
  auto line = [&](const char* label, const std::string& value) { out << sformat("%-40s %-10s\n", label, value.c_str()); };
  auto num = [](const nlohmann::json& j, const char* key, int digits) {
    if (!j.contains(key) || !j[key].is_number()) return std::string("n/a");
    return sformat("%.*f", digits, j[key].get<double>());
  };
  if (!r.profile_message.empty()) out << r.profile_message << "\n";
  if (r.server_profile.is_object() && r.server_profile.contains("forwards")) {
    const auto& p = r.server_profile;
    out << "------------Encoder device (server side)------------\n";
    line("Encoder forwards:", num(p, "forwards", 0));
    line("Images encoded:", num(p, "images", 0));
    line("Device busy (ms):", num(p, "device_busy_ms", 2));
    line("Device idle (ms):", num(p, "device_idle_ms", 2));
    line("Device idle (%):", num(p, "idle_pct", 2));
    line("Syncs per forward:", num(p, "syncs_per_forward", 2));
    if (p.contains("gap_classes") && p["gap_classes"].is_object())
      for (const auto& [cls, v] : p["gap_classes"].items())
        line(("Idle " + cls + " (ms):").c_str(), num(v, "total_ms", 2));
    line("Forwards dropped (ring full):", num(p, "dropped", 0));
    line("Server trace:", p.value("trace_path", std::string("none")));
    if (p.contains("error")) line("Profile error:", p["error"].get<std::string>());
    out << std::string(50, '=') << "\n";
  }
  if (!r.metrics_message.empty()) out << r.metrics_message << "\n";
  if (r.server_metrics_delta.is_object()) {
    out << "------------Server metrics (after - before)---------\n";
    for (const auto& [name, v] : r.server_metrics_delta.items()) {
      out << sformat("%-60s %s\n", name.c_str(), sformat("%.6g", v.get<double>()).c_str());
    }
    out << std::string(50, '=') << "\n";
  }
}

namespace {

std::string centered(const std::string& s, std::size_t width, char fill) {
  if (s.size() >= width) return s;
  const std::size_t left = (width - s.size()) / 2;
  return std::string(left, fill) + s + std::string(width - s.size() - left, fill);
}
std::string line_int(const std::string& label, long long v) { return sformat("%-40s %-10lld", label.c_str(), v); }
std::string line_f2(const std::string& label, double v) { return sformat("%-40s %-10.2f", label.c_str(), v); }
std::string line_str(const std::string& label, const std::string& v) { return sformat("%-40s %-10s", label.c_str(), v.c_str()); }

struct MetricLabel {
  const char* key;
  const char* name;
  const char* header;
};
constexpr MetricLabel kMetricLabels[] = {
    {"ttft", "TTFT", "Time to First Token"},
    {"tpot", "TPOT", "Time per Output Token (excl. 1st token)"},
    {"itl", "ITL", "Inter-token Latency"},
    {"e2el", "E2EL", "End-to-end Latency"},
    {"client_queue_time", "Client Queue Time", "Client Queue Time"},
    {"e2el_including_client_queue", "E2EL incl. Client Queue", "E2EL incl. Client Queue"},
};

bool selected(const BenchConfig& c, const std::string& key) {
  if (std::find(c.percentile_metrics.begin(), c.percentile_metrics.end(), key) == c.percentile_metrics.end()) return false;
  // vLLM without a tokenizer (--skip-tokenizer-init) reports only E2EL and the client queue.
  if (c.skip_tokenizer_init && (key == "ttft" || key == "tpot" || key == "itl")) return false;
  // vllm: the client-queue sections only exist with --max-concurrency; incl.-queue only at a finite rate.
  if (key == "client_queue_time" && c.max_concurrency <= 0) return false;
  if (key == "e2el_including_client_queue" && (c.max_concurrency <= 0 || !std::isfinite(c.request_rate))) return false;
  // non-stream: there are no inter-token gaps to report.
  if (key == "itl" && c.request_mode == RequestMode::non_stream) return false;
  return true;
}

ojson summary_json(const MetricSummary& s) {
  ojson j;
  j["count"] = s.count;
  j["mean"] = s.mean_ms;
  j["median"] = s.median_ms;
  j["std"] = s.std_ms;
  j["max"] = s.max_ms;
  for (const auto& [p, v] : s.percentiles_ms) j[std::string("p").append(percentile_label(p))] = v;
  return j;
}

std::vector<double> seconds_since(const std::vector<RequestRecord>& records, Nanos RequestRecord::*field) {
  std::vector<double> out;
  for (const auto& r : records)
    if (r.dispatched) out.push_back(static_cast<double>(r.*field) / 1e9);
  return out;
}

}  // namespace

void print_errors(std::ostream& out, const BenchResult& result) {
  const auto& errors = result.metrics.errors;
  std::size_t shown = 0, failed = 0;
  for (const auto& e : errors) failed += e.empty() ? 0 : 1;
  if (failed == 0) return;
  out << "Failed requests: " << failed << " (showing the first " << std::min<std::size_t>(failed, 10) << ", capping to 10)\n";
  for (std::size_t i = 0; i < errors.size() && shown < 10; ++i) {
    if (errors[i].empty()) continue;
    out << "  request " << result.run.records[i].request_id << ": " << errors[i] << "\n";
    ++shown;
  }
}

void print_vllm_block(std::ostream& out, const BenchConfig& c, const BenchResult& r) {
  const ServingMetrics& m = r.metrics;
  out << centered(" Serving Benchmark Result ", 50, '=') << "\n";
  out << line_int("Successful requests:", m.completed) << "\n";
  out << line_int("Failed requests:", m.failed) << "\n";
  if (c.max_concurrency > 0) out << line_int("Maximum request concurrency:", c.max_concurrency) << "\n";
  if (std::isfinite(c.request_rate)) out << line_f2("Request rate configured (RPS):", c.request_rate) << "\n";
  out << line_f2("Benchmark duration (s):", m.duration_s) << "\n";
  // vLLM prints the token lines only when it has a tokenizer (not with --skip-tokenizer-init).
  const bool tokenizer = !c.skip_tokenizer_init;
  out << line_int("Total input tokens:", m.total_input) << "\n";
  if (tokenizer) out << line_int("Total generated tokens:", m.total_output) << "\n";
  out << line_f2("Request throughput (req/s):", m.request_throughput) << "\n";
  if (m.request_goodput) out << line_f2("Request goodput (req/s):", *m.request_goodput) << "\n";
  if (tokenizer) {
    out << line_f2("Output token throughput (tok/s):", m.output_throughput) << "\n";
    out << line_f2("Peak output token throughput (tok/s):", m.max_output_tokens_per_s) << "\n";
  }
  out << line_f2("Peak concurrent requests:", m.max_concurrent_requests) << "\n";
  if (tokenizer) out << line_f2("Total token throughput (tok/s):", m.total_token_throughput) << "\n";
  // vLLM: the probe section only when at least one probe succeeded.
  if (const auto probe = probe_stats(r.probe_records, c.request_mode); c.probe_request_rate > 0 && probe) {
    out << centered("Probe Requests", 50, '-') << "\n";
    out << line_int("Probe requests completed:", probe->completed) << "\n";
    out << line_int("Probe requests failed:", probe->failed) << "\n";
    out << line_f2("Median probe E2EL (ms):", probe->median_e2el_ms) << "\n";
    out << line_f2("P99 probe E2EL (ms):", probe->p99_e2el_ms) << "\n";
    out << line_f2("Max probe E2EL (ms):", probe->max_e2el_ms) << "\n";
  }
  for (const auto& label : kMetricLabels) {
    if (!selected(c, label.key)) continue;
    const MetricSummary& s = m.latency.at(label.key);
    out << centered(label.header, 50, '-') << "\n";
    out << line_f2(std::string("Mean ") + label.name + " (ms):", s.mean_ms) << "\n";
    out << line_f2(std::string("Median ") + label.name + " (ms):", s.median_ms) << "\n";
    for (const auto& [p, v] : s.percentiles_ms)
      out << line_f2(std::string("P").append(percentile_label(p)).append(" ").append(label.name).append(" (ms):"), v) << "\n";
  }
  out << std::string(50, '=') << "\n";
}

void print_client_block(std::ostream& out, const BenchConfig& c, const BenchResult& r) {
  const ServingMetrics& m = r.metrics;
  const SendLoopResult& run = r.run;
  out << centered(" encbench client (beyond vllm) ", 50, '=') << "\n";
  out << line_str("Request mode:", c.request_mode == RequestMode::stream ? "stream"
                                                                         : "non-stream (TTFT = E2EL, no ITL)") << "\n";
  if (run.interrupted) out << line_str("Run:", "INTERRUPTED (SIGINT)") << "\n";
  if (m.not_sent) out << line_int("Requests never sent:", m.not_sent) << "\n";
  if (m.incomplete_streams || m.error_events || c.strict_success) {
    const char* how = c.strict_success ? " (failed: --strict-success)" : " (ok, as vllm)";
    out << line_str("Streams without [DONE]:", std::to_string(m.incomplete_streams) + how) << "\n";
    out << line_str("Streams with error events:", std::to_string(m.error_events) + how) << "\n";
  }
  auto section = [&](const char* header, const char* name, const MetricSummary& s) {
    out << centered(header, 50, '-') << "\n";
    out << line_f2(std::string("Mean ") + name + " (ms):", s.mean_ms) << "\n";
    out << line_f2(std::string("Median ") + name + " (ms):", s.median_ms) << "\n";
    for (const auto& [p, v] : s.percentiles_ms) out << line_f2(std::string("P").append(percentile_label(p)).append(" ").append(name).append(" (ms):"), v) << "\n";
    out << line_f2(std::string("Max ") + name + " (ms):", s.max_ms) << "\n";
  };
  section("TTFT from intended send time", "TTFT (sched)", m.ttft_from_intended);
  section("E2EL from intended send time", "E2EL (sched)", m.e2el_from_intended);
  section("Dispatch lag (sent - intended)", "dispatch lag", m.dispatch_lag);
  if (c.max_concurrency > 0) section("Client queue (concurrency cap wait)", "queue", m.client_queue);
  if (run.loop.iterations_at_connection_limit + run.loop.iterations_at_send_quota > 0)
    section("Send wait (connection slot / loop turn)", "send wait", m.send_wait);
  out << centered("Client cost", 50, '-') << "\n";
  out << line_f2("Tokens per chunk (mean of requests):", m.tokens_per_chunk_mean) << "\n";
  out << line_f2("Tokens per chunk (overall):", m.tokens_per_chunk_overall) << "\n";
  const double duration = std::max(m.duration_s, 1e-9);
  out << line_f2("Client CPU time (s):", run.cpu_user_s + run.cpu_system_s) << "\n";
  out << line_f2("Client CPU utilization (%):", 100.0 * (run.cpu_user_s + run.cpu_system_s) / duration) << "\n";
  const auto wake = summarize_ms(run.loop.arrival_wake_lag_ms, {99});
  const auto busy = summarize_ms(run.loop.iteration_busy_ms, {99});
  out << line_f2("P99 arrival timer lag (ms):", wake.percentiles_ms[0].second) << "\n";
  out << line_f2("Max arrival timer lag (ms):", wake.max_ms) << "\n";
  out << line_f2("P99 loop iteration busy (ms):", busy.percentiles_ms[0].second) << "\n";
  out << line_f2("Max loop iteration busy (ms):", busy.max_ms) << "\n";
  if (const SlowestIteration& s = run.loop.slowest; s.busy_ms > 0) {
    out << sformat("  slowest at %.3f s: %lld events, %lld sends, %lld done; curl %.2f (parse %.2f), dispatch %.2f, "
                   "other %.2f ms\n",
                   s.at_s, static_cast<long long>(s.socket_events), static_cast<long long>(s.dispatches),
                   static_cast<long long>(s.completions), s.curl_ms, s.parse_ms, s.dispatch_ms, s.unaccounted_ms);
  }
  out << line_int("Peak requests in flight:", static_cast<long long>(run.loop.peak_in_flight)) << "\n";
  out << line_int("Connection limit:", static_cast<long long>(run.loop.connection_limit)) << "\n";
  out << line_int("Peak waiting to send:", static_cast<long long>(run.loop.peak_send_queue)) << "\n";
  if (!m.failures_by_kind.empty()) {
    out << centered("Failed requests by kind", 50, '-') << "\n";
    for (const auto& [kind, count] : m.failures_by_kind) out << line_int((kind + ":").c_str(), count) << "\n";
  }
  if (r.sharding.is_object()) {
    // Which sender was the bottleneck: one line per rank (CPU above is the sum over ranks).
    out << centered("Sharded load generation (MPI)", 50, '-') << "\n";
    out << line_int("Ranks:", r.sharding.value("ranks", 0)) << "\n";
    out << line_int("Hosts:", static_cast<long long>(r.sharding["hosts"].size())) << "\n";
    out << line_f2("Start alignment (ms):", r.sharding.value("align_ms", 0.0)) << "\n";
    for (const auto& k : r.sharding["per_rank"]) {
      out << sformat("rank %d %-14.14s req %-6lld lag p99 %.2f ms  cpu %.0f %%  clock %+.1f us (+-%.1f)\n", k.value("rank", 0),
                     k.value("host", std::string()).c_str(), k.value("requests", 0LL), k.value("dispatch_lag_p99_ms", 0.0),
                     100.0 * k.value("cpu_utilization", 0.0), static_cast<double>(k.value("clock_offset_ns", 0LL)) / 1e3,
                     static_cast<double>(k.value("clock_offset_error_bound_ns", 0LL)) / 1e3);
    }
  }
  out << std::string(50, '=') << "\n";
  if (m.client_bottleneck_warning) {
    out << "WARNING: client dispatch lag p99 is " << m.client_lag.percentiles_ms[2].second
        << " ms (> 1 ms): the client, not the server, limited the send schedule; treat the latencies with care.\n";
  }
  if (m.saturation.saturated) {
    out << sformat("CLIENT SATURATED from %.3f s of the schedule (request %zu of %zu sent): it sustained %.1f req/s "
                   "against %.1f req/s offered; the rest waited in the client (max lag %.1f ms).\n",
                   m.saturation.onset_s, m.saturation.onset_request, m.saturation.onset_request + m.saturation.requests,
                   m.saturation.sustained_send_rate, m.saturation.offered_rate, m.saturation.max_client_lag_ms);
  }
  if (m.output_len_from_chunks > 0) {
    out << "NOTE: " << m.output_len_from_chunks
        << " successful requests carried no usage.completion_tokens; their output length is their content-chunk count.\n";
  }
}

// ------------------------------------------------------------------------------------- JSON
nlohmann::ordered_json to_vllm_json_ordered(const BenchConfig& c, const BenchResult& r);

std::string result_filename(const BenchConfig& c, const BenchResult& r) {
  if (!c.result_filename.empty()) return c.result_filename;
  std::string model = r.model_id;
  if (auto slash = model.rfind('/'); slash != std::string::npos) model = model.substr(slash + 1);
  // vllm's name, each part one safe path component: a --label of ../../x or a model id with a
  // '\' or control characters stays inside --result-dir.
  model = safe_file_component(model, "model");
  const std::string label = safe_file_component(
      !c.label.empty() ? c.label : !c.backend_name.empty() ? c.backend_name : std::string(to_string(c.backend)), "bench");
  std::string name = c.ramp_up != RampUp::none
                         ? label + "-ramp-up-" + (c.ramp_up == RampUp::linear ? "linear" : "exponential") + "-" +
                               std::to_string(c.ramp_up_start_rps) + "qps-" + std::to_string(c.ramp_up_end_rps) + "qps"
                         : label + "-" + python_float(c.request_rate) + "qps";
  if (c.max_concurrency > 0) name += "-concurrency" + std::to_string(c.max_concurrency);
  return name + "-" + model + "-" + r.date + ".json";
}

nlohmann::json to_vllm_json(const BenchConfig& c, const BenchResult& r) {
  // Kept for API symmetry; the ordered form (vllm's key order) is what save_result writes.
  return nlohmann::json::parse(to_vllm_json_ordered(c, r).dump());
}

namespace {

// vllm's setup keys, in vllm's order: date .. max_concurrency (and the ramp-up keys).
void add_vllm_setup_keys(ojson& j, const BenchConfig& c, const BenchResult& r) {
  j["date"] = r.date;
  const std::string backend = c.backend_name.empty() ? std::string(to_string(c.backend)) : c.backend_name;
  j["endpoint_type"] = backend;
  j["backend"] = backend;
  j["label"] = c.label.empty() ? nullptr : ojson(c.label);
  j["model_id"] = r.model_id;
  if (!r.server_device.empty()) j["server_device"] = r.server_device;
  j["tokenizer_id"] = c.skip_tokenizer_init ? ojson(nullptr) : ojson(c.tokenizer.empty() ? r.model_id : c.tokenizer);
  j["num_prompts"] = c.dataset.num_prompts;
  for (const auto& [k, v] : c.metadata) j[k] = v;  // vllm stores the (stripped) strings: tp=1 -> "1"
  j["request_rate"] = std::isinf(c.request_rate) ? ojson("inf") : ojson(c.request_rate);
  j["burstiness"] = c.burstiness;
  j["max_concurrency"] = c.max_concurrency > 0 ? ojson(c.max_concurrency) : ojson(nullptr);
  if (c.ramp_up != RampUp::none) {
    j["ramp_up_strategy"] = c.ramp_up == RampUp::linear ? "linear" : "exponential";
    j["ramp_up_start_rps"] = c.ramp_up_start_rps;
    j["ramp_up_end_rps"] = c.ramp_up_end_rps;
  }
}

// vllm's benchmark() result keys (duration .. rtfx, probe_*, rps_change_events, per-metric stats).
void add_vllm_result_keys(ojson& j, const BenchConfig& c, const BenchResult& r) {
  const ServingMetrics& m = r.metrics;
  j["duration"] = m.duration_s;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["total_input_tokens"] = m.total_input;
  j["total_output_tokens"] = m.total_output;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = m.request_goodput ? ojson(*m.request_goodput) : ojson(nullptr);
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  if (c.save_detailed) {
    j["input_lens"] = m.input_lens;
    j["output_lens"] = m.output_lens;
    j["ttfts"] = m.ttfts_s;
    j["itls"] = m.itls_s;
  }
  j["latencies"] = m.latencies_s;
  if (c.save_detailed) j["start_times"] = m.start_times_s;
  j["queue_times"] = m.queue_times_s;
  if (c.save_detailed) {
    j["generated_texts"] = m.generated_texts;
    j["errors"] = m.errors;
  }
  j["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  j["max_concurrent_requests"] = static_cast<std::int64_t>(m.max_concurrent_requests);  // vllm: an int
  j["rtfx"] = 0.0;
  if (const auto probe = probe_stats(r.probe_records, c.request_mode); c.probe_request_rate > 0 && probe) {
    j["probe_completed"] = probe->completed;
    j["probe_failed"] = probe->failed;
    j["probe_median_e2el_ms"] = probe->median_e2el_ms;
    j["probe_p99_e2el_ms"] = probe->p99_e2el_ms;
    j["probe_max_e2el_ms"] = probe->max_e2el_ms;
  }
  if (!r.rps_change_events.empty()) {
    ojson events = ojson::array();
    for (const auto& [rps, ts] : r.rps_change_events) events.push_back({{"rps", rps}, {"timestamp", ts}});
    j["rps_change_events"] = events;
  }
  for (const auto& label : kMetricLabels) {
    if (!selected(c, label.key)) continue;
    const MetricSummary& s = m.latency.at(label.key);
    const std::string k = label.key;
    j["mean_" + k + "_ms"] = s.mean_ms;
    j["median_" + k + "_ms"] = s.median_ms;
    j["std_" + k + "_ms"] = s.std_ms;
    for (const auto& [p, v] : s.percentiles_ms) j[std::string("p").append(percentile_label(p)) + "_" + k + "_ms"] = v;
  }
}

// The event loop's own counters: where its time went and its slowest iteration.
void add_loop_profile_keys(ojson& j, const BenchResult& r) {
  {
    const LoopProfile& p = r.run.loop.profile;
    const auto per = [](double s, std::int64_t n) { return n > 0 ? s * 1e6 / static_cast<double>(n) : 0.0; };
    j["loop_profile"] = {{"curl_socket_s", p.curl_socket_s},
                         {"curl_timer_s", p.curl_timer_s},
                         {"parse_s", p.parse_s},
                         {"dispatch_s", p.dispatch_s},
                         {"finish_s", p.finish_s},
                         {"easy_create_s", p.easy_create_s},
                         {"easy_handles_created", p.easy_handles_created},
                         {"socket_events", p.socket_events},
                         {"dispatches", p.dispatches},
                         {"completions", p.completions},
                         {"max_events_in_iteration", p.max_events_in_iteration},
                         {"dispatch_us_per_request", per(p.dispatch_s, p.dispatches)},
                         {"finish_us_per_request", per(p.finish_s, p.completions)},
                         {"curl_us_per_request", per(p.curl_socket_s + p.curl_timer_s - p.parse_s, p.completions)},
                         {"parse_us_per_request", per(p.parse_s, p.completions)}};
  }
  {
    const SlowestIteration& s = r.run.loop.slowest;
    j["loop_slowest_iteration"] = {{"busy_ms", s.busy_ms}, {"at_s", s.at_s}, {"socket_events", s.socket_events},
                                   {"dispatches", s.dispatches}, {"completions", s.completions},
                                   {"in_flight_before", s.in_flight_before}, {"waiting_before", s.waiting_before},
                                   {"curl_ms", s.curl_ms}, {"parse_ms", s.parse_ms}, {"dispatch_ms", s.dispatch_ms},
                                   {"finish_ms", s.finish_ms}, {"unaccounted_ms", s.unaccounted_ms}};
  }
}

// Our keys beside vllm's: the envelope, schedule-relative latencies, client cost, saturation.
void add_encbench_keys(ojson& j, const BenchConfig& c, const BenchResult& r) {
  const ServingMetrics& m = r.metrics;
  ojson env = make_result_envelope("encbench-serve-bench", 1, c.argv, "none");
  for (auto& [k, v] : env.items()) j[k] = v;
  j["request_mode"] = to_string(c.request_mode);
  j["interrupted"] = r.run.interrupted;
  j["strict_success"] = c.strict_success;
  j["incomplete_streams"] = m.incomplete_streams;
  j["error_events"] = m.error_events;
  j["not_sent"] = m.not_sent;
  j["api_url"] = r.api_url;
  j["prompt_tokens_counted_by"] = r.tokenizer_file.empty() ? "words" : "tokenizer";
  j["tokenizer_file"] = r.tokenizer_file;
  j["dataset"] = {{"name", c.dataset.name}, {"layout", r.dataset_layout}, {"path", c.dataset.path},
                  {"source_rows", r.dataset_rows}, {"oversampled", r.oversampled},
                  {"image_bytes_total", r.total_image_bytes}, {"seed", c.seed}};
  j["ignore_eos"] = r.ignore_eos;
  j["timeout_s"] = c.timeout_s;
  j["response_bounds"] = {{"idle_timeout_s", c.idle_timeout_s}, {"max_response_bytes", c.max_response_bytes},
                          {"max_output_chunks", c.max_output_chunks}};
  j["prepare_s"] = static_cast<double>(r.prepare_ns) / 1e9;
  add_vision_keys(j, r.vision);
  j["ttft_from_intended_ms"] = summary_json(m.ttft_from_intended);
  j["e2el_from_intended_ms"] = summary_json(m.e2el_from_intended);
  j["dispatch_lag_ms"] = summary_json(m.dispatch_lag);
  j["client_lag_ms"] = summary_json(m.client_lag);
  j["client_queue_ms"] = summary_json(m.client_queue);
  j["send_wait_ms"] = summary_json(m.send_wait);
  j["tokens_per_chunk_mean"] = m.tokens_per_chunk_mean;
  j["tokens_per_chunk_overall"] = m.tokens_per_chunk_overall;
  j["output_len_from_chunks"] = m.output_len_from_chunks;
  j["requests_with_several_events_per_read"] = m.reads_with_several_events;
  j["client_cpu_user_s"] = r.run.cpu_user_s;
  j["client_cpu_system_s"] = r.run.cpu_system_s;
  j["client_cpu_utilization"] = (r.run.cpu_user_s + r.run.cpu_system_s) / std::max(m.duration_s, 1e-9);
  j["client_peak_rss_mib"] = static_cast<double>(r.client_peak_rss_kib) / 1024.0;
  j["loop_arrival_timer_lag_ms"] = summary_json(summarize_ms(r.run.loop.arrival_wake_lag_ms, {50, 99}));
  j["loop_iteration_busy_ms"] = summary_json(summarize_ms(r.run.loop.iteration_busy_ms, {50, 99}));
  j["loop_iterations"] = r.run.loop.iterations;
  j["peak_in_flight"] = r.run.loop.peak_in_flight;
  j["peak_client_queue"] = r.run.loop.peak_client_queue;
  j["peak_send_queue"] = r.run.loop.peak_send_queue;
  j["max_connections"] = r.run.loop.connection_limit;
  j["open_file_limit"] = r.run.loop.open_file_limit;
  j["curl_multis"] = r.run.loop.curl_multis;
  j["loop_iterations_at_connection_limit"] = r.run.loop.iterations_at_connection_limit;
  j["loop_iterations_at_send_quota"] = r.run.loop.iterations_at_send_quota;
  add_loop_profile_keys(j, r);
  j["client_bottleneck_warning"] = m.client_bottleneck_warning;
  j["failures_by_kind"] = m.failures_by_kind;
  j["client_saturation"] = {{"saturated", m.saturation.saturated},
                            {"onset_s", m.saturation.onset_s},
                            {"onset_request", m.saturation.onset_request},
                            {"requests", m.saturation.requests},
                            {"sustained_send_rate", m.saturation.sustained_send_rate},
                            {"offered_rate", m.saturation.offered_rate},
                            {"max_client_lag_ms", m.saturation.max_client_lag_ms}};
  // Sharded runs (mpirun): ranks, hosts, per-rank dispatch lag / CPU / clock offset. The client
  // CPU keys above are then sums over the ranks.
  if (!r.sharding.is_null()) j["sharding"] = r.sharding;
  if (c.profile) {
    j["server_profile"] = r.server_profile;
    j["server_profile_client_clock"] = {{"steady_ns", r.profile_clock.steady_ns},
                                        {"system_ns", r.profile_clock.system_ns},
                                        {"boot_id", r.profile_clock.boot_id}};
    if (!r.profile_message.empty()) j["server_profile_message"] = r.profile_message;
  }
  if (c.scrape_metrics) {
    j["server_metrics_delta"] = r.server_metrics_delta;
    if (!r.metrics_message.empty()) j["server_metrics_message"] = r.metrics_message;
  }
}

// --save-detailed: our per-request arrays beside vllm's (request ids, split, times, statuses).
void add_detailed_keys(ojson& j, const BenchConfig& c, const BenchResult& r) {
  if (c.save_detailed) {
    std::vector<std::string> ids, kinds;
    std::vector<int> statuses;
    std::vector<std::int64_t> chunks;
    std::vector<double> lag_ms;
    for (const auto& rec : r.run.records) {
      if (!rec.dispatched) continue;
      ids.push_back(rec.request_id);
      statuses.push_back(rec.http_status);
      kinds.push_back(rec.failure_kind);
      chunks.push_back(static_cast<std::int64_t>(rec.choices_ns.size()));
      lag_ms.push_back(rec.sent_ns ? static_cast<double>(rec.sent_ns - rec.intended_ns) / 1e6 : 0.0);
    }
    j["request_ids"] = ids;
    // The prompt's split, per request as request_ids: tokenizer text tokens, the model's image tokens.
    std::vector<std::int64_t> text, vision;
    for (const auto& rec : r.run.records) {
      if (!rec.dispatched || rec.index >= r.text_tokens.size()) continue;
      text.push_back(r.text_tokens[rec.index]);
      vision.push_back(r.vision_tokens[rec.index]);
    }
    j["input_text_tokens"] = text;
    j["input_vision_tokens"] = vision;
    j["intended_times"] = seconds_since(r.run.records, &RequestRecord::intended_ns);
    j["sent_times"] = seconds_since(r.run.records, &RequestRecord::sent_ns);
    j["dispatch_lags_ms"] = lag_ms;
    j["http_statuses"] = statuses;
    j["chunk_counts"] = chunks;
    j["failure_kinds"] = kinds;  // "" for successes, in the order of `errors`
  }
}

}  // namespace

nlohmann::ordered_json to_vllm_json_ordered(const BenchConfig& c, const BenchResult& r) {
  ojson j;
  add_vllm_setup_keys(j, c, r);
  add_vllm_result_keys(j, c, r);
  add_encbench_keys(j, c, r);
  add_detailed_keys(j, c, r);
  return j;
}

fs::path result_sibling_path(const BenchConfig& c, const BenchResult& r, const std::string& suffix) {
  fs::path path = result_filename(c, r);
  if (!c.result_dir.empty()) path = fs::path(c.result_dir) / path;
  return path.replace_extension(suffix);
}

std::string save_result(const BenchConfig& c, const BenchResult& r) {
  fs::path path = result_filename(c, r);
  if (!c.result_dir.empty()) {
    std::error_code ec;
    fs::create_directories(c.result_dir, ec);
    require(!ec, "cannot create --result-dir " + c.result_dir + ": " + ec.message());
    path = fs::path(c.result_dir) / path;
  }
  const ojson doc = to_vllm_json_ordered(c, r);
  if (c.append_result) {
    std::ofstream out(path, std::ios::app);
    out << doc.dump() << "\n";
    require(static_cast<bool>(out), "cannot append to " + path.string());
    return path.string();
  }
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump();  // one compact line, as vllm's json.dump
    require(static_cast<bool>(out), "cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  require(!ec, "cannot write " + path.string() + ": " + ec.message());
  return path.string();
}

}  // namespace encbench::client
