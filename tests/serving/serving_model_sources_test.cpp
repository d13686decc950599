// A serving model's coefficients are data with their source (a datasheet, a config file, a published
// measurement, an estimate with its reasoning, or a fit by scripts/fit-seeds.py on the calibration
// set). This checks the shipped files say so for every coefficient: a placeholder source let three
// declared values claim "initial guess (replaced by the fit)" long after the fit stopped freeing them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

TEST(ServingModelSources, EveryShippedCoefficientSaysWhereItsValueComesFrom) {
  const auto dir = std::filesystem::path(ENCBENCH_TEST_SOURCE_DIR) / "scenarios/serving";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    ++files;
    std::ifstream in(entry.path());
    const nlohmann::json doc = nlohmann::json::parse(in);
    int coefficients = 0;
    for (const auto& [key, value] : doc.items()) {
      if (!value.is_object() || !value.contains("value") || !value.contains("source")) continue;
      ++coefficients;
      const std::string where = entry.path().filename().string() + ": " + key;
      ASSERT_TRUE(value["source"].is_string()) << where;
      const std::string source = lowercase(value["source"].get<std::string>());
      // Long enough to say what the value is and why; no placeholder.
      EXPECT_GE(source.size(), 40u) << where << " has too short a source: " << source;
      for (const char* placeholder : {"initial guess", "todo", "tbd", "placeholder"})
        EXPECT_EQ(source.find(placeholder), std::string::npos) << where << " has a placeholder source: " << source;
      // A value that claims the fit names the script that fits it.
      if (source.rfind("fit", 0) == 0) {
        EXPECT_NE(source.find("scripts/fit-seeds.py"), std::string::npos) << where << " claims a fit without its script";
      }
    }
    // Every serving model declares its LM, host, encoder, memory and noise coefficients.
    EXPECT_GE(coefficients, 12) << entry.path();
  }
  EXPECT_GE(files, 1);
}

}  // namespace
