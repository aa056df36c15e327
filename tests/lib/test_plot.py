"""SimResult.plot() and simulate --plot: every layer's mean scores with its recency probability,
drawn by the book's heatmap convention, legible for 1 to 8 layers and n up to 64; figures written
only over figures this library wrote."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from recency_lib import SimConfig, simulate
from recency_lib.plot import DIAGONAL, SIGNATURE, heatmap_colours

CLI = [sys.executable, "-m", "recency_lib", "simulate"]


@pytest.fixture(scope="module")
def mpl():
    return pytest.importorskip("matplotlib")


@pytest.mark.parametrize("layers, n", [(1, 10), (4, 10), (8, 10), (4, 64)])
def test_one_panel_per_layer_with_its_recency_probability(mpl, layers, n):
    res = simulate(
        SimConfig(alpha=0.5, n=n, d=32, layers=layers, samples=200 if n > 10 else 2000, seed=1)
    )
    fig = res.plot()
    panels = [ax for ax in fig.axes if ax.get_title().startswith("layer")]
    assert len(panels) == layers
    assert all("RP" in ax.get_title() for ax in panels) and "±" in panels[-1].get_title()
    assert len(fig.axes) == 2 * layers  # a colour bar each
    width, height = fig.get_size_inches()
    assert width <= 4 * 3.1 + 1e-9 and height <= 2 * 2.9 + 0.5 + 1e-9  # four panels a row at most
    labels = [t.get_text() for t in panels[0].get_xticklabels()]
    assert labels[0] == "1" and labels[-1] == str(n)  # 1-based, the ends labelled


def test_saved_figures_carry_the_signature_and_replace_only_their_own(mpl, tmp_path):
    res = simulate(SimConfig(n=5, d=16, layers=2, samples=100, seed=2))
    for suffix in ("png", "svg", "pdf"):
        path = tmp_path / f"r.{suffix}"
        res.plot(path)
        assert SIGNATURE.encode() in path.read_bytes()[:65536]
        res.plot(path)  # its own figure: replaced
    foreign = tmp_path / "photo.png"
    foreign.write_bytes(b"\x89PNG not ours")
    with pytest.raises(
        ValueError, match=r"is not a recency_lib result file|is not a figure this library saved"
    ):
        res.plot(foreign)
    assert foreign.read_bytes() == b"\x89PNG not ours"
    with pytest.raises(ValueError, match=r"\.png, \.svg or \.pdf"):
        res.plot(tmp_path / "r.jpg")


def test_the_command_line_draws_the_result(mpl, tmp_path):
    out = subprocess.run(
        [*CLI, "--samples", "200", "--n", "5", "--layers", "2", "--plot", str(tmp_path / "f.svg")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "wrote" in out.stdout and (tmp_path / "f.svg").is_file()
    bad = subprocess.run(
        [*CLI, "--samples", "200", "--plot", str(tmp_path / "f.txt")],
        capture_output=True,
        text=True,
    )
    assert (
        bad.returncode == 2
        and bad.stderr.startswith("error: plot=")
        and bad.stderr.count("\n") == 1
    )


def test_without_matplotlib_plot_is_a_clear_error(tmp_path):
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from recency_lib import SimConfig, simulate\n"
        "res = simulate(SimConfig(n=4, d=8, layers=1, samples=50))\n"
        "try:\n    res.plot()\nexcept ImportError as e:\n    print('ok', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("ok") and "recency_lib[plot]" in out


def test_the_heatmap_convention_is_the_books(mpl):
    """One convention: seaborn's "rocket" (to 8 bits per channel), the diagonal hatched and out of
    the colour scale; the panels of SimResult.plot() use it."""
    sns = pytest.importorskip("seaborn")
    rocket = np.array(sns.color_palette("rocket", as_cmap=True).colors)
    assert (
        heatmap_colours().shape == (256, 3)
        and np.abs(heatmap_colours() - rocket).max() <= 0.5 / 255
    )
    res = simulate(SimConfig(alpha=0.5, n=6, d=16, layers=2, samples=500, seed=3))
    ax = res.plot().axes[0]
    hatched = [p for p in ax.patches if p.get_gid() == "excluded_diagonal"]
    assert len(hatched) == 6 and all(p.get_hatch() == DIAGONAL["hatch"] for p in hatched)
    mesh = ax.collections[0]
    assert (
        mesh.cmap.name == "rocket" and mesh.get_clim()[1] < res.score_mean[0].diagonal().min()
    )  # diagonal out of scale
