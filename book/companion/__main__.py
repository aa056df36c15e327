"""python -m companion rerun|render ... (companion.rerun)."""

import os
import sys

# numpy reads this variable as it is imported (by recency_lib) and fails with a traceback on a value
# that is not an integer: checked first, as recency_lib's command line does
_hugepage = os.environ.get("NUMPY_MADVISE_HUGEPAGE")
if _hugepage is not None and not _hugepage.strip().isdigit():
    name = f"NUMPY_MADVISE_HUGEPAGE={_hugepage!r} (environment variable)"
    print(f"error: {name} is not allowed; allowed: 0 or 1, or unset", file=sys.stderr)
    sys.exit(2)

from .rerun import main  # noqa: E402

sys.exit(main())
