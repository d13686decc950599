#pragma once
// vLLM's API-server stage as data (scenarios/serving/api-server/*.json). Before a request reaches
// EngineCore's scheduler, the API server process (AsyncLLM and its input processor,
// vllm/v1/engine/input_processor.py, vllm/multimodal/processing.py) decodes each image, resizes it
// (smart_resize, PIL bicubic), rescales, normalises and patchifies it (the HF Qwen2-VL / Qwen3-VL
// image processor, numpy) and tokenises the prompt, on its CPU and in its one asyncio loop: one
// request at a time per process. vLLM's default deployment runs one (--api-server-count 1).
//
//   decode (media loading pool) = image_pixels * decode_ns_per_pixel
//   serial (the process's loop) = request_ms + image_pixels * (hash_ns_per_pixel + parse_ns_per_pixel)
//                               + prompt_tokens * prompt_us_per_token
//                               + image_pixels * process_ns_per_pixel   (processor-cache miss only)
//                                 or, with process_ms_by_pixels, that curve's ms for each image
//                                 missed (a measured cost per image by size; issue 59)
//                               (+ the decode, when media_loading_threads is 0)
//
// How a request passes the two stages, the processor cache and the order of calls:
// api_server_pipeline.hpp.
// image_pixels: the sum over its images of width x height as sent (before the resize); prompt
// tokens: as the engine counts them (text, template and image placeholders). Each request takes
// the API-server process that frees first, FIFO, and enters the scheduler when its processing
// ends (ApiServerQueue). Both clocks apply it: the virtual loop (virtual_loop.hpp) and the live
// `encbench serve` (server/api_server_stage.hpp; its processor cache keys on each image's mm_hash
// from the bytes it received, server/content_identity.hpp). TTFT still counts from the client's send.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"

namespace encbench::serving {

struct ApiServerCoefficient {
  double value = 0;
  std::string source;
};

// The HF processor's cost per image by its pixels (process_ms_by_pixels): measured points,
// pixels strictly increasing and ms never falling; linear between points, the first point's ms
// below it (the per-call cost), the last segment's slope beyond the last.
struct ProcessCurve {
  std::vector<std::pair<double, double>> points;  // (pixels, ms)
  std::string source;
  bool enabled() const { return !points.empty(); }
  double ms(double pixels) const;
};

struct ApiServerModel {
  std::string name = "none";
  std::filesystem::path path;
  std::string description;
  // Processes serving requests in parallel; 0 = no stage (a request reaches the scheduler when sent).
  ApiServerCoefficient api_server_count{0, "none: no API-server stage"};
  ApiServerCoefficient request_ms{0, "none"};
  ApiServerCoefficient decode_ns_per_pixel{0, "none"};
  ApiServerCoefficient process_ns_per_pixel{0, "none"};
  ApiServerCoefficient prompt_us_per_token{0, "none"};
  ApiServerCoefficient hash_ns_per_pixel{0, "none"};
  // Parsing the request's JSON body (its data URL's base64 text) on the event loop, per pixel
  // of the images it carries.
  ApiServerCoefficient parse_ns_per_pixel{0, "none"};
  ProcessCurve process_ms_by_pixels;
  // VLLM_MEDIA_LOADING_THREAD_COUNT: decode off the serial path on this many threads; 0 = the
  // decode is charged on the serial path (the stage before the pool was modelled).
  ApiServerCoefficient media_loading_threads{0, "none: decode on the serial path"};
  // --mm-processor-cache-gb (GiB); 0 = no processor cache.
  ApiServerCoefficient processor_cache_gib{0, "none: no processor cache"};
  // Bytes of one pixel_values element as the cache counts them (the model dtype vLLM casts to).
  ApiServerCoefficient processor_bytes_per_element{2, "default: bf16"};

  bool enabled() const { return api_server_count.value >= 1; }
  int processes() const { return static_cast<int>(api_server_count.value); }
  bool pooled_decode() const { return media_loading_threads.value >= 1; }
  int media_threads() const { return static_cast<int>(media_loading_threads.value); }
  std::int64_t processor_cache_capacity_bytes() const;
  // Decoding a request's images on the media pool (ns, rounded down).
  Nanos decode_cost_ns(std::int64_t image_pixels) const;
  // A request's serial work: its images' pixels whose processed output the processor cache held
  // (no HF processor for them) and those it did not, and its prompt tokens.
  struct SerialWork {
    std::int64_t cached_pixels = 0;
    std::int64_t processed_pixels = 0;
    std::int64_t prompt_tokens = 0;
    // Each processed image's pixels, for process_ms_by_pixels (empty: processed_pixels is one image).
    std::vector<std::int64_t> processed_images;
  };
  // The HF processor on one image (ns, rounded down): the curve, else pixels x process_ns_per_pixel.
  Nanos process_cost_ns(std::int64_t image_pixels) const;
  // Its serial processing (ns, rounded down): the HF processor on the processed pixels only; with
  // the decode when there is no media pool.
  Nanos serial_cost_ns(const SerialWork& work) const;
  // A lone request's whole modelled time in the stage: decode + serial processing, cache missed.
  Nanos request_cost_ns(std::int64_t image_pixels, std::int64_t prompt_tokens) const;
};

// Upper bounds of the file's values (the reader's accepted ranges).
inline constexpr int kMaxApiServers = 1024;
inline constexpr double kMaxCurvePixels = 1e9;   // a point's pixels: (0, 1e9]
inline constexpr double kMaxCurveMs = 1e4;       // a point's ms: [0, 1e4]

// Reads a model; every coefficient is {"value": number, "source": "non-empty"}, the curve
// {"points": [[pixels, ms], ...] (two or more), "source": "non-empty"}. Throws InvalidInput naming
// the origin and key for an unknown key, a missing source, a value outside its range, a curve
// whose pixels do not increase or whose ms fall, or a curve beside a non-zero process_ns_per_pixel.
ApiServerModel parse_api_server_model(const nlohmann::json& doc, const std::string& origin);
nlohmann::json to_json(const ApiServerModel& model);
// "none" (no stage), a name in <scenarios_dir>/serving/api-server (else in the fallback's: a
// user's or a fit's own scenarios folder without api-server/ still finds the shipped models), or a
// path to a JSON file.
ApiServerModel load_api_server_model(const std::string& name_or_path, const std::filesystem::path& scenarios_dir,
                                     const std::filesystem::path& fallback_scenarios_dir = {});
// --api-server-count N on top of a model: N in [0, kMaxApiServers]; 0 turns the stage off.
void set_api_server_count(ApiServerModel& model, int count, const std::string& origin);

// The API-server processes as a FIFO queue: a request arriving at `arrival` (calls in arrival
// order) takes the process that frees first, starts when it is free (not before it arrives) and
// ends `cost` later; admit returns that end. With one process, the k-th of a burst waits for the
// k-1 before it.
class ApiServerQueue {
 public:
  explicit ApiServerQueue(int processes);
  Nanos admit(Nanos arrival, Nanos cost);
  // admit in two halves, for a cost that depends on the process (its own cache): the process
  // that frees first and when the request starts there; then that process is busy until `end`.
  struct Start {
    std::size_t process = 0;
    Nanos start_ns = 0;
  };
  Start next(Nanos arrival) const;
  void occupy(std::size_t process, Nanos end);

 private:
  std::vector<Nanos> free_at_;
};

}  // namespace encbench::serving
