"""companion.pages: the chapters' own helpers, on constructed results. The number functions produce
a key for every hidden size they are given and none for one they are not (a page whose d list is
edited still runs); the papermill runs of the pages (test_notebooks.py, test_notebook_rules.py)
glue what the prose cites."""

import numpy as np
from fake_results import fake, thm

from companion import claims, theorem1
from companion.pages import layernorm as pages_layernorm
from companion.pages import residual as pages_residual
from recency_lib import SimConfig
from recency_lib.trajectories import SequenceStatistic


def test_theorem1_numbers_follow_the_hidden_sizes_given():
    th = {d: thm(d, step=0.1, trend=1e-3, trend_se=1e-5) for d in (8, 32)}  # neither 16 nor 64
    v1 = claims.theorem1_claim(th)
    reach = theorem1.theorem1_reach(th)
    one = SequenceStatistic(
        SimConfig(alpha=0.0, n=10, d=8, layers=2, samples=100),
        100,
        mean=np.full((2, 11), 0.5),
        sem=np.zeros((2, 11)),
    )
    out = pages_layernorm.theorem1_numbers(
        th=th,
        reach=reach,
        one_by_one=one,
        n=10,
        samples=100,
        zc1=v1.numbers["z_threshold"],
    )
    for d in (8, 32):
        assert {
            f"layernorm-up-{d}",
            f"layernorm-plain-z{d}",
            f"layernorm-vr-{d}",
            f"layernorm-samples-d{d}",
        } <= set(out)
    assert (
        "layernorm-need-all-32" in out and "layernorm-need-all-8" not in out
    )  # the derived steps from d = 16
    assert not [k for k in out if k.endswith(("-16", "-64", "d16", "d64", "v16", "v64"))]
    assert out["layernorm-sorted-8"] == "50"


def test_size_numbers_take_their_ds_from_the_verdict():
    th = {d: thm(d, trend=1e-3, trend_se=1e-5) for d in (16, 32)}
    vc = claims.corrected_theorem1_claim(th)
    out = pages_layernorm.size_numbers(ln_points=[], n=10, none_points=[], vc=vc)
    assert {"layernorm-q16", "layernorm-q32", "layernorm-lead32"} <= set(
        out
    ) and "layernorm-q64" not in out


def test_residual_weakening():
    cfg = SimConfig(alpha=0.5, layers=3)
    got = pages_residual.weakening_rows(
        fake(cfg, rp=[0.5, 0.7, 0.8], rp_se=0.003), fake(cfg, rp=[0.5, 0.6, 0.65], rp_se=0.004)
    )
    assert [w["layer"] for w in got] == ["2", "3"]
    assert got[0]["RP without − with"] == "0.100 ± 0.005" and got[0]["$z$"] == "+20"
    assert (
        got[0]["share of the excess over 0.5 kept"] == got[1]["share of the excess over 0.5 kept"]
    )
