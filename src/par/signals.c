/* signals.c: SIGTERM, SIGUSR1 and SIGINT set a flag; nothing else happens in the handler. */
#include "attnsweep/signals.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t as_stop_flag = 0;

static const int as_stop_signals[] = {SIGTERM, SIGUSR1, SIGINT};
#define AS_NSIG ((int)(sizeof as_stop_signals / sizeof as_stop_signals[0]))

static struct sigaction as_old_actions[AS_NSIG];
static int as_installed = 0;

/* The watchdog (as_signals_set_grace): seconds a stop may take, 0 for none, and the message
 * its SIGALRM handler writes, formatted beforehand (a handler may only write(2) it). */
static unsigned as_grace = 0;
static char as_grace_msg[512];
static size_t as_grace_len = 0;

static void as_grace_handler(int sig) {
  (void)sig;
  if (as_grace_len) {
    ssize_t k = write(STDERR_FILENO, as_grace_msg, as_grace_len);
    (void)k;
  }
  _exit(AS_SIGNALS_GRACE_EXIT);
}

/* Only async-signal-safe operations: a store to a sig_atomic_t, signal() and raise(). */
static void as_stop_handler(int sig) {
  if (as_stop_flag != 0 && sig == SIGINT) {
    /* Second Ctrl-C: the user insists. Default action (terminate) right away. */
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    return;
  }
  if (as_stop_flag == 0 || as_stop_flag == AS_SIGNALS_REQUESTED) {
    /* The first stop signal starts the watchdog: a call that never returns to a place that
     * polls the flag (a BLAS routine, a library retrying an allocation) cannot hold it. */
    if (as_stop_flag == 0 && as_grace > 0) alarm(as_grace);
    as_stop_flag = sig;
  }
}

void as_signals_set_grace(unsigned seconds, const char *what) {
  as_grace = seconds;
  int k = snprintf(as_grace_msg, sizeof as_grace_msg,
                   "attnsweep: %s did not stop within %u s of the stop signal (a long library "
                   "call?): leaving now without closing its files (exit %d); the journals hold "
                   "every finished trial: resume with --resume\n",
                   what ? what : "the command", seconds, AS_SIGNALS_GRACE_EXIT);
  as_grace_len =
      k > 0 ? ((size_t)k < sizeof as_grace_msg ? (size_t)k : sizeof as_grace_msg - 1) : 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = seconds > 0 ? as_grace_handler : SIG_DFL;
  sigemptyset(&sa.sa_mask);
  (void)sigaction(SIGALRM, &sa, NULL);
  if (seconds == 0) alarm(0);
}

as_status as_signals_install(void) {
  as_status st = AS_OK;
  int done = 0;
  if (as_installed) return AS_OK;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = as_stop_handler;
  sigemptyset(&sa.sa_mask);
  /* Restart interrupted system calls: MPI, HDF5 and stdio need not see EINTR. */
  sa.sa_flags = SA_RESTART;
  for (done = 0; done < AS_NSIG; done++) {
    int rc = sigaction(as_stop_signals[done], &sa, &as_old_actions[done]);
    AS_CHECK(rc == 0, AS_ERR_IO, "sigaction(%d) failed: %s", as_stop_signals[done],
             strerror(errno));
  }
  as_installed = 1;
cleanup:
  if (st != AS_OK) {
    for (int i = 0; i < done; i++) sigaction(as_stop_signals[i], &as_old_actions[i], NULL);
  }
  return st;
}

void as_signals_restore(void) {
  if (!as_installed) return;
  for (int i = 0; i < AS_NSIG; i++) sigaction(as_stop_signals[i], &as_old_actions[i], NULL);
  as_installed = 0;
}

const volatile sig_atomic_t *as_signals_flag(void) {
  return &as_stop_flag;
}

int as_signals_caught(void) {
  return (int)as_stop_flag;
}

void as_signals_request_stop(void) {
  if (as_stop_flag == 0) as_stop_flag = AS_SIGNALS_REQUESTED;
}

void as_signals_reset(void) {
  as_stop_flag = 0;
}
