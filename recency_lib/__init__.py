"""recency_lib: a fast, exact simulator of "LayerNorm Induces Recency Bias in Transformer Decoders".

    from recency_lib import SimConfig, simulate
    res = simulate(SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=64, layers=4))
    res.recency_probability, res.definition1
"""
__version__ = "0.1.0"

from .config import SimConfig  # noqa: E402
from .engines import sample_trajectories, simulate, simulate_many  # noqa: E402
from .result import SimResult  # noqa: E402

__all__ = ["SimConfig", "SimResult", "simulate", "simulate_many", "sample_trajectories", "__version__"]
