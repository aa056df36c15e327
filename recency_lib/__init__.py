"""recency_lib: a fast, exact simulator of "LayerNorm Induces Recency Bias in Transformer Decoders".

    from recency_lib import SimConfig, simulate
    res = simulate(SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=64, layers=4))
    res.recency_probability, res.definition1
"""
from .config import SimConfig
from .engines import sample_trajectories, simulate, simulate_many
from .result import SimResult
from .version import __version__

__all__ = ["SimConfig", "SimResult", "simulate", "simulate_many", "sample_trajectories", "__version__"]
