#pragma once
// Streaming reader for Chrome Trace Event JSON (plain or gzip) as written by the PyTorch
// profiler (Kineto), torch_npu and encbench itself.
//
// The file is decompressed in chunks (zlib) and fed to a SAX parser; each event is reduced to a
// compact RawEvent holding only the fields the importer needs (names and categories interned),
// so a trace of hundreds of MB never exists as a DOM in memory. Reading does not interpret the
// events (trace_import.hpp does).
#include <cstdint>
#include <deque>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/core/clock.hpp"

namespace encbench::trace {

// pid/tid are numbers in most traces but strings in some; a string id is interned and tagged.
using TrackKey = std::int64_t;
inline constexpr TrackKey kStringIdTag = std::int64_t{1} << 62;

inline constexpr std::uint32_t kNoString = 0xffffffffu;
inline constexpr std::int64_t kNoValue = -1;

struct RawEvent {
  Nanos ts_ns = 0;
  Nanos dur_ns = -1;              // -1: no dur field
  TrackKey pid = 0, tid = 0;
  std::uint32_t name = kNoString;  // index into RawTrace::strings
  std::uint32_t cat = kNoString;
  std::uint32_t task_type = kNoString;  // torch_npu args."Task Type"
  std::uint32_t category_arg = kNoString;  // encbench args.category / args.kind
  std::int64_t correlation = kNoValue;  // args.correlation
  std::int64_t stream_arg = kNoValue;   // args.stream / "Stream Id" / "Physic Stream Id"
  std::int64_t device_arg = kNoValue;   // args.device
  std::int64_t layer_arg = kNoValue;    // encbench args.layer
  std::int64_t flow_id = kNoValue;      // id of s/t/f flow events (strings are interned)
  std::int64_t op_id_arg = kNoValue;    // encbench args.op_id
  std::int64_t host_thread_arg = kNoValue;  // encbench args.host_thread
  std::int64_t submit_to_start_ns_arg = kNoValue;  // encbench args.submit_to_start_ns
  double bytes = 0;                     // args.bytes (memcpy; encbench: every op's cost)
  double flops = 0;                     // args.flops (encbench's cost annotation)
  char ph = 0;
  bool binds_enclosing = false;         // "bp":"e"
  bool ts_present = false;
};

// What a read may cost: memory follows what is kept, never the text. Past either
// limit the read stops with InvalidInput (exit 2) naming the limit, its flag and how far it got.
// The JSON text itself is never held: whitespace runs past kMaxWhitespaceRun bytes are skipped
// before the parser sees them, and a single string or number longer than max_token_bytes, or
// more than max_token_bytes of brackets and separators without a value between them, is refused
// (the parser keeps the current token's text, and its error context reaches back to the last
// value).
// 16 GiB of text is ~1.5 min of parsing. No event limit by default (trace diff / whatif read
// 4.5 M-event traces in 1.4 GiB); `trace analyze` sets kDefaultAnalyzeMaxEvents.
struct ReadLimits {
  std::uint64_t max_decompressed_bytes = std::uint64_t{16} << 30;  // JSON text after gunzip; 0 = none
  std::uint64_t max_events = 0;  // events kept (X, flows) plus metadata names; 0 = none
  std::size_t max_token_bytes = std::size_t{64} << 20;
};
inline constexpr std::size_t kMaxWhitespaceRun = 4096;

struct ReadStats {
  std::uint64_t file_bytes = 0;   // bytes on disk
  std::uint64_t json_bytes = 0;   // bytes of JSON text after decompression
  bool gzip = false;
  std::size_t events_total = 0;   // every element of the event array
  std::size_t events_kept = 0;    // kept as RawEvent (X, s, t, f, M with a use)
  std::size_t events_dropped = 0; // events we never need (instant, counters, python stacks, ...)
  Nanos parse_ns = 0;
  double peak_rss_mib = 0;        // getrusage ru_maxrss after parsing (whole process)
};

struct RawTrace {
  // A deque: grows in blocks without the 2x capacity and copy of a vector at peak.
  std::deque<RawEvent> events;
  std::vector<std::string> strings;  // interned names, categories, string ids
  std::map<TrackKey, std::string> process_names;   // from M process_name
  std::map<TrackKey, std::string> process_labels;  // from M process_labels
  std::map<std::pair<TrackKey, TrackKey>, std::string> thread_names;  // from M thread_name
  std::int64_t base_time_ns = 0;      // top-level baseTimeNanoseconds (0 when absent)
  bool has_trace_events_key = false;  // object form with "traceEvents"
  bool kineto_header = false;         // schemaVersion / deviceProperties present
  std::string encbench_format;        // top-level encbench.format ("encbench-chrome-trace")
  std::string encbench_device_kind;   // top-level encbench.device_kind
  ReadStats stats;

  std::string_view str(std::uint32_t index) const {
    return index == kNoString ? std::string_view{} : std::string_view{strings[index]};
  }
  std::string track_name(TrackKey key) const;  // "123" or the string id
};

// Parses "1234.567" / "-5" / "1.5e3" (microseconds) into integer nanoseconds, exactly for plain
// decimals (no double rounding: absolute torch_npu timestamps ~1.7e15 us need all 19 digits).
// Returns false when the text is not a number.
bool parse_us_to_ns(std::string_view text, Nanos& out_ns);

// Reads and reduces a trace. `source_name` is used in error messages. Throws InvalidInput for
// anything that is not a Chrome trace (not JSON, truncated, wrong top-level shape).
RawTrace read_raw_trace(std::istream& input, const std::string& source_name, const ReadLimits& limits = {});
// Same, from a file (gzip detected by content, not by name).
RawTrace read_raw_trace_file(const std::filesystem::path& path, const ReadLimits& limits = {});

double peak_rss_mib();  // getrusage(RUSAGE_SELF).ru_maxrss in MiB

}  // namespace encbench::trace
