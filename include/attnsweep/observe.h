/* attnsweep/observe.h: observables of the end state that the referees' questions need beyond
 * the classifier's (docs/theory.md, "Linear separability of the limit").
 *
 * Everything here is pure: no MPI, no files, nothing kept between calls. Not collective.
 */
#ifndef ATTNSWEEP_OBSERVE_H
#define ATTNSWEEP_OBSERVE_H

/* Above this many clusters the separation gap is not computed (NaN): its cost is
 * m (m - 1) / 2 passes over the n tokens. */
#define AS_OBSERVE_SEP_MAX 64

/* The separation gap of the clusters of an end state, relative to its diameter:
 *     min over cluster pairs a < b of  (min_{j in b} <y_j, u> - max_{i in a} <y_i, u>) / spread,
 *     u = (c_b - c_a) / |c_b - c_a|,
 * over the rows y_i of Y (n x k, row-major) with label[i] = a or b (label -1: unresolved,
 * left out); c (m x k) the cluster centres, spread > 0 the diameter of Y. A positive gap
 * certifies that every pair of clusters is strictly linearly separable (the hyperplane normal
 * to u through the middle of the gap separates them) and is a lower bound of the width of the
 * widest separating slab of each pair, over the spread. NaN when m < 2, m > AS_OBSERVE_SEP_MAX,
 * two centres coincide, spread is not > 0, or an argument is NULL. */
double as_observe_sep_gap(int n, int k, const double *Y, const int *label, int m, const double *c,
                          double spread);

#endif
