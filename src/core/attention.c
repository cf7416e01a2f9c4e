/* attention.c: the row softmax with the temperature factored out (attention.h). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/attention.h"
#include "linalg_dyn.h"

/* exp(a) for a < -AS_CUT is below the smallest subnormal: exactly 0, and skipping it avoids
 * slow subnormal arithmetic. */
#define AS_CUT 745.0

/* GCC: let the exponential loop vectorise (the build's -O2 uses the cheap cost model only),
 * with wider vectors where the CPU has them (chosen at load time). No FMA contraction happens
 * (ISO C mode: -ffp-contract=off), so every clone returns the same bits. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define AS_VECTORIZE \
  __attribute__((optimize("O3", "no-trapping-math"), target_clones("avx512f", "avx2", "default")))
#elif defined(__GNUC__) && !defined(__clang__)
#define AS_VECTORIZE __attribute__((optimize("O3", "no-trapping-math")))
#else
#define AS_VECTORIZE
#endif

/* p[j] = e^{a[j]} for a[j] <= 0 (exactly 0 below -AS_CUT; -inf allowed), in place.
 * Our own exponential, not libm's: pure arithmetic that the compiler vectorises and that
 * gives the same bits on every machine. a = k ln2 + r, |r| <= ln2 / 2, e^r by its Taylor
 * polynomial of degree 13 (truncation < 1e-17), 2^k assembled in the exponent bits with an
 * offset of 2^512 so that subnormal results round once, at the last multiplication.
 * Accuracy: a few ulp. */
static AS_VECTORIZE void exp_nonpositive(int m, double *p) {
  const double log2e = 1.4426950408889634, ln2hi = 6.93147180369123816490e-01,
               ln2lo = 1.90821492927058770002e-10, shifter = 0x1.8p52, twom512 = 0x1p-512;
  for (int j = 0; j < m; j++) {
    double a = p[j];
    double x = a > -AS_CUT ? a : -AS_CUT;
    double kf = x * log2e + shifter; /* round to nearest: k sits in the low mantissa bits */
    uint64_t kb;
    memcpy(&kb, &kf, sizeof kb);
    kf -= shifter;
    double r = (x - kf * ln2hi) - kf * ln2lo;
    double q = 1.0 / 6227020800.0;
    q = q * r + 1.0 / 479001600.0;
    q = q * r + 1.0 / 39916800.0;
    q = q * r + 1.0 / 3628800.0;
    q = q * r + 1.0 / 362880.0;
    q = q * r + 1.0 / 40320.0;
    q = q * r + 1.0 / 5040.0;
    q = q * r + 1.0 / 720.0;
    q = q * r + 1.0 / 120.0;
    q = q * r + 1.0 / 24.0;
    q = q * r + 1.0 / 6.0;
    q = q * r + 0.5;
    q = q * r + 1.0;
    q = q * r + 1.0;
    uint64_t sb = (kb + (uint64_t)(1023 + 512)) << 52; /* 2^(k + 512), k in [-1075, 0] */
    double sc;
    memcpy(&sc, &sb, sizeof sc);
    double v = q * sc * twom512;
    p[j] = a >= -AS_CUT ? v : 0.0;
  }
}

void as_attention_exp_nonpositive(int m, double *p) {
  exp_nonpositive(m, p);
}

/* Largest entry of a finite row, the largest strictly below it (-DBL_MAX if none) and the
 * number of entries equal to the largest. Finite input only: compiled with finite-math so the
 * max reductions vectorise; kept apart from the code that handles infinite temperatures. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3", "no-trapping-math", "finite-math-only", "no-signed-zeros")))
#endif
static void
row_top2(int m, const double *s, double *best_out, double *second_out, int *ties_out) {
  double best = s[0];
  for (int j = 1; j < m; j++) best = s[j] > best ? s[j] : best;
  double second = -DBL_MAX;
  int ties = 0;
  for (int j = 0; j < m; j++) {
    double v = s[j] < best ? s[j] : -DBL_MAX;
    second = v > second ? v : second;
    ties += s[j] >= best;
  }
  *best_out = best;
  *second_out = second;
  *ties_out = ties;
}

/* Sum with four accumulators: a fixed order (deterministic) without one long add chain. */
static double row_sum(int m, const double *p) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int j = 0;
  for (; j + 4 <= m; j += 4) {
    s0 += p[j];
    s1 += p[j + 1];
    s2 += p[j + 2];
    s3 += p[j + 3];
  }
  for (; j < m; j++) s0 += p[j];
  return (s0 + s1) + (s2 + s3);
}

/* Needs exp: marker in hot[] between the two passes. */
#define AS_ROW_PENDING (-2)

AS_VECTORIZE int as_attention_softmax_hot(int n, int m, const double *S, double logc, double *P,
                                          int *hot) {
  const double c = exp(logc); /* +inf when logc > ~709.78, 0 when very negative */
  int onehot = 0;
  /* Pass 1, row by row (reads row i of S before writing row i of P, so P may alias S):
   * saturated rows and infinite temperature get their final values; the others get the
   * exponents c (s - best) <= 0 and are marked. */
  for (int i = 0; i < n; i++) {
    const double *s = S + (size_t)i * m;
    double *p = P + (size_t)i * m;
    double best, second;
    int ties;
    row_top2(m, s, &best, &second, &ties);
    if (ties > 1) second = best;
    if (ties == 1 && m == 1) second = -INFINITY;
    int arg = 0;
    while (arg < m - 1 && s[arg] != best) arg++; /* bounded: a NaN score never equals best */
    double gap = best - second;                  /* > 0 unless tied */
    if (gap > 0.0 && (c == INFINITY || c * gap > AS_CUT)) {
      /* Saturated: every other weight underflows; an exact one-hot row. */
      for (int j = 0; j < m; j++) p[j] = 0.0;
      p[arg] = 1.0;
      onehot++;
      hot[i] = arg;
    } else if (c == INFINITY) { /* hardmax with ties: equal shares */
      const double share = 1.0 / ties;
      for (int j = 0; j < m; j++) p[j] = s[j] == best ? share : 0.0;
      hot[i] = -1;
    } else {
      for (int j = 0; j < m; j++) p[j] = c * (s[j] - best); /* <= 0; -inf possible */
      hot[i] = AS_ROW_PENDING;
    }
  }
  /* Pass 2: exponentials over runs of consecutive pending rows (long vector loops), then
   * each row's normalisation. */
  for (int i = 0; i < n;) {
    if (hot[i] != AS_ROW_PENDING) {
      i++;
      continue;
    }
    int e = i;
    while (e < n && hot[e] == AS_ROW_PENDING) e++;
    exp_nonpositive((e - i) * m, P + (size_t)i * m);
    for (; i < e; i++) {
      double *p = P + (size_t)i * m;
      double sum = row_sum(m, p);
      double inv = 1.0 / sum; /* sum >= 1: the maximum contributes exp(0) */
      for (int j = 0; j < m; j++) p[j] *= inv;
      /* One-hot only if the others underflowed; then the sum is exactly 1. */
      hot[i] = -1;
      if (sum == 1.0) {
        int nz = 0, at = 0;
        for (int j = 0; j < m; j++)
          if (p[j] != 0.0) {
            nz++;
            at = j;
          }
        if (nz == 1) {
          hot[i] = at;
          onehot++;
        }
      }
    }
  }
  return onehot;
}

int as_attention_softmax(int n, int m, const double *S, double logc, double *P) {
  /* Rows are independent: work in chunks with the row markers on the stack. */
  enum { CHUNK = 256 };
  int hot[CHUNK], onehot = 0;
  for (int i0 = 0; i0 < n; i0 += CHUNK) {
    int rows = n - i0 < CHUNK ? n - i0 : CHUNK;
    onehot += as_attention_softmax_hot(rows, m, S + (size_t)i0 * m, logc, P + (size_t)i0 * m, hot);
  }
  return onehot;
}

/* ---------------------------------------------------------------- small shapes
 * The attention step of the dynamics for few coordinates (dynamics.c uses it for d <= 8),
 * where BLAS calls and per-row loops of length n cost more than the arithmetic. The rows i
 * of P are vector lanes, 8 at a time (GNU C vector extensions; one version per instruction set,
 * see the end), so no loop needs a horizontal reduction and every accumulator of a chunk of 8
 * rows stays in registers while j runs over the tokens.
 * Same arithmetic, in the same order, as the general path (as_mm's small products and
 * as_attention_softmax_hot) at these shapes, so both give the same bits:
 *   scores S_ij = sum_k A_ik G_jk summed in k order; exponents c (s - best) and exp_nonpositive's
 *   exponential; row sums with four partial sums over j (row_sum); P = e * (1 / sum);
 *   H_ic = sum_j P_ij Y_jc with four partial sums over j (as_mm's few-column dot products).
 * A saturated row needs no special case: its other exponents are below -AS_CUT, so they are 0
 * exactly, its maximum gives e^0 = 1, the sum is 1 and the row is exactly one-hot.
 * Inputs: AT (d x ld) = A^T with A = G M (lanes >= n zero), G and Y (n x d row-major), c
 * finite (the caller handles c = +inf), d <= AS_SMALL_DMAX, ld a multiple of 8.
 * Outputs: PT (n x ld), PT[j * ld + i] = P_ij (lanes >= n: padding), and H = P Y (n x d).
 * Declared in linalg_dyn.h. */

#if defined(__GNUC__)

/* Every function below that takes or returns a vector is always_inline (at -O0 too): no vector
 * crosses a call, where versions compiled for different instruction sets would pass it
 * differently. GCC's note on that ABI difference (-Wpsabi) is therefore moot. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#endif
#pragma GCC diagnostic ignored "-Wpsabi"

typedef double as_vl __attribute__((vector_size(8 * AS_LANES)));
typedef int64_t as_vli __attribute__((vector_size(8 * AS_LANES)));
typedef uint64_t as_vlu __attribute__((vector_size(8 * AS_LANES)));

static inline __attribute__((always_inline)) as_vl vl_load(const double *p) {
  as_vl v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline __attribute__((always_inline)) void vl_store(double *p, as_vl v) {
  memcpy(p, &v, sizeof v);
}
/* m ? a : b lane by lane (m: all ones or all zeros per lane). */
static inline __attribute__((always_inline)) as_vl vl_select(as_vli m, as_vl a, as_vl b) {
  return (as_vl)(((as_vli)a & m) | ((as_vli)b & ~m));
}

/* Without native 512-bit vectors (native = 0), comparisons are made on 4-lane halves or replaced
 * by integer arithmetic: GCC turns a comparison of vectors wider than the target's into scalar
 * code, while bitwise and integer operations split cleanly. */
typedef double as_vh __attribute__((vector_size(32)));
typedef int64_t as_vhi __attribute__((vector_size(32)));

/* s > b ? s : b lane by lane (the row maximum). native: the target compares whole vectors. */
static inline __attribute__((always_inline)) as_vl vl_max(as_vl s, as_vl b, const int native) {
  if (native) return vl_select((as_vli)(s > b), s, b);
  as_vl r;
  for (int h = 0; h < AS_LANES / 4; h++) {
    as_vh sh, bh;
    memcpy(&sh, (const double *)&s + 4 * h, sizeof sh);
    memcpy(&bh, (const double *)&b + 4 * h, sizeof bh);
    const as_vhi m = (as_vhi)(sh > bh);
    const as_vh rh = (as_vh)(((as_vhi)sh & m) | ((as_vhi)bh & ~m));
    memcpy((double *)&r + 4 * h, &rh, sizeof rh);
  }
  return r;
}

/* For a <= 0 or NaN: all ones where a > -x (strict) or a >= -x (!strict), else zeros (NaN:
 * zeros). Without native comparisons: |a| < x, resp. |a| <= x, on the bit patterns. */
static inline __attribute__((always_inline)) as_vli vl_above(as_vl a, double x, int strict,
                                                             const int native) {
  if (native) return strict ? (as_vli)(a > -x) : (as_vli)(a >= -x);
  uint64_t L;
  memcpy(&L, &x, sizeof L);
  const as_vlu mag = (as_vlu)a & 0x7fffffffffffffffULL;
  return -(as_vli)((mag - (L + (strict ? 0 : 1))) >> 63);
}

/* exp_nonpositive on four vectors, the same operations (so the same bits), written step by step
 * across the four so that independent operations sit next to each other: the polynomial is a
 * long dependency chain, and one chain at a time leaves the floating-point units idle.
 * (A scalar operand of a vector operation stands for that value in every lane.) */
#define AS_X4(S) \
  S(0);          \
  S(1);          \
  S(2);          \
  S(3)
static inline __attribute__((always_inline)) void
vlx4_exp_nonpositive(as_vl *a0, as_vl *a1, as_vl *a2, as_vl *a3, const int native) {
  const as_vl zero = {0.0}, cut = zero - AS_CUT;
  as_vl a[4] = {*a0, *a1, *a2, *a3}, x[4], kf[4], r[4], q[4];
  as_vlu kb[4];
  /* Saturated entries (a < -AS_CUT: exactly 0) and row maxima (a = 0: exactly 1) are what the
   * polynomial below returns for them, bit for bit; when all 32 entries are such (the hardmax
   * regime of long runs) the polynomial is skipped. NaN lanes give 0 either way. */
  {
    as_vli need = {0}, nz[4];
    for (int u = 0; u < 4; u++) {
      const as_vlu mag = (as_vlu)a[u] & 0x7fffffffffffffffULL;
      nz[u] = -(as_vli)((mag | (0 - mag)) >> 63); /* all ones where a != 0 */
      need |= vl_above(a[u], AS_CUT, 0, native) & nz[u];
    }
    int64_t any = 0;
    for (int l = 0; l < AS_LANES; l++) any |= need[l];
    if (!any) {
      const as_vl one = zero + 1.0;
      *a0 = vl_select(nz[0], zero, one);
      *a1 = vl_select(nz[1], zero, one);
      *a2 = vl_select(nz[2], zero, one);
      *a3 = vl_select(nz[3], zero, one);
      return;
    }
  }
#define AS_STEP_X(u) x[u] = vl_select(vl_above(a[u], AS_CUT, 1, native), a[u], cut)
  AS_X4(AS_STEP_X);
#define AS_STEP_K(u) kf[u] = x[u] * 1.4426950408889634 + 0x1.8p52
  AS_X4(AS_STEP_K);
#define AS_STEP_B(u)     \
  kb[u] = (as_vlu)kf[u]; \
  kf[u] -= 0x1.8p52
  AS_X4(AS_STEP_B);
#define AS_STEP_R(u) \
  r[u] = (x[u] - kf[u] * 6.93147180369123816490e-01) - kf[u] * 1.90821492927058770002e-10
  AS_X4(AS_STEP_R);
#define AS_STEP_Q0(u) q[u] = zero + 1.0 / 6227020800.0
  AS_X4(AS_STEP_Q0);
#define AS_STEP_Q(u) q[u] = q[u] * r[u] + AS_COEF
#define AS_HORNER(C)            \
  do {                          \
    const double AS_COEF = (C); \
    AS_X4(AS_STEP_Q);           \
  } while (0)
  AS_HORNER(1.0 / 479001600.0);
  AS_HORNER(1.0 / 39916800.0);
  AS_HORNER(1.0 / 3628800.0);
  AS_HORNER(1.0 / 362880.0);
  AS_HORNER(1.0 / 40320.0);
  AS_HORNER(1.0 / 5040.0);
  AS_HORNER(1.0 / 720.0);
  AS_HORNER(1.0 / 120.0);
  AS_HORNER(1.0 / 24.0);
  AS_HORNER(1.0 / 6.0);
  AS_HORNER(0.5);
  AS_HORNER(1.0);
  AS_HORNER(1.0);
#define AS_STEP_S(u)                                  \
  a[u] = vl_select(vl_above(a[u], AS_CUT, 0, native), \
                   q[u] * (as_vl)((kb[u] + (uint64_t)(1023 + 512)) << 52) * 0x1p-512, zero)
  AS_X4(AS_STEP_S);
#undef AS_STEP_X
#undef AS_STEP_K
#undef AS_STEP_B
#undef AS_STEP_R
#undef AS_STEP_Q0
#undef AS_STEP_Q
#undef AS_HORNER
#undef AS_X4
  *a0 = a[0];
  *a1 = a[1];
  *a2 = a[2];
  *a3 = a[3];
}

/* Rows i0 .. i0 + 7. Always inlined with d a constant for the common dimensions, so that the
 * loops over k and col unroll and every accumulator lives in a register. */
static inline __attribute__((always_inline)) void
small_rows(int i0, int n, const int d, int ld, const double *restrict AT, const double *restrict G,
           double c, const double *restrict Y, double *restrict PT, double *restrict H,
           const int native) {
  const as_vl zero = {0.0};
  const int nfull = n / 4 * 4; /* tokens j < nfull go to partial sum j % 4, the rest to 0 */
  double *pt = PT + i0;
  as_vl at[AS_SMALL_DMAX];
  for (int k = 0; k < d; k++) at[k] = vl_load(AT + (size_t)k * ld + i0);
  /* Scores of the 8 rows against every token, and the row maxima. */
  as_vl best = zero - DBL_MAX;
  for (int j = 0; j < n; j++) {
    const double *g = G + (size_t)j * d;
    as_vl s = at[0] * g[0];
    for (int k = 1; k < d; k++) s += at[k] * g[k];
    best = vl_max(s, best, native);
    vl_store(pt + (size_t)j * ld, s);
  }
  /* Exponentials, four tokens at a time, and the row sums. */
  as_vl s0 = zero, s1 = zero, s2 = zero, s3 = zero;
  int j = 0;
  for (; j < nfull; j += 4) {
    double *p0 = pt + (size_t)j * ld, *p1 = p0 + ld, *p2 = p1 + ld, *p3 = p2 + ld;
    as_vl e0 = c * (vl_load(p0) - best), e1 = c * (vl_load(p1) - best),
          e2 = c * (vl_load(p2) - best), e3 = c * (vl_load(p3) - best);
    vlx4_exp_nonpositive(&e0, &e1, &e2, &e3, native);
    vl_store(p0, e0);
    vl_store(p1, e1);
    vl_store(p2, e2);
    vl_store(p3, e3);
    s0 += e0;
    s1 += e1;
    s2 += e2;
    s3 += e3;
  }
  if (j < n) { /* the last n % 4 tokens, padded with exponents 0 that are then dropped */
    double *p0 = pt + (size_t)j * ld;
    as_vl e[4] = {zero, zero, zero, zero};
    for (int u = 0; u < n - j; u++) e[u] = c * (vl_load(p0 + (size_t)u * ld) - best);
    vlx4_exp_nonpositive(&e[0], &e[1], &e[2], &e[3], native);
    for (int u = 0; u < n - j; u++) {
      vl_store(p0 + (size_t)u * ld, e[u]);
      s0 += e[u];
    }
  }
  const as_vl inv = 1.0 / ((s0 + s1) + (s2 + s3));
  /* Normalisation and H = P Y, one column at a time (four partial sums over j). */
  for (j = 0; j < n; j++) vl_store(pt + (size_t)j * ld, vl_load(pt + (size_t)j * ld) * inv);
  const int lanes = n - i0 < AS_LANES ? n - i0 : AS_LANES;
  for (int col = 0; col < d; col++) {
    as_vl h0 = zero, h1 = zero, h2 = zero, h3 = zero;
    const double *y = Y + col;
    for (j = 0; j < nfull; j += 4) {
      const double *p0 = pt + (size_t)j * ld;
      h0 += vl_load(p0) * y[(size_t)j * d];
      h1 += vl_load(p0 + ld) * y[(size_t)(j + 1) * d];
      h2 += vl_load(p0 + 2 * (size_t)ld) * y[(size_t)(j + 2) * d];
      h3 += vl_load(p0 + 3 * (size_t)ld) * y[(size_t)(j + 3) * d];
    }
    for (; j < n; j++) h0 += vl_load(pt + (size_t)j * ld) * y[(size_t)j * d];
    const as_vl hc = (h0 + h1) + (h2 + h3);
    for (int l = 0; l < lanes; l++) H[(size_t)(i0 + l) * d + col] = hc[l];
  }
}

/* All rows, d a constant where it is common. */
static inline __attribute__((always_inline)) void
small_all(int n, int d, int ld, const double *restrict AT, const double *restrict G, double c,
          const double *restrict Y, double *restrict PT, double *restrict H, const int native) {
  for (int i0 = 0; i0 < n; i0 += AS_LANES) {
    switch (d) {
    case 1:
      small_rows(i0, n, 1, ld, AT, G, c, Y, PT, H, native);
      break;
    case 2:
      small_rows(i0, n, 2, ld, AT, G, c, Y, PT, H, native);
      break;
    case 3:
      small_rows(i0, n, 3, ld, AT, G, c, Y, PT, H, native);
      break;
    default:
      small_rows(i0, n, d, ld, AT, G, c, Y, PT, H, native);
      break;
    }
  }
}

/* One version per instruction set, chosen at run time (all give the same bits): 512-bit
 * vectors where comparisons on them are native, else comparisons on 4-lane halves and masks
 * from integer arithmetic. no-tree-ter keeps the four interleaved exponentials interleaved
 * (without it GCC rebuilds each polynomial as one chain). */
#if !defined(__clang__)
#define AS_SMALL_OPT optimize("no-tree-ter")
#else
#define AS_SMALL_OPT noinline
#endif
#if defined(__x86_64__) && !defined(__clang__)
#define AS_SMALL_X86 1
static __attribute__((target("avx512f"), AS_SMALL_OPT)) void
small_avx512(int n, int d, int ld, const double *restrict AT, const double *restrict G, double c,
             const double *restrict Y, double *restrict PT, double *restrict H) {
  small_all(n, d, ld, AT, G, c, Y, PT, H, 1);
}
static __attribute__((target("avx2"), AS_SMALL_OPT)) void
small_avx2(int n, int d, int ld, const double *restrict AT, const double *restrict G, double c,
           const double *restrict Y, double *restrict PT, double *restrict H) {
  small_all(n, d, ld, AT, G, c, Y, PT, H, 0);
}
#endif
static __attribute__((AS_SMALL_OPT)) void
small_plain(int n, int d, int ld, const double *restrict AT, const double *restrict G, double c,
            const double *restrict Y, double *restrict PT, double *restrict H) {
  small_all(n, d, ld, AT, G, c, Y, PT, H, 0);
}

/* The instruction set of the small kernels: 2 AVX-512F, 1 AVX2, 0 the baseline; the CPU's,
 * capped by ATTNSWEEP_ISA (attention.h), read once. */
static int as_small_isa(void) {
  static int isa = -1; /* benign race: every thread computes the same value */
  if (isa >= 0) return isa;
  int v = 0;
#ifdef AS_SMALL_X86
  v = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
  const char *cap = getenv("ATTNSWEEP_ISA");
  if (cap && strcmp(cap, "avx2") == 0 && v > 1) v = 1;
  if (cap && strcmp(cap, "baseline") == 0) v = 0;
  isa = v;
  return isa;
}

const char *as_attention_isa(void) {
  static const char *const names[] = {"baseline (no vector clone)", "AVX2 (x86-64)",
                                      "AVX-512F (x86-64)"};
#if defined(__GNUC__)
  return names[as_small_isa()];
#else
  return names[0];
#endif
}

void as_attention_small(int n, int d, int ld, const double *restrict AT, const double *restrict G,
                        double c, const double *restrict Y, double *restrict PT,
                        double *restrict H) {
#ifdef AS_SMALL_X86
  if (as_small_isa() == 2) {
    small_avx512(n, d, ld, AT, G, c, Y, PT, H);
    return;
  }
  if (as_small_isa() == 1) {
    small_avx2(n, d, ld, AT, G, c, Y, PT, H);
    return;
  }
#endif
  small_plain(n, d, ld, AT, G, c, Y, PT, H);
}

/* ---------------------------------------------------------------- trials as lanes
 * The same attention step for AS_BATCH_LANES trials of one shape at once (batch.h,
 * dynamics.c's as_dyn_run_batch): lane l is trial l, so no lane is wasted whatever n is. Per
 * lane it performs exactly the operations of small_rows on that trial, in the same order
 * (scores summed in k order, the row maximum, c (s - best), the four-way exponential, row sums
 * with four partial sums over j and the tail in the first, P = e * (1 / sum), H with four
 * partial sums over j), so a trial gets the same bits in a batch as alone. Inputs
 * lane-interleaved: A[(i d + k) L + l] = (G Mm)_ik of trial l, G[(j d + k) L + l],
 * Y[(j d + k) L + l], c[l] finite; output H[(i d + k) L + l]. e: n L doubles of scratch.
 * n <= AS_BATCH_NMAX, d <= AS_SMALL_DMAX. */
#if AS_BATCH_LANES != AS_LANES
#error "the lane kernel assumes one trial per lane of as_vl"
#endif
/* One kernel per vector width W (lanes l0 .. l0 + W - 1 of the batch at a time) so that every
 * comparison is native to the instruction set: 8 lanes for AVX-512F, 4 for AVX2 (16 ymm
 * registers: two 4-lane groups spill far less than one 8-lane one), 2 for the baseline. U
 * exponentials are interleaved (independent chains side by side). */
#define AS_LANE_KERNEL(NAME, W, U)                                                                \
  typedef double NAME##_v __attribute__((vector_size(8 * (W))));                                  \
  typedef int64_t NAME##_vi __attribute__((vector_size(8 * (W))));                                \
  typedef uint64_t NAME##_vu __attribute__((vector_size(8 * (W))));                               \
  static inline __attribute__((always_inline)) NAME##_v NAME##_ld(const double *p) {              \
    NAME##_v v;                                                                                   \
    memcpy(&v, p, sizeof v);                                                                      \
    return v;                                                                                     \
  }                                                                                               \
  static inline __attribute__((always_inline)) void NAME##_st(double *p, NAME##_v v) {            \
    memcpy(p, &v, sizeof v);                                                                      \
  }                                                                                               \
  static inline __attribute__((always_inline))                                                    \
  NAME##_v NAME##_sel(NAME##_vi m, NAME##_v a, NAME##_v b) {                                      \
    return (NAME##_v)(((NAME##_vi)a & m) | ((NAME##_vi)b & ~m));                                  \
  }                                                                                               \
  /* exp_nonpositive on U vectors: the same operations, so the same bits. */                      \
  static inline __attribute__((always_inline)) void NAME##_exp(NAME##_v *a) {                     \
    const NAME##_v zero = {0.0}, one = zero + 1.0, cut = zero - AS_CUT;                           \
    NAME##_vi need = {0}, nz[U];                                                                  \
    for (int u = 0; u < U; u++) {                                                                 \
      nz[u] = (NAME##_vi)(a[u] != 0.0);                                                           \
      need |= (NAME##_vi)(a[u] >= -AS_CUT) & nz[u];                                               \
    }                                                                                             \
    int64_t any = 0;                                                                              \
    for (int l = 0; l < (W); l++) any |= need[l];                                                 \
    if (!any) { /* only exact zeros and ones: what the polynomial gives them */                   \
      for (int u = 0; u < U; u++) a[u] = NAME##_sel(nz[u], zero, one);                            \
      return;                                                                                     \
    }                                                                                             \
    NAME##_v x[U], kf[U], r[U], q[U];                                                             \
    NAME##_vu kb[U];                                                                              \
    for (int u = 0; u < U; u++) x[u] = NAME##_sel((NAME##_vi)(a[u] > -AS_CUT), a[u], cut);        \
    for (int u = 0; u < U; u++) kf[u] = x[u] * 1.4426950408889634 + 0x1.8p52;                     \
    for (int u = 0; u < U; u++) {                                                                 \
      kb[u] = (NAME##_vu)kf[u];                                                                   \
      kf[u] -= 0x1.8p52;                                                                          \
    }                                                                                             \
    for (int u = 0; u < U; u++)                                                                   \
      r[u] = (x[u] - kf[u] * 6.93147180369123816490e-01) - kf[u] * 1.90821492927058770002e-10;    \
    static const double co[] = {1.0 / 479001600.0,                                                \
                                1.0 / 39916800.0,                                                 \
                                1.0 / 3628800.0,                                                  \
                                1.0 / 362880.0,                                                   \
                                1.0 / 40320.0,                                                    \
                                1.0 / 5040.0,                                                     \
                                1.0 / 720.0,                                                      \
                                1.0 / 120.0,                                                      \
                                1.0 / 24.0,                                                       \
                                1.0 / 6.0,                                                        \
                                0.5,                                                              \
                                1.0,                                                              \
                                1.0};                                                             \
    for (int u = 0; u < U; u++) q[u] = zero + 1.0 / 6227020800.0;                                 \
    for (int h = 0; h < 13; h++)                                                                  \
      for (int u = 0; u < U; u++) q[u] = q[u] * r[u] + co[h];                                     \
    for (int u = 0; u < U; u++)                                                                   \
      a[u] =                                                                                      \
          NAME##_sel((NAME##_vi)(a[u] >= -AS_CUT),                                                \
                     q[u] * (NAME##_v)((kb[u] + (uint64_t)(1023 + 512)) << 52) * 0x1p-512, zero); \
  }                                                                                               \
  static inline __attribute__((always_inline)) void NAME##_row(                                   \
      int i, int n, const int d, const double *restrict A, const double *restrict G,              \
      const double *restrict c, const double *restrict Y, double *restrict H, double *restrict e, \
      int l0) {                                                                                   \
    const int L = AS_BATCH_LANES, nfull = n / 4 * 4;                                              \
    const NAME##_v zero = {0.0}, cv = NAME##_ld(c + l0);                                          \
    NAME##_v at[AS_SMALL_DMAX], best = zero - DBL_MAX;                                            \
    for (int k = 0; k < d; k++) at[k] = NAME##_ld(A + ((size_t)i * d + k) * L + l0);              \
    for (int j = 0; j < n; j++) {                                                                 \
      const double *g = G + (size_t)j * d * L + l0;                                               \
      NAME##_v s = at[0] * NAME##_ld(g);                                                          \
      for (int k = 1; k < d; k++) s += at[k] * NAME##_ld(g + (size_t)k * L);                      \
      best = NAME##_sel((NAME##_vi)(s > best), s, best);                                          \
      NAME##_st(e + (size_t)j * (W), s);                                                          \
    }                                                                                             \
    int j = 0;                                                                                    \
    for (; j < n; j += U) {                                                                       \
      NAME##_v v[U];                                                                              \
      for (int u = 0; u < U; u++)                                                                 \
        v[u] = j + u < n ? cv * (NAME##_ld(e + (size_t)(j + u) * (W)) - best) : zero;             \
      NAME##_exp(v);                                                                              \
      for (int u = 0; u < U && j + u < n; u++) NAME##_st(e + (size_t)(j + u) * (W), v[u]);        \
    }                                                                                             \
    NAME##_v s0 = zero, s1 = zero, s2 = zero, s3 = zero;                                          \
    for (j = 0; j < nfull; j += 4) {                                                              \
      const double *p0 = e + (size_t)j * (W);                                                     \
      s0 += NAME##_ld(p0);                                                                        \
      s1 += NAME##_ld(p0 + (W));                                                                  \
      s2 += NAME##_ld(p0 + 2 * (W));                                                              \
      s3 += NAME##_ld(p0 + 3 * (W));                                                              \
    }                                                                                             \
    for (; j < n; j++) s0 += NAME##_ld(e + (size_t)j * (W));                                      \
    const NAME##_v inv = 1.0 / ((s0 + s1) + (s2 + s3));                                           \
    for (j = 0; j < n; j++) NAME##_st(e + (size_t)j * (W), NAME##_ld(e + (size_t)j * (W)) * inv); \
    const size_t sy = (size_t)d * L;                                                              \
    for (int col = 0; col < d; col++) {                                                           \
      NAME##_v h0 = zero, h1 = zero, h2 = zero, h3 = zero;                                        \
      const double *y = Y + (size_t)col * L + l0;                                                 \
      for (j = 0; j < nfull; j += 4) {                                                            \
        const double *p0 = e + (size_t)j * (W), *y0 = y + (size_t)j * sy;                         \
        h0 += NAME##_ld(p0) * NAME##_ld(y0);                                                      \
        h1 += NAME##_ld(p0 + (W)) * NAME##_ld(y0 + sy);                                           \
        h2 += NAME##_ld(p0 + 2 * (W)) * NAME##_ld(y0 + 2 * sy);                                   \
        h3 += NAME##_ld(p0 + 3 * (W)) * NAME##_ld(y0 + 3 * sy);                                   \
      }                                                                                           \
      for (; j < n; j++) h0 += NAME##_ld(e + (size_t)j * (W)) * NAME##_ld(y + (size_t)j * sy);    \
      NAME##_st(H + ((size_t)i * d + col) * L + l0, (h0 + h1) + (h2 + h3));                       \
    }                                                                                             \
  }                                                                                               \
  static inline __attribute__((always_inline)) void NAME##_all(                                   \
      int n, int d, const double *restrict A, const double *restrict G, const double *restrict c, \
      const double *restrict Y, double *restrict H, double *restrict e) {                         \
    for (int l0 = 0; l0 < AS_BATCH_LANES; l0 += (W))                                              \
      for (int i = 0; i < n; i++) switch (d) {                                                    \
        case 1:                                                                                   \
          NAME##_row(i, n, 1, A, G, c, Y, H, e, l0);                                              \
          break;                                                                                  \
        case 2:                                                                                   \
          NAME##_row(i, n, 2, A, G, c, Y, H, e, l0);                                              \
          break;                                                                                  \
        case 3:                                                                                   \
          NAME##_row(i, n, 3, A, G, c, Y, H, e, l0);                                              \
          break;                                                                                  \
        default:                                                                                  \
          NAME##_row(i, n, d, A, G, c, Y, H, e, l0);                                              \
          break;                                                                                  \
        }                                                                                         \
  }

#if !defined(__clang__)
#define AS_LANE_OPT optimize("O3", "no-tree-ter")
#else
#define AS_LANE_OPT noinline
#endif
#if AS_BATCH_LANES % 8 != 0
#error "the lane kernels take the batch in groups of 8, 4 or 2 lanes"
#endif
#ifdef AS_SMALL_X86
#pragma GCC push_options
#pragma GCC target("avx512f")
AS_LANE_KERNEL(lk512, 8, 4)
static __attribute__((AS_LANE_OPT)) void lanes_avx512(int n, int d, const double *restrict A,
                                                      const double *restrict G,
                                                      const double *restrict c,
                                                      const double *restrict Y, double *restrict H,
                                                      double *restrict e) {
  lk512_all(n, d, A, G, c, Y, H, e);
}
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2")
AS_LANE_KERNEL(lk256, 4, 4)
static __attribute__((AS_LANE_OPT)) void lanes_avx2(int n, int d, const double *restrict A,
                                                    const double *restrict G,
                                                    const double *restrict c,
                                                    const double *restrict Y, double *restrict H,
                                                    double *restrict e) {
  lk256_all(n, d, A, G, c, Y, H, e);
}
#pragma GCC pop_options
#endif
AS_LANE_KERNEL(lk128, 2, 4)
static __attribute__((AS_LANE_OPT)) void lanes_plain(int n, int d, const double *restrict A,
                                                     const double *restrict G,
                                                     const double *restrict c,
                                                     const double *restrict Y, double *restrict H,
                                                     double *restrict e) {
  lk128_all(n, d, A, G, c, Y, H, e);
}

void as_attention_small_lanes(int n, int d, const double *restrict A, const double *restrict G,
                              const double *restrict c, const double *restrict Y,
                              double *restrict H, double *restrict e) {
#ifdef AS_SMALL_X86
  if (as_small_isa() == 2) {
    lanes_avx512(n, d, A, G, c, Y, H, e);
    return;
  }
  if (as_small_isa() == 1) {
    lanes_avx2(n, d, A, G, c, Y, H, e);
    return;
  }
#endif
  lanes_plain(n, d, A, G, c, Y, H, e);
}

#endif /* __GNUC__ */

/* ---------------------------------------------------------------- Sinkhorn (docs/variants.md)
 * Doubly stochastic attention: P = diag(e^{c f}) e^{c S} diag(e^{c g}) with rows and columns
 * summing to 1, by alternate normalisations in the log domain. The potentials f, g are kept in
 * the units of the scores (divided by the temperature c), so nothing is ever multiplied by c
 * except differences to a maximum, which are <= 0: no overflow at any c, c = +inf included
 * (then every log-sum-exp is the maximum and the iteration is its zero-temperature limit).
 * Iteration 1 is the row softmax itself (the same call, so the same bits); each further
 * iteration normalises the columns and then the rows, so the returned P is row-stochastic to
 * rounding and its column sums carry the remaining deviation. */

/* (1/c) log sum_j e^{c a_j}, a_j read at stride `stride` (m >= 1 entries), buf m doubles. */
static double lse_scaled(int m, const double *a, size_t stride, double c, double *buf) {
  double best = a[0];
  for (int j = 1; j < m; j++) best = a[(size_t)j * stride] > best ? a[(size_t)j * stride] : best;
  for (int j = 0; j < m; j++) {
    double v = a[(size_t)j * stride];
    buf[j] = v == best ? 0.0 : c * (v - best); /* c = inf: -inf below the maximum, never NaN */
  }
  exp_nonpositive(m, buf);
  double sum = row_sum(m, buf); /* >= 1 */
  return c == INFINITY ? best : best + log(sum) / c;
}

/* Largest |row sum - 1| and |column sum - 1| of the n x n matrix P. col: n doubles. */
static double stochastic_dev(int n, const double *P, double *col) {
  double dev = 0.0;
  for (int j = 0; j < n; j++) col[j] = 0.0;
  for (int i = 0; i < n; i++) {
    const double *p = P + (size_t)i * n;
    double r = row_sum(n, p);
    dev = fabs(r - 1.0) > dev ? fabs(r - 1.0) : dev;
    for (int j = 0; j < n; j++) col[j] += p[j];
  }
  for (int j = 0; j < n; j++) dev = fabs(col[j] - 1.0) > dev ? fabs(col[j] - 1.0) : dev;
  return dev;
}

int as_attention_sinkhorn(int n, const double *S, double logc, int iters, double tol, double *P,
                          int *hot, double *work, double *dev_out, int *iters_out) {
  const double c = exp(logc);
  double *S2 = work, *f = S2 + (size_t)n * n, *g = f + n, *buf = g + n;
  int onehot = as_attention_softmax_hot(n, n, S, logc, P, hot);
  int it = 1;
  double dev = stochastic_dev(n, P, buf);
  for (int j = 0; j < n; j++) g[j] = 0.0;
  while (it < iters && !(dev <= tol)) {
    /* f from the last row step, then the column step g, then the next row step. */
    for (int i = 0; i < n; i++) {
      const double *s = S + (size_t)i * n;
      double *s2 = S2 + (size_t)i * n;
      for (int j = 0; j < n; j++) s2[j] = s[j] + g[j];
      f[i] = -lse_scaled(n, s2, 1, c, buf);
    }
    for (int i = 0; i < n; i++) {
      const double *s = S + (size_t)i * n;
      double *s2 = S2 + (size_t)i * n;
      for (int j = 0; j < n; j++) s2[j] = s[j] + f[i];
    }
    for (int j = 0; j < n; j++) g[j] = -lse_scaled(n, S2 + j, (size_t)n, c, buf);
    for (int i = 0; i < n; i++) {
      const double *s = S + (size_t)i * n;
      double *s2 = S2 + (size_t)i * n;
      for (int j = 0; j < n; j++) s2[j] = s[j] + g[j];
    }
    onehot = as_attention_softmax_hot(n, n, S2, logc, P, hot);
    it++;
    dev = stochastic_dev(n, P, buf);
  }
  *dev_out = dev;
  if (iters_out) *iters_out = it;
  return onehot;
}
