"""recency_lib: a fast, exact simulator of "LayerNorm Induces Recency Bias in Transformer Decoders".

    from recency_lib import SimConfig, simulate
    res = simulate(SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=64, layers=4))
    res.recency_probability, res.definition1

The paper's equations in the code:

=========================  ==================================================================
paper                      code
=========================  ==================================================================
Eqs. (1)-(2), (20)-(21)    one layer: ``model.layer`` (numpy); its compiled twin ``kernels.gram_block``
Eq. (3)                    causal row softmax: ``model.causal_softmax``
Eq. (6)                    tokens: ``sampling.dense_tokens``; in Gram space ``sampling.gram_draws``
                           (random numbers: ``streams``) and ``sampling.gram_assemble``
normalizations             ``norms.NORMS`` (LayerNorm, RMSNorm = Eq. (21), none)
Definition 1               adjacent steps ``features.adjacent_differences``; the one decision rule
                           ``metrics.definition1`` (family-wise, float64's resolution), ``SimResult.decision``
recency probability        share of pairs j < k < i with S_ik > S_ij, ties 1/2:
                           ``features.recency_fraction``; compiled ``kernels.count_pairs``
Eqs. (5), (11)             Theorem 1's score: ``theory.theorem1_score``
Eqs. (14)-(19)             Proposition 1: printed ``theory.prop1_attention``, ``theory.prop1_score``;
                           corrected ``theory.prop1_attention_corrected``, ``theory.prop1_score_corrected``
Eqs. (22)-(36)             token norms: printed ``theory.sq_norm_eq36``; corrected
                           ``theory.sq_norm_corrected``, ``theory.residual_coefficient``; exact at
                           j = 1 ``theory.sq_norm_first_token_exact``
Eqs. (28)-(32), (40)       S = g(i) h(j): ``theory.score2_corrected``, ``theory.score2_step_corrected``
Eq. (41), Figs. 2 and 5    h(j): printed ``theory.h_eq41``; corrected ``theory.h_corrected``
the LLN behind them        any layer, norm, alpha, gamma: ``theory.lln_limit``
what the LLN drops         ``theory.drop_ratio_first_order``, ``theory.drop_ratio_gaussian``
control variates           ``stats.control_variate``; ``SimResult.trend_cv_mean`` and the ``*_cv_*`` fields
=========================  ==================================================================
"""

from .version import __version__

__all__ = [
    "SimConfig",
    "SimResult",
    "__version__",
    "sample_trajectories",
    "simulate",
    "simulate_many",
]
_HOMES = {
    "SimConfig": "config",
    "SimResult": "result",
    "simulate": "engines",
    "simulate_many": "engines",
    "sample_trajectories": "trajectories",
}


def __getattr__(name: str):
    """The public names, imported on first use: ``python -m recency_lib`` reports a problem of numpy's
    import (a bad NUMPY_* variable) in one line."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
