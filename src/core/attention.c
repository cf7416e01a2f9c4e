/* attention.c: the row softmax with the temperature factored out (attention.h). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/attention.h"
#include "linalg_dyn.h"

#if !defined(__GNUC__)
#error "attention.c needs GNU C vector extensions (GCC or Clang)"
#endif

/* GCC: let the plain loops vectorise (the build's -O2 uses the cheap cost model only), with
 * wider vectors where the CPU has them (chosen at load time). No FMA contraction happens
 * (ISO C mode: -ffp-contract=off), so every clone returns the same bits. */
#if !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define AS_VECTORIZE \
  __attribute__((optimize("O3", "no-trapping-math"), target_clones("avx512f", "avx2", "default")))
#elif !defined(__clang__)
#define AS_VECTORIZE __attribute__((optimize("O3", "no-trapping-math")))
#else
#define AS_VECTORIZE
#endif

/* ---------------------------------------------------------------- kernels per instruction set
 * The exponential and the small-shape kernels (attention_kernels.h), once per instruction set:
 * AVX-512F and AVX2 (each with FMA) on x86-64 with GCC, chosen at run time whatever -march the
 * build used, and the baseline everywhere (2-lane vectors, fma() from the C library: the same
 * correctly rounded operation, slower where the CPU has no FMA). All give the same bits.
 * GCC keeps the four interleaved exponentials interleaved with no-tree-ter (without it, it
 * rebuilds each polynomial as one chain). */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#endif
#pragma GCC diagnostic ignored "-Wpsabi" /* moot: no vector crosses a call (see the header) */
#if !defined(__clang__)
#pragma GCC optimize("O3", "no-tree-ter")
#endif

#if defined(__x86_64__) && !defined(__clang__)
#define AS_KERNELS_X86 1
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#define AK_W 8
#define AK(name) name##_avx512
#define AK_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define AK_TAB8(t, i) _mm512_permutexvar_pd((__m512i)(i), _mm512_load_pd(t))
#define AK_MAX(s, b) _mm512_max_pd(s, b)
#define AK_ANY(m) (_mm512_test_epi64_mask((__m512i)(m), (__m512i)(m)) != 0)
#include "attention_kernels.h"
#undef AK_W
#undef AK
#undef AK_FMA
#undef AK_TAB8
#undef AK_MAX
#undef AK_ANY
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define AK_W 4
#define AK(name) name##_avx2
#define AK_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define AK_TAB8(t, i) _mm256_i64gather_pd(t, (__m256i)(i), 8)
#define AK_MAX(s, b) _mm256_max_pd(s, b)
#define AK_ANY(m) (!_mm256_testz_si256((__m256i)(m), (__m256i)(m)))
#include "attention_kernels.h"
#undef AK_W
#undef AK
#undef AK_FMA
#undef AK_TAB8
#undef AK_MAX
#undef AK_ANY
#pragma GCC pop_options
#endif

/* The baseline: lane by lane through fma(). */
typedef double as_v2 __attribute__((vector_size(16)));
static inline __attribute__((always_inline)) as_v2 as_fma2(as_v2 a, as_v2 b, as_v2 c) {
  as_v2 r;
  for (int l = 0; l < 2; l++) r[l] = fma(a[l], b[l], c[l]);
  return r;
}
typedef int64_t as_v2i __attribute__((vector_size(16)));
static inline __attribute__((always_inline)) as_v2 as_tab2(const double *t, as_v2i i) {
  return (as_v2){t[i[0]], t[i[1]]};
}
static inline __attribute__((always_inline)) as_v2 as_max2(as_v2 s, as_v2 b) {
  return (as_v2){s[0] > b[0] ? s[0] : b[0], s[1] > b[1] ? s[1] : b[1]};
}
#define AK_W 2
#define AK(name) name##_plain
#define AK_FMA(a, b, c) as_fma2(a, b, c)
#define AK_TAB8(t, i) as_tab2(t, i)
#define AK_MAX(s, b) as_max2(s, b)
#define AK_ANY(m) (((m)[0] | (m)[1]) != 0)
#include "attention_kernels.h"
#undef AK_W
#undef AK
#undef AK_FMA
#undef AK_TAB8
#undef AK_MAX
#undef AK_ANY

/* The instruction set of the kernels: 2 AVX-512F, 1 AVX2, 0 the baseline; the CPU's (with
 * FMA), capped by ATTNSWEEP_ISA (attention.h), read once. */
static int cpu_isa(void) {
#ifdef AS_KERNELS_X86
  const int fma3 = __builtin_cpu_supports("fma");
  return fma3 && __builtin_cpu_supports("avx512f") ? 2
         : fma3 && __builtin_cpu_supports("avx2")  ? 1
                                                   : 0;
#else
  return 0;
#endif
}

static int isa_chosen = -1; /* benign race: every thread computes the same value */

int as_isa_cap(void) {
  const char *cap = getenv("ATTNSWEEP_ISA");
  if (cap && strcmp(cap, "baseline") == 0) return 0;
  if (cap && strcmp(cap, "avx2") == 0) return 1;
  return 2;
}

static int as_small_isa(void) {
  if (isa_chosen >= 0) return isa_chosen;
  const int v = cpu_isa(), cap = as_isa_cap();
  isa_chosen = v < cap ? v : cap;
  return isa_chosen;
}

int as_attention_force_isa(int isa) {
  const int cpu = cpu_isa();
  if (isa < 0) {
    isa_chosen = -1;
    return as_small_isa();
  }
  isa_chosen = isa < cpu ? isa : cpu;
  return isa_chosen;
}

const char *as_attention_isa(void) {
  static const char *const names[] = {"baseline (no vector clone)", "AVX2 with FMA (x86-64)",
                                      "AVX-512F with FMA (x86-64)"};
  return names[as_small_isa()];
}

/* p[j] = e^{a[j]} for a[j] <= 0, in place: exactly 0 below -AS_EXP_CUT (and for -inf), exactly
 * 1 at 0; our own exponential, not libm's, so that it gives the same bits on every machine
 * (attention_kernels.h: AK(exp)). */
static void exp_nonpositive(int m, double *p) {
#ifdef AS_KERNELS_X86
  if (as_small_isa() == 2) {
    exp_array_avx512(m, p);
    return;
  }
  if (as_small_isa() == 1) {
    exp_array_avx2(m, p);
    return;
  }
#endif
  exp_array_plain(m, p);
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
    if (gap > 0.0 && (c == INFINITY || c * gap > AS_EXP_CUT)) {
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
 * of P are vector lanes, W at a time (AK(rows) in attention_kernels.h), so no loop needs a
 * horizontal reduction and every accumulator of a chunk of rows stays in registers while j
 * runs over the tokens.
 * Same arithmetic, in the same order, as the general path (as_mm's small products and
 * as_attention_softmax_hot) at these shapes, so both give the same bits:
 *   scores S_ij = sum_k A_ik G_jk summed in k order; exponents c (s - best) and exp_nonpositive's
 *   exponential; row sums with four partial sums over j (row_sum); P = e * (1 / sum);
 *   H_ic = sum_j P_ij Y_jc with four partial sums over j (as_mm's few-column dot products).
 * A saturated row needs no special case: its other exponents are below -AS_EXP_CUT, so they
 * are 0 exactly, its maximum gives e^0 = 1, the sum is 1 and the row is exactly one-hot.
 * Inputs: AT (d x ld) = A^T with A = G M (lanes >= n zero), G and Y (n x d row-major), c
 * finite (the caller handles c = +inf), d <= AS_SMALL_DMAX, ld a multiple of 8.
 * Outputs: PT (n x ld), PT[j * ld + i] = P_ij (lanes >= n: padding), and H = P Y (n x d).
 * Declared in linalg_dyn.h. */
#if AS_LANES % 8 != 0
#error "the row kernels take rows 8, 4 or 2 at a time"
#endif
void as_attention_small(int n, int d, int ld, const double *restrict AT, const double *restrict G,
                        double c, const double *restrict Y, double *restrict PT,
                        double *restrict H) {
#ifdef AS_KERNELS_X86
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
 * lane it performs exactly the operations of AK(rows) on that trial, in the same order
 * (scores summed in k order, the row maximum, c (s - best), the four-way exponential, row sums
 * with four partial sums over j and the tail in the first, P = e * (1 / sum), H with four
 * partial sums over j), so a trial gets the same bits in a batch as alone. Inputs
 * lane-interleaved: A[(i d + k) L + l] = (G Mm)_ik of trial l, G[(j d + k) L + l],
 * Y[(j d + k) L + l], c[l] finite; output H[(i d + k) L + l]. e: n L doubles of scratch.
 * n <= AS_SMALL_NMAX, d <= AS_SMALL_DMAX. Lanes in groups of the vector width (8, 4 or 2). */
#if AS_BATCH_LANES % 8 != 0
#error "the lane kernels take the batch in groups of 8, 4 or 2 lanes"
#endif
void as_attention_small_lanes(int n, int d, const double *restrict A, const double *restrict G,
                              const double *restrict c, const double *restrict Y,
                              double *restrict H, double *restrict e) {
#ifdef AS_KERNELS_X86
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

/* ---------------------------------------------------------------- Sinkhorn (docs/variants.md)
 * Doubly stochastic attention: P = diag(e^{c f}) e^{c S} diag(e^{c g}) with rows and columns
 * summing to 1. The potentials f, g are kept in the units of the scores (divided by the
 * temperature c), so nothing is ever multiplied by c except differences to a maximum, which
 * are <= 0: no overflow at any c.
 *
 * Plain alternate normalisations stall once c times the spread of the scores is large (the
 * saturated regime of the dynamics, c ~ e^{2 mu t}): their rate is the second singular value of
 * P, near 1 when P is close to a permutation with weakly coupled blocks. So:
 *   1. epsilon scaling: from a cold start the iterations run at the temperatures c / 8^k,
 *      k = K .. 0, the first with c 8^-K range(S) <= 8 (where they converge in a few steps),
 *      each level leaving its potentials to the next once within SK_LEVEL_TOL;
 *   2. warm start: with *warm the potentials g of the previous call (the previous stage or step
 *      of the dynamics) start the iterations at the target temperature directly; when that has
 *      not converged after SK_WARM_BUDGET iterations, a cold start follows;
 *   3. Newton steps on the column potentials (Sinkhorn-Newton, Brauer, Clason, Lorenz and
 *      Wirth 2017): after a row step, the column deviations e = P^T 1 - 1 and the Hessian
 *      L = diag(P^T 1) - P^T P (symmetric, positive semidefinite, 1 in its kernel) give
 *      a = -L^+ e in units of 1/c (eigenvalues below 1e-13 of the largest dropped: exactly
 *      decoupled blocks), at most SK_CLIP per entry, taken when it lowers the deviation
 *      (steps 1, 1/4, 1/16), else a plain column-then-row step is taken;
 *   4. below SK_POLISH at the target temperature the scaling continues on P itself,
 *      P_ij <- P_ij e^{a_j} / (row sum): the potentials in score units resolve P only to
 *      c * 2^-53 relatively (4e-8 at c = 2e8), the factors e^{a_j} near 1 to rounding.
 * c = +inf (the temperature beyond the range of a double) is iterated at c = 2^60, where every
 * weight more than 708 / 2^60 (6e-16 of the scores' scale, max |S| <= 1) below its row's
 * maximum is 0: the zero-temperature limit to the resolution of the scores.
 * One iteration is one row normalisation (n^2 exponentials; a Newton step adds O(n^3) in
 * plain loops, for n <= AS_ATTENTION_SINKHORN_NEWTON_N only). Iteration 1 of a cold start is
 * the row softmax itself (the same call, so the same bits). The eigenvectors come from a
 * cyclic Jacobi iteration in plain C (no LAPACK), so the result has the same bits on every
 * machine. */

#define SK_LEVEL_RATIO 8.0 /* temperature ratio between levels of epsilon scaling */
#define SK_LEVEL_START 8.0 /* the first level: c * range(S) <= this */
#define SK_LEVEL_TOL 1e-3  /* an intermediate level stops at this deviation */
#define SK_POLISH 1e-4     /* the target level continues on P below this */
#define SK_WARM_BUDGET 16  /* iterations of a warm start before a cold restart */
#define SK_CLIP 4.0        /* largest Newton step per potential, in units of 1/c */
#define SK_LN2 0.69314718055994530942

/* (1/c) log sum_j e^{c a_j}, a_j read at stride `stride` (m >= 1 entries), buf m doubles. */
static double lse_scaled(int m, const double *a, size_t stride, double c, double *buf) {
  double best = a[0];
  for (int j = 1; j < m; j++) best = a[(size_t)j * stride] > best ? a[(size_t)j * stride] : best;
  for (int j = 0; j < m; j++) {
    double v = a[(size_t)j * stride];
    buf[j] = v == best ? 0.0 : c * (v - best); /* <= 0, never NaN for finite c */
  }
  exp_nonpositive(m, buf);
  double sum = row_sum(m, buf); /* in [1, m] */
  /* c = +inf: the maximum itself (every other term is e^-inf = 0; log(sum) / c would be 0 as
   * well, said here so that no reader has to check for inf / inf). c must be > 0: at c = 0,
   * or subnormal, log(sum) / c overflows and the next pass meets -inf + inf (callers keep c
   * above a floor: as_attention_sinkhorn_fixed). */
  return c < INFINITY ? best + log(sum) / c : best;
}

/* Largest |row sum - 1| and |column sum - 1| of the n x n matrix P; col: the column sums. */
static double stochastic_dev(int n, const double *P, double *col) {
  double dev = 0.0;
  int nan = 0; /* the comparisons below skip a NaN sum: it is counted apart */
  for (int j = 0; j < n; j++) col[j] = 0.0;
  for (int i = 0; i < n; i++) {
    const double *p = P + (size_t)i * n;
    double r = row_sum(n, p);
    nan |= isnan(r);
    dev = fabs(r - 1.0) > dev ? fabs(r - 1.0) : dev;
    for (int j = 0; j < n; j++) col[j] += p[j];
  }
  for (int j = 0; j < n; j++) {
    nan |= isnan(col[j]);
    dev = fabs(col[j] - 1.0) > dev ? fabs(col[j] - 1.0) : dev;
  }
  if (nan || isnan(dev)) dev = INFINITY; /* a NaN never counts as converged */
  return dev;
}

/* Row step: P = row softmax of c (S_ij + g_j), c = exp(logc); S2: scratch. */
static void sk_rows(int n, const double *S, const double *g, double logc, double *S2, double *P,
                    int *hot) {
  for (int i = 0; i < n; i++) {
    const double *s = S + (size_t)i * n;
    double *s2 = S2 + (size_t)i * n;
    for (int j = 0; j < n; j++) s2[j] = s[j] + g[j];
  }
  (void)as_attention_softmax_hot(n, n, S2, logc, P, hot);
}

/* Column step: f from g (rows), then g from f (columns), at temperature c (finite). */
static void sk_cols(int n, const double *S, double c, double *g, double *f, double *S2,
                    double *buf) {
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
}

/* Eigenvalues lam and eigenvectors (columns of U) of the symmetric n x n matrix A (row-major,
 * destroyed) by cyclic Jacobi rotations (Golub and Van Loan, 8.5): accurate small eigenvalues
 * for the Laplacian-like matrices here, and the same bits on every machine. */
static void sk_jacobi(int n, double *A, double *U, double *lam) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) U[(size_t)i * n + j] = i == j ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 50; sweep++) {
    int rotated = 0;
    for (int p = 0; p < n - 1; p++)
      for (int q = p + 1; q < n; q++) {
        const double apq = A[(size_t)p * n + q], app = A[(size_t)p * n + p],
                     aqq = A[(size_t)q * n + q];
        if (apq == 0.0) continue;
        if (fabs(apq) <= 0x1p-60 * sqrt(fabs(app * aqq)) || !isfinite(apq)) {
          A[(size_t)p * n + q] = A[(size_t)q * n + p] = 0.0; /* negligible (or broken) */
          continue;
        }
        const double tau = (aqq - app) / (2.0 * apq);
        const double t = (tau >= 0.0 ? 1.0 : -1.0) / (fabs(tau) + hypot(1.0, tau));
        const double cs = 1.0 / sqrt(1.0 + t * t), sn = t * cs;
        for (int k = 0; k < n; k++) { /* A <- A J */
          double *r = A + (size_t)k * n;
          const double x = r[p], y = r[q];
          r[p] = cs * x - sn * y;
          r[q] = sn * x + cs * y;
        }
        double *rp = A + (size_t)p * n, *rq = A + (size_t)q * n;
        for (int k = 0; k < n; k++) { /* A <- J^T A */
          const double x = rp[k], y = rq[k];
          rp[k] = cs * x - sn * y;
          rq[k] = sn * x + cs * y;
        }
        rp[q] = rq[p] = 0.0;
        for (int k = 0; k < n; k++) { /* U <- U J */
          double *r = U + (size_t)k * n;
          const double x = r[p], y = r[q];
          r[p] = cs * x - sn * y;
          r[q] = sn * x + cs * y;
        }
        rotated = 1;
      }
    if (!rotated) break;
  }
  for (int k = 0; k < n; k++) lam[k] = A[(size_t)k * n + k];
}

/* The Newton step a (n, units of 1/c, mean 0, at most SK_CLIP) for the column sums col of the
 * row-stochastic P. L, U: n x n scratch; lam, b: n. */
static void sk_newton(int n, const double *P, const double *col, double *L, double *U, double *lam,
                      double *b, double *a) {
  for (int j = 0; j < n; j++)
    for (int k = j; k < n; k++) {
      double s = 0.0;
      for (int i = 0; i < n; i++) s += P[(size_t)i * n + j] * P[(size_t)i * n + k];
      L[(size_t)j * n + k] = L[(size_t)k * n + j] = (j == k ? col[j] : 0.0) - s;
    }
  sk_jacobi(n, L, U, lam);
  double top = 1.0;
  for (int k = 0; k < n; k++) top = lam[k] > top ? lam[k] : top;
  const double cut = 1e-13 * top;
  for (int k = 0; k < n; k++) {
    double s = 0.0;
    for (int j = 0; j < n; j++) s -= U[(size_t)j * n + k] * (col[j] - 1.0);
    b[k] = lam[k] > cut ? s / lam[k] : 0.0;
  }
  double mean = 0.0, big = 0.0;
  for (int j = 0; j < n; j++) {
    double s = 0.0;
    for (int k = 0; k < n; k++) s += U[(size_t)j * n + k] * b[k];
    a[j] = s;
    mean += s;
  }
  mean /= n;
  for (int j = 0; j < n; j++) {
    a[j] -= mean;
    big = fabs(a[j]) > big ? fabs(a[j]) : big;
  }
  if (big > SK_CLIP)
    for (int j = 0; j < n; j++) a[j] *= SK_CLIP / big;
  if (!(big < INFINITY))
    for (int j = 0; j < n; j++) a[j] = 0.0;
}

/* Q_ij = P_ij e^{a_j} / (row sum): a scaling of the columns of P, then of its rows. */
static void sk_scale(int n, const double *P, const double *a, double *ea, double *Q) {
  double top = a[0];
  for (int j = 1; j < n; j++) top = a[j] > top ? a[j] : top;
  for (int j = 0; j < n; j++) ea[j] = a[j] - top; /* <= 0: the common factor cancels */
  exp_nonpositive(n, ea);
  for (int i = 0; i < n; i++) {
    const double *p = P + (size_t)i * n;
    double *q = Q + (size_t)i * n;
    for (int j = 0; j < n; j++) q[j] = p[j] * ea[j];
    const double sum = row_sum(n, q);
    const double inv = sum > 0.0 ? 1.0 / sum : 0.0;
    for (int j = 0; j < n; j++) q[j] *= inv;
  }
}

/* The scratch of one call (as_attention_sinkhorn_doubles): g stays where the next call finds
 * it (the warm start). */
typedef struct sk_ws {
  double *S2, *L, *U, *f, *g, *col, *lam, *b, *a, *ea, *buf;
} sk_ws;

/* Iterations at one temperature (logc, c finite) from the potentials w->g, until the deviation
 * is at most `until` or *it reaches cap; P (and *dev) hold the last accepted row step. `fresh`:
 * P does not yet hold the row step of w->g. */
static double sk_level(int n, const double *S, double logc, double until, int cap, int fresh,
                       double *P, int *hot, sk_ws *w, int *it, double dev) {
  const double c = exp(logc);
  if (fresh) {
    sk_rows(n, S, w->g, logc, w->S2, P, hot);
    ++*it;
    dev = stochastic_dev(n, P, w->col);
  }
  while (dev > until && *it < cap) {
    int taken = 0;
    if (n <= AS_ATTENTION_SINKHORN_NEWTON_N) {
      sk_newton(n, P, w->col, w->L, w->U, w->lam, w->b, w->a);
      for (double step = 1.0; step >= 1.0 / 16.0 && *it < cap; step /= 4.0) {
        for (int j = 0; j < n; j++) w->f[j] = w->g[j] + step * w->a[j] / c;
        sk_rows(n, S, w->f, logc, w->S2, w->U, hot); /* the trial into U (free now) */
        ++*it;
        double dn = stochastic_dev(n, w->U, w->lam);
        if (dn < dev) {
          memcpy(w->g, w->f, (size_t)n * sizeof *w->g);
          memcpy(P, w->U, (size_t)n * n * sizeof *P);
          memcpy(w->col, w->lam, (size_t)n * sizeof *w->col);
          dev = dn;
          taken = 1;
          break;
        }
      }
    }
    if (!taken && *it < cap) {
      sk_cols(n, S, c, w->g, w->f, w->S2, w->buf);
      sk_rows(n, S, w->g, logc, w->S2, P, hot);
      ++*it;
      dev = stochastic_dev(n, P, w->col);
    }
  }
  return dev;
}

/* The polish on P itself (step 4 above) at temperature c; w->g follows (for the warm start). */
static double sk_polish(int n, double c, double tol, int cap, double *P, sk_ws *w, int *it,
                        double dev) {
  while (dev > tol && *it < cap) {
    int taken = 0;
    if (n <= AS_ATTENTION_SINKHORN_NEWTON_N) {
      sk_newton(n, P, w->col, w->L, w->U, w->lam, w->b, w->a);
      for (double step = 1.0; step >= 1.0 / 16.0 && *it < cap; step /= 4.0) {
        for (int j = 0; j < n; j++) w->f[j] = step * w->a[j];
        sk_scale(n, P, w->f, w->ea, w->U);
        ++*it;
        double dn = stochastic_dev(n, w->U, w->lam);
        if (dn < dev) {
          memcpy(P, w->U, (size_t)n * n * sizeof *P);
          memcpy(w->col, w->lam, (size_t)n * sizeof *w->col);
          for (int j = 0; j < n; j++) w->g[j] += w->f[j] / c;
          dev = dn;
          taken = 1;
          break;
        }
      }
    }
    if (!taken && *it < cap) { /* a plain column-then-row step on P */
      for (int j = 0; j < n; j++) w->f[j] = w->col[j] > 0.0 ? -log(w->col[j]) : 0.0;
      sk_scale(n, P, w->f, w->ea, w->U);
      memcpy(P, w->U, (size_t)n * n * sizeof *P);
      for (int j = 0; j < n; j++) w->g[j] += w->f[j] / c;
      ++*it;
      dev = stochastic_dev(n, P, w->col);
    }
  }
  return dev;
}

/* One attempt at the target temperature logc (finite) from w->g, or a cold one with epsilon
 * scaling; the deviation reached. */
static double sk_attempt(int n, const double *S, double logc, double tol, int cap, int cold,
                         double *P, int *hot, sk_ws *w, int *it, int ready, double dev) {
  int K = 0;
  if (cold) {
    double lo = S[0], hi = S[0];
    for (size_t i = 1; i < (size_t)n * n; i++) {
      lo = S[i] < lo ? S[i] : lo;
      hi = S[i] > hi ? S[i] : hi;
    }
    const double r = hi - lo;
    while (K < 60 && exp(logc - K * log(SK_LEVEL_RATIO)) * r > SK_LEVEL_START) K++;
    for (int j = 0; j < n; j++) w->g[j] = 0.0;
  }
  ready = ready && cold && K == 0; /* P is already the row step of g = 0 at logc */
  for (int k = K; k >= 1 && *it < cap; k--)
    dev = sk_level(n, S, logc - k * log(SK_LEVEL_RATIO), SK_LEVEL_TOL, cap, 1, P, hot, w, it, dev);
  const double until = tol > SK_POLISH ? tol : SK_POLISH;
  dev = sk_level(n, S, logc, until, cap, !ready, P, hot, w, it, dev);
  return sk_polish(n, exp(logc), tol, cap, P, w, it, dev);
}

int as_attention_sinkhorn_warm(int n, const double *S, double logc, int iters, double tol,
                               double *P, int *hot, double *work, int *warm, double *dev_out,
                               int *iters_out) {
  double *base = work + 3 * (size_t)n * (size_t)n;
  sk_ws w = {work,
             work + (size_t)n * n,
             work + 2 * (size_t)n * n,
             base,
             base + n,
             base + 2 * n,
             base + 3 * n,
             base + 4 * n,
             base + 5 * n,
             base + 6 * n,
             base + 7 * n};
  int it = 0;
  double dev = INFINITY;
  const int have_warm = warm && *warm && iters > 1;
  if (warm) *warm = 0;
  /* c = +inf (beyond the range of a double): the iterations run at SK_C_INF, where every
   * weight below the maximum by more than 708 / 2^60 (6e-16 of the scores' scale) is 0. */
  const int inf = exp(logc) == INFINITY;
  const double logt = inf ? 60.0 * SK_LN2 : logc;
  if (have_warm) {
    const int cap = iters < SK_WARM_BUDGET ? iters : SK_WARM_BUDGET;
    dev = sk_attempt(n, S, logt, tol, cap, 0, P, hot, &w, &it, 0, INFINITY);
  }
  if (!(dev <= tol) && it < iters) {
    /* Cold: iteration 1 is the row softmax at the true temperature (g = 0). */
    for (int j = 0; j < n; j++) w.g[j] = 0.0;
    (void)as_attention_softmax_hot(n, n, S, logc, P, hot);
    it++;
    dev = stochastic_dev(n, P, w.col);
    if (!(dev <= tol) && it < iters)
      dev = sk_attempt(n, S, logt, tol, iters, 1, P, hot, &w, &it, !inf, dev);
  }
  /* The gauge: mean 0 (the potentials are defined up to g + a, f - a). */
  double mean = 0.0;
  for (int j = 0; j < n; j++) mean += w.g[j];
  mean /= n;
  int finite = isfinite(mean);
  for (int j = 0; j < n; j++) w.g[j] -= mean;
  if (warm) *warm = finite;
  /* Rows with a single nonzero entry (exactly 1 after the last row normalisation). */
  int onehot = 0;
  for (int i = 0; i < n; i++) {
    const double *p = P + (size_t)i * n;
    int nz = 0, at = -1;
    for (int j = 0; j < n; j++)
      if (p[j] != 0.0) nz++, at = j;
    hot[i] = nz == 1 && p[at] == 1.0 ? at : -1;
    onehot += hot[i] >= 0;
  }
  *dev_out = dev;
  if (iters_out) *iters_out = it;
  return onehot;
}

int as_attention_sinkhorn(int n, const double *S, double logc, int iters, double tol, double *P,
                          int *hot, double *work, double *dev_out, int *iters_out) {
  return as_attention_sinkhorn_warm(n, S, logc, iters, tol, P, hot, work, NULL, dev_out, iters_out);
}

/* ---------------------------------------------------------------- Sinkhorn, fixed iterations
 * Sinkformers' map (attention.h, as_attention_sinkhorn_fixed): the row softmax, then K - 1
 * times sk_cols (f from g, g from f: the columns of the current P normalised) and sk_rows (the
 * rows), from g = 0 at every call. The potentials are in score units, of order log(n) / c
 * where c is small: below SK_FIXED_C_MIN they would overflow (and -inf + inf make a NaN), so
 * iterations 2.. run at SK_FIXED_C_MIN there, where e^{c S} is the all-ones matrix to
 * rounding for any scores ranging less than 2^946, exactly as at the true temperature. */
#define SK_FIXED_LOGC_MIN (-1000.0 * SK_LN2) /* SK_FIXED_C_MIN = 2^-1000 */

int as_attention_sinkhorn_fixed(int n, const double *S, double logc, int iters, double *P, int *hot,
                                double *work, double *dev_out) {
  double *S2 = work, *base = work + 3 * (size_t)n * (size_t)n;
  double *f = base, *g = base + n, *col = base + 2 * n, *buf = base + 3 * n;
  /* Iteration 1: the row softmax, the call as_attention_softmax makes (the same bits). */
  int onehot = as_attention_softmax_hot(n, n, S, logc, P, hot);
  if (iters > 1) {
    const double lw = logc >= SK_FIXED_LOGC_MIN ? logc : SK_FIXED_LOGC_MIN; /* NaN: the floor */
    const double c = exp(lw); /* +inf for logc > ~709.78: lse_scaled is then the maximum */
    for (int j = 0; j < n; j++) g[j] = 0.0;
    for (int it = 2; it <= iters; it++) {
      sk_cols(n, S, c, g, f, S2, buf);  /* the columns of P_{it-1} ... */
      sk_rows(n, S, g, lw, S2, P, hot); /* ... then the rows: P_it */
    }
    onehot = 0;
    for (int i = 0; i < n; i++) onehot += hot[i] >= 0;
  }
  *dev_out = stochastic_dev(n, P, col);
  return onehot;
}
