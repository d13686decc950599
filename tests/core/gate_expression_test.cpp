// The one gate language: each accepted form with what it compares, and each error with the
// column it names (counted by hand from the text) and the grammar it shows.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness/core/error.hpp"
#include "harness/core/gate_expression.hpp"

namespace encbench {
namespace {

// The message of the InvalidInput that parsing `text` throws ("" when it parses).
std::string parse_error(const std::string& text) {
  try {
    parse_gate_expression(text, "--gate");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

TEST(GateExpression, ValidFormsSayWhatTheyCompare) {
  const GateExpression after = parse_gate_expression("syncs_per_forward<=0", "--gate");
  EXPECT_EQ(after.metric, "syncs_per_forward");
  EXPECT_EQ(after.op, "<=");
  EXPECT_EQ(after.value, 0.0);
  EXPECT_EQ(after.target, GateTarget::after);

  const GateExpression change = parse_gate_expression("idle_pct<+1", "--gate");
  EXPECT_EQ(change.target, GateTarget::change);
  EXPECT_EQ(change.value, 1.0);

  const GateExpression drop = parse_gate_expression("request_throughput >= -2.5%", "--gate");
  EXPECT_EQ(drop.metric, "request_throughput");
  EXPECT_EQ(drop.op, ">=");
  EXPECT_EQ(drop.value, -2.5);
  EXPECT_EQ(drop.target, GateTarget::change_pct);

  // Dotted names (compare's metrics) and spaces around every token.
  const GateExpression dotted = parse_gate_expression("  b.forward_ms  !=  1e3 ", "--gate");
  EXPECT_EQ(dotted.metric, "b.forward_ms");
  EXPECT_EQ(dotted.op, "!=");
  EXPECT_EQ(dotted.value, 1000.0);
  for (const char* op : {"<", "<=", ">", ">=", "==", "!="})
    EXPECT_EQ(parse_gate_expression(std::string("m") + op + "1", "--gate").op, op);
  EXPECT_EQ(parse_gate_expression("m<-100%", "--gate").value, -100.0);  // the edge of the range
}

TEST(GateExpression, EvaluatesAgainstBeforeAndAfter) {
  // A = 20, B = 21: B's value 21, the change +1, the relative change +5 %.
  EXPECT_TRUE(evaluate_gate_expression(parse_gate_expression("m<=21", "x"), 20, 21).passed);
  EXPECT_FALSE(evaluate_gate_expression(parse_gate_expression("m<21", "x"), 20, 21).passed);
  EXPECT_EQ(evaluate_gate_expression(parse_gate_expression("m<+1", "x"), 20, 21).observed, 1.0);
  EXPECT_FALSE(evaluate_gate_expression(parse_gate_expression("m<+1", "x"), 20, 21).passed);
  const GateObservation pct = evaluate_gate_expression(parse_gate_expression("m<=+5%", "x"), 20, 21);
  EXPECT_DOUBLE_EQ(pct.observed, 5.0);
  EXPECT_TRUE(pct.passed);
  EXPECT_FALSE(evaluate_gate_expression(parse_gate_expression("m<+4.9%", "x"), 20, 21).passed);
  // A negative baseline: the change is a percent of |A| (from -10 to -5 is +50 %).
  EXPECT_DOUBLE_EQ(evaluate_gate_expression(parse_gate_expression("m<+1%", "x"), -10, -5).observed, 50.0);
  EXPECT_EQ(evaluate_gate_expression(parse_gate_expression("m==+0%", "x"), 0, 5).observed, 0.0);
  EXPECT_TRUE(evaluate_gate_expression(parse_gate_expression("m!=3", "x"), 0, 2).passed);
  EXPECT_EQ(gate_threshold_text(parse_gate_expression("m<+5%", "x")), "+5%");
  EXPECT_EQ(gate_threshold_text(parse_gate_expression("m<-1", "x")), "-1");
  EXPECT_EQ(gate_threshold_text(parse_gate_expression("m<= 0", "x")), "0");
}

TEST(GateExpression, EachErrorNamesItsColumnAndTheGrammar) {
  struct Case {
    const char* text;
    const char* what;
    int column;
  };
  const Case cases[] = {
      {"<=0", "expected a metric name", 1},
      {"forward_ms", "expected an operator", 11},
      {"forward_ms=<1", "expected an operator", 11},  // '=' alone is not an operator
      {"forward_ms<", "expected a number", 12},
      {"forward_ms<abc", "expected a number", 12},
      {"forward_ms < +x", "expected a number", 15},     // after the sign
      {"forward_ms<5%", "a percentage is a change", 13},
      {"forward_ms<+5%x", "unexpected 'x'", 15},
      {"forward_ms<1 2", "unexpected '2'", 14},
      {"forward_ms<+1e999", "the threshold is out of range (a finite number)", 12},
      {"forward_ms<-150%", "the threshold -150 % is out of range (a change in percent is >= -100 %)", 12},
  };
  for (const Case& c : cases) {
    const std::string message = parse_error(c.text);
    EXPECT_NE(message.find(std::string("--gate '") + c.text + "': " + c.what), std::string::npos) << message;
    EXPECT_NE(message.find("at column " + std::to_string(c.column) + "\n"), std::string::npos) << message;
    // The caret sits under the column: two spaces of indent, then column - 1 spaces.
    EXPECT_NE(message.find("\n  " + std::string(static_cast<std::size_t>(c.column - 1), ' ') + "^\n"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("accepted: METRIC OP VALUE"), std::string::npos) << message;
    EXPECT_NE(message.find("< <= > >= == !="), std::string::npos) << message;
  }
}

TEST(GateExpression, UnknownMetricListsTheValidNames) {
  const GateExpression g = parse_gate_expression("  idle_ms<1", "--gate");
  EXPECT_NO_THROW(require_known_gate_metric(g, {"forward_ms", "idle_ms"}, "--gate"));
  try {
    require_known_gate_metric(parse_gate_expression("  idel_ms<1", "--gate"), {"forward_ms", "idle_ms"}, "--gate");
    ADD_FAILURE() << "an unknown metric was accepted";
  } catch (const InvalidInput& e) {
    EXPECT_EQ(std::string(e.what()),
              "--gate '  idel_ms<1': unknown metric 'idel_ms' at column 3; valid metrics: forward_ms, idle_ms");
  }
}

TEST(GateExpression, FileOrExpression) {
  const auto dir = std::filesystem::temp_directory_path() / "encbench-gate-expression-test";
  std::filesystem::create_directories(dir);
  const auto existing = dir / "gate";  // no .json: a file because it exists
  std::ofstream(existing) << "{}";
  EXPECT_TRUE(names_gate_file(existing.string()));
  EXPECT_TRUE(names_gate_file((dir / "missing.json").string()));  // missing: still a file, named as missing
  EXPECT_FALSE(names_gate_file("mean_ttft_ms<+5%"));
  EXPECT_FALSE(names_gate_file((dir / "missing").string()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace encbench
