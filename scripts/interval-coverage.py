#!/usr/bin/env python3
"""How often a one-run interval built from N seeds covers a further run of the model (held out).

`encbench run` reports, for each published After-vs-Before change, the model's 90 % interval for
ONE run of the benchmark, built from the seeds' paired changes. This script checks that claim on
the model's own runs: take a result file with many seeds (e.g. `--seeds 40`), split its seeds at
random into N that build the interval and the rest held out, and count how many held-out changes
fall inside. Two ways of building it:
  percentile  the seeds' 5th..95th percentile (numpy-linear): what encbench reported before;
  t-log       Student's t prediction interval on log(After/Before):
              mean +- t(0.95, N-1) x s.d. x sqrt(1 + 1/N): what encbench reports now
              (harness/scenario/published_table.cpp change_interval).
An interval that deserves the name "90 %" covers about 0.90 of held-out runs.

  for s in pr7104 pr6204 pr6448-500 pr6448-200 pr5810; do
    encbench run --scenario scenarios/seeds/$s.json --seeds 40 --result /tmp/s40-$s.json; done
  scripts/interval-coverage.py [--fit-seeds 10] [--splits 400] /tmp/s40-*.json
"""
import argparse
import json
import math
import random
import statistics
import sys

METRICS = ["mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "request_throughput", "duration",
           "mean_tpot_ms", "median_itl_ms"]


def betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def reg_inc_beta(a, b, x):
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * betacf(a, b, x) / a
    return 1.0 - front * betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    tail = 0.5 * reg_inc_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p, df):
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return 0.5 * (lo + hi)


def percentile_linear(xs, q):
    xs = sorted(xs)
    h = (len(xs) - 1) * q / 100.0
    i = int(math.floor(h))
    return xs[i] if i + 1 >= len(xs) else xs[i] + (h - i) * (xs[i + 1] - xs[i])


def paired_log_changes(doc, key):
    before, after = doc["arms"][0]["seeds"], doc["arms"][1]["seeds"]
    out = []
    for b, a in zip(before, after):
        vb, va = b.get("serving", {}).get(key, 0.0), a.get("serving", {}).get(key, 0.0)
        if vb > 0 and va > 0:
            out.append(math.log(va / vb))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="encbench run result files with many seeds (two arms)")
    ap.add_argument("--fit-seeds", type=int, default=10, help="seeds that build each interval (the scenarios use 10)")
    ap.add_argument("--splits", type=int, default=400, help="random splits per metric")
    ap.add_argument("--seed", type=int, default=1, help="the splits' random seed")
    args = ap.parse_args()
    n = args.fit_seeds
    if n < 2:
        sys.exit("interval-coverage: --fit-seeds must be at least 2 (an interval needs a spread)")
    t = t_quantile(0.95, n - 1)
    rng = random.Random(args.seed)
    print(f"| run | metric | percentile (5th..95th of {n}) | t-log prediction interval |")
    print("|---|---|---|---|")
    totals = {"percentile": [], "t-log": []}
    for path in args.results:
        try:
            with open(path) as f:
                doc = json.load(f)
            arms = doc["arms"]
            if len(arms) != 2 or not all(isinstance(a.get("seeds"), list) for a in arms):
                raise ValueError("expected two arms, each with a 'seeds' list")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            sys.exit(f"interval-coverage: {path}: not an encbench run result with two arms: {e}")
        name = doc.get("scenario", {}).get("name", path)
        for key in METRICS:
            xs = paired_log_changes(doc, key)
            if len(xs) < n + 5:
                sys.exit(f"interval-coverage: {path}: {key} has {len(xs)} paired seeds; need at least "
                         f"{n + 5} (run with more --seeds)")
            hit_p = hit_t = count = 0
            for _ in range(args.splits):
                idx = list(range(len(xs)))
                rng.shuffle(idx)
                fit, rest = [xs[i] for i in idx[:n]], [xs[i] for i in idx[n:]]
                lo, hi = percentile_linear(fit, 5), percentile_linear(fit, 95)
                m, half = statistics.mean(fit), t * statistics.stdev(fit) * math.sqrt(1 + 1 / n)
                hit_p += sum(lo <= x <= hi for x in rest)
                hit_t += sum(m - half <= x <= m + half for x in rest)
                count += len(rest)
            totals["percentile"].append(hit_p / count)
            totals["t-log"].append(hit_t / count)
            print(f"| {name} | {key} | {hit_p / count:.3f} | {hit_t / count:.3f} |")
    for method, values in totals.items():
        print(f"{method}: mean coverage {statistics.mean(values):.3f}, lowest {min(values):.3f} "
              f"(over {len(values)} metric x run pairs; nominal 0.90)")


if __name__ == "__main__":
    main()
