/* Status list and the core checking macros. */
#include <string.h>

#include "as_test.h"
#include "attnsweep/status.h"

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

int main(void) {
  /* Every status has a distinct message, a name, and an exit code from the contract. */
  const as_status all[] = {
#define X(name, value, code, msg) name,
      AS_STATUS_LIST(X)
#undef X
  };
  size_t n = sizeof all / sizeof all[0];
  for (size_t i = 0; i < n; i++) {
    AS_EXPECT(all[i] <= 0, "status %d is positive", (int)all[i]);
    AS_EXPECT(strcmp(as_status_message(all[i]), "unknown status") != 0, "no message");
    int code = as_status_exit_code(all[i]);
    AS_EXPECT(code == 0 || code == 2 || code == 3 || code == 99, "exit code %d", code);
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

  /* LAPACK: info < 0 is an error naming the argument, info > 0 passes to the caller. */
  as_error_clear();
  AS_EXPECT(lapack_info(0) == AS_OK, "info 0");
  AS_EXPECT(lapack_info(3) == AS_OK, "info > 0 is an outcome for the caller");
  AS_EXPECT(lapack_info(-4) == AS_ERR_LAPACK, "info < 0 is an error");
  AS_EXPECT(strstr(as_error_get()->message, "dgeev") && strstr(as_error_get()->message, "4"),
            "message %s", as_error_get()->message);
  as_error_clear();
  AS_EXPECT(as_error_get()->status == AS_OK, "cleared");
  return as_test_finish("test_status");
}
