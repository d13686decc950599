#pragma once
// The live `encbench serve`'s API-server stage: vLLM's (serving/api_server_model.hpp) on the real
// clock, so that the live server and the virtual loop keep agreeing. A request whose body arrived
// whole at `received` takes the modelled API-server process that frees first (the same FIFO
// ApiServerQueue as the virtual loop), is processed for its modelled cost, and reaches the engine
// when that ends. The server's real work on it (JSON parse, image decode) runs inside that window
// on its parse lanes, so what the server adds is the modelled cost less what it really spent; a
// request whose real parse outlasts the window reaches the engine when the parse ends (counted as
// an overrun). Thread-safe: parse lanes call ready_at concurrently.
#include <cstdint>
#include <mutex>

#include "harness/core/clock.hpp"
#include "harness/serving/api_server_model.hpp"

namespace encbench::server {

struct ApiServerStats {
  std::int64_t requests = 0;    // requests through the stage
  Nanos modelled_ns = 0;        // their modelled processing
  Nanos queue_ns = 0;           // their wait for a free modelled process
  Nanos parse_ns = 0;           // what the server really spent parsing and decoding them
  Nanos held_ns = 0;            // what it added after its own parse: modelled end - parse end
  std::int64_t overruns = 0;    // requests whose real parse ended after their modelled end
};

class ApiServerStage {
 public:
  explicit ApiServerStage(serving::ApiServerModel model);
  bool enabled() const { return model_.enabled(); }
  const serving::ApiServerModel& model() const { return model_; }
  // When the request may reach the engine: max(its modelled end, parse_end). Calls in the order
  // parses end (with one image lane: the order requests arrived).
  Nanos ready_at(Nanos received_ns, Nanos parse_start_ns, Nanos parse_end_ns, std::int64_t image_pixels,
                 std::int64_t prompt_tokens);
  ApiServerStats stats() const;

 private:
  const serving::ApiServerModel model_;
  mutable std::mutex mutex_;
  serving::ApiServerQueue queue_;
  ApiServerStats stats_;
};

}  // namespace encbench::server
