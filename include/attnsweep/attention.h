/* attnsweep/attention.h: the attention softmax with the temperature factored out (attention.c).
 *
 * The dynamics (dynamics.h) forms scores as S = c S~ with S~ bounded and the temperature c,
 * which grows like e^{2 mu t}, kept apart as logc = log c (it may exceed the range of a
 * double). The softmax here takes (S~, logc), so it never overflows: it subtracts each row's
 * maximum, an entry with c (max - s) > 708 is exactly 0 (e^-708 is just above the smallest
 * normal double: no subnormal weight is ever formed), a row whose gap to its second largest
 * entry times c exceeds 708 is an exact one-hot row, and exact ties at the maximum share the
 * row equally.
 *
 * The exponential is attention.c's own polynomial, not libm's: within 2 ulp, vectorised, and
 * the same bits on every machine and in every instruction-set version (each FMA is an explicit,
 * correctly rounded fma; nothing else is contracted), so a trial's record does not depend on
 * where it runs.
 * The dynamics' own kernels (the one-hot index per row, the small-shape kernel) are private
 * to the core (src/core/linalg_dyn.h).
 * Nothing here allocates; nothing is collective; safe to call from several threads.
 */
#ifndef ATTNSWEEP_ATTENTION_H
#define ATTNSWEEP_ATTENTION_H

#include <stddef.h>

/* Above this many tokens the dynamics streams the attention (attention_stream.c): the n x n
 * scores and P are never formed (memory O(n d)); what needs the whole final P (the bulk
 * `attention` output, rank_p, the distances of P, leaders, the d1 verdict) is refused or not
 * computed for such trials (docs/theory.md, "Many tokens"). */
#define AS_ATTENTION_STREAM_N 4096
#define AS_ATTENTION_STREAM_TILE 256 /* rows and columns of one tile of streamed scores */

/* P = row softmax of c * S, c = exp(logc).
 *   n, m   rows and columns (n >= 0, m >= 1);
 *   S      n x m row-major scores, finite entries (borrowed);
 *   logc   log of the temperature: any double; +inf means pure hardmax (every row one-hot,
 *          or shared equally among tied maxima), -inf gives uniform rows;
 *   P      n x m row-major output; may alias S (each row is read before it is written).
 * Returns the number of rows of P that are exactly one-hot. For finite S every entry of P is
 * finite and in [0, 1] and every row sums to 1 (to rounding). Deterministic: the same inputs
 * give the same bits. No status: the arguments are the caller's contract (not checked). */
int as_attention_softmax(int n, int m, const double *S, double logc, double *P);

/* Doubly stochastic attention (Sinkformers): the scaling P = diag(e^{c f}) e^{c S} diag(e^{c g})
 * with rows and columns summing to 1, c = exp(logc), potentials in score units, so no value is
 * ever multiplied by c but a difference to a maximum (<= 0): no overflow at any c. Converges in
 * the saturated regime (c times the spread of S in the millions) by epsilon scaling, Newton
 * steps on the potentials (n <= 64) and a last scaling of P itself (attention.c has the
 * method); c = +inf is iterated at c = 2^60 (the zero-temperature limit to the resolution of
 * scores of order 1).
 *   n       rows = columns (n >= 1); S n x n finite scores (borrowed, not modified);
 *   iters   cap on iterations (>= 1), one iteration = one row normalisation (n^2
 *           exponentials; a Newton step adds O(n^3)). Iteration 1 IS as_attention_softmax
 *           (same call, same bits);
 *   tol     stop as soon as every row and column sum is within tol of 1 (>= 0);
 *   P       n x n output, row-stochastic to rounding (the last step is a row step);
 *   hot     n ints: per row the index of its single nonzero, or -1 (as the softmax);
 *   work    as_attention_sinkhorn_doubles(n) doubles of scratch;
 *   dev_out the largest |row or column sum - 1| of the returned P (> tol: not converged
 *           within iters; the caller must say so);
 *   iters_out (may be NULL) the iterations done.
 * Returns the number of one-hot rows. Deterministic, the same bits on every machine (no
 * LAPACK); allocates nothing. */
int as_attention_sinkhorn(int n, const double *S, double logc, int iters, double tol, double *P,
                          int *hot, double *work, double *dev_out, int *iters_out);

/* The same with a warm start: with *warm nonzero, the potentials the previous call on this
 * work left (an earlier stage of the same run) start the iterations at the target temperature;
 * when they have not converged within 16 iterations, a cold start follows (iteration 1 the row
 * softmax, then epsilon scaling). On return *warm says whether work holds potentials for the
 * next call. as_attention_sinkhorn is this with warm = NULL (always cold). */
int as_attention_sinkhorn_warm(int n, const double *S, double logc, int iters, double tol,
                               double *P, int *hot, double *work, int *warm, double *dev_out,
                               int *iters_out);

/* Sinkhorn attention as Sinkformers compute it (attention: sinkhorn_fixed): exactly `iters`
 * iterations from the raw scores, nothing carried between calls. Iteration 1 is the row
 * softmax (the call as_attention_softmax makes, so iters = 1 gives its bits); each further
 * iteration normalises the columns, then the rows, in the log domain with the potentials in
 * score units (as as_attention_sinkhorn: only differences to a maximum, <= 0, are multiplied
 * by c). No warm start, no early stop, no epsilon scaling, no Newton step, no last scaling of
 * P: P_K = diag(e^{c f}) e^{c S} diag(e^{c g}) after K row normalisations and K - 1 column
 * normalisations, whatever its deviation. A model, not an approximation of `sinkhorn`.
 *   n       rows = columns (n >= 1); S n x n finite scores (borrowed, not modified);
 *   logc    log of the temperature, any double. c = +inf: every log-sum-exp is a maximum and
 *           every row normalisation the hardmax (ties shared), each step's own
 *           zero-temperature limit; iterations 2.. run at c = 2^-1000 when c is smaller (for
 *           scores ranging less than 2^946 e^{c S} is the all-ones matrix to rounding at
 *           either temperature, and the potentials, of order log(n) / c, stay finite);
 *   iters   K >= 1, the iterations done (one iteration = one row normalisation, n^2
 *           exponentials; the column normalisation before it another n^2);
 *   P       n x n output, row-stochastic to rounding (the last step is a row step);
 *   hot     n ints: per row the index of its single nonzero, or -1 (as the softmax);
 *   work    as_attention_sinkhorn_doubles(n) doubles of scratch (n^2 + 4 n of it are used);
 *   dev_out the largest |row or column sum - 1| of the returned P (+inf if P is not finite);
 *           what is left of doubly stochastic after K iterations: information, not a failure.
 * Returns the number of one-hot rows. Deterministic, the same bits on every machine;
 * allocates nothing; not collective. */
int as_attention_sinkhorn_fixed(int n, const double *S, double logc, int iters, double *P, int *hot,
                                double *work, double *dev_out);

/* Newton steps on the potentials (O(n^3) each) for n up to this many tokens; above, plain
 * alternate normalisations only (the cost model prices both: cost.h). */
#define AS_ATTENTION_SINKHORN_NEWTON_N 64

/* Doubles of scratch the Sinkhorn calls (converged and fixed) need for n tokens: 3 n^2 + 8 n.
 * Inline: the memory estimates of the spec checks (blocks_spec.c) use it without the numerics
 * of attention.c (the spec fuzzer links those checks alone, tests/fuzz.sh). */
static inline size_t as_attention_sinkhorn_doubles(int n) {
  return 3 * (size_t)n * (size_t)n + 8 * (size_t)n;
}

/* The instruction set the small-shape kernels (one trial, and trials as lanes: batch.h) run
 * with, in words: the widest the CPU has among AVX-512F and AVX2 (each with FMA) and the
 * baseline, chosen at run time (every version gives the same bits). The environment variable
 * ATTNSWEEP_ISA=avx2 or =baseline caps it (to measure an AVX2 machine's path on an AVX-512
 * one); read once. The command line refuses other values (exit 2). */
const char *as_attention_isa(void);

/* The cap ATTNSWEEP_ISA sets, whatever the CPU has: 2 none, 1 avx2, 0 baseline (the CRC-32's
 * carry-less multiplication follows it too: baseline takes its tables). Read on every call. */
int as_isa_cap(void);

#endif /* ATTNSWEEP_ATTENTION_H */
