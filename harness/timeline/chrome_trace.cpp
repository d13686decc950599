#include "harness/timeline/chrome_trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::timeline {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "encbench-chrome-trace";
constexpr int kFormatVersion = 1;

Nanos base_time(const Timeline& timeline) {
  Nanos base = std::numeric_limits<Nanos>::max();
  for (const DeviceOp& op : timeline.device_ops) base = std::min({base, op.submit_ns, op.start_ns});
  for (const HostSpan& span : timeline.host_spans) base = std::min(base, span.start_ns);
  return base == std::numeric_limits<Nanos>::max() ? 0 : base;
}

// Microseconds relative to base, exact to the nanosecond (3 decimals).
double to_us(Nanos t, Nanos base) { return static_cast<double>(t - base) / 1e3; }
Nanos from_us(double us) { return static_cast<Nanos>(std::llround(us * 1e3)); }

// Process-level metadata gets tid 0 (as Kineto writes it); some importers insist on a tid.
json metadata_event(const char* name, int pid, int tid, json args) {
  return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid < 0 ? 0 : tid}, {"ts", 0}, {"args", std::move(args)}};
}

int host_tid(std::uint32_t thread) { return static_cast<int>(thread) + 1; }
int stream_tid(int stream) { return stream + 1; }

}  // namespace

json to_chrome_trace(const Timeline& timeline, const ChromeTraceOptions& options) {
  const Nanos base = base_time(timeline);
  json events = json::array();

  const std::string device_name =
      "device " + timeline.device_kind + (timeline.modelled ? " (MODELLED times)" : "");
  events.push_back(metadata_event("process_name", kHostPid, -1, {{"name", "host"}}));
  events.push_back(metadata_event("process_sort_index", kHostPid, -1, {{"sort_index", 0}}));
  events.push_back(metadata_event("process_name", kDevicePid, -1, {{"name", device_name}}));
  events.push_back(metadata_event("process_sort_index", kDevicePid, -1, {{"sort_index", 1}}));
  for (const HostThreadTrack& thread : timeline.host_threads) {
    events.push_back(metadata_event("thread_name", kHostPid, host_tid(thread.thread), {{"name", thread.name}}));
    events.push_back(metadata_event("thread_sort_index", kHostPid, host_tid(thread.thread),
                                    {{"sort_index", static_cast<int>(thread.thread)}}));
  }
  for (const StreamTrack& stream : timeline.streams) {
    events.push_back(metadata_event("thread_name", kDevicePid, stream_tid(stream.stream),
                                    {{"name", "stream " + std::to_string(stream.stream) + " (" + stream.name + ")"}}));
    events.push_back(metadata_event("thread_sort_index", kDevicePid, stream_tid(stream.stream),
                                    {{"sort_index", stream.stream}}));
  }

  for (const HostSpan& span : timeline.host_spans) {
    events.push_back({{"ph", "X"},
                      {"name", span.name},
                      {"cat", "host_" + std::string(to_string(span.kind))},
                      {"pid", kHostPid},
                      {"tid", host_tid(span.thread)},
                      {"ts", to_us(span.start_ns, base)},
                      {"dur", to_us(span.end_ns, span.start_ns)},
                      {"args", {{"kind", std::string(to_string(span.kind))}, {"layer", span.layer}, {"op_id", span.op_id}}}});
  }
  for (const DeviceOp& op : timeline.device_ops) {
    const std::string category(to_string(op.category));
    events.push_back({{"ph", "X"},
                      {"name", op.name},
                      {"cat", category},
                      {"pid", kDevicePid},
                      {"tid", stream_tid(op.stream)},
                      {"ts", to_us(op.start_ns, base)},
                      {"dur", to_us(op.end_ns, op.start_ns)},
                      {"args",
                       {{"category", category},
                        {"layer", op.layer},
                        {"op_id", op.id},
                        {"stream", op.stream},
                        {"host_thread", op.host_thread},
                        {"submit_to_start_ns", op.start_ns - op.submit_ns},
                        {"flops", op.flops},
                        {"bytes", op.bytes}}}});
    // sim on the real clock: how late the device thread really completed the op.
    if (op.real_end_ns != 0) events.back()["args"]["lateness_us"] = to_us(op.real_end_ns, op.end_ns);
    if (op.category == OpCategory::sync) continue;  // markers: no arrow
    events.push_back({{"ph", "s"}, {"name", "submit"}, {"cat", "submit"}, {"id", op.id},
                      {"pid", kHostPid}, {"tid", host_tid(op.host_thread)}, {"ts", to_us(op.submit_ns, base)}});
    events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", "submit"}, {"cat", "submit"}, {"id", op.id},
                      {"pid", kDevicePid}, {"tid", stream_tid(op.stream)}, {"ts", to_us(op.start_ns, base)}});
  }

  if (options.gaps != nullptr) {
    events.push_back(metadata_event("thread_name", kDevicePid, kGapTrackTid, {{"name", "idle gaps"}}));
    events.push_back(metadata_event("thread_sort_index", kDevicePid, kGapTrackTid, {{"sort_index", kGapTrackTid}}));
    for (const Gap& gap : options.gaps->gaps) {
      const std::string gap_class(to_string(gap.gap_class));
      events.push_back({{"ph", "X"},
                        {"name", gap_class},
                        {"cat", "idle_gap"},
                        {"pid", kDevicePid},
                        {"tid", kGapTrackTid},
                        {"ts", to_us(gap.start_ns, base)},
                        {"dur", to_us(gap.end_ns, gap.start_ns)},
                        {"args",
                         {{"class", gap_class},
                          {"cause", gap.cause},
                          {"layer", gap.layer},
                          {"prev_op", gap.prev_op},
                          {"next_op", gap.next_op},
                          {"duration_us", ns_to_us(gap.duration_ns())}}}});
    }
  }

  json trace = json::object();
  if (options.metadata.is_object()) {
    for (const auto& [key, value] : options.metadata.items()) trace[key] = value;
  }
  trace["displayTimeUnit"] = "ms";
  trace["baseTimeNanoseconds"] = base;
  trace["encbench"] = {{"format", kFormat},
                       {"version", kFormatVersion},
                       {"device_kind", timeline.device_kind},
                       {"modelled", timeline.modelled}};
  trace["traceEvents"] = std::move(events);
  return trace;
}

void write_chrome_trace(const std::filesystem::path& path, const Timeline& timeline,
                        const ChromeTraceOptions& options) {
  write_json_file(path, to_chrome_trace(timeline, options), -1);
}

namespace {

template <class T>
T arg_or(const json& args, const char* key, T fallback) {
  const auto it = args.find(key);
  if (it == args.end() || it->is_null()) return fallback;
  return it->get<T>();
}

}  // namespace

Timeline read_encbench_chrome_trace(const json& trace) {
  require(trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array(),
          "not a Chrome trace object with a traceEvents array");
  const auto meta = trace.find("encbench");
  require(meta != trace.end() && meta->is_object() && meta->value("format", "") == kFormat,
          "not an encbench trace (no top-level \"encbench\": {\"format\": \"encbench-chrome-trace\"})");
  require(meta->value("version", 0) == kFormatVersion,
          "unsupported encbench trace version " + meta->value("version", json(0)).dump());
  Timeline timeline;
  try {
    timeline.device_kind = meta->value("device_kind", "");
    timeline.modelled = meta->value("modelled", false);
    const Nanos base = trace.value("baseTimeNanoseconds", Nanos{0});
    std::map<std::uint32_t, std::string> threads;
    std::map<int, std::string> streams;
    for (const json& event : trace["traceEvents"]) {
      const std::string ph = event.value("ph", "");
      const int pid = event.value("pid", 0);
      const int tid = event.value("tid", 0);
      if (ph == "M" && event.value("name", "") == "thread_name") {
        const std::string name = event["args"].value("name", "");
        if (pid == kHostPid) threads[static_cast<std::uint32_t>(tid - 1)] = name;
        if (pid == kDevicePid && tid != kGapTrackTid) {
          // "stream N (name)" -> name
          const auto open = name.find('(');
          streams[tid - 1] = open == std::string::npos ? name : name.substr(open + 1, name.size() - open - 2);
        }
        continue;
      }
      if (ph != "X") continue;
      const json& args = event.contains("args") ? event["args"] : json::object();
      const Nanos start = base + from_us(event.at("ts").get<double>());
      const Nanos end = start + from_us(event.at("dur").get<double>());
      if (pid == kHostPid) {
        HostSpan span;
        span.name = event.value("name", "");
        const auto kind = host_span_kind_from_string(arg_or<std::string>(args, "kind", "work"));
        require(kind.has_value(), "host span '" + span.name + "' has an unknown kind");
        span.kind = *kind;
        span.thread = static_cast<std::uint32_t>(tid - 1);
        span.start_ns = start;
        span.end_ns = end;
        span.layer = arg_or<int>(args, "layer", -1);
        span.op_id = arg_or<std::uint64_t>(args, "op_id", 0);
        timeline.host_spans.push_back(std::move(span));
      } else if (pid == kDevicePid && tid != kGapTrackTid) {
        DeviceOp op;
        op.name = event.value("name", "");
        const auto category = op_category_from_string(arg_or<std::string>(args, "category", event.value("cat", "")));
        require(category.has_value(), "device op '" + op.name + "' has an unknown category");
        op.category = *category;
        op.id = arg_or<std::uint64_t>(args, "op_id", 0);
        op.stream = arg_or<int>(args, "stream", tid - 1);
        op.layer = arg_or<int>(args, "layer", -1);
        op.host_thread = arg_or<std::uint32_t>(args, "host_thread", 0);
        op.start_ns = start;
        op.end_ns = end;
        op.submit_ns = start - arg_or<Nanos>(args, "submit_to_start_ns", 0);
        op.flops = arg_or<double>(args, "flops", 0.0);
        op.bytes = arg_or<double>(args, "bytes", 0.0);
        timeline.device_ops.push_back(std::move(op));
      }
    }
    for (auto& [thread, name] : threads) timeline.host_threads.push_back(HostThreadTrack{thread, name});
    for (auto& [stream, name] : streams) timeline.streams.push_back(StreamTrack{stream, name});
  } catch (const json::exception& error) {
    throw InvalidInput(std::string("malformed encbench trace: ") + error.what());
  }
  std::stable_sort(timeline.device_ops.begin(), timeline.device_ops.end(), [](const DeviceOp& a, const DeviceOp& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.id < b.id;
  });
  std::stable_sort(timeline.host_spans.begin(), timeline.host_spans.end(), [](const HostSpan& a, const HostSpan& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  return timeline;
}

}  // namespace encbench::timeline
