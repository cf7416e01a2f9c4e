/* Every model variant against its equation written out here, at tiny sizes (n = 4, d = 2): one
 * step of a whole trial (as_trial_run, explicit tokens and matrices, x variables) equals the
 * step computed by the loops of this file from docs/variants.md's formulas, to rounding
 * (1e-13 of the scale; Sinkhorn: iterated to convergence on both sides; sinkhorn_fixed: three
 * iterations on both sides). One Euler step is
 * x1 = x0 + dt F(x0); the sphere's is x1 = normalise(x0 + dt Proj_{x0}(F)); one layer of
 * `method: layers` on the sphere is normalise(x0 + dt F) without the projection.
 *   beta finite: P = rowsoftmax(beta x M x^T);   hardmax: rows one-hot on the largest score;
 *   causal: row i over its first i + 1 scores;  Sinkhorn: doubly stochastic scaling of e^S;
 *   sinkhorn_fixed K: the row softmax, then K - 1 times columns, then rows normalised;
 *   sphere sa: F = sum_j P_ij V x_j;  usa: weights e^{s_ij} / n (with causal: j <= i);
 *   heads: sum_h P^h x V_h^T;  ffn inside (x): W sigma(P x V^T);  ffn block (ODE):
 *   P x V^T + W_2 sigma(W_1 x + b) with identity weights, b = 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/pipeline.h"

enum { N = 4, D = 2 };

static const double X0[N * D] = {0.9, -0.4, 0.3, 1.1, -0.8, 0.5, 0.6, 0.7};
static const double V0[D * D] = {0.7, -0.3, 0.4, 0.5};
static const double M0[D * D] = {1.1, 0.3, -0.2, 0.8};
/* two heads, stacked (H d x d) */
static const double V2[2 * D * D] = {0.7, -0.3, 0.4, 0.5, -0.2, 0.6, 0.1, 0.9};
static const double M2[2 * D * D] = {1.1, 0.3, -0.2, 0.8, 0.4, -0.5, 0.7, 0.2};
static const double DT = 0.1;

static as_trial trial(as_method method) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = 1;
  t.master_seed = 9;
  t.token_key = t.triple_key = 1;
  t.d = D;
  t.n = N;
  t.init.kind = AS_INIT_EXPLICIT;
  t.init.data = (as_matref){X0, N, D, 1};
  t.triple.vfamily = AS_V_EXPLICIT;
  t.triple.V = (as_matref){V0, D, D, 2};
  t.triple.mfamily = AS_M_EXPLICIT;
  t.triple.M = (as_matref){M0, D, D, 3};
  t.integ.method = method;
  t.integ.vars = AS_VARS_X;
  t.integ.T = t.integ.dt = DT;
  return t;
}

/* Scores s_ij = beta <x_i, M x_j>. */
static void scores(const double *X, const double *M, double beta, double *S) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double v = 0.0;
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) v += X[i * D + a] * M[a * D + b] * X[j * D + b];
      S[i * N + j] = beta * v;
    }
}

enum { W_SOFTMAX, W_HARDMAX, W_USA, W_SINKHORN, W_SINKHORN3 };

/* Weights W from the scores: row i over its first m_i entries (causal: i + 1). */
static void weights(const double *S, int kind, int causal, double *W) {
  for (int i = 0; i < N; i++) {
    const int m = causal ? i + 1 : N;
    double mx = -INFINITY, sum = 0.0;
    int arg = 0;
    for (int j = 0; j < m; j++)
      if (S[i * N + j] > mx) mx = S[i * N + j], arg = j;
    for (int j = 0; j < N; j++) W[i * N + j] = 0.0;
    for (int j = 0; j < m; j++) {
      if (kind == W_HARDMAX)
        W[i * N + j] = j == arg;
      else if (kind == W_USA)
        W[i * N + j] = exp(S[i * N + j]) / N;
      else
        sum += W[i * N + j] = exp(S[i * N + j] - mx);
    }
    if (kind == W_SOFTMAX || kind == W_SINKHORN || kind == W_SINKHORN3)
      for (int j = 0; j < m; j++) W[i * N + j] /= sum;
  }
  /* columns, then rows: to convergence, or twice more (sinkhorn_fixed with K = 3) */
  const int more = kind == W_SINKHORN ? 5000 : kind == W_SINKHORN3 ? 2 : 0;
  for (int it = 0; it < more; it++) {
    for (int j = 0; j < N; j++) {
      double c = 0.0;
      for (int i = 0; i < N; i++) c += W[i * N + j];
      for (int i = 0; i < N; i++) W[i * N + j] /= c;
    }
    for (int i = 0; i < N; i++) {
      double r = 0.0;
      for (int j = 0; j < N; j++) r += W[i * N + j];
      for (int j = 0; j < N; j++) W[i * N + j] /= r;
    }
  }
}

/* F += W X V^T. */
static void add_wxvt(const double *W, const double *X, const double *V, double *F) {
  for (int i = 0; i < N; i++)
    for (int a = 0; a < D; a++) {
      double v = 0.0;
      for (int j = 0; j < N; j++)
        for (int b = 0; b < D; b++) v += W[i * N + j] * V[a * D + b] * X[j * D + b];
      F[i * D + a] += v;
    }
}

static void normalise(double *X) {
  for (int i = 0; i < N; i++) {
    const double r = hypot(X[i * D], X[i * D + 1]);
    X[i * D] /= r;
    X[i * D + 1] /= r;
  }
}

static void project(const double *X, double *F) {
  for (int i = 0; i < N; i++) {
    const double xf = X[i * D] * F[i * D] + X[i * D + 1] * F[i * D + 1];
    const double xx = X[i * D] * X[i * D] + X[i * D + 1] * X[i * D + 1];
    F[i * D] -= xf / xx * X[i * D];
    F[i * D + 1] -= xf / xx * X[i * D + 1];
  }
}

/* The one step of trial t against want (n x d). */
static void check(as_pipeline *pl, const as_trial *t, const double *want, double tol,
                  const char *name) {
  double fin[N * D];
  as_record r;
  as_bulk bulk = {.final = fin};
  memset(&r, 0, sizeof r);
  as_status st = as_trial_run(pl, t, NULL, &r, &bulk);
  AS_EXPECT(st == AS_OK && r.outcome == AS_OUT_REACHED_T && r.steps == 1, "%s: one step (%s)", name,
            r.message);
  double e = 0.0, s = 0.0;
  for (int i = 0; i < N * D; i++) {
    e = fmax(e, fabs(fin[i] - want[i]));
    s = fmax(s, fabs(want[i]));
  }
  AS_EXPECT(e <= tol * s, "%s: step against the formula: %g (scale %g)", name, e, s);
}

/* want = x0 + dt F (sphere: normalise; ode_sphere: project F first), x0 normalised on the
 * sphere. */
static void step(const double *X, const double *F, int sphere, int project_first, double *want) {
  double G[N * D];
  memcpy(G, F, sizeof G);
  if (project_first) project(X, G);
  for (int i = 0; i < N * D; i++) want[i] = X[i] + DT * G[i];
  if (sphere) normalise(want);
}

int main(void) {
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "create");
  if (!pl) return as_test_finish("test_variants_formula");
  double S[N * N], W[N * N], F[N * D], want[N * D], Xs[N * D];
  memcpy(Xs, X0, sizeof Xs);
  normalise(Xs);
  const as_method methods[2] = {AS_METHOD_EULER, AS_METHOD_LAYERS};

  for (int mi = 0; mi < 2; mi++) {
    const as_method me = methods[mi];
    const int ode = me == AS_METHOD_EULER;
    /* beta finite, hardmax, causal, hardmax + causal, Sinkhorn: no normalisation. */
    const struct {
      double beta;
      int kind, causal;
      const char *name;
    } flat[] = {{2.5, W_SOFTMAX, 0, "beta 2.5"},
                {INFINITY, W_HARDMAX, 0, "hardmax"},
                {1.0, W_SOFTMAX, 1, "causal"},
                {INFINITY, W_HARDMAX, 1, "hardmax, causal"},
                {0.7, W_SINKHORN, 0, "sinkhorn, beta 0.7"},
                {0.7, W_SINKHORN3, 0, "sinkhorn_fixed 3, beta 0.7"}};
    for (size_t k = 0; k < sizeof flat / sizeof flat[0]; k++) {
      as_trial t = trial(me);
      t.triple.beta = flat[k].beta;
      t.attn.mask = flat[k].causal ? AS_MASK_CAUSAL : AS_MASK_NONE;
      if (flat[k].kind == W_SINKHORN) {
        t.attn.attention = AS_ATTN_SINKHORN;
        t.attn.sinkhorn_iters = 10000;
        t.attn.sinkhorn_tol = 0.0;
      } else if (flat[k].kind == W_SINKHORN3) {
        t.attn.attention = AS_ATTN_SINKHORN_FIXED;
        t.attn.sinkhorn_iters = 3;
      }
      scores(X0, M0, isinf(flat[k].beta) ? 1.0 : flat[k].beta, S);
      weights(S, flat[k].kind, flat[k].causal, W);
      memset(F, 0, sizeof F);
      add_wxvt(W, X0, V0, F);
      step(X0, F, 0, 0, want);
      check(pl, &t, want, 1e-13, flat[k].name);
    }
    /* The sphere: sa, usa, usa with a causal mask, sa with Sinkhorn. */
    const struct {
      as_nform form;
      int kind, causal;
      const char *name;
    } sph[] = {{AS_NFORM_SA, W_SOFTMAX, 0, "sphere sa"},
               {AS_NFORM_USA, W_USA, 0, "sphere usa"},
               {AS_NFORM_USA, W_USA, 1, "sphere usa, causal"},
               {AS_NFORM_SA, W_SINKHORN, 0, "sphere sa, sinkhorn"},
               {AS_NFORM_SA, W_SINKHORN3, 0, "sphere sa, sinkhorn_fixed 3"}};
    for (size_t k = 0; k < sizeof sph / sizeof sph[0]; k++) {
      as_trial t = trial(me);
      t.triple.beta = 1.5;
      t.attn.norm = AS_NORM_SPHERE;
      t.attn.norm_form = sph[k].form;
      t.attn.mask = sph[k].causal ? AS_MASK_CAUSAL : AS_MASK_NONE;
      if (sph[k].kind == W_SINKHORN) {
        t.attn.attention = AS_ATTN_SINKHORN;
        t.attn.sinkhorn_iters = 10000;
        t.attn.sinkhorn_tol = 0.0;
      } else if (sph[k].kind == W_SINKHORN3) {
        t.attn.attention = AS_ATTN_SINKHORN_FIXED;
        t.attn.sinkhorn_iters = 3;
      }
      scores(Xs, M0, 1.5, S);
      weights(S, sph[k].kind, sph[k].causal, W);
      memset(F, 0, sizeof F);
      add_wxvt(W, Xs, V0, F);
      step(Xs, F, 1, ode, want);
      check(pl, &t, want, 1e-13, sph[k].name);
    }
    /* Two heads with their own V_h, M_h; with sinkhorn_fixed each head's P^h is the map. */
    for (int fixed = 0; fixed < 2; fixed++) {
      as_trial t = trial(me);
      t.blocks.heads = 2;
      t.triple.V = (as_matref){V2, 2 * D, D, 4};
      t.triple.M = (as_matref){M2, 2 * D, D, 5};
      if (fixed) {
        t.attn.attention = AS_ATTN_SINKHORN_FIXED;
        t.attn.sinkhorn_iters = 3;
      }
      memset(F, 0, sizeof F);
      for (int h = 0; h < 2; h++) {
        scores(X0, M2 + h * D * D, 1.0, S);
        weights(S, fixed ? W_SINKHORN3 : W_SOFTMAX, 0, W);
        add_wxvt(W, X0, V2 + h * D * D, F);
      }
      step(X0, F, 0, 0, want);
      check(pl, &t, want, 1e-13, fixed ? "two heads, sinkhorn_fixed 3" : "two heads");
    }
  }
  /* Feed-forward (ODE forms): inside in x variables, W = I: x0 + dt relu(P x V^T); block with
   * identity weights, width d, no bias: x0 + dt (P x V^T + relu(x)); P the softmax, or the
   * map of sinkhorn_fixed with K = 3. */
  for (int fixed = 0; fixed < 2; fixed++) {
    as_trial t = trial(AS_METHOD_EULER);
    t.blocks.ffn = AS_FFN_RELU;
    if (fixed) {
      t.attn.attention = AS_ATTN_SINKHORN_FIXED;
      t.attn.sinkhorn_iters = 3;
    }
    scores(X0, M0, 1.0, S);
    weights(S, fixed ? W_SINKHORN3 : W_SOFTMAX, 0, W);
    memset(F, 0, sizeof F);
    add_wxvt(W, X0, V0, F);
    double G[N * D];
    for (int i = 0; i < N * D; i++) G[i] = fmax(F[i], 0.0);
    step(X0, G, 0, 0, want);
    check(pl, &t, want, 1e-13,
          fixed ? "ffn relu inside, x variables, sinkhorn_fixed 3"
                : "ffn relu inside, x variables");
    t.blocks.ffn_form = AS_FFN_BLOCK;
    for (int i = 0; i < N * D; i++) G[i] = F[i] + fmax(X0[i], 0.0);
    step(X0, G, 0, 0, want);
    check(pl, &t, want, 1e-13, fixed ? "ffn relu block, sinkhorn_fixed 3" : "ffn relu block");
  }
  as_pipeline_destroy(&pl);
  return as_test_finish("test_variants_formula");
}
