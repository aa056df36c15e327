"""The errata of the paper's Appendix A: what is printed, what is right, and the evidence for it.

An erratum is shown only when a build finds evidence for it (:func:`find`): a sympy check of its
printed step that fails (:mod:`companion.symbolic`), or measured rows of the closed-form table
(:mod:`companion.closedforms`) with an evidence verdict. Each is of one kind (:data:`KINDS`): four
kinds of error in print (:data:`PRINTED`), an approximation bias of the LLN, or an effect beyond it.
The functions below turn the findings into the rows of the book's tables.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

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
    """One erratum of Appendix A and the evidence that can show it: ``checks``, keys of sympy checks
    of the printed step (False = evidence); ``forms``, keys of closed forms whose evidence rows of
    ``parts`` (and with / without a residual when ``residual`` is True / False) are evidence;
    ``prefer``: the part whose rows give the measured factor shown."""

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
        r"the residual as a weight on $y_j$ ($\sqrt d\gamma\lVert x_j\rVert$, $d\gamma$, "
        r"$\gamma$), while Eq. (20) adds $\gamma x_j$",
        r"$\gamma x_j^{(0)}$ in units of $y_j$: $g = \gamma\lVert x_j^{(0)}\rVert/\sqrt d$",
        checks=("residual-printed",),
        forms=("eq36-printed", "eq41-printed", "fig5-printed"),
        residual=True,
        kind=MISMATCH,
    ),
    Erratum("eq34", "(34)", r"stray factors $d$", "without them", checks=("eq34-printed",)),
    Erratum(
        "eq39",
        "(39)",
        r"$2\gamma e + e^{\alpha\sqrt d}$",
        r"$2\gamma e^{\sqrt d} + e^{\alpha\sqrt d}$",
        checks=("eq39-printed",),
    ),
    Erratum(
        "eq40", "(40)", r"prefactor $d$", r"$\sqrt d$ (a row constant)", checks=("eq40-printed",)
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
        r"$\times$ a factor that does not go to 1 as $d$ grows (for $h(j)$ it tends to "
        r"$e^{(1-\alpha^2)^2/2}$; below 1 at small $d$ and large $\alpha$)",
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
    if row.cells[0].flat:
        c = _most_resolved(row)
        mark = BOUND_MARK if c.sim.bound else ""
        step = f"step {nowrap(pm(c.sim.value, c.sim.se))}{mark}, $z = {z_text(c.z)}$"
        return f"{step}<br><small>$d$ = {c.d}</small>"
    c = _last_resolved(row)
    mark = BOUND_MARK if c.sim.bound else ""
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
    kinds = KINDS if kind is None else (kind,) if isinstance(kind, str) else tuple(kind)
    if not kinds or any(k not in KINDS for k in kinds):
        allowed = ", ".join(map(repr, KINDS))
        raise ValueError(
            f"kind={kind!r} is not allowed; allowed: None, one of {allowed} or a tuple of them"
        )
    out = []
    for f in sorted(
        (f for f in found if f.erratum.kind in kinds), key=lambda f: KINDS.index(f.erratum.kind)
    ):
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


#: What each verdict of a measured row means (closedforms.judge), for the page's legend.
VERDICT_MEANINGS = {
    "consistent": "within the threshold of 1 wherever resolved",
    "converges": "off at the smallest $d$ only, closer at the largest",
    "finite-d error": "off at every $d$, shrinking like $d^{-p}$: right in the limit",
    OFF: "off at every $d$, not shrinking: the form misses a factor (an error in print, or the "
    "bias of the LLN; the book's corrected forms keep the latter)",
    "deviates": "off wherever resolved, unresolved elsewhere",
    "mixed": "off at some $d$, not at others",
    "unresolved": "the simulated value is within the noise at every $d$",
    "flat": "printed flat in $j$, and the simulated steps are consistent with 0",
    "not flat": "printed flat in $j$, but a simulated step is resolved away from 0",
}


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
    """The page's first table: what was checked and what came out, in a few counts."""
    counts = verdict_counts(table)
    right = sum(counts.get(v, 0) for v in ("consistent", "converges", "flat"))
    other = sum(counts.get(v, 0) for v in ("deviates", "mixed", "unresolved", "not flat"))
    failing = sum(not c.holds for c in checks)
    by_algebra, by_simulation = sum(bool(f.failed) for f in found), sum(bool(f.rows) for f in found)
    rows = (
        (
            "algebra steps, by sympy",
            len(checks),
            f"{count(failing)} printed steps fail; {count(len(checks) - failing)} claims hold",
        ),
        (
            f"closed forms against simulation, $d$ = {', '.join(str(d) for d in table.ds)}",
            len({r.form.key for r in table.rows}),
            f"{count(len(table.rows))} rows (size and $j$-dependence, per setting)",
        ),
        (
            "the paper's errata (this page's tables)",
            len(found),
            f"{summary_text(summary(found))}; {count(by_algebra)} found by algebra, "
            f"{count(by_simulation)} by simulation",
        ),
        (
            "rows off at every $d$, not shrinking",
            counts.get(OFF, 0),
            "the form misses a factor: an error in print, or the LLN's bias (also in corrected "
            "forms)",
        ),
        (
            "rows off at every $d$, shrinking",
            counts.get(FINITE_D, 0),
            "finite-$d$ errors: right in the limit",
        ),
        (
            "rows right within the resolution",
            right,
            "consistent, converging, or flat as predicted",
        ),
        (
            "rows with another pattern or unresolved",
            other,
            "off where resolved, unresolved elsewhere; or a flat form that is not flat",
        ),
    )
    return [{"checked": what, "count": count(k), "outcome": outcome} for what, k, outcome in rows]


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
    attends only to itself, so E‖x_1^(1)‖² is known exactly (theory.sq_norm_first_token_exact); a
    weight κ of y_1 predicts d (1 + κ)² in the LLN. Rows: the exact mean and each candidate (the
    corrected g; the printed γ, dγ, √dγ‖x‖), with the simulated mean of ``res`` over each."""
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
    """Every sympy check as JSON, with the seconds they took."""
    from . import symbolic

    steps, seconds = symbolic.run_all_timed()
    return {"checks": [asdict(s) for s in steps], "seconds": seconds}


def sympy_checks(cache=None) -> tuple[list, float, bool]:
    """Every sympy check of :mod:`companion.symbolic`, run only when their code changed (cached by
    the source of symbolic and what it imports, and sympy's and numpy's versions): (the checks,
    the seconds they took when they ran, whether they came from the cache)."""
    from recency_lib import cache as results_cache

    from .symbolic import AlgebraStep

    stored, hit = results_cache.cached_value(
        "sympy-checks",
        _run_checks,
        ("companion.symbolic", "recency_lib.theory"),  # (and the simulation's own files)
        packages=("sympy", "numpy"),
        cache=cache,
    )
    return [AlgebraStep(**row) for row in stored["checks"]], float(stored["seconds"]), hit
