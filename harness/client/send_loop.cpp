#include "harness/client/send_loop.hpp"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <set>

#include "harness/client/response_handler.hpp"
#include "harness/core/error.hpp"
#include "harness/core/number_format.hpp"

namespace encbench::client {

void global_curl_init() {
  // curl_global_init is reference counted and idempotent enough for repeated calls.
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

namespace {

// epoll tags: a socket event carries (shard + 1) << 32 | fd; the loop's own fds use the top bits.
constexpr std::uint64_t kTagCurlTimer = 1ull << 61;
constexpr std::uint64_t kTagArrival = 2ull << 61;
constexpr std::uint64_t kTagStop = 3ull << 61;
constexpr std::uint64_t kTagIdle = 4ull << 61;
constexpr Nanos kProgressIntervalNs = 200'000'000;
// An arrival closer than this is polled for (the loop looks again without sleeping) instead of
// arming the timerfd: a timer that expires at once costs more than the poll (see on_timer).
constexpr Nanos kArrivalPollNs = 30'000;

struct Transfer {
  Transfer(Backend backend, RequestMode mode, RequestRecord& record, bool strict, ResponseLimits limits)
      : record(record), handler(backend, mode, record, strict, limits) {}
  RequestRecord& record;
  ResponseHandler handler;
  const PreparedRequest* request = nullptr;
  curl_slist* headers = nullptr;
  CURL* easy = nullptr;
  char error_buffer[CURL_ERROR_SIZE] = {};
  bool in_flight = false;
  std::size_t shard = 0;      // the curl multi it runs on while in flight
  Nanos last_activity_ns = 0; // dispatch, the request leaving, or the last byte received
  curl_off_t uploaded = 0;    // request bytes sent when the idle check last looked
  double* parse_s = nullptr;  // the loop's LoopProfile::parse_s
};

std::string seconds_text(double s) { return numbers::significant(s, 6); }

double thread_cpu_s(bool user) {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  const timeval& tv = user ? usage.ru_utime : usage.ru_stime;
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

void arm_timer_abs(int fd, Nanos deadline_ns) {
  itimerspec spec{};
  if (deadline_ns > 0) {
    spec.it_value.tv_sec = deadline_ns / 1'000'000'000;
    spec.it_value.tv_nsec = deadline_ns % 1'000'000'000;
  }
  timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

class EventLoop {
 public:
  EventLoop(const SendLoopConfig& config, const std::vector<PreparedRequest>& requests, const std::vector<Nanos>& offsets,
            const ConnectionBudget& budget, std::size_t connection_limit)
      : config_(config), requests_(requests), offsets_(offsets), connection_limit_(connection_limit) {
    result_.loop.connection_limit = connection_limit;
    result_.loop.open_file_limit = budget.soft_limit;
  }
  ~EventLoop() { cleanup(); }
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  SendLoopResult run();

 private:
  // One curl multi handle and what the loop knows of it; callbacks get a pointer to it.
  struct Shard {
    EventLoop* loop = nullptr;
    std::size_t index = 0;
    CURLM* multi = nullptr;
    std::size_t in_flight = 0;
    bool timeout_now = false;   // curl asked for a timeout action as soon as possible
    Nanos deadline_ns = 0;      // curl's next timeout (0: none)
  };

  static int on_socket(CURL* easy, curl_socket_t fd, int what, void* userp, void* socketp);
  static int on_timer(CURLM* multi, long timeout_ms, void* userp);
  static size_t on_write(char* data, size_t size, size_t count, void* userp);
  static size_t on_header(char* data, size_t size, size_t count, void* userp);
  static int on_prereq(void* userp, char*, char*, int, int);

  void setup();
  void cleanup();
  void release_due(Nanos now);
  void admit(Nanos now);
  void pump_sends();
  bool can_send_now() const;
  void dispatch(std::size_t index, Nanos now);
  Shard& attach_shard(CURLM* multi);
  Shard& shard_for_new_transfer();
  void mark_to_run(Shard& shard);
  void run_curl_timeouts();
  void run_expired_curl_timers(Nanos now);
  void socket_action(Shard& shard, curl_socket_t fd, int flags, double& bucket);
  void release_if_due();
  void drain_completions(Shard& shard);
  void finish(Transfer& t, CURLcode result);
  void begin_stop(Nanos now);
  void abort_in_flight(Nanos now);
  void abort_transfer(Transfer& t, Nanos now, const std::string& error, const std::string& kind);
  void release_transfer(Transfer& t);
  void arm_idle_check(Nanos deadline_ns);
  void check_idle(Nanos now);
  bool done() const;
  bool arrival_due(Nanos now) const;
  void draw_progress(bool final_line);
  bool handle_event(const epoll_event& event);
  void note_iteration(Nanos woke, const LoopProfile& before, std::size_t in_flight_before, std::size_t waiting_before);
  CURL* take_easy();

  const SendLoopConfig& config_;
  const std::vector<PreparedRequest>& requests_;
  const std::vector<Nanos>& offsets_;
  SendLoopResult result_;
  std::vector<std::unique_ptr<Transfer>> transfers_;
  std::vector<CURL*> free_easy_;
  std::deque<std::size_t> concurrency_queue_;  // due, waiting for --max-concurrency (vLLM's semaphore)
  std::deque<std::size_t> send_queue_;         // admitted, waiting for a connection slot or the loop's turn
  std::size_t connection_limit_ = 0;
  std::size_t sends_left_ = kMaxSendsPerIteration;
  std::unique_ptr<ConnectionShare> own_pool_;  // when the caller keeps none across phases
  ConnectionShare* pool_ = nullptr;
  std::vector<std::unique_ptr<Shard>> shards_;  // stable addresses: curl holds them
  std::set<std::size_t> open_shards_;           // below kTransfersPerCurlMulti, lowest first
  std::vector<std::size_t> shards_to_run_;      // timeout_now set
  std::vector<std::size_t> shards_running_;     // scratch for run_curl_timeouts
  Nanos armed_curl_deadline_ = 0;
  int epoll_fd_ = -1, curl_timer_fd_ = -1, arrival_fd_ = -1, idle_fd_ = -1;
  Nanos armed_idle_ns_ = 0;  // the idle check's next run (0: not armed)
  std::size_t next_arrival_ = 0;
  std::size_t in_flight_ = 0;
  std::size_t finished_ = 0;
  bool stopping_ = false;
  Nanos drain_deadline_ = 0;
  Nanos last_progress_ns_ = 0;
  bool arrival_poll_ = false;      // the next arrival is too close to arm the timer: poll for it
  Nanos armed_arrival_ns_ = 0;
  LoopProfile& profile_ = result_.loop.profile;
};

// Adds the wall time of a scope to one LoopProfile bucket.
class ProfileScope {
 public:
  explicit ProfileScope(double& bucket) : bucket_(bucket), start_(now_ns()) {}
  ~ProfileScope() { bucket_ += static_cast<double>(now_ns() - start_) / 1e9; }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  double& bucket_;
  Nanos start_;
};

int EventLoop::on_socket(CURL*, curl_socket_t fd, int what, void* userp, void* socketp) {
  auto* shard = static_cast<Shard*>(userp);
  EventLoop* self = shard->loop;
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(self->epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    return 0;
  }
  epoll_event ev{};
  ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  ev.data.u64 = (static_cast<std::uint64_t>(shard->index + 1) << 32) | static_cast<std::uint32_t>(fd);
  if (socketp == nullptr) {
    if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
      epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
    curl_multi_assign(shard->multi, fd, shard);  // non-null: "registered"
  } else if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
    epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  return 0;
}

int EventLoop::on_timer(CURLM*, long timeout_ms, void* userp) {
  auto* shard = static_cast<Shard*>(userp);
  EventLoop* self = shard->loop;
  if (timeout_ms == 0) {
    // "As soon as possible" (curl asks it on every curl_multi_add_handle): a flag the loop acts
    // on before it sleeps. Arming a timerfd to expire at once cost ~25 us per call on this KVM
    // guest (the immediate timer interrupt), a third of a request's client CPU.
    self->mark_to_run(*shard);
    return 0;
  }
  if (timeout_ms < 0) {
    shard->deadline_ns = 0;  // a timer still armed for it only wakes the loop early: harmless
    return 0;
  }
  shard->deadline_ns = now_ns() + static_cast<Nanos>(timeout_ms) * 1'000'000;
  if (self->armed_curl_deadline_ == 0 || shard->deadline_ns < self->armed_curl_deadline_) {
    arm_timer_abs(self->curl_timer_fd_, shard->deadline_ns);
    self->armed_curl_deadline_ = shard->deadline_ns;
  }
  return 0;
}

size_t EventLoop::on_write(char* data, size_t size, size_t count, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  const size_t bytes = size * count;
  const Nanos now = now_ns();
  t->last_activity_ns = now;
  t->handler.on_body(std::string_view(data, bytes), now);
  *t->parse_s += static_cast<double>(now_ns() - now) / 1e9;
  // A protocol error fails the request: stop reading instead of draining a broken stream.
  return t->handler.failed() ? 0 : bytes;
}

size_t EventLoop::on_header(char* data, size_t size, size_t count, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  const size_t bytes = size * count;
  t->last_activity_ns = now_ns();
  // An endless or huge header section counts against --max-response-bytes like a body does.
  if (!t->handler.on_header_bytes(bytes)) return 0;
  std::string_view line(data, bytes);
  if (line.rfind("HTTP/", 0) == 0) {
    const auto space = line.find(' ');
    if (space != std::string_view::npos) {
      int status = 0;
      for (std::size_t i = space + 1; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) status = status * 10 + (line[i] - '0');
      t->record.http_status = status;
      if (t->record.headers_ns == 0) t->record.headers_ns = now_ns();
    }
  }
  return bytes;
}

int EventLoop::on_prereq(void* userp, char*, char*, int, int) {
  auto* t = static_cast<Transfer*>(userp);
  if (t->record.sent_ns == 0) t->record.sent_ns = now_ns();
  t->last_activity_ns = now_ns();
  return CURL_PREREQFUNC_OK;
}

void EventLoop::setup() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  curl_timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  arrival_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  idle_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_fd_ < 0 || curl_timer_fd_ < 0 || arrival_fd_ < 0 || idle_fd_ < 0)
    throw std::runtime_error(std::string("cannot create epoll/timerfd: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kTagCurlTimer;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, curl_timer_fd_, &ev);
  ev.data.u64 = kTagArrival;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, arrival_fd_, &ev);
  ev.data.u64 = kTagIdle;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, idle_fd_, &ev);
  if (config_.stop_fd >= 0) {
    ev.data.u64 = kTagStop;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, config_.stop_fd, &ev);
  }
  if (config_.connections != nullptr) {
    pool_ = config_.connections;
  } else {
    own_pool_ = std::make_unique<ConnectionShare>();
    pool_ = own_pool_.get();
  }
  for (void* multi : pool_->multis()) attach_shard(static_cast<CURLM*>(multi));

  result_.records.resize(requests_.size());
  transfers_.reserve(requests_.size());
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    RequestRecord& rec = result_.records[i];
    rec.index = requests_[i].index;
    rec.request_id = requests_[i].request_id;
    rec.prompt_len_client = requests_[i].prompt_len_client;
    auto t = std::make_unique<Transfer>(config_.backend, config_.mode, rec, config_.strict_success,
                                        ResponseLimits{config_.max_response_bytes, config_.max_output_chunks});
    t->request = &requests_[i];
    t->parse_s = &profile_.parse_s;
    // Header lists built now, not in the loop. An empty "Expect:" stops curl's 100-continue
    // dance for bodies over 1 MiB (a 1 s stall against servers that never answer it).
    t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
    t->headers = curl_slist_append(t->headers, "Expect:");
    for (const auto& h : requests_[i].headers) t->headers = curl_slist_append(t->headers, h.c_str());
    transfers_.push_back(std::move(t));
  }
}

void EventLoop::cleanup() {
  for (auto& t : transfers_) {
    if (t->in_flight) curl_multi_remove_handle(shards_[t->shard]->multi, t->easy);
    if (t->easy) curl_easy_cleanup(t->easy), t->easy = nullptr;
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
  }
  for (CURL* e : free_easy_) curl_easy_cleanup(e);
  free_easy_.clear();
  // The multis (and their idle connections) stay in the pool for the next phase; they must not
  // call back into this loop.
  for (auto& shard : shards_) {
    curl_multi_setopt(shard->multi, CURLMOPT_SOCKETFUNCTION, nullptr);
    curl_multi_setopt(shard->multi, CURLMOPT_SOCKETDATA, nullptr);
    curl_multi_setopt(shard->multi, CURLMOPT_TIMERFUNCTION, nullptr);
    curl_multi_setopt(shard->multi, CURLMOPT_TIMERDATA, nullptr);
  }
  shards_.clear();
  for (int* fd : {&epoll_fd_, &curl_timer_fd_, &arrival_fd_, &idle_fd_})
    if (*fd >= 0) close(*fd), *fd = -1;
}

CURL* EventLoop::take_easy() {
  if (!free_easy_.empty()) {
    CURL* e = free_easy_.back();
    free_easy_.pop_back();
    return e;
  }
  ProfileScope scope(profile_.easy_create_s);
  ++profile_.easy_handles_created;
  CURL* e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_URL, config_.url.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  if (config_.insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &EventLoop::on_write);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &EventLoop::on_header);
  curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &EventLoop::on_prereq);
  curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024L);
  if (config_.timeout_s > 0) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(config_.timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_SHARE, pool_->dns_share());
  return e;
}

void EventLoop::dispatch(std::size_t index, Nanos now) {
  ProfileScope scope(profile_.dispatch_s);
  Transfer& t = *transfers_[index];
  t.easy = take_easy();
  curl_easy_setopt(t.easy, CURLOPT_POSTFIELDS, t.request->body.data());
  curl_easy_setopt(t.easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.request->body.size()));
  curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, t.headers);
  curl_easy_setopt(t.easy, CURLOPT_PRIVATE, &t);
  curl_easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(t.easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(t.easy, CURLOPT_PREREQDATA, &t);
  curl_easy_setopt(t.easy, CURLOPT_ERRORBUFFER, t.error_buffer);
  t.record.dispatched = true;
  t.record.dispatch_ns = now;
  t.last_activity_ns = now;
  t.uploaded = 0;
  ++profile_.dispatches;
  Shard& shard = shard_for_new_transfer();
  if (const CURLMcode added = curl_multi_add_handle(shard.multi, t.easy); added != CURLM_OK) {
    // Never lost, never silent: the request fails here with curl's reason.
    free_easy_.push_back(t.easy);
    t.easy = nullptr;
    ++finished_;
    t.handler.on_end(now_ns(), std::string("client: curl_multi_add_handle failed: ") + curl_multi_strerror(added),
                     "client_internal");
    return;
  }
  t.in_flight = true;
  t.shard = shard.index;
  if (++shard.in_flight == kTransfersPerCurlMulti) open_shards_.erase(shard.index);
  mark_to_run(shard);  // start it now (connect / send), not one loop round trip later
  ++in_flight_;
  result_.loop.peak_in_flight = std::max(result_.loop.peak_in_flight, in_flight_);
  // Later dispatches are due later: an armed check already comes first.
  if (config_.idle_timeout_s > 0 && armed_idle_ns_ == 0) arm_idle_check(now + static_cast<Nanos>(config_.idle_timeout_s * 1e9));
}

EventLoop::Shard& EventLoop::attach_shard(CURLM* multi) {
  auto shard = std::make_unique<Shard>();
  shard->loop = this;
  shard->index = shards_.size();
  shard->multi = multi;
  curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &EventLoop::on_socket);
  curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, shard.get());
  curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &EventLoop::on_timer);
  curl_multi_setopt(multi, CURLMOPT_TIMERDATA, shard.get());
  // No hidden queue inside curl: its connection limits stay off; the loop's own connection
  // limit (the send queue) bounds the sockets, and each shard keeps its idle connections.
  curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(kTransfersPerCurlMulti));
  open_shards_.insert(shard->index);
  shards_.push_back(std::move(shard));
  result_.loop.curl_multis = std::max(result_.loop.curl_multis, shards_.size());
  return *shards_.back();
}

EventLoop::Shard& EventLoop::shard_for_new_transfer() {
  // The lowest shard with room: transfers pack into the first shards, whose idle connections
  // are then reused, instead of spreading over all of them.
  if (open_shards_.empty()) {
    CURLM* multi = curl_multi_init();
    if (multi == nullptr) throw std::runtime_error("curl_multi_init failed");
    pool_->multis().push_back(multi);
    return attach_shard(multi);
  }
  return *shards_[*open_shards_.begin()];
}

void EventLoop::mark_to_run(Shard& shard) {
  if (shard.timeout_now) return;
  shard.timeout_now = true;
  shards_to_run_.push_back(shard.index);
}

void EventLoop::socket_action(Shard& shard, curl_socket_t fd, int flags, double& bucket) {
  int running = 0;
  {
    ProfileScope scope(bucket);
    curl_multi_socket_action(shard.multi, fd, flags, &running);
  }
  drain_completions(shard);
}

void EventLoop::run_curl_timeouts() {
  // Each shard curl asked to run: once per call. If curl asks again meanwhile, the loop polls its
  // sockets (epoll timeout 0) before coming back here.
  // Swapped with a kept scratch list, so neither allocates once it has grown.
  shards_running_.clear();
  shards_running_.swap(shards_to_run_);
  for (std::size_t i : shards_running_) {
    Shard& shard = *shards_[i];
    shard.timeout_now = false;
    socket_action(shard, CURL_SOCKET_TIMEOUT, 0, profile_.curl_timer_s);
  }
}

void EventLoop::run_expired_curl_timers(Nanos now) {
  armed_curl_deadline_ = 0;
  for (auto& shard : shards_) {
    if (shard->deadline_ns == 0 || shard->deadline_ns > now) continue;
    shard->deadline_ns = 0;
    socket_action(*shard, CURL_SOCKET_TIMEOUT, 0, profile_.curl_timer_s);
  }
  Nanos next = 0;
  for (const auto& shard : shards_)
    if (shard->deadline_ns != 0 && (next == 0 || shard->deadline_ns < next)) next = shard->deadline_ns;
  if (next != 0 && (armed_curl_deadline_ == 0 || next < armed_curl_deadline_)) {
    arm_timer_abs(curl_timer_fd_, next);
    armed_curl_deadline_ = next;
  }
}

void EventLoop::release_due(Nanos now) {
  while (next_arrival_ < requests_.size() && result_.start_ns + offsets_[next_arrival_] <= now) {
    const std::size_t i = next_arrival_++;
    RequestRecord& rec = result_.records[i];
    rec.intended_ns = result_.start_ns + offsets_[i];
    rec.arrival_ns = now;
    concurrency_queue_.push_back(i);
  }
  arrival_poll_ = false;
  if (next_arrival_ < requests_.size()) {
    const Nanos next = result_.start_ns + offsets_[next_arrival_];
    if (next - now_ns() < kArrivalPollNs) {
      arrival_poll_ = true;  // cheaper to look again without sleeping than to arm a timer this close
    } else if (next != armed_arrival_ns_) {
      arm_timer_abs(arrival_fd_, next);
      armed_arrival_ns_ = next;
    }
  }
  admit(now);
}

void EventLoop::release_if_due() {
  if (const Nanos now = now_ns(); arrival_due(now)) {
    result_.loop.arrival_wake_lag_ms.push_back(static_cast<double>(now - (result_.start_ns + offsets_[next_arrival_])) / 1e6);
    release_due(now);
  }
}

void EventLoop::admit(Nanos now) {
  // vLLM's semaphore: a request holds its concurrency slot from admission to completion, so the
  // send queue counts against --max-concurrency as much as the transfers in flight do.
  const bool capped = config_.max_concurrency > 0;
  while (!concurrency_queue_.empty() &&
         (!capped || in_flight_ + send_queue_.size() < static_cast<std::size_t>(config_.max_concurrency))) {
    const std::size_t i = concurrency_queue_.front();
    concurrency_queue_.pop_front();
    result_.records[i].admitted_ns = now;
    send_queue_.push_back(i);
  }
  result_.loop.peak_client_queue = std::max(result_.loop.peak_client_queue, concurrency_queue_.size());
  result_.loop.peak_send_queue = std::max(result_.loop.peak_send_queue, send_queue_.size());
}

bool EventLoop::arrival_due(Nanos now) const {
  return !stopping_ && next_arrival_ < requests_.size() && result_.start_ns + offsets_[next_arrival_] <= now;
}

bool EventLoop::can_send_now() const {
  return !send_queue_.empty() && in_flight_ < connection_limit_ && sends_left_ > 0;
}

void EventLoop::pump_sends() {
  // Hands due requests to curl while a connection slot and this iteration's send quota last.
  // Completions seen while starting them free slots for the rest of the queue.
  while (can_send_now()) {
    while (can_send_now()) {
      const std::size_t i = send_queue_.front();
      send_queue_.pop_front();
      --sends_left_;
      dispatch(i, now_ns());
    }
    run_curl_timeouts();  // start them now: connect / send
  }
}

void EventLoop::finish(Transfer& t, CURLcode result) {
  ProfileScope scope(profile_.finish_s);
  const Nanos now = now_ns();
  long status = 0;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
  if (t.record.http_status == 0) t.record.http_status = static_cast<int>(status);
  t.record.curl_code = static_cast<int>(result);
  std::string transport_error, transport_kind;
  if (result == CURLE_WRITE_ERROR && t.handler.failed()) {
    // We aborted the transfer ourselves after a protocol error; the handler names it.
  } else if (result != CURLE_OK) {
    long os_errno = 0;
    curl_easy_getinfo(t.easy, CURLINFO_OS_ERRNO, &os_errno);
    t.record.os_errno = static_cast<int>(os_errno);
    transport_kind = transport_failure_kind(static_cast<int>(result), t.record.os_errno);
    const std::string detail = (t.error_buffer[0] ? std::string(": ") + t.error_buffer : std::string()) +
                               (os_errno != 0 ? std::string(" (") + std::strerror(static_cast<int>(os_errno)) + ")" : "");
    if (result == CURLE_OPERATION_TIMEDOUT) {
      transport_error = "timeout: no complete response within " + seconds_text(config_.timeout_s) + " s (--timeout); curl" + detail;
    } else {
      transport_error = std::string("curl error ") + std::to_string(static_cast<int>(result)) + " (" +
                        curl_easy_strerror(result) + ")" + detail + " [" + config_.url + "]";
    }
  }
  t.handler.on_end(now, transport_error, transport_kind);
  release_transfer(t);
  ++profile_.completions;
  if (!stopping_) admit(now);
}

void EventLoop::drain_completions(Shard& shard) {
  int pending = 0;
  while (CURLMsg* msg = curl_multi_info_read(shard.multi, &pending)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
    const CURLcode code = msg->data.result;
    if (t) finish(*t, code);
  }
}

void EventLoop::begin_stop(Nanos now) {
  if (stopping_) return;
  stopping_ = true;
  result_.interrupted = true;
  concurrency_queue_.clear();  // never sent: their records stay dispatched=false
  send_queue_.clear();
  next_arrival_ = requests_.size();
  drain_deadline_ = now + static_cast<Nanos>(config_.drain_timeout_s * 1e9);
  arm_timer_abs(arrival_fd_, drain_deadline_);
  armed_arrival_ns_ = drain_deadline_;
}

// Gives the transfer's handle back to its shard and counts it finished (completed or aborted).
void EventLoop::release_transfer(Transfer& t) {
  Shard& shard = *shards_[t.shard];
  curl_multi_remove_handle(shard.multi, t.easy);
  if (shard.in_flight-- == kTransfersPerCurlMulti) open_shards_.insert(shard.index);
  free_easy_.push_back(t.easy);
  t.easy = nullptr;
  t.in_flight = false;
  --in_flight_;
  ++finished_;
}

void EventLoop::abort_transfer(Transfer& t, Nanos now, const std::string& error, const std::string& kind) {
  release_transfer(t);
  t.handler.on_end(now, error, kind);
}

void EventLoop::abort_in_flight(Nanos now) {
  for (auto& t : transfers_) {
    if (!t->in_flight) continue;
    abort_transfer(*t, now, "interrupted: still in flight after the " + seconds_text(config_.drain_timeout_s) + " s drain timeout",
                   "interrupted");
  }
}

void EventLoop::arm_idle_check(Nanos deadline_ns) {
  arm_timer_abs(idle_fd_, deadline_ns);  // 0 disarms
  armed_idle_ns_ = deadline_ns;
}

void EventLoop::check_idle(Nanos now) {
  // Runs when the earliest possible idle deadline has come: aborts every transfer with no byte
  // moving for --idle-timeout, then arms the check for the earliest deadline left. Request bytes
  // still leaving (a large body to a slow server) count as activity: curl's upload counter is
  // read only here, for transfers that look idle, and only a body not yet fully sent that moved
  // since the last look counts (a finished upload says nothing about when its last byte left).
  const Nanos idle_ns = static_cast<Nanos>(config_.idle_timeout_s * 1e9);
  Nanos next = 0;
  for (auto& t : transfers_) {
    if (!t->in_flight) continue;
    if (now - t->last_activity_ns >= idle_ns) {
      curl_off_t uploaded = 0;
      curl_easy_getinfo(t->easy, CURLINFO_SIZE_UPLOAD_T, &uploaded);
      const auto body_bytes = static_cast<curl_off_t>(t->request->body.size());
      if (uploaded < body_bytes && uploaded != t->uploaded) {
        t->uploaded = uploaded;
        t->last_activity_ns = now;
      } else {
        ++profile_.completions;
        abort_transfer(*t, now,
                       "idle_timeout: no byte received or sent for " + seconds_text(config_.idle_timeout_s) +
                           " s (--idle-timeout); " + std::to_string(t->handler.bytes_received()) + " bytes received before",
                       "idle_timeout");
        continue;
      }
    }
    const Nanos deadline = t->last_activity_ns + idle_ns;
    if (next == 0 || deadline < next) next = deadline;
  }
  arm_idle_check(next);
  if (!stopping_) admit(now);
}

bool EventLoop::done() const {
  return next_arrival_ >= requests_.size() && concurrency_queue_.empty() && send_queue_.empty() && in_flight_ == 0;
}

void EventLoop::draw_progress(bool final_line) {
  const std::size_t total = requests_.size();
  const int width = 40;
  const int filled = total ? static_cast<int>(width * finished_ / total) : width;
  const std::size_t waiting = concurrency_queue_.size() + send_queue_.size();
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu done, %zu in flight, %zu waiting%s", filled,
               "========================================", width - filled, "", finished_, total, in_flight_, waiting,
               final_line ? "\n" : "");
  std::fflush(stderr);
}

// One epoll event: a timer (curl's, the arrival schedule's, the idle check's), the stop fd, or a
// socket of one of the curl multis (its shard in the tag's upper half). False when an arrival
// timer fired with nothing to read (the loop then skips its after-event sends, as before).
bool EventLoop::handle_event(const epoll_event& event) {
  const std::uint64_t tag = event.data.u64;
  if (tag == kTagCurlTimer) {
    std::uint64_t expirations;
    if (read(curl_timer_fd_, &expirations, sizeof expirations) > 0) run_expired_curl_timers(now_ns());
  } else if (tag == kTagArrival) {
    std::uint64_t expirations;
    if (read(arrival_fd_, &expirations, sizeof expirations) <= 0) return false;
    const Nanos now = now_ns();
    if (stopping_) {
      if (now >= drain_deadline_) abort_in_flight(now);
    } else {
      release_if_due();  // the arrival may already have gone out between socket events
    }
  } else if (tag == kTagIdle) {
    std::uint64_t expirations;
    if (read(idle_fd_, &expirations, sizeof expirations) > 0) check_idle(now_ns());
  } else if (tag == kTagStop) {
    char drain[256];
    while (read(config_.stop_fd, drain, sizeof drain) > 0) {
    }
    begin_stop(now_ns());
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, config_.stop_fd, nullptr);
  } else {
    int flags = 0;
    if (event.events & EPOLLIN) flags |= CURL_CSELECT_IN;
    if (event.events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
    if (event.events & (EPOLLERR | EPOLLHUP)) flags |= CURL_CSELECT_ERR;
    ++profile_.socket_events;
    const std::size_t shard = static_cast<std::size_t>(tag >> 32) - 1;
    if (shard < shards_.size())
      socket_action(*shards_[shard], static_cast<curl_socket_t>(tag & 0xffffffffu), flags, profile_.curl_socket_s);
  }
  return true;
}

// Each iteration's busy time, and what the slowest one spent its time on (loop_slowest_iteration).
void EventLoop::note_iteration(Nanos woke, const LoopProfile& before, std::size_t in_flight_before, std::size_t waiting_before) {
  const double busy_ms = static_cast<double>(now_ns() - woke) / 1e6;
  result_.loop.iteration_busy_ms.push_back(busy_ms);
  if (busy_ms > result_.loop.slowest.busy_ms) {
    SlowestIteration& s = result_.loop.slowest;
    s.busy_ms = busy_ms;
    s.at_s = static_cast<double>(woke - result_.start_ns) / 1e9;
    s.socket_events = profile_.socket_events - before.socket_events;
    s.dispatches = profile_.dispatches - before.dispatches;
    s.completions = profile_.completions - before.completions;
    s.in_flight_before = in_flight_before;
    s.waiting_before = waiting_before;
    s.curl_ms = 1e3 * (profile_.curl_socket_s + profile_.curl_timer_s - before.curl_socket_s - before.curl_timer_s);
    s.parse_ms = 1e3 * (profile_.parse_s - before.parse_s);
    s.dispatch_ms = 1e3 * (profile_.dispatch_s - before.dispatch_s);
    s.finish_ms = 1e3 * (profile_.finish_s - before.finish_s);
    s.unaccounted_ms = busy_ms - s.curl_ms - s.dispatch_ms - s.finish_ms;
  }
}

SendLoopResult EventLoop::run() {
  require(offsets_.size() == requests_.size(), "schedule and request counts differ");
  setup();
  if (config_.start_at_ns > 0) {
    // Absolute sleep to the common start (CLOCK_MONOTONIC, the clock now_ns() reads).
    const timespec ts{static_cast<time_t>(config_.start_at_ns / 1'000'000'000), static_cast<long>(config_.start_at_ns % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  const double cpu_user0 = thread_cpu_s(true), cpu_sys0 = thread_cpu_s(false);
  result_.start_ns = config_.start_at_ns > 0 ? config_.start_at_ns : now_ns();
  release_due(result_.start_ns);
  pump_sends();
  std::vector<epoll_event> events(kMaxEventsPerIteration);
  while (!done()) {
    // Sendable requests held back by last iteration's quota: look at the sockets without
    // sleeping, then send more.
    run_curl_timeouts();
    pump_sends();
    // The last transfer may have ended just now (curl finishes an aborted transfer on a 0 ms
    // timeout): sleeping then would wait for the next timer, up to --timeout.
    if (done()) break;
    const bool sendable = !send_queue_.empty() && in_flight_ < connection_limit_;
    const int timeout_ms = sendable || !shards_to_run_.empty() || (arrival_poll_ && !stopping_) ? 0 : (config_.progress ? 200 : -1);
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
    const Nanos woke = now_ns();
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
    ++result_.loop.iterations;
    sends_left_ = kMaxSendsPerIteration;
    const LoopProfile before = profile_;
    const std::size_t in_flight_before = in_flight_, waiting_before = concurrency_queue_.size() + send_queue_.size();
    profile_.max_events_in_iteration = std::max<std::int64_t>(profile_.max_events_in_iteration, n);
    for (int k = 0; k < n; ++k) {
      if (!handle_event(events[k])) continue;
      // Sends come first: a due arrival is not kept waiting behind the rest of a large batch of
      // socket events (the arrival timerfd would only be seen at the next epoll_wait).
      release_if_due();
      pump_sends();
    }
    release_if_due();
    run_curl_timeouts();
    pump_sends();
    if (!send_queue_.empty()) {
      if (in_flight_ >= connection_limit_) ++result_.loop.iterations_at_connection_limit;
      else if (sends_left_ == 0) ++result_.loop.iterations_at_send_quota;
    }
    if (config_.progress && woke - last_progress_ns_ >= kProgressIntervalNs) {
      last_progress_ns_ = woke;
      draw_progress(false);
    }
    note_iteration(woke, before, in_flight_before, waiting_before);
  }
  result_.end_ns = now_ns();
  if (config_.progress) draw_progress(true);
  result_.cpu_user_s = thread_cpu_s(true) - cpu_user0;
  result_.cpu_system_s = thread_cpu_s(false) - cpu_sys0;
  // Every failure carries its reason: a request that ended without one is a bug made visible.
  for (RequestRecord& r : result_.records) {
    if (r.dispatched && !r.success && r.error.empty()) {
      r.error = "client: the request ended without a recorded outcome (an encbench bug; please report it)";
      r.failure_kind = "client_internal";
    }
  }
  return std::move(result_);
}

}  // namespace

ConnectionShare::ConnectionShare() {
  global_curl_init();
  CURLSH* share = curl_share_init();
  if (share == nullptr) throw std::runtime_error("curl_share_init failed");
  // DNS only: a shared connection cache would be one list of every connection, walked for each
  // new transfer; connections live in the multis' own caches instead.
  curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  share_ = share;
}

ConnectionShare::~ConnectionShare() {
  // Every easy handle of every phase is cleaned up by then; the multis close their connections.
  for (void* multi : multis_) curl_multi_cleanup(static_cast<CURLM*>(multi));
  if (share_ != nullptr) curl_share_cleanup(static_cast<CURLSH*>(share_));
}

void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);  // best effort: the budget reads back what holds
  }
}

ConnectionBudget connection_budget_for(std::size_t soft_limit, std::size_t hard_limit, std::size_t open_now) {
  ConnectionBudget b;
  b.soft_limit = soft_limit;
  b.hard_limit = hard_limit;
  b.open_now = open_now;
  const std::size_t free_fds = soft_limit > open_now ? soft_limit - open_now : 0;
  b.margin = std::max<std::size_t>(16, free_fds / 20);
  b.max_connections = free_fds > b.margin ? free_fds - b.margin : 1;
  return b;
}

ConnectionBudget connection_budget() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const auto as_size = [](rlim_t v) {
    return v == RLIM_INFINITY ? std::size_t{1} << 20 : static_cast<std::size_t>(v);
  };
  std::size_t open_now = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++open_now;
  return connection_budget_for(as_size(limit.rlim_cur), as_size(limit.rlim_max), open_now);
}

std::string transport_failure_kind(int curl_code, int os_errno) {
  switch (os_errno) {
    case EMFILE:
    case ENFILE: return "open_file_limit";
    case EADDRNOTAVAIL: return "ephemeral_ports_exhausted";
    case ECONNREFUSED: return "connection_refused";
    case ECONNRESET:
    case EPIPE: return "connection_reset";
    default: break;
  }
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_OPERATION_TIMEDOUT: return "timeout";
    case CURLE_COULDNT_CONNECT: return "connect_failed";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return "dns";
    case CURLE_GOT_NOTHING: return "empty_reply";
    case CURLE_PARTIAL_FILE: return "truncated_response";
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR: return "connection_reset";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE: return "tls";
    case CURLE_OUT_OF_MEMORY: return "client_internal";
    default: return "transport_other";
  }
}

std::size_t resolve_connection_limit(int max_connections, ConnectionBudget* budget_out) {
  require(max_connections >= 0, "--max-connections must be >= 1 (or 0 for the open-file budget)");
  raise_open_file_limit();
  const ConnectionBudget budget = connection_budget();
  const std::size_t wanted = static_cast<std::size_t>(max_connections);
  require(wanted <= budget.max_connections,
          "--max-connections " + std::to_string(wanted) + " needs that many sockets, but only " +
              std::to_string(budget.max_connections) + " fit the open-file limit (ulimit -n " + std::to_string(budget.soft_limit) +
              ", hard " + std::to_string(budget.hard_limit) + ", " + std::to_string(budget.open_now) + " open, " +
              std::to_string(budget.margin) + " kept for other files): raise the hard limit or lower --max-connections");
  if (budget_out != nullptr) *budget_out = budget;
  return wanted > 0 ? wanted : budget.max_connections;
}

SendLoopResult run_requests(const SendLoopConfig& config, const std::vector<PreparedRequest>& requests,
                          const std::vector<Nanos>& offsets_ns) {
  require(!config.url.empty(), "no URL to send requests to");
  require(config.max_concurrency >= 0, "--max-concurrency must be >= 0");
  require(config.timeout_s >= 0, "--timeout must be >= 0");
  require(config.idle_timeout_s >= 0, "--idle-timeout must be >= 0 (0 = none)");
  require(config.max_response_bytes >= 1, "--max-response-bytes must be >= 1");
  require(config.max_output_chunks >= 1, "--max-output-chunks must be >= 1");
  for (std::size_t i = 1; i < offsets_ns.size(); ++i) require(offsets_ns[i] >= offsets_ns[i - 1], "arrival offsets must be sorted");
  global_curl_init();
  ConnectionBudget budget;
  const std::size_t limit = resolve_connection_limit(config.max_connections, &budget);
  EventLoop loop(config, requests, offsets_ns, budget, limit);
  return loop.run();
}

}  // namespace encbench::client
