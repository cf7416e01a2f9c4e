/* attention.c: the row softmax with the temperature factored out (see dynamics.h). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attnsweep/dynamics.h"
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
    while (s[arg] != best) arg++;
    double gap = best - second; /* > 0 unless tied */
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
