"""Run the parameterized setting notebook over a grid of settings with papermill (Appendix B).

One *setting* is one run of the template notebook (``book/setting_template.ipynb``) with one set
of parameters. :func:`run_setting` executes it with papermill and leaves, in ``out_dir``:

* ``<slug>.ipynb`` -- the executed notebook (figures, tables, the injected parameters);
* ``<slug>.json``  -- its result, ``SimResult.save`` (lossless; read back with ``SimResult.load``);
* ``<slug>.key``   -- a JSON sidecar: the run key, the inputs it was computed from, the runtime.

The slug spells out every parameter (``a0.2-g1-layernorm-n10-d64-L4-s100000-seed0``).

Reruns only when an input changed: the key is a sha256 of the template file's bytes, the
parameters (defaults of the template filled in, types normalized), the kernel name and the hash of
the two packages' files (:func:`companion.sources.sources_hash`). A setting is "reused" only when the sidecar holds the same key *and* both output files
are exactly the ones it recorded (sha256 of each) *and* the result file loads as a valid result for
the setting's config; anything else (a truncated or edited file, a missing one) runs again.

Outputs replace only what the grid wrote, and all or nothing. Before any work each of the three
targets is checked: nothing there yet, or a file of its own kind (an executed notebook of this
grid, :func:`is_grid_notebook`; a result file, :func:`recency_lib.result.is_result_file`; a key
sidecar, :func:`is_key_file`), never a folder, a symlink or a foreign file (ValueError naming the
path, before papermill starts). One driver at a time writes into an ``out_dir`` (a lock file there).
papermill runs in a private staging folder inside ``out_dir`` (which is also the notebook's working
directory, set explicitly for its kernel); only after it succeeded, and its result file loads and
matches the requested setting, are the three files (the key written there too) renamed into place,
every target checked again first; if a rename fails, the ones already done are undone (the previous
files come back). A failed or interrupted run (SIGINT, or SIGTERM in the main thread) stops the
running kernels and removes its staging folder; one left by a driver killed outright (SIGKILL) is
removed by the next run in the same ``out_dir``.

Parameters are validated before any work (:func:`validate_params`: ``SimConfig`` rules and the
template's own (:data:`TEMPLATE_MINIMA`), no unknown names; ``out_dir``, ``kernel``, ``timeout``,
``workers``): a bad setting raises ``ValueError`` and nothing is written.

    from recency_lib import SimResult
    from companion.grid import run_grid
    runs = run_grid("book/setting_template.ipynb", "out", [{"alpha": 0.2}, {"alpha": 0.4, "gamma": 1}])
    SimResult.load(runs[0].result).recency_probability
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from recency_lib.config import SimConfig
from recency_lib.files import check_output_path, shown
from recency_lib.result import RESULT_FILE, SimResult, is_result_file
from recency_lib.validation import check_bool, check_int, check_real, short

from .sources import sources_hash

#: Parameters of the template that describe the setting (all of SimConfig's but engine/eps).
SETTING_PARAMS = ("alpha", "gamma", "norm", "n", "d", "layers", "samples", "seed")
#: What the template needs beyond SimConfig's rules: three tokens (the recency probability) and two
#: layers (h(j) is read from the first layer's output, Definition 1 matters from layer 2 on).
TEMPLATE_MINIMA = {"n": 3, "layers": 2}
#: Parameters the driver sets itself.
DRIVER_PARAMS = ("result_path",)
KEY_FORMAT = "companion.grid/3"


# -- validation --------------------------------------------------------------------------------


def result_file(result_path: str = "") -> Path:
    """Where the template writes its result: ``result_path``, or ``setting_result.json`` when empty
    (relative paths are relative to the working directory); checked before any work
    (:func:`recency_lib.files.check_output_path`: nothing yet or a result file of this library, in a
    writable folder; a notebook, a source file or any other file is refused, naming the path)."""
    if isinstance(result_path, bytes) or not isinstance(result_path, (str, os.PathLike)):
        raise ValueError(
            f'result_path={short(result_path)} is not a path; allowed: a string ("" = setting_result.json)'
        )
    path = Path(result_path) if os.fspath(result_path) else Path("setting_result.json")
    check_output_path(path, "result_path", ours=is_result_file, what=RESULT_FILE)
    return path


_NOTEBOOK_BYTES = 2**26  # an executed setting notebook is ~0.3 MB; larger ones are not ours


def is_grid_notebook(path: Path) -> bool:
    """An executed notebook of this grid: JSON with cells and papermill's metadata recording the
    parameters it ran with, ``result_path`` (set by the driver) among them."""
    try:
        if path.stat().st_size > _NOTEBOOK_BYTES:
            return False
        nb = json.loads(path.read_text(encoding="utf-8"))
        params = nb["metadata"]["papermill"]["parameters"]
        return (
            isinstance(nb.get("cells"), list)
            and isinstance(params, dict)
            and "result_path" in params
        )
    except Exception:  # unreadable, not JSON, another layout: not ours
        return False


def is_key_file(path: Path) -> bool:
    """A key sidecar of this grid: JSON with the run key and inputs of a ``companion.grid/`` format."""
    try:
        side = json.loads(path.read_text(encoding="utf-8")) if path.stat().st_size <= 2**20 else {}
        return isinstance(side.get("key"), str) and str(side["inputs"]["format"]).startswith(
            "companion.grid/"
        )
    except Exception:
        return False


def template_defaults(template) -> dict:
    """The template's parameters and their defaults, read from its ``parameters`` cell."""
    import papermill

    template = _template_path(template)
    try:
        info = papermill.inspect_notebook(str(template))
    except Exception as exc:  # not JSON, not a notebook, ...
        raise ValueError(
            f"template={short(template)} is not a readable notebook ({type(exc).__name__}); "
            f"allowed: a notebook with a 'parameters' cell"
        ) from None
    if not info:
        raise ValueError(
            f"template={short(template)} has no parameters; allowed: a notebook with a 'parameters' cell"
        )
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
    Raises ValueError (SimConfig's message, e.g. "alpha=1.5 is out of range; ...", or the
    template's, :data:`TEMPLATE_MINIMA`) before any work is done; unknown names and
    ``result_path`` (set by the driver) are rejected too.
    """
    if not isinstance(params, dict):
        raise ValueError(
            f"params={short(params)} is not a dict; allowed: a dict of {', '.join(SETTING_PARAMS)}"
        )
    allowed = set(SETTING_PARAMS)
    if template is not None:
        defaults = template_defaults(template)
        missing = allowed - set(defaults)
        if missing:
            raise ValueError(
                f"template={short(template)} lacks the parameter(s) {sorted(missing)}; "
                f"allowed: a template with parameters {', '.join(SETTING_PARAMS)}"
            )
    else:
        defaults = SimConfig().to_dict()
    unknown = [k for k in params if k not in allowed]
    if unknown:
        extra = " (set by the driver)" if set(unknown) & set(DRIVER_PARAMS) else ""
        raise ValueError(
            f"unknown parameter(s) {short(unknown)}{extra}; allowed: {', '.join(SETTING_PARAMS)}"
        )
    full = {k: params.get(k, defaults[k]) for k in SETTING_PARAMS}
    cfg = SimConfig(**full)
    for name, lo in TEMPLATE_MINIMA.items():
        check_int(name, getattr(cfg, name), lo)
    return {k: getattr(cfg, k) for k in SETTING_PARAMS}


def config_of(params: dict) -> SimConfig:
    """The SimConfig of a validated setting."""
    return SimConfig(**{k: params[k] for k in SETTING_PARAMS})


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
    return (
        f"a{_num(p['alpha'])}-g{_num(p['gamma'])}-{p['norm']}-n{p['n']}-d{p['d']}-L{p['layers']}"
        f"-s{p['samples']}-seed{p['seed']}"
    )


def run_inputs(template, params: dict, kernel: str = "python3") -> dict:
    """Everything a run's outputs depend on (what the key hashes), the simulator's kernel path among them
    (recency_lib.engines.kernel_name: "c", or "numpy" while the compiled kernel is missing or older than its
    source; the two agree only to rounding, so a rebuilt kernel runs the grid again)."""
    from recency_lib.kernels import kernel_name

    return {
        "format": KEY_FORMAT,
        "template": Path(template).name,
        "template_sha256": hashlib.sha256(Path(template).read_bytes()).hexdigest(),
        "params": params,
        "kernel": kernel,
        "kernel_path": kernel_name(),
        "source": sources_hash(),
    }


def run_key(template, params: dict, kernel: str = "python3") -> str:
    """sha256 of :func:`run_inputs` (template bytes + params + kernel + the two packages' files)."""
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
        if not path.is_file() or path.stat().st_size > 2**20:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _sha256(path: Path) -> str | None:
    """sha256 of a regular file's bytes, None if it is not one or cannot be read."""
    try:
        if not path.is_file():
            return None
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(2**20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def _up_to_date(side: dict | None, key: str, notebook: Path, result: Path, cfg: SimConfig) -> bool:
    """The outputs are those of this key: the sidecar's key and file hashes match and the result
    file is a valid result for ``cfg`` (a truncated or edited file is not)."""
    if side is None or side.get("key") != key:
        return False
    hashes = side.get("sha256")
    if not isinstance(hashes, dict):
        return False
    if hashes.get("notebook") != _sha256(notebook) or hashes.get("result") != _sha256(result):
        return False
    try:
        SimResult.load(result, config=cfg)
    except ValueError:
        return False
    return True


_LIVE_KERNELS: set = set()  # kernel managers of running settings (to stop on a signal)
_LIVE_LOCK = threading.Lock()


def _shutdown(km) -> None:
    """Stop the kernel of ``km`` (an AsyncKernelManager: its methods are coroutines, run here to the
    end, also from a thread that has an event loop running) if it is still alive."""
    from jupyter_core.utils import run_sync

    try:
        if run_sync(km.is_alive)():
            run_sync(km.shutdown_kernel)(now=True)
    except Exception:  # already gone
        pass


def _stop_kernels() -> None:
    """Shut down every running setting's kernel now (their runs then fail and clean up)."""
    with _LIVE_LOCK:
        kms = list(_LIVE_KERNELS)
    for km in kms:
        _shutdown(km)


# The garbage collector's thresholds in the processes that build the book (the shared kernels below,
# Sphinx: book/_ext/collector.py, which says why): a young collection every 100,000 allocations, not 700.
COLLECTOR_THRESHOLDS = (100_000, 20, 20)


class SharedKernel:
    """A kernel for notebooks run one after another (a run_setting, one run_grid worker's settings,
    one of the book's build slots: book/_ext/run_notebook.py): started
    on first use; before every run its namespace is cleared (IPython's reset, a new history session:
    execution counts start at 1) and its working directory moved to the run's staging folder, so a
    run starts as in a fresh kernel, but without a kernel start and the imports (~1.3 s a setting);
    its garbage collector runs at :data:`COLLECTOR_THRESHOLDS`.
    A run that fails or is interrupted takes the kernel down with it (its state is unknown); the next
    run starts a new one. :meth:`close` stops it."""

    def __init__(self, kernel: str):
        self.kernel = kernel
        self.km = None

    def ready(self, cwd: Path):
        """The kernel manager, its kernel alive, cleared and working in ``cwd``."""
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.utils import run_sync

        cwd = Path(cwd).resolve()  # the kernel's folder may differ from ours

        if self.km is not None and not run_sync(self.km.is_alive)():
            self.close()
        if self.km is None:
            km = AsyncKernelManager(kernel_name=self.kernel)
            with _LIVE_LOCK:
                _LIVE_KERNELS.add(km)
            self.km = km
            run_sync(km.start_kernel)(
                cwd=str(cwd), extra_arguments=["--IPKernelApp.log_level=ERROR"]
            )
        kc = self.km.client()
        kc.start_channels()
        try:
            run_sync(kc.wait_for_ready)(timeout=60)
            reply = run_sync(kc.execute_interactive)(
                f"import os as _os, gc as _gc\n_os.chdir({str(cwd)!r})\n_gc.set_threshold(*{COLLECTOR_THRESHOLDS!r})\n"
                "get_ipython().reset(new_session=True)",
                store_history=False,  # a new history session: execution counts from 1 again
                timeout=60,
                output_hook=lambda msg: None,
            )
        finally:
            kc.stop_channels()
        if reply["content"].get("status") != "ok":
            self.close()
            raise RuntimeError(
                f"the shared kernel could not be prepared for {cwd.name}: {reply['content']}"
            )
        return self.km

    def ask(self, code: str, timeout: float = 120) -> str:
        """What ``code`` prints on the live kernel (its namespace as the last run left it: a run's page
        asked what it held at its end), without a cell of any notebook; RuntimeError if it fails."""
        from jupyter_core.utils import run_sync

        if self.km is None or not run_sync(self.km.is_alive)():
            raise RuntimeError("the kernel is not running")
        printed = []

        def hook(msg):
            if msg["header"]["msg_type"] == "stream" and msg["content"].get("name") == "stdout":
                printed.append(msg["content"]["text"])

        kc = self.km.client()
        kc.start_channels()
        try:
            reply = run_sync(kc.execute_interactive)(
                code, store_history=False, timeout=timeout, output_hook=hook
            )
        finally:
            kc.stop_channels()
        if reply["content"].get("status") != "ok":
            raise RuntimeError(
                f"the kernel could not answer: {reply['content'].get('ename')}: "
                f"{reply['content'].get('evalue')}"
            )
        return "".join(printed)

    def close(self) -> None:
        if self.km is not None:
            with _LIVE_LOCK:
                _LIVE_KERNELS.discard(self.km)
            _shutdown(self.km)
            self.km = None


@lru_cache(maxsize=1)
def _shared_engine() -> str:
    """The name of papermill's nbclient engine for a kernel it does not own, registered on first use:
    it closes the run's client (its sockets and heartbeat thread) at the end and leaves the kernel
    running (nbclient would leave the client open). ``on_cell`` (a keyword of papermill's
    ``execute_notebook``, optional): called as ``on_cell(nb, index)`` before cell ``index`` of the notebook
    ``nb`` runs (markdown cells too)."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines
    from papermill.utils import merge_kwargs, remove_args

    class SharedKernelEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(
            cls,
            nb_man,
            kernel_name,
            log_output=False,
            stdout_file=None,
            stderr_file=None,
            start_timeout=60,
            execution_timeout=None,
            **kwargs,
        ):
            kwargs = remove_args(["input_path", "timeout", "startup_timeout"], **kwargs)
            on_cell = kwargs.pop("on_cell", None)
            if on_cell is not None:
                start = nb_man.cell_start

                def cell_start(cell, cell_index=None, **more):
                    on_cell(nb_man.nb, cell_index)
                    return start(cell, cell_index, **more)

                nb_man.cell_start = cell_start
            client = PapermillNotebookClient(
                nb_man,
                **merge_kwargs(
                    kwargs,
                    timeout=execution_timeout,
                    startup_timeout=start_timeout,
                    kernel_name=kernel_name,
                    log=logging.getLogger("papermill"),
                    log_output=log_output,
                    stdout_file=stdout_file,
                    stderr_file=stderr_file,
                ),
            )
            try:
                return client.execute()
            finally:
                if client.kc is not None:
                    client.kc.stop_channels()

    papermill_engines.register("recency_lib-shared-kernel", SharedKernelEngine)
    return "recency_lib-shared-kernel"


def _template_path(template) -> Path:
    if isinstance(template, bytes) or not isinstance(template, (str, os.PathLike)):
        raise ValueError(
            f"template={short(template)} is not a path; allowed: a notebook with a 'parameters' cell"
        )
    path = Path(template)
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise ValueError(
            f"template={short(template)} {what}; allowed: a notebook with a 'parameters' cell"
        )
    return path.resolve()


def _check_out_dir(out_dir) -> Path:
    """``out_dir`` as a Path: an existing writable folder or one that can be made (nothing is made)."""
    if (
        isinstance(out_dir, bytes)
        or not isinstance(out_dir, (str, os.PathLike))
        or not os.fspath(out_dir)
    ):
        raise ValueError(
            f"out_dir={short(out_dir)} is not a path; allowed: a folder (made if needed)"
        )
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"out_dir={short(out_dir)} is not a folder; allowed: a folder (made if needed)"
        )
    try:
        check_output_path(
            path / ".probe", "out_dir"
        )  # a probe of the folder: nothing is written there
    except ValueError as exc:
        raise ValueError(
            f"out_dir={short(out_dir)} cannot be written ({exc}); allowed: a writable folder"
        ) from None
    return path


def _check_run_options(kernel, force, timeout) -> tuple[str, bool, float | None]:
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().find_kernel_specs()
    if not isinstance(kernel, str) or str.__str__(kernel) not in specs:
        raise ValueError(
            f"kernel={short(kernel)} is not an installed kernel; allowed: one of {sorted(specs)}"
        )
    kernel = str.__str__(kernel)
    force = check_bool("force", force)
    if timeout is not None:
        timeout = check_real(
            "timeout", timeout, lo=0.0, lo_open=True, allowed="None or a number of seconds > 0"
        )
    return kernel, force, timeout


def run_setting(
    template,
    out_dir,
    params: dict,
    *,
    kernel: str = "python3",
    force: bool = False,
    timeout: float | None = None,
) -> SettingRun:
    """Execute ``template`` for one setting with papermill; skip when its outputs are up to date.

    template: the parameterized notebook; out_dir: created if needed; params: some of
    :data:`SETTING_PARAMS` (the rest take the template's defaults); kernel: kernelspec name;
    force: run even when up to date; timeout: per-cell timeout in seconds (None = no limit).
    Returns a :class:`SettingRun` (``.notebook``, ``.result``, ``.status``, ``.seconds``).
    Raises ValueError for a bad setting (before any work) and papermill's
    ``PapermillExecutionError`` when the notebook fails (previous outputs are left as they were).
    """
    template = _template_path(template)
    params = validate_params(params, template)
    out_dir = _check_out_dir(out_dir)
    kernel, force, timeout = _check_run_options(kernel, force, timeout)
    shared = SharedKernel(kernel)
    with _sigterm_interrupts(), _one_driver(out_dir):
        try:
            return _run_setting(template, out_dir, params, kernel, force, timeout, shared)
        except KeyboardInterrupt:
            if threading.current_thread() is threading.main_thread():
                _stop_kernels()
            raise
        finally:
            shared.close()


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM raises KeyboardInterrupt in the main thread for the duration, so that a run stops its
    kernels and removes its staging folder as on Ctrl-C, then ends by the signal (no-op in other threads)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    hit = []

    def interrupt(signum, frame):
        hit.append(signum)
        raise KeyboardInterrupt(f"terminated by {signal.Signals(signum).name}")

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        if hit and old == signal.SIG_DFL:  # cleaned up: now end as the signal says
            os.kill(os.getpid(), signal.SIGTERM)


@contextlib.contextmanager
def _one_driver(out_dir: Path):
    """One driver at a time in ``out_dir`` (an exclusive lock on ``.grid.lock`` there, released when the
    process ends, however); staging folders of drivers that died are removed once it is held."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".grid.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        for left in out_dir.glob(".staging-*"):
            shutil.rmtree(left, ignore_errors=True)
        yield


def _papermill(
    shared: SharedKernel,
    template: Path,
    staged_nb: Path,
    params: dict,
    result_name: str,
    kernel: str,
    timeout: float | None,
    staging: Path,
) -> None:
    """papermill on ``shared``'s kernel, cleared and working in ``staging`` (so the relative result
    path lands there; papermill's own ``cwd=`` would os.chdir() the whole calling process, which is
    not thread-safe); a failed or interrupted run stops that kernel."""
    import papermill

    km = shared.ready(staging)
    try:
        papermill.execute_notebook(
            str(template),
            str(staged_nb),
            parameters={**params, "result_path": result_name},
            kernel_name=kernel,
            progress_bar=False,
            log_output=False,
            execution_timeout=timeout,
            km=km,
            engine_name=_shared_engine(),
        )
    except BaseException:
        shared.close()
        raise


def _targets(out_dir: Path, name: str) -> list[tuple[Path, object, str, str]]:
    """A setting's output files (result, notebook, key: the order they are committed in, the key
    last), each with the recogniser of the file it may replace."""
    return [
        (out_dir / f"{name}.json", is_result_file, RESULT_FILE, "result"),
        (
            out_dir / f"{name}.ipynb",
            is_grid_notebook,
            "an executed notebook of this grid",
            "notebook",
        ),
        (out_dir / f"{name}.key", is_key_file, "a key sidecar of this grid", "key"),
    ]


def check_targets(out_dir: Path, name: str) -> None:
    """Before any work (and again just before the commit): each output of setting ``name`` is nothing
    yet or a file of its own kind (:func:`_targets`); a symlink, a folder or any other file is a
    ValueError naming it (this grid replaces only what it wrote)."""
    for path, ours, kind, what in _targets(out_dir, name):
        if os.path.islink(path):
            raise ValueError(
                f"{what}={shown(path)} is a symbolic link; allowed: a path to {kind} or to nothing yet "
                f"(this grid writes regular files and replaces only what it wrote)"
            )
        check_output_path(path, what, ours=ours, what=kind)


def _commit(pairs: list[tuple[Path, Path]], backup_dir: Path) -> None:
    """Rename each staged file over its target, in order; if one rename fails, undo the ones done (a
    target that existed gets its previous file back, from a hard link kept in ``backup_dir``; one
    that did not is removed), then raise."""
    done = []  # (target, backup or None, inode of the new file)
    try:
        for k, (staged, target) in enumerate(pairs):
            backup = None
            if os.path.lexists(target):
                backup = backup_dir / f".previous-{k}-{target.name}"
                try:
                    os.link(target, backup, follow_symlinks=False)
                except OSError:  # no hard links here: keep it by renaming
                    os.rename(target, backup)
            new = os.lstat(staged)
            os.replace(staged, target)
            done.append((target, backup, (new.st_dev, new.st_ino)))
    except BaseException:
        for target, backup, ino in reversed(done):
            try:
                if backup is not None:
                    os.replace(backup, target)
                else:
                    st = os.lstat(target)
                    if (st.st_dev, st.st_ino) == ino:  # still the file we put there
                        os.unlink(target)
            except OSError:
                pass
        raise


def _run_setting(
    template: Path,
    out_dir: Path,
    params: dict,
    kernel: str,
    force: bool,
    timeout: float | None,
    shared: SharedKernel,
) -> SettingRun:
    name = slug(params)
    notebook, result, key_file = (out_dir / f"{name}{ext}" for ext in (".ipynb", ".json", ".key"))
    key = run_key(template, params, kernel)
    cfg = config_of(params)

    side = _read_sidecar(key_file)
    if not force and _up_to_date(side, key, notebook, result, cfg):
        seconds = side.get("seconds")
        seconds = (
            float(seconds)
            if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
            else float("nan")
        )
        return SettingRun(name, params, notebook, result, key_file, key, "reused", seconds)

    check_targets(out_dir, name)  # before any work: what the run would replace
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".staging-") as staging:
        staging = Path(staging)
        staged_nb, staged_res, staged_key = (
            staging / notebook.name,
            staging / result.name,
            staging / key_file.name,
        )
        start = time.perf_counter()
        _papermill(shared, template, staged_nb, params, result.name, kernel, timeout, staging)
        seconds = time.perf_counter() - start
        if not staged_res.is_file():
            raise RuntimeError(
                f"{template.name} ran for {name} but wrote no result file "
                f"(expected {result.name} in its working directory)"
            )
        try:
            SimResult.load(staged_res, config=cfg)
        except ValueError as exc:
            raise RuntimeError(
                f"{template.name} wrote an invalid result for {name}: {exc}"
            ) from None
        hashes = {"notebook": _sha256(staged_nb), "result": _sha256(staged_res)}
        staged_key.write_text(
            json.dumps(
                {
                    "key": key,
                    "inputs": run_inputs(template, params, kernel),
                    "seconds": seconds,
                    "sha256": hashes,
                    "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                },
                indent=1,
                sort_keys=True,
            ),
            encoding="utf-8",
        )
        check_targets(out_dir, name)  # every target again, then all three or none
        _commit([(staged_res, result), (staged_nb, notebook), (staged_key, key_file)], staging)
    return SettingRun(name, params, notebook, result, key_file, key, "ran", seconds)


def run_grid(
    template,
    out_dir,
    grid: list[dict],
    *,
    kernel: str = "python3",
    force: bool = False,
    workers: int = 1,
    timeout: float | None = None,
) -> list[SettingRun]:
    """:func:`run_setting` for every setting of ``grid`` (in order); returns their SettingRuns.

    Every setting is validated first, so one bad entry raises ValueError before anything runs;
    duplicate settings are rejected. ``workers`` papermill runs go at once (threads), each worker on
    one kernel that runs its settings one after another, cleared between them (:class:`SharedKernel`:
    no kernel start and no imports after the first; every kernel is stopped at the end).
    """
    template = _template_path(template)
    if isinstance(grid, (dict, str, bytes)) or not hasattr(grid, "__iter__"):
        raise ValueError(
            f"grid={short(grid)} is not allowed; allowed: a non-empty list of parameter dicts"
        )
    grid = list(grid)
    if not grid:
        raise ValueError("grid=[] is empty; allowed: a non-empty list of parameter dicts")
    workers = check_int("workers", workers, 1, len(grid))
    out_dir = _check_out_dir(out_dir)
    kernel, force, timeout = _check_run_options(kernel, force, timeout)
    full = [validate_params(p, template) for p in grid]
    names = [slug(p) for p in full]
    dup = sorted({s for s in names if names.count(s) > 1})
    if dup:
        raise ValueError(f"grid has duplicate settings {dup}; allowed: each setting once")
    for name in names:  # every output of every setting, before any runs
        check_targets(out_dir, name)

    local = threading.local()  # each worker thread keeps one kernel for its settings
    kernels: list[SharedKernel] = []

    def one(p):
        if not hasattr(local, "kernel"):
            local.kernel = SharedKernel(kernel)
            kernels.append(local.kernel)
        return _run_setting(template, out_dir, p, kernel, force, timeout, shared=local.kernel)

    with _sigterm_interrupts(), _one_driver(out_dir):
        pool = ThreadPoolExecutor(max_workers=int(workers))
        try:
            return list(pool.map(one, full))
        except KeyboardInterrupt:  # stop the other settings' kernels now
            pool.shutdown(wait=False, cancel_futures=True)
            _stop_kernels()
            raise
        finally:
            pool.shutdown(wait=True)
            for shared in kernels:
                shared.close()


def number_list(name: str, value) -> list[float]:
    """A non-empty list of finite numbers, also from its string form: papermill's ``-p name "[0.1, 0.3]"``
    passes the string, ``-y "name: [0.1, 0.3]"`` the list; both are accepted."""
    v = value
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v.strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(
                f"{name}={short(value)} is not a list; allowed: a non-empty list of numbers, e.g. [0.2, 0.4]"
            ) from None
    v = [v] if not isinstance(v, (list, tuple)) else v
    allowed = "a non-empty list of numbers, e.g. [0.2, 0.4]"
    if not v:
        raise ValueError(f"{name}={short(value)} is not allowed; allowed: {allowed}")
    try:
        return [check_real(name, x, allowed=allowed) for x in v]
    except ValueError:
        raise ValueError(f"{name}={short(value)} is not allowed; allowed: {allowed}") from None


# -- helpers for the pages that read the results ------------------------------------------------


def results_by_gamma(runs) -> dict[float, dict[float, SimResult]]:
    """The result files of ``runs`` (SettingRuns of one n, d, layers, norm), loaded and arranged as
    {gamma: {alpha: SimResult}} in the runs' order: Appendix B's grids (gamma 0: Figure 3, gamma 1:
    Figures 4-5)."""
    out: dict[float, dict[float, SimResult]] = {}
    for run in runs:
        out.setdefault(run.params["gamma"], {})[run.params["alpha"]] = run.load()
    return out


def run_rows(runs, start=None) -> list[dict]:
    """One table row per run: its alpha and gamma, links that download its executed notebook and its
    result file ({download} roles, paths relative to ``start``, default the working directory, as a
    page that includes the table is built from there), the papermill runtime and whether this
    execution ran it ("executed") or found it up to date."""
    from .report import num

    base = Path.cwd() if start is None else Path(start)

    def link(path: Path, text: str) -> str:
        rel = Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()
        return f"{{download}}`{text} <{rel}>`"

    return [
        {
            "α": f"{r.params['alpha']:g}",
            "γ": f"{r.params['gamma']:g}",
            "executed notebook": link(r.notebook, "notebook"),
            "result file": link(r.result, "JSON"),
            "papermill runtime": f"{num(r.seconds, 2)} s",
            "this build": "executed" if r.status == "ran" else "up to date",
        }
        for r in runs
    ]


# -- Appendix B's parameters ---------------------------------------------------------------------------


def residual_weights(name: str, value) -> list[float]:
    """The residual weights gamma of Appendix B's runs with the residual: :func:`number_list`, each > 0 (a
    weight 0 is the grid without the residual) and each once."""
    weights = number_list(name, value)
    if any(g <= 0 for g in weights) or len(set(weights)) != len(weights):
        raise ValueError(
            f"{name}={short(value)} is not allowed; allowed: distinct residual weights > 0, e.g. [1.0]"
        )
    return weights
