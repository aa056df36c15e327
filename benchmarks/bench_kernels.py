"""Kernel-level measurements behind the design of recency_lib.kernels (CPU time per sample).

    python benchmarks/bench_kernels.py            # ~1 minute

Each section times one design question on blocks of the Figure-1 setting alpha = 0.5, gamma = 1,
LayerNorm, n = 10, d = 64, 4 layers, with the variants interleaved in one process (best of
several rounds of CPU time: robust against other load on a shared machine, which slows every
variant alike). Every variant is checked against the reference before it is timed.

1. numpy formulations of the block kernel vs the numba kernel (coordinates -> moments), and
   the random draws they share: the numba decision (adopt only if >= 3x faster end to end).
2. numba kernel: np.exp (libm, scalar) vs the kernel's vectorisable exp.
3. block size: kernel time and whole-block time (seed + draws + kernel) per sample.
"""
from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recency_lib import SimConfig  # noqa: E402
from recency_lib import kernels  # noqa: E402
from recency_lib.engines import block_moments, layer_features, layer_steps  # noqa: E402
from recency_lib.kernels import (_packed, block_moments_numpy, feature_layout, gram_block_moments,  # noqa: E402
                                 moments_of, n_features, numba_kernel)
from recency_lib.metrics import TIE_RTOL, n_triples, order_fraction  # noqa: E402
from recency_lib.sampling import gram_assemble, gram_draws, sigma_cholesky  # noqa: E402
from recency_lib.stats import Moments  # noqa: E402

CFG = SimConfig(alpha=0.5, gamma=1.0, norm="layernorm", n=10, d=64, layers=4)


# -- numpy variants: R (n, m, B) -> (mean, M2) (layers, F) -----------------------------------------

def layer_v010(r, *, d, norm, gamma, eps, layers):
    """As recency_lib 0.1.0: batch first, model.layer on full n x n matrices (masked exp),
    fancy-index gathering into (B, layers, F), Moments.of."""
    x = np.ascontiguousarray(r.transpose(2, 0, 1))                  # (B, n, m)
    steps = layer_steps(x, norm=norm, d=d, gamma=gamma, eps=eps, layers=layers, centred=True)
    m = Moments.of(layer_features(steps, x.shape[1], layers, x.shape[0]))
    return m.mean, m.m2


def packed_reduceat(r, *, d, norm, gamma, eps, layers):
    """Batch last, packed lower triangle (T, B), row-wise max/sum with ufunc.reduceat, fancy
    indexing for the (T, m, B) products."""
    n, _, size = r.shape
    rows, cols, starts, later, ik, ij = _packed(n)
    lay = feature_layout(n)
    feats = np.empty((layers, n_features(n), size))
    rsd, total, x = 1.0 / math.sqrt(d), n_triples(n), r
    for l in range(layers):
        f = feats[l]
        sq = np.einsum("iwb,iwb->ib", x, x)
        y = x * (1.0 / np.sqrt(sq / d + eps))[:, None, :] if norm != "none" else x
        s = np.einsum("twb,twb->tb", y[rows], y[cols]) * rsd
        z = np.exp(s - np.maximum.reduceat(s, starts, axis=0)[rows])
        a = z * (1.0 / np.add.reduceat(z, starts, axis=0))[rows]
        f[lay["score"]], f[lay["attn"]], f[lay["sq_norm"]] = s, a, sq
        f[lay["diff"]] = s[later] - s[later - 1]
        tol = TIE_RTOL * np.maximum(1.0, np.abs(s).max(axis=0))
        f[lay["rp"].start] = order_fraction(s[ik] - s[ij], tol, axis=0) if total else np.nan
        if l + 1 < layers:
            x_next = np.add.reduceat(a[:, None, :] * y[cols], starts, axis=0)
            if gamma != 0.0:
                x_next += gamma * x
            x = x_next
    return moments_of(feats)


def rowloop_batch_last(r, *, d, norm, gamma, eps, layers):
    """Batch last, a Python loop over query rows, contiguous slices only (no fancy indexing)."""
    n, m, size = r.shape
    rows, cols, starts, later, ik, ij = _packed(n)
    lay = feature_layout(n)
    feats = np.empty((layers, n_features(n), size))
    rsd, total, x = 1.0 / math.sqrt(d), n_triples(n), r
    s = np.empty((rows.size, size))
    a = np.empty_like(s)
    for l in range(layers):
        f = feats[l]
        sq = np.einsum("iwb,iwb->ib", x, x)
        y = x * (1.0 / np.sqrt(sq * (1.0 / d) + eps))[:, None, :] if norm != "none" else x
        x_next = np.empty_like(x)
        for i in range(n):
            p = starts[i]
            si = s[p:p + i + 1]
            np.einsum("kb,jkb->jb", y[i], y[:i + 1], out=si)
            si *= rsd
            ai = a[p:p + i + 1]
            np.subtract(si, si.max(axis=0), out=ai)
            np.exp(ai, out=ai)
            ai *= 1.0 / ai.sum(axis=0)
            if l + 1 < layers:
                np.einsum("jb,jkb->kb", ai, y[:i + 1], out=x_next[i])
        f[lay["score"]] = s
        f[lay["attn"]] = a
        f[lay["diff"]] = s[later] - s[later - 1]
        if total:
            tol = TIE_RTOL * np.maximum(1.0, np.abs(s).max(axis=0))
            f[lay["rp"].start] = order_fraction(s[ik] - s[ij], tol, axis=0)
        else:
            f[lay["rp"].start] = np.nan
        f[lay["sq_norm"]] = sq
        if l + 1 < layers:
            if gamma != 0.0:
                x_next += gamma * x
            x = x_next
    return moments_of(feats)


def matmul_batch_first(r, *, d, norm, gamma, eps, layers):
    """Batch first (B, n, m), stacked matmuls, additive -inf mask, packed features gathered once."""
    n, m, size = r.shape
    rows, cols, starts, later, ik, ij = _packed(n)
    lay = feature_layout(n)
    flat_p = rows * n + cols                                         # packed -> flat (n*n)
    feats = np.empty((size, layers, n_features(n)))
    rsd, total = 1.0 / math.sqrt(d), n_triples(n)
    mask = np.where(np.tri(n, dtype=bool), 0.0, -np.inf)
    x = np.ascontiguousarray(r.transpose(2, 0, 1))
    for l in range(layers):
        f = feats[:, l]
        sq = np.einsum("bik,bik->bi", x, x)
        y = x * (1.0 / np.sqrt(sq * (1.0 / d) + eps))[..., None] if norm != "none" else x
        s = np.matmul(y, y.transpose(0, 2, 1))
        s *= rsd
        z = s + mask
        z -= z.max(axis=-1, keepdims=True)
        np.exp(z, out=z)
        z *= 1.0 / z.sum(axis=-1, keepdims=True)
        sp = s.reshape(size, n * n)[:, flat_p]
        f[:, lay["score"]] = sp
        f[:, lay["attn"]] = z.reshape(size, n * n)[:, flat_p]
        f[:, lay["diff"]] = sp[:, later] - sp[:, later - 1]
        if total:
            tol = TIE_RTOL * np.maximum(1.0, np.abs(sp).max(axis=1))
            f[:, lay["rp"].start] = order_fraction(sp[:, ik] - sp[:, ij], tol[:, None], axis=1)
        else:
            f[:, lay["rp"].start] = np.nan
        f[:, lay["sq_norm"]] = sq
        if l + 1 < layers:
            x_next = np.matmul(z, y)
            if gamma != 0.0:
                x_next += gamma * x
            x = x_next
    m = Moments.of(feats)
    return m.mean, m.m2


NUMPY_VARIANTS = {
    "v0.1.0 layer (batch first, full n x n)": layer_v010,
    "batch first, matmul, packed gather": matmul_batch_first,
    "batch last, packed + reduceat": packed_reduceat,
    "batch last, row loop": rowloop_batch_last,
    "batch last, row loop, trapezoid (reference)": block_moments_numpy,
}


def _best_of(fns: dict, rounds: int, per_call_samples: int) -> dict:
    """CPU microseconds per sample, best of ``rounds`` interleaved rounds."""
    best = {k: math.inf for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t = time.process_time()
            fn()
            best[k] = min(best[k], (time.process_time() - t) / per_call_samples * 1e6)
    return best


def _check(ref, got, what):
    for u, v in zip(ref, got):
        fin = np.isfinite(u)
        np.testing.assert_allclose(v[fin], u[fin], rtol=1e-9, atol=1e-12 * np.abs(u[fin]).max(), err_msg=what)


def section_numpy_vs_numba(sizes, samples: int, rounds: int) -> dict:
    """{(B, variant): CPU us per sample}, every (B, variant) interleaved in every round."""
    kw = dict(d=CFG.d, norm=CFG.norm, gamma=CFG.gamma, eps=CFG.eps, layers=CFG.layers)
    fns, counts = {}, {}
    for bsize in sizes:
        blocks = max(1, samples // bsize)
        draws = [gram_draws(CFG, np.random.default_rng(k), bsize) for k in range(blocks)]
        ref = block_moments_numpy(gram_assemble(CFG, *draws[0]), **kw)
        for name, fn in NUMPY_VARIANTS.items():
            _check(ref, fn(gram_assemble(CFG, *draws[0]), **kw), name)
            fns[bsize, name] = (lambda fn=fn, draws=draws: [fn(gram_assemble(CFG, *d), **kw) for d in draws])
        if numba_kernel() is not None:
            _check(ref, gram_block_moments(CFG, *draws[0], kernel="numba"), "numba")
            fns[bsize, "numba kernel"] = lambda draws=draws: [gram_block_moments(CFG, *d, kernel="numba")
                                                               for d in draws]
        seeds = [np.random.SeedSequence(0, spawn_key=(k,)) for k in range(blocks)]
        fns[bsize, _DRAWS] = (lambda seeds=seeds, bsize=bsize:
                              [gram_draws(CFG, np.random.default_rng(s), bsize) for s in seeds])
        for key in fns:
            counts.setdefault(key, bsize * blocks)
    best = {k: math.inf for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t = time.process_time()
            fn()
            best[k] = min(best[k], (time.process_time() - t) / counts[k] * 1e6)
    return best


_DRAWS = "random draws (seed + chi2 + normals), shared"


def _kernel_variant(replace: dict):
    """The numba kernel compiled from its source with text replacements (for A/B timing)."""
    import numba

    src = inspect.getsource(kernels._kernel)
    for old, new in replace.items():
        assert old in src, f"kernel source changed; update the benchmark's patch for {old!r}"
        src = src.replace(old, new)
    ns = dict(np=np)
    exec(compile(src, "<kernel variant>", "exec"), ns)
    return numba.njit(nogil=True, error_model="numpy")(ns["_kernel"])


def _run_kernel(kern, draws):
    n = CFG.n
    mean = np.empty((CFG.layers, n_features(n)))
    m2 = np.empty_like(mean)
    chol = sigma_cholesky(n, CFG.c)
    for chi2, normals in draws:
        kern(chi2, normals, chol, True, False, n, float(CFG.d), True, CFG.gamma, CFG.eps, CFG.layers,
             TIE_RTOL, mean, m2, np.empty((0, 0, 0)), *kernels._workspace(n, chi2.shape[0], chi2.shape[1]))
    return mean, m2


LIBM_EXP = {"""                    v = -745.5 if v < -745.5 else v
                    e = v * 1.4426950408889634 + 6755399441055744.0""": """                    a[b] = np.exp(v)
                    tmp[b] += a[b]
                    continue
                    e = v * 1.4426950408889634 + 6755399441055744.0""",
            """                for b in range(nb):
                    kb = ebi[b] - 0x4338000000000000
                    sbi[b] = ((kb + 1087) if kb < -1020 else (kb + 1023)) << 52
                for b in range(nb):
                    kb = ebi[b] - 0x4338000000000000
                    val = a[b] * sb[b]
                    val = val * 5.421010862427522e-20 if kb < -1020 else val
                    a[b] = val
                    tmp[b] += val
""": ""}


def section_exp(bsize: int, blocks: int, rounds: int) -> dict:
    draws = [gram_draws(CFG, np.random.default_rng(k), bsize) for k in range(blocks)]
    fast, libm = numba_kernel(), _kernel_variant(LIBM_EXP)
    _check(_run_kernel(fast, draws[:1]), _run_kernel(libm, draws[:1]), "libm exp variant")
    return _best_of({"kernel with its vectorisable exp": lambda: _run_kernel(fast, draws),
                     "kernel with np.exp (libm)": lambda: _run_kernel(libm, draws)}, rounds, bsize * blocks)


def section_block_size(sizes, samples: int, rounds: int) -> tuple[dict, dict]:
    draws = {b: [gram_draws(CFG, np.random.default_rng(k), b) for k in range(max(1, samples // b))] for b in sizes}
    kern = {b: (lambda b=b: [gram_block_moments(CFG, *d, kernel="numba") for d in draws[b]]) for b in sizes}
    whole = {b: (lambda b=b: [block_moments(CFG, "gram", k, b, "numba") for k in range(max(1, samples // b))])
             for b in sizes}
    n_samp = {b: b * max(1, samples // b) for b in sizes}
    k_best = {b: math.inf for b in sizes}
    w_best = {b: math.inf for b in sizes}
    for _ in range(rounds):
        for b in sizes:
            for fn, best in ((kern[b], k_best), (whole[b], w_best)):
                t = time.process_time()
                fn()
                best[b] = min(best[b], (time.process_time() - t) / n_samp[b] * 1e6)
    return k_best, w_best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--blocks", default="128,256,512,1024", help="block sizes for section 1")
    ap.add_argument("--block", type=int, default=512, help="block size for section 2")
    ap.add_argument("--samples", type=int, default=2 ** 13, help="samples per timed call")
    args = ap.parse_args(argv)
    print(f"CPU us per sample (process time, best of {args.rounds} interleaved rounds); {CFG}")
    sizes = [int(b) for b in args.blocks.split(",")]
    print("\n1. block kernel, coordinates -> moments (numpy variants include assembling R)")
    print("   " + "".join(f"{'B=' + str(b):>9}" for b in sizes))
    res = section_numpy_vs_numba(sizes, args.samples, args.rounds)
    for k in dict.fromkeys(name for _, name in res):
        print("   " + "".join(f"{res[b, k]:9.2f}" for b in sizes) + f"  {k}")
    if numba_kernel() is None:
        print("   (numba not installed: no numba numbers)")
        return 0
    best = lambda keys: min((res[b, k] + res[b, _DRAWS], k, b) for b in sizes for k in keys)  # noqa: E731
    np_us, np_name, np_b = best(NUMPY_VARIANTS)
    nb_us, _, nb_b = best(["numba kernel"])
    print(f"   best end to end (kernel + draws): numpy {np_us:.2f} ({np_name}, B={np_b}) vs numba "
          f"{nb_us:.2f} (B={nb_b}): {np_us / nb_us:.1f}x")
    print(f"\n2. exp inside the numba kernel (B = {args.block})")
    for k, v in section_exp(args.block, max(1, args.samples // args.block), args.rounds).items():
        print(f"   {v:7.2f}  {k}")
    print("\n3. block size (numba): kernel only | whole block (seed + draws + kernel)")
    k_best, w_best = section_block_size([64, 128, 256, 512, 1024, 2048, 4096], 2 ** 14, args.rounds)
    for b in k_best:
        print(f"   B={b:5d}: {k_best[b]:6.2f} | {w_best[b]:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
