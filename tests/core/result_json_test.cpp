#include "harness/core/result_json.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "harness/core/error.hpp"

using namespace encbench;
namespace fs = std::filesystem;

TEST(ResultJson, EnvelopeCarriesProvenance) {
  const auto env = make_result_envelope("encbench-test", 3, {"encbench", "x"}, "cpu");
  EXPECT_EQ(env["schema"], "encbench-test");
  EXPECT_EQ(env["schema_version"], 3);
  EXPECT_FALSE(env["git_sha"].get<std::string>().empty());
  EXPECT_EQ(env["argv"].size(), 2u);
  EXPECT_EQ(env["machine"]["device_kind"], "cpu");
  EXPECT_GT(env["machine"]["logical_cores"].get<unsigned>(), 0u);
}

TEST(ResultJson, WriteReadRoundTripAndGzip) {
  const fs::path dir = fs::temp_directory_path() / "encbench_result_json_test";
  fs::create_directories(dir);
  const nlohmann::json doc{{"a", 1}, {"b", {1, 2, 3}}};
  write_json_file(dir / "sub" / "x.json", doc);
  EXPECT_EQ(read_json_file(dir / "sub" / "x.json"), doc);

  const std::string text = doc.dump();
  gzFile f = gzopen((dir / "x.json.gz").c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  EXPECT_EQ(read_json_file(dir / "x.json.gz"), doc);
  fs::remove_all(dir);
}

TEST(ResultJson, BadFilesGiveClearErrors) {
  const fs::path dir = fs::temp_directory_path() / "encbench_result_json_bad";
  fs::create_directories(dir);
  std::ofstream(dir / "bad.json") << "{\"a\": [1, 2";
  try {
    read_json_file(dir / "bad.json");
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
  EXPECT_THROW(read_json_file(dir / "missing.json"), InvalidInput);
  EXPECT_THROW(write_json_file("/proc/definitely/not/writable.json", nlohmann::json{}), InvalidInput);
  fs::remove_all(dir);
}

namespace encbench {
namespace {

TEST(ResultJson, NonFiniteLiteralsOfOtherToolsReadAsNull) {
  // Google Benchmark writes `"syncs": -nan` for the CV of all-zero counters; Python's json.dump
  // writes NaN and Infinity. Text inside strings stays as it is.
  const fs::path dir = fs::temp_directory_path() / "encbench_result_json_nan";
  fs::create_directories(dir);
  std::ofstream(dir / "gbench.json")
      << "{\"benchmarks\": [{\"name\": \"nan inf\", \"syncs\": -nan, \"a\": nan, \"b\": inf,\n"
         "  \"c\": [NaN, -Infinity, Infinity, 1.5], \"d\": \"-nan\", \"infinite\": 2}]}";
  const nlohmann::json doc = read_json_file(dir / "gbench.json");
  const auto& row = doc["benchmarks"][0];
  EXPECT_EQ(row["name"], "nan inf");
  EXPECT_TRUE(row["syncs"].is_null());
  EXPECT_TRUE(row["a"].is_null());
  EXPECT_TRUE(row["b"].is_null());
  EXPECT_EQ(row["c"], nlohmann::json::parse("[null, null, null, 1.5]"));
  EXPECT_EQ(row["d"], "-nan");
  EXPECT_EQ(row["infinite"], 2);
  // Anything else that is not JSON is still refused.
  std::ofstream(dir / "bad.json") << "{\"a\": nano}";
  EXPECT_THROW(read_json_file(dir / "bad.json"), InvalidInput);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace encbench
