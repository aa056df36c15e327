"""Beyond the paper: the full decoder layer of Sec. 2.1, with the parts the paper leaves out.

    Y = Norm(X);  Q, K, V = Y W_Q, Y W_K, Y W_V;  A = Softmax(Causal(Q K^T / sqrt(d)));
    O = (A V) W_O + gamma X;  X' = FFN(Norm(O)) + gamma O

with the norms where ``placement`` puts them (:mod:`recency_lib.placements`; the feed-forward
block takes the values' rule). Each part is a :class:`~recency_lib.config.SimConfig` switch (all
off: the paper's model, which never reaches this module): ``weights`` (W iid N(0, 1/d), fresh per
sample or one draw per run), ``heads`` (scores and attention reported as their mean over heads),
``ffn`` (GELU(Z W_1) W_2, width 4d, its weights per run unless per sample), ``rope`` (base 10000,
pairs (2k, 2k+1) rotated by p 10000^(-2k / d_h)). Their randomness never touches the tokens'
stream: per-sample weights draw from SeedSequence(seed, spawn_key=(block, 1)), fixed ones from
SeedSequence(weights_seed, spawn_key=(2**32 - 1,)).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import kernels
from .config import SimConfig
from .model import causal_softmax, center, normalize
from .norms import NORMS
from .placements import PLACEMENTS

ROPE_BASE = 10000.0


# -- weights -----------------------------------------------------------------------------------


def draw_weights(
    rng: np.random.Generator, lead: tuple, d: int, layers: int, *, attention: bool, ffn: bool
) -> list[dict]:
    """Per layer a dict of weights with leading shape ``lead`` (() = fixed, (batch,) = per sample).

    wq, wk, wv, wo: (*lead, d, d) iid N(0, 1/d) if ``attention`` else None (identity);
    w1: (*lead, d, 4d) iid N(0, 1/d), w2: (*lead, 4d, d) iid N(0, 1/(4d)) if ``ffn`` else None.
    Drawn in this order, layer by layer (this defines the stream).
    """
    out = []
    for _ in range(layers):
        w = {}
        for name in ("wq", "wk", "wv", "wo"):
            w[name] = rng.standard_normal((*lead, d, d)) / math.sqrt(d) if attention else None
        if ffn:
            w["w1"] = rng.standard_normal((*lead, d, 4 * d)) / math.sqrt(d)
            w["w2"] = rng.standard_normal((*lead, 4 * d, d)) / math.sqrt(4 * d)
        else:
            w["w1"] = w["w2"] = None
        out.append(w)
    return out


@lru_cache(maxsize=8)
def _fixed_weights(weights_seed: int, d: int, layers: int, attention: bool, ffn: bool):
    rng = np.random.default_rng(np.random.SeedSequence(weights_seed, spawn_key=(2**32 - 1,)))
    return draw_weights(rng, (), d, layers, attention=attention, ffn=ffn)


def block_weights(cfg: SimConfig, block: int, size: int) -> list[dict]:
    """The weights of one sample block: fixed per run or drawn from the block's extension stream."""
    attention = cfg.weights != "none"
    if cfg.weights != "per_sample":  # "fixed", or "none" (identity; fixed FFN if any)
        return _fixed_weights(cfg.weights_seed, cfg.d, cfg.layers, attention, cfg.ffn)
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(block, 1)))
    return draw_weights(rng, (size,), cfg.d, cfg.layers, attention=attention, ffn=cfg.ffn)


# -- pieces -----------------------------------------------------------------------------------


def _norm(x: np.ndarray, norm: str, d: int, eps: float) -> np.ndarray:
    """Norm(x) of Sec. 2.1 (:mod:`recency_lib.norms`), centring included; (..., n, d)."""
    return normalize(center(x) if NORMS[norm].centres else x, norm, d, eps)


def _softmax(s: np.ndarray) -> np.ndarray:
    """:func:`recency_lib.model.causal_softmax`, by the compiled kernel when it runs."""
    compiled = kernels.load()
    return causal_softmax(s) if compiled is None else compiled.causal_softmax(s)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x Phi(x), exact (erf) form: the compiled kernel's, else :func:`gelu_reference`."""
    compiled = kernels.load()
    return gelu_reference(x) if compiled is None else compiled.gelu(x)


def gelu_reference(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x Phi(x) with scipy's erf (loses relative accuracy in the far negative tail, where
    1 + erf cancels: ~1e-8 relative where |GELU(x)| ~ 1e-8)."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(..., n, d) -> (..., heads, n, d / heads): head h owns columns [h d_h, (h + 1) d_h)."""
    *lead, n, d = x.shape
    return np.moveaxis(x.reshape(*lead, n, heads, d // heads), -2, -3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """Inverse of :func:`split_heads`: (..., heads, n, d_h) -> (..., n, heads * d_h)
    (concatenation)."""
    *lead, h, n, dh = x.shape
    return np.moveaxis(x, -3, -2).reshape(*lead, n, h * dh)


@lru_cache(maxsize=16)
def rope_tables(n: int, dh: int, base: float = ROPE_BASE) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin of the angles p * base^(-2k / dh) at positions p = 0..n-1, pairs k; (n, dh / 2)
    each."""
    theta = base ** (-np.arange(0, dh, 2, dtype=np.float64) / dh)  # (dh/2,)
    ang = np.arange(n, dtype=np.float64)[:, None] * theta[None, :]  # (n, dh/2)
    return np.cos(ang), np.sin(ang)


def apply_rope(x: np.ndarray, base: float = ROPE_BASE) -> np.ndarray:
    """Rotate pairs (2k, 2k+1) of every position p by p * base^(-2k / dh); x is (..., n, dh)."""
    n, dh = x.shape[-2:]
    cos, sin = rope_tables(n, dh, base)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., n, dh/2)
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def _proj(x: np.ndarray, w) -> np.ndarray:
    """x @ w for x (batch, n, d_in); w None (identity), (d_in, d_out) or per sample (batch, d_in,
    d_out). A shared w is applied as one (batch n, d_in) x (d_in, d_out) product (one BLAS call)."""
    if w is None:
        return x
    if w.ndim == 2:
        return (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[-1])
    return x @ w


# -- the layer's extended parts ------------------------------------------------------------------


def head_attention(
    y: np.ndarray, w: dict, d: int, heads: int, rope: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and attention of every head: Q, K = Y W_Q, Y W_K split into ``heads`` heads of size
    d / heads (RoPE on each when ``rope``), S_h = Causal(Q_h K_h^T / sqrt(d_h)), A_h = Softmax(S_h)
    (the compiled softmax when built); y (batch, n, d) -> two (batch, heads, n, n)."""
    q, k = _proj(y, w.get("wq")), _proj(y, w.get("wk"))
    dh = d // heads
    if heads == 1:
        qh, kh = q[..., None, :, :], k[..., None, :, :]
    else:
        qh, kh = split_heads(q, heads), split_heads(k, heads)
    if rope:  # (batch, h, n, dh)
        qh, kh = apply_rope(qh), apply_rope(kh)
    s_h = (qh @ np.swapaxes(kh, -1, -2)) / math.sqrt(dh)  # (batch, h, n, n)
    return s_h, _softmax(s_h)


def head_values(a_h: np.ndarray, y: np.ndarray, w: dict, heads: int) -> np.ndarray:
    """concat_h(A_h V_h) W_O with V = Y W_V split like the queries; (batch, n, d)."""
    v = _proj(y, w.get("wv"))
    vh = v[..., None, :, :] if heads == 1 else split_heads(v, heads)
    o = a_h @ vh  # (batch, h, n, dh)
    o = o[..., 0, :, :] if heads == 1 else merge_heads(o)  # (batch, n, d)
    return _proj(o, w.get("wo"))


def sublayer_output(cfg: SimConfig, f: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A sublayer's output ``f`` added to the residual stream ``x`` with the placement's output
    norm: f + gamma x, gamma x + Norm(f) or Norm(f + gamma x); (batch, n, d)."""
    where = PLACEMENTS[cfg.placement]
    if where.output == "sublayer":
        f = _norm(f, cfg.norm, cfg.d, cfg.eps)
    if cfg.gamma != 0.0:
        f = f + cfg.gamma * x
    return _norm(f, cfg.norm, cfg.d, cfg.eps) if where.output == "sum" else f


def feed_forward(cfg: SimConfig, o: np.ndarray, w: dict) -> np.ndarray:
    """The feed-forward sublayer on the attention's output ``o``: GELU(Z W_1) W_2 with Z = Norm(O)
    where the placement normalizes the values (else O), then :func:`sublayer_output`."""
    z = _norm(o, cfg.norm, cfg.d, cfg.eps) if PLACEMENTS[cfg.placement].norm_values else o
    return sublayer_output(cfg, _proj(gelu(_proj(z, w["w1"])), w["w2"]), o)  # (batch, n, d)


def layer(cfg: SimConfig, x: np.ndarray, w: dict, output: bool = True):
    """The full layer of Sec. 2.1 with ``cfg``'s switches and the weights ``w`` on the state ``x``
    (batch, n, d): (x_next, scores, attention, sq_norms) as :func:`recency_lib.model.layer`, the
    scores and attention averaged over heads; ``output=False``: x_next is not computed (None)."""
    where = PLACEMENTS[cfg.placement]
    seen = center(x) if NORMS[cfg.norm].centres else x
    sq_norms = np.einsum("...i,...i->...", seen, seen)  # (batch, n)
    y = normalize(seen, cfg.norm, cfg.d, cfg.eps)
    q = y if where.norm_scores else x
    s_h, a_h = head_attention(q, w, cfg.d, cfg.heads, cfg.rope)  # (batch, heads, n, n)
    s, a = (s_h[:, 0], a_h[:, 0]) if cfg.heads == 1 else (s_h.mean(axis=1), a_h.mean(axis=1))
    if not output:
        return None, s, a, sq_norms
    o = sublayer_output(cfg, head_values(a_h, y if where.norm_values else x, w, cfg.heads), x)
    return (feed_forward(cfg, o, w) if cfg.ffn else o), s, a, sq_norms


def run_block(cfg: SimConfig, x: np.ndarray, block: int):
    """Yield (layer, scores, attention, sq_norms) for the tokens ``x`` (batch, n, d) of ``block``.

    The last layer's output feeds no reported quantity, so its values, W_O and FFN are skipped.
    """
    ws = block_weights(cfg, block, x.shape[0])
    for l in range(cfg.layers):
        x, s, a, sq = layer(cfg, x, ws[l], output=l < cfg.layers - 1)
        yield l, s, a, sq
