/* bench_pipeline: whole trials per second in the paper's setting (n = 20, d = 2, V = Q = K = I,
 * tokens uniform on [-5, 5]^2, T = 5, RK4 dt = 0.1: as_trial_defaults), through as_trial_run
 * (triple, spectral analysis, tokens, integration, classification), then the same trials
 * phase by phase to show where the time goes.
 * Usage: bench_pipeline [TRIALS]   (default 2000)
 * One core (OpenBLAS threads set to 1); times are CPU seconds of this process. The record
 * digest (FNV-1a over the records without their timing fields) must be the same on every run:
 * a trial is a pure function of its parameters. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/classify.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/tokens.h"
#include "attnsweep/triple.h"

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *b = data;
  for (size_t i = 0; i < len; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static void paper_trial(as_trial *t, uint64_t k) {
  as_trial_defaults(t);
  t->index = k;
  t->master_seed = 1;
  t->triple_key = k;
  t->token_key = k;
}

enum { PH_TRIPLE, PH_SPECTRAL, PH_TOKENS, PH_DYN, PH_STATEX, PH_CLASSIFY, PH_COUNT };
static const char *const ph_names[PH_COUNT] = {"triple build",      "spectral analysis",
                                               "initial tokens",    "set_triple + integrate",
                                               "final x (state_x)", "classify"};

/* The phases of as_trial_run, called one by one (z variables, no bulk data). */
static int run_phases(long trials, double *ph) {
  const int n = 20, d = 2;
  as_triple *tr = NULL;
  as_spectral *sp = NULL;
  as_dyn *w = NULL;
  as_classify_ws *cws = NULL;
  double *X0 = malloc((size_t)n * d * sizeof(double)), *X = malloc((size_t)n * d * sizeof(double));
  int rc = 1;
  if (!X0 || !X || as_triple_create(d, d, &tr) != AS_OK || as_spectral_create(d, &sp) != AS_OK ||
      as_dyn_create(n, d, &w) != AS_OK || as_classify_ws_create(n, d, &cws) != AS_OK)
    goto cleanup;
  for (long k = 0; k < trials; k++) {
    as_trial t;
    paper_trial(&t, (uint64_t)k);
    as_record rec;
    as_record_init(&rec, &t);
    double t0 = cpu_now();
    if (as_triple_build(&t, tr) != AS_OK) goto cleanup;
    double t1 = cpu_now();
    if (as_spectral_analyze(tr, 1e-10, sp) != AS_OK) goto cleanup;
    double t2 = cpu_now();
    if (as_tokens_init(&t, X0) != AS_OK) goto cleanup;
    double t3 = cpu_now();
    as_dyn_stats ds;
    if (as_dyn_set_triple(w, tr->V, tr->M, NULL) != AS_OK ||
        as_dyn_run(w, &t.integ, X0, NULL, NULL, 0, NULL, NULL, &ds) != AS_OK)
      goto cleanup;
    double t4 = cpu_now();
    if (as_dyn_state_x(w, X) != AS_OK) goto cleanup;
    double t5 = cpu_now();
    as_classify_input in = {n,          d,
                            X0,         as_dyn_state(w),
                            X,          as_dyn_attention(w),
                            tr->V,      sp,
                            ds.outcome, ds.t_final,
                            t.integ.T,  NULL,
                            0,          NULL,
                            NULL,       NULL,
                            0};
    if (as_classify(&in, cws, &rec) != AS_OK) goto cleanup;
    double t6 = cpu_now();
    ph[PH_TRIPLE] += t1 - t0;
    ph[PH_SPECTRAL] += t2 - t1;
    ph[PH_TOKENS] += t3 - t2;
    ph[PH_DYN] += t4 - t3;
    ph[PH_STATEX] += t5 - t4;
    ph[PH_CLASSIFY] += t6 - t5;
  }
  rc = 0;
cleanup:
  as_triple_destroy(&tr);
  as_spectral_destroy(&sp);
  as_dyn_destroy(&w);
  as_classify_ws_destroy(&cws);
  free(X0);
  free(X);
  return rc;
}

int main(int argc, char **argv) {
  openblas_set_num_threads(1);
  long trials = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
  if (trials < 1) {
    fprintf(stderr, "bench_pipeline: TRIALS must be a positive integer\n");
    return 2;
  }
  as_pipeline *pl = NULL;
  if (as_pipeline_create(NULL, NULL, &pl) != AS_OK) return 3;
  uint64_t digest = 14695981039346656037ULL;
  long verdicts[AS_VERDICT_COUNT] = {0};
  double t0 = cpu_now();
  for (long k = 0; k < trials; k++) {
    as_trial t;
    paper_trial(&t, (uint64_t)k);
    as_record rec;
    if (as_trial_run(pl, &t, NULL, &rec, NULL) != AS_OK) {
      as_pipeline_destroy(&pl);
      return 3;
    }
    as_record_strip_timing(&rec);
    digest = fnv1a(digest, &rec, sizeof rec);
    if (rec.verdict >= 0 && rec.verdict < AS_VERDICT_COUNT) verdicts[rec.verdict]++;
  }
  double el = cpu_now() - t0;
  as_pipeline_destroy(&pl);
  printf("pipeline: n = 20, d = 2, V = Q = K = I, T = 5, rk4 dt = 0.1: %.0f trials/s (%ld trials, "
         "%.3f s CPU)\n",
         (double)trials / el, trials, el);
  printf("record digest %016llx; verdicts:", (unsigned long long)digest);
  for (int v = 0; v < AS_VERDICT_COUNT; v++)
    if (verdicts[v]) printf(" %s %ld", as_enum_label(&as_verdict_table, v), verdicts[v]);
  printf("\n");

  double ph[PH_COUNT] = {0};
  if (run_phases(trials, ph) != 0) return 3;
  double tot = 0.0;
  for (int i = 0; i < PH_COUNT; i++) tot += ph[i];
  printf("phases (same trials, called one by one):\n");
  for (int i = 0; i < PH_COUNT; i++)
    printf("  %-24s %8.1f us/trial  %5.1f%%\n", ph_names[i], 1e6 * ph[i] / (double)trials,
           100.0 * ph[i] / tot);
  return 0;
}
