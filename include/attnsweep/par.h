/* attnsweep/par.h: set-up shared by every MPI command. */
#ifndef ATTNSWEEP_PAR_H
#define ATTNSWEEP_PAR_H

#include <mpi.h>

#include "attnsweep/status.h"

/* The one override of the BLAS threads of a rank (docs/scheduling.md). */
#define AS_PAR_BLAS_THREADS_ENV "ATTNSWEEP_BLAS_THREADS"

/* Not collective. Pins OpenBLAS in this process to one thread, or to the positive integer in
 * the environment variable ATTNSWEEP_BLAS_THREADS, whatever OPENBLAS_NUM_THREADS or
 * OMP_NUM_THREADS say: MPI ranks are the parallelism, and ranks x BLAS threads must stay
 * within the cores. main() calls it first thing in every process (each rank), as_par_setup
 * again. *threads (may be NULL): the count set (0 on error).
 * Statuses: AS_ERR_ARG for an ATTNSWEEP_BLAS_THREADS that is not a positive integer (named). */
as_status as_par_blas_threads(int *threads);

/* Not collective. Makes BLAS take its work buffer now, while a failure is clean: checks with
 * an allocation of its own that the buffer fits (AS_ERR_NOMEM naming the size and the
 * `ulimit -v` limit when it does not), then runs a 1 x 1 dgetrf and a 1 x 1 dgemm, after which
 * OpenBLAS reuses that buffer. Without it, OpenBLAS meeting an address-space limit at a trial's
 * first level-3 call retries its allocation forever. Commands that run trials call it once per
 * process, after as_par_setup. */
as_status as_par_blas_reserve(void);

/* Collective on comm. Makes MPI errors on comm return codes (checked by AS_MPI_CHECK)
 * instead of aborting, records the rank in the error context, silences HDF5's own stack
 * printing, and pins the BLAS threads (as_par_blas_threads). */
as_status as_par_setup(MPI_Comm comm);

#endif
