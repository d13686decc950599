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
      {"media_loading_threads", {&ApiServerModel::media_loading_threads, 0, 1024, "threads (an integer)"}},
      {"processor_cache_gib", {&ApiServerModel::processor_cache_gib, 0, 1024, "GiB"}},
      {"processor_bytes_per_element", {&ApiServerModel::processor_bytes_per_element, 0, 8, "bytes"}},
  };
  return table;
}

std::string known_keys() {
  std::string keys = "schema, schema_version, name, description";
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

}  // namespace

std::int64_t ApiServerModel::processor_cache_capacity_bytes() const {
  return static_cast<std::int64_t>(processor_cache_gib.value * 1073741824.0);  // vLLM: GiB_bytes * gb
}

Nanos ApiServerModel::decode_cost_ns(std::int64_t image_pixels) const {
  return static_cast<Nanos>(static_cast<double>(image_pixels) * decode_ns_per_pixel.value);
}

Nanos ApiServerModel::serial_cost_ns(const SerialWork& work) const {
  double cached_per_pixel = hash_ns_per_pixel.value;
  double processed_per_pixel = hash_ns_per_pixel.value + process_ns_per_pixel.value;
  if (!pooled_decode()) {
    cached_per_pixel += decode_ns_per_pixel.value;
    processed_per_pixel += decode_ns_per_pixel.value;
  }
  // One of the two terms is 0 for a one-image request: the sum is then exactly the other.
  const double pixels_ns = static_cast<double>(work.cached_pixels) * cached_per_pixel +
                           static_cast<double>(work.processed_pixels) * processed_per_pixel;
  const double ns = request_ms.value * 1e6 + pixels_ns +
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
    } else {
      read_coefficient(model, key, value, origin);
    }
  }
  if (model.name.empty() || model.name == "none") model.name = "unnamed";
  return model;
}

nlohmann::json to_json(const ApiServerModel& model) {
  nlohmann::json j = {{"schema", "encbench-api-server"}, {"schema_version", 1}, {"name", model.name}};
  if (!model.description.empty()) j["description"] = model.description;
  for (const auto& [name, field] : fields())
    j[name] = {{"value", (model.*field.member).value}, {"source", (model.*field.member).source}};
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
