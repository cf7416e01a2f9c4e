/* e^{tV}: both paths against exact exponentials and against each other. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/expm.h"
#include "attnsweep/rng.h"

#define DMAX 8

/* max |A - B| / max(1, max |B|) */
static double rel_diff(int d, const double *A, const double *B) {
  double num = 0.0, den = 1.0;
  for (int i = 0; i < d * d; i++) {
    num = fmax(num, fabs(A[i] - B[i]));
    den = fmax(den, fabs(B[i]));
  }
  return isnan(num) ? INFINITY : num / den;
}

static void matmul(int d, const double *A, const double *B, double *C) {
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double s = 0.0;
      for (int l = 0; l < d; l++) s += A[i * d + l] * B[l * d + j];
      C[i * d + j] = s;
    }
}

/* Checks e^{t(V - shift I)} on both paths (or only Pade if the eigenbasis is not allowed). */
static void check_exact(const char *what, int d, const double *V, double t, double shift,
                        const double *exact, as_expm want_auto, double tol) {
  as_expm_plan *p = NULL;
  double E[DMAX * DMAX];
  AS_EXPECT(as_expm_create(d, &p) == AS_OK, "%s: create", what);
  if (!p) return;
  as_expm path = AS_EXPM_NONE;
  AS_EXPECT(as_expm_set(p, V, AS_EXPM_NONE, &path) == AS_OK, "%s: set", what);
  AS_EXPECT(path == want_auto, "%s: automatic path %d, expected %d (cond %g)", what, (int)path,
            (int)want_auto, as_expm_cond(p));
  AS_EXPECT(as_expm_eval(p, t, shift, E) == AS_OK, "%s: eval", what);
  double e1 = rel_diff(d, E, exact);
  AS_EXPECT(e1 <= tol, "%s: automatic path error %g > %g", what, e1, tol);
  AS_EXPECT(as_expm_set(p, V, AS_EXPM_PADE, &path) == AS_OK && path == AS_EXPM_PADE,
            "%s: forced Pade", what);
  AS_EXPECT(as_expm_eval(p, t, shift, E) == AS_OK, "%s: eval pade", what);
  double e2 = rel_diff(d, E, exact);
  AS_EXPECT(e2 <= tol, "%s: Pade error %g > %g", what, e2, tol);
  as_expm_destroy(&p);
  AS_EXPECT(p == NULL, "destroy sets NULL");
}

int main(void) {
  const double eps = 2.2e-16;
  /* Diagonal. */
  {
    double V[9] = {1.0, 0, 0, 0, -2.0, 0, 0, 0, 0.5}, E[9] = {0};
    double t = 1.3;
    E[0] = exp(t), E[4] = exp(-2 * t), E[8] = exp(0.5 * t);
    check_exact("diagonal", 3, V, t, 0.0, E, AS_EXPM_EIGEN, 50 * eps);
    /* Shifted, at a horizon where e^{tV} itself overflows: e^{t(V - I)} stays bounded. */
    double V2[4] = {1.0, 0, 0, -1.0}, E2[4] = {1.0, 0, 0, 0.0};
    check_exact("shift t=1000", 2, V2, 1000.0, 1.0, E2, AS_EXPM_EIGEN, 1e-12);
  }
  /* Rotation: V = [[a, b], [-b, a]], e^{tV} = e^{at} [[cos bt, sin bt], [-sin bt, cos bt]]. */
  {
    double a = 0.3, b = 2.0, t = 1.7;
    double V[4] = {a, b, -b, a};
    double c = cos(b * t), s = sin(b * t), e = exp(a * t);
    double E[4] = {e * c, e * s, -e * s, e * c};
    check_exact("rotation", 2, V, t, 0.0, E, AS_EXPM_EIGEN, 100 * eps);
    /* Embedded in d = 3 with a real eigenvalue, shifted by mu. */
    double V3[9] = {a, b, 0, -b, a, 0, 0, 0, -1.0};
    double E3[9] = {c, s, 0, -s, c, 0, 0, 0, exp((-1.0 - a) * t)};
    check_exact("rotation d=3 shifted", 3, V3, t, a, E3, AS_EXPM_EIGEN, 100 * eps);
  }
  /* Jordan block (defective: must go to Pade). */
  {
    double l = 0.7, t = 2.5, V[9] = {l, 1, 0, 0, l, 1, 0, 0, l};
    double e = exp(l * t);
    double E[9] = {e, e * t, e * t * t / 2, 0, e, e * t, 0, 0, e};
    check_exact("jordan", 3, V, t, 0.0, E, AS_EXPM_PADE, 100 * eps);
  }
  /* Nilpotent: e^{tN} = I + tN + t^2 N^2 / 2. */
  {
    double t = 3.0, V[9] = {0, 1, 2, 0, 0, 3, 0, 0, 0};
    double E[9] = {1, t, 2 * t + 3 * t * t / 2, 0, 1, 3 * t, 0, 0, 1};
    check_exact("nilpotent", 3, V, t, 0.0, E, AS_EXPM_PADE, 100 * eps);
  }
  /* Random matrices: the two paths agree; the group law holds; layers are matrix powers. */
  {
    as_rng r;
    as_rng_init(&r, 7, 0, 99);
    as_expm_plan *p = NULL;
    AS_EXPECT(as_expm_create(6, &p) == AS_OK, "create 6");
    double V[36], Ee[36], Ep[36], A[36], B[36], C[36];
    for (int trial = 0; trial < 5 && p; trial++) {
      as_rng_fill_normal(&r, V, 36, 1.0 / sqrt(6.0));
      as_expm path;
      AS_EXPECT(as_expm_set(p, V, AS_EXPM_NONE, &path) == AS_OK, "set random");
      double cond = as_expm_cond(p);
      if (path != AS_EXPM_EIGEN) continue;
      double mu = as_expm_mu(p);
      for (int k = 0; k < 3; k++) {
        double t = k == 0 ? 0.5 : (k == 1 ? 3.0 : 40.0);
        AS_EXPECT(as_expm_eval(p, t, mu, Ee) == AS_OK, "eval eigen");
        AS_EXPECT(as_expm_set(p, V, AS_EXPM_PADE, NULL) == AS_OK, "set pade");
        AS_EXPECT(as_expm_eval(p, t, mu, Ep) == AS_OK, "eval pade");
        /* Both accurate to ~ kappa eps (eigen) and ~ t ||V|| eps (Pade squarings). */
        double tol = 1e3 * eps * (cond + t * 4.0);
        double e = rel_diff(6, Ee, Ep);
        AS_EXPECT(e <= tol, "trial %d t %g: eigen vs Pade %g > %g (cond %g)", trial, t, e, tol,
                  cond);
        AS_EXPECT(as_expm_set(p, V, AS_EXPM_NONE, NULL) == AS_OK, "reset auto");
      }
      /* Group law on the Pade path: E(0.7) E(1.1) = E(1.8). */
      AS_EXPECT(as_expm_set(p, V, AS_EXPM_PADE, NULL) == AS_OK, "pade");
      as_expm_eval(p, 0.7, 0.0, A);
      as_expm_eval(p, 1.1, 0.0, B);
      as_expm_eval(p, 1.8, 0.0, Ep);
      matmul(6, A, B, C);
      AS_EXPECT(rel_diff(6, C, Ep) <= 1e3 * eps, "group law %g", rel_diff(6, C, Ep));
      /* Layers: ((I + dt V) / rho)^k by both paths against repeated products. */
      double dt = 0.3, rho = as_expm_layer_radius(p, dt);
      AS_EXPECT(rho > 0.0, "rho %g", rho);
      double R[36], Pw[36];
      for (int i = 0; i < 36; i++) R[i] = (i % 7 == 0 ? 1.0 : 0.0) + dt * V[i];
      for (int i = 0; i < 36; i++) Pw[i] = i % 7 == 0 ? 1.0 : 0.0;
      double scale = 1.0;
      for (long k = 0; k <= 9; k++) {
        for (int pth = 0; pth < 2; pth++) {
          AS_EXPECT(as_expm_set(p, V, pth ? AS_EXPM_PADE : AS_EXPM_EIGEN, NULL) == AS_OK, "set");
          AS_EXPECT(as_expm_eval_layers(p, dt, k, rho, Ep) == AS_OK, "layers");
          for (int i = 0; i < 36; i++) A[i] = Pw[i] / scale;
          double e = rel_diff(6, Ep, A);
          AS_EXPECT(e <= 1e3 * eps * (cond + 10), "layers k %ld path %d: %g", k, pth, e);
        }
        matmul(6, Pw, R, C);
        memcpy(Pw, C, sizeof C);
        scale *= rho;
      }
      /* Eigenbasis helpers: Y = G W^T with G = to_eigen(Z) is Z; W^T M W is symmetric for
       * symmetric M. */
      AS_EXPECT(as_expm_set(p, V, AS_EXPM_EIGEN, NULL) == AS_OK, "eigen");
      double Z[12], U[12], Y[12];
      as_rng_fill_normal(&r, Z, 12, 1.0);
      as_expm_to_eigen(p, 2, Z, U);
      as_expm_from_eigen(p, 2, U, Y);
      for (int i = 0; i < 12; i++) AS_EXPECT_CLOSE(Y[i], Z[i], 0, 1e3 * eps * cond);
      double M[36];
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) M[i * 6 + j] = M[j * 6 + i] = 1.0 / (1 + i + j);
      as_expm_congruence(p, M, A);
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < i; j++) AS_EXPECT_CLOSE(A[i * 6 + j], A[j * 6 + i], 1e-12, 1e-12);
    }
    as_expm_destroy(&p);
  }
  /* Symmetric V: eigenbasis, kappa ~ 1. */
  {
    double V[4] = {2.0, 1.0, 1.0, -1.0};
    as_expm_plan *p = NULL;
    as_expm path;
    AS_EXPECT(as_expm_create(2, &p) == AS_OK, "create");
    AS_EXPECT(as_expm_set(p, V, AS_EXPM_NONE, &path) == AS_OK && path == AS_EXPM_EIGEN,
              "symmetric goes eigen");
    AS_EXPECT(as_expm_cond(p) < 10.0, "cond %g", as_expm_cond(p));
    AS_EXPECT_CLOSE(as_expm_mu(p), 0.5 + sqrt(9.0 / 4.0 + 1.0), 1e-14, 0);
    /* Errors: non-finite V; eigenbasis forced on a defective V. */
    double bad[4] = {1.0, NAN, 0, 1.0}, J[4] = {1.0, 1.0, 0, 1.0};
    AS_EXPECT(as_expm_set(p, bad, AS_EXPM_NONE, &path) == AS_ERR_DATA, "NaN V rejected");
    AS_EXPECT(as_expm_set(p, J, AS_EXPM_EIGEN, &path) == AS_ERR_DATA, "defective eigen refused");
    AS_EXPECT(as_expm_set(p, J, AS_EXPM_NONE, &path) == AS_OK && path == AS_EXPM_PADE,
              "defective auto -> pade");
    as_error_clear();
    as_expm_destroy(&p);
    as_expm_destroy(&p); /* NULL is fine */
  }
  AS_EXPECT(as_expm_create(0, &(as_expm_plan *){NULL}) == AS_ERR_ARG, "d = 0 rejected");
  as_error_clear();
  return as_test_finish("test_expm");
}
