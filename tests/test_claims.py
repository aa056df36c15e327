"""recency_lib.claims: the verdict logic, on constructed results (every branch) and on simulations.

Simulations use fixed seeds, so each test is deterministic; the effects they rely on are tens of
standard errors away from the thresholds (noted where used)."""
import math
import re

import numpy as np
import pytest

from recency_lib import SimConfig, SimResult, claims, conventions as cv, simulate, simulate_many
from recency_lib.metrics import adjacent_index


def fake(cfg: SimConfig, rp=0.5, rp_se=1e-3, step=0.0, step_se=1e-3, score=1.0, score_se=1e-3, trend=None,
         trend_se=None) -> SimResult:
    """A SimResult with chosen numbers: every layer's RP, every adjacent difference, every score, and
    the control-variate trend (default: RP - 1/2 with the RP's SE, so an RP above 1/2 reads as
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
    tr = np.broadcast_to(np.asarray(rps - 0.5 if trend is None else trend, dtype=float), (L,)).copy()
    tse = np.full(L, rp_se if trend_se is None else trend_se)
    rows = np.full((L, n), np.nan)
    return SimResult(config=cfg, engine="gram", score_mean=s, score_sem=e, attn_mean=s, attn_sem=e,
                     diff_mean=diff, diff_sem=dse, recency_probability=rps,
                     recency_probability_sem=np.full(L, rp_se), sq_norm_mean=np.ones((L, n)),
                     sq_norm_sem=np.full((L, n), 1e-3), diff_cv_mean=diff, diff_cv_sem=dse, row_trend_mean=rows,
                     row_trend_sem=rows, row_trend_cv_mean=rows, row_trend_cv_sem=rows, trend_mean=tr,
                     trend_sem=tse * 10, trend_cv_mean=tr, trend_cv_sem=tse, recency_probability_cv=rps,
                     recency_probability_cv_sem=np.full(L, rp_se), block_size=1, library_version="test")


def valid(word: str) -> bool:
    patterns = [re.escape(w).replace(re.escape("{}"), ".+") for w in claims.WORDS]
    return any(re.fullmatch(p, word) for p in patterns)


def thm(d, **kw):
    return fake(SimConfig(alpha=0.0, norm="layernorm", n=10, d=d, layers=2), **kw)


# -- Theorem 1: every branch ---------------------------------------------------------------------------

def test_theorem1_too_small_at_the_papers_d():
    v = claims.theorem1_claim({4: thm(4, rp=0.6), 64: thm(64, rp=0.5)})
    assert v.word == "holds; too small to see at d = 64" and valid(v.word)
    assert v.value == "0.1000 ± 0.0010" and "$d = 4$" in v.measure and v.link == "{prf:ref}`Theorem 1 <thm-1>`"


def test_theorem1_other_branches():
    assert claims.theorem1_claim({4: thm(4, rp=0.6), 64: thm(64, rp=0.6)}).word == "holds in aggregate at d = 64"
    assert claims.theorem1_claim({64: thm(64, rp=0.6, step=0.1)}).word == "holds"      # every step resolved
    assert claims.theorem1_claim({4: thm(4, rp=0.4), 64: thm(64)}).word == "contradicted"
    assert claims.theorem1_claim({4: thm(4), 64: thm(64)}).word == "open"
    with pytest.raises(ValueError, match="results={} is empty"):
        claims.theorem1_claim({})


def test_theorem1_switches_to_the_control_variate_trend_when_a_result_has_it():
    res = thm(64, rp=0.5)
    res.trend_cv_mean, res.trend_cv_sem = 2e-4, 5e-5              # issue 11's estimator (4 SE)
    what, value, se = claims.s2_order(res)
    assert what.startswith("mean off-diagonal step") and (value, se) == (2e-4, 5e-5)
    v = claims.theorem1_claim({64: res})
    assert v.word == "holds in aggregate at d = 64" and v.value == "(2.0 ± 0.5) × 10⁻⁴"
    res.trend_cv_mean, res.trend_cv_sem = np.array([0.0, 3e-4]), np.array([1.0, 1e-4])   # per layer
    assert claims.s2_order(res)[1:] == (3e-4, 1e-4)


# -- Propositions, equations -------------------------------------------------------------------------

def test_proposition1():
    none = SimConfig(norm="none")
    assert claims.proposition1_claim(fake(none)).word == "holds"
    assert claims.proposition1_claim(fake(none, rp=0.6)).word == "contradicted"
    assert claims.proposition1_claim(fake(none, step=0.1)).word == "contradicted"     # Definition 1 holds


def test_proposition3_grid():
    mk = lambda a, **kw: fake(SimConfig(alpha=a), **kw)                               # noqa: E731
    got = claims.proposition3_claim({0.0: mk(0.0), 0.2: mk(0.2, rp=0.6), 0.5: mk(0.5, rp=0.7, step=0.1)})
    assert got.word == "holds; too small to see at α ≤ 0.2" and "α = 0.2" in got.measure
    assert claims.proposition3_claim({0.5: mk(0.5, step=0.1), 0.8: mk(0.8, step=0.1)}).word == "holds"
    assert claims.proposition3_claim({0.5: mk(0.5, step=-0.1)}).word == "contradicted"
    assert claims.proposition3_claim({0.5: mk(0.5, step=0.1), 0.8: mk(0.8)}).word == "holds in part"


def test_eq6():
    from recency_lib.inputs import cosine_bias_second_order

    exact = {a: (a + float(cosine_bias_second_order(a, 64)), 1e-3) for a in (0.0, 0.5)} | {1.0: (1.0, 0.0)}
    assert claims.eq6_claim(exact, 64).word == "holds"
    shifted = {**exact, 0.5: (exact[0.5][0] + 0.02, 1e-3)}           # 20 SE off
    v = claims.eq6_claim(shifted, 64)
    assert v.word == "contradicted" and "α = 0.5" in v.measure


def test_eq5_open_without_a_resolved_score():
    v = claims.eq5_claim({64: thm(64, score=0.0, score_se=1.0)})
    assert v.word == "open" and v.value == "—"


# -- on simulations ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fig1():
    # 20,000 sequences: the features of Figure 1 are resolved by tens of SE (row 3's smallest step of
    # S^(2) is ~5 SE, every RP in rows 3-4 > 20 SE from 0.5); layer 1 has no order by symmetry.
    return simulate_many(claims.fig1_configs(20_000, 3))


def test_figure1_reproduced(fig1):
    feats = claims.figure1_features(fig1)
    assert all(v is True for v in feats.values()), feats
    v = claims.figure1_claim(fig1)
    assert v.word == "holds" and v.value.startswith("0.70")
    with pytest.raises(ValueError, match="rows has length 3"):
        claims.figure1_features(fig1[:3])


def test_definition1_proposition1_and_relativity_on_figure1(fig1):
    assert claims.definition1_claim(fig1[2]).word == "testable"
    assert claims.proposition1_claim(fig1[0]).word == "holds"
    assert claims.proposition2_claim(fig1[3], fig1[1]).word.startswith("holds")
    assert claims.not_relative_claim(fig1[2]).word == "holds"
    flat = fake(SimConfig(alpha=0.5))                                 # constant sub-diagonals
    assert claims.not_relative_claim(flat).word == "open"
    assert claims.direction(fig1[0], 4) == "primacy" and claims.direction(fig1[2], 4) == "recency"
    assert claims.direction(fig1[2], 1) == "no order resolved"
    assert 1 < claims.pairing_gain(fig1[2], 2) < math.inf


def test_engines_agree():
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=5, d=16, layers=2, samples=4_000, seed=2)
    dense, gram = simulate(cfg.replace(engine="dense")), simulate(cfg.replace(engine="gram", seed=3))
    v = claims.engines_agree(dense, gram)
    assert v.word == "holds" and v.numbers["count"] > 20 and v.numbers["exact_count"] >= 5
    off = fake(cfg.replace(engine="gram"), score=50.0)
    assert claims.engines_agree(off, fake(cfg.replace(engine="dense"))).word == "contradicted"
    with pytest.raises(ValueError, match="different settings"):
        claims.engines_agree(dense, simulate(cfg.replace(alpha=0.2, samples=100)))


def test_verdict_table_covers_every_claim(tmp_path):
    verdicts = claims.verdict_table(200, 0, cosine_samples=50, cache=tmp_path)
    assert [v.claim for v in verdicts] == list(claims.STATEMENTS)
    assert all(valid(v.word) for v in verdicts), [v.word for v in verdicts]
    table = claims.table(verdicts).text.splitlines()[3:-1]          # inside the {table} directive
    assert len(table) == 2 + len(verdicts) and "{bdg-" in table[2]
    assert table[2].startswith("| {prf:ref}`Definition 1 <def-1>` |") and "{doc}`Figure 1 <empirical>`" in table[9]
    assert len(list(tmp_path.glob("*.npz"))) == 18              # each setting simulated once, cached
