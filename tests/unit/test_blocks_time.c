/* Per-layer weights under the ODE methods (blocks.h): a piecewise-constant vector field.
 *   - the block count: blocks that meet [0, T), the same for an ODE method and for layers (T a
 *     multiple of k dt makes no extra block);
 *   - the reduction: per_layer with weights_every >= the number of layers equals shared bit for
 *     bit (tokens, final attention, steps), for euler, rk4, dopri5 and layers, one head (the
 *     base path) and two heads (the field path);
 *   - the order: with M = 0 the attention is uniform, P = 1 1^T / n, and the dynamics is
 *     linear in each block: the mean follows m' = V_b m, each token keeps its offset from the
 *     mean, so x_i(T) = x_i(0) - m(0) + E_{B-1} ... E_0 m(0) with E_b = e^{V_b k dt} (a Taylor
 *     series written here). Halving dt (and doubling weights_every, the same blocks) divides
 *     the error by 2^p within a factor 1.5: p = 1 (euler), 4 (rk4, x and z variables),
 *     5 (dopri5 at fixed step: its propagated solution is of order 5);
 *   - dopri5 with a tolerance: error within 100 tol of the exact solution and at most one
 *     rejected step per switch (steps end on the switch times);
 *   - the final attention is the softmax with M of the last block in the horizon. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/blocks.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/triple.h"

enum { N = 3, D = 2 };

static const double X0[N * D] = {1.0, 0.5, -0.7, 1.2, 0.3, -0.9};
static const double MZERO[D * D] = {0.0, 0.0, 0.0, 0.0};

static as_trial per_layer_trial(as_method method, double T, double dt, int every) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = 5;
  t.master_seed = 31;
  t.token_key = t.triple_key = 5;
  t.d = D;
  t.n = N;
  t.init.kind = AS_INIT_EXPLICIT;
  t.init.data = (as_matref){X0, N, D, 1};
  t.triple.vfamily = AS_V_GAUSSIAN;
  t.triple.mfamily = AS_M_EXPLICIT;
  t.triple.M = (as_matref){MZERO, D, D, 2};
  t.integ.method = method;
  t.integ.vars = AS_VARS_X;
  t.integ.T = T;
  t.integ.dt = dt;
  t.integ.rtol = t.integ.atol = 0.0; /* dopri5 at fixed step unless a test sets them */
  t.blocks.weights = AS_WEIGHTS_PER_LAYER;
  t.blocks.weights_every = every;
  return t;
}

static as_record run(as_pipeline *pl, const as_trial *t, double *fin, double *att) {
  as_record r;
  as_bulk bulk = {.final = fin, .attention = att};
  memset(&r, 0, sizeof r);
  as_status st = as_trial_run(pl, t, NULL, &r, &bulk);
  AS_EXPECT(st == AS_OK && r.outcome == AS_OUT_REACHED_T, "trial runs to T (%s)", r.message);
  return r;
}

/* E = e^{A}, A d x d: scaling by 2^-s to norm <= 1/2, Taylor to 30 terms, squaring. */
static void expm_taylor(const double *A, double *E) {
  double nrm = 0.0;
  for (int i = 0; i < D * D; i++) nrm += fabs(A[i]);
  int s = 0;
  while (nrm > 0.5) nrm /= 2.0, s++;
  double B[D * D], term[D * D], tmp[D * D];
  for (int i = 0; i < D * D; i++) B[i] = ldexp(A[i], -s);
  for (int i = 0; i < D * D; i++) E[i] = term[i] = (i % (D + 1) == 0);
  for (int q = 1; q <= 30; q++) {
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) {
        double v = 0.0;
        for (int l = 0; l < D; l++) v += term[i * D + l] * B[l * D + j];
        tmp[i * D + j] = v / q;
      }
    for (int i = 0; i < D * D; i++) E[i] += term[i] = tmp[i];
  }
  for (int r = 0; r < s; r++) {
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) {
        double v = 0.0;
        for (int l = 0; l < D; l++) v += E[i * D + l] * E[l * D + j];
        tmp[i * D + j] = v;
      }
    memcpy(E, tmp, sizeof tmp);
  }
}

/* The exact x(T) of trial t (M = 0) from its blocks' V. */
static void exact_final(const as_trial *t, double *X) {
  as_blocks *b = NULL;
  AS_EXPECT(as_blocks_create(t, &b) == AS_OK, "blocks of the trial");
  if (!b) return;
  const long nb = as_blocks_count(t);
  const double span = t->blocks.weights_every * t->integ.dt;
  double m[D] = {0.0}, m0[D];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < D; j++) m[j] += X0[i * D + j] / N;
  memcpy(m0, m, sizeof m);
  for (long blk = 0; blk < nb; blk++) {
    const double len = fmin(span, t->integ.T - (double)blk * span);
    const double *V = as_blocks_v(b, 0, blk);
    double A[D * D], E[D * D], y[D];
    for (int i = 0; i < D * D; i++) A[i] = len * V[i];
    expm_taylor(A, E);
    for (int i = 0; i < D; i++) {
      y[i] = 0.0;
      for (int j = 0; j < D; j++) y[i] += E[i * D + j] * m[j];
    }
    memcpy(m, y, sizeof y);
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < D; j++) X[i * D + j] = X0[i * D + j] - m0[j] + m[j];
  as_blocks_destroy(&b);
}

static double max_err(const double *a, const double *b) {
  double e = 0.0;
  for (int i = 0; i < N * D; i++) e = fmax(e, fabs(a[i] - b[i]));
  return e;
}

/* Error of the run against the exact solution (x variables, or z read back through e^{mu T}). */
static double run_error(as_pipeline *pl, as_trial t, as_record *rec) {
  double fin[N * D], ex[N * D];
  *rec = run(pl, &t, fin, NULL);
  if (t.integ.vars == AS_VARS_Z) {
    as_blocks *b = NULL;
    AS_EXPECT(as_blocks_create(&t, &b) == AS_OK, "blocks (z)");
    const double s = b ? exp(as_blocks_mu(b) * t.integ.T) : 1.0;
    as_blocks_destroy(&b);
    for (int i = 0; i < N * D; i++) fin[i] *= s;
  }
  exact_final(&t, ex);
  return max_err(fin, ex);
}

static void order_check(as_pipeline *pl, as_method method, as_vars vars, int p, const char *name) {
  /* T = 2, blocks of length 0.5 (4 blocks): dt = 0.125 with 4 steps per block, then 0.0625. */
  as_trial a = per_layer_trial(method, 2.0, 0.125, 4), b = per_layer_trial(method, 2.0, 0.0625, 8);
  a.integ.vars = b.integ.vars = vars;
  AS_EXPECT(as_blocks_count(&a) == 4 && as_blocks_count(&b) == 4, "%s: 4 blocks", name);
  as_record ra, rb;
  const double ea = run_error(pl, a, &ra), eb = run_error(pl, b, &rb);
  const double ratio = ea / eb, want = ldexp(1.0, p);
  printf("order %-22s error %.3e at dt 0.125, %.3e at 0.0625: ratio %.2f (2^%d = %g)\n", name, ea,
         eb, ratio, p, want);
  AS_EXPECT(ratio >= want / 1.5 && ratio <= want * 1.5,
            "%s: error %.3g at dt = 0.125, %.3g at 0.0625: ratio %.3g, order %d wants %g", name, ea,
            eb, ratio, p, want);
  AS_EXPECT(ra.steps == 16 && rb.steps == 32, "%s: steps end on the switches (%lld, %lld)", name,
            (long long)ra.steps, (long long)rb.steps);
}

/* P = rowsoftmax(X M X^T) written out. */
static void softmax_rows(const double *X, const double *M, double *P) {
  for (int i = 0; i < N; i++) {
    double s[N], mx = -INFINITY, sum = 0.0;
    for (int j = 0; j < N; j++) {
      double v = 0.0;
      for (int a = 0; a < D; a++)
        for (int c = 0; c < D; c++) v += X[i * D + a] * M[a * D + c] * X[j * D + c];
      s[j] = v;
      mx = fmax(mx, v);
    }
    for (int j = 0; j < N; j++) sum += (s[j] = exp(s[j] - mx));
    for (int j = 0; j < N; j++) P[i * N + j] = s[j] / sum;
  }
}

int main(void) {
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "create");
  if (!pl) return as_test_finish("test_blocks_time");

  /* Block counts: T = 3, dt = 0.25 (12 layers). */
  {
    const as_method ms[2] = {AS_METHOD_RK4, AS_METHOD_LAYERS};
    for (int mi = 0; mi < 2; mi++) {
      as_trial t = per_layer_trial(ms[mi], 3.0, 0.25, 12);
      AS_EXPECT(as_blocks_count(&t) == 1, "12 layers per block of 12: one block (%ld)",
                as_blocks_count(&t));
      AS_EXPECT(as_blocks_kind_of(&t) == AS_BLOCKS_OFF, "one block is the shared weights");
      t.blocks.weights_every = 5;
      AS_EXPECT(as_blocks_count(&t) == 3, "12 layers in blocks of 5: 3 (%ld)", as_blocks_count(&t));
      t.blocks.weights_every = 1;
      AS_EXPECT(as_blocks_count(&t) == 12, "blocks of 1: 12 (%ld)", as_blocks_count(&t));
      t.integ.T = 0.25 * AS_MAX_BLOCKS;
      AS_EXPECT(as_blocks_count(&t) == AS_MAX_BLOCKS, "T = %d dt: %d blocks, not one more (%ld)",
                AS_MAX_BLOCKS, AS_MAX_BLOCKS, as_blocks_count(&t));
    }
    as_trial t = per_layer_trial(AS_METHOD_RK4, 0.3, 0.1, 1); /* 0.3 / 0.1 rounds below 3 */
    AS_EXPECT(as_blocks_count(&t) == 3, "T = 0.3, dt = 0.1: 3 blocks (%ld)", as_blocks_count(&t));
  }

  /* The reduction to shared weights, bit for bit (the spec of issue 31 at a smaller n). */
  {
    const as_method ms[4] = {AS_METHOD_EULER, AS_METHOD_RK4, AS_METHOD_DOPRI5, AS_METHOD_LAYERS};
    static const double Xb[N * D] = {0.9, -0.4, 0.2, 0.8, -0.6, -0.3};
    for (int heads = 1; heads <= 2; heads++)
      for (int mi = 0; mi < 4; mi++) {
        as_trial sh = per_layer_trial(ms[mi], 3.0, 0.25, 12);
        sh.triple.mfamily = AS_M_GAUSSIAN;
        sh.triple.M = (as_matref){0};
        sh.init.data = (as_matref){Xb, N, D, 3};
        sh.blocks.heads = heads;
        if (ms[mi] == AS_METHOD_DOPRI5) sh.integ.rtol = 1e-6, sh.integ.atol = 1e-9;
        as_trial pl1 = sh;
        sh.blocks.weights = AS_WEIGHTS_SHARED;
        sh.blocks.weights_every = 0;
        double fa[N * D], fb[N * D], pa[N * N], pb[N * N];
        as_record ra = run(pl, &sh, fa, pa), rb = run(pl, &pl1, fb, pb);
        AS_EXPECT(memcmp(fa, fb, sizeof fa) == 0 && memcmp(pa, pb, sizeof pa) == 0 &&
                      ra.steps == rb.steps && ra.rejected == rb.rejected,
                  "per_layer with one block = shared, method %d, %d head(s): tokens %g, P %g, "
                  "steps %lld/%lld",
                  (int)ms[mi], heads, max_err(fa, fb), fabs(pa[0] - pb[0]), (long long)ra.steps,
                  (long long)rb.steps);
      }
  }

  /* The order on the exact piecewise solution. */
  order_check(pl, AS_METHOD_EULER, AS_VARS_X, 1, "euler");
  order_check(pl, AS_METHOD_RK4, AS_VARS_X, 4, "rk4");
  order_check(pl, AS_METHOD_RK4, AS_VARS_Z, 4, "rk4, z variables");
  order_check(pl, AS_METHOD_DOPRI5, AS_VARS_X, 5, "dopri5 at fixed step");

  /* dopri5 with a tolerance: accurate, and steps cut at the 63 switches of 64 blocks. */
  {
    as_trial t = per_layer_trial(AS_METHOD_DOPRI5, 8.0, 0.03125, 4); /* blocks of 0.125 */
    t.integ.rtol = 1e-9;
    t.integ.atol = 1e-12;
    const long nb = as_blocks_count(&t);
    AS_EXPECT(nb == 64, "64 blocks (%ld)", nb);
    as_record r;
    const double e = run_error(pl, t, &r);
    printf("dopri5 rtol 1e-9, 64 blocks: error %.3e, %lld steps, %lld rejected\n", e,
           (long long)r.steps, (long long)r.rejected);
    AS_EXPECT(e <= 1e-7, "dopri5, tol 1e-9, 64 blocks: error %g", e);
    AS_EXPECT(r.rejected <= nb - 1, "dopri5: %lld rejected of %lld steps, %ld switches",
              (long long)r.rejected, (long long)r.steps, nb - 1);
    AS_EXPECT(r.steps >= nb, "at least one step per block (%lld)", (long long)r.steps);
  }

  /* The final attention: the softmax with M of the last block, not of a block after T. */
  {
    const as_method ms[3] = {AS_METHOD_RK4, AS_METHOD_DOPRI5, AS_METHOD_LAYERS};
    for (int mi = 0; mi < 3; mi++) {
      as_trial t = per_layer_trial(ms[mi], 1.0, 0.125, 4); /* two blocks, T at a switch */
      t.triple.mfamily = AS_M_GAUSSIAN;
      t.triple.M = (as_matref){0};
      double fin[N * D], P[N * N], want[N * N];
      run(pl, &t, fin, P);
      as_blocks *b = NULL;
      AS_EXPECT(as_blocks_create(&t, &b) == AS_OK && as_blocks_count(&t) == 2, "two blocks");
      if (!b) continue;
      softmax_rows(fin, as_blocks_m(b, 0, 1), want);
      double e = 0.0;
      for (int i = 0; i < N * N; i++) e = fmax(e, fabs(P[i] - want[i]));
      AS_EXPECT(e <= 1e-13, "method %d: final P is that of block 1 (%g)", (int)ms[mi], e);
      as_blocks_destroy(&b);
    }
  }

  as_pipeline_destroy(&pl);
  return as_test_finish("test_blocks_time");
}
