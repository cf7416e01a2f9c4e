/* Monotone quantities of docs/theory.md section 2.10, observed on snapshots of the trajectory. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/rng.h"
#include "dyn_test.h"

#define NMAX 16
#define D 2
#define NS 40

typedef struct snaps {
  int n, count;
  double t[NS + 1];
  double z[NS + 1][NMAX * D];
} snaps;

static void keep(double t, const double *Z, void *ctx) {
  snaps *s = ctx;
  if (s->count > NS) return;
  s->t[s->count] = t;
  memcpy(s->z[s->count], Z, sizeof(double) * (size_t)s->n * D);
  s->count++;
}

/* Trajectory from X0 with snapshots at T k / NS (the first slot holds X0). */
static void trajectory(as_dyn *w, as_integ_spec in, int n, const double *X0, snaps *s) {
  double times[NS];
  for (int k = 0; k < NS; k++) times[k] = in.T * (k + 1) / NS;
  s->n = n;
  s->count = 0;
  keep(0.0, X0, s);
  as_dyn_stats st;
  as_status rc = as_dyn_run(w, &in, X0, NULL, times, NS, keep, s, &st);
  AS_EXPECT(rc == AS_OK && st.outcome == AS_OUT_REACHED_T && s->count == NS + 1,
            "run %d outcome %d snapshots %d", (int)rc, (int)st.outcome, s->count);
}

int main(void) {
  as_rng r;
  as_rng_init(&r, 5, 0, AS_PURPOSE_TEST);
  const int n = 12;
  as_dyn *w = NULL;
  AS_EXPECT(as_dyn_create(n, D, &w) == AS_OK, "create");
  if (!w) return as_test_finish("test_dynamics_invariants");
  static snaps s;
  double X0[NMAX * D];

  /* V = I, M SPD: the convex hull of z never grows, i.e. its support function h(u) =
   * max_i <u, z_i> is non-increasing in every direction u. Euler with dt <= 1 keeps it exactly
   * (each step is a convex combination); RK4 up to its local error. */
  {
    double V[4] = {1, 0, 0, 1}, M[4] = {1.0, 0.3, 0.3, 0.6};
    AS_EXPECT(as_dyn_set_triple(w, V, M, NULL) == AS_OK, "set");
    as_rng_fill_uniform(&r, X0, n * D, -2.0, 2.0);
    const as_method meths[2] = {AS_METHOD_EULER, AS_METHOD_RK4};
    for (int mi = 0; mi < 2; mi++) {
      trajectory(w, dyn_test_spec(meths[mi], AS_VARS_Z, 6.0, 0.05), n, X0, &s);
      double worst = 0.0;
      for (int a = 0; a < 64; a++) {
        double u0 = cos(6.283185307179586 * a / 64), u1 = sin(6.283185307179586 * a / 64),
               prev = INFINITY;
        for (int k = 0; k <= NS; k++) {
          double h = -INFINITY;
          for (int i = 0; i < n; i++) h = fmax(h, u0 * s.z[k][i * 2] + u1 * s.z[k][i * 2 + 1]);
          if (k > 0) worst = fmax(worst, h - prev);
          prev = h;
        }
      }
      double tol = mi == 0 ? 1e-13 : 1e-9;
      printf("V = I, %s: largest growth of the support function %.3e\n", mi == 0 ? "euler" : "rk4",
             worst);
      AS_EXPECT(worst <= tol, "hull grew by %g (method %d)", worst, mi);
    }
  }

  /* Good triple (the paper's V, M = I): c_i = l_1^T z_i with l_1 the left eigenvector of the
   * dominant eigenvalue; max_i c_i never increases and min_i c_i never decreases. */
  {
    double V[4] = {0.64709742, 0.81911926, 0.61210449, 0.63263484}, M[4] = {1, 0, 0, 1};
    AS_EXPECT(as_dyn_set_triple(w, V, M, NULL) == AS_OK, "set good");
    /* l_1: power iteration on V^T (lambda_1 = 1.348 dominates |lambda_2| = 0.068). */
    double l[2] = {1.0, 1.0};
    for (int it = 0; it < 200; it++) {
      double a = V[0] * l[0] + V[2] * l[1], b = V[1] * l[0] + V[3] * l[1];
      double nrm = hypot(a, b);
      l[0] = a / nrm;
      l[1] = b / nrm;
    }
    as_rng_fill_uniform(&r, X0, n * D, -5.0, 5.0);
    const as_method meths[2] = {AS_METHOD_EULER, AS_METHOD_RK4};
    for (int mi = 0; mi < 2; mi++) {
      trajectory(w, dyn_test_spec(meths[mi], AS_VARS_Z, 5.0, 0.05), n, X0, &s);
      double worst = 0.0, pmax = INFINITY, pmin = -INFINITY;
      for (int k = 0; k <= NS; k++) {
        double mx = -INFINITY, mn = INFINITY;
        for (int i = 0; i < n; i++) {
          double c = l[0] * s.z[k][i * 2] + l[1] * s.z[k][i * 2 + 1];
          mx = fmax(mx, c);
          mn = fmin(mn, c);
        }
        if (k > 0) worst = fmax(worst, fmax(mx - pmax, pmin - mn));
        pmax = mx;
        pmin = mn;
      }
      printf("good triple, %s: largest violation of monotone max/min of l1.z %.3e\n",
             mi == 0 ? "euler" : "rk4", worst);
      AS_EXPECT(worst <= (mi == 0 ? 1e-12 : 1e-9), "l1.z extremes moved outward by %g", worst);
    }
  }

  /* V = -I, M = I, x variables: L = sum_ij e^{<x_i, x_j>} never increases. */
  {
    double V[4] = {-1, 0, 0, -1}, M[4] = {1, 0, 0, 1};
    AS_EXPECT(as_dyn_set_triple(w, V, M, NULL) == AS_OK, "set -I");
    as_rng_fill_uniform(&r, X0, n * D, -1.0, 1.0);
    trajectory(w, dyn_test_spec(AS_METHOD_RK4, AS_VARS_X, 4.0, 0.05), n, X0, &s);
    double worst = -INFINITY, prev = INFINITY, first = 0.0, last = 0.0;
    for (int k = 0; k <= NS; k++) {
      double L = 0.0;
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
          L += exp(s.z[k][i * 2] * s.z[k][j * 2] + s.z[k][i * 2 + 1] * s.z[k][j * 2 + 1]);
      if (k > 0) worst = fmax(worst, (L - prev) / prev);
      if (k == 0) first = L;
      last = L;
      prev = L;
    }
    printf("V = -I: L from %.6g to %.6g, largest relative increase %.3e\n", first, last, worst);
    AS_EXPECT(worst <= 1e-12, "L increased by %g (relative)", worst);
    AS_EXPECT(last < first, "L decreased overall");
  }
  as_dyn_destroy(&w);
  return as_test_finish("test_dynamics_invariants");
}
