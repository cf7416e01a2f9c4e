/* Spectral analysis on triples whose spectra, eigenvectors and projectors are known in closed
 * form: flags, theorem choice and precedence, left/right eigenvector normalisation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/record.h"
#include "attnsweep/spectral.h"

#define TOL 1e-10

typedef struct fixture {
  as_triple *tr;
  as_spectral *sp;
} fixture;

/* Analyse V (d x d) with M (NULL: identity). Returns the analysis (valid until the next call). */
static as_spectral *analyse(fixture *fx, int d, const double *V, const double *M) {
  as_triple_destroy(&fx->tr);
  as_spectral_destroy(&fx->sp);
  if (as_triple_create(d, d, &fx->tr) != AS_OK || as_spectral_create(d, &fx->sp) != AS_OK)
    return NULL;
  memcpy(fx->tr->V, V, sizeof(double) * (size_t)d * d);
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) fx->tr->M[i * d + j] = M ? M[i * d + j] : (i == j ? 1.0 : 0.0);
  as_status st = as_spectral_analyze(fx->tr, TOL, fx->sp);
  AS_EXPECT(st == AS_OK, "analyze: %s", as_error_get()->message);
  return fx->sp;
}

static int has(const as_spectral *sp, uint32_t f) {
  return (sp->flags & f) == f;
}

/* max |A - B| over d x d */
static double maxdiff(int d, const double *A, const double *B) {
  double m = 0;
  for (int k = 0; k < d * d; k++) m = fmax(m, fabs(A[k] - B[k]));
  return m;
}

static void diag(int d, const double *v, double *A) {
  memset(A, 0, sizeof(double) * (size_t)d * d);
  for (int i = 0; i < d; i++) A[i * d + i] = v[i];
}

static void test_paper_good(fixture *fx) {
  /* The paper's hyperplane example: 2x2 closed forms. */
  const double a = 0.64709742, b = 0.81911926, c = 0.61210449, e = 0.63263484;
  const double V[4] = {a, b, c, e};
  as_spectral *sp = analyse(fx, 2, V, NULL);
  if (!sp) return;
  double tr = a + e, det = a * e - b * c, disc = sqrt(tr * tr / 4 - det);
  double l1 = tr / 2 + disc, l2 = tr / 2 - disc;
  AS_EXPECT_CLOSE(sp->wr[0], l1, 1e-13, 0);
  AS_EXPECT_CLOSE(sp->wr[1], l2, 1e-13, 1e-15);
  AS_EXPECT(sp->wi[0] == 0 && sp->wi[1] == 0, "real spectrum");
  AS_EXPECT_CLOSE(sp->gap, l1 - fabs(l2), 1e-13, 0);
  AS_EXPECT(has(sp, AS_FLAG_GOOD | AS_FLAG_LEAD_REAL | AS_FLAG_LEAD_POSITIVE | AS_FLAG_LEAD_SIMPLE |
                        AS_FLAG_LEAD_DOMINANT | AS_FLAG_MARGIN_POSITIVE),
            "flags 0x%x", sp->flags);
  AS_EXPECT(sp->theorem == AS_THM_GOOD && sp->predicted == AS_GEOM_HYPERPLANES,
            "theorem %d predicted %d", sp->theorem, sp->predicted);
  AS_EXPECT(sp->kpos == 1, "kpos %d", sp->kpos);
  /* Right eigenvector (b, l1 - a), left (c, l1 - a): V phi = l phi, V^T l = l l. */
  double phi[2] = {b, l1 - a}, lv[2] = {c, l1 - a};
  double np = hypot(phi[0], phi[1]);
  AS_EXPECT_CLOSE(sp->phi1[0], phi[0] / np, 1e-12, 0);
  AS_EXPECT_CLOSE(sp->phi1[1], phi[1] / np, 1e-12, 0);
  AS_EXPECT_CLOSE(sp->l1[0] * sp->phi1[0] + sp->l1[1] * sp->phi1[1], 1.0, 1e-14, 0);
  double dot = lv[0] * phi[0] + lv[1] * phi[1];
  AS_EXPECT_CLOSE(sp->l1[0], lv[0] * np / dot, 1e-12, 0);
  AS_EXPECT_CLOSE(sp->l1[1], lv[1] * np / dot, 1e-12, 0);
  for (int i = 0; i < 2; i++) {
    double rv = V[i * 2] * sp->phi1[0] + V[i * 2 + 1] * sp->phi1[1] - l1 * sp->phi1[i];
    double rl = V[i] * sp->l1[0] + V[2 + i] * sp->l1[1] - l1 * sp->l1[i];
    AS_EXPECT(fabs(rv) < 1e-14 && fabs(rl) < 1e-13, "eigen residuals %g %g", rv, rl);
  }
  double ang = acos(dot / (np * hypot(lv[0], lv[1]))) * 180 / 3.14159265358979323846;
  AS_EXPECT_CLOSE(sp->angle_l1_phi1, ang, 1e-9, 0);
  AS_EXPECT(sp->angle_l1_phi1 > 1 && sp->angle_l1_phi1 < 45, "left and right differ: %g deg",
            sp->angle_l1_phi1);
  AS_EXPECT_CLOSE(sp->margin, 1.0, 1e-14, 0); /* M = I, |phi| = 1 */
  /* dim F = 1 and M SPD: also paranormal, GOOD reported (documented precedence) */
  AS_EXPECT(has(sp, AS_FLAG_PARANORMAL) && sp->dim_f == 1, "paranormal with dim F 1");
  /* The same V with M = -I: margin -1, not good; kpos = 1 -> codimension conjecture. */
  const double Mneg[4] = {-1, 0, 0, -1};
  sp = analyse(fx, 2, V, Mneg);
  AS_EXPECT_CLOSE(sp->margin, -1.0, 1e-14, 0);
  AS_EXPECT(!has(sp, AS_FLAG_GOOD) && !has(sp, AS_FLAG_MARGIN_POSITIVE), "not good");
  AS_EXPECT(sp->theorem == AS_THM_CODIM && sp->predicted == AS_GEOM_SUBSPACES, "codim");
}

static void test_identities(fixture *fx) {
  double V[9], P[9], one[3] = {1, 1, 1}, m1[3] = {-1, -1, -1}, two[3] = {2, 2, 2};
  diag(3, one, V);
  as_spectral *sp = analyse(fx, 3, V, NULL);
  AS_EXPECT(sp->theorem == AS_THM_IDENTITY && sp->predicted == AS_GEOM_POLYTOPE, "identity %d",
            sp->theorem);
  AS_EXPECT(has(sp, AS_FLAG_V_IDENTITY | AS_FLAG_M_IDENTITY | AS_FLAG_M_SPD | AS_FLAG_PARANORMAL |
                        AS_FLAG_M_SYMMETRIC | AS_FLAG_V_DIAGONALISABLE),
            "flags 0x%x", sp->flags);
  AS_EXPECT(!has(sp, AS_FLAG_LEAD_SIMPLE) && !has(sp, AS_FLAG_GOOD), "not simple");
  AS_EXPECT(isnan(sp->phi1[0]) && isnan(sp->l1[0]) && isnan(sp->margin),
            "eigenvector undetermined for a multiple lambda_1");
  AS_EXPECT(sp->dim_f == 3 && sp->kpos == 3, "dim F %d kpos %d", sp->dim_f, sp->kpos);
  diag(3, one, P);
  AS_EXPECT(maxdiff(3, sp->proj_f, P) == 0, "P = I");
  AS_EXPECT_CLOSE(sp->eig_cond, 1.0, 1e-14, 0);
  /* V = 2I, M = 2I: positive multiples are rescalings of the theorem's I */
  diag(3, two, V);
  double M2[9];
  diag(3, two, M2);
  sp = analyse(fx, 3, V, M2);
  AS_EXPECT(sp->theorem == AS_THM_IDENTITY && has(sp, AS_FLAG_M_IDENTITY), "2I");
  /* V = -I, M = I: collapse */
  diag(3, m1, V);
  sp = analyse(fx, 3, V, NULL);
  AS_EXPECT(sp->theorem == AS_THM_MINUS_IDENTITY && sp->predicted == AS_GEOM_COLLAPSE,
            "minus identity %d", sp->theorem);
  AS_EXPECT(sp->kpos == 0 && sp->dim_f == 0 && !has(sp, AS_FLAG_LEAD_POSITIVE), "kpos 0");
  /* V = -I with a non-identity SPD M: no theorem */
  double Mspd[9] = {2, 1, 0, 1, 2, 0, 0, 0, 1};
  sp = analyse(fx, 3, V, Mspd);
  AS_EXPECT(sp->theorem == AS_THM_NONE && sp->predicted == AS_GEOM_NONE, "none %d", sp->theorem);
  AS_EXPECT(has(sp, AS_FLAG_M_SPD) && !has(sp, AS_FLAG_M_IDENTITY), "spd not identity");
  AS_EXPECT_CLOSE(sp->m_min_sym_eig, 1.0, 1e-14, 0);
}

static void test_paranormal(fixture *fx) {
  /* The paper's paranormal example V = diag(1, 1, -1/2). */
  double V[9], P[9], v[3] = {1, 1, -0.5}, p[3] = {1, 1, 0};
  diag(3, v, V);
  as_spectral *sp = analyse(fx, 3, V, NULL);
  AS_EXPECT(sp->theorem == AS_THM_PARANORMAL && sp->predicted == AS_GEOM_POLYTOPE_SUBSPACE,
            "paranormal theorem %d", sp->theorem);
  AS_EXPECT(has(sp, AS_FLAG_PARANORMAL) && sp->dim_f == 2, "dim F %d", sp->dim_f);
  diag(3, p, P);
  AS_EXPECT(maxdiff(3, sp->proj_f, P) < 1e-14, "P = diag(1,1,0): %g", maxdiff(3, sp->proj_f, P));
  /* Oblique: V = S diag(2, 2, 0.5, -1) S^{-1}, S upper unit triangular (exact inverse). */
  const double S[16] = {1, 0.5, 0.3, -0.2, 0, 1, 0.7, 0.4, 0, 0, 1, -0.6, 0, 0, 0, 1};
  double Si[16], D[16], T[16], V4[16], P4[16], dv[4] = {2, 2, 0.5, -1}, pv[4] = {1, 1, 0, 0};
  /* inverse of unit upper triangular S by back substitution */
  memset(Si, 0, sizeof Si);
  for (int j = 0; j < 4; j++) {
    for (int i = 3; i >= 0; i--) {
      double x = i == j ? 1.0 : 0.0;
      for (int k = i + 1; k < 4; k++) x -= S[i * 4 + k] * Si[k * 4 + j];
      Si[i * 4 + j] = x;
    }
  }
  diag(4, dv, D);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        double x = 0;
        for (int k = 0; k < 4; k++) x += S[i * 4 + k] * D[k * 4 + j];
        T[i * 4 + j] = x;
      }
    double *out = pass == 0 ? V4 : P4;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        double x = 0;
        for (int k = 0; k < 4; k++) x += T[i * 4 + k] * Si[k * 4 + j];
        out[i * 4 + j] = x;
      }
    diag(4, pv, D);
  }
  sp = analyse(fx, 4, V4, NULL);
  AS_EXPECT(has(sp, AS_FLAG_PARANORMAL) && sp->dim_f == 2 && sp->theorem == AS_THM_PARANORMAL,
            "oblique paranormal flags 0x%x dim %d", sp->flags, sp->dim_f);
  AS_EXPECT(maxdiff(4, sp->proj_f, P4) < 1e-12, "oblique projector error %g",
            maxdiff(4, sp->proj_f, P4));
  double asym = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) asym = fmax(asym, fabs(P4[i * 4 + j] - P4[j * 4 + i]));
  AS_EXPECT(asym > 0.1, "the projector along G is not orthogonal");
  /* Same eigenvalues with a Jordan block at lambda: not semisimple, not paranormal. */
  double J[16] = {2, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, -1};
  sp = analyse(fx, 4, J, NULL);
  AS_EXPECT(!has(sp, AS_FLAG_PARANORMAL), "Jordan block is not paranormal");
  AS_EXPECT(!has(sp, AS_FLAG_V_DIAGONALISABLE), "Jordan: eig_cond %g", sp->eig_cond);
  AS_EXPECT(sp->theorem == AS_THM_CODIM && sp->dim_f == 3, "codim, dim %d", sp->dim_f);
  /* Radius on G equal to lambda: not paranormal, not dominant. */
  double w[3] = {1, 0.5, -1};
  diag(3, w, V);
  sp = analyse(fx, 3, V, NULL);
  AS_EXPECT(!has(sp, AS_FLAG_PARANORMAL) && !has(sp, AS_FLAG_LEAD_DOMINANT), "tie in modulus");
  AS_EXPECT(sp->wr[0] == 1 && sp->wr[1] == -1, "ties sorted by real part");
  AS_EXPECT(sp->theorem == AS_THM_CODIM && sp->kpos == 2 && sp->dim_f == 2, "codim k = 2");
  double p2[3] = {1, 1, 0};
  diag(3, p2, P);
  AS_EXPECT(maxdiff(3, sp->proj_f, P) < 1e-14, "codim projector");
}

static void test_complex_and_codim(fixture *fx) {
  /* [[1, 2], [-2, 1]] (+) 0.5: leading pair 1 +- 2i */
  double V[9] = {1, 2, 0, -2, 1, 0, 0, 0, 0.5};
  as_spectral *sp = analyse(fx, 3, V, NULL);
  AS_EXPECT_CLOSE(sp->lambda1_re, 1.0, 1e-14, 0);
  AS_EXPECT_CLOSE(sp->lambda1_im, 2.0, 1e-14, 0);
  AS_EXPECT_CLOSE(sp->wi[1], -2.0, 1e-14, 0);
  AS_EXPECT_CLOSE(sp->lambda2_abs, sqrt(5.0), 1e-14, 0);
  AS_EXPECT_CLOSE(sp->mu, 1.0, 1e-14, 0);
  AS_EXPECT(has(sp, AS_FLAG_COMPLEX_LEAD) && !has(sp, AS_FLAG_LEAD_REAL), "complex flags");
  AS_EXPECT(sp->theorem == AS_THM_COMPLEX && sp->predicted == AS_GEOM_UNCLUSTERED, "complex");
  AS_EXPECT(isnan(sp->margin), "no margin for a complex lead");
  /* Real lead of largest modulus but max real part on a complex pair: 3 (+) (2.5 +- 1i)?
   * |2.5 + i| < 3 and Re 2.5 < 3: not complex-lead. Use -3 (+) (1 +- 2i): lead -3, mu = 1. */
  double W[9] = {-3, 0, 0, 0, 1, 2, 0, -2, 1};
  sp = analyse(fx, 3, W, NULL);
  AS_EXPECT(has(sp, AS_FLAG_COMPLEX_LEAD | AS_FLAG_LEAD_REAL) && sp->theorem == AS_THM_COMPLEX,
            "max real part on a pair: flags 0x%x", sp->flags);
  AS_EXPECT(sp->kpos == 2 && sp->dim_f == 2, "kpos %d", sp->kpos);
  /* Symmetric V with 2 positive and 1 negative eigenvalues (the paper's conjecture case), lead
   * negative: codim k = 2. */
  double Y[9] = {2, 0, 0, 0, 1, 0, 0, 0, -3};
  sp = analyse(fx, 3, Y, NULL);
  AS_EXPECT(sp->theorem == AS_THM_CODIM && sp->kpos == 2, "codim %d", sp->theorem);
  /* Non-symmetric M with SPD symmetric part: not SPD, m_asym and min eigenvalue known. */
  double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, M[9] = {2, 1, 0, -1, 3, 0, 0, 0, 4};
  sp = analyse(fx, 3, I3, M);
  AS_EXPECT(!has(sp, AS_FLAG_M_SYMMETRIC) && !has(sp, AS_FLAG_M_SPD), "M not symmetric");
  AS_EXPECT_CLOSE(sp->m_min_sym_eig, 2.0, 1e-14, 0);
  AS_EXPECT_CLOSE(sp->m_asym, sqrt(8.0) / sqrt(4 + 1 + 1 + 9 + 16.0), 1e-14, 0);
  /* V = I (k = d) with a non-symmetric M: the conjecture's literal reading at k = d ("at most
   * three points") is contradicted by Thm 3.1, so no theorem is judged. */
  AS_EXPECT(sp->theorem == AS_THM_NONE && sp->kpos == 3, "V = I, generic M: no theorem (%d)",
            sp->theorem);
  /* k = 2 < d, one repeated positive eigenvalue (lambda I on F, the paranormal shape) with a
   * non-SPD M: contradicted by Thm 5.1's polytope in F, not judged; split the pair by 1e-6
   * (far above the tolerance) and the conjecture applies again (M negative on the leading
   * eigenvector, so the split V is not a good triple). */
  double Pn[9] = {1, 0, 0, 0, 1, 0, 0, 0, -0.5}, Mx[9] = {-2, 1, 0, -1, 3, 0, 0, 0, 4};
  sp = analyse(fx, 3, Pn, Mx);
  AS_EXPECT(sp->kpos == 2 && sp->theorem == AS_THM_NONE, "lambda I on F, generic M: none (%d)",
            sp->theorem);
  Pn[0] = 1 + 1e-6;
  sp = analyse(fx, 3, Pn, Mx);
  AS_EXPECT(sp->kpos == 2 && sp->theorem == AS_THM_CODIM, "split pair: codim (%d)", sp->theorem);
  /* k = d with distinct eigenvalues and M = -I (not good: margin < 0): k = d, none. */
  double D2[4] = {2, 0, 0, 1}, Mm[4] = {-1, 0, 0, -1};
  sp = analyse(fx, 2, D2, Mm);
  AS_EXPECT(sp->kpos == 2 && sp->theorem == AS_THM_NONE, "k = d: none (%d)", sp->theorem);
  /* V = 0: nothing */
  double Z[4] = {0, 0, 0, 0};
  sp = analyse(fx, 2, Z, NULL);
  AS_EXPECT(sp->theorem == AS_THM_NONE && sp->kpos == 0 && sp->dim_f == 0, "zero V");
}

/* 3 x 3 products for the closed forms below. */
static void mul3(const double *A, const double *B, double *C) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double v = 0;
      for (int k = 0; k < 3; k++) v += A[i * 3 + k] * B[k * 3 + j];
      C[i * 3 + j] = v;
    }
}

/* The codimension conjecture reads pi_F z on F = the invariant subspace of the eigenvalues with
 * positive real part, dimension kpos, whatever the paranormal test says (issue 47): with lambda_1
 * simple and dominant the paranormal projector (onto lambda_1's eigenspace, dim 1) stands in
 * proj_f, and proj_pos must still be the Re > 0 one. */
static void test_codim_positive_subspace(fixture *fx) {
  /* V = diag(1, 1/2, -1/10), M = diag(-1, 1, 1): margin -1, not good; paranormal structure of
   * dimension 1; kpos = 2: codim_k, read on span(e1, e2). */
  double w[3] = {1, 0.5, -0.1}, m[3] = {-1, 1, 1}, V[9], M[9], P[9];
  diag(3, w, V);
  diag(3, m, M);
  as_spectral *sp = analyse(fx, 3, V, M);
  if (!sp) return;
  AS_EXPECT(has(sp, AS_FLAG_PARANORMAL) && sp->dim_f == 1 && !has(sp, AS_FLAG_GOOD),
            "diag: paranormal of dim %d, flags 0x%x", sp->dim_f, sp->flags);
  AS_EXPECT(sp->theorem == AS_THM_CODIM && sp->kpos == 2 && sp->dim_pos == 2,
            "diag: theorem %d, kpos %d, dim_pos %d", sp->theorem, sp->kpos, sp->dim_pos);
  double p2[3] = {1, 1, 0};
  diag(3, p2, P);
  AS_EXPECT(maxdiff(3, sp->proj_pos, P) < 1e-14, "diag: Re > 0 projector off by %g",
            maxdiff(3, sp->proj_pos, P));
  /* The same spectrum in an oblique basis S, M negative on phi_1: proj_pos = S diag(1, 1, 0)
   * S^{-1} (S^{-1} by its adjugate: det S = 1.008 - 0.012 + ... computed below). */
  const double S[9] = {1, 0.3, 0.2, 0, 1, 0.4, 0.1, 0, 1};
  double Si[9], T[9], D[9];
  const double det = S[0] * (S[4] * S[8] - S[5] * S[7]) - S[1] * (S[3] * S[8] - S[5] * S[6]) +
                     S[2] * (S[3] * S[7] - S[4] * S[6]);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) { /* Si_ij = cofactor_ji / det */
      const int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      Si[i * 3 + j] = (S[r0 * 3 + c0] * S[r1 * 3 + c1] - S[r0 * 3 + c1] * S[r1 * 3 + c0]) / det;
    }
  diag(3, w, D);
  mul3(S, D, T);
  mul3(T, Si, V);
  const double u0 = S[0], u1 = S[3], u2 = S[6], un = u0 * u0 + u1 * u1 + u2 * u2;
  const double u[3] = {u0, u1, u2};
  for (int i = 0; i < 3; i++) /* M = I - 3 u u^T / |u|^2: <phi_1, M phi_1> = -2 */
    for (int j = 0; j < 3; j++) M[i * 3 + j] = (i == j) - 3.0 * u[i] * u[j] / un;
  sp = analyse(fx, 3, V, M);
  diag(3, p2, D);
  mul3(S, D, T);
  mul3(T, Si, P);
  AS_EXPECT(sp->theorem == AS_THM_CODIM && sp->dim_f == 1 && sp->dim_pos == 2,
            "oblique: theorem %d, dim_f %d, dim_pos %d", sp->theorem, sp->dim_f, sp->dim_pos);
  AS_EXPECT(maxdiff(3, sp->proj_pos, P) < 1e-12, "oblique: Re > 0 projector off by %g",
            maxdiff(3, sp->proj_pos, P));
  /* Where proj_f already is that projector, proj_pos is its copy: codim without a paranormal
   * structure (a tie in modulus), and the paranormal theorem with dim F = kpos. */
  double t3[3] = {1, 0.5, -1};
  diag(3, t3, V);
  sp = analyse(fx, 3, V, NULL);
  AS_EXPECT(sp->theorem == AS_THM_CODIM && sp->dim_pos == 2 &&
                maxdiff(3, sp->proj_pos, sp->proj_f) == 0,
            "tie: dim_pos %d", sp->dim_pos);
  double pn[3] = {1, 1, -0.5};
  diag(3, pn, V);
  sp = analyse(fx, 3, V, NULL);
  AS_EXPECT(sp->theorem == AS_THM_PARANORMAL && sp->dim_pos == 2 &&
                maxdiff(3, sp->proj_pos, sp->proj_f) == 0,
            "paranormal: dim_pos %d", sp->dim_pos);
  /* Not needed: a good triple with kpos = 2 reads l_1 (dim_pos 0, nothing formed). */
  diag(3, w, V);
  sp = analyse(fx, 3, V, NULL);
  AS_EXPECT(sp->theorem == AS_THM_GOOD && sp->dim_f == 1 && sp->dim_pos == 0,
            "good: theorem %d, dim_pos %d", sp->theorem, sp->dim_pos);
}

static void test_d1(fixture *fx) {
  double v = 2, m = 3;
  as_spectral *sp = analyse(fx, 1, &v, &m);
  AS_EXPECT(sp->theorem == AS_THM_D1 && sp->predicted == AS_GEOM_BOOLEAN, "d1 %d", sp->theorem);
  AS_EXPECT(sp->lambda2_abs == 0 && sp->gap == 2 && sp->phi1[0] == 1 && sp->l1[0] == 1,
            "d = 1 vectors");
  AS_EXPECT_CLOSE(sp->margin, 3.0, 0, 0);
  v = -1;
  m = 1;
  sp = analyse(fx, 1, &v, &m);
  AS_EXPECT(sp->theorem == AS_THM_MINUS_IDENTITY, "d = 1, V < 0: %d", sp->theorem);
  v = 1;
  m = -1;
  sp = analyse(fx, 1, &v, &m);
  AS_EXPECT(sp->theorem != AS_THM_D1 && !has(sp, AS_FLAG_MARGIN_POSITIVE), "QK < 0");
}

static void test_errors(fixture *fx) {
  double V[4] = {1, NAN, 0, 1};
  as_triple *tr = NULL;
  as_spectral *sp = NULL;
  (void)fx;
  AS_EXPECT(as_triple_create(2, 2, &tr) == AS_OK && as_spectral_create(2, &sp) == AS_OK, "mk");
  memcpy(tr->V, V, sizeof V);
  as_error_clear();
  AS_EXPECT(as_spectral_analyze(tr, TOL, sp) == AS_ERR_DATA, "NaN V");
  AS_EXPECT(strstr(as_error_get()->message, "V(0, 1)") != NULL, "%s", as_error_get()->message);
  as_error_clear();
  AS_EXPECT(as_spectral_analyze(tr, 0.0, sp) == AS_ERR_ARG, "tol 0");
  as_error_clear();
  as_spectral *s3 = NULL;
  AS_EXPECT(as_spectral_create(3, &s3) == AS_OK, "mk3");
  tr->V[1] = 0;
  AS_EXPECT(as_spectral_analyze(tr, TOL, s3) == AS_ERR_ARG, "shape mismatch");
  as_error_clear();
  as_spectral_destroy(&s3);
  as_spectral_destroy(&sp);
  as_triple_destroy(&tr);
  as_spectral_destroy(&sp); /* NULL-safe */
  AS_EXPECT(sp == NULL && tr == NULL, "destroy clears");
}

/* ---------------------------------------------------------------- factored V = VL VR
 *
 * as_spectral_analyze_factored against as_spectral_analyze on the product: the two agree within
 * the analysis' own tolerance (TOL * scale on eigenvalues: a larger difference could flip a flag),
 * and the factored path's projector is a projector onto an invariant subspace of V. */

static double unit_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0 - 0.5;
}

/* dim_pos and theorem of the last compare_factored. */
static int last_dim_pos, last_theorem;

/* Compares both paths on V = VL VR (d x r, r x d) and M; returns the factored analysis' dim_f
 * and its flags in *flags. */
static int compare_factored(int d, int r, const double *VL, const double *VR, const double *M,
                            const char *what, uint32_t *flags) {
  as_triple *tr = NULL;
  as_spectral *full = NULL, *fac = NULL;
  int dim = -1;
  if (as_triple_create(d, d, &tr) != AS_OK || as_spectral_create(d, &full) != AS_OK ||
      as_spectral_create(d, &fac) != AS_OK) {
    AS_EXPECT(0, "%s: create", what);
    goto done;
  }
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double v = 0;
      for (int q = 0; q < r; q++) v += VL[i * r + q] * VR[q * d + j];
      tr->V[i * d + j] = v;
      tr->M[i * d + j] = M[i * d + j];
    }
  AS_EXPECT(as_spectral_analyze(tr, TOL, full) == AS_OK, "%s: full", what);
  AS_EXPECT(as_spectral_analyze_factored(tr, r, VL, VR, TOL, fac) == AS_OK, "%s: factored: %s",
            what, as_error_get()->message);
  double scale = as_spectral_eig_scale(full);
  for (int i = 0; i < d; i++)
    AS_EXPECT(hypot(full->wr[i] - fac->wr[i], full->wi[i] - fac->wi[i]) <= TOL * scale,
              "%s: eigenvalue %d: %g%+gi and %g%+gi", what, i, full->wr[i], full->wi[i], fac->wr[i],
              fac->wi[i]);
  for (int i = r; i < d; i++) /* at least d - r exact zeros, at the end of the sorted list */
    AS_EXPECT(fac->wr[i] == 0 && fac->wi[i] == 0, "%s: eigenvalue %d = %g", what, i, fac->wr[i]);
  const uint32_t diag = AS_FLAG_V_DIAGONALISABLE;
  AS_EXPECT((full->flags & ~diag) == (fac->flags & ~diag), "%s: flags 0x%x and 0x%x", what,
            full->flags, fac->flags);
  AS_EXPECT(!(fac->flags & diag) && isnan(fac->eig_cond), "%s: eig_cond %g", what, fac->eig_cond);
  AS_EXPECT(full->theorem == fac->theorem && full->predicted == fac->predicted,
            "%s: theorem %d and %d", what, full->theorem, fac->theorem);
  AS_EXPECT(full->kpos == fac->kpos && full->dim_f == fac->dim_f, "%s: kpos %d/%d dim_f %d/%d",
            what, full->kpos, fac->kpos, full->dim_f, fac->dim_f);
  AS_EXPECT(full->m_min_sym_eig == fac->m_min_sym_eig, "%s: min eig sym(M)", what);
  if (isnan(full->margin)) {
    AS_EXPECT(isnan(fac->margin) && isnan(fac->phi1[0]), "%s: margin %g", what, fac->margin);
  } else {
    AS_EXPECT_CLOSE(fac->margin, full->margin, 1e-8, 1e-12);
    AS_EXPECT_CLOSE(fac->angle_l1_phi1, full->angle_l1_phi1, 1e-8, 1e-8);
    for (int i = 0; i < d; i++) {
      AS_EXPECT_CLOSE(fac->phi1[i], full->phi1[i], 1e-8, 1e-10);
      AS_EXPECT_CLOSE(fac->l1[i], full->l1[i], 1e-8, 1e-10);
    }
  }
  if (fac->dim_f > 0) {
    /* P^2 = P and V P = P V (a projector onto an invariant subspace), trace dim_f, and P equal
     * to the full path's. */
    double e2 = 0, ec = 0, pn = 0, tp = 0;
    for (int i = 0; i < d; i++) {
      tp += fac->proj_f[i * d + i];
      for (int j = 0; j < d; j++) {
        double pp = 0, vp = 0, pv = 0;
        for (int k = 0; k < d; k++) {
          pp += fac->proj_f[i * d + k] * fac->proj_f[k * d + j];
          vp += tr->V[i * d + k] * fac->proj_f[k * d + j];
          pv += fac->proj_f[i * d + k] * tr->V[k * d + j];
        }
        e2 = fmax(e2, fabs(pp - fac->proj_f[i * d + j]));
        ec = fmax(ec, fabs(vp - pv));
        pn = fmax(pn, fabs(fac->proj_f[i * d + j]));
      }
    }
    AS_EXPECT(e2 <= 1e-9 * pn && ec <= 1e-9 * pn * scale, "%s: P^2 - P %g, VP - PV %g", what, e2,
              ec);
    AS_EXPECT_CLOSE(tp, fac->dim_f, 1e-9, 0);
    AS_EXPECT(maxdiff(d, fac->proj_f, full->proj_f) <= 1e-8 * pn, "%s: projectors differ by %g",
              what, maxdiff(d, fac->proj_f, full->proj_f));
  }
  AS_EXPECT(full->dim_pos == fac->dim_pos, "%s: dim_pos %d/%d", what, full->dim_pos, fac->dim_pos);
  if (fac->dim_pos > 0) {
    double pn = 0;
    for (int k = 0; k < d * d; k++) pn = fmax(pn, fabs(full->proj_pos[k]));
    AS_EXPECT(maxdiff(d, fac->proj_pos, full->proj_pos) <= 1e-8 * pn,
              "%s: Re > 0 projectors differ by %g", what,
              maxdiff(d, fac->proj_pos, full->proj_pos));
  }
  dim = fac->dim_f;
  *flags = fac->flags;
  last_dim_pos = fac->dim_pos;
  last_theorem = fac->theorem;
done:
  as_spectral_destroy(&full);
  as_spectral_destroy(&fac);
  as_triple_destroy(&tr);
  return dim;
}

static void test_factored(fixture *fx) {
  enum { d = 24, r = 4 };
  double VL[d * r], VR[r * d], M[d * d];
  uint64_t s = 12345;
  (void)fx;
  for (int k = 0; k < d * d; k++) M[k] = unit_rand(&s);
  for (int i = 0; i < d; i++) M[i * d + i] += 6.0; /* positive margin on most vectors */
  /* Random factors, several seeds: whatever the spectrum, both paths agree. */
  for (int rep = 0; rep < 6; rep++) {
    for (int k = 0; k < d * r; k++) {
      VL[k] = unit_rand(&s);
      VR[k] = unit_rand(&s);
    }
    uint32_t f;
    compare_factored(d, r, VL, VR, M, "random", &f);
  }
  /* VL = the first r unit vectors: C = VR VL = VR's first r columns, V = [[C, B], [0, 0]]. */
  const double blocks[4][16] = {
      {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0.5},     /* double lead: paranormal, F 2-dim */
      {2, 1, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0.5},     /* Jordan block: not paranormal */
      {1, -2, 0, 0, 2, 1, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, -1},   /* complex lead */
      {-1, 0, 0, 0, 0, -2, 0, 0, 0, 0, -0.5, 0, 0, 0, 0, -3}, /* no positive eigenvalue */
  };
  const int want_dim[4] = {2, 4, 3, 0}, want_par[4] = {1, 0, 0, 0};
  for (int b = 0; b < 4; b++) {
    memset(VL, 0, sizeof VL);
    for (int q = 0; q < r; q++) VL[q * r + q] = 1.0;
    for (int q = 0; q < r; q++)
      for (int j = 0; j < d; j++)
        VR[q * d + j] = j < r ? blocks[b][q * r + j] : 0.3 * unit_rand(&s);
    char what[32];
    snprintf(what, sizeof what, "block %d", b);
    uint32_t f = 0;
    int dim = compare_factored(d, r, VL, VR, M, what, &f);
    AS_EXPECT(dim == want_dim[b], "%s: dim_f %d, want %d", what, dim, want_dim[b]);
    AS_EXPECT(!!(f & AS_FLAG_PARANORMAL) == want_par[b], "%s: flags 0x%x", what, f);
  }
  /* lambda_1 simple and dominant (paranormal of dim 1), M negative on phi_1 = e_1: codim_k
   * read on the Re > 0 subspace of dim 3, formed by the factored path too. */
  {
    const double c4[16] = {1, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, -0.1, 0, 0, 0, 0, 0.2};
    double M2[d * d];
    memcpy(M2, M, sizeof M2);
    M2[0] = -10.0;
    memset(VL, 0, sizeof VL);
    for (int q = 0; q < r; q++) VL[q * r + q] = 1.0;
    for (int q = 0; q < r; q++)
      for (int j = 0; j < d; j++) VR[q * d + j] = j < r ? c4[q * r + j] : 0.3 * unit_rand(&s);
    uint32_t f = 0;
    int dim = compare_factored(d, r, VL, VR, M2, "codim, paranormal dim 1", &f);
    AS_EXPECT(dim == 1 && (f & AS_FLAG_PARANORMAL) && last_theorem == AS_THM_CODIM &&
                  last_dim_pos == 3,
              "codim, paranormal dim 1: dim_f %d, theorem %d, dim_pos %d", dim, last_theorem,
              last_dim_pos);
  }
  /* Arguments: r must be in 1..d-1. */
  as_triple *tr = NULL;
  as_spectral *sp = NULL;
  if (as_triple_create(d, d, &tr) == AS_OK && as_spectral_create(d, &sp) == AS_OK) {
    as_error_clear();
    AS_EXPECT(as_spectral_analyze_factored(tr, d, VL, VR, TOL, sp) == AS_ERR_ARG, "r = d");
    as_error_clear();
    AS_EXPECT(as_spectral_analyze_factored(tr, 0, VL, VR, TOL, sp) == AS_ERR_ARG, "r = 0");
    as_error_clear();
  }
  as_spectral_destroy(&sp);
  as_triple_destroy(&tr);
}

int main(void) {
  fixture fx = {0};
  test_paper_good(&fx);
  test_identities(&fx);
  test_paranormal(&fx);
  test_complex_and_codim(&fx);
  test_codim_positive_subspace(&fx);
  test_d1(&fx);
  test_errors(&fx);
  test_factored(&fx);
  as_triple_destroy(&fx.tr);
  as_spectral_destroy(&fx.sp);
  return as_test_finish("test_spectral");
}
