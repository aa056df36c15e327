"""Rerun a chapter with other parameters and look at it as a page of the book.

    python -m companion rerun book/residual.ipynb out -p gamma 0.5 -p samples 20000
    python -m companion render out/residual.ipynb

``rerun`` checks every parameter name against the chapter's ``parameters`` cell before any work (an
unknown or misspelled one is an error that names it and lists the known ones; papermill itself only
warns), runs the chapter with papermill from ``book/`` (progress bars of long simulations in the
notebook), writes ``OUT/<page>.ipynb`` (never over a source) and renders it. ``render`` turns an executed
notebook into ``<page>.html`` beside it, in the book's look: a one-page Jupyter Book with the book's
configuration, extensions and style, executing nothing (the numbers and figures are the notebook's),
so every glued number and figure is in place. Links to other chapters become plain text there.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from recency_lib.validation import short

BOOK = Path(__file__).resolve().parents[1]          # book/
ROOT = BOOK.parent                                  # the repository: _config.yml, _toc.yml


def parameters(page) -> dict:
    """The chapter's parameters (papermill's reading of its ``parameters`` cell): name -> {type, default, help}."""
    import papermill as pm

    return pm.inspect_notebook(str(page))


def check_parameters(page, given: dict) -> dict:
    """``given`` (name -> value), every name one of the chapter's parameters; else a ValueError naming the
    unknown ones and listing the known ones (values are the chapter's to check when it runs)."""
    known = parameters(page)
    unknown = [k for k in given if k not in known]
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(short, unknown))} for {Path(page).name}; "
                         f"allowed: {', '.join(known)}")
    return given


def _value(text: str):
    """A -p value as papermill reads one: JSON/YAML-like numbers, lists and booleans, else the string."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def rerun(page, out_dir, given: dict, *, render_html: bool = True, kernel: str = "python3") -> Path:
    """Run chapter ``page`` with the parameters ``given`` into ``out_dir`` (created) and render it; returns
    the executed notebook's path. ValueError before any work for an unknown parameter, a page that is not
    one of the book's notebooks, or an output that would replace a source."""
    import papermill as pm

    page = Path(page).resolve()
    if page.suffix != ".ipynb" or page.parent != BOOK or not page.is_file():
        raise ValueError(f"page={short(str(page))} is not allowed; allowed: a chapter of the book, book/<name>.ipynb")
    check_parameters(page, given)
    out_dir = Path(out_dir).resolve()
    target = out_dir / page.name
    if target.resolve() == page or out_dir == BOOK:
        raise ValueError(f"out_dir={short(str(out_dir))} is not allowed; allowed: a folder other than book/ "
                         f"(a rerun never goes over its source)")
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {"RECENCY_LIB_PROGRESS": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    os.environ.pop("COMPANION_IN_BOOK", None)
    try:
        pm.execute_notebook(str(page), str(target), parameters=given, kernel_name=kernel, cwd=str(BOOK),
                            progress_bar=False)
    finally:
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    if render_html:
        render(target)
    return target


def render(notebook, out: str | os.PathLike | None = None) -> Path:
    """``notebook`` (executed) as an HTML page in the book's look: ``<out>/<name>.html`` with the book's
    static files beside it (``out`` defaults to the notebook's folder). Returns the page's path."""
    notebook = Path(notebook).resolve()
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    if not any(c.get("outputs") for c in nb.get("cells", []) if c.get("cell_type") == "code"):
        raise ValueError(f"notebook={short(str(notebook))} has no outputs; allowed: an executed notebook "
                         f"(python -m companion rerun ... runs one)")
    out = Path(out).resolve() if out is not None else notebook.parent
    name = notebook.stem
    with tempfile.TemporaryDirectory(prefix="companion-render-") as tmp:
        tmp = Path(tmp)
        config = (ROOT / "_config.yml").read_text(encoding="utf-8")
        config = config.replace("execute_notebooks: cache", "execute_notebooks: \"off\"")
        (tmp / "_config.yml").write_text(config, encoding="utf-8")
        book = tmp / "book"
        book.mkdir()
        for sub in ("_ext", "_static"):
            shutil.copytree(BOOK / sub, book / sub, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(BOOK / "references.bib", book / "references.bib")
        (book / f"{name}.ipynb").write_text(json.dumps(_glued_only(nb), ensure_ascii=False), encoding="utf-8")
        (tmp / "_toc.yml").write_text(f"format: jb-book\nroot: {name}\n", encoding="utf-8")
        (book / "_toc.yml").symlink_to("../_toc.yml")
        proc = subprocess.run([sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
                               "build", "book"], cwd=tmp, capture_output=True,
                              text=True, env={**os.environ, "NO_COLOR": "1"})
        html = tmp / "_build" / "html"
        if proc.returncode != 0 or not (html / f"{name}.html").is_file():
            raise RuntimeError(f"rendering {notebook.name} failed: {proc.stdout[-1500:]}{proc.stderr[-1500:]}")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(html / f"{name}.html", out / f"{name}.html")
        for sub in ("_static", "_images", "_sphinx_design_static"):
            if (html / sub).is_dir():
                shutil.copytree(html / sub, out / sub, dirs_exist_ok=True)
    return out / f"{name}.html"


GLUE_PREFIX = "application/papermill.record/"


def _glued_only(nb: dict) -> dict:
    """The notebook with every glued value that a rerun also displayed (companion.in_book) turned back
    into a glue record only, as in the book's build: the page places it where its text refers to it,
    once."""
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            book = out.get("metadata", {}).get("scrapbook")
            if book and not book.get("mime_prefix"):
                out["data"] = {GLUE_PREFIX + k: v for k, v in out["data"].items()}
                book["mime_prefix"] = GLUE_PREFIX
    return nb


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rerun", help="run a chapter with other parameters, then render it")
    r.add_argument("page", help="a chapter, book/<name>.ipynb")
    r.add_argument("out_dir", help="where the executed notebook and its page go (not book/)")
    r.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="a parameter")
    r.add_argument("--no-render", action="store_true", help="only the executed notebook")
    h = sub.add_parser("render", help="an executed notebook as a page in the book's look")
    h.add_argument("notebook")
    h.add_argument("--out", default=None, help="folder of the page (default: the notebook's)")
    args = parser.parse_args(argv)
    try:
        if args.command == "rerun":
            given = {}
            for name, value in args.p:
                if name in given:
                    raise ValueError(f"parameter {short(name)} is given twice; allowed: each parameter once")
                given[name] = _value(value)
            path = rerun(args.page, args.out_dir, given, render_html=not args.no_render)
            print(path.with_suffix(".html") if not args.no_render else path)
        else:
            print(render(args.notebook, args.out))
    except ValueError as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    except Exception as exc:                      # papermill's execution error: the chapter's own message
        print(f"error: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:500] if str(exc).strip() else ''}",
              file=sys.stderr)
        return 1
    return 0
