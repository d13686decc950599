// Host models (harness/device/host_model.hpp): the shipped files read with every class sourced,
// and a bad file is an InvalidInput naming the file, the key and the accepted range.
#include <gtest/gtest.h>

#include <string>

#include "harness/core/error.hpp"
#include "harness/device/host_model.hpp"
#include "harness/device/sim_profile.hpp"

using namespace encbench;
using namespace encbench::device;

namespace {

nlohmann::json complete_model() {
  nlohmann::json classes = nlohmann::json::object();
  for (HostOpClass c : kHostOpClasses) classes[std::string(to_string(c))] = {{"ns", 1000}, {"source", "test"}};
  return {{"schema", "encbench-host-model"}, {"schema_version", 1}, {"name", "t"}, {"op_classes", classes}};
}

// The message of the InvalidInput that parsing `doc` throws ("" when it parses).
std::string error_of(const nlohmann::json& doc) {
  try {
    (void)parse_host_model(doc, "my-model.json");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

TEST(HostModel, ShippedModelsReadWithASourceForEveryClass) {
  for (const char* name : {"torch-npu-eager", "dispatch-only"}) {
    const HostModel m = load_host_model(name, default_profiles_dir());
    EXPECT_EQ(m.name, name);
    for (HostOpClass c : kHostOpClasses) {
      const HostOpCost& cost = m.costs[static_cast<std::size_t>(c)];
      EXPECT_GE(cost.ns, 0) << to_string(c);
      EXPECT_LE(cost.ns, kMaxHostOpCostNs) << to_string(c);
      EXPECT_GE(cost.source.size(), 20u) << name << " " << to_string(c) << ": a source says where the cost comes from";
    }
    // Written back, it reads back the same.
    const HostModel again = parse_host_model(to_json(m), "round trip");
    for (HostOpClass c : kHostOpClasses) EXPECT_EQ(again.cost(c), m.cost(c));
  }
  // The preset A/B's model adds nothing to the fitted dispatch; the default one charges a launch.
  EXPECT_EQ(load_host_model("dispatch-only", default_profiles_dir()).cost(HostOpClass::kernel_launch), 0);
  EXPECT_GT(load_host_model(std::string(kDefaultHostModel), default_profiles_dir()).cost(HostOpClass::kernel_launch), 0);
}

TEST(HostModel, BadFilesNameTheFileKeyAndRange) {
  EXPECT_EQ(error_of(complete_model()), "");
  nlohmann::json doc = complete_model();
  doc["op_classes"]["kernel_lunch"] = {{"ns", 1}, {"source", "x"}};
  std::string e = error_of(doc);
  EXPECT_NE(e.find("my-model.json"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown op class \"op_classes.kernel_lunch\""), std::string::npos) << e;
  EXPECT_NE(e.find("kernel_launch, memset"), std::string::npos) << e;  // the accepted classes

  doc = complete_model();
  doc["op_classes"]["d2h_copy"]["ns"] = -1;
  e = error_of(doc);
  EXPECT_NE(e.find("\"op_classes.d2h_copy\".ns"), std::string::npos) << e;
  EXPECT_NE(e.find("[0, 1e9]"), std::string::npos) << e;
  doc["op_classes"]["d2h_copy"]["ns"] = 2e9;
  EXPECT_NE(error_of(doc).find("[0, 1e9]"), std::string::npos);
  doc["op_classes"]["d2h_copy"]["ns"] = 1.5;  // whole nanoseconds: the clock is integer ns
  EXPECT_NE(error_of(doc).find("whole number"), std::string::npos);
  doc["op_classes"]["d2h_copy"]["ns"] = 0;
  EXPECT_EQ(error_of(doc), "");  // 0 is in range

  doc = complete_model();
  doc["op_classes"]["allocation"].erase("source");
  e = error_of(doc);
  EXPECT_NE(e.find("\"op_classes.allocation\".source"), std::string::npos) << e;
  doc["op_classes"]["allocation"]["source"] = "";
  EXPECT_NE(error_of(doc).find(".source must be a non-empty string"), std::string::npos);

  doc = complete_model();
  doc["op_classes"].erase("input_prep");
  EXPECT_NE(error_of(doc).find("missing op class \"op_classes.input_prep\""), std::string::npos);
  doc = complete_model();
  doc["schema_version"] = 2;
  EXPECT_NE(error_of(doc).find("schema_version"), std::string::npos);
  doc = complete_model();
  doc["extra"] = 1;
  EXPECT_NE(error_of(doc).find("unknown key \"extra\""), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json::array()).find("must be a JSON object"), std::string::npos);
}

TEST(HostModel, UnknownNameListsTheKnownOnesAndHostTimeFlagNamesItsChoices) {
  try {
    (void)load_host_model("nosuch", default_profiles_dir());
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("dispatch-only, torch-npu-eager"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_virtual_host_time_flag("cpu"), HostTime::measured);
  EXPECT_EQ(parse_virtual_host_time_flag("model"), HostTime::model);
  EXPECT_EQ(parse_virtual_host_time_flag("none"), HostTime::none);
  try {
    (void)parse_virtual_host_time_flag("wall");
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("model"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos);
  }
}

}  // namespace
