/* bench_dynamics: the dynamics benchmarks (a) stage GFLOP/s vs dgemm, (b) trials/s in the
 * paper's setting, (c) the n = d = 128, T = 15 run, (d) sphere and (e) Sinkhorn stages against
 * the plain one. Usage: bench_dynamics [stage|trials|highdim|sphere|sinkhorn]
 * Runs on one core (OpenBLAS threads set to 1); times are CPU seconds of this process. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "attnsweep/dynamics.h"
#include "dyn_bench.h"

static int want(int argc, char **argv, const char *name) {
  return argc < 2 || strcmp(argv[1], name) == 0 || strcmp(argv[1], "all") == 0;
}

int main(int argc, char **argv) {
  openblas_set_num_threads(1);
  as_status st = AS_OK;
  if (want(argc, argv, "stage")) {
    as_dyn_bench_stage b;
    st = as_dyn_bench_stage_run(256, 256, 1.0, &b);
    if (st != AS_OK) return 3;
    printf("stage: n = %d, d = %d: %.2f GFLOP/s (%.2f ms/stage), dgemm %.2f GFLOP/s, ratio %.0f%% "
           "(target >= 50%%)\n",
           b.n, b.d, b.stage_gflops, 1e3 * b.stage_seconds, b.dgemm_gflops,
           100.0 * b.stage_gflops / b.dgemm_gflops);
  }
  if (want(argc, argv, "trials")) {
    double tps = 0.0;
    int64_t k = 0;
    st = as_dyn_bench_trials(2.0, &tps, &k);
    if (st != AS_OK) return 3;
    printf("trials: n = 20, d = 2, V = I, T = 5, rk4 dt = 0.1: %.0f trials/s (%lld trials; "
           "target >= 2000)\n",
           tps, (long long)k);
  }
  if (want(argc, argv, "highdim")) {
    double sec = 0.0;
    as_dyn_stats s;
    as_expm path;
    st = as_dyn_bench_highdim(&sec, &s, &path);
    if (st != AS_OK) return 3;
    printf("highdim: n = d = 128, T = 15, rk4 dt = 0.1, symmetric V (65+/63-): %.2f s (target < "
           "5 s), %lld steps, path %s, outcome %s\n",
           sec, (long long)s.steps, as_enum_label(&as_expm_table, (int)path),
           as_enum_label(&as_outcome_table, (int)s.outcome));
  }
  for (int v = 0; v < 2; v++) { /* (d) sphere, (e) Sinkhorn: against the plain stage, same run */
    const char *name = v == 0 ? "sphere" : "sinkhorn";
    if (!want(argc, argv, name)) continue;
    double plain = 0.0, var = 0.0;
    st = as_dyn_bench_variant_run(256, 256, v == 0 ? AS_DYN_BENCH_SPHERE : AS_DYN_BENCH_SINKHORN,
                                  1.0, &plain, &var);
    if (st != AS_OK) return 3;
    printf("%s: n = d = 256: %.2f ms per right-hand side, plain %.2f ms (same run): %.2fx\n", name,
           1e3 * var, 1e3 * plain, var / plain);
  }
  return 0;
}
