"""The garbage collector's thresholds in the processes that build the book (companion.grid.
COLLECTOR_THRESHOLDS): Sphinx's (book/_ext/collector.py, restored when the build ends) and the
shared kernels' (the build slots and the grid run on companion.grid.SharedKernel)."""

from __future__ import annotations

import gc
import sys

import pytest
from bookutils import BOOK

sys.path.insert(0, str(BOOK / "_ext"))
import collector

from companion import grid


class _App:
    def __init__(self):
        self.handlers = {}

    def connect(self, event, handler):
        self.handlers[event] = handler


def test_sphinx_collects_at_the_build_thresholds_and_restores_them_after():
    before = gc.get_threshold()
    assert before != grid.COLLECTOR_THRESHOLDS
    app = _App()
    try:
        meta = collector.setup(app)
        assert gc.get_threshold() == grid.COLLECTOR_THRESHOLDS
        assert meta["parallel_read_safe"] and meta["parallel_write_safe"]
        app.handlers["build-finished"](app, None)
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)


@pytest.mark.book
def test_a_shared_kernel_collects_at_the_build_thresholds(tmp_path):
    from jupyter_core.utils import run_sync

    kernel = grid.SharedKernel("python3")
    try:
        km = kernel.ready(tmp_path)
        kc = km.client()
        kc.start_channels()
        try:
            texts = []
            run_sync(kc.execute_interactive)(
                "import gc, os; print(gc.get_threshold(), os.getcwd())",
                timeout=60,
                output_hook=lambda msg: texts.append(msg["content"].get("text", "")),
            )
        finally:
            kc.stop_channels()
        assert "".join(texts).strip() == f"{grid.COLLECTOR_THRESHOLDS} {tmp_path.resolve()}"
    finally:
        kernel.close()
