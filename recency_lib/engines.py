"""Engines: run sample blocks through the layers and reduce them to streaming moments.

* ``dense``: the literal model on (n, d) embeddings, Eq. (6) -> Eqs. (1)-(2)/(20).
* ``gram``: the same layer on (n, m) coordinates whose Gram matrix has the law of the Gram
  matrix the normalization sees (see :mod:`recency_lib.sampling`); exact, cost free of d. Its
  blocks run through :mod:`recency_lib.kernels`: a compiled (numba) kernel when numba imports,
  else the numpy reference kernel; the kernel is chosen once, by the calling process, and
  recorded in ``SimResult.extra["kernel"]``.
* ``auto``: ``gram`` whenever it is exact for the config (always, for the paper's model).

Determinism: samples are split into blocks of a size fixed by the config; block k draws from
``SeedSequence(seed, spawn_key=(k,))`` and blocks are merged in order, so any ``chunk_size``
and any executor give bitwise-identical results.
"""
from __future__ import annotations

import math
import os
import sys
import time
from collections import deque
from concurrent.futures import Executor
from typing import Iterable, Sequence

import numpy as np

from .config import SimConfig
from .kernels import feature_layout, gram_block_moments, kernel_name, n_features, warm_up
from .features import adjacent_differences, recency_fraction, tril_index
from .model import layer
from .result import SimResult
from .sampling import dense_tokens, gram_draws, gram_width
from .stats import Moments
from .validation import check_int, check_z
from .version import __version__

_BLOCK_FLOATS = 2 ** 17      # dense: target size of the largest per-block array (floats); ~1 MB
_GRAM_BLOCK_FLOATS = 2 ** 19  # gram: target working set of the block kernel (floats); ~4 MB
_MAX_TASK_BLOCKS = 256        # default tasks return at most this many blocks' moments (a few MB)
_TASK_RESULT_BYTES = 2 ** 25  # ... and at most ~32 MB of them (long sequences: (layers, F) is large)


def resolve_engine(cfg: SimConfig) -> str:
    """The engine that runs ``cfg``: the requested one, or for "auto" gram (exact for the paper's
    model) or dense when an extension beyond the paper is on (:mod:`recency_lib.extensions`)."""
    if cfg.engine == "auto":
        return "dense" if cfg.extended else "gram"
    return cfg.engine


def width(cfg: SimConfig, engine: str) -> int:
    """Coordinates per token: d (dense) or m = min(n, degrees of freedom) (gram; 1 if alpha = 1)."""
    if engine == "dense":
        return cfg.d
    return gram_width(cfg)


def block_size(cfg: SimConfig, engine: str) -> int:
    """Samples per random-stream block: a power of two in [16, 4096] fixed by (n, width, engine).

    It depends on the config and engine only (never on ``samples``, ``chunk_size``, the executor
    or the kernel), so a run with more samples extends a run with fewer, and results are
    reproducible. Dense: the (n, max(n, d)) arrays of a block stay near 1 MB. Gram: the block
    kernel's working set (three (n, m) states, the 3 n(n+1)/2 + 1 features and the draws per
    sample) stays at or below ~4 MB, i.e. in L2/L3 cache; n = 10 gives 512 samples. Measured
    (benchmarks/bench_kernels.py): per-sample kernel time is flat from 128 to 1024 samples and
    doubles at 2048, while per-block overhead (seeding, draws, merge) favours larger blocks.
    """
    if engine == "dense" and cfg.extended:                         # issue #7: shrinks with n, d
        from .extensions import block_size as ext_block_size
        return ext_block_size(cfg)
    if engine == "dense":
        per_sample, budget = cfg.n * max(cfg.n, cfg.d), _BLOCK_FLOATS
    else:
        n, w = cfg.n, width(cfg, engine)
        t = n * (n + 1) // 2
        per_sample, budget = 3 * n * w + 3 * t + 1 + w + t, _GRAM_BLOCK_FLOATS
    b = 2 ** int(math.floor(math.log2(max(1, budget // per_sample))))
    return int(min(4096, max(16, b)))


def block_moments(cfg: SimConfig, engine: str, block: int, size: int, kernel: str | None = None) -> Moments:
    """Run one block of ``size`` samples; moments of every per-sample feature, (layers, F).

    ``kernel`` ("numba" | "numpy" | None = the best available) only matters for the gram engine.
    """
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(block,)))
    if engine == "gram":
        mean, m2 = gram_block_moments(cfg, *gram_draws(cfg, rng, size), kernel=kernel)
        return Moments(size, mean, m2)
    steps = dense_steps(cfg, dense_tokens(cfg, rng, size), block)   # tokens (size, n, d)
    return Moments.of(layer_features(steps, cfg.n, cfg.layers, size))


def layer_features(steps, n: int, layers: int, size: int) -> np.ndarray:
    """The per-sample features (size, layers, F) of :func:`recency_lib.kernels.feature_layout` from
    ``steps``, an iterable of (layer, scores (size, n, n), attention, sq_norms (size, n))."""
    rows, cols = tril_index(n)
    lay = feature_layout(n)
    feats = np.empty((size, layers, lay["sq_norm"].stop))           # (size, layers, F)
    for l, s, a, sq in steps:
        f = feats[:, l]
        f[:, lay["score"]] = s[:, rows, cols]
        f[:, lay["attn"]] = a[:, rows, cols]
        f[:, lay["diff"]] = adjacent_differences(s)
        f[:, lay["rp"].start] = recency_fraction(s)
        f[:, lay["sq_norm"]] = sq
    return feats


def layer_steps(x: np.ndarray, *, norm: str, d: int, gamma: float, eps: float, layers: int, centred: bool):
    """The paper's layer (:func:`recency_lib.model.layer`) applied ``layers`` times to ``x``;
    yields (layer, scores, attention, sq_norms) of each."""
    for l in range(layers):
        x, s, a, sq = layer(x, norm=norm, d=d, gamma=gamma, eps=eps, centred=centred)
        yield l, s, a, sq


def dense_steps(cfg: SimConfig, x: np.ndarray, block: int):
    """The dense engine's layers for the tokens ``x`` (batch, n, d) of ``block``: the paper's layer,
    or the extended one when an extension beyond the paper is on (issue #7)."""
    if cfg.extended:
        from .extensions import run_block
        return run_block(cfg, x, block)
    return layer_steps(x, norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps, layers=cfg.layers, centred=False)


def _chunk(cfg_dict: dict, engine: str, kernel: str, blocks: Sequence[tuple[int, int]]):
    """Executor task: moments of consecutive blocks, returned unmerged (merge order is global)."""
    cfg = SimConfig.from_dict(cfg_dict)
    return [block_moments(cfg, engine, k, size, kernel) for k, size in blocks]


def _timed_chunk(*args):
    """:func:`_chunk` plus its own compute time, so each config is charged only for its blocks."""
    t0 = time.perf_counter()
    out = _chunk(*args)
    return time.perf_counter() - t0, out


def _worker_chunk(*args):
    """:func:`_timed_chunk` as an executor task, with BLAS held to one thread: the executor already
    runs one task per core, and OpenBLAS's own threads on top of that oversubscribe the cores (the
    dense engine's products are small). Needs ``threadpoolctl``; without it this is _timed_chunk."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                                            # pragma: no cover
        return _timed_chunk(*args)
    with threadpool_limits(limits=1, user_api="blas"):
        return _timed_chunk(*args)


def _blocks(cfg: SimConfig, bsize: int) -> list[tuple[int, int]]:
    full, rest = divmod(cfg.samples, bsize)
    return [(k, bsize) for k in range(full)] + ([(full, rest)] if rest else [])


def _check_chunk_size(chunk_size):
    if chunk_size is not None:
        check_int("chunk_size", chunk_size, 1)


def simulate_many(configs: Iterable[SimConfig], *, chunk_size: int | None = None,
                  executor: Executor | None = None, z: float = 3.0,
                  progress: bool | None = None) -> list[SimResult]:
    """Simulate several configs, spreading whole configs and sample blocks over ``executor``.

    Results are identical to running each config alone with :func:`simulate`. ``chunk_size``
    (samples per task, rounded up to whole blocks) trades scheduling overhead against memory;
    it never changes the result. ``executor`` is any ``concurrent.futures.Executor`` (e.g. a
    ``ProcessPoolExecutor`` or a Dask client's ``get_executor()``); default: in-process.
    """
    configs = list(configs)
    for cfg in configs:
        if not isinstance(cfg, SimConfig):
            raise ValueError(f"configs must be SimConfig objects; got {type(cfg).__name__}")
    _check_chunk_size(chunk_size)
    z = check_z(z)

    workers = getattr(executor, "_max_workers", None) or os.cpu_count() or 1
    # One kernel for the whole run, chosen here (never per worker), so that results do not depend
    # on which worker has numba; compiled / loaded once here, so forked workers inherit it.
    kernel = kernel_name() if any(resolve_engine(c) == "gram" for c in configs) else "numpy"
    if kernel == "numba":
        warm_up()
    plans = []                                     # per config: (engine, bsize, list of chunks)
    for cfg in configs:
        engine = resolve_engine(cfg)
        bsize = block_size(cfg, engine)
        blocks = _blocks(cfg, bsize)
        # a task's result is one unmerged (mean, M2) pair of (layers, F) per block: bound its bytes
        by_memory = max(1, _TASK_RESULT_BYTES // (16 * cfg.layers * n_features(cfg.n)))
        if chunk_size is not None:
            per = max(1, math.ceil(chunk_size / bsize))
        elif executor is None:
            per = min(8, by_memory)
        else:                                      # a few tasks per worker, for balance; bounded
            per = max(1, min(_MAX_TASK_BLOCKS, by_memory, math.ceil(len(blocks) / (4 * workers))))
        chunks = [blocks[i:i + per] for i in range(0, len(blocks), per)]
        plans.append((engine, bsize, chunks))

    tasks = [(ci, ti) for ci, (_, _, chunks) in enumerate(plans) for ti in range(len(chunks))]
    acc: list[Moments | None] = [None] * len(configs)
    elapsed = [0.0] * len(configs)                 # compute seconds per config, summed over its tasks
    show = progress if progress is not None else (sys.stderr.isatty() and sum(c.samples for c in configs) >= 10**6)
    bar = None
    if show:
        from tqdm import tqdm
        bar = tqdm(total=sum(c.samples for c in configs), unit="sample", file=sys.stderr, leave=False)

    def args(ci, ti):
        engine, bsize, chunks = plans[ci]
        return configs[ci].to_dict(), engine, kernel, chunks[ti]

    def fold(ci, ti, timed):
        seconds, moments = timed
        elapsed[ci] += seconds
        for m in moments:                          # tasks are folded in submission order
            acc[ci] = m if acc[ci] is None else acc[ci].merge(m)
            if bar is not None:
                bar.update(m.count)

    try:
        if executor is None:
            for ci, ti in tasks:
                fold(ci, ti, _timed_chunk(*args(ci, ti)))
        else:
            window = 2 * workers + 2               # bounded in-flight tasks: bounded memory
            pending: deque = deque()
            it = iter(tasks)
            for ci, ti in it:
                pending.append((ci, ti, executor.submit(_worker_chunk, *args(ci, ti))))
                if len(pending) >= window:
                    break
            while pending:
                ci, ti, fut = pending.popleft()
                fold(ci, ti, fut.result())
                nxt = next(it, None)
                if nxt is not None:
                    pending.append((*nxt, executor.submit(_worker_chunk, *args(*nxt))))
    finally:
        if bar is not None:
            bar.close()

    return [_to_result(cfg, plan[0], plan[1], m, z, t, kernel if plan[0] == "gram" else None)
            for cfg, plan, m, t in zip(configs, plans, acc, elapsed)]


def simulate(cfg: SimConfig, *, chunk_size: int | None = None, executor: Executor | None = None,
             z: float = 3.0, progress: bool | None = None) -> SimResult:
    """Monte-Carlo means and standard errors of scores, attention and recency metrics for ``cfg``.

    Memory does not grow with ``cfg.samples`` (blocks are reduced to moments as they finish).
    Same config and seed -> bitwise-identical result for any ``chunk_size`` and ``executor``.
    """
    return simulate_many([cfg], chunk_size=chunk_size, executor=executor, z=z, progress=progress)[0]


def _to_result(cfg: SimConfig, engine: str, bsize: int, m: Moments, z: float, elapsed: float,
               kernel: str | None) -> SimResult:
    n, L = cfg.n, cfg.layers
    lay = feature_layout(n)
    rows, cols = tril_index(n)
    sem = m.sem

    def square(which, fill, source):               # (layers, F) -> (layers, n, n)
        out = np.full((L, n, n), fill)
        out[:, rows, cols] = source[:, lay[which]]
        return out

    diff_rows, diff_cols = rows[cols >= 1], cols[cols >= 1]

    def diffs(source):
        out = np.full((L, n, n), np.nan)
        out[:, diff_rows, diff_cols] = source[:, lay["diff"]]
        return out

    return SimResult(
        config=cfg, engine=engine,
        score_mean=square("score", np.nan, m.mean), score_sem=square("score", np.nan, sem),
        attn_mean=square("attn", 0.0, m.mean), attn_sem=square("attn", 0.0, sem),
        diff_mean=diffs(m.mean), diff_sem=diffs(sem),
        recency_probability=m.mean[:, lay["rp"].start].copy(),
        recency_probability_sem=sem[:, lay["rp"].start].copy(),
        sq_norm_mean=m.mean[:, lay["sq_norm"]].copy(), sq_norm_sem=sem[:, lay["sq_norm"]].copy(),
        block_size=bsize, library_version=__version__, z=float(z), elapsed_seconds=float(elapsed),
        extra={"kernel": kernel} if kernel else {},
    )


def sample_trajectories(cfg: SimConfig, samples: int | None = None, engine: str | None = None,
                        kernel: str | None = None):
    """Per-sample scores and attention of every layer, for illustrations and tests (small runs).

    Returns ``scores, attention`` of shape (samples, layers, n, n) (scores NaN and attention 0
    above the diagonal), drawn from block 0's stream onwards and computed exactly as
    :func:`simulate` draws and computes them (same blocks, same kernel), so their plain means
    match the streamed ones to float rounding. ``samples`` defaults to ``cfg.samples``.
    """
    samples = cfg.samples if samples is None else samples
    samples = check_int("samples", samples, 1)
    engine = engine or resolve_engine(cfg)
    if engine not in ("dense", "gram"):
        raise ValueError(f"engine={engine!r} is not allowed; allowed: 'dense' or 'gram'")
    n, L = cfg.n, cfg.layers
    bsize = block_size(cfg, engine)
    rows, cols = tril_index(n)
    lay = feature_layout(n)
    scores, attn = [], []
    for k, size in _blocks(cfg.replace(samples=max(2, samples)), bsize):
        rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,)))
        if engine == "gram":
            *_, f = gram_block_moments(cfg, *gram_draws(cfg, rng, size), kernel=kernel, features=True)
            s = np.full((size, L, n, n), np.nan)
            a = np.zeros((size, L, n, n))
            s[:, :, rows, cols] = f[:, lay["score"]].transpose(2, 0, 1)
            a[:, :, rows, cols] = f[:, lay["attn"]].transpose(2, 0, 1)
            scores.append(s), attn.append(a)
        else:
            s_l, a_l = [], []
            for _, s, a, _ in dense_steps(cfg, dense_tokens(cfg, rng, size), k):
                s_l.append(np.where(np.tri(n, dtype=bool), s, np.nan)), a_l.append(a)
            scores.append(np.stack(s_l, axis=1)), attn.append(np.stack(a_l, axis=1))
        if sum(len(x) for x in scores) >= samples:
            break
    return np.concatenate(scores)[:samples], np.concatenate(attn)[:samples]
