"""Serve MathJax 3 from the built site itself, so math typesets with no network.

Sphinx (and so Jupyter Book 1) loads MathJax from a CDN by default; offline, formulas
stay raw TeX. This extension

* points ``mathjax_path`` at ``_static/mathjax/tex-mml-chtml.js`` (relative to each page),
* copies the MathJax 3 ``es5`` files that a TeX -> CommonHTML page needs into
  ``<outdir>/_static/mathjax/`` when the build has finished.

The files come from the PyPI package ``django-static-mathjax`` (MathJax 3.2.2 as a
Python distribution, listed in requirements.txt), so nothing large is committed.
A different copy of MathJax's ``es5`` folder can be given with the environment
variable ``MATHJAX_ES5_DIR`` or the config value ``offline_mathjax_es5_dir``.

The files are deliberately *not* put under ``html_static_path``: Jupyter Book 1 adds
every ``.js`` file found there to every page (dozens of script tags, broken math).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Path of the entry script below ``_static`` of the built site.
TARGET = "mathjax"
ENTRY = "tex-mml-chtml.js"

#: What to copy from MathJax's ``es5`` folder (files or whole folders).
SUBSET = [
    ENTRY,  # TeX + MathML input, CommonHTML output, menu
    "input/tex/extensions",  # TeX packages loaded on demand (\require, autoload)
    "output/chtml/fonts/woff-v2",  # the web fonts of the CommonHTML output
    "a11y",  # accessibility components the menu may load
    "sre/mathmaps/base.json",  # speech rules (menu > accessibility), English only
    "sre/mathmaps/en.json",
]


def _es5_dir(app: Sphinx) -> Path:
    """Locate MathJax 3's es5 folder."""
    configured = app.config.offline_mathjax_es5_dir or os.environ.get("MATHJAX_ES5_DIR")
    candidates: list[Path] = []
    if configured:
        candidates.append(Path(app.srcdir, configured))
    else:
        spec = importlib.util.find_spec("mathjax")  # django-static-mathjax
        if spec is not None and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                candidates.append(Path(loc, "static", "mathjax", "es5"))
    for cand in candidates:
        if (cand / ENTRY).is_file():
            return cand.resolve()
    raise ExtensionError(
        "offline_mathjax: MathJax 3 es5 files not found "
        f"(looked in {[str(c) for c in candidates] or 'nothing'}). "
        "Install the requirements (django-static-mathjax) or set MATHJAX_ES5_DIR."
    )


def _version(es5: Path) -> str:
    try:
        return json.loads((es5.parent / "package.json").read_text())["version"]
    except Exception:
        return "unknown"


def on_config_inited(app: Sphinx, config) -> None:
    es5 = _es5_dir(app)
    version = _version(es5)
    if not version.startswith("3."):
        raise ExtensionError(f"offline_mathjax: expected MathJax 3, found {version} in {es5}")
    app._offline_mathjax_es5 = es5  # type: ignore[attr-defined]
    # Sphinx prefixes relative script paths with "_static/" and makes them relative
    # to each page, so this works on a web server and from file:// alike.
    config.mathjax_path = f"{TARGET}/{ENTRY}"
    logger.info("offline_mathjax: MathJax %s from %s", version, es5)


def on_build_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    es5: Path = app._offline_mathjax_es5  # type: ignore[attr-defined]
    dest = Path(app.outdir, "_static", TARGET)
    for item in SUBSET:
        src = es5 / item
        if src.is_dir():
            shutil.copytree(src, dest / item, dirs_exist_ok=True)
        elif src.is_file():
            (dest / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / item)
        else:
            raise ExtensionError(f"offline_mathjax: {src} is missing")
    lic = es5.parent / "LICENSE"
    if lic.is_file():
        shutil.copy2(lic, dest / "LICENSE")
    logger.info("offline_mathjax: copied MathJax into %s", dest)


def setup(app: Sphinx):
    app.setup_extension("sphinx.ext.mathjax")
    app.add_config_value("offline_mathjax_es5_dir", "", "env", [str])
    # Run after Sphinx's own config handling, before the builder reads mathjax_path.
    app.connect("config-inited", on_config_inited, priority=900)
    app.connect("build-finished", on_build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
