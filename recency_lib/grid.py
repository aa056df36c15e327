"""Run the parameterized setting notebook over a grid of settings with papermill (Appendix B).

One *setting* is one run of the template notebook (``book/setting_template.ipynb``) with one set
of parameters. :func:`run_setting` executes it with papermill and leaves, in ``out_dir``:

* ``<slug>.ipynb`` -- the executed notebook (figures, tables, the injected parameters);
* ``<slug>.json``  -- its result, ``SimResult.save`` (lossless; read back with ``SimResult.load``);
* ``<slug>.key``   -- a JSON sidecar: the run key, the inputs it was computed from, the runtime.

The slug spells out every parameter (``a0.2-g1-layernorm-n10-d64-L4-s100000-seed0-z3``).

Reruns only when an input changed: the key is a sha256 of the template file's bytes, the
parameters (defaults of the template filled in, types normalized), the kernel name and
:func:`recency_lib.cache.source_hash` (every ``.py`` file of the package). When the sidecar holds
the same key and both output files exist, nothing runs.

Outputs are all-or-nothing: papermill runs in a private staging folder inside ``out_dir`` (which
is also the notebook's working directory, set explicitly for its kernel); only after it succeeded, and its result file loads and
matches the requested setting, are the two files moved into place (``os.replace``) and the key
written. A failed run leaves the previous outputs (if any) untouched and nothing half-written.

Parameters are validated before any work (:func:`validate_params`: ``SimConfig`` rules, ``z`` > 0,
no unknown names): a bad setting raises ``ValueError`` and nothing is written.

    from recency_lib import SimResult
    from recency_lib.grid import run_grid
    runs = run_grid("book/setting_template.ipynb", "out", [{"alpha": 0.2}, {"alpha": 0.4, "gamma": 1}])
    SimResult.load(runs[0].result).recency_probability
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import numbers
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .config import SimConfig
from .result import SimResult, atomic_write_text
from .validation import check_int, check_z

#: Parameters of the template that describe the setting (all of SimConfig's but engine/eps, and z).
SETTING_PARAMS = ("alpha", "gamma", "norm", "n", "d", "layers", "samples", "seed", "z")
#: Parameters the driver sets itself.
DRIVER_PARAMS = ("result_path",)
KEY_FORMAT = "recency_lib.grid/1"


# -- validation --------------------------------------------------------------------------------

def result_file(result_path: str = "") -> Path:
    """Where the template writes its result: ``result_path``, or ``setting_result.json`` when empty
    (relative paths are relative to the working directory)."""
    if not isinstance(result_path, (str, os.PathLike)):
        raise ValueError(f"result_path={result_path!r} is not a path; allowed: a string (\"\" = setting_result.json)")
    return Path(result_path) if str(result_path) else Path("setting_result.json")


def template_defaults(template) -> dict:
    """The template's parameters and their defaults, read from its ``parameters`` cell."""
    import papermill

    template = Path(template)
    if not template.is_file():
        raise ValueError(f"template={str(template)!r} does not exist; allowed: a notebook with a 'parameters' cell")
    info = papermill.inspect_notebook(str(template))
    if not info:
        raise ValueError(f"template={str(template)!r} has no parameters; allowed: a notebook with a 'parameters' cell")
    out = {}
    for name, spec in info.items():
        try:
            out[name] = ast.literal_eval(spec["default"])
        except (ValueError, SyntaxError):
            out[name] = spec["default"]
    return out


def validate_params(params: dict, template=None) -> dict:
    """Check one setting and return it complete and normalized (builtin int/float/str).

    Missing parameters take the template's defaults (``template`` given) or SimConfig's.
    Raises ValueError (SimConfig's message, e.g. "alpha=1.5 is out of range; ...") before any
    work is done; unknown names and ``result_path`` (set by the driver) are rejected too.
    """
    if not isinstance(params, dict):
        raise ValueError(f"params={params!r} is not a dict; allowed: a dict of {', '.join(SETTING_PARAMS)}")
    allowed = set(SETTING_PARAMS)
    if template is not None:
        defaults = template_defaults(template)
        missing = allowed - set(defaults)
        if missing:
            raise ValueError(f"template={str(template)!r} lacks the parameter(s) {sorted(missing)}; "
                             f"allowed: a template with parameters {', '.join(SETTING_PARAMS)}")
    else:
        defaults = {**SimConfig().to_dict(), "z": 3.0}
    unknown = set(params) - allowed
    if unknown:
        extra = " (set by the driver)" if unknown & set(DRIVER_PARAMS) else ""
        raise ValueError(f"unknown parameter(s) {sorted(unknown)}{extra}; allowed: {', '.join(SETTING_PARAMS)}")
    full = {k: params.get(k, defaults[k]) for k in SETTING_PARAMS}
    cfg = SimConfig(**{k: full[k] for k in SETTING_PARAMS if k != "z"})
    out = {k: getattr(cfg, k) for k in SETTING_PARAMS if k != "z"}
    out["z"] = check_z(full["z"])
    return out


def config_of(params: dict) -> SimConfig:
    """The SimConfig of a validated setting."""
    return SimConfig(**{k: params[k] for k in SETTING_PARAMS if k != "z"})


# -- names and keys ----------------------------------------------------------------------------

def _num(x) -> str:
    """Short, exact spelling of a number: 0.2 -> "0.2", 1.0 -> "1", 0.30000000000000004 stays."""
    if isinstance(x, float):
        short = f"{x:g}"
        return short if float(short) == x else repr(x)
    return str(x)


def slug(params: dict) -> str:
    """File stem of a validated setting; every parameter appears, so distinct settings never collide."""
    p = params
    return (f"a{_num(p['alpha'])}-g{_num(p['gamma'])}-{p['norm']}-n{p['n']}-d{p['d']}-L{p['layers']}"
            f"-s{p['samples']}-seed{p['seed']}-z{_num(p['z'])}")


def run_inputs(template, params: dict, kernel: str = "python3") -> dict:
    """Everything a run's outputs depend on (what the key hashes)."""
    from .cache import source_hash

    return {
        "format": KEY_FORMAT,
        "template": Path(template).name,
        "template_sha256": hashlib.sha256(Path(template).read_bytes()).hexdigest(),
        "params": params,
        "kernel": kernel,
        "recency_lib_source": source_hash(),
    }


def run_key(template, params: dict, kernel: str = "python3") -> str:
    """sha256 of :func:`run_inputs` (template bytes + params + kernel + recency_lib source hash)."""
    payload = json.dumps(run_inputs(template, params, kernel), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


# -- running -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SettingRun:
    """One setting's outputs. ``status``: "ran" (executed now) or "reused" (key matched, skipped).
    ``seconds``: wall time of the papermill run that produced the files (kernel start included)."""

    slug: str
    params: dict
    notebook: Path
    result: Path
    key_file: Path
    key: str
    status: str
    seconds: float

    def load(self) -> SimResult:
        return SimResult.load(self.result)


def _read_sidecar(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_setting(template, out_dir, params: dict, *, kernel: str = "python3", force: bool = False,
                timeout: float | None = None) -> SettingRun:
    """Execute ``template`` for one setting with papermill; skip when its key is unchanged.

    template: the parameterized notebook; out_dir: created if needed; params: some of
    :data:`SETTING_PARAMS` (the rest take the template's defaults); kernel: kernelspec name;
    force: run even when up to date; timeout: per-cell timeout in seconds (None = no limit).
    Returns a :class:`SettingRun` (``.notebook``, ``.result``, ``.status``, ``.seconds``).
    Raises ValueError for a bad setting (before any work) and papermill's
    ``PapermillExecutionError`` when the notebook fails (previous outputs are left as they were).
    """
    template = Path(template).resolve()
    params = validate_params(params, template)
    out_dir = Path(out_dir)
    name = slug(params)
    notebook, result, key_file = (out_dir / f"{name}{ext}" for ext in (".ipynb", ".json", ".key"))
    key = run_key(template, params, kernel)

    side = _read_sidecar(key_file)
    if not force and side is not None and side.get("key") == key and notebook.is_file() and result.is_file():
        return SettingRun(name, params, notebook, result, key_file, key, "reused",
                          float(side.get("seconds", float("nan"))))

    import papermill

    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=out_dir))
    try:
        staged_nb, staged_res = staging / notebook.name, staging / result.name
        start = time.perf_counter()
        # The kernel's working directory is the staging folder, set explicitly. It is passed to
        # nbclient as resources["metadata"]["path"] (the kernel is started there) rather than as
        # papermill's ``cwd=``, which os.chdir()s the whole calling process for the duration of the
        # run: not thread-safe (run_grid's workers) and it moves a calling notebook's cwd too.
        papermill.execute_notebook(
            str(template), str(staged_nb),
            parameters={**params, "result_path": result.name},   # relative to the cwd = staging
            kernel_name=kernel, progress_bar=False, log_output=False,
            execution_timeout=timeout, resources={"metadata": {"path": str(staging)}},
            # the kernel's own log (e.g. ipykernel's start-up warnings) would otherwise land on the
            # caller's stderr, i.e. in the output of a notebook that drives the grid
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
        seconds = time.perf_counter() - start
        if not staged_res.is_file():
            raise RuntimeError(f"{template.name} ran for {name} but wrote no result file "
                               f"(expected {result.name} in its working directory)")
        res = SimResult.load(staged_res)
        if res.config != config_of(params):
            raise RuntimeError(f"{template.name} wrote a result for {res.config}, not for {config_of(params)}")
        os.replace(staged_res, result)
        os.replace(staged_nb, notebook)
        atomic_write_text(key_file, json.dumps({
            "key": key, "inputs": run_inputs(template, params, kernel), "seconds": seconds,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }, indent=1, sort_keys=True))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return SettingRun(name, params, notebook, result, key_file, key, "ran", seconds)


def run_grid(template, out_dir, grid: list[dict], *, kernel: str = "python3", force: bool = False,
             workers: int = 1, timeout: float | None = None) -> list[SettingRun]:
    """:func:`run_setting` for every setting of ``grid`` (in order); returns their SettingRuns.

    Every setting is validated first, so one bad entry raises ValueError before anything runs;
    duplicate settings are rejected. ``workers`` > 1 runs that many papermill kernels at once
    (threads; each run is its own kernel process).
    """
    template = Path(template)
    grid = list(grid)
    if not grid:
        raise ValueError("grid=[] is empty; allowed: a non-empty list of parameter dicts")
    workers = check_int("workers", workers, 1)
    full = [validate_params(p, template) for p in grid]
    names = [slug(p) for p in full]
    dup = sorted({s for s in names if names.count(s) > 1})
    if dup:
        raise ValueError(f"grid has duplicate settings {dup}; allowed: each setting once")

    def one(p):
        return run_setting(template, out_dir, p, kernel=kernel, force=force, timeout=timeout)

    if workers == 1:
        return [one(p) for p in full]
    with ThreadPoolExecutor(max_workers=int(workers)) as pool:
        return list(pool.map(one, full))


def number_list(name: str, value) -> list[float]:
    """A non-empty list of finite numbers, also from its string form: papermill's ``-p name "[0.1, 0.3]"``
    passes the string, ``-y "name: [0.1, 0.3]"`` the list; both are accepted."""
    v = value
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f"{name}={value!r} is not a list; allowed: a non-empty list of numbers, e.g. [0.2, 0.4]") from None
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, (list, tuple)) or not v or not all(
            isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x) for x in v):
        raise ValueError(f"{name}={value!r} is not allowed; allowed: a non-empty list of numbers, e.g. [0.2, 0.4]")
    return [float(x) for x in v]


# -- helpers for the pages that read the results ------------------------------------------------

def simulated_h(res: SimResult, state: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The simulated counterpart of h(j) (Eq. (40)-(41)), normalized to 1 at j = 1, with its SEM.

    h(j) = 1 / ||x_j^(1)||: the simulation measures m_j = E ||x_j^(state)||^2 (``sq_norm_mean``;
    state 1 = the output of layer 1, fed to layer 2; for LayerNorm its centred part). Returned:
    sqrt(m_1 / m_j) and its delta-method standard error
    sqrt(m_1 / m_j) * 0.5 * sqrt((s_1 / m_1)^2 + (s_j / m_j)^2), which ignores the covariance of
    m_1 and m_j (both from the same samples); the value at j = 1 is exactly 1 with error 0.
    """
    if not (0 <= state < res.sq_norm_mean.shape[0]):
        raise ValueError(f"state={state!r} is out of range; allowed: 0 .. {res.sq_norm_mean.shape[0] - 1} "
                         f"(layers={res.config.layers}; state l is the input of layer l + 1)")
    m, s = res.sq_norm_mean[state], res.sq_norm_sem[state]
    h = np.sqrt(m[0] / m)
    sem = h * 0.5 * np.sqrt((s[0] / m[0]) ** 2 + (s / m) ** 2)
    sem[0] = 0.0
    return h, sem
