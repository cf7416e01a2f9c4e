/* as_test.h: the tiny harness of the C tests. No framework: each check prints where it
 * failed; main returns as_test_finish(), nonzero when any check failed. */
#ifndef AS_TEST_H
#define AS_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int as_test_failures_ = 0;
static int as_test_checks_ = 0;

/* NaN-safe relative-plus-absolute comparison: |a - b| <= atol + rtol * max(|a|, |b|).
 * Two NaNs are not close; infinities are close only to the same infinity. */
static inline int as_close(double a, double b, double rtol, double atol) {
  if (isnan(a) || isnan(b)) return 0;
  if (isinf(a) || isinf(b)) return a == b;
  double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
  return fabs(a - b) <= atol + rtol * scale;
}

#define AS_EXPECT(cond, ...)                                                   \
  do {                                                                         \
    as_test_checks_++;                                                         \
    if (!(cond)) {                                                             \
      as_test_failures_++;                                                     \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define AS_EXPECT_CLOSE(a, b, rtol, atol)                                                        \
  AS_EXPECT(as_close((a), (b), (rtol), (atol)), "%s = %.17g, %s = %.17g (rtol %g, atol %g)", #a, \
            (double)(a), #b, (double)(b), (double)(rtol), (double)(atol))

static inline int as_test_finish(const char *name) {
  if (as_test_checks_ == 0) {
    fprintf(stderr, "%s: no checks ran\n", name);
    return 1;
  }
  printf("%s: %d checks, %d failed\n", name, as_test_checks_, as_test_failures_);
  return as_test_failures_ ? 1 : 0;
}

#endif
