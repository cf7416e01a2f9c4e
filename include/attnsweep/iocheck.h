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

/* ---------------------------------------------------------------- files by type (issue 49)
 *
 * Every path a command opens as a file (a results file, a shard, a side file of OUT.h5, a
 * matrix, token or weights file, a script's input) is looked at by its type first: a FIFO
 * without a writer blocks open() and read() forever, a directory fails deep inside HDF5, a
 * device reads without end. Anything but a regular file is refused before it is opened, with
 * its kind named (AS_ERR_DATA, exit 2: bad input, and a trial's own problem inside a trial).
 * The one exception is the spec, which may be a pipe (`<(...)`, as_spec_read) and is passed
 * AS_PATH_PIPE. */

/* Kinds of file a caller accepts besides a regular file. */
enum { AS_PATH_PIPE = 1, AS_PATH_DEVICE = 2 };

/* The kind of file of an st_mode, as a message names it: "a directory", "a FIFO (named
 * pipe)", "a character device", "a block device", "a socket", "a symbolic link", "a regular
 * file", "a special file". */
const char *as_file_kind(unsigned mode);

/* Refused by type before opening: AS_OK when path, links followed, is a regular file (or of a
 * kind in allow), or when it does not exist or cannot be looked at (the caller's open then
 * says why). Otherwise AS_ERR_DATA "WHAT PATH is KIND, not a regular file: refusing to open
 * it". what: the role of the file for the message ("the lock file", "" or NULL: none). Not
 * collective. */
as_status as_path_check(const char *path, const char *what, int allow);

/* open(2) of a file that must be regular (or of a kind in allow): O_NONBLOCK is added so that
 * a FIFO or device put at the name after any earlier look cannot block the open itself, the
 * opened file's type is checked (fstat) as as_path_check does, and O_NONBLOCK is cleared again.
 * O_CLOEXEC is added. *fd >= 0 on success only. AS_ERR_DATA "PATH: no such file" (ENOENT),
 * AS_ERR_ARG "WHAT PATH is a symbolic link: refusing to follow it (remove it)" (ELOOP with
 * O_NOFOLLOW), the refusal of as_path_check, AS_ERR_IO "cannot open WHAT PATH: reason". */
as_status as_path_open(const char *path, int flags, unsigned mode, const char *what, int allow,
                       int *fd);

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
