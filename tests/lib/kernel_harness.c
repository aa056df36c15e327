/* A C-only driver of the compiled kernel, for builds that cannot be loaded into this Python: another
 * CPU's (tests/lib/test_kernel_builds.py cross-compiles it for 64-bit ARM and runs it under qemu).
 * It includes the kernel's source, so it runs exactly the kernel's code: the draws and the gram
 * block, as py_gram_draws and py_gram_block call them (the same Block fields and block_alloc), for a few settings
 * that take the specialised n = 10 code and the general code, with and without LayerNorm and the
 * residual, with the norm placed before attention and elsewhere, plus the vector helpers on edge values. It prints one line per case: the case and an
 * FNV-1a hash of every output byte. Two builds give the same bits iff they print the same lines.
 * The Python API is never called: the file links without libpython (the glue functions stay
 * unreferenced). */
#include "../../recency_lib/_kernel.c"

#include <stdio.h>

static uint64_t fnv(uint64_t h, const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

/* A placement (recency_lib.placements) as the kernel's flags: pre-norm is all zero. */
typedef struct { int raw_scores, raw_values, out_norm, mean_col; } Where;

static const Where PRE = {0, 0, OUT_NONE, 0}, POST = {1, 1, OUT_SUM, 1}, SANDWICH = {0, 0, OUT_SUBLAYER, 0},
                   QK_OUTPUT = {0, 1, OUT_SUBLAYER, 0};

static int block_case(int64_t n, int64_t d, int64_t layers, int64_t nb, int normalize, double gamma, uint32_t seed,
                      Where at)
{
    const int64_t dof0 = normalize ? d - 1 : d, w = n < dof0 ? n : dof0;   /* (sampling.gram_width) */
    const int64_t tz = row_start(n, w), q = tz - w + (at.mean_col ? n : 0);   /* strictly-lower, then means */
    const Layout lay = layout_of(n);
    const int64_t t = n * (n + 1) / 2, nf = lay.nf, nc = nf - lay.o_step;
    double *chi2 = malloc(w * nb * sizeof(double)), *normals = malloc((q ? q : 1) * nb * sizeof(double));
    double *shift = calloc(layers * nf, sizeof(double)), *s1 = calloc(layers * nf, sizeof(double));
    double *s2 = calloc(layers * nf, sizeof(double)), *sc = calloc(layers * nc, sizeof(double));
    const uint32_t key[3] = {seed, 0x9e3779b9u, (uint32_t)n};
    vd *out = aligned(w);
    vi *todo = aligned(w);
    draw_block(key, nb, w, dof0, q, chi2, normals, out, todo);
    free(out); free(todo);

    Block k = {0};
    k.n = n; k.w = w; k.nb = nb; k.layers = layers; k.mode = MODE_PLAIN; k.normalize = normalize; k.gain = 1.0;
    k.d = (double)d; k.gamma = gamma; k.eps = 1e-12; k.tie_rtol = 1e-12;
    k.o_attn = t; k.o_sq = 2 * t; k.o_diag = lay.o_diag; k.o_step = lay.o_step; k.o_row = lay.o_row;
    k.o_trend = lay.o_trend; k.o_rp = lay.o_rp; k.nf = nf;
    k.chi2 = chi2; k.normals = normals; k.shift = shift; k.s1 = s1; k.s2 = s2; k.sc = sc;
    k.raw_scores = at.raw_scores; k.raw_values = at.raw_values; k.out_norm = at.out_norm; k.mean_col = at.mean_col;
    if (block_alloc(&k) < 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    run_block(&k);
    uint64_t h = 1469598103934665603ULL;
    h = fnv(h, chi2, w * nb * sizeof(double));
    h = fnv(h, normals, q * nb * sizeof(double));
    h = fnv(h, shift, layers * nf * sizeof(double));
    h = fnv(h, s1, layers * nf * sizeof(double));
    h = fnv(h, s2, layers * nf * sizeof(double));
    h = fnv(h, sc, layers * nc * sizeof(double));
    printf("block n=%lld d=%lld layers=%lld samples=%lld norm=%d gamma=%g placement=%d%d%d%d: %016llx\n",
           (long long)n, (long long)d, (long long)layers, (long long)nb, normalize, gamma, at.raw_scores,
           at.raw_values, at.out_norm, at.mean_col, (unsigned long long)h);
    block_free(&k);
    free(chi2); free(normals); free(shift); free(s1); free(s2); free(sc);
    return 0;
}

static void helpers_case(void)
{
    /* vfma and vsqrt against the C library's fma and sqrt, lane by lane, on edge values and a
     * pseudo-random spread of magnitudes (the intrinsic and the loop must round alike) */
    const double edge[] = {0.0, -0.0, 1.0, -1.0, 1e-310, -1e-310, 1e308, -1e308, INFINITY, -INFINITY, NAN,
                           1.0 + 0x1p-52, 0x1p-1074, 3.0, 1.0 / 3.0, -2.5e-17};
    const int ne = sizeof edge / sizeof edge[0];
    uint64_t x = 88172645463325252ULL;
    long bad = 0;
    for (int it = 0; it < 4000; it++) {
        vd a, b, c;
        for (int l = 0; l < V; l++) {
            double v[3];
            for (int j = 0; j < 3; j++) {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                v[j] = it < ne * ne ? edge[(j == 0 ? it : j == 1 ? it / ne : 7 * it) % ne + 0 * l]
                                    : ldexp((double)(x >> 11) / 9007199254740992.0 - 0.5, (int)(x % 40) - 20);
            }
            a[l] = v[0]; b[l] = v[1]; c[l] = v[2];
        }
        vd r = vfma(a, b, c), s = vsqrt(vabs(a));
        for (int l = 0; l < V; l++) {
            double want = fma(a[l], b[l], c[l]), root = sqrt(fabs(a[l]));
            bad += memcmp(&r[l], &want, 8) != 0 && !(r[l] != r[l] && want != want);
            bad += memcmp(&s[l], &root, 8) != 0 && !(s[l] != s[l] && root != root);
        }
    }
    printf("helpers vfma vsqrt: %ld lanes differ from fma/sqrt\n", bad);
}

int main(void)
{
    helpers_case();
    block_case(10, 64, 4, 203, 1, 1.0, 1, PRE);      /* the specialised n = 10 code; a short last tile */
    block_case(10, 16, 3, 64, 0, 0.0, 2, PRE);
    block_case(11, 64, 3, 97, 1, 0.5, 3, PRE);       /* the general code */
    block_case(16, 8, 2, 40, 1, 0.0, 4, PRE);        /* w = d - 1 < n */
    block_case(40, 64, 2, 9, 1, 1.0, 5, PRE);        /* one group per tile, sums lane by lane */
    block_case(10, 64, 4, 203, 1, 1.0, 6, POST);     /* LayerNorm's means in the raw scores */
    block_case(11, 64, 3, 97, 1, 0.5, 7, SANDWICH);  /* a norm after the attention's output */
    block_case(10, 16, 3, 64, 1, 1.0, 8, QK_OUTPUT); /* raw values */
    return 0;
}
