/* observe.c: observables of the end state for the referees' questions (observe.h). */
#include "attnsweep/observe.h"

#include <math.h>
#include <stddef.h>

double as_observe_sep_gap(int n, int k, const double *Y, const int *label, int m, const double *c,
                          double spread) {
  if (!Y || !label || !c || n < 2 || k < 1 || m < 2 || m > AS_OBSERVE_SEP_MAX || !(spread > 0.0))
    return NAN;
  double gap = INFINITY;
  for (int a = 0; a < m; a++)
    for (int b = a + 1; b < m; b++) {
      const double *ca = c + (size_t)a * k, *cb = c + (size_t)b * k;
      double nu = 0.0;
      for (int e = 0; e < k; e++) nu += (cb[e] - ca[e]) * (cb[e] - ca[e]);
      nu = sqrt(nu);
      if (!(nu > 0.0)) return NAN;
      /* the projections of the members of a and b on u = (c_b - c_a) / |c_b - c_a| */
      double hi_a = -INFINITY, lo_b = INFINITY;
      for (int i = 0; i < n; i++) {
        if (label[i] != a && label[i] != b) continue;
        const double *y = Y + (size_t)i * k;
        double s = 0.0;
        for (int e = 0; e < k; e++) s += y[e] * (cb[e] - ca[e]);
        s /= nu;
        if (label[i] == a)
          hi_a = fmax(hi_a, s);
        else
          lo_b = fmin(lo_b, s);
      }
      if (!isfinite(hi_a) || !isfinite(lo_b)) return NAN; /* an empty cluster */
      gap = fmin(gap, lo_b - hi_a);
    }
  return gap / spread;
}
