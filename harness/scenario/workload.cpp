#include "harness/scenario/workload.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <set>

#include "harness/core/error.hpp"
#include "harness/core/json_read.hpp"
#include "harness/core/mix64.hpp"
#include "harness/core/named_json.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::scenario {
namespace {

// A uniform in (0, 1) from (seed, request, stream): independent draws per quantity.
double uniform(std::uint64_t seed, std::uint64_t index, std::uint64_t stream) {
  const std::uint64_t bits = mix64(mix64(seed ^ mix64(index)) ^ (stream * 0x2545f4914f6cdd1dull));
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

double standard_normal(std::uint64_t seed, std::uint64_t index, std::uint64_t stream) {
  // Box-Muller on two independent uniforms (no library distribution: identical on every stdlib).
  const double u1 = uniform(seed, index, stream), u2 = uniform(seed, index, stream + 1000);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double draw(const ScalarDistribution& d, std::uint64_t seed, std::uint64_t index, std::uint64_t stream) {
  if (d.kind == ScalarDistribution::Kind::empirical) {
    const auto pick = static_cast<std::size_t>(uniform(seed, index, stream) * static_cast<double>(d.values.size()));
    return d.values[std::min(pick, d.values.size() - 1)];
  }
  // mean = exp(mu + sigma^2 / 2)
  const double mu = std::log(d.mean) - 0.5 * d.sigma * d.sigma;
  return std::clamp(std::exp(mu + d.sigma * standard_normal(seed, index, stream)), d.min, d.max);
}

template <typename T>
T get(const nlohmann::json& obj, const char* key, const std::string& where) {
  require(obj.is_object(), where + " must be an object");
  const auto it = obj.find(key);
  require(it != obj.end(), where + ": missing \"" + key + "\"");
  std::optional<T> value = json_read::as<T>(*it);
  require(value.has_value(), where + ": \"" + key + "\" has the wrong type or range (" + it->dump() + ")");
  return std::move(*value);
}

// An optional key: its value, or `fallback` when absent.
template <typename T>
T get_or(const nlohmann::json& obj, const char* key, T fallback, const std::string& where) {
  return obj.contains(key) ? get<T>(obj, key, where) : fallback;
}

// Draws become token and pixel counts (int64): far below 2^63 and any real request.
constexpr double kLargestDraw = 1e15;

ScalarDistribution parse_distribution(const nlohmann::json& j, const std::string& where) {
  require(j.is_object(), where + " must be an object with a \"distribution\"");
  ScalarDistribution d;
  const std::string kind = get<std::string>(j, "distribution", where);
  d.source = get_or<std::string>(j, "source", "", where);
  if (kind == "empirical") {
    d.kind = ScalarDistribution::Kind::empirical;
    d.values = get<std::vector<double>>(j, "values", where);
    require(!d.values.empty(), where + ": an empirical distribution needs at least one value (it has no mass)");
    for (double v : d.values)
      require(std::isfinite(v) && v > 0 && v <= kLargestDraw, where + ": values must be in (0, 1e15]");
    return d;
  }
  require(kind == "lognormal", where + ": distribution must be lognormal or empirical, got '" + kind + "'");
  d.mean = get<double>(j, "mean", where);
  d.sigma = get<double>(j, "sigma", where);
  d.min = j.contains("min") ? get<double>(j, "min", where) : 0.0;
  d.max = j.contains("max") ? get<double>(j, "max", where) : kLargestDraw;
  require(std::isfinite(d.mean) && d.mean > 0, where + ": mean must be positive");
  require(std::isfinite(d.sigma) && d.sigma >= 0 && d.sigma <= 5, where + ": sigma must be in [0, 5]");
  require(d.min >= 0 && d.max >= d.min && d.max > 0 && d.max <= kLargestDraw,
          where + ": need 0 <= min <= max, 0 < max <= 1e15");
  return d;
}

nlohmann::json distribution_json(const ScalarDistribution& d) {
  if (d.kind == ScalarDistribution::Kind::empirical)
    return {{"distribution", "empirical"}, {"values", d.values}, {"source", d.source}};
  return {{"distribution", "lognormal"}, {"mean", d.mean}, {"sigma", d.sigma}, {"min", d.min}, {"max", d.max},
          {"source", d.source}};
}

void parse_output(const nlohmann::json& j, WorkloadModel& m, const std::string& where) {
  require(j.is_object(), where + " must be an object");
  m.max_output_tokens = get<std::int64_t>(j, "max_tokens", where);
  require(m.max_output_tokens >= 1 && m.max_output_tokens <= 1'000'000, where + ": max_tokens must be in [1, 1e6]");
  m.early_stop_probability = j.contains("early_stop_probability") ? get<double>(j, "early_stop_probability", where) : 0;
  require(m.early_stop_probability >= 0 && m.early_stop_probability <= 1,
          where + ": early_stop_probability must be in [0, 1]");
}

// Above any published benchmark dataset; a typo (a byte count) is refused.
constexpr std::int64_t kMaxDatasetRows = 1'000'000'000;

// {"value": rows, "source": "..."}: the rows the benchmark's client samples from.
void parse_dataset_rows(const nlohmann::json& j, WorkloadModel& m, const std::string& where) {
  const std::string form = " must be {\"value\": rows in [1, 1e9], \"source\": \"...\"}";
  require(j.is_object() && j.contains("value") && j.contains("source"), where + form);
  for (const auto& [key, unused] : j.items())
    require(key == "value" || key == "source", where + ": unknown key \"" + key + "\" (known: value, source)");
  const std::optional<std::int64_t> rows = json_read::as<std::int64_t>(j["value"]);
  require(rows.has_value() && *rows >= 1 && *rows <= kMaxDatasetRows,
          where + " = " + j["value"].dump() + " is outside [1, 1e9] rows");
  const std::optional<std::string> source = json_read::as<std::string>(j["source"]);
  require(source.has_value() && !source->empty(), where + " needs a non-empty \"source\" (where the row count comes from)");
  m.dataset_rows = *rows;
  m.dataset_rows_source = *source;
}

}  // namespace

WorkloadModel parse_workload(const nlohmann::json& doc, const std::string& origin) {
  require(doc.is_object(), origin + ": a workload is a JSON object");
  static const std::set<std::string> known = {"schema", "schema_version", "name", "derivation", "image_pixels",
                                              "aspect_ratios", "image_sizes", "text_tokens", "output",
                                              "template_tokens", "images_per_request", "sources", "dataset_rows"};
  for (const auto& [key, value] : doc.items())
    require(known.contains(key), origin + ": unknown key \"" + key +
                                     "\" (known: image_pixels, aspect_ratios, image_sizes, text_tokens, output, "
                                     "template_tokens, images_per_request, dataset_rows, name, derivation)");
  if (doc.contains("schema"))
    require(doc["schema"] == "encbench-workload", origin + ": schema must be \"encbench-workload\"");
  WorkloadModel m;
  m.name = get_or<std::string>(doc, "name", "", origin);
  m.derivation = get_or<std::string>(doc, "derivation", "", origin);
  if (doc.contains("image_sizes")) {
    m.image_sizes = get<std::vector<std::pair<std::int64_t, std::int64_t>>>(doc, "image_sizes", origin);
    require(!m.image_sizes.empty(), origin + ": image_sizes is empty (no mass)");
    for (const auto& [w, h] : m.image_sizes)
      require(w >= 1 && h >= 1 && w <= 1'000'000 && h <= 1'000'000, origin + ": image_sizes need sides in [1, 1e6]");
  } else {
    m.image_pixels = parse_distribution(doc.value("image_pixels", nlohmann::json()), origin + ": image_pixels");
    if (doc.contains("aspect_ratios")) {
      m.aspect_ratios = get<std::vector<std::pair<double, double>>>(doc, "aspect_ratios", origin);
      double mass = 0;
      for (const auto& [ratio, weight] : m.aspect_ratios) {
        require(ratio > 0.005 && ratio < 200 && weight >= 0, origin + ": aspect_ratios need ratio in (0.005, 200), weight >= 0");
        mass += weight;
      }
      require(mass > 0, origin + ": aspect_ratios have no mass");
    }
  }
  m.text_tokens = parse_distribution(doc.value("text_tokens", nlohmann::json()), origin + ": text_tokens");
  parse_output(doc.value("output", nlohmann::json()), m, origin + ": output");
  m.template_tokens = doc.value("template_tokens", nlohmann::json(0)).is_object()
                          ? get<std::int64_t>(doc["template_tokens"], "value", origin + ": template_tokens")
                          : get_or<std::int64_t>(doc, "template_tokens", 0, origin);
  require(m.template_tokens >= 0 && m.template_tokens <= 100000, origin + ": template_tokens must be in [0, 1e5]");
  m.images_per_request = get_or<int>(doc, "images_per_request", 1, origin);
  require(m.images_per_request == 0 || m.images_per_request == 1,
          origin + ": images_per_request must be 0 or 1 (vLLM's vision-arena client sends one)");
  if (doc.contains("dataset_rows")) parse_dataset_rows(doc["dataset_rows"], m, origin + ": dataset_rows");
  return m;
}

WorkloadModel load_workload(const std::filesystem::path& file) {
  require(std::filesystem::is_regular_file(file), "workload file not found: " + file.string());
  const nlohmann::json doc = read_model_json(file, "workload");
  WorkloadModel m = parse_workload(doc, file.string());
  m.path = file;
  if (m.name.empty()) m.name = file.stem().string();
  return m;
}

nlohmann::json to_json(const WorkloadModel& m) {
  nlohmann::json j = {{"schema", "encbench-workload"}, {"schema_version", 1}, {"name", m.name},
                      {"derivation", m.derivation}, {"text_tokens", distribution_json(m.text_tokens)},
                      {"output", {{"max_tokens", m.max_output_tokens}, {"early_stop_probability", m.early_stop_probability}}},
                      {"template_tokens", m.template_tokens}, {"images_per_request", m.images_per_request}};
  if (!m.image_sizes.empty()) {
    j["image_sizes"] = m.image_sizes;
  } else {
    j["image_pixels"] = distribution_json(m.image_pixels);
    j["aspect_ratios"] = m.aspect_ratios;
  }
  if (m.dataset_rows > 0) j["dataset_rows"] = {{"value", m.dataset_rows}, {"source", m.dataset_rows_source}};
  return j;
}

double nominal_mean(const ScalarDistribution& d) {
  if (d.kind == ScalarDistribution::Kind::lognormal) return d.mean;
  double sum = 0;
  for (double v : d.values) sum += v;
  return d.values.empty() ? 0 : sum / static_cast<double>(d.values.size());
}

namespace {

// A row's content identity: distinct per (seed, row), never 0 (0 means "unique, never a hit").
std::uint64_t row_hash(std::uint64_t seed, std::int64_t row) {
  const std::uint64_t h = mix64(mix64(seed ^ 0x6a09e667f3bcc909ull) ^ static_cast<std::uint64_t>(row));
  return h == 0 ? 1 : h;
}

// A row's image identity: distinct per (seed, row), drawn from another stream than row_hash's
// (the image is one part of the prompt, not the prompt), never 0.
std::uint64_t row_image_hash(std::uint64_t seed, std::int64_t row) {
  const std::uint64_t h = mix64(mix64(seed ^ 0xbb67ae8584caa73bull) ^ static_cast<std::uint64_t>(row));
  return h == 0 ? 1 : h;
}

// Its output: the cap, or with early_stop_probability an EOS uniformly in [1, cap).
std::int64_t draw_output_tokens(const WorkloadModel& m, std::uint64_t seed, std::size_t i) {
  if (m.max_output_tokens > 1 && uniform(seed, i, 7) < m.early_stop_probability)
    return 1 + static_cast<std::int64_t>(uniform(seed, i, 9) * static_cast<double>(m.max_output_tokens - 1));
  return m.max_output_tokens;
}

// Row i's image size: from the empirical sizes, or pixels x aspect ratio.
void draw_image(const WorkloadModel& m, std::uint64_t seed, std::size_t i, double aspect_mass, WorkloadRequest& r) {
  if (!m.image_sizes.empty()) {
    const auto pick = static_cast<std::size_t>(uniform(seed, i, 11) * static_cast<double>(m.image_sizes.size()));
    const auto& [w, h] = m.image_sizes[std::min(pick, m.image_sizes.size() - 1)];
    r.image_width = w;
    r.image_height = h;
    return;
  }
  const double pixels = draw(m.image_pixels, seed, i, 3);
  double u = uniform(seed, i, 5) * aspect_mass, ratio = m.aspect_ratios.back().first;
  for (const auto& [candidate, weight] : m.aspect_ratios) {
    if (u < weight) {
      ratio = candidate;
      break;
    }
    u -= weight;
  }
  r.image_width = std::max<std::int64_t>(1, std::llround(std::sqrt(pixels * ratio)));
  r.image_height = std::max<std::int64_t>(1, std::llround(std::sqrt(pixels / ratio)));
}

// Every request's output length from candidate `k` (0 = the free draw, with the workload's seed).
std::vector<std::int64_t> candidate_output_lengths(const WorkloadModel& m, std::size_t count, std::uint64_t seed,
                                                   std::uint64_t k) {
  const std::uint64_t s = k == 0 ? seed : mix64(seed ^ mix64(k ^ 0xa54ff53a5f1d36f1ull));
  std::vector<std::int64_t> lengths(count);
  for (std::size_t i = 0; i < count; ++i) lengths[i] = draw_output_tokens(m, s, i);
  return lengths;
}

// A total no candidate comes near (one far from the workload's own early-stop share): requests in a
// seeded order stop early where the total is too high (each at a length drawn as the workload draws
// early stops, the last one cut to meet it) or run to the cap where it is too low, until it is met
// (the caller checked that [count, count x cap] holds it).
void repair_output_total(std::vector<std::int64_t>& lengths, const WorkloadModel& m, std::uint64_t seed,
                         std::int64_t target) {
  std::int64_t total = 0;
  for (std::int64_t l : lengths) total += l;
  std::vector<std::pair<double, std::size_t>> order(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) order[i] = {uniform(seed, i, 19), i};
  std::sort(order.begin(), order.end());
  const std::int64_t cap = m.max_output_tokens;
  for (const auto& [key, i] : order) {
    if (total == target) break;
    std::int64_t& l = lengths[i];
    const std::int64_t before = l;
    if (total > target) {
      const auto early = 1 + static_cast<std::int64_t>(uniform(seed, i, 21) * static_cast<double>(cap - 1));
      l = std::max({std::int64_t{1}, std::min(l, early), l - (total - target)});
    } else {
      l = std::min(cap, l + (target - total));
    }
    total += l - before;
  }
  // Still too high (a total below what early stops at the workload's lengths give): cut further,
  // down to one token a request at the least.
  for (const auto& [key, i] : order) {
    if (total <= target) break;
    const std::int64_t cut = std::min(lengths[i] - 1, total - target);
    lengths[i] -= cut;
    total -= cut;
  }
}

void condition_output_lengths(std::vector<WorkloadRequest>& out, const WorkloadModel& m, std::uint64_t seed,
                              std::int64_t target) {
  const auto count = static_cast<std::int64_t>(out.size());
  require(target >= count && target <= count * m.max_output_tokens,
          "sample output tokens " + std::to_string(target) + " cannot be generated by " + std::to_string(count) +
              " requests of 1.." + std::to_string(m.max_output_tokens) + " tokens each (accepted: [" +
              std::to_string(count) + ", " + std::to_string(count * m.max_output_tokens) + "])");
  // At most ~4 million lengths drawn: 1024 candidates up to 4,000 requests, fewer past them (a
  // large sample's free draw is near its total anyway: the sum of many lengths).
  const std::uint64_t candidates = std::clamp<std::uint64_t>(4'000'000 / out.size(), 1, 1024);
  const auto tolerance = static_cast<std::int64_t>(0.001 * static_cast<double>(target));
  std::vector<std::int64_t> best;
  std::int64_t best_miss = std::numeric_limits<std::int64_t>::max();
  for (std::uint64_t k = 0; k < candidates && best_miss > tolerance; ++k) {
    std::vector<std::int64_t> lengths = candidate_output_lengths(m, out.size(), seed, k);
    std::int64_t total = 0;
    for (std::int64_t l : lengths) total += l;
    if (std::llabs(total - target) < best_miss) {
      best_miss = std::llabs(total - target);
      best = std::move(lengths);
    }
  }
  if (best_miss > tolerance) repair_output_total(best, m, seed, target);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].output_tokens = best[i];
}

// Scales every row's text by one factor so that the sent total (rows times how often each is
// sent) meets `target`: floors, then one more token to the rows with the largest remainders that
// the rest still allows.
void condition_text_tokens(std::vector<WorkloadRequest>& out, std::size_t rows, std::int64_t target) {
  const auto count = static_cast<std::int64_t>(out.size());
  require(target >= count, "sample text tokens " + std::to_string(target) + " is below one token for each of the " +
                               std::to_string(count) + " requests (accepted: at least " + std::to_string(count) + ")");
  std::vector<std::int64_t> sent(rows, 0);  // how often each row is sent
  for (const WorkloadRequest& r : out) ++sent[static_cast<std::size_t>(r.row)];
  double drawn = 0;
  for (std::size_t i = 0; i < rows; ++i) drawn += static_cast<double>(out[i].text_tokens * sent[i]);
  const double factor = static_cast<double>(target) / drawn;
  std::vector<std::pair<double, std::size_t>> remainders(rows);
  std::int64_t left = target;
  for (std::size_t i = 0; i < rows; ++i) {
    const double scaled = static_cast<double>(out[i].text_tokens) * factor;
    out[i].text_tokens = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(scaled)));
    remainders[i] = {scaled - std::floor(scaled), i};
    left -= out[i].text_tokens * sent[i];
  }
  // A row floored up to one token can overshoot; take it back from the longest rows.
  std::vector<std::size_t> longest(rows);
  for (std::size_t i = 0; i < rows; ++i) longest[i] = i;
  std::sort(longest.begin(), longest.end(),
            [&](std::size_t a, std::size_t b) { return out[a].text_tokens > out[b].text_tokens; });
  for (std::size_t i : longest) {
    if (left >= 0) break;
    const std::int64_t spare = std::min(out[i].text_tokens - 1, (-left + sent[i] - 1) / sent[i]);
    out[i].text_tokens -= spare;
    left += spare * sent[i];
  }
  std::sort(remainders.begin(), remainders.end(), std::greater<>());
  for (const auto& [remainder, i] : remainders) {
    if (left <= 0) break;
    if (sent[i] <= left) {
      ++out[i].text_tokens;
      left -= sent[i];
    }
  }
  for (std::size_t i = rows; i < out.size(); ++i) out[i].text_tokens = out[static_cast<std::size_t>(out[i].row)].text_tokens;
}

}  // namespace

std::vector<WorkloadRequest> sample_workload(const WorkloadModel& m, std::size_t count, std::uint64_t seed,
                                             const SampleTotals& totals) {
  // Draw streams: 1 text, 3 pixels, 5 aspect, 7 output decision, 9 output length, 11 image size,
  // 13 the row a duplicate repeats.
  double aspect_mass = 0;
  for (const auto& [ratio, weight] : m.aspect_ratios) aspect_mass += weight;
  const std::size_t distinct =
      m.dataset_rows > 0 ? std::min(count, static_cast<std::size_t>(m.dataset_rows)) : count;
  std::vector<WorkloadRequest> out(count);
  for (std::size_t i = 0; i < distinct; ++i) {
    WorkloadRequest& r = out[i];
    r.text_tokens = std::max<std::int64_t>(1, std::llround(draw(m.text_tokens, seed, i, 1)));
    if (m.images_per_request > 0) draw_image(m, seed, i, aspect_mass, r);
    r.output_tokens = draw_output_tokens(m, seed, i);
    r.row = static_cast<std::int64_t>(i);
    r.content_hash = row_hash(seed, r.row);
    if (r.image_width > 0) r.image_hash = row_image_hash(seed, r.row);
  }
  // vLLM's maybe_oversample_requests: random.choices(sampled rows, k = count - rows), appended.
  for (std::size_t i = distinct; i < count; ++i) {
    const auto pick = std::min(static_cast<std::size_t>(uniform(seed, i, 13) * static_cast<double>(distinct)), distinct - 1);
    out[i] = out[pick];
    out[i].output_tokens = draw_output_tokens(m, seed, i);
  }
  if (!totals.applies_to(count)) return out;
  if (totals.output_tokens > 0) condition_output_lengths(out, m, seed, totals.output_tokens);
  if (totals.text_tokens > 0) condition_text_tokens(out, distinct, totals.text_tokens);
  return out;
}

std::int64_t run_output_tokens(const WorkloadModel& m, std::int64_t sent, const RunOutputNoise& noise,
                               std::uint64_t run_seed, std::size_t index) {
  if (!noise.any()) return sent;
  // The run's own seed, mixed so that run seed s never repeats the workload's seed-s draws.
  const std::uint64_t seed = mix64(run_seed ^ 0x3c6ef372fe94f82bull);
  // Stream 15: whether this request's length is drawn afresh in this run (uniform is in (0, 1), so
  // share 1 redraws every request).
  if (noise.redraw_share > 0 && uniform(seed, index, 15) < noise.redraw_share)
    return draw_output_tokens(m, seed, index);
  if (noise.early_stop_cv <= 0 || sent >= m.max_output_tokens) return sent;
  // Stream 17: the EOS moves by a mean-1 lognormal factor (the parametrisation of step_time_cv);
  // past the cap the server stops it there (finish_reason "length").
  const double sigma = std::sqrt(std::log1p(noise.early_stop_cv * noise.early_stop_cv));
  const double factor = std::exp(sigma * standard_normal(seed, index, 17) - 0.5 * sigma * sigma);
  return std::clamp<std::int64_t>(std::llround(static_cast<double>(sent) * factor), 1, m.max_output_tokens);
}

void redraw_output_lengths(std::vector<WorkloadRequest>& requests, const WorkloadModel& m, const RunOutputNoise& noise,
                           std::uint64_t run_seed) {
  for (std::size_t i = 0; i < requests.size(); ++i)
    requests[i].output_tokens = run_output_tokens(m, requests[i].output_tokens, noise, run_seed, i);
}

}  // namespace encbench::scenario
