"""The progress events a rerun reads: JSON lines in RECENCY_LIB_PROGRESS_FILE."""

import json

from recency_lib import SimConfig, simulate


def test_a_run_appends_its_progress_events(tmp_path, monkeypatch):
    log = tmp_path / "progress.jsonl"
    monkeypatch.setenv("RECENCY_LIB_PROGRESS_FILE", str(log))
    simulate(SimConfig(n=4, d=8, layers=2, samples=3000))
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events and {e["run"] for e in events} == {events[0]["run"]}
    assert events[-1]["done"] == events[-1]["total"] == 3000
    assert all(e["seconds"] >= 0 for e in events)


def test_an_unwritable_progress_file_does_not_fail_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("RECENCY_LIB_PROGRESS_FILE", str(tmp_path / "missing" / "p.jsonl"))
    assert simulate(SimConfig(n=4, d=8, layers=2, samples=100)).samples == 100
