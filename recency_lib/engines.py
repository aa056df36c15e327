"""simulate: the paper's model, sample block by sample block, merged into a SimResult.

Read top-down, as a run goes:

    simulate_many(configs)
      plan(cfg)           -> Plan: the engine, the block size, the kernel; memory checked first
      tasks(plans)        -> consecutive blocks of configs that share their random stream
      run_task(...)       -> each block drawn, run through the layers, reduced to Moments
      merge               -> each block's Moments folded in block order (even and odd blocks apart)
      to_result(...)      -> means, standard errors, control variates: a SimResult

Engines: "gram" (the default for the paper's model) runs the layer on n x m coordinates whose
Gram matrix has the law of the tokens' (:mod:`recency_lib.sampling`): exact, cost free of d, in the
C kernel (:func:`recency_lib.kernels.gram_block`) or its numpy twin :func:`gram_features`; "dense"
runs the literal n x d model (:mod:`recency_lib.model`) and every extension. Block k draws from
``SeedSequence(seed, spawn_key=(k,))`` and blocks merge in order: any chunk size or executor gives
the same bits.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import extensions, kernels
from .config import SimConfig
from .features import (
    control_means,
    control_slice,
    controls_valid,
    feature_layout,
    kernel_offsets,
    layer_features,
    n_features,
    tril_index,
)
from .model import layer
from .placements import mean_column
from .progress import Progress
from .result import SimResult
from .sampling import (
    degrees_of_freedom,
    dense_tokens,
    gram_assemble,
    gram_centre,
    gram_draws,
    gram_width,
    sigma_cholesky,
)
from .stats import Moments, control_variate, merged
from .streams import block_key
from .validation import brief, check_bool, check_int
from .version import __version__

if TYPE_CHECKING:  # a hint only: concurrent.futures (and logging) load with a caller's executor
    from concurrent.futures import Executor

TASK_BLOCKS = 32  # blocks per in-process task (an executor's tasks: up to 256, balanced)
TASK_BYTES = 2**22  # ... while their unmerged moments stay under 4 MB
POOL_TASK_BYTES = 2**25  # an executor's task: at most 256 blocks and 32 MB of moments
STACK_BYTES = 2**20  # the kernel's sums of a task's blocks are stacked up to this size per array
PROCESS_BYTES = 200 * 2**20  # a Python process with numpy and the compiled kernel
MEMORY_FRACTION = 0.8  # of physical memory: the rest is the system's


def simulate(cfg: SimConfig, *, chunk_size=None, executor=None, progress=None) -> SimResult:
    """Means and standard errors of the scores, attention and recency metrics of ``cfg``.

    Memory does not grow with ``cfg.samples``. The same config gives bitwise the same result for any
    ``chunk_size`` (samples per task) and ``executor`` (any ``concurrent.futures.Executor``).
    """
    return simulate_many([cfg], chunk_size=chunk_size, executor=executor, progress=progress)[0]


def simulate_many(configs, *, chunk_size=None, executor: Executor | None = None, progress=None):
    """:func:`simulate` of several configs; those that share their random stream
    (:func:`stream_key`, e.g. Figure 1's LayerNorm settings) run block by block together, each block
    drawn once."""
    if isinstance(configs, SimConfig | str) or not hasattr(configs, "__iter__"):
        raise ValueError(
            f"configs={brief(configs)} is not allowed; allowed: an iterable of SimConfig"
        )
    configs = list(configs)
    for i, cfg in enumerate(configs):
        if not isinstance(cfg, SimConfig):
            raise ValueError(f"configs[{i}]={brief(cfg)} is not a SimConfig; allowed: SimConfig")
    chunk = None if chunk_size is None else check_int("chunk_size", chunk_size, 1)
    progress = None if progress is None else check_bool("progress", progress)
    workers = 1 if executor is None else (os.cpu_count() or 1)
    # one kernel for the whole run, chosen here (never per worker) and loaded before workers fork
    kernel = kernels.kernel_name()
    plans = [plan(cfg, kernel, workers) for cfg in configs]
    if kernel == "c":
        warm_up()
    groups = [[None, None] for _ in configs]  # per config: moments of its even and odd blocks
    seconds = [0.0] * len(configs)
    with _one_blas_thread(), Progress(sum(c.samples for c in configs), progress) as bar:
        work = tasks(plans, chunk, executor is not None, workers)
        for team, result in in_order(_team_task, work, executor):
            for c, spent, moments in zip(team, *result):
                seconds[c] += spent
                for k, m in moments:  # in block order
                    g = groups[c]
                    g[k % 2] = m if g[k % 2] is None else g[k % 2].merge_into(m)
                    bar.update(m.count)
                if not all(np.isfinite(np.add.reduce(g.mean, axis=None)) for g in groups[c] if g):
                    to_result(plans[c], groups[c], 0.0).check_finite()  # overflow: stop now
    return [to_result(p, g, s).check_finite() for p, g, s in zip(plans, groups, seconds)]


# -- plan ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How a config runs: its ``engine``, samples per ``block`` and ``kernel`` ("c" or "numpy")."""

    cfg: SimConfig
    engine: str
    block: int
    kernel: str

    @property
    def blocks(self) -> int:
        return -(-self.cfg.samples // self.block)

    def sizes(self, first: int, count: int) -> list[tuple[int, int]]:
        """(k, size) of blocks first .. first + count - 1 (the run's last block may be short)."""
        return [
            (k, min(self.block, self.cfg.samples - k * self.block))
            for k in range(first, first + count)
        ]


def resolve_engine(cfg: SimConfig) -> str:
    """The engine of ``cfg``: the one asked for; "auto" is gram unless an extension is on."""
    if cfg.engine == "auto":
        return "dense" if cfg.extended else "gram"
    return cfg.engine


def plan(cfg: SimConfig, kernel: str = "c", workers: int = 1) -> Plan:
    """The :class:`Plan` of ``cfg``, after checking that the run fits in memory."""
    engine = resolve_engine(cfg)
    require_memory(cfg, engine, workers)
    return Plan(cfg, engine, block_size(cfg, engine), kernel if engine == "gram" else "numpy")


def _per_sample(cfg: SimConfig, engine: str) -> tuple[int, int, int]:
    """(floats a sample of a block holds, the floats a block aims at, the smallest block)."""
    n, d, L = cfg.n, cfg.d, cfg.layers
    if engine == "dense" and cfg.extended:  # per-head scores, the FFN, weights, features
        per = 3 * cfg.heads * n * n + 8 * n * d + 2 * L * 3 * n * (n + 1) // 2
        return per + (L * 12 * d * d if cfg.weights == "per_sample" else 0), 2**21, 1
    if engine == "dense":
        return n * max(n, d), 2**17, 16
    w, t = gram_width(cfg) + mean_column(cfg), n * (n + 1) // 2
    return 3 * n * w + 3 * t + 1 + w + t, 2**19, 16


def block_size(cfg: SimConfig, engine: str) -> int:
    """Samples per random-stream block: a power of two up to 4096 fixed by (n, d, layers, engine),
    never by ``samples`` or the executor, so a run with more samples extends one with fewer."""
    per, target, smallest = _per_sample(cfg, engine)
    b = 2 ** math.floor(math.log2(max(1, target // per)))
    return int(min(4096, max(smallest, b)))


def stream_key(cfg: SimConfig) -> tuple:
    """Gram configs with equal keys draw the same numbers in every block (alpha < 1, gamma, eps,
    layers and placements without the means' column do not change the draws)."""
    key = (cfg.seed, cfg.n, degrees_of_freedom(cfg), cfg.alpha == 1.0, cfg.samples)
    return (*key, mean_column(cfg))


# -- memory ----------------------------------------------------------------------------------------


def run_bytes(cfg: SimConfig, engine: str, workers: int = 1) -> int:
    """A rough bound on a run's peak memory (it does not grow with ``samples``): per worker a
    process, a block's arrays twice and a task's moments; in the main process the merged moments."""
    per, _, _ = _per_sample(cfg, engine)
    moments = 3 * cfg.layers * n_features(cfg.n)
    sample = 2 * per + (2 * cfg.layers * n_features(cfg.n) if engine == "dense" else 0)
    task = min(256, max(1, POOL_TASK_BYTES // (8 * moments)))
    running = PROCESS_BYTES + 8 * (block_size(cfg, engine) * sample + task * moments)
    main = PROCESS_BYTES + 8 * (12 * moments + 20 * cfg.layers * cfg.n**2)
    return main + running * workers if workers > 1 else main + running - PROCESS_BYTES


def memory_limit() -> int:
    """MEMORY_FRACTION of physical memory, lowered by ``RECENCY_LIB_MAX_MEMORY`` (bytes) if set."""
    limit = MEMORY_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    raw = os.environ.get("RECENCY_LIB_MAX_MEMORY", "")
    if raw:
        try:
            cap = float(raw)
        except ValueError:
            cap = math.nan
        if not (math.isfinite(cap) and cap > 0):
            raise ValueError(
                f"RECENCY_LIB_MAX_MEMORY={brief(raw)} is out of range; allowed: bytes > 0"
            )
        limit = min(limit, cap)
    return int(limit)


def require_memory(cfg: SimConfig, engine: str, workers: int = 1) -> None:
    """Before any work: ValueError when the run does not fit, naming the largest n (for the dense
    engine, else d) that fits with the other parameters as given."""
    limit, need = memory_limit(), run_bytes(cfg, engine, workers)
    if need <= limit:
        return
    for name in ("n", "d") if engine == "dense" else ("n",):
        fits = _largest(cfg, name, lambda c: run_bytes(c, engine, workers) <= limit)
        if fits is not None:
            break
    allowed = f"{name} <= {fits} with the other parameters as given" if fits else "fewer workers"
    raise ValueError(
        f"{name}={getattr(cfg, name)} needs about {need / 2**30:.3g} GiB of memory ({engine} "
        f"engine, n={cfg.n}, d={cfg.d}, layers={cfg.layers}, {workers} worker(s)); this machine "
        f"allows {limit / 2**30:.3g} GiB; allowed: {allowed}"
    )


def _largest(cfg: SimConfig, name: str, fits) -> int | None:
    """The largest value of ``name`` up to the config's with which ``fits(config)`` (bisection; a
    d that heads or RoPE refuse is judged with one head), None if not even the least fits."""

    def fit(value):
        try:
            return fits(cfg.replace(**{name: value}))
        except ValueError:
            return fits(cfg.replace(**{name: value}, heads=1, rope=False))

    low, top = (1 if name == "n" else 2), getattr(cfg, name)
    if not fit(low):
        return None
    while top > low:
        mid = (low + top + 1) // 2
        low, top = (mid, top) if fit(mid) else (low, mid - 1)
    return low


# -- time ------------------------------------------------------------------------------------------

PILOT_SECONDS = 0.1  # a pilot grows until it has run this long, or is a tenth of the run


def pilot(cfg: SimConfig) -> tuple[int, float]:
    """(sequences, seconds) of a pilot of ``cfg`` here: the run's own first blocks, timed, from one
    block up to PILOT_SECONDS of work or a tenth of the run. Checks the memory first."""
    p = plan(cfg)
    tenth = cfg.samples // 10 // p.block * p.block  # whole blocks
    size, most = min(cfg.samples, p.block), min(cfg.samples, max(p.block, tenth))
    while True:
        start = time.perf_counter()
        simulate(cfg.replace(samples=size), progress=False)
        seconds = time.perf_counter() - start
        if seconds >= PILOT_SECONDS or size >= most:
            return size, seconds
        aim = math.ceil(size * PILOT_SECONDS / max(seconds, 1e-6) / p.block) * p.block
        size = min(most, max(2 * size, aim))


# -- one block -------------------------------------------------------------------------------------


def gram_features(cfg: SimConfig, chi2: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """The numpy twin of the C kernel's gram block (``_kernel.c``), step by step: the
    per-sample features (B, layers, F) of one block from its draws (sampling.gram_draws).
    """
    x = gram_assemble(cfg, chi2, normals)  # (B, n, m) R = L T: the kernel's coordinates()
    feats = np.empty((chi2.shape[-1], cfg.layers, n_features(cfg.n)))  # (B, layers, F)
    for l in range(cfg.layers):  # the kernel's layer(): Eqs. (1)-(3), (20) on R
        x, s, a, sq = layer(x, **_layer_args(cfg), centre=gram_centre(cfg))
        feats[:, l] = layer_features(s, a, sq)  # the kernel's steps()
    return feats


def dense_features(cfg: SimConfig, k: int, size: int) -> np.ndarray:
    """The per-sample features (size, layers, F) of dense block ``k``: Eq. (6)'s tokens through the
    paper's layer (:mod:`recency_lib.model`), or the extended one (:mod:`recency_lib.extensions`).
    """
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(k,)))
    x = dense_tokens(cfg, rng, size)  # (size, n, d)
    feats = np.empty((size, cfg.layers, n_features(cfg.n)))
    if cfg.extended:
        steps = extensions.run_block(cfg, x, k)
    else:
        steps = _layers(x, cfg)
    for l, s, a, sq in steps:
        feats[:, l] = layer_features(s, a, sq)
    return feats


def _layers(x, cfg):
    for l in range(cfg.layers):
        x, s, a, sq = layer(x, **_layer_args(cfg))
        yield l, s, a, sq


def _layer_args(cfg: SimConfig) -> dict:
    """The keywords of :func:`recency_lib.model.layer` that ``cfg`` sets."""
    return dict(norm=cfg.norm, d=cfg.d, gamma=cfg.gamma, eps=cfg.eps, placement=cfg.placement)


def kernel_sums(cfg: SimConfig, blocks: int) -> tuple[np.ndarray, ...]:
    """Outputs of ``blocks`` kernel calls: shift, s1, s2 (blocks, layers, F) and sc (controls)."""
    nf, c = n_features(cfg.n), control_slice(cfg.n)
    return (
        *(np.empty((blocks, cfg.layers, nf)) for _ in range(3)),
        np.empty((blocks, cfg.layers, nf - c.start)),
    )


def kernel_block(cfg: SimConfig, chi2, normals, sums, feats=None) -> None:
    """One gram block through the C kernel (:func:`kernels.gram_block`) into ``sums``."""
    chol = sigma_cholesky(cfg.n, cfg.c if 0.0 < cfg.alpha < 1.0 else 0.0)
    kernels.gram_block(cfg, chi2, normals, chol, kernel_offsets(cfg.n), *sums, feats)


def gram_block_moments(cfg: SimConfig, chi2, normals, kernel: str | None = None) -> Moments:
    """:class:`Moments` of one gram block from its draws: the C kernel or :func:`gram_features`."""
    if kernels.load(kernel) is None:
        return Moments.of(gram_features(cfg, chi2, normals), control_slice(cfg.n))
    sums = [a[0] for a in kernel_sums(cfg, 1)]
    kernel_block(cfg, chi2, normals, sums)
    return Moments.from_sums(chi2.shape[-1], *sums, control_slice(cfg.n))


def block_moments(cfg: SimConfig, engine: str, k: int, size: int, kernel=None) -> Moments:
    """:class:`Moments` (layers, F) of block ``k`` of ``size`` samples."""
    if engine == "gram":
        return gram_block_moments(
            cfg, *gram_draws(cfg, block_key(cfg.seed, k), size, kernel), kernel
        )
    return Moments.of(dense_features(cfg, k, size), control_slice(cfg.n))


# -- many blocks -----------------------------------------------------------------------------------


def tasks(plans: list[Plan], chunk: int | None, pooled: bool, workers: int):
    """(team, plans of the team, first block, blocks): runs of consecutive blocks of the configs
    that share a random stream (one config for the dense engine), lazily, in config order."""
    teams: dict = {}
    for c, p in enumerate(plans):
        teams.setdefault(stream_key(p.cfg) if p.engine == "gram" else ("dense", c), []).append(c)
    for team in teams.values():
        lead = plans[team[0]]
        per_block = sum(24 * plans[c].cfg.layers * n_features(lead.cfg.n) for c in team)
        if chunk is not None:
            per = math.ceil(chunk / lead.block)
        elif pooled:  # several tasks per worker, each at most 32 MB of moments
            per = min(256, POOL_TASK_BYTES // per_block, math.ceil(lead.blocks / (4 * workers)))
        else:
            per = min(TASK_BLOCKS, TASK_BYTES // per_block)
        per = max(1, per)
        for first in range(0, lead.blocks, per):
            yield team, [plans[c] for c in team], first, min(per, lead.blocks - first)


def run_task(plans: list[Plan], first: int, count: int):
    """One task: blocks first .. first + count - 1 of each plan of a team, each block drawn once for
    all. Returns per plan its compute seconds (the draws' shared evenly) and [(k, Moments), ...]."""
    lead = plans[0]
    blocks = lead.sizes(first, count)
    seconds, out = [0.0] * len(plans), [[] for _ in plans]
    if lead.engine == "dense" or lead.kernel == "numpy":
        for k, size in blocks:
            t0 = time.perf_counter()
            draws = (
                None
                if lead.engine == "dense"
                else gram_draws(lead.cfg, block_key(lead.cfg.seed, k), size, "numpy")
            )
            shared = (time.perf_counter() - t0) / len(plans)
            for c, p in enumerate(plans):
                t0 = time.perf_counter()
                m = (
                    block_moments(p.cfg, "dense", k, size)
                    if draws is None
                    else gram_block_moments(p.cfg, *draws, "numpy")
                )
                out[c].append((k, m))
                seconds[c] += shared + time.perf_counter() - t0
        return seconds, out
    # the kernel: runs of blocks of one size, their sums stacked and reduced in one call per plan
    per = max(1, STACK_BYTES // max(8 * p.cfg.layers * n_features(p.cfg.n) for p in plans))
    for run in _runs(blocks, per):
        size, sums = run[0][1], [kernel_sums(p.cfg, len(run)) for p in plans]
        for b, (k, _) in enumerate(run):
            t0 = time.perf_counter()
            draws = gram_draws(lead.cfg, block_key(lead.cfg.seed, k), size, "c")
            shared = (time.perf_counter() - t0) / len(plans)
            for c, p in enumerate(plans):
                t0 = time.perf_counter()
                kernel_block(p.cfg, *draws, [a[b] for a in sums[c]])
                seconds[c] += shared + time.perf_counter() - t0
        for c, p in enumerate(plans):
            t0 = time.perf_counter()
            moments = Moments.from_sums(size, *sums[c], control_slice(p.cfg.n)).unstack()
            out[c].extend(zip((k for k, _ in run), moments))
            seconds[c] += time.perf_counter() - t0
    return seconds, out


def _runs(blocks: list[tuple[int, int]], per: int):
    """``blocks`` cut into runs of at most ``per`` blocks of one size."""
    run = []
    for block in blocks:
        if run and (len(run) == per or block[1] != run[0][1]):
            yield run
            run = []
        run.append(block)
    if run:
        yield run


def in_order(fn, jobs, executor: Executor | None):
    """``fn(*job)`` of every job, in order: in-process, or on ``executor`` (BLAS held to one thread
    in a worker: one worker per core) with a bounded number of jobs in flight (bounded memory)."""
    if executor is None:
        for job in jobs:
            yield fn(*job)
        return
    pending: deque = deque()
    for job in jobs:
        pending.append(executor.submit(_one_thread_call, fn, *job))
        if len(pending) > 2 * (os.cpu_count() or 1) + 2:
            yield pending.popleft().result()
    for future in pending:
        yield future.result()


def _one_thread_call(fn, *args):
    with _one_blas_thread():
        return fn(*args)


def _team_task(team: list[int], plans: list[Plan], first: int, count: int):
    return team, run_task(plans, first, count)


def _one_blas_thread():
    """OpenBLAS held to one thread in a process's main thread (the products are small; an idle
    OpenBLAS thread spins after each call)."""
    if threading.current_thread() is not threading.main_thread():
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def warm_up() -> None:
    """Load the compiled kernel now (its first call maps the library); no-op without it."""
    if kernels.load() is not None:
        cfg = SimConfig(alpha=0.5, gamma=1.0, n=3, d=4, layers=2, samples=4)
        gram_block_moments(cfg, *gram_draws(cfg, (0, 0, 0), 4, "c"), "c")


# -- the result ------------------------------------------------------------------------------------


def to_result(p: Plan, groups: list, seconds: float) -> SimResult:
    """The :class:`SimResult` of a plan's merged even and odd groups of blocks."""
    cfg, n, L = p.cfg, p.cfg.n, p.cfg.layers
    lay, rows, cols = feature_layout(n), *tril_index(n)
    m = merged(groups)
    mean, sem = m.mean, m.sem  # (layers, F)
    cv_mean, cv_se = mean.copy(), sem.copy()  # plain where no control exists
    if controls_valid(cfg):  # layer 1's tokens exchangeable (not RoPE)
        ctrl = control_slice(n)
        cv_mean[:, ctrl], cv_se[:, ctrl] = control_variate(groups, control_means(n))
    off_i, off_j = np.tril_indices(n, -1)
    step_i, step_j = off_i[off_j >= 1], off_j[off_j >= 1]  # 1 <= j < i, row-major
    diag = np.arange(1, n)

    def square(which, fill, source):  # (layers, F) -> (layers, n, n)
        out = np.full((L, n, n), fill)
        out[:, rows, cols] = source[:, lay[which]]
        return out

    def diffs(source):  # S_ij - S_i,j-1 at [l, i, j], 1 <= j <= i
        out = np.full((L, n, n), np.nan)
        out[:, diag, diag] = source[:, lay["diag_step"]]
        out[:, step_i, step_j] = source[:, lay["step"]]
        return out

    def row_trend(source):  # (layers, n), NaN in rows 0 and 1
        out = np.full((L, n), np.nan)
        out[:, 2:] = source[:, lay["row_trend"]]
        return out

    def scalar(which, source):  # (layers,)
        return source[:, lay[which].start].copy()

    return SimResult(
        config=cfg,
        engine=p.engine,
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
        block_size=p.block,
        library_version=__version__,
        elapsed_seconds=float(seconds),
        extra={"kernel": p.kernel} if p.engine == "gram" else {},
    )
