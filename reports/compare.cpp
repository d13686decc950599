#include "reports/compare.hpp"

#include "harness/core/number_format.hpp"
#include "harness/core/glob.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"

namespace encbench::reports {

using nlohmann::json;


namespace {

MetricGroup parse_group(const std::string& name, const std::string& source) {
  for (auto g : {MetricGroup::throughput, MetricGroup::latency, MetricGroup::device,
                 MetricGroup::exact, MetricGroup::info})
    if (to_string(g) == name) return g;
  throw InvalidInput(source + ": unknown metric group '" + name +
                     "' (throughput, latency, device, exact, info)");
}

double fraction_field(const json& doc, const char* key, double fallback, const std::string& source) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return fallback;
  require(it->is_number() && it->get<double>() >= 0,
          source + ": '" + key + "' must be a non-negative number");
  return it->get<double>();
}

void apply_overrides(MetricRule& rule, const json& o, const std::string& source) {
  rule.relative = fraction_field(o, "relative", rule.relative, source);
  rule.absolute = fraction_field(o, "absolute", rule.absolute, source);
  rule.alpha = fraction_field(o, "alpha", rule.alpha, source);
  // 'noise_floor' (older gate files) is read and ignored: one value a side is now never judged
  // against a floor but called NOISY (not testable).
  (void)fraction_field(o, "noise_floor", 0, source);
  rule.power = fraction_field(o, "power", rule.power, source);
  require(rule.alpha > 0 && rule.alpha < 0.5, source + ": 'alpha' must be in (0, 0.5)");
  require(rule.power > 0.5 && rule.power < 1, source + ": 'power' must be in (0.5, 1)");
  require(rule.relative < 1, source + ": 'relative' must be a fraction below 1 (0.05 = 5 %)");
  if (o.contains("gate")) {
    require(o["gate"].is_boolean(), source + ": 'gate' must be true or false");
    rule.gated = o["gate"].get<bool>();
  }
}

// A gate file's "conditions": a list of expressions in the one gate language, each error naming
// its entry ("gate.json: conditions[1]").
std::vector<GateExpression> parse_gate_conditions(const json& doc, const std::string& source) {
  std::vector<GateExpression> conditions;
  if (!doc.contains("conditions")) return conditions;
  require(doc["conditions"].is_array(), source + ": 'conditions' must be a list of expressions like \"mean_ttft_ms<+5%\"");
  for (std::size_t i = 0; i < doc["conditions"].size(); ++i) {
    const json& c = doc["conditions"][i];
    const std::string where = source + ": conditions[" + std::to_string(i) + "]";
    require(c.is_string(), where + " must be a string like \"mean_ttft_ms<+5%\"");
    conditions.push_back(parse_gate_expression(c.get<std::string>(), where));
  }
  return conditions;
}

}  // namespace

MetricRule Gate::rule_for(const Metric& metric) const { return rule_for(metric, deterministic_by_name(metric.name)); }

MetricRule Gate::rule_for(const Metric& metric, bool det) const {
  MetricRule rule = det ? deterministic : defaults;
  rule.alpha = alpha;
  rule.gated = metric.better != Better::none &&
               (det ? deterministic.gated
                    : std::find(default_groups.begin(), default_groups.end(), metric.group) !=
                          default_groups.end());
  for (const auto& pr : metric_rules) {
    if (!glob_one(pr.match, metric.name)) continue;
    if (!pr.overrides.contains("gate")) rule.gated = metric.better != Better::none;
    apply_overrides(rule, pr.overrides, name);
  }
  if (metric.better == Better::none) rule.gated = false;
  return rule;
}

void apply_settings(Gate& gate, const judgement::Settings& settings) {
  judgement::validate(settings);
  gate.alpha = settings.alpha;
  gate.defaults.relative = settings.threshold;
  gate.defaults.alpha = settings.alpha;
  gate.defaults.power = settings.power;
  gate.deterministic.alpha = settings.alpha;
  gate.deterministic.power = settings.power;
}

Gate default_gate(const judgement::Settings& settings) {
  Gate gate = default_gate();
  apply_settings(gate, settings);
  return gate;
}

Gate default_gate() {
  Gate gate;
  gate.exact.push_back({"failed", json(0), {}});
  gate.exact.push_back({"accuracy.verdict", std::nullopt, {json("PASS"), json("SKIPPED")}});
  gate.exact.push_back({"a.accuracy.verdict", std::nullopt, {json("PASS"), json("SKIPPED")}});
  gate.exact.push_back({"b.accuracy.verdict", std::nullopt, {json("PASS"), json("SKIPPED")}});
  return gate;
}

Gate parse_gate_file(const json& doc, const std::string& source) {
  require(doc.is_object(), source + ": a gate file is a JSON object");
  if (doc.contains("schema"))
    require(doc["schema"] == "encbench-gate", source + ": schema must be \"encbench-gate\"");
  if (doc.contains("schema_version"))
    require(doc["schema_version"] == 1, source + ": only gate schema_version 1 is supported");
  static const char* kKeys[] = {"schema", "schema_version", "description", "alpha", "power", "defaults",
                                "deterministic", "metrics", "exact", "warn_below_samples", "conditions"};
  for (const auto& [key, value] : doc.items()) {
    (void)value;
    require(std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys),
            source + ": unknown gate key '" + key + "'");
  }
  Gate gate;
  gate.name = source;
  gate.exact.clear();
  gate.alpha = fraction_field(doc, "alpha", gate.alpha, source);
  require(gate.alpha > 0 && gate.alpha < 0.5, source + ": 'alpha' must be in (0, 0.5)");
  gate.defaults.power = fraction_field(doc, "power", gate.defaults.power, source);
  require(gate.defaults.power > 0.5 && gate.defaults.power < 1, source + ": 'power' must be in (0.5, 1)");
  gate.warn_below_samples = static_cast<std::size_t>(
      fraction_field(doc, "warn_below_samples", static_cast<double>(gate.warn_below_samples), source));
  if (doc.contains("defaults")) {
    const json& d = doc["defaults"];
    require(d.is_object(), source + ": 'defaults' must be an object");
    if (d.contains("groups")) {
      require(d["groups"].is_array(), source + ": 'defaults.groups' must be a list");
      gate.default_groups.clear();
      for (const auto& g : d["groups"]) {
        require(g.is_string(), source + ": 'defaults.groups' must hold strings");
        gate.default_groups.push_back(parse_group(g.get<std::string>(), source));
      }
    }
    apply_overrides(gate.defaults, d, source);
  }
  gate.defaults.alpha = gate.alpha;
  if (doc.contains("deterministic")) {
    const json& d = doc["deterministic"];
    require(d.is_object(), source + ": 'deterministic' must be an object");
    for (const auto& [key, value] : d.items()) {
      (void)value;
      require(key == "relative" || key == "absolute" || key == "gate",
              source + ": unknown key 'deterministic." + key + "' (relative, absolute, gate)");
    }
    apply_overrides(gate.deterministic, d, source);
  }
  gate.deterministic.alpha = gate.alpha;
  if (doc.contains("metrics")) {
    require(doc["metrics"].is_array(), source + ": 'metrics' must be a list of {\"match\": ...}");
    for (const auto& m : doc["metrics"]) {
      require(m.is_object() && m.contains("match") && m["match"].is_string(),
              source + ": each 'metrics' entry needs a \"match\" string (a metric name or glob)");
      MetricRule probe;
      apply_overrides(probe, m, source);  // validates the fields now, not at use
      gate.metric_rules.push_back({m["match"].get<std::string>(), m});
    }
  }
  if (doc.contains("exact")) {
    require(doc["exact"].is_array(), source + ": 'exact' must be a list");
    for (const auto& e : doc["exact"]) {
      ExactRule rule;
      if (e.is_string()) {
        rule.metric = e.get<std::string>();
      } else {
        require(e.is_object() && e.contains("metric") && e["metric"].is_string(),
                source + ": each 'exact' entry is a metric name or {\"metric\": ..., \"equals\"|\"one_of\"}");
        rule.metric = e["metric"].get<std::string>();
        if (e.contains("equals")) rule.equals = e["equals"];
        if (e.contains("one_of")) {
          require(e["one_of"].is_array(), source + ": 'one_of' must be a list");
          rule.one_of.assign(e["one_of"].begin(), e["one_of"].end());
        }
      }
      gate.exact.push_back(std::move(rule));
    }
  }
  gate.conditions = parse_gate_conditions(doc, source);
  return gate;
}

Gate load_gate(const std::string& path) { return parse_gate_file(read_json_file(path), path); }

// ---------------------------------------------------------------------------------------------
// verdicts: every row is judged by judgement::judge (docs/reports.md, "Verdicts")

namespace {

std::string fmt(double v, int precision = 4) { return numbers::significant(v, precision); }

// The widest relative spread (max - min over the median) of a metric's samples and of its pooled
// runs' values: a metric whose name says deterministic must not scatter.
double relative_range(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  const double mid = std::fabs(stats::median(xs));
  return mid == 0 ? 0 : (*hi - *lo) / mid;
}
double scatter_of(const Metric& m) { return std::max(relative_range(m.samples), relative_range(m.run_values)); }
bool scatters(const Metric& m) {
  const auto differ = [](const std::vector<double>& xs) {
    return !xs.empty() && std::any_of(xs.begin(), xs.end(), [&](double x) { return x != xs.front(); });
  };
  return differ(m.samples) || differ(m.run_values);
}

judgement::Settings settings_of(const MetricRule& rule) {
  return {rule.relative, rule.absolute, rule.alpha, rule.power};
}

judgement::StatisticKind statistic_kind(const Metric& m) {
  using K = judgement::StatisticKind::Kind;
  switch (m.statistic) {
    case Statistic::mean: return {K::mean, 0};
    case Statistic::median: return {K::median, 50};
    case Statistic::percentile: return {K::percentile, m.percentile_q};
    case Statistic::point: return {K::value, 0};
  }
  return {K::value, 0};
}

// A side's evidence: its rounds (each merged run's own value, or Google Benchmark repetitions,
// or single-value metrics pooled as one value a run), else its per-request samples of one run.
judgement::Evidence evidence_of(const Metric& m, bool deterministic) {
  judgement::Evidence e;
  e.value = m.value;
  e.deterministic = deterministic;
  if (m.run_values.size() >= 2) {
    e.rounds = m.run_values;
    e.requests_per_round = m.samples.size() / m.run_values.size();
  }
  else if (m.sample_kind == "runs" || m.sample_kind == "repetitions") e.rounds = m.samples;
  else if (m.statistic != Statistic::point) e.requests = m.samples;
  return e;
}

void take_judgement(MetricComparison& row, judgement::Judgement j) {
  row.verdict = j.verdict;
  row.method = j.test;
  row.p_value = j.p_value;
  row.reason = j.reason;
  row.judgement = std::move(j);
}

std::string text_of(const Metric* m) {
  if (!m) return "(missing)";
  if (m->text) return *m->text;
  return fmt(m->value, 10);
}

bool json_equals_metric(const json& expected, const Metric& m) {
  if (m.text) return expected.is_string() && expected.get<std::string>() == *m.text;
  if (expected.is_number()) return expected.get<double>() == m.value;
  if (expected.is_string()) return fmt(m.value, 10) == expected.get<std::string>();
  return false;
}

ExactCheck check_exact(const ExactRule& rule, const RunResult* base, const RunResult& next) {
  ExactCheck check;
  check.metric = rule.metric;
  const Metric* b = base ? base->find(rule.metric) : nullptr;
  const Metric* n = next.find(rule.metric);
  check.label = n ? n->label : (b ? b->label : rule.metric);
  check.before = base ? text_of(b) : "";
  check.after = text_of(n);
  if (!b && !n) {
    check.applicable = false;
    check.expectation = "n/a";
    check.reason = "not in these results";
    return check;
  }
  if (!n) {
    check.passed = false;
    check.reason = "missing in NEW";
    return check;
  }
  if (rule.equals) {
    check.expectation = "== " + (rule.equals->is_string() ? rule.equals->get<std::string>() : rule.equals->dump());
    check.passed = json_equals_metric(*rule.equals, *n);
  } else if (!rule.one_of.empty()) {
    check.expectation = "one of [";
    check.passed = false;
    for (std::size_t i = 0; i < rule.one_of.size(); ++i) {
      const auto& v = rule.one_of[i];
      check.expectation += (i ? ", " : "") + (v.is_string() ? v.get<std::string>() : v.dump());
      check.passed = check.passed || json_equals_metric(v, *n);
    }
    check.expectation += "]";
  } else {
    check.expectation = "unchanged";
    if (!base) {
      check.applicable = false;
      check.reason = "no single BASE to compare with";
      return check;
    }
    if (!b) {
      check.passed = false;
      check.reason = "missing in BASE";
      return check;
    }
    check.passed = b->text ? (n->text && *b->text == *n->text) : (!n->text && b->value == n->value);
  }
  check.reason = check.passed ? "ok" : "expected " + check.expectation + ", got " + check.after;
  return check;
}

// Google Benchmark repetitions: like compare.py, fewer than 9 a side is flagged (the rounds of a
// serving A/B instead carry their MDE, which says the same in the metric's own unit).
void add_sample_warnings(Comparison& c, const MetricComparison& row, const Gate& gate) {
  if (row.method == "deterministic" || row.better == Better::none || row.sample_kind != "repetitions") return;
  const std::size_t n = std::min(row.n_before, row.n_after);
  if (n >= 2 && n < gate.warn_below_samples) {
    const std::string msg = "Results unreliable! " + std::to_string(gate.warn_below_samples) +
                            "+ repetitions recommended (" + row.sample_kind + ": " +
                            std::to_string(row.n_before) + " vs " + std::to_string(row.n_after) + ")";
    if (std::find(c.warnings.begin(), c.warnings.end(), msg) == c.warnings.end()) c.warnings.push_back(msg);
  }
}

// The gate's family: each gated metric is judged at alpha, but a gate over m of them would raise a
// false alarm in up to m * alpha / 2 of clean runs. A SLOWER row fails the gate only when Holm's
// step-down procedure over the gated, tested rows (p-values ascending, the i-th at
// alpha / (m - i)) still rejects it; deterministic rows carry no p and stay as judged.
void apply_family_correction(Comparison& c) {
  std::vector<MetricComparison*> family;
  for (auto& r : c.rows)
    if (r.rule.gated && r.p_value && !r.deterministic) family.push_back(&r);
  std::sort(family.begin(), family.end(),
            [](const MetricComparison* x, const MetricComparison* y) { return *x->p_value < *y->p_value; });
  const std::size_t m = family.size();
  bool rejecting = true;
  for (std::size_t i = 0; i < m; ++i) {
    MetricComparison& r = *family[i];
    const double level = r.rule.alpha / static_cast<double>(m - i);
    rejecting = rejecting && *r.p_value <= level;
    if (r.regression && !rejecting) {
      r.regression = false;
      r.reason += "; not a regression: p above Holm's " + fmt(level, 3) + " over " + std::to_string(m) + " gated metrics";
    }
  }
  if (m > 1) c.notes.push_back("gate: " + std::to_string(m) + " gated metrics tested; a regression must hold after "
                               "Holm's correction (family-wise alpha " + fmt(c.settings.alpha, 3) + ")");
}

MetricComparison start_row(const Metric& base, const Metric& next, const Gate& gate) {
  MetricComparison row;
  row.name = next.name;
  row.label = next.label;
  row.unit = next.unit;
  row.group = next.group;
  row.better = next.better;
  row.before = base.value;
  row.after = next.value;
  if (base.value != 0) row.relative_change = (next.value - base.value) / std::fabs(base.value);
  row.rule = gate.rule_for(next);
  return row;
}

void toggle_notes(Comparison& c, const RunResult& base, const RunResult& next) {
  if (base.kind != ResultKind::encode) return;
  const json tb = base.raw.value("toggles", json()), tn = next.raw.value("toggles", json());
  if (tb.is_object() && tn.is_object() && tb != tn)
    c.notes.push_back("toggles differ: BASE " + tb.dump() + " vs NEW " + tn.dump());
}

}  // namespace

AcceptedChange parse_accepted_change(const std::string& spec, const std::string& flag) {
  const auto eq = spec.find('=');
  require(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(),
          flag + " '" + spec + "': expected GLOB=REASON (a metric glob and why the change is intended)");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

std::size_t apply_accepted_changes(Comparison& comparison, const std::vector<AcceptedChange>& accepted) {
  auto match = [&](const std::string& metric) -> const AcceptedChange* {
    for (const auto& a : accepted)
      if (glob_one(a.match, metric)) return &a;
    return nullptr;
  };
  std::size_t n = 0;
  for (auto& r : comparison.rows) {
    const AcceptedChange* a = r.regression ? match(r.name) : nullptr;
    if (!a) continue;
    r.regression = false;
    r.accepted = a->reason;
    ++n;
  }
  for (auto& e : comparison.exact) {
    const AcceptedChange* a = (e.applicable && !e.passed) ? match(e.metric) : nullptr;
    if (!a) continue;
    e.passed = true;
    e.accepted = a->reason;
    ++n;
  }
  for (const auto& a : accepted) comparison.notes.push_back("accepted change " + a.match + ": " + a.reason);
  return n;
}

std::size_t Comparison::regression_count() const {
  std::size_t n = 0;
  for (const auto& r : rows) n += r.regression ? 1 : 0;
  for (const auto& e : exact) n += (e.applicable && !e.passed) ? 1 : 0;
  return n;
}

Comparison compare_runs(const RunResult& base, const RunResult& next, const Gate& gate,
                        judgement::RoundDesign design) {
  require_comparable(base, next);
  Comparison c;
  c.kind = next.kind;
  c.base_source = base.source;
  c.new_source = next.source;
  c.baseline_mode = "file";
  c.identity = next.identity;
  c.gate_name = gate.name;
  c.alpha = gate.alpha;
  c.settings = settings_of(gate.defaults);
  c.notes = base.notes;
  c.notes.insert(c.notes.end(), next.notes.begin(), next.notes.end());
  toggle_notes(c, base, next);
  for (const auto& m : next.metrics) {
    const Metric* b = base.find(m.name);
    if (!b) {
      c.notes.push_back("metric " + m.name + " only in NEW");
      continue;
    }
    if (m.text || b->text) continue;  // string metrics only take part in exact checks
    MetricComparison row = start_row(*b, m, gate);
    row.n_before = b->samples.size();
    row.n_after = m.samples.size();
    row.sample_kind = m.sample_kind.empty() ? b->sample_kind : m.sample_kind;
    row.deterministic = deterministic_by_name(row.name);
    // The premise of a deterministic verdict: repeated measurements agree. A metric whose own
    // samples within one run (or pooled runs) differ is a measurement, whatever its name says.
    std::string premise;
    if (row.deterministic && (scatters(*b) || scatters(m))) {
      premise = "samples within one run differ (BASE range " + fmt(100 * scatter_of(*b), 4) + "%, NEW range " +
                fmt(100 * scatter_of(m), 4) + "%): not judged as deterministic, wall-clock rule; ";
      row.deterministic = false;
      row.rule = gate.rule_for(m, false);
      c.warnings.push_back(row.name + ": " + premise + "its name says deterministic");
    }
    if (row.better == Better::none) {
      row.method = "info";
      row.verdict = Verdict::none;
    } else {
      take_judgement(row, judgement::judge(evidence_of(*b, row.deterministic), evidence_of(m, row.deterministic),
                                           statistic_kind(m), row.better == Better::higher, settings_of(row.rule),
                                           design));
      if (row.deterministic) row.noise_floor_used = std::max(relative_range(b->samples), relative_range(m.samples));
    }
    if (!premise.empty()) row.reason = premise + row.reason;
    row.regression = row.rule.gated && row.verdict == Verdict::slower;
    add_sample_warnings(c, row, gate);
    c.rows.push_back(std::move(row));
  }
  for (const auto& m : base.metrics)
    if (!next.find(m.name)) c.notes.push_back("metric " + m.name + " only in BASE");
  apply_family_correction(c);
  for (const auto& rule : gate.exact) c.exact.push_back(check_exact(rule, &base, next));
  return c;
}

Comparison compare_with_history(const std::vector<RunResult>& history, const RunResult& next,
                                const Gate& gate) {
  require(!history.empty(), "the history has no earlier runs of this series to compare with");
  for (const auto& h : history) require_comparable(h, next);
  Comparison c;
  c.kind = next.kind;
  c.base_source = "history (" + std::to_string(history.size()) + " runs)";
  c.new_source = next.source;
  c.baseline_mode = "history:" + std::to_string(history.size());
  c.identity = next.identity;
  c.gate_name = gate.name;
  c.alpha = gate.alpha;
  c.settings = settings_of(gate.defaults);
  c.notes = next.notes;
  for (const auto& m : next.metrics) {
    if (m.text) continue;
    std::vector<double> values;
    for (const auto& h : history)
      if (const Metric* hm = h.find(m.name)) values.push_back(hm->value);
    if (values.empty()) continue;
    Metric base = m;
    base.value = stats::mean(values);
    base.samples = values;
    base.sample_kind = "runs";
    MetricComparison row = start_row(base, m, gate);
    row.n_before = values.size();
    row.n_after = 1;
    row.sample_kind = "runs";
    if (row.better == Better::none) {
      row.method = "info";
    } else {
      take_judgement(row, judgement::judge_against_history(values, m.value, row.better == Better::higher,
                                                           settings_of(row.rule)));
      if (row.judgement.ci_low && values.size() >= 2) {
        // The prediction interval in the metric's unit, as the history page draws it.
        const double center = row.before;
        row.interval_low = center * (1 + *row.judgement.ci_low) / (1 + *row.judgement.change);
        row.interval_high = center * (1 + *row.judgement.ci_high) / (1 + *row.judgement.change);
      }
    }
    row.regression = row.rule.gated && row.verdict == Verdict::slower;
    add_sample_warnings(c, row, gate);
    c.rows.push_back(std::move(row));
  }
  apply_family_correction(c);
  const RunResult* last = &history.back();
  for (const auto& rule : gate.exact) {
    // "unchanged" checks compare with the most recent accepted run.
    c.exact.push_back(check_exact(rule, last, next));
  }
  return c;
}

// ---------------------------------------------------------------------------------------------

json to_json(const Comparison& c) {
  json rows = json::array();
  for (const auto& r : c.rows) {
    json row = {{"metric", r.name},
                {"label", r.label},
                {"unit", r.unit},
                {"group", to_string(r.group)},
                {"better", to_string(r.better)},
                {"before", r.before},
                {"after", r.after},
                {"relative_change", r.relative_change ? json(*r.relative_change) : json()},
                {"n_before", r.n_before},
                {"n_after", r.n_after},
                {"sample_kind", r.sample_kind},
                {"method", r.method},
                {"p_value", r.p_value ? json(*r.p_value) : json()},
                {"verdict", to_string(r.verdict)},
                {"gated", r.rule.gated},
                {"threshold_relative", r.rule.relative},
                {"threshold_absolute", r.rule.absolute},
                {"alpha", r.rule.alpha},
                {"regression", r.regression},
                {"reason", r.reason}};
    if (!r.accepted.empty()) row["accepted"] = r.accepted;
    row["deterministic"] = r.deterministic;
    if (r.method == "deterministic") row["sample_range_relative"] = r.noise_floor_used;
    const judgement::Judgement& j = r.judgement;
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
    row["test"] = j.test;
    row["rounds"] = {j.rounds_a, j.rounds_b};
    row["requests"] = {j.requests_a, j.requests_b};
    row["change"] = opt(j.change);
    row["change_interval"] = j.ci_low ? json({*j.ci_low, *j.ci_high}) : json();
    row["mde_relative"] = opt(j.mde);
    row["power"] = r.rule.power;
    if (!j.settle.empty()) row["to_settle"] = j.settle;
    if (!j.caveat.empty()) row["caveat"] = j.caveat;
    if (r.interval_low) row["prediction_interval"] = {*r.interval_low, *r.interval_high};
    rows.push_back(std::move(row));
  }
  json exact = json::array();
  for (const auto& e : c.exact) {
    json check = {{"metric", e.metric},       {"label", e.label},   {"before", e.before},
                  {"after", e.after},         {"expectation", e.expectation},
                  {"applicable", e.applicable}, {"passed", e.passed}, {"reason", e.reason}};
    if (!e.accepted.empty()) check["accepted"] = e.accepted;
    if (!e.condition.empty()) check["condition"] = e.condition;
    exact.push_back(std::move(check));
  }
  return {{"kind", to_string(c.kind)},
          {"base", c.base_source},
          {"new", c.new_source},
          {"baseline_mode", c.baseline_mode},
          {"identity",
           {{"model", c.identity.model},
            {"device", c.identity.device},
            {"dataset", c.identity.dataset},
            {"scenario", c.identity.scenario}}},
          {"gate", c.gate_name},
          {"alpha", c.alpha},
          {"judged_at", {{"threshold_relative", c.settings.threshold}, {"alpha", c.settings.alpha},
                         {"power", c.settings.power}, {"rule", judgement::describe(c.settings)}}},
          {"metrics", rows},
          {"exact_checks", exact},
          {"warnings", c.warnings},
          {"notes", c.notes},
          {"gate_requested", c.gate_requested},
          {"regressions", c.regression_count()},
          {"passed", c.passed()},
          {"exit_code", c.exit_code()}};
}

}  // namespace encbench::reports
