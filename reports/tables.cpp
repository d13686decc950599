#include "reports/tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "harness/core/number_format.hpp"
#include "harness/core/text_escape.hpp"

namespace encbench::reports {

std::string format_number(double value) { return numbers::grouped(value); }

std::string format_relative_change(const std::optional<double>& rel) {
  if (!rel) return "n/a";
  const char* arrow = *rel > 0 ? " \u2191" : (*rel < 0 ? " \u2193" : " =");
  return numbers::signed_fixed(100.0 * *rel, 2) + "%" + arrow;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') out += ' ';
        else out += ch;
    }
  }
  return out;
}

namespace {

constexpr MetricGroup kTableGroups[] = {MetricGroup::throughput, MetricGroup::latency,
                                        MetricGroup::device, MetricGroup::exact};

std::string format_p(double p) { return p < 0.001 ? "p<0.001" : "p=" + numbers::fixed(p, 3); }

// The Verdict column: verdict, its evidence, and the gate's judgement.
// The evidence of a verdict: its test, n (rounds, or requests of one run a side), p and MDE.
std::string evidence_text(const MetricComparison& r) {
  const judgement::Judgement& j = r.judgement;
  if (j.test == "deterministic") return "deterministic";
  if (j.test == "not testable") return j.reason;
  std::string n = j.requests_a > 0 && j.rounds_a <= 1 && j.rounds_b <= 1
                      ? std::to_string(j.requests_a) + "/" + std::to_string(j.requests_b) + " requests"
                      : std::to_string(j.rounds_a) + "/" + std::to_string(j.rounds_b) + " rounds";
  std::string text = j.test + ", " + n;
  if (r.p_value) text += ", " + format_p(*r.p_value);
  if (j.mde) text += ", MDE " + judgement::format_mde(j);
  return text;
}

std::string verdict_cell(const MetricComparison& r, bool markdown) {
  if (r.verdict == Verdict::none) return "";
  std::string cell = to_string(r.verdict);
  if (!r.judgement.test.empty()) cell += " (" + evidence_text(r) + ")";
  if (r.regression) cell += markdown ? " **REGRESSION**" : " REGRESSION";
  if (!r.accepted.empty()) cell += (markdown ? " **ACCEPTED**: " : " ACCEPTED: ") + r.accepted;
  return cell;
}

struct MetricRow {
  std::string metric, before, after, change, verdict;
  bool group_header = false;
};

std::vector<MetricRow> table_rows(const Comparison& c, bool markdown) {
  std::vector<MetricRow> rows;
  for (MetricGroup g : kTableGroups) {
    std::vector<MetricRow> group;
    for (const auto& r : c.rows) {
      if (r.group != g) continue;
      // A metric with an exact check is shown once, as its check (a condition shows beside it).
      const bool checked = std::any_of(c.exact.begin(), c.exact.end(), [&](const ExactCheck& e) {
        return e.applicable && e.condition.empty() && e.metric == r.name;
      });
      if (checked) continue;
      const bool judged = r.judgement.change.has_value();
      group.push_back({r.label, format_number(r.before), format_number(r.after),
                       judged ? judgement::format_change(r.judgement) : format_relative_change(r.relative_change),
                       verdict_cell(r, markdown)});
    }
    if (g == MetricGroup::exact) {
      for (const auto& e : c.exact) {
        if (!e.applicable) continue;
        group.push_back({e.label, e.before, e.after, e.expectation,
                         !e.accepted.empty() ? (markdown ? "**ACCEPTED**: " : "ACCEPTED: ") + e.accepted
                         : e.passed          ? "OK"
                                             : (markdown ? "**VIOLATED**" : "VIOLATED")});
      }
      // numeric exact-group metrics already listed above get their check beside them
    }
    if (group.empty()) continue;
    rows.push_back({group_title(g), "", "", "", "", true});
    rows.insert(rows.end(), group.begin(), group.end());
  }
  return rows;
}

// Display width of UTF-8 text (arrows are one column).
std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char ch : s) w += (ch & 0xC0) != 0x80 ? 1 : 0;
  return w;
}

std::string pad(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return s + std::string(width > w ? width - w : 0, ' ');
}

// `text` is applied to every name and reason taken from the compared files (Markdown escapes
// them; the terminal shows them as they are).
std::string summary_line(const Comparison& c, std::string (*text)(std::string_view) = nullptr) {
  const auto shown = [text](const std::string& s) { return text != nullptr ? text(s) : s; };
  std::ostringstream out;
  const std::size_t n = c.regression_count();
  std::size_t accepted = 0;
  for (const auto& r : c.rows) accepted += r.accepted.empty() ? 0 : 1;
  for (const auto& e : c.exact) accepted += e.accepted.empty() ? 0 : 1;
  if (n == 0) {
    out << "Gate (" << shown(c.gate_name) << "): PASS";
    if (accepted) out << " (" << accepted << " intended change" << (accepted > 1 ? "s" : "") << " accepted)";
  } else {
    out << "Gate (" << shown(c.gate_name) << "): FAIL, " << n << " regression" << (n > 1 ? "s" : "") << ":";
    for (const auto& r : c.rows)
      if (r.regression)
        out << "\n  - " << shown(r.label) << " " << format_relative_change(r.relative_change) << " " << to_string(r.verdict)
            << " (" << shown(r.reason) << ")";
    for (const auto& e : c.exact)
      if (e.applicable && !e.passed) out << "\n  - " << shown(e.label) << ": " << shown(e.reason);
  }
  return out.str();
}

}  // namespace

bool is_deterministic_metric(const std::string& name) {
  auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  if (has("instructions") || has("virtual")) return true;
  // Arm / side prefixes of ab and preset A/B results ("a.failed", "b.syncs_per_forward").
  std::string base = name;
  if (base.size() > 2 && base[1] == '.' && (base[0] == 'a' || base[0] == 'b')) base = base.substr(2);
  if (base == "failed" || base == "syncs" || base == "syncs_per_forward" || base == "accuracy.verdict")
    return true;
  // Byte counts and peak memory, but not rates such as bytes_per_second.
  const bool rate = has("per_second") || has("/s");
  return !rate && (has("bytes") || has("peak_mem") || has("memory"));
}

std::string metric_kind_name(bool deterministic) { return deterministic ? "deterministic" : "wall-clock"; }

std::vector<std::string> settle_lines(const Comparison& c) {
  std::vector<std::string> lines;
  for (const auto& r : c.rows) {
    if (r.judgement.settle.empty()) continue;
    const std::string line = "To settle NOISY rows (" + r.judgement.reason + "): " + r.judgement.settle;
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  return lines;
}

std::string judged_at_line(const Comparison& c) {
  return "Judged at " + judgement::describe(c.settings) + " (gate defaults; a gate file may set them per metric). "
         "Comparison: the test's change of After vs Before [" + numbers::significant(100 * (1 - c.settings.alpha), 4) +
         " % interval] (with rounds: of the rounds' geometric means); NOISY = not testable with this evidence";
}

std::string verdict_line(const Comparison& c) {
  const std::string summary = summary_line(c);
  return std::string(c.passed() ? "PASS" : "REGRESSION") + ": " + summary.substr(0, summary.find('\n'));
}

std::string render_terminal(const Comparison& c) {
  std::ostringstream out;
  out << "encbench compare (" << to_string(c.kind) << "): " << c.base_source << " -> " << c.new_source << "\n";
  if (!c.identity.model.empty()) out << "  model: " << c.identity.model << "\n";
  if (!c.identity.device.empty()) out << "  device: " << c.identity.device << "\n";
  if (!c.identity.scenario.empty()) out << "  scenario: " << c.identity.scenario << "\n";
  for (const auto& w : c.warnings) out << "WARNING: " << w << "\n";
  for (const auto& n : c.notes) out << "note: " << n << "\n";
  const auto rows = table_rows(c, false);
  const std::vector<std::string> header = {"Metric", "Before", "After", "Comparison", "Verdict"};
  std::size_t widths[5];
  for (int i = 0; i < 5; ++i) widths[i] = display_width(header[i]);
  for (const auto& r : rows) {
    if (r.group_header) continue;
    const std::string* cells[5] = {&r.metric, &r.before, &r.after, &r.change, &r.verdict};
    for (int i = 0; i < 5; ++i) widths[i] = std::max(widths[i], display_width(*cells[i]) + (i == 0 ? 2 : 0));
  }
  auto line = [&](const std::string& a, const std::string& b, const std::string& cc,
                  const std::string& d, const std::string& e) {
    out << pad(a, widths[0]) << "  " << pad(b, widths[1]) << "  " << pad(cc, widths[2]) << "  "
        << pad(d, widths[3]) << "  " << e << "\n";
  };
  out << "Performance Metrics\n";
  line(header[0], header[1], header[2], header[3], header[4]);
  std::size_t total = 8;
  for (auto w : widths) total += w;
  out << std::string(total, '-') << "\n";
  for (const auto& r : rows) {
    if (r.group_header) out << "[" << r.metric << "]\n";
    else line("  " + r.metric, r.before, r.after, r.change, r.verdict);
  }
  out << judged_at_line(c) << "\n";
  for (const auto& line : settle_lines(c)) out << line << "\n";
  // An A/B's own comparison asked no gate: no PASS/FAIL beside its verdicts.
  if (c.gate_requested) out << summary_line(c) << "\n";
  return out.str();
}

std::string render_markdown(const Comparison& c) {
  // Verdict first, then only what moved; the full table (mostly SAME) is folded.
  std::ostringstream out;
  // Names, reasons and gate names come from the files compared: escaped (no line breaks left).
  const std::string summary = summary_line(c, &markdown_text);
  out << "**" << (c.passed() ? "PASS" : "REGRESSION") << "** \u2014 " << summary << "\n\n";
  out << "_" << markdown_text(judged_at_line(c)) << "_\n\n";
  std::vector<MetricRow> moved;
  std::size_t same = 0, noisy = 0;
  for (const auto& r : c.rows) {
    if (r.verdict == Verdict::same) ++same;
    if (r.verdict == Verdict::noisy) ++noisy;
    if (r.verdict != Verdict::faster && r.verdict != Verdict::slower) continue;
    const bool exact = std::any_of(c.exact.begin(), c.exact.end(), [&](const ExactCheck& e) {
      return e.applicable && e.condition.empty() && e.metric == r.name;
    });
    if (exact) continue;
    moved.push_back({markdown_text(r.label), format_number(r.before), format_number(r.after), judgement::format_change(r.judgement),
                     verdict_cell(r, true) + " | " + metric_kind_name(is_deterministic_metric(r.name))});
  }
  for (const auto& e : c.exact)
    if (e.applicable && !e.passed)
      moved.push_back({markdown_text(e.label), markdown_text(e.before), markdown_text(e.after), markdown_text(e.expectation),
                       "**VIOLATED** | deterministic"});
  // Regressions first, then improvements.
  std::stable_partition(moved.begin(), moved.end(), [](const MetricRow& r) {
    return r.verdict.find("REGRESSION") != std::string::npos || r.verdict.find("VIOLATED") != std::string::npos;
  });
  if (!moved.empty()) {
    out << "**Moved beyond noise:**\n";
    out << "| Metric | Before | After | Comparison | Verdict | Kind |\n";
    out << "| :----- | :----- | :---- | :--------- | :------ | :--- |\n";
    for (const auto& r : moved)
      out << "| " << r.metric << " | " << r.before << " | " << r.after << " | " << r.change << " | " << r.verdict
          << " |\n";
    out << "\n";
  } else {
    out << "No metric moved beyond noise.\n\n";
  }
  for (const auto& w : c.warnings) out << "> WARNING: " << markdown_text(w) << "\n";
  for (const auto& line : settle_lines(c)) out << "> " << markdown_text(line) << "\n";
  if (!c.warnings.empty() || !settle_lines(c).empty()) out << "\n";
  out << "<details><summary>All " << c.rows.size() << " metrics (" << same << " SAME, " << noisy
      << " NOISY) and exact checks</summary>\n\n";
  out << "**Performance Metrics:**\n";
  out << "| Metric | Before | After | Comparison | Verdict |\n";
  out << "| :----- | :----- | :---- | :--------- | :------ |\n";
  for (const auto& r : table_rows(c, true)) {
    if (r.group_header) out << "| **" << r.metric << "** | | | | |\n";
    else out << "| " << markdown_text(r.metric) << " | " << markdown_text(r.before) << " | " << markdown_text(r.after)
             << " | " << r.change << " | " << r.verdict << " |\n";
  }
  out << "\n</details>\n\n";
  out << "BASE: " << markdown_code(c.base_source) << ", NEW: " << markdown_code(c.new_source) << "; judged at "
      << judgement::describe(c.settings) << " (docs/reports.md, Verdicts).\n";
  return out.str();
}

std::string render_junit(const Comparison& c) {
  std::ostringstream body;
  std::size_t tests = 0, failures = 0;
  // Verdict-first order: failures, then improvements, NOISY, SAME.
  std::vector<const MetricComparison*> ordered;
  for (const auto& r : c.rows)
    if (r.rule.gated) ordered.push_back(&r);
  auto rank = [](const MetricComparison* r) {
    return r->regression ? 0 : r->verdict == Verdict::faster ? 1 : r->verdict == Verdict::noisy ? 2 : 3;
  };
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const MetricComparison* a, const MetricComparison* b) { return rank(a) < rank(b); });
  std::vector<const ExactCheck*> failed_exact, passed_exact;
  for (const auto& e : c.exact)
    if (e.applicable) (e.passed ? passed_exact : failed_exact).push_back(&e);
  auto exact_case = [&](const ExactCheck& e) {
    ++tests;
    body << "    <testcase classname=\"encbench.compare.exact\" name=\"" << xml_escape(e.metric) << "\">";
    if (!e.passed) {
      ++failures;
      body << "\n      <failure message=\"" << xml_escape(e.label + ": " + e.reason)
           << "\" type=\"exact\"/>\n    ";
    }
    body << "</testcase>\n";
  };
  for (const ExactCheck* e : failed_exact) exact_case(*e);
  for (const MetricComparison* rp : ordered) {
    const MetricComparison& r = *rp;
    ++tests;
    body << "    <testcase classname=\"encbench.compare." << xml_escape(to_string(c.kind)) << "\" name=\""
         << xml_escape(r.name) << "\">";
    // Appended piece by piece: g++ 12 warns (-Wrestrict, a known false positive) on the
    // literal + temporary chain this was.
    std::string detail = "[";
    detail += metric_kind_name(is_deterministic_metric(r.name));
    detail += "] " + r.label + ": " + format_number(r.before) + " -> " + format_number(r.after);
    detail += " (" + format_relative_change(r.relative_change) + "), ";
    detail += to_string(r.verdict);
    detail += ": " + r.reason;
    if (r.regression) {
      ++failures;
      body << "\n      <failure message=\"" << xml_escape(detail) << "\" type=\"regression\"/>\n    ";
    } else {
      body << "<system-out>" << xml_escape(detail) << "</system-out>";
    }
    body << "</testcase>\n";
  }
  for (const ExactCheck* e : passed_exact) exact_case(*e);
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"encbench compare\" tests=\"" << tests << "\" failures=\"" << failures << "\">\n";
  out << "  <testsuite name=\"encbench.compare\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" errors=\"0\" skipped=\"0\">\n";
  out << "    <properties>\n";
  out << "      <property name=\"verdict\" value=\"" << xml_escape(verdict_line(c)) << "\"/>\n";
  out << "      <property name=\"base\" value=\"" << xml_escape(c.base_source) << "\"/>\n";
  out << "      <property name=\"new\" value=\"" << xml_escape(c.new_source) << "\"/>\n";
  out << "      <property name=\"gate\" value=\"" << xml_escape(c.gate_name) << "\"/>\n";
  out << "    </properties>\n";
  out << body.str();
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

}  // namespace encbench::reports
