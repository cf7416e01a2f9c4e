/* The softmax with the temperature factored out: exact values, saturation, ties, no NaN. */
#include <math.h>

#include "as_test.h"
#include "attnsweep/attention.h"
#include "attnsweep/rng.h"

int main(void) {
  double P[64];
  /* Moderate scores: the direct formula. */
  {
    double S[6] = {0.1, -0.4, 0.3, 2.0, 2.0, -1.0};
    double logc = log(1.7);
    int oh = as_attention_softmax(2, 3, S, logc, P);
    AS_EXPECT(oh == 0, "no one-hot rows (%d)", oh);
    for (int i = 0; i < 2; i++) {
      double z = 0.0;
      for (int j = 0; j < 3; j++) z += exp(1.7 * S[i * 3 + j]);
      for (int j = 0; j < 3; j++)
        AS_EXPECT_CLOSE(P[i * 3 + j], exp(1.7 * S[i * 3 + j]) / z, 1e-15, 0);
    }
    /* Exact tie at the maximum: equal shares, bit for bit. */
    AS_EXPECT(P[3] == P[4], "tie split equally: %.17g vs %.17g", P[3], P[4]);
  }
  /* Scores that would overflow a naive softmax: c = e^{2000}. */
  {
    double S[4] = {0.5, 0.25, 0.25, 0.5000001};
    int oh = as_attention_softmax(2, 2, S, 2000.0, P);
    AS_EXPECT(oh == 2, "both rows one-hot (%d)", oh);
    AS_EXPECT(P[0] == 1.0 && P[1] == 0.0 && P[2] == 0.0 && P[3] == 1.0, "hardmax rows %g %g %g %g",
              P[0], P[1], P[2], P[3]);
  }
  /* Infinite temperature with ties: equal shares, no NaN (0 * inf). */
  {
    double S[3] = {0.7, 0.7, -0.2};
    int oh = as_attention_softmax(1, 3, S, INFINITY, P);
    AS_EXPECT(oh == 0, "tied row is not one-hot");
    AS_EXPECT(P[0] == 0.5 && P[1] == 0.5 && P[2] == 0.0, "tie: %g %g %g", P[0], P[1], P[2]);
  }
  /* Saturation threshold: gap * c just above 708 is one-hot, below is not. */
  {
    double S[2] = {1.0, 0.0};
    AS_EXPECT(as_attention_softmax(1, 2, S, log(708.5), P) == 1 && P[1] == 0.0, "saturated");
    AS_EXPECT(as_attention_softmax(1, 2, S, log(700.0), P) == 0 && P[1] > 0.0, "not saturated");
    AS_EXPECT_CLOSE(P[1], exp(-700.0) / (1 + exp(-700.0)), 1e-12, 0);
  }
  /* Zero temperature (logc = -inf): uniform rows. */
  {
    double S[3] = {5.0, -3.0, 1.0};
    as_attention_softmax(1, 3, S, -INFINITY, P);
    for (int j = 0; j < 3; j++) AS_EXPECT_CLOSE(P[j], 1.0 / 3.0, 1e-15, 0);
  }
  /* Random finite scores at any temperature: finite, rows sum to 1, in place works. */
  {
    as_rng r;
    as_rng_init(&r, 3, 0, 99);
    double S[64];
    const double logcs[] = {-800.0, -5.0, 0.0, 3.0, 30.0, 700.0, 710.0, 1e6, INFINITY};
    for (unsigned k = 0; k < sizeof logcs / sizeof logcs[0]; k++) {
      as_rng_fill_uniform(&r, S, 64, -1.0, 1.0);
      S[5] = S[6]; /* a tie */
      int oh = as_attention_softmax(8, 8, S, logcs[k], S);
      int bad = 0;
      for (int i = 0; i < 8; i++) {
        double sum = 0.0;
        for (int j = 0; j < 8; j++) {
          bad += !isfinite(S[i * 8 + j]) || S[i * 8 + j] < 0.0;
          sum += S[i * 8 + j];
        }
        AS_EXPECT_CLOSE(sum, 1.0, 1e-14, 0);
      }
      AS_EXPECT(bad == 0, "logc %g: %d bad entries", logcs[k], bad);
      AS_EXPECT(oh >= 0 && oh <= 8, "count %d", oh);
      if (logcs[k] >= 1e6) AS_EXPECT(oh >= 7, "hardmax rows at logc %g: %d", logcs[k], oh);
    }
  }
  /* One column: always one-hot. */
  {
    double S[2] = {3.0, -1e300};
    AS_EXPECT(as_attention_softmax(2, 1, S, 1e9, P) == 2 && P[0] == 1.0 && P[1] == 1.0, "m = 1");
  }
  return as_test_finish("test_attention");
}
