/* signals.c: SIGTERM, SIGUSR1 and SIGINT set a flag; nothing else happens in the handler. */
#include "attnsweep/signals.h"

#include <errno.h>
#include <string.h>

static volatile sig_atomic_t as_stop_flag = 0;

static const int as_stop_signals[] = {SIGTERM, SIGUSR1, SIGINT};
#define AS_NSIG ((int)(sizeof as_stop_signals / sizeof as_stop_signals[0]))

static struct sigaction as_old_actions[AS_NSIG];
static int as_installed = 0;

/* Only async-signal-safe operations: a store to a sig_atomic_t, signal() and raise(). */
static void as_stop_handler(int sig) {
  if (as_stop_flag != 0 && sig == SIGINT) {
    /* Second Ctrl-C: the user insists. Default action (terminate) right away. */
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    return;
  }
  if (as_stop_flag == 0 || as_stop_flag == AS_SIGNALS_REQUESTED) as_stop_flag = sig;
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
