"""The book's one verdict rule, the checks a claim is split into, and the landing page's table.

One rule decides every verdict (:data:`RULE`, stated in words in :data:`RULE_TEXT`): a claim is split
into checks (:class:`Check`: an order of the mean scores, a flatness, a value against a closed form, a
sign), each check finds "as claimed", "on average", "unresolved" or "against", and the statuses give the
word, "holds", "holds in part", "not resolved" or "contradicted", and the decisive check, whose number
every page quotes. The claims themselves are :mod:`companion.claims`, one function per claim.

All of a claim's comparisons are decided together at the book's family-wise error level
(:data:`companion.conventions.FAMILYWISE_LEVEL`, Bonferroni: :func:`conventions.z_for`): a verdict is
wrong by chance with probability at most 5 %.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from recency_lib.result import SimResult
from recency_lib.validation import check_int

from . import conventions as cv
from . import report
from .statistics import ESTIMATOR_NAMES, StepEstimate, definition1, rp

# A claim is split into checks; each check finds one of four things at the claim's family-wise z (all of
# a claim's comparisons decided together at the book's 5 % level, conventions.z_for):

AS_CLAIMED = "as claimed"  # resolved the way the paper says, in full (every step; the value within its error)
ON_AVERAGE = (
    "on average"  # resolved the way the paper says on average only (the mean step, not every step)
)
UNRESOLVED = "unresolved"  # resolved neither way
AGAINST = (
    "against"  # resolved against the paper (any size, whatever the paper's order of approximation)
)
STATUSES = (AS_CLAIMED, ON_AVERAGE, UNRESOLVED, AGAINST)

HOLDS = "holds"
HOLDS_IN_PART = "holds in part"
NOT_RESOLVED = "not resolved"
CONTRADICTED = "contradicted"

#: Every verdict word, strongest support first.
WORDS = (HOLDS, HOLDS_IN_PART, NOT_RESOLVED, CONTRADICTED)

#: The one rule, as a table: the first row whose condition the checks' statuses meet gives the word,
#: and the first check with the status named in that row is the decisive one (its number is the one
#: every page quotes).
RULE = (
    (lambda statuses: AGAINST in statuses, CONTRADICTED, (AGAINST,)),
    (lambda statuses: all(s == AS_CLAIMED for s in statuses), HOLDS, (AS_CLAIMED,)),
    (
        lambda statuses: AS_CLAIMED in statuses or ON_AVERAGE in statuses,
        HOLDS_IN_PART,
        (ON_AVERAGE, UNRESOLVED),
    ),
    (lambda statuses: True, NOT_RESOLVED, (UNRESOLVED,)),
)

#: The rule in words (the landing page states it once).
RULE_TEXT = (
    "Each claim is split into checks, and each check is decided by simulation at the book's 5 % "
    "family-wise error. A claim **holds** when every check comes out as the paper says; it **holds in "
    "part** when some do and none goes against it (for example, the rows rise on average but not every "
    "single step is resolved); it is **not resolved** when no check is resolved either way; it is "
    "**contradicted** when any check is resolved against the paper, however small the effect and "
    "whatever the order of the paper's approximation. The number shown is the one of the check that "
    "decides the word, with its setting."
)


def verdict_word(statuses) -> tuple[str, int]:
    """The verdict word of a claim whose checks found ``statuses`` (from :data:`STATUSES`), and the index
    of its decisive check, by :data:`RULE`."""
    statuses = list(statuses)
    bad = [s for s in statuses if s not in STATUSES]
    if not statuses or bad:
        raise ValueError(
            f"statuses={statuses!r} is not allowed; allowed: a non-empty list of {STATUSES}"
        )
    for condition, word, decisive in RULE:
        if condition(statuses):
            k = next((k for k, s in enumerate(statuses) if s in decisive), 0)
            return word, k
    raise AssertionError("the rule's last row applies to any statuses")


@dataclass(frozen=True)
class Check:
    """One check of a claim: ``what`` is measured (markdown), in which ``setting`` (model, d, sequences,
    estimator), the estimate ``value`` ± ``se``, its ``z`` against what would change the status, what it
    found (``status``, one of :data:`STATUSES`) and ``text``, the number as the book prints it.

    What a check is about, for the code that groups or picks checks (nothing reads it from ``what``):
    ``kind``, one of :data:`KINDS`; the ``layer`` it reads (1-based; None for a check of no one layer);
    the model, ``norm``, ``alpha``, ``gamma`` and hidden size ``d`` (None where it has none)."""

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


#: The kinds of check: the rows of a matrix rise (:func:`order_check`) or are flat (:func:`flat_check`); a
#: value against a closed form (:func:`value_check`); no order, recency or primacy in one layer's recency
#: probability, the residual weakening it, h(j) rising faster (:func:`direction_check`); a difference other than 0
#: (:func:`nonzero_check`); two simulations that agree (claims.engines_agree).
KINDS = (
    "rise",
    "flat",
    "value",
    "no order",
    "recency",
    "primacy",
    "residual weakens",
    "h faster",
    "nonzero",
    "agree",
)


def about(res_or_cfg) -> dict:
    """The model fields of a :class:`Check` (``norm``, ``alpha``, ``gamma``, ``d``) of a result or config."""
    cfg = res_or_cfg.config if isinstance(res_or_cfg, SimResult) else res_or_cfg
    return {"norm": cfg.norm, "alpha": float(cfg.alpha), "gamma": float(cfg.gamma), "d": int(cfg.d)}


@dataclass(frozen=True)
class Verdict:
    """The book's verdict on one claim of the paper: the word (:func:`verdict_word` over ``checks``), the
    decisive check, and ``target`` (role, target) of the live check (``link`` is the MyST link);
    ``numbers``: the raw numbers behind it (for a chapter's tables and tests)."""

    claim: str
    word: str
    checks: tuple[Check, ...]
    decisive: Check
    target: tuple[str, str]
    numbers: dict = field(default_factory=dict, compare=False)

    @property
    def value(self) -> str:
        """The decisive number, formatted (the same string on every page that quotes it)."""
        return self.decisive.text

    @property
    def measure(self) -> str:
        """What the decisive number is, and its setting."""
        return f"{self.decisive.what}; {self.decisive.setting}"

    @property
    def link(self) -> str:
        """The MyST link to the live check, with the claim as its text: ``{prf:ref}`Theorem 1 <thm-1>```."""
        return self.link_as(self.claim)

    def link_as(self, text: str) -> str:
        """The MyST link to the live check with ``text`` as its text."""
        role, target = self.target
        return f"{{{role}}}`{text} <{target}>`"


def decide(claim: str, checks, target: tuple[str, str], numbers: dict | None = None) -> Verdict:
    """The verdict on ``claim`` from its ``checks`` (in order of importance: the first check with the
    deciding status is the decisive one)."""
    checks = tuple(checks)
    word, k = verdict_word([c.status for c in checks])
    return Verdict(claim, word, checks, checks[k], target, numbers or {})


# -- checks of one kind each --------------------------------------------------------------------------------


def setting_text(res_or_cfg, estimator: str | None = "cv") -> str:
    """ "LayerNorm, α = 0, d = 64, 4,000,000 sequences, control variates": a setting as every page names it."""
    cfg = res_or_cfg.config if isinstance(res_or_cfg, SimResult) else res_or_cfg
    out = f"{cv.setting_label(cfg)}, $d = {cfg.d}$, {report.count(cfg.samples)} sequences"
    return out + (f", {ESTIMATOR_NAMES[estimator]}" if estimator else "")


def comparisons_of_order(n: int) -> int:
    """Comparisons an order check decides at once: every adjacent step of a row, and the mean step."""
    return cv.adjacent_pairs(n) + 1


def order_check(est, zc: float, what: str | None = None, expected: int = +1) -> Check:
    """Definition 1 on a mean score matrix, from its steps ``est`` (a statistics.StepEstimate, or a SimResult
    and a 1-based layer as ``(res, layer)``), every step at the claim's family-wise ``zc`` by recency_lib's
    one rule. ``expected`` +1, the paper says the rows rise: every step resolved positive -> as claimed (the
    smallest step is the number); else the trend resolved positive -> on average; a step or the trend
    resolved negative -> against; else unresolved (the trend is the number). ``expected`` 0, the paper says
    there is no recency bias: every step resolved positive -> against (the smallest step is the number);
    a step resolved negative -> as claimed; else unresolved."""
    if isinstance(est, tuple):
        est = StepEstimate.of_result(*est)
    layer = est.layer
    what = what or f"the rows of $S^{{({layer})}}$ rise"
    setting = setting_text(est.config, None) + f", {est.estimator}"
    word = est.decision(zc).word
    s = est.smallest()
    t, te = est.trend, est.trend_se
    tz = report.zscore(t, te)
    fields = dict(kind="rise", layer=layer, **about(est.config))
    every = Check(
        f"{what}: every step",
        setting,
        s.mean,
        s.se,
        s.z,
        AS_CLAIMED,
        f"{report.pm(s.mean, s.se)} (smallest step)",
        **fields,
    )
    if expected == 0:
        status = AGAINST if word == "holds" else AS_CLAIMED if word == "violated" else UNRESOLVED
        return Check(every.what, setting, s.mean, s.se, s.z, status, every.text, **fields)
    if word == "holds":
        return every
    if word == "violated" or tz < -zc:
        v, e, z = (s.mean, s.se, s.z) if word == "violated" else (t, te, tz)
        return Check(f"{what}", setting, v, e, z, AGAINST, report.pm(v, e), **fields)
    status = ON_AVERAGE if tz > zc else UNRESOLVED
    return Check(f"{what}: mean step", setting, t, te, tz, status, report.pm(t, te), **fields)


def flat_check(res: SimResult, layer: int, zc: float, what: str | None = None) -> Check:
    """The rows of the mean score matrix of 1-based ``layer`` look flat off the diagonal in the paper's
    figure, a claim about what the figure shows: each panel on its own colour scale, the diagonal
    included, in the 256 levels of the colour map (recency_lib.plot.heatmap_colours). The number is the
    change along the longest row between earlier keys, (n - 2) mean steps (control variates), in levels
    of that panel; below one level the figure draws the row in one colour. Below 1 at ``zc`` SE -> as
    claimed; above 1 at ``zc`` SE -> against (visible); between -> unresolved. More sequences sharpen the
    check and never turn an effect too small to be drawn into a visible one."""
    from recency_lib.plot import colour_limits, heatmap_colours

    what = what or f"the rows of $S^{{({layer})}}$ are flat"
    lo, hi = colour_limits(res.score_mean[layer - 1], include_diagonal=True)  # the paper's panel
    steps = max(res.config.n - 2, 1)
    t, te = float(res.trend_cv_mean[layer - 1]), float(res.trend_cv_sem[layer - 1])
    span = max(hi - lo, abs(t) * steps)  # a row's change lies within the panel's range
    level = span / len(heatmap_colours()) or 1.0  # a panel of one value: one colour
    v, ve = abs(t) * steps / level, te * steps / level
    z = report.zscore(v, ve, 1.0)
    status = AS_CLAIMED if z < -zc else AGAINST if z > zc else UNRESOLVED
    return Check(
        f"{what}: colour levels along a row",
        setting_text(res),
        v,
        ve,
        z,
        status,
        report.pm(v, ve),
        kind="flat",
        layer=layer,
        **about(res),
    )


def value_check(
    value: float, se: float, predicted: float, zc: float, what: str, setting: str, **fields
) -> Check:
    """A closed form's value against simulation, as the ratio simulated / predicted: unresolved when the
    simulated value is not resolved from 0 (no ratio to speak of), as claimed when the ratio is 1 within
    its error, against when it is resolved away from 1 (the ratio is the number). ``fields``: the
    :class:`Check`'s ``layer``, ``norm``, ``alpha``, ... (its kind is "value")."""
    r, rse = value / predicted, se / abs(predicted)
    if abs(report.zscore(value, se)) <= zc:
        return Check(
            what,
            setting,
            r,
            rse,
            report.zscore(value, se),
            UNRESOLVED,
            report.pm(r, rse),
            "value",
            **fields,
        )
    z = report.zscore(r, rse, 1.0)
    return Check(
        what,
        setting,
        r,
        rse,
        z,
        AS_CLAIMED if abs(z) <= zc else AGAINST,
        report.pm(r, rse),
        "value",
        **fields,
    )


def direction_check(
    value: float,
    se: float,
    expected: int,
    zc: float,
    what: str,
    setting: str,
    reference: float = 0.0,
    text: str | None = None,
    **fields,
) -> Check:
    """A sign the paper states (``expected`` +1: above ``reference``, -1: below, 0: no order): the
    deviation from ``reference`` in standard errors decides; ``expected`` 0 is as claimed while nothing is
    resolved. ``fields``: the :class:`Check`'s ``kind``, ``layer``, ``norm``, ``alpha``, ..."""
    z = report.zscore(value, se, reference)
    text = text or report.pm(value, se)
    if expected == 0:
        return Check(
            what, setting, value, se, z, AS_CLAIMED if abs(z) <= zc else AGAINST, text, **fields
        )
    if z * expected > zc:
        status = AS_CLAIMED
    elif z * expected < -zc:
        status = AGAINST
    else:
        status = UNRESOLVED
    return Check(what, setting, value, se, z, status, text, **fields)


def nonzero_check(value: float, se: float, zc: float, what: str, setting: str, **fields) -> Check:
    """A difference the paper says is not zero: resolved from 0 (either sign) -> as claimed; else
    unresolved (no simulation can show that it is exactly 0). ``fields``: the :class:`Check`'s ``layer``,
    ``norm``, ``alpha``, ... (its kind is "nonzero")."""
    z = report.zscore(value, se)
    return Check(
        what,
        setting,
        value,
        se,
        z,
        AS_CLAIMED if abs(z) > zc else UNRESOLVED,
        report.pm(value, se),
        "nonzero",
        **fields,
    )


# -- tables ----------------------------------------------------------------------------------------

#: What each claim says, in the book's words, and where the paper says it (the landing table's second column).
STATEMENTS = {
    "Theorem 1": "LayerNorm, isotropic tokens: for large $d$, $S^{(2)}$ has recency bias (Definition 1) "
    "<small>(Sec. 2.2, Theorem 1)</small>",
    "Proposition 1": "without LayerNorm, $S^{(2)}$ has no recency bias <small>(Sec. 2.2, Proposition 1)</small>",
    "Proposition 2": "with or without the residual, $S^{(2)}$ has recency bias <small>(Sec. 2.3, Proposition 2)</small>",
    "Proposition 3": r"whatever the anisotropy $\alpha < 1$, $S^{(2)}$ has recency bias <small>(Sec. 2.4, Proposition 3)</small>",
    "Eq. (5)": "the second layer's score, $S^{(2)}_{ij}$ in closed form <small>(Sec. 2.2, Eq. (5))</small>",
    "Figure 1": "no order in layer 1; without LayerNorm, rows of layer 2 uniform as drawn, then the first keys; with "
    r"LayerNorm, no visible order at $\alpha = 0$, scores rising with $j$ for $\alpha = 0.5$, less with the "
    "residual <small>(Sec. 3)</small>",
    "Figure 2": r"$h(j)$ grows slowly at $\alpha = 0$, fast for $\alpha > 0$ <small>(Sec. 3, Figure 2)</small>",
    "Figure 3": r"the paper's Figure 1 for more $\alpha$, no residual <small>(App. B, Figure 3)</small>",
    "Figure 4": r"the paper's Figure 1 for more $\alpha$, with the residual <small>(App. B, Figure 4)</small>",
    "Figure 5": "$h(j)$ with the residual, as Figure 2 <small>(App. B, Figure 5; Sec. 3)</small>",
    "the bias is not relative": "the induced scores do not follow the distance $i - j$ <small>(Sec. 4)</small>",
    "Theorem 1, corrected": r"this book: the rows of $S^{(2)}$ rise by $\sqrt d\, e^{-2\sqrt d}\, q(d)^2$ per step",
}

#: The paper's figures and the book's pages where they are checked.
CLAIM_NAMES = {
    "Figure 1": "the paper's Figure 1",
    "Figure 2": "the paper's Figure 2",
    "Figure 3": "the paper's Figure 3",
    "Figure 4": "the paper's Figure 4",
    "Figure 5": "the paper's Figure 5",
}


def table(verdicts: list[Verdict]) -> report.Markdown:
    """The landing page's table: the claim (a link to its live check), what the paper says, the book's
    verdict (a badge), and the decisive number with what it measures and its setting."""
    rows = [
        {
            "claim": v.link_as(CLAIM_NAMES.get(v.claim, v.claim)),
            "the paper says": STATEMENTS.get(v.claim, ""),
            "verdict": report.badge(v.word),
            "decisive number": f"{v.value}<br><small>{v.measure}</small>",
        }
        for v in verdicts
    ]
    return report.table(rows, align="llll", css_class="verdict-table")


def verdict_grid_rows(
    results, labels, *, family: int | None = None, estimator: str = "cv"
) -> list[dict]:
    """The table under a grid of heatmaps (Figures 1, 3, 4): one row per setting (``labels``), one
    column per layer, each cell the recency probability ± SE (on one line) over the Definition-1
    verdict of that matrix (a badge). The verdicts of all matrices are tested as one family (``family`` matrices;
    default: every matrix of the table)."""
    results, labels = list(results), list(labels)
    if not results or len(labels) != len(results):
        raise ValueError(
            f"labels has length {len(labels)}; allowed: one label per result ({len(results)}, at least 1)"
        )
    layers = results[0].config.layers
    k = family if family is not None else sum(r.config.layers for r in results)
    k = check_int("family", k, 1)
    return [
        {
            "setting": label,
            **{
                f"layer {l}": f"{report.nowrap(report.pm(*rp(r, l)))}<br>{report.badge(definition1(r, l, k, estimator))}"
                for l in range(1, layers + 1)
            },
        }
        for label, r in zip(labels, results)
    ]
