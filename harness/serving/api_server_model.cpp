#include "harness/serving/api_server_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/core/error.hpp"
#include "harness/core/named_json.hpp"
#include "harness/core/result_json.hpp"

namespace encbench::serving {
namespace {

namespace fs = std::filesystem;

struct ApiServerField {
  ApiServerCoefficient ApiServerModel::*member;
  double min, max;
  const char* unit;
};

// Ranges wide enough for any CPU and any Python stack, tight enough that a typo (a cost in
// seconds, a negative) is refused: 10 s a request, 10 us a pixel, 10 ms a token.
const std::map<std::string, ApiServerField>& fields() {
  static const std::map<std::string, ApiServerField> table = {
      {"api_server_count", {&ApiServerModel::api_server_count, 0, kMaxApiServers, "processes (an integer)"}},
      {"request_ms", {&ApiServerModel::request_ms, 0, 1e4, "ms"}},
      {"decode_ns_per_pixel", {&ApiServerModel::decode_ns_per_pixel, 0, 1e4, "ns"}},
      {"process_ns_per_pixel", {&ApiServerModel::process_ns_per_pixel, 0, 1e4, "ns"}},
      {"prompt_us_per_token", {&ApiServerModel::prompt_us_per_token, 0, 1e4, "us"}},
      {"hash_ns_per_pixel", {&ApiServerModel::hash_ns_per_pixel, 0, 1e4, "ns"}},
      {"parse_ns_per_pixel", {&ApiServerModel::parse_ns_per_pixel, 0, 1e4, "ns"}},
      {"media_loading_threads", {&ApiServerModel::media_loading_threads, 0, 1024, "threads (an integer)"}},
      {"processor_cache_gib", {&ApiServerModel::processor_cache_gib, 0, 1024, "GiB"}},
      {"processor_bytes_per_element", {&ApiServerModel::processor_bytes_per_element, 0, 8, "bytes"}},
  };
  return table;
}

std::string known_keys() {
  std::string keys = "schema, schema_version, name, description, process_ms_by_pixels";
  for (const auto& [name, field] : fields()) keys += ", " + name;
  return keys;
}

std::string range_of(const ApiServerField& f) {
  return "[" + std::to_string(static_cast<long long>(f.min)) + ", " + std::to_string(static_cast<long long>(f.max)) +
         "] " + f.unit;
}

void read_coefficient(ApiServerModel& model, const std::string& key, const nlohmann::json& value,
                      const std::string& origin) {
  const auto it = fields().find(key);
  require(it != fields().end(), origin + ": unknown API-server key \"" + key + "\" (known: " + known_keys() + ")");
  const ApiServerField& f = it->second;
  require(value.is_object() && value.contains("value") && value["value"].is_number(),
          origin + ": " + key + " must be {\"value\": number in " + range_of(f) + ", \"source\": \"...\"}");
  for (const auto& [inner, unused] : value.items())
    require(inner == "value" || inner == "source",
            origin + ": " + key + ": unknown key \"" + inner + "\" (known: value, source)");
  const double v = value["value"].get<double>();
  require(std::isfinite(v) && v >= f.min && v <= f.max,
          origin + ": " + key + " = " + value["value"].dump() + " is outside " + range_of(f));
  require((key != "api_server_count" && key != "media_loading_threads") || v == std::floor(v),
          origin + ": " + key + " must be an integer");
  const auto source = value.find("source");
  require(source != value.end() && source->is_string() && !source->get<std::string>().empty(),
          origin + ": " + key + " needs a \"source\" (vLLM's own timing, a measurement or an estimate)");
  (model.*f.member) = ApiServerCoefficient{v, source->get<std::string>()};
}

// {"points": [[pixels, ms], ...], "source": "..."}: pixels strictly increasing, ms never falling.
ProcessCurve read_curve(const nlohmann::json& value, const std::string& origin) {
  const std::string key = origin + ": process_ms_by_pixels";
  require(value.is_object() && value.contains("points") && value["points"].is_array() && value["points"].size() >= 2,
          key + " must be {\"points\": [[pixels, ms], ...] with two or more points, \"source\": \"...\"}");
  for (const auto& [inner, unused] : value.items())
    require(inner == "points" || inner == "source", key + ": unknown key \"" + inner + "\" (known: points, source)");
  ProcessCurve curve;
  for (std::size_t i = 0; i < value["points"].size(); ++i) {
    const nlohmann::json& p = value["points"][i];
    const std::string at = key + ".points[" + std::to_string(i) + "]";
    require(p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number(), at + " must be [pixels, ms]");
    const double pixels = p[0].get<double>(), ms = p[1].get<double>();
    require(std::isfinite(pixels) && pixels > 0 && pixels <= kMaxCurvePixels,
            at + ": pixels = " + p[0].dump() + " is outside (0, 1e9]");
    require(std::isfinite(ms) && ms >= 0 && ms <= kMaxCurveMs, at + ": ms = " + p[1].dump() + " is outside [0, 1e4]");
    if (!curve.points.empty()) {
      require(pixels > curve.points.back().first,
              at + ": pixels = " + p[0].dump() + " must be above the previous point's (the curve is by increasing size)");
      require(ms >= curve.points.back().second,
              at + ": ms = " + p[1].dump() + " is below the previous point's " + std::to_string(curve.points.back().second) +
                  " (accepted: [" + std::to_string(curve.points.back().second) +
                  ", 1e4]; a larger image cannot cost less: pool measured points that fall)");
    }
    curve.points.emplace_back(pixels, ms);
  }
  const auto source = value.find("source");
  require(source != value.end() && source->is_string() && !source->get<std::string>().empty(),
          key + " needs a \"source\" (the measurement, its model and host)");
  curve.source = source->get<std::string>();
  return curve;
}

}  // namespace

double ProcessCurve::ms(double pixels) const {
  if (points.empty()) return 0;
  if (pixels <= points.front().first) return points.front().second;
  std::size_t i = 1;
  while (i + 1 < points.size() && pixels > points[i].first) ++i;
  const auto& [x0, y0] = points[i - 1];
  const auto& [x1, y1] = points[i];
  return y0 + (y1 - y0) * (pixels - x0) / (x1 - x0);  // beyond the last point: its segment's slope
}

Nanos ApiServerModel::process_cost_ns(std::int64_t image_pixels) const {
  if (process_ms_by_pixels.enabled())
    return image_pixels > 0 ? static_cast<Nanos>(process_ms_by_pixels.ms(static_cast<double>(image_pixels)) * 1e6) : 0;
  return static_cast<Nanos>(static_cast<double>(image_pixels) * process_ns_per_pixel.value);
}

std::int64_t ApiServerModel::processor_cache_capacity_bytes() const {
  return static_cast<std::int64_t>(processor_cache_gib.value * 1073741824.0);  // vLLM: GiB_bytes * gb
}

Nanos ApiServerModel::decode_cost_ns(std::int64_t image_pixels) const {
  return static_cast<Nanos>(static_cast<double>(image_pixels) * decode_ns_per_pixel.value);
}

Nanos ApiServerModel::serial_cost_ns(const SerialWork& work) const {
  // Every pixel is hashed and parsed, hit or miss; only the missed ones pass the HF processor
  // (per pixel here, or by the curve per image below).
  double cached_per_pixel = hash_ns_per_pixel.value + parse_ns_per_pixel.value;
  double processed_per_pixel =
      cached_per_pixel + (process_ms_by_pixels.enabled() ? 0.0 : process_ns_per_pixel.value);
  if (!pooled_decode()) {
    cached_per_pixel += decode_ns_per_pixel.value;
    processed_per_pixel += decode_ns_per_pixel.value;
  }
  // One of the two terms is 0 for a one-image request: the sum is then exactly the other.
  const double pixels_ns = static_cast<double>(work.cached_pixels) * cached_per_pixel +
                           static_cast<double>(work.processed_pixels) * processed_per_pixel;
  double curve_ns = 0;
  if (process_ms_by_pixels.enabled()) {
    if (work.processed_images.empty()) curve_ns = static_cast<double>(process_cost_ns(work.processed_pixels));
    for (const std::int64_t pixels : work.processed_images) curve_ns += static_cast<double>(process_cost_ns(pixels));
  }
  const double ns = request_ms.value * 1e6 + pixels_ns + curve_ns +
                    static_cast<double>(work.prompt_tokens) * prompt_us_per_token.value * 1e3;
  return static_cast<Nanos>(ns);
}

Nanos ApiServerModel::request_cost_ns(std::int64_t image_pixels, std::int64_t prompt_tokens) const {
  return (pooled_decode() ? decode_cost_ns(image_pixels) : 0) +
         serial_cost_ns({.processed_pixels = image_pixels, .prompt_tokens = prompt_tokens});
}

ApiServerModel parse_api_server_model(const nlohmann::json& doc, const std::string& origin) {
  require(doc.is_object(), origin + ": an API-server model is a JSON object");
  ApiServerModel model;
  model.api_server_count = {1, "default: vLLM --api-server-count 1"};
  for (const auto& [key, value] : doc.items()) {
    if (key == "schema") {
      require(value == "encbench-api-server", origin + ": schema must be \"encbench-api-server\"");
    } else if (key == "schema_version") {
      require(value == 1, origin + ": schema_version must be 1");
    } else if (key == "name" || key == "description") {
      require(value.is_string(), origin + ": " + key + " must be a string");
      (key == "name" ? model.name : model.description) = value.get<std::string>();
    } else if (key == "process_ms_by_pixels") {
      model.process_ms_by_pixels = read_curve(value, origin);
    } else {
      read_coefficient(model, key, value, origin);
    }
  }
  require(!model.process_ms_by_pixels.enabled() || model.process_ns_per_pixel.value == 0,
          origin + ": process_ns_per_pixel must be 0 when process_ms_by_pixels is given (accepted: 0; the curve is the "
                   "processor's whole cost)");
  if (model.name.empty() || model.name == "none") model.name = "unnamed";
  return model;
}

nlohmann::json to_json(const ApiServerModel& model) {
  nlohmann::json j = {{"schema", "encbench-api-server"}, {"schema_version", 1}, {"name", model.name}};
  if (!model.description.empty()) j["description"] = model.description;
  for (const auto& [name, field] : fields())
    j[name] = {{"value", (model.*field.member).value}, {"source", (model.*field.member).source}};
  if (model.process_ms_by_pixels.enabled()) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& [pixels, ms] : model.process_ms_by_pixels.points) points.push_back({pixels, ms});
    j["process_ms_by_pixels"] = {{"points", points}, {"source", model.process_ms_by_pixels.source}};
  }
  return j;
}

ApiServerModel load_api_server_model(const std::string& name_or_path, const fs::path& scenarios_dir,
                                     const fs::path& fallback_scenarios_dir) {
  if (name_or_path == "none") return ApiServerModel{};
  require(!name_or_path.empty(), "API-server model: empty name (none, a name in scenarios/serving/api-server or a path)");
  fs::path dir = scenarios_dir / "serving" / "api-server";
  // A copied scenarios folder without api-server/ (fit-seeds.py's per-evaluation profiles) falls
  // back to the shipped one.
  if (!names_a_path(name_or_path) && !fallback_scenarios_dir.empty() && !fs::is_regular_file(dir / (name_or_path + ".json")) &&
      fs::is_regular_file(fallback_scenarios_dir / "serving" / "api-server" / (name_or_path + ".json")))
    dir = fallback_scenarios_dir / "serving" / "api-server";
  const fs::path path = resolve_named_json(name_or_path, dir, "API-server model", {"none"});
  const nlohmann::json doc = read_model_json(path, "API-server model");
  ApiServerModel model = parse_api_server_model(doc, path.string());
  model.path = path;
  return model;
}

void set_api_server_count(ApiServerModel& model, int count, const std::string& origin) {
  require(count >= 0 && count <= kMaxApiServers,
          origin + " must be in [0, " + std::to_string(kMaxApiServers) + "], got " + std::to_string(count));
  model.api_server_count = {static_cast<double>(count), origin + " " + std::to_string(count)};
}

ApiServerQueue::ApiServerQueue(int processes) : free_at_(static_cast<std::size_t>(std::max(processes, 1)), 0) {}

ApiServerQueue::Start ApiServerQueue::next(Nanos arrival) const {
  // The process that frees first; ties to the lowest index, so the choice is deterministic.
  const auto first = std::min_element(free_at_.begin(), free_at_.end());
  return {static_cast<std::size_t>(first - free_at_.begin()), std::max(*first, arrival)};
}

void ApiServerQueue::occupy(std::size_t process, Nanos end) { free_at_[process] = end; }

Nanos ApiServerQueue::admit(Nanos arrival, Nanos cost) {
  const Start s = next(arrival);
  const Nanos end = s.start_ns + std::max<Nanos>(cost, 0);
  occupy(s.process, end);
  return end;
}

}  // namespace encbench::serving
