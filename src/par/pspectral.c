/* pspectral.c: the ScaLAPACK path of the spectral analysis (see pspectral.h).
 *
 * Global matrices are the triple's row-major V and M read as mathematical matrices: entry
 * (i, j) of the distributed array is V[i*d + j]. Local storage is column-major with leading
 * dimension lld (ScaLAPACK's convention). Index maps for square blocks nb, source 0:
 *   global g -> owner (g / nb) mod P, local ((g / nb) / P) nb + g mod nb.
 * Replicated results (vectors, the projector) are assembled by an MPI_Allreduce of a zero
 * buffer into which each rank wrote its own entries (disjoint sums: exact in any order).
 * Sums of local partial values (norms, log |det|) go through grid_sum: gathered and added in
 * rank order, so every rank of the grid holds the same bits and takes the same decisions.
 *
 * No rank may leave a phase early while the others enter a ScaLAPACK call, or the grid hangs:
 * every allocation is agreed over the grid before the calls that follow it (alloc_agree), and
 * every phase ends with grid_agree (the most negative status and the stop flag, over the
 * grid). Decisions inside a phase depend on replicated data or on ScaLAPACK's global INFO.
 */
#include "attnsweep/pspectral.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/iocheck.h"

typedef size_t as_fl; /* hidden Fortran character length */

/* BLACS (C interface) and ScaLAPACK (Fortran interface) as shipped in libscalapack-openmpi. */
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
void Cblacs_set(int ctxt, int what, int *val);
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

/* BLACS_SET selectors (BLACS/SRC/Bdef.h): combines by the BLACS' own tree, never MPI's
 * reductions (repeatable), with the same result on every process (coherent). */
#define AS_BLACS_TOPSREPEAT 15
#define AS_BLACS_TOPSCOHRNT 16

struct as_pspectral {
  MPI_Comm comm;  /* duplicate of the creator's communicator */
  MPI_Comm gcomm; /* this rank's grid (MPI_COMM_NULL: in no grid) */
  int rank, size;
  int nprow, npcol; /* grid shape */
  int ngrids;       /* grids in comm: floor(size / (nprow npcol)) */
  int grid;         /* this rank's grid, -1 if none */
  int sys;          /* BLACS system handle of gcomm (-1: none) */
  int ctxt;         /* BLACS grid context (-1: none) */
  int myrow, mycol;
  int threshold;
  as_pspectral_times times;
};

static const int I0 = 0, I1 = 1;

int as_pspectral_grid_ok(int nprow, int npcol, char *why, size_t len) {
  const char *r = NULL;
  if (nprow < 1 || npcol < 1)
    r = "both grid dimensions must be >= 1";
  else if ((double)nprow * npcol > AS_PSPECTRAL_GRID_MAX)
    r = "more processes than one grid may have";
  else if ((nprow == 1 || npcol == 1) && nprow * npcol > 2)
    r = "ScaLAPACK's pdhseqr deadlocks on one-dimensional grids of more than 2 processes; use "
        "1x1, 1x2, 2x1 or P x Q with P, Q >= 2";
  if (r && why && len) snprintf(why, len, "%s", r);
  return r == NULL;
}

/* The same status on every rank of comm: the most negative wins, and a rank that did not fail
 * records which status the others reported. */
static as_status agree_on(MPI_Comm comm, as_status st, const char *who) {
  int mine = (int)st, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    return as_error_set(AS_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Allreduce failed");
  if (all != AS_OK && st == AS_OK)
    as_error_set((as_status)all, __FILE__, __LINE__, __func__, "another rank of the %s failed: %s",
                 who, as_status_message((as_status)all));
  return (as_status)all;
}

as_status as_pspectral_create(MPI_Comm comm, int threshold, int nprow, int npcol,
                              as_pspectral **out) {
  as_status st = AS_OK;
  as_pspectral *ps = NULL;
  char why[200];
  AS_CHECK(out != NULL, AS_ERR_ARG, "pspectral: out is NULL");
  AS_CHECK(as_pspectral_grid_ok(nprow, npcol, why, sizeof why), AS_ERR_ARG,
           "spectral_grid %dx%d is not supported: %s", nprow, npcol, why);
  ps = calloc(1, sizeof *ps);
  AS_CHECK_ALLOC(ps);
  ps->comm = ps->gcomm = MPI_COMM_NULL;
  ps->sys = ps->ctxt = -1;
  ps->grid = -1;
  ps->nprow = nprow;
  ps->npcol = npcol;
  ps->threshold = threshold > 0 ? threshold : AS_SPECTRAL_THRESHOLD_DEFAULT;
  AS_MPI_CHECK(MPI_Comm_dup(comm, &ps->comm));
  AS_MPI_CHECK(MPI_Comm_rank(ps->comm, &ps->rank));
  AS_MPI_CHECK(MPI_Comm_size(ps->comm, &ps->size));
  int pq = nprow * npcol;
  AS_CHECK(ps->size >= pq, AS_ERR_ARG,
           "spectral_grid %dx%d needs at least %d MPI ranks for the spectral analysis of large "
           "triples; this job has %d (run it with mpiexec -n %d or more)",
           nprow, npcol, pq, ps->size, pq);
  ps->ngrids = ps->size / pq;
  if (ps->rank < ps->ngrids * pq) ps->grid = ps->rank / pq;
  AS_MPI_CHECK(
      MPI_Comm_split(ps->comm, ps->grid >= 0 ? ps->grid : MPI_UNDEFINED, ps->rank, &ps->gcomm));
  as_status gst = AS_OK;
  if (ps->grid >= 0) {
    /* Only the ranks of this grid take part: gridinit is collective over gcomm alone. */
    ps->sys = Csys2blacs_handle(ps->gcomm);
    ps->ctxt = ps->sys;
    Cblacs_gridinit(&ps->ctxt, "Row", nprow, npcol);
    int p = -1, q = -1, one = 1;
    Cblacs_gridinfo(ps->ctxt, &p, &q, &ps->myrow, &ps->mycol);
    if (p != nprow || q != npcol) {
      gst =
          as_error_set(AS_ERR_LAPACK, __FILE__, __LINE__, __func__,
                       "BLACS grid %d x %d could not be created (got %d x %d)", nprow, npcol, p, q);
      ps->ctxt = -1;
    } else {
      Cblacs_set(ps->ctxt, AS_BLACS_TOPSREPEAT, &one);
      Cblacs_set(ps->ctxt, AS_BLACS_TOPSCOHRNT, &one);
    }
  }
  AS_TRY(agree_on(ps->comm, gst, "job"));
  *out = ps;
  ps = NULL;
cleanup:
  if (ps != NULL) as_pspectral_destroy(&ps);
  return st;
}

void as_pspectral_destroy(as_pspectral **p) {
  if (p == NULL || *p == NULL) return;
  as_pspectral *ps = *p;
  if (ps->ctxt >= 0) Cblacs_gridexit(ps->ctxt);
  if (ps->sys >= 0) Cfree_blacs_system_handle(ps->sys);
  if (ps->gcomm != MPI_COMM_NULL) MPI_Comm_free(&ps->gcomm);
  if (ps->comm != MPI_COMM_NULL) MPI_Comm_free(&ps->comm);
  free(ps);
  *p = NULL;
}

int as_pspectral_threshold(const as_pspectral *ps) {
  return ps->threshold;
}

int as_pspectral_grids(const as_pspectral *ps) {
  return ps->ngrids;
}

as_pspectral_times as_pspectral_last_times(const as_pspectral *ps) {
  return ps->times;
}

/* ---------------------------------------------------------------- distribution helpers */

typedef struct dist {
  MPI_Comm comm; /* the grid's communicator */
  int np;        /* its size, P Q */
  const volatile sig_atomic_t *stop;
  double *red; /* np * 4 doubles for grid_sum */
  int d, nb, locr, locc, lld;
  int desc[9];  /* d x d */
  int descv[9]; /* d x 1 vector */
  int p, q, myrow, mycol;
} dist;

static int g_of(int l, int nb, int me, int np) {
  return ((l / nb) * np + me) * nb + l % nb;
}

static int stop_seen(const dist *ds) {
  return ds->stop != NULL && *ds->stop != 0;
}

/* A phase's end: status agreed over the grid (see agree_on), and a stop seen by any rank of
 * the grid stops all of them. */
static as_status grid_agree(const dist *ds, as_status st) {
  int mine[2] = {(int)st, -stop_seen(ds)}, all[2] = {0, 0};
  if (MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, ds->comm) != MPI_SUCCESS)
    return as_error_set(AS_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Allreduce failed");
  if (all[0] != AS_OK) {
    if (st == AS_OK)
      as_error_set((as_status)all[0], __FILE__, __LINE__, __func__,
                   "another rank of the grid failed: %s", as_status_message((as_status)all[0]));
    return (as_status)all[0];
  }
  if (all[1] != 0)
    return as_error_set(AS_ERR_INTERRUPTED, __FILE__, __LINE__, __func__,
                        "stopped during the spectral analysis (signal)");
  return AS_OK;
}

/* Allocations of a phase: all ranks go on, or none does. */
static as_status alloc_agree(const dist *ds, int ok, const char *what) {
  as_status st = ok ? AS_OK
                    : as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                   "pspectral: allocation of %s failed", what);
  return grid_agree(ds, st);
}

/* v[0..n) <- the sum over the grid of every rank's v, added in rank order (n <= 4): the same
 * bits on every rank and in every run on this grid shape. */
static as_status grid_sum(const dist *ds, double *v, int n) {
  as_status st = AS_OK;
  AS_MPI_CHECK(MPI_Allgather(v, n, MPI_DOUBLE, ds->red, n, MPI_DOUBLE, ds->comm));
  for (int i = 0; i < n; i++) {
    double s = 0;
    for (int r = 0; r < ds->np; r++) s += ds->red[(size_t)r * n + i];
    v[i] = s;
  }
cleanup:
  return st;
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
static as_status gather_full(const dist *ds, const double *loc, double *full) {
  as_status st = AS_OK;
  memset(full, 0, (size_t)ds->d * ds->d * sizeof(double));
  for (int lj = 0; lj < ds->locc; lj++) {
    int j = g_of(lj, ds->nb, ds->mycol, ds->q);
    for (int li = 0; li < ds->locr; li++) {
      int i = g_of(li, ds->nb, ds->myrow, ds->p);
      full[(size_t)i * ds->d + j] = loc[(size_t)lj * ds->lld + li];
    }
  }
  AS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, full, ds->d * ds->d, MPI_DOUBLE, MPI_SUM, ds->comm));
cleanup:
  return st;
}

/* Vector (d x 1, held by process column 0) <-> replicated array. */
static void vec_scatter(const dist *ds, const double *x, double *loc) {
  if (ds->mycol != 0) return;
  for (int li = 0; li < ds->locr; li++) loc[li] = x[g_of(li, ds->nb, ds->myrow, ds->p)];
}

static as_status vec_gather(const dist *ds, const double *loc, double *x) {
  as_status st = AS_OK;
  memset(x, 0, (size_t)ds->d * sizeof(double));
  if (ds->mycol == 0)
    for (int li = 0; li < ds->locr; li++) x[g_of(li, ds->nb, ds->myrow, ds->p)] = loc[li];
  AS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x, ds->d, MPI_DOUBLE, MPI_SUM, ds->comm));
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
static as_status schur_eigenvalues(const dist *ds, const double *A, double *tri, double *wr,
                                   double *wi, int *ok) {
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
  AS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, tri, 3 * d, MPI_DOUBLE, MPI_SUM, ds->comm));
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
static as_status eigenvalues(const dist *ds, double *A, double *H, double *tri, double *wr,
                             double *wi) {
  as_status st = AS_OK;
  double *tau = NULL, *work = NULL;
  int *iwork = NULL, *iq = NULL;
  int d = ds->d, info = 0, lwork = -1, liwork = -1;
  double q[64] = {0}, tdummy[1] = {0};
  /* The integer workspace of the pdhseqr query must already be a real one: in the query
   * (LIWORK = -1) ScaLAPACK 2.2.1 still passes it down to PDTRORD, whose IGAMX2D reads a
   * SELECT vector from it (AddressSanitizer: 388 bytes read from a 64-int stack array at
   * d = 600 on 2 ranks). Sized as below, without the query's own figure. */
  const int li_base = 2 * d + ds->nb * ds->nb + 5 * ds->p * ds->q + 64;
  iq = calloc((size_t)li_base, sizeof(int));
  AS_TRY(alloc_agree(ds, iq != NULL, "the workspace query"));
  /* Workspace queries on every rank of the grid, before any allocation: they are collective
   * (ScaLAPACK makes INFO global), and each rank needs its own local sizes. */
  pdgehrd_(&d, &I1, &d, A, &I1, &I1, ds->desc, tdummy, q, &lwork, &info);
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
  /* The sizes are local: a workspace too large for LWORK is agreed like a failed allocation. */
  int fits = lw < (size_t)1 << 31;
  lwork = fits ? (int)lw : 0;
  liwork = iq[0] + li_base;
  tau = malloc((size_t)(ds->locc + 1) * sizeof(double));
  work = fits ? malloc(lw * sizeof(double)) : NULL;
  iwork = malloc((size_t)liwork * sizeof(int));
  AS_TRY(alloc_agree(ds, tau && work && iwork, "the eigenvalue workspace"));
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
  if (info == 0) AS_TRY(schur_eigenvalues(ds, A, tri, wr, wi, &ok));
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
static as_status eigenvectors(const dist *ds, double *A, double *phi, double *l) {
  as_status st = AS_OK;
  int *ipiv = NULL;
  double *b = NULL;
  int d = ds->d, info = 0;
  ipiv = malloc((size_t)(ds->locr + ds->nb) * sizeof(int));
  b = calloc((size_t)ds->lld, sizeof(double));
  AS_TRY(alloc_agree(ds, ipiv && b, "the inverse iteration"));
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
      AS_TRY(vec_gather(ds, b, x));
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
  double q[64] = {0}, zdummy = 0;
  pdsyev_("N", "U", &d, A, &I1, &I1, ds->desc, w, &zdummy, &I1, &I1, ds->desc, q, &lwork, &info, 1,
          1);
  AS_LAPACK_CHECK("pdsyev (query)", info);
  lwork = (int)q[0] + 1;
  Z = malloc(sizeof(double));
  work = malloc((size_t)lwork * sizeof(double));
  AS_TRY(alloc_agree(ds, Z && work, "the symmetric eigenvalue workspace"));
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
 * *ok = 0 when it fails (singular or no convergence), like the LAPACK path. A stop seen by any
 * rank of the grid ends it between Newton steps (AS_ERR_INTERRUPTED). */
static as_status sign_projector(const dist *ds, double *S, double *W, int *ok, int *iters) {
  as_status st = AS_OK;
  int *ipiv = NULL, *iwork = NULL;
  double *work = NULL;
  int d = ds->d, info = 0, lwork = -1, liwork = -1;
  size_t nloc = (size_t)ds->lld * (ds->locc > 0 ? ds->locc : 1);
  *ok = 0;
  double q[64] = {0};
  int iqa[64] = {0}, iqp[64] = {0};
  pdgetri_(&d, W, &I1, &I1, ds->desc, iqp, q, &lwork, iqa, &liwork, &info);
  AS_LAPACK_CHECK("pdgetri (query)", info);
  lwork = (int)q[0] + 1;
  liwork = iqa[0] + 1;
  ipiv = malloc((size_t)(ds->locr + ds->nb) * sizeof(int));
  work = malloc((size_t)lwork * sizeof(double));
  iwork = malloc((size_t)liwork * sizeof(int));
  AS_TRY(alloc_agree(ds, ipiv && work && iwork, "the sign iteration"));
  int scaling = 1;
  for (int it = 0; it < AS_SIGN_MAX_ITERS; it++) {
    (*iters)++;
    memcpy(W, S, nloc * sizeof(double));
    pdgetrf_(&d, &d, W, &I1, &I1, ds->desc, ipiv, &info);
    AS_LAPACK_CHECK("pdgetrf", info);
    /* log |det| (sum of log |u_ii| over the diagonal entries this rank holds), singular, stop */
    double sums[3] = {0, info != 0, stop_seen(ds)};
    if (scaling) {
      for (int lj = 0; lj < ds->locc; lj++) {
        int j = g_of(lj, ds->nb, ds->mycol, ds->q);
        for (int li = 0; li < ds->locr; li++)
          if (g_of(li, ds->nb, ds->myrow, ds->p) == j)
            sums[0] += log(fabs(W[(size_t)lj * ds->lld + li]));
      }
    }
    AS_TRY(grid_sum(ds, sums, 3));
    AS_CHECK(sums[2] == 0, AS_ERR_INTERRUPTED, "stopped during the sign iteration (signal)");
    if (sums[1] != 0) goto cleanup; /* singular: the split failed */
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
    AS_TRY(grid_sum(ds, dn, 2));
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
static as_status residual(const dist *ds, const double *Vl, const double *Pl, double lam, double *R,
                          double *out) {
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
  AS_TRY(grid_sum(ds, s, 2));
  *out = sqrt(s[0]) / (fabs(lam) * sqrt(s[1]));
cleanup:
  return st;
}

/* Square blocks of AS_PSPECTRAL_NB, and never one block for the whole matrix: pdgehrd
 * (ScaLAPACK 2.2.1) returns a wrong Hessenberg form when N <= NB and N >= 12 (no reflectors
 * stored, ||H||_F < ||V||_F: eigenvalues off by 50-90% of |lambda_1| for every family at
 * d = 12..64, the "dim F = 0 without a projector" failures of `spectral_threshold: 8`), while
 * d - 1 rows in the first block and one in the second reduce exactly. pdhseqr needs NB >= 6;
 * d <= 11 in one block of max(d, 6) reduces exactly. */
static int block_size(int d) {
  if (d > AS_PSPECTRAL_NB) return AS_PSPECTRAL_NB;
  if (d >= 12) return d - 1;
  return d >= 6 ? d : 6;
}

/* Collective on this rank's grid: the projector of as_spectral_projector_plan(pass) for the
 * analysis sp into P (d x d, every rank; zero when it fails) with the checks of the LAPACK path
 * in the same order: the trace is *dim, then for the paranormal pass the eigenspace residual.
 * Vf: V whole; C: V distributed (for the residual); A, B: distributed scratch. *ok = 1 (on
 * every rank) when P holds it. */
static as_status grid_projector(as_pspectral *ps, dist *ds, const double *Vf, const double *C,
                                double *A, double *B, double tol, int pass, const as_spectral *sp,
                                double *P, int *dim, int *ok) {
  as_status st = AS_OK;
  const int d = ds->d;
  const size_t nloc = (size_t)ds->lld * (ds->locc > 0 ? ds->locc : 1);
  double c;
  const int plan = as_spectral_projector_plan(sp, tol, pass, &c, dim);
  *ok = plan != 0;
  if (plan == 0) goto cleanup;
  if (plan == 3) {
    memset(B, 0, nloc * sizeof(double));
    for (int lj = 0; lj < ds->locc; lj++) {
      int j = g_of(lj, ds->nb, ds->mycol, ds->q);
      for (int li = 0; li < ds->locr; li++)
        if (g_of(li, ds->nb, ds->myrow, ds->p) == j) B[(size_t)lj * ds->lld + li] = 1.0;
    }
  } else {
    scatter(ds, Vf, -c, B);
    AS_TRY(grid_agree(ds, sign_projector(ds, B, A, ok, &ps->times.sign_iters)));
  }
  if (*ok) {
    AS_TRY(gather_full(ds, B, P));
    double trp = 0;
    for (int i = 0; i < d; i++) trp += P[(size_t)i * d + i];
    *ok = fabs(trp - *dim) < 0.5;
  }
  if (*ok && pass == 1) {
    double r = 0;
    AS_TRY(residual(ds, C, B, sp->lambda1_re, A, &r));
    *ok = r <= AS_SPECTRAL_SEMISIMPLE_TOL;
  }
cleanup:
  if (!*ok) memset(P, 0, (size_t)d * d * sizeof *P);
  return st;
}

/* Collective on this rank's grid: the analysis of one triple. tr: built on the grid's first rank
 * only (NULL elsewhere, or when its build failed with build_st); sp: created for the d the caller
 * expects. Returns the same status on every rank of the grid. */
static as_status grid_analyze(as_pspectral *ps, const as_triple *tr, as_status build_st, double tol,
                              as_spectral *sp, const volatile sig_atomic_t *stop) {
  as_status st = AS_OK;
  double *Vf = NULL, *Mf = NULL, *A = NULL, *B = NULL, *C = NULL, *w = NULL, *tri = NULL,
         *red = NULL;
  dist ds = {0};
  ds.comm = ps->gcomm;
  ds.np = ps->nprow * ps->npcol;
  ds.stop = stop;
  double t0 = now();
  memset(&ps->times, 0, sizeof ps->times);

  /* The first rank's build status and shape, for everybody. */
  int head[2] = {(int)build_st, tr != NULL ? tr->d : -1};
  AS_MPI_CHECK(MPI_Bcast(head, 2, MPI_INT, 0, ds.comm));
  if (head[0] != AS_OK) {
    st = (as_status)head[0];
    as_error_set(st, __FILE__, __LINE__, __func__, "the triple could not be built: %s",
                 as_status_message(st));
    goto cleanup;
  }
  AS_CHECK(head[1] == sp->d, AS_ERR_ARG, "pspectral: triple d = %d, analysis d = %d", head[1],
           sp->d);
  AS_CHECK(tol > 0 && tol < 1, AS_ERR_ARG, "pspectral: tolerance %g not in (0, 1)", tol);
  int d = sp->d;
  size_t dd = (size_t)d * d;
  ds.d = d;
  ds.nb = block_size(d);
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

  size_t nloc = (size_t)ds.lld * (ds.locc > 0 ? ds.locc : 1);
  Vf = malloc(dd * sizeof(double));
  Mf = malloc(dd * sizeof(double));
  A = calloc(nloc, sizeof(double));
  B = calloc(nloc, sizeof(double));
  C = calloc(nloc, sizeof(double));
  w = malloc((size_t)d * sizeof(double));
  tri = malloc(3 * (size_t)d * sizeof(double));
  red = malloc((size_t)ds.np * 4 * sizeof(double));
  ds.red = red;
  AS_TRY(alloc_agree(&ds, Vf && Mf && A && B && C && w && tri && red, "the analysis buffers"));

  /* V and M from the first rank to the grid (all ranks need them whole for the shared steps). */
  if (tr != NULL) {
    memcpy(Vf, tr->V, dd * sizeof(double));
    memcpy(Mf, tr->M, dd * sizeof(double));
  }
  AS_MPI_CHECK(MPI_Bcast(Vf, (int)dd, MPI_DOUBLE, 0, ds.comm));
  AS_MPI_CHECK(MPI_Bcast(Mf, (int)dd, MPI_DOUBLE, 0, ds.comm));
  for (size_t k = 0; k < dd; k++) {
    AS_CHECK(isfinite(Vf[k]), AS_ERR_DATA, "spectral: V(%zu, %zu) is not finite", k / d, k % d);
    AS_CHECK(isfinite(Mf[k]), AS_ERR_DATA, "spectral: M(%zu, %zu) is not finite", k / d, k % d);
  }
  as_triple view = {d, d, Vf, NULL, NULL, Mf};

  double t = now();
  scatter(&ds, Vf, 0.0, A);
  AS_TRY(grid_agree(&ds, eigenvalues(&ds, A, B, tri, sp->wr, sp->wi)));
  as_spectral_sort_eigs(d, sp->wr, sp->wi);
  as_spectral_from_eigs(&view, tol, sp);
  sp->flags |= AS_FLAG_DISTRIBUTED;
  ps->times.eig = now() - t;

  t = now();
  if ((sp->flags & AS_FLAG_LEAD_REAL) && (sp->flags & AS_FLAG_LEAD_SIMPLE)) {
    double scale = fabs(sp->lambda1_re) > 0 ? fabs(sp->lambda1_re) : 1.0;
    scatter(&ds, Vf, -(sp->lambda1_re + 1e-12 * scale), A);
    AS_TRY(grid_agree(&ds, eigenvectors(&ds, A, sp->phi1, sp->l1)));
  }
  as_spectral_set_vectors(&view, tol, sp);
  sp->eig_cond = NAN;
  ps->times.vec = now() - t;

  t = now();
  AS_TRY(grid_agree(&ds, min_sym_eig(&ds, Mf, A, w, &sp->m_min_sym_eig)));
  ps->times.sym = now() - t;

  t = now();
  memset(sp->proj_f, 0, dd * sizeof(double));
  sp->dim_f = 0;
  scatter(&ds, Vf, 0.0, C); /* V, kept for the residual */
  for (int pass = 1; pass >= 0; pass--) {
    int dim = 0, ok = 0;
    AS_TRY(grid_projector(ps, &ds, Vf, C, A, B, tol, pass, sp, sp->proj_f, &dim, &ok));
    if (ok) {
      sp->dim_f = dim;
      if (pass == 1) sp->flags |= AS_FLAG_PARANORMAL;
      break;
    }
  }
  AS_TRY(grid_agree(&ds, AS_OK));
  as_spectral_decide(&view, tol, sp);
  if (as_spectral_pos_from_f(sp)) { /* codim_k reads the Re > 0 subspace (spectral.h) */
    int dim = 0, ok = 0;
    AS_TRY(grid_projector(ps, &ds, Vf, C, A, B, tol, 0, sp, sp->proj_pos, &dim, &ok));
    if (ok) sp->dim_pos = dim;
  }
  AS_TRY(grid_agree(&ds, AS_OK));
  ps->times.proj = now() - t;
  ps->times.total = now() - t0;
cleanup:
  free(Vf);
  free(Mf);
  free(A);
  free(B);
  free(C);
  free(w);
  free(tri);
  free(red);
  return st;
}

/* ---------------------------------------------------------------- batches over the grids */

/* Waiting without burning a core (an Open MPI blocking wait polls one): a few quick tests,
 * then sleeps growing from 20 us to 1 ms. */
static as_status wait_sleeping(MPI_Request *req) {
  as_status st = AS_OK;
  long ns = 20000;
  for (int spins = 0;; spins++) {
    int flag = 0;
    AS_MPI_CHECK(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
    if (flag) break;
    if (spins < 16) continue;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    ns = ns * 2 > 1000000 ? 1000000 : ns * 2;
  }
cleanup:
  return st;
}

/* Result packet of one triple: header (status, integers, scalars, message), then wr, wi,
 * phi1, l1, proj_f, proj_pos. Integers and flags travel as doubles (exact below 2^53). */
enum { PK_INTS = 7, PK_REALS = 10, PK_MSG = (AS_RECORD_MSG + 7) / 8 };
#define PK_HEAD (PK_INTS + PK_REALS + PK_MSG)

static size_t packet_len(int d) {
  return PK_HEAD + 4 * (size_t)d + 2 * (size_t)d * d;
}

static void pack(const as_spectral *sp, as_status st, const char *msg, double *pk) {
  int d = sp->d;
  double *h = pk;
  h[0] = (double)st;
  h[1] = sp->kpos;
  h[2] = sp->dim_f;
  h[3] = (double)sp->flags;
  h[4] = (double)sp->theorem;
  h[5] = (double)sp->predicted;
  h[6] = sp->dim_pos;
  double *r = h + PK_INTS;
  r[0] = sp->lambda1_re;
  r[1] = sp->lambda1_im;
  r[2] = sp->lambda2_abs;
  r[3] = sp->gap;
  r[4] = sp->mu;
  r[5] = sp->margin;
  r[6] = sp->angle_l1_phi1;
  r[7] = sp->m_min_sym_eig;
  r[8] = sp->m_asym;
  r[9] = sp->eig_cond;
  char text[PK_MSG * 8];
  memset(text, 0, sizeof text);
  snprintf(text, AS_RECORD_MSG, "%s", msg);
  memcpy(h + PK_INTS + PK_REALS, text, sizeof text);
  double *a = pk + PK_HEAD;
  memcpy(a, sp->wr, (size_t)d * sizeof(double));
  memcpy(a + d, sp->wi, (size_t)d * sizeof(double));
  memcpy(a + 2 * (size_t)d, sp->phi1, (size_t)d * sizeof(double));
  memcpy(a + 3 * (size_t)d, sp->l1, (size_t)d * sizeof(double));
  memcpy(a + 4 * (size_t)d, sp->proj_f, (size_t)d * d * sizeof(double));
  memcpy(a + 4 * (size_t)d + (size_t)d * d, sp->proj_pos, (size_t)d * d * sizeof(double));
}

static void unpack(const double *pk, as_spectral *sp, as_status *st, char *msg) {
  int d = sp->d;
  const double *h = pk, *r = h + PK_INTS, *a = pk + PK_HEAD;
  *st = (as_status)(int)h[0];
  sp->kpos = (int)h[1];
  sp->dim_f = (int)h[2];
  sp->flags = (uint32_t)h[3];
  sp->theorem = (as_theorem)(int)h[4];
  sp->predicted = (as_geom)(int)h[5];
  sp->dim_pos = (int)h[6];
  sp->lambda1_re = r[0];
  sp->lambda1_im = r[1];
  sp->lambda2_abs = r[2];
  sp->gap = r[3];
  sp->mu = r[4];
  sp->margin = r[5];
  sp->angle_l1_phi1 = r[6];
  sp->m_min_sym_eig = r[7];
  sp->m_asym = r[8];
  sp->eig_cond = r[9];
  memcpy(msg, h + PK_INTS + PK_REALS, AS_RECORD_MSG);
  msg[AS_RECORD_MSG - 1] = '\0';
  memcpy(sp->wr, a, (size_t)d * sizeof(double));
  memcpy(sp->wi, a + d, (size_t)d * sizeof(double));
  memcpy(sp->phi1, a + 2 * (size_t)d, (size_t)d * sizeof(double));
  memcpy(sp->l1, a + 3 * (size_t)d, (size_t)d * sizeof(double));
  memcpy(sp->proj_f, a + 4 * (size_t)d, (size_t)d * d * sizeof(double));
  memcpy(sp->proj_pos, a + 4 * (size_t)d + (size_t)d * d, (size_t)d * d * sizeof(double));
}

/* "1m07s" style. */
static void human_seconds(double s, char *buf, size_t len) {
  if (!(s >= 0) || s > 1e8) {
    snprintf(buf, len, "?");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60)
    snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(buf, len, "%lds", t);
}

/* last: 0 a progress line, 1 the end, 2 stopped by a signal (interrupted analyses are not
 * done; they are named). */
static void progress_line(const as_pspectral *ps, const as_pspectral_batch *b, uint64_t done,
                          uint64_t failed, uint64_t interrupted, double elapsed, int last) {
  char eta[32], el[32], intr[64] = "";
  double rate = done > 0 ? elapsed / (double)done : 0;
  human_seconds(rate * (double)(b->count - done), eta, sizeof eta);
  human_seconds(elapsed, el, sizeof el);
  if (last == 2)
    snprintf(intr, sizeof intr, ", stopped (%llu interrupted, not done)",
             (unsigned long long)interrupted);
  fprintf(b->progress,
          "attnsweep: spectral analysis of large triples%s%s%s: %llu/%llu (%.1f%%) %s%s, "
          "%llu failed, %d grid%s of %dx%d%s\n",
          b->what ? " (" : "", b->what ? b->what : "", b->what ? ")" : "", (unsigned long long)done,
          (unsigned long long)b->count, b->count ? 100.0 * (double)done / (double)b->count : 100.0,
          last ? "in " : "ETA ", last ? el : eta, (unsigned long long)failed, ps->ngrids,
          ps->ngrids == 1 ? "" : "s", ps->nprow, ps->npcol, intr);
  fflush(b->progress);
}

as_status as_pspectral_run(as_pspectral *ps, const as_pspectral_batch *b, as_spectral *const *sp,
                           as_status *status, char (*msg)[AS_RECORD_MSG]) {
  as_status st = AS_OK;
  double *pk = NULL;
  as_triple *tr = NULL;
  AS_CHECK(ps && b && (b->count == 0 || (sp && status && msg && b->build)), AS_ERR_ARG,
           "pspectral: NULL argument");
  int maxd = 0;
  for (uint64_t k = 0; k < b->count; k++) {
    AS_CHECK(sp[k] != NULL, AS_ERR_ARG, "pspectral: no analysis for triple %llu",
             (unsigned long long)k);
    if (sp[k]->d > maxd) maxd = sp[k]->d;
  }
  if (b->count == 0) goto cleanup;
  pk = malloc(packet_len(maxd) * sizeof(double));
  AS_TRY(agree_on(ps->comm,
                  pk ? AS_OK
                     : as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                    "pspectral: result buffer for d = %d", maxd),
                  "job"));
  int show = ps->rank == 0 && b->progress != NULL && b->progress_interval > 0;
  double t0 = now(), last_line = t0;
  uint64_t failed = 0;
  if (show) {
    fprintf(b->progress,
            "attnsweep: spectral analysis of %llu large triple%s%s%s%s before the sweep, on %d "
            "grid%s of %dx%d\n",
            (unsigned long long)b->count, b->count == 1 ? "" : "s", b->what ? " (" : "",
            b->what ? b->what : "", b->what ? ")" : "", ps->ngrids, ps->ngrids == 1 ? "" : "s",
            ps->nprow, ps->npcol);
    fflush(b->progress);
  }
  uint64_t G = (uint64_t)ps->ngrids;
  for (uint64_t first = 0; first < b->count; first += G) {
    /* This rank's grid analyses triple first + grid. */
    uint64_t k = first + (uint64_t)ps->grid;
    if (ps->grid >= 0 && k < b->count) {
      int grank = -1;
      AS_MPI_CHECK(MPI_Comm_rank(ps->gcomm, &grank));
      as_status bst = AS_OK;
      if (grank == 0) {
        bst = b->build(k, b->ctx, &tr);
        if (bst == AS_OK && tr == NULL)
          bst = as_error_set(AS_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                             "pspectral: the build of triple %llu gave no triple",
                             (unsigned long long)k);
      }
      as_status ist = grid_analyze(ps, tr, bst, b->tol, sp[k], b->stop);
      as_triple_destroy(&tr);
      status[k] = ist;
      snprintf(msg[k], AS_RECORD_MSG, "%.*s", AS_RECORD_MSG - 1,
               ist == AS_OK ? "" : as_error_get()->message);
      if (ist != AS_OK) as_error_clear(); /* a triple's failure, not this rank's error */
    }
    /* Every result to every rank, grid by grid, from each grid's first rank. */
    for (uint64_t g = 0; g < G && first + g < b->count; g++) {
      uint64_t kk = first + g;
      int root = (int)g * ps->nprow * ps->npcol;
      size_t len = packet_len(sp[kk]->d);
      if (ps->rank == root) pack(sp[kk], status[kk], msg[kk], pk);
      MPI_Request req;
      AS_MPI_CHECK(MPI_Ibcast(pk, (int)len, MPI_DOUBLE, root, ps->comm, &req));
      AS_TRY(wait_sleeping(&req));
      if (ps->rank != root) unpack(pk, sp[kk], &status[kk], msg[kk]);
      if (status[kk] != AS_OK && status[kk] != AS_ERR_INTERRUPTED) failed++;
    }
    /* Fatal failures and stops: the statuses are the same everywhere now; a stop seen by a rank
     * that analysed nothing this round is agreed here. */
    as_status worst = AS_OK;
    int stopped = 0;
    for (uint64_t kk = first; kk < first + G && kk < b->count; kk++) {
      if (status[kk] == AS_ERR_NOMEM || status[kk] == AS_ERR_MPI || status[kk] == AS_ERR_INTERNAL)
        if (worst == AS_OK) worst = status[kk];
      if (status[kk] == AS_ERR_INTERRUPTED) stopped = 1;
    }
    int mine = b->stop != NULL && *b->stop != 0, any = 0;
    MPI_Request req;
    AS_MPI_CHECK(MPI_Iallreduce(&mine, &any, 1, MPI_INT, MPI_MAX, ps->comm, &req));
    AS_TRY(wait_sleeping(&req));
    if (worst != AS_OK) {
      for (uint64_t kk = first; kk < first + G && kk < b->count; kk++)
        if (status[kk] == worst) {
          st = as_error_set(worst, __FILE__, __LINE__, __func__,
                            "spectral analysis of large triple %llu: %s", (unsigned long long)kk,
                            msg[kk]);
          break;
        }
      goto cleanup;
    }
    if (stopped || any) {
      if (show) { /* the last line: what this round finished counts, the interrupted not */
        uint64_t fin = first, intr = 0;
        for (uint64_t kk = first; kk < first + G && kk < b->count; kk++)
          if (status[kk] == AS_ERR_INTERRUPTED)
            intr++;
          else
            fin++;
        progress_line(ps, b, fin, failed, intr, now() - t0, 2);
      }
      st = as_error_set(AS_ERR_INTERRUPTED, __FILE__, __LINE__, __func__,
                        "stopped during the spectral analysis of large triples (signal)");
      goto cleanup;
    }
    uint64_t done = first + G < b->count ? first + G : b->count;
    double tn = now();
    if (show && done < b->count && tn - last_line >= b->progress_interval) {
      progress_line(ps, b, done, failed, 0, tn - t0, 0);
      last_line = tn;
    }
  }
  if (show) progress_line(ps, b, b->count, failed, 0, now() - t0, 1);
cleanup:
  as_triple_destroy(&tr);
  free(pk);
  return st;
}

/* ---------------------------------------------------------------- one triple */

typedef struct one_ctx {
  const as_triple *tr;
} one_ctx;

static as_status build_copy(uint64_t k, void *vctx, as_triple **out) {
  as_status st = AS_OK;
  const as_triple *src = ((one_ctx *)vctx)->tr;
  as_triple *tr = NULL;
  (void)k;
  AS_CHECK(src != NULL, AS_ERR_ARG, "pspectral: no triple on rank 0");
  AS_TRY(as_triple_create(src->d, src->d, &tr));
  size_t dd = (size_t)src->d * src->d;
  memcpy(tr->V, src->V, dd * sizeof(double));
  memcpy(tr->M, src->M, dd * sizeof(double));
  *out = tr;
  tr = NULL;
cleanup:
  as_triple_destroy(&tr);
  return st;
}

as_status as_pspectral_analyze(as_pspectral *ps, const as_triple *tr, double tol, as_spectral *sp) {
  as_status st = AS_OK, ist = AS_OK;
  char msg[1][AS_RECORD_MSG];
  AS_CHECK(ps != NULL && sp != NULL, AS_ERR_ARG, "pspectral: NULL argument");
  one_ctx cx = {tr};
  as_pspectral_batch b = {1, build_copy, &cx, tol, NULL, NULL, 0, NULL};
  as_spectral *const list[1] = {sp};
  AS_TRY(as_pspectral_run(ps, &b, list, &ist, msg));
  AS_CHECK(ist == AS_OK, ist, "%s", msg[0]);
cleanup:
  return st;
}

as_status as_pspectral_hook(const as_triple *tr, double tol, as_spectral *sp, void *ctx) {
  as_pspectral *ps = ctx;
  if (ps != NULL && tr != NULL && tr->d >= ps->threshold)
    return as_pspectral_analyze(ps, tr, tol, sp);
  return as_spectral_analyze(tr, tol, sp);
}
