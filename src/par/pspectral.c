/* pspectral.c: the ScaLAPACK path of the spectral analysis (see pspectral.h).
 *
 * Global matrices are the triple's row-major V and M read as mathematical matrices: entry
 * (i, j) of the distributed array is V[i*d + j]. Local storage is column-major with leading
 * dimension lld (ScaLAPACK's convention). Index maps for square blocks nb, source 0:
 *   global g -> owner (g / nb) mod P, local ((g / nb) / P) nb + g mod nb.
 * Replicated results (vectors, the projector) are assembled by an MPI_Allreduce of a zero
 * buffer into which each rank wrote its own entries.
 */
#include "attnsweep/pspectral.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/record.h"

typedef size_t as_fl; /* hidden Fortran character length */

/* BLACS (C interface) and ScaLAPACK (Fortran interface) as shipped in libscalapack-openmpi. */
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ctxt, const int *lld, int *info);
void pdgehrd_(const int *n, const int *ilo, const int *ihi, double *a, const int *ia, const int *ja,
              const int *desca, double *tau, double *work, const int *lwork, int *info);
void pdlaset_(const char *uplo, const int *m, const int *n, const double *alpha, const double *beta,
              double *a, const int *ia, const int *ja, const int *desca, as_fl);
void pdlahqr_(const int *wantt, const int *wantz, const int *n, const int *ilo, const int *ihi,
              double *a, const int *desca, double *wr, double *wi, const int *iloz, const int *ihiz,
              double *z, const int *descz, double *work, const int *lwork, int *iwork,
              const int *ilwork, int *info);
void pdgetrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca,
              int *ipiv, int *info);
void pdgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *ia,
              const int *ja, const int *desca, const int *ipiv, double *b, const int *ib,
              const int *jb, const int *descb, int *info, as_fl);
void pdgetri_(const int *n, double *a, const int *ia, const int *ja, const int *desca,
              const int *ipiv, double *work, const int *lwork, int *iwork, const int *liwork,
              int *info);
void pdsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *ia,
             const int *ja, const int *desca, double *w, double *z, const int *iz, const int *jz,
             const int *descz, double *work, const int *lwork, int *info, as_fl, as_fl);
void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
             const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
             double *c, const int *ic, const int *jc, const int *descc, as_fl, as_fl);

struct as_pspectral {
  MPI_Comm comm; /* duplicate of the creator's communicator */
  int rank, size;
  int sys;  /* BLACS system handle of comm */
  int ctxt; /* BLACS grid context */
  int nprow, npcol, myrow, mycol;
  int threshold;
  as_pspectral_times times;
};

static const int I0 = 0, I1 = 1;

as_status as_pspectral_create(MPI_Comm comm, int threshold, as_pspectral **out) {
  as_status st = AS_OK;
  as_pspectral *ps = NULL;
  AS_CHECK(out != NULL, AS_ERR_ARG, "pspectral: out is NULL");
  ps = calloc(1, sizeof *ps);
  AS_CHECK_ALLOC(ps);
  ps->comm = MPI_COMM_NULL;
  ps->ctxt = -1;
  AS_MPI_CHECK(MPI_Comm_dup(comm, &ps->comm));
  AS_MPI_CHECK(MPI_Comm_rank(ps->comm, &ps->rank));
  AS_MPI_CHECK(MPI_Comm_size(ps->comm, &ps->size));
  ps->threshold = threshold > 0 ? threshold : AS_PSPECTRAL_THRESHOLD_DEFAULT;
  int pr = 1;
  for (int p = 1; p * p <= ps->size; p++)
    if (ps->size % p == 0) pr = p;
  ps->sys = Csys2blacs_handle(ps->comm);
  ps->ctxt = ps->sys;
  pr = ps->size / pr; /* nprow >= npcol, as square as possible (2 ranks: 2 x 1) */
  Cblacs_gridinit(&ps->ctxt, "Row", pr, ps->size / pr);
  Cblacs_gridinfo(ps->ctxt, &ps->nprow, &ps->npcol, &ps->myrow, &ps->mycol);
  AS_CHECK(ps->nprow == pr && ps->npcol == ps->size / pr, AS_ERR_LAPACK,
           "BLACS grid %d x %d could not be created (got %d x %d)", pr, ps->size / pr, ps->nprow,
           ps->npcol);
  *out = ps;
  ps = NULL;
cleanup:
  if (ps != NULL) {
    if (ps->comm != MPI_COMM_NULL) MPI_Comm_free(&ps->comm);
    free(ps);
  }
  return st;
}

void as_pspectral_destroy(as_pspectral **p) {
  if (p == NULL || *p == NULL) return;
  as_pspectral *ps = *p;
  if (ps->ctxt >= 0 && ps->nprow > 0) Cblacs_gridexit(ps->ctxt);
  Cfree_blacs_system_handle(ps->sys);
  if (ps->comm != MPI_COMM_NULL) MPI_Comm_free(&ps->comm);
  free(ps);
  *p = NULL;
}

int as_pspectral_threshold(const as_pspectral *ps) {
  return ps->threshold;
}

as_pspectral_times as_pspectral_last_times(const as_pspectral *ps) {
  return ps->times;
}

/* ---------------------------------------------------------------- distribution helpers */

typedef struct dist {
  int d, nb, locr, locc, lld;
  int desc[9];  /* d x d */
  int descv[9]; /* d x 1 vector */
  int p, q, myrow, mycol;
} dist;

static int g_of(int l, int nb, int me, int np) {
  return ((l / nb) * np + me) * nb + l % nb;
}

/* Local array (column-major, lld) <- global row-major A, with A[i][i] += shift. */
static void scatter(const dist *ds, const double *A, double shift, double *loc) {
  for (int lj = 0; lj < ds->locc; lj++) {
    int j = g_of(lj, ds->nb, ds->mycol, ds->q);
    for (int li = 0; li < ds->locr; li++) {
      int i = g_of(li, ds->nb, ds->myrow, ds->p);
      loc[(size_t)lj * ds->lld + li] = A[(size_t)i * ds->d + j] + (i == j ? shift : 0.0);
    }
  }
}

/* Global row-major full (replicated on all ranks) <- local arrays of everybody. */
static as_status gather_full(MPI_Comm comm, const dist *ds, const double *loc, double *full) {
  as_status st = AS_OK;
  memset(full, 0, (size_t)ds->d * ds->d * sizeof(double));
  for (int lj = 0; lj < ds->locc; lj++) {
    int j = g_of(lj, ds->nb, ds->mycol, ds->q);
    for (int li = 0; li < ds->locr; li++) {
      int i = g_of(li, ds->nb, ds->myrow, ds->p);
      full[(size_t)i * ds->d + j] = loc[(size_t)lj * ds->lld + li];
    }
  }
  AS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, full, ds->d * ds->d, MPI_DOUBLE, MPI_SUM, comm));
cleanup:
  return st;
}

/* Vector (d x 1, held by process column 0) <-> replicated array. */
static void vec_scatter(const dist *ds, const double *x, double *loc) {
  if (ds->mycol != 0) return;
  for (int li = 0; li < ds->locr; li++) loc[li] = x[g_of(li, ds->nb, ds->myrow, ds->p)];
}

static as_status vec_gather(MPI_Comm comm, const dist *ds, const double *loc, double *x) {
  as_status st = AS_OK;
  memset(x, 0, (size_t)ds->d * sizeof(double));
  if (ds->mycol == 0)
    for (int li = 0; li < ds->locr; li++) x[g_of(li, ds->nb, ds->myrow, ds->p)] = loc[li];
  AS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x, ds->d, MPI_DOUBLE, MPI_SUM, comm));
cleanup:
  return st;
}

/* Sum of a local value over the grid. */
static as_status sum_all(MPI_Comm comm, double *v, int n) {
  as_status st = AS_OK;
  AS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, comm));
cleanup:
  return st;
}

static double now(void) {
  return MPI_Wtime();
}

/* ---------------------------------------------------------------- the phases */

/* Eigenvalues of V (distributed in A, destroyed) into wr, wi (replicated). */
static as_status eigenvalues(const dist *ds, double *A, double *wr, double *wi) {
  as_status st = AS_OK;
  double *tau = NULL, *work = NULL;
  int d = ds->d, info = 0, lwork = -1;
  double q[64] = {0};
  tau = malloc((size_t)(ds->locc + 1) * sizeof(double));
  AS_CHECK_ALLOC(tau);
  pdgehrd_(&d, &I1, &d, A, &I1, &I1, ds->desc, tau, q, &lwork, &info);
  AS_LAPACK_CHECK("pdgehrd (query)", info);
  int lw_hrd = (int)q[0] + 1;
  /* pdlahqr: LWORK >= 3N + max(2 max(LLD) + 2 LOCc(N), 7 ceil(N/NB) / lcm(P, Q)) */
  int lw_hqr = 3 * d + 2 * ds->lld + 2 * ds->locc + 7 * (d / ds->nb + 1) + 64;
  lwork = lw_hrd > lw_hqr ? lw_hrd : lw_hqr;
  work = malloc((size_t)lwork * sizeof(double));
  AS_CHECK_ALLOC(work);
  pdgehrd_(&d, &I1, &d, A, &I1, &I1, ds->desc, tau, work, &lwork, &info);
  AS_LAPACK_CHECK("pdgehrd", info);
  if (d > 2) {
    /* Householder vectors below the subdiagonal: pdlahqr needs exact Hessenberg form. */
    int n2 = d - 2, i3 = 3;
    const double zero = 0.0;
    pdlaset_("L", &n2, &n2, &zero, &zero, A, &i3, &I1, ds->desc, 1);
  }
  /* WANTT = .TRUE. although only eigenvalues are needed: in ScaLAPACK 2.2.1 pdlahqr with
   * WANTT = .FALSE. returned wrong eigenvalues on 2 ranks once d spans more than two blocks
   * (errors of order 1 at d = 130), and pdhseqr (JOB = 'E') failed at d = 600 on 2 ranks
   * (PDLAQR1 workspace error, heap corruption in pdtrord; with more workspace, wrong values). */
  int wantt = 1, wantz = 0, iwork[16], liwork = 16;
  pdlahqr_(&wantt, &wantz, &d, &I1, &d, A, ds->desc, wr, wi, &I1, &d, A, ds->desc, work, &lwork,
           iwork, &liwork, &info);
  AS_LAPACK_CHECK("pdlahqr", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "pdlahqr: QR iteration did not converge (info %d)", info);
cleanup:
  free(tau);
  free(work);
  return st;
}

/* Inverse iteration for the right (trans 'N') and left ('T') eigenvectors of a real simple
 * lambda_1. A is the local array of V - sigma I (destroyed by the factorisation). */
static as_status eigenvectors(MPI_Comm comm, const dist *ds, double *A, double *phi, double *l) {
  as_status st = AS_OK;
  int *ipiv = NULL;
  double *b = NULL;
  int d = ds->d, info = 0;
  ipiv = malloc((size_t)(ds->locr + ds->nb) * sizeof(int));
  AS_CHECK_ALLOC(ipiv);
  b = calloc((size_t)ds->lld, sizeof(double));
  AS_CHECK_ALLOC(b);
  pdgetrf_(&d, &d, A, &I1, &I1, ds->desc, ipiv, &info);
  AS_LAPACK_CHECK("pdgetrf", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "pdgetrf: V - sigma I exactly singular (info %d)", info);
  for (int side = 0; side < 2; side++) {
    double *x = side == 0 ? phi : l;
    /* A deterministic start with no special structure (not orthogonal to phi in practice). */
    for (int i = 0; i < d; i++) x[i] = 1.0 + 0.5 * sin(1.0 + i);
    for (int it = 0; it < 3; it++) {
      double n = 0;
      for (int i = 0; i < d; i++) n += x[i] * x[i];
      n = 1.0 / sqrt(n);
      for (int i = 0; i < d; i++) x[i] *= n;
      vec_scatter(ds, x, b);
      pdgetrs_(side == 0 ? "N" : "T", &d, &I1, A, &I1, &I1, ds->desc, ipiv, b, &I1, &I1, ds->descv,
               &info, 1);
      AS_LAPACK_CHECK("pdgetrs", info);
      AS_TRY(vec_gather(comm, ds, b, x));
    }
  }
cleanup:
  free(ipiv);
  free(b);
  return st;
}

/* Smallest eigenvalue of (M + M^T)/2. */
static as_status min_sym_eig(const dist *ds, const double *M, double *A, double *w, double *out) {
  as_status st = AS_OK;
  double *work = NULL, *Z = NULL;
  int d = ds->d, info = 0, lwork = -1;
  for (int lj = 0; lj < ds->locc; lj++) {
    int j = g_of(lj, ds->nb, ds->mycol, ds->q);
    for (int li = 0; li < ds->locr; li++) {
      int i = g_of(li, ds->nb, ds->myrow, ds->p);
      A[(size_t)lj * ds->lld + li] = 0.5 * (M[(size_t)i * d + j] + M[(size_t)j * d + i]);
    }
  }
  Z = malloc(sizeof(double));
  AS_CHECK_ALLOC(Z);
  double q[64] = {0};
  pdsyev_("N", "U", &d, A, &I1, &I1, ds->desc, w, Z, &I1, &I1, ds->desc, q, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("pdsyev (query)", info);
  lwork = (int)q[0] + 1;
  work = malloc((size_t)lwork * sizeof(double));
  AS_CHECK_ALLOC(work);
  pdsyev_("N", "U", &d, A, &I1, &I1, ds->desc, w, Z, &I1, &I1, ds->desc, work, &lwork, &info, 1, 1);
  AS_LAPACK_CHECK("pdsyev", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "pdsyev: failed to converge (info %d)", info);
  *out = w[0];
cleanup:
  free(work);
  free(Z);
  return st;
}

/* Distributed sign iteration: S (local, = V - cI on entry) -> P = (I + sign)/2 in S.
 * *ok = 0 when it fails (singular or no convergence), like the LAPACK path. */
static as_status sign_projector(MPI_Comm comm, const dist *ds, double *S, double *W, int *ok) {
  as_status st = AS_OK;
  int *ipiv = NULL, *iwork = NULL;
  double *work = NULL;
  int d = ds->d, info = 0, lwork = -1, liwork = -1;
  size_t nloc = (size_t)ds->lld * (ds->locc > 0 ? ds->locc : 1);
  *ok = 0;
  ipiv = malloc((size_t)(ds->locr + ds->nb) * sizeof(int));
  AS_CHECK_ALLOC(ipiv);
  double q[64] = {0};
  int iqa[64] = {0};
  pdgetri_(&d, W, &I1, &I1, ds->desc, ipiv, q, &lwork, iqa, &liwork, &info);
  AS_LAPACK_CHECK("pdgetri (query)", info);
  lwork = (int)q[0] + 1;
  liwork = iqa[0] + 1;
  work = malloc((size_t)lwork * sizeof(double));
  AS_CHECK_ALLOC(work);
  iwork = malloc((size_t)liwork * sizeof(int));
  AS_CHECK_ALLOC(iwork);
  int scaling = 1;
  for (int it = 0; it < AS_SIGN_MAX_ITERS; it++) {
    memcpy(W, S, nloc * sizeof(double));
    pdgetrf_(&d, &d, W, &I1, &I1, ds->desc, ipiv, &info);
    AS_LAPACK_CHECK("pdgetrf", info);
    double sums[3] = {0, (double)info, 0};
    if (scaling) {
      /* log |det| = sum of log |u_ii| over the diagonal entries this rank holds */
      for (int lj = 0; lj < ds->locc; lj++) {
        int j = g_of(lj, ds->nb, ds->mycol, ds->q);
        for (int li = 0; li < ds->locr; li++)
          if (g_of(li, ds->nb, ds->myrow, ds->p) == j)
            sums[0] += log(fabs(W[(size_t)lj * ds->lld + li]));
      }
    }
    AS_TRY(sum_all(comm, sums, 2));
    if (sums[1] != 0) goto cleanup; /* singular somewhere: the split failed */
    double mu = scaling ? exp(-sums[0] / d) : 1.0;
    pdgetri_(&d, W, &I1, &I1, ds->desc, ipiv, work, &lwork, iwork, &liwork, &info);
    AS_LAPACK_CHECK("pdgetri", info);
    double dn[2] = {0, 0};
    for (int lj = 0; lj < ds->locc; lj++)
      for (int li = 0; li < ds->locr; li++) {
        size_t k = (size_t)lj * ds->lld + li;
        double s = 0.5 * (mu * S[k] + W[k] / mu);
        dn[0] += (s - S[k]) * (s - S[k]);
        dn[1] += s * s;
        S[k] = s;
      }
    AS_TRY(sum_all(comm, dn, 2));
    if (!isfinite(dn[1])) goto cleanup;
    if (dn[0] <= AS_SIGN_UNSCALE * AS_SIGN_UNSCALE * dn[1]) scaling = 0;
    if (dn[0] <= AS_SIGN_RTOL * AS_SIGN_RTOL * dn[1]) {
      for (int lj = 0; lj < ds->locc; lj++) {
        int j = g_of(lj, ds->nb, ds->mycol, ds->q);
        for (int li = 0; li < ds->locr; li++) {
          size_t k = (size_t)lj * ds->lld + li;
          S[k] = 0.5 * S[k] + (g_of(li, ds->nb, ds->myrow, ds->p) == j ? 0.5 : 0.0);
        }
      }
      *ok = 1;
      break;
    }
  }
cleanup:
  free(ipiv);
  free(iwork);
  free(work);
  return st;
}

/* ||V P - lam P||_F / (|lam| ||P||_F) with V in Vl and P in Pl (local), R scratch. */
static as_status residual(MPI_Comm comm, const dist *ds, const double *Vl, const double *Pl,
                          double lam, double *R, double *out) {
  as_status st = AS_OK;
  int d = ds->d;
  size_t nloc = (size_t)ds->lld * (ds->locc > 0 ? ds->locc : 1);
  memcpy(R, Pl, nloc * sizeof(double));
  const double one = 1.0, mlam = -lam;
  pdgemm_("N", "N", &d, &d, &d, &one, Vl, &I1, &I1, ds->desc, Pl, &I1, &I1, ds->desc, &mlam, R, &I1,
          &I1, ds->desc, 1, 1);
  double s[2] = {0, 0};
  for (int lj = 0; lj < ds->locc; lj++)
    for (int li = 0; li < ds->locr; li++) {
      size_t k = (size_t)lj * ds->lld + li;
      s[0] += R[k] * R[k];
      s[1] += Pl[k] * Pl[k];
    }
  AS_TRY(sum_all(comm, s, 2));
  *out = sqrt(s[0]) / (fabs(lam) * sqrt(s[1]));
cleanup:
  return st;
}

as_status as_pspectral_analyze(as_pspectral *ps, const as_triple *tr, double tol, as_spectral *sp) {
  as_status st = AS_OK;
  double *Vf = NULL, *Mf = NULL, *A = NULL, *B = NULL, *C = NULL, *w = NULL;
  AS_CHECK(ps != NULL && tr != NULL && sp != NULL, AS_ERR_ARG, "pspectral: NULL argument");
  AS_CHECK(tr->d == sp->d, AS_ERR_ARG, "pspectral: triple d = %d, analysis d = %d", tr->d, sp->d);
  AS_CHECK(tol > 0 && tol < 1, AS_ERR_ARG, "pspectral: tolerance %g not in (0, 1)", tol);
  double t0 = now();
  memset(&ps->times, 0, sizeof ps->times);
  MPI_Comm comm = ps->comm;
  int d = tr->d;
  size_t dd = (size_t)d * d;
  dist ds = {0};
  ds.d = d;
  ds.nb = AS_PSPECTRAL_NB < d ? AS_PSPECTRAL_NB : (d >= 6 ? d : 6);
  ds.p = ps->nprow;
  ds.q = ps->npcol;
  ds.myrow = ps->myrow;
  ds.mycol = ps->mycol;
  ds.locr = numroc_(&d, &ds.nb, &ds.myrow, &I0, &ds.p);
  ds.locc = numroc_(&d, &ds.nb, &ds.mycol, &I0, &ds.q);
  ds.lld = ds.locr > 1 ? ds.locr : 1;
  int info = 0;
  descinit_(ds.desc, &d, &d, &ds.nb, &ds.nb, &I0, &I0, &ps->ctxt, &ds.lld, &info);
  AS_LAPACK_CHECK("descinit", info);
  descinit_(ds.descv, &d, &I1, &ds.nb, &ds.nb, &I0, &I0, &ps->ctxt, &ds.lld, &info);
  AS_LAPACK_CHECK("descinit (vector)", info);

  /* V and M from rank 0 to everybody (all ranks need them whole for the shared steps). */
  Vf = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(Vf);
  Mf = malloc(dd * sizeof(double));
  AS_CHECK_ALLOC(Mf);
  if (ps->rank == 0) {
    memcpy(Vf, tr->V, dd * sizeof(double));
    memcpy(Mf, tr->M, dd * sizeof(double));
  }
  AS_MPI_CHECK(MPI_Bcast(Vf, (int)dd, MPI_DOUBLE, 0, comm));
  AS_MPI_CHECK(MPI_Bcast(Mf, (int)dd, MPI_DOUBLE, 0, comm));
  for (size_t k = 0; k < dd; k++) {
    AS_CHECK(isfinite(Vf[k]), AS_ERR_DATA, "spectral: V(%zu, %zu) is not finite", k / d, k % d);
    AS_CHECK(isfinite(Mf[k]), AS_ERR_DATA, "spectral: M(%zu, %zu) is not finite", k / d, k % d);
  }
  as_triple view = {d, d, Vf, NULL, NULL, Mf};

  size_t nloc = (size_t)ds.lld * (ds.locc > 0 ? ds.locc : 1);
  A = calloc(nloc, sizeof(double));
  AS_CHECK_ALLOC(A);
  B = calloc(nloc, sizeof(double));
  AS_CHECK_ALLOC(B);
  C = calloc(nloc, sizeof(double));
  AS_CHECK_ALLOC(C);
  w = malloc((size_t)d * sizeof(double));
  AS_CHECK_ALLOC(w);

  double t = now();
  scatter(&ds, Vf, 0.0, A);
  AS_TRY(eigenvalues(&ds, A, sp->wr, sp->wi));
  as_spectral_sort_eigs(d, sp->wr, sp->wi);
  as_spectral_from_eigs(&view, tol, sp);
  sp->flags |= AS_FLAG_DISTRIBUTED;
  ps->times.eig = now() - t;

  t = now();
  if ((sp->flags & AS_FLAG_LEAD_REAL) && (sp->flags & AS_FLAG_LEAD_SIMPLE)) {
    double scale = fabs(sp->lambda1_re) > 0 ? fabs(sp->lambda1_re) : 1.0;
    scatter(&ds, Vf, -(sp->lambda1_re + 1e-12 * scale), A);
    AS_TRY(eigenvectors(comm, &ds, A, sp->phi1, sp->l1));
  }
  as_spectral_set_vectors(&view, tol, sp);
  sp->eig_cond = NAN;
  ps->times.vec = now() - t;

  t = now();
  AS_TRY(min_sym_eig(&ds, Mf, A, w, &sp->m_min_sym_eig));
  ps->times.sym = now() - t;

  t = now();
  memset(sp->proj_f, 0, dd * sizeof(double));
  sp->dim_f = 0;
  scatter(&ds, Vf, 0.0, C); /* V, kept for the residual */
  for (int pass = 1; pass >= 0; pass--) {
    double c;
    int dim, plan = as_spectral_projector_plan(sp, tol, pass, &c, &dim), ok = 1;
    if (plan == 0) continue;
    if (plan == 3) {
      memset(B, 0, nloc * sizeof(double));
      for (int lj = 0; lj < ds.locc; lj++) {
        int j = g_of(lj, ds.nb, ds.mycol, ds.q);
        for (int li = 0; li < ds.locr; li++)
          if (g_of(li, ds.nb, ds.myrow, ds.p) == j) B[(size_t)lj * ds.lld + li] = 1.0;
      }
    } else {
      scatter(&ds, Vf, -c, B);
      AS_TRY(sign_projector(comm, &ds, B, A, &ok));
    }
    if (ok && pass == 1) {
      double r = 0;
      AS_TRY(residual(comm, &ds, C, B, sp->lambda1_re, A, &r));
      ok = r <= AS_SPECTRAL_SEMISIMPLE_TOL;
    }
    if (ok) {
      AS_TRY(gather_full(comm, &ds, B, sp->proj_f));
      double trp = 0;
      for (int i = 0; i < d; i++) trp += sp->proj_f[(size_t)i * d + i];
      ok = fabs(trp - dim) < 0.5;
    }
    if (ok) {
      sp->dim_f = dim;
      if (pass == 1) sp->flags |= AS_FLAG_PARANORMAL;
      break;
    }
    memset(sp->proj_f, 0, dd * sizeof(double));
  }
  ps->times.proj = now() - t;
  as_spectral_decide(&view, tol, sp);
  ps->times.total = now() - t0;
cleanup:
  free(Vf);
  free(Mf);
  free(A);
  free(B);
  free(C);
  free(w);
  return st;
}

as_status as_pspectral_hook(const as_triple *tr, double tol, as_spectral *sp, void *ctx) {
  as_pspectral *ps = ctx;
  if (ps != NULL && tr != NULL && tr->d >= ps->threshold)
    return as_pspectral_analyze(ps, tr, tol, sp);
  return as_spectral_analyze(tr, tol, sp);
}
