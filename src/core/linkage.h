/* linkage.h (private to core): the two steps of single linkage that the classifier (classify.c)
 * and the cluster count along a run (meta.c) share. */
#ifndef AS_LINKAGE_H
#define AS_LINKAGE_H

#include <math.h>
#include <signal.h>
#include <stddef.h>

/* Squared Euclidean distance of a and b (k entries). */
static inline double as_dist2(const double *a, const double *b, int k) {
  if (k == 2) { /* the same sum: 0 + x^2 is x^2 exactly */
    double x = a[0] - b[0], y = a[1] - b[1];
    return x * x + y * y;
  }
  double s = 0.0;
  for (int c = 0; c < k; c++) s += (a[c] - b[c]) * (a[c] - b[c]);
  return s;
}

/* Root of i in the union-find forest parent, halving the path on the way. */
static inline int as_find_root(int *parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

/* Diameter of the n rows of Y (n x k); returns early (a value the caller then discards) once
 * *stop is set (stop NULL: never). */
static inline double as_diameter(const double *Y, int n, int k, const volatile sig_atomic_t *stop) {
  double best = 0.0;
  for (int i = 0; i < n && !(stop && *stop); i++)
    for (int j = i + 1; j < n; j++) {
      double s = as_dist2(Y + (size_t)i * k, Y + (size_t)j * k, k);
      if (s > best) best = s;
    }
  return sqrt(best);
}

#endif /* AS_LINKAGE_H */
