"""The errata of the paper's Appendix A: what is printed, what is right, and the evidence for it.

An erratum is shown only when a build finds evidence for it (:func:`find`): a sympy check of its
printed step that fails (:mod:`companion.symbolic`), or measured rows of the closed-form table
(:mod:`companion.closedforms`) with an evidence verdict. Each is of one kind (:data:`KINDS`): four
kinds of error in print (:data:`PRINTED`), an approximation bias of the LLN, or an effect beyond it.
The entries and the wording of the tables are data, ``assets/errata.toml``; the functions below
find the errata of a run and turn them into the rows of the book's tables.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from recency_lib import theory

from .closedforms import BOUND_MARK, FINITE_D, OFF, VERDICTS, Row, Table, measure, trend
from .report import count, listing, nowrap, num, pm, z_text

#: Verdicts of a measured row that count as evidence of an erratum (closedforms.judge).
EVIDENCE_VERDICTS = (OFF, "not flat")

TYPO = "typographical slip"  # false as printed, its intent plain from the steps around it
SCALE = "scale error"  # a quantity printed at the wrong power of d
MISMATCH = "model mismatch"  # the algebra treats another model than the paper defines
MECHANISM = "wrong mechanism"  # the effect credited to something the model does not do
BIAS = "approximation bias"  # right algebra on an LLN that misses a factor as d grows
BEYOND = "beyond the approximation"  # flat in the LLN, while simulation resolves the next order
UNEXPLAINED = "not yet explained"  # evidence that no entry of ERRATA claims
PRINTED = (TYPO, SCALE, MISMATCH, MECHANISM)
KINDS = (*PRINTED, BIAS, BEYOND, UNEXPLAINED)
#: How the error of a row moves as d grows (closedforms.trend), in the book's words.
AS_D_GROWS = {"grows": "grows", "stalls": "does not shrink", "shrinks": "shrinks", "": "—"}
PART_NAMES = {"level": "size", "step": "$j$-dependence"}


@dataclass(frozen=True)
class Erratum:
    """One erratum of Appendix A and the evidence that can show it (``assets/errata.toml`` says
    what each field means)."""

    key: str
    equations: str
    printed: str
    right: str
    kind: str
    checks: tuple[str, ...] = ()
    forms: tuple[str, ...] = ()
    parts: tuple[str, ...] = ("level", "step")
    residual: bool | None = None
    prefer: str = "level"
    label_from_rows: bool = False

    def claims(self, row: Row) -> bool:
        if row.form.key not in self.forms or row.part not in self.parts:
            return False
        return self.residual is None or (row.setting.gamma != 0.0) == self.residual


#: The errata, each kind in prose (one, several) and what each verdict means: assets/errata.toml.
TEXT = tomllib.loads((Path(__file__).parent / "assets" / "errata.toml").read_text("utf-8"))
ERRATA = tuple(
    Erratum(key, **{k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()})
    for key, entry in TEXT["errata"].items()
)
KIND_WORDS, VERDICT_MEANINGS = TEXT["kinds"], TEXT["verdicts"]


# -- finding the errata of a run ------------------------------------------------------------------


def _last_resolved(row: Row):
    cells = [c for c in row.cells if c.resolved]
    return cells[-1] if cells else None


def _most_resolved(row: Row):
    """For a flat form: the cell farthest from 0 in SEs."""
    return max(row.cells, key=lambda c: abs(c.z))


def _distance(row: Row) -> float:
    """How far a row is from its closed form: |log ratio| at its largest resolved d (flat: |z|)."""
    if row.cells[0].flat:
        return abs(_most_resolved(row).z)
    cell = _last_resolved(row)
    return abs(math.log(abs(cell.ratio))) if cell is not None and cell.ratio != 0 else 0.0


@dataclass(frozen=True)
class Found:
    """An erratum with the evidence of this run: the failing sympy checks and the measured rows."""

    erratum: Erratum
    failed: tuple
    rows: tuple[Row, ...]

    @property
    def representative(self) -> Row | None:
        """The row whose factor is shown: the farthest of the preferred part's rows (else all)."""
        rows = [r for r in self.rows if r.part == self.erratum.prefer] or list(self.rows)
        return max(rows, key=_distance, default=None)


def find(table: Table, checks) -> list[Found]:
    """The errata this run shows, in the order of the appendix. ``checks``: the sympy checks that
    ran (symbolic.AlgebraStep). An entry of :data:`ERRATA` is shown when one of its checks failed
    or one of its rows has an evidence verdict; each evidence row goes to the first entry that
    claims it, and one that no entry claims becomes an erratum of its own (:data:`UNEXPLAINED`)."""
    by_key = {c.key: c for c in checks}
    loose = [r for r in table.rows if r.verdict in EVIDENCE_VERDICTS]
    found = []
    for e in ERRATA:
        mine = tuple(r for r in loose if e.claims(r))
        loose = [r for r in loose if r not in mine]
        failed = tuple(by_key[c] for c in e.checks if c in by_key and not by_key[c].holds)
        if failed or mine:
            found.append(Found(e, failed, mine))
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in loose:
        groups.setdefault((r.form.key, r.part), []).append(r)
    for (key, part), rows in groups.items():
        form = rows[0].form
        e = Erratum(
            f"{key}-{part}",
            compact_equations([form]),
            f"{form.version}: {PART_NAMES[part]}",
            "off by the measured factor (no description yet)",
            forms=(key,),
            parts=(part,),
            prefer=part,
            kind=UNEXPLAINED,
        )
        found.append(Found(e, (), tuple(rows)))
    return found


# -- the book's tables ----------------------------------------------------------------------------


def _factor(row: Row) -> str:
    """The measured value of a row as the errata table shows it, with the d of the measurement."""
    flat = row.cells[0].flat
    c = _most_resolved(row) if flat else _last_resolved(row)
    mark = BOUND_MARK if c.sim.bound else ""
    if flat:
        step = f"step {nowrap(pm(c.sim.value, c.sim.se))}{mark}, $z = {z_text(c.z)}$"
        return f"{step}<br><small>$d$ = {c.d}</small>"
    grows = f"; error {AS_D_GROWS[row.trend]} with $d$" if row.trend else ""
    return f"{nowrap(pm(c.ratio, c.ratio_se))}{mark}<br><small>$d$ = {c.d}{grows}</small>"


def compact_equations(forms) -> str:
    """ "(10), (36), (41), the paper's Figures 2, 5": the equations and figures of closed forms."""
    eqs = sorted({k for f in forms for k in f.numbers})
    figs = sorted({k for f in forms for k in f.figures})
    parts = [", ".join(f"({k})" for k in eqs)] if eqs else []
    if figs:
        figures = "the paper's Figure " if len(figs) == 1 else "the paper's Figures "
        parts.append(figures + ", ".join(str(k) for k in figs))
    return ", ".join(parts)


def _equations(f: Found) -> str:
    """The "Eq." cell: the erratum's equations, or those of its evidence rows (label_from_rows)."""
    if not (f.erratum.label_from_rows and f.rows):
        return f.erratum.equations
    return compact_equations([r.form for r in f.rows])


def errata_rows(found: list[Found], kind=None) -> list[dict]:
    """One row per erratum of ``kind`` (one of :data:`KINDS`, a tuple of them, or None: all; with a
    "kind" column when several), in the order of :data:`KINDS`: its equations, as printed, what is
    right, what found it and the measured value (simulated / printed, or a flat form's step)."""
    kinds = KINDS if kind is None else (kind,) if isinstance(kind, str) else kind
    out = []
    for f in sorted(found, key=lambda f: KINDS.index(f.erratum.kind)):
        if f.erratum.kind not in kinds:
            continue
        e, rep = f.erratum, f.representative
        by = "both" if (f.failed and f.rows) else ("sympy" if f.failed else "simulation")
        out.append(
            {
                **({"kind": KIND_WORDS[e.kind][0]} if len(kinds) > 1 else {}),
                "Eq.": _equations(f),
                "as printed": e.printed,
                "right": e.right,
                "found by": by,
                "measured": "exact algebra" if rep is None else _factor(rep),
            }
        )
    return out


def _cells(row: Row, ds) -> dict:
    by_d = {c.d: c for c in row.cells}
    return {f"$d$ = {d}": by_d[d].text() for d in ds}


def _names(row: Row) -> dict:
    return {
        "closed form": f"{row.form.equation}, {row.form.version}",
        "setting": row.setting.label,
        "part": PART_NAMES[row.part],
    }


def evidence_detail_rows(found: list[Found], ds) -> list[dict]:
    """Every measured row behind the errata table: erratum, closed form, setting, part, each d."""
    return [
        {
            "entry": _equations(f),
            "kind": f.erratum.kind,
            **_names(r),
            **_cells(r, ds),
            "verdict": r.verdict,
        }
        for f in found
        for r in f.rows
    ]


def finite_d_rows(table: Table) -> list[dict]:
    """The rows off at every d whose error shrinks with d, with its exponent."""
    return [
        {
            **_names(r),
            **_cells(r, table.ds),
            "error $\\propto d^{-p}$, $p$": num(trend(r.cells)[1], 2),
        }
        for r in table.rows
        if r.verdict == FINITE_D
    ]


def ratio_rows(table: Table) -> list[dict]:
    """The full table: every closed form, setting and part, each d, the verdict."""
    return [
        {
            "closed form": r.form.equation,
            "version": r.form.version,
            "setting": r.setting.label,
            "part": PART_NAMES[r.part],
            **_cells(r, table.ds),
            "verdict": r.verdict,
            "error as $d$ grows": AS_D_GROWS[r.trend],
        }
        for r in table.rows
    ]


def verdict_counts(table: Table) -> dict[str, int]:
    """How many rows got each verdict (in closedforms.VERDICTS order, those that occur)."""
    return {v: n for v in VERDICTS if (n := sum(r.verdict == v for r in table.rows))}


def verdict_rows(table: Table) -> list[dict]:
    """The verdicts of the full table, counted, with what each means."""
    return [
        {"verdict": v, "rows": count(k), "meaning": VERDICT_MEANINGS[v]}
        for v, k in verdict_counts(table).items()
    ]


def summary(found: list[Found]) -> dict[str, int]:
    """How many errata of each kind (every kind; :data:`UNEXPLAINED` only when there are any)."""
    counts = {k: sum(f.erratum.kind == k for f in found) for k in KINDS}
    if not counts[UNEXPLAINED]:
        del counts[UNEXPLAINED]
    return counts


def summary_text(counts: dict[str, int]) -> str:
    """ "4 typographical slips, 3 scale errors, ... and 1 effect beyond the approximation"."""
    return listing(
        [f"{count(k)} {KIND_WORDS[kind][k != 1]}" for kind, k in counts.items()], fmt=str
    )


def paper_errata(
    samples: int = 100_000,
    seed: int = 0,
    *,
    n: int = 10,
    ds=(16, 64, 256),
    boost: int = 8,
    cosine_samples: int = 4_000,
    checks=None,
    cache=None,
    executor=None,
) -> tuple[dict[str, int], list[Found]]:
    """The errata Appendix A finds at its defaults (the same arguments), for the pages that quote
    their counts: (:func:`summary`, the errata found), from the results cache and the cached sympy
    checks (or ``checks``)."""
    args = dict(n=n, samples=samples, seed=seed, boost=boost, cosine_samples=cosine_samples)
    table = measure(ds, **args, cache=cache, executor=executor)
    found = find(table, sympy_checks(cache=cache)[0] if checks is None else checks)
    return summary(found), found


def summary_rows(table: Table, checks, found: list[Found]) -> list[dict]:
    """The page's first table: what was checked and what came out, in a few counts (its wording:
    ``[summary]`` of assets/errata.toml, with these numbers in braces)."""
    counts = verdict_counts(table)

    def rows_of(*verdicts):
        return sum(counts.get(v, 0) for v in verdicts)

    failing = sum(not c.holds for c in checks)
    numbers = {
        "failing": count(failing),
        "holding": count(len(checks) - failing),
        "ds": ", ".join(str(d) for d in table.ds),
        "rows": count(len(table.rows)),
        "kinds": summary_text(summary(found)),
        "by_algebra": count(sum(bool(f.failed) for f in found)),
        "by_simulation": count(sum(bool(f.rows) for f in found)),
    }
    sizes = {
        "algebra": len(checks),
        "forms": len({r.form.key for r in table.rows}),
        "errata": len(found),
        "off": rows_of(OFF),
        "finite": rows_of(FINITE_D),
        "right": rows_of("consistent", "converges", "flat"),
        "other": rows_of("deviates", "mixed", "unresolved", "not flat"),
    }
    return [
        {
            "checked": what.format(**numbers),
            "count": count(sizes[key]),
            "outcome": out.format(**numbers),
        }
        for key, (what, out) in TEXT["summary"].items()
    ]


def check_rows(checks, section: str) -> list[dict]:
    """The sympy checks of one section of the appendix ("A.1", "A.2", "A.3") as table rows."""
    return [
        {
            "Eqs.": c.equations,
            "claim": c.claim,
            "verdict": "✓ holds" if c.holds else "✗ fails",
            "how": c.method,
        }
        for c in checks
        if c.section == section
    ]


def residual_coefficient_rows(res) -> list[dict]:
    """The residual weight tested without approximation (Eqs. (25), (26), (33)): the first token
    attends only to itself, so E‖x_1^(1)‖² is known exactly (theory.sq_norm_first_token_exact);
    a weight κ of y_1 predicts d (1 + κ)² in the LLN. Rows: the exact mean and each candidate
    (the corrected g; the printed γ, dγ, √dγ‖x‖), with the simulated mean of ``res`` over
    each."""
    cfg = res.config
    d, a, g = cfg.d, cfg.alpha, cfg.gamma
    m, se = float(res.sq_norm_mean[1][0]), float(res.sq_norm_sem[1][0])
    exact = float(theory.sq_norm_first_token_exact(a, g, d, cfg.norm))
    predicted = {"exact mean, no approximation": exact}
    for name, kappa in (
        (r"$g$ (corrected)", float(theory.residual_coefficient(a, g, d, cfg.norm))),
        (r"$\gamma$ (Eq. (33))", g),
        (r"$d\gamma$ (Eq. (26))", d * g),
        (r"$\sqrt d\,\gamma\lVert x\rVert$ (Eq. (25))", math.sqrt(d) * g / math.sqrt(1.0 - a)),
    ):
        predicted[f"LLN with {name}"] = d * (1.0 + kappa) ** 2
    return [
        {
            "prediction": name,
            r"$\lVert x_1^{(1)}\rVert^2$": num(value, 4),
            "simulated / prediction": pm(m / value, se / value),
        }
        for name, value in predicted.items()
    ]


def _run_checks() -> dict:
    """Every sympy check's verdict (key -> holds) and the seconds they took."""
    from . import symbolic

    steps, seconds = symbolic.run_all_timed()
    return {"holds": {s.key: s.holds for s in steps}, "seconds": seconds}


def sympy_checks(cache=None) -> tuple[list, float, bool]:
    """Every sympy check of :mod:`companion.symbolic`, run only when their code changed (cached by
    the source of symbolic and what it imports, and sympy's and numpy's versions): (the checks,
    the seconds they took when they ran, whether they came from the cache)."""
    from recency_lib import cache as results_cache

    from . import symbolic

    stored, hit = results_cache.cached_value(
        "sympy-checks",
        _run_checks,
        ("companion.symbolic", "recency_lib.theory"),  # (and the simulation's own files)
        packages=("sympy", "numpy"),
        cache=cache,
    )
    return symbolic.steps(stored["holds"]), float(stored["seconds"]), hit
