/* attnsweep/measure.h: observables of the empirical measure of a trial's tokens (measure.c,
 * hull.c for the vertex count; docs/meanfield.md says what each is for).
 *
 * The empirical measure of n tokens Y_1..Y_n (rows of an n x k array, the classified
 * coordinates of classify.h: z itself for V = I) is mu_n = (1/n) sum_i delta_{Y_i}. Once the
 * classifier has grouped the settled tokens into clusters C_1..C_m (centres c_j, sizes |C_j|),
 * the CLUSTER MEASURE of the end state is
 *     nu = sum_j w_j delta_{c_j},   w_j = |C_j| / sum_l |C_l|
 * (normalised over the settled tokens; the unresolved fraction is n_unresolved / n of the
 * record). W1(mu_n, nu / its mass) is at most the largest distance of a settled token to its
 * centre plus the unresolved fraction times the diameter, so for a resolved end state the
 * distance between two cluster measures is that of the empirical measures up to the cluster
 * tolerances.
 *
 * Everything here is pure: no MPI, no files, nothing kept between calls. Not collective.
 */
#ifndef ATTNSWEEP_MEASURE_H
#define ATTNSWEEP_MEASURE_H

#include "attnsweep/status.h"

/* How many cluster masses the record holds (mass_1..mass_8, then mass_rest: record.h). */
#define AS_MEASURE_K 8

/* Cluster masses, sorted: sizes[0..m-1] (cluster sizes, >= 0) over n tokens (n >= 1).
 * masses[0..K-1] = the K largest |C_j| / n in descending order, 0 for j >= m;
 * *rest = 1 - sum of those = the mass of the smaller clusters and of the unresolved tokens
 * (formed as (n - sum of the K largest sizes) / n, so masses + rest is 1 up to one rounding
 * per term). scratch: m ints (the sorted sizes). AS_ERR_ARG for NULL, n < 1, m < 0 or sizes
 * summing beyond n. */
as_status as_measure_masses(int n, int m, const int *sizes, int K, double *masses, double *rest,
                            int *scratch);

/* W1 (1-Wasserstein, Euclidean ground distance) between the discrete probability measures
 * sum_i a_i delta_{A_i} and sum_j b_j delta_{B_j}: A (ma x k), B (mb x k) row-major, weights
 * a (ma), b (mb) >= 0, each normalised here by its own sum (which must be > 0).
 * k = 1: closed form, integral of |F_a - F_b| over the line (sorted merge of the atoms).
 * k >= 2: the transport LP  min sum_ij |A_i - B_j| p_ij,  sum_j p_ij = a_i,  sum_i p_ij = b_j,
 *         p >= 0, solved by GLPK's simplex (floating point: the optimum to its feasibility
 *         tolerance, about 1e-7 relative to the largest cost).
 * Statuses: AS_ERR_ARG (NULL, sizes < 1, negative or zero-sum weights), AS_ERR_DATA
 * (non-finite coordinates), AS_ERR_NOMEM, AS_ERR_INTERNAL (GLPK did not reach an optimum,
 * impossible for a balanced transport problem). Allocates (ma mb + ma + mb) entries per call. */
as_status as_measure_w1(int k, int ma, const double *A, const double *a, int mb, const double *B,
                        const double *b, double *w1);

#endif /* ATTNSWEEP_MEASURE_H */
