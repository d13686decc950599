#pragma once
// What a benchmark's requests look like, as a distribution file (scenarios/workloads/*.json,
// schema "encbench-workload"): image sizes, text prompt tokens, output lengths, chat-template
// tokens, each with its derivation. Two forms per quantity:
//   {"distribution": "lognormal", "mean": M, "sigma": S, "min": a, "max": b}  (clamped draws)
//   {"distribution": "empirical", "values": [...]}                          (uniform resampling)
// Image sizes are either "image_pixels" (lognormal or empirical pixel counts) with "aspect_ratios"
// ([[width/height, weight], ...]), or "image_sizes" ([[width, height], ...], empirical) as
// `encbench dataset stats` writes them from a user's own rows.
// Sampling is deterministic in (file, seed, request index): both arms of an A/B see the same
// requests, and a request's draws do not depend on how many requests were drawn.
// A dataset has a number of rows ("dataset_rows", with its source): vLLM's bench client sends each
// row once and, asked for more prompts than rows, appends duplicates of rows it already sent
// (maybe_oversample_requests: random.choices over the sampled rows, appended at the end, new
// request ids). sample_workload does the same: the first `rows` requests are distinct rows, each
// later one repeats a row drawn uniformly with replacement (same text, image and content hash).
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::scenario {

struct ScalarDistribution {
  enum class Kind { lognormal, empirical } kind = Kind::lognormal;
  double mean = 1, sigma = 0, min = 0, max = 1e15;  // lognormal: mean of the distribution itself
  std::vector<double> values;                        // empirical
  std::string source;
};

struct WorkloadModel {
  std::string name;
  std::filesystem::path path;
  std::string derivation;
  ScalarDistribution image_pixels;                     // used when image_sizes is empty
  std::vector<std::pair<double, double>> aspect_ratios{{4.0 / 3.0, 1.0}};  // (w/h, weight)
  std::vector<std::pair<std::int64_t, std::int64_t>> image_sizes;          // (w, h), empirical
  ScalarDistribution text_tokens;
  std::int64_t max_output_tokens = 128;                // max_completion_tokens sent
  double early_stop_probability = 0;                   // EOS before the cap, length uniform in [1, cap)
  std::int64_t template_tokens = 0;                    // chat template + vision start/end
  int images_per_request = 1;
  // Rows of the dataset the client samples from; 0 = unbounded (every request a distinct row).
  std::int64_t dataset_rows = 0;
  std::string dataset_rows_source;
};

struct WorkloadRequest {
  std::int64_t text_tokens = 0;
  std::int64_t image_width = 0, image_height = 0;  // 0: no image
  std::int64_t output_tokens = 0;                 // generated before EOS or the cap
  // The row it sends and that row's content identity (non-zero, distinct per row within a seed):
  // a duplicate shares its row's text, image and hash (serving::SchedRequest::content_hash).
  std::int64_t row = 0;
  std::uint64_t content_hash = 0;
  // Its row's image identity (serving::SchedImage::hash, vLLM's mm_hash): non-zero and
  // distinct per row within a seed when it has an image (each row its own image), 0 without one.
  std::uint64_t image_hash = 0;
};

// Throws InvalidInput naming the file and key (unknown key, no mass, bad range).
WorkloadModel load_workload(const std::filesystem::path& file);
WorkloadModel parse_workload(const nlohmann::json& doc, const std::string& origin);
nlohmann::json to_json(const WorkloadModel& model);

// What is known of the one sample a published run sent, beyond its size: vLLM bench prints the
// sample's "Total input tokens" (its prompts' text tokens, counted by the client) and "Total
// generated tokens". A benchmark of 10 rows is one draw of 10, not the dataset's mean: #5810's ten
// prompts hold 7,191 text tokens where ten draws of vision-arena's distribution average ~670. The
// totals describe a sample of `requests` requests and condition only a sample of that size; 0 = not
// known (the draws stand).
struct SampleTotals {
  std::int64_t requests = 0;
  std::int64_t text_tokens = 0;
  std::int64_t output_tokens = 0;
  bool any() const { return text_tokens > 0 || output_tokens > 0; }
  bool applies_to(std::size_t count) const { return any() && requests == static_cast<std::int64_t>(count); }
};

// `count` requests: min(count, dataset_rows) distinct rows, then (count > dataset_rows > 0) the
// duplicates vLLM's client appends. A duplicate's output length is drawn afresh (its own index):
// vLLM samples each request's tokens (the model's generation_config), so the same prompt may stop
// at another length.
// With known totals for `count` requests (totals.applies_to(count)) the draws are conditioned on them (a total counts every request sent,
// duplicates included, as the client does):
//   text    every row's draw scaled by one factor, rounded so the total is met (exactly unless
//           duplicates' multiplicities leave a remainder smaller than the largest of them);
//   output  of up to 1024 candidate draws of all lengths (fewer past 4,000 requests, at most ~4
//           million lengths drawn; the first candidate is the free draw), the first
//           within 0.1 % of the total, else the nearest: lengths stay the workload's own mix of
//           capped and early-stopped requests, only how many stop early follows the total. A
//           total none comes within 0.1 % of is then met exactly: requests in a seeded order
//           stop early (at lengths drawn as the workload's early stops) or run to the cap.
// Throws InvalidInput when a total cannot be met: text below one token per request, output
// outside [count, count x max_tokens].
std::vector<WorkloadRequest> sample_workload(const WorkloadModel& model, std::size_t count, std::uint64_t seed,
                                             const SampleTotals& totals = {});

// Run-to-run noise from vLLM's sampling: a real server samples each request's
// tokens (the model's generation_config applies by default), so two runs of the same prompts stop
// at EOS in other places. Two forms, each declared in the serving model:
//   redraw_share   a share of the requests, chosen per request and run, draws its length afresh
//                  from the workload's output distribution (the draw sample_workload makes);
//   early_stop_cv  each request the seed stopped before the cap stops, in each run, at its length
//                  times a mean-1 lognormal factor of this coefficient of variation (rounded, kept
//                  in [1, cap]); one that reached the cap keeps it.
struct RunOutputNoise {
  double redraw_share = 0;
  double early_stop_cv = 0;
  bool any() const { return redraw_share > 0 || early_stop_cv > 0; }
};
// One run's output length of request `index`, sent with `sent` tokens by the seed's draw; seeded
// by `run_seed` (one per arm of a seed). Deterministic in (model, noise, run_seed, index); no
// noise returns `sent`.
std::int64_t run_output_tokens(const WorkloadModel& model, std::int64_t sent, const RunOutputNoise& noise,
                               std::uint64_t run_seed, std::size_t index);
// The same for every request (index = position in send order); nothing but output_tokens changes.
void redraw_output_lengths(std::vector<WorkloadRequest>& requests, const WorkloadModel& model,
                           const RunOutputNoise& noise, std::uint64_t run_seed);

// Mean of the distribution (lognormal: its mean after clamping is not computed; the parameter).
double nominal_mean(const ScalarDistribution& d);

}  // namespace encbench::scenario
