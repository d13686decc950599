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

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::faster: return "FASTER";
    case Verdict::slower: return "SLOWER";
    case Verdict::same: return "SAME";
    case Verdict::noisy: return "NOISY";
    case Verdict::none: return "-";
  }
  return "-";
}

bool glob_match(const std::string& pattern, const std::string& text) { return glob_one(pattern, text); }

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
  rule.noise_floor = fraction_field(o, "noise_floor", rule.noise_floor, source);
  require(rule.alpha > 0 && rule.alpha < 1, source + ": 'alpha' must be in (0, 1)");
  if (o.contains("gate")) {
    require(o["gate"].is_boolean(), source + ": 'gate' must be true or false");
    rule.gated = o["gate"].get<bool>();
  }
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
    if (!glob_match(pr.match, metric.name)) continue;
    if (!pr.overrides.contains("gate")) rule.gated = metric.better != Better::none;
    apply_overrides(rule, pr.overrides, name);
  }
  if (metric.better == Better::none) rule.gated = false;
  return rule;
}

Gate default_gate() {
  Gate gate;
  gate.exact.push_back({"failed", json(0), {}});
  gate.exact.push_back({"accuracy.verdict", std::nullopt, {json("PASS"), json("SKIPPED")}});
  gate.exact.push_back({"a.accuracy.verdict", std::nullopt, {json("PASS"), json("SKIPPED")}});
  gate.exact.push_back({"b.accuracy.verdict", std::nullopt, {json("PASS"), json("SKIPPED")}});
  return gate;
}

Gate parse_gate(const json& doc, const std::string& source) {
  require(doc.is_object(), source + ": a gate file is a JSON object");
  if (doc.contains("schema"))
    require(doc["schema"] == "encbench-gate", source + ": schema must be \"encbench-gate\"");
  if (doc.contains("schema_version"))
    require(doc["schema_version"] == 1, source + ": only gate schema_version 1 is supported");
  static const char* kKeys[] = {"schema", "schema_version", "description", "alpha", "defaults",
                                "deterministic", "metrics", "exact", "warn_below_samples"};
  for (const auto& [key, value] : doc.items()) {
    (void)value;
    require(std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys),
            source + ": unknown gate key '" + key + "'");
  }
  Gate gate;
  gate.name = source;
  gate.exact.clear();
  gate.alpha = fraction_field(doc, "alpha", gate.alpha, source);
  require(gate.alpha > 0 && gate.alpha < 1, source + ": 'alpha' must be in (0, 1)");
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
  return gate;
}

Gate load_gate(const std::string& path) { return parse_gate(read_json_file(path), path); }

// ---------------------------------------------------------------------------------------------
// statistics helpers

namespace {

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// Continued fraction of the regularized incomplete beta function (modified Lentz).
double beta_continued_fraction(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-15) break;
  }
  return h;
}

double regularized_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t * t));
  return t >= 0 ? 1.0 - tail : tail;
}

}  // namespace

double student_t_quantile(double p, double df) {
  require(p > 0 && p < 1 && df > 0, "student_t_quantile: p in (0,1), df > 0");
  if (p == 0.5) return 0;
  double lo = -1e6, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (student_t_cdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

double min_achievable_p(std::size_t n1, std::size_t n2) {
  if (n1 == 0 || n2 == 0) return 1.0;
  const double a = static_cast<double>(n1), b = static_cast<double>(n2);
  if (!(n1 > 8 && n2 > 8)) {
    // exact: the most extreme of C(n1+n2, n1) equally likely arrangements, both tails
    const double log_choose = std::lgamma(a + b + 1) - std::lgamma(a + 1) - std::lgamma(b + 1);
    return std::min(1.0, 2.0 * std::exp(-log_choose));
  }
  const double mu = a * b / 2.0;
  const double sd = std::sqrt(a * b * (a + b + 1.0) / 12.0);
  return std::min(1.0, 2.0 * normal_sf((a * b - mu - 0.5) / sd));
}

// ---------------------------------------------------------------------------------------------
// verdicts

namespace {

bool beyond_thresholds(const MetricRule& rule, double before, double after) {
  const double diff = std::fabs(after - before);
  if (diff == 0) return false;
  // A relative threshold cannot be applied to a zero baseline; the absolute one still can.
  if (rule.relative > 0 && before != 0 && diff / std::fabs(before) <= rule.relative) return false;
  if (rule.absolute > 0 && diff <= rule.absolute) return false;
  return true;
}

// +1 when `after` is better than `before` for this metric, -1 when worse, 0 when equal.
int improvement_sign(Better better, double before, double after) {
  if (after == before || better == Better::none) return 0;
  const bool higher = after > before;
  return (better == Better::higher) == higher ? 1 : -1;
}

std::string fmt(double v, int precision = 4) { return numbers::significant(v, precision); }

double relative_spread(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0;
  const double m = stats::mean(xs);
  return m == 0 ? 0 : stats::stdev_sample(xs) / std::fabs(m);
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

void single_value_verdict(MetricComparison& row, const Metric& base, const Metric& next) {
  // No usable test: the change must clear the practical threshold and a noise floor. The floor
  // is the gate's, or the samples' own relative spread when they show more noise than that.
  row.method = "threshold+noise-floor";
  // A run-level noise estimate (serving duration/throughput) becomes a floor at the gate's
  // confidence: the difference of two runs has sd sqrt(2) * noise; two-sided z(1 - alpha/2).
  const double run_noise = std::max(base.run_noise_rel, next.run_noise_rel);
  double lo = 0, hi = 40;  // z with P(Z > z) = alpha / 2, by bisection on the normal tail
  for (int i = 0; i < 100; ++i) (normal_sf(0.5 * (lo + hi)) > row.rule.alpha / 2.0 ? lo : hi) = 0.5 * (lo + hi);
  const double z = 0.5 * (lo + hi);
  row.noise_floor_used = std::max({row.rule.noise_floor, relative_spread(base.samples),
                                   relative_spread(next.samples), z * std::sqrt(2.0) * run_noise});
  const int sign = improvement_sign(row.better, row.before, row.after);
  const bool beyond_floor = row.before == 0
                                ? row.after != 0
                                : std::fabs(row.after - row.before) / std::fabs(row.before) >
                                      row.noise_floor_used;
  if (sign != 0 && beyond_thresholds(row.rule, row.before, row.after) && beyond_floor) {
    row.verdict = sign > 0 ? Verdict::faster : Verdict::slower;
    row.reason = "change beyond threshold and noise floor " + fmt(100 * row.noise_floor_used, 3) + "%";
  } else {
    row.verdict = Verdict::same;
    row.reason = "within threshold or noise floor " + fmt(100 * row.noise_floor_used, 3) + "%";
  }
}

// Deterministic metrics (instruction counts, virtual-clock times): repeated measurements agree,
// so a U test has nothing to work with (ties everywhere) and is not needed. The change must exceed
// the rule's thresholds and the samples' own full range (max - min relative to the median) on
// either side: if a "deterministic" metric did scatter, that scatter is the floor.
double relative_range(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  const double mid = std::fabs(stats::median(xs));
  return mid == 0 ? 0 : (*hi - *lo) / mid;
}

// The widest relative spread of a metric's samples and of its pooled runs' values.
double scatter_of(const Metric& m) { return std::max(relative_range(m.samples), relative_range(m.run_values)); }
bool scatters(const Metric& m) {
  const auto differ = [](const std::vector<double>& xs) {
    return !xs.empty() && std::any_of(xs.begin(), xs.end(), [&](double x) { return x != xs.front(); });
  };
  return differ(m.samples) || differ(m.run_values);
}

void deterministic_verdict(MetricComparison& row, const Metric& base, const Metric& next) {
  row.method = "deterministic";
  row.noise_floor_used = std::max(relative_range(base.samples), relative_range(next.samples));
  const int sign = improvement_sign(row.better, row.before, row.after);
  const bool beyond_floor = row.before == 0 ? row.after != 0
                                            : std::fabs(row.after - row.before) / std::fabs(row.before) >
                                                  row.noise_floor_used;
  const std::string limits = "threshold " + fmt(100 * row.rule.relative, 3) + "%, sample range " +
                             fmt(100 * row.noise_floor_used, 3) + "%";
  if (sign != 0 && beyond_thresholds(row.rule, row.before, row.after) && beyond_floor) {
    row.verdict = sign > 0 ? Verdict::faster : Verdict::slower;
    row.reason = "deterministic: change beyond " + limits;
  } else {
    row.verdict = Verdict::same;
    row.reason = "deterministic: within " + limits;
  }
}

// Runs pooled by merge_runs: per-request or per-repetition samples of one run share that run's
// conditions, so a U test over the pooled samples treats round-to-round drift as signal. The
// change must also clear what the runs' own values allow: a two-sample t bound on the per-run
// values (relative to BASE, pooled variance, df = runs - 2) at the gate's alpha. 0 when neither
// side holds two runs (nothing to estimate it from).
double between_run_floor(const Metric& base, const Metric& next, double alpha) {
  const double scale = std::fabs(stats::mean(base.run_values.empty() ? base.samples : base.run_values));
  if (scale == 0) return 0;
  double sum_sq = 0, df = 0;
  for (const Metric* m : {&base, &next}) {
    if (m->run_values.size() < 2) continue;
    const double sd = stats::stdev_sample(m->run_values) / scale;
    const double k = static_cast<double>(m->run_values.size());
    sum_sq += sd * sd * (k - 1);
    df += k - 1;
  }
  if (df < 1) return 0;
  const double kb = static_cast<double>(std::max<std::size_t>(1, base.run_values.size()));
  const double kn = static_cast<double>(std::max<std::size_t>(1, next.run_values.size()));
  return student_t_quantile(1.0 - alpha / 2.0, df) * std::sqrt(sum_sq / df * (1.0 / kb + 1.0 / kn));
}

void u_test_verdict(MetricComparison& row, const Metric& base, const Metric& next) {
  const auto mw = stats::mann_whitney_u(base.samples, next.samples);
  row.method = "mann-whitney-u";
  row.p_value = mw.p_value;
  const double half = static_cast<double>(base.samples.size() * next.samples.size()) / 2.0;
  // Which way the distributions moved, by the test's own statistic: U1 (BASE's) below half
  // means NEW tends to be larger.
  const int shift_sign = mw.u1 < half ? 1 : (mw.u1 > half ? -1 : 0);  // +1: NEW larger
  const int value_sign = row.after > row.before ? 1 : (row.after < row.before ? -1 : 0);
  const bool significant = mw.p_value < row.rule.alpha;
  const bool practical = beyond_thresholds(row.rule, row.before, row.after);
  const int sign = improvement_sign(row.better, row.before, row.after);
  row.noise_floor_used = between_run_floor(base, next, row.rule.alpha);
  const bool beyond_run_noise =
      row.noise_floor_used == 0 ||
      (row.before != 0 && std::fabs(row.after - row.before) / std::fabs(row.before) > row.noise_floor_used);
  if (significant && practical && beyond_run_noise && shift_sign == value_sign && sign != 0) {
    row.verdict = sign > 0 ? Verdict::faster : Verdict::slower;
    row.reason = "p=" + fmt(mw.p_value, 3) + " < alpha " + fmt(row.rule.alpha) + " and change beyond threshold";
    if (row.noise_floor_used > 0) row.reason += " and between-run noise " + fmt(100 * row.noise_floor_used, 3) + "%";
  } else if (practical && sign != 0) {
    row.verdict = Verdict::noisy;
    if (!significant)
      row.reason = "change beyond threshold but not significant (p=" + fmt(mw.p_value, 3) + ")";
    else if (shift_sign != value_sign)
      row.reason = "distribution moved the other way than this statistic";
    else
      row.reason = "p=" + fmt(mw.p_value, 3) + " but within the between-run noise " +
                   fmt(100 * row.noise_floor_used, 3) + "% (runs differ among themselves as much)";
  } else {
    row.verdict = Verdict::same;
    row.reason = significant ? "significant (p=" + fmt(mw.p_value, 3) + ") but below threshold"
                             : "not significant (p=" + fmt(mw.p_value, 3) + ")";
  }
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

void add_sample_warnings(Comparison& c, const MetricComparison& row, const Gate& gate) {
  if (row.method == "deterministic") return;  // identical samples need no repetitions
  // Like compare.py: whenever repeated samples were there to test, fewer than 9 is unreliable.
  const bool tested = row.method == "mann-whitney-u" || row.method == "prediction-interval" ||
                      (row.n_before >= 2 && row.n_after >= 2);
  if (!tested || row.better == Better::none) return;
  const std::size_t n = std::min(row.n_before, row.n_after == 1 ? row.n_before : row.n_after);
  if (n < gate.warn_below_samples) {
    const std::string msg = "Results unreliable! " + std::to_string(gate.warn_below_samples) +
                            "+ repetitions recommended (" + row.sample_kind + ": " +
                            std::to_string(row.n_before) + " vs " + std::to_string(row.n_after) + ")";
    if (std::find(c.warnings.begin(), c.warnings.end(), msg) == c.warnings.end()) c.warnings.push_back(msg);
  }
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
      if (glob_match(a.match, metric)) return &a;
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

Comparison compare_runs(const RunResult& base, const RunResult& next, const Gate& gate) {
  require_comparable(base, next);
  Comparison c;
  c.kind = next.kind;
  c.base_source = base.source;
  c.new_source = next.source;
  c.baseline_mode = "file";
  c.identity = next.identity;
  c.gate_name = gate.name;
  c.alpha = gate.alpha;
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
    } else if (row.deterministic) {
      deterministic_verdict(row, *b, m);
    } else if (row.n_before >= 2 && row.n_after >= 2 &&
               min_achievable_p(row.n_before, row.n_after) < row.rule.alpha) {
      u_test_verdict(row, *b, m);
    } else {
      // Counts (failed, completed) are checked exactly, not tested: no test to fall short of alpha.
      if (row.n_before >= 2 && row.n_after >= 2 && m.group != MetricGroup::exact && m.group != MetricGroup::info)
        c.warnings.push_back(row.name + ": " + std::to_string(row.n_before) + " vs " +
                             std::to_string(row.n_after) + " samples cannot reach alpha " +
                             fmt(row.rule.alpha) + "; judged by threshold and noise floor");
      single_value_verdict(row, *b, m);
    }
    if (!premise.empty()) row.reason = premise + row.reason;
    row.regression = row.rule.gated && row.verdict == Verdict::slower;
    add_sample_warnings(c, row, gate);
    c.rows.push_back(std::move(row));
  }
  for (const auto& m : base.metrics)
    if (!next.find(m.name)) c.notes.push_back("metric " + m.name + " only in BASE");
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
    } else if (values.size() >= 2) {
      // Bencher's t_test: a prediction interval for ONE new value from n earlier ones,
      // mean +- t(1 - alpha/2, n - 1) * s * sqrt(1 + 1/n).
      const double n = static_cast<double>(values.size());
      const double s = stats::stdev_sample(values);
      const double half_width = student_t_quantile(1.0 - row.rule.alpha / 2.0, n - 1.0) * s *
                                std::sqrt(1.0 + 1.0 / n);
      row.method = "prediction-interval";
      row.interval_low = base.value - half_width;
      row.interval_high = base.value + half_width;
      const bool outside = m.value < *row.interval_low || m.value > *row.interval_high;
      const int sign = improvement_sign(row.better, row.before, row.after);
      if (outside && sign != 0 && beyond_thresholds(row.rule, row.before, row.after)) {
        row.verdict = sign > 0 ? Verdict::faster : Verdict::slower;
        row.reason = "outside the " + fmt(100 * (1 - row.rule.alpha), 4) +
                     "% prediction interval and beyond threshold";
      } else {
        row.verdict = Verdict::same;
        row.reason = outside ? "outside the prediction interval but below threshold"
                             : "inside the prediction interval [" + fmt(*row.interval_low) + ", " +
                                   fmt(*row.interval_high) + "]";
      }
    } else {
      single_value_verdict(row, base, m);
    }
    row.regression = row.rule.gated && row.verdict == Verdict::slower;
    add_sample_warnings(c, row, gate);
    c.rows.push_back(std::move(row));
  }
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
    if (r.method == "threshold+noise-floor") row["noise_floor_relative"] = r.noise_floor_used;
    if (r.method == "mann-whitney-u" && r.noise_floor_used > 0) row["between_run_noise_relative"] = r.noise_floor_used;
    if (r.interval_low) row["prediction_interval"] = {*r.interval_low, *r.interval_high};
    rows.push_back(std::move(row));
  }
  json exact = json::array();
  for (const auto& e : c.exact) {
    json check = {{"metric", e.metric},       {"label", e.label},   {"before", e.before},
                  {"after", e.after},         {"expectation", e.expectation},
                  {"applicable", e.applicable}, {"passed", e.passed}, {"reason", e.reason}};
    if (!e.accepted.empty()) check["accepted"] = e.accepted;
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
          {"metrics", rows},
          {"exact_checks", exact},
          {"warnings", c.warnings},
          {"notes", c.notes},
          {"regressions", c.regression_count()},
          {"passed", c.passed()},
          {"exit_code", c.exit_code()}};
}

}  // namespace encbench::reports
