"""The errata of the paper's Appendix A: what is printed, what is right, and the evidence for it.

Two kinds of evidence decide an erratum, both computed when the book is built:

* **algebra**: a sympy check of :mod:`companion.symbolic` that a printed step is right comes out
  False (the check of the corrected step next to it comes out True);
* **simulation**: rows of a :class:`companion.closedforms.Table` whose ratio simulated / closed
  form differs from 1 by more than the erratum threshold at every d and does not shrink as d
  grows (verdict "erratum"), or whose closed form says "flat" (no dependence on the key j) while
  the simulated steps are resolved away from 0 (verdict "not flat").

Rows that are off at every d but shrink like d^-p (verdict "finite-d error") are approximations
that become right as d grows; they are counted and listed apart (:func:`finite_d_rows`).

:data:`ERRATA` holds the known errata: their text (printed / right, markdown with math) and which
checks and rows are their evidence. Which of them the book shows is decided by the evidence of
the run, never by this list (:func:`find`): an entry without failing evidence is left out, and a
measured row with an erratum verdict that no entry claims gets a row of its own. The functions
below turn the findings into the rows of the book's tables (cells already formatted, math as
``$...$``) and into download columns.

Equation numbers are the paper's; indices 1-based as in the paper.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recency_lib import theory
from .closedforms import BOUND_MARK, VERDICTS, Row, Table, trend
from .report import count, nowrap, num, pm, z_text

if TYPE_CHECKING:                       # sympy is slow to import; the checks arrive already run
    from .symbolic import Check

#: Verdicts of a measured row that count as evidence of an erratum (closedforms.judge).
EVIDENCE_VERDICTS = ("erratum", "not flat")
FINITE_D = "finite-d error"
#: How the error of a row moves as d grows (closedforms.trend), in the book's words.
AS_D_GROWS = {"grows": "grows", "stalls": "does not shrink", "shrinks": "shrinks", "": "—"}
PART_NAMES = {"level": "size", "step": "$j$-dependence"}


@dataclass(frozen=True)
class Erratum:
    """One erratum of Appendix A and the evidence that can show it.

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
    label_from_rows: bool = False       # the "Eq." column lists the closed forms of the evidence rows

    def claims(self, row: Row) -> bool:
        """Is ``row`` (an evidence row) evidence of this erratum?"""
        if row.form.key not in self.forms or row.part not in self.parts:
            return False
        return self.residual is None or (row.setting.gamma != 0.0) == self.residual


ERRATA: tuple[Erratum, ...] = (
    Erratum("eq7", "(7)", r"$(e^{\sqrt d}+i-1)$ twice in the denominator", r"second factor $e^{\sqrt d}+j-1$",
            checks=("eq7-printed",)),
    Erratum("eq14", "(14)", r"$\langle x_i, x_i\rangle = \sqrt d$", r"$1$; $1/(1-\alpha)$ with anisotropy",
            checks=("eq14-printed",), forms=("eq14-printed",)),
    Erratum("eq15", "(13)–(15)", r"$A^{(1)}_{ii} = e^{\sqrt d}/(e^{\sqrt d}+i-1)$", r"$a'/(a'+i-1)$: nearly uniform",
            checks=("eq15-printed",), forms=("eq15-printed",)),
    Erratum("eq19", "(17)–(19)", r"$S^{(2)}_{ij} = 1/(e^{\sqrt d}+i-1)$", r"$\big(1/(a'+i-1)+c^2\big)/\sqrt d$",
            checks=("eq17-scale", "eq18-printed"), forms=("eq19-printed",), parts=("level",)),
    Erratum("prop1-flat", "(19)", r"$S^{(2)}_{ij}$ flat in $j < i$", r"rises by a relative $d^{-3/2}(1-1/j)$",
            forms=("eq19-corrected", "eq19-printed"), parts=("step",), prefer="step"),
    Erratum("eq22", "(22)", r"$\lVert x_i^{(1)}\rVert^2 = \sqrt d/(1-\alpha)$",
            r"$\lVert x_i^{(0)}\rVert^2 = 1/(1-\alpha)$", checks=("eq22-printed",), forms=("eq22-printed",)),
    Erratum("eq23", "(23)", r"$\langle y_i, y_j\rangle = \sqrt d\,\alpha$", r"$d\,\alpha$",
            checks=("eq23-printed",), forms=("eq23-printed",)),
    Erratum("residual", "(25)–(41), Fig. 5", r"weight $\sqrt d\gamma\lVert x_j\rVert$, $d\gamma$, $\gamma$ on $y_j$",
            r"$g = \gamma\lVert x_j^{(0)}\rVert/\sqrt d$", checks=("residual-printed",),
            forms=("eq36-printed", "eq41-printed", "fig5-printed"), residual=True),
    Erratum("eq34", "(34)", r"stray factors $d$", "without them", checks=("eq34-printed",)),
    Erratum("eq39", "(39)", r"$2\gamma e + e^{\alpha\sqrt d}$", r"$2\gamma e^{\sqrt d} + e^{\alpha\sqrt d}$",
            checks=("eq39-printed",)),
    Erratum("eq40", "(40)", r"prefactor $d$", r"$\sqrt d$ (a row constant)", checks=("eq40-printed",)),
    Erratum("lln-attention", "(4), (25), (26)", r"off-diagonal weight $e^{\alpha\sqrt d}/D_i$",
            r"$\times\,\mathbb{E}\,e^{Z} \to e^{(1-\alpha^2)^2/2}$", forms=("eq4-attention",), label_from_rows=True),
    Erratum("lln-steps", "(10), (36), (40), (41), Figs. 2, 5", r"the $j$-dependence of the LLN forms",
            r"$\times$ a factor growing with $d$; for $h(j)$ it tends to $e^{(1-\alpha^2)^2/2}$",
            forms=("eq10", "eq11", "eq36-printed", "eq36-corrected", "eq41-printed", "eq41-corrected",
                   "eq40-corrected", "fig2", "fig5-corrected"), parts=("step",), prefer="step",
            label_from_rows=True),
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
        e = Erratum(f"{key}-{part}", form.equation.replace("Eqs. ", "").replace("Eq. ", ""),
                    f"{form.version}: {PART_NAMES[part]}", "off by the measured factor (no description yet)",
                    forms=(key,), parts=(part,), prefer=part)
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
    """"(10), (36), (41), Figs. 2, 5" from closed-form labels such as "Eq. (10)", "Fig. 2 (Eq. (41))"."""
    eqs, figs = set(), set()
    for label in labels:
        eqs |= {int(k) for k in re.findall(r"\((\d+)\)", label)}
        figs |= {int(k) for k in re.findall(r"Fig\. (\d+)", label)}
    parts = [", ".join(f"({k})" for k in sorted(eqs))] if eqs else []
    if figs:
        parts.append(("Fig. " if len(figs) == 1 else "Figs. ") + ", ".join(str(k) for k in sorted(figs)))
    return ", ".join(parts)


def _equations(f: Found) -> str:
    """The "Eq." cell: the erratum's equations, or those of its evidence rows (label_from_rows)."""
    if not (f.erratum.label_from_rows and f.rows):
        return f.erratum.equations
    return compact_equations(r.form.equation for r in f.rows)


def errata_rows(found: list[Found]) -> list[dict]:
    """One row per erratum: equation, as printed, what is right, what found it (sympy, simulation or
    both), and the measured value (simulated / printed, or the simulated step of a form printed
    flat) ± SE with the d where it was measured and how the error moves as d grows."""
    out = []
    for f in found:
        e, rep = f.erratum, f.representative
        by = "both" if (f.failed and f.rows) else ("sympy" if f.failed else "simulation")
        out.append({"Eq.": _equations(f), "as printed": e.printed, "right": e.right, "found by": by,
                    "measured": "exact algebra" if rep is None else _factor(rep)})
    return out


def _cells(row: Row, ds) -> dict:
    by_d = {c.d: c for c in row.cells}
    return {f"$d$ = {d}": by_d[d].text() for d in ds}


def evidence_detail_rows(found: list[Found], ds) -> list[dict]:
    """Every measured row behind the errata table: erratum, closed form, setting, part, each d."""
    return [{"erratum": _equations(f), "closed form": f"{r.form.equation}, {r.form.version}",
             "setting": r.setting.short, "part": PART_NAMES[r.part], **_cells(r, ds), "verdict": r.verdict}
            for f in found for r in f.rows]


def finite_d_rows(table: Table) -> list[dict]:
    """The rows off by more than the erratum threshold at every d whose error shrinks with d."""
    out = []
    for r in table.rows:
        if r.verdict != FINITE_D:
            continue
        p = trend(r.cells)[1]
        out.append({"closed form": f"{r.form.equation}, {r.form.version}", "setting": r.setting.short,
                    "part": PART_NAMES[r.part], **_cells(r, table.ds), "error $\\propto d^{-p}$, $p$": num(p, 2)})
    return out


def ratio_rows(table: Table) -> list[dict]:
    """The full table: every closed form, setting and part, the ratio (or flat test) at each d, the verdict."""
    return [{"closed form": r.form.equation, "version": r.form.version, "setting": r.setting.short,
             "part": PART_NAMES[r.part], **_cells(r, table.ds), "verdict": r.verdict,
             "error as $d$ grows": AS_D_GROWS[r.trend]} for r in table.rows]


def ratio_columns(table: Table) -> dict[str, list]:
    """The numbers behind the full table, one row per closed form, setting, part and d (a download)."""
    names = ("key", "equation", "version", "norm", "alpha", "gamma", "part", "d", "samples", "closed_form",
             "simulated", "simulated_se", "se_is_bound", "ratio", "ratio_se", "resolved", "verdict")
    cols: dict[str, list] = {k: [] for k in names}
    for r in table.rows:
        for c in r.cells:
            values = (r.form.key, r.form.equation, r.form.version, r.setting.norm, r.setting.alpha, r.setting.gamma,
                      r.part, c.d, c.samples, c.closed, c.sim.value, c.sim.se, c.sim.bound, c.ratio, c.ratio_se,
                      c.resolved, r.verdict)
            for k, v in zip(names, values):
                cols[k].append(v)
    return cols


#: What each verdict of a measured row means (closedforms.judge), for the page's legend.
VERDICT_MEANINGS = {
    "consistent": "within the threshold of 1 wherever resolved",
    "converges": "off at the smallest $d$ only, closer at the largest",
    "finite-d error": "off at every $d$, shrinking like $d^{-p}$: right in the limit",
    "erratum": "off at every $d$, not shrinking: a factor the large-$d$ form misses",
    "deviates": "off wherever resolved, unresolved elsewhere",
    "mixed": "off at some $d$, not at others",
    "unresolved": "the simulated value is within the noise at every $d$",
    "flat": "printed flat in $j$, and the simulated steps are consistent with 0",
    "not flat": "printed flat in $j$, but a simulated step is resolved away from 0",
}


def verdict_rows(table: Table) -> list[dict]:
    """The verdicts of the full table, counted, with what each means: the full table's summary."""
    return [{"verdict": v, "rows": count(k), "meaning": VERDICT_MEANINGS[v]} for v, k in verdict_counts(table).items()]


def verdict_counts(table: Table) -> dict[str, int]:
    """How many rows got each verdict (closedforms.VERDICTS order, only those that occur)."""
    return {v: n for v in VERDICTS if (n := sum(r.verdict == v for r in table.rows))}


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
        {"checked": "algebra steps, by sympy", "count": count(len(checks)),
         "outcome": f"{count(sum(not c.holds for c in checks))} printed steps fail; "
                    f"{count(sum(c.holds for c in checks))} claims hold"},
        {"checked": f"closed forms against simulation, $d$ = {ds}", "count": count(forms),
         "outcome": f"{count(len(table.rows))} rows (size and $j$-dependence, per setting)"},
        {"checked": "errata (this page's table)", "count": count(len(found)),
         "outcome": f"{count(len(algebra))} found by algebra, {count(len(sims))} by simulation"},
        {"checked": "rows off at every $d$, not shrinking", "count": count(counts.get("erratum", 0)),
         "outcome": "errata: the large-$d$ form misses a factor"},
        {"checked": "rows off at every $d$, shrinking", "count": count(counts.get(FINITE_D, 0)),
         "outcome": "finite-$d$ errors: right in the limit"},
        {"checked": "rows right within the resolution", "count": count(right),
         "outcome": "consistent, converging, or flat as predicted"},
        {"checked": "rows with another pattern or unresolved", "count": count(other + counts.get("unresolved", 0)
                                                                           + counts.get("not flat", 0)),
         "outcome": "off where resolved, unresolved elsewhere; or a flat form that is not flat"},
    ]


def check_rows(checks, section: str) -> list[dict]:
    """The sympy checks of one section of the appendix ("A.1", "A.2", "A.3") as table rows."""
    checks = list(checks.values()) if isinstance(checks, dict) else list(checks)
    return [{"Eqs.": c.equations, "claim": c.claim, "verdict": "✓ holds" if c.holds else "✗ fails",
             "how": c.method} for c in checks if c.section == section]


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
    predicted = {"exact mean, no approximation": float(theory.sq_norm_first_token_exact(a, g, d, cfg.norm))}
    for name, kappa in ((r"$g$ (corrected)", float(theory.residual_coefficient(a, g, d, cfg.norm))),
                        (r"$\gamma$ (Eq. (33))", g), (r"$d\gamma$ (Eq. (26))", d * g),
                        (r"$\sqrt d\,\gamma\lVert x\rVert$ (Eq. (25))", math.sqrt(d) * g / math.sqrt(1.0 - a))):
        predicted[f"LLN with {name}"] = d * (1.0 + kappa) ** 2
    return [{"prediction": name, r"$\lVert x_1^{(1)}\rVert^2$": num(value, 4),
             "simulated / prediction": pm(m / value, se / value)} for name, value in predicted.items()]


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
        stored, hit = results_cache.cached_value("sympy-checks", _run_checks, ("companion.symbolic",),
                                                 packages=("sympy", "numpy"), cache=cache, refresh=again)
        return [Check(**row) for row in stored["checks"]], float(stored["seconds"]), hit

    try:
        return fetch(refresh)
    except (KeyError, TypeError, ValueError):      # an entry of another layout: run the checks again
        return fetch(True)


# -- the numbers Appendix A's prose cites ------------------------------------------------------------

def page_numbers(table: Table, checks, found: list[Found], eq5, *, n: int, workers: int, sympy_seconds: float,
                 sympy_cached: bool, wall_seconds: float) -> dict[str, str]:
    """glue key -> text of every number Appendix A's prose cites (book/appendix_a.ipynb glues them all
    at once): hidden sizes, closed-form ratios with their Monte-Carlo error at the ends of the d range,
    the sympy verdicts, Definition 1's and the trend's sample counts, the cost of this build."""
    from . import closedforms as cf
    from . import conventions as cv
    from . import symbolic
    from .report import listing, percent

    ds = table.ds
    d0, d1, dmax = ds[0], ds[min(1, len(ds) - 1)], ds[-1]
    d_fig5 = cv.PAPER_D if cv.PAPER_D in ds else d1
    cell = table.cell
    need, def1_i, def1_j = cf.definition1_samples(table.results[(cf.T, d1)], cv.definition1_z(n))
    out = {"aa-ds": listing(ds), "aa-d0": str(d0), "aa-d1": str(d1), "aa-dmax": str(dmax),
           "aa-n-errata": count(len(found)), "aa-d-fig5": str(d_fig5),
           # Theorem 1: the norm drop of Eq. (10) and the score of Eq. (5)
           "aa-eq10-level-err": num(abs(cell("eq10", "level", dmax).ratio - 1.0), 2),
           "aa-eq10-step-max": cell("eq10", "step", dmax).text(),
           "aa-R-max": num(float(theory.drop_ratio_first_order(dmax)), 4),
           "aa-eq11-level-0": cell("eq11", "level", d0).text(), "aa-eq11-step-0": cell("eq11", "step", d0).text(),
           "aa-eq11-step-1": cell("eq11", "step", d1).text(),
           "aa-eq5-word": eq5.word, "aa-eq5-value": eq5.value,
           "aa-eq5-d": str(eq5.numbers["ds"][0]), "aa-eq5-measure": eq5.measure,
           "aa-eq4-0": cell("eq4-attention", "level", dmax, cf.T).text(),
           "aa-eq4-5": cell("eq4-attention", "level", dmax, cf.A).text(),
           # Definition 1 and the trend: what resolving them takes
           "aa-n-pairs": count(cv.adjacent_pairs(n)), "aa-z-def1": num(cv.definition1_z(n), 3),
           "aa-level": percent(cv.FAMILYWISE_LEVEL), "aa-def1-need": num(need, 2), "aa-def1-i": str(def1_i),
           "aa-def1-j": str(def1_j), "aa-def1-j0": str(def1_j - 1), "aa-samples-t": count(table.samples_of(cf.T)),
           "aa-trend-need": num(cell("eq11", "step", d1).samples_to_resolve, 2),
           # Proposition 1
           "aa-eq14-max": cell("eq14-printed", "level", dmax).text(),
           "aa-eq19p-max": cell("eq19-printed", "level", dmax).text(),
           "aa-eq19c-max": cell("eq19-corrected", "level", dmax).text(),
           "aa-prop1-step-0": cell("eq19-corrected", "step", d0).text(),
           "aa-prop1-step-1": cell("eq19-corrected", "step", d1).text(),
           "aa-prop1-ratio-0": cell("prop1-beyond-lln", "step", d0).text(),
           # Propositions 2 and 3, Figure 5
           "aa-eq36p-max": cell("eq36-printed", "level", dmax, cf.AR).text(),
           "aa-eq41c-max": cell("eq41-corrected", "level", dmax, cf.AR).text(),
           "aa-eq41c-step-max": cell("eq41-corrected", "step", dmax, cf.AR).text(),
           "aa-eq6-verdict": table.row("eq6-cosine-2nd", "level").verdict,
           # what this build cost
           "aa-z-resolve": num(cf.Z_RESOLVE), "aa-z-erratum": num(cf.Z_ERRATUM),
           "aa-n-sequences": count(table.cost.samples), "aa-n-configs": count(table.cost.configs),
           "aa-sim-seconds": f"{num(table.cost.compute_seconds, 2)} s", "aa-sympy-seconds": f"{num(sympy_seconds, 2)} s",
           "aa-n-checks": count(len(checks)),
           "aa-sympy-source": "read their verdicts from the cache" if sympy_cached else "ran them",
           "aa-workers": count(workers), "aa-wall-seconds": f"{num(wall_seconds, 2)} s"}
    for k in range(3):
        out[f"aa-eq10-step-{k}"] = cell("eq10", "step", ds[min(k, len(ds) - 1)]).text()
    for key, c in symbolic.by_key(checks).items():
        out[f"aa-chk-{key}"] = "✓ true" if c.holds else "✗ false"
    return out
