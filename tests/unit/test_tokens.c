/* Initial tokens: each kind has its distribution's support and moments, explicit data is
 * copied or refused with a message, and the stream is a pure function of (seed, token key). */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/tokens.h"

static as_trial base(int n, int d, as_init kind, double s) {
  as_trial t;
  as_trial_defaults(&t);
  t.n = n;
  t.d = d;
  t.master_seed = 99;
  t.token_key = 5;
  t.init.kind = kind;
  t.init.scale = s;
  return t;
}

int main(void) {
  enum { N = 500, D = 4 };
  static double X[N * D], Y[N * D];
  /* box: inside [-s, s), mean 0 and variance s^2/3 within 6 sigma */
  as_trial t = base(N, D, AS_INIT_BOX, 5);
  AS_EXPECT(as_tokens_init(&t, X) == AS_OK, "box");
  double mean = 0, var = 0;
  int inside = 1;
  for (int k = 0; k < N * D; k++) {
    inside &= X[k] >= -5 && X[k] < 5;
    mean += X[k];
    var += X[k] * X[k];
  }
  mean /= N * D;
  var /= N * D;
  AS_EXPECT(inside, "box support");
  AS_EXPECT(fabs(mean) < 6 * 5 / sqrt(3.0 * N * D), "box mean %g", mean);
  AS_EXPECT(fabs(var / (25.0 / 3) - 1) < 6 * sqrt(0.8 / (N * D)), "box variance %g", var);
  /* gauss: variance s^2 */
  t = base(N, D, AS_INIT_GAUSS, 2);
  AS_EXPECT(as_tokens_init(&t, X) == AS_OK, "gauss");
  var = 0;
  for (int k = 0; k < N * D; k++) var += X[k] * X[k];
  var /= N * D;
  AS_EXPECT(fabs(var / 4 - 1) < 6 * sqrt(2.0 / (N * D)), "gauss variance %g", var);
  /* sphere: every norm is s, the mean direction is ~0 */
  t = base(N, D, AS_INIT_SPHERE, 3);
  AS_EXPECT(as_tokens_init(&t, X) == AS_OK, "sphere");
  double worst = 0, m0 = 0;
  for (int i = 0; i < N; i++) {
    double r = 0;
    for (int j = 0; j < D; j++) r += X[i * D + j] * X[i * D + j];
    worst = fmax(worst, fabs(sqrt(r) - 3));
    m0 += X[i * D];
  }
  AS_EXPECT(worst < 1e-14, "norms %g", worst);
  AS_EXPECT(fabs(m0 / N) < 6 * 3 / sqrt((double)D * N), "sphere mean %g", m0 / N);
  /* reproducible; a larger n extends a smaller one; another key differs */
  AS_EXPECT(as_tokens_init(&t, Y) == AS_OK && memcmp(X, Y, sizeof X) == 0, "same stream");
  t.n = 10;
  AS_EXPECT(as_tokens_init(&t, Y) == AS_OK && memcmp(X, Y, 10 * D * sizeof(double)) == 0, "prefix");
  t.token_key = 6;
  AS_EXPECT(as_tokens_init(&t, Y) == AS_OK && memcmp(X, Y, 10 * D * sizeof(double)) != 0,
            "other key");
  /* explicit and file kinds copy; NaN, missing data, bad scales are bad data */
  const double E[6] = {1, 2, 3, 4, 5, 6};
  t = base(3, 2, AS_INIT_EXPLICIT, 1);
  t.init.data.data = E;
  AS_EXPECT(as_tokens_init(&t, Y) == AS_OK && memcmp(Y, E, sizeof E) == 0, "explicit");
  const double B[6] = {1, 2, 3, NAN, 5, 6};
  t.init.data.data = B;
  as_error_clear();
  AS_EXPECT(as_tokens_init(&t, Y) == AS_ERR_DATA, "NaN token");
  AS_EXPECT(strstr(as_error_get()->message, "token 1, coordinate 1") != NULL, "%s",
            as_error_get()->message);
  t.init.kind = AS_INIT_FILE;
  t.init.data.data = NULL;
  t.init.file.text = "tokens.h5";
  t.init.dataset.text = "start";
  as_error_clear();
  AS_EXPECT(as_tokens_init(&t, Y) == AS_ERR_DATA, "no data");
  AS_EXPECT(strstr(as_error_get()->message, "tokens.h5") &&
                strstr(as_error_get()->message, "start"),
            "%s", as_error_get()->message);
  t = base(3, 2, AS_INIT_BOX, -1);
  as_error_clear();
  AS_EXPECT(as_tokens_init(&t, Y) == AS_ERR_DATA && strstr(as_error_get()->message, "scale"),
            "negative scale");
  as_error_clear();
  return as_test_finish("test_tokens");
}
