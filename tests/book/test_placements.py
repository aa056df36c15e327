"""Chapter 9 (companion.pages.placements): where the norm sits. Its verdicts, tables, the limit it
states and the numbers it glues, on small simulations with fixed seeds."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from bookutils import BOOK

from companion import closedforms, grid, params, verdicts
from companion.pages import placements as page
from recency_lib import SimConfig, simulate_many
from recency_lib.placements import NAMES, PLACEMENTS


def _results(places=("pre", "post", "sandwich", "output"), ds=(64, 256), samples=20_000):
    keys = [
        (p, norm, a, g, d)
        for p in places
        for norm in ("layernorm", "rms")
        for a in (0.0, 0.5)
        for g in (0.0, 1.0)
        for d in ds
    ]
    cfgs = [
        SimConfig(placement=p, norm=nm, alpha=a, gamma=g, d=d, samples=samples, seed=7)
        for p, nm, a, g, d in keys
    ]
    return dict(zip(keys, simulate_many(cfgs)))


@pytest.fixture(scope="module")
def results():
    return _results()


def test_one_verdict_per_placement_in_the_registrys_order(results):
    claims = page.claims(results)
    assert list(claims) == ["pre", "post", "sandwich", "output"]
    for where, v in claims.items():
        assert v.claim == f"Recency with {PLACEMENTS[where].label}"
        assert len(v.checks) == 16 and v.target == ("prf:ref", "conj-placements")
        assert v.numbers["z_threshold"] == pytest.approx(
            verdicts.conventions.z_for(16 * verdicts.comparisons_of_order(10))
        )
        assert v.word != verdicts.CONTRADICTED, (where, v.value, v.measure)
    # the raw state in the scores: every step of every setting resolved, already at 20,000 sequences
    assert claims["post"].word == claims["output"].word == verdicts.HOLDS
    # the checks in the order a reader weighs them: the paper's d, anisotropic, LayerNorm first
    first = claims["post"].checks[0]
    assert (first.d, first.alpha, first.norm, first.gamma) == (64, 0.5, "layernorm", 0.0)


def test_each_check_is_the_apis_word_at_the_claims_z(results):
    """A check resolves every step as a rise exactly where the API's Definition 1 (the simulator's
    one rule, which the CLI prints) holds at the claim's family-wise z."""
    claims = page.claims(results)
    for where, v in claims.items():
        zc = v.numbers["z_threshold"]
        keys = sorted((k for k in results if k[0] == where), key=page._paper_first)
        for key, check in zip(keys, v.checks):
            api = results[key].decision(2, z=zc).word
            assert (check.status == verdicts.AS_CLAIMED) == (api == "holds"), (key, api)
            assert (check.placement, check.norm, check.d) == (where, key[1], key[4])


def test_the_tables_of_the_page(results):
    rows = page.rule_rows(NAMES)
    assert [r["placement (used by)"].split("<br>")[0] for r in rows] == [
        PLACEMENTS[p].label for p in NAMES
    ]
    post = rows[NAMES.index("post")]
    assert post["scores from"] == "$X$" and post["next state"] == "$\\Norm(AX + \\gamma X)$"
    assert rows[NAMES.index("qk")]["values"] == "$X$"
    details = page.detail_rows(results)
    assert len(details) == len(results) and details[0]["placement"] == "pre-norm"
    lln = page.lln_rows(results, 0.5)
    assert [r["placement"] for r in lln] == ["pre-norm", "post-norm", "sandwich", "output norm"]
    assert set(lln[0]) == {"placement", "γ = 0, d = 64", "γ = 0, d = 256", "γ = 1, d = 64",
                           "γ = 1, d = 256"}  # fmt: skip
    verdict_rows = page.verdict_rows(page.claims(results))
    assert verdict_rows[1]["every step rises"] == "16 of 16 settings"


def test_post_norm_s_limit_is_the_recursion_s_at_large_d():
    """Proposition (post-norm at large d): the mean step of S^(2) / sqrt(d) tends to raw_limit; the
    law-of-large-numbers recursion at d = 10^10 (its softmax then uniform) is at the limit, for the
    output norm too without the residual, and with the residual post-norm's own limit."""
    for where, gamma in (("post", 0.0), ("output", 0.0), ("post", 1.0)):
        cfg = SimConfig(placement=where, gamma=gamma, d=10**10)
        assert page.lln_trend(cfg) / math.sqrt(cfg.d) == pytest.approx(
            page.raw_limit(10, gamma), rel=1e-4
        )
    i, j = 7, 3  # S_ij / sqrt(d) -> sqrt(j / i) without the residual
    s = page.theory.lln_limit(0.0, 0.0, 1e10, 10, 2, placement="post")["scores"][1]
    assert s[i - 1, j - 1] / 1e5 == pytest.approx(math.sqrt(j / i), rel=1e-4)


def test_the_glued_numbers(results):
    claims = page.claims(results)
    out = page.numbers(results=results, claims=claims, samples=20_000, alpha=0.5, gamma=1.0, d=256)
    assert out["placements-settings"] == "16" and out["placements-d"] == "256"
    assert out["placements-ratio"] != page.NOT_RUN and float(out["placements-ratio"]) > 2
    same = page.coincide(results)
    assert set(same) == {"sandwich", "output"} and max(same.values()) < 1e-9
    fewer = {k: v for k, v in results.items() if k[0] == "sandwich"}
    lean = page.numbers(
        results=fewer, claims=page.claims(fewer), samples=20_000, alpha=0.5, gamma=1.0, d=256
    )
    for key in ("placements-step-post", "placements-ratio", "placements-same-sandwich"):
        assert lean[key] == page.NOT_RUN


def test_the_placements_parameter():
    rule = params.RULES["placements"]
    assert rule("placements", "post") == ["post"]
    assert rule("placements", "['pre', 'qk']") == ["pre", "qk"]
    assert rule("placements", ("sandwich",)) == ["sandwich"]
    for bad, needle in (
        ("mid", "placements[0]='mid' is not allowed"),
        (["pre", "pre"], "repeats a value"),
        ("[]", "is empty"),
        (None, "placements=None is not a list"),
    ):
        with pytest.raises(ValueError, match=re.escape(needle)):
            rule("placements", bad)


def test_the_setting_template_takes_the_placement():
    template = BOOK / "setting_template.ipynb"
    p = grid.validate_params({"placement": "post", "gamma": 1.0}, template)
    assert p["placement"] == "post" and grid.slug(p).startswith("a0.5-g1-layernorm-post-n10")
    assert "-pre-" not in grid.slug(grid.validate_params({}, template))
    with pytest.raises(ValueError, match="placement='post' is not allowed with norm='none'"):
        grid.validate_params({"placement": "post", "norm": "none"}, template)
    res = simulate_many([SimConfig(placement="post", n=4, d=8, layers=2, samples=200)])[0]
    curves = closedforms.h_curves(res)
    assert curves.printed is None and curves.corrected is None  # the paper's closed forms: pre only
    assert np.all(np.isfinite(curves.sim))


def test_a_reruns_banner_names_the_placement_of_each_setting():
    from companion import rerun

    post = {"norm": "layernorm", "placement": "post", "alpha": 0.5, "gamma": 0.0, "d": 64}
    assert rerun._setting_words(post) == "LayerNorm post-norm, α = 0.5, γ = 0, $d$ = 64"
    assert rerun._setting_words(post | {"placement": "pre"}).startswith("LayerNorm, α")
    assert rerun._setting_words({k: v for k, v in post.items() if k != "placement"}).startswith(
        "LayerNorm, α"
    )  # a stamp written before placements were recorded
