/* Philox streams: determinism, independence of keys, and the moments of the distributions. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/rng.h"

int main(void) {
  enum { N = 200000 };
  static double a[N], b[N];
  as_rng r, s;

  /* The same key gives the same numbers, whatever was drawn from other streams before. */
  as_rng_init(&r, 42, 7, 2);
  as_rng_fill_uniform(&r, a, N, 0.0, 1.0);
  as_rng_init(&s, 42, 8, 2);
  for (int i = 0; i < 1000; i++) (void)as_rng_u32(&s);
  as_rng_init(&s, 42, 7, 2);
  as_rng_fill_uniform(&s, b, N, 0.0, 1.0);
  AS_EXPECT(memcmp(a, b, sizeof a) == 0, "same key, same stream");

  /* Any change of seed, index or purpose changes the stream. */
  const uint64_t keys[3][3] = {{43, 7, 2}, {42, 7ull + (1ull << 32), 2}, {42, 7, 3}};
  for (int k = 0; k < 3; k++) {
    as_rng_init(&s, keys[k][0], keys[k][1], (uint32_t)keys[k][2]);
    as_rng_fill_uniform(&s, b, 16, 0.0, 1.0);
    int same = 0;
    for (int i = 0; i < 16; i++) same += a[i] == b[i];
    AS_EXPECT(same == 0, "key variant %d shares %d of 16 values", k, same);
  }

  /* Uniform: range, mean 1/2 and variance 1/12 within 5 standard errors. */
  double m = 0, v = 0, lo = 1, hi = 0;
  for (int i = 0; i < N; i++) {
    m += a[i];
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
  }
  m /= N;
  for (int i = 0; i < N; i++) v += (a[i] - m) * (a[i] - m);
  v /= N - 1;
  AS_EXPECT(lo >= 0.0 && hi < 1.0, "range [%g, %g]", lo, hi);
  AS_EXPECT(fabs(m - 0.5) < 5 * sqrt(1.0 / 12 / N), "uniform mean %g", m);
  AS_EXPECT(fabs(v - 1.0 / 12) < 5 * sqrt(1.0 / 180 / N), "uniform variance %g", v);

  /* Normal: mean 0, variance 1, fourth moment 3 within 5 standard errors. */
  as_rng_init(&r, 1, 1, 99);
  as_rng_fill_normal(&r, a, N, 1.0);
  double m1 = 0, m2 = 0, m4 = 0;
  for (int i = 0; i < N; i++) {
    m1 += a[i];
    m2 += a[i] * a[i];
    m4 += a[i] * a[i] * a[i] * a[i];
  }
  m1 /= N;
  m2 /= N;
  m4 /= N;
  AS_EXPECT(fabs(m1) < 5 / sqrt((double)N), "normal mean %g", m1);
  AS_EXPECT(fabs(m2 - 1) < 5 * sqrt(2.0 / N), "normal variance %g", m2);
  AS_EXPECT(fabs(m4 - 3) < 5 * sqrt(96.0 / N), "normal 4th moment %g", m4);
  return as_test_finish("test_rng");
}
