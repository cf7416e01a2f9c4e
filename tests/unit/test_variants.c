/* Attention normalisations and layer normalisation (docs/variants.md): hardmax, the causal
 * mask, tokens on the sphere, Sinkhorn attention, the variants' theorems and the plateau
 * bookkeeping. Tolerances come from exact solutions, invariants and the method's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/attention.h"
#include "attnsweep/classify.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/expm.h"
#include "attnsweep/meta.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/rng.h"
#include "dyn_test.h"

/* Deterministic numbers in [-1, 1) (a linear congruential generator: test data only). */
static double lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

static as_attn_spec model(as_attn a, as_mask m, as_norm nm, as_nform f) {
  as_attn_spec s = {a, 1000, 1e-12, m, nm, f};
  return s;
}

/* ---- Sinkhorn: one iteration is the softmax; converged P doubly stochastic; any c. */
static void test_sinkhorn(void) {
  enum { N = 12 };
  double S[N * N], P[N * N], Q[N * N], work[3 * N * N + 8 * N];
  int hot[N];
  uint64_t seed = 7;
  for (int i = 0; i < N * N; i++) S[i] = 0.5 * lcg(&seed);
  double dev = -1.0;
  int it = 0;
  as_attention_sinkhorn(N, S, 0.0, 1, 0.0, P, hot, work, &dev, &it);
  as_attention_softmax(N, N, S, 0.0, Q);
  AS_EXPECT(it == 1 && memcmp(P, Q, sizeof P) == 0, "one iteration is the row softmax, bitwise");
  as_attention_sinkhorn(N, S, 0.0, 10000, 1e-12, P, hot, work, &dev, &it);
  double worst = 0.0;
  for (int i = 0; i < N; i++) {
    double r = 0.0, c = 0.0;
    for (int j = 0; j < N; j++) r += P[i * N + j], c += P[j * N + i];
    worst = fmax(worst, fmax(fabs(r - 1.0), fabs(c - 1.0)));
  }
  AS_EXPECT(worst <= 1e-10 && dev <= 1e-12 && it > 1 && it < 10000,
            "Sinkhorn rows and columns sum to 1: worst %g, reported %g after %d iterations", worst,
            dev, it);
  /* A doubly stochastic scaling of e^S is unique: P_ij / (e^{S_ij}) = a_i b_j, so the cross
   * ratios of P equal those of e^S. */
  double cr = (P[0 * N + 1] * P[2 * N + 3]) / (P[0 * N + 3] * P[2 * N + 1]);
  double ce = exp(S[0 * N + 1] + S[2 * N + 3] - S[0 * N + 3] - S[2 * N + 1]);
  AS_EXPECT_CLOSE(cr, ce, 1e-12, 0.0);
  /* Any temperature, +inf included: finite, in [0, 1], rows sum to 1 (no overflow). */
  const double logcs[] = {50.0, 700.0, 800.0, INFINITY};
  for (int k = 0; k < 4; k++) {
    as_attention_sinkhorn(N, S, logcs[k], 20, 1e-12, P, hot, work, &dev, &it);
    int ok = isfinite(dev);
    for (int i = 0; i < N; i++) {
      double r = 0.0;
      for (int j = 0; j < N; j++) {
        ok &= P[i * N + j] >= 0.0 && P[i * N + j] <= 1.0;
        r += P[i * N + j];
      }
      ok &= fabs(r - 1.0) <= 1e-14;
    }
    AS_EXPECT(ok, "Sinkhorn at logc = %g: finite row-stochastic P (dev %g)", logcs[k], dev);
  }
  /* The saturated regime (c times the spread of S from 1e2 to beyond a double, +inf): epsilon
   * scaling and the Newton steps reach the tolerance within 200 iterations (plain alternate
   * normalisations stall there: docs/variants.md). */
  const double hard[] = {5.0, 20.0, 50.0, 800.0, INFINITY};
  for (int k = 0; k < 5; k++) {
    as_attention_sinkhorn(N, S, hard[k], 200, 1e-12, P, hot, work, &dev, &it);
    double w2 = 0.0;
    for (int i = 0; i < N; i++) {
      double r = 0.0, c = 0.0;
      for (int j = 0; j < N; j++) r += P[i * N + j], c += P[j * N + i];
      w2 = fmax(w2, fmax(fabs(r - 1.0), fabs(c - 1.0)));
    }
    AS_EXPECT(dev <= 1e-12 && w2 <= 1e-12 && it <= 200,
              "saturated Sinkhorn at logc = %g: deviation %g (reported %g) after %d iterations",
              hard[k], w2, dev, it);
  }
  /* A warm start from the potentials of a nearby matrix converges in fewer iterations. */
  {
    int warm = 0, it_cold = 0, it_warm = 0;
    as_attention_sinkhorn_warm(N, S, 20.0, 200, 1e-12, P, hot, work, &warm, &dev, &it_cold);
    for (int i = 0; i < N * N; i++) S[i] *= 1.0 + 1e-4 * lcg(&seed);
    as_attention_sinkhorn_warm(N, S, 20.0, 200, 1e-12, P, hot, work, &warm, &dev, &it_warm);
    AS_EXPECT(warm && dev <= 1e-12 && it_warm < it_cold,
              "warm start: %d iterations against %d cold (dev %g)", it_warm, it_cold, dev);
  }
  /* With a permutation of clear maxima and c = +inf, rows and columns are one-hot already. */
  for (int i = 0; i < N * N; i++) S[i] = 0.0;
  for (int i = 0; i < N; i++) S[i * N + (i * 5) % N] = 1.0;
  as_attention_sinkhorn(N, S, INFINITY, 5, 0.0, P, hot, work, &dev, &it);
  AS_EXPECT(dev == 0.0 && it == 1 && P[1 * N + 5] == 1.0, "hardmax permutation (dev %g)", dev);
}

/* ---- Hardmax: P one-hot on the row maximum, ties shared equally. */
static void test_hardmax(void) {
  enum { N = 6, D = 2 };
  as_dyn *w = NULL;
  AS_EXPECT(as_dyn_create(N, D, &w) == AS_OK, "create");
  if (!w) return;
  const double I[D * D] = {1, 0, 0, 1};
  /* Tokens 2 and 3 are equal: the rows whose best partner is that pair share it. */
  double X[N * D] = {1.0, 0.1, -0.3, 0.9, 2.0, 2.0, 2.0, 2.0, -1.5, -0.2, 0.4, -1.7}, F[N * D];
  AS_EXPECT(as_dyn_set_triple(w, I, I, NULL) == AS_OK, "triple");
  as_attn_spec sm = model(AS_ATTN_SOFTMAX, AS_MASK_NONE, AS_NORM_NONE, AS_NFORM_SA);
  AS_EXPECT(as_dyn_set_model(w, &sm, 1) == AS_OK, "hardmax model");
  AS_EXPECT(as_dyn_rhs(w, AS_VARS_X, 0.0, X, F) == AS_OK, "rhs");
  const double *P = as_dyn_attention(w);
  int ok = 1;
  for (int i = 0; i < N; i++) {
    double best = -INFINITY;
    int ties = 0;
    for (int j = 0; j < N; j++) {
      double s = X[i * D] * X[j * D] + X[i * D + 1] * X[j * D + 1];
      if (s > best) best = s, ties = 0;
      if (s == best) ties++;
    }
    for (int j = 0; j < N; j++) {
      double s = X[i * D] * X[j * D] + X[i * D + 1] * X[j * D + 1];
      ok &= P[i * N + j] == (s == best ? 1.0 / ties : 0.0);
    }
  }
  AS_EXPECT(ok, "hardmax rows: one-hot on the maximum, ties shared");
  AS_EXPECT(P[0 * N + 2] == 0.5 && P[0 * N + 3] == 0.5, "row 0 shares the tied pair (%g %g)", P[2],
            P[3]);
  /* Back to the base model: the softmax again (no row of this data saturates at c = 1). */
  AS_EXPECT(as_dyn_set_model(w, NULL, 0) == AS_OK, "base model");
  AS_EXPECT(as_dyn_rhs(w, AS_VARS_X, 0.0, X, F) == AS_OK, "rhs");
  AS_EXPECT(P[0 * N + 0] > 0.0 && P[0 * N + 0] < 1.0, "softmax again (%g)", P[0]);
  as_dyn_destroy(&w);
}

/* Token 1 error of a causal run at step dt (x variables), against e^{T V} x_1(0). */
static double causal_token1_error(as_dyn *w, as_method m, double T, double dt, const double *X0,
                                  const double *E, int d) {
  as_integ_spec in = dyn_test_spec(m, AS_VARS_X, T, dt);
  as_dyn_stats st;
  if (as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) != AS_OK) return NAN;
  const double *X = as_dyn_state(w);
  double err = 0.0;
  for (int a = 0; a < d; a++) {
    double ex = 0.0;
    for (int b = 0; b < d; b++) ex += E[a * d + b] * X0[b];
    err = fmax(err, fabs(X[a] - ex));
  }
  return err;
}

/* ---- Causal mask: P lower triangular; token 1 follows x_1' = V x_1 exactly. */
static void test_causal(void) {
  enum { N = 5, D = 2 };
  as_dyn *w = NULL;
  as_expm_plan *ex = NULL;
  AS_EXPECT(as_dyn_create(N, D, &w) == AS_OK && as_expm_create(D, &ex) == AS_OK, "create");
  if (!w || !ex) goto done;
  const double V[D * D] = {0.3, 1.0, -0.5, 0.2}, M[D * D] = {1.0, 0.4, -0.2, 0.8};
  double X0[N * D], F[N * D], E[D * D];
  uint64_t seed = 3;
  for (int i = 0; i < N * D; i++) X0[i] = 2.0 * lcg(&seed);
  AS_EXPECT(as_dyn_set_triple(w, V, M, NULL) == AS_OK, "triple");
  as_attn_spec cm = model(AS_ATTN_SOFTMAX, AS_MASK_CAUSAL, AS_NORM_NONE, AS_NFORM_SA);
  AS_EXPECT(as_dyn_set_model(w, &cm, 0) == AS_OK, "causal model");
  AS_EXPECT(as_dyn_rhs(w, AS_VARS_X, 0.0, X0, F) == AS_OK, "rhs");
  const double *P = as_dyn_attention(w);
  int lower = 1;
  for (int i = 0; i < N; i++) {
    double r = 0.0;
    for (int j = 0; j < N; j++) {
      if (j > i) lower &= P[i * N + j] == 0.0;
      r += P[i * N + j];
    }
    lower &= fabs(r - 1.0) <= 1e-15 && P[i * N + i] > 0.0;
  }
  AS_EXPECT(lower && P[0] == 1.0, "causal P: lower triangular, stochastic rows, P_11 = 1");
  AS_EXPECT(as_expm_set(ex, V, AS_EXPM_NONE, NULL) == AS_OK, "expm");
  const double T = 2.0;
  AS_EXPECT(as_expm_eval(ex, T, 0.0, E) == AS_OK, "e^{TV}");
  /* RK4 on the linear x_1' = V x_1: global error C dt^4, so halving dt divides it by ~16. */
  double e1 = causal_token1_error(w, AS_METHOD_RK4, T, 0.1, X0, E, D);
  double e2 = causal_token1_error(w, AS_METHOD_RK4, T, 0.05, X0, E, D);
  AS_EXPECT(e1 > 0.0 && e2 > 0.0 && e1 / e2 > 13.0 && e1 / e2 < 19.0 && e2 < 1e-6,
            "RK4 token 1 against e^{tV} x_1: errors %g, %g, ratio %g (order 4: 16)", e1, e2,
            e1 / e2);
  double eu1 = causal_token1_error(w, AS_METHOD_EULER, T, 0.01, X0, E, D);
  double eu2 = causal_token1_error(w, AS_METHOD_EULER, T, 0.005, X0, E, D);
  AS_EXPECT(eu1 / eu2 > 1.8 && eu1 / eu2 < 2.2, "Euler token 1: ratio %g (order 1: 2)", eu1 / eu2);
  /* In z variables z_1 stays exactly at its start: x_1(T) = e^{TV} z_1(0) (expm accuracy). */
  as_integ_spec in = dyn_test_spec(AS_METHOD_RK4, AS_VARS_Z, T, 0.1);
  as_dyn_stats st;
  double X[N * D];
  AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "z run");
  const double *Z = as_dyn_state(w);
  AS_EXPECT(Z[0] == X0[0] && Z[1] == X0[1], "z_1 constant (%g %g)", Z[0] - X0[0], Z[1] - X0[1]);
  AS_EXPECT(as_dyn_state_x(w, X) == AS_OK, "state x");
  for (int a = 0; a < D; a++)
    AS_EXPECT_CLOSE(X[a], E[a * D] * X0[0] + E[a * D + 1] * X0[1], 1e-12, 1e-12);
done:
  as_dyn_destroy(&w);
  as_expm_destroy(&ex);
}

/* ---- Sphere: |x_i| = 1 after every step; the sa field is tangent. */
typedef struct norm_log {
  int n, d, calls;
  double worst;
} norm_log;
static void check_norms(double t, const double *X, void *ctx) {
  (void)t;
  norm_log *l = ctx;
  l->calls++;
  for (int i = 0; i < l->n; i++) {
    double s = 0.0;
    for (int k = 0; k < l->d; k++) s += X[i * l->d + k] * X[i * l->d + k];
    l->worst = fmax(l->worst, fabs(sqrt(s) - 1.0));
  }
}

static void test_sphere(void) {
  enum { N = 10, D = 3 };
  as_dyn *w = NULL;
  AS_EXPECT(as_dyn_create(N, D, &w) == AS_OK, "create");
  if (!w) return;
  /* beta = 1 (M = I): one cluster by T = 30. (usa moves at speed up to e^beta: with beta = 4
   * RK4 at dt = 0.1 is unstable there, which is a property of the model, not a bug.) */
  const double I[D * D] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, *B = I;
  double X0[N * D], F[N * D];
  uint64_t seed = 11;
  for (int i = 0; i < N * D; i++) X0[i] = 3.0 * lcg(&seed);
  AS_EXPECT(as_dyn_set_triple(w, I, B, NULL) == AS_OK, "triple");
  const struct {
    as_nform f;
    as_method m;
  } runs[] = {{AS_NFORM_SA, AS_METHOD_RK4},
              {AS_NFORM_USA, AS_METHOD_RK4},
              {AS_NFORM_SA, AS_METHOD_DOPRI5},
              {AS_NFORM_SA, AS_METHOD_LAYERS},
              {AS_NFORM_USA, AS_METHOD_LAYERS}};
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    as_attn_spec sm = model(AS_ATTN_SOFTMAX, AS_MASK_NONE, AS_NORM_SPHERE, runs[r].f);
    AS_EXPECT(as_dyn_set_model(w, &sm, 0) == AS_OK, "sphere model");
    norm_log log = {N, D, 0, 0.0};
    AS_EXPECT(as_dyn_set_step_hook(w, check_norms, &log) == AS_OK, "hook");
    as_integ_spec in = dyn_test_spec(runs[r].m, AS_VARS_X, 30.0, 0.1);
    in.rtol = 1e-8;
    in.atol = 1e-10;
    as_dyn_stats st;
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "run");
    AS_EXPECT(st.outcome == AS_OUT_REACHED_T && log.calls >= (r == 2 ? 10 : 300) &&
                  log.worst <= 1e-12,
              "run %zu: |x_i| = 1 to %g over %d steps (outcome %d)", r, log.worst, log.calls,
              (int)st.outcome);
    check_norms(0.0, as_dyn_state(w), &log);
    AS_EXPECT(log.worst <= 1e-12, "final |x_i| = 1 to %g", log.worst);
    /* Q = K = V = I, d = 3: the tokens gather (one cluster: diameter small at T = 30). */
    const double *X = as_dyn_state(w);
    double diam = 0.0;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double s = 0.0;
        for (int k = 0; k < D; k++)
          s += (X[i * D + k] - X[j * D + k]) * (X[i * D + k] - X[j * D + k]);
        diam = fmax(diam, sqrt(s));
      }
    AS_EXPECT(diam < 1e-6, "run %zu: one cluster, diameter %g", r, diam);
  }
  AS_EXPECT(as_dyn_set_step_hook(w, NULL, NULL) == AS_OK, "unhook");
  /* The sa field at a point of the sphere is tangent: <x_i, x_i'> = 0. */
  as_attn_spec sm = model(AS_ATTN_SOFTMAX, AS_MASK_NONE, AS_NORM_SPHERE, AS_NFORM_SA);
  AS_EXPECT(as_dyn_set_model(w, &sm, 0) == AS_OK, "sa");
  const double *Xs = as_dyn_state(w);
  double Y[N * D];
  for (int i = 0; i < N * D; i++) Y[i] = X0[i];
  for (int i = 0; i < N; i++) {
    double s =
        sqrt(Y[i * D] * Y[i * D] + Y[i * D + 1] * Y[i * D + 1] + Y[i * D + 2] * Y[i * D + 2]);
    for (int k = 0; k < D; k++) Y[i * D + k] /= s;
  }
  (void)Xs;
  AS_EXPECT(as_dyn_rhs(w, AS_VARS_X, 0.0, Y, F) == AS_OK, "rhs");
  double tang = 0.0;
  for (int i = 0; i < N; i++)
    tang = fmax(tang, fabs(Y[i * D] * F[i * D] + Y[i * D + 1] * F[i * D + 1] +
                           Y[i * D + 2] * F[i * D + 2]));
  AS_EXPECT(tang <= 1e-15, "tangent field: max |<x_i, x_i'>| = %g", tang);
  /* vars z on the sphere is refused; a zero token is bad data. */
  as_integ_spec in = dyn_test_spec(AS_METHOD_RK4, AS_VARS_Z, 1.0, 0.1);
  as_dyn_stats st;
  AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_ERR_ARG, "vars z refused");
  as_error_clear();
  in.vars = AS_VARS_X;
  double Xz[N * D];
  memcpy(Xz, X0, sizeof Xz);
  Xz[3 * D] = Xz[3 * D + 1] = Xz[3 * D + 2] = 0.0;
  AS_EXPECT(as_dyn_run(w, &in, Xz, NULL, NULL, 0, NULL, NULL, &st) == AS_ERR_DATA, "zero token");
  as_error_clear();
  /* Settings that do not combine. */
  as_attn_spec bad = model(AS_ATTN_SINKHORN, AS_MASK_CAUSAL, AS_NORM_NONE, AS_NFORM_SA);
  AS_EXPECT(as_dyn_set_model(w, &bad, 0) == AS_ERR_ARG, "causal + sinkhorn refused");
  as_error_clear();
  bad = model(AS_ATTN_SOFTMAX, AS_MASK_NONE, AS_NORM_SPHERE, AS_NFORM_USA);
  AS_EXPECT(as_dyn_set_model(w, &bad, 1) == AS_ERR_ARG, "usa + hardmax refused");
  as_error_clear();
  as_dyn_destroy(&w);
}

/* ---- Long horizons on the sphere: beta up to 100 and T = 10^4 stay finite and one-hot. */
static void test_sphere_horizon(void) {
  enum { N = 8, D = 3 };
  as_dyn *w = NULL;
  AS_EXPECT(as_dyn_create(N, D, &w) == AS_OK, "create");
  if (!w) return;
  const double I[D * D] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double B[D * D] = {100, 0, 0, 0, 100, 0, 0, 0, 100}, X0[N * D];
  uint64_t seed = 5;
  for (int i = 0; i < N * D; i++) X0[i] = lcg(&seed);
  AS_EXPECT(as_dyn_set_triple(w, I, B, NULL) == AS_OK, "triple");
  as_attn_spec sm = model(AS_ATTN_SOFTMAX, AS_MASK_NONE, AS_NORM_SPHERE, AS_NFORM_SA);
  AS_EXPECT(as_dyn_set_model(w, &sm, 0) == AS_OK, "model");
  as_integ_spec in = dyn_test_spec(AS_METHOD_EULER, AS_VARS_X, 1e4, 1.0);
  as_dyn_stats st;
  AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "run");
  const double *P = as_dyn_attention(w);
  int fin = 1;
  for (int i = 0; i < N * N; i++) fin &= isfinite(P[i]) && P[i] >= 0.0 && P[i] <= 1.0;
  AS_EXPECT(st.outcome == AS_OUT_REACHED_T && fin, "beta 100, T = 1e4: finite (outcome %d)",
            (int)st.outcome);
  as_dyn_destroy(&w);
}

/* ---- Plateaus: counts 3 (t in [0, 3): the approach, not a plateau), 2 ([3, 5)), 3 ([5, 6):
 * a split, too short), 2 ([6, 8)), 1 ([8, 10]). */
static void test_plateaus(void) {
  as_meta *m = NULL;
  AS_EXPECT(as_meta_create(3, 1, &m) == AS_OK, "create");
  if (!m) return;
  const double X0[3] = {0.0, 0.5, 1.0};
  as_meta_reset(m, X0);
  AS_EXPECT(as_meta_count(m, X0) == 3, "three apart");
  for (int k = 0; k <= 100; k++) {
    double t = 0.1 * k, X[3] = {0.0, 0.5, 1.0};
    if (t >= 3.0 - 1e-9 && !(t >= 5.0 - 1e-9 && t < 6.0 - 1e-9)) X[0] = 0.5;
    if (t >= 8.0 - 1e-9) X[2] = 0.5 + 1e-4; /* within tol = 1e-3 * diameter */
    as_meta_step(m, t, X);
  }
  as_record rec;
  memset(&rec, 0, sizeof rec);
  as_meta_finish(m, &rec);
  AS_EXPECT(rec.n_plateaus == 2 && rec.n_clusters_track == 1, "plateaus %d, final count %d",
            rec.n_plateaus, rec.n_clusters_track);
  AS_EXPECT_CLOSE(rec.plateau_start, 3.0, 1e-9, 1e-9);
  AS_EXPECT_CLOSE(rec.plateau_length, 2.0, 1e-9, 1e-9);
  AS_EXPECT_CLOSE(rec.t_last_merge, 8.0, 1e-9, 1e-9);
  as_meta_destroy(&m);
  AS_EXPECT(m == NULL, "destroy clears");
}

/* ---- Through the pipeline: records, theorems, a zero token. */
static as_trial base_trial(uint64_t index, int d, int n) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = index;
  t.master_seed = 99;
  t.token_key = index;
  t.triple_key = index;
  t.d = d;
  t.n = n;
  t.init.kind = AS_INIT_GAUSS;
  t.init.scale = 1.0;
  return t;
}

static void test_pipeline_variants(void) {
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "pipeline");
  if (!pl) return;
  as_record r;
  /* Sphere, Q = K = V = I, d = 3: the sphere theorem, one cluster, consistent. */
  as_trial t = base_trial(1, 3, 12);
  t.attn.norm = AS_NORM_SPHERE;
  t.integ.vars = AS_VARS_X;
  t.integ.T = 40.0;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "sphere run");
  AS_EXPECT(r.theorem == AS_THM_SPHERE && r.predicted == AS_GEOM_SINGLE, "theorem %d, pred %d",
            r.theorem, r.predicted);
  AS_EXPECT(r.verdict == AS_VERDICT_CONSISTENT && r.n_clusters == 1 && r.n_clusters_track == 1 &&
                isfinite(r.t_last_merge),
            "sphere verdict %d, clusters %d / %d, last merge %g (%s)", r.verdict, r.n_clusters,
            r.n_clusters_track, r.t_last_merge, r.message);
  /* d = 2: no theorem (the statement needs d >= 3). */
  t = base_trial(2, 2, 12);
  t.attn.norm = AS_NORM_SPHERE;
  t.integ.vars = AS_VARS_X;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "sphere d = 2");
  AS_EXPECT(r.theorem == AS_THM_NONE && r.verdict == AS_VERDICT_NO_PREDICTION, "d = 2: theorem %d",
            r.theorem);
  /* Causal on the sphere, V = I, any M: the causal theorem, one cluster at x_1(0). */
  t = base_trial(3, 2, 6);
  t.attn.norm = AS_NORM_SPHERE;
  t.attn.mask = AS_MASK_CAUSAL;
  t.triple.mfamily = AS_M_GAUSSIAN;
  t.integ.vars = AS_VARS_X;
  t.integ.T = 80.0;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "causal run");
  AS_EXPECT(r.theorem == AS_THM_CAUSAL && r.predicted == AS_GEOM_SINGLE, "causal theorem %d",
            r.theorem);
  AS_EXPECT(r.verdict == AS_VERDICT_CONSISTENT || r.verdict == AS_VERDICT_UNRESOLVED,
            "causal verdict %d (%s)", r.verdict, r.message);
  AS_EXPECT(r.n_clusters_track == 1, "causal: one cluster by the step count (%d)",
            r.n_clusters_track);
  /* Hardmax: recorded as inf, no theorem; Sinkhorn: deviation recorded, no theorem. */
  t = base_trial(4, 2, 10);
  t.triple.beta = INFINITY;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "hardmax run");
  AS_EXPECT(r.beta == INFINITY && r.theorem == AS_THM_NONE && r.outcome == AS_OUT_REACHED_T,
            "hardmax record: beta %g theorem %d outcome %d", r.beta, r.theorem, r.outcome);
  AS_EXPECT(r.p_bool_dist == 0.0, "hardmax final P Boolean (%g)", r.p_bool_dist);
  t = base_trial(5, 2, 10);
  t.attn.attention = AS_ATTN_SINKHORN;
  t.attn.sinkhorn_iters = 5000;
  t.attn.sinkhorn_tol = 1e-10;
  t.integ.T = 0.5;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "sinkhorn run");
  AS_EXPECT(r.theorem == AS_THM_NONE && r.sinkhorn_dev <= 1e-10 && r.sinkhorn_iters == 5000,
            "sinkhorn record: theorem %d dev %g", r.theorem, r.sinkhorn_dev);
  AS_EXPECT(isnan(r.sinkhorn_tol) == 0 && r.n_plateaus == -1, "recorded settings");
  /* The base model keeps its theorem and its record (Sinkhorn fields not applicable). */
  t = base_trial(6, 2, 10);
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "base run");
  AS_EXPECT(r.theorem == AS_THM_IDENTITY && isnan(r.sinkhorn_dev) && r.sinkhorn_iters == -1 &&
                r.norm_form == -1 && r.norm == AS_NORM_NONE,
            "base record: theorem %d", r.theorem);
  /* A zero token on the sphere: a failed set-up naming the trial and the token. */
  double data[4 * 2] = {1.0, 0.0, 0.5, 0.5, 0.0, 0.0, -1.0, 0.2};
  t = base_trial(7, 2, 4);
  t.attn.norm = AS_NORM_SPHERE;
  t.integ.vars = AS_VARS_X;
  t.init.kind = AS_INIT_EXPLICIT;
  t.init.data.data = data;
  t.init.data.rows = 4;
  t.init.data.cols = 2;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "zero-token run is a record");
  AS_EXPECT(r.outcome == AS_OUT_FAILED && strstr(r.message, "trial 7") &&
                strstr(r.message, "token 2"),
            "zero token: outcome %d, message '%s'", r.outcome, r.message);
  as_pipeline_destroy(&pl);
}

/* ---- The recorded attention is the matrix the dynamics used (docs/variants.md, "What is
 * recorded"), checked against independent formulas at the final tokens: V = I, M = I, beta 1,
 * z variables, so the scores at time t are e^{2t} <z_i, z_j>. */
static as_trial identity_trial(uint64_t index, int d, int n, double T) {
  as_trial t = base_trial(index, d, n);
  t.triple.vfamily = AS_V_IDENTITY;
  t.triple.mfamily = AS_M_IDENTITY;
  t.integ.vars = AS_VARS_Z;
  t.integ.method = AS_METHOD_RK4;
  t.integ.dt = 0.1;
  t.integ.T = T;
  return t;
}

static double dot(const double *a, const double *b, int d) {
  double s = 0.0;
  for (int k = 0; k < d; k++) s += a[k] * b[k];
  return s;
}

static void test_recorded_attention(void) {
  enum { NMAX = 20, D = 3 };
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "pipeline");
  if (!pl) return;
  double P[NMAX * NMAX], X[NMAX * D];
  as_bulk bulk = {0};
  bulk.attention = P;
  bulk.final = X;
  as_record r;
  /* Sinkhorn, n = 10, T = 1, 5000 iterations, tolerance 1e-12: the recorded P is doubly
   * stochastic to 1e-12 and is the scaling of e^{c S}: its cross ratios are those of e^{c S}
   * (which, with the sums, determine it). */
  {
    const int n = 10, d = 2;
    as_trial t = identity_trial(21, d, n, 1.0);
    t.attn.attention = AS_ATTN_SINKHORN;
    t.attn.sinkhorn_iters = 5000;
    t.attn.sinkhorn_tol = 1e-12;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r, &bulk) == AS_OK, "sinkhorn run");
    double worst = 0.0, cross = 0.0;
    for (int i = 0; i < n; i++) {
      double rs = 0.0, cs = 0.0;
      for (int j = 0; j < n; j++) rs += P[i * n + j], cs += P[j * n + i];
      worst = fmax(worst, fmax(fabs(rs - 1.0), fabs(cs - 1.0)));
    }
    const double c = exp(2.0 * r.t_final);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        const int k = (i + 1) % n, l = (j + 3) % n;
        if (P[i * n + j] < 1e-6 || P[k * n + l] < 1e-6 || P[i * n + l] < 1e-6 ||
            P[k * n + j] < 1e-6)
          continue;
        const double lr =
            log(P[i * n + j]) + log(P[k * n + l]) - log(P[i * n + l]) - log(P[k * n + j]);
        const double ls = c * (dot(X + i * d, X + j * d, d) + dot(X + k * d, X + l * d, d) -
                               dot(X + i * d, X + l * d, d) - dot(X + k * d, X + j * d, d));
        cross = fmax(cross, fabs(lr - ls));
      }
    AS_EXPECT(r.outcome == AS_OUT_REACHED_T && r.sinkhorn_missed == 0 && worst <= 1e-12 &&
                  cross <= 1e-9,
              "sinkhorn final P: outcome %d, missed %d, row/column sums off by %g, cross "
              "ratios by %g",
              r.outcome, r.sinkhorn_missed, worst, cross);
  }
  /* The saturated regime of jobs/examples/sinkhorn.yaml (n = 20, d = 2, T = 10: c up to
   * e^20 times the scores): every evaluation within 1e-9 in at most 100 iterations. */
  {
    as_trial t = identity_trial(22, 2, 20, 10.0);
    t.attn.attention = AS_ATTN_SINKHORN;
    t.attn.sinkhorn_iters = 100;
    t.attn.sinkhorn_tol = 1e-9;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "saturated sinkhorn run");
    AS_EXPECT(r.outcome == AS_OUT_REACHED_T && r.sinkhorn_missed == 0 && r.sinkhorn_dev <= 1e-9,
              "saturated sinkhorn: outcome %d, missed %d, dev %g", r.outcome, r.sinkhorn_missed,
              r.sinkhorn_dev);
    /* Three iterations cannot: the trial integrates on and says so. */
    t.attn.sinkhorn_iters = 3;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "capped sinkhorn run");
    AS_EXPECT(r.outcome == AS_OUT_NOT_CONVERGED && r.sinkhorn_missed > 0 && r.sinkhorn_dev > 1e-9 &&
                  r.t_final == 10.0,
              "capped sinkhorn: outcome %d, missed %d, dev %g, t %g", r.outcome, r.sinkhorn_missed,
              r.sinkhorn_dev, r.t_final);
    /* The softmax has no Sinkhorn fields. */
    t = identity_trial(22, 2, 20, 1.0);
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "softmax run");
    AS_EXPECT(r.sinkhorn_missed == -1 && isnan(r.sinkhorn_dev), "softmax: missed %d",
              r.sinkhorn_missed);
  }
  /* usa on the sphere: the recorded matrix is the weights e^{beta <x_i, x_j>} / n. */
  {
    const int n = 6, d = D;
    as_trial t = identity_trial(23, d, n, 1.0);
    t.attn.norm = AS_NORM_SPHERE;
    t.attn.norm_form = AS_NFORM_USA;
    t.integ.vars = AS_VARS_X;
    t.triple.beta = 2.0;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r, &bulk) == AS_OK, "usa run");
    double err = 0.0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        const double w = exp(2.0 * dot(X + i * d, X + j * d, d)) / n;
        err = fmax(err, fabs(P[i * n + j] - w) / w);
      }
    AS_EXPECT(r.outcome == AS_OUT_REACHED_T && err <= 1e-12,
              "usa final weights: relative error %g (outcome %d)", err, r.outcome);
  }
  /* The causal mask: row i is the softmax of its first i + 1 scores, the rest exactly 0. */
  {
    const int n = 6, d = 2;
    as_trial t = identity_trial(24, d, n, 1.0);
    t.attn.mask = AS_MASK_CAUSAL;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r, &bulk) == AS_OK, "causal run");
    const double c = exp(2.0 * r.t_final);
    double err = 0.0;
    int zeros = 1;
    for (int i = 0; i < n; i++) {
      double z = 0.0;
      for (int j = 0; j <= i; j++)
        z += exp(c * (dot(X + i * d, X + j * d, d) - dot(X + i * d, X + i * d, d)));
      for (int j = 0; j < n; j++) {
        if (j > i) {
          zeros &= P[i * n + j] == 0.0;
          continue;
        }
        const double p = exp(c * (dot(X + i * d, X + j * d, d) - dot(X + i * d, X + i * d, d))) / z;
        err = fmax(err, fabs(P[i * n + j] - p));
      }
    }
    AS_EXPECT(zeros && err <= 1e-12, "causal final P: masked %d, error %g", zeros, err);
  }
  as_pipeline_destroy(&pl);
}

int main(void) {
  test_sinkhorn();
  test_hardmax();
  test_causal();
  test_sphere();
  test_sphere_horizon();
  test_plateaus();
  test_pipeline_variants();
  test_recorded_attention();
  return as_test_finish("test_variants");
}
