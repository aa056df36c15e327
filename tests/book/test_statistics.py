"""The book's per-sequence statistics through the results cache (recency_lib.cache.cached_statistic):
computed once, read back bit for bit, keyed by what shapes them and nothing else."""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from recency_lib import SimConfig, cache
from recency_lib.engines import sequence_statistic
from companion import statistics

CFG = SimConfig(alpha=0.5, n=7, d=16, layers=3, samples=1_500, seed=4)


def test_computed_once_and_read_back_as_computed(tmp_path):
    direct = sequence_statistic(CFG, statistics.distance_contrasts, control_mean=0.0)
    first = cache.cached_statistic(CFG, statistics.distance_contrasts, control_mean=0.0, cache=tmp_path)
    again = cache.cached_statistic(CFG, statistics.distance_contrasts, control_mean=0.0, cache=tmp_path)
    for name in ("mean", "sem", "cv_mean", "cv_sem"):
        assert np.array_equal(getattr(first, name), getattr(direct, name))
        assert np.array_equal(getattr(again, name), getattr(direct, name))
    assert again.samples == CFG.samples and again.config == CFG
    assert len(list(tmp_path.glob("statistic-*.json"))) == 1


def test_the_key_follows_config_samples_control_and_the_statistic(tmp_path):
    cache.cached_statistic(CFG, statistics.distance_contrasts, control_mean=0.0, cache=tmp_path)
    cache.cached_statistic(CFG, statistics.distance_contrasts, cache=tmp_path)                    # no control
    cache.cached_statistic(CFG, statistics.distance_contrasts, samples=600, cache=tmp_path)       # fewer sequences
    cache.cached_statistic(CFG.replace(seed=5), statistics.distance_contrasts, cache=tmp_path)
    cache.cached_statistic(CFG, statistics.trend_steps, control_mean=0.0, cache=tmp_path)        # another statistic
    assert len(list(tmp_path.glob("statistic-*.json"))) == 5
    two = SimConfig(alpha=0.0, n=6, d=16, layers=2, samples=400, seed=1)
    a = cache.cached_statistic(two, statistics.first_order_trend(16), cache=tmp_path)
    b = cache.cached_statistic(two, statistics.first_order_trend(25), cache=tmp_path)           # its keyword: a key
    assert a.mean[1, 0] != b.mean[1, 0] and len(list(tmp_path.glob("statistic-*.json"))) == 7


def test_its_module_imports_nothing_of_the_books_style_or_text():
    closure = set(cache.module_closure("companion.statistics"))
    assert {m for m in closure if m.startswith("companion")} == {"companion", "companion.statistics"}   # its package runs first


@pytest.mark.parametrize("statistic", [lambda s, a: s[:, :, :1, 0], functools.partial(statistics.first_order, 1, d=16),
                                       "trend"])
def test_only_a_keyable_statistic(tmp_path, statistic):
    with pytest.raises(ValueError, match="allowed: a module-level function"):
        cache.cached_statistic(CFG, statistic, cache=tmp_path)
    assert not list(tmp_path.glob("statistic-*"))


def test_an_entry_of_another_key_is_recomputed(tmp_path):
    first = cache.cached_statistic(CFG, statistics.distance_contrasts, cache=tmp_path)
    entry = next(tmp_path.glob("statistic-*.json"))
    stored = json.loads(entry.read_text())
    stored["value"]["mean"][0][0] = 99.0
    stored["key"]["params"]["samples"] = 7                                   # a key this build never makes
    entry.write_text(json.dumps(stored))
    again = cache.cached_statistic(CFG, statistics.distance_contrasts, cache=tmp_path)
    assert np.array_equal(again.mean, first.mean)
