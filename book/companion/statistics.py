"""Statistics of simulated sequences and results that the pages quote. A per-sequence statistic
maps one block, ``scores, attention`` (B, layers, n, n), to (B, layers, k); the results cache keys
it by this module's source, so it imports nothing of the book but :mod:`companion.significance`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from recency_lib.config import SimConfig
from recency_lib.features import adjacent_index, trend
from recency_lib.metrics import definition1 as metrics_definition1
from recency_lib.metrics import sign
from recency_lib.norms import NORMS
from recency_lib.result import ESTIMATORS, SimResult
from recency_lib.validation import check_choice, check_int

from .significance import adjacent_pairs, z_for, zscore

# -- per-sequence statistics -----------------------------------------------------------------------

#: Chapter 7's two distances: D_i = S_{i,i-NEAR} - S_{i,i-FAR} and K_i = S_{i,FAR} - S_{i,1}.
NEAR, FAR = 1, 4


def distance_contrasts(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """Chapter 7's (B, layers, 2 (n - FAR) + 2): D_i and K_i of queries i > FAR, then
    D_n - D_{FAR+1} and K_n - K_{FAR+1} (a bias of i - j alone keeps D_i constant)."""
    n = scores.shape[-1]
    if n < FAR + 2:
        raise ValueError(f"n={n} is out of range; allowed: n >= {FAR + 2}")
    i = np.arange(FAR, n)  # 0-based queries FAR+1 .. n
    dist = scores[..., i, i - NEAR] - scores[..., i, i - FAR]  # (B, layers, n - FAR)
    pos = scores[..., i, FAR - 1] - scores[..., i, 0]
    change = [dist[..., -1:] - dist[..., :1], pos[..., -1:] - pos[..., :1]]
    return np.concatenate([dist, pos, *change], axis=-1)


def trend_steps(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """(B, layers, 2): each layer's trend and its change from the last (layer 1: its trend)."""
    L = scores.shape[1]
    level = np.stack([trend(scores[:, l]) for l in range(L)], axis=1)  # (B, layers)
    step = np.concatenate([level[:, :1], np.diff(level, axis=1)], axis=1)
    return np.stack([level, step], axis=-1)


def ordered_rows(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """(B, layers, n + 1): 1 where the sequence's matrix meets Definition 1, then per row."""
    n = scores.shape[-1]
    ii, jj = adjacent_index(n)
    up = scores[..., ii, jj] > scores[..., ii, jj - 1]  # (B, layers, steps)
    rows = np.ones((*scores.shape[:2], n), dtype=bool)
    for i in range(1, n):
        rows[..., i] = np.all(up[..., ii == i], axis=-1)
    return np.concatenate([np.all(rows, axis=-1, keepdims=True), rows], axis=-1).astype(float)


def order_changes(scores: np.ndarray, attention: np.ndarray) -> np.ndarray:
    """(B, layers, 1): the share of comparisons S_ik vs S_ij (j < k < i) unlike layer 1's."""
    n = scores.shape[-1]
    triples = [(q, a, b) for q in range(n) for a in range(q) for b in range(a + 1, q)]
    i, j, k = (np.array(t) for t in zip(*triples))
    order = np.sign(scores[..., i, k] - scores[..., i, j])  # (B, layers, triples)
    return np.mean(order != order[:, :1], axis=-1, keepdims=True)


def distance_profiles(stat, estimator: str = "cv") -> dict:
    """(mean, SE) per layer of :func:`distance_contrasts`' parts, its "queries" and "estimator"."""
    used = "cv" if estimator == "cv" and stat.cv_mean is not None else "plain"
    mean, sem = (stat.cv_mean, stat.cv_sem) if used == "cv" else (stat.mean, stat.sem)
    m = (mean.shape[-1] - 2) // 2
    return {
        "queries": np.arange(FAR + 1, m + FAR + 1),
        "D": (mean[:, :m], sem[:, :m]),
        "K": (mean[:, m : 2 * m], sem[:, m : 2 * m]),
        "D_change": (mean[:, -2], sem[:, -2]),
        "K_change": (mean[:, -1], sem[:, -1]),
        "estimator": used,
    }


# -- the sign of an estimate -----------------------------------------------------------------------

#: The z at which the sign of a tiny effect counts as settled (Theorem 1's trend).
SETTLE_Z = 5.0

#: The order a sign resolves, in words.
ORDER_WORDS = {1: "recency", -1: "primacy", 0: "no order resolved"}


def order_word(value: float, se: float, z: float = SETTLE_Z) -> str:
    """ "recency", "primacy" or "no order resolved": the sign of a step-like estimate at ``z``."""
    return ORDER_WORDS[sign(value, se, z)]


def sequences_needed(se: float, samples: int, effect: float, z: float = SETTLE_Z) -> float:
    """Sequences at which ``effect`` lies ``z`` SE from 0, given SE ``se`` at ``samples``."""
    return samples * (z * se / effect) ** 2 if effect else math.inf


# -- the recency probability -----------------------------------------------------------------------


def rp(res: SimResult, layer: int) -> tuple[float, float]:
    """(recency probability, SE) of 1-based ``layer``: the book's one estimate (SimResult.rp)."""
    return res.rp(layer)[:2]


def rp_layers(res: SimResult) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rp` of every layer: (values, SEs), each (layers,)."""
    pairs = np.array([rp(res, l) for l in range(1, res.config.layers + 1)], dtype=float)
    return pairs[:, 0], pairs[:, 1]


def rp_z(res: SimResult, layer: int) -> float:
    """(RP - 0.5) / SE of 1-based ``layer``: positive = recency."""
    return zscore(*rp(res, layer), 0.5)


def rp_gap(res_a: SimResult, res_b: SimResult, layer: int) -> tuple[float, float]:
    """RP of ``res_a`` - RP of ``res_b`` in 1-based ``layer``; SEs combined as if independent."""
    (a, sa), (b, sb) = rp(res_a, layer), rp(res_b, layer)
    return a - b, math.hypot(sa, sb)


def _keyed(pairs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, means, SEs) of ``pairs``, number -> (mean, SE), sorted by key."""
    keys = sorted(pairs)
    values = np.array([pairs[k] for k in keys], dtype=float).reshape(len(keys), 2)
    return np.array(keys, dtype=float), values[:, 0], values[:, 1]


def rps(results: dict, layer: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, RP, SE) of 1-based ``layer`` for results keyed by a number, sorted by key."""
    return _keyed({k: rp(r, layer) for k, r in results.items()})


def direction(res: SimResult, layer: int, family: int = 1) -> str:
    """The order (:data:`ORDER_WORDS`) the RP of ``layer`` resolves at ``family``'s z."""
    return ORDER_WORDS[sign(*rp(res, layer), z_for(family), 0.5)]


# -- Definition 1 and its steps --------------------------------------------------------------------


def estimator_name(estimator: str = "cv") -> str:
    """ "control variates" or "plain means": an estimator of the steps in words."""
    return ESTIMATORS[check_choice("estimator", estimator, tuple(ESTIMATORS))]


def definition1(res, layer: int, family: int = 1, estimator: str = "cv") -> str:
    """Definition 1's word on ``layer`` at ``family``'s z (of a statistic: its layer 2)."""
    if not isinstance(res, SimResult):
        return StepEstimate.of(res).decision(family=family).word
    return res.decision(layer, family=family, estimator=estimator).word


@dataclass(frozen=True)
class Step:
    """One step S_ij - S_i,j-1: ``mean`` ± ``se``, its ``z``, 1-based query ``i`` and key ``j``."""

    mean: float
    se: float
    z: float
    i: int
    j: int


@dataclass(frozen=True)
class StepTally:
    """How many steps of one layer are resolved up / down / not at a z, and the least resolved."""

    up: int
    down: int
    unresolved: int
    smallest: Step


@dataclass(frozen=True)
class StepEstimate:
    """A matrix's steps (``adjacent_index`` order), their mean between earlier keys and scale."""

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
        """A result's steps of 1-based ``layer`` by ``estimator`` ("cv" or "plain")."""
        layer = check_int("layer", layer, 1, res.config.layers)
        ii, jj = adjacent_index(res.config.n)
        mean, sem = res.steps(estimator)
        field = "trend_cv" if estimator == "cv" else "trend"
        t, te = (getattr(res, f"{field}_{k}")[layer - 1] for k in ("mean", "sem"))
        scale = float(np.nanmax(np.abs(res.score_mean[layer - 1])))
        name = res.estimator_name(layer, estimator)
        m, e = mean[layer - 1][ii, jj], sem[layer - 1][ii, jj]
        return cls(m, e, float(t), float(te), scale, res.config, name, layer)

    @classmethod
    def of_statistic(cls, stat) -> StepEstimate:
        """The second layer of a statistic of :mod:`companion.estimators` (its steps, its trend)."""
        cfg = stat.config.replace(samples=stat.samples)
        k = adjacent_pairs(cfg.n)
        mean, sem = stat.mean[1], stat.sem[1]  # the steps, then their trend
        scale = NORMS[cfg.norm].score_scale(cfg.d)  # a diagonal score: sqrt(d) after LayerNorm
        kind = "Gram-matrix" if cfg.norm == "none" else "first-order"
        est = f"{kind} control variates"
        return cls(mean[:k], sem[:k], float(mean[k]), float(sem[k]), scale, cfg, est)

    @classmethod
    def of(cls, x, layer: int = 2) -> StepEstimate:
        """:meth:`of_result` (control variates) of a SimResult, else :meth:`of_statistic`."""
        return cls.of_result(x, layer) if isinstance(x, SimResult) else cls.of_statistic(x)

    def decision(self, z: float | None = None, family: int = 1):
        """Definition 1 on these steps at ``z`` (default: the z of ``family`` matrices)."""
        return metrics_definition1(
            self.mean, self.sem, scale=self.scale, z=z, family=family, estimator=self.estimator
        )

    def z(self) -> np.ndarray:
        """Each step's z-score."""
        return np.array([zscore(m, e) for m, e in zip(self.mean, self.sem)])

    def smallest(self) -> Step:
        """The least resolved step (the smallest z)."""
        zs = self.z()
        k = int(np.argmin(zs))
        ii, jj = adjacent_index(self.config.n)
        mean, se = float(self.mean[k]), float(self.sem[k])
        return Step(mean, se, float(zs[k]), int(ii[k]) + 1, int(jj[k]) + 1)


def step_tally(res: SimResult, layer: int, z: float, estimator: str = "cv") -> StepTally:
    """:class:`StepTally` of 1-based ``layer`` at ``z``, the steps by ``estimator``."""
    est = StepEstimate.of_result(res, layer, estimator)
    zs = est.z()
    up, down = int(np.sum(zs > z)), int(np.sum(zs < -z))
    return StepTally(up, down, int(zs.size) - up - down, est.smallest())


def smallest_step(res: SimResult, layer: int, estimator: str = "cv") -> Step:
    """The least resolved step of 1-based ``layer``, by ``estimator`` ("cv" or "plain")."""
    return StepEstimate.of_result(res, layer, estimator).smallest()


def step_counts(res: SimResult, layer: int, family: int = 1, estimator: str = "cv") -> dict:
    """Steps up, down and unresolved of ``layer`` at the z of :func:`definition1`."""
    t = step_tally(res, layer, z_for(family * adjacent_pairs(res.config.n)), estimator)
    return {"steps up": t.up, "steps down": t.down, "unresolved": t.unresolved}


def definition1_tally(results, *, first_layer: int = 2, family=None, estimator="cv") -> dict:
    """Definition 1's words (and "matrices") in layers ``first_layer``.., one family."""
    results = list(results)
    k = family or sum(r.config.layers for r in results)
    words = [
        definition1(r, l, k, estimator)
        for r in results
        for l in range(first_layer, r.config.layers + 1)
    ]
    counts = {w: words.count(w) for w in ("holds", "violated", "undecided")}
    return {**counts, "matrices": len(words)}


def earlier_steps(n: int) -> tuple[np.ndarray, np.ndarray]:
    """0-based (i, j) of the steps between two earlier keys (j < i), the steps of the order."""
    ii, jj = adjacent_index(n)
    off = jj < ii
    return ii[off], jj[off]


def _earlier(res: SimResult, layer: int, *fields: str) -> list[np.ndarray]:
    """The (n, n) ``fields`` of 1-based ``layer`` at the steps between earlier keys."""
    ii, jj = earlier_steps(res.config.n)
    return [getattr(res, f)[layer - 1][ii, jj] for f in fields]


def step_z(res: SimResult, layer: int) -> np.ndarray:
    """The z-scores of the steps between earlier keys of 1-based ``layer`` (plain means)."""
    m, e = _earlier(res, layer, "diff_mean", "diff_sem")
    return np.array([zscore(a, b) for a, b in zip(m, e)])


def _median_ratio(a: np.ndarray, b: np.ndarray) -> float:
    ok = b > 0
    return float(np.median(a[ok] / b[ok])) if np.any(ok) else math.nan


def pairing_gain(res: SimResult, layer: int) -> float:
    """The median over the earlier-key steps of independent SE / paired SE."""
    ii, jj = earlier_steps(res.config.n)
    s = res.score_sem[layer - 1]
    return _median_ratio(np.hypot(s[ii, jj], s[ii, jj - 1]), res.diff_sem[layer - 1][ii, jj])


def cv_gain(res: SimResult, layer: int) -> float:
    """The median of plain SE / control-variate SE of the steps between earlier keys."""
    return _median_ratio(*_earlier(res, layer, "diff_sem", "diff_cv_sem"))


def estimator_gap(res: SimResult, layer: int) -> float:
    """The largest |plain - control-variate mean| of a step between earlier keys, in plain SE."""
    plain, cvm, se = _earlier(res, layer, "diff_mean", "diff_cv_mean", "diff_sem")
    ok = se > 0
    return float(np.max(np.abs(plain[ok] - cvm[ok]) / se[ok])) if np.any(ok) else math.nan


def typical_step_se(res: SimResult, layer: int, estimator: str = "cv") -> float:
    """The median SE by ``estimator`` of the steps between earlier keys of ``layer``."""
    ii, jj = earlier_steps(res.config.n)
    return float(np.median(res.steps(estimator)[1][layer - 1][ii, jj])) if ii.size else math.nan


def trends(results: dict, layer: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, trend, SE) of 1-based ``layer`` (:class:`StepEstimate`) of results keyed by number."""
    ests = {k: StepEstimate.of(r, layer) for k, r in results.items()}
    return _keyed({k: (e.trend, e.trend_se) for k, e in ests.items()})


def s2_order(res) -> tuple[str, float, float]:
    """(what, value, SE) of the order among S^(2)'s earlier keys: its trend (> 0: recency)."""
    est = StepEstimate.of(res)
    return "mean off-diagonal step of $S^{(2)}$", est.trend, est.trend_se


# -- other statistics of a result ------------------------------------------------------------------


def first_key_excess(res: SimResult, layer: int) -> tuple[float, float]:
    """n A_{n,1} - 1 and its SE: the last query's excess attention to key 1 (> 0: primacy)."""
    n = res.config.n
    a, se = res.attn_mean[layer - 1, n - 1, 0], res.attn_sem[layer - 1, n - 1, 0]
    return float(n * a - 1.0), float(n * se)


def simulated_h(res: SimResult, state: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """h(j) / h(1), h(j) = 1 / ||x_j^(state)|| (Eqs. (40)-(41)), and its delta-method SE."""
    m, s = res.sq_norm_mean[state], res.sq_norm_sem[state]
    h = np.sqrt(m[0] / m)
    sem = h * 0.5 * np.sqrt((s[0] / m[0]) ** 2 + (s / m) ** 2)
    sem[0] = 0.0
    return h, sem


def h_rise(res: SimResult) -> tuple[float, float]:
    """The simulated rise h(n)/h(1) - 1 of the key factor and its SE (:func:`simulated_h`)."""
    h, se = simulated_h(res)
    return float(h[-1]) - 1.0, float(se[-1])


def cosine_deviations(cosines: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alphas, mean cosine - alpha, SE) from alpha -> (mean, SE): Eq. (6) claims 0."""
    a, m, e = _keyed(cosines)
    return a, m - a, e


#: The recency probability counted three ways (:func:`rp_conventions`).
RP_CONVENTIONS = ("tie counts ½", "strict", "strict, float32")


def rp_conventions(cfg: SimConfig, samples: int | None = None, batch: int = 4096) -> dict:
    """The RP (mean, SE per layer) of ``cfg`` by each of :data:`RP_CONVENTIONS`: a tie counts ½
    (the book's), 0, or 0 in float32 (the authors' later code: its own tokens, no tolerance)."""
    from recency_lib.features import later_and_tied_counts, n_triples, tie_tolerance
    from recency_lib.model import layer
    from recency_lib.sampling import dense_tokens
    from recency_lib.trajectories import sample_trajectories

    samples = cfg.samples if samples is None else samples
    n, L = cfg.n, cfg.layers
    total = n_triples(n)
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
        x = dense_tokens(cfg, rng, size).astype(np.float32)  # (size, n, d)
        for l in range(L):
            x, s, _, _ = layer(x, norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps)
            later, _ = later_and_tied_counts(s.astype(np.float64), np.zeros(size))
            f32[start : start + size, l] = later / total
    return {
        name: (v.mean(axis=0), v.std(axis=0, ddof=1) / math.sqrt(samples))
        for name, v in zip(RP_CONVENTIONS, (tie_half, strict, f32))
    }
