// Printers and JSON of a trace diff (trace_diff.hpp). They only read the TraceDiff record.
#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "harness/core/text_escape.hpp"
#include "harness/trace/trace_diff.hpp"

namespace encbench::trace {

namespace {

struct Table {
  std::string title;
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
};

std::string num(double v, int precision = 3) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

// C++ kernel names run to hundreds of characters of template arguments: tables show the head.
std::string short_name(const std::string& name) {
  constexpr std::size_t kMax = 60;
  return name.size() <= kMax ? name : name.substr(0, kMax - 3) + "...";
}

std::string signed_num(double v, int precision = 3) {
  std::ostringstream s;
  s << std::showpos << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

void print_text(std::ostream& out, const Table& t) {
  std::vector<std::size_t> width(t.headers.size(), 0);
  for (std::size_t c = 0; c < t.headers.size(); ++c) width[c] = t.headers[c].size();
  for (const auto& row : t.rows)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  out << t.title << "\n";
  auto line = [&](const std::vector<std::string>& cells) {
    out << " ";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      out << " " << (c == 0 ? std::left : std::right) << std::setw(static_cast<int>(width[c])) << cells[c];
    }
    out << std::right << "\n";
  };
  line(t.headers);
  for (const auto& row : t.rows) line(row);
}

void print_markdown(std::ostream& out, const Table& t) {
  // Op, forward and stream names come from the traces: escaped.
  out << "\n### " << markdown_text(t.title) << "\n\n|";
  for (const auto& h : t.headers) out << " " << markdown_text(h) << " |";
  out << "\n|";
  for (std::size_t c = 0; c < t.headers.size(); ++c) out << (c == 0 ? "---|" : "---:|");
  out << "\n";
  for (const auto& row : t.rows) {
    out << "|";
    for (const auto& cell : row) out << " " << markdown_text(cell) << " |";
    out << "\n";
  }
}

Table metrics_table(const TraceDiff& d) {
  Table t{"per forward (mean over " + std::to_string(d.a.forwards.size()) + " vs " +
              std::to_string(d.b.forwards.size()) + " forwards)",
          {"metric", "A", "B", "B - A"}, {}};
  for (const MetricChange& m : d.metrics) t.rows.push_back({m.name, num(m.a), num(m.b), signed_num(m.delta())});
  return t;
}

Table ops_table(const TraceDiff& d, std::size_t top) {
  Table t{"op names that changed (per forward, largest time change first)",
          {"op", "count A", "count B", "time A us", "time B us", "time B-A us"}, {}};
  for (std::size_t i = 0; i < d.op_changes.size() && i < top; ++i) {
    const OpNameChange& c = d.op_changes[i];
    t.rows.push_back({short_name(c.name), num(c.count_a, 1), num(c.count_b, 1), num(c.time_a_us, 1), num(c.time_b_us, 1),
                      signed_num(c.time_b_us - c.time_a_us, 1)});
  }
  return t;
}

Table streams_table(const TraceSummary& s, const std::string& which) {
  Table t{which + " streams (" + s.device_label + ")",
          {"stream", "ops", "busy_ms", "idle_ms", "host_wait_ms", "sync_stall_ms", "kernel_wait_ms", "other_ms",
           "cross_stream_wait_ms"},
          {}};
  for (const StreamSummary& st : s.streams) {
    auto cls = [&](timeline::GapClass c) {
      const auto it = st.idle_ns_by_class.find(c);
      return num(it == st.idle_ns_by_class.end() ? 0.0 : it->second / 1e6);
    };
    t.rows.push_back({std::to_string(st.stream), std::to_string(st.ops), num(st.busy_ns / 1e6), num(st.idle_ns / 1e6),
                      cls(timeline::GapClass::host_wait), cls(timeline::GapClass::sync_stall),
                      cls(timeline::GapClass::kernel_wait), cls(timeline::GapClass::other),
                      cls(timeline::GapClass::cross_stream_wait)});
  }
  return t;
}

Table forwards_table(const TraceSummary& s, const std::string& which, std::size_t top) {
  Table t{which + " forwards", {"forward", "ms", "ops", "launches", "syncs", "d2h", "idle_ms"}, {}};
  for (std::size_t i = 0; i < s.forwards.size() && i < top; ++i) {
    const ForwardSummary& f = s.forwards[i];
    t.rows.push_back({f.name, num(f.duration_ns / 1e6), std::to_string(f.ops), std::to_string(f.launches),
                      std::to_string(f.syncs), std::to_string(f.d2h_copies), num(f.device_idle_ns / 1e6)});
  }
  return t;
}

std::vector<Table> all_tables(const TraceDiff& d) {
  return {metrics_table(d),          ops_table(d, 20),          forwards_table(d.a, "A", 8),
          forwards_table(d.b, "B", 8), streams_table(d.a, "A"), streams_table(d.b, "B")};
}

std::string gate_line(const GateResult& g) {
  const bool on_change = g.condition.target != GateTarget::after;
  return std::string(g.passed ? "PASS" : "FAIL") + "  " + g.condition.text + "  (observed " +
         (on_change ? signed_num(g.observed) : num(g.observed)) +
         (g.condition.target == GateTarget::change_pct ? " %" : "") + (on_change ? ", B - A" : ", B") + ")";
}

}  // namespace

void print_diff_text(std::ostream& out, const TraceDiff& d, const std::vector<GateResult>& gates) {
  out << "A: " << d.a.source << " (" << d.a.layout << ", " << d.a.device_label << ")\n"
      << "B: " << d.b.source << " (" << d.b.layout << ", " << d.b.device_label << ")\n";
  for (const Table& t : all_tables(d)) {
    out << "\n";
    print_text(out, t);
  }
  if (!gates.empty()) out << "\ngates:\n";
  for (const GateResult& g : gates) out << "  " << gate_line(g) << "\n";
}

void print_diff_markdown(std::ostream& out, const TraceDiff& d, const std::vector<GateResult>& gates) {
  out << "## trace diff\n\n- A: " << markdown_code(d.a.source) << " (" << markdown_text(d.a.layout) << ", "
      << markdown_text(d.a.device_label) << ")\n- B: " << markdown_code(d.b.source) << " (" << markdown_text(d.b.layout)
      << ", " << markdown_text(d.b.device_label) << ")\n";
  for (const Table& t : all_tables(d)) print_markdown(out, t);
  if (!gates.empty()) out << "\n### gates\n\n";
  for (const GateResult& g : gates) out << "- " << markdown_text(gate_line(g)) << "\n";
}

namespace {

nlohmann::json summary_json(const TraceSummary& s) {
  nlohmann::json streams = nlohmann::json::array(), forwards = nlohmann::json::array(), ops = nlohmann::json::array();
  auto classes = [](const std::map<timeline::GapClass, Nanos>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [c, ns] : m) j[std::string(to_string(c))] = ns / 1e6;
    return j;
  };
  for (const StreamSummary& st : s.streams) {
    streams.push_back({{"stream", st.stream}, {"ops", st.ops}, {"busy_ms", st.busy_ns / 1e6},
                       {"idle_ms", st.idle_ns / 1e6}, {"idle_ms_by_class", classes(st.idle_ns_by_class)}});
  }
  for (const ForwardSummary& f : s.forwards) {
    forwards.push_back({{"name", f.name}, {"duration_ms", f.duration_ns / 1e6}, {"ops", f.ops},
                        {"launches", f.launches}, {"syncs", f.syncs}, {"d2h_copies", f.d2h_copies},
                        {"device_busy_ms", f.device_busy_ns / 1e6}, {"device_idle_ms", f.device_idle_ns / 1e6},
                        {"idle_ms_by_class", classes(f.idle_ns_by_class)}});
  }
  for (const OpNameStats& o : s.by_name) {
    ops.push_back({{"name", o.name}, {"count", o.count}, {"total_us", o.total_ns / 1e3},
                   {"mean_us", o.count ? o.total_ns / 1e3 / static_cast<double>(o.count) : 0.0}});
  }
  return {{"source", s.source}, {"layout", s.layout}, {"device", s.device_label}, {"layers", s.layers},
          {"per_forward", s.metrics}, {"streams", streams}, {"forwards", forwards}, {"ops_by_name", ops}};
}

}  // namespace

nlohmann::json to_json(const TraceDiff& d, const std::vector<GateResult>& gates) {
  nlohmann::json metrics = nlohmann::json::array(), changes = nlohmann::json::array();
  nlohmann::json gate_json = nlohmann::json::array();
  for (const MetricChange& m : d.metrics) {
    metrics.push_back({{"metric", m.name}, {"a", m.a}, {"b", m.b}, {"delta", m.delta()}});
  }
  for (const OpNameChange& c : d.op_changes) {
    changes.push_back({{"name", c.name}, {"count_per_forward_a", c.count_a}, {"count_per_forward_b", c.count_b},
                       {"time_per_forward_us_a", c.time_a_us}, {"time_per_forward_us_b", c.time_b_us}});
  }
  for (const GateResult& g : gates) {
    gate_json.push_back({{"condition", g.condition.text}, {"metric", g.condition.metric},
                         {"compares", g.condition.target == GateTarget::after    ? "b"
                                     : g.condition.target == GateTarget::change ? "change"
                                                                                : "change_pct"},
                         {"observed", g.observed}, {"passed", g.passed}});
  }
  return {{"a", summary_json(d.a)}, {"b", summary_json(d.b)}, {"metrics", metrics}, {"op_changes", changes},
          {"gates", gate_json}};
}

}  // namespace encbench::trace
