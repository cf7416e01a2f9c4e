/* triple.c: the families of (Q, K, V) and M = Q^T K.
 *
 * Random matrices come from the Philox stream (master_seed, triple_key, AS_PURPOSE_TRIPLE);
 * V draws from its sub-stream 0, Q and K from sub-stream 1, so changing the M family never
 * changes V and conversely. The perturbation uses (.., AS_PURPOSE_PERTURB) sub-streams 0 (V)
 * and 1 (M). A sub-stream starts at block counter sub << 28 (2^30 words each: a d = 4096
 * matrix of normals uses 2^25).
 *
 * Constructions (S = O1 diag(sigma) O2 with Haar O1, O2 and sigma_i ~ U[1, 3): a random
 * oblique basis with cond(S) <= 3; O: a Haar orthogonal matrix):
 *   symmetric   V = s O diag(+-(0.5 + U)) O^T, the first k signs positive
 *   paranormal  V = B diag(lambda I_f, mu) B^{-1}, mu_1 = +-radius, mu_j ~ U[-radius, radius],
 *               B = S (oblique) or O (orthogonal: F and G orthogonal, V symmetric)
 *   good        V = S diag(lambda, +-(lambda - gap), mu) S^{-1}, |mu_j| <= lambda - gap;
 *               phi_1 = S e_1 / |S e_1|. A finite `margin` then sets <Q phi_1, K phi_1>
 *               exactly: M += (margin - phi_1^T M phi_1) phi_1 phi_1^T (m = d; then Q = I,
 *               K = M) or K += c (Q phi_1) phi_1^T / |Q phi_1|^2 (m != d).
 *   complex     V = S blockdiag([[lambda, w], [-w, lambda]], mu) S^{-1}, mu_j ~
 *               U[-lambda/2, lambda/2]: leading pair lambda +- i w
 *   spd         M = s O diag(cond^{i/(d-1)}) O^T, Q = K = sqrt(s) O diag(cond^{i/(2(d-1))}) O^T
 *   scale s < 0 of an M family: Q = sqrt|s| Q0, K = -sqrt|s| K0.
 * A perturbation eps adds eps N(0,1)/sqrt(d) entries to V and/or M; when M is perturbed and
 * m = d, Q and K are replaced by (I, M + noise); when m != d the noise goes into K.
 */
#include "attnsweep/triple.h"
#include "attnsweep/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/rng.h"
#include "linalg.h"

as_status as_triple_create(int d, int m, as_triple **out) {
  as_status st = AS_OK;
  as_triple *tr = NULL;
  if (m <= 0) m = d;
  AS_CHECK(d >= 1 && d <= AS_MAX_D, AS_ERR_ARG, "triple: dimension d = %d out of range", d);
  AS_CHECK(m <= 1 << 15, AS_ERR_ARG, "triple: rows m = %d out of range", m);
  AS_CHECK(out != NULL, AS_ERR_ARG, "triple: out is NULL");
  tr = calloc(1, sizeof *tr);
  AS_CHECK_ALLOC(tr);
  tr->d = d;
  tr->m = m;
  tr->V = calloc((size_t)d * d, sizeof(double));
  AS_CHECK_ALLOC(tr->V);
  tr->M = calloc((size_t)d * d, sizeof(double));
  AS_CHECK_ALLOC(tr->M);
  tr->Q = calloc((size_t)m * d, sizeof(double));
  AS_CHECK_ALLOC(tr->Q);
  tr->K = calloc((size_t)m * d, sizeof(double));
  AS_CHECK_ALLOC(tr->K);
  *out = tr;
  tr = NULL;
cleanup:
  as_triple_destroy(&tr);
  return st;
}

void as_triple_destroy(as_triple **p) {
  if (p == NULL || *p == NULL) return;
  free((*p)->V);
  free((*p)->M);
  free((*p)->Q);
  free((*p)->K);
  free(*p);
  *p = NULL;
}

/* ---------------------------------------------------------------- helpers */

static void rng_sub(as_rng *r, uint64_t seed, uint64_t key, uint32_t purpose, uint32_t sub) {
  as_rng_init(r, seed, key, purpose);
  r->ctr[0] = sub << 28;
}

/* Scratch for the constructions: three d x d matrices, tau, LAPACK work. */
typedef struct scratch {
  int d;
  double *A, *B, *C, *D, *tau, *work;
  int lwork;
} scratch;

static void scratch_free(scratch *s) {
  free(s->A);
  free(s->B);
  free(s->C);
  free(s->D);
  free(s->tau);
  free(s->work);
}

static as_status scratch_alloc(scratch *s, int d) {
  as_status st = AS_OK;
  size_t dd = (size_t)d * d;
  memset(s, 0, sizeof *s);
  s->d = d;
  s->lwork = 64 * d;
  s->A = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(s->A);
  s->B = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(s->B);
  s->C = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(s->C);
  s->D = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(s->D);
  s->tau = malloc((size_t)d * sizeof(double));
  AS_CHECK_ALLOC(s->tau);
  s->work = malloc((size_t)s->lwork * sizeof(double));
  AS_CHECK_ALLOC(s->work);
cleanup:
  return st;
}

/* O (d x d): Haar orthogonal (QR of a Gaussian matrix, columns' signs fixed by diag R). */
static as_status random_orthogonal(as_rng *r, scratch *s, double *O) {
  as_status st = AS_OK;
  int d = s->d, info = 0;
  as_rng_fill_normal(r, O, (long)d * d, 1.0);
  dgeqrf_(&d, &d, O, &d, s->tau, s->work, &s->lwork, &info);
  AS_LAPACK_CHECK("dgeqrf", info);
  double *sg = s->tau + 0; /* reuse after dorgqr: keep the signs first */
  double *signs = s->work + (s->lwork - d);
  for (int j = 0; j < d; j++) signs[j] = O[(size_t)j * d + j] < 0 ? -1.0 : 1.0;
  int lw = s->lwork - d;
  dorgqr_(&d, &d, &d, O, &d, sg, s->work, &lw, &info);
  AS_LAPACK_CHECK("dorgqr", info);
  for (int j = 0; j < d; j++)
    for (int i = 0; i < d; i++) O[(size_t)j * d + i] *= signs[j];
cleanup:
  return st;
}

/* Random oblique basis S = O1 diag(sig) O2 and its inverse. Uses s->A, s->B. */
static as_status random_oblique(as_rng *r, scratch *s, double *S, double *Sinv) {
  as_status st = AS_OK;
  int d = s->d;
  AS_TRY(random_orthogonal(r, s, s->A));
  AS_TRY(random_orthogonal(r, s, s->B));
  for (int k = 0; k < d; k++) s->tau[k] = 1.0 + 2.0 * as_rng_uniform(r);
  /* S = O1 diag(sig) O2: scale the columns of O1, then multiply. Sinv = O2^T diag(1/sig) O1^T */
  double *C = s->C;
  for (int i = 0; i < d; i++)
    for (int k = 0; k < d; k++) C[(size_t)i * d + k] = s->A[(size_t)i * d + k] * s->tau[k];
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, C, d, s->B, d, 0.0, S, d);
  for (int i = 0; i < d; i++)
    for (int k = 0; k < d; k++) C[(size_t)k * d + i] = s->A[(size_t)i * d + k] / s->tau[k];
  /* C = diag(1/sig) O1^T; Sinv = O2^T C */
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, d, 1.0, s->B, d, C, d, 0.0, Sinv, d);
cleanup:
  return st;
}

/* V = S Dm Sinv (Dm a d x d matrix, usually block diagonal). Uses s->C. */
static void similarity(scratch *s, const double *S, const double *Dm, const double *Sinv,
                       double *V) {
  int d = s->d;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, S, d, Dm, d, 0.0, s->C, d);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, s->C, d, Sinv, d, 0.0, V, d);
}

static void set_scaled_identity(int rows, int d, double c, double *A) {
  memset(A, 0, (size_t)rows * d * sizeof(double));
  for (int i = 0; i < rows && i < d; i++) A[(size_t)i * d + i] = c;
}

static void compute_m(as_triple *tr) {
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tr->d, tr->d, tr->m, 1.0, tr->Q, tr->d,
              tr->K, tr->d, 0.0, tr->M, tr->d);
}

/* Q = I, K = M (m = d): the representation of a triple known only through M. */
static void qk_from_m(as_triple *tr) {
  set_scaled_identity(tr->d, tr->d, 1.0, tr->Q);
  memcpy(tr->K, tr->M, (size_t)tr->d * tr->d * sizeof(double));
}

static as_status check_finite(const char *what, const char *origin, int rows, int cols,
                              const double *A) {
  as_status st = AS_OK;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++)
      AS_CHECK(isfinite(A[(size_t)i * cols + j]), AS_ERR_DATA,
               "%s (%s): entry (%d, %d) is %g, not a finite number", what, origin, i, j,
               A[(size_t)i * cols + j]);
cleanup:
  return st;
}

/* ---------------------------------------------------------------- V families */

/* Where the build of one head of one block draws and reads (as_triple_build_at). */
typedef struct head_at {
  uint32_t p_triple, p_perturb; /* purposes of the random streams */
  int head;                     /* which slice of a stacked explicit or file matrix */
} head_at;

/* Head h's d x cols slice of a matrix stacked by heads (rows = H * block rows), or the matrix
 * itself when it holds one head. */
static const double *head_slice(const as_matref *x, int rows, int cols, int head) {
  if (x->data == NULL || head == 0 || x->rows <= rows) return x->data;
  return x->data + (size_t)head * rows * cols;
}

static as_status build_v(const as_trial *t, as_triple *tr, scratch *s, double *phi_good,
                         const head_at *at) {
  as_status st = AS_OK;
  const as_triple_spec *ts = &t->triple;
  int d = tr->d;
  size_t dd = (size_t)d * d;
  as_rng r;
  rng_sub(&r, t->master_seed, t->triple_key, at->p_triple, 0);
  const double *Vdata = head_slice(&ts->V, d, d, at->head);
  const char *fam = as_enum_label(&as_vfamily_table, (int)ts->vfamily);
  double *Dm = s->D;
  switch (ts->vfamily) {
  case AS_V_IDENTITY:
  case AS_V_MINUS_IDENTITY:
    AS_CHECK(isfinite(ts->v_scale), AS_ERR_DATA, "vfamily %s: v_scale is not finite", fam);
    set_scaled_identity(d, d, ts->vfamily == AS_V_IDENTITY ? ts->v_scale : -ts->v_scale, tr->V);
    break;
  case AS_V_EXPLICIT:
  case AS_V_FILE:
    AS_CHECK(ts->V.data != NULL, AS_ERR_DATA, "vfamily %s: no matrix V was given%s%s", fam,
             ts->file.text ? " (file " : "", ts->file.text ? ts->file.text : "");
    AS_TRY(check_finite("V", ts->vfamily == AS_V_FILE && ts->file.text ? ts->file.text : "explicit",
                        d, d, Vdata));
    memcpy(tr->V, Vdata, dd * sizeof(double));
    break;
  case AS_V_PERRON:
    as_rng_fill_uniform(&r, tr->V, (long)dd, 0.0, 1.0);
    for (size_t k = 0; k < dd; k++) tr->V[k] *= ts->v_scale;
    break;
  case AS_V_GAUSSIAN:
    as_rng_fill_normal(&r, tr->V, (long)dd, fabs(ts->v_scale) / sqrt((double)d));
    break;
  case AS_V_SCALAR:
    AS_CHECK(d == 1, AS_ERR_ARG, "vfamily scalar with d = %d breaks rule scalar_d (rules.h)", d);
    tr->V[0] = ts->v_scale;
    break;
  case AS_V_SYMMETRIC: {
    AS_CHECK(ts->v_kpos >= 0 && ts->v_kpos <= d, AS_ERR_ARG,
             "vfamily symmetric: v_kpos = %d is outside 0..d = %d (rule symmetric_kpos)",
             ts->v_kpos, d);
    double *O = s->A; /* keep O out of s->B (random_orthogonal uses tau/work only) */
    AS_TRY(random_orthogonal(&r, s, O));
    for (int i = 0; i < d; i++) {
      double lam = 0.5 + as_rng_uniform(&r);
      s->tau[i] = (i < ts->v_kpos ? lam : -lam) * ts->v_scale;
    }
    /* V = O diag O^T, symmetrised exactly */
    for (int i = 0; i < d; i++)
      for (int k = 0; k < d; k++) s->B[(size_t)i * d + k] = O[(size_t)i * d + k] * s->tau[k];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, d, 1.0, s->B, d, O, d, 0.0, tr->V,
                d);
    for (int i = 0; i < d; i++)
      for (int j = i + 1; j < d; j++) {
        double a = 0.5 * (tr->V[(size_t)i * d + j] + tr->V[(size_t)j * d + i]);
        tr->V[(size_t)i * d + j] = tr->V[(size_t)j * d + i] = a;
      }
    break;
  }
  case AS_V_PARANORMAL:
  case AS_V_GOOD:
  case AS_V_COMPLEX: {
    double lam = ts->v_lambda;
    AS_CHECK(isfinite(lam) && lam > 0, AS_ERR_DATA, "vfamily %s: v_lambda = %g must be > 0", fam,
             lam);
    memset(Dm, 0, dd * sizeof(double));
    if (ts->vfamily == AS_V_PARANORMAL) {
      int f = ts->v_dim_f;
      double rad = ts->v_radius;
      AS_CHECK(f >= 1 && f <= d, AS_ERR_ARG,
               "vfamily paranormal: v_dim_f = %d is outside 1..d = %d (rule paranormal_dim_f)", f,
               d);
      AS_CHECK(isfinite(rad) && rad >= 0, AS_ERR_DATA,
               "vfamily paranormal: v_radius = %g must be >= 0", rad);
      for (int i = 0; i < f; i++) Dm[(size_t)i * d + i] = lam;
      for (int i = f; i < d; i++) {
        double mu = rad * (2.0 * as_rng_uniform(&r) - 1.0);
        if (i == f) mu = as_rng_uniform(&r) < 0.5 ? -rad : rad; /* the radius is attained */
        Dm[(size_t)i * d + i] = mu;
      }
    } else if (ts->vfamily == AS_V_GOOD) {
      double g = ts->v_gap;
      AS_CHECK(isfinite(g) && g >= 0 && g <= lam, AS_ERR_ARG,
               "vfamily good: v_gap = %g is outside [0, v_lambda = %g] (rule good_gap)", g, lam);
      Dm[0] = lam;
      for (int i = 1; i < d; i++) {
        double mu = (lam - g) * (2.0 * as_rng_uniform(&r) - 1.0);
        if (i == 1) mu = as_rng_uniform(&r) < 0.5 ? -(lam - g) : (lam - g);
        Dm[(size_t)i * d + i] = mu;
      }
    } else {
      AS_CHECK(d >= 2, AS_ERR_ARG, "vfamily complex with d = %d breaks rule complex_d", d);
      AS_CHECK(isfinite(ts->v_imag), AS_ERR_DATA, "vfamily complex: v_imag is not finite");
      Dm[0] = lam;
      Dm[1] = ts->v_imag;
      Dm[(size_t)d] = -ts->v_imag;
      Dm[(size_t)d + 1] = lam;
      for (int i = 2; i < d; i++)
        Dm[(size_t)i * d + i] = 0.5 * lam * (2.0 * as_rng_uniform(&r) - 1.0);
    }
    /* Basis: oblique (S, S^{-1}) or orthogonal (O, O^T). Stored in A (basis) and B (inverse);
     * the similarity uses C. */
    if (ts->vfamily == AS_V_PARANORMAL && !ts->v_oblique) {
      AS_TRY(random_orthogonal(&r, s, s->A));
      for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) s->B[(size_t)i * d + j] = s->A[(size_t)j * d + i];
    } else {
      /* random_oblique needs A, B, C as scratch: build into tr->V / tr->M then copy */
      AS_TRY(random_oblique(&r, s, tr->V, tr->M));
      memcpy(s->A, tr->V, dd * sizeof(double));
      memcpy(s->B, tr->M, dd * sizeof(double));
    }
    similarity(s, s->A, Dm, s->B, tr->V);
    if (ts->vfamily == AS_V_PARANORMAL && !ts->v_oblique) {
      for (int i = 0; i < d; i++)
        for (int j = i + 1; j < d; j++) {
          double a = 0.5 * (tr->V[(size_t)i * d + j] + tr->V[(size_t)j * d + i]);
          tr->V[(size_t)i * d + j] = tr->V[(size_t)j * d + i] = a;
        }
    }
    if (ts->vfamily == AS_V_GOOD) {
      double n = 0;
      for (int i = 0; i < d; i++) n += s->A[(size_t)i * d] * s->A[(size_t)i * d];
      for (int i = 0; i < d; i++) phi_good[i] = s->A[(size_t)i * d] / sqrt(n);
    }
    memset(tr->M, 0, dd * sizeof(double));
    break;
  }
  default:
    AS_CHECK(0, AS_ERR_INTERNAL, "vfamily %d is not a known family", (int)ts->vfamily);
  }
cleanup:
  return st;
}

/* ---------------------------------------------------------------- M families */

static as_status build_m(const as_trial *t, as_triple *tr, scratch *s, const head_at *at) {
  as_status st = AS_OK;
  const as_triple_spec *ts = &t->triple;
  int d = tr->d, m = tr->m;
  size_t md = (size_t)m * d;
  as_rng r;
  rng_sub(&r, t->master_seed, t->triple_key, at->p_triple, 1);
  const double *Qdata = head_slice(&ts->Q, m, d, at->head);
  const double *Kdata = head_slice(&ts->K, m, d, at->head);
  const double *Mdata = head_slice(&ts->M, d, d, at->head);
  const char *fam = as_enum_label(&as_mfamily_table, (int)ts->mfamily);
  double sc = ts->m_scale;
  AS_CHECK(isfinite(sc), AS_ERR_DATA, "mfamily %s: m_scale is not finite", fam);
  double qs = sqrt(fabs(sc)), ks = sc < 0 ? -qs : qs;
  int square_only =
      ts->mfamily == AS_M_IDENTITY || ts->mfamily == AS_M_SPD || ts->mfamily == AS_M_SCALAR;
  AS_CHECK(!square_only || m == d, AS_ERR_ARG,
           "mfamily %s with m_rows = %d != d = %d breaks rule square_m", fam, m, d);
  switch (ts->mfamily) {
  case AS_M_IDENTITY:
    set_scaled_identity(m, d, qs, tr->Q);
    set_scaled_identity(m, d, ks, tr->K);
    compute_m(tr);
    break;
  case AS_M_ZERO:
    memset(tr->Q, 0, md * sizeof(double));
    memset(tr->K, 0, md * sizeof(double));
    memset(tr->M, 0, (size_t)d * d * sizeof(double));
    break;
  case AS_M_SCALAR:
    AS_CHECK(d == 1, AS_ERR_ARG, "mfamily scalar with d = %d breaks rule scalar_d (rules.h)", d);
    tr->Q[0] = qs;
    tr->K[0] = ks;
    tr->M[0] = sc; /* exactly q k = s; Q K = sqrt|s| (+-sqrt|s|) only up to rounding */
    break;
  case AS_M_UNIFORM:
  case AS_M_GAUSSIAN:
    if (ts->mfamily == AS_M_UNIFORM) {
      as_rng_fill_uniform(&r, tr->Q, (long)md, 0.0, 1.0);
      as_rng_fill_uniform(&r, tr->K, (long)md, 0.0, 1.0);
    } else {
      as_rng_fill_normal(&r, tr->Q, (long)md, 1.0);
      as_rng_fill_normal(&r, tr->K, (long)md, 1.0);
    }
    for (size_t k = 0; k < md; k++) {
      tr->Q[k] *= qs;
      tr->K[k] *= ks;
    }
    compute_m(tr);
    break;
  case AS_M_SPD: {
    double c = ts->m_cond;
    AS_CHECK(isfinite(c) && c >= 1, AS_ERR_DATA, "mfamily spd: m_cond = %g must be >= 1", c);
    AS_CHECK(d > 1 || c == 1, AS_ERR_ARG, "mfamily spd with d = 1, m_cond = %g breaks rule spd_d1",
             c);
    double *O = s->A;
    AS_TRY(random_orthogonal(&r, s, O));
    for (int k = 0; k < d; k++) s->tau[k] = d > 1 ? sqrt(pow(c, (double)k / (d - 1))) : 1.0;
    for (int i = 0; i < d; i++)
      for (int k = 0; k < d; k++) s->B[(size_t)i * d + k] = O[(size_t)i * d + k] * s->tau[k];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, d, 1.0, s->B, d, O, d, 0.0, tr->Q,
                d);
    for (int i = 0; i < d; i++)
      for (int j = i + 1; j < d; j++) {
        double a = 0.5 * (tr->Q[(size_t)i * d + j] + tr->Q[(size_t)j * d + i]);
        tr->Q[(size_t)i * d + j] = tr->Q[(size_t)j * d + i] = a;
      }
    for (size_t k = 0; k < (size_t)d * d; k++) {
      double q = tr->Q[k];
      tr->Q[k] = qs * q;
      tr->K[k] = ks * q;
    }
    compute_m(tr);
    for (int i = 0; i < d; i++) /* Q^T K of a symmetric R: symmetric up to rounding; exact */
      for (int j = i + 1; j < d; j++) {
        double a = 0.5 * (tr->M[(size_t)i * d + j] + tr->M[(size_t)j * d + i]);
        tr->M[(size_t)i * d + j] = tr->M[(size_t)j * d + i] = a;
      }
    break;
  }
  case AS_M_EXPLICIT:
  case AS_M_FILE: {
    const char *origin = ts->mfamily == AS_M_FILE && ts->file.text ? ts->file.text : "explicit";
    if (ts->Q.data != NULL && ts->K.data != NULL) {
      AS_TRY(check_finite("Q", origin, m, d, Qdata));
      AS_TRY(check_finite("K", origin, m, d, Kdata));
      memcpy(tr->Q, Qdata, md * sizeof(double));
      memcpy(tr->K, Kdata, md * sizeof(double));
    } else {
      AS_CHECK(ts->M.data != NULL, AS_ERR_DATA, "mfamily %s (%s): neither Q and K nor M were given",
               fam, origin);
      AS_CHECK(m == d, AS_ERR_DATA,
               "mfamily %s (%s): only M is given, so m_rows = %d must equal d = %d", fam, origin, m,
               d);
      AS_TRY(check_finite("M", origin, d, d, Mdata));
      memcpy(tr->M, Mdata, (size_t)d * d * sizeof(double));
      qk_from_m(tr);
    }
    if (ts->mfamily == AS_M_FILE) {
      AS_CHECK(isfinite(ts->file_mscale), AS_ERR_DATA, "mfamily file: file_mscale not finite");
      for (size_t k = 0; k < md; k++) tr->K[k] *= ts->file_mscale;
    }
    compute_m(tr);
    break;
  }
  default:
    AS_CHECK(0, AS_ERR_INTERNAL, "mfamily %d is not a known family", (int)ts->mfamily);
  }
cleanup:
  return st;
}

static as_status impose_margin(const as_trial *t, as_triple *tr, const double *phi, double *tmp) {
  as_status st = AS_OK;
  int d = tr->d, m = tr->m;
  double cur = 0;
  for (int i = 0; i < d; i++) {
    double row = 0;
    for (int j = 0; j < d; j++) row += tr->M[(size_t)i * d + j] * phi[j];
    cur += phi[i] * row;
  }
  double c = t->triple.margin - cur;
  if (m == d) {
    for (int i = 0; i < d; i++)
      for (int j = 0; j < d; j++) tr->M[(size_t)i * d + j] += c * phi[i] * phi[j];
    qk_from_m(tr);
  } else {
    double n2 = 0;
    for (int a = 0; a < m; a++) {
      double v = 0;
      for (int j = 0; j < d; j++) v += tr->Q[(size_t)a * d + j] * phi[j];
      tmp[a] = v;
      n2 += v * v;
    }
    AS_CHECK(n2 > 0, AS_ERR_DATA, "vfamily good: margin %g cannot be imposed because Q phi_1 = 0",
             t->triple.margin);
    for (int a = 0; a < m; a++)
      for (int j = 0; j < d; j++) tr->K[(size_t)a * d + j] += c * tmp[a] * phi[j] / n2;
    compute_m(tr);
  }
cleanup:
  return st;
}

static void perturb(const as_trial *t, as_triple *tr, const head_at *at) {
  const as_triple_spec *ts = &t->triple;
  int d = tr->d, m = tr->m;
  double sd = ts->eps / sqrt((double)d);
  as_rng r;
  if (ts->perturb == AS_PERTURB_V || ts->perturb == AS_PERTURB_BOTH) {
    rng_sub(&r, t->master_seed, t->triple_key, at->p_perturb, 0);
    for (size_t k = 0; k < (size_t)d * d; k++) tr->V[k] += sd * as_rng_normal(&r);
  }
  if (ts->perturb == AS_PERTURB_M || ts->perturb == AS_PERTURB_BOTH) {
    rng_sub(&r, t->master_seed, t->triple_key, at->p_perturb, 1);
    if (m == d) {
      for (size_t k = 0; k < (size_t)d * d; k++) tr->M[k] += sd * as_rng_normal(&r);
      qk_from_m(tr);
    } else {
      for (size_t k = 0; k < (size_t)m * d; k++) tr->K[k] += sd * as_rng_normal(&r);
      compute_m(tr);
    }
  }
}

uint32_t as_purpose_of(uint32_t base, int head, long block) {
  if (head == 0 && block == 0) return base;
  return base + 256u * ((uint32_t)head + 64u * (uint32_t)block);
}

as_status as_triple_build(const as_trial *t, as_triple *tr) {
  return as_triple_build_at(t, 0, 0, tr);
}

as_status as_triple_build_at(const as_trial *t, int head, long block, as_triple *tr) {
  as_status st = AS_OK;
  scratch s = {0};
  double *phi = NULL, *tmp = NULL;
  AS_CHECK(t != NULL && tr != NULL, AS_ERR_ARG, "triple: NULL argument");
  AS_CHECK(head >= 0 && head < 64 && block >= 0 && block < AS_MAX_BLOCKS, AS_ERR_ARG,
           "triple: head %d, block %ld out of range", head, block);
  const head_at at = {as_purpose_of(AS_PURPOSE_TRIPLE, head, block),
                      as_purpose_of(AS_PURPOSE_PERTURB, head, block), head};
  int d = t->d, m = t->triple.m_rows > 0 ? t->triple.m_rows : t->d;
  AS_CHECK(tr->d == d && tr->m == m, AS_ERR_ARG,
           "triple: created with (d, m) = (%d, %d), the trial asks (%d, %d)", tr->d, tr->m, d, m);
  AS_CHECK(isfinite(t->triple.eps) && t->triple.eps >= 0, AS_ERR_DATA,
           "perturbation eps = %g must be >= 0", t->triple.eps);
  AS_CHECK(t->triple.perturb >= AS_PERTURB_V && t->triple.perturb <= AS_PERTURB_BOTH,
           AS_ERR_INTERNAL, "perturbation target %d unknown", (int)t->triple.perturb);
  AS_TRY(scratch_alloc(&s, d));
  phi = calloc((size_t)d, sizeof(double));
  AS_CHECK_ALLOC(phi);
  tmp = calloc((size_t)m, sizeof(double));
  AS_CHECK_ALLOC(tmp);
  AS_TRY(build_v(t, tr, &s, phi, &at));
  AS_TRY(build_m(t, tr, &s, &at));
  if (t->triple.vfamily == AS_V_GOOD && !isnan(t->triple.margin)) {
    AS_CHECK(isfinite(t->triple.margin), AS_ERR_DATA, "vfamily good: margin is infinite");
    AS_TRY(impose_margin(t, tr, phi, tmp));
  }
  if (t->triple.eps > 0) perturb(t, tr, &at);
  /* Temperature: scores beta <Q x_i, K x_j>, i.e. M -> beta M (K carries the factor so that
   * M = Q^T K stays exact). beta = 1 leaves the triple bit for bit as it was; beta = +inf
   * (hardmax) leaves M unscaled: only the argmax of each row matters, and the dynamics takes
   * an infinite temperature (as_dyn_set_model). */
  if (t->triple.beta != 1.0 && t->triple.beta != INFINITY) {
    double b = t->triple.beta;
    AS_CHECK(isfinite(b) && b > 0, AS_ERR_DATA, "beta = %g must be > 0", b);
    for (size_t k = 0; k < (size_t)d * d; k++) tr->M[k] *= b;
    for (size_t k = 0; k < (size_t)m * d; k++) tr->K[k] *= b;
  }
  AS_TRY(check_finite("V", "built", d, d, tr->V));
  AS_TRY(check_finite("M", "built", d, d, tr->M));
cleanup:
  scratch_free(&s);
  free(phi);
  free(tmp);
  return st;
}
