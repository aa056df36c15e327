"""companion.conventions: one threshold rule, one geometry, one colour per alpha, one name per
model."""

import pytest
from scipy.stats import norm

from companion import conventions as cv
from recency_lib import SimConfig
from recency_lib.metrics import familywise_z


def test_one_familywise_level_and_its_z():
    assert cv.z_for(1) == pytest.approx(norm.isf(0.025))  # 1.96
    assert cv.z_for(45) == pytest.approx(familywise_z(45, 0.05)) == pytest.approx(3.2608, abs=1e-4)
    assert cv.adjacent_pairs(10) == 45 and cv.adjacent_pairs(1) == 0
    assert cv.definition1_z(10) == cv.z_for(45)
    assert cv.z_for(1000) > cv.z_for(10) > cv.z_for(1)
    with pytest.raises(ValueError, match="comparisons=0"):
        cv.z_for(0)


def test_figures_fit_the_column():
    w, h = cv.figure_size()
    assert w == pytest.approx(cv.COLUMN_IN) and h == pytest.approx(0.62 * w)
    # drawn width plus the saved padding (0.03 in each side) stays inside a 768 px figure box
    assert cv.COLUMN_PX + 2 * 0.03 * 96 <= 768
    assert cv.figure_size(1.0, 0.5) == (
        pytest.approx(cv.COLUMN_IN / 2),
        pytest.approx(cv.COLUMN_IN / 2),
    )
    assert min(cv.FONT_PT, cv.SMALL_PT, cv.TITLE_PT, cv.RP_LABEL_PT) >= 9


def test_one_colour_per_alpha():
    colours = [cv.alpha_colour(a) for a in cv.ALPHAS]
    assert len(set(colours)) == len(cv.ALPHAS)
    assert cv.alpha_colour(0.5) == cv.alpha_colour(0.5) == colours[cv.ALPHAS.index(0.5)]
    assert set(cv.H_ALPHAS) <= set(cv.ALPHAS)
    assert cv.alpha_label(0.5) == "α = 0.5"


@pytest.mark.parametrize(
    "kw, name, short",
    [
        ({"norm": "none"}, "no normalization", "no norm."),
        ({"norm": "layernorm"}, "LayerNorm", "LayerNorm"),
        ({"norm": "layernorm", "gamma": 1.0}, "LayerNorm + residual", "LN + residual"),
        ({"norm": "rms", "gamma": 1.0}, "RMSNorm + residual", "RMS + residual"),
        ({"norm": "layernorm", "gamma": 0.5}, "LayerNorm + 0.5 × residual", "LN + 0.5 × residual"),
        ({"norm": "layernorm", "ffn": True, "rope": True}, "LayerNorm + FFN + RoPE", "LayerNorm"),
        ({"norm": "layernorm", "heads": 4}, "LayerNorm, 4 heads", "LayerNorm"),
    ],
)
def test_variant_names(kw, name, short):
    cfg = SimConfig(**kw)
    assert cv.variant_name(cfg) == name and cv.variant_short(cfg) == short
    assert cv.setting_label(cfg) == f"{name}, α = 0"


def test_variant_style_and_line_styles():
    ln, res = SimConfig(alpha=0.5), SimConfig(alpha=0.5, gamma=1.0)
    assert cv.variant_style(ln)["color"] == cv.variant_style(res)["color"] == cv.alpha_colour(0.5)
    assert cv.variant_style(res)["markerfacecolor"] == "white"
    assert cv.variant_style(SimConfig(norm="none"))["marker"] != cv.variant_style(ln)["marker"]
    assert cv.AS_PRINTED["linestyle"] == "--" and cv.CORRECTED["linestyle"] == "-"
    assert cv.SIMULATION["fmt"] == "o"


def test_leak():
    assert cv.leak(0.0, 64) == pytest.approx(2.718281828**-8)
    assert cv.leak(1.0, 64) == 1.0


def test_ordered_series_get_their_own_colours():
    colours = [cv.ordered_colour(k, 6) for k in range(6)]
    assert len(set(colours)) == 6
    assert not set(colours) & {cv.alpha_colour(a) for a in cv.ALPHAS}  # never mistaken for an alpha
    assert cv.ordered_colour(0, 1) == colours[0]  # a single series: the first colour
