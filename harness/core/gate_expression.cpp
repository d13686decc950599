#include "harness/core/gate_expression.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "harness/core/error.hpp"
#include "harness/core/number_format.hpp"

namespace encbench {
namespace {

constexpr std::string_view kOperators[] = {"<=", ">=", "==", "!=", "<", ">"};

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool ends_metric(char c) { return is_space(c) || c == '<' || c == '>' || c == '=' || c == '!'; }

// One parse of one expression: a cursor over its text, and errors that point at a column.
class ExpressionReader {
 public:
  ExpressionReader(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    const std::string caret = std::string(at, ' ') + "^";
    throw InvalidInput(std::string(source_) + " '" + std::string(text_) + "': " + what + " at column " +
                       std::to_string(at + 1) + "\n  " + std::string(text_) + "\n  " + caret + "\n" +
                       gate_expression_grammar());
  }
  void skip_spaces() {
    while (at_ < text_.size() && is_space(text_[at_])) ++at_;
  }
  std::string metric() {
    skip_spaces();
    const std::size_t start = at_;
    while (at_ < text_.size() && !ends_metric(text_[at_])) ++at_;
    if (at_ == start) fail(start, "expected a metric name");
    return std::string(text_.substr(start, at_ - start));
  }
  std::string op() {
    skip_spaces();
    for (const std::string_view candidate : kOperators)
      if (text_.substr(at_).starts_with(candidate)) {
        at_ += candidate.size();
        return std::string(candidate);
      }
    fail(at_, "expected an operator (< <= > >= == !=)");
  }
  void value(GateExpression& g) {
    skip_spaces();
    const std::size_t start = at_;
    const bool signed_value = at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-');
    if (at_ < text_.size() && text_[at_] == '+') ++at_;  // from_chars reads '-' only
    const char* first = text_.data() + at_;
    const auto [end, ec] = std::from_chars(first, text_.data() + text_.size(), g.value);
    if (end == first) fail(at_, "expected a number");
    if (ec == std::errc::result_out_of_range || !std::isfinite(g.value))
      fail(start, "the threshold is out of range (a finite number)");
    at_ += static_cast<std::size_t>(end - first);
    g.target = signed_value ? GateTarget::change : GateTarget::after;
    if (at_ < text_.size() && text_[at_] == '%') {
      if (!signed_value) fail(at_, "a percentage is a change: write it signed (+5%, -10%)");
      if (g.value < -100)
        fail(start, "the threshold " + numbers::significant(g.value, 4) +
                        " % is out of range (a change in percent is >= -100 %)");
      g.target = GateTarget::change_pct;
      ++at_;
    }
    skip_spaces();
    if (at_ < text_.size()) fail(at_, "unexpected '" + std::string(1, text_[at_]) + "' after the number");
  }

 private:
  std::string_view text_, source_;
  std::size_t at_ = 0;
};

}  // namespace

std::string gate_expression_grammar() {
  return "accepted: METRIC OP VALUE (spaces allowed between them)\n"
         "  OP     < <= > >= == !=\n"
         "  VALUE  N       compares B's value           e.g. syncs_per_forward<=0\n"
         "         +N, -N  compares B minus A           e.g. idle_pct<+1\n"
         "         +N%     compares (B - A) / |A| in %  e.g. forward_ms<+5%  (N% >= -100)";
}

GateExpression parse_gate_expression(std::string_view text, std::string_view source) {
  ExpressionReader reader(text, source);
  GateExpression g;
  g.text = std::string(text);
  g.metric = reader.metric();
  g.op = reader.op();
  reader.value(g);
  return g;
}

void require_known_gate_metric(const GateExpression& g, const std::vector<std::string>& known,
                               std::string_view source) {
  for (const std::string& name : known)
    if (name == g.metric) return;
  std::string names;
  for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
  const std::size_t column = g.text.find(g.metric);
  throw InvalidInput(std::string(source) + " '" + g.text + "': unknown metric '" + g.metric + "' at column " +
                     std::to_string((column == std::string::npos ? 0 : column) + 1) +
                     "; valid metrics: " + (names.empty() ? "(none in these inputs)" : names));
}

GateObservation evaluate_gate_expression(const GateExpression& g, double before, double after) {
  GateObservation r;
  r.observed = g.target == GateTarget::after    ? after
               : g.target == GateTarget::change ? after - before
               : before != 0                    ? 100.0 * (after - before) / std::abs(before)
                                                : 0.0;
  const double x = r.observed, v = g.value;
  r.passed = g.op == "<"    ? x < v
             : g.op == "<=" ? x <= v
             : g.op == ">"  ? x > v
             : g.op == ">=" ? x >= v
             : g.op == "==" ? x == v
                            : x != v;
  return r;
}

std::string gate_threshold_text(const GateExpression& g) {
  const std::string number = numbers::significant(g.value, 6);
  if (g.target == GateTarget::after) return number;
  return (g.value >= 0 ? "+" : "") + number + (g.target == GateTarget::change_pct ? "%" : "");
}

bool names_gate_file(const std::string& argument) {
  std::error_code ec;
  return argument.ends_with(".json") || std::filesystem::exists(argument, ec);
}

}  // namespace encbench
