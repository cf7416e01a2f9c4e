/* The separation gap of an end state's clusters (observe.h, docs/theory.md section 2.12) on
 * configurations whose gap is known exactly: clusters on a line (separable, overlapping, in
 * either label order), three clusters in the plane (the smallest pair gap, by hand), invariance
 * under a rotation and a translation, unresolved tokens left out, and the NaN cases. */
#include <math.h>

#include "as_test.h"
#include "attnsweep/observe.h"

int main(void) {
  /* k = 1: {0, 0.25} and {1, 1.5}: gap 1 - 0.25 = 0.75 over the diameter 1.5, exactly 0.5 */
  {
    double Y[] = {0.0, 0.25, 1.0, 1.5}, c[] = {0.125, 1.25};
    int lab[] = {0, 0, 1, 1};
    AS_EXPECT(as_observe_sep_gap(4, 1, Y, lab, 2, c, 1.5) == 0.5, "line, two clusters");
    /* the labels the other way round: the same gap */
    int lab2[] = {1, 1, 0, 0};
    double c2[] = {1.25, 0.125};
    AS_EXPECT(as_observe_sep_gap(4, 1, Y, lab2, 2, c2, 1.5) == 0.5, "line, labels swapped");
    /* an unresolved token between them is left out */
    double Yu[] = {0.0, 0.25, 0.6, 1.0, 1.5};
    int labu[] = {0, 0, -1, 1, 1};
    AS_EXPECT(as_observe_sep_gap(5, 1, Yu, labu, 2, c, 1.5) == 0.5, "unresolved left out");
  }
  /* overlapping on the line: {0, 3} and {2, 4}: centres 1.5 and 3, gap 2 - 3 = -1, over 4 */
  {
    double Y[] = {0.0, 3.0, 2.0, 4.0}, c[] = {1.5, 3.0};
    int lab[] = {0, 0, 1, 1};
    AS_EXPECT(as_observe_sep_gap(4, 1, Y, lab, 2, c, 4.0) == -0.25, "overlapping clusters");
  }
  /* the plane: A = {(0,0), (0,1)}, B = {(4,0), (4,1)}, C = {(2,4), (2,5)}. A-B along (1,0):
   * 4 - 0 = 4; A-C along (2,4)/sqrt(20): 20/sqrt(20) - 4/sqrt(20) = 16/sqrt(20); B-C along
   * (-2,4)/sqrt(20): 12/sqrt(20) - (-4)/sqrt(20) = 16/sqrt(20). Diameter |(0,0)-(2,5)| =
   * sqrt(29). */
  double Y[] = {0, 0, 0, 1, 4, 0, 4, 1, 2, 4, 2, 5}, c[] = {0, 0.5, 4, 0.5, 2, 4.5};
  int lab[] = {0, 0, 1, 1, 2, 2};
  const double want = 16.0 / sqrt(20.0) / sqrt(29.0);
  AS_EXPECT_CLOSE(as_observe_sep_gap(6, 2, Y, lab, 3, c, sqrt(29.0)), want, 4e-16, 0.0);
  /* rotated by 0.7 rad and shifted by (3, -2): the same gap up to rounding */
  {
    double Yr[12], cr[6], cs = cos(0.7), sn = sin(0.7);
    for (int i = 0; i < 6; i++) {
      Yr[2 * i] = cs * Y[2 * i] - sn * Y[2 * i + 1] + 3.0;
      Yr[2 * i + 1] = sn * Y[2 * i] + cs * Y[2 * i + 1] - 2.0;
    }
    for (int j = 0; j < 3; j++) {
      cr[2 * j] = cs * c[2 * j] - sn * c[2 * j + 1] + 3.0;
      cr[2 * j + 1] = sn * c[2 * j] + cs * c[2 * j + 1] - 2.0;
    }
    AS_EXPECT_CLOSE(as_observe_sep_gap(6, 2, Yr, lab, 3, cr, sqrt(29.0)), want, 1e-14, 0.0);
  }
  /* the same tokens as one cluster, or as too many: NaN; a zero spread, coincident centres,
   * NULL: NaN */
  {
    int one[] = {0, 0, 0, 0, 0, 0};
    AS_EXPECT(isnan(as_observe_sep_gap(6, 2, Y, one, 1, c, 1.0)), "one cluster");
    AS_EXPECT(isnan(as_observe_sep_gap(6, 2, Y, lab, AS_OBSERVE_SEP_MAX + 1, c, 1.0)),
              "too many clusters");
    AS_EXPECT(isnan(as_observe_sep_gap(6, 2, Y, lab, 3, c, 0.0)), "zero spread");
    double same[] = {1, 1, 1, 1, 2, 2};
    AS_EXPECT(isnan(as_observe_sep_gap(6, 2, Y, lab, 3, same, 1.0)), "coincident centres");
    AS_EXPECT(isnan(as_observe_sep_gap(6, 2, NULL, lab, 3, c, 1.0)), "NULL tokens");
  }
  return as_test_finish("test_observe");
}
