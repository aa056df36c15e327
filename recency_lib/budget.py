"""Resource estimates: the memory and the time a simulation needs, checked before it starts.

A config is a description; whether it *fits* depends on the run (engine, block size, workers) and
on the machine. :func:`require` refuses, before any work, a run whose estimate does not fit, with
one message that names the parameter that drove it, how much the run would need and the largest
value of that parameter that fits here (the other parameters as given).

The rule (all numbers are float64, 8 bytes):

* **memory** = one process's start-up (``PROCESS_BYTES``, a bound: ~40 MB of peak RSS measured for a
  small simulation with the C kernel, ~160 MB with the numba kernel of earlier versions) per
  process, plus in each process that runs blocks the working set of one
  block (``block`` samples times the per-sample arrays of the engine, below) and the moments of one
  task (``task_blocks`` blocks, a (mean, M2, co-moment) triple of (layers, F) each, F = ``features.n_features(n)``),
  plus in the main process the moments of the tasks in flight, the running moments of the even and
  odd blocks (mean, M2 and the co-moment of the control variates) with the temporaries of a merge
  (9 (layers, F)), the result arrays twice (built, then kept; 8 (layers, n, n) matrices and a few
  vectors), and, when
  the result is written as JSON, ~60 bytes per float for the text. The total
  must not exceed the memory a run may take (:func:`memory_limit`: ``MEMORY_FRACTION`` of the
  physical memory, or of a cgroup / rlimit cap when lower, leaving room for the system; at most
  the memory available right now; ``RECENCY_LIB_MAX_MEMORY`` = bytes lowers it). Apart from
  the block list, none of it grows with ``samples``.
* **time** ~ samples x layers x (per sample-layer work) / (processes running blocks), the work
  counted as 2 n^2 w multiply-adds for the scores and the attention output (w = d dense, the Gram
  width gram), 20 n^2 for the softmax and the bookkeeping, n^3 / 6 for the recency count, plus the
  extensions' projections, at ``OPS_PER_SECOND``, plus ``BLOCK_LAYER_SECONDS`` per block and layer
  (the fixed cost of a kernel call). Rough (a factor of a few either way) and meant
  only to refuse the absurd: a run estimated above ``RECENCY_LIB_MAX_HOURS`` (default 168 hours,
  one week) is refused.
"""
from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .config import SimConfig
from .features import n_features
from .sampling import gram_width
from .validation import short

PROCESS_BYTES = 200 * 2 ** 20      # a Python process with numpy and the compiled kernel (~160 MB measured)
BLOCK_LAYER_SECONDS = 2e-5       # fixed cost of one block through one layer (measured ~4e-5 s at n = 10)
OPS_PER_SECOND = 5e9              # per process: the Figure-1 workload (n = 10) runs ~0.2-1 us per sample-layer
DEFAULT_MAX_HOURS = 168.0
MEMORY_FRACTION = 0.8             # of physical memory: the rest is the system's and other programs'
JSON_BYTES_PER_FLOAT = 60         # json.dumps of nested lists: the float objects, the lists, the text


@dataclass(frozen=True)
class Need:
    """What a run needs: peak bytes (with their parts, for the message) and rough seconds."""

    bytes: int
    seconds: float
    parts: dict


def fmt_bytes(b: float) -> str:
    """1536 -> '1.5 KiB'."""
    try:
        b = float(b)
    except OverflowError:
        return "more than 1e308 B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(b) < 1024 or unit == "EiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.{1 if b < 1e4 else 3}{'f' if b < 1e4 else 'g'}} {unit}"
        b /= 1024


def fmt_seconds(s: float) -> str:
    """Seconds in the largest unit that keeps the number >= 1 (s, min, h, days, years)."""
    try:
        s = float(s)
    except OverflowError:
        return "more than 1e308 s"
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={short(raw)} is out of range; allowed: a number > 0 (environment variable)")
    return value


def _cgroup_limits() -> list[int]:
    """Memory limits of this process's cgroup and its ancestors (cgroup v2 and v1), in bytes."""
    out = []
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if controllers == "":
            base, name = Path("/sys/fs/cgroup"), "memory.max"
        elif "memory" in controllers.split(","):
            base, name = Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes"
        else:
            continue
        folder = base / rel.lstrip("/")
        for d in (folder, *folder.parents):
            if not str(d).startswith(str(base)):
                break
            try:
                text = (d / name).read_text().strip()
            except OSError:
                continue
            if text.isdigit():
                out.append(int(text))
    return out


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_limit() -> int:
    """Bytes a run may use: ``MEMORY_FRACTION`` of physical memory (or of a cgroup or rlimit cap when
    lower), at most what is available right now (``MemAvailable``), or ``RECENCY_LIB_MAX_MEMORY``
    when lower still."""
    caps = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), *_cgroup_limits()]
    for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        soft = resource.getrlimit(which)[0]
        if soft != resource.RLIM_INFINITY:
            caps.append(soft)
    limit = MEMORY_FRACTION * min(caps)
    available = _mem_available()
    if available is not None:
        limit = min(limit, available)
    return int(min(limit, _env_number("RECENCY_LIB_MAX_MEMORY", math.inf)))


def max_seconds() -> float:
    """Longest run allowed: ``RECENCY_LIB_MAX_HOURS`` (default one week) in seconds."""
    return 3600.0 * _env_number("RECENCY_LIB_MAX_HOURS", DEFAULT_MAX_HOURS)


def _width(cfg: SimConfig, engine: str) -> int:
    """Coordinates per token: d (dense) or the Gram width min(n, degrees of freedom)."""
    return cfg.d if engine == "dense" else gram_width(cfg)


def per_sample_floats(cfg: SimConfig, engine: str) -> int:
    """Floats one sample of a block holds while it runs (the engine's per-sample arrays)."""
    n, L, w, F = cfg.n, cfg.layers, _width(cfg, engine), n_features(cfg.n)
    t = n * (n + 1) // 2
    if engine == "gram":                 # states, scores and draws of the block kernel
        return 4 * n * w + 4 * t + w + 1
    per = 3 * n * w + 3 * n * n + 2 * L * F          # tokens, states, scores, attention; features + deviations
    if cfg.extended:
        per += 3 * cfg.heads * n * n + 8 * n * w      # per-head scores, FFN hidden state
        if cfg.weights == "per_sample":
            per += L * 12 * w * w                     # W_Q, W_K, W_V, W_O (+ FFN) per sample and layer
    return per


def ops_per_sample_layer(cfg: SimConfig, engine: str) -> float:
    """Rough floating-point operations of one sample through one layer (see the module docstring)."""
    n, w = cfg.n, _width(cfg, engine)
    ops = 2.0 * n * n * w + 20.0 * n * n + n ** 3 / 6.0
    if engine == "dense":
        ops += 4.0 * n * w
    if cfg.extended:
        ops += 8.0 * n * w * w * (cfg.weights != "none") + 16.0 * n * w * w * cfg.ffn
    return ops


def need(cfg: SimConfig, engine: str, block: int, *, workers: int = 1, task_blocks: int = 1,
         in_flight: int = 1, json_out: bool = False) -> Need:
    """Peak memory and rough time of a run of ``cfg`` (module docstring).

    engine: "dense" | "gram"; block: samples per block; workers: processes running blocks (1 =
    in-process; more = a pool next to the main process); task_blocks: blocks per executor task;
    in_flight: tasks whose moments the main process may hold at once; json_out: the result is
    written as JSON text.
    """
    L, n = cfg.layers, cfg.n
    F = n_features(n)
    blocks = max(1, -(-cfg.samples // block))
    task_blocks = min(task_blocks, blocks)                    # a task never holds more blocks than the run
    moments = 3 * L * F * 8                                   # one block's (mean, M2, co-moment)
    result_floats = 8 * L * n * n + 8 * L + 6 * L * n
    in_block = block * per_sample_floats(cfg, engine) * 8 + task_blocks * moments
    main = PROCESS_BYTES + 9 * L * F * 8 + 2 * result_floats * 8          # blocks are enumerated lazily
    if json_out:
        main += JSON_BYTES_PER_FLOAT * result_floats
    if workers > 1:
        main += in_flight * task_blocks * moments
        running = workers * (PROCESS_BYTES + in_block)
    else:
        running = in_block
    seconds = (cfg.samples * L * ops_per_sample_layer(cfg, engine) / OPS_PER_SECOND
               + blocks * L * BLOCK_LAYER_SECONDS) / max(1, min(workers, blocks))
    parts = {"blocks in flight": running, "moments and result": main}
    return Need(int(main + running), float(seconds), parts)


def _largest(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """Largest m in [lo, hi] with fits(m), fits monotone decreasing; lo - 1 when none."""
    if not fits(lo):
        return lo - 1
    step = 1
    while lo + step <= hi and fits(lo + step):
        lo, step = lo + step, step * 2
    top = min(hi, lo + step)                                  # fits(lo), not fits(top) (or top = hi)
    if fits(top):
        return top
    while top - lo > 1:
        mid = (lo + top) // 2
        lo, top = (mid, top) if fits(mid) else (lo, mid)
    return lo


def require(cfg: SimConfig, engine: str, block_of: Callable[[SimConfig], int], *, workers: int = 1,
            task_blocks: int | None = None, in_flight: int = 1, json_out: bool = False) -> Need:
    """:func:`need` of the run, or ValueError when it does not fit this machine's memory or the
    time limit, naming the parameter that drove it, the need and the largest value that fits.

    ``block_of(cfg)`` gives the block size of a config (``engines.block_size`` for this engine),
    so the bounds follow the engine's own blocking; ``task_blocks`` None = one block per task.
    """
    limit, seconds = memory_limit(), max_seconds()

    def estimate(c: SimConfig, w: int = workers) -> Need:
        return need(c, engine, block_of(c), workers=w, task_blocks=task_blocks or 1,
                    in_flight=in_flight, json_out=json_out)

    got = estimate(cfg)
    if got.bytes <= limit and got.seconds <= seconds:
        return got
    memory = got.bytes > limit

    def fits(c: SimConfig, w: int = workers) -> bool:
        e = estimate(c, w)
        return (e.bytes <= limit) if memory else (e.seconds <= seconds)

    # the parameter to blame: of those that alone could make the run fit, the one whose smallest
    # value saves the most (time is linear in samples: blame samples whenever fewer would do)
    def cost(c: SimConfig, w: int = workers, t: int | None = task_blocks) -> float:
        e = need(c, engine, block_of(c), workers=w, task_blocks=t or 1, in_flight=in_flight, json_out=json_out)
        return e.bytes if memory else e.seconds

    if not memory and _largest(lambda m: _fits_replaced(fits, cfg, "samples", m), 2, cfg.samples) >= 2:
        candidates = {"samples": 2}
    else:
        candidates = {"n": 1, "layers": 1, **({"d": 2} if engine == "dense" else {})}
    options = []
    for name, low in candidates.items():
        value = getattr(cfg, name)
        top = _largest(lambda m: _fits_replaced(fits, cfg, name, m), low, value)
        options.append((top >= low, -cost(cfg.replace(**{name: low})), name, value, top, low))
    if memory and workers > 1:
        top_w = _largest(lambda w: fits(cfg, w), 1, workers)
        options.append((top_w >= 1, -cost(cfg, 1), "workers", workers, top_w, 1))
    b = block_of(cfg)
    per = min(task_blocks or 1, -(-cfg.samples // b))
    if memory and per > 1:                                       # chunk_size: samples per task
        top_t = _largest(lambda t: cost(cfg, t=t) <= limit, 1, per)
        options.append((top_t >= 1, -cost(cfg, t=1), "chunk_size", per * b, top_t * b, b))
    _, _, name, value, top, low = max(options)
    if memory:
        what = f"needs about {fmt_bytes(got.bytes)} of memory; this machine allows {fmt_bytes(limit)}"
    else:
        what = (f"would take about {fmt_seconds(got.seconds)} of compute "
                f"({workers} process{'es' if workers > 1 else ''}); the limit is {fmt_seconds(seconds)} "
                f"(RECENCY_LIB_MAX_HOURS)")
    if top >= low:
        allowed = f"{name} <= {top} with the other parameters as given"
    else:
        allowed = "smaller n, layers or samples (no value of this one alone fits)"
    raise ValueError(f"{name}={short(value)} {what} (engine {engine!r}, n={short(cfg.n)}, "
                     f"layers={short(cfg.layers)}); allowed: {allowed}")


def _fits_replaced(fits, cfg: SimConfig, name: str, value: int) -> bool:
    try:
        c = cfg.replace(**{name: value})
    except ValueError:                        # e.g. d not divisible by heads: not a candidate value
        return False
    return fits(c)


def require_json(cfg: SimConfig) -> int:
    """Bytes writing a result of ``cfg`` as JSON needs, or ValueError when that exceeds the machine's
    memory (the .npz form needs only the arrays)."""
    floats = 6 * cfg.layers * cfg.n * cfg.n + 4 * cfg.layers + 2 * cfg.layers * cfg.n
    total = JSON_BYTES_PER_FLOAT * floats
    if total > memory_limit():
        raise ValueError(f"n={short(cfg.n)}, layers={short(cfg.layers)}: writing the result as JSON needs about "
                         f"{fmt_bytes(total)} of memory; this machine allows {fmt_bytes(memory_limit())}; "
                         f"allowed: a .npz path (binary)")
    return total


def require_cosine(cfg: SimConfig, samples: int) -> None:
    """:func:`recency_lib.inputs.input_cosine_similarity`: its largest block ((batch, n, d) tokens, their
    unit vectors, (batch, n, n) cosines) must fit in memory and the work within the time limit."""
    n, d = cfg.n, cfg.d
    batch = max(1, 2 ** 20 // (n * d))
    total = PROCESS_BYTES + 8 * batch * (3 * n * d + 2 * n * n)
    seconds = samples * (2.0 * n * n * d + 4.0 * n * d) / OPS_PER_SECOND
    if total > memory_limit():
        raise ValueError(f"n={short(n)}, d={short(d)}: the cosine of every token pair needs about {fmt_bytes(total)} "
                         f"of memory; this machine allows {fmt_bytes(memory_limit())}; allowed: smaller n or d")
    if seconds > max_seconds():
        top = int(samples * max_seconds() / seconds)
        raise ValueError(f"samples={short(samples)} would take about {fmt_seconds(seconds)} (n={short(n)}, d={short(d)}); "
                         f"the limit is {fmt_seconds(max_seconds())} (RECENCY_LIB_MAX_HOURS); allowed: samples <= {top}")


def require_trajectories(cfg: SimConfig, samples: int, engine: str, block: int) -> int:
    """Bytes :func:`recency_lib.engines.sample_trajectories` needs (scores and attention of every
    sample, layer and pair, kept, then concatenated: 4 (samples, layers, n, n) arrays), or
    ValueError when that exceeds the machine's memory."""
    limit = memory_limit()
    per = 4 * cfg.layers * cfg.n * cfg.n * 8
    total = PROCESS_BYTES + samples * per + block * per_sample_floats(cfg, engine) * 8
    if total > limit:
        top = max(0, (limit - total + samples * per) // per)
        raise ValueError(f"samples={short(samples)} trajectories need about {fmt_bytes(total)} of memory "
                         f"(n={short(cfg.n)}, layers={short(cfg.layers)}); this machine allows {fmt_bytes(limit)}; "
                         f"allowed: samples <= {top} (or simulate(), whose memory does not grow with samples)")
    return total
