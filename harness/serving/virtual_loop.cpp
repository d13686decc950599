#include "harness/serving/virtual_loop.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <string>

#include "harness/core/error.hpp"
#include "harness/core/mix64.hpp"

namespace encbench::serving {
namespace {

// The virtual clock's origin: RequestRecord uses 0 for "never".
constexpr Nanos kOrigin = 1'000'000'000;

client::RequestRecord start_record(std::size_t index, const VirtualRequest& r) {
  client::RequestRecord rec;
  rec.index = index;
  rec.request_id = "virtual-" + std::to_string(index);
  rec.dispatched = true;
  rec.intended_ns = rec.arrival_ns = rec.admitted_ns = rec.dispatch_ns = rec.sent_ns = kOrigin + r.arrival_ns;
  rec.prompt_len_client = r.client_prompt_tokens;
  // No usage.prompt_tokens: the seeds' vLLM client (before vLLM PR #38654) counted the prompt
  // itself (text only), which calculate_metrics does when usage is absent.
  rec.usage_prompt_tokens = -1;
  rec.choices_ns.reserve(static_cast<std::size_t>(r.request.output_tokens) + 1);
  return rec;
}

void record_token(client::RequestRecord& rec, const serving::EmittedToken& token, Nanos now) {
  if (token.index == 0) {
    rec.headers_ns = now;
    rec.first_choices_ns = now;
    rec.http_status = 200;
    // vLLM's chat stream sends the role chunk ("delta": {"role": "assistant", "content": ""}) with
    // the first output, before the first token's chunk (serving_chat.py, first_iteration), and
    // its bench client counts every chunk with choices: the role chunk is the first (TTFT), the
    // first token's an ITL of ~0. The live `encbench serve` streams the same shape, so its client
    // records one ITL more per request than the tokens' intervals (the clocks'
    // mean ITL differed by 1/output_len until this chunk was recorded here too).
    rec.choices_ns.push_back(now);
    ++rec.data_events;
  }
  rec.choices_ns.push_back(now);
  rec.last_choices_ns = now;
  ++rec.content_chunks;
  ++rec.data_events;
  if (!token.finished) return;
  rec.end_ns = now;
  rec.usage_completion_tokens = token.index + 1;
  rec.data_events += 2;  // usage chunk and [DONE], as vLLM streams them
  rec.saw_done = true;
  rec.success = true;
}

void record_failure(client::RequestRecord& rec, const std::string& error, Nanos now) {
  rec.end_ns = now;
  rec.http_status = 200;
  rec.error_events = 1;
  rec.first_error_event = error;
  rec.success = false;
  rec.error = error;
  rec.failure_kind = "no_valid_chunk";
}

// Encoder part of one step on the virtual clock; failed requests leave the scheduler.
EncoderStepTime run_encoder_step(const serving::EncoderHook& encoder, const serving::StepPlan& plan,
                                 serving::Scheduler& scheduler, std::vector<client::RequestRecord>& records, Nanos now,
                                 VirtualEngineCounters& c, VirtualStep* trace, std::size_t& failed_requests) {
  if (plan.grids.empty()) return {};
  const serving::EncoderStepResult step = encoder(plan.grids);
  ++c.encoder_steps;
  c.images += static_cast<std::int64_t>(plan.grids.size());
  const EncoderStepTime time{step.virtual_forward_ns, step.host_extra_ns, step.host_lead_ns, step.host_post_ns,
                             step.end_wait_ns};
  const Nanos took = encoder_took_ns(time);
  c.encoder_ns += took;
  c.encoder_syncs += step.syncs;
  c.encoder_device_busy_ns += step.device_busy_ns;
  c.encoder_device_idle_ns += step.device_idle_ns;
  if (trace != nullptr) {
    trace->encoder_busy_ns = step.device_busy_ns;
    trace->encoder_idle_by_class = step.idle_ns_by_class;
  }
  if (!step.ok) {
    ++c.encoder_failures;
    for (const serving::RequestId id : plan.encoded) {
      ++failed_requests;
      (void)scheduler.remove(id);
      record_failure(records[id], "encoder failed: " + step.error, now + took);
    }
  }
  return time;
}

}  // namespace

namespace {

// Standard normal draws from a splitmix64 stream and Box-Muller (deterministic for a seed; no
// library distribution, whose algorithm differs between standard libraries).
class NormalStream {
 public:
  explicit NormalStream(std::uint64_t seed) : state_(seed * kSplitmix64Gamma + 0xD1B54A32D192ED03ULL) {}
  double next() {
    const double u1 = (static_cast<double>(draw() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(draw() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t draw() { return splitmix64_next(state_); }
  std::uint64_t state_;
};

// A mean-1 lognormal factor per step: exp(sigma z - sigma^2 / 2), sigma^2 = ln(1 + cv^2).
class StepJitter {
 public:
  StepJitter(double cv, std::uint64_t seed) : sigma_(std::sqrt(std::log1p(cv * cv))), normal_(seed) {}
  double next() {
    if (sigma_ == 0) return 1.0;
    return std::exp(sigma_ * normal_.next() - 0.5 * sigma_ * sigma_);
  }

 private:
  double sigma_;
  NormalStream normal_;
};

// How long after it was sent a request reaches the API server: the bodies still in transit when
// it is sent (itself included) x per_request x exp(sigma z). The front end takes bodies sent
// together one after another in a loosely kept order (scripts/measure-frontend-burst.py), so a
// lone request arrives after about one body's time and the k-th of a burst after about k. Its own
// stream (the seed's complement), so turning it on leaves the step factors' draws as they were.
class ArrivalJitter {
  static constexpr double kMaxArrivalDelayNs = 3600e9;

 public:
  ArrivalJitter(Nanos per_request_ns, double sigma, std::uint64_t seed)
      : per_request_ns_(per_request_ns), sigma_(sigma), normal_(~seed) {}
  bool enabled() const { return per_request_ns_ > 0; }
  // Calls in send order.
  Nanos arrival(Nanos sent) {
    while (!in_transit_.empty() && in_transit_.top() <= sent) in_transit_.pop();
    const double bodies = static_cast<double>(in_transit_.size() + 1);
    // Capped at an hour: the reader allows sigma 4 and 1 s a body, whose far tail would overflow
    // the nanosecond clock; no front end holds a request that long.
    const double delay = std::min(bodies * static_cast<double>(per_request_ns_) * std::exp(sigma_ * normal_.next()),
                                  kMaxArrivalDelayNs);
    const Nanos at = sent + static_cast<Nanos>(delay);
    in_transit_.push(at);
    return at;
  }

 private:
  Nanos per_request_ns_;
  double sigma_;
  NormalStream normal_;
  std::priority_queue<Nanos, std::vector<Nanos>, std::greater<>> in_transit_;
};

// vLLM's API server between the client's send and the scheduler on the virtual clock: the same
// model (ApiServerPipeline, api_server_pipeline.hpp) as the live server's stage
// (server/api_server_stage.hpp), which runs it on the real clock. Each
// request sent reaches it (after its arrival jitter, when the run has one), is decoded on the media
// pool, then takes the process that frees first, FIFO in the order decodes end, and reaches the
// scheduler when its modelled processing ends. A request that could precede another at the serial
// stage reached the server before the other's decode ended, so once the clock passes a decode's end
// every such request has entered: the stage moves arrivals and decode ends up to `now` in time
// order. Without a stage, a request reaches the scheduler when it reaches the server.
class VirtualApiServerStage {
 public:
  VirtualApiServerStage(const ApiServerModel& model, const std::vector<VirtualRequest>& requests, VirtualEngineCounters& c,
                 ArrivalJitter jitter)
      : enabled_(model.enabled()), pipeline_(model), requests_(requests), counters_(c), jitter_(jitter),
        start_ns_(requests.size(), 0), ready_ns_(requests.size(), 0), sent_ns_(requests.size(), 0) {}
  void enter(std::size_t id, Nanos sent, serving::Scheduler& scheduler) {
    start_ns_[id] = ready_ns_[id] = sent_ns_[id] = sent;
    if (jitter_.enabled()) {
      arriving_.push({jitter_.arrival(sent), sequence_++, id});
      return;
    }
    arrive(id, sent, scheduler);
  }
  // Arrivals and decode ends up to `now`, in time order (a decode that ended before a request
  // arrived goes first); then requests whose processing ended by `now` reach the scheduler, in the
  // order they ended.
  void release_until(Nanos now, serving::Scheduler& scheduler) {
    for (;;) {
      const bool arrival = !arriving_.empty() && arriving_.top().at_ns <= now;
      const bool decoded = !decoding_.empty() && decoding_.top().at_ns <= now;
      if (!arrival && !decoded) break;
      if (arrival && (!decoded || arriving_.top().at_ns < decoding_.top().at_ns)) {
        const Event e = arriving_.top();
        arriving_.pop();
        start_ns_[e.id] = ready_ns_[e.id] = e.at_ns;
        arrive(e.id, e.at_ns, scheduler);
      } else {
        process(decoding_.top().id, decoding_.top().at_ns);
        decoding_.pop();
      }
    }
    while (!processing_.empty() && processing_.top().at_ns <= now) {
      scheduler.add(processing_.top().id, requests_[processing_.top().id].request);
      processing_.pop();
    }
  }
  bool holds() const { return !arriving_.empty() || !decoding_.empty() || !processing_.empty(); }
  // The next time something moves: a request arrives, a decode ends or a request is ready.
  Nanos next_ready() const {
    Nanos next = std::numeric_limits<Nanos>::max();
    for (const auto* queue : {&arriving_, &decoding_, &processing_})
      if (!queue->empty()) next = std::min(next, queue->top().at_ns);
    return next;
  }
  Nanos start_ns(std::size_t id) const { return start_ns_[id]; }
  Nanos ready_ns(std::size_t id) const { return ready_ns_[id]; }
  void finish() {
    const ApiServerPipelineCounters p = pipeline_.counters();
    counters_.api_server_decode_ns = p.decode_ns;
    counters_.api_server_cache_hits = p.processor_cache_hits;
    counters_.api_server_cache_evictions = p.processor_cache_evictions;
  }

 private:
  struct Event {
    Nanos at_ns;
    std::uint64_t sequence;  // ties: the order they entered
    std::size_t id;
    bool operator>(const Event& o) const { return at_ns != o.at_ns ? at_ns > o.at_ns : sequence > o.sequence; }
  };
  void arrive(std::size_t id, Nanos at, serving::Scheduler& scheduler) {
    if (!enabled_) {
      scheduler.add(id, requests_[id].request);
      return;
    }
    decoding_.push({pipeline_.decode(at, total_pixels(requests_[id].images_sent)), sequence_++, id});
  }
  void process(std::size_t id, Nanos decoded) {
    const VirtualRequest& r = requests_[id];
    const ApiServerProcessed p = pipeline_.process(decoded, r.images_sent, r.request.prompt_tokens);
    start_ns_[id] = p.start_ns;
    ready_ns_[id] = p.end_ns;
    // Work: the serial cost (with the decode when there is no pool) and the pool's decode; the
    // rest of the time from send to ready is waiting for a thread or a process.
    const Nanos work = pipeline_.model().work_ns(p.cost_ns, total_pixels(r.images_sent));
    counters_.api_server_ns += work;
    counters_.api_server_queue_ns += p.end_ns - sent_ns_[id] - work;
    processing_.push({p.end_ns, sequence_++, id});
  }
  bool enabled_;
  ApiServerPipeline pipeline_;
  const std::vector<VirtualRequest>& requests_;
  VirtualEngineCounters& counters_;
  ArrivalJitter jitter_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> arriving_, decoding_, processing_;
  std::uint64_t sequence_ = 0;
  std::vector<Nanos> start_ns_, ready_ns_, sent_ns_;
};

// The client side of the loop: arrivals, the --max-concurrency semaphore, and dispatch into the
// API-server stage (vLLM's TTFT starts at dispatch, after the semaphore).
class ClientSide {
 public:
  ClientSide(const std::vector<VirtualRequest>& requests, std::vector<client::RequestRecord>& records, int cap,
             VirtualApiServerStage& api_server)
      : requests_(requests), records_(records), cap_(cap), api_server_(api_server) {}
  // Arrivals up to `now`: dispatched while the cap allows, else queued.
  void arrive_until(Nanos now, serving::Scheduler& scheduler) {
    while (next_ < requests_.size() && requests_[next_].arrival_ns <= now) {
      queue_.push_back(next_);
      ++next_;
      dispatch(requests_[next_ - 1].arrival_ns, scheduler);
    }
    dispatch(now, scheduler);
  }
  void finished(std::size_t count) { in_flight_ -= static_cast<std::int64_t>(count); }
  bool more_to_come() const { return next_ < requests_.size() || !queue_.empty(); }
  bool arrivals_left() const { return next_ < requests_.size(); }
  Nanos next_arrival() const { return requests_[next_].arrival_ns; }

 private:
  void dispatch(Nanos at, serving::Scheduler& scheduler) {
    while (!queue_.empty() && (cap_ <= 0 || in_flight_ < cap_)) {
      const std::size_t id = queue_.front();
      queue_.pop_front();
      client::RequestRecord& rec = records_[id];
      const Nanos sent = std::max(at, requests_[id].arrival_ns);
      rec.admitted_ns = rec.dispatch_ns = rec.sent_ns = kOrigin + sent;
      api_server_.enter(id, sent, scheduler);
      ++in_flight_;
    }
  }
  const std::vector<VirtualRequest>& requests_;
  std::vector<client::RequestRecord>& records_;
  int cap_;
  VirtualApiServerStage& api_server_;
  std::size_t next_ = 0;
  std::deque<std::size_t> queue_;
  std::int64_t in_flight_ = 0;
};

// When the engine has nothing to run: the next time something reaches it (an arrival, or a request
// leaving the API-server stage). Throws when nothing ever will.
Nanos next_event(const ClientSide& client, const VirtualApiServerStage& api_server, const std::string& why) {
  require(client.arrivals_left() || api_server.holds(), why);
  if (!api_server.holds()) return client.next_arrival();
  if (!client.arrivals_left()) return api_server.next_ready();
  return std::min(client.next_arrival(), api_server.next_ready());
}

}  // namespace

VirtualArmResult run_virtual_arm(const std::vector<VirtualRequest>& requests, const serving::SchedulerConfig& config,
                                 const serving::StepCostModel& cost, const serving::EncoderHook& encoder,
                                 const VirtualArmOptions& options) {
  VirtualArmResult out;
  out.records.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    require(i == 0 || requests[i].arrival_ns >= requests[i - 1].arrival_ns, "virtual requests must be in arrival order");
    out.records.push_back(start_record(i, requests[i]));
  }
  if (options.keep_steps) out.traces.resize(requests.size());
  serving::Scheduler scheduler(config);
  VirtualEngineCounters& c = out.engine;
  VirtualApiServerStage api_server(options.api_server, requests, c,
                            ArrivalJitter(options.arrival_jitter_per_request_ns, options.arrival_jitter_sigma,
                                          options.jitter_seed));
  ClientSide client(requests, out.records, options.max_concurrency, api_server);
  StepJitter jitter(options.step_time_cv, options.jitter_seed);
  Nanos now = 0;
  while (client.more_to_come() || api_server.holds() || scheduler.has_work()) {
    client.arrive_until(now, scheduler);
    api_server.release_until(now, scheduler);
    if (!scheduler.has_work()) {
      now = next_event(client, api_server, "the client holds requests but none is in flight");  // idle until then
      continue;
    }
    const serving::StepPlan& plan = scheduler.schedule();
    if (plan.empty()) {
      now = next_event(client, api_server,
                       "the scheduler can make no progress with " + std::to_string(scheduler.waiting()) +
                           " waiting requests and none arriving");
      continue;
    }
    VirtualStep step;
    step.start_ns = now;
    std::size_t finished = 0;  // requests that left: failed by the encoder or done
    const EncoderStepTime encoder_time = run_encoder_step(encoder, plan, scheduler, out.records, kOrigin + now, c,
                                                          options.keep_steps ? &step : nullptr, finished);
    // The step's parts by the rule the live engine applies too (step_timing.hpp).
    const StepTiming timing = step_timing(cost, plan.sequences(), plan.prefill_tokens, plan.context_tokens,
                                          encoder_time, jitter.next());
    step.encoder_ns = timing.encoder_ns;
    step.lm_ns = timing.lm_ns;
    c.lm_ns += step.lm_ns;
    if (options.keep_steps) {
      step.sequences = static_cast<std::int32_t>(plan.sequences());
      step.images = static_cast<std::int32_t>(plan.grids.size());
      for (const serving::ScheduledItem& item : plan.items)
        if (out.traces[item.id].first_scheduled_ns == 0) out.traces[item.id].first_scheduled_ns = kOrigin + now;
      for (const serving::RequestId id : plan.encoded)
        out.traces[id].encoder_step = static_cast<std::int64_t>(out.steps.size());
      out.steps.push_back(step);
    }
    now += step.encoder_ns + step.lm_ns;
    for (const serving::EmittedToken& token : scheduler.complete()) {
      record_token(out.records[token.id], token, kOrigin + now);
      if (token.finished) ++finished;
    }
    client.finished(finished);
  }
  c.scheduler = scheduler.counters();
  api_server.finish();
  out.start_ns = kOrigin;
  out.end_ns = kOrigin + now;
  if (options.keep_steps) {
    for (VirtualStep& step : out.steps) step.start_ns += kOrigin;
    for (std::size_t i = 0; i < out.traces.size(); ++i) {
      out.traces[i].api_server_start_ns = kOrigin + api_server.start_ns(i);
      out.traces[i].engine_arrival_ns = kOrigin + api_server.ready_ns(i);
    }
  }
  return out;
}

}  // namespace encbench::serving
