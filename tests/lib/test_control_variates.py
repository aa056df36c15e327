"""Control variates: the first layer's steps, trends and recency probability have exactly
known means; the cross-fitted estimators of later layers built on them (recency_lib.stats.
control_variate) must be unbiased and report honest standard errors.

Tolerances: single comparisons at |z| < 4.5 (a false alarm once in ~150,000 per comparison); the
standard-error checks compare the reported SE with the spread of the estimate over 40 independent
seeds through the sample standard deviation, whose squared ratio to the true variance is
chi^2_39 / 39; the bounds are its 0.05% and 99.95% quantiles (ratio in [0.57, 1.55]), so a correct
SE fails one of the few checks with probability ~0.1% or less (the seeds are fixed: a run that
passes keeps passing).
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy import stats

from recency_lib import SimConfig, SimResult, simulate, simulate_many
from recency_lib.features import control_means, control_slice, controls_valid
from recency_lib.result import ARRAY_FIELDS as ARRAYS
from recency_lib.stats import Moments, control_variate, merged

Z = 4.5
SEEDS = 40
CHI2_LO, CHI2_HI = (np.sqrt(stats.chi2.ppf(q, SEEDS - 1) / (SEEDS - 1)) for q in (0.0005, 0.9995))


def same(a: SimResult, b: SimResult) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAYS)


# -- the estimator on synthetic data with a known answer -----------------------------------------


def _synthetic_groups(rng, rho, sizes=(4000, 3500), mean_x=0.0):
    """Two groups of (c, x) pairs: a control c ("layer 1") with mean exactly 0 and x ("layer 2")
    with mean ``mean_x`` and correlation rho, as Moments of (B, 2 layers, 1 feature) arrays."""
    out = []
    for size in sizes:
        c = rng.standard_normal(size)
        x = mean_x + rho * c + np.sqrt(1 - rho * rho) * rng.standard_normal(size)
        out.append(Moments.of(np.stack([c, x], axis=1)[:, :, None], slice(0, 1)))
    return out


@pytest.mark.parametrize("rho", [0.0, 0.9, 0.999])
def test_estimator_unbiased_and_its_se_matches_the_spread(rho):
    """x has mean 0.3 whatever rho; over 40 seeds the estimates scatter around 0.3 with the reported
    SE, which is sqrt(1 - rho^2) times the plain one (5% + 0.002: the SEs' own sampling error)."""
    est, se, plain_se = [], [], []
    for seed in range(SEEDS):
        groups = _synthetic_groups(np.random.default_rng(seed), rho, mean_x=0.3)
        e, s = control_variate(groups, np.zeros(1))
        est.append(e[1, 0]), se.append(s[1, 0]), plain_se.append(merged(groups).sem[1, 0])
    est, se = np.array(est), np.array(se)
    assert abs(est.mean() - 0.3) < Z * se.mean() / np.sqrt(SEEDS)
    assert CHI2_LO < est.std(ddof=1) / se.mean() < CHI2_HI
    np.testing.assert_allclose(
        np.mean(se) / np.mean(plain_se), np.sqrt(1 - rho * rho), rtol=0.05, atol=0.002
    )


def test_estimator_falls_back_to_plain_with_one_group_or_a_constant_control():
    rng = np.random.default_rng(0)
    a, _ = _synthetic_groups(rng, 0.9)
    e, s = control_variate([a, None], np.zeros(1))
    assert e[1, 0] == a.mean[1, 0] and s[1, 0] == a.sem[1, 0]
    x = rng.standard_normal((50, 2, 1))
    x[:, 0] = 0.0  # the control never moves (alpha = 1)
    g1, g2 = Moments.of(x[:25], slice(0, 1)), Moments.of(x[25:], slice(0, 1))
    e, s = control_variate([g1, g2], np.zeros(1))
    both = merged([g1, g2])
    np.testing.assert_allclose(e[1, 0], both.mean[1, 0], rtol=1e-15)
    np.testing.assert_allclose(
        s[1, 0], both.sem[1, 0], rtol=0.05
    )  # two groups' SEs vs pooled: O(1/N)


def test_in_place_merge_is_bitwise_the_merge_and_leaves_its_argument_alone():
    """merge_into (the engines' fold: no new feature-sized arrays per block) gives merge's numbers
    bit for bit; merged() never changes the groups it is given (control_variate reuses them)."""
    rng = np.random.default_rng(3)
    blocks = [
        Moments.of(rng.standard_normal((k, 3, 5)) * 10.0 ** rng.integers(-3, 4), slice(2, 5))
        for k in (1, 7, 2, 33)
    ]
    pure, acc = blocks[0], blocks[0].copy()
    for b in blocks[1:]:
        before = (b.mean.copy(), b.m2.copy(), b.cross.copy())
        pure, acc = pure.merge(b), acc.merge_into(b)
        assert all(np.array_equal(x, y) for x, y in zip(before, (b.mean, b.m2, b.cross)))
        for name in ("mean", "m2", "cross"):
            assert np.array_equal(getattr(pure, name), getattr(acc, name)), name
    assert pure.count == acc.count == 43
    kept = [b.mean.copy() for b in blocks]
    merged(blocks)
    assert all(np.array_equal(k, b.mean) for k, b in zip(kept, blocks))
    one = rng.standard_normal((1, 3, 5))  # a one-sample block (long sequences)
    m = Moments.of(one, slice(2, 5))
    assert (
        np.array_equal(m.mean, one[0])
        and not m.m2.any()
        and not m.cross.any()
        and m.cross.shape == (3, 3)
    )


def test_single_sample_blocks_travel_without_their_zeros_and_merge_as_with_them():
    """A one-sample block (the dense engine at long n) is pickled without its zero m2 and cross (a
    worker sends every block to the main process) and merged without adding them; the numbers equal
    those of merging the same block with its zeros, in any order of single and larger blocks."""
    import pickle

    rng = np.random.default_rng(5)
    one = Moments.of(rng.standard_normal((1, 4, 300)), slice(100, 300))
    assert one.single and not Moments.of(rng.standard_normal((2, 4, 300)), slice(100, 300)).single
    back = pickle.loads(pickle.dumps(one))
    assert back.single and np.array_equal(back.mean, one.mean)
    assert (
        not back.m2.any() and back.m2.shape == one.m2.shape and back.cross.shape == one.cross.shape
    )
    assert len(pickle.dumps(one)) < 0.4 * len(
        pickle.dumps(one.copy().merge_into(one))
    )  # the zeros stay home
    sizes = [1, 1, 3, 1, 2, 1, 1]
    blocks = [
        Moments.of(rng.standard_normal((k, 4, 300)) * 10.0 ** rng.integers(-3, 4), slice(100, 300))
        for k in sizes
    ]
    plain = [
        Moments(b.count, b.mean.copy(), b.m2.copy(), b.cross.copy()) for b in blocks
    ]  # single=False
    fast, slow = blocks[0].copy(), plain[0].copy()
    for b, p in zip(blocks[1:], plain[1:]):
        fast, slow = fast.merge_into(pickle.loads(pickle.dumps(b))), slow.merge_into(p)
        assert not fast.single
        for name in ("mean", "m2", "cross"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.count == slow.count == sum(sizes)


# -- the simulator: known values, agreement, honest errors -----------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        dict(alpha=0.0, norm="layernorm"),
        dict(alpha=0.5, gamma=1.0, norm="rms"),
        dict(alpha=0.8, norm="none"),
        dict(alpha=1.0),
    ],
)
def test_first_layer_controls_sit_at_their_known_means(kw):
    """Layer 1: every off-diagonal step, row trend and the trend at 0, the recency probability at
    1/2, within Z standard errors (exchangeable tokens); the cv fields of layer 1
    are the plain ones."""
    r = simulate(SimConfig(n=8, d=16, layers=2, samples=20_000, seed=5, **kw))
    steps = r.diff_mean[0][np.tril_indices(8, -1)]
    sems = r.diff_sem[0][np.tril_indices(8, -1)]
    keep = np.isfinite(steps)
    for mean, sem, known in (
        (steps[keep], sems[keep], 0.0),
        (r.row_trend_mean[0, 2:], r.row_trend_sem[0, 2:], 0.0),
        (r.trend_mean[:1], r.trend_sem[:1], 0.0),
        (r.recency_probability[:1], r.recency_probability_sem[:1], 0.5),
    ):
        assert np.all(np.abs(mean - known) <= Z * sem + 1e-12), (mean, sem)
    for plain, cv in (
        ("diff_mean", "diff_cv_mean"),
        ("trend_mean", "trend_cv_mean"),
        ("recency_probability", "recency_probability_cv"),
    ):
        assert np.array_equal(getattr(r, plain)[0], getattr(r, cv)[0], equal_nan=True)


def test_cv_and_plain_agree_where_both_resolve_and_cv_is_sharper():
    """alpha = 0.5, LayerNorm, d = 64: the plain and cv estimates of every step, row trend, trend
    and recency probability of layers 2-4 differ by less than Z times their combined SE; the cv SEs
    of the off-diagonal steps and of the trend are smaller than the plain ones."""
    r = simulate(SimConfig(alpha=0.5, n=10, d=64, layers=4, samples=40_000, seed=2))
    for mean, sem, cv, cvse in (
        ("diff_mean", "diff_sem", "diff_cv_mean", "diff_cv_sem"),
        ("trend_mean", "trend_sem", "trend_cv_mean", "trend_cv_sem"),
        ("row_trend_mean", "row_trend_sem", "row_trend_cv_mean", "row_trend_cv_sem"),
        (
            "recency_probability",
            "recency_probability_sem",
            "recency_probability_cv",
            "recency_probability_cv_sem",
        ),
    ):
        a, ea, b, eb = (np.asarray(getattr(r, k))[1:] for k in (mean, sem, cv, cvse))
        fin = np.isfinite(a)
        assert np.all(np.abs(a[fin] - b[fin]) < Z * np.hypot(ea[fin], eb[fin])), mean
    off = np.tril_indices(10, -1)
    steps_se, cv_se = r.diff_sem[1:][:, off[0], off[1]], r.diff_cv_sem[1:][:, off[0], off[1]]
    keep = np.isfinite(steps_se)
    assert np.all(cv_se[keep] < steps_se[keep])
    assert np.all(r.trend_cv_sem[1:] < r.trend_sem[1:])


@pytest.mark.parametrize(
    "kw",
    [
        dict(alpha=0.0, norm="layernorm", d=16),
        dict(alpha=0.0, norm="layernorm", d=64),
        dict(alpha=0.5, gamma=1.0, d=64),
    ],
)
def test_reported_cv_se_matches_the_spread_over_seeds(kw):
    """40 independent runs (seeds 0..39): the standard deviation of the cv estimates of the layer-2
    and layer-3 trend and recency probability over the runs, divided by their mean reported SE, lies
    in the chi^2 band of the module docstring (the cv SEs are 2 to 250 times below the plain ones
    here, so an SE that were the plain one, or that ignored the fitted coefficient, would fail)."""
    cfgs = [SimConfig(n=10, layers=3, samples=6_000, seed=s, **kw) for s in range(SEEDS)]
    res = simulate_many(cfgs)
    for est, se in (
        ("trend_cv_mean", "trend_cv_sem"),
        ("recency_probability_cv", "recency_probability_cv_sem"),
    ):
        e = np.array([getattr(r, est)[1:] for r in res])  # (seeds, 2 layers)
        s = np.array([getattr(r, se)[1:] for r in res])
        ratio = e.std(axis=0, ddof=1) / s.mean(axis=0)
        assert np.all((CHI2_LO < ratio) & (ratio < CHI2_HI)), (est, ratio)


def test_dense_and_gram_cv_estimates_agree():
    cfg = SimConfig(alpha=0.3, gamma=1.0, n=7, d=24, layers=3, samples=8_000)
    dense, gram = (
        simulate(cfg.replace(engine="dense", seed=1)),
        simulate(cfg.replace(engine="gram", seed=2)),
    )
    for mean, sem in (
        ("diff_cv_mean", "diff_cv_sem"),
        ("trend_cv_mean", "trend_cv_sem"),
        ("row_trend_cv_mean", "row_trend_cv_sem"),
        ("recency_probability_cv", "recency_probability_cv_sem"),
    ):
        a, ea, b, eb = (np.asarray(getattr(x, k)) for x in (dense, gram) for k in (mean, sem))
        fin = np.isfinite(a)
        assert np.array_equal(fin, np.isfinite(b))
        assert np.all(np.abs(a[fin] - b[fin]) < Z * np.hypot(ea[fin], eb[fin]) + 1e-12), mean


@pytest.mark.parametrize("engine", ["gram", "dense"])
def test_cv_estimates_bitwise_identical_for_any_chunk_size_and_executor(engine):
    cfg = SimConfig(alpha=0.5, n=6, d=16, layers=3, samples=5_000, seed=3, engine=engine)
    ref = simulate(cfg)
    for chunk in (1, 700, 10**9):
        assert same(simulate(cfg, chunk_size=chunk), ref), chunk
    with ThreadPoolExecutor(2) as pool:
        assert same(simulate(cfg, executor=pool, chunk_size=300), ref)


def test_cv_fields_match_a_direct_cross_fit_of_the_per_sample_features():
    """The streamed cv estimate equals the cross-fitted estimator computed from the per-sample
    features of the even and the odd blocks directly (two-pass numpy)."""
    from blocks import gram_block

    from recency_lib import kernels
    from recency_lib.engines import block_size
    from recency_lib.sampling import gram_draws
    from recency_lib.streams import block_key

    cfg = SimConfig(alpha=0.5, n=6, d=16, layers=3, seed=8)
    bsize = block_size(cfg, "gram")
    cfg = cfg.replace(samples=5 * bsize + 11)
    r = simulate(cfg)
    feats = []
    for k in range(6):
        size = min(bsize, cfg.samples - k * bsize)
        draws = gram_draws(cfg, block_key(cfg.seed, k), size)
        feats.append(gram_block(cfg, *draws, kernels.kernel_name())[1])
    ctrl, mu = control_slice(cfg.n), control_means(cfg.n)
    even, odd = (np.concatenate(feats[p::2])[:, :, ctrl] for p in (0, 1))  # (B, layers, controls)
    est = np.zeros_like(even[0])
    for g, other in ((even, odd), (odd, even)):
        oc = other - other.mean(0)
        beta = np.einsum("blc,bc->lc", oc, oc[:, 0]) / np.einsum("bc,bc->c", oc[:, 0], oc[:, 0])
        est += len(g) / cfg.samples * (g.mean(0) - beta * (g[:, :1].mean(0) - mu))
    np.testing.assert_allclose(r.trend_cv_mean[1:], est[1:, -2], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(r.recency_probability_cv[1:], est[1:, -1], rtol=1e-9)


def test_round_trip_keeps_the_cv_fields_and_version_1_files_are_refused(tmp_path):
    r = simulate(SimConfig(alpha=0.5, n=5, d=16, layers=2, samples=2_000, seed=1))
    for name in ("r.json", "r.npz"):
        back = SimResult.load(r.save(tmp_path / name))
        assert same(back, r) and back.definition1 == r.definition1
    old = r.to_dict()
    old["format"] = "recency_lib.SimResult/1"  # version 1 had no trends: the cache recomputes it
    for k in list(ARRAYS)[10:]:
        del old[k]
    with pytest.raises(ValueError, match="not a readable"):
        SimResult.from_dict(old)
    with pytest.raises(ValueError, match="missing"):
        SimResult.from_dict({**old, "format": "recency_lib.SimResult/2"})
    with pytest.raises(ValueError, match="estimator='both'"):
        r.decision(2, estimator="both")


def test_rope_first_layer_is_not_exchangeable_so_no_controls_are_used():
    """With RoPE the first layer already orders keys (S_ij depends on i - j), so its steps do not
    have mean 0 and would bias the control-variate estimate: the engines report plain estimates
    then. The layer-1 trend is resolved away from 0 here by many SEs (checked: |z| > 5),
    which is what a control with an assumed mean of 0 would have carried into every later layer."""
    cfg = SimConfig(alpha=0.5, n=8, d=16, layers=2, samples=4_000, seed=2, rope=True)
    assert not controls_valid(cfg) and controls_valid(cfg.replace(rope=False, heads=2, ffn=True))
    r = simulate(cfg)
    assert abs(r.trend_mean[0] / r.trend_sem[0]) > 5
    for plain, cv in (
        ("trend_mean", "trend_cv_mean"),
        ("trend_sem", "trend_cv_sem"),
        ("diff_mean", "diff_cv_mean"),
        ("recency_probability", "recency_probability_cv"),
    ):
        assert np.array_equal(getattr(r, plain), getattr(r, cv), equal_nan=True), cv
