"""The paper's claims and the book's verdict on each, decided from simulation results.

One rule decides every verdict (:data:`RULE`, stated in words in :data:`RULE_TEXT`): a claim is split
into checks (:class:`Check`: an order of the mean scores, a flatness, a value against a closed form, a
sign), each check finds "as claimed", "on average", "unresolved" or "against", and the statuses give the
word, "holds", "holds in part", "not resolved" or "contradicted", and the decisive check, whose number
every page quotes. One function per claim builds its checks from simulation results and returns a
:class:`Verdict`. The chapters call these functions for their own verdicts; the landing page calls
:func:`verdict_table`, which runs the chapters' settings through the results cache, so its numbers are
the chapters' numbers.

All of a claim's comparisons are decided together at the book's family-wise error level
(:data:`companion.conventions.FAMILYWISE_LEVEL`, Bonferroni: :func:`conventions.z_for`): a verdict is
wrong by chance with probability at most 5 %.

The settings (:func:`fig1_configs`, :func:`theorem1_configs`, :func:`alpha_configs`) are defined
here once; a chapter that uses the same settings gets the same cached results.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import conventions as cv
from .statistics import FAR, NEAR, distance_contrasts, first_order_trend  # noqa: F401  (the chapters' statistics)
from . import report
from recency_lib import theory
from recency_lib.config import SimConfig
from recency_lib.metrics import adjacent_index, rp_direction
from recency_lib.norms import NORMS
from recency_lib.result import SimResult
from recency_lib.validation import check_int, check_real

# -- the verdict rule ----------------------------------------------------------------------------------
#
# A claim is split into checks; each check finds one of four things at the claim's family-wise z (all of
# a claim's comparisons decided together at the book's 5 % level, conventions.z_for):

AS_CLAIMED = "as claimed"      # resolved the way the paper says, in full (every step; the value within its error)
ON_AVERAGE = "on average"      # resolved the way the paper says on average only (the mean step, not every step)
UNRESOLVED = "unresolved"      # resolved neither way
AGAINST = "against"            # resolved against the paper (any size, whatever the paper's order of approximation)
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
    (lambda statuses: AS_CLAIMED in statuses or ON_AVERAGE in statuses, HOLDS_IN_PART, (ON_AVERAGE, UNRESOLVED)),
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
    "decides the word, with its setting.")


def verdict_word(statuses) -> tuple[str, int]:
    """The verdict word of a claim whose checks found ``statuses`` (from :data:`STATUSES`), and the index
    of its decisive check, by :data:`RULE`."""
    statuses = list(statuses)
    bad = [s for s in statuses if s not in STATUSES]
    if not statuses or bad:
        raise ValueError(f"statuses={statuses!r} is not allowed; allowed: a non-empty list of {STATUSES}")
    for condition, word, decisive in RULE:
        if condition(statuses):
            k = next((k for k, s in enumerate(statuses) if s in decisive), 0)
            return word, k
    raise AssertionError("the rule's last row applies to any statuses")


@dataclass(frozen=True)
class Check:
    """One check of a claim: ``what`` is measured (markdown), in which ``setting`` (model, d, sequences,
    estimator), the estimate ``value`` ± ``se``, its ``z`` against what would change the status, what it
    found (``status``, one of :data:`STATUSES`) and ``text``, the number as the book prints it."""

    what: str
    setting: str
    value: float
    se: float
    z: float
    status: str
    text: str


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
    def how(self) -> str:
        """One sentence: what the checks found (the decisive one first)."""
        rest = [c for c in self.checks if c is not self.decisive]
        found = [f"{self.decisive.what} {self.decisive.status}" + (f" ({self.decisive.text})" if self.decisive.text else "")]
        found += [f"{c.what} {c.status}" for c in rest]
        return "; ".join(found)

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


# -- checks of one kind each ---------------------------------------------------------------------------

def estimator_text(res: SimResult, estimator: str = "cv") -> str:
    return ESTIMATOR_NAMES[estimator] if estimator == "plain" or res.config.layers > 1 else ESTIMATOR_NAMES["plain"]


def setting_text(res_or_cfg, estimator: str | None = "cv") -> str:
    """"LayerNorm, α = 0, d = 64, 4,000,000 sequences, control variates": a setting as every page names it."""
    cfg = res_or_cfg.config if isinstance(res_or_cfg, SimResult) else res_or_cfg
    out = f"{cv.setting_label(cfg)}, $d = {cfg.d}$, {report.count(cfg.samples)} sequences"
    return out + (f", {ESTIMATOR_NAMES[estimator]}" if estimator else "")


def comparisons_of_order(n: int) -> int:
    """Comparisons an order check decides at once: every adjacent step of a row, and the mean step."""
    return cv.adjacent_pairs(n) + 1


def order_check(res: SimResult, layer: int, zc: float, what: str | None = None) -> Check:
    """The rows of the mean score matrix of 1-based ``layer`` rise toward the query (Definition 1 on
    E S): every adjacent step resolved positive (control variates) -> as claimed (the smallest step is the
    number); else the mean step between earlier keys resolved positive -> on average; a step or the mean
    resolved negative -> against; else unresolved (the mean step is the number)."""
    what = what or f"the rows of $S^{{({layer})}}$ rise"
    setting = setting_text(res)
    tol = res.definition1_at(zc)[layer - 1]
    ii, jj = adjacent_index(res.config.n)
    steps, ses = res.diff_cv_mean[layer - 1][ii, jj], res.diff_cv_sem[layer - 1][ii, jj]
    zs = np.array([report.zscore(a, b) for a, b in zip(steps, ses)])
    t, te = float(res.trend_cv_mean[layer - 1]), float(res.trend_cv_sem[layer - 1])
    tz = report.zscore(t, te)
    if tol == "holds":
        k = int(np.argmin(zs))
        return Check(f"{what}: every step", setting, float(steps[k]), float(ses[k]), float(zs[k]), AS_CLAIMED,
                     f"{report.pm(steps[k], ses[k])} (smallest step)")
    if tol == "violated" or tz < -zc:
        k = int(np.argmin(zs))
        v, e, z = (float(steps[k]), float(ses[k]), float(zs[k])) if tol == "violated" else (t, te, tz)
        return Check(f"{what}", setting, v, e, z, AGAINST, report.pm(v, e))
    status = ON_AVERAGE if tz > zc else UNRESOLVED
    return Check(f"{what}: mean step", setting, t, te, tz, status, report.pm(t, te))


def flat_check(res: SimResult, layer: int, zc: float, what: str | None = None) -> Check:
    """The rows of the mean score matrix of 1-based ``layer`` are flat off the diagonal: the mean step
    between earlier keys (control variates) within its error of 0 -> as claimed; resolved -> against."""
    what = what or f"the rows of $S^{{({layer})}}$ are flat"
    t, te = float(res.trend_cv_mean[layer - 1]), float(res.trend_cv_sem[layer - 1])
    tz = report.zscore(t, te)
    return Check(f"{what}: mean step", setting_text(res), t, te, tz, AGAINST if abs(tz) > zc else AS_CLAIMED,
                 report.pm(t, te))


def value_check(value: float, se: float, predicted: float, zc: float, what: str, setting: str) -> Check:
    """A closed form's value against simulation, as the ratio simulated / predicted: unresolved when the
    simulated value is not resolved from 0 (no ratio to speak of), as claimed when the ratio is 1 within
    its error, against when it is resolved away from 1 (the ratio is the number)."""
    r, rse = value / predicted, se / abs(predicted)
    if abs(report.zscore(value, se)) <= zc:
        return Check(what, setting, r, rse, report.zscore(value, se), UNRESOLVED, report.pm(r, rse))
    z = report.zscore(r, rse, 1.0)
    return Check(what, setting, r, rse, z, AS_CLAIMED if abs(z) <= zc else AGAINST, report.pm(r, rse))


def direction_check(value: float, se: float, expected: int, zc: float, what: str, setting: str,
                    reference: float = 0.0, text: str | None = None) -> Check:
    """A sign the paper states (``expected`` +1: above ``reference``, -1: below, 0: no order): the
    deviation from ``reference`` in standard errors decides; ``expected`` 0 is as claimed while nothing is
    resolved."""
    z = report.zscore(value, se, reference)
    text = text or report.pm(value, se)
    if expected == 0:
        return Check(what, setting, value, se, z, AS_CLAIMED if abs(z) <= zc else AGAINST, text)
    if z * expected > zc:
        status = AS_CLAIMED
    elif z * expected < -zc:
        status = AGAINST
    else:
        status = UNRESOLVED
    return Check(what, setting, value, se, z, status, text)


def nonzero_check(value: float, se: float, zc: float, what: str, setting: str) -> Check:
    """A difference the paper says is not zero: resolved from 0 (either sign) -> as claimed; else
    unresolved (no simulation can show that it is exactly 0)."""
    z = report.zscore(value, se)
    return Check(what, setting, value, se, z, AS_CLAIMED if abs(z) > zc else UNRESOLVED, report.pm(value, se))


# -- the settings ------------------------------------------------------------------------------------

#: The four rows of the paper's Figure 1: (alpha, gamma, norm).
FIG1_ROWS = ((0.0, 0.0, "none"), (0.0, 0.0, "layernorm"), (0.5, 0.0, "layernorm"), (0.5, 1.0, "layernorm"))
#: Hidden sizes of the Theorem-1 check: where the control-variate trend settles the sign (d <= 64)
#: and where it stops deciding (128, 256).
THEOREM1_DS = (4, 8, 16, 32, 64, 128, 256)
#: The paper's hidden size gets this many times the samples: its trend, about 2e-6, has a
#: control-variate SE of about 4.6e-4 / sqrt(sequences), so 40 x 100,000 sequences put it about 8
#: SE from 0 (z >= 5 with probability > 99 %).
LARGE_FACTOR = 40
#: Theorem 1's d = 16 gets this many times the samples: with 10^6 sequences every adjacent step of S^(2)
#: is resolved there (the smallest at z ~ 9), so Definition 1 itself is decided at one d.
D16_FACTOR = 10
#: The hidden sizes of Theorem 1's verdict (the paper's first) and of Eq. (5)'s.
THEOREM1_VERDICT_DS = (64, 16)
EQ5_DS = (64, 16, 32)
#: The stated accuracy of the book's corrected Theorem 1 (theory.theorem1_trend) for d >= 16, n <= 10.
THEOREM1_FORM_ACCURACY = 0.005
#: Sequences of raw tokens per point of Eq. (6)'s cosine check (chapter 5, the landing page, Appendix A).
COSINE_SAMPLES = 4_000
#: Hidden sizes of Proposition 1 beyond the LLN (its row rises at relative order d^{-3/2}), and
#: their sample factor (the rise at d = 64 is about 4 SE at 200,000 sequences).
PROP1_DS = (16, 64, 256)
PROP1_FACTOR = 10
#: Anisotropy levels of the Proposition-3 check (the book's grid without alpha = 1, where every
#: score ties and no order can exist).
PROP3_ALPHAS = tuple(a for a in cv.ALPHAS if a < 1.0)
#: Anisotropy levels of the paper's Figures 3 (no residual) and 4-5 (with residual).
FIG3_ALPHAS = tuple(a for a in cv.H_ALPHAS if a > 0)
FIG4_ALPHAS = cv.H_ALPHAS


def fig1_configs(samples: int = cv.PAPER_SAMPLES, seed: int = 0, *, n: int = cv.PAPER_N, d: int = cv.PAPER_D,
                 layers: int = cv.PAPER_LAYERS) -> list[SimConfig]:
    """The four settings of Figure 1 (rows), in the paper's order."""
    return [SimConfig(alpha=a, gamma=g, norm=nm, n=n, d=d, layers=layers, samples=samples, seed=seed)
            for a, g, nm in FIG1_ROWS]


def isotropic_configs(large_samples: int = LARGE_FACTOR * cv.PAPER_SAMPLES, seed: int = 0, *,
                      n: int = cv.PAPER_N, d: int = cv.PAPER_D) -> dict[float, SimConfig]:
    """Isotropic tokens at the paper's hidden size, two layers, LayerNorm, without (gamma = 0:
    Theorem 1, Proposition 3 at alpha = 0) and with the residual (gamma = 1: Proposition 2 at
    alpha = 0), ``large_samples`` each; keyed by gamma. The two share their random stream, so the
    engines draw each block once for both."""
    large_samples = check_int("large_samples", large_samples, 2)
    return {g: SimConfig(alpha=0.0, gamma=g, norm="layernorm", n=n, d=d, layers=2, seed=seed, samples=large_samples)
            for g in (0.0, 1.0)}


def theorem1_configs(samples: int = cv.PAPER_SAMPLES, seed: int = 0, *, ds=THEOREM1_DS, n: int = cv.PAPER_N,
                     large_d: int = cv.PAPER_D, large_samples: int | None = None) -> dict[int, SimConfig]:
    """Theorem 1's setting (LayerNorm, alpha = 0, no residual, two layers) for each hidden size in
    ``ds``, ``samples`` each (d = 16: :data:`D16_FACTOR` times as many); ``large_d`` (the paper's 64)
    gets ``large_samples`` (default :data:`LARGE_FACTOR` x ``samples``) and is :func:`isotropic_configs`'
    gamma = 0 setting."""
    samples = check_int("samples", samples, 2)
    large = LARGE_FACTOR * samples if large_samples is None else check_int("large_samples", large_samples, 2)
    out = {}
    for d in sorted({check_int("d", x, 2) for x in ds}):
        count = D16_FACTOR * samples if d == 16 else samples
        out[d] = (isotropic_configs(large, seed, n=n, d=d)[0.0] if d == large_d else
                  SimConfig(alpha=0.0, gamma=0.0, norm="layernorm", n=n, d=d, layers=2, seed=seed, samples=count))
    return out


def prop1_configs(samples: int = cv.PAPER_SAMPLES, seed: int = 0, *, ds=PROP1_DS, n: int = cv.PAPER_N,
                  prop1_samples: int | None = None) -> dict[int, SimConfig]:
    """Proposition 1 beyond the LLN: no normalization, isotropic tokens, two layers, for each hidden
    size in ``ds``, ``prop1_samples`` each (default :data:`PROP1_FACTOR` x ``samples``)."""
    samples = check_int("samples", samples, 2)
    count = PROP1_FACTOR * samples if prop1_samples is None else check_int("prop1_samples", prop1_samples, 2)
    return {d: SimConfig(alpha=0.0, gamma=0.0, norm="none", n=n, d=d, layers=2, seed=seed, samples=count)
            for d in sorted({check_int("d", x, 2) for x in ds})}


def alpha_configs(alphas, gamma: float, samples: int = cv.PAPER_SAMPLES, seed: int = 0, *, n: int = cv.PAPER_N,
                  d: int = cv.PAPER_D, layers: int = cv.PAPER_LAYERS, norm: str = "layernorm") -> dict[float, SimConfig]:
    """One setting per anisotropy level (Proposition 3, Figures 2-5), in the paper's setting."""
    return {float(a): SimConfig(alpha=a, gamma=gamma, norm=norm, n=n, d=d, layers=layers, samples=samples,
                                seed=seed) for a in alphas}


# -- shared measurements ------------------------------------------------------------------------------

def rp(res: SimResult, layer: int) -> tuple[float, float]:
    """(recency probability, SE) of 1-based ``layer``."""
    return float(res.recency_probability[layer - 1]), float(res.recency_probability_sem[layer - 1])


def rp_z(res: SimResult, layer: int) -> float:
    """(RP - 0.5) / SE of 1-based ``layer``: positive = recency, negative = primacy."""
    return report.zscore(*rp(res, layer), 0.5)


def direction(res: SimResult, layer: int, family: int = 1) -> str:
    """The order the recency probability of 1-based ``layer`` resolves: "recency", "primacy" or
    "no order resolved", at the z of ``family`` comparisons."""
    word = rp_direction(*rp(res, layer), z=cv.z_for(family))
    return "no order resolved" if word == "none" else word


def definition1(res: SimResult, layer: int, family: int = 1) -> str:
    """Definition 1 on the mean scores of 1-based ``layer`` ("holds" / "violated" / "undecided"),
    every adjacent difference tested at the z of ``family`` matrices' worth of comparisons."""
    k = max(1, family * cv.adjacent_pairs(res.config.n))
    return res.definition1_at(cv.z_for(k))[layer - 1]


def definition1_with(res: SimResult, layer: int, family: int = 1, estimator: str = "cv") -> str:
    """:func:`definition1` with the adjacent differences estimated by ``estimator`` ("cv": control
    variates, as :func:`definition1`; "plain": sample means; :data:`ESTIMATOR_NAMES`)."""
    k = max(1, family * cv.adjacent_pairs(res.config.n))
    return res.definition1_at(cv.z_for(k), estimator)[layer - 1]


def smallest_step(res: SimResult, layer: int) -> tuple[float, float, float]:
    """The adjacent difference S_ij - S_i,j-1 of 1-based ``layer`` that is least resolved (smallest
    z): (mean, SE, z). NaN when n < 2."""
    n = res.config.n
    if n < 2:
        return math.nan, math.nan, math.nan
    ii, jj = adjacent_index(n)
    m, e = res.diff_mean[layer - 1][ii, jj], res.diff_sem[layer - 1][ii, jj]
    z = np.array([report.zscore(a, b) for a, b in zip(m, e)])
    k = int(np.argmin(z))
    return float(m[k]), float(e[k]), float(z[k])


def step_z(res: SimResult, layer: int, earlier_only: bool = True) -> np.ndarray:
    """z-scores of the adjacent differences S_ij - S_i,j-1 of 1-based ``layer`` (1 < j <= i), only
    those between two earlier keys (j < i) when ``earlier_only``: the steps that carry the order
    (the diagonal steps are large by construction)."""
    ii, jj = adjacent_index(res.config.n)
    keep = jj < ii if earlier_only else np.ones(ii.size, dtype=bool)
    m, e = res.diff_mean[layer - 1][ii, jj][keep], res.diff_sem[layer - 1][ii, jj][keep]
    return np.array([report.zscore(a, b) for a, b in zip(m, e)])


def pairing_gain(res: SimResult, layer: int) -> float:
    """How much pairing helps Definition 1: the median, over the steps between earlier keys, of the
    SE that the two scores' own SEs would give if independent, divided by the SE of the paired
    per-sequence difference (``diff_sem``). NaN without such a step (n < 3)."""
    ii, jj = adjacent_index(res.config.n)
    off = jj < ii
    if not np.any(off):
        return math.nan
    s = res.score_sem[layer - 1]
    unpaired = np.hypot(s[ii, jj], s[ii, jj - 1])[off]
    paired = res.diff_sem[layer - 1][ii, jj][off]
    ok = paired > 0
    return float(np.median(unpaired[ok] / paired[ok])) if np.any(ok) else math.nan


def s2_order(res: SimResult) -> tuple[str, float, float]:
    """The book's evidence of order among the earlier keys of S^(2): (what, value, SE), where a
    positive value means recency and 0 means no order.

    Today: the recency probability of S^(2) minus 1/2 (its SE is exact: a mean over sequences).
    The control-variate estimator of issue 11 (``res.trend_cv_mean`` / ``res.trend_cv_sem``, the
    mean off-diagonal step of S^(2) with its variance reduced by the layer-1 steps) is used as soon
    as a result carries it.
    """
    mean, sem = getattr(res, "trend_cv_mean", None), getattr(res, "trend_cv_sem", None)
    if mean is not None and sem is not None:
        mean, sem = np.atleast_1d(np.asarray(mean, dtype=float)), np.atleast_1d(np.asarray(sem, dtype=float))
        k = 1 if mean.size == res.config.layers > 1 else 0          # per layer: S^(2); else the one value
        return "mean off-diagonal step of $S^{(2)}$", float(mean[k]), float(sem[k])
    value, se = rp(res, 2)
    return "RP of $S^{(2)}$ − 0.5", value - 0.5, se


def h_rise(res: SimResult) -> tuple[float, float]:
    """The simulated rise of the key factor over the keys, h(n)/h(1) - 1 with h(j) = 1/||x_j^(1)||
    (Eq. (40)), from the mean squared norms of layer 1's output, and its delta-method SE (the two
    norms' errors combined as if independent)."""
    m, s = res.sq_norm_mean[1], res.sq_norm_sem[1]
    ratio = math.sqrt(m[0] / m[-1])
    se = ratio * 0.5 * math.hypot(s[0] / m[0], s[-1] / m[-1])
    return ratio - 1.0, se


def _rise(h: np.ndarray) -> float:
    h = np.asarray(h, dtype=float)
    return float(h[-1] / h[0] - 1.0)


# -- how far an estimator reaches (issue 11) ------------------------------------------------------------

#: The z at which the sign of a tiny effect counts as settled (issue 11: Theorem 1's trend at z >= 5).
SETTLE_Z = 5.0


def order_word(value: float, se: float, z: float = SETTLE_Z) -> str:
    """The order a step-like estimate resolves at ``z`` standard errors: "recency" (above 0),
    "primacy" (below) or "no order resolved"."""
    zz = report.zscore(value, se)
    return "recency" if zz > z else ("primacy" if zz < -z else "no order resolved")


def sequences_needed(se: float, samples: int, effect: float, z: float = SETTLE_Z) -> float:
    """Sequences at which an estimator puts a true value ``effect`` ``z`` standard errors from 0 (its
    expected z), given its standard error ``se`` at ``samples`` sequences: a mean's SE falls as
    1 / sqrt(sequences), so the answer is samples (z se / effect)^2. ``inf`` when ``effect`` is 0."""
    se = check_real("se", se, lo=0.0, allowed="a standard error >= 0")
    effect = check_real("effect", effect, allowed="a finite real number")
    samples = check_int("samples", samples, 1)
    z = check_real("z", z, lo=0.0, lo_open=True, allowed="a number > 0")
    if effect == 0:
        return math.inf
    return samples * (z * se / effect) ** 2


def cpu_seconds_per_sequence(res: SimResult) -> float:
    """Compute time of one sequence of ``res`` (its blocks' CPU seconds / samples; NaN when unknown,
    e.g. a result read from an old file)."""
    t = float(res.elapsed_seconds)
    return t / res.config.samples if math.isfinite(t) and t > 0 else math.nan


def _off_steps(n: int):
    """1-based (i, j) of the steps S_ij - S_i,j-1 between two earlier keys, 2 <= j < i <= n."""
    ii, jj = adjacent_index(n)
    off = jj < ii
    return ii[off] + 1, jj[off] + 1


def predicted_trend(n: int, d, alpha: float = 0.0, gamma: float = 0.0):
    """The trend of S^(2) in the LLN limit: the mean of the steps S^(2)_ij - S^(2)_i,j-1 between earlier
    keys (2 <= j < i <= n), the quantity of ``SimResult.trend_mean``, from the corrected Eqs. (32),
    (40) (theory.score2_step_corrected, without cancellation; at alpha = gamma = 0 this is Eq. (5)).
    ``d``: a hidden size (a float back) or an array of them (an array back)."""
    i, j = _off_steps(check_int("n", n, 3))
    dd = np.asarray(d, dtype=float)
    steps = theory.score2_step_corrected(i, j, alpha, gamma, dd[..., None])      # (..., steps)
    out = np.mean(steps, axis=-1)
    return float(out) if dd.ndim == 0 else out


def trend_over_line(res: SimResult, line: float, z: float) -> str:
    """The mean step of S^(2) of ``res`` (:func:`s2_order`) over a predicted value ``line`` (e.g.
    :func:`predicted_trend`), "m ± s", or :data:`UNRESOLVED` where the step itself is within ``z``
    standard errors of 0: the one rule of every "simulated / large-d" ratio the book prints."""
    _, m, s = s2_order(res)
    return report.pm(m / line, s / abs(line)) if abs(report.zscore(m, s)) > z else UNRESOLVED

def eq5_trend(n: int, d):
    """Theorem 1's trend as Eq. (5) predicts it (:func:`predicted_trend` at alpha = gamma = 0)."""
    return predicted_trend(n, d)


@dataclass(frozen=True)
class Reach:
    """What one hidden size of Theorem 1's check shows and costs (:func:`theorem1_reach`).

    ``trend``/``trend_se``: the control-variate trend of S^(2) (mean step between earlier keys);
    ``plain``/``plain_se``: the same by plain averaging; ``z``, ``plain_z``: their z-scores;
    ``eq5``: Eq. (5)'s trend; ``vr_trend``, ``vr_rp``: variance-reduction factors (plain SE / CV SE)
    of the trend and of the recency probability; ``resolved``: the CV trend is beyond the family's
    z; ``effect``: the trend assumed in ``need_cv`` / ``need_plain`` (the measured one where
    resolved, else Eq. (5)'s; ``effect_from`` says which); ``need_*``: sequences for an expected
    z of ``z_target``; ``cpu_per_sequence``: compute seconds of one sequence."""

    d: int
    samples: int
    trend: float
    trend_se: float
    z: float
    plain: float
    plain_se: float
    plain_z: float
    eq5: float
    vr_trend: float
    vr_rp: float
    resolved: bool
    effect: float
    effect_from: str
    need_cv: float
    need_plain: float
    z_target: float
    cpu_per_sequence: float

    @property
    def ratio(self) -> tuple[float, float]:
        """Simulated / Eq. (5) trend, with its SE."""
        return self.trend / self.eq5, self.trend_se / abs(self.eq5)


def theorem1_reach(results: dict[int, SimResult], z: float = SETTLE_Z) -> list[Reach]:
    """Theorem 1's trend at each hidden size (:func:`theorem1_configs`), with control variates and
    without, and the sequences each estimator needs for an expected z of ``z`` (issue 11, item 2).
    The trends of all hidden sizes are tested together (z of len(results) comparisons)."""
    if not results:
        raise ValueError("results={} is empty; allowed: a dict d -> SimResult of Theorem 1's setting")
    zc = cv.z_for(len(results))
    out = []
    for d in sorted(results):
        res = results[d]
        m, e = float(res.trend_cv_mean[1]), float(res.trend_cv_sem[1])
        pm_, pe = float(res.trend_mean[1]), float(res.trend_sem[1])
        eq5 = eq5_trend(res.config.n, d)
        zz = report.zscore(m, e)
        resolved = zz > zc
        effect, source = (m, "measured") if resolved else (eq5, "Eq. (5)")
        out.append(Reach(d, res.config.samples, m, e, zz, pm_, pe, report.zscore(pm_, pe), eq5,
                         pe / e if e > 0 else math.nan,
                         float(res.recency_probability_sem[1] / res.recency_probability_cv_sem[1])
                         if res.recency_probability_cv_sem[1] > 0 else math.nan,
                         resolved, effect, source, sequences_needed(e, res.config.samples, effect, z),
                         sequences_needed(pe, res.config.samples, effect, z), z, cpu_seconds_per_sequence(res)))
    return out


def prop1_trend_predicted(n: int, d: float) -> float:
    """Proposition 1's trend beyond the LLN: the mean step S^(2)_ij - S^(2)_i,j-1 between earlier keys
    (2 <= j < i <= n) without normalization, from E S^(2)_ij = c_i (1 + d^{-3/2} (1 - 1/j)) with c_i
    the corrected Eq. (19) (closedforms.prop1_row_rise). The LLN (Eq. (19)) predicts 0."""
    from .closedforms import prop1_row_rise

    i, j = _off_steps(check_int("n", n, 3))
    c = theory.prop1_score_corrected(i, 1, d)
    return float(np.mean(c * (prop1_row_rise(j, d) - prop1_row_rise(j - 1, d))))


@dataclass(frozen=True)
class Beyond:
    """Proposition 1 beyond the LLN at one hidden size (:func:`prop1_beyond`): the control-variate
    trend of S^(2) and its prediction (``ratio`` = measured / predicted); the first step of row n
    relative to the row's level, S_{n,2} - S_{n,1} over corrected Eq. (19), and its prediction
    d^{-3/2} / 2."""

    d: int
    samples: int
    trend: float
    trend_se: float
    z: float
    predicted: float
    first: float
    first_se: float
    first_predicted: float

    @property
    def ratio(self) -> tuple[float, float]:
        return self.trend / self.predicted, self.trend_se / abs(self.predicted)


def prop1_beyond(results: dict[int, SimResult]) -> list[Beyond]:
    """Proposition 1's second-layer row beyond the LLN, per hidden size (:func:`prop1_configs`)."""
    from .closedforms import prop1_row_rise

    out = []
    for d in sorted(results):
        res = results[d]
        n = res.config.n
        level = float(theory.prop1_score_corrected(n, 1, d))
        m, e = float(res.trend_cv_mean[1]), float(res.trend_cv_sem[1])
        out.append(Beyond(d, res.config.samples, m, e, report.zscore(m, e), prop1_trend_predicted(n, d),
                          float(res.diff_cv_mean[1][n - 1, 1]) / level, float(res.diff_cv_sem[1][n - 1, 1]) / level,
                          float(prop1_row_rise(2, d))))
    return out


# -- what the theory chapters tabulate -------------------------------------------------------------

@dataclass(frozen=True)
class Weakening:
    """How much the residual weakens the order in one layer (:func:`residual_weakening`): the
    recency probability without minus with the residual, its SE (the two runs' SEs combined as if
    independent), the z of the difference, and the share of the excess over 1/2 that the residual
    keeps, (RP_with - 1/2) / (RP_without - 1/2)."""

    layer: int
    difference: float
    se: float
    z: float
    kept: float


def residual_weakening(without: SimResult, with_residual: SimResult) -> list[Weakening]:
    """Layer by layer from 2 on, the drop of the recency probability that the residual causes.
    The runs share their seed, hence their input tokens: their errors are positively correlated,
    so the combined SE overstates the error of the difference (a conservative z)."""
    out = []
    for layer in range(2, without.config.layers + 1):
        (a, sa), (b, sb) = rp(without, layer), rp(with_residual, layer)
        se = math.hypot(sa, sb)
        out.append(Weakening(layer, a - b, se, report.zscore(a - b, se),
                             (b - 0.5) / (a - 0.5) if a != 0.5 else math.nan))
    return out


def cosine_deviations(cosines: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alphas, mean cosine - alpha, SE), sorted by alpha, from ``cosines``: alpha -> (mean, SE) of
    the input tokens' cosine similarity (inputs.input_cosine_similarity at one d): Eq. (6)'s claim
    is that the middle one is 0, up to the second-order term -alpha (1 - alpha^2) / (2d)."""
    a = np.array(sorted(cosines), dtype=float)
    m = np.array([cosines[x][0] for x in sorted(cosines)], dtype=float)
    e = np.array([cosines[x][1] for x in sorted(cosines)], dtype=float)
    return a, m - a, e


def rps(results: dict, layer: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, recency probability, SE) of 1-based ``layer`` for results keyed by a number (alpha, d),
    sorted by key."""
    keys = sorted(results)
    pairs = np.array([rp(results[k], layer) for k in keys], dtype=float).reshape(len(keys), 2)
    return np.array(keys, dtype=float), pairs[:, 0], pairs[:, 1]


def trends(results: dict, layer: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, control-variate trend, SE) of 1-based ``layer`` for results keyed by a number (alpha, d),
    sorted by key: the mean step between earlier keys, what :func:`s2_order` reads for layer 2."""
    keys = sorted(results)
    m = np.array([float(results[k].trend_cv_mean[layer - 1]) for k in keys])
    e = np.array([float(results[k].trend_cv_sem[layer - 1]) for k in keys])
    return np.array(keys, dtype=float), m, e


#: The recency probability under the book's convention and the authors' later one (issue 11, item 4).
RP_CONVENTIONS = ("tie counts ½", "strict", "strict, float32")


def rp_conventions(cfg: SimConfig, samples: int | None = None, batch: int = 4096) -> dict[str, tuple]:
    """The recency probability of every layer of ``cfg`` counted three ways, over the triples
    j < k < i (diagonal excluded), each (mean per layer, SE per layer) over ``samples`` sequences:

    * "tie counts ½": the book's (features.recency_fraction): a later key that scores higher counts
      1, a tie (a difference within float rounding, features.tie_tolerance) counts 1/2;
    * "strict": only "the later key scores higher" counts, ties count 0 (on the same float64
      scores, with the same tolerance: what exact arithmetic gives);
    * "strict, float32": the authors' later code: the model run in float32 (model.layer on the
      dense tokens of Eq. (6), cast to float32) and strict ">" without any tolerance, so float32
      rounding between equal scores counts as order.

    They differ where scores tie, e.g. at alpha = 1 (every token equal). ``samples`` defaults to
    ``cfg.samples``; the float64 scores are the simulator's (sample_trajectories), the float32 run
    draws its own tokens in batches of ``batch``.
    """
    from recency_lib.engines import layer_steps, sample_trajectories
    from recency_lib.features import later_and_tied_counts, n_triples, tie_tolerance
    from recency_lib.sampling import dense_tokens

    samples = cfg.samples if samples is None else check_int("samples", samples, 2)
    batch = check_int("batch", batch, 1)
    n, L = cfg.n, cfg.layers
    total = n_triples(n)
    if total == 0:
        raise ValueError(f"cfg.n={n} is out of range; allowed: n >= 3 (a triple j < k < i must exist)")
    scores, _ = sample_trajectories(cfg, samples)                       # (samples, layers, n, n) float64
    tie_half, strict = np.empty((samples, L)), np.empty((samples, L))
    for l in range(L):
        s = scores[:, l]
        later, tied = later_and_tied_counts(s, tie_tolerance(s))
        tie_half[:, l], strict[:, l] = (later + 0.5 * tied) / total, later / total
    f32 = np.empty((samples, L))
    for k, start in enumerate(range(0, samples, batch)):
        size = min(batch, samples - start)
        rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,)))
        x = dense_tokens(cfg, rng, size).astype(np.float32)              # (size, n, d) float32
        for l, s, _, _ in layer_steps(x, norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps, layers=L, centred=False):
            later, _ = later_and_tied_counts(s.astype(np.float64), np.zeros(size))
            f32[start:start + size, l] = later / total
    return {name: (v.mean(axis=0), v.std(axis=0, ddof=1) / math.sqrt(samples))
            for name, v in zip(RP_CONVENTIONS, (tie_half, strict, f32))}


# -- the claims -------------------------------------------------------------------------------------
#
# One function per claim: the checks it is split into, in order of importance (the first one with the
# deciding status is the decisive one), decided together at one family-wise z by the one rule (decide).

def theorem1_claim(results: dict[int, SimResult], ds=THEOREM1_VERDICT_DS) -> Verdict:
    """Theorem 1 (LayerNorm, isotropic tokens: the rows of E S^(2) rise for d >> 1): an order check of
    S^(2) at each hidden size of ``ds`` that ``results`` (d -> SimResult of :func:`theorem1_configs`)
    holds, the paper's d first."""
    ds = [d for d in ds if d in results] or sorted(results)
    zc = cv.z_for(len(ds) * comparisons_of_order(results[ds[0]].config.n))
    checks = [order_check(results[d], 2, zc) for d in ds]
    return decide("Theorem 1", checks, ("prf:ref", "thm-1"), {"z_threshold": zc, "ds": ds})


def proposition1_claim(results: dict[int, SimResult], ds=PROP1_DS) -> Verdict:
    """Proposition 1 (no normalization: S^(2) has no recency bias; the LLN makes its rows flat, Eq. (19)):
    a flatness check of S^(2) at each hidden size of ``ds`` (d -> SimResult of :func:`prop1_configs`),
    the paper's d first. Beyond the LLN the rows rise (theory.proposition1_trend): resolved, that is a
    check against the claim."""
    ds = sorted((d for d in ds if d in results), key=lambda d: (d != cv.PAPER_D, d)) or sorted(results)
    zc = cv.z_for(len(ds))
    checks = [flat_check(results[d], 2, zc) for d in ds]
    return decide("Proposition 1", checks, ("prf:ref", "prop-1"), {"z_threshold": zc, "ds": ds})


def proposition2_claim(isotropic: SimResult, with_order: SimResult) -> Verdict:
    """Proposition 2 (with the residual S^(2) keeps its recency bias), in Theorem 1's setting with the
    residual (``isotropic``: alpha = 0, gamma = 1, :func:`isotropic_configs`) and at alpha = 0.5
    (``with_order``: Figure 1, row 4): an order check of S^(2) in each, alpha = 0 first."""
    zc = cv.z_for(2 * comparisons_of_order(isotropic.config.n))
    return decide("Proposition 2", [order_check(isotropic, 2, zc), order_check(with_order, 2, zc)],
                  ("prf:ref", "prop-2"), {"z_threshold": zc})


def proposition3_claim(results: dict[float, SimResult]) -> Verdict:
    """Proposition 3 (at any anisotropy alpha < 1, S^(2) has recency bias): an order check of S^(2) at
    every alpha < 1 of ``results`` (alpha -> SimResult, no residual; at alpha = 0 Theorem 1's large run),
    the smallest alpha first (where the effect is smallest)."""
    alphas = sorted(a for a in results if a < 1.0)
    if not alphas:
        raise ValueError("results has no alpha < 1; allowed: a dict alpha -> SimResult with some alpha < 1")
    zc = cv.z_for(len(alphas) * comparisons_of_order(results[alphas[0]].config.n))
    checks = [order_check(results[a], 2, zc) for a in alphas]
    return decide("Proposition 3", checks, ("prf:ref", "prop-3"), {"z_threshold": zc, "alphas": alphas})


def eq5_claim(results: dict[int, SimResult], ds=EQ5_DS) -> Verdict:
    """Eq. (5), the closed form of S^(2)_ij in Theorem 1's setting, against simulation where it matters
    for the theorem: its mean step between earlier keys (the trend, :func:`eq5_trend`) against the
    control-variate trend at each d of ``ds``, the paper's d first (a ratio resolved away from 1 is a
    check against it)."""
    ds = sorted((d for d in ds if d in results), key=lambda d: (d != cv.PAPER_D, d)) or sorted(results)
    zc = cv.z_for(len(ds))
    checks = []
    for d in ds:
        res = results[d]
        checks.append(value_check(float(res.trend_cv_mean[1]), float(res.trend_cv_sem[1]), eq5_trend(res.config.n, d),
                                  zc, "simulated ÷ Eq. (5), mean step of $S^{(2)}$", setting_text(res)))
    return decide("Eq. (5)", checks, ("doc", "layernorm"), {"z_threshold": zc, "ds": ds})


def corrected_theorem1_claim(results: dict[int, SimResult], ds=EQ5_DS) -> Verdict:
    """The book's corrected Theorem 1 (theory.theorem1_trend: the trend beyond the LLN) against the same
    simulations as :func:`eq5_claim`; a ratio within its error of 1 (given the form's stated accuracy of
    0.5 %, folded into the error) is as claimed."""
    ds = sorted((d for d in ds if d in results), key=lambda d: (d != cv.PAPER_D, d)) or sorted(results)
    zc = cv.z_for(len(ds))
    checks = []
    for d in ds:
        res = results[d]
        form = float(theory.theorem1_trend(d, res.config.n))
        se = math.hypot(float(res.trend_cv_sem[1]), THEOREM1_FORM_ACCURACY * form)
        checks.append(value_check(float(res.trend_cv_mean[1]), se, form, zc,
                                  "simulated ÷ corrected Theorem 1, mean step of $S^{(2)}$", setting_text(res)))
    return decide("Theorem 1, corrected", checks, ("prf:ref", "thm-1-corrected"), {"z_threshold": zc, "ds": ds})


def eq6_claim(cosines: dict[float, tuple[float, float]], d: int, samples: int) -> Verdict:
    """Eq. (6) with Eq. (23): two input tokens have cosine similarity alpha (their normalized inner
    product is sqrt(d) alpha). ``cosines`` maps alpha to the measured mean cosine and its SE
    (recency_lib.inputs.input_cosine_similarity, ``samples`` sequences at hidden size d): a check per
    alpha whose cosine has sampling noise (at alpha = 0 and 1 it is exact), the largest deviation first.
    At finite d the mean is alpha - alpha (1 - alpha^2) / (2 d) + O(d^-2) (recency_lib.inputs): resolved,
    that is a check against the claim."""
    if not cosines:
        raise ValueError("cosines={} is empty; allowed: a dict alpha -> (mean, se)")
    noisy = sorted((a for a, (m, s) in cosines.items() if not report.is_exact(m, s)), key=lambda a: -abs(cosines[a][0] - a))
    zc = cv.z_for(max(1, len(noisy)))
    checks = [direction_check(cosines[a][0], cosines[a][1], 0, zc, f"mean cosine − α at α = {a:g}",
                              f"$d = {d}$, {report.count(samples)} sequences", reference=a,
                              text=report.pm(cosines[a][0] - a, cosines[a][1])) for a in noisy]
    exact = [a for a, (m, s) in cosines.items()
             if report.is_exact(m, s) and abs(m - a) > report.EXACT_RTOL * max(1.0, abs(a))]
    checks += [Check(f"mean cosine − α at α = {a:g}", f"$d = {d}$", cosines[a][0] - a, 0.0, math.inf, AGAINST,
                     report.num(cosines[a][0] - a, 3)) for a in exact]
    return decide("Eq. (6)", checks, ("doc", "input_distribution"), {"z_threshold": zc})


def figure1_claim(rows: list[SimResult]) -> Verdict:
    """Figure 1 as the paper describes it (Sec. 3), from ``rows``, the four results of :func:`fig1_configs`
    (recency probabilities at the figure's sample size; Definition 1 with control variates):
    no order in layer 1; without normalization, primacy from layer 3 on; with LayerNorm at alpha = 0 no
    order visible; with LayerNorm at alpha = 0.5 the rows rise from layer 2 on (every step); weaker with
    the residual. Checks in that order, the showcase (alpha = 0.5) first."""
    if len(rows) != 4:
        raise ValueError(f"rows has length {len(rows)}; allowed: the 4 rows of Figure 1 (fig1_configs)")
    none, iso, aniso, resid = rows
    L = aniso.config.layers
    later, deep = range(2, L + 1), range(3, L + 1)
    zc = cv.z_for(len(later) * comparisons_of_order(aniso.config.n) + 4 + len(deep) + L + len(later))
    a5, g5 = f"{aniso.config.alpha:g}", f"{resid.config.gamma:g}"
    checks = [order_check(aniso, l, zc, f"LayerNorm, α = {a5}: the rows of $S^{{({l})}}$ rise") for l in later]
    checks += [direction_check(*rp(r, 1), 0, zc, f"{cv.variant_short(r.config)}, α = {r.config.alpha:g}: "
                               "no order in layer 1 (RP)", setting_text(r, None), reference=0.5) for r in rows]
    checks += [direction_check(*rp(none, l), -1, zc, f"no normalization: primacy in layer {l} (RP)",
                               setting_text(none, None), reference=0.5) for l in deep]
    checks += [direction_check(*rp(iso, l), 0, zc, f"LayerNorm, α = 0: no visible order in layer {l} (RP)",
                               setting_text(iso, None), reference=0.5) for l in range(1, L + 1)]
    for l in later:
        gap, se = rp_gap(aniso, resid, l)
        checks.append(direction_check(gap, se, +1, zc, f"the residual (γ = {g5}) weakens the order of layer {l} "
                                      "(RP without − with)", setting_text(resid, None)))
    return decide("Figure 1", checks, ("doc", "empirical"), {"z_threshold": zc})


def _h_table(results: dict[float, SimResult], gamma: float):
    """Per alpha: simulated rise (value, SE), printed Eq. (41) rise and corrected rise."""
    out = {}
    for a, res in sorted(results.items()):
        cfg = res.config
        j = np.arange(1, cfg.n + 1)
        out[a] = {"sim": h_rise(res),
                  "printed": _rise(theory.h_eq41(j, a, gamma, cfg.d)),
                  "corrected": _rise(theory.h_corrected(j, a, gamma, cfg.d, cfg.norm))}
    return out


def _h_checks(results: dict[float, SimResult], gamma: float, form: str) -> tuple[list[Check], float, dict]:
    """Value checks of the rise h(n)/h(1) - 1 of the key factor (``form``: "printed" Eq. (41) or the book's
    "corrected" form) at every alpha > 0, alpha = 0.4 (or the middle one) first."""
    tab = _h_table(results, gamma)
    pos = [a for a in tab if a > 0]
    mid = 0.4 if 0.4 in pos else (pos[len(pos) // 2] if pos else None)
    order = sorted(pos, key=lambda a: (a != mid, a))
    zc = cv.z_for(max(1, len(order)))
    name = "Eq. (41)" if form == "printed" else "the corrected form"
    checks = [value_check(*tab[a]["sim"], tab[a][form], zc, f"simulated ÷ {name}, rise of $h(j)$ at α = {a:g}",
                          setting_text(results[a], None)) for a in order]
    return checks, zc, tab


def figure2_claim(results: dict[float, SimResult]) -> Verdict:
    """Figure 2 (h(j) of Eq. (41) for several alpha, no residual): the printed form's rise of the key
    factor against the simulated one (from layer 1's squared norms), one value check per alpha > 0."""
    checks, zc, tab = _h_checks(results, 0.0, "printed")
    same_order = (sorted(tab, key=lambda a: tab[a]["sim"][0]) == sorted(tab, key=lambda a: tab[a]["printed"]))
    return decide("Figure 2", checks, ("doc", "empirical"), {"table": tab, "same_order": same_order, "z_threshold": zc})


def figure5_claim(results: dict[float, SimResult]) -> Verdict:
    """Figure 5 (h(j) with the residual): the printed form's rise against the simulated one, one value
    check per alpha > 0, at the runs' residual weight (the paper's is 1); ``numbers["corrected"]`` holds
    the same checks of the book's corrected form."""
    gammas = {float(r.config.gamma) for r in results.values()}
    if len(gammas) != 1:
        raise ValueError(f"results have residual weights {sorted(gammas)}; allowed: runs of one weight")
    gamma = gammas.pop()
    checks, zc, tab = _h_checks(results, gamma, "printed")
    corrected, _, _ = _h_checks(results, gamma, "corrected")
    return decide("Figure 5", checks, ("doc", "appendix_b"), {"table": tab, "corrected": corrected, "z_threshold": zc})


def _grid_checks(results: dict[float, SimResult], zc: float) -> list[Check]:
    """The order of every layer from 2 on at every alpha > 0 (recency probability above 1/2), and no
    order in layer 1, for Figures 3 and 4."""
    items = sorted(results.items())
    L = items[0][1].config.layers
    checks = [direction_check(*rp(r, l), +1, zc, f"α = {a:g}: recency in layer {l} (RP)", setting_text(r, None),
                              reference=0.5) for a, r in items if a > 0 for l in range(2, L + 1)]
    checks += [direction_check(*rp(r, 1), 0, zc, f"α = {a:g}: no order in layer 1 (RP)", setting_text(r, None),
                               reference=0.5) for a, r in items]
    return checks


def figure3_claim(results: dict[float, SimResult]) -> Verdict:
    """Figure 3 (Figure 1 for more alpha, no residual): recency from layer 2 on at every alpha > 0, no
    order in layer 1."""
    L = next(iter(results.values())).config.layers
    zc = cv.z_for(max(1, len(results) * L))
    return decide("Figure 3", _grid_checks(results, zc), ("doc", "appendix_b"), {"z_threshold": zc})


def figure4_claim(results: dict[float, SimResult], without_residual: dict[float, SimResult]) -> Verdict:
    """Figure 4 (with the residual): as Figure 3, and the residual lowers the last layer's recency
    probability at every alpha > 0 that both grids have."""
    L = next(iter(results.values())).config.layers
    common = [a for a in sorted(results) if a > 0 and a in without_residual]
    zc = cv.z_for(max(1, len(results) * L + len(common)))
    checks = _grid_checks(results, zc)
    for a in common:
        gap, se = rp_gap(without_residual[a], results[a], L)
        checks.append(direction_check(gap, se, +1, zc, f"α = {a:g}: the residual weakens layer {L} (RP without − with)",
                                      setting_text(results[a], None)))
    return decide("Figure 4", checks, ("doc", "appendix_b"), {"z_threshold": zc})


# -- Figures 1-5: the numbers their pages show ----------------------------------------------------

#: How a feature of a figure (:func:`figure1_features`, ...) reads in a table.
FEATURE_WORDS = {True: "reproduced", False: "contradicted", None: "not resolved"}
#: A no-break space: a number with its error stays on one line in a narrow table cell.
NBSP = "\u00a0"
#: The estimators of the adjacent steps behind a Definition-1 verdict (``SimResult.steps``).
ESTIMATOR_NAMES = {"cv": "control variates", "plain": "plain means"}


def feature_word(value: bool | None) -> str:
    """"reproduced" (True), "contradicted" (False: the opposite is resolved) or "not resolved" (None)."""
    if not (value is None or isinstance(value, (bool, np.bool_))):
        raise ValueError(f"value={value!r} is not allowed; allowed: True, False or None")
    return FEATURE_WORDS[None if value is None else bool(value)]


def estimator_name(estimator: str = "cv") -> str:
    """The words for an estimator of the steps, "control variates" or "plain means", for the prose
    next to a Definition-1 verdict."""
    if not isinstance(estimator, str) or estimator not in ESTIMATOR_NAMES:
        raise ValueError(f"estimator={estimator!r} is not allowed; allowed: one of {', '.join(map(repr, ESTIMATOR_NAMES))}")
    return ESTIMATOR_NAMES[estimator]


def verdict_grid_rows(results, labels, *, family: int | None = None, estimator: str = "cv") -> list[dict]:
    """The table under a grid of heatmaps (Figures 1, 3, 4): one row per setting (``labels``), one
    column per layer, each cell the recency probability ± SE (on one line) over the Definition-1
    verdict of that matrix (a badge). The verdicts of all matrices are tested as one family (``family`` matrices;
    default: every matrix of the table)."""
    results, labels = list(results), list(labels)
    if not results or len(labels) != len(results):
        raise ValueError(f"labels has length {len(labels)}; allowed: one label per result ({len(results)}, at least 1)")
    layers = results[0].config.layers
    k = family if family is not None else sum(r.config.layers for r in results)
    k = check_int("family", k, 1)
    return [{"setting": label,
             **{f"layer {l}": f"{report.pm(*rp(r, l)).replace(' ', NBSP)}<br>{report.badge(definition1_with(r, l, k, estimator))}"
                for l in range(1, layers + 1)}}
            for label, r in zip(labels, results)]


def rp_cv(res: SimResult, layer: int) -> tuple[float, float]:
    """(recency probability, SE) of 1-based ``layer`` with control variates (the first layer's RP,
    exactly 1/2 in expectation, as the control; layer 1 itself is the plain estimate)."""
    return float(res.recency_probability_cv[layer - 1]), float(res.recency_probability_cv_sem[layer - 1])


def step_counts(res: SimResult, layer: int, family: int = 1, estimator: str = "cv") -> dict[str, int]:
    """How the adjacent differences S_ij - S_i,j-1 of 1-based ``layer`` fall at the z of Definition 1
    (:func:`definition1`, ``family`` matrices): "steps up" (resolved > 0), "steps down" (resolved
    < 0) and "unresolved"."""
    k = max(1, family * cv.adjacent_pairs(res.config.n))
    zc = cv.z_for(k)
    ii, jj = adjacent_index(res.config.n)
    mean, sem = res.steps(estimator)
    m, e = mean[layer - 1][ii, jj], sem[layer - 1][ii, jj]
    up, down = int(np.sum(m > zc * e)), int(np.sum(m < -zc * e))
    return {"steps up": up, "steps down": down, "unresolved": int(m.size) - up - down}


def definition1_tally(results, *, first_layer: int = 2, family: int | None = None,
                      estimator: str = "cv") -> dict[str, int]:
    """How many of the matrices of layers ``first_layer``..L of ``results`` have Definition 1
    "holds" / "violated" / "undecided" (and "matrices": how many there are), tested as one family of
    ``family`` matrices (default: every matrix of every result, the family of
    :func:`verdict_grid_rows`, so the counts match that table)."""
    results = list(results)
    k = family if family is not None else sum(r.config.layers for r in results)
    k = check_int("family", k, 1)
    words = [definition1_with(r, l, k, estimator) for r in results for l in range(first_layer, r.config.layers + 1)]
    return {"holds": words.count("holds"), "violated": words.count("violated"),
            "undecided": words.count("undecided"), "matrices": len(words)}


def residual_costs(without: dict, with_residual: dict, layer: int) -> dict[float, tuple[float, float]]:
    """alpha -> what the residual costs in recency probability in 1-based ``layer``, RP without minus
    RP with the residual (:func:`rp_gap`), for every alpha that both dicts (alpha -> SimResult) have."""
    return {a: rp_gap(without[a], with_residual[a], layer) for a in with_residual if a in without}


def h_downloads(stem: str, curves: dict, table, key: str) -> tuple[report.Markdown, report.Markdown]:
    """The two downloads beside an h(j) figure (Sec. 3's Figure 2, Appendix B's Figure 5): ``stem``,
    every simulated curve of ``curves`` (normalized -> alpha -> curve, :func:`h_curves`) as h(j)/h(1)
    and as sqrt(d) h(j) against j; ``stem``-ratios, simulated / closed form ``key`` of the
    ``closedforms.Table`` for its level and step against d (:func:`ratio_series`)."""
    h = report.curve_columns(
        {k: v for normalized in (True, False) for a, c in curves[normalized].items()
         for k, v in c.columns(f"{cv.alpha_label(a)}, {'h(j)/h(1)' if normalized else 'sqrt(d) h(j)'}").items()},
        x_name="j")
    ratios = report.curve_columns({f"{part}, {cv.alpha_label(a)}": series for part in ("level", "step")
                                   for a, series in ratio_series(table, key, part).items()}, x_name="d")
    return report.download(stem, h), report.download(f"{stem}-ratios", ratios)


def ratio_series(table, key: str, part: str) -> dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """alpha -> (d, ratio, SE) of closed form ``key``'s ``part`` ("level" or "step") in a
    ``closedforms.Table``, one entry per setting of that form (NaN where not resolved): the data of a
    plot of simulated / closed form against d."""
    out = {}
    for row in table.rows:
        if row.form.key != key or row.part != part:
            continue
        a = row.setting.alpha
        if a in out:
            raise ValueError(f"key={key!r} has several settings with alpha = {a:g}; allowed: one setting per alpha")
        out[a] = tuple(np.array([getattr(c, f) for c in row.cells], dtype=float) for f in ("d", "ratio", "ratio_se"))
    if not out:
        raise ValueError(f"key={key!r}, part={part!r} is not in the table; allowed: a closed form and part it measured")
    return out


def typical_step_se(res: SimResult, layer: int, estimator: str = "cv") -> float:
    """The median standard error of the steps S_ij - S_i,j-1 between two earlier keys (j < i) of
    1-based ``layer``, with ``estimator``: what one step must exceed (times z) to be resolved. NaN
    without such a step (n < 3)."""
    ii, jj = adjacent_index(res.config.n)
    off = jj < ii
    if not np.any(off):
        return math.nan
    return float(np.median(res.steps(estimator)[1][layer - 1][ii[off], jj[off]]))


def eq5_smallest_step(n: int, d: float) -> float:
    """The smallest step S^(2)_ij - S^(2)_i,j-1 between two earlier keys (2 <= j < i <= n) that
    Eq. (5) predicts in Theorem 1's setting (alpha = gamma = 0; computed without cancellation,
    theory.score2_step_corrected)."""
    ii, jj = adjacent_index(check_int("n", n, 3))
    off = jj < ii
    return float(np.min(theory.score2_step_corrected(ii[off] + 1, jj[off] + 1, 0.0, 0.0, d)))


def first_key_excess(res: SimResult, layer: int) -> tuple[float, float]:
    """How much more attention the last query gives the first key in 1-based ``layer`` than uniform
    attention 1/n would, as a fraction: n A_{n,1} - 1, and its SE. Positive: primacy in weights."""
    n = res.config.n
    i = n - 1
    return float(n * res.attn_mean[layer - 1, i, 0] - 1.0), float(n * res.attn_sem[layer - 1, i, 0])


def rp_gap(res_a: SimResult, res_b: SimResult, layer: int) -> tuple[float, float]:
    """RP of ``res_a`` minus RP of ``res_b`` in 1-based ``layer``, with the two SEs combined as if
    independent (an upper bound when the runs share their random stream and correlate positively,
    as the settings of one seed do)."""
    (a, sa), (b, sb) = rp(res_a, layer), rp(res_b, layer)
    return a - b, math.hypot(sa, sb)


@dataclass(frozen=True)
class HCurves:
    """The key factor h(j) = 1/||x_j^(1)|| (Eq. (40)) of one setting, for keys ``j`` = 1..n: Eq. (41)
    as printed, the corrected closed form (theory.h_corrected; both None without normalization,
    where Eq. (41) does not apply) and the simulated 1/sqrt(E||x_j^(1)||^2) with its delta-method
    SE. ``normalized``: each divided by its value at j = 1 (the simulated one with the error of
    that division, grid.simulated_h); else in the scale of the paper's Figures 2 and 5,
    sqrt(d) h(j) (closedforms.h_profile)."""

    j: np.ndarray
    printed: np.ndarray | None
    corrected: np.ndarray | None
    sim: np.ndarray
    sim_se: np.ndarray
    normalized: bool

    def columns(self, label: str) -> dict:
        """The curves as :func:`report.curve_columns` series, named "<label>: ..."."""
        out = {f"{label}: simulation": (self.j, self.sim, self.sim_se)}
        if self.printed is not None:
            out[f"{label}: Eq. (41) as printed"] = (self.j, self.printed, None)
            out[f"{label}: corrected"] = (self.j, self.corrected, None)
        return out


def h_curves(res: SimResult, normalize: bool = True) -> HCurves:
    """:class:`HCurves` of a simulated setting with at least two layers (h needs layer 1's output)."""
    from .closedforms import h_profile
    from .grid import simulated_h

    cfg = res.config
    if cfg.layers < 2:
        raise ValueError(f"layers={cfg.layers} is out of range; allowed: >= 2 (h(j) is read from layer 1's output)")
    j = np.arange(1, cfg.n + 1)
    printed = corrected = None
    if NORMS[cfg.norm].closed_form:
        printed = math.sqrt(cfg.d) * np.asarray(theory.h_eq41(j, cfg.alpha, cfg.gamma, cfg.d), dtype=float)
        corrected = math.sqrt(cfg.d) * np.asarray(theory.h_corrected(j, cfg.alpha, cfg.gamma, cfg.d, cfg.norm),
                                                  dtype=float)
    if normalize:
        sim, se = simulated_h(res, state=1)
        if printed is not None:
            printed, corrected = printed / printed[0], corrected / corrected[0]
    else:
        sim, se = h_profile(res, math.sqrt(cfg.d))
    return HCurves(j, printed, corrected, np.asarray(sim, dtype=float), np.asarray(se, dtype=float), bool(normalize))


#: How the error |ratio - 1| of a closed form moves as d grows (closedforms.trend), in words.
TREND_WORDS = {"grows": "grows", "shrinks": "shrinks", "stalls": "neither grows nor shrinks steadily",
               "": "is resolved at fewer than two d"}


def trend_words(row) -> str:
    """What the error of a closed form does as d grows, for the prose: "grows", "shrinks", ...
    (``row``: a closedforms.Row; :data:`TREND_WORDS`)."""
    return TREND_WORDS[row.trend]


def ratio_texts(row) -> list[str]:
    """The measured ratios simulated / closed form of one ``closedforms.Row``, one per d, as the book
    writes them ("0.98062 ± 0.00005"; "unresolved" where the simulated value is within the
    resolution; the SEs are upper bounds where the row's estimator says so)."""
    out = []
    for c in row.cells:
        if not c.resolved:
            out.append("unresolved")
        elif report.is_exact(c.ratio, c.ratio_se):
            out.append(report.num(c.ratio, 7))
        else:
            out.append(report.pm(c.ratio, c.ratio_se))
    return out


def relative_config(samples: int = cv.PAPER_SAMPLES, seed: int = 0, *, n: int = cv.PAPER_N, d: int = cv.PAPER_D,
                    layers: int = cv.PAPER_LAYERS, alpha: float = 0.5, gamma: float = 0.0) -> SimConfig:
    """The setting of chapter 7's position-or-distance check: Figure 1's showcase (LayerNorm, alpha = 0.5)."""
    return SimConfig(alpha=alpha, gamma=gamma, norm="layernorm", n=n, d=d, layers=layers, samples=samples, seed=seed)


def distance_profiles(stat, estimator: str = "cv") -> dict:
    """The D_i and K_i of :func:`distance_contrasts` from a ``recency_lib.engines.SequenceStatistic``:
    {"queries": 1-based i, "D": (mean, SE), "K": (mean, SE), "D_change": (mean, SE), "K_change": (mean, SE)},
    each per layer (layers, queries) or (layers,)."""
    mean, sem = (stat.cv_mean, stat.cv_sem) if estimator == "cv" and stat.cv_mean is not None else (stat.mean, stat.sem)
    m = (mean.shape[-1] - 2) // 2
    n = m + FAR
    return {"queries": np.arange(FAR + 1, n + 1), "D": (mean[:, :m], sem[:, :m]), "K": (mean[:, m:2 * m], sem[:, m:2 * m]),
            "D_change": (mean[:, -2], sem[:, -2]), "K_change": (mean[:, -1], sem[:, -1])}


def not_relative_claim(stat) -> Verdict:
    """"The bias is not relative" (Sec. 4), on what the softmax sees: for each layer from 2 on, the change
    of D_i (the preference for the nearer of two keys at distances NEAR and FAR) from the first query that
    has both keys to the last, D_n - D_{FAR+1}, from ``stat`` (recency_lib.engines.sequence_statistic of
    :func:`distance_contrasts` with control_mean 0). A relative bias keeps it 0; resolved, the claim holds.
    The last layer first."""
    prof = distance_profiles(stat)
    cfg = stat.config
    layers = list(range(cfg.layers, 1, -1))
    zc = cv.z_for(max(1, len(layers)))
    setting = f"{setting_text(cfg.replace(samples=stat.samples))}"
    checks = []
    for l in layers:
        v, e = (float(x[l - 1]) for x in prof["D_change"])
        checks.append(nonzero_check(v, e, zc, f"$D_n - D_{{{FAR + 1}}}$ of layer {l}", setting))
    return decide("the bias is not relative", checks, ("doc", "conclusion"), {"z_threshold": zc, "profiles": prof})










def engines_agree(res_a: SimResult, res_b: SimResult) -> Verdict:
    """Two independent simulations of one setting (e.g. the dense and the Gram engine) against each
    other: every mean score and attention weight of every layer (causal triangle) as a z-score of
    the difference, all tested as one family. Entries without sampling noise (SE ~ 0, such as the
    diagonal scores sqrt(d) after normalization) are compared directly; their largest gap is reported.
    "holds" when no z exceeds the family's threshold."""
    if res_a.config.replace(engine="auto", samples=2, seed=0) != res_b.config.replace(engine="auto", samples=2, seed=0):
        raise ValueError("res_a and res_b simulate different settings; allowed: the same setting (engine, samples "
                         "and seed may differ)")
    lower = np.tri(res_a.config.n, dtype=bool)
    zs, gaps = [], []
    for name in ("score", "attn"):
        m1, s1 = (getattr(res_a, f"{name}_{k}")[:, lower] for k in ("mean", "sem"))
        m2, s2 = (getattr(res_b, f"{name}_{k}")[:, lower] for k in ("mean", "sem"))
        rtol = report.EXACT_RTOL
        exact = (s1 <= rtol * np.maximum(1.0, np.abs(m1))) & (s2 <= rtol * np.maximum(1.0, np.abs(m2)))
        zs.append((m1 - m2)[~exact] / np.hypot(s1, s2)[~exact])
        gaps.append(np.abs(m1 - m2)[exact])
    z, gap = np.concatenate(zs), np.concatenate(gaps)
    zc = cv.z_for(max(1, z.size))
    worst = float(np.max(np.abs(z))) if z.size else 0.0
    numbers = {"count": int(z.size), "max_abs_z": worst, "rms_z": float(np.sqrt(np.mean(z ** 2))) if z.size else 0.0,
               "beyond": int(np.sum(np.abs(z) > zc)), "z_threshold": zc, "exact_count": int(gap.size),
               "exact_gap": float(gap.max()) if gap.size else 0.0}
    check = Check("largest |z| of a difference", setting_text(res_a, None), worst, 1.0, worst,
                  AS_CLAIMED if numbers["beyond"] == 0 else AGAINST, report.num(worst, 2))
    return decide("engines agree", [check], ("doc", "preliminaries"), numbers)


# -- the landing page's table ----------------------------------------------------------------------------

#: What each claim says, in a few words (the landing table's second column).
STATEMENTS = {
    "Theorem 1": "LayerNorm, isotropic tokens: the rows of $S^{(2)}$ rise toward the query for $d \\gg 1$",
    "Proposition 1": "without LayerNorm the rows of $S^{(2)}$ are flat: no recency bias",
    "Proposition 2": "with a residual connection $S^{(2)}$ keeps its recency bias",
    "Proposition 3": "at any anisotropy $\\alpha < 1$, $S^{(2)}$ has recency bias",
    "Eq. (5)": "closed form of $S^{(2)}_{ij}$ in Theorem 1's setting",
    "Eq. (6)": "two input tokens have cosine similarity $\\alpha$",
    "Figure 1": "primacy without normalization; recency with LayerNorm, clear for $\\alpha = 0.5$, weaker with the residual",
    "Figure 2": "the key factor $h(j)$ of Eq. (41), no residual",
    "Figure 3": "the paper's Figure 1 for more $\\alpha$, no residual",
    "Figure 4": "the paper's Figure 1 for more $\\alpha$, with residual",
    "Figure 5": "$h(j)$ with the residual",
    "the bias is not relative": "the scores do not depend on the distance $i - j$ alone",
    "Theorem 1, corrected": "this book: the rows of $S^{(2)}$ rise by $\\sqrt d\\, e^{-2\\sqrt d}\\, q(d)^2$ per step",
}
#: The paper's figures and the book's pages where they are checked.
CLAIM_NAMES = {"Figure 1": "the paper's Figure 1", "Figure 2": "the paper's Figure 2", "Figure 3": "the paper's Figure 3",
               "Figure 4": "the paper's Figure 4", "Figure 5": "the paper's Figure 5"}


def study_configs(samples: int = cv.PAPER_SAMPLES, seed: int = 0) -> dict[str, object]:
    """Every setting behind the landing table, the chapters' own: "fig1" (list of 4), "theorem1" (d ->
    cfg), "alpha0" / "alpha1" (alpha -> cfg, without / with residual), "isotropic" (gamma -> cfg: the
    large alpha = 0 runs at the paper's d), "prop1" (d -> cfg: no normalization beyond the LLN) and
    "relative" (the sequence statistic of chapter 7)."""
    grid0 = sorted(set(PROP3_ALPHAS) | set(cv.H_ALPHAS))
    return {"fig1": fig1_configs(samples, seed), "theorem1": theorem1_configs(samples, seed),
            "alpha0": alpha_configs(grid0, 0.0, samples, seed), "alpha1": alpha_configs(FIG4_ALPHAS, 1.0, samples, seed),
            "isotropic": isotropic_configs(LARGE_FACTOR * samples, seed), "prop1": prop1_configs(samples, seed),
            "relative": relative_config(samples, seed)}


def verdict_table(samples: int = cv.PAPER_SAMPLES, seed: int = 0, *, cosine_samples: int = COSINE_SAMPLES,
                  cache=None, executor=None) -> list[Verdict]:
    """The verdict on every claim (:data:`STATEMENTS`), in the paper's order, the book's corrected
    Theorem 1 last. Runs every setting of :func:`study_configs` through the results cache (what a chapter
    already simulated is read back, not recomputed; ``executor`` spreads what is missing), the
    input-cosine check of Eq. (6) and chapter 7's sequence statistic: the same calls as the chapters,
    so every decisive number is the chapter's."""
    from recency_lib.cache import cached_simulate_many
    from recency_lib.cache import cached_statistic
    from recency_lib.inputs import input_cosine_similarity

    cfgs = study_configs(samples, seed)
    flat = list(dict.fromkeys([*cfgs["fig1"], *cfgs["theorem1"].values(), *cfgs["alpha0"].values(),
                               *cfgs["alpha1"].values(), *cfgs["isotropic"].values(), *cfgs["prop1"].values()]))
    got = dict(zip(flat, cached_simulate_many(flat, cache=cache, executor=executor)))
    fig1 = [got[c] for c in cfgs["fig1"]]
    th = {d: got[c] for d, c in cfgs["theorem1"].items()}
    a0 = {a: got[c] for a, c in cfgs["alpha0"].items()}
    a1 = {a: got[c] for a, c in cfgs["alpha1"].items()}
    iso = {g: got[c] for g, c in cfgs["isotropic"].items()}
    p1 = {d: got[c] for d, c in cfgs["prop1"].items()}
    cosines = {a: input_cosine_similarity(SimConfig(alpha=a, n=cv.PAPER_N, d=cv.PAPER_D), cosine_samples, seed)
               for a in cv.ALPHAS}
    relative = cached_statistic(cfgs["relative"], distance_contrasts, control_mean=0.0, cache=cache)
    return [
        theorem1_claim(th),
        proposition1_claim(p1),
        proposition2_claim(iso[1.0], fig1[3]),
        proposition3_claim({**{a: a0[a] for a in PROP3_ALPHAS}, 0.0: iso[0.0]}),
        eq5_claim(th),
        eq6_claim(cosines, cv.PAPER_D, cosine_samples),
        figure1_claim(fig1),
        figure2_claim({a: a0[a] for a in cv.H_ALPHAS}),
        figure3_claim({a: a0[a] for a in FIG3_ALPHAS}),
        figure4_claim({a: a1[a] for a in FIG4_ALPHAS}, a0),
        figure5_claim({a: a1[a] for a in FIG4_ALPHAS}),
        not_relative_claim(relative),
        corrected_theorem1_claim(th),
    ]


def table(verdicts: list[Verdict]) -> report.Markdown:
    """The landing page's table: the claim (a link to its live check), what the paper says, the book's
    verdict (a badge), and the decisive number with what it measures and its setting."""
    rows = [{"claim": v.link_as(CLAIM_NAMES.get(v.claim, v.claim)), "the paper says": STATEMENTS.get(v.claim, ""),
             "verdict": report.badge(v.word),
             "decisive number": f"{v.value}<br><small>{v.measure}</small>"} for v in verdicts]
    return report.table(rows, align="llll", css_class="verdict-table")


# -- the numbers chapter 6's prose cites -------------------------------------------------------------

def empirical_numbers(results: list[SimResult], by_d: dict, forms, verdicts: list[Verdict], *, n: int, d: int,
                      layers: int, samples: int, samples_dsweep: int, quote: float = 0.2) -> dict[str, str]:
    """glue key -> text of every number chapter 6 (book/empirical.ipynb) cites in its prose, each with
    its Monte-Carlo error where it is simulated: Figure 1's four models (``results``: no norm, LayerNorm
    alpha = 0, alpha = 0.5, alpha = 0.5 + residual), the hidden-size sweep (``by_d``: d -> those four),
    the closed forms ``forms`` (:func:`companion.closedforms.measure` of "eq10", "eq4-attention",
    "fig2"), the verdicts on Figures 1 and 2, and ``quote``, the alpha of Figure 2 quoted in the prose."""
    from .closedforms import T, Setting

    none, iso, ln5, res = results
    ds = sorted(by_d)
    _, trend, trend_se = s2_order(iso)
    iso_setting, ln5_setting = Setting("layernorm", 0.0, 0.0), Setting("layernorm", 0.5, 0.0)
    step = forms.row("fig2", "step", Setting("layernorm", quote, 0.0))

    def ratios(row) -> str:
        return report.listing(ratio_texts(row), fmt=str)

    return {
        # Figure 1
        "empirical-n": report.count(n), "empirical-d": report.count(d), "empirical-layers": report.count(layers),
        "empirical-samples": report.count(samples), "empirical-estimator": estimator_name(),
        "empirical-matrices": report.count(len(results) * layers), "empirical-v1": verdicts[0].word,
        "empirical-none-rp2": report.pm(*rp(none, 2)), "empirical-none-rpL": report.pm(*rp(none, layers)),
        "empirical-none-excess": report.pm(*first_key_excess(none, layers)),
        "empirical-iso-rp2": report.pm(*rp(iso, 2)), "empirical-iso-pred": report.num(eq5_smallest_step(n, d), 2),
        "empirical-iso-se-plain": report.num(typical_step_se(iso, 2, "plain"), 2),
        "empirical-iso-se-cv": report.num(typical_step_se(iso, 2, "cv"), 2),
        "empirical-iso-trend": report.pm(trend, trend_se),
        "empirical-iso-trend-z": report.z_text(report.zscore(trend, trend_se)),
        "empirical-ln5-rp2": report.pm(*rp(ln5, 2)), "empirical-ln5-rpL": report.pm(*rp(ln5, layers)),
        "empirical-res-cost2": report.pm(*rp_gap(ln5, res, 2)),
        "empirical-res-cost": report.pm(*rp_gap(ln5, res, layers)),
        # Figure 1 at other hidden sizes
        "empirical-ds": report.listing(ds), "empirical-samples-dsweep": report.count(samples_dsweep),
        "empirical-d-first": report.count(ds[0]), "empirical-d-last": report.count(ds[-1]),
        "empirical-ln5-rp2-first": report.pm(*rp(by_d[ds[0]][2], 2)),
        "empirical-ln5-rp2-last": report.pm(*rp(by_d[ds[-1]][2], 2)),
        "empirical-leak-first": report.num(cv.leak(0.5, ds[0]), 2),
        "empirical-leak-last": report.num(cv.leak(0.5, ds[-1]), 2),
        "empirical-none-primacy": report.listing(
            [dd for dd in ds if direction(by_d[dd][0], layers, family=len(ds)) == "primacy"]),
        "empirical-eq10": ratios(forms.row("eq10", "level")),
        "empirical-eq4-a0": ratios(forms.row("eq4-attention", "level", iso_setting)),
        "empirical-eq4-a5": ratios(forms.row("eq4-attention", "level", ln5_setting)),
        "empirical-eq4-a0-limit": report.num(math.exp(0.5), 4),
        "empirical-eq4-a5-limit": report.num(math.exp((1 - ln5_setting.alpha ** 2) ** 2 / 2), 4),
        "empirical-cf-samples": report.count(samples), "empirical-cf-samples-t": report.count(forms.samples_of(T)),
        # Figure 2
        "empirical-v2": verdicts[1].word, "empirical-h-order": feature_word(verdicts[1].numbers["same_order"]),
        "empirical-quote": f"{quote:g}",
        "empirical-fig2-level": ratios(forms.row("fig2", "level", Setting("layernorm", quote, 0.0))),
        "empirical-fig2-step": ratios(step), "empirical-fig2-trend": trend_words(step),
    }
