/* The whole trial pipeline: a trial is a pure function of its parameters (bitwise, whatever
 * ran before it), bad trial data is a recorded failure rather than an error, bulk outputs are
 * what the record describes, and the paper's V = I case is judged consistent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/pipeline.h"

static as_trial paper_trial(uint64_t index, int d) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = index;
  t.master_seed = 2023;
  t.token_key = index;
  t.triple_key = index;
  t.d = d;
  t.integ.T = 10.0;
  return t;
}

int main(void) {
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "create");
  if (!pl) return as_test_finish("test_pipeline");

  /* The paper's polytope case: V = I, Q = K = I, d = 2, n = 20, box [-5, 5]. */
  as_trial t = paper_trial(5, 2);
  as_record a, b, c;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &a, NULL) == AS_OK, "run");
  AS_EXPECT(a.theorem == AS_THM_IDENTITY, "theorem %d", a.theorem);
  AS_EXPECT(a.predicted == AS_GEOM_POLYTOPE, "predicted %d", a.predicted);
  AS_EXPECT(a.outcome == AS_OUT_REACHED_T || a.outcome == AS_OUT_SETTLED, "outcome %d", a.outcome);
  AS_EXPECT(a.verdict == AS_VERDICT_CONSISTENT, "verdict %d (%s)", a.verdict, a.message);
  AS_EXPECT(a.n_clusters >= 1 && a.n_clusters <= t.n, "clusters %d", a.n_clusters);
  AS_EXPECT(a.trial == 5 && a.d == 2 && a.n == 20, "coordinates copied");
  AS_EXPECT(a.wall_time >= 0.0, "wall time %g", a.wall_time);

  /* Same trial after a trial of another shape and another family: bitwise identical. */
  as_trial other = paper_trial(6, 3);
  other.triple.vfamily = AS_V_PERRON;
  AS_EXPECT(as_trial_run(pl, &other, NULL, &c, NULL) == AS_OK, "other run");
  AS_EXPECT(as_trial_run(pl, &t, NULL, &b, NULL) == AS_OK, "rerun");
  as_record_strip_timing(&a);
  as_record_strip_timing(&b);
  AS_EXPECT(memcmp(&a, &b, sizeof a) == 0, "rerun is bitwise identical");

  /* A fresh pipeline gives the same record too. */
  as_pipeline *pl2 = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl2) == AS_OK, "create 2");
  AS_EXPECT(as_trial_run(pl2, &t, NULL, &b, NULL) == AS_OK, "fresh run");
  as_record_strip_timing(&b);
  AS_EXPECT(memcmp(&a, &b, sizeof a) == 0, "fresh pipeline is bitwise identical");
  as_pipeline_destroy(&pl2);
  AS_EXPECT(pl2 == NULL, "destroy clears");

  /* The pipeline keeps its last spectral analysis and e^{tV} decomposition for a triple with
   * the same bits: a second V = I trial (kept), a trial of the same shape with another triple
   * (replaced), then V = I again (replaced back), each bitwise what a fresh pipeline gives. */
  {
    as_trial same = paper_trial(8, 2), perron = paper_trial(7, 2);
    perron.triple.vfamily = AS_V_PERRON;
    const as_trial *seq[3] = {&same, &perron, &t};
    as_record got[3], want;
    for (int k = 0; k < 3; k++)
      AS_EXPECT(as_trial_run(pl, seq[k], NULL, &got[k], NULL) == AS_OK, "sequence run %d", k);
    for (int k = 0; k < 3; k++) {
      as_pipeline *fresh = NULL;
      AS_EXPECT(as_pipeline_create(NULL, NULL, &fresh) == AS_OK, "create fresh %d", k);
      AS_EXPECT(as_trial_run(fresh, seq[k], NULL, &want, NULL) == AS_OK, "fresh run %d", k);
      as_pipeline_destroy(&fresh);
      as_record_strip_timing(&got[k]);
      as_record_strip_timing(&want);
      AS_EXPECT(memcmp(&got[k], &want, sizeof want) == 0,
                "trial %d after the others is bitwise what a fresh pipeline gives", k);
    }
    AS_EXPECT(got[1].theorem != got[0].theorem || got[1].lambda1_re != got[0].lambda1_re,
              "the Perron trial has another triple (theorem %d, lambda1 %g)", got[1].theorem,
              got[1].lambda1_re);
  }

  /* Bulk outputs: initial tokens in the box, final P row-stochastic, V = I. */
  int n = t.n, d = t.d;
  double *init = malloc((size_t)n * d * sizeof *init), *fin = malloc((size_t)n * d * sizeof *fin);
  double *P = malloc((size_t)n * n * sizeof *P), *V = malloc((size_t)d * d * sizeof *V);
  double *M = malloc((size_t)d * d * sizeof *M);
  as_bulk bulk = {init, fin, P, V, M, NULL, NULL};
  AS_EXPECT(as_trial_run(pl, &t, NULL, &b, &bulk) == AS_OK, "bulk run");
  int in_box = 1, stochastic = 1;
  for (int i = 0; i < n * d; i++) in_box &= fabs(init[i]) <= 5.0;
  for (int i = 0; i < n; i++) {
    double s = 0;
    for (int j = 0; j < n; j++) s += P[i * n + j];
    stochastic &= as_close(s, 1.0, 1e-12, 0);
  }
  AS_EXPECT(in_box, "initial tokens in [-5, 5]^2");
  AS_EXPECT(stochastic, "final P rows sum to 1");
  AS_EXPECT(V[0] == 1.0 && V[1] == 0.0 && V[2] == 0.0 && V[3] == 1.0, "V = I stored");
  AS_EXPECT(M[0] == 1.0 && M[3] == 1.0, "M = I stored");
  /* `spread` is the classifier's: the diameter of the classified coordinates (V = I: z). */
  double diam = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      diam = fmax(diam, hypot(fin[i * d] - fin[j * d], fin[i * d + 1] - fin[j * d + 1]));
  AS_EXPECT_CLOSE(b.spread, diam, 1e-12, 0);

  /* A d = 1 family asked for d = 2 breaks rule scalar_d (rules.h), which validate refuses: a
   * bug of the caller, so an internal error naming the rule, never a record. */
  as_trial bad = paper_trial(7, 2);
  bad.triple.vfamily = AS_V_SCALAR;
  AS_EXPECT(as_trial_run(pl, &bad, NULL, &c, NULL) == AS_ERR_INTERNAL &&
                strstr(as_error_get()->message, "scalar_d"),
            "a trial breaking a rule stops: %s", as_error_get()->message);
  as_error_clear();
  /* Bad data (an explicit V with a NaN entry) is a recorded failure with a message. */
  static const double vnan[4] = {1, NAN, 0, 1};
  bad.triple.vfamily = AS_V_EXPLICIT;
  bad.triple.V = (as_matref){vnan, 2, 2, 1};
  AS_EXPECT(as_trial_run(pl, &bad, NULL, &c, NULL) == AS_OK, "bad trial returns ok");
  AS_EXPECT(c.outcome == AS_OUT_FAILED && c.verdict == AS_VERDICT_FAILED, "recorded as failed");
  AS_EXPECT(c.message[0] != '\0', "failure has a message");
  AS_EXPECT(c.trial == 7, "failed record keeps its coordinates");

  /* An interrupt before the first step is an outcome. */
  volatile sig_atomic_t stop = 1;
  AS_EXPECT(as_trial_run(pl, &t, &stop, &c, NULL) == AS_OK, "interrupted run");
  AS_EXPECT(c.outcome == AS_OUT_INTERRUPTED, "outcome interrupted (%d)", c.outcome);
  AS_EXPECT(isnan(c.spread), "nothing classified, no spread (%g)", c.spread);

  /* Integrating x instead of z gives the same verdict for the same trial. */
  as_trial tx = t;
  tx.integ.vars = AS_VARS_X;
  AS_EXPECT(as_trial_run(pl, &tx, NULL, &c, NULL) == AS_OK, "x run");
  AS_EXPECT(c.verdict == AS_VERDICT_CONSISTENT, "x variables verdict %d", c.verdict);
  AS_EXPECT(c.n_clusters == a.n_clusters, "x variables: %d clusters vs %d in z", c.n_clusters,
            a.n_clusters);

  /* Temperature: beta = b on the identity family reduces to m_scale = b (M = b I either way;
   * m_scale goes through sqrt(b)^2, so the tokens agree to rounding, not bit for bit). */
  as_trial tb = paper_trial(8, 2), tm = paper_trial(8, 2);
  tb.triple.beta = 3.0;
  tm.triple.m_scale = 3.0;
  double *fb = malloc((size_t)n * d * sizeof *fb), *fm = malloc((size_t)n * d * sizeof *fm);
  as_bulk bb = {NULL, fb, NULL, NULL, NULL, NULL, NULL},
          bm = {NULL, fm, NULL, NULL, NULL, NULL, NULL};
  AS_EXPECT(as_trial_run(pl, &tb, NULL, &b, &bb) == AS_OK, "beta run");
  AS_EXPECT(as_trial_run(pl, &tm, NULL, &c, &bm) == AS_OK, "m_scale run");
  double dmax = 0, smax = 0;
  for (int i = 0; i < n * d; i++) {
    dmax = fmax(dmax, fabs(fb[i] - fm[i]));
    smax = fmax(smax, fabs(fm[i]));
  }
  AS_EXPECT(dmax <= 1e-12 * smax, "beta 3 vs m_scale 3: final tokens differ by %g", dmax);
  AS_EXPECT(b.n_clusters == c.n_clusters && b.verdict == c.verdict, "same end state");
  AS_EXPECT(b.beta == 3.0 && c.beta == 1.0, "beta recorded (%g, %g)", b.beta, c.beta);
  /* and beta changes the dynamics: a cooler softmax (beta 0.05) ends elsewhere */
  tb.triple.beta = 0.05;
  AS_EXPECT(as_trial_run(pl, &tb, NULL, &b, &bb) == AS_OK, "beta 0.05 run");
  double moved = 0;
  for (int i = 0; i < n * d; i++) moved = fmax(moved, fabs(fb[i] - fm[i]));
  AS_EXPECT(moved > 1e-3 * smax, "beta 0.05 differs from beta 3 (%g)", moved);
  free(fb);
  free(fm);

  free(init);
  free(fin);
  free(P);
  free(V);
  free(M);
  as_pipeline_destroy(&pl);
  return as_test_finish("test_pipeline");
}
