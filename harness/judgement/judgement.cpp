#include "harness/judgement/judgement.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "harness/core/error.hpp"
#include "harness/core/mix64.hpp"
#include "harness/core/number_format.hpp"
#include "harness/core/stats.hpp"
#include "harness/judgement/distributions.hpp"

namespace encbench::judgement {

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

void validate(const Settings& s, const std::string& flag_prefix) {
  require(std::isfinite(s.threshold) && s.threshold >= 0 && s.threshold < 1,
          flag_prefix + "threshold must be a fraction in [0, 1) (0.05 = 5 %), got " + numbers::significant(s.threshold, 6));
  require(std::isfinite(s.alpha) && s.alpha > 0 && s.alpha < 0.5,
          flag_prefix + "alpha must be in (0, 0.5), got " + numbers::significant(s.alpha, 6));
  require(std::isfinite(s.power) && s.power > 0.5 && s.power < 1,
          flag_prefix + "power must be in (0.5, 1), got " + numbers::significant(s.power, 6));
  require(std::isfinite(s.absolute) && s.absolute >= 0, flag_prefix + "absolute threshold must be >= 0");
}

std::string describe(const Settings& s) {
  return "threshold " + numbers::significant(100 * s.threshold, 4) + " %, alpha " + numbers::significant(s.alpha, 4) +
         ", power " + numbers::fixed(s.power, 2);
}

namespace {

// numpy.percentile(method="linear") on data it may reorder: two order statistics by selection.
double percentile_in_place(std::vector<double>& xs, double q) {
  if (xs.empty()) return 0;
  const double pos = q / 100.0 * static_cast<double>(xs.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(lo), xs.end());
  const double at_lo = xs[lo];
  if (lo + 1 >= xs.size()) return at_lo;
  const double at_hi = *std::min_element(xs.begin() + static_cast<std::ptrdiff_t>(lo) + 1, xs.end());
  return at_lo + (pos - static_cast<double>(lo)) * (at_hi - at_lo);
}

double compute_in_place(const StatisticKind& statistic, std::vector<double>& xs) {
  switch (statistic.kind) {
    case StatisticKind::Kind::mean: return stats::mean(xs);
    case StatisticKind::Kind::median: return percentile_in_place(xs, 50);
    case StatisticKind::Kind::percentile: return percentile_in_place(xs, statistic.q);
    case StatisticKind::Kind::value: return xs.empty() ? 0 : xs.front();
  }
  return 0;
}

std::string pct(double fraction, int digits = 2) {
  const std::string s = numbers::fixed(100.0 * fraction, digits);
  return (fraction > 0 ? "+" : "") + s;
}

// The threshold in relative terms: the relative one, or the absolute one over A's value if larger.
double effective_threshold(const Settings& s, double value_a) {
  double t = s.threshold;
  if (s.absolute > 0 && value_a != 0) t = std::max(t, s.absolute / std::fabs(value_a));
  return t;
}

// The estimate of a test on one scale: `log_scale` (d = log ratio) or relative to A (d = ratio - 1).
struct Estimate {
  double d = 0, se = 0;
  // E[s] / sigma of the standard deviation behind `se` (c4): the MDE divides by it so that a true
  // change of the printed size is detected at the stated power on average, not only when the
  // sample happened to show its spread exactly (s underestimates sigma at few degrees of freedom).
  double sd_bias = 1;
  double df = 0;  // degrees of freedom behind `se` (0: known, as for a normal test)
  double critical = 0;  // two-sided critical value of the test
  bool log_scale = true;
  double p_value = 1;
};

double to_relative(const Estimate& e, double d) { return e.log_scale ? std::expm1(d) : d; }

// The smallest true change (on the test's scale) that the rule detects with probability `power`:
// detection needs the estimate beyond both the practical threshold and the critical value times
// the *estimated* standard error, which is itself random (s = sigma sqrt(chi2_df / df)). So
//   power(delta) = E_chi [ Phi((delta - max(c * sigma * r, practical)) / sigma) ],
// averaged over 64 quantiles of r (Wilson-Hilferty for chi2), with sigma = se / c4 (the unbiased
// standard error); solved for delta by bisection. With df = 0 (a known standard error) r = 1 and
// it is max(c sigma, practical) + z_power sigma. Where c sigma and the threshold are close, this
// is larger than that sum: both hurdles must be passed.
double minimum_detectable(const Estimate& e, double practical, double power) {
  const double sigma = e.se / e.sd_bias;
  constexpr int kPoints = 64;
  std::vector<double> hurdles;
  hurdles.reserve(kPoints);
  for (int i = 0; i < kPoints; ++i) {
    double r = 1;
    if (e.df > 0) {
      const double z = normal_quantile((i + 0.5) / kPoints);
      const double h = 2 / (9 * e.df);
      const double cube = 1 - h + z * std::sqrt(h);
      r = std::sqrt(std::max(0.0, cube * cube * cube));
    }
    hurdles.push_back(std::max(e.critical * sigma * r, practical));
  }
  auto power_at = [&](double delta) {
    double sum = 0;
    for (double hurdle : hurdles) sum += normal_cdf((delta - hurdle) / sigma);
    return sum / kPoints;
  };
  double lo = 0, hi = practical + (e.critical + 10) * sigma * 4;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (power_at(mid) < power ? lo : hi) = mid;
  }
  return hi;
}

// Fills change, interval, p and MDE from the estimate, then decides.
void conclude(Judgement& j, const Estimate& e, bool higher_is_better) {
  const double threshold = effective_threshold(j.settings, j.value_a);
  j.change = to_relative(e, e.d);
  j.p_value = e.p_value;
  if (e.se > 0) {
    j.ci_low = to_relative(e, e.d - e.critical * e.se);
    j.ci_high = to_relative(e, e.d + e.critical * e.se);
    const double practical = e.log_scale ? std::log1p(threshold) : threshold;
    j.mde = to_relative(e, minimum_detectable(e, practical, j.settings.power));
  } else {
    j.ci_low = j.ci_high = j.change;
    j.mde = threshold;
  }
  const bool significant = e.p_value < j.settings.alpha;
  // On the log scale the threshold is a ratio either way (above 1.05 or below 1/1.05 at 5 %), so
  // that the MDE, a distance in logs, means the same for a rise and a fall.
  const bool practical = (e.log_scale ? std::fabs(e.d) > std::log1p(threshold) : std::fabs(*j.change) > threshold) &&
                         (j.settings.absolute <= 0 || std::fabs(j.value_b - j.value_a) > j.settings.absolute);
  const std::string p_text = "p=" + numbers::significant(e.p_value, 3);
  const std::string limit = numbers::significant(100 * threshold, 3) + " % threshold";
  if (significant && practical && *j.change != 0) {
    const bool better = (*j.change > 0) == higher_is_better;
    j.verdict = better ? Verdict::faster : Verdict::slower;
    j.reason = "significant (" + p_text + " < alpha " + numbers::significant(j.settings.alpha, 3) + ") and beyond the " + limit;
  } else {
    j.verdict = Verdict::same;
    j.reason = significant ? "significant (" + p_text + ") but within the " + limit
                           : "not significant (" + p_text + " >= alpha " + numbers::significant(j.settings.alpha, 3) + ")";
    if (!significant && std::fabs(*j.change) >= *j.mde)
      j.caveat = "the change is beyond the MDE (" + pct(*j.mde) + " %) yet not significant: the MDE is detected with "
                 "probability " + numbers::fixed(j.settings.power, 2) + ", not always";
  }
}

// c4 for `df` degrees of freedom: sqrt(2 / df) Gamma((df + 1) / 2) / Gamma(df / 2).
double sd_bias_of(double df) {
  return std::sqrt(2 / df) * std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2));
}

bool all_positive(std::span<const double> xs) {
  return std::all_of(xs.begin(), xs.end(), [](double x) { return x > 0; });
}

// A t test's estimate (d and its standard error set) at `df` degrees of freedom: its critical
// value, power quantile, p, and the verdict.
void conclude_t(Judgement& j, Estimate& e, double df, bool higher_is_better) {
  e.sd_bias = sd_bias_of(df);
  e.df = df;
  e.critical = student_t_quantile(1 - j.settings.alpha / 2, df);
  e.p_value = e.se > 0 ? 2 * (1 - student_t_cdf(std::fabs(e.d) / e.se, df)) : (e.d == 0 ? 1.0 : 0.0);
  conclude(j, e, higher_is_better);
}

// One run a side: what requests cannot tell.
void add_single_run_caveat(Judgement& j) {
  j.caveat += std::string(j.caveat.empty() ? "" : "; ") +
              "one run a side: requests judged, blind to drift between the two runs (rounds settle it)";
}

// Rounds as the unit: two-sample t on the rounds' values (logs when all positive), pooled variance.
void judge_rounds(Judgement& j, std::vector<double> ra, std::vector<double> rb, bool higher_is_better) {
  j.test = "t on round values";
  Estimate e;
  e.log_scale = all_positive(ra) && all_positive(rb);
  const double scale = std::fabs(stats::mean(ra));
  auto transform = [&](std::vector<double>& xs) {
    for (double& x : xs) x = e.log_scale ? std::log(x) : (scale > 0 ? x / scale : x);
  };
  transform(ra);
  transform(rb);
  if (e.log_scale) j.test = "t on log round values";
  const double ka = static_cast<double>(ra.size()), kb = static_cast<double>(rb.size());
  const double ma = stats::mean(ra), mb = stats::mean(rb);
  double ss = 0;
  for (double x : ra) ss += (x - ma) * (x - ma);
  for (double x : rb) ss += (x - mb) * (x - mb);
  const double df = ka + kb - 2;
  e.d = mb - ma;
  e.se = std::sqrt(ss / df) * std::sqrt(1 / ka + 1 / kb);
  conclude_t(j, e, df, higher_is_better);
  if (e.se == 0) j.reason += " (no spread between rounds)";
}

// Paired rounds (round k of A and of B ran the same seed: the same prompts and arrivals): one-sample
// t on the rounds' log ratios, df = k - 1. What the seeds share (a hard prompt sample) cancels in
// each ratio, so only what the arms do differently with the same inputs is left as noise.
void judge_paired_rounds(Judgement& j, const std::vector<double>& ra, const std::vector<double>& rb,
                         bool higher_is_better) {
  Estimate e;
  e.log_scale = all_positive(ra) && all_positive(rb);
  const double scale = std::fabs(stats::mean(ra));
  j.test = e.log_scale ? "paired t on log round ratios" : "paired t on round differences";
  std::vector<double> d(ra.size());
  for (std::size_t k = 0; k < ra.size(); ++k)
    d[k] = e.log_scale ? std::log(rb[k] / ra[k]) : (scale > 0 ? (rb[k] - ra[k]) / scale : 0);
  const double n = static_cast<double>(d.size());
  const double df = n - 1;
  e.d = stats::mean(d);
  e.se = stats::stdev_sample(d) / std::sqrt(n);
  conclude_t(j, e, df, higher_is_better);
  if (e.se == 0) j.reason += " (the same ratio in every round)";
}

// The smallest number of requests a side needs for `statistic` to be judged from them.
std::size_t min_requests(const StatisticKind& statistic) {
  std::size_t n = 10;
  if (statistic.kind == StatisticKind::Kind::percentile) {
    const double tail = std::min(statistic.q, 100 - statistic.q) / 100.0;
    if (tail > 0) n = std::max(n, static_cast<std::size_t>(std::ceil(kMinTailRequests / tail - 1e-9)));
    else n = static_cast<std::size_t>(-1);  // P0 / P100: the extreme itself, never testable
  }
  return n;
}

// One round a side, the mean: Welch's t on the log ratio of the two means, its standard error by
// the delta method, sqrt(s_a^2 / (n_a m_a^2) + s_b^2 / (n_b m_b^2)): what a bootstrap of the mean
// estimates, without its cost or its resampling noise.
void judge_request_means(Judgement& j, const Evidence& a, const Evidence& b, bool higher_is_better) {
  const double ma = stats::mean(a.requests), mb = stats::mean(b.requests);
  const double va = stats::stdev_sample(a.requests), vb = stats::stdev_sample(b.requests);
  const double na = static_cast<double>(a.requests.size()), nb = static_cast<double>(b.requests.size());
  Estimate e;
  e.log_scale = ma > 0 && mb > 0;
  const double scale = e.log_scale ? 1.0 : std::fabs(ma);
  j.test = e.log_scale ? "t on the log ratio of means" : "t on the difference of means";
  const double ta = e.log_scale ? va * va / (na * ma * ma) : va * va / (na * scale * scale);
  const double tb = e.log_scale ? vb * vb / (nb * mb * mb) : vb * vb / (nb * scale * scale);
  e.d = e.log_scale ? std::log(mb / ma) : (scale > 0 ? (mb - ma) / scale : 0);
  e.se = std::sqrt(ta + tb);
  // Welch-Satterthwaite degrees of freedom.
  const double df = (ta + tb) * (ta + tb) / (ta * ta / (na - 1) + tb * tb / (nb - 1));
  const double dof = std::isfinite(df) && df >= 1 ? df : na + nb - 2;
  conclude_t(j, e, dof, higher_is_better);
  add_single_run_caveat(j);
}

// One round a side, a median or percentile: bootstrap of the statistic, requests resampled within
// each side. The seed is fixed so that a verdict on the same files is the same every time.
void judge_requests(Judgement& j, const Evidence& a, const Evidence& b, const StatisticKind& statistic,
                    bool higher_is_better) {
  j.test = "bootstrap of the statistic";
  std::vector<double> work_a = a.requests, work_b = b.requests;
  const double fa = compute_in_place(statistic, work_a), fb = compute_in_place(statistic, work_b);
  Estimate e;
  e.log_scale = fa > 0 && fb > 0 && all_positive(a.requests) && all_positive(b.requests);
  const double scale = std::fabs(fa);
  auto contrast = [&](double xa, double xb) { return e.log_scale ? std::log(xb / xa) : (xb - xa) / scale; };
  e.d = scale > 0 || e.log_scale ? contrast(fa, fb) : 0;
  const std::size_t total = a.requests.size() + b.requests.size();
  const int resamples = total > 40000 ? 300 : 1000;
  std::uint64_t state = 0x6a75646765ull;  // "judge"
  auto draw = [&](const std::vector<double>& from, std::vector<double>& into) {
    into.resize(from.size());
    for (double& x : into)
      x = from[static_cast<std::size_t>((static_cast<unsigned __int128>(splitmix64_next(state)) * from.size()) >> 64)];
  };
  std::vector<double> diffs;
  diffs.reserve(resamples);
  for (int r = 0; r < resamples; ++r) {
    draw(a.requests, work_a);
    draw(b.requests, work_b);
    const double xa = compute_in_place(statistic, work_a), xb = compute_in_place(statistic, work_b);
    if (e.log_scale && (xa <= 0 || xb <= 0)) continue;
    diffs.push_back(contrast(xa, xb));
  }
  // The bootstrap's variance is the plug-in one (divisor n); sqrt(n / (n - 1)) of the smaller
  // side undoes that bias, and t with min(n) - 1 degrees of freedom keeps small samples honest.
  const double n_min = static_cast<double>(std::min(a.requests.size(), b.requests.size()));
  e.se = stats::stdev_sample(diffs) * std::sqrt(n_min / (n_min - 1));
  conclude_t(j, e, n_min - 1, higher_is_better);
  add_single_run_caveat(j);
}

void judge_deterministic(Judgement& j, bool higher_is_better) {
  j.test = "deterministic";
  const double threshold = effective_threshold(j.settings, j.value_a);
  j.mde = threshold;
  if (j.value_a == 0) {
    j.verdict = j.value_b == 0 ? Verdict::same : (((j.value_b > 0) == higher_is_better) ? Verdict::faster : Verdict::slower);
    j.reason = j.value_b == 0 ? "deterministic: unchanged" : "deterministic: changed from 0";
    return;
  }
  j.change = (j.value_b - j.value_a) / std::fabs(j.value_a);
  j.ci_low = j.ci_high = j.change;
  const std::string limit = numbers::significant(100 * threshold, 3) + " % threshold";
  if (std::fabs(*j.change) > threshold) {
    j.verdict = ((*j.change > 0) == higher_is_better) ? Verdict::faster : Verdict::slower;
    j.reason = "deterministic: change beyond the " + limit;
  } else {
    j.verdict = Verdict::same;
    j.reason = "deterministic: within the " + limit;
  }
}

std::string statistic_name(const StatisticKind& s) {
  switch (s.kind) {
    case StatisticKind::Kind::mean: return "mean";
    case StatisticKind::Kind::median: return "median";
    case StatisticKind::Kind::percentile: return "P" + numbers::significant(s.q, 4);
    case StatisticKind::Kind::value: return "value";
  }
  return "value";
}

}  // namespace

double compute(const StatisticKind& statistic, std::span<const double> requests) {
  std::vector<double> xs(requests.begin(), requests.end());
  return compute_in_place(statistic, xs);
}

Judgement judge(const Evidence& a, const Evidence& b, const StatisticKind& statistic, bool higher_is_better,
                const Settings& settings, RoundDesign design) {
  Judgement j;
  j.settings = settings;
  j.value_a = a.value;
  j.value_b = b.value;
  std::vector<double> ra = a.rounds.empty() ? std::vector<double>{a.value} : a.rounds;
  std::vector<double> rb = b.rounds.empty() ? std::vector<double>{b.value} : b.rounds;
  j.rounds_a = ra.size();
  j.rounds_b = rb.size();
  j.requests_a = a.requests.size();
  j.requests_b = b.requests.size();
  if (a.deterministic && b.deterministic) {
    judge_deterministic(j, higher_is_better);
    return j;
  }
  const std::size_t need = min_requests(statistic);
  if (ra.size() + rb.size() >= 3) {
    // A round's percentile is only as good as the requests beyond it in that round.
    const std::size_t per_round = std::min(a.requests_per_round, b.requests_per_round);
    if (statistic.kind == StatisticKind::Kind::percentile && per_round > 0 && per_round < need) {
      j.test = "not testable";
      j.verdict = Verdict::noisy;
      if (a.value != 0) j.change = (b.value - a.value) / std::fabs(a.value);
      j.reason = std::to_string(per_round) + " requests a round: too few beyond the " + statistic_name(statistic);
      j.settle = "at least " + std::to_string(need) + " requests a round (--num-prompts)";
      return j;
    }
    if (design == RoundDesign::paired && ra.size() == rb.size() && ra.size() >= 2)
      judge_paired_rounds(j, ra, rb, higher_is_better);
    else
      judge_rounds(j, std::move(ra), std::move(rb), higher_is_better);
    return j;
  }
  if (statistic.kind != StatisticKind::Kind::value && a.requests.size() >= need && b.requests.size() >= need) {
    if (statistic.kind == StatisticKind::Kind::mean) judge_request_means(j, a, b, higher_is_better);
    else judge_requests(j, a, b, statistic, higher_is_better);
    return j;
  }
  j.test = "not testable";
  j.verdict = Verdict::noisy;
  if (a.value != 0) j.change = (b.value - a.value) / std::fabs(a.value);
  const bool has_requests = !a.requests.empty() && !b.requests.empty();
  if (has_requests && statistic.kind != StatisticKind::Kind::value) {
    j.reason = "one run a side and " + std::to_string(std::min(a.requests.size(), b.requests.size())) +
               " requests: too few to judge the " + statistic_name(statistic);
    j.settle = need == static_cast<std::size_t>(-1)
                   ? "two or more rounds a side (bench ab --rounds N, or a directory of runs per side)"
                   : "at least " + std::to_string(need) + " requests a side, or two or more rounds a side";
  } else {
    j.reason = "one value a side: no noise estimate";
    j.settle = "two or more rounds a side (bench ab --rounds N, or a directory of runs per side)" +
               std::string(statistic.kind == StatisticKind::Kind::value ? "" : ", or --save-detailed for per-request samples");
  }
  return j;
}

Judgement judge_against_history(std::span<const double> history, double value, bool higher_is_better,
                                const Settings& settings) {
  Judgement j;
  j.settings = settings;
  j.test = "t prediction interval";
  j.rounds_a = history.size();
  j.rounds_b = 1;
  j.value_a = stats::mean(history);
  j.value_b = value;
  if (history.size() < 2) {
    j.test = "not testable";
    j.verdict = Verdict::noisy;
    if (j.value_a != 0) j.change = (value - j.value_a) / std::fabs(j.value_a);
    j.reason = "one earlier run: no estimate of the noise, not testable";
    j.settle = "two or more earlier runs in the history";
    return j;
  }
  Estimate e;
  e.log_scale = all_positive(history) && value > 0;
  std::vector<double> xs(history.begin(), history.end());
  const double scale = std::fabs(j.value_a);
  for (double& x : xs) x = e.log_scale ? std::log(x) : (scale > 0 ? x / scale : x);
  const double n = static_cast<double>(xs.size());
  const double mean = stats::mean(xs);
  const double next = e.log_scale ? std::log(value) : (scale > 0 ? value / scale : value);
  e.d = next - mean;
  e.se = stats::stdev_sample(xs) * std::sqrt(1 + 1 / n);
  conclude_t(j, e, n - 1, higher_is_better);
  return j;
}

std::string format_change(const Judgement& j) {
  if (!j.change) return "-";
  std::string s = pct(*j.change) + " %";
  if (j.ci_low && j.ci_high && *j.ci_low != *j.ci_high) s += " [" + pct(*j.ci_low) + ", " + pct(*j.ci_high) + "]";
  return s;
}

std::string format_mde(const Judgement& j) { return j.mde ? numbers::fixed(100 * *j.mde, 2) + " %" : "-"; }

}  // namespace encbench::judgement
