#pragma once
// `trace analyze DIR` on a torch_npu profile directory (`*_ascend_pt`): the trace it holds, and
// torch_npu's own per-kernel table (kernel_details.csv) as a cross-check of the op durations the
// importer read. A missing or cut table is one line naming the file and what was expected; the
// trace is still analysed.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/trace_read/trace_import.hpp"

namespace encbench::trace {

struct AscendProfileFiles {
  std::filesystem::path trace;           // ASCEND_PROFILER_OUTPUT/trace_view.json or .json.gz
  std::filesystem::path kernel_details;  // ASCEND_PROFILER_OUTPUT/kernel_details.csv (may be absent)
  std::filesystem::path op_statistic;    // ASCEND_PROFILER_OUTPUT/op_statistic.csv (level 0 has none)
};

// The files of a torch_npu profile directory (the `*_ascend_pt` directory or its
// ASCEND_PROFILER_OUTPUT). Throws InvalidInput naming the trace file it expected when there is none.
AscendProfileFiles find_ascend_profile_files(const std::filesystem::path& dir);

struct KernelTableCheck {
  std::filesystem::path table;
  bool read = false;                   // the table was there and had the columns needed
  std::size_t rows = 0;                // complete rows read
  std::size_t matched = 0;             // rows found as an op (same name, start within 1 us)
  Nanos largest_disagreement_ns = 0;   // |table duration - op duration| over matched rows
  std::string largest_name;
  Nanos largest_start_ns = 0;
  std::vector<std::string> problems;   // one line per missing, malformed or truncated part
  std::map<std::string, Nanos> op_time_by_type;  // matched ops' trace durations by the row's Type
};

// Matches each row of kernel_details.csv (Name, Start Time(us), Duration(us)) to a device op.
KernelTableCheck check_kernel_details(const std::filesystem::path& table, const ImportedTrace& trace);

nlohmann::json to_json(const KernelTableCheck& check);

struct OpStatisticCheck {
  std::filesystem::path table;
  bool read = false;
  std::size_t types = 0;               // op types in the table
  std::size_t compared = 0;            // of them with ops matched through kernel_details.csv
  Nanos largest_disagreement_ns = 0;   // |table Total Time - the trace's ops of that type|
  std::string largest_type;
  std::vector<std::string> problems;
};

// Compares op_statistic.csv's Total Time(us) per OP Type with the trace's durations of the ops
// kernel_details.csv gives that Type.
OpStatisticCheck check_op_statistic(const std::filesystem::path& table, const KernelTableCheck& kernels);

nlohmann::json to_json(const OpStatisticCheck& check);

}  // namespace encbench::trace
