"""Issue 15, principle by principle, with the issue's examples: inputs checked before any work
(sizes included), output paths, non-finite results, files from disk, the cache, faults and
signals. Generated inputs are in tests/lib/test_hostile.py; the papermill grid's faults are the book's
(tests/book/test_grid_faults.py)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from recency_lib import SimConfig, SimResult, budget, cache, cli, engines, simulate
from recency_lib.files import atomic_write
from recency_lib.result import RESULT_FILE
from recency_lib.signals import Terminated
from procutils import alive, children


SMALL = SimConfig(alpha=0.3, gamma=0.5, n=4, d=6, layers=2, samples=64, seed=1)
CLI = [sys.executable, "-m", "recency_lib", "simulate"]


def one_line_error(stderr: str, *needles: str) -> bool:
    return (stderr.count("\n") == 1 and stderr.startswith("error: ") and "Traceback" not in stderr
            and all(n in stderr for n in needles))


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def no_work(*args, **kwargs):
    raise AssertionError("work started before the input was checked")


@pytest.fixture
def good(tmp_path) -> Path:
    """A good result file at tmp_path/good.json."""
    return simulate(SMALL).save(tmp_path / "good.json")


def run_main(capsys, *argv):
    code = cli.main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. inputs, sizes included, before any work --------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["--n", "1000000", "--samples", "2"], "n=1000000"),                 # 44 TiB on main
    (["--samples", "1000000000000000"], "samples=1000000000000000"),      # the block list alone: 3.6 GB
    (["--d", "1000000000", "--engine", "dense"], "d=1000000000"),          # 149 GiB
    (["--workers", "50", "--samples", "100"], "workers=50"),
    (["--alp", "0.5"], "--alp"),                                          # options are exact
    (["--alpha", "0.1", "--alpha", "0.2"], "given twice"),
    (["--n", "1e3"], "--n"), (["--n", "10" * 200], "digits"), (["--gamma", "1e400"], "overflows"),
    (["--norm", "LayerNorm"], "norm='LayerNorm'"), (["--z", "0"], "z=0"),
])
def test_bad_input_is_one_line_before_any_work(capsys, monkeypatch, tmp_path, argv, needle):
    monkeypatch.setattr(engines, "block_moments", no_work)
    code, out, err = run_main(capsys, *argv, "--out", str(tmp_path / "r.json"))
    assert code == 2 and one_line_error(err, needle) and "allowed" in err, err
    assert len(err) < 400 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cfg, needle", [
    (SimConfig(n=10 ** 6, samples=2), "n=1000000"), (SimConfig(samples=10 ** 15), "samples="),
    (SimConfig(d=10 ** 9, engine="dense"), "d=1000000000"), (SimConfig(n=2 ** 40, layers=2 ** 40, samples=2), "="),
])
def test_api_refuses_what_cannot_fit_before_any_work(monkeypatch, cfg, needle):
    monkeypatch.setattr(engines, "block_moments", no_work)
    with pytest.raises(ValueError, match="allowed") as info:
        simulate(cfg)
    assert needle in str(info.value) and ("memory" in str(info.value) or "take about" in str(info.value))


def test_memory_estimate_does_not_grow_with_samples_and_limits_can_be_lowered(monkeypatch):
    e, b = "gram", engines.block_size(SMALL, "gram")
    need = [budget.need(SMALL.replace(samples=s), e, b).bytes for s in (100, 10 ** 12)]
    assert need[1] == need[0]          # the engines enumerate blocks lazily: nothing grows with samples
    monkeypatch.setenv("RECENCY_LIB_MAX_MEMORY", str(300 * 2 ** 20))
    with pytest.raises(ValueError, match=r"n=512 needs about .* allowed: n <= \d+"):
        simulate(SimConfig(n=512, samples=10))
    monkeypatch.setenv("RECENCY_LIB_MAX_MEMORY", "lots")
    with pytest.raises(ValueError, match="RECENCY_LIB_MAX_MEMORY='lots'"):
        simulate(SMALL)


def test_api_arguments(monkeypatch):
    monkeypatch.setattr(engines, "block_moments", no_work)
    for kw, needle in [({"executor": "x"}, "executor='x'"), ({"progress": "yes"}, "progress='yes'"),
                       ({"chunk_size": 2.5}, "chunk_size=2.5"), ({"z": float("nan")}, "z=nan")]:
        with pytest.raises(ValueError, match="allowed") as info:
            simulate(SMALL, **kw)
        assert needle in str(info.value)
    monkeypatch.undo()
    res = simulate(SMALL)
    for bad in ("a", 0, -1, float("inf"), None):
        with pytest.raises(ValueError, match="z="):
            res.definition1_at(bad)
    with pytest.raises(ValueError, match="level=2"):
        res.definition1_familywise(2)
    with pytest.raises(ValueError, match=r"samples=\d+ trajectories need"):
        engines.sample_trajectories(SMALL, 10 ** 12)
    with pytest.raises(ValueError, match="alpha=1000000000000"):
        SimConfig(alpha=10 ** 400)


def test_workers_never_exceed_blocks(capsys, monkeypatch):
    """--workers 2 for a 100-sample job (one block) runs in-process: no pool is forked."""
    monkeypatch.setattr(cli, "worker_pool", no_work)
    code, out, _ = run_main(capsys, "--samples", "100", "--workers", "2")
    assert code == 0 and "layer 4:" in out


# -- 2. output paths and non-finite results -------------------------------------------------------------

@pytest.mark.parametrize("kind", ["folder", "under_file", "proc", "long_name", "empty", "devnull", "fifo",
                                  "trailing_slash", "symlink_loop"])
def test_out_is_checked_before_any_work(capsys, monkeypatch, tmp_path, kind):
    monkeypatch.setattr(engines, "block_moments", no_work)
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
    if kind == "symlink_loop":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
    out = {"folder": tmp_path / "folder", "under_file": tmp_path / "file" / "r.json", "proc": "/proc/version",
           "long_name": tmp_path / ("r" * 300 + ".json"), "empty": "", "devnull": os.devnull,
           "fifo": tmp_path / "fifo", "trailing_slash": f"{tmp_path}/new/", "symlink_loop": tmp_path / "loop"}[kind]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_main(capsys, "--samples", "100", "--out", str(out))
    assert code == 2 and one_line_error(err, "out=", "allowed") and len(err) < 400, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to run as nobody")
def test_read_only_folder_is_refused_before_any_work():
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="hostile-ro-"))      # pytest's tmp_path is private to root
    try:
        os.chmod(top, 0o755)
        (top / "ro").mkdir(mode=0o555)
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *CLI,
                            "--samples", "100", "--out", str(top / "ro" / "r.json")], capture_output=True, text=True)
        assert p.returncode == 2 and one_line_error(p.stderr, "cannot write", "Permission denied"), p.stderr
        assert list((top / "ro").iterdir()) == []
    finally:
        shutil.rmtree(top)


def test_non_finite_result_is_an_error_and_keeps_the_good_file(capsys, good):
    before = good.read_bytes()
    code, out, err = run_main(capsys, "--gamma", "1e300", "--samples", "1000", "--out", str(good))
    assert code == 2 and one_line_error(err, "gamma=1e+300", "layer 2", "allowed"), err
    assert "0.0000 ± 0.0000" not in out and good.read_bytes() == before and temporaries(good.parent) == []
    with pytest.raises(ValueError, match=r"layers=1100: .* overflowed float64 at layer \d+ .* allowed: layers <= \d+"):
        simulate(SimConfig(norm="none", gamma=1.0, layers=1100, n=6, d=8, samples=64))
    res = simulate(SMALL)
    res.score_mean[0, 1, 0] = np.nan                       # a hole where a value is defined
    with pytest.raises(ValueError, match="score_mean"):
        res.save(good)
    assert good.read_bytes() == before


def test_replace_keeps_permissions_and_writes_through_symlinks(capsys, good):
    os.chmod(good, 0o640)
    link = good.parent / "link.json"
    link.symlink_to(good.name)
    code, _, err = run_main(capsys, "--samples", "100", "--seed", "7", "--out", str(link))
    assert code == 0, err
    assert link.is_symlink() and stat.S_IMODE(good.stat().st_mode) == 0o640
    assert SimResult.load(good).config.seed == 7 and temporaries(good.parent) == []


# -- 3. files from disk ---------------------------------------------------------------------------------

@pytest.mark.parametrize("edit, needle", [
    (lambda d: [d], "holds a list"), (lambda d: "text", "holds a str"),
    (lambda d: {k: v for k, v in d.items() if k != "config"}, "config is missing"),
    (lambda d: {**d, "config": 5}, "config=5"),
    (lambda d: {k: v for k, v in d.items() if k != "diff_sem"}, "'diff_sem' is missing"),
    (lambda d: {**d, "score_mean": d["score_mean"][:1]}, "score_mean has a list of 1"),
    (lambda d: {**d, "config": {**d["config"], "n": 5}}, "score_mean has a list of 4"),     # n = 4 arrays, n = 5 config
    (lambda d: {**d, "attn_mean": [[[None] * 4] * 4] * 2}, "attn_mean has values where none is defined"),
    (lambda d: {**d, "format": "recency_lib.SimResult/3"}, "version"),
        (lambda d: {**d, "format": "recency_lib.SimResult/1"}, "version"),      # lacks the trends: recomputed
    (lambda d: {**d, "engine": "gpu"}, "engine='gpu'"),
    (lambda d: {**d, "recency_probability": [2.0, 0.5]}, "recency_probability has the value 2.0"),
])
def test_bad_json_files_say_what_is_wrong(tmp_path, edit, needle):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(edit(simulate(SMALL).to_dict())))
    with pytest.raises(ValueError, match="allowed") as info:
        SimResult.load(path)
    assert needle in str(info.value), str(info.value)


def test_npz_flipped_byte_and_other_config(tmp_path):
    res = simulate(SMALL)
    path = res.save(tmp_path / "r.npz")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:                     # a byte of an array's stored data (past its local header)
        info = max(zf.infolist(), key=lambda i: i.file_size)
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    data[start + info.compress_size // 2] ^= 0xFF
    (tmp_path / "flip.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="damaged|not a valid|allowed"):
        SimResult.load(tmp_path / "flip.npz")
    with pytest.raises(ValueError, match="another config"):
        SimResult.load(path, config=SMALL.replace(n=5))
    assert SimResult.load(path, config=SMALL).config == SMALL


# -- 4. faults: interrupts during a save, dead writers, signals ---------------------------------------

@pytest.mark.parametrize("when", ["after_create", "during_write", "before_replace"])
@pytest.mark.parametrize("exc", [KeyboardInterrupt, lambda: Terminated(signal.SIGTERM), OSError])
def test_interrupt_anywhere_in_a_save_leaves_old_file_and_no_temporary(monkeypatch, good, when, exc):
    before = good.read_bytes()
    real_open, real_replace = os.open, os.replace

    def fail():
        raise exc()

    def open_then_fail(path, *a, **k):                    # the interrupt lands right after creation
        fd = real_open(path, *a, **k)
        if str(path).endswith(".recency-tmp") and when == "after_create":
            fail()
        return fd

    monkeypatch.setattr(os, "open", open_then_fail)
    monkeypatch.setattr(os, "replace", lambda *a: fail() if when == "before_replace" else real_replace(*a))
    with pytest.raises(BaseException):
        atomic_write(good, lambda fh: fail() if when == "during_write" else fh.write("new"), replaces=RESULT_FILE)
    monkeypatch.undo()
    assert good.read_bytes() == before and temporaries(good.parent) == []


def test_temporaries_of_dead_writers_are_swept_live_ones_kept(good):
    folder = good.parent
    dead = folder / f".good.json.{99999}.0123abcd.recency-tmp"
    dead.write_text("left by a SIGKILL")
    live = folder / ".other.json.1.89abcdef.recency-tmp"
    live.write_text("being written")
    mine = folder / ".notes.tmp"                           # not ours: never touched
    mine.write_text("user file")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDONLY);"
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", str(live)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        simulate(SMALL).save(good)
        assert not dead.exists() and live.exists() and mine.exists()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_signal_to_main_process_ends_workers_and_keeps_the_good_file(good, sig, code):
    before = good.read_bytes()
    # SIGINT at its default in the child: Python leaves an inherited SIG_IGN alone (a background job of a
    # non-interactive shell ignores Ctrl-C), and a test process of a long pytest run was seen to have it
    # (the CLI then kept simulating; its stacks showed the main thread still waiting for a result)
    p = subprocess.Popen([*CLI, "--samples", "40000000", "--workers", "2", "--out", str(good)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(children(p.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = children(p.pid)
    assert len(workers) == 2, "the pool did not start"
    time.sleep(1.0)                                        # mid-run
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:                      # show where it hangs (faulthandler: every thread)
        p.send_signal(signal.SIGABRT)
        _, err = p.communicate(timeout=20)
        pytest.fail(f"the CLI did not end within 20 s of {signal.Signals(sig).name}; its stacks:\n{err}")
    assert p.returncode == code, err
    if sig != signal.SIGKILL:
        assert one_line_error(err, "workers stopped"), err
    deadline = time.monotonic() + 5
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(w) for w in workers), "a worker outlived its main process"
    assert good.read_bytes() == before and temporaries(good.parent) == []


def test_an_ended_pool_leaves_no_manager_thread_to_race_interpreter_exit():
    # A manager thread still running at exit closed its wake-up pipe while the exit hook of
    # concurrent.futures wrote to it: "Exception ignored ... Bad file descriptor" after the CLI's
    # one-line error (seen once in the SIGTERM test above). Ending the pool must join that thread.
    from concurrent.futures import process as cf_process

    from recency_lib import workers

    def managers():
        return {t for t in threading.enumerate() if isinstance(t, cf_process._ExecutorManagerThread)}

    before = managers()
    for _ in range(5):
        with pytest.raises(RuntimeError, match="stop"):
            with workers.worker_pool(2) as pool:
                [pool.submit(time.sleep, 30) for _ in range(4)]
                time.sleep(0.2)                            # the workers are busy
                raise RuntimeError("stop")
        assert managers() - before == set()


# -- cache ----------------------------------------------------------------------------------------------

def test_cache_folder_problems_are_errors_before_any_work(monkeypatch, tmp_path):
    monkeypatch.setattr(engines, "block_moments", no_work)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="cache=.* cannot be used"):
        cache.cached_simulate(SMALL, cache=tmp_path / "file")
    entry = tmp_path / "c" / f"{cache.cache_key(SMALL)}.npz"
    entry.mkdir(parents=True)
    with pytest.raises(ValueError, match="is a folder"):
        cache.cached_simulate(SMALL, cache=tmp_path / "c")


def test_cache_key_covers_exactly_the_modules_a_simulation_imports(monkeypatch, tmp_path):
    """Editing a module no simulation runs (the command line's) keeps every entry; editing the kernel
    module (or a module it starts to import) invalidates them. The closure is read from the import
    statements, not listed."""
    copy = tmp_path / "recency_lib"
    shutil.copytree(cache.ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "ROOT", copy)
    closure = cache.module_closure("engines")
    kernel_module = engines.n_features.__module__.rpartition(".")[2]
    assert f"recency_lib.{kernel_module}" in closure and "recency_lib.cli" not in closure
    assert all(m.startswith("recency_lib") for m in closure)

    def key():
        return cache.source_hash.__wrapped__()

    base = key()
    (copy / "cli.py").write_text((copy / "cli.py").read_text() + "\n# a docstring edit\n")
    assert key() == base
    (copy / "newmod.py").write_text("X = 1\n")
    assert key() == base                                   # not imported by anything a simulation runs
    kernel = copy / f"{kernel_module}.py"
    kernel.write_text(kernel.read_text() + "\nfrom . import newmod  # noqa\n")
    edited = key()
    assert edited != base and "recency_lib.newmod" in cache.module_closure("engines")
    (copy / "newmod.py").write_text("X = 2\n")
    assert key() != edited


def test_staging_folder_swept_before_it_is_locked_is_made_again(tmp_path, monkeypatch):
    """Two grid runs share an output folder: one's sweep may remove the other's new staging folder
    between its mkdir and its flock (seen in CI: FileNotFoundError in the page). The loser makes
    another folder and goes on."""
    from recency_lib import files

    real_open, removed = os.open, []

    def racing_open(path, flags, *args, **kw):
        if flags & os.O_DIRECTORY and ".staging-" in str(path) and len(removed) < 2:
            removed.append(str(path))
            os.rmdir(path)                                   # the other run's sweep got there first
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(files.os, "open", racing_open)
    with files.staging_dir(tmp_path, ".staging-") as path:
        assert path.is_dir() and str(path) not in removed and len(removed) == 2
    assert not list(tmp_path.iterdir())
