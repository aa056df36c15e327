"""How long a chapter rerun takes, its render included, and the paper-scale recipe.

    python benchmarks/bench_rerun.py [--runs 3] [--paper] [--march ARCH]

Run from a checkout whose book is built (``jupyter-book build book``: a rerun renders the other
pages from that build). Each rerun is the README's command as typed, in a fresh process, into a
temporary folder:

* **residual**: ``companion rerun book/residual.ipynb OUT -p alpha 0.3 -p gamma 0.5 -p samples
  20000``, ``--runs`` times into new folders, then ``--runs`` times into a folder rendered before;
  each run's whole wall time, and the render's part (the seconds the rerun records in the folder's
  ``.rerun-files.json``). The results cache is the machine's, as a reader's (these settings'
  simulations are cached after the first run: what is timed is the kernel, the page and the site).
* **paper** (``--paper``): ``companion rerun book/empirical.ipynb OUT -p samples 10000000`` once,
  with an empty results cache: wall time, CPU seconds of the whole process tree, peak memory
  (PSS), the wall time of each cell from the run's progress lines, and each verdict of the page
  with its deciding number beside the book's (the build's record of the page).

``--march x86-64-v3`` runs in a fresh clone of HEAD whose kernel is compiled with setup.py's flags
and that -march (the AVX2 code a reader's Zen 3 or Haswell-class CPU runs), its book built first
(not timed).
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
from _measure import calibration, compile_kernel, kernel_of  # noqa: E402

RESIDUAL = ["book/residual.ipynb", "-p", "alpha", "0.3", "-p", "gamma", "0.5", "-p", "samples"]
PAPER = ["book/empirical.ipynb", "-p", "samples", "10000000"]
CELL = re.compile(r"^empirical: \[(\d+)/(\d+)\] (\d+):(\d+) (.*)$")


def rerun(args: list[str], out: Path, env: dict, repo: Path) -> tuple[float, float, str]:
    """One rerun as a fresh process: (wall seconds, the render's seconds, its stderr)."""
    command = [sys.executable, "-m", "companion", "rerun", args[0], str(out), *args[1:]]
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"rerun failed ({done.returncode}): {done.stderr[-2000:]}")
    record = json.loads((out / ".rerun-files.json").read_text(encoding="utf-8"))
    return wall, float(record.get("render_seconds", float("nan"))), done.stderr


def residual(runs: int, env: dict, repo: Path) -> None:
    if runs < 1:
        return
    with tempfile.TemporaryDirectory() as tmp:
        for where in ("a new folder", "a folder rendered before"):
            walls, renders = [], []
            for k in range(runs):
                out = Path(tmp, f"new{k}" if where == "a new folder" else "again")
                w, r, _ = rerun([*RESIDUAL, "20000"], out, env, repo)
                walls.append(w)
                renders.append(r)
            print(
                f"residual rerun into {where}: median {statistics.median(walls):.1f} s "
                f"({', '.join(f'{w:.1f}' for w in walls)}), of it the render "
                f"{statistics.median(renders):.1f} s ({', '.join(f'{r:.1f}' for r in renders)})"
            )


def _children_cpu() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # every waited-for descendant
    return used.ru_utime + used.ru_stime


def paper(env: dict, repo: Path) -> None:
    import psutil

    cpu0 = _children_cpu()  # (the clone's build and the residual reruns ran before)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**env, "RECENCY_LIB_CACHE": str(Path(tmp, "cache"))}  # empty: everything computed
        command = [sys.executable, "-m", "companion", "rerun", PAPER[0], str(Path(tmp, "out"))]
        t0, peak = time.perf_counter(), 0
        proc = subprocess.Popen(
            [*command, *PAPER[1:]], cwd=repo, env=env, stderr=subprocess.PIPE, text=True
        )
        cells: dict[int, tuple[float, str]] = {}
        for line in proc.stderr:
            if m := CELL.match(line.rstrip("\n")):
                cells.setdefault(int(m[1]), (60 * int(m[3]) + int(m[4]), m[5][:60]))
            try:
                tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(True)]
                peak = max(peak, sum(p.memory_full_info().pss for p in tree))
            except psutil.Error:
                pass
        proc.wait()
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(f"the paper-scale rerun failed ({proc.returncode})")
        print(
            f"paper scale: {wall / 60:.1f} min wall, {(_children_cpu() - cpu0) / 60:.1f} CPU min, "
            f"peak PSS sampled at progress lines {peak / 2**20:.0f} MB"
        )
        verdicts(Path(tmp, "out", "empirical.ipynb"), repo)
        starts = sorted(cells.items())
        for (k, (t, text)), nxt in zip(starts, [*starts[1:], (None, (wall, ""))]):
            spent = nxt[1][0] - t
            if spent >= 10:
                print(f"  cell {k}: {spent / 60:.1f} min  {text}")


def verdicts(notebook: Path, repo: Path) -> None:
    """The run's verdicts and deciding numbers beside the book's, from the run's own record."""
    code = (
        "import json, sys; from companion import rerun; "
        "info = rerun.run_info(json.load(open(sys.argv[1]))); "
        "print(json.dumps([info.get('verdicts') or [], info.get('book_verdicts') or {}]))"
    )
    env = {**os.environ, "PYTHONPATH": f"{repo}:{repo / 'book'}"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(notebook)], env=env, capture_output=True, text=True
    )
    ran, book = json.loads(done.stdout)  # the book's: claim -> verdict
    for v in ran:
        b = book.get(v["claim"], {})
        print(
            f"  {v['name']}: {v['word']}, {v['number']} ({v['what']}); "
            f"the book: {b.get('word', '?')}, {b.get('number', '?')}"
        )


def clone(dest: Path, march: str) -> Path:
    """HEAD cloned into ``dest``, its kernel compiled for ``march`` and its book built."""
    import sysconfig

    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(dest)], check=True)
    why = compile_kernel(
        dest, dest / "recency_lib" / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX')}", march
    )
    if why or kernel_of(dest) != "c":
        raise SystemExit(f"bench_rerun --march {march}: {why or kernel_of(dest)}")
    env = {**os.environ, "PYTHONPATH": f"{dest}:{dest / 'book'}"}
    env.pop("RECENCY_LIB_CACHE", None)
    book = [str(Path(sys.executable).with_name("jupyter-book")), "build", "book"]
    done = subprocess.run(book, cwd=dest, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the clone's book did not build: {done.stdout[-2000:]}")
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--paper", action="store_true", help="the paper-scale recipe too")
    ap.add_argument("--march", help="a clone with the kernel compiled for this -march")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_rerun_") as tmp:
        repo = REPO if args.march is None else clone(Path(tmp, "clone"), args.march)
        env = {**os.environ, "RECENCY_LIB_PROGRESS": "1", "PYTHONPATH": f"{repo}:{repo / 'book'}"}
        print(calibration(), f"kernel: {args.march or 'installed'}")
        residual(args.runs, env, repo)
        if args.paper:
            paper(env, repo)
        print(calibration())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
