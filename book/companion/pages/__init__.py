"""One module per chapter, so a page depends on its own module only (book/_ext/fresh_cache.py follows
imports). Each function takes what the page computed and never simulates: ``*_numbers`` return glue key
-> text of the numbers the prose cites (the page glues them with ``report.glue_numbers``), ``*_rows`` a
table's rows (the page shows them with ``report.table``), ``*_figure`` / ``*_figures`` draw and glue the
figures too long to draw on the page."""
