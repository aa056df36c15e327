"""Hostile inputs, generated (hypothesis): the contract is "a clear error or a correct result,
never anything else".

* a clear error: ``ValueError`` (API) with one line that names what is wrong and says what is
  allowed; from the command line one ``error:`` line on stderr and exit status 2, no traceback;
* a correct result: a valid config / result (its own checks pass) that is what was asked for;
* and in both cases nothing half-written: no temporary left, a previous good file untouched.

The generators mix valid values, edge values and garbage (wrong types, huge and tiny numbers,
NaN, unicode, control characters) so that both branches are exercised. Every case is counted
(:data:`COUNT`, printed at the end of the module with ``-s``): tried, and handled per the contract
(an unhandled case fails its test, so on a green run the two are equal).

Deterministic and quick: ``derandomize=True`` (the examples are a function of the test), no
example database, ``max_examples`` sized so each test takes a few seconds.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import zipfile
from collections import Counter
from concurrent.futures import Future
from fractions import Fraction
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recency_lib import SimConfig, SimResult, cli, simulate
from recency_lib.cache import cache_key, cached_simulate
from recency_lib.result import ARRAY_FIELDS
from recency_lib.stats import Moments

COUNT = Counter()            # (test, "tried" | "handled") -> cases

FAST = settings(derandomize=True, database=None, deadline=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

SMALL = SimConfig(alpha=0.3, gamma=0.5, n=4, d=6, layers=2, samples=64, seed=1)
SMALL_RESULT = simulate(SMALL)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    tried = sum(v for (t, k), v in COUNT.items() if k == "tried")
    handled = sum(v for (t, k), v in COUNT.items() if k == "handled")
    lines = [f"  {t}: {COUNT[(t, 'handled')]}/{COUNT[(t, 'tried')]} handled "
             f"({COUNT[(t, 'results')]} correct results, the rest clear errors)" for t in sorted({t for t, _ in COUNT})]
    print(f"\nhostile cases (test_hostile.py): tried {tried}, handled {handled}\n" + "\n".join(lines))


def clear_error(exc: BaseException) -> bool:
    """A ValueError whose message is one readable line saying what is allowed. (Up to 800 characters:
    a result file's message names its path, and pytest's temporary paths grow under xdist; the
    longest message, an unknown field listing the 30 allowed ones, is ~620.)"""
    msg = str(exc)
    return (type(exc) is ValueError and "\n" not in msg and 0 < len(msg) <= 800 and "allowed" in msg)


def count(test: str, ok: bool, result: bool = False) -> None:
    """Record one case: ``ok`` = the contract held; ``result`` = it was the "correct result" branch."""
    COUNT[(test, "tried")] += 1
    COUNT[(test, "handled")] += ok
    COUNT[(test, "results")] += result
    assert ok


# -- values a hostile caller passes ------------------------------------------------------------------

class Weird(str):
    """A str subclass with a lying __str__ and __eq__."""

    def __str__(self):
        return "layernorm"

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


junk = st.one_of(
    st.none(), st.booleans(), st.text(max_size=12), st.binary(max_size=4),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
    st.complex_numbers(allow_nan=True), st.just(Decimal("0.5")), st.just(Fraction(1, 3)),
    st.just(np.array([1.0, 2.0])), st.just(np.array(3)), st.just(np.float32("nan")), st.just(np.int64(5)),
    st.just(np.bool_(True)), st.just(Weird("x")), st.just(object()),
    st.integers(min_value=-(10 ** 400), max_value=10 ** 400), st.sampled_from([2 ** 63, 2 ** 63 - 1, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e300, -1e300, 5e-324, -0.0]),
)


def field_values(name: str, default=None):
    """Valid values of a SimConfig field (boundaries included), wrong values of the right type, and junk."""
    good, bad = {
        "alpha": ([0.0, 0.25, 1.0, 1 - 1e-16, 5e-324], [-1e-300, 1.0000001]),
        "gamma": ([0.0, -2.5, 1.0, 1e10], []),
        "norm": (["layernorm", "rms", "none"], ["LayerNorm", " rms", ""]),
        "n": ([1, 2, 3, 12], [0, -5]), "d": ([2, 3, 8, 64], [1, 0]), "layers": ([1, 2, 5], [0]),
        "samples": ([2, 3, 1000], [1, 0]), "seed": ([0, 1, 2 ** 63 - 1], [-1, 2 ** 63, 2 ** 64]),
        "engine": (["auto", "dense", "gram"], ["gpu", "GRAM"]), "eps": ([0.0, 1e-12, 1e300], [-1e-3]),
        "weights": (["none", "fixed", "per_sample"], ["x"]), "weights_seed": ([0, 7, 2 ** 63 - 1], [-1, 2 ** 63]),
        "heads": ([1, 1, 2], [0, 3, 5]), "ffn": ([False, True], []), "rope": ([False, True], []),
        "placement": (["pre", "post"], ["mid"]),
    }[name]
    return st.one_of(*[st.sampled_from(good)] * 6, *([st.sampled_from(bad)] if bad else []), junk)


FIELDS = list(SimConfig().to_dict())
_PAPER = {"weights": "none", "heads": 1, "ffn": False, "rope": False, "placement": "pre"}


@st.composite
def one_bad_field(draw):
    """The paper's model with valid values everywhere but (maybe) one field: both branches are common."""
    kw = {f: draw(field_values(f)) for f in FIELDS if f not in _PAPER}
    kw = {k: v for k, v in kw.items() if _valid(k, v)}
    name = draw(st.sampled_from(FIELDS + [None]))
    if name is not None:
        kw[name] = draw(field_values(name))
    return kw


def _valid(name, value) -> bool:
    try:
        SimConfig(**{name: value})
        return True
    except Exception:
        return False


config_kwargs = st.one_of(one_bad_field(),
                          st.fixed_dictionaries({}, optional={f: field_values(f) for f in FIELDS}))


# -- the Python API ------------------------------------------------------------------------------------

@settings(FAST, max_examples=200)
@given(config_kwargs)
def test_simconfig_clear_error_or_valid_config(kwargs):
    try:
        cfg = SimConfig(**kwargs)
    except Exception as exc:                              # must be a clear error naming a given field
        named = str(exc).split("=")[0].split(":")[0].strip()
        ok = clear_error(exc) and (named in kwargs or named in ("SimConfig", "engine", "heads", "rope"))
        count("SimConfig", ok)
        return
    ok = (all(type(getattr(cfg, f)) is type(v) for f, v in SimConfig().to_dict().items())
          and 0 <= cfg.alpha <= 1 and math.isfinite(cfg.gamma) and cfg.n >= 1 and cfg.d >= 2
          and cfg.samples >= 2 and cfg.d % cfg.heads == 0
          and SimConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg and hash(cfg) is not None)
    count("SimConfig", ok, True)


api_calls = st.one_of(
    st.tuples(st.just("simulate"), st.fixed_dictionaries({}, optional={
        "chunk_size": st.one_of(st.none(), st.integers(-1, 200), junk), "z": st.one_of(st.floats(0.1, 9), junk),
        "executor": st.one_of(st.none(), junk), "progress": st.one_of(st.none(), st.booleans(), junk)})),
    st.tuples(st.just("definition1_at"), junk | st.floats(0.1, 9)),
    st.tuples(st.just("definition1_familywise"), junk | st.floats(0.001, 0.5)),
    st.tuples(st.just("trajectories"), st.one_of(st.integers(-1, 40), st.just(10 ** 12), junk)),
)


@settings(FAST, max_examples=250)
@given(api_calls)
def test_api_arguments_clear_error_or_result(call):
    from recency_lib import sample_trajectories

    kind, arg = call
    try:
        if kind == "simulate":
            out = simulate(SMALL, **arg)
            ok = np.array_equal(out.score_mean, SMALL_RESULT.score_mean, equal_nan=True)   # chunking never changes it
        elif kind == "definition1_at":
            out = SMALL_RESULT.definition1_at(arg)
            ok = len(out) == SMALL.layers and set(out) <= {"holds", "violated", "undecided"}
        elif kind == "definition1_familywise":
            out = SMALL_RESULT.definition1_familywise(arg)
            ok = len(out) == SMALL.layers
        else:
            s, a = sample_trajectories(SMALL, arg)
            want = SMALL.samples if arg is None else arg          # None: the config's samples
            ok = s.shape == a.shape == (want, SMALL.layers, SMALL.n, SMALL.n)
    except Exception as exc:
        count("API arguments", clear_error(exc))
        return
    count("API arguments", ok, True)


# -- the command line ----------------------------------------------------------------------------------

OPTIONS = ["--alpha", "--gamma", "--norm", "--n", "--d", "--layers", "--samples", "--seed", "--engine", "--eps",
           "--weights", "--weights-seed", "--heads", "--placement", "--z", "--chunk-size", "--workers"]
numbers = st.sampled_from(["0", "1", "2", "3", "5", "0.5", "-1", "1e3", "1e400", "nan", "inf", "-inf", "1_0", " 4",
                           "٤", "0x10", "", "99999999999999999999999", "1" * 500, "3.", ".5", "+2", "layernorm",
                           "rms", "none", "dense", "gram", "post", "fixed", "\n", "a\x00b"])
option_pairs = st.tuples(st.sampled_from(OPTIONS + ["--alp", "--ffn", "--rope", "--help-me", "-n", "--out"]), numbers)


@st.composite
def argv_lists(draw):
    argv = ["simulate"] if draw(st.integers(0, 9)) else draw(st.sampled_from([[], ["simulat"], ["run"], ["simulate", "x"]]))
    for opt, value in draw(st.lists(option_pairs, max_size=5)):
        if opt in ("--ffn", "--rope"):
            argv.append(opt if draw(st.booleans()) else f"{opt}={value}")
        elif draw(st.integers(0, 5)):
            argv += [opt, value]
        else:
            argv.append(f"{opt}={value}")
    # keep accepted runs tiny
    if draw(st.integers(0, 3)):
        argv += ["--samples", "64"] if "--samples" not in argv else []
        argv += ["--n", "4"] if "--n" not in argv else []
    return argv


def run_cli(argv):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


@settings(FAST, max_examples=150)
@given(argv_lists(), st.sampled_from(["none", "new.json", "new.npz", "good.json", "dir", "under/x.json", "empty",
                                      "slash/", "long", "devnull"]))
def test_cli_clear_error_or_result(tmp_path_factory, monkeypatch, argv, out_kind):
    monkeypatch.setenv("RECENCY_LIB_MAX_HOURS", "0.0003")          # ~1 s: anything larger is refused
    tmp = tmp_path_factory.mktemp("cli")
    monkeypatch.chdir(tmp)                                        # a generated relative --out lands here
    good = tmp / "good.json"
    SMALL_RESULT.save(good)
    (tmp / "dir").mkdir()
    (tmp / "under").write_text("a regular file")
    out = {"none": None, "new.json": str(tmp / "new.json"), "new.npz": str(tmp / "new.npz"), "good.json": str(good),
           "dir": str(tmp / "dir"), "under/x.json": str(tmp / "under" / "x.json"), "empty": "",
           "slash/": str(tmp / "slash") + "/", "long": str(tmp / ("x" * 300)), "devnull": os.devnull}[out_kind]
    before = {p.name: p.read_bytes() for p in tmp.iterdir() if p.is_file()}
    argv = argv + ([] if out is None else ["--out", out])
    code, stdout, stderr = run_cli(argv)
    after = {p.name: p.read_bytes() for p in tmp.iterdir() if p.is_file()}
    leftovers = [p.name for p in tmp.iterdir() if p.name.startswith(".")]
    if code == 2:
        ok = (stderr.count("\n") == 1 and stderr.startswith("error: ") and "Traceback" not in stderr
              and len(stderr) < 700 and after == before and not leftovers)
    elif code == 0:
        ok = "layer 1:" in stdout and not leftovers
        if ok and out is not None:
            res = SimResult.load(out)
            ok = res.check() is res and f"n={res.config.n} " in stdout
    else:
        ok = False
    count("command line", ok, code == 0)



# -- result files ----------------------------------------------------------------------------------------

def saved_bytes(suffix: str, tmp: Path) -> bytes:
    return SMALL_RESULT.save(tmp / f"r{suffix}").read_bytes()


byte_mutations = st.lists(st.tuples(st.sampled_from(["flip", "cut", "insert", "zero"]), st.floats(0, 1),
                                    st.integers(1, 255)), min_size=1, max_size=3)


def mutate_bytes(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for op, where, value in ops:
        i = min(len(b) - 1, int(where * len(b))) if b else 0
        if op == "flip" and b:
            b[i] ^= value
        elif op == "cut":
            del b[i:]
        elif op == "insert":
            b[i:i] = bytes([value]) * value
        elif op == "zero" and b:
            b[i:i + value] = bytes(len(b[i:i + value]))
    return bytes(b)


def same_arrays(a: SimResult, b: SimResult) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAY_FIELDS)


@settings(FAST, max_examples=300)
@given(st.sampled_from([".json", ".npz"]), byte_mutations)
def test_load_mutated_bytes_clear_error_or_same_result(tmp_path_factory, suffix, ops):
    tmp = tmp_path_factory.mktemp("load")
    data = mutate_bytes(saved_bytes(suffix, tmp), ops)
    path = tmp / f"m{suffix}"
    path.write_bytes(data)
    try:
        res = SimResult.load(path)
    except Exception as exc:
        count("SimResult.load: bytes", clear_error(exc))
        return
    # CRC-32 guards every .npz member: what loads is the original; JSON may hold other valid numbers
    ok = res.check() is res and (suffix == ".json" or (same_arrays(res, SMALL_RESULT) and res.config == SMALL))
    count("SimResult.load: bytes", ok, True)


def _nested(inner):
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=3))


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30), st.floats(allow_nan=False),
                                     st.text(max_size=5), st.sampled_from(["inf", "-inf", "nan"])),
                           _nested, max_leaves=12)
KEYS = ["format", "config", "engine", "block_size", "library_version", "z", "elapsed_seconds", "extra",
        "definition1", *ARRAY_FIELDS]
CONFIG_KEYS = list(SimConfig().to_dict())


@st.composite
def structural_mutations(draw):
    """(kind, key, value): replace a field, delete it, add one, change a config field, reshape an array."""
    kind = draw(st.sampled_from(["replace", "delete", "add", "config", "reshape", "nan_array", "deep", "other_n"]))
    key = draw(st.sampled_from(CONFIG_KEYS if kind == "config" else KEYS))
    value = draw(json_values | field_values(key, None).filter(lambda v: _jsonable(v)) if kind == "config" else json_values)
    return kind, key, value


def _jsonable(v) -> bool:
    try:
        json.dumps(v, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def apply_structural(d: dict, kind, key, value):
    d = json.loads(json.dumps(d))
    if kind == "replace":
        d[key] = value
    elif kind == "delete":
        d.pop(key, None)
    elif kind == "add":
        d[f"x_{key}"] = value
    elif kind == "config":
        d["config"][key] = value
    elif kind == "reshape" and key in ARRAY_FIELDS:
        d[key] = d[key][:-1] if d[key] else [0.0]
    elif kind == "nan_array" and key in ARRAY_FIELDS:
        d[key] = json.loads(json.dumps(np.full(np.shape(d[key]), None, dtype=object).tolist()))
    elif kind == "deep":                       # the whole file: 100,000 nested lists
        return "[" * 100_000 + "]" * 100_000
    elif kind == "other_n":
        d["config"]["n"] = 5
    return d


@settings(FAST, max_examples=300)
@given(st.sampled_from([".json", ".npz"]), structural_mutations())
def test_load_mutated_fields_clear_error_or_valid(tmp_path_factory, suffix, mutation):
    tmp = tmp_path_factory.mktemp("fields")
    d = apply_structural(SMALL_RESULT.to_dict(), *mutation)
    path = tmp / f"m{suffix}"
    if isinstance(d, str):
        text = d
    else:
        text = json.dumps(d)
    if suffix == ".json":
        path.write_text(text)
    else:                                      # the same mutation inside an npz: meta + arrays
        meta = {k: v for k, v in d.items() if k not in ARRAY_FIELDS} if isinstance(d, dict) else text
        arrays = {}
        if isinstance(d, dict):
            for k in ARRAY_FIELDS:
                if k in d:
                    try:
                        arrays[k] = np.array(json.loads(json.dumps(d[k]).replace("null", "NaN")), dtype=float)
                    except (TypeError, ValueError):
                        arrays[k] = np.array([0.0])
        np.savez_compressed(path, meta=np.array(json.dumps(meta) if not isinstance(meta, str) else meta), **arrays)
    try:
        res = SimResult.load(path)
    except Exception as exc:
        count("SimResult.load: fields", clear_error(exc))
        return
    count("SimResult.load: fields", res.check() is res, True)


def test_load_limits_and_special_files(tmp_path):
    """Sizes are checked before decompressing; a folder, FIFO or device is never read."""
    good = SMALL_RESULT.save(tmp_path / "g.npz")
    # a member that unpacks to 16 MiB where 256 bytes are expected (a zip bomb in small): refused
    # from the central directory's sizes, before anything is decompressed
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "score_mean.npy":
                data = data[:128] + bytes(2 ** 24)
            dst.writestr(info.filename, data)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path in (bomb, fifo, tmp_path, Path("/dev/zero"), tmp_path / "missing.json", Path("/proc/version")):
        with pytest.raises(ValueError) as info:
            SimResult.load(path)
        count("SimResult.load: special", clear_error(info.value))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply|allowed"):
        SimResult.load(deep)
    count("SimResult.load: special", True)


# -- the results cache ---------------------------------------------------------------------------------

@settings(FAST, max_examples=100)
@given(st.one_of(byte_mutations.map(lambda ops: ("bytes", ops)),
                 st.sampled_from(["other_config", "all_nan", "wrong_shape", "folder", "empty", "symlink_loop"]).map(lambda k: (k, None))))
def test_cache_any_bad_entry_is_recomputed(tmp_path_factory, entry):
    tmp = tmp_path_factory.mktemp("cache")
    fresh = SMALL_RESULT
    path = tmp / f"{cache_key(SMALL)}.npz"
    kind, ops = entry
    if kind == "bytes":
        fresh.save(path)
        path.write_bytes(mutate_bytes(path.read_bytes(), ops))
    elif kind == "other_config":                   # a valid entry for another config under this key
        simulate(SMALL.replace(seed=2)).save(path)
    elif kind in ("all_nan", "wrong_shape"):
        meta = np.array(json.dumps(fresh._meta()))
        arrays = {k: np.asarray(getattr(fresh, k)) for k in ARRAY_FIELDS}
        arrays = {k: (np.full_like(v, np.nan) if kind == "all_nan" else v[..., :-1]) for k, v in arrays.items()}
        np.savez_compressed(path, meta=meta, **arrays)
    elif kind == "folder":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "symlink_loop":
        path.symlink_to(path)
    try:
        res = cached_simulate(SMALL, cache=tmp)
    except Exception as exc:                        # only where the entry cannot be replaced
        count("cache", kind in ("folder", "symlink_loop") and clear_error(exc))
        return
    again = SimResult.load(path, config=SMALL)
    ok = same_arrays(res, fresh) and same_arrays(again, fresh) and res.config == SMALL
    count("cache", ok, True)


# -- caller objects (issue 26): numeric subclasses, changed and unpickled configs, odd executors -------

def _lying_number(base: type, value, lie: str):
    """An instance of a subclass of int or float that lies about itself in one way."""
    ns = {}
    if lie == "compares_false":
        ns.update({k: (lambda s, o: False) for k in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__")})
    elif lie == "compares_true":
        ns.update({k: (lambda s, o: True) for k in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__")})
    elif lie == "converts_negative":
        ns.update({"__int__": lambda s: -7, "__index__": lambda s: -7, "__float__": lambda s: -7.0})
    elif lie == "converts_huge":
        ns.update({"__int__": lambda s: 10 ** 30, "__index__": lambda s: 10 ** 30, "__float__": lambda s: 1e300})
    elif lie == "converts_raises":
        def boom(s):
            raise RuntimeError("no")
        ns.update({"__int__": boom, "__index__": boom, "__float__": boom})
    ns["__hash__"] = base.__hash__
    return type(f"Lying{base.__name__.title()}", (base,), ns)(value)


LIES = ["compares_false", "compares_true", "converts_negative", "converts_huge", "converts_raises"]
INT_FIELDS = ["n", "d", "layers", "samples", "seed", "weights_seed", "heads"]
REAL_FIELDS = ["alpha", "gamma", "eps"]


@settings(FAST, max_examples=250)
@given(st.sampled_from(INT_FIELDS + REAL_FIELDS), st.sampled_from(LIES),
       st.one_of(st.integers(-10, 70), st.sampled_from([0, 1, 2, 2 ** 63 - 1, 2 ** 63])),
       st.floats(-2, 2, allow_nan=False) | st.sampled_from([-0.0, 0.0, 1.0, 1e-12])
       , st.booleans())
def test_numeric_subclasses_are_checked_by_their_converted_value(name, lie, i, x, as_float):
    real = name in REAL_FIELDS
    obj = _lying_number(float, x, lie) if real and as_float else _lying_number(int, i, lie)
    try:
        # the value the library must act on: an int subclass's true value, a float subclass's float()
        want = int.__index__(obj) if isinstance(obj, int) else float(obj) + 0.0
        want = float(want) + 0.0 if real else want
    except Exception:
        want = None
    try:
        cfg = SimConfig(**{name: obj})
    except Exception as exc:
        if not clear_error(exc):
            count("caller numbers", False)
        try:                                      # an error only for what the plain value would refuse
            SimConfig(**{name: want})
            plain_ok = want is not None
        except Exception:
            plain_ok = False
        count("caller numbers", not plain_ok)
        return
    got = getattr(cfg, name)
    ok = (type(got) is (float if real else int) and got == want and math.copysign(1, got) == math.copysign(1, want)
          and cfg == SimConfig(**{name: want}) and hash(cfg) == hash(SimConfig(**{name: want})))
    count("caller numbers", ok, True)


def _tiny_kwargs(draw) -> dict:
    return {"alpha": draw(st.sampled_from([0.0, 0.3, 1.0])), "gamma": draw(st.sampled_from([0.0, 1.0])),
            "n": draw(st.integers(1, 5)), "d": draw(st.sampled_from([2, 4, 6])), "layers": draw(st.integers(1, 3)),
            "samples": draw(st.sampled_from([2, 3, 40])), "seed": draw(st.integers(0, 3))}


@st.composite
def changed_configs(draw):
    """A config changed after __post_init__ (object.__setattr__) or rebuilt from stored state as pickle
    does (some fields missing, extra ones, any values), and the state it holds."""
    base = _tiny_kwargs(draw)
    state = {**SimConfig().to_dict(), **base}
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(FIELDS))                      # often its own value: a config that
        state[name] = draw(st.one_of(st.just(state[name]), st.just(state[name]), field_values(name)))  # skipped checks
    how = draw(st.sampled_from(["setattr", "unpickled", "unpickled_missing", "unpickled_extra"]))
    if how == "setattr":
        cfg = SimConfig(**base)
        for k, v in state.items():
            object.__setattr__(cfg, k, v)
    else:
        cfg = SimConfig.__new__(SimConfig)
        if how == "unpickled_missing":
            state.pop(draw(st.sampled_from(FIELDS)))
        if how == "unpickled_extra":
            state["surprise"] = 1
        cfg.__setstate__(state) if hasattr(cfg, "__setstate__") else cfg.__dict__.update(state)
    return cfg, state


@settings(FAST, max_examples=80)
@given(changed_configs())
def test_simulate_revalidates_a_changed_or_unpickled_config(monkeypatch, case):
    cfg, state = case
    monkeypatch.setenv("RECENCY_LIB_MAX_HOURS", "0.0003")
    try:
        fresh = SimConfig(**{f: state[f] for f in FIELDS})
    except Exception:
        fresh = None
    try:
        res = simulate(cfg)
    except Exception as exc:
        # a clear error; and when the state makes a valid config, only the budget may refuse it
        count("changed configs", clear_error(exc) and (fresh is None or "take about" in str(exc) or "memory" in str(exc)))
        return
    ok = fresh is not None and res.config == fresh and type(res.config) is SimConfig and \
        np.array_equal(res.score_mean, simulate(fresh).score_mean, equal_nan=True)
    count("changed configs", ok, True)


EXECUTOR_FAULTS = ["ok", "none", "value", "number", "not_pair", "drop_block", "extra_block", "reverse", "wrong_k",
                   "k_float", "count", "shape", "dtype", "cross_shape", "seconds_negative", "seconds_text",
                   "seconds_short", "configs_short", "moments_text", "alias", "subclass", "array_subclass"]
MANY = SMALL.replace(samples=20_000)                      # several blocks per task on an executor
MANY_RESULT = simulate(MANY)


class SneakyMoments(Moments):
    def merge_into(self, other):                          # a merge that is not the library's
        return self


class OddExecutor:
    """Runs each task in-process; the task ``at`` (or every task) comes back faulted as ``fault`` says."""

    def __init__(self, fault: str, at: int | None, max_workers):
        self.fault, self.at, self.calls = fault, at, 0
        if max_workers is not None:
            self._max_workers = max_workers

    def submit(self, fn, *args):
        value = fn(*args)
        k, self.calls = self.calls, self.calls + 1
        if self.at is not None and k != self.at:
            fut = Future()
            fut.set_result(value)
            return fut
        if self.fault == "value":
            return value
        seconds, out = value
        ms = out[0]
        f = self.fault
        faulted = {
            "ok": value, "none": None, "number": 3, "not_pair": [seconds],
            "drop_block": (seconds, [ms[:-1]]), "extra_block": (seconds, [ms + ms[-1:]]), "reverse": (seconds, [ms[::-1] if len(ms) > 1 else []]),
            "wrong_k": (seconds, [[(b + 7, m) for b, m in ms]]), "k_float": (seconds, [[(float(b), m) for b, m in ms]]),
            "count": (seconds, [[(b, Moments(m.count * 2, m.mean, m.m2, m.cross)) for b, m in ms]]),
            "shape": (seconds, [[(b, Moments(m.count, m.mean[:, :1], m.m2, m.cross)) for b, m in ms]]),
            "dtype": (seconds, [[(b, Moments(m.count, m.mean.astype(np.float32), m.m2, m.cross)) for b, m in ms]]),
            "cross_shape": (seconds, [[(b, Moments(m.count, m.mean, m.m2, np.zeros(3))) for b, m in ms]]),
            "seconds_negative": ([-1.0], out), "seconds_text": (["1 s"], out), "seconds_short": ([], out),
            "configs_short": (seconds, []), "moments_text": (seconds, ["moments"]),
            "alias": (seconds, [[(b, ms[0][1]) for b, _ in ms]]),
            "subclass": (seconds, [[(b, SneakyMoments(m.count, m.mean, m.m2, m.cross)) for b, m in ms]]),
            "array_subclass": (seconds, [[(b, Moments(m.count, np.ma.masked_array(m.mean), m.m2, m.cross))
                                          for b, m in ms]]),
        }[f]
        fut = Future()
        fut.set_result(faulted)
        return fut


@settings(FAST, max_examples=200)
@given(st.sampled_from(EXECUTOR_FAULTS), st.one_of(st.none(), st.integers(0, 3)),
       st.one_of(st.none(), st.integers(1, 4), st.sampled_from(["many", 0, -2, True, 2.5, 10 ** 30, np.int64(2)])),
       st.sampled_from([None, 16, 32, 10_000]), st.booleans())
def test_whatever_an_executor_returns_is_checked(fault, at, max_workers, chunk_size, many):
    cfg, ref = (MANY, MANY_RESULT) if many else (SMALL, SMALL_RESULT)
    ex = OddExecutor(fault, at, max_workers)
    try:
        res = simulate(cfg, executor=ex, chunk_size=chunk_size)
    except Exception as exc:
        count("odd executors", clear_error(exc) and "executor=" in str(exc))
        return
    ok = same_arrays(res, ref) and res.config == cfg
    count("odd executors", ok, True)


# -- the cache's file system (issue 26): links, folders, pipes, swapped and stale entries, locks -------

ENTRY_KINDS = ["nothing", "valid", "symlink_foreign", "symlink_valid", "dangling", "folder", "fifo", "swapped_z",
               "other_version", "no_source_hash", "other_kernel", "foreign_regular", "hardlink_foreign"]
LOCK_KINDS = ["nothing", "regular", "folder", "symlink_foreign", "dangling", "fifo"]


def _edited_entry(src: Path, dst: Path, **changes) -> None:
    with np.load(src, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"][()]))
        arrays = {k: data[k] for k in ARRAY_FIELDS}
    for k, v in changes.items():
        if k == "extra":
            meta["extra"] = v(meta["extra"])
        else:
            meta[k] = v
    np.savez(dst, meta=np.array(json.dumps(meta)), **arrays)


@settings(FAST, max_examples=120)
@given(st.sampled_from(ENTRY_KINDS), st.sampled_from(LOCK_KINDS), st.sampled_from([3.0, 2.0]))
def test_cache_file_system_hostile_entries_and_locks(tmp_path_factory, entry_kind, lock_kind, z):
    tmp = tmp_path_factory.mktemp("cachefs")
    folder, other = tmp / "cache", tmp / "other"
    folder.mkdir()
    path, lock = folder / f"{cache_key(SMALL, z)}.npz", folder / f"{cache_key(SMALL, z)}.npz.lock"
    foreign = tmp / "foreign.txt"
    foreign.write_bytes(b"a user's file")
    good = cached_simulate(SMALL, cache=other, z=z)                   # a valid entry in another folder
    good_path = other / path.name
    if entry_kind == "valid":
        shutil.copy(good_path, path)
    elif entry_kind == "symlink_foreign":
        path.symlink_to(foreign)
    elif entry_kind == "symlink_valid":
        path.symlink_to(good_path)
    elif entry_kind == "dangling":
        path.symlink_to(tmp / "nothing.npz")
    elif entry_kind == "folder":
        path.mkdir()
    elif entry_kind == "fifo":
        os.mkfifo(path)
    elif entry_kind == "swapped_z":
        cached_simulate(SMALL, cache=other, z=5.0 - z)
        shutil.copy(other / f"{cache_key(SMALL, 5.0 - z)}.npz", path)
    elif entry_kind == "other_version":
        _edited_entry(good_path, path, library_version="0.0.1-old")
    elif entry_kind == "no_source_hash":
        _edited_entry(good_path, path, extra=lambda x: {k: v for k, v in x.items() if k != "source_hash"})
    elif entry_kind == "other_kernel":
        _edited_entry(good_path, path, extra=lambda x: {**x, "kernel": "numpy" if x.get("kernel") == "c" else "c"})
    elif entry_kind == "foreign_regular":
        path.write_bytes(b"not an entry")
    elif entry_kind == "hardlink_foreign":
        os.link(foreign, path)
    if lock_kind == "regular":
        lock.write_bytes(b"")
    elif lock_kind == "folder":
        lock.mkdir()
    elif lock_kind == "symlink_foreign":
        lock.symlink_to(foreign)
    elif lock_kind == "dangling":
        lock.symlink_to(tmp / "nothing.lock")
    elif lock_kind == "fifo":
        os.mkfifo(lock)
    served = entry_kind in ("valid",)
    try:
        res = cached_simulate(SMALL, cache=folder, z=z)
    except Exception as exc:
        refusable = entry_kind in ("folder", "fifo") or (lock_kind not in ("nothing", "regular") and not served)
        count("cache file system", refusable and clear_error(exc))
        assert foreign.read_bytes() == b"a user's file"
        return
    again = SimResult.load(path, config=SMALL, follow_symlinks=False)
    ok = (same_arrays(res, good) and res.z == z and res.extra == good.extra and again.z == z
          and again.extra == good.extra and not path.is_symlink() and foreign.read_bytes() == b"a user's file"
          and not (tmp / "nothing.npz").exists() and not (tmp / "nothing.lock").exists())
    count("cache file system", ok, True)
