/* Classifier on integrated runs at the paper's settings (docs/theory.md section 5): n = 20,
 * d = 2 or 3, x0 uniform on [-5, 5]^d, Q = K = I, RK4 with dt = 0.1, T = 10 or 15. For each
 * theorem case, 20 seeds must all be consistent with the theorem the spectral analysis
 * selects; the complex-leading and a generic case must get a label and no_prediction. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/classify.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/rng.h"
#include "attnsweep/spectral.h"
#include "attnsweep/trial.h"
#include "attnsweep/triple.h"

#define N 20
#define SEEDS 20

typedef struct tcase {
  const char *name;
  int d;
  double T;
  double V[9];
  as_theorem expect;
} tcase;

/* Runs SEEDS seeds of case c; counts verdicts into counts[AS_VERDICT_COUNT]. */
static void run_case(const tcase *c, int counts[AS_VERDICT_COUNT], int geoms[AS_GEOM_COUNT]) {
  int d = c->d;
  as_triple *tr = NULL;
  as_spectral *sp = NULL;
  as_dyn *dyn = NULL;
  as_classify_ws *ws = NULL;
  as_status st = as_triple_create(d, d, &tr);
  if (st == AS_OK) st = as_spectral_create(d, &sp);
  if (st == AS_OK) st = as_dyn_create(N, d, &dyn);
  if (st == AS_OK) st = as_classify_ws_create(N, d, &ws);
  AS_EXPECT(st == AS_OK, "%s: set-up failed: %s", c->name, as_status_name(st));
  if (st != AS_OK) goto done;
  memcpy(tr->V, c->V, (size_t)d * d * sizeof(double));
  for (int a = 0; a < d; a++) {
    tr->Q[a * d + a] = tr->K[a * d + a] = 1.0;
    tr->M[a * d + a] = 1.0;
  }
  st = as_spectral_analyze(tr, 1e-10, sp);
  AS_EXPECT(st == AS_OK, "%s: spectral analysis: %s", c->name, as_status_name(st));
  AS_EXPECT(sp->theorem == c->expect, "%s: theorem %s, expected %s", c->name,
            as_enum_label(&as_theorem_table, sp->theorem),
            as_enum_label(&as_theorem_table, c->expect));
  st = as_dyn_set_triple(dyn, tr->V, tr->M, NULL);
  AS_EXPECT(st == AS_OK, "%s: set_triple: %s", c->name, as_status_name(st));
  if (st != AS_OK) goto done;
  as_trial t;
  as_trial_defaults(&t);
  as_integ_spec integ = t.integ;
  integ.method = AS_METHOD_RK4;
  integ.vars = AS_VARS_Z;
  integ.T = c->T;
  integ.dt = 0.1;
  integ.settle_window = 0.0;
  integ.max_steps = 100000;
  for (int seed = 0; seed < SEEDS; seed++) {
    double X0[N * 3], X[N * 3];
    as_rng g;
    as_rng_init(&g, 777, (uint64_t)seed, AS_PURPOSE_TEST);
    as_rng_fill_uniform(&g, X0, (long)N * d, -5.0, 5.0);
    as_dyn_stats ds;
    st = as_dyn_run(dyn, &integ, X0, NULL, NULL, 0, NULL, NULL, &ds);
    AS_EXPECT(st == AS_OK, "%s seed %d: run: %s", c->name, seed, as_status_name(st));
    if (st != AS_OK) continue;
    st = as_dyn_state_x(dyn, X);
    AS_EXPECT(st == AS_OK, "state_x");
    as_classify_input in = {N,          d,
                            X0,         as_dyn_state(dyn),
                            X,          as_dyn_attention(dyn),
                            tr->V,      sp,
                            ds.outcome, ds.t_final,
                            c->T,       NULL,
                            0,          NULL,
                            NULL,       NULL,
                            0};
    as_record rec;
    as_record_init(&rec, NULL);
    st = as_classify(&in, ws, &rec);
    AS_EXPECT(st == AS_OK, "%s seed %d: classify: %s", c->name, seed, as_status_name(st));
    counts[rec.verdict]++;
    geoms[rec.observed]++;
    if (c->expect != AS_THM_COMPLEX && c->expect != AS_THM_NONE &&
        rec.verdict != AS_VERDICT_CONSISTENT)
      fprintf(stderr,
              "%s seed %d: %s, observed %s, margin %g, clusters %d, unresolved %d, levels %d, "
              "tol %g, max|x| %g\n",
              c->name, seed, as_enum_label(&as_verdict_table, rec.verdict),
              as_enum_label(&as_geom_table, rec.observed), rec.verdict_margin, rec.n_clusters,
              rec.n_unresolved, rec.n_levels, rec.cluster_tol, rec.max_norm_x);
  }
done:
  as_classify_ws_destroy(&ws);
  as_dyn_destroy(&dyn);
  as_spectral_destroy(&sp);
  as_triple_destroy(&tr);
}

int main(void) {
  const tcase cases[] = {
      {"identity d=2", 2, 10.0, {1, 0, 0, 1}, AS_THM_IDENTITY},
      {"identity d=3", 3, 10.0, {1, 0, 0, 0, 1, 0, 0, 0, 1}, AS_THM_IDENTITY},
      {"good (paper's Perron V)",
       2,
       10.0,
       {0.64709742, 0.81911926, 0.61210449, 0.63263484},
       AS_THM_GOOD},
      {"good (symmetric, 2 positive, 1 negative)",
       3,
       15.0,
       {1.0, 0.2, 0.0, 0.2, 0.6, 0.1, 0.0, 0.1, -0.5},
       AS_THM_GOOD},
      {"paranormal diag(1,1,-1/2)", 3, 10.0, {1, 0, 0, 0, 1, 0, 0, 0, -0.5}, AS_THM_PARANORMAL},
      {"minus identity d=2", 2, 15.0, {-1, 0, 0, -1}, AS_THM_MINUS_IDENTITY},
      {"codim k=2 diag(1,1/2,-2)", 3, 15.0, {1, 0, 0, 0, 0.5, 0, 0, 0, -2}, AS_THM_CODIM},
      {"d=1 V=1", 1, 10.0, {1}, AS_THM_D1},
      {"complex pair 1 +- 2i", 2, 10.0, {1, -2, 2, 1}, AS_THM_COMPLEX},
      {"generic, no positive eigenvalue", 2, 10.0, {-1, 0.3, 0, -0.5}, AS_THM_NONE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int counts[AS_VERDICT_COUNT] = {0}, geoms[AS_GEOM_COUNT] = {0};
    run_case(&cases[i], counts, geoms);
    printf("%-42s", cases[i].name);
    for (int v = 0; v < AS_VERDICT_COUNT; v++)
      if (counts[v]) printf(" %s:%d", as_enum_label(&as_verdict_table, v), counts[v]);
    printf(" |");
    for (int g = 0; g < AS_GEOM_COUNT; g++)
      if (geoms[g]) printf(" %s:%d", as_enum_label(&as_geom_table, g), geoms[g]);
    printf("\n");
    if (cases[i].expect == AS_THM_COMPLEX || cases[i].expect == AS_THM_NONE) {
      AS_EXPECT(counts[AS_VERDICT_NO_PREDICTION] == SEEDS, "%s: no prediction", cases[i].name);
      AS_EXPECT(geoms[AS_GEOM_NONE] == 0, "%s: every run labelled", cases[i].name);
    } else {
      AS_EXPECT(counts[AS_VERDICT_CONSISTENT] == SEEDS, "%s: %d of %d seeds consistent",
                cases[i].name, counts[AS_VERDICT_CONSISTENT], SEEDS);
    }
  }
  return as_test_finish("test_classify_integrated");
}
