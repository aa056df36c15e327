"""Chapter 2 (``book/preliminaries.ipynb``): its numbers and table rows."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from recency_lib import theory

from .. import conventions, landing, report, statistics


def engine_numbers(*, agree, dense, engines, gram) -> dict[str, str]:
    """Chapter 2's engine check: the dense and Gram engines' agreement (count, largest z, family-wise z,
    verdict) and the exact equalities."""
    out = {}
    out["prelim-engine-samples"] = report.count(engines[0].samples)
    out["prelim-level"] = report.percent(conventions.FAMILYWISE_LEVEL)
    out["prelim-engine-count"] = report.count(agree.numbers["count"])
    out["prelim-engine-maxz"] = report.num(agree.numbers["max_abs_z"], 2)
    out["prelim-engine-zc"] = report.num(agree.numbers["z_threshold"], 3)
    out["prelim-engine-verdict"] = agree.word
    out["prelim-engine-exact"] = report.count(agree.numbers["exact_count"])
    exact = landing.exact_entries(dense, gram)  # diagonal scores, A_11 = 1
    out["prelim-engine-exact-scores"] = report.count(exact["score"])
    out["prelim-engine-exact-attn"] = report.count(exact["attention"])
    out["prelim-engine-gap"] = report.num(agree.numbers["exact_gap"], 2)
    score_se = (landing.typical_score_se(dense, 2), landing.typical_score_se(gram, 2))
    out["prelim-engine-se"] = report.num(max(score_se), 1)
    out["prelim-engine-reach"] = report.num(
        agree.numbers["z_threshold"] * float(np.hypot(*score_se)), 1
    )
    out["prelim-thm1-form"] = report.num(
        theory.theorem1_trend(conventions.PAPER_D, conventions.PAPER_N), 2
    )
    return out


def definition1_numbers(
    *, aniso, d, iso, n, none, orders, panels, samples, single
) -> dict[str, str]:
    """Chapter 2's Definition-1 section: the setting, the family-wise z, the intersection-union test and the
    smallest steps per model."""
    out = {}
    out["prelim-samples"] = report.count(samples)
    out["prelim-n"] = report.count(n)
    out["prelim-d"] = report.count(d)
    out["prelim-m"] = report.count(conventions.adjacent_pairs(n))
    out["prelim-zc"] = report.num(conventions.definition1_z(n), 3)
    out["prelim-iut-z"] = report.num(NormalDist().inv_cdf(1 - conventions.FAMILYWISE_LEVEL), 3)
    out["prelim-def1-data"] = report.download(
        "definition-1",
        report.result_columns(
            [aniso, none],
            [conventions.setting_label(aniso.config), conventions.setting_label(none.config)],
        ),
    )
    step = statistics.smallest_step(aniso, 2)  # control variates, as the verdict
    out["prelim-def1-min-ln5"] = report.pm(step.mean, step.se)
    out["prelim-def1-minz-ln5"] = report.z_text(step.z)
    out["prelim-def1-min-i"] = report.count(step.i)
    out["prelim-def1-min-j"] = report.count(step.j)
    plain = statistics.smallest_step(aniso, 2, "plain")
    out["prelim-def1-min-plain"] = report.pm(plain.mean, plain.se)
    out["prelim-def1-minz-plain"] = report.z_text(plain.z)
    out["prelim-def1-ln5"] = statistics.definition1(aniso, 2)
    out["prelim-def1-l1"] = statistics.definition1(aniso, 1)
    out["prelim-def1-none"] = statistics.definition1(none, panels[2][1])
    out["prelim-pairing"] = report.num(statistics.pairing_gain(aniso, 2), 2)
    out["prelim-cv-gain"] = report.num(statistics.cv_gain(aniso, 2), 2)
    out["prelim-cv-gap"] = report.num(statistics.estimator_gap(aniso, 2), 2)
    z1 = statistics.step_z(iso, 1)
    out["prelim-l1-minz"] = report.z_text(z1.min())
    out["prelim-l1-maxz"] = report.z_text(z1.max())
    out["prelim-l1-verdict"] = statistics.definition1(iso, 1)
    out["prelim-single-samples"] = report.count(single.samples)
    out["prelim-single-count"] = report.count(orders[1].count)
    out["prelim-single-count-l1"] = report.count(orders[0].count)
    return out


# -- the rows of the page's tables -------------------------------------------------------------------


def engine_rows(*, dense, gram, n) -> list[dict]:
    """The dense and Gram engines side by side: the last row of S^(2) key by key and the recency
    probability of layers 1-3, each with the z of their difference ("—" where both are exact)."""
    rows = []
    for j in range(1, n + 1):  # the last row of S^(2), 1-based key j
        a, sa = dense.score_mean[1, n - 1, j - 1], dense.score_sem[1, n - 1, j - 1]
        b, sb = gram.score_mean[1, n - 1, j - 1], gram.score_sem[1, n - 1, j - 1]
        noisy = not (report.is_exact(a, sa) and report.is_exact(b, sb))
        rows.append(
            {
                "quantity": report.score_label(2, n, j),
                "dense": report.pm(a, sa),
                "Gram": report.pm(b, sb),
                "z": report.z_text(report.zdiff(a, sa, b, sb)) if noisy else "—",
            }
        )
    for l in range(1, 4):
        a, b = statistics.rp(dense, l), statistics.rp(gram, l)
        rows.append(
            {
                "quantity": f"RP of {report.score_label(l)}",
                "dense": report.pm(*a),
                "Gram": report.pm(*b),
                "z": report.z_text(report.zdiff(*a, *b)),
            }
        )
    return rows


def definition1_rows(configs, results) -> list[dict]:
    """Definition 1's verdict for every layer of each setting."""
    return [
        {
            "setting": conventions.setting_label(c),
            **{f"layer {l}": statistics.definition1(r, l) for l in range(1, c.layers + 1)},
        }
        for c, r in zip(configs, results)
    ]
