#include "harness/server/engine.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"

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

std::uint64_t mix64(std::uint64_t x) {  // splitmix64 finaliser: cheap, well-spread hash
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Sequence {
  std::shared_ptr<RequestHandle> handle;
  std::shared_ptr<EngineSink> sink;  // shared so the per-step outbox copies no std::function
  EngineRequest request;
  std::int64_t prefilled = 0;
  std::int64_t generated = 0;
  std::int64_t scheduled = 0;  // tokens scheduled in the current step
};

double require_non_negative(const nlohmann::json& object, const char* key, double fallback,
                            const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  require(it->is_number() && it->get<double>() >= 0,
          where + ": lm_cost_model." + key + " must be a non-negative number");
  return it->get<double>();
}

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

LmCostModel lm_cost_model_from_profile(const nlohmann::json& profile, const std::string& origin) {
  LmCostModel model;
  const auto it = profile.find("lm_cost_model");
  if (it == profile.end()) return model;
  require(it->is_object(), origin + ": lm_cost_model must be an object");
  model.base_ms = require_non_negative(*it, "base_ms", model.base_ms, origin);
  model.per_seq_ms = require_non_negative(*it, "per_seq_ms", model.per_seq_ms, origin);
  model.per_prefill_token_ms = require_non_negative(*it, "per_prefill_token_ms",
                                                    model.per_prefill_token_ms, origin);
  return model;
}

double EncoderCostModel::forward_ms(const GridTHW& grid) const {
  const double patches = static_cast<double>(grid.patches());
  return per_forward_ms + per_patch_us * patches / 1e3 + per_patch_sq_ns * patches * patches / 1e6;
}

EncoderHook make_cost_model_encoder(EncoderCostModel model) {
  return [model](const std::vector<GridTHW>& grids) {
    EncoderStepResult result;
    double total_ms = 0;
    for (const GridTHW& grid : grids) total_ms += model.forward_ms(grid);
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

struct Engine::State {
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Sequence> waiting;   // guarded by mutex
  bool stopping = false;          // guarded by mutex
  bool started = false;
  EngineStats stats;              // guarded by mutex
  Nanos started_ns = 0;
  std::vector<Sequence> running;  // engine thread only
  std::thread thread;
};

Engine::Engine(EngineConfig config) : config_(std::move(config)), state_(std::make_unique<State>()) {
  require(config_.max_num_seqs >= 1, "--max-num-seqs must be at least 1");
  require(config_.max_num_batched_tokens >= 1, "--max-num-batched-tokens must be at least 1");
  require(config_.max_num_encoder_input_tokens >= 0, "--max-num-encoder-input-tokens must not be negative");
  if (config_.max_num_encoder_input_tokens == 0)
    config_.max_num_encoder_input_tokens = config_.max_num_batched_tokens;
  require(config_.max_waiting >= 1, "--max-waiting must be at least 1");
  require(config_.null_mode || static_cast<bool>(config_.encoder),
          "the engine needs an encoder hook unless it runs in null mode");
}

Engine::~Engine() { stop(); }

void Engine::start() {
  std::lock_guard lock(state_->mutex);
  if (state_->started) return;
  state_->started = true;
  state_->stopping = false;
  state_->started_ns = now_ns();
  state_->thread = std::thread([this] { run(); });
}

void Engine::stop() {
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->started) return;
    state_->stopping = true;
  }
  state_->wake.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  std::lock_guard lock(state_->mutex);
  state_->waiting.clear();
  state_->running.clear();
  state_->started = false;
  state_->stats.waiting = 0;
  state_->stats.running = 0;
}

std::shared_ptr<RequestHandle> Engine::submit(EngineRequest request, EngineSink sink) {
  auto handle = std::make_shared<RequestHandle>();
  request.prompt_tokens = std::max<std::int64_t>(1, request.prompt_tokens);  // BOS at least
  request.plan.tokens = std::max<std::int64_t>(1, request.plan.tokens);
  {
    std::lock_guard lock(state_->mutex);
    if (static_cast<std::int64_t>(state_->waiting.size()) >= config_.max_waiting) {
      ++state_->stats.requests_rejected;
      return nullptr;
    }
    state_->waiting.push_back(
        Sequence{handle, std::make_shared<EngineSink>(std::move(sink)), std::move(request)});
    state_->stats.waiting = static_cast<std::int64_t>(state_->waiting.size());
  }
  state_->wake.notify_one();
  return handle;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(state_->mutex);
  EngineStats copy = state_->stats;
  copy.uptime_ns = state_->started ? now_ns() - state_->started_ns : 0;
  return copy;
}

void Engine::run() {
  State& s = *state_;
  std::vector<Sequence> admitted;
  std::vector<GridTHW> grids;
  bool worked = false;  // since the last on_idle call
  while (true) {
    admitted.clear();
    grids.clear();
    if (worked && config_.on_idle) {
      bool idle = false;
      {
        std::lock_guard lock(s.mutex);
        idle = s.waiting.empty() && s.running.empty() && !s.stopping;
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
    std::int64_t budget = config_.max_num_batched_tokens;
    std::int64_t encoder_budget = config_.max_num_encoder_input_tokens;
    std::int64_t prefill_tokens = 0;
    std::int64_t context_tokens = 0;  // tokens the step's sequences attend to (KV read)
    std::int64_t batch = 0;
    std::int64_t aborted = 0;
    {
      std::unique_lock lock(s.mutex);
      s.wake.wait(lock, [&] { return s.stopping || !s.waiting.empty() || !s.running.empty(); });
      if (s.stopping) return;
      worked = true;
      // Cancelled requests leave before they take seats or budget.
      const auto is_cancelled = [](const Sequence& q) { return q.handle->cancelled(); };
      aborted += std::erase_if(s.waiting, is_cancelled);
      aborted += std::erase_if(s.running, is_cancelled);
      // Running sequences first (vLLM V1): decode takes one token, prefill its next chunk.
      for (Sequence& q : s.running) {
        const std::int64_t remaining_prefill = q.request.prompt_tokens - q.prefilled;
        q.scheduled = std::min(remaining_prefill > 0 ? remaining_prefill : 1, budget);
        if (q.scheduled == 0) continue;
        budget -= q.scheduled;
        if (remaining_prefill > 0) prefill_tokens += q.scheduled;
        context_tokens += q.prefilled + q.generated + q.scheduled;
        ++batch;
      }
      const std::int64_t seat_limit = config_.null_mode ? INT64_MAX : config_.max_num_seqs;
      while (!s.waiting.empty() && budget > 0 &&
             static_cast<std::int64_t>(s.running.size() + admitted.size()) < seat_limit) {
        // Encoder budget (vLLM's encoder_compute_budget): a request's images are all encoded in
        // the step that admits it, so it waits (first come, first served) for a step with room.
        // One that could never fit was refused at parsing; one admitted alone always runs.
        const std::int64_t needs = s.waiting.front().request.encoder_tokens;
        if (needs > encoder_budget && encoder_budget < config_.max_num_encoder_input_tokens) break;
        encoder_budget -= std::min(needs, encoder_budget);
        Sequence q = std::move(s.waiting.front());
        s.waiting.pop_front();
        q.scheduled = std::min(q.request.prompt_tokens, budget);
        budget -= q.scheduled;
        prefill_tokens += q.scheduled;
        ++batch;
        for (const GridTHW& grid : q.request.images) grids.push_back(grid);
        s.stats.prompt_tokens += q.request.prompt_tokens;
        admitted.push_back(std::move(q));
      }
      s.stats.requests_admitted += static_cast<std::int64_t>(admitted.size());
      s.stats.requests_aborted += aborted;
      s.stats.waiting = static_cast<std::int64_t>(s.waiting.size());
      s.stats.running = static_cast<std::int64_t>(s.running.size() + admitted.size());
      s.stats.max_running_seen = std::max(s.stats.max_running_seen, s.stats.running);
      s.stats.max_step_tokens_seen =
          std::max(s.stats.max_step_tokens_seen, config_.max_num_batched_tokens - budget);
      s.stats.max_step_encoder_tokens_seen = std::max(
          s.stats.max_step_encoder_tokens_seen, config_.max_num_encoder_input_tokens - encoder_budget);
      ++s.stats.steps;
    }

    if (config_.null_mode) {
      std::int64_t tokens = 0;
      for (Sequence& q : admitted) tokens += q.request.plan.tokens;
      {
        // Counters first, then the sinks: whoever sees a response end also sees it counted.
        std::lock_guard lock(s.mutex);
        s.stats.generation_tokens += tokens;
        s.stats.requests_finished += static_cast<std::int64_t>(admitted.size());
        s.stats.running = 0;
      }
      for (Sequence& q : admitted)
        (*q.sink)(EngineEvent{0, q.request.plan.tokens, true, q.request.plan.finish, {}});
      continue;
    }

    const Nanos step_start = now_ns();
    EncoderStepResult encoded;
    Nanos encoder_wall = 0;
    if (!grids.empty()) {
      try {
        encoded = config_.encoder(grids);
      } catch (const std::exception& e) {
        encoded.ok = false;
        encoded.error = e.what();
      }
      encoder_wall = now_ns() - step_start;
    }
    std::int64_t failed = 0;
    std::vector<std::pair<std::shared_ptr<EngineSink>, EngineEvent>> outbox;  // delivered after the counters
    if (!encoded.ok) {
      // Requests whose images could not be encoded fail; the others go on.
      std::erase_if(admitted, [&](Sequence& q) {
        if (q.request.images.empty()) return false;
        outbox.emplace_back(std::move(q.sink), EngineEvent{0, 0, true, FinishReason::error,
                                                           "encoder failed: " + encoded.error,
                                                           encoded.out_of_memory});
        ++failed;
        return true;
      });
    }
    for (Sequence& q : admitted) s.running.push_back(std::move(q));

    // Modelled language-model step, slept on a condition variable so stop() is prompt.
    const double lm_ms = config_.lm.step_ms(batch, prefill_tokens, context_tokens + prefill_tokens);
    const Nanos lm_ns = static_cast<Nanos>(lm_ms * 1e6);
    {
      std::unique_lock lock(s.mutex);
      const auto deadline = std::chrono::steady_clock::time_point(
          std::chrono::nanoseconds(step_start + encoder_wall + lm_ns));
      if (s.wake.wait_until(lock, deadline, [&] { return s.stopping; })) return;
    }

    std::int64_t emitted = 0;
    std::int64_t finished = 0;
    std::erase_if(s.running, [&](Sequence& q) {
      if (q.scheduled == 0) return false;
      bool token = false;
      if (q.prefilled < q.request.prompt_tokens) {
        q.prefilled += q.scheduled;
        token = q.prefilled >= q.request.prompt_tokens;  // prefill done: first token
      } else {
        token = true;
      }
      q.scheduled = 0;
      if (!token || q.handle->cancelled()) return false;  // cancelled ones leave next step
      const bool done = q.generated + 1 >= q.request.plan.tokens;
      EngineEvent event{q.generated, 1, done, q.request.plan.finish, {}};
      outbox.emplace_back(q.sink, std::move(event));
      ++q.generated;
      ++emitted;
      if (done) ++finished;
      return done;
    });

    {
      // Counters first, then the sinks: whoever sees a response end also sees it counted.
      std::lock_guard lock(s.mutex);
      s.stats.generation_tokens += emitted;
      s.stats.requests_finished += finished;
      s.stats.requests_failed += failed;
      if (!encoded.ok && encoded.out_of_memory) ++s.stats.encoder_oom;
      s.stats.running = static_cast<std::int64_t>(s.running.size());
      s.stats.lm_modelled_ns += lm_ns;
      if (!grids.empty()) {
        s.stats.images += static_cast<std::int64_t>(grids.size());
        ++s.stats.encoder_calls;
        s.stats.encoder_forwards += encoded.forwards;
        s.stats.encoder_syncs += encoded.syncs;
        s.stats.encoder_wall_ns += encoder_wall;
        s.stats.encoder_device_busy_ns += encoded.device_busy_ns;
        s.stats.encoder_device_idle_ns += encoded.device_idle_ns;
        s.stats.encoder_lateness_p99_us_sum += encoded.lateness_p99_us;
        s.stats.encoder_peak_device_bytes = std::max(s.stats.encoder_peak_device_bytes, encoded.peak_device_bytes);
      }
    }
    for (auto& [sink, event] : outbox) (*sink)(std::move(event));
  }
}

}  // namespace encbench::server
