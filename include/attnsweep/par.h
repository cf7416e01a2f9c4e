/* attnsweep/par.h: set-up shared by every MPI command. */
#ifndef ATTNSWEEP_PAR_H
#define ATTNSWEEP_PAR_H

#include <mpi.h>

#include "attnsweep/status.h"

/* Collective on comm. Makes MPI errors on comm return codes (checked by AS_MPI_CHECK)
 * instead of aborting, records the rank in the error context, silences HDF5's own stack
 * printing, and pins OpenBLAS to one thread unless the user chose otherwise (ranks x
 * threads must stay within the cores). */
as_status as_par_setup(MPI_Comm comm);

#endif
