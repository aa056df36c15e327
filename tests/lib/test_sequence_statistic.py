"""trajectories.sequence_statistic: a statistic of every sequence, streamed with simulate's random
streams, with plain and control-variate estimates that agree with the simulator's own fields."""

from __future__ import annotations

import numpy as np
import pytest

from recency_lib import SimConfig, simulate
from recency_lib.trajectories import sample_trajectories, sequence_statistic

CFG = SimConfig(alpha=0.3, gamma=1.0, norm="layernorm", n=6, d=16, layers=3, samples=3000, seed=5)


def trend(scores, attention):
    """The mean step S_ij - S_i,j-1 between earlier keys (2 <= j < i, 1-based),
    per sequence and layer."""
    steps = np.diff(scores, axis=-1)  # [.., i, j-1] = S_ij - S_i,j-1
    n = scores.shape[-1]
    i, j = np.nonzero(np.tril(np.ones((n, n - 1), dtype=bool), -2))  # off-diagonal steps only
    return steps[..., i, j].mean(axis=-1, keepdims=True)  # (B, layers, 1)


def test_the_trend_statistic_is_the_simulators_trend():
    res = simulate(CFG)
    st = sequence_statistic(CFG, trend, control_mean=0.0)
    np.testing.assert_allclose(st.mean[:, 0], res.trend_mean, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(st.sem[:, 0], res.trend_sem, rtol=1e-7)
    np.testing.assert_allclose(st.cv_mean[:, 0], res.trend_cv_mean, rtol=1e-7, atol=1e-15)
    np.testing.assert_allclose(st.cv_sem[:, 0], res.trend_cv_sem, rtol=1e-6)
    assert st.cv_sem[1, 0] < st.sem[1, 0]  # the control helps in layer 2
    assert st.samples == CFG.samples and st.config == CFG


def test_the_same_sequences_as_sample_trajectories():
    cfg = CFG.replace(samples=700)
    scores, _attn = sample_trajectories(cfg)
    st = sequence_statistic(cfg, lambda s, a: s[:, :, -1, :1])  # S_n1 of every layer
    np.testing.assert_allclose(st.mean[:, 0], scores[:, :, -1, 0].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(
        st.sem[:, 0], scores[:, :, -1, 0].std(axis=0, ddof=1) / np.sqrt(700), rtol=1e-9
    )


def test_the_dense_engine_gives_the_same_law():
    cfg = CFG.replace(samples=4000, layers=2)
    g = sequence_statistic(cfg, trend, engine="gram")
    d = sequence_statistic(cfg, trend, engine="dense")
    z = (g.mean - d.mean) / np.hypot(g.sem, d.sem)
    assert np.all(np.abs(z) < 4.5), z


def test_neither_an_executor_nor_the_blocks_per_call_change_a_bit(monkeypatch):
    """Blocks run on threads or processes, and several blocks' matrices in one call of the
    statistic, give the bits of one block at a time in-process: each block's moments are merged in
    block order."""
    from concurrent.futures import ThreadPoolExecutor

    from recency_lib import trajectories
    from recency_lib.workers import worker_pool

    cfg = CFG.replace(samples=9000)

    def fields(st):
        return [st.mean, st.sem, st.cv_mean, st.cv_sem]

    monkeypatch.setattr(trajectories, "STATISTIC_TASK_BYTES", 1)  # one block per call
    alone = fields(sequence_statistic(cfg, trend, control_mean=0.0))
    monkeypatch.setattr(trajectories, "STATISTIC_TASK_BYTES", 2**30)  # a task's blocks in one call
    with ThreadPoolExecutor(2) as threads, worker_pool(2) as processes:
        for executor in (None, threads, processes):
            got = fields(sequence_statistic(cfg, trend, control_mean=0.0, executor=executor))
            for a, b in zip(alone, got):
                assert a.tobytes() == b.tobytes(), executor


def test_a_statistic_whose_width_changes_between_blocks_is_a_clear_error(monkeypatch):
    """One block's statistic gave 1 column, the next 2: refused, in one task or across tasks."""
    from concurrent.futures import ThreadPoolExecutor

    from recency_lib import trajectories

    monkeypatch.setattr(trajectories, "STATISTIC_TASK_BYTES", 1)  # one block per call
    cfg = CFG.replace(samples=3000)  # blocks of 2048 and 952 sequences

    def odd(scores, attention):
        return scores[:, :, -1, : 1 + (len(scores) < 1000)]

    with pytest.raises(ValueError, match=r"allowed: \(B, layers, k\) = \(952, 3, 1\)"):
        sequence_statistic(cfg, odd)
    with ThreadPoolExecutor(2) as threads, pytest.raises(ValueError, match="allowed: one k"):
        sequence_statistic(cfg, odd, executor=threads)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(statistic="trend"), "statistic="),
        (dict(statistic=lambda s, a: s[:, 0]), "statistic returned shape"),
        (dict(statistic=trend, control_mean=[0.0, 0.0]), "control_mean has 2 numbers"),
        (dict(statistic=trend, control_mean=float("nan")), "control_mean="),
        (dict(statistic=trend, samples=1), "samples=1"),
        (dict(statistic=trend, engine="fast"), "engine='fast'"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, needle):
    kwargs = {"statistic": trend, **kwargs}
    with pytest.raises(ValueError, match="allowed") as info:
        sequence_statistic(CFG.replace(samples=50), kwargs.pop("statistic"), **kwargs)
    assert needle in str(info.value)


def _norms(scores, attention, *, sq_norms):
    return sq_norms


@pytest.mark.parametrize("engine", ["gram", "dense"])
def test_a_statistic_that_asks_for_them_gets_the_states_squared_norms(engine):
    cfg = SimConfig(alpha=0.3, gamma=1.0, n=5, d=12, layers=3, samples=3000, seed=2, engine=engine)
    st = sequence_statistic(cfg, _norms)
    res = simulate(cfg)
    np.testing.assert_allclose(st.mean, res.sq_norm_mean, rtol=1e-12)
    np.testing.assert_allclose(st.sem, res.sq_norm_sem, rtol=1e-6)


def test_a_long_statistic_shows_its_progress_where_asked_and_the_numbers_do_not_change(
    monkeypatch, capfd
):
    """As simulate's: a bar on stderr with RECENCY_LIB_PROGRESS=1 (a rerun relays it to the
    terminal), none with 0; the numbers bit for bit the same."""
    cfg = CFG.replace(samples=100_000)
    shown = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("RECENCY_LIB_PROGRESS", flag)
        shown[flag] = (sequence_statistic(cfg, trend, control_mean=0.0), capfd.readouterr().err)
    assert "%|" in shown["1"][1] and "/100000 [" in shown["1"][1] and shown["0"][1] == ""
    for field in ("mean", "sem", "cv_mean", "cv_sem"):
        np.testing.assert_array_equal(getattr(shown["1"][0], field), getattr(shown["0"][0], field))
