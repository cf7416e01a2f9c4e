/* dyn_bench.c: the benchmarks of the dynamics (dyn_bench.h; figures only, printing is the
 * caller's). */
#include "dyn_bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/batch.h"
#include "attnsweep/blocks.h"
#include "attnsweep/classify.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/record.h"
#include "attnsweep/rng.h"
#include "attnsweep/spectral.h"
#include "attnsweep/tokens.h"
#include "attnsweep/triple.h"
#include "linalg_dyn.h"

/* CPU time of this process: on a shared machine it is what an idle core would take (the
 * callers run BLAS on one thread, so it is the time of that one thread). */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Random symmetric d x d V = Q diag(lam) Q^T with kpos positive eigenvalues in [0.2, 1] and
 * the rest negative in [-1, -0.2]; Q orthogonal from the QR of a Gaussian matrix. */
static as_status symmetric_v(as_rng *r, int d, int kpos, double *V) {
  as_status st = AS_OK;
  double *Q = malloc((size_t)d * d * sizeof(double)), *tau = malloc((size_t)d * sizeof(double));
  double *work = NULL, *B = malloc((size_t)d * d * sizeof(double));
  AS_CHECK_ALLOC(Q);
  AS_CHECK_ALLOC(tau);
  AS_CHECK_ALLOC(B);
  as_rng_fill_normal(r, Q, (long)d * d, 1.0);
  int info = 0, lwork = 64 * d;
  work = malloc((size_t)lwork * sizeof(double));
  AS_CHECK_ALLOC(work);
  dgeqrf_(&d, &d, Q, &d, tau, work, &lwork, &info);
  AS_LAPACK_CHECK("dgeqrf", info);
  dorgqr_(&d, &d, &d, Q, &d, tau, work, &lwork, &info);
  AS_LAPACK_CHECK("dorgqr", info);
  /* Q is orthogonal in either storage order; B = Q diag(lam). */
  for (int j = 0; j < d; j++) {
    double u = 0.2 + 0.8 * as_rng_uniform(r), lam = j < kpos ? u : -u;
    for (int i = 0; i < d; i++) B[(size_t)i * d + j] = Q[(size_t)i * d + j] * lam;
  }
  as_mm(0, 1, d, d, d, 1.0, B, d, Q, d, 0.0, V, d);
  for (int i = 0; i < d; i++) /* symmetric to the last bit */
    for (int j = 0; j < i; j++)
      V[(size_t)i * d + j] = V[(size_t)j * d + i] =
          0.5 * (V[(size_t)i * d + j] + V[(size_t)j * d + i]);
cleanup:
  free(Q);
  free(tau);
  free(work);
  free(B);
  return st;
}

static void identity(int d, double *A) {
  memset(A, 0, (size_t)d * d * sizeof(double));
  for (int i = 0; i < d; i++) A[(size_t)i * d + i] = 1.0;
}

as_status as_dyn_bench_stage_run(int n, int d, double min_seconds, as_dyn_bench_stage *out) {
  as_status st = AS_OK;
  as_dyn *w = NULL;
  double *V = malloc((size_t)d * d * sizeof(double)), *M = malloc((size_t)d * d * sizeof(double));
  double *Z = malloc((size_t)n * d * sizeof(double)), *F = malloc((size_t)n * d * sizeof(double));
  double *A = malloc((size_t)n * d * sizeof(double)), *B = malloc((size_t)d * d * sizeof(double));
  double *C = malloc((size_t)n * d * sizeof(double));
  AS_CHECK_ALLOC(V);
  AS_CHECK_ALLOC(M);
  AS_CHECK_ALLOC(Z);
  AS_CHECK_ALLOC(F);
  AS_CHECK_ALLOC(A);
  AS_CHECK_ALLOC(B);
  AS_CHECK_ALLOC(C);
  as_rng r;
  as_rng_init(&r, 1, 0, AS_PURPOSE_TEST);
  AS_TRY(symmetric_v(&r, d, d / 2 + 1, V));
  identity(d, M);
  as_rng_fill_uniform(&r, Z, (long)n * d, -0.5, 0.5);
  AS_TRY(as_dyn_create(n, d, &w));
  AS_TRY(as_dyn_set_triple(w, V, M, NULL));
  /* Stage: one z right-hand side, 4 n^2 d + 6 n d^2 flops (5 products). */
  double t = 0.0, t0 = now(), el = 0.0;
  long reps = 0;
  do {
    AS_TRY(as_dyn_rhs(w, AS_VARS_Z, t, Z, F));
    t += 0.01;
    reps++;
    el = now() - t0;
  } while (el < min_seconds || reps < 3);
  double flops = 4.0 * n * n * d + 6.0 * n * (double)d * d;
  out->n = n;
  out->d = d;
  out->stage_seconds = el / (double)reps;
  out->stage_gflops = flops / out->stage_seconds * 1e-9;
  /* dgemm of the stage's own shape (n x d times d x d), same thread. */
  as_rng_fill_uniform(&r, A, (long)n * d, -1, 1);
  as_rng_fill_uniform(&r, B, (long)d * d, -1, 1);
  reps = 0;
  t0 = now();
  do {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, d, 1.0, A, d, B, d, 0.0, C, d);
    reps++;
    el = now() - t0;
  } while (el < min_seconds || reps < 3);
  out->dgemm_gflops = 2.0 * n * (double)d * d * (double)reps / el * 1e-9;
cleanup:
  as_dyn_destroy(&w);
  free(V);
  free(M);
  free(Z);
  free(F);
  free(A);
  free(B);
  free(C);
  return st;
}

/* (d) several heads (blocks.h): one z right-hand side of H independent Gaussian heads,
 * H (4 n^2 d + 4 n d^2) useful flops (per head: G M_h, scores, P^h Y, (P^h Y) V_h^T). */
as_status as_dyn_bench_heads(int n, int d, int heads, double min_seconds, as_dyn_bench_stage *out) {
  as_status st = AS_OK;
  as_dyn *w = NULL;
  as_blocks *b = NULL;
  double *Z = malloc((size_t)n * d * sizeof(double)), *F = malloc((size_t)n * d * sizeof(double));
  double *A = malloc((size_t)n * d * sizeof(double)), *B = malloc((size_t)d * d * sizeof(double));
  double *C = malloc((size_t)n * d * sizeof(double));
  AS_CHECK_ALLOC(Z);
  AS_CHECK_ALLOC(F);
  AS_CHECK_ALLOC(A);
  AS_CHECK_ALLOC(B);
  AS_CHECK_ALLOC(C);
  as_trial t;
  as_trial_defaults(&t);
  t.n = n;
  t.d = d;
  t.master_seed = 1;
  t.blocks.heads = heads;
  t.triple.vfamily = AS_V_GAUSSIAN;
  t.triple.mfamily = AS_M_GAUSSIAN;
  t.triple.m_scale = 1.0 / d;
  AS_TRY(as_blocks_create(&t, &b));
  AS_TRY(as_dyn_create(n, d, &w));
  AS_TRY(as_dyn_set_triple(w, as_blocks_veff(b, 0), as_blocks_m(b, 0, 0), NULL));
  AS_TRY(as_dyn_set_blocks(w, b));
  as_rng r;
  as_rng_init(&r, 1, 0, AS_PURPOSE_TEST);
  as_rng_fill_uniform(&r, Z, (long)n * d, -0.5, 0.5);
  double tt = 0.0, t0 = now(), el = 0.0;
  long reps = 0;
  do {
    AS_TRY(as_dyn_rhs(w, AS_VARS_Z, tt, Z, F));
    tt += 0.01;
    reps++;
    el = now() - t0;
  } while (el < min_seconds || reps < 3);
  double flops = (double)heads * (4.0 * n * n * d + 4.0 * n * (double)d * d);
  out->n = n;
  out->d = d;
  out->stage_seconds = el / (double)reps;
  out->stage_gflops = flops / out->stage_seconds * 1e-9;
  as_rng_fill_uniform(&r, A, (long)n * d, -1, 1);
  as_rng_fill_uniform(&r, B, (long)d * d, -1, 1);
  reps = 0;
  t0 = now();
  do {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, d, 1.0, A, d, B, d, 0.0, C, d);
    reps++;
    el = now() - t0;
  } while (el < min_seconds || reps < 3);
  out->dgemm_gflops = 2.0 * n * (double)d * d * (double)reps / el * 1e-9;
cleanup:
  as_dyn_destroy(&w);
  as_blocks_destroy(&b);
  free(Z);
  free(F);
  free(A);
  free(B);
  free(C);
  return st;
}

/* (b') the same trials integrated AS_BATCH_LANES at a time (as_dyn_run_batch): the same
 * records bit for bit (tests/unit/test_batch.c), so the figures compare like for like. */
as_status as_dyn_bench_trials_batch(double min_seconds, double *trials_per_s, int64_t *trials) {
  as_status st = AS_OK;
  enum { N = 20, D = 2, L = AS_BATCH_LANES };
  as_dyn *w[L] = {NULL};
  double V[D * D], M[D * D], X0[L][N * D];
  identity(D, V);
  identity(D, M);
  as_integ_spec in;
  memset(&in, 0, sizeof in);
  in.method = AS_METHOD_RK4;
  in.vars = AS_VARS_Z;
  in.T = 5.0;
  in.dt = 0.1;
  in.max_steps = 1000000;
  const as_integ_spec *inp[L];
  const double *X0p[L];
  for (int l = 0; l < L; l++) {
    AS_TRY(as_dyn_create(N, D, &w[l]));
    inp[l] = &in;
    X0p[l] = X0[l];
  }
  as_rng r;
  int64_t k = 0;
  double t0 = now(), el = 0.0;
  do {
    as_dyn_stats s[L];
    int ok[L];
    for (int l = 0; l < L; l++) {
      as_rng_init(&r, 1, (uint64_t)(k + l), AS_PURPOSE_TOKENS);
      as_rng_fill_uniform(&r, X0[l], N * D, -5.0, 5.0);
      AS_TRY(as_dyn_set_triple(w[l], V, M, NULL));
    }
    AS_TRY(as_dyn_run_batch(w, L, inp, X0p, NULL, s, ok));
    for (int l = 0; l < L; l++)
      AS_CHECK(ok[l] && s[l].outcome == AS_OUT_REACHED_T, AS_ERR_INTERNAL,
               "bench trial ended with outcome %d", (int)s[l].outcome);
    k += L;
    el = now() - t0;
  } while (el < min_seconds || k < 10);
  *trials = k;
  *trials_per_s = (double)k / el;
cleanup:
  for (int l = 0; l < L; l++) as_dyn_destroy(&w[l]);
  return st;
}

as_status as_dyn_bench_trials(double min_seconds, double *trials_per_s, int64_t *trials) {
  as_status st = AS_OK;
  enum { N = 20, D = 2 };
  as_dyn *w = NULL;
  double V[D * D], M[D * D], X0[N * D];
  identity(D, V);
  identity(D, M);
  as_integ_spec in;
  memset(&in, 0, sizeof in);
  in.method = AS_METHOD_RK4;
  in.vars = AS_VARS_Z;
  in.T = 5.0;
  in.dt = 0.1;
  in.max_steps = 1000000;
  AS_TRY(as_dyn_create(N, D, &w));
  as_rng r;
  int64_t k = 0;
  double t0 = now(), el = 0.0;
  do {
    as_rng_init(&r, 1, (uint64_t)k, AS_PURPOSE_TOKENS);
    as_rng_fill_uniform(&r, X0, N * D, -5.0, 5.0);
    as_dyn_stats s;
    AS_TRY(as_dyn_set_triple(w, V, M, NULL));
    AS_TRY(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &s));
    AS_CHECK(s.outcome == AS_OUT_REACHED_T, AS_ERR_INTERNAL, "bench trial ended with outcome %d",
             (int)s.outcome);
    k++;
    el = now() - t0;
  } while (el < min_seconds || k < 10);
  *trials = k;
  *trials_per_s = (double)k / el;
cleanup:
  as_dyn_destroy(&w);
  return st;
}

as_status as_dyn_bench_sinkhorn_trials(int n, int d, double T, int iters, double tol, int trials,
                                       as_dyn_sinkhorn_stats *stats, double *dev, double *seconds) {
  as_status st = AS_OK;
  as_dyn *w = NULL;
  double *V = malloc((size_t)d * d * sizeof(double)), *M = malloc((size_t)d * d * sizeof(double));
  double *X0 = malloc((size_t)n * d * sizeof(double));
  AS_CHECK_ALLOC(V);
  AS_CHECK_ALLOC(M);
  AS_CHECK_ALLOC(X0);
  identity(d, V);
  identity(d, M);
  as_integ_spec in;
  memset(&in, 0, sizeof in);
  in.method = AS_METHOD_RK4;
  in.vars = AS_VARS_Z;
  in.T = T;
  in.dt = 0.1;
  in.max_steps = 1000000;
  as_attn_spec am = {AS_ATTN_SINKHORN, iters, tol, AS_MASK_NONE, AS_NORM_NONE, AS_NFORM_SA};
  memset(stats, 0, sizeof *stats);
  *dev = 0.0;
  double t0 = now();
  AS_TRY(as_dyn_create(n, d, &w));
  AS_TRY(as_dyn_set_triple(w, V, M, NULL));
  AS_TRY(as_dyn_set_model(w, &am, 0));
  for (int k = 0; k < trials; k++) {
    as_rng r;
    as_rng_init(&r, 4, (uint64_t)k, AS_PURPOSE_TEST);
    as_rng_fill_normal(&r, X0, (long)n * d, 1.0);
    as_dyn_stats ds;
    AS_TRY(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &ds));
    as_dyn_sinkhorn_stats s;
    as_dyn_sinkhorn_stats_of(w, &s);
    stats->evals += s.evals;
    stats->missed += s.missed;
    stats->iters += s.iters;
    if (s.max_iters > stats->max_iters) stats->max_iters = s.max_iters;
    const double dv = as_dyn_sinkhorn_dev(w);
    if (!(dv <= *dev)) *dev = dv;
  }
  *seconds = now() - t0;
cleanup:
  as_dyn_destroy(&w);
  free(V);
  free(M);
  free(X0);
  return st;
}

as_status as_dyn_bench_highdim(double *seconds, as_dyn_stats *stats, as_expm *path) {
  as_status st = AS_OK;
  const int n = 128, d = 128;
  as_dyn *w = NULL;
  double *V = malloc((size_t)d * d * sizeof(double)), *M = malloc((size_t)d * d * sizeof(double));
  double *X0 = malloc((size_t)n * d * sizeof(double));
  AS_CHECK_ALLOC(V);
  AS_CHECK_ALLOC(M);
  AS_CHECK_ALLOC(X0);
  as_rng r;
  as_rng_init(&r, 2, 0, AS_PURPOSE_TEST);
  AS_TRY(symmetric_v(&r, d, 65, V));
  identity(d, M);
  as_rng_fill_uniform(&r, X0, (long)n * d, -0.5, 0.5);
  as_integ_spec in;
  memset(&in, 0, sizeof in);
  in.method = AS_METHOD_RK4;
  in.vars = AS_VARS_Z;
  in.T = 15.0;
  in.dt = 0.1;
  in.max_steps = 1000000;
  double t0 = now();
  AS_TRY(as_dyn_create(n, d, &w));
  AS_TRY(as_dyn_set_triple(w, V, M, path));
  AS_TRY(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, stats));
  *seconds = now() - t0;
cleanup:
  as_dyn_destroy(&w);
  free(V);
  free(M);
  free(X0);
  return st;
}

/* ---- model variants (docs/variants.md): seconds per right-hand side against the plain one */

/* Seconds per right-hand side of w in variables vars at Z, timed for about min_seconds. */
static as_status time_rhs(as_dyn *w, as_vars vars, const double *Z, double *F, double min_seconds,
                          double *sec) {
  as_status st = AS_OK;
  double t = 0.0, t0 = now(), el = 0.0;
  long reps = 0;
  do {
    AS_TRY(as_dyn_rhs(w, vars, t, Z, F));
    t += 0.01;
    reps++;
    el = now() - t0;
  } while (el < min_seconds || reps < 3);
  *sec = el / (double)reps;
cleanup:
  return st;
}

as_status as_dyn_bench_variant_run(int n, int d, as_dyn_bench_variant kind, double min_seconds,
                                   double *plain_s, double *variant_s) {
  as_status st = AS_OK;
  as_dyn *w = NULL;
  double *V = malloc((size_t)d * d * sizeof(double)), *M = malloc((size_t)d * d * sizeof(double));
  double *Z = malloc((size_t)n * d * sizeof(double)), *F = malloc((size_t)n * d * sizeof(double));
  AS_CHECK_ALLOC(V);
  AS_CHECK_ALLOC(M);
  AS_CHECK_ALLOC(Z);
  AS_CHECK_ALLOC(F);
  as_rng r;
  as_rng_init(&r, 1, 0, AS_PURPOSE_TEST);
  AS_TRY(symmetric_v(&r, d, d / 2 + 1, V));
  identity(d, M);
  as_rng_fill_uniform(&r, Z, (long)n * d, -0.5, 0.5);
  const int sphere = kind == AS_DYN_BENCH_SPHERE;
  if (sphere) /* tokens on the unit sphere */
    for (int i = 0; i < n; i++) {
      double s2 = 0.0;
      for (int k = 0; k < d; k++) s2 += Z[(size_t)i * d + k] * Z[(size_t)i * d + k];
      for (int k = 0; k < d; k++) Z[(size_t)i * d + k] /= sqrt(s2);
    }
  const as_vars vars = sphere ? AS_VARS_X : AS_VARS_Z;
  AS_TRY(as_dyn_create(n, d, &w));
  AS_TRY(as_dyn_set_triple(w, V, M, NULL));
  AS_TRY(time_rhs(w, vars, Z, F, min_seconds, plain_s));
  /* Sinkhorn: exactly 10 iterations (tolerance 0 never stops it earlier). */
  as_attn_spec am = {sphere ? AS_ATTN_SOFTMAX : AS_ATTN_SINKHORN, 10,         0.0, AS_MASK_NONE,
                     sphere ? AS_NORM_SPHERE : AS_NORM_NONE,      AS_NFORM_SA};
  AS_TRY(as_dyn_set_model(w, &am, 0));
  AS_TRY(time_rhs(w, vars, Z, F, min_seconds, variant_s));
cleanup:
  as_dyn_destroy(&w);
  free(V);
  free(M);
  free(Z);
  free(F);
  return st;
}

/* ------------------------------------------------------------------ (b'') the classifier */

static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *b = data;
  for (size_t i = 0; i < len; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}

enum { CB_N = 20, CB_D = 2 };

typedef struct cb_state {
  as_trial t;
  double X0[CB_N * CB_D], Z[CB_N * CB_D], X[CB_N * CB_D], P[CB_N * CB_N], V[CB_D * CB_D];
  as_spectral *sp;
  as_outcome outcome;
  double t_final;
} cb_state;

as_status as_dyn_bench_classify(long trials, long rounds, double *us_best, uint64_t *digest) {
  as_status st = AS_OK;
  cb_state *es = NULL;
  as_record *recs = NULL;
  as_triple *tr = NULL;
  as_dyn *w = NULL;
  as_classify_ws *cws = NULL;
  AS_CHECK(trials >= 1 && rounds >= 1 && us_best && digest, AS_ERR_ARG, "classify bench");
  es = calloc((size_t)trials, sizeof *es);
  AS_CHECK_ALLOC(es);
  recs = malloc((size_t)trials * sizeof *recs);
  AS_CHECK_ALLOC(recs);
  AS_TRY(as_triple_create(CB_D, CB_D, &tr));
  AS_TRY(as_dyn_create(CB_N, CB_D, &w));
  AS_TRY(as_classify_ws_create(CB_N, CB_D, &cws));
  for (long k = 0; k < trials; k++) {
    cb_state *e = &es[k];
    as_trial_defaults(&e->t); /* the paper's setting */
    e->t.index = (uint64_t)k;
    e->t.master_seed = 1;
    e->t.triple_key = (uint64_t)k;
    e->t.token_key = (uint64_t)k;
    as_dyn_stats ds;
    AS_TRY(as_spectral_create(CB_D, &e->sp));
    AS_TRY(as_triple_build(&e->t, tr));
    AS_TRY(as_spectral_analyze(tr, 1e-10, e->sp));
    AS_TRY(as_tokens_init(&e->t, e->X0));
    AS_TRY(as_dyn_set_triple(w, tr->V, tr->M, NULL));
    AS_TRY(as_dyn_run(w, &e->t.integ, e->X0, NULL, NULL, 0, NULL, NULL, &ds));
    AS_TRY(as_dyn_state_x(w, e->X));
    memcpy(e->Z, as_dyn_state(w), sizeof e->Z);
    memcpy(e->P, as_dyn_attention(w), sizeof e->P);
    memcpy(e->V, tr->V, sizeof e->V);
    e->outcome = ds.outcome;
    e->t_final = ds.t_final;
    as_record_init(&recs[k], &e->t);
  }
  *us_best = INFINITY;
  for (long r = 0; r < rounds; r++) {
    double t0 = now(); /* the classifications only: the digest is taken after */
    for (long k = 0; k < trials; k++) {
      cb_state *e = &es[k];
      as_classify_input in = {CB_N,  CB_D,       e->X0,      e->Z,         e->X, e->P, e->V,
                              e->sp, e->outcome, e->t_final, e->t.integ.T, NULL, 0,    NULL,
                              NULL,  NULL,       0};
      AS_TRY(as_classify(&in, cws, &recs[k]));
    }
    double us = 1e6 * (now() - t0) / (double)trials;
    uint64_t h = 14695981039346656037ULL;
    for (long k = 0; k < trials; k++) {
      as_record_strip_timing(&recs[k]);
      h = fnv1a(h, &recs[k], sizeof recs[k]);
    }
    AS_CHECK(r == 0 || h == *digest, AS_ERR_INTERNAL, "classify bench: records changed");
    *digest = h;
    if (us < *us_best) *us_best = us;
  }
cleanup:
  for (long k = 0; es && k < trials; k++) as_spectral_destroy(&es[k].sp);
  free(es);
  free(recs);
  as_triple_destroy(&tr);
  as_dyn_destroy(&w);
  as_classify_ws_destroy(&cws);
  return st;
}
