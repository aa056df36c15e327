"""Command line: ``python -m recency_lib simulate --alpha 0.5 --gamma 1 ... --out result.json``.

Bad input prints one line on stderr and exits 2 (no traceback); the result file is written
atomically, so an interrupted run leaves no truncated file.
"""
from __future__ import annotations

import argparse
import sys

from .config import ENGINES, NORMS, PLACEMENTS, WEIGHTS, SimConfig
from .validation import check_int, check_z


class _Parser(argparse.ArgumentParser):
    def error(self, message):                      # one line, exit 2 (argparse's default is usage + exit 2)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m recency_lib", description="Simulate the paper's model and report recency metrics.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = sub.add_parser("simulate", help="run one setting and write its result file")
    d = SimConfig()
    s.add_argument("--alpha", type=float, default=d.alpha, help="anisotropy in [0, 1], Eq. (6) (default %(default)s)")
    s.add_argument("--gamma", type=float, default=d.gamma, help="residual weight, Eq. (20) (default %(default)s)")
    s.add_argument("--norm", default=d.norm, help=f"one of {', '.join(NORMS)} (default %(default)s)")
    s.add_argument("--n", type=int, default=d.n, help="tokens (default %(default)s)")
    s.add_argument("--d", type=int, default=d.d, help="hidden size (default %(default)s)")
    s.add_argument("--layers", type=int, default=d.layers, help="layers (default %(default)s)")
    s.add_argument("--samples", type=int, default=d.samples, help="Monte-Carlo samples (default %(default)s)")
    s.add_argument("--seed", type=int, default=d.seed, help="root seed (default %(default)s)")
    s.add_argument("--engine", default=d.engine, help=f"one of {', '.join(ENGINES)} (default %(default)s)")
    s.add_argument("--eps", type=float, default=d.eps, help="normalization epsilon (default %(default)s)")
    x = s.add_argument_group("beyond the paper (chapter 8; all off by default = the paper's model)")
    x.add_argument("--weights", default=d.weights, help=f"W_Q,K,V,O: one of {', '.join(WEIGHTS)} (default %(default)s)")
    x.add_argument("--weights-seed", type=int, default=d.weights_seed, help="seed of fixed weights (default %(default)s)")
    x.add_argument("--heads", type=int, default=d.heads, help="attention heads, a divisor of d (default %(default)s)")
    x.add_argument("--ffn", action="store_true", help="add the feed-forward block (GELU, width 4d)")
    x.add_argument("--rope", action="store_true", help="rotary position embedding on queries and keys")
    x.add_argument("--placement", default=d.placement, help=f"one of {', '.join(PLACEMENTS)} (default %(default)s)")
    s.add_argument("--z", type=float, default=3.0, help="standard errors for the Definition-1 verdict (default %(default)s)")
    s.add_argument("--chunk-size", type=int, default=None, help="samples per task (does not change results)")
    s.add_argument("--workers", type=int, default=1, help="processes to use (default %(default)s)")
    s.add_argument("--out", default=None, help="write the result here (JSON; a .npz path: compressed binary)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = SimConfig(alpha=args.alpha, gamma=args.gamma, norm=args.norm, n=args.n, d=args.d,
                        layers=args.layers, samples=args.samples, seed=args.seed,
                        engine=args.engine, eps=args.eps, weights=args.weights, weights_seed=args.weights_seed,
                        heads=args.heads, ffn=args.ffn, rope=args.rope, placement=args.placement)
        check_int("workers", args.workers, 1)
        from .engines import _check_chunk_size, simulate
        _check_chunk_size(args.chunk_size)
        check_z(args.z)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(args.workers) as pool:
            res = simulate(cfg, chunk_size=args.chunk_size, executor=pool, z=args.z)
    else:
        res = simulate(cfg, chunk_size=args.chunk_size, z=args.z)
    if args.out:
        res.save(args.out)
    print(res.summary())
    if args.out:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
