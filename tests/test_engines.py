"""Engines and kernels: dense and gram agree in law; the two gram kernels agree on the same draws;
results are bitwise reproducible for any chunking and executor (process pool, Dask); closed forms
are met where the paper claims them.

Statistical tolerances are z-scores against the combined Monte-Carlo standard error
sqrt(se_dense^2 + se_gram^2). The cross-engine grid makes ~26,000 comparisons (43 configs,
correlated, many of them exact ties at alpha = 1); at |z| < 4.5 a correct engine fails one with
probability ~0.1 at most (all seeds are fixed, so a run that passes keeps passing). Measured:
largest |z| 3.46, and 0.02% of |z| above 3 (0.27% expected for independent normal z).
"""
from __future__ import annotations

import itertools
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from recency_lib import SimConfig, SimResult, simulate, simulate_many
from recency_lib import kernels
from recency_lib.engines import block_size, sample_trajectories
from recency_lib.kernels import block_features_numpy, feature_layout, gram_block_moments
from recency_lib.metrics import adjacent_differences, recency_fraction, tril_index
from recency_lib.model import layer
from recency_lib.sampling import gram_assemble, gram_draws, gram_width, sigma_cholesky

Z = 4.5
ARRAYS = ("score_mean", "score_sem", "attn_mean", "attn_sem", "diff_mean", "diff_sem",
          "recency_probability", "recency_probability_sem", "sq_norm_mean", "sq_norm_sem")
HAVE_NUMBA = kernels.numba_kernel() is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")


def same(a: SimResult, b: SimResult) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAYS)


@pytest.fixture
def numpy_kernel(monkeypatch):
    """Make simulate() pick the numpy reference kernel (as when numba is not installed)."""
    monkeypatch.setattr(kernels, "_NUMBA", False)


# -- the cross-engine grid ---------------------------------------------------------------------

def _grid():
    """Every (alpha, gamma, norm) at n = 10, d = 16; every d in {2, 3, 64} and n in {1, 2} with each
    norm (alpha, gamma cycling through the other values); n = 12 > d - 1 = 7 with each norm."""
    out = [dict(alpha=a, gamma=g, norm=nm, n=10, d=16)
           for a, g, nm in itertools.product((0.0, 0.5, 0.8, 1.0), (0.0, 1.0), ("layernorm", "rms", "none"))]
    cycle = itertools.cycle([(0.0, 1.0), (0.5, 0.0), (0.8, 1.0), (1.0, 0.0), (0.5, 1.0), (0.8, 0.0)])
    for d, nm in itertools.product((2, 3, 64), ("layernorm", "rms", "none")):
        a, g = next(cycle)
        out.append(dict(alpha=a, gamma=g, norm=nm, n=10, d=d))
    for n, nm in itertools.product((1, 2), ("layernorm", "rms", "none")):
        a, g = next(cycle)
        out.append(dict(alpha=a, gamma=g, norm=nm, n=n, d=16))
    out += [dict(alpha=0.5, gamma=1.0, norm=nm, n=12, d=8) for nm in ("layernorm", "rms", "none")]
    out.append(dict(alpha=0.8, gamma=0.0, norm="layernorm", n=12, d=8))
    return out


GRID = _grid()


def _z_scores(a, ea, b, eb):
    """|a - b| / combined SE, entries where both are finite; NaN patterns must match.

    The floor 1e-9 * max(1, |value|) stands in for the SE where it is ~0: at alpha = 1 every
    token is the same vector, and with a normalization every score is sqrt(d) ms / (ms + eps)
    and every attention weight 1 / (i + 1) in every sample, so both engines return the same
    constant; their difference is float rounding (~1e-15 relative, from summing d vs 1
    coordinates) plus the eps term's spread (~d eps / ms ~ 1e-10 relative at d = 64), far
    below 1e-9 of the value and far above nothing.
    """
    fa, fb = np.isfinite(a), np.isfinite(b)
    assert np.array_equal(fa, fb)
    comb = np.sqrt(ea[fa] ** 2 + eb[fa] ** 2)
    floor = 1e-9 * np.maximum(1.0, np.maximum(np.abs(a[fa]), np.abs(b[fa])))
    return np.abs(a[fa] - b[fa]) / np.maximum(comb, floor)


def test_grid_covers_the_listed_cases():
    seen = lambda key: {c[key] for c in GRID}                      # noqa: E731
    assert seen("alpha") == {0.0, 0.5, 0.8, 1.0} and seen("gamma") == {0.0, 1.0}
    assert seen("norm") == {"layernorm", "rms", "none"}
    assert {2, 3, 16, 64} <= seen("d") and {1, 2, 10} <= seen("n")
    assert any(c["n"] > c["d"] - 1 for c in GRID)


@pytest.mark.parametrize("params", GRID, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_dense_and_gram_agree_in_distribution(params):
    """Every mean score, attention weight, squared norm, and recency probability, every layer."""
    cfg = SimConfig(layers=4, samples=3_000, **params)
    dense = simulate(cfg.replace(engine="dense", seed=101))
    gram = simulate(cfg.replace(engine="gram", seed=202))
    assert dense.engine == "dense" and gram.engine == "gram"
    worst = {}
    for mean, sem in (("score_mean", "score_sem"), ("attn_mean", "attn_sem"),
                      ("sq_norm_mean", "sq_norm_sem"), ("recency_probability", "recency_probability_sem")):
        z = _z_scores(getattr(dense, mean), getattr(dense, sem), getattr(gram, mean), getattr(gram, sem))
        worst[mean] = float(z.max()) if z.size else 0.0
    assert max(worst.values()) < Z, worst


def test_grid_would_catch_a_wrong_sampler(monkeypatch):
    """Sanity of the test's power: LayerNorm with d instead of d - 1 degrees of freedom is caught."""
    from recency_lib import sampling

    cfg = SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=3, layers=4, samples=3_000)
    dense = simulate(cfg.replace(engine="dense", seed=101))
    monkeypatch.setattr(sampling, "degrees_of_freedom", lambda c: c.d)
    wrong = simulate(cfg.replace(engine="gram", seed=202))
    z = _z_scores(dense.score_mean, dense.score_sem, wrong.score_mean, wrong.score_sem)
    assert z.max() > 2 * Z                                          # ~9.8: far outside the tolerance


# -- the sampler ----------------------------------------------------------------------------------

def test_sigma_cholesky():
    for n, c in [(1, 0.3), (10, 1.0), (7, 50.0), (3, 1e-9), (12, 2.0)]:
        chol = sigma_cholesky(n, c)
        assert np.all(np.triu(chol, 1) == 0) and np.all(np.diag(chol) > 0)
        np.testing.assert_allclose(chol @ chol.T, np.eye(n) + c * c, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kw", [dict(), dict(alpha=0.5), dict(alpha=1.0), dict(n=12, d=8),
                                dict(n=12, d=8, norm="rms", alpha=0.3), dict(n=1), dict(d=2, n=4)])
def test_gram_coordinates_are_lower_trapezoidal(kw):
    cfg = SimConfig(**kw)
    chi2, normals = gram_draws(cfg, np.random.default_rng(0), 7)
    r = gram_assemble(cfg, chi2, normals)
    assert r.shape == (cfg.n, gram_width(cfg), 7)
    rows, cols = np.triu_indices(cfg.n, 1, gram_width(cfg))
    assert np.all(r[rows, cols] == 0)
    if cfg.alpha == 1.0:
        assert np.all(r == r[:1])
    # same block seed -> same draws: the stream of a block does not depend on anything else
    again = gram_draws(cfg, np.random.default_rng(0), 7)
    assert np.array_equal(again[0], chi2) and np.array_equal(again[1], normals)


# -- the two gram kernels, and the literal layer, on identical inputs ------------------------------

KERNEL_CASES = [dict(), dict(alpha=0.5, gamma=1.0), dict(norm="none"), dict(norm="rms", alpha=0.8, gamma=-0.7),
                dict(alpha=1.0), dict(alpha=1.0, gamma=1.0, norm="none"), dict(n=12, d=8, alpha=0.3, gamma=0.5),
                dict(n=2), dict(n=1), dict(n=3, d=2, alpha=0.5, gamma=1.0, norm="none"), dict(d=4096, alpha=0.5),
                dict(n=17, d=5, alpha=0.8, gamma=1.0, layers=6)]


def _layer_reference(cfg, r):
    """Per-sample features from recency_lib.model.layer (full n x n matrices), (layers, F, B)."""
    x = np.ascontiguousarray(r.transpose(2, 0, 1))
    rows, cols = tril_index(cfg.n)
    lay = feature_layout(cfg.n)
    feats = np.empty((cfg.layers, lay["sq_norm"].stop, x.shape[0]))
    for l in range(cfg.layers):
        x, s, a, sq = layer(x, norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps, centred=True)
        f = feats[l]
        f[lay["score"]] = s[:, rows, cols].T
        f[lay["attn"]] = a[:, rows, cols].T
        f[lay["diff"]] = adjacent_differences(s).T
        f[lay["rp"].start] = recency_fraction(s)
        f[lay["sq_norm"]] = sq.T
    return feats


def _close(a, b, rtol):
    """Relative agreement with an absolute floor at rtol x the array's largest magnitude."""
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    fin = np.isfinite(a)
    scale = np.max(np.abs(a[fin])) if fin.any() else 1.0
    np.testing.assert_allclose(b[fin], a[fin], rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("kw", KERNEL_CASES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()) or "default")
def test_numpy_kernel_matches_the_literal_layer(kw):
    cfg = SimConfig(**kw)
    r = gram_assemble(cfg, *gram_draws(cfg, np.random.default_rng(3), 300))
    ref = _layer_reference(cfg, r)
    got = block_features_numpy(r, d=cfg.d, norm=cfg.norm, gamma=cfg.gamma, eps=cfg.eps, layers=cfg.layers)
    _close(ref, got, 1e-12)


@needs_numba
@pytest.mark.parametrize("kw", KERNEL_CASES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()) or "default")
def test_numba_kernel_matches_numpy_kernel_on_the_same_draws(kw):
    cfg = SimConfig(**kw)
    draws = gram_draws(cfg, np.random.default_rng(4), 333)         # odd size: remainder loops too
    m_np, v_np, f_np = gram_block_moments(cfg, *draws, kernel="numpy", features=True)
    m_nb, v_nb, f_nb = gram_block_moments(cfg, *draws, kernel="numba", features=True)
    _close(f_np, f_nb, 1e-12)                                      # every per-sample feature
    _close(m_np, m_nb, 1e-12)
    _close(v_np, v_nb, 1e-9)                                       # M2: cancellation in near-constant features
    # numba's mean is the plain sum in sample order, as numpy's axis-0 mean: the same bits
    assert np.array_equal(m_nb, np.ascontiguousarray(np.moveaxis(f_nb, -1, 0)).mean(axis=0), equal_nan=True)


@pytest.mark.parametrize("kw", [dict(alpha=0.5, gamma=1.0), dict(n=7, d=4, alpha=0.8, norm="none", gamma=0.5),
                                dict(alpha=1.0, norm="rms")])
def test_kernel_source_runs_as_plain_python(kw):
    """The compiled loop nest, run uncompiled (no numba needed), matches the numpy reference."""
    cfg = SimConfig(n=kw.pop("n", 5), d=kw.pop("d", 16), layers=3, **kw)
    draws = gram_draws(cfg, np.random.default_rng(6), 9)
    mean = np.empty((cfg.layers, kernels.n_features(cfg.n)))
    m2 = np.empty_like(mean)
    use_chol = 0.0 < cfg.alpha < 1.0
    chol = sigma_cholesky(cfg.n, cfg.c) if use_chol else np.zeros((cfg.n, cfg.n))
    w = 1 if cfg.alpha == 1.0 else draws[0].shape[0]
    work = np.full((3, cfg.n, w, 9), np.nan), np.full((kernels.n_features(cfg.n) + 4, 9), np.nan)
    kernels._kernel(*draws, chol, use_chol, cfg.alpha == 1.0, cfg.n, float(cfg.d), cfg.norm != "none",
                    cfg.gamma, cfg.eps, cfg.layers, kernels.TIE_RTOL, mean, m2, np.empty((0, 0, 0)), *work)
    ref_mean, ref_m2 = gram_block_moments(cfg, *draws, kernel="numpy")
    _close(ref_mean, mean, 1e-12)
    _close(ref_m2, m2, 1e-9)


@needs_numba
def test_simulate_with_either_kernel_agrees_to_rounding(monkeypatch):
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=10, d=64, layers=4, samples=3_000, seed=9)
    fast = simulate(cfg)
    monkeypatch.setattr(kernels, "_NUMBA", False)
    ref = simulate(cfg)
    assert fast.extra["kernel"] == "numba" and ref.extra["kernel"] == "numpy"
    for k in ("score_mean", "attn_mean", "diff_mean", "sq_norm_mean", "recency_probability"):
        _close(getattr(ref, k), getattr(fast, k), 1e-12)


# -- determinism: chunking, executors, grids ---------------------------------------------------

CFGS = [SimConfig(alpha=0.5, gamma=1.0, n=6, d=16, layers=3, samples=3_000, seed=7),
        SimConfig(alpha=0.0, norm="none", n=5, d=9, layers=2, samples=2_500, seed=8),
        SimConfig(alpha=1.0, norm="rms", n=4, d=32, layers=2, samples=1_000, seed=9),
        SimConfig(alpha=0.8, n=12, d=8, layers=3, samples=1_500, seed=10),
        SimConfig(alpha=0.3, gamma=0.5, n=7, d=12, layers=2, samples=900, seed=11, engine="dense")]


def test_simulate_many_with_a_process_pool_equals_each_config_alone():
    alone = [simulate(c) for c in CFGS]
    with ProcessPoolExecutor(2) as pool:
        many = simulate_many(CFGS, executor=pool, chunk_size=700)
        again = simulate_many(CFGS, executor=pool)
    for c, a, m, g in zip(CFGS, alone, many, again):
        assert m.config == c and same(a, m) and same(a, g)
        assert m.engine == a.engine and m.extra == a.extra


def test_thread_pool_equals_serial():
    """The compiled kernel releases the GIL; each thread has its own scratch space."""
    from concurrent.futures import ThreadPoolExecutor

    alone = simulate_many(CFGS)
    with ThreadPoolExecutor(3) as pool:
        threaded = simulate_many(CFGS, executor=pool, chunk_size=300)
    assert all(same(a, t) for a, t in zip(alone, threaded))


def test_numpy_kernel_is_bitwise_reproducible_too(numpy_kernel):
    cfg = CFGS[0]
    ref = simulate(cfg)
    assert ref.extra["kernel"] == "numpy"
    for chunk in (1, 513, 10**9):
        assert same(simulate(cfg, chunk_size=chunk), ref)
    with ProcessPoolExecutor(2) as pool:                           # the kernel travels with the task
        assert same(simulate(cfg, executor=pool, chunk_size=600), ref)


def test_block_size_depends_on_config_and_engine_only():
    cfg = SimConfig(n=10, d=64)
    assert block_size(cfg, "gram") == block_size(cfg.replace(samples=7, seed=3, d=4096), "gram") == 512
    assert block_size(cfg, "dense") == 128
    for n in (1, 3, 10, 40, 200):
        for e in ("gram", "dense"):
            b = block_size(SimConfig(n=n), e)
            assert 16 <= b <= 4096 and b & (b - 1) == 0


def test_sample_trajectories_are_what_simulate_averages():
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=8, d=16, layers=3, samples=1_300, seed=4)   # 3 blocks
    r = simulate(cfg)
    s, a = sample_trajectories(cfg)
    assert s.shape == (1_300, 3, 8, 8)
    np.testing.assert_allclose(r.score_mean, s.mean(0), rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(r.attn_mean, a.mean(0), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_dask_executor_gives_identical_results(processes):
    """A dask.distributed client's executor: in-process threads, and 2 worker processes (which
    import recency_lib and load the kernel themselves)."""
    pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    serial = simulate_many(CFGS)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dasked = simulate_many(CFGS, executor=client.get_executor(), chunk_size=800)
        assert len(client.scheduler_info()["workers"]) == 2
    for a, b in zip(serial, dasked):
        assert same(a, b) and a.extra == b.extra


# -- large d and the paper's closed forms --------------------------------------------------------

@pytest.mark.parametrize("d", [1024, 4096])
@pytest.mark.parametrize("kw", [dict(alpha=0.0), dict(alpha=0.5, gamma=1.0), dict(alpha=0.8, norm="rms"),
                                dict(alpha=0.5, norm="none", gamma=1.0)])
def test_large_d_stays_finite(d, kw):
    r = simulate(SimConfig(n=10, d=d, layers=4, samples=1_000, seed=2, **kw))
    rows, cols = np.tril_indices(10)
    for k in ("score_mean", "score_sem", "attn_mean", "attn_sem"):
        assert np.all(np.isfinite(getattr(r, k)[:, rows, cols])), k
    assert np.all(np.isfinite(r.recency_probability)) and np.all(np.isfinite(r.sq_norm_mean))
    np.testing.assert_allclose(r.attn_mean.sum(-1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("d", [1024, 4096])
def test_theorem1_eq5_at_large_d(d):
    """Eq. (5): LayerNorm, alpha = gamma = 0, second-layer scores. It is the law-of-large-numbers
    limit, so it is claimed for large d: there every off-diagonal mean is within 4.5 SE of it (it is
    ~sqrt(d) e^{-sqrt d}, i.e. 0 at this resolution) and the diagonal is sqrt(d) (up to eps).
    At d = 16 the same comparison fails (|z| ~ 5.7 at 2e4 samples): the O(1) fluctuations of the
    off-diagonal scores, which the limit drops, still move the mean there."""
    th = pytest.importorskip("recency_lib.theory")
    if not hasattr(th, "theorem1_score"):
        pytest.skip("recency_lib.theory.theorem1_score is not there yet")
    r = simulate(SimConfig(alpha=0.0, gamma=0.0, norm="layernorm", n=10, d=d, layers=2,
                           samples=20_000, seed=1))
    i, j = np.tril_indices(10)
    expect = th.theorem1_score(i + 1, j + 1, d)
    mean, sem = r.score_mean[1][i, j], r.score_sem[1][i, j]
    off = i > j
    assert np.all(np.abs(mean[off] - expect[off]) < Z * sem[off])
    np.testing.assert_allclose(mean[~off], expect[~off], rtol=1e-9)   # eps = 1e-12: 1e-12 relative


def test_long_rows_dense_compiled_count_agrees_with_gram_kernel_count():
    """n = 40: the dense engine counts triples with the O(n^2 log n) Fenwick count, the gram kernel
    by comparing all triples; the recency probabilities must agree within Z combined SEs, and
    layer 1 (an exchangeable row: no order) must sit at 0.5."""
    cfg = SimConfig(alpha=0.5, n=40, d=16, layers=3, samples=400)
    dense = simulate(cfg.replace(engine="dense", seed=11))
    gram = simulate(cfg.replace(engine="gram", seed=12))
    z = _z_scores(dense.recency_probability, dense.recency_probability_sem,
                  gram.recency_probability, gram.recency_probability_sem)
    assert z.max() < Z, z
    for r in (dense, gram):
        assert abs(r.recency_probability[0] - 0.5) < Z * r.recency_probability_sem[0]
        assert r.recency_probability[2] - 0.5 > Z * r.recency_probability_sem[2]   # recency by layer 3
