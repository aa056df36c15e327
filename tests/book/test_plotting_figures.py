"""companion.plotting, the helpers of the pages of Figures 1-5: quantities against d, the key factor
h(j), the style legend, panel layouts. Agg backend; artists are inspected, nothing is simulated."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from companion import conventions as cv, plotting  # noqa: E402
from companion.claims import HCurves  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_versus_d_log_axis_ticks_and_one_reference_line():
    fig, ax = plt.subplots()
    ds = [16, 64, 256]
    out = plotting.versus_d(ds, [0.6, 0.55, 0.5], [0.01, 0.01, np.nan], ax, reference=0.5, label="a",
                            ylabel="recency probability")
    plotting.versus_d(ds, [0.7, 0.6, 0.5], None, ax, reference=0.5, label="b")
    assert out is ax and ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "64", "256"]
    assert sum(line.get_gid() == plotting.NO_ORDER_GID for line in ax.get_lines()) == 1
    assert ax.get_ylabel() == "recency probability" and ax.get_xlabel() == "hidden size d"
    assert [t.get_text() for t in ax.legend().get_texts()] == ["a", "b"]
    with pytest.raises(ValueError, match="has entries <= 0"):
        plotting.versus_d([0, 16], [1, 1], None, ax)
    with pytest.raises(ValueError, match="mean has length 2"):
        plotting.versus_d([16, 64, 256], [1, 1], None, ax)


def curves(normalized=True, closed=True):
    j = np.arange(1, 6)
    h = 1 + 0.01 * (j - 1)
    return HCurves(j, h if closed else None, 1.1 * h if closed else None, h, np.full(5, 1e-3), normalized)


def formulas(ax):
    """The drawn formula lines (the error bars' own lines have no line style)."""
    return [line for line in ax.get_lines() if line.get_linestyle() not in ("None", "none", "")]


def test_h_panel_draws_the_kinds_it_is_asked_for():
    fig, ax = plt.subplots()
    plotting.h_panel(curves(), ax, color="C1", label="α = 0.2")
    assert [line.get_linestyle() for line in formulas(ax)] == [cv.AS_PRINTED["linestyle"], cv.CORRECTED["linestyle"]]
    assert ax.get_ylabel() == "h(j) / h(1)" and ax.get_xlabel() == "key j"
    np.testing.assert_allclose(formulas(ax)[1].get_ydata(), 1.1 * (1 + 0.01 * np.arange(5)))   # drawn as given
    assert len(ax.containers) == 1 and ax.containers[0].get_label() == "α = 0.2"
    fig, ax = plt.subplots()
    plotting.h_panel(curves(normalized=False), ax, corrected=False)
    assert [line.get_linestyle() for line in formulas(ax)] == [cv.AS_PRINTED["linestyle"]]
    assert ax.get_ylabel() == "\u221ad \u00b7 h(j)"
    fig, ax = plt.subplots()
    plotting.h_panel(curves(closed=False), ax)             # no closed form: only the points
    assert formulas(ax) == [] and len(ax.containers) == 1


def test_style_legend_keeps_the_existing_legend():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], label="α = 0")
    first = ax.legend(loc="lower right")
    legend = plotting.style_legend(ax, loc="upper left")
    assert [t.get_text() for t in legend.get_texts()] == ["Eq. (41) as printed", "corrected", "simulation ± 1 SE"]
    assert first in ax.artists or first in ax.get_children()
    with pytest.raises(ValueError, match="kinds="):
        plotting.style_legend(ax, kinds=("lln",))


@pytest.mark.parametrize("count, shape", [(1, (1, 1)), (4, (1, 4)), (6, (2, 4)), (8, (2, 4))])
def test_panel_axes_wraps_rows_and_hides_the_rest(count, shape):
    fig, axes = plotting.panel_axes(count)
    assert len(axes) == count and all(ax.get_visible() for ax in axes)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(fig.axes) == shape[0] * shape[1] and len(shown) == count
    assert fig.get_figwidth() == pytest.approx(cv.COLUMN_IN)


def test_heatmap_subplots_are_capped_in_height():
    fig, axes = plotting.heatmap_subplots(4, 4)
    assert axes.shape == (4, 4) and fig.get_figheight() == pytest.approx(1.15 * cv.COLUMN_IN)
    fig, axes = plotting.heatmap_subplots(12, 2)
    assert axes.shape == (12, 2) and fig.get_figheight() == pytest.approx(4.0 * cv.COLUMN_IN)
