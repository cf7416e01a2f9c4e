/* The nearest theorem through the whole trial pipeline: a trial under a theorem is its own
 * nearest (near_verdict = verdict), a trial just outside a hypothesis is judged against the
 * theorem it misses exactly as the same trial inside it is judged (the dynamics differ by the
 * miss, 1e-7 here, so the verdicts agree), a trial on the boundary has distance 0, a trial far
 * from every theorem has none, and a failed trial has a failed near verdict. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/pipeline.h"

static as_trial explicit_trial(int d, const double *V, const double *M) {
  as_trial t;
  as_trial_defaults(&t);
  t.index = 3;
  t.master_seed = 2023;
  t.token_key = 3;
  t.triple_key = 3;
  t.d = d;
  t.integ.T = 10.0;
  t.triple.vfamily = AS_V_EXPLICIT;
  t.triple.mfamily = AS_M_EXPLICIT;
  t.triple.V.data = V;
  t.triple.V.rows = t.triple.V.cols = d;
  t.triple.M.data = M;
  t.triple.M.rows = t.triple.M.cols = d;
  return t;
}

static const char *vlabel(int v) {
  return as_enum_label(&as_verdict_table, v);
}

int main(void) {
  as_pipeline *pl = NULL;
  AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "create");
  if (!pl) return as_test_finish("test_near_pipeline");
  as_record in, out, r;
  const double I2[4] = {1, 0, 0, 1};

  /* inside the polytope theorem: its own nearest theorem */
  as_trial t = explicit_trial(2, I2, I2);
  AS_EXPECT(as_trial_run(pl, &t, NULL, &in, NULL) == AS_OK, "run inside");
  AS_EXPECT(in.theorem == AS_THM_IDENTITY && in.near_theorem == AS_THM_IDENTITY,
            "theorem %d, near %d", in.theorem, in.near_theorem);
  AS_EXPECT(in.near_dist == 0.0 && in.dist_m_symmetric == 0.0 && in.dist_v_identity == 0.0,
            "distances inside: %g %g %g", in.near_dist, in.dist_m_symmetric, in.dist_v_identity);
  AS_EXPECT(in.dist_m_posdef < 0.0, "M = I definite: %g", in.dist_m_posdef);
  AS_EXPECT(in.verdict == AS_VERDICT_CONSISTENT && in.near_verdict == in.verdict,
            "verdict %s, near %s", vlabel(in.verdict), vlabel(in.near_verdict));
  AS_EXPECT(in.near_predicted == AS_GEOM_POLYTOPE, "near prediction %d", in.near_predicted);

  /* just outside: M = [[1, a], [-a, 1]] is not symmetric; no theorem holds, the polytope
   * theorem is the nearest and judges the end state as it judged the symmetric one */
  const double a = 1e-7;
  const double Ma[4] = {1, a, -a, 1};
  t = explicit_trial(2, I2, Ma);
  AS_EXPECT(as_trial_run(pl, &t, NULL, &out, NULL) == AS_OK, "run outside");
  AS_EXPECT(out.theorem == AS_THM_NONE && out.verdict == AS_VERDICT_NO_PREDICTION,
            "theorem %d, verdict %s", out.theorem, vlabel(out.verdict));
  AS_EXPECT(out.near_theorem == AS_THM_IDENTITY, "near theorem %d", out.near_theorem);
  AS_EXPECT_CLOSE(out.dist_m_symmetric, 2 * a / sqrt(1 + a * a), 1e-6, 0);
  AS_EXPECT_CLOSE(out.near_dist, out.dist_m_symmetric, 1e-15, 0);
  AS_EXPECT(out.near_verdict == in.verdict, "near verdict %s, inside %s", vlabel(out.near_verdict),
            vlabel(in.verdict));
  AS_EXPECT(out.near_predicted == AS_GEOM_POLYTOPE, "near prediction %d", out.near_predicted);

  /* on the boundary: M = diag(1, 0), positive semidefinite only */
  const double M0[4] = {1, 0, 0, 0};
  t = explicit_trial(2, I2, M0);
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "run boundary");
  AS_EXPECT(r.theorem == AS_THM_NONE && r.near_theorem == AS_THM_IDENTITY, "theorem %d, near %d",
            r.theorem, r.near_theorem);
  AS_EXPECT(r.dist_m_posdef == 0.0 && r.near_dist == 0.0, "boundary: %g, %g", r.dist_m_posdef,
            r.near_dist);
  AS_EXPECT(r.near_verdict != AS_VERDICT_PENDING && r.near_verdict != AS_VERDICT_NO_PREDICTION,
            "judged against the polytope theorem: %s", vlabel(r.near_verdict));

  /* far from every theorem: d = 1 with Q K < 0 (all sign hypotheses missed by 1) */
  const double v1 = 1.0, m1 = -1.0;
  t = explicit_trial(1, &v1, &m1);
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "run far");
  AS_EXPECT(r.near_theorem == AS_THM_NONE && r.near_predicted == AS_GEOM_NONE, "near %d",
            r.near_theorem);
  AS_EXPECT(isnan(r.near_dist) && r.near_verdict == AS_VERDICT_NO_PREDICTION, "near %g, %s",
            r.near_dist, vlabel(r.near_verdict));
  AS_EXPECT(r.dist_m_posdef == 1.0, "QK < 0: %g", r.dist_m_posdef);

  /* a trial that cannot be set up: both verdicts failed */
  const double Mbad[4] = {1, NAN, 0, 1};
  t = explicit_trial(2, I2, Mbad);
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "run failed");
  AS_EXPECT(r.verdict == AS_VERDICT_FAILED && r.near_verdict == AS_VERDICT_FAILED,
            "verdict %s, near %s", vlabel(r.verdict), vlabel(r.near_verdict));

  /* the distances are the triple's: two trials of one triple (other tokens) share them */
  t = explicit_trial(2, I2, Ma);
  t.token_key = 4;
  AS_EXPECT(as_trial_run(pl, &t, NULL, &r, NULL) == AS_OK, "run other tokens");
  AS_EXPECT(r.near_theorem == out.near_theorem && r.near_dist == out.near_dist &&
                r.dist_m_symmetric == out.dist_m_symmetric && r.dist_m_posdef == out.dist_m_posdef,
            "same triple, same distances");

  as_pipeline_destroy(&pl);
  return as_test_finish("test_near_pipeline");
}
