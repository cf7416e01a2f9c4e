/* par.c: per-process set-up for MPI commands. */
#include "attnsweep/par.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "attnsweep/iocheck.h"

/* OpenBLAS's thread control (its cblas.h declares it; the par layer includes no BLAS header).
 * The project links OpenBLAS itself (CMakeLists.txt), so the symbol is always there. */
void openblas_set_num_threads(int num_threads);

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
