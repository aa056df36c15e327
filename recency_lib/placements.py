"""Where a layer puts its normalization, each placement defined once.

In the paper's weightless layer the queries, keys and values are one matrix. A placement says
whether the scores and the values read Norm(X) or the raw state X, and whether a norm follows the
attention's output ("sublayer": X' = gamma X + Norm(A V)) or the residual sum ("sum": X' =
Norm(A V + gamma X)); with neither, X' = A V + gamma X. Everything else reads :data:`PLACEMENTS`:
the config, both engines and the kernel, the CLI and the book.

Qwen3's QK-norm on a pre-norm layer normalizes an already normalized token again: Norm(Norm(X)) =
Norm(X) (eps aside), so in this model it is ``pre`` and has no entry of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from .norms import NORMS

OUTPUTS = ("none", "sublayer", "sum")  # no output norm, Norm(A V), Norm(A V + gamma X)


@dataclass(frozen=True)
class Placement:
    name: str  # the config value: SimConfig(placement=...)
    label: str  # its name in prose and figures
    models: str  # decoders that use it
    norm_scores: bool  # scores from Norm(X) (else from X)
    norm_values: bool  # values Norm(X) (else X)
    output: str  # one of OUTPUTS


PLACEMENTS: dict[str, Placement] = {
    p.name: p
    for p in (
        Placement("pre", "pre-norm", "GPT-2, Llama, Mistral (the paper's)", True, True, "none"),
        Placement("post", "post-norm", "the original Transformer", False, False, "sum"),
        Placement("sandwich", "sandwich", "Gemma 2 (Peri-LN)", True, True, "sublayer"),
        Placement("output", "output norm", "OLMo 2 without its QK-norm", False, False, "sublayer"),
        Placement("qk", "QK-norm", "none named here: the score path alone", True, False, "none"),
        Placement("qk_output", "QK-norm + output norm", "OLMo 2", True, False, "sublayer"),
    )
}

#: The config values, in registry order.
NAMES: tuple[str, ...] = tuple(PLACEMENTS)


def mean_column(cfg) -> bool:
    """Whether the Gram engine keeps the tokens' feature means (:mod:`recency_lib.sampling`) for
    the config ``cfg``: a centring norm whose placement lets the raw state into the scores."""
    return NORMS[cfg.norm].centres and not PLACEMENTS[cfg.placement].norm_scores


def check_pairing(placement: str, norm: str) -> None:
    """ValueError where ``placement`` moves a norm that is not there: without a normalization every
    placement is the same layer (the paper's pre-norm)."""
    if placement != "pre" and not NORMS[norm].scales:
        raise ValueError(
            f"placement={placement!r} is not allowed with norm={norm!r} (without a normalization "
            "every placement is the same layer); allowed: 'pre'"
        )
