"""Result files: a lossless round trip; a write replaces only a file this library wrote, atomically,
and an interrupt leaves the old file and no temporary; a file read back is checked for its keys,
shapes and dtypes, and anything else is a ValueError naming the file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recency_lib import SimConfig, SimResult, files, simulate
from recency_lib.result import ARRAY_FIELDS, is_result_file

SMALL = SimConfig(alpha=0.3, gamma=0.5, n=4, d=6, layers=2, samples=64, seed=1)


@pytest.fixture(scope="module")
def res() -> SimResult:
    return simulate(SMALL)


def same(a: SimResult, b: SimResult) -> bool:
    return a.config == b.config and all(
        np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAY_FIELDS
    )


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_round_trip_is_lossless_and_a_result_replaces_a_result(tmp_path, res, suffix):
    path = res.save(tmp_path / f"r{suffix}")
    assert is_result_file(path) and same(SimResult.load(path), res)
    assert same(SimResult.load(res.save(path)), res)  # our own file: replaced
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left


@pytest.mark.parametrize(
    "name, content",
    [
        ("notebook.ipynb", b"{}"),
        ("module.py", b"x = 1\n"),
        ("data.json", b'{"format": "other"}'),
        ("archive.npz", b"PK\x03\x04"),
    ],
)
def test_a_file_this_library_did_not_write_is_never_replaced(tmp_path, res, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(
        ValueError, match=r"is not a recency_lib result file|is not a figure this library saved"
    ):
        res.save(path)
    assert path.read_bytes() == content


def test_folders_and_unwritable_places_are_refused_before_writing(tmp_path, res):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    for bad, needle in (
        (tmp_path / "dir", "is a folder"),
        (tmp_path / "file" / "r.json", "cannot write"),
        ("", "not a path"),
    ):
        with pytest.raises(ValueError, match=needle):
            res.save(bad)


@pytest.mark.parametrize("exc", [KeyboardInterrupt, OSError])
def test_an_interrupt_during_a_write_leaves_the_old_file_and_no_temporary(tmp_path, res, exc):
    path = res.save(tmp_path / "r.json")
    before = path.read_bytes()

    def write(fh):
        fh.write("half of a file")
        raise exc("interrupted")

    with pytest.raises(exc):
        files.atomic_write(path, write)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _mutations():
    """Edits of a result's JSON form that no save writes: a key gone, a shape changed,
    a dtype changed, another format, a config that is not one."""
    return st.one_of(
        st.sampled_from(list(ARRAY_FIELDS)).map(lambda k: ("drop", k)),
        st.sampled_from(list(ARRAY_FIELDS)).map(lambda k: ("shape", k)),
        st.sampled_from(list(ARRAY_FIELDS)).map(lambda k: ("text", k)),
        st.sampled_from(["format", "config", "engine", "block_size"]).map(lambda k: ("meta", k)),
    )


def _mutated(data: dict, kind: str, key: str) -> dict:
    data = json.loads(json.dumps(data))
    if kind == "drop":
        del data[key]
    elif kind == "shape":
        data[key] = [data[key], data[key]]
    elif kind == "text":
        data[key] = "not numbers"
    else:
        data[key] = {
            "format": "recency_lib.SimResult/9",
            "config": {"alpha": 7},
            "engine": "gpu",
            "block_size": -1,
        }[key]
    return data


@settings(max_examples=60, deadline=None)
@given(_mutations(), st.sampled_from([".json", ".npz"]))
def test_a_file_with_wrong_keys_shapes_or_dtypes_is_a_clear_error(
    tmp_path_factory, res, mutation, suffix
):
    folder = tmp_path_factory.mktemp("m")
    data = _mutated(res.to_dict(), *mutation)
    path = folder / f"bad{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(data))
    else:
        meta = {k: v for k, v in data.items() if k not in ARRAY_FIELDS}
        arrays = {
            k: np.asarray(v if not isinstance(v, str) else [v])
            for k, v in data.items()
            if k in ARRAY_FIELDS
        }
        arrays = {
            k: np.where(np.equal(a, None), np.nan, a).astype(float) if a.dtype == object else a
            for k, a in arrays.items()
        }
        np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
    with pytest.raises(ValueError, match="bad"):
        SimResult.load(path)


def test_a_result_for_another_config_is_refused_when_a_config_is_asked_for(tmp_path, res):
    path = res.save(tmp_path / "r.npz")
    with pytest.raises(ValueError, match="another config"):
        SimResult.load(path, config=SMALL.replace(seed=2))
    for junk in (b"", b"{not json", b"PK\x03\x04 truncated"):
        (tmp_path / "j.npz").write_bytes(junk)
        (tmp_path / "j.json").write_bytes(junk)
        for p in (tmp_path / "j.npz", tmp_path / "j.json"):
            with pytest.raises(ValueError, match=r"j\.npz|j\.json"):
                SimResult.load(p)


def test_a_full_disk_names_the_file_and_keeps_the_old_one(tmp_path, res):
    import errno

    path = res.save(tmp_path / "r.json")
    before = path.read_bytes()

    def write(fh):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as info:
        files.atomic_write(path, write)
    assert info.value.filename == str(path.resolve()) and path.read_bytes() == before
