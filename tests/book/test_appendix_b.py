"""Appendix B by papermill: the setting template, the grid driver (companion.grid), the page.

Every notebook run uses small sample sizes and a private results cache (RECENCY_LIB_CACHE in a
temporary folder), and writes only into temporary folders.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import papermill
import pytest
from bookutils import computed_once, execute_notebook, kernels_running, light_template
from papermill.exceptions import PapermillExecutionError

from companion import grid
from companion.params import template_defaults
from companion.sources import sources_hash as source_hash
from recency_lib import SimResult

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book"
TEMPLATE = BOOK / "setting_template.ipynb"
APPENDIX = BOOK / "appendix_b.ipynb"
SMALL = 2000
KERNEL = "python3"

TEMPLATE_DEFAULTS = {
    "alpha": 0.5,
    "gamma": 0.0,
    "norm": "layernorm",
    "placement": "pre",
    "n": 10,
    "d": 64,
    "layers": 4,
    "samples": 100_000,
    "seed": 0,
    "result_path": "",
}


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    """Every simulation of this module (papermill's kernels too) uses an empty, private cache."""
    path = tmp_path_factory.mktemp("recency_cache")
    old = os.environ.get("RECENCY_LIB_CACHE")
    os.environ["RECENCY_LIB_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("RECENCY_LIB_CACHE", None)
    else:
        os.environ["RECENCY_LIB_CACHE"] = old


@pytest.fixture(autouse=True)
def _seeds_for_kernels(request, private_cache):
    """The heavy tests (conftest.HEAVY: they run notebooks in kernels) find seaborn's theme and the
    sympy checks in the private cache (conftest.seeded_cache); the quick ones neither need nor wait
    for them."""
    if request.node.get_closest_marker("book"):
        request.getfixturevalue("seeded_cache")(private_cache)


def run_template(out_dir: Path, **params) -> Path:
    """papermill the template into out_dir/out.ipynb with out_dir as the working directory."""
    out = out_dir / "out.ipynb"
    execute_notebook(
        str(TEMPLATE),
        str(out),
        parameters=params,
        kernel_name=KERNEL,
        cwd=str(out_dir),
    )
    return out


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def images(cell) -> int:
    """Figures a cell shows (PNG or SVG; glued ones count where they are glued)."""
    return sum(
        any(k.endswith(("image/png", "image/svg+xml")) for k in o.get("data", {}))
        for o in cell.get("outputs", [])
    )


def errors(nb) -> list:
    return [o for c in code_cells(nb) for o in c.outputs if o.output_type == "error"]


def glued(nb) -> dict:
    """glue key -> its stored mime bundle (prefix stripped)."""
    out = {}
    for c in code_cells(nb):
        for o in c.outputs:
            meta = o.get("metadata", {}).get("scrapbook")
            if meta:
                prefix = meta.get("mime_prefix", "")
                out[meta["name"]] = {k[len(prefix) :]: v for k, v in o["data"].items()}
    return out


def glue_text(nb, key) -> str:
    return glued(nb)[key]["text/plain"].strip("'\"")


# --------------------------------------------------------------------------- the template itself


def test_template_parameters_are_typed_and_documented():
    info = papermill.inspect_notebook(str(TEMPLATE))
    assert list(info) == list(TEMPLATE_DEFAULTS)
    for name, spec in info.items():
        assert spec["inferred_type_name"] in ("float", "int", "str"), (name, spec)
        assert spec["help"], f"parameter {name} has no comment"
    assert template_defaults(TEMPLATE) == TEMPLATE_DEFAULTS


@pytest.mark.parametrize("path", [TEMPLATE, APPENDIX], ids=lambda p: p.name)
def test_notebooks_are_committed_clean(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.kernelspec["name"] == "python3"
    for c in code_cells(nb):
        assert c.outputs == [] and c.execution_count is None, "strip outputs before committing"
    tagged = [c for c in code_cells(nb) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


@pytest.mark.parametrize("alpha, gamma", [(0.0, 0.0), (0.5, 1.0)])
def test_template_writes_its_result(tmp_path, alpha, gamma):
    params = {"alpha": alpha, "gamma": gamma, "samples": SMALL}
    if gamma:  # one explicit result path, one default
        params["result_path"] = "mine.json"
    out = run_template(tmp_path, **params)
    path = tmp_path / ("mine.json" if gamma else "setting_result.json")
    assert path.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.ipynb", path.name])

    res = SimResult.load(path)
    cfg = res.config
    assert (cfg.alpha, cfg.gamma, cfg.samples, cfg.norm, cfg.n, cfg.d, cfg.layers) == (
        alpha,
        gamma,
        SMALL,
        "layernorm",
        10,
        64,
        4,
    )
    L, n = 4, 10
    lower = np.tril(np.ones((n, n), dtype=bool))
    for name in ("score_mean", "score_sem", "attn_mean", "attn_sem"):
        arr = getattr(res, name)
        assert arr.shape == (L, n, n)
        assert np.isfinite(arr[:, lower]).all(), name
    assert np.isnan(res.score_mean[:, ~lower]).all()
    assert res.recency_probability.shape == res.recency_probability_sem.shape == (L,)
    assert np.all((res.recency_probability >= 0) & (res.recency_probability <= 1))
    assert np.all(res.recency_probability_sem > 0)
    assert res.sq_norm_mean.shape == (L, n) and np.all(res.sq_norm_mean > 0)
    assert len(res.definition1) == L and set(res.definition1) <= {"holds", "violated", "undecided"}
    data = json.loads(path.read_text())
    assert data["format"] == "recency_lib.SimResult/3"

    nb = nbformat.read(out, as_version=4)
    assert errors(nb) == []
    assert sum(images(c) for c in code_cells(nb)) == 2  # heatmaps, h(j)


@pytest.mark.parametrize(
    "param, value, message",
    [
        ("alpha", 1.5, "alpha=1.5 is out of range"),
        ("d", 1, "d=1 is out of range"),
    ],
)
def test_bad_parameter_fails_in_first_cell_and_writes_nothing(
    tmp_path, private_cache, param, value, message
):
    before = sorted(private_cache.iterdir())
    with pytest.raises(PapermillExecutionError) as info:
        run_template(tmp_path, **{param: value, "samples": SMALL, "result_path": "r.json"})
    assert info.value.ename == "ValueError"
    assert message in info.value.evalue
    assert not list(tmp_path.glob("*.json")), "a failed run must not write a result file"
    assert sorted(private_cache.iterdir()) == before, "nothing may be simulated or cached"

    nb = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    cells = code_cells(nb)
    injected = next(
        k for k, c in enumerate(cells) if "injected-parameters" in c.metadata.get("tags", [])
    )
    failing = [k for k, c in enumerate(cells) if any(o.output_type == "error" for o in c.outputs)]
    assert failing == [injected + 1], "the first cell after the parameters must raise"
    assert all(c.execution_count is None for c in cells[injected + 2 :])


# --------------------------------------------------------------------------- the driver


def test_driver_validates_before_any_work(tmp_path):
    out = tmp_path / "out"
    for params, message in [
        ({"alpha": 1.5}, "alpha=1.5 is out of range"),
        ({"d": 1}, "d=1 is out of range"),
        ({"norm": "batch"}, "norm='batch' is not allowed"),
        ({"layers": 1}, "layers=1 is out of range"),
        ({"n": 2}, "n=2 is out of range"),
        ({"z": 3}, "unknown parameter"),
        ({"alpah": 0.2}, "unknown parameter"),
        ({"result_path": "x.json"}, "set by the driver"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            grid.run_setting(TEMPLATE, out, {"samples": SMALL, **params})
        assert not out.exists(), f"{params}: nothing may be written"
    with pytest.raises(ValueError, match=r"alpha=1\.5 is out of range"):
        grid.run_grid(
            TEMPLATE, out, [{"alpha": 0.2, "samples": SMALL}, {"alpha": 1.5, "samples": SMALL}]
        )
    with pytest.raises(ValueError, match="duplicate"):
        grid.run_grid(TEMPLATE, out, [{"alpha": 0.2}, {"alpha": 0.2, "gamma": 0}])
    with pytest.raises(ValueError, match="does not exist"):
        grid.run_setting(tmp_path / "missing.ipynb", out, {})
    assert not out.exists()


def test_a_long_parameter_comes_back_cut(tmp_path):
    """Issue 26: a 100 kB ``alphas_residual`` came back in a 100,095-character message. Every
    message cuts the values it names, also through papermill."""
    huge = "[" + "0.1, " * 20_000 + "x]"
    with pytest.raises(PapermillExecutionError) as info:
        execute_notebook(
            str(APPENDIX),
            str(tmp_path / "out.ipynb"),
            parameters={"alphas_residual": huge, "out_dir": str(tmp_path / "gen")},
            kernel_name=KERNEL,
            cwd=str(BOOK),
        )
    assert info.value.ename == "ValueError" and "alphas_residual=" in info.value.evalue
    assert len(info.value.evalue) < 300 and len(str(info.value)) < 5000
    assert not (tmp_path / "gen").exists()


def test_result_file_refuses_what_is_not_a_result(tmp_path):
    (tmp_path / "page.ipynb").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    for name in ("page.ipynb", "code.py"):
        with pytest.raises(
            ValueError, match=f"result_path=.*{name}.* not a recency_lib result file"
        ):
            grid.result_file(str(tmp_path / name))
    assert grid.result_file(str(tmp_path / "new.json")) == tmp_path / "new.json"


def test_slug_names_every_parameter():
    p = grid.validate_params({"alpha": 0.2, "gamma": 1, "samples": 50_000}, TEMPLATE)
    assert grid.slug(p) == "a0.2-g1-layernorm-n10-d64-L4-s50000-seed0"
    q = grid.validate_params({"alpha": 0.1 + 0.2}, TEMPLATE)  # not exactly 0.3
    assert grid.slug(q) != grid.slug(grid.validate_params({"alpha": 0.3}, TEMPLATE))
    # template defaults fill the gaps: these two are the same setting
    assert grid.validate_params({}, TEMPLATE) == grid.validate_params(
        {"alpha": 0.5, "gamma": 0}, TEMPLATE
    )


def test_number_list_accepts_papermill_strings():
    assert grid.number_list("a", "[0.1, 0.3]") == [0.1, 0.3]
    assert grid.number_list("a", [0, 1]) == [0.0, 1.0]
    assert grid.number_list("a", 0.4) == [0.4]
    for bad in ("[]", "0.1, x", [], ["a"], [float("nan")], [True], "[" * 100_000, "1e999", 10**400):
        with pytest.raises(ValueError, match=r"^a(\[0\])?=") as info:  # the list, or its entry
            grid.number_list("a", bad)
        assert len(str(info.value)) < 300


def test_driver_skips_unchanged_and_reruns_on_change(tmp_path, monkeypatch):
    template = light_template(tmp_path / "template.ipynb")
    out = tmp_path / "runs"
    params = {"alpha": 0.3, "gamma": 1, "samples": SMALL}

    first = grid.run_setting(template, out, params)
    assert first.status == "ran" and first.seconds > 0
    assert (
        first.notebook == out / f"{first.slug}.ipynb" and first.result == out / f"{first.slug}.json"
    )
    assert first.load().config.alpha == 0.3
    side = json.loads(first.key_file.read_text())
    assert side["key"] == first.key and side["inputs"]["params"]["alpha"] == 0.3
    stamps = {p: p.stat().st_mtime_ns for p in (first.notebook, first.result, first.key_file)}
    nb = nbformat.read(first.notebook, as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert (
        f'result_path = "{first.slug}.json"' in injected.source
    )  # relative: the kernel ran in the staging folder

    again = grid.run_setting(template, out, params)  # nothing changed: skipped
    assert again.status == "reused" and again.key == first.key and again.seconds == first.seconds
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps

    # the library's source is part of the key, and so is the simulator's kernel path: a kernel
    # rebuilt after a run on the numpy path (a kernel older than its source) runs the grid again
    monkeypatch.setattr(grid, "sources_hash", lambda: "edited")
    assert grid.run_key(template, again.params) != first.key
    monkeypatch.undo()
    from recency_lib import kernels

    other_path = {"c": "numpy", "numpy": "c"}[kernels.kernel_name()]
    monkeypatch.setattr(kernels, "kernel_name", lambda: other_path)
    assert grid.run_key(template, again.params) != first.key
    monkeypatch.undo()

    other = grid.run_setting(template, out, {**params, "seed": 1})  # a parameter changed
    assert other.status == "ran" and other.slug != first.slug

    nb = nbformat.read(template, as_version=4)  # the template changed
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("An edited template."))
    nbformat.write(nb, template)
    edited = grid.run_setting(template, out, params)
    assert edited.status == "ran" and edited.key != first.key and edited.slug == first.slug
    assert "An edited template." in edited.notebook.read_text()
    assert grid.run_setting(template, out, params).status == "reused"

    # a failing run leaves the previous outputs exactly as they were, and no partial files
    saved = {p: p.read_bytes() for p in (edited.notebook, edited.result, edited.key_file)}
    nb.cells.insert(
        len(nb.cells) - 1, nbformat.v4.new_code_cell("raise RuntimeError('deliberate 4711')")
    )
    nbformat.write(nb, template)
    with pytest.raises(PapermillExecutionError, match="deliberate 4711"):
        grid.run_setting(template, out, params)
    assert {p: p.read_bytes() for p in saved} == saved
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            ".grid.lock",
            *(f"{s}{e}" for s in (first.slug, other.slug) for e in (".ipynb", ".json", ".key")),
        ]
    )

    fresh = tmp_path / "fresh"
    with pytest.raises(PapermillExecutionError):
        grid.run_setting(template, fresh, params)
    assert [p.name for p in fresh.iterdir()] == [".grid.lock"], (
        "a failed first run leaves nothing behind"
    )

    # every run, good or failed, stopped its kernel (nbclient does not stop a kernel it was handed)
    assert kernels_running() == [], "kernels left running"


# --------------------------------------------------------------------------- the appendix page

APPENDIX_GRID = {"alphas_no_residual": [0.2, 0.8], "alphas_residual": [0.0, 0.8]}


@pytest.fixture(scope="module")
def appendix(tmp_path_factory, private_cache, seeded_cache):
    """The page executed as the book does (working directory book/), small, into a temporary
    out_dir: four of the nine settings of the default grid (the full build runs all nine at the
    defaults); cold, then warm. Once per test run (bookutils.computed_once: the first worker runs
    it, in its private cache, and the others read what it wrote)."""

    def compute(tmp):
        gen = tmp / "generated"

        def run(name):
            execute_notebook(
                str(APPENDIX),
                str(tmp / name),
                parameters={"samples": SMALL, "out_dir": str(gen), **APPENDIX_GRID},
                kernel_name=KERNEL,
                cwd=str(BOOK),
            )

        source_before = source_hash()  # uncached: the package's sources right now
        run("cold.ipynb")
        stamps = {p.name: p.stat().st_mtime_ns for p in gen.iterdir()}
        run("warm.ipynb")
        edited = source_hash() != source_before
        (tmp / "record.json").write_text(json.dumps({"stamps": stamps, "library_edited": edited}))

    seeded_cache(private_cache)
    tmp = computed_once(tmp_path_factory, "appendix_b-page", compute)
    record = json.loads((tmp / "record.json").read_text())
    return {
        "cold": nbformat.read(tmp / "cold.ipynb", as_version=4),
        "warm": nbformat.read(tmp / "warm.ipynb", as_version=4),
        "gen": tmp / "generated",
        "stamps": record["stamps"],
        "library_edited": record["library_edited"],
    }


FIGURES = ("ab-fig3", "ab-fig4", "ab-fig5", "ab-fig5-raw", "ab-fig5-ratio")


def test_appendix_composes_every_figure(appendix):
    nb = appendix["cold"]
    assert errors(nb) == []
    keys = glued(nb)
    for fig in FIGURES:
        assert "image/svg+xml" in keys[fig], f"{fig} is not a glued figure"
    assert sum(images(c) for c in code_cells(nb)) == len(FIGURES)
    for fig in ("fig-ab-3", "fig-ab-4", "fig-ab-5", "fig-ab-5-raw", "fig-ab-5-ratio"):
        assert any(f":name: {fig}" in c.source for c in nb.cells if c.cell_type == "markdown"), fig
    streams = [
        o.text
        for c in code_cells(nb)
        for o in c.outputs
        if o.output_type == "stream" and o.name == "stderr"
    ]
    assert streams == [], f"stderr on the page: {streams}"


def test_appendix_glues_every_number_it_cites(appendix):
    nb = appendix["cold"]
    cited = set()
    for c in nb.cells:
        if c.cell_type == "markdown":
            cited |= set(re.findall(r"\{glue:text\}`([^`]+)`", c.source))
            cited |= set(re.findall(r"```\{glue:(?:md|figure)\} (\S+)", c.source))
            cited |= set(
                re.findall(r"\{glue(?::md)?\}`([^`:]+)(?::\w+)?`", c.source)
            )  # key or key:format
    keys = glued(nb)
    assert cited and all(k.startswith("ab-") for k in keys)
    assert cited <= set(keys), f"cited but not glued: {sorted(cited - set(keys))}"
    assert glue_text(nb, "ab-samples") == f"{SMALL:,}"
    assert glue_text(nb, "ab-n-settings") == "4" and glue_text(nb, "ab-n-ran") == "4"


def test_appendix_runs_are_linked_and_saved(appendix):
    gen = appendix["gen"]
    notebooks = sorted(gen.glob("*.ipynb"))
    assert len(notebooks) == 4
    for nbp in notebooks:
        assert nbp.with_suffix(".json").is_file() and nbp.with_suffix(".key").is_file()
        res = SimResult.load(nbp.with_suffix(".json"))
        assert res.config.samples == SMALL and res.config.gamma in (0.0, 1.0)
    assert not [p for p in gen.iterdir() if p.name.startswith(".staging")], (
        "staging folders left behind"
    )
    table = glued(appendix["cold"])["ab-runs-table"]["text/markdown"]
    for nbp in notebooks:
        assert re.search(r"\{download\}`[^`]*<[^>]*" + re.escape(nbp.name) + ">`", table), nbp.name
    assert table.count("{download}") == 8


def test_appendix_warm_skips_every_run(appendix):
    warm = appendix["warm"]
    assert errors(warm) == []
    if appendix["library_edited"]:  # the key includes recency_lib's source: then a rerun is right
        pytest.skip(
            "recency_lib's sources changed while the test ran; every run was (rightly) redone"
        )
    assert glue_text(warm, "ab-n-ran") == "0" and glue_text(warm, "ab-n-reused") == "4"
    assert {p.name: p.stat().st_mtime_ns for p in appendix["gen"].iterdir()} == appendix["stamps"]


def test_results_by_gamma_and_run_rows(appendix, tmp_path):
    from pathlib import Path

    gen = appendix["gen"]
    runs = [
        grid.SettingRun(
            p.stem,
            {"alpha": float(p.stem.split("-")[0][1:]), "gamma": float(p.stem.split("-")[1][1:])},
            p,
            p.with_suffix(".json"),
            p.with_suffix(".key"),
            "k",
            "reused",
            1.5,
        )
        for p in sorted(gen.glob("*.ipynb"))
    ]
    by = grid.results_by_gamma(runs)
    assert (
        sorted(by) == [0.0, 1.0] and sorted(by[0.0]) == [0.2, 0.8] and sorted(by[1.0]) == [0.0, 0.8]
    )
    assert all(r.config.gamma == g and r.config.alpha == a for g in by for a, r in by[g].items())
    rows = grid.run_rows(runs[:1], start=gen.parent)
    assert (
        rows[0]["executed notebook"]
        == f"{{download}}`notebook <{gen.name}/{runs[0].notebook.name}>`"
    )
    assert rows[0]["result file"].endswith(f"<{gen.name}/{runs[0].result.name}>`")
    assert rows[0]["papermill runtime"] == "1.5 s" and rows[0]["this build"] == "up to date"
    assert Path(gen.parent / gen.name / runs[0].result.name).is_file()


# --------------------------------------------------------------------------- other parameter values


@pytest.mark.parametrize(
    "params",
    [
        {
            "alpha": 0.3,
            "gamma": 0.5,
            "norm": "rms",
            "n": 4,
            "d": 16,
            "layers": 3,
            "samples": 1500,
            "seed": 2,
        },
        {
            "alpha": 0.0,
            "gamma": 1.0,
            "norm": "none",
            "n": 3,
            "d": 8,
            "layers": 6,
            "samples": 1200,
            "seed": 5,
        },
        {  # chapter 9's recipe: another placement, the paper's closed forms left out
            "alpha": 0.3,
            "gamma": 1.0,
            "norm": "layernorm",
            "placement": "post",
            "n": 5,
            "d": 16,
            "layers": 3,
            "samples": 1000,
            "seed": 1,
        },
    ],
    ids=["rms-gamma0.5-L3", "none-L6", "post-L3"],
)
def test_template_runs_with_other_parameters(tmp_path, params):
    out = run_template(tmp_path, **params, result_path="r.json")
    nb = nbformat.read(out, as_version=4)
    assert errors(nb) == []
    assert sum(images(c) for c in code_cells(nb)) == 2
    res = SimResult.load(tmp_path / "r.json")
    assert {k: getattr(res.config, k) for k in params} == params
    tables = [
        o["data"]["text/markdown"]
        for c in code_cells(nb)
        for o in c.outputs
        if "text/markdown" in o.get("data", {})
    ]
    layer_table = next(t for t in tables if "Definition 1, plain means" in t)
    assert layer_table.count("\n") == params["layers"] + 1  # header, rule, one row per layer
    assert not any("nan" in t for t in tables)


def test_appendix_runs_with_other_parameters(tmp_path):
    gen = tmp_path / "runs"
    out = tmp_path / "b.ipynb"
    before = sorted(p.name for p in BOOK.iterdir())
    execute_notebook(
        str(APPENDIX),
        str(out),
        kernel_name=KERNEL,
        cwd=str(BOOK),
        parameters={
            "samples": 1500,
            "seed": 4,
            "alphas_no_residual": "[0.3]",
            "alphas_residual": [0.1, 0.3],
            "gammas_residual": "[0.5, 1]",
            "n": 5,
            "d": 16,
            "layers": 3,
            "out_dir": str(gen),
            "workers": 3,
        },
    )
    assert sorted(p.name for p in BOOK.iterdir()) == before, "the runs wrote into book/"
    nb = nbformat.read(out, as_version=4)
    assert errors(nb) == []
    assert glue_text(nb, "ab-n-settings") == "5" and glue_text(nb, "ab-workers") == "3"
    assert glue_text(nb, "ab-f3-a-first") == "0.3" and glue_text(nb, "ab-cost-alphas") == "0.3"
    assert glue_text(nb, "ab-gamma") == "0.5"  # the first weight is the one the prose quotes
    # the closed forms of the paper's Figure 5 are held at this grid (its alphas at that weight),
    # not the paper's
    assert glue_text(nb, "ab-cf-alphas") == "0.1 and 0.3" and glue_text(nb, "ab-quote") == "0.1"
    assert glue_text(nb, "ab-cf-ds") == "16, 64 and 256"
    assert sorted(p.name for p in gen.glob("*.json")) == sorted(
        f"a{a}-g{g}-layernorm-n5-d16-L3-s1500-seed4.json"
        for a, g in (("0.3", "0"), ("0.1", "0.5"), ("0.3", "0.5"), ("0.1", "1"), ("0.3", "1"))
    )
    assert all("image/svg+xml" in glued(nb)[f] for f in FIGURES)
    verdicts = glued(nb)["ab-verdicts"]["text/markdown"]
    assert (
        verdicts.count("Figure 4 <appendix_b>") == 2
        and verdicts.count("Figure 5 <appendix_b>") == 2
    )
    assert "0.5 × residual" in verdicts


def test_appendix_rejects_a_bad_grid_before_any_run(tmp_path):
    gen = tmp_path / "runs"
    for params, message in (
        ({"layers": 1}, "layers=1 is out of range"),
        ({"gammas_residual": "[0, 1]"}, "gammas_residual[0]=0 is out of range"),
        ({"gammas_residual": "[1, 1]"}, "gammas_residual='[1, 1]' repeats a value"),
        ({"alphas_residual": "[1.0]"}, "alphas_residual=[1.0] is not allowed"),
    ):
        with pytest.raises(PapermillExecutionError, match=re.escape(message)):
            execute_notebook(
                str(APPENDIX),
                str(tmp_path / "b.ipynb"),
                kernel_name=KERNEL,
                cwd=str(BOOK),
                parameters={"samples": 1500, "out_dir": str(gen), **params},
            )
        assert not gen.exists()


def test_default_grid_is_the_papers():
    """The defaults reproduce the grid of the paper's Figures 3-5 (and the settings the landing
    page's verdicts use): gamma 0 at alpha 0.2-0.8, gamma 1 at alpha 0-0.8."""
    from companion import settings

    info = papermill.inspect_notebook(str(APPENDIX))
    defaults = {
        k: eval(v["default"]) for k, v in info.items() if k.startswith(("alphas", "gammas"))
    }
    assert defaults == {
        "alphas_no_residual": list(settings.FIG3_ALPHAS),
        "alphas_residual": list(settings.FIG4_ALPHAS),
        "gammas_residual": [1.0],
    }


# --------------------------------------------------------------------------- the verdict helpers


def _runs(alphas, gamma, samples=3000, d=16):
    from recency_lib import SimConfig, simulate

    return {
        a: simulate(SimConfig(alpha=a, gamma=gamma, n=6, d=d, layers=3, samples=samples, seed=1))
        for a in alphas
    }


def test_residual_weights():
    assert grid.residual_weights("g", "[0.5, 1]") == [0.5, 1.0] and grid.residual_weights(
        "g", 1
    ) == [1.0]
    for bad in ("[0, 1]", "[1, 1]", "[-1]", "[]", "x"):
        with pytest.raises(ValueError, match=r"^g(\[0\])?="):
            grid.residual_weights("g", bad)


def test_feature_rows_cover_every_check_of_figures_3_and_4():
    from companion import claims, verdicts
    from companion.pages import appendix_b as pages

    fig3, fig4 = _runs((0.2, 0.8), 0.0), _runs((0.0, 0.8), 1.0)
    for v in (claims.figure3_claim(fig3), claims.figure4_claim(fig4, fig3)):
        groups = pages.feature_checks(v)
        assert sum(len(cs) for cs in groups.values()) == len(v.checks)
        assert list(groups) == [f for f, _, _ in pages.FEATURES if f in groups]
        rows = pages.feature_rows(v)
        assert [r["feature"] for r in rows] == list(groups)
        words = pages.feature_words(v)
        assert set(words.values()) <= set(verdicts.WORDS)
        # the verdict's own word follows from the features' statuses by the same rule
        assert verdicts.verdict_word([c.status for cs in groups.values() for c in cs])[0] == v.word
        assert len(pages.check_rows(v)) == len(v.checks)
    assert list(pages.feature_checks(claims.figure4_claim(fig4, fig3))) == [
        f for f, _, _ in pages.FEATURES
    ]


def test_figure5_claim_at_any_residual_weight():
    from companion import claims, closedforms
    from companion.pages import appendix_b as pages

    half = _runs((0.0, 0.4, 0.8), 0.5)
    v = claims.figure5_claim(half)
    tab = v.numbers["table"]
    j = np.arange(1, 7)
    from recency_lib import theory

    expected = theory.h_eq41(j, 0.4, 0.5, 16)
    assert tab[0.4]["printed"] == pytest.approx(
        expected[-1] / expected[0] - 1.0
    )  # the forms at gamma = 0.5
    assert [c.alpha for c in v.checks] == [0.4, 0.8]
    assert pages.by_alpha_text(closedforms.size_ratios(tab, "printed")).endswith(
        "at α = 0.4 and 0.8"
    )


def test_misranked_pairs():
    from companion.pages import appendix_b as pages

    tab = {
        0.6: {"sim": (0.087, 1e-4), "printed": 0.054, "corrected": 0.089},
        0.8: {"sim": (0.079, 1e-4), "printed": 0.058, "corrected": 0.082},
        0.0: {"sim": (0.004, 1e-4), "printed": 0.0015, "corrected": 0.0027},
    }
    assert pages.misranked(tab, "printed") == [(0.8, 0.6)]
    assert pages.misranked(tab, "corrected") == []
    assert pages.ranking_text(pages.misranked(tab, "printed")) == "α = 0.6 below α = 0.8"
    assert pages.ranking_text([]) == "no pair"
    close = {
        0.6: {"sim": (0.08, 0.01), "printed": 0.05},
        0.8: {"sim": (0.081, 0.01), "printed": 0.04},
    }
    assert pages.misranked(close, "printed") == []  # not resolved: no claim about the order


def test_grid_workers_reuse_their_kernel_cleared_between_runs(tmp_path, monkeypatch):
    """run_grid runs a worker's settings on one kernel: each run starts with an empty namespace, in
    its own staging folder (the relative result path lands), with execution counts from 1; a failing
    run takes its kernel down and the next run gets a new one; no kernel outlives run_grid."""
    template = light_template(tmp_path / "template.ipynb")
    nb = nbformat.read(template, as_version=4)
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "import os\n"
            "assert 'leftover' not in globals(), 'the namespace of an earlier run survived'\n"
            "leftover = os.getpid()\n"
            "print('kernel', os.getpid(), os.path.basename(os.getcwd()))\n"
            "if alpha == 0.5:\n"
            "    raise RuntimeError('deliberate 815')"
        ),
    )
    nbformat.write(nb, template)
    monkeypatch.chdir(tmp_path)
    out = Path("runs")  # relative, as the book's page passes it
    runs = grid.run_grid(
        template, out, [{"alpha": a, "samples": SMALL} for a in (0.1, 0.2, 0.3)], workers=1
    )

    def printed(run):
        book = nbformat.read(run.notebook, as_version=4)
        cells = [c for c in book.cells if c.cell_type == "code"]
        assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
        text = "".join(o.text for c in cells for o in c.outputs if o.get("name") == "stdout")
        assert text.startswith("kernel ") and text.count("\n") == 1, text  # nothing else printed
        return text.split()

    pids = {printed(r)[1] for r in runs}
    assert len(pids) == 1, "one worker, one kernel"
    assert all(
        printed(r)[2].startswith(".staging-") for r in runs
    )  # each ran in its staging folder
    assert [r.load().config.alpha for r in runs] == [0.1, 0.2, 0.3]
    with pytest.raises(PapermillExecutionError, match="deliberate 815"):  # 0.5 fails, then 0.6 runs
        grid.run_grid(
            template,
            out,
            [{"alpha": 0.5, "samples": SMALL}, {"alpha": 0.6, "samples": SMALL}],
            workers=1,
        )
    again = grid.run_grid(
        template,
        out,
        [{"alpha": 0.6, "samples": SMALL}, {"alpha": 0.7, "samples": SMALL}],
        workers=1,
    )
    assert [r.status for r in again] == ["reused", "ran"]
    assert printed(again[0])[1] not in pids, "the failed run's kernel was not reused"
    assert kernels_running() == [], "kernels left running"
