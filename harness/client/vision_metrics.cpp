#include "harness/client/vision_metrics.hpp"

#include <algorithm>
#include <cstdio>

#include "harness/client/metrics.hpp"
#include "harness/core/stats.hpp"

namespace encbench::client {

namespace {

ValueSummary summarize(std::vector<double> values, const std::vector<double>& percentiles) {
  ValueSummary s;
  s.count = values.size();
  if (values.empty()) {
    for (double p : percentiles) s.percentiles.emplace_back(p, 0.0);
    return s;
  }
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  s.median = stats::percentile_sorted(values, 50);
  for (double p : percentiles) s.percentiles.emplace_back(p, stats::percentile_sorted(values, p));
  return s;
}

struct BucketBound {
  const char* label;
  std::int64_t min_pixels, max_pixels;
};
// Megapixel buckets: thumbnails, phone-screen crops, photos, large scans.
constexpr BucketBound kBuckets[] = {{"< 0.25 MP", 1, 250000},
                                    {"0.25-1 MP", 250000, 1000000},
                                    {"1-4 MP", 1000000, 4000000},
                                    {">= 4 MP", 4000000, 0}};

std::vector<TtftBucket> ttft_buckets(const std::vector<RequestRecord>& records, const std::vector<VisionRequestInfo>& infos,
                                     const std::vector<double>& percentiles) {
  std::vector<std::vector<double>> ttfts(std::size(kBuckets) + 1);  // [0]: no image
  for (const auto& r : records) {
    if (!r.success || r.index >= infos.size() || r.first_choices_ns == 0) continue;
    const VisionRequestInfo& info = infos[r.index];
    const double ttft_ms = static_cast<double>(r.first_choices_ns - r.dispatch_ns) / 1e6;
    if (info.image_count == 0) {
      ttfts[0].push_back(ttft_ms);
      continue;
    }
    for (std::size_t b = 0; b < std::size(kBuckets); ++b)
      if (info.image_pixels >= kBuckets[b].min_pixels && (kBuckets[b].max_pixels == 0 || info.image_pixels < kBuckets[b].max_pixels))
        ttfts[b + 1].push_back(ttft_ms);
  }
  std::vector<TtftBucket> out;
  for (std::size_t b = 0; b < ttfts.size(); ++b) {
    if (ttfts[b].empty()) continue;
    TtftBucket bucket;
    bucket.label = b == 0 ? "no image" : kBuckets[b - 1].label;
    bucket.min_pixels = b == 0 ? 0 : kBuckets[b - 1].min_pixels;
    bucket.max_pixels = b == 0 ? 1 : kBuckets[b - 1].max_pixels;
    const ValueSummary s = summarize(ttfts[b], percentiles);
    bucket.count = s.count;
    bucket.mean_ttft_ms = s.mean;
    bucket.median_ttft_ms = s.median;
    bucket.percentiles_ttft_ms = s.percentiles;
    out.push_back(std::move(bucket));
  }
  return out;
}

}  // namespace

VisionMetrics calculate_vision_metrics(const std::vector<RequestRecord>& records, const std::vector<VisionRequestInfo>& infos,
                                       double duration_s, const std::vector<double>& percentiles) {
  VisionMetrics v;
  std::vector<double> pixels, bytes, tokens;
  for (const auto& r : records) {
    if (!r.dispatched || r.index >= infos.size()) continue;
    const VisionRequestInfo& info = infos[r.index];
    v.images_sent += static_cast<std::int64_t>(info.image_count);
    bytes.push_back(static_cast<double>(info.request_bytes));
    if (!r.success || info.image_count == 0) continue;
    v.images_completed += static_cast<std::int64_t>(info.image_count);
    if (info.image_pixels >= 0) pixels.push_back(static_cast<double>(info.image_pixels));
    if (r.usage_prompt_tokens >= 0 && info.text_tokens >= 0) {
      tokens.push_back(static_cast<double>(std::max<std::int64_t>(0, r.usage_prompt_tokens - info.text_tokens)));
      ++v.vision_tokens_from_usage;
    } else if (info.model_vision_tokens >= 0) {
      tokens.push_back(static_cast<double>(info.model_vision_tokens));
      ++v.vision_tokens_from_geometry;
    }
  }
  v.image_throughput = duration_s > 0 ? static_cast<double>(v.images_completed) / duration_s : 0;
  v.image_pixels = summarize(pixels, percentiles);
  v.request_bytes = summarize(bytes, percentiles);
  v.vision_tokens = summarize(tokens, percentiles);
  v.vision_tokens_source = v.vision_tokens_from_usage && v.vision_tokens_from_geometry ? "mixed"
                           : v.vision_tokens_from_usage                                 ? "server_usage"
                           : v.vision_tokens_from_geometry                              ? "model_geometry"
                                                                                        : "none";
  v.ttft_by_image_size = ttft_buckets(records, infos, percentiles);
  return v;
}

namespace {
std::string fmt(const char* f, const std::string& label, double value) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, label.c_str(), value);
  return buf;
}
// vLLM's section title: the text centred in 50 columns of `fill`.
std::string centered_title(const std::string& text, char fill) {
  const std::size_t pad = text.size() < 50 ? 50 - text.size() : 0;
  return std::string(pad / 2, fill) + text + std::string(pad - pad / 2, fill);
}
void summary_lines(std::ostream& out, const std::string& name, const ValueSummary& s) {
  out << fmt("%-40s %-10.2f", "Mean " + name + ":", s.mean) << "\n";
  out << fmt("%-40s %-10.2f", "Median " + name + ":", s.median) << "\n";
  for (const auto& [p, value] : s.percentiles) out << fmt("%-40s %-10.2f", "P" + percentile_label(p) + " " + name + ":", value) << "\n";
}
}  // namespace

void print_vision_block(std::ostream& out, const VisionMetrics& v) {
  if (v.images_sent == 0) return;
  out << centered_title(" Vision (beyond vllm) ", '=') << "\n";
  out << fmt("%-40s %-10.0f", "Images sent:", static_cast<double>(v.images_sent)) << "\n";
  out << fmt("%-40s %-10.2f", "Image throughput (images/s):", v.image_throughput) << "\n";
  summary_lines(out, "image pixels", v.image_pixels);
  summary_lines(out, "request bytes", v.request_bytes);
  const char* source = v.vision_tokens_source == "server_usage"     ? "server usage - text tokens"
                       : v.vision_tokens_source == "model_geometry" ? "model geometry"
                       : v.vision_tokens_source == "mixed"          ? "usage where reported, else geometry"
                                                                    : "unknown (no usage+tokenizer, no model geometry)";
  char line[200];
  std::snprintf(line, sizeof line, "%-40s %s", "Vision tokens from:", source);
  out << line << "\n";
  if (v.vision_tokens.count > 0) summary_lines(out, "vision tokens", v.vision_tokens);
  out << centered_title("TTFT by image size (pixels per request)", '-') << "\n";
  for (const TtftBucket& b : v.ttft_by_image_size) {
    const double p = b.percentiles_ttft_ms.empty() ? 0 : b.percentiles_ttft_ms.back().second;
    const std::string pl = b.percentiles_ttft_ms.empty() ? "99" : percentile_label(b.percentiles_ttft_ms.back().first);
    std::snprintf(line, sizeof line, "%-10s n %-6zu mean %8.2f  median %8.2f  P%s %8.2f ms", b.label.c_str(), b.count,
                  b.mean_ttft_ms, b.median_ttft_ms, pl.c_str(), p);
    out << line << "\n";
  }
  out << std::string(50, '=') << "\n";
}

void add_vision_keys(nlohmann::ordered_json& j, const VisionMetrics& v) {
  j["images_sent"] = v.images_sent;
  j["images_completed"] = v.images_completed;
  j["image_throughput"] = v.image_throughput;
  const auto summary = [&](const std::string& name, const ValueSummary& s) {
    j["mean_" + name] = s.mean;
    j["median_" + name] = s.median;
    for (const auto& [p, value] : s.percentiles) j["p" + percentile_label(p) + "_" + name] = value;
  };
  summary("image_pixels", v.image_pixels);
  summary("request_bytes", v.request_bytes);
  summary("vision_tokens", v.vision_tokens);
  j["vision_tokens_source"] = v.vision_tokens_source;
  j["vision_tokens_from_server_usage"] = v.vision_tokens_from_usage;
  j["vision_tokens_from_model_geometry"] = v.vision_tokens_from_geometry;
  nlohmann::ordered_json buckets = nlohmann::ordered_json::array();
  for (const TtftBucket& b : v.ttft_by_image_size) {
    nlohmann::ordered_json e{{"bucket", b.label}, {"min_pixels", b.min_pixels}, {"max_pixels", b.max_pixels},
                             {"count", b.count}, {"mean_ttft_ms", b.mean_ttft_ms}, {"median_ttft_ms", b.median_ttft_ms}};
    for (const auto& [p, value] : b.percentiles_ttft_ms) e["p" + percentile_label(p) + "_ttft_ms"] = value;
    buckets.push_back(std::move(e));
  }
  j["ttft_by_image_size"] = std::move(buckets);
}

}  // namespace encbench::client
