#include "harness/server/engine_core_thread.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/core/mix64.hpp"
#include "harness/core/result_json.hpp"
#include "harness/server/content_identity.hpp"
#include "harness/serving/scheduler.hpp"
#include "harness/serving/step_timing.hpp"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace encbench::server {
namespace {

constexpr std::array<std::string_view, 64> kWords = {
    " lorem", " ipsum", " dolor", " sit", " amet", " image", " shows", " a", " red", " blue",
    " cat", " dog", " on", " the", " table", " with", " green", " light", " and", " small",
    " window", " near", " tree", " river", " under", " bright", " sky", " two", " people",
    " walking", " along", " road", " car", " parked", " beside", " house", " white", " wall",
    " black", " door", " open", " field", " of", " flowers", " mountain", " in", " distance",
    " clouds", " over", " city", " street", " sign", " reads", " text", " chart", " plot",
    " values", " rise", " fall", " left", " right", " top", " bottom", " center"};

}  // namespace

std::string_view to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::error: return "error";
    case FinishReason::aborted: return "abort";
  }
  return "unknown";
}

double EncoderCostModel::forward_ms(const vision::GridTHW& grid) const {
  const double patches = static_cast<double>(grid.patches());
  return per_forward_ms + per_patch_us * patches / 1e3 + per_patch_sq_ns * patches * patches / 1e6;
}

serving::EncoderHook make_cost_model_encoder(EncoderCostModel model) {
  return [model](const std::vector<vision::GridTHW>& grids) {
    serving::EncoderStepResult result;
    double total_ms = 0;
    for (const vision::GridTHW& grid : grids) total_ms += model.forward_ms(grid);
    const auto duration = std::chrono::nanoseconds(static_cast<Nanos>(total_ms * 1e6));
    std::this_thread::sleep_for(duration);
    result.forwards = static_cast<int>(grids.size());
    result.device_busy_ns = duration.count();
    return result;
  };
}

OutputPlan plan_output(std::uint64_t seed, std::int64_t max_tokens, bool ignore_eos,
                       std::int64_t eos_mean_tokens) {
  max_tokens = std::max<std::int64_t>(1, max_tokens);
  if (ignore_eos) return {max_tokens, FinishReason::length};
  const std::uint64_t span = static_cast<std::uint64_t>(std::max<std::int64_t>(1, 2 * eos_mean_tokens - 1));
  const std::int64_t natural = 1 + static_cast<std::int64_t>(mix64(seed) % span);
  if (natural < max_tokens) return {natural, FinishReason::stop};
  return {max_tokens, FinishReason::length};
}

std::string_view pseudo_word(std::uint64_t seed, std::int64_t index) {
  return kWords[mix64(seed ^ mix64(static_cast<std::uint64_t>(index))) % kWords.size()];
}

namespace {

// A request the engine thread knows: its handle, sink and how it finishes.
struct LiveRequest {
  std::shared_ptr<RequestHandle> handle;
  std::shared_ptr<EngineSink> sink;  // shared so the per-step outbox copies no std::function
  FinishReason finish = FinishReason::length;
  std::int64_t prompt_tokens = 0;
  bool admitted_once = false;
  // For the engine timeline (recorded at the first token, only while it is active).
  RequestTag tag;
  Nanos submitted_ns = 0;
  Nanos first_scheduled_ns = 0;
  std::int64_t encoder_step = -1;  // latest step that encoded its images (a preempted one re-encodes)
  std::uint64_t content_hash = 0;  // its prompt's identity (EngineRequest::content_hash)
  std::uint64_t image_hash = 0;    // its images as one identity (images_identity of their hashes)
};

struct Submission {
  std::shared_ptr<RequestHandle> handle;
  std::shared_ptr<EngineSink> sink;
  EngineRequest request;
  Nanos submitted_ns = 0;
  Nanos ready_ns() const { return request.ready_ns > 0 ? request.ready_ns : submitted_ns; }
  // Without a ready time a request joins whichever step is planned next once it is here (an idle
  // engine's step still starts at its submission); with one, only a step planned at or after it.
  bool due_by(Nanos start) const { return request.ready_ns <= 0 || request.ready_ns <= start; }
};

using Outbox = std::vector<std::pair<std::shared_ptr<EngineSink>, EngineEvent>>;

std::vector<std::uint64_t> image_hashes(const EngineRequest& r) {
  std::vector<std::uint64_t> hashes;
  for (const serving::SchedImage& image : r.images) hashes.push_back(image.hash);
  return hashes;
}

serving::SchedRequest to_sched_request(const EngineRequest& r) {
  serving::SchedRequest s;
  s.prompt_tokens = std::max<std::int64_t>(1, r.prompt_tokens);
  // Images always go through the encoder; one whose token count was not given costs one token.
  s.images = r.images;
  for (serving::SchedImage& image : s.images) image.tokens = std::max<std::int64_t>(1, image.tokens);
  // They lie inside the prompt: when they claim more tokens than it has, the last ones shrink (to
  // one token each); a prompt shorter than its images' count grows to one token an image.
  std::int64_t excess = s.image_tokens() - s.prompt_tokens;
  for (auto it = s.images.rbegin(); excess > 0 && it != s.images.rend(); ++it) {
    const std::int64_t cut = std::min(excess, it->tokens - 1);
    it->tokens -= cut;
    excess -= cut;
  }
  s.prompt_tokens += std::max<std::int64_t>(0, excess);
  // Images after the text (vision-arena's content order is [text, image]).
  s.image_offset = s.prompt_tokens - s.image_tokens();
  s.content_hash = r.content_hash;
  s.output_tokens = std::max<std::int64_t>(1, r.plan.tokens);
  return s;
}

serving::SchedulerConfig scheduler_config(const EngineCoreConfig& c) {
  serving::SchedulerConfig s;
  s.max_num_seqs = c.null_mode ? std::numeric_limits<int>::max() : c.max_num_seqs;
  s.max_num_batched_tokens = c.max_num_batched_tokens;
  s.encoder_budget_tokens = c.max_num_encoder_input_tokens;
  s.kv_capacity_tokens = c.kv_capacity_tokens;
  s.kv_block_tokens = c.kv_block_tokens;
  return s;
}

}  // namespace

struct EngineCoreThread::State {
  explicit State(const EngineCoreConfig& config) : scheduler(scheduler_config(config)) {}
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Submission> inbox;   // guarded by mutex
  std::int64_t queued = 0;        // guarded by mutex: inbox + the scheduler's waiting queue
  bool stopping = false;          // guarded by mutex
  bool started = false;
  EngineCoreStats stats;              // guarded by mutex
  Nanos started_ns = 0;
  std::thread thread;
  // Engine thread only:
  serving::Scheduler scheduler;
  std::unordered_map<serving::RequestId, LiveRequest> live;
  serving::RequestId next_id = 1;
  // Submitted, not yet due (ready_ns after the next step's planned start), in submission order.
  std::vector<Submission> pending;
  Nanos planned_end = 0;          // the last step's planned end (steady clock)
  Nanos last_planned_start = -1;  // the last step's planned start (-1: none yet)

  // Sleeps until there is something to do: a submission, a pending request falling due, a
  // running request. Called with `mutex` held.
  void wait_for_work(std::unique_lock<std::mutex>& lock);
  // The next step's planned start, or nothing when no request is due yet (engine thread).
  bool next_step_start(Nanos& start) const;
  // Moves the pending requests due by `start` into `due`, in ready order (ties: submission order).
  void take_due(Nanos start, std::deque<Submission>& due);
  // No step now: the counters a step would have updated (requests dropped, running, waiting).
  void publish_idle(std::int64_t aborted);

  // Null mode: every request's whole output at once, no scheduler, no encoder, no modelled time.
  void null_step(std::deque<Submission>& fresh, std::int64_t aborted);
  // One scheduled step planned to start at `start`: plan, encoder, its modelled length waited out
  // to an absolute deadline, tokens. False when stop() came during it.
  bool engine_step(const EngineCoreConfig& config, Nanos start, Outbox& outbox, std::int64_t failed,
                   std::int64_t aborted);
  // Waits until planned_end (false: stop() came first) and counts how late the wake-up was.
  bool wait_until_planned_end();
  // Emits the step's tokens into the outbox and counts them.
  void finish_step(EngineTimelineRecorder* recorder, Nanos step_end, Outbox& outbox, std::int64_t failed);
  // Counts first-time admissions of the plan (resumed requests were counted before).
  void count_admissions(const serving::StepPlan& plan);
  static void deliver(Outbox& outbox) {
    for (auto& [sink, event] : outbox) (*sink)(std::move(event));
  }
};

EngineCoreThread::EngineCoreThread(EngineCoreConfig config) : config_(std::move(config)) {
  require(config_.max_num_seqs >= 1, "--max-num-seqs must be at least 1");
  require(config_.max_num_batched_tokens >= 1, "--max-num-batched-tokens must be at least 1");
  require(config_.max_num_encoder_input_tokens >= 0, "--max-num-encoder-input-tokens must not be negative");
  if (config_.max_num_encoder_input_tokens == 0)
    config_.max_num_encoder_input_tokens = config_.max_num_batched_tokens;
  require(config_.max_waiting >= 1, "--max-waiting must be at least 1");
  require(config_.null_mode || static_cast<bool>(config_.encoder),
          "the engine needs an encoder hook unless it runs in null mode");
  state_ = std::make_unique<State>(config_);
}

EngineCoreThread::~EngineCoreThread() { stop(); }

void EngineCoreThread::start() {
  std::lock_guard lock(state_->mutex);
  if (state_->started) return;
  state_->started = true;
  state_->stopping = false;
  state_->started_ns = now_ns();
  state_->thread = std::thread([this] { run(); });
}

void EngineCoreThread::stop() {
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->started) return;
    state_->stopping = true;
  }
  state_->wake.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  std::lock_guard lock(state_->mutex);
  state_->inbox.clear();
  state_->pending.clear();
  for (const auto& [id, request] : state_->live) (void)state_->scheduler.remove(id);
  state_->live.clear();
  state_->queued = 0;
  state_->started = false;
  state_->stats.waiting = 0;
  state_->stats.running = 0;
}

std::shared_ptr<RequestHandle> EngineCoreThread::submit(EngineRequest request, EngineSink sink) {
  auto handle = std::make_shared<RequestHandle>();
  request.prompt_tokens = std::max<std::int64_t>(1, request.prompt_tokens);  // BOS at least
  request.plan.tokens = std::max<std::int64_t>(1, request.plan.tokens);
  {
    std::lock_guard lock(state_->mutex);
    if (state_->queued >= config_.max_waiting) {
      ++state_->stats.requests_rejected;
      return nullptr;
    }
    state_->inbox.push_back(
        Submission{handle, std::make_shared<EngineSink>(std::move(sink)), std::move(request), now_ns()});
    ++state_->queued;
    state_->stats.waiting = state_->queued;
  }
  state_->wake.notify_one();
  return handle;
}

EngineCoreStats EngineCoreThread::stats() const {
  std::lock_guard lock(state_->mutex);
  EngineCoreStats copy = state_->stats;
  copy.uptime_ns = state_->started ? now_ns() - state_->started_ns : 0;
  return copy;
}

namespace {

// Engine-thread helpers: each takes the state it works on and fills the outbox; the sinks are
// called after the counters are updated (whoever sees a response end also sees it counted).

// Moves new submissions into the scheduler. A request the scheduler refuses (it could never run)
// fails at once.
void admit_submissions(std::deque<Submission>& fresh, serving::Scheduler& scheduler,
                       std::unordered_map<serving::RequestId, LiveRequest>& live, serving::RequestId& next_id,
                       Outbox& outbox, std::int64_t& failed) {
  for (Submission& s : fresh) {
    const serving::RequestId id = next_id++;
    try {
      scheduler.add(id, to_sched_request(s.request));
    } catch (const InvalidInput& e) {
      outbox.emplace_back(std::move(s.sink), EngineEvent{0, 0, true, FinishReason::error, e.what()});
      ++failed;
      continue;
    }
    live.emplace(id, LiveRequest{std::move(s.handle), std::move(s.sink), s.request.plan.finish,
                                 s.request.prompt_tokens, false, std::move(s.request.tag), s.submitted_ns, 0, -1,
                                 s.request.content_hash, images_identity(image_hashes(s.request))});
  }
  fresh.clear();
}

std::int64_t drop_cancelled(serving::Scheduler& scheduler, std::unordered_map<serving::RequestId, LiveRequest>& live) {
  return static_cast<std::int64_t>(std::erase_if(live, [&](const auto& entry) {
    if (!entry.second.handle->cancelled()) return false;
    (void)scheduler.remove(entry.first);
    return true;
  }));
}

// Runs the encoder on the step's images and measures its wall time. On failure the requests
// whose images were in the step fail; the others go on.
serving::EncoderStepResult run_encoder(const serving::EncoderHook& hook, const serving::StepPlan& plan, serving::Scheduler& scheduler,
                              std::unordered_map<serving::RequestId, LiveRequest>& live, Outbox& outbox,
                              Nanos& wall_ns, std::int64_t& failed) {
  serving::EncoderStepResult encoded;
  wall_ns = 0;
  if (plan.grids.empty()) return encoded;
  const Nanos start = now_ns();
  try {
    encoded = hook(plan.grids);
  } catch (const std::exception& e) {
    encoded.ok = false;
    encoded.error = e.what();
  }
  wall_ns = now_ns() - start;
  if (encoded.ok) return encoded;
  for (const serving::RequestId id : plan.encoded) {
    const auto it = live.find(id);
    if (it == live.end()) continue;
    outbox.emplace_back(it->second.sink, EngineEvent{0, 0, true, FinishReason::error,
                                                     "encoder failed: " + encoded.error, encoded.out_of_memory});
    (void)scheduler.remove(id);
    live.erase(it);
    ++failed;
  }
  return encoded;
}

// Timeline bookkeeping of a step (cheap, done whether or not the recorder is active): when each
// request was first scheduled and which step encoded its images.
void note_scheduling(const serving::StepPlan& plan, std::unordered_map<serving::RequestId, LiveRequest>& live,
                     Nanos step_start, std::int64_t step_number) {
  for (const serving::RequestId id : plan.admitted)
    if (const auto it = live.find(id); it != live.end() && it->second.first_scheduled_ns == 0)
      it->second.first_scheduled_ns = step_start;
  for (const serving::RequestId id : plan.encoded)
    if (const auto it = live.find(id); it != live.end()) it->second.encoder_step = step_number;
}

EngineRequestRecord first_token_record(const LiveRequest& r, Nanos first_token_ns) {
  return {r.tag.client_request_id, r.tag.response_id, r.tag.arrival_ns, r.submitted_ns,
          r.first_scheduled_ns, r.encoder_step, first_token_ns, r.content_hash, r.image_hash};
}

// The step as the timeline records it; the LM part is what follows the encoder part.
EngineStepRecord step_record(std::int64_t step_number, const serving::StepPlan& plan, Nanos step_start,
                             Nanos encoder_start, Nanos encoder_wall, const serving::EncoderStepResult& encoded,
                             Nanos host_added, Nanos step_end) {
  EngineStepRecord r;
  r.step = step_number;
  r.start_ns = step_start;
  r.end_ns = step_end;
  r.encoder_start_ns = encoder_start;
  r.encoder_end_ns = encoder_start + encoder_wall;
  if (!plan.grids.empty()) {
    r.encoder_device_busy_ns = encoded.device_busy_ns;
    r.encoder_device_idle_ns = encoded.device_idle_ns;
    r.encoder_host_extra_ns = host_added;  // pre-processing + the post-forward work the device did not cover
    r.encoder_idle_ns_by_class = encoded.idle_ns_by_class;
  }
  r.lm_start_ns = std::min(step_end, r.encoder_end_ns + r.encoder_host_extra_ns);
  r.lm_end_ns = step_end;
  r.sequences = static_cast<std::int64_t>(plan.sequences());
  r.images = static_cast<std::int64_t>(plan.grids.size());
  return r;
}

}  // namespace

void EngineCoreThread::State::wait_for_work(std::unique_lock<std::mutex>& lock) {
  const auto woken = [&] { return stopping || !inbox.empty(); };
  if (scheduler.has_work()) return;
  if (pending.empty()) return wake.wait(lock, woken);
  Nanos due = pending.front().ready_ns();
  for (const Submission& p : pending) due = std::min(due, p.ready_ns());
  (void)wake.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(due)), woken);
}

bool EngineCoreThread::State::next_step_start(Nanos& start) const {
  start = planned_end;
  if (scheduler.has_work()) return true;
  // Idle: the step starts when its first request is due (not when the engine happened to wake).
  if (pending.empty()) return false;
  Nanos due = pending.front().ready_ns();
  for (const Submission& p : pending) due = std::min(due, p.ready_ns());
  start = std::max(planned_end, due);
  return start <= now_ns();
}

void EngineCoreThread::State::take_due(Nanos start, std::deque<Submission>& due) {
  std::stable_sort(pending.begin(), pending.end(),
                   [](const Submission& a, const Submission& b) { return a.ready_ns() < b.ready_ns(); });
  std::int64_t late = 0;
  std::vector<Submission> later;
  for (Submission& p : pending) {
    if (!p.due_by(start)) {
      later.push_back(std::move(p));
      continue;
    }
    // Due before the last step's planned start: that step would have taken it had it been here.
    if (p.request.ready_ns > 0 && p.request.ready_ns < last_planned_start) ++late;
    due.push_back(std::move(p));
  }
  pending = std::move(later);
  if (late == 0) return;
  std::lock_guard lock(mutex);
  stats.late_submissions += late;
}

void EngineCoreThread::State::publish_idle(std::int64_t aborted) {
  std::lock_guard lock(mutex);
  stats.requests_aborted += aborted;
  queued = static_cast<std::int64_t>(inbox.size() + pending.size() + scheduler.waiting());
  stats.waiting = queued;
  stats.running = static_cast<std::int64_t>(scheduler.running());
}

void EngineCoreThread::run() {
  State& s = *state_;
#ifdef __linux__
  // The kernel may delay a timed wake-up by the thread's timer slack (50 us by default) to
  // coalesce timers; each step's deadline wants the wake-up as close as the machine allows.
  (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  std::deque<Submission> fresh;
  bool worked = false;      // since the last on_idle call
  std::int64_t aborted = 0;  // cancelled requests dropped since the last step
  while (true) {
    if (worked && config_.on_idle && s.live.empty() && s.pending.empty()) {
      bool idle = false;
      {
        std::lock_guard lock(s.mutex);
        idle = s.inbox.empty() && !s.stopping;
        if (idle) ++s.stats.idle_trims;
      }
      if (idle) {
        worked = false;
        try {
          config_.on_idle();
        } catch (const std::exception&) {
          // Returning cache is best effort; the next request allocates as usual.
        }
      }
    }
    {
      std::unique_lock lock(s.mutex);
      s.wait_for_work(lock);
      if (s.stopping) return;
      fresh.swap(s.inbox);
    }
    worked = true;
    if (config_.null_mode) {
      const auto dropped = static_cast<std::int64_t>(
          std::erase_if(fresh, [](const Submission& q) { return q.handle->cancelled(); }));
      s.null_step(fresh, dropped);
      continue;
    }
    for (Submission& f : fresh) s.pending.push_back(std::move(f));
    fresh.clear();
    // Held requests whose client went leave at the next wake-up, not at their ready time.
    aborted += static_cast<std::int64_t>(
        std::erase_if(s.pending, [](const Submission& q) { return q.handle->cancelled(); }));
    aborted += drop_cancelled(s.scheduler, s.live);
    Nanos start = 0;
    if (!s.next_step_start(start)) {  // nothing due yet: wait_for_work sleeps until it is
      s.publish_idle(aborted);
      aborted = 0;
      continue;
    }
    Outbox outbox;
    std::int64_t failed = 0;
    std::deque<Submission> due;
    s.take_due(start, due);
    admit_submissions(due, s.scheduler, s.live, s.next_id, outbox, failed);
    aborted += drop_cancelled(s.scheduler, s.live);
    if (!s.engine_step(config_, start, outbox, failed, aborted)) return;
    aborted = 0;
  }
}

void EngineCoreThread::State::count_admissions(const serving::StepPlan& plan) {
  for (const serving::RequestId id : plan.admitted) {
    LiveRequest& request = live.at(id);
    if (request.admitted_once) continue;
    request.admitted_once = true;
    ++stats.requests_admitted;
    stats.prompt_tokens += request.prompt_tokens;
  }
}

void EngineCoreThread::State::null_step(std::deque<Submission>& fresh, std::int64_t aborted) {
  Outbox outbox;
  std::int64_t tokens = 0;
  for (Submission& q : fresh) {
    tokens += q.request.plan.tokens;
    outbox.emplace_back(std::move(q.sink), EngineEvent{0, q.request.plan.tokens, true, q.request.plan.finish, {}});
  }
  {
    std::lock_guard lock(mutex);
    const auto count = static_cast<std::int64_t>(fresh.size());
    for (const Submission& q : fresh) stats.prompt_tokens += q.request.prompt_tokens;
    stats.requests_admitted += count;
    stats.requests_finished += count;
    stats.generation_tokens += tokens;
    stats.requests_aborted += aborted;
    queued -= count;
    stats.waiting = queued;
    stats.running = 0;
    ++stats.scheduler.steps;
  }
  fresh.clear();
  deliver(outbox);
}

bool EngineCoreThread::State::engine_step(const EngineCoreConfig& config, Nanos start, Outbox& outbox,
                                          std::int64_t failed, std::int64_t aborted) {
  const Nanos step_start = now_ns();
  const serving::StepPlan& plan = scheduler.schedule();
  std::int64_t step_number = 0;
  {
    std::lock_guard lock(mutex);
    count_admissions(plan);
    stats.requests_aborted += aborted;
    stats.requests_failed += failed;
    failed = 0;
    queued = static_cast<std::int64_t>(inbox.size() + pending.size() + scheduler.waiting());
    stats.waiting = queued;
    stats.running = static_cast<std::int64_t>(scheduler.running());
    stats.scheduler = scheduler.counters();
    step_number = stats.scheduler.steps;
  }
  if (plan.empty()) {
    // Nothing can run until something changes (only new submissions can change it here); the
    // schedule goes on from now, not from the last step's planned end.
    planned_end = std::max(planned_end, step_start);
    deliver(outbox);
    std::unique_lock lock(mutex);
    wake.wait_for(lock, std::chrono::milliseconds(1), [&] { return stopping || !inbox.empty(); });
    return !stopping;
  }
  note_scheduling(plan, live, step_start, step_number);
  Nanos encoder_wall = 0;
  const Nanos encoder_start = now_ns();
  const serving::EncoderStepResult encoded = run_encoder(config.encoder, plan, scheduler, live, outbox, encoder_wall, failed);
  // The step's length by the virtual loop's rule, from its planned start: what the engine really
  // spent since then (scheduling, the forward's own computation) is inside it, not added to it.
  serving::EncoderStepTime encoder_time;
  if (!plan.grids.empty()) {
    const bool modelled = config.encoder_time == EngineCoreConfig::EncoderTime::modelled;
    encoder_time = {modelled ? encoded.virtual_forward_ns : encoder_wall, encoded.host_extra_ns,
                    modelled ? encoded.host_lead_ns : 0, encoded.host_post_ns, modelled ? encoded.end_wait_ns : 0};
  }
  const serving::StepTiming timing =
      serving::step_timing(config.lm, plan.sequences(), plan.prefill_tokens, plan.context_tokens, encoder_time);
  last_planned_start = start;
  planned_end = start + timing.total_ns();
  if (!wait_until_planned_end()) return false;
  const Nanos step_end = now_ns();
  EngineTimelineRecorder* const recorder =
      config.timeline && config.timeline->active() ? config.timeline.get() : nullptr;
  // Built before complete(), which clears the plan's items.
  EngineStepRecord step_trace;
  if (recorder) {
    step_trace = step_record(step_number, plan, step_start, encoder_start, encoder_wall, encoded,
                             encoder_time.host_extra_ns + serving::exposed_post_ns(encoder_time), step_end);
    step_trace.planned_start_ns = start;
    step_trace.planned_encoder_ns = timing.encoder_ns;
    step_trace.planned_lm_ns = timing.lm_ns;
  }
  const std::size_t images = plan.grids.size();
  finish_step(recorder, step_end, outbox, failed);
  {
    std::lock_guard lock(mutex);
    if (!encoded.ok && encoded.out_of_memory) ++stats.encoder_oom;
    stats.lm_modelled_ns += timing.lm_ns;
    stats.encoder_modelled_ns += timing.encoder_ns;
    if (images > 0) {
      stats.images += static_cast<std::int64_t>(images);
      ++stats.encoder_calls;
      stats.encoder_forwards += encoded.forwards;
      stats.encoder_syncs += encoded.syncs;
      stats.encoder_wall_ns += encoder_wall;
      stats.encoder_device_busy_ns += encoded.device_busy_ns;
      stats.encoder_device_idle_ns += encoded.device_idle_ns;
      stats.encoder_lateness_p99_us_sum += encoded.lateness_p99_us;
      stats.encoder_peak_device_bytes = std::max(stats.encoder_peak_device_bytes, encoded.peak_device_bytes);
    }
  }
  if (recorder) recorder->record_step(std::move(step_trace));
  deliver(outbox);
  return true;
}

bool EngineCoreThread::State::wait_until_planned_end() {
  // An absolute deadline on the steady clock, slept on a condition variable so stop() is prompt.
  std::unique_lock lock(mutex);
  const auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(planned_end));
  if (wake.wait_until(lock, deadline, [&] { return stopping; })) return false;
  const Nanos late = std::max<Nanos>(0, now_ns() - planned_end);
  stats.step_lateness_sum_ns += late;
  stats.step_lateness_max_ns = std::max(stats.step_lateness_max_ns, late);
  ++stats.timed_steps;
  return true;
}

void EngineCoreThread::State::finish_step(EngineTimelineRecorder* recorder, Nanos step_end, Outbox& outbox,
                                          std::int64_t failed) {
  std::int64_t emitted = 0;
  std::int64_t finished = 0;
  for (const serving::EmittedToken& t : scheduler.complete()) {
    const auto it = live.find(t.id);
    if (it == live.end()) continue;
    if (it->second.handle->cancelled()) continue;  // leaves at the next step
    if (recorder && t.index == 0) recorder->record_request(first_token_record(it->second, step_end));
    outbox.emplace_back(it->second.sink, EngineEvent{t.index, 1, t.finished, it->second.finish, {}});
    ++emitted;
    if (t.finished) {
      ++finished;
      live.erase(it);
    }
  }
  std::lock_guard lock(mutex);
  stats.generation_tokens += emitted;
  stats.requests_finished += finished;
  stats.requests_failed += failed;
  stats.running = static_cast<std::int64_t>(scheduler.running());
}

}  // namespace encbench::server
