/* Status list, the core checking macros, LAPACK illegal arguments and AS_ASSERT. */
#undef NDEBUG /* AS_ASSERT is tested in its active form */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "as_test.h"
#include "attnsweep/status.h"
#include "linalg.h"

static as_status fails_alloc(void) {
  as_status st = AS_OK;
  double *p = NULL;
  AS_CHECK_ALLOC(p);
cleanup:
  return st;
}

static int cleaned = 0;
static as_status propagates(void) {
  as_status st = AS_OK;
  AS_TRY(fails_alloc());
  st = AS_ERR_INTERNAL; /* not reached */
cleanup:
  cleaned = 1;
  return st;
}

static as_status lapack_info(int info) {
  as_status st = AS_OK;
  AS_LAPACK_CHECK("dgeev", info);
cleanup:
  return st;
}

/* A real LAPACK call with an illegal argument (lda < n): LAPACK reports it as info = -4. */
static as_status lapack_illegal(void) {
  as_status st = AS_OK;
  int n = 2, nrhs = 1, lda = 1, ldb = 2, info = 0, ipiv[2];
  double a[4] = {1, 0, 0, 1}, b[2] = {1, 1};
  dgesv_(&n, &nrhs, a, &lda, ipiv, b, &ldb, &info);
  AS_LAPACK_CHECK("dgesv", info);
cleanup:
  return st;
}

/* Runs AS_ASSERT(value == 1) in a child; returns its wait status and what it printed. */
static int assert_in_child(int value, char *out, size_t len) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    as_error_context_set(5, 42);
    AS_ASSERT(value == 1);
    _exit(0);
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t k;
  while (got + 1 < len && (k = read(fds[0], out + got, len - 1 - got)) > 0) got += (size_t)k;
  out[got] = '\0';
  close(fds[0]);
  int ws = 0;
  waitpid(pid, &ws, 0);
  return ws;
}

int main(void) {
  /* Every status has a distinct message, a name, and an exit code from the contract. */
  const as_status all[] = {
#define X(name, value, code, trial, msg) name,
      AS_STATUS_LIST(X)
#undef X
  };
  size_t n = sizeof all / sizeof all[0];
  for (size_t i = 0; i < n; i++) {
    AS_EXPECT(all[i] <= 0, "status %d is positive", (int)all[i]);
    AS_EXPECT(strcmp(as_status_message(all[i]), "unknown status") != 0, "no message");
    int code = as_status_exit_code(all[i]);
    AS_EXPECT(code == 0 || code == 2 || code == 3 || code == AS_EXIT_INTERNAL || code == 99,
              "exit code %d", code);
    for (size_t j = 0; j < i; j++) {
      AS_EXPECT(all[i] != all[j], "duplicate value %d", (int)all[i]);
      AS_EXPECT(strcmp(as_status_message(all[i]), as_status_message(all[j])) != 0,
                "duplicate message %s", as_status_message(all[i]));
    }
  }
  AS_EXPECT(as_status_exit_code(AS_OK) == 0, "ok exits 0");
  AS_EXPECT(as_status_exit_code(AS_ERR_SPEC) == 2, "bad spec exits 2");
  AS_EXPECT(as_status_exit_code(AS_ERR_IO) == 3, "I/O failure exits 3");
  AS_EXPECT(as_status_exit_code(AS_ERR_INTERRUPTED) == 99, "interrupted exits 99");
  AS_EXPECT(as_status_exit_code(AS_ERR_INTERNAL) == 70, "internal error exits 70 (EX_SOFTWARE)");
  /* What a trial records (its data) and what stops the run (bugs, the machine). */
  AS_EXPECT(as_status_is_trial_problem(AS_ERR_DATA) && as_status_is_trial_problem(AS_ERR_SPEC) &&
                as_status_is_trial_problem(AS_ERR_LAPACK) &&
                as_status_is_trial_problem(AS_ERR_UNSUPPORTED),
            "data, spec values, LAPACK non-convergence are the trial's");
  AS_EXPECT(!as_status_is_trial_problem(AS_OK) && !as_status_is_trial_problem(AS_ERR_INTERNAL) &&
                !as_status_is_trial_problem(AS_ERR_ARG) &&
                !as_status_is_trial_problem(AS_ERR_NOMEM) &&
                !as_status_is_trial_problem(AS_ERR_HDF5) &&
                !as_status_is_trial_problem(AS_ERR_INTERRUPTED),
            "bugs and machine failures stop the run");
  AS_EXPECT(strcmp(as_status_name(AS_ERR_NOMEM), "AS_ERR_NOMEM") == 0, "name");
  AS_EXPECT(strcmp(as_status_message((as_status)-1000), "unknown status") == 0, "unknown");

  /* The first (deepest) failure is kept: file, line and function of the allocation check. */
  as_error_clear();
  as_error_context_set(3, 17);
  as_status st = propagates();
  AS_EXPECT(st == AS_ERR_NOMEM, "propagated status %d", (int)st);
  AS_EXPECT(cleaned == 1, "cleanup ran");
  const as_error *e = as_error_get();
  AS_EXPECT(e->status == AS_ERR_NOMEM, "recorded status");
  AS_EXPECT(e->func && strcmp(e->func, "fails_alloc") == 0, "function %s", e->func);
  AS_EXPECT(e->file && strstr(e->file, "test_status.c") != NULL, "file %s", e->file);
  AS_EXPECT(e->line > 0, "line");
  char buf[AS_ERRMSG_MAX + 200];
  as_error_format(buf, sizeof buf);
  AS_EXPECT(strstr(buf, "rank 3") && strstr(buf, "trial 17") && strstr(buf, "fails_alloc") &&
                strstr(buf, "out of memory"),
            "formatted: %s", buf);

  /* LAPACK: info < 0 is a bug naming the argument (internal), info > 0 passes to the caller. */
  as_error_clear();
  AS_EXPECT(lapack_info(0) == AS_OK, "info 0");
  AS_EXPECT(lapack_info(3) == AS_OK, "info > 0 is an outcome for the caller");
  AS_EXPECT(lapack_info(-4) == AS_ERR_INTERNAL, "info < 0 is an internal error");
  AS_EXPECT(strstr(as_error_get()->message, "dgeev") && strstr(as_error_get()->message, "4"),
            "message %s", as_error_get()->message);
  as_error_clear();
  AS_EXPECT(as_error_get()->status == AS_OK, "cleared");
  /* The same from a real call: LAPACK itself finds the illegal argument (lda = 1 < n = 2). */
  st = lapack_illegal();
  AS_EXPECT(st == AS_ERR_INTERNAL && as_error_get()->status == AS_ERR_INTERNAL,
            "dgesv with lda < n: status %d", (int)st);
  AS_EXPECT(strstr(as_error_get()->message, "dgesv: argument 4 had an illegal value") &&
                as_status_exit_code(st) == AS_EXIT_INTERNAL,
            "message %s", as_error_get()->message);
  as_error_format(buf, sizeof buf);
  AS_EXPECT(strstr(buf, "test_status.c:") && strstr(buf, "lapack_illegal"), "where: %s", buf);

  /* Promote keeps the place, changes the class; append adds context. */
  as_error_clear();
  as_error_set(AS_ERR_ARG, "f.c", 7, "g", "bad n");
  AS_EXPECT(as_error_promote(AS_ERR_INTERNAL) == AS_ERR_INTERNAL, "promoted");
  as_error_append("; trial %d", 9);
  e = as_error_get();
  AS_EXPECT(e->status == AS_ERR_INTERNAL && e->line == 7 && strcmp(e->file, "f.c") == 0 &&
                strcmp(e->message, "bad n; trial 9") == 0,
            "promoted %d %s:%d %s", (int)e->status, e->file, e->line, e->message);
  as_error_clear();
  as_error_append("nothing recorded");
  AS_EXPECT(as_error_get()->message[0] == '\0', "append needs a recorded error");
  AS_EXPECT(as_error_promote(AS_ERR_INTERNAL) == AS_ERR_INTERNAL &&
                as_error_get()->status == AS_ERR_INTERNAL,
            "promote without a record records");
  as_error_clear();

  /* AS_ASSERT: silent when it holds, file:line:function and abort when it does not. */
  char out[1024];
  int ws = assert_in_child(1, out, sizeof out);
  AS_EXPECT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && out[0] == '\0', "holding assertion: %s", out);
  ws = assert_in_child(0, out, sizeof out);
  AS_EXPECT(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT, "failed assertion aborts (status %d)", ws);
  AS_EXPECT(strstr(out, "test_status.c:") && strstr(out, "assert_in_child") &&
                strstr(out, "assertion 'value == 1' failed") && strstr(out, "rank 5, trial 42"),
            "message: %s", out);
  return as_test_finish("test_status");
}
