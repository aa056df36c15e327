"""The book's statistics of simulated sequences and results, with nothing but numpy, the simulator and
:mod:`companion.significance` beneath them, so that the results cache keys each per-sequence statistic
by its own code (recency_lib.cache.cached_statistic hashes this module and what it imports; an edit of the
book's figures, tables or prose recomputes none of them).

* Per-sequence statistics, each taking one block of sequences, ``scores, attention`` of shape
  (B, layers, n, n) (scores NaN above the diagonal), and returning (B, layers, k), k numbers per
  sequence and layer, for ``recency_lib.engines.sequence_statistic`` /
  ``recency_lib.cache.cached_statistic``: :func:`distance_contrasts` (chapter 7: position or distance),
  :func:`trend_steps` (chapter 6: depth), :func:`ordered_rows` (chapter 2: Definition 1 on single
  sequences), :func:`order_changes` (chapter 1: how much of the first layer's order the later layers
  keep). The estimators of Theorem 1 and Propositions 1-3 live in :mod:`companion.estimators`.
* Statistics of a simulated result that several pages quote: the recency probability (:func:`rp`,
  :func:`direction`), Definition 1 (:func:`definition1`, :func:`step_counts`), the steps and their
  errors (:func:`step_tally`, :func:`smallest_step`, :func:`pairing_gain`, :func:`cv_gain`,
  :func:`typical_step_se`), the order of S^(2) (:func:`s2_order`), the key factor h(j)
  (:func:`simulated_h`, :func:`h_rise`), the sequences an estimator needs (:func:`sequences_needed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.features import trend
from recency_lib.metrics import adjacent_index
from recency_lib.metrics import definition1 as metrics_definition1
from recency_lib.metrics import direction as rp_direction
from recency_lib.result import SimResult
from recency_lib.validation import check_int, check_real, short

from .significance import adjacent_pairs, z_for, zscore

# -- per-sequence statistics -----------------------------------------------------------------------

#: The two distances of chapter 7's contrasts: D_i = S_{i,i-NEAR} - S_{i,i-FAR} (fixed distances) and
#: K_i = S_{i,FAR} - S_{i,1} (fixed key positions); at i = FAR + 1 they are the same two keys.
NEAR, FAR = 1, 4


def distance_contrasts(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """Chapter 7's per-sequence statistic (for recency_lib.engines.sequence_statistic, with control_mean 0:
    in layer 1 the earlier keys are exchangeable, so every within-row contrast of them has mean 0).

    For each query i = FAR + 1 .. n (1-based): D_i = S_{i,i-NEAR} - S_{i,i-FAR}, the preference for the
    nearer of two keys at fixed distances, and K_i = S_{i,FAR} - S_{i,1}, the preference between two keys
    at fixed positions; then D_n - D_{FAR+1} and K_n - K_{FAR+1}. A within-row difference is what the
    softmax sees (adding a constant to a row changes nothing), so a bias that depends on i - j alone
    keeps D_i constant in i, and one that depends on the keys' positions keeps K_i constant.
    Returns (B, layers, 2 (n - FAR) + 2): the D_i, the K_i, then the two differences."""
    n = scores.shape[-1]
    if n < FAR + 2:
        raise ValueError(
            f"n={n} is out of range; allowed: n >= {FAR + 2} (two queries past key {FAR})"
        )
    i = np.arange(FAR, n)  # 0-based queries FAR+1 .. n
    dist = scores[..., i, i - NEAR] - scores[..., i, i - FAR]  # (B, layers, n - FAR)
    pos = scores[..., i, FAR - 1] - scores[..., i, 0]
    return np.concatenate(
        [dist, pos, dist[..., -1:] - dist[..., :1], pos[..., -1:] - pos[..., :1]], axis=-1
    )


def trend_steps(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """Per sequence and layer (B, layers, 2): the trend of the layer's scores (features.trend: the mean
    step between two earlier keys) and its change from the layer before, trend(l) - trend(l - 1).
    Layer 1 repeats its own trend in the second column: it is the control, whose mean is 0 exactly
    (its earlier keys are exchangeable), so ``sequence_statistic(..., control_mean=0.0)`` uses it as
    the control variate of both columns of every layer."""
    B, L = scores.shape[:2]
    level = np.stack([trend(scores[:, l]) for l in range(L)], axis=1)  # (B, layers)
    step = np.concatenate([level[:, :1], np.diff(level, axis=1)], axis=1)
    return np.stack([level, step], axis=-1)


def ordered_rows(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """A per-sequence statistic for ``recency_lib.engines.sequence_statistic``: for each layer, 1 when the
    sequence's own score matrix satisfies Definition 1 (every row strictly increasing up to the diagonal),
    then for each query i = 1..n, 1 when row i is strictly increasing; else 0. Returns (B, layers, n + 1)."""
    s = np.asarray(scores, dtype=float)
    if s.ndim != 4 or s.shape[-1] != s.shape[-2]:
        raise ValueError(f"scores has shape {s.shape}; allowed: (B, layers, n, n)")
    n = s.shape[-1]
    ii, jj = adjacent_index(n)
    up = s[..., ii, jj] > s[..., ii, jj - 1]  # (B, layers, steps)
    rows = np.ones(s.shape[:2] + (n,), dtype=bool)
    for i in range(1, n):
        rows[..., i] = np.all(up[..., ii == i], axis=-1)
    return np.concatenate([np.all(rows, axis=-1, keepdims=True), rows], axis=-1).astype(float)


def order_changes(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """A per-sequence statistic for ``recency_lib.engines.sequence_statistic``: for each layer, the share of
    the comparisons the recency probability counts (S_ik against S_ij, j < k < i) whose outcome differs from
    the first layer's in the same sequence (0 in layer 1). Near 0 in every layer, each sequence's recency
    probability is nearly the same in every layer. Returns (B, layers, 1)."""
    n = scores.shape[-1]
    i, j, k = (
        np.array(t)
        for t in zip(*[(q, a, b) for q in range(n) for a in range(q) for b in range(a + 1, q)])
    )
    if not i.size:
        raise ValueError(f"n={n} is out of range; allowed: n >= 3 (a query with two earlier keys)")
    order = np.sign(scores[..., i, k] - scores[..., i, j])  # (B, layers, triples)
    return np.mean(order != order[:, :1], axis=-1, keepdims=True)


# -- statistics of a simulated result ----------------------------------------------------------------

#: The estimators of the adjacent steps behind a Definition-1 verdict (``SimResult.steps``).
ESTIMATOR_NAMES = {"cv": "control variates", "plain": "plain means"}


def estimator_name(estimator: str = "cv") -> str:
    """The words for an estimator of the steps, "control variates" or "plain means", for the prose
    next to a Definition-1 verdict."""
    return ESTIMATOR_NAMES[_estimator(estimator)]


def rp(res: SimResult, layer: int) -> tuple[float, float]:
    """(recency probability, SE) of 1-based ``layer``, the book's one estimate of it (SimResult.rp: with
    the first layer's recency probability, exactly 1/2 in expectation, as a control variate from layer 2
    on; plain in layer 1, under RoPE, or where the control leaves no error to estimate)."""
    value, se, _ = res.rp(layer)
    return value, se


def rp_layers(res: SimResult) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rp` of every layer: (values, SEs), each (layers,)."""
    pairs = np.array([rp(res, l) for l in range(1, res.config.layers + 1)], dtype=float)
    return pairs[:, 0], pairs[:, 1]


def rp_z(res: SimResult, layer: int) -> float:
    """(RP - 0.5) / SE of 1-based ``layer``: positive = recency, negative = primacy."""
    return zscore(*rp(res, layer), 0.5)


def rp_gap(res_a: SimResult, res_b: SimResult, layer: int) -> tuple[float, float]:
    """RP of ``res_a`` minus RP of ``res_b`` in 1-based ``layer``, with the two SEs combined as if
    independent (an upper bound when the runs share their random stream and correlate positively,
    as the settings of one seed do)."""
    (a, sa), (b, sb) = rp(res_a, layer), rp(res_b, layer)
    return a - b, math.hypot(sa, sb)


def rps(results: dict, layer: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, recency probability, SE) of 1-based ``layer`` for results keyed by a number (alpha, d),
    sorted by key."""
    keys = sorted(results)
    pairs = np.array([rp(results[k], layer) for k in keys], dtype=float).reshape(len(keys), 2)
    return np.array(keys, dtype=float), pairs[:, 0], pairs[:, 1]


def trends(results: dict, layer: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, control-variate trend, SE) of 1-based ``layer`` for results keyed by a number (alpha, d),
    sorted by key: the mean step between earlier keys, what :func:`s2_order` reads for layer 2 (a
    statistic of companion.estimators among the results: its own trend)."""
    keys = sorted(results)
    pairs = [StepEstimate.of(results[k], layer) for k in keys]
    m = np.array([p.trend for p in pairs])
    e = np.array([p.trend_se for p in pairs])
    return np.array(keys, dtype=float), m, e


def direction(res: SimResult, layer: int, family: int = 1) -> str:
    """The order the recency probability of 1-based ``layer`` resolves: "recency", "primacy" or
    "no order resolved", at the z of ``family`` comparisons."""
    word = rp_direction(*rp(res, layer), family=family)
    return "no order resolved" if word == "none" else word


def definition1(res, layer: int, family: int = 1, estimator: str = "cv") -> str:
    """Definition 1 on the mean scores of 1-based ``layer`` ("holds" / "violated" / "undecided"), every
    adjacent difference tested at the z of ``family`` matrices' worth of comparisons, the differences
    estimated by ``estimator`` ("cv": control variates, the verdicts'; "plain": sample means). ``res`` a
    SimResult, or a statistic of companion.estimators (its second layer, its own estimator)."""
    if not isinstance(res, SimResult):
        return StepEstimate.of(res).decision(family=family).word
    return res.decision(layer, family=family, estimator=_estimator(estimator)).word


def _estimator(estimator: str) -> str:
    if not isinstance(estimator, str) or estimator not in ESTIMATOR_NAMES:
        raise ValueError(
            f"estimator={estimator!r} is not allowed; allowed: one of {', '.join(map(repr, ESTIMATOR_NAMES))}"
        )
    return estimator


@dataclass(frozen=True)
class Step:
    """One adjacent difference S_ij - S_i,j-1 of a mean score matrix: ``mean`` ± ``se``, its ``z`` and
    its 1-based query ``i`` and key ``j``."""

    mean: float
    se: float
    z: float
    i: int
    j: int


@dataclass(frozen=True)
class StepTally:
    """The adjacent steps S_ij - S_i,j-1 (1 < j <= i) of one layer at a z threshold: how many are
    resolved up / down / not, and the least resolved one (``smallest``)."""

    up: int
    down: int
    unresolved: int
    smallest: Step


def earlier_steps(n: int) -> tuple[np.ndarray, np.ndarray]:
    """0-based (i, j) of the adjacent steps S_ij - S_i,j-1 between two earlier keys (2 <= j < i <= n,
    1-based), the steps that carry the order (the diagonal steps are large by construction)."""
    ii, jj = adjacent_index(n)
    off = jj < ii
    return ii[off], jj[off]


def step_tally(res: SimResult, layer: int, z: float, estimator: str = "cv") -> StepTally:
    """:class:`StepTally` of 1-based ``layer`` of ``res`` at ``z`` (e.g. a verdict's
    ``numbers["z_threshold"]``), the steps estimated by ``estimator`` ("cv": control variates, the
    estimator of every verdict; "plain": sample means)."""
    layer = check_int("layer", layer, 1, res.config.layers)
    z = check_real("z", z, lo=0.0, allowed="a number >= 0")
    ii, jj = adjacent_index(res.config.n)
    mean, sem = res.steps(_estimator(estimator))
    m, e = mean[layer - 1][ii, jj], sem[layer - 1][ii, jj]
    zs = np.array([zscore(a, b) for a, b in zip(m, e)])
    k = int(np.argmin(zs))
    up, down = int(np.sum(zs > z)), int(np.sum(zs < -z))
    return StepTally(
        up,
        down,
        int(zs.size) - up - down,
        Step(float(m[k]), float(e[k]), float(zs[k]), int(ii[k]) + 1, int(jj[k]) + 1),
    )


def smallest_step(res: SimResult, layer: int, estimator: str = "cv") -> Step:
    """The least resolved (smallest z) adjacent difference of 1-based ``layer``, estimated with
    ``estimator`` ("cv": control variates, what the verdicts use; "plain": sample means)."""
    return step_tally(res, layer, 0.0, estimator).smallest


def step_counts(
    res: SimResult, layer: int, family: int = 1, estimator: str = "cv"
) -> dict[str, int]:
    """How the adjacent differences S_ij - S_i,j-1 of 1-based ``layer`` fall at the z of Definition 1
    (:func:`definition1`, ``family`` matrices): "steps up" (resolved > 0), "steps down" (resolved
    < 0) and "unresolved"."""
    t = step_tally(res, layer, z_for(max(1, family * adjacent_pairs(res.config.n))), estimator)
    return {"steps up": t.up, "steps down": t.down, "unresolved": t.unresolved}


def definition1_tally(
    results, *, first_layer: int = 2, family: int | None = None, estimator: str = "cv"
) -> dict[str, int]:
    """How many of the matrices of layers ``first_layer``..L of ``results`` have Definition 1
    "holds" / "violated" / "undecided" (and "matrices": how many there are), tested as one family of
    ``family`` matrices (default: every matrix of every result, the family of
    :func:`verdict_grid_rows`, so the counts match that table)."""
    results = list(results)
    k = family if family is not None else sum(r.config.layers for r in results)
    k = check_int("family", k, 1)
    words = [
        definition1(r, l, k, estimator)
        for r in results
        for l in range(first_layer, r.config.layers + 1)
    ]
    return {
        "holds": words.count("holds"),
        "violated": words.count("violated"),
        "undecided": words.count("undecided"),
        "matrices": len(words),
    }


@dataclass(frozen=True)
class StepEstimate:
    """Every adjacent step S_ij - S_i,j-1 (1 <= j <= i) of one mean score matrix, ``mean`` ± ``sem``
    (``recency_lib.metrics.adjacent_index`` order), and their trend (the mean of the steps between earlier
    keys) ``trend`` ± ``trend_se``; ``scale`` the size of the scores (what float64 resolves depends on
    it), ``config`` the setting and its ``samples``, ``estimator`` in words, ``layer`` 1-based."""

    mean: np.ndarray
    sem: np.ndarray
    trend: float
    trend_se: float
    scale: float
    config: SimConfig
    estimator: str
    layer: int = 2

    @classmethod
    def of_result(cls, res: SimResult, layer: int, estimator: str = "cv") -> StepEstimate:
        """A result's steps of 1-based ``layer`` (control variates: layer 1's steps, mean 0 exactly)."""
        ii, jj = adjacent_index(res.config.n)
        mean, sem = res.steps(_estimator(estimator))
        cvt = estimator == "cv"
        t = (
            (res.trend_cv_mean if cvt else res.trend_mean)[layer - 1],
            (res.trend_cv_sem if cvt else res.trend_sem)[layer - 1],
        )
        return cls(
            mean[layer - 1][ii, jj],
            sem[layer - 1][ii, jj],
            float(t[0]),
            float(t[1]),
            float(np.nanmax(np.abs(res.score_mean[layer - 1]))),
            res.config,
            res.estimator_name(layer, estimator),
            layer,
        )

    @classmethod
    def of_statistic(cls, stat, estimator: str | None = None) -> StepEstimate:
        """The second layer of a statistic of :mod:`companion.estimators` (its steps, then its trend);
        ``estimator`` defaults to the one that module uses for the setting's normalization."""
        n = stat.config.n
        estimator = estimator or (
            "Gram-matrix control variates"
            if stat.config.norm == "none"
            else "first-order control variates"
        )
        k = n * (n - 1) // 2
        scale = math.sqrt(stat.config.d) if stat.config.norm != "none" else 1.0
        return cls(
            stat.mean[1][:k],
            stat.sem[1][:k],
            float(stat.mean[1][k]),
            float(stat.sem[1][k]),
            scale,
            stat.config.replace(samples=stat.samples),
            estimator,
            2,
        )

    @classmethod
    def of(cls, x, layer: int = 2) -> StepEstimate:
        """:meth:`of_result` of a SimResult (its control-variate steps), :meth:`of_statistic` of a statistic."""
        return cls.of_result(x, layer) if isinstance(x, SimResult) else cls.of_statistic(x)

    def decision(self, z: float | None = None, family: int = 1):
        """Definition 1 on these steps at ``z`` (default: the family-wise z of ``family`` matrices), by
        recency_lib's one rule (recency_lib.metrics.definition1)."""
        return metrics_definition1(
            self.mean, self.sem, scale=self.scale, z=z, family=family, estimator=self.estimator
        )

    def smallest(self) -> Step:
        """The least resolved step (the smallest z)."""
        ii, jj = adjacent_index(self.config.n)
        zs = np.array([zscore(a, b) for a, b in zip(self.mean, self.sem)])
        k = int(np.argmin(zs))
        return Step(
            float(self.mean[k]), float(self.sem[k]), float(zs[k]), int(ii[k]) + 1, int(jj[k]) + 1
        )


def step_z(res: SimResult, layer: int) -> np.ndarray:
    """z-scores of the adjacent differences between two earlier keys of 1-based ``layer`` (plain means)."""
    ii, jj = earlier_steps(res.config.n)
    return np.array(
        [
            zscore(a, b)
            for a, b in zip(res.diff_mean[layer - 1][ii, jj], res.diff_sem[layer - 1][ii, jj])
        ]
    )


def pairing_gain(res: SimResult, layer: int) -> float:
    """How much pairing helps Definition 1: the median, over the steps between earlier keys, of the
    SE that the two scores' own SEs would give if independent, divided by the SE of the paired
    per-sequence difference (``diff_sem``). NaN without such a step (n < 3)."""
    ii, jj = earlier_steps(res.config.n)
    s = res.score_sem[layer - 1]
    return _median_ratio(np.hypot(s[ii, jj], s[ii, jj - 1]), res.diff_sem[layer - 1][ii, jj])


def cv_gain(res: SimResult, layer: int) -> float:
    """How much the control variates shrink the standard error of a step between earlier keys of 1-based
    ``layer``: the median of plain SE / control-variate SE over those steps (1 in layer 1, which is the
    control). NaN without such a step (n < 3)."""
    layer = check_int("layer", layer, 1, res.config.layers)
    ii, jj = earlier_steps(res.config.n)
    return _median_ratio(res.diff_sem[layer - 1][ii, jj], res.diff_cv_sem[layer - 1][ii, jj])


def _median_ratio(a: np.ndarray, b: np.ndarray) -> float:
    ok = b > 0
    return float(np.median(a[ok] / b[ok])) if np.any(ok) else math.nan


def estimator_gap(res: SimResult, layer: int) -> float:
    """The largest gap between the plain and the control-variate mean of a step between earlier keys of
    1-based ``layer``, in plain standard errors (the two estimate the same mean; the gap is the control's
    correction, whose error is about the plain one when the control variates cut the error a lot). NaN
    without such a step."""
    layer = check_int("layer", layer, 1, res.config.layers)
    ii, jj = earlier_steps(res.config.n)
    plain, cvm, se = (
        getattr(res, f)[layer - 1][ii, jj] for f in ("diff_mean", "diff_cv_mean", "diff_sem")
    )
    ok = se > 0
    return float(np.max(np.abs(plain[ok] - cvm[ok]) / se[ok])) if np.any(ok) else math.nan


def typical_step_se(res: SimResult, layer: int, estimator: str = "cv") -> float:
    """The median standard error of the steps S_ij - S_i,j-1 between two earlier keys (j < i) of
    1-based ``layer``, with ``estimator``: what one step must exceed (times z) to be resolved. NaN
    without such a step (n < 3)."""
    ii, jj = earlier_steps(res.config.n)
    return float(np.median(res.steps(estimator)[1][layer - 1][ii, jj])) if ii.size else math.nan


def first_key_excess(res: SimResult, layer: int) -> tuple[float, float]:
    """How much more attention the last query gives the first key in 1-based ``layer`` than uniform
    attention 1/n would, as a fraction: n A_{n,1} - 1, and its SE. Positive: primacy in weights."""
    n = res.config.n
    i = n - 1
    return float(n * res.attn_mean[layer - 1, i, 0] - 1.0), float(n * res.attn_sem[layer - 1, i, 0])


def s2_order(res: SimResult) -> tuple[str, float, float]:
    """The book's evidence of order among the earlier keys of S^(2): (what, value, SE), where a
    positive value means recency and 0 means no order: the control-variate trend
    (``res.trend_cv_mean`` / ``res.trend_cv_sem``, the mean off-diagonal step of S^(2) with its variance
    reduced by the layer-1 steps) where the result carries it, else the recency probability of S^(2)
    minus 1/2 (its SE is exact: a mean over sequences). A statistic of companion.estimators: its trend."""
    if not isinstance(res, SimResult) and hasattr(res, "sem"):
        est = StepEstimate.of(res)
        return "mean off-diagonal step of $S^{(2)}$", est.trend, est.trend_se
    mean, sem = getattr(res, "trend_cv_mean", None), getattr(res, "trend_cv_sem", None)
    if mean is not None and sem is not None:
        mean, sem = (
            np.atleast_1d(np.asarray(mean, dtype=float)),
            np.atleast_1d(np.asarray(sem, dtype=float)),
        )
        k = 1 if mean.size == res.config.layers > 1 else 0  # per layer: S^(2); else the one value
        return "mean off-diagonal step of $S^{(2)}$", float(mean[k]), float(sem[k])
    value, se = rp(res, 2)
    return "RP of $S^{(2)}$ − 0.5", value - 0.5, se


def h_rise(res: SimResult) -> tuple[float, float]:
    """The simulated rise of the key factor over the keys, h(n)/h(1) - 1 with h(j) = 1/||x_j^(1)||
    (Eq. (40)), and its delta-method SE (:func:`simulated_h` at the last key)."""
    h, se = simulated_h(res)
    return float(h[-1]) - 1.0, float(se[-1])


#: The z at which the sign of a tiny effect counts as settled (Theorem 1's trend at z >= 5).
SETTLE_Z = 5.0


def order_word(value: float, se: float, z: float = SETTLE_Z) -> str:
    """The order a step-like estimate resolves at ``z`` standard errors: "recency" (above 0),
    "primacy" (below) or "no order resolved"."""
    zz = zscore(value, se)
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


def cosine_deviations(cosines: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alphas, mean cosine - alpha, SE), sorted by alpha, from ``cosines``: alpha -> (mean, SE) of
    the input tokens' cosine similarity (inputs.input_cosine_similarity at one d): Eq. (6)'s claim
    is that the middle one is 0, up to the second-order term -alpha (1 - alpha^2) / (2d)."""
    a = np.array(sorted(cosines), dtype=float)
    m = np.array([cosines[x][0] for x in sorted(cosines)], dtype=float)
    e = np.array([cosines[x][1] for x in sorted(cosines)], dtype=float)
    return a, m - a, e


def distance_profiles(stat, estimator: str = "cv") -> dict:
    """The D_i and K_i of :func:`distance_contrasts` from a ``recency_lib.engines.SequenceStatistic``:
    {"queries": 1-based i, "D": (mean, SE), "K": (mean, SE), "D_change": (mean, SE), "K_change": (mean, SE)},
    each per layer (layers, queries) or (layers,), and "estimator": the one read ("cv", control variates,
    where ``stat`` has them and ``estimator`` asks for them; else "plain")."""
    used = "cv" if estimator == "cv" and stat.cv_mean is not None else "plain"
    mean, sem = (stat.cv_mean, stat.cv_sem) if used == "cv" else (stat.mean, stat.sem)
    m = (mean.shape[-1] - 2) // 2
    n = m + FAR
    return {
        "queries": np.arange(FAR + 1, n + 1),
        "D": (mean[:, :m], sem[:, :m]),
        "K": (mean[:, m : 2 * m], sem[:, m : 2 * m]),
        "D_change": (mean[:, -2], sem[:, -2]),
        "K_change": (mean[:, -1], sem[:, -1]),
        "estimator": used,
    }


#: The recency probability under the book's convention and the authors' later one.
RP_CONVENTIONS = ("tie counts ½", "strict", "strict, float32")


def rp_conventions(
    cfg: SimConfig, samples: int | None = None, batch: int = 4096
) -> dict[str, tuple]:
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
        raise ValueError(
            f"cfg.n={n} is out of range; allowed: n >= 3 (a triple j < k < i must exist)"
        )
    scores, _ = sample_trajectories(cfg, samples)  # (samples, layers, n, n) float64
    tie_half, strict = np.empty((samples, L)), np.empty((samples, L))
    for l in range(L):
        s = scores[:, l]
        later, tied = later_and_tied_counts(s, tie_tolerance(s))
        tie_half[:, l], strict[:, l] = (later + 0.5 * tied) / total, later / total
    f32 = np.empty((samples, L))
    for k, start in enumerate(range(0, samples, batch)):
        size = min(batch, samples - start)
        rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,)))
        x = dense_tokens(cfg, rng, size).astype(np.float32)  # (size, n, d) float32
        for l, s, _, _ in layer_steps(
            x, norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps, layers=L, centred=False
        ):
            later, _ = later_and_tied_counts(s.astype(np.float64), np.zeros(size))
            f32[start : start + size, l] = later / total
    return {
        name: (v.mean(axis=0), v.std(axis=0, ddof=1) / math.sqrt(samples))
        for name, v in zip(RP_CONVENTIONS, (tie_half, strict, f32))
    }


def simulated_h(res: SimResult, state: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The simulated counterpart of h(j) (Eq. (40)-(41)), normalized to 1 at j = 1, with its SEM.

    h(j) = 1 / ||x_j^(1)||: the simulation measures m_j = E ||x_j^(state)||^2 (``sq_norm_mean``;
    state 1 = the output of layer 1, fed to layer 2; for LayerNorm its centred part). Returned:
    sqrt(m_1 / m_j) and its delta-method standard error
    sqrt(m_1 / m_j) * 0.5 * sqrt((s_1 / m_1)^2 + (s_j / m_j)^2), which ignores the covariance of
    m_1 and m_j (both from the same samples); the value at j = 1 is exactly 1 with error 0.
    """
    if not (0 <= state < res.sq_norm_mean.shape[0]):
        raise ValueError(
            f"state={short(state)} is out of range; allowed: 0 .. {res.sq_norm_mean.shape[0] - 1} "
            f"(layers={res.config.layers}; state l is the input of layer l + 1)"
        )
    m, s = res.sq_norm_mean[state], res.sq_norm_sem[state]
    h = np.sqrt(m[0] / m)
    sem = h * 0.5 * np.sqrt((s[0] / m[0]) ** 2 + (s / m) ** 2)
    sem[0] = 0.0
    return h, sem
