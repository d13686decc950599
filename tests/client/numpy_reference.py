#!/usr/bin/env python3
"""numpy's own draws, the reference for tests/client/numpy_random_test.cpp (one number a line).

  generator SEED                  np.random.default_rng(SEED): a fixed mix of integers() and random()
  gamma SEED SHAPE SCALE N        np.random.seed(SEED), then N scalar np.random.gamma(SHAPE, SCALE)
  schedule SEED N RATE BURST      vLLM's get_request delays (serve.py): gamma gaps, cumulative, rescaled
  random SEED N LO HI OLO OHI VOCAB ALLOWED PREFIX
                                  vLLM's RandomDataset draws: input lens, output lens, offsets, prefix indices
  permutation SEED N              np.random.default_rng(SEED).permutation(N) (a loaded HF Dataset's shuffle)
  hf_stream SEED N BUFFER         the row order of a streamed one-shard HF dataset after shuffle(SEED,
                                  BUFFER): datasets' BufferShuffledExamplesIterable, transcribed
  legacy_pick SEED ROWS N         pandas' DataFrame.sample(N, random_state=SEED) of ROWS rows, as pandas
                                  draws it: RandomState(SEED).permutation(ROWS)[:N], or randint(0, ROWS, N)
                                  when N > ROWS (replace=True; pandas itself is not installed here)
  py_choices SEED N K             random.seed(SEED); random.choices(range(N), k=K) (sonnet's line draws)
  py_rows SEED N WANT             vLLM's custom/ShareGPT rows: random.seed; random.shuffle(range(N)); the
                                  first WANT; then random.seed; random.choices for the missing ones
"""
import random
import sys

import numpy as np


def out(values):
    for v in values:
        print(repr(float(v)) if isinstance(v, (float, np.floating)) else int(v))


def main(argv):
    mode = argv[1]
    if mode == "generator":
        g = np.random.default_rng(int(argv[2]))
        out(g.integers(0, 100, size=50))
        out(g.integers(5, 1000000, size=20))
        out(g.integers(0, 2**40, size=10))
        out(g.integers(0, 2**32, size=5))
        out(g.random(size=7))
        out(g.integers(-3, 4, size=9))
        out(g.integers(0, 2**62, size=3))
        out([g.integers(0, 151643)])
    elif mode == "gamma":
        np.random.seed(int(argv[2]))
        shape, scale, n = float(argv[3]), float(argv[4]), int(argv[5])
        out([np.random.gamma(shape=shape, scale=scale) for _ in range(n)])
    elif mode == "schedule":
        np.random.seed(int(argv[2]))
        n, rate, burstiness = int(argv[3]), float(argv[4]), float(argv[5])
        theta = 1.0 / (rate * burstiness)
        delay_ts = [float(np.random.gamma(shape=burstiness, scale=theta)) for _ in range(n)]
        for i in range(1, n):
            delay_ts[i] += delay_ts[i - 1]
        factor = (n / rate) / delay_ts[-1]
        out([d * factor for d in delay_ts])
    elif mode == "random":
        seed, n, lo, hi, olo, ohi, vocab, allowed, prefix = (int(a) for a in argv[2:11])
        g = np.random.default_rng(seed)
        out(g.integers(lo, hi + 1, size=n))
        out(g.integers(olo, ohi + 1, size=n))
        out(g.integers(0, vocab, size=n))
        out(g.integers(0, allowed, size=prefix) if prefix > 0 else [])
    elif mode == "permutation":
        out(np.random.default_rng(int(argv[2])).permutation(int(argv[3])))
    elif mode == "hf_stream":
        rng = np.random.default_rng(int(argv[2]))
        n, buffer_size = int(argv[3]), int(argv[4])

        def indices():
            while True:
                yield from (int(i) for i in rng.integers(0, buffer_size, size=1000))

        it = indices()
        buffer, order = [], []
        for x in range(n):
            if len(buffer) == buffer_size:
                i = next(it)
                order.append(buffer[i])
                buffer[i] = x
            else:
                buffer.append(x)
        rng.shuffle(buffer)
        out(order + buffer)
    elif mode == "legacy_pick":
        rs = np.random.RandomState(int(argv[2]))
        rows, n = int(argv[3]), int(argv[4])
        out(rs.permutation(rows)[:n] if n <= rows else rs.randint(0, rows, size=n))
    elif mode == "py_choices":
        random.seed(int(argv[2]))
        out(random.choices(range(int(argv[3])), k=int(argv[4])))
    elif mode == "py_rows":
        seed, n, want = int(argv[2]), int(argv[3]), int(argv[4])
        rows = list(range(n))
        random.seed(seed)
        random.shuffle(rows)
        rows = rows[:want]
        if len(rows) < want:
            random.seed(seed)
            rows += random.choices(rows, k=want - len(rows))
        out(rows)
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv)
