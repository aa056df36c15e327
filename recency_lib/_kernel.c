/* The compiled twin of the paper's layer: the gram engine's block kernel and the recency count.
 *
 * recency_lib.model.layer + recency_lib.features.layer_features in numpy are the reference; this
 * file computes the same per-sample quantities and reduces them to moment sums on the fly.
 * recency_lib/kernels.py is its Python face (argument checks, shapes); read that first.
 *
 * Layout. A block of B samples is walked in groups of V samples: V = 8 where the compiler targets
 * AVX-512 (-march=native on such a CPU), else V = 4. Every per-sample number of a group is a vector
 * `vd` of V doubles, one lane per sample (GCC vector extensions), so the sample index is the
 * innermost axis and every operation works on V samples at once (one AVX-512 or AVX2 instruction,
 * two SSE2 or 64-bit ARM NEON ones). The state of a group (coordinates, features: ~12 KB at n = 10 for V = 4) stays
 * in the L1 cache through all the layers. (8 lanes on AVX2 would be lowered to slow code: V = 8
 * only where one register holds them; measured: 4.5 times slower than V = 4 on an AVX2 build.)
 *
 * Rounding, the same on every CPU. Lanes never mix: each sample's arithmetic is a fixed sequence
 * of IEEE-754 operations (+, -, *, /, sqrt, and fma where written out: one rounding), whatever
 * the vector width the compiler picks. Built with -ffp-contract=off (no multiply-add is fused
 * unless written as fma) and without -ffast-math (no reordering); exp is the polynomial below,
 * never libm's (whose last bit differs between libraries and between its own ISA variants). Sums
 * over samples have one order whatever V: sample b adds into partial sum b % P (P = 8; with V = 4
 * a tile's groups alternate between two vectors of partials), the P partials are added in their
 * order at the end; where the sums are taken group by group (long rows), a group's lanes are added
 * in quads of Q = 4. So results are bitwise identical across machines and builds (tested:
 * tests/lib/test_kernel_builds.py compiles a baseline x86-64 build with another tile size and compares),
 * and differ from the numpy reference by float rounding only (~1e-15 relative).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#ifndef V
#if defined(__AVX512F__)
#define V 8                                   /* samples per group (vector lanes): one AVX-512 register */
#else
#define V 4                                   /* one AVX2 register, two SSE2 ones */
#endif
#endif
#define P 8                                   /* partial sums per feature: sample b adds into partial b % P */
#define H (P / V)                             /* vectors of partial sums per feature */
#define Q 4                                   /* a sum over one group's lanes adds them in quads of Q */
_Static_assert(V == 4 || V == 8, "V is 4 or 8: the order of every sum is defined for P = 8 and Q = 4");
typedef double vd __attribute__((vector_size(V * sizeof(double))));
typedef int64_t vi __attribute__((vector_size(V * sizeof(int64_t))));

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")   /* unroll completely when the trip count is a small constant */
#ifndef U_COORD
#define U_COORD UNROLL
#endif
#ifndef U_STEPS
#define U_STEPS UNROLL
#endif
#ifndef U_COUNT
#define U_COUNT UNROLL
#endif
#define SMALL 16
#ifndef TILE_GROUPS
#define TILE_GROUPS 8                         /* groups per tile at n <= 12; 4 up to n = 32, then one (larger states) */
#endif                              /* rows whose per-row scratch lives in registers */

INLINE vd splat(double a) { return (vd){} + a; }
INLINE vd vsel(vi mask, vd a, vd b) { return (vd)((mask & (vi)a) | (~mask & (vi)b)); }   /* mask ? a : b */

/* a * b + c with one rounding, per lane. The intrinsic where the ISA has one: written as a loop over
 * the lanes, GCC turns it into one vector fma only where it unrolls the code around it (the n = 10
 * block); in the general block it made V scalar fmas and the shuffles between them (measured on an
 * Intel AVX-512 CPU: two thirds of an n = 512 run; GCC 12 for aarch64 does the same). Either form
 * rounds once per lane: the same bits. On 64-bit ARM a vector of 4 doubles is two NEON registers. */
#if V == 4 && defined(__aarch64__) && defined(__ARM_NEON)
typedef union { vd v; float64x2_t h[2]; } NeonPair;
#endif

INLINE vd vfma(vd a, vd b, vd c)
{
#if V == 8 && defined(__AVX512F__)
    return (vd)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
#elif V == 4 && defined(__FMA__) && defined(__AVX__)
    return (vd)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#elif V == 4 && defined(__aarch64__) && defined(__ARM_NEON)
    NeonPair x = {a}, y = {b}, z = {c}, r;
    r.h[0] = vfmaq_f64(z.h[0], x.h[0], y.h[0]);       /* vfmaq_f64(c, a, b) = c + a * b, one rounding */
    r.h[1] = vfmaq_f64(z.h[1], x.h[1], y.h[1]);
    return r.v;
#else
    vd r;
    for (int l = 0; l < V; l++) r[l] = fma(a[l], b[l], c[l]);
    return r;
#endif
}

INLINE vd vsqrt(vd a)                         /* correctly rounded per lane, as sqrt() */
{
#if V == 8 && defined(__AVX512F__)
    return (vd)_mm512_sqrt_pd((__m512d)a);
#elif V == 4 && defined(__AVX__)
    return (vd)_mm256_sqrt_pd((__m256d)a);
#elif V == 4 && defined(__aarch64__) && defined(__ARM_NEON)
    NeonPair x = {a}, r;
    r.h[0] = vsqrtq_f64(x.h[0]);
    r.h[1] = vsqrtq_f64(x.h[1]);
    return r.v;
#else
    vd r;
    for (int l = 0; l < V; l++) r[l] = sqrt(a[l]);
    return r;
#endif
}

INLINE int vany(vi a)                         /* is any lane nonzero? (one test where the ISA has it) */
{
#if V == 8 && defined(__AVX512F__)
    return _mm512_test_epi64_mask((__m512i)a, (__m512i)a) != 0;
#elif V == 4 && defined(__AVX__)
    return !_mm256_testz_si256((__m256i)a, (__m256i)a);
#else
    int any = 0;
    for (int l = 0; l < V; l++) any |= a[l] != 0;
    return any;
#endif
}

INLINE vi vimax(vi a, vi b)                   /* lane-wise max of signed integers */
{
#if V == 8 && defined(__AVX512F__)
    return (vi)_mm512_max_epi64((__m512i)a, (__m512i)b);
#else
    vi m = a > b;
    return (a & m) | (b & ~m);
#endif
}

INLINE int vany_lt(vd a, vd b)                /* is a < b in any lane? (NaN: no) */
{
#if V == 8 && defined(__AVX512F__)
    return _mm512_cmp_pd_mask((__m512d)a, (__m512d)b, _CMP_LT_OQ) != 0;
#elif V == 4 && defined(__AVX__)
    return _mm256_movemask_pd((__m256d)(a < b)) != 0;
#else
    return vany(a < b);
#endif
}

INLINE vd vabs(vd a) { return (vd)((vi)a & INT64_MAX); }

INLINE vd vmax(vd a, vd b) { return vsel(a > b, a, b); }   /* a > b ? a : b (one maxpd on x86; a NaN gives b) */

INLINE double partials_sum(const vd *a)       /* the P partial sums of a feature, in their order */
{
    double s = a[0][0];
    for (int h = 0; h < H; h++)
        for (int l = h ? 0 : 1; l < V; l++) s += a[h][l];
    return s;
}

INLINE void add_quads(double *s, vd a)        /* *s += each quad of lanes, the lanes of a quad in order */
{
    for (int q = 0; q < V / Q; q++) *s += ((a[Q * q] + a[Q * q + 1]) + a[Q * q + 2]) + a[Q * q + 3];
}

/* exp(v) for v <= 0 (NaN stays NaN): v = k ln2 + r with a two-part ln2, |r| <= ln2 / 2, e^r by its
 * Taylor polynomial of degree 13 (truncation < 5e-18 relative), 2^k written into the exponent
 * bits. fma(v, log2 e, 1.5 * 2^52) rounds v log2 e to the integer k in its low bits. k < -1020
 * (results near or below the smallest normal) is scaled in two steps, so subnormals and the
 * underflow to 0 come out right. Measured against np.exp over [-745, 0]: < 4e-16 relative. */
#define ROUND 6755399441055744.0              /* 1.5 * 2^52 */
#define ROUND_BITS 0x4338000000000000LL       /* its bit pattern */
#define LOG2E 1.4426950408889634
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define TWO_M64 5.421010862427522e-20         /* 2^-64 */

/* The reduction and the polynomial: e^r for v = k ln2 + r, and k. */
INLINE vd exp_reduced(vd v, vi *k)
{
    vd e = vfma(v, splat(LOG2E), splat(ROUND));
    vd kf = e - splat(ROUND);
    vd r = vfma(-kf, splat(LN2_HI), v);
    r = vfma(-kf, splat(LN2_LO), r);
    vd p = splat(1.0 / 6227020800.0);                                   /* 1/13! */
    p = vfma(p, r, splat(1.0 / 479001600.0));
    p = vfma(p, r, splat(1.0 / 39916800.0));
    p = vfma(p, r, splat(1.0 / 3628800.0));
    p = vfma(p, r, splat(1.0 / 362880.0));
    p = vfma(p, r, splat(1.0 / 40320.0));
    p = vfma(p, r, splat(1.0 / 5040.0));
    p = vfma(p, r, splat(1.0 / 720.0));
    p = vfma(p, r, splat(1.0 / 120.0));
    p = vfma(p, r, splat(1.0 / 24.0));
    p = vfma(p, r, splat(1.0 / 6.0));
    p = vfma(p, r, splat(0.5));
    p = vfma(p, r, splat(1.0));
    p = vfma(p, r, splat(1.0));
    *k = (vi)e - ROUND_BITS;
    return p;
}

static __attribute__((noinline)) vd vexp_neg_low(vd v)   /* some lane below EXP_LOW (rare): clamp, two-step scale */
{
    vi k;
    vd p = exp_reduced(vsel(v < splat(-745.5), splat(-745.5), v), &k);
    vi tiny = k < -1020;
    vi bias = (tiny & 1087) | (~tiny & 1023);
    vd val = p * (vd)((k + bias) << 52);
    return vsel(tiny, val * splat(TWO_M64), val);
}

/* Above EXP_LOW every lane has k >= -1019: no clamp and one scale, the same bits as the two-step
 * path gives there (so the branch changes no result, only the work of a common group). */
#define EXP_LOW (-706.0)

#define EXP_SAFE 350.0                           /* |S| <= EXP_SAFE: S_ij - max_j S_ij >= -700 > EXP_LOW */

INLINE vd vexp_neg_common(vd v)                  /* v >= EXP_LOW (or NaN) in every lane */
{
    vi k;
    vd p = exp_reduced(v, &k);
    return p * (vd)((k + 1023) << 52);
}

INLINE vd vexp_neg(vd v)
{
    if (__builtin_expect(vany_lt(v, splat(EXP_LOW)), 0)) return vexp_neg_low(v);
    return vexp_neg_common(v);
}

/* -- the random numbers of a block ------------------------------------------------------------ */

/* Every random number of a gram block comes from Philox4x32-10 (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC 2011), a counter-based generator: 128 random bits are a fixed
 * function of a 128-bit counter and a 64-bit key, so each sample's numbers depend only on (block
 * key, sample index, which number) and the V lanes of a group run side by side with no shared
 * state. Counter words: (t, b, row, key2) with b the sample's index in the block and key2 a third
 * key word; row = i for the chi-square of coordinate row i (t = 2p gives the normals of tries 2p and
 * 2p + 1, t = 2p + 1 their uniforms), row = 0xffffffff for the standard normals (t = p gives normals
 * 2p and 2p + 1).
 *
 * From bits to numbers, with +, -, *, /, sqrt only (each rounded once, no fma), so that
 * recency_lib.streams repeats every bit in numpy:
 *   uniform   U = 52 random bits as a double in [0, 1) (bits under the exponent of 1.0, minus 1);
 *   normal    Box-Muller: r = sqrt(-2 log(1 - U1)), (r cos 2 pi U2, r sin 2 pi U2); log by the atanh
 *             series of the mantissa, sin and cos by Taylor polynomials on [-pi/4, pi/4] after an
 *             exact reduction of 4 U2 to the nearest quarter turn (all < 1e-16 relative);
 *   chi2_k    = 2 Gamma(k / 2): Marsaglia and Tsang's method (ACM TOMS 26, 2000) for k >= 2 (one
 *             normal and one uniform per try, accepted by the squeeze or the exact log test, about
 *             2-5 % rejected; see gamma_try below), the square of a normal for k = 1. */
typedef uint64_t vu __attribute__((vector_size(V * sizeof(uint64_t))));

#define M32 0xffffffffULL
#define ONE_BITS 0x3ff0000000000000ULL                 /* 1.0 */
#define NORMAL_ROW 0xffffffffULL
#define MAX_PAIRS 0x7fffffffULL                /* pairs of tries per chi^2: never reached */
#define HALF_PI 1.5707963267948966
#define LN2 0.6931471805599453
#define SQRT2 1.4142135623730951

/* a * m for a < 2^32 in every lane: the 32 x 32 -> 64-bit multiply (one pmuludq; GCC would emit a
 * full 64-bit multiply, three times slower, for the plain expression). Same bits on every path. */
INLINE vu mul32(vu a, uint32_t m)
{
#if defined(__AVX512F__) && V == 8
    return (vu)_mm512_mul_epu32((__m512i)a, _mm512_set1_epi64(m));
#elif defined(__AVX2__) && V == 4
    return (vu)_mm256_mul_epu32((__m256i)a, _mm256_set1_epi64x(m));
#elif defined(__SSE2__)
    vu r;
    for (int h = 0; h < V / 2; h++) {
        __m128i x;
        memcpy(&x, (const uint64_t *)&a + 2 * h, sizeof x);
        x = _mm_mul_epu32(x, _mm_set1_epi64x(m));
        memcpy((uint64_t *)&r + 2 * h, &x, sizeof x);
    }
    return r;
#else
    return a * (uint64_t)m;
#endif
}

typedef struct { vu k0[10], k1[10]; } RoundKeys;     /* a block's Philox round keys, one vector each */

INLINE RoundKeys round_keys(uint32_t k0, uint32_t k1)   /* the key schedule: k + r * (0x9E3779B9, 0xBB67AE85) mod 2^32 */
{
    RoundKeys ks;
    for (int r = 0; r < 10; r++) {
        ks.k0[r] = (vu){} + k0;
        ks.k1[r] = (vu){} + k1;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return ks;
}

INLINE void philox_n(vu (*c)[4], const int count, const RoundKeys *ks)
{   /* Philox4x32-10 of `count` counters in place, round by round (independent chains the processor
     * overlaps); words < 2^32 in 64-bit lanes; the round keys made once per block (no broadcast per round) */
    for (int r = 0; r < 10; r++) {
        for (int h = 0; h < count; h++) {
            vu p0 = mul32(c[h][0], 0xD2511F53u), p1 = mul32(c[h][2], 0xCD9E8D57u);
            vu c1 = c[h][1], c3 = c[h][3];
            c[h][0] = (p1 >> 32) ^ c1 ^ ks->k0[r];
            c[h][1] = p1 & M32;
            c[h][2] = (p0 >> 32) ^ c3 ^ ks->k1[r];
            c[h][3] = p0 & M32;
        }
    }
}

INLINE vd uniform52(vu hi, vu lo)                      /* [0, 1): the top 52 of the 64 bits hi:lo */
{
    return (vd)((((hi << 32) | lo) >> 12) | ONE_BITS) - splat(1.0);
}

/* c0 + c1 z + ... + c7 z^7 by Estrin's scheme (short dependency chains; z2 = z^2, z4 = z^4). */
INLINE vd poly8(vd z, vd z2, vd z4, const double *c)
{
    vd a = splat(c[0]) + splat(c[1]) * z, b = splat(c[2]) + splat(c[3]) * z;
    vd e = splat(c[4]) + splat(c[5]) * z, f = splat(c[6]) + splat(c[7]) * z;
    return (a + z2 * b) + z4 * (e + z2 * f);
}

INLINE vd vlog(vd u)                                   /* log u for u > 0, a normal number */
{
    vi bits = (vi)u;
#if defined(__AVX512DQ__)
    vd e = __builtin_convertvector((bits >> 52) - 1023, vd);       /* exponent (vcvtqq2pd) */
#else   /* without AVX-512 GCC converts int64 lanes one by one: the exponent e in [-1023, 1024] is exact as the
         * low bits of 1.5 * 2^52 + e (ROUND_BITS + e as a double) minus 1.5 * 2^52, the same value */
    vd e = (vd)((bits >> 52) + (ROUND_BITS - 1023)) - splat(ROUND);
#endif
    vd m = (vd)((bits & 0x000fffffffffffffLL) | (int64_t)ONE_BITS);    /* [1, 2) */
    vi big = m > splat(SQRT2);
    m = vsel(big, m * splat(0.5), m);
    e = vsel(big, e + splat(1.0), e);
    vd f = m - splat(1.0);                             /* exact */
    vd s = f / (splat(2.0) + f), z = s * s;            /* log m = 2 atanh s = 2 s (1 + z / 3 + z^2 / 5 + ...) */
    static const double c[11] = {1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15, 1.0 / 17,
                                 1.0 / 19, 1.0 / 21, 1.0 / 23};
    vd z2 = z * z, z4 = z2 * z2;
    vd p = poly8(z, z2, z4, c) + (z4 * z4) * ((splat(c[8]) + splat(c[9]) * z) + z2 * splat(c[10]));
    vd s2 = s + s;
    return e * splat(LN2) + (s2 + s2 * (z * p));
}

/* The Box-Muller pair of one Philox output. */
INLINE void box_muller(const vu w[4], vd *z0, vd *z1)
{
    vd u1 = splat(1.0) - uniform52(w[0], w[1]), t = uniform52(w[2], w[3]) * splat(4.0);   /* exact */
    vd r = vsqrt(splat(-2.0) * vlog(u1));
    vi q1 = t >= splat(0.5), q2 = t >= splat(1.5), q3 = t >= splat(2.5), q4 = t >= splat(3.5);
    vd qf = (vd)(q1 & (vi)splat(1.0)) + (vd)(q2 & (vi)splat(1.0)) + (vd)(q3 & (vi)splat(1.0))
            + (vd)(q4 & (vi)splat(1.0));
    vd phi = (t - qf) * splat(HALF_PI), z = phi * phi;  /* phi in [-pi/4, pi/4] */
    static const double sin_c[8] = {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800,
                                    1.0 / 6227020800.0, -1.0 / 1307674368000.0, 1.0 / 355687428096000.0};
    static const double cos_c[8] = {-1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800,
                                    1.0 / 479001600, -1.0 / 87178291200.0, 1.0 / 20922789888000.0};
    vd z2 = z * z, z4 = z2 * z2, ps = poly8(z, z2, z4, sin_c), pc = poly8(z, z2, z4, cos_c);
    vd sn = phi + phi * (z * ps), cs = splat(1.0) + z * pc;   /* sin phi, cos phi */
    vi a = q1 & ~q2, b = q2 & ~q3, d = q3 & ~q4;       /* quarter turns 1, 2, 3 (4 is 0) */
    vd cos_t = vsel(a, -sn, vsel(b, -cs, vsel(d, sn, cs)));
    vd sin_t = vsel(a, cs, vsel(b, -sn, vsel(d, -cs, sn)));
    *z0 = r * cos_t;
    *z1 = r * sin_t;
}

INLINE void counter(vu c[4], uint64_t t, vu b, uint64_t row, uint32_t key2)
{
    c[0] = (vu){} + t; c[1] = b; c[2] = (vu){} + row; c[3] = (vu){} + (uint64_t)key2;
}

/* chi^2 with `dof` degrees of freedom for the V samples b of coordinate row `row`: 2 Gamma(dof / 2)
 * by Marsaglia and Tsang, or the square of a normal for dof = 1. With dm = dof / 2 - 1/3, a try
 * takes x normal and u uniform in (0, 1]; with v = (1 + x / sqrt(9 dm))^3 > 0 it is accepted when
 * u < 1 - 0.0331 x^4 (the squeeze) or log u < x^2 / 2 + dm - dm v + dm log v, and gives 2 dm v.
 * Tries come in pairs: Philox call 2t gives the normals of tries 2t and 2t + 1 (Box-Muller), call
 * 2t + 1 their uniforms. A lane keeps its first accepted try, so its value depends on its own
 * counters only; the logs are computed only when a pending lane fails the squeeze (rarely: that
 * changes the cost, never a decision). A v^3 under 1e-300 counts as rejected: the log test rejects
 * it anyway (its right side is below -400 there), and the logs stay on normal numbers. */
INLINE vi gamma_try(vd x, vd u, double dm, double cc, vi todo, vd *out)
{
    vd v = splat(1.0) + splat(cc) * x;
    v = v * v * v;
    vd x2 = x * x;
    vi pos = v > splat(1e-300);
    vi ok = pos & (u < splat(1.0) - splat(0.0331) * (x2 * x2));
    if (vany(todo & pos & ~ok)) {                      /* a pending lane the squeeze did not accept */
        vd g = vsel(pos, v, splat(1.0));
        vd bound = splat(0.5) * x2 + splat(dm) - splat(dm) * g + splat(dm) * vlog(g);
        ok |= pos & (vlog(u) < bound);
    }
    ok &= todo;
    *out = vsel(ok, splat(2.0 * dm) * v, *out);
    return todo & ~ok;
}

/* Tries 2t and 2t + 1 of a chi^2 with dm = dof / 2 - 1/3 (> 0, dof >= 2) for the lanes still `todo`. */
INLINE vi gamma_pair(uint64_t t, vu b, uint64_t row, const uint32_t key[3], const RoundKeys *ks, double dm, double cc,
                      vi todo, vd *out)
{
    vu c[2][4];                                         /* the tries' normals and their uniforms */
    vd z0, z1;
    counter(c[0], 2 * t, b, row, key[2]);
    counter(c[1], 2 * t + 1, b, row, key[2]);
    philox_n(c, 2, ks);
    box_muller(c[0], &z0, &z1);
    todo = gamma_try(z0, splat(1.0) - uniform52(c[1][0], c[1][1]), dm, cc, todo, out);
    return gamma_try(z1, splat(1.0) - uniform52(c[1][2], c[1][3]), dm, cc, todo, out);
}

INLINE void store_lanes(double *dst, vd a, int64_t valid)
{
    if (valid == V) memcpy(dst, &a, sizeof a);
    else for (int64_t l = 0; l < valid; l++) dst[l] = a[l];
}

/* The draws of a block of nb samples, samples last (recency_lib.sampling.gram_draws): chi2 (m, nb),
 * row i with dof0 - i degrees of freedom, and q standard normals (q, nb). key: the block's three
 * 32-bit key words; out (m vectors) and todo (m masks): scratch. A group's chi-squares take their
 * first pair of tries row after row (independent work the processor overlaps), then the rows with
 * a lane still rejected go on. */
#ifndef NPAIRS
#define NPAIRS 4                                  /* normal pairs drawn together (draws 0.88 of one at a time, 2: 0.90) */
#endif

static void draw_block(const uint32_t key[3], int64_t nb, int64_t m, int64_t dof0, int64_t q,
                       double *restrict chi2, double *restrict normals, vd *restrict out, vi *restrict todo)
{
    const RoundKeys ks = round_keys(key[0], key[1]);
    for (int64_t b0 = 0; b0 < nb; b0 += V) {
        const int64_t valid = nb - b0 < V ? nb - b0 : V;
        vu b;
        for (int l = 0; l < V; l++) b[l] = (uint64_t)(b0 + l);
        for (int64_t i = 0; i < m; i++) {
            const int64_t dof = dof0 - i;
            if (dof == 1) {                            /* the square of a normal */
                vu c[4];
                vd z0, z1;
                counter(c, 0, b, (uint64_t)i, key[2]);
                philox_n(&c, 1, &ks);
                box_muller(c, &z0, &z1);
                out[i] = z0 * z0;
                todo[i] = (vi){};
                continue;
            }
            const double dm = 0.5 * (double)dof - 1.0 / 3, cc = 1.0 / sqrt(9.0 * dm);
            out[i] = splat(0.0);
            todo[i] = gamma_pair(0, b, (uint64_t)i, key, &ks, dm, cc, ~(vi){}, &out[i]);
        }
        for (int64_t i = 0; i < m; i++) {
            const double dm = 0.5 * (double)(dof0 - i) - 1.0 / 3, cc = 1.0 / sqrt(9.0 * dm);
            for (uint64_t t = 1; t < MAX_PAIRS && vany(todo[i]); t++)
                todo[i] = gamma_pair(t, b, (uint64_t)i, key, &ks, dm, cc, todo[i], &out[i]);
            store_lanes(chi2 + i * nb + b0, out[i], valid);
        }
        for (int64_t p = 0; 2 * p < q; p += NPAIRS) {  /* NPAIRS pairs at a time: independent chains */
            vu c[NPAIRS][4];
            vd z[2 * NPAIRS];
            for (int h = 0; h < NPAIRS; h++) counter(c[h], (uint64_t)(p + h), b, NORMAL_ROW, key[2]);
            philox_n(c, NPAIRS, &ks);
            for (int h = 0; h < NPAIRS; h++) box_muller(c[h], &z[2 * h], &z[2 * h + 1]);   /* (past q: not stored) */
            for (int64_t r = 0; r < 2 * NPAIRS && 2 * p + r < q; r++) store_lanes(normals + (2 * p + r) * nb + b0, z[r], valid);
        }
    }
}

/* -- GELU (the feed-forward block of the decoder layouts beyond the paper) ---------------------- */

/* GELU(x) = x Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2, the normal CDF. With t = |x| / sqrt 2,
 * erfc(t) = exp(-t^2) E(t), where E(t) = exp(t^2) erfc(t) is smooth and slowly varying; E is its
 * Chebyshev interpolant of degree 36 in w = 1 / (1 + t) on t in [0, 27] (beyond 27, erfc(t) < 1e-318
 * is taken as 0). The coefficients are generated by tests/lib/test_gelu.py (erfcx_chebyshev: mpmath,
 * 50 digits, interpolation at the Chebyshev nodes) and checked there; exp(-t^2) takes t^2 = x^2 / 2
 * in two parts (hi + lo, lo from an fma), so its rounding does not grow with t. Within 1e-14 relative of
 * the exact GELU (tested against mpmath); libm's and scipy's erf take ~22 ns per number here, this
 * 8 or 4 lanes at a time a few ns. NaN stays NaN; GELU(+inf) = +inf, GELU(-inf) = NaN (as x Phi(x)). */
#define ERFCX_DEG 36
#define ERFCX_TMAX 27.0
static const double ERFCX_C[ERFCX_DEG + 1] = {
    0.9573682686738842, 0.4992795037854813, 0.03171516056541191,
    -0.010114700990909277, 0.00012378564625321724, 0.0003972664573096517,
    -8.830551558676434e-05, -1.275156958235757e-06, 5.9647023692498e-06,
    -1.7029620802395053e-06, 1.0768885442698119e-07, 9.755529417509552e-08,
    -4.449983041932784e-08, 8.451388222085713e-09, 6.936525837845783e-10,
    -1.0844792690237294e-09, 3.938046521536551e-10, -6.330720520565302e-11,
    -1.2330008493420962e-11, 1.2425999097918862e-11, -4.5189896465931824e-12,
    7.914656542295062e-13, 1.2593101701985156e-13, -1.5492921241275974e-13,
    6.389804253799074e-14, -1.4357110499785106e-14, -2.957153713405875e-16,
    1.9436899463645178e-15, -1.0103792562031866e-15, 3.0250917766015475e-16,
    -3.589066180875244e-17, -1.9750329075932742e-17, 1.593736535050594e-17,
    -6.431840923653033e-18, 1.5337980448942377e-18, -1.501263764964243e-20,
    -1.6540015451617687e-19
};

#define GELU_U 8                              /* vectors in flight: the Clenshaw recurrence is a serial chain */

/* GELU of GELU_U vectors at once (their recurrences interleaved, so the processor overlaps them). */
INLINE void vgelu(vd *x)
{
    const double lo = 1.0 / (1.0 + ERFCX_TMAX), hi = 1.0;
    vd s2[GELU_U], b1[GELU_U], b2[GELU_U];
    vi far[GELU_U];
    for (int u = 0; u < GELU_U; u++) {
        vd t = vabs(x[u]) * splat(0.7071067811865476);         /* |x| / sqrt 2 */
        far[u] = (t > splat(ERFCX_TMAX)) | (t != t);
        vd w = splat(1.0) / (splat(1.0) + vsel(far[u], splat(0.0), t));   /* the series stays finite */
        vd s = (splat(2.0) * w - splat(lo + hi)) * splat(1.0 / (hi - lo));   /* [-1, 1] */
        s2[u] = s + s;
        b1[u] = b2[u] = splat(0.0);
    }
    for (int k = ERFCX_DEG; k >= 1; k--)               /* Clenshaw: b_k = c_k + 2 s b_{k+1} - b_{k+2} */
        for (int u = 0; u < GELU_U; u++) {
            vd b = splat(ERFCX_C[k]) + s2[u] * b1[u] - b2[u];
            b2[u] = b1[u];
            b1[u] = b;
        }
    for (int u = 0; u < GELU_U; u++) {
        vd e = splat(0.5 * ERFCX_C[0]) + splat(0.5) * s2[u] * b1[u] - b2[u];
        vd xc = vsel(far[u], splat(0.0), x[u]);
        vd xx = xc * xc, sq = splat(0.5) * xx;          /* t^2 = x^2 / 2 = sq + sq_lo exactly (not from t, */
        vd sq_lo = splat(0.5) * vfma(xc, xc, -xx);      /* whose rounding would grow the error with t^2) */
        vd erfc_t = vexp_neg(-sq) * (splat(1.0) - sq_lo) * e;
        vi nan = x[u] != x[u];
        erfc_t = vsel(far[u] & ~nan, splat(0.0), erfc_t);
        vd phi = vsel(x[u] >= splat(0.0), splat(1.0) - splat(0.5) * erfc_t, splat(0.5) * erfc_t);
        x[u] = x[u] * vsel(nan, x[u], phi);              /* NaN in, NaN out */
    }
}

static void gelu(const double *restrict x, double *restrict out, int64_t count)
{
    const int64_t step = GELU_U * V;
    for (int64_t i = 0; i < count; i += step) {
        vd a[GELU_U] = {{0}};
        int64_t m = count - i < step ? count - i : step;
        memcpy(a, x + i, m * sizeof(double));
        vgelu(a);
        memcpy(out + i, a, m * sizeof(double));
    }
}

/* -- the causal softmax of the dense engine's long rows ---------------------------------------- */

/* Eq. (3) for `mats` stacked (n, n) score matrices: out_ij = exp(s_ij - m_i) / sum_{k <= i} exp(s_ik
 * - m_i) for j <= i, with m_i the row's maximum, and 0 above the diagonal; a row with a NaN is NaN
 * throughout (as recency_lib.model.causal_softmax makes it). The row is walked V keys at a time with the kernel's exp;
 * its sum is taken over P = 8 partial sums, key j into partial j % P, added in their order at the end
 * (V = 4: a row's chunks alternate between two vectors of partials), so the result differs from
 * numpy's only by float rounding (~1e-16 relative) and is the same on every build. */
static void causal_softmax(const double *restrict s, double *restrict out, int64_t mats, int64_t n)
{
    for (int64_t r = 0; r < mats * n; r++) {
        const int64_t i = r % n, len = i + 1;
        const double *row = s + r * n;
        double *o = out + r * n;
        double m = row[0];
        int nan = 0;
        for (int64_t j = 0; j < len; j++) {
            nan |= row[j] != row[j];
            m = row[j] > m ? row[j] : m;
        }
        vd acc[H];                                     /* key j adds into partial j % P (chunk j / V into acc[j / V % H]) */
        for (int h = 0; h < H; h++) acc[h] = splat(0.0);
        int64_t j = 0;
        for (; j + V <= len; j += V) {
            vd v;
            memcpy(&v, row + j, sizeof v);
            v = vexp_neg(v - splat(m));
            memcpy(o + j, &v, sizeof v);
            acc[j / V % H] += v;
        }
        if (j < len) {
            vd v = splat(-INFINITY);
            for (int64_t l = 0; j + l < len; l++) v[l] = row[j + l];
            v = vexp_neg(v - splat(m));
            for (int64_t l = 0; j + l < len; l++) o[j + l] = v[l];
            acc[j / V % H] += v;
        }
        double total = 0.0;                            /* the P partials in their order, whatever V */
        for (int h = 0; h < H; h++)
            for (int l = 0; l < V; l++) total += acc[h][l];
        if (nan || m != m || total != total) total = NAN;
        for (j = 0; j < len; j++) o[j] /= total;
        for (j = len; j < n; j++) o[j] = 0.0 / total;      /* 0, or NaN in a NaN row (as numpy's) */
    }
}

/* -- the recency count ------------------------------------------------------------------------ */

/* The triples j < k < i of row-packed lower triangles, W samples side by side (sample innermost):
 * s[(i (i + 1) / 2 + j) * W + b] = S_ij of sample b. up[b] counts S_ij < S_ik - tol[b] (the later
 * key scores higher), not_down[b] counts S_ij <= S_ik + tol[b] (higher or tied); a NaN fails both.
 * One sample: the loop over the earlier keys j vectorises; several: the loop over the samples. */
static void count_pairs(int64_t n, const double *restrict s, int64_t w, const double *restrict tol,
                        int64_t *restrict up, int64_t *restrict not_down)
{
    for (int64_t b = 0; b < w; b++) up[b] = not_down[b] = 0;
    if (w == 1) {
        int64_t u = 0, nd = 0;
        for (int64_t i = 2; i < n; i++) {
            const double *row = s + i * (i + 1) / 2;
            for (int64_t k = 1; k < i; k++) {
                double hi = row[k] - tol[0], lo = row[k] + tol[0];
                for (int64_t j = 0; j < k; j++) {
                    u += row[j] < hi;
                    nd += row[j] <= lo;
                }
            }
        }
        up[0] = u;
        not_down[0] = nd;
        return;
    }
    for (int64_t i = 2; i < n; i++) {
        const double *row = s + i * (i + 1) / 2 * w;
        for (int64_t k = 1; k < i; k++)
            for (int64_t j = 0; j < k; j++)
                for (int64_t b = 0; b < w; b++) {
                    double v = row[j * w + b];
                    up[b] += v < row[k * w + b] - tol[b];
                    not_down[b] += v <= row[k * w + b] + tol[b];
                }
    }
}

/* -- the gram block kernel -------------------------------------------------------------------- */

enum { MODE_PLAIN = 0, MODE_CHOL = 1, MODE_RANK_ONE = 2 };
enum { OUT_NONE = 0, OUT_SUBLAYER = 1, OUT_SUM = 2 };   /* x' = A v + gamma x, gamma x + Norm(A v), Norm(A v + gamma x) */

typedef struct {
    /* input */
    int64_t n, w, nb;               /* tokens, Gram width m (1 if rank one), samples in the block */
    const double *chi2, *normals;   /* (m, nb) and (q, nb): the block's draws, samples last */
    const double *chol;             /* (n, n) Cholesky factor of Sigma (MODE_CHOL) */
    int mode, normalize;
    int raw_scores, raw_values, out_norm, mean_col;   /* the placement (recency_lib.placements; all 0:
                                       pre-norm); out_norm: OUT_*; mean_col: the means a (sampling) */
    double d, gamma, eps, tie_rtol, gain;   /* gain: recency_lib.norms.Norm.gain(d) */
    int64_t layers;
    int64_t o_attn, o_sq, o_diag, o_step, o_row, o_trend, o_rp, nf;   /* feature layout */
    /* output, (layers, nf) and (layers, nc); feats (layers, nf, nb) or NULL */
    double *shift, *s1, *s2, *sc, *feats;
    /* work */
    int64_t tile_groups;            /* groups of V samples per tile */
    vd *state, *fs, *dev0s;         /* per group of a tile: two states (packed trapezoids), features (nf),
                                       layer-1 deviations (nc) */
    vd *means;                      /* per group of a tile: the tokens' feature means (n), if mean_col */
    vd *x, *xn, *f, *mean;          /* the current group's */
    vd *y;                          /* scratch: the normalised state */
    vd *aux;                        /* (2 n) row maxima and one row of x', for long sequences */
    vd *chol_v;                     /* (n, n) splat(chol): MODE_CHOL with n <= SMALL, else NULL */
    vd *a1, *a2, *a3;               /* partial sums, (layers, nf, H) x2 and (layers, nc, H); NULL: sum lanes at once */
    vi big;                         /* the current group's max(1, max |S|) bits (layer -> steps) */
} Block;

/* Where each feature of a layer sits (recency_lib.features.feature_layout): the block's own offsets
 * for the general code, compile-time constants for the specialised n (layout_of), so that every
 * feature address there is a constant offset. */
typedef struct { int64_t o_diag, o_step, o_row, o_trend, o_rp, nf; } Layout;

INLINE Layout block_layout(const Block *k) { return (Layout){k->o_diag, k->o_step, k->o_row, k->o_trend, k->o_rp, k->nf}; }

INLINE Layout layout_of(int64_t n)           /* feature_layout(n) for n >= 2: scores, attention, norms, then these */
{
    const int64_t t = n * (n + 1) / 2, diag = 2 * t + n, step = diag + n - 1, row = step + (n - 1) * (n - 2) / 2;
    return (Layout){diag, step, row, row + n - 2, row + n - 1, row + n};
}

/* Row i of the coordinates has min(i + 1, w) entries (a lower trapezoid; every layer keeps that
 * shape), packed row after row. */
INLINE int64_t row_len(int64_t i, int64_t w) { return i + 1 < w ? i + 1 : w; }
INLINE int64_t row_start(int64_t i, int64_t w) { return i <= w ? i * (i + 1) / 2 : w * (w + 1) / 2 + (i - w) * w; }

/* The functions below take n and w as arguments and are always inlined: group_10 etc. (at the end)
 * instantiate them with constants, so that the compiler unrolls every loop of a short sequence
 * (no loop of varying length left to mispredict), and group_any with the block's values. */

/* Samples s0 .. s0 + valid - 1 of the draws into x, as recency_lib.sampling.gram_assemble builds
 * them; lanes beyond `valid` repeat the last sample (computed, never counted). */
INLINE void coordinates(Block *k, int64_t s0, int64_t valid, const int64_t n, const int64_t w)
{
    const int64_t nb = k->nb;
    int64_t src[V];
    for (int l = 0; l < V; l++) src[l] = s0 + (l < valid ? l : valid - 1);
#define LOAD(row) ({ const double *r_ = (row); vd t_;                                      \
                    if (valid == V) memcpy(&t_, r_ + s0, sizeof t_);   /* V samples side by side */ \
                    else for (int l_ = 0; l_ < V; l_++) t_[l_] = r_[src[l_]];                      \
                    t_; })
    const vd d = splat(k->d), rsd = splat(1.0 / sqrt(k->d));
    vd *x = k->x;
    if (k->mode == MODE_RANK_ONE) {
        vd v = vsqrt(LOAD(k->chi2) / d);
        U_COORD
        for (int64_t i = 0; i < n; i++) x[i] = v;
        if (k->mean_col) {                             /* every token's mean: one normal */
            vd a = LOAD(k->normals) * rsd;
            for (int64_t i = 0; i < n; i++) k->mean[i] = a;
        }
        return;
    }
    vd *t = k->mode == MODE_CHOL ? k->xn : x;          /* Bartlett factor T, then L T */
    int64_t q = 0;
    U_COORD
    for (int64_t i = 0; i < n; i++) {
        vd *ti = t + row_start(i, w);
        U_COORD
        for (int64_t c = 0; c < row_len(i, w); c++) {
            if (c == i) {
                ti[c] = vsqrt(LOAD(k->chi2 + i * nb) / d);
            } else {
                ti[c] = LOAD(k->normals + q * nb) * rsd;
                q++;
            }
        }
    }
    vd *a = k->mean;                                   /* the means' g / sqrt(d), after T's normals */
    if (k->mean_col)
        for (int64_t i = 0; i < n; i++) a[i] = LOAD(k->normals + (q + i) * nb) * rsd;
    if (k->mode != MODE_CHOL) return;
    const vd *chol_v = k->chol_v;                      /* (read once: vector stores may alias a Block's fields) */
    U_COORD
    for (int64_t i = 0; i < n; i++) {                  /* x_ic = sum_{j = c..i} L_ij T_jc */
        const double *li = k->chol + i * n;
        const vd *lv = n <= SMALL ? chol_v + i * n : NULL;
#define L_IJ(j) (n <= SMALL ? lv[j] : splat(li[j]))      /* the same splat, made once per block (short n) */
        U_COORD
        for (int64_t c = 0; c < row_len(i, w); c++) {
            vd acc = L_IJ(c) * t[row_start(c, w) + c];
            U_COORD
            for (int64_t j = c + 1; j <= i; j++) acc = vfma(L_IJ(j), t[row_start(j, w) + c], acc);
            x[row_start(i, w) + c] = acc;
        }
    }
    if (k->mean_col)
        for (int64_t i = n - 1; i >= 0; i--) {         /* a = L g / sqrt(d), in place (row i reads j <= i) */
            const double *li = k->chol + i * n;
            const vd *lv = n <= SMALL ? chol_v + i * n : NULL;
            vd acc = L_IJ(0) * a[0];
            for (int64_t j = 1; j <= i; j++) acc = vfma(L_IJ(j), a[j], acc);
            a[i] = acc;
        }
#undef L_IJ
#undef LOAD
}

/* Row x_i (len coordinates) normalised into y_i (in place if y_i = x_i), Eq. (2): x_i gain / sqrt(||x_i||^2
 * / d + eps) (LayerNorm's coordinates are centred already); returns ||x_i||^2. */
INLINE vd norm_row(const vd *xi, vd *yi, const int64_t len, const vd inv_d, const vd eps, const vd gain, const int scaled)
{
    vd sq = xi[0] * xi[0];
    UNROLL
    for (int64_t c = 1; c < len; c++) sq = vfma(xi[c], xi[c], sq);
    vd inv = splat(1.0) / vsqrt(sq * inv_d + eps);
    if (scaled) inv = inv * gain;
    UNROLL
    for (int64_t c = 0; c < len; c++) yi[c] = xi[c] * inv;
    return sq;
}

/* One layer, Eqs. (1)-(2), (20), with the norm where the placement puts it: squared norms, scores and
 * attention into the features f, and, if `next`, x' into xn (and the means a' in place). The
 * exponentials of all rows are taken in one pass (55 independent ones at n = 10: the processor
 * overlaps them). */
INLINE void layer(Block *k, int next, const int64_t n, const int64_t w)
{
    const vd rsd = splat(1.0 / sqrt(k->d)), inv_d = splat(1.0 / k->d), eps = splat(k->eps);
    const int64_t o_attn = n * (n + 1) / 2, o_sq = 2 * o_attn;   /* (py_gram_block checks the layout) */
    vd *restrict f = k->f;
    vd small[2 * SMALL];                                /* row maxima and one row of x' when short */
    vd *restrict mx = n <= SMALL ? small : k->aux, *restrict acc = n <= SMALL ? small + SMALL : k->aux + n;
    const vd gain = splat(k->gain);
    /* (read once: vector stores may alias the Block's fields) */
    const int scaled = k->gain != 1.0, out = k->out_norm, means = k->mean_col;
    const int norm_s = k->normalize && !k->raw_scores, norm_v = k->normalize && !k->raw_values;
    if (norm_s || norm_v) {                             /* ||x_i||^2 and y_i = Norm(x_i), Eq. (2) */
        const vd *restrict x = k->x;
        vd *restrict y = k->y;
        UNROLL
        for (int64_t i = 0; i < n; i++)
            f[o_sq + i] = norm_row(x + row_start(i, w), y + row_start(i, w), row_len(i, w), inv_d, eps, gain, scaled);
    } else {
        const vd *restrict x = k->x;
        UNROLL
        for (int64_t i = 0; i < n; i++) {
            const vd *xi = x + row_start(i, w);
            vd sq = xi[0] * xi[0];
            UNROLL
            for (int64_t c = 1; c < row_len(i, w); c++) sq = vfma(xi[c], xi[c], sq);
            f[o_sq + i] = sq;
        }
    }
    const vd *restrict y = norm_s ? k->y : k->x;       /* what the scores read */
    const vd *mean = k->mean;
    UNROLL
    for (int64_t i = 0; i < n; i++) {                  /* S_ij = <y_i, y_j> / sqrt(d), j <= i, Eq. (1) */
        const vd *yi = y + row_start(i, w);
        vd *s = f + i * (i + 1) / 2;
        UNROLL
        for (int64_t j = 0; j <= i; j++) {
            const vd *yj = y + row_start(j, w);
            vd dot = yi[0] * yj[0];
            UNROLL
            for (int64_t c = 1; c < row_len(j, w); c++) dot = vfma(yi[c], yj[c], dot);
            if (means) dot = vfma(mean[i], mean[j], dot);   /* the raw state's means: + a_i a_j */
            s[j] = dot * rsd;
            mx[i] = j ? vmax(s[j], mx[i]) : s[j];      /* (a NaN score makes its row NaN below all the same) */
        }
    }
    /* max(1, max |S|), the scale of the recency count's tie tolerance (steps): the bits of |S| >= 0
     * compare as integers as the numbers do, and a NaN's above every number, so an integer max is
     * the max (NaN if a score is NaN). If it is at most EXP_SAFE in every lane, every exponent
     * below is >= -2 EXP_SAFE > EXP_LOW and takes exp's common path without a test. */
    vi big = (vi)splat(1.0);
    UNROLL
    for (int64_t p = 0; p < n * (n + 1) / 2; p++) big = vimax(big, (vi)vabs(f[p]));
    k->big = big;
    if (vany(big > (vi)splat(EXP_SAFE)))
        for (int64_t i = 0; i < n; i++)                /* exp(S_ij - max_j S_ij), Eq. (3) (loops: short code) */
            for (int64_t j = 0; j <= i; j++) f[o_attn + i * (i + 1) / 2 + j] = vexp_neg(f[i * (i + 1) / 2 + j] - mx[i]);
    else
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j <= i; j++) f[o_attn + i * (i + 1) / 2 + j] = vexp_neg_common(f[i * (i + 1) / 2 + j] - mx[i]);
    UNROLL
    for (int64_t i = 0; i < n; i++) {                  /* ... normalised: A_ij */
        vd *a = f + o_attn + i * (i + 1) / 2;
        vd total = a[0];
        UNROLL
        for (int64_t j = 1; j <= i; j++) total += a[j];
        vd inv = splat(1.0) / total;
        UNROLL
        for (int64_t j = 0; j <= i; j++) a[j] *= inv;
    }
    if (!next) return;
    const vd *restrict x = k->x, *restrict v = norm_v ? k->y : k->x;   /* the values */
    vd *restrict xn = k->xn;
    const vd gamma = splat(k->gamma);
    const int residual = k->gamma != 0.0;              /* (read once: vector stores may alias k->gamma) */
    UNROLL
    for (int64_t i = 0; i < n; i++) {                  /* x'_ic = sum_{j = c..i} A_ij v_jc + gamma x_ic, Eq. (20) */
        const vd *a = f + o_attn + i * (i + 1) / 2;
        UNROLL
        for (int64_t j = 0; j <= i; j++) {             /* row j of v, into every column at once */
            const vd *vj = v + row_start(j, w);
            UNROLL
            for (int64_t c = 0; c < row_len(j, w); c++) acc[c] = c == j ? a[j] * vj[c] : vfma(a[j], vj[c], acc[c]);
        }
        if (out == OUT_SUBLAYER) norm_row(acc, acc, row_len(i, w), inv_d, eps, gain, scaled);
        vd *xi = xn + row_start(i, w);
        UNROLL
        for (int64_t c = 0; c < row_len(i, w); c++)
            xi[c] = residual ? acc[c] + gamma * x[row_start(i, w) + c] : acc[c];
        if (out == OUT_SUM) norm_row(xi, xi, row_len(i, w), inv_d, eps, gain, scaled);
    }
    if (!means) return;
    /* The means of x': a placement that lets the raw state into the scores normalizes the sum (Norm
     * zeroes the means) or the attention's output (the means go on through the residual alone). */
    vd *mean_next = k->mean;
    for (int64_t i = 0; i < n; i++) mean_next[i] = out == OUT_SUM ? splat(0.0) : gamma * mean_next[i];
}

/* acc + 1 in the lanes where a < b (`or_equal`: a <= b); a NaN compares false. With AVX-512 the
 * compare gives a mask register and the add is masked (two instructions; the generic form turns
 * the mask into a vector first: three). */
INLINE vi count_below(vi acc, vd a, vd b, const int or_equal)
{
#if V == 8 && defined(__AVX512F__)
    __mmask8 m = or_equal ? _mm512_cmp_pd_mask((__m512d)a, (__m512d)b, _CMP_LE_OQ)
                          : _mm512_cmp_pd_mask((__m512d)a, (__m512d)b, _CMP_LT_OQ);
    return (vi)_mm512_mask_sub_epi64((__m512i)acc, m, (__m512i)acc, _mm512_set1_epi64(-1));
#else
    return acc - (or_equal ? (vi)(a <= b) : (vi)(a < b));
#endif
}

/* Adjacent steps, row trends, the trend and the recency fraction from the scores in f. A row's
 * off-diagonal steps add up to S_i,i-1 - S_i0: the row trends and the trend come from those. */
INLINE void steps(Block *k, const int64_t n, const Layout lay)
{
    vd *f = k->f;
    vd trend = splat(0.0);
    int64_t q = lay.o_step;
    U_STEPS
    for (int64_t i = 1; i < n; i++) {
        const vd *s = f + i * (i + 1) / 2;
        f[lay.o_diag + i - 1] = s[i] - s[i - 1];
        U_STEPS
        for (int64_t j = 1; j < i; j++) f[q++] = s[j] - s[j - 1];
        if (i >= 2) {
            vd t = s[i - 1] - s[0];
            trend += t;
            f[lay.o_row + i - 2] = t / splat((double)(i - 1));
        }
    }
    const int64_t triples = n * (n - 1) * (n - 2) / 6;
    if (triples == 0) {
        f[lay.o_trend] = f[lay.o_rp] = splat(NAN);
        return;
    }
    f[lay.o_trend] = trend / splat((double)((n - 1) * (n - 2) / 2));
    vd tol = (vd)k->big * splat(k->tie_rtol);          /* tie_rtol * max(1, max |S|) (NaN: every comparison fails) */
    vi up = {0}, not_down = {0};
    U_COUNT
    for (int64_t i = 2; i < n; i++) {
        const vd *s = f + i * (i + 1) / 2;
        U_COUNT
        for (int64_t kk = 1; kk < i; kk++) {
            vd hi = s[kk] - tol, lo = s[kk] + tol;
            U_COUNT
            for (int64_t j = 0; j < kk; j++) {
                up = count_below(up, s[j], hi, 0);
                not_down = count_below(not_down, s[j], lo, 1);
            }
        }
    }
    vi both = up + not_down;                            /* later + (later or tied) = 2 later + tied */
    vd cnt;
    for (int l = 0; l < V; l++) cnt[l] = (double)both[l];
    f[lay.o_rp] = cnt * splat(0.5 / (double)triples);
}

/* Moment sums of layer l over the lanes of the tile's groups (in their order): (f - shift), its
 * square, and for the controls (features o_step ..) the product with the same deviation in layer
 * 1. masks[g] zeroes the lanes beyond the block's end. Sample b adds into partial sum b % P, the
 * samples of a partial in their order, so the sums are the same bits for V = 4 (the tile's groups
 * alternate between the H = 2 vectors of partials) and V = 8 (H = 1); g0 is the tile's first group
 * in the block. Each sum is loaded and stored once per tile. masks NULL: every lane counts (a full
 * tile; with groups = TILE_GROUPS, a constant, the loops over the groups unroll). */
INLINE void accumulate_lanes(Block *k, int64_t l, int64_t g0, int64_t groups, const vi *masks, const Layout lay)
{
    const int64_t nf = lay.nf, c0 = lay.o_step, nc = nf - c0;
    const double *sh = k->shift + l * nf;
    vd *restrict a1 = k->a1 + l * nf * H, *restrict a2 = k->a2 + l * nf * H, *restrict a3 = k->a3 + l * nc * H;
    const vd *restrict fs = k->fs;
    vd *restrict dev0 = k->dev0s;
#define DEV(g) (masks ? (vd)((vi)(fs[(g) * nf + r] - shift) & masks[g]) : fs[(g) * nf + r] - shift)
#if H == 1
    for (int64_t r = 0; r < c0; r++) {
        const vd shift = splat(sh[r]);
        vd u = a1[r], v = a2[r];
        for (int64_t g = 0; g < groups; g++) {
            vd e = DEV(g);
            u += e;
            v = vfma(e, e, v);
        }
        a1[r] = u;
        a2[r] = v;
    }
    for (int64_t r = c0; r < nf; r++) {
        const vd shift = splat(sh[r]);
        vd u = a1[r], v = a2[r], c = a3[r - c0];
        for (int64_t g = 0; g < groups; g++) {
            vd e = DEV(g);
            u += e;
            v = vfma(e, e, v);
            if (l == 0) dev0[g * nc + r - c0] = e;
            c = vfma(e, dev0[g * nc + r - c0], c);
        }
        a1[r] = u;
        a2[r] = v;
        a3[r - c0] = c;
    }
#else   /* H == 2: the tile's groups alternate between the two vectors of partials; p = that of group 0 */
    const int64_t p = g0 % 2, o = 1 - p;
    for (int64_t r = 0; r < c0; r++) {
        const vd shift = splat(sh[r]);
        vd u0 = a1[2 * r + p], v0 = a2[2 * r + p], u1 = a1[2 * r + o], v1 = a2[2 * r + o];
        int64_t g = 0;
        for (; g + 1 < groups; g += 2) {
            vd e0 = DEV(g), e1 = DEV(g + 1);
            u0 += e0;
            v0 = vfma(e0, e0, v0);
            u1 += e1;
            v1 = vfma(e1, e1, v1);
        }
        if (g < groups) {
            vd e0 = DEV(g);
            u0 += e0;
            v0 = vfma(e0, e0, v0);
        }
        a1[2 * r + p] = u0; a2[2 * r + p] = v0; a1[2 * r + o] = u1; a2[2 * r + o] = v1;
    }
    for (int64_t r = c0; r < nf; r++) {
        const vd shift = splat(sh[r]);
        vd u0 = a1[2 * r + p], v0 = a2[2 * r + p], c0v = a3[2 * (r - c0) + p];
        vd u1 = a1[2 * r + o], v1 = a2[2 * r + o], c1v = a3[2 * (r - c0) + o];
        int64_t g = 0;
        for (; g + 1 < groups; g += 2) {
            vd e0 = DEV(g), e1 = DEV(g + 1);
            if (l == 0) {
                dev0[g * nc + r - c0] = e0;
                dev0[(g + 1) * nc + r - c0] = e1;
            }
            u0 += e0;
            v0 = vfma(e0, e0, v0);
            c0v = vfma(e0, dev0[g * nc + r - c0], c0v);
            u1 += e1;
            v1 = vfma(e1, e1, v1);
            c1v = vfma(e1, dev0[(g + 1) * nc + r - c0], c1v);
        }
        if (g < groups) {
            vd e0 = DEV(g);
            if (l == 0) dev0[g * nc + r - c0] = e0;
            u0 += e0;
            v0 = vfma(e0, e0, v0);
            c0v = vfma(e0, dev0[g * nc + r - c0], c0v);
        }
        a1[2 * r + p] = u0; a2[2 * r + p] = v0; a3[2 * (r - c0) + p] = c0v;
        a1[2 * r + o] = u1; a2[2 * r + o] = v1; a3[2 * (r - c0) + o] = c1v;
    }
#endif
#undef DEV
}

/* accumulate_lanes for a full tile (TILE_GROUPS groups, every lane counts), each group's deviation
 * added into its partials in the same order; written for the compiler: the loop over the groups
 * unrolled (constant offsets where the layout is constant), group g into the partials (g0 + g) % H
 * (the H == 2 pairing above), and layer 1's branch outside the loops (there the control product is
 * e times the deviation it stores, e itself). The same operations on the same numbers: the same bits. */
INLINE void accumulate_tile(Block *k, int64_t l, int64_t g0, const Layout lay)
{
    const int64_t nf = lay.nf, c0 = lay.o_step, nc = nf - c0, p = g0 % H;
    const double *sh = k->shift + l * nf;
    vd *restrict a1 = k->a1 + l * nf * H, *restrict a2 = k->a2 + l * nf * H, *restrict a3 = k->a3 + l * nc * H;
    const vd *restrict fs = k->fs;
    vd *restrict dev0 = k->dev0s;
    for (int64_t r = 0; r < c0; r++) {
        const vd shift = splat(sh[r]);
        vd u[H], v[H];
        for (int h = 0; h < H; h++) { u[h] = a1[H * r + (p + h) % H]; v[h] = a2[H * r + (p + h) % H]; }
        UNROLL
        for (int64_t g = 0; g < TILE_GROUPS; g++) {
            vd e = fs[g * nf + r] - shift;
            u[g % H] += e;
            v[g % H] = vfma(e, e, v[g % H]);
        }
        for (int h = 0; h < H; h++) { a1[H * r + (p + h) % H] = u[h]; a2[H * r + (p + h) % H] = v[h]; }
    }
    for (int64_t r = c0; r < nf; r++) {
        const vd shift = splat(sh[r]);
        vd u[H], v[H], c[H];
        for (int h = 0; h < H; h++) {
            u[h] = a1[H * r + (p + h) % H]; v[h] = a2[H * r + (p + h) % H]; c[h] = a3[H * (r - c0) + (p + h) % H];
        }
        if (l == 0) {
            UNROLL
            for (int64_t g = 0; g < TILE_GROUPS; g++) {
                vd e = fs[g * nf + r] - shift;
                dev0[g * nc + r - c0] = e;
                u[g % H] += e;
                v[g % H] = vfma(e, e, v[g % H]);
                c[g % H] = vfma(e, e, c[g % H]);
            }
        } else {
            UNROLL
            for (int64_t g = 0; g < TILE_GROUPS; g++) {
                vd e = fs[g * nf + r] - shift;
                u[g % H] += e;
                v[g % H] = vfma(e, e, v[g % H]);
                c[g % H] = vfma(e, dev0[g * nc + r - c0], c[g % H]);
            }
        }
        for (int h = 0; h < H; h++) {
            a1[H * r + (p + h) % H] = u[h]; a2[H * r + (p + h) % H] = v[h]; a3[H * (r - c0) + (p + h) % H] = c[h];
        }
    }
}

typedef void (*AccFn)(Block *, int64_t, int64_t);

static __attribute__((noinline)) void acc_tile_any(Block *k, int64_t l, int64_t g0) { accumulate_tile(k, l, g0, block_layout(k)); }

/* The same for one group, summing its lanes at once into the scalar sums (long sequences: per-lane
 * sums of every feature would take V times the memory of the moments). */
static void accumulate_now(Block *k, int64_t l, int64_t g, vi mask)
{
    const int64_t nf = k->nf, c0 = k->o_step, nc = nf - c0;
    const double *sh = k->shift + l * nf;
    const vd *f = k->fs + g * nf;
    vd *dev0 = k->dev0s + g * nc;
    double *s1 = k->s1 + l * nf, *s2 = k->s2 + l * nf, *sc = k->sc + l * nc;
    for (int64_t r = 0; r < nf; r++) {
        vd e = (vd)((vi)(f[r] - splat(sh[r])) & mask);
        add_quads(&s1[r], e);
        add_quads(&s2[r], e * e);
        if (r >= c0) {
            if (l == 0) dev0[r - c0] = e;
            add_quads(&sc[r - c0], e * dev0[r - c0]);
        }
    }
}

/* One tile: `groups` groups of V samples from s0 on, through every layer, into the sums. The
 * layer loop is the outer one: a tile's features of one layer are reduced together, so each sum
 * is loaded and stored once per tile, not once per group. The groups still add in their order:
 * the tile size changes no bit of the result. */
INLINE void tile(Block *k, int64_t s0, int64_t groups, const int64_t n, const int64_t w, const Layout lay, AccFn acc_tile)
{
    const int64_t nf = lay.nf, tz = row_start(n, w);
    vi masks[TILE_GROUPS];
    for (int64_t g = 0; g < groups; g++) {
        int64_t valid = k->nb - s0 - g * V;
        for (int b = 0; b < V; b++) masks[g][b] = b < valid ? -1 : 0;
        k->x = k->state + 2 * g * tz;
        k->xn = k->x + tz;
        k->mean = k->means + g * n;
        coordinates(k, s0 + g * V, valid < V ? valid : V, n, w);
    }
    for (int64_t l = 0; l < k->layers; l++) {
        for (int64_t g = 0; g < groups; g++) {
            int64_t start = s0 + g * V, valid = k->nb - start < V ? k->nb - start : V;
            k->x = k->state + (2 * g + l % 2) * tz;    /* the two states of a group alternate */
            k->xn = k->state + (2 * g + (l + 1) % 2) * tz;
            k->f = k->fs + g * nf;
            k->mean = k->means + g * n;
            layer(k, l + 1 < k->layers, n, w);
            steps(k, n, lay);
            if (start == 0)                             /* the shift: the block's first sample */
                for (int64_t r = 0; r < nf; r++) k->shift[l * nf + r] = k->f[r][0];
            if (k->feats)
                for (int64_t r = 0; r < nf; r++)
                    for (int64_t b = 0; b < valid; b++) k->feats[(l * nf + r) * k->nb + start + b] = k->f[r][b];
            if (!k->a1) accumulate_now(k, l, g, masks[g]);
        }
        if (k->a1 && s0 + groups * V <= k->nb && groups == TILE_GROUPS)
            acc_tile(k, l, s0 / V);
        else if (k->a1 && s0 + groups * V <= k->nb)
            accumulate_lanes(k, l, s0 / V, groups, NULL, lay);
        else if (k->a1)
            accumulate_lanes(k, l, s0 / V, groups, masks, lay);
    }
}

typedef void (*TileFn)(Block *, int64_t, int64_t);

static void tile_any(Block *k, int64_t s0, int64_t groups) { tile(k, s0, groups, k->n, k->w, block_layout(k), acc_tile_any); }

#define TILE_FOR(N)                                                                                 \
    static __attribute__((noinline)) void acc_tile_##N(Block *k, int64_t l, int64_t g0) { accumulate_tile(k, l, g0, layout_of(N)); } \
    static void tile_##N(Block *k, int64_t s0, int64_t groups) { tile(k, s0, groups, N, N, layout_of(N), acc_tile_##N); }
TILE_FOR(10)

INLINE int same_layout(Layout a, Layout b)
{
    return a.o_diag == b.o_diag && a.o_step == b.o_step && a.o_row == b.o_row && a.o_trend == b.o_trend
           && a.o_rp == b.o_rp && a.nf == b.nf;
}

static TileFn tile_for(const Block *k)
{
    const int64_t n = k->n, w = k->w;
    if (n == w && same_layout(block_layout(k), layout_of(n))) switch (n) {
        case 10: return tile_10;
    }
    return tile_any;
}

static void run_block(Block *k)
{
    const int64_t nf = k->nf, nc = nf - k->o_step, L = k->layers, step = k->tile_groups * V;
    TileFn fn = tile_for(k);
    memset(k->s1, 0, L * nf * sizeof(double));
    memset(k->s2, 0, L * nf * sizeof(double));
    memset(k->sc, 0, L * nc * sizeof(double));
    for (int64_t s0 = 0; s0 < k->nb; s0 += step) fn(k, s0, (k->nb - s0 < step ? k->nb - s0 + V - 1 : step) / V);
    if (!k->a1) return;
    for (int64_t r = 0; r < L * nf; r++) {
        k->s1[r] = partials_sum(k->a1 + r * H);
        k->s2[r] = partials_sum(k->a2 + r * H);
    }
    for (int64_t r = 0; r < L * nc; r++) k->sc[r] = partials_sum(k->a3 + r * H);
}

/* -- Python glue -------------------------------------------------------------------------------- */

/* A float64 buffer with exactly `count` items. */
static int take(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t count, const char *name)
{
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 8 || (view->format && strcmp(view->format, "d") && strcmp(view->format, "q")
                                && strcmp(view->format, "l")) || view->len != count * 8) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd contiguous 8-byte items, got %zd bytes of format %s",
                     name, count, view->len, view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void *aligned(size_t count)
{
    size_t bytes = (count * sizeof(vd) + 63) / 64 * 64;
    return bytes ? aligned_alloc(64, bytes) : NULL;
}

#define ACC_LIMIT (1 << 20)     /* partial sums up to this many doubles (8 MB), else reduce at once */

/* A block's work buffers and tile size, for a Block whose sizes, mode, layout and (MODE_CHOL) Cholesky
 * factor are set: 0, or -1 if out of memory (block_free releases what was taken either way). Used by
 * py_gram_block and by the C driver of tests/lib/kernel_harness.c. */
static int block_alloc(Block *k)
{
    const int64_t n = k->n, layers = k->layers, nf = k->nf, nc = nf - k->o_step, tz = row_start(n, k->w);
    const int lanes = layers * (2 * nf + nc) * P <= ACC_LIMIT;   /* P, not V: the same choice for every V */
    k->tile_groups = n <= 12 ? TILE_GROUPS : n <= 32 ? (TILE_GROUPS < 4 ? TILE_GROUPS : 4) : 1;   /* (bench_kernel) */
    k->state = aligned(2 * k->tile_groups * tz); k->dev0s = aligned(k->tile_groups * nc);
    k->fs = aligned(k->tile_groups * nf); k->y = aligned(tz); k->aux = aligned(2 * n);
    k->means = aligned(k->tile_groups * n);
    if (k->mode == MODE_CHOL && n <= SMALL) k->chol_v = aligned(n * n);   /* (read by coordinates, n <= SMALL) */
    if (lanes) { k->a1 = aligned(layers * nf * H); k->a2 = aligned(layers * nf * H); k->a3 = aligned(layers * nc * H); }
    if (!k->state || !k->dev0s || !k->y || !k->fs || !k->aux || !k->means || (lanes && (!k->a1 || !k->a2 || !k->a3))
        || (k->mode == MODE_CHOL && n <= SMALL && !k->chol_v))
        return -1;
    if (k->chol_v)
        for (int64_t i = 0; i < n * n; i++) k->chol_v[i] = splat(k->chol[i]);
    if (lanes) {
        memset(k->a1, 0, layers * nf * H * sizeof(vd)); memset(k->a2, 0, layers * nf * H * sizeof(vd));
        memset(k->a3, 0, layers * nc * H * sizeof(vd));
    }
    return 0;
}

static void block_free(Block *k)
{
    free(k->state); free(k->dev0s); free(k->y); free(k->fs); free(k->aux); free(k->chol_v); free(k->means);
    free(k->a1); free(k->a2); free(k->a3);
}

static PyObject *py_gram_block(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_chi2, *o_normals, *o_chol, *o_offs, *o_shift, *o_s1, *o_s2, *o_sc, *o_feats;
    Block k = {0};
    long long n, w, nb, layers;
    int mode, normalize, want_feats, raw_scores, raw_values, out_norm, mean_col;
    if (!PyArg_ParseTuple(args, "LLLOOOiiiiiidddddLOOOOOOp", &n, &w, &nb, &o_chi2, &o_normals, &o_chol, &mode,
                          &normalize, &raw_scores, &raw_values, &out_norm, &mean_col, &k.gain, &k.d, &k.gamma,
                          &k.eps, &k.tie_rtol, &layers, &o_offs, &o_shift, &o_s1, &o_s2, &o_sc, &o_feats, &want_feats))
        return NULL;
    if (n < 1 || w < 1 || w > n || nb < 1 || layers < 1 || mode < 0 || mode > 2 || !(k.d > 0) || out_norm < 0
        || out_norm > 2 || (mean_col && (!raw_scores || out_norm == OUT_NONE))) {
        PyErr_SetString(PyExc_ValueError, "gram_block: bad sizes or mode");
        return NULL;
    }
    k.n = n; k.w = w; k.nb = nb; k.layers = layers; k.mode = mode; k.normalize = normalize;
    k.raw_scores = raw_scores; k.raw_values = raw_values; k.out_norm = out_norm; k.mean_col = mean_col;
    Py_buffer b_offs;
    if (take(o_offs, &b_offs, 0, 8, "offs") < 0) return NULL;
    const int64_t *offs = b_offs.buf;
    k.o_attn = offs[0]; k.o_sq = offs[1]; k.o_diag = offs[2]; k.o_step = offs[3]; k.o_row = offs[4];
    k.o_trend = offs[5]; k.o_rp = offs[6]; k.nf = offs[7];
    PyBuffer_Release(&b_offs);
    const int64_t t = n * (n + 1) / 2, nf = k.nf, nc = nf - k.o_step;
    if (k.o_attn != t || k.o_sq != 2 * t || k.o_rp != nf - 1 || nc < 2) {
        PyErr_SetString(PyExc_ValueError, "gram_block: feature offsets do not fit n");
        return NULL;
    }
    int64_t tz = 0, m = mode == MODE_RANK_ONE ? 1 : w;
    for (int64_t i = 0; i < n; i++) tz += i + 1 < w ? i + 1 : w;
    int64_t q = mode == MODE_RANK_ONE ? 0 : tz - w;    /* the strictly-lower entries: tz minus the diagonal */
    if (mean_col) q += mode == MODE_RANK_ONE ? 1 : n;  /* then the means' normals */
    Py_buffer bufs[8];
    int got = 0;
    PyObject *objs[8] = {o_chi2, o_normals, o_chol, o_shift, o_s1, o_s2, o_sc, o_feats};
    const char *names[8] = {"chi2", "normals", "chol", "shift", "s1", "s2", "sc", "feats"};
    Py_ssize_t counts[8] = {m * nb, q * nb, n * n, layers * nf, layers * nf, layers * nf, layers * nc,
                            want_feats ? layers * nf * nb : 0};
    for (; got < 8; got++)
        if (take(objs[got], &bufs[got], got >= 3, counts[got], names[got]) < 0) goto fail;
    k.chi2 = bufs[0].buf; k.normals = bufs[1].buf; k.chol = bufs[2].buf;
    k.shift = bufs[3].buf; k.s1 = bufs[4].buf; k.s2 = bufs[5].buf; k.sc = bufs[6].buf;
    k.feats = want_feats ? bufs[7].buf : NULL;
    if (block_alloc(&k) < 0) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    run_block(&k);
    Py_END_ALLOW_THREADS
fail:
    block_free(&k);
    for (int i = 0; i < got; i++) PyBuffer_Release(&bufs[i]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_count_pairs(PyObject *self, PyObject *args)
{
    (void)self;
    long long n, w;
    PyObject *o_s, *o_tol, *o_out;
    if (!PyArg_ParseTuple(args, "LLOOO", &n, &w, &o_s, &o_tol, &o_out)) return NULL;
    if (n < 0 || w < 1) {
        PyErr_SetString(PyExc_ValueError, "count_pairs: bad sizes");
        return NULL;
    }
    Py_buffer bs, bt, bo;
    if (take(o_s, &bs, 0, n * (n + 1) / 2 * w, "packed") < 0) return NULL;
    if (take(o_tol, &bt, 0, w, "tol") < 0) { PyBuffer_Release(&bs); return NULL; }
    if (take(o_out, &bo, 1, 2 * w, "out") < 0) { PyBuffer_Release(&bs); PyBuffer_Release(&bt); return NULL; }
    int64_t *out = bo.buf;
    Py_BEGIN_ALLOW_THREADS
    count_pairs(n, bs.buf, w, bt.buf, out, out + w);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bs); PyBuffer_Release(&bt); PyBuffer_Release(&bo);
    Py_RETURN_NONE;
}

static PyObject *py_gram_draws(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long k0, k1, k2;
    long long nb, m, dof0, q;
    PyObject *o_chi2, *o_normals;
    if (!PyArg_ParseTuple(args, "kkkLLLLOO", &k0, &k1, &k2, &nb, &m, &dof0, &q, &o_chi2, &o_normals)) return NULL;
    if (k0 > 0xffffffffUL || k1 > 0xffffffffUL || k2 > 0xffffffffUL || nb < 1 || nb > 0x7fffffffLL || m < 1
        || dof0 - m + 1 < 1 || q < 0 || q > 0x7fffffffLL) {
        PyErr_SetString(PyExc_ValueError, "gram_draws: bad key or sizes");
        return NULL;
    }
    Py_buffer bc, bn;
    if (take(o_chi2, &bc, 1, m * nb, "chi2") < 0) return NULL;
    if (take(o_normals, &bn, 1, q * nb, "normals") < 0) { PyBuffer_Release(&bc); return NULL; }
    const uint32_t key[3] = {(uint32_t)k0, (uint32_t)k1, (uint32_t)k2};
    vd *out = aligned(m);
    vi *todo = aligned(m);
    if (out && todo) {
        Py_BEGIN_ALLOW_THREADS
        draw_block(key, nb, m, dof0, q, bc.buf, bn.buf, out, todo);
        Py_END_ALLOW_THREADS
    } else {
        PyErr_NoMemory();
    }
    free(out); free(todo);
    PyBuffer_Release(&bc); PyBuffer_Release(&bn);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_gelu(PyObject *self, PyObject *args)
{
    (void)self;
    long long count;
    PyObject *o_x, *o_out;
    if (!PyArg_ParseTuple(args, "LOO", &count, &o_x, &o_out)) return NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "gelu: bad size");
        return NULL;
    }
    Py_buffer bx, bo;
    if (take(o_x, &bx, 0, count, "x") < 0) return NULL;
    if (take(o_out, &bo, 1, count, "out") < 0) { PyBuffer_Release(&bx); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    gelu(bx.buf, bo.buf, count);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bx); PyBuffer_Release(&bo);
    Py_RETURN_NONE;
}

static PyObject *py_causal_softmax(PyObject *self, PyObject *args)
{
    (void)self;
    long long mats, n;
    PyObject *o_s, *o_out;
    if (!PyArg_ParseTuple(args, "LLOO", &mats, &n, &o_s, &o_out)) return NULL;
    if (mats < 0 || n < 1) {
        PyErr_SetString(PyExc_ValueError, "causal_softmax: bad sizes");
        return NULL;
    }
    Py_buffer bs, bo;
    if (take(o_s, &bs, 0, mats * n * n, "s") < 0) return NULL;
    if (take(o_out, &bo, 1, mats * n * n, "out") < 0) { PyBuffer_Release(&bs); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    causal_softmax(bs.buf, bo.buf, mats, n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bs); PyBuffer_Release(&bo);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"gram_block", py_gram_block, METH_VARARGS, "One block of the gram engine (see recency_lib/kernels.py)."},
    {"gram_draws", py_gram_draws, METH_VARARGS, "The random numbers of a gram block (see recency_lib/kernels.py)."},
    {"gelu", py_gelu, METH_VARARGS, "GELU of a float64 buffer (see recency_lib/kernels.py)."},
    {"causal_softmax", py_causal_softmax, METH_VARARGS, "Causal softmax of stacked score matrices (see recency_lib/kernels.py)."},
    {"count_pairs", py_count_pairs, METH_VARARGS, "The recency count (see recency_lib/kernels.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", "The compiled kernel (C).", -1, methods};

#ifndef KERNEL_SOURCE_SHA256
#define KERNEL_SOURCE_SHA256 "unknown"
#endif

/* The sha256 of this file as it was compiled (setup.py defines it): recency_lib.kernels compares it
   with the file beside the module, so a module older than its source is never run. */
PyMODINIT_FUNC PyInit__kernel(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "source_sha256", KERNEL_SOURCE_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
