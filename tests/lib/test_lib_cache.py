"""recency_lib.cache: results are reused only for the same config, simulation source and kernel."""

import numpy as np
import pytest

from recency_lib import SimConfig, SimResult, cache, engines, kernels
from recency_lib.cache import cache_key, cached_simulate, cached_simulate_many

CFG = SimConfig(alpha=0.5, n=4, d=8, layers=2, samples=64, seed=3)


def _no_simulation(*args, **kwargs):
    raise AssertionError("the cache should have served this result")


def test_second_call_reads_the_file_and_returns_the_same_numbers(tmp_path, monkeypatch):
    first = cached_simulate(CFG, cache=tmp_path)
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1 and files[0].stem == cache_key(CFG)
    monkeypatch.setattr(engines, "simulate", _no_simulation)
    monkeypatch.setattr(engines, "simulate_many", _no_simulation)
    again = cached_simulate(CFG, cache=tmp_path)
    many = cached_simulate_many([CFG, CFG], cache=tmp_path)
    for r in (again, *many):
        assert np.array_equal(r.score_mean, first.score_mean, equal_nan=True)
        assert np.array_equal(
            r.recency_probability_sem, first.recency_probability_sem, equal_nan=True
        )


def test_key_changes_with_config_source_and_kernel(monkeypatch):
    keys = {cache_key(CFG), cache_key(CFG.replace(seed=4)), cache_key(CFG.replace(samples=65))}
    keys |= {cache_key(CFG.replace(placement=p)) for p in ("post", "sandwich")}
    assert len(keys) == 5
    base = cache_key(CFG)
    monkeypatch.setenv("RECENCY_LIB_KERNEL", "numpy")  # the numpy reference kernel
    assert kernels.kernel_name() == "numpy" and cache_key(CFG) != base
    monkeypatch.undo()
    assert cache_key(CFG) == base
    monkeypatch.setattr(cache, "source_hash", lambda: "edited")
    assert cache_key(CFG) != base


def _edited_copy(tmp_path, monkeypatch):
    """A copy of the package that cache.source_hash reads; returns edit(name) -> the hash after
    appending a comment to that file."""
    import shutil

    root = tmp_path / "recency_lib"
    shutil.copytree(cache.ROOT, root, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    monkeypatch.setattr(cache, "ROOT", root)

    def edit(name: str) -> str:
        with open(root / name, "a") as fh:
            fh.write("\n/* an edit */\n" if name.endswith(".c") else "\n# an edit\n")
        return cache.source_hash()

    return edit


def test_figure_command_line_and_theory_edits_keep_every_results_key(tmp_path, monkeypatch):
    """Restyling SimResult.plot(), the command line, the closed forms or the decisions (the level
    lives in metrics.py) recomputes no simulation; the book's package is not part of the key."""
    edit = _edited_copy(tmp_path, monkeypatch)
    base = cache.source_hash()
    for name in (
        "plot.py",
        "cli.py",
        "__main__.py",
        "theory/corrected.py",
        "metrics.py",
        "result.py",
    ):
        assert edit(name) == base, name
    assert not any("companion" in name for name in cache.package_files())


@pytest.mark.parametrize("name", ["engines.py", "_kernel.c", "__init__.py", "model.py"])
def test_an_edit_of_what_a_simulation_runs_changes_every_results_key(tmp_path, monkeypatch, name):
    edit = _edited_copy(tmp_path, monkeypatch)
    base_key = cache_key(CFG)
    edit(name)
    assert cache_key(CFG) != base_key


def test_an_entry_for_another_config_or_build_is_never_served(tmp_path, monkeypatch):
    first = cached_simulate(CFG, cache=tmp_path)
    other = cached_simulate(CFG.replace(seed=4), cache=tmp_path)
    a, b = (tmp_path / f"{cache_key(c)}.npz" for c in (CFG, CFG.replace(seed=4)))
    a.write_bytes(b.read_bytes())  # another config's entry under this one's name
    again = cached_simulate(CFG, cache=tmp_path)
    assert again.config == CFG and np.array_equal(
        again.score_mean, first.score_mean, equal_nan=True
    )
    assert cache.counts["bad"] >= 1 and not np.array_equal(
        other.score_mean, first.score_mean, equal_nan=True
    )
    res = SimResult.load(a)  # an entry stamped by another source
    res.extra["source_hash"] = "another build"
    res._write(a)
    monkeypatch.setattr(engines, "simulate_many", lambda cfgs, **kw: [first])
    assert cached_simulate(CFG, cache=tmp_path) is first  # recomputed, not served


@pytest.mark.parametrize("junk", [b"{not json", b"", b"PK\x03\x04truncated zip"])
def test_unreadable_entry_is_recomputed(tmp_path, junk):
    path = tmp_path / f"{cache_key(CFG)}.npz"
    path.write_bytes(junk)
    res = cached_simulate(CFG, cache=tmp_path)
    assert res.config == CFG
    assert cached_simulate(CFG, cache=tmp_path).config == CFG  # the rewritten file loads
    assert cached_simulate_many([CFG], cache=tmp_path)[0].config == CFG


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_both_file_formats_round_trip_losslessly(tmp_path, suffix):
    res = cached_simulate(CFG.replace(alpha=1.0), cache=tmp_path)  # NaN and exact ties inside
    path = res.save(tmp_path / f"r{suffix}")
    back = type(res).load(path)
    assert back.config == res.config and back.engine == res.engine and back.extra == res.extra
    assert back.elapsed_seconds == res.elapsed_seconds and back.definition1 == res.definition1
    for name in ("score_mean", "score_sem", "diff_mean", "recency_probability", "sq_norm_sem"):
        assert np.array_equal(getattr(back, name), getattr(res, name), equal_nan=True), name
    assert (path.stat().st_mode & 0o777) == 0o644
    assert [
        p.name for p in tmp_path.iterdir() if p.name.startswith(".")
    ] == []  # no temp files left


def test_refresh_recomputes(tmp_path, monkeypatch):
    cached_simulate(CFG, cache=tmp_path)
    monkeypatch.setattr(engines, "simulate", _no_simulation)
    with pytest.raises(AssertionError, match="should have served"):
        cached_simulate(CFG, cache=tmp_path, refresh=True)


def test_two_processes_compute_a_missing_entry_once(tmp_path):
    """Two chapters executed in parallel that need the same simulation: the second waits for the
    first (the entry's lock) and loads its result instead of computing it again."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import sys
        from recency_lib import SimConfig, engines
        from recency_lib.cache import cached_simulate_many
        calls = []
        real = engines.simulate_many
        engines.simulate_many = lambda cfgs, **kw: calls.append(1) or real(cfgs, **kw)
        cfg = SimConfig(alpha=0.5, n=6, d=16, layers=2, samples=200_000, seed=9)
        res = cached_simulate_many([cfg], cache={str(tmp_path)!r})[0]
        print(len(calls), repr(float(res.recency_probability[1])))
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(int(o[0]) for o in outs) == [0, 1]  # one computed, one loaded
    assert outs[0][1] == outs[1][1]  # the same numbers
    assert list(tmp_path.glob("*.lock")) == []  # the lock files went with their holders


def test_locks_exclude_each_other_and_leave_no_files(tmp_path):
    """Many threads through one entry's lock: never two inside at once, though each holder removes
    the lock file as it leaves (a waiter then locks the new file); none is left afterwards."""
    import threading

    from recency_lib.cache import _locked

    entry, inside, overlaps = tmp_path / "entry.json", [], []

    def worker():
        for _ in range(50):
            with _locked([entry]):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(1)
                inside.pop()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    assert list(tmp_path.iterdir()) == []


def test_cached_value_is_computed_once_per_source(tmp_path, monkeypatch):
    """A source-only value (the appendix's sympy checks): computed on the first call, read back
    after; another source of its modules, another package version or a damaged file computes it
    again; a hit never calls ``compute``."""
    calls = []

    def compute():
        calls.append(1)
        return {"verdicts": [True, False], "seconds": 1.5}

    mod = "recency_lib.theory.corrected"
    assert cache.cached_value("v", compute, (mod,), cache=tmp_path) == (
        {"verdicts": [True, False], "seconds": 1.5},
        False,
    )
    assert cache.cached_value("v", compute, mod, cache=tmp_path) == (
        {"verdicts": [True, False], "seconds": 1.5},
        True,
    )
    assert len(calls) == 1
    cache.cached_value(
        "v", compute, (mod,), packages=("numpy",), cache=tmp_path
    )  # versions in the key
    cache.cached_value("w", compute, (mod,), cache=tmp_path)  # another name
    assert len(calls) == 3
    for params in ({"seed": 1}, {"seed": 2}, {"seed": 2}):  # its arguments
        cache.cached_value("w", compute, (mod,), params=params, cache=tmp_path)
    assert len(calls) == 5
    entry = next(p for p in tmp_path.glob("v-*.json") if '"numpy"' not in p.read_text())
    for junk in ("{not json", "", '{"key": {}, "value": 1}'):
        entry.write_text(junk)
        assert cache.cached_value("v", compute, (mod,), cache=tmp_path)[1] is False
    assert cache.cached_value("v", compute, (mod,), cache=tmp_path, refresh=True)[1] is False
    edit = _edited_copy(tmp_path / "copy", monkeypatch)
    edit("plot.py")  # no simulation runs it: the value is served
    assert cache.cached_value("v", compute, (mod,), cache=tmp_path)[1] is True
    edit("model.py")  # the simulation's source is in a value's key
    assert cache.cached_value("v", compute, (mod,), cache=tmp_path)[1] is False
    assert len(calls) == 5 + 3 + 1 + 1
    assert [
        p.name for p in tmp_path.iterdir() if p.name.startswith(".")
    ] == []  # no temp files left


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"name": "a/b"}, "name"),
        ({"name": 3}, "name"),
        ({"modules": ("no_such_module",)}, "module"),
        ({"refresh": "yes"}, "refresh"),
    ],
)
def test_cached_value_rejects_bad_input_before_work(tmp_path, kwargs, name):
    args = {
        "name": "v",
        "compute": lambda: 1,
        "modules": ("recency_lib.theory",),
        "cache": tmp_path,
        **kwargs,
    }
    with pytest.raises(ValueError, match=name):
        cache.cached_value(args.pop("name"), args.pop("compute"), args.pop("modules"), **args)
    assert list(tmp_path.iterdir()) == []


def test_a_cache_folder_that_cannot_hold_entries_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr(engines, "simulate_many", _no_simulation)
    (tmp_path / "file").write_text("not a folder")
    for bad in (tmp_path / "file", tmp_path / "file" / "sub"):
        with pytest.raises(ValueError, match="cache="):
            cached_simulate(CFG, cache=bad)


STALE_PROBE = """
import json, sys
from recency_lib import SimConfig, simulate
from recency_lib.cache import cache_key, cached_simulate, counts
from recency_lib.kernels import kernel_name

cfg = SimConfig(alpha=0.5, n=6, d=16, layers=2, samples=2000, seed=1)
cached = [cached_simulate(cfg, cache=sys.argv[1]) for _ in range(2)]
direct = simulate(cfg)
print(json.dumps({"kernel": kernel_name(), "key": cache_key(cfg),
                  "stamp": cached[0].extra["kernel_path"], "computed": counts["computed"],
                  "rp": cached[1].rp(2)[0], "direct": direct.rp(2)[0]}))
"""


@pytest.mark.skipif(kernels.kernel_name() != "c", reason="the C kernel was not built")
def test_a_kernel_older_than_its_source_is_not_run_and_never_fills_the_cache(tmp_path):
    """An edit of _kernel.c without a rebuild (a `git pull` without a reinstall): the compiled
    module, which records the hash of the source it was built from, is not run; the numpy path runs,
    says so once on stderr with the command that rebuilds the kernel, and its results are cached
    under the numpy path's key. Once the module matches its source again (here: the source restored,
    as a rebuild would make it match), the same call is computed by the kernel under another key,
    and the cached result is the direct simulation's, bit for bit."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "lib" / "recency_lib"
    shutil.copytree(cache.ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert list(copy.glob("_kernel*.so")), "the copy has no compiled kernel"
    source = copy / "_kernel.c"
    original = source.read_bytes()

    def run() -> tuple[dict, str]:
        out = subprocess.run(
            [sys.executable, "-c", STALE_PROBE, str(tmp_path / "cache")],
            capture_output=True,
            cwd=tmp_path,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(copy.parent)},
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout), out.stderr

    source.write_bytes(original + b"\n/* an edit, not compiled */\n")
    stale, err = run()
    assert stale["kernel"] == stale["stamp"] == "numpy" and stale["computed"] == 1, stale
    assert err.count("built from another _kernel.c") == 1 and "pip install -e ." in err, err
    assert stale["rp"] == stale["direct"]

    source.write_bytes(original)  # the module matches its source again
    fresh, err = run()
    assert err == "", err
    assert fresh["kernel"] == fresh["stamp"] == "c" and fresh["key"] != stale["key"], fresh
    assert fresh["computed"] == 1 and fresh["rp"] == fresh["direct"], fresh
