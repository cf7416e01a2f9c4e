/* cmd_bench.c: attnsweep bench [NAME]: the benchmarks of the numerical core, on one core.
 *
 *   stage    (a) z right-hand side at n = d = 256: GFLOP/s next to dgemm's, same run
 *   stream   (a') the same at n = 16,384, d = 64, where the attention is streamed
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
#include <time.h>

#include "attnsweep/attention.h"
#include "attnsweep/batch.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/enums.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/trial.h"
#include "cli.h"
#include "dyn_bench.h"

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The paper's setting as trial k. */
static void paper_trial(as_trial *t, int64_t k) {
  as_trial_defaults(t);
  t->index = (uint64_t)k;
  t->master_seed = 1;
  t->token_key = (uint64_t)k;
  t->triple_key = (uint64_t)k;
  t->n = 20;
  t->d = 2;
  t->integ.T = 5.0;
  t->integ.dt = 0.1;
  t->integ.method = AS_METHOD_RK4;
  t->init.scale = 5.0;
}

/* Whole trials of the paper's setting through the pipeline (as a worker runs them, without
 * the file), one at a time (batched = 0) or AS_BATCH_LANES per as_trial_run_batch call:
 * trials per CPU second, and the classifier's CPU seconds per trial. */
static as_status whole_trials(double min_seconds, int batched, double *per_s, int64_t *count,
                              double *classify_per_trial) {
  as_status st = AS_OK;
  as_pipeline *pl = NULL;
  AS_TRY(as_pipeline_create(NULL, NULL, &pl));
  int64_t k = 0;
  double t0 = cpu_now(), el = 0.0;
  do {
    as_trial t[AS_BATCH_LANES];
    as_record rec[AS_BATCH_LANES];
    const int B = batched ? AS_BATCH_LANES : 1;
    for (int l = 0; l < B; l++) paper_trial(&t[l], k + l);
    if (batched) {
      AS_TRY(as_trial_run_batch(pl, t, B, NULL, rec, NULL));
    } else {
      AS_TRY(as_trial_run(pl, &t[0], NULL, &rec[0], NULL));
    }
    for (int l = 0; l < B; l++)
      AS_CHECK(rec[l].outcome == AS_OUT_REACHED_T, AS_ERR_INTERNAL, "bench trial: outcome %d",
               (int)rec[l].outcome);
    k += B;
    el = cpu_now() - t0;
  } while (el < min_seconds || k < 10);
  *per_s = (double)k / el;
  *count = k;
  int64_t nc = 0;
  double cs = as_pipeline_classify_seconds(pl, &nc);
  *classify_per_trial = nc > 0 ? cs / (double)nc : 0.0;
cleanup:
  as_pipeline_destroy(&pl);
  return st;
}

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

/* Above AS_ATTENTION_STREAM_N tokens the stage streams the attention (no n x n matrix). */
static as_status bench_stream(void) {
  as_dyn_bench_stage b;
  as_status st = as_dyn_bench_stage_run(16384, 64, 1.0, &b);
  if (st != AS_OK) return st;
  printf("stream   n = %d, d = %d (streamed attention, tiles of %d): %.2f GFLOP/s (%.0f ms per "
         "stage), dgemm %.2f GFLOP/s, %.0f%% of dgemm (target >= 50%%)\n",
         b.n, b.d, AS_ATTENTION_STREAM_TILE, b.stage_gflops, 1e3 * b.stage_seconds, b.dgemm_gflops,
         100.0 * b.stage_gflops / b.dgemm_gflops);
  return AS_OK;
}

static as_status bench_trials(void) {
  double tps = 0.0, bps = 0.0, wps = 0.0, wbps = 0.0, cl1 = 0.0, clb = 0.0, cla = 0.0;
  int64_t k = 0, kb = 0, kw = 0, kwb = 0;
  uint64_t digest = 0;
  as_status st = as_dyn_bench_trials(2.0, &tps, &k);
  if (st == AS_OK) st = as_dyn_bench_trials_batch(2.0, &bps, &kb);
  if (st == AS_OK) st = whole_trials(2.0, 0, &wps, &kw, &cl1);
  if (st == AS_OK) st = whole_trials(2.0, 1, &wbps, &kwb, &clb);
  if (st == AS_OK) st = as_dyn_bench_classify(1000, 5, &cla, &digest);
  if (st != AS_OK) return st;
  printf("trials   n = 20, d = 2, V = Q = K = I, T = 5, rk4 dt = 0.1, integration only: "
         "%.0f trials/s one at a time, %.0f trials/s in batches of %d (target >= 8000 per core "
         "on AVX2) (%lld, %lld trials)\n",
         tps, bps, AS_BATCH_LANES, (long long)k, (long long)kb);
  printf("trials   the same as whole trials in process (triple, spectral analysis, tokens, "
         "integration, classifier, record): %.0f trials/s one at a time, %.0f trials/s batched "
         "(the worker's path) (%lld, %lld trials)\n",
         wps, wbps, (long long)kw, (long long)kwb);
  /* The rest is a difference of two timings of a noisy machine: shown when it is resolved. The
   * classifier's figure is the one timed alone (a thread CPU clock read around each call
   * costs about as much as a tenth of the call); the one timed in the pipeline beside it. */
  const double cl = 1e6 * 0.5 * (cl1 + clb), rest = 1e6 * (1.0 / wbps - 1.0 / bps) - cla;
  printf("trials   classifier: %.1f us per trial alone (CPU, 1000 end states x 5 rounds, the "
         "fastest; target <= 10), %.0f%% of a whole batched trial (%.1f us timed in the pipeline, "
         "clock reads included); the rest outside the integration (triple, spectral analysis, "
         "tokens, record): ",
         cla, 100.0 * cla * 1e-6 * wbps, cl);
  if (rest > 0.0)
    printf("%.1f us per trial (difference of the timings)\n", rest);
  else
    printf("below the timings' noise\n");
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
  as_status st = bench_variant(1);
  if (st != AS_OK) return st;
  /* Iterations per evaluation of P (per stage) where it matters: the saturated regime of
   * jobs/examples/sinkhorn.yaml (n = 20, d = 2, T = 10, cap 100, tol 1e-9), 10 trials. */
  as_dyn_sinkhorn_stats s;
  double dev = 0.0, sec = 0.0;
  st = as_dyn_bench_sinkhorn_trials(20, 2, 10.0, 100, 1e-9, 10, &s, &dev, &sec);
  if (st != AS_OK) return st;
  printf("sinkhorn n = 20, d = 2, T = 10 (jobs/examples/sinkhorn.yaml, 10 trials, cap 100, tol "
         "1e-9): iterations per stage mean %.2f, max %d over %ld stages; %ld above tol, worst "
         "deviation %.2g; %.2f s\n",
         s.evals ? (double)s.iters / (double)s.evals : 0.0, s.max_iters, s.evals, s.missed, dev,
         sec);
  return AS_OK;
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
    {"stream", "(a') the stage with streamed attention at n = 16384, d = 64, next to dgemm",
     bench_stream},
    {"trials", "(b) whole trials per second, the paper's setting (n = 20, d = 2, T = 5, RK4)",
     bench_trials},
    {"highdim", "(c) n = d = 128, T = 15, RK4, symmetric V with a mixed-sign spectrum",
     bench_highdim},
    {"sphere", "(d) right-hand side on the sphere at n = d = 256, against the plain one",
     bench_sphere},
    {"sinkhorn",
     "(e) right-hand side with 10 Sinkhorn iterations at n = d = 256; iterations per stage "
     "of the example's saturated trials",
     bench_sinkhorn},
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
  printf("attnsweep bench: one core, CPU time; kernels for %s\n", as_attention_isa());
  for (size_t i = 0; i < N_BENCHES; i++) {
    if (!all && strcmp(which, benches[i].name) != 0) continue;
    as_status st = benches[i].run();
    if (st != AS_OK) return as_cli_report("bench", st);
  }
  return 0;
}
