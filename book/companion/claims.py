"""The paper's claims and the book's verdict on each, decided from simulation results.

One function per claim takes simulation results (``SimResult``, or measured numbers) and returns a
:class:`Verdict`: a verdict word from :data:`WORDS`, the decisive number with its standard error,
what that number is, and the page that shows the live check. The chapters call these functions for
their own verdicts; the landing page calls :func:`verdict_table`, which runs every setting through
the results cache, so the simulations are shared with the chapters.

Every decision is a family of comparisons tested together at the book's family-wise error level
(:data:`companion.conventions.FAMILYWISE_LEVEL`, Bonferroni: :func:`conventions.z_for`): a
verdict is wrong by chance with probability at most 5 %.

The settings (:func:`fig1_configs`, :func:`theorem1_configs`, :func:`alpha_configs`) are defined
here once; a chapter that uses the same settings gets the same cached results.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import conventions as cv
from . import report
from recency_lib import theory
from recency_lib.config import SimConfig
from recency_lib.metrics import adjacent_index, offset_spread, rp_direction
from recency_lib.norms import NORMS
from recency_lib.result import SimResult
from recency_lib.validation import check_int, check_real

# -- verdict words ---------------------------------------------------------------------------------

HOLDS = "holds"
HOLDS_CORRECTED = "holds after correction"
HOLDS_IN_PART = "holds in part"
HOLDS_TO_LEADING_ORDER = "holds to leading order"
SIGN_NOT_SIZE = "right in sign, off in size"
CONTRADICTED = "contradicted"
OPEN = "open"
TESTABLE = "testable"


def too_small_at(what: str) -> str:
    """"holds; too small to see at d = 64": the predicted effect is resolved elsewhere (smaller d,
    larger alpha) but below the Monte-Carlo resolution at ``what``."""
    return f"holds; too small to see at {what}"


def in_aggregate_at(what: str) -> str:
    """"holds in aggregate at d = 64": the order is resolved (recency probability) but not every
    step of Definition 1 is."""
    return f"holds in aggregate at {what}"


#: Every verdict word (the two templated ones with "{}" for their place).
WORDS = (HOLDS, too_small_at("{}"), in_aggregate_at("{}"), HOLDS_CORRECTED, HOLDS_IN_PART, HOLDS_TO_LEADING_ORDER,
         SIGN_NOT_SIZE, CONTRADICTED, OPEN, TESTABLE)


@dataclass(frozen=True)
class Verdict:
    """The book's verdict on one claim of the paper.

    ``word``: a verdict from :data:`WORDS`; ``value``: the decisive number with its standard error,
    formatted (report.pm); ``measure``: what the number is (markdown, math in ``$...$``);
    ``target``: (role, target) of the live check, e.g. ("prf:ref", "thm-1") (``link`` is the MyST
    link); ``numbers``: the raw numbers behind the verdict (for a chapter's tables and tests)."""

    claim: str
    word: str
    value: str
    measure: str
    target: tuple[str, str]
    numbers: dict = field(default_factory=dict, compare=False)

    @property
    def link(self) -> str:
        """The MyST link to the live check, with the claim as its text: ``{prf:ref}`Theorem 1 <thm-1>```."""
        role, target = self.target
        return f"{{{role}}}`{self.claim} <{target}>`"


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
    ``ds``, ``samples`` each; ``large_d`` (the paper's 64) gets ``large_samples`` (default
    :data:`LARGE_FACTOR` x ``samples``) and is :func:`isotropic_configs`' gamma = 0 setting."""
    samples = check_int("samples", samples, 2)
    large = LARGE_FACTOR * samples if large_samples is None else check_int("large_samples", large_samples, 2)
    out = {}
    for d in sorted({check_int("d", x, 2) for x in ds}):
        out[d] = (isotropic_configs(large, seed, n=n, d=d)[0.0] if d == large_d else
                  SimConfig(alpha=0.0, gamma=0.0, norm="layernorm", n=n, d=d, layers=2, seed=seed, samples=samples))
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

def definition1_claim(res: SimResult) -> Verdict:
    """Definition 1 as a Monte-Carlo test: it should hold for the paper's showcase (LayerNorm,
    alpha = 0.5: Figure 1, row 3, S^(2)) and stay silent on layer 1 of the same run, where the
    earlier keys are exchangeable and no order exists. "testable" when both happen."""
    show, control = definition1(res, 2, family=2), definition1(res, 1, family=2)
    m, e, z = smallest_step(res, 2)
    word = TESTABLE if (show == "holds" and control == "undecided") else OPEN
    return Verdict("Definition 1", word, report.pm(m, e),
                   f"smallest step of $S^{{(2)}}$, {cv.setting_label(res.config)}", ("prf:ref", "def-1"),
                   {"showcase": show, "control": control, "z": z})


def theorem1_claim(results: dict[int, SimResult], paper_d: int = cv.PAPER_D) -> Verdict:
    """Theorem 1 (LayerNorm, isotropic tokens: S^(2) has recency bias for d >> 1), from Theorem 1's
    setting at several hidden sizes (:func:`theorem1_configs`).

    Per d the evidence is :func:`s2_order`, tested at the z of len(results) comparisons; Definition 1
    is tested over all of them as one family. Verdict at the paper's d: "holds" (Definition 1
    confirmed), "holds in aggregate" (order resolved, not every step), "holds; too small to see"
    (resolved only at smaller d), "open" (resolved nowhere), "contradicted" (primacy resolved at some d).
    The number shown is the evidence at the largest d where it is resolved (else at ``paper_d``).
    """
    ds = sorted(results)
    if not ds:
        raise ValueError("results={} is empty; allowed: a dict d -> SimResult of Theorem 1's setting")
    zc = cv.z_for(len(ds))
    ev = {d: s2_order(results[d]) for d in ds}
    zs = {d: report.zscore(v, se) for d, (_, v, se) in ev.items()}
    def1 = {d: definition1(results[d], 2, family=len(ds)) for d in ds}
    seen = [d for d in ds if zs[d] > zc]
    ref = paper_d if paper_d in results else ds[-1]
    if any(zs[d] < -zc for d in ds) or any(v == "violated" for v in def1.values()):
        word = CONTRADICTED
    elif def1[ref] == "holds":
        word = HOLDS
    elif ref in seen:
        word = in_aggregate_at(f"d = {ref}")
    elif seen:
        word = too_small_at(f"d = {ref}")
    else:
        word = OPEN
    at = max(seen) if seen else ref
    what, value, se = ev[at]
    return Verdict("Theorem 1", word, report.pm(value, se), f"{what}, $d = {at}$", ("prf:ref", "thm-1"),
                   {"z": zs, "definition1": def1, "z_threshold": zc, "resolved_at": seen})


def proposition1_claim(res: SimResult, beyond: dict[int, SimResult] | None = None) -> Verdict:
    """Proposition 1 (no LayerNorm: S^(2) has no recency bias), from Figure 1's row 1 and, when given,
    the runs of :func:`prop1_configs` (``beyond``: d -> SimResult), where the exact model's row rises
    at relative order d^{-3/2} (closedforms.prop1_row_rise) although the LLN row is flat.

    "contradicted" when Definition 1 is confirmed for S^(2) of Figure 1's row 1; "holds to leading
    order" when it is not, but an order is resolved above it: the recency probability of that
    S^(2) above 1/2, or the control-variate trend of S^(2) above 0 at some d of ``beyond``; "holds"
    otherwise. All tested as one family. The number: the trend at the largest d where it is resolved,
    else the recency probability of Figure 1's row 1."""
    beyond = beyond or {}
    word_def1 = definition1(res, 2, family=2)
    zc = cv.z_for(2 + len(beyond))
    z = rp_z(res, 2)
    trend_z = {d: report.zscore(*s2_order(r)[1:]) for d, r in beyond.items()}
    seen = sorted(d for d, zz in trend_z.items() if zz > zc)
    if word_def1 == "holds":
        word = CONTRADICTED
    elif z > zc or seen:
        word = HOLDS_TO_LEADING_ORDER
    else:
        word = HOLDS
    if seen:
        r = beyond[seen[-1]]
        what, value, se = s2_order(r)
        shown, measure = report.pm(value, se), f"{what}, {cv.variant_name(r.config)}, $d = {seen[-1]}$"
    else:
        shown, measure = report.pm(*rp(res, 2)), f"RP of $S^{{(2)}}$, {cv.setting_label(res.config)}"
    return Verdict("Proposition 1", word, shown, measure, ("prf:ref", "prop-1"),
                   {"definition1": word_def1, "z": z, "trend_z": trend_z, "z_threshold": zc, "resolved_at": seen})


def _order_across(results: dict, layer: int = 2):
    """Definition 1 of ``layer`` and the order evidence of S^(2) (:func:`s2_order`, in SEs) for
    several settings, tested as one family: (Definition-1 words, z-scores, the family's z)."""
    k = len(results)
    def1 = {a: definition1(r, layer, family=k) for a, r in results.items()}
    zs = {a: report.zscore(*s2_order(r)[1:]) for a, r in results.items()}
    return def1, zs, cv.z_for(k)


def proposition2_claim(with_order: SimResult, isotropic: SimResult) -> Verdict:
    """Proposition 2 (with the residual, S^(2) keeps its recency bias), from LayerNorm + residual at
    alpha = 0.5 (Figure 1, row 4) and at alpha = 0 (:func:`isotropic_configs`, gamma = 1, where the
    effect is of Theorem 1's size). Definition 1 and the order evidence (:func:`s2_order`) of both,
    as one family: "holds" when Definition 1 is confirmed for both; "holds in aggregate at alpha = 0"
    when it is at alpha = 0.5 and the trend's sign is resolved at alpha = 0; "holds; too small to
    see at alpha = 0" when only the first is; "contradicted" when either is reversed."""
    def1, zs, zc = _order_across({"a": with_order, "iso": isotropic})
    a, iso = cv.alpha_label(with_order.config.alpha), cv.alpha_label(isotropic.config.alpha)
    if any(v == "violated" for v in def1.values()) or any(z < -zc for z in zs.values()):
        word = CONTRADICTED
    elif def1["a"] == "holds":
        word = HOLDS if def1["iso"] == "holds" else (in_aggregate_at(iso) if zs["iso"] > zc else too_small_at(iso))
    elif zs["a"] > zc:
        word = in_aggregate_at(a)
    else:
        word = OPEN
    value, se = rp(with_order, 2)
    return Verdict("Proposition 2", word, report.pm(value, se),
                   f"RP of $S^{{(2)}}$, {cv.setting_label(with_order.config)}", ("prf:ref", "prop-2"),
                   {"definition1": def1, "z": zs, "z_threshold": zc})


def proposition3_claim(results: dict[float, SimResult]) -> Verdict:
    """Proposition 3 (any anisotropy alpha < 1: S^(2) has recency bias), from LayerNorm without
    residual over an alpha grid (:data:`PROP3_ALPHAS`; at alpha = 0 the large run of
    :func:`isotropic_configs`). Definition 1 and the order evidence (:func:`s2_order`) at every
    alpha, one family. "holds" when Definition 1 is confirmed at every alpha; "holds in aggregate at
    alpha <= a" when it is above a and the trend's sign is resolved at and below a; "holds; too
    small to see at alpha <= a" when it is confirmed above a and nothing is resolved against it
    below; "holds in part" / "open" / "contradicted" otherwise. The number: the recency
    probability at the smallest alpha > 0."""
    alphas = sorted(a for a in results if a < 1.0)
    if not alphas:
        raise ValueError("results has no alpha < 1; allowed: a dict alpha -> SimResult with some alpha < 1")
    def1, zs, zc = _order_across({a: results[a] for a in alphas})
    confirmed = [a for a in alphas if def1[a] == "holds"]
    below = [a for a in alphas if def1[a] != "holds"]
    if any(def1[a] == "violated" or zs[a] < -zc for a in alphas):
        word = CONTRADICTED
    elif not below:
        word = HOLDS
    elif confirmed and max(below) < min(confirmed):
        where = f"α = {below[0]:g}" if len(below) == 1 else f"α ≤ {max(below):g}"
        word = (in_aggregate_at if all(zs[a] > zc for a in below) else too_small_at)(where)
    elif confirmed:
        word = HOLDS_IN_PART
    else:
        word = OPEN
    low = next((a for a in alphas if a > 0), alphas[0])
    value, se = rp(results[low], 2)
    return Verdict("Proposition 3", word, report.pm(value, se),
                   f"RP of $S^{{(2)}}$, {cv.setting_label(results[low].config)}", ("prf:ref", "prop-3"),
                   {"definition1": def1, "z": zs, "z_threshold": zc, "confirmed": confirmed})


def eq5_claim(results: dict[int, SimResult]) -> Verdict:
    """Eq. (5), the closed form of S^(2)_ij in Theorem 1's setting, against the simulated mean of
    S^(2)_{n,1} at every hidden size where that mean is resolved from zero. "holds" when the ratio
    simulated / Eq. (5) is compatible with 1 at every such d, "right in sign, off in size" when the
    simulated score is positive as predicted but the ratio is resolved away from 1. The number: the
    ratio at the largest resolved d."""
    ds = sorted(results)
    zc = cv.z_for(len(ds))
    ratios = {}
    for d in ds:
        res = results[d]
        n = res.config.n
        pred = float(theory.theorem1_score(n, 1, d))
        m, e = float(res.score_mean[1, n - 1, 0]), float(res.score_sem[1, n - 1, 0])
        if pred > 0 and report.zscore(m, e) > zc:
            ratios[d] = (m / pred, e / pred)
    if not ratios:
        return Verdict("Eq. (5)", OPEN, "—", "simulated / Eq. (5), $S^{(2)}_{n,1}$", ("doc", "layernorm"), {})
    off = [d for d, (r, s) in ratios.items() if abs(report.zscore(r, s, 1.0)) > zc]
    word = SIGN_NOT_SIZE if off else HOLDS
    d = max(ratios)
    n = results[d].config.n
    return Verdict("Eq. (5)", word, report.pm(*ratios[d]), f"simulated / Eq. (5) for $S^{{(2)}}_{{{n},1}}$, $d = {d}$",
                   ("doc", "layernorm"), {"ratios": ratios, "off": off})


def eq6_claim(cosines: dict[float, tuple[float, float]], d: int) -> Verdict:
    """Eq. (6): alpha is the cosine similarity of two input tokens. ``cosines`` maps alpha to the
    measured mean cosine and its SE (recency_lib.inputs.input_cosine_similarity) at hidden size d.
    "holds" when every mean is alpha up to the second-order term -alpha (1 - alpha^2) / (2d) within
    its error; the number is the largest |mean - alpha|, which is O(1/d)."""
    from recency_lib.inputs import cosine_bias_second_order

    if not cosines:
        raise ValueError("cosines={} is empty; allowed: a dict alpha -> (mean, se)")
    noisy = {a: v for a, v in cosines.items() if v[1] > 0}
    zc = cv.z_for(max(1, len(noisy)))
    zs = {a: report.zscore(m, s, a + float(cosine_bias_second_order(a, d))) for a, (m, s) in noisy.items()}
    exact = all(m == a for a, (m, s) in cosines.items() if s == 0)
    word = HOLDS if exact and all(abs(z) <= zc for z in zs.values()) else CONTRADICTED
    worst = max(cosines, key=lambda a: abs(cosines[a][0] - a))
    m, s = cosines[worst]
    return Verdict("Eq. (6)", word, report.pm(m - worst, s), f"mean cosine − α at α = {worst:g}, $d = {d}$",
                   ("doc", "input_distribution"), {"z": zs, "z_threshold": zc})


def _resolved(zs, zc: float) -> bool | None:
    """A feature tested by several z-scores: True when all are above ``zc``, False when one is
    below ``-zc`` (the opposite is resolved), None otherwise."""
    zs = list(zs)
    return False if any(z < -zc for z in zs) else (True if all(z > zc for z in zs) else None)


def figure1_features(rows: list[SimResult]) -> dict[str, bool | None]:
    """The features of Figure 1 that the paper describes (Sec. 3), each True (reproduced), False
    (the opposite is resolved) or None (not resolved either way), tested together as one family.
    ``rows``: the four results of :func:`fig1_configs`, in order."""
    if len(rows) != 4:
        raise ValueError(f"rows has length {len(rows)}; allowed: the 4 rows of Figure 1 (fig1_configs)")
    none, iso, aniso, resid = rows
    layers = range(1, aniso.config.layers + 1)
    deep = [l for l in layers if l >= 3]
    later = [l for l in layers if l >= 2]
    k = 4 + len(deep) + len(later) * 3
    zc = cv.z_for(k)
    sign = lambda zs: _resolved(zs, zc)          # noqa: E731

    layer1 = [abs(rp_z(r, 1)) for r in rows]
    feats = {
        "no order in layer 1": None if max(layer1) > zc else True,
        "primacy in the deeper layers without normalization": sign([-rp_z(none, l) for l in deep]) if deep else None,
        "no visible order with LayerNorm at α = 0": True if all(abs(rp_z(iso, l)) <= zc for l in layers) else None,
        "recency from layer 2 on with α = 0.5": sign([rp_z(aniso, l) for l in later]) if later else None,
        "weaker recency with the residual": sign([report.zscore(rp(aniso, l)[0] - rp(resid, l)[0],
                                                                math.hypot(rp(aniso, l)[1], rp(resid, l)[1]))
                                                  for l in later]) if later else None,
    }
    if feats["recency from layer 2 on with α = 0.5"] and later:
        k_def1 = len(later)
        if not all(definition1(aniso, l, family=k_def1) == "holds" for l in later):
            feats["recency from layer 2 on with α = 0.5"] = None
    return feats


def _from_features(feats: dict) -> str:
    values = list(feats.values())
    if any(v is False for v in values):
        return CONTRADICTED
    if all(v is True for v in values):
        return HOLDS
    return HOLDS_IN_PART if any(v is True for v in values) else OPEN


def figure1_claim(rows: list[SimResult]) -> Verdict:
    """Figure 1 reproduced: every feature of :func:`figure1_features`. The number: the recency
    probability of the last layer with LayerNorm, alpha = 0.5 (row 3)."""
    feats = figure1_features(rows)
    aniso = rows[2]
    L = aniso.config.layers
    value, se = rp(aniso, L)
    return Verdict("Figure 1", _from_features(feats), report.pm(value, se),
                   f"RP of $S^{{({L})}}$, {cv.setting_label(aniso.config)}", ("doc", "empirical"), {"features": feats})


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


def _ratio_at_mid(tab: dict, form: str) -> tuple[float, str]:
    """(alpha, "simulated / closed-form rise ± SE") at alpha = 0.4, or the middle alpha of ``tab``."""
    alphas = sorted(tab)
    a = 0.4 if 0.4 in alphas else alphas[len(alphas) // 2]
    sim, se = tab[a]["sim"]
    ref = tab[a][form]
    return a, report.pm(sim / ref, se / ref)


def figure2_claim(results: dict[float, SimResult]) -> Verdict:
    """Figure 2 (h(j) of Eq. (41) for several alpha, no residual) against the simulated key factor.
    "holds" when the simulated h rises for every alpha > 0, the alphas rank as in Eq. (41) and every
    rise matches Eq. (41) within its error; "right in sign, off in size" when only the first two
    hold. The number: simulated / Eq. (41) rise at alpha = 0.4 (or the middle alpha)."""
    tab = _h_table(results, 0.0)
    pos = [a for a in tab if a > 0]
    zc = cv.z_for(max(1, 2 * len(tab)))
    rises = {a: report.zscore(*tab[a]["sim"]) for a in pos}
    match = all(abs(report.zscore(tab[a]["sim"][0], tab[a]["sim"][1], tab[a]["printed"])) <= zc for a in tab)
    same_order = (sorted(tab, key=lambda a: tab[a]["sim"][0]) == sorted(tab, key=lambda a: tab[a]["printed"]))
    if any(z < -zc for z in rises.values()):
        word = CONTRADICTED
    elif all(z > zc for z in rises.values()) and same_order:
        word = HOLDS if match else SIGN_NOT_SIZE
    else:
        word = OPEN
    a, ratio = _ratio_at_mid(tab, "printed")
    return Verdict("Figure 2", word, ratio, f"simulated / Eq. (41) rise of $h$, α = {a:g}",
                   ("doc", "empirical"), {"table": tab, "same_order": same_order})


def _heatmap_grid_features(results: dict[float, SimResult], baseline: dict[float, SimResult] | None = None):
    """Features of Figures 3-4: no order in layer 1; recency from layer 2 on for alpha > 0; with a
    ``baseline`` (the same alphas without residual), a lower last-layer RP than the baseline."""
    items = sorted(results.items())
    pos = [(a, r) for a, r in items if a > 0]
    L = items[0][1].config.layers
    k = len(items) + len(pos) * (L - 1) + (len(pos) if baseline else 0)
    zc = cv.z_for(max(1, k))
    sign = lambda zs: _resolved(zs, zc)          # noqa: E731

    feats = {"no order in layer 1": True if all(abs(rp_z(r, 1)) <= zc for _, r in items) else None,
             "recency from layer 2 on for α > 0": sign([rp_z(r, l) for _, r in pos for l in range(2, L + 1)])}
    if baseline:
        common = [(a, r) for a, r in pos if a in baseline]
        feats["weaker recency than without the residual"] = sign(
            [report.zscore(rp(baseline[a], L)[0] - rp(r, L)[0], math.hypot(rp(baseline[a], L)[1], rp(r, L)[1]))
             for a, r in common]) if common else None
    return feats


def figure3_claim(results: dict[float, SimResult]) -> Verdict:
    """Figure 3 (Figure 1 for more alpha, no residual) reproduced. The number: the last layer's
    recency probability at the smallest alpha."""
    feats = _heatmap_grid_features(results)
    a = min(results)
    L = results[a].config.layers
    return Verdict("Figure 3", _from_features(feats), report.pm(*rp(results[a], L)),
                   f"RP of $S^{{({L})}}$, {cv.setting_label(results[a].config)}", ("doc", "appendix_b"),
                   {"features": feats})


def figure4_claim(results: dict[float, SimResult], without_residual: dict[float, SimResult]) -> Verdict:
    """Figure 4 (Figure 1 for more alpha, with residual) reproduced, including that the residual
    lowers the last layer's recency probability at every alpha > 0 that both grids have."""
    feats = _heatmap_grid_features(results, without_residual)
    a = min(x for x in results if x > 0) if any(x > 0 for x in results) else min(results)
    L = results[a].config.layers
    return Verdict("Figure 4", _from_features(feats), report.pm(*rp(results[a], L)),
                   f"RP of $S^{{({L})}}$, {cv.setting_label(results[a].config)}", ("doc", "appendix_b"),
                   {"features": feats})


def figure5_claim(results: dict[float, SimResult]) -> Verdict:
    """Figure 5 (h(j) with the residual): Eq. (41) as printed counts the residual at the wrong scale
    (Eqs. (25)-(33)). "holds" when the printed rise matches the simulation at every alpha, "holds
    after correction" when it does not but the corrected form is closer to the simulation at every
    alpha > 0. The number: simulated / corrected rise at alpha = 0.4 (or the middle alpha)."""
    tab = _h_table(results, 1.0)
    pos = [a for a in tab if a > 0]
    zc = cv.z_for(max(1, 2 * len(tab)))
    printed_ok = all(abs(report.zscore(tab[a]["sim"][0], tab[a]["sim"][1], tab[a]["printed"])) <= zc for a in tab)
    closer = all(abs(tab[a]["sim"][0] - tab[a]["corrected"]) < abs(tab[a]["sim"][0] - tab[a]["printed"]) for a in pos)
    rises = [report.zscore(*tab[a]["sim"]) for a in pos]
    if any(z < -zc for z in rises):
        word = CONTRADICTED
    elif printed_ok:
        word = HOLDS
    elif closer and pos:
        word = HOLDS_CORRECTED
    else:
        word = OPEN
    a, ratio = _ratio_at_mid(tab, "corrected")
    return Verdict("Figure 5", word, ratio, f"simulated / corrected rise of $h$, α = {a:g}",
                   ("doc", "appendix_b"), {"table": tab, "printed_ok": printed_ok, "corrected_closer": closer})


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


def not_relative_claim(res: SimResult, offsets=(1, 2, 3)) -> Verdict:
    """"The bias is not relative" (Sec. 4): if the mean scores depended on i - j only, every
    sub-diagonal j = i - o of a mean score matrix would be constant. For layers 2..L and the given
    offsets (0 < o < n - 1: at least two entries), the spread of each sub-diagonal (largest minus
    smallest mean score, metrics.offset_spread) in units of the two entries' combined SE.

    The family is every pair of entries on every sub-diagonal checked (the spread is the pair
    chosen because it is the largest, so each sub-diagonal of m entries counts m (m - 1) / 2
    comparisons, Bonferroni). "holds" when some spread is resolved; the number is the largest
    spread (± its SE). ``numbers``: "spreads" ((layer, offset) -> (gap, z, i_max, i_min), 1-based),
    "z_threshold", "comparisons"."""
    L, n = res.config.layers, res.config.n
    checks = [(l, o) for l in range(2, L + 1) for o in offsets if 0 < o < n - 1]
    if not checks:
        return Verdict("the bias is not relative", OPEN, "—", "spread of a sub-diagonal", ("doc", "conclusion"), {})
    pairs = sum(math.comb(n - o, 2) for _, o in checks)
    zc = cv.z_for(pairs)
    spreads = {(l, o): offset_spread(res.score_mean[l - 1], res.score_sem[l - 1], o) for l, o in checks}
    (l, o), (gap, z, _, _) = max(spreads.items(), key=lambda kv: kv[1][1])
    se = gap / z if z and math.isfinite(z) and z > 0 else 0.0
    word = HOLDS if z > zc else OPEN
    resolved = sum(1 for _, zz, _, _ in spreads.values() if zz > zc)
    return Verdict("the bias is not relative", word, report.pm(gap, se),
                   f"spread of $S^{{({l})}}_{{i,i-{o}}}$ over $i$, {cv.setting_label(res.config)}",
                   ("doc", "conclusion"), {"spreads": spreads, "z_threshold": zc, "comparisons": pairs,
                                           "largest": (l, o, *spreads[(l, o)]), "resolved": resolved})


def relativity_rows(results: dict, offsets=(1, 2, 3)) -> list[dict]:
    """The spreads behind :func:`not_relative_claim` as table rows: one per (setting, layer) of
    ``results`` (label -> SimResult), one column per offset, each cell the spread ± its SE ("—"
    where the sub-diagonal has fewer than two entries)."""
    rows = []
    for label, res in results.items():
        spreads = not_relative_claim(res, offsets).numbers.get("spreads", {})
        for l in range(2, res.config.layers + 1):
            row = {"setting": label, "layer": str(l)}
            for o in offsets:
                gap, z = spreads[(l, o)][:2] if (l, o) in spreads else (math.nan, math.nan)
                row[f"offset {o}"] = report.pm(gap, gap / z if z > 0 and math.isfinite(z) else 0.0) \
                    if math.isfinite(gap) else "—"
            rows.append(row)
    return rows


def offset_correlation(scores: np.ndarray, offset: int) -> float:
    """The smallest correlation, over samples, between two entries of the sub-diagonal j = i - offset
    of per-sample score matrices ``scores`` (samples, n, n). NaN with fewer than two entries."""
    s = np.asarray(scores, dtype=float)
    if s.ndim != 3 or s.shape[1] != s.shape[2] or s.shape[0] < 3:
        raise ValueError(f"scores has shape {s.shape}; allowed: (samples, n, n) with samples >= 3")
    n = s.shape[-1]
    offset = check_int("offset", offset, 1, max(1, n - 1))
    i = np.arange(offset, n)
    if i.size < 2:
        return math.nan
    c = np.corrcoef(s[:, i, i - offset].T)                          # (m, m)
    return float(c[np.triu_indices(i.size, 1)].min())


def spread_correlation(scores: np.ndarray, verdict: Verdict) -> float:
    """The smallest correlation between two entries of any sub-diagonal that ``verdict``
    (:func:`not_relative_claim`) checked, from per-sample scores (samples, layers, n, n): positive
    means that its z-scores, which treat the two entries as independent, are conservative (the
    SE of a difference of positively correlated entries is smaller than the one they assume)."""
    checks = verdict.numbers.get("spreads", {})
    if not checks:
        return math.nan
    return min(offset_correlation(np.asarray(scores)[:, l - 1], o) for l, o in checks)


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
    return Verdict("engines agree", HOLDS if numbers["beyond"] == 0 else CONTRADICTED, report.num(worst, 2),
                   "largest |z| of a difference", ("doc", "preliminaries"), numbers)


# -- the landing page's table ----------------------------------------------------------------------------

#: What each claim says, in a few words (the landing table's second column).
STATEMENTS = {
    "Definition 1": "recency bias: every row of $S$ increases strictly toward the query",
    "Theorem 1": "LayerNorm, isotropic tokens: $S^{(2)}$ has recency bias for $d \\gg 1$",
    "Proposition 1": "without LayerNorm $S^{(2)}$ has no recency bias",
    "Proposition 2": "with a residual connection $S^{(2)}$ keeps its recency bias",
    "Proposition 3": "at any anisotropy $\\alpha < 1$, $S^{(2)}$ has recency bias",
    "Eq. (5)": "closed form of $S^{(2)}_{ij}$ in Theorem 1's setting",
    "Eq. (6)": "$\\alpha$ is the cosine similarity of two input tokens",
    "Figure 1": "mean scores of four models over four layers",
    "Figure 2": "the key factor $h(j)$ of Eq. (41), no residual",
    "Figure 3": "Figure 1 for more $\\alpha$, no residual",
    "Figure 4": "Figure 1 for more $\\alpha$, with residual",
    "Figure 5": "$h(j)$ with the residual",
    "the bias is not relative": "the scores do not depend on $i - j$ alone",
}


def study_configs(samples: int = cv.PAPER_SAMPLES, seed: int = 0) -> dict[str, object]:
    """Every setting behind the landing table: "fig1" (list of 4), "theorem1" (d -> cfg),
    "alpha0" / "alpha1" (alpha -> cfg, without / with residual), "isotropic" (gamma -> cfg: the
    large alpha = 0 runs at the paper's d) and "prop1" (d -> cfg: no normalization beyond the LLN)."""
    grid0 = sorted(set(PROP3_ALPHAS) | set(cv.H_ALPHAS))
    return {"fig1": fig1_configs(samples, seed), "theorem1": theorem1_configs(samples, seed),
            "alpha0": alpha_configs(grid0, 0.0, samples, seed), "alpha1": alpha_configs(FIG4_ALPHAS, 1.0, samples, seed),
            "isotropic": isotropic_configs(LARGE_FACTOR * samples, seed), "prop1": prop1_configs(samples, seed)}


def verdict_table(samples: int = cv.PAPER_SAMPLES, seed: int = 0, *, cosine_samples: int = 4_000,
                  cache=None, executor=None) -> list[Verdict]:
    """The verdict on every claim (:data:`STATEMENTS`), in the paper's order. Runs every setting of
    :func:`study_configs` through the results cache (``cached_simulate_many``: what a chapter
    already simulated is read back, not recomputed; ``executor`` spreads what is missing, e.g.
    ``workers.worker_pool(2)``) and the input-cosine check of Eq. (6)."""
    from recency_lib.cache import cached_simulate_many
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
    cos_cfg = cfgs["fig1"][0]
    cosines = {a: input_cosine_similarity(cos_cfg.replace(alpha=a), cosine_samples, seed) for a in cv.ALPHAS}
    return [
        definition1_claim(fig1[2]),
        theorem1_claim(th),
        proposition1_claim(fig1[0], p1),
        proposition2_claim(fig1[3], iso[1.0]),
        proposition3_claim({**{a: a0[a] for a in PROP3_ALPHAS}, 0.0: iso[0.0]}),
        eq5_claim(th),
        eq6_claim(cosines, cos_cfg.d),
        figure1_claim(fig1),
        figure2_claim({a: a0[a] for a in cv.H_ALPHAS}),
        figure3_claim({a: a0[a] for a in FIG3_ALPHAS}),
        figure4_claim({a: a1[a] for a in FIG4_ALPHAS}, a0),
        figure5_claim({a: a1[a] for a in FIG4_ALPHAS}),
        not_relative_claim(fig1[2]),
    ]


def table(verdicts: list[Verdict]) -> report.Markdown:
    """The landing page's table: the claim (a link to its live check), what the paper says, the
    book's verdict (a badge), and the decisive number over what it measures."""
    rows = [{"claim": v.link, "the paper says": STATEMENTS.get(v.claim, ""), "book's verdict": report.badge(v.word),
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
