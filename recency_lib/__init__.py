"""recency_lib: a fast, exact simulator of "LayerNorm Induces Recency Bias in Transformer Decoders".

    from recency_lib import SimConfig, simulate
    res = simulate(SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=64, layers=4))
    res.recency_probability, res.definition1

The paper's equations in the code:

=======================  ===================================================================
Eqs. (1)-(2), (20)-(21)  one layer ``model.layer``; in Gram space ``engines.gram_features``, and
                         its compiled twin ``kernels.gram_block`` (``_kernel.c``)
Eq. (3)                  causal row softmax ``model.causal_softmax``
Eq. (6)                  tokens ``sampling.dense_tokens``; in Gram space ``sampling.gram_draws``
                         (``streams``) and ``sampling.gram_assemble``
normalizations           ``norms.NORMS`` (LayerNorm, RMSNorm = Eq. (21), none)
where the norm sits      ``placements.PLACEMENTS`` (the paper's pre-norm; post, sandwich, output
                         norm, QK-norm: beyond the paper, on both engines)
Definition 1             the adjacent steps ``features.adjacent_differences``; the one rule
                         ``metrics.definition1``, ``SimResult.decision``
recency probability      ``features.recency_fraction`` (ties 1/2); compiled ``kernels.count_pairs``
Eqs. (5), (11)           ``theory.theorem1_score``; beyond the LLN ``theory.theorem1_trend``
Eqs. (14)-(19)           ``theory.prop1_attention``, ``theory.prop1_score`` and ``*_corrected``
Eqs. (22)-(36), (40)     ``theory.sq_norm_eq36``, ``theory.sq_norm_corrected``, ``theory.score2_*``
Eq. (41), Figs. 2, 5     h(j): ``theory.h_eq41``, ``theory.h_corrected``
the LLN behind them      ``theory.lln_limit``; what it drops: ``theory.drop_ratio_*``
control variates         ``stats.control_variate``; the ``*_cv_*`` fields of ``SimResult``
=======================  ===================================================================
"""

from .version import __version__

_HOMES = {
    "SimConfig": "config",
    "SimResult": "result",
    "simulate": "engines",
    "simulate_many": "engines",
    "sample_trajectories": "trajectories",
}
__all__ = [*_HOMES, "__version__"]


def __getattr__(name: str):
    """The public names, imported on first use (the CLI then reports numpy's import errors)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
