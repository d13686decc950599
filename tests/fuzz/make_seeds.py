#!/usr/bin/env python3
"""Writes the seed corpora of the non-image fuzz targets (tests/fuzz/corpus/<target>/): valid
inputs of each parser plus edge cases. The image corpus comes from make_image_seeds.cpp (run it
first: the data-URL and request seeds embed its images). Run from the repository root:
    python3 tests/fuzz/make_seeds.py
"""
import base64
import gzip
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
IMAGES = CORPUS / "fuzz_image_decode"


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def data_url(file, media=None):
    raw = (IMAGES / file).read_bytes()
    media = media or {"jpg": "jpeg", "png": "png", "webp": "webp"}.get(file.rsplit(".", 1)[1], "png")
    return f"data:image/{media};base64," + base64.b64encode(raw).decode()


def data_urls():
    for f in ["ok-rgb.png", "ok-gray.jpg", "ok-lossy.webp", "ok-rgba.png", "bad-pnm-16bit-55-bytes.ppm",
              "bad-truncated.png", "bad-bomb-100000x100000.png"]:
        write("fuzz_data_url", f + ".url", data_url(f))
    write("fuzz_data_url", "unpadded.url", data_url("ok-rgb.png").rstrip("="))
    write("fuzz_data_url", "bad-base64.url", "data:image/png;base64,@@@@")
    write("fuzz_data_url", "no-comma.url", "data:image/png;base64")
    write("fuzz_data_url", "not-base64.url", "data:image/png,abc")
    write("fuzz_data_url", "text-media.url", "data:text/plain;base64,aGk=")
    write("fuzz_data_url", "http.url", "http://example.com/cat.jpg")
    write("fuzz_data_url", "file.url", "file:///etc/passwd")
    write("fuzz_data_url", "upper.url", "DATA:IMAGE/PNG;BASE64," + data_url("ok-gray.png").split(",", 1)[1])


def chat(content, **extra):
    body = {"model": "qwen3-vl-8b", "messages": [{"role": "user", "content": content}], "max_tokens": 8}
    body.update(extra)
    return json.dumps(body)


def requests():
    img = {"type": "image_url", "image_url": {"url": data_url("ok-rgb.png")}}
    seeds = {
        "chat-text": "0" + chat("describe the image"),
        "chat-image": "0" + chat([{"type": "text", "text": "what is this?"}, img]),
        "chat-two-images-stream": "0" + chat([img, img], stream=True, stream_options={"include_usage": True},
                                             ignore_eos=True, seed=7),
        "chat-system-multi": "0" + json.dumps({"model": "qwen3-vl-8b", "messages": [
            {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}, {"role": "user", "content": [{"type": "text", "text": "x"}]}],
            "max_completion_tokens": 3, "temperature": 0}),
        "chat-webp": "0" + chat([{"type": "image_url", "image_url": {"url": data_url("ok-lossy.webp")}}]),
        "chat-gif": "0" + chat([{"type": "image_url", "image_url": data_url("bad-1x1.gif", "gif")}]),
        "chat-wrong-model": "0" + json.dumps({"model": "gpt-4", "messages": []}),
        "chat-bad-types": "0" + json.dumps({"model": 1, "messages": "x", "max_tokens": -1, "stream": "yes"}),
        "chat-mm-kwargs": "0" + chat("x", mm_processor_kwargs={"max_pixels": 262144, "min_pixels": 4096}),
        "completions-text": "1" + json.dumps({"model": "qwen3-vl-8b", "prompt": "once upon", "max_tokens": 4}),
        "completions-ids": "1" + json.dumps({"model": "qwen3-vl-8b", "prompt": [1, 2, 3], "max_tokens": 4,
                                             "stream": True}),
        "completions-huge-max": "1" + json.dumps({"model": "qwen3-vl-8b", "prompt": "a", "max_tokens": 1e30}),
        "not-json": "0{\"model\": ",
        "empty": "0",
    }
    for name, body in seeds.items():
        write("fuzz_openai_request", name + ".json", body)


def sse():
    chunk = lambda text: json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": None}]})
    usage = json.dumps({"id": "c", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}})
    stream = "".join(f"data: {c}\n\n" for c in [chunk("Hel"), chunk("lo"), usage]) + "data: [DONE]\n\n"
    write("fuzz_sse", "stream-split7.txt", "\x06" + stream)
    write("fuzz_sse", "stream-split1.txt", "\x00" + stream)
    write("fuzz_sse", "crlf-comments.txt", "\x10" + ": keep-alive\r\nevent: x\r\ndata: " + chunk("a") + "\r\n\r\ndata: [DONE]\r\n\r\n")
    write("fuzz_sse", "error-event.txt", "\x03" + 'data: {"error": {"message": "boom", "code": 500}}\n\n')
    write("fuzz_sse", "no-done.txt", "\x20" + "data: " + chunk("x") + "\n\n")
    write("fuzz_sse", "multiline-data.txt", "\x05" + "data: {\"choices\":\ndata: []}\n\n")


def chunks():
    seeds = {
        "delta": {"choices": [{"delta": {"content": "hi \u00e9\U0001F600"}}]},
        "message": {"choices": [{"message": {"content": "done"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
        "text": {"choices": [{"text": "abc", "index": 0}]},
        "usage-only": {"choices": [], "usage": {"completion_tokens": 9007199254740993}},
        "error-object": {"error": {"message": "bad", "type": "x"}},
        "error-string": {"error": "bad"},
    }
    for name, doc in seeds.items():
        write("fuzz_chunk_json", name + ".json", json.dumps(doc, ensure_ascii=(name != "delta")))
    write("fuzz_chunk_json", "escapes.json", '{"choices":[{"delta":{"content":"a\\"b\\\\c\\u0041\\ud83d\\ude00"}}]}')
    write("fuzz_chunk_json", "lone-surrogate.json", '{"choices":[{"delta":{"content":"\\ud800"}}]}')
    write("fuzz_chunk_json", "deep.json", '{"choices":' + "[" * 60 + "]" * 60 + "}")
    write("fuzz_chunk_json", "not-object.json", "[1,2,3]")


def traces():
    for f in ["kineto_two_streams.json", "torch_npu_two_streams.json"]:
        raw = (ROOT / "tests" / "trace" / "fixtures" / f).read_bytes()
        write("fuzz_trace_import", f, raw)
    kineto = (ROOT / "tests" / "trace" / "fixtures" / "kineto_two_streams.json").read_bytes()
    write("fuzz_trace_import", "kineto_two_streams.json.gz", gzip.compress(kineto, mtime=0))
    write("fuzz_trace_import", "truncated.json.gz", gzip.compress(kineto, mtime=0)[:300])
    encbench = {"encbench": {"format": "encbench-chrome-trace", "device_kind": "sim"}, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "device 0"}},
        {"ph": "X", "name": "attn", "cat": "kernel", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3.25,
         "args": {"stream": 2, "correlation": 1}},
        {"ph": "X", "name": "cudaLaunchKernel", "cat": "cuda_runtime", "pid": 0, "tid": 0, "ts": 9, "dur": 1,
         "args": {"correlation": 1}},
        {"ph": "s", "id": 1, "pid": 0, "tid": 0, "ts": 9}, {"ph": "f", "id": 1, "pid": 1, "tid": 2, "ts": 10.5}]}
    write("fuzz_trace_import", "encbench.json", json.dumps(encbench))
    write("fuzz_trace_import", "array-form.json", json.dumps(encbench["traceEvents"]))
    write("fuzz_trace_import", "big-ts.json", '[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":"stream 7",'
          '"ts":1700000000123456.789,"dur":1e3}]')
    write("fuzz_trace_import", "empty-object.json", "{}")


def results():
    for f in sorted((ROOT / "tests" / "reports" / "fixtures").glob("*.json")):
        write("fuzz_result_json", f.name, f.read_bytes())
    write("fuzz_result_json", "unknown-kind.json", '{"schema": "something-else"}')
    write("fuzz_result_json", "number-beyond-double.json", '{"schema": "encbench-encode", "value": 1e400}')
    write("fuzz_result_json", "gbench-nan.json", '{"benchmarks": [{"name": "x", "cv": nan, "real_time": Infinity}]}')
    summary = (ROOT / "tests" / "reports" / "fixtures" / "vllm_serve_summary.json").read_bytes()
    write("fuzz_result_json", "vllm_serve_summary.json.gz", gzip.compress(summary, mtime=0))
    write("fuzz_result_json", "array.json", "[]")
    for f in sorted((ROOT / "scenarios" / "gates").glob("*.json")):
        write("fuzz_result_json", "gate-" + f.name, f.read_bytes())
    write("fuzz_result_json", "gate-wrong-types.json", json.dumps({
        "schema": "encbench-gate", "schema_version": 1, "alpha": "x", "defaults": {"relative": [1]},
        "metrics": [{"name": 5, "direction": "sideways"}]}))


def scenarios():
    for f in ["closed-loop.json", "closed-loop-ci.json"]:
        write("fuzz_scenario_json", f, (ROOT / "scenarios" / f).read_bytes())
    write("fuzz_scenario_json", "wrong-types.json", '{"rounds": "3", "presets": "a,b", "seed": -1}')
    write("fuzz_scenario_json", "wrong-schema.json", '{"schema": 5}')
    write("fuzz_scenario_json", "infinite-rate.json", '{"request_rate": 1e400, "rounds": 0}')
    write("fuzz_scenario_json", "array.json", "[]")
    # A seed scenario with its sample totals (the key's object, its bounds), and wrong ones.
    write("fuzz_scenario_json", "pr5810.json", (ROOT / "scenarios" / "seeds" / "pr5810.json").read_bytes())
    write("fuzz_scenario_json", "sample-totals-wrong.json",
          '{"workload": "w.json", "clock": "virtual", "num_prompts": 4, "sample_totals": '
          '{"requests": 4, "text_tokens": 3, "output_tokens": -1, "source": ""}}')
    # Op name maps (--op-map), fed to the same target by their schema.
    write("fuzz_scenario_json", "op-name-map.json",
          (ROOT / "scenarios" / "devices" / "op-maps" / "op-name-map.json").read_bytes())
    head = '{"schema": "encbench-op-name-map", "version": 1, '
    write("fuzz_scenario_json", "op-map-role-typo.json", head + '"encbench_ops": [{"ops": "attention", "role": "attention"}], '
          '"trace_kernels": [{"kernels": "FlashAttentionScore", "role": "atention", "source": "x"}]}')
    write("fuzz_scenario_json", "op-map-wrong-types.json", head + '"encbench_ops": {"ops": 1}, "trace_kernels": [3]}')
    write("fuzz_scenario_json", "op-map-stars.json", head + '"encbench_ops": [{"ops": "****a*b*c|?*?|", "role": "r"}], '
          '"trace_kernels": [{"kernels": "*|**|***", "role": "r", "source": ""}]}')


def model_files():
    # First byte: 0 workload, 1 serving model, 2 sim profile, 3 model preset, 4 --model-set text,
    # 5 host model, 6 API-server model.
    for f in sorted((ROOT / "scenarios" / "workloads").glob("*.json")):
        write("fuzz_model_files", "workload-" + f.name, b"\x00" + f.read_bytes())
    for f in sorted((ROOT / "scenarios" / "serving").glob("*.json")):
        write("fuzz_model_files", "serving-" + f.name, b"\x01" + f.read_bytes())
    # issue 35 item 5: engine_host_parts whose shares do not sum to 1 (exit 2 path)
    write("fuzz_model_files", "serving-bad-host-parts.json", "\x01" + json.dumps({
        "schema": "encbench-serving-model", "host_base_ms": {"value": 5, "source": "s"},
        "engine_host_parts": {"source": "s", "parts": {
            "schedule": {"base_share": 0.6, "per_seq_ms": 0.01, "overlaps_async": True, "overlaps_sync": False,
                         "code": "c", "source": "s"},
            "update_from_output": {"base_share": 0.6, "per_seq_ms": -1, "overlaps_async": True,
                                   "overlaps_sync": "no", "code": "c", "source": "s"}}}}))
    for f in ["ascend-910b.json", "h100-sxm.json"]:
        path = ROOT / "scenarios" / "devices" / f
        if path.exists():
            write("fuzz_model_files", "device-" + f, b"\x02" + path.read_bytes())
    for f in sorted((ROOT / "scenarios" / "models").glob("*.json"))[:3]:
        write("fuzz_model_files", "model-" + f.name, b"\x03" + f.read_bytes())
    write("fuzz_model_files", "model-set.txt", "\x04achieved_flops_fraction=0.5,host_base_ms=10")
    write("fuzz_model_files", "model-set-bad.txt", "\x04nonsense=1,host_base_ms=,=3")
    for f in sorted((ROOT / "scenarios" / "devices" / "host-models").glob("*.json")):
        write("fuzz_model_files", "host-model-" + f.name, b"\x05" + f.read_bytes())
    write("fuzz_model_files", "host-model-bad-class.json", "\x05" + json.dumps({
        "schema": "encbench-host-model", "schema_version": 1, "name": "x",
        "op_classes": {"kernel_lunch": {"ns": -1, "source": ""}}}))
    for f in sorted((ROOT / "scenarios" / "serving" / "api-server").glob("*.json")):
        write("fuzz_model_files", "api-server-" + f.name, b"\x06" + f.read_bytes())
    write("fuzz_model_files", "api-server-bad.json", "\x06" + json.dumps({
        "schema": "encbench-api-server", "schema_version": 1, "name": "x",
        "request_ms": {"value": -1, "source": "s"}, "decode_ns_per_pixl": {"value": 1, "source": "s"},
        "api_server_count": {"value": 1.5, "source": ""}}))
    write("fuzz_model_files", "api-server-falling-curve.json", "\x06" + json.dumps({
        "schema": "encbench-api-server", "schema_version": 1, "name": "x",
        "process_ms_by_pixels": {"points": [[65536, 5.34], [262144, 4.95], [1048576, 5.85]], "source": "s"}}))
    write("fuzz_model_files", "serving-bad-lm-step-ops.json", "\x01" + json.dumps({
        "schema": "encbench-serving-model", "lm_step_ops": {
            "source": "s", "host_model": {"name": "torch-npu-eager", "source": "s"},
            "decode_step": {"name": "graph", "source": "s"}, "mixed_step": {"name": "eager", "source": "s"},
            "device_kernels": {"per_layer": -1, "per_layer_qk_norm": 2, "per_step": 23, "source": "s"},
            "op_sets": {"eager": {"per_layer": {"torch_dispatch": 11}, "source": "s"}}}}))
    write("fuzz_model_files", "device-bad-efficiency.json", "\x02" + json.dumps({
        "name": "x", "peak_fp32_flops_per_s": {"value": 1e12, "source": "s"},
        "peak_fp16_flops_per_s": {"value": 1e12, "source": "s"}, "mem_bytes_per_s": {"value": 1e9, "source": "s"},
        "kernel_fixed_ns": {"value": 0, "source": "s"}, "d2h_latency_ns": {"value": 0, "source": "s"},
        "d2h_bytes_per_s": {"value": 1e9, "source": "s"}, "h2d_latency_ns": {"value": 0, "source": "s"},
        "h2d_bytes_per_s": {"value": 1e9, "source": "s"}, "host_wakeup_ns": {"value": 0, "source": "s"},
        "op_efficiency": {"matmul": {"value": 1.5, "ops": "", "source": ""}, "copy": {"value": 0.5, "ops": "pad_*"}}}))
    write("fuzz_model_files", "workload-empirical.json", "\x00" + json.dumps({
        "schema": "encbench-workload", "version": 1, "name": "x", "image_sizes": [[1024, 768], [1, 1]],
        "text_tokens": {"distribution": "empirical", "values": [1, 5000]}, "max_output_tokens": 1,
        "early_stop_probability": 1.0}))
    write("fuzz_model_files", "workload-huge.json", "\x00" + json.dumps({
        "schema": "encbench-workload", "version": 1, "name": "x",
        "image_pixels": {"distribution": "lognormal", "mean": 1e300, "sigma": 30},
        "aspect_ratios": [[1e-300, 1]], "text_tokens": {"distribution": "lognormal", "mean": 1e30, "sigma": 9}}))


def datasets():
    # First byte: 0 hf, 1 vision-arena, 2 custom, 3 custom_image (| 0x80: the rows' own output lengths).
    png = base64.b64encode((IMAGES / "ok-rgb.png").read_bytes()).decode()
    va = {"conversation": [[{"role": "user", "content": "what is in this picture?"}]],
          "images": [{"bytes": png}]}
    write("fuzz_dataset", "vision-arena.jsonl", "\x00" + json.dumps(va) + "\n" + json.dumps(va) + "\n")
    write("fuzz_dataset", "vision-arena-array.json", "\x01" + json.dumps([va]))
    byte_array = dict(va, images=[{"bytes": list((IMAGES / "ok-gray.jpg").read_bytes())}])
    write("fuzz_dataset", "byte-array.jsonl", "\x00" + json.dumps(byte_array))
    write("fuzz_dataset", "bad-byte-array.jsonl", "\x00" + json.dumps(dict(va, images=[{"bytes": [1, "x", 300]}])))
    write("fuzz_dataset", "data-url.jsonl", "\x00" + json.dumps(dict(va, images=[data_url("ok-lossy.webp")])))
    write("fuzz_dataset", "path-to-device.jsonl", "\x00" + json.dumps(dict(va, images=[{"path": "/dev/zero"}])))
    custom = {"prompt": "describe", "output_tokens": 7, "image_files": ["/dev/null"]}
    write("fuzz_dataset", "custom.jsonl", "\x82" + json.dumps({"prompt": "hello", "output_tokens": 7}) + "\n")
    write("fuzz_dataset", "custom-image.jsonl", "\x03" + json.dumps(custom) + "\n")
    write("fuzz_dataset", "not-json.jsonl", "\x00{\"conversation\": ")
    write("fuzz_dataset", "empty.jsonl", "\x00")


def timed_trace_seeds():
    # First byte with low nibble 8: timed_trace (| 0x80: ms timestamps x 0.001, 4-id chunks); the
    # seeds above keep their readers. Rows not starting at 0, shared hash ids, a partial last chunk,
    # a negative time (sent at once), too few hash ids, an out-of-order row, an epoch-sized time.
    def rows(*entries):
        return "".join(json.dumps(dict(zip(("timestamp", "input_length", "output_length", "hash_ids"), e))) + "\n"
                       for e in entries)
    write("fuzz_dataset", "timed-trace.jsonl",
          "\x08" + rows((1000, 40, 7, [1, 2, 3]), (1002.5, 32, 9, [1, 4]), (1002.5, 100, 1, [5])) + "\n")
    write("fuzz_dataset", "timed-trace-ms.jsonl",
          b"\x88" + rows((-30, 9, 2, [7, 8, 9]), (0, 0, 1, [1]), (1500, 5, 3, [])).encode())
    write("fuzz_dataset", "bad-timed-trace-order.jsonl", "\x08" + rows((5, 8, 2, [1]), (4, 8, 2, [1])))
    write("fuzz_dataset", "bad-timed-trace-epoch.jsonl", "\x08" + rows((1700000000, 8, 2, [1])))


if __name__ == "__main__":
    for t in ["fuzz_data_url", "fuzz_openai_request", "fuzz_sse", "fuzz_chunk_json", "fuzz_trace_import",
              "fuzz_result_json", "fuzz_scenario_json", "fuzz_model_files", "fuzz_dataset"]:
        # Inputs the fuzzer found (found-*) stay: they are regression seeds.
        for f in (CORPUS / t).glob("*"):
            # found-*: inputs the fuzzer found; engine-timeline.json: written by hand from a
            # server answer (harness/server/engine_timeline.cpp), not by this script; fuzz_dataset's
            # burstgpt.csv, sonnet.txt and sharegpt.json: written by hand (commit 6d58246), kept too.
            hand_written = {"engine-timeline.json", "burstgpt.csv", "sonnet.txt", "sharegpt.json"}
            if not f.name.startswith("found-") and f.name not in hand_written:
                f.unlink()
    data_urls(); requests(); sse(); chunks(); traces(); results(); scenarios(); model_files(); datasets(); timed_trace_seeds()
