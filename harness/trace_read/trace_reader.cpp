#include "harness/trace_read/trace_reader.hpp"

#include <sys/resource.h>
#include <zlib.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <istream>
#include <memory>
#include <streambuf>
#include <system_error>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"

namespace encbench::trace {

std::string RawTrace::track_name(TrackKey key) const {
  if (key >= kStringIdTag) {
    const auto index = static_cast<std::size_t>(key - kStringIdTag);
    return index < strings.size() ? strings[index] : std::string{"?"};
  }
  return std::to_string(key);
}

bool parse_us_to_ns(std::string_view text, Nanos& out_ns) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.empty()) return false;
  if (text.find_first_of("eE") != std::string_view::npos) {
    // Exponent form is rare (never written by Kineto/torch_npu); double precision is enough.
    const std::string copy(text);
    char* end = nullptr;
    const double us = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(us) || std::fabs(us) > 9.0e15) return false;
    out_ns = static_cast<Nanos>(std::llround(us * 1000.0));
    return true;
  }
  bool negative = false;
  if (text.front() == '-' || text.front() == '+') {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  const auto dot = text.find('.');
  const std::string_view int_part = text.substr(0, dot);
  const std::string_view frac_part = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (int_part.empty() && frac_part.empty()) return false;
  std::int64_t whole_us = 0;
  if (!int_part.empty()) {
    const auto [ptr, ec] = std::from_chars(int_part.data(), int_part.data() + int_part.size(), whole_us);
    if (ec != std::errc{} || ptr != int_part.data() + int_part.size()) return false;
  }
  std::int64_t frac_ns = 0;
  int digits = 0;
  bool round_up = false;
  for (const char c : frac_part) {
    if (c < '0' || c > '9') return false;
    if (digits < 3) {
      frac_ns = frac_ns * 10 + (c - '0');
    } else if (digits == 3) {
      round_up = c >= '5';  // half away from zero on the magnitude, like llround
    }
    ++digits;
  }
  for (int d = digits; d < 3; ++d) frac_ns *= 10;
  std::int64_t ns = 0;
  if (__builtin_mul_overflow(whole_us, std::int64_t{1000}, &ns) ||
      __builtin_add_overflow(ns, frac_ns + (round_up ? 1 : 0), &ns)) {
    return false;
  }
  out_ns = negative ? -ns : ns;
  return true;
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

namespace {

// Keeps nlohmann's lexer from holding the JSON text. Its token_string (kept for error messages)
// is cleared only when a string, number or literal starts, so everything between two values
// (whitespace, brackets, separators) piles up in it: 1 GB of whitespace became 2.2 GiB. The guard
// skips whitespace past kMaxWhitespaceRun bytes in a run (outside strings) and refuses a string or
// number longer than max_token_bytes_ or that many bytes between two values. Works in place on the
// buffer it is given, so it costs one pass over bytes already in cache.
class JsonTextGuard {
 public:
  explicit JsonTextGuard(std::size_t max_token_bytes) : max_token_bytes_(max_token_bytes) {}
  // Compacts data[0, n) in place; returns the bytes kept. `offset` is data[0]'s position in the
  // text (for the message). Sets error() and returns 0 when a bound is passed.
  std::size_t filter(char* data, std::size_t n, std::uint64_t offset) {
    std::size_t out = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = data[i];
      if (in_string_) {
        if (escape_) escape_ = false;
        else if (c == '\\') escape_ = true;
        else if (c == '"') in_string_ = false;
        if (++token_bytes_ > max_token_bytes_) return refuse("a string longer than", offset + i);
        data[out++] = c;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        if (++whitespace_run_ > kMaxWhitespaceRun) continue;  // skipped: the parser never sees it
      } else {
        whitespace_run_ = 0;
      }
      if (c == '"') {
        in_string_ = true;
        token_bytes_ = 1;
        between_values_ = 0;
      } else if (c == '[' || c == ']' || c == '{' || c == '}' || c == ':' || c == ',' || whitespace_run_ > 0) {
        token_bytes_ = 0;
        if (++between_values_ > max_token_bytes_) return refuse("brackets, separators and whitespace without a value for more than", offset + i);
      } else {
        between_values_ = 0;  // a number or literal: the lexer restarts its token text here
        if (++token_bytes_ > max_token_bytes_) return refuse("a number or literal longer than", offset + i);
      }
      data[out++] = c;
    }
    return out;
  }
  const std::string& error() const { return error_; }

 private:
  std::size_t refuse(const char* what, std::uint64_t at) {
    error_ = std::string("refused at byte ") + std::to_string(at) + " of the JSON text: " + what + " " +
             std::to_string(max_token_bytes_) + " bytes (the parser would hold them all)";
    return 0;
  }

  std::size_t max_token_bytes_;
  bool in_string_ = false, escape_ = false;
  std::size_t whitespace_run_ = 0, token_bytes_ = 0, between_values_ = 0;
  std::string error_;
};

// std::streambuf over a byte source (a zlib gzFile, or any istream): decompresses gzip (also
// concatenated members; gzread passes plain files through unchanged), stops past
// ReadLimits::max_decompressed_bytes, and hands the parser only what JsonTextGuard lets through.
class BoundedTextBuf : public std::streambuf {
 public:
  BoundedTextBuf(gzFile file, const ReadLimits& limits)
      : file_(file), max_bytes_(limits.max_decompressed_bytes), guard_(limits.max_token_bytes) {}
  BoundedTextBuf(std::istream& input, const ReadLimits& limits)
      : input_(&input), max_bytes_(limits.max_decompressed_bytes), guard_(limits.max_token_bytes) {}
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  std::uint64_t bytes_out() const { return bytes_out_; }  // JSON text read (before the guard)

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    while (error_.empty()) {
      const std::int64_t got = read_some();
      if (got <= 0) return traits_type::eof();
      const std::uint64_t offset = bytes_out_;
      bytes_out_ += static_cast<std::uint64_t>(got);
      if (max_bytes_ > 0 && bytes_out_ > max_bytes_) {
        error_ = "the JSON text is larger than " + std::to_string(max_bytes_) +
                 " bytes (--max-decompressed-bytes; 0 = no limit): stopped there";
        return traits_type::eof();
      }
      const std::size_t kept = guard_.filter(buffer_.data(), static_cast<std::size_t>(got), offset);
      if (!guard_.error().empty()) {
        error_ = guard_.error();
        return traits_type::eof();
      }
      if (kept > 0) {
        setg(buffer_.data(), buffer_.data(), buffer_.data() + kept);
        return traits_type::to_int_type(*gptr());
      }
    }
    return traits_type::eof();
  }

 private:
  // Bytes into buffer_: > 0 read, 0 end, < 0 error (error_ set).
  std::int64_t read_some() {
    if (input_ != nullptr) {
      input_->read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
      return static_cast<std::int64_t>(input_->gcount());
    }
    const int got = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    int errnum = Z_OK;
    const char* message = gzerror(file_, &errnum);
    if (got < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
      // Z_BUF_ERROR here means the gzip stream ended before its trailer: a truncated .gz file.
      error_ = errnum == Z_BUF_ERROR ? std::string{"truncated gzip stream (unexpected end of file)"}
                                     : std::string{"gzip error: "} + (message ? message : "unknown");
      return -1;
    }
    return got;
  }

  gzFile file_ = nullptr;
  std::istream* input_ = nullptr;
  std::uint64_t max_bytes_ = 0;
  JsonTextGuard guard_;
  std::array<char, 1 << 20> buffer_{};
  std::string error_;
  std::uint64_t bytes_out_ = 0;
};

// Which event field the next scalar value belongs to.
enum class EventKey : std::uint8_t {
  none, ph, name, cat, ts, dur, pid, tid, id, bp,
  arg_correlation, arg_stream, arg_device, arg_task_type, arg_category, arg_layer, arg_bytes, arg_flops,
  arg_meta_name, arg_meta_labels,
  arg_op_id, arg_host_thread, arg_submit_to_start,
  top_base_time, top_encbench_format, top_encbench_device_kind,
};

class ReducingSax {
 public:
  using json = nlohmann::json;
  ReducingSax(RawTrace& out, std::uint64_t max_events) : out_(out), max_events_(max_events) {}

  std::string error;
  std::string limit_error;  // --max-events passed: the parse stopped there

  bool null() { return scalar_done(); }
  bool boolean(bool) { return scalar_done(); }
  bool number_integer(json::number_integer_t value) { return integer_value(value); }
  bool number_unsigned(json::number_unsigned_t value) {
    return integer_value(value > static_cast<json::number_unsigned_t>(INT64_MAX)
                             ? INT64_MAX
                             : static_cast<std::int64_t>(value));
  }
  // A float id or time to int64, clamped (NaN: 0): casting a double outside int64 is undefined
  // behaviour ("pid": 1.26e19, found by tests/fuzz/fuzz_trace_import).
  static std::int64_t clamp_to_int64(double value) {
    if (std::isnan(value)) return 0;
    if (value >= 9.2233720368547758e18) return INT64_MAX;
    if (value <= -9.2233720368547758e18) return INT64_MIN;
    return static_cast<std::int64_t>(value);
  }

  bool number_float(json::number_float_t value, const std::string& raw) {
    switch (field_) {
      case EventKey::ts: set_time(raw, event_.ts_ns, true); break;
      case EventKey::dur: set_time(raw, event_.dur_ns, false); break;
      case EventKey::arg_bytes: event_.bytes = value; break;
      case EventKey::arg_flops: event_.flops = value; break;
      case EventKey::top_base_time: out_.base_time_ns = clamp_to_int64(value); break;
      case EventKey::pid: event_.pid = static_cast<TrackKey>(clamp_to_int64(value)); break;
      case EventKey::tid: event_.tid = static_cast<TrackKey>(clamp_to_int64(value)); break;
      default: break;
    }
    return scalar_done();
  }
  bool string(std::string& value) {
    switch (field_) {
      case EventKey::ph: event_.ph = value.size() == 1 ? value[0] : '?'; break;
      case EventKey::name: event_.name = intern(value); break;
      case EventKey::cat: event_.cat = intern(value); break;
      case EventKey::ts: set_time(value, event_.ts_ns, true); break;
      case EventKey::dur: set_time(value, event_.dur_ns, false); break;
      case EventKey::pid: event_.pid = track_key(value); break;
      case EventKey::tid: event_.tid = track_key(value); break;
      case EventKey::id: event_.flow_id = track_key(value); break;
      case EventKey::bp: event_.binds_enclosing = value == "e"; break;
      case EventKey::arg_task_type: event_.task_type = intern(value); break;
      case EventKey::arg_category: event_.category_arg = intern(value); break;
      case EventKey::arg_correlation: event_.correlation = parse_int(value); break;
      case EventKey::arg_stream: event_.stream_arg = parse_int(value); break;
      case EventKey::arg_device: event_.device_arg = parse_int(value); break;
      case EventKey::arg_meta_name: meta_name_ = std::move(value); break;
      case EventKey::arg_meta_labels: meta_labels_ = std::move(value); break;
      case EventKey::top_encbench_format: out_.encbench_format = std::move(value); break;
      case EventKey::top_encbench_device_kind: out_.encbench_device_kind = std::move(value); break;
      case EventKey::top_base_time: {
        std::int64_t base = 0;
        if (std::from_chars(value.data(), value.data() + value.size(), base).ec == std::errc{}) {
          out_.base_time_ns = base;
        }
        break;
      }
      default: break;
    }
    return scalar_done();
  }
  bool binary(json::binary_t&) { return scalar_done(); }

  bool start_object(std::size_t) {
    ++depth_;
    if (depth_ == 1) {
      top_is_object_ = true;
    } else if (events_depth_ > 0 && depth_ == events_depth_ + 1) {
      event_ = RawEvent{};
      meta_name_.clear();
      meta_labels_.clear();
      in_args_ = false;
    } else if (events_depth_ > 0 && depth_ == events_depth_ + 2 && pending_args_) {
      in_args_ = true;
    } else if (depth_ == 2 && top_key_ == "deviceProperties") {
      out_.kineto_header = true;
    }
    pending_args_ = false;
    field_ = EventKey::none;
    return true;
  }
  bool end_object() {
    if (events_depth_ > 0 && depth_ == events_depth_ + 1) {
      finish_event();
      if (max_events_ > 0 && kept() > max_events_) {
        limit_error = "more than " + std::to_string(max_events_) + " events kept (--max-events; 0 = no limit): stopped after " +
                      std::to_string(out_.stats.events_total) + " events";
        return false;
      }
    }
    if (events_depth_ > 0 && depth_ == events_depth_ + 2) in_args_ = false;
    --depth_;
    field_ = EventKey::none;
    return true;
  }
  bool start_array(std::size_t) {
    ++depth_;
    if (depth_ == 1) {
      events_depth_ = 1;  // bare array of events
    } else if (depth_ == 2 && top_is_object_ && top_key_ == "traceEvents") {
      events_depth_ = 2;
      out_.has_trace_events_key = true;
    } else if (depth_ == 2 && top_key_ == "deviceProperties") {
      out_.kineto_header = true;
    }
    pending_args_ = false;
    field_ = EventKey::none;
    return true;
  }
  bool end_array() {
    if (depth_ == events_depth_) events_done_ = true;
    --depth_;
    field_ = EventKey::none;
    return true;
  }
  bool key(std::string& key) {
    field_ = EventKey::none;
    pending_args_ = false;
    if (depth_ == 1 && top_is_object_) {
      top_key_ = key;
      if (key == "baseTimeNanoseconds") field_ = EventKey::top_base_time;
      else if (key == "schemaVersion") out_.kineto_header = true;
      return true;
    }
    if (depth_ == 2 && top_is_object_ && top_key_ == "encbench") {  // encbench's own trace header
      if (key == "format") field_ = EventKey::top_encbench_format;
      else if (key == "device_kind") field_ = EventKey::top_encbench_device_kind;
      return true;
    }
    if (events_depth_ == 0) return true;
    if (depth_ == events_depth_ + 1) {
      if (key == "ph") field_ = EventKey::ph;
      else if (key == "name") field_ = EventKey::name;
      else if (key == "cat") field_ = EventKey::cat;
      else if (key == "ts") field_ = EventKey::ts;
      else if (key == "dur") field_ = EventKey::dur;
      else if (key == "pid") field_ = EventKey::pid;
      else if (key == "tid") field_ = EventKey::tid;
      else if (key == "id") field_ = EventKey::id;
      else if (key == "bp") field_ = EventKey::bp;
      else if (key == "args") pending_args_ = true;
    } else if (in_args_ && depth_ == events_depth_ + 2) {
      if (key == "correlation") field_ = EventKey::arg_correlation;
      // "streamId": torch_npu's MSPTI (Kineto-style) export, on its "NPU stream N" kernels.
      else if (key == "stream" || key == "Stream Id" || key == "Physic Stream Id" || key == "streamId") {
        field_ = EventKey::arg_stream;
      }
      else if (key == "device") field_ = EventKey::arg_device;
      else if (key == "Task Type") field_ = EventKey::arg_task_type;
      else if (key == "category" || key == "kind") field_ = EventKey::arg_category;
      else if (key == "layer") field_ = EventKey::arg_layer;
      else if (key == "bytes") field_ = EventKey::arg_bytes;
      else if (key == "flops") field_ = EventKey::arg_flops;
      else if (key == "op_id") field_ = EventKey::arg_op_id;
      else if (key == "host_thread") field_ = EventKey::arg_host_thread;
      else if (key == "submit_to_start_ns") field_ = EventKey::arg_submit_to_start;
      else if (key == "name") field_ = EventKey::arg_meta_name;
      else if (key == "labels") field_ = EventKey::arg_meta_labels;
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    error = "not valid JSON at byte " + std::to_string(position) + ": " + ex.what();
    return false;
  }

  bool top_is_object() const { return top_is_object_; }
  bool saw_events() const { return events_depth_ > 0; }
  bool events_done() const { return events_done_; }
  bool top_is_scalar() const { return depth_ == 0 && !top_is_object_ && events_depth_ == 0; }

 private:
  bool scalar_done() {
    field_ = EventKey::none;
    return true;
  }
  // Microseconds to nanoseconds, refused past int64 (about 292 years of ns): the product was a
  // signed overflow (UB) on a ts of 1.7e16 us, found by tests/fuzz/fuzz_trace_import.
  static Nanos us_to_ns(std::int64_t us, const char* field) {
    Nanos ns = 0;
    if (__builtin_mul_overflow(us, 1000, &ns))
      throw InvalidInput(std::string("trace event \"") + field + "\" of " + std::to_string(us) +
                         " us is out of range");
    return ns;
  }

  bool integer_value(std::int64_t value) {
    switch (field_) {
      case EventKey::ts:
        event_.ts_ns = us_to_ns(value, "ts");
        event_.ts_present = true;
        break;
      case EventKey::dur: event_.dur_ns = us_to_ns(value, "dur"); break;
      case EventKey::pid: event_.pid = value; break;
      case EventKey::tid: event_.tid = value; break;
      case EventKey::id: event_.flow_id = value; break;
      case EventKey::arg_correlation: event_.correlation = value; break;
      case EventKey::arg_stream: event_.stream_arg = value; break;
      case EventKey::arg_device: event_.device_arg = value; break;
      case EventKey::arg_layer: event_.layer_arg = value; break;
      case EventKey::arg_op_id: event_.op_id_arg = value; break;
      case EventKey::arg_host_thread: event_.host_thread_arg = value; break;
      case EventKey::arg_submit_to_start: event_.submit_to_start_ns_arg = value; break;
      case EventKey::arg_bytes: event_.bytes = static_cast<double>(value); break;
      case EventKey::arg_flops: event_.flops = static_cast<double>(value); break;
      case EventKey::top_base_time: out_.base_time_ns = value; break;
      default: break;
    }
    return scalar_done();
  }
  void set_time(std::string_view text, Nanos& target, bool is_ts) {
    Nanos ns = 0;
    if (parse_us_to_ns(text, ns)) {
      target = ns;
      if (is_ts) event_.ts_present = true;
    }
  }
  static std::int64_t parse_int(std::string_view text) {
    std::int64_t value = kNoValue;
    if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc{}) return kNoValue;
    return value;
  }
  std::uint32_t intern(const std::string& text) {
    const auto [it, inserted] = index_.try_emplace(text, static_cast<std::uint32_t>(out_.strings.size()));
    if (inserted) out_.strings.push_back(text);
    return it->second;
  }
  TrackKey track_key(const std::string& text) {
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc{} && ptr == text.data() + text.size() && value >= 0) return value;
    return kStringIdTag + intern(text);
  }
  void finish_event() {
    ++out_.stats.events_total;
    const std::string_view cat = out_.str(event_.cat);
    switch (event_.ph) {
      case 'M': {
        const std::string_view name = out_.str(event_.name);
        if (name == "process_name" && !meta_name_.empty()) {
          out_.process_names[event_.pid] = meta_name_;
        } else if (name == "process_labels" && !meta_labels_.empty()) {
          out_.process_labels[event_.pid] = meta_labels_;
        } else if (name == "thread_name" && !meta_name_.empty()) {
          out_.thread_names[{event_.pid, event_.tid}] = meta_name_;
        }
        ++out_.stats.events_dropped;  // kept in the maps, not as events
        return;
      }
      case 'X':
        // Python stack frames can be most of a trace and say nothing about device idleness.
        if (cat == "python_function" || !event_.ts_present) break;
        if (event_.dur_ns < 0) event_.dur_ns = 0;
        out_.events.push_back(event_);
        ++out_.stats.events_kept;
        return;
      case 's':
      case 't':
      case 'f':
        if (!event_.ts_present || event_.flow_id == kNoValue) break;
        out_.events.push_back(event_);
        ++out_.stats.events_kept;
        return;
      default: break;
    }
    ++out_.stats.events_dropped;
  }

  // What the read keeps per event: the events and the metadata names (one per process/thread).
  std::uint64_t kept() const {
    return out_.events.size() + out_.process_names.size() + out_.process_labels.size() + out_.thread_names.size();
  }

  RawTrace& out_;
  std::uint64_t max_events_ = 0;
  std::unordered_map<std::string, std::uint32_t> index_;
  RawEvent event_;
  std::string meta_name_, meta_labels_;
  std::string top_key_;
  EventKey field_ = EventKey::none;
  int depth_ = 0;
  int events_depth_ = 0;
  bool top_is_object_ = false;
  bool pending_args_ = false;
  bool in_args_ = false;
  bool events_done_ = false;
};

RawTrace read_with_stream_error(std::istream& input, const std::string& source_name, const BoundedTextBuf& text,
                                const ReadLimits& limits) {
  RawTrace out;
  ReducingSax sax(out, limits.max_events);
  const Nanos start = now_ns();
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(input, &sax, nlohmann::json::input_format_t::json, true);
  } catch (const nlohmann::json::exception& e) {
    sax.error = std::string{"not valid JSON: "} + e.what();
  }
  out.stats.parse_ns = now_ns() - start;
  out.stats.json_bytes = text.bytes_out();
  if (text.failed()) throw InvalidInput(source_name + ": " + text.error());
  if (!sax.limit_error.empty()) throw InvalidInput(source_name + ": " + sax.limit_error);
  if (!ok) {
    const bool at_end = sax.error.find("unexpected end of input") != std::string::npos;
    // A file cut mid-event: say how far it got, so a user can tell a cut-off copy from a bad one.
    const std::string progress = "; read " + std::to_string(out.stats.events_total) + " complete events in " +
                                 std::to_string(text.bytes_out()) + " bytes of JSON";
    throw InvalidInput(source_name + ": " + sax.error +
                       (at_end ? " (the file is truncated or empty" + progress + ")" : progress));
  }
  if (!sax.saw_events()) {
    throw InvalidInput(source_name +
                       ": not a Chrome trace: expected a JSON array of events or an object with a "
                       "\"traceEvents\" array");
  }
  out.stats.peak_rss_mib = peak_rss_mib();
  return out;
}

}  // namespace

RawTrace read_raw_trace(std::istream& input, const std::string& source_name, const ReadLimits& limits) {
  auto text = std::make_unique<BoundedTextBuf>(input, limits);
  std::istream guarded(text.get());
  return read_with_stream_error(guarded, source_name, *text, limits);
}

RawTrace read_raw_trace_file(const std::filesystem::path& path, const ReadLimits& limits) {
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  if (ec) throw InvalidInput(path.string() + ": cannot read trace: " + ec.message());
  if (std::filesystem::is_directory(path)) throw InvalidInput(path.string() + ": is a directory, not a trace file");
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw InvalidInput(path.string() + ": cannot open trace");
  gzbuffer(file, 1 << 18);
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{file};
  auto text = std::make_unique<BoundedTextBuf>(file, limits);
  std::istream input(text.get());
  RawTrace out = read_with_stream_error(input, path.string(), *text, limits);
  out.stats.file_bytes = file_size;
  out.stats.gzip = gzdirect(file) == 0;
  return out;
}

}  // namespace encbench::trace
