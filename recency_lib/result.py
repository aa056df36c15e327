"""SimResult: what a simulation returns, with a lossless round trip to JSON (readable) or .npz
(binary, compressed; what the results cache uses, since a result at n = 512 is ~90 MB of JSON)."""
from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from .config import SimConfig
from .metrics import definition1_verdict, familywise_z
from .validation import check_choice

FORMAT = "recency_lib.SimResult/2"
_OLD_FORMATS = ("recency_lib.SimResult/1",)     # readable: version 1 lacks the control-variate fields
_ARRAYS_V1 = ("score_mean", "score_sem", "attn_mean", "attn_sem", "diff_mean", "diff_sem",
              "recency_probability", "recency_probability_sem", "sq_norm_mean", "sq_norm_sem")
_ARRAYS = _ARRAYS_V1 + ("diff_cv_mean", "diff_cv_sem", "row_trend_mean", "row_trend_sem", "row_trend_cv_mean",
                        "row_trend_cv_sem", "trend_mean", "trend_sem", "trend_cv_mean", "trend_cv_sem",
                        "recency_probability_cv", "recency_probability_cv_sem")
ESTIMATORS = ("cv", "plain")


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
      counts one half).
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
      the diagonal steps S_ii - S_i,i-1 (no control with a known mean) carry the plain estimates.
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
        mean, sem = self.steps(estimator)
        return tuple(
            definition1_verdict(mean[l], sem[l], z, scale=float(np.nanmax(np.abs(self.score_mean[l]))))
            for l in range(self.config.layers)
        )

    def definition1_familywise(self, level: float = 0.05, estimator: str = "cv") -> tuple[str, ...]:
        """Per-layer verdict at the Bonferroni z that keeps the chance of any false call at ``level``.

        The plain verdict tests every adjacent difference at ``z`` separately, so a matrix with no
        order is called "violated" now and then (about 6% at z = 3 for n = 10); this one does not.
        """
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
        """A few lines: the setting, then per layer the recency probability and the Definition-1
        verdict (both from the control-variate estimates)."""
        c = self.config
        lines = [f"alpha={c.alpha:g} gamma={c.gamma:g} norm={c.norm} n={c.n} d={c.d} "
                 f"samples={c.samples} seed={c.seed} engine={self.engine} (estimates with control variates)"]
        for l, verdict in enumerate(self.definition1):
            rp, se = self.recency_probability_cv[l], self.recency_probability_cv_sem[l]
            lines.append(f"layer {l + 1}: recency probability {rp:.4f} ± {se:.4f}; "
                         f"Definition 1 {verdict} (z={self.z:g})")
        return "\n".join(lines)

    # -- serialisation ----------------------------------------------------------------------
    def _meta(self) -> dict:
        """Everything but the arrays, JSON-ready."""
        out = {"format": FORMAT, "config": self.config.to_dict()}
        for f in fields(self):
            if f.name != "config" and f.name not in _ARRAYS:
                out[f.name] = getattr(self, f.name)
        out["elapsed_seconds"] = _encode(self.elapsed_seconds)
        out["definition1"] = list(self.definition1)    # for readers of the file; recomputed on load
        return out

    def to_dict(self) -> dict:
        return {**self._meta(), **{name: _encode(getattr(self, name)) for name in _ARRAYS}}

    @classmethod
    def from_dict(cls, data: dict) -> "SimResult":
        """A result from :meth:`to_dict` output (also of format version 1, see :func:`_upgrade_v1`)."""
        fmt = data.get("format")
        if fmt not in (FORMAT, *_OLD_FORMATS):
            raise ValueError(f"format={fmt!r} is not a SimResult file; allowed: {FORMAT!r} (or {_OLD_FORMATS})")
        required = _ARRAYS if fmt == FORMAT else _ARRAYS_V1
        missing = [name for name in required if name not in data]
        if missing:
            raise ValueError(f"not a complete SimResult ({fmt}): arrays {missing} are missing")
        kw = {}
        for f in fields(cls):
            if f.name == "config":
                kw["config"] = SimConfig.from_dict(data["config"])
            elif f.name in _ARRAYS:
                if f.name in data:
                    kw[f.name] = np.array(_decode(data[f.name]), dtype=np.float64)
            elif f.name in data:
                kw[f.name] = data[f.name]
        kw["elapsed_seconds"] = _decode(data.get("elapsed_seconds"))
        if fmt != FORMAT:
            _upgrade_v1(kw)
        return cls(**kw)

    def save(self, path) -> Path:
        """Write atomically (temporary file in the same folder, then rename): a ``.npz`` path gets the
        compressed binary form (float64 arrays as they are, the rest as JSON text), any other path JSON."""
        path = Path(path)
        if path.suffix == ".npz":
            arrays = {name: np.asarray(getattr(self, name), dtype=np.float64) for name in _ARRAYS}
            meta = np.array(json.dumps(self._meta(), allow_nan=False))
            atomic_write(path, lambda fh: np.savez_compressed(fh, meta=meta, **arrays), binary=True)
        else:
            atomic_write_text(path, json.dumps(self.to_dict(), allow_nan=False))
        return path

    @classmethod
    def load(cls, path) -> "SimResult":
        """Read a file written by :meth:`save` (format chosen by the suffix, as there)."""
        path = Path(path)
        if path.suffix != ".npz":
            return cls.from_dict(json.loads(path.read_text()))
        with np.load(path, allow_pickle=False) as z:
            if "meta" not in z.files:
                raise ValueError(f"{path.name} is not a SimResult file: its metadata is missing")
            return cls.from_dict({**json.loads(str(z["meta"])), **{name: z[name] for name in _ARRAYS if name in z.files}})


def _upgrade_v1(kw: dict) -> None:
    """Fill the fields a version-1 file lacks: the control-variate estimates become the plain ones
    (what version 1 reported; its verdicts stay the same), the trends NaN (not recorded)."""
    layers, n = kw["diff_mean"].shape[:2]
    kw["diff_cv_mean"], kw["diff_cv_sem"] = kw["diff_mean"].copy(), kw["diff_sem"].copy()
    kw["recency_probability_cv"] = kw["recency_probability"].copy()
    kw["recency_probability_cv_sem"] = kw["recency_probability_sem"].copy()
    for name in ("row_trend_mean", "row_trend_sem", "row_trend_cv_mean", "row_trend_cv_sem"):
        kw[name] = np.full((layers, n), np.nan)
    for name in ("trend_mean", "trend_sem", "trend_cv_mean", "trend_cv_sem"):
        kw[name] = np.full(layers, np.nan)


def _encode(v):
    """float64 arrays -> nested lists; NaN -> None, +-inf -> "inf"/"-inf" (strict JSON).

    Python writes floats with the shortest repr that reads back to the same double: lossless.
    """
    if isinstance(v, np.ndarray):
        return [_encode(x) for x in v] if v.ndim else _encode(float(v))
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _decode(v):
    if v is None:
        return float("nan")
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, str):
        return float(v)          # "inf" / "-inf"
    return v


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one."""
    atomic_write(Path(path), lambda fh: fh.write(text))


def atomic_write(path: Path, write, binary: bool = False) -> None:
    """Call ``write(file_object)`` on a temporary file next to ``path``, then rename it into place:
    readers see the old file or the whole new one, and a failure leaves nothing behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)                       # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
