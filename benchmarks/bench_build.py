"""What the book and the test suite cost: cold build, unchanged rebuild, a plotting edit, per-chapter
execution times, and the test suite (quick loop and full).

    python benchmarks/bench_build.py [--runs 3] [--tests] [--json out.json]

Every run works in a fresh clone of this repository's HEAD (commit it first: uncommitted changes are
not measured), with the interpreter running this script (its venv has the requirements installed)
and ``PYTHONPATH`` pointing at the clone, so the clone's ``recency_lib`` is the one imported.

* **cold**: a new clone, no ``_build`` (so no jupyter-cache and no results cache: the book's results
  cache lives in ``_build/.recency_cache``), the C kernel compiled in the clone beforehand (not
  timed): ``jupyter-book build book``. ``--runs`` clones, median reported; per-chapter execution
  seconds are read from the build's own stamps (``_build/.jupyter_cache/fresh_cache.json``,
  written by ``book/_ext/fresh_cache.py``).
* **unchanged**: the same command again in the last clone, nothing edited (``--runs`` times).
* **plotting edit**: a comment appended to ``recency_lib/plotting.py``; the build again: the seconds
  and the pages that executed again (the build log names them).
* **tests** (``--tests``): ``pytest -m "not book"`` and the whole ``pytest`` in a new clone (cold: the
  full build inside the tests starts without jupyter-cache and results cache, as on CI).

The load average is printed before and after each stage: on a shared machine wall times of a
CPU-bound build grow with the load.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from _measure import calibration  # noqa: E402


def _env(clone: Path) -> dict:
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("RECENCY_LIB_CACHE", "NUMBA_CACHE_DIR")}
    return {**env, "PYTHONPATH": str(clone), "PATH": bindir + os.pathsep + env.get("PATH", ""),
            "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}


def _run(cmd: list[str], clone: Path, timeout: int = 7200) -> tuple[float, str, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=clone, env=_env(clone), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return time.perf_counter() - t0, proc.stdout, proc.returncode


def _build(clone: Path) -> tuple[float, str]:
    seconds, log, code = _run([str(Path(sys.executable).with_name("jupyter-book")), "build", "book"], clone)
    if code != 0:
        raise SystemExit(f"the build in {clone} failed (exit {code}):\n" + "\n".join(log.splitlines()[-30:]))
    return seconds, log


def _clone(tmp: Path, k: int) -> Path:
    dest = tmp / f"clone{k}"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(dest)], check=True)
    # the clone's C kernel, as `pip install -e .` builds it (the built file is not in git); not timed
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=dest, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return dest


def _chapter_seconds(clone: Path) -> dict[str, float]:
    stamps = json.loads((clone / "_build" / ".jupyter_cache" / "fresh_cache.json").read_text())
    return {page: s.get("seconds", float("nan")) for page, s in stamps["pages"].items()}


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.1f} s (min {min(values):.1f}, max {max(values):.1f}, {len(values)} runs)"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="cold builds (fresh clones) and unchanged rebuilds")
    ap.add_argument("--tests", action="store_true", help="also time the test suite (quick loop and full)")
    ap.add_argument("--json", help="write the measurements to this file")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error(f"--runs must be >= 1, got {args.runs}")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    print(f"bench_build: HEAD {head}, {os.cpu_count()} CPUs; {calibration()}", flush=True)
    out: dict = {"head": head, "cold": [], "unchanged": [], "chapters": []}
    with tempfile.TemporaryDirectory(prefix="bench_build_") as tmp:
        for k in range(args.runs):
            clone = _clone(Path(tmp), k)
            before = _load()
            seconds, _ = _build(clone)
            out["cold"].append(seconds)
            out["chapters"].append(_chapter_seconds(clone))
            print(f"cold build {k + 1}: {seconds:.1f} s (load {before} -> {_load()})", flush=True)
        for k in range(args.runs):
            seconds, log = _build(clone)
            out["unchanged"].append(seconds)
            executed = re.findall(r"fresh_cache: executed (\S+)", log)
            print(f"unchanged rebuild {k + 1}: {seconds:.1f} s, pages executed: {executed or 'none'}", flush=True)
        plotting = clone / "recency_lib" / "plotting.py"
        plotting.write_text(plotting.read_text() + "\n# bench_build: an edit that changes no behaviour\n")
        seconds, log = _build(clone)
        redone = sorted(set(re.findall(r"fresh_cache: (\S+): its dependencies changed", log)))
        out["plotting_edit"] = {"seconds": seconds, "pages": redone, "chapters": _chapter_seconds(clone)}
        print(f"plotting.py edited: {seconds:.1f} s, pages executed again: {redone}", flush=True)
        if args.tests:
            clone = _clone(Path(tmp), args.runs)       # cold: no book build, no results cache yet
            for name, cmd in (("tests_not_book", ["-m", "not book"]), ("tests_all", [])):
                before = _load()
                seconds, log, code = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *cmd], clone)
                tail = log.strip().splitlines()[-1] if log.strip() else ""
                failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", log, re.M)
                out[name] = {"seconds": seconds, "exit": code, "summary": tail, "failed": failed}
                print(f"pytest {' '.join(cmd) or '(all)'}: {seconds:.1f} s, exit {code}: {tail} "
                      f"(load {before} -> {_load()})", flush=True)
                for test in failed:
                    print(f"  failed: {test}", flush=True)

    print()
    print(f"cold build: {_summary(out['cold'])}")
    print(f"unchanged rebuild: {_summary(out['unchanged'])}")
    pages = sorted(out["chapters"][0], key=lambda p: -statistics.median(c.get(p, float('nan')) for c in out["chapters"]))
    print("per-chapter execution (s; cold: median over the cold builds; warm: after the plotting edit, every")
    print("simulation read from the results cache; chapters run two at a time):")
    warm = out["plotting_edit"]["chapters"]
    for page in pages:
        again = f"{warm[page]:6.1f}" if page in out["plotting_edit"]["pages"] else "     -"
        print(f"  {page:20s} {statistics.median(c.get(page, float('nan')) for c in out['chapters']):6.1f} {again}")
    print(f"  {'(sum)':20s} {sum(statistics.median(c.get(p, 0.0) for c in out['chapters']) for p in pages):6.1f} "
          f"{sum(warm[p] for p in out['plotting_edit']['pages']):6.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
