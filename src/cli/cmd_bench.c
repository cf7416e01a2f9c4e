/* cmd_bench.c: attnsweep bench [NAME]: the benchmarks of the numerical core, on one core.
 *
 *   stage    (a) z right-hand side at n = d = 256: GFLOP/s next to dgemm's, same run
 *   stream   (a') the same at n = 16,384, d = 64, where the attention is streamed
 *   trials   (b) whole trials per second in the paper's setting (n = 20, d = 2, T = 5, RK4)
 *   highdim  (c) n = d = 128, T = 15, RK4 dt = 0.1, symmetric V with mixed-sign spectrum
 * Times are CPU seconds of this (single-threaded) process, so a busy machine does not
 * distort them much; the run pins OpenBLAS to one thread. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attnsweep/attention.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/enums.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/trial.h"
#include "cli.h"

static const char *const names[] = {"stage", "stream", "trials", "highdim", "all"};

/* The instruction set the core's kernels run with (their clones are chosen the same way). */
static const char *isa(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (__builtin_cpu_supports("avx512f")) return "AVX-512F (x86-64)";
  if (__builtin_cpu_supports("avx2")) return "AVX2 (x86-64)";
  return "x86-64 baseline (SSE2)";
#else
  return "the compiler's baseline";
#endif
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whole trials of the paper's setting through the pipeline (as a worker runs them, without
 * the file): trials per CPU second. */
static as_status whole_trials(double min_seconds, double *per_s, int64_t *count) {
  as_status st = AS_OK;
  as_pipeline *pl = NULL;
  AS_TRY(as_pipeline_create(NULL, NULL, &pl));
  int64_t k = 0;
  double t0 = cpu_now(), el = 0.0;
  do {
    as_trial t;
    as_trial_defaults(&t);
    t.index = (uint64_t)k;
    t.master_seed = 1;
    t.token_key = (uint64_t)k;
    t.triple_key = (uint64_t)k;
    t.n = 20;
    t.d = 2;
    t.integ.T = 5.0;
    t.integ.dt = 0.1;
    t.integ.method = AS_METHOD_RK4;
    t.init.scale = 5.0;
    as_record rec;
    AS_TRY(as_trial_run(pl, &t, NULL, &rec, NULL));
    AS_CHECK(rec.outcome == AS_OUT_REACHED_T, AS_ERR_INTERNAL, "bench trial: outcome %d",
             (int)rec.outcome);
    k++;
    el = cpu_now() - t0;
  } while (el < min_seconds || k < 10);
  *per_s = (double)k / el;
  *count = k;
cleanup:
  as_pipeline_destroy(&pl);
  return st;
}

int as_cmd_bench(int argc, char **argv) {
  const char *which = argc >= 2 ? argv[1] : "all";
  if (argc > 2)
    return as_cli_usage_error("bench", "too many arguments (usage: attnsweep bench [NAME])");
  int known = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) known |= strcmp(which, names[i]) == 0;
  if (!known)
    return as_cli_usage_error(
        "bench", "unknown benchmark '%s' (stage, stream, trials, highdim, all)", which);
  const int all = strcmp(which, "all") == 0;
  openblas_set_num_threads(1);
  as_status st = AS_OK;
  printf("attnsweep bench: one core, CPU time; kernels for %s\n", isa());
  if (all || strcmp(which, "stage") == 0) {
    as_dyn_bench_stage b;
    st = as_dyn_bench_stage_run(256, 256, 1.0, &b);
    if (st != AS_OK) return as_cli_report("bench", st);
    printf("stage    n = %d, d = %d: %.2f GFLOP/s (%.2f ms per stage), dgemm %.2f GFLOP/s, "
           "%.0f%% of dgemm (target >= 50%%)\n",
           b.n, b.d, b.stage_gflops, 1e3 * b.stage_seconds, b.dgemm_gflops,
           100.0 * b.stage_gflops / b.dgemm_gflops);
  }
  if (all || strcmp(which, "stream") == 0) {
    /* Above AS_ATTENTION_STREAM_N tokens the stage streams the attention (no n x n matrix). */
    as_dyn_bench_stage b;
    st = as_dyn_bench_stage_run(16384, 64, 1.0, &b);
    if (st != AS_OK) return as_cli_report("bench", st);
    printf("stream   n = %d, d = %d (streamed attention, tiles of %d): %.2f GFLOP/s (%.0f ms per "
           "stage), dgemm %.2f GFLOP/s, %.0f%% of dgemm (target >= 50%%)\n",
           b.n, b.d, AS_ATTENTION_STREAM_TILE, b.stage_gflops, 1e3 * b.stage_seconds,
           b.dgemm_gflops, 100.0 * b.stage_gflops / b.dgemm_gflops);
  }
  if (all || strcmp(which, "trials") == 0) {
    double tps = 0.0;
    int64_t k = 0;
    st = as_dyn_bench_trials(2.0, &tps, &k);
    if (st != AS_OK) return as_cli_report("bench", st);
    printf("trials   n = 20, d = 2, V = Q = K = I, T = 5, rk4 dt = 0.1: %.0f trials/s "
           "(%lld trials; integration only; target >= 8000)\n",
           tps, (long long)k);
    double wps = 0.0;
    st = whole_trials(2.0, &wps, &k);
    if (st != AS_OK) return as_cli_report("bench", st);
    printf("trials   the same as whole trials in process (triple, spectral analysis, tokens, "
           "integration, classifier, record): %.0f trials/s (%lld trials); the difference, the "
           "classifier mostly: %.1f us per trial (noisy where the machine is shared)\n",
           wps, (long long)k, 1e6 * (1.0 / wps - 1.0 / tps));
  }
  if (all || strcmp(which, "highdim") == 0) {
    double sec = 0.0;
    as_dyn_stats s;
    as_expm path = AS_EXPM_NONE;
    st = as_dyn_bench_highdim(&sec, &s, &path);
    if (st != AS_OK) return as_cli_report("bench", st);
    printf("highdim  n = d = 128, T = 15, rk4 dt = 0.1, symmetric V (65 positive, 63 negative): "
           "%.2f s (target < 5 s; %lld steps, e^{tV} path %s, outcome %s)\n",
           sec, (long long)s.steps, as_enum_label(&as_expm_table, (int)path),
           as_enum_label(&as_outcome_table, (int)s.outcome));
  }
  return 0;
}
