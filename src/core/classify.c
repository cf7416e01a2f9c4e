/* classify.c: observables of an end state, its geometry, and the verdict (classify.h). */
#include "attnsweep/classify.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/attention.h"
#include "attnsweep/hull.h"
#include "attnsweep/measure.h"
#include "attnsweep/observe.h"
#include "attnsweep/rng.h"
#include "attnsweep/theorem.h"
#include "attnsweep/trial.h"
#include "linalg.h"
#include "linkage.h"
#include "verdict.h"

struct as_classify_ws {
  int n, d;
  double *W;           /* d x d: reading matrix, d x k used (Y = Z W) */
  int w_identity;      /* W = I (k = d): Y = Z, no product */
  double *Y, *Y0;      /* n x d (n x k used): classified coordinates at the end and the start */
  double *acc, *buf;   /* n x d: P Z, velocities */
  double *r;           /* n: remaining travel of each token */
  double *q;           /* n: measured approach rate of each token (in->A) */
  double *cent;        /* n x d: cluster centres (n_clusters x k used) */
  int *parent, *label; /* n: union-find; cluster of each token (-1: unresolved) */
  int *csize;          /* n: cluster sizes */
  int *leader;         /* n: 1 if the token receives a whole row of P */
  double *pcopy, *sv;  /* n x n copy of P for dgesvd (n <= AS_CLASSIFY_SVD_NMAX, else NULL);
                          singular values (n) */
  double *rq, *rb;     /* n x AS_CLASSIFY_RANK_BMAX each (n > AS_CLASSIFY_SVD_NMAX, else NULL):
                          the sample block and range basis, then P^T Q; column-major */
  double *probe, *pw;  /* n x AS_CLASSIFY_RANK_PROBES each: probe vectors and P times them */
  double *tau;         /* AS_CLASSIFY_RANK_BMAX Householder scalars */
  const volatile sig_atomic_t *stop; /* stop flag polled inside as_classify, NULL: none */
  const double *ps;                  /* P S (n x d) when in->P is NULL (streamed trials) */
  double *fcopy, *fvt, *fsv;         /* d x d copy of pi_F, its right singular vectors, d values */
  double *work;
  int lwork;
  as_hull *hull; /* kmax = d, mmax = n */
  int *hstack;   /* 4 n + 2: the 2-D hull's chain and groups (as_hull_vertices_2d) */
  double *hpts;  /* 3 n: the 2-D hull's sorted points */
  int *vflag;    /* n: 1 if the token is a vertex of the initial hull (k = 2, 3) */
  int hv0;       /* vertices of the initial hull (k = 2, 3, from leaders_init), -1: not counted */
  int last_k;    /* classified dimension of the last as_classify (as_classify_clusters) */
  int last_m;    /* its clusters (0: none, e.g. a failed or non-finite end state) */
};

/* ------------------------------------------------------------------ workspace */

static int svd_lwork(int m, int ncol, const char *jobvt, int *lwork) {
  int info = 0, ld = m, ldvt = ncol, one = 1, lw = -1;
  double q = 0.0, a = 0.0, s = 0.0, u = 0.0, vt = 0.0;
  dgesvd_("N", jobvt, &m, &ncol, &a, &ld, &s, &u, &one, &vt, &ldvt, &q, &lw, &info, 1, 1);
  *lwork = (int)q;
  return info;
}

/* Workspace of the QR factorisation and of forming Q for an m x b matrix. */
static int qr_lwork(int m, int b, int *lwork) {
  int info = 0, lw = -1;
  double q1 = 0.0, q2 = 0.0, a = 0.0, t = 0.0;
  dgeqrf_(&m, &b, &a, &m, &t, &q1, &lw, &info);
  if (info != 0) return info;
  dorgqr_(&m, &b, &b, &a, &m, &t, &q2, &lw, &info);
  *lwork = (int)(q1 > q2 ? q1 : q2);
  return info;
}

double as_classify_work(int n, int d) {
  const double nn = (double)n * n;
  /* P Z, the distances to Boolean and uniform, the diameters and the single linkage. */
  double w = nn * (2.0 * d + 6.0);
  /* rank P: dgesvd of the whole matrix (about 4/3 n^3 multiply-adds, values only), or the
   * first block of the randomised estimate with its probes (about 2 n^2 (16 + 8)). */
  if (n <= AS_ATTENTION_STREAM_N) w += n <= AS_CLASSIFY_SVD_NMAX ? 4.0 / 3.0 * nn * n : 48.0 * nn;
  /* the 3-D hull counts of Y(T) and Y(0): about 2 x n x 40 facets, ~2.5 units a plane test */
  if (d == 3 && n <= AS_HULL_3D_MAX) w += 200.0 * n;
  return w;
}

double as_classify_ws_bytes(int n, int d) {
  const double nd = (double)n * d, dd = (double)d * d;
  double b = 8.0 * (3.0 * dd + d) + 8.0 * 6.0 * nd + 8.0 * 2.0 * n + 4.0 * 4.0 * n;
  if (n > AS_ATTENTION_STREAM_N) /* no P: nothing for its rank */
    b += 0.0;
  else if (n > AS_CLASSIFY_SVD_NMAX) /* rq, rb, probe, pw, tau; dgesvd/QR work about n BMAX */
    b += 8.0 * ((double)n * (3.0 * AS_CLASSIFY_RANK_BMAX + 2.0 * AS_CLASSIFY_RANK_PROBES) +
                AS_CLASSIFY_RANK_BMAX);
  else /* pcopy, dgesvd work about 5 n */
    b += 8.0 * ((double)n * n + 5.0 * n);
  /* the hull's LP arrays: 2 d (n + 1) + n non-zeros (index, index, value), 2 d n more */
  b += (8.0 + 4.0 + 4.0) * (2.0 * d * (n + 1.0) + n) + 8.0 * 2.0 * nd;
  b += 4.0 * (5.0 * n + 2.0) + 8.0 * 3.0 * n; /* the 2-D hull's chain, groups, flags, points */
  if (d >= 3) { /* the 3-D hull (hull.c): 12 doubles and 9 ints a point, 2 n + 8 facets of 110 B */
    const double c = n < AS_HULL_3D_MAX ? n : AS_HULL_3D_MAX;
    b += (8.0 * 12.0 + 4.0 * 9.0) * c + 110.0 * (2.0 * c + 8.0);
  }
  return b;
}

void as_classify_set_product(as_classify_ws *ws, const double *PS) {
  if (ws) ws->ps = PS;
}

void as_classify_set_stop(as_classify_ws *ws, const volatile sig_atomic_t *stop) {
  if (ws) ws->stop = stop;
}

static int stopped(const as_classify_ws *ws) {
  return ws && ws->stop && *ws->stop;
}

/* AS_ERR_INTERRUPTED once the stop flag is set (polled between phases and inside the loops
 * that are quadratic in n, so a signal ends classification of a large trial promptly). */
static as_status poll_stop(const as_classify_ws *ws) {
  if (!stopped(ws)) return AS_OK;
  return as_error_set(AS_ERR_INTERRUPTED, __FILE__, __LINE__, __func__,
                      "stopped while classifying (signal)");
}

as_status as_classify_ws_create(int n, int d, as_classify_ws **out) {
  as_status st = AS_OK;
  as_classify_ws *w = NULL;
  AS_CHECK(out != NULL, AS_ERR_ARG, "out is NULL");
  AS_CHECK(n >= 1 && d >= 1, AS_ERR_ARG, "classifier shape n = %d, d = %d must be >= 1", n, d);
  w = calloc(1, sizeof *w);
  AS_CHECK_ALLOC(w);
  w->n = n;
  w->d = d;
  size_t nd = (size_t)n * (size_t)d, dd = (size_t)d * (size_t)d, nn = (size_t)n * (size_t)n;
  w->W = malloc(dd * sizeof *w->W);
  AS_CHECK_ALLOC(w->W);
  w->Y = malloc(nd * sizeof *w->Y);
  AS_CHECK_ALLOC(w->Y);
  w->Y0 = malloc(nd * sizeof *w->Y0);
  AS_CHECK_ALLOC(w->Y0);
  w->acc = malloc(nd * sizeof *w->acc);
  AS_CHECK_ALLOC(w->acc);
  w->buf = malloc(nd * sizeof *w->buf);
  AS_CHECK_ALLOC(w->buf);
  w->cent = malloc(nd * sizeof *w->cent);
  AS_CHECK_ALLOC(w->cent);
  w->r = malloc((size_t)n * sizeof *w->r);
  AS_CHECK_ALLOC(w->r);
  w->q = malloc((size_t)n * sizeof *w->q);
  AS_CHECK_ALLOC(w->q);
  w->parent = malloc((size_t)n * sizeof *w->parent);
  AS_CHECK_ALLOC(w->parent);
  w->label = malloc((size_t)n * sizeof *w->label);
  AS_CHECK_ALLOC(w->label);
  w->csize = malloc((size_t)n * sizeof *w->csize);
  AS_CHECK_ALLOC(w->csize);
  w->leader = malloc((size_t)n * sizeof *w->leader);
  AS_CHECK_ALLOC(w->leader);
  const int big = n > AS_CLASSIFY_SVD_NMAX && n <= AS_ATTENTION_STREAM_N; /* rank estimate */
  const int bmax = AS_CLASSIFY_RANK_BMAX;
  if (big) {
    w->rq = malloc((size_t)n * bmax * sizeof *w->rq);
    AS_CHECK_ALLOC(w->rq);
    w->rb = malloc((size_t)n * bmax * sizeof *w->rb);
    AS_CHECK_ALLOC(w->rb);
    w->probe = malloc((size_t)n * AS_CLASSIFY_RANK_PROBES * sizeof *w->probe);
    AS_CHECK_ALLOC(w->probe);
    w->pw = malloc((size_t)n * AS_CLASSIFY_RANK_PROBES * sizeof *w->pw);
    AS_CHECK_ALLOC(w->pw);
    w->tau = malloc((size_t)bmax * sizeof *w->tau);
    AS_CHECK_ALLOC(w->tau);
  } else if (n <= AS_CLASSIFY_SVD_NMAX) {
    w->pcopy = malloc(nn * sizeof *w->pcopy);
    AS_CHECK_ALLOC(w->pcopy);
  }
  w->sv = malloc((size_t)n * sizeof *w->sv);
  AS_CHECK_ALLOC(w->sv);
  w->fcopy = malloc(dd * sizeof *w->fcopy);
  AS_CHECK_ALLOC(w->fcopy);
  w->fvt = malloc(dd * sizeof *w->fvt);
  AS_CHECK_ALLOC(w->fvt);
  w->fsv = malloc((size_t)d * sizeof *w->fsv);
  AS_CHECK_ALLOC(w->fsv);
  int l1 = 0, l2 = 0, l3 = 0;
  int info = big                         ? svd_lwork(n, bmax, "N", &l1)
             : n <= AS_CLASSIFY_SVD_NMAX ? svd_lwork(n, n, "N", &l1)
                                         : 0;
  AS_LAPACK_CHECK("dgesvd (workspace query)", info);
  info = svd_lwork(d, d, "A", &l2);
  AS_LAPACK_CHECK("dgesvd (workspace query)", info);
  if (big) {
    info = qr_lwork(n, bmax, &l3);
    AS_LAPACK_CHECK("dgeqrf/dorgqr (workspace query)", info);
  }
  w->lwork = l1 > l2 ? l1 : l2;
  if (l3 > w->lwork) w->lwork = l3;
  if (w->lwork < 1) w->lwork = 1;
  w->work = malloc((size_t)w->lwork * sizeof *w->work);
  AS_CHECK_ALLOC(w->work);
  AS_TRY(as_hull_create(d, n, &w->hull));
  w->hstack = malloc((4 * (size_t)n + 2) * sizeof *w->hstack);
  AS_CHECK_ALLOC(w->hstack);
  w->hpts = malloc(3 * (size_t)n * sizeof *w->hpts);
  AS_CHECK_ALLOC(w->hpts);
  w->vflag = malloc((size_t)n * sizeof *w->vflag);
  AS_CHECK_ALLOC(w->vflag);
  *out = w;
  w = NULL;
cleanup:
  as_classify_ws_destroy(&w);
  return st;
}

void as_classify_ws_destroy(as_classify_ws **p) {
  if (!p || !*p) return;
  as_classify_ws *w = *p;
  free(w->W);
  free(w->Y);
  free(w->q);
  free(w->Y0);
  free(w->acc);
  free(w->buf);
  free(w->cent);
  free(w->r);
  free(w->parent);
  free(w->label);
  free(w->csize);
  free(w->leader);
  free(w->pcopy);
  free(w->rq);
  free(w->rb);
  free(w->probe);
  free(w->pw);
  free(w->tau);
  free(w->sv);
  free(w->fcopy);
  free(w->fvt);
  free(w->fsv);
  free(w->work);
  as_hull_destroy(&w->hull);
  free(w->hstack);
  free(w->hpts);
  free(w->vflag);
  free(w);
  *p = NULL;
}

/* ------------------------------------------------------------------ small helpers */

/* Every entry finite: no exponent field all ones (an integer reduction, vectorised). */
static int all_finite(const double *x, size_t len) {
  const uint64_t ex = 0x7ff0000000000000u;
  uint64_t bad[4] = {0, 0, 0, 0}; /* four independent chains */
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    uint64_t b[4];
    memcpy(b, x + i, sizeof b);
    for (int l = 0; l < 4; l++) bad[l] |= (b[l] & ex) == ex;
  }
  for (; i < len; i++) {
    uint64_t b;
    memcpy(&b, x + i, sizeof b);
    bad[0] |= (b & ex) == ex;
  }
  return !(bad[0] | bad[1] | bad[2] | bad[3]);
}

static double norm(const double *a, int k) {
  double s = 0.0;
  for (int c = 0; c < k; c++) s += a[c] * a[c];
  return sqrt(s);
}

/* C (n x k) = A (n x d) W (d x k), all row-major; W = I: C = A + 0 (the product's value,
 * exactly: every other term is an exact zero; + 0 turns -0 into the +0 it gives too). */
static void read_rows(const as_classify_ws *ws, int n, int d, int k, const double *A, double *C) {
  if (ws->w_identity) {
    for (size_t e = 0; e < (size_t)n * d; e++) C[e] = A[e] + 0.0;
    return;
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, d, 1.0, A, d, ws->W, k, 0.0, C, k);
}

/* ------------------------------------------------------------------ coordinates */

/* Fill ws->W (d x k) with the orthonormal-basis reading of the range F of the projector pf
 * (d x d, rank kf; sp->proj_f or sp->proj_pos): W = pf^T B. */
static as_status reading_f(int d, const double *pf, int kf, as_classify_ws *ws, int *k) {
  as_status st = AS_OK;
  int info = 0;
  AS_CHECK(kf >= 1 && kf <= d && pf != NULL, AS_ERR_ARG,
           "spectral analysis gives dim F = %d (d = %d) without a projector", kf, d);
  AS_CHECK(all_finite(pf, (size_t)d * d), AS_ERR_DATA, "projector onto F not finite");
  /* Row-major pf read column-major is pf^T; its right singular vectors are the left singular
   * vectors of pf, whose first kf span range(pf) = F. */
  memcpy(ws->fcopy, pf, (size_t)d * d * sizeof *ws->fcopy);
  int one = 1;
  double u = 0.0;
  dgesvd_("N", "A", &d, &d, ws->fcopy, &d, ws->fsv, &u, &one, ws->fvt, &d, ws->work, &ws->lwork,
          &info, 1, 1);
  AS_LAPACK_CHECK("dgesvd", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "dgesvd did not converge on the projector (info %d)", info);
  /* B_bc = fvt[c + b d] (row c of VT, column-major). W_ac = sum_b proj_f[b d + a] B_bc. */
  for (int a = 0; a < d; a++)
    for (int c = 0; c < kf; c++) {
      double s = 0.0;
      for (int b = 0; b < d; b++) s += pf[(size_t)b * d + a] * ws->fvt[c + (size_t)b * d];
      ws->W[(size_t)a * kf + c] = s;
    }
  *k = kf;
cleanup:
  return st;
}

static void reading_identity(as_classify_ws *ws, int d, int *k) {
  memset(ws->W, 0, (size_t)d * d * sizeof *ws->W);
  for (int a = 0; a < d; a++) ws->W[(size_t)a * d + a] = 1.0;
  ws->w_identity = 1;
  *k = d;
}

/* ------------------------------------------------------------------ clustering */

typedef struct cl_result {
  int k;            /* classified dimension */
  double rho;       /* approach rate */
  double s0, s;     /* initial and final spread of Y */
  double tol;       /* cluster_tol */
  double rmax;      /* max_i r_i */
  int n_clusters;   /* clusters of settled tokens */
  int n_unresolved; /* tokens not settled */
  int max_size;     /* largest cluster */
} cl_result;

/* Single linkage of the settled tokens of Y (n x k) at cl->tol; centres into ws->cent. */
static void cluster(as_classify_ws *ws, int n, cl_result *cl) {
  int k = cl->k;
  double tol2 = cl->tol * cl->tol;
  cl->n_unresolved = 0;
  cl->rmax = 0.0;
  for (int i = 0; i < n; i++) {
    ws->parent[i] = i;
    if (ws->r[i] > cl->rmax) cl->rmax = ws->r[i];
    if (!(ws->r[i] <= cl->tol)) cl->n_unresolved++;
  }
  for (int i = 0; i < n && !stopped(ws); i++) { /* stop: the caller discards the result */
    if (!(ws->r[i] <= cl->tol)) continue;
    for (int j = i + 1; j < n; j++) {
      if (!(ws->r[j] <= cl->tol)) continue;
      if (as_dist2(ws->Y + (size_t)i * k, ws->Y + (size_t)j * k, k) <= tol2) {
        int a = as_find_root(ws->parent, i), b = as_find_root(ws->parent, j);
        if (a != b) ws->parent[a > b ? a : b] = a < b ? a : b;
      }
    }
  }
  /* Number the clusters in order of their lowest token index. */
  int nc = 0;
  for (int i = 0; i < n; i++) ws->label[i] = -1;
  for (int i = 0; i < n; i++) {
    if (!(ws->r[i] <= cl->tol)) continue;
    int root = as_find_root(ws->parent, i);
    if (root == i) ws->csize[nc] = 0, ws->label[i] = nc++;
  }
  for (int i = 0; i < n; i++)
    if (ws->r[i] <= cl->tol) ws->label[i] = ws->label[as_find_root(ws->parent, i)];
  memset(ws->cent, 0, (size_t)nc * k * sizeof *ws->cent);
  for (int i = 0; i < n; i++) {
    int c = ws->label[i];
    if (c < 0) continue;
    ws->csize[c]++;
    for (int a = 0; a < k; a++) ws->cent[(size_t)c * k + a] += ws->Y[(size_t)i * k + a];
  }
  cl->max_size = 0;
  for (int c = 0; c < nc; c++) {
    for (int a = 0; a < k; a++) ws->cent[(size_t)c * k + a] /= ws->csize[c];
    if (ws->csize[c] > cl->max_size) cl->max_size = ws->csize[c];
  }
  cl->n_clusters = nc;
}

/* What is seen, without a theorem to compare with. */
static as_geom generic_label(const cl_result *cl, int n) {
  if (cl->n_unresolved > 0) return cl->max_size >= 2 ? AS_GEOM_UNRESOLVED : AS_GEOM_UNCLUSTERED;
  if (cl->n_clusters == 1) return AS_GEOM_SINGLE;
  if (cl->n_clusters == n) return AS_GEOM_UNCLUSTERED;
  return AS_GEOM_CLUSTERS;
}

/* Vertices among the centres, and the largest interior depth (relative to sqrt(k) tol) of a
 * centre that is neither a vertex nor at zero. */
static as_status hull_of_centres(as_classify_ws *ws, const cl_result *cl, int want_depth,
                                 int *n_vertices, double *worst) {
  as_status st = AS_OK;
  int m = cl->n_clusters, k = cl->k;
  const double *C = ws->cent;
  *n_vertices = 0;
  *worst = 0.0;
  if (m == 0) goto cleanup;
  if (k == 1) {
    double lo = C[0], hi = C[0];
    for (int c = 1; c < m; c++) lo = C[c] < lo ? C[c] : lo, hi = C[c] > hi ? C[c] : hi;
    for (int c = 0; c < m; c++) {
      if (C[c] == lo || C[c] == hi) {
        (*n_vertices)++;
        continue;
      }
      if (!want_depth || fabs(C[c]) <= cl->tol) continue;
      double depth = fmin(C[c] - lo, hi - C[c]) / cl->tol;
      if (depth > *worst) *worst = depth;
    }
    goto cleanup;
  }
  for (int c = 0; c < m; c++) {
    int v = 0;
    AS_TRY(poll_stop(ws));
    AS_TRY(as_hull_is_vertex(ws->hull, k, m, C, c, cl->tol, &v, NULL));
    if (v) {
      (*n_vertices)++;
      continue;
    }
    if (!want_depth || norm(C + (size_t)c * k, k) <= cl->tol) continue;
    double depth = 0.0;
    AS_TRY(as_hull_depth_l1(ws->hull, k, m, C, C + (size_t)c * k, &depth));
    depth /= sqrt((double)k) * cl->tol;
    if (depth > *worst) *worst = depth;
  }
cleanup:
  return st;
}

/* The helpers of verdict.h, for the theorems' verdict functions. */
as_status as_verdict_hull(as_verdict_ctx *c, int want_depth, int *n_vertices, double *worst) {
  cl_result cl = {0};
  cl.k = c->k;
  cl.tol = c->cluster_tol;
  cl.n_clusters = c->n_clusters;
  return hull_of_centres(c->ws, &cl, want_depth, n_vertices, worst);
}

as_geom as_verdict_generic(const as_verdict_ctx *c) {
  cl_result cl = {0};
  cl.n_clusters = c->n_clusters;
  cl.n_unresolved = c->n_unresolved;
  cl.max_size = c->max_size;
  return generic_label(&cl, c->n);
}

void as_verdict_clear_labels(as_verdict_ctx *c) {
  for (int i = 0; i < c->n; i++) c->ws->label[i] = -1;
}

/* ------------------------------------------------------------------ the classifier */

static void reset_fields(as_record *rec) {
  rec->observed = AS_GEOM_NONE;
  rec->verdict = AS_VERDICT_PENDING;
  rec->n_clusters = rec->n_unresolved = rec->n_leaders = rec->rank_p = 0;
  rec->n_vertices = rec->n_levels = rec->leaders_init_vertices = 0;
  rec->cluster_tol = rec->p_bool_dist = rec->p_uniform_dist = rec->max_norm_x = NAN;
  rec->level_a = rec->level_b = rec->verdict_margin = rec->mean_shift = rec->spread = NAN;
  rec->sep_gap = NAN;
  rec->mass_1 = rec->mass_2 = rec->mass_3 = rec->mass_4 = NAN;
  rec->mass_5 = rec->mass_6 = rec->mass_7 = rec->mass_8 = rec->mass_rest = NAN;
  rec->hull_vertices = rec->hull_vertices_init = -1;
  rec->reason = AS_REASON_NONE;
  rec->t_decide = NAN;
  rec->n_clusters_all = -1;
}

/* Vertices of the hull of the n rows of Y (n x k), exactly (measure.h, hull_vertices):
 * k = 1 the distinct extremes, k = 2 as_hull_count_2d, k = 3 as_hull_count_3d (-1 beyond its
 * range); k >= 4 -1 (not counted: one exact LP per token, as_hull_is_vertex, some 45 s per
 * trial at k = 24, n = 96). Scratch: ws->buf (n x d doubles, free once the speeds are read),
 * ws->hstack. */
static as_status hull_vertex_count(as_classify_ws *ws, int n, int k, const double *Y, int *out) {
  as_status st = AS_OK;
  *out = -1;
  if (k == 1) {
    double lo = Y[0], hi = Y[0];
    for (int i = 1; i < n; i++) lo = fmin(lo, Y[i]), hi = fmax(hi, Y[i]);
    *out = lo == hi ? 1 : 2;
  } else if (k == 2) {
    AS_TRY(as_hull_count_2d(n, Y, ws->buf, ws->hstack, out));
  } else if (k == 3) {
    AS_TRY(as_hull_count_3d(ws->hull, n, Y, out));
  }
cleanup:
  return st;
}

/* The empirical-measure fields of the record (measure.h): cluster masses of the linkage's
 * clusters, the hull vertex counts of the final and the initial tokens. */
static as_status measure_fields(as_classify_ws *ws, int n, const cl_result *cl, as_record *rec) {
  as_status st = AS_OK;
  double m[AS_MEASURE_K];
  AS_TRY(as_measure_masses(n, cl->n_clusters, ws->csize, AS_MEASURE_K, m, &rec->mass_rest,
                           ws->hstack));
  rec->mass_1 = m[0], rec->mass_2 = m[1], rec->mass_3 = m[2], rec->mass_4 = m[3];
  rec->mass_5 = m[4], rec->mass_6 = m[5], rec->mass_7 = m[6], rec->mass_8 = m[7];
  int hv = -1;
  AS_TRY(hull_vertex_count(ws, n, cl->k, ws->Y, &hv));
  rec->hull_vertices = hv;
  if (ws->hv0 >= 0) /* counted with the leaders (leaders_init) */
    hv = ws->hv0;
  else
    AS_TRY(hull_vertex_count(ws, n, cl->k, ws->Y0, &hv));
  rec->hull_vertices_init = hv;
  ws->last_k = cl->k;
  ws->last_m = cl->n_clusters;
cleanup:
  return st;
}

/* Numerical rank of P (n x n, row-major) for large n without its SVD (classify.h, rank_p):
 * the randomised range finder of Halko, Martinsson and Tropp (SIAM Review 2011, sections 4.1
 * and 4.3). For b = 16, 32, ..., AS_CLASSIFY_RANK_BMAX: Y = P Omega (Omega n x b Gaussian from
 * a fixed Philox stream keyed by (n, b): the same answer on every rank), Q = orth(Y), and the
 * singular values of Q^T P (those of the n x b matrix P^T Q) bound P's from below; r counts
 * those above AS_CLASSIFY_RANK_RTOL sigma_1. The residual ||(I - Q Q^T) P|| is estimated by
 * 10 sqrt(2 / pi) max_i |(I - Q Q^T) P w_i| over AS_CLASSIFY_RANK_PROBES Gaussian probes w_i
 * (an upper bound with probability >= 1 - 10^-probes). Accepted when r <= b - OVER and the
 * residual <= AS_CLASSIFY_RANK_RTOL sigma_1: every singular value not counted is then below
 * 2 AS_CLASSIFY_RANK_RTOL sigma_1. Else b doubles; at the largest block r is a lower bound.
 * Cost: about 2 n^2 (b + probes) multiply-adds per block, memory 2 n BMAX doubles. */
static as_status rank_randomized(const double *P, int n, as_classify_ws *ws, int *rank_out) {
  as_status st = AS_OK;
  const int np = AS_CLASSIFY_RANK_PROBES, bmax = AS_CLASSIFY_RANK_BMAX;
  int rank = 0;
  for (int b = 16;; b *= 2) {
    if (b > bmax) b = bmax;
    AS_TRY(poll_stop(ws));
    as_rng r;
    as_rng_init(&r, (uint64_t)n, (uint64_t)b, AS_PURPOSE_RANK);
    as_rng_fill_normal(&r, ws->rb, (long)n * b, 1.0);
    as_rng_fill_normal(&r, ws->probe, (long)n * np, 1.0);
    /* Column-major n x n storage of row-major P is P^T: op = Trans gives P. */
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, b, n, 1.0, P, n, ws->rb, n, 0.0, ws->rq,
                n);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, np, n, 1.0, P, n, ws->probe, n, 0.0,
                ws->pw, n);
    int info = 0;
    dgeqrf_(&n, &b, ws->rq, &n, ws->tau, ws->work, &ws->lwork, &info);
    AS_LAPACK_CHECK("dgeqrf", info);
    dorgqr_(&n, &b, &b, ws->rq, &n, ws->tau, ws->work, &ws->lwork, &info);
    AS_LAPACK_CHECK("dorgqr", info);
    if (stopped(ws)) continue; /* reported at the top of the loop */
    /* Residual of the probes: PW - Q (Q^T PW), column by column. */
    double res = 0.0;
    for (int c = 0; c < np; c++) {
      double *v = ws->pw + (size_t)c * n;
      for (int pass = 0; pass < 2; pass++) /* twice: Gram-Schmidt loses nothing to rounding */
        for (int q = 0; q < b; q++) {
          const double *qv = ws->rq + (size_t)q * n;
          double dot = cblas_ddot(n, qv, 1, v, 1);
          cblas_daxpy(n, -dot, qv, 1, v, 1);
        }
      res = fmax(res, cblas_dnrm2(n, v, 1));
    }
    res *= 10.0 * sqrt(2.0 / 3.14159265358979323846);
    /* rb = P^T Q (n x b): its singular values are those of Q^T P. */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, b, n, 1.0, P, n, ws->rq, n, 0.0,
                ws->rb, n);
    int one = 1;
    double u = 0.0, vt = 0.0;
    dgesvd_("N", "N", &n, &b, ws->rb, &n, ws->sv, &u, &one, &vt, &one, ws->work, &ws->lwork, &info,
            1, 1);
    AS_LAPACK_CHECK("dgesvd", info);
    AS_CHECK(info == 0, AS_ERR_LAPACK, "dgesvd did not converge on P^T Q (info %d)", info);
    const double tol = AS_CLASSIFY_RANK_RTOL * ws->sv[0];
    rank = 0;
    for (int i = 0; i < b; i++)
      if (ws->sv[i] > tol) rank++;
    if (ws->sv[0] == 0.0 || (rank <= b - AS_CLASSIFY_RANK_OVER && res <= tol) || b >= bmax ||
        b >= n)
      break;
  }
  *rank_out = rank;
cleanup:
  return st;
}

/* Observables of P: distances to Boolean and uniform, leaders, rank. */
static as_status p_observables(const as_classify_input *in, as_classify_ws *ws, as_record *rec) {
  as_status st = AS_OK;
  int n = in->n;
  double bd = 0.0, ud = 0.0;
  /* B: 1 at the entries above 1/2, else 0; e2 = |P - B|_F^2; onehot: one such entry a row. */
  int nl = 0, onehot = 1;
  double e2 = 0.0;
  for (int j = 0; j < n; j++) ws->leader[j] = 0;
  for (int i = 0; i < n; i++) {
    int big = 0;
    for (int j = 0; j < n; j++) {
      double p = in->P[(size_t)i * n + j];
      double a0 = fabs(p), a1 = fabs(1.0 - p), u = fabs(p - 1.0 / n);
      double b = a1 < a0 ? a1 : a0; /* fmin of finite values (P is checked finite) */
      if (b > bd) bd = b;
      if (u > ud) ud = u;
      if (p >= 1.0 - AS_CLASSIFY_LEADER_TOL && !ws->leader[j]) ws->leader[j] = 1, nl++;
      double e = p > 0.5 ? 1.0 - p : p;
      big += p > 0.5;
      e2 += e * e;
    }
    onehot &= big == 1;
  }
  rec->p_bool_dist = bd;
  rec->p_uniform_dist = ud;
  rec->n_leaders = nl;
  AS_TRY(poll_stop(ws));
  if (n > AS_CLASSIFY_SVD_NMAX) {
    AS_TRY(rank_randomized(in->P, n, ws, &rec->rank_p));
    goto cleanup;
  }
  if (onehot && e2 <= 1e-16) {
    /* Closed form, P = B + E with B one-hot in every row and |E|_2 <= |E|_F <= 1e-8 (e2 is
     * that sum of squares up to a relative rounding of n^2 eps). B^T B = diag(c_j), c_j the
     * rows whose 1 is in column j: B's singular values are sqrt(c_j) >= 1 for the columns hit
     * and 0 for the others, and P's lie within 1e-8 of them (Weyl). dgesvd's err by at most
     * p(n) eps sigma_1 < 1e-10 (sigma_1 <= sqrt(n) + 1e-8, n <= AS_CLASSIFY_SVD_NMAX), so it
     * counts every sqrt(c_j) (>= 1 - 2e-8 > RTOL sigma_1 <= 2.3e-5) and none of the others
     * (<= 2e-8 < RTOL sigma_1 >= 1e-6 (1 - 2e-8)). The columns hit hold an entry >= 1 - 1e-8
     * and the others none >= 1e-8: they are the leaders. */
    rec->rank_p = nl;
    goto cleanup;
  }
  memcpy(ws->pcopy, in->P, (size_t)n * n * sizeof *ws->pcopy);
  int info = 0, one = 1;
  double u = 0.0, vt = 0.0;
  dgesvd_("N", "N", &n, &n, ws->pcopy, &n, ws->sv, &u, &one, &vt, &one, ws->work, &ws->lwork, &info,
          1, 1);
  AS_LAPACK_CHECK("dgesvd", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "dgesvd did not converge on P (info %d)", info);
  int rank = 0;
  for (int i = 0; i < n; i++)
    if (ws->sv[i] > AS_CLASSIFY_RANK_RTOL * ws->sv[0]) rank++;
  rec->rank_p = rank;
cleanup:
  return st;
}

/* Leaders that were vertices of the initial hull of Y0 (exact test). */
static as_status leaders_init(const as_classify_input *in, as_classify_ws *ws, int k, int *count) {
  as_status st = AS_OK;
  int n = in->n;
  *count = 0;
  if (k == 1) {
    double lo = ws->Y0[0], hi = ws->Y0[0];
    for (int i = 1; i < n; i++) lo = fmin(lo, ws->Y0[i]), hi = fmax(hi, ws->Y0[i]);
    for (int j = 0; j < n; j++)
      if (ws->leader[j] && (ws->Y0[j] == lo || ws->Y0[j] == hi)) (*count)++;
    goto cleanup;
  }
  if (k == 2 && as_hull_planar_exact(ws->Y0, 2 * (size_t)n)) {
    /* One exact hull for every leader and for hull_vertices_init (as_hull_vertices_2d). */
    AS_TRY(as_hull_vertices_2d(n, ws->Y0, ws->hpts, ws->hstack, ws->vflag, &ws->hv0));
    for (int j = 0; j < n; j++) *count += ws->leader[j] && ws->vflag[j];
    goto cleanup;
  }
  if (k == 3) { /* likewise in 3-D, where as_hull_vertices_3d counts (else ws->hv0 stays -1) */
    AS_TRY(as_hull_vertices_3d(ws->hull, n, ws->Y0, ws->vflag, &ws->hv0));
    if (ws->hv0 >= 0) {
      for (int j = 0; j < n; j++) *count += ws->leader[j] && ws->vflag[j];
      goto cleanup;
    }
  }
  for (int j = 0; j < n; j++) {
    if (!ws->leader[j]) continue;
    int v = 0;
    AS_TRY(poll_stop(ws));
    AS_TRY(as_hull_is_vertex(ws->hull, k, n, ws->Y0, j, 0.0, &v, NULL));
    *count += v;
  }
cleanup:
  return st;
}

/* The coordinates of row's reading (classify.h, "coordinates") into ws->W, their number into
 * cl->k, and the state they read into *S (z, or x for minus_identity). */
static as_status coordinates(const as_classify_input *in, as_classify_ws *ws,
                             const as_theorem_row *row, cl_result *cl, const double **S) {
  as_status st = AS_OK;
  const as_spectral *sp = in->sp;
  const int d = in->d;
  *S = in->Z;
  ws->w_identity = 0;
  switch (row->reading) {
  case AS_READ_L1:
    AS_CHECK(sp->l1 != NULL && all_finite(sp->l1, (size_t)d), AS_ERR_DATA,
             "%s triple without a finite left eigenvector",
             as_enum_label(&as_theorem_table, (int)row->id));
    memcpy(ws->W, sp->l1, (size_t)d * sizeof *ws->W);
    cl->k = 1;
    break;
  case AS_READ_F:
    AS_TRY(reading_f(d, sp->proj_f, sp->dim_f, ws, &cl->k));
    break;
  case AS_READ_POS:
    AS_TRY(reading_f(d, sp->proj_pos, sp->dim_pos, ws, &cl->k));
    break;
  case AS_READ_X:
    reading_identity(ws, d, &cl->k);
    *S = in->X;
    break;
  case AS_READ_Z:
    reading_identity(ws, d, &cl->k);
    break;
  case AS_READ_SEEN:
  case AS_READ_COUNT:
    if (in->sphere)
      reading_identity(ws, d, &cl->k);
    else if (sp->dim_f > 0 && sp->proj_f != NULL)
      AS_TRY(reading_f(d, sp->proj_f, sp->dim_f, ws, &cl->k));
    else
      reading_identity(ws, d, &cl->k);
    break;
  }
cleanup:
  return st;
}

/* Whether row reads z only through the invariant subspace of the eigenvalues with positive real
 * part (l_1 of a positive lambda_1, the paranormal F, the Re > 0 subspace, all of z when every
 * eigenvalue is positive): then the positive part of z (in->Zp, as_expm_positive_part) reads
 * the same as z. */
static int reads_positive_part(const as_theorem_row *row, const as_spectral *sp) {
  switch (row->reading) {
  case AS_READ_L1:
    return sp->lambda1_re > 0.0;
  case AS_READ_F:
  case AS_READ_POS:
    return 1;
  case AS_READ_Z:
    return sp->kpos == sp->d;
  default:
    return 0;
  }
}

/* The rounding error of reading S (n x d) in the coordinates ws->W (d x k): a dot product of
 * length d errs by at most d eps sum_a |S_ia| |W_ac| (Higham, Accuracy and Stability, 3.1), so
 * the bound is d eps max_i sum_a |S_ia| max_c |W_ac|: only the coordinates the reading uses
 * count (z along an eigenvalue of negative real part grows without bound, and a reading that
 * gives it no weight loses nothing to it). With E (Z = X E^T formed from an integrated X), the
 * product's own error, d eps sum_b |E_ab| |x_ib| in coordinate a, counts too. */
static double reading_error(const as_classify_ws *ws, const as_classify_input *in, int k,
                            const double *S) {
  const int n = in->n, d = in->d;
  const double *E = S == in->Z ? in->E : NULL;
  double worst = 0.0;
  for (int i = 0; i < n; i++) {
    const double *s = S + (size_t)i * d, *x = in->X ? in->X + (size_t)i * d : NULL;
    double sum = 0.0;
    for (int a = 0; a < d; a++) {
      double w = ws->w_identity ? 1.0 : 0.0, e = fabs(s[a]);
      if (!ws->w_identity)
        for (int c = 0; c < k; c++) w = fmax(w, fabs(ws->W[(size_t)a * k + c]));
      if (E && x)
        for (int b = 0; b < d; b++) e += fabs(E[(size_t)a * d + b]) * fabs(x[b]);
      sum += e * w;
    }
    worst = fmax(worst, sum);
  }
  return DBL_EPSILON * d * worst;
}

/* The end state S read in the coordinates of ws->W: Y, Y0, the token speeds and remaining
 * travels (classify.h, thresholds), the measured approach rates from A (NULL: none; *have_q),
 * the spread, the resolution and the clusters, and the record fields they give (spread,
 * cluster_tol, n_clusters, n_unresolved, mean_shift, sep_gap). *huge: the coordinates or speeds
 * are beyond what double precision resolves (nothing else is computed then). */
static as_status observe(const as_classify_input *in, as_classify_ws *ws, const double *S,
                         const double *A, int read_x, double t, cl_result *cl, double *vmax,
                         int *have_q, int *huge, as_record *rec) {
  as_status st = AS_OK;
  const int n = in->n, d = in->d, k = cl->k;
  read_rows(ws, n, d, k, S, ws->Y);
  read_rows(ws, n, d, k, in->Z0, ws->Y0);
  /* velocities: z' = (P Z - Z) V^T, x' = (P X) V^T (or the model's own, in->F); then read with
   * W. Without P (streamed attention) P S comes from as_classify_set_product. */
  if (in->F) {
    memcpy(ws->buf, in->F, (size_t)n * d * sizeof *ws->buf);
  } else {
    if (in->P)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0, in->P, n, S, d, 0.0,
                  ws->acc, d);
    else
      memcpy(ws->acc, ws->ps, (size_t)n * d * sizeof *ws->acc);
    if (!read_x)
      for (size_t e = 0; e < (size_t)n * d; e++) ws->acc[e] -= S[e];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, d, d, 1.0, ws->acc, d, in->V, d, 0.0,
                ws->buf, d);
  }
  read_rows(ws, n, d, k, ws->buf, ws->acc);
  /* Coordinates or speeds so large that their squares overflow (z along eigenvalues with
   * negative real part, long horizons): nothing can be resolved in double precision. */
  double big = 0.0;
  for (size_t e = 0; e < (size_t)n * k; e++)
    big = fmax(big, fmax(fabs(ws->acc[e]), fabs(ws->Y[e])));
  *huge = big > 0x1p500 && isfinite(big);
  if (*huge) goto cleanup;
  *vmax = 0.0;
  for (int i = 0; i < n; i++) {
    double u = norm(ws->acc + (size_t)i * k, k);
    ws->r[i] = u / cl->rho;
    if (!(u <= *vmax)) *vmax = u;
  }
  AS_CHECK(all_finite(ws->r, (size_t)n), AS_ERR_DATA, "token speeds not finite (V not finite?)");
  /* Measured approach rates (t_decide): q_i = -<u_i, u_i'> / |u_i|^2 with u_i' read from z''. */
  *have_q = A != NULL && in->F == NULL && all_finite(A, (size_t)n * d);
  if (*have_q) {
    read_rows(ws, n, d, k, A, ws->buf);
    for (int i = 0; i < n; i++) {
      const double *u = ws->acc + (size_t)i * k, *a = ws->buf + (size_t)i * k;
      double uu = 0.0, ua = 0.0;
      for (int c = 0; c < k; c++) uu += u[c] * u[c], ua += u[c] * a[c];
      ws->q[i] = uu > 0.0 ? -ua / uu : NAN;
    }
  }

  /* ---- spread, resolution, clusters */
  AS_TRY(poll_stop(ws));
  cl->s0 = as_diameter(ws->Y0, n, k, ws->stop);
  cl->s = as_diameter(ws->Y, n, k, ws->stop);
  double L = fmax(fmax(cl->s0, cl->s), DBL_MIN);
  double rel = AS_CLASSIFY_TOL_C * exp(-cl->rho * t);
  rel = fmin(fmax(rel, AS_CLASSIFY_TOL_MIN), AS_CLASSIFY_TOL_MAX);
  cl->tol = L * rel;
  cluster(ws, n, cl);
  AS_TRY(poll_stop(ws));
  rec->spread = cl->s;
  rec->cluster_tol = cl->tol;
  rec->n_clusters = cl->n_clusters;
  rec->n_unresolved = cl->n_unresolved;
  double shift2 = 0.0;
  for (int a = 0; a < k; a++) {
    double m1 = 0.0, m0 = 0.0;
    for (int i = 0; i < n; i++) m1 += ws->Y[(size_t)i * k + a], m0 += ws->Y0[(size_t)i * k + a];
    shift2 += (m1 - m0) * (m1 - m0) / ((double)n * n);
  }
  rec->mean_shift = cl->s0 > 0.0 ? sqrt(shift2) / cl->s0 : NAN;
  rec->sep_gap = as_observe_sep_gap(n, k, ws->Y, ws->label, cl->n_clusters, ws->cent, cl->s);
cleanup:
  return st;
}

/* The verdict of row on the observed end state (observe) into rec, vc filled for decide. */
static as_status judge(const as_classify_input *in, as_classify_ws *ws, const as_theorem_row *row,
                       double t, const cl_result *cl, double vmax, int have_q, as_verdict_ctx *vc,
                       as_record *rec) {
  /* Whether the horizon is long enough for the theorem's geometry to have emerged: a
   * "violated" end state before that is a metastable one, reported as unresolved. */
  const double sep = row->sep != AS_SEP_NONE ? as_theorem_separation(row, in->sp) : NAN;
  *vc = (as_verdict_ctx){.in = in,
                         .ws = ws,
                         .row = row,
                         .n = in->n,
                         .d = in->d,
                         .k = cl->k,
                         .t = t,
                         .sep_t = row->sep != AS_SEP_NONE ? sep * t : INFINITY,
                         .sep = sep,
                         .rho = cl->rho,
                         .vmax = vmax,
                         .cluster_tol = cl->tol,
                         .unresolved_margin = cl->rmax / cl->tol,
                         .n_clusters = cl->n_clusters,
                         .n_unresolved = cl->n_unresolved,
                         .max_size = cl->max_size,
                         .centres = ws->cent,
                         .r = ws->r,
                         .q = have_q ? ws->q : NULL};
  return row->verdict(vc, rec);
}

/* Every field reset_fields resets except what the end state's reading does not change (the
 * observables of P and max_norm_x): a second reading starts from these. */
static void keep_p_fields(as_record *rec) {
  const as_record keep = *rec;
  reset_fields(rec);
  rec->p_bool_dist = keep.p_bool_dist;
  rec->p_uniform_dist = keep.p_uniform_dist;
  rec->n_leaders = keep.n_leaders;
  rec->rank_p = keep.rank_p;
  rec->max_norm_x = keep.max_norm_x;
}

/* Unresolved for lack of resolution (docs/theory.md 2.2, "precision"): the reason, without a
 * horizon. */
static void unresolved_precision(as_reason why, as_record *rec) {
  rec->verdict = AS_VERDICT_UNRESOLVED;
  rec->reason = why;
  rec->observed = AS_GEOM_UNRESOLVED;
}

as_status as_classify(const as_classify_input *in, as_classify_ws *ws, as_record *rec) {
  as_status st = AS_OK;
  AS_CHECK(in != NULL && ws != NULL && rec != NULL, AS_ERR_ARG, "NULL argument");
  AS_CHECK(in->n == ws->n && in->d == ws->d, AS_ERR_ARG,
           "classifier input n = %d, d = %d but workspace n = %d, d = %d", in->n, in->d, ws->n,
           ws->d);
  AS_CHECK(in->sp != NULL && in->sp->d == in->d, AS_ERR_ARG,
           "spectral analysis missing or of another dimension");
  AS_CHECK(in->Z0 != NULL && in->Z != NULL && (in->P != NULL || ws->ps != NULL) && in->V != NULL,
           AS_ERR_ARG, "classifier input: Z0, Z, P (or P Z) and V are required");
  AS_CHECK(in->outcome != AS_OUT_PENDING, AS_ERR_ARG, "classify called before integration");
  AS_CHECK(!in->sphere || in->F != NULL, AS_ERR_ARG, "classify on the sphere needs the velocity");
  const int n = in->n, d = in->d;
  const as_spectral *sp = in->sp;
  const as_theorem_row *row = as_theorem_row_of(sp->theorem);
  AS_CHECK(row != NULL, AS_ERR_ARG, "theorem %d is not in the table", (int)sp->theorem);
  const int read_x = row->reading == AS_READ_X; /* the state read is x (minus_identity) */
  AS_CHECK(all_finite(in->Z0, (size_t)n * d), AS_ERR_ARG, "initial tokens not finite");
  reset_fields(rec);
  ws->last_m = 0;
  ws->hv0 = -1;
  for (int i = 0; i < n; i++) ws->label[i] = -1, ws->leader[i] = 0;

  if (in->outcome == AS_OUT_FAILED) {
    rec->verdict = AS_VERDICT_FAILED;
    goto cleanup;
  }
  if (in->X) {
    double mx = 0.0;
    for (int i = 0; i < n; i++) {
      double s = norm(in->X + (size_t)i * d, d);
      if (!(s <= mx)) mx = s; /* NaN propagates */
    }
    rec->max_norm_x = mx;
  }
  AS_CHECK(!read_x || in->X != NULL, AS_ERR_ARG, "theorem %s reads the final x",
           as_enum_label(&as_theorem_table, (int)row->id));
  /* The positive part of z (vars x) stands in for z where z itself is beyond double precision
   * and the theorem reads nothing else (docs/theory.md 2.2, "precision"). */
  const double *Zp =
      in->Zp && in->P && !in->F && reads_positive_part(row, sp) && all_finite(in->Zp, (size_t)n * d)
          ? in->Zp
          : NULL;
  const int z_finite = all_finite(in->Z, (size_t)n * d);
  if (in->outcome == AS_OUT_NONFINITE || (!z_finite && !Zp) ||
      (in->P && !all_finite(in->P, (size_t)n * n)) ||
      (!in->P && !all_finite(ws->ps, (size_t)n * d)) ||
      (read_x && !all_finite(in->X, (size_t)n * d))) {
    rec->verdict = AS_VERDICT_NONFINITE;
    goto cleanup;
  }
  if (in->P) {
    AS_TRY(p_observables(in, ws, rec));
  } else {
    rec->rank_p = -1; /* P not formed (streamed): its observables are not computed */
  }

  /* ---- coordinates, the end state read in them, the verdict */
  double t = isfinite(in->t_final) ? in->t_final : in->T;
  AS_CHECK(isfinite(t) && t >= 0.0, AS_ERR_ARG, "final time %g invalid", t);
  cl_result cl = {0};
  const double *S = NULL;
  AS_TRY(coordinates(in, ws, row, &cl, &S));
  cl.rho = as_theorem_rate(row, sp);
  if (!z_finite) S = Zp;
  double vmax = 0.0;
  int have_q = 0, huge = 0;
  AS_TRY(observe(in, ws, S, S == in->Z ? in->A : NULL, read_x, t, &cl, &vmax, &have_q, &huge, rec));
  as_verdict_ctx vc;
  if (!huge) {
    AS_TRY(leaders_init(in, ws, cl.k, &rec->leaders_init_vertices));
    AS_TRY(judge(in, ws, row, t, &cl, vmax, have_q, &vc, rec));
  }
  /* Tokens along eigenvalues with negative real part grow in z (docs/theory.md 2.2): once
   * the rounding error of reading them reaches the resolution, no horizon settles them in
   * double precision. The positive part (vars x) is read instead when there is one. */
  int lost = huge || (rec->reason == AS_REASON_MOVING && !read_x &&
                      reading_error(ws, in, cl.k, S) >= cl.tol);
  if (lost && Zp && S != Zp) {
    S = Zp;
    keep_p_fields(rec);
    AS_TRY(observe(in, ws, S, NULL, read_x, t, &cl, &vmax, &have_q, &huge, rec));
    if (!huge) {
      AS_TRY(leaders_init(in, ws, cl.k, &rec->leaders_init_vertices));
      AS_TRY(judge(in, ws, row, t, &cl, vmax, have_q, &vc, rec));
    }
    lost = huge || (rec->reason == AS_REASON_MOVING && reading_error(ws, in, cl.k, S) >= cl.tol);
  }
  if (lost) {
    /* vars z: integrating x instead keeps the positive part (the reason names that remedy). */
    const int x_helps = in->x_decides && !Zp && reads_positive_part(row, sp);
    unresolved_precision(x_helps ? AS_REASON_PRECISION_VARS_X : AS_REASON_PRECISION, rec);
    if (huge) goto cleanup;
  } else {
    as_verdict_decide(&vc, rec);
  }
  AS_TRY(measure_fields(ws, n, &cl, rec));
  /* Every cluster at the end, settled or not (the parents of cluster() are spent). */
  {
    const double L = fmax(fmax(cl.s0, cl.s), DBL_MIN);
    const double tol_all = fmax(cl.tol, AS_CLASSIFY_ALL_TOL * L);
    rec->n_clusters_all = cl.n_unresolved == 0 && tol_all == cl.tol
                              ? cl.n_clusters
                              : as_verdict_count_all(ws->Y, n, cl.k, tol_all, ws->parent);
    if (rec->observed == AS_GEOM_COLLAPSE) rec->n_clusters_all = 1;
  }
cleanup:
  return st;
}

int as_classify_clusters(const as_classify_ws *ws, int *k, const double **centres,
                         const int **sizes) {
  if (!ws || ws->last_m <= 0) return 0;
  if (k) *k = ws->last_k;
  if (centres) *centres = ws->cent;
  if (sizes) *sizes = ws->csize;
  return ws->last_m;
}

const int *as_classify_leaders(const as_classify_ws *ws) {
  return ws ? ws->leader : NULL;
}
const int *as_classify_labels(const as_classify_ws *ws) {
  return ws ? ws->label : NULL;
}
