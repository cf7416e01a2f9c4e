/* expm.c: e^{tV} through the real eigenbasis or scaling-and-squaring Pade (see expm.h). */
#include "attnsweep/expm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linalg_dyn.h"

struct as_expm_plan {
  int d;
  as_expm path;  /* chosen by the last set (AS_EXPM_NONE before) */
  int eig_ok;    /* dgeev succeeded: wr, wi valid */
  int w_ident;   /* W is exactly the identity (diagonal V): basis changes are copies */
  double mu;     /* largest real part of the spectrum */
  double cond;   /* kappa_1(W), +inf if singular */
  double *V;     /* d*d row-major copy of V */
  double *wr;    /* d: real parts; complex pairs consecutive, positive imaginary part first */
  double *wi;    /* d: imaginary parts */
  double *W;     /* d*d row-major: real eigenbasis in columns */
  double *Winv;  /* d*d row-major: W^{-1} */
  double *bd;    /* d: block scratch */
  double *bo;    /* d */
  double *pa[7]; /* 7 d*d Pade scratch: A, A2, A4, A6, U, V, T */
  double *work;  /* LAPACK work, lwork doubles */
  int lwork;
  int *ipiv; /* d */
};

/* ---------------------------------------------------------------- shared small product */

/* The small products: plain loops, vectorised by the compiler (GCC: O3 and wider vectors
 * where the CPU has them; no FMA contraction in ISO C mode, so every clone gives the same bits). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define AS_SMALL_OPT \
  __attribute__((optimize("O3", "no-trapping-math"), target_clones("avx512f", "avx2", "default")))
#elif defined(__GNUC__) && !defined(__clang__)
#define AS_SMALL_OPT __attribute__((optimize("O3", "no-trapping-math")))
#else
#define AS_SMALL_OPT
#endif

static AS_SMALL_OPT void mm_small(int ta, int tb, int m, int n, int k, double alpha,
                                  const double *A, int lda, const double *B, int ldb, double beta,
                                  double *C, int ldc) {
  /* Element (i, l) of op(A) is A[i * ai + l * al]. */
  const int ai = ta ? 1 : lda, al = ta ? lda : 1;
  if (!tb && n <= 8) { /* few columns: dot products in registers (no store-to-load chains) */
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        /* Four partial sums in a fixed order: short dependency chains, same bits every run. */
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        int l = 0;
        for (; l + 4 <= k; l += 4) {
          s0 += A[i * ai + l * al] * B[(size_t)l * ldb + j];
          s1 += A[i * ai + (l + 1) * al] * B[(size_t)(l + 1) * ldb + j];
          s2 += A[i * ai + (l + 2) * al] * B[(size_t)(l + 2) * ldb + j];
          s3 += A[i * ai + (l + 3) * al] * B[(size_t)(l + 3) * ldb + j];
        }
        for (; l < k; l++) s0 += A[i * ai + l * al] * B[(size_t)l * ldb + j];
        double s = (s0 + s1) + (s2 + s3);
        C[i * ldc + j] = beta == 0.0 ? alpha * s : alpha * s + beta * C[i * ldc + j];
      }
    return;
  }
  if (!tb) { /* rows of C as combinations of rows of B: contiguous inner loop */
    for (int i = 0; i < m; i++) {
      double *c = C + (size_t)i * ldc;
      int l0 = 0;
      if (beta == 0.0 && k == 0) {
        for (int j = 0; j < n; j++) c[j] = 0.0;
      } else if (beta == 0.0) { /* the first term assigns */
        const double a = alpha * A[i * ai], *b = B;
        for (int j = 0; j < n; j++) c[j] = a * b[j];
        l0 = 1;
      } else if (beta != 1.0) {
        for (int j = 0; j < n; j++) c[j] *= beta;
      }
      for (int l = l0; l < k; l++) {
        const double a = alpha * A[i * ai + l * al], *b = B + (size_t)l * ldb;
        for (int j = 0; j < n; j++) c[j] += a * b[j];
      }
    }
    return;
  }
  for (int i = 0; i < m; i++) { /* op(B) = B^T: dot products with rows of B */
    for (int j = 0; j < n; j++) {
      const double *b = B + (size_t)j * ldb;
      double s = 0.0;
      for (int l = 0; l < k; l++) s += A[i * ai + l * al] * b[l];
      C[i * ldc + j] = beta == 0.0 ? alpha * s : alpha * s + beta * C[i * ldc + j];
    }
  }
}

void as_mm(int ta, int tb, int m, int n, int k, double alpha, const double *A, int lda,
           const double *B, int ldb, double beta, double *C, int ldc) {
  if ((double)m * n * k > 4096.0) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  mm_small(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---------------------------------------------------------------- create / destroy */

as_status as_expm_create(int d, as_expm_plan **out) {
  as_status st = AS_OK;
  as_expm_plan *p = NULL;
  AS_CHECK(d >= 1 && out != NULL, AS_ERR_ARG, "as_expm_create: d = %d must be >= 1", d);
  p = calloc(1, sizeof *p);
  AS_CHECK_ALLOC(p);
  p->d = d;
  p->path = AS_EXPM_NONE;
  size_t dd = (size_t)d * (size_t)d;
  p->V = malloc(dd * sizeof(double));
  p->W = malloc(dd * sizeof(double));
  p->Winv = malloc(dd * sizeof(double));
  p->wr = malloc((size_t)d * sizeof(double));
  p->wi = malloc((size_t)d * sizeof(double));
  p->bd = malloc((size_t)d * sizeof(double));
  p->bo = malloc((size_t)d * sizeof(double));
  p->ipiv = malloc((size_t)d * sizeof(int));
  AS_CHECK_ALLOC(p->V);
  AS_CHECK_ALLOC(p->W);
  AS_CHECK_ALLOC(p->Winv);
  AS_CHECK_ALLOC(p->wr);
  AS_CHECK_ALLOC(p->wi);
  AS_CHECK_ALLOC(p->bd);
  AS_CHECK_ALLOC(p->bo);
  AS_CHECK_ALLOC(p->ipiv);
  for (int i = 0; i < 7; i++) {
    p->pa[i] = malloc(dd * sizeof(double));
    AS_CHECK_ALLOC(p->pa[i]);
  }
  /* Workspace queries (they read no matrix data). */
  {
    int info = 0, lw = -1, one = 1;
    double q1 = 0.0, q2 = 0.0, dummy = 0.0;
    dgeev_("N", "V", &d, p->pa[0], &d, p->wr, p->wi, &dummy, &one, p->pa[1], &d, &q1, &lw, &info, 1,
           1);
    AS_LAPACK_CHECK("dgeev (query)", info);
    dgetri_(&d, p->pa[0], &d, p->ipiv, &q2, &lw, &info);
    AS_LAPACK_CHECK("dgetri (query)", info);
    double need = fmax(fmax(q1, q2), 4.0 * d);
    p->lwork = (int)need;
    p->work = malloc((size_t)p->lwork * sizeof(double));
    AS_CHECK_ALLOC(p->work);
  }
  *out = p;
  p = NULL;
cleanup:
  as_expm_destroy(&p);
  return st;
}

void as_expm_destroy(as_expm_plan **pp) {
  if (!pp || !*pp) return;
  as_expm_plan *p = *pp;
  free(p->V);
  free(p->W);
  free(p->Winv);
  free(p->wr);
  free(p->wi);
  free(p->bd);
  free(p->bo);
  free(p->ipiv);
  for (int i = 0; i < 7; i++) free(p->pa[i]);
  free(p->work);
  free(p);
  *pp = NULL;
}

as_expm as_expm_path(const as_expm_plan *p) {
  return p->path;
}
double as_expm_mu(const as_expm_plan *p) {
  return p->mu;
}
double as_expm_cond(const as_expm_plan *p) {
  return p->cond;
}
int as_expm_dim(const as_expm_plan *p) {
  return p->d;
}
int as_expm_identity_basis(const as_expm_plan *p) {
  return p->path != AS_EXPM_NONE && p->eig_ok && p->w_ident;
}
int as_expm_scalar(const as_expm_plan *p) {
  if (!as_expm_identity_basis(p)) return 0;
  for (int j = 0; j < p->d; j++)
    if (p->wr[j] != p->mu || p->wi[j] != 0.0) return 0;
  return 1;
}

static double norm1(int d, const double *A) { /* max column sum, row-major A */
  double best = 0.0;
  for (int j = 0; j < d; j++) {
    double s = 0.0;
    for (int i = 0; i < d; i++) s += fabs(A[i * d + j]);
    if (s > best || isnan(s)) best = s;
  }
  return best;
}

/* ---------------------------------------------------------------- set */

/* The eigen-decomposition of V into p (wr, wi, W, Winv, cond, w_ident, mu), or the Gershgorin
 * bound on mu when dgeev fails. */
static as_status decompose(as_expm_plan *p, const double *V) {
  as_status st = AS_OK;
  const int d = p->d;
  memcpy(p->V, V, (size_t)d * (size_t)d * sizeof(double));
  /* dgeev on the column-major copy of V (the transpose of the row-major buffer). */
  double *A = p->pa[0], *VR = p->pa[1];
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) A[j * d + i] = V[i * d + j];
  int info = 0, one = 1;
  double dummy = 0.0;
  dgeev_("N", "V", &d, A, &d, p->wr, p->wi, &dummy, &one, VR, &d, p->work, &p->lwork, &info, 1, 1);
  AS_LAPACK_CHECK("dgeev", info);
  p->eig_ok = info == 0;
  p->cond = INFINITY;
  p->w_ident = 0;
  if (p->eig_ok) {
    p->mu = -INFINITY;
    for (int j = 0; j < d; j++) p->mu = fmax(p->mu, p->wr[j]);
    /* VR column-major is W row-major transposed: W[i][j] = VR[j*d + i]. */
    for (int i = 0; i < d; i++)
      for (int j = 0; j < d; j++) p->W[i * d + j] = VR[j * d + i];
    /* Inverse from the column-major W (= VR): LU then dgetri; read back transposed. */
    dgetrf_(&d, &d, VR, &d, p->ipiv, &info);
    AS_LAPACK_CHECK("dgetrf", info);
    if (info == 0) {
      dgetri_(&d, VR, &d, p->ipiv, p->work, &p->lwork, &info);
      AS_LAPACK_CHECK("dgetri", info);
    }
    if (info == 0) {
      for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) p->Winv[i * d + j] = VR[j * d + i];
      double c = norm1(d, p->W) * norm1(d, p->Winv);
      p->w_ident = 1;
      for (int i = 0; i < d && p->w_ident; i++)
        for (int j = 0; j < d; j++)
          if (p->W[i * d + j] != (i == j ? 1.0 : 0.0) ||
              p->Winv[i * d + j] != (i == j ? 1.0 : 0.0)) {
            p->w_ident = 0;
            break;
          }
      p->cond = isfinite(c) ? c : INFINITY;
    }
  } else {
    /* No eigenvalues: any shift is exact (the factor is taken out exactly); a Gershgorin
     * bound keeps e^{t(V - mu I)} from growing. */
    p->mu = -INFINITY;
    for (int i = 0; i < d; i++) {
      double r = V[i * d + i];
      for (int j = 0; j < d; j++)
        if (j != i) r += fabs(V[i * d + j]);
      p->mu = fmax(p->mu, r);
    }
  }
cleanup:
  return st;
}

as_status as_expm_set(as_expm_plan *p, const double *V, as_expm force, as_expm *path) {
  as_status st = AS_OK;
  const int d = p->d;
  const size_t dd = (size_t)d * (size_t)d;
  AS_CHECK(force == AS_EXPM_NONE || force == AS_EXPM_EIGEN || force == AS_EXPM_PADE, AS_ERR_ARG,
           "as_expm_set: unknown path %d", (int)force);
  for (size_t i = 0; i < dd; i++)
    AS_CHECK(isfinite(V[i]), AS_ERR_DATA, "V[%zu][%zu] = %g is not finite", i / (size_t)d,
             i % (size_t)d, V[i]);
  /* The same V as the last successful set (a family with one V: every trial of identity or
   * minus_identity): its decomposition is still here, and would come out with the same bits. */
  const int same = p->path != AS_EXPM_NONE && memcmp(p->V, V, dd * sizeof(double)) == 0;
  p->path = AS_EXPM_NONE;
  if (!same) AS_TRY(decompose(p, V));
  if (force == AS_EXPM_EIGEN) {
    AS_CHECK(p->eig_ok && p->cond <= 1e12, AS_ERR_DATA,
             "eigenbasis path forced but V has no invertible eigenvector matrix (kappa = %g)",
             p->cond);
    p->path = AS_EXPM_EIGEN;
  } else if (force == AS_EXPM_PADE) {
    p->path = AS_EXPM_PADE;
  } else {
    p->path = (p->eig_ok && p->cond <= AS_EXPM_COND_MAX) ? AS_EXPM_EIGEN : AS_EXPM_PADE;
  }
  if (path) *path = p->path;
cleanup:
  return st;
}

/* ---------------------------------------------------------------- eigenbasis helpers */

void as_expm_to_eigen(const as_expm_plan *p, int n, const double *Z, double *U) {
  if (p->w_ident) {
    memcpy(U, Z, (size_t)n * p->d * sizeof(double));
    return;
  }
  as_mm(0, 1, n, p->d, p->d, 1.0, Z, p->d, p->Winv, p->d, 0.0, U, p->d);
}

void as_expm_from_eigen(const as_expm_plan *p, int n, const double *G, double *Y) {
  if (p->w_ident) {
    memcpy(Y, G, (size_t)n * p->d * sizeof(double));
    return;
  }
  as_mm(0, 1, n, p->d, p->d, 1.0, G, p->d, p->W, p->d, 0.0, Y, p->d);
}

void as_expm_congruence(const as_expm_plan *p, const double *M, double *Mt) {
  const int d = p->d;
  double *T = p->pa[6];
  if (p->w_ident) {
    memcpy(Mt, M, (size_t)d * d * sizeof(double));
    return;
  }
  as_mm(0, 0, d, d, d, 1.0, M, d, p->W, d, 0.0, T, d);
  as_mm(1, 0, d, d, d, 1.0, p->W, d, T, d, 0.0, Mt, d);
}

void as_expm_blocks(const as_expm_plan *p, double t, double shift, double *bd, double *bo) {
  const int d = p->d;
  for (int j = 0; j < d; j++) {
    double e = exp((p->wr[j] - shift) * t);
    if (p->wi[j] == 0.0 || j + 1 >= d) {
      bd[j] = e;
      bo[j] = 0.0;
    } else {
      /* Pair a +- ib: block e^{(a - s)t} [[cos bt, sin bt], [-sin bt, cos bt]]. */
      double c = cos(p->wi[j] * t), s = sin(p->wi[j] * t);
      bd[j] = bd[j + 1] = e * c;
      bo[j] = e * s;
      bo[j + 1] = -e * s;
      j++;
    }
  }
}

double as_expm_layer_radius(const as_expm_plan *p, double dt) {
  double rho = 0.0;
  if (!p->eig_ok) { /* bound ||I + dt V||_1 */
    const int d = p->d;
    for (int j = 0; j < d; j++) {
      double s = 0.0;
      for (int i = 0; i < d; i++) s += fabs((i == j ? 1.0 : 0.0) + dt * p->V[i * d + j]);
      rho = fmax(rho, s);
    }
    return rho;
  }
  for (int j = 0; j < p->d; j++) rho = fmax(rho, hypot(1.0 + dt * p->wr[j], dt * p->wi[j]));
  return rho;
}

void as_expm_layer_blocks(const as_expm_plan *p, double dt, long k, double rho, double *bd,
                          double *bo) {
  const int d = p->d;
  const double kd = (double)k;
  for (int j = 0; j < d; j++) {
    double a = 1.0 + dt * p->wr[j], b = dt * p->wi[j];
    if (p->wi[j] == 0.0 || j + 1 >= d) {
      /* ((a / rho))^k with the sign of a^k; 0^0 = 1. */
      double r = fabs(a) / rho;
      double m = k == 0 ? 1.0 : (r == 0.0 ? 0.0 : exp(kd * log(r)));
      bd[j] = (a < 0.0 && (k & 1)) ? -m : m;
      bo[j] = 0.0;
    } else {
      double r = hypot(a, b) / rho, th = atan2(b, a);
      double m = k == 0 ? 1.0 : (r == 0.0 ? 0.0 : exp(kd * log(r)));
      bd[j] = bd[j + 1] = m * cos(kd * th);
      bo[j] = m * sin(kd * th);
      bo[j + 1] = -bo[j];
      j++;
    }
  }
}

void as_expm_apply_blocks(const as_expm_plan *p, int n, const double *bd, const double *bo,
                          double *U) {
  const int d = p->d;
  for (int i = 0; i < n; i++) {
    double *u = U + (size_t)i * d;
    for (int j = 0; j < d; j++) {
      if (bo[j] == 0.0 && (p->wi[j] == 0.0 || j + 1 >= d)) {
        u[j] *= bd[j];
      } else {
        double u0 = u[j], u1 = u[j + 1];
        u[j] = bd[j] * u0 + bo[j] * u1;
        u[j + 1] = bo[j + 1] * u0 + bd[j + 1] * u1;
        j++;
      }
    }
  }
}

as_status as_expm_positive_part(as_expm_plan *p, double t, double cut, int n, const double *X,
                                double *U, double *Zp) {
  as_status st = AS_OK;
  AS_CHECK(p != NULL && p->path == AS_EXPM_EIGEN, AS_ERR_ARG,
           "the positive part of z needs the eigenbasis path of e^{tV}");
  as_expm_blocks(p, -t, 0.0, p->bd, p->bo);
  for (int j = 0; j < p->d; j++) /* a complex pair shares its real part: both go together */
    if (!(p->wr[j] > cut)) p->bd[j] = p->bo[j] = 0.0;
  as_expm_to_eigen(p, n, X, U);
  as_expm_apply_blocks(p, n, p->bd, p->bo, U);
  as_expm_from_eigen(p, n, U, Zp);
cleanup:
  return st;
}

/* E = W diag-blocks W^{-1} from block coefficients. */
static void dense_from_blocks(as_expm_plan *p, const double *bd, const double *bo, double *E) {
  const int d = p->d;
  double *T = p->pa[6];
  /* T = W B: column j of T combines columns of W inside j's block. */
  for (int i = 0; i < d; i++) {
    const double *w = p->W + (size_t)i * d;
    double *t = T + (size_t)i * d;
    for (int j = 0; j < d; j++) {
      if (p->wi[j] == 0.0 || j + 1 >= d) {
        t[j] = w[j] * bd[j];
      } else {
        /* B block rows j, j+1: [[bd_j, bo_j], [bo_{j+1}, bd_{j+1}]]; (W B)_{i,j} =
         * w_j bd_j + w_{j+1} bo_{j+1}; (W B)_{i,j+1} = w_j bo_j + w_{j+1} bd_{j+1}. */
        t[j] = w[j] * bd[j] + w[j + 1] * bo[j + 1];
        t[j + 1] = w[j] * bo[j] + w[j + 1] * bd[j + 1];
        j++;
      }
    }
  }
  as_mm(0, 0, d, d, d, 1.0, T, d, p->Winv, d, 0.0, E, d);
}

/* ---------------------------------------------------------------- Pade */

/* E = e^{A} for A (d x d, overwritten as scratch pa[0] is A itself). Higham (2005),
 * degree 13 with theta_13 = 5.37. Returns LAPACK info of the solve (> 0: singular). */
static int pade13(as_expm_plan *p, double *E) {
  static const double b[14] = {64764752532480000.0,
                               32382376266240000.0,
                               7771770303897600.0,
                               1187353796428800.0,
                               129060195264000.0,
                               10559470521600.0,
                               670442572800.0,
                               33522128640.0,
                               1323241920.0,
                               40840800.0,
                               960960.0,
                               16380.0,
                               182.0,
                               1.0};
  const int d = p->d;
  const size_t dd = (size_t)d * (size_t)d;
  double *A = p->pa[0], *A2 = p->pa[1], *A4 = p->pa[2], *A6 = p->pa[3], *U = p->pa[4],
         *Vp = p->pa[5], *T = p->pa[6];
  double nrm = norm1(d, A);
  int s = 0;
  if (nrm > 5.371920351148152) {
    s = (int)ceil(log2(nrm / 5.371920351148152));
    if (s < 0) s = 0;
    double f = ldexp(1.0, -s);
    for (size_t i = 0; i < dd; i++) A[i] *= f;
  }
  as_mm(0, 0, d, d, d, 1.0, A, d, A, d, 0.0, A2, d);
  as_mm(0, 0, d, d, d, 1.0, A2, d, A2, d, 0.0, A4, d);
  as_mm(0, 0, d, d, d, 1.0, A4, d, A2, d, 0.0, A6, d);
  /* U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I] */
  for (size_t i = 0; i < dd; i++) T[i] = b[13] * A6[i] + b[11] * A4[i] + b[9] * A2[i];
  as_mm(0, 0, d, d, d, 1.0, A6, d, T, d, 0.0, Vp, d);
  for (size_t i = 0; i < dd; i++) Vp[i] += b[7] * A6[i] + b[5] * A4[i] + b[3] * A2[i];
  for (int i = 0; i < d; i++) Vp[(size_t)i * d + i] += b[1];
  as_mm(0, 0, d, d, d, 1.0, A, d, Vp, d, 0.0, U, d);
  /* V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I */
  for (size_t i = 0; i < dd; i++) T[i] = b[12] * A6[i] + b[10] * A4[i] + b[8] * A2[i];
  as_mm(0, 0, d, d, d, 1.0, A6, d, T, d, 0.0, Vp, d);
  for (size_t i = 0; i < dd; i++) Vp[i] += b[6] * A6[i] + b[4] * A4[i] + b[2] * A2[i];
  for (int i = 0; i < d; i++) Vp[(size_t)i * d + i] += b[0];
  /* Solve (V - U) E = (V + U). The row-major buffers are the column-major transposes; since
   * both sides are polynomials in A they commute, so solving the transposed system and
   * reading the result row-major gives E. */
  for (size_t i = 0; i < dd; i++) {
    double v = Vp[i], u = U[i];
    Vp[i] = v - u;
    E[i] = v + u;
  }
  int info = 0;
  dgesv_(&d, &d, Vp, &d, p->ipiv, E, &d, &info);
  if (info != 0) return info;
  for (int k = 0; k < s; k++) {
    as_mm(0, 0, d, d, d, 1.0, E, d, E, d, 0.0, T, d);
    memcpy(E, T, dd * sizeof(double));
  }
  return 0;
}

as_status as_expm_eval(as_expm_plan *p, double t, double shift, double *E) {
  as_status st = AS_OK;
  const int d = p->d;
  const size_t dd = (size_t)d * (size_t)d;
  AS_CHECK(p->path != AS_EXPM_NONE, AS_ERR_ARG, "as_expm_eval: no V set");
  if (p->path == AS_EXPM_EIGEN) {
    as_expm_blocks(p, t, shift, p->bd, p->bo);
    dense_from_blocks(p, p->bd, p->bo, E);
  } else {
    double *A = p->pa[0];
    for (size_t i = 0; i < dd; i++) A[i] = t * p->V[i];
    for (int i = 0; i < d; i++) A[(size_t)i * d + i] -= t * shift;
    int info = pade13(p, E);
    AS_LAPACK_CHECK("dgesv", info);
    if (info > 0)
      for (size_t i = 0; i < dd; i++) E[i] = NAN;
  }
cleanup:
  return st;
}

as_status as_expm_eval_layers(as_expm_plan *p, double dt, long k, double rho, double *E) {
  as_status st = AS_OK;
  const int d = p->d;
  const size_t dd = (size_t)d * (size_t)d;
  AS_CHECK(p->path != AS_EXPM_NONE, AS_ERR_ARG, "as_expm_eval_layers: no V set");
  AS_CHECK(k >= 0 && rho > 0.0, AS_ERR_ARG, "as_expm_eval_layers: k = %ld, rho = %g", k, rho);
  if (p->path == AS_EXPM_EIGEN) {
    as_expm_layer_blocks(p, dt, k, rho, p->bd, p->bo);
    dense_from_blocks(p, p->bd, p->bo, E);
  } else {
    /* Binary powering of R / rho. pa[0] = base, pa[1] = scratch. */
    double *B = p->pa[0], *T = p->pa[1];
    for (size_t i = 0; i < dd; i++) B[i] = dt * p->V[i] / rho;
    for (int i = 0; i < d; i++) B[(size_t)i * d + i] += 1.0 / rho;
    memset(E, 0, dd * sizeof(double));
    for (int i = 0; i < d; i++) E[(size_t)i * d + i] = 1.0;
    for (long e = k; e > 0; e >>= 1) {
      if (e & 1) {
        as_mm(0, 0, d, d, d, 1.0, E, d, B, d, 0.0, T, d);
        memcpy(E, T, dd * sizeof(double));
      }
      if (e > 1) {
        as_mm(0, 0, d, d, d, 1.0, B, d, B, d, 0.0, T, d);
        memcpy(B, T, dd * sizeof(double));
      }
    }
  }
cleanup:
  return st;
}
