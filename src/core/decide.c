/* decide.c: the horizon that would decide an unresolved verdict, and the count of every
 * cluster at the end (classify.h: t_decide, n_clusters_all; docs/theory.md 2.2). */
#include <math.h>

#include "attnsweep/classify.h"
#include "linkage.h"
#include "verdict.h"

/* ln of the relative resolution clamp(C e^{-rho t}, MIN, MAX) of classify.h. */
static double log_rel_tol(double t, double rho) {
  double l = log(AS_CLASSIFY_TOL_C) - rho * t;
  return fmin(fmax(l, log(AS_CLASSIFY_TOL_MIN)), log(AS_CLASSIFY_TOL_MAX));
}

double as_classify_horizon(double m, double t, double rho, double q) {
  if (!isfinite(m) || !isfinite(t) || !isfinite(rho) || !(rho > 0.0) || !isfinite(q)) return NAN;
  if (m <= 1.0) return t;
  if (!(q > 0.0)) return NAN;
  /* h(s) = ln(tol(s) / tol(t)) + q (s - t) - ln m >= 0 is wanted; h is piecewise linear in s
   * with breaks where the clamp switches: slope q on the ceiling and the floor, q - rho
   * between. Walk the pieces from s = t. */
  const double t1 = (log(AS_CLASSIFY_TOL_C) - log(AS_CLASSIFY_TOL_MAX)) / rho;
  const double t2 = (log(AS_CLASSIFY_TOL_C) - log(AS_CLASSIFY_TOL_MIN)) / rho;
  const double base = log_rel_tol(t, rho), lm = log(m);
  const double breaks[3] = {t1, t2, INFINITY};
  double a = t;
  for (int p = 0; p < 3; p++) {
    const double b = breaks[p];
    if (b <= a) continue;
    const double ha = log_rel_tol(a, rho) - base + q * (a - t) - lm;
    if (ha >= 0.0) return a;
    const double slope = p == 1 ? q - rho : q; /* ceiling, between, floor */
    if (slope > 0.0) {
      const double s = a - ha / slope;
      if (s <= b) return s;
    }
    a = b;
  }
  return NAN; /* not reached: the floor's piece has slope q > 0 */
}

void as_verdict_decide(const as_verdict_ctx *c, as_record *rec) {
  const double t_sep = c->sep > 0.0 ? AS_CLASSIFY_SEP / c->sep : NAN;
  rec->t_decide = NAN;
  if (rec->reason == AS_REASON_METASTABLE) {
    rec->t_decide = t_sep;
  } else if (rec->reason == AS_REASON_MOVING && c->r && c->n_unresolved > 0 &&
             c->row->reading != AS_READ_X) {
    double worst = -INFINITY;
    for (int i = 0; i < c->n; i++) {
      if (c->r[i] <= c->cluster_tol) continue;
      const double q = c->q ? c->q[i] : c->rho;
      const double h = as_classify_horizon(c->r[i] / c->cluster_tol, c->t, c->rho, q);
      if (isnan(h)) { /* one token without an estimate: no horizon for the trial */
        worst = NAN;
        break;
      }
      if (h > worst) worst = h;
    }
    if (isfinite(t_sep) && worst < t_sep) worst = t_sep;
    rec->t_decide = worst;
  }
}

int as_verdict_count_all(const double *Y, int n, int k, double tol, int *parent) {
  const double tol2 = tol * tol;
  int count = n;
  for (int i = 0; i < n; i++) parent[i] = i;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (as_dist2(Y + (size_t)i * k, Y + (size_t)j * k, k) <= tol2) {
        int a = as_find_root(parent, i), b = as_find_root(parent, j);
        if (a != b) {
          parent[a > b ? a : b] = a < b ? a : b;
          count--;
        }
      }
  return count;
}
