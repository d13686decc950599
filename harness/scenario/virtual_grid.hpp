#pragma once
// `encbench run --grid`: the configuration sweep of `bench sweep serve` in virtual time, so a user
// asks the model which configuration wins at which load before asking a real server.
//
// Axes, separated by ';': "preset=pr7104,optimized" (encoder presets), a toggle
// ("seq-lens=d2h-per-layer,host-precomputed", "scale=per-call,init", "pad-decision=...",
// "pad-method=...", "out-buffer=...", "kernel=..." : applied to each preset as +toggle=value), or a
// serving-model parameter ("max-num-batched-tokens=8192,16384", "max-num-seqs=128,256"). Every
// combination is a configuration (those the toggles forbid are skipped and listed), run at each
// load (--sweep) for the scenario's seeds; a seed is a round, and the same seed gives every
// configuration the same requests (the paired design of the judgement). The result is the same
// record `bench sweep serve` fills, so the same analysis, JSON and page follow.
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/scenario/config_sweep.hpp"
#include "harness/scenario/preset_ab.hpp"
#include "harness/scenario/sweep.hpp"

namespace encbench::scenario {

struct GridAxis {
  std::string key;                  // "preset", a toggle, "max-num-batched-tokens", "max-num-seqs"
  std::vector<std::string> values;
};
// Throws InvalidInput (--grid) naming the axis: unknown key, no values, a repeated axis.
std::vector<GridAxis> parse_grid(const std::string& text);

struct VirtualGridRun {
  ConfigSweepOptions options;               // the configurations and loads, as bench sweep serve's
  ConfigSweepRecord record;                 // every (configuration, load, seed) as a finished cell
  std::vector<std::string> skipped;         // combinations the toggles forbid, with the reason
  std::vector<double> seconds_per_configuration;  // wall seconds of each configuration's runs
};

// `base`: the scenario (model, workload, serving model, seeds; its After preset is the preset
// when no preset axis is given). `loads`: --sweep (empty: the scenario's own request rate).
// `jobs` worker processes share out the configurations; the figures do not depend on how many.
VirtualGridRun run_virtual_grid(const PresetAbOptions& base, const std::vector<GridAxis>& axes, const SweepSpec& loads,
                                const std::vector<std::string>& argv, int jobs, std::ostream& progress);

}  // namespace encbench::scenario
