#include "tests/support/test_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace encbench::testing {

const char* to_string(Fault f) {
  switch (f) {
    case Fault::none: return "none";
    case Fault::http_error: return "http-error";
    case Fault::malformed_json: return "malformed-json";
    case Fault::error_event: return "error-event";
    case Fault::error_event_typed: return "error-event-typed";
    case Fault::no_done: return "no-done";
    case Fault::disconnect: return "disconnect";
    case Fault::stall: return "stall";
  }
  return "none";
}

Fault parse_fault(const std::string& name) {
  for (Fault f : {Fault::none, Fault::http_error, Fault::malformed_json, Fault::error_event, Fault::error_event_typed,
                  Fault::no_done, Fault::disconnect, Fault::stall})
    if (name == to_string(f)) return f;
  throw std::invalid_argument("unknown fault '" + name + "'");
}

namespace {

constexpr std::uint64_t kTagListen = 1ull << 40;
constexpr std::uint64_t kTagTimer = 2ull << 40;
constexpr std::uint64_t kTagStop = 3ull << 40;
constexpr std::uint64_t kTagExternalStop = 4ull << 40;

// One write of a response, due at `at`.
struct Step {
  Nanos at = 0;
  std::string bytes;
  bool choices = false;   // completes an event with non-empty choices
  bool last = false;      // the response is complete after this write
  bool close = false;     // close the connection after this write
};

struct Connection {
  int fd = -1;
  std::uint64_t generation = 0;
  std::string in;
  std::string out;
  bool want_write = false;
  bool close_after_flush = false;
  std::vector<Step> steps;
  std::size_t next_step = 0;
  std::size_t served_slot = SIZE_MAX;  // index into served_ for recording
  bool busy = false;                   // a response is in progress
};

struct TimerEntry {
  Nanos at;
  int fd;
  std::uint64_t generation;
  bool operator>(const TimerEntry& o) const { return at > o.at; }
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// `"key":<int>` in a compact or spaced JSON body, without a full parse (bodies can be MBs).
long find_int_field(const std::string& body, const char* key) {
  const std::string needle = std::string("\"") + key + "\"";
  auto pos = body.find(needle);
  if (pos == std::string::npos) return -1;
  pos += needle.size();
  while (pos < body.size() && (body[pos] == ' ' || body[pos] == ':')) ++pos;
  long v = 0;
  bool any = false;
  while (pos < body.size() && body[pos] >= '0' && body[pos] <= '9') v = v * 10 + (body[pos++] - '0'), any = true;
  return any ? v : -1;
}

bool body_says_no_stream(const std::string& body) {
  auto pos = body.find("\"stream\"");
  if (pos == std::string::npos) return true;  // OpenAI default is non-streaming
  pos += 8;
  while (pos < body.size() && (body[pos] == ' ' || body[pos] == ':')) ++pos;
  return body.compare(pos, 5, "false") == 0;
}

std::string hex(std::size_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%zx", n);
  return buf;
}

class Server {
 public:
  Server(const ServerConfig& config, int listen_fd, int stop_fd, int external_stop_fd, std::mutex& mutex,
         std::vector<ServedRequest>& served, std::size_t& served_count, std::size_t& connections, std::size_t& max_busy)
      : config_(config), listen_fd_(listen_fd), stop_fd_(stop_fd), external_stop_fd_(external_stop_fd), mutex_(mutex),
        served_(served), served_count_(served_count), connections_(connections), max_busy_(max_busy) {}

  void run() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    timer_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    add(listen_fd_, EPOLLIN, kTagListen);
    add(timer_, EPOLLIN, kTagTimer);
    if (stop_fd_ >= 0) add(stop_fd_, EPOLLIN, kTagStop);
    if (external_stop_fd_ >= 0) add(external_stop_fd_, EPOLLIN, kTagExternalStop);
    std::vector<epoll_event> events(512);
    bool running = true;
    while (running) {
      const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), -1);
      if (n < 0 && errno != EINTR) break;
      for (int k = 0; k < n; ++k) {
        const std::uint64_t tag = events[k].data.u64;
        if (tag == kTagStop || tag == kTagExternalStop) {
          running = false;
        } else if (tag == kTagListen) {
          accept_all();
        } else if (tag == kTagTimer) {
          std::uint64_t x;
          [[maybe_unused]] auto r = read(timer_, &x, sizeof x);
          run_due();
        } else {
          const int fd = static_cast<int>(tag);
          auto it = conns_.find(fd);
          if (it == conns_.end()) continue;
          if (events[k].events & (EPOLLERR | EPOLLHUP)) {
            close_conn(fd);
            continue;
          }
          if (events[k].events & EPOLLOUT) flush(it->second);
          if (conns_.count(fd) && (events[k].events & EPOLLIN)) on_readable(conns_.at(fd));
        }
      }
    }
    for (auto& [fd, c] : conns_) close(fd);
    conns_.clear();
    close(timer_);
    close(epoll_);
  }

 private:
  void add(int fd, std::uint32_t events, std::uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  void accept_all() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      Connection c;
      c.fd = fd;
      c.generation = ++generation_;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++connections_;
      }
      conns_[fd] = std::move(c);
      add(fd, EPOLLIN, static_cast<std::uint64_t>(fd));
    }
  }

  void close_conn(int fd) {
    if (auto it = conns_.find(fd); it != conns_.end() && it->second.busy) --busy_;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns_.erase(fd);
  }

  void on_readable(Connection& c) {
    char buf[65536];
    for (;;) {
      const ssize_t n = read(c.fd, buf, sizeof buf);
      if (n > 0) {
        c.in.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) {
        close_conn(c.fd);
        return;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      close_conn(c.fd);
      return;
    }
    try_parse(c);
  }

  // Returns false when the connection was closed (c is gone).
  bool try_parse(Connection& c) {
    while (!c.busy) {
      const auto header_end = c.in.find("\r\n\r\n");
      if (header_end == std::string::npos) return true;
      ServedRequest req;
      std::size_t content_length = 0;
      {
        const std::string head = c.in.substr(0, header_end);
        const auto line_end = head.find("\r\n");
        const std::string request_line = head.substr(0, line_end);
        const auto sp1 = request_line.find(' ');
        const auto sp2 = request_line.find(' ', sp1 + 1);
        req.method = request_line.substr(0, sp1);
        req.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
        std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
        while (pos < head.size()) {
          auto next = head.find("\r\n", pos);
          if (next == std::string::npos) next = head.size();
          const std::string line = head.substr(pos, next - pos);
          pos = next + 2;
          const auto colon = line.find(':');
          if (colon == std::string::npos) continue;
          const std::string name = lower(line.substr(0, colon));
          std::string value = line.substr(colon + 1);
          value.erase(0, value.find_first_not_of(' '));
          if (name == "content-length") content_length = std::stoul(value);
          else if (name == "x-request-id") req.request_id = value;
          else if (name == "expect" && lower(value).find("100") != std::string::npos) req.had_expect_100 = true;
        }
      }
      if (c.in.size() < header_end + 4 + content_length) return true;
      const std::string body = c.in.substr(header_end + 4, content_length);
      c.in.erase(0, header_end + 4 + content_length);
      req.body_bytes = body.size();
      req.received_ns = now_ns();
      if (body.size() < 65536) req.body = body;
      if (!respond(c, std::move(req), body)) return false;
    }
    return true;
  }

  const Script& script_for(const std::string& request_id, std::size_t& index) {
    std::size_t k = 0;
    auto pos = request_id.find_last_not_of("0123456789");
    const std::string digits = pos == std::string::npos ? request_id : request_id.substr(pos + 1);
    if (!digits.empty()) k = std::stoul(digits);
    else k = counter_++;
    index = k % config_.scripts.size();
    return config_.scripts[index];
  }

  bool respond(Connection& c, ServedRequest req, const std::string& body) {
    const Nanos t0 = req.received_ns;
    c.steps.clear();
    c.next_step = 0;
    if (req.method == "GET" && req.path == "/v1/models") {
      const std::string root = config_.model_root.empty() ? "" : R"(,"root":")" + config_.model_root + "\"";
      const std::string json = R"({"object":"list","data":[{"id":")" + config_.model + R"(","object":"model")" + root +
                               R"(,"owned_by":"encbench"}]})";
      c.steps.push_back({t0, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                 std::to_string(json.size()) + "\r\n\r\n" + json, false, true, false});
    } else if (req.method != "POST") {
      const std::string json = R"({"error":{"message":"not found","code":404}})";
      c.steps.push_back({t0, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: " +
                                 std::to_string(json.size()) + "\r\n\r\n" + json, false, true, false});
    } else {
      const Script& s = script_for(req.request_id, req.script_index);
      build_completion(c, s, body, req, t0);
    }
    if (config_.no_delay)
      for (auto& st : c.steps) st.at = t0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++served_count_;
      if (config_.record) {
        c.served_slot = served_.size();
        served_.push_back(std::move(req));
      } else {
        c.served_slot = SIZE_MAX;
      }
    }
    c.busy = true;
    ++busy_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      max_busy_ = std::max(max_busy_, busy_);
    }
    return run_steps(c);
  }

  // A machine that slows down over time: the scripted delays grow by slowdown_per_s (a
  // fraction) for each second of wall clock since slowdown_since_unix_ms, across restarts.
  double drift_factor() const {
    if (config_.slowdown_per_s == 0) return 1.0;
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    return 1.0 + config_.slowdown_per_s * static_cast<double>(now_ms - config_.slowdown_since_unix_ms) / 1e3;
  }

  void build_completion(Connection& c, const Script& s, const std::string& body, ServedRequest& req, Nanos t0) {
    const bool chat = req.path.find("chat/completions") != std::string::npos;
    req.stream = !body_says_no_stream(body);
    long tokens = s.tokens;
    if (tokens < 0) tokens = find_int_field(body, chat ? "max_completion_tokens" : "max_tokens");
    if (tokens < 0) tokens = 16;
    req.tokens = static_cast<int>(tokens);
    const double slowdown = drift_factor();
    const Nanos ttft = static_cast<Nanos>(s.ttft_ms * slowdown * 1e6);
    const Nanos itl = static_cast<Nanos>(s.itl_ms * slowdown * 1e6);
    const int tpc = std::max(1, s.tokens_per_chunk);
    const long chunks = (tokens + tpc - 1) / tpc;

    if (s.fault == Fault::http_error) {
      c.steps.push_back({t0 + ttft, "HTTP/1.1 " + std::to_string(s.http_status) + " Scripted Error\r\nContent-Type: application/json\r\nContent-Length: " +
                                        std::to_string(s.error_body.size()) + "\r\n\r\n" + s.error_body, false, true, false});
      return;
    }
    auto chunk_text = [&](long k) {
      const long n = std::min<long>(tpc, tokens - k * tpc);
      std::string text;
      for (long t = 0; t < n; ++t) text += "tok" + std::to_string(k * tpc + t) + " ";
      return text;
    };
    if (!req.stream) {
      std::string text;
      for (long k = 0; k < chunks; ++k) text += chunk_text(k);
      const std::string json =
          std::string(R"({"id":"cmpl-test","object":")") + (chat ? "chat.completion" : "text_completion") +
          R"(","created":0,"model":")" + config_.model + R"(","choices":[{"index":0,)" +
          (chat ? R"("message":{"role":"assistant","content":")" + text + R"("})" : R"("text":")" + text + "\"") +
          R"(,"finish_reason":"length"}],"usage":{"prompt_tokens":)" + std::to_string(s.prompt_tokens) +
          R"(,"completion_tokens":)" + std::to_string(tokens) + R"(,"total_tokens":)" + std::to_string(s.prompt_tokens + tokens) + "}}";
      const Nanos at = t0 + ttft + (chunks > 1 ? (chunks - 1) * itl : 0);
      if (s.fault == Fault::malformed_json) {
        c.steps.push_back({at, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"choices", true, true, false});
      } else {
        c.steps.push_back({at, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                   std::to_string(json.size()) + "\r\n\r\n" + json, true, true, false});
      }
      return;
    }
    const char* nl = s.crlf ? "\r\n" : "\n";
    auto event = [&](const std::string& json) {
      std::string e;
      if (s.comments) e += std::string(": ping") + nl;
      if (s.multiline_data && json.size() > 2 && json.front() == '{') {
        e += "data: " + json.substr(0, 1) + nl + "data: " + json.substr(1) + nl + nl;
      } else {
        e += "data: " + json + nl + nl;
      }
      return e;
    };
    auto add_event = [&](Nanos at, const std::string& payload, bool choices, bool last = false, bool close = false) {
      if (s.split_bytes == 0 || config_.no_delay) {
        c.steps.push_back({at, hex(payload.size()) + "\r\n" + payload + "\r\n", choices, last, close});
        return;
      }
      for (std::size_t off = 0; off < payload.size(); off += s.split_bytes) {
        const std::string piece = payload.substr(off, s.split_bytes);
        const bool final_piece = off + s.split_bytes >= payload.size();
        c.steps.push_back({at, hex(piece.size()) + "\r\n" + piece + "\r\n", choices && final_piece, last && final_piece, close && final_piece});
        at += 200'000;
      }
    };
    const std::string prefix = std::string(R"({"id":"chatcmpl-test","object":")") + (chat ? "chat.completion.chunk" : "text_completion") +
                               R"(","created":0,"model":")" + config_.model + R"(","choices":)";
    auto choice_json = [&](const std::string& text, bool role, bool final_chunk) {
      std::string ch = R"([{"index":0,)";
      if (chat) {
        ch += role ? R"("delta":{"role":"assistant","content":""})" : R"("delta":{"content":")" + text + "\"}";
      } else {
        ch += R"("text":")" + text + "\"";
      }
      ch += R"(,"logprobs":null,"finish_reason":)";
      ch += final_chunk ? "\"length\"" : "null";
      return prefix + ch + "}]}";
    };
    c.steps.push_back({t0, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n",
                       false, false, false});
    if (s.fault == Fault::stall) {
      c.steps.back().last = false;
      return;  // nothing more, ever
    }
    if (s.role_chunk && chat) add_event(t0 + ttft, event(choice_json("", true, false)), true);
    for (long k = 0; k < chunks; ++k) {
      const Nanos at = t0 + ttft + k * itl;
      if (k == s.fault_after_chunks && s.fault != Fault::none && s.fault != Fault::no_done) {
        switch (s.fault) {
          case Fault::malformed_json:
            add_event(at, event("{\"choices\": [ this is not json"), false);
            break;
          case Fault::error_event:
            add_event(at, event(R"({"error":{"message":"scripted error event","type":"InternalServerError","code":500}})"), false);
            break;
          case Fault::error_event_typed:
            add_event(at, std::string("event: error") + nl + "data: {\"message\":\"scripted typed error\"}" + nl + nl, false);
            break;
          case Fault::disconnect:
            c.steps.push_back({at, "", false, true, true});
            return;
          default:
            break;
        }
        if (s.fault != Fault::disconnect) break;
      }
      add_event(at, event(choice_json(chunk_text(k), false, k + 1 == chunks)), true);
    }
    const Nanos end_at = t0 + ttft + std::max<long>(0, chunks - 1) * itl;
    if (s.usage) {
      add_event(end_at, event(prefix + R"([],"usage":{"prompt_tokens":)" + std::to_string(s.prompt_tokens) +
                              R"(,"completion_tokens":)" + std::to_string(tokens) + R"(,"total_tokens":)" +
                              std::to_string(s.prompt_tokens + tokens) + "}}"),
                false);
    }
    if (s.fault != Fault::no_done && !s.omit_done) add_event(end_at, event("[DONE]"), false);
    c.steps.push_back({end_at, "0\r\n\r\n", false, true, false});
  }

  // Writes every step that is due; schedules a timer for the next one. Returns false when the
  // connection was closed (c is gone).
  bool run_steps(Connection& c) {
    const Nanos now = now_ns();
    while (c.next_step < c.steps.size() && c.steps[c.next_step].at <= now) {
      Step& st = c.steps[c.next_step++];
      c.out += st.bytes;
      const int fd = c.fd;
      const Nanos written = now_ns();  // taken before send(): a reader can never see it earlier
      if (!flush(c)) return false;
      if (c.served_slot != SIZE_MAX) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (st.choices) served_[c.served_slot].choices_sent_ns.push_back(written);
        if (st.last) served_[c.served_slot].done_sent_ns = written;
      }
      if (st.close) {
        shutdown(fd, SHUT_RDWR);
        close_conn(fd);
        return false;
      }
      if (st.last) {
        c.busy = false;
        --busy_;
        c.steps.clear();
        c.next_step = 0;
        return try_parse(c);  // a pipelined next request, if any
      }
    }
    if (c.next_step < c.steps.size()) schedule(c, c.steps[c.next_step].at);
    return true;
  }

  void schedule(Connection& c, Nanos at) {
    timers_.push({at, c.fd, c.generation});
    if (timers_.top().at == at) arm(at);
  }
  void arm(Nanos at) {
    itimerspec spec{};
    spec.it_value.tv_sec = at / 1'000'000'000;
    spec.it_value.tv_nsec = at % 1'000'000'000;
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
    timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);
  }

  void run_due() {
    const Nanos now = now_ns();
    while (!timers_.empty() && timers_.top().at <= now) {
      const TimerEntry e = timers_.top();
      timers_.pop();
      auto it = conns_.find(e.fd);
      if (it == conns_.end() || it->second.generation != e.generation) continue;
      run_steps(it->second);
    }
    if (!timers_.empty()) arm(timers_.top().at);
  }

  bool flush(Connection& c) {
    while (!c.out.empty()) {
      const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close_conn(c.fd);
      return false;
    }
    const bool want = !c.out.empty();
    if (want != c.want_write) {
      c.want_write = want;
      epoll_event ev{};
      ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
      ev.data.u64 = static_cast<std::uint64_t>(c.fd);
      epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
    }
    return true;
  }

  const ServerConfig& config_;
  int listen_fd_, stop_fd_, external_stop_fd_;
  std::mutex& mutex_;
  std::vector<ServedRequest>& served_;
  std::size_t& served_count_;
  std::size_t& connections_;
  std::size_t& max_busy_;
  std::size_t busy_ = 0;
  int epoll_ = -1, timer_ = -1;
  std::unordered_map<int, Connection> conns_;
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<TimerEntry>> timers_;
  std::uint64_t generation_ = 0;
  std::size_t counter_ = 0;
};

}  // namespace

TestServer::TestServer(ServerConfig config) : config_(std::move(config)) {
  if (config_.scripts.empty()) config_.scripts.push_back(Script{});
}

TestServer::~TestServer() { stop(); }

void TestServer::bind() {
  if (listen_fd_ >= 0) return;
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(config_.port));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
  if (listen(listen_fd_, config_.backlog) != 0) throw std::runtime_error(std::string("listen: ") + std::strerror(errno));
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
}

void TestServer::start() {
  bind();
  stop_event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  thread_ = std::thread([this] { loop(-1); });
}

void TestServer::serve_here(int stop_fd) {
  bind();
  loop(stop_fd);
}

void TestServer::loop(int external_stop_fd) {
  Server server(config_, listen_fd_, stop_event_fd_, external_stop_fd, mutex_, served_, served_count_, connections_, max_busy_);
  server.run();
}

void TestServer::stop() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto r = write(stop_event_fd_, &one, sizeof one);
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_), listen_fd_ = -1;
  if (stop_event_fd_ >= 0) close(stop_event_fd_), stop_event_fd_ = -1;
}

std::vector<ServedRequest> TestServer::served() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return served_;
}

std::size_t TestServer::served_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return served_count_;
}

}  // namespace encbench::testing

namespace encbench::testing {
std::size_t TestServer::connections_accepted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return connections_;
}
std::size_t TestServer::max_concurrent_responses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_busy_;
}
}  // namespace encbench::testing
