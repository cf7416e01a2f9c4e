/* linalg_dyn.h (private to core): helpers shared by expm.c, attention.c and the dynamics.
 *
 * as_mm is cblas_dgemm (row-major) for large products and a plain loop for tiny ones, where
 * the BLAS call overhead would dominate (the paper's n = 20, d = 2 runs).
 */
#ifndef AS_LINALG_DYN_H
#define AS_LINALG_DYN_H

#include "attnsweep/status.h"
#include "linalg.h"

/* C = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n, row-major with leading dims.
 * ta, tb: 0 no transpose, 1 transpose. beta == 0 ignores the old C (even NaN). */
void as_mm(int ta, int tb, int m, int n, int k, double alpha, const double *A, int lda,
           const double *B, int ldb, double beta, double *C, int ldc);

/* as_attention_softmax that also reports, per row, the index of its single nonzero entry
 * (hot[i], or -1 when the row has several); hot has n entries. Returns the one-hot count. */
int as_attention_softmax_hot(int n, int m, const double *S, double logc, double *P, int *hot);

/* The attention kernel of small shapes (attention.c): rows of P as vector lanes.
 * Inputs: AT (d x ld) = A^T with A = G M (lanes >= n zero), G and Y (n x d row-major), c
 * finite (the caller handles c = +inf), d <= AS_SMALL_DMAX, ld a multiple of AS_LANES.
 * Outputs: PT (n x ld), PT[j * ld + i] = P_ij (lanes >= n: padding), and H = P Y (n x d). */
#define AS_SMALL_DMAX 8
#define AS_LANES 8
void as_attention_small(int n, int d, int ld, const double *restrict AT, const double *restrict G,
                        double c, const double *restrict Y, double *restrict PT,
                        double *restrict H);

/* Test hook (dynamics.c): choose the attention kernel: 1 the small-shape kernel (needs
 * d <= AS_SMALL_DMAX), 0 the general one (BLAS for large products), -1 the automatic choice by
 * shape. AS_ERR_ARG otherwise. */
struct as_dyn;
as_status as_dyn_set_kernel(struct as_dyn *w, int kernel);

/* Test hook (dynamics.c): continuous runs use tableau tb (borrowed; it must outlive the runs)
 * whatever their method, until set to NULL; layers are not affected. Lets a test run a
 * tableau that is no method, e.g. dopri5's embedded solution on its own. AS_ERR_ARG for a NULL
 * workspace; a malformed tableau is reported by the next run (AS_ERR_ARG). */
struct as_tableau;
as_status as_dyn_set_tableau(struct as_dyn *w, const struct as_tableau *tb);

#endif
