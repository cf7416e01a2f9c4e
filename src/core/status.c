/* status.c: messages of the status list and the per-thread error record. */
#include "attnsweep/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *as_status_message(as_status st) {
  switch (st) {
#define AS_X_MSG(name, value, code, trial, msg) \
  case name:                                    \
    return msg;
    AS_STATUS_LIST(AS_X_MSG)
#undef AS_X_MSG
  }
  return "unknown status";
}

const char *as_status_name(as_status st) {
  switch (st) {
#define AS_X_NAME(name, value, code, trial, msg) \
  case name:                                     \
    return #name;
    AS_STATUS_LIST(AS_X_NAME)
#undef AS_X_NAME
  }
  return "AS_UNKNOWN";
}

int as_status_exit_code(as_status st) {
  switch (st) {
#define AS_X_CODE(name, value, code, trial, msg) \
  case name:                                     \
    return code;
    AS_STATUS_LIST(AS_X_CODE)
#undef AS_X_CODE
  }
  return 3;
}

int as_status_is_trial_problem(as_status st) {
  switch (st) {
#define AS_X_TRIAL(name, value, code, trial, msg) \
  case name:                                      \
    return trial;
    AS_STATUS_LIST(AS_X_TRIAL)
#undef AS_X_TRIAL
  }
  return 0;
}

/* One record per thread: workers may one day run trials in threads. The context (rank,
 * trial) is copied into the record when an error is set, so the record says where it
 * happened even after the context has moved on. */
static _Thread_local as_error as_err = {AS_OK, NULL, 0, NULL, -1, -1, {0}};
static _Thread_local int ctx_rank = -1;
static _Thread_local int64_t ctx_trial = -1;
/* Place of an error relayed from another process (as_error_relay): its own copies. */
static _Thread_local char relay_file[256], relay_func[128];

as_status as_error_set(as_status st, const char *file, int line, const char *func, const char *fmt,
                       ...) {
  if (st == AS_OK || as_err.status != AS_OK) return st; /* keep the first, deepest failure */
  as_err.status = st;
  as_err.file = file;
  as_err.line = line;
  as_err.func = func;
  as_err.rank = ctx_rank;
  as_err.trial = ctx_trial;
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
  as_err.rank = ctx_rank;
  as_err.trial = ctx_trial;
  as_err.message[0] = '\0';
}

void as_error_context_set(int rank, int64_t trial) {
  ctx_rank = rank;
  ctx_trial = trial;
  if (as_err.status == AS_OK) {
    as_err.rank = rank;
    as_err.trial = trial;
  }
}

as_status as_error_relay(as_status st, const char *file, int line, const char *func, int rank,
                         int64_t trial, const char *message) {
  if (st == AS_OK || as_err.status != AS_OK) return st;
  snprintf(relay_file, sizeof relay_file, "%s", file ? file : "?");
  snprintf(relay_func, sizeof relay_func, "%s", func ? func : "?");
  as_err.status = st;
  as_err.file = relay_file;
  as_err.line = line;
  as_err.func = relay_func;
  as_err.rank = rank;
  as_err.trial = trial;
  snprintf(as_err.message, sizeof as_err.message, "%s", message ? message : "");
  return st;
}

as_status as_error_promote(as_status st) {
  if (as_err.status == AS_OK)
    return as_error_set(st, __FILE__, __LINE__, __func__, "%s", as_status_message(st));
  as_err.status = st;
  return st;
}

void as_error_append(const char *fmt, ...) {
  if (as_err.status == AS_OK) return;
  size_t used = strlen(as_err.message);
  if (used + 1 >= sizeof as_err.message) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(as_err.message + used, sizeof as_err.message - used, fmt, ap);
  va_end(ap);
}

/* A rank and a trial as "[rank R, trial T] " (empty when both are unknown, -1). */
static void format_context(int rank, int64_t trial, char *ctx, size_t len) {
  ctx[0] = '\0';
  if (rank >= 0 && trial >= 0)
    snprintf(ctx, len, "[rank %d, trial %lld] ", rank, (long long)trial);
  else if (rank >= 0)
    snprintf(ctx, len, "[rank %d] ", rank);
  else if (trial >= 0)
    snprintf(ctx, len, "[trial %lld] ", (long long)trial);
}

_Noreturn void as_assert_fail(const char *cond, const char *file, int line, const char *func) {
  char ctx[64];
  format_context(ctx_rank, ctx_trial, ctx, sizeof ctx);
  fprintf(stderr, "%s:%d: %s: %sassertion '%s' failed (internal error: a bug in attnsweep)\n", file,
          line, func, ctx, cond);
  fflush(stderr);
  abort();
}

int as_error_debug(void) {
  const char *v = getenv("ATTNSWEEP_DEBUG");
  return v && v[0] != '\0' && strcmp(v, "0") != 0;
}

void as_error_format_user(char *buf, size_t len) {
  if (len == 0) return;
  if (as_err.status == AS_OK) {
    snprintf(buf, len, "no error");
    return;
  }
  /* A bug needs its place in the code (it is reported to the developers); everything else is
   * the user's to fix, and a source location there is noise. */
  if (as_err.status == AS_ERR_INTERNAL || as_error_debug()) {
    as_error_format(buf, len);
    return;
  }
  /* Rank 0 alone is no information (it is the rank that reports); another rank or a trial is. */
  char ctx[64] = "";
  if (as_err.rank > 0 || as_err.trial >= 0)
    format_context(as_err.rank, as_err.trial, ctx, sizeof ctx);
  snprintf(buf, len, "%s%s", ctx, as_err.message);
}

void as_error_format(char *buf, size_t len) {
  if (len == 0) return;
  if (as_err.status == AS_OK) {
    snprintf(buf, len, "no error");
    return;
  }
  char ctx[64];
  format_context(as_err.rank, as_err.trial, ctx, sizeof ctx);
  snprintf(buf, len, "%s:%d: %s: %s%s (%s)", as_err.file ? as_err.file : "?", as_err.line,
           as_err.func ? as_err.func : "?", ctx, as_err.message, as_status_message(as_err.status));
}
