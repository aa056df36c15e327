"""Chapter 2 (``book/preliminaries.ipynb``): its numbers and table rows."""

from statistics import NormalDist

import numpy as np

from recency_lib import theory

from .. import conventions, landing, report, statistics
from ..report import count, num, pm, z_text


def engine_numbers(*, agree, dense, engines, gram) -> dict[str, str]:
    """The engine check: the two engines' agreement (``agree``) and the exact equalities."""
    found = agree.numbers
    exact = landing.exact_entries(dense, gram)  # diagonal scores, A_11 = 1
    score_se = (landing.typical_score_se(dense, 2), landing.typical_score_se(gram, 2))
    return {
        "prelim-engine-samples": count(engines[0].samples),
        "prelim-level": report.percent(conventions.FAMILYWISE_LEVEL),
        "prelim-engine-count": count(found["count"]),
        "prelim-engine-maxz": num(found["max_abs_z"], 2),
        "prelim-engine-zc": num(found["z_threshold"], 3),
        "prelim-engine-verdict": agree.word,
        "prelim-engine-exact": count(found["exact_count"]),
        "prelim-engine-exact-scores": count(exact["score"]),
        "prelim-engine-exact-attn": count(exact["attention"]),
        "prelim-engine-gap": num(found["exact_gap"], 2),
        "prelim-engine-se": num(max(score_se), 1),
        "prelim-engine-reach": num(found["z_threshold"] * float(np.hypot(*score_se)), 1),
        "prelim-thm1-form": num(theory.theorem1_trend(conventions.PAPER_D, conventions.PAPER_N), 2),
    }


def definition1_numbers(*, aniso, d, iso, n, none, orders, panels, samples, single) -> dict:
    """Definition 1: the setting, the z of the tests and the least resolved steps."""
    labels = [conventions.setting_label(r.config) for r in (aniso, none)]
    step = statistics.smallest_step(aniso, 2)  # control variates, as the verdict
    plain = statistics.smallest_step(aniso, 2, "plain")
    z1 = statistics.step_z(iso, 1)
    data = report.result_columns([aniso, none], labels)
    return {
        "prelim-samples": count(samples),
        "prelim-n": count(n),
        "prelim-d": count(d),
        "prelim-m": count(conventions.adjacent_pairs(n)),
        "prelim-zc": num(conventions.definition1_z(n), 3),
        "prelim-iut-z": num(NormalDist().inv_cdf(1 - conventions.FAMILYWISE_LEVEL), 3),
        "prelim-def1-data": report.download("definition-1", data),
        "prelim-def1-min-ln5": pm(step.mean, step.se),
        "prelim-def1-minz-ln5": z_text(step.z),
        "prelim-def1-min-i": count(step.i),
        "prelim-def1-min-j": count(step.j),
        "prelim-def1-min-plain": pm(plain.mean, plain.se),
        "prelim-def1-minz-plain": z_text(plain.z),
        "prelim-def1-ln5": statistics.definition1(aniso, 2),
        "prelim-def1-l1": statistics.definition1(aniso, 1),
        "prelim-def1-none": statistics.definition1(none, panels[2][1]),
        "prelim-pairing": num(statistics.pairing_gain(aniso, 2), 2),
        "prelim-cv-gain": num(statistics.cv_gain(aniso, 2), 2),
        "prelim-cv-gap": num(statistics.estimator_gap(aniso, 2), 2),
        "prelim-l1-minz": z_text(z1.min()),
        "prelim-l1-maxz": z_text(z1.max()),
        "prelim-l1-verdict": statistics.definition1(iso, 1),
        "prelim-single-samples": count(single.samples),
        "prelim-single-count": count(orders[1].count),
        "prelim-single-count-l1": count(orders[0].count),
    }


def engine_rows(*, dense, gram, n) -> list[dict]:
    """The two engines side by side: the last row of S^(2), the RP of layers 1-3, their z."""
    pairs = {}
    for j in range(1, n + 1):  # the last row of S^(2), 1-based key j
        a, b = ((r.score_mean[1, -1, j - 1], r.score_sem[1, -1, j - 1]) for r in (dense, gram))
        pairs[report.score_label(2, n, j)] = (a, b, report.is_exact(*a) and report.is_exact(*b))
    for l in range(1, 4):
        a, b = (statistics.rp(r, l) for r in (dense, gram))
        pairs[f"RP of {report.score_label(l)}"] = (a, b, False)
    return [
        {
            "quantity": q,
            "dense": pm(*a),
            "Gram": pm(*b),
            "z": "—" if exact else z_text(report.zdiff(*a, *b)),
        }
        for q, (a, b, exact) in pairs.items()
    ]


def definition1_rows(configs, results) -> list[dict]:
    """Definition 1's verdict for every layer of each setting."""
    return [
        {
            "setting": conventions.setting_label(c),
            **{f"layer {l}": statistics.definition1(r, l) for l in range(1, c.layers + 1)},
        }
        for c, r in zip(configs, results)
    ]
