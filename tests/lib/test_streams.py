"""The gram engine's random numbers (recency_lib.streams and the kernel's generator).

Three kinds of checks: the Philox bits against the published known answers; the compiled generator
against the numpy twin, bit for bit (every path: partial groups, odd counts, dof = 1, rejected
tries); and the laws, by z-scores against the Monte-Carlo standard error and by Kolmogorov-Smirnov
tests. The seeds are fixed, so each check is deterministic; the thresholds say how unlikely a
failure would be for a correct generator (|z| > 5: p < 6e-7 per check; KS p < 1e-4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from recency_lib import SimConfig, kernels, streams
from recency_lib.sampling import gram_draws

Z_MAX = 5.0  # |z| beyond this for a correct generator: p < 6e-7 per statistic
KS_MIN_P = 1e-4  # KS p-value below this for a correct generator: p = 1e-4 per test

needs_c = pytest.mark.skipif(kernels.load() is None, reason="the C kernel was not built")


def _c_draws(key, nb, m, dof, q):
    chi2, normals = np.empty((m, nb)), np.empty((q, nb))
    kernels.load().gram_draws(key, nb, m, dof, chi2, normals)
    return chi2, normals


@pytest.mark.parametrize(
    "counter, key, expected",
    [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_philox_gives_the_published_known_answers(counter, key, expected):
    """Random123's known-answer vectors for Philox4x32-10 (its kat_vectors file)."""
    out = streams.philox([np.uint64(c) for c in counter], key)
    assert [int(w) for w in out] == list(expected)


@needs_c
@pytest.mark.parametrize(
    "nb, m, dof, q",
    [
        (1, 1, 1, 0),
        (7, 3, 3, 3),
        (37, 10, 63, 45),
        (512, 10, 63, 45),
        (101, 4, 4, 9),
        (64, 1, 1024, 0),
        (9, 16, 16, 120),
        (4096, 2, 2, 1),
    ],
)
def test_the_compiled_generator_gives_the_numpy_twins_bits(nb, m, dof, q):
    """Same key -> the same chi-squares and normals, bit for bit, whatever the group size (partial
    groups: nb not a multiple of 4 or 8), with dof = 1 rows (the square of a normal) and with
    chi-squares that needed a second pair of tries (dof = 2 rejects ~5 % of tries)."""
    key = streams.block_key(nb * 100 + dof, m)
    c_chi2, c_normals = _c_draws(key, nb, m, dof, q)
    np_chi2, np_normals = streams.draw_block(key, nb, m, dof, q)
    assert c_chi2.tobytes() == np_chi2.tobytes()
    assert c_normals.tobytes() == np_normals.tobytes()


def test_some_chi_squares_take_a_second_pair_of_tries(monkeypatch):
    """The rejection path is exercised by the bitwise test above: at dof = 2 with 4096 samples,
    some samples reject both tries of pair 0 and go on to Philox calls 2 and 3."""
    seen = []
    real = streams.philox

    def spy(counter, key):
        seen.append(np.max(np.asarray(counter[0])))
        return real(counter, key)

    monkeypatch.setattr(streams, "philox", spy)
    streams.draw_block(streams.block_key(4096 * 100 + 2, 2), 4096, 2, 2, 1)
    assert max(seen) >= 2


@needs_c
def test_gram_draws_are_the_same_on_either_kernel_and_new_for_every_block():
    cfg = SimConfig(alpha=0.5, n=10, d=64, layers=2, samples=100)
    a = gram_draws(cfg, streams.block_key(3, 0), 100, kernel="c")
    b = gram_draws(cfg, streams.block_key(3, 0), 100, kernel="numpy")
    other = gram_draws(cfg, streams.block_key(3, 1), 100)
    for x, y, z in zip(a, b, other):
        assert x.tobytes() == y.tobytes()
        assert not np.any(x == z)  # another block: other numbers throughout


def test_block_keys_come_from_the_seed_sequence():
    words = np.random.SeedSequence(5, spawn_key=(7,)).generate_state(3, np.uint32)
    assert streams.block_key(5, 7) == tuple(int(w) for w in words)
    assert len({streams.block_key(s, k) for s in range(20) for k in range(20)}) == 400


def test_log_and_box_muller_are_accurate_to_the_last_bits():
    """log within 2 ulp of np.log on (0, 1] and beyond (the Marsaglia-Tsang test takes log v for
    v up to ~100); Box-Muller's cos and sin of 2 pi U within 2e-16 of numpy's."""
    rng = np.random.default_rng(0)
    u = np.concatenate(
        [
            rng.random(100_000),
            2.0 ** -np.arange(53.0),
            [
                1.0,
                math.sqrt(2),
                math.sqrt(0.5),
                np.nextafter(math.sqrt(2), 0),
                np.nextafter(math.sqrt(2), 2),
            ],
            rng.random(1000) * 100,
        ]
    )
    u = u[u > 0]
    exact = np.log(u)
    err = np.abs(streams.log(u) - exact)
    assert np.all(err <= 2 * np.spacing(np.maximum(np.abs(exact), np.finfo(float).tiny)))
    assert streams.log(np.array([1.0]))[0] == 0.0
    words = [rng.integers(0, 2**32, 50_000, dtype=np.uint64) for _ in range(4)]
    z0, z1 = streams.box_muller(words)
    r = np.sqrt(-2.0 * np.log(1.0 - streams.uniform52(words[0], words[1])))
    angle = 2 * np.pi * streams.uniform52(words[2], words[3])
    assert np.max(np.abs(z0 - r * np.cos(angle))) < 2e-15 * np.max(r)
    assert np.max(np.abs(z1 - r * np.sin(angle))) < 2e-15 * np.max(r)


def test_uniform52_spans_zero_to_one_minus_an_ulp():
    lo, hi = np.uint64(0), np.uint64(0xFFFFFFFF)
    assert streams.uniform52(lo, lo) == 0.0
    assert streams.uniform52(hi, hi) == 1.0 - 2.0**-52


def _moment_z(x: np.ndarray, mean: float, var: float, mu4: float) -> tuple[float, float]:
    """z of the sample mean and the sample variance against their Monte-Carlo standard errors
    (var / N and (mu4 - var^2) / N, the latter with the law's fourth central moment)."""
    n = x.size
    return (x.mean() - mean) / math.sqrt(var / n), (x.var() - var) / math.sqrt((mu4 - var**2) / n)


def test_normals_have_the_standard_normal_law_and_no_correlations():
    nb, q = 20_000, 100
    normals = (
        streams.draw_block(streams.block_key(11, 0), nb, 1, 1, q)[1]
        if kernels.load() is None
        else _c_draws(streams.block_key(11, 0), nb, 1, 1, q)[1]
    )
    z = normals.ravel()  # 2e6 numbers
    zm, zv = _moment_z(z, 0.0, 1.0, 3.0)
    assert abs(zm) < Z_MAX and abs(zv) < Z_MAX
    assert st.kstest(z, "norm").pvalue > KS_MIN_P
    tail = np.mean(np.abs(z) > 3)  # 0.0027 for N(0, 1)
    p3 = 2 * st.norm.sf(3)
    assert abs(tail - p3) / math.sqrt(p3 * (1 - p3) / z.size) < Z_MAX
    # pairs of one Philox call (2p, 2p + 1), neighbouring pairs, neighbouring samples (lanes)
    for a, b in (
        (normals[0::2], normals[1::2]),
        (normals[:-2], normals[2:]),
        (normals[:, :-1], normals[:, 1:]),
    ):
        corr = np.mean(a * b)  # E[z z'] = 0, SE 1 / sqrt(N)
        assert abs(corr) * math.sqrt(a.size) < Z_MAX


@pytest.mark.parametrize("dof", [1, 2, 3, 5, 16, 63, 1023])
def test_chi_squares_have_their_law(dof):
    """mean dof, variance 2 dof (fourth central moment 12 dof (dof + 4)), and the KS test against
    scipy's chi-square distribution, 200,000 draws each."""
    nb = 200_000
    key = streams.block_key(dof, 0)
    x = (
        _c_draws(key, nb, 1, dof, 0)
        if kernels.load() is not None
        else streams.draw_block(key, nb, 1, dof, 0)
    )[0][0]
    zm, zv = _moment_z(x, dof, 2.0 * dof, 12.0 * dof * (dof + 4))
    assert abs(zm) < Z_MAX and abs(zv) < Z_MAX
    assert st.kstest(x, "chi2", args=(dof,)).pvalue > KS_MIN_P


def test_rows_and_normals_of_a_block_are_uncorrelated():
    """The chi-square rows and the normals of one sample come from separate counters: no correlation
    between row i and row i + 1, nor between a chi-square and a normal of the same sample."""
    nb = 100_000
    key = streams.block_key(99, 0)
    chi2, normals = (
        _c_draws(key, nb, 3, 10, 4)
        if kernels.load() is not None
        else streams.draw_block(key, nb, 3, 10, 4)
    )
    std = [(row - row.mean()) / row.std() for row in chi2]
    for a, b in ((std[0], std[1]), (std[1], std[2]), (std[0], normals[0]), (std[2], normals[3])):
        assert abs(np.mean(a * b)) * math.sqrt(nb) < Z_MAX


@needs_c
def test_bad_sizes_are_refused_before_any_work():
    k = kernels.load()
    with pytest.raises(ValueError, match=r"bad key or sizes|expected"):
        k.gram_draws(
            (1, 2, 3), 8, 3, 2, np.empty((3, 8)), np.empty((0, 8))
        )  # dof 2 - 2 = 0 in row 2
    with pytest.raises(ValueError, match=r"bad key or sizes|expected"):
        k.gram_draws((1, 2, 3), 8, 2, 5, np.empty((2, 7)), np.empty((0, 8)))
    with pytest.raises(ValueError, match="expected"):
        k.gram_draws((1, 2, 3), 8, 2, 5, np.empty((2, 8), dtype=np.float32), np.empty((0, 8)))
