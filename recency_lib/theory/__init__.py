"""Closed forms of the paper's Appendix A (equation numbers are the paper's; i, j 1-based).

* :mod:`.printed`: the formulas as printed (``theorem1_score``, ``prop1_*``, ``sq_norm_eq36``, ...);
* :mod:`.corrected`: the same, derived again under the paper's law-of-large-numbers (LLN)
  assumptions with its slips in scale fixed (``*_corrected``, ``score2_*``);
* :mod:`.limits`: :func:`lln_limit`, the LLN recursion for any layer, norm, alpha and gamma;
* :mod:`.finite_d`: exact finite-d results and the size of what the LLN drops;
* :mod:`.trends`: the mean step of S^(2) beyond the LLN (the corrected Theorem 1, Proposition 1).

The LLN replaces every inner product by its limit; an off-diagonal score keeps a fluctuation of
order 1 that does not vanish as d grows, so these forms are the leading-order skeleton of the
simulation, not its exact mean. Every function broadcasts and stays finite for large d (the
exponentials are factored out: t = e^{-(1 - alpha) sqrt(d)}).
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
