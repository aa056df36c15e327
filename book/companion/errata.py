"""The errata of the paper's Appendix A: what is printed, what is right, and the evidence for it.

Two kinds of evidence decide an erratum, both computed when the book is built:

* **algebra**: a sympy check of :mod:`companion.symbolic` that a printed step is right comes out
  False (the check of the corrected step next to it comes out True);
* **simulation**: rows of a :class:`companion.closedforms.Table` whose ratio simulated / closed
  form differs from 1 by more than the threshold at every d and does not shrink as d grows
  (verdict :data:`closedforms.OFF`, "off, not shrinking"), or whose closed form says "flat" (no
  dependence on the key j) while the simulated steps are resolved away from 0 (verdict "not flat").

Each erratum is of one kind (:data:`KINDS`). Four are errors in print (:data:`PRINTED`), told apart by
what went wrong: a **typographical slip** (a step false as printed whose intent the steps around it
make plain), a **scale error** (a quantity printed at the wrong power of d), a **model mismatch** (the
algebra treats another model than the one the paper defines) and a **wrong mechanism** (the printed
reasoning credits the effect to something the model does not do). The other two are about the
approximation: an **approximation bias** (the algebra is right, but the law of large numbers it starts
from misses a factor that does not vanish as d grows), or an **effect beyond the approximation** (a
form the LLN makes exactly flat, whose next order the simulation resolves: right in the limit, not an
error in print). :func:`summary` counts them by kind.

Rows that are off at every d but shrink like d^-p (verdict "finite-d error") are approximations
that become right as d grows; they are counted and listed apart (:func:`finite_d_rows`).

:data:`ERRATA` holds the known errata: their text (printed / right, markdown with math), their kind
and which checks and rows are their evidence. Which of them the book shows is decided by the evidence
of the run, never by this list (:func:`find`): an entry without failing evidence is left out, and a
measured row with an evidence verdict that no entry claims gets a row of its own (kind
:data:`UNEXPLAINED`). The functions below turn the findings into the rows of the book's tables (cells
already formatted, math as ``$...$``) and into download columns.

Equation numbers are the paper's; indices 1-based as in the paper.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recency_lib import theory

from .closedforms import BOUND_MARK, FINITE_D, OFF, VERDICTS, Row, Table, trend
from .report import count, listing, nowrap, num, pm, z_text

if TYPE_CHECKING:  # sympy is slow to import; the checks arrive already run
    from .symbolic import Check

#: Verdicts of a measured row that count as evidence of an erratum (closedforms.judge).
EVIDENCE_VERDICTS = (OFF, "not flat")

#: The kinds of an erratum (module doc), in the order the book lists them.
TYPO = "typographical slip"
SCALE = "scale error"
MISMATCH = "model mismatch"
MECHANISM = "wrong mechanism"
BIAS = "approximation bias"
BEYOND = "beyond the approximation"
UNEXPLAINED = "not yet explained"
PRINTED = (TYPO, SCALE, MISMATCH, MECHANISM)
KINDS = (*PRINTED, BIAS, BEYOND, UNEXPLAINED)
#: Each kind in prose: (one, several).
KIND_WORDS = {
    TYPO: ("typographical slip", "typographical slips"),
    SCALE: ("scale error", "scale errors"),
    MISMATCH: ("model mismatch", "model mismatches"),
    MECHANISM: ("wrong mechanism", "wrong mechanisms"),
    BIAS: ("approximation bias", "approximation biases"),
    BEYOND: ("effect beyond the approximation", "effects beyond the approximation"),
    UNEXPLAINED: ("measured deviation not yet explained", "measured deviations not yet explained"),
}
#: How the error of a row moves as d grows (closedforms.trend), in the book's words.
AS_D_GROWS = {"grows": "grows", "stalls": "does not shrink", "shrinks": "shrinks", "": "—"}
PART_NAMES = {"level": "size", "step": "$j$-dependence"}


@dataclass(frozen=True)
class Erratum:
    """One erratum of Appendix A and the evidence that can show it.

    ``kind``: one of :data:`KINDS` (module doc);
    ``checks``: keys of sympy checks (companion.symbolic) of the printed step, False = evidence;
    ``forms``: keys of closed forms (companion.closedforms) whose rows with an evidence verdict
    (:data:`EVIDENCE_VERDICTS`) are evidence, restricted to ``parts`` and, with ``residual`` True /
    False, to settings with / without a residual connection; ``prefer``: the part whose rows give the
    measured factor shown (when there are any).
    """

    key: str
    equations: str
    printed: str
    right: str
    checks: tuple[str, ...] = ()
    forms: tuple[str, ...] = ()
    parts: tuple[str, ...] = ("level", "step")
    residual: bool | None = None
    prefer: str = "level"
    label_from_rows: bool = False  # the "Eq." column lists the closed forms of the evidence rows
    kind: str = TYPO

    def claims(self, row: Row) -> bool:
        """Is ``row`` (an evidence row) evidence of this erratum?"""
        if row.form.key not in self.forms or row.part not in self.parts:
            return False
        return self.residual is None or (row.setting.gamma != 0.0) == self.residual


ERRATA: tuple[Erratum, ...] = (
    Erratum(
        "eq7",
        "(7)",
        r"$(e^{\sqrt d}+i-1)$ twice in the denominator",
        r"second factor $e^{\sqrt d}+j-1$",
        checks=("eq7-printed",),
        kind=TYPO,
    ),
    Erratum(
        "eq14",
        "(14)",
        r"$\langle x_i, x_i\rangle = \sqrt d$",
        r"$1$; $1/(1-\alpha)$ with anisotropy",
        checks=("eq14-printed",),
        forms=("eq14-printed",),
        kind=SCALE,
    ),
    Erratum(
        "eq15",
        "(13)–(15)",
        r"$A^{(1)}_{ii} = e^{\sqrt d}/(e^{\sqrt d}+i-1) \approx 1$: each token attends to itself",
        r"$a'/(a'+i-1)$: nearly uniform attention",
        checks=("eq15-printed",),
        forms=("eq15-printed",),
        kind=MECHANISM,
    ),
    Erratum(
        "eq19",
        "(17)–(19)",
        r"$S^{(2)}_{ij} = 1/(e^{\sqrt d}+i-1)$",
        r"$\big(1/(a'+i-1)+c^2\big)/\sqrt d$",
        checks=("eq17-scale", "eq18-printed"),
        forms=("eq19-printed",),
        parts=("level",),
        kind=MECHANISM,
    ),
    Erratum(
        "prop1-flat",
        "(19)",
        r"$S^{(2)}_{ij}$ flat in $j < i$ (the LLN)",
        r"rises by a relative $d^{-3/2}(1-1/j)$ at the next order: a step $\propto d^{-2}$",
        forms=("eq19-corrected", "eq19-printed"),
        parts=("step",),
        prefer="step",
        kind=BEYOND,
    ),
    Erratum(
        "eq22",
        "(22)",
        r"$\lVert x_i^{(1)}\rVert^2 = \sqrt d/(1-\alpha)$",
        r"$\lVert x_i^{(0)}\rVert^2 = 1/(1-\alpha)$",
        checks=("eq22-printed",),
        forms=("eq22-printed",),
        kind=SCALE,
    ),
    Erratum(
        "eq23",
        "(23)",
        r"$\langle y_i, y_j\rangle = \sqrt d\,\alpha$",
        r"$d\,\alpha$",
        checks=("eq23-printed",),
        forms=("eq23-printed",),
        kind=SCALE,
    ),
    Erratum(
        "residual",
        "(25)–(41), the paper's Figure 5",
        r"the residual as a weight on $y_j$ ($\sqrt d\gamma\lVert x_j\rVert$, $d\gamma$, $\gamma$), while Eq. (20) adds $\gamma x_j$",
        r"$\gamma x_j^{(0)}$ in units of $y_j$: $g = \gamma\lVert x_j^{(0)}\rVert/\sqrt d$",
        checks=("residual-printed",),
        forms=("eq36-printed", "eq41-printed", "fig5-printed"),
        residual=True,
        kind=MISMATCH,
    ),
    Erratum(
        "eq34", "(34)", r"stray factors $d$", "without them", checks=("eq34-printed",), kind=TYPO
    ),
    Erratum(
        "eq39",
        "(39)",
        r"$2\gamma e + e^{\alpha\sqrt d}$",
        r"$2\gamma e^{\sqrt d} + e^{\alpha\sqrt d}$",
        checks=("eq39-printed",),
        kind=TYPO,
    ),
    Erratum(
        "eq40",
        "(40)",
        r"prefactor $d$",
        r"$\sqrt d$ (a row constant)",
        checks=("eq40-printed",),
        kind=TYPO,
    ),
    Erratum(
        "lln-attention",
        "(4), (25), (26)",
        r"off-diagonal weight $e^{\alpha\sqrt d}/D_i$",
        r"$\times\,\mathbb{E}\,e^{Z} \to e^{(1-\alpha^2)^2/2}$",
        forms=("eq4-attention",),
        label_from_rows=True,
        kind=BIAS,
    ),
    Erratum(
        "lln-steps",
        "(10), (36), (40), (41), the paper's Figures 2, 5",
        r"the $j$-dependence of the LLN forms",
        r"$\times$ a factor that does not go to 1 as $d$ grows (for $h(j)$ it tends to $e^{(1-\alpha^2)^2/2}$; "
        r"below 1 at small $d$ and large $\alpha$)",
        forms=(
            "eq10",
            "eq11",
            "eq36-printed",
            "eq36-corrected",
            "eq41-printed",
            "eq41-corrected",
            "eq40-corrected",
            "fig2",
            "fig5-corrected",
        ),
        parts=("step",),
        prefer="step",
        label_from_rows=True,
        kind=BIAS,
    ),
)
BY_KEY = {e.key: e for e in ERRATA}


# -- finding the errata of a run -------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """An erratum with the evidence of this run: the failing sympy checks and the measured rows."""

    erratum: Erratum
    failed: tuple[Check, ...]
    rows: tuple[Row, ...]

    @property
    def representative(self) -> Row | None:
        """The row whose factor is shown: among the rows of the preferred part (else all), the one
        farthest from the closed form at its largest resolved d (largest |log ratio|; for flat
        forms, largest |z|)."""
        rows = [r for r in self.rows if r.part == self.erratum.prefer] or list(self.rows)
        return max(rows, key=_distance, default=None)


def _last_resolved(row: Row):
    cells = [c for c in row.cells if c.resolved]
    return cells[-1] if cells else None


def _most_resolved(row: Row):
    """For a flat form: the cell farthest from 0 in standard errors."""
    return max(row.cells, key=lambda c: abs(c.z))


def _distance(row: Row) -> float:
    if row.cells[0].flat:
        return abs(_most_resolved(row).z)
    cell = _last_resolved(row)
    return abs(math.log(abs(cell.ratio))) if cell is not None and cell.ratio != 0 else 0.0


def evidence_rows(table: Table) -> list[Row]:
    """The measured rows that are evidence of an erratum (:data:`EVIDENCE_VERDICTS`)."""
    return [r for r in table.rows if r.verdict in EVIDENCE_VERDICTS]


def find(table: Table, checks) -> list[Found]:
    """The errata this run shows, in the order of the appendix.

    ``checks``: the sympy checks that ran (a list of :class:`companion.symbolic.Check`, or a dict
    key -> Check). An entry of :data:`ERRATA` is shown when one of its checks failed or one of its
    rows has an evidence verdict; each evidence row goes to the first entry that claims it, and an
    evidence row that no entry claims becomes an erratum of its own (its closed form and part).
    """
    by_key = checks if isinstance(checks, dict) else {c.key: c for c in checks}
    rows = evidence_rows(table)
    claimed: set[int] = set()
    found = []
    for e in ERRATA:
        mine = [r for k, r in enumerate(rows) if k not in claimed and e.claims(r)]
        claimed |= {k for k, r in enumerate(rows) if any(r is m for m in mine)}
        failed = tuple(by_key[c] for c in e.checks if c in by_key and not by_key[c].holds)
        if failed or mine:
            found.append(Found(e, failed, tuple(mine)))
    loose: dict[tuple[str, str], list[Row]] = {}
    for k, r in enumerate(rows):
        if k not in claimed:
            loose.setdefault((r.form.key, r.part), []).append(r)
    for (key, part), group in loose.items():
        form = group[0].form
        e = Erratum(
            f"{key}-{part}",
            form.equation.replace("Eqs. ", "").replace("Eq. ", ""),
            f"{form.version}: {PART_NAMES[part]}",
            "off by the measured factor (no description yet)",
            forms=(key,),
            parts=(part,),
            prefer=part,
            kind=UNEXPLAINED,
        )
        found.append(Found(e, (), tuple(group)))
    return found


# -- the book's tables -------------------------------------------------------------------------------


def _factor(row: Row) -> str:
    """The measured value of a row as the errata table shows it, with the d where it was measured."""
    if row.cells[0].flat:
        c = _most_resolved(row)
        mark = BOUND_MARK if c.sim.bound else ""
        return f"step {nowrap(pm(c.sim.value, c.sim.se))}{mark}, $z = {z_text(c.z)}$<br><small>$d$ = {c.d}</small>"
    c = _last_resolved(row)
    mark = BOUND_MARK if c.sim.bound else ""
    grows = f"; error {AS_D_GROWS[row.trend]} with $d$" if row.trend else ""
    return f"{nowrap(pm(c.ratio, c.ratio_se))}{mark}<br><small>$d$ = {c.d}{grows}</small>"


def compact_equations(labels) -> str:
    """ "(10), (36), (41), the paper's Figures 2, 5" from closed-form labels such as "Eq. (10)", "the
    paper's Figure 2 (Eq. (41))"."""
    eqs, figs = set(), set()
    for label in labels:
        eqs |= {int(k) for k in re.findall(r"\((\d+)\)", label)}
        figs |= {int(k) for k in re.findall(r"Figure (\d+)", label)}
    parts = [", ".join(f"({k})" for k in sorted(eqs))] if eqs else []
    if figs:
        parts.append(
            ("the paper's Figure " if len(figs) == 1 else "the paper's Figures ")
            + ", ".join(str(k) for k in sorted(figs))
        )
    return ", ".join(parts)


def _equations(f: Found) -> str:
    """The "Eq." cell: the erratum's equations, or those of its evidence rows (label_from_rows)."""
    if not (f.erratum.label_from_rows and f.rows):
        return f.erratum.equations
    return compact_equations(r.form.equation for r in f.rows)


def errata_rows(found: list[Found], kind=None) -> list[dict]:
    """One row per erratum (of ``kind``, one of :data:`KINDS` or a tuple of them, e.g. :data:`PRINTED`,
    in the order of :data:`KINDS`, with a "kind" column; all when None): equation, as printed, what is
    right, what found it (sympy, simulation or both), and the measured value (simulated / printed, or the
    simulated step of a form printed flat) ± SE with the d where it was measured and how the error moves
    as d grows."""
    kinds = KINDS if kind is None else (kind,) if isinstance(kind, str) else tuple(kind)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(
            f"kind={kind!r} is not allowed; allowed: None, one of {', '.join(map(repr, KINDS))} or a tuple of them"
        )
    out = []
    for f in sorted(
        (f for f in found if f.erratum.kind in kinds), key=lambda f: KINDS.index(f.erratum.kind)
    ):
        e, rep = f.erratum, f.representative
        by = "both" if (f.failed and f.rows) else ("sympy" if f.failed else "simulation")
        row = {"kind": KIND_WORDS[e.kind][0]} if len(kinds) > 1 else {}
        out.append(
            {
                **row,
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


def evidence_detail_rows(found: list[Found], ds) -> list[dict]:
    """Every measured row behind the errata table: erratum, closed form, setting, part, each d."""
    return [
        {
            "entry": _equations(f),
            "kind": f.erratum.kind,
            "closed form": f"{r.form.equation}, {r.form.version}",
            "setting": r.setting.short,
            "part": PART_NAMES[r.part],
            **_cells(r, ds),
            "verdict": r.verdict,
        }
        for f in found
        for r in f.rows
    ]


def finite_d_rows(table: Table) -> list[dict]:
    """The rows off by more than the erratum threshold at every d whose error shrinks with d."""
    out = []
    for r in table.rows:
        if r.verdict != FINITE_D:
            continue
        p = trend(r.cells)[1]
        out.append(
            {
                "closed form": f"{r.form.equation}, {r.form.version}",
                "setting": r.setting.short,
                "part": PART_NAMES[r.part],
                **_cells(r, table.ds),
                "error $\\propto d^{-p}$, $p$": num(p, 2),
            }
        )
    return out


def ratio_rows(table: Table) -> list[dict]:
    """The full table: every closed form, setting and part, the ratio (or flat test) at each d, the verdict."""
    return [
        {
            "closed form": r.form.equation,
            "version": r.form.version,
            "setting": r.setting.short,
            "part": PART_NAMES[r.part],
            **_cells(r, table.ds),
            "verdict": r.verdict,
            "error as $d$ grows": AS_D_GROWS[r.trend],
        }
        for r in table.rows
    ]


#: What each verdict of a measured row means (closedforms.judge), for the page's legend.
VERDICT_MEANINGS = {
    "consistent": "within the threshold of 1 wherever resolved",
    "converges": "off at the smallest $d$ only, closer at the largest",
    "finite-d error": "off at every $d$, shrinking like $d^{-p}$: right in the limit",
    OFF: "off at every $d$, not shrinking: the form misses a factor (an error in print, or the bias of the LLN; "
    "the book's corrected forms keep the latter)",
    "deviates": "off wherever resolved, unresolved elsewhere",
    "mixed": "off at some $d$, not at others",
    "unresolved": "the simulated value is within the noise at every $d$",
    "flat": "printed flat in $j$, and the simulated steps are consistent with 0",
    "not flat": "printed flat in $j$, but a simulated step is resolved away from 0",
}


def verdict_rows(table: Table) -> list[dict]:
    """The verdicts of the full table, counted, with what each means: the full table's summary."""
    return [
        {"verdict": v, "rows": count(k), "meaning": VERDICT_MEANINGS[v]}
        for v, k in verdict_counts(table).items()
    ]


def verdict_counts(table: Table) -> dict[str, int]:
    """How many rows got each verdict (closedforms.VERDICTS order, only those that occur)."""
    return {v: n for v in VERDICTS if (n := sum(r.verdict == v for r in table.rows))}


def summary(found: list[Found]) -> dict[str, int]:
    """How many of the errata ``found`` are of each kind: every kind of :data:`KINDS` but
    :data:`UNEXPLAINED` (also when 0), and that one when there are any."""
    counts = {k: sum(f.erratum.kind == k for f in found) for k in KINDS}
    if not counts[UNEXPLAINED]:
        del counts[UNEXPLAINED]
    return counts


def summary_text(counts: dict[str, int]) -> str:
    """ "4 typographical slips, 3 scale errors, ... and 1 effect beyond the approximation" from :func:`summary`."""
    unknown = [k for k in counts if k not in KINDS]
    if unknown:
        raise ValueError(f"counts has kind(s) {unknown!r}; allowed: {', '.join(map(repr, KINDS))}")
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
    """The paper's errata as Appendix A finds them at its defaults (the same arguments), for a page that quotes
    their counts (the landing page, the README's numbers): the closed-form table (closedforms.measure, through
    the results cache: every run is one that Appendix A and the chapters already simulated), the sympy checks
    (:func:`sympy_checks`, cached by their source; or ``checks`` when given), :func:`find`. Returns
    (:func:`summary` counts by kind, the errata found); :func:`summary_text` words the counts."""
    from . import closedforms as cf

    table = cf.measure(
        ds,
        n=n,
        samples=samples,
        seed=seed,
        boost=boost,
        cosine_samples=cosine_samples,
        cache=cache,
        executor=executor,
    )
    if checks is None:
        checks = sympy_checks(cache=cache)[0]
    found = find(table, checks)
    return summary(found), found


def summary_rows(table: Table, checks, found: list[Found]) -> list[dict]:
    """The page's first table: what was checked and what came out, in a few counts."""
    checks = list(checks.values()) if isinstance(checks, dict) else list(checks)
    counts = verdict_counts(table)
    forms = len({r.form.key for r in table.rows})
    ds = ", ".join(str(d) for d in table.ds)
    right = sum(counts.get(v, 0) for v in ("consistent", "converges", "flat"))
    other = sum(counts.get(v, 0) for v in ("deviates", "mixed"))
    algebra = [f for f in found if f.failed]
    sims = [f for f in found if f.rows]
    return [
        {
            "checked": "algebra steps, by sympy",
            "count": count(len(checks)),
            "outcome": f"{count(sum(not c.holds for c in checks))} printed steps fail; "
            f"{count(sum(c.holds for c in checks))} claims hold",
        },
        {
            "checked": f"closed forms against simulation, $d$ = {ds}",
            "count": count(forms),
            "outcome": f"{count(len(table.rows))} rows (size and $j$-dependence, per setting)",
        },
        {
            "checked": "the paper's errata (this page's tables)",
            "count": count(len(found)),
            "outcome": f"{summary_text(summary(found))}; {count(len(algebra))} found by algebra, "
            f"{count(len(sims))} by simulation",
        },
        {
            "checked": "rows off at every $d$, not shrinking",
            "count": count(counts.get(OFF, 0)),
            "outcome": "the form misses a factor: an error in print, or the LLN's bias (also in corrected forms)",
        },
        {
            "checked": "rows off at every $d$, shrinking",
            "count": count(counts.get(FINITE_D, 0)),
            "outcome": "finite-$d$ errors: right in the limit",
        },
        {
            "checked": "rows right within the resolution",
            "count": count(right),
            "outcome": "consistent, converging, or flat as predicted",
        },
        {
            "checked": "rows with another pattern or unresolved",
            "count": count(other + counts.get("unresolved", 0) + counts.get("not flat", 0)),
            "outcome": "off where resolved, unresolved elsewhere; or a flat form that is not flat",
        },
    ]


def check_rows(checks, section: str) -> list[dict]:
    """The sympy checks of one section of the appendix ("A.1", "A.2", "A.3") as table rows."""
    checks = list(checks.values()) if isinstance(checks, dict) else list(checks)
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
    """The residual coefficient tested without approximation (Eqs. (25), (26), (33)).

    The first token attends only to itself, so ||x_1^(1)||^2 = (sqrt(d) + gamma ||x_1^(0)||)^2 exactly,
    with a mean known in closed form (theory.sq_norm_first_token_exact). A candidate coefficient
    kappa of y_1 predicts d (1 + kappa)^2 in the LLN. Rows: the exact mean and each candidate
    (the corrected g, and the printed gamma, d gamma, sqrt(d) gamma ||x||), with the simulated mean
    of ``res`` (a residual setting) divided by each prediction.
    """
    cfg = res.config
    d, a, g = cfg.d, cfg.alpha, cfg.gamma
    m, se = float(res.sq_norm_mean[1][0]), float(res.sq_norm_sem[1][0])
    predicted = {
        "exact mean, no approximation": float(theory.sq_norm_first_token_exact(a, g, d, cfg.norm))
    }
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
    """Every sympy check as JSON (its rows) with the seconds they took."""
    from . import symbolic

    checks, seconds = symbolic.run_all_timed()
    return {"checks": [c.as_row() for c in checks], "seconds": seconds}


def sympy_checks(cache=None, refresh: bool = False) -> tuple[list[Check], float, bool]:
    """Every sympy check of :mod:`companion.symbolic` (``run_all``), run only when their source
    changed: the verdicts are stored by :func:`recency_lib.cache.cached_value`, keyed by the source
    of ``symbolic`` and every module it imports (``theory``, ``model``, ...) and the versions of
    sympy and numpy, so an edit of any of them runs the checks again. Returns the checks, the
    seconds they took when they ran, and whether they came from the cache."""
    from recency_lib import cache as results_cache

    from .symbolic import Check

    def fetch(again):
        stored, hit = results_cache.cached_value(
            "sympy-checks",
            _run_checks,
            ("companion.symbolic",),
            packages=("sympy", "numpy"),
            cache=cache,
            refresh=again,
        )
        return [Check(**row) for row in stored["checks"]], float(stored["seconds"]), hit

    try:
        return fetch(refresh)
    except (KeyError, TypeError, ValueError):  # an entry of another layout: run the checks again
        return fetch(True)
