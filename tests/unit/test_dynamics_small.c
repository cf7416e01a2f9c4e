/* The small-shape attention kernel (d <= 8, n <= 64) against the general path.
 *
 * Both compute the same right-hand side; the kernel reorders nothing where the general path
 * uses plain loops (n^2 d <= 4096 and more than 8 tokens, d <= 3: the scores are summed in
 * k order, row sums and P Y with four partial sums over j in both), so there the two must agree
 * to the last bit, for every method, variable and e^{tV} path. Elsewhere (BLAS products, or
 * as_mm's four-way dot products of the scores for n <= 8) they differ by rounding: with the
 * transformed tokens normalised to |G| < 1, a score differs by at most ~2 d^2 eps max|M|, an
 * exponent by c times that, c = e^{2 mu t} 2^{2e} <= 4 e^{2 t} max|z|^2 for diagonal V (mu <= 1)
 * and tokens in [-1, 1]; at t <= 1 and |M| <= 5: |dP| <= ~30 * 2 * 64 * 5 eps < 1e-11 (checked
 * with 1e-10).
 * Also: rows of P are stochastic, saturated rows are exactly one-hot in both, the kernel is
 * deterministic, survives non-finite input, and the test hook rejects bad requests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/rng.h"
#include "linalg_dyn.h"

enum { NMAX = 64, DMAX = 8 };

typedef struct pair {
  as_dyn *w[2]; /* [0] general, [1] small kernel */
} pair;

static int pair_make(pair *p, int n, int d, const double *V, const double *M) {
  p->w[0] = p->w[1] = NULL;
  for (int k = 0; k < 2; k++) {
    if (as_dyn_create(n, d, &p->w[k]) != AS_OK) return 0;
    if (as_dyn_set_kernel(p->w[k], (as_dyn_kernel)k) != AS_OK) return 0;
    if (as_dyn_set_triple(p->w[k], V, M, NULL) != AS_OK) return 0;
  }
  return 1;
}

static void pair_free(pair *p) {
  as_dyn_destroy(&p->w[0]);
  as_dyn_destroy(&p->w[1]);
}

static int same_bits(const double *a, const double *b, size_t len) {
  return memcmp(a, b, len * sizeof(double)) == 0;
}

static double max_abs_diff(const double *a, const double *b, size_t len) {
  double m = 0.0;
  for (size_t i = 0; i < len; i++) {
    double e = fabs(a[i] - b[i]);
    if (!(e <= m)) m = e;
  }
  return m;
}

static int any_nonfinite(const double *a, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (!isfinite(a[i])) return 1;
  return 0;
}

/* V: 0 identity, 1 diagonal in [-1, 1] (largest 1), 2 Gaussian (eigen path), 3 a Jordan
 * block (defective: Pade path). M: 0 identity, 1 Gaussian. */
static void make_triple(as_rng *r, int d, int vkind, int mkind, double *V, double *M) {
  memset(V, 0, (size_t)d * d * sizeof(double));
  memset(M, 0, (size_t)d * d * sizeof(double));
  for (int i = 0; i < d; i++) V[i * d + i] = M[i * d + i] = 1.0;
  if (vkind == 1)
    for (int i = 1; i < d; i++) V[i * d + i] = 2.0 * as_rng_uniform(r) - 1.0;
  if (vkind == 2) as_rng_fill_normal(r, V, (long)d * d, 0.5);
  if (vkind == 3)
    for (int i = 0; i + 1 < d; i++) V[i * d + i + 1] = 1.0;
  if (mkind == 1) {
    as_rng_fill_normal(r, M, (long)d * d, 1.0);
    for (int i = 0; i < d * d; i++) M[i] = fmax(-5.0, fmin(5.0, M[i]));
  }
}

/* Shapes where both paths use the same arithmetic: bitwise equality of the right-hand side,
 * P, and whole runs of every method in both variables. */
static void check_bitwise(void) {
  static const int shapes[][2] = {{9, 1}, {20, 2}, {20, 3}, {33, 2}, {45, 2}, {36, 3}, {12, 3}};
  static const as_method methods[] = {AS_METHOD_RK4, AS_METHOD_DOPRI5, AS_METHOD_EULER,
                                      AS_METHOD_LAYERS};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int n = shapes[s][0], d = shapes[s][1];
    for (int vk = 0; vk < 4; vk++) {
      as_rng r;
      as_rng_init(&r, 11, (uint64_t)(100 * s + vk), AS_PURPOSE_TEST);
      double V[DMAX * DMAX], M[DMAX * DMAX], X0[NMAX * DMAX], F[2][NMAX * DMAX];
      make_triple(&r, d, vk, vk % 2, V, M);
      as_rng_fill_uniform(&r, X0, (long)n * d, -3.0, 3.0);
      pair p;
      AS_EXPECT(pair_make(&p, n, d, V, M), "set-up n = %d, d = %d", n, d);
      if (!p.w[0] || !p.w[1]) {
        pair_free(&p);
        continue;
      }
      for (int vars = 0; vars < 2; vars++)
        for (int ti = 0; ti < 3; ti++) {
          const double t = 0.7 * ti;
          const as_vars v = vars ? AS_VARS_X : AS_VARS_Z;
          as_status s0 = as_dyn_rhs(p.w[0], v, t, X0, F[0]);
          as_status s1 = as_dyn_rhs(p.w[1], v, t, X0, F[1]);
          AS_EXPECT(s0 == AS_OK && s1 == AS_OK, "rhs statuses %d %d", (int)s0, (int)s1);
          AS_EXPECT(
              same_bits(F[0], F[1], (size_t)n * d) &&
                  same_bits(as_dyn_attention(p.w[0]), as_dyn_attention(p.w[1]), (size_t)n * n),
              "n = %d, d = %d, V kind %d, vars %d, t = %g: right-hand sides differ by %.3g", n, d,
              vk, vars, t, max_abs_diff(F[0], F[1], (size_t)n * d));
        }
      for (size_t mi = 0; mi < sizeof methods / sizeof methods[0]; mi++)
        for (int vars = 0; vars < 2; vars++) {
          as_integ_spec in;
          memset(&in, 0, sizeof in);
          in.method = methods[mi];
          in.vars = vars ? AS_VARS_X : AS_VARS_Z;
          in.T = 2.0;
          in.dt = 0.1;
          in.rtol = 1e-7;
          in.atol = 1e-9;
          in.max_steps = 100000;
          as_dyn_stats st[2];
          as_status s0 = as_dyn_run(p.w[0], &in, X0, NULL, NULL, 0, NULL, NULL, &st[0]);
          as_status s1 = as_dyn_run(p.w[1], &in, X0, NULL, NULL, 0, NULL, NULL, &st[1]);
          AS_EXPECT(s0 == s1, "run statuses %d %d", (int)s0, (int)s1);
          if (s0 != AS_OK || s1 != AS_OK) continue; /* e.g. z-layers with singular I + dt V */
          AS_EXPECT(
              st[0].steps == st[1].steps && st[0].outcome == st[1].outcome &&
                  same_bits(as_dyn_state(p.w[0]), as_dyn_state(p.w[1]), (size_t)n * d) &&
                  same_bits(as_dyn_attention(p.w[0]), as_dyn_attention(p.w[1]), (size_t)n * n),
              "n = %d, d = %d, V kind %d, method %d, vars %d: runs differ (steps %lld/%lld, "
              "state by %.3g)",
              n, d, vk, (int)methods[mi], vars, (long long)st[0].steps, (long long)st[1].steps,
              max_abs_diff(as_dyn_state(p.w[0]), as_dyn_state(p.w[1]), (size_t)n * d));
        }
      pair_free(&p);
    }
  }
}

/* Shapes where the orders differ: agreement to rounding (bound in the header), stochastic
 * rows. Diagonal V keeps the temperature bound of the header. */
static void check_rounding(void) {
  static const int shapes[][2] = {{1, 1},  {1, 8},  {3, 5},  {5, 8},  {8, 4},
                                  {46, 2}, {64, 2}, {64, 8}, {50, 5}, {7, 7}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int n = shapes[s][0], d = shapes[s][1];
    for (int mk = 0; mk < 2; mk++) {
      as_rng r;
      as_rng_init(&r, 12, (uint64_t)(10 * s + mk), AS_PURPOSE_TEST);
      double V[DMAX * DMAX], M[DMAX * DMAX], Z[NMAX * DMAX], F[2][NMAX * DMAX];
      make_triple(&r, d, 1, mk, V, M);
      as_rng_fill_uniform(&r, Z, (long)n * d, -1.0, 1.0);
      pair p;
      AS_EXPECT(pair_make(&p, n, d, V, M), "set-up n = %d, d = %d", n, d);
      if (!p.w[0] || !p.w[1]) {
        pair_free(&p);
        continue;
      }
      for (int ti = 0; ti < 3; ti++) {
        const double t = 0.5 * ti;
        AS_EXPECT(as_dyn_rhs(p.w[0], AS_VARS_Z, t, Z, F[0]) == AS_OK &&
                      as_dyn_rhs(p.w[1], AS_VARS_Z, t, Z, F[1]) == AS_OK,
                  "rhs n = %d, d = %d", n, d);
        const double *P0 = as_dyn_attention(p.w[0]), *P1 = as_dyn_attention(p.w[1]);
        double dp = max_abs_diff(P0, P1, (size_t)n * n);
        AS_EXPECT(dp <= 1e-10, "n = %d, d = %d, M kind %d, t = %g: P differs by %.3g", n, d, mk, t,
                  dp);
        /* F = (P Z - Z) V^T with |V| <= 1, |Z| <= 1: |dF| <= d n |dP| + rounding. */
        double df = max_abs_diff(F[0], F[1], (size_t)n * d);
        AS_EXPECT(df <= 1e-10 * n * d + 1e-14, "n = %d, d = %d, t = %g: F differs by %.3g", n, d, t,
                  df);
        int bad = 0;
        for (int i = 0; i < n; i++) {
          double sum = 0.0;
          for (int j = 0; j < n; j++) {
            double x = P1[(size_t)i * n + j];
            bad += !(x >= 0.0 && x <= 1.0);
            sum += x;
          }
          bad += !(fabs(sum - 1.0) <= 4.0 * n * 2.3e-16);
        }
        AS_EXPECT(bad == 0, "n = %d, d = %d: %d entries or row sums of P out of range", n, d, bad);
      }
      /* Short runs: per stage |dF| <= 1e-10 n d, over 40 stages of a contracting flow. */
      as_integ_spec in;
      memset(&in, 0, sizeof in);
      in.method = AS_METHOD_RK4;
      in.vars = AS_VARS_Z;
      in.T = 1.0;
      in.dt = 0.1;
      in.max_steps = 1000;
      as_dyn_stats st;
      AS_EXPECT(as_dyn_run(p.w[0], &in, Z, NULL, NULL, 0, NULL, NULL, &st) == AS_OK &&
                    as_dyn_run(p.w[1], &in, Z, NULL, NULL, 0, NULL, NULL, &st) == AS_OK,
                "runs n = %d, d = %d", n, d);
      double dz = max_abs_diff(as_dyn_state(p.w[0]), as_dyn_state(p.w[1]), (size_t)n * d);
      AS_EXPECT(dz <= 1e-8 * n * d, "n = %d, d = %d: final states differ by %.3g", n, d, dz);
      pair_free(&p);
    }
  }
}

/* Long runs of the paper's setting: the hardmax regime (rows saturate, and the temperature
 * eventually overflows to +inf, where the kernel hands over to the general softmax). P rows
 * are exactly one-hot or stochastic, identical in both paths (n = 20, d = 2: same bits). */
static void check_saturated(void) {
  const int n = 20, d = 2;
  double V[4] = {1, 0, 0, 1}, X0[40];
  as_rng r;
  as_rng_init(&r, 13, 0, AS_PURPOSE_TEST);
  as_rng_fill_uniform(&r, X0, (long)n * d, -5.0, 5.0);
  pair p;
  AS_EXPECT(pair_make(&p, n, d, V, V), "set-up");
  if (p.w[0] && p.w[1]) {
    as_integ_spec in;
    memset(&in, 0, sizeof in);
    in.method = AS_METHOD_RK4;
    in.vars = AS_VARS_Z;
    in.T = 400.0; /* e^{2T} overflows: hardmax */
    in.dt = 0.5;
    in.max_steps = 100000;
    as_dyn_stats st[2];
    AS_EXPECT(as_dyn_run(p.w[0], &in, X0, NULL, NULL, 0, NULL, NULL, &st[0]) == AS_OK &&
                  as_dyn_run(p.w[1], &in, X0, NULL, NULL, 0, NULL, NULL, &st[1]) == AS_OK,
              "long runs");
    AS_EXPECT(same_bits(as_dyn_state(p.w[0]), as_dyn_state(p.w[1]), (size_t)n * d),
              "long runs differ by %.3g",
              max_abs_diff(as_dyn_state(p.w[0]), as_dyn_state(p.w[1]), (size_t)n * d));
    /* At T = 20 most rows are saturated: exactly one-hot, the same rows in both. */
    in.T = 20.0;
    in.dt = 0.1;
    AS_EXPECT(as_dyn_run(p.w[0], &in, X0, NULL, NULL, 0, NULL, NULL, &st[0]) == AS_OK &&
                  as_dyn_run(p.w[1], &in, X0, NULL, NULL, 0, NULL, NULL, &st[1]) == AS_OK,
              "runs to T = 20");
    const double *P = as_dyn_attention(p.w[1]);
    int onehot = 0;
    for (int i = 0; i < n; i++) {
      int ones = 0, zeros = 0;
      for (int j = 0; j < n; j++) ones += P[i * n + j] == 1.0, zeros += P[i * n + j] == 0.0;
      onehot += ones == 1 && zeros == n - 1;
    }
    AS_EXPECT(onehot >= n / 2, "only %d of %d rows exactly one-hot at T = 20", onehot, n);
    AS_EXPECT(same_bits(P, as_dyn_attention(p.w[0]), (size_t)n * n), "P at T = 20 differs");
  }
  pair_free(&p);
}

static void check_misc(void) {
  const int n = 20, d = 2;
  double V[4] = {1, 0, 0, 1}, Z[40], F[40], F2[40];
  as_rng r;
  as_rng_init(&r, 14, 0, AS_PURPOSE_TEST);
  as_rng_fill_uniform(&r, Z, (long)n * d, -5.0, 5.0);
  as_dyn *w = NULL;
  AS_EXPECT(as_dyn_create(n, d, &w) == AS_OK, "create");
  if (!w) return;
  AS_EXPECT(as_dyn_set_kernel(w, (as_dyn_kernel)3) == AS_ERR_ARG, "kernel 3 rejected");
  AS_EXPECT(as_dyn_set_kernel(w, AS_DYN_KERNEL_AUTO) == AS_OK &&
                as_dyn_set_kernel(w, AS_DYN_KERNEL_SMALL) == AS_OK,
            "kernels");
  AS_EXPECT(as_dyn_set_triple(w, V, V, NULL) == AS_OK, "triple");
  /* Deterministic: the same call twice gives the same bits. */
  AS_EXPECT(as_dyn_rhs(w, AS_VARS_Z, 1.3, Z, F) == AS_OK &&
                as_dyn_rhs(w, AS_VARS_Z, 1.3, Z, F2) == AS_OK && same_bits(F, F2, 40),
            "repeatable");
  /* Non-finite tokens: no crash, non-finite output (the run reports AS_OUT_NONFINITE). */
  Z[7] = INFINITY;
  AS_EXPECT(as_dyn_rhs(w, AS_VARS_Z, 0.5, Z, F) == AS_OK, "rhs with inf");
  AS_EXPECT(any_nonfinite(F, 40), "non-finite input gives non-finite output");
  Z[7] = NAN;
  AS_EXPECT(as_dyn_rhs(w, AS_VARS_X, 0.5, Z, F) == AS_OK, "rhs with NaN");
  as_dyn_destroy(&w);
  AS_EXPECT(as_dyn_create(3, 9, &w) == AS_OK, "create d = 9");
  if (w)
    AS_EXPECT(as_dyn_set_kernel(w, AS_DYN_KERNEL_SMALL) == AS_ERR_ARG, "no small kernel for d = 9");
  as_dyn_destroy(&w);
}

int main(void) {
  check_bitwise();
  check_rounding();
  check_saturated();
  check_misc();
  return as_test_finish("test_dynamics_small");
}
