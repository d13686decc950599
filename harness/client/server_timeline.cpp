#include "harness/client/server_timeline.hpp"

#include <stdexcept>

namespace encbench::client {
namespace {

// A malformed field: the message names it; caught once, at the top.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::int64_t int_field(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) throw Malformed(std::string(key) + " is not an integer");
  return it->get<std::int64_t>();
}

std::string string_field(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) throw Malformed(std::string(key) + " is not a string");
  return it->get<std::string>();
}

const nlohmann::json& array_field(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) throw Malformed(std::string(key) + " is not an array");
  return *it;
}

// Every time and duration is kept within +-2^60 ns (36 years): then the page's differences and
// sums of a few of them cannot overflow, whatever a hostile or broken server sends.
constexpr std::int64_t kMaxAbsNs = std::int64_t{1} << 60;

// A server time on the client's clock.
Nanos time_field(const nlohmann::json& object, const char* key, Nanos offset_ns) {
  Nanos out = 0;
  if (__builtin_add_overflow(int_field(object, key), offset_ns, &out) || out > kMaxAbsNs || out < -kMaxAbsNs)
    throw Malformed(std::string(key) + " is out of range");
  return out;
}

Nanos duration_field(const nlohmann::json& object, const char* key) {
  const std::int64_t ns = int_field(object, key);
  if (ns < 0 || ns > kMaxAbsNs) throw Malformed(std::string(key) + " is out of range");
  return ns;
}

ServerStep step_of(const nlohmann::json& j, Nanos offset) {
  if (!j.is_object()) throw Malformed("a step is not an object");
  ServerStep s;
  s.step = int_field(j, "step");
  s.start_ns = time_field(j, "start_ns", offset);
  s.end_ns = time_field(j, "end_ns", offset);
  s.encoder_start_ns = time_field(j, "encoder_start_ns", offset);
  s.encoder_end_ns = time_field(j, "encoder_end_ns", offset);
  s.encoder_device_busy_ns = duration_field(j, "encoder_device_busy_ns");
  s.encoder_device_idle_ns = duration_field(j, "encoder_device_idle_ns");
  s.encoder_host_extra_ns = duration_field(j, "encoder_host_extra_ns");
  s.lm_start_ns = time_field(j, "lm_start_ns", offset);
  s.lm_end_ns = time_field(j, "lm_end_ns", offset);
  s.sequences = int_field(j, "sequences");
  s.images = int_field(j, "images");
  const auto idle = j.find("encoder_idle_ns_by_class");
  if (idle == j.end() || !idle->is_object()) throw Malformed("encoder_idle_ns_by_class is not an object");
  for (const auto& entry : idle->items())
    s.encoder_idle_ns_by_class[entry.key()] = duration_field(*idle, entry.key().c_str());
  return s;
}

ServerRequest request_of(const nlohmann::json& j, Nanos offset) {
  if (!j.is_object()) throw Malformed("a request is not an object");
  ServerRequest r;
  r.client_request_id = string_field(j, "client_request_id");
  r.response_id = string_field(j, "response_id");
  r.arrival_ns = time_field(j, "arrival_ns", offset);
  r.submitted_ns = time_field(j, "submitted_ns", offset);
  r.first_scheduled_ns = time_field(j, "first_scheduled_ns", offset);
  r.first_token_ns = time_field(j, "first_token_ns", offset);
  r.encoder_step = int_field(j, "encoder_step");
  return r;
}

// Same boot: one CLOCK_MONOTONIC, offset 0. Otherwise through the system clocks, both read
// together with their steady clocks (harness/core/clock_anchor.hpp).
void align_clocks(const nlohmann::json& clock, const ClockAnchor& client, ServerTimeline& out) {
  if (!clock.is_object()) throw Malformed("clock is not an object");
  const std::string boot = string_field(clock, "boot_id");
  if (!boot.empty() && boot == client.boot_id) {
    out.offset_ns = 0;
    out.clock_alignment = "same host (same boot id): the server's steady clock is the client's";
    return;
  }
  const std::int64_t server_steady = int_field(clock, "steady_ns"), server_system = int_field(clock, "system_ns");
  Nanos server_gap = 0, client_gap = 0;
  if (__builtin_sub_overflow(server_system, server_steady, &server_gap) ||
      __builtin_sub_overflow(client.system_ns, client.steady_ns, &client_gap) ||
      __builtin_sub_overflow(server_gap, client_gap, &out.offset_ns))
    throw Malformed("clock is out of range");
  out.clock_alignment = "other host: mapped through both system clocks (assumes they agree; "
                        "their offset is the alignment error)";
}

ServerTimeline parse_or_throw(const nlohmann::json& profile, const ClockAnchor& client) {
  ServerTimeline out;
  if (!profile.is_object() || !profile.contains("engine_timeline")) {
    out.note = "the server's /stop_profile answer has no engine_timeline (not encbench serve, or --profile was off)";
    return out;
  }
  const nlohmann::json& t = profile["engine_timeline"];
  if (!t.is_object()) throw Malformed("engine_timeline is not an object");
  if (int_field(t, "version") != 1)
    throw Malformed("engine_timeline version " + t["version"].dump() + " is not supported (this client reads 1)");
  align_clocks(t.contains("clock") ? t["clock"] : nlohmann::json(), client, out);
  for (const auto& s : array_field(t, "steps")) out.steps.push_back(step_of(s, out.offset_ns));
  for (const auto& r : array_field(t, "requests")) out.requests.push_back(request_of(r, out.offset_ns));
  out.steps_dropped = int_field(t, "steps_dropped");
  out.requests_dropped = int_field(t, "requests_dropped");
  if (out.steps_dropped > 0 || out.requests_dropped > 0)
    out.note = "the server dropped " + std::to_string(out.steps_dropped) + " steps and " +
               std::to_string(out.requests_dropped) +
               " requests over its caps (serve --profile-max-steps / --profile-max-requests)";
  out.available = true;
  return out;
}

}  // namespace

ServerTimeline parse_server_timeline(const nlohmann::json& server_profile, const ClockAnchor& client_clock) noexcept {
  try {
    return parse_or_throw(server_profile, client_clock);
  } catch (const std::exception& e) {
    ServerTimeline out;
    out.note = std::string("the server's engine_timeline is malformed: ") + e.what();
    return out;
  } catch (...) {
    ServerTimeline out;
    out.note = "the server's engine_timeline is malformed";
    return out;
  }
}

}  // namespace encbench::client
