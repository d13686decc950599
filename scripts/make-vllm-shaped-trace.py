#!/usr/bin/env python3
"""Writes a Kineto trace in the shape of a vLLM serving run, for measuring `encbench trace`'s
speed and memory (docs/trace.md, "Speed and memory"): STEPS engine steps, each a GPU worker
`execute_new_N_cached_M` annotation around KERNELS cudaLaunchKernel calls (each with its kernel,
correlation id and ac2g flow pair) and a blocking D2H cudaMemcpyAsync; no ProfilerStep. Timings
are made up (deterministic); the file is not a measurement.

    python3 scripts/make-vllm-shaped-trace.py STEPS OUT.json [KERNELS]
    (2030 steps of 40 kernels: ~50 MB, ~412k events)
"""
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    steps, out = int(sys.argv[1]), sys.argv[2]
    kernels = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    corr, t = 1, 1000.0
    with open(out, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "generated"}], "traceEvents": [\n')
        f.write('{"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "VLLM::Worker"}},\n')
        f.write('{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", '
                '"ts": 0.0, "dur": %.3f}' % (steps * (kernels * 25.0 + 400.0) + 2000.0))
        for step in range(steps):
            start = t
            f.write(',\n{"ph": "X", "cat": "user_annotation", "name": "execute_new_%d_cached_%d", "pid": 100, '
                    '"tid": 100, "ts": %.3f, "dur": %.3f}' % (step % 7, step % 5, start, kernels * 25.0 + 300.0))
            device = start + 20.0
            for k in range(kernels):
                call = t + 5.0
                f.write(',\n{"ph": "X", "cat": "cpu_op", "name": "aten::op_%d", "pid": 100, "tid": 100, '
                        '"ts": %.3f, "dur": 20.0, "args": {"External id": %d}}' % (k % 9, t, corr))
                f.write(',\n{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, '
                        '"ts": %.3f, "dur": 6.0, "args": {"cbid": 211, "correlation": %d}}' % (call, corr))
                device = max(device, call + 8.0)
                dur = 15.0 + (k * 7 + step) % 13
                f.write(',\n{"ph": "X", "cat": "kernel", "name": "kernel_%d", "pid": 0, "tid": 7, "ts": %.3f, '
                        '"dur": %.3f, "args": {"device": 0, "stream": 7, "correlation": %d, "grid": [1, 1, 1]}}'
                        % (k % 11, device, dur, corr))
                f.write(',\n{"ph": "s", "id": %d, "pid": 100, "tid": 100, "ts": %.3f, "cat": "ac2g", "name": "ac2g"}'
                        % (corr, call))
                f.write(',\n{"ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %.3f, "cat": "ac2g", "name": "ac2g", '
                        '"bp": "e"}' % (corr, device))
                device += dur
                corr += 1
                t += 25.0
            copy_end = device + 10.0
            f.write(',\n{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 100, '
                    '"ts": %.3f, "dur": %.3f, "args": {"correlation": %d}}' % (t, copy_end + 5.0 - t, corr))
            f.write(',\n{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, '
                    '"tid": 7, "ts": %.3f, "dur": 10.0, "args": {"device": 0, "stream": 7, "correlation": %d}}'
                    % (device, corr))
            corr += 1
            t = max(t, copy_end + 5.0) + 400.0
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
