"""recency_lib.cache: results are reused only for the same config, z, library source and kernel."""
import numpy as np
import pytest

from recency_lib import SimConfig, cache, engines, kernels
from recency_lib.cache import cache_key, cached_simulate, cached_simulate_many

CFG = SimConfig(alpha=0.5, n=4, d=8, layers=2, samples=64, seed=3)


def _no_simulation(*args, **kwargs):
    raise AssertionError("the cache should have served this result")


def test_second_call_reads_the_file_and_returns_the_same_numbers(tmp_path, monkeypatch):
    first = cached_simulate(CFG, cache=tmp_path)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and files[0].stem == cache_key(CFG)
    monkeypatch.setattr(engines, "simulate", _no_simulation)
    monkeypatch.setattr(engines, "simulate_many", _no_simulation)
    again = cached_simulate(CFG, cache=tmp_path)
    many = cached_simulate_many([CFG, CFG], cache=tmp_path)
    for r in (again, *many):
        assert np.array_equal(r.score_mean, first.score_mean, equal_nan=True)
        assert np.array_equal(r.recency_probability_sem, first.recency_probability_sem, equal_nan=True)


def test_key_changes_with_config_z_source_and_kernel(monkeypatch):
    keys = {cache_key(CFG), cache_key(CFG.replace(seed=4)), cache_key(CFG.replace(samples=65)),
            cache_key(CFG, z=4.0)}
    assert len(keys) == 4
    base = cache_key(CFG)
    monkeypatch.setattr(kernels, "_NUMBA", False)            # the numpy reference kernel
    assert kernels.kernel_name() == "numpy" and cache_key(CFG) != base
    monkeypatch.undo()
    assert cache_key(CFG) == base
    monkeypatch.setattr(cache, "source_hash", lambda: "edited")
    assert cache_key(CFG) != base


def test_unreadable_entry_is_recomputed(tmp_path):
    path = tmp_path / f"{cache_key(CFG)}.json"
    path.write_text("{not json")
    res = cached_simulate(CFG, cache=tmp_path)
    assert res.config == CFG
    assert cached_simulate(CFG, cache=tmp_path).config == CFG  # the rewritten file loads


def test_refresh_recomputes(tmp_path, monkeypatch):
    cached_simulate(CFG, cache=tmp_path)
    monkeypatch.setattr(engines, "simulate", _no_simulation)
    with pytest.raises(AssertionError, match="should have served"):
        cached_simulate(CFG, cache=tmp_path, refresh=True)
