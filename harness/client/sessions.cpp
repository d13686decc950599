#include "harness/client/sessions.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "harness/client/response_handler.hpp"
#include "harness/client/send_loop.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {

using nlohmann::json;

double ThinkTime::draw(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::none: return 0;
    case Kind::constant: return a;
    case Kind::uniform: return std::uniform_real_distribution<double>(a, b)(rng);
    case Kind::exponential: return std::exponential_distribution<double>(1.0 / a)(rng);
  }
  return 0;
}

ThinkTime parse_think_time(const std::string& text) {
  const std::string help = "--think-time: expected 0, constant:S, uniform:A:B or exponential:MEAN (seconds), got '" + text + "'";
  ThinkTime t;
  if (text.empty() || text == "0") return t;
  std::vector<double> values;
  const auto colon = text.find(':');
  require(colon != std::string::npos, help);
  const std::string kind = text.substr(0, colon);
  std::size_t pos = colon + 1;
  while (pos <= text.size()) {
    const auto next = text.find(':', pos);
    const std::string part = text.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    require(!part.empty() && end == part.c_str() + part.size() && v >= 0 && v <= 3600, help);
    values.push_back(v);
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  if (kind == "constant" && values.size() == 1) t = {ThinkTime::Kind::constant, values[0], 0};
  else if (kind == "uniform" && values.size() == 2 && values[0] <= values[1]) t = {ThinkTime::Kind::uniform, values[0], values[1]};
  else if (kind == "exponential" && values.size() == 1 && values[0] > 0) t = {ThinkTime::Kind::exponential, values[0], 0};
  else throw InvalidInput(help);
  return t;
}

namespace {

json user_message(const std::string& text, const std::vector<std::string>& image_urls) {
  if (image_urls.empty()) return {{"role", "user"}, {"content", text}};
  json content = json::array({{{"type", "text"}, {"text", text}}});
  for (const auto& url : image_urls) content.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
  return {{"role", "user"}, {"content", content}};
}

struct CurlTurn {
  RequestRecord* record;
  ResponseHandler* handler;
};

size_t on_write(char* data, size_t size, size_t count, void* userp) {
  auto* t = static_cast<CurlTurn*>(userp);
  t->handler->on_body(std::string_view(data, size * count), now_ns());
  return t->handler->failed() ? 0 : size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* userp) {
  auto* t = static_cast<CurlTurn*>(userp);
  const std::string_view line(data, size * count);
  if (!t->handler->on_header_bytes(line.size())) return 0;
  if (line.rfind("HTTP/", 0) == 0 && line.size() > 9) {
    int status = 0;
    for (std::size_t i = line.find(' ') + 1; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) status = status * 10 + (line[i] - '0');
    t->record->http_status = status;
    if (t->record->headers_ns == 0) t->record->headers_ns = now_ns();
  }
  return line.size();
}

// One turn: POST the body, stream the answer into the record (vLLM's rules, ResponseHandler).
void send_turn(const SessionRunConfig& config, const std::string& body, RequestRecord& record) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> easy(curl_easy_init(), &curl_easy_cleanup);
  require(easy != nullptr, "curl_easy_init failed");
  ResponseHandler handler(Backend::openai_chat, RequestMode::stream, record);
  CurlTurn turn{&record, &handler};
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, ("x-request-id: " + record.request_id).c_str());
  for (const auto& h : config.headers) headers = curl_slist_append(headers, h.c_str());
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(easy.get(), CURLOPT_URL, config.url.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(easy.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &on_write);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &turn);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERDATA, &turn);
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(easy.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(config.timeout_s * 1000));
  record.dispatched = true;
  record.intended_ns = record.arrival_ns = record.admitted_ns = record.dispatch_ns = record.sent_ns = now_ns();
  const CURLcode rc = curl_easy_perform(easy.get());
  curl_slist_free_all(headers);
  record.curl_code = static_cast<int>(rc);
  std::string transport_error, kind;
  if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && handler.failed())) {
    long os_errno = 0;
    curl_easy_getinfo(easy.get(), CURLINFO_OS_ERRNO, &os_errno);
    record.os_errno = static_cast<int>(os_errno);
    kind = transport_failure_kind(static_cast<int>(rc), record.os_errno);
    transport_error = std::string("curl error ") + std::to_string(static_cast<int>(rc)) + " (" + curl_easy_strerror(rc) + ")" +
                      (error[0] ? std::string(": ") + error : std::string()) + " [" + config.url + "]";
  }
  handler.on_end(now_ns(), transport_error, kind.empty() ? "transport_other" : kind);
}

// One session, turn after turn: the history re-sent, the server's answers as the assistant turns.
void run_one_session(const SampleRequest& s, std::size_t index, const SessionRunConfig& config,
                     const std::function<void(TurnRecord&&)>& keep) {
  std::mt19937_64 rng(config.seed + index);
  json messages = json::array();
  std::vector<std::string> user_turns{s.prompt};
  user_turns.insert(user_turns.end(), s.later_user_turns.begin(), s.later_user_turns.end());
  if (config.max_turns > 0 && user_turns.size() > config.max_turns) user_turns.resize(config.max_turns);
  for (std::size_t k = 0; k < user_turns.size(); ++k) {
    TurnRecord t;
    t.session = index;
    t.turn = k;
    if (k > 0) {
      t.think_s = config.think.draw(rng);
      std::this_thread::sleep_for(std::chrono::duration<double>(t.think_s));
    }
    // The row's images go with the first user message, re-sent with the history every turn.
    messages.push_back(user_message(user_turns[k], k == 0 ? s.image_urls : std::vector<std::string>{}));
    const json body = {{"model", config.model}, {"messages", messages}, {"max_completion_tokens", s.output_len},
                       {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    const std::string text = body.dump();
    t.history_messages = messages.size();
    t.request_bytes = text.size();
    t.record.index = index;
    t.record.request_id = config.request_id_prefix + std::to_string(index) + "-" + std::to_string(k);
    send_turn(config, text, t.record);
    const bool ok = t.record.success;
    messages.push_back({{"role", "assistant"}, {"content", t.record.generated_text}});
    keep(std::move(t));
    if (!ok) return;  // a chat client stops at a failed turn
  }
}

}  // namespace

SessionRunResult run_sessions(const std::vector<SampleRequest>& sessions, const SessionRunConfig& config) {
  require(config.max_sessions_in_flight >= 1, "--max-concurrency (sessions in flight) must be >= 1");
  // curl_global_init is not thread-safe: once here, before the workers make their handles.
  curl_global_init(CURL_GLOBAL_DEFAULT);
  SessionRunResult result;
  result.sessions = sessions.size();
  std::mutex mutex;
  std::atomic<std::size_t> next{0};
  std::size_t in_flight = 0;
  const auto keep = [&](TurnRecord&& t) {
    std::lock_guard<std::mutex> lock(mutex);
    result.turns.push_back(std::move(t));
  };
  result.start_ns = now_ns();
  std::vector<std::thread> workers;
  const std::size_t n = std::min(config.max_sessions_in_flight, std::max<std::size_t>(1, sessions.size()));
  for (std::size_t w = 0; w < n; ++w) {
    workers.emplace_back([&] {
      for (std::size_t i = next++; i < sessions.size(); i = next++) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          result.peak_sessions_in_flight = std::max(result.peak_sessions_in_flight, ++in_flight);
        }
        run_one_session(sessions[i], i, config, keep);
        std::lock_guard<std::mutex> lock(mutex);
        --in_flight;
      }
    });
  }
  for (auto& w : workers) w.join();
  result.end_ns = now_ns();
  return result;
}

SessionMetrics calculate_session_metrics(const SessionRunResult& run, const std::vector<double>& percentiles) {
  SessionMetrics m;
  m.sessions = run.sessions;
  m.peak_sessions_in_flight = run.peak_sessions_in_flight;
  m.duration_s = static_cast<double>(run.end_ns - run.start_ns) / 1e9;
  std::vector<double> first, later, e2el;
  std::vector<std::vector<double>> by_turn;
  for (const TurnRecord& t : run.turns) {
    ++m.turns;
    if (!t.record.success) {
      ++m.failed_turns;
      continue;
    }
    const double ttft = static_cast<double>(t.record.first_choices_ns - t.record.dispatch_ns) / 1e6;
    (t.turn == 0 ? first : later).push_back(ttft);
    if (by_turn.size() <= t.turn) by_turn.resize(t.turn + 1);
    by_turn[t.turn].push_back(ttft);
    e2el.push_back(static_cast<double>(t.record.last_choices_ns - t.record.dispatch_ns) / 1e6);
  }
  m.turn_throughput = m.duration_s > 0 ? static_cast<double>(m.turns - m.failed_turns) / m.duration_s : 0;
  m.ttft_first_turn = summarize_ms(first, percentiles);
  m.ttft_later_turns = summarize_ms(later, percentiles);
  m.e2el_all = summarize_ms(e2el, percentiles);
  for (const auto& v : by_turn) m.ttft_by_turn.push_back(summarize_ms(v, percentiles));
  return m;
}

namespace {
std::string row(const std::string& label, double v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-40s %-10.2f", label.c_str(), v);
  return buf;
}
std::string count_row(const std::string& label, std::size_t v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-40s %-10zu", label.c_str(), v);
  return buf;
}
json summary(const MetricSummary& s) {
  json j = {{"count", s.count}, {"mean", s.mean_ms}, {"median", s.median_ms}, {"max", s.max_ms}};
  for (const auto& [p, v] : s.percentiles_ms) j["p" + percentile_label(p)] = v;
  return j;
}
}  // namespace

void print_session_block(std::ostream& out, const SessionMetrics& m) {
  out << "=========== Multi-turn sessions ==========" << std::string(8, '=') << "\n";
  out << count_row("Sessions:", m.sessions) << "\n";
  out << count_row("Turns sent:", m.turns) << "\n";
  out << count_row("Failed turns:", m.failed_turns) << "\n";
  out << count_row("Peak sessions in flight:", m.peak_sessions_in_flight) << "\n";
  out << row("Benchmark duration (s):", m.duration_s) << "\n";
  out << row("Turn throughput (turns/s):", m.turn_throughput) << "\n";
  const auto section = [&](const char* name, const MetricSummary& s) {
    out << row(std::string("Mean ") + name + " (ms):", s.mean_ms) << "\n";
    out << row(std::string("Median ") + name + " (ms):", s.median_ms) << "\n";
    for (const auto& [p, v] : s.percentiles_ms) out << row("P" + percentile_label(p) + " " + name + " (ms):", v) << "\n";
  };
  section("TTFT first turn", m.ttft_first_turn);
  section("TTFT later turns", m.ttft_later_turns);
  out << "---------------- TTFT by turn ------------" << std::string(8, '-') << "\n";
  for (std::size_t k = 0; k < m.ttft_by_turn.size(); ++k) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "turn %-3zu n %-6zu mean %8.2f  median %8.2f ms", k, m.ttft_by_turn[k].count,
                  m.ttft_by_turn[k].mean_ms, m.ttft_by_turn[k].median_ms);
    out << buf << "\n";
  }
  out << std::string(50, '=') << "\n";
}

nlohmann::ordered_json session_json(const SessionMetrics& m, const SessionRunResult& run) {
  nlohmann::ordered_json j;
  j["sessions"] = m.sessions;
  j["turns"] = m.turns;
  j["failed_turns"] = m.failed_turns;
  j["peak_sessions_in_flight"] = m.peak_sessions_in_flight;
  j["duration"] = m.duration_s;
  j["turn_throughput"] = m.turn_throughput;
  j["ttft_first_turn_ms"] = summary(m.ttft_first_turn);
  j["ttft_later_turns_ms"] = summary(m.ttft_later_turns);
  j["e2el_ms"] = summary(m.e2el_all);
  json by_turn = json::array();
  for (const auto& s : m.ttft_by_turn) by_turn.push_back(summary(s));
  j["ttft_by_turn_ms"] = by_turn;
  json turns = json::array();
  for (const TurnRecord& t : run.turns) {
    turns.push_back({{"session", t.session}, {"turn", t.turn}, {"request_id", t.record.request_id},
                     {"history_messages", t.history_messages}, {"request_bytes", t.request_bytes}, {"think_s", t.think_s},
                     {"success", t.record.success}, {"error", t.record.error},
                     {"dispatch_s", static_cast<double>(t.record.dispatch_ns - run.start_ns) / 1e9},
                     {"end_s", static_cast<double>(t.record.end_ns - run.start_ns) / 1e9},
                     {"ttft_ms", t.record.success ? static_cast<double>(t.record.first_choices_ns - t.record.dispatch_ns) / 1e6 : 0.0},
                     {"prompt_tokens", t.record.usage_prompt_tokens}});
  }
  j["turn_records"] = turns;
  return j;
}

}  // namespace encbench::client
