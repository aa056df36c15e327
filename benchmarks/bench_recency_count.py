"""What does the exact recency count cost at long sequences?

    python benchmarks/bench_recency_count.py

Per (n, n) score matrix, all C(n, 3) key pairs with ties: the compiled count
(:func:`recency_lib.kernels.count_pairs`, through
:func:`recency_lib.features.later_and_tied_counts`) and the numpy reference (row by row), on
standard normal scores with some exact ties; minimum CPU time over repeats, in ms per matrix. (For
scale: the Fenwick-tree count this replaced took 17-19 ms per 512 x 512 matrix on the same
machine, README of 2025-11.)
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration

from recency_lib import kernels
from recency_lib.features import (
    later_and_tied_counts,
    later_and_tied_counts_numpy,
)


def best(fn, reps: int) -> float:
    fn()
    out = float("inf")
    for _ in range(reps):
        t = time.process_time()
        fn()
        out = min(out, time.process_time() - t)
    return out


def main() -> int:
    print(calibration())
    compiled = kernels.load() is not None
    for n, batch in ((10, 512), (64, 64), (128, 16), (256, 4), (512, 4)):
        s = np.random.default_rng(n).standard_normal((batch, n, n))
        s[0] = np.round(4 * s[0])  # ties
        tol = np.full(batch, 1e-9)
        reps = 3 if n >= 256 else 10
        line = f"n = {n:4d} (batch {batch:3d}):"
        if compiled:
            ms = 1e3 * best(partial(later_and_tied_counts, s, tol), reps) / batch
            line += f" compiled {ms:9.3f} ms"
        numpy_reps = 1 if n >= 256 else reps
        ms = 1e3 * best(partial(later_and_tied_counts_numpy, s, tol), numpy_reps) / batch
        line += f" | numpy {ms:9.3f} ms"
        print(line + " per matrix", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
