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

#include "attnsweep/attention.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/enums.h"
#include "cli.h"

static const char *const names[] = {"stage", "stream", "trials", "highdim", "all"};

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
  printf("attnsweep bench: one core, CPU time\n");
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
           "(%lld trials; target >= 2000)\n",
           tps, (long long)k);
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
