"""One gram block on either path, with its per-sample features: what the engine tests compare."""

import numpy as np

from recency_lib.engines import gram_features, kernel_block, kernel_sums
from recency_lib.features import control_slice, n_features
from recency_lib.stats import Moments


def gram_block(cfg, chi2, normals, kernel):
    """(Moments, features (B, layers, F)) of one gram block by ``kernel`` ("c" or "numpy")."""
    size = chi2.shape[-1]
    if kernel == "numpy":
        f = gram_features(cfg, chi2, normals)
        return Moments.of(f, control_slice(cfg.n)), f
    sums = [a[0] for a in kernel_sums(cfg, 1)]
    f = np.empty((cfg.layers, n_features(cfg.n), size))
    kernel_block(cfg, chi2, normals, sums, f)
    moments = Moments.from_sums(size, *sums, control_slice(cfg.n))
    return moments, np.ascontiguousarray(f.transpose(2, 0, 1))
