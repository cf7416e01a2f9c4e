/* measure.c: cluster masses and the 1-Wasserstein distance of two cluster measures
 * (measure.h). */
#include "attnsweep/measure.h"

#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int_desc(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  return (a < b) - (a > b);
}

as_status as_measure_masses(int n, int m, const int *sizes, int K, double *masses, double *rest,
                            int *scratch) {
  as_status st = AS_OK;
  AS_CHECK(masses != NULL && rest != NULL && K >= 0 && n >= 1 && m >= 0, AS_ERR_ARG,
           "masses: n = %d, m = %d, K = %d", n, m, K);
  AS_CHECK(m == 0 || (sizes != NULL && scratch != NULL), AS_ERR_ARG, "masses: NULL sizes");
  long total = 0;
  for (int j = 0; j < m; j++) {
    AS_CHECK(sizes[j] >= 0, AS_ERR_ARG, "masses: cluster %d has size %d", j, sizes[j]);
    total += sizes[j];
  }
  AS_CHECK(total <= n, AS_ERR_ARG, "masses: cluster sizes sum to %ld > n = %d", total, n);
  if (m > 0) memcpy(scratch, sizes, (size_t)m * sizeof *scratch);
  if (m > 32) {
    qsort(scratch, (size_t)m, sizeof *scratch, cmp_int_desc);
  } else { /* the usual few clusters: insertion sort, no call per comparison */
    for (int i = 1; i < m; i++) {
      int v = scratch[i], j = i;
      for (; j > 0 && scratch[j - 1] < v; j--) scratch[j] = scratch[j - 1];
      scratch[j] = v;
    }
  }
  long top = 0;
  for (int j = 0; j < K; j++) {
    int s = j < m ? scratch[j] : 0;
    masses[j] = (double)s / n;
    top += s;
  }
  /* From the integer remainder: rest is exact up to one rounding, never -1e-17. */
  *rest = (double)(n - top) / n;
cleanup:
  return st;
}

/* ------------------------------------------------------------------ W1 */

typedef struct atom1 {
  double x, w; /* position and signed weight (+ first measure, - second) */
} atom1;

static int cmp_atom(const void *pa, const void *pb) {
  double a = ((const atom1 *)pa)->x, b = ((const atom1 *)pb)->x;
  return (a > b) - (a < b);
}

/* k = 1: W1 = integral |F_a(x) - F_b(x)| dx, a piecewise constant integrand between atoms. */
static as_status w1_line(int ma, const double *A, const double *a, double sa, int mb,
                         const double *B, const double *b, double sb, double *w1) {
  as_status st = AS_OK;
  atom1 *at = malloc((size_t)(ma + mb) * sizeof *at);
  AS_CHECK_ALLOC(at);
  for (int i = 0; i < ma; i++) at[i].x = A[i], at[i].w = a[i] / sa;
  for (int j = 0; j < mb; j++) at[ma + j].x = B[j], at[ma + j].w = -b[j] / sb;
  qsort(at, (size_t)(ma + mb), sizeof *at, cmp_atom);
  double F = 0.0, s = 0.0;
  for (int e = 0; e + 1 < ma + mb; e++) {
    F += at[e].w;
    s += fabs(F) * (at[e + 1].x - at[e].x);
  }
  *w1 = s;
cleanup:
  free(at);
  return st;
}

/* k >= 2: the transport LP (measure.h). Column (i, j) = 1 + i mb + j. */
static as_status w1_lp(int k, int ma, const double *A, const double *a, double sa, int mb,
                       const double *B, const double *b, double sb, double *w1) {
  as_status st = AS_OK;
  glp_prob *lp = NULL;
  const size_t nv = (size_t)ma * (size_t)mb, nz = 2 * nv;
  int *ia = NULL, *ja = NULL;
  double *ar = NULL;
  AS_CHECK(nv < 100000000, AS_ERR_ARG, "W1: %d x %d atoms is too large a transport problem", ma,
           mb);
  ia = malloc((nz + 1) * sizeof *ia);
  ja = malloc((nz + 1) * sizeof *ja);
  ar = malloc((nz + 1) * sizeof *ar);
  AS_CHECK_ALLOC(ia);
  AS_CHECK_ALLOC(ja);
  AS_CHECK_ALLOC(ar);
  glp_term_out(GLP_OFF);
  lp = glp_create_prob();
  AS_CHECK_ALLOC(lp);
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, ma + mb);
  for (int i = 0; i < ma; i++) glp_set_row_bnds(lp, i + 1, GLP_FX, a[i] / sa, a[i] / sa);
  for (int j = 0; j < mb; j++) glp_set_row_bnds(lp, ma + j + 1, GLP_FX, b[j] / sb, b[j] / sb);
  glp_add_cols(lp, (int)nv);
  size_t ne = 0;
  for (int i = 0; i < ma; i++)
    for (int j = 0; j < mb; j++) {
      int col = 1 + i * mb + j;
      double c = 0.0;
      for (int e = 0; e < k; e++) {
        double dx = A[(size_t)i * k + e] - B[(size_t)j * k + e];
        c += dx * dx;
      }
      glp_set_col_bnds(lp, col, GLP_LO, 0.0, 0.0);
      glp_set_obj_coef(lp, col, sqrt(c));
      ne++, ia[ne] = i + 1, ja[ne] = col, ar[ne] = 1.0;
      ne++, ia[ne] = ma + j + 1, ja[ne] = col, ar[ne] = 1.0;
    }
  glp_load_matrix(lp, (int)ne, ia, ja, ar);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON; /* one of the ma + mb rows is redundant: presolve removes it */
  int ret = glp_simplex(lp, &parm);
  AS_CHECK(ret == 0 && glp_get_status(lp) == GLP_OPT, AS_ERR_INTERNAL,
           "W1 transport LP: glp_simplex returned %d, status %d", ret, glp_get_status(lp));
  *w1 = fmax(glp_get_obj_val(lp), 0.0);
cleanup:
  if (lp) glp_delete_prob(lp);
  free(ia);
  free(ja);
  free(ar);
  return st;
}

as_status as_measure_w1(int k, int ma, const double *A, const double *a, int mb, const double *B,
                        const double *b, double *w1) {
  as_status st = AS_OK;
  AS_CHECK(A && a && B && b && w1, AS_ERR_ARG, "W1: NULL argument");
  AS_CHECK(k >= 1 && ma >= 1 && mb >= 1, AS_ERR_ARG, "W1: k = %d, %d and %d atoms", k, ma, mb);
  double sa = 0.0, sb = 0.0;
  for (int i = 0; i < ma; i++) {
    AS_CHECK(a[i] >= 0.0 && isfinite(a[i]), AS_ERR_ARG, "W1: weight a[%d] = %g", i, a[i]);
    sa += a[i];
  }
  for (int j = 0; j < mb; j++) {
    AS_CHECK(b[j] >= 0.0 && isfinite(b[j]), AS_ERR_ARG, "W1: weight b[%d] = %g", j, b[j]);
    sb += b[j];
  }
  AS_CHECK(sa > 0.0 && sb > 0.0, AS_ERR_ARG, "W1: a measure of zero mass");
  for (size_t e = 0; e < (size_t)ma * k; e++)
    AS_CHECK(isfinite(A[e]), AS_ERR_DATA, "W1: atom %zu of the first measure not finite", e / k);
  for (size_t e = 0; e < (size_t)mb * k; e++)
    AS_CHECK(isfinite(B[e]), AS_ERR_DATA, "W1: atom %zu of the second measure not finite", e / k);
  if (k == 1)
    AS_TRY(w1_line(ma, A, a, sa, mb, B, b, sb, w1));
  else
    AS_TRY(w1_lp(k, ma, A, a, sa, mb, B, b, sb, w1));
cleanup:
  return st;
}
