"""The status column of the execution table (``{nb-exec-table}``, reproducibility page) in words.

myst-nb writes a status as the emoji ✅ or ❌, which a machine without an emoji font draws as an
empty box: after myst-nb has made the table, each becomes a word ("ok", "failed").
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

#: myst-nb's status glyphs (myst_nb.ext.execution_tables) -> what the table shows instead.
STATUS_WORDS = {"\u2705": "ok", "\u274c": "failed"}


class ExecutionStatusInWords(SphinxPostTransform):
    """Replace the status emoji in every table with its word."""

    default_priority = 20  # after myst-nb's ExecutionStatsPostTransform (8) has built the table

    def run(self, **kwargs) -> None:
        for table in self.document.findall(nodes.table):
            for text in list(table.findall(nodes.Text)):
                word = STATUS_WORDS.get(str(text).strip())
                if word is not None:
                    text.parent.replace(text, nodes.Text(word))


def setup(app: Sphinx):
    app.add_post_transform(ExecutionStatusInWords)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
