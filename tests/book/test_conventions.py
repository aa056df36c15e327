"""companion.conventions: one threshold rule, one geometry, one colour per alpha, one name per
model."""

import pytest
from scipy.stats import norm

from companion import conventions
from recency_lib import SimConfig
from recency_lib.metrics import familywise_z


def test_one_familywise_level_and_its_z():
    level = conventions.FAMILYWISE_LEVEL  # the simulator's one level
    assert conventions.z_for(1) == pytest.approx(norm.isf(level / 2))
    assert conventions.z_for(45) == pytest.approx(familywise_z(45, level))
    assert familywise_z(45, 0.05) == pytest.approx(3.2608, abs=1e-4)
    assert conventions.adjacent_pairs(10) == 45 and conventions.adjacent_pairs(1) == 0
    assert conventions.definition1_z(10) == conventions.z_for(45)
    assert conventions.z_for(1000) > conventions.z_for(10) > conventions.z_for(1)
    with pytest.raises(ValueError, match="comparisons=0"):
        conventions.z_for(0)


def test_figures_fit_the_column():
    w, h = conventions.figure_size()
    assert w == pytest.approx(conventions.COLUMN_IN) and h == pytest.approx(0.62 * w)
    # drawn width plus the saved padding (0.03 in each side) stays inside a 768 px figure box
    assert conventions.COLUMN_PX + 2 * 0.03 * 96 <= 768
    assert conventions.figure_size(1.0, 0.5) == (
        pytest.approx(conventions.COLUMN_IN / 2),
        pytest.approx(conventions.COLUMN_IN / 2),
    )
    assert (
        min(
            conventions.FONT_PT, conventions.SMALL_PT, conventions.TITLE_PT, conventions.RP_LABEL_PT
        )
        >= 9
    )


def test_one_colour_per_alpha():
    colours = [conventions.alpha_colour(a) for a in conventions.ALPHAS]
    assert len(set(colours)) == len(conventions.ALPHAS)
    assert (
        conventions.alpha_colour(0.5)
        == conventions.alpha_colour(0.5)
        == colours[conventions.ALPHAS.index(0.5)]
    )
    assert set(conventions.H_ALPHAS) <= set(conventions.ALPHAS)
    assert conventions.alpha_label(0.5) == "α = 0.5"


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
    assert conventions.variant_name(cfg) == name and conventions.variant_short(cfg) == short
    assert conventions.setting_label(cfg) == f"{name}, α = 0"


def test_variant_style_and_line_styles():
    ln, res = SimConfig(alpha=0.5), SimConfig(alpha=0.5, gamma=1.0)
    assert (
        conventions.variant_style(ln)["color"]
        == conventions.variant_style(res)["color"]
        == conventions.alpha_colour(0.5)
    )
    assert conventions.variant_style(res)["markerfacecolor"] == "white"
    assert (
        conventions.variant_style(SimConfig(norm="none"))["marker"]
        != conventions.variant_style(ln)["marker"]
    )
    assert conventions.AS_PRINTED["linestyle"] == "--" and conventions.CORRECTED["linestyle"] == "-"
    assert conventions.SIMULATION["fmt"] == "o"


def test_leak():
    assert conventions.leak(0.0, 64) == pytest.approx(2.718281828**-8)
    assert conventions.leak(1.0, 64) == 1.0


def test_ordered_series_get_their_own_colours():
    colours = [conventions.ordered_colour(k, 6) for k in range(6)]
    assert len(set(colours)) == 6
    assert not set(colours) & {
        conventions.alpha_colour(a) for a in conventions.ALPHAS
    }  # never mistaken for an alpha
    assert conventions.ordered_colour(0, 1) == colours[0]  # a single series: the first colour
