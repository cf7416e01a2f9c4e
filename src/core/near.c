/* near.c: hypothesis distances and the nearest theorem (near.h). */
#include "attnsweep/near.h"

#include <math.h>

#include "attnsweep/record.h"
#include "attnsweep/theorem.h"

/* ||A - cI||_F / ||A||_F for the c of the ray (sign > 0: c >= 0; sign < 0: c <= 0) nearest to
 * A, i.e. c = the mean of the diagonal clamped to the ray; 1 for A = 0 (no direction). */
static double ray_distance(int d, const double *A, int sign) {
  double tr = 0.0, nrm = 0.0;
  for (int i = 0; i < d; i++) tr += A[(size_t)i * d + i];
  for (size_t k = 0; k < (size_t)d * d; k++) nrm += A[k] * A[k];
  if (!(nrm > 0.0)) return 1.0;
  double c = tr / d;
  if (sign > 0 ? c < 0.0 : c > 0.0) c = 0.0;
  /* ||A - cI||^2 = ||A||^2 - 2 c tr A + d c^2, formed directly to keep small values exact. */
  double r = 0.0;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double e = A[(size_t)i * d + j] - (i == j ? c : 0.0);
      r += e * e;
    }
  return sqrt(r / nrm);
}

/* The paranormal distance of the header (sorted eigenvalues sp->wr, sp->wi). */
static double paranormal_distance(const as_spectral *sp, double tol, int *f_out) {
  const int d = sp->d;
  *f_out = 0;
  double lam = hypot(sp->lambda1_re, sp->lambda1_im);
  if (d < 3 || !(lam > 0.0)) return NAN;
  double best = INFINITY, spread = 0.0;
  for (int f = 2; f < d; f++) {
    spread =
        fmax(spread, hypot(sp->wr[f - 1] - sp->lambda1_re, sp->wi[f - 1] - sp->lambda1_im) / lam);
    /* The leading eigenvalue itself must be real and positive: Re lambda_1 enters sep. */
    double sep = (hypot(sp->wr[f], sp->wi[f]) - sp->lambda1_re) / lam;
    double lead = fabs(sp->lambda1_im) / lam;
    double v;
    if (spread <= tol && lead <= tol)
      v = (sp->flags & AS_FLAG_PARANORMAL) && sp->dim_f == f ? sep : fmax(sep, 0.0);
    else
      v = fmax(fmax(spread, lead), sep);
    if (v < best) {
      best = v;
      *f_out = f;
    }
  }
  return best;
}

/* The hypotheses by name (near.h). */
const char *as_near_hypothesis_name(int i) {
#define AS_X_NEAR_NAME(h) #h,
  static const char *const names[AS_NEAR_NHYP] = {AS_NEAR_HYPOTHESES(AS_X_NEAR_NAME)};
#undef AS_X_NEAR_NAME
  return i >= 0 && i < AS_NEAR_NHYP ? names[i] : NULL;
}

unsigned as_near_theorem_hypotheses(as_theorem th) {
  const as_theorem_row *r = as_theorem_row_of(th);
  return r ? r->near : 0u;
}

/* D_T of the hypotheses in mask: max(0, their distances), NaN ones left out. */
static double near_miss(const as_near *nr, unsigned mask) {
#define AS_X_NEAR_VALUE(h) nr->h,
  const double v[AS_NEAR_NHYP] = {AS_NEAR_HYPOTHESES(AS_X_NEAR_VALUE)};
#undef AS_X_NEAR_VALUE
  double m = 0.0;
  for (int i = 0; i < AS_NEAR_NHYP; i++)
    if ((mask >> i & 1u) && v[i] > m) m = v[i];
  return m;
}

as_status as_near_analyze(const as_triple *tr, const as_spectral *sp, double tol,
                          as_thm_model model, as_near *nr) {
  as_status st = AS_OK;
  AS_CHECK(tr != NULL && sp != NULL && nr != NULL, AS_ERR_ARG, "near: NULL argument");
  AS_CHECK(tr->d == sp->d && tr->d >= 1, AS_ERR_ARG, "near: triple d = %d, analysis d = %d", tr->d,
           sp->d);
  const int d = tr->d;
  const uint32_t f = sp->flags;
  double mn = 0.0;
  for (size_t k = 0; k < (size_t)d * d; k++) mn += tr->M[k] * tr->M[k];
  mn = sqrt(mn);
  double lam = hypot(sp->lambda1_re, sp->lambda1_im);

  nr->v_identity = (f & AS_FLAG_V_IDENTITY) ? 0.0 : ray_distance(d, tr->V, 1);
  nr->v_minus_identity = (f & AS_FLAG_V_MINUS_IDENTITY) ? 0.0 : ray_distance(d, tr->V, -1);
  nr->m_identity = (f & AS_FLAG_M_IDENTITY) ? 0.0 : ray_distance(d, tr->M, 1);
  nr->m_symmetric = (f & AS_FLAG_M_SYMMETRIC) ? 0.0 : sp->m_asym;
  nr->m_posdef = mn > 0.0 ? -sp->m_min_sym_eig / mn : 0.0;
  nr->lead_real = (f & AS_FLAG_LEAD_REAL) ? 0.0 : lam > 0.0 ? fabs(sp->lambda1_im) / lam : NAN;
  nr->gap = lam > 0.0 ? (sp->lambda2_abs - sp->lambda1_re) / lam : 0.0;
  nr->margin = isfinite(sp->margin) ? (mn > 0.0 ? -sp->margin / mn : 0.0) : NAN;
  nr->paranormal = paranormal_distance(sp, tol, &nr->paranormal_f);

  /* The candidates: the model's rows of the table with near hypotheses, in its precedence
   * order; per row its distance, whether it holds, whether it can be read. */
  int nrows = 0;
  const as_theorem_row *rows = as_theorem_rows(&nrows);
  const as_theorem_row *cand[AS_THM_COUNT];
  double D[AS_THM_COUNT];
  int holds[AS_THM_COUNT], readable[AS_THM_COUNT], nt = 0;
  for (int i = 0; i < nrows; i++) {
    const as_theorem_row *r = &rows[i];
    if (!r->near || r->model != model) continue;
    AS_CHECK(nt < AS_THM_COUNT && r->holds != NULL, AS_ERR_INTERNAL,
             "near: theorem row %d has near hypotheses but no rule", i);
    cand[nt] = r;
    D[nt] = near_miss(nr, r->near);
    holds[nt] = r->holds(tr, sp, tol);
    readable[nt] = r->readable ? r->readable(tr, sp, nr->paranormal_f) : 1;
    nt++;
  }

  if (nt == 0) { /* no near-miss hypotheses in this model: the theorem that holds, if any */
    nr->theorem = sp->theorem;
    nr->predicted = sp->predicted;
    nr->dist = sp->theorem != AS_THM_NONE ? 0.0 : NAN;
    goto cleanup;
  }
  int h = -1; /* the proved theorem that holds (sp->theorem), if any */
  for (int i = 0; i < nt; i++)
    if (cand[i]->id == sp->theorem) h = i;
  const int last = h >= 0 ? h : nt;
  const double reach = h >= 0 ? AS_NEAR_REACH : 1.0;
  double dmin = INFINITY;
  for (int i = 0; i < last; i++)
    if (!holds[i] && readable[i] && D[i] < reach) dmin = fmin(dmin, D[i]);
  const as_theorem_row *best = h >= 0 ? cand[h] : NULL;
  nr->dist = h >= 0 ? 0.0 : NAN;
  if (isfinite(dmin))
    for (int i = 0; i < last; i++)
      if (!holds[i] && readable[i] && D[i] < reach && D[i] <= AS_NEAR_SLACK * dmin) {
        best = cand[i];
        nr->dist = D[i];
        break;
      }
  nr->theorem = best ? best->id : AS_THM_NONE;
  nr->predicted = best ? best->predicted : AS_GEOM_NONE;
cleanup:
  return st;
}
