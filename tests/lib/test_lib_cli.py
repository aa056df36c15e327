"""The command line: summary, result file, one-line errors with exit code 2, signals."""

import json
import signal
import subprocess
import sys
import time

import pytest
from procutils import alive, children

from recency_lib import SimConfig, SimResult, simulate


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "recency_lib", *args], capture_output=True, text=True, cwd=cwd
    )


def test_simulate_writes_result_and_prints_summary(tmp_path):
    out = tmp_path / "result.json"
    p = run(
        "simulate",
        "--alpha",
        "0.5",
        "--gamma",
        "1",
        "--norm",
        "layernorm",
        "--n",
        "6",
        "--d",
        "16",
        "--layers",
        "3",
        "--samples",
        "2000",
        "--seed",
        "4",
        "--out",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    assert "layer 3: recency probability" in p.stdout and "Definition 1" in p.stdout
    res = SimResult.load(out)
    assert (
        res.config.alpha == 0.5 and res.config.samples == 2000 and res.score_mean.shape == (3, 6, 6)
    )
    for l, line in enumerate(
        p.stdout.splitlines()[1:4], start=1
    ):  # the API's words, estimators named
        assert f"Definition 1 {res.decision(l).word}:" in line and "z = " in line
        assert ("plain means" if l == 1 else "control variates") in line


def test_workers_give_identical_file(tmp_path):
    args = [
        "simulate",
        "--n",
        "5",
        "--d",
        "8",
        "--layers",
        "2",
        "--samples",
        "3000",
        "--chunk-size",
        "500",
    ]
    assert run(*args, "--out", str(tmp_path / "a.json")).returncode == 0
    assert run(*args, "--workers", "2", "--out", str(tmp_path / "b.json")).returncode == 0
    a, b = (
        json.loads((tmp_path / "a.json").read_text()),
        json.loads((tmp_path / "b.json").read_text()),
    )
    a.pop("elapsed_seconds"), b.pop("elapsed_seconds")
    assert a == b


def test_extension_switches_reach_the_config_and_npz_output(tmp_path):
    out = tmp_path / "ext.npz"
    p = run(
        "simulate",
        "--alpha",
        "0.5",
        "--gamma",
        "1",
        "--norm",
        "rms",
        "--n",
        "6",
        "--d",
        "8",
        "--layers",
        "2",
        "--samples",
        "64",
        "--heads",
        "2",
        "--rope",
        "--ffn",
        "--weights",
        "fixed",
        "--weights-seed",
        "3",
        "--placement",
        "pre",
        "--out",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    cfg = SimResult.load(out).config
    assert (cfg.heads, cfg.rope, cfg.ffn, cfg.weights, cfg.weights_seed) == (
        2,
        True,
        True,
        "fixed",
        3,
    )
    assert SimResult.load(out).engine == "dense"


def test_the_placement_runs_on_the_gram_engine_and_is_in_the_result(tmp_path):
    out = tmp_path / "sandwich.json"
    args = ("--gamma", "1", "--n", "6", "--layers", "2", "--samples", "64", "--out", str(out))
    p = run("simulate", "--placement", "sandwich", *args)
    assert p.returncode == 0, p.stderr
    res = SimResult.load(out)
    assert (res.config.placement, res.engine) == ("sandwich", "gram")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--alpha", "1.5"], "alpha=1.5"),
        (["--alpha", "nan"], "alpha=nan"),
        (["--gamma", "inf"], "gamma=inf"),
        (["--alpah", "0.3"], "simulate --help"),
        (["--workers", "0"], "workers=0"),
        (["--level", "2"], "level=2"),
        (["--n", "0"], "n=0"),
        (["--d", "1"], "d=1"),
        (["--layers", "0"], "layers=0"),
        (["--samples", "1"], "samples=1"),
        (["--norm", "batch"], "norm='batch'"),
        (["--seed", "-3"], "seed=-3"),
        (["--chunk-size", "0"], "chunk_size=0"),
        (["--n", "2.5"], "--n"),
        (["--engine", "x"], "engine='x'"),
        (["--d", "10", "--heads", "3"], "heads=3"),
        (["--d", "9", "--rope"], "rope=True"),
        (["--weights", "learned"], "weights='learned'"),
        (["--placement", "mid"], "placement='mid'"),
        (["--placement", "post", "--norm", "none"], "placement='post'"),
        (["--rope", "--engine", "gram"], "engine='gram'"),
    ],
)
def test_bad_input_one_line_exit_2_no_file(tmp_path, args, needle):
    out = tmp_path / "r.json"
    p = run("simulate", *args, "--out", str(out))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def test_help_lists_every_option():
    top, sub = run("--help"), run("simulate", "--help")
    assert top.returncode == sub.returncode == 0 and "simulate --help" in top.stdout
    assert all(
        f"--{o}" in sub.stdout
        for o in ("alpha", "gamma", "norm", "samples", "workers", "out", "plot", "level")
    )


@pytest.mark.parametrize(
    "name, content", [("notebook.ipynb", "{}"), ("module.py", "x = 1\n"), ("data.json", "[1]")]
)
def test_out_never_replaces_a_file_this_library_did_not_write(tmp_path, name, content):
    out = tmp_path / name
    out.write_text(content)
    p = run("simulate", "--samples", "100000000", "--out", str(out))  # refused before any work
    assert (
        p.returncode == 2
        and "is not a recency_lib result file" in p.stderr
        and out.read_text() == content
    )


def test_a_run_too_large_for_the_machine_names_the_largest_value_that_fits(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "recency_lib",
            "simulate",
            "--n",
            "400",
            "--d",
            "4096",
            "--engine",
            "dense",
        ],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "RECENCY_LIB_MAX_MEMORY": "5e8"},
    )
    assert p.returncode == 2 and "n=400 needs about" in p.stderr and "allowed: n <= " in p.stderr
    top = int(p.stderr.rsplit("n <= ", 1)[1].split()[0])
    assert 1 <= top < 400


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_workers_and_keeps_the_previous_result(tmp_path, sig, code):
    good = simulate(SimConfig(n=4, d=6, layers=2, samples=64)).save(tmp_path / "good.json")
    before = good.read_bytes()
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recency_lib",
            "simulate",
            "--samples",
            "40000000",
            "--workers",
            "2",
            "--out",
            str(good),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while len(children(p.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = children(p.pid)
    assert len(workers) == 2, "the pool did not start"
    time.sleep(1.0)  # mid-run
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    *said, last = err.splitlines()  # the expected time said before the run, then one error line
    assert p.returncode == code and last.startswith("error: ") and len(said) == 1, err
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(w) for w in workers), "a worker outlived its main process"
    assert good.read_bytes() == before and [q.name for q in tmp_path.iterdir()] == ["good.json"]


@pytest.mark.parametrize(
    "name, value",
    [
        ("NUMPY_MADVISE_HUGEPAGE", "x"),
        ("RECENCY_LIB_KERNEL", "bogus"),
        ("RECENCY_LIB_MAX_MEMORY", "lots"),
    ],
)
def test_a_bad_environment_variable_is_one_line_naming_it(name, value):
    import os

    p = subprocess.run(
        [sys.executable, "-m", "recency_lib", "simulate", "--samples", "100"],
        capture_output=True,
        text=True,
        env={**os.environ, name: value},
    )
    assert (
        p.returncode == 2 and p.stderr.startswith(f"error: {name}=") and p.stderr.count("\n") == 1
    ), p.stderr


def test_out_on_a_full_disk_is_one_line_naming_the_path_and_keeps_the_old_file(
    tmp_path, monkeypatch, capsys
):
    """--out on a disk that fills up while the result is written: one error line with the cause and
    the path, exit 1, the previous result file unchanged and no temporary file left (the disk is
    made full by the write's fsync failing with ENOSPC, as a full disk reports it)."""
    import errno
    import os

    from recency_lib import cli

    good = simulate(SimConfig(n=4, d=6, layers=2, samples=64)).save(tmp_path / "good.json")
    before = good.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    code = cli.main(
        [
            "simulate",
            "--n",
            "4",
            "--d",
            "6",
            "--layers",
            "2",
            "--samples",
            "100",
            "--out",
            str(good),
        ]
    )
    err = capsys.readouterr().err
    assert (
        code == 1 and err.count("\n") == 1 and err.startswith("error: No space left on device")
    ), err
    assert str(good) in err, err
    assert good.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["good.json"]


def test_a_long_run_says_its_expected_time_first_also_when_not_on_a_terminal():
    """From 10^6 sequences one stderr line before the run: its time from a pilot timed here."""
    p = run("simulate", "--n", "4", "--layers", "2", "--samples", "1000000")
    assert p.returncode == 0, p.stderr
    first = p.stderr.splitlines()[0]
    assert first.startswith("python -m recency_lib: 1,000,000 sequences, expected time about ")
    assert "(a pilot of " in first and "RECENCY_LIB_PROGRESS=1" in first
    small = run("simulate", "--n", "4", "--layers", "2", "--samples", "999999")
    assert small.returncode == 0 and small.stderr == ""


def test_a_pilot_is_the_runs_own_first_blocks_and_at_most_a_tenth_of_it():
    from recency_lib.engines import pilot, plan

    cfg = SimConfig(n=6, layers=2, samples=10**6)
    size, seconds = pilot(cfg)
    assert size % plan(cfg).block == 0 and size <= cfg.samples // 10 and seconds > 0
    tiny = cfg.replace(samples=100)
    assert pilot(tiny)[0] == 100  # a run shorter than a block is its own pilot
