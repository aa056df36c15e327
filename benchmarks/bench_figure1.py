"""Target 1 of issue #3 alone: the four Figure-1 settings (alpha = 0 without normalization;
alpha = 0, 0.5 with LayerNorm; alpha = 0.5 with LayerNorm and gamma = 1), n = 10, d = 64,
4 layers, 1e5 samples each, with the recency probability, on ProcessPoolExecutor(2).

    python benchmarks/bench_figure1.py [--runs 5] [--markdown]

Same measurement as ``bench_engines.py --only t1`` (fresh child interpreter, median wall,
cold run, import + kernel load, peak memory of all processes).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engines import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--only", "t1", *sys.argv[1:]]))
