"""The numbers the prose of ``book/empirical.ipynb`` cites and the rows of its tables: each function takes
what the page computed and returns glue key -> text, which the page glues, or a table's rows, which
the page shows (``report.table``). Nothing here simulates."""
from __future__ import annotations

import numpy as np

from .. import claims, conventions, report


def figure2_numbers(*, alpha, by_d, curves, d, ds, forms, h_zc, layers, n, results, samples, samples_dsweep,
                       table, verdicts) -> dict[str, str]:
    """Chapter 6's Figure 2: the verdict's decisive value and setting, the family-wise z, the ratio range,
    the figures' data and the d sweep."""
    out = {}
    v2_ratios = [c.value for c in verdicts[1].checks]
    numbers = {**claims.empirical_numbers(results, by_d, forms, verdicts, n=n, d=d, layers=layers, samples=samples,
                                          samples_dsweep=samples_dsweep),
               "empirical-leak-first": report.num(conventions.leak(alpha, ds[0]), 2),
               "empirical-leak-last": report.num(conventions.leak(alpha, ds[-1]), 2)}
    for key, text in numbers.items():
        out[key] = text
    out["empirical-v2-value"] = verdicts[1].value
    out["empirical-v2-alpha"] = next(f"{a:g}" for a in table if verdicts[1].decisive.what.endswith(f"α = {a:g}"))
    out["empirical-v2-zc"] = report.num(h_zc, 3)
    out["empirical-v2-count"] = report.count(len(v2_ratios))
    out["empirical-v2-min"] = verdicts[1].checks[int(np.argmin(v2_ratios))].text
    out["empirical-v2-max"] = verdicts[1].checks[int(np.argmax(v2_ratios))].text
    out["empirical-fig2-data"], out["empirical-fig2-ratio-data"] = claims.h_downloads("figure-2", curves, forms, "fig2")
    return out


# -- the rows of the page's tables -------------------------------------------------------------------

def h_rows(*, d, h_results, h_zc, n, table) -> list[dict]:
    """Figure 2's table, one row per alpha: the simulated h(n)/h(1) - 1 against Eq. (41) (``table``, the
    verdict's numbers) and the mean step of S^(2) over its large-d line, "unresolved" where its |z| is
    at most ``h_zc``."""
    def score_ratio(a, r):
        _, m, s = claims.s2_order(r)
        line = claims.predicted_trend(n, d, a)
        return report.pm(m / line, s / line) if abs(report.zscore(m, s)) > h_zc else "unresolved"

    return [{"α": f"{a:g}", "simulated $h(n)/h(1) - 1$": report.pm(*t["sim"]), "Eq. (41)": report.num(t["printed"], 3),
             "simulated / Eq. (41)": report.pm(t["sim"][0] / t["printed"], t["sim"][1] / t["printed"]),
             "mean step of $S^{(2)}$: simulated / large-$d$": score_ratio(a, h_results[a])}
            for a, t in table.items()]
