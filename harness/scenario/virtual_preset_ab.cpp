// `encbench run --clock virtual`: both arms through the virtual-time loop (virtual_experiment.hpp)
// for each seed, then the same Before/After comparison as the live loop, and the published numbers
// of the scenario beside the model's with their errors; virtual_ab_report.hpp prints and writes.
#include <filesystem>
#include <ostream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/text_escape.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/published_table.hpp"
#include "harness/scenario/timeline_page.hpp"
#include "harness/scenario/virtual_ab_report.hpp"
#include "harness/scenario/virtual_experiment.hpp"

namespace encbench::scenario {

PresetAbRun run_virtual_preset_ab(const PresetAbOptions& o, const std::vector<std::string>& argv,
                                      std::ostream& out, std::ostream& progress) {
  const std::filesystem::path result_path =
      o.outputs.result_file.empty() ? o.outputs.result_dir / ("preset-ab-" + safe_file_component(o.name) + "-virtual.json") : o.outputs.result_file;
  std::error_code ec;
  if (!result_path.parent_path().empty()) std::filesystem::create_directories(result_path.parent_path(), ec);
  require(!ec, "cannot create directory " + result_path.parent_path().string() + " for the results: " + ec.message());
  VirtualExperiment experiment(o, argv);
  if (!o.serving_model_note.empty()) progress << "[run] serving model: " << o.serving_model_note << std::endl;
  progress << "[run] virtual clock: " << o.model << " on " << o.device << ", " << experiment.description() << std::endl;
  VirtualAbRecord record;
  record.by_arm = experiment.run_all(o, &progress, !o.outputs.timeline_html.empty());
  record.op_times = experiment.op_times();
  record.description = experiment.description();
  record.model = {{"description", experiment.description()},
                  {"serving_model", serving::to_json(experiment.serving_model())},
                  {"workload", experiment.workload() ? to_json(*experiment.workload()) : nlohmann::json(nullptr)}};
  record.serving = serving_json(record.by_arm);
  record.comparison = compare_seeds(o.presets, record.by_arm, record.serving, o.judging);
  if (!o.published.is_null())
    record.published = compare_published(o.published, record.serving, conditioned_metric_keys(o));
  if (!o.outputs.timeline_html.empty()) {
    // The first seed, whose steps and traces run_all kept.
    std::vector<TimelineArm> first_seed;
    for (std::size_t a = 0; a < record.by_arm.size(); ++a)
      first_seed.push_back(timeline_arm_of(o.presets[a], record.by_arm[a].front()));
    TimelineOptions t;
    t.itl_thresholds_ms = o.outputs.timeline_itl_thresholds_ms;
    write_timeline_html(o.outputs.timeline_html, first_seed, t);
    nlohmann::json breakdown = nlohmann::json::object();
    for (std::size_t a = 0; a < first_seed.size(); ++a) breakdown[o.presets[a]] = ttft_breakdown(first_seed[a]);
    record.ttft_breakdown_ms = std::move(breakdown);
    progress << "[run] wrote " << o.outputs.timeline_html.string() << std::endl;
  }
  print_virtual_ab(out, o, record);
  nlohmann::json doc = virtual_ab_json(o, record, argv);
  PresetAbRun run;
  run.result_path = result_path;
  write_json_file(result_path, doc);
  progress << "[run] wrote " << result_path.string() << std::endl;
  run.result = std::move(doc);
  return run;
}

}  // namespace encbench::scenario
