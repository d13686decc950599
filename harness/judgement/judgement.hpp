#pragma once
// The one rule every command uses to say whether B changed a statistic against A: `compare`,
// `report`, `history`, `bench ab`, `run` (both clocks), the sweeps and the CI gate all call
// judge() or judge_against_history() and print what it returns (docs/reports.md, "Verdicts").
//
// The test follows the evidence, chosen per statistic:
//  * rounds (two or more runs, seeds or repetitions on at least one side, one or more on the
//    other): the round is the unit. Paired rounds (the same seed on both sides) are judged by
//    the one-sample t on their log ratios. Each round's own value of the statistic (its mean, median,
//    P99, throughput...) goes into a two-sample t test on the logarithms, pooled variance,
//    df = rounds_a + rounds_b - 2. Requests of one round share the server's state, warm-up and
//    the machine's drift, so only rounds are independent; logs because latencies and rates
//    change by ratios and are skewed.
//  * one round a side with per-request samples: for the mean, Welch's t on the log ratio of the
//    means (delta-method standard error); for a median or percentile, a bootstrap of the
//    statistic itself (requests resampled within each side), its standard error giving the
//    p-value, the interval and the MDE alike. A percentile is testable only when each side holds
//    at least kMinTailRequests requests beyond it (a P99 of 30 requests is one request).
//    Blind to drift between the two runs, which the verdict says.
//    With rounds, a percentile needs as many requests beyond it in each round (else NOISY).
//  * one value a side: not testable. The verdict is NOISY with what would make it testable; it
//    is never FASTER, SLOWER or a regression.
//  * deterministic metrics (instruction counts, virtual-clock times): any change is real, the
//    question is only whether it passes the threshold.
// A verdict is FASTER or SLOWER when the change is significant at alpha (its interval excludes
// 0) AND beyond the practical threshold; SAME otherwise, with the reason (not significant, or
// significant but within the threshold). The MDE printed is that of this very rule: the
// smallest true change it detects with probability `power`,
//   power = E_r[Phi((d - max(c sigma r, log(1 + threshold))) / sigma)],  MDE = exp(d) - 1,
// c the test's critical value, sigma its unbiased standard error, r = s / sigma (chi, df).
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace encbench::judgement {

// The declared defaults of every command that judges a change (--threshold, --alpha, --power).
inline constexpr double kDefaultThreshold = 0.05;  // 5 % of A's value
inline constexpr double kDefaultAlpha = 0.05;      // two-sided
inline constexpr double kDefaultPower = 0.80;
// Requests beyond a percentile each side must hold for the bootstrap to judge it.
inline constexpr double kMinTailRequests = 5;

enum class Verdict { faster, slower, same, noisy, none };
std::string to_string(Verdict verdict);  // "FASTER", "SLOWER", "SAME", "NOISY", "-"

struct Settings {
  double threshold = kDefaultThreshold;  // relative practical threshold (fraction of A)
  double absolute = 0;                   // optional absolute threshold in the metric's unit (0: none)
  double alpha = kDefaultAlpha;
  double power = kDefaultPower;
};
// Throws InvalidInput naming `flag_prefix`--threshold / --alpha / --power and the accepted range.
void validate(const Settings& settings, const std::string& flag_prefix = "--");
std::string describe(const Settings& settings);  // "threshold 5 %, alpha 0.05, power 0.80"

// Which statistic of the requests a metric is. `value`: a run-level figure with no per-request
// samples (throughput, duration, a count, a Google Benchmark time).
struct StatisticKind {
  enum class Kind { mean, median, percentile, value } kind = Kind::value;
  double q = 0;  // percentile in [0, 100]
};
double compute(const StatisticKind& statistic, std::span<const double> requests);

// One arm's evidence for one statistic.
struct Evidence {
  double value = 0;               // the arm's reported (pooled) value
  std::vector<double> rounds;     // the statistic's own value in each round (run, seed, repetition)
  std::vector<double> requests;   // per-request samples, used when there is a single round
  std::size_t requests_per_round = 0;  // with rounds: requests behind each round's value (0: unknown)
  bool deterministic = false;     // repeated measurements agree exactly (see header comment)
};

struct Judgement {
  Verdict verdict = Verdict::none;
  std::string test;  // "t on log round values", "bootstrap of the statistic", "deterministic", "not testable"
  std::size_t rounds_a = 0, rounds_b = 0, requests_a = 0, requests_b = 0;
  double value_a = 0, value_b = 0;
  std::optional<double> change;               // relative, B against A (the test's own estimate)
  std::optional<double> ci_low, ci_high;      // relative, at confidence 1 - alpha
  std::optional<double> p_value;
  std::optional<double> mde;                  // relative, of this test at `power`
  Settings settings;
  std::string reason;  // one line: why this verdict
  std::string settle;  // for NOISY: what would make it testable
  std::string caveat;  // a second line when needed (beyond the MDE yet not significant; blind to drift)
};

// How the rounds of the two sides relate. `paired`: round k of A and round k of B share their
// inputs by construction (the virtual clock's seed k: the same prompts and arrivals), so the test
// is the one-sample t on the rounds' log ratios. `independent`: rounds of one side are exchangeable
// with no partner on the other (live rounds, merged runs, repetitions). The design is the caller's
// to declare from how the runs were made, never chosen from the data.
enum class RoundDesign { independent, paired };

// `higher_is_better`: throughput-like metrics; false for latencies.
Judgement judge(const Evidence& a, const Evidence& b, const StatisticKind& statistic, bool higher_is_better,
                const Settings& settings, RoundDesign design = RoundDesign::independent);

// One new value against `history` (earlier runs of the same series, two or more): the t
// prediction interval of one new value on logs, mean +- t(1 - alpha/2, n - 1) s sqrt(1 + 1/n).
Judgement judge_against_history(std::span<const double> history, double value, bool higher_is_better,
                                const Settings& settings);

// "B vs A: -1.3 % [-4.1, +1.5], SAME at 5 %" style pieces for printers.
std::string format_change(const Judgement& judgement);    // "-1.30 % [-4.10, +1.50]" or "-1.30 %"
std::string format_mde(const Judgement& judgement);       // "3.08 %" or "-"

}  // namespace encbench::judgement
