"""The normalizations, each defined once: name, display names, the layer's operation, the closed forms' case.

Every part of the package (and the book) that depends on the normalization reads it from
:data:`NORMS`: the config's allowed values, the layer (:func:`recency_lib.model.layer`), the Gram
engine (centring removes one degree of freedom; the compiled kernel scales or not), the closed forms
(:mod:`recency_lib.theory`: the share of the state's energy the normalization sees), the figures'
names and the explorer. Adding a normalization is one entry here, plus its operation in the compiled
kernel (``_kernel.c``) if it is neither centring nor root-mean-square scaling, plus its closed form in
``theory/corrected.py`` if it has one.

A normalization here is ``x -> P x / sqrt(||P x||^2 / d + eps)`` (no affine parameters), where P is
the centring projection (the feature mean removed) when ``centres`` and the identity otherwise, and
no division at all when not ``scales``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Norm:
    """One normalization of the layer's input (Eq. (2) / (21))."""

    name: str  # the config value: SimConfig(norm=...)
    label: str  # its name in prose and figures
    short: str  # in narrow places (heatmap rows, legends)
    centres: bool  # removes each token's mean over features first (LayerNorm); the Gram engine then
    # has d - 1 degrees of freedom and the closed forms see (d - 1) / d of the energy
    scales: bool  # divides by the root mean square (LayerNorm, RMSNorm); False: the identity
    closed_form: bool  # the corrected closed forms of Appendix A cover it (theory.corrected)

    def sees(self, d):
        """Share rho of a state's squared norm that the normalization sees in expectation: (d - 1) / d
        after centring (E ||P x||^2 = (d - 1) / d E ||x||^2 for isotropic x), else 1."""
        return (d - 1.0) / d if self.centres else 1.0


NORMS: dict[str, Norm] = {
    n.name: n
    for n in (
        Norm("layernorm", "LayerNorm", "LN", centres=True, scales=True, closed_form=True),
        Norm("rms", "RMSNorm", "RMS", centres=False, scales=True, closed_form=True),
        Norm(
            "none", "no normalization", "no norm.", centres=False, scales=False, closed_form=False
        ),
    )
}

#: The config values, in registry order.
NAMES: tuple[str, ...] = tuple(NORMS)
