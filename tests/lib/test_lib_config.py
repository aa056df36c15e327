"""SimConfig validation: every bad input is refused at construction with a clear message."""

import math

import numpy as np
import pytest

from recency_lib import SimConfig

BAD = [
    ("alpha", -0.1, "alpha=-0.1"),
    ("alpha", 1.5, "alpha=1.5"),
    ("alpha", math.nan, "alpha=nan"),
    ("alpha", "0.5", "alpha='0.5'"),
    ("gamma", math.nan, "gamma=nan"),
    ("gamma", math.inf, "gamma=inf"),
    ("gamma", -math.inf, "gamma=-inf"),
    ("n", 0, "n=0"),
    ("n", 2.5, "n=2.5"),
    ("n", 10.0, "n=10.0"),
    ("d", 1, "d=1"),
    ("d", True, "d=True"),
    ("layers", 0, "layers=0"),
    ("samples", 1, "samples=1"),
    ("norm", "batchnorm", "norm='batchnorm'"),
    ("seed", -1, "seed=-1"),
    ("engine", "gpu", "engine='gpu'"),
    ("eps", -1e-3, "eps=-0.001"),
    ("eps", math.nan, "eps=nan"),
]


@pytest.mark.parametrize("name,value,shown", BAD)
def test_bad_value_raises_naming_parameter_value_and_range(name, value, shown):
    with pytest.raises(ValueError) as info:
        SimConfig(**{name: value})
    msg = str(info.value)
    assert msg.startswith(shown), msg
    assert "allowed" in msg


def test_defaults_and_boundaries_are_valid():
    SimConfig()
    SimConfig(alpha=0.0, gamma=-3.5, n=1, d=2, layers=1, samples=2, seed=0)
    SimConfig(alpha=1.0, norm="rms")
    SimConfig(n=np.int64(5), d=np.int32(8), alpha=np.float64(0.25))


def test_numpy_scalars_are_normalised_for_hashing_and_json():
    a = SimConfig(n=np.int64(5), alpha=np.float32(0.5))
    b = SimConfig(n=5, alpha=0.5)
    assert a == b and hash(a) == hash(b)
    assert type(a.n) is int and type(a.alpha) is float


def test_round_trip_and_unknown_fields():
    cfg = SimConfig(alpha=0.3, gamma=1.0, norm="rms", n=7, d=33, layers=3, samples=50, seed=9)
    assert SimConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown field"):
        SimConfig.from_dict({**cfg.to_dict(), "no_such_field": 2})


def test_replace_revalidates():
    with pytest.raises(ValueError, match="d=0"):
        SimConfig().replace(d=0)


def test_shared_vector_scale():
    assert SimConfig(alpha=0.5).c == pytest.approx(1.0)
    assert SimConfig(alpha=0.8).c == pytest.approx(2.0)
    assert math.isinf(SimConfig(alpha=1.0).c)
