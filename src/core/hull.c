/* hull.c: exact convex-hull predicates by linear programming (GLPK, rational simplex), and
 * without LP where the dimension allows.
 *
 * What is exact by which method:
 * - as_hull_dist_inf, as_hull_ray, as_hull_depth_l1: the LP below, decided by glp_exact.
 * - as_hull_count_2d, as_hull_vertices_2d: exact orientations (orient2d: a floating-point
 *   filter, else an expansion), exact unless a product of coordinate differences underflows.
 * - as_hull_is_vertex: "vertex" proved by a floating-point direction whose rounding errors are
 *   bounded rigorously (certify_vertex); else, with dist NULL, k = 2 by planar_separated
 *   (range as_hull_planar_exact) and k = 3 by spatial_separated (range spatial_exact, at most
 *   AS_HULL_SPATIAL_MAX other points): separating-axis tests whose signs come from a filter with
 *   a proven error bound, else from exact expansions (Shewchuk 1997); everything else by the
 *   exact LP (as_hull_dist_inf > tol). Each decides dist_inf > tol for exactly the given numbers.
 *
 * Every predicate is "is some point a convex combination of the given points", phrased as a
 * small LP over the convex weights w (columns 1..m) plus one scalar (column m+1). The data are
 * scaled by one power of two so that every coordinate is an integer (exact in double): glp_exact
 * converts its floating-point input to rationals by approximation (GLPK 5.0 loses 2^-35 relative
 * on 1 + 2^-35), but integer-valued doubles are converted exactly. No translation (a subtraction
 * in double would round). So glp_exact decides for exactly the numbers given. glp_simplex first
 * finds a basis in floating point; glp_exact then certifies (or repairs) it in rational
 * arithmetic. Limitation: coordinates whose last mantissa bit lies below 2^-1000, or more than
 * about 2^970 below the largest coordinate, cannot be made integers and are rationalised
 * approximately by GLPK.
 */
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/hull.h"

/* Up to this many points the planar hulls are found by gift wrapping (O(n h), no sort), above
 * it by sorting and the monotone chain (O(n log n)). */
#define AS_HULL_WRAP_MAX 64

/* Up to this many other points the 3-D vertex test (spatial_separated) enumerates the planes
 * through three of them, O(mo^3) planes each tested against up to mo points; above it the LP
 * decides. It uses h->qs for its 2-D projections, which planar_separated leaves alone up to
 * AS_HULL_WRAP_MAX points. */
#define AS_HULL_SPATIAL_MAX 32

#define F3_N 8 /* per facet of the 3-D hull: the normal n (3), m (3), N, M of plane_normal */
_Static_assert(AS_HULL_SPATIAL_MAX <= AS_HULL_WRAP_MAX, "planar_separated must not use h->qs");

/* The most terms sum_sign adds: the exact 3-D plane test, 3 components of 16 each times 6. */
#define AS_HULL_TERMS_MAX 288

struct as_hull {
  int kmax, mmax;
  glp_prob *lp;
  int *ia, *ja; /* 1-based triplets for glp_load_matrix */
  double *ar;
  double *other;     /* mmax x kmax: the points tested against (is_vertex) */
  double *qs;        /* mmax x kmax: the points scaled to integers */
  double *ps;        /* kmax: the query point scaled likewise */
  const double **at; /* mmax: the distinct points of a planar hull (planar_separated) */
  int *stack;        /* 2 mmax + 2: its chain */
  /* as_hull_count_3d, for up to n3max points (kmax >= 3: min(mmax, AS_HULL_3D_MAX), else 0) and
   * fcap = 2 n3max + 8 facets */
  int n3max, fcap;
  double *p3;       /* 3 n3max: the distinct points, sorted */
  double *p4;       /* 4 n3max: the points with their rows, sorted */
  double *p2;       /* 5 n3max: their projection (2-D case) and as_hull_vertices_2d's scratch */
  int *first, *isv; /* n3max: each distinct point's first sorted row; a vertex or not */
  int *ord;         /* n3max: the order of insertion */
  int *i2;          /* 4 n3max + 2: as_hull_vertices_2d's integer scratch */
  double *fn;       /* F3_N fcap: each facet's normal (plane_normal) */
  int *fv, *fnb;    /* 3 fcap: each facet's vertices and neighbours */
  int *ffree, *hz;  /* fcap: free facet slots; 4 fcap: the horizon */
  int *by_start, *by_end;       /* n3max: the new facet from / to a horizon vertex */
  unsigned char *fvis, *falive; /* fcap: seen by the point being added; in the hull */
};

as_status as_hull_create(int kmax, int mmax, as_hull **out) {
  as_status st = AS_OK;
  as_hull *h = NULL;
  AS_CHECK(out != NULL, AS_ERR_ARG, "out is NULL");
  AS_CHECK(kmax >= 1 && mmax >= 1, AS_ERR_ARG, "hull sizes k = %d, m = %d must be >= 1", kmax,
           mmax);
  h = calloc(1, sizeof *h);
  AS_CHECK_ALLOC(h);
  h->kmax = kmax;
  h->mmax = mmax;
  /* dist_inf has the most non-zeros: 2k rows of m + 1 entries, and one row of m. */
  size_t nnz = 1 + (size_t)(2 * kmax) * (size_t)(mmax + 1) + (size_t)mmax;
  h->ia = malloc(nnz * sizeof *h->ia);
  AS_CHECK_ALLOC(h->ia);
  h->ja = malloc(nnz * sizeof *h->ja);
  AS_CHECK_ALLOC(h->ja);
  h->ar = malloc(nnz * sizeof *h->ar);
  AS_CHECK_ALLOC(h->ar);
  h->other = malloc((size_t)kmax * (size_t)mmax * sizeof *h->other);
  AS_CHECK_ALLOC(h->other);
  h->qs = malloc((size_t)kmax * (size_t)mmax * sizeof *h->qs);
  AS_CHECK_ALLOC(h->qs);
  h->ps = malloc((size_t)kmax * sizeof *h->ps);
  AS_CHECK_ALLOC(h->ps);
  h->at = malloc((size_t)mmax * sizeof *h->at);
  AS_CHECK_ALLOC(h->at);
  h->stack = malloc((2 * (size_t)mmax + 2) * sizeof *h->stack);
  AS_CHECK_ALLOC(h->stack);
  if (kmax >= 3) {
    const size_t c = (size_t)(h->n3max = mmax < AS_HULL_3D_MAX ? mmax : AS_HULL_3D_MAX);
    const size_t fc = (size_t)(h->fcap = 2 * h->n3max + 8);
    h->p3 = malloc(3 * c * sizeof *h->p3);
    h->p4 = malloc(4 * c * sizeof *h->p4);
    h->p2 = malloc(5 * c * sizeof *h->p2);
    h->first = malloc(c * sizeof *h->first);
    h->isv = malloc(c * sizeof *h->isv);
    h->ord = malloc(c * sizeof *h->ord);
    h->i2 = malloc((4 * c + 2) * sizeof *h->i2);
    h->fn = malloc(F3_N * fc * sizeof *h->fn);
    h->fv = malloc(3 * fc * sizeof *h->fv);
    h->fnb = malloc(3 * fc * sizeof *h->fnb);
    h->ffree = malloc(fc * sizeof *h->ffree);
    h->hz = malloc(4 * fc * sizeof *h->hz);
    h->by_start = malloc(c * sizeof *h->by_start);
    h->by_end = malloc(c * sizeof *h->by_end);
    h->fvis = calloc(fc, 1);
    h->falive = calloc(fc, 1);
    AS_CHECK(h->p3 && h->p4 && h->p2 && h->first && h->isv && h->ord && h->i2 && h->fn && h->fv &&
                 h->fnb && h->ffree && h->hz && h->by_start && h->by_end && h->fvis && h->falive,
             AS_ERR_NOMEM, "allocation of the 3-D hull's arrays (%d points) failed", h->n3max);
  }
  glp_term_out(GLP_OFF);
  h->lp = glp_create_prob();
  AS_CHECK_ALLOC(h->lp);
  *out = h;
  h = NULL;
cleanup:
  as_hull_destroy(&h);
  return st;
}

void as_hull_destroy(as_hull **p) {
  if (!p || !*p) return;
  as_hull *h = *p;
  if (h->lp) glp_delete_prob(h->lp);
  free(h->ia);
  free(h->ja);
  free(h->ar);
  free(h->other);
  free(h->qs);
  free(h->ps);
  free((void *)h->at);
  free(h->stack);
  free(h->p3);
  free(h->p4);
  free(h->p2);
  free(h->first);
  free(h->isv);
  free(h->ord);
  free(h->i2);
  free(h->fn);
  free(h->fv);
  free(h->fnb);
  free(h->ffree);
  free(h->hz);
  free(h->by_start);
  free(h->by_end);
  free(h->fvis);
  free(h->falive);
  free(h);
  *p = NULL;
}

/* GLPK aborts the process on invalid data, so everything is checked here first. */
static as_status check_args(const as_hull *h, int k, int m, const double *Q, const double *p) {
  as_status st = AS_OK;
  AS_CHECK(h != NULL && Q != NULL && p != NULL, AS_ERR_ARG, "NULL argument");
  AS_CHECK(k >= 1 && k <= h->kmax && m >= 1 && m <= h->mmax, AS_ERR_ARG,
           "hull sizes k = %d, m = %d outside the object's %d x %d", k, m, h->kmax, h->mmax);
  for (int a = 0; a < k; a++)
    AS_CHECK(isfinite(p[a]), AS_ERR_DATA, "point coordinate %d not finite", a);
  for (long e = 0; e < (long)k * m; e++)
    AS_CHECK(isfinite(Q[e]), AS_ERR_DATA, "hull point %ld coordinate %ld not finite", e / k, e % k);
cleanup:
  return st;
}

/* Copy Q and p into h->qs, h->ps multiplied by 2^E, E chosen so that every entry becomes an
 * integer (x = f 2^e with a 53-bit f: x 2^(53 - e) is an integer) without overflow. */
static int scale_to_integers(as_hull *h, int k, int m, const double *Q, const double *p) {
  int emax = INT_MIN, need = 0;
  size_t len = (size_t)k * m;
  for (size_t e = 0; e < len + (size_t)k; e++) {
    double x = e < len ? Q[e] : p[e - len];
    if (x == 0.0) continue;
    int ex = 0;
    (void)frexp(x, &ex);
    if (ex > emax) emax = ex;
    if (53 - ex > need) need = 53 - ex;
  }
  /* 0 <= E <= 1000 keeps 2^E (the row factor) an exact finite integer; E <= 1020 - emax keeps
   * the scaled data finite. Doubles >= 2^52 are integers already, so E = 0 loses nothing. */
  int E = need;
  if (emax != INT_MIN && E > 1020 - emax) E = 1020 - emax;
  if (E > 1000) E = 1000;
  if (E < 0) E = 0;
  AS_ASSERT(E >= 0 && E <= 1000);
  for (size_t e = 0; e < len; e++) h->qs[e] = ldexp(Q[e], E);
  for (int a = 0; a < k; a++) h->ps[a] = ldexp(p[a], E);
  return E;
}

/* Solve the loaded LP; *status = GLP_OPT, GLP_NOFEAS... from the exact solver. E: the scale
 * exponent of the data (scale_to_integers): beyond 2^500 the floating-point pass is skipped,
 * because GLPK's simplex fails an internal assertion (aborting the process) on coefficients that
 * far apart (seen with coordinates of 1e-300, where E reaches 1000). */
static as_status solve_exact(glp_prob *lp, int E, int *status) {
  as_status st = AS_OK;
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_OFF;
  glp_std_basis(lp);
  /* The floating-point pass only supplies a starting basis: bounded, and its failure is not
   * fatal (glp_exact then starts from whatever valid basis is left, or the standard one). */
  parm.it_lim = 50 * (glp_get_num_rows(lp) + glp_get_num_cols(lp)) + 1000;
  parm.tm_lim = 2000;
  if (E <= 500) (void)glp_simplex(lp, &parm);
  parm.it_lim = INT_MAX;
  parm.tm_lim = INT_MAX;
  int ret = glp_exact(lp, &parm);
  if (ret == GLP_EBADB || ret == GLP_ESING) {
    glp_std_basis(lp);
    ret = glp_exact(lp, &parm);
  }
  AS_CHECK(ret == 0, AS_ERR_INTERNAL, "glp_exact failed with code %d", ret);
  *status = glp_get_status(lp);
  AS_CHECK(*status == GLP_OPT || *status == GLP_NOFEAS || *status == GLP_UNBND, AS_ERR_INTERNAL,
           "glp_exact ended with status %d", *status);
cleanup:
  return st;
}

/* Columns 1..m: weights w_j >= 0; column m+1: the scalar s >= 0, objective coefficient 1. */
static void add_columns(glp_prob *lp, int m, int dir) {
  glp_erase_prob(lp);
  glp_set_obj_dir(lp, dir);
  glp_add_cols(lp, m + 1);
  for (int j = 1; j <= m + 1; j++) {
    glp_set_col_bnds(lp, j, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp, j, j == m + 1 ? 1.0 : 0.0);
  }
}

as_status as_hull_dist_inf(as_hull *h, int k, int m, const double *Q, const double *p,
                           double *dist) {
  as_status st = AS_OK;
  AS_TRY(check_args(h, k, m, Q, p));
  AS_CHECK(dist != NULL, AS_ERR_ARG, "dist is NULL");
  /* min t  s.t.  sum_j Q_ja w_j + t >= p_a,  sum_j Q_ja w_j - t <= p_a,  sum_j w_j = 1,
   * every row multiplied by one = 2^E (uniform, so the float pass sees the same problem and t
   * keeps its units). */
  int E = scale_to_integers(h, k, m, Q, p);
  Q = h->qs;
  p = h->ps;
  const double one = ldexp(1.0, E);
  glp_prob *lp = h->lp;
  add_columns(lp, m, GLP_MIN);
  glp_add_rows(lp, 2 * k + 1);
  int ne = 0;
  for (int a = 0; a < k; a++) {
    int rlo = 2 * a + 1, rhi = 2 * a + 2;
    glp_set_row_bnds(lp, rlo, GLP_LO, p[a], 0.0);
    glp_set_row_bnds(lp, rhi, GLP_UP, 0.0, p[a]);
    for (int j = 0; j < m; j++) {
      double q = Q[(size_t)j * k + a];
      if (q == 0.0) continue; /* GLPK stores no zeros */
      ne++, h->ia[ne] = rlo, h->ja[ne] = j + 1, h->ar[ne] = q;
      ne++, h->ia[ne] = rhi, h->ja[ne] = j + 1, h->ar[ne] = q;
    }
    ne++, h->ia[ne] = rlo, h->ja[ne] = m + 1, h->ar[ne] = one;
    ne++, h->ia[ne] = rhi, h->ja[ne] = m + 1, h->ar[ne] = -one;
  }
  glp_set_row_bnds(lp, 2 * k + 1, GLP_FX, one, one);
  for (int j = 0; j < m; j++) ne++, h->ia[ne] = 2 * k + 1, h->ja[ne] = j + 1, h->ar[ne] = one;
  glp_load_matrix(lp, ne, h->ia, h->ja, h->ar);
  int status = 0;
  AS_TRY(solve_exact(lp, E, &status));
  AS_CHECK(status == GLP_OPT, AS_ERR_INTERNAL, "distance LP not optimal (status %d)", status);
  *dist = glp_get_obj_val(lp);
  if (*dist < 0.0) *dist = 0.0; /* an exact optimum is >= 0; guard the rounding of -0 */
cleanup:
  return st;
}

as_status as_hull_ray(as_hull *h, int k, int m, const double *Q, const double *p, int axis,
                      int sign, double *r) {
  as_status st = AS_OK;
  AS_TRY(check_args(h, k, m, Q, p));
  AS_CHECK(r != NULL, AS_ERR_ARG, "r is NULL");
  AS_CHECK(axis >= 0 && axis < k && (sign == 1 || sign == -1), AS_ERR_ARG,
           "ray axis %d sign %d invalid", axis, sign);
  /* max s  s.t.  sum_j Q_ja w_j - sign [a = axis] s = p_a,  sum_j w_j = 1 (every row times 2^E). */
  int E = scale_to_integers(h, k, m, Q, p);
  Q = h->qs;
  p = h->ps;
  const double one = ldexp(1.0, E);
  glp_prob *lp = h->lp;
  add_columns(lp, m, GLP_MAX);
  glp_add_rows(lp, k + 1);
  int ne = 0;
  for (int a = 0; a < k; a++) {
    glp_set_row_bnds(lp, a + 1, GLP_FX, p[a], p[a]);
    for (int j = 0; j < m; j++) {
      double q = Q[(size_t)j * k + a];
      if (q == 0.0) continue;
      ne++, h->ia[ne] = a + 1, h->ja[ne] = j + 1, h->ar[ne] = q;
    }
    if (a == axis) ne++, h->ia[ne] = a + 1, h->ja[ne] = m + 1, h->ar[ne] = -(double)sign * one;
  }
  glp_set_row_bnds(lp, k + 1, GLP_FX, one, one);
  for (int j = 0; j < m; j++) ne++, h->ia[ne] = k + 1, h->ja[ne] = j + 1, h->ar[ne] = one;
  glp_load_matrix(lp, ne, h->ia, h->ja, h->ar);
  int status = 0;
  AS_TRY(solve_exact(lp, E, &status));
  AS_CHECK(status != GLP_UNBND, AS_ERR_INTERNAL, "ray LP unbounded (a bounded hull cannot be)");
  *r = status == GLP_OPT ? glp_get_obj_val(lp) : -1.0;
  if (status == GLP_OPT && *r < 0.0) *r = 0.0;
cleanup:
  return st;
}

as_status as_hull_depth_l1(as_hull *h, int k, int m, const double *Q, const double *p,
                           double *depth) {
  as_status st = AS_OK;
  AS_CHECK(depth != NULL, AS_ERR_ARG, "depth is NULL");
  double best = INFINITY;
  for (int a = 0; a < k && best > 0.0; a++) {
    for (int sign = -1; sign <= 1; sign += 2) {
      double r = 0.0;
      AS_TRY(as_hull_ray(h, k, m, Q, p, a, sign, &r));
      if (r < 0.0) {
        *depth = -1.0; /* p outside the hull */
        goto cleanup;
      }
      if (r < best) best = r;
    }
  }
  *depth = best;
cleanup:
  return st;
}

/* Certified lower bound on dist_inf(p, hull of the rows of O) from a direction a (dir): a^T (p -
 * q_j) is evaluated in double with the standard bound on the rounding error of a dot product
 * (gamma_{k+1} sum |a_a x_a|), so a positive certified minimum proves that p is separated from
 * the hull of the others, and dist_inf >= min_j a^T (p - q_j) / |a|_1. Returns that bound (NaN
 * or <= 0 when nothing is proved). */
static double certified_bound(int k, int mo, const double *O, const double *p, const double *dir) {
  double l1 = 0.0;
  for (int a = 0; a < k; a++) l1 += fabs(dir[a]);
  const double u = ldexp(1.0, -53), gamma = (k + 1) * u / (1.0 - (k + 1) * u);
  double sp = 0.0, ep = 0.0;
  for (int a = 0; a < k; a++) sp += dir[a] * p[a], ep += fabs(dir[a] * p[a]);
  double worst = INFINITY;
  for (int j = 0; j < mo; j++) {
    double sq = 0.0, eq = 0.0;
    for (int a = 0; a < k; a++) {
      double x = dir[a] * O[(size_t)j * k + a];
      sq += x, eq += fabs(x);
    }
    /* a^T (p - q_j) >= (sp - sq) - (error of sp, sq) - (rounding of the subtraction) */
    double m = (sp - sq) - gamma * (ep + eq) * (1.0 + 2.0 * u) - 2.0 * u * fabs(sp - sq);
    if (!(m >= worst)) worst = m; /* NaN propagates */
  }
  return worst / (l1 * (1.0 + gamma)) * (1.0 - 2.0 * u);
}

/* A cheap candidate direction, before any LP (most tested points are clear vertices).
 * k = 2: the directions q_j - p sorted by angle; p is separated iff they leave an empty sector
 * wider than pi, and the middle of the widest sector separates. Returns 0 when no sector is
 * wider than pi - 1e-9 (p is inside, or too close to the boundary for this estimate), 1 with
 * dir set otherwise. Other k: dir = p - mean of the others, returns 1. scratch: mo doubles. */
static int propose_direction(int k, int mo, const double *O, const double *p, double *dir,
                             double *scratch) {
  if (k != 2) {
    for (int a = 0; a < k; a++) {
      double mean = 0.0;
      for (int j = 0; j < mo; j++) mean += O[(size_t)j * k + a];
      dir[a] = p[a] - mean / mo;
    }
    return 1;
  }
  double *th = scratch;
  for (int j = 0; j < mo; j++) {
    double t = atan2(O[2 * j + 1] - p[1], O[2 * j] - p[0]);
    int i = j; /* insertion sort: mo is small */
    for (; i > 0 && th[i - 1] > t; i--) th[i] = th[i - 1];
    th[i] = t;
  }
  const double two_pi = 6.283185307179586;
  double gap = th[0] + two_pi - th[mo - 1], from = th[mo - 1];
  for (int j = 1; j < mo; j++)
    if (th[j] - th[j - 1] > gap) gap = th[j] - th[j - 1], from = th[j - 1];
  if (!(gap > 3.141592653589793 - 1e-9)) return 0;
  dir[0] = cos(from + 0.5 * gap);
  dir[1] = sin(from + 0.5 * gap);
  return 1;
}

/* A floating-point separating direction, then a rigorous check of it (certified_bound): first
 * the cheap candidate of propose_direction, else (use_lp = 1) the LP
 *   max s  s.t.  (q_j - p)^T a + s <= 0 for every other point j,  -1 <= a <= 1.
 * Returns 1 and the certified lower bound in *lb when it proves dist_inf > tol, else 0. */
static int certify_vertex(as_hull *h, int k, int mo, const double *O, const double *p, double tol,
                          int use_lp, double *lb) {
  for (size_t e = 0; e < (size_t)mo * k; e++)
    if (!isfinite(O[e] - p[e % k])) return 0;
  double *dir = h->ps; /* free here: the exact path reuses it later */
  if (!propose_direction(k, mo, O, p, dir, h->qs)) return 0; /* k = 2: no separating sector */
  double bound = certified_bound(k, mo, O, p, dir);
  if (bound > tol) {
    *lb = bound;
    return 1;
  }
  if (!use_lp) return 0;
  /* The LP sees the differences scaled by a power of two to at most 1 in magnitude: the
   * direction does not depend on it, and GLPK's floating-point simplex fails an internal
   * assertion (aborting the process) on coefficients near the bottom of the double range. */
  double cmax = 0.0;
  for (size_t e = 0; e < (size_t)mo * k; e++) cmax = fmax(cmax, fabs(O[e] - p[e % k]));
  int ce = 0;
  (void)frexp(cmax, &ce);
  glp_prob *lp = h->lp;
  glp_erase_prob(lp);
  glp_set_obj_dir(lp, GLP_MAX);
  glp_add_cols(lp, k + 1);
  for (int a = 1; a <= k; a++) glp_set_col_bnds(lp, a, GLP_DB, -1.0, 1.0);
  glp_set_col_bnds(lp, k + 1, GLP_FR, 0.0, 0.0);
  glp_set_obj_coef(lp, k + 1, 1.0);
  glp_add_rows(lp, mo);
  int ne = 0;
  for (int j = 0; j < mo; j++) {
    glp_set_row_bnds(lp, j + 1, GLP_UP, 0.0, 0.0);
    for (int a = 0; a < k; a++) {
      double c = ldexp(O[(size_t)j * k + a] - p[a], -ce);
      if (c != 0.0) ne++, h->ia[ne] = j + 1, h->ja[ne] = a + 1, h->ar[ne] = c;
    }
    ne++, h->ia[ne] = j + 1, h->ja[ne] = k + 1, h->ar[ne] = 1.0;
  }
  glp_load_matrix(lp, ne, h->ia, h->ja, h->ar);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.it_lim = 50 * (mo + k + 1) + 1000;
  parm.tm_lim = 2000;
  if (glp_simplex(lp, &parm) != 0 || glp_get_status(lp) != GLP_OPT) return 0;
  if (!(glp_get_obj_val(lp) > 0.0)) return 0;
  for (int a = 0; a < k; a++) dir[a] = glp_get_col_prim(lp, a + 1);
  bound = certified_bound(k, mo, O, p, dir);
  if (!(bound > tol)) return 0;
  *lb = bound;
  return 1;
}

static int planar_separated(as_hull *h, int mo, const double *O, const double *p, double tol);
static int spatial_exact(const double *x, size_t len);
static int spatial_separated(as_hull *h, int mo, const double *O, const double *p, double tol);

as_status as_hull_is_vertex(as_hull *h, int k, int m, const double *Q, int i, double tol,
                            int *is_vertex, double *dist) {
  as_status st = AS_OK;
  AS_CHECK(h != NULL && Q != NULL && is_vertex != NULL, AS_ERR_ARG, "NULL argument");
  AS_CHECK(k >= 1 && k <= h->kmax && m >= 1 && m <= h->mmax && i >= 0 && i < m, AS_ERR_ARG,
           "vertex test: k = %d, m = %d, i = %d outside the object's %d x %d", k, m, i, h->kmax,
           h->mmax);
  AS_CHECK(tol >= 0.0, AS_ERR_ARG, "vertex tolerance %g negative", tol);
  AS_TRY(check_args(h, k, m, Q, Q + (size_t)i * k));
  const double *p = Q + (size_t)i * k;
  int mo = 0;
  for (int j = 0; j < m; j++) {
    const double *q = Q + (size_t)j * k;
    int same = 1;
    for (int a = 0; a < k && same; a++) same = q[a] == p[a];
    if (same) continue; /* row i and its exact copies */
    memcpy(h->other + (size_t)mo * k, q, (size_t)k * sizeof *q);
    mo++;
  }
  AS_ASSERT(mo < m); /* row i itself is never among the others */
  if (k == 2 && !dist && mo > 0 && as_hull_planar_exact(Q, 2 * (size_t)m) &&
      as_hull_planar_exact(&tol, 1)) {
    *is_vertex = planar_separated(h, mo, h->other, p, tol); /* exact, no LP */
    goto cleanup;
  }
  double dd = INFINITY;
  if (k == 3 && !dist && mo > 0 && mo <= AS_HULL_SPATIAL_MAX && spatial_exact(Q, 3 * (size_t)m) &&
      spatial_exact(&tol, 1)) {
    /* the cheap certified direction first (most vertices), then the exact test; no LP */
    *is_vertex = certify_vertex(h, k, mo, h->other, p, tol, 0, &dd) ||
                 spatial_separated(h, mo, h->other, p, tol);
    goto cleanup;
  }
  if (mo > 0 && !certify_vertex(h, k, mo, h->other, p, tol, 1, &dd))
    AS_TRY(as_hull_dist_inf(h, k, mo, h->other, p, &dd));
  *is_vertex = dd > tol;
  if (dist) *dist = dd;
cleanup:
  return st;
}

/* ------------------------------------------------------------------ 2-D vertex count */

/* a - b = s + *e exactly (Knuth's TwoSum on a and -b; round to nearest, no contraction: C11
 * mode, see CMakeLists.txt). */
static double two_diff(double a, double b, double *e) {
  double s = a - b, bv = a - s, av = s + bv;
  *e = (a - av) + (bv - b);
  return s;
}

/* Add b to the expansion e[0..m-1] (nonoverlapping, increasing magnitude, no zero component;
 * Shewchuk 1997, Grow-Expansion with zero elimination): the result is again such an expansion,
 * of the exact sum, so its last component (the largest) has the sign of the sum; empty when the
 * sum is 0. Returns its length, at most m + 1. */
static int grow_expansion(double *e, int m, double b) {
  double q = b;
  int len = 0;
  for (int i = 0; i < m; i++) {
    double s = q + e[i], bv = s - q, av = s - bv, err = (q - av) + (e[i] - bv);
    q = s;
    if (err != 0.0) e[len++] = err; /* len <= i: e[i] is read before */
  }
  if (q != 0.0) e[len++] = q;
  return len;
}

/* Sign of the orientation det [b - a, c - a] (> 0: counter-clockwise). A floating-point
 * filter first: the computed determinant errs by at most (3 u + 16 u^2)(|l| + |r|) (Shewchuk
 * 1997, ccwerrboundA; 4 u here, u = 2^-53); otherwise exactly: every difference split into
 * value plus error (two_diff), the eight products of the expanded determinant each split by
 * fma (exact unless they underflow) and summed as an exact expansion, whose largest nonzero
 * component has the sign of the whole. */
static __attribute__((noinline)) int orient2d_exact(const double *a, const double *b,
                                                    const double *c) {
  double e1, e2, e3, e4;
  double d1 = two_diff(b[0], a[0], &e1), d2 = two_diff(c[1], a[1], &e2);
  double d3 = two_diff(b[1], a[1], &e3), d4 = two_diff(c[0], a[0], &e4);
  const double x[8] = {d1, d1, e1, e1, -d3, -d3, -e3, -e3};
  const double y[8] = {d2, e2, d2, e2, d4, e4, d4, e4};
  double ex[17];
  int m = 0;
  for (int t = 0; t < 8; t++) {
    double p = x[t] * y[t];
    m = grow_expansion(ex, m, p);
    m = grow_expansion(ex, m, fma(x[t], y[t], -p));
  }
  for (int i = m - 1; i >= 0; i--)
    if (ex[i] != 0.0) return ex[i] > 0.0 ? 1 : -1;
  return 0;
}

/* The filter inline (most calls end there), the exact sum out of line. */
static inline int orient2d(const double *a, const double *b, const double *c) {
  double l = (b[0] - a[0]) * (c[1] - a[1]), r = (b[1] - a[1]) * (c[0] - a[0]);
  double det = l - r, bound = 0x1p-51 * (fabs(l) + fabs(r)); /* 4 u, u = 2^-53 */
  if (det > bound) return 1;
  if (-det > bound) return -1;
  return orient2d_exact(a, b, c);
}

/* ------------------------------------------------------------------ planar hulls */

/* Points are read with a stride (2: x, y; 3: x, y and the row they came from). */
static int lex_less(const double *a, const double *b) {
  return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]);
}

static int cmp_xy(const void *pa, const void *pb) {
  const double *a = pa, *b = pb;
  if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
  return (a[1] > b[1]) - (a[1] < b[1]);
}
static int cmp_xyi(const void *pa, const void *pb) {
  const double *a = pa, *b = pb;
  int c = cmp_xy(a, b);
  return c ? c : (a[2] > b[2]) - (a[2] < b[2]);
}

/* Sort n tuples of w <= 4 doubles by cmp: insertion sort for the classifier's small sets, qsort
 * above 32 (glibc's qsort is a merge sort through memmove: most of the time of a small sort). */
static void sort_tuples(double *a, int n, int w, int (*cmp)(const void *, const void *)) {
  if (n > 32) {
    qsort(a, (size_t)n, (size_t)w * sizeof *a, cmp);
    return;
  }
  for (int i = 1; i < n; i++) {
    double t[4];
    memcpy(t, a + (size_t)w * i, (size_t)w * sizeof *a);
    int j = i;
    for (; j > 0 && cmp(a + (size_t)w * (j - 1), t) > 0; j--)
      memcpy(a + (size_t)w * j, a + (size_t)w * (j - 1), (size_t)w * sizeof *a);
    memcpy(a + (size_t)w * j, t, (size_t)w * sizeof *a);
  }
}

/* Points are sorted lexicographically (x, then y, then the row for stride 3). */
static void sort_points(double *pts, int n, int stride) {
  sort_tuples(pts, n, stride, stride == 3 ? cmp_xyi : cmp_xy);
}

/* Andrew's monotone chain over the u distinct points at[0..u-1] (pointers, sorted
 * lexicographically): the strict vertices (collinear points are none) in counter-clockwise
 * order into stack[0..h-1] as indices into at; returns h (u when u <= 2). stack: 2 u + 2. */
static int monotone_chain(int u, const double *const *at, int *stack) {
  if (u <= 2) {
    for (int i = 0; i < u; i++) stack[i] = i;
    return u;
  }
  int h = 0;
  for (int i = 0; i < u; i++) { /* lower hull, left to right */
    while (h >= 2 && orient2d(at[stack[h - 2]], at[stack[h - 1]], at[i]) <= 0) h--;
    stack[h++] = i;
  }
  const int lower = h + 1; /* the upper chain never pops into the lower one */
  for (int i = u - 2; i >= 0; i--) {
    while (h >= lower && orient2d(at[stack[h - 2]], at[stack[h - 1]], at[i]) <= 0) h--;
    stack[h++] = i;
  }
  return h - 1; /* the first point closes the chain */
}

/* Is r beyond q on the ray from p through q (p, q, r collinear, q != p)? Exact: compares
 * coordinates along an axis on which q differs from p. */
static int beyond(const double *p, const double *q, const double *r) {
  int a = q[0] != p[0] ? 0 : 1;
  return q[a] > p[a] ? r[a] > q[a] : r[a] < q[a];
}

/* Gift wrapping over the n points pts[i * stride] (duplicates allowed, n >= 1): the strict
 * vertices in counter-clockwise order from the lexicographically smallest, as row indices
 * into out (n + 1 ints); returns their count. From each vertex p the next is the candidate q
 * with no point right of p -> q, the farthest on that line (so collinear points are none):
 * a strict vertex sees the others within an angle below pi, where the exact orientation
 * orders them totally. O(n h): for the classifier's small sets, instead of a sort. */
static int gift_wrap(int n, const double *pts, int stride, int *out) {
#define PT(i) (pts + (size_t)(i) * (size_t)stride)
  int start = 0;
  for (int i = 1; i < n; i++)
    if (lex_less(PT(i), PT(start))) start = i;
  int h = 0, cur = start;
  do {
    out[h++] = cur;
    const double *p = PT(cur);
    int q = -1;
    for (int r = 0; r < n; r++) {
      const double *pr = PT(r);
      if (pr[0] == p[0] && pr[1] == p[1]) continue; /* p itself and its copies */
      if (q < 0) {
        q = r;
        continue;
      }
      int o = orient2d(p, PT(q), pr);
      if (o < 0 || (o == 0 && beyond(p, PT(q), pr))) q = r;
    }
    if (q < 0) break; /* a single distinct point */
    cur = q;
  } while (!(PT(cur)[0] == PT(start)[0] && PT(cur)[1] == PT(start)[1]) && h <= n);
#undef PT
  return h;
}

static as_status check_finite_2d(int n, const double *P) {
  as_status st = AS_OK;
  for (size_t e = 0; e < 2 * (size_t)n; e++)
    AS_CHECK(isfinite(P[e]), AS_ERR_DATA, "2-D hull: point %zu coordinate %zu not finite", e / 2,
             e % 2);
cleanup:
  return st;
}

as_status as_hull_count_2d(int n, const double *P, double *scratch, int *stack, int *count) {
  as_status st = AS_OK;
  AS_CHECK(n >= 0 && count != NULL && (n == 0 || (P && scratch && stack)), AS_ERR_ARG,
           "2-D hull: NULL argument or n = %d", n);
  AS_TRY(check_finite_2d(n, P));
  if (n == 0) { /* no memcpy of a NULL array (UBSan), nothing to count */
    *count = 0;
    goto cleanup;
  }
  if (n <= AS_HULL_WRAP_MAX) { /* few points (few vertices): gift wrapping, no sort */
    *count = gift_wrap(n, P, 2, stack);
    goto cleanup;
  }
  /* Sort lexicographically, drop exact duplicates, chain. */
  memcpy(scratch, P, 2 * (size_t)n * sizeof *scratch);
  sort_points(scratch, n, 2);
  int u = 0;
  for (int i = 0; i < n; i++)
    if (u == 0 || scratch[2 * i] != scratch[2 * (u - 1)] ||
        scratch[2 * i + 1] != scratch[2 * (u - 1) + 1]) {
      scratch[2 * u] = scratch[2 * i];
      scratch[2 * u + 1] = scratch[2 * i + 1];
      u++;
    }
  if (u <= 2) {
    *count = u;
    goto cleanup;
  }
  const double **big = malloc((size_t)u * sizeof *big);
  AS_CHECK_ALLOC(big);
  for (int i = 0; i < u; i++) big[i] = scratch + 2 * i;
  *count = monotone_chain(u, big, stack);
  free(big);
cleanup:
  return st;
}

as_status as_hull_vertices_2d(int n, const double *P, double *scratch, int *iscratch, int *flags,
                              int *count) {
  as_status st = AS_OK;
  const double **at = NULL;
  AS_CHECK(n >= 0 && count != NULL && (n == 0 || (P && scratch && iscratch && flags)), AS_ERR_ARG,
           "2-D hull: NULL argument or n = %d", n);
  AS_TRY(check_finite_2d(n, P));
  *count = 0;
  if (n == 0) goto cleanup;
  if (n <= AS_HULL_WRAP_MAX) { /* gift wrapping; a row is flagged when it equals a vertex */
    int h = gift_wrap(n, P, 2, iscratch);
    for (int i = 0; i < n; i++) {
      flags[i] = 0;
      for (int v = 0; v < h && !flags[i]; v++)
        flags[i] = P[2 * i] == P[2 * iscratch[v]] && P[2 * i + 1] == P[2 * iscratch[v] + 1];
    }
    *count = h;
    goto cleanup;
  }
  /* (x, y, row) triples sorted; first[g] the sorted position of group g of equal points. */
  for (int i = 0; i < n; i++)
    scratch[3 * i] = P[2 * i], scratch[3 * i + 1] = P[2 * i + 1], scratch[3 * i + 2] = i;
  sort_points(scratch, n, 3);
  int *stack = iscratch, *first = iscratch + 2 * n + 2, *isv = first + n;
  int u = 0;
  for (int i = 0; i < n; i++)
    if (u == 0 || scratch[3 * i] != scratch[3 * first[u - 1]] ||
        scratch[3 * i + 1] != scratch[3 * first[u - 1] + 1])
      first[u++] = i;
  at = malloc((size_t)u * sizeof *at);
  AS_CHECK_ALLOC(at);
  for (int g = 0; g < u; g++) at[g] = scratch + 3 * first[g], isv[g] = 0;
  int h = monotone_chain(u, at, stack);
  for (int v = 0; v < h; v++) isv[stack[v]] = 1;
  for (int g = 0; g < u; g++) {
    int end = g + 1 < u ? first[g + 1] : n;
    for (int i = first[g]; i < end; i++) flags[(int)scratch[3 * i + 2]] = isv[g];
  }
  *count = h;
cleanup:
  free((void *)at);
  return st;
}

/* ------------------------------------------------------------------ planar vertex test */

/* 1 when every value is 0 or of magnitude in [2^-450, 2^450] (hull.h). Then a difference of two is
 * 0 or at least 2^-503 in magnitude with an exact error term that is a multiple of 2^-503, so every
 * product of two such terms and its fma error is 0 or a normal double (>= 2^-1006) and nothing
 * overflows: the expansions below are exact. */
int as_hull_planar_exact(const double *x, size_t len) {
  const double lo = 0x1p-450, hi = 0x1p450;
  for (size_t e = 0; e < len; e++) {
    double a = fabs(x[e]);
    if (a != 0.0 && !(a >= lo && a <= hi)) return 0;
  }
  return 1;
}

/* The sign of the exact sum of the terms (doubles) t[0..m-1], m <= AS_HULL_TERMS_MAX. */
static int sum_sign(const double *t, int m) {
  double ex[AS_HULL_TERMS_MAX];
  int len = 0;
  AS_ASSERT(m <= AS_HULL_TERMS_MAX);
  for (int i = 0; i < m; i++)
    if (t[i] != 0.0) len = grow_expansion(ex, len, t[i]);
  return len == 0 ? 0 : ex[len - 1] > 0.0 ? 1 : -1;
}

/* The box p + [-tol, tol]^2 lies strictly beyond the line through the hull edge u -> v
 * (counter-clockwise, so the hull is on its left): with e = v - u,
 *   E = e_y (p_x - u_x) - e_x (p_y - u_y) - tol (|e_x| + |e_y|) > 0,
 * decided by a floating-point filter, else exactly (every difference as value plus error,
 * every product split by fma, the sign of the exact sum). */
static int box_beyond_edge(const double *u, const double *v, const double *p, double tol) {
  double ex = v[0] - u[0], ey = v[1] - u[1], px = p[0] - u[0], py = p[1] - u[1];
  double l1 = ey * px, l2 = ex * py, l3 = tol * fabs(ex), l4 = tol * fabs(ey);
  double E = ((l1 - l2) - l3) - l4;
  double bound = 10.0 * ldexp(1.0, -53) * (fabs(l1) + fabs(l2) + l3 + l4);
  if (E > bound) return 1;
  if (-E > bound) return 0;
  double eex, eey, epx, epy;
  ex = two_diff(v[0], u[0], &eex), ey = two_diff(v[1], u[1], &eey);
  px = two_diff(p[0], u[0], &epx), py = two_diff(p[1], u[1], &epy);
  /* |e_x| = sx (ex + eex), sx the sign of the exact difference (that of ex, or of eex when
   * ex = 0, in which case eex = 0 too: two_diff of equal values) */
  const double sx = ex < 0.0 ? -1.0 : 1.0, sy = ey < 0.0 ? -1.0 : 1.0;
  const double a[12] = {ey,   ey,   eey,       eey,       -ex,       -ex,
                        -eex, -eex, -sx * tol, -sx * tol, -sy * tol, -sy * tol};
  const double b[12] = {px, epx, px, epx, py, epy, py, epy, ex, eex, ey, eey};
  double t[24];
  for (int i = 0; i < 12; i++) {
    t[2 * i] = a[i] * b[i];
    t[2 * i + 1] = fma(a[i], b[i], -t[2 * i]);
  }
  return sum_sign(t, 24) > 0;
}

/* Is p at L-infinity distance > tol from the hull of the mo points O (mo >= 1, none equal to
 * p)? The box B = p + [-tol, tol]^2 and the hull H are disjoint iff f(w) = min_B w.x -
 * max_H w.x > 0 for some direction w. f is continuous, and between two consecutive
 * breakpoints on the circle of directions (the outward edge normals of H and the four axis
 * directions) it is (b - a).w for a fixed vertex a of H and b of B: positive on an open arc
 * of length pi at most, while those arcs are at most pi/2 long. So f > 0 somewhere iff f > 0
 * at a breakpoint. Axis directions: p_a - tol > max_j q_ja or p_a + tol < min_j q_ja; edge
 * normals: box_beyond_edge on the exact hull (a segment has both normals, a point none).
 * Exact when as_hull_planar_exact holds (checked by the caller). Scratch from h: qs (2 mo
 * doubles), at (mo pointers), stack (2 mo + 2 ints). */
static int planar_separated(as_hull *h, int mo, const double *O, const double *p, double tol) {
  for (int a = 0; a < 2; a++) {
    double lo = O[a], hi = O[a];
    for (int j = 1; j < mo; j++) lo = fmin(lo, O[2 * j + a]), hi = fmax(hi, O[2 * j + a]);
    if (sum_sign((const double[]){p[a], -tol, -hi}, 3) > 0) return 1;
    if (sum_sign((const double[]){lo, -p[a], -tol}, 3) > 0) return 1;
  }
  if (mo <= AS_HULL_WRAP_MAX) {
    int nh = gift_wrap(mo, O, 2, h->stack);
    for (int e = 0; nh >= 2 && e < nh; e++)
      if (box_beyond_edge(O + 2 * h->stack[e], O + 2 * h->stack[(e + 1) % nh], p, tol)) return 1;
    return 0;
  }
  double *q = h->qs;
  memcpy(q, O, 2 * (size_t)mo * sizeof *q);
  sort_points(q, mo, 2);
  int u = 0;
  for (int i = 0; i < mo; i++)
    if (u == 0 || q[2 * i] != q[2 * (u - 1)] || q[2 * i + 1] != q[2 * (u - 1) + 1]) {
      q[2 * u] = q[2 * i];
      q[2 * u + 1] = q[2 * i + 1];
      u++;
    }
  if (u < 2) return 0; /* one point: the axis directions decided */
  for (int i = 0; i < u; i++) h->at[i] = q + 2 * i;
  int nh = monotone_chain(u, h->at, h->stack);
  for (int e = 0; e < nh; e++) {
    const double *a = h->at[h->stack[e]], *b = h->at[h->stack[(e + 1) % nh]];
    if (box_beyond_edge(a, b, p, tol)) return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------ spatial vertex test */

/* 1 when every value is 0 or of magnitude in [2^-280, 2^280]: then the 3-D vertex test below is
 * exact. Why: such a value is a multiple of 2^-332 (its last mantissa bit is at least
 * 2^(-280 - 52)), and so are the difference of two, its rounding and its two_diff error term.
 * A product of two such factors, rounded or exact, and its fma error term are multiples of
 * 2^-664; a product of three (a plane normal times a difference, or times tol) and its error
 * term multiples of 2^-996; a rounded or exact sum of multiples of 2^-K is one too. So every
 * quantity formed below, in floating point or in an expansion, is 0 or at least 2^-996 > 2^-1022
 * in magnitude: nothing is subnormal, every operation errs by at most u = 2^-53 relative (the
 * filters' bounds hold) and every error term is a double (the expansions are exact). The
 * largest: differences below 2^281, products of three below 2^843, sums of at most 288 of them
 * below 2^852, far from overflow. The same holds for the certified direction of
 * certify_vertex: p minus the mean of at most AS_HULL_SPATIAL_MAX points is 0 or above 2^-389. */
static int spatial_exact(const double *x, size_t len) {
  const double lo = 0x1p-280, hi = 0x1p280;
  for (size_t e = 0; e < len; e++) {
    double a = fabs(x[e]);
    if (a != 0.0 && !(a >= lo && a <= hi)) return 0;
  }
  return 1;
}

/* The exact sign of  sigma n.(p - q) - tol |n|_1,  n = (b - a) x (c - a): every difference as
 * value plus error (two_diff), each component of n as an exact expansion (its 16 products split
 * by fma), its sign read off the expansion (so |n_x| = sign * n_x exactly), then the sign of the
 * exact sum of the products of those components with the differences p - q and with tol, each
 * split by fma (at most 3 x 16 x 6 = AS_HULL_TERMS_MAX terms). Exact when spatial_exact holds. */
static __attribute__((noinline)) int plane_sign_exact(const double *a, const double *b,
                                                      const double *c, const double *p,
                                                      const double *q, double tol, int sigma) {
  double B[3][2], C[3][2], D[3][2], t[AS_HULL_TERMS_MAX];
  int nt = 0;
  for (int x = 0; x < 3; x++) {
    B[x][0] = two_diff(b[x], a[x], &B[x][1]);
    C[x][0] = two_diff(c[x], a[x], &C[x][1]);
    D[x][0] = two_diff(p[x], q[x], &D[x][1]);
  }
  for (int x = 0; x < 3; x++) {
    const int y = (x + 1) % 3, z = (x + 2) % 3;
    double nx[16];
    int len = 0;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        const double f[2][2] = {{B[y][i], C[z][j]}, {-B[z][i], C[y][j]}};
        for (int s = 0; s < 2; s++) {
          double pr = f[s][0] * f[s][1], er = fma(f[s][0], f[s][1], -pr);
          if (pr != 0.0) len = grow_expansion(nx, len, pr);
          if (er != 0.0) len = grow_expansion(nx, len, er);
        }
      }
    const double sx = len > 0 && nx[len - 1] < 0.0 ? -1.0 : 1.0;
    for (int e = 0; e < len; e++) {
      const double g[3][2] = {
          {sigma * nx[e], D[x][0]}, {sigma * nx[e], D[x][1]}, {-sx * nx[e], tol}};
      for (int s = 0; s < 3; s++) {
        double pr = g[s][0] * g[s][1];
        t[nt++] = pr;
        t[nt++] = fma(g[s][0], g[s][1], -pr);
      }
    }
  }
  return sum_sign(t, nt);
}

/* The sign of  sigma n.(p - q) - tol |n|_1  for the plane through a, b, c (n, m as computed in
 * spatial_separated, n the rounded normal, m_x = |B_y C_z| + |B_z C_y| rounded, N = |n|_1 and
 * M = sum m_x rounded). The floating-point value errs by less than 16 u S, S = sum_x m_x |D_x| +
 * tol M (D = p - q rounded): each difference has relative error <= u, each n_x errs by at most
 * (4 u + O(u^2)) m_x, so the dot product n.D by <= (8 u + O(u^2)) sum_x m_x |D_x|, tol N by <=
 * (7 u + O(u^2)) tol M, and the last subtraction adds u of their sum; S itself is computed with
 * relative error below 6 u. Nothing underflows (spatial_exact), and the test |F| 2^49 > S scales
 * up, so the bound is never rounded to a subnormal. Otherwise the exact sign. */
static int plane_sign(const double *n, const double *m, double N, double M, const double *a,
                      const double *b, const double *c, const double *p, const double *q,
                      double tol, int sigma) {
  const double d0 = p[0] - q[0], d1 = p[1] - q[1], d2 = p[2] - q[2];
  const double dot = (n[0] * d0 + n[1] * d1) + n[2] * d2;
  const double F = (sigma > 0 ? dot : -dot) - tol * N;
  const double S = ((m[0] * fabs(d0) + m[1] * fabs(d1)) + m[2] * fabs(d2)) + tol * M;
  const double Fs = F * 0x1p49; /* 16 u = 2^-49 */
  if (Fs > S) return 1;
  if (-Fs > S) return -1;
  return plane_sign_exact(a, b, c, p, q, tol, sigma);
}

/* The normal n = (b - a) x (c - a) rounded, m_x = |B_y C_z| + |B_z C_y| rounded (B = b - a,
 * C = c - a rounded), *N = |n|_1 and *M = sum m_x rounded, for plane_sign. Returns 0 when every
 * product is 0, i.e. n = 0 exactly (nothing underflows, spatial_exact). */
static int plane_normal(const double *a, const double *b, const double *c, double *n, double *m,
                        double *N, double *M) {
  for (int x = 0; x < 3; x++) {
    const int y = (x + 1) % 3, z = (x + 2) % 3;
    double l = (b[y] - a[y]) * (c[z] - a[z]), r = (b[z] - a[z]) * (c[y] - a[y]);
    n[x] = l - r;
    m[x] = fabs(l) + fabs(r);
  }
  *N = (fabs(n[0]) + fabs(n[1])) + fabs(n[2]);
  *M = (m[0] + m[1]) + m[2];
  return *M != 0.0;
}

/* The exact sign of det [b - a, c - a, d - a] = n.(d - a) (positive: d on the side n points
 * to). */
static int orient3d(const double *a, const double *b, const double *c, const double *d) {
  double n[3], m[3], N, M;
  if (!plane_normal(a, b, c, n, m, &N, &M)) return 0;
  return plane_sign(n, m, N, M, a, b, c, d, a, 0.0, 1);
}

/* A shortcut for the points that are no vertex: is p in a (closed) tetrahedron of 4 of the mo
 * points O? Then p lies in their hull and the box about it meets the hull. A walk: from a
 * non-degenerate tetrahedron, while p lies strictly beyond one of its faces, the vertex
 * opposite that face is replaced by the point farthest beyond it (chosen in floating point,
 * checked exactly to lie strictly beyond, so the tetrahedron stays non-degenerate), at most
 * 4 mo steps. Returns 1 only with that exact proof; 0 says nothing (degenerate points, p
 * outside, or no proof found in time). */
static int inside_tetrahedron(int mo, const double *O, const double *p) {
  if (mo < 4) return 0;
#define PT(j) (O + 3 * (size_t)(j))
  int t[4] = {0, 0, 0, 0};
  double best = 0.0, u[3], n[3], m[3], N, M;
  for (int j = 1; j < mo; j++) { /* the farthest from the first point */
    double s = 0.0;
    for (int a = 0; a < 3; a++) s += (PT(j)[a] - O[a]) * (PT(j)[a] - O[a]);
    if (s > best) best = s, t[1] = j;
  }
  for (int a = 0; a < 3; a++) u[a] = PT(t[1])[a] - O[a];
  best = 0.0;
  for (int j = 1; j < mo; j++) { /* the farthest from that line */
    double v[3], s = 0.0;
    for (int a = 0; a < 3; a++) v[a] = PT(j)[a] - O[a];
    for (int a = 0; a < 3; a++) {
      double c = u[(a + 1) % 3] * v[(a + 2) % 3] - u[(a + 2) % 3] * v[(a + 1) % 3];
      s += c * c;
    }
    if (s > best) best = s, t[2] = j;
  }
  if (!plane_normal(O, PT(t[1]), PT(t[2]), n, m, &N, &M)) return 0;
  best = 0.0;
  for (int j = 1; j < mo; j++) { /* the farthest from that plane */
    double s = fabs(n[0] * (PT(j)[0] - O[0]) + n[1] * (PT(j)[1] - O[1]) + n[2] * (PT(j)[2] - O[2]));
    if (s > best) best = s, t[3] = j;
  }
  if (orient3d(O, PT(t[1]), PT(t[2]), PT(t[3])) == 0) return 0;
  for (int step = 0; step < 4 * mo; step++) {
    int out = -1, so = 0;
    const double *f0 = NULL, *f1 = NULL, *f2 = NULL;
    for (int k = 0; k < 4 && out < 0; k++) { /* a face that p lies strictly beyond */
      f0 = PT(t[(k + 1) % 4]), f1 = PT(t[(k + 2) % 4]), f2 = PT(t[(k + 3) % 4]);
      so = orient3d(f0, f1, f2, PT(t[k]));
      int sp = orient3d(f0, f1, f2, p);
      if (sp != 0 && sp != so) out = k;
    }
    if (out < 0) return 1; /* p on the inner side of (or on) every face */
    if (!plane_normal(f0, f1, f2, n, m, &N, &M)) return 0;
    int next = -1;
    best = 0.0;
    for (int j = 0; j < mo; j++) { /* the farthest beyond that face, on p's side */
      double s =
          -so * (n[0] * (PT(j)[0] - f0[0]) + n[1] * (PT(j)[1] - f0[1]) + n[2] * (PT(j)[2] - f0[2]));
      if (s > best) best = s, next = j;
    }
    if (next < 0 || orient3d(f0, f1, f2, PT(next)) != -so) return 0;
    t[out] = next;
  }
#undef PT
  return 0;
}

/* Is p at L-infinity distance > tol from the hull H of the mo points O (3-D, 1 <= mo <=
 * AS_HULL_SPATIAL_MAX, none equal to p)? Iff the box B = p + [-tol, tol]^3 and H are disjoint, iff
 * some w has  w.p - tol |w|_1 > max_j w.q_j. Both are polytopes, so B - H is one (full-
 * dimensional when tol > 0), and B, H are disjoint iff 0 lies outside B - H, iff some facet
 * normal of B - H separates. A facet of a Minkowski sum is a face of B plus a face of H, the
 * sum 2-dimensional, so its normal is a facet normal of B (an axis), the normal of a
 * 2-dimensional face of H (a plane through three of the points), or orthogonal to an edge of B
 * (an axis e_a) and an edge of H (q_j - q_i): e_a x (q_j - q_i). This holds for a degenerate H
 * (a polygon, a segment, a point) too. For tol = 0 (B a point): p is at distance > tol' from H
 * for some tol' > 0, and the same finite set of candidates, which does not depend on tol,
 * separates the larger box. Candidates:
 * - the axes and the products e_a x (q_j - q_i): a w orthogonal to e_a separates iff it
 *   separates the projections along e_a (a square and a polygon), which planar_separated
 *   decides exactly (its axes and its hull's edge normals), three times;
 * - the planes through three of the points, both signs of their normal n: for every point,
 *   sigma n.(p - q_j) - tol |n|_1 > 0 (plane_sign; q_a, q_b, q_c give the same value, and a
 *   zero normal, found exactly by its rounded products being 0, separates nothing).
 * Every candidate found separates, so the answer is exact: the same as dist_inf > tol by the
 * exact LP. Exact when spatial_exact holds (checked by the caller). Scratch: h->qs (2 mo doubles,
 * see AS_HULL_SPATIAL_MAX) and what planar_separated uses. */
static int spatial_separated(as_hull *h, int mo, const double *O, const double *p, double tol) {
  double *pr = h->qs;
  for (int a = 0; a < 3; a++) {
    const int y = (a + 1) % 3, z = (a + 2) % 3;
    for (int j = 0; j < mo; j++) pr[2 * j] = O[3 * j + y], pr[2 * j + 1] = O[3 * j + z];
    const double p2[2] = {p[y], p[z]};
    if (planar_separated(h, mo, pr, p2, tol)) return 1;
  }
  if (inside_tetrahedron(mo, O, p)) return 0; /* p in H: no candidate separates */
  for (int ia = 0; ia < mo; ia++)
    for (int ib = ia + 1; ib < mo; ib++)
      for (int ic = ib + 1; ic < mo; ic++) {
        const double *qa = O + 3 * ia, *qb = O + 3 * ib, *qc = O + 3 * ic;
        double n[3], m[3], N, M;
        if (!plane_normal(qa, qb, qc, n, m, &N, &M)) continue; /* n = 0 separates nothing */
        int sigma = 1; /* the side of the plane's own points decides the sign */
        if (plane_sign(n, m, N, M, qa, qb, qc, p, qa, tol, 1) <= 0) {
          sigma = -1;
          if (plane_sign(n, m, N, M, qa, qb, qc, p, qa, tol, -1) <= 0) continue;
        }
        int all = 1;
        for (int j = 0; j < mo && all; j++)
          if (j != ia && j != ib && j != ic)
            all = plane_sign(n, m, N, M, qa, qb, qc, p, O + 3 * j, tol, sigma) > 0;
        if (all) return 1;
      }
  return 0;
}

/* ------------------------------------------------------------------ 3-D vertex count */

/* Exact 3-D collinearity: the three components of (b - a) x (c - a) are the orientations of the
 * projections onto the coordinate planes, each exact in the planar range (which contains the
 * spatial one). */
static int collinear3(const double *a, const double *b, const double *c) {
  for (int x = 0; x < 3; x++) {
    const int y = (x + 1) % 3;
    const double a2[2] = {a[x], a[y]}, b2[2] = {b[x], b[y]}, c2[2] = {c[x], c[y]};
    if (orient2d(a2, b2, c2) != 0) return 0;
  }
  return 1;
}

static int cmp_xyz(const void *pa, const void *pb) {
  const double *a = pa, *b = pb;
  for (int x = 0; x < 3; x++)
    if (a[x] != b[x]) return a[x] < b[x] ? -1 : 1;
  return 0;
}

/* Facet f of the 3-D hull: vertices h->fv[3f..3f+2] (indices of h->p3), oriented so that the
 * normal n = (b - a) x (c - a) points out of the hull (a point inside: orient3d < 0); neighbour
 * across the edge from vertex e to vertex e + 1: h->fnb[3f + e]. */
static void facet3_set(as_hull *h, int f, int a, int b, int c) {
  const double *P = h->p3;
  h->fv[3 * f] = a, h->fv[3 * f + 1] = b, h->fv[3 * f + 2] = c;
  double *g = h->fn + (size_t)F3_N * f;
  int ok =
      plane_normal(P + 3 * (size_t)a, P + 3 * (size_t)b, P + 3 * (size_t)c, g, g + 3, g + 6, g + 7);
  AS_ASSERT(ok); /* a facet is a proper triangle (hull.h) */
  (void)ok;
  h->fvis[f] = 0;
  h->falive[f] = 1;
}

/* orient3d of facet f's plane and point q, from the cached normal. */
static int facet3_side(const as_hull *h, int f, const double *q) {
  const double *P = h->p3, *g = h->fn + (size_t)F3_N * f;
  const double *a = P + 3 * (size_t)h->fv[3 * f], *b = P + 3 * (size_t)h->fv[3 * f + 1],
               *c = P + 3 * (size_t)h->fv[3 * f + 2];
  return plane_sign(g, g + 3, g[6], g[7], a, b, c, q, a, 0.0, 1);
}

static int facet3_has(const as_hull *h, int f, int v) {
  return h->fv[3 * f] == v || h->fv[3 * f + 1] == v || h->fv[3 * f + 2] == v;
}

/* The slot of facet g's edge from vertex a to vertex b (-1: none). */
static int facet3_edge(const as_hull *h, int g, int a, int b) {
  for (int e = 0; e < 3; e++)
    if (h->fv[3 * g + e] == a && h->fv[3 * g + (e + 1) % 3] == b) return e;
  return -1;
}

/* Is the hull vertex v (in facet f0, slot e0) extreme? Its incident facets, walked around v
 * through the neighbours, lie in at least three distinct planes: the normal cone of v is then
 * full-dimensional. A point inside a face of the hull has all its facets in one plane, a point
 * inside an edge in two (the two faces of that edge). Two facets through v share a plane iff
 * the vertices of one lie on the other's plane (exact). */
static int vertex3_extreme(const as_hull *h, int f0, int e0) {
  const double *P = h->p3;
  const int v = h->fv[3 * f0 + e0];
  int f = f0, e = e0, g1 = -1, steps = 0;
  do {
    int plane0 = 1, plane1 = g1 >= 0;
    for (int s = 0; s < 3; s++) { /* a vertex of the facet itself is on its plane: no test */
      const int w = h->fv[3 * f + s];
      if (plane0 && !facet3_has(h, f0, w) && facet3_side(h, f0, P + 3 * (size_t)w) != 0) plane0 = 0;
      if (plane1 && !facet3_has(h, g1, w) && facet3_side(h, g1, P + 3 * (size_t)w) != 0) plane1 = 0;
    }
    if (!plane0 && g1 < 0)
      g1 = f;
    else if (!plane0 && !plane1)
      return 1; /* a third plane */
    /* the next facet around v: across the edge from the vertex before v to v */
    const int prev = h->fv[3 * f + (e + 2) % 3], g = h->fnb[3 * f + (e + 2) % 3];
    AS_ASSERT(g >= 0 && h->falive[g]);
    e = facet3_edge(h, g, v, prev);
    AS_ASSERT(e >= 0);
    f = g;
    steps++;
    AS_ASSERT(steps <= h->fcap);
  } while (f != f0);
  return 0;
}

/* (key, index) pairs: by key, then by index. */
static int cmp_key(const void *pa, const void *pb) {
  const double *a = pa, *b = pb;
  if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
  return (a[1] > b[1]) - (a[1] < b[1]);
}

static int cmp_xyzi(const void *pa, const void *pb) {
  const int c = cmp_xyz(pa, pb);
  const double *a = pa, *b = pb;
  return c ? c : (a[3] > b[3]) - (a[3] < b[3]);
}

as_status as_hull_count_3d(as_hull *h, int n, const double *P, int *count) {
  return as_hull_vertices_3d(h, n, P, NULL, count);
}

as_status as_hull_vertices_3d(as_hull *h, int n, const double *P, int *flags, int *count) {
  as_status st = AS_OK;
  AS_CHECK(h != NULL && count != NULL && n >= 0 && (n == 0 || P != NULL), AS_ERR_ARG,
           "3-D hull: NULL argument or n = %d", n);
  AS_CHECK(h->kmax >= 3, AS_ERR_ARG, "3-D hull on an object of %d coordinates", h->kmax);
  for (size_t e = 0; e < 3 * (size_t)n; e++)
    AS_CHECK(isfinite(P[e]), AS_ERR_DATA, "3-D hull: point %zu coordinate %zu not finite", e / 3,
             e % 3);
  *count = n == 0 ? 0 : -1;
  if (n == 0 || n > h->n3max || !spatial_exact(P, 3 * (size_t)n))
    goto cleanup; /* -1: not counted */
  /* the distinct points, sorted (x, y, z, row: h->p4); first[g]: the sorted position of the
   * first row of distinct point g (h->first), the point itself at D + 3 g */
  double *D = h->p3, *S = h->p4;
  int *first = h->first, *isv = h->isv;
  for (int i = 0; i < n; i++)
    S[4 * i] = P[3 * i], S[4 * i + 1] = P[3 * i + 1], S[4 * i + 2] = P[3 * i + 2], S[4 * i + 3] = i;
  sort_tuples(S, n, 4, cmp_xyzi);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || cmp_xyz(S + 4 * (size_t)i, D + 3 * (size_t)(m - 1)) != 0) {
      memcpy(D + 3 * (size_t)m, S + 4 * (size_t)i, 3 * sizeof *D);
      first[m++] = i;
    }
  for (int g = 0; g < m; g++) isv[g] = 0;
#define PT(i) (D + 3 * (size_t)(i))
  if (m <= 2) {
    for (int g = 0; g < m; g++) isv[g] = 1;
    *count = m;
    goto flag;
  }
  /* The order of insertion: the farthest from the centroid first (distances in floating point:
   * any order builds the same hull; in this one the later points tend to fall inside it and
   * cost one pass over its facets), ties by the order (x, y, z). */
  int *ord = h->ord;
  double cen[3] = {0.0, 0.0, 0.0};
  for (int g = 0; g < m; g++)
    for (int x = 0; x < 3; x++) cen[x] += PT(g)[x];
  for (int x = 0; x < 3; x++) cen[x] /= m;
  for (int g = 0; g < m; g++) {
    double r = 0.0;
    for (int x = 0; x < 3; x++) r += (PT(g)[x] - cen[x]) * (PT(g)[x] - cen[x]);
    h->p2[2 * g] = -r, h->p2[2 * g + 1] = g;
  }
  sort_tuples(h->p2, m, 2, cmp_key);
  for (int g = 0; g < m; g++) ord[g] = (int)h->p2[2 * g + 1];
  const int t0 = ord[0], t1 = ord[1];
  int t2 = -1, t3 = -1;
  for (int i = 2; i < m && t2 < 0; i++)
    if (!collinear3(PT(t0), PT(t1), PT(ord[i]))) t2 = ord[i];
  if (t2 < 0) { /* all on one line: its two ends, the first and the last in the order (x, y, z) */
    isv[0] = isv[m - 1] = 1;
    *count = 2;
    goto flag;
  }
  for (int i = 2; i < m && t3 < 0; i++)
    if (ord[i] != t2 && orient3d(PT(t0), PT(t1), PT(t2), PT(ord[i])) != 0) t3 = ord[i];
  if (t3 < 0) {
    /* all in one plane: the 2-D hull of the projection onto a coordinate plane on which the
     * first triangle does not degenerate (an affine bijection of the plane: it keeps which
     * points are distinct and which are vertices) */
    int x = 0;
    for (; x < 3; x++) {
      const int y = (x + 1) % 3;
      const double a2[2] = {PT(t0)[x], PT(t0)[y]}, b2[2] = {PT(t1)[x], PT(t1)[y]},
                   c2[2] = {PT(t2)[x], PT(t2)[y]};
      if (orient2d(a2, b2, c2) != 0) break;
    }
    AS_ASSERT(x < 3);
    const int y = (x + 1) % 3;
    for (int i = 0; i < m; i++) h->p2[2 * i] = PT(i)[x], h->p2[2 * i + 1] = PT(i)[y];
    AS_TRY(as_hull_vertices_2d(m, h->p2, h->p2 + 2 * (size_t)m, h->i2, isv, count));
    goto flag;
  }
  /* the first tetrahedron, every face oriented away from the vertex opposite it */
  const int t[4] = {t0, t1, t2, t3};
  int nf = 0, nfree = 0;
  for (int o = 0; o < 4; o++) {
    int a = t[(o + 1) % 4], b = t[(o + 2) % 4], c = t[(o + 3) % 4];
    if (orient3d(PT(a), PT(b), PT(c), PT(t[o])) > 0) {
      int s = b;
      b = c, c = s;
    }
    facet3_set(h, nf++, a, b, c);
  }
  for (int f = 0; f < 4; f++)
    for (int e = 0; e < 3; e++) {
      const int a = h->fv[3 * f + e], b = h->fv[3 * f + (e + 1) % 3];
      h->fnb[3 * f + e] = -1;
      for (int g = 0; g < 4 && h->fnb[3 * f + e] < 0; g++)
        if (g != f && facet3_edge(h, g, b, a) >= 0) h->fnb[3 * f + e] = g;
      AS_ASSERT(h->fnb[3 * f + e] >= 0);
    }
  for (int i = 0; i < m; i++) h->by_start[i] = h->by_end[i] = -1;
  /* every other point: the facets it sees strictly (its side of their plane) go, and the
   * horizon (their edges to facets it does not see) is joined to it; a point that sees none
   * lies in the hull of the points before it */
  for (int r = 2; r < m; r++) {
    const int p = ord[r];
    if (p == t2 || p == t3) continue;
    /* the facets p sees, listed after the free slots (they become free slots) */
    int *vis = h->ffree + nfree, nvis = 0;
    for (int f = 0; f < nf; f++)
      if (h->falive[f] && (h->fvis[f] = facet3_side(h, f, PT(p)) > 0)) vis[nvis++] = f;
    if (nvis == 0) continue;
    int nh = 0; /* horizon edge i: h->hz[4i..4i+3] = a, b, the facet beyond, the new facet */
    for (int j = 0; j < nvis; j++) {
      const int f = vis[j];
      for (int e = 0; e < 3; e++) {
        const int g = h->fnb[3 * f + e];
        if (h->fvis[g]) continue;
        AS_ASSERT(nh < h->fcap);
        h->hz[4 * nh] = h->fv[3 * f + e], h->hz[4 * nh + 1] = h->fv[3 * f + (e + 1) % 3];
        h->hz[4 * nh + 2] = g;
        nh++;
      }
    }
    for (int j = 0; j < nvis; j++) h->falive[vis[j]] = 0, h->fvis[vis[j]] = 0;
    nfree += nvis;
    for (int i = 0; i < nh; i++) { /* facet (a, b, p) over the horizon edge a -> b */
      const int a = h->hz[4 * i], b = h->hz[4 * i + 1], g = h->hz[4 * i + 2];
      const int F = nfree > 0 ? h->ffree[--nfree] : nf++;
      AS_ASSERT(F < h->fcap);
      facet3_set(h, F, a, b, p);
      const int eg = facet3_edge(h, g, b, a);
      AS_ASSERT(eg >= 0);
      h->fnb[3 * F] = g, h->fnb[3 * g + eg] = F;
      AS_ASSERT(h->by_start[a] < 0 && h->by_end[b] < 0); /* the horizon is a simple cycle */
      h->by_start[a] = F, h->by_end[b] = F;
      h->hz[4 * i + 3] = F;
    }
    for (int i = 0; i < nh; i++) {
      const int a = h->hz[4 * i], b = h->hz[4 * i + 1], F = h->hz[4 * i + 3];
      AS_ASSERT(h->by_start[b] >= 0 && h->by_end[a] >= 0);
      h->fnb[3 * F + 1] = h->by_start[b]; /* edge b -> p: the new facet from b */
      h->fnb[3 * F + 2] = h->by_end[a];   /* edge p -> a: the new facet to a */
    }
    for (int i = 0; i < nh; i++) h->by_start[h->hz[4 * i]] = h->by_end[h->hz[4 * i + 1]] = -1;
  }
  /* the extreme points among the hull's vertices, each looked at once */
  for (int i = 0; i < m; i++) h->by_start[i] = 0;
  int c = 0;
  for (int f = 0; f < nf; f++)
    for (int e = 0; e < 3 && h->falive[f]; e++) {
      const int v = h->fv[3 * f + e];
      if (h->by_start[v]) continue;
      h->by_start[v] = 1;
      c += isv[v] = vertex3_extreme(h, f, e);
    }
  *count = c;
flag:
  if (flags)
    for (int g = 0; g < m; g++) {
      const int end = g + 1 < m ? first[g + 1] : n;
      for (int i = first[g]; i < end; i++) flags[(int)S[4 * (size_t)i + 3]] = isv[g];
    }
#undef PT
cleanup:
  return st;
}
