"""Per-sequence matrices, drawn and computed exactly as :func:`recency_lib.simulate` does.

:func:`sample_trajectories` keeps every sequence's scores and attention (small runs: figures,
tests); :func:`sequence_statistic` streams any per-sequence statistic into means and standard
errors, with layer 1 as a control variate where its mean is known (memory of one block).
"""

from __future__ import annotations

import inspect
import math
import os
import time
from dataclasses import dataclass

import numpy as np

from . import kernels
from .config import SimConfig
from .engines import (
    TASK_BLOCKS,
    Plan,
    _one_blas_thread,
    block_size,
    dense_features,
    gram_features,
    in_order,
    kernel_block,
    kernel_sums,
    memory_limit,
    resolve_engine,
    run_bytes,
)
from .features import feature_layout, n_features, tril_index
from .progress import Progress
from .sampling import gram_draws
from .stats import Moments, control_variate, merged
from .streams import block_key
from .validation import brief, check_choice, check_int


def block_matrices(p: Plan, k: int, size: int):
    """Scores and attention (size, layers, n, n) of block ``k`` of plan ``p`` (scores NaN and
    attention 0 above the diagonal) and the squared norms (size, layers, n) each layer sees."""
    cfg, n, L = p.cfg, p.cfg.n, p.cfg.layers
    if p.engine == "dense":
        f = dense_features(cfg, k, size)  # (B, L, F)
    else:
        chi2, normals = gram_draws(cfg, block_key(cfg.seed, k), size, p.kernel)
        if kernels.load(p.kernel) is None:
            f = gram_features(cfg, chi2, normals)
        else:
            f = np.empty((L, n_features(n), size))  # the kernel's layout: (L, F, B)
            kernel_block(cfg, chi2, normals, [a[0] for a in kernel_sums(cfg, 1)], f)
            f = f.transpose(2, 0, 1)
    lay, (rows, cols) = feature_layout(n), tril_index(n)
    s, a = np.full((size, L, n, n), np.nan), np.zeros((size, L, n, n))
    s[:, :, rows, cols], a[:, :, rows, cols] = f[:, :, lay["score"]], f[:, :, lay["attn"]]
    return s, a, np.ascontiguousarray(f[:, :, lay["sq_norm"]])


ENGINES, KERNELS = ("dense", "gram"), ("c", "numpy")


def _plan(cfg: SimConfig, samples: int, engine, kernel, keep_all: bool) -> Plan:
    """How :func:`block_matrices` runs ``samples`` sequences of ``cfg``; the matrices kept at once
    (all, or a block's) must fit in memory."""
    engine = check_choice("engine", resolve_engine(cfg) if engine is None else engine, ENGINES)
    kernel = check_choice("kernel", kernels.kernel_name() if kernel is None else kernel, KERNELS)
    block = block_size(cfg, engine)
    keep = samples if keep_all else min(samples, block)
    per, room = _matrix_bytes(cfg), memory_limit() - run_bytes(cfg, engine)
    if keep * per > room:
        raise ValueError(
            f"samples={keep} trajectories need about {keep * per / 2**30:.3g} GiB of memory "
            f"(n={cfg.n}, layers={cfg.layers}); allowed: samples <= {max(0, room // per)} (or "
            "sequence_statistic or simulate, whose memory does not grow with samples)"
        )
    run = cfg.replace(samples=max(2, samples))
    return Plan(run, engine, block, kernel if engine == "gram" else "numpy")


def sample_trajectories(cfg: SimConfig, samples=None, engine=None, kernel=None):
    """Scores and attention (samples, layers, n, n) of the first ``samples`` sequences (default
    ``cfg.samples``): their plain means equal :func:`simulate`'s to rounding."""
    samples = check_int("samples", cfg.samples if samples is None else samples, 1)
    p = _plan(cfg, samples, engine, kernel, keep_all=True)
    blocks = p.sizes(0, -(-samples // p.block))
    scores, attn = zip(*(block_matrices(p, k, size)[:2] for k, size in blocks))
    return np.concatenate(scores)[:samples], np.concatenate(attn)[:samples]


@dataclass(frozen=True)
class SequenceStatistic:
    """Mean and standard error (layers, k) of a per-sequence statistic; ``cv_mean``/``cv_sem``: with
    layer 1 as control variate (None without a known layer-1 mean)."""

    config: SimConfig
    samples: int
    mean: np.ndarray
    sem: np.ndarray
    cv_mean: np.ndarray | None = None
    cv_sem: np.ndarray | None = None
    elapsed_seconds: float = math.nan


def sequence_statistic(
    cfg, statistic, *, samples=None, control_mean=None, engine=None, kernel=None, executor=None
) -> SequenceStatistic:
    """Mean and standard error over ``samples`` sequences (default ``cfg.samples``) of
    ``statistic(scores, attention)``: it gets the matrices (B, layers, n, n) of a run of blocks (and
    ``sq_norms`` (B, layers, n) if it takes that keyword) and returns (B, layers, k), one row per
    sequence, e.g. within-row contrasts.

    ``control_mean`` (one number or k): layer 1's exact mean, when known (0 for a contrast of a
    row's earlier keys, which are exchangeable there): layer 1 is then the control variate of every
    layer, cross-fitted on the even and odd blocks (:func:`recency_lib.stats.control_variate`).
    ``executor`` (any ``concurrent.futures.Executor``) runs the blocks; each block's moments are
    merged in block order, so it never changes a bit.
    """
    if not callable(statistic):
        raise ValueError(
            f"statistic={brief(statistic)} is not allowed; allowed: a function "
            "(scores, attention) -> array (B, layers, k)"
        )
    samples = check_int("samples", cfg.samples if samples is None else samples, 2)
    mu = None if control_mean is None else np.asarray(control_mean, dtype=float)
    if mu is not None and (mu.ndim > 1 or not np.all(np.isfinite(mu))):
        raise ValueError(
            f"control_mean={brief(control_mean)} is not allowed; allowed: a finite number or a "
            "1-d array of k finite numbers"
        )
    p = _plan(cfg, samples, engine, kernel, keep_all=False)
    room = min(STATISTIC_TASK_BYTES, memory_limit() - run_bytes(cfg, p.engine))
    batch = max(1, room // (p.block * _matrix_bytes(cfg)))  # blocks whose matrices are held at once
    per = TASK_BLOCKS if executor is None else math.ceil(p.blocks / (4 * (os.cpu_count() or 1)))
    per = max(1, min(256, per))  # blocks per task
    jobs = (
        (p, statistic, first, min(per, p.blocks - first), batch, mu is not None)
        for first in range(0, p.blocks, per)
    )
    seconds, groups, width = 0.0, [None, None], None  # even and odd blocks
    with _one_blas_thread(), Progress(samples) as bar:
        for spent, k_width, moments in in_order(_statistic_task, jobs, executor):
            if width not in (None, k_width):
                raise ValueError(
                    f"statistic returned {width} columns, then {k_width}; allowed: one k throughout"
                )
            seconds, width = seconds + spent, k_width
            for k, m in moments:  # in block order
                groups[k % 2] = m if groups[k % 2] is None else groups[k % 2].merge_into(m)
                bar.update(m.count)
    plain = merged(groups)
    out = {"mean": plain.mean, "sem": plain.sem}
    if mu is not None:
        if mu.ndim == 1 and mu.shape[0] != width:
            raise ValueError(
                f"control_mean has {mu.shape[0]} numbers; allowed: one, or k = {width}"
            )
        out["cv_mean"], out["cv_sem"] = control_variate(
            groups, np.broadcast_to(mu, (width,)).copy()
        )
    return SequenceStatistic(cfg, samples, elapsed_seconds=seconds, **out)


#: The matrices of one task of :func:`sequence_statistic` (its blocks' scores, attention and norms).
STATISTIC_TASK_BYTES = 2**22


def _matrix_bytes(cfg: SimConfig) -> int:
    """Bytes per sequence of :func:`block_matrices` and a statistic's temporaries of their size."""
    return 4 * 8 * cfg.layers * cfg.n**2


def _statistic_task(p: Plan, statistic, first: int, count: int, batch: int, controls: bool):
    """Blocks first .. first + count - 1 of ``p``, ``batch`` blocks' matrices at once (one call of
    the statistic). Returns (CPU seconds, k, [(k, Moments), ...]): each block's moments."""
    t0, norms = time.thread_time(), "sq_norms" in inspect.signature(statistic).parameters
    blocks, out, width = p.sizes(first, count), [], 0
    for run in (blocks[i : i + batch] for i in range(0, len(blocks), batch)):
        s, a, sq = (np.concatenate(m) for m in zip(*(block_matrices(p, k, b) for k, b in run)))
        x = np.asarray(statistic(s, a, sq_norms=sq) if norms else statistic(s, a), dtype=float)
        if x.ndim != 3 or x.shape[:2] != (len(s), p.cfg.layers) or width not in (0, x.shape[2]):
            raise ValueError(
                f"statistic returned shape {x.shape}; allowed: (B, layers, k) = ({len(s)}, "
                f"{p.cfg.layers}, {width or 'k'}) for {len(s)} sequences"
            )
        width, rows = x.shape[2], np.cumsum([0] + [b for _, b in run])
        for (k, _), start, stop in zip(run, rows[:-1], rows[1:]):
            out.append((k, Moments.of(x[start:stop], slice(0, width) if controls else None)))
    return time.thread_time() - t0, width, out
