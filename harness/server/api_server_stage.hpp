#pragma once
// The live `encbench serve`'s API-server stage: vLLM's (serving/api_server_model.hpp) on the real
// clock, so that the live server and the virtual loop keep agreeing. A request whose body arrived
// whole at `received` takes the modelled API-server process that frees first (the same FIFO
// ApiServerQueue as the virtual loop), is processed for its modelled cost, and reaches the engine
// when that ends. The server's real work on it (JSON parse, image decode) runs inside that window
// on its parse lanes, so what the server adds is the modelled cost less what it really spent; a
// request whose real parse outlasts the window reaches the engine when the parse ends (counted as
// an overrun). Thread-safe: parse lanes call ready_at concurrently.
//
// vLLM's processor cache as the virtual loop applies it (ApiServerPipeline: same capacity from the
// model file, same LRU per process, same item bytes): the key is the request's images' mm_hash
// (content_identity.hpp, from their encoded bytes as received), so a duplicate's images skip the
// HF processor and its modelled cost is the virtual one's: decode + hash + prompt update + fixed.
//
// The stage is bounded: at most `max_in_stage` requests wait for a modelled process or
// sit in one; admit() refuses the next (the server answers 503 api_server_queue_full). vLLM's
// asyncio front end has no such bound: under overload its queue, and its memory, grow without
// limit; here a refused request costs nothing after its parse.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/server/content_identity.hpp"
#include "harness/serving/api_server_model.hpp"
#include "harness/serving/api_server_pipeline.hpp"

namespace encbench::server {

struct ApiServerStats {
  std::int64_t requests = 0;    // requests through the stage
  Nanos modelled_ns = 0;        // their modelled processing
  Nanos queue_ns = 0;           // their wait for a free modelled process
  Nanos parse_ns = 0;           // what the server really spent parsing and decoding them
  Nanos held_ns = 0;            // what it added after its own parse: modelled end - parse end
  std::int64_t overruns = 0;    // requests whose real parse ended after their modelled end
  std::int64_t rejected = 0;    // refused: max_in_stage requests already in the stage
  std::int64_t in_stage = 0;    // requests in the stage now (gauge)
  std::int64_t processor_cache_hits = 0;       // images the processor cache held
  std::int64_t processor_cache_evictions = 0;  // items its LRU evicted to make room
};

// What the stage needs of a parsed request.
struct ApiServerInput {
  std::int64_t prompt_tokens = 0;
  // Its images as sent: pixels, mm_hash (the processor cache's key, computed at parse time from the
  // encoded bytes; 0: none, never a hit) and the bytes the cache counts for each.
  std::vector<serving::ProcessorItem> images;
};

// Largest --max-api-server-queue accepted.
inline constexpr std::int64_t kMaxApiServerQueue = std::int64_t{1} << 20;

// A request's place in the stage, from its admission until it reaches the engine or its
// connection goes (whichever drops the last copy gives the place back).
class ApiServerSlot {
 public:
  explicit ApiServerSlot(std::atomic<std::int64_t>& in_stage) : in_stage_(in_stage) {}
  ~ApiServerSlot() { in_stage_.fetch_sub(1); }
  ApiServerSlot(const ApiServerSlot&) = delete;
  ApiServerSlot& operator=(const ApiServerSlot&) = delete;

 private:
  std::atomic<std::int64_t>& in_stage_;
};

struct ApiServerAdmission {
  bool admitted = false;  // false: the stage is full (nothing else is set)
  Nanos ready_ns = 0;     // when it may reach the engine
  std::shared_ptr<ApiServerSlot> slot;  // held until then
};

class ApiServerStage {
 public:
  ApiServerStage(serving::ApiServerModel model, std::int64_t max_in_stage);
  bool enabled() const { return model_.enabled(); }
  const serving::ApiServerModel& model() const { return model_; }
  // When the request may reach the engine: max(its modelled end, parse_end). Calls in the order
  // parses end (with one image lane: the order requests arrived).
  Nanos ready_at(Nanos received_ns, Nanos parse_start_ns, Nanos parse_end_ns, const ApiServerInput& input);
  // ready_at behind the bound: refused when max_in_stage requests are in the stage.
  ApiServerAdmission admit(Nanos received_ns, Nanos parse_start_ns, Nanos parse_end_ns, const ApiServerInput& input);
  std::int64_t max_in_stage() const { return max_in_stage_; }
  ApiServerStats stats() const;

 private:
  const serving::ApiServerModel model_;
  mutable std::mutex mutex_;
  // The virtual loop's stages (media pool, then the processes, each with its processor cache).
  serving::ApiServerPipeline pipeline_;
  ApiServerStats stats_;
  const std::int64_t max_in_stage_;
  std::atomic<std::int64_t> in_stage_{0};
};

}  // namespace encbench::server
