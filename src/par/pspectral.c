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
void pdhseqr_(const char *job, const char *compz, const int *n, const int *ilo, const int *ihi,
              double *h, const int *desch, double *wr, double *wi, double *z, const int *descz,
              double *work, const int *lwork, int *iwork, const int *liwork, int *info, as_fl,
              as_fl);
void pdlacpy_(const char *uplo, const int *m, const int *n, const double *a, const int *ia,
              const int *ja, const int *desca, double *b, const int *ib, const int *jb,
              const int *descb, as_fl);
void dlanv2_(double *a, double *b, double *c, double *d, double *rt1r, double *rt1i, double *rt2r,
             double *rt2i, double *cs, double *sn);
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
  ps->threshold = threshold > 0 ? threshold : AS_SPECTRAL_THRESHOLD_DEFAULT;
  int pr = 1;
  for (int p = 1; p * p <= ps->size; p++)
    if (ps->size % p == 0) pr = p;
  ps->sys = Csys2blacs_handle(ps->comm);
  ps->ctxt = ps->sys;
  /* nprow <= npcol, as square as possible (2 ranks: 1 x 2): at d = 2048 on 2 ranks the whole
   * analysis took 10-20% less time on 1 x 2 than on 2 x 1 (pdhseqr, and the LU of the sign
   * iteration, whose pivot search then stays within one process column). */
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

/* Eigenvalues of the quasi-triangular Schur form T (distributed in A) into wr, wi (replicated):
 * 1 x 1 blocks and 2 x 2 blocks (dlanv2) read from the diagonal, sub- and superdiagonal.
 * *ok = 0 (wr, wi unusable) if T has a larger unreduced block.
 * pdhseqr's own read-out is not used: in ScaLAPACK 2.2.1, when N is a multiple of the block
 * size and T(N, N) is a real 1 x 1 block, it returns that eigenvalue as exactly 0 (T(N, N) lies
 * on a block border, which its in-block loop skips and its border loop, stopping at N - 1,
 * never visits): wrong spectra at d = 768, 1024, 1152, 1280, 1536 with NB = 64. */
static as_status schur_eigenvalues(MPI_Comm comm, const dist *ds, const double *A, double *tri,
                                   double *wr, double *wi, int *ok) {
  as_status st = AS_OK;
  int d = ds->d;
  double *dg = tri, *sub = tri + d, *sup = tri + 2 * d; /* T(k,k), T(k+1,k), T(k,k+1) */
  memset(tri, 0, 3 * (size_t)d * sizeof(double));
  for (int lj = 0; lj < ds->locc; lj++) {
    int j = g_of(lj, ds->nb, ds->mycol, ds->q);
    for (int li = 0; li < ds->locr; li++) {
      int i = g_of(li, ds->nb, ds->myrow, ds->p);
      double v = A[(size_t)lj * ds->lld + li];
      if (i == j)
        dg[i] = v;
      else if (i == j + 1)
        sub[j] = v;
      else if (j == i + 1)
        sup[i] = v;
    }
  }
  AS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, tri, 3 * d, MPI_DOUBLE, MPI_SUM, comm));
  *ok = 1;
  for (int k = 0; k < d; k++) {
    if (k + 1 < d && sub[k] != 0.0) {
      if (k + 2 < d && sub[k + 1] != 0.0) {
        *ok = 0; /* same replicated data on every rank: same decision */
        break;
      }
      double a = dg[k], b = sup[k], c = sub[k], e = dg[k + 1], cs, sn;
      dlanv2_(&a, &b, &c, &e, &wr[k], &wi[k], &wr[k + 1], &wi[k + 1], &cs, &sn);
      k++;
    } else {
      wr[k] = dg[k];
      wi[k] = 0.0;
    }
  }
cleanup:
  return st;
}

/* Eigenvalues of V (distributed in A, destroyed) into wr, wi (replicated). H (local, same shape)
 * keeps a copy of the Hessenberg form for the fallback; tri: 3d scratch. */
static as_status eigenvalues(MPI_Comm comm, const dist *ds, double *A, double *H, double *tri,
                             double *wr, double *wi) {
  as_status st = AS_OK;
  double *tau = NULL, *work = NULL;
  int *iwork = NULL, *iq = NULL;
  int d = ds->d, info = 0, lwork = -1, liwork = -1;
  double q[64] = {0};
  /* The integer workspace of the pdhseqr query must already be a real one: in the query
   * (LIWORK = -1) ScaLAPACK 2.2.1 still passes it down to PDTRORD, whose IGAMX2D reads a
   * SELECT vector from it (AddressSanitizer: 388 bytes read from a 64-int stack array at
   * d = 600 on 2 ranks). Sized as below, without the query's own figure. */
  const int li_base = 2 * d + ds->nb * ds->nb + 5 * ds->p * ds->q + 64;
  iq = calloc((size_t)li_base, sizeof(int));
  AS_CHECK_ALLOC(iq);
  tau = malloc((size_t)(ds->locc + 1) * sizeof(double));
  AS_CHECK_ALLOC(tau);
  pdgehrd_(&d, &I1, &d, A, &I1, &I1, ds->desc, tau, q, &lwork, &info);
  AS_LAPACK_CHECK("pdgehrd (query)", info);
  int lw_hrd = (int)q[0] + 1;
  /* pdhseqr: the query (LWORK = LIWORK = -1) under-counts in ScaLAPACK 2.2.1. It sizes the
   * aggressive-early-deflation window at its nominal NWR + 1, but exceptional windows grow to
   * (N - 1)/3, and the nested PDLAQR1 (LWORK >= 3N + 385 + 3 LLD + 2 LOCc + 7 ceil(N/NB))
   * and PDTRORD (LIWORK >= 5 min(P,Q) + NB^2, after a SELECT vector of N) then report illegal
   * workspace and write past it (d = 300, 1 rank: "PDLAQR1 parameter 15", "PDTRORD parameter
   * 19", heap corruption). Added on top of the query: room for three local arrays the size of
   * the whole matrix (the window's V, T, W), PDLAQR1's and PDTRORD's full-size needs. */
  double *zq = H; /* COMPZ = 'N': Z is not referenced, but its descriptor must match H's */
  pdhseqr_("S", "N", &d, &I1, &d, A, ds->desc, wr, wi, zq, ds->desc, q, &lwork, iq, &liwork, &info,
           1, 1);
  AS_LAPACK_CHECK("pdhseqr (query)", info);
  int nbk = (d + ds->nb - 1) / ds->nb;
  size_t lr = (size_t)ds->locr + ds->nb, lc = (size_t)ds->locc + ds->nb;
  size_t lw_hs = (size_t)q[0] + 3 * lr * lc + 3 * (size_t)d + 385 + 3 * (size_t)ds->lld +
                 2 * (size_t)ds->locc + 7 * (size_t)nbk + (size_t)d + 7 * (size_t)ds->nb * ds->nb +
                 4 * (lr + lc) * ds->nb;
  /* pdlahqr (fallback): LWORK >= 3N + max(2 max(LLD) + 2 LOCc(N), 7 ceil(N/NB) / lcm(P, Q)) */
  size_t lw_hqr = 3 * (size_t)d + 2 * (size_t)ds->lld + 2 * (size_t)ds->locc + 7 * (size_t)nbk + 64;
  size_t lw = (size_t)lw_hrd;
  if (lw_hs > lw) lw = lw_hs;
  if (lw_hqr > lw) lw = lw_hqr;
  AS_CHECK(lw < (size_t)1 << 31, AS_ERR_ARG, "pspectral: workspace of %zu doubles for d = %d", lw,
           d);
  lwork = (int)lw;
  liwork = iq[0] + li_base;
  work = malloc(lw * sizeof(double));
  AS_CHECK_ALLOC(work);
  iwork = malloc((size_t)liwork * sizeof(int));
  AS_CHECK_ALLOC(iwork);
  pdgehrd_(&d, &I1, &d, A, &I1, &I1, ds->desc, tau, work, &lwork, &info);
  AS_LAPACK_CHECK("pdgehrd", info);
  if (d > 2) {
    /* Householder vectors below the subdiagonal: the QR sweeps need exact Hessenberg form. */
    int n2 = d - 2, i3 = 3;
    const double zero = 0.0;
    pdlaset_("L", &n2, &n2, &zero, &zero, A, &i3, &I1, ds->desc, 1);
  }
  pdlacpy_("A", &d, &d, A, &I1, &I1, ds->desc, H, &I1, &I1, ds->desc, 1);
  /* JOB = 'S' (Schur form T) although only eigenvalues are needed: with JOB = 'E' the
   * contents of H are unspecified on exit, yet pdhseqr 2.2.1 still reads its eigenvalues from
   * H (errors of order 1 at d = 300). T costs a little more and is read by schur_eigenvalues. */
  pdhseqr_("S", "N", &d, &I1, &d, A, ds->desc, wr, wi, zq, ds->desc, work, &lwork, iwork, &liwork,
           &info, 1, 1);
  if (info < 0 && info != -7777 && info != -8888) AS_LAPACK_CHECK("pdhseqr", info);
  int ok = 0;
  if (info == 0) AS_TRY(schur_eigenvalues(comm, ds, A, tri, wr, wi, &ok));
  if (!ok) {
    /* QR failed to converge (info > 0), one of its internal fall-backs ran (-7777, -8888), or
     * T is not in Schur form: redo it with the slower pdlahqr (WANTT = .TRUE.: with .FALSE.
     * 2.2.1 returned wrong eigenvalues on 2 ranks once d spans more than two blocks) on the
     * saved H. */
    pdlacpy_("A", &d, &d, H, &I1, &I1, ds->desc, A, &I1, &I1, ds->desc, 1);
    int wantt = 1, wantz = 0, ilw = liwork;
    pdlahqr_(&wantt, &wantz, &d, &I1, &d, A, ds->desc, wr, wi, &I1, &d, H, ds->desc, work, &lwork,
             iwork, &ilw, &info);
    AS_LAPACK_CHECK("pdlahqr", info);
    AS_CHECK(info == 0, AS_ERR_LAPACK,
             "pdhseqr and pdlahqr: QR iteration did not converge (info %d)", info);
    /* pdlahqr's own wr, wi: its T may keep unreduced 2 x 2 blocks (not in standard form) */
  }
cleanup:
  free(iq);
  free(tau);
  free(work);
  free(iwork);
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
static as_status sign_projector(MPI_Comm comm, const dist *ds, double *S, double *W, int *ok,
                                int *iters) {
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
    (*iters)++;
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
  double *Vf = NULL, *Mf = NULL, *A = NULL, *B = NULL, *C = NULL, *w = NULL, *tri = NULL;
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
  tri = malloc(3 * (size_t)d * sizeof(double));
  AS_CHECK_ALLOC(tri);

  double t = now();
  scatter(&ds, Vf, 0.0, A);
  AS_TRY(eigenvalues(comm, &ds, A, B, tri, sp->wr, sp->wi));
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
      AS_TRY(sign_projector(comm, &ds, B, A, &ok, &ps->times.sign_iters));
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
  free(tri);
  return st;
}

as_status as_pspectral_hook(const as_triple *tr, double tol, as_spectral *sp, void *ctx) {
  as_pspectral *ps = ctx;
  if (ps != NULL && tr != NULL && tr->d >= ps->threshold)
    return as_pspectral_analyze(ps, tr, tol, sp);
  return as_spectral_analyze(tr, tol, sp);
}
