/* par.c: per-process set-up for MPI commands. */
#include "attnsweep/par.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "attnsweep/iocheck.h"

/* OpenBLAS's thread control (its cblas.h declares it; the par layer includes no BLAS header).
 * The project links OpenBLAS itself (CMakeLists.txt), so the symbol is always there. */
void openblas_set_num_threads(int num_threads);
/* Fortran BLAS (declared here for the same reason). */
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc);
/* Fortran LAPACK (OpenBLAS's). */
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);

/* OpenBLAS (0.3.21, driver/others/memory.c blas_memory_alloc) takes one work buffer of
 * 128 MiB + 4 KiB per thread at its first level-3 or LAPACK call that needs one, keeps it for
 * the life of the process, and when no allocator can give it one retries forever: under
 * `ulimit -v` a trial spun at full CPU inside dgemm, deaf to SIGTERM (issue 36 point 8). On
 * the kernels with a small-matrix path (OpenBLAS's SkylakeX and Cooperlake: chosen at run time
 * on AVX-512 CPUs) a small dgemm takes no buffer; dgetrf takes it at any size. */
#define AS_PAR_BLAS_BUFFER (((size_t)128 << 20) + 4096)

as_status as_par_blas_threads(int *threads) {
  as_status st = AS_OK;
  int want = 1;
  const char *env = getenv(AS_PAR_BLAS_THREADS_ENV);
  if (threads) *threads = 0;
  if (env && *env) {
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    AS_CHECK(errno == 0 && end != env && *end == '\0' && v >= 1 && v <= INT_MAX, AS_ERR_ARG,
             "%s = '%s' must be a positive integer (BLAS threads per rank)",
             AS_PAR_BLAS_THREADS_ENV, env);
    want = (int)v;
  }
  openblas_set_num_threads(want);
  if (threads) *threads = want;
cleanup:
  return st;
}

as_status as_par_blas_reserve(void) {
  as_status st = AS_OK;
  /* Room for the buffer, checked with an allocation of our own that fails cleanly ... */
  void *probe = malloc(AS_PAR_BLAS_BUFFER);
  if (!probe) {
    struct rlimit rl;
    char lim[64] = "";
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      snprintf(lim, sizeof lim, " (ulimit -v %llu KiB)", (unsigned long long)rl.rlim_cur / 1024);
    AS_CHECK(0, AS_ERR_NOMEM,
             "cannot reserve the BLAS work buffer (%zu MiB): the process's memory or address "
             "space limit%s is too small for any trial; raise it",
             AS_PAR_BLAS_BUFFER >> 20, lim);
  }
  free(probe);
  /* ... then OpenBLAS takes it now, with a 1 x 1 LU factorisation (a 1 x 1 product takes none
   * where a small-matrix kernel answers it), and reuses it for every later call: a trial that
   * runs out of memory afterwards fails in an allocation of ours. The product as well, for a
   * BLAS whose LAPACK is another library. */
  const int one = 1;
  const double a = 1.0, b = 2.0, zero = 0.0;
  double c = 0.0, lu = 4.0;
  int ipiv = 0, info = -1;
  dgetrf_(&one, &one, &lu, &one, &ipiv, &info);
  AS_CHECK(info == 0 && lu == 4.0 && ipiv == 1, AS_ERR_INTERNAL,
           "LAPACK dgetrf of the 1 x 1 matrix 4 gave %g, pivot %d, info %d", lu, ipiv, info);
  dgemm_("N", "N", &one, &one, &one, &a, &a, &one, &b, &one, &zero, &c, &one);
  AS_CHECK(c == 2.0, AS_ERR_INTERNAL, "BLAS dgemm of 1 x 1 matrices gave %g, not 2", c);
cleanup:
  return st;
}

as_status as_par_setup(MPI_Comm comm) {
  as_status st = AS_OK;
  int rank = -1;
  AS_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  AS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  as_error_context_set(rank, -1);
  as_h5_quiet();
  AS_TRY(as_par_blas_threads(NULL));
cleanup:
  return st;
}
