"""Set the copyright year of the footer to the year of the build.

A year typed into ``_config.yml`` goes stale; here it is computed when Sphinx reads its
configuration: from ``SOURCE_DATE_EPOCH`` when that is set (reproducible builds), else today (UTC).
An explicit ``copyright`` in ``_config.yml`` is kept.
"""

from __future__ import annotations

import os
import time

from sphinx.application import Sphinx
from sphinx.config import Config


def build_year() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return time.strftime("%Y", time.gmtime(int(epoch) if epoch.isdigit() else None))


def on_config_inited(app: Sphinx, config: Config) -> None:
    if not str(config.copyright or "").strip():
        config.copyright = build_year()


def setup(app: Sphinx):
    app.connect("config-inited", on_config_inited)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
