/* attention sinkhorn_fixed (as_attention_sinkhorn_fixed, docs/variants.md): one iteration is
 * the row softmax bit for bit; K iterations are the textbook alternate normalisations of
 * e^{c S} (written out here in plain doubles) to 1e-12, exactly K of them whether or not they
 * have converged, with nothing carried between calls; no NaN at any temperature; the
 * deviation it returns is the one of the matrix it returns. Then a trial with sinkhorn_iters 1
 * against the softmax trial, field by field, and trials with K = 3 (reached_T, sinkhorn_missed
 * -1) with every model key it combines with. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/attention.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/record.h"
#include "attnsweep/rules.h"
#include "attnsweep/trial.h"
#include "linalg_dyn.h"

enum { NMAX = 24 };

/* Deterministic numbers in [-1, 1) (a linear congruential generator: test data only). */
static double lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

static void random_scores(int n, uint64_t seed, double *S) {
  for (int i = 0; i < n * n; i++) S[i] = lcg(&seed);
}

/* The textbook map at a moderate temperature (|c S| small enough that e^{c S} is a plain
 * double): P = e^{c S} with its rows normalised, then K - 1 times its columns normalised and
 * then its rows. Nothing shared with attention.c. */
static void textbook(int n, const double *S, double c, int K, double *P) {
  for (int i = 0; i < n * n; i++) P[i] = exp(c * S[i]);
  for (int it = 1; it <= K; it++) {
    if (it > 1)
      for (int j = 0; j < n; j++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) s += P[i * n + j];
        for (int i = 0; i < n; i++) P[i * n + j] /= s;
      }
    for (int i = 0; i < n; i++) {
      double s = 0.0;
      for (int j = 0; j < n; j++) s += P[i * n + j];
      for (int j = 0; j < n; j++) P[i * n + j] /= s;
    }
  }
}

/* max(w, v), +inf once a NaN is met (fmax would drop it). */
static double worse(double w, double v) {
  return isnan(v) || isnan(w) ? INFINITY : fmax(w, v);
}

static double max_diff(int n, const double *A, const double *B) {
  double w = 0.0;
  for (int i = 0; i < n * n; i++) w = worse(w, fabs(A[i] - B[i]));
  return w;
}

/* Largest |row or column sum - 1|, summed in plain order (+inf for a NaN). */
static double deviation(int n, const double *P) {
  double w = 0.0;
  for (int i = 0; i < n; i++) {
    double r = 0.0, c = 0.0;
    for (int j = 0; j < n; j++) r += P[i * n + j], c += P[j * n + i];
    w = worse(w, worse(fabs(r - 1.0), fabs(c - 1.0)));
  }
  return w;
}

static double work[3 * NMAX * NMAX + 8 * NMAX];

/* K = 1 is the softmax: P, the one-hot rows and their count, bit for bit, at any temperature
 * (hardmax and saturated rows included). */
static void test_one_iteration(void) {
  const int ns[] = {1, 2, 5, 17, NMAX};
  const double logcs[] = {-INFINITY, -800.0, -3.0, 0.0, 1.5, 6.0, 30.0, 700.0, INFINITY};
  double S[NMAX * NMAX], P[NMAX * NMAX], Q[NMAX * NMAX];
  int hot[NMAX], hq[NMAX];
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof logcs / sizeof logcs[0]; b++) {
      const int n = ns[a];
      random_scores(n, 11 + a, S);
      S[0] = S[n > 1 ? 1 : 0]; /* a tie in row 0 */
      double dev = -1.0;
      const int oh = as_attention_sinkhorn_fixed(n, S, logcs[b], 1, P, hot, work, &dev);
      const int oq = as_attention_softmax(n, n, S, logcs[b], Q);
      const int oq2 = as_attention_softmax_hot(n, n, S, logcs[b], Q, hq);
      AS_EXPECT(oh == oq && oq == oq2 && memcmp(P, Q, (size_t)n * n * sizeof *P) == 0 &&
                    memcmp(hot, hq, (size_t)n * sizeof *hot) == 0,
                "n = %d, logc = %g: K = 1 differs from the softmax (one-hot %d vs %d)", n, logcs[b],
                oh, oq);
      AS_EXPECT(fabs(dev - deviation(n, P)) <= 8 * n * DBL_EPSILON,
                "n = %d, logc = %g: deviation %.17g, recomputed %.17g", n, logcs[b], dev,
                deviation(n, P));
    }
}

/* K iterations against the textbook map, to 1e-12 (the two differ by the rounding of a few
 * passes over entries <= 1, and of the potentials in score units: about n c 2^-52 K). */
static void test_textbook(void) {
  const int ns[] = {1, 2, 3, 6, 13, NMAX};
  const double cs[] = {0.25, 1.0, 3.0, 8.0};
  const int Ks[] = {1, 2, 3, 4, 7, 25, 200};
  double S[NMAX * NMAX], P[NMAX * NMAX], T[NMAX * NMAX];
  int hot[NMAX];
  double worst = 0.0;
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof cs / sizeof cs[0]; b++)
      for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++) {
        const int n = ns[a], K = Ks[k];
        random_scores(n, 100 + 7 * a + b, S);
        double dev = -1.0;
        (void)as_attention_sinkhorn_fixed(n, S, log(cs[b]), K, P, hot, work, &dev);
        textbook(n, S, cs[b], K, T);
        const double e = max_diff(n, P, T);
        worst = fmax(worst, e);
        AS_EXPECT(e <= 1e-12, "n = %d, c = %g, K = %d: %g from the textbook map", n, cs[b], K, e);
        AS_EXPECT(fabs(dev - deviation(n, P)) <= 8 * n * DBL_EPSILON,
                  "n = %d, c = %g, K = %d: deviation %.17g, recomputed %.17g", n, cs[b], K, dev,
                  deviation(n, P));
      }
  printf("K iterations against the textbook map: largest difference %.3g\n", worst);
}

/* Exactly K iterations: where the iterations have not converged P_K is the textbook P_K and not
 * P_{K-1} or P_{K+1}; where they have (to far below any tolerance the converged solver would
 * stop at), the K-th map is still the textbook's K-th, and the deviation falls with K; nothing
 * is carried from one call to the next (other scores in between, garbage in the scratch). */
static void test_exactly_k(void) {
  enum { N = 8 };
  double S[N * N], S2[N * N], P[N * N], Q[N * N], T[N * N];
  int hot[N];
  random_scores(N, 5, S);
  random_scores(N, 6, S2);
  const double c = 6.0; /* slow: column sums still off by 1e-3 after 10 iterations */
  double prev = INFINITY;
  for (int K = 1; K <= 12; K++) {
    double dev = 0.0;
    (void)as_attention_sinkhorn_fixed(N, S, log(c), K, P, hot, work, &dev);
    textbook(N, S, c, K, T);
    const double here = max_diff(N, P, T);
    textbook(N, S, c, K + 1, T);
    const double next = max_diff(N, P, T);
    AS_EXPECT(here <= 1e-12 && next > 1e-9, "K = %d: %g from P_K, %g from P_{K+1}", K, here, next);
    if (K > 1) {
      textbook(N, S, c, K - 1, T);
      const double before = max_diff(N, P, T);
      AS_EXPECT(before > 1e-9, "K = %d: %g from P_{K-1}", K, before);
    }
    AS_EXPECT(dev < prev && dev > 1e-6, "K = %d: deviation %g after %g", K, dev, prev);
    prev = dev;
  }
  /* Converged long before K = 300 (deviation 1e-16): still the textbook's 300th. */
  double dev = 0.0;
  (void)as_attention_sinkhorn_fixed(N, S, log(0.5), 300, P, hot, work, &dev);
  textbook(N, S, 0.5, 300, T);
  AS_EXPECT(max_diff(N, P, T) <= 1e-12 && dev <= 1e-14, "K = 300 at c = 0.5: %g, deviation %g",
            max_diff(N, P, T), dev);
  /* No warm start: the same call after another one, and over garbage scratch, same bits. */
  double d1 = 0.0, d2 = 0.0;
  (void)as_attention_sinkhorn_fixed(N, S, log(c), 5, P, hot, work, &d1);
  (void)as_attention_sinkhorn_fixed(N, S2, log(c), 9, Q, hot, work, &d2);
  for (size_t i = 0; i < sizeof work / sizeof work[0]; i++) work[i] = (double)i * 1e3 - 7.0;
  (void)as_attention_sinkhorn_fixed(N, S, log(c), 5, Q, hot, work, &d2);
  AS_EXPECT(memcmp(P, Q, sizeof P) == 0 && d1 == d2, "a call depends on what came before");
}

/* Any temperature: no NaN, entries in [0, 1], rows summing to 1, the deviation finite. Large c:
 * the potentials' exponents are differences to a maximum (<= 0); c = +inf (lse_scaled's
 * maximum): the max-plus steps, e.g. two rows preferring one column share both columns
 * equally after one column step, as they do at any large finite c. Tiny c (logc below
 * -745: c = 0 in a double; the potentials log(n) / c would overflow): uniform rows. */
static void test_temperatures(void) {
  enum { N = 10 };
  double S[N * N], P[N * N];
  int hot[N];
  random_scores(N, 9, S);
  const double logcs[] = {50.0, 700.0, 709.7, 710.0, 1e4, DBL_MAX, INFINITY};
  const int Ks[] = {1, 2, 3, 10, 100};
  for (size_t a = 0; a < sizeof logcs / sizeof logcs[0]; a++)
    for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++) {
      double dev = NAN;
      (void)as_attention_sinkhorn_fixed(N, S, logcs[a], Ks[k], P, hot, work, &dev);
      int ok = isfinite(dev) && dev >= 0.0;
      for (int i = 0; i < N; i++) {
        double r = 0.0;
        for (int j = 0; j < N; j++) {
          const double p = P[i * N + j];
          ok &= p >= 0.0 && p <= 1.0;
          r += p;
        }
        ok &= fabs(r - 1.0) <= 1e-12;
      }
      AS_EXPECT(ok, "logc = %g, K = %d: P not finite and row-stochastic (deviation %g)", logcs[a],
                Ks[k], dev);
    }
  {
    const double T2[4] = {1.0, 0.0, 1.0, 0.0};
    double P2[4], dev = -1.0;
    (void)as_attention_sinkhorn_fixed(2, T2, INFINITY, 2, P2, hot, work, &dev);
    AS_EXPECT(P2[0] == 0.5 && P2[1] == 0.5 && P2[2] == 0.5 && P2[3] == 0.5 && dev == 0.0,
              "c = inf, K = 2: %g %g %g %g (deviation %g)", P2[0], P2[1], P2[2], P2[3], dev);
    (void)as_attention_sinkhorn_fixed(2, T2, log(1e6), 2, P2, hot, work, &dev);
    AS_EXPECT(fabs(P2[0] - 0.5) <= 1e-12 && fabs(P2[3] - 0.5) <= 1e-12,
              "c = 1e6, K = 2: %g %g %g %g", P2[0], P2[1], P2[2], P2[3]);
    (void)as_attention_sinkhorn_fixed(2, T2, INFINITY, 1, P2, hot, work, &dev);
    AS_EXPECT(P2[0] == 1.0 && P2[1] == 0.0 && dev == 1.0, "c = inf, K = 1: the hardmax rows");
  }
  const double tiny[] = {-700.0, -707.0, -745.0, -800.0, -1e5, -INFINITY};
  for (size_t a = 0; a < sizeof tiny / sizeof tiny[0]; a++) {
    double dev = NAN, worst = 0.0;
    (void)as_attention_sinkhorn_fixed(N, S, tiny[a], 4, P, hot, work, &dev);
    for (int i = 0; i < N * N; i++) worst = worse(worst, fabs(P[i] - 1.0 / N));
    AS_EXPECT(worst <= 1e-15 && dev <= 1e-14, "logc = %g: %g from uniform (deviation %g)", tiny[a],
              worst, dev);
  }
}

/* ---- trials (pipeline.h) */

static as_trial base_trial(uint64_t index, int d, int n) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = index;
  t.triple_key = t.token_key = index;
  t.master_seed = 17;
  t.d = d;
  t.n = n;
  t.integ.T = 3.0;
  t.integ.dt = 0.05;
  t.integ.method = AS_METHOD_RK4;
  t.init.kind = AS_INIT_GAUSS;
  t.init.scale = 1.0;
  return t;
}

/* Fields a sinkhorn_fixed trial records differently from the softmax trial by definition:
 * the attention keys (attention; sinkhorn_iters applies to Sinkhorn only, -1 for the
 * softmax), the Sinkhorn deviation (NaN for the softmax), the bookkeeping, and what the
 * theorem table says (theorem.h: the paper's theorems speak about the softmax, a Sinkhorn
 * model has theorem none, so the prediction, the nearest theorem and the verdicts are those of
 * no theorem). Everything the integration and the classifier measured must be equal. */
static int model_field(const char *name) {
  static const char *skip[] = {"attention",      "sinkhorn_iters", "sinkhorn_dev", "wall_time",
                               "rank",           "theorem",        "predicted",    "near_theorem",
                               "near_predicted", "near_dist",      "near_verdict", "near_reason",
                               "near_t_decide",  "verdict",        "reason",       "t_decide",
                               "verdict_margin"};
  for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
    if (strcmp(name, skip[i]) == 0) return 1;
  return 0;
}

/* Compares a and b field by field (bytes), except model_field(); returns the differences. */
static int record_diff(const as_record *a, const as_record *b, const char *what) {
  int bad = 0;
#define AS_X_CMP(kind, name, doc)                                               \
  if (!model_field(#name) && memcmp(&a->name, &b->name, sizeof a->name) != 0) { \
    bad++;                                                                      \
    fprintf(stderr, "%s: record field %s differs\n", what, #name);              \
  }
  AS_RECORD_FIELDS(AS_X_CMP)
#undef AS_X_CMP
  return bad;
}

static void test_trials(void) {
  enum { N = 12, D = 2 };
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "pipeline");
  if (!pl) return;
  double X1[N * D], X2[N * D], P1[N * N], P2[N * N];
  as_record r1, r2;
  /* K = 1 against the softmax: x and z variables, identity and generic triples, RK4, dopri5
   * and layers, final tokens and attention bit for bit, every measured field equal. (Triples
   * whose softmax theorem reads its own coordinates, such as a good triple's l_1 levels, are
   * classified in those for the softmax and generically for Sinkhorn: not compared here.) */
  struct {
    as_vfamily vf;
    as_mfamily mf;
    as_vars vars;
    as_method method;
  } cases[] = {{AS_V_IDENTITY, AS_M_IDENTITY, AS_VARS_Z, AS_METHOD_RK4},
               {AS_V_GOOD, AS_M_GAUSSIAN, AS_VARS_X, AS_METHOD_RK4},
               {AS_V_GAUSSIAN, AS_M_SPD, AS_VARS_Z, AS_METHOD_DOPRI5},
               {AS_V_GAUSSIAN, AS_M_GAUSSIAN, AS_VARS_Z, AS_METHOD_LAYERS}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    as_trial t = base_trial(30 + c, D, N);
    t.triple.vfamily = cases[c].vf;
    t.triple.mfamily = cases[c].mf;
    t.integ.vars = cases[c].vars;
    t.integ.method = cases[c].method;
    if (cases[c].method == AS_METHOD_LAYERS) t.integ.dt = 0.25;
    as_bulk b1 = {0}, b2 = {0};
    b1.final = X1, b1.attention = P1, b2.final = X2, b2.attention = P2;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r1, &b1) == AS_OK, "softmax trial %zu", c);
    t.attn.attention = AS_ATTN_SINKHORN_FIXED;
    t.attn.sinkhorn_iters = 1;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r2, &b2) == AS_OK, "sinkhorn_fixed trial %zu", c);
    char what[64];
    snprintf(what, sizeof what, "case %zu, K = 1 against the softmax", c);
    AS_EXPECT(memcmp(X1, X2, sizeof X1) == 0 && memcmp(P1, P2, sizeof P1) == 0,
              "%s: final tokens or attention differ", what);
    AS_EXPECT(record_diff(&r1, &r2, what) == 0, "%s: records differ (above)", what);
    AS_EXPECT(r1.outcome == AS_OUT_REACHED_T && r2.outcome == AS_OUT_REACHED_T &&
                  r2.sinkhorn_missed == -1 && r2.sinkhorn_iters == 1 &&
                  r2.attention == AS_ATTN_SINKHORN_FIXED && isnan(r2.sinkhorn_tol) &&
                  r2.sinkhorn_dev >= 0.0 && isnan(r1.sinkhorn_dev) && r1.sinkhorn_iters == -1,
              "%s: outcome %d, missed %d, iters %d, tol %g, dev %g", what, r2.outcome,
              r2.sinkhorn_missed, r2.sinkhorn_iters, r2.sinkhorn_tol, r2.sinkhorn_dev);
    AS_EXPECT(r2.theorem == AS_THM_NONE, "%s: a Sinkhorn model has no theorem (%d)", what,
              r2.theorem);
  }
  /* K = 3 in the saturated regime (the converged solver's trial of jobs/examples/sinkhorn.yaml
   * at cap 3 ends not_converged): a model, reached_T, nothing missed, its deviation recorded
   * and the recorded P the map at the final tokens: doubly stochastic to that deviation,
   * different from the softmax's. */
  {
    as_trial t = base_trial(40, D, N);
    t.integ.T = 10.0;
    t.integ.dt = 0.1;
    t.attn.attention = AS_ATTN_SINKHORN_FIXED;
    t.attn.sinkhorn_iters = 3;
    as_bulk b = {0};
    b.final = X1, b.attention = P1;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r1, &b) == AS_OK, "K = 3 trial");
    AS_EXPECT(r1.outcome == AS_OUT_REACHED_T && r1.sinkhorn_missed == -1 && r1.t_final == 10.0 &&
                  isfinite(r1.sinkhorn_dev) && r1.sinkhorn_dev > 0.0 && r1.sinkhorn_iters == 3,
              "K = 3: outcome %d, missed %d, dev %g, t %g", r1.outcome, r1.sinkhorn_missed,
              r1.sinkhorn_dev, r1.t_final);
    AS_EXPECT(deviation(N, P1) <= r1.sinkhorn_dev, "K = 3: final P off by %g > recorded %g",
              deviation(N, P1), r1.sinkhorn_dev);
  }
  /* With every key it combines with (docs/variants.md, "Which variants combine"): heads,
   * per-layer weights, feed-forward parts, layers with and without skip, x and z, the sphere
   * (sa): each runs to T with its deviation recorded. */
  struct {
    const char *name;
    int heads;
    as_weights weights;
    as_ffn ffn;
    as_ffn_form form;
    as_method method;
    int skip;
    as_vars vars;
    as_norm norm;
  } combos[] = {
      {"heads z rk4", 3, AS_WEIGHTS_SHARED, AS_FFN_NONE, AS_FFN_INSIDE, AS_METHOD_RK4, 1, AS_VARS_Z,
       AS_NORM_NONE},
      {"heads x layers", 2, AS_WEIGHTS_SHARED, AS_FFN_NONE, AS_FFN_INSIDE, AS_METHOD_LAYERS, 1,
       AS_VARS_X, AS_NORM_NONE},
      {"per_layer z layers", 1, AS_WEIGHTS_PER_LAYER, AS_FFN_NONE, AS_FFN_INSIDE, AS_METHOD_LAYERS,
       1, AS_VARS_Z, AS_NORM_NONE},
      {"per_layer x rk4", 2, AS_WEIGHTS_PER_LAYER, AS_FFN_NONE, AS_FFN_INSIDE, AS_METHOD_RK4, 1,
       AS_VARS_X, AS_NORM_NONE},
      {"ffn inside z", 1, AS_WEIGHTS_SHARED, AS_FFN_RELU, AS_FFN_INSIDE, AS_METHOD_RK4, 1,
       AS_VARS_Z, AS_NORM_NONE},
      {"ffn block x", 1, AS_WEIGHTS_SHARED, AS_FFN_TANH, AS_FFN_BLOCK, AS_METHOD_RK4, 1, AS_VARS_X,
       AS_NORM_NONE},
      {"ffn block no skip", 2, AS_WEIGHTS_SHARED, AS_FFN_RELU, AS_FFN_BLOCK, AS_METHOD_LAYERS, 0,
       AS_VARS_Z, AS_NORM_NONE},
      {"sphere sa", 1, AS_WEIGHTS_SHARED, AS_FFN_NONE, AS_FFN_INSIDE, AS_METHOD_RK4, 1, AS_VARS_X,
       AS_NORM_SPHERE},
      {"layers z", 1, AS_WEIGHTS_SHARED, AS_FFN_NONE, AS_FFN_INSIDE, AS_METHOD_LAYERS, 1, AS_VARS_Z,
       AS_NORM_NONE},
  };
  for (size_t c = 0; c < sizeof combos / sizeof combos[0]; c++) {
    as_trial t = base_trial(50 + c, D, N);
    t.triple.mfamily = AS_M_GAUSSIAN;
    t.blocks.heads = combos[c].heads;
    t.blocks.weights = combos[c].weights;
    t.blocks.weights_every = 2;
    t.blocks.ffn = combos[c].ffn;
    t.blocks.ffn_form = combos[c].form;
    t.blocks.skip = combos[c].skip;
    t.integ.method = combos[c].method;
    t.integ.vars = combos[c].vars;
    t.attn.norm = combos[c].norm;
    if (combos[c].method == AS_METHOD_LAYERS) t.integ.dt = 0.25;
    t.attn.attention = AS_ATTN_SINKHORN_FIXED;
    t.attn.sinkhorn_iters = 3;
    AS_EXPECT(as_rules_check(&t, NULL) == AS_OK, "%s: a rule refuses it", combos[c].name);
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r1, NULL) == AS_OK, "%s: run", combos[c].name);
    AS_EXPECT(r1.outcome == AS_OUT_REACHED_T && r1.sinkhorn_missed == -1 &&
                  isfinite(r1.sinkhorn_dev) && r1.sinkhorn_dev >= 0.0,
              "%s: outcome %d (%s), missed %d, dev %g", combos[c].name, r1.outcome, r1.message,
              r1.sinkhorn_missed, r1.sinkhorn_dev);
    /* the same trial with one iteration: another model (K matters in every combination) */
    t.attn.sinkhorn_iters = 1;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &r2, NULL) == AS_OK, "%s: run K = 1", combos[c].name);
    AS_EXPECT(r2.sinkhorn_dev != r1.sinkhorn_dev, "%s: K = 1 and K = 3 have deviation %g",
              combos[c].name, r1.sinkhorn_dev);
  }
  as_pipeline_destroy(&pl);
}

int main(void) {
  test_one_iteration();
  test_textbook();
  test_exactly_k();
  test_temperatures();
  test_trials();
  return as_test_finish("test_sinkhorn_fixed");
}
