"""Execute one notebook, as myst-nb's cache mode does, and write the executed copy.

    python run_notebook.py SOURCE.ipynb OUT.ipynb TIMEOUT

Run by book/_ext/fresh_cache.py, one process per notebook, in the notebook's folder. Exit status 1
(and nothing written) when a cell fails: myst-nb then executes the notebook itself and reports it.
"""
import sys

import nbformat
from jupyter_cache.executors.utils import single_nb_execution


def main(source: str, out: str, timeout: str) -> int:
    nb = nbformat.read(source, as_version=4)
    result = single_nb_execution(nb, cwd=None, timeout=None if float(timeout) < 0 else int(float(timeout)),
                                 allow_errors=False, meta_override=True)
    if result.err is not None:
        print(f"{type(result.err).__name__}: {result.err}", file=sys.stderr)
        return 1
    nbformat.write(nb, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
