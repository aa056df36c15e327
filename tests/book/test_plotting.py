"""Tests of companion.plotting on the Agg backend: returned Axes, artists, colour limits that
exclude the diagonal, shared colour scales, the RP annotation, quantities against d, the key factor
h(j), panel layouts and the book's style (column width, fonts >= 9 pt, the style legend). Nothing is
simulated."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from companion import conventions, plotting
from companion.closedforms import HCurves


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def example_scores(n=6, seed=0):
    """Lower-triangular scores with a huge diagonal (like sqrt(d)) and NaN above it."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, n))
    np.fill_diagonal(s, 100.0)
    s[np.triu_indices(n, 1)] = np.nan
    return s


def texts_with_gid(ax, gid):
    return [t for t in ax.texts if t.get_gid() == gid]


# -- score_heatmap ---------------------------------------------------------------------------------


def test_heatmap_returns_axes_and_excludes_diagonal_from_colour_scale():
    s = example_scores()
    fig, ax = plt.subplots()
    out = plotting.score_heatmap(s, ax)
    assert out is ax
    mesh = ax.collections[0]
    lower = s[np.tril_indices(6, -1)]
    assert mesh.get_clim() == (lower.min(), lower.max())
    assert mesh.get_clim()[1] < 100.0  # the diagonal value is not the max
    # masked cells: upper triangle and diagonal (21 = 15 + 6 of 36); coloured: the 15 below
    data = mesh.get_array()
    assert np.ma.count_masked(data) == 21
    assert np.ma.count(data) == 15
    hatched = [p for p in ax.patches if p.get_gid() == "excluded_diagonal"]
    assert len(hatched) == 6 and all(p.get_hatch() == "///" for p in hatched)
    assert len(fig.axes) == 2  # heatmap + colourbar


def test_heatmaps_use_the_simulators_convention():
    from recency_lib.plot import DIAGONAL, heatmap_colours

    _fig, ax = plt.subplots()
    plotting.score_heatmap(example_scores(6), ax)
    mesh = ax.collections[0]
    np.testing.assert_array_equal(mesh.cmap(np.linspace(0, 1, 256))[:, :3], heatmap_colours())
    assert all(
        p.get_hatch() == DIAGONAL["hatch"] for p in ax.patches if p.get_gid() == "excluded_diagonal"
    )


def test_heatmap_ticks_are_one_based_and_axes_labelled():
    fig, ax = plt.subplots()
    plotting.score_heatmap(example_scores(5), ax, cbar=False, title="layer 2")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4", "5"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "2", "3", "4", "5"]
    assert ax.get_xlabel() == "key j" and ax.get_ylabel() == "query i"
    assert ax.get_title() == "layer 2"
    assert len(fig.axes) == 1  # no colourbar


def test_heatmap_rp_annotation():
    _fig, ax = plt.subplots()
    plotting.score_heatmap(example_scores(), ax, recency_probability=0.73214, recency_sem=0.00123)
    (box,) = texts_with_gid(ax, plotting.RP_GID)
    assert box.get_text() == "RP = 0.7321\n\u00b1 0.0012"
    _fig, ax = plt.subplots()
    plotting.score_heatmap(example_scores(), ax, recency_probability=0.5)
    assert texts_with_gid(ax, plotting.RP_GID)[0].get_text() == "RP = 0.500"
    _fig, ax = plt.subplots()
    plotting.score_heatmap(example_scores(), ax)
    assert texts_with_gid(ax, plotting.RP_GID) == []


def test_heatmap_nan_in_lower_triangle_is_ignored_for_limits():
    s = example_scores()
    s[3, 1] = np.nan
    _fig, ax = plt.subplots()
    plotting.score_heatmap(s, ax)
    lower = s[np.tril_indices(6, -1)]
    assert ax.collections[0].get_clim() == (np.nanmin(lower), np.nanmax(lower))


def test_heatmap_single_token():
    _fig, ax = plt.subplots()
    assert plotting.score_heatmap([[8.0]], ax) is ax


# -- score_grid ------------------------------------------------------------------------------------


def test_grid_panels_labels_and_rp():
    rows, cols, n = 2, 3, 5
    sm = np.stack(
        [np.stack([example_scores(n, seed=r * cols + c) for c in range(cols)]) for r in range(rows)]
    )
    fig, axes = plt.subplots(rows, cols)
    rp = np.array([[0.5, 0.6, 0.7], [0.8, 0.9, 1.0]])
    out = plotting.score_grid(
        sm,
        axes,
        recency_probabilities=rp,
        recency_sems=np.full((rows, cols), 0.01),
        row_labels=["no LN", "LN"],
        col_labels=["layer 1", "layer 2", "layer 3"],
        share="none",
    )
    assert out.shape == (rows, cols)
    assert all(out[r, c] is axes[r, c] for r in range(rows) for c in range(cols))
    for r in range(rows):
        for c in range(cols):
            ax = out[r, c]
            lower = sm[r, c][np.tril_indices(n, -1)]
            assert ax.collections[0].get_clim() == (lower.min(), lower.max())
            assert (
                texts_with_gid(ax, plotting.RP_GID)[0].get_text()
                == f"RP = {rp[r, c]:.3f}\n\u00b1 0.010"
            )
    assert [out[0, c].get_title() for c in range(cols)] == ["layer 1", "layer 2", "layer 3"]
    assert out[1, 0].get_title() == ""
    assert out[0, 0].get_ylabel() == "no LN\nquery i" and out[1, 0].get_ylabel() == "LN\nquery i"
    assert out[0, 1].get_ylabel() == ""
    assert out[0, 0].get_xlabel() == "" and out[1, 0].get_xlabel() == "key j"
    assert [t.get_text() for t in out[0, 0].get_xticklabels()] == ["1", "5"]  # ends only
    assert len(fig.axes) == rows * cols * 2  # one colour bar per panel (share="none")


def test_grid_accepts_one_dimensional_axes():
    sm = np.stack([example_scores(4)] * 3)[None]  # (1, 3, 4, 4)
    _fig, axes = plt.subplots(1, 3)
    assert plotting.score_grid(sm, axes).shape == (1, 3)


# -- curves ----------------------------------------------------------------------------------------


def test_h_curve_normalized_and_raw():
    j = np.arange(1, 11)
    h = 0.1 + 0.01 * j
    _fig, ax = plt.subplots()
    assert plotting.h_curve(j, h, ax, label="alpha=0.5") is ax
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), h / h[0])
    assert line.get_label() == "alpha=0.5" and ax.get_ylabel() == "h(j) / h(1)"
    plotting.h_curve(j, h, ax, normalize=False, color="k")
    assert len(ax.get_lines()) == 2
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), h)


def test_errorbar_points_scales_with_z():
    _fig, ax = plt.subplots()
    x, m, e = np.arange(1, 5), np.array([1.0, 2, 3, 4]), np.array([0.1, 0.2, 0.1, 0.3])
    assert plotting.errorbar_points(x, m, e, ax, label="sim", z=2.0) is ax
    (container,) = ax.containers
    segments = container.lines[2][0].get_segments()
    half_widths = np.array([(seg[1, 1] - seg[0, 1]) / 2 for seg in segments])
    np.testing.assert_allclose(half_widths, 2.0 * e)
    assert container.get_label() == "sim"


def test_recency_by_layer_reference_line_once():
    _fig, ax = plt.subplots()
    assert plotting.recency_by_layer([0.5, 0.7, 0.8], [0.01, 0.01, 0.02], ax, label="LN") is ax
    plotting.recency_by_layer([0.5, 0.55, 0.6], [0.01, 0.01, 0.02], ax, label="LN+res")
    refs = [ln for ln in ax.get_lines() if ln.get_gid() == plotting.NO_ORDER_GID]
    assert len(refs) == 1 and refs[0].get_label() == "no order" and refs[0].get_linestyle() == ":"
    np.testing.assert_allclose(refs[0].get_ydata(), [0.5, 0.5])
    assert len(ax.containers) == 2
    np.testing.assert_allclose(ax.containers[0].lines[0].get_xdata(), [1, 2, 3])  # 1-based layers
    assert list(ax.get_xticks()) == [1, 2, 3]


def test_row_profile():
    s = example_scores(6)
    e = np.abs(example_scores(6, seed=1)) * 0.01
    _fig, ax = plt.subplots()
    assert plotting.row_profile(s, e, 5, ax, label="row 5") is ax
    (container,) = ax.containers
    np.testing.assert_allclose(container.lines[0].get_xdata(), [1, 2, 3, 4])
    np.testing.assert_allclose(container.lines[0].get_ydata(), s[4, :4])
    plotting.row_profile(s, e, 5, ax, include_diagonal=True)
    np.testing.assert_allclose(ax.containers[1].lines[0].get_ydata(), s[4, :5])


def test_rp_text_uses_the_books_number_format():
    assert plotting.rp_text(0.55450, 0.00029) == "RP = 0.55450\n\u00b1 0.00029"
    assert plotting.rp_text(0.5, 0.0) == "RP = 0.5"
    assert plotting.rp_text(0.5, None) == "RP = 0.500"
    assert plotting.rp_text(0.991414, 0.000038) == "RP = 0.99141\n\u00b1 0.00004"
    assert plotting.rp_text(7.2e-5, 8e-6) == "RP =\n(7.2 \u00b1 0.8)\n\u00d7 10\u207b\u2075"
    # a large run's long value has its own line, clear of the tick labels on the left
    assert plotting.rp_text(0.5000602, 0.0000012) == "RP =\n0.5000602\n\u00b1 0.0000012"


# -- shared colour scales, the paper's view --------------------------------------------------------


def test_grid_shares_a_row_scale_only_where_honest():
    base = example_scores(5)
    similar = np.stack([base, base + 0.3])  # same range, shifted a little
    apart = np.stack([base, base * 0.01])  # one range 100 times smaller
    fig, axes = plt.subplots(2, 2)
    out = plotting.score_grid(np.stack([similar, apart]), axes)
    c00, c01 = out[0, 0].collections[0].get_clim(), out[0, 1].collections[0].get_clim()
    assert c00 == c01  # row 1: one shared scale
    assert out[1, 0].collections[0].get_clim() != out[1, 1].collections[0].get_clim()
    assert len(fig.axes) == 4 + 1 + 2  # one bar for row 1, two for row 2


def test_heatmap_can_colour_the_diagonal_as_the_paper_did():
    s = example_scores()
    _fig, ax = plt.subplots()
    plotting.score_heatmap(s, ax, include_diagonal=True)
    assert ax.collections[0].get_clim()[1] == 100.0  # the diagonal is on the scale
    assert np.ma.count(ax.collections[0].get_array()) == 21
    assert not [p for p in ax.patches if p.get_gid() == "excluded_diagonal"]


# -- the key factor h(j) ---------------------------------------------------------------------------


def curves(normalized=True, closed=True):
    j = np.arange(1, 6)
    h = 1 + 0.01 * (j - 1)
    return HCurves(
        j, h if closed else None, 1.1 * h if closed else None, h, np.full(5, 1e-3), normalized
    )


def formulas(ax):
    """The drawn formula lines (the error bars' own lines have no line style)."""
    return [line for line in ax.get_lines() if line.get_linestyle() not in ("None", "none", "")]


def test_h_panel_draws_the_kinds_it_is_asked_for():
    _fig, ax = plt.subplots()
    plotting.h_panel(curves(), ax, color="C1", label="α = 0.2")
    assert [line.get_linestyle() for line in formulas(ax)] == [
        conventions.AS_PRINTED["linestyle"],
        conventions.CORRECTED["linestyle"],
    ]
    assert ax.get_ylabel() == "h(j) / h(1)" and ax.get_xlabel() == "key j"
    np.testing.assert_allclose(
        formulas(ax)[1].get_ydata(), 1.1 * (1 + 0.01 * np.arange(5))
    )  # drawn as given
    assert len(ax.containers) == 1 and ax.containers[0].get_label() == "α = 0.2"
    _fig, ax = plt.subplots()
    plotting.h_panel(curves(normalized=False), ax, corrected=False)
    assert [line.get_linestyle() for line in formulas(ax)] == [conventions.AS_PRINTED["linestyle"]]
    assert ax.get_ylabel() == "\u221ad \u00b7 h(j)"
    _fig, ax = plt.subplots()
    plotting.h_panel(curves(closed=False), ax)  # no closed form: only the points
    assert formulas(ax) == [] and len(ax.containers) == 1


# -- the book's style ------------------------------------------------------------------------------


def _texts(fig):
    return [
        t for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()
    ]


def test_subplots_fill_the_column_and_all_text_is_at_least_9_pt():
    import matplotlib as mpl

    with mpl.rc_context():
        plotting.book_style()
        fig, axes = plotting.subplots(4, 4, height_ratio=1.15)
        assert fig.get_size_inches()[0] == pytest.approx(conventions.COLUMN_IN)
        sm = np.stack(
            [np.stack([example_scores(10, seed=4 * r + c) for c in range(4)]) for r in range(4)]
        )
        plotting.score_grid(
            sm,
            axes,
            recency_probabilities=np.full((4, 4), 0.6),
            recency_sems=np.full((4, 4), 1e-3),
            row_labels=list("abcd"),
            col_labels=list("efgh"),
        )
        fig.canvas.draw()
        sizes = [t.get_fontsize() for t in _texts(fig)]
        assert sizes and min(sizes) >= conventions.SMALL_PT
        assert all(
            t.get_fontsize() >= conventions.RP_LABEL_PT
            for ax in axes.flat
            for t in texts_with_gid(ax, plotting.RP_GID)
        )
        fig2, ax = plotting.subplots(height_ratio=0.5)
        plotting.recency_by_layer([0.5, 0.6], [0.01, 0.01], ax, label="x")
        ax.legend()
        fig2.canvas.draw()
        assert min(t.get_fontsize() for t in _texts(fig2)) >= conventions.SMALL_PT


def test_curve_kinds_follow_the_conventions():
    _fig, ax = plt.subplots()
    plotting.h_curve([1, 2, 3], [1.0, 1.1, 1.2], ax, kind="printed")
    plotting.h_curve([1, 2, 3], [1.0, 1.1, 1.2], ax, kind="corrected")
    assert [ln.get_linestyle() for ln in ax.get_lines()] == ["--", "-"]
    with pytest.raises(ValueError, match="kind='dotted' is not allowed"):
        plotting.h_curve([1, 2], [1.0, 1.1], ax, kind="dotted")


def test_glue_figure_closes_the_figure():
    fig, _ax = plt.subplots()
    plotting.glue_figure("test-figure", fig)
    assert not plt.fignum_exists(fig.number)


def test_a_settings_style_replaces_the_default_format_without_warnings():
    import warnings

    from recency_lib import SimConfig

    _fig, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plotting.recency_by_layer(
            [0.5, 0.6],
            [0.01, 0.01],
            ax,
            label="x",
            **conventions.variant_style(SimConfig(gamma=1.0)),
        )
        plotting.errorbar_points([1, 2], [0.5, 0.6], [0.01, 0.01], ax, marker="s")
        plotting.row_profile(
            example_scores(),
            np.full((6, 6), 0.1),
            6,
            ax,
            **conventions.variant_style(SimConfig(gamma=1.0)),
        )
    line = ax.containers[0].lines[0]
    assert (
        line.get_marker() == "o"
        and line.get_markerfacecolor() == "white"
        and line.get_linestyle() == "-"
    )


def test_style_legend_keeps_the_existing_legend():
    _fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], label="α = 0")
    first = ax.legend(loc="lower right")
    legend = plotting.style_legend(ax, loc="upper left")
    assert [t.get_text() for t in legend.get_texts()] == [
        "Eq. (41) as printed",
        "corrected",
        "simulation ± 1 SE",
    ]
    assert first in ax.artists or first in ax.get_children()


# -- against the hidden size ----------------------------------------------------------------------


def test_closed_form_and_reference_line_follow_the_conventions():
    _fig, ax = plt.subplots()
    assert plotting.closed_form([1, 2, 3], [3, 2, 1], ax, kind="printed", label="Eq. (5)") is ax
    plotting.reference_line(ax, 0.0, label="no order")
    line, ref = ax.get_lines()
    assert line.get_linestyle() == "--" and line.get_label() == "Eq. (5)"
    assert ref.get_linestyle() == ":" and list(ref.get_ydata()) == [0.0, 0.0]
    with pytest.raises(ValueError, match="kind='lln'"):
        plotting.closed_form([1], [1], ax, kind="lln")


def test_d_axis_can_take_a_log_y_axis():
    _fig, ax = plt.subplots()
    plotting.d_axis(ax, [4, 16, 64], log_y=True)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "4",
        "16",
        "64",
    ] and ax.get_xlabel() == "hidden size d"


class _Reach:
    def __init__(self, d, trend, se, resolved):
        self.d, self.trend, self.trend_se, self.resolved, self.plain_se = (
            d,
            trend,
            se,
            resolved,
            100 * se,
        )


def test_trend_reach_points_where_resolved_and_limits_where_not():
    _fig, ax = plt.subplots()
    reach = [
        _Reach(64, 2e-6, 2e-7, True),
        _Reach(16, 2e-3, 4e-5, True),
        _Reach(256, -1e-10, 6e-10, False),
    ]
    out = plotting.trend_reach(reach, ax, eq5=(np.array([4.0, 256.0]), np.array([1e-2, 1e-13])))
    assert out is ax and ax.get_yscale() == "log"
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "Eq. (5)",
        "2 SE of plain averaging",
        "simulated, control variates",
        "unresolved: below (+2 SE)",
    ]
    points = next(c for c in ax.containers if c.get_label() == "simulated, control variates")
    assert list(points.lines[0].get_xdata()) == [16, 64]  # sorted by d, resolved only
    limits = next(c for c in ax.containers if c.get_label().startswith("unresolved"))
    assert list(limits.lines[0].get_ydata()) == [
        pytest.approx(2 * 6e-10)
    ]  # a negative trend counts as 0


def test_versus_d_log_axis_ticks_and_one_reference_line():
    _fig, ax = plt.subplots()
    ds = [16, 64, 256]
    out = plotting.versus_d(
        ds,
        [0.6, 0.55, 0.5],
        [0.01, 0.01, np.nan],
        ax,
        reference=0.5,
        label="a",
        ylabel="recency probability",
    )
    plotting.versus_d(ds, [0.7, 0.6, 0.5], None, ax, reference=0.5, label="b")
    assert out is ax and ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "64", "256"]
    assert sum(line.get_gid() == plotting.NO_ORDER_GID for line in ax.get_lines()) == 1
    assert ax.get_ylabel() == "recency probability" and ax.get_xlabel() == "hidden size d"
    assert [t.get_text() for t in ax.legend().get_texts()] == ["a", "b"]


# -- chapter 7 and 8 figures -----------------------------------------------------------------------


def test_panels_hide_the_unused_cells():
    fig, axes = plotting.panels(5, max_cols=3)
    assert len(axes) == 5 and all(ax.get_visible() for ax in axes)
    assert sum(ax.get_visible() for ax in fig.axes) == 5 and len(fig.axes) == 6
    assert fig.get_size_inches()[0] == pytest.approx(conventions.COLUMN_IN)
    assert len(plotting.panels(1)[1]) == 1


def test_recency_dots_one_row_per_setting_one_dot_per_layer():
    _fig, ax = plt.subplots()
    rp = np.array([[0.5, 0.7, 0.8], [0.5, 0.4, 0.3]])
    assert plotting.recency_dots(["a", "b"], rp, np.full((2, 3), 0.01), ax) is ax
    assert len(ax.containers) == 3  # one series per layer
    xs = [c.lines[0].get_xdata() for c in ax.containers]
    np.testing.assert_allclose(np.array(xs).T, rp)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # the first setting on top
    assert [ln.get_gid() for ln in ax.get_lines()].count(plotting.NO_ORDER_GID) == 1


def test_recency_by_length_and_binned_profiles():
    _fig, ax = plt.subplots()
    plotting.recency_by_length([10, 32, 128], np.full((3, 2), 0.6), np.full((3, 2), 0.01), ax)
    assert ax.get_xscale() == "log" and len(ax.containers) == 2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10", "32", "128"]
    _fig, ax = plt.subplots()
    profiles = {
        10: (np.array([0.2, 0.6]), np.array([-0.1, 0.1]), np.array([0.01, 0.01])),
        32: (np.array([0.2, 0.6]), np.array([-0.2, 0.2]), np.array([0.01, 0.01])),
    }
    plotting.binned_profiles(profiles, ax)
    assert [c.get_label() for c in ax.containers] == ["n = 10", "n = 32"]


# -- ratios against d (Appendix A) ----------------------------------------------------------------


def test_ratio_by_d_draws_points_and_one_reference():
    _fig, ax = plt.subplots()
    out = plotting.ratio_by_d([16, 64, 256], [1.1, 1.4, 1.5], [0.01, 0.02, 0.03], ax, label="a")
    plotting.ratio_by_d([16, 64], [0.9, 1.0], [0.01, 0.01], ax, label="b")
    plotting.ratio_by_d([], [], [], ax)  # nothing resolved: only the reference
    assert out is ax
    refs = [line for line in ax.get_lines() if line.get_gid() == plotting.EXACT_GID]
    assert len(refs) == 1 and list(refs[0].get_ydata()) == [1.0, 1.0]
    assert len(ax.containers) == 2  # two error-bar series
    assert ax.get_ylabel() == "simulated / closed form"


def test_d_axis_is_log2_with_integer_ticks():
    _fig, ax = plt.subplots()
    plotting.ratio_by_d([16, 64, 256], [1.0, 1.0, 1.0], [0.1, 0.1, 0.1], ax)
    plotting.d_axis(ax, [16, 64, 256])
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "64", "256"]
    assert ax.get_xlabel() == "hidden size d"


# -- the figures two pages share -------------------------------------------------------------------


def _result(n, layers, seed):
    """A stand-in for a SimResult: what figure1_grids reads of one."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    rps = rng.uniform(0.4, 0.9, layers)
    return SimpleNamespace(
        score_mean=np.stack([example_scores(n, seed + l) for l in range(layers)]),
        config=SimpleNamespace(layers=layers),
        rp=lambda layer: (rps[layer - 1], 0.002, "plain"),
    )


def test_figure1_grids_draws_the_books_and_the_papers_way():
    rows, layers, n = 3, 2, 5
    results = [_result(n, layers, 10 * k) for k in range(rows)]
    book, paper = plotting.figure1_grids(results, ["a", "b", "c"], layers)
    for fig in (book, paper):  # heatmap_subplots' size: the column's width
        assert tuple(fig.get_size_inches()) == pytest.approx(
            conventions.figure_size(min(4.0, 1.15 * rows / layers))
        )
    panels = [ax for ax in book.axes if ax.get_label() != "<colorbar>"][: rows * layers]
    rp_texts = [texts_with_gid(ax, plotting.RP_GID) for ax in panels]
    assert all(len(t) == 1 for t in rp_texts)  # the book's: RP ± SE on every panel
    first = [ax for ax in paper.axes if ax.get_title() == "layer 1"]
    assert first and not texts_with_gid(first[0], plotting.RP_GID)  # the paper's: no RP
    assert first[0].get_ylabel().startswith("a\n")
    diagonal = next(ax for ax in paper.axes if ax.collections).collections[0]
    assert np.isfinite(diagonal.get_array()).sum() == n * (n + 1) // 2  # the diagonal coloured


def test_level_and_step_one_line_per_alpha_and_a_legend_under_both():
    ds = np.array([16.0, 64.0, 256.0])
    series = {
        part: {a: (ds, 1 + a * np.arange(3), np.full(3, 0.01)) for a in (0.2, 0.8)}
        for part in ("level", "step")
    }
    fig = plotting.level_and_step(series, ylabel="simulated / corrected")
    left, right = fig.axes
    assert [left.get_title(), right.get_title()] == ["level", "shape (step over j)"]
    assert left.get_ylabel() == "simulated / corrected" and right.get_ylabel() == ""
    assert len(right.containers) == 2 and len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        conventions.alpha_label(0.2),
        conventions.alpha_label(0.8),
    ]


# -- panel layouts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("count, shape", [(1, (1, 1)), (4, (1, 4)), (6, (2, 4)), (8, (2, 4))])
def test_panel_axes_wraps_rows_and_hides_the_rest(count, shape):
    fig, axes = plotting.panel_axes(count)
    assert len(axes) == count and all(ax.get_visible() for ax in axes)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(fig.axes) == shape[0] * shape[1] and len(shown) == count
    assert fig.get_figwidth() == pytest.approx(conventions.COLUMN_IN)


def test_heatmap_subplots_are_capped_in_height():
    fig, axes = plotting.heatmap_subplots(4, 4)
    assert axes.shape == (4, 4) and fig.get_figheight() == pytest.approx(
        1.15 * conventions.COLUMN_IN
    )
    fig, axes = plotting.heatmap_subplots(12, 2)
    assert axes.shape == (12, 2) and fig.get_figheight() == pytest.approx(
        4.0 * conventions.COLUMN_IN
    )
