/* Long horizons, outcomes, snapshots, symmetry, single tokens, bad input. */
#include <math.h>
#include <string.h>

#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif

#include "as_test.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/rng.h"
#include "dyn_test.h"

/* The shared settings with error control for dopri5. */
static as_integ_spec spec(as_method m, as_vars v, double T, double dt) {
  as_integ_spec s = dyn_test_spec(m, v, T, dt);
  s.rtol = 1e-7;
  s.atol = 1e-10;
  return s;
}

typedef struct snaplog {
  int count;
  double t[8];
} snaplog;
static void log_snap(double t, const double *Z, void *ctx) {
  (void)Z;
  snaplog *l = ctx;
  if (l->count < 8) l->t[l->count] = t;
  l->count++;
}

static int all_finite(int len, const double *x) {
  for (int i = 0; i < len; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

int main(void) {
  as_rng r;
  as_rng_init(&r, 21, 0, AS_PURPOSE_TEST);
  enum { N = 20, D = 2 };
  double X0[N * D], I2[4] = {1, 0, 0, 1};
  as_rng_fill_uniform(&r, X0, N * D, -5.0, 5.0);
  as_dyn *w = NULL;
  AS_EXPECT(as_dyn_create(N, D, &w) == AS_OK, "create");
  if (!w) return as_test_finish("test_dynamics_misc");
  as_dyn_stats st;
  as_expm path;
  AS_EXPECT(as_dyn_set_triple(w, I2, I2, &path) == AS_OK && path == AS_EXPM_EIGEN, "set");

  /* Horizon T = 1000 with V = Q = K = I (scores would overflow near t = 354): finite,
   * clustered, every row of P one-hot (rows whose token sits exactly on its leader may split
   * between identical copies: then the shared tokens are one point). */
  {
    as_integ_spec in = spec(AS_METHOD_RK4, AS_VARS_Z, 1000.0, 0.1);
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "run T=1000");
    AS_EXPECT(st.outcome == AS_OUT_REACHED_T && st.t_final == 1000.0, "outcome %d t %g",
              (int)st.outcome, st.t_final);
    const double *Z = as_dyn_state(w), *P = as_dyn_attention(w);
    AS_EXPECT(all_finite(N * D, Z) && all_finite(N * N, P), "finite state and attention");
    /* One-hot on points: the support of each row lies on one point (tokens that coincide to
     * rounding tie exactly and share the row equally, by design). */
    const double sp = st.radius; /* max distance from the mean */
    int onehot = 0, pointmass = 0, clusters = 0;
    for (int i = 0; i < N; i++) {
      int nz = 0, j0 = -1, same = 1;
      double sum = 0.0;
      for (int j = 0; j < N; j++)
        if (P[i * N + j] != 0.0) {
          if (j0 < 0) j0 = j;
          nz++;
          sum += P[i * N + j];
          same &= hypot(Z[j * 2] - Z[j0 * 2], Z[j * 2 + 1] - Z[j0 * 2 + 1]) <= 1e-12 * sp;
        }
      onehot += nz == 1;
      pointmass += same && fabs(sum - 1.0) < 1e-15;
      int newpt = 1;
      for (int k = 0; k < i; k++)
        if (hypot(Z[i * 2] - Z[k * 2], Z[i * 2 + 1] - Z[k * 2 + 1]) < 1e-9 * sp) newpt = 0;
      clusters += newpt;
    }
    printf("T = 1000: %d of %d rows one-hot, %d rows one-hot on points, %d clusters, "
           "velocity/radius %.2e\n",
           onehot, N, pointmass, clusters, st.velocity);
    AS_EXPECT(pointmass == N, "every row one-hot on a point: %d of %d", pointmass, N);
    AS_EXPECT(clusters >= 2 && clusters <= 8, "clustered into %d points", clusters);
    AS_EXPECT(st.velocity < 1e-12, "at rest: velocity/radius %g", st.velocity);
    double X[N * D];
    AS_EXPECT(as_dyn_state_x(w, X) == AS_OK, "state_x");
    int nan = 0;
    for (int i = 0; i < N * D; i++) nan += isnan(X[i]);
    AS_EXPECT(nan == 0, "x = e^{1000} z: %d NaN (inf allowed)", nan);
  }
  /* The same in the x variables overflows: outcome nonfinite, not an error, last finite state. */
  {
    as_integ_spec in = spec(AS_METHOD_RK4, AS_VARS_X, 1000.0, 0.1);
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "run x");
    AS_EXPECT(st.outcome == AS_OUT_NONFINITE && st.t_final > 300.0 && st.t_final < 1000.0,
              "x overflow: outcome %d at t %g", (int)st.outcome, st.t_final);
    AS_EXPECT(all_finite(N * D, as_dyn_state(w)), "last finite state kept");
  }
  /* dopri5 and layers reach long horizons too. */
  {
    as_integ_spec in = spec(AS_METHOD_DOPRI5, AS_VARS_Z, 400.0, 0.1);
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "dopri5");
    AS_EXPECT(st.outcome == AS_OUT_REACHED_T && all_finite(N * D, as_dyn_state(w)),
              "dopri5 T=400 outcome %d (steps %lld, rejected %lld)", (int)st.outcome,
              (long long)st.steps, (long long)st.rejected);
    in = spec(AS_METHOD_LAYERS, AS_VARS_Z, 1000.0, 0.5);
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "layers");
    AS_EXPECT(st.outcome == AS_OUT_REACHED_T && st.steps == 2000 &&
                  all_finite(N * D, as_dyn_state(w)),
              "layers outcome %d steps %lld", (int)st.outcome, (long long)st.steps);
  }
  /* Outcomes: interrupted, max steps, settled. */
  {
    volatile sig_atomic_t stop = 1;
    as_integ_spec in = spec(AS_METHOD_RK4, AS_VARS_Z, 5.0, 0.1);
    AS_EXPECT(as_dyn_run(w, &in, X0, &stop, NULL, 0, NULL, NULL, &st) == AS_OK &&
                  st.outcome == AS_OUT_INTERRUPTED && st.steps == 0,
              "interrupted: %d", (int)st.outcome);
    in.max_steps = 3;
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK &&
                  st.outcome == AS_OUT_MAX_STEPS && st.steps == 3,
              "max steps: %d after %lld", (int)st.outcome, (long long)st.steps);
    AS_EXPECT_CLOSE(st.t_final, 0.3, 1e-14, 0);
    in = spec(AS_METHOD_RK4, AS_VARS_Z, 200.0, 0.1);
    in.settle_tol = 1e-6;
    in.settle_window = 2.0;
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "settle run");
    AS_EXPECT(st.outcome == AS_OUT_SETTLED && st.t_final < 100.0 &&
                  st.t_final - st.settle_time >= 2.0 - 1e-9,
              "settled: outcome %d at %g since %g", (int)st.outcome, st.t_final, st.settle_time);
  }
  /* Snapshots land exactly, duplicates included, and the run ends exactly at T. */
  {
    const double times[4] = {0.25, 0.5, 0.5, 5.0};
    const as_method ms[3] = {AS_METHOD_RK4, AS_METHOD_DOPRI5, AS_METHOD_EULER};
    for (int m = 0; m < 3; m++) {
      snaplog lg = {0, {0}};
      as_integ_spec in = spec(ms[m], AS_VARS_Z, 5.0, 0.1);
      AS_EXPECT(as_dyn_run(w, &in, X0, NULL, times, 4, log_snap, &lg, &st) == AS_OK, "snap run");
      AS_EXPECT(lg.count == 4 && lg.t[0] == 0.25 && lg.t[1] == 0.5 && lg.t[2] == 0.5 &&
                    lg.t[3] == 5.0,
                "method %d: %d snapshots at %g %g %g %g", m, lg.count, lg.t[0], lg.t[1], lg.t[2],
                lg.t[3]);
      AS_EXPECT(st.t_final == 5.0, "t_final %.17g", st.t_final);
    }
  }
  /* Determinism: the same run twice on the same workspace is bitwise identical; the second
   * run leaves the heap in use as it found it (glibc; a weak check: the step loop has no
   * allocation to find). */
  {
    double A[N * D];
    as_integ_spec in = spec(AS_METHOD_DOPRI5, AS_VARS_Z, 3.0, 0.1);
    as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st);
    memcpy(A, as_dyn_state(w), sizeof A);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 before = mallinfo2();
#endif
    as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 after = mallinfo2();
    AS_EXPECT(after.uordblks == before.uordblks, "run allocated: heap in use %zu -> %zu",
              before.uordblks, after.uordblks);
#endif
    AS_EXPECT(memcmp(A, as_dyn_state(w), sizeof A) == 0, "rerun bitwise identical");
  }
  /* Permuting the tokens permutes the result (and P). Moderate data, generic triple. */
  {
    double V[4] = {0.8, -0.5, 0.3, 0.2}, M[4] = {0.9, 0.4, -0.2, 0.5}, Xs[N * D], Xp[N * D];
    double Z1[N * D], P1[N * N];
    int perm[N];
    for (int i = 0; i < N; i++) perm[i] = (7 * i + 3) % N;
    for (int i = 0; i < N * D; i++) Xs[i] = X0[i] / 5.0;
    for (int i = 0; i < N; i++) memcpy(Xp + i * D, Xs + perm[i] * D, sizeof(double) * D);
    AS_EXPECT(as_dyn_set_triple(w, V, M, NULL) == AS_OK, "set generic");
    as_integ_spec in = spec(AS_METHOD_RK4, AS_VARS_Z, 3.0, 0.05);
    as_dyn_run(w, &in, Xs, NULL, NULL, 0, NULL, NULL, &st);
    memcpy(Z1, as_dyn_state(w), sizeof Z1);
    memcpy(P1, as_dyn_attention(w), sizeof P1);
    as_dyn_run(w, &in, Xp, NULL, NULL, 0, NULL, NULL, &st);
    const double *Z2 = as_dyn_state(w), *P2 = as_dyn_attention(w);
    double ez = 0.0, ep = 0.0;
    for (int i = 0; i < N; i++) {
      for (int j = 0; j < D; j++) ez = fmax(ez, fabs(Z2[i * D + j] - Z1[perm[i] * D + j]));
      for (int j = 0; j < N; j++) ep = fmax(ep, fabs(P2[i * N + j] - P1[perm[i] * N + perm[j]]));
    }
    AS_EXPECT(ez < 1e-12 && ep < 1e-12, "permutation: state %g, attention %g", ez, ep);
  }
  as_dyn_destroy(&w);
  AS_EXPECT(w == NULL, "destroy sets NULL");

  /* A single token never moves (z variables), whatever the triple and the method. */
  {
    enum { d = 3 };
    double V[9], M[9], x0[d];
    as_rng_fill_normal(&r, V, 9, 1.0);
    as_rng_fill_normal(&r, M, 9, 1.0);
    as_rng_fill_uniform(&r, x0, d, -5, 5);
    AS_EXPECT(as_dyn_create(1, d, &w) == AS_OK, "create 1");
    AS_EXPECT(as_dyn_set_triple(w, V, M, NULL) == AS_OK, "set");
    const as_method ms[4] = {AS_METHOD_RK4, AS_METHOD_DOPRI5, AS_METHOD_EULER, AS_METHOD_LAYERS};
    for (int m = 0; m < 4; m++) {
      as_integ_spec in = spec(ms[m], AS_VARS_Z, 4.0, 0.1);
      AS_EXPECT(as_dyn_run(w, &in, x0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "single run");
      AS_EXPECT(memcmp(as_dyn_state(w), x0, sizeof x0) == 0 && as_dyn_attention(w)[0] == 1.0,
                "method %d: the single token moved", m);
    }
    as_dyn_destroy(&w);
  }

  /* Bad input: clear statuses, no crash. */
  {
    AS_EXPECT(as_dyn_create(0, 2, &w) == AS_ERR_ARG && w == NULL, "n = 0");
    as_error_clear();
    AS_EXPECT(as_dyn_create(N, D, &w) == AS_OK, "create");
    as_integ_spec in = spec(AS_METHOD_RK4, AS_VARS_Z, 5.0, 0.1);
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_ERR_ARG,
              "run before set_triple");
    double bad[4] = {1, NAN, 0, 1};
    AS_EXPECT(as_dyn_set_triple(w, I2, bad, NULL) == AS_ERR_DATA, "NaN M");
    AS_EXPECT(as_dyn_set_triple(w, bad, I2, NULL) == AS_ERR_DATA, "NaN V");
    AS_EXPECT(as_dyn_set_triple(w, I2, I2, NULL) == AS_OK, "set");
    in.T = -1.0;
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_ERR_SPEC, "T < 0");
    in.T = 5.0;
    in.dt = 0.0;
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_ERR_SPEC, "dt = 0");
    in.dt = 0.1;
    const double unsorted[2] = {2.0, 1.0}, outside[1] = {6.0};
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, unsorted, 2, NULL, NULL, &st) == AS_ERR_ARG,
              "unsorted snapshots");
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, outside, 1, NULL, NULL, &st) == AS_ERR_ARG,
              "snapshot after T");
    double Xbad[N * D];
    memcpy(Xbad, X0, sizeof Xbad);
    Xbad[7] = INFINITY;
    as_error_clear();
    AS_EXPECT(as_dyn_run(w, &in, Xbad, NULL, NULL, 0, NULL, NULL, &st) == AS_ERR_DATA,
              "infinite token");
    AS_EXPECT(strstr(as_error_get()->message, "token 3") != NULL, "message names the token: %s",
              as_error_get()->message);
    as_error_clear();
    double mI[4] = {-1, 0, 0, -1};
    AS_EXPECT(as_dyn_set_triple(w, mI, I2, NULL) == AS_OK, "set -I");
    in = spec(AS_METHOD_LAYERS, AS_VARS_Z, 5.0, 1.0); /* R = I + dt V = 0 */
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_ERR_SPEC,
              "z-layers with singular R");
    in.vars = AS_VARS_X;
    AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK &&
                  st.outcome == AS_OUT_REACHED_T,
              "x-layers with R = 0 run");
    as_error_clear();
    as_dyn_destroy(&w);
  }
  return as_test_finish("test_dynamics_misc");
}
