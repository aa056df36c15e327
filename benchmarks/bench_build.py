"""What the book and the test suite cost: cold build, unchanged rebuild, a plotting edit,
per-chapter execution times, and the test suite (quick loop and full).

    python benchmarks/bench_build.py [--runs 3] [--tests] [--json out.json]
                                     [--commit REV] [--march ARCH]

Every run works in a fresh clone of this repository's HEAD (commit it first: uncommitted changes are
not measured), or of ``--commit REV`` (an earlier commit, measured on the same machine in the same
hour: the fairest comparison on a VM whose speed drifts), with the interpreter running this script
(its venv has the requirements installed) and ``PYTHONPATH`` pointing at the clone and its
``book/``, so the clone's ``recency_lib`` and ``companion`` are the ones imported.

* **cold**: a new clone, no ``_build`` (so no jupyter-cache and no results cache: the book's results
  cache lives in ``_build/.recency_cache``), the C kernel compiled in the clone beforehand (not
  timed): ``jupyter-book build book``. ``--runs`` clones, median reported; per-chapter execution
  seconds are read from the build's own stamps (``_build/.jupyter_cache/fresh_cache.json``,
  written by ``book/_ext/fresh_cache.py``).
  ``--march x86-64-v3`` compiles that kernel with setup.py's flags and -march=x86-64-v3 instead
  of native: the AVX2 code (4 lanes, no AVX-512) that a Zen 3 or Haswell-class reader's CPU runs,
  measured on this machine.
* **unchanged**: the same command again in the last clone, nothing edited (``--runs`` times).
* **plotting edit**: a comment appended to ``book/companion/plotting.py`` (the book's figure code);
  the build again: the seconds and the pages that executed again (the build log names them); every
  simulation comes from the results cache.
* **where the cold build's time goes**: each build's CPU seconds (all its processes), each page's
  slot time and start, and the simulations of the first cold build from its results cache (each
  entry records its compute seconds): per engine, and the most expensive ones.
* **tests** (``--tests``): ``pytest -m "not book"`` twice (in a new clone, then again: the loop a
  developer repeats, with byte-code and pytest's rewritten test modules in place) and the whole
  ``pytest`` (cold: the full build inside the tests starts without jupyter-cache and results cache,
  as on CI), with the seconds per test file (pytest's ``--durations``: setup, call and teardown of
  every test). As in .ci/run, ``PYTHONDONTWRITEBYTECODE`` is not passed on.

The load average is printed before and after each stage: on a shared machine wall times of a
CPU-bound build grow with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from _measure import calibration, compile_kernel, kernel_of  # noqa: E402


def _env(clone: Path) -> dict:
    bindir = str(Path(sys.executable).parent)
    # PYTHONDONTWRITEBYTECODE dropped, as .ci/run does: with it every process compiles its imports
    # and pytest rewrites the asserts of every test module again
    # (~5 s per worker for the collection)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RECENCY_LIB_CACHE", "NUMBA_CACHE_DIR", "PYTHONDONTWRITEBYTECODE")
    }
    return {
        **env,
        "PYTHONPATH": os.pathsep.join([str(clone), str(clone / "book")]),
        "PATH": bindir + os.pathsep + env.get("PATH", ""),
        "NO_COLOR": "1",
        "PYTHONUNBUFFERED": "1",
    }


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)  # every waited-for descendant
    return r.ru_utime + r.ru_stime


def _run(cmd: list[str], clone: Path, timeout: int = 7200) -> tuple[float, str, int]:
    t0, c0 = time.perf_counter(), _cpu()
    proc = subprocess.run(
        cmd,
        cwd=clone,
        env=_env(clone),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    _run.cpu = _cpu() - c0
    return time.perf_counter() - t0, proc.stdout, proc.returncode


def _build(clone: Path) -> tuple[float, str]:
    seconds, log, code = _run(
        [str(Path(sys.executable).with_name("jupyter-book")), "build", "book"], clone
    )
    if code != 0:
        raise SystemExit(
            f"the build in {clone} failed (exit {code}):\n" + "\n".join(log.splitlines()[-30:])
        )
    return seconds, log


def _clone(tmp: Path, k: int, commit: str = "HEAD", march: str | None = None) -> Path:
    dest = tmp / f"clone{k}"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(dest)], check=True)
    subprocess.run(
        ["git", "-c", "advice.detachedHead=false", "checkout", "--quiet", commit],
        cwd=dest,
        check=True,
    )
    # the clone's C kernel (the built file is not in git); not timed: as `pip install -e .` builds
    # it, or with the clone's setup.py flags and -march=MARCH (--march)
    if march is None:
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=dest,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    else:
        why = compile_kernel(
            dest, dest / "recency_lib" / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX')}", march
        )
        if why:
            raise SystemExit(f"bench_build --march {march}: {why}")
    if kernel_of(dest) != "c":  # a build recency_lib does not take runs the numpy path
        raise SystemExit(
            f"bench_build: the clone's compiled kernel does not run ({kernel_of(dest)})"
        )
    # the README's commands (tests/book/test_readme.py runs them) use the checkout's .venv: this one
    (dest / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    return dest


def _chapter_seconds(clone: Path) -> dict[str, float]:
    stamps = json.loads((clone / "_build" / ".jupyter_cache" / "fresh_cache.json").read_text())
    return {page: s.get("seconds", float("nan")) for page, s in stamps["pages"].items()}


def _simulations(clone: Path, top: int = 8) -> dict:
    """The compute seconds the results cache recorded for each simulation of a build: per engine and
    sequence statistic, and the ``top`` most expensive entries."""
    import numpy as np

    rows = []
    for path in (clone / "_build" / ".recency_cache").glob("*.npz"):
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
        except (OSError, ValueError, KeyError):
            continue
        c = meta["config"]
        shown = " ".join(
            f"{k}={c[k]}" for k in ("norm", "alpha", "gamma", "n", "d", "layers", "samples")
        )
        extra = " ".join(
            f"{k}={c[k]}"
            for k in ("weights", "heads", "ffn", "rope")
            if c.get(k) not in ("none", 1, False)
        )
        rows.append(
            (
                float(meta.get("elapsed_seconds", 0.0)),
                meta.get("engine", "?"),
                f"{shown} {extra}".strip(),
            )
        )
    for path in (clone / "_build" / ".recency_cache").glob("statistic-*.json"):
        try:
            entry = json.loads(path.read_text())
            params, c = entry["key"]["params"], entry["key"]["params"]["config"]
            seconds = float(entry["value"]["elapsed_seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        rows.append(
            (
                seconds,
                "statistic",
                f"{params.get('statistic')} norm={c['norm']} n={c['n']} d={c['d']} "
                f"samples={params.get('samples')}",
            )
        )
    engines: dict[str, list[float]] = {}
    for seconds, engine, _ in rows:
        engines.setdefault(engine, []).append(seconds)
    return {
        "engines": {e: {"count": len(v), "seconds": round(sum(v), 1)} for e, v in engines.items()},
        "top": [
            {"seconds": round(r[0], 2), "engine": r[1], "setting": r[2]}
            for r in sorted(rows, reverse=True)[:top]
        ],
    }


def _starts(log: str) -> dict[str, float]:
    return {
        page: float(a)
        for page, a in re.findall(r"fresh_cache: executed (\S+) in \S+ s \((\S+) to", log)
    }


def _durations(log: str) -> dict[str, float]:
    """Seconds per test file from pytest's --durations=0 lines ("1.23s call tests/x.py::test")."""
    out: dict[str, float] = {}
    for seconds, path in re.findall(r"^([\d.]+)s (?:setup|call|teardown)\s+([^:\s]+)::", log, re.M):
        out[path] = out.get(path, 0.0) + float(seconds)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _summary(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.1f} s "
        f"(min {min(values):.1f}, max {max(values):.1f}, {len(values)} runs)"
    )


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--runs", type=int, default=3, help="cold builds (fresh clones) and unchanged rebuilds"
    )
    ap.add_argument(
        "--tests", action="store_true", help="also time the test suite (quick loop and full)"
    )
    ap.add_argument("--json", help="write the measurements to this file")
    ap.add_argument(
        "--commit",
        default="HEAD",
        help="the commit to measure (default HEAD), e.g. an earlier one "
        "to compare with on the same machine",
    )
    ap.add_argument(
        "--march",
        help="compile the clones' C kernel with this -march instead of native, e.g. "
        "x86-64-v3 (AVX2, no AVX-512: the code a Zen 3 or Haswell-class CPU runs)",
    )
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error(f"--runs must be >= 1, got {args.runs}")
    done = subprocess.run(
        ["git", "rev-parse", "--short", "--verify", f"{args.commit}^{{commit}}"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        ap.error(f"--commit {args.commit!r} is not a commit of {REPO}")
    head = done.stdout.strip()
    print(
        f"bench_build: commit {head}, kernel -march={args.march or 'native'}, "
        f"{os.cpu_count()} CPUs; {calibration()}",
        flush=True,
    )
    out: dict = {
        "head": head,
        "march": args.march or "native",
        "calibration": [calibration()],
        "cold": [],
        "cold_cpu": [],
        "unchanged": [],
        "chapters": [],
        "starts": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench_build_") as tmp:
        for k in range(args.runs):
            clone = _clone(Path(tmp), k, head, args.march)
            before = _load()
            seconds, log = _build(clone)
            out["cold"].append(seconds)
            out["cold_cpu"].append(_run.cpu)
            out["chapters"].append(_chapter_seconds(clone))
            out["starts"].append(_starts(log))
            if k == 0:
                out["simulations"] = _simulations(clone)
            print(
                f"cold build {k + 1}: {seconds:.1f} s, {_run.cpu:.0f} CPU s "
                f"(load {before} -> {_load()})",
                flush=True,
            )
        for k in range(args.runs):
            seconds, log = _build(clone)
            out["unchanged"].append(seconds)
            executed = re.findall(r"fresh_cache: executed (\S+)", log)
            print(
                f"unchanged rebuild {k + 1}: {seconds:.1f} s, pages executed: {executed or 'none'}",
                flush=True,
            )
        # the book's figure code (book/companion/plotting.py; in commits before the book had its own
        # package, recency_lib/plotting.py)
        plotting = next(
            (
                p
                for p in (
                    clone / "book" / "companion" / "plotting.py",
                    clone / "recency_lib" / "plotting.py",
                )
                if p.exists()
            ),
            None,
        )
        if plotting is None:
            raise SystemExit(f"bench_build: no plotting module in commit {head}")
        plotting.write_text(
            plotting.read_text() + "\n# bench_build: an edit that changes no behaviour\n"
        )
        seconds, log = _build(clone)
        redone = sorted(set(re.findall(r"fresh_cache: (\S+): its dependencies changed", log)))
        out["plotting_edit"] = {
            "seconds": seconds,
            "pages": redone,
            "chapters": _chapter_seconds(clone),
        }
        print(
            f"{plotting.relative_to(clone)} edited: {seconds:.1f} s, "
            f"pages executed again: {redone}",
            flush=True,
        )
        if args.tests:
            clone = _clone(
                Path(tmp), args.runs, head, args.march
            )  # cold: no book build, no results cache yet
            # the quick loop twice: in the new clone (nothing compiled yet),
            # then as a developer repeats it
            for name, cmd in (
                ("tests_not_book", ["-m", "not book"]),
                ("tests_not_book_again", ["-m", "not book"]),
                ("tests_all", []),
            ):
                before = _load()
                seconds, log, code = _run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-p",
                        "no:cacheprovider",
                        "--durations=0",
                        "--durations-min=0",
                        *cmd,
                    ],
                    clone,
                )
                tail = log.strip().splitlines()[-1] if log.strip() else ""
                failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", log, re.M)
                if failed:  # pytest's whole report, kept for the record
                    keep = (
                        Path(args.json).with_suffix(f".{name}.log")
                        if args.json
                        else Path(tempfile.gettempdir()) / f"bench_build.{name}.log"
                    )
                    keep.write_text(log)
                    print(f"  (pytest's report: {keep})", flush=True)
                out[name] = {
                    "seconds": seconds,
                    "cpu": _run.cpu,
                    "exit": code,
                    "summary": tail,
                    "failed": failed,
                    "files": _durations(log),
                }
                again = " (again)" if name.endswith("again") else ""
                print(
                    f"pytest {' '.join(cmd) or '(all)'}{again}: {seconds:.1f} s, "
                    f"{_run.cpu:.0f} CPU s, exit {code}: {tail} (load {before} -> {_load()})",
                    flush=True,
                )
                for path, secs in list(out[name]["files"].items())[:12]:
                    print(f"  {secs:7.1f} s  {path}", flush=True)
                for test in failed:
                    print(f"  failed: {test}", flush=True)
                for line in re.findall(r"^E   .*$", log, re.M)[
                    :12
                ]:  # what the first failures asserted
                    print(f"  {line[:300]}", flush=True)

    out["calibration"].append(calibration())
    print()
    print(f"calibration before: {out['calibration'][0]}")
    print(f"calibration after:  {out['calibration'][1]}")
    print(f"cold build: {_summary(out['cold'])}; CPU {_summary(out['cold_cpu'])}")
    print(f"unchanged rebuild: {_summary(out['unchanged'])}")
    pages = sorted(
        out["chapters"][0],
        key=lambda p: -statistics.median(c.get(p, float("nan")) for c in out["chapters"]),
    )
    print(
        "per-chapter execution (s; cold: median over the cold builds; "
        "warm: after the plotting edit, every"
    )
    print("simulation read from the results cache; chapters run two at a time):")
    warm = out["plotting_edit"]["chapters"]
    for page in pages:
        again = f"{warm[page]:6.1f}" if page in out["plotting_edit"]["pages"] else "     -"
        print(
            f"  {page:20s} "
            f"{statistics.median(c.get(page, float('nan')) for c in out['chapters']):6.1f} {again}"
        )
    print(
        f"  {'(sum)':20s} "
        f"{sum(statistics.median(c.get(p, 0.0) for c in out['chapters']) for p in pages):6.1f} "
        f"{sum(warm[p] for p in out['plotting_edit']['pages']):6.1f}"
    )
    sims = out["simulations"]
    print(
        "simulations of the first cold build "
        "(compute seconds the results cache recorded; pages run two at a time):"
    )
    for engine, e in sorted(sims["engines"].items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"  {engine:10s} {e['count']:4d} entries {e['seconds']:7.1f} s")
    for row in sims["top"]:
        print(f"  {row['seconds']:7.2f} s  {row['engine']:9s} {row['setting']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
