"""Command line: ``python -m recency_lib simulate --alpha 0.5 --gamma 1 ... --out result.json``.

Every input is checked before any work (the options, the config, ``--workers``, the output paths, the
memory the run needs). A bad input prints one ``error:`` line and exits 2; a failure of the machine
(a full disk) one line naming the file and exit 1; Ctrl-C and SIGTERM stop the workers, leave the
previous result file as it was and exit 130 / 143. ``RECENCY_LIB_DEBUG=1`` shows the traceback of an
unexpected error.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys

PROG = "python -m recency_lib"


class _Usage(Exception):
    """A command-line problem: one line, exit 2."""


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that temporaries are removed on the way out."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        where = (
            f"{PROG} simulate"
            if "simulate" in sys.argv[1:] or self.prog.endswith("simulate")
            else PROG
        )
        raise _Usage(f"{message}; allowed: the options of `{where} --help`")


def _parser() -> argparse.ArgumentParser:
    from .config import ENGINES, PLACEMENTS, WEIGHTS, SimConfig
    from .metrics import LEVEL
    from .norms import NAMES

    d = SimConfig()
    p = _Parser(
        prog=PROG,
        allow_abbrev=False,
        description="Simulate the paper's model and decide Definition 1.",
        epilog=f"The options of a command: {PROG} simulate --help",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="simulate")
    s = sub.add_parser(
        "simulate",
        allow_abbrev=False,
        help="run one setting and print its summary",
        description="Run one setting, print per layer its recency probability and the Definition-1 "
        "decision (family-wise at --level), and optionally write the result and a figure.",
    )
    s.prog = f"{PROG} simulate"
    for name, kind, text in (
        ("alpha", float, "anisotropy in [0, 1], Eq. (6)"),
        ("gamma", float, "residual weight, Eq. (20)"),
        ("norm", str, f"one of {', '.join(NAMES)}"),
        ("n", int, "tokens"),
        ("d", int, "hidden size"),
        ("layers", int, "layers"),
        ("samples", int, "Monte-Carlo sequences"),
        ("seed", int, "root seed"),
        ("engine", str, f"one of {', '.join(ENGINES)}"),
        ("eps", float, "normalization epsilon"),
    ):
        s.add_argument(
            f"--{name}", type=kind, default=getattr(d, name), help=f"{text} (default %(default)s)"
        )
    x = s.add_argument_group("beyond the paper (all off by default: the paper's model)")
    x.add_argument(
        "--weights",
        default=d.weights,
        help=f"W_Q,K,V,O: one of {', '.join(WEIGHTS)} (default %(default)s)",
    )
    x.add_argument(
        "--weights-seed",
        type=int,
        default=d.weights_seed,
        help="seed of fixed weights (default %(default)s)",
    )
    x.add_argument(
        "--heads",
        type=int,
        default=d.heads,
        help="attention heads, a divisor of d (default %(default)s)",
    )
    x.add_argument("--ffn", action="store_true", help="add the feed-forward block (GELU, width 4d)")
    x.add_argument(
        "--rope", action="store_true", help="rotary position embedding on queries and keys"
    )
    x.add_argument(
        "--placement",
        default=d.placement,
        help=f"one of {', '.join(PLACEMENTS)} (default %(default)s)",
    )
    s.add_argument(
        "--level",
        type=float,
        default=LEVEL,
        help="family-wise error level of the decisions (default %(default)s)",
    )
    s.add_argument(
        "--chunk-size", type=int, default=None, help="samples per task (never changes the result)"
    )
    s.add_argument(
        "--workers",
        type=int,
        default=1,
        help=f"processes, 1 to {_cpus()} here (default %(default)s)",
    )
    s.add_argument(
        "--out",
        default=None,
        help="write the result here (JSON; a .npz path: binary): a new file or a "
        "result file of this library, replaced only by a run that succeeded",
    )
    s.add_argument(
        "--plot",
        default=None,
        help="draw every layer's mean scores here (.png, .svg or .pdf; needs matplotlib)",
    )
    return p


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _run(argv) -> int:
    hugepage = os.environ.get("NUMPY_MADVISE_HUGEPAGE")  # numpy reads it as it is imported
    if hugepage is not None and not hugepage.strip().isdigit():
        raise ValueError(
            f"NUMPY_MADVISE_HUGEPAGE={hugepage!r} (environment variable) is not allowed; allowed: 0 or 1, or unset"
        )
    from .config import SimConfig
    from .engines import require_memory, resolve_engine, simulate
    from .files import check_output_path
    from .result import RESULT_FILE, is_result_file
    from .validation import check_int, check_level

    a = _parser().parse_args(argv)
    cfg = SimConfig(
        alpha=a.alpha,
        gamma=a.gamma,
        norm=a.norm,
        n=a.n,
        d=a.d,
        layers=a.layers,
        samples=a.samples,
        seed=a.seed,
        engine=a.engine,
        eps=a.eps,
        weights=a.weights,
        weights_seed=a.weights_seed,
        heads=a.heads,
        ffn=a.ffn,
        rope=a.rope,
        placement=a.placement,
    )
    workers = check_int("workers", a.workers, 1, _cpus())
    level = check_level(a.level)
    if a.chunk_size is not None:
        check_int("chunk_size", a.chunk_size, 1)
    if a.out is not None:
        check_output_path(a.out, "out", ours=is_result_file, what=RESULT_FILE)
    if a.plot is not None:
        from .plot import check_plot_path

        check_plot_path(a.plot)
        if importlib.util.find_spec("matplotlib") is None:
            raise ValueError(
                f"plot={a.plot!r} needs matplotlib; allowed: pip install 'recency_lib[plot]', or no --plot"
            )
    require_memory(cfg, resolve_engine(cfg), workers)
    if workers > 1:
        from .workers import worker_pool

        with worker_pool(workers) as pool:
            res = simulate(cfg, chunk_size=a.chunk_size, executor=pool)
    else:
        res = simulate(cfg, chunk_size=a.chunk_size)
    if a.out is not None:
        res.save(a.out)
    if a.plot is not None:
        res.plot(a.plot)
    print(res.summary(level))
    for path in (a.out, a.plot):
        if path is not None:
            print(f"wrote {path}")
    return 0


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input, 1 failure, 128 + signal)."""

    def terminate(signum, frame):
        raise _Terminated()

    old = signal.signal(signal.SIGTERM, terminate)
    try:
        return _run(argv)
    except (_Usage, ValueError) as exc:
        return _fail(str(exc), 2)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        return _fail("interrupted (SIGINT); no partial file left", 130)
    except _Terminated:
        return _fail("terminated (SIGTERM); no partial file left", 143)
    except OSError as exc:
        return _fail(
            f"{exc.strerror or exc}: {exc.filename or ''} (the previous file, if any, is unchanged)",
            1,
        )
    except Exception as exc:  # a bug: one line, the traceback on request
        if os.environ.get("RECENCY_LIB_DEBUG"):
            raise
        return _fail(
            f"internal error {type(exc).__name__}: {exc} (RECENCY_LIB_DEBUG=1 shows the traceback)",
            1,
        )
    finally:
        signal.signal(signal.SIGTERM, old)


def _fail(message: str, code: int) -> int:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)
    return code


def entry() -> None:
    """The ``recency-sim`` script and ``python -m recency_lib``."""
    sys.exit(main())
