/* par.c: per-process set-up for MPI commands. */
#include "attnsweep/par.h"

#include <stdlib.h>

#include "attnsweep/iocheck.h"

as_status as_par_setup(MPI_Comm comm) {
  as_status st = AS_OK;
  int rank = -1;
  AS_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  AS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  as_error_context_set(rank, -1);
  as_h5_quiet();
cleanup:
  return st;
}
