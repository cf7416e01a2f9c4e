/* attnsweep/status.h: status codes, the error record and the checking macros of the core.
 *
 * One list (AS_STATUS_LIST) generates the enum, the messages and the exit codes, so a new
 * status cannot be added without its message. 0 is success, every error is negative.
 *
 * Errors and outcomes are different things (docs/architecture.md): an allocation, MPI, HDF5
 * or LAPACK failure is an error and travels as an as_status; "not converged", "non-finite", "max
 * steps" are outcomes of a trial (enums.h) and are data.
 *
 * The error record is per thread. The first failure records file, line, function and a
 * message; callers that propagate it add nothing, so the message names the real place.
 * Rank and trial index are context set by the parallel layer (core knows no MPI).
 */
#ifndef ATTNSWEEP_STATUS_H
#define ATTNSWEEP_STATUS_H

#include <stddef.h>
#include <stdint.h>

/* X(name, value, exit code, message) */
#define AS_STATUS_LIST(X)                                          \
  X(AS_OK, 0, 0, "success")                                        \
  X(AS_ERR_NOMEM, -1, 3, "out of memory")                          \
  X(AS_ERR_ARG, -2, 2, "invalid argument")                         \
  X(AS_ERR_SPEC, -3, 2, "invalid sweep specification")             \
  X(AS_ERR_DATA, -4, 2, "invalid input data")                      \
  X(AS_ERR_IO, -5, 3, "input/output failure")                      \
  X(AS_ERR_HDF5, -6, 3, "HDF5 failure")                            \
  X(AS_ERR_MPI, -7, 3, "MPI failure")                              \
  X(AS_ERR_LAPACK, -8, 3, "LAPACK/ScaLAPACK failure")              \
  X(AS_ERR_INTERNAL, -9, 3, "internal error (a bug in attnsweep)") \
  X(AS_ERR_INTERRUPTED, -10, 99, "stopped early; resumable")       \
  X(AS_ERR_BUSY, -11, 3, "resource in use by another run")         \
  X(AS_ERR_UNSUPPORTED, -12, 2, "not supported")                   \
  X(AS_ERR_MISMATCH, -13, 2, "results file does not match the specification")

typedef enum as_status {
#define AS_X_ENUM(name, value, code, msg) name = value,
  AS_STATUS_LIST(AS_X_ENUM)
#undef AS_X_ENUM
} as_status;

/* Message of a status ("unknown status" for values outside the list). Not collective. */
const char *as_status_message(as_status st);
/* Symbolic name of a status, e.g. "AS_ERR_NOMEM". */
const char *as_status_name(as_status st);
/* Process exit code for a status: 0 ok, 2 bad input, 3 I/O or system failure, 99 resumable. */
int as_status_exit_code(as_status st);

/* ---------------------------------------------------------------- error record */

#define AS_ERRMSG_MAX 1024

typedef struct as_error {
  as_status status;            /* AS_OK when no error is recorded */
  const char *file;            /* source file of the failing check (static string) */
  int line;                    /* its line */
  const char *func;            /* its function (static string) */
  int rank;                    /* MPI rank from as_error_context_set, -1 if unknown */
  int64_t trial;               /* trial index from as_error_context_set, -1 if none */
  char message[AS_ERRMSG_MAX]; /* what failed, NUL terminated */
} as_error;

/* Record an error unless one is already recorded; returns st so it can be returned. */
as_status as_error_set(as_status st, const char *file, int line, const char *func, const char *fmt,
                       ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* The recorded error of this thread (status AS_OK if none). */
const as_error *as_error_get(void);
/* Forget the recorded error (start of a new trial or command). Keeps the context. */
void as_error_clear(void);
/* Context attached to later errors: rank (-1 unknown) and trial index (-1 none). */
void as_error_context_set(int rank, int64_t trial);
/* Formats the recorded error as "file:line: func: [rank R, trial T] message" into buf. */
void as_error_format(char *buf, size_t len);

/* ---------------------------------------------------------------- checking macros
 * They assume a local `as_status st` and a `cleanup:` label (single exit, owned pointers
 * start NULL, cleanup is unconditional).
 */

/* Fail with status s and a formatted message unless cond holds. */
#define AS_CHECK(cond, s, ...)                                           \
  do {                                                                   \
    if (!(cond)) {                                                       \
      st = as_error_set((s), __FILE__, __LINE__, __func__, __VA_ARGS__); \
      goto cleanup;                                                      \
    }                                                                    \
  } while (0)

/* Propagate the status of a call that records its own error. */
#define AS_TRY(call)                                                                   \
  do {                                                                                 \
    as_status as_try_st_ = (call);                                                     \
    if (as_try_st_ != AS_OK) {                                                         \
      st = as_error_set(as_try_st_, __FILE__, __LINE__, __func__, "%s failed", #call); \
      goto cleanup;                                                                    \
    }                                                                                  \
  } while (0)

/* Allocation: p = malloc(...) then AS_CHECK_ALLOC(p). */
#define AS_CHECK_ALLOC(p) AS_CHECK((p) != NULL, AS_ERR_NOMEM, "allocation of %s failed", #p)

/* LAPACK: info < 0 is a bug in the call (an illegal argument), always an error.
 * info > 0 is a numerical outcome the caller decides about; this macro lets it through. */
#define AS_LAPACK_CHECK(routine, info)                                                    \
  do {                                                                                    \
    if ((info) < 0) {                                                                     \
      st = as_error_set(AS_ERR_LAPACK, __FILE__, __LINE__, __func__,                      \
                        "%s: argument %d had an illegal value", (routine), (int)-(info)); \
      goto cleanup;                                                                       \
    }                                                                                     \
  } while (0)

#endif /* ATTNSWEEP_STATUS_H */
