"""One module per chapter, so a page depends on its own module only (book/_ext/fresh_cache.py). Each
function takes what the page computed: ``*_numbers`` return glue key -> text, ``*_rows`` a table's
rows, ``*_figure(s)`` draw and glue the longer figures."""
