"""What would smaller simulations buy, and what would they cost the book's findings?

    python benchmarks/bench_trades.py [--trade NAME ...] [--list]

Issue 27 asks for the cold build at ~0.6 of its time, and every simulation left is near its floor,
so the rest could only come from smaller studies. This measures such trades before anyone makes
them. Each trade is a page and parameter values other than its defaults (papermill ``-p``: what a
reader's rerun would use). The page runs twice from book/, each time in a fresh kernel and a fresh
results cache (seeded with the theme and the sympy checks only, which no trade touches): once with
its defaults, once with the trade. Printed per trade: the CPU seconds of the run (papermill here,
the kernel and its pool workers), the default's minus the trade's, and every glued text
that changed, split into

* **findings**: the words changed (a verdict, an order, a setting named in a finding, a table's
  words), numbers aside: what the book would say differently;
* **numbers**: only digits changed (an estimate or its standard error, a sample count): the same
  statement at another precision.

Figures, downloads and the page's own timings are not compared. The defaults of one page run once
per invocation. Timings on a shared machine vary by a few tenths; the findings do not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import calibration, cpu_seconds

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

#: name -> (page, parameters other than the page's defaults, what it changes). Only the pages' own
#: studies: the runs several pages share (the landing page's settings, Theorem 1's control-variate
#: runs) keep one value across the book and are not traded.
TRADES = {
    "beyond-components-half": (
        "beyond",
        {"samples": 5_000},
        "chapter 8's component study at 5,000 sequences per setting (10,000)",
    ),
    "beyond-lengths-half": (
        "beyond",
        {"long_samples": 32},
        "chapter 8's length sweep at 32 sequences at n = 512 (64)",
    ),
    "beyond-lengths-256": (
        "beyond",
        {"long_lengths": [10, 32, 128, 256]},
        "chapter 8's length sweep up to n = 256 (512)",
    ),
    "beyond-relative-half": (
        "beyond",
        {"relative_samples": 2_000},
        "chapter 8's position-or-distance check at 2,000 sequences (4,000)",
    ),
    "conclusion-long-half": (
        "conclusion",
        {"long_samples": 500},
        "chapter 7's position study at n = 128 with 500 sequences (1,000)",
    ),
    "empirical-depth-half": (
        "empirical",
        {"samples_depth": 10_000},
        "chapter 6's depth study at 10,000 sequences per unit (20,000)",
    ),
}

#: glue keys that are timings of the run itself (they change from run to run)
TIMING_KEYS = re.compile(r"(cost|seconds|wall|run-min|run-max|cpu)", re.I)
NUMBER = re.compile(r"[−+-]?\d[\d,]*(?:\.\d+)?(?:\s*[×x]\s*10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?")
PREFIX = "application/papermill.record/"


def glued_texts(notebook: Path) -> dict[str, str]:
    """Glue key -> its text (markdown or plain) in an executed notebook;
    figures and downloads out."""
    import nbformat

    out = {}
    for cell in nbformat.read(str(notebook), as_version=4).cells:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if not name:
                continue
            data = {k.replace(PREFIX, ""): v for k, v in o.get("data", {}).items()}
            if "image/svg+xml" in data or "image/png" in data:
                continue
            text = data.get("text/markdown") or data.get("text/plain") or ""
            text = text if isinstance(text, str) else "".join(text)
            if "data:" in text or "base64" in text or TIMING_KEYS.search(name):
                continue
            out[name] = text
    return out


def seed_cache(folder: Path) -> None:
    """The theme and the sympy checks, computed once into ``folder`` (a fresh interpreter)."""
    code = "from companion import errata, theme; theme.theme(); errata.sympy_checks()"
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        cwd=BOOK,
        env={**os.environ, "RECENCY_LIB_CACHE": str(folder)},
    )


def run_page(
    page: str, params: dict, seeds: Path, work: Path, tag: str
) -> tuple[dict[str, str], float, float]:
    """papermill of book/PAGE.ipynb with ``params`` in a fresh kernel and a fresh seeded cache: its
    glued texts, CPU seconds (this process's papermill client, the kernel and its pool workers)
    and wall seconds."""
    import papermill as pm

    cache = work / f"cache-{tag}"
    shutil.copytree(seeds, cache)
    os.environ["RECENCY_LIB_CACHE"] = str(cache)
    out = work / f"{tag}.ipynb"
    cpu, t0 = cpu_seconds(), time.perf_counter()
    pm.execute_notebook(
        str(BOOK / f"{page}.ipynb"),
        str(out),
        parameters=params,
        kernel_name="python3",
        cwd=str(BOOK),
        progress_bar=False,
        log_output=False,
    )
    return glued_texts(out), cpu_seconds() - cpu, time.perf_counter() - t0


def compare(before: dict[str, str], after: dict[str, str]) -> tuple[list[str], list[str]]:
    """(findings, numbers): keys whose words changed, and keys where only numbers did. A table is
    compared row by row, so a finding names the row."""
    findings, numbers = [], []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, ""), after.get(key, "")
        if a == b:
            continue
        rows_a, rows_b = a.splitlines(), b.splitlines()
        if len(rows_a) > 1 and len(rows_a) == len(rows_b):
            changed = [
                (x, y) for x, y in zip(rows_a, rows_b) if NUMBER.sub("#", x) != NUMBER.sub("#", y)
            ]
            if changed:
                findings += [
                    f"{key}: {x.strip()[:160]}\n      -> {y.strip()[:160]}" for x, y in changed
                ]
                continue
        elif NUMBER.sub("#", a) != NUMBER.sub("#", b):
            findings.append(f"{key}: {a[:160]!r} -> {b[:160]!r}")
            continue
        numbers.append(key)
    return findings, numbers


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--trade", action="append", choices=sorted(TRADES), help="a trade to measure (default: all)"
    )
    ap.add_argument("--list", action="store_true", help="list the trades and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, (page, params, what) in TRADES.items():
            print(f"{name:24s} {page:12s} {json.dumps(params):32s} {what}")
        return 0
    names = args.trade or list(TRADES)
    print(calibration(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-trades-") as tmp:
        work = Path(tmp)
        seeds = work / "seeds"
        seed_cache(seeds)
        defaults: dict[str, tuple[dict, float, float]] = {}
        for name in names:
            page, params, what = TRADES[name]
            if page not in defaults:
                defaults[page] = run_page(page, {}, seeds, work, f"{page}-defaults")
                print(
                    f"\n{page}: defaults {defaults[page][1]:.1f} CPU s, {defaults[page][2]:.1f} s "
                    "wall",
                    flush=True,
                )
            base, cpu0, _ = defaults[page]
            glued, cpu, wall = run_page(page, params, seeds, work, name)
            findings, numbers = compare(base, glued)
            print(
                f"\n{name}: {what}\n  -p {json.dumps(params)}: {cpu:.1f} CPU s, {wall:.1f} s wall; "
                f"saves {cpu0 - cpu:.1f} CPU s ({(cpu0 - cpu) / cpu0:.0%} of the page)"
            )
            print(f"  findings changed: {len(findings)}" + "".join(f"\n    {f}" for f in findings))
            print(
                f"  numbers only: {len(numbers)} "
                f"({', '.join(numbers[:12])}{', ...' if len(numbers) > 12 else ''})",
                flush=True,
            )
    print("\n" + calibration())
    return 0


if __name__ == "__main__":
    sys.exit(main())
