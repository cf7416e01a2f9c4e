/* attnsweep/status.h: status codes, the error record and the checking macros of the core.
 *
 * One list (AS_STATUS_LIST) generates the enum, the messages, the exit codes and which
 * statuses are a trial's own problem, so a new status cannot be added without them. 0 is
 * success, every error is negative.
 *
 * Errors and outcomes are different things (docs/architecture.md): an allocation, MPI, HDF5
 * or LAPACK failure is an error and travels as an as_status; "not converged", "non-finite", "max
 * steps" are outcomes of a trial (enums.h) and are data.
 *
 * Bugs are not data. Inside a trial three kinds of failure meet:
 *   the trial's data     (column `trial` = 1: bad input data, a spec value the trial cannot
 *                        use, a LAPACK routine that did not converge on this matrix): the
 *                        trial is recorded as failed with the message and the sweep goes on;
 *   a bug                (AS_ERR_INTERNAL: a LAPACK illegal argument, info < 0; an invalid
 *                        argument a caller passed, which the pipeline promotes to internal):
 *                        the run stops on every rank with file:line and the trial, exit 70,
 *                        and nothing is recorded for that trial (it stays pending, resumable);
 *   the machine          (memory, MPI, HDF5, I/O of the results): the run stops, exit 3.
 *
 * The error record is per thread. The first failure records file, line, function and a
 * message; callers that propagate it add nothing, so the message names the real place.
 * Rank and trial index are context set by the parallel layer (core knows no MPI).
 */
#ifndef ATTNSWEEP_STATUS_H
#define ATTNSWEEP_STATUS_H

#include <stddef.h>
#include <stdint.h>

/* Exit code of an internal error (a bug): EX_SOFTWARE of BSD's sysexits.h. */
#define AS_EXIT_INTERNAL 70
/* Exit code of a run that completed the sweep but left trials failed or non-finite (outcome
 * failed or nonfinite): every row is a result, some of them failures; `--retry-failed` reruns
 * them. Not a status: the run itself succeeded. */
#define AS_EXIT_TRIALS_FAILED 4

/* X(name, value, exit code, trial, message). trial = 1: a problem of one trial's own data,
 * recorded in its row as a failed trial (as_status_is_trial_problem); 0: stops the run. */
#define AS_STATUS_LIST(X)                                                            \
  X(AS_OK, 0, 0, 0, "success")                                                       \
  X(AS_ERR_NOMEM, -1, 3, 0, "out of memory")                                         \
  X(AS_ERR_ARG, -2, 2, 0, "invalid argument")                                        \
  X(AS_ERR_SPEC, -3, 2, 1, "invalid sweep specification")                            \
  X(AS_ERR_DATA, -4, 2, 1, "invalid input data")                                     \
  X(AS_ERR_IO, -5, 3, 0, "input/output failure")                                     \
  X(AS_ERR_HDF5, -6, 3, 0, "HDF5 failure")                                           \
  X(AS_ERR_MPI, -7, 3, 0, "MPI failure")                                             \
  X(AS_ERR_LAPACK, -8, 3, 1, "LAPACK/ScaLAPACK numerical failure")                   \
  X(AS_ERR_INTERNAL, -9, AS_EXIT_INTERNAL, 0, "internal error (a bug in attnsweep)") \
  X(AS_ERR_INTERRUPTED, -10, 99, 0, "stopped early; resumable")                      \
  X(AS_ERR_BUSY, -11, 3, 0, "resource in use by another run")                        \
  X(AS_ERR_UNSUPPORTED, -12, 2, 1, "not supported")                                  \
  X(AS_ERR_MISMATCH, -13, 2, 0, "results file does not match the specification")

typedef enum as_status {
#define AS_X_ENUM(name, value, code, trial, msg) name = value,
  AS_STATUS_LIST(AS_X_ENUM)
#undef AS_X_ENUM
} as_status;

/* Message of a status ("unknown status" for values outside the list). Not collective. */
const char *as_status_message(as_status st);
/* Symbolic name of a status, e.g. "AS_ERR_NOMEM". */
const char *as_status_name(as_status st);
/* Process exit code for a status: 0 ok, 2 bad input, 3 I/O or system failure, 70 internal
 * error (AS_EXIT_INTERNAL), 99 resumable. */
int as_status_exit_code(as_status st);
/* 1 when st is a problem of one trial's own data (column `trial` of the list): the trial is
 * recorded as failed and the sweep goes on. 0 for AS_OK and for every status that stops a
 * run (bugs, the machine). */
int as_status_is_trial_problem(as_status st);

/* ---------------------------------------------------------------- error record */

#define AS_ERRMSG_MAX 1024

typedef struct as_error {
  as_status status;            /* AS_OK when no error is recorded */
  const char *file;            /* source file of the failing check (static string) */
  int line;                    /* its line */
  const char *func;            /* its function (static string) */
  int rank;                    /* MPI rank (as_error_context_set when the error was set), -1 */
  int64_t trial;               /* trial index (likewise), -1 if none */
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
/* Context attached to later errors: rank (-1 unknown) and trial index (-1 none). An error
 * keeps the context it was set in. */
void as_error_context_set(int rank, int64_t trial);
/* Record an error that happened in another process (relayed by the parallel layer) with its
 * place, rank, trial and message, unless one is already recorded; the strings are copied.
 * Returns st. */
as_status as_error_relay(as_status st, const char *file, int line, const char *func, int rank,
                         int64_t trial, const char *message);
/* Re-classify the recorded error as st (file, line, function and message stay), e.g. an
 * invalid argument met inside a trial becomes AS_ERR_INTERNAL. Records st with a generic
 * message when nothing is recorded. Returns st. */
as_status as_error_promote(as_status st);
/* Append formatted text to the recorded error's message (truncated to fit); nothing when
 * no error is recorded. For context known only higher up, e.g. a trial's parameters. */
void as_error_append(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Formats the recorded error as "file:line: func: [rank R, trial T] message (status)" into buf. */
void as_error_format(char *buf, size_t len);
/* The recorded error as a user reads it: "[rank R, trial T] message" without the source
 * location (the context only for a rank other than 0 or a trial), except for an internal
 * error (AS_ERR_INTERNAL, a bug) or when as_error_debug() holds: then as as_error_format. */
void as_error_format_user(char *buf, size_t len);
/* 1 when the environment variable ATTNSWEEP_DEBUG is set to something other than "" or "0":
 * every error message then names its place in the source (file:line: function). */
int as_error_debug(void);

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

/* LAPACK: info < 0 is a bug in the call (an illegal argument): AS_ERR_INTERNAL, which stops
 * the run. info > 0 is a numerical outcome the caller decides about (typically AS_ERR_LAPACK,
 * recorded with the trial); this macro lets it through. */
#define AS_LAPACK_CHECK(routine, info)                                                    \
  do {                                                                                    \
    if ((info) < 0) {                                                                     \
      st = as_error_set(AS_ERR_INTERNAL, __FILE__, __LINE__, __func__,                    \
                        "%s: argument %d had an illegal value", (routine), (int)-(info)); \
      goto cleanup;                                                                       \
    }                                                                                     \
  } while (0)

/* ---------------------------------------------------------------- assertions
 * AS_ASSERT(cond) states an invariant the code around it proves (an index in range after the
 * loop that found it, a count that cannot exceed its buffer...). Active unless NDEBUG is
 * defined: a false assertion prints "file:line: function: assertion 'cond' failed" and aborts
 * (under MPI the launcher then ends the job). Never around a library call or anything that can
 * fail for a reason outside the code (use AS_CHECK): compiled out, the call would vanish.
 * Keep it out of inner loops; the builds of this project leave it on. */
#ifndef NDEBUG
#define AS_ASSERT(cond) ((cond) ? (void)0 : as_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
#define AS_ASSERT(cond) ((void)0)
#endif

/* Prints the failed assertion (and the rank/trial context) to stderr, then abort(). */
_Noreturn void as_assert_fail(const char *cond, const char *file, int line, const char *func);

#endif /* ATTNSWEEP_STATUS_H */
