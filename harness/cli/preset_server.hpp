#pragma once
// `encbench run --clock real`'s arm servers: encbench serve's Server with one preset, started in
// this process for each round. The preset A/B (scenario/preset_ab.hpp) says what it wants as plain
// data and drives the handle; this is where the one room that may see both, the CLI, wires
// server/ in, so that scenario/ needs nothing from server/ but request parsing.
#include "harness/scenario/preset_ab.hpp"

namespace encbench::cli {

// Starts the server `spec` describes (port picked by the system, listening on return); its
// round_record() is {"server_engine_delta": the engine's counters over the measured run} and its
// round_guards() are scenario::engine_delta_guards of that delta. Throws InvalidInput for a bad
// model, device or profile.
scenario::StartedPresetServer start_preset_server(const scenario::PresetServerSpec& spec);

}  // namespace encbench::cli
