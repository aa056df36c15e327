"""companion.explorer: the grid, the compact payload (rounding, packing, decoding), the commands,
the HTML; and book/explorer.ipynb run through papermill at a small sample count. The decoding the
page does in the browser is written here in Python (:func:`decode_layer`, :func:`fill_command`),
and tests/book/test_explorer_browser.py holds the page to it.
"""

from __future__ import annotations

import ast
import json
import math
import re
import shlex

import nbformat
import numpy as np
import papermill as pm
import pytest
from bookutils import BOOK, execute_notebook

from companion import explorer
from companion.grid import validate_params
from companion.statistics import simulated_h
from recency_lib import SimConfig, SimResult, simulate
from recency_lib.cli import main as cli_main
from recency_lib.metrics import familywise_z
from recency_lib.theory import h_corrected

SMALL = 2000


# -- what the page does in the browser, in Python ------------------------------------------------


def unscaled(ints, dec: int) -> np.ndarray:
    """Inverse of explorer.scaled (what the page computes: k / 10**dec)."""
    return np.asarray(ints, dtype=float) / 10.0**dec


def unpack(text: str) -> list[int]:
    """Inverse of explorer.pack."""
    width, body = int(text[0]), text[1:]
    assert len(body) % width == 0, f"{text[:20]!r}... is not a packed array"
    out = []
    for start in range(0, len(body), width):
        k = 0
        for ch in body[start : start + width]:
            k = 64 * k + explorer.DIGITS64.index(ch)
        out.append(k)
    return out


def unpack_offset(offset: int, text: str, dec: int) -> np.ndarray:
    """Inverse of explorer.pack_offset: the rounded values."""
    return unscaled([offset + k for k in unpack(text)], dec)


def fixed(k: int, dec: int) -> str:
    """A scaled integer as the page prints it (JavaScript's (k / 10**dec).toFixed(dec))."""
    return f"{k / 10**dec:.{dec}f}"


def fill_command(template: str, cfg: SimConfig) -> str:
    """A command template with the fields of ``cfg`` filled in, as the page does."""
    values = {
        "alpha": explorer.label(cfg.alpha),
        "gamma": explorer.label(cfg.gamma),
        "norm": cfg.norm,
        "d": str(cfg.d),
        "slug": explorer.setting_key(cfg),
    }
    return re.sub(r"\{(alpha|gamma|norm|d|slug)\}", lambda m: values[m.group(1)], template)


def decode_layer(setting: dict, layer: int, n: int, reasons: list[str]) -> dict:
    """One layer of a setting back as arrays (what the page draws): (n, n) mean and SE with NaN
    above the diagonal, the RP and its SE, the verdict and direction words."""
    lay = setting["layers"][layer]
    dec = lay["dec"]
    mean, se = np.full((n, n), np.nan), np.full((n, n), np.nan)
    mean[np.tril_indices(n, -1)] = unpack_offset(lay["oS"], lay["S"], dec)
    mean[np.diag_indices(n)] = unpack_offset(lay["oD"], lay["D"], dec)
    se[np.tril_indices(n)] = unpack_offset(0, lay["E"], dec)
    rp, rp_se = unscaled(lay["rp"][:2], lay["rp"][2])
    return {
        "mean": mean,
        "se": se,
        "dec": dec,
        "rp": float(rp),
        "rp_se": float(rp_se),
        "rp_dec": lay["rp"][2],
        "verdict": {v: k for k, v in explorer.VERDICT_CODES.items()}[lay["v"]],
        "direction": {v: k for k, v in explorer.DIRECTION_CODES.items()}[lay["dir"]],
        "why": reasons[lay["why"]],
        "rp_estimator": lay["rpe"],
    }


def decode_h(setting: dict) -> dict:
    """The h(j) part of a setting back as arrays: simulated mean and SE, closed form (or None)."""
    h = setting["h"]
    closed = None if h["c"] is None else unpack_offset(0, h["c"], h["dec"])
    return {
        "mean": unpack_offset(0, h["m"], h["dec"]),
        "se": unpack_offset(0, h["e"], h["dec"]),
        "closed": closed,
        "dec": h["dec"],
    }


@pytest.fixture(scope="module")
def small_results():
    """Every norm at two alphas, both gammas, two d's: 24 settings of 2000 samples (~1 s)."""
    cfgs = explorer.grid_configs(SMALL, 3)
    return [simulate(c) for c in cfgs if c.alpha in (0.0, 0.5) and c.d in (16, 64)]


@pytest.fixture(scope="module")
def small_data(small_results):
    return explorer.explorer_data(small_results)


def payload_of(html: str) -> dict:
    m = re.search(
        r'<script type="application/json" id="rx-explorer-data">(.*?)</script>', html, re.S
    )
    assert m, "no data block"
    return json.loads(m.group(1))


# -- grid ----------------------------------------------------------------------------------------


def test_default_grid_is_the_issue_grid():
    cfgs = explorer.grid_configs()
    assert len(cfgs) == 10 * 2 * 4 * 3 == 240
    assert {c.alpha for c in cfgs} == {k / 10 for k in range(10)}
    assert {c.gamma for c in cfgs} == {0.0, 1.0}
    assert {c.d for c in cfgs} == {16, 64, 256, 1024}
    assert {c.norm for c in cfgs} == {"none", "layernorm", "rms"}
    assert {(c.n, c.layers, c.samples, c.seed, c.engine) for c in cfgs} == {
        (10, 4, explorer.DEFAULT_SAMPLES, 0, "auto")
    }
    assert len({explorer.setting_key(c) for c in cfgs}) == 240
    # alpha slowest, norm fastest
    assert (
        [c.norm for c in cfgs[:3]] == list(explorer.NORMS)
        and cfgs[23].alpha == 0.0
        and cfgs[24].alpha == 0.1
    )


def test_setting_key_and_labels():
    cfg = SimConfig(alpha=0.3, gamma=1.0, norm="rms", d=256)
    assert explorer.setting_key(cfg) == "a0.3-g1-d256-rms"
    assert [explorer.label(a) for a in explorer.ALPHAS] == [
        "0",
        "0.1",
        "0.2",
        "0.3",
        "0.4",
        "0.5",
        "0.6",
        "0.7",
        "0.8",
        "0.9",
    ]


# -- numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "se, digits, dec",
    [
        (0.0123, 2, 3),
        (0.0123, 1, 2),
        (0.5, 2, 2),
        (3.0, 1, 0),
        (47.0, 1, 0),
        (0.0, 2, explorer.MAX_DECIMALS),
        (math.nan, 1, explorer.MAX_DECIMALS),
        (1e-14, 2, explorer.MAX_DECIMALS),
    ],
)
def test_decimals(se, digits, dec):
    assert explorer.decimals(se, digits) == dec


def test_rounding_moves_a_value_by_a_fraction_of_its_se():
    """Rounded to decimals(se, k), a value moves by at most half a unit of the last digit, which is
    at most se / 2 (k = 1) or se / 20 (k = 2), for SEs across many magnitudes."""
    rng = np.random.default_rng(0)
    se = 10.0 ** rng.uniform(-7, 1, 2000)
    x = rng.normal(0, 30, 2000)
    for digits, frac in ((1, 0.5), (2, 0.05)):
        dec = np.array([explorer.decimals(s, digits) for s in se])
        back = np.array([unscaled(explorer.scaled([v], k), k)[0] for v, k in zip(x, dec)])
        assert np.all(np.abs(back - x) <= frac * se * (1 + 1e-9) + 1e-12 * np.abs(x))


@pytest.mark.parametrize(
    "ints", [[], [0], [63], [64], [0, 1, 4095, 4096, 262143], list(range(300)), [64**9 - 1]]
)
def test_pack_round_trip(ints):
    text = explorer.pack(ints)
    assert unpack(text) == ints
    width = int(text[0])
    assert len(text) == 1 + width * len(ints)
    assert width == max(1, math.ceil(math.log(max(ints, default=0) + 1, 64) - 1e-12))
    assert re.fullmatch(r"[1-9][A-Za-z0-9_-]*", text)


def test_pack_offset_round_trip_with_negative_values():
    v = np.array([-1.23456, 0.5, 7.25, -0.0004])
    off, text = explorer.pack_offset(v, 3)
    assert off == -1235
    np.testing.assert_allclose(unpack_offset(off, text, 3), np.round(v, 3), atol=1e-12)


# -- one setting ---------------------------------------------------------------------------------


def test_setting_data_decodes_to_the_result(small_results):
    """Every stored number decodes to the simulated one within half a unit of its last digit; that
    unit is at most the smallest off-diagonal SE of the layer (cells) or a tenth of the SE (RP,
    h)."""
    for res in small_results:
        reasons = []
        st = explorer.setting_data(res, reasons)
        n = res.config.n
        lower = np.tril(np.ones((n, n), dtype=bool))
        strict = np.tril(np.ones((n, n), dtype=bool), -1)
        for l in range(res.config.layers):
            got = decode_layer(st, l, n, reasons)
            unit = 10.0 ** -got["dec"]
            assert unit <= np.min(res.score_sem[l][strict]) * (1 + 1e-9)
            assert np.all(
                np.abs(got["mean"][lower] - res.score_mean[l][lower]) <= unit / 2 * (1 + 1e-9)
            )
            assert np.all(
                np.abs(got["se"][lower] - res.score_sem[l][lower]) <= unit / 2 * (1 + 1e-9)
            )
            assert np.all(np.isnan(got["mean"][~lower])) and np.all(np.isnan(got["se"][~lower]))
            rp, rp_se, how = res.rp(l + 1)  # the API's estimate, decision and direction
            assert 10.0 ** -got["rp_dec"] <= rp_se / 10 * (1 + 1e-9) and got["rp_estimator"] == how
            assert abs(got["rp"] - rp) <= 10.0 ** -got["rp_dec"] / 2 * (1 + 1e-9)
            assert abs(got["rp_se"] - rp_se) <= 10.0 ** -got["rp_dec"] / 2 * (1 + 1e-9)
            decision = res.decision(l + 1)
            assert got["verdict"] == decision.word and got["why"] == decision.reason
            assert got["direction"] == res.direction(l + 1)
        h, h_se = simulated_h(res, state=1)
        hd = decode_h(st)
        unit = 10.0 ** -hd["dec"]
        assert unit <= np.min(h_se[1:]) / 10 * (1 + 1e-9)
        np.testing.assert_allclose(hd["mean"], h, rtol=0, atol=unit / 2 * (1 + 1e-9))
        np.testing.assert_allclose(hd["se"], h_se, rtol=0, atol=unit / 2 * (1 + 1e-9))
        if res.config.norm == "none":
            assert hd["closed"] is None
        else:
            c = res.config
            hc = h_corrected(np.arange(1, n + 1), c.alpha, c.gamma, c.d, c.norm)
            np.testing.assert_allclose(hd["closed"], hc / hc[0], rtol=0, atol=unit / 2 * (1 + 1e-9))


# -- the payload ---------------------------------------------------------------------------------


def test_explorer_data_meta(small_results, small_data):
    meta, settings = small_data["meta"], small_data["settings"]
    assert meta["format"] == explorer.FORMAT
    assert (meta["n"], meta["layers"], meta["samples"], meta["seed"]) == (10, 4, SMALL, 3)
    assert meta["alphas"] == [0.0, 0.5] and meta["alpha_labels"] == ["0", "0.5"]
    assert meta["ds"] == [16, 64] and meta["norms"] == list(explorer.NORMS)
    assert meta["steps"] == 45 and meta["z_fw"] == round(familywise_z(45), 2)
    assert set(settings) == {explorer.setting_key(r.config) for r in small_results}
    rp_se = np.array([r.recency_probability_sem for r in small_results])
    assert meta["rp_se_max"] == pytest.approx(rp_se.max(), rel=0.05)
    assert meta["rp_se_median"] == pytest.approx(np.median(rp_se), rel=0.05)
    assert meta["rerun_samples"] == 100_000
    assert len(meta["lut"]) == 256
    json.dumps(small_data, allow_nan=False)  # strict JSON


def test_explorer_data_does_not_depend_on_the_order_of_results(small_results, small_data):
    shuffled = list(reversed(small_results))
    assert explorer.explorer_data(shuffled) == small_data


def test_the_colour_table_is_the_heatmap_convention():
    import seaborn as sns
    from matplotlib.colors import to_hex

    lut = explorer.heatmap_lut()
    cmap = sns.color_palette("rocket", as_cmap=True)
    assert len(lut) == 256 and all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in lut)
    assert (
        lut[0] == to_hex(cmap(0.0))
        and lut[-1] == to_hex(cmap(1.0))
        and lut[128] == to_hex(cmap(128 / 255))
    )


# -- commands ------------------------------------------------------------------------------------


def test_same_command_reproduces_the_pages_numbers(tmp_path, small_results, small_data):
    """The "same" command, run through the CLI, gives bitwise the result the page was built from."""
    res = small_results[7]
    cmd = fill_command(small_data["meta"]["commands"]["same"], res.config)
    argv = shlex.split(cmd)
    assert argv[:4] == [".venv/bin/python", "-m", "recency_lib", "simulate"]
    out = tmp_path / "same.json"
    assert cli_main([*argv[3:], "--out", str(out)]) == 0
    again = SimResult.load(out)
    assert again.config == res.config
    np.testing.assert_array_equal(again.score_mean, res.score_mean)
    np.testing.assert_array_equal(again.recency_probability, res.recency_probability)


def test_rerun_commands_ask_for_more_samples_of_the_same_setting():
    cfg = SimConfig(alpha=0.3, gamma=1.0, norm="rms", d=256, samples=10_000, seed=0)
    cmds = explorer.command_templates(10_000, 0)
    cli = shlex.split(fill_command(cmds["cli"], cfg))
    opts = dict(zip(cli[4::2], cli[5::2]))
    assert opts == {
        "--alpha": "0.3",
        "--gamma": "1",
        "--norm": "rms",
        "--n": "10",
        "--d": "256",
        "--layers": "4",
        "--samples": "100000",
        "--seed": "0",
        "--workers": "2",
        "--out": "a0.3-g1-d256-rms-s100000.json",
    }
    paper = shlex.split(fill_command(cmds["papermill"], cfg).split("&&", 1)[1])
    assert paper[:4] == [
        ".venv/bin/papermill",
        "book/setting_template.ipynb",
        "out/a0.3-g1-d256-rms.ipynb",
        "-p",
    ]
    params = {paper[k + 1]: paper[k + 2] for k in range(3, len(paper)) if paper[k] == "-p"}
    assert params.pop("result_path") == "a0.3-g1-d256-rms.json"
    typed = validate_params(
        {k: v if k == "norm" else ast.literal_eval(v) for k, v in params.items()},
        BOOK / "setting_template.ipynb",
    )
    assert typed["samples"] == 100_000 and fill_command("{alpha}", cfg) == "0.3"
    assert {k: typed[k] for k in ("alpha", "gamma", "norm", "n", "d", "layers", "seed")} == {
        "alpha": 0.3,
        "gamma": 1.0,
        "norm": "rms",
        "n": 10,
        "d": 256,
        "layers": 4,
        "seed": 0,
    }
    assert explorer.rerun_samples(50_000) == 500_000


# -- the page ------------------------------------------------------------------------------------


def test_page_html_carries_the_data_controls_and_script(small_data):
    page = explorer.page_html(small_data)
    assert payload_of(page) == small_data
    for control in ("rx-alpha", "rx-d"):
        assert re.search(rf'<label for="{control}"', page), f"{control} has no label"
    assert re.search(r'<input type="range" id="rx-alpha" name="alpha" min="0" max="1"', page)
    for name, count in (("rx-gamma", 2), ("rx-norm", 3), ("rx-layer", 4)):
        assert len(re.findall(rf'<input type="radio" name="{name}"', page)) == count
    assert page.count("<option") == 2
    assert explorer.asset("explorer.js") in page and explorer.asset("explorer.css") in page
    assert (
        "</script" not in explorer.asset("explorer.js").lower()
        and "</style" not in explorer.asset("explorer.css").lower()
    )
    # nothing is fetched: no src/href attributes, no network APIs in the script
    assert not re.search(r"\b(src|href)\s*=", page)
    assert not re.search(
        r"\b(fetch|XMLHttpRequest|importScripts|WebSocket)\b", explorer.asset("explorer.js")
    )
    weight = explorer.page_weight(page)
    assert weight["total"] >= weight["data"] + weight["script"] + weight["style"]


def test_data_block_cannot_be_closed_by_its_content():
    text = explorer.json_for_script({"x": "</script><script>alert(1)</script>", "y": "<!--"})
    assert "<" not in text
    assert json.loads(text) == {"x": "</script><script>alert(1)</script>", "y": "<!--"}


def test_start_setting_falls_back_to_the_grid(small_data):
    page = explorer.page_html(
        small_data, start={"alpha": 0.9, "gamma": 1.0, "d": 1024, "norm": "rms", "layer": 9}
    )
    init = json.loads(re.search(r"data-rx-init='([^']*)'", page).group(1).replace("&quot;", '"'))
    assert init["start"] == {"alpha": 0.0, "gamma": 1.0, "d": 16, "norm": "rms", "layer": 1}


# -- the notebook --------------------------------------------------------------------------------


def test_notebook_runs_with_small_samples(tmp_path, monkeypatch, seeded_cache):
    """book/explorer.ipynb through papermill at 2000 samples, one worker, a results cache without
    any simulation: the page's HTML holds the full grid at those samples and
    stays far below 1 MB."""
    monkeypatch.setenv("RECENCY_LIB_CACHE", seeded_cache(tmp_path / "cache"))
    out = tmp_path / "explorer.ipynb"
    execute_notebook(
        str(BOOK / "explorer.ipynb"),
        str(out),
        parameters={"samples": SMALL, "seed": 1, "workers": 1},
        kernel_name="python3",
        cwd=str(BOOK),
    )
    nb = nbformat.read(out, as_version=4)
    html = [
        o["data"]["text/html"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/html" in o.get("data", {})
    ]
    assert len(html) == 1
    data = payload_of(html[0])
    assert (data["meta"]["samples"], data["meta"]["seed"]) == (SMALL, 1)
    assert len(data["settings"]) == 240
    assert explorer.page_weight(html[0])["total"] < 1_000_000


def test_notebook_rejects_bad_workers(tmp_path):
    with pytest.raises(pm.PapermillExecutionError, match="workers=0 is out of range"):
        execute_notebook(
            str(BOOK / "explorer.ipynb"),
            str(tmp_path / "x.ipynb"),
            parameters={"workers": 0},
            kernel_name="python3",
            cwd=str(BOOK),
        )


def test_the_diagonal_follows_the_heatmap_convention(small_data, monkeypatch):
    assert (
        small_data["meta"]["diagonal"]
        == explorer.diagonal_style()
        == {"angle": 45, "colour": "#999999"}
    )
    monkeypatch.setattr(
        explorer, "DIAGONAL", {**explorer.DIAGONAL, "hatch": "\\\\", "edgecolor": "red"}
    )
    assert explorer.diagonal_style() == {
        "angle": -45,
        "colour": "#ff0000",
    }  # recency_lib.plot's, whatever it is
