/* attnsweep/iocheck.h: checking macros for MPI and HDF5 calls (io and par layers).
 *
 * Like AS_CHECK they assume a local `as_status st` and a `cleanup:` label. A failure records
 * file, line, function, the rank (from as_error_context_set) and:
 *   MPI:  the MPI error string of the return code,
 *   HDF5: the whole HDF5 error stack (major/minor messages and where HDF5 failed).
 * Call as_h5_quiet() once so HDF5 does not print its stack itself.
 */
#ifndef ATTNSWEEP_IOCHECK_H
#define ATTNSWEEP_IOCHECK_H

#include "attnsweep/status.h"

/* Record an MPI failure (rc != MPI_SUCCESS); returns AS_ERR_MPI. */
as_status as_error_from_mpi(int rc, const char *file, int line, const char *func, const char *call);
/* Record an HDF5 failure with the current HDF5 error stack and the HDF5 files open ("CALL failed
 * on FILE | HDF5: ..."; a create or open names its file in the stack); returns AS_ERR_HDF5. */
as_status as_error_from_h5(const char *file, int line, const char *func, const char *call);
/* Record the failure of H5Fopen of a file that carries the HDF5 signature (so is damaged, e.g.
 * truncated): AS_ERR_HDF5 naming path, the innermost cause HDF5 gives, and `attnsweep repair`,
 * instead of the raw stack. */
as_status as_error_from_h5_open(const char *file, int line, const char *func, const char *path);
/* Stop HDF5 from printing error stacks (they are captured by AS_H5_CHECK instead). */
void as_h5_quiet(void);

/* For MPI calls that return an error code. */
#define AS_MPI_CHECK(call)                                                     \
  do {                                                                         \
    int as_mpi_rc_ = (call);                                                   \
    if (as_mpi_rc_ != 0 /* MPI_SUCCESS */) {                                   \
      st = as_error_from_mpi(as_mpi_rc_, __FILE__, __LINE__, __func__, #call); \
      goto cleanup;                                                            \
    }                                                                          \
  } while (0)

/* For HDF5 calls returning herr_t or hid_t (negative on failure). */
#define AS_H5_CHECK(call)                                         \
  do {                                                            \
    if ((long long)(call) < 0) {                                  \
      st = as_error_from_h5(__FILE__, __LINE__, __func__, #call); \
      goto cleanup;                                               \
    }                                                             \
  } while (0)

/* Assign an HDF5 identifier and check it: AS_H5_ID(fid, H5Fopen(...)). */
#define AS_H5_ID(var, call)                                       \
  do {                                                            \
    (var) = (call);                                               \
    if ((long long)(var) < 0) {                                   \
      st = as_error_from_h5(__FILE__, __LINE__, __func__, #call); \
      goto cleanup;                                               \
    }                                                             \
  } while (0)

#endif /* ATTNSWEEP_IOCHECK_H */
