"""The command line: summary, result file, one-line errors with exit code 2."""
import json
import subprocess
import sys

import pytest

from recency_lib import SimResult


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "recency_lib", *args], capture_output=True, text=True, cwd=cwd)


def test_simulate_writes_result_and_prints_summary(tmp_path):
    out = tmp_path / "result.json"
    p = run("simulate", "--alpha", "0.5", "--gamma", "1", "--norm", "layernorm", "--n", "6", "--d", "16",
            "--layers", "3", "--samples", "2000", "--seed", "4", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "layer 3: recency probability" in p.stdout and "Definition 1" in p.stdout
    res = SimResult.load(out)
    assert res.config.alpha == 0.5 and res.config.samples == 2000 and res.score_mean.shape == (3, 6, 6)
    assert json.loads(out.read_text())["definition1"] == list(res.definition1)


def test_workers_give_identical_file(tmp_path):
    args = ["simulate", "--n", "5", "--d", "8", "--layers", "2", "--samples", "3000", "--chunk-size", "500"]
    assert run(*args, "--out", str(tmp_path / "a.json")).returncode == 0
    assert run(*args, "--workers", "2", "--out", str(tmp_path / "b.json")).returncode == 0
    a, b = json.loads((tmp_path / "a.json").read_text()), json.loads((tmp_path / "b.json").read_text())
    a.pop("elapsed_seconds"), b.pop("elapsed_seconds")
    assert a == b


def test_extension_switches_reach_the_config_and_npz_output(tmp_path):
    out = tmp_path / "ext.npz"
    p = run("simulate", "--alpha", "0.5", "--gamma", "1", "--norm", "rms", "--n", "6", "--d", "8", "--layers", "2",
            "--samples", "64", "--heads", "2", "--rope", "--ffn", "--weights", "fixed", "--weights-seed", "3",
            "--placement", "pre", "--out", str(out))
    assert p.returncode == 0, p.stderr
    cfg = SimResult.load(out).config
    assert (cfg.heads, cfg.rope, cfg.ffn, cfg.weights, cfg.weights_seed) == (2, True, True, "fixed", 3)
    assert SimResult.load(out).engine == "dense"


@pytest.mark.parametrize("args,needle", [
    (["--alpha", "1.5"], "alpha=1.5"), (["--alpha", "nan"], "--alpha"), (["--gamma", "inf"], "--gamma"),
    (["--n", "0"], "n=0"), (["--d", "1"], "d=1"), (["--layers", "0"], "layers=0"),
    (["--samples", "1"], "samples=1"), (["--norm", "batch"], "norm='batch'"), (["--seed", "-3"], "seed=-3"),
    (["--chunk-size", "0"], "chunk_size=0"), (["--n", "2.5"], "--n"), (["--engine", "x"], "engine='x'"),
    (["--d", "10", "--heads", "3"], "heads=3"), (["--d", "9", "--rope"], "rope=True"),
    (["--weights", "learned"], "weights='learned'"), (["--placement", "mid"], "placement='mid'"),
    (["--rope", "--engine", "gram"], "engine='gram'"),
])
def test_bad_input_one_line_exit_2_no_file(tmp_path, args, needle):
    out = tmp_path / "r.json"
    p = run("simulate", *args, "--out", str(out))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr
    assert not out.exists() and not list(tmp_path.iterdir())
