// `encbench serve`: the OpenAI-compatible live server (flags only; logic in harness/server).
#include <iostream>
#include <memory>

#include "harness/cli/command.hpp"
#include "harness/server/serve_command.hpp"
#include "harness/serving/serving_model_choice.hpp"

namespace encbench::cli {
namespace {

// What is served and on what: address, model, device, encoder path.
void add_model_flags(CLI::App* sub, server::ServeOptions& o) {
  sub->add_option("--host", o.host, "Address to bind")->capture_default_str();
  sub->add_option("--port", o.port, "Port to bind (0 = any free port; the bound port is printed)")
      ->capture_default_str();
  sub->add_option("--model", o.model, "Vision model: preset name (qwen2-vl-7b, qwen2.5-vl-7b, qwen3-vl-8b, tiny-*) or path.json; sets geometry and encoder shapes")
      ->capture_default_str();
  sub->add_option("--served-model-name", o.served_model_name, "Model name clients must send (default: --model)");
  sub->add_option("--device", o.device,
                  "cpu | sim:<profile>. sim (default sim:ascend-910b): modelled device times on the real clock, "
                  "LM step cost from a roofline of the model on that profile; cpu runs the encoder for real "
                  "(seconds per image on 2 cores); trace:<file>[@<profile>] takes op times from a measured trace")
      ->capture_default_str();
  sub->add_option("--profiles-dir", o.profiles_dir, "Where device profiles live")->capture_default_str();
  sub->add_option("--op-map", o.op_map, "Kernel-name map for a trace:FILE device (JSON, schema encbench-op-name-map; default: scenarios/devices/op-maps/op-name-map.json): gives the trace's kernels (FlashAttentionScore, MatMulV2, flash_fwd_kernel, ...) the roles of encbench's ops");
  sub->add_option("--encoder-preset", o.encoder_preset, "Encoder toggle preset: baseline | pr6448 | pr7104 | optimized")
      ->capture_default_str();
  sub->add_option("--encoder", o.encoder,
                  "Encoder path: real (EncoderRunner forward on --device) | cost-model (documented stand-in)")
      ->capture_default_str();
  sub->add_option("--encoder-clock", o.encoder_clock,
                  "real: the encoder forward runs on --device on this machine's clock (its wall time is the step's "
                  "encoder part) | virtual: on the virtual-clock sim device with the serving model's encoder host "
                  "model, waited out like the LM step, so each step lasts what `encbench run --clock virtual` "
                  "gives it (sim devices only)")
      ->capture_default_str();
  sub->add_option("--encoder-host-model", o.encoder_host_model,
                  "--encoder-clock virtual: encoder host model (a name in scenarios/devices/host-models or a path; "
                  "default: the --serving-model's encoder_host_model, else dispatch-only)");
  sub->add_option("--encoder-mlp", o.encoder_mlp, "Run norm2 + MLP in every encoder layer (true|false)")
      ->capture_default_str();
}

// The profiler endpoints and what a profile keeps; the cpu device's threads; null mode.
void add_profiling_flags(CLI::App* sub, server::ServeOptions& o) {
  sub->add_flag("--enable-profiling", o.enable_profiling,
                "Serve POST /start_profile and /stop_profile (off: both 404, as on vLLM without a profiler)");
  sub->add_option("--profile-max-kept", o.profile_max_kept,
                  "Profiles (trace + summary) kept in --profile-dir; older ones this server wrote are deleted")
      ->capture_default_str();
  sub->add_option("--profile-dir", o.profile_dir,
                  "Where POST /stop_profile writes the encoder Chrome trace and idle-gap summary")
      ->capture_default_str();
  sub->add_option("--profile-max-forwards", o.profile_max_forwards,
                  "Encoder forwards kept for the profile trace (a ring; older ones dropped and counted)")
      ->capture_default_str();
  sub->add_option("--profile-max-steps", o.profile_max_steps,
                  "Engine steps kept for the /stop_profile engine timeline (the first ones; later ones dropped "
                  "and counted)")
      ->capture_default_str();
  sub->add_option("--profile-max-requests", o.profile_max_requests,
                  "Requests kept for the /stop_profile engine timeline (the first ones; later ones dropped and "
                  "counted)")
      ->capture_default_str();
  sub->add_option("--device-threads", o.device_threads, "cpu device kernel threads (0 = all cores)")
      ->capture_default_str();
  sub->add_flag("--null", o.null_mode, "No encoder, instant tokens: measures client and HTTP capacity");
}

// The scheduler's and the device allocator's limits (vLLM's flags where vLLM has them).
void add_engine_flags(CLI::App* sub, server::ServeOptions& o) {
  sub->add_option("--max-num-seqs", o.max_num_seqs, "Most sequences in the running batch")->capture_default_str();
  sub->add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "Token budget of one step")
      ->capture_default_str();
  sub->add_option("--max-model-len", o.max_model_len, "Context length (prompt + output); 400 when prompt + max_tokens exceeds it")
      ->capture_default_str();
  sub->add_option("--max-num-encoder-input-tokens", o.max_num_encoder_input_tokens,
                  "Encoder budget (vLLM's): multimodal tokens one step may encode; an image needing more is a 400, images together are spread over steps "
                  "(0 = --max-num-batched-tokens, clamped to 262144 patches per forward)")
      ->capture_default_str();
  sub->add_option("--mm-processor-kwargs", o.mm_processor_kwargs,
                  "Image processor overrides (vLLM's flag): '{\"min_pixels\": N, \"max_pixels\": M}' "
                  "(default: the model preset's)");
  sub->add_option("--max-waiting", o.max_waiting, "Most requests waiting for admission (503 beyond)")
      ->capture_default_str();
  sub->add_option("--device-memory-gb", o.device_memory_gb,
                  "Device memory budget of the encoder's allocator; exhaustion answers 503 "
                  "(0: sim = the profile's HBM size, cpu = unlimited)")
      ->capture_default_str();
  sub->add_option("--device-cache-keep-mb", o.device_cache_keep_mb,
                  "Cached device memory the allocator keeps when the engine goes idle (the rest is returned)")
      ->capture_default_str();
}

// What a client may send and how long it may take: media, body and decode limits, timeouts.
void add_http_flags(CLI::App* sub, server::ServeOptions& o) {
  sub->add_option("--limit-mm-per-prompt", o.limit_mm_per_prompt, "Images per prompt: N or '{\"image\": N}'")
      ->capture_default_str();
  sub->add_option("--allowed-local-media-path", o.allowed_local_media_path,
                  "Directory from which file:// image URLs may be read (default: none)");
  sub->add_option("--max-body-bytes", o.max_body_bytes, "Largest request body (413 above)")->capture_default_str();
  sub->add_option("--max-inflight-bytes", o.max_inflight_bytes,
                  "Request body bytes held at once, server-wide, counted as they arrive until the request is "
                  "parsed (images decoded); a request beyond it gets 503 with Retry-After (at least "
                  "--max-body-bytes)")
      ->capture_default_str();
  sub->add_option("--header-timeout-s", o.header_timeout_s,
                  "Time allowed for a request header, also the keep-alive idle limit")
      ->capture_default_str();
  sub->add_option("--decode-threads", o.decode_threads,
                  "Threads parsing requests with images and decoding them (text-only requests have a lane "
                  "of their own)")
      ->capture_default_str();
  sub->add_option("--max-decode-queue", o.max_decode_queue,
                  "Requests with images queued or decoding at once (503 decode_queue_full beyond)")
      ->capture_default_str();
  sub->add_option("--decode-timeout-s", o.decode_timeout_s,
                  "Time a request's images may take from entering the decode queue (503 decode_timeout after)")
      ->capture_default_str();
  sub->add_option("--max-unsent-bytes", o.max_unsent_bytes,
                  "Per connection: response bytes formatted but not yet sent; a stream pauses there until the "
                  "client reads (one that reads nothing for 60 s is dropped)")
      ->capture_default_str();
}

// What the answers hold (lengths, words) and the faults injected into them.
void add_output_and_fault_flags(CLI::App* sub, server::ServeOptions& o) {
  sub->add_option("--eos-mean-tokens", o.eos_mean_tokens,
                  "Mean natural output length without ignore_eos (uniform 1..2N-1, capped by max_tokens)")
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed for output lengths, words and fault choices")->capture_default_str();
  // Shares and pauses are range-checked here (a parse error, exit 2): the server accepted
  // --fail-rate 2 or --stall-ms -5 and started.
  sub->add_option("--fail-rate", o.fail_rate, "Share of generation requests answered 500")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--disconnect-rate", o.disconnect_rate, "Share of generation requests dropped mid-stream")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--stall-ms", o.stall_ms, "Pause every stream this long after its first token")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

// The modelled costs: LM step, serving model, engine-core host, KV cache, encoder host.
void add_cost_model_flags(CLI::App* sub, server::ServeOptions& o) {
  sub->add_option("--lm-fixed-ms", o.lm_fixed_ms,
                  "Fixed per-step cost of the LM roofline (launches, sampling; an estimate)")
      ->capture_default_str();
  sub->add_option("--lm-per-context-token-ms", o.lm_per_context_token_ms,
                  "Override the LM cost model's per_context_token_ms (KV read per attended token)");
  sub->add_option("--lm-base-ms", o.lm_base_ms, "Override the LM cost model's base_ms");
  sub->add_option("--lm-per-seq-ms", o.lm_per_seq_ms, "Override the LM cost model's per_seq_ms");
  sub->add_option("--lm-per-prefill-token-ms", o.lm_per_prefill_token_ms,
                  "Override the LM cost model's per_prefill_token_ms");
  sub->add_option("--serving-model", o.serving_model,
                  "Serving-model coefficients (scenarios/serving/*.json: achieved FLOP/s and bandwidth, engine-core "
                  "host costs, encoder dispatch, KV capacity; each with its source); sim devices only. Default: the "
                  "calibrated one the project ships for --device and --model (scenarios/serving/<profile>-<model>.json, "
                  "e.g. ascend-910b-qwen3-vl-8b.json), else the LM roofline; 'roofline' = the roofline alone");
  sub->add_flag("!--no-async-scheduling", o.async_scheduling,
                "Engine-core host work adds to each step instead of overlapping it (vLLM --no-async-scheduling)");
  sub->add_option("--kv-cache-tokens", o.kv_cache_tokens,
                  "KV cache capacity in tokens (blocks of 128; a full cache preempts); 0 = unlimited; default: the "
                  "serving model's, else unlimited");
  sub->add_option("--encoder-dispatch-us", o.encoder_dispatch_us,
                  "Host dispatch cost per encoder device op (the eager framework's); default: the serving model's, else 0");
  sub->add_option("--encoder-host-ms-per-step", o.encoder_host_ms_per_step,
                  "Host pre-processing per encoder step; default: the serving model's, else 0");
  sub->add_option("--encoder-host-post-forward-share", o.encoder_host_post_forward_share,
                  "Of --encoder-host-ms-per-step, the share run after the forward returns (encoder-cache writes, "
                  "gathering the embeddings): it adds only what the forward's queued device work does not cover; "
                  "default: the serving model's, else 0")
      ->check(CLI::Range(0.0, 1.0));
}

// vLLM's API-server stage (docs/server.md): each request held until its modelled input processing
// (image decode, resize, normalise, tokenise) ends, one request at a time per process.
void add_api_server_flags(CLI::App* sub, server::ServeOptions& o) {
  sub->add_option("--api-server-model", o.api_server_model,
                  "API-server stage costs: none | a name in scenarios/serving/api-server (vllm-qwen-vl) | a JSON "
                  "path; per request request_ms + pixels x (decode + process ns) + prompt tokens x us, each with its "
                  "source (default: the --serving-model's api_server, else none)");
  sub->add_option("--api-server-count", o.api_server_count,
                  "API-server processes (vLLM --api-server-count; each serves one request at a time, FIFO; 0 = no "
                  "stage; default: the API-server model's, vLLM's 1)")
      ->check(CLI::Range(-1, serving::kMaxApiServers));
  sub->add_option("--max-api-server-queue", o.max_api_server_queue,
                  "Requests in the API-server stage at once (waiting for a modelled process or in one); more get 503 "
                  "api_server_queue_full with Retry-After (vLLM's asyncio front end queues without bound)")
      ->capture_default_str();
}

}  // namespace

void add_serve_command(CLI::App& app, CommandContext& ctx) {
  auto options = std::make_shared<server::ServeOptions>();
  auto* sub = app.add_subcommand(
      "serve", "OpenAI-compatible HTTP server (chat/completions, SSE) with the encoder path in the loop");
  auto& o = *options;
  add_model_flags(sub, o);
  add_profiling_flags(sub, o);
  add_engine_flags(sub, o);
  add_http_flags(sub, o);
  add_output_and_fault_flags(sub, o);
  add_cost_model_flags(sub, o);
  add_api_server_flags(sub, o);
  sub->add_option("--result-json", o.result_json, "Write a summary (schema encbench-serve/1) at shutdown");
  sub->callback([&ctx, options] {
    ctx.action = [&ctx, options] {
      // The calibrated serving model by default (null mode has no engine to model).
      const serving::ServingModelChoice choice = serving::choose_serving_model(
          options->null_mode ? serving::kRooflineServingModel : options->serving_model.string(), options->device,
          options->model, options->profiles_dir);
      options->serving_model = choice.file;
      options->serving_model_description = serving::describe(choice);
      return server::run_serve(*options, ctx.argv, std::cout);
    };
  });
}
}  // namespace encbench::cli
