#include "reports/result.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"

namespace encbench::reports {

using nlohmann::json;

bool deterministic_by_name(const std::string& name) {
  // A virtual-clock figure whose host time was measured on this machine (--virtual-host-time cpu)
  // is a measurement: it carries "measured_host" in its name and gets the wall-clock rules.
  if (name.find("measured_host") != std::string::npos) return false;
  return name.find("instructions") != std::string::npos || name.find("virtual") != std::string::npos ||
         name.find("device_memory") != std::string::npos || name.find("bytes_allocated") != std::string::npos;
}

std::string to_string(ResultKind kind) {
  switch (kind) {
    case ResultKind::serving: return "serving";
    case ResultKind::encode: return "encode";
    case ResultKind::ab: return "ab";
    case ResultKind::gbench: return "gbench";
    case ResultKind::preset_ab: return "preset-ab";
  }
  return "?";
}

std::string to_string(Better better) {
  switch (better) {
    case Better::lower: return "lower";
    case Better::higher: return "higher";
    case Better::none: return "none";
  }
  return "none";
}

std::string to_string(MetricGroup group) {
  switch (group) {
    case MetricGroup::throughput: return "throughput";
    case MetricGroup::latency: return "latency";
    case MetricGroup::device: return "device";
    case MetricGroup::exact: return "exact";
    case MetricGroup::info: return "info";
  }
  return "info";
}

std::string group_title(MetricGroup group) {
  switch (group) {
    case MetricGroup::throughput: return "Throughput";
    case MetricGroup::latency: return "Latency";
    case MetricGroup::device: return "Device and host";
    case MetricGroup::exact: return "Exact checks";
    case MetricGroup::info: return "Other";
  }
  return "Other";
}

const Metric* RunResult::find(const std::string& name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

double statistic_of(const Metric& metric, const std::vector<double>& samples) {
  switch (metric.statistic) {
    case Statistic::mean: return stats::mean(samples);
    case Statistic::median: return stats::median(samples);
    case Statistic::percentile: return stats::percentile(samples, metric.percentile_q);
    case Statistic::point: return stats::median(samples);
  }
  return 0;
}

namespace {

std::string string_or(const json& doc, const char* key, const std::string& fallback = "") {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

bool is_number(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_number();
}

std::vector<double> number_list(const json& value, const std::string& what, const std::string& source) {
  std::vector<double> out;
  if (value.is_null()) return out;
  require(value.is_array(), source + ": '" + what + "' must be a list of numbers");
  out.reserve(value.size());
  for (const auto& v : value) {
    require(v.is_number(), source + ": '" + what + "' must contain only numbers");
    out.push_back(v.get<double>());
  }
  return out;
}

// "99" for 99.0, "99.9" for 99.9: vllm's label convention.
std::string percentile_word(double q) {
  if (q == std::floor(q)) return std::to_string(static_cast<long long>(q));
  std::ostringstream s;
  s << q;
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// serving (vllm bench serve --save-result, encbench bench serve)

// vllm's percentile keys: "p{P}_{series}_ms" with P like 99 or 99.9.
bool parse_percentile_key(const std::string& k, const std::string& series, double& q) {
  const std::string suffix = "_" + series + "_ms";
  if (k.size() <= suffix.size() + 1 || k[0] != 'p' || !k.ends_with(suffix)) return false;
  const std::string number = k.substr(1, k.size() - 1 - suffix.size());
  if (number.empty() || number.front() == '.' || number.back() == '.') return false;
  int dots = 0;
  for (char ch : number) {
    if (ch == '.') ++dots;
    else if (ch < '0' || ch > '9') return false;
  }
  if (dots > 1) return false;
  q = std::stod(number);
  return q >= 0 && q <= 100;
}

struct ServingSeries {
  const char* key;      // vllm metric key part: ttft, tpot, itl, e2el, ...
  const char* display;  // TTFT, TPOT, ...
};
constexpr ServingSeries kServingSeries[] = {
    {"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2el", "E2EL"},
    {"client_queue_time", "Client Queue Time"},
    {"e2el_including_client_queue", "E2EL incl. Client Queue"}};

}  // namespace

std::map<std::string, std::vector<double>> per_request_samples_ms(const json& doc, const std::string& source) {
  std::map<std::string, std::vector<double>> out;
  const auto ttfts = number_list(doc.value("ttfts", json()), "ttfts", source);
  const auto latencies = number_list(doc.value("latencies", json()), "latencies", source);
  const auto output_lens = number_list(doc.value("output_lens", json()), "output_lens", source);
  const auto queue_times = number_list(doc.value("queue_times", json()), "queue_times", source);
  const std::size_t n = std::max(ttfts.size(), latencies.size());
  std::vector<bool> ok(n, true);
  if (auto e = doc.find("errors"); e != doc.end() && e->is_array()) {
    for (std::size_t i = 0; i < n && i < e->size(); ++i)
      ok[i] = (*e)[i].is_null() || ((*e)[i].is_string() && (*e)[i].get<std::string>().empty());
  } else if (doc.value("failed", 0) > 0 && latencies.size() == n) {
    // Without the error list, a failed request shows as a zero latency.
    for (std::size_t i = 0; i < n; ++i) ok[i] = latencies[i] > 0;
  }
  for (std::size_t i = 0; i < ttfts.size(); ++i)
    if (ok[i]) out["ttft"].push_back(ttfts[i] * 1e3);
  for (std::size_t i = 0; i < latencies.size(); ++i)
    if (ok[i]) out["e2el"].push_back(latencies[i] * 1e3);
  if (ttfts.size() == n && latencies.size() == n && output_lens.size() == n) {
    for (std::size_t i = 0; i < n; ++i)
      if (ok[i] && output_lens[i] > 1)
        out["tpot"].push_back((latencies[i] - ttfts[i]) * 1e3 / (output_lens[i] - 1));
  }
  if (auto itls = doc.find("itls"); itls != doc.end() && itls->is_array()) {
    for (std::size_t i = 0; i < itls->size(); ++i) {
      if (i < ok.size() && !ok[i]) continue;
      for (double v : number_list((*itls)[i], "itls", source)) out["itl"].push_back(v * 1e3);
    }
  }
  if (queue_times.size() == n) {
    for (std::size_t i = 0; i < n; ++i)
      if (ok[i]) out["client_queue_time"].push_back(queue_times[i] * 1e3);
  }
  return out;
}

namespace {

std::string canonical_number(const json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) {
    std::ostringstream s;
    s << v.get<double>();
    return s.str();
  }
  return v.dump();
}

std::string dataset_of(const json& doc) {
  for (const char* key : {"dataset", "dataset_name", "dataset_path", "hf_name"}) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) continue;
    if (it->is_object()) {
      for (const char* inner : {"name", "path", "id"})
        if (it->contains(inner)) return string_or(*it, inner);
      return it->dump();
    }
    return string_or(doc, key);
  }
  return "";
}

std::string device_of(const json& doc) {
  if (auto d = doc.find("device"); d != doc.end()) {
    if (d->is_string()) return d->get<std::string>();
    if (d->is_object() && d->contains("kind")) return string_or(*d, "kind");
  }
  if (auto m = doc.find("machine"); m != doc.end() && m->is_object())
    return string_or(*m, "device_kind");
  return "";
}

// One number of `doc` as a metric without samples, named prefix + key; absent or not a number:
// no metric.
void add_point_metric(RunResult& r, const json& doc, const char* key, const std::string& prefix,
                      const std::string& label, const char* unit, MetricGroup group, Better better) {
  if (!doc.is_object() || !is_number(doc, key)) return;
  Metric m;
  m.name = prefix + key;
  m.label = label;
  m.unit = unit;
  m.group = group;
  m.better = better;
  m.value = doc[key].get<double>();
  r.metrics.push_back(std::move(m));
}

void read_envelope(const json& doc, RunResult& r) {
  r.git_sha = string_or(doc, "git_sha");
  r.created_utc = string_or(doc, "created_utc", string_or(doc, "date"));
  if (auto m = doc.find("machine"); m != doc.end() && m->is_object()) r.machine = *m;
}

RunResult parse_serving(const json& doc, const std::string& source) {
  RunResult r;
  r.kind = ResultKind::serving;
  r.source = source;
  r.producer = string_or(doc, "schema") == "encbench-serve-bench" ? "encbench" : "vllm";
  read_envelope(doc, r);
  r.identity.model = string_or(doc, "model_id", string_or(doc, "model"));
  // The server's device when the server said it (encbench serve), else the envelope's.
  r.identity.device = string_or(doc, "server_device", device_of(doc));
  r.identity.dataset = dataset_of(doc);
  {
    std::ostringstream s;
    s << "backend=" << string_or(doc, "backend", "?")
      << " num_prompts=" << canonical_number(doc.value("num_prompts", json()))
      << " request_rate=" << canonical_number(doc.value("request_rate", json()))
      << " burstiness=" << canonical_number(doc.value("burstiness", json()))
      << " max_concurrency=" << canonical_number(doc.value("max_concurrency", json()));
    if (doc.contains("scenario")) {
      const auto& sc = doc["scenario"];
      s << " scenario=" << (sc.is_object() && sc.contains("name") ? string_or(sc, "name")
                                                                    : canonical_number(sc));
    }
    r.identity.scenario = s.str();
  }

  auto point = [&](const char* key, const char* label, const char* unit, MetricGroup group,
                   Better better) { add_point_metric(r, doc, key, "", label, unit, group, better); };
  point("request_throughput", "Request throughput (req/s)", "req/s", MetricGroup::throughput, Better::higher);
  point("request_goodput", "Request goodput (req/s)", "req/s", MetricGroup::throughput, Better::higher);
  point("output_throughput", "Output token throughput (tok/s)", "tok/s", MetricGroup::throughput, Better::higher);
  point("total_token_throughput", "Total token throughput (tok/s)", "tok/s", MetricGroup::throughput, Better::higher);
  point("max_output_tokens_per_s", "Peak output token throughput (tok/s)", "tok/s", MetricGroup::throughput, Better::higher);
  point("duration", "Benchmark duration (s)", "s", MetricGroup::latency, Better::lower);
  // encbench's vision keys (harness/client/vision_metrics.hpp), shown for runs that sent images;
  // informational, so no gate watches them unless a gate file names them.
  if (doc.value("images_sent", 0) > 0) {
    point("image_throughput", "Image throughput (images/s)", "images/s", MetricGroup::info, Better::higher);
    point("mean_image_pixels", "Mean image pixels per request", "px", MetricGroup::info, Better::none);
    point("mean_request_bytes", "Mean request bytes", "B", MetricGroup::info, Better::none);
    point("mean_vision_tokens", "Mean vision tokens per request", "tok", MetricGroup::info, Better::none);
  }

  const auto samples = per_request_samples_ms(doc, source);
  for (const auto& series : kServingSeries) {
    const std::string key = series.key;
    auto it = samples.find(key);
    const std::vector<double>* series_samples = it == samples.end() ? nullptr : &it->second;
    auto add = [&](const std::string& name, const std::string& label, Statistic statistic, double q) {
      if (!is_number(doc, name.c_str())) return;
      Metric m;
      m.name = name;
      m.label = label;
      m.unit = "ms";
      m.group = MetricGroup::latency;
      m.better = Better::lower;
      m.value = doc[name].get<double>();
      m.statistic = statistic;
      m.percentile_q = q;
      if (series_samples && series_samples->size() >= 2) {
        m.samples = *series_samples;
        m.sample_kind = key == "itl" ? "itl chunks" : "requests";
      }
      r.metrics.push_back(std::move(m));
    };
    add("mean_" + key + "_ms", std::string("Mean ") + series.display + " (ms)", Statistic::mean, 0);
    add("median_" + key + "_ms", std::string("Median ") + series.display + " (ms)", Statistic::median, 0);
    // Every percentile the file carries for this series, in ascending order.
    std::vector<std::pair<double, std::string>> pkeys;
    for (const auto& [k, v] : doc.items()) {
      double q = 0;
      if (v.is_number() && parse_percentile_key(k, key, q)) pkeys.emplace_back(q, k);
    }
    std::sort(pkeys.begin(), pkeys.end());
    for (const auto& [q, k] : pkeys) {
      // (a stream, not operator+: GCC 12 warns falsely about -Wrestrict on "P" + ...)
      std::ostringstream label;
      label << 'P' << percentile_word(q) << ' ' << series.display << " (ms)";
      add(k, label.str(), Statistic::percentile, q);
    }
  }
  point("failed", "Failed requests", "", MetricGroup::exact, Better::lower);
  point("completed", "Successful requests", "", MetricGroup::info, Better::higher);
  point("total_input_tokens", "Total input tokens", "", MetricGroup::info, Better::none);
  point("total_output_tokens", "Total generated tokens", "", MetricGroup::info, Better::none);
  point("max_concurrent_requests", "Peak concurrent requests", "", MetricGroup::info, Better::none);
  require(r.find("completed") != nullptr || r.find("request_throughput") != nullptr,
          source + ": serving result without 'completed' or 'request_throughput'");
  return r;
}

// ---------------------------------------------------------------------------------------------
// encode / ab

struct EncodeSeries {
  const char* key;
  const char* display;
  const char* unit;
  MetricGroup group;
};
constexpr EncodeSeries kEncodeSeries[] = {
    {"forward_ms", "forward", "ms", MetricGroup::latency},
    {"device_busy_ms", "device busy", "ms", MetricGroup::device},
    {"idle_fraction", "idle fraction", "", MetricGroup::device},
};

// The encode result's single numbers: syncs, host time per layer, device memory.
void add_encode_scalars(const json& summary, const std::string& prefix, const std::string& label_prefix, RunResult& r) {
  auto scalar = [&](const char* key, const std::string& label, const char* unit, MetricGroup group, Better better) {
    const json v = summary.value(key, json());
    double value = 0;
    if (v.is_number()) value = v.get<double>();
    else if (v.is_object() && v.contains("mean") && v["mean"].is_number()) value = v["mean"].get<double>();
    else return;
    Metric m;
    m.name = prefix + key;
    m.label = label_prefix + label;
    m.unit = unit;
    m.group = group;
    m.better = better;
    m.value = value;
    r.metrics.push_back(std::move(m));
  };
  scalar("syncs_per_forward", "Syncs per forward", "", MetricGroup::exact, Better::lower);
  scalar("host_us_per_layer", "Host time per layer (us)", "us", MetricGroup::device, Better::lower);
  // Device memory: the allocator's accounting, independent of timing (deterministic).
  scalar("peak_device_memory_bytes", "Peak device memory (B)", "B", MetricGroup::device, Better::lower);
  scalar("peak_device_memory_reserved_bytes", "Peak device memory reserved (B)", "B", MetricGroup::device,
         Better::lower);
  scalar("bytes_allocated_per_forward", "Bytes allocated per forward (B)", "B", MetricGroup::device, Better::lower);
}

// The accuracy guard's verdict (exact) and its largest relative error (info).
void add_encode_accuracy(const json& doc, const std::string& prefix, const std::string& label_prefix, RunResult& r) {
  if (auto acc = doc.find("accuracy"); acc != doc.end() && acc->is_object()) {
    if (acc->contains("verdict")) {
      Metric m;
      m.name = prefix + "accuracy.verdict";
      m.label = label_prefix + "Accuracy verdict";
      m.group = MetricGroup::exact;
      m.text = string_or(*acc, "verdict");
      r.metrics.push_back(std::move(m));
    }
    if (acc->contains("max_rel_error") && (*acc)["max_rel_error"].is_number()) {
      Metric m;
      m.name = prefix + "accuracy.max_rel_error";
      m.label = label_prefix + "Max relative error";
      m.group = MetricGroup::info;
      m.better = Better::lower;
      m.value = (*acc)["max_rel_error"].get<double>();
      r.metrics.push_back(std::move(m));
    }
  }
}

void parse_encode_body(const json& doc, const std::string& prefix, const std::string& label_prefix,
                       const std::string& source, RunResult& r) {
  const json samples = doc.value("samples", json::object());
  const json summary = doc.value("summary", json::object());
  require(samples.is_object() && summary.is_object(),
          source + ": encode result: 'samples' and 'summary' must be objects");
  require(!summary.empty() || !samples.empty(),
          source + ": encode result without 'summary' or 'samples'");
  // Times on the sim device's virtual clock with modelled host time (the default) are a function
  // of code, model files and inputs: they are also reported as virtual_<series> (median), judged
  // as deterministic, while <series> keeps the wall-clock-style U test and thresholds. With host
  // time measured on this machine ("host_time": "measured", --virtual-host-time cpu) they are a
  // measurement: virtual_<series>_measured_host, judged like wall-clock data.
  const bool virtual_clock = string_or(doc, "clock") == "virtual" ||
                             (doc.contains("device") && doc["device"].is_object() &&
                              string_or(doc["device"], "clock") == "virtual");
  const bool measured_host = string_or(doc, "host_time") == "measured" ||
                             // results from before host models: the virtual clock's host time was CPU time
                             (virtual_clock && !doc.contains("host_time"));
  for (const auto& series : kEncodeSeries) {
    const std::vector<double> xs = number_list(samples.value(series.key, json()), series.key, source);
    if (virtual_clock && std::string(series.unit) == "ms" && !xs.empty()) {
      Metric m;
      m.name = prefix + "virtual_" + series.key + (measured_host ? "_measured_host" : "") + ".median";
      m.label = label_prefix + "Median " + series.display + ", virtual clock" +
                (measured_host ? " with MEASURED host time (" : " (") + series.unit + ")";
      m.unit = series.unit;
      m.group = series.group;
      m.better = Better::lower;
      m.statistic = Statistic::median;
      if (xs.size() >= 2) {
        m.samples = xs;
        m.sample_kind = "forwards";
      }
      m.value = statistic_of(m, xs);
      r.metrics.push_back(std::move(m));
    }
    const json sum = summary.value(series.key, json());
    const std::string unit_suffix = std::string(series.unit).empty() ? "" : std::string(" (") + series.unit + ")";
    auto add = [&](const std::string& stat_name, const std::string& label, Statistic statistic, double q,
                   std::optional<double> reported) {
      Metric m;
      m.name = prefix + series.key + (stat_name.empty() ? "" : "." + stat_name);
      m.label = label_prefix + label + unit_suffix;
      m.unit = series.unit;
      m.group = series.group;
      m.better = Better::lower;
      m.statistic = statistic;
      m.percentile_q = q;
      if (xs.size() >= 2) {
        m.samples = xs;
        m.sample_kind = "forwards";
      }
      if (reported) m.value = *reported;
      else if (!xs.empty()) m.value = statistic_of(m, xs);
      else return;
      r.metrics.push_back(std::move(m));
    };
    auto from_summary = [&](const char* key) -> std::optional<double> {
      if (sum.is_object() && sum.contains(key) && sum[key].is_number()) return sum[key].get<double>();
      return std::nullopt;
    };
    std::string display = series.display;
    std::string cap = display;
    cap[0] = static_cast<char>(std::toupper(cap[0]));
    if (sum.is_number()) {
      // A single summary number: the mean of the per-forward samples.
      add("mean", "Mean " + display, Statistic::mean, 0, sum.get<double>());
    } else if (!xs.empty() || sum.is_object()) {
      if (!xs.empty() || from_summary("mean")) add("mean", "Mean " + display, Statistic::mean, 0, from_summary("mean"));
      if (!xs.empty() || from_summary("median")) add("median", "Median " + display, Statistic::median, 0, from_summary("median"));
      if (!xs.empty() || from_summary("p99")) add("p99", "P99 " + display, Statistic::percentile, 99, from_summary("p99"));
    }
  }
  add_encode_scalars(summary, prefix, label_prefix, r);
  add_encode_accuracy(doc, prefix, label_prefix, r);
}

std::string model_of(const json& doc) {
  auto it = doc.find("model");
  if (it == doc.end() || it->is_null()) return "";
  if (it->is_object()) return string_or(*it, "name", it->dump());
  return string_or(doc, "model");
}

std::string encode_scenario(const json& doc) {
  std::ostringstream s;
  s << "preset=" << string_or(doc, "preset", "none");
  if (doc.contains("inputs")) s << " inputs=" << doc["inputs"].dump();
  if (doc.contains("scenario")) s << " scenario=" << canonical_number(doc["scenario"]);
  return s.str();
}

RunResult parse_encode(const json& doc, const std::string& source) {
  RunResult r;
  r.kind = ResultKind::encode;
  r.source = source;
  r.producer = "encbench";
  read_envelope(doc, r);
  r.identity.model = model_of(doc);
  r.identity.device = device_of(doc);
  r.identity.dataset = doc.contains("inputs") && doc["inputs"].is_object() ? dataset_of(doc["inputs"]) : "";
  r.identity.scenario = encode_scenario(doc);
  parse_encode_body(doc, "", "", source, r);
  return r;
}

RunResult parse_ab(const json& doc, const std::string& source) {
  RunResult r;
  r.kind = ResultKind::ab;
  r.source = source;
  r.producer = "encbench";
  read_envelope(doc, r);
  require(doc.contains("a") && doc["a"].is_object() && doc.contains("b") && doc["b"].is_object(),
          source + ": ab result needs objects 'a' and 'b'");
  const json& a = doc["a"];
  const json& b = doc["b"];
  r.identity.model = model_of(a);
  require(model_of(b) == r.identity.model,
          source + ": ab result compares different models ('" + model_of(a) + "' vs '" + model_of(b) + "')");
  r.identity.device = device_of(a).empty() ? device_of(doc) : device_of(a);
  r.identity.dataset = a.contains("inputs") && a["inputs"].is_object() ? dataset_of(a["inputs"]) : "";
  r.identity.scenario = encode_scenario(a) + " | b: " + encode_scenario(b);
  parse_encode_body(a, "a.", "A: ", source, r);
  parse_encode_body(b, "b.", "B: ", source, r);
  // B's speedup over A on the median forward time (> 1: B faster).
  const Metric* ma = r.find("a.forward_ms.median");
  const Metric* mb = r.find("b.forward_ms.median");
  if (ma && mb && mb->value > 0) {
    Metric m;
    m.name = "speedup_b_over_a";
    m.label = "Speedup B over A (median forward)";
    m.unit = "x";
    m.group = MetricGroup::throughput;
    m.better = Better::higher;
    m.value = ma->value / mb->value;
    r.metrics.push_back(std::move(m));
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Google Benchmark

double to_ns(double value, const std::string& unit) {
  if (unit == "ns" || unit.empty()) return value;
  if (unit == "us") return value * 1e3;
  if (unit == "ms") return value * 1e6;
  if (unit == "s") return value * 1e9;
  throw InvalidInput("unknown Google Benchmark time_unit '" + unit + "'");
}

bool is_rate_counter(const std::string& name) {
  return name.find("per_second") != std::string::npos || name.find("per_s") != std::string::npos ||
         name.find("/s") != std::string::npos || name.find("throughput") != std::string::npos ||
         name.find("GBps") != std::string::npos || name.find("FLOPS") != std::string::npos ||
         name.find("flops") != std::string::npos;
}

// The rows of one benchmark (run_name): its repetitions, aggregates and user counters.
struct GbenchRows {
  std::vector<double> real, cpu;
  std::map<std::string, std::vector<double>> counters;
  std::map<std::string, double> aggregate_real, aggregate_cpu;  // by aggregate_name
  std::vector<std::string> counter_order;
};

// One benchmark's metrics: real and cpu time (ns, median of the repetitions) and its counters.
void add_gbench_metrics(const std::string& name, const GbenchRows& s, RunResult& r) {
  auto add_time = [&](const char* which, const std::vector<double>& xs,
                      const std::map<std::string, double>& agg) {
    Metric m;
    m.name = name + "/" + which;
    m.label = name + " " + which + " (ns)";
    m.unit = "ns";
    m.group = MetricGroup::latency;
    m.better = Better::lower;
    m.statistic = Statistic::median;
    if (!xs.empty()) {
      m.value = stats::median(xs);
      if (xs.size() >= 2) {
        m.samples = xs;
        m.sample_kind = "repetitions";
      }
    } else if (agg.count("median")) {
      m.value = agg.at("median");
    } else if (agg.count("mean")) {
      m.value = agg.at("mean");
    } else {
      return;
    }
    r.metrics.push_back(std::move(m));
  };
  add_time("real_time", s.real, s.aggregate_real);
  add_time("cpu_time", s.cpu, s.aggregate_cpu);
  for (const auto& counter : s.counter_order) {
    const auto& xs = s.counters.at(counter);
    Metric m;
    m.name = name + "/" + counter;
    m.label = name + " " + counter;
    const bool rate = is_rate_counter(counter);
    // Instruction counts and virtual-clock times are costs: lower is better, gated.
    const bool deterministic = !rate && deterministic_by_name(counter);
    m.group = rate ? MetricGroup::throughput : deterministic ? MetricGroup::latency : MetricGroup::info;
    m.better = rate ? Better::higher : deterministic ? Better::lower : Better::none;
    if (deterministic && counter.find("instructions") != std::string::npos) m.unit = "instructions";
    if (deterministic && counter.find("_ms") != std::string::npos) m.unit = "ms";
    m.statistic = Statistic::median;
    m.value = stats::median(xs);
    if (xs.size() >= 2) {
      m.samples = xs;
      m.sample_kind = "repetitions";
    }
    r.metrics.push_back(std::move(m));
  }
}

RunResult parse_gbench(const json& doc, const std::string& source) {
  static const std::set<std::string> kKnown = {
      "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
      "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
      "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "skipped",
      "skip_message", "label", "big_o", "cpu_coefficient", "real_coefficient", "rms",
      "allocs_per_iter", "max_bytes_used"};
  RunResult r;
  r.kind = ResultKind::gbench;
  r.source = source;
  r.producer = "google-benchmark";
  const json context = doc.value("context", json::object());
  r.created_utc = string_or(context, "date");
  r.machine = json::object();
  for (const char* key : {"host_name", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled",
                          "library_build_type", "load_avg"})
    if (context.contains(key)) r.machine[key] = context[key];
  const std::string exe = string_or(context, "executable");
  r.identity.scenario = exe.empty() ? "" : std::filesystem::path(exe).filename().string();

  std::vector<std::string> order;
  std::map<std::string, GbenchRows> by_name;
  for (const auto& row : doc["benchmarks"]) {
    require(row.is_object() && row.contains("name"), source + ": a benchmarks[] entry has no name");
    if (row.value("error_occurred", false) || row.value("skipped", false)) {
      r.notes.push_back(source + ": " + string_or(row, "name") + " errored or was skipped");
      continue;
    }
    const std::string run_type = row.value("run_type", std::string("iteration"));
    // Complexity rows (big_o, rms) are skipped; iteration rows without times (encbench-instr:
    // instruction counts only) keep their counters.
    const bool timed = row.contains("real_time") && row.contains("cpu_time");
    if (!timed && (run_type != "iteration" || row.contains("big_o") || row.contains("rms"))) continue;
    const std::string name = string_or(row, "run_name", string_or(row, "name"));
    if (!by_name.count(name)) order.push_back(name);
    GbenchRows& s = by_name[name];
    const std::string unit = row.value("time_unit", std::string("ns"));
    if (run_type == "aggregate") {
      if (row.value("aggregate_unit", std::string("time")) != "time") continue;
      const std::string agg = string_or(row, "aggregate_name");
      s.aggregate_real[agg] = to_ns(row["real_time"].get<double>(), unit);
      s.aggregate_cpu[agg] = to_ns(row["cpu_time"].get<double>(), unit);
      continue;
    }
    if (timed) {
      s.real.push_back(to_ns(row["real_time"].get<double>(), unit));
      s.cpu.push_back(to_ns(row["cpu_time"].get<double>(), unit));
    }
    for (const auto& [k, v] : row.items()) {
      if (kKnown.count(k) || !v.is_number()) continue;
      if (!s.counters.count(k)) s.counter_order.push_back(k);
      s.counters[k].push_back(v.get<double>());
    }
  }
  require(!order.empty(), source + ": Google Benchmark JSON without usable benchmarks");
  for (const auto& name : order) add_gbench_metrics(name, by_name[name], r);
  return r;
}

// ---------------------------------------------------------------------------------------------
// preset A/B (`encbench run`)

// The virtual clock's encoder figures of one arm, summed over its seeds: deterministic (the names
// carry "virtual"), so a change of one commit is judged exactly, without noise.
void add_virtual_engine_metrics(RunResult& r, const json& arm, const std::string& prefix, const std::string& label_prefix) {
  double busy = 0, idle = 0, syncs = 0, steps = 0;
  for (const json& seed : arm["seeds"]) {
    const json engine = seed.value("engine", json::object());
    busy += engine.value("encoder_device_busy_ms", 0.0);
    idle += engine.value("encoder_device_idle_ms", 0.0);
    syncs += engine.value("encoder_syncs", 0.0);
    steps += engine.value("encoder_steps", 0.0);
  }
  const json delta = {{"virtual_encoder_idle_pct", busy + idle > 0 ? 100.0 * idle / (busy + idle) : 0.0},
                      {"virtual_encoder_busy_ms", busy},
                      {"syncs_per_forward", steps > 0 ? syncs / steps : 0.0}};
  add_point_metric(r, delta, "syncs_per_forward", prefix, label_prefix + "Encoder syncs per forward", "",
                   MetricGroup::exact, Better::lower);
  add_point_metric(r, delta, "virtual_encoder_idle_pct", prefix, label_prefix + "Encoder device idle, modelled (%)",
                   "%", MetricGroup::device, Better::lower);
  add_point_metric(r, delta, "virtual_encoder_busy_ms", prefix, label_prefix + "Encoder device busy, modelled (ms)",
                   "ms", MetricGroup::device, Better::lower);
}

RunResult parse_preset_ab(const json& doc, const std::string& source) {
  RunResult r;
  r.kind = ResultKind::preset_ab;
  r.source = source;
  r.producer = "encbench";
  read_envelope(doc, r);
  const json scenario = doc.value("scenario", json::object());
  require(scenario.is_object(), source + ": preset A/B result: 'scenario' must be an object");
  require(doc.contains("arms") && doc["arms"].is_array() && !doc["arms"].empty(),
          source + ": preset A/B result needs a non-empty 'arms' list");
  r.identity.model = string_or(scenario, "model");
  r.identity.device = string_or(scenario, "device", device_of(doc));
  // The generated sample is defined by its size, image shape and seed (its path is not).
  {
    std::ostringstream d;
    d << "vision-arena-bench num=" << canonical_number(scenario.value("num_prompts", json()))
      << " image=" << canonical_number(scenario.value("image_width", json())) << "x"
      << canonical_number(scenario.value("image_height", json()))
      << " seed=" << canonical_number(scenario.value("seed", json()));
    r.identity.dataset = d.str();
    std::ostringstream sc;
    sc << "presets=" << scenario.value("presets", json::array()).dump()
       << " request_rate=" << canonical_number(scenario.value("request_rate", json()))
       << " burstiness=" << canonical_number(scenario.value("burstiness", json()))
       << " output_len=" << canonical_number(scenario.value("output_len", json()))
       << " max_num_seqs=" << canonical_number(scenario.value("max_num_seqs", json()))
       << " max_num_batched_tokens=" << canonical_number(scenario.value("max_num_batched_tokens", json()))
       << " encoder_mlp=" << canonical_number(scenario.value("encoder_mlp", json()))
       << " profile=" << canonical_number(scenario.value("profile", json()));
    r.identity.scenario = sc.str();
  }
  const json& arms = doc["arms"];
  for (std::size_t i = 0; i < arms.size(); ++i) {
    const json& arm = arms[i];
    const std::string what = source + ": arms[" + std::to_string(i) + "]";
    // Version 2 (interleaved rounds): 'rounds', each with its own 'serving', pooled here as a
    // directory of runs is; version 3 (virtual clock): 'seeds', the same shape; version 1: one
    // 'serving'.
    const char* repeats = arm.is_object() && arm.contains("seeds") ? "seeds" : "rounds";
    const bool has_rounds = arm.is_object() && arm.contains(repeats) && arm[repeats].is_array() &&
                            !arm[repeats].empty();
    require(arm.is_object() && (has_rounds || (arm.contains("serving") && arm["serving"].is_object())),
            what + " needs a 'serving' object or a non-empty 'rounds' list");
    const std::string preset = string_or(arm, "preset", "?");
    // Arms are named by position, as ab results are: BASE and NEW must list the same presets
    // (the scenario identity checks that), and gate globs stay independent of preset names.
    const std::string prefix = std::string(1, static_cast<char>('a' + i)) + ".";
    const std::string label_prefix =
        std::string(1, static_cast<char>('A' + i)) + " (" + preset + "): ";
    RunResult serving;
    if (has_rounds) {
      std::vector<RunResult> rounds;
      for (std::size_t k = 0; k < arm[repeats].size(); ++k) {
        const json& round = arm[repeats][k];
        const std::string round_what = what + "." + repeats + "[" + std::to_string(k) + "]";
        require(round.is_object() && round.contains("serving") && round["serving"].is_object(),
                round_what + " needs a 'serving' object");
        rounds.push_back(parse_serving(round["serving"], round_what + ".serving"));
      }
      serving = rounds.size() == 1 ? std::move(rounds.front()) : merge_runs(rounds);
    } else {
      serving = parse_serving(arm["serving"], what + ".serving");
    }
    for (Metric& m : serving.metrics) {
      m.name = prefix + m.name;
      m.label = label_prefix + m.label;
      r.metrics.push_back(std::move(m));
    }
    if (std::string_view(repeats) == "seeds") {
      add_virtual_engine_metrics(r, arm, prefix, label_prefix);
      continue;
    }
    const json delta = arm.value("server_engine_delta", json::object());
    auto counter = [&](const char* key, const char* label, const char* unit, MetricGroup group, Better better) {
      add_point_metric(r, delta, key, prefix, label_prefix + label, unit, group, better);
    };
    // A sim device on the real clock: its busy and idle are modelled durations waited out on this
    // machine, so their wall-clock values measure the machine's scheduling too (an A/A comparison
    // of one commit showed idle 5.4 % vs 7.7 %). They are shown, not judged; the virtual clock's
    // run judges the modelled figures (virtual_* metrics, deterministic).
    const bool sim_wall_clock = r.identity.device.rfind("sim:", 0) == 0;
    const MetricGroup device_group = sim_wall_clock ? MetricGroup::info : MetricGroup::device;
    const Better device_better = sim_wall_clock ? Better::none : Better::lower;
    counter("syncs_per_forward", "Encoder syncs per forward", "", MetricGroup::exact, Better::lower);
    counter("idle_pct", "Encoder device idle (%)", "%", device_group, device_better);
    counter("device_busy_ms", "Encoder device busy (ms)", "ms", device_group, device_better);
    counter("encoder_wall_ms", "Encoder wall time (ms)", "ms", device_group, device_better);
    counter("encoder_forwards", "Encoder forwards", "", MetricGroup::info, Better::none);
  }
  return r;
}

// `bench ab`'s own result (encbench-live-ab/1) in the preset A/B shape `run --clock real` writes:
// its arms' rounds (each round's serving result, pooled per arm as rounds are), the arm names as
// the presets, and a scenario from the first round's serving result, so report and compare read
// both alike. Needs two arms with at least one round each.
json preset_ab_from_live_ab(const json& doc, const std::string& source) {
  require(doc.contains("arms") && doc["arms"].is_array() && doc["arms"].size() == 2,
          source + ": bench ab result needs its two 'arms'");
  json out = doc;
  json first_serving;
  for (std::size_t i = 0; i < 2; ++i) {
    json& arm = out["arms"][i];
    const std::string what = source + ": arms[" + std::to_string(i) + "]";
    require(arm.is_object() && arm.contains("rounds") && arm["rounds"].is_array() && !arm["rounds"].empty(),
            what + " finished no round: nothing to compare");
    arm["preset"] = string_or(arm, "name", std::string(1, static_cast<char>('a' + i)));
    if (first_serving.is_null() && arm["rounds"][0].is_object()) first_serving = arm["rounds"][0].value("serving", json());
  }
  require(first_serving.is_object(), source + ": arms[0].rounds[0] needs a 'serving' object");
  out["scenario"] = {{"name", "bench ab"},
                     {"model", string_or(first_serving, "model_id", string_or(first_serving, "model"))},
                     {"device", string_or(first_serving, "server_device", device_of(first_serving))},
                     {"presets", {out["arms"][0]["preset"], out["arms"][1]["preset"]}},
                     {"num_prompts", first_serving.value("num_prompts", json())},
                     {"request_rate", first_serving.value("request_rate", json())},
                     {"burstiness", first_serving.value("burstiness", json())}};
  out["verdict_valid"] = doc.value("invalid_reasons", json::array()).empty();
  return out;
}

}  // namespace

ResultKind detect_kind(const json& doc, const std::string& source) {
  require(doc.is_object(), source + ": not a result object (expected a JSON object at top level)");
  const std::string schema = string_or(doc, "schema");
  if (schema == "encbench-encode") return ResultKind::encode;
  if (schema == "encbench-ab") return ResultKind::ab;
  if (schema == "encbench-serve-bench") return ResultKind::serving;
  if (schema == "encbench-preset-ab") return ResultKind::preset_ab;
  if (schema == "encbench-closed-loop") return ResultKind::preset_ab;  // the legacy name, results before the rename
  // The legacy name (results before the rename), and bench ab's ab.json: interleaved rounds of
  // two arms, read as `run --clock real`'s result is.
  if (schema == "encbench-preset-ab" || schema == "encbench-live-ab") return ResultKind::preset_ab;
  if (!schema.empty())
    throw InvalidInput(source + ": schema '" + schema +
                       "' cannot be compared (expected encbench-encode, encbench-ab, encbench-serve-bench, "
                       "encbench-preset-ab, encbench-live-ab, vllm bench serve or Google Benchmark JSON)");
  if (doc.contains("benchmarks") && doc["benchmarks"].is_array() && doc.contains("context"))
    return ResultKind::gbench;
  if (doc.contains("completed") && (doc.contains("request_throughput") || doc.contains("duration")))
    return ResultKind::serving;
  throw InvalidInput(source +
                     ": unknown result kind (no 'schema', not Google Benchmark JSON (context + "
                     "benchmarks), not vllm bench serve JSON (completed + request_throughput))");
}

RunResult parse_result(const json& doc, const std::string& source) {
  const ResultKind kind = detect_kind(doc, source);
  if (doc.contains("schema_version") && doc["schema_version"].is_number_integer()) {
    // encbench-preset-ab/2 added interleaved rounds, /3 the virtual clock's seeds; every other
    // schema is at version 1.
    const int newest = kind == ResultKind::preset_ab ? 3 : 1;
    const int version = doc["schema_version"].get<int>();
    require(version >= 1 && version <= newest, source + ": schema_version " + doc["schema_version"].dump() +
                                                   " is not supported (1.." + std::to_string(newest) + " are)");
  }
  const bool live_ab = string_or(doc, "schema") == "encbench-live-ab";
  const json shaped = live_ab ? preset_ab_from_live_ab(doc, source) : json();
  RunResult r;
  try {
    switch (kind) {
      case ResultKind::serving: r = parse_serving(doc, source); break;
      case ResultKind::encode: r = parse_encode(doc, source); break;
      case ResultKind::ab: r = parse_ab(doc, source); break;
      case ResultKind::gbench: r = parse_gbench(doc, source); break;
      case ResultKind::preset_ab: r = parse_preset_ab(live_ab ? shaped : doc, source); break;
    }
  } catch (const json::exception& e) {
    throw InvalidInput(source + ": unexpected value in a " + to_string(kind) + " result: " + e.what());
  }
  // A bench ab run's workload is its client's (dataset, load), not run's generated sample.
  if (live_ab) r.identity.dataset = dataset_of(shaped["arms"][0]["rounds"][0]["serving"]);
  r.raw = live_ab ? shaped : doc;
  return r;
}

namespace {
// The published tables' rows, in the seeds' order, with their labels.
constexpr std::pair<const char*, const char*> kServingLabels[] = {
    {"request_throughput", "Request throughput (req/s)"},
    {"duration", "Benchmark duration (s)"},
    {"total_input_tokens", "Total input tokens"},
    {"total_output_tokens", "Total generated tokens"},
    {"output_throughput", "Output token throughput (tok/s)"},
    {"max_output_tokens_per_s", "Peak output token throughput (tok/s)"},
    {"max_concurrent_requests", "Peak concurrent requests"},
    {"mean_ttft_ms", "Mean TTFT (ms)"},
    {"median_ttft_ms", "Median TTFT (ms)"},
    {"p99_ttft_ms", "P99 TTFT (ms)"},
    {"mean_tpot_ms", "Mean TPOT (ms)"},
    {"median_tpot_ms", "Median TPOT (ms)"},
    {"p99_tpot_ms", "P99 TPOT (ms)"},
    {"mean_itl_ms", "Mean ITL (ms)"},
    {"median_itl_ms", "Median ITL (ms)"},
    {"p99_itl_ms", "P99 ITL (ms)"}};
}  // namespace

const char* serving_metric_label(const std::string& key) {
  for (const auto& [k, label] : kServingLabels)
    if (key == k) return label;
  return nullptr;
}

std::vector<std::string> published_metric_keys() {
  std::vector<std::string> out;
  for (const auto& [k, label] : kServingLabels) out.push_back(k);
  return out;
}


RunResult load_result(const std::filesystem::path& path) {
  return parse_result(read_json_file(path), path.string());
}

std::vector<std::filesystem::path> expand_inputs(const std::string& spec) {
  std::vector<std::filesystem::path> out;
  std::stringstream parts(spec);
  for (std::string part; std::getline(parts, part, ',');) {
    if (part.empty()) continue;
    const std::filesystem::path p(part);
    if (std::filesystem::is_directory(p)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(p)) {
        const std::string name = entry.path().filename().string();
        const bool json_file = name.size() > 5 && (name.ends_with(".json") || name.ends_with(".json.gz"));
        if (entry.is_regular_file() && json_file) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      require(!files.empty(), "directory " + part + " holds no *.json results");
      out.insert(out.end(), files.begin(), files.end());
    } else {
      require(std::filesystem::exists(p), "no such file: " + part);
      out.push_back(p);
    }
  }
  require(!out.empty(), "no input given");
  return out;
}

RunResult load_results_merged(const std::string& spec) {
  std::vector<RunResult> runs;
  for (const auto& path : expand_inputs(spec)) runs.push_back(load_result(path));
  if (runs.size() == 1) return std::move(runs.front());
  return merge_runs(runs);
}

namespace {
void require_same(const std::string& what, const std::string& a, const std::string& b,
                  const std::string& source_a, const std::string& source_b) {
  // A field only one side records (vllm's JSON has no device) cannot be checked.
  if (a.empty() || b.empty() || a == b) return;
  throw InvalidInput("refusing to compare different " + what + ": '" + a + "' (" + source_a +
                     ") vs '" + b + "' (" + source_b + ")");
}
}  // namespace

void require_comparable(const RunResult& base, const RunResult& next) {
  if (base.kind != next.kind)
    throw InvalidInput("refusing to compare different kinds: " + to_string(base.kind) + " (" +
                       base.source + ") vs " + to_string(next.kind) + " (" + next.source + ")");
  require_same("models", base.identity.model, next.identity.model, base.source, next.source);
  require_same("devices", base.identity.device, next.identity.device, base.source, next.source);
  require_same("datasets", base.identity.dataset, next.identity.dataset, base.source, next.source);
  require_same("scenarios", base.identity.scenario, next.identity.scenario, base.source, next.source);
  if (base.kind == ResultKind::gbench) {
    bool any_common = false;
    for (const auto& m : base.metrics) any_common = any_common || next.find(m.name) != nullptr;
    require(any_common, "refusing to compare Google Benchmark results with no benchmark in common (" +
                            base.source + " vs " + next.source + ")");
  }
}

RunResult merge_runs(const std::vector<RunResult>& runs) {
  require(!runs.empty(), "no runs to merge");
  RunResult merged = runs.front();
  if (runs.size() == 1) return merged;
  for (std::size_t i = 1; i < runs.size(); ++i) require_comparable(runs.front(), runs[i]);
  merged.run_count = runs.size();
  merged.source.clear();
  for (std::size_t i = 0; i < runs.size(); ++i)
    merged.source += (i ? "," : "") + runs[i].source;
  merged.metrics.clear();
  std::vector<std::string> order;
  for (const auto& run : runs)
    for (const auto& m : run.metrics)
      if (std::find(order.begin(), order.end(), m.name) == order.end()) order.push_back(m.name);
  for (const auto& name : order) {
    std::vector<const Metric*> parts;
    for (const auto& run : runs)
      if (const Metric* m = run.find(name)) parts.push_back(m);
    if (parts.size() != runs.size()) {
      merged.notes.push_back("metric " + name + " is missing from some runs; left out");
      continue;
    }
    Metric m = *parts.front();
    if (m.text) {
      for (const Metric* p : parts)
        if (p->text != m.text) m.text = "MIXED";
      merged.metrics.push_back(std::move(m));
      continue;
    }
    bool all_have_samples = m.sample_kind != "runs";
    for (const Metric* p : parts) all_have_samples = all_have_samples && !p->samples.empty();
    std::vector<double> values;
    for (const Metric* p : parts) values.push_back(p->value);
    if (all_have_samples) {
      m.samples.clear();
      for (const Metric* p : parts) m.samples.insert(m.samples.end(), p->samples.begin(), p->samples.end());
      m.value = m.statistic == Statistic::point ? stats::median(values) : statistic_of(m, m.samples);
      m.run_values = values;
    } else {
      // One value per run: the runs are the repetitions.
      m.samples = values;
      m.sample_kind = "runs";
      m.value = stats::median(values);
    }
    merged.metrics.push_back(std::move(m));
  }
  for (std::size_t i = 1; i < runs.size(); ++i)
    merged.notes.insert(merged.notes.end(), runs[i].notes.begin(), runs[i].notes.end());
  return merged;
}

}  // namespace encbench::reports
