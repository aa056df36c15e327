"""The reproducibility page's tables: the build's software, the simulations its results cache holds,
the README's recipes; and what a rerun's page held at its end (:func:`run_summary`)."""

from __future__ import annotations

import platform
import re
from importlib import metadata
from pathlib import Path

from recency_lib import kernels
from recency_lib.cache import entries, source_hash

from . import conventions as cv
from . import report

README = Path(__file__).resolve().parents[2] / "README.md"
#: The README's sections whose bash blocks are the recipes (tests/book/test_readme.py runs them).
RECIPE_SECTIONS = ("Rerun a chapter with other parameters", "At the paper's scale", "The simulator")


def readme_recipes(readme=README, sections=RECIPE_SECTIONS) -> dict[str, list[str]]:
    """section title -> its ```bash blocks (without the fences), in the README's order; ValueError
    for a section without one (the page and the README must not drift apart)."""
    text = Path(readme).read_text(encoding="utf-8")
    heads = [(m.start(), m.group(2).strip()) for m in re.finditer(r"^(#{2,3}) (.+)$", text, re.M)]
    out = {}
    for k, (start, title) in enumerate(heads):
        if title in sections:
            body = text[start : heads[k + 1][0] if k + 1 < len(heads) else len(text)]
            out[title] = [
                b.strip("\n") for b in re.findall(r"^```bash\n(.*?)^```", body, re.S | re.M)
            ]
    missing = [t for t in sections if not out.get(t)]
    if missing:
        raise ValueError(
            f"{Path(readme).name} has no bash block under {', '.join(map(repr, missing))}; "
            f"allowed: the sections {', '.join(map(repr, sections))}"
        )
    return out


#: The packages whose versions the page lists: the library, the numerics, the book's toolchain.
PACKAGES = (
    "recency_lib",
    "numpy",
    "scipy",
    "matplotlib",
    "seaborn",
    "pandas",
    "sympy",
    "jupyter-book",
    "sphinx",
    "myst-nb",
    "sphinx-proof",
    "sphinx-book-theme",
    "papermill",
)


def software_rows(packages=PACKAGES) -> list[dict]:
    """One row per package (its version, or "not installed"), then Python, the platform, the Gram
    engine's kernel and the results cache's source hash."""
    rows = []
    for name in packages:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "not installed"
        rows.append({"component": name, "version": version})
    rows += [
        {"component": "Python", "version": platform.python_version()},
        {"component": "platform", "version": platform.platform()},
        {"component": "Gram-engine kernel", "version": kernels.kernel_name()},
        {"component": "recency_lib source hash", "version": f"`{source_hash()[:16]}`"},
    ]
    return rows


def repo_path(path, root) -> str:
    """``path`` relative to ``root`` (the repository) when inside it, else absolute."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def simulations(cache=None) -> tuple[list[dict], int]:
    """The cache entries this build can use, sorted, and the number of other files."""
    usable, other = entries(cache)
    return sorted(usable, key=_order), other


def _order(e: dict) -> tuple:
    c = e["config"]
    return (_engine(e), cv.variant_name(c), c.alpha, c.gamma, c.n, c.d, c.layers, c.samples, c.seed)


def simulation_rows(entries: list[dict]) -> list[dict]:
    """One row per simulation: model, alpha, n, d, layers, sequences, seed, engine, compute time."""
    rows = []
    for e in entries:
        c = e["config"]
        rows.append(
            {
                "model": cv.variant_name(c),
                "α": f"{c.alpha:g}",
                "n": report.count(c.n),
                "d": report.count(c.d),
                "layers": report.count(c.layers),
                "sequences": report.count(c.samples),
                "seed": str(c.seed),
                "engine": _engine(e),
                "compute (s)": report.num(float(e.get("elapsed_seconds") or 0.0), 2),
            }
        )
    return rows


def _engine(e: dict) -> str:
    kernel = (e.get("extra") or {}).get("kernel")
    return f"{e['engine']} ({kernel})" if kernel else str(e["engine"])


def simulation_summary(entries: list[dict]) -> list[dict]:
    """One row per engine: its simulations, sequences and compute seconds (summed over workers)."""
    groups: dict[str, list[dict]] = {}
    for e in entries:
        groups.setdefault(_engine(e), []).append(e)
    return [
        {
            "engine": name,
            "simulations": report.count(len(es)),
            "sequences": report.count(sum(e["config"].samples for e in es)),
            "compute (s)": report.num(sum(float(e.get("elapsed_seconds") or 0.0) for e in es), 3),
        }
        for name, es in sorted(groups.items())
    ]


def simulation_table(entries: list[dict], name: str = "simulations") -> report.Markdown:
    """The page's table: every simulation (over 20: the summary by engine, the rows in a dropdown
    with their download ``name``); "none yet" for an empty cache."""
    if not entries:
        return report.table(
            [{"engine": "none yet", "simulations": "0", "sequences": "0", "compute (s)": "0"}]
        )
    return report.table(
        simulation_rows(entries),
        summary=simulation_summary(entries),
        name=name,
        title="Every simulation",
    )


# -- what a run of a page held: its simulations' cost, its verdicts, its parameters ----------------

DEPTH = 4  # how deep held() looks into containers and dataclasses


def held(namespace: dict, kinds: tuple[type, ...]) -> list:
    """The objects of ``kinds`` in ``namespace`` (a page's globals but ``_`` names), also inside
    containers and dataclasses up to :data:`DEPTH` levels, each once, in the order met."""
    import dataclasses

    out, seen = [], set()

    def visit(value, depth: int) -> None:
        if id(value) in seen or depth > DEPTH:
            return
        seen.add(id(value))
        if isinstance(value, kinds):
            out.append(value)
        elif isinstance(value, (dict, list, tuple, set, frozenset)):
            for v in list(value.values() if isinstance(value, dict) else value):
                visit(v, depth + 1)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                visit(getattr(value, f.name, None), depth + 1)

    for name, value in list(namespace.items()):
        if not name.startswith("_"):
            visit(value, 0)
    return out


def simulation_cost(namespace: dict) -> dict:
    """What the simulations a page holds cost: ``seconds`` (the compute time recorded with each,
    also when read back from the cache), ``sequences`` and ``results``."""
    import math

    from recency_lib.result import SimResult
    from recency_lib.trajectories import SequenceStatistic

    found = held(namespace, (SimResult, SequenceStatistic))
    seconds = [float(r.elapsed_seconds) for r in found]
    return {
        "seconds": sum(s for s in seconds if math.isfinite(s)),
        "sequences": int(sum(getattr(r, "samples", None) or r.config.samples for r in found)),
        "results": len(found),
    }


def verdict_settings(namespace: dict) -> list[dict]:
    """The verdicts a page holds: claim, name, word, its checks' number and distinct settings, and
    the deciding check's number (its text, what it measures, value and SE)."""
    from .verdicts import CLAIM_NAMES, Verdict

    out = []
    for v in held(namespace, (Verdict,)):
        fields = ("norm", "placement", "alpha", "gamma", "d")
        distinct = dict.fromkeys(tuple(getattr(c, f) for f in fields) for c in v.checks)  # in order
        settings = [dict(zip(fields, s)) for s in distinct]
        name, checks, c = CLAIM_NAMES.get(v.claim, v.claim), len(v.checks), v.decisive
        number = dict(number=v.value, what=c.what, value=float(c.value), se=float(c.se))
        out.append(dict(claim=v.claim, name=name, word=v.word, checks=checks, settings=settings))
        out[-1] |= number  # the deciding number: a rerun's banner holds it against the book's
    return out


def run_summary(namespace: dict, names) -> str:
    """What a page held at its end, one JSON line (a rerun asks its kernel): the values of its
    parameters ``names``, its verdicts and its simulations' cost."""
    import json

    summary = {"parameters": {name: namespace[name] for name in names if name in namespace}}
    summary.update(verdicts=verdict_settings(namespace), cost=simulation_cost(namespace))
    return json.dumps(summary, default=str)
