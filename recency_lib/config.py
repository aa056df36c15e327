"""SimConfig: one frozen dataclass, every value checked by name when it is made.

Whether a run fits this machine is a property of the run, checked by :func:`recency_lib.simulate`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from .norms import NORMS
from .placements import PLACEMENTS, check_pairing
from .validation import brief, check_bool, check_choice, check_int, check_real

ENGINES = ("auto", "dense", "gram")
WEIGHTS = ("none", "per_sample", "fixed")


@dataclass(frozen=True)
class SimConfig:
    """The paper's simulation (Sec. 3): tokens x_i = eps_i + sqrt(alpha / (1 - alpha)) v (Eq. (6))
    through stacked layers Y = Norm(X), S = causal(Y Y^T / sqrt(d)), X' = softmax(S) Y + gamma X,
    or with the norm placed elsewhere (:mod:`recency_lib.placements`).
    """

    alpha: float = 0.0  # anisotropy, Eq. (6): 0 isotropic, 1 all tokens equal
    gamma: float = 0.0  # residual weight, Eq. (20): 0 none, 1 the standard residual
    norm: str = "layernorm"  # a name of recency_lib.norms.NORMS
    n: int = 10  # tokens
    d: int = 64  # hidden size
    layers: int = 4  # stacked attention layers
    samples: int = 100_000  # Monte-Carlo sequences
    seed: int = 0  # root seed: block k draws from SeedSequence(seed, spawn_key=(k,))
    engine: str = "auto"  # "dense" (n x d), "gram" (exact, cost free of d), "auto"
    eps: float = 1e-12  # added to the mean square in the normalization
    placement: str = "pre"  # where the norm sits, a name of recency_lib.placements.PLACEMENTS
    # beyond the paper (recency_lib.extensions, dense engine only; all off: the paper's model)
    weights: str = "none"  # W_Q, W_K, W_V, W_O: "none" (identity), "per_sample", "fixed"
    weights_seed: int = 0  # seed of fixed weights (and of the FFN's unless per sample)
    heads: int = 1  # attention heads (a divisor of d); scores reported: their mean
    ffn: bool = False  # the feed-forward block of Sec. 2.1 (GELU, width 4d, its own norm)
    rope: bool = False  # rotary position embedding on queries and keys (base 10000)

    def __post_init__(self) -> None:
        # stored as built-in types (numpy scalars become int/float): equal configs hash alike
        def put(name, value):
            object.__setattr__(self, name, value)

        alpha = check_real("alpha", self.alpha, lo=0.0, hi=1.0, allowed="a real number in [0, 1]")
        put("alpha", alpha)
        put("gamma", check_real("gamma", self.gamma, allowed="a finite real number"))
        put("norm", check_choice("norm", self.norm, tuple(NORMS)))
        put("n", check_int("n", self.n, 1))
        put("d", check_int("d", self.d, 2))
        put("layers", check_int("layers", self.layers, 1))
        put("samples", check_int("samples", self.samples, 2))
        put("seed", check_int("seed", self.seed, 0))
        put("engine", check_choice("engine", self.engine, ENGINES))
        put("eps", check_real("eps", self.eps, lo=0.0, allowed="a finite real number >= 0"))
        put("placement", check_choice("placement", self.placement, tuple(PLACEMENTS)))
        put("weights", check_choice("weights", self.weights, WEIGHTS))
        put("weights_seed", check_int("weights_seed", self.weights_seed, 0))
        put("heads", check_int("heads", self.heads, 1))
        put("ffn", check_bool("ffn", self.ffn))
        put("rope", check_bool("rope", self.rope))
        check_pairing(self.placement, self.norm)
        if self.d % self.heads:
            raise ValueError(
                f"heads={brief(self.heads)} is not allowed with d={brief(self.d)}; "
                f"allowed: a divisor of d (d must be divisible by heads)"
            )
        if self.rope and (self.d // self.heads) % 2:
            raise ValueError(
                f"rope=True is not allowed with d={brief(self.d)}, heads={brief(self.heads)} "
                f"(head size {brief(self.d // self.heads)} is odd); allowed: an even d / heads"
            )
        if self.engine == "gram" and self.extended:
            raise ValueError(
                f"engine='gram' is not allowed with extensions on ({', '.join(self.extensions)}); "
                f"allowed: engine='dense' or 'auto' (the Gram symmetry does not hold with weights, "
                f"heads, FFN or RoPE)"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SimConfig:
        """The config of ``to_dict`` output; ValueError for anything but a dict of known fields."""
        if not isinstance(data, dict):
            raise ValueError(
                f"config={brief(data)} is not a dict; allowed: a dict of SimConfig fields"
            )
        known = {f.name for f in fields(cls)}
        unknown = [k for k in data if k not in known]
        if unknown:
            raise ValueError(
                f"SimConfig: unknown field(s) {brief(unknown)}; allowed: {sorted(known)}"
            )
        return cls(**data)

    def replace(self, **changes) -> SimConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    @property
    def extensions(self) -> tuple[str, ...]:
        """Names of the extensions beyond the paper that are on (empty for the paper's model)."""
        on = {
            f"weights={self.weights}": self.weights != "none",
            f"heads={self.heads}": self.heads != 1,
            "ffn": self.ffn,
            "rope": self.rope,
        }
        return tuple(name for name, active in on.items() if active)

    @property
    def extended(self) -> bool:
        """True when any extension beyond the paper is on (then only the dense engine applies)."""
        return bool(self.extensions)

    @property
    def c(self) -> float:
        """Scale of the shared vector in Eq. (6): sqrt(alpha / (1 - alpha)); inf at alpha = 1."""
        return math.inf if self.alpha == 1.0 else math.sqrt(self.alpha / (1.0 - self.alpha))
