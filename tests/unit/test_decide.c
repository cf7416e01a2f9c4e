/* The horizon of a token still moving (classify.h as_classify_horizon, docs/theory.md 2.2):
 * against a reference that scans the definition (least t' >= t with m e^{-q (t' - t)} <=
 * tol(t') / tol(t), tol the clamped resolution law) by bisection on a bracket found by
 * doubling, over a grid of travels m, times t in each regime of the clamp, rates rho and
 * measured rates q below, at and above rho; then that a token whose travel and approach rate
 * are set exactly (hardmax follower, z'' = -q z') gets the horizon of its own numbers, that it
 * is settled when classified at that horizon, and not settled a little before. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/classify.h"
#include "attnsweep/spectral.h"

/* ln(tol(s) / L): the resolution law of classify.h. */
static double log_rel(double s, double rho) {
  double l = log(AS_CLASSIFY_TOL_C) - rho * s;
  return fmin(fmax(l, log(AS_CLASSIFY_TOL_MIN)), log(AS_CLASSIFY_TOL_MAX));
}
/* >= 0 exactly when the token is settled at s (the definition, in logarithms). */
static double margin(double m, double t, double rho, double q, double s) {
  return log_rel(s, rho) - log_rel(t, rho) + q * (s - t) - log(m);
}
/* The least s >= t with margin >= 0: margin is piecewise linear and, past its minimum,
 * increasing, so scan forward in coarse steps for the first s that passes, then bisect. */
static double reference(double m, double t, double rho, double q) {
  if (m <= 1.0) return t;
  double lo = t, step = 1e-3 / fmax(q, 1e-3);
  double hi = t + step;
  while (margin(m, t, rho, q, hi) < 0.0) {
    lo = hi;
    step *= 1.5;
    hi = lo + step;
    if (hi > 1e9) return NAN;
  }
  for (int it = 0; it < 200; it++) {
    double mid = 0.5 * (lo + hi);
    if (margin(m, t, rho, q, mid) >= 0.0)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

static void test_grid(void) {
  const double ms[] = {0.5, 1.0, 1.5, 10.0, 1e3, 1e6};
  const double rhos[] = {0.25, 1.0, 3.0};
  int compared = 0;
  for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof rhos / sizeof *rhos; b++) {
      const double rho = rhos[b];
      /* times on the ceiling, between the clamps, on the floor (classify.h) */
      const double ts[] = {1.0 / rho, 15.0 / rho, 40.0 / rho};
      const double qs[] = {0.3 * rho, rho, 2.5 * rho};
      for (int c = 0; c < 3; c++)
        for (int e = 0; e < 3; e++) {
          const double got = as_classify_horizon(ms[a], ts[c], rho, qs[e]);
          const double want = reference(ms[a], ts[c], rho, qs[e]);
          AS_EXPECT(got >= ts[c], "m %g t %g rho %g q %g: horizon %g before t", ms[a], ts[c], rho,
                    qs[e], got);
          AS_EXPECT_CLOSE(got, want, 1e-9, 1e-9 * ts[c]);
          compared++;
        }
    }
  AS_EXPECT(compared == 162, "%d cases", compared);
  /* no estimate: a token that is not approaching, or arguments that are not numbers */
  AS_EXPECT(isnan(as_classify_horizon(10.0, 5.0, 1.0, 0.0)), "q = 0");
  AS_EXPECT(isnan(as_classify_horizon(10.0, 5.0, 1.0, -0.5)), "q < 0");
  AS_EXPECT(isnan(as_classify_horizon(NAN, 5.0, 1.0, 1.0)), "m NaN");
  AS_EXPECT(isnan(as_classify_horizon(10.0, 5.0, 0.0, 1.0)), "rho 0");
}

/* One follower at distance D from its leader in d = 1 (V = 1, identity), hardmax P, its
 * acceleration -q times its speed: q_i = q exactly. */
enum { N = 4 };
typedef struct one {
  double Z0[N], Z[N], P[N * N], V[1], A[N], wr[1], wi[1], phi1[1], l1[1], pf[1];
  as_spectral sp;
  as_classify_input in;
} one;

static void one_init(one *o, double t, double D, double q) {
  memset(o, 0, sizeof *o);
  o->V[0] = o->wr[0] = 1.0;
  const double z[N] = {-4.0, 4.0, 4.0 - D, 0.5};
  for (int i = 0; i < N; i++) o->Z0[i] = 2.0 * z[i], o->Z[i] = z[i];
  const int lead[N] = {0, 1, 1, 3};
  for (int i = 0; i < N; i++) o->P[i * N + lead[i]] = 1.0;
  /* z' = V (P z - z): the follower's speed is -D; z'' = -q z' */
  for (int i = 0; i < N; i++) o->A[i] = -q * (o->Z[lead[i]] - o->Z[i]);
  as_spectral *sp = &o->sp;
  sp->d = 1;
  sp->wr = o->wr;
  sp->wi = o->wi;
  sp->phi1 = o->phi1;
  sp->l1 = o->l1;
  sp->proj_f = o->pf;
  sp->lambda1_re = sp->mu = 1.0;
  sp->kpos = 1;
  sp->theorem = AS_THM_IDENTITY;
  o->in = (as_classify_input){N, 1, o->Z0, o->Z, NULL, o->P, o->V, sp, AS_OUT_REACHED_T,
                              t, t, NULL,  0,    o->A, NULL, NULL, 0};
}

static as_record classify(one *o, as_classify_ws *ws) {
  as_record r;
  as_record_init(&r, NULL);
  as_status st = as_classify(&o->in, ws, &r);
  AS_EXPECT(st == AS_OK, "classify: %s", as_status_name(st));
  return r;
}

static void test_follower(void) {
  as_classify_ws *ws = NULL;
  AS_EXPECT(as_classify_ws_create(N, 1, &ws) == AS_OK, "workspace");
  if (!ws) return;
  const double t = 8.0, D = 0.5, q = 0.6; /* rho = 1: the tolerance falls faster than the token */
  one o;
  one_init(&o, t, D, q);
  as_record r = classify(&o, ws);
  AS_EXPECT(r.verdict == AS_VERDICT_UNRESOLVED && r.reason == AS_REASON_MOVING,
            "verdict %s reason %s", as_enum_label(&as_verdict_table, r.verdict),
            as_enum_label(&as_reason_table, r.reason));
  AS_EXPECT(r.n_unresolved == 1, "%d unresolved", r.n_unresolved);
  const double want = as_classify_horizon(D / r.cluster_tol, t, 1.0, q);
  AS_EXPECT_CLOSE(r.t_decide, want, 1e-12, 0);
  AS_EXPECT(r.t_decide > t, "t_decide %g", r.t_decide);
  /* every token at T: the follower, 0.5 from its leader, is a cluster of its own at 1e-3 L */
  AS_EXPECT(r.n_clusters_all == 4, "every cluster: %d", r.n_clusters_all);
  /* The same token at the horizon, having kept its rate: settled just after, not just before.
   * (L = the initial diameter 16 at both times.) */
  for (int side = -1; side <= 1; side += 2) {
    const double s = r.t_decide * (1.0 + side * 1e-6);
    one_init(&o, s, D * exp(-q * (s - t)), q);
    as_record b = classify(&o, ws);
    AS_EXPECT((b.n_unresolved == 0) == (side > 0), "at t_decide %+d ppm: %d unresolved", side,
              b.n_unresolved);
  }
  /* No acceleration given: the theorem's rate stands in for q. */
  one_init(&o, t, D, q);
  o.in.A = NULL;
  r = classify(&o, ws);
  AS_EXPECT_CLOSE(r.t_decide, as_classify_horizon(D / r.cluster_tol, t, 1.0, 1.0), 1e-12, 0);
  as_classify_ws_destroy(&ws);
}

int main(void) {
  test_grid();
  test_follower();
  return as_test_finish("test_decide");
}
