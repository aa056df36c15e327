"""companion.theme: the stored seaborn theme is exactly what seaborn.set_theme does, and a kernel
that draws with it does not import seaborn.

Each side runs in a fresh interpreter (seaborn's effects are global and its import is what is being
avoided) and prints every rcParam and the one-letter colours."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

DUMP = """
import json, sys
import matplotlib as mpl
{setup}
print(json.dumps({{
    "rc": {{k: repr(dict.__getitem__(mpl.rcParams, k)) for k in mpl.rcParams if k != "backend"}},
    "codes": {{c: repr(mpl.colors.to_rgba(c)) for c in "bgrmyck"}},
    "seaborn": "seaborn" in sys.modules,
}}))
"""
SEABORN = (
    "import seaborn as sns\nfrom companion.plotting import style_rc\n"
    "sns.set_theme(context='paper', style='ticks', rc=style_rc())"
)
STORED = "from companion import plotting\nplotting.book_style()"


def _dump(setup: str, cache) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", DUMP.format(setup=setup)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RECENCY_LIB_CACHE": str(cache)},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    cache = tmp_path_factory.mktemp("theme-cache")
    return {
        "seaborn": _dump(SEABORN, cache),
        "first": _dump(STORED, cache),
        "stored": _dump(STORED, cache),
        "entries": sorted(p.name for p in cache.iterdir() if p.name.startswith("seaborn-theme")),
    }


def test_the_stored_theme_is_set_themes_bit_for_bit(dumps):
    want = dumps["seaborn"]
    for side in ("first", "stored"):
        got = dumps[side]
        assert got["rc"] == want["rc"], {
            k: (got["rc"].get(k), v) for k, v in want["rc"].items() if got["rc"].get(k) != v
        }
        assert got["codes"] == want["codes"]


def test_seaborn_is_imported_once_per_cache(dumps):
    assert dumps["seaborn"]["seaborn"]
    assert dumps["first"]["seaborn"]  # an empty cache: seaborn computes the theme and it is stored
    assert not dumps["stored"]["seaborn"]  # every later kernel: from the file
    assert len([e for e in dumps["entries"] if e.endswith(".json")]) == 1
