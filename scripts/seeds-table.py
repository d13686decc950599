#!/usr/bin/env python3
"""Markdown tables of published vs model from `encbench run` result files of the seed scenarios
(docs/calibration.md is made with it). Reads only the results; fits nothing.

  for s in pr7104 pr6204 pr6448-500 pr6448-200 pr5810; do
    build/harness/cli/encbench run --scenario scenarios/seeds/$s.json --result /tmp/$s.json
  done
  scripts/seeds-table.py /tmp/pr7104.json /tmp/pr6204.json /tmp/pr6448-500.json /tmp/pr6448-200.json /tmp/pr5810.json
  scripts/seeds-table.py --readme /tmp/pr7104.json ...   # README's one-row-per-run summary instead
  scripts/seeds-table.py --aa /tmp/aa-pr7104.json ...     # the noise floor: A/A runs (--presets P,P)
  scripts/seeds-table.py --shape /tmp/pr7104.json ...     # the step-time shape: median/P99 ITL, peak tok/s

Per scenario: the issue's target metrics on both arms (published, model mean over the seeds,
error), then each After-vs-Before change: published, the model's mean change, its 90 % interval
for one run (a Student's t prediction interval on the seeds' paired log(After/Before), each arm
with its own run-to-run noise: `published_comparison.interval_method` in the result; scripts/interval-coverage.py checks
its coverage) and whether the published change lies inside.
"""
import json
import sys

def load_result(path):
    """An `encbench run --result` file of a seed scenario, or exit 2 naming the file and what is missing."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"seeds-table: {path}: not a readable JSON file ({e})", file=sys.stderr)
        sys.exit(2)
    if not isinstance(doc, dict) or "scenario" not in doc or not isinstance(doc.get("published_comparison"), dict):
        print(f"seeds-table: {path}: not an `encbench run --result` file of a scenario with published numbers "
              "(needs scenario and published_comparison)", file=sys.stderr)
        sys.exit(2)
    return doc


LEVELS = [("request_throughput", "Request throughput (req/s)"), ("duration", "Benchmark duration (s)"),
          ("mean_ttft_ms", "Mean TTFT (ms)"), ("median_ttft_ms", "Median TTFT (ms)"),
          ("mean_tpot_ms", "Mean TPOT (ms)")]
CHANGES = [("mean_ttft_ms", "mean TTFT"), ("request_throughput", "request throughput"),
           ("duration", "duration"), ("mean_tpot_ms", "mean TPOT")]


def num(v):
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"


def table(path):
    doc = load_result(path)
    sc = doc["scenario"]
    pc = doc["published_comparison"]
    rows = {r["metric"]: r for r in pc["rows"]}
    role = "calibration: fitted" if pc.get("role") == "calibration" else "prediction"
    out = [f"### {sc['name']} ({role}; {sc['seeds']} seeds; arms {sc['presets'][0]} -> {sc['presets'][1]})", "",
           "| metric | Before published | Before model [seeds' range] | error | After published | After model | error |",
           "|---|---|---|---|---|---|---|"]
    for key, label in LEVELS:
        r = rows.get(key)
        if not r or "before" not in r or "after" not in r:
            continue
        b, a = r["before"], r["after"]
        out.append(f"| {label} | {num(b['published'])} | {num(b['model'])} [{num(b['model_min'])}-{num(b['model_max'])}] "
                   f"| {b['error_pct']:+.1f} % | {num(a['published'])} | {num(a['model'])} | {a['error_pct']:+.1f} % |")
    out += ["", "| change, After vs Before | published | model | one run, 90 % | published inside |", "|---|---|---|---|---|"]
    for key, label in CHANGES:
        c = rows.get(key, {}).get("change")
        if not c:
            continue
        out.append(f"| {label} | {c['published_pct']:+.2f} % | {c['model_pct']:+.2f} % | "
                   f"{c['one_run_p05_pct']:+.2f} % .. {c['one_run_p95_pct']:+.2f} % | "
                   f"{'yes' if c['published_inside'] else 'no'} |")
    return "\n".join(out) + "\n"


def run_label(sc):
    """'#7104, 500 prompts, async on' from the scenario itself."""
    name = sc["name"].replace("pr", "#", 1).split("-")[0]
    rate = sc.get("request_rate")
    load = f"{sc['num_prompts']} at once" if rate in ("inf", None) else f"{sc['num_prompts']} prompts at {num(float(rate))} req/s"
    model = "" if sc.get("model") == "qwen3-vl-8b" else f", {sc.get('model')}"
    return f"{name}{model}, {load}, async {'on' if sc.get('async_scheduling', True) else 'off'}"


def before_cell(row):
    """'published / model (error)' of a published-comparison row's Before arm."""
    b = row["before"]
    return f"{num(b['published'])} / {num(b['model'])} ({b['error_pct']:+.1f} %)"


def readme_row(path):
    """One row of README's summary: Before's levels (published / model, error) and the mean-TTFT change."""
    doc = load_result(path)
    pc = doc["published_comparison"]
    rows = {r["metric"]: r for r in pc["rows"]}
    cells = []
    for key in ("request_throughput", "mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms"):
        cells.append(before_cell(rows[key]))
    c = rows["mean_ttft_ms"]["change"]
    cells.append(f"{c['published_pct']:+.2f} % / {c['model_pct']:+.2f} % [{c['one_run_p05_pct']:+.1f}, "
                 f"{c['one_run_p95_pct']:+.1f}]{'' if c['published_inside'] else ' (outside)'}")
    role = "fitted" if pc.get("role") == "calibration" else "predicted"
    return f"| {run_label(doc['scenario'])} | {role} | " + " | ".join(cells) + " |"


def aa_row(path):
    """One row of the noise-floor table: an A/A run's (both arms one preset) change and its one-run
    interval per metric: what the declared noise alone does to a published pair."""
    doc = load_result(path)
    presets = doc["scenario"].get("presets") or []
    rows = {r["metric"]: r["change"] for r in doc["published_comparison"]["rows"]}
    cells = [f"{c['model_pct']:+.2f} % [{c['one_run_p05_pct']:+.2f}, {c['one_run_p95_pct']:+.2f}]"
             for c in (rows[k] for k in ("mean_ttft_ms", "request_throughput", "mean_tpot_ms"))]
    return f"| {run_label(doc['scenario'])} | `{presets[0] if presets else '?'}` twice | " + " | ".join(cells) + " |"


SHAPE = ("median_itl_ms", "p99_itl_ms", "max_output_tokens_per_s")


def shape_row(path):
    """One row of the step-time shape (Before arm): median ITL (a typical, mostly decode step), P99
    ITL (the heaviest: encoder and prefill chunks) and peak output tok/s (the fastest decode second),
    published / model (error). `fit-seeds.py --itl-shape` fits these on the calibration runs."""
    doc = load_result(path)
    pc = doc["published_comparison"]
    rows = {r["metric"]: r for r in pc["rows"]}
    cells = [before_cell(rows[key]) if "before" in rows.get(key, {}) else "-" for key in SHAPE]
    role = "calibration" if pc.get("role") == "calibration" else "prediction"
    return f"| {run_label(doc['scenario'])} ({role}) | " + " | ".join(cells) + " |"


def main():
    args = sys.argv[1:]
    if not args or args in (["--readme"], ["--aa"], ["--shape"]):
        sys.exit(__doc__)
    if args[0] == "--shape":
        print("| Before arm | median ITL ms pub. / model | P99 ITL ms pub. / model | peak output tok/s pub. / model |")
        print("|---|---|---|---|")
        print("\n".join(shape_row(p) for p in args[1:]))
        return
    if args[0] == "--aa":
        print("| published setup | A/A arms | mean TTFT change [one run, 90 %] | throughput | mean TPOT |")
        print("|---|---|---|---|---|")
        print("\n".join(aa_row(p) for p in args[1:]))
        return
    if args[0] == "--readme":
        print("| published run (Before arm) | role | req/s pub. / model | mean TTFT ms pub. / model | "
              "median TTFT ms pub. / model | mean TPOT ms pub. / model | "
              "mean-TTFT change pub. / model [one run, 90 %] |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(readme_row(p) for p in args[1:]))
        return
    print("\n".join(table(p) for p in args))


if __name__ == "__main__":
    main()
