"""Command line: ``python -m recency_lib simulate --alpha 0.5 --gamma 1 ... --out result.json``.

The contract: every input is checked before any work (options are exact: no abbreviations, no
option twice, numbers in plain decimal; the config; ``--workers`` within the CPUs; ``--out`` nothing
yet or a result file of this library (a notebook, a source file or any other file is refused), in a
writable folder; the memory and time the run needs, :mod:`recency_lib.budget`). A problem prints one
``error:`` line on stderr (long values cut) and exits 2; a failure of the machine (disk full, out
of memory) one line and exit 1; never a traceback (``RECENCY_LIB_DEBUG=1`` shows one for an
unexpected error). The result file is replaced only after a run that succeeded with finite numbers,
atomically, keeping the existing file's permissions; printing (a path with undecodable bytes, a
terminal that cannot show "±") never fails a run that succeeded: what cannot be shown is escaped.
SIGINT / SIGTERM / SIGHUP stop the workers at once, remove temporaries and leave the previous result
untouched (exit 130 / 143 / 129); SIGKILL ends the workers too. The handlers are in place before
numpy and the simulator are imported (with the signals held back: :func:`recency_lib.signals.deferred`),
so an interrupt right after the start is one line too.
"""
from __future__ import annotations

import faulthandler
import os
import sys

from .signals import Terminated, deferred, signals_as_exceptions
from .text import one_line, short

_INT = r"[+-]?[0-9]+"
_REAL = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"


class _UsageError(Exception):
    """A command-line problem: one line, exit 2."""


def worker_pool(workers: int):
    """:func:`recency_lib.workers.worker_pool` (imported when a pool is needed)."""
    from .workers import worker_pool as pool

    return pool(workers)


def _integer(text: str) -> int:
    """A plain decimal integer (no spaces, underscores, exponents or other digits)."""
    import argparse
    import re

    if not re.fullmatch(_INT, text):
        raise argparse.ArgumentTypeError(f"{short(text)} is not an integer; allowed: decimal digits, e.g. 100000")
    if len(text) > 40:
        raise argparse.ArgumentTypeError(f"{short(text)} has {len(text)} digits; allowed: at most 19 (int64)")
    return int(text)


def _real(text: str) -> float:
    """A plain decimal number (e.g. 0.5, -1, 1e-3) that is finite as a float64."""
    import argparse
    import re

    if not re.fullmatch(_REAL, text):
        raise argparse.ArgumentTypeError(f"{short(text)} is not a number; allowed: a finite decimal number, e.g. 0.5")
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{short(text)} overflows float64; allowed: a finite number")
    return value


def _argparse_classes():
    """The parser (its errors are one line) and the store-once action; defined on first use, so that
    argparse is imported after the signal handlers are in place."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):                  # argparse's default: usage + exit 2; here one line
            if "allowed" not in message:
                message += f"; allowed: the options of `{self.prog} --help`"
            raise _UsageError(message)

    class Once(argparse.Action):
        """Store the value; an option given twice is an error (which one would be meant?)."""

        def __call__(self, parser, namespace, values, option_string=None):
            seen = namespace.__dict__.setdefault("_seen", set())
            if self.dest in seen:
                raise _UsageError(f"{option_string} given twice; allowed: each option once")
            seen.add(self.dest)
            setattr(namespace, self.dest, True if self.nargs == 0 else values)

    return Parser, Once


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                         # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _parser():
    from .config import ENGINES, NORMS, PLACEMENTS, WEIGHTS, SimConfig

    _Parser, _Once = _argparse_classes()
    p = _Parser(prog="python -m recency_lib", allow_abbrev=False,
                description="Simulate the paper's model and report recency metrics.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = sub.add_parser("simulate", help="run one setting and write its result file", allow_abbrev=False,
                       epilog="Runs estimated to need more memory than this machine has, or more than "
                              "RECENCY_LIB_MAX_HOURS hours (default 168), are refused before they start.")
    d = SimConfig()

    def opt(name, kind, default, text, group=s):
        group.add_argument(name, type=kind, default=default, action=_Once, help=text)

    def flag(name, text, group=s):
        group.add_argument(name, action=_Once, nargs=0, default=False, help=text)

    opt("--alpha", _real, d.alpha, "anisotropy in [0, 1], Eq. (6) (default %(default)s)")
    opt("--gamma", _real, d.gamma, "residual weight, Eq. (20) (default %(default)s)")
    opt("--norm", str, d.norm, f"one of {', '.join(NORMS)} (default %(default)s)")
    opt("--n", _integer, d.n, "tokens (default %(default)s)")
    opt("--d", _integer, d.d, "hidden size (default %(default)s)")
    opt("--layers", _integer, d.layers, "layers (default %(default)s)")
    opt("--samples", _integer, d.samples, "Monte-Carlo samples (default %(default)s)")
    opt("--seed", _integer, d.seed, "root seed (default %(default)s)")
    opt("--engine", str, d.engine, f"one of {', '.join(ENGINES)} (default %(default)s)")
    opt("--eps", _real, d.eps, "normalization epsilon (default %(default)s)")
    x = s.add_argument_group("beyond the paper (chapter 8; all off by default = the paper's model)")
    opt("--weights", str, d.weights, f"W_Q,K,V,O: one of {', '.join(WEIGHTS)} (default %(default)s)", x)
    opt("--weights-seed", _integer, d.weights_seed, "seed of fixed weights (default %(default)s)", x)
    opt("--heads", _integer, d.heads, "attention heads, a divisor of d (default %(default)s)", x)
    flag("--ffn", "add the feed-forward block (GELU, width 4d)", x)
    flag("--rope", "rotary position embedding on queries and keys", x)
    opt("--placement", str, d.placement, f"one of {', '.join(PLACEMENTS)} (default %(default)s)", x)
    opt("--z", _real, 3.0, "standard errors for the Definition-1 verdict (default %(default)s)")
    opt("--chunk-size", _integer, None, "samples per task (does not change results)")
    opt("--workers", _integer, 1, f"processes to use, 1 to the CPUs available ({_cpus()} here) (default %(default)s)")
    opt("--out", str, None, "write the result here (JSON; a .npz path: binary): a new file, or a result "
                            "file of this library, replaced only by a successful run")
    opt("--plot", str, None, "also draw every layer's mean scores with its recency probability here "
                             "(.png, .svg or .pdf; needs matplotlib)")
    return p


def _prepare(args):
    """Everything checked before any work: the config, the options, the output path, the budget."""
    from .budget import require
    from .config import SimConfig
    from .engines import block_size, resolve_engine
    from .files import check_output_path
    from .result import RESULT_FILE
    from .validation import check_int, check_z

    cfg = SimConfig(alpha=args.alpha, gamma=args.gamma, norm=args.norm, n=args.n, d=args.d,
                    layers=args.layers, samples=args.samples, seed=args.seed,
                    engine=args.engine, eps=args.eps, weights=args.weights, weights_seed=args.weights_seed,
                    heads=args.heads, ffn=args.ffn, rope=args.rope, placement=args.placement)
    workers = check_int("workers", args.workers, 1, _cpus())
    if args.chunk_size is not None:
        check_int("chunk_size", args.chunk_size, 1)
    z = check_z(args.z)
    out = None if args.out is None else check_output_path(args.out, "out", replaces=RESULT_FILE)
    plot = None
    if args.plot is not None:
        from .plot import check_plot_path

        plot = check_plot_path(args.plot, "plot")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError(f"plot={shown_path(args.plot)} needs matplotlib, which is not installed; allowed: "
                             f"pip install 'recency_lib[plot]', or no --plot") from None
    engine = resolve_engine(cfg)
    bsize = block_size(cfg, engine)
    workers = min(workers, -(-cfg.samples // bsize))          # never more processes than blocks
    require(cfg, engine, lambda c: block_size(c, engine), workers=workers, in_flight=2 * workers + 2,
            task_blocks=None if args.chunk_size is None else -(-args.chunk_size // bsize),
            json_out=out is not None and out.suffix != ".npz")
    return cfg, {"workers": workers, "z": z, "out": out, "plot": plot, "chunk_size": args.chunk_size}


def shown_path(path) -> str:
    """A path as text that any terminal can show: bytes that do not decode (kept by Python as lone
    surrogates) as ``\\xNN`` escapes, not as an error."""
    try:
        raw = os.fsencode(path)
    except (TypeError, UnicodeError):
        return short(path)
    return raw.decode(sys.getfilesystemencoding() or "utf-8", "backslashreplace")


def _say(text: str, stream=None) -> None:
    """Print ``text`` on ``stream`` (stdout); what its encoding cannot show is escaped, never an error."""
    stream = sys.stdout if stream is None else stream
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeError:
        text = text.encode(encoding, "backslashreplace").decode(encoding, "replace")
    except LookupError:                               # an encoding Python does not know
        text = text.encode("ascii", "backslashreplace").decode("ascii")
    try:
        print(text, file=stream)
    except BrokenPipeError:                           # `... | head`: main() says nothing more
        raise
    except (OSError, ValueError):                     # a terminal gone, a closed stream: nothing to show it on
        pass


def _run(argv) -> int:
    import warnings

    with deferred():                       # numpy, the simulator and its C kernel, with the handlers in place;
        from .engines import kernel_name, simulate   # an interrupt meanwhile is raised here, once they are loaded
        kernel_name()
        # numpy loads numpy.random at its first use, the first draw: its Cython modules run Python code
        # as they initialise, and a SIGINT raised there was lost (the run went on to exit 0; 3 of 80
        # launches interrupted ~0.08 s after the handlers were set). Every extension a run needs is
        # imported here (tests/lib/test_hostile_round3.py checks none is left for later).
        import numpy.random  # noqa: F401

    args = _parser().parse_args(argv)
    cfg, o = _prepare(args)
    # an overflow is reported by SimResult.check (which layer, which parameter), not by numpy's
    # warnings; set before the pool forks, so the workers inherit it
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    if o["workers"] > 1:
        with worker_pool(o["workers"]) as pool:
            res = simulate(cfg, chunk_size=o["chunk_size"], executor=pool, z=o["z"])
    else:
        res = simulate(cfg, chunk_size=o["chunk_size"], z=o["z"])
    written = res.save(o["out"]) if o["out"] is not None else None
    if o["plot"] is not None:
        res.plot(o["plot"])
    _say(res.summary())
    if written is not None:
        _say(f"wrote {shown_path(args.out)}")
    if o["plot"] is not None:
        _say(f"wrote {shown_path(args.plot)}")
    return 0


def _fail(message: str, code: int) -> int:
    _say(f"error: {one_line(message)}", sys.stderr)
    return code


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input, 1 failure, 128+signal)."""
    with signals_as_exceptions():
        try:
            return _run(argv)
        except (_UsageError, ValueError) as exc:
            return _fail(str(exc), 2)
        except SystemExit as exc:                     # --help
            return exc.code if isinstance(exc.code, int) else 0
        except KeyboardInterrupt:
            return _fail("interrupted (SIGINT); workers stopped, no partial file left", 130)
        except Terminated as exc:
            return _fail(f"{exc}; workers stopped, no partial file left", 128 + exc.signum)
        except MemoryError:
            return _fail("out of memory (the estimate was too low: please report it; use fewer samples per "
                         "task, fewer workers or a smaller setting)", 1)
        except BrokenPipeError:                       # `... | head`: stdout went away; say nothing more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except OSError as exc:
            return _fail(f"{exc.strerror or exc}: {short(exc.filename) if exc.filename else ''} "
                         f"(the previous result, if any, is unchanged)", 1)
        except Exception as exc:                      # a bug: say so in one line
            if os.environ.get("RECENCY_LIB_DEBUG"):
                import traceback

                traceback.print_exc()
            return _fail(f"internal error {type(exc).__name__}: {short(str(exc))} (please report it; "
                         f"RECENCY_LIB_DEBUG=1 shows the traceback)", 1)


def entry() -> None:
    """The ``recency-sim`` script and ``python -m recency_lib``: :func:`main`, then exit with its status.
    A crash, or SIGABRT, prints every thread's Python stack on stderr (faulthandler), for a bug report."""
    faulthandler.enable()
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
