"""The one Definition-1 rule (recency_lib.metrics.definition1): family-wise,
and honest at float64's limit.

At large d the true steps of S^(2) (about sqrt(d) e^{-2 sqrt d}) are far below what float64 resolves
beside scores of size sqrt(d); there a step whose standard error is 0, or whose mean and error are
below the rounding of the scores, is never decided, and the API and the command line say
"undecided" and why."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from recency_lib import SimConfig, cli, simulate
from recency_lib.metrics import definition1, familywise_z
from recency_lib.rounding import resolution

LARGE = [
    dict(alpha=a, gamma=g, norm=m, n=n, d=d)
    for d, m, g, n, a in itertools.product(
        (512, 1024, 2048), ("layernorm", "rms"), (0.0, 1.0), (10, 16), (0.0, 0.1, 0.5)
    )
]


@pytest.mark.parametrize("kw", LARGE, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_no_step_without_a_resolvable_error_is_decided_at_large_d(kw):
    res = simulate(SimConfig(layers=3, samples=2_000, seed=1, **kw))
    for layer in range(1, 4):
        d = res.decision(layer)
        mean, sem = (a[layer - 1] for a in res.steps())
        steps = np.isfinite(mean)
        zero = int(np.sum(sem[steps] == 0))
        floor = resolution(np.nanmax(np.abs(res.score_mean[layer - 1])))
        tiny = int(np.sum((np.abs(mean[steps]) <= floor) & (d.z * sem[steps] <= floor)))
        assert d.below >= zero and d.below >= tiny and d.tied == 0
        if d.below:
            assert d.word == "undecided" and "float64's resolution" in d.reason
        if layer == 1:  # every off-diagonal step has mean exactly 0 there
            assert d.word != "holds"


@pytest.mark.parametrize("kw", [LARGE[0], LARGE[7], LARGE[-1], dict(alpha=0.5, n=10, d=64)])
def test_the_api_and_the_command_line_give_the_same_word(kw, capsys):
    cfg = SimConfig(layers=2, samples=2_000, seed=1, **kw)
    words = [simulate(cfg).decision(l).word for l in (1, 2)]
    argv = [
        "simulate",
        *[f"--{k}={v}" for k, v in kw.items()],
        "--layers=2",
        "--samples=2000",
        "--seed=1",
    ]
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()[1:3]
    assert [line.split("Definition 1 ")[1].split(":")[0] for line in lines] == words


def test_a_tie_in_every_sample_violates_the_strict_order():
    res = simulate(SimConfig(alpha=1.0, n=6, d=16, layers=2, samples=500))
    d = res.decision(2)
    assert d.word == "violated" and d.tied == d.steps and "tied in every sample" in d.reason


def test_the_rule_on_constructed_steps():
    z = familywise_z(3)
    assert definition1([1.0, 2.0, 3.0], [0.1, 0.1, 0.1], scale=8).word == "holds"
    assert definition1([1.0, -2.0, 3.0], [0.1, 0.1, 0.1], scale=8).word == "violated"
    assert definition1([1.0, 0.1, 3.0], [0.1, 0.1, 0.1], scale=8).word == "undecided"
    below = definition1([1.0, 1e-15, 3.0], [0.1, 0.0, 0.1], scale=8)  # a zero SE decides nothing
    assert below.word == "undecided" and below.below == 1 and below.z == pytest.approx(z)
    rounding = definition1([-4e-14, 1.0], [1e-16, 0.1], scale=32)  # "resolved" by rounding only
    assert rounding.word == "undecided" and rounding.below == 1
    assert definition1([np.nan, np.nan], [np.nan, np.nan], scale=1).word == "undecided"
    assert definition1([1.0, 2.0], [0.1, 0.1], scale=8, family=10).z == pytest.approx(
        familywise_z(20)
    )


def test_sign_is_the_one_up_down_none_decision():
    from recency_lib.metrics import sign

    values = (3.0, 2.0, 0.0, -2.0, -3.0, float("nan"))
    assert [sign(v, 1.0, 2.0) for v in values] == [1, 0, 0, 0, -1, 0]
    assert [sign(0.6, 0.0, 2.0, 0.5), sign(0.5, 0.0, 2.0, 0.5)] == [1, 0]  # a zero error resolves
