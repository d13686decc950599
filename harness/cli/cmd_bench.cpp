// `encbench bench serve`: flags (vllm bench serve's names and defaults, plus --request-mode and
// --timeout) -> BenchConfig -> run_benchmark -> vllm's block, our block, result JSON.
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <memory>
#include <sstream>
#include <tuple>

#include "harness/cli/bench_dataset_stats.hpp"
#include "harness/cli/bench_parity_flags.hpp"
#include "harness/cli/cmd_bench_ab.hpp"
#include "harness/cli/cmd_bench_multi_turn.hpp"
#include "harness/cli/cmd_bench_sweep_serve.hpp"
#include "harness/core/text_escape.hpp"
#include "harness/cli/command.hpp"
#include "harness/scenario/sweep.hpp"
#include "harness/scenario/timeline_page.hpp"
#include "harness/client/bench.hpp"
#ifdef ENCBENCH_HAVE_MPI
#include "harness/client/mpi_coordinator.hpp"
#endif
#include "harness/core/error.hpp"

namespace encbench::cli {

namespace {

struct BenchFlags {
  std::string backend = "openai", base_url, host = "127.0.0.1", endpoint = "/v1/completions", model, served_model_name;
  int port = 8000;
  std::string dataset_name = "random", dataset_path, hf_split = "train", hf_subset, hf_name;
  std::optional<int> hf_output_len, output_len, input_len;
  int custom_output_len = 256;
  bool custom_ensure_client_side_data = false, skip_chat_template = false;
  // accepted for vllm scripts (a note says what they do there)
  std::string tokenizer, tokenizer_mode, chat_template_kwargs;
  bool trust_remote_code = false, insecure = false, plot_timeline = false, strict_success = false;
  std::optional<int> logprobs;
  std::string ramp_up_strategy;
  std::optional<int> ramp_up_start_rps, ramp_up_end_rps;
  int random_prefix_len = 0, random_batch_size = 1;
  std::size_t num_prompts = 1000;
  std::string request_rate = "inf";
  std::string burstiness = "1.0";
  std::optional<int> max_concurrency;
  std::optional<int> max_connections;
  std::uint64_t seed = 0;
  bool no_stream = false;
  std::string percentile_metrics = "ttft,tpot,itl", metric_percentiles = "99";
  std::vector<std::string> goodput, metadata, headers;
  bool save_result = false, save_detailed = false, append_result = false;
  std::string result_dir, result_filename, label, extra_body, request_id_prefix;
  std::optional<double> temperature, top_p, min_p, frequency_penalty, presence_penalty, repetition_penalty;
  std::optional<int> top_k;
  bool ignore_eos = false;
  bool profile = false;
  bool scrape_metrics = false;
  int num_warmups = 0;
  double ready_check_timeout_sec = 0;
  bool disable_tqdm = false, disable_shuffle = false, no_oversample = false;
  // random / random-mm
  int random_input_len = 1024, random_output_len = 128, random_mm_base_items = 1;
  std::string random_mm_limit = R"({"image": 255, "video": 1})", random_range_ratio = "0.0";
  double random_mm_items_range_ratio = 0.0;
  std::string random_mm_bucket_config = "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}";
  // beyond vllm
  std::string request_mode = "stream";
  double timeout = 21600, drain_timeout = 10;
  ParityFlags parity;  // the rest of vllm's flags (bench_parity_flags.hpp)
  double idle_timeout = client::kDefaultIdleTimeoutS;
  std::int64_t max_response_bytes = client::kDefaultMaxResponseBytes;
  std::int64_t max_output_chunks = client::kDefaultMaxOutputChunks;
  bool allow_all_failed = false;
};

// `bench serve`'s exit code when not one request succeeded (and the run was not interrupted):
// the result is still printed and saved, but a script must not take it for a measurement.
constexpr int kExitAllRequestsFailed = 4;
// Nothing answers at the server's address: the run never started (docs/client.md, the same for
// bench serve and bench sweep).
constexpr int kExitServerUnreachable = 1;

double parse_number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    require(used == text.size(), "");
    return v;
  } catch (...) {
    throw InvalidInput(flag + " expects a number (or inf), got '" + text + "'");
  }
}

std::vector<std::string> split_csv(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::pair<std::string, std::string> split_pair(const std::string& flag, const std::string& item, char sep) {
  const auto pos = item.find(sep);
  require(pos != std::string::npos && pos > 0, flag + " expects KEY" + sep + "VALUE, got '" + item + "'");
  return {item.substr(0, pos), item.substr(pos + 1)};
}

// vllm's --random-range-ratio: a float for both lengths, or {"input": a, "output": b}.
std::pair<double, double> parse_range_ratio(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return {v, v};
  } catch (...) {
  }
  const auto j = nlohmann::json::parse(text, nullptr, false);
  require(!j.is_discarded() && j.is_object() && j.contains("input") && j.contains("output") && j["input"].is_number() &&
              j["output"].is_number(),
          "--random-range-ratio expects a number or a JSON object with 'input' and 'output' keys, got '" + text + "'");
  return {j["input"].get<double>(), j["output"].get<double>()};
}

// vllm's --random-mm-limit-mm-per-prompt: JSON {"image": N, "video": M}; a plain N is the image limit.
int parse_mm_image_limit(const std::string& text) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size()) return v;
  } catch (...) {
  }
  const auto j = nlohmann::json::parse(text, nullptr, false);
  require(!j.is_discarded() && j.is_object() && j.contains("image") && j["image"].is_number_integer(),
          "--random-mm-limit-mm-per-prompt expects JSON like '{\"image\": 3, \"video\": 0}', got '" + text + "'");
  for (const auto& [k, v] : j.items())
    require(k == "image" || k == "video", "--random-mm-limit-mm-per-prompt: unknown modality '" + k + "' (image, video)");
  return j["image"].get<int>();
}

// Flags a vllm script passes that change nothing here: one line each saying what they do in vllm.
std::vector<std::string> accepted_flag_notes(const BenchFlags& f) {
  std::vector<std::string> notes;
  if (!f.tokenizer_mode.empty()) notes.push_back("--tokenizer-mode: selects vllm's client-side tokenizer; no effect here");
  if (f.trust_remote_code) notes.push_back("--trust-remote-code: lets vllm load tokenizer/dataset code from the Hub; no effect here");
  // vLLM applies the chat template client-side only to custom (these two flags) and sonnet (neither).
  if (!f.chat_template_kwargs.empty() && f.dataset_name != "custom")
    notes.push_back("--chat-template-kwargs: vllm passes them to the client-side chat template of the custom dataset; no effect for " + f.dataset_name);
  if (f.skip_chat_template && f.dataset_name != "custom")
    notes.push_back("--skip-chat-template: vllm skips the client-side chat template of the custom dataset; no effect for " + f.dataset_name);
  if (!f.hf_name.empty()) notes.push_back("--hf-name: picks vllm's dataset class for a local path; the layout is detected from the rows here");
  if (!f.hf_subset.empty()) notes.push_back("--hf-subset: the HF dataset config name in vllm's load_dataset; no effect on a local file");
  if (f.random_batch_size != 1) notes.push_back("--random-batch-size: only used by vllm's embeddings benchmark; ignored");
  for (auto& n : check_parity_flags(f.parity, f.dataset_name)) notes.push_back(std::move(n));
  return notes;
}

// The flags of vLLM's tokenizer datasets (sharegpt, prefix_repetition, timed_trace, sonnet).
void apply_vllm_text_flags(const BenchFlags& f, client::VllmTextDatasetConfig& v) {
  // vllm main_async: --output-len overrides every dataset's own output flag.
  v.sharegpt_output_len = f.output_len ? f.output_len : f.parity.sharegpt_output_len;
  v.num_prefixes = f.parity.prefix_repetition_num_prefixes.value_or(v.num_prefixes);
  v.prefix_len = f.parity.prefix_repetition_prefix_len.value_or(v.prefix_len);
  v.suffix_len = f.parity.prefix_repetition_suffix_len.value_or(v.suffix_len);
  v.output_len = f.output_len.value_or(f.parity.prefix_repetition_output_len.value_or(v.output_len));
  v.chunk_hash_size = f.parity.timed_trace_chunk_hash_size.value_or(v.chunk_hash_size);
  v.sec_multiplier = f.parity.timed_trace_sec_multiplier.value_or(v.sec_multiplier);
  for (auto [flag, target] : {std::pair{&f.parity.timed_trace_label_timestamp, &v.label_timestamp},
                              std::pair{&f.parity.timed_trace_label_input_length, &v.label_input_length},
                              std::pair{&f.parity.timed_trace_label_output_length, &v.label_output_length},
                              std::pair{&f.parity.timed_trace_label_hash_ids, &v.label_hash_ids}})
    if (!flag->empty()) *target = *flag;
  v.self_timed = !f.parity.no_self_timed;
  v.sonnet_input_len = f.parity.sonnet_input_len.value_or(v.sonnet_input_len);
  v.sonnet_output_len = f.parity.sonnet_output_len.value_or(v.sonnet_output_len);
  v.sonnet_prefix_len = f.parity.sonnet_prefix_len.value_or(v.sonnet_prefix_len);
}

// Which dataset, how many rows, and the lengths each dataset's own flags ask for.
void apply_dataset_flags(const BenchFlags& f, client::DatasetConfig& d) {
  d.name = f.dataset_name;
  d.path = f.dataset_path;
  d.hf_split = f.hf_split;
  d.num_prompts = f.num_prompts;
  d.seed = f.seed;
  // vllm main_async: --output-len overrides every dataset's own output flag (--hf-output-len,
  // --random-output-len, --custom-output-len); --input-len sets --random-input-len.
  d.output_len = f.output_len ? f.output_len : f.hf_output_len;
  d.custom_output_len = f.output_len.value_or(f.custom_output_len);
  d.shuffle = !f.disable_shuffle;
  d.oversample = !f.no_oversample;
  d.hf_streaming = !f.no_stream;
  d.client_side_images = f.custom_ensure_client_side_data;
  d.chat_template.skip = f.skip_chat_template;
  d.chat_template.kwargs_json = f.chat_template_kwargs;
  d.chat_template.chat_backend = f.backend == "openai-chat";
  d.random.input_len = f.input_len.value_or(f.random_input_len);
  d.random.output_len = f.output_len.value_or(f.random_output_len);
  std::tie(d.random.range_ratio, d.random.output_range_ratio) = parse_range_ratio(f.random_range_ratio);
  d.random.prefix_len = f.random_prefix_len;
  d.random.mm_base_items = f.random_mm_base_items;
  d.random.mm_items_range_ratio = f.random_mm_items_range_ratio;
  d.random.mm_limit_images = parse_mm_image_limit(f.random_mm_limit);
  d.random.buckets = client::parse_bucket_config(f.random_mm_bucket_config);
  if (d.name == "random" || d.name == "random-mm") d.output_len.reset();  // via random.output_len
}

// What each request carries beyond the prompt (sampling, extra body, headers), the result's
// metadata and the goodput SLOs.
void apply_request_flags(const BenchFlags& f, client::BenchConfig& c) {
  auto put = [&](const char* key, const auto& value) {
    if (value) c.sampling[key] = *value;
  };
  put("temperature", f.temperature);
  put("top_p", f.top_p);
  put("top_k", f.top_k);
  put("min_p", f.min_p);
  put("frequency_penalty", f.frequency_penalty);
  put("presence_penalty", f.presence_penalty);
  put("repetition_penalty", f.repetition_penalty);
  if (!f.extra_body.empty()) {
    c.extra_body = nlohmann::json::parse(f.extra_body, nullptr, false);
    require(!c.extra_body.is_discarded() && c.extra_body.is_object(), "--extra-body must be a JSON object, got '" + f.extra_body + "'");
  }
  for (const auto& h : f.headers) {
    auto [k, v] = split_pair("--header", h, '=');
    c.headers.emplace_back(k, v);
  }
  for (const auto& m : f.metadata) c.metadata.push_back(split_pair("--metadata", m, '='));
  for (const auto& g : f.goodput) {
    auto [k, v] = split_pair("--goodput", g, ':');
    c.goodput_slo_ms[k] = parse_number("--goodput " + k, v);
  }
}

client::BenchConfig to_config(const BenchFlags& f, const std::vector<std::string>& argv) {
  client::BenchConfig c;
  if (f.backend == "vllm") {
    c.backend = client::Backend::openai;  // vllm's "vllm" backend is its completions client
    c.backend_name = "vllm";
  } else {
    c.backend = client::parse_backend(f.backend);
  }
  c.tokenizer = f.tokenizer;
  c.skip_tokenizer_init = f.parity.skip_tokenizer_init;
  c.probe_request_rate = f.parity.probe_request_rate.value_or(0);
  c.lora_modules = f.parity.lora_modules;
  if (!f.parity.lora_assignment.empty()) c.lora_assignment = f.parity.lora_assignment;
  apply_vllm_text_flags(f, c.dataset.vllm_text);
  check_parity_flags(f.parity, f.dataset_name);  // refusals before any dataset or server work
  c.logprobs = f.logprobs;
  c.insecure = f.insecure;
  c.strict_success = f.strict_success;
  if (!f.ramp_up_strategy.empty()) {
    c.ramp_up = client::parse_ramp_up(f.ramp_up_strategy);
    c.ramp_up_start_rps = f.ramp_up_start_rps.value_or(-1);
    c.ramp_up_end_rps = f.ramp_up_end_rps.value_or(-1);
  }
  if (!f.chat_template_kwargs.empty()) {
    const auto j = nlohmann::json::parse(f.chat_template_kwargs, nullptr, false);
    require(!j.is_discarded() && j.is_object(), "--chat-template-kwargs must be a JSON object, got '" + f.chat_template_kwargs + "'");
  }
  c.base_url = f.base_url;
  c.host = f.host;
  c.port = f.port;
  c.endpoint = f.endpoint;
  c.model = f.model;
  c.served_model_name = f.served_model_name;
  c.label = f.label;
  apply_dataset_flags(f, c.dataset);
  c.request_rate = parse_number("--request-rate", f.request_rate);
  c.burstiness = parse_number("--burstiness", f.burstiness);
  if (f.max_connections) {
    require(*f.max_connections >= 1, "--max-connections must be >= 1");
    c.max_connections = *f.max_connections;
  }
  if (f.max_concurrency) {
    require(*f.max_concurrency >= 1, "--max-concurrency must be >= 1");
    c.max_concurrency = *f.max_concurrency;
  }
  c.seed = f.seed;
  c.ignore_eos = f.ignore_eos;
  c.profile = f.profile;
  c.scrape_metrics = f.scrape_metrics;
  apply_request_flags(f, c);
  c.request_id_prefix = f.request_id_prefix;
  c.request_mode = client::parse_request_mode(f.request_mode);
  c.timeout_s = f.timeout;
  c.drain_timeout_s = f.drain_timeout;
  c.idle_timeout_s = f.idle_timeout;
  c.max_response_bytes = f.max_response_bytes;
  c.max_output_chunks = f.max_output_chunks;
  c.allow_all_failed = f.allow_all_failed;
  c.num_warmups = f.num_warmups;
  c.ready_check_timeout_s = f.ready_check_timeout_sec;
  c.percentile_metrics = split_csv(f.percentile_metrics);
  c.metric_percentiles.clear();
  for (const auto& p : split_csv(f.metric_percentiles)) c.metric_percentiles.push_back(parse_number("--metric-percentiles", p));
  c.save_result = f.save_result || f.append_result;
  c.save_detailed = f.save_detailed;
  c.append_result = f.append_result;
  c.result_dir = f.result_dir;
  c.result_filename = f.result_filename;
  c.argv = argv;
  return c;
}

void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// The timeline page's name for the run: --label, else what the server says it ran (encbench
// serve's encoder preset, in its /stop_profile answer), else the served model; the backend's name
// ("openai-chat") says nothing about the arm.
std::string timeline_label(const client::BenchConfig& config, const client::BenchResult& result) {
  if (!config.label.empty()) return config.label;
  const nlohmann::json& server = result.server_profile.is_object() && result.server_profile.contains("server")
                                     ? result.server_profile["server"]
                                     : nlohmann::json::object();
  if (server.is_object() && server.value("encoder_preset", std::string()) != "")
    return "encoder preset " + server["encoder_preset"].get<std::string>() + " (" + server.value("model", std::string()) + ")";
  return !result.model_id.empty() ? result.model_id : client::to_string(config.backend);
}

// vLLM's lines before the run (rate, burstiness, concurrency) and ours beside them, printed once
// the run is prepared and about to send.
void print_traffic_header(std::ostream& out, const BenchFlags& flags, const client::BenchConfig& config,
                          const client::Coordinator* coordinator) {
  for (const auto& note : accepted_flag_notes(flags)) out << "note: " << note << "\n";
  const std::string rate = client::python_float(config.request_rate);
  if (config.ramp_up != client::RampUp::none) {
    out << "Traffic ramp-up strategy: " << flags.ramp_up_strategy << ".\n";
    out << "Will increase RPS from " << config.ramp_up_start_rps << " to " << config.ramp_up_end_rps
        << " RPS over the duration of the benchmark.\n";
  } else {
    out << "Traffic request rate: " << (std::isinf(config.request_rate) ? std::string("inf") : rate) << "\n";
  }
  out << "Burstiness factor: " << client::python_float(config.burstiness) << (config.burstiness == 1.0 ? " (Poisson process)" : " (Gamma distribution)") << "\n";
  out << "Maximum request concurrency: " << (config.max_concurrency > 0 ? std::to_string(config.max_concurrency) : "None") << "\n";
  if (config.probe_request_rate > 0) {
    out << "Probe request rate: " << client::python_float(config.probe_request_rate) << " req/s\n";
  }
  if (coordinator)
    out << "Sharded load generation: " << coordinator->size() << " MPI ranks (round-robin by request index)\n";
  out.flush();
}

int run_serve(const BenchFlags& flags, const std::vector<std::string>& argv) {
  client::BenchConfig config = to_config(flags, argv);
  client::validate(config);
  raise_fd_limit();
  // SIGINT/SIGTERM become readable events in the loop (stop sending, drain, save, marked
  // interrupted) instead of killing the process mid-write. Blocked before any thread starts
  // (MPI's threads included). Under mpirun, SIGINT to mpirun kills the job; SIGINT to the
  // ranks drains them and rank 0 still writes the interrupted result (docs/client.md).
  const sigset_t mask = block_stop_signals();
  // Started by mpirun: one shard of the schedule per rank, rank 0 prints and writes (issue 19).
  std::unique_ptr<client::Coordinator> coordinator;
#ifdef ENCBENCH_HAVE_MPI
  coordinator = client::make_mpi_coordinator_if_launched();
#else
  if (const int n = client::mpi_launcher_world_size(); n > 1)
    std::cerr << "encbench: warning: started by an MPI launcher (" << n << " processes) but built without MPI "
              << "(ENCBENCH_MPI=OFF or no MPI found): every process runs the whole benchmark on its own\n";
#endif
  config.coordinator = coordinator.get();
  const bool root = !coordinator || coordinator->rank() == 0;
  const int stop_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  config.stop_fd = stop_fd;
  config.progress = root && !flags.disable_tqdm && isatty(STDERR_FILENO);
  client::global_curl_init();
  // The dataset, the model and the server's address first: a missing file or a server that does
  // not answer is one line on stderr with nothing on stdout before it (docs/client.md, exit codes).
  client::BenchResult result;
  try {
    client::PreparedBenchmark prepared = client::prepare_benchmark(config);
    if (root) std::cerr << "bench serve: " << prepared.result.tokenizer_note << "\n";
    std::ostringstream discard;
    print_traffic_header(root ? std::cout : discard, flags, config, coordinator.get());
    result = client::run_prepared_benchmark(config, std::move(prepared));
  } catch (const client::ServerUnreachable& e) {
    std::cerr << "encbench: error: " << e.what() << "\n";
    close(stop_fd);
    return kExitServerUnreachable;
  } catch (const client::PeerStopped&) {
    close(stop_fd);  // rank 0 prints the reason
    return 2;
  } catch (...) {
    close(stop_fd);
    throw;
  }
  close(stop_fd);
  if (!result.root) return result.run.interrupted ? 130 : 0;
  client::print_errors(std::cout, result);
  client::print_vllm_block(std::cout, config, result);
  client::print_vision_block(std::cout, result.vision);
  client::print_client_block(std::cout, config, result);
  client::print_server_sections(std::cout, result);
  std::cout.flush();
  if (config.save_result || result.run.interrupted) {
    if (!config.save_result) config.save_result = true;  // an interrupted run is never lost
    const std::string path = client::save_result(config, result);
    std::cerr << "encbench: results written to " << path << (result.run.interrupted ? " (marked interrupted)" : "") << "\n";
  }
  if (flags.plot_timeline) {
    const std::string label = timeline_label(config, result);
    // vLLM's name: the result file's with ".timeline.html" for its last extension.
    const std::filesystem::path html = client::result_sibling_path(config, result, ".timeline.html");
    std::error_code ec;
    if (html.has_parent_path()) std::filesystem::create_directories(html.parent_path(), ec);
    scenario::TimelineOptions options;
    options.itl_thresholds_ms = timeline_itl_thresholds_ms(flags.parity);
    scenario::write_timeline_html(html, {scenario::live_timeline_arm(label, result)}, options);
    std::cerr << "encbench: timeline written to " << html.string() << "\n";
  }
  if (flags.parity.plot_dataset_stats) write_dataset_stats(config, result);
  if (result.run.interrupted) return 130;
  if (result.metrics.completed == 0 && !config.allow_all_failed) {
    std::cerr << "encbench: error: every request failed (" << result.metrics.failed
              << " of them; see the errors above); exit " << kExitAllRequestsFailed
              << " (--allow-all-failed exits 0)\n";
    return kExitAllRequestsFailed;
  }
  return 0;
}

struct SweepFlags {
  std::string sweep, slo, result;
  int bisections = 3;
};

int run_sweep(const BenchFlags& flags, const SweepFlags& sf, const std::vector<std::string>& argv) {
  require(!sf.sweep.empty(), "bench sweep: --sweep is required (request-rate=... or max-concurrency=...)");
  client::BenchConfig config = to_config(flags, argv);
  client::validate(config);
  raise_fd_limit();
  scenario::SweepOptions w;
  w.sweep = scenario::parse_sweep(sf.sweep);
  if (!sf.slo.empty()) w.slo = scenario::parse_slo(sf.slo);
  w.capacity_bisections = sf.bisections;
  w.save_detailed = flags.save_detailed;  // per point; each point's run keeps its arrays while it runs
  // Refuse a server that does not answer before sending any load: one line, bench serve's exit code.
  try {
    client::check_reachable(client::base_url(config), 10);
  } catch (const client::ServerUnreachable& e) {
    std::cerr << "encbench: error: " << e.what() << "\n";
    return kExitServerUnreachable;
  }
  config.stop_fd = stop_signal_fd();
  signal(SIGPIPE, SIG_IGN);
  const std::string label = config.label.empty() ? "bench" : config.label;
  const std::filesystem::path result = !sf.result.empty()
                                           ? std::filesystem::path(sf.result)
                                           : std::filesystem::path(config.result_dir.empty() ? "." : config.result_dir) /
                                                 ("sweep-" + safe_file_component(label) + ".json");
  const auto run = scenario::run_live_sweep(config, w, result, argv, std::cout, std::cerr);
  return run.result.value("interrupted", false) ? 130 : 0;
}

}  // namespace

// Which server, model and dataset (tokenizer included).
void add_target_and_dataset_flags(CLI::App* serve, BenchFlags& f) {
  serve->add_option("--backend", f.backend, "openai (completions) | vllm (the same) | openai-chat")->capture_default_str();
  serve->add_option("--base-url", f.base_url, "Server base URL (overrides --host/--port), e.g. http://127.0.0.1:8000");
  serve->add_option("--host", f.host, "Server host")->capture_default_str();
  serve->add_option("--port", f.port, "Server port")->capture_default_str();
  serve->add_option("--endpoint", f.endpoint,
                    "API endpoint (openai-chat without --endpoint uses /v1/chat/completions)")->capture_default_str();
  serve->add_option("--model", f.model, "Model name (default: first id from GET /v1/models)");
  serve->add_option("--served-model-name", f.served_model_name, "Model name sent in requests (default: --model)");
  serve->add_option("--label", f.label, "Label used in the result file name instead of the backend");
  serve->add_option("--dataset-name", f.dataset_name, "hf | vision-arena | random-mm | random | custom | custom_image | custom_mm | sharegpt | prefix_repetition | timed_trace | sonnet | burstgpt (the last five need --tokenizer)")->capture_default_str();
  serve->add_option("--dataset-path", f.dataset_path,
                    "A Hugging Face id in the local hub cache (its parquet shards), a parquet file, a JSONL/JSON file, or a directory of them");
  serve->add_option("--hf-split", f.hf_split, "Split whose parquet shards are read from a hub id or directory (train-00000-of-00001.parquet), or whose name picks a JSONL file in a directory")->capture_default_str();
  serve->add_option("--hf-output-len", f.hf_output_len, "Output length for hf/vision-arena samples (default 128)");
  serve->add_option("--output-len", f.output_len,
                    "Output length for every dataset: overrides --hf-output-len, --random-output-len, --custom-output-len");
  serve->add_option("--input-len", f.input_len, "Sets --random-input-len (vllm's general input length)");
  serve->add_option("--hf-subset", f.hf_subset, "Accepted (HF dataset config; no effect on a local file)");
  serve->add_option("--hf-name", f.hf_name, "Accepted (vllm picks its dataset class with it; the layout is detected here)");
  serve->add_option("--custom-output-len", f.custom_output_len,
                    "custom/custom_image: max tokens per request (-1: each row's output_tokens)")->capture_default_str();
  serve->add_flag("--custom-ensure-client-side-data", f.custom_ensure_client_side_data,
                  "custom_mm: send image files as JPEG data URLs (default: file:// URLs the server reads, as vLLM; "
                  "the server needs --allowed-local-media-path). custom_image always sends data URLs");
  serve->add_flag("--skip-chat-template", f.skip_chat_template,
                  "custom: send and count prompts as written, not as the user turn of the tokenizer's chat template");
  serve->add_option("--chat-template-kwargs", f.chat_template_kwargs,
                    "custom: JSON object of variables for the tokenizer's chat template (e.g. '{\"enable_thinking\": false}')");
  serve->add_option("--tokenizer", f.tokenizer, "Tokenizer for prompt lengths and random prompts: a tokenizer.json, a directory holding one, or a hub id in the local hub cache (default: --model)");
  serve->add_option("--tokenizer-mode", f.tokenizer_mode, "Accepted (vllm's client-side tokenizer mode; no effect)");
  serve->add_flag("--trust-remote-code", f.trust_remote_code, "Accepted (no Hub code is loaded here)");
}

// How the load is shaped: rate, ramp, concurrency, connections, seed.
void add_load_flags(CLI::App* serve, BenchFlags& f) {
  serve->add_option("--logprobs", f.logprobs, "Completions: logprobs sent per request (vllm sends null when unset)");
  serve->add_flag("--insecure", f.insecure, "Do not verify TLS certificates (https servers)");
  serve->add_flag("--plot-timeline", f.plot_timeline,
                  "Write vLLM's per-request timeline (TTFT, then ITL bands below 25 / 50 ms / above) as HTML: "
                  "the result file's name ending .timeline.html (vLLM's), in --result-dir. With --profile against encbench "
                  "serve: also the server's engine steps (encoder / LM part) and each request's TTFT broken down "
                  "(to server, decode, engine queue, encoder busy / idle by cause / host, prefill and rest); "
                  "other servers: the page says the overlay is unavailable");
  serve->add_flag("--strict-success", f.strict_success,
                  "Fail 200 streams that end without data: [DONE] or carry an error event (vllm counts them as successes)");
  serve->add_option("--ramp-up-strategy", f.ramp_up_strategy, "linear | exponential: rate ramps from --ramp-up-start-rps to --ramp-up-end-rps (needs --request-rate inf)");
  serve->add_option("--ramp-up-start-rps", f.ramp_up_start_rps, "Ramp-up start rate (integer req/s)");
  serve->add_option("--ramp-up-end-rps", f.ramp_up_end_rps, "Ramp-up end rate (integer req/s)");
  serve->add_option("--num-prompts", f.num_prompts, "Number of requests")->capture_default_str();
  serve->add_option("--request-rate", f.request_rate, "Requests per second (inf: all at t=0)")->capture_default_str();
  serve->add_option("--burstiness", f.burstiness, "Gamma shape of inter-arrival gaps (1 = Poisson; inf = uniform)")->capture_default_str();
  serve->add_option("--max-concurrency", f.max_concurrency, "Cap on requests in flight (an explicit client queue, recorded)");
  serve->add_option("--max-connections", f.max_connections,
                    "Cap on open connections (one per request in flight); due requests beyond it wait in the client "
                    "and count as dispatch lag. Default: the open-file limit (soft raised to hard) minus open files and a 5% margin");
  serve->add_option("--seed", f.seed, "Seed for the schedule, shuffling and random datasets")->capture_default_str();
}

// What is measured and saved, and what every request carries.
void add_result_and_request_flags(CLI::App* serve, BenchFlags& f) {
  serve->add_flag("--no-stream", f.no_stream,
                  "hf: shuffle the rows as vLLM's loaded (not streamed) Hugging Face dataset does (the same order up to 1,000 rows)");
  serve->add_option("--percentile-metrics", f.percentile_metrics,
                    "Comma list of ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue")->capture_default_str();
  serve->add_option("--metric-percentiles", f.metric_percentiles, "Comma list of percentiles, e.g. 50,90,99")->capture_default_str();
  serve->add_option("--goodput", f.goodput, "SLOs as KEY:MS (ttft, tpot, e2el), e.g. --goodput ttft:500 tpot:50");
  serve->add_flag("--save-result", f.save_result, "Write the result JSON");
  serve->add_flag("--save-detailed", f.save_detailed, "Include per-request arrays in the JSON");
  serve->add_flag("--append-result", f.append_result, "Append one JSON line to the result file");
  serve->add_option("--result-dir", f.result_dir, "Directory for the result file");
  serve->add_option("--result-filename", f.result_filename, "Result file name (default: vllm's naming)");
  serve->add_option("--metadata", f.metadata, "KEY=VALUE pairs stored in the result JSON");
  serve->add_option("--extra-body", f.extra_body, "JSON object merged into every request body (overrides keys)");
  serve->add_option("--header", f.headers, "KEY=VALUE request headers");
  serve->add_option("--temperature", f.temperature, "Sent only when given");
  serve->add_option("--top-p", f.top_p, "Sent only when given");
  serve->add_option("--top-k", f.top_k, "Sent only when given");
  serve->add_option("--min-p", f.min_p, "Sent only when given");
  serve->add_option("--frequency-penalty", f.frequency_penalty, "Sent only when given");
  serve->add_option("--presence-penalty", f.presence_penalty, "Sent only when given");
  serve->add_option("--repetition-penalty", f.repetition_penalty, "Sent only when given");
  serve->add_flag("--ignore-eos", f.ignore_eos, "Send ignore_eos=true (on by default for random datasets)");
  serve->add_flag("--profile", f.profile,
                  "POST /start_profile after warmup and /stop_profile after the last request; stores the "
                  "server's summary as server_profile (404: continues without). encbench serve's answer also "
                  "carries its engine timeline (steps and per-request times, drawn by --plot-timeline)");
  serve->add_flag("--scrape-metrics", f.scrape_metrics,
                  "GET /metrics before and after the run; differences in server_metrics_delta");
  serve->add_option("--num-warmups", f.num_warmups, "Untimed copies of the first request sent before the run")->capture_default_str();
  serve->add_option("--ready-check-timeout-sec", f.ready_check_timeout_sec,
                    "Retry the first request every 5 s until it succeeds (0 = skip)")->capture_default_str();
  serve->add_flag("--disable-tqdm", f.disable_tqdm, "No progress bar (it is drawn on stderr only when that is a terminal)");
  serve->add_option("--request-id-prefix", f.request_id_prefix, "x-request-id prefix (default bench-<8 hex>-)");
  serve->add_flag("--disable-shuffle", f.disable_shuffle, "Keep the dataset order");
  serve->add_flag("--no-oversample", f.no_oversample, "Do not duplicate rows when the dataset is short");
}

// random/random-mm lengths, our request mode and the per-request bounds.
void add_random_and_bound_flags(CLI::App* serve, BenchFlags& f) {
  serve->add_option("--random-input-len", f.random_input_len, "random/random-mm: prompt length (words)")->capture_default_str();
  serve->add_option("--random-output-len", f.random_output_len, "random/random-mm: output length")->capture_default_str();
  serve->add_option("--random-range-ratio", f.random_range_ratio,
                    "random/random-mm: lengths uniform in L*(1 +- r); a number or {\"input\": a, \"output\": b}")->capture_default_str();
  serve->add_option("--random-prefix-len", f.random_prefix_len, "random/random-mm: fixed random words before every prompt")->capture_default_str();
  serve->add_option("--random-batch-size", f.random_batch_size, "Accepted (vllm: embeddings benchmark only)")->capture_default_str();
  serve->add_option("--random-mm-base-items-per-request", f.random_mm_base_items, "random-mm: images per request")->capture_default_str();
  serve->add_option("--random-mm-num-mm-items-range-ratio", f.random_mm_items_range_ratio,
                    "random-mm: image count uniform in base*(1 +- r)")->capture_default_str();
  serve->add_option("--random-mm-limit-mm-per-prompt", f.random_mm_limit,
                    "random-mm: per-modality caps as JSON, e.g. {\"image\": 3, \"video\": 0} (a plain number: images)")->capture_default_str();
  serve->add_option("--random-mm-bucket-config", f.random_mm_bucket_config,
                    "random-mm: {(height, width, 1): probability, ...}")->capture_default_str();
  serve->add_option("--request-mode", f.request_mode, "stream | non-stream (non-stream: TTFT = E2EL, no ITL)")->capture_default_str();
  serve->add_option("--timeout", f.timeout, "Per-request timeout in seconds (0 = none)")->capture_default_str();
  serve->add_option("--drain-timeout", f.drain_timeout, "After SIGINT: seconds to wait for in-flight requests")->capture_default_str();
  serve->add_option("--idle-timeout", f.idle_timeout,
                    "Per request: fail it (idle_timeout) after this many seconds with no byte received or sent, "
                    "queue wait and prefill included (0 = none)")
      ->capture_default_str();
  serve->add_option("--max-response-bytes", f.max_response_bytes,
                    "Per request: fail it (response_too_large) past this many bytes received, headers and body "
                    "(256 MiB; a real 32 k-token stream is ~10 MB)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  serve->add_option("--max-output-chunks", f.max_output_chunks,
                    "Per request: fail it (too_many_chunks) past this many choices events kept")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  serve->add_flag("--allow-all-failed", f.allow_all_failed,
                  "Exit 0 even when every request failed (default: exit 4 then; the result is printed and saved either way)");
}

// The flags of `bench serve`, shared by `bench sweep` (the same client at several loads).
void add_serve_flags(CLI::App* serve, BenchFlags& f) {
  add_target_and_dataset_flags(serve, f);
  add_load_flags(serve, f);
  add_result_and_request_flags(serve, f);
  add_random_and_bound_flags(serve, f);
  add_parity_flags(serve, f.parity);
}

// bench serve's flags, as words of its command line, parsed by its own parser (bench sweep
// serve's --bench-cmd with a --bench-params entry applied). Throws InvalidInput with the reason.
client::BenchConfig bench_config_from_words(const std::vector<std::string>& words) {
  CLI::App app;
  BenchFlags flags;
  add_serve_flags(&app, flags);
  std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InvalidInput(std::string(e.what()));
  }
  return to_config(flags, words);
}

void add_bench_command(CLI::App& app, CommandContext& ctx) {
  auto* bench = app.add_subcommand("bench", "Serving benchmarks (bench serve: a drop-in for `vllm bench serve`)");
  bench->require_subcommand(1);
  auto* serve = bench->add_subcommand("serve", "Benchmark an OpenAI-compatible server (vllm bench serve flags, same output)");
  auto flags = std::make_shared<BenchFlags>();
  add_serve_flags(serve, *flags);
  serve->footer(
      "Sharded load generation: started by mpirun (mpirun -np N [--hostfile F] encbench bench serve <flags>), every rank\n"
      "builds the same schedule, sends the requests with index % N == rank from a common start, and rank 0 prints and\n"
      "writes the result computed from the merged records (JSON key \"sharding\": ranks, hosts, per-rank lag and CPU).\n"
      "Needs a build with MPI (ENCBENCH_MPI=AUTO|ON); see docs/client.md.");
  serve->callback([&ctx, flags] { ctx.action = [&ctx, flags] { return run_serve(*flags, ctx.argv); }; });

  auto* sweep = bench->add_subcommand(
      "sweep", "bench serve at several loads against one live server: --sweep request-rate=50,100,200 (or "
               "max-concurrency=...), every bench serve flag; stops early once the server is over-saturated "
               "(achieved < 95 % of offered, or a growing client queue); --slo gives each point's goodput and the "
               "highest load meeting it; versioned JSON + HTML curves");
  auto sweep_flags = std::make_shared<BenchFlags>();
  add_serve_flags(sweep, *sweep_flags);
  auto sweep_only = std::make_shared<SweepFlags>();
  sweep->add_option("--sweep", sweep_only->sweep, "request-rate=a,b,... or max-concurrency=a,b,... (increasing; required)");
  sweep->add_option("--slo", sweep_only->slo, "e.g. 'ttft_p99<=2000,tpot_p99<=300' (as encbench run --slo)");
  sweep->add_option("--capacity-bisections", sweep_only->bisections,
                    "Bisection runs between the last load meeting --slo and the first failing it (default 3)")
      ->check(CLI::Range(0, 20));
  sweep->add_option("--sweep-result", sweep_only->result, "Sweep JSON path (default <result-dir or .>/sweep-<label>.json; "
                                                         "the HTML page goes beside it)");
  // bench sweep serve (cmd_bench_sweep_serve.cpp): vLLM's `bench sweep serve`, server configurations x loads.
  auto* sweep_serve = sweep->add_subcommand(
      "serve", "vLLM's `bench sweep serve`: --serve-params x --bench-params combinations (vLLM's JSON files, unchanged), "
               "each round on a freshly started server, rounds interleaved across configurations in a balanced "
               "random order; per configuration its load curve, capacity at --slo and start-up time; at each load "
               "every configuration judged against the best, the Pareto fronts; versioned JSON + HTML (docs/sweep.md)");
  auto sweep_serve_flags = std::make_shared<SweepServeFlags>();
  add_sweep_serve_flags(sweep_serve, *sweep_serve_flags);
  sweep_serve->callback([&ctx, sweep_serve_flags] {
    ctx.action = [&ctx, sweep_serve_flags] {
      return run_sweep_serve(*sweep_serve_flags, bench_config_from_words, ctx.argv);
    };
  });
  sweep->callback([&ctx, sweep, sweep_serve, sweep_flags, sweep_only] {
    if (sweep->got_subcommand(sweep_serve)) return;  // its own action
    ctx.action = [&ctx, sweep_flags, sweep_only] { return run_sweep(*sweep_flags, *sweep_only, ctx.argv); };
  });

  // bench multi-turn (cmd_bench_multi_turn.cpp): each row's conversation as a session.
  auto* mt = bench->add_subcommand(
      "multi-turn", "Each dataset row's conversation as a session (VisionArena-Chat, ShareGPT): a turn after the "
                    "previous answer plus --think-time, the history re-sent, --max-concurrency counted in sessions; "
                    "TTFT of first turns apart from later turns (docs/client.md)");
  auto mt_flags = std::make_shared<BenchFlags>();
  add_serve_flags(mt, *mt_flags);
  auto mt_only = std::make_shared<MultiTurnFlags>();
  add_multi_turn_flags(mt, *mt_only);
  mt->callback([&ctx, mt_flags, mt_only] {
    ctx.action = [&ctx, mt_flags, mt_only] { return run_bench_multi_turn(to_config(*mt_flags, ctx.argv), *mt_only); };
  });

  // bench ab (cmd_bench_ab.cpp): two servers in interleaved rounds, every bench serve workload flag.
  auto* ab = bench->add_subcommand(
      "ab", "A/B of two OpenAI-compatible servers in interleaved ABBA rounds, each on a freshly started server "
            "(--arm NAME=COMMAND with {port}, or NAME=URL): pooled Before/After table, verdict, minimum detectable "
            "effect, --plan; every bench serve workload flag; versioned JSON + HTML (docs/ab.md)");
  auto ab_flags = std::make_shared<BenchFlags>();
  add_serve_flags(ab, *ab_flags);
  auto ab_only = std::make_shared<BenchAbFlags>();
  add_bench_ab_flags(ab, *ab_only);
  ab->callback([&ctx, ab, ab_flags, ab_only] {
    ctx.action = [&ctx, ab, ab_flags, ab_only] { return run_bench_ab(to_config(*ab_flags, ctx.argv), *ab_only, *ab, ctx.argv); };
  });
}

}  // namespace encbench::cli
