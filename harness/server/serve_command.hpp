#pragma once
// What `encbench serve` does, behind the CLI: flag values -> ServerConfig -> run until a signal.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "harness/server/server.hpp"
#include "harness/serving/encoder_step.hpp"

namespace encbench::server {

// Most patches one encoder forward may take (the same limit as `encbench encode`).
inline constexpr std::int64_t kMaxPatchesPerForward = 262144;

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string model = "qwen3-vl-8b";     // the seeds' model (Qwen3-VL-8B)
  std::string served_model_name;           // default: model
  std::string device = "sim:ascend-910b";  // cpu | sim:<profile> (sim: real clock, no tensor memory)
  std::filesystem::path profiles_dir = "scenarios/devices";
  std::filesystem::path op_map;            // trace: devices: kernel-name map ("" = the shipped one)
  std::string encoder_preset = "baseline"; // baseline | pr6448 | pr7104 | optimized
  std::string encoder = "real";            // real (EncoderRunner on --device) | cost-model
  bool encoder_mlp = true;                 // norm2 + MLP per layer (realistic encoder time)
  unsigned device_threads = 0;             // cpu device kernel pool (0 = all cores)
  bool enable_profiling = false;           // /start_profile, /stop_profile (404 without: vLLM's practice)
  std::int64_t profile_max_kept = 16;      // profiles kept in profile_dir (older ones deleted)
  std::filesystem::path profile_dir = "encbench-profile";  // /stop_profile writes trace + summary here
  std::int64_t profile_max_forwards = 256; // ring of forwards kept for the trace (older: dropped)
  // Engine timeline of a profile window: the first steps / requests kept (later: dropped, counted).
  std::int64_t profile_max_steps = 20000;
  std::int64_t profile_max_requests = 20000;
  bool null_mode = false;
  int max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 8192;
  std::int64_t max_model_len = 32768;
  std::int64_t max_num_encoder_input_tokens = 0;  // vLLM's encoder budget; 0 = max_num_batched_tokens
  std::string mm_processor_kwargs;         // '{"min_pixels": N, "max_pixels": M}' overrides the model's
  std::int64_t max_waiting = 4096;         // waiting-queue bound (503 beyond)
  double device_memory_gb = 0;             // allocator budget; 0: sim = profile HBM, cpu = unlimited
  double device_cache_keep_mb = 256;       // cached device memory kept when the engine goes idle
  std::string limit_mm_per_prompt = "16";  // N or {"image": N}
  std::string allowed_local_media_path;
  std::int64_t max_body_bytes = 32ll << 20;
  std::int64_t max_inflight_bytes = 512ll << 20;  // request bytes held server-wide (503 beyond)
  double header_timeout_s = 10;
  int decode_threads = 1;
  int max_decode_queue = 64;               // image requests queued or decoding (503 beyond)
  double decode_timeout_s = 30;            // per image request, from entering the decode queue
  std::int64_t max_unsent_bytes = 256ll << 10;  // per connection: formatted, not yet sent
  std::int64_t eos_mean_tokens = 128;
  std::uint64_t seed = 0;
  double fail_rate = 0;
  double disconnect_rate = 0;
  std::int64_t stall_ms = 0;
  // LM cost-model overrides (negative: take the device profile's or the default).
  double lm_base_ms = -1;
  double lm_per_seq_ms = -1;
  double lm_per_prefill_token_ms = -1;
  double lm_per_context_token_ms = -1;
  double lm_fixed_ms = 2.0;  // the roofline's fixed per-step cost (an estimate)
  // --serving-model FILE (serving/serving_model.hpp): LM step, engine-core host, encoder host and
  // KV coefficients with their sources; the --lm-* overrides still apply on top.
  std::filesystem::path serving_model;
  // Which serving model this is and why (serving/serving_model_choice.hpp describe()), said on the
  // server's first lines; "" when the caller chose the file itself.
  std::string serving_model_description;
  bool async_scheduling = true;            // vLLM >= 0.14 default; --no-async-scheduling
  std::int64_t kv_cache_tokens = -1;       // -1: from the serving model (none: unlimited); 0: unlimited
  // Host costs of the encoder that the eager framework pays and this C++ does not (negative: the
  // serving model's value, else 0): per device op dispatched, and per encoder step.
  double encoder_dispatch_us = -1;
  double encoder_host_ms_per_step = -1;
  // Of it, the share run after the forward returns (negative: the serving model's, else 0).
  double encoder_host_post_forward_share = -1;
  // vLLM's API-server stage (serving/api_server_model.hpp): "" = the serving model's (none without
  // one); none, a name in scenarios/serving/api-server, or a path. Processes: -1 = the model's.
  std::string api_server_model;
  int api_server_count = -1;
  // Requests in the API-server stage at once (waiting for a modelled process or in one); more are
  // refused with 503 api_server_queue_full. vLLM's asyncio front end queues without bound.
  std::int64_t max_api_server_queue = 8192;
  // The encoder's clock: "real" runs the forward on --device on this machine's
  // clock (its wall time is the step's encoder part); "virtual" runs it on the virtual-clock sim
  // device with the serving model's encoder host model, as `encbench run --clock virtual` does,
  // and the engine waits the modelled forward out (sim devices only).
  std::string encoder_clock = "real";
  // --encoder-clock virtual: the encoder host model (device/host_model.hpp); "" = the serving
  // model's encoder_host_model, else dispatch-only.
  std::string encoder_host_model;
  std::filesystem::path result_json;       // summary written at shutdown when set
};

// The encoder step (serving/encoder_step.hpp) `encbench serve` runs: --model with
// --encoder-preset's toggles on --device, on the real clock; each engine step's newly admitted
// images run as one forward.
serving::EncoderStepOptions encoder_step_options(const ServeOptions& options);

// Validates and resolves (profile file, limits). Throws InvalidInput.
ServerConfig build_server_config(const ServeOptions& options);

// Parses --limit-mm-per-prompt: "4" or '{"image": 4}'.
int parse_image_limit(const std::string& text);

// Applies --mm-processor-kwargs (vLLM's flag; here "min_pixels" and "max_pixels", integers with
// 1 <= min_pixels <= max_pixels <= 2^31) to a model's geometry. Throws InvalidInput naming the key.
void apply_mm_processor_kwargs(const std::string& json_text, vision::VisionGeometry& geometry);

// Starts, prints "encbench-serve listening url=http://H:P port=P" on `out`, serves until SIGINT or
// SIGTERM, then writes the optional result JSON (schema encbench-serve / 1). Returns 0.
int run_serve(const ServeOptions& options, const std::vector<std::string>& argv, std::ostream& out);

}  // namespace encbench::server
