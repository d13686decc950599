#!/usr/bin/env python3
"""numpy's own draws, the reference for tests/client/numpy_random_test.cpp (one number a line).

  generator SEED                  np.random.default_rng(SEED): a fixed mix of integers() and random()
  gamma SEED SHAPE SCALE N        np.random.seed(SEED), then N scalar np.random.gamma(SHAPE, SCALE)
  schedule SEED N RATE BURST      vLLM's get_request delays (serve.py): gamma gaps, cumulative, rescaled
  random SEED N LO HI OLO OHI VOCAB ALLOWED PREFIX
                                  vLLM's RandomDataset draws: input lens, output lens, offsets, prefix indices
"""
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
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv)
