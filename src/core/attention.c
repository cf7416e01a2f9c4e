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
#include "attention_kernels.h"
#undef AK_W
#undef AK
#undef AK_FMA
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define AK_W 4
#define AK(name) name##_avx2
#define AK_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#include "attention_kernels.h"
#undef AK_W
#undef AK
#undef AK_FMA
#pragma GCC pop_options
#endif

/* The baseline: lane by lane through fma(). */
typedef double as_v2 __attribute__((vector_size(16)));
static inline __attribute__((always_inline)) as_v2 as_fma2(as_v2 a, as_v2 b, as_v2 c) {
  as_v2 r;
  for (int l = 0; l < 2; l++) r[l] = fma(a[l], b[l], c[l]);
  return r;
}
#define AK_W 2
#define AK(name) name##_plain
#define AK_FMA(a, b, c) as_fma2(a, b, c)
#include "attention_kernels.h"
#undef AK_W
#undef AK
#undef AK_FMA

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

static int as_small_isa(void) {
  if (isa_chosen >= 0) return isa_chosen;
  int v = cpu_isa();
  const char *cap = getenv("ATTNSWEEP_ISA");
  if (cap && strcmp(cap, "avx2") == 0 && v > 1) v = 1;
  if (cap && strcmp(cap, "baseline") == 0) v = 0;
  isa_chosen = v;
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
