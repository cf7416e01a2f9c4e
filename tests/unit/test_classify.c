/* Classifier on synthetic end states with known answers: each geometry, each failure mode,
 * cases on both sides of every threshold. The spectral record is filled by hand (no LAPACK),
 * attention rows are hardmax rows towards chosen leaders, so token speeds are known exactly:
 * z_i' = V (z_leader - z_i). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/classify.h"
#include "attnsweep/rng.h"
#include "attnsweep/trial.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define NMAX 24
#define DMAX 3

typedef struct fake {
  int n, d;
  double Z0[NMAX * DMAX], Z[NMAX * DMAX], X[NMAX * DMAX], P[NMAX * NMAX], V[DMAX * DMAX];
  double wr[DMAX], wi[DMAX], phi1[DMAX], l1[DMAX], pf[DMAX * DMAX], pp[DMAX * DMAX];
  as_spectral sp;
  as_classify_input in;
} fake;

static as_rng g;

/* A fake of shape (n, d), theorem thm, V = diag(vdiag), initial tokens U[-5,5]^d. */
static void fake_init(fake *f, int n, int d, as_theorem thm, const double *vdiag) {
  memset(f, 0, sizeof *f);
  f->n = n;
  f->d = d;
  as_rng_fill_uniform(&g, f->Z0, (long)n * d, -5.0, 5.0);
  for (int a = 0; a < d; a++) {
    f->V[a * d + a] = vdiag[a];
    f->wr[a] = vdiag[a];
  }
  as_spectral *sp = &f->sp;
  sp->d = d;
  sp->wr = f->wr;
  sp->wi = f->wi;
  sp->phi1 = f->phi1;
  sp->l1 = f->l1;
  sp->proj_f = f->pf;
  sp->proj_pos = f->pp;
  sp->lambda1_re = vdiag[0];
  sp->theorem = thm;
  for (int a = 0; a < d; a++) sp->mu = fmax(sp->mu, vdiag[a]), sp->kpos += vdiag[a] > 0;
  f->in.n = n;
  f->in.d = d;
  f->in.Z0 = f->Z0;
  f->in.Z = f->Z;
  f->in.X = NULL;
  f->in.P = f->P;
  f->in.V = f->V;
  f->in.sp = sp;
  f->in.outcome = AS_OUT_REACHED_T;
  f->in.t_final = 12.0; /* 1000 e^{-12} = 6e-3: below the 2% ceiling */
  f->in.T = 12.0;
}

/* Hardmax attention: row i is e_{lead[i]}. */
static void hardmax(fake *f, const int *lead) {
  memset(f->P, 0, sizeof f->P);
  for (int i = 0; i < f->n; i++) f->P[i * f->n + lead[i]] = 1.0;
}

/* Token i at point pts[grp[i]] plus an offset of length off[i] in a random direction; the
 * first token of each group is its leader and sits exactly at the point. */
static void place(fake *f, const double *pts, const int *grp, double off, int *lead) {
  int d = f->d;
  for (int i = 0; i < f->n; i++) {
    int first = 0;
    while (grp[first] != grp[i]) first++;
    lead[i] = first;
    double dir[DMAX], nr = 0.0;
    as_rng_fill_normal(&g, dir, d, 1.0);
    for (int a = 0; a < d; a++) nr += dir[a] * dir[a];
    nr = sqrt(nr);
    for (int a = 0; a < d; a++)
      f->Z[i * d + a] = pts[grp[i] * d + a] + (i == first ? 0.0 : off * dir[a] / nr);
  }
  hardmax(f, lead);
}

static double diam(const double *Y, int n, int k) {
  double best = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double s = 0.0;
      for (int a = 0; a < k; a++)
        s += (Y[i * k + a] - Y[j * k + a]) * (Y[i * k + a] - Y[j * k + a]);
      best = fmax(best, sqrt(s));
    }
  return best;
}

static as_record run(fake *f, as_classify_ws *ws) {
  as_record rec;
  as_record_init(&rec, NULL);
  as_status st = as_classify(&f->in, ws, &rec);
  AS_EXPECT(st == AS_OK, "as_classify returned %s", as_status_name(st));
  return rec;
}

#define EXPECT_VERDICT(rec, v, geo)                                                      \
  do {                                                                                   \
    AS_EXPECT((rec).verdict == (v) && (rec).observed == (geo), "verdict %s observed %s", \
              as_enum_label(&as_verdict_table, (rec).verdict),                           \
              as_enum_label(&as_geom_table, (rec).observed));                            \
    expect_reason_fits(&(rec));                                                          \
  } while (0)

/* The reason (classify.h) belongs to the verdict: none for consistent and no verdict, one of
 * the unresolved reasons for unresolved, one of the failures for violated; a horizon only for
 * an unresolved verdict, never before the time reached. */
static void expect_reason_fits(const as_record *r) {
  const int unres = r->reason == AS_REASON_MOVING || r->reason == AS_REASON_METASTABLE ||
                    r->reason == AS_REASON_MERGING || r->reason == AS_REASON_MIXING ||
                    r->reason == AS_REASON_PRECISION;
  const int fails = r->reason == AS_REASON_INTERIOR || r->reason == AS_REASON_LEVELS ||
                    r->reason == AS_REASON_MIDDLE || r->reason == AS_REASON_STALLED ||
                    r->reason == AS_REASON_NOT_BOOLEAN;
  const int ok = r->verdict == AS_VERDICT_UNRESOLVED ? unres
                 : r->verdict == AS_VERDICT_VIOLATED ? fails
                                                     : r->reason == AS_REASON_NONE;
  AS_EXPECT(ok, "verdict %s with reason %s", as_enum_label(&as_verdict_table, r->verdict),
            as_enum_label(&as_reason_table, r->reason));
  AS_EXPECT(r->verdict == AS_VERDICT_UNRESOLVED || isnan(r->t_decide),
            "t_decide %g on a decided verdict", r->t_decide);
}

/* ------------------------------------------------------------------ identity (V = I) */
static void test_identity(as_classify_ws *ws2, as_classify_ws *ws3) {
  fake f;
  const double one[] = {1, 1, 1};
  int lead[NMAX];
  /* square of side 6, its centre 0 and an edge midpoint: vertices, zero, boundary */
  const double sq[] = {-3, -3, 3, -3, 3, 3, -3, 3, 0, 0, 0, -3};
  int grp[20];
  for (int i = 0; i < 20; i++) grp[i] = i % 6;
  fake_init(&f, 20, 2, AS_THM_IDENTITY, one);
  /* leaders 0..3 start at the corners of the initial box: they are initial hull vertices */
  const double corners[] = {-5, -5, 5, -5, 5, 5, -5, 5};
  memcpy(f.Z0, corners, sizeof corners);
  place(&f, sq, grp, 1e-4, lead);
  as_record r = run(&f, ws2);
  EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_POLYTOPE);
  AS_EXPECT(r.n_clusters == 6 && r.n_unresolved == 0, "clusters %d unresolved %d", r.n_clusters,
            r.n_unresolved);
  AS_EXPECT(r.n_vertices == 4, "vertices %d", r.n_vertices);
  AS_EXPECT(r.n_leaders == 6 && r.rank_p == 6, "leaders %d rank %d", r.n_leaders, r.rank_p);
  AS_EXPECT(r.leaders_init_vertices == 4, "leaders at initial vertices %d",
            r.leaders_init_vertices);
  AS_EXPECT(r.p_bool_dist == 0.0, "Boolean P");
  {
    const int *ld = as_classify_leaders(ws2), *lb = as_classify_labels(ws2);
    int okl = 1;
    for (int i = 0; i < 20; i++) okl &= ld[i] == (i < 6) && lb[i] == i % 6;
    AS_EXPECT(okl, "leaders are tokens 0..5, token i in cluster i %% 6");
  }
  AS_EXPECT_CLOSE(r.p_uniform_dist, 1.0 - 1.0 / 20, 1e-15, 0);
  double s0 = diam(f.Z0, 20, 2);
  AS_EXPECT_CLOSE(r.cluster_tol, s0 * AS_CLASSIFY_TOL_C * exp(-12.0), 1e-12, 0);
  AS_EXPECT(r.verdict_margin < 0.05, "margin %g (edge point at depth ~ noise)", r.verdict_margin);
  double m0[2] = {0}, m1[2] = {0};
  for (int i = 0; i < 20; i++)
    for (int a = 0; a < 2; a++) m0[a] += f.Z0[2 * i + a] / 20, m1[a] += f.Z[2 * i + a] / 20;
  AS_EXPECT_CLOSE(r.mean_shift, hypot(m1[0] - m0[0], m1[1] - m0[1]) / s0, 1e-12, 0);
  AS_EXPECT_CLOSE(r.spread, diam(f.Z, 20, 2), 1e-12, 0);
  /* sep_gap (observe.h): the nearest centres are 3 apart and every token lies within 1e-4 of
   * its centre's point, so the smallest gap along a centre line is 3 up to 2e-4 (and the
   * centres move by less than 1e-4): 3 / spread within 1e-4 */
  AS_EXPECT_CLOSE(r.sep_gap, 3.0 / r.spread, 0, 1e-4);

  /* an interior cluster well inside: violated */
  const double sqi[] = {-3, -3, 3, -3, 3, 3, -3, 3, 1, 0.5, 0, -3};
  place(&f, sqi, grp, 1e-4, lead);
  r = run(&f, ws2);
  EXPECT_VERDICT(r, AS_VERDICT_VIOLATED, AS_GEOM_CLUSTERS);
  AS_EXPECT(r.verdict_margin > 1.0, "margin %g", r.verdict_margin);

  /* interior depth on both sides of its threshold (L1 depth / sqrt(2) vs cluster_tol):
   * the centre at (x, 0) of the square has L1 depth 3 - |x|. */
  double tol = r.cluster_tol;
  for (int side = 0; side < 2; side++) {
    double depth = (side ? 1.3 : 0.7) * sqrt(2.0) * tol;
    double sqd[] = {-3, -3, 3, -3, 3, 3, -3, 3, 3 - depth, 0, 0, -3};
    place(&f, sqd, grp, 1e-4, lead);
    r = run(&f, ws2);
    AS_EXPECT(r.cluster_tol == tol, "same resolution");
    AS_EXPECT(r.verdict == (side ? AS_VERDICT_VIOLATED : AS_VERDICT_CONSISTENT),
              "depth %.2f x tol: verdict %s margin %g", side ? 1.3 : 0.7,
              as_enum_label(&as_verdict_table, r.verdict), r.verdict_margin);
  }

  /* a token far from its leader (row still pointing there): unresolved */
  place(&f, sq, grp, 1e-4, lead);
  f.Z[2 * 7] += 0.5;
  r = run(&f, ws2);
  EXPECT_VERDICT(r, AS_VERDICT_UNRESOLVED, AS_GEOM_UNRESOLVED);
  AS_EXPECT(r.n_unresolved == 1, "unresolved %d", r.n_unresolved);
  AS_EXPECT_CLOSE(r.verdict_margin, 0.5 / r.cluster_tol, 1e-3, 0); /* 0.5 +- 1e-4 */

  /* settling threshold: a follower at 0.5 tol from its leader is settled and joins it; at
   * 2 tol it is unresolved (its remaining travel r = distance exceeds the resolution). */
  for (int side = 0; side < 2; side++) {
    place(&f, sq, grp, 0.0, lead);
    f.Z[2 * 7] += (side ? 2.0 : 0.5) * tol;
    r = run(&f, ws2);
    AS_EXPECT(r.n_unresolved == side && r.n_clusters == 6, "side %d: %d unresolved, %d clusters",
              side, r.n_unresolved, r.n_clusters);
  }

  /* t_final = 5: the resolution is capped at 2% of the spread */
  place(&f, sq, grp, 1e-3, lead);
  f.in.t_final = 5.0;
  r = run(&f, ws2);
  AS_EXPECT_CLOSE(r.cluster_tol, s0 * AS_CLASSIFY_TOL_MAX, 1e-12, 0);
  EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_POLYTOPE);
  f.in.t_final = 12.0;

  /* one cluster */
  const double pt[] = {1, 2};
  int g1[20] = {0};
  place(&f, pt, g1, 1e-5, lead);
  r = run(&f, ws2);
  EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_SINGLE);
  AS_EXPECT(r.n_clusters == 1 && r.n_leaders == 1 && r.rank_p == 1, "single");

  /* d = 3 (LP path): cube corners + a face centre (boundary): consistent; + body centre
   * offset from 0: violated */
  double cube[10 * 3];
  for (int c = 0; c < 8; c++)
    for (int a = 0; a < 3; a++) cube[3 * c + a] = ((c >> a) & 1) ? 2.0 : -2.0;
  const double face[] = {0.5, -0.3, 2.0}, body[] = {0.5, -0.3, 0.7};
  memcpy(cube + 24, face, sizeof face);
  memcpy(cube + 27, body, sizeof body);
  int grp3[24];
  fake_init(&f, 24, 3, AS_THM_IDENTITY, one);
  for (int i = 0; i < 24; i++) grp3[i] = i % 9;
  place(&f, cube, grp3, 1e-5, lead);
  r = run(&f, ws3);
  EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_POLYTOPE);
  AS_EXPECT(r.n_clusters == 9 && r.n_vertices == 8, "3-D: clusters %d vertices %d", r.n_clusters,
            r.n_vertices);
  for (int i = 0; i < 24; i++) grp3[i] = i % 10;
  place(&f, cube, grp3, 1e-5, lead);
  r = run(&f, ws3);
  EXPECT_VERDICT(r, AS_VERDICT_VIOLATED, AS_GEOM_CLUSTERS);
  AS_EXPECT(r.n_vertices == 8, "vertices %d", r.n_vertices);
}

/* ------------------------------------------------------------------ separation */
/* Four levels of l_1^T z contradict a good triple only once the horizon is long against the
 * spectral gap: with lambda = (2, 0.5) (gap 1.5, gap * t = 18) it is violated; with
 * lambda = (2, 1.99) (gap 0.01, gap * t = 0.12 < ln 50) the same end state is unresolved,
 * margin ln(50) / 0.12; on either side of the threshold gap * t = AS_CLASSIFY_SEP. */
static void test_separation(as_classify_ws *ws) {
  const double second[] = {0.5, 1.99, 2.0 - 1.01 * AS_CLASSIFY_SEP / 12.0,
                           2.0 - 0.99 * AS_CLASSIFY_SEP / 12.0};
  const as_verdict want[] = {AS_VERDICT_VIOLATED, AS_VERDICT_UNRESOLVED, AS_VERDICT_VIOLATED,
                             AS_VERDICT_UNRESOLVED};
  for (int c = 0; c < 4; c++) {
    fake f;
    const double diag[] = {2, second[c]};
    fake_init(&f, 20, 2, AS_THM_GOOD, diag);
    f.l1[0] = 1.0; /* V diagonal: l1 = phi1 = e_1 */
    f.phi1[0] = 1.0;
    int lead[NMAX], first[4] = {-1, -1, -1, -1};
    const double levels[4] = {-3, -1, 1, 4};
    for (int i = 0; i < 20; i++) {
      int l = i % 4;
      if (first[l] < 0) first[l] = i;
      lead[i] = first[l];
      f.Z[2 * i] = levels[l];
      f.Z[2 * i + 1] = 0.0;
    }
    hardmax(&f, lead);
    as_record r = run(&f, ws);
    AS_EXPECT(r.n_levels == 4, "case %d: %d levels", c, r.n_levels);
    AS_EXPECT(r.verdict == (int32_t)want[c], "case %d: verdict %s", c,
              as_enum_label(&as_verdict_table, r.verdict));
    AS_EXPECT(r.observed == AS_GEOM_CLUSTERS, "case %d: observed %s", c,
              as_enum_label(&as_geom_table, r.observed));
    expect_reason_fits(&r);
    if (c == 1) AS_EXPECT_CLOSE(r.verdict_margin, AS_CLASSIFY_SEP / (0.01 * 12.0), 1e-9, 0);
    /* four levels: violated for too many levels once separated, else held back (metastable)
     * until t_decide = ln 50 / sep, sep = 2 - second */
    if (want[c] == AS_VERDICT_VIOLATED)
      AS_EXPECT(r.reason == AS_REASON_LEVELS, "case %d: reason %s", c,
                as_enum_label(&as_reason_table, r.reason));
    else {
      AS_EXPECT(r.reason == AS_REASON_METASTABLE, "case %d: reason %s", c,
                as_enum_label(&as_reason_table, r.reason));
      AS_EXPECT_CLOSE(r.t_decide, AS_CLASSIFY_SEP / (2.0 - second[c]), 1e-12, 0);
      AS_EXPECT(r.t_decide > 12.0, "case %d: t_decide %g not past T = 12", c, r.t_decide);
    }
    AS_EXPECT(r.n_clusters_all == 4, "case %d: %d clusters of all tokens", c, r.n_clusters_all);
  }
}

/* ------------------------------------------------------------------ good triple */
static void test_good(as_classify_ws *ws) {
  /* V = [[2, 1], [0, 0.5]]: lambda_1 = 2, right phi = (1, 0), left l1 = (1, 2/3). */
  fake f;
  const double diag[] = {2, 0.5};
  fake_init(&f, 20, 2, AS_THM_GOOD, diag);
  f.V[1] = 1.0;
  f.l1[0] = 1.0, f.l1[1] = 2.0 / 3.0;
  f.phi1[0] = 1.0;
  int lead[NMAX];
  for (int pattern = 0; pattern < 4; pattern++) {
    /* levels: {-3, 4}; {-3, 0, 4}; {-3, 1, 4}; {-3, -1, 1, 4} */
    const double levels[4][4] = {{-3, 4}, {-3, 0, 4}, {-3, 1, 4}, {-3, -1, 1, 4}};
    const int nl[] = {2, 3, 3, 4};
    int first[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 20; i++) {
      int l = i % nl[pattern];
      if (first[l] < 0) first[l] = i;
      lead[i] = first[l];
      /* the free direction is huge and different for every token: it must not matter */
      double y = 1e6 * as_rng_uniform(&g);
      f.Z[2 * i + 1] = y;
      f.Z[2 * i] = levels[pattern][l] - 2.0 / 3.0 * y + 1e-7 * as_rng_uniform(&g);
    }
    hardmax(&f, lead);
    as_record r = run(&f, ws);
    AS_EXPECT(r.n_levels == nl[pattern] && r.n_unresolved == 0, "pattern %d: %d levels", pattern,
              r.n_levels);
    AS_EXPECT_CLOSE(r.level_a, -3.0, 0, 1e-6);
    AS_EXPECT_CLOSE(r.level_b, 4.0, 0, 1e-6);
    if (pattern < 2)
      EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_HYPERPLANES);
    else
      EXPECT_VERDICT(r, AS_VERDICT_VIOLATED, AS_GEOM_CLUSTERS);
    if (pattern == 3) AS_EXPECT_CLOSE(r.verdict_margin, 4.0 / 3.0, 1e-15, 0);
  }
  /* the middle level on both sides of its threshold |mid| <= cluster_tol */
  for (int side = 0; side < 2; side++) {
    double tol = 0.0;
    for (int pass = 0; pass < 2; pass++) {
      double mid = pass ? (side ? 2.0 : 0.5) * tol : 0.0;
      for (int i = 0; i < 20; i++) {
        int l = i % 3;
        lead[i] = l;
        double y = 10.0 * as_rng_uniform(&g);
        f.Z[2 * i + 1] = y;
        f.Z[2 * i] = (l == 0 ? -3.0 : l == 1 ? mid : 4.0) - 2.0 / 3.0 * y;
      }
      hardmax(&f, lead);
      as_record r = run(&f, ws);
      tol = r.cluster_tol;
      if (pass)
        AS_EXPECT(r.verdict == (side ? AS_VERDICT_VIOLATED : AS_VERDICT_CONSISTENT),
                  "middle level at %.1f tol: %s", side ? 2.0 : 0.5,
                  as_enum_label(&as_verdict_table, r.verdict));
    }
  }
  /* a token with c = 1 attending the top leader moves at c' = 2 (4 - 1): unresolved */
  f.Z[2 * 2] = 1.0 - 2.0 / 3.0 * f.Z[2 * 2 + 1];
  for (int i = 0; i < 20; i++) lead[i] = i % 2;
  for (int i = 0; i < 20; i++) {
    if (i == 2) continue;
    f.Z[2 * i] = (i % 2 ? 4.0 : -3.0) - 2.0 / 3.0 * f.Z[2 * i + 1];
  }
  lead[2] = 1;
  hardmax(&f, lead);
  as_record r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_UNRESOLVED, AS_GEOM_UNRESOLVED);
  AS_EXPECT(r.n_unresolved == 1, "unresolved %d", r.n_unresolved);
}

/* ------------------------------------------------------------------ paranormal, codim */
static void test_paranormal(as_classify_ws *ws) {
  fake f;
  const double diag[] = {1, 1, -0.5};
  fake_init(&f, 24, 3, AS_THM_PARANORMAL, diag);
  /* oblique: F = span(e0, e1), G = span(g), g = (1, 1, 1); pi_F v = v - v_2 g */
  const double pf[] = {1, 0, -1, 0, 1, -1, 0, 0, 0};
  memcpy(f.pf, pf, sizeof pf);
  f.sp.dim_f = 2;
  /* V = 1 on F, -1/2 on G: V = pi_F - 0.5 (I - pi_F) */
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) f.V[3 * a + b] = 1.5 * pf[3 * a + b] - 0.5 * (a == b);
  int lead[NMAX];
  const double tri[] = {-2, -1, 3, -1, 0, 4, 0.5, -1, 0.3, 0.6};
  for (int variant = 0; variant < 2; variant++) {
    int ng = variant ? 5 : 4; /* 3 vertices + an edge point; + an interior point */
    int first[5] = {-1, -1, -1, -1, -1};
    for (int i = 0; i < 24; i++) {
      int c = i % ng;
      if (first[c] < 0) first[c] = i;
      lead[i] = first[c];
      double y = 50.0 * as_rng_normal(&g); /* G-part: free and large */
      f.Z[3 * i] = tri[2 * c] + y + (i == first[c] ? 0 : 1e-6);
      f.Z[3 * i + 1] = tri[2 * c + 1] + y;
      f.Z[3 * i + 2] = y;
    }
    hardmax(&f, lead);
    as_record r = run(&f, ws);
    AS_EXPECT(r.n_clusters == ng && r.n_unresolved == 0, "paranormal: %d clusters, %d unresolved",
              r.n_clusters, r.n_unresolved);
    if (variant == 0) {
      EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_POLYTOPE_SUBSPACE);
      AS_EXPECT(r.n_vertices == 3, "vertices %d", r.n_vertices);
    } else {
      EXPECT_VERDICT(r, AS_VERDICT_VIOLATED, AS_GEOM_CLUSTERS);
    }
  }
  /* codim k = 2: the same F as the Re > 0 subspace (proj_pos); at most 3 distinct limits of
   * pi_F z. proj_f holds a projector of dim 1 (the paranormal test's onto lambda_1's
   * eigenspace when lambda_1 is simple): the conjecture never reads it (issue 47). */
  f.sp.theorem = AS_THM_CODIM;
  memcpy(f.pp, pf, sizeof pf);
  f.sp.dim_pos = 2;
  const double pf1[] = {1, 0, -1, 0, 0, 0, 0, 0, 0};
  memcpy(f.pf, pf1, sizeof pf1);
  f.sp.dim_f = 1;
  /* Variant 2: four limits (0, 0), (0, 1), (1, 0), (-1, 0) in F, three values on proj_f's
   * line: violated on F, "consistent" on the wrong reading. */
  const double four[] = {0, 0, 0, 1, 1, 0, -1, 0};
  for (int variant = 0; variant < 3; variant++) {
    int ng = variant ? 4 : 3;
    const double *pts = variant == 2 ? four : tri;
    int first[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 24; i++) {
      int c = i % ng;
      if (first[c] < 0) first[c] = i;
      lead[i] = first[c];
      double y = 50.0 * as_rng_normal(&g);
      f.Z[3 * i] = pts[2 * c] + y;
      f.Z[3 * i + 1] = pts[2 * c + 1] + y;
      f.Z[3 * i + 2] = y;
    }
    hardmax(&f, lead);
    as_record r = run(&f, ws);
    AS_EXPECT(r.n_levels == ng, "codim variant %d: levels %d", variant, r.n_levels);
    if (variant == 0)
      EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_SUBSPACES);
    else
      EXPECT_VERDICT(r, AS_VERDICT_VIOLATED, AS_GEOM_CLUSTERS);
  }
}

/* ------------------------------------------------------------------ V = -I */
static void test_minus_identity(as_classify_ws *ws) {
  fake f;
  const double diag[] = {-1, -1};
  fake_init(&f, 20, 2, AS_THM_MINUS_IDENTITY, diag);
  f.in.X = f.X;
  f.in.t_final = f.in.T = 15.0;
  /* collapsed: |x| <= 0.3 < tau = min(1, sqrt(20 * 2 / 30)); P consistent with x */
  as_rng_fill_uniform(&g, f.X, 40, -0.2, 0.2);
  for (int i = 0; i < 20; i++) {
    double s = 0.0, row[20];
    for (int j = 0; j < 20; j++)
      row[j] = exp(f.X[2 * i] * f.X[2 * j] + f.X[2 * i + 1] * f.X[2 * j + 1]), s += row[j];
    for (int j = 0; j < 20; j++) f.P[20 * i + j] = row[j] / s;
  }
  for (int e = 0; e < 40; e++) f.Z[e] = exp(15.0) * f.X[e];
  as_record r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_COLLAPSE);
  AS_EXPECT(r.max_norm_x <= 0.2 * sqrt(2.0) && r.verdict_margin < 1.0, "max|x| %g margin %g",
            r.max_norm_x, r.verdict_margin);
  AS_EXPECT(r.p_uniform_dist < 0.01, "P near J/n: %g", r.p_uniform_dist);
  /* far from 0 and stalled (uniform P, zero mean: x' = -mean = 0): violated */
  as_rng_fill_uniform(&g, f.X, 40, -3.0, 3.0);
  double m[2] = {0, 0};
  for (int i = 0; i < 20; i++) m[0] += f.X[2 * i] / 20, m[1] += f.X[2 * i + 1] / 20;
  for (int i = 0; i < 20; i++) f.X[2 * i] -= m[0], f.X[2 * i + 1] -= m[1];
  for (int e = 0; e < 400; e++) f.P[e] = 1.0 / 20;
  r = run(&f, ws);
  AS_EXPECT(r.verdict == AS_VERDICT_VIOLATED, "stalled away from 0: %s",
            as_enum_label(&as_verdict_table, r.verdict));
  AS_EXPECT(r.verdict_margin > 1.0, "margin %g", r.verdict_margin);
  /* far from 0 and moving (hardmax rows towards token 0): unresolved */
  int lead[20] = {0};
  hardmax(&f, lead);
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_UNRESOLVED, AS_GEOM_UNRESOLVED);
  /* x overflowed: non-finite */
  f.X[5] = INFINITY;
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_NONFINITE, AS_GEOM_NONE);
  f.in.X = NULL;
  as_record rr;
  as_record_init(&rr, NULL);
  AS_EXPECT(as_classify(&f.in, ws, &rr) == AS_ERR_ARG, "minus_identity without x refused");
  as_error_clear();
}

/* ------------------------------------------------------------------ d = 1 */
static void test_d1(as_classify_ws *ws) {
  fake f;
  const double v[] = {1.5};
  fake_init(&f, 12, 1, AS_THM_D1, v);
  int lo = 0, hi = 0;
  for (int i = 1; i < 12; i++) {
    if (f.Z0[i] < f.Z0[lo]) lo = i;
    if (f.Z0[i] > f.Z0[hi]) hi = i;
  }
  int lead[12];
  for (int i = 0; i < 12; i++) lead[i] = f.Z0[i] > 0 ? hi : lo;
  for (int i = 0; i < 12; i++) f.Z[i] = f.Z0[lead[i]];
  hardmax(&f, lead);
  as_record r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_BOOLEAN);
  AS_EXPECT(r.rank_p == 2 && r.n_leaders == 2 && r.leaders_init_vertices == 2,
            "rank %d leaders %d (%d initial vertices)", r.rank_p, r.n_leaders,
            r.leaders_init_vertices);
  /* one exceptional (mixing) row is allowed; rank 3 */
  int ex1 = lo == 0 || hi == 0 ? (lo == 1 || hi == 1 ? 2 : 1) : 0;
  for (int j = 0; j < 12; j++) f.P[12 * ex1 + j] = 0.0;
  f.P[12 * ex1 + lo] = 0.3, f.P[12 * ex1 + hi] = 0.3, f.P[12 * ex1 + ex1] = 0.4;
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_CONSISTENT, AS_GEOM_BOOLEAN);
  AS_EXPECT(r.rank_p == 3, "rank %d", r.rank_p);
  /* a second mixing row: P has not reached its limit, unresolved */
  int ex2 = ex1 + 1;
  while (ex2 == lo || ex2 == hi) ex2++;
  for (int j = 0; j < 12; j++) f.P[12 * ex2 + j] = 0.0;
  f.P[12 * ex2 + lo] = 0.5, f.P[12 * ex2 + hi] = 0.5;
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_UNRESOLVED, AS_GEOM_UNRESOLVED);
  /* one Boolean row pointing elsewhere beside the mixing row: it may be the allowed exception
   * and the mixing row may still settle, so unresolved */
  for (int j = 0; j < 12; j++) f.P[12 * ex2 + j] = 0.0;
  f.P[12 * ex2 + ex1] = 1.0;
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_UNRESOLVED, AS_GEOM_UNRESOLVED);
  /* two exceptional rows, both Boolean, pointing at non-extreme tokens: violated */
  for (int j = 0; j < 12; j++) f.P[12 * ex1 + j] = 0.0;
  f.P[12 * ex1 + ex2] = 1.0;
  r = run(&f, ws);
  AS_EXPECT(r.verdict == AS_VERDICT_VIOLATED, "d1 violated: %s margin %g",
            as_enum_label(&as_verdict_table, r.verdict), r.verdict_margin);
  AS_EXPECT(r.verdict_margin == 2.0, "two exceptional rows: %g", r.verdict_margin);
}

/* ------------------------------------------------------------------ no theorem, failures */
static void test_generic(as_classify_ws *ws) {
  fake f;
  const double diag[] = {0.8, -0.3};
  fake_init(&f, 20, 2, AS_THM_COMPLEX, diag);
  f.wi[0] = 0.5; /* a complex pair (only labels matter here) */
  int lead[NMAX];
  const double pts[] = {1, 1, -2, 0, 0, 3};
  int grp[20];
  for (int i = 0; i < 20; i++) grp[i] = i % 3;
  place(&f, pts, grp, 1e-6, lead);
  as_record r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_NO_PREDICTION, AS_GEOM_CLUSTERS);
  AS_EXPECT(isnan(r.verdict_margin) && r.n_clusters == 3, "no margin, 3 clusters");
  f.sp.theorem = AS_THM_NONE;
  int g1[20] = {0};
  place(&f, pts, g1, 1e-6, lead);
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_NO_PREDICTION, AS_GEOM_SINGLE);
  /* every token alone and moving (rows towards a rotating neighbour): unclustered */
  for (int i = 0; i < 20; i++) {
    f.Z[2 * i] = 5.0 * cos(2 * M_PI * i / 20), f.Z[2 * i + 1] = 5.0 * sin(2 * M_PI * i / 20);
    lead[i] = (i + 1) % 20; /* neighbours 1.56 apart, speed >= 0.3 x 1.56 */
  }
  hardmax(&f, lead);
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_NO_PREDICTION, AS_GEOM_UNCLUSTERED);
  AS_EXPECT(r.n_unresolved == 20, "all moving: %d", r.n_unresolved);

  /* failure modes */
  f.sp.theorem = AS_THM_IDENTITY;
  f.Z[3] = NAN;
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_NONFINITE, AS_GEOM_NONE);
  f.Z[3] = 0.0;
  f.in.outcome = AS_OUT_NONFINITE;
  r = run(&f, ws);
  EXPECT_VERDICT(r, AS_VERDICT_NONFINITE, AS_GEOM_NONE);
  f.in.outcome = AS_OUT_FAILED;
  r = run(&f, ws);
  AS_EXPECT(r.verdict == AS_VERDICT_FAILED, "failed set-up");
  f.in.outcome = AS_OUT_PENDING;
  as_record rr;
  as_record_init(&rr, NULL);
  AS_EXPECT(as_classify(&f.in, ws, &rr) == AS_ERR_ARG, "pending refused");
  f.in.outcome = AS_OUT_REACHED_T;
  f.in.n = 19;
  AS_EXPECT(as_classify(&f.in, ws, &rr) == AS_ERR_ARG, "shape mismatch refused");
  f.in.n = 20;
  AS_EXPECT(as_classify(NULL, ws, &rr) == AS_ERR_ARG, "NULL refused");
  as_error_clear();
}

int main(void) {
  as_rng_init(&g, 2023, 5, AS_PURPOSE_TEST);
  as_classify_ws *w1 = NULL, *w2 = NULL, *w3 = NULL, *w12 = NULL, *w24 = NULL;
  AS_EXPECT(as_classify_ws_create(0, 2, &w2) == AS_ERR_ARG && w2 == NULL, "n = 0 refused");
  as_error_clear();
  AS_EXPECT(as_classify_ws_create(20, 2, &w2) == AS_OK, "ws 20 x 2");
  AS_EXPECT(as_classify_ws_create(24, 3, &w3) == AS_OK, "ws 24 x 3");
  AS_EXPECT(as_classify_ws_create(12, 1, &w12) == AS_OK, "ws 12 x 1");
  if (w2 && w3 && w12) {
    test_identity(w2, w3);
    test_good(w2);
    test_separation(w2);
    test_paranormal(w3);
    test_minus_identity(w2);
    test_d1(w12);
    test_generic(w2);
  }
  as_classify_ws_destroy(&w1);
  as_classify_ws_destroy(&w2);
  as_classify_ws_destroy(&w3);
  as_classify_ws_destroy(&w12);
  as_classify_ws_destroy(&w24);
  AS_EXPECT(w2 == NULL, "destroy sets NULL");
  return as_test_finish("test_classify");
}
