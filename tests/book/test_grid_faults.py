"""The papermill grid of Appendix B (companion.grid) under faults: a damaged result, dead staging
folders, bad arguments, the driver killed mid-run (the simulator's own faults:
tests/lib/test_hostile_faults.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bookutils import light_template
from procutils import alive


def temporaries(folder: Path) -> list[str]:
    """Hidden files a run leaves behind, the lock that keeps one driver per folder aside."""
    return sorted(
        p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != ".grid.lock"
    )


def kernels_of(pid: int) -> list[int]:
    """The kernels ``pid`` started from any of its threads (a grid worker's thread starts one)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # a thread or a child that just ended
            for child in (task / "children").read_text().split():
                if b"ipykernel" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(int(child))
    return found


# -- the papermill grid ----------------------------------------------------------------------------

TEMPLATE = Path(__file__).resolve().parents[2] / "book" / "setting_template.ipynb"


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RECENCY_LIB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_grid_reruns_a_damaged_result_and_sweeps_dead_staging(tmp_path, private_cache):
    from companion import grid

    out = tmp_path / "out"
    params = {"alpha": 0.2, "samples": 2000, "layers": 2}
    template = light_template(tmp_path / "template.ipynb")
    first = grid.run_setting(template, out, params)
    assert first.status == "ran" and grid.run_setting(template, out, params).status == "reused"
    data = first.result.read_bytes()
    cfg = grid.config_of(first.params)
    edited = data.replace(b'"engine": "gram"', b'"engine": "dense"')  # whole but edited
    first.result.write_bytes(edited)
    assert grid._reusable(first.key_file, first.key, cfg) is None
    first.result.write_bytes(data)
    assert grid._reusable(first.key_file, first.key, cfg) is not None
    dead = out / f".staging-{first.slug}-99999-0123abcd"  # left by a driver killed outright
    dead.mkdir()
    (dead / "half.ipynb").write_text("{")
    first.result.write_bytes(data[: len(data) // 2])  # truncated after a good run; sidecar intact
    again = grid.run_setting(template, out, params)
    assert again.status == "ran" and again.load().config == cfg
    assert not dead.exists() and temporaries(out) == []


def test_grid_bad_arguments_before_any_work(tmp_path):
    from companion import grid

    (tmp_path / "file").write_text("x")
    (tmp_path / "bad.ipynb").write_text("{not a notebook")
    for kw, needle in [
        ({"out_dir": tmp_path / "file"}, "not a folder"),
        ({"kernel": "nope"}, "kernel='nope'"),
        ({"timeout": -1}, "timeout=-1"),
        ({"force": "yes"}, "force='yes'"),
        ({"template": tmp_path / "bad.ipynb"}, "not a readable notebook"),
    ]:
        args = {"template": TEMPLATE, "out_dir": tmp_path / "o", "params": {"samples": 100}, **kw}
        with pytest.raises(ValueError, match="allowed") as info:
            grid.run_setting(args.pop("template"), args.pop("out_dir"), args.pop("params"), **args)
        assert needle in str(info.value), str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.ipynb", "file"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_grid_driver_killed_mid_run_leaves_no_kernel_and_no_staging(tmp_path, private_cache, sig):
    out = tmp_path / "out"
    code = (
        "import sys; from companion import grid; "
        "grid.run_setting(sys.argv[1], sys.argv[2], {'samples': 200_000_000, 'layers': 2})"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", code, str(TEMPLATE), str(out)], env=os.environ.copy()
    )
    deadline = time.monotonic() + 90
    kernels = []
    while time.monotonic() < deadline and not kernels:  # the kernel is running the simulation
        time.sleep(0.5)
        kernels = [k for k in kernels_of(driver.pid) if alive(k)]
    if not kernels:
        driver.kill()
    assert kernels and any(p.name.startswith(".staging-") for p in out.iterdir())
    time.sleep(2.0)
    driver.send_signal(sig)
    assert driver.wait(timeout=30) == -sig
    deadline = time.monotonic() + 10  # ipykernel polls its parent once a second
    while any(alive(k) for k in kernels) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(k) for k in kernels), "the kernel outlived its driver"
    staging = [p for p in out.iterdir() if p.name.startswith(".staging-")]
    if sig == signal.SIGTERM:
        assert staging == []  # cleaned up by the driver itself
    else:  # SIGKILL: no cleanup possible; the next driver
        from companion import grid  # removes it once it holds the folder's lock

        with grid.one_writer(out):  # (the dead one's lock died with it)
            assert not any(p.name.startswith(".staging-") for p in out.iterdir())


# -- outputs replace only what the grid wrote, all or nothing --------------------------------------


def _no_papermill(*args, **kwargs):
    raise AssertionError("papermill started before the outputs were checked")


@pytest.fixture(scope="module")
def _first_run(tmp_path_factory):
    """The light template run once for the module (one papermill run, ~1 s): its folder, to be
    copied."""
    from companion import grid

    root = tmp_path_factory.mktemp("one_run")
    template = light_template(root / "template.ipynb")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECENCY_LIB_CACHE", str(root / "cache"))
        run = grid.run_setting(template, root / "out", {"alpha": 0.2, "samples": 2000, "layers": 2})
    assert run.status == "ran"
    return root, run


@pytest.fixture
def one_run(tmp_path, private_cache, _first_run):
    """A setting run once with the light template, copied into this test's folder: (template,
    out_dir, params, its SettingRun, the bytes of its three files). The copy is what a run leaves
    (the key holds the template's name and bytes, not its folder), so a run here reuses it."""
    import dataclasses
    import shutil

    root, first = _first_run
    shutil.copy2(root / "template.ipynb", tmp_path / "template.ipynb")
    shutil.copytree(root / "out", tmp_path / "out")
    out = tmp_path / "out"
    run = dataclasses.replace(
        first,
        notebook=out / first.notebook.name,
        result=out / first.result.name,
        key_file=out / first.key_file.name,
    )
    files = {p: p.read_bytes() for p in (run.result, run.notebook, run.key_file)}
    return tmp_path / "template.ipynb", out, dict(first.params), run, files


@pytest.mark.parametrize("which", ["notebook", "key_file", "result"])
@pytest.mark.parametrize("kind", ["folder", "foreign", "link"])
def test_grid_refuses_a_target_it_did_not_write_before_any_work(monkeypatch, one_run, which, kind):
    from companion import grid

    template, out, params, run, files = one_run
    target = getattr(run, which)
    target.unlink()
    foreign = out / "notes.txt"
    foreign.write_text("a user's notes")
    if kind == "folder":
        target.mkdir()
    elif kind == "foreign":
        target.write_text(
            '{"cells": [], "metadata": {}}' if which != "result" else '{"format": "other"}'
        )
    else:
        target.symlink_to(foreign)
    monkeypatch.setattr(grid, "run_notebook", _no_papermill)
    with pytest.raises(ValueError, match="allowed") as info:
        grid.run_setting(template, out, params, force=True)
    assert target.name in str(info.value) and "\n" not in str(info.value)
    assert (
        all(p.read_bytes() == b for p, b in files.items() if p != target)
        and foreign.read_text() == "a user's notes"
    )
    assert temporaries(out) == []
    with pytest.raises(ValueError, match=target.name.replace(".", r"\.")):
        grid.run_grid(template, out, [params], force=True)


def test_grid_commits_all_three_files_or_none(monkeypatch, one_run):
    from companion import grid

    template, out, params, run, files = one_run
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(Path(dst).name)
        if (
            Path(dst) == run.notebook and Path(src).parent != out
        ):  # the commit's second rename fails
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(grid.os, "replace", replace)
    with pytest.raises(OSError, match="No space"):
        grid.run_setting(template, out, params, force=True)
    assert {p: p.read_bytes() for p in files} == files  # the previous result came back
    assert calls[:2] == [run.result.name, run.notebook.name] and temporaries(out) == []
    monkeypatch.undo()
    assert grid.run_setting(template, out, params).status == "reused"


def test_grid_first_run_that_fails_to_commit_leaves_nothing(monkeypatch, tmp_path, private_cache):
    from companion import grid

    template = light_template(tmp_path / "template.ipynb")
    out = tmp_path / "out"
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst).suffix == ".key":
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(grid.os, "replace", replace)
    with pytest.raises(OSError):
        grid.run_setting(template, out, {"alpha": 0.2, "samples": 2000, "layers": 2})
    assert sorted(p.name for p in out.iterdir()) == [".grid.lock"]


def test_papermill_result_path_never_replaces_a_notebook(tmp_path, private_cache):
    """On a copy of the template, ``-p result_path ../<the template>``: the first cell refuses it (a
    notebook is not a result) and the template is left as it was."""
    import shutil

    copy = tmp_path / "setting_template.ipynb"
    shutil.copy(TEMPLATE, copy)
    before = copy.read_bytes()
    (tmp_path / "out").mkdir()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(copy),
            str(tmp_path / "out" / "x.ipynb"),
            "--cwd",
            str(tmp_path / "out"),
            "-p",
            "samples",
            "100",
            "-p",
            "result_path",
            "../setting_template.ipynb",
            "-k",
            "python3",
            "--no-progress-bar",
        ],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=300,
    )
    assert p.returncode != 0 and copy.read_bytes() == before
    assert (
        "result_path='../setting_template.ipynb' holds a file that is not a recency_lib result file"
        in p.stderr
    )
