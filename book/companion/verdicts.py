"""The book's one verdict rule (:data:`RULE`: the statuses of a claim's checks give
its word and its decisive check), the checks (:class:`Check`) and the landing page's table."""

from __future__ import annotations

from dataclasses import dataclass, field

from recency_lib.metrics import sign
from recency_lib.result import SimResult
from recency_lib.rounding import undecidable

from . import conventions, report
from .significance import FAMILYWISE_LEVEL
from .statistics import StepEstimate, definition1, estimator_name, rp

AS_CLAIMED = "as claimed"  # resolved the way the paper says, in full
ON_AVERAGE = "on average"  # the way the paper says on average only (the mean step, not every step)
UNRESOLVED = "unresolved"  # resolved neither way
AGAINST = "against"  # resolved against the paper, whatever the size and the paper's approximation
STATUSES = (AS_CLAIMED, ON_AVERAGE, UNRESOLVED, AGAINST)

HOLDS, HOLDS_IN_PART = "holds", "holds in part"
NOT_RESOLVED, CONTRADICTED = "not resolved", "contradicted"

#: The one rule: the first row whose condition the statuses meet gives the word, and the first
#: check with a status of that row is the decisive one.
RULE = (
    (lambda st: AGAINST in st, CONTRADICTED, (AGAINST,)),
    (lambda st: all(s == AS_CLAIMED for s in st), HOLDS, (AS_CLAIMED,)),
    (lambda st: AS_CLAIMED in st or ON_AVERAGE in st, HOLDS_IN_PART, (ON_AVERAGE, UNRESOLVED)),
    (lambda st: True, NOT_RESOLVED, (UNRESOLVED,)),
)
WORDS = tuple(word for _, word, _ in RULE)

#: The rule in words (the landing page states it once).
RULE_TEXT = (
    "Each claim is split into checks, each decided by simulation; the checks of a claim are "
    "tested together, so that the chance of any false call among them stays under "
    f"{report.percent(FAMILYWISE_LEVEL)} (the {{term}}`family-wise error`). A claim **holds** "
    "when every check comes out as the paper says; it **holds in part** when some do and none "
    "goes against it (for example, the rows rise on average but not every single step is "
    "resolved); it is **not resolved** when no check is resolved either way; it is "
    "**contradicted** when any check is resolved against the paper, however small the effect and "
    "whatever the order of the paper's approximation. The number shown is the one of the check "
    "that decides the word, with its setting."
)


def verdict_word(statuses) -> tuple[str, int]:
    """The word of a claim whose checks found ``statuses`` and the index of its decisive check."""
    statuses = list(statuses)
    word, decisive = next((word, d) for condition, word, d in RULE if condition(statuses))
    return word, next((k for k, s in enumerate(statuses) if s in decisive), 0)


@dataclass(frozen=True)
class Check:
    """One check of a claim: ``what`` is measured where, ``value`` ± ``se``, its ``z`` against what
    would change its ``status``, the printed ``text``; then its ``kind``, 1-based layer, model."""

    what: str
    setting: str
    value: float
    se: float
    z: float
    status: str
    text: str
    kind: str = ""
    layer: int | None = None
    norm: str | None = None
    alpha: float | None = None
    gamma: float | None = None
    d: int | None = None
    placement: str | None = None


def about(res_or_cfg) -> dict:
    """The model fields of a :class:`Check`: norm, alpha, gamma, d and placement."""
    cfg = res_or_cfg.config if isinstance(res_or_cfg, SimResult) else res_or_cfg
    fields = {"norm": cfg.norm, "alpha": float(cfg.alpha), "gamma": float(cfg.gamma)}
    return fields | {"d": int(cfg.d), "placement": cfg.placement}


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict: its word, checks, decisive check, live check ``target``, ``numbers``."""

    claim: str
    word: str
    checks: tuple[Check, ...]
    decisive: Check
    target: tuple[str, str]
    numbers: dict = field(default_factory=dict, compare=False)

    @property
    def value(self) -> str:
        """The decisive number as every page prints it."""
        return self.decisive.text

    @property
    def measure(self) -> str:
        """What the decisive number is, and its setting."""
        return f"{self.decisive.what}; {self.decisive.setting}"


def decide(claim: str, checks, target: tuple[str, str], numbers: dict | None = None) -> Verdict:
    """The verdict on ``claim`` from its ``checks``, most important first."""
    checks = tuple(checks)
    word, k = verdict_word([c.status for c in checks])
    return Verdict(claim, word, checks, checks[k], target, numbers or {})


# -- checks of one kind each -----------------------------------------------------------------------


def setting_text(res_or_cfg, estimator: str | None = "cv") -> str:
    """ "LayerNorm, α = 0, $d = 64$, 4,000,000 sequences, control variates"."""
    cfg = res_or_cfg.config if isinstance(res_or_cfg, SimResult) else res_or_cfg
    out = f"{conventions.setting_label(cfg)}, $d = {cfg.d}$, {report.count(cfg.samples)} sequences"
    return out + (f", {estimator_name(estimator)}" if estimator else "")


def comparisons_of_order(n: int) -> int:
    """Comparisons an order check decides at once: every adjacent step, and the mean step."""
    return conventions.adjacent_pairs(n) + 1


def order_check(est, zc: float, what: str | None = None, expected: int = +1) -> Check:
    """Definition 1 from the steps ``est`` (a StepEstimate, or ``(res, layer)``) at ``zc``.
    ``expected`` +1: every step up -> as claimed; a step or the trend down -> against; the trend up
    -> on average. ``expected`` 0: every step up -> against, a step down -> as claimed."""
    if isinstance(est, tuple):
        est = StepEstimate.of_result(*est)
    what = what or f"the rows of $S^{{({est.layer})}}$ rise"
    setting = f"{setting_text(est.config, None)}, {est.estimator}"
    fields = dict(kind="rise", layer=est.layer, **about(est.config))
    word, s = est.decision(zc).word, est.smallest()
    every = (f"{what}: every step", setting, s.mean, s.se, s.z)
    smallest = f"{report.pm(s.mean, s.se)} (smallest step)"
    if expected == 0:  # every step up is against the claim, a step down for it
        status = {"holds": AGAINST, "violated": AS_CLAIMED}.get(word, UNRESOLVED)
        return Check(*every, status, smallest, **fields)
    if word == "holds":
        return Check(*every, AS_CLAIMED, smallest, **fields)
    if word == "violated":
        return Check(what, setting, s.mean, s.se, s.z, AGAINST, report.pm(s.mean, s.se), **fields)
    t, te = est.trend, est.trend_se
    never = undecidable(t, te, zc, est.scale)  # as for each step: a zero error or rounding
    status = UNRESOLVED if never else {1: ON_AVERAGE, 0: UNRESOLVED, -1: AGAINST}[sign(t, te, zc)]
    what = what if status == AGAINST else f"{what}: mean step"
    return Check(what, setting, t, te, report.zscore(t, te), status, report.pm(t, te), **fields)


def flat_check(res: SimResult, layer: int, zc: float, what: str | None = None) -> Check:
    """The rows of 1-based ``layer`` look flat: a row's change between earlier keys in levels of
    the panel's colour scale, below one at ``zc`` SE -> as claimed, above -> against."""
    from recency_lib.plot import colour_limits, heatmap_colours

    what = what or f"the rows of $S^{{({layer})}}$ are flat"
    lo, hi = colour_limits(res.score_mean[layer - 1], include_diagonal=True)  # the paper's panel
    steps = max(res.config.n - 2, 1)
    t, te = float(res.trend_cv_mean[layer - 1]), float(res.trend_cv_sem[layer - 1])
    span = max(hi - lo, abs(t) * steps)  # a row's change lies within the panel's range
    level = span / len(heatmap_colours()) or 1.0  # a panel of one value: one colour
    v, ve = abs(t) * steps / level, te * steps / level
    status = {-1: AS_CLAIMED, 0: UNRESOLVED, 1: AGAINST}[sign(v, ve, zc, 1.0)]
    what, z = f"{what}: colour levels along a row", report.zscore(v, ve, 1.0)
    fields = dict(kind="flat", layer=layer, **about(res))
    return Check(what, setting_text(res), v, ve, z, status, report.pm(v, ve), **fields)


def value_check(value, se, predicted, zc: float, what: str, setting: str, **fields) -> Check:
    """Simulated / predicted: unresolved while the value is not resolved from 0, else vs. 1."""
    r, rse = value / predicted, se / abs(predicted)
    if not sign(value, se, zc):
        z, status = report.zscore(value, se), UNRESOLVED
    else:
        z, status = report.zscore(r, rse, 1.0), AGAINST if sign(r, rse, zc, 1.0) else AS_CLAIMED
    return Check(what, setting, r, rse, z, status, report.pm(r, rse), "value", **fields)


def direction_check(value, se, expected, zc, what, setting, reference=0.0, **fields) -> Check:
    """A sign the paper states (``expected`` +1: above ``reference``, -1: below, 0: neither)."""
    s = sign(value, se, zc, reference)
    if expected == 0:
        status = AGAINST if s else AS_CLAIMED
    else:
        status = AS_CLAIMED if s == expected else AGAINST if s else UNRESOLVED
    z = report.zscore(value, se, reference)
    return Check(what, setting, value, se, z, status, report.pm(value, se), **fields)


def nonzero_check(value, se, zc: float, what: str, setting: str, **fields) -> Check:
    """A difference the paper says is not zero: as claimed if resolved, else unresolved."""
    status = AS_CLAIMED if sign(value, se, zc) else UNRESOLVED
    z, text = report.zscore(value, se), report.pm(value, se)
    return Check(what, setting, value, se, z, status, text, "nonzero", **fields)


# -- tables ----------------------------------------------------------------------------------------

#: What each claim says, in the book's words, and where the paper says it.
STATEMENTS = {
    "Theorem 1": "LayerNorm, isotropic tokens: for large $d$, $S^{(2)}$ has recency bias "
    "(Definition 1) <small>(Sec. 2.2, Theorem 1)</small>",
    "Proposition 1": "without LayerNorm, $S^{(2)}$ has no recency bias "
    "<small>(Sec. 2.2, Proposition 1)</small>",
    "Proposition 2": "with or without the residual, $S^{(2)}$ has recency bias "
    "<small>(Sec. 2.3, Proposition 2)</small>",
    "Proposition 3": r"whatever the anisotropy $\alpha < 1$, $S^{(2)}$ has recency bias "
    "<small>(Sec. 2.4, Proposition 3)</small>",
    "Eq. (5)": "the second layer's score, $S^{(2)}_{ij}$ in closed form "
    "<small>(Sec. 2.2, Eq. (5))</small>",
    "Figure 1": "no order in layer 1; without LayerNorm, rows of layer 2 uniform as drawn, then "
    r"the first keys; with LayerNorm, no visible order at $\alpha = 0$, scores rising with $j$ for "
    r"$\alpha = 0.5$, less with the residual <small>(Sec. 3)</small>",
    "Figure 2": r"$h(j)$ grows slowly at $\alpha = 0$, fast for $\alpha > 0$ "
    "<small>(Sec. 3, Figure 2)</small>",
    "Figure 3": r"the paper's Figure 1 for more $\alpha$, no residual "
    "<small>(App. B, Figure 3)</small>",
    "Figure 4": r"the paper's Figure 1 for more $\alpha$, with the residual "
    "<small>(App. B, Figure 4)</small>",
    "Figure 5": "$h(j)$ with the residual, as Figure 2 <small>(App. B, Figure 5; Sec. 3)</small>",
    "the bias is not relative": "the induced scores do not follow the distance $i - j$ "
    "<small>(Sec. 4)</small>",
    "Theorem 1, corrected": r"this book: the rows of $S^{(2)}$ rise by "
    r"$\sqrt d\, e^{-2\sqrt d}\, q(d)^2$ per step",
}

#: The paper's figures by name, as the landing table links them.
CLAIM_NAMES = {f"Figure {k}": f"the paper's Figure {k}" for k in range(1, 6)}


def table(verdicts: list[Verdict]) -> report.Markdown:
    """The landing table: the claim (linked), what the paper says, the badge, the number."""
    rows = [
        {
            "claim": f"{{{v.target[0]}}}`{CLAIM_NAMES.get(v.claim, v.claim)} <{v.target[1]}>`",
            "the paper says": STATEMENTS.get(v.claim, ""),
            "verdict": report.badge(v.word),
            "decisive number": f"{v.value}<br><small>{v.measure}</small>",
        }
        for v in verdicts
    ]
    return report.table(rows, align="llll", css_class="verdict-table")


#: Layer 2 at α = 0 by (norm, γ): the page, its chapter and claim, and the estimator built for
#: that matrix, which decide it where a grid's layer-1 control variates fall short.
DECIDED_ELSEWHERE = {
    ("layernorm", 0.0): ("layernorm", 3, "Theorem 1", "the first-order control variate"),
    ("none", 0.0): ("layernorm", 3, "Proposition 1", "Gram-matrix control variates"),
    ("layernorm", 1.0): ("residual", 4, "Proposition 2", "the first-order control variate"),
}


def layer2_isotropic(cfg, layer: int) -> bool:
    """Layer 2 at α = 0 in a setting of :data:`DECIDED_ELSEWHERE`."""
    return layer == 2 and cfg.alpha == 0 and (cfg.norm, cfg.gamma) in DECIDED_ELSEWHERE


def marked(rows: list[dict]) -> bool:
    """Whether a table of :func:`verdict_grid_rows` marks a cell as decided elsewhere."""
    return any(str(cell).endswith(ELSEWHERE) for row in rows for cell in row.values())


def elsewhere_note(rows: list[dict], samples: int, decided: str) -> str:
    """The note under a table of :func:`verdict_grid_rows` that marks cells: why they are undecided
    there, then ``decided`` (where and how they are decided); "" when none is marked."""
    if not marked(rows):
        return ""
    why = f"Undecided at {report.count(samples)} sequences with layer-1 control variates"
    return f"{ELSEWHERE} {why}; {decided}"


#: The mark of an undecided cell that another page decides with a stronger estimator.
ELSEWHERE = "\\*"


def verdict_grid_rows(
    results, labels, *, family: int | None = None, estimator="cv", elsewhere=None
) -> list:
    """The table under a grid of heatmaps: per setting and layer the RP ± SE over the matrix's
    Definition-1 badge, one family (default: every matrix); an undecided badge gets a * where
    ``elsewhere(config, layer)`` says another page decides it with a stronger estimator."""
    results = list(results)
    k = family or sum(r.config.layers for r in results)

    def cell(r, l):
        number = report.nowrap(report.pm(*rp(r, l)))
        word = definition1(r, l, k, estimator)
        mark = ELSEWHERE if word == "undecided" and elsewhere and elsewhere(r.config, l) else ""
        return f"{number}<br>{report.badge(word)}{mark}"

    layers = range(1, results[0].config.layers + 1)
    return [
        {"setting": label, **{f"layer {l}": cell(r, l) for l in layers}}
        for label, r in zip(labels, results)
    ]
