/* status.c: messages of the status list and the per-thread error record. */
#include "attnsweep/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *as_status_message(as_status st) {
  switch (st) {
#define AS_X_MSG(name, value, code, msg) \
  case name:                             \
    return msg;
    AS_STATUS_LIST(AS_X_MSG)
#undef AS_X_MSG
  }
  return "unknown status";
}

const char *as_status_name(as_status st) {
  switch (st) {
#define AS_X_NAME(name, value, code, msg) \
  case name:                              \
    return #name;
    AS_STATUS_LIST(AS_X_NAME)
#undef AS_X_NAME
  }
  return "AS_UNKNOWN";
}

int as_status_exit_code(as_status st) {
  switch (st) {
#define AS_X_CODE(name, value, code, msg) \
  case name:                              \
    return code;
    AS_STATUS_LIST(AS_X_CODE)
#undef AS_X_CODE
  }
  return 3;
}

/* One record per thread: workers may one day run trials in threads. */
static _Thread_local as_error as_err = {AS_OK, NULL, 0, NULL, -1, -1, {0}};

as_status as_error_set(as_status st, const char *file, int line, const char *func, const char *fmt,
                       ...) {
  if (st == AS_OK || as_err.status != AS_OK) return st; /* keep the first, deepest failure */
  as_err.status = st;
  as_err.file = file;
  as_err.line = line;
  as_err.func = func;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(as_err.message, sizeof as_err.message, fmt, ap);
  va_end(ap);
  return st;
}

const as_error *as_error_get(void) {
  return &as_err;
}

void as_error_clear(void) {
  as_err.status = AS_OK;
  as_err.file = NULL;
  as_err.line = 0;
  as_err.func = NULL;
  as_err.message[0] = '\0';
}

void as_error_context_set(int rank, int64_t trial) {
  as_err.rank = rank;
  as_err.trial = trial;
}

void as_error_format(char *buf, size_t len) {
  if (len == 0) return;
  if (as_err.status == AS_OK) {
    snprintf(buf, len, "no error");
    return;
  }
  char ctx[64] = "";
  if (as_err.rank >= 0 && as_err.trial >= 0)
    snprintf(ctx, sizeof ctx, "[rank %d, trial %lld] ", as_err.rank, (long long)as_err.trial);
  else if (as_err.rank >= 0)
    snprintf(ctx, sizeof ctx, "[rank %d] ", as_err.rank);
  else if (as_err.trial >= 0)
    snprintf(ctx, sizeof ctx, "[trial %lld] ", (long long)as_err.trial);
  snprintf(buf, len, "%s:%d: %s: %s%s (%s)", as_err.file ? as_err.file : "?", as_err.line,
           as_err.func ? as_err.func : "?", ctx, as_err.message, as_status_message(as_err.status));
}
