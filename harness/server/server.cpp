#include "harness/server/server.hpp"

// Boost 1.74 asio/awaitable.hpp uses std::exchange without including <utility> (C++20 mode).
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "harness/core/error.hpp"
#include "harness/core/mix64.hpp"
#include "harness/device/measured_op_times.hpp"
#include "harness/server/api_error.hpp"
#include "harness/server/openai_response.hpp"

namespace encbench::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::int64_t HttpStats::requests_of(const std::string& route, int status) const {
  const auto route_it = requests.find(route);
  if (route_it == requests.end()) return 0;
  const auto status_it = route_it->second.find(status);
  return status_it == route_it->second.end() ? 0 : status_it->second;
}

namespace {

// Uniform in [0, 1) from a hash: decides which requests a fault knob hits.
double unit_from(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

std::string error_type_for(int status) {
  if (status >= 500) return "server_error";
  if (status == 404) return "invalid_request_error";
  return "invalid_request_error";
}

// The client's request id (encbench bench serve sends one per request), kept for the engine
// timeline; capped so that a client cannot grow the profile's memory through it.
constexpr const char* kRequestIdHeader = "x-request-id";
constexpr std::size_t kMaxRequestIdBytes = 256;

RequestTag request_tag(std::string_view request_id, Nanos arrival_ns) {
  return {std::string(request_id.substr(0, kMaxRequestIdBytes)), "", arrival_ns};
}

// Routes are counted under fixed labels so /metrics cardinality stays bounded.
std::string route_label(std::string_view target) {
  for (const char* known : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health",
                            "/metrics", "/start_profile", "/stop_profile"}) {
    if (target == known) return known;
  }
  return "other";
}

std::string chunk_frame(std::string_view payload) {
  if (payload.empty()) return {};  // an empty chunk would end the body
  char size[32];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", payload.size());
  std::string out;
  out.reserve(payload.size() + static_cast<std::size_t>(n) + 2);
  out.append(size, static_cast<std::size_t>(n));
  out.append(payload);
  out += "\r\n";
  return out;
}

}  // namespace

// A request's share of --max-inflight-bytes: the body bytes that have arrived, grown as they
// arrive (so a declared but unsent body holds nothing), held until its parse is done (the body and
// the decoded images freed) and given back by the destructor wherever the request ends: answered,
// refused, or its connection dropped.
class InflightReservation {
 public:
  InflightReservation(std::atomic<std::int64_t>& counter, std::int64_t limit)
      : counter_(counter), limit_(limit) {}
  ~InflightReservation() {
    if (bytes_ > 0) counter_.fetch_sub(bytes_);
  }
  InflightReservation(const InflightReservation&) = delete;
  InflightReservation& operator=(const InflightReservation&) = delete;
  // Holds `total` bytes in all; false (nothing more held) when that would pass the limit.
  bool grow_to(std::int64_t total) {
    const std::int64_t more = total - bytes_;
    if (more <= 0) return true;
    std::int64_t now = counter_.load();
    while (now + more <= limit_) {
      if (counter_.compare_exchange_weak(now, now + more)) {
        bytes_ = total;
        return true;
      }
    }
    return false;
  }

 private:
  std::atomic<std::int64_t>& counter_;
  std::int64_t limit_;
  std::int64_t bytes_ = 0;
};

// One request handed to a parse lane (owned by the lambdas that carry it between threads).
struct ParseJob {
  Endpoint endpoint = Endpoint::chat_completions;
  std::uint64_t number = 0;
  bool disconnect = false;
  std::string body;
  std::shared_ptr<InflightReservation> reservation;
  // The header's arrival: where the API-server stage starts, as the virtual loop starts it at the
  // client's send (the body's transfer then falls inside the modelled window, as the parse does).
  Nanos received_ns = 0;
};

// Counts an image request from entering the image lane until its parse ends (--max-decode-queue).
class DecodeSlot {
 public:
  explicit DecodeSlot(std::atomic<int>& queued) : queued_(queued) {}
  ~DecodeSlot() { queued_.fetch_sub(1); }
  DecodeSlot(const DecodeSlot&) = delete;
  DecodeSlot& operator=(const DecodeSlot&) = delete;

 private:
  std::atomic<int>& queued_;
};

class Server::Impl {
 public:
  class SessionConnection;
  class SessionLimits;
  class SessionReader;
  class SessionStreamer;
  class Session;

  explicit Impl(ServerConfig config);
  ~Impl();
  void start();
  void stop();

  // --- shared with sessions (io thread unless noted) ---
  ServerConfig config_;
  // Declared before the io_context: handlers destroyed with it still unregister sessions here.
  mutable std::mutex stats_mutex_;
  HttpStats stats_;
  std::mutex sessions_mutex_;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;
  std::unique_ptr<EngineCoreThread> engine_;
  ApiServerStage api_server_{config_.api_server, config_.max_api_server_queue};  // after config_: built from it
  std::atomic<std::uint64_t> request_counter_{0};
  // Request bytes held now against --max-inflight-bytes (io thread reserves, decode threads
  // release): an atomic so that neither waits on the other.
  std::atomic<std::int64_t> inflight_bytes_{0};
  std::atomic<int> decode_queued_{0};  // image requests queued or decoding (--max-decode-queue)

  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  asio::steady_timer accept_retry_{io_};
  std::unique_ptr<asio::thread_pool> decode_pool_;  // image lane: requests with images
  std::unique_ptr<asio::thread_pool> text_pool_;    // text lane: never waits behind a decode
  std::thread io_thread_;
  std::uint16_t bound_port_ = 0;
  bool running_ = false;
  std::mutex lifecycle_mutex_;

  void accept_next();
  void count_request(const std::string& route, int status) {
    std::lock_guard lock(stats_mutex_);
    ++stats_.requests[route][status];
  }
  template <class F>
  void with_stats(F&& f) {
    std::lock_guard lock(stats_mutex_);
    f(stats_);
  }
  std::string metrics_text() const;
};

// One TCP connection, told in five parts by what each does, each built on the one before it:
//   SessionConnection  the socket: writing responses, deadlines, watching for the client to go;
//   SessionLimits      what the server refuses or injects: bytes in flight, the decode queue,
//                      the API-server stage's bound, the fault knobs;
//   SessionReader      reading a request: its header, then its body piece by piece;
//   SessionStreamer    one generation: the engine's events to a body or an SSE stream;
//   Session            routing: which endpoint answers, and a generation's way through the parse
//                      lanes and the API-server stage to the engine.
// A part calls the parts below it directly and the parts above it through the virtual hooks
// read_header (reading), handle_request (routing) and pump_stream (streaming).
class Server::Impl::SessionConnection : public std::enable_shared_from_this<SessionConnection> {
 public:
  SessionConnection(Impl& server, tcp::socket socket)
      : server_(server), socket_(std::move(socket)), deadline_(server.io_), stall_timer_(server.io_),
        api_server_timer_(server.io_) {}
  virtual ~SessionConnection() = default;
  SessionConnection(const SessionConnection&) = delete;
  SessionConnection& operator=(const SessionConnection&) = delete;

  void start() {
    boost::system::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);  // SSE chunks must leave at once
    read_header();
  }

  // Server shutdown: drop the connection now.
  void close() {
    if (closed_) return;
    closed_ = true;
    if (engine_handle_) engine_handle_->cancel();
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    deadline_.cancel();
    stall_timer_.cancel();
    api_server_timer_.cancel();
  }

 protected:
  enum class Phase { header, body, processing, linger };

  Impl& server_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  asio::steady_timer deadline_;
  asio::steady_timer stall_timer_;
  asio::steady_timer api_server_timer_;  // gives the request's API-server place back at its modelled end
  Phase phase_ = Phase::header;
  bool closed_ = false;

  // Current request.
  std::string route_;
  bool keep_alive_ = true;
  bool watch_pending_ = false;
  bool want_next_request_ = false;
  bool response_complete_ = false;
  bool close_after_write_ = false;
  bool abort_after_write_ = false;  // disconnect fault: drop without the final chunk
  bool stalled_ = false;            // stall fault: output held until the stall timer flushes it
  bool lingering_ = false;          // response sent, waiting for the client to close
  std::optional<ResponseFormatter> formatter_;
  std::shared_ptr<RequestHandle> engine_handle_;

  // Output.
  std::string pending_;
  std::string writing_;
  bool write_in_flight_ = false;

  // Hooks into the parts above: start reading the next request; format owed stream output.
  virtual void read_header() = 0;
  virtual void pump_stream() = 0;

  // This session as the part `Part` (the object is one Session, owned by a shared_ptr).
  template <class Part>
  std::shared_ptr<Part> self_as() {
    return std::static_pointer_cast<Part>(shared_from_this());
  }

  void arm_deadline(Nanos timeout, Phase phase) {
    deadline_.expires_after(std::chrono::nanoseconds(timeout));
    deadline_.async_wait([weak = weak_from_this(), phase](boost::system::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->on_deadline(phase);
    });
  }

  void on_deadline(Phase phase) {
    if (closed_) return;
    server_.with_stats([&](HttpStats& s) {
      if (phase == Phase::header) ++s.header_timeouts;
      else if (phase == Phase::body) ++s.body_timeouts;
      else if (phase == Phase::processing) ++s.write_timeouts;
    });
    close();
  }

  // A read kept pending while a request is processed: HTTP/1.1 clients send nothing more until
  // the response ends, so its completion means the client closed (or pipelined a request, whose
  // bytes are kept for the next parse).
  void watch_connection() {
    if (watch_pending_ || closed_) return;
    watch_pending_ = true;
    socket_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->on_watch(ec, n);
                            });
  }

  void on_watch(beast::error_code ec, std::size_t bytes) {
    watch_pending_ = false;
    if (closed_) return;
    buffer_.commit(bytes);
    if (lingering_) {
      buffer_.consume(buffer_.size());
      if (ec) return close();
      return watch_connection();
    }
    if (want_next_request_) {
      want_next_request_ = false;
      if (ec && ec != asio::error::operation_aborted) return close();
      return read_header();
    }
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      if (!response_complete_) server_.with_stats([](HttpStats& s) { ++s.client_disconnects; });
      return close();
    }
    if (buffer_.size() > server_.config_.max_header_bytes + server_.config_.max_body_bytes) return close();
    watch_connection();
  }

  void send_error(const ApiError& error) {
    send_response(error.status, "application/json", error_body(error));
  }

  void reject_and_close(int status, std::string message, std::string code) {
    keep_alive_ = false;
    send_error(ApiError{status, error_type_for(status), std::move(message), "", std::move(code)});
  }

  void send_response(int status, std::string_view content_type, std::string_view body,
                     std::string_view extra_headers = {}) {
    if (engine_handle_) {
      engine_handle_->cancel();
      engine_handle_.reset();
    }
    server_.count_request(route_.empty() ? "other" : route_, status);
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                      "\r\nserver: encbench\r\ncontent-type: " + std::string(content_type) +
                      "\r\ncontent-length: " + std::to_string(body.size()) + "\r\nconnection: " +
                      (keep_alive_ ? "keep-alive" : "close") + "\r\n" + std::string(extra_headers) +
                      "\r\n";
    out += body;
    response_complete_ = true;
    close_after_write_ = !keep_alive_;
    queue_raw(std::move(out));
  }

  std::size_t unsent_bytes() const { return pending_.size() + writing_.size(); }

  void queue_raw(std::string bytes) {
    if (closed_) return;
    if (pending_.empty()) pending_ = std::move(bytes);
    else pending_ += bytes;
    flush();
  }

  void flush() {
    if (write_in_flight_ || closed_) return;
    if (pending_.empty()) return after_writes_drained();
    if (stalled_ && !abort_after_write_) return;  // the stall timer flushes later
    writing_.swap(pending_);
    pending_.clear();
    write_in_flight_ = true;
    arm_deadline(server_.config_.write_timeout_ns, Phase::processing);
    asio::async_write(socket_, asio::buffer(writing_),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        self->write_in_flight_ = false;
                        self->deadline_.cancel();
                        self->writing_.clear();
                        if (self->closed_) return;
                        if (ec) {
                          if (!self->response_complete_)
                            self->server_.with_stats([](HttpStats& s) { ++s.client_disconnects; });
                          return self->close();
                        }
                        self->pump_stream();
                        self->flush();
                      });
  }

  // Closing right after a response while request bytes are still unread would make the kernel
  // send RST, and the client could lose the response (e.g. a 413 before the body). So: stop
  // sending, discard what arrives until the client closes, and give up after a short while.
  void start_linger() {
    lingering_ = true;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    arm_deadline(2'000'000'000, Phase::linger);
    watch_connection();
  }

  void after_writes_drained() {
    if (abort_after_write_) {
      abort_after_write_ = false;
      return close();
    }
    if (!response_complete_) return;
    if (close_after_write_) return start_linger();
    // Ready for the next request on this connection.
    response_complete_ = false;
    formatter_.reset();
    if (watch_pending_) {
      want_next_request_ = true;
      boost::system::error_code ec;
      socket_.cancel(ec);
      return;
    }
    read_header();
  }
};

// What the server refuses or injects for a request: its share of --max-inflight-bytes, its place
// in the decode queue (--max-decode-queue) and the API-server stage (--max-api-server-queue), and
// the fault knobs (--fail-rate, --disconnect-rate, --stall-ms).
class Server::Impl::SessionLimits : public SessionConnection {
 public:
  using SessionConnection::SessionConnection;

 protected:
  std::shared_ptr<InflightReservation> reservation_;  // this request's body bytes
  std::int64_t disconnect_at_token_ = -1;
  bool stall_pending_ = false;  // stall fault armed for this stream

  // Before the body is read: refused with 503 + Retry-After (the body never read) when its
  // `declared` length (a chunked body: --max-body-bytes) would not fit beside the bytes that have
  // arrived for other requests. Its own bytes are held as they arrive (hold_arrived_bytes).
  bool reserve_body_bytes(std::uint64_t declared) {
    const auto& config = server_.config_;
    if (declared == 0) return true;  // GET, /health, ...: never refused for memory
    reservation_ = std::make_shared<InflightReservation>(server_.inflight_bytes_,
                                                         static_cast<std::int64_t>(config.max_inflight_bytes));
    if (static_cast<std::int64_t>(declared) + server_.inflight_bytes_.load() <=
        static_cast<std::int64_t>(config.max_inflight_bytes))
      return true;
    refuse_busy();
    return false;
  }

  // The `arrived` bytes of this body (parsed, or waiting in the buffer) are held against
  // --max-inflight-bytes; false: over it, refused with 503 and the connection closed.
  bool hold_arrived_bytes(std::int64_t arrived) {
    if (!reservation_) return true;
    if (reservation_->grow_to(arrived)) return true;
    refuse_busy();
    return false;
  }

  void refuse_busy() {
    reservation_.reset();
    server_.with_stats([](HttpStats& s) { ++s.inflight_rejections; });
    keep_alive_ = false;
    const ApiError busy{503, "server_error",
                        "the server holds its limit of " + std::to_string(server_.config_.max_inflight_bytes) +
                            " request bytes in flight (--max-inflight-bytes); retry later",
                        "", "server_busy"};
    send_response(503, "application/json", error_body(busy), "retry-after: 1\r\n");
  }

  // A place in the image lane's queue, or none (503 sent) when --max-decode-queue requests with
  // images already wait or decode.
  std::shared_ptr<DecodeSlot> enter_decode_queue() {
    if (server_.decode_queued_.fetch_add(1) >= server_.config_.max_decode_queue) {
      server_.decode_queued_.fetch_sub(1);
      server_.with_stats([](HttpStats& s) { ++s.decode_queue_rejections; });
      const ApiError full{503, "server_error",
                          std::to_string(server_.config_.max_decode_queue) +
                              " requests with images are already waiting to be decoded (--max-decode-queue); "
                              "retry later",
                          "", "decode_queue_full"};
      send_response(503, "application/json", error_body(full), "retry-after: 1\r\n");
      return nullptr;
    }
    return std::make_shared<DecodeSlot>(server_.decode_queued_);
  }

  static ApiError api_server_full_error(std::int64_t bound) {
    return ApiError{503, "server_error",
                    std::to_string(bound) +
                        " requests are already in the API-server stage (--max-api-server-queue); retry later",
                    "", "api_server_queue_full"};
  }

  // The fault knobs' draw for request `number`: false (a 500 sent) when --fail-rate fails it;
  // otherwise `disconnect` says whether --disconnect-rate drops it mid-answer, and a stall
  // (--stall-ms) is armed for its stream.
  bool pass_fault_draw(std::uint64_t number, bool& disconnect) {
    const FaultConfig& faults = server_.config_.faults;
    const std::uint64_t fault_bits = mix64(faults.seed ^ mix64(number));
    if (faults.fail_rate > 0 && unit_from(fault_bits) < faults.fail_rate) {
      server_.with_stats([](HttpStats& s) { ++s.faults_failed; });
      send_error(ApiError{500, "server_error", "injected failure (--fail-rate)", "", "injected_failure"});
      return false;
    }
    disconnect = faults.disconnect_rate > 0 && unit_from(mix64(fault_bits + 1)) < faults.disconnect_rate;
    stall_pending_ = faults.stall_ms > 0;
    return true;
  }

  // The disconnect fault on a stream: stop after the frame now queued (the final chunk never sent).
  void drop_after_queued_frame() {
    abort_after_write_ = true;
    server_.with_stats([](HttpStats& s) { ++s.faults_disconnected; });
    if (engine_handle_) engine_handle_->cancel();
  }

  void inject_disconnect() {
    server_.with_stats([](HttpStats& s) { ++s.faults_disconnected; });
    if (engine_handle_) engine_handle_->cancel();
    close();
  }

  void start_stall() {
    stalled_ = true;
    server_.with_stats([](HttpStats& s) { ++s.faults_stalled; });
    stall_timer_.expires_after(std::chrono::milliseconds(server_.config_.faults.stall_ms));
    stall_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (!self || ec) return;
      auto& limits = static_cast<SessionLimits&>(*self);
      limits.stalled_ = false;
      limits.flush();
    });
  }
};

// Reads one request: its header (under --header-timeout-s and --max-header-bytes), then its body
// piece by piece (under --body-timeout-s and --max-body-bytes, its bytes held as they arrive).
class Server::Impl::SessionReader : public SessionLimits {
 public:
  using SessionLimits::SessionLimits;

 protected:
  std::optional<http::request_parser<http::string_body>> parser_;
  RequestTag tag_;  // x-request-id and header time, for the engine timeline

  // Hook into routing: the request has been read whole.
  virtual void handle_request() = 0;

  void read_header() override {
    if (closed_) return;
    phase_ = Phase::header;
    reservation_.reset();  // the previous request's body is gone with its parser
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.config_.max_header_bytes));
    parser_->body_limit(server_.config_.max_body_bytes);
    arm_deadline(server_.config_.header_timeout_ns, Phase::header);
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = self_as<SessionReader>()](beast::error_code ec, std::size_t) {
                              self->on_header(ec);
                            });
  }

  void on_header(beast::error_code ec) {
    deadline_.cancel();
    if (closed_) return;
    if (ec) return on_read_error(ec);
    auto& req = parser_->get();
    const auto request_id = req[kRequestIdHeader];
    tag_ = request_tag(std::string_view(request_id.data(), request_id.size()), now_ns());
    route_ = route_label(std::string_view(req.target().data(), req.target().size()).substr(
        0, std::string_view(req.target().data(), req.target().size()).find('?')));
    if (const auto length = parser_->content_length();
        length && *length > server_.config_.max_body_bytes) {
      return reject_and_close(413, "request body of " + std::to_string(*length) +
                                       " bytes is over the server's limit of " +
                                       std::to_string(server_.config_.max_body_bytes) +
                                       " bytes (--max-body-bytes)",
                              "body_too_large");
    }
    const std::uint64_t declared =
        parser_->chunked() ? server_.config_.max_body_bytes : parser_->content_length().value_or(0);
    if (!reserve_body_bytes(declared)) return;
    // Answer `Expect: 100-continue` (curl sends it for bodies over 1 MiB) instead of letting the
    // client wait a second for it.
    const auto expect = req[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      auto interim = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      asio::async_write(socket_, asio::buffer(*interim),
                        [self = self_as<SessionReader>(), interim](beast::error_code wec, std::size_t) {
                          if (wec) return self->close();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  // The body is read piece by piece so that its bytes are held as they arrive.
  void read_body() {
    if (closed_) return;
    phase_ = Phase::body;
    arm_deadline(server_.config_.body_timeout_ns, Phase::body);
    read_body_some();
  }

  void read_body_some() {
    if (!hold_arrived_bytes(static_cast<std::int64_t>(parser_->get().body().size() + buffer_.size())))
      return void(deadline_.cancel());
    if (parser_->is_done()) {
      deadline_.cancel();
      return handle_request();
    }
    http::async_read_some(socket_, buffer_, *parser_,
                          [self = self_as<SessionReader>()](beast::error_code ec, std::size_t) {
                            if (self->closed_) return;
                            if (ec) {
                              self->deadline_.cancel();
                              return self->on_read_error(ec);
                            }
                            self->read_body_some();
                          });
  }

  void on_read_error(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return close();
    }
    server_.with_stats([](HttpStats& s) { ++s.malformed_requests; });
    if (ec == http::error::body_limit)
      return reject_and_close(413, "request body is over the server's limit of " +
                                       std::to_string(server_.config_.max_body_bytes) +
                                       " bytes (--max-body-bytes)",
                              "body_too_large");
    if (ec == http::error::header_limit)
      return reject_and_close(431, "request header is over the server's limit of " +
                                       std::to_string(server_.config_.max_header_bytes) + " bytes",
                              "header_too_large");
    reject_and_close(400, "malformed HTTP request: " + ec.message(), "bad_http");
  }
};

// One generation: submits a parsed request to the engine and turns the engine's events into a
// JSON body or an SSE stream (held back under --max-unsent-bytes while the client does not read).
class Server::Impl::SessionStreamer : public SessionReader {
 public:
  using SessionReader::SessionReader;

 protected:
  GenerationRequest request_;
  std::uint64_t word_seed_ = 0;
  std::string text_;  // non-streaming output so far
  std::int64_t tokens_sent_ = 0;
  bool streaming_active_ = false;

  // Stream output owed but not formatted yet (pump_stream).
  std::string role_chunk_;       // goes out with the first token
  std::int64_t owed_first_ = 0;  // index of the first owed token
  std::int64_t owed_tokens_ = 0;
  bool owed_finished_ = false;   // the engine is done: the last owed token ends the stream
  FinishReason owed_finish_ = FinishReason::length;
  bool backpressured_ = false;   // waiting for the client to read (--max-unsent-bytes)

  // `ready`: when the request is due at the engine (its modelled API-server end; 0: now).
  void submit(GenerationRequest request, std::uint64_t number, bool disconnect, Nanos ready = 0) {
    request_ = std::move(request);
    const std::uint64_t seed =
        request_.seed ? mix64(static_cast<std::uint64_t>(*request_.seed)) : request_.body_hash;
    word_seed_ = mix64(seed ^ server_.config_.seed);
    EngineRequest engine_request;
    engine_request.prompt_tokens = request_.prompt_tokens();
    engine_request.content_hash = request_.prompt_hash;
    engine_request.tag = tag_;
    engine_request.ready_ns = ready;
    for (const ImageInput& image : request_.images) engine_request.images.push_back({image.tokens, image.grid, image.mm_hash});
    engine_request.plan = plan_output(word_seed_, request_.max_tokens, request_.ignore_eos,
                                      server_.config_.eos_mean_tokens);
    if (disconnect) disconnect_at_token_ = std::max<std::int64_t>(1, engine_request.plan.tokens / 2);
    const char* prefix = request_.endpoint == Endpoint::chat_completions ? "chatcmpl-" : "cmpl-";
    char id[40];
    std::snprintf(id, sizeof id, "%s%016llx%08llx", prefix,
                  static_cast<unsigned long long>(mix64(number ^ server_.config_.seed)),
                  static_cast<unsigned long long>(number & 0xffffffffu));
    engine_request.tag.response_id = id;
    formatter_.emplace(request_.endpoint, id, unix_seconds(), request_.model);
    text_.clear();
    tokens_sent_ = 0;
    role_chunk_.clear();
    owed_tokens_ = 0;
    owed_finished_ = false;
    set_backpressured(false);
    std::weak_ptr<SessionStreamer> weak = self_as<SessionStreamer>();
    auto sink = [weak, &io = server_.io_](EngineEvent event) {
      asio::post(io, [weak, event = std::move(event)]() mutable {
        if (auto self = weak.lock()) self->on_engine_event(std::move(event));
      });
    };
    engine_handle_ = server_.engine_->submit(std::move(engine_request), std::move(sink));
    if (!engine_handle_) {
      formatter_.reset();
      return send_error(ApiError{503, "server_error",
                                 "The server is overloaded: " +
                                     std::to_string(server_.config_.engine.max_waiting) +
                                     " requests are already waiting (--max-waiting); retry later.",
                                 "", "queue_full"});
    }
  }

  void on_engine_event(EngineEvent event) {
    // A disconnect fault already scheduled: nothing more is written (under load further tokens,
    // and then the final chunk and [DONE], arrived before the write drained and the fault was lost).
    if (closed_ || response_complete_ || abort_after_write_ || !formatter_) return;
    if (event.finish == FinishReason::error) return on_engine_error(event);
    if (!request_.stream) {
      for (std::int64_t i = 0; i < event.token_count; ++i)
        text_ += pseudo_word(word_seed_, event.first_token + i);
      tokens_sent_ += event.token_count;
      if (disconnect_at_token_ >= 0 && tokens_sent_ >= disconnect_at_token_) return inject_disconnect();
      if (!event.finished) return;
      engine_handle_.reset();
      const Usage usage{request_.prompt_tokens(), tokens_sent_};
      record_usage(usage);
      return send_response(200, "application/json", formatter_->final_body(text_, event.finish, usage));
    }
    on_stream_tokens(event);
  }

  void on_engine_error(const EngineEvent& event) {
    engine_handle_.reset();
    // Nothing sent yet: a plain error response (503 when the device ran out of memory, which a
    // client may retry; the server keeps serving). Mid-stream: an error event, as vLLM does.
    if (!request_.stream || !streaming_active_) {
      if (event.out_of_memory)
        return send_error(ApiError{503, "server_error", event.error, "", "out_of_device_memory"});
      return send_error(ApiError{500, "server_error", event.error, "", "engine_error"});
    }
    // Tokens still owed are dropped: the error ends the stream.
    std::string sse = std::move(role_chunk_);
    role_chunk_.clear();
    owed_tokens_ = 0;
    owed_finished_ = false;
    formatter_->append_error_event(sse, event.error);
    ResponseFormatter::append_done(sse);
    finish_stream(std::move(sse));
  }

  // Stream tokens are owed as a count and formatted by pump_stream while the connection's unsent
  // output is under --max-unsent-bytes, so a client that does not read costs a counter, not a
  // buffer of the whole answer.
  void on_stream_tokens(const EngineEvent& event) {
    if (!streaming_active_) begin_stream(role_chunk_);  // sent with the first token, as vLLM does
    if (owed_tokens_ == 0) owed_first_ = event.first_token;
    owed_tokens_ += event.token_count;
    if (event.finished) {
      owed_finished_ = true;
      owed_finish_ = event.finish;
      engine_handle_.reset();
    }
    pump_stream();
  }

  void set_backpressured(bool paused) {
    if (paused == backpressured_) return;
    backpressured_ = paused;
    server_.with_stats([paused](HttpStats& s) {
      if (paused) ++s.stream_backpressure_waits;
      s.streams_backpressured += paused ? 1 : -1;
    });
  }

  void pump_stream() override {
    if (closed_ || response_complete_ || abort_after_write_ || !formatter_ || !streaming_active_) return;
    constexpr std::int64_t kTokensPerFrame = 64;
    const ResponseFormatter& fmt = *formatter_;
    while (owed_tokens_ > 0 || owed_finished_) {
      if (unsent_bytes() >= server_.config_.max_unsent_bytes) return set_backpressured(true);
      set_backpressured(false);
      std::string sse = std::move(role_chunk_);
      role_chunk_.clear();
      const std::int64_t n = std::min(owed_tokens_, kTokensPerFrame);
      const bool final_frame = owed_finished_ && n == owed_tokens_;
      for (std::int64_t i = 0; i < n; ++i)
        fmt.append_token_chunk(sse, pseudo_word(word_seed_, owed_first_ + i), final_frame && i + 1 == n,
                               owed_finish_);
      owed_first_ += n;
      owed_tokens_ -= n;
      tokens_sent_ += n;
      if (final_frame) return end_stream(std::move(sse));
      queue_raw(chunk_frame(sse));
      if (disconnect_at_token_ >= 0 && tokens_sent_ >= disconnect_at_token_) return drop_after_queued_frame();
      if (stall_pending_) {
        stall_pending_ = false;
        start_stall();
      }
    }
  }

  void end_stream(std::string sse) {
    owed_finished_ = false;
    const Usage usage{request_.prompt_tokens(), tokens_sent_};
    if (request_.include_usage) formatter_->append_usage_chunk(sse, usage);
    ResponseFormatter::append_done(sse);
    record_usage(usage);
    finish_stream(std::move(sse));
  }

  void record_usage(const Usage& usage) {
    server_.with_stats([&](HttpStats& s) {
      s.completion_tokens_sent += usage.completion_tokens;
      s.prompt_tokens_served += usage.prompt_tokens;
    });
  }

  void begin_stream(std::string& sse) {
    streaming_active_ = true;
    server_.with_stats([](HttpStats& s) { ++s.streams_active; });
    server_.count_request(route_, 200);
    std::string head =
        "HTTP/1.1 200 OK\r\nserver: encbench\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
        "cache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: ";
    head += keep_alive_ ? "keep-alive\r\n\r\n" : "close\r\n\r\n";
    queue_raw(std::move(head));
    formatter_->append_role_chunk(sse);
  }

  void finish_stream(std::string sse) {
    std::string out = chunk_frame(sse);
    out += "0\r\n\r\n";
    if (streaming_active_) {
      streaming_active_ = false;
      server_.with_stats([](HttpStats& s) { --s.streams_active; });
    }
    response_complete_ = true;
    close_after_write_ = !keep_alive_;
    queue_raw(std::move(out));
  }
};

// Routing: answers each endpoint, and takes a generation through a parse lane (text, or image
// with its decode queue) and the API-server stage to the engine. Keeps one read pending while a
// generation is in flight (watch_connection) so that a client that goes away is noticed at once.
class Server::Impl::Session : public SessionStreamer {
 public:
  using SessionStreamer::SessionStreamer;

  ~Session() override {
    if (engine_handle_) engine_handle_->cancel();
    {
      std::lock_guard lock(server_.sessions_mutex_);
      server_.sessions_.erase(this);
    }
    server_.with_stats([&](HttpStats& s) {
      --s.connections_open;
      if (streaming_active_) --s.streams_active;
      if (backpressured_) --s.streams_backpressured;
    });
  }

 private:
  void handle_request() override {
    phase_ = Phase::processing;
    response_complete_ = false;
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const http::verb method = req.method();
    const auto only = [&](http::verb allowed) {
      if (method == allowed) return true;
      send_error(ApiError{405, "invalid_request_error", "method not allowed on " + std::string(path), "", ""});
      return false;
    };
    if (path == "/v1/chat/completions" || path == "/v1/completions") {
      if (!only(http::verb::post)) return;
      return start_generation(path == "/v1/chat/completions" ? Endpoint::chat_completions
                                                             : Endpoint::completions);
    }
    if (path == "/health") {
      if (method != http::verb::get && method != http::verb::head) return void(only(http::verb::get));
      return send_response(200, "application/json", "");
    }
    if (path == "/v1/models") {
      if (!only(http::verb::get)) return;
      return send_response(200, "application/json",
                           models_list_body(server_.config_.request.served_model_name,
                                            unix_seconds(), server_.config_.request.max_model_len,
                                            server_.config_.device));
    }
    if (path == "/metrics") {
      if (!only(http::verb::get)) return;
      return send_response(200, "text/plain; version=0.0.4; charset=utf-8", server_.metrics_text());
    }
    if (path == "/start_profile" || path == "/stop_profile") {
      if (!only(http::verb::post)) return;
      return handle_profile(path == "/start_profile" ? ProfileAction::start : ProfileAction::stop);
    }
    send_error(ApiError{404, "invalid_request_error", "no route for " + std::string(path), "", "not_found"});
  }

  void handle_profile(ProfileAction action) {
    if (!server_.config_.profile) {
      return send_error(ApiError{404, "invalid_request_error",
                                 "profiling is not enabled on this server", "", "profiling_disabled"});
    }
    asio::post(*server_.decode_pool_, [self = self_as<Session>(), action] {
      ProfileReply reply;
      try {
        reply = self->server_.config_.profile(action);
      } catch (const std::exception& e) {
        reply = {500, error_body(ApiError{500, "server_error", e.what(), "", ""})};
      }
      asio::post(self->server_.io_, [self, reply = std::move(reply)] {
        if (!self->closed_) self->send_response(reply.status, "application/json", reply.body);
      });
    });
  }

  void start_generation(Endpoint endpoint) {
    const std::uint64_t number = server_.request_counter_.fetch_add(1);
    bool disconnect = false;
    if (!pass_fault_draw(number, disconnect)) return;
    watch_connection();
    auto job = std::make_shared<ParseJob>(
        ParseJob{endpoint, number, disconnect, std::move(parser_->get().body()), std::move(reservation_), tag_.arrival_ns});
    // A body that names no image_url goes to the text lane (which sends it on to the image lane
    // if it holds an image after all, e.g. a key spelt with a JSON escape).
    if (job->body.find("image_url") == std::string::npos) return parse_on_text_lane(std::move(job));
    parse_on_image_lane(std::move(job));
  }

  void parse_on_text_lane(std::shared_ptr<ParseJob> job) {
    asio::post(*server_.text_pool_, [self = self_as<Session>(), job = std::move(job)]() mutable {
      const Nanos parse_start = now_ns();
      ParseContext context;
      context.images_allowed = false;
      std::optional<GenerationRequest> parsed;
      std::optional<ApiError> error;
      try {
        parsed = parse_generation_request(job->endpoint, job->body, self->server_.config_.request, context);
      } catch (const ImagesNeedDecodeLane&) {
        asio::post(self->server_.io_, [self, job = std::move(job)]() mutable {
          if (!self->closed_) self->parse_on_image_lane(std::move(job));
        });
        return;
      } catch (const ApiException& e) {
        error = e.error();
      } catch (const std::exception& e) {
        error = ApiError{500, "server_error", std::string("internal error: ") + e.what(), "", ""};
      }
      self->finish_parse(std::move(job), std::move(parsed), std::move(error), parse_start);
    });
  }

  // At most --max-decode-queue image requests wait or decode at once; each may decode images
  // until its deadline (--decode-timeout-s from entering the queue).
  void parse_on_image_lane(std::shared_ptr<ParseJob> job) {
    auto slot = enter_decode_queue();
    if (!slot) return;
    const Nanos deadline = now_ns() + server_.config_.decode_timeout_ns;
    asio::post(*server_.decode_pool_, [self = self_as<Session>(), job = std::move(job), slot, deadline]() mutable {
      const Nanos parse_start = now_ns();
      ParseContext context;
      context.decode_deadline_ns = deadline;
      std::optional<GenerationRequest> parsed;
      std::optional<ApiError> error;
      try {
        parsed = parse_generation_request(job->endpoint, job->body, self->server_.config_.request, context);
      } catch (const ApiException& e) {
        error = e.error();
      } catch (const std::exception& e) {
        error = ApiError{500, "server_error", std::string("internal error: ") + e.what(), "", ""};
      }
      slot.reset();
      self->finish_parse(std::move(job), std::move(parsed), std::move(error), parse_start);
    });
  }

  // On a lane thread: frees the body (then its bytes are no longer in flight), passes a parsed
  // request through the API-server stage (its modelled processing from when the body arrived, less
  // this parse) and hands the result to the io thread.
  void finish_parse(std::shared_ptr<ParseJob> job, std::optional<GenerationRequest> parsed,
                    std::optional<ApiError> error, Nanos parse_start) {
    const std::uint64_t number = job->number;
    const bool disconnect = job->disconnect;
    const Nanos received = job->received_ns;
    job.reset();
    ApiServerAdmission stage;
    if (parsed && server_.api_server_.enabled()) {
      stage = server_.api_server_.admit(received, parse_start, now_ns(), api_server_input(*parsed));
      if (!stage.admitted) {
        parsed.reset();
        error = api_server_full_error(server_.api_server_.max_in_stage());
      }
    }
    asio::post(server_.io_, [self = self_as<Session>(), parsed = std::move(parsed), error = std::move(error),
                             number, disconnect, stage = std::move(stage)]() mutable {
      if (self->closed_) return;
      if (error && error->code == "api_server_queue_full")
        return self->send_response(503, "application/json", error_body(*error), "retry-after: 1\r\n");
      if (error) return self->send_error(*error);
      self->submit_after(std::move(stage), std::move(*parsed), number, disconnect);
    });
  }

  // What the API-server stage needs of a request: its tokens and, per image, its pixels, mm_hash
  // and processor-cache bytes as the virtual loop computes them (serving::processor_item_bytes).
  ApiServerInput api_server_input(const GenerationRequest& request) const {
    ApiServerInput input;
    input.prompt_tokens = request.prompt_tokens();
    const vision::VisionGeometry& geometry = server_.config_.request.geometry;
    for (const ImageInput& image : request.images)
      input.images.push_back({std::int64_t{image.width} * image.height, image.mm_hash,
                              serving::processor_item_bytes(image.grid.patches(), static_cast<int>(geometry.patch_size),
                                                            static_cast<int>(geometry.temporal_patch_size),
                                                            server_.api_server_.model().processor_bytes_per_element.value)});
    return input;
  }

  // The API-server stage's hold: the request goes to the engine now, due at its ready time (the
  // engine holds it until the first step planned at or after it, engine_core_thread.hpp), so no
  // timer's or thread's wake-up latency can make it miss that step. Its place in the stage is
  // given back at its ready time, or when its connection goes.
  void submit_after(ApiServerAdmission stage, GenerationRequest request, std::uint64_t number, bool disconnect) {
    const Nanos ready = stage.ready_ns;
    submit(std::move(request), number, disconnect, ready);
    const Nanos wait = ready - now_ns();
    if (wait <= 0 || !engine_handle_) return;  // the slot goes with `stage`
    api_server_timer_.expires_after(std::chrono::nanoseconds(wait));
    api_server_timer_.async_wait([slot = std::move(stage.slot)](boost::system::error_code) mutable { slot.reset(); });
  }
};

Server::Impl::Impl(ServerConfig config) : config_(std::move(config)) {
  require(!config_.request.served_model_name.empty(), "the served model name must not be empty");
  require(config_.request.limit_images_per_prompt >= 0, "--limit-mm-per-prompt must be >= 0");
  // The upper bound keeps every per-request buffer bounded: a non-streaming answer holds at most
  // max_model_len pseudo-words of at most 10 bytes.
  require(config_.request.max_model_len >= 2 && config_.request.max_model_len <= kMaxModelLen,
          "--max-model-len must be in [2, " + std::to_string(kMaxModelLen) + "]");
  // One encoder budget for parsing (400 for a request that could never fit) and scheduling.
  require(config_.engine.max_num_encoder_input_tokens >= 0, "--max-num-encoder-input-tokens must not be negative");
  if (config_.engine.max_num_encoder_input_tokens == 0)
    config_.engine.max_num_encoder_input_tokens = config_.engine.max_num_batched_tokens;
  if (config_.request.max_num_encoder_input_tokens == 0)
    config_.request.max_num_encoder_input_tokens = config_.engine.max_num_encoder_input_tokens;
  require(config_.max_api_server_queue >= 1, "--max-api-server-queue must be at least 1");
  require(config_.max_body_bytes >= 1, "--max-body-bytes must be at least 1");
  // Below one full body, a request of the largest allowed size could never be admitted.
  require(config_.max_inflight_bytes >= config_.max_body_bytes,
          "--max-inflight-bytes must be at least --max-body-bytes (" +
              std::to_string(config_.max_body_bytes) + ")");
  require(config_.decode_threads >= 1, "--decode-threads must be at least 1");
  require(config_.max_decode_queue >= 1, "--max-decode-queue must be at least 1");
  require(config_.decode_timeout_ns > 0, "--decode-timeout-s must be positive");
  require(config_.max_unsent_bytes >= 1024, "--max-unsent-bytes must be at least 1024");
  require(config_.faults.fail_rate >= 0 && config_.faults.fail_rate <= 1, "--fail-rate must be in [0, 1]");
  require(config_.faults.disconnect_rate >= 0 && config_.faults.disconnect_rate <= 1,
          "--disconnect-rate must be in [0, 1]");
  require(config_.faults.stall_ms >= 0, "--stall-ms must be >= 0");
  require(config_.eos_mean_tokens >= 1, "--eos-mean-tokens must be at least 1");
  if (!config_.engine.null_mode && !config_.engine.encoder)
    config_.engine.encoder = make_cost_model_encoder(EncoderCostModel{});
  engine_ = std::make_unique<EngineCoreThread>(config_.engine);
}

Server::Impl::~Impl() { stop(); }

void Server::Impl::start() {
  std::lock_guard lock(lifecycle_mutex_);
  if (running_) return;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(config_.host, ec);
  require(!ec, "--host '" + config_.host + "' is not an IP address");
  const tcp::endpoint endpoint(address, config_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    // The OS's reason is read before close(), which resets the error code to success.
    const std::string reason = ec.message();
    acceptor_.close(ec);
    throw InvalidInput("cannot listen on " + config_.host + ":" + std::to_string(config_.port) + ": " + reason);
  }
  bound_port_ = acceptor_.local_endpoint().port();
  decode_pool_ = std::make_unique<asio::thread_pool>(static_cast<std::size_t>(config_.decode_threads));
  text_pool_ = std::make_unique<asio::thread_pool>(1);
  engine_->start();
  accept_next();
  io_thread_ = std::thread([this] {
    auto guard = asio::make_work_guard(io_);
    io_.run();
  });
  running_ = true;
}

void Server::Impl::stop() {
  std::lock_guard lock(lifecycle_mutex_);
  if (!running_) return;
  running_ = false;
  engine_->stop();
  asio::post(io_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
    accept_retry_.cancel();
    std::vector<std::shared_ptr<Session>> open;
    {
      std::lock_guard sessions_lock(sessions_mutex_);
      for (auto& [raw, weak] : sessions_)
        if (auto session = weak.lock()) open.push_back(std::move(session));
    }
    for (auto& session : open) session->close();
    io_.stop();
  });
  if (io_thread_.joinable()) io_thread_.join();
  decode_pool_->join();
  text_pool_->join();
}

void Server::Impl::accept_next() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of descriptors or similar: back off instead of spinning on the error.
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      accept_retry_.async_wait([this](boost::system::error_code wait_ec) {
        if (!wait_ec) accept_next();
      });
      return;
    }
    auto session = std::make_shared<Session>(*this, std::move(socket));
    {
      std::lock_guard lock(sessions_mutex_);
      sessions_.emplace(session.get(), session);
    }
    with_stats([](HttpStats& s) {
      ++s.connections_open;
      ++s.connections_total;
    });
    session->start();
    accept_next();
  });
}

namespace {

// trace: devices: how the encoder's ops got their times (measured_op_times.hpp), so a scrape
// shows how much of the encoder time is the trace's and how much the roofline's.
void write_op_time_metrics(std::ostream& out, const device::OpTimeCounts& c) {
  out << "# HELP encbench:encoder_op_time_lookups_total Encoder ops timed from the --device trace, by lookup "
         "(fell_back: the roofline).\n"
         "# TYPE encbench:encoder_op_time_lookups_total counter\n";
  const std::pair<const char*, std::size_t> kinds[] = {
      {"exact", c.exact}, {"scaled", c.scaled}, {"name_only", c.name_only}, {"mapped", c.mapped}, {"fell_back", c.fell_back}};
  for (const auto& [kind, count] : kinds)
    out << "encbench:encoder_op_time_lookups_total{lookup=\"" << kind << "\"} " << count << '\n';
}

}  // namespace

std::string Server::Impl::metrics_text() const {
  const EngineCoreStats e = engine_->stats();
  HttpStats h;
  {
    std::lock_guard lock(stats_mutex_);
    h = stats_;
  }
  std::ostringstream out;
  const auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
        << name << ' ' << value << '\n';
  };
  out << "# HELP encbench:http_requests_total HTTP requests answered, by route and status.\n"
         "# TYPE encbench:http_requests_total counter\n";
  for (const auto& [route, by_status] : h.requests)
    for (const auto& [status, count] : by_status)
      out << "encbench:http_requests_total{route=\"" << route << "\",status=\"" << status << "\"} "
          << count << '\n';
  metric("encbench:num_requests_running", "gauge", "Requests in the running batch.", e.running);
  metric("encbench:num_requests_waiting", "gauge", "Requests waiting for a seat.", e.waiting);
  metric("encbench:request_success_total", "counter", "Generations finished (stop or length).", e.requests_finished);
  metric("encbench:request_aborted_total", "counter", "Generations dropped because the client left.", e.requests_aborted);
  metric("encbench:request_failed_total", "counter", "Generations failed by the encoder.", e.requests_failed);
  metric("encbench:request_rejected_total", "counter", "Generations refused with 503: waiting queue full (--max-waiting).", e.requests_rejected);
  metric("encbench:encoder_out_of_memory_total", "counter", "Encoder steps that ran out of device memory (their requests got 503).", e.encoder_oom);
  metric("encbench:engine_idle_trims_total", "counter", "Times the engine went idle and returned cached device memory.", e.idle_trims);
  metric("encbench:engine_max_step_encoder_tokens_seen", "gauge", "Most multimodal tokens encoded in one step (<= max_num_encoder_input_tokens).", e.scheduler.max_step_encoder_tokens);
  metric("encbench:prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", e.prompt_tokens);
  metric("encbench:generation_tokens_total", "counter", "Output tokens generated.", e.generation_tokens);
  metric("encbench:usage_prompt_tokens_total", "counter", "usage.prompt_tokens of completed responses.", h.prompt_tokens_served);
  metric("encbench:usage_completion_tokens_total", "counter", "usage.completion_tokens of completed responses.", h.completion_tokens_sent);
  metric("encbench:engine_steps_total", "counter", "Scheduler steps.", e.scheduler.steps);
  metric("encbench:engine_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache (vLLM's prefix_cache_queries; resumed preempted requests apart).", e.scheduler.prefix_cache_queries);
  metric("encbench:engine_prefix_cache_hits_total", "counter", "Of those, tokens found cached: same content hash, whole blocks (vLLM's prefix_cache_hits).", e.scheduler.prefix_cache_hits);
  metric("encbench:engine_encoder_cache_hits_total", "counter", "Images whose encoder output was cached: not encoded again.", e.scheduler.encoder_cache_hits);
  metric("encbench:engine_max_running_seen", "gauge", "Largest running batch so far (<= max_num_seqs).", e.scheduler.max_running);
  metric("encbench:engine_max_step_tokens_seen", "gauge", "Most tokens scheduled in one step (<= max_num_batched_tokens).", e.scheduler.max_step_tokens);
  metric("encbench:lm_modelled_seconds_total", "counter", "Modelled language-model step time.", ns_to_s(e.lm_modelled_ns));
  metric("encbench:engine_late_submissions_total", "counter", "Requests that reached the engine after the step their ready time belonged to was planned.", e.late_submissions);
  const ApiServerStats api = api_server_.stats();
  metric("encbench:api_server_requests_total", "counter", "Requests through the modelled API-server stage.", api.requests);
  metric("encbench:api_server_modelled_seconds_total", "counter", "Their modelled input processing (decode, resize, normalise, tokenise).", ns_to_s(api.modelled_ns));
  metric("encbench:api_server_queue_seconds_total", "counter", "Their wait for a free modelled API-server process.", ns_to_s(api.queue_ns));
  metric("encbench:api_server_held_seconds_total", "counter", "What the server held them after its own parse, until their modelled end.", ns_to_s(api.held_ns));
  metric("encbench:api_server_overruns_total", "counter", "Requests whose real parse outlasted their modelled API-server window.", api.overruns);
  metric("encbench:api_server_rejections_total", "counter", "Requests refused with 503: --max-api-server-queue already in the API-server stage.", api.rejected);
  metric("encbench:api_server_in_stage", "gauge", "Requests in the API-server stage now (waiting for a modelled process or in one).", api.in_stage);
  metric("encbench:api_server_processor_cache_hits_total", "counter", "Images the modelled processor cache held (by mm_hash): no HF processor for them.", api.processor_cache_hits);
  metric("encbench:api_server_processor_cache_evictions_total", "counter", "Items the modelled processor cache evicted to make room.", api.processor_cache_evictions);
  metric("encbench:encoder_images_total", "counter", "Images encoded.", e.images);
  metric("encbench:encoder_peak_device_memory_bytes", "gauge",
         "Largest device memory in use during any encoder forward (allocator peak).",
         static_cast<double>(e.encoder_peak_device_bytes));
  metric("encbench:encoder_calls_total", "counter", "Encoder invocations (one per step with new images).", e.encoder_calls);
  metric("encbench:encoder_forwards_total", "counter", "Encoder forwards.", e.encoder_forwards);
  metric("encbench:encoder_syncs_total", "counter", "Host-device synchronisations inside encoder forwards.", e.encoder_syncs);
  metric("encbench:encoder_forward_seconds_total", "counter", "Host wall time inside the encoder.", ns_to_s(e.encoder_wall_ns));
  metric("encbench:encoder_device_busy_seconds_total", "counter", "Device busy time inside encoder forwards.", ns_to_s(e.encoder_device_busy_ns));
  metric("encbench:encoder_device_idle_seconds_total", "counter", "Device idle time inside encoder forwards.", ns_to_s(e.encoder_device_idle_ns));
  const Nanos window = e.encoder_device_busy_ns + e.encoder_device_idle_ns;
  metric("encbench:encoder_device_idle_fraction", "gauge", "Device idle / (busy + idle) inside encoder forwards.",
         window > 0 ? static_cast<double>(e.encoder_device_idle_ns) / static_cast<double>(window) : 0.0);
  metric("encbench:encoder_uptime_idle_fraction", "gauge", "Share of server uptime the encoder was not running.",
         e.uptime_ns > 0 ? 1.0 - static_cast<double>(e.encoder_wall_ns) / static_cast<double>(e.uptime_ns) : 1.0);
  metric("encbench:http_connections_open", "gauge", "Open TCP connections.", h.connections_open);
  metric("encbench:http_connections_total", "counter", "Accepted TCP connections.", h.connections_total);
  metric("encbench:http_streams_active", "gauge", "SSE streams in progress.", h.streams_active);
  metric("encbench:http_header_timeouts_total", "counter", "Connections closed waiting for a request header.", h.header_timeouts);
  metric("encbench:http_body_timeouts_total", "counter", "Connections closed waiting for a request body.", h.body_timeouts);
  metric("encbench:http_write_timeouts_total", "counter", "Connections closed because the client stopped reading.", h.write_timeouts);
  metric("encbench:http_client_disconnects_total", "counter", "Clients gone while a response was in progress.", h.client_disconnects);
  metric("encbench:http_malformed_requests_total", "counter", "Requests rejected at the HTTP level.", h.malformed_requests);
  metric("encbench:inflight_rejections_total", "counter", "Requests refused with 503: over --max-inflight-bytes.", h.inflight_rejections);
  metric("encbench:decode_queue_rejections_total", "counter", "Requests with images refused with 503: --max-decode-queue already queued.", h.decode_queue_rejections);
  metric("encbench:stream_backpressure_waits_total", "counter", "Times a stream paused for a client that did not read (--max-unsent-bytes).", h.stream_backpressure_waits);
  metric("encbench:streams_backpressured", "gauge", "Streams paused now for a client that does not read.", h.streams_backpressured);
  metric("encbench:decode_queue", "gauge", "Requests with images queued or decoding now (--max-decode-queue).", decode_queued_.load());
  metric("encbench:inflight_request_bytes", "gauge", "Request body bytes held now (--max-inflight-bytes).", inflight_bytes_.load());
  out << "# HELP encbench:faults_injected_total Fault-knob activations.\n"
         "# TYPE encbench:faults_injected_total counter\n"
      << "encbench:faults_injected_total{kind=\"fail\"} " << h.faults_failed << '\n'
      << "encbench:faults_injected_total{kind=\"disconnect\"} " << h.faults_disconnected << '\n'
      << "encbench:faults_injected_total{kind=\"stall\"} " << h.faults_stalled << '\n';
  if (config_.measured_op_times) write_op_time_metrics(out, config_.measured_op_times->counts());
  return out.str();
}

Server::Server(ServerConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Server::~Server() = default;
void Server::start() { impl_->start(); }
void Server::stop() { impl_->stop(); }
std::uint16_t Server::port() const { return impl_->bound_port_; }
std::string Server::base_url() const {
  const std::string& host = impl_->config_.host;
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port());
}
HttpStats Server::http_stats() const {
  std::lock_guard lock(impl_->stats_mutex_);
  HttpStats stats = impl_->stats_;
  stats.inflight_bytes = impl_->inflight_bytes_.load();
  stats.decode_queue = impl_->decode_queued_.load();
  return stats;
}
EngineCoreStats Server::engine_stats() const { return impl_->engine_->stats(); }
ApiServerStats Server::api_server_stats() const { return impl_->api_server_.stats(); }
std::string Server::metrics_text() const { return impl_->metrics_text(); }
const ServerConfig& Server::config() const { return impl_->config_; }

}  // namespace encbench::server
