"""The papermill grid of Appendix B (companion.grid) under faults: a damaged result, dead staging
folders, bad arguments, the driver killed mid-run (the simulator's own faults: tests/lib/test_hostile_faults.py)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bookutils import light_template


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# -- the papermill grid ---------------------------------------------------------------------------------

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
    side = json.loads(first.key_file.read_text())
    cfg = grid.config_of(first.params)
    first.result.write_bytes(data.replace(b'"engine": "gram"', b'"engine": "dense"'))   # whole but edited
    assert not grid._up_to_date(side, first.key, first.notebook, first.result, cfg)
    first.result.write_bytes(data)
    assert grid._up_to_date(side, first.key, first.notebook, first.result, cfg)
    dead = out / f".staging-{first.slug}-99999-0123abcd"         # left by a driver killed outright
    dead.mkdir()
    (dead / "half.ipynb").write_text("{")
    first.result.write_bytes(data[: len(data) // 2])            # truncated after a good run; sidecar intact
    again = grid.run_setting(template, out, params)
    assert again.status == "ran" and again.load().config == cfg
    assert not dead.exists() and temporaries(out) == []


def test_grid_bad_arguments_before_any_work(tmp_path):
    from companion import grid

    (tmp_path / "file").write_text("x")
    (tmp_path / "bad.ipynb").write_text("{not a notebook")
    for kw, needle in [({"out_dir": tmp_path / "file"}, "not a folder"), ({"kernel": "nope"}, "kernel='nope'"),
                       ({"timeout": -1}, "timeout=-1"), ({"force": "yes"}, "force='yes'"),
                       ({"template": tmp_path / "bad.ipynb"}, "not a readable notebook")]:
        args = {"template": TEMPLATE, "out_dir": tmp_path / "o", "params": {"samples": 100}, **kw}
        with pytest.raises(ValueError, match="allowed") as info:
            grid.run_setting(args.pop("template"), args.pop("out_dir"), args.pop("params"), **args)
        assert needle in str(info.value), str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.ipynb", "file"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_grid_driver_killed_mid_run_leaves_no_kernel_and_no_staging(tmp_path, private_cache, sig):
    out = tmp_path / "out"
    code = ("import sys; from companion import grid; "
            "grid.run_setting(sys.argv[1], sys.argv[2], {'samples': 200_000_000, 'layers': 2})")
    driver = subprocess.Popen([sys.executable, "-c", code, str(TEMPLATE), str(out)], env=os.environ.copy())
    deadline = time.monotonic() + 90
    kernels = []
    while time.monotonic() < deadline and not kernels:         # the kernel is running the simulation
        time.sleep(0.5)
        kernels = [k for k in _children(driver.pid) if b"ipykernel" in Path(f"/proc/{k}/cmdline").read_bytes()]
    assert kernels and any(p.name.startswith(".staging-") for p in out.iterdir())
    time.sleep(2.0)
    driver.send_signal(sig)
    assert driver.wait(timeout=30) == -sig
    deadline = time.monotonic() + 10                            # ipykernel polls its parent once a second
    while any(_alive(k) for k in kernels) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(k) for k in kernels), "the kernel outlived its driver"
    staging = [p for p in out.iterdir() if p.name.startswith(".staging-")]
    if sig == signal.SIGTERM:
        assert staging == []                                    # cleaned up by the driver itself
    else:                                                       # SIGKILL: no cleanup possible; the next run's
        from recency_lib.files import sweep                     # sweep removes it (the lock died with the driver)
        assert sweep(out, ".staging-", re.compile(r"\d+-[0-9a-f]{8}$")) == len(staging) and not any(
            p.name.startswith(".staging-") for p in out.iterdir())
