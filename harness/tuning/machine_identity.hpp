#pragma once
// What a calibration cache is keyed by: the running binary (its GNU build id, or a hash of the
// executable's bytes when it has none) and the CPU model (/proc/cpuinfo), so a rebuilt binary
// or another machine never reuses tiles measured for a different one.
#include <string>

namespace encbench::tuning {

struct MachineIdentity {
  std::string build_id;   // "gnu:<hex>" or "fnv64:<hex>" of /proc/self/exe
  std::string cpu_model;  // "AMD EPYC 9R14 (family 25 model 17 stepping 1)"
};

MachineIdentity current_machine_identity();

}  // namespace encbench::tuning
