#!/usr/bin/env python3
"""Fits the serving model's free coefficients to the calibration set, and nothing else.

Calibration set (issue 35): the #7104 and #6204 Before and After tables
(scenarios/seeds/pr7104.json and pr6204.json, "role": "calibration"). Every other published table
(scenarios/seeds/*.json with "role": "prediction") is a prediction: this script refuses them.

Free coefficients (log-space Nelder-Mead): achieved_flops_fraction, lm_per_seq_ms (the device's cost per
sequence in a step; issue 35 item 5 moved the fitted per-sequence term from the host, where
vLLM's own micro-benchmarks put microseconds, to the device; host_base_ms is declared: with async scheduling the calibration runs hide every
engine-host part behind the device step, so they cannot identify it), and the achieved efficiency of the two attention kernels the calibration runs use (op_efficiency
attention_fusion: #7104's both arms run npu_fusion_attention; attention_flash_unpad: #6204's both
arms run _npu_flash_attention_unpad), written into a copy of the device profile for each
evaluation (--profiles-dir). The kernel is the one encoder difference between the two runs the
published tables can identify; #5810 (the switch between them, a prediction) checks the ratio.
With --free-api-server-cost (off by default) the API-server stage's per-pixel processing cost is a
fifth free coefficient (process_ns_per_pixel in the API-server model the serving model names,
written into a copy of the serving folder per evaluation): #6204's 1000 requests at once pass that
one serial process before the scheduler, so it sets the shape of the TTFT distribution (median
against mean) that the published tables show. Off, it keeps the file's value. The adopted fit
used it with --itl-shape (docs/calibration.md "The fit"); without --itl-shape it put the prefill
and an attention kernel at their bounds.
The encoder's host cost is not fitted: it is the eager host model the serving model names
(encoder_host_model, each class with its source). The others keep the values and sources in the
serving-model file. Loss, summed over the calibration scenarios: squared log errors of
throughput, duration, mean and median TTFT, mean TPOT and peak concurrency on both arms
(concurrency at half weight), plus the After-vs-Before change of mean TTFT (2 points off costs as
much as a 10 % error). With --itl-shape also median ITL, P99 ITL and peak output tok/s (half weight
each): a typical step is mostly decode, the P99 step an encoder and prefill chunk, the peak second
the fastest decode, so they tell a slow decode step (lm_per_seq_ms) from a slow prefill
(achieved_flops_fraction), which throughput and mean TPOT alone cannot. Each evaluation is one
`encbench run --scenario ... --model-set ...` per scenario (virtual time: deterministic).

  scripts/fit-seeds.py [--encbench build/harness/cli/encbench] [--calibration A.json,B.json]
                       [--seeds 2] [--max-evals 60] [--free-api-server-cost] [--itl-shape]
                       [--tie-attention-kernels] [--start name=value,...] [--write]

--write stores the fitted values, with their source, in the serving-model file and the device
profile (and, with --free-api-server-cost, the API-server model the serving model names).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import shutil
import tempfile

FREE = ["achieved_flops_fraction", "lm_per_seq_ms"]
FREE_EFFICIENCY = ["attention_fusion", "attention_flash_unpad"]  # op_efficiency classes of the profile
# Coefficients of the API-server model the serving model names (scenarios/serving/api-server/NAME.json):
# its serial per-pixel processing sets how fast a burst reaches the scheduler (#6204's 1000 at once).
FREE_API = ["process_ns_per_pixel"]
API_SOURCE_NOTE = {"process_ns_per_pixel": (
    "the calibration set identifies it: with 1000 requests at once (#6204) the API server's serial processing sets "
    "when each reaches the scheduler, so the published median TTFT 44.9 s bounds the first 500 requests' "
    "processing to <= 89.7 ms each on average; vLLM's own stage timing (vllm bench mm-processor, vLLM PR #31655, "
    "Qwen2-VL-7B-Instruct on an unstated x86 host: hf_processor_time 163.63 ms per request over 987,136 pixels = "
    "165.8 ns per pixel) is the cross-check, a different model's processor on a different host")}
BOUNDS = {"achieved_flops_fraction": (0.02, 1.0), "attention_fusion": (0.05, 1.0), "attention_flash_unpad": (0.05, 1.0), "host_base_ms": (0.0, 500.0),
          "host_per_seq_ms": (0.0, 20.0), "lm_per_seq_ms": (0.0, 20.0), "encoder_dispatch_us_per_op": (0.0, 2000.0),
          "process_ns_per_pixel": (1.0, 1000.0)}
WEIGHTS = {"request_throughput": 1.0, "duration": 1.0, "mean_ttft_ms": 1.0, "median_ttft_ms": 1.0,
           "mean_tpot_ms": 1.0, "max_concurrent_requests": 0.5}
# The step-time shape the same tables print (--itl-shape): median ITL is a typical step (decode-heavy),
# P99 ITL the heaviest steps (encoder and prefill chunks), peak output tok/s the fastest decode
# second. Throughput and mean TPOT alone cannot tell a slow decode step from a slow prefill step.
SHAPE_WEIGHTS = {"median_itl_ms": 0.5, "p99_itl_ms": 0.5, "max_output_tokens_per_s": 0.5}
FLOOR = {"host_base_ms": 0.01, "host_per_seq_ms": 0.001, "lm_per_seq_ms": 0.001, "encoder_dispatch_us_per_op": 0.1}


def api_server_path(serving_dir, serving_model):
    """The API-server model file the serving model names, inside a serving folder."""
    return os.path.join(serving_dir, "api-server", serving_model["api_server"]["name"] + ".json")


def write_profiles(tmp, profile_path, values, serving_model):
    """A copy of the profiles folder with the fitted op efficiencies in the device's profile, and of
    the serving folder beside it with the fitted API-server coefficients."""
    folder = os.path.join(tmp, "devices")
    shutil.copytree(os.path.dirname(profile_path), folder)
    # Files found beside the profiles folder (the API-server models in ../serving/api-server) come too.
    serving = os.path.join(os.path.dirname(os.path.dirname(profile_path)), "serving")
    if os.path.isdir(serving):
        shutil.copytree(serving, os.path.join(tmp, "serving"))
        api_path = api_server_path(os.path.join(tmp, "serving"), serving_model)
        with open(api_path) as f:
            api = json.load(f)
        for name in FREE_API:
            if name in values:
                api[name]["value"] = values[name]
        with open(api_path, "w") as f:
            json.dump(api, f)
    with open(profile_path) as f:
        profile = json.load(f)
    for name in FREE_EFFICIENCY:
        profile["op_efficiency"][name]["value"] = values[name]
    with open(os.path.join(folder, os.path.basename(profile_path)), "w") as f:
        json.dump(profile, f)
    return folder


def set_efficiency(text, name, value, source):
    """The profile's text with one op_efficiency class's value and source replaced."""
    pattern = re.compile(r'("%s": \{\s*"value": )([0-9.eE+-]+)(,\s*"ops": "[^"]*",\s*"source": )"[^"]*"' % name)
    text, n = pattern.subn(lambda m: m.group(1) + repr(value) + m.group(3) + json.dumps(source), text)
    if n != 1:
        sys.exit(f"op_efficiency class {name} not found once in the profile")
    return text


def run_model(args, values, scenario):
    model_set = ",".join(f"{k}={v:.6g}" for k, v in values.items() if k not in FREE_EFFICIENCY + FREE_API)
    # Without --free-api-server-cost, values holds no API-server coefficient and the copy keeps the declared one.
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [args.encbench, "run", "--scenario", scenario, "--seeds", str(args.seeds),
               "--model-set", model_set, "--result", out, "--result-dir", tmp,
               "--profiles-dir", write_profiles(tmp, args.profile, values, args.serving_model)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def loss_of(doc, weights):
    rows = {r["metric"]: r for r in doc["published_comparison"]["rows"]}
    loss = 0.0
    for metric, w in weights.items():
        for side in ("before", "after"):
            if side not in rows.get(metric, {}):
                sys.exit(f"fit-seeds: {doc['scenario'].get('name', '?')}: its published table has no {side} {metric}, "
                         "which this loss fits (drop --itl-shape, or add the number to the scenario's published block)")
            r = rows[metric][side]
            loss += w * math.log(max(r["model"], 1e-9) / r["published"]) ** 2
    change = rows["mean_ttft_ms"]["change"]
    loss += (0.1 * (change["model_pct"] - change["published_pct"]) / 2.0) ** 2
    return loss


def to_params(x, names):
    out = {}
    for name, v in zip(names, x):
        lo, hi = BOUNDS[name]
        out[name] = min(hi, max(lo, math.exp(v) - FLOOR.get(name, 0.0)))
    return out


def from_params(values, names):
    return [math.log(values[n] + FLOOR.get(n, 0.0)) for n in names]


def nelder_mead(f, x0, step, max_evals):
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step if j == i else 0.0) for j in range(n)] for i in range(n)]
    scores = [f(x) for x in simplex]
    evals = n + 1
    while evals < max_evals:
        order = sorted(range(n + 1), key=lambda i: scores[i])
        simplex = [simplex[i] for i in order]
        scores = [scores[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflect = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(reflect); evals += 1
        if fr < scores[0]:
            expand = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(expand); evals += 1
            simplex[-1], scores[-1] = (expand, fe) if fe < fr else (reflect, fr)
        elif fr < scores[-2]:
            simplex[-1], scores[-1] = reflect, fr
        else:
            contract = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(contract); evals += 1
            if fc < scores[-1]:
                simplex[-1], scores[-1] = contract, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (p[j] - b) for j, b in enumerate(best)] for p in simplex[1:]]
                scores = [scores[0]] + [f(p) for p in simplex[1:]]
                evals += n
    i = min(range(n + 1), key=lambda k: scores[k])
    return simplex[i], scores[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encbench", default="build/harness/cli/encbench")
    ap.add_argument("--calibration", default="scenarios/seeds/pr7104.json,scenarios/seeds/pr6204.json",
                    help="comma-separated calibration scenarios (published.role = calibration)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--max-evals", type=int, default=60)
    ap.add_argument("--profile", default="scenarios/devices/ascend-910b.json",
                    help="the device profile whose attention efficiencies are fitted")
    ap.add_argument("--start", default="", help="start point name=value,... (default: the files' values)")
    ap.add_argument("--free-api-server-cost", action="store_true",
                    help="also fit the API server's process_ns_per_pixel (default: the file's value; "
                         "the adopted fit used it with --itl-shape, docs/calibration.md)")
    ap.add_argument("--tie-attention-kernels", action="store_true",
                    help="one efficiency for both attention kernels (attention_flash_unpad = attention_fusion): "
                         "tests whether the calibration runs need the kernels to differ at all")
    ap.add_argument("--itl-shape", action="store_true",
                    help="also fit the tables' median and P99 ITL and peak output tok/s (half weight each): "
                         "they separate a typical decode step's cost from the heaviest steps'")
    ap.add_argument("--write", action="store_true",
                    help="store the fit in the serving-model and profile files (and the API-server model with "
                         "--free-api-server-cost)")
    args = ap.parse_args()
    weights = dict(WEIGHTS, **(SHAPE_WEIGHTS if args.itl_shape else {}))
    scenarios = [s for s in args.calibration.split(",") if s]
    model_paths = set()
    for path in scenarios:
        with open(path) as f:
            scenario = json.load(f)
        if scenario.get("published", {}).get("role") != "calibration":
            sys.exit(f"{path} is not a calibration scenario (published.role != calibration)")
        model_paths.add(scenario["serving_model"])
    if len(model_paths) != 1:
        sys.exit("the calibration scenarios must share one serving model, got: " + ", ".join(sorted(model_paths)))
    model_path = model_paths.pop()
    with open(model_path) as f:
        serving = json.load(f)
    with open(args.profile) as f:
        profile = json.load(f)
    start = {n: serving[n]["value"] for n in FREE}
    start.update({n: profile["op_efficiency"][n]["value"] for n in FREE_EFFICIENCY})
    args.serving_model = serving
    api_path = api_server_path(os.path.join(os.path.dirname(os.path.dirname(args.profile)), "serving"), serving)
    with open(api_path) as f:
        api = json.load(f)
    efficiency_names = FREE_EFFICIENCY[:1] if args.tie_attention_kernels else FREE_EFFICIENCY
    names = FREE + efficiency_names + (FREE_API if args.free_api_server_cost else [])
    if args.free_api_server_cost:
        if "process_ms_by_pixels" in api:
            ap.error(f"--free-api-server-cost: {api_path} gives process_ms_by_pixels, the HF processor's measured cost per "
                     "image by size (issue 59): there is no per-pixel cost to fit")
        start.update({n: api[n]["value"] for n in FREE_API})
    for item in filter(None, args.start.split(",")):
        name, value = item.split("=")
        if name not in names:
            ap.error(f"--start: {name} is not a free coefficient of this fit (free: {', '.join(names)})")
        start[name] = float(value)
    history = []

    def with_tie(values):
        if args.tie_attention_kernels:
            values["attention_flash_unpad"] = values["attention_fusion"]
        return values

    def objective(x):
        values = with_tie(to_params(x, names))
        loss = sum(loss_of(run_model(args, values, path), weights) for path in scenarios)
        history.append((loss, values))
        print(f"[fit] {len(history):3d} loss {loss:.5f} " + " ".join(f"{k}={v:.4g}" for k, v in values.items()),
              flush=True)
        return loss

    best_x, best_loss = nelder_mead(objective, from_params(start, names), 0.5, args.max_evals)
    best = with_tie(to_params(best_x, names))
    at_bounds = [n for n, v in best.items() if v in BOUNDS[n]]
    if at_bounds:
        print("[fit] at a bound (a sign the model may be misspecified; docs/calibration.md says when such a fit was adopted): "
              + ", ".join(f"{n}={best[n]:.4g}" for n in at_bounds))
    print("[fit] best loss %.5f after %d evaluations" % (best_loss, len(history)))
    for path in scenarios:
        print(f"[fit] {path}")
        for r in run_model(args, best, path)["published_comparison"]["rows"]:
            b, a = r.get("before"), r.get("after")
            if b and a:
                print(f"  {r['metric']:26s} before {b['published']:10.2f} model {b['model']:10.2f} ({b['error_pct']:+6.1f} %)"
                      f"  after {a['published']:10.2f} model {a['model']:10.2f} ({a['error_pct']:+6.1f} %)")
    if args.write:
        flags = "".join(f" --{name.replace('_', '-')}" for name in ("itl_shape", "free_api_server_cost", "tie_attention_kernels")
                        if getattr(args, name)) + (f" --start {args.start}" if args.start else "")
        source = (f"fit: scripts/fit-seeds.py --seeds {args.seeds} --max-evals {args.max_evals}{flags} on {args.calibration} "
                  f"(their Before and After tables only; loss {best_loss:.4f})")
        with open(args.profile) as f:
            profile_text = f.read()
        for name, value in best.items():
            if name in FREE_EFFICIENCY:
                profile_text = set_efficiency(profile_text, name, float(f"{value:.3g}"), source)
            elif name in FREE_API:
                api[name] = {"value": float(f"{value:.4g}"), "source": source + "; " + API_SOURCE_NOTE[name]}
            else:
                serving[name] = {"value": float(f"{value:.4g}"), "source": source}
        with open(model_path, "w") as f:
            json.dump(serving, f, indent=2)
            f.write("\n")
        with open(args.profile, "w") as f:
            f.write(profile_text)  # edited in place: the profile's own layout stays
        written = [model_path, args.profile]
        if args.free_api_server_cost:
            with open(api_path, "w") as f:
                json.dump(api, f, indent=2)
                f.write("\n")
            written.append(api_path)
        print("[fit] wrote " + ", ".join(written))


if __name__ == "__main__":
    main()
