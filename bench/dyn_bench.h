/* dyn_bench.h: the benchmarks of the dynamics (bench/dyn_bench.c), behind `attnsweep bench`
 * and bench/bench_dynamics.c. Benchmarks are not part of the core library: they measure it. */
#ifndef AS_DYN_BENCH_H
#define AS_DYN_BENCH_H

#include <stdint.h>

#include "attnsweep/dynamics.h"
#include "attnsweep/expm.h"
#include "attnsweep/status.h"

/* Figures measured in this process on the calling thread (the caller sets BLAS threads). */

typedef struct as_dyn_bench_stage {
  int n, d;
  double stage_gflops; /* useful flops of one z right-hand side (4 n^2 d + 6 n d^2) per second */
  double dgemm_gflops; /* dgemm n x d x d products ... measured in the same run */
  double stage_seconds;
} as_dyn_bench_stage;
/* (a) stage throughput at (n, d) against dgemm, each timed for about min_seconds. */
as_status as_dyn_bench_stage_run(int n, int d, double min_seconds, as_dyn_bench_stage *out);

/* (d) several heads (blocks.h) at (n, d, H): one z right-hand side of H Gaussian heads, its
 * useful flops H (4 n^2 d + 4 n d^2) per second, against dgemm in the same run. */
as_status as_dyn_bench_heads(int n, int d, int heads, double min_seconds, as_dyn_bench_stage *out);

/* (b) whole trials per second in the paper's setting (n = 20, d = 2, V = I, Q = K = I,
 * x0 uniform on [-5, 5]^2, T = 5, RK4 dt = 0.1), including set_triple per trial. */
as_status as_dyn_bench_trials(double min_seconds, double *trials_per_s, int64_t *trials);

/* (b') the same trials, AS_BATCH_LANES at a time through as_dyn_run_batch (batch.h). */
as_status as_dyn_bench_trials_batch(double min_seconds, double *trials_per_s, int64_t *trials);

/* (b'') the classifier alone: the end states (initial and final tokens, final x, P, the
 * spectral analysis) of `trials` paper-setting trials (as (b), through the one-trial
 * integration) computed once, then as_classify over all of them `rounds` times, one CPU clock
 * read per round. *us_best: the fastest round's CPU microseconds per classification;
 * *digest: FNV-1a of the records without their timing fields (the same every round, else
 * AS_ERR_INTERNAL), for a guard that a faster classifier classifies alike. */
as_status as_dyn_bench_classify(long trials, long rounds, double *us_best, uint64_t *digest);

/* (c) n = d = 128, T = 15, RK4 dt = 0.1, symmetric V with 65 positive and 63 negative
 * eigenvalues, M = I, x0 uniform on [-0.5, 0.5]^d: wall seconds of one trial. */
as_status as_dyn_bench_highdim(double *seconds, as_dyn_stats *stats, as_expm *path);

/* (d) model variants at (n, d): seconds per right-hand side of the plain model and of the
 * variant, measured in the same run on the same tokens. SPHERE: x variables, tokens on the
 * unit sphere, plain = the base model in x; SINKHORN: z variables, exactly 10 Sinkhorn
 * iterations, plain = the row softmax. */
typedef enum as_dyn_bench_variant {
  AS_DYN_BENCH_SPHERE,
  AS_DYN_BENCH_SINKHORN
} as_dyn_bench_variant;
as_status as_dyn_bench_variant_run(int n, int d, as_dyn_bench_variant kind, double min_seconds,
                                   double *plain_s, double *variant_s);

/* (e') Sinkhorn iterations per evaluation of P in the saturated regime: `trials` trials of
 * jobs/examples/sinkhorn.yaml's shape (V = M = I, z variables, RK4 dt = 0.1, x0 ~ N(0, I), n
 * tokens in d dimensions to T, so the temperature reaches e^{2T}), sinkhorn_iters iters and
 * sinkhorn_tol tol: the evaluations of all of them together (as_dyn_sinkhorn_stats), the
 * largest deviation left and the CPU seconds. */
as_status as_dyn_bench_sinkhorn_trials(int n, int d, double T, int iters, double tol, int trials,
                                       as_dyn_sinkhorn_stats *stats, double *dev, double *seconds);

#endif /* AS_DYN_BENCH_H */
