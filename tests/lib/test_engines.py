"""Engines and kernels: dense and gram agree in law; the compiled kernel and the numpy path
(model.layer) agree on the same draws; the streamed moments equal a two-pass computation over many
blocks; memory does not grow with the number of samples; results are bitwise reproducible for any
chunking and executor (process pool, Dask); closed forms are met where the paper claims them.

Statistical tolerances are z-scores against the combined Monte-Carlo standard error
sqrt(se_dense^2 + se_gram^2). The cross-engine grid makes ~26,000 comparisons (43 configs,
correlated, many of them exact ties at alpha = 1); at |z| < 4.5 a correct engine fails one with
probability ~0.1 at most (all seeds are fixed, so a run that passes keeps passing). Measured:
largest |z| 3.46, and 0.02% of |z| above 3 (0.27% expected for independent normal z).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from blocks import gram_block

from recency_lib import SimConfig, SimResult, kernels, placements, simulate, simulate_many
from recency_lib.engines import block_size, gram_block_moments
from recency_lib.result import ARRAY_FIELDS as ARRAYS
from recency_lib.sampling import gram_assemble, gram_draws, gram_width, sigma_cholesky
from recency_lib.streams import block_key
from recency_lib.trajectories import sample_trajectories

Z = 4.5
HAVE_KERNEL = kernels.load() is not None
REPO = Path(__file__).resolve().parents[2]
# CI builds the C kernel (pip install -e .): there, a missing kernel fails these tests
# instead of skipping them
needs_kernel = pytest.mark.skipif(
    not HAVE_KERNEL and not os.environ.get("CI"), reason="the C kernel was not built"
)


def same(a: SimResult, b: SimResult) -> bool:
    """Every array of the two results is bitwise equal (plain and control-variate estimates)."""
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAYS)


@pytest.fixture
def numpy_kernel(monkeypatch):
    """Make simulate() pick the numpy path (as when the C kernel was not built)."""
    monkeypatch.setenv("RECENCY_LIB_KERNEL", "numpy")


# -- the cross-engine grid ---------------------------------------------------------------------


def _grid():
    """Every (alpha, gamma, norm) at n = 10, d = 16; every d in {2, 3, 64} and n in {1, 2} with each
    norm (alpha, gamma cycling through the other values); n = 12 > d - 1 = 7 with each norm."""
    out = [
        dict(alpha=a, gamma=g, norm=nm, n=10, d=16)
        for a, g, nm in itertools.product(
            (0.0, 0.5, 0.8, 1.0), (0.0, 1.0), ("layernorm", "rms", "none")
        )
    ]
    cycle = itertools.cycle(
        [(0.0, 1.0), (0.5, 0.0), (0.8, 1.0), (1.0, 0.0), (0.5, 1.0), (0.8, 0.0)]
    )
    for d, nm in itertools.product((2, 3, 64), ("layernorm", "rms", "none")):
        a, g = next(cycle)
        out.append(dict(alpha=a, gamma=g, norm=nm, n=10, d=d))
    for n, nm in itertools.product((1, 2), ("layernorm", "rms", "none")):
        a, g = next(cycle)
        out.append(dict(alpha=a, gamma=g, norm=nm, n=n, d=16))
    out += [dict(alpha=0.5, gamma=1.0, norm=nm, n=12, d=8) for nm in ("layernorm", "rms", "none")]
    out.append(dict(alpha=0.8, gamma=0.0, norm="layernorm", n=12, d=8))
    for where, nm in itertools.product(placements.NAMES[1:], ("layernorm", "rms")):
        a, g = next(cycle)  # every placement of the norm beyond the paper's
        out.append(dict(alpha=a, gamma=g, norm=nm, n=10, d=16, placement=where))
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
    seen = lambda key: {c[key] for c in GRID}  # noqa: E731
    assert seen("alpha") == {0.0, 0.5, 0.8, 1.0} and seen("gamma") == {0.0, 1.0}
    assert seen("norm") == {"layernorm", "rms", "none"}
    assert {2, 3, 16, 64} <= seen("d") and {1, 2, 10} <= seen("n")
    assert any(c["n"] > c["d"] - 1 for c in GRID)
    assert {c.get("placement", "pre") for c in GRID} == set(placements.NAMES)


@pytest.mark.parametrize("params", GRID, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_dense_and_gram_agree_in_distribution(params):
    """Every mean score, attention weight, squared norm, and recency probability, every layer."""
    cfg = SimConfig(layers=4, samples=3_000, **params)
    dense = simulate(cfg.replace(engine="dense", seed=101))
    gram = simulate(cfg.replace(engine="gram", seed=202))
    assert dense.engine == "dense" and gram.engine == "gram"
    worst = {}
    for mean, sem in (
        ("score_mean", "score_sem"),
        ("attn_mean", "attn_sem"),
        ("sq_norm_mean", "sq_norm_sem"),
        ("recency_probability", "recency_probability_sem"),
        ("diff_cv_mean", "diff_cv_sem"),
        ("trend_cv_mean", "trend_cv_sem"),
        ("row_trend_cv_mean", "row_trend_cv_sem"),
        ("recency_probability_cv", "recency_probability_cv_sem"),
    ):
        z = _z_scores(
            getattr(dense, mean), getattr(dense, sem), getattr(gram, mean), getattr(gram, sem)
        )
        worst[mean] = float(z.max()) if z.size else 0.0
    assert max(worst.values()) < Z, worst


def test_grid_would_catch_a_wrong_sampler(monkeypatch):
    """Sanity of the test's power: LayerNorm with d instead of d - 1 degrees of
    freedom is caught."""
    from recency_lib import sampling

    cfg = SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=3, layers=4, samples=3_000)
    dense = simulate(cfg.replace(engine="dense", seed=101))
    monkeypatch.setattr(sampling, "degrees_of_freedom", lambda c: c.d)
    wrong = simulate(cfg.replace(engine="gram", seed=202))
    z = _z_scores(dense.score_mean, dense.score_sem, wrong.score_mean, wrong.score_sem)
    assert z.max() > 2 * Z  # ~9.8: far outside the tolerance


# -- the sampler ----------------------------------------------------------------------------------


def test_sigma_cholesky():
    for n, c in [(1, 0.3), (10, 1.0), (7, 50.0), (3, 1e-9), (12, 2.0)]:
        chol = sigma_cholesky(n, c)
        assert np.all(np.triu(chol, 1) == 0) and np.all(np.diag(chol) > 0)
        np.testing.assert_allclose(chol @ chol.T, np.eye(n) + c * c, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(alpha=0.5),
        dict(alpha=1.0),
        dict(n=12, d=8),
        dict(n=12, d=8, norm="rms", alpha=0.3),
        dict(n=1),
        dict(d=2, n=4),
    ],
)
def test_gram_coordinates_are_lower_trapezoidal(kw):
    cfg = SimConfig(**kw)
    chi2, normals = gram_draws(cfg, block_key(0, 0), 7)
    r = gram_assemble(cfg, chi2, normals)
    assert r.shape == (7, cfg.n, gram_width(cfg))
    rows, cols = np.triu_indices(cfg.n, 1, gram_width(cfg))
    assert np.all(r[:, rows, cols] == 0)
    if cfg.alpha == 1.0:
        assert np.all(r == r[:, :1])
    # same block seed -> same draws: the stream of a block does not depend on anything else
    again = gram_draws(cfg, block_key(0, 0), 7)
    assert np.array_equal(again[0], chi2) and np.array_equal(again[1], normals)


# -- the compiled kernel and the numpy path (model.layer) on identical draws ---------------------

KERNEL_CASES = [
    dict(),
    dict(alpha=0.5, gamma=1.0),
    dict(norm="none"),
    dict(norm="rms", alpha=0.8, gamma=-0.7),
    dict(alpha=1.0),
    dict(alpha=1.0, gamma=1.0, norm="none"),
    dict(n=12, d=8, alpha=0.3, gamma=0.5),
    dict(n=2),
    dict(n=1),
    dict(n=3, d=2, alpha=0.5, gamma=1.0, norm="none"),
    dict(d=4096, alpha=0.5),
    dict(n=17, d=5, alpha=0.8, gamma=1.0, layers=6),
    dict(n=40, d=16, alpha=0.5, layers=2),
]


def _close(a, b, rtol):
    """Relative agreement with an absolute floor at rtol x the array's largest magnitude."""
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    fin = np.isfinite(a)
    scale = np.max(np.abs(a[fin])) if fin.any() else 1.0
    np.testing.assert_allclose(b[fin], a[fin], rtol=rtol, atol=rtol * scale)


@needs_kernel
@pytest.mark.parametrize(
    "kw", KERNEL_CASES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()) or "default"
)
def test_compiled_kernel_matches_the_numpy_path_on_the_same_draws(kw):
    """The kernel writes out its multiply-adds as fma and sums in its own order: agreement to ~1e-15
    of each array's scale (measured; 1e-12 allowed); M2 and the co-moments to 1e-9 of their scale
    (cancellation in features that are nearly constant, e.g. the LayerNorm diagonal)."""
    cfg = SimConfig(**kw)
    draws = gram_draws(cfg, block_key(4, 0), 333)  # odd size: a partial tile too
    m_np, f_np = gram_block(cfg, *draws, "numpy")
    m_nb, f_nb = gram_block(cfg, *draws, "c")
    assert f_np.shape == f_nb.shape == (333, cfg.layers, f_np.shape[-1])
    _close(f_np, f_nb, 1e-12)  # every per-sample feature
    _close(m_np.mean, m_nb.mean, 1e-12)
    _close(m_np.m2, m_nb.m2, 1e-9)
    _close(m_np.cross, m_nb.cross, 1e-9)


def _random_configs(count: int, seed: int):
    """``count`` random configs over every norm, gamma (0, 1, in (-1, 1)), alpha (0, 1, in (0, 1)),
    n up to 64, layers up to 6 and d from 2 to 4096, with a random block size."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield (
            SimConfig(
                norm=str(rng.choice(["layernorm", "rms", "none"])),
                gamma=float(rng.choice([0.0, 1.0, rng.uniform(-1, 1)])),
                alpha=float(rng.choice([0.0, 1.0, rng.uniform(0, 1)])),
                n=int(rng.choice([1, 2, 3, 4, 7, 10, 16, 31, 48, 64])),
                layers=int(rng.integers(1, 7)),
                d=int(rng.choice([2, 5, 64, 4096])),
            ),
            int(rng.integers(1, 70)),
        )


@needs_kernel
def test_compiled_kernel_matches_the_numpy_path_on_random_configs():
    """24 random configs on identical draws: every per-sample feature and mean to 1e-13 of its
    array's scale (measured over 60 such configs: 4e-15); M2 to 1e-10 (measured 2e-12: the squared
    deviations of nearly constant features, e.g. RMS norms at d = 4096, magnify the inputs' last-bit
    differences) and the co-moments to 1e-12 (measured 3e-14)."""
    for i, (cfg, size) in enumerate(_random_configs(24, seed=77)):
        draws = gram_draws(cfg, block_key(i, 0), size)
        m_np, f_np = gram_block(cfg, *draws, "numpy")
        m_c, f_c = gram_block(cfg, *draws, "c")
        _close(f_np, f_c, 1e-13)
        _close(m_np.mean, m_c.mean, 1e-13)
        _close(m_np.m2, m_c.m2, 1e-10)
        _close(m_np.cross, m_c.cross, 1e-12)


def test_the_compiled_kernel_is_the_one_that_runs():
    """``pip install -e .`` compiles the C kernel; the engines then run it, and say so. Skipped
    where it could not be built, except on CI (the CI variable set), where a missing
    kernel is a failure."""
    if not HAVE_KERNEL and not os.environ.get("CI"):
        pytest.skip("the C kernel was not built (no C compiler at install time?)")
    from recency_lib.kernels import kernel_name

    assert os.environ.get("RECENCY_LIB_KERNEL", "").lower() != "numpy", (
        "RECENCY_LIB_KERNEL=numpy is set"
    )
    assert kernel_name() == "c", "recency_lib._kernel did not load: the numpy path would run"
    assert simulate(SimConfig(n=4, d=8, layers=2, samples=64)).extra["kernel"] == "c"


@needs_kernel
def test_simulate_with_either_kernel_agrees_to_rounding(monkeypatch):
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=10, d=64, layers=4, samples=3_000, seed=9)
    fast = simulate(cfg)
    monkeypatch.setenv("RECENCY_LIB_KERNEL", "numpy")
    ref = simulate(cfg)
    assert fast.extra["kernel"] == "c" and ref.extra["kernel"] == "numpy"
    for k in (
        "score_mean",
        "attn_mean",
        "diff_mean",
        "sq_norm_mean",
        "recency_probability",
        "diff_cv_mean",
        "trend_cv_mean",
        "recency_probability_cv",
    ):
        _close(getattr(ref, k), getattr(fast, k), 1e-11)


@pytest.mark.parametrize("engine", ["gram", "dense"])
def test_streamed_moments_equal_a_two_pass_computation_over_many_blocks(engine):
    """Means and standard errors merged over 23 blocks (in two groups, Chan et al.) equal numpy's
    two-pass mean and std of the same per-sample features (sample_trajectories draws
    the same blocks)."""
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=5, d=16, layers=3, seed=12, engine=engine)
    bsize = block_size(cfg, engine)
    cfg = cfg.replace(samples=22 * bsize + 37)  # 23 blocks, the last one short
    r = simulate(cfg, chunk_size=3 * bsize)
    s, a = sample_trajectories(cfg)
    assert s.shape[0] == cfg.samples
    n = cfg.samples
    # absolute floor 1e-13: the LayerNorm diagonal is sqrt(d) in every sample up to rounding, so its
    # standard error (~1e-14) is rounding noise that two summation orders need not reproduce
    for mean, sem, x in (("score_mean", "score_sem", s), ("attn_mean", "attn_sem", a)):
        np.testing.assert_allclose(getattr(r, mean), x.mean(0), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(
            getattr(r, sem), x.std(0, ddof=1) / np.sqrt(n), rtol=1e-9, atol=1e-13
        )
    steps = s[:, :, :, 1:] - s[:, :, :, :-1]  # [b, l, i, j - 1] = S_ij - S_i,j-1
    for l in range(cfg.layers):
        for i in range(1, cfg.n):
            x = steps[:, l, i, :i]
            np.testing.assert_allclose(
                r.diff_mean[l, i, 1 : i + 1], x.mean(0), rtol=1e-10, atol=1e-14
            )
            np.testing.assert_allclose(
                r.diff_sem[l, i, 1 : i + 1], x.std(0, ddof=1) / np.sqrt(n), rtol=1e-8, atol=1e-13
            )


# -- determinism: chunking, executors, grids ---------------------------------------------------

CFGS = [
    SimConfig(alpha=0.5, gamma=1.0, n=6, d=16, layers=3, samples=3_000, seed=7),
    SimConfig(alpha=0.0, norm="none", n=5, d=9, layers=2, samples=2_500, seed=8),
    SimConfig(alpha=1.0, norm="rms", n=4, d=32, layers=2, samples=1_000, seed=9),
    SimConfig(alpha=0.8, n=12, d=8, layers=3, samples=1_500, seed=10),
    SimConfig(alpha=0.3, gamma=0.5, n=7, d=12, layers=2, samples=900, seed=11, engine="dense"),
]


def test_simulate_many_with_a_process_pool_equals_each_config_alone():
    alone = [simulate(c) for c in CFGS]
    with ProcessPoolExecutor(2) as pool:
        many = simulate_many(CFGS, executor=pool, chunk_size=700)
        again = simulate_many(CFGS, executor=pool)
    for c, a, m, g in zip(CFGS, alone, many, again):
        assert m.config == c and same(a, m) and same(a, g)
        assert m.engine == a.engine and m.extra == a.extra


def test_configs_sharing_a_stream_run_together_and_equal_runs_alone():
    """The LayerNorm settings of Figure 1 draw the same numbers (one stream, drawn once per block
    when run together); each result is still bitwise that of the config run alone."""
    from recency_lib.engines import stream_key

    fig1 = [
        SimConfig(n=6, d=16, layers=3, samples=2_500, seed=4, **kw)
        for kw in (
            dict(alpha=0.0, norm="none"),
            dict(alpha=0.0),
            dict(alpha=0.5),
            dict(alpha=0.5, gamma=1.0),
        )
    ]
    assert len({stream_key(c) for c in fig1[1:]}) == 1 and stream_key(fig1[0]) != stream_key(
        fig1[1]
    )
    alone = [simulate(c) for c in fig1]
    with ProcessPoolExecutor(2) as pool:
        together = simulate_many(fig1, executor=pool, chunk_size=700)
    assert all(same(a, t) for a, t in zip(alone, together))
    assert all(same(a, t) for a, t in zip(alone, simulate_many(fig1)))


def test_thread_pool_equals_serial():
    """The compiled kernel releases the GIL; each thread has its own scratch space."""
    from concurrent.futures import ThreadPoolExecutor

    alone = simulate_many(CFGS)
    with ThreadPoolExecutor(3) as pool:
        threaded = simulate_many(CFGS, executor=pool, chunk_size=300)
    assert all(same(a, t) for a, t in zip(alone, threaded))


def test_thread_pool_in_a_fresh_process_does_not_deadlock():
    """A thread pool as the first thing a process runs: threadpoolctl's scan of the loaded libraries
    in one worker thread used to deadlock against the other's first import of numpy.random (hung 3
    of 3 times in the Figure-1 benchmark). Worker threads leave BLAS's limit alone now."""
    code = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from recency_lib import SimConfig, simulate_many\n"
        "cfgs = [SimConfig(n=6, d=16, layers=2, samples=3_000, seed=s, alpha=0.5) "
        "for s in (1, 2)]\n"
        "with ThreadPoolExecutor(2) as pool:\n"
        "    res = simulate_many(cfgs, executor=pool, chunk_size=512)\n"
        "print(repr([float(r.recency_probability[-1]) for r in res]))\n"
        "print(repr([float(r.recency_probability[-1]) for r in simulate_many(cfgs)]))\n"
    )
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        threaded, serial = out.stdout.splitlines()
        assert threaded == serial


def test_numpy_kernel_is_bitwise_reproducible_too(numpy_kernel):
    cfg = CFGS[0]
    ref = simulate(cfg)
    assert ref.extra["kernel"] == "numpy"
    for chunk in (1, 513, 10**9):
        assert same(simulate(cfg, chunk_size=chunk), ref)
    with ProcessPoolExecutor(2) as pool:  # the kernel travels with the task
        assert same(simulate(cfg, executor=pool, chunk_size=600), ref)


def test_block_size_depends_on_config_and_engine_only():
    cfg = SimConfig(n=10, d=64)
    assert (
        block_size(cfg, "gram") == block_size(cfg.replace(samples=7, seed=3, d=4096), "gram") == 512
    )
    assert block_size(cfg, "dense") == 128
    for n in (1, 3, 10, 40, 200):
        for e in ("gram", "dense"):
            b = block_size(SimConfig(n=n), e)
            assert 16 <= b <= 4096 and b & (b - 1) == 0


def test_sample_trajectories_are_what_simulate_averages():
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=8, d=16, layers=3, samples=1_300, seed=4)  # 3 blocks
    r = simulate(cfg)
    s, a = sample_trajectories(cfg)
    assert s.shape == (1_300, 3, 8, 8)
    np.testing.assert_allclose(r.score_mean, s.mean(0), rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(r.attn_mean, a.mean(0), rtol=1e-12, atol=1e-15)


# -- memory: bounded, whatever the number of samples -----------------------------------------------


def _peak_rss_mb(cfg: SimConfig, env: dict | None = None) -> float:
    """Peak RSS (MB) of a fresh interpreter that imports recency_lib, warms the kernel up and
    simulates ``cfg``."""
    code = (
        "import resource, sys; from recency_lib import SimConfig, simulate; "
        "from recency_lib.engines import warm_up; warm_up(); "
        f"simulate(SimConfig(**{cfg.to_dict()!r})); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    return int(out.stdout.split()[-1]) / 1024


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize(
    "engine, n, few, many",
    [("gram", 10, 10_000, 200_000), ("gram", 128, 16, 320), ("dense", 128, 16, 320)],
)
def test_memory_does_not_grow_with_samples(path, engine, n, few, many):
    """Peak RSS of a run with 20 times the samples of another stays within 10% + 20 MB of it (blocks
    are enumerated lazily and reduced to moments as they finish). 1 layer, d = 64. At n = 128 a
    block is 16 samples: a path that kept its blocks' features (~3 MB each) would grow by ~60 MB."""
    if path == "compiled" and not HAVE_KERNEL and not os.environ.get("CI"):
        pytest.skip("the C kernel was not built")
    env = {"RECENCY_LIB_KERNEL": "numpy"} if path == "numpy" else None
    cfg = SimConfig(n=n, d=64, layers=1, engine=engine, samples=few)
    small, large = _peak_rss_mb(cfg, env), _peak_rss_mb(cfg.replace(samples=many), env)
    assert large < 1.1 * small + 20, (small, large)


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("engine", ["gram", "dense"])
def test_memory_at_n512_is_bounded_on_every_path(path, engine):
    """A block at n = 512 (16 samples, 1 layer, d = 64) stays below 1 GB with the C kernel and on
    the numpy path (whose recency count works row by row, never on all C(n, 3) triples at once)."""
    if path == "compiled" and not HAVE_KERNEL and not os.environ.get("CI"):
        pytest.skip("the C kernel was not built")
    env = {"RECENCY_LIB_KERNEL": "numpy"} if path == "numpy" else None
    assert _peak_rss_mb(SimConfig(n=512, d=64, layers=1, engine=engine, samples=16), env) < 1024


def test_blocks_are_enumerated_lazily(monkeypatch):
    """10^15 samples (2 * 10^12 blocks): the tasks are generated one at a time, so starting such a
    run allocates next to nothing (the run itself is cut short after three tasks)."""
    import tracemalloc

    from recency_lib import engines

    class Stop(Exception):
        pass

    calls = []

    def first_tasks(plans, first, count):
        calls.append((first, count))
        if len(calls) == 3:
            raise Stop
        return [0.0] * len(plans), [[] for _ in plans]

    monkeypatch.setattr(engines, "run_task", first_tasks)
    monkeypatch.setenv("RECENCY_LIB_MAX_HOURS", "1e12")  # the budget would refuse such a run
    engines.warm_up()  # loading the kernel allocates too
    tracemalloc.start()
    try:
        with pytest.raises(Stop):
            simulate(SimConfig(samples=10**15))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    per = engines.TASK_BLOCKS
    assert calls[:2] == [(0, per), (per, per)]
    assert peak < 2**20, peak  # a list of the blocks would take ~100 TB


def test_numpy_path_at_long_sequences(monkeypatch):
    """The numpy path at n = 128 (no (C(n, 3), B) array: the recency count goes row by row) gives
    the exchangeable first layer its recency probability 1/2 and agrees with the compiled kernel."""
    cfg = SimConfig(alpha=0.5, n=128, d=32, layers=2, samples=64, seed=3)
    monkeypatch.setenv("RECENCY_LIB_KERNEL", "numpy")
    r = simulate(cfg)
    assert r.extra["kernel"] == "numpy"
    assert abs(r.recency_probability[0] - 0.5) < Z * r.recency_probability_sem[0]
    draws = gram_draws(cfg, block_key(1, 0), 20)
    m_np = gram_block_moments(cfg, *draws, kernel="numpy")
    monkeypatch.delenv("RECENCY_LIB_KERNEL")
    if HAVE_KERNEL:
        _close(m_np.mean, gram_block_moments(cfg, *draws, kernel="c").mean, 1e-11)


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_dask_executor_gives_identical_results(processes):
    """A dask.distributed client's executor: in-process threads, and 2 worker processes (which
    import recency_lib and load the kernel themselves)."""
    pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    serial = simulate_many(CFGS)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dasked = simulate_many(CFGS, executor=client.get_executor(), chunk_size=800)
        assert len(client.scheduler_info()["workers"]) == 2
    for a, b in zip(serial, dasked):
        assert same(a, b) and a.extra == b.extra


# -- large d and the paper's closed forms --------------------------------------------------------


@pytest.mark.parametrize("d", [1024, 4096])
@pytest.mark.parametrize(
    "kw",
    [
        dict(alpha=0.0),
        dict(alpha=0.5, gamma=1.0),
        dict(alpha=0.8, norm="rms"),
        dict(alpha=0.5, norm="none", gamma=1.0),
    ],
)
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
    r = simulate(
        SimConfig(
            alpha=0.0, gamma=0.0, norm="layernorm", n=10, d=d, layers=2, samples=20_000, seed=1
        )
    )
    i, j = np.tril_indices(10)
    expect = th.theorem1_score(i + 1, j + 1, d)
    mean, sem = r.score_mean[1][i, j], r.score_sem[1][i, j]
    off = i > j
    assert np.all(np.abs(mean[off] - expect[off]) < Z * sem[off])
    np.testing.assert_allclose(mean[~off], expect[~off], rtol=1e-9)  # eps = 1e-12: 1e-12 relative


def test_long_rows_dense_and_gram_recency_probabilities_agree():
    """n = 40: the dense engine counts triples on (batch, n, n) scores, the gram kernel on its own
    packed scores (the same compiled count, or the numpy one); the recency probabilities must agree
    within Z combined SEs, and layer 1 (an exchangeable row: no order) must sit at 0.5."""
    cfg = SimConfig(alpha=0.5, n=40, d=16, layers=3, samples=400)
    dense = simulate(cfg.replace(engine="dense", seed=11))
    gram = simulate(cfg.replace(engine="gram", seed=12))
    z = _z_scores(
        dense.recency_probability,
        dense.recency_probability_sem,
        gram.recency_probability,
        gram.recency_probability_sem,
    )
    assert z.max() < Z, z
    for r in (dense, gram):
        assert abs(r.recency_probability[0] - 0.5) < Z * r.recency_probability_sem[0]
        assert (
            r.recency_probability[2] - 0.5 > Z * r.recency_probability_sem[2]
        )  # recency by layer 3


@pytest.mark.parametrize("stack_bytes", [None, 1])
@pytest.mark.parametrize("kernel", [pytest.param("c", marks=needs_kernel), "numpy"])
def test_team_blocks_equal_block_by_block(kernel, stack_bytes, monkeypatch):
    """run_task (the tasks' path: draws once per block, the blocks of one size reduced
    together, up to STACK_BYTES of sums at a time; 1: one block at a time) gives, per config and
    block, the bits of gram_block_moments on that block's draws; the last, shorter block included,
    and configs that share the stream but not alpha or gamma."""
    from recency_lib import engines

    if stack_bytes is not None:
        monkeypatch.setattr(engines, "STACK_BYTES", stack_bytes)
    base = dict(n=7, d=16, layers=3, samples=3 * 128 + 50, norm="layernorm")
    cfgs = [SimConfig(alpha=0.0, **base), SimConfig(alpha=0.4, gamma=1.0, **base)]
    plans = [engines.Plan(cfg, "gram", 128, kernel) for cfg in cfgs]
    blocks = plans[0].sizes(0, 4)
    _, out = engines.run_task(plans, 0, 4)
    for cfg, got in zip(cfgs, out):
        assert [k for k, _ in got] == [0, 1, 2, 3]
        for (k, size), (_, m) in zip(blocks, got):
            want = gram_block_moments(
                cfg, *gram_draws(cfg, block_key(cfg.seed, k), size, kernel), kernel=kernel
            )
            assert m.count == want.count == size
            for a, b in ((m.mean, want.mean), (m.m2, want.m2), (m.cross, want.cross)):
                assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_in_process_tasks_hold_a_few_mb_of_moments(monkeypatch):
    """Without an executor a task runs up to 32 blocks (less Python per block at short n), but only
    as many as keep its blocks' moments under ~4 MB: at n = 64 a team of three configs gets 2."""
    from recency_lib import engines
    from recency_lib.features import n_features

    counts = []
    real = engines.run_task

    def spy(plans, first, count):
        counts.append((len(plans), count))
        return real(plans, first, count)

    monkeypatch.setattr(engines, "run_task", spy)
    for n, samples in ((10, 40_000), (64, 3_000)):
        counts.clear()
        simulate_many(
            [
                SimConfig(n=n, d=64, layers=4, samples=samples, alpha=a, gamma=g)
                for a, g in ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0))
            ]
        )
        per_block = 3 * 24 * 4 * n_features(n)
        most = max(c for _, c in counts)
        assert all(team == 3 for team, _ in counts)
        assert most * per_block <= engines.TASK_BYTES or most == 1
        assert most == min(engines.TASK_BLOCKS, engines.TASK_BYTES // per_block)
