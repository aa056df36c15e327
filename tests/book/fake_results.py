"""Constructed simulation results with chosen numbers, for the tests of the verdicts, the claims and
the chapters' modules: every branch of a decision without a simulation."""

import numpy as np

from recency_lib import SimConfig, SimResult
from recency_lib.features import adjacent_index


def fake(
    cfg: SimConfig,
    rp=0.5,
    rp_se=1e-3,
    step=0.0,
    step_se=1e-3,
    score=1.0,
    score_se=1e-3,
    trend=None,
    trend_se=None,
) -> SimResult:
    """A SimResult with chosen numbers: every layer's RP, every adjacent difference, every score,
    and the control-variate trend (default: RP - 1/2 with the RP's SE, so an RP above 1/2 reads as
    recency in both). Control-variate steps and RPs equal the plain ones."""
    L, n = cfg.layers, cfg.n
    lower = np.tri(n, dtype=bool)
    s = np.full((L, n, n), np.nan)
    s[:, lower] = score
    e = np.where(np.isnan(s), np.nan, score_se)
    diff = np.full((L, n, n), np.nan)
    ii, jj = adjacent_index(n)
    diff[:, ii, jj] = step
    dse = np.where(np.isnan(diff), np.nan, step_se)
    rps = np.broadcast_to(np.asarray(rp, dtype=float), (L,)).copy()
    tr = np.broadcast_to(
        np.asarray(rps - 0.5 if trend is None else trend, dtype=float), (L,)
    ).copy()
    tse = np.full(L, rp_se if trend_se is None else trend_se)
    rows = np.full((L, n), np.nan)
    rows[:, 2:] = 0.0
    # the control-variate fields carry the plain numbers (what the engines report without a control)
    return SimResult(
        config=cfg,
        engine="gram",
        score_mean=s,
        score_sem=e,
        attn_mean=s,
        attn_sem=e,
        diff_mean=diff,
        diff_sem=dse,
        recency_probability=rps,
        recency_probability_sem=np.full(L, rp_se),
        sq_norm_mean=np.ones((L, n)),
        sq_norm_sem=np.full((L, n), 1e-3),
        diff_cv_mean=diff,
        diff_cv_sem=dse,
        row_trend_mean=rows,
        row_trend_sem=rows + 1e-3,
        row_trend_cv_mean=rows,
        row_trend_cv_sem=rows + 1e-3,
        trend_mean=tr,
        trend_sem=tse * 10,
        trend_cv_mean=tr,
        trend_cv_sem=tse,
        recency_probability_cv=rps,
        recency_probability_cv_sem=np.full(L, rp_se),
        block_size=1,
        library_version="test",
        elapsed_seconds=2.0,
    )


def thm(d, **kw):
    """A constructed result in Theorem 1's setting (LayerNorm, alpha = 0, two layers) at
    hidden size ``d``."""
    return fake(SimConfig(alpha=0.0, norm="layernorm", n=10, d=d, layers=2), **kw)
