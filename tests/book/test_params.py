"""companion.params: every parameter of every page checked under its own name before any work, lists
and scalars included, as the page's first cell and `python -m companion rerun` run it. (That each
page calls it first is tests/book/test_notebook_rules.py's; that a page stops there under papermill,
test_notebooks.py's.)"""

from __future__ import annotations

import re

import nbformat
import pytest
from bookutils import BOOK, page_source, toc_pages

from companion import params

PAGES = [p for p in toc_pages() if page_source(p).suffix == ".ipynb"] + ["setting_template"]


def defaults(page: str) -> dict:
    return params.defaults(BOOK / f"{page}.ipynb")


def placed(page: str, folder) -> dict:
    """The page's defaults with what it writes placed in ``folder``, as a rerun places them (from
    book/, the template's default result would land in the sources: refused)."""
    outputs = params.OUTPUTS.get(page, {})
    return {**defaults(page), **{n: str(folder / name) for n, name in outputs.items()}}


@pytest.fixture(autouse=True)
def in_the_book(monkeypatch):
    """Relative paths (Appendix B's template) as the pages see them: from book/."""
    monkeypatch.chdir(BOOK)


@pytest.mark.parametrize("page", PAGES)
def test_every_parameter_of_every_page_has_a_rule_and_the_defaults_pass(page, tmp_path):
    """Each parameter of the page's parameters cell has its rule (by its name or the page's own)."""
    assert list(params.rules(page)) == list(defaults(page))
    assert params.check(page, placed(page, tmp_path)).keys() == defaults(page).keys()
    assert set(params.PAGES) <= set(PAGES), "rules of a page that is gone"


def test_a_parameter_without_a_rule_is_the_authors_error(tmp_path, monkeypatch):
    nb = nbformat.read(BOOK / "index.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source += "\nnmae: int = 3  # a typo"
    nbformat.write(nb, tmp_path / "page.ipynb")
    monkeypatch.setattr(params, "BOOK", tmp_path)
    with pytest.raises(ValueError, match=r"^page: parameter nmae has no rule"):
        params.check("page", {**defaults("index"), "nmae": 3})


@pytest.mark.parametrize("page", PAGES)
def test_a_bad_value_of_any_parameter_is_refused_under_its_own_name(page):
    """None and a dict are wrong for every parameter: the message starts with its name."""
    base = defaults(page)
    for name in base:
        for bad in (None, {"a": 1}):
            with pytest.raises(ValueError) as info:
                params.check(page, {**base, name: bad})
            assert re.match(rf"{name}(=|\[\d+\]=| has )", str(info.value)), (
                page,
                name,
                str(info.value),
            )


# The cases: each was refused late, or under another name, or not at all.
LATE_OR_MISNAMED = [
    ("beyond", {"long_samples": 0}, "long_samples=0 is out of range; allowed: an integer >= 2"),
    ("input_distribution", {"samples_alpha1": 1}, "samples_alpha1=1 is out of range"),
    (
        "layernorm",
        {"samples_prop1": 0},
        "samples_prop1=0 is out of range; allowed: an integer >= 2",
    ),
    ("intro", {"samples_first_order": 1}, "samples_first_order=1 is out of range"),
    ("preliminaries", {"samples_single": 0}, "samples_single=0 is out of range"),
    ("appendix_a", {"samples_cosine": 0}, "samples_cosine=0 is out of range"),
    ("residual", {"samples_first_order": -3}, "samples_first_order=-3 is out of range"),
    ("appendix_a", {"ds": "abc"}, "ds='abc' is not a list"),
    ("appendix_a", {"ds": [16, 2]}, "ds[1]=2 is out of range"),
    ("beyond", {"persample_divisor": 0}, "persample_divisor=0 is out of range"),
    ("residual", {"seed": "2024-01-01"}, "seed='2024-01-01' is not an integer"),
    # found beyond the list: the same kinds
    ("beyond", {"heads": 3}, "heads=3 is not allowed with d=64"),
    ("beyond", {"d": 17, "heads": 1}, "d=17 is not allowed; allowed: an even hidden size"),
    (
        "beyond",
        {"d": 18, "heads": 2},
        "heads=2 is not allowed with d=18; allowed: a divisor of d whose head size",
    ),
    ("beyond", {"long_lengths": [10, 10**6]}, "long_lengths=1000000 needs about"),
    ("beyond", {"networks": 10**6}, "networks=1000000 is out of range"),
    ("conclusion", {"long_n": 10}, "long_n=10 is out of range; allowed: an integer >= 11"),
    ("conclusion", {"long_n": 10**6}, "long_n=1000000 needs about"),
    ("empirical", {"depth_layers": 10**8}, "depth_layers=100000000 needs about"),
    ("input_distribution", {"alphas": [0.2, 0.2]}, "alphas=[0.2, 0.2] repeats a value"),
    ("input_distribution", {"alphas": [0.5, 1.0]}, "alphas[1]=1.0 is out of range"),
    (
        "appendix_b",
        {"alphas_residual": "[0.2, 0.2]"},
        "alphas_residual='[0.2, 0.2]' repeats a value",
    ),
    ("appendix_b", {"gammas_residual": [0.0, 1.0]}, "gammas_residual[0]=0.0 is out of range"),
    (
        "appendix_b",
        {"template": "residual.ipynb"},
        "template='residual.ipynb' lacks the parameter(s) norm, placement, d",
    ),
    (
        "appendix_b",
        {"out_dir": "."},
        "out_dir='.' is not allowed; allowed: a folder outside the sources",
    ),
    ("index", {"workers": 10**6}, "workers=1000000 is out of range; allowed: an integer in [1, "),
    ("setting_template", {"n": 2}, "n=2 is out of range; allowed: an integer >= 3"),
]


@pytest.mark.parametrize(
    "page, given, message",
    LATE_OR_MISNAMED,
    ids=[f"{p}-{next(iter(g))}" for p, g, _ in LATE_OR_MISNAMED],
)
def test_the_late_or_misnamed_cases_are_refused_first_under_their_own_names(page, given, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        params.check(page, {**defaults(page), **given})


def test_a_list_takes_papermills_string_form_or_one_value_and_comes_back_a_list():
    base = defaults("appendix_a")
    assert params.check("appendix_a", {**base, "ds": "[16, 64]"})["ds"] == [
        16,
        64,
    ]  # -p ds "[16, 64]"
    assert params.check("appendix_a", {**base, "ds": 32})["ds"] == [32]  # -p ds 32
    assert params.check("input_distribution", {**defaults("input_distribution"), "alphas": 0.5})[
        "alphas"
    ] == [0.5]
    for bad, message in (
        ("[", "is not a list"),
        ("[]", "is empty"),
        ("[" * 100_000, "is too long"),
        (list(range(4, 4 + params.LIST_MAX + 1)), "has 101 entries"),
        ([True], "is not an integer"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            params.check("appendix_a", {**base, "ds": bad})


def test_a_grid_of_more_settings_than_the_cap_is_refused_before_any_run():
    """Appendix B once accepted 20,001 settings (hours of work): at most GRID_MAX, named by the
    lists."""
    base = defaults("appendix_b")
    hundred = [round(0.01 * k, 2) for k in range(100)]
    with pytest.raises(ValueError, match=r"make 10001 settings; allowed: at most 100"):
        params.check(
            "appendix_b",
            {
                **base,
                "alphas_no_residual": [0.1],
                "alphas_residual": hundred,
                "gammas_residual": [1.0 + g for g in hundred],
            },
        )
    with pytest.raises(ValueError, match=r"gammas_residual has 200 entries"):
        params.check("appendix_b", {**base, "gammas_residual": [1.0 + k for k in range(200)]})


def test_appendix_bs_runs_land_in_the_builds_folder_never_in_the_checkout(monkeypatch, tmp_path):
    """Appendix B's out_dir left empty: the build's folder (COMPANION_BUILD_DIR, which fresh_cache
    sets from --path-output), else the checkout's _build; never a source folder."""
    base = defaults("appendix_b")
    assert base["out_dir"] == ""
    monkeypatch.setenv("COMPANION_BUILD_DIR", str(tmp_path / "elsewhere" / "_build"))
    assert params.check("appendix_b", base)["out_dir"] == str(
        tmp_path / "elsewhere" / "_build" / ".jupyter_cache" / "appendix_b"
    )
    monkeypatch.delenv("COMPANION_BUILD_DIR")
    assert params.check("appendix_b", base)["out_dir"] == str(
        params.ROOT / "_build" / ".jupyter_cache" / "appendix_b"
    )
    assert not (tmp_path / "elsewhere").exists()  # checked, not made


@pytest.mark.parametrize("folder", [".", "_static", "../recency_lib", "..", "../tests/book"])
def test_no_output_folder_in_the_sources(folder):
    with pytest.raises(ValueError, match="allowed: a folder outside the sources"):
        params.check_outside_sources("out", folder)
    assert (
        params.check_outside_sources("out", "../_build/x")
        == (params.ROOT / "_build" / "x").resolve()
    )


# -- samples sets the cost: the derived sizes follow it --------------------------------------------


def test_every_sample_size_but_samples_is_a_derived_size():
    """The sizes `python -m companion rerun` scales with samples: every parameter that counts
    sequences."""
    assert params.derived_sizes("residual") == ("samples_first_order",)
    assert params.derived_sizes("input_distribution") == (
        "samples_isotropic",
        "samples_first_order",
        "samples_cosine",
        "samples_alpha1",
    )
    assert params.derived_sizes("beyond") == ("network_samples", "relative_samples", "long_samples")
    assert params.derived_sizes("appendix_b") == ()
    for page in PAGES:
        names = [n for n in defaults(page) if n != "samples" and "samples" in n.split("_")]
        assert list(params.derived_sizes(page)) == names, page


def test_derived_sizes_follow_samples_in_proportion_unless_given():
    """`-p samples 20000` ran the page's derived sizes (samples_first_order 400,000,
    samples_isotropic 4,000,000) at their defaults: now each one left out follows samples, rounded,
    at least 2."""
    base = defaults("input_distribution")
    assert params.follow_samples("input_distribution", base, {"samples": 20_000}) == {
        "samples_isotropic": 800_000,
        "samples_first_order": 80_000,
        "samples_cosine": 800,
        "samples_alpha1": 4_000,
    }
    given = {"samples": 20_000, "samples_isotropic": 5}  # given itself: kept as given
    assert "samples_isotropic" not in params.follow_samples("input_distribution", base, given)
    assert (
        params.follow_samples("input_distribution", base, {"samples": 10})["samples_cosine"] == 2
    )  # the minimum
    assert params.follow_samples("residual", defaults("residual"), {"samples": 33_333}) == {
        "samples_first_order": 133_332
    }
    # up to the paper's final scale: 10^7 sequences per setting, or samples if more
    paper = params.follow_samples("input_distribution", base, {"samples": 10**7})
    assert paper["samples_isotropic"] == paper["samples_first_order"] == 10**7
    assert params.follow_samples("residual", defaults("residual"), {"samples": 2 * 10**7}) == {
        "samples_first_order": 2 * 10**7
    }
    assert (
        params.follow_samples("residual", defaults("residual"), {"samples": 100_000}) == {}
    )  # the default
    assert (
        params.follow_samples("residual", defaults("residual"), {"alpha": 0.3}) == {}
    )  # not given
    assert (
        params.follow_samples("appendix_b", defaults("appendix_b"), {"samples": 10}) == {}
    )  # no derived size
    with pytest.raises(ValueError, match=r"^samples=1 is out of range"):
        params.follow_samples("residual", defaults("residual"), {"samples": 1})
    with pytest.raises(ValueError, match=r"^page='nope' is not allowed"):
        params.follow_samples("nope", {}, {"samples": 10})


def test_the_books_own_build_is_unchanged_by_the_scaling(tmp_path):
    """The pages' own check leaves every value as given: the scaling is the rerun's, never the
    book's."""
    for page in PAGES:
        checked = params.check(page, {**placed(page, tmp_path), "samples": 7})
        assert all(checked[n] == defaults(page)[n] for n in params.derived_sizes(page)), page
        assert params.follow_samples(page, defaults(page), {}) == {}


def test_the_templates_default_result_from_book_would_be_in_the_sources():
    with pytest.raises(ValueError, match=r"^result_path=.*book' is not allowed; allowed: a folder"):
        params.check("setting_template", defaults("setting_template"))


def test_appendix_b_needs_an_alpha_below_one_in_its_residual_grid():
    base = defaults("appendix_b")
    with pytest.raises(
        ValueError,
        match=r"^alphas_residual=\[1\.0\] is not allowed; allowed: two or more alphas, one below 1",
    ):
        params.check("appendix_b", {**base, "alphas_residual": [1.0]})
    assert params.check("appendix_b", {**base, "alphas_residual": [0.5, 1.0]})[
        "alphas_residual"
    ] == [0.5, 1.0]
