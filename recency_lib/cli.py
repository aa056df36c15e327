"""Command line: ``python -m recency_lib simulate --alpha 0.5 --gamma 1 ... --out result.json``.

Every input is checked before any work (the options, the config, ``--workers``, the output paths,
the memory the run needs). A bad input prints one ``error:`` line and exits 2; a failure of the
machine (a full disk) one line naming the file and exit 1; Ctrl-C and SIGTERM stop the workers,
leave the previous result file as it was and exit 130 / 143. ``RECENCY_LIB_DEBUG=1`` shows the
traceback of an unexpected error."""

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
    from . import norms, placements
    from .config import ENGINES, WEIGHTS, SimConfig
    from .metrics import LEVEL
    from .workers import cpus

    p = _Parser(prog=PROG, allow_abbrev=False, description="Simulate the paper's model.")
    p.epilog = f"The options of a command: {PROG} simulate --help"
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="simulate")
    s = sub.add_parser("simulate", allow_abbrev=False, help="run one setting, print its summary")
    s.description = (
        "Run one setting, print per layer its recency probability and the Definition-1 decision "
        "(family-wise at --level), and optionally write the result and a figure."
    )
    s.prog = f"{PROG} simulate"
    paper = s.add_argument_group("the paper's model (and where its norm sits)")
    beyond = s.add_argument_group("beyond the paper (all off by default: the paper's model)")
    for group, name, kind, text in (
        (paper, "alpha", float, "anisotropy in [0, 1], Eq. (6)"),
        (paper, "gamma", float, "residual weight, Eq. (20)"),
        (paper, "norm", str, f"one of {', '.join(norms.NAMES)}"),
        (paper, "n", int, "tokens"),
        (paper, "d", int, "hidden size"),
        (paper, "layers", int, "layers"),
        (paper, "samples", int, "Monte-Carlo sequences"),
        (paper, "seed", int, "root seed"),
        (paper, "engine", str, f"one of {', '.join(ENGINES)}"),
        (paper, "eps", float, "normalization epsilon"),
        (paper, "placement", str, f"where the norm sits: {', '.join(placements.NAMES)}"),
        (beyond, "weights", str, f"W_Q,K,V,O: one of {', '.join(WEIGHTS)}"),
        (beyond, "weights_seed", int, "seed of fixed weights"),
        (beyond, "heads", int, "attention heads, a divisor of d"),
        (beyond, "ffn", bool, "add the feed-forward block (GELU, width 4d)"),
        (beyond, "rope", bool, "rotary position embedding on queries and keys"),
    ):
        option = "--" + name.replace("_", "-")
        if kind is bool:
            group.add_argument(option, action="store_true", help=text)
        else:
            default = getattr(SimConfig(), name)
            group.add_argument(
                option, type=kind, default=default, help=f"{text} (default {default})"
            )
    for option, kind, default, text in (
        ("--level", float, LEVEL, f"family-wise error level of the decisions (default {LEVEL})"),
        ("--chunk-size", int, None, "samples per task (never changes the result)"),
        ("--workers", int, 1, f"processes, 1 to {cpus()} here (default 1)"),
        ("--out", str, None, "write the result here (JSON; .npz: binary), replacing only a result"),
        ("--plot", str, None, "draw every layer's mean scores here (.png, .svg, .pdf; matplotlib)"),
    ):
        s.add_argument(option, type=kind, default=default, help=text)
    return p


#: From this many sequences a run says its expected time first (a pilot of it, timed here).
PILOT_FROM = 10**6


def _say_expected_time(cfg, workers: int) -> None:
    """One line on stderr before a long run: its time from a pilot here, over ``workers``."""
    from .engines import pilot

    size, seconds = pilot(cfg)
    total = seconds * cfg.samples / size / workers
    took = f"{total:.0f} s" if total < 90 else f"{total / 60:.0f} min"
    took = took if total < 5400 else f"{total / 3600:.1f} h"
    over = f" over {workers} processes" if workers > 1 else ""
    print(
        f"{PROG}: {cfg.samples:,} sequences, expected time about {took}{over} (a pilot of "
        f"{size:,} ran here in {seconds:.2f} s); RECENCY_LIB_PROGRESS=1 shows the progress",
        file=sys.stderr,
        flush=True,
    )


def _run(argv) -> int:
    hugepage = os.environ.get("NUMPY_MADVISE_HUGEPAGE")  # numpy reads it as it is imported
    if hugepage is not None and not hugepage.strip().isdigit():
        raise ValueError(
            f"NUMPY_MADVISE_HUGEPAGE={hugepage!r} (environment variable) is not allowed; "
            "allowed: 0 or 1, or unset"
        )
    from dataclasses import fields

    from .config import SimConfig
    from .engines import require_memory, resolve_engine, simulate
    from .files import check_output_path
    from .result import RESULT_FILE, is_result_file
    from .validation import check_int, check_level
    from .workers import cpus

    a = _parser().parse_args(argv)
    cfg = SimConfig(**{f.name: getattr(a, f.name) for f in fields(SimConfig)})
    workers = check_int("workers", a.workers, 1, cpus())
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
                f"plot={a.plot!r} needs matplotlib; allowed: pip install 'recency_lib[plot]', "
                "or no --plot"
            )
    require_memory(cfg, resolve_engine(cfg), workers)
    if cfg.samples >= PILOT_FROM:
        _say_expected_time(cfg, workers)
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
    """Run the command line; the exit status: 0 ok, 2 bad input, 1 failure, 128 + a signal."""

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
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''} (the previous file is kept)", 1)
    except Exception as exc:  # a bug: one line, the traceback on request
        if os.environ.get("RECENCY_LIB_DEBUG"):
            raise
        debug = "RECENCY_LIB_DEBUG=1 shows the traceback"
        return _fail(f"internal error {type(exc).__name__}: {exc} ({debug})", 1)
    finally:
        signal.signal(signal.SIGTERM, old)


def _fail(message: str, code: int) -> int:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)
    return code


def entry() -> None:
    """The ``recency-sim`` script and ``python -m recency_lib``."""
    sys.exit(main())
