"""SimResult: what a simulation returns, with a lossless round trip to JSON (readable) or .npz
(binary; what the results cache uses, since a result at n = 512 is ~90 MB of JSON). The binary form is
stored uncompressed: deflating an n = 512 result (4 layers) took 1.4 s, longer than the main
process's share of simulating it, for a file of 31 MB instead of 67 MB (what compresses is the NaN
upper triangle of each matrix; the floats themselves barely do). Compressed files still load.

Every array field is described once, in :data:`ARRAY_FIELDS` (shape in terms of the config, where
its values are defined, what fills the rest, the range of its values); loading, saving and
:meth:`SimResult.check` all read that table, so a new array field is one new row there (plus the
dataclass field). Files read from disk are validated completely before a SimResult is made:
format and version, every field's type and shape, consistency with the config (and with the
config the caller expected), value ranges, sizes before anything is decompressed. Any problem is
a ``ValueError`` that says what is wrong.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from .budget import fmt_bytes, memory_limit, require_json
from .config import SimConfig
from .files import Kind, atomic_write
from .metrics import definition1_verdict, familywise_z
from .norms import NORMS
from .validation import INT_MAX, as_float, check_choice, check_int, check_level, check_z, short, short_path

FORMAT_NAME = "recency_lib.SimResult"
VERSION = 2
FORMAT = f"{FORMAT_NAME}/{VERSION}"
ESTIMATORS = ("cv", "plain")


@dataclass(frozen=True)
class ArrayField:
    """One array of a result. ``shape``: config attributes (``("layers", "n", "n")``); ``where``
    its values are defined: "lower" (key j <= query i), "steps" (1 <= j <= i), "all",
    "triples" (all, when n >= 3: a triple j < k < i exists) or "rows" (query rows i >= 2, 0-based:
    rows with two earlier keys); ``fill``: the value everywhere else;
    ``lo``/``hi``: bounds of the defined values (means may pass them by float rounding, 1e-9)."""

    shape: tuple[str, ...]
    where: str
    fill: float = math.nan
    lo: float | None = None
    hi: float | None = None


_SQ = ("layers", "n", "n")
#: The array fields of :class:`SimResult`, in file order.
ARRAY_FIELDS: dict[str, ArrayField] = {
    "score_mean": ArrayField(_SQ, "lower"),
    "score_sem": ArrayField(_SQ, "lower", lo=0.0),
    "attn_mean": ArrayField(_SQ, "lower", 0.0, lo=0.0, hi=1.0),
    "attn_sem": ArrayField(_SQ, "lower", 0.0, lo=0.0),
    "diff_mean": ArrayField(_SQ, "steps"),
    "diff_sem": ArrayField(_SQ, "steps", lo=0.0),
    "recency_probability": ArrayField(("layers",), "triples", lo=0.0, hi=1.0),
    "recency_probability_sem": ArrayField(("layers",), "triples", lo=0.0),
    "sq_norm_mean": ArrayField(("layers", "n"), "all", lo=0.0),
    "sq_norm_sem": ArrayField(("layers", "n"), "all", lo=0.0),
    # -- version 2: trends and control-variate estimates (issue 11)
    "diff_cv_mean": ArrayField(_SQ, "steps"),
    "diff_cv_sem": ArrayField(_SQ, "steps", lo=0.0),
    "row_trend_mean": ArrayField(("layers", "n"), "rows"),
    "row_trend_sem": ArrayField(("layers", "n"), "rows", lo=0.0),
    "row_trend_cv_mean": ArrayField(("layers", "n"), "rows"),
    "row_trend_cv_sem": ArrayField(("layers", "n"), "rows", lo=0.0),
    "trend_mean": ArrayField(("layers",), "triples"),
    "trend_sem": ArrayField(("layers",), "triples", lo=0.0),
    "trend_cv_mean": ArrayField(("layers",), "triples"),
    "trend_cv_sem": ArrayField(("layers",), "triples", lo=0.0),
    "recency_probability_cv": ArrayField(("layers",), "triples"),
    "recency_probability_cv_sem": ArrayField(("layers",), "triples", lo=0.0),
}
_ARRAYS = tuple(ARRAY_FIELDS)
_SLACK = 1e-9
_META_BYTES = 2 ** 20          # the metadata of any result (config, engine, extra...) is far smaller
_VERDICTS = ("holds", "violated", "undecided")


def expected_shape(spec: ArrayField, cfg: SimConfig) -> tuple[int, ...]:
    return tuple(getattr(cfg, a) for a in spec.shape)


@dataclass(eq=False)
class SimResult:
    """Monte-Carlo means and standard errors of one :class:`SimConfig`.

    Matrices are (layers, n, n) with 0-based (query i, key j); layer l is the l-th attention layer
    (the paper's S^(l+1)).

    * ``score_mean/sem``: attention scores S_ij (NaN above the diagonal).
    * ``attn_mean/sem``: attention probabilities A_ij (0 above the diagonal).
    * ``diff_mean/sem``: adjacent differences S_ij - S_i,j-1 at [l, i, j] for 1 <= j <= i, NaN
      elsewhere; Definition 1 holds iff all are positive.
    * ``recency_probability/_sem``: (layers,) fraction of triples j < k < i with S_ik > S_ij (a tie
      counts one half); NaN when n < 3 (no triple).
    * ``sq_norm_mean/sem``: (layers, n) squared norms ||x_j||^2 of the state fed to each layer
      (row 0: the embeddings), as the normalization sees it (centred, ||P x_j||^2, for LayerNorm).
    * ``row_trend_mean/sem``: (layers, n) the mean off-diagonal step of row i,
      (S_i,i-1 - S_i0) / (i - 1), for rows i >= 2 (0-based; NaN in rows 0 and 1).
    * ``trend_mean/sem``: (layers,) the mean of all off-diagonal steps S_ij - S_i,j-1, 1 <= j < i.
    * ``*_cv_*`` (``diff_cv_mean/sem``, ``row_trend_cv_mean/sem``, ``trend_cv_mean/sem``,
      ``recency_probability_cv/_sem``): the same quantities estimated with control variates
      (:func:`recency_lib.stats.control_variate`): the first layer's off-diagonal steps, row trends,
      trend and recency probability have exactly known means (0, 0, 0, 1/2: its tokens are
      exchangeable), and correcting layer l by its first layer's deviation from them removes most
      of the Monte-Carlo noise, without bias and with an honest standard error. Layer 1 itself and
      the diagonal steps S_ii - S_i,i-1 (no control with a known mean) carry the plain estimates,
      and so does every field with RoPE, whose first layer already orders keys
      (:func:`recency_lib.features.controls_valid`).
    * ``elapsed_seconds``: compute time of this config's blocks, summed over tasks (and workers).
    """

    config: SimConfig
    engine: str
    score_mean: np.ndarray
    score_sem: np.ndarray
    attn_mean: np.ndarray
    attn_sem: np.ndarray
    diff_mean: np.ndarray
    diff_sem: np.ndarray
    recency_probability: np.ndarray
    recency_probability_sem: np.ndarray
    sq_norm_mean: np.ndarray
    sq_norm_sem: np.ndarray
    diff_cv_mean: np.ndarray
    diff_cv_sem: np.ndarray
    row_trend_mean: np.ndarray
    row_trend_sem: np.ndarray
    row_trend_cv_mean: np.ndarray
    row_trend_cv_sem: np.ndarray
    trend_mean: np.ndarray
    trend_sem: np.ndarray
    trend_cv_mean: np.ndarray
    trend_cv_sem: np.ndarray
    recency_probability_cv: np.ndarray
    recency_probability_cv_sem: np.ndarray
    block_size: int
    library_version: str
    z: float = 3.0
    elapsed_seconds: float = float("nan")
    extra: dict = field(default_factory=dict)

    # -- Definition 1 -----------------------------------------------------------------------
    def steps(self, estimator: str = "cv") -> tuple[np.ndarray, np.ndarray]:
        """The adjacent steps' (mean, sem), each (layers, n, n), of ``estimator``: "cv" (control
        variates, the default: unbiased, with the smaller standard error) or "plain" (sample means)."""
        check_choice("estimator", estimator, ESTIMATORS)
        return (self.diff_cv_mean, self.diff_cv_sem) if estimator == "cv" else (self.diff_mean, self.diff_sem)

    def definition1_at(self, z: float, estimator: str = "cv") -> tuple[str, ...]:
        """Per-layer Definition-1 verdict at z standard errors (see metrics.definition1_verdict), from
        the steps of ``estimator`` ("cv", the default, or "plain"; see :meth:`steps`)."""
        z = check_z(z)
        mean, sem = self.steps(estimator)
        return tuple(
            definition1_verdict(mean[l], sem[l], z, scale=float(np.nanmax(np.abs(self.score_mean[l]))),
                                samples=self.config.samples)
            for l in range(self.config.layers)
        )

    def definition1_familywise(self, level: float = 0.05, estimator: str = "cv") -> tuple[str, ...]:
        """Per-layer verdict at the Bonferroni z that keeps the chance of any false call at ``level``.

        The plain verdict tests every adjacent difference at ``z`` separately, so a matrix with no
        order is called "violated" now and then (about 6% at z = 3 for n = 10); this one does not.
        """
        level = check_level(level)
        count = int(np.isfinite(self.diff_mean[0]).sum())
        if count == 0:
            return self.definition1_at(self.z, estimator)
        return self.definition1_at(familywise_z(count, level), estimator)

    @property
    def definition1(self) -> tuple[str, ...]:
        """Per-layer verdict: "holds" | "violated" | "undecided", at ``self.z`` standard errors, from
        the control-variate steps (the plain ones: ``definition1_at(z, "plain")``)."""
        return self.definition1_at(self.z)

    @property
    def samples(self) -> int:
        return self.config.samples

    def summary(self) -> str:
        """A few lines: the setting, then per layer the recency probability and the verdict."""
        c = self.config
        lines = [f"alpha={c.alpha:g} gamma={c.gamma:g} norm={c.norm} n={c.n} d={c.d} "
                 f"samples={c.samples} seed={c.seed} engine={self.engine} (estimates with control variates)"]
        for l, verdict in enumerate(self.definition1):
            rp, se = self.recency_probability_cv[l], self.recency_probability_cv_sem[l]
            shown = f"{rp:.4f} ± {se:.4f}" if c.n >= 3 else "undefined (n < 3: no triple)"
            lines.append(f"layer {l + 1}: recency probability {shown}; Definition 1 {verdict} (z={self.z:g})")
        return "\n".join(lines)

    # -- validation -------------------------------------------------------------------------
    def check(self) -> "SimResult":
        """Validate every field against the config (types, shapes, where values are defined and
        finite, their ranges); ValueError naming the field, else ``self``. A result whose numbers
        overflowed says at which layer and which parameter drove it."""
        cfg = self.config = SimConfig.checked(self.config, "config")     # validated again, canonical
        _check_meta(self, cfg)
        first_bad = None                                  # (layer, field) of the first non-finite value
        for name, spec in ARRAY_FIELDS.items():
            arr = getattr(self, name)
            shape = expected_shape(spec, cfg)
            if not isinstance(arr, np.ndarray) or arr.dtype != np.float64 or arr.shape != shape:
                got = (f"{arr.dtype} array of shape {arr.shape}" if isinstance(arr, np.ndarray)
                       else type(arr).__name__)
                raise ValueError(f"{name} is a {got}; allowed: a float64 array of shape {shape} "
                                 f"(from the config: {', '.join(f'{a}={getattr(cfg, a)}' for a in spec.shape)})")
            mask = _mask(spec, shape, cfg.n)
            inside, outside = arr[mask], arr[~mask]
            if outside.size and not (np.isnan(outside).all() if math.isnan(spec.fill) else (outside == spec.fill).all()):
                raise ValueError(f"{name} has values where none is defined ({_where_text(spec)}); "
                                 f"allowed: {spec.fill} there")
            finite = np.isfinite(arr) | ~mask
            if not finite.all():
                layer = int(np.argwhere(~finite)[0][0]) if spec.shape[0] == "layers" else 0
                if first_bad is None or layer < first_bad[0]:
                    first_bad = (layer, name)
                continue
            lo = None if spec.lo is None else spec.lo - _SLACK * max(1.0, abs(spec.lo))
            hi = None if spec.hi is None else spec.hi + _SLACK * max(1.0, abs(spec.hi))
            if (lo is not None and (inside < lo).any()) or (hi is not None and (inside > hi).any()):
                bad = inside[(inside < (lo if lo is not None else -math.inf)) | (inside > (hi if hi is not None else math.inf))]
                raise ValueError(f"{name} has the value {float(bad[0])!r}; allowed: values in "
                                 f"[{spec.lo if spec.lo is not None else '-inf'}, {spec.hi if spec.hi is not None else 'inf'}]")
        if first_bad is not None:
            raise ValueError(nonfinite_message(self, *first_bad))
        return self

    # -- serialisation ----------------------------------------------------------------------
    def _meta(self) -> dict:
        """Everything but the arrays, JSON-ready."""
        out = {"format": FORMAT, "config": self.config.to_dict()}
        for f in fields(self):
            if f.name != "config" and f.name not in ARRAY_FIELDS:
                out[f.name] = getattr(self, f.name)
        out["elapsed_seconds"] = _encode(self.elapsed_seconds)
        out["definition1"] = list(self.definition1)    # for readers of the file; recomputed on load
        return out

    def to_dict(self) -> dict:
        return {**self._meta(), **{name: _encode(getattr(self, name)) for name in ARRAY_FIELDS}}

    @classmethod
    def from_dict(cls, data: dict, config: SimConfig | None = None) -> "SimResult":
        """The result of a :meth:`to_dict` dict (from JSON), validated (:meth:`check`); with
        ``config``, the result must be for exactly that config."""
        cfg = _config_of(data, config)
        kw = _meta_kwargs(data, cfg)
        for name, spec in ARRAY_FIELDS.items():
            if name not in data:
                raise ValueError(f"the array {name!r} is missing; allowed: a SimResult with every array")
            kw[name] = _array_from_json(name, data[name], expected_shape(spec, cfg))
        return cls(config=cfg, **kw).check()

    def plot(self, path=None, *, include_diagonal: bool = False):
        """Heatmaps of every layer's mean scores, each titled with its recency probability ± SE
        (:func:`recency_lib.plot.plot_result`; needs matplotlib). With ``path`` (.png, .svg or .pdf) the
        figure is also written there (replacing only a figure this library saved). Returns the Figure."""
        from .plot import plot_result, save

        fig = plot_result(self, include_diagonal=include_diagonal)
        if path is not None:
            save(fig, path)
        return fig

    def save(self, path) -> Path:
        """Write atomically (temporary file in the same folder, then rename): a ``.npz`` path gets the
        binary form (float64 arrays as they are, the rest as JSON text; a zip archive, uncompressed), any
        other path JSON.

        Only a valid result with finite numbers is written (:meth:`check`); the path must hold
        nothing yet or a result file of this library (:data:`RESULT_FILE`, recognised by its
        format; a symlink only to one), so a notebook, a source file or any other file is never
        replaced (:func:`recency_lib.files.check_output_path`: ValueError before anything is
        written). Returns the path written (symlinks followed)."""
        return self._write(path, RESULT_FILE, True)

    def _write(self, path, replaces, follow_symlinks: bool) -> Path:
        """:meth:`save` with what it may replace and whether it follows a symlink (the cache's entries:
        any regular file, links never followed)."""
        self.check()
        if Path(os.fspath(path) if isinstance(path, (str, os.PathLike)) else "").suffix == ".npz":
            arrays = {name: np.asarray(getattr(self, name), dtype=np.float64) for name in ARRAY_FIELDS}
            meta = np.array(json.dumps(self._meta(), allow_nan=False))
            return atomic_write(path, lambda fh: np.savez(fh, meta=meta, **arrays), binary=True,
                                replaces=replaces, follow_symlinks=follow_symlinks)
        require_json(self.config)
        text = json.dumps(self.to_dict(), allow_nan=False)
        return atomic_write(path, lambda fh: fh.write(text), replaces=replaces, follow_symlinks=follow_symlinks)

    @classmethod
    def load(cls, path, config: SimConfig | None = None, *, follow_symlinks: bool = True) -> "SimResult":
        """Read a file written by :meth:`save` (format chosen by the suffix, as there), validated
        completely; ValueError for anything else. With ``config``, the file must hold a result
        for exactly that config. ``follow_symlinks=False``: a symlink is refused, not opened."""
        if config is not None:
            config = SimConfig.checked(config, "config")
        fh, size = _open_regular(path, follow_symlinks)
        with fh:
            if Path(os.fspath(path)).suffix != ".npz":
                limit = max_json_bytes()
                if size > limit:
                    raise ValueError(f"{_name(path)} is {size} bytes; allowed: a SimResult JSON file of at most "
                                     f"{limit} bytes (1/16 of the memory a run may use: parsing takes ~10x the text)")
                raw = fh.read(limit + 1)
                if len(raw) > limit:
                    raise ValueError(f"{_name(path)} is larger than {limit} bytes; allowed: a SimResult file")
                return _with_name(path, lambda: cls.from_dict(_parse_json(raw), config))
            return _with_name(path, lambda: _load_npz(cls, fh, config))


# -- metadata ---------------------------------------------------------------------------------------

def _config_of(data, expected: SimConfig | None) -> SimConfig:
    if not isinstance(data, dict):
        raise ValueError(f"the file holds a {type(data).__name__}; allowed: a SimResult (a JSON object)")
    fmt = data.get("format")
    if not isinstance(fmt, str) or not fmt.startswith(FORMAT_NAME + "/"):
        raise ValueError(f"format={short(fmt)} is not a SimResult file; allowed: {FORMAT!r}")
    if fmt != FORMAT:      # version 1 lacks the trends and control-variate estimates: recompute it
        raise ValueError(f"format={short(fmt)} is a version this library cannot read; allowed: {FORMAT!r}")
    if "config" not in data:
        raise ValueError("the config is missing; allowed: a SimResult with its config")
    try:
        cfg = SimConfig.from_dict(data["config"])
    except TypeError as exc:                                  # e.g. keys that are not strings
        raise ValueError(f"config={short(data['config'])} is not a SimConfig ({exc}); allowed: a dict of SimConfig fields") from None
    if expected is not None and cfg != expected:
        diff = {k: v for k, v in cfg.to_dict().items() if expected.to_dict()[k] != v}
        raise ValueError(f"the file holds a result for another config (differs in {short(diff)}); "
                         f"allowed: a result for the config asked for")
    return cfg


def _meta_kwargs(data: dict, cfg: SimConfig) -> dict:
    """The non-array fields of a SimResult from ``data``, checked (defaults where optional)."""
    names = {f.name for f in fields(SimResult)} - set(ARRAY_FIELDS) - {"config"}
    known = names | set(ARRAY_FIELDS) | {"config", "format", "definition1"}
    unknown = [k for k in data if k not in known]
    if unknown:
        raise ValueError(f"unknown field(s) {short(unknown)}; allowed: {sorted(known)}")
    for required in ("engine", "block_size", "library_version"):
        if required not in data:
            raise ValueError(f"the field {required!r} is missing; allowed: a SimResult with every field")
    kw = {k: data[k] for k in names if k in data}
    if "elapsed_seconds" in kw:
        kw["elapsed_seconds"] = _json_float("elapsed_seconds", kw["elapsed_seconds"])
    verdicts = data.get("definition1", [])           # informative only: recomputed from the arrays
    if not (isinstance(verdicts, list) and len(verdicts) in (0, cfg.layers)
            and all(isinstance(v, str) and v in _VERDICTS for v in verdicts)):
        raise ValueError(f"definition1={short(verdicts)} is not allowed; allowed: a list of {cfg.layers} of "
                         f"{', '.join(map(repr, _VERDICTS))}")
    return kw


def _check_meta(res: SimResult, cfg: SimConfig) -> None:
    """The non-array fields, checked and stored as plain built-in values."""
    res.engine = check_choice("engine", res.engine, ("dense", "gram"))
    if cfg.engine != "auto" and res.engine != cfg.engine:
        raise ValueError(f"engine={res.engine!r} does not match the config's engine={cfg.engine!r}; allowed: the same")
    if cfg.extended and res.engine != "dense":
        raise ValueError(f"engine={res.engine!r} is not allowed with extensions on; allowed: 'dense'")
    try:
        res.block_size = check_int("block_size", res.block_size, 1, INT_MAX)
    except ValueError:
        raise ValueError(f"block_size={short(res.block_size)} is not allowed; allowed: an integer >= 1") from None
    if not isinstance(res.library_version, str) or not 0 < len(res.library_version) <= 64:
        raise ValueError(f"library_version={short(res.library_version)} is not allowed; allowed: a version string")
    res.library_version = str.__str__(res.library_version)
    res.z = check_z(res.z)
    e = as_float(res.elapsed_seconds)
    if not isinstance(e, float) or not (math.isnan(e) or 0 <= e < math.inf):
        raise ValueError(f"elapsed_seconds={short(res.elapsed_seconds)} is not allowed; allowed: a number >= 0 (or NaN: unknown)")
    res.elapsed_seconds = e
    x = res.extra
    if not isinstance(x, dict) or len(x) > 32 or not all(
            isinstance(k, str) and len(k) <= 64 and (v is None or isinstance(v, (bool, int, float))
                                                     or (isinstance(v, str) and len(v) <= 256))
            for k, v in x.items()):
        raise ValueError(f"extra={short(x)} is not allowed; allowed: a small dict of str -> str/number/bool/None")
    if x.get("kernel", "c") not in ("c", "numpy", "numba"):   # "numba": the compiled kernel of earlier versions
        raise ValueError(f"extra['kernel']={short(x['kernel'])} is not allowed; allowed: 'c', 'numpy' or 'numba'")


# -- arrays -----------------------------------------------------------------------------------------

def _mask(spec: ArrayField, shape: tuple[int, ...], n: int) -> np.ndarray:
    """Boolean mask (``shape``) of where the field's values are defined."""
    if spec.where in ("lower", "steps"):
        low = np.tri(n, dtype=bool)
        if spec.where == "steps":
            low[:, 0] = False
        return np.broadcast_to(low, shape)
    if spec.where == "triples":
        return np.full(shape, n >= 3)
    if spec.where == "rows":
        return np.broadcast_to(np.arange(n) >= 2, shape)
    return np.ones(shape, dtype=bool)


def _where_text(spec: ArrayField) -> str:
    return {"lower": "above the diagonal", "steps": "outside 1 <= j <= i",
            "triples": "n < 3: no triple", "rows": "in rows i < 2 (0-based)", "all": "nowhere"}[spec.where]


def _encode(v):
    """float64 arrays -> nested lists; NaN -> None, +-inf -> "inf"/"-inf" (strict JSON).

    Python writes floats with the shortest repr that reads back to the same double: lossless.
    """
    if isinstance(v, np.ndarray):
        return [_encode(x) for x in v] if v.ndim else _encode(float(v))
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


_SPECIAL = {None: math.nan, "inf": math.inf, "-inf": -math.inf}


def _json_float(name: str, v) -> float:
    if isinstance(v, bool) or not (v is None or isinstance(v, (int, float)) or v in ("inf", "-inf")):
        raise ValueError(f"{name}={short(v)} is not a number; allowed: a number, null (NaN), \"inf\" or \"-inf\"")
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:
            raise ValueError(f"{name}={short(v)} is out of range; allowed: a float64 number") from None
    return _SPECIAL[v]


def _array_from_json(name: str, value, shape: tuple[int, ...]) -> np.ndarray:
    """A float64 array of exactly ``shape`` from nested lists (the JSON form of :func:`_encode`)."""
    rows = [value]
    for depth, size in enumerate(shape):                 # walk level by level: no recursion
        for r in rows:
            if not isinstance(r, list) or len(r) != size:
                got = f"a list of {len(r)}" if isinstance(r, list) else f"a {type(r).__name__}"
                raise ValueError(f"{name} has {got} at depth {depth}; allowed: nested lists of shape {shape}")
        rows = [x for r in rows for x in r]
    try:
        flat = [x if type(x) is float else _json_float(name, x) for x in rows]
        return np.array(flat, dtype=np.float64).reshape(shape)
    except ValueError:
        raise
    except (TypeError, KeyError):
        raise ValueError(f"{name} holds values that are not numbers; allowed: numbers, null, \"inf\", \"-inf\"") from None


def _parse_json(raw: bytes):
    """Strict JSON: UTF-8, no NaN/Infinity literals, no duplicate keys, bounded nesting."""
    def no_constants(token):
        raise ValueError(f"the literal {token} is not allowed; allowed: null for NaN, \"inf\"/\"-inf\" (strict JSON)")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate key(s) {short(sorted({k for k in keys if keys.count(k) > 1}))}; allowed: each key once")
        return dict(pairs)

    try:
        return json.loads(raw.decode("utf-8"), parse_constant=no_constants, object_pairs_hook=no_duplicates)
    except UnicodeDecodeError as exc:
        raise ValueError(f"the file is not UTF-8 text ({exc.reason} at byte {exc.start}); allowed: a SimResult JSON file") from None
    except RecursionError:
        raise ValueError("the JSON is nested too deeply; allowed: a SimResult JSON file") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the file is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                         f"allowed: a SimResult JSON file") from None


_JSON_HEAD = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"' + re.escape(FORMAT_NAME.encode()) + rb"/")
_NPZ_HEAD = f'{{"format": "{FORMAT_NAME}/'.encode("utf-32-le")     # meta.npy's text, as np.savez stores it


def is_result_file(fh, size: int) -> bool:
    """Whether the open file ``fh`` is a result file of this library (any version, whole or not):
    JSON whose first key is ``"format": "recency_lib.SimResult/..."`` (as :meth:`SimResult.save`
    writes it), or a zip archive whose ``meta.npy`` holds such a format (uncompressed, :meth:`save`:
    seen in its first bytes; compressed, by earlier versions: read from the archive). Reads a few
    kB (at most the metadata member); never raises for a foreign file."""
    head = fh.read(4096)
    if _JSON_HEAD.match(head):
        return True
    if not head.startswith(b"PK\x03\x04"):
        return False
    if _NPZ_HEAD in head:
        return True
    try:
        fh.seek(0)
        with zipfile.ZipFile(fh) as zf:
            info = zf.getinfo("meta.npy")
            if info.file_size > _META_BYTES:
                return False
            return _NPZ_HEAD in zf.read(info)
    except Exception:                                    # not a zip, no meta.npy, damaged: not ours
        return False


#: What :meth:`SimResult.save` may replace: a result file of this library (:func:`is_result_file`).
RESULT_FILE = Kind("a recency_lib result file (SimResult .json or .npz)", is_result_file)


def max_json_bytes() -> int:
    """Largest JSON result file :meth:`SimResult.load` reads: 1/16 of the memory a run may use."""
    return memory_limit() // 16


# -- files ------------------------------------------------------------------------------------------

def _name(path) -> str:
    return short_path(path) if isinstance(path, (str, os.PathLike)) else short(path)


def _with_name(path, load):
    """Run ``load()``; a ValueError gets the file's name in front."""
    try:
        return load()
    except ValueError as exc:
        raise ValueError(f"{_name(path)}: {exc}") from None


def _open_regular(path, follow_symlinks: bool = True):
    """A binary file object of ``path`` and its size, after checking it is a regular file (a FIFO
    or device is never opened for reading: that could block or never end; without
    ``follow_symlinks``, neither is a symlink)."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path={short(path)} is not a path; allowed: a str or os.PathLike")
    text = os.fspath(path)
    if not isinstance(text, str) or not text or "\0" in text:
        raise ValueError(f"path={short_path(text)} is not a file path; allowed: a path to a SimResult file")
    try:
        fd = os.open(text, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW))
    except OSError as exc:
        if not follow_symlinks and os.path.islink(text):
            raise ValueError(f"{short_path(text)} is a symbolic link; allowed: a SimResult file (links are not followed here)") from None
        raise ValueError(f"{short_path(text)} cannot be read ({exc.strerror}); allowed: a SimResult file") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ValueError(f"{short_path(text)} is {kind}; allowed: a SimResult file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb"), st.st_size


def _read_npy(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dtype_kind: str, shape: tuple | None, limit: int) -> np.ndarray:
    """One ``.npy`` member: its header checked (dtype kind, shape, C order) before its data is read,
    the data read to exactly its size."""
    if info.file_size > limit:
        raise ValueError(f"{info.filename} unpacks to {info.file_size} bytes; allowed: at most {limit}")
    with zf.open(info) as m:
        version = np.lib.format.read_magic(m)
        if version == (1, 0):
            got_shape, fortran, dtype = np.lib.format.read_array_header_1_0(m)
        elif version == (2, 0):
            got_shape, fortran, dtype = np.lib.format.read_array_header_2_0(m)
        else:
            raise ValueError(f"{info.filename} is .npy version {version}; allowed: 1.0 or 2.0")
        if dtype.kind != dtype_kind or dtype.hasobject or fortran or (shape is not None and got_shape != shape):
            raise ValueError(f"{info.filename} holds {dtype} {'(Fortran order) ' if fortran else ''}of shape "
                             f"{got_shape}; allowed: {'float64' if dtype_kind == 'f' else 'text'} of shape "
                             f"{shape if shape is not None else '()'}")
        if dtype_kind == "f" and dtype != np.dtype("<f8"):
            raise ValueError(f"{info.filename} holds {dtype}; allowed: little-endian float64")
        count = int(np.prod(got_shape)) * dtype.itemsize
        if count > limit:
            raise ValueError(f"{info.filename} claims {count} bytes; allowed: at most {limit}")
        data = m.read(count)
        if len(data) != count or m.read(1):
            raise ValueError(f"{info.filename} holds {len(data)} bytes of data; allowed: exactly {count}")
    return np.frombuffer(data, dtype=dtype).reshape(got_shape).copy()


def _load_npz(cls, fh, config: SimConfig | None) -> SimResult:
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
        # (NotImplementedError: a central directory entry that claims a zip version Python cannot read)
        raise ValueError(f"not a valid .npz (zip) file ({exc}); allowed: a SimResult .npz") from None
    with zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        want = ["meta.npy", *(f"{a}.npy" for a in ARRAY_FIELDS)]
        if sorted(names) != sorted(want):
            missing = sorted(set(want) - set(names))
            extra = sorted(set(names) - set(want)) + sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"members missing {short(missing)}, unexpected {short(extra)}; allowed: exactly "
                             f"meta.npy and one .npy per array field of format {FORMAT!r} ({len(want)} members)")
        by_name = {i.filename: i for i in infos}
        try:
            meta = _read_npy(zf, by_name["meta.npy"], "U", (), _META_BYTES)
            data = _parse_json(str(meta[()]).encode("utf-8"))
            cfg = _config_of(data, config)
            kw = _meta_kwargs(data, cfg)
            total = sum(8 * math.prod(expected_shape(spec, cfg)) for spec in ARRAY_FIELDS.values())
            if total > memory_limit():
                raise ValueError(f"the config (n={short(cfg.n)}, layers={short(cfg.layers)}) makes arrays of "
                                 f"{fmt_bytes(total)}; allowed: a result that fits in memory ({fmt_bytes(memory_limit())})")
            for a, spec in ARRAY_FIELDS.items():
                shape = expected_shape(spec, cfg)
                kw[a] = _read_npy(zf, by_name[f"{a}.npy"], "f", shape, 8 * math.prod(shape) + 4096)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
            raise ValueError(f"the .npz is damaged ({type(exc).__name__}: {short(str(exc))}); allowed: an intact SimResult .npz") from None
    return cls(config=cfg, **kw).check()


def nonfinite_message(res: SimResult, layer: int, name: str) -> str:
    """What overflowed, at which layer, and which parameter drove it (with what is allowed)."""
    cfg = res.config
    sq = res.sq_norm_mean[:, 0] if res.sq_norm_mean.ndim == 2 else np.array([])
    ok = sq[np.isfinite(sq) & (sq > 0)]
    growth = float(np.exp(np.mean(np.diff(np.log(ok))))) if ok.size >= 2 else math.nan
    grew = f" (the squared state norm grew ~{growth:.3g}x per layer)" if math.isfinite(growth) and growth > 1 else ""
    where = f"the simulation overflowed float64 at layer {layer + 1} of {cfg.layers} ({name} is not finite){grew}"
    if abs(cfg.gamma) > 1:
        return (f"gamma={cfg.gamma!r}: {where}: the residual scales the state by |gamma| per layer; allowed: a "
                f"smaller |gamma| or fewer layers (at most {max(1, layer)} for this gamma)")
    if not NORMS[cfg.norm].scales:
        return (f"layers={cfg.layers}: {where}: without a normalization (norm='none') the state grows with "
                f"depth; allowed: layers <= {max(1, layer)} for this setting, or norm='layernorm' / 'rms'")
    if cfg.eps == 0.0:
        return f"eps=0.0: {where}: a state with zero variance divides 0 by 0; allowed: eps > 0 (e.g. 1e-12)"
    return (f"{where}; allowed: a config whose states stay finite (gamma={cfg.gamma!r}, layers={cfg.layers}, "
            f"eps={cfg.eps!r}, norm={cfg.norm!r})")
