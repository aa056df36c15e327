"""python -m companion rerun|render ... (companion.rerun)."""
import sys

from .rerun import main

sys.exit(main())
