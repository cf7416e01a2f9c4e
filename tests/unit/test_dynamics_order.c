/* Observed orders of convergence of every Butcher tableau (tableau.h), each against its
 * declared order: exact linear solutions (M = 0) and a nonlinear case against a tiny-step
 * reference; the embedded solution of a pair run on its own against its declared order; z/x
 * and layer consistency. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/enums.h"
#include "attnsweep/rng.h"
#include "attnsweep/tableau.h"
#include "dyn_test.h"
#include "linalg_dyn.h"

#define N 5
#define D 3
#define ND (N * D)

static double max_diff(int len, const double *a, const double *b) {
  double m = 0.0;
  for (int i = 0; i < len; i++) m = fmax(m, fabs(a[i] - b[i]));
  return isnan(m) ? INFINITY : m;
}

/* Final state (integrated variables) into out, x into xout when non-NULL; returns steps. */
static long run(as_dyn *w, as_integ_spec s, const double *X0, double *out, double *xout) {
  as_dyn_stats st;
  as_status rc = as_dyn_run(w, &s, X0, NULL, NULL, 0, NULL, NULL, &st);
  AS_EXPECT(rc == AS_OK && st.outcome == AS_OUT_REACHED_T, "run: status %d outcome %d", (int)rc,
            (int)st.outcome);
  AS_EXPECT(st.t_final == s.T, "t_final %.17g != T %.17g", st.t_final, s.T);
  memcpy(out, as_dyn_state(w), sizeof(double) * ND);
  if (xout) AS_EXPECT(as_dyn_state_x(w, xout) == AS_OK, "state_x");
  return (long)st.steps;
}

/* Coarsest step of an order-p method, from its order only: scale * (0.02, 0.2, 0.43) for
 * p = 1, 4, 5. With scale 1 for the exact linear case and 1/8 for the nonlinear one (where
 * dopri5's leading error term is small, so larger steps are still pre-asymptotic, observed
 * order ~6), the errors at h, h/2, h/4 stay in the asymptotic range and above round-off
 * (smallest ~4e-13). */
static double coarse_step(int p, double scale) {
  return scale * 0.02 * pow(10.0, (p - 1) / 3.0);
}

/* The tableaus to test: every method's, and each embedded solution as a method of its own
 * (run through the test hook as_dyn_set_tableau). */
typedef struct {
  as_method method;     /* the method to ask for */
  const as_tableau *tb; /* NULL: the method's own tableau; else forced */
  int p;                /* declared order */
  char name[48];
} rk_case;
static as_tableau embedded[AS_METHOD_COUNT];

static int rk_cases(rk_case *out) {
  int k = 0;
  for (int m = 0; m < AS_METHOD_COUNT; m++) {
    const as_tableau *tb = as_tableau_of((as_method)m);
    if (!tb) continue;
    out[k].method = (as_method)m;
    out[k].tb = NULL;
    out[k].p = tb->order;
    snprintf(out[k].name, sizeof out[k].name, "%s", as_enum_label(&as_method_table, m));
    k++;
    if (tb->order_hat > 0) {
      as_tableau *e = &embedded[m];
      *e = *tb;
      memcpy(e->b, tb->bhat, sizeof e->b);
      e->order = tb->order_hat;
      e->order_hat = 0;
      e->fsal = 0;
      out[k].method = (as_method)m;
      out[k].tb = e;
      out[k].p = e->order;
      snprintf(out[k].name, sizeof out[k].name, "%s embedded", as_enum_label(&as_method_table, m));
      k++;
    }
  }
  return k;
}

/* Observed order from errors at steps h, h/2, h/4: the finer ratio must show it; the coarser
 * one may still be pre-asymptotic on the high side, never below. */
static void check_order(const char *what, const double err[3], double p, double slack) {
  double p1 = log2(err[0] / err[1]), p2 = log2(err[1] / err[2]);
  printf("%s: errors %.3e %.3e %.3e, observed orders %.2f %.2f (expected %g)\n", what, err[0],
         err[1], err[2], p1, p2, p);
  AS_EXPECT(p1 >= p - slack && p1 <= p + 1.0 && fabs(p2 - p) <= slack,
            "%s: orders %.2f %.2f, expected %g", what, p1, p2, p);
}

int main(void) {
  as_rng r;
  as_rng_init(&r, 11, 0, AS_PURPOSE_TEST);
  as_dyn *w = NULL;
  AS_EXPECT(as_dyn_create(N, D, &w) == AS_OK, "create");
  if (!w) return as_test_finish("test_dynamics_order");
  double X0[ND], Z[ND], X[ND], ex[ND], exx[ND];
  as_rng_fill_uniform(&r, X0, ND, -1.0, 1.0);
  rk_case cases[2 * AS_METHOD_COUNT];
  const int nc = rk_cases(cases);
  AS_EXPECT(nc >= 3, "%d tableaus to test", nc);

  /* ---- Exact solution: M = 0 gives uniform attention. z: the mean is conserved and each
   * deviation evolves as e^{-tV}; x: deviations are constant and the mean evolves as e^{tV}.
   * V = [[a, b, 0], [-b, a, 0], [0, 0, c]]: e^{sV} = blockdiag(e^{as} rot(bs), e^{cs}). */
  {
    const double a = 0.5, b = 1.0, c = -0.3, T = 2.0;
    double V[9] = {a, b, 0, -b, a, 0, 0, 0, c}, M0[9] = {0};
    as_expm path;
    AS_EXPECT(as_dyn_set_triple(w, V, M0, &path) == AS_OK && path == AS_EXPM_EIGEN, "set");
    double m[D] = {0};
    for (int i = 0; i < N; i++)
      for (int j = 0; j < D; j++) m[j] += X0[i * D + j] / N;
        /* E(s) applied to a vector. */
#define APPLY(s, u, outv)                                             \
  do {                                                                \
    double e_ = exp(a * (s)), co_ = cos(b * (s)), si_ = sin(b * (s)); \
    (outv)[0] = e_ * (co_ * (u)[0] + si_ * (u)[1]);                   \
    (outv)[1] = e_ * (-si_ * (u)[0] + co_ * (u)[1]);                  \
    (outv)[2] = exp(c * (s)) * (u)[2];                                \
  } while (0)
    double em[D];
    APPLY(T, m, em);
    for (int i = 0; i < N; i++) {
      double dev[D], e[D];
      for (int j = 0; j < D; j++) dev[j] = X0[i * D + j] - m[j];
      APPLY(-T, dev, e);
      for (int j = 0; j < D; j++) {
        ex[i * D + j] = m[j] + e[j];
        exx[i * D + j] = dev[j] + em[j];
      }
    }
    for (int k = 0; k < nc; k++) {
      double err[3], errx[3], h0 = coarse_step(cases[k].p, 1.0);
      char what[96];
      AS_EXPECT(as_dyn_set_tableau(w, cases[k].tb) == AS_OK, "set tableau");
      for (int l = 0; l < 3; l++) {
        double h = h0 / (1 << l);
        run(w, dyn_test_spec(cases[k].method, AS_VARS_Z, T, h), X0, Z, X);
        err[l] = max_diff(ND, Z, ex);
        errx[l] = max_diff(ND, X, exx); /* x = e^{tV} z from the z run */
        run(w, dyn_test_spec(cases[k].method, AS_VARS_X, T, h), X0, X, NULL);
        double ex_x = max_diff(ND, X, exx);
        AS_EXPECT(ex_x <= 50 * errx[l] + 1e-13, "%s: x-run error %g vs z-run %g", cases[k].name,
                  ex_x, errx[l]);
      }
      snprintf(what, sizeof what, "%s exact z, h = %.3g", cases[k].name, h0);
      check_order(what, err, cases[k].p, 0.35);
      check_order("  same, mapped to x = e^{tV} z", errx, cases[k].p, 0.35);
    }
    AS_EXPECT(as_dyn_set_tableau(w, NULL) == AS_OK, "unset tableau");
    /* Adaptive pair: error tracks the tolerance and shrinks like steps^-5. */
    double e[3];
    long steps[3];
    for (int l = 0; l < 3; l++) {
      as_integ_spec s = dyn_test_spec(AS_METHOD_DOPRI5, AS_VARS_Z, T, 0.1);
      s.rtol = pow(10.0, -5.0 - 2.0 * l);
      s.atol = s.rtol * 1e-2;
      steps[l] = run(w, s, X0, Z, NULL);
      e[l] = max_diff(ND, Z, ex);
      AS_EXPECT(e[l] <= 100 * s.rtol, "dopri5 rtol %g: error %g", s.rtol, e[l]);
    }
    double slope = log(e[0] / e[2]) / log((double)steps[2] / (double)steps[0]);
    printf("dopri5 adaptive: steps %ld %ld %ld errors %.2e %.2e %.2e, error ~ steps^-%.2f\n",
           steps[0], steps[1], steps[2], e[0], e[1], e[2], slope);
    AS_EXPECT(slope > 3.5 && slope < 7.0, "dopri5 adaptive slope %.2f", slope);
#undef APPLY
  }

  /* ---- Nonlinear: generic V and M, against RK4 with a tiny step. Two triples: one on the
   * eigenbasis path, one defective (Jordan block) on the Pade path. */
  for (int tr = 0; tr < 2; tr++) {
    double V[9], M[9], ref[ND], refx[ND];
    as_rng_fill_normal(&r, M, 9, 0.8);
    if (tr == 0) {
      as_rng_fill_normal(&r, V, 9, 0.6);
    } else {
      double J[9] = {0.5, 1.0, 0, 0, 0.5, 1.0, 0, 0, 0.5};
      memcpy(V, J, sizeof J);
    }
    as_expm path;
    AS_EXPECT(as_dyn_set_triple(w, V, M, &path) == AS_OK, "set nonlinear");
    AS_EXPECT(path == (tr == 0 ? AS_EXPM_EIGEN : AS_EXPM_PADE), "path %d for triple %d", (int)path,
              tr);
    const double T = 1.0;
    run(w, dyn_test_spec(AS_METHOD_DOPRI5, AS_VARS_Z, T, 1.0 / 1024), X0, ref, refx);
    for (int k = 0; k < nc; k++) {
      double err[3], h0 = coarse_step(cases[k].p, 0.125);
      char what[96];
      AS_EXPECT(as_dyn_set_tableau(w, cases[k].tb) == AS_OK, "set tableau");
      for (int l = 0; l < 3; l++) {
        run(w, dyn_test_spec(cases[k].method, AS_VARS_Z, T, h0 / (1 << l)), X0, Z, NULL);
        err[l] = max_diff(ND, Z, ref);
      }
      snprintf(what, sizeof what, "%s nonlinear (triple %d), h = %.3g", cases[k].name, tr, h0);
      check_order(what, err, cases[k].p, 0.45);
    }
    AS_EXPECT(as_dyn_set_tableau(w, NULL) == AS_OK, "unset tableau");
    /* The x variables give the same trajectory. */
    run(w, dyn_test_spec(AS_METHOD_DOPRI5, AS_VARS_X, T, 1.0 / 1024), X0, X, NULL);
    AS_EXPECT(max_diff(ND, X, refx) < 1e-10, "x run vs e^{TV} z: %g", max_diff(ND, X, refx));

    /* Layers: x-layers are forward Euler on x; z-layers are R^k times x-layers. */
    double Xl[ND], Xe[ND], Xz[ND];
    run(w, dyn_test_spec(AS_METHOD_LAYERS, AS_VARS_X, 2.0, 0.25), X0, Xl, NULL);
    run(w, dyn_test_spec(AS_METHOD_EULER, AS_VARS_X, 2.0, 0.25), X0, Xe, NULL);
    AS_EXPECT(max_diff(ND, Xl, Xe) < 1e-14, "x-layers vs Euler: %g", max_diff(ND, Xl, Xe));
    run(w, dyn_test_spec(AS_METHOD_LAYERS, AS_VARS_Z, 2.0, 0.25), X0, Z, Xz);
    AS_EXPECT(max_diff(ND, Xz, Xl) < 1e-12, "z-layers mapped to x vs x-layers: %g",
              max_diff(ND, Xz, Xl));
  }
  as_dyn_destroy(&w);
  return as_test_finish("test_dynamics_order");
}
