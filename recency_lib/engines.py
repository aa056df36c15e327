"""Engines: run sample blocks through the layers and reduce them to streaming moments.

* ``dense``: the literal model on (n, d) embeddings, Eq. (6) -> Eqs. (1)-(2)/(20)
  (:func:`recency_lib.model.layer`; with an extension on, :mod:`recency_lib.extensions`).
* ``gram``: the same layer on (n, m) coordinates whose Gram matrix has the law of the Gram
  matrix the normalization sees (see :mod:`recency_lib.sampling`); exact, cost free of d. A block
  runs through the compiled kernel (:func:`recency_lib.kernels.gram_block`) when it was built,
  else through :func:`recency_lib.model.layer` on batch-first coordinates; the choice is made once,
  by the calling process, and recorded in ``SimResult.extra["kernel"]``.
* ``auto``: ``gram`` whenever it is exact for the config (always, for the paper's model).

Both engines reduce every per-sample feature of :func:`recency_lib.features.layer_features` to
moments (:class:`recency_lib.stats.Moments`), kept in two groups, the even and the odd blocks, for
the cross-fitted control variates (:func:`recency_lib.stats.control_variate`).

Determinism: samples are split into blocks of a size fixed by the config; block k draws from
``SeedSequence(seed, spawn_key=(k,))`` (gram: the key of the counter-based generator of
:mod:`recency_lib.streams`; dense: a numpy Generator) and each group's blocks are merged in block order, so any
``chunk_size`` and any executor give bitwise-identical results. Blocks are enumerated lazily:
memory does not grow with ``samples``.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import extensions
from .config import SimConfig
from .features import (
    TIE_RTOL,
    compiled_kernels,
    control_means,
    control_slice,
    controls_valid,
    feature_layout,
    kernels_for,
    layer_features,
    n_features,
    tril_index,
)
from .model import layer
from .norms import NORMS
from .progress import Progress
from .result import SimResult
from .sampling import (
    degrees_of_freedom,
    dense_tokens,
    gram_assemble,
    gram_draws,
    gram_width,
    sigma_cholesky,
)
from .stats import Moments, control_variate, merged
from .streams import block_key
from .validation import check_bool, check_choice, check_int, short
from .version import __version__

_MAX_TASK_BLOCKS = 256  # default tasks return at most this many blocks' moments (a few MB)
_TASK_RESULT_BYTES = 2**25  # ... and at most ~32 MB of them (long sequences: (layers, F) is large)
_INPROCESS_TASK_BLOCKS = (
    32  # blocks per task without an executor (fewer tasks: less Python per block),
)
_INPROCESS_RESULT_BYTES = (
    2**22
)  # ... as long as their moments stay under ~4 MB (at n = 10: 32 blocks)
_STACK_BYTES = 2**20  # gram_team_moments stacks blocks' kernel sums up to this size per array
PROCESS_BYTES = 200 * 2**20  # a Python process with numpy and the compiled kernel
MEMORY_FRACTION = 0.8  # of physical memory: the rest is the system's


def resolve_engine(cfg: SimConfig) -> str:
    """The engine that runs ``cfg``: the requested one, or for "auto" gram (exact for the paper's
    model) or dense when an extension beyond the paper is on (:mod:`recency_lib.extensions`)."""
    if cfg.engine == "auto":
        return "dense" if cfg.extended else "gram"
    return cfg.engine


def _per_sample(cfg: SimConfig, engine: str) -> tuple[int, int, int]:
    """(floats one sample of a block holds, the floats a block aims at, the smallest block) of an engine:
    dense, the (n, max(n, d)) arrays near 1 MB a block; extended, the per-head scores, the FFN's hidden
    state, per-sample weights and the features near 16 MB; gram, the draws and per-sample features near
    4 MB."""
    n, d, L = cfg.n, cfg.d, cfg.layers
    if engine == "dense" and cfg.extended:
        per = 3 * cfg.heads * n * n + 8 * n * d + 2 * L * 3 * n * (n + 1) // 2
        return per + (L * 12 * d * d if cfg.weights == "per_sample" else 0), 2**21, 1
    if engine == "dense":
        return n * max(n, d), 2**17, 16
    w, t = gram_width(cfg), n * (n + 1) // 2
    return 3 * n * w + 3 * t + 1 + w + t, 2**19, 16


def block_size(cfg: SimConfig, engine: str) -> int:
    """Samples per random-stream block: a power of two up to 4096 fixed by (n, d, layers, engine), never by
    ``samples``, ``chunk_size``, the executor or the kernel, so a run with more samples extends a run with
    fewer and every result is reproducible."""
    per, target, smallest = _per_sample(cfg, engine)
    b = 2 ** int(math.floor(math.log2(max(1, target // per))))
    return int(min(4096, max(smallest, b)))


def run_bytes(cfg: SimConfig, engine: str, workers: int = 1) -> int:
    """A rough bound on a run's peak memory: per process running blocks its start-up, a block's arrays
    (twice, for temporaries; the dense engine also keeps per-sample features) and a task's moments; in
    the main process the running moments and the result. It does not grow with ``samples``."""
    per, _, _ = _per_sample(cfg, engine)
    moments = 3 * cfg.layers * n_features(cfg.n)
    sample = 2 * per + (2 * cfg.layers * n_features(cfg.n) if engine == "dense" else 0)
    task = min(_MAX_TASK_BLOCKS, max(1, _TASK_RESULT_BYTES // (8 * moments)))
    running = PROCESS_BYTES + 8 * (block_size(cfg, engine) * sample + task * moments)
    main = PROCESS_BYTES + 8 * (12 * moments + 20 * cfg.layers * cfg.n**2)
    return main + running * workers if workers > 1 else main + running - PROCESS_BYTES


def memory_limit() -> int:
    """Bytes a run may take: MEMORY_FRACTION of physical memory, at most what is available now;
    the environment variable RECENCY_LIB_MAX_MEMORY (bytes) lowers it."""
    limit = MEMORY_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as fh:
        limit = min(
            limit,
            next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:")),
        )
    raw = os.environ.get("RECENCY_LIB_MAX_MEMORY", "")
    if raw:
        try:
            cap = float(raw)
        except ValueError:
            cap = math.nan
        if not (math.isfinite(cap) and cap > 0):
            raise ValueError(
                f"RECENCY_LIB_MAX_MEMORY={short(raw)} is out of range; allowed: a number of bytes > 0"
            )
        limit = min(limit, cap)
    return int(limit)


def _largest(fits, top: int, low: int) -> int:
    """The largest m in [low, top] with fits(m) (fits decreasing in m), or low - 1."""
    if not fits(low):
        return low - 1
    while top > low:
        mid = (low + top + 1) // 2
        low, top = (mid, top) if fits(mid) else (low, mid - 1)
    return low


def require_memory(cfg: SimConfig, engine: str, workers: int = 1) -> None:
    """Before any work: ValueError when :func:`run_bytes` exceeds :func:`memory_limit`, naming the largest
    n (or, for the dense engine, d) that fits with the other parameters as given."""
    limit = memory_limit()
    need = run_bytes(cfg, engine, workers)
    if need <= limit:
        return
    for name in ("n", "d") if engine == "dense" else ("n",):
        low = 1 if name == "n" else 2

        def fits(v, name=name):
            try:
                c = cfg.replace(**{name: v})
            except ValueError:  # a d that heads or RoPE do not allow: judged with one head
                c = cfg.replace(**{name: v}, heads=1, rope=False)
            return run_bytes(c, engine, workers) <= limit

        top = _largest(fits, getattr(cfg, name), low)
        if top >= low:
            break
    allowed = (
        f"{name} <= {top} with the other parameters as given"
        if top >= low
        else "fewer workers or layers"
    )
    raise ValueError(
        f"{name}={getattr(cfg, name)} needs about {need / 2**30:.3g} GiB of memory ({engine} engine, "
        f"n={cfg.n}, d={cfg.d}, layers={cfg.layers}, {workers} worker(s)); this machine allows "
        f"{limit / 2**30:.3g} GiB; allowed: {allowed}"
    )


# -- the kernel choice ------------------------------------------------------------------------------


def kernel_name() -> str:
    """ "c" when the compiled kernel runs (recency_lib/_kernel.c, built by ``pip install -e .``), else
    "numpy" (the kernel was not built, or RECENCY_LIB_KERNEL=numpy): the numpy path draws the same
    numbers (recency_lib.streams) and computes the same layers, more slowly."""
    return "numpy" if compiled_kernels() is None else "c"


def warm_up() -> None:
    """Load the compiled kernel now (its first call maps the shared library); no-op without it."""
    if compiled_kernels() is None:
        return
    cfg = SimConfig(alpha=0.5, gamma=1.0, n=3, d=4, layers=2, samples=4)
    gram_block_moments(cfg, *gram_draws(cfg, (0, 0, 0), 4, kernel="c"), kernel="c")


# -- one block ------------------------------------------------------------------------------------


def gram_block_moments(
    cfg: SimConfig,
    chi2: np.ndarray,
    normals: np.ndarray,
    kernel: str | None = None,
    features: bool = False,
):
    """:class:`Moments` of one gram block from its raw draws (:func:`recency_lib.sampling.gram_draws`).

    ``kernel``: "c", "numpy" or None (the compiled one when available). Same draws -> the same numbers
    up to float rounding (~1e-15 relative) on either path. ``features=True`` also returns the
    per-sample features (B, layers, F) the moments were taken of.
    """
    kernels = kernels_for(kernel)
    if kernels is None:
        feats = stack_features(
            layer_steps(
                gram_assemble(cfg, chi2, normals),
                norm=cfg.norm,
                d=cfg.d,
                gamma=cfg.gamma,
                eps=cfg.eps,
                layers=cfg.layers,
                centred=True,
            ),
            cfg.n,
            cfg.layers,
            chi2.shape[-1],
        )
        m = Moments.of(feats, control_slice(cfg.n))
        return (m, feats) if features else m
    size = chi2.shape[-1]
    sums = _gram_sums(cfg, 1)
    feats = np.empty((cfg.layers, n_features(cfg.n), size)) if features else None
    _gram_call(kernels, cfg, chi2, normals, *(a[0] for a in sums), feats)
    m = Moments.from_sums(size, *(a[0] for a in sums), control_slice(cfg.n))
    return (m, np.ascontiguousarray(feats.transpose(2, 0, 1))) if features else m


def _gram_sums(cfg: SimConfig, blocks: int) -> tuple[np.ndarray, ...]:
    """The compiled kernel's outputs for ``blocks`` blocks: shift, s1, s2 (blocks, layers, F) and sc
    (blocks, layers, controls)."""
    nf = n_features(cfg.n)
    return (
        *(np.empty((blocks, cfg.layers, nf)) for _ in range(3)),
        np.empty((blocks, cfg.layers, nf - control_slice(cfg.n).start)),
    )


def _gram_call(kernels, cfg: SimConfig, chi2, normals, shift, s1, s2, sc, feats=None) -> None:
    """One block through the compiled kernel (:func:`recency_lib.kernels.gram_block`) into its sums."""
    mode = "rank_one" if cfg.alpha == 1.0 else "plain" if cfg.alpha == 0.0 else "cholesky"
    kernels.gram_block(
        np.ascontiguousarray(chi2, dtype=np.float64),
        np.ascontiguousarray(normals, dtype=np.float64),
        sigma_cholesky(cfg.n, cfg.c if mode == "cholesky" else 0.0),
        mode,
        cfg.d,
        NORMS[cfg.norm].scales,
        cfg.gamma,
        cfg.eps,
        cfg.layers,
        TIE_RTOL,
        _offsets(cfg.n),
        shift,
        s1,
        s2,
        sc,
        feats,
    )


def gram_team_moments(
    cfgs: list[SimConfig], blocks: list[tuple[int, int]], kernel: str | None = None
) -> tuple[list[float], list[list[tuple[int, Moments]]]]:
    """Blocks ``blocks`` [(k, size), ...] of gram configs that share their random stream
    (:func:`stream_key`): each block's draws made once and run through every config. Returns per
    config its compute seconds (the draws' time split evenly) and its [(k, Moments), ...]: the
    numbers of :func:`gram_block_moments` block by block, bit for bit. With the compiled kernel the
    blocks of one size are reduced together (one :meth:`Moments.from_sums` per config, no Python
    work per block beyond the calls)."""
    seconds, out = [0.0] * len(cfgs), [[] for _ in cfgs]
    kernels = kernels_for(kernel)
    # runs of blocks of one size, their sums stacked up to _STACK_BYTES per array (a worker's task of
    # 256 blocks at n = 64 would stack 50 MB per array and config; from_sums adds temporaries of that size)
    per = max(1, _STACK_BYTES // max(8 * cfg.layers * n_features(cfg.n) for cfg in cfgs))
    runs = [
        blocks[i:j][p : p + per]
        for i, j in _equal_runs([size for _, size in blocks])
        for p in range(0, j - i, per)
    ]
    for run in runs:
        size = run[0][1]
        sums = [_gram_sums(cfg, len(run)) if kernels is not None else None for cfg in cfgs]
        for b, (k, _) in enumerate(run):
            t0 = time.perf_counter()
            draws = gram_draws(cfgs[0], block_key(cfgs[0].seed, k), size, kernel)
            shared = (time.perf_counter() - t0) / len(cfgs)
            for c, cfg in enumerate(cfgs):
                t0 = time.perf_counter()
                if kernels is None:
                    out[c].append((k, gram_block_moments(cfg, *draws, kernel=kernel)))
                else:
                    _gram_call(kernels, cfg, *draws, *(a[b] for a in sums[c]))
                seconds[c] += shared + time.perf_counter() - t0
        if kernels is not None:
            for c, cfg in enumerate(cfgs):
                t0 = time.perf_counter()
                out[c].extend(
                    zip(
                        (k for k, _ in run),
                        Moments.from_sums(size, *sums[c], control_slice(cfg.n)).unstack(),
                    )
                )
                seconds[c] += time.perf_counter() - t0
    return seconds, out


def _equal_runs(values: list) -> list[tuple[int, int]]:
    """[(start, stop), ...] of the runs of equal consecutive values."""
    cuts = [i for i in range(1, len(values)) if values[i] != values[i - 1]]
    return list(zip([0] + cuts, cuts + [len(values)]))


@lru_cache(maxsize=64)
def _offsets(n: int) -> np.ndarray:
    """The compiled kernel's view of :func:`recency_lib.features.feature_layout`."""
    lay = feature_layout(n)
    names = ("attn", "sq_norm", "diag_step", "step", "row_trend", "trend", "rp")
    out = np.array([lay[k].start for k in names] + [n_features(n)], dtype=np.int64)
    out.flags.writeable = False
    return out


def block_moments(
    cfg: SimConfig, engine: str, block: int, size: int, kernel: str | None = None
) -> Moments:
    """Run block ``block`` of ``size`` samples; moments of every per-sample feature, (layers, F).

    ``kernel`` ("c" | "numpy" | None = the best available) only matters for the gram engine.
    """
    if engine == "gram":
        return gram_block_moments(
            cfg, *gram_draws(cfg, block_key(cfg.seed, block), size, kernel), kernel=kernel
        )
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(block,)))
    steps = dense_steps(cfg, dense_tokens(cfg, rng, size), block)  # tokens (size, n, d)
    return Moments.of(stack_features(steps, cfg.n, cfg.layers, size), control_slice(cfg.n))


def stack_features(steps, n: int, layers: int, size: int) -> np.ndarray:
    """The per-sample features (size, layers, F) of :func:`recency_lib.features.layer_features` from
    ``steps``, an iterable of (layer, scores (size, n, n), attention, sq_norms (size, n))."""
    feats = np.empty((size, layers, n_features(n)))  # (size, layers, F)
    for l, s, a, sq in steps:
        feats[:, l] = layer_features(s, a, sq)
    return feats


def layer_steps(
    x: np.ndarray, *, norm: str, d: int, gamma: float, eps: float, layers: int, centred: bool
):
    """The paper's layer (:func:`recency_lib.model.layer`) applied ``layers`` times to ``x``;
    yields (layer, scores, attention, sq_norms) of each."""
    for l in range(layers):
        x, s, a, sq = layer(x, norm=norm, d=d, gamma=gamma, eps=eps, centred=centred)
        yield l, s, a, sq


def dense_steps(cfg: SimConfig, x: np.ndarray, block: int):
    """The dense engine's layers for the tokens ``x`` (batch, n, d) of ``block``: the paper's layer,
    or the extended one when an extension beyond the paper is on."""
    if cfg.extended:
        return extensions.run_block(cfg, x, block)
    return layer_steps(
        x, norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps, layers=cfg.layers, centred=False
    )


# -- many blocks -----------------------------------------------------------------------------------


def _block_sizes(samples: int, bsize: int, first: int, count: int) -> Iterator[tuple[int, int]]:
    """(k, size) of blocks first .. first + count - 1 of a run of ``samples`` (the last may be short)."""
    for k in range(first, first + count):
        yield k, min(bsize, samples - k * bsize)


def stream_key(cfg: SimConfig) -> tuple:
    """Gram configs with equal keys draw the same random numbers for every block: the draws depend
    only on the seed, n, the degrees of freedom the normalization sees, whether alpha = 1, and the
    number of samples (it sets the last block's size); not on alpha in [0, 1), gamma, eps or layers."""
    return (cfg.seed, cfg.n, degrees_of_freedom(cfg), cfg.alpha == 1.0, cfg.samples)


def _chunk(cfg_dicts: list[dict], engine: str, kernel: str, bsize: int, first: int, count: int):
    """Executor task: ``count`` consecutive blocks of gram configs that share their random stream
    (:func:`stream_key`), each block's draws made once, or of one dense config. Returns,
    per config, its compute seconds (the shared draws split evenly) and its (block, moments),
    unmerged (the merge order is global)."""
    cfgs = [SimConfig.from_dict(c) for c in cfg_dicts]
    blocks = list(_block_sizes(cfgs[0].samples, bsize, first, count))
    if engine == "gram":
        return gram_team_moments(cfgs, blocks, kernel)
    seconds, out = [0.0], [[]]
    for k, size in blocks:
        t0 = time.perf_counter()
        out[0].append((k, block_moments(cfgs[0], engine, k, size, kernel)))
        seconds[0] += time.perf_counter() - t0
    return seconds, out


def _one_blas_thread():
    """OpenBLAS held to one thread (threadpoolctl) in a process's main thread: the products are small, and
    an idle OpenBLAS thread spins after each call. No-op without threadpoolctl and in other threads (the
    limit is the process's)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    if threading.current_thread() is threading.main_thread():
        return threadpool_limits(limits=1, user_api="blas")
    return contextlib.nullcontext()


def _worker_chunk(*args):
    """:func:`_chunk` as an executor task, BLAS held to one thread in a worker process (one per core)."""
    with _one_blas_thread():
        return _chunk(*args)


def _finite(a: np.ndarray) -> bool:
    """Whether every entry of ``a`` is finite, in one pass without a boolean array: a sum is finite
    only if every term is (a sum of finite terms that overflows sends the caller to the full check)."""
    return bool(np.isfinite(np.add.reduce(a, axis=None)))


def simulate_many(
    configs: Iterable[SimConfig],
    *,
    chunk_size: int | None = None,
    executor: Executor | None = None,
    progress: bool | None = None,
) -> list[SimResult]:
    """Simulate several configs, spreading whole configs and sample blocks over ``executor``.

    Results are identical to running each config alone with :func:`simulate`. Configs that share
    their random stream (:func:`stream_key`, e.g. the LayerNorm settings of Figure 1) are run
    block by block together, each block drawn once. ``chunk_size``
    (samples per task, rounded up to whole blocks) trades scheduling overhead against memory;
    it never changes the result. ``executor`` is any ``concurrent.futures.Executor`` (e.g. a
    ``ProcessPoolExecutor`` or a Dask client's ``get_executor()``); default: in-process.
    """
    if isinstance(configs, (SimConfig, str)) or not isinstance(configs, Iterable):
        raise ValueError(
            f"configs={short(configs)} is not allowed; allowed: an iterable of SimConfig objects"
        )
    configs = list(configs)
    for i, cfg in enumerate(configs):
        if not isinstance(cfg, SimConfig):
            raise ValueError(
                f"configs[{i}]={short(cfg)} is not a SimConfig; allowed: an iterable of SimConfig objects"
            )
    if chunk_size is not None:
        chunk_size = check_int("chunk_size", chunk_size, 1)
    progress = None if progress is None else check_bool("progress", progress)
    workers = 1 if executor is None else (os.cpu_count() or 1)
    for cfg in configs:  # memory, before any work
        require_memory(cfg, resolve_engine(cfg), workers)
    # One kernel for the whole run, chosen here (never per worker), so that results do not depend
    # on which worker has it; loaded once here, so forked workers inherit it.
    kernel = kernel_name() if any(resolve_engine(c) == "gram" for c in configs) else "numpy"
    if kernel == "c":
        warm_up()
    plans = [(resolve_engine(cfg), block_size(cfg, resolve_engine(cfg))) for cfg in configs]
    teams: dict = {}  # configs sharing a random stream, in first-seen order
    for ci, (cfg, (engine, _)) in enumerate(zip(configs, plans)):
        teams.setdefault(stream_key(cfg) if engine == "gram" else ("dense", ci), []).append(ci)
    teams = list(teams.values())

    def per_task(team) -> int:  # blocks per task
        cfg, (_, bsize) = configs[team[0]], plans[team[0]]
        blocks = -(-cfg.samples // bsize)
        # a task's result is one unmerged Moments of (layers, F) arrays per block and config: bound its bytes
        per_block = sum(24 * configs[c].layers * n_features(cfg.n) for c in team)
        by_memory = max(1, _TASK_RESULT_BYTES // per_block)
        if chunk_size is not None:
            return max(1, math.ceil(chunk_size / bsize))
        if executor is None:
            return max(1, min(_INPROCESS_TASK_BLOCKS, _INPROCESS_RESULT_BYTES // per_block))
        return max(
            1, min(_MAX_TASK_BLOCKS, by_memory, math.ceil(blocks / (4 * workers)))
        )  # balance

    def tasks():  # (team, first block, blocks), lazily
        for team in teams:
            blocks, per = -(-configs[team[0]].samples // plans[team[0]][1]), per_task(team)
            for first in range(0, blocks, per):
                yield team, first, min(per, blocks - first)

    groups: list[list[Moments | None]] = [[None, None] for _ in configs]  # even, odd blocks
    elapsed = [0.0] * len(configs)  # compute seconds per config, summed over its tasks
    bar = Progress(sum(c.samples for c in configs), progress)

    dicts = [cfg.to_dict() for cfg in configs]  # what a task gets (once per config, not per task)

    def args(team, first, count):
        engine, bsize = plans[team[0]]
        return [dicts[c] for c in team], engine, kernel, bsize, first, count

    def fold(team, result):
        for ci, seconds, moments in zip(team, *result):
            elapsed[ci] += seconds
            for k, m in moments:  # tasks are folded in submission order
                g = groups[ci]
                g[k % 2] = m if g[k % 2] is None else g[k % 2].merge_into(m)  # m and g are ours
                bar.update(m.count)
            touched = [
                groups[ci][p] for p in {k % 2 for k, _ in moments}
            ]  # the groups this task changed
            if not all(_finite(x.mean) and _finite(x.m2) for x in touched):  # overflow: stop now
                _to_result(configs[ci], *plans[ci], groups[ci], 0.0, None).check_finite()

    with _one_blas_thread():  # here as in the workers: small products
        try:
            _run(tasks, args, fold, executor, workers)
        finally:
            bar.close()
        return [
            _to_result(
                cfg, plan[0], plan[1], g, t, kernel if plan[0] == "gram" else None
            ).check_finite()
            for cfg, plan, g, t in zip(configs, plans, groups, elapsed)
        ]


def _run(tasks, args, fold, executor, workers: int) -> None:
    """Every task of :func:`simulate_many`, in-process or on ``executor``, folded in submission order."""
    if executor is None:
        for t in tasks():
            fold(t[0], _chunk(*args(*t)))
        return
    window = 2 * workers + 2  # bounded in-flight tasks: bounded memory
    pending: deque = deque()

    def submit(t):
        pending.append((t, executor.submit(_worker_chunk, *args(*t))))

    it = tasks()
    for t in it:
        submit(t)
        if len(pending) >= window:
            break
    while pending:
        t, fut = pending.popleft()
        fold(t[0], fut.result())
        t = next(it, None)
        if t is not None:
            submit(t)


def simulate(
    cfg: SimConfig,
    *,
    chunk_size: int | None = None,
    executor: Executor | None = None,
    progress: bool | None = None,
) -> SimResult:
    """Monte-Carlo means and standard errors of scores, attention and recency metrics for ``cfg``.

    Memory does not grow with ``cfg.samples`` (blocks are reduced to moments as they finish).
    Same config and seed -> bitwise-identical result for any ``chunk_size`` and ``executor``.
    """
    return simulate_many([cfg], chunk_size=chunk_size, executor=executor, progress=progress)[0]


def _to_result(
    cfg: SimConfig, engine: str, bsize: int, groups: list, elapsed: float, kernel: str | None
) -> SimResult:
    n, L = cfg.n, cfg.layers
    lay, ctrl = feature_layout(n), control_slice(n)
    rows, cols = tril_index(n)
    m = merged(groups)
    mean, sem = m.mean, m.sem
    cv_mean, cv_se = mean.copy(), sem.copy()  # plain where no control exists
    if controls_valid(cfg):  # layer 1 exchangeable (not RoPE)
        cv_mean[:, ctrl], cv_se[:, ctrl] = control_variate(
            groups, control_means(n)
        )  # (layers, controls)

    def square(which, fill, source):  # (layers, F) -> (layers, n, n)
        out = np.full((L, n, n), fill)
        out[:, rows, cols] = source[:, lay[which]]
        return out

    off_i, off_j = np.tril_indices(n, -1)
    step_i, step_j = off_i[off_j >= 1], off_j[off_j >= 1]  # 1 <= j < i, row-major
    diag = np.arange(1, n)

    def diffs(source):  # S_ij - S_i,j-1 at [l, i, j], 1 <= j <= i
        out = np.full((L, n, n), np.nan)
        out[:, diag, diag] = source[:, lay["diag_step"]]
        out[:, step_i, step_j] = source[:, lay["step"]]
        return out

    def row_trend(source):  # (layers, n), NaN for rows 0 and 1
        out = np.full((L, n), np.nan)
        out[:, 2:] = source[:, lay["row_trend"]]
        return out

    def scalar(which, source):  # (layers,)
        return source[:, lay[which].start].copy()

    return SimResult(
        config=cfg,
        engine=engine,
        score_mean=square("score", np.nan, mean),
        score_sem=square("score", np.nan, sem),
        attn_mean=square("attn", 0.0, mean),
        attn_sem=square("attn", 0.0, sem),
        diff_mean=diffs(mean),
        diff_sem=diffs(sem),
        recency_probability=scalar("rp", mean),
        recency_probability_sem=scalar("rp", sem),
        sq_norm_mean=mean[:, lay["sq_norm"]].copy(),
        sq_norm_sem=sem[:, lay["sq_norm"]].copy(),
        diff_cv_mean=diffs(cv_mean),
        diff_cv_sem=diffs(cv_se),
        row_trend_mean=row_trend(mean),
        row_trend_sem=row_trend(sem),
        row_trend_cv_mean=row_trend(cv_mean),
        row_trend_cv_sem=row_trend(cv_se),
        trend_mean=scalar("trend", mean),
        trend_sem=scalar("trend", sem),
        trend_cv_mean=scalar("trend", cv_mean),
        trend_cv_sem=scalar("trend", cv_se),
        recency_probability_cv=scalar("rp", cv_mean),
        recency_probability_cv_sem=scalar("rp", cv_se),
        block_size=bsize,
        library_version=__version__,
        elapsed_seconds=float(elapsed),
        extra={"kernel": kernel} if kernel else {},
    )


def _block_trajectories(cfg: SimConfig, engine: str, k: int, size: int, kernel: str | None):
    """Scores and attention (size, layers, n, n) of block ``k``, drawn and computed as :func:`simulate`
    draws and computes that block (scores NaN and attention 0 above the diagonal), and the squared norms
    (size, layers, n) of the state fed to each layer, as the normalization sees it."""
    n, L = cfg.n, cfg.layers
    if engine == "gram":
        rows, cols = tril_index(n)
        lay = feature_layout(n)
        chi2, normals = gram_draws(cfg, block_key(cfg.seed, k), size, kernel)
        kernels = kernels_for(kernel)
        if kernels is None:
            _, f = gram_block_moments(cfg, chi2, normals, kernel=kernel, features=True)  # (B, L, F)
        else:
            f = np.empty((L, n_features(n), size))  # the kernel's layout: (L, F, B)
            _gram_call(kernels, cfg, chi2, normals, *(x[0] for x in _gram_sums(cfg, 1)), f)
            f = f.transpose(2, 0, 1)  # (B, L, F)
        s = np.full((size, L, n, n), np.nan)
        a = np.zeros((size, L, n, n))
        s[:, :, rows, cols], a[:, :, rows, cols] = f[:, :, lay["score"]], f[:, :, lay["attn"]]
        return s, a, np.ascontiguousarray(f[:, :, lay["sq_norm"]])
    s_l, a_l, q_l = [], [], []
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,)))
    for _, s, a, sq in dense_steps(cfg, dense_tokens(cfg, rng, size), k):
        s_l.append(np.where(np.tri(n, dtype=bool), s, np.nan)), a_l.append(a), q_l.append(sq)
    return np.stack(s_l, axis=1), np.stack(a_l, axis=1), np.stack(q_l, axis=1)


def _require_trajectories(cfg: SimConfig, samples: int, engine: str) -> None:
    """Before any work: the scores and attention of ``samples`` sequences (kept, then concatenated: four
    (samples, layers, n, n) arrays) must fit in memory; else ValueError with the largest that fits."""
    per = 4 * 8 * cfg.layers * cfg.n**2
    room = memory_limit() - run_bytes(cfg, engine)
    if samples * per > room:
        raise ValueError(
            f"samples={samples} trajectories need about {samples * per / 2**30:.3g} GiB of memory "
            f"(n={cfg.n}, layers={cfg.layers}); allowed: samples <= {max(0, room // per)} (or "
            f"sequence_statistic or simulate, whose memory does not grow with samples)"
        )


def _trajectory_engine(cfg: SimConfig, engine: str | None) -> str:
    return (
        resolve_engine(cfg) if engine is None else check_choice("engine", engine, ("dense", "gram"))
    )


def sample_trajectories(
    cfg: SimConfig, samples: int | None = None, engine: str | None = None, kernel: str | None = None
):
    """Per-sample scores and attention of every layer, for illustrations and tests (small runs).

    Returns ``scores, attention`` of shape (samples, layers, n, n) (scores NaN and attention 0
    above the diagonal), drawn from block 0's stream onwards and computed exactly as
    :func:`simulate` draws and computes them (same blocks, same kernel), so their plain means
    match the streamed ones to float rounding. ``samples`` defaults to ``cfg.samples``.
    For a statistic of every sequence without keeping them all: :func:`sequence_statistic`.
    """
    samples = check_int("samples", cfg.samples if samples is None else samples, 1)
    engine = _trajectory_engine(cfg, engine)
    if kernel is not None:
        kernel = check_choice("kernel", kernel, ("c", "numpy"))
    bsize = block_size(cfg, engine)
    _require_trajectories(cfg, samples, engine)
    scores, attn = [], []
    total = max(2, samples)
    for k, size in _block_sizes(total, bsize, 0, -(-samples // bsize)):
        s, a, _ = _block_trajectories(cfg, engine, k, size, kernel)
        scores.append(s), attn.append(a)
    return np.concatenate(scores)[:samples], np.concatenate(attn)[:samples]


@dataclass(frozen=True)
class SequenceStatistic:
    """Mean and standard error over sequences of a per-sequence statistic (:func:`sequence_statistic`),
    (layers, k) each; ``cv_mean``/``cv_sem``: the control-variate estimates (None without a known
    layer-1 mean), computed as SimResult's ``*_cv`` fields."""

    config: SimConfig
    samples: int
    mean: np.ndarray
    sem: np.ndarray
    cv_mean: np.ndarray | None = None
    cv_sem: np.ndarray | None = None
    elapsed_seconds: float = math.nan


def sequence_statistic(
    cfg: SimConfig,
    statistic,
    *,
    samples: int | None = None,
    control_mean=None,
    engine: str | None = None,
    kernel: str | None = None,
) -> SequenceStatistic:
    """Mean and standard error over ``samples`` sequences (default ``cfg.samples``) of a statistic of
    each sequence's matrices, streamed block by block with :func:`simulate`'s random streams (memory
    of one block; the same numbers for any machine, as simulate's).

    ``statistic(scores, attention)`` receives one block, (B, layers, n, n) each (scores NaN and
    attention 0 above the diagonal), and, if it takes a keyword ``sq_norms``, the squared norms (B,
    layers, n) of the state fed to each layer as the normalization sees it; it returns (B, layers, k): k
    numbers per sequence and layer, e.g. within-row contrasts S_ij - S_ik (pairing within a sequence is
    what makes their standard error small) or differences between layers.

    ``control_mean`` (k numbers, or one for all): the exact mean of layer 1's statistic when it is
    known, e.g. 0 for a contrast of off-diagonal scores (or attention weights) of one row whose
    coefficients sum to 0: layer 1's earlier keys are exchangeable. Layer 1's values are then control
    variates for every layer, cross-fitted on the even and odd blocks (:func:`recency_lib.stats.
    control_variate`): unbiased, with honest standard errors.
    """
    if not callable(statistic):
        raise ValueError(
            f"statistic={short(statistic)} is not allowed; allowed: a function (scores, attention) -> "
            f"array (B, layers, k)"
        )
    samples = check_int("samples", cfg.samples if samples is None else samples, 2)
    engine = _trajectory_engine(cfg, engine)
    bsize = block_size(cfg, engine)
    _require_trajectories(cfg, min(samples, bsize), engine)
    mu = None
    if control_mean is not None:
        mu = np.asarray(control_mean, dtype=float)
        if mu.ndim > 1 or not np.all(np.isfinite(mu)):
            raise ValueError(
                f"control_mean={short(control_mean)} is not allowed; allowed: a finite number or a "
                f"1-d array of k finite numbers"
            )
    t0 = time.process_time()
    groups: list[Moments | None] = [None, None]  # even and odd blocks
    with _one_blas_thread():
        width = _stream_statistic(cfg, engine, kernel, statistic, samples, bsize, mu, groups)
    plain = merged(groups)
    out = dict(mean=plain.mean, sem=plain.sem)
    if mu is not None:
        if mu.ndim == 1 and mu.shape[0] != width:
            raise ValueError(
                f"control_mean has {mu.shape[0]} numbers; allowed: one, or k = {width}"
            )
        out["cv_mean"], out["cv_sem"] = control_variate(
            groups, np.broadcast_to(mu, (width,)).copy()
        )
    return SequenceStatistic(cfg, samples, elapsed_seconds=time.process_time() - t0, **out)


def _stream_statistic(cfg, engine, kernel, statistic, samples, bsize, mu, groups) -> int:
    """:func:`sequence_statistic`'s block loop: each block's statistic into the moments of its group
    (even or odd blocks, in block order); returns k, the statistic's width."""
    width = None
    norms = "sq_norms" in inspect.signature(statistic).parameters
    with Progress(samples) as bar:
        for k, size in _block_sizes(samples, bsize, 0, -(-samples // bsize)):
            s, a, sq = _block_trajectories(cfg, engine, k, size, kernel)
            x = np.asarray(statistic(s, a, sq_norms=sq) if norms else statistic(s, a), dtype=float)
            if (
                x.ndim != 3
                or x.shape[:2] != (size, cfg.layers)
                or (width is not None and x.shape[2] != width)
            ):
                raise ValueError(
                    f"statistic returned shape {x.shape}; allowed: (B, layers, k) = ({size}, "
                    f"{cfg.layers}, {width if width is not None else 'k'}) for a block of {size} sequences"
                )
            width = x.shape[2]
            m = Moments.of(x, controls=slice(0, width) if mu is not None else None)
            g = k % 2
            groups[g] = m if groups[g] is None else groups[g].merge_into(m)
            bar.update(size)
    return width
