// live_timeline_arm (timeline_page.hpp): a `bench serve` run against `encbench serve --profile`,
// its records joined with the engine timeline of the server's /stop_profile answer.
#include <unordered_map>

#include "harness/client/server_timeline.hpp"
#include "harness/scenario/timeline_page.hpp"

namespace encbench::scenario {
namespace {

TimelineStep timeline_step(const client::ServerStep& s) {
  TimelineStep t;
  t.start_ns = s.start_ns;
  t.encoder_start_ns = s.encoder_start_ns;
  // The modelled host pre-processing is waited out right after the forward: part of the encoder.
  t.encoder_ns = s.encoder_end_ns - s.encoder_start_ns + s.encoder_host_extra_ns;
  t.encoder_busy_ns = s.encoder_device_busy_ns;
  t.encoder_idle_by_class = s.encoder_idle_ns_by_class;
  t.lm_ns = s.lm_end_ns - s.lm_start_ns;
  return t;
}

// Server step numbers -> positions in `steps`.
std::unordered_map<std::int64_t, std::int64_t> step_positions(const std::vector<client::ServerStep>& steps) {
  std::unordered_map<std::int64_t, std::int64_t> at;
  for (std::size_t k = 0; k < steps.size(); ++k) at.emplace(steps[k].step, static_cast<std::int64_t>(k));
  return at;
}

// Joins the server's requests to the client's records by x-request-id; returns how many records
// with a first token found theirs.
std::size_t match_requests(const client::ServerTimeline& server, TimelineArm& arm) {
  std::unordered_map<std::string, const client::ServerRequest*> by_id;
  for (const client::ServerRequest& r : server.requests)
    if (!r.client_request_id.empty()) by_id.emplace(r.client_request_id, &r);
  const auto steps = step_positions(server.steps);
  arm.traces.assign(arm.records.size(), TimelineRequestTrace{});
  std::size_t matched = 0;
  for (std::size_t i = 0; i < arm.records.size(); ++i) {
    const auto it = by_id.find(arm.records[i].request_id);
    if (it == by_id.end() || arm.records[i].first_choices_ns == 0) continue;
    const client::ServerRequest& r = *it->second;
    const auto step = steps.find(r.encoder_step);
    arm.traces[i] = {true, r.arrival_ns, r.submitted_ns, r.first_scheduled_ns,
                     step == steps.end() ? -1 : step->second};
    ++matched;
  }
  return matched;
}

std::size_t with_first_token(const std::vector<client::RequestRecord>& records) {
  std::size_t n = 0;
  for (const auto& r : records) n += r.first_choices_ns != 0 ? 1 : 0;
  return n;
}

}  // namespace

TimelineArm live_timeline_arm(const std::string& label, const client::BenchResult& result) {
  TimelineArm arm;
  arm.label = label;
  arm.clock = "live run";
  arm.records = result.run.records;
  arm.start_ns = result.run.start_ns;
  arm.end_ns = result.run.end_ns;
  if (result.server_profile.is_null()) {
    arm.notes.push_back("Engine overlay unavailable: the server was not profiled (bench serve --profile"
                        + std::string(result.profile_message.empty() ? ")" : "; " + result.profile_message + ")"));
    return arm;
  }
  const client::ServerTimeline server = client::parse_server_timeline(result.server_profile, result.profile_clock);
  if (!server.available) {
    arm.notes.push_back("Engine overlay unavailable: " + server.note);
    return arm;
  }
  for (const client::ServerStep& s : server.steps) arm.steps.push_back(timeline_step(s));
  const std::size_t matched = match_requests(server, arm);
  arm.notes.push_back("Engine overlay from encbench serve's /stop_profile: " + std::to_string(server.steps.size()) +
                      " steps; " + std::to_string(matched) + " of " + std::to_string(with_first_token(arm.records)) +
                      " requests matched by x-request-id. Clock: " + server.clock_alignment + ".");
  if (!server.note.empty()) arm.notes.push_back(server.note);
  return arm;
}

}  // namespace encbench::scenario
