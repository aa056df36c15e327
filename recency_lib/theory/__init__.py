"""Closed forms of the paper's Appendix A: as printed, as corrected, the LLN limit, and exact finite-d results.

Paper: "LayerNorm Induces Recency Bias in Transformer Decoders" (Kim et al.). Equation numbers
below are the paper's. Indices i (query) and j (key) are 1-based, as in the paper.

The model (Eqs. (1)-(2), (6), (20)-(21)): tokens x_i = eps_i + c v with eps_i, v ~ N(0, I_d / d)
and c^2 = alpha / (1 - alpha); one layer is

    Y = Norm(X);  S = Causal(Y Y^T / sqrt(d));  A = Softmax(S) row-wise;  X' = A Y + gamma X.

The paper's proofs replace every inner product by its law-of-large-numbers (LLN) value. Done
consistently this gives, for the input Gram matrix, <x_i, x_j> -> delta_ij + c^2, so
||x_i||^2 -> 1 / (1 - alpha) and, after normalization to squared norm d,
<y_i, y_i> = d and <y_i, y_j> = d alpha (i != j).

Four modules, one kind of statement each (every public name is importable from here):

* :mod:`.printed`: the printed formulas, unchanged (``theorem1_score``, ``prop1_*``,
  ``sq_norm_eq36``, ``h_eq41``).
* :mod:`.corrected`: the same quantities derived carefully under the same LLN assumptions
  (``*_corrected``, ``score2_corrected``, ``score2_step_corrected``, ``residual_coefficient``).
  They differ from the printed ones where the paper slips in scale: Eq. (14) (<x_i, x_i> is 1,
  not sqrt(d)) and Eqs. (25)/(26)/(33) (the residual adds gamma x_j^(0) =
  gamma ||x_j^(0)|| y_j / sqrt(d), not gamma y_j).
* :mod:`.limits`: :func:`lln_limit`, the LLN recursion itself, any number of layers, any norm,
  alpha, gamma. It is the reference the closed forms are tested against.
* :mod:`.finite_d`: exact finite-d results (no LLN) and the first-order size of what the LLN
  drops (``sq_norm_first_token_exact``, ``drop_ratio_first_order``, ``drop_ratio_gaussian``).
* :mod:`.trends`: the mean step of S^(2) beyond the LLN, with LayerNorm (``theorem1_trend``: the
  corrected Theorem 1, e sqrt(d) e^{-2 sqrt d} to leading order) and without (``proposition1_trend``),
  and the hidden size where the two cross (``crossover_d``).

The book's symbolic (sympy) checks of these forms are in its own package (companion.symbolic).

What the LLN leaves out (true of the printed and the corrected forms alike): an off-diagonal
score <y_i, y_j> / sqrt(d) is sqrt(d) alpha plus a fluctuation of order 1 that does NOT vanish
as d grows (only its size relative to sqrt(d) does). Inside the softmax it multiplies the weight
by a random factor e^Z. So these forms are the leading-order, deterministic skeleton of the
simulation, not its exact mean at finite d.

Numerics: wherever e^{sqrt(d)} appears we factor it out and work with
t = e^{-(1 - alpha) sqrt(d)} in (0, 1] and r_j = 1 / (1 + (j - 1) t) in (0, 1] (log-space in
effect: the huge exponential is never formed). Every function is finite for d up to 1e6 and
beyond; values whose true size is below ~1e-308 underflow to 0, which is their correct
rounding. All functions broadcast over their array arguments (numpy rules).
"""

from .corrected import (
    h_corrected,
    prop1_attention_corrected,
    prop1_score_corrected,
    residual_coefficient,
    score2_corrected,
    score2_step_corrected,
    sq_norm_corrected,
)
from .finite_d import drop_ratio_first_order, drop_ratio_gaussian, sq_norm_first_token_exact
from .limits import lln_limit
from .printed import h_eq41, prop1_attention, prop1_score, sq_norm_eq36, theorem1_score
from .trends import (
    crossover_d,
    proposition1_step,
    proposition1_trend,
    q_factor,
    theorem1_coefficients,
    theorem1_step,
    theorem1_steps,
    theorem1_trend,
)

__all__ = [
    "crossover_d",
    "drop_ratio_first_order",
    "drop_ratio_gaussian",
    "h_corrected",
    "h_eq41",
    "lln_limit",
    "prop1_attention",
    "prop1_attention_corrected",
    "prop1_score",
    "prop1_score_corrected",
    "proposition1_step",
    "proposition1_trend",
    "q_factor",
    "residual_coefficient",
    "score2_corrected",
    "score2_step_corrected",
    "sq_norm_corrected",
    "sq_norm_eq36",
    "sq_norm_first_token_exact",
    "theorem1_coefficients",
    "theorem1_score",
    "theorem1_step",
    "theorem1_steps",
    "theorem1_trend",
]
