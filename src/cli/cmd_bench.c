/* cmd_bench.c: attnsweep bench [NAME]: the benchmarks of the numerical core, on one core.
 *
 *   stage    (a) z right-hand side at n = d = 256: GFLOP/s next to dgemm's, same run
 *   trials   (b) whole trials per second in the paper's setting (n = 20, d = 2, T = 5, RK4)
 *   highdim  (c) n = d = 128, T = 15, RK4 dt = 0.1, symmetric V with mixed-sign spectrum
 *   sphere   (d) right-hand side on the sphere at n = d = 256, against the plain one (same run)
 *   sinkhorn (e) right-hand side with 10 Sinkhorn iterations at n = d = 256, against softmax
 *   heads    (f) z right-hand side of H = 4 heads at n = d = 256 (blocks.h), against dgemm
 * Times are CPU seconds of this (single-threaded) process, so a busy machine does not
 * distort them much; the run pins OpenBLAS to one thread. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "attnsweep/dynamics.h"
#include "attnsweep/enums.h"
#include "cli.h"

static as_status bench_stage(void) {
  as_dyn_bench_stage b;
  as_status st = as_dyn_bench_stage_run(256, 256, 1.0, &b);
  if (st != AS_OK) return st;
  printf("stage    n = %d, d = %d: %.2f GFLOP/s (%.2f ms per stage), dgemm %.2f GFLOP/s, "
         "%.0f%% of dgemm (target >= 50%%)\n",
         b.n, b.d, b.stage_gflops, 1e3 * b.stage_seconds, b.dgemm_gflops,
         100.0 * b.stage_gflops / b.dgemm_gflops);
  return AS_OK;
}

static as_status bench_trials(void) {
  double tps = 0.0;
  int64_t k = 0;
  as_status st = as_dyn_bench_trials(2.0, &tps, &k);
  if (st != AS_OK) return st;
  printf("trials   n = 20, d = 2, V = Q = K = I, T = 5, rk4 dt = 0.1: %.0f trials/s "
         "(%lld trials; target >= 2000)\n",
         tps, (long long)k);
  return AS_OK;
}

static as_status bench_highdim(void) {
  double sec = 0.0;
  as_dyn_stats s;
  as_expm path = AS_EXPM_NONE;
  as_status st = as_dyn_bench_highdim(&sec, &s, &path);
  if (st != AS_OK) return st;
  printf("highdim  n = d = 128, T = 15, rk4 dt = 0.1, symmetric V (65 positive, 63 negative): "
         "%.2f s (target < 5 s; %lld steps, e^{tV} path %s, outcome %s)\n",
         sec, (long long)s.steps, as_enum_label(&as_expm_table, (int)path),
         as_enum_label(&as_outcome_table, (int)s.outcome));
  return AS_OK;
}

/* (d), (e): one attention variant's right-hand side against the plain one, same run. */
static as_status bench_variant(int v) {
  const char *name = v == 0 ? "sphere" : "sinkhorn";
  double plain = 0.0, var = 0.0;
  as_status st = as_dyn_bench_variant_run(
      256, 256, v == 0 ? AS_DYN_BENCH_SPHERE : AS_DYN_BENCH_SINKHORN, 1.0, &plain, &var);
  if (st != AS_OK) return st;
  printf("%-8s n = d = 256: %.2f ms per right-hand side (%s), plain %.2f ms in the same run: "
         "%.2fx\n",
         name, 1e3 * var, v == 0 ? "x on the sphere, sa" : "10 Sinkhorn iterations, z", 1e3 * plain,
         var / plain);
  return AS_OK;
}

static as_status bench_sphere(void) {
  return bench_variant(0);
}

static as_status bench_sinkhorn(void) {
  return bench_variant(1);
}

static as_status bench_heads(void) {
  as_dyn_bench_stage b;
  as_status st = as_dyn_bench_heads(256, 256, 4, 1.0, &b);
  if (st != AS_OK) return st;
  printf("heads    n = %d, d = %d, H = 4: %.2f GFLOP/s (%.2f ms per stage), dgemm %.2f GFLOP/s, "
         "%.0f%% of dgemm (target >= 70%%)\n",
         b.n, b.d, b.stage_gflops, 1e3 * b.stage_seconds, b.dgemm_gflops,
         100.0 * b.stage_gflops / b.dgemm_gflops);
  return AS_OK;
}

/* The benchmarks, in the order `all` runs them: the one list that `bench NAME`, `help bench`
 * and the error for an unknown NAME read. */
static const struct {
  const char *name, *what;
  as_status (*run)(void);
} benches[] = {
    {"stage", "(a) z right-hand side at n = d = 256: GFLOP/s next to dgemm's", bench_stage},
    {"trials", "(b) whole trials per second, the paper's setting (n = 20, d = 2, T = 5, RK4)",
     bench_trials},
    {"highdim", "(c) n = d = 128, T = 15, RK4, symmetric V with a mixed-sign spectrum",
     bench_highdim},
    {"sphere", "(d) right-hand side on the sphere at n = d = 256, against the plain one",
     bench_sphere},
    {"sinkhorn", "(e) right-hand side with 10 Sinkhorn iterations at n = d = 256", bench_sinkhorn},
    {"heads", "(f) z right-hand side of H = 4 heads at n = d = 256: GFLOP/s next to dgemm's",
     bench_heads},
};
#define N_BENCHES (sizeof benches / sizeof benches[0])

void as_cli_bench_topics(FILE *f) {
  fprintf(f, "benchmarks (NAME):\n");
  for (size_t i = 0; i < N_BENCHES; i++)
    fprintf(f, "  %-9s %s\n", benches[i].name, benches[i].what);
  fprintf(f, "  %-9s every one of them, in this order (the default)\n", "all");
}

/* `attnsweep bench` has no options of its own (only -h/--help). */
const as_optset as_opts_bench = {NULL, 0, "[NAME]"};

int as_cmd_bench(int argc, char **argv) {
  int npos = 0, code = 0;
  if (as_opts_parse("bench", &as_opts_bench, argc, argv, NULL, 1, &npos, &code)) return code;
  if (npos > 1)
    return as_cli_usage_error("bench", "too many arguments (usage: attnsweep bench [NAME])");
  const char *which = npos == 1 ? argv[1] : "all";
  const int all = strcmp(which, "all") == 0;
  int known = all;
  for (size_t i = 0; i < N_BENCHES; i++) known |= strcmp(which, benches[i].name) == 0;
  if (!known) {
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < N_BENCHES && used < sizeof list; i++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s, ", benches[i].name);
    return as_cli_usage_error("bench", "unknown benchmark '%s' (%sall)", which, list);
  }
  openblas_set_num_threads(1);
  printf("attnsweep bench: one core, CPU time\n");
  for (size_t i = 0; i < N_BENCHES; i++) {
    if (!all && strcmp(which, benches[i].name) != 0) continue;
    as_status st = benches[i].run();
    if (st != AS_OK) return as_cli_report("bench", st);
  }
  return 0;
}
