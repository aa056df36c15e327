"""companion.settings: the settings of the paper's claims, written once, so the chapters and the
landing page run the same configs and share their cached results."""

import papermill
import pytest
from bookutils import REPO

from companion import conventions, settings
from recency_lib import SimConfig


def test_figure1_is_the_papers_four_models():
    rows = settings.fig1_configs(1_000, 3)
    assert [(c.norm, c.alpha, c.gamma) for c in rows] == [
        ("none", 0.0, 0.0),
        ("layernorm", 0.0, 0.0),
        ("layernorm", 0.5, 0.0),
        ("layernorm", 0.5, 1.0),
    ]
    assert {(c.n, c.d, c.layers, c.samples, c.seed) for c in rows} == {
        (conventions.PAPER_N, conventions.PAPER_D, conventions.PAPER_LAYERS, 1_000, 3)
    }
    other = settings.fig1_configs(1_000, 3, n=5, d=16, layers=2, alpha=0.3, gamma=0.5)
    assert other[3] == SimConfig(
        alpha=0.3, gamma=0.5, norm="layernorm", n=5, d=16, layers=2, samples=1_000, seed=3
    )
    assert other[0] == SimConfig(
        alpha=0, gamma=0, norm="none", n=5, d=16, layers=2, samples=1_000, seed=3
    )


def test_settings_share_the_large_isotropic_runs():
    th = settings.theorem1_configs(1_000, 3)
    assert sorted(th) == list(settings.THEOREM1_DS) and th[32].samples == 1_000
    assert th[16].samples == settings.FACTORS["d16"] * 1_000  # Definition 1 at d = 16
    iso = settings.isotropic_configs(settings.LARGE_FACTOR * 1_000, 3)
    assert (
        th[64] == iso[0.0] and th[64].samples == settings.LARGE_FACTOR * 1_000
    )  # one run, one cache entry
    assert iso[1.0] == iso[0.0].replace(gamma=1.0) and iso[0.0].layers == 2
    assert list(settings.isotropic_configs(1_000, 3, gamma=0.5)) == [0.0, 0.5]
    assert settings.theorem1_configs(1_000, 3, large_samples=5_000)[64].samples == 5_000
    p1 = settings.prop1_configs(1_000, 3)
    assert sorted(p1) == list(settings.PROP1_DS) and p1[16].samples == settings.PROP1_FACTOR * 1_000
    assert settings.prop1_configs(1_000, 3, prop1_samples=7)[16].samples == 7
    with pytest.raises(ValueError, match="samples=1 is out of range"):
        settings.isotropic_configs(1)


def test_a_derived_size_stops_at_the_papers_final_scale():
    """The book's multiples of ``samples`` for small effects: 10 x 10^5 in the build, but at the
    paper's 10^7 sequences per setting every setting runs 10^7 (a rerun at 10^8: 10^8)."""
    from companion import closedforms, conventions, depth

    assert conventions.scaled(10, 100_000) == 1_000_000 and conventions.scaled(0.25, 8) == 2
    assert conventions.scaled(10, 10**7) == 10**7 == conventions.scaled(40, 10**6)
    assert conventions.scaled(10, 10**8) == 10**8
    paper = conventions.FINAL_SAMPLES
    assert {c.samples for c in settings.prop1_configs(paper).values()} == {paper}
    assert settings.first_order_configs(paper)[64].samples == paper
    assert settings.theorem1_configs(paper)[64].samples == paper
    assert closedforms.setting_samples(closedforms.T, paper) == paper
    assert max(k for k, _ in depth.settings(0.5, 1.0, 64, paper // 5).values()) == paper


def test_the_landing_table_runs_the_chapters_settings():
    got = settings.study_configs(1_000, 3)
    assert got["fig1"] == settings.fig1_configs(1_000, 3)
    assert set(got["alpha1"]) == set(settings.FIG4_ALPHAS) and set(settings.FIG3_ALPHAS) <= set(
        got["alpha0"]
    )
    assert got["alpha0"][0.5] == got["fig1"][2]  # Figure 1's showcase row
    assert got["relative"] == got["fig1"][2]  # chapter 7's check


def test_the_notebooks_state_the_derived_sizes_of_the_table():
    """A page's parameter cell states its derived sample sizes as numbers (papermill needs
    literals): each is settings.FACTORS[name] times the page's ``samples``."""
    seen = set()
    for page in sorted((REPO / "book").glob("*.ipynb")):
        params = {k: v["default"] for k, v in papermill.inspect_notebook(str(page)).items()}
        for name in settings.FACTORS.keys() & params.keys():
            assert int(params[name]) == settings.FACTORS[name] * int(params["samples"]), page.name
            seen.add(name)
    assert seen == settings.FACTORS.keys() - {"d16"}  # d = 16 is no parameter of its own
