/* spectral.c: spectral analysis of a triple with LAPACK (one rank) and the shared steps that
 * turn numbers into flags and a theorem (also used by the ScaLAPACK path, par/pspectral.c).
 *
 * Row-major V handed to LAPACK as a column-major array is V^T: dgeev on it returns the left
 * eigenvectors of V as its "right" ones and the right eigenvectors of V as its "left" ones.
 */
#include "attnsweep/spectral.h"

#include "attnsweep/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/record.h"
#include "attnsweep/theorem.h"
#include "linalg.h"

as_status as_spectral_copy(const as_spectral *src, as_spectral *dst) {
  as_status st = AS_OK;
  AS_CHECK(src && dst && src->d == dst->d, AS_ERR_ARG, "spectral copy: shapes differ");
  size_t d = (size_t)src->d;
  double *wr = dst->wr, *wi = dst->wi, *phi1 = dst->phi1, *l1 = dst->l1, *pf = dst->proj_f,
         *pp = dst->proj_pos;
  *dst = *src;
  dst->wr = wr;
  dst->wi = wi;
  dst->phi1 = phi1;
  dst->l1 = l1;
  dst->proj_f = pf;
  dst->proj_pos = pp;
  memcpy(wr, src->wr, d * sizeof *wr);
  memcpy(wi, src->wi, d * sizeof *wi);
  memcpy(phi1, src->phi1, d * sizeof *phi1);
  memcpy(l1, src->l1, d * sizeof *l1);
  memcpy(pf, src->proj_f, d * d * sizeof *pf);
  if (src->dim_pos > 0) memcpy(pp, src->proj_pos, d * d * sizeof *pp); /* else not read */
cleanup:
  return st;
}

as_status as_spectral_create(int d, as_spectral **out) {
  as_status st = AS_OK;
  as_spectral *sp = NULL;
  AS_CHECK(d >= 1 && d <= AS_MAX_D, AS_ERR_ARG, "spectral: dimension d = %d out of range", d);
  AS_CHECK(out != NULL, AS_ERR_ARG, "spectral: out is NULL");
  sp = calloc(1, sizeof *sp);
  AS_CHECK_ALLOC(sp);
  sp->d = d;
  size_t dd = (size_t)d;
  sp->wr = calloc(dd, sizeof(double));
  AS_CHECK_ALLOC(sp->wr);
  sp->wi = calloc(dd, sizeof(double));
  AS_CHECK_ALLOC(sp->wi);
  sp->phi1 = calloc(dd, sizeof(double));
  AS_CHECK_ALLOC(sp->phi1);
  sp->l1 = calloc(dd, sizeof(double));
  AS_CHECK_ALLOC(sp->l1);
  sp->proj_f = calloc(dd * dd, sizeof(double));
  AS_CHECK_ALLOC(sp->proj_f);
  sp->proj_pos = calloc(dd * dd, sizeof(double));
  AS_CHECK_ALLOC(sp->proj_pos);
  *out = sp;
  sp = NULL;
cleanup:
  as_spectral_destroy(&sp);
  return st;
}

void as_spectral_destroy(as_spectral **p) {
  if (p == NULL || *p == NULL) return;
  as_spectral *sp = *p;
  free(sp->wr);
  free(sp->wi);
  free(sp->phi1);
  free(sp->l1);
  free(sp->proj_f);
  free(sp->proj_pos);
  free(sp);
  *p = NULL;
}

/* ---------------------------------------------------------------- shared steps */

/* a before b in the documented order (modulus, real part, imaginary part, all decreasing). */
static int eig_before(double ar, double ai, double br, double bi) {
  double ma = hypot(ar, ai), mb = hypot(br, bi);
  if (ma != mb) return ma > mb;
  if (ar != br) return ar > br;
  return ai > bi;
}

void as_spectral_sort_eigs(int d, double *wr, double *wi) {
  /* Insertion sort: O(d^2) comparisons, negligible beside the O(d^3) eigensolver, and no
   * allocation. */
  for (int i = 1; i < d; i++) {
    double r = wr[i], im = wi[i];
    int j = i - 1;
    while (j >= 0 && eig_before(r, im, wr[j], wi[j])) {
      wr[j + 1] = wr[j];
      wi[j + 1] = wi[j];
      j--;
    }
    wr[j + 1] = r;
    wi[j + 1] = im;
  }
}

double as_spectral_eig_scale(const as_spectral *sp) {
  double s = hypot(sp->wr[0], sp->wi[0]);
  return s > 0 ? s : 1.0;
}

/* V (or M) = c I entrywise within tol |c|; returns c through *c (mean of the diagonal). */
static int is_multiple_of_identity(int d, const double *A, double tol, double *c) {
  double s = 0;
  for (int i = 0; i < d; i++) s += A[(size_t)i * d + i];
  s /= d;
  *c = s;
  if (s == 0) return 0;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double want = i == j ? s : 0.0;
      if (!(fabs(A[(size_t)i * d + j] - want) <= tol * fabs(s))) return 0;
    }
  return 1;
}

void as_spectral_from_eigs(const as_triple *tr, double tol, as_spectral *sp) {
  int d = sp->d;
  double scale = as_spectral_eig_scale(sp), et = tol * scale;
  uint32_t f = 0;
  sp->lambda1_re = sp->wr[0];
  sp->lambda1_im = sp->wi[0];
  sp->lambda2_abs = d > 1 ? hypot(sp->wr[1], sp->wi[1]) : 0.0;
  sp->gap = sp->lambda1_re - sp->lambda2_abs;
  double mu = -INFINITY;
  int kpos = 0;
  for (int i = 0; i < d; i++) {
    if (sp->wr[i] > mu) mu = sp->wr[i];
    if (sp->wr[i] > et) kpos++;
  }
  sp->mu = mu;
  sp->kpos = kpos;
  if (fabs(sp->lambda1_im) <= et) f |= AS_FLAG_LEAD_REAL;
  if ((f & AS_FLAG_LEAD_REAL) && sp->lambda1_re > et) f |= AS_FLAG_LEAD_POSITIVE;
  int copies = 0;
  for (int i = 1; i < d; i++)
    if (hypot(sp->wr[i] - sp->lambda1_re, sp->wi[i] - sp->lambda1_im) <= et) copies++;
  if (copies == 0) f |= AS_FLAG_LEAD_SIMPLE;
  if ((f & AS_FLAG_LEAD_REAL) && sp->gap > et) f |= AS_FLAG_LEAD_DOMINANT;
  for (int i = 0; i < d; i++)
    if (sp->wr[i] >= mu - et && fabs(sp->wi[i]) > et) f |= AS_FLAG_COMPLEX_LEAD;
  double c;
  if (is_multiple_of_identity(d, tr->V, tol, &c))
    f |= c > 0 ? AS_FLAG_V_IDENTITY : AS_FLAG_V_MINUS_IDENTITY;
  if (is_multiple_of_identity(d, tr->M, tol, &c) && c > 0) f |= AS_FLAG_M_IDENTITY;
  double num = 0, den = 0;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double a = tr->M[(size_t)i * d + j], b = tr->M[(size_t)j * d + i];
      num += (a - b) * (a - b);
      den += a * a;
    }
  sp->m_asym = den > 0 ? sqrt(num / den) : 0.0;
  if (sp->m_asym <= tol) f |= AS_FLAG_M_SYMMETRIC;
  sp->flags = f;
}

void as_spectral_set_vectors(const as_triple *tr, double tol, as_spectral *sp) {
  int d = sp->d;
  (void)tol;
  int ok = (sp->flags & AS_FLAG_LEAD_REAL) && (sp->flags & AS_FLAG_LEAD_SIMPLE);
  double nphi = 0, amax = 0, dot = 0;
  for (int i = 0; i < d && ok; i++) {
    if (!isfinite(sp->phi1[i]) || !isfinite(sp->l1[i])) ok = 0;
    nphi += sp->phi1[i] * sp->phi1[i];
    if (fabs(sp->phi1[i]) > amax) amax = fabs(sp->phi1[i]);
  }
  if (ok && nphi > 0) {
    nphi = sqrt(nphi);
    int first = 0;
    while (fabs(sp->phi1[first]) < (1.0 - 1e-8) * amax) first++;
    double s = (sp->phi1[first] > 0 ? 1.0 : -1.0) / nphi;
    for (int i = 0; i < d; i++) sp->phi1[i] *= s;
    for (int i = 0; i < d; i++) dot += sp->l1[i] * sp->phi1[i];
  }
  if (!ok || !(nphi > 0) || dot == 0 || !isfinite(dot)) {
    for (int i = 0; i < d; i++) sp->phi1[i] = sp->l1[i] = NAN;
    sp->margin = NAN;
    sp->angle_l1_phi1 = NAN;
    return;
  }
  double nl = 0;
  for (int i = 0; i < d; i++) {
    sp->l1[i] /= dot;
    nl += sp->l1[i] * sp->l1[i];
  }
  /* margin = phi^T M phi, summed row by row */
  double m = 0;
  for (int i = 0; i < d; i++) {
    double r = 0;
    for (int j = 0; j < d; j++) r += tr->M[(size_t)i * d + j] * sp->phi1[j];
    m += sp->phi1[i] * r;
  }
  sp->margin = m;
  double cosang = 1.0 / sqrt(nl); /* l1^T phi1 = 1, |phi1| = 1 */
  if (cosang > 1) cosang = 1;
  sp->angle_l1_phi1 = acos(cosang) * (180.0 / 3.14159265358979323846);
}

int as_spectral_projector_plan(const as_spectral *sp, double tol, int paranormal, double *shift,
                               int *dim) {
  int d = sp->d;
  double scale = as_spectral_eig_scale(sp), et = tol * scale;
  *shift = 0;
  *dim = 0;
  if (paranormal) {
    if (!(sp->flags & AS_FLAG_LEAD_REAL) || !(sp->flags & AS_FLAG_LEAD_POSITIVE)) return 0;
    double lam = sp->lambda1_re;
    int m = 0;
    double rest_re = -INFINITY;
    for (int i = 0; i < d; i++) {
      if (hypot(sp->wr[i] - lam, sp->wi[i]) <= et) {
        m++;
      } else {
        if (!(hypot(sp->wr[i], sp->wi[i]) < lam - et)) return 0; /* radius on G too large */
        if (sp->wr[i] > rest_re) rest_re = sp->wr[i];
      }
    }
    *dim = m;
    if (m == d) return 3;
    *shift = 0.5 * (lam + rest_re);
    return 1;
  }
  if (sp->kpos < 1) return 0;
  *dim = sp->kpos;
  if (sp->kpos == d) return 3;
  double lo_pos = INFINITY, hi_rest = -INFINITY;
  for (int i = 0; i < d; i++) {
    if (sp->wr[i] > et) {
      if (sp->wr[i] < lo_pos) lo_pos = sp->wr[i];
    } else if (sp->wr[i] > hi_rest) {
      hi_rest = sp->wr[i];
    }
  }
  *shift = 0.5 * (lo_pos + hi_rest);
  return 2;
}

int as_spectral_pos_from_f(as_spectral *sp) {
  sp->dim_pos = 0;
  if (sp->kpos < 1) return 0;
  if (sp->dim_f == sp->kpos) {
    memcpy(sp->proj_pos, sp->proj_f, (size_t)sp->d * (size_t)sp->d * sizeof *sp->proj_pos);
    sp->dim_pos = sp->kpos;
    return 0;
  }
  return sp->theorem == AS_THM_CODIM;
}

void as_spectral_decide(const as_triple *tr, double tol, as_spectral *sp) {
  uint32_t f = sp->flags;
  f &= ~(uint32_t)(AS_FLAG_MARGIN_POSITIVE | AS_FLAG_M_SPD | AS_FLAG_GOOD);
  if (isfinite(sp->margin) && sp->margin > 0) f |= AS_FLAG_MARGIN_POSITIVE;
  /* Positive definiteness relative to ||M||_F (an upper bound of the spectral norm that both
   * paths compute the same way from the replicated M). */
  double mn = 0;
  int d = tr->d;
  for (size_t i = 0; i < (size_t)d * d; i++) mn += tr->M[i] * tr->M[i];
  mn = sqrt(mn);
  if ((f & AS_FLAG_M_SYMMETRIC) && sp->m_min_sym_eig > tol * mn) f |= AS_FLAG_M_SPD;
  const uint32_t good = AS_FLAG_LEAD_REAL | AS_FLAG_LEAD_POSITIVE | AS_FLAG_LEAD_SIMPLE |
                        AS_FLAG_LEAD_DOMINANT | AS_FLAG_MARGIN_POSITIVE;
  if ((f & good) == good) f |= AS_FLAG_GOOD;
  sp->flags = f;

  /* The theorem: the first row of the table (theorem.h) whose hypotheses hold. */
  sp->theorem = as_theorem_select(AS_THM_MODEL_BASE, tr, sp, tol, &sp->predicted);
}

/* ---------------------------------------------------------------- LAPACK path */

/* P = (I + sign(V - cI))/2 by the scaled Newton iteration S <- (mu S + (mu S)^{-1})/2 with
 * determinant scaling mu = |det S|^{-1/d}. The buffers are used as column-major arrays: the
 * iteration commutes with transposition, so the row-major result is sign(V - cI) itself.
 * Returns 1 on convergence, 0 when the iteration fails (singular or no convergence). */
static int sign_projector(int d, const double *V, double c, double *P, double *S, double *work,
                          int lwork, int *ipiv) {
  size_t dd = (size_t)d * d;
  memcpy(S, V, dd * sizeof(double));
  for (int i = 0; i < d; i++) S[(size_t)i * d + i] -= c;
  int scaling = 1;
  for (int it = 0; it < AS_SIGN_MAX_ITERS; it++) {
    memcpy(P, S, dd * sizeof(double));
    int info = 0;
    dgetrf_(&d, &d, P, &d, ipiv, &info);
    if (info != 0) return 0;
    double mu = 1.0;
    if (scaling) {
      double logdet = 0;
      for (int i = 0; i < d; i++) logdet += log(fabs(P[(size_t)i * d + i]));
      mu = exp(-logdet / d);
    }
    dgetri_(&d, P, &d, ipiv, work, &lwork, &info);
    if (info != 0) return 0;
    double diff = 0, nrm = 0;
    for (size_t k = 0; k < dd; k++) {
      double s = 0.5 * (mu * S[k] + P[k] / mu);
      diff += (s - S[k]) * (s - S[k]);
      nrm += s * s;
      S[k] = s;
    }
    if (!isfinite(nrm)) return 0;
    if (diff <= AS_SIGN_UNSCALE * AS_SIGN_UNSCALE * nrm) scaling = 0;
    if (diff <= AS_SIGN_RTOL * AS_SIGN_RTOL * nrm) {
      for (size_t k = 0; k < dd; k++) P[k] = 0.5 * S[k];
      for (int i = 0; i < d; i++) P[(size_t)i * d + i] += 0.5;
      return 1;
    }
  }
  return 0;
}

/* ||V P - lam P||_F / (|lam| ||P||_F) (row-major). */
static double eigenspace_residual(int d, const double *V, const double *P, double lam, double *R) {
  memcpy(R, P, (size_t)d * d * sizeof(double));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, V, d, P, d, -lam, R, d);
  double r = 0, p = 0;
  for (size_t k = 0; k < (size_t)d * d; k++) {
    r += R[k] * R[k];
    p += P[k] * P[k];
  }
  return sqrt(r) / (fabs(lam) * sqrt(p));
}

static void set_identity(int d, double *P) {
  memset(P, 0, (size_t)d * d * sizeof(double));
  for (int i = 0; i < d; i++) P[(size_t)i * d + i] = 1.0;
}

/* The projector of as_spectral_projector_plan(pass) into P (d x d, zero when it fails) with
 * its checks: the trace is its dimension *dim, and for the paranormal pass (1) the eigenspace
 * residual is below AS_SPECTRAL_SEMISIMPLE_TOL. Returns 1 when P holds it. S, R: d x d scratch;
 * work, lwork, ipiv: as_spectral_analyze's. */
static int lapack_projector(const as_triple *tr, const as_spectral *sp, double tol, int pass,
                            double *P, int *dim, double *S, double *R, double *work, int lwork,
                            int *ipiv) {
  const int d = tr->d;
  double c;
  int plan = as_spectral_projector_plan(sp, tol, pass, &c, dim), ok = 1;
  if (plan == 0) return 0;
  if (plan == 3)
    set_identity(d, P);
  else
    ok = sign_projector(d, tr->V, c, P, S, work, lwork, ipiv);
  if (ok) {
    double tr_p = 0;
    for (int i = 0; i < d; i++) tr_p += P[(size_t)i * d + i];
    ok = fabs(tr_p - *dim) < 0.5;
  }
  if (ok && pass == 1)
    ok = eigenspace_residual(d, tr->V, P, sp->lambda1_re, R) <= AS_SPECTRAL_SEMISIMPLE_TOL;
  if (!ok) memset(P, 0, (size_t)d * d * sizeof *P);
  return ok;
}

/* The smallest eigenvalue of (M + M^T)/2 into *out (A: d x d scratch, wr: d). Shared by the
 * full and the factored analysis, so that both give the same bits. */
static as_status m_min_sym_eig(const as_triple *tr, double *A, double *wr, double *work, int lwork,
                               double *out) {
  as_status st = AS_OK;
  int d = tr->d, info = 0;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++)
      A[(size_t)i * d + j] = 0.5 * (tr->M[(size_t)i * d + j] + tr->M[(size_t)j * d + i]);
  dsyev_("N", "U", &d, A, &d, wr, work, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dsyev", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "dsyev: failed to converge (info %d)", info);
  *out = wr[0];
cleanup:
  return st;
}

as_status as_spectral_analyze(const as_triple *tr, double tol, as_spectral *sp) {
  as_status st = AS_OK;
  double *A = NULL, *VL = NULL, *VR = NULL, *work = NULL, *S = NULL, *R = NULL, *wr = NULL,
         *wi = NULL;
  int *ipiv = NULL;
  AS_CHECK(tr != NULL && sp != NULL, AS_ERR_ARG, "spectral: NULL argument");
  AS_CHECK(tr->d == sp->d, AS_ERR_ARG, "spectral: triple d = %d, analysis d = %d", tr->d, sp->d);
  AS_CHECK(tol > 0 && tol < 1, AS_ERR_ARG, "spectral: tolerance %g not in (0, 1)", tol);
  int d = tr->d;
  size_t dd = (size_t)d * d;
  for (size_t k = 0; k < dd; k++) {
    AS_CHECK(isfinite(tr->V[k]), AS_ERR_DATA, "spectral: V(%zu, %zu) is not finite", k / d, k % d);
    AS_CHECK(isfinite(tr->M[k]), AS_ERR_DATA, "spectral: M(%zu, %zu) is not finite", k / d, k % d);
  }
  A = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(A);
  VL = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(VL);
  VR = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(VR);
  S = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(S);
  R = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(R);
  wr = malloc((size_t)d * sizeof(double));
  AS_CHECK_ALLOC(wr);
  wi = malloc((size_t)d * sizeof(double));
  AS_CHECK_ALLOC(wi);
  ipiv = malloc((size_t)d * sizeof(int));
  AS_CHECK_ALLOC(ipiv);

  /* Workspace: one query for the largest need (dgeev, dsyev, dgesvd, dgetri). */
  int info = 0, lwork = -1, lw;
  double q = 0;
  dgeev_("V", "V", &d, A, &d, wr, wi, VL, &d, VR, &d, &q, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dgeev (query)", info);
  lw = (int)q;
  dsyev_("N", "U", &d, A, &d, wr, &q, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dsyev (query)", info);
  if ((int)q > lw) lw = (int)q;
  dgesvd_("N", "N", &d, &d, A, &d, wr, NULL, &d, NULL, &d, &q, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dgesvd (query)", info);
  if ((int)q > lw) lw = (int)q;
  if (64 * d > lw) lw = 64 * d; /* dgetri blocked */
  lwork = lw;
  work = malloc((size_t)lwork * sizeof(double));
  AS_CHECK_ALLOC(work);

  /* Eigenvalues and both eigenvector sets of V (see the file comment for the roles). */
  memcpy(A, tr->V, dd * sizeof(double));
  dgeev_("V", "V", &d, A, &d, wr, wi, VL, &d, VR, &d, work, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dgeev", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "dgeev: QR algorithm failed to converge (info %d)", info);
  int lead = 0;
  for (int i = 1; i < d; i++)
    if (eig_before(wr[i], wi[i], wr[lead], wi[lead])) lead = i;
  memcpy(sp->wr, wr, (size_t)d * sizeof(double));
  memcpy(sp->wi, wi, (size_t)d * sizeof(double));
  as_spectral_sort_eigs(d, sp->wr, sp->wi);
  as_spectral_from_eigs(tr, tol, sp);

  /* Right eigenvector of V = dgeev's left one (VL), left eigenvector = VR. For a complex
   * lead the real part is copied and set_vectors turns it into NaN. */
  memcpy(sp->phi1, VL + (size_t)lead * d, (size_t)d * sizeof(double));
  memcpy(sp->l1, VR + (size_t)lead * d, (size_t)d * sizeof(double));
  as_spectral_set_vectors(tr, tol, sp);

  /* Condition number of the eigenvector matrix (columns of unit norm, complex pairs as
   * their real and imaginary parts). */
  memcpy(A, VL, dd * sizeof(double));
  dgesvd_("N", "N", &d, &d, A, &d, wr, NULL, &d, NULL, &d, work, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dgesvd", info);
  if (info == 0)
    sp->eig_cond = wr[d - 1] > 0 ? wr[0] / wr[d - 1] : INFINITY;
  else
    sp->eig_cond = NAN;
  if (sp->eig_cond <= AS_SPECTRAL_DIAG_COND_MAX) sp->flags |= AS_FLAG_V_DIAGONALISABLE;

  /* Smallest eigenvalue of the symmetric part of M. */
  AS_TRY(m_min_sym_eig(tr, A, wr, work, lwork, &sp->m_min_sym_eig));

  /* Paranormal structure, else the codimension-k subspace; then the latter for codim_k. */
  memset(sp->proj_f, 0, dd * sizeof(double));
  sp->dim_f = 0;
  for (int pass = 1; pass >= 0; pass--) {
    int dim = 0;
    if (lapack_projector(tr, sp, tol, pass, sp->proj_f, &dim, S, R, work, lwork, ipiv)) {
      sp->dim_f = dim;
      if (pass == 1) sp->flags |= AS_FLAG_PARANORMAL;
      break;
    }
  }
  as_spectral_decide(tr, tol, sp);
  if (as_spectral_pos_from_f(sp)) {
    int dim = 0;
    if (lapack_projector(tr, sp, tol, 0, sp->proj_pos, &dim, S, R, work, lwork, ipiv))
      sp->dim_pos = dim;
  }
cleanup:
  free(A);
  free(VL);
  free(VR);
  free(work);
  free(S);
  free(R);
  free(wr);
  free(wi);
  free(ipiv);
  return st;
}

/* ---------------------------------------------------------------- factored V = VL VR */

/* Eigen-decomposition of C = VR VL (r x r) and V's spectrum from it: sp->wr, wi (C's r
 * eigenvalues and d - r zeros, sorted), phi1 = VL y and l1 = VR^T z for C's lead pair. */
static as_status factored_eigs(const as_triple *tr, int r, const double *VL, const double *VR,
                               const double *C, double tol, as_spectral *sp, double *A, double *EL,
                               double *ER, double *wr, double *wi, double *work, int lwork) {
  as_status st = AS_OK;
  int d = tr->d, info = 0;
  memcpy(A, C, (size_t)r * r * sizeof(double));
  dgeev_("V", "V", &r, A, &r, wr, wi, EL, &r, ER, &r, work, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dgeev", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "dgeev: QR algorithm failed to converge (info %d)", info);
  int lead = 0;
  for (int i = 1; i < r; i++)
    if (eig_before(wr[i], wi[i], wr[lead], wi[lead])) lead = i;
  for (int i = 0; i < d; i++) {
    sp->wr[i] = i < r ? wr[i] : 0.0;
    sp->wi[i] = i < r ? wi[i] : 0.0;
  }
  as_spectral_sort_eigs(d, sp->wr, sp->wi);
  as_spectral_from_eigs(tr, tol, sp);
  /* As in as_spectral_analyze: dgeev's left vectors of the column-major C^T are C's right
   * ones. V (VL y) = VL C y and V^T (VR^T z) = VR^T C^T z. */
  const double *y = EL + (size_t)lead * r, *z = ER + (size_t)lead * r;
  cblas_dgemv(CblasRowMajor, CblasNoTrans, d, r, 1.0, VL, r, y, 1, 0.0, sp->phi1, 1);
  cblas_dgemv(CblasRowMajor, CblasTrans, r, d, 1.0, VR, d, z, 1, 0.0, sp->l1, 1);
  as_spectral_set_vectors(tr, tol, sp);
cleanup:
  return st;
}

/* The scratch of the factored analysis (as_spectral_analyze_factored's buffers). */
typedef struct factored_ws {
  int d, r;
  const double *VL, *VR, *C; /* d x r, r x d, r x r = VR VL */
  double *Pc, *S, *EL;       /* r x r each */
  double *T, *R;             /* r x d, d x d */
  double *work;
  int lwork;
  int *ipiv;
} factored_ws;

/* The projector of as_spectral_projector_plan(pass) into P (d x d, zero when it fails) in
 * factored form: V's zero eigenvalues lie below either shift (c > 0), so P_V = VL C^{-1} P_C VR
 * with P_C C's sign projector at c; C^{-1} P_C = (C P_C + I - P_C)^{-1} P_C (C is invertible on
 * the range of P_C; the matrix in brackets everywhere). The checks of lapack_projector: the
 * trace is *dim, the paranormal pass's eigenspace residual. *ok = 1 when P holds it. */
static as_status factored_projector(const factored_ws *f, const as_spectral *sp, double tol,
                                    int pass, double *P, int *dim, int *ok) {
  as_status st = AS_OK;
  const int d = f->d;
  int r = f->r, info = 0;
  const size_t rr = (size_t)r * r, dd = (size_t)d * d;
  double c;
  const int plan = as_spectral_projector_plan(sp, tol, pass, &c, dim);
  *ok = plan != 0;
  if (plan == 0) goto cleanup;
  if (plan == 3) {
    set_identity(d, P); /* every eigenvalue in F: V has none at 0, not reached */
  } else {
    *ok = c > 0 && sign_projector(r, f->C, c, f->Pc, f->S, f->work, f->lwork, f->ipiv);
    if (*ok) {
      /* S = C P_C + I - P_C; solve S W = P_C (S and P_C commute, so the column-major solve
       * of the transposes gives the row-major W). */
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, f->C, r, f->Pc, r, 0.0,
                  f->S, r);
      for (size_t k = 0; k < rr; k++) f->S[k] -= f->Pc[k];
      for (int i = 0; i < r; i++) f->S[(size_t)i * r + i] += 1.0;
      memcpy(f->EL, f->Pc, rr * sizeof(double));
      dgesv_(&r, &r, f->S, &r, f->ipiv, f->EL, &r, &info);
      AS_LAPACK_CHECK("dgesv", info);
      *ok = info == 0;
    }
    if (*ok) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, d, r, 1.0, f->EL, r, f->VR, d, 0.0,
                  f->T, d);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, r, 1.0, f->VL, r, f->T, d, 0.0,
                  P, d);
    }
  }
  if (*ok) {
    double tr_p = 0;
    for (int i = 0; i < d; i++) tr_p += P[(size_t)i * d + i];
    *ok = isfinite(tr_p) && fabs(tr_p - *dim) < 0.5;
  }
  if (*ok && pass == 1 && plan != 3) {
    /* The test of as_spectral_analyze, ||V P - lam P||_F <= tol |lam| ||P||_F, in factored
     * form: V P - lam P = VL (C W - lam W) VR. */
    const double lam = sp->lambda1_re;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, f->C, r, f->EL, r, 0.0,
                f->S, r);
    for (size_t k = 0; k < rr; k++) f->S[k] -= lam * f->EL[k];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, d, r, 1.0, f->S, r, f->VR, d, 0.0,
                f->T, d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, r, 1.0, f->VL, r, f->T, d, 0.0,
                f->R, d);
    double rn = 0, pn = 0;
    for (size_t k = 0; k < dd; k++) {
      rn += f->R[k] * f->R[k];
      pn += P[k] * P[k];
    }
    *ok = sqrt(rn) <= AS_SPECTRAL_SEMISIMPLE_TOL * fabs(lam) * sqrt(pn);
  }
cleanup:
  if (!*ok) memset(P, 0, dd * sizeof *P);
  return st;
}

as_status as_spectral_analyze_factored(const as_triple *tr, int r, const double *VL,
                                       const double *VR, double tol, as_spectral *sp) {
  as_status st = AS_OK;
  double *C = NULL, *A = NULL, *EL = NULL, *ER = NULL, *Pc = NULL, *S = NULL, *work = NULL,
         *T = NULL, *R = NULL, *wr = NULL, *wi = NULL;
  int *ipiv = NULL;
  AS_CHECK(tr != NULL && sp != NULL && VL != NULL && VR != NULL, AS_ERR_ARG,
           "spectral: NULL argument");
  AS_CHECK(tr->d == sp->d, AS_ERR_ARG, "spectral: triple d = %d, analysis d = %d", tr->d, sp->d);
  AS_CHECK(r >= 1 && r < tr->d, AS_ERR_ARG, "spectral: factored rank %d not in 1..d-1 (d = %d)", r,
           tr->d);
  AS_CHECK(tol > 0 && tol < 1, AS_ERR_ARG, "spectral: tolerance %g not in (0, 1)", tol);
  int d = tr->d;
  size_t dd = (size_t)d * d, rr = (size_t)r * r;
  for (size_t k = 0; k < dd; k++) {
    AS_CHECK(isfinite(tr->V[k]), AS_ERR_DATA, "spectral: V(%zu, %zu) is not finite", k / d, k % d);
    AS_CHECK(isfinite(tr->M[k]), AS_ERR_DATA, "spectral: M(%zu, %zu) is not finite", k / d, k % d);
  }
  C = malloc(rr * sizeof(double));
  AS_CHECK_ALLOC(C);
  A = malloc(dd * sizeof(double)); /* r x r work, then sym(M) */
  AS_CHECK_ALLOC(A);
  EL = malloc(rr * sizeof(double));
  AS_CHECK_ALLOC(EL);
  ER = malloc(rr * sizeof(double));
  AS_CHECK_ALLOC(ER);
  Pc = malloc(rr * sizeof(double));
  AS_CHECK_ALLOC(Pc);
  S = malloc(rr * sizeof(double));
  AS_CHECK_ALLOC(S);
  T = malloc((size_t)r * d * sizeof(double));
  AS_CHECK_ALLOC(T);
  R = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(R);
  wr = malloc((size_t)d * sizeof(double));
  AS_CHECK_ALLOC(wr);
  wi = malloc((size_t)d * sizeof(double));
  AS_CHECK_ALLOC(wi);
  ipiv = malloc((size_t)d * sizeof(int));
  AS_CHECK_ALLOC(ipiv);
  for (size_t k = 0; k < (size_t)r * d; k++)
    AS_CHECK(isfinite(VL[k]) && isfinite(VR[k]), AS_ERR_DATA,
             "spectral: a factor of V has a non-finite entry (%zu)", k);

  int info = 0, lwork = -1, lw;
  double q = 0;
  dgeev_("V", "V", &r, A, &r, wr, wi, EL, &r, ER, &r, &q, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dgeev (query)", info);
  lw = (int)q;
  dsyev_("N", "U", &d, A, &d, wr, &q, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dsyev (query)", info);
  if ((int)q > lw) lw = (int)q;
  if (64 * r > lw) lw = 64 * r; /* dgetri blocked */
  lwork = lw;
  work = malloc((size_t)lwork * sizeof(double));
  AS_CHECK_ALLOC(work);

  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, d, 1.0, VR, d, VL, r, 0.0, C, r);
  AS_TRY(factored_eigs(tr, r, VL, VR, C, tol, sp, A, EL, ER, wr, wi, work, lwork));
  sp->eig_cond = NAN;

  /* Smallest eigenvalue of the symmetric part of M. */
  AS_TRY(m_min_sym_eig(tr, A, wr, work, lwork, &sp->m_min_sym_eig));

  /* Paranormal structure, else the codimension-k subspace; then the latter for codim_k. */
  factored_ws fw = {d, r, VL, VR, C, Pc, S, EL, T, R, work, lwork, ipiv};
  memset(sp->proj_f, 0, dd * sizeof(double));
  sp->dim_f = 0;
  for (int pass = 1; pass >= 0; pass--) {
    int dim = 0, ok = 0;
    AS_TRY(factored_projector(&fw, sp, tol, pass, sp->proj_f, &dim, &ok));
    if (ok) {
      sp->dim_f = dim;
      if (pass == 1) sp->flags |= AS_FLAG_PARANORMAL;
      break;
    }
  }
  as_spectral_decide(tr, tol, sp);
  if (as_spectral_pos_from_f(sp)) {
    int dim = 0, ok = 0;
    AS_TRY(factored_projector(&fw, sp, tol, 0, sp->proj_pos, &dim, &ok));
    if (ok) sp->dim_pos = dim;
  }
cleanup:
  free(C);
  free(A);
  free(EL);
  free(ER);
  free(Pc);
  free(S);
  free(T);
  free(R);
  free(wr);
  free(wi);
  free(ipiv);
  free(work);
  return st;
}
