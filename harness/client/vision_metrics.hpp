#pragma once
// What a vision benchmark needs beyond vLLM's text metrics, from the same records: images sent
// and per second, each request's image pixels and body bytes, its vision tokens (the server's
// usage.prompt_tokens minus the request's text tokens where the server reports usage and a
// tokenizer counted the text; else the served model's geometry from the image sizes, said
// which), and TTFT by the request's image size. Pure function of plain data; the printer and
// JSON writer only read the result.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/records.hpp"

namespace encbench::client {

// One request's image side, by request index (as prepared before the run).
struct VisionRequestInfo {
  std::size_t image_count = 0;
  std::int64_t image_pixels = -1;         // sum of width x height over its images (-1: unknown)
  std::size_t request_bytes = 0;          // the JSON body sent
  std::int64_t text_tokens = -1;          // by the tokenizer (-1: no tokenizer)
  std::int64_t model_vision_tokens = -1;  // by the served model's geometry (-1: unknown model or size)
};

struct ValueSummary {
  std::size_t count = 0;
  double mean = 0, median = 0;
  std::vector<std::pair<double, double>> percentiles;  // (p, value), numpy's linear rule
};

// TTFT of the successful requests whose image pixels fall in [min_pixels, max_pixels).
struct TtftBucket {
  std::string label;  // "no image", "< 0.25 MP", "0.25-1 MP", "1-4 MP", ">= 4 MP"
  std::int64_t min_pixels = 0, max_pixels = 0;  // max 0: unbounded
  std::size_t count = 0;
  double mean_ttft_ms = 0, median_ttft_ms = 0;
  std::vector<std::pair<double, double>> percentiles_ttft_ms;
};

struct VisionMetrics {
  std::int64_t images_sent = 0;           // images in dispatched requests
  std::int64_t images_completed = 0;      // images in successful requests
  double image_throughput = 0;            // images_completed / duration (as vLLM's request_throughput)
  ValueSummary image_pixels;              // successful requests with images and known sizes
  ValueSummary request_bytes;             // dispatched requests
  ValueSummary vision_tokens;             // successful requests with images
  std::size_t vision_tokens_from_usage = 0, vision_tokens_from_geometry = 0;
  std::string vision_tokens_source;       // server_usage | model_geometry | mixed | none
  std::vector<TtftBucket> ttft_by_image_size;  // buckets holding at least one request
};

VisionMetrics calculate_vision_metrics(const std::vector<RequestRecord>& records, const std::vector<VisionRequestInfo>& infos,
                                       double duration_s, const std::vector<double>& percentiles);

// "Vision (beyond vllm)" in vLLM's {:<40} {:<10} layout; nothing when no request carried an image.
void print_vision_block(std::ostream& out, const VisionMetrics& v);
// The keys added beside vLLM's in the result JSON (images_sent, image_throughput,
// mean_/median_/pNN_image_pixels, _request_bytes, _vision_tokens, vision_tokens_source, ...).
void add_vision_keys(nlohmann::ordered_json& j, const VisionMetrics& v);

}  // namespace encbench::client
