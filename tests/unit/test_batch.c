/* Batched small trials (batch.h): a trial gives bitwise the same record, final tokens and
 * final attention in a batch as alone, for several shapes and methods, ragged batch sizes,
 * trials that leave the batch early (max_steps, settling, non-finite), a trial that fails and
 * trials that cannot be batched in the middle of a run. Plus the dynamics-level call itself:
 * final states and statistics against as_dyn_run, a refused lane left alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/batch.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/rng.h"

enum { MAXT = 24 };

static as_trial base_trial(uint64_t index, int n, int d) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = index;
  t.master_seed = 77;
  t.token_key = index;
  t.triple_key = index;
  t.n = n;
  t.d = d;
  t.integ.T = 2.0;
  t.output.final = true;
  t.output.attention = true;
  return t;
}

/* Runs t[0..count) alone (fresh pipeline) and batched (another), compares bitwise. */
static as_record last[MAXT]; /* the batched records of the last compare (timing stripped) */

static void compare(const char *what, const as_trial *t, int count, int want_batched) {
  as_pipeline *alone = NULL, *batch = NULL;
  as_record ra[MAXT], rb[MAXT];
  double *fa[MAXT], *fb[MAXT], *pa[MAXT], *pb[MAXT];
  as_bulk ba[MAXT], bb[MAXT];
  as_bulk *bbp[MAXT];
  AS_EXPECT(as_pipeline_create(NULL, NULL, &alone) == AS_OK, "create");
  AS_EXPECT(as_pipeline_create(NULL, NULL, &batch) == AS_OK, "create");
  int nbatchable = 0;
  for (int k = 0; k < count; k++) {
    const size_t nd = (size_t)t[k].n * t[k].d, nn = (size_t)t[k].n * t[k].n;
    fa[k] = calloc(nd, sizeof(double));
    fb[k] = calloc(nd, sizeof(double));
    pa[k] = calloc(nn, sizeof(double));
    pb[k] = calloc(nn, sizeof(double));
    memset(&ba[k], 0, sizeof ba[k]);
    memset(&bb[k], 0, sizeof bb[k]);
    ba[k].final = fa[k];
    ba[k].attention = pa[k];
    bb[k].final = fb[k];
    bb[k].attention = pb[k];
    bbp[k] = &bb[k];
    nbatchable += as_trial_batchable(&t[k]);
  }
  AS_EXPECT(nbatchable >= want_batched, "%s: %d batchable trials, expected >= %d", what, nbatchable,
            want_batched);
  for (int k = 0; k < count; k++)
    AS_EXPECT(as_trial_run(alone, &t[k], NULL, &ra[k], &ba[k]) == AS_OK, "%s: alone %d", what, k);
  AS_EXPECT(as_trial_run_batch(batch, t, count, NULL, rb, bbp) == AS_OK, "%s: batch", what);
  for (int k = 0; k < count; k++) {
    const size_t nd = (size_t)t[k].n * t[k].d, nn = (size_t)t[k].n * t[k].n;
    AS_EXPECT(rb[k].wall_time >= 0.0, "%s: trial %d wall time %g", what, k, rb[k].wall_time);
    as_record_strip_timing(&ra[k]);
    as_record_strip_timing(&rb[k]);
    AS_EXPECT(memcmp(&ra[k], &rb[k], sizeof ra[k]) == 0,
              "%s: trial %d: batched record differs (outcome %d/%d, steps %lld/%lld)", what, k,
              ra[k].outcome, rb[k].outcome, (long long)ra[k].steps, (long long)rb[k].steps);
    AS_EXPECT(memcmp(fa[k], fb[k], nd * sizeof(double)) == 0, "%s: trial %d: final tokens", what,
              k);
    AS_EXPECT(memcmp(pa[k], pb[k], nn * sizeof(double)) == 0, "%s: trial %d: final attention", what,
              k);
    last[k] = rb[k];
    free(fa[k]);
    free(fb[k]);
    free(pa[k]);
    free(pb[k]);
  }
  as_pipeline_destroy(&alone);
  as_pipeline_destroy(&batch);
}

/* The dynamics call: lanes of random triples and tokens against as_dyn_run, one lane with a
 * non-finite initial token (refused: ok = 0, left alone). */
/* The fields of two run statistics equal bit for bit (not the struct's padding, which the
 * runs need not write). */
static int stats_same(const as_dyn_stats *a, const as_dyn_stats *b) {
  return a->outcome == b->outcome && a->steps == b->steps && a->rejected == b->rejected &&
         memcmp(&a->t_final, &b->t_final, sizeof a->t_final) == 0 &&
         memcmp(&a->settle_time, &b->settle_time, sizeof a->settle_time) == 0 &&
         memcmp(&a->velocity, &b->velocity, sizeof a->velocity) == 0 &&
         memcmp(&a->radius, &b->radius, sizeof a->radius) == 0;
}

static void dyn_level(int n, int d, as_method method, int B) {
  as_dyn *w[AS_BATCH_LANES] = {NULL}, *one = NULL;
  as_integ_spec in[AS_BATCH_LANES];
  const as_integ_spec *inp[AS_BATCH_LANES];
  double *X0[AS_BATCH_LANES];
  const double *X0c[AS_BATCH_LANES];
  as_dyn_stats sb[AS_BATCH_LANES], sa;
  int ok[AS_BATCH_LANES];
  double V[64], M[64];
  AS_EXPECT(as_dyn_create(n, d, &one) == AS_OK, "dyn create");
  as_rng r;
  for (int l = 0; l < B; l++) {
    AS_EXPECT(as_dyn_create(n, d, &w[l]) == AS_OK, "dyn create %d", l);
    memset(&in[l], 0, sizeof in[l]);
    in[l].method = method;
    in[l].vars = AS_VARS_Z;
    in[l].T = 1.5;
    in[l].dt = 0.1;
    in[l].max_steps = l == 1 ? 4 : 1000; /* lane 1 stops early */
    inp[l] = &in[l];
    X0[l] = malloc((size_t)n * d * sizeof(double));
    as_rng_init(&r, 5, (uint64_t)l, AS_PURPOSE_TOKENS);
    as_rng_fill_uniform(&r, X0[l], n * d, -2.0, 2.0);
    if (l == 2) X0[l][1] = NAN;
    X0c[l] = X0[l];
  }
  for (int l = 0; l < B; l++) {
    as_rng_init(&r, 9, (uint64_t)l, AS_PURPOSE_TRIPLE);
    as_rng_fill_uniform(&r, V, d * d, -1.0, 1.0);
    as_rng_fill_uniform(&r, M, d * d, -1.0, 1.0);
    AS_EXPECT(as_dyn_set_triple(w[l], V, M, NULL) == AS_OK, "set triple %d", l);
    AS_EXPECT(as_dyn_batchable(w[l], &in[l], 0), "lane %d batchable", l);
  }
  AS_EXPECT(as_dyn_run_batch(w, B, inp, X0c, NULL, sb, ok) == AS_OK, "run batch");
  for (int l = 0; l < B; l++) {
    as_rng_init(&r, 9, (uint64_t)l, AS_PURPOSE_TRIPLE);
    as_rng_fill_uniform(&r, V, d * d, -1.0, 1.0);
    as_rng_fill_uniform(&r, M, d * d, -1.0, 1.0);
    AS_EXPECT(as_dyn_set_triple(one, V, M, NULL) == AS_OK, "set triple alone");
    as_status st = as_dyn_run(one, &in[l], X0[l], NULL, NULL, 0, NULL, NULL, &sa);
    if (l == 2) {
      AS_EXPECT(st == AS_ERR_DATA && ok[l] == 0, "lane 2 refused (status %d, ok %d)", st, ok[l]);
      as_error_clear();
      continue;
    }
    AS_EXPECT(st == AS_OK && ok[l] == 1, "lane %d ran", l);
    AS_EXPECT(stats_same(&sa, &sb[l]), "n %d d %d lane %d: stats (steps %lld/%lld)", n, d, l,
              (long long)sa.steps, (long long)sb[l].steps);
    AS_EXPECT(memcmp(as_dyn_state(one), as_dyn_state(w[l]), (size_t)n * d * sizeof(double)) == 0,
              "n %d d %d lane %d: final state", n, d, l);
    AS_EXPECT(
        memcmp(as_dyn_attention(one), as_dyn_attention(w[l]), (size_t)n * n * sizeof(double)) == 0,
        "n %d d %d lane %d: final attention", n, d, l);
  }
  AS_EXPECT(sb[1].outcome == AS_OUT_MAX_STEPS, "lane 1 max steps (%d)", sb[1].outcome);
  for (int l = 0; l < B; l++) {
    as_dyn_destroy(&w[l]);
    free(X0[l]);
  }
  as_dyn_destroy(&one);
}

/* One batch whose lanes take every path of the lane form against as_dyn_run: V = mu I (the
 * blocks skipped), a diagonal V (columns scaled per stage), a general V (the one-trial scaling
 * on a copy of the lane), temperatures that become infinite (V = 150 I: the lane leaves the
 * small kernel for rhs_mode, in z and in x), a lane that goes non-finite in x (V = 300 I), a
 * lane stopped early and one refused. ident_m: M = I in every lane (as in the paper). */
static void dyn_mixed(as_vars vars, int ident_m) {
  enum { N = 6, D = 2, B = AS_BATCH_LANES };
  as_dyn *w[B] = {NULL}, *one = NULL;
  as_integ_spec in[B];
  const as_integ_spec *inp[B];
  double X0[B][N * D], V[B][D * D], M[B][D * D];
  const double *X0c[B];
  as_dyn_stats sb[B], sa;
  int ok[B];
  const double vdiag[B][D] = {{1, 1},     {1, 0.5},   {150, 150}, {0, 0},
                              {300, 300}, {150, 149}, {-1, -1},   {1, 1}};
  as_rng r;
  memset(sb, 0, sizeof sb); /* the structs are compared whole, padding included */
  memset(&sa, 0, sizeof sa);
  AS_EXPECT(as_dyn_create(N, D, &one) == AS_OK, "dyn create");
  for (int l = 0; l < B; l++) {
    AS_EXPECT(as_dyn_create(N, D, &w[l]) == AS_OK, "dyn create %d", l);
    memset(&in[l], 0, sizeof in[l]);
    in[l].method = AS_METHOD_RK4;
    in[l].vars = vars;
    in[l].T = 3.0;
    in[l].dt = 0.01;
    in[l].max_steps = l == 6 ? 40 : 1000;
    inp[l] = &in[l];
    as_rng_init(&r, 11, (uint64_t)l, AS_PURPOSE_TOKENS);
    as_rng_fill_uniform(&r, X0[l], N * D, -1.0, 1.0);
    if (l == 7) X0[l][3] = INFINITY; /* refused */
    X0c[l] = X0[l];
    as_rng_init(&r, 12, (uint64_t)l, AS_PURPOSE_TRIPLE);
    as_rng_fill_uniform(&r, V[l], D * D, -1.0, 1.0);
    as_rng_fill_uniform(&r, M[l], D * D, -1.0, 1.0);
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) {
        if (l != 3) V[l][i * D + j] = i == j ? vdiag[l][i] : 0.0; /* lane 3: a general V */
        if (ident_m) M[l][i * D + j] = i == j ? 1.0 : 0.0;
      }
    AS_EXPECT(as_dyn_set_triple(w[l], V[l], M[l], NULL) == AS_OK, "set triple %d", l);
    AS_EXPECT(as_dyn_batchable(w[l], &in[l], 0), "lane %d batchable", l);
  }
  AS_EXPECT(as_dyn_run_batch(w, B, inp, X0c, NULL, sb, ok) == AS_OK, "mixed run batch");
  for (int l = 0; l < B; l++) {
    AS_EXPECT(as_dyn_set_triple(one, V[l], M[l], NULL) == AS_OK, "set triple alone");
    as_status st = as_dyn_run(one, &in[l], X0[l], NULL, NULL, 0, NULL, NULL, &sa);
    if (l == 7) {
      AS_EXPECT(st == AS_ERR_DATA && ok[l] == 0, "mixed lane 7 refused (status %d, ok %d)", st,
                ok[l]);
      as_error_clear();
      continue;
    }
    AS_EXPECT(st == AS_OK && ok[l] == 1, "mixed lane %d ran", l);
    AS_EXPECT(stats_same(&sa, &sb[l]),
              "mixed vars %d lane %d: stats (outcome %d/%d, steps %lld/%lld)", (int)vars, l,
              sa.outcome, sb[l].outcome, (long long)sa.steps, (long long)sb[l].steps);
    AS_EXPECT(memcmp(as_dyn_state(one), as_dyn_state(w[l]), sizeof X0[l]) == 0,
              "mixed vars %d lane %d: final state", (int)vars, l);
    AS_EXPECT(memcmp(as_dyn_attention(one), as_dyn_attention(w[l]), N * N * sizeof(double)) == 0,
              "mixed vars %d lane %d: final attention", (int)vars, l);
    AS_EXPECT(memcmp(as_dyn_velocity(one), as_dyn_velocity(w[l]), sizeof X0[l]) == 0,
              "mixed vars %d lane %d: final velocity", (int)vars, l);
  }
  AS_EXPECT(sb[6].outcome == AS_OUT_MAX_STEPS, "mixed lane 6 max steps (%d)", sb[6].outcome);
  if (vars == AS_VARS_X)
    AS_EXPECT(sb[4].outcome == AS_OUT_NONFINITE, "mixed lane 4 overflows (%d)", sb[4].outcome);
  for (int l = 0; l < B; l++) as_dyn_destroy(&w[l]);
  as_dyn_destroy(&one);
}

int main(void) {
  as_trial t[MAXT];

  dyn_level(20, 2, AS_METHOD_RK4, 5);
  dyn_level(9, 4, AS_METHOD_DOPRI5, 8);
  dyn_mixed(AS_VARS_Z, 0);
  dyn_mixed(AS_VARS_X, 0);
  dyn_mixed(AS_VARS_Z, 1);
  dyn_mixed(AS_VARS_X, 1);

  /* The paper's setting, 11 trials: a full batch of 8 and a ragged one of 3. */
  for (int k = 0; k < 11; k++) t[k] = base_trial((uint64_t)k, 20, 2);
  compare("paper n 20 d 2", t, 11, 11);

  /* Generic triples, x variables, Euler, n = 7, d = 3, a ragged batch of 5; one trial stops at
   * max_steps, one settles early, one goes non-finite. */
  for (int k = 0; k < 5; k++) {
    t[k] = base_trial((uint64_t)(100 + k), 7, 3);
    t[k].triple.vfamily = AS_V_GAUSSIAN;
    t[k].triple.mfamily = AS_M_GAUSSIAN;
    t[k].integ.method = AS_METHOD_EULER;
    t[k].integ.vars = AS_VARS_X;
  }
  t[1].integ.max_steps = 3;
  t[2].integ.settle_tol = 10.0;
  t[2].integ.settle_window = 0.3;
  t[3].triple.vfamily = AS_V_IDENTITY;
  t[3].triple.v_scale = 1e8; /* Euler: x grows by 1e7 per step */
  t[3].integ.T = 5.0;        /* ... at its own T: a batch of its own */
  compare("gaussian n 7 d 3 euler x", t, 5, 5);
  AS_EXPECT(last[1].outcome == AS_OUT_MAX_STEPS, "max_steps lane: outcome %d", last[1].outcome);
  AS_EXPECT(last[2].outcome == AS_OUT_SETTLED, "settling lane: outcome %d", last[2].outcome);
  AS_EXPECT(last[3].outcome == AS_OUT_NONFINITE, "overflowing lane: outcome %d", last[3].outcome);

  /* n = 33 (not a multiple of 4), d = 5, rk4 in z with symmetric V; in the middle a trial
   * that fails (an explicit V with an infinite entry: bad data), a causal mask and a trial
   * with snapshots (alone). */
  static double vbad[25] = {INFINITY};
  for (int k = 0; k < 12; k++) {
    t[k] = base_trial((uint64_t)(200 + k), 33, 5);
    t[k].triple.vfamily = AS_V_SYMMETRIC;
    t[k].triple.v_kpos = 2;
    t[k].triple.mfamily = AS_M_SPD;
    t[k].triple.m_cond = 3.0;
  }
  t[4].triple.vfamily = AS_V_EXPLICIT;
  t[4].triple.V = (as_matref){vbad, 5, 5, 1};
  t[6].attn.mask = AS_MASK_CAUSAL;
  t[7].output.n_snapshots = 1;
  t[7].output.snapshot_times[0] = 1.0;
  compare("symmetric n 33 d 5 rk4, mixed", t, 12, 9);
  AS_EXPECT(last[4].outcome == AS_OUT_FAILED, "failing lane: outcome %d", last[4].outcome);

  /* d = 1, n = 64 (the largest batched n), dopri5 without step control. */
  for (int k = 0; k < 4; k++) {
    t[k] = base_trial((uint64_t)(300 + k), 64, 1);
    t[k].triple.vfamily = AS_V_SCALAR;
    t[k].triple.mfamily = AS_M_SCALAR;
    t[k].integ.method = AS_METHOD_DOPRI5;
    t[k].integ.rtol = t[k].integ.atol = 0.0;
  }
  compare("scalar n 64 d 1 dopri5 fixed", t, 4, 4);
  return as_test_finish("test_batch");
}
