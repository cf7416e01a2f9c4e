/* linalg_dyn.h (private to core): helpers shared by expm.c, attention.c and the dynamics.
 *
 * as_mm is cblas_dgemm (row-major) for large products and a plain loop for tiny ones, where
 * the BLAS call overhead would dominate (the paper's n = 20, d = 2 runs).
 */
#ifndef AS_LINALG_DYN_H
#define AS_LINALG_DYN_H

#include "linalg.h"

/* C = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n, row-major with leading dims.
 * ta, tb: 0 no transpose, 1 transpose. beta == 0 ignores the old C (even NaN). */
void as_mm(int ta, int tb, int m, int n, int k, double alpha, const double *A, int lda,
           const double *B, int ldb, double beta, double *C, int ldc);

/* as_attention_softmax that also reports, per row, the index of its single nonzero entry
 * (hot[i], or -1 when the row has several); hot has n entries. Returns the one-hot count. */
int as_attention_softmax_hot(int n, int m, const double *S, double logc, double *P, int *hot);

#endif
