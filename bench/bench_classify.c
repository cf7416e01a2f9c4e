/* bench_classify: the classifier alone on the end states of paper-setting trials (n = 20,
 * d = 2, V = Q = K = I, tokens uniform on [-5, 5]^2, T = 5, RK4 dt = 0.1: as_trial_defaults).
 * Usage: bench_classify [TRIALS [ROUNDS]]   (default 2000 trials, 5 rounds)
 * The TRIALS end states (initial and final tokens, final x, P, the spectral analysis) are
 * computed once; then as_classify runs over all of them ROUNDS times. Prints the CPU time per
 * classification (each round, and the fastest) and the digest (FNV-1a) of the records without
 * their timing fields, which must not change when the classifier is made faster. One core
 * (OpenBLAS threads set to 1); a driver for `perf record` too. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/classify.h"
#include "attnsweep/dynamics.h"
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

enum { N = 20, D = 2 };

typedef struct end_state {
  as_trial t;
  double X0[N * D], Z[N * D], X[N * D], P[N * N], V[D * D];
  as_spectral *sp;
  as_outcome outcome;
  double t_final;
} end_state;

int main(int argc, char **argv) {
  openblas_set_num_threads(1);
  long trials = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
  long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 5;
  if (trials < 1 || rounds < 1) {
    fprintf(stderr, "bench_classify: TRIALS and ROUNDS must be positive integers\n");
    return 2;
  }
  end_state *es = calloc((size_t)trials, sizeof *es);
  as_triple *tr = NULL;
  as_dyn *w = NULL;
  as_classify_ws *cws = NULL;
  int rc = 3;
  if (!es || as_triple_create(D, D, &tr) != AS_OK || as_dyn_create(N, D, &w) != AS_OK ||
      as_classify_ws_create(N, D, &cws) != AS_OK)
    goto cleanup;
  for (long k = 0; k < trials; k++) {
    end_state *e = &es[k];
    as_trial_defaults(&e->t);
    e->t.index = (uint64_t)k;
    e->t.master_seed = 1;
    e->t.triple_key = (uint64_t)k;
    e->t.token_key = (uint64_t)k;
    as_dyn_stats ds;
    if (as_spectral_create(D, &e->sp) != AS_OK || as_triple_build(&e->t, tr) != AS_OK ||
        as_spectral_analyze(tr, 1e-10, e->sp) != AS_OK || as_tokens_init(&e->t, e->X0) != AS_OK ||
        as_dyn_set_triple(w, tr->V, tr->M, NULL) != AS_OK ||
        as_dyn_run(w, &e->t.integ, e->X0, NULL, NULL, 0, NULL, NULL, &ds) != AS_OK ||
        as_dyn_state_x(w, e->X) != AS_OK)
      goto cleanup;
    memcpy(e->Z, as_dyn_state(w), sizeof e->Z);
    memcpy(e->P, as_dyn_attention(w), sizeof e->P);
    memcpy(e->V, tr->V, sizeof e->V);
    e->outcome = ds.outcome;
    e->t_final = ds.t_final;
  }
  uint64_t digest = 0;
  double best = 1e300;
  as_record *recs = malloc((size_t)trials * sizeof *recs);
  if (!recs) goto cleanup;
  for (long k = 0; k < trials; k++) as_record_init(&recs[k], &es[k].t);
  for (long r = 0; r < rounds; r++) {
    double t0 = cpu_now(); /* the classifications only: the digest is taken after */
    for (long k = 0; k < trials; k++) {
      end_state *e = &es[k];
      as_classify_input in = {N,     D,          e->X0,      e->Z,         e->X, e->P, e->V,
                              e->sp, e->outcome, e->t_final, e->t.integ.T, NULL, 0};
      if (as_classify(&in, cws, &recs[k]) != AS_OK) {
        free(recs);
        goto cleanup;
      }
    }
    double us = 1e6 * (cpu_now() - t0) / (double)trials;
    uint64_t h = 14695981039346656037ULL;
    for (long k = 0; k < trials; k++) {
      as_record_strip_timing(&recs[k]);
      h = fnv1a(h, &recs[k], sizeof recs[k]);
    }
    printf("round %ld: %.2f us per classification\n", r + 1, us);
    if (us < best) best = us;
    if (r > 0 && h != digest) {
      fprintf(stderr, "bench_classify: the records changed between rounds\n");
      free(recs);
      goto cleanup;
    }
    digest = h;
  }
  free(recs);
  printf("classify: n = 20, d = 2, V = Q = K = I, T = 5, rk4 dt = 0.1: %.2f us per trial at best "
         "(%ld trials x %ld rounds, CPU); record digest %016llx\n",
         best, trials, rounds, (unsigned long long)digest);
  rc = 0;
cleanup:
  if (rc) fprintf(stderr, "bench_classify: failed\n");
  for (long k = 0; es && k < trials; k++) as_spectral_destroy(&es[k].sp);
  free(es);
  as_triple_destroy(&tr);
  as_dyn_destroy(&w);
  as_classify_ws_destroy(&cws);
  return rc;
}
