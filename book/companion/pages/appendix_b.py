"""Appendix B (``book/appendix_b.ipynb``): its numbers, and the features of Figures 3-5."""

from __future__ import annotations

import math

from .. import closedforms, conventions, grid, report, statistics
from ..report import count, listing, pm
from ..verdicts import (
    DECIDED_ELSEWHERE,
    elsewhere_note,
    layer2_isotropic,
    verdict_grid_rows,
    verdict_word,
)


def grid_table(key: str, results: dict, labels) -> None:
    """Glue ``key``-table, the table under a grid of heatmaps (a * on layer 2 at α = 0), and
    ``key``-note: the page that decides that matrix with an estimator built for it."""
    rows = verdict_grid_rows(results.values(), labels, elsewhere=layer2_isotropic)
    report.show(f"{key}-table", report.table(rows))
    cfgs = [r.config for r in results.values()]
    found = [DECIDED_ELSEWHERE[c.norm, c.gamma] for c in cfgs if layer2_isotropic(c, 2)]
    page, _, claim, estimator = found[0] if found else (None,) * 4
    decided = f"{{doc}}`{page}` tests layer 2 at α = 0 with {estimator}, an estimator built for it"
    note = elsewhere_note(rows, cfgs[0].samples, f"{decided} (its verdict on {claim}).")
    report.glue_numbers({f"{key}-note": report.Markdown(note)})


def figure34_numbers(*, d, fig3, fig4, gamma4, layers, n, samples, v5, verdicts) -> dict[str, str]:
    """Appendix B's Figures 3 and 4: the setting, the estimator, the data and the verdicts."""
    out = {
        "ab-n": count(n),
        "ab-d": count(d),
        "ab-samples": count(samples),
        "ab-layers": count(layers),
        "ab-gamma": f"{gamma4:g}",
        "ab-estimator": statistics.estimator_name(),
        "ab-level": report.percent(conventions.FAMILYWISE_LEVEL),
    }
    for k, results, verdict in (("3", fig3, verdicts[0]), ("4", fig4, verdicts[1])):
        key, labels = f"ab-f{k}", [conventions.alpha_label(a) for a in results]
        data = report.result_columns(list(results.values()), labels)
        out[f"ab-fig{k}-data"] = report.download(f"figure-{k}", data)
        first, last = next(iter(results)), list(results)[-1]
        tally = statistics.definition1_tally(results.values())
        layer1_z = max(abs(statistics.rp_z(r, 1)) for r in results.values())
        out |= {
            f"{key}-a-first": f"{first:g}",
            f"{key}-a-last": f"{last:g}",
            f"{key}-rpL-first": pm(*statistics.rp(results[first], layers)),
            f"{key}-rpL-last": pm(*statistics.rp(results[last], layers)),
            f"{key}-l1z": report.num(layer1_z, 2),
            f"{key}-holds": count(tally["holds"]),
            f"{key}-violated": count(tally["violated"]),
            f"{key}-matrices": count(tally["matrices"]),
            f"{key}-z": report.num(verdict.numbers["z_threshold"], 3),
        }
        for k, word in enumerate(feature_words(verdict).values()):
            out[f"{key}-feature{k}"] = word
    for key, verdict in (("ab-v3", verdicts[0]), ("ab-v4", verdicts[1]), ("ab-v5", v5[gamma4])):
        out[key] = verdict.word
        out[f"{key}-value"] = verdict.value
        out[f"{key}-measure"] = report.Markdown(verdict.measure)
    both = [a for a in fig4 if a in fig3]
    costs = [statistics.rp_gap(fig3[a], fig4[a], layers) for a in both]  # without − with
    out["ab-cost-values"] = listing([pm(*c) for c in costs], fmt=str)
    out["ab-cost-alphas"] = listing(both)
    return out


def figure5_numbers(*, curves, forms, gamma4, v5) -> dict[str, str]:
    """Appendix B's Figure 5: the closed forms against simulation at the settings of ``forms`` (the
    grid's alphas at the residual weight ``gamma4``), and the verdict's numbers. The prose quotes
    one alpha: the least above 0, else the least."""
    alphas = sorted({row.setting.alpha for row in forms.rows if row.setting.gamma == gamma4})
    quote = next((a for a in alphas if a > 0), alphas[0])
    setting = closedforms.Setting("layernorm", quote, gamma4)
    level_off, level_z = closedforms.row_offsets(forms.row("fig5-corrected", "level", setting))
    h_table = v5[gamma4].numbers["table"]
    printed = closedforms.size_ratios(h_table, "printed")
    corrected = closedforms.size_ratios(h_table, "corrected")
    out = {
        "ab-quote": f"{quote:g}",
        "ab-cf-alphas": listing(alphas),
        "ab-cf-ds": listing(forms.ds),
        "ab-corrected-trend": closedforms.trend_words(forms.row("fig5-corrected", "step", setting)),
        "ab-corrected-level-off": report.percent(level_off),
        "ab-corrected-level-z": report.num(level_z, 2),
        "ab-v5-all": by_alpha_text(printed),
        "ab-v5-corrected": by_alpha_text(corrected),
        "ab-v5-corrected-off": report.percent(max(abs(r - 1.0) for r, _ in corrected.values())),
        "ab-v5-printed-rank": ranking_text(misranked(h_table, "printed")),
        "ab-v5-corrected-rank": ranking_text(misranked(h_table, "corrected")),
    }
    for form in ("printed", "corrected"):
        for part in ("level", "step"):
            ratios = closedforms.ratio_texts(forms.row(f"fig5-{form}", part, setting))
            out[f"ab-{form}-{part}"] = listing(ratios, fmt=str)
    out["ab-fig5-data"], out["ab-fig5-ratio-data"] = closedforms.h_downloads(
        "figure-5", curves, forms, "fig5-corrected"
    )
    return out


def runs_numbers(*, by_gamma, runs, samples, settings, workers) -> dict[str, str]:
    """The grid's papermill runs: how many ran or were reused, on how many kernels, the fastest and
    slowest, and the compute 10^7 sequences per setting would take."""
    seconds = sorted(r.seconds for r in runs)
    cpu = sum(r.elapsed_seconds for g in by_gamma.values() for r in g.values())
    cpu_per_sequence = cpu / (len(runs) * samples)
    return {
        "ab-n-settings": count(len(runs)),
        "ab-n-ran": count(sum(r.status == "ran" for r in runs)),
        "ab-n-reused": count(sum(r.status == "reused" for r in runs)),
        "ab-workers": count(min(workers, len(settings))),
        "ab-run-min": report.num(seconds[0], 2),
        "ab-run-max": report.num(seconds[-1], 2),
        "ab-cpu-1e7": report.num(cpu_per_sequence * 10**7 * len(runs) / 60, 2),
        "ab-runs-table": report.table(grid.run_rows(runs)),
    }


# -- the features of the paper's Figures 3-5 ------------------------------------------------------

#: The features of the paper's Figures 3 and 4: a name, the ``Check.kind`` of its checks and the
#: sign it expects (0: no order, +1: above the reference).
FEATURES = (
    ("no order in layer 1", "no order", 0),
    ("recency from layer 2 on", "recency", +1),
    ("weaker with the residual", "residual weakens", +1),
)


def feature_checks(verdict) -> dict[str, list]:
    """feature name -> the checks of a Figure 3 or 4 verdict that test it, in the order of
    :data:`FEATURES` (only the features it has)."""
    out = {name: [c for c in verdict.checks if c.kind == kind] for name, kind, _ in FEATURES}
    return {name: cs for name, cs in out.items() if cs}


def closest_call(feature: str, checks):
    """The check of ``feature`` nearest to a change of its status: the largest |z| for "no order",
    the smallest z for an order the paper expects."""
    expected = {name: sign for name, _, sign in FEATURES}[feature]
    return max(checks, key=lambda c: abs(c.z)) if expected == 0 else min(checks, key=lambda c: c.z)


def feature_words(verdict) -> dict[str, str]:
    """feature -> the verdict word its checks earn on their own (verdicts.verdict_word)."""
    return {f: verdict_word([c.status for c in cs])[0] for f, cs in feature_checks(verdict).items()}


def feature_rows(verdict) -> list[dict]:
    """One table row per feature of a Figure 3 or 4 verdict: how many checks test it, the word they
    earn (a badge) and the closest call."""
    words = feature_words(verdict)
    rows = []
    for f, cs in feature_checks(verdict).items():
        c = closest_call(f, cs)
        call = f"{report.nowrap(c.text)} ({report.nowrap(f'z = {report.z_text(c.z)}')})"
        rows.append(
            {
                "feature": f,
                "checks": count(len(cs)),
                "found": report.badge(words[f]),
                "closest call": f"{call}<br><small>{c.what}</small>",
            }
        )
    return rows


def check_rows(verdict) -> list[dict]:
    """Every check of ``verdict`` as a table row: what, the number, its z, what it found."""
    return [
        {"check": c.what, "number": c.text, "$z$": report.z_text(c.z), "found": c.status}
        for c in verdict.checks
    ]


def by_alpha_text(ratios: dict) -> str:
    """ "2.350 ± 0.008, 1.9822 ± 0.0029 and 1.6144 ± 0.0013 at α = 0.2, 0.4 and 0.6"."""
    values = listing([pm(*ratios[a]) for a in sorted(ratios)], fmt=str)
    return f"{values} at α = {listing(sorted(ratios))}"


def misranked(table: dict, form: str, z: float = 3.0) -> list[tuple[float, float]]:
    """Pairs (a, b), a < b in the simulated rise of h, resolved by more than ``z`` SE, that closed
    form ``form`` ranks the other way (``table``: a Figure 2 or 5 verdict's numbers["table"])."""
    alphas = sorted(table)
    out = []
    for i, a in enumerate(alphas):
        for b in alphas[i + 1 :]:
            (sa, ea), (sb, eb) = table[a]["sim"], table[b]["sim"]
            if abs(sa - sb) <= z * math.hypot(ea, eb):
                continue
            lo, hi = (a, b) if sa < sb else (b, a)
            if table[lo][form] > table[hi][form]:
                out.append((lo, hi))
    return out


def ranking_text(pairs) -> str:
    """ "α = 0.6 below α = 0.8" for :func:`misranked`'s pairs (the form puts b below a)."""
    return listing([f"α = {hi:g} below α = {lo:g}" for lo, hi in pairs], fmt=str, empty="no pair")
