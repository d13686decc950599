#include "harness/client/shard.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "harness/client/metrics.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {

int mpi_launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name); v && *v) return std::max(1, std::atoi(v));
  }
  const char* pmix = std::getenv("PMIX_RANK");  // PMIx launchers that announce no size
  return pmix && *pmix ? 1 : 0;
}

std::vector<std::size_t> shard_indices(std::size_t total, int rank, int size) {
  require(size >= 1 && rank >= 0 && rank < size, "shard: rank " + std::to_string(rank) + " outside 0.." + std::to_string(size - 1));
  std::vector<std::size_t> out;
  out.reserve(total / static_cast<std::size_t>(size) + 1);
  for (std::size_t i = static_cast<std::size_t>(rank); i < total; i += static_cast<std::size_t>(size)) out.push_back(i);
  return out;
}

std::uint64_t fnv1a64(const std::string& bytes, std::uint64_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

namespace {

// Plain byte writer/reader: fixed-width integers as in memory, strings and arrays length-prefixed.
class Writer {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    out_.append(p, sizeof v);
  }
  void put_str(const std::string& s) {
    put<std::uint64_t>(s.size());
    out_.append(s);
  }
  template <typename T>
  void put_vec(const std::vector<T>& v) {
    put<std::uint64_t>(v.size());
    if (!v.empty()) out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_str() {
    const auto n = get<std::uint64_t>();
    need(n);
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> get_vec() {
    const auto n = get<std::uint64_t>();
    require(n <= (in_.size() - pos_) / sizeof(T), "shard data: array length " + std::to_string(n) + " exceeds the buffer");
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return v;
  }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  void need(std::uint64_t n) const {
    require(n <= in_.size() - pos_, "shard data truncated at byte " + std::to_string(pos_) + " of " + std::to_string(in_.size()));
  }
  const std::string& in_;
  std::size_t pos_ = 0;
};

constexpr std::uint32_t kRecordsMagic = 0x45424d72;  // record layout version 2 (admitted_ns, os_errno, failure_kind)
constexpr std::uint32_t kShardMagic = 0x45424d73;  // shard layout version 2 (loop profile, connection figures)

void put_record(Writer& w, const RequestRecord& r) {
  w.put<std::uint64_t>(r.index);
  w.put_str(r.request_id);
  w.put<std::uint8_t>(r.dispatched);
  for (Nanos t : {r.intended_ns, r.arrival_ns, r.admitted_ns, r.dispatch_ns, r.sent_ns, r.headers_ns, r.first_choices_ns,
                  r.last_choices_ns, r.end_ns})
    w.put<Nanos>(t);
  w.put_vec(r.choices_ns);
  for (std::int64_t v : {r.data_events, r.content_chunks, r.max_events_per_read, r.usage_prompt_tokens,
                         r.usage_completion_tokens, r.prompt_len_client, r.error_events})
    w.put<std::int64_t>(v);
  w.put<std::int32_t>(r.http_status);
  w.put<std::int32_t>(r.curl_code);
  w.put<std::int32_t>(r.os_errno);
  w.put_str(r.generated_text);
  w.put<std::uint8_t>(r.saw_done);
  w.put_str(r.first_error_event);
  w.put<std::uint8_t>(r.incomplete_stream);
  w.put<std::uint8_t>(r.success);
  w.put_str(r.error);
  w.put_str(r.failure_kind);
}

RequestRecord get_record(Reader& in) {
  RequestRecord r;
  r.index = in.get<std::uint64_t>();
  r.request_id = in.get_str();
  r.dispatched = in.get<std::uint8_t>() != 0;
  for (Nanos* t : {&r.intended_ns, &r.arrival_ns, &r.admitted_ns, &r.dispatch_ns, &r.sent_ns, &r.headers_ns,
                   &r.first_choices_ns, &r.last_choices_ns, &r.end_ns})
    *t = in.get<Nanos>();
  r.choices_ns = in.get_vec<Nanos>();
  for (std::int64_t* v : {&r.data_events, &r.content_chunks, &r.max_events_per_read, &r.usage_prompt_tokens,
                          &r.usage_completion_tokens, &r.prompt_len_client, &r.error_events})
    *v = in.get<std::int64_t>();
  r.http_status = in.get<std::int32_t>();
  r.curl_code = in.get<std::int32_t>();
  r.os_errno = in.get<std::int32_t>();
  r.generated_text = in.get_str();
  r.saw_done = in.get<std::uint8_t>() != 0;
  r.first_error_event = in.get_str();
  r.incomplete_stream = in.get<std::uint8_t>() != 0;
  r.success = in.get<std::uint8_t>() != 0;
  r.error = in.get_str();
  r.failure_kind = in.get_str();
  return r;
}

void put_records(Writer& w, const std::vector<RequestRecord>& records) {
  w.put<std::uint32_t>(kRecordsMagic);
  w.put<std::uint64_t>(records.size());
  for (const auto& r : records) put_record(w, r);
}

std::vector<RequestRecord> get_records(Reader& in) {
  require(in.get<std::uint32_t>() == kRecordsMagic, "shard data: not an encbench record block (bad magic)");
  const auto n = in.get<std::uint64_t>();
  std::vector<RequestRecord> out;
  for (std::uint64_t i = 0; i < n; ++i) out.push_back(get_record(in));
  return out;
}

}  // namespace

std::string encode_records(const std::vector<RequestRecord>& records) {
  Writer w;
  put_records(w, records);
  return w.take();
}

std::vector<RequestRecord> decode_records(const std::string& bytes) {
  Reader in(bytes);
  auto out = get_records(in);
  require(in.at_end(), "shard data: trailing bytes after the records");
  return out;
}

std::string encode_shard(const SendLoopResult& run, const nlohmann::json& summary) {
  Writer w;
  w.put<std::uint32_t>(kShardMagic);
  w.put_str(summary.dump());
  w.put<Nanos>(run.start_ns);
  w.put<Nanos>(run.end_ns);
  w.put<std::uint8_t>(run.interrupted);
  w.put<double>(run.cpu_user_s);
  w.put<double>(run.cpu_system_s);
  w.put_vec(run.loop.arrival_wake_lag_ms);
  w.put_vec(run.loop.iteration_busy_ms);
  w.put<std::uint64_t>(run.loop.peak_in_flight);
  w.put<std::uint64_t>(run.loop.peak_client_queue);
  w.put<std::int64_t>(run.loop.iterations);
  const LoopStats& l = run.loop;
  for (std::uint64_t v : {std::uint64_t{l.peak_send_queue}, std::uint64_t{l.connection_limit}, std::uint64_t{l.open_file_limit},
                          std::uint64_t{l.curl_multis}})
    w.put<std::uint64_t>(v);
  for (std::int64_t v : {l.iterations_at_connection_limit, l.iterations_at_send_quota, l.profile.socket_events,
                         l.profile.dispatches, l.profile.completions, l.profile.max_events_in_iteration})
    w.put<std::int64_t>(v);
  for (double v : {l.profile.curl_socket_s, l.profile.curl_timer_s, l.profile.parse_s, l.profile.dispatch_s, l.profile.finish_s})
    w.put<double>(v);
  put_records(w, run.records);
  return w.take();
}

std::pair<SendLoopResult, nlohmann::json> decode_shard(const std::string& bytes) {
  Reader in(bytes);
  require(in.get<std::uint32_t>() == kShardMagic, "shard data: not an encbench shard (bad magic)");
  auto summary = nlohmann::json::parse(in.get_str(), nullptr, false);
  require(!summary.is_discarded(), "shard data: the rank summary is not JSON");
  SendLoopResult run;
  run.start_ns = in.get<Nanos>();
  run.end_ns = in.get<Nanos>();
  run.interrupted = in.get<std::uint8_t>() != 0;
  run.cpu_user_s = in.get<double>();
  run.cpu_system_s = in.get<double>();
  run.loop.arrival_wake_lag_ms = in.get_vec<double>();
  run.loop.iteration_busy_ms = in.get_vec<double>();
  run.loop.peak_in_flight = in.get<std::uint64_t>();
  run.loop.peak_client_queue = in.get<std::uint64_t>();
  run.loop.iterations = in.get<std::int64_t>();
  LoopStats& l = run.loop;
  for (std::size_t* v : {&l.peak_send_queue, &l.connection_limit, &l.open_file_limit, &l.curl_multis})
    *v = in.get<std::uint64_t>();
  for (std::int64_t* v : {&l.iterations_at_connection_limit, &l.iterations_at_send_quota, &l.profile.socket_events,
                          &l.profile.dispatches, &l.profile.completions, &l.profile.max_events_in_iteration})
    *v = in.get<std::int64_t>();
  for (double* v : {&l.profile.curl_socket_s, &l.profile.curl_timer_s, &l.profile.parse_s, &l.profile.dispatch_s,
                    &l.profile.finish_s})
    *v = in.get<double>();
  run.records = get_records(in);
  require(in.at_end(), "shard data: trailing bytes after the shard");
  return {std::move(run), std::move(summary)};
}

void shift_times(SendLoopResult& run, Nanos delta) {
  auto shift = [delta](Nanos& t) {
    if (t != 0) t -= delta;
  };
  shift(run.start_ns);
  shift(run.end_ns);
  for (auto& r : run.records) {
    for (Nanos* t : {&r.intended_ns, &r.arrival_ns, &r.admitted_ns, &r.dispatch_ns, &r.sent_ns, &r.headers_ns,
                     &r.first_choices_ns, &r.last_choices_ns, &r.end_ns})
      shift(*t);
    for (auto& t : r.choices_ns) shift(t);
  }
}

std::string first_disagreement(const std::vector<std::string>& fingerprints) {
  if (fingerprints.empty()) return "";
  auto lines = [](const std::string& s) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);) {
      const auto eq = line.find('=');
      out.emplace_back(line.substr(0, eq), eq == std::string::npos ? "" : line.substr(eq + 1));
    }
    return out;
  };
  const auto ref = lines(fingerprints[0]);
  for (std::size_t k = 1; k < fingerprints.size(); ++k) {
    const auto other = lines(fingerprints[k]);
    for (std::size_t i = 0; i < std::max(ref.size(), other.size()); ++i) {
      const std::string key = i < ref.size() ? ref[i].first : other[i].first;
      const std::string a = i < ref.size() ? ref[i].second : "(missing)";
      const std::string b = i < other.size() ? other[i].second : "(missing)";
      if (i >= ref.size() || i >= other.size() || ref[i].first != other[i].first || a != b)
        return "rank " + std::to_string(k) + " differs from rank 0 in " + key + ": '" + b + "' vs '" + a + "'";
    }
  }
  return "";
}

nlohmann::json rank_summary(int rank, const std::string& host, const SendLoopResult& run, const CommonStart& start) {
  std::vector<double> lag_ms;
  std::size_t completed = 0, sent = 0;
  for (const auto& r : run.records) {
    if (!r.dispatched) continue;
    ++sent;
    completed += r.success ? 1 : 0;
    if (r.sent_ns) lag_ms.push_back(static_cast<double>(r.sent_ns - r.intended_ns) / 1e6);
  }
  const auto lag = summarize_ms(lag_ms, {50, 99});
  const auto wake = summarize_ms(run.loop.arrival_wake_lag_ms, {99});
  const double duration_s = std::max(static_cast<double>(run.end_ns - run.start_ns) / 1e9, 1e-9);
  return {{"rank", rank},
          {"host", host},
          {"requests", run.records.size()},
          {"sent", sent},
          {"completed", completed},
          {"dispatch_lag_p50_ms", lag.percentiles_ms[0].second},
          {"dispatch_lag_p99_ms", lag.percentiles_ms[1].second},
          {"dispatch_lag_max_ms", lag.max_ms},
          {"arrival_timer_lag_p99_ms", wake.percentiles_ms[0].second},
          {"cpu_user_s", run.cpu_user_s},
          {"cpu_system_s", run.cpu_system_s},
          {"cpu_utilization", (run.cpu_user_s + run.cpu_system_s) / duration_s},
          {"peak_in_flight", run.loop.peak_in_flight},
          {"clock_offset_ns", start.clock_offset_ns},
          {"clock_offset_error_bound_ns", start.clock_error_ns},
          {"align_ms", static_cast<double>(start.align_ns) / 1e6}};
}

SendLoopResult merge_shards(std::vector<SendLoopResult> shards, Nanos start_ns) {
  SendLoopResult out;
  out.start_ns = start_ns;
  std::size_t total = 0;
  for (const auto& s : shards) total += s.records.size();
  out.records.reserve(total);
  for (auto& s : shards) {
    out.end_ns = std::max(out.end_ns, s.end_ns);
    out.interrupted = out.interrupted || s.interrupted;
    out.cpu_user_s += s.cpu_user_s;
    out.cpu_system_s += s.cpu_system_s;
    auto& l = out.loop;
    l.arrival_wake_lag_ms.insert(l.arrival_wake_lag_ms.end(), s.loop.arrival_wake_lag_ms.begin(), s.loop.arrival_wake_lag_ms.end());
    l.iteration_busy_ms.insert(l.iteration_busy_ms.end(), s.loop.iteration_busy_ms.begin(), s.loop.iteration_busy_ms.end());
    l.peak_in_flight += s.loop.peak_in_flight;
    l.peak_client_queue += s.loop.peak_client_queue;
    l.iterations += s.loop.iterations;
    // Sums over ranks, like the CPU figures (each rank has its own sockets and file limit).
    l.peak_send_queue += s.loop.peak_send_queue;
    l.connection_limit += s.loop.connection_limit;
    l.open_file_limit += s.loop.open_file_limit;
    l.curl_multis += s.loop.curl_multis;
    l.iterations_at_connection_limit += s.loop.iterations_at_connection_limit;
    l.iterations_at_send_quota += s.loop.iterations_at_send_quota;
    const LoopProfile& p = s.loop.profile;
    l.profile.curl_socket_s += p.curl_socket_s;
    l.profile.curl_timer_s += p.curl_timer_s;
    l.profile.parse_s += p.parse_s;
    l.profile.dispatch_s += p.dispatch_s;
    l.profile.finish_s += p.finish_s;
    l.profile.socket_events += p.socket_events;
    l.profile.dispatches += p.dispatches;
    l.profile.completions += p.completions;
    l.profile.max_events_in_iteration = std::max(l.profile.max_events_in_iteration, p.max_events_in_iteration);
    for (auto& r : s.records) out.records.push_back(std::move(r));
  }
  std::sort(out.records.begin(), out.records.end(), [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
  for (std::size_t i = 0; i < out.records.size(); ++i)
    require(out.records[i].index == i, "merged shards: request index " + std::to_string(i) + " is " +
                                           (i < out.records[i].index ? "missing" : "duplicated"));
  if (out.end_ns == 0) out.end_ns = start_ns;
  return out;
}

}  // namespace encbench::client
