"""The settings the paper's claims are checked in, each written once: the chapters and the landing page
call these factories, so they run the same settings and share their cached results.

:func:`fig1_configs` (the paper's Figure 1), :func:`theorem1_configs`, :func:`isotropic_configs` and
:func:`prop1_configs` (chapter 3's large two-layer runs), :func:`alpha_configs` (Proposition 3, Figures
2-5), :func:`relative_config` (chapter 7) and :func:`study_configs`, every setting behind the landing
page's table.
"""

from __future__ import annotations

from recency_lib.config import SimConfig
from recency_lib.validation import check_int

from . import conventions as cv

#: Hidden sizes of the Theorem-1 check: where the control-variate trend settles the sign (d <= 64)
#: and where it stops deciding (128, 256).
THEOREM1_DS = (4, 8, 16, 32, 64, 128, 256)

#: The paper's hidden size gets this many times the samples: its trend, about 2e-6, has a
#: control-variate SE of about 4.6e-4 / sqrt(sequences), so 40 x 100,000 sequences put it about 8
#: SE from 0 (z >= 5 with probability > 99 %).
LARGE_FACTOR = 40

#: Theorem 1's d = 16 gets this many times the samples: with 10^6 sequences every adjacent step of S^(2)
#: is resolved there (the smallest at z ~ 9), so Definition 1 itself is decided at one d.
D16_FACTOR = 10

#: The hidden sizes of Theorem 1's verdict (the paper's first) and of Eq. (5)'s.
THEOREM1_VERDICT_DS = (64, 16)
EQ5_DS = (64, 16, 32)

#: Hidden sizes of the first-order control variate (companion.estimators.first_order_steps): Theorem 1's
#: verdict at d = 64 and 16, Eq. (5)'s and the corrected form's at 64, 16 and 32, its reach at 128; and
#: its sample factor (at d = 64 every step between earlier keys is then resolved at z > 30).
FIRST_ORDER_DS = (16, 32, 64, 128)
FIRST_ORDER_FACTOR = 4

#: Hidden sizes of Proposition 1 beyond the LLN (its row rises at relative order d^{-3/2}), and
#: their sample factor (the rise at d = 64 is about 4 SE at 200,000 sequences).
PROP1_DS = (16, 64, 256)
PROP1_FACTOR = 10

#: Anisotropy levels of the Proposition-3 check (the book's grid without alpha = 1, where every
#: score ties and no order can exist).
PROP3_ALPHAS = tuple(a for a in cv.ALPHAS if a < 1.0)

#: Anisotropy levels of the paper's Figures 3 (no residual) and 4-5 (with residual).
FIG3_ALPHAS = tuple(a for a in cv.H_ALPHAS if a > 0)
FIG4_ALPHAS = cv.H_ALPHAS


def fig1_configs(
    samples: int = cv.PAPER_SAMPLES,
    seed: int = 0,
    *,
    n: int = cv.PAPER_N,
    d: int = cv.PAPER_D,
    layers: int = cv.PAPER_LAYERS,
    alpha: float = 0.5,
    gamma: float = 1.0,
) -> list[SimConfig]:
    """The four models of the paper's Figure 1, one per row, in the paper's order: no normalization,
    LayerNorm at alpha = 0, LayerNorm at ``alpha`` and LayerNorm with the residual (weight ``gamma``) at
    ``alpha`` (the paper's 0.5 and 1)."""
    models = [
        ("none", 0.0, 0.0),
        ("layernorm", 0.0, 0.0),
        ("layernorm", alpha, 0.0),
        ("layernorm", alpha, gamma),
    ]
    return [
        SimConfig(alpha=a, gamma=g, norm=norm, n=n, d=d, layers=layers, samples=samples, seed=seed)
        for norm, a, g in models
    ]


def isotropic_configs(
    large_samples: int = LARGE_FACTOR * cv.PAPER_SAMPLES,
    seed: int = 0,
    *,
    n: int = cv.PAPER_N,
    d: int = cv.PAPER_D,
    gamma: float = 1.0,
) -> dict[float, SimConfig]:
    """Isotropic tokens, two layers, LayerNorm, without (gamma = 0: Theorem 1, Proposition 3 at
    alpha = 0) and with the residual (weight ``gamma``, the paper's 1: Proposition 2 at alpha = 0),
    ``large_samples`` each; keyed by gamma. The two share their random stream, so the engines draw each
    block once for both."""
    large_samples = check_int("large_samples", large_samples, 2)
    return {
        g: SimConfig(
            alpha=0.0,
            gamma=g,
            norm="layernorm",
            n=n,
            d=d,
            layers=2,
            seed=seed,
            samples=large_samples,
        )
        for g in (0.0, gamma)
    }


def theorem1_configs(
    samples: int = cv.PAPER_SAMPLES,
    seed: int = 0,
    *,
    ds=THEOREM1_DS,
    n: int = cv.PAPER_N,
    large_d: int = cv.PAPER_D,
    large_samples: int | None = None,
) -> dict[int, SimConfig]:
    """Theorem 1's setting (LayerNorm, alpha = 0, no residual, two layers) for each hidden size in
    ``ds``, ``samples`` each (d = 16: :data:`D16_FACTOR` times as many); ``large_d`` (the paper's 64)
    gets ``large_samples`` (default :data:`LARGE_FACTOR` x ``samples``) and is :func:`isotropic_configs`'
    gamma = 0 setting."""
    samples = check_int("samples", samples, 2)
    large = (
        LARGE_FACTOR * samples
        if large_samples is None
        else check_int("large_samples", large_samples, 2)
    )
    out = {}
    for d in sorted({check_int("d", x, 2) for x in ds}):
        count = D16_FACTOR * samples if d == 16 else samples
        out[d] = (
            isotropic_configs(large, seed, n=n, d=d)[0.0]
            if d == large_d
            else SimConfig(
                alpha=0.0, gamma=0.0, norm="layernorm", n=n, d=d, layers=2, seed=seed, samples=count
            )
        )
    return out


def first_order_configs(
    samples: int = cv.PAPER_SAMPLES,
    seed: int = 0,
    *,
    ds=FIRST_ORDER_DS,
    n: int = cv.PAPER_N,
    gamma: float = 0.0,
    first_order_samples: int | None = None,
) -> dict[int, SimConfig]:
    """Theorem 1's setting (LayerNorm, alpha = 0, two layers; with the residual weight ``gamma``: Proposition
    2's) for each hidden size in ``ds``, ``first_order_samples`` each (default :data:`FIRST_ORDER_FACTOR` x
    ``samples``): the runs of the first-order control variate (companion.estimators.first_order)."""
    samples = check_int("samples", samples, 2)
    count = (
        FIRST_ORDER_FACTOR * samples
        if first_order_samples is None
        else check_int("first_order_samples", first_order_samples, 2)
    )
    return {
        d: SimConfig(
            alpha=0.0, gamma=gamma, norm="layernorm", n=n, d=d, layers=2, seed=seed, samples=count
        )
        for d in sorted({check_int("d", x, 2) for x in ds})
    }


def prop1_configs(
    samples: int = cv.PAPER_SAMPLES,
    seed: int = 0,
    *,
    ds=PROP1_DS,
    n: int = cv.PAPER_N,
    prop1_samples: int | None = None,
) -> dict[int, SimConfig]:
    """Proposition 1 beyond the LLN: no normalization, isotropic tokens, two layers, for each hidden
    size in ``ds``, ``prop1_samples`` each (default :data:`PROP1_FACTOR` x ``samples``)."""
    samples = check_int("samples", samples, 2)
    count = (
        PROP1_FACTOR * samples
        if prop1_samples is None
        else check_int("prop1_samples", prop1_samples, 2)
    )
    return {
        d: SimConfig(
            alpha=0.0, gamma=0.0, norm="none", n=n, d=d, layers=2, seed=seed, samples=count
        )
        for d in sorted({check_int("d", x, 2) for x in ds})
    }


def alpha_configs(
    alphas,
    gamma: float,
    samples: int = cv.PAPER_SAMPLES,
    seed: int = 0,
    *,
    n: int = cv.PAPER_N,
    d: int = cv.PAPER_D,
    layers: int = cv.PAPER_LAYERS,
    norm: str = "layernorm",
) -> dict[float, SimConfig]:
    """One setting per anisotropy level (Proposition 3, Figures 2-5), in the paper's setting."""
    return {
        float(a): SimConfig(
            alpha=a, gamma=gamma, norm=norm, n=n, d=d, layers=layers, samples=samples, seed=seed
        )
        for a in alphas
    }


def relative_config(
    samples: int = cv.PAPER_SAMPLES,
    seed: int = 0,
    *,
    n: int = cv.PAPER_N,
    d: int = cv.PAPER_D,
    layers: int = cv.PAPER_LAYERS,
    alpha: float = 0.5,
    gamma: float = 0.0,
) -> SimConfig:
    """The setting of chapter 7's position-or-distance check: Figure 1's showcase (LayerNorm, alpha = 0.5)."""
    return SimConfig(
        alpha=alpha,
        gamma=gamma,
        norm="layernorm",
        n=n,
        d=d,
        layers=layers,
        samples=samples,
        seed=seed,
    )


def study_configs(samples: int = cv.PAPER_SAMPLES, seed: int = 0) -> dict[str, object]:
    """Every setting behind the landing table, the chapters' own: "fig1" (list of 4), "theorem1" (d ->
    cfg), "alpha0" / "alpha1" (alpha -> cfg, without / with residual), "isotropic" (gamma -> cfg: the
    large alpha = 0 runs at the paper's d), "first_order" and "first_order_residual" (d -> cfg: the
    first-order control variate without and with the residual), "prop1" (d -> cfg: no normalization,
    with the Gram controls) and "relative" (the sequence statistic of chapter 7)."""
    grid0 = sorted(set(PROP3_ALPHAS) | set(cv.H_ALPHAS))
    return {
        "fig1": fig1_configs(samples, seed),
        "theorem1": theorem1_configs(samples, seed),
        "first_order": first_order_configs(samples, seed),
        "first_order_residual": first_order_configs(samples, seed, ds=(cv.PAPER_D,), gamma=1.0),
        "alpha0": alpha_configs(grid0, 0.0, samples, seed),
        "alpha1": alpha_configs(FIG4_ALPHAS, 1.0, samples, seed),
        "isotropic": isotropic_configs(LARGE_FACTOR * samples, seed),
        "prop1": prop1_configs(samples, seed),
        "relative": relative_config(samples, seed),
    }
