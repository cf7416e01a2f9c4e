/* linalg_dyn.h (private to core): helpers shared by expm.c, attention.c and the dynamics.
 *
 * as_mm is cblas_dgemm (row-major) for large products and a plain loop for tiny ones, where
 * the BLAS call overhead would dominate (the paper's n = 20, d = 2 runs).
 */
#ifndef AS_LINALG_DYN_H
#define AS_LINALG_DYN_H

#include <stddef.h>

#include "attnsweep/attention.h"
#include "attnsweep/batch.h"
#include "attnsweep/status.h"
#include "linalg.h"

/* C = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n, row-major with leading dims.
 * ta, tb: 0 no transpose, 1 transpose. beta == 0 ignores the old C (even NaN). */
void as_mm(int ta, int tb, int m, int n, int k, double alpha, const double *A, int lda,
           const double *B, int ldb, double beta, double *C, int ldc);

/* as_attention_softmax that also reports, per row, the index of its single nonzero entry
 * (hot[i], or -1 when the row has several); hot has n entries. Returns the one-hot count. */
int as_attention_softmax_hot(int n, int m, const double *S, double logc, double *P, int *hot);

/* Exponents below -AS_EXP_CUT give exactly 0 (e^-708 ~ 3.3e-308 is just above the smallest
 * normal number, so no subnormal weight ever enters the arithmetic), and a row whose gap
 * between its two largest scores times c exceeds AS_EXP_CUT is exactly one-hot. */
#define AS_EXP_CUT 708.0

/* The exponential's polynomial for e^r, |r| <= ln2 / 16, of degree 7: its leading coefficient
 * AS_EXP_POLY_TOP, then the others from degree 6 down to 0 (attention_kernels.h says how they
 * were made; tests/py/test_exp_poly.py recomputes them from that recipe), and the table of
 * 2^(j/8), j = 0..7, each the double nearest to it (the same test checks them). */
#define AS_EXP_POLY_TOP 0.00019841916336532244
#define AS_EXP_POLY                                                                                \
  0.0013889470736831104, 0.008333333330300013, 0.04166666663936666, 0.16666666666666666, 0.5, 1.0, \
      1.0
#define AS_EXP_TABLE                                                                  \
  1.0, 1.0905077326652577, 1.189207115002721, 1.2968395546510096, 1.4142135623730951, \
      1.5422108254079407, 1.681792830507429, 1.8340080864093424

/* e^{p[j]} in place for p[j] <= 0 (exactly 0 below -AS_EXP_CUT; -inf allowed): attention.c's
 * own exponential, the one of as_attention_softmax, so the streaming path uses the same. */
void as_attention_exp_nonpositive(int m, double *p);

/* Test hook (attention.c): the kernels' instruction set from now on, 2 AVX-512F, 1 AVX2 (both
 * with FMA), 0 the baseline, capped by what the CPU has; -1 returns to the automatic choice
 * (the CPU's, capped by ATTNSWEEP_ISA). Returns the set now in use. Not thread-safe: call it
 * while no kernel runs. */
int as_attention_force_isa(int isa);

/* The streaming attention of many tokens (attention_stream.c): H = P Y with P the row softmax
 * of c A G^T (c = exp(logc)), never formed; the rules of as_attention_softmax_hot. A, G, Y,
 * H n x d row-major; hot (n) as for as_attention_softmax_hot (one-hot rows: the column, else
 * -1); ws as_attention_stream_doubles(d) doubles, iws 2 AS_STREAM_TILE ints. Returns the
 * count of one-hot rows. Memory besides the inputs: the workspace only. */
#define AS_STREAM_TILE AS_ATTENTION_STREAM_TILE
size_t as_attention_stream_doubles(int d);
int as_attention_stream(int n, int d, const double *A, const double *G, double logc,
                        const double *Y, double *H, int *hot, double *ws, int *iws);
/* The same for rows [lo, hi) of H and hot only (0 <= lo <= hi <= n; every column): the rows
 * of one rank of a trial spread over several (dynamics.h, as_dyn_set_rows). With lo a
 * multiple of AS_STREAM_TILE (and hi one, or n) each row has the bits of the whole call.
 * Returns the one-hot rows among them. */
int as_attention_stream_rows(int n, int d, int lo, int hi, const double *A, const double *G,
                             double logc, const double *Y, double *H, int *hot, double *ws,
                             int *iws);

/* The attention kernel of small shapes (attention.c): rows of P as vector lanes.
 * Inputs: AT (d x ld) = A^T with A = G M (lanes >= n zero), G and Y (n x d row-major), c
 * finite (the caller handles c = +inf), d <= AS_SMALL_DMAX, ld a multiple of AS_LANES.
 * Outputs: PT (n x ld), PT[j * ld + i] = P_ij (lanes >= n: padding), and H = P Y (n x d). */
#define AS_LANES 8
void as_attention_small(int n, int d, int ld, const double *restrict AT, const double *restrict G,
                        double c, const double *restrict Y, double *restrict PT,
                        double *restrict H);

/* The same kernel with trials as lanes (attention.c): AS_BATCH_LANES trials of one shape
 * (n <= AS_SMALL_NMAX, d <= AS_SMALL_DMAX), lane-interleaved arrays; H = P Y per lane with the
 * bits as_attention_small gives that trial alone. Only H: the batch publishes P through the
 * one-trial kernel at the final state. e: n AS_BATCH_LANES doubles of scratch. */
void as_attention_small_lanes(int n, int d, const double *restrict A, const double *restrict G,
                              const double *restrict c, const double *restrict Y,
                              double *restrict H, double *restrict e);

/* Test hook (dynamics.c): continuous runs use tableau tb (borrowed; it must outlive the runs)
 * whatever their method, until set to NULL; layers are not affected. Lets a test run a
 * tableau that is no method, e.g. dopri5's embedded solution on its own. AS_ERR_ARG for a NULL
 * workspace; a malformed tableau is reported by the next run (AS_ERR_ARG). */
struct as_tableau;
as_status as_dyn_set_tableau(struct as_dyn *w, const struct as_tableau *tb);

#endif
