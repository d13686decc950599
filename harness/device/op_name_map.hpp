#pragma once
// A map from a real device's kernel names (torch_npu / CANN tasks, CUDA kernels in a Kineto
// trace) to the roles of encbench's own ops, read from a data file
// (scenarios/devices/op-maps/op-name-map.json, or the user's own with --op-map). A trace device
// (`--device trace:FILE`) uses it for the ops whose encbench name the trace lacks: encbench's
// `attention` takes the measured FlashAttentionScore time, `qkv_proj` the MatMulV2 time, and so on.
//
// File (schema "encbench-op-name-map", version 1):
//   {"schema": "encbench-op-name-map", "version": 1,
//    "encbench_ops":  [{"ops": "qkv_proj|out_proj|mlp_*", "role": "gemm"}, ...],
//    "trace_kernels": [{"kernels": "MatMulV2|MatMulV3|aclnnMm*", "role": "gemm",
//                       "source": "where the name comes from"}, ...]}
// Patterns are core/glob.hpp globs ('*', '?', alternatives with '|'), matched against the whole
// name, case-sensitively; the first entry that matches decides. Every trace_kernels role must be
// the role of some encbench_ops entry (a typo would otherwise map nothing, silently).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::device {

struct OpNameRule {
  std::string patterns;  // glob alternatives
  std::string role;      // "gemm", "attention", ...
  std::string source;    // trace_kernels: where the kernel name comes from
};

struct OpNameMap {
  std::string origin;  // the file, for messages and reports
  std::vector<OpNameRule> encbench_ops;
  std::vector<OpNameRule> trace_kernels;

  // The role of a trace kernel / of an encbench op, or "" when no entry matches.
  std::string_view role_of_trace_kernel(std::string_view kernel_name) const;
  std::string_view role_of_encbench_op(std::string_view op_name) const;
};

// Throws InvalidInput naming the entry and the field for anything malformed.
OpNameMap parse_op_name_map(const nlohmann::json& json, const std::string& origin);
// Reads and parses a file (InvalidInput when unreadable or malformed).
OpNameMap load_op_name_map(const std::filesystem::path& path);
// The map shipped with encbench: <profiles dir>/op-maps/op-name-map.json.
std::filesystem::path default_op_name_map_path(const std::filesystem::path& profiles_dir);

}  // namespace encbench::device
