"""SimResult: what a simulation returns, with a lossless round trip to JSON (readable) or .npz (binary,
what the results cache uses: a result at n = 512 is ~90 MB of JSON).

Every array field is listed once, in :data:`ARRAY_FIELDS` (its shape in terms of the config); saving,
loading and the checks of a file read back all read that table.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .config import SimConfig
from .files import atomic_write, check_output_path, shown
from .metrics import LEVEL, Decision, definition1, direction
from .norms import NORMS
from .stats import pm
from .validation import check_choice, check_int, short

FORMAT_NAME = "recency_lib.SimResult"
FORMAT = f"{FORMAT_NAME}/3"
READABLE = (
    f"{FORMAT_NAME}/2",
    FORMAT,
)  # version 2 also stored a z, now decided by metrics.definition1
ESTIMATORS = {"cv": "control variates", "plain": "plain means"}
RESULT_FILE = "a recency_lib result file"  # what a save may replace (is_result_file)

_SQ = ("layers", "n", "n")
#: The array fields of :class:`SimResult` and their shapes, in file order.
ARRAY_FIELDS: dict[str, tuple[str, ...]] = {
    "score_mean": _SQ,
    "score_sem": _SQ,
    "attn_mean": _SQ,
    "attn_sem": _SQ,
    "diff_mean": _SQ,
    "diff_sem": _SQ,
    "recency_probability": ("layers",),
    "recency_probability_sem": ("layers",),
    "sq_norm_mean": ("layers", "n"),
    "sq_norm_sem": ("layers", "n"),
    "diff_cv_mean": _SQ,
    "diff_cv_sem": _SQ,
    "row_trend_mean": ("layers", "n"),
    "row_trend_sem": ("layers", "n"),
    "row_trend_cv_mean": ("layers", "n"),
    "row_trend_cv_sem": ("layers", "n"),
    "trend_mean": ("layers",),
    "trend_sem": ("layers",),
    "trend_cv_mean": ("layers",),
    "trend_cv_sem": ("layers",),
    "recency_probability_cv": ("layers",),
    "recency_probability_cv_sem": ("layers",),
}
_META = ("engine", "block_size", "library_version", "elapsed_seconds", "extra")


def expected_shape(cfg: SimConfig, name: str) -> tuple[int, ...]:
    return tuple(getattr(cfg, a) for a in ARRAY_FIELDS[name])


@dataclass(eq=False)
class SimResult:
    """Monte-Carlo means and standard errors of one :class:`SimConfig`.

    Matrices are (layers, n, n) with 0-based (query i, key j); index l is the paper's S^(l+1).

    * ``score_mean/sem``: attention scores S_ij (NaN above the diagonal).
    * ``attn_mean/sem``: attention probabilities A_ij (0 above the diagonal).
    * ``diff_mean/sem``: adjacent steps S_ij - S_i,j-1 at [l, i, j] for 1 <= j <= i, NaN elsewhere;
      Definition 1 holds iff all are positive.
    * ``recency_probability/_sem``: (layers,) fraction of triples j < k < i with S_ik > S_ij (a tie
      counts one half); NaN when n < 3.
    * ``sq_norm_mean/sem``: (layers, n) squared norms ||x_j||^2 of the state fed to each layer, as the
      normalization sees it (||P x_j||^2 for LayerNorm).
    * ``row_trend_mean/sem``: (layers, n) mean off-diagonal step of row i, (S_i,i-1 - S_i0) / (i - 1),
      rows i >= 2 (NaN in rows 0 and 1); ``trend_mean/sem``: (layers,) the mean of all off-diagonal steps.
    * ``*_cv_*``: the same estimated with control variates (:func:`recency_lib.stats.control_variate`):
      the first layer's off-diagonal steps, trends and recency probability have exactly known means
      (0, 0, 1/2: its tokens are exchangeable); correcting layer l by its first layer's deviation removes
      most of the noise, without bias. Layer 1, the diagonal steps and every field under RoPE carry the
      plain estimates.
    * ``elapsed_seconds``: compute time of this config's blocks, summed over tasks and workers.
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

    # -- decisions --------------------------------------------------------------------------
    def steps(self, estimator: str = "cv") -> tuple[np.ndarray, np.ndarray]:
        """The adjacent steps' (mean, sem), each (layers, n, n): "cv" (control variates, the default:
        unbiased, the smaller standard error) or "plain" (sample means)."""
        check_choice("estimator", estimator, tuple(ESTIMATORS))
        return (
            (self.diff_cv_mean, self.diff_cv_sem)
            if estimator == "cv"
            else (self.diff_mean, self.diff_sem)
        )

    def decision(
        self,
        layer: int,
        *,
        family: int = 1,
        level: float = LEVEL,
        z: float | None = None,
        estimator: str = "cv",
    ) -> Decision:
        """Definition 1 on the mean score matrix of 1-based ``layer`` (the paper's S^(layer)) by the one
        rule, :func:`recency_lib.metrics.definition1`: every step at the family-wise z of ``family``
        matrices at ``level`` (or the ``z`` of a larger family); the word, the z and the reason."""
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

    def estimator_name(self, layer: int, estimator: str = "cv") -> str:
        """What the ``estimator`` fields of 1-based ``layer`` hold: "control variates", or "plain means"
        (asked for, or layer 1, or RoPE, where no control exists)."""
        controlled = estimator == "cv" and layer > 1 and not self.config.rope
        return ESTIMATORS["cv" if controlled else "plain"]

    def rp(self, layer: int) -> tuple[float, float, str]:
        """The recency probability of 1-based ``layer`` with its standard error and estimator: the
        control-variate one, unless it has no control or its standard error is 0 (the control then removes
        every difference, as at large d where layer 2 repeats layer 1's order), where the plain one."""
        layer = check_int("layer", layer, 1, self.config.layers)
        cv = (
            float(self.recency_probability_cv[layer - 1]),
            float(self.recency_probability_cv_sem[layer - 1]),
        )
        if self.estimator_name(layer) == ESTIMATORS["cv"] and cv[1] > 0:
            return (*cv, ESTIMATORS["cv"])
        return (
            float(self.recency_probability[layer - 1]),
            float(self.recency_probability_sem[layer - 1]),
            ESTIMATORS["plain"],
        )

    @property
    def definition1(self) -> tuple[str, ...]:
        """Per layer: "holds" | "violated" | "undecided" (:meth:`decision` at the 5 % level, control variates)."""
        return tuple(self.decision(l).word for l in range(1, self.config.layers + 1))

    def direction(self, layer: int, *, family: int = 1, level: float = LEVEL) -> str:
        """ "recency", "primacy" or "none": the recency probability of 1-based ``layer`` (:meth:`rp`) against
        1/2 (:func:`recency_lib.metrics.direction`)."""
        rp, se, _ = self.rp(layer)
        return direction(rp, se, level, family)

    def summary(self, level: float = LEVEL) -> str:
        """The setting, then per layer the recency probability, its direction and the Definition-1
        decision with its reason, at the family-wise ``level``."""
        c = self.config
        lines = [
            f"alpha={c.alpha:g} gamma={c.gamma:g} norm={c.norm} n={c.n} d={c.d} samples={c.samples} "
            f"seed={c.seed} engine={self.engine}"
        ]
        for l in range(1, c.layers + 1):
            rp, se, how = self.rp(l)
            shown = (
                f"{pm(rp, se)} ({how}; {self.direction(l, level=level)})"
                if c.n >= 3
                else "undefined (n < 3)"
            )
            d = self.decision(l, level=level)
            lines.append(
                f"layer {l}: recency probability {shown}; Definition 1 {d.word}: {d.reason}"
            )
        return "\n".join(lines)

    @property
    def samples(self) -> int:
        return self.config.samples

    # -- checks -----------------------------------------------------------------------------
    def check_finite(self) -> SimResult:
        """ValueError naming the parameter that drove it when a layer's numbers overflowed, else ``self``."""
        lower = np.tri(self.config.n, dtype=bool)
        for l in range(self.config.layers):
            if not (
                np.isfinite(self.score_mean[l][lower]).all()
                and np.isfinite(self.sq_norm_mean[l]).all()
            ):
                raise ValueError(overflow_message(self.config, l))
        return self

    def plot(self, path=None, *, include_diagonal: bool = False):
        """Heatmaps of every layer's mean scores, by the book's convention (:mod:`recency_lib.plot`; needs
        matplotlib), each titled with its recency probability; with ``path`` (.png, .svg or .pdf) also
        written there. Returns the Figure."""
        from .plot import check_plot_path, plot_result, save

        if path is not None:
            check_plot_path(path)
        fig = plot_result(self, include_diagonal=include_diagonal)
        if path is not None:
            save(fig, path)
        return fig

    # -- files ------------------------------------------------------------------------------
    def _meta(self) -> dict:
        meta = {name: getattr(self, name) for name in _META}
        return {
            "format": FORMAT,
            "config": self.config.to_dict(),
            **meta,
            "elapsed_seconds": None if math.isnan(self.elapsed_seconds) else self.elapsed_seconds,
        }

    def to_dict(self) -> dict:
        """JSON-ready: the metadata, then every array as nested lists (NaN as null)."""

        def lists(a):
            return np.where(np.isnan(a), None, a).tolist()

        return {**self._meta(), **{name: lists(getattr(self, name)) for name in ARRAY_FIELDS}}

    @classmethod
    def from_dict(cls, data, config: SimConfig | None = None) -> SimResult:
        """The result of a :meth:`to_dict` dict; with ``config``, it must be for exactly that config."""
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
        """Write atomically: a ``.npz`` path gets the binary form, any other path JSON. The path must
        hold nothing yet or a result file of this library (ValueError before anything is written)."""
        check_output_path(path, "path", ours=is_result_file, what=RESULT_FILE)
        return self._write(path)

    def _write(self, path) -> Path:
        """:meth:`save` without the check of what the path holds (the results cache's own entries)."""
        self.check_finite()
        if Path(path).suffix == ".npz":
            arrays = {name: getattr(self, name) for name in ARRAY_FIELDS}
            meta = np.array(json.dumps(self._meta()))
            return atomic_write(path, lambda fh: np.savez(fh, meta=meta, **arrays), binary=True)
        text = json.dumps(self.to_dict())
        return atomic_write(path, lambda fh: fh.write(text))

    @classmethod
    def load(cls, path, config: SimConfig | None = None) -> SimResult:
        """Read a file written by :meth:`save` (format by its suffix), its keys, shapes and dtypes
        checked; with ``config``, it must hold a result for exactly that config. ValueError naming the
        file otherwise."""
        try:
            if Path(path).suffix != ".npz":
                with open(path, encoding="utf-8") as fh:
                    return cls.from_dict(json.load(fh), config)
            with np.load(path, allow_pickle=False) as z:
                if set(z.files) != {"meta", *ARRAY_FIELDS}:
                    raise ValueError(
                        f"members {short(sorted(z.files))}; allowed: meta and the arrays of {FORMAT}"
                    )
                cfg, meta = _read_meta(json.loads(str(z["meta"][()])), config)
                return _made(cls, cfg, meta, {name: z[name] for name in ARRAY_FIELDS})
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{shown(path)}: {exc}") from None


def is_result_file(path: Path) -> bool:
    """Whether ``path`` is a result file this library wrote (any version): what a save may replace."""
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                return str(z["meta"][()]).startswith(f'{{"format": "{FORMAT_NAME}/')
        with open(path, "rb") as fh:
            return fh.read(64).startswith(f'{{"format": "{FORMAT_NAME}/'.encode())
    except Exception:  # unreadable, not an archive, no meta: not ours
        return False


def _read_meta(data, expected: SimConfig | None) -> tuple[SimConfig, dict]:
    """The config and the metadata fields of a file's ``data``, checked."""
    if not isinstance(data, dict) or data.get("format") not in READABLE:
        fmt = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"format={short(fmt)} is not a readable SimResult; allowed: {FORMAT!r}")
    try:
        cfg = SimConfig.from_dict(data["config"])
        meta = {k: data[k] for k in _META if k in data}
        meta["elapsed_seconds"] = (
            math.nan if meta.get("elapsed_seconds") is None else float(meta["elapsed_seconds"])
        )
        meta["block_size"] = check_int("block_size", meta["block_size"], 1)
        if (
            meta["engine"] not in ("dense", "gram")
            or not isinstance(meta["library_version"], str)
            or not isinstance(meta.get("extra", {}), dict)
        ):
            raise ValueError(f"engine, library_version or extra of {short(meta)} is not allowed")
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"the metadata lacks or mistypes {exc}; allowed: a SimResult file"
        ) from None
    if expected is not None and cfg != expected:
        diff = {k: v for k, v in cfg.to_dict().items() if expected.to_dict()[k] != v}
        raise ValueError(f"the file holds a result for another config (differs in {short(diff)})")
    return cfg, meta


def _made(cls, cfg: SimConfig, meta: dict, arrays: dict) -> SimResult:
    for name, a in arrays.items():
        if a.dtype != np.float64 or a.shape != expected_shape(cfg, name):
            raise ValueError(
                f"{name} is {a.dtype} of shape {a.shape}; allowed: float64 of shape "
                f"{expected_shape(cfg, name)}"
            )
    return cls(config=cfg, **meta, **arrays)


def overflow_message(cfg: SimConfig, layer: int) -> str:
    """What overflowed, at which layer, and which parameter drove it."""
    where = f"the simulation overflowed float64 at layer {layer + 1} of {cfg.layers}"
    if abs(cfg.gamma) > 1:
        return (
            f"gamma={cfg.gamma!r}: {where} (the residual scales the state by |gamma| per layer); allowed: a "
            f"smaller |gamma| or at most {max(1, layer)} layers"
        )
    if not NORMS[cfg.norm].scales:
        return (
            f"layers={cfg.layers}: {where} (without a normalization the state grows with depth); allowed: "
            f"layers <= {max(1, layer)}, or norm='layernorm' / 'rms'"
        )
    if cfg.eps == 0.0:
        return f"eps=0.0: {where} (a state with zero variance divides 0 by 0); allowed: eps > 0 (e.g. 1e-12)"
    return f"{where}; allowed: a config whose states stay finite"
