#!/usr/bin/python3
"""How a burst of vision requests reaches vLLM's API-server stage, run after run.

A replica of the two Python programs a published `vllm bench serve --request-rate inf` run puts
between the client's clock and vLLM's input processing, built from the same libraries:

- client: aiohttp with `vllm bench serve`'s connector (no connection limit, keep-alive) and its
  request function: every request's task is created at once, each takes its start time, then
  POSTs its chat-completions JSON (text + one base64 JPEG data URL) and reads the reply;
- server: FastAPI on uvicorn (uvloop + httptools, as `vllm serve` runs), the body validated into a
  pydantic model, the image loaded as vLLM's MediaConnector does (base64 decode, PIL open, RGB) on
  a ThreadPoolExecutor of 8 (VLLM_MEDIA_LOADING_THREAD_COUNT), then the serial input processing
  on the event loop as `AsyncLLM.add_request -> process_inputs` blocks it: a blocking sleep (or,
  with --serial-stage spin, a busy wait) of the API-server model's cost (scenarios/serving/api-server/vllm-qwen-vl.json:
  request_ms + pixels x (hash + process) ns).

Per request it records when its task started (the client's TTFT clock), when the handler got the
parsed body, when the decode ended, and when the serial stage began and ended; per run, the mean
of (serial end - client start), the part of TTFT this stage sets. Repeating the same burst shows
(1) the order requests reach the serial stage against the send order and (2) how much that
order, and the mean, move from one run to the next: the arrival jitter of one published run.
It prints the serving model's arrival_jitter_ms_per_request and arrival_jitter_sigma fitted to
the handler arrivals (serving/virtual_loop.hpp has the form).

Usage: scripts/measure-frontend-burst.py [--requests 100] [--runs 5] [--seed 0] [--out FILE.json]
Needs Debian 12's python3-aiohttp python3-fastapi python3-uvicorn python3-uvloop python3-httptools
python3-pil (apt-get install -y ...). The machine's load moves the figures: say what it was.
"""
import argparse
import asyncio
import base64
import io
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import time

API_SERVER_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "serving",
                                "api-server", "vllm-qwen-vl.json")


def value(doc, key):
    v = doc[key]
    return v["value"] if isinstance(v, dict) else v


# ---------------------------------------------------------------- server (a child process)
def run_server(port, cost_file, spin):
    import concurrent.futures
    from typing import List, Optional, Union

    import uvicorn
    from fastapi import FastAPI, Request
    from PIL import Image
    from pydantic import BaseModel

    model = json.load(open(cost_file))
    request_ms = value(model, "request_ms")
    ns_per_pixel = value(model, "process_ns_per_pixel") + value(model, "hash_ns_per_pixel")

    class ImageUrl(BaseModel):
        url: str

    class Part(BaseModel):
        type: str
        text: Optional[str] = None
        image_url: Optional[ImageUrl] = None

    class Message(BaseModel):
        role: str
        content: Union[str, List[Part]]

    class ChatRequest(BaseModel):
        model: str
        messages: List[Message]
        max_completion_tokens: Optional[int] = None
        stream: Optional[bool] = False
        request_id: int

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    app = FastAPI()
    records = []

    def load_data_url(url):  # vLLM's _load_data_url: base64 decode, PIL open, convert
        began = time.perf_counter()
        data = base64.b64decode(url.split(",", 1)[1])
        img = Image.open(io.BytesIO(data))
        img.load()
        return img.convert("RGB"), began, time.perf_counter()

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest):
        entered = time.perf_counter()
        url = next(p.image_url.url for m in body.messages if not isinstance(m.content, str)
                   for p in m.content if p.image_url is not None)
        img, decode_began, decode_ended = await asyncio.get_running_loop().run_in_executor(pool, load_data_url, url)
        decoded = time.perf_counter()
        cost_s = (request_ms * 1e6 + img.width * img.height * ns_per_pixel) * 1e-9
        start = time.perf_counter()
        if spin:  # pure Python: holds the GIL too, starving the decode threads
            while time.perf_counter() - start < cost_s:
                pass
        else:  # blocks the event loop, releases the GIL, as the processor's torch/PIL work mostly does
            time.sleep(cost_s)
        end = time.perf_counter()
        records.append({"id": body.request_id, "entered": entered, "decoded": decoded, "start": start,
                        "end": end, "pixels": img.width * img.height,
                        "decode_began": decode_began, "decode_ended": decode_ended})
        return {"id": body.request_id}

    @app.post("/records")
    async def dump(request: Request):
        out = list(records)
        records.clear()
        return out

    uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", log_level="error",
                access_log=False)


# ---------------------------------------------------------------- client
def make_requests(n, seed, texture="photo"):
    """Vision-arena-like images: lognormal pixels (mean 0.63 MP, sigma 1.0, the workload file's
    numbers), aspect 4:3, encoded as vLLM's VisionArenaDataset sends them (JPEG at PIL's default
    quality 75); texture "photo" adds pixel noise so a body has a photo's bytes (~1-2 bits a pixel),
    "smooth" leaves the upsampled 8x8 colours (a few times smaller bodies); text of ~67 tokens.
    Returns the request bodies and each image's pixel count."""
    from PIL import Image
    rng = random.Random(seed)
    sigma = 1.0
    mu = math.log(0.63e6) - sigma * sigma / 2
    reqs, pixels = [], []
    for i in range(n):
        px = min(max(rng.lognormvariate(mu, sigma), 3e4), 4e6)
        w = max(28, int(math.sqrt(px * 4 / 3)))
        h = max(28, int(px / w))
        pixels.append(w * h)
        small = Image.frombytes("RGB", (8, 8), bytes(rng.randrange(256) for _ in range(192)))
        img = small.resize((w, h), Image.BICUBIC)
        if texture == "photo":
            img = Image.blend(img, Image.effect_noise((w, h), 60).convert("RGB"), 0.15)
        buf = io.BytesIO()
        img.save(buf, "JPEG")
        url = "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()
        text = " ".join("word%d" % rng.randrange(1000) for _ in range(50))
        reqs.append({"model": "m", "max_completion_tokens": 128, "stream": False, "request_id": i,
                     "messages": [{"role": "user", "content": [{"type": "text", "text": text},
                                                                {"type": "image_url", "image_url": {"url": url}}]}]})
    return reqs, pixels


async def one_burst(port, reqs):
    import aiohttp
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300, use_dns_cache=True,
                                     keepalive_timeout=60, enable_cleanup_closed=True, force_close=False)
    url = "http://127.0.0.1:%d/v1/chat/completions" % port
    starts = {}
    failures = []
    async with aiohttp.ClientSession(connector=connector, trust_env=True,
                                     timeout=aiohttp.ClientTimeout(total=6 * 3600)) as session:
        async def send(payload):
            starts[payload["request_id"]] = time.perf_counter()
            try:
                async with session.post(url, json=payload, headers={"Content-Type": "application/json"}) as r:
                    await r.read()
            except aiohttp.ClientError as e:  # a reset connection is a failed request, not a lost run
                failures.append("%d: %s" % (payload["request_id"], e))
        await asyncio.gather(*[asyncio.create_task(send(p)) for p in reqs])
        async with session.post("http://127.0.0.1:%d/records" % port) as r:
            recs = await r.json()
    t0 = min(starts.values())
    for rec in recs:
        rec["sent"] = starts[rec["id"]] - t0
        for k in ("entered", "decoded", "start", "end", "decode_began", "decode_ended"):
            rec[k] -= t0  # perf_counter is CLOCK_MONOTONIC on Linux: one clock for both processes
    if failures:
        print("  %d requests failed (excluded): %s" % (len(failures), failures[0]), flush=True)
    return sorted(recs, key=lambda r: r["start"])


def kendall_tau(order):
    n = len(order)
    concordant = sum(1 for i in range(n) for j in range(i + 1, n) if order[i] < order[j])
    pairs = n * (n - 1) // 2
    return (2 * concordant - pairs) / pairs if pairs else 1.0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def require_modules():
    missing = []
    for name in ("aiohttp", "fastapi", "uvicorn", "uvloop", "httptools", "PIL"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        print("measure-frontend-burst: missing Python modules %s; on Debian 12: apt-get install -y python3-aiohttp "
                 "python3-fastapi python3-uvicorn python3-uvloop python3-httptools python3-pil, and run it with "
                 "/usr/bin/python3" % ", ".join(missing), file=sys.stderr)
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--api-server-model", default=API_SERVER_MODEL)
    ap.add_argument("--out", default="")
    ap.add_argument("--texture", choices=["photo", "smooth"], default="photo",
                    help="the images' content: photo (pixel noise, a photo's JPEG bytes; default) or smooth "
                         "(upsampled colours, small bodies; the first measurements)")
    ap.add_argument("--serial-stage", choices=["sleep", "spin"], default="sleep",
                    help="how the serial processing blocks the event loop: sleep (releases the GIL, as the HF "
                         "processor's torch and PIL calls mostly do; default) or spin (a pure-Python busy wait that "
                         "also holds the GIL)")
    ap.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    require_modules()
    if a.serve:
        run_server(a.serve, a.api_server_model, a.serial_stage == "spin")
        return
    # Every request's image is built and held in memory (~0.1 MB each as a data URL), and each run
    # sends them all at once: bounded so a typo cannot take the machine's memory or hours.
    if not 2 <= a.requests <= 2000 or not 2 <= a.runs <= 100:
        ap.error("--requests must be in [2, 2000] and --runs in [2, 100] (got %d and %d)" % (a.requests, a.runs))
    port = free_port()
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", str(port),
                               "--api-server-model", a.api_server_model, "--serial-stage", a.serial_stage])
    try:
        for _ in range(100):
            if server.poll() is not None:
                sys.exit("measure-frontend-burst: the replica server exited with %d before listening" % server.returncode)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            sys.exit("measure-frontend-burst: the replica server did not listen on port %d within 10 s" % port)
        reqs, pixels = make_requests(a.requests, a.seed, a.texture)
        body_bytes = [len(json.dumps(r)) for r in reqs]
        print("bodies: median %.0f kB, %.2f bits a pixel of JPEG (base64 included)" % (
            statistics.median(body_bytes) / 1e3,
            8 * sum(body_bytes) / sum(pixels)), flush=True)
        asyncio.run(one_burst(port, reqs[:2]))  # warm-up, as vllm bench serve's initial test request
        runs = []
        for r in range(a.runs):
            recs = asyncio.run(one_burst(port, reqs))
            if len(recs) < 2:
                sys.exit("measure-frontend-burst: run %d: the server answered %d of %d requests; nothing to measure"
                         % (r, len(recs), a.requests))
            order = [rec["id"] for rec in recs]
            mean_end = statistics.mean(rec["end"] - rec["sent"] for rec in recs)
            entered_span = max(rec["entered"] for rec in recs) - min(rec["entered"] for rec in recs)
            runs.append({"order": order, "kendall_tau_vs_send": kendall_tau(order),
                         "mean_stage_end_s": mean_end, "entered_span_s": entered_span, "records": recs})
            print("run %d: mean(serial end - sent) %.3f s, handler entries span %.3f s, Kendall tau vs send "
                  "order %.3f, first ids %s" % (r, mean_end, entered_span, runs[-1]["kendall_tau_vs_send"], order[:12]),
                  flush=True)
    finally:
        server.terminate()
        server.wait()
    # The serving model's arrival jitter (serving/virtual_loop.hpp): the k-th request sent in a
    # burst reaches the handler k x per_request x exp(sigma z) after it was sent. Fit in log space
    # over every request of every run: per_request = exp(median of log(delay / k)), sigma = their
    # standard deviation.
    logs = []
    for run in runs:
        for k, rec in enumerate(sorted(run["records"], key=lambda x: x["sent"]), 1):
            logs.append(math.log(max(rec["entered"] - rec["sent"], 1e-6) / k))
    fit = {"arrival_jitter_ms_per_request": 1e3 * math.exp(statistics.median(logs)),
           "arrival_jitter_sigma": statistics.stdev(logs)}
    print("arrival jitter fit: %.2f ms per request in transit, sigma %.2f (%d requests)" %
          (fit["arrival_jitter_ms_per_request"], fit["arrival_jitter_sigma"], len(logs)))
    decode_ns_per_pixel = statistics.median(
        1e9 * (rec["decode_ended"] - rec["decode_began"]) / rec["pixels"] for run in runs for rec in run["records"])
    fit["decode_ns_per_pixel"] = decode_ns_per_pixel
    print("decode on the pool: median %.1f ns a pixel (base64 + PIL open + RGB, in the thread)" % decode_ns_per_pixel)
    means = [r["mean_stage_end_s"] for r in runs]
    cv = statistics.stdev(means) / statistics.mean(means)
    pair = [means[i + 1] / means[i] - 1 for i in range(len(means) - 1)]
    print("mean over runs %.3f s, CV %.2f %%, consecutive-run changes %s" %
          (statistics.mean(means), 100 * cv, ", ".join("%+.2f %%" % (100 * p) for p in pair)))
    if a.out:
        json.dump({"schema": "encbench-frontend-burst", "schema_version": 1, "requests": a.requests,
                   "runs_count": a.runs, "seed": a.seed, "loadavg": os.getloadavg(), "cv_of_mean": cv, "fit": fit,
                   "runs": runs}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
