"""The normalizations, each defined once: what it does to a token, and its names.

A normalization maps a token x (the layer's input, Eq. (2) / (21)) to

    y = gain(d) * P x / sqrt(||P x||^2 / d + eps)

with P the centring projection when ``centres`` (else the identity), no division when not
``scales``. Everything else reads :data:`NORMS`: the config, both engines and the kernel, the closed
forms, the size of the scores, the names in figures and every list of choices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Norm:
    name: str  # the config value: SimConfig(norm=...)
    label: str  # its name in prose and figures
    short: str  # in narrow places (heatmap rows, legends)
    centres: bool  # removes each token's mean over features first (LayerNorm)
    scales: bool  # divides by the root mean square (LayerNorm, RMSNorm)
    scale_to: float | None = None  # the norm ||y|| it scales to; None: sqrt(d)
    closed_form: bool = False  # the corrected closed forms of Appendix A cover it (theory)

    def gain(self, d: float) -> float:
        """The factor after the division by the root mean square: 1 unless ``scale_to``."""
        return 1.0 if self.scale_to is None else self.scale_to / math.sqrt(d)

    def sq_norm(self, d: float) -> float:
        """||y||^2 of a normalized token (eps aside): gain^2 d."""
        return self.gain(d) ** 2 * d

    def score_scale(self, d: float) -> float:
        """The size of the diagonal scores ||y||^2 / sqrt(d); 1 without a normalization."""
        return self.sq_norm(d) / math.sqrt(d) if self.scales else 1.0

    def sees(self, d: float) -> float:
        """The share of an isotropic state's squared norm it sees: (d - 1) / d after centring."""
        return (d - 1.0) / d if self.centres else 1.0

    def dof(self, d: int) -> int:
        """Dimension of the space it sees: d - 1 after centring (the Gram engine's Wishart)."""
        return d - 1 if self.centres else d


NORMS: dict[str, Norm] = {
    n.name: n
    for n in (
        Norm("layernorm", "LayerNorm", "LN", centres=True, scales=True, closed_form=True),
        Norm("rms", "RMSNorm", "RMS", centres=False, scales=True, closed_form=True),
        Norm("none", "no normalization", "no norm.", centres=False, scales=False),
    )
}

#: The config values, in registry order.
NAMES: tuple[str, ...] = tuple(NORMS)
