"""What every test shares: which tests are heavy (marked ``book``, so that ``pytest -m "not book"``
is the simulator's quick loop) and the order two workers run them in. The simulator's tests are in
tests/lib/ (they need only recency_lib and the test tools: CI runs them in a venv with nothing
else); the book's in tests/book/ (fixtures there).
"""

from __future__ import annotations

import pytest

# Tests that execute notebooks in Jupyter kernels (papermill) or are slow by design (a fresh
# interpreter at n = 512 on the numpy path): marked ``book`` too, so ``pytest -m "not book"`` is the
# library's quick loop. Named here, once, by test function (module::function, parameters aside).
HEAVY = {
    "test_notebook_rules.py::test_exemplar_runs_with_other_parameters",
    "test_explorer.py::test_notebook_runs_with_small_samples",
    "test_explorer.py::test_notebook_rejects_bad_workers",
    "test_appendix_b.py::test_template_writes_its_result",
    "test_appendix_b.py::test_bad_parameter_fails_in_first_cell_and_writes_nothing",
    "test_appendix_b.py::test_driver_skips_unchanged_and_reruns_on_change",
    "test_appendix_b.py::test_template_runs_with_other_parameters",
    "test_appendix_b.py::test_grid_workers_reuse_their_kernel_cleared_between_runs",
    "test_appendix_b.py::test_a_long_parameter_comes_back_cut",
    "test_grid_faults.py::test_papermill_result_path_never_replaces_a_notebook",
    "test_grid_faults.py::test_grid_reruns_a_damaged_result_and_sweeps_dead_staging",
    "test_grid_faults.py::test_grid_driver_killed_mid_run_leaves_no_kernel_and_no_staging",
    "test_engines.py::test_memory_does_not_grow_with_samples",
    "test_engines.py::test_memory_at_n512_is_bounded_on_every_path",
    "test_appendix_b.py::test_appendix_runs_with_other_parameters",
    "test_appendix_b.py::test_appendix_rejects_a_bad_grid_before_any_run",
    "test_notebooks.py::test_closing_pages_run_with_other_parameters",
    "test_notebooks.py::test_a_bad_parameter_stops_the_page_in_its_first_cell_under_its_own_name",
    "test_notebooks.py::test_appendix_a_runs_with_other_parameters",
}
HEAVY_MODULES = {"test_empirical_page.py"}  # chapter 6 under papermill, every test
HEAVY_FIXTURES = {
    "appendix",  # test_appendix_b.py: the appendix page executed by papermill
    "dumps",  # test_theme.py: three fresh interpreters, one importing seaborn (~7 s)
    "good_run",
}  # test_rerun.py: a rerun of the setting template, then others into its folder


def _name(item) -> str:
    """``module::function`` of a test, its parameters aside: how HEAVY and LONGEST name tests."""
    return f"{item.path.name}::{getattr(item, 'originalname', item.name)}"


def _is_heavy(item) -> bool:
    return (
        _name(item) in HEAVY
        or item.path.name in HEAVY_MODULES
        or bool(HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())))
    )


def pytest_itemcollected(item):
    """Marks the HEAVY tests ``book`` (so ``pytest -m "not book"`` is the library's quick loop)."""
    if _is_heavy(item) or item.get_closest_marker("slow"):
        item.add_marker(pytest.mark.book)


def _needs_the_book(item) -> bool:
    return bool({"book_build", "built_book"} & set(getattr(item, "fixturenames", ())))


#: The longest tests after the book's build (a minute and more in the suite): first among the tests
#: that read the built book, not last, where one worker ran the README's recipes alone for 22 s.
LONGEST = {"test_readme.py::test_every_recipe_runs_as_typed"}


def pytest_collection_modifyitems(session, config, items):
    """Order for two workers (pytest-xdist hands out the first quarter of the items alternately, the
    rest as workers free up): first one test that builds the book, so that its ~100 s start at once
    on one worker while the other runs everything that does not need the book, the quick tests
    before the heavy ones (the first worker's alternate share of the head is then quick to finish
    after the build); the tests that read the built book last, the LONGEST of them first. A stable
    sort: within a group the collection order stays."""
    first = next((i for i, item in enumerate(items) if _needs_the_book(item)), None)
    if first is None:
        return
    builder = items.pop(first)

    def group(item) -> tuple[int, bool]:
        if _needs_the_book(item):
            return 2, _name(item) not in LONGEST
        return (1 if item.get_closest_marker("book") else 0), True

    items.sort(key=group)
    items.insert(0, builder)
