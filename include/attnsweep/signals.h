/* attnsweep/signals.h: the stop flag raised by SIGTERM, SIGUSR1 and SIGINT.
 *
 * Slurm sends SIGTERM at the time limit (and SIGUSR1 with --signal=USR1@N before it); a user
 * at a terminal sends SIGINT. None of them should kill a sweep in the middle of an HDF5
 * write: the handlers only set one `volatile sig_atomic_t`, which the scheduler (sched.h)
 * checks between trials and the integrator polls inside a trial. The sweep then stops
 * handing out work on every rank, sinks what is finished, and the command exits 99
 * (AS_ERR_INTERRUPTED, resumable).
 *
 * The flag holds the number of the signal that set it first, AS_SIGNALS_REQUESTED when it was
 * set by as_signals_request_stop() (a stop announced by another rank, a time limit), or 0.
 * A second SIGINT while the flag is already set restores the default action and re-raises
 * it, so a user who presses Ctrl-C twice gets the usual immediate termination.
 *
 * Process-wide state; none of these functions is collective.
 */
#ifndef ATTNSWEEP_SIGNALS_H
#define ATTNSWEEP_SIGNALS_H

#include <signal.h>

#include "attnsweep/status.h"

/* Flag value of a stop that came from the program, not from a signal. */
#define AS_SIGNALS_REQUESTED (-1)

/* Install the handlers for SIGTERM, SIGUSR1 and SIGINT (sigaction, SA_RESTART), remembering
 * the previous actions. Idempotent. Does not clear the flag. Returns AS_OK, or AS_ERR_IO
 * (recorded) when sigaction fails. */
as_status as_signals_install(void);

/* Restore the actions that were in place before as_signals_install. No-op if not installed. */
void as_signals_restore(void);

/* The stop flag, for code that polls it (the integrator: `if (*stop) ...`). Never NULL; the
 * pointer is valid for the life of the process. */
const volatile sig_atomic_t *as_signals_flag(void);

/* The value of the flag: 0 (no stop), a signal number, or AS_SIGNALS_REQUESTED. */
int as_signals_caught(void);

/* Set the flag without a signal (keeps a signal number already there). Async-signal-safe. */
void as_signals_request_stop(void);

/* Exit code of a process the watchdog ends (as_signals_set_grace): like a drained stop, the
 * sweep is resumable (its journals hold every finished trial). */
#define AS_SIGNALS_GRACE_EXIT 99

/* The watchdog: once a stop signal has set the flag, the process has `seconds` to honour it;
 * a call that never comes back to a place that polls the flag (a long BLAS or LAPACK routine,
 * a library that retries a failed allocation forever) would otherwise make the signal
 * useless, leaving only SIGKILL. When they have passed, SIGALRM writes one line naming what
 * (e.g. "run") and ends the process with _exit(AS_SIGNALS_GRACE_EXIT), as a kill would: the
 * journals are durable, and `run --resume` (or `repair`) recovers them. 0 turns it off (the
 * default). Uses SIGALRM and alarm(); not async-signal-safe itself: call before the work. */
void as_signals_set_grace(unsigned seconds, const char *what);

/* Clear the flag (tests, or a command that runs several sweeps). */
void as_signals_reset(void);

#endif /* ATTNSWEEP_SIGNALS_H */
