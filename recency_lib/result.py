"""SimResult: what a simulation returns, its decisions, and its files (JSON or binary .npz).

Every array field is listed once, in :data:`ARRAY_FIELDS` with its shape; saving, loading and the
checks of a file read back all read that table.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .config import SimConfig
from .files import atomic_write, check_output_path, path_text
from .metrics import LEVEL, Decision, definition1, direction
from .norms import NORMS
from .stats import pm
from .validation import brief, check_choice, check_int

FORMAT_NAME = "recency_lib.SimResult"
FORMAT = f"{FORMAT_NAME}/3"
READABLE = (f"{FORMAT_NAME}/2", FORMAT)  # version 2 also stored a z, now decided by metrics
ESTIMATORS = {"cv": "control variates", "plain": "plain means"}
RESULT_FILE = "a recency_lib result file"  # what a save may replace (is_result_file)

_SQ, _ROW, _ONE = ("layers", "n", "n"), ("layers", "n"), ("layers",)
#: The array fields of :class:`SimResult` and their shapes, in file order.
ARRAY_FIELDS: dict[str, tuple[str, ...]] = {
    "score_mean": _SQ,
    "score_sem": _SQ,
    "attn_mean": _SQ,
    "attn_sem": _SQ,
    "diff_mean": _SQ,
    "diff_sem": _SQ,
    "recency_probability": _ONE,
    "recency_probability_sem": _ONE,
    "sq_norm_mean": _ROW,
    "sq_norm_sem": _ROW,
    "diff_cv_mean": _SQ,
    "diff_cv_sem": _SQ,
    "row_trend_mean": _ROW,
    "row_trend_sem": _ROW,
    "row_trend_cv_mean": _ROW,
    "row_trend_cv_sem": _ROW,
    "trend_mean": _ONE,
    "trend_sem": _ONE,
    "trend_cv_mean": _ONE,
    "trend_cv_sem": _ONE,
    "recency_probability_cv": _ONE,
    "recency_probability_cv_sem": _ONE,
}
_META = ("engine", "block_size", "library_version", "elapsed_seconds", "extra")


def expected_shape(cfg: SimConfig, name: str) -> tuple[int, ...]:
    return tuple(getattr(cfg, a) for a in ARRAY_FIELDS[name])


@dataclass(eq=False)
class SimResult:
    """Monte-Carlo means and standard errors of one :class:`SimConfig`; index l is the paper's
    S^(l+1), (query i, key j) 0-based.

    * ``score``, ``attn``: S_ij and A_ij (NaN and 0 above the diagonal), (layers, n, n);
    * ``diff``: the adjacent steps S_ij - S_i,j-1 at [l, i, j], 1 <= j <= i (Definition 1: all > 0);
    * ``recency_probability``: the share of j < k < i with S_ik > S_ij, a tie one half, (layers,);
    * ``sq_norm``: ||x_j||^2 of each layer's input as its normalization sees it, (layers, n);
    * ``row_trend``: row i's mean off-diagonal step (rows i >= 2); ``trend``: their mean, (layers,);
    * ``*_cv_*``: the same with layer 1 as control variate (its steps, trends and recency
      probability have known means); layer 1, the diagonal steps and RoPE runs keep the plain ones;
    * ``elapsed_seconds``: the compute time of this config's blocks.
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
    elapsed_seconds: float = float("nan")
    extra: dict = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return self.config.samples

    # -- decisions ------------------------------------------------------------------------------
    def steps(self, estimator: str = "cv") -> tuple[np.ndarray, np.ndarray]:
        """The adjacent steps' (mean, sem), (layers, n, n): "cv" (control variates) or "plain"."""
        if check_choice("estimator", estimator, tuple(ESTIMATORS)) == "cv":
            return self.diff_cv_mean, self.diff_cv_sem
        return self.diff_mean, self.diff_sem

    def estimator_name(self, layer: int, estimator: str = "cv") -> str:
        """What the ``estimator`` fields of 1-based ``layer`` hold (no control in layer 1, RoPE)."""
        controlled = estimator == "cv" and layer > 1 and not self.config.rope
        return ESTIMATORS["cv" if controlled else "plain"]

    def decision(self, layer: int, *, family=1, level=LEVEL, z=None, estimator="cv") -> Decision:
        """Definition 1 on the mean scores of 1-based ``layer`` by the one rule
        (:func:`recency_lib.metrics.definition1`), at the z of ``family`` matrices (or ``z``)."""
        layer = check_int("layer", layer, 1, self.config.layers)
        mean, sem = self.steps(estimator)
        return definition1(
            mean[layer - 1],
            sem[layer - 1],
            scale=float(np.nanmax(np.abs(self.score_mean[layer - 1]))),
            spread=self.diff_sem[layer - 1] * math.sqrt(self.config.samples),
            level=level,
            family=family,
            z=z,
            estimator=self.estimator_name(layer, estimator),
        )

    @property
    def definition1(self) -> tuple[str, ...]:
        """Per layer: "holds", "violated" or "undecided" (:meth:`decision`)."""
        return tuple(self.decision(l).word for l in range(1, self.config.layers + 1))

    def rp(self, layer: int) -> tuple[float, float, str]:
        """The recency probability of 1-based ``layer``, its standard error and estimator: with the
        control variate, unless there is none or it leaves no error (large d: layer 2 repeats 1)."""
        layer = check_int("layer", layer, 1, self.config.layers)
        value, se = (
            self.recency_probability_cv[layer - 1],
            self.recency_probability_cv_sem[layer - 1],
        )
        estimator = self.estimator_name(layer)
        if estimator != ESTIMATORS["cv"] or not se > 0:
            value, se = self.recency_probability[layer - 1], self.recency_probability_sem[layer - 1]
            estimator = ESTIMATORS["plain"]
        return float(value), float(se), estimator

    def direction(self, layer: int, *, family: int = 1, level: float = LEVEL) -> str:
        """ "recency", "primacy" or "none": :meth:`rp` against 1/2 (:func:`metrics.direction`)."""
        rp, se, _ = self.rp(layer)
        return direction(rp, se, level, family)

    def summary(self, level: float = LEVEL) -> str:
        """The setting, then per layer its recency probability and Definition 1 with the reason."""
        c = self.config
        extensions = "".join(f" {e}" for e in c.extensions)  # beyond the paper: what is on
        lines = [
            f"alpha={c.alpha:g} gamma={c.gamma:g} norm={c.norm} placement={c.placement} n={c.n} "
            f"d={c.d} samples={c.samples} seed={c.seed}{extensions} engine={self.engine}"
        ]
        for l in range(1, c.layers + 1):
            rp, se, how = self.rp(l)
            text = f"{pm(rp, se)} ({how}; {self.direction(l, level=level)})"
            d = self.decision(l, level=level)
            rp_text = text if c.n >= 3 else "undefined (n < 3)"
            lines.append(
                f"layer {l}: recency probability {rp_text}; Definition 1 {d.word}: {d.reason}"
            )
        return "\n".join(lines)

    def check_finite(self) -> SimResult:
        """``self``, or a ValueError naming the parameter that made a layer overflow."""
        lower = np.tri(self.config.n, dtype=bool)
        for l in range(self.config.layers):
            finite = np.isfinite(self.score_mean[l][lower]).all()
            if not (finite and np.isfinite(self.sq_norm_mean[l]).all()):
                raise ValueError(overflow_message(self.config, l))
        return self

    def plot(self, path=None, *, include_diagonal: bool = False):
        """Every layer's mean scores as heatmaps (:mod:`recency_lib.plot`, needs matplotlib), titled
        with their recency probabilities; also written to ``path`` (.png, .svg, .pdf) if given."""
        from .plot import check_plot_path, plot_result, save

        if path is not None:
            check_plot_path(path)
        fig = plot_result(self, include_diagonal=include_diagonal)
        if path is not None:
            save(fig, path)
        return fig

    # -- files ----------------------------------------------------------------------------------
    def _meta(self) -> dict:
        meta = {name: getattr(self, name) for name in _META}
        elapsed = None if math.isnan(self.elapsed_seconds) else self.elapsed_seconds
        return {
            "format": FORMAT,
            "config": self.config.to_dict(),
            **meta,
            "elapsed_seconds": elapsed,
        }

    def to_dict(self) -> dict:
        """JSON-ready: the metadata, then every array as nested lists (NaN as null)."""
        arrays = {k: getattr(self, k) for k in ARRAY_FIELDS}
        return {
            **self._meta(),
            **{k: np.where(np.isnan(a), None, a).tolist() for k, a in arrays.items()},
        }

    @classmethod
    def from_dict(cls, data, config: SimConfig | None = None) -> SimResult:
        """The result of a :meth:`to_dict` dict; with ``config``, it must be that config's."""
        cfg, meta = _read_meta(data, config)
        arrays = {}
        for name in ARRAY_FIELDS:
            try:
                arrays[name] = np.array(data[name], dtype=np.float64)
            except (KeyError, TypeError, ValueError):
                raise ValueError(
                    f"the array {name!r} is missing or not numbers; allowed: a SimResult file"
                ) from None
        return _made(cls, cfg, meta, arrays)

    def save(self, path) -> Path:
        """Write atomically, binary to a ``.npz`` path, else JSON; the path must hold nothing yet or
        a result file of this library (ValueError before anything is written)."""
        check_output_path(path, "path", ours=is_result_file, what=RESULT_FILE)
        return self._write(path)

    def _write(self, path) -> Path:
        """:meth:`save` without the check of what the path holds (the results cache's entries)."""
        self.check_finite()
        if Path(path).suffix == ".npz":
            arrays = {name: getattr(self, name) for name in ARRAY_FIELDS}
            meta = np.array(json.dumps(self._meta()))
            return atomic_write(path, lambda fh: np.savez(fh, meta=meta, **arrays), binary=True)
        text = json.dumps(self.to_dict())
        return atomic_write(path, lambda fh: fh.write(text))

    @classmethod
    def load(cls, path, config: SimConfig | None = None) -> SimResult:
        """A file :meth:`save` wrote, its keys, shapes and dtypes checked (with ``config``: that
        config's); ValueError naming the file otherwise."""
        import zipfile  # for its error only: a run that reads no file does not load it

        try:
            if Path(path).suffix != ".npz":
                with open(path, encoding="utf-8") as fh:
                    return cls.from_dict(json.load(fh), config)
            with np.load(path, allow_pickle=False) as z:
                if set(z.files) != {"meta", *ARRAY_FIELDS}:
                    members = brief(sorted(z.files))
                    raise ValueError(f"members {members}; allowed: meta and the arrays of {FORMAT}")
                cfg, meta = _read_meta(json.loads(str(z["meta"][()])), config)
                return _made(cls, cfg, meta, {name: z[name] for name in ARRAY_FIELDS})
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path_text(path)}: {exc}") from None


def is_result_file(path: Path) -> bool:
    """Whether ``path`` is a result file this library wrote: what a save may replace."""
    head = f'{{"format": "{FORMAT_NAME}/'
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                return str(z["meta"][()]).startswith(head)
        with open(path, "rb") as fh:
            return fh.read(64).startswith(head.encode())
    except Exception:  # unreadable, not an archive, no meta: not ours
        return False


def _read_meta(data, expected: SimConfig | None) -> tuple[SimConfig, dict]:
    """The config and the metadata fields of a file's ``data``, checked."""
    if not isinstance(data, dict) or data.get("format") not in READABLE:
        fmt = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"format={brief(fmt)} is not a readable SimResult; allowed: {FORMAT!r}")
    try:
        cfg = SimConfig.from_dict(data["config"])
        meta = {k: data[k] for k in _META if k in data}
        elapsed = meta.get("elapsed_seconds")
        meta["elapsed_seconds"] = math.nan if elapsed is None else float(elapsed)
        meta["block_size"] = check_int("block_size", meta["block_size"], 1)
        ok = meta["engine"] in ("dense", "gram") and isinstance(meta["library_version"], str)
        if not (ok and isinstance(meta.get("extra", {}), dict)):
            raise ValueError(f"engine, library_version or extra of {brief(meta)} is not allowed")
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"the metadata lacks or mistypes {exc}; allowed: a SimResult file"
        ) from None
    if expected is not None and cfg != expected:
        diff = {k: v for k, v in cfg.to_dict().items() if expected.to_dict()[k] != v}
        raise ValueError(f"the file holds a result for another config (differs in {brief(diff)})")
    return cfg, meta


def _made(cls, cfg: SimConfig, meta: dict, arrays: dict) -> SimResult:
    for name, a in arrays.items():
        if a.dtype != np.float64 or a.shape != expected_shape(cfg, name):
            shape = expected_shape(cfg, name)
            raise ValueError(f"{name} is {a.dtype} of shape {a.shape}; allowed: float64 of {shape}")
    return cls(config=cfg, **meta, **arrays)


def overflow_message(cfg: SimConfig, layer: int) -> str:
    """What overflowed, at which layer, and which parameter drove it."""
    where = f"the simulation overflowed float64 at layer {layer + 1} of {cfg.layers}"
    if abs(cfg.gamma) > 1:
        return (
            f"gamma={cfg.gamma!r}: {where} (the residual scales the state by |gamma| per layer); "
            f"allowed: a smaller |gamma| or at most {max(1, layer)} layers"
        )
    if not NORMS[cfg.norm].scales:
        scaling = " / ".join(repr(k) for k, v in NORMS.items() if v.scales)
        return (
            f"layers={cfg.layers}: {where} (without a normalization the state grows with depth); "
            f"allowed: layers <= {max(1, layer)}, or norm={scaling}"
        )
    if cfg.eps == 0.0:
        return (
            f"eps=0.0: {where} (a state with zero variance divides 0 by 0); "
            "allowed: eps > 0 (e.g. 1e-12)"
        )
    return f"{where}; allowed: a config whose states stay finite"
