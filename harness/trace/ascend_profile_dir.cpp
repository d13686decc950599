#include "harness/trace/ascend_profile_dir.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "harness/core/error.hpp"

namespace encbench::trace {

namespace fs = std::filesystem;

AscendProfileFiles find_ascend_profile_files(const fs::path& dir) {
  const fs::path output = fs::is_directory(dir / "ASCEND_PROFILER_OUTPUT") ? dir / "ASCEND_PROFILER_OUTPUT" : dir;
  AscendProfileFiles files;
  for (const char* name : {"trace_view.json", "trace_view.json.gz"}) {
    if (fs::is_regular_file(output / name)) {
      files.trace = output / name;
      break;
    }
  }
  require(!files.trace.empty(), (output / "trace_view.json").string() +
                                    ": missing; expected torch_npu's trace (trace_view.json or trace_view.json.gz) in "
                                    "this profile directory");
  files.kernel_details = output / "kernel_details.csv";
  files.op_statistic = output / "op_statistic.csv";
  return files;
}

namespace {

// One CSV line into fields (RFC 4180 quoting: "" inside quotes is a quote). Returns false when a
// quoted field does not end on this line.
bool split_csv_line(const std::string& line, std::vector<std::string>& fields) {
  fields.clear();
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  return !quoted;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  const auto last = text.find_last_not_of(" \t");
  return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

struct OpTimes {
  Nanos start_ns, duration_ns;
};

std::map<std::string, std::vector<OpTimes>> ops_by_name(const ImportedTrace& trace) {
  std::map<std::string, std::vector<OpTimes>> by_name;
  for (const DeviceTrace& d : trace.devices) {
    for (const timeline::DeviceOp& op : d.timeline.device_ops) by_name[op.name].push_back({op.start_ns, op.end_ns - op.start_ns});
  }
  for (auto& [name, ops] : by_name) {
    std::sort(ops.begin(), ops.end(), [](const OpTimes& a, const OpTimes& b) { return a.start_ns < b.start_ns; });
  }
  return by_name;
}

// The op of that name whose start is nearest `start`, within 1 us (torch_npu rounds to the ns).
const OpTimes* nearest_op(const std::vector<OpTimes>& ops, Nanos start) {
  constexpr Nanos kTolerance = 1000;
  const auto it = std::lower_bound(ops.begin(), ops.end(), start,
                                   [](const OpTimes& o, Nanos t) { return o.start_ns < t; });
  const OpTimes* best = nullptr;
  for (auto candidate : {it, it == ops.begin() ? it : it - 1}) {
    if (candidate == ops.end()) continue;
    const Nanos distance = std::abs(candidate->start_ns - start);
    if (distance <= kTolerance && (best == nullptr || distance < std::abs(best->start_ns - start))) best = &*candidate;
  }
  return best;
}

std::ptrdiff_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : it - header.begin();
}

}  // namespace

KernelTableCheck check_kernel_details(const fs::path& table, const ImportedTrace& trace) {
  KernelTableCheck check;
  check.table = table;
  std::ifstream in(table);
  if (!in) {
    check.problems.push_back(table.string() + ": missing; expected torch_npu's per-kernel table (Name, Start Time(us), "
                             "Duration(us)) to cross-check op durations; none done");
    return check;
  }
  std::string line;
  std::vector<std::string> header, fields;
  std::getline(in, line);
  split_csv_line(line, header);
  const auto name_col = column(header, "Name"), start_col = column(header, "Start Time(us)"),
             dur_col = column(header, "Duration(us)"), type_col = column(header, "Type");
  if (name_col < 0 || start_col < 0 || dur_col < 0) {
    check.problems.push_back(table.string() + ": no Name, Start Time(us) and Duration(us) columns in its header; "
                             "expected torch_npu's kernel_details.csv; no cross-check done");
    return check;
  }
  check.read = true;
  const auto by_name = ops_by_name(trace);
  for (std::size_t line_no = 2; std::getline(in, line); ++line_no) {
    Nanos start = 0, duration = 0;
    const bool whole = split_csv_line(line, fields) && fields.size() == header.size();
    if (!whole || !parse_us_to_ns(trimmed(fields[start_col]), start) || !parse_us_to_ns(trimmed(fields[dur_col]), duration)) {
      check.problems.push_back(table.string() + ": truncated or malformed at line " + std::to_string(line_no) + " (" +
                               std::to_string(fields.size()) + " of " + std::to_string(header.size()) +
                               " fields); cross-checked the " + std::to_string(check.rows) + " rows before it");
      break;
    }
    ++check.rows;
    const auto ops = by_name.find(fields[name_col]);
    const OpTimes* op = ops == by_name.end() ? nullptr : nearest_op(ops->second, start);
    if (op == nullptr) continue;
    ++check.matched;
    if (type_col >= 0) check.op_time_by_type[fields[type_col]] += op->duration_ns;
    const Nanos disagreement = std::abs(op->duration_ns - duration);
    if (check.matched == 1 || disagreement > check.largest_disagreement_ns) {
      check.largest_disagreement_ns = disagreement;
      check.largest_name = fields[name_col];
      check.largest_start_ns = start;
    }
  }
  return check;
}

nlohmann::json to_json(const KernelTableCheck& check) {
  return {{"table", check.table.string()},
          {"read", check.read},
          {"rows", check.rows},
          {"matched", check.matched},
          {"largest_disagreement_us", static_cast<double>(check.largest_disagreement_ns) / 1e3},
          {"largest_disagreement_op", check.largest_name},
          {"largest_disagreement_start_ns", check.largest_start_ns},
          {"problems", check.problems}};
}

OpStatisticCheck check_op_statistic(const fs::path& table, const KernelTableCheck& kernels) {
  OpStatisticCheck check;
  check.table = table;
  std::ifstream in(table);
  if (!in) {
    check.problems.push_back(table.string() + ": missing; expected torch_npu's per-type table (OP Type, Total "
                             "Time(us)) to cross-check op time per type; none done");
    return check;
  }
  std::string line;
  std::vector<std::string> header, fields;
  std::getline(in, line);
  split_csv_line(line, header);
  const auto type_col = column(header, "OP Type"), total_col = column(header, "Total Time(us)");
  if (type_col < 0 || total_col < 0) {
    check.problems.push_back(table.string() + ": no OP Type and Total Time(us) columns in its header; expected "
                             "torch_npu's op_statistic.csv; no cross-check done");
    return check;
  }
  check.read = true;
  std::map<std::string, Nanos> table_total;  // a type can have a row per core type
  for (std::size_t line_no = 2; std::getline(in, line); ++line_no) {
    Nanos total = 0;
    if (!split_csv_line(line, fields) || fields.size() != header.size() ||
        !parse_us_to_ns(trimmed(fields[total_col]), total)) {
      check.problems.push_back(table.string() + ": truncated or malformed at line " + std::to_string(line_no) +
                               "; cross-checked the rows before it");
      break;
    }
    table_total[fields[type_col]] += total;
  }
  check.types = table_total.size();
  for (const auto& [type, total] : table_total) {
    const auto ops = kernels.op_time_by_type.find(type);
    if (ops == kernels.op_time_by_type.end()) continue;
    const Nanos disagreement = std::abs(ops->second - total);
    if (++check.compared == 1 || disagreement > check.largest_disagreement_ns) {
      check.largest_disagreement_ns = disagreement;
      check.largest_type = type;
    }
  }
  return check;
}

nlohmann::json to_json(const OpStatisticCheck& check) {
  return {{"table", check.table.string()},
          {"read", check.read},
          {"types", check.types},
          {"compared", check.compared},
          {"largest_disagreement_us", static_cast<double>(check.largest_disagreement_ns) / 1e3},
          {"largest_disagreement_type", check.largest_type},
          {"problems", check.problems}};
}

}  // namespace encbench::trace
