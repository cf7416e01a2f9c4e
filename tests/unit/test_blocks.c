/* Transformer blocks (blocks.h): the reductions to the base model and one step of each new
 * field against the formula written out here.
 *   - H identical heads with V/H equal one head with V (x variables against the base model,
 *     z variables: 3 heads V/3 against 2 heads V/2, both the field; RK4 and layers), final
 *     tokens to 1e-12;
 *   - skip false: one layer is x1 = P(x0) x0 V^T, P the softmax written here;
 *   - ffn identity inside with W = I is the base model bit for bit; relu inside: one Euler step
 *     is z0 + dt relu((P z0 - z0) V^T);
 *   - block MLP, no skip, relu, identity weights: one layer is relu(P x0 V^T);
 *   - per_layer with weights_every >= the number of layers equals shared (bit for bit), and
 *     weights_every = 1 changes the run;
 *   - the purposes: (0, 0) is the base one, other heads and blocks differ;
 *   - res(X) is 0 for equal rows, scale invariant. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/blocks.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/triple.h"

enum { N = 7, D = 3 };

static const double X0[N * D] = {1.0,  0.5,  -0.2, -2.0, 1.0, 0.7, 0.3,  -1.7, 0.4,  2.2, 2.0,
                                 -0.3, -1.0, -1.0, 1.1,  0.1, 0.2, -0.9, 1.5,  -1.2, 0.6};
/* A good-ish V (dominant eigenvalue ~1.3) and a non-symmetric M. */
static const double V0[D * D] = {1.2, 0.1, -0.2, 0.05, 0.6, 0.1, 0.0, -0.3, 0.4};
static const double M0[D * D] = {0.8, 0.2, 0.0, -0.1, 0.6, 0.1, 0.05, 0.0, 0.5};

static as_trial base_trial(void) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = 3;
  t.master_seed = 77;
  t.token_key = t.triple_key = 3;
  t.d = D;
  t.n = N;
  t.init.kind = AS_INIT_EXPLICIT;
  t.init.data = (as_matref){X0, N, D, 1};
  t.triple.vfamily = AS_V_EXPLICIT;
  t.triple.V = (as_matref){V0, D, D, 2};
  t.triple.mfamily = AS_M_EXPLICIT;
  t.triple.M = (as_matref){M0, D, D, 3};
  t.integ.T = 2.0;
  t.integ.dt = 0.05;
  return t;
}

/* Final tokens of trial t (in the integrated variables) into fin; returns the record. */
static as_record run(as_pipeline *pl, const as_trial *t, double *fin) {
  as_record r;
  as_bulk bulk = {.final = fin};
  memset(&r, 0, sizeof r);
  as_status st = as_trial_run(pl, t, NULL, &r, &bulk);
  AS_EXPECT(st == AS_OK && r.outcome != AS_OUT_FAILED, "trial runs (%s)", r.message);
  return r;
}

static double max_diff(const double *a, const double *b, int len, double *scale) {
  double m = 0.0, s = 0.0;
  for (int i = 0; i < len; i++) {
    m = fmax(m, fabs(a[i] - b[i]));
    s = fmax(s, fabs(a[i]));
  }
  *scale = s;
  return m;
}

/* P = rowsoftmax(X M X^T) written out. */
static void softmax_rows(const double *X, const double *M, double *P) {
  for (int i = 0; i < N; i++) {
    double s[N], mx = -INFINITY, sum = 0.0;
    for (int j = 0; j < N; j++) {
      double v = 0.0;
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) v += X[i * D + a] * M[a * D + b] * X[j * D + b];
      s[j] = v;
      mx = fmax(mx, v);
    }
    for (int j = 0; j < N; j++) sum += (s[j] = exp(s[j] - mx));
    for (int j = 0; j < N; j++) P[i * N + j] = s[j] / sum;
  }
}

/* Y = P X V^T. */
static void pxvt(const double *P, const double *X, const double *V, double *Y) {
  for (int i = 0; i < N; i++)
    for (int a = 0; a < D; a++) {
      double v = 0.0;
      for (int j = 0; j < N; j++)
        for (int b = 0; b < D; b++) v += P[i * N + j] * X[j * D + b] * V[a * D + b];
      Y[i * D + a] = v;
    }
}

int main(void) {
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "create");
  if (!pl) return as_test_finish("test_blocks");
  double a[N * D], b[N * D], scale = 0.0;

  /* H identical heads with V/H: the stacked explicit form (3 d x d). */
  double V3[3 * D * D], M3[3 * D * D], V2[2 * D * D];
  for (int h = 0; h < 3; h++)
    for (int i = 0; i < D * D; i++) {
      V3[h * D * D + i] = V0[i] / 3.0;
      M3[h * D * D + i] = M0[i];
      if (h < 2) V2[h * D * D + i] = V0[i] / 2.0;
    }
  const as_method methods[2] = {AS_METHOD_RK4, AS_METHOD_LAYERS};
  for (int mi = 0; mi < 2; mi++) {
    as_trial one = base_trial(), three = base_trial();
    one.integ.method = three.integ.method = methods[mi];
    one.integ.vars = three.integ.vars = AS_VARS_X;
    three.blocks.heads = 3;
    three.triple.V = (as_matref){V3, 3 * D, D, 4};
    three.triple.M = (as_matref){M3, 3 * D, D, 5};
    AS_EXPECT(as_blocks_kind_of(&three) == AS_BLOCKS_FIELD, "three heads use the field");
    run(pl, &one, a);
    run(pl, &three, b);
    double diff = max_diff(a, b, N * D, &scale);
    AS_EXPECT(diff <= 1e-12 * scale, "x variables, %s: 3 heads V/3 vs base V: %g (scale %g)",
              mi ? "layers" : "rk4", diff, scale);
    /* z variables: against two identical heads with V/2, also through the field (the scalar
     * rescaling z = e^{-mu t} x of both is the one of V). */
    as_trial two = three;
    two.blocks.heads = 2;
    two.triple.V = (as_matref){V2, 2 * D, D, 6};
    two.triple.M = (as_matref){M3, 2 * D, D, 7};
    two.integ.vars = three.integ.vars = AS_VARS_Z;
    AS_EXPECT(as_blocks_kind_of(&two) == AS_BLOCKS_FIELD, "two heads use the field");
    run(pl, &two, a);
    run(pl, &three, b);
    diff = max_diff(a, b, N * D, &scale);
    AS_EXPECT(diff <= 1e-12 * scale, "z variables, %s: 3 heads V/3 vs 2 heads V/2: %g (scale %g)",
              mi ? "layers" : "rk4", diff, scale);
  }

  /* skip false: one layer is P(x0) x0 V^T. */
  {
    as_trial t = base_trial();
    t.integ.method = AS_METHOD_LAYERS;
    t.integ.vars = AS_VARS_X;
    t.integ.T = t.integ.dt;
    t.blocks.skip = false;
    double P[N * N], want[N * D];
    softmax_rows(X0, M0, P);
    pxvt(P, X0, V0, want);
    run(pl, &t, a);
    double diff = max_diff(want, a, N * D, &scale);
    AS_EXPECT(diff <= 1e-13 * scale, "no skip: x1 = P x0 V^T to %g (scale %g)", diff, scale);
    /* the same in z variables, read back as x through the scalar r */
    t.integ.vars = AS_VARS_Z;
    as_blocks *bl = NULL;
    AS_EXPECT(as_blocks_create(&t, &bl) == AS_OK, "blocks create");
    double r = bl ? exp(as_blocks_mu(bl)) : 1.0;
    as_blocks_destroy(&bl);
    run(pl, &t, a);
    for (int i = 0; i < N * D; i++) a[i] *= r;
    diff = max_diff(want, a, N * D, &scale);
    AS_EXPECT(diff <= 1e-13 * scale, "no skip, z: r z1 = P x0 V^T to %g (r %g)", diff, r);
  }

  /* ffn identity inside with W = I: the base model bit for bit; relu inside: one Euler step. */
  {
    as_trial base = base_trial(), ffn = base_trial();
    ffn.blocks.ffn = AS_FFN_IDENTITY;
    AS_EXPECT(as_blocks_kind_of(&ffn) == AS_BLOCKS_INSIDE, "inside hook");
    run(pl, &base, a);
    run(pl, &ffn, b);
    AS_EXPECT(memcmp(a, b, sizeof a) == 0, "ffn identity inside, W = I: identical tokens");
    ffn.blocks.ffn = AS_FFN_RELU;
    ffn.integ.method = AS_METHOD_EULER;
    ffn.integ.T = ffn.integ.dt = 0.1;
    double P[N * N], H[N * D], want[N * D];
    softmax_rows(X0, M0, P); /* z(0) = x(0): e^{0 V} = I */
    double I3[D * D] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    pxvt(P, X0, I3, H);
    for (int i = 0; i < N; i++)
      for (int c = 0; c < D; c++) {
        double v = 0.0;
        for (int e = 0; e < D; e++) v += V0[c * D + e] * (H[i * D + e] - X0[i * D + e]);
        want[i * D + c] = X0[i * D + c] + 0.1 * fmax(v, 0.0);
      }
    run(pl, &ffn, a);
    double diff = max_diff(want, a, N * D, &scale);
    AS_EXPECT(diff <= 1e-13 * scale, "relu inside, one Euler step: %g", diff);
  }

  /* Block MLP without skip, relu, identity weights: one layer is relu(P x0 V^T). */
  {
    as_trial t = base_trial();
    t.integ.method = AS_METHOD_LAYERS;
    t.integ.vars = AS_VARS_X;
    t.integ.T = t.integ.dt;
    t.blocks.skip = false;
    t.blocks.ffn = AS_FFN_RELU;
    t.blocks.ffn_form = AS_FFN_BLOCK;
    t.blocks.ffn_width = 5; /* W_1 = [I; 0], W_2 = [I 0] */
    double P[N * N], want[N * D];
    softmax_rows(X0, M0, P);
    pxvt(P, X0, V0, want);
    for (int i = 0; i < N * D; i++) want[i] = fmax(want[i], 0.0);
    run(pl, &t, a);
    double diff = max_diff(want, a, N * D, &scale);
    AS_EXPECT(diff <= 1e-13 * scale, "block relu MLP after pure attention: %g", diff);
  }

  /* Per-layer weights: one block equals shared; blocks of one layer differ. */
  {
    as_trial sh = base_trial();
    sh.triple.vfamily = AS_V_GAUSSIAN;
    sh.triple.V = (as_matref){0};
    sh.triple.mfamily = AS_M_GAUSSIAN;
    sh.triple.M = (as_matref){0};
    sh.blocks.heads = 2;
    sh.integ.method = AS_METHOD_LAYERS;
    as_trial pl1 = sh;
    pl1.blocks.weights = AS_WEIGHTS_PER_LAYER;
    pl1.blocks.weights_every = 40; /* = T / dt layers */
    AS_EXPECT(as_blocks_count(&pl1) == 1, "40 layers per block: one block (%ld)",
              as_blocks_count(&pl1));
    run(pl, &sh, a);
    run(pl, &pl1, b);
    AS_EXPECT(memcmp(a, b, sizeof a) == 0, "per_layer, weights_every = layers: as shared");
    pl1.blocks.weights_every = 1;
    AS_EXPECT(as_blocks_count(&pl1) == 40, "one layer per block: 40 blocks");
    run(pl, &pl1, b);
    double diff = max_diff(a, b, N * D, &scale);
    AS_EXPECT(diff > 1e-6 * scale, "fresh weights per layer change the run (%g)", diff);
  }

  /* Purposes. */
  AS_EXPECT(as_purpose_of(AS_PURPOSE_TRIPLE, 0, 0) == AS_PURPOSE_TRIPLE, "head 0 block 0");
  AS_EXPECT(as_purpose_of(AS_PURPOSE_TRIPLE, 1, 0) != as_purpose_of(AS_PURPOSE_TRIPLE, 0, 1) &&
                as_purpose_of(AS_PURPOSE_TRIPLE, 1, 0) != AS_PURPOSE_TRIPLE &&
                as_purpose_of(AS_PURPOSE_TRIPLE, 63, 0) != as_purpose_of(AS_PURPOSE_TRIPLE, 0, 1) &&
                as_purpose_of(AS_PURPOSE_PERTURB, 1, 0) != as_purpose_of(AS_PURPOSE_TRIPLE, 1, 0),
            "distinct purposes");

  /* res(X). */
  double same[N * D], scaled[N * D];
  for (int i = 0; i < N * D; i++) {
    same[i] = (double)(i % D) + 1.0;
    scaled[i] = 1e100 * X0[i];
  }
  AS_EXPECT(as_blocks_residual(N, D, same) == 0.0, "equal rows: res 0");
  AS_EXPECT_CLOSE(as_blocks_residual(N, D, scaled), as_blocks_residual(N, D, X0), 1e-14, 0.0);
  AS_EXPECT(as_blocks_residual(N, D, X0) > 0.5, "res of X0 %g", as_blocks_residual(N, D, X0));

  as_pipeline_destroy(&pl);
  return as_test_finish("test_blocks");
}
