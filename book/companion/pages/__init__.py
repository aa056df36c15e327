"""Per chapter, the numbers its prose cites (glue key -> text) from what the page computed, and the
figures too long to draw on the page: one module per notebook, so a page depends on its own module
only (book/_ext/fresh_cache.py follows imports)."""
