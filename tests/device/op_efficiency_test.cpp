// A sim profile's achieved efficiency per op class: the roofline terms of the ops a
// class names stretch by 1 / efficiency, the fixed cost does not, other ops keep the roofline; a
// bad cost file is refused naming the file, the key and the accepted range.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/device/sim_profile.hpp"

using namespace encbench;
using namespace encbench::device;

namespace {

nlohmann::json number(double value) { return {{"value", value}, {"source", "test"}}; }

nlohmann::json profile_json() {
  return {{"name", "eff-test"},
          {"peak_fp32_flops_per_s", number(1e12)},
          {"peak_fp16_flops_per_s", number(1e12)},
          {"mem_bytes_per_s", number(1e9)},
          {"kernel_fixed_ns", number(1000)},
          {"d2h_latency_ns", number(0)},
          {"d2h_bytes_per_s", number(1e9)},
          {"h2d_latency_ns", number(0)},
          {"h2d_bytes_per_s", number(1e9)},
          {"host_wakeup_ns", number(0)},
          {"op_efficiency",
           {{"matmul", {{"value", 0.5}, {"source", "test"}, {"ops", "qkv_proj|mlp_*"}}},
            {"copy", {{"value", 0.25}, {"source", "test"}, {"ops", "pad_?"}}}}}};
}

std::string error_of(const nlohmann::json& doc) {
  try {
    (void)parse_sim_profile(doc, "cost.json");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OpEfficiency, NamedOpsStretchTheirRooflineTermsOnly) {
  const SimProfile p = parse_sim_profile(profile_json(), "cost.json");
  ASSERT_EQ(p.op_efficiency.size(), 2u);
  // 1e9 FLOPs at 1e12 FLOP/s = 1 ms of compute; 1e6 bytes at 1e9 B/s = 1 ms of memory.
  const auto kernel = timeline::OpCategory::kernel;
  EXPECT_EQ(op_duration_ns(p, "out_proj", kernel, 1e9, 0), 1000 + 1'000'000);     // no class: roofline
  EXPECT_EQ(op_duration_ns(p, "qkv_proj", kernel, 1e9, 0), 1000 + 2'000'000);     // 0.5: twice the term
  EXPECT_EQ(op_duration_ns(p, "mlp_fc1", kernel, 0, 1e6), 1000 + 2'000'000);      // glob, memory term
  EXPECT_EQ(op_duration_ns(p, "pad_q", kernel, 0, 1e6), 1000 + 4'000'000);        // 0.25
  EXPECT_EQ(op_duration_ns(p, "pad_stacked", kernel, 0, 1e6), 1000 + 1'000'000);  // '?' is one character
  EXPECT_DOUBLE_EQ(p.efficiency_of("split_heads"), 1.0);
  // Copies are not kernels: the link's figures, whatever their name.
  EXPECT_EQ(op_duration_ns(p, "qkv_proj", timeline::OpCategory::memcpy_h2d, 0, 1e6), 1'000'000);
  // The efficiencies read back from the profile's JSON form.
  const SimProfile back = parse_sim_profile(to_json(p), "back");
  ASSERT_EQ(back.op_efficiency.size(), 2u);
  EXPECT_DOUBLE_EQ(back.efficiency_of("pad_v"), 0.25);
}

TEST(OpEfficiency, BadCostFilesNameFileKeyAndRange) {
  auto with = [](const char* key, const nlohmann::json& value) {
    nlohmann::json doc = profile_json();
    doc["op_efficiency"]["matmul"][key] = value;
    return doc;
  };
  for (const double bad : {0.0, -0.5, 1.5}) {
    const std::string e = error_of(with("value", bad));
    EXPECT_NE(e.find("cost.json"), std::string::npos) << e;
    EXPECT_NE(e.find("op_efficiency.matmul"), std::string::npos) << e;
    EXPECT_NE(e.find("(0, 1]"), std::string::npos) << e;
  }
  EXPECT_NE(error_of(with("source", "")).find("op_efficiency.matmul\".source"), std::string::npos);
  EXPECT_NE(error_of(with("ops", "")).find("op_efficiency.matmul\".ops"), std::string::npos);
  EXPECT_NE(error_of(with("speed", 1)).find("unknown key \"speed\""), std::string::npos);
  nlohmann::json no_source = profile_json();
  no_source["op_efficiency"]["matmul"].erase("source");
  EXPECT_NE(error_of(no_source).find("source must name"), std::string::npos);
  nlohmann::json not_object = profile_json();
  not_object["op_efficiency"] = 0.5;
  EXPECT_NE(error_of(not_object).find("\"op_efficiency\" must be an object"), std::string::npos);
}

TEST(OpEfficiency, ShippedAscendProfileNamesEveryAttentionVariant) {
  const SimProfile shipped = load_sim_profile("ascend-910b", default_profiles_dir());
  // Which class each op resolves to, whatever the fitted values: the fit may put a kernel at 1.0,
  // the value an op no class names also gets, so mark every class with its own value first.
  SimProfile p = shipped;
  for (std::size_t i = 0; i < p.op_efficiency.size(); ++i)
    p.op_efficiency[i].fraction.value = 0.01 * static_cast<double>(i + 1);
  auto class_value = [&](const char* name) {
    for (const OpEfficiency& e : p.op_efficiency)
      if (e.op_class == name) return e.fraction.value;
    return -1.0;
  };
  // The two kernels have their own classes, padded or not; GEMMs theirs.
  for (const char* op : {"attention_flash_unpad_pad128", "attention_flash_unpad"})
    EXPECT_DOUBLE_EQ(p.efficiency_of(op), class_value("attention_flash_unpad")) << op;
  for (const char* op : {"attention_fusion_pad128", "attention_fusion"})
    EXPECT_DOUBLE_EQ(p.efficiency_of(op), class_value("attention_fusion")) << op;
  EXPECT_DOUBLE_EQ(p.efficiency_of("qkv_proj"), class_value("matmul"));
  EXPECT_GT(class_value("attention_flash_unpad"), 0.0);
  EXPECT_GT(class_value("attention_fusion"), 0.0);
  // The shipped values are efficiencies, each with its source.
  for (const OpEfficiency& e : shipped.op_efficiency) {
    EXPECT_GT(e.fraction.value, 0.0) << e.op_class;
    EXPECT_LE(e.fraction.value, 1.0) << e.op_class;
    EXPECT_FALSE(e.fraction.source.empty()) << e.op_class;
  }
}
