/* Memory of a trial (issue 17, point 4): the workspace estimate is dominated by what the
 * method needs (two n x n matrices, S and P, for the dense attention at moderate n; an
 * n x n copy of P for the classifier's SVD up to AS_CLASSIFY_SVD_NMAX), and a trial whose
 * workspaces cannot be allocated is that trial's recorded failure: the same pipeline then
 * runs the next trial normally. */
#include <string.h>

#include "as_test.h"
#include "attnsweep/classify.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/pipeline.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AS_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define AS_TEST_ASAN 1
#endif

#ifndef AS_TEST_ASAN
/* Allocations of 64 MiB or more fail while big_fail is set (glibc's own allocator behind the
 * interposed malloc and calloc), as they would on a machine without that memory. */
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
static int big_fail = 0;
#define BIG ((size_t)64 << 20)
void *malloc(size_t n) {
  return big_fail && n >= BIG ? NULL : __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  return big_fail && b != 0 && a >= BIG / b ? NULL : __libc_calloc(a, b);
}
#endif

static as_trial small_trial(uint64_t index, int n, int d) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = index;
  t.master_seed = 7;
  t.token_key = index;
  t.triple_key = index;
  t.n = n;
  t.d = d;
  t.integ.T = 1.0;
  return t;
}

int main(void) {
  /* Dense attention: S and P (2 n^2 doubles) and not much more at n = 4000, d = 2. */
  const double n = 4000.0, nn8 = 8.0 * n * n;
  const double dyn = as_dyn_bytes(4000, 2), all = as_pipeline_bytes(4000, 2, 2);
  AS_EXPECT(dyn >= 2.0 * nn8 && dyn <= 2.05 * nn8, "dynamics %g bytes for 2 n^2 = %g", dyn,
            2.0 * nn8);
  AS_EXPECT(all >= dyn + as_classify_ws_bytes(4000, 2) && all <= 2.1 * nn8, "pipeline %g", all);
  /* The classifier: an n x n copy of P up to the SVD limit, O(n) above it. */
  const int lim = AS_CLASSIFY_SVD_NMAX;
  AS_EXPECT(as_classify_ws_bytes(lim, 2) >= 8.0 * lim * lim, "SVD copy at n = %d", lim);
  AS_EXPECT(as_classify_ws_bytes(8 * lim, 2) < 8.0 * (8.0 * lim) * (8.0 * lim) / 4.0,
            "no n x n copy above the limit: %g", as_classify_ws_bytes(8 * lim, 2));
  /* The small-shape kernel's P^T is allocated only where that kernel runs. */
  AS_EXPECT(as_dyn_bytes(20, 2) < 8.0 * 20 * (7 + 16) * 2 + 3.0 * 8 * 400 + 4096, "n = 20: %g",
            as_dyn_bytes(20, 2));

  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "create");
  if (!pl) return as_test_finish("test_pipeline_memory");
  as_record rec;
#ifndef AS_TEST_ASAN
  /* n = 4000 (dense): S and P are 128 MB each; the allocator refuses them. Under ASan the
   * interposed allocator is not used (ASan has its own), so the check is left to the normal build.
   */
  as_trial huge = small_trial(3, 4000, 2);
  big_fail = 1;
  as_status st = as_trial_run(pl, &huge, NULL, &rec, NULL);
  big_fail = 0;
  AS_EXPECT(st == AS_OK, "a shape that does not fit is no error of the run: %s",
            as_status_name(st));
  AS_EXPECT(rec.outcome == AS_OUT_FAILED && strstr(rec.message, "allocation failed") &&
                strstr(rec.message, "trial 3"),
            "recorded failure: outcome %d, message '%s'", (int)rec.outcome, rec.message);
#endif
  as_trial ok = small_trial(4, 20, 2);
  AS_EXPECT(as_trial_run(pl, &ok, NULL, &rec, NULL) == AS_OK, "next trial");
  AS_EXPECT(rec.outcome == AS_OUT_REACHED_T, "next trial runs: outcome %d", (int)rec.outcome);
  as_pipeline_destroy(&pl);
  return as_test_finish("test_pipeline_memory");
}
