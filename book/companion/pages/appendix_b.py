"""The numbers the prose of ``book/appendix_b.ipynb`` cites: each function takes what the page
computed and returns glue key -> text, which the page glues. Nothing here simulates."""
from __future__ import annotations

from .. import claims, closedforms, conventions, grid, report


def figure34_numbers(*, d, fig3, fig4, gamma4, layers, n, samples, v5, verdicts) -> dict[str, str]:
    """Appendix B's Figures 3 and 4: the setting, the estimator, the figures' data and the verdicts'
    numbers."""
    out = {}
    out["ab-n"] = report.count(n)
    out["ab-d"] = report.count(d)
    out["ab-samples"] = report.count(samples)
    out["ab-layers"] = report.count(layers)
    out["ab-gamma"] = f"{gamma4:g}"
    out["ab-estimator"] = claims.estimator_name()
    for key, results, verdict in (("ab-f3", fig3, verdicts[0]), ("ab-f4", fig4, verdicts[1])):
        first, last = list(results)[0], list(results)[-1]
        tally = claims.definition1_tally(results.values())
        out[f"{key}-a-first"] = f"{first:g}"
        out[f"{key}-a-last"] = f"{last:g}"
        out[f"{key}-rpL-first"] = report.pm(*claims.rp(results[first], layers))
        out[f"{key}-rpL-last"] = report.pm(*claims.rp(results[last], layers))
        out[f"{key}-l1z"] = report.num(max(abs(claims.rp_z(r, 1)) for r in results.values()), 2)
        out[f"{key}-holds"] = report.count(tally["holds"])
        out[f"{key}-violated"] = report.count(tally["violated"])
        out[f"{key}-matrices"] = report.count(tally["matrices"])
        out[f"{key}-z"] = report.num(verdict.numbers["z_threshold"], 3)
        for k, word in enumerate(grid.feature_words(verdict).values()):
            out[f"{key}-feature{k}"] = word
    for key, verdict in (("ab-v3", verdicts[0]), ("ab-v4", verdicts[1]), ("ab-v5", v5[gamma4])):
        out[key] = verdict.word
        out[f"{key}-value"] = verdict.value
        out[f"{key}-measure"] = report.Markdown(verdict.measure)
    out["ab-fig3-data"] = report.download("figure-3", report.result_columns(list(fig3.values()), [conventions.alpha_label(a) for a in fig3]))
    out["ab-fig4-data"] = report.download("figure-4", report.result_columns(list(fig4.values()), [conventions.alpha_label(a) for a in fig4]))
    costs = claims.residual_costs(fig3, fig4, layers)
    out["ab-cost-values"] = report.listing([report.pm(*c) for c in costs.values()], fmt=str)
    out["ab-cost-alphas"] = report.listing(list(costs))
    return out

def figure5_numbers(*, curves, forms, gamma4, v5) -> dict[str, str]:
    """Appendix B's Figure 5: the closed forms against simulation (printed and corrected key factor) and Eq.
    (5)'s verdict numbers."""
    out = {}
    quote = 0.2                                                   # the alpha quoted in the prose (one of Figure 5's)
    setting = closedforms.Setting("layernorm", quote, 1.0)
    out["ab-quote"] = f"{quote:g}"
    out["ab-cf-ds"] = report.listing(forms.ds)
    out["ab-corrected-trend"] = claims.trend_words(forms.row("fig5-corrected", "step", setting))
    for form in ("printed", "corrected"):
        for part in ("level", "step"):
            out[f"ab-{form}-{part}"] = report.listing(claims.ratio_texts(forms.row(f"fig5-{form}", part, setting)), fmt=str)
    level_off, level_z = closedforms.row_offsets(forms.row("fig5-corrected", "level", setting))
    out["ab-corrected-level-off"] = report.percent(level_off)
    out["ab-corrected-level-z"] = report.num(level_z, 2)
    h_table, corrected = v5[gamma4].numbers["table"], v5[gamma4].numbers["corrected"]
    out["ab-v5-all"] = grid.by_alpha_text(v5[gamma4].checks)
    out["ab-v5-corrected"] = grid.by_alpha_text(corrected)
    out["ab-v5-corrected-off"] = report.percent(max(abs(c.value - 1.0) for c in corrected))
    out["ab-v5-corrected-word"] = claims.verdict_word([c.status for c in corrected])[0]
    out["ab-v5-printed-rank"] = grid.ranking_text(grid.misranked(h_table, "printed"))
    out["ab-v5-corrected-rank"] = grid.ranking_text(grid.misranked(h_table, "corrected"))
    out["ab-fig5-data"], out["ab-fig5-ratio-data"] = claims.h_downloads("figure-5", curves, forms, "fig5-corrected")
    return out


def runs_numbers(*, by_gamma, runs, samples, settings, workers) -> dict[str, str]:
    """The grid's papermill runs: the table of runs, how many settings ran or were reused, on how many
    kernels, the fastest and slowest run, and the compute 10^7 sequences per setting would take."""
    seconds = sorted(r.seconds for r in runs)
    cpu_per_sequence = sum(r.elapsed_seconds for g in by_gamma.values() for r in g.values()) / (len(runs) * samples)
    return {"ab-n-settings": report.count(len(runs)),
            "ab-n-ran": report.count(sum(r.status == "ran" for r in runs)),
            "ab-n-reused": report.count(sum(r.status == "reused" for r in runs)),
            "ab-workers": report.count(min(workers, len(settings))),
            "ab-run-min": report.num(seconds[0], 2),
            "ab-run-max": report.num(seconds[-1], 2),
            "ab-cpu-1e7": report.num(cpu_per_sequence * 10 ** 7 * len(runs) / 60, 2),
            "ab-runs-table": report.table(grid.run_rows(runs))}
