"""Appendix B's grid: one papermill run of book/setting_template.ipynb per setting.

A run leaves ``<slug>.ipynb`` (the executed notebook), ``<slug>.json`` (its SimResult) and
``<slug>.key`` (the run key, its inputs, the runtime, the files' sha256) in ``out_dir``; a setting
whose key and files are unchanged is reused. Everything is checked before any work; a run replaces
only what the grid wrote, all three files or none, one driver at a time per folder.

    runs = run_grid("book/setting_template.ipynb", "out", [{"alpha": 0.2}, {"alpha": 0.4}])
    runs[0].load().recency_probability
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from queue import Empty

import traitlets
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_async, run_sync

from recency_lib import kernels
from recency_lib.config import SimConfig
from recency_lib.files import check_output_path
from recency_lib.result import RESULT_FILE, SimResult, is_result_file
from recency_lib.validation import brief, check_bool, check_int, check_real

from .params import (
    RESIDUAL_WEIGHTS,
    SETTING_PARAMS,
    check_out_dir,
    real_list,
    template_path,
    validate_params,
)
from .params import result_file as result_file  # the setting template's
from .sources import sources_hash

KEY_FORMAT = "companion.grid/3"
#: Appendix B's lists: finite numbers, and residual weights > 0 (each also from papermill's string).
number_list = real_list(None, None, "[0.2, 0.4]", distinct=False)
residual_weights = RESIDUAL_WEIGHTS


# -- checks ----------------------------------------------------------------------------------------


def _json(path: Path, limit: int, *keys):
    """The JSON of ``path`` (a file of at most ``limit`` bytes), its value at ``keys``, or None."""
    try:
        if path.is_file() and path.stat().st_size <= limit:
            value = json.loads(path.read_text(encoding="utf-8"))
            for key in keys:
                value = value[key]
            return value
    except (OSError, ValueError, RecursionError, LookupError, TypeError):
        pass
    return None


def is_grid_notebook(path: Path) -> bool:
    """An executed notebook of this grid: papermill recorded the ``result_path`` it ran with."""
    ran = _json(path, 2**26, "metadata", "papermill", "parameters")
    return isinstance(ran, dict) and "result_path" in ran


def is_key_file(path: Path) -> bool:
    """A key sidecar of this grid: the inputs it hashed are of a ``companion.grid/`` format."""
    return str(_json(path, 2**20, "inputs", "format")).startswith("companion.grid/")


def config_of(params: dict) -> SimConfig:
    """The SimConfig of a validated setting."""
    return SimConfig(**{k: params[k] for k in SETTING_PARAMS})


def _check_run_options(kernel, force, timeout) -> tuple[str, bool, float | None]:
    specs = KernelSpecManager().find_kernel_specs()
    if not isinstance(kernel, str) or str(kernel) not in specs:
        raise ValueError(
            f"kernel={brief(kernel)} is not an installed kernel; allowed: one of {sorted(specs)}"
        )
    if timeout is not None:
        allowed = "None or a number of seconds > 0"
        timeout = check_real("timeout", timeout, lo=0.0, lo_open=True, allowed=allowed)
    return str(kernel), check_bool("force", force), timeout


def check_targets(out_dir: Path, name: str) -> None:
    """Each output of setting ``name`` is nothing yet or a file of its kind, else a ValueError."""
    for ext, what, ours, kind in (
        (".json", "result", is_result_file, RESULT_FILE),
        (".ipynb", "notebook", is_grid_notebook, "an executed notebook of this grid"),
        (".key", "key", is_key_file, "a key sidecar of this grid"),
    ):
        path = out_dir / f"{name}{ext}"
        check_output_path(path, what, ours=ours, what=kind)


# -- names and keys --------------------------------------------------------------------------------


def _num(x) -> str:
    """Short, exact spelling of a number: 0.2 -> "0.2", 1.0 -> "1", 0.30000000000000004 stays."""
    if isinstance(x, float) and float(f"{x:g}") == x:
        return f"{x:g}"
    return repr(x) if isinstance(x, float) else str(x)


def slug(params: dict) -> str:
    """File stem of a validated setting: every parameter in it, so that no two settings collide
    (the placement where it is not the paper's pre-norm)."""
    p = params
    where = "" if p["placement"] == "pre" else f"-{p['placement']}"
    return (
        f"a{_num(p['alpha'])}-g{_num(p['gamma'])}-{p['norm']}{where}-n{p['n']}-d{p['d']}"
        f"-L{p['layers']}-s{p['samples']}-seed{p['seed']}"
    )


def run_inputs(template, params: dict, kernel: str = "python3") -> dict:
    """What a run's outputs depend on (what the key hashes), the simulator's kernel path too ("c"
    and "numpy" agree only to rounding: a rebuilt kernel runs the grid again)."""
    return {
        "format": KEY_FORMAT,
        "template": Path(template).name,
        "template_sha256": hashlib.sha256(Path(template).read_bytes()).hexdigest(),
        "params": params,
        "kernel": kernel,
        "kernel_path": kernels.kernel_name(),
        "source": sources_hash(),
    }


def run_key(template, params: dict, kernel: str = "python3") -> str:
    payload = json.dumps(run_inputs(template, params, kernel), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _reusable(key_file: Path, key: str, cfg: SimConfig) -> dict | None:
    """The sidecar when the outputs beside it are this key's (the files it hashed, a result that
    loads for ``cfg``), else None."""
    side = _json(key_file, 2**20)
    files = {"notebook": key_file.with_suffix(".ipynb"), "result": key_file.with_suffix(".json")}
    try:
        if side["key"] != key or any(side["sha256"][k] != _sha256(p) for k, p in files.items()):
            return None
        SimResult.load(files["result"], config=cfg)
    except (KeyError, TypeError, ValueError, OSError):
        return None
    return side


# -- kernels ---------------------------------------------------------------------------------------

#: The garbage collector's thresholds in the processes that build the book (the shared kernels, and
#: Sphinx: book/_ext/collector.py): a young collection every 100,000 allocations, not 700.
COLLECTOR_THRESHOLDS = (100_000, 20, 20)

#: What every notebook client of the book is given (the build's runners, papermill's for reruns
#: and the grid). After a cell's reply, wait up to 60 s for the output the kernel sent before it,
#: and fail the cell if it has not come: nbclient's own default waits 4 s, then goes on without the
#: rest of the output (its warning goes to no log). And a cell's stream outputs of one name become
#: one, their texts joined as written: the kernel sends what a cell prints every 0.2 s, so on a
#: loaded machine one print can arrive in two parts ("probe", " v1"), and myst-nb, which merges
#: streams line by line, then showed them on two lines.
CLIENT_OPTIONS = {"iopub_timeout": 60, "raise_on_iopub_timeout": True, "coalesce_streams": True}


def _ends(msg: dict, request: str | None) -> bool:
    """Is ``msg`` the IOPub status "idle" that ends the request ``request``?"""
    return (
        msg["msg_type"] == "status"
        and msg["content"].get("execution_state") == "idle"
        and msg["parent_header"].get("msg_id") == request
    )


class _Client(AsyncKernelClient):
    """A kernel client whose ``wait_for_ready`` reads IOPub up to the status "idle" that ends its
    kernel_info request. jupyter_client reads on until 0.2 s pass without a message: 0.2 s of
    waiting for every client of a kernel, three or four per notebook run here (the preparation of
    the shared kernel, nbclient's or papermill's client, the question that follows the run).
    Nothing after that status is the request's; a client's execute reads only its own replies."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply = await ensure_async(self.shell_channel.get_msg(timeout=1))
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply":
                try:  # IOPub is connected once a message arrives there
                    msg = await ensure_async(self.iopub_channel.get_msg(timeout=0.2))
                except Empty:
                    msg = None
                if msg is not None:
                    self._handle_kernel_info_reply(reply)
                    request = reply["parent_header"].get("msg_id")
                    while not _ends(msg, request):
                        try:
                            msg = await ensure_async(self.iopub_channel.get_msg(timeout=0.2))
                        except Empty:
                            break
                    return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")


class _Manager(AsyncKernelManager):
    """Keeps the clients made of it: nbclient leaves open a client of a kernel it does not own. Its
    clients are :class:`_Client`."""

    clients = traitlets.List()

    @traitlets.default("client_factory")
    def _client_factory_default(self):
        return _Client

    def client(self, **kwargs):
        self.clients.append(super().client(**kwargs))
        return self.clients[-1]

    def stop_clients(self) -> None:
        while self.clients:
            self.clients.pop().stop_channels()


#: Starts of a kernel before :func:`start_kernel` gives up: jupyter_client picks free ports and the
#: kernel binds them a moment later, so on a busy machine another process can take one in between
#: (the kernel then dies: "Address already in use").
START_ATTEMPTS = 3


def start_kernel(kernel: str, cwd, env: dict | None = None, attempts: int = START_ATTEMPTS):
    """A :class:`_Manager` of ``kernel``, started in ``cwd`` with ``env`` (default: this process's)
    and ready (it replied to kernel_info). A failed start (the kernel died, or the start raised) is
    stopped, its connection file removed, and tried again on new ports, ``attempts`` times in all;
    then RuntimeError naming the kernel and the last cause. For any kernel start of the book:
    papermill and nbclient run on it when given it as ``km=`` (and leave it running: close it with
    ``shutdown_kernel``), as :func:`run_notebook` does."""
    last = None
    for _ in range(attempts):
        km = _Manager(kernel_name=kernel)
        try:
            run_sync(km.start_kernel)(
                cwd=str(cwd),
                env=env or os.environ,
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
            )
            kc = km.client()
            kc.start_channels()
            run_sync(kc.wait_for_ready)(timeout=60)
            km.stop_clients()
            return km
        except Exception as exc:  # the kernel died (its ports taken), or did not start
            last = f"{type(exc).__name__}: {exc}"
            _discard(km)
        except BaseException:  # interrupted: no kernel left behind
            _discard(km)
            raise
    raise RuntimeError(f"the kernel {kernel!r} did not start in {attempts} attempts; last: {last}")


def _discard(km: _Manager) -> None:
    """Stop ``km``'s clients and kernel (alive or not) and remove its connection file."""
    km.stop_clients()
    with contextlib.suppress(Exception):  # already gone, or never started
        run_sync(km.shutdown_kernel)(now=True)
    with contextlib.suppress(OSError):
        km.cleanup_connection_file()


class SharedKernel:
    """A kernel for notebooks run one after another (a grid worker's, a rerun's, a build slot's),
    started on first use with ``env`` (default: this process's). Before each run its namespace is
    cleared and its working directory set, as in a fresh kernel without the start and the imports;
    a run that fails takes it down (its state is unknown) and the next starts a new one."""

    def __init__(self, kernel: str, env: dict | None = None):
        self.kernel, self.env, self.km = kernel, env, None

    def ready(self, cwd: Path) -> _Manager:
        """The kernel manager, its kernel alive, cleared and working in ``cwd``."""
        cwd = Path(cwd).resolve()
        if self.km is not None and not run_sync(self.km.is_alive)():
            self.close()
        if self.km is None:
            self.km = start_kernel(self.kernel, cwd, self.env)
        reply = self._execute(
            f"import os as _os, gc as _gc\n_os.chdir({str(cwd)!r})\n"
            f"_gc.set_threshold(*{COLLECTOR_THRESHOLDS!r})\n"
            "get_ipython().reset(new_session=True)",
            lambda msg: None,
        )
        if reply["content"].get("status") != "ok":
            self.close()
            raise RuntimeError(f"the shared kernel could not be prepared: {reply['content']}")
        return self.km

    def _execute(self, code: str, hook, timeout: float = 60):
        kc = self.km.client()
        kc.start_channels()
        try:
            run_sync(kc.wait_for_ready)(timeout=60)
            return run_sync(kc.execute_interactive)(
                code, store_history=False, timeout=timeout, output_hook=hook
            )
        finally:
            self.km.stop_clients()

    def ask(self, code: str, timeout: float = 120) -> str:
        """What ``code`` prints on the live kernel (the namespace a run left), else RuntimeError."""
        if self.km is None or not run_sync(self.km.is_alive)():
            raise RuntimeError("the kernel is not running")
        printed = []

        def hook(msg):
            if msg["header"]["msg_type"] == "stream" and msg["content"].get("name") == "stdout":
                printed.append(msg["content"]["text"])

        content = self._execute(code, hook, timeout)["content"]
        if content.get("status") != "ok":
            why = f"{content.get('ename')}: {content.get('evalue')}"
            raise RuntimeError(f"the kernel could not answer: {why}")
        return "".join(printed)

    def close(self) -> None:
        km, self.km = self.km, None
        if km is not None:
            _discard(km)


# -- outputs: one writer per folder, all files or none ---------------------------------------------


@contextlib.contextmanager
def one_writer(folder: Path, lock: str = ".grid.lock", staging: str = ".staging-"):
    """One writer at a time in ``folder`` (an exclusive lock on its file ``lock``, released when the
    process ends, however); the ``staging`` folders of one killed outright are removed once held."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        for left in folder.glob(staging + "*"):
            shutil.rmtree(left, ignore_errors=True)
        yield


def commit(pairs: list[tuple[Path, Path]], backup_dir: Path) -> None:
    """Rename each staged file over its target, in order; if one fails, undo the ones done (from
    hard links in ``backup_dir``; a new target removed), then raise."""
    done = []  # (target, backup or None, the new file's inode)
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
        for target, backup, inode in reversed(done):
            with contextlib.suppress(OSError):
                if backup is not None:
                    os.replace(backup, target)
                elif (os.lstat(target).st_dev, os.lstat(target).st_ino) == inode:  # still ours
                    os.unlink(target)
        raise


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM raises KeyboardInterrupt in the main thread meanwhile (a run cleans up as on Ctrl-C),
    then ends the process as the signal would."""
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


# -- running ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingRun:
    """One setting's outputs; ``status`` "ran" or "reused"; ``seconds``: its papermill run's."""

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


def run_notebook(shared: SharedKernel, notebook, executed, parameters: dict, cwd, **options):
    """papermill ``notebook`` into ``executed`` on ``shared``'s kernel working in ``cwd`` (its own
    ``cwd=`` would chdir the whole process); a failed or interrupted run stops that kernel."""
    import papermill

    km = shared.ready(cwd)
    try:
        papermill.execute_notebook(
            str(notebook),
            str(executed),
            parameters=parameters,
            kernel_name=shared.kernel,
            progress_bar=False,
            km=km,
            **CLIENT_OPTIONS,
            **options,
        )
    except BaseException:
        shared.close()
        raise
    finally:
        km.stop_clients()


def _run_setting(template, out_dir, params, kernel, force, timeout, shared) -> SettingRun:
    name = slug(params)
    notebook, result, key_file = (out_dir / f"{name}{ext}" for ext in (".ipynb", ".json", ".key"))
    key, cfg = run_key(template, params, kernel), config_of(params)
    side = None if force else _reusable(key_file, key, cfg)
    if side is not None:
        seconds = side.get("seconds", float("nan"))
        return SettingRun(name, params, notebook, result, key_file, key, "reused", seconds)
    check_targets(out_dir, name)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".staging-") as staging:
        staged = [Path(staging) / p.name for p in (result, notebook, key_file)]
        start = time.perf_counter()
        parameters = {**params, "result_path": result.name}  # relative: in the staging folder
        run_notebook(shared, template, staged[1], parameters, staging, execution_timeout=timeout)
        seconds = time.perf_counter() - start
        try:
            SimResult.load(staged[0], config=cfg)
        except (OSError, ValueError) as exc:  # none written, or not this setting's
            why = f"no valid result file {result.name} ({exc})"
            raise RuntimeError(f"{template.name} ran for {name} but wrote {why}") from None
        side = {
            "key": key,
            "inputs": run_inputs(template, params, kernel),
            "seconds": seconds,
            "sha256": {"notebook": _sha256(staged[1]), "result": _sha256(staged[0])},
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        staged[2].write_text(json.dumps(side, indent=1, sort_keys=True), encoding="utf-8")
        check_targets(out_dir, name)  # every target again, then all three or none
        commit(list(zip(staged, (result, notebook, key_file))), Path(staging))
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
    """Run (or reuse) every setting of ``grid`` in order and return their SettingRuns; one bad
    setting, output or option is a ValueError before anything runs. ``workers`` settings at once,
    each worker on one :class:`SharedKernel`; ``timeout``: seconds per cell (None: no limit). A
    failed notebook raises PapermillExecutionError and leaves the previous outputs as they were."""
    template = template_path(template)
    if not isinstance(grid, (list, tuple)) or not grid:
        allowed = "a non-empty list of parameter dicts"
        raise ValueError(f"grid={brief(grid)} is not allowed; allowed: {allowed}")
    workers = check_int("workers", workers, 1, len(grid))
    out_dir = check_out_dir(out_dir)
    kernel, force, timeout = _check_run_options(kernel, force, timeout)
    full = [validate_params(p, template) for p in grid]
    names = [slug(p) for p in full]
    dup = sorted({s for s in names if names.count(s) > 1})
    if dup:
        raise ValueError(f"grid has duplicate settings {dup}; allowed: each setting once")
    for name in names:
        check_targets(out_dir, name)

    local, kernels = threading.local(), []  # each worker thread keeps one kernel

    def one(p):
        if not hasattr(local, "kernel"):
            local.kernel = SharedKernel(kernel)
            kernels.append(local.kernel)
        return _run_setting(template, out_dir, p, kernel, force, timeout, local.kernel)

    with _sigterm_interrupts(), one_writer(out_dir):
        pool = ThreadPoolExecutor(max_workers=workers)  # a failed setting stops none of the others
        try:
            return list(pool.map(one, full))
        except KeyboardInterrupt:  # stop the running settings' kernels now
            pool.shutdown(wait=False, cancel_futures=True)
            for shared in kernels:
                shared.close()
            raise
        finally:
            pool.shutdown(wait=True)
            for shared in kernels:
                shared.close()


def run_setting(template, out_dir, params: dict, **options) -> SettingRun:
    """:func:`run_grid` of one setting (missing parameters: the template's defaults)."""
    return run_grid(template, out_dir, [params], **options)[0]


# -- for the pages that read the results -----------------------------------------------------------


def results_by_gamma(runs) -> dict[float, dict[float, SimResult]]:
    """The results of ``runs`` as {gamma: {alpha: SimResult}}, in the runs' order."""
    out: dict[float, dict[float, SimResult]] = {}
    for run in runs:
        out.setdefault(run.params["gamma"], {})[run.params["alpha"]] = run.load()
    return out


def run_rows(runs, start=None) -> list[dict]:
    """One table row per run: alpha, gamma, links to its notebook and result file (relative to
    ``start``, default the working directory), its runtime and whether this execution ran it."""
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
