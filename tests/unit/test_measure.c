/* Observables of the empirical measure (measure.h, hull.h as_hull_count_2d, the reference run
 * of the pipeline): cluster masses sum to 1 and are sorted; the 2-D hull vertex count on known
 * configurations (square plus interior points, collinear, duplicates, a degenerate sliver
 * decided exactly) and against a brute-force count on random points; W1 on hand-computable
 * cases, the closed form of the line against the LP; ref_w1 of a trial with itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/hull.h"
#include "attnsweep/measure.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/rng.h"

static int count2d(int n, const double *P) {
  double *scratch = malloc((2 * (size_t)n + 1) * sizeof *scratch);
  int *stack = malloc((2 * (size_t)n + 2) * sizeof *stack), c = -1;
  if (as_hull_count_2d(n, P, scratch, stack, &c) != AS_OK) c = -2;
  free(scratch);
  free(stack);
  return c;
}

/* Brute force in exact-enough arithmetic for small integer points: a distinct point is a
 * strict vertex iff no closed triangle (or segment) of other distinct points contains it. */
static long cross(const long *a, const long *b, const long *c) {
  return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}
static int on_segment(const long *a, const long *b, const long *p) {
  return cross(a, b, p) == 0 && p[0] >= (a[0] < b[0] ? a[0] : b[0]) &&
         p[0] <= (a[0] > b[0] ? a[0] : b[0]) && p[1] >= (a[1] < b[1] ? a[1] : b[1]) &&
         p[1] <= (a[1] > b[1] ? a[1] : b[1]);
}
static int brute_count(int m, const long *Q) {
  int count = 0;
  for (int i = 0; i < m; i++) {
    int inside = 0;
    for (int a = 0; a < m && !inside; a++)
      for (int b = a + 1; b < m && !inside; b++) {
        if (a == i || b == i) continue;
        if (on_segment(Q + 2 * a, Q + 2 * b, Q + 2 * i)) inside = 1;
        for (int c = b + 1; c < m && !inside; c++) {
          if (c == i || cross(Q + 2 * a, Q + 2 * b, Q + 2 * c) == 0) continue; /* segments: above */
          long d1 = cross(Q + 2 * a, Q + 2 * b, Q + 2 * i);
          long d2 = cross(Q + 2 * b, Q + 2 * c, Q + 2 * i);
          long d3 = cross(Q + 2 * c, Q + 2 * a, Q + 2 * i);
          int neg = d1 < 0 || d2 < 0 || d3<0, pos = d1> 0 || d2 > 0 || d3 > 0;
          if (!(neg && pos)) inside = 1;
        }
      }
    count += !inside;
  }
  return count;
}

int main(void) {
  /* ---- masses */
  {
    int sizes[] = {3, 10, 1, 6, 0, 2, 7, 4, 5, 9, 8};
    int scratch[11];
    double m[AS_MEASURE_K], rest = -1.0;
    const int n = 60; /* 55 in clusters, 5 unresolved */
    AS_EXPECT(as_measure_masses(n, 11, sizes, AS_MEASURE_K, m, &rest, scratch) == AS_OK, "masses");
    const int want[AS_MEASURE_K] = {10, 9, 8, 7, 6, 5, 4, 3};
    double sum = rest;
    for (int j = 0; j < AS_MEASURE_K; j++) {
      AS_EXPECT(m[j] == (double)want[j] / n, "mass %d = %g", j, m[j]);
      if (j) AS_EXPECT(m[j] <= m[j - 1], "sorted at %d", j);
      sum += m[j];
    }
    /* rest = the two smallest clusters (2 + 1 + 0) and the unresolved 5 */
    AS_EXPECT(rest == 8.0 / n, "rest %g", rest);
    AS_EXPECT_CLOSE(sum, 1.0, 9 * 0x1p-52, 0.0);
    int few[] = {2, 5};
    AS_EXPECT(as_measure_masses(7, 2, few, AS_MEASURE_K, m, &rest, scratch) == AS_OK, "few");
    AS_EXPECT(m[0] == 5.0 / 7 && m[1] == 2.0 / 7 && m[2] == 0.0 && rest == 0.0,
              "two clusters: %g %g %g rest %g", m[0], m[1], m[2], rest);
    AS_EXPECT(as_measure_masses(3, 0, NULL, AS_MEASURE_K, m, &rest, NULL) == AS_OK && m[0] == 0.0 &&
                  rest == 1.0,
              "no clusters: all rest");
    AS_EXPECT(as_measure_masses(5, 2, few, AS_MEASURE_K, m, &rest, scratch) == AS_ERR_ARG,
              "sizes beyond n rejected");
  }

  /* ---- 2-D hull vertex count */
  {
    double sq[] = {0, 0, 2, 0, 2, 2, 0, 2, 1, 1, 0.5, 1.5, 1.9, 0.1};
    AS_EXPECT(count2d(7, sq) == 4, "square plus interior points: %d", count2d(7, sq));
    double sqe[] = {0, 0, 1, 0, 2, 0, 2, 1, 2, 2, 1, 2, 0, 2, 0, 1, 1, 1};
    AS_EXPECT(count2d(9, sqe) == 4, "edge midpoints are no vertices: %d", count2d(9, sqe));
    double col[] = {3, 3, 0, 0, 1, 1, 2, 2, 1.5, 1.5, 3, 3};
    AS_EXPECT(count2d(6, col) == 2, "collinear with a duplicate: %d", count2d(6, col));
    double dup[] = {1, 1, 1, 1, 1, 1};
    AS_EXPECT(count2d(3, dup) == 1, "one point three times: %d", count2d(3, dup));
    double sqd[] = {0, 0, 2, 0, 2, 2, 0, 2, 0, 0, 2, 2, 1, 1};
    AS_EXPECT(count2d(7, sqd) == 4, "duplicated vertices count once: %d", count2d(7, sqd));
    AS_EXPECT(count2d(0, NULL) == 0 && count2d(1, sq) == 1 && count2d(2, sq) == 2, "tiny n");
    /* Decided exactly where the naive determinant says 0: 1 - 2^-60 rounds to 1, so with
     * a = (2^-60, 0) the computed orientation of (a, (1, 1), (2, 2)) is 0, the true one
     * 2 (1 - 2^-60) - (2 - 2^-60) = -2^-60: three vertices. With a = (2^-60, 2^-60) the three
     * points are exactly collinear: two. */
    const double t60 = 0x1p-60;
    double sl[] = {t60, 0, 1, 1, 2, 2};
    AS_EXPECT(count2d(3, sl) == 3, "2^-60 off the diagonal is a vertex: %d", count2d(3, sl));
    double sl2[] = {t60, t60, 1, 1, 2, 2};
    AS_EXPECT(count2d(3, sl2) == 2, "exactly on the diagonal is not: %d", count2d(3, sl2));
    double bad[] = {0, 0, NAN, 1};
    double scr[4];
    int stk[6], c = 0;
    AS_EXPECT(as_hull_count_2d(2, bad, scr, stk, &c) == AS_ERR_DATA, "NaN rejected");
    /* Random small-integer points (many collinear triples and duplicates) against brute force. */
    as_rng r;
    as_rng_init(&r, 5, 6, AS_PURPOSE_TEST);
    for (int rep = 0; rep < 40; rep++) {
      int m = 3 + rep % 25;
      long Q[2 * 30];
      double P[2 * 30], u[2 * 30];
      as_rng_fill_uniform(&r, u, 2 * m, 0.0, 7.0);
      for (int e2 = 0; e2 < 2 * m; e2++) Q[e2] = (long)u[e2], P[e2] = (double)Q[e2];
      /* brute force counts distinct points: drop duplicates first */
      long D[2 * 30];
      int md = 0;
      for (int i = 0; i < m; i++) {
        int seen = 0;
        for (int j = 0; j < md && !seen; j++)
          seen = D[2 * j] == Q[2 * i] && D[2 * j + 1] == Q[2 * i + 1];
        if (!seen) D[2 * md] = Q[2 * i], D[2 * md + 1] = Q[2 * i + 1], md++;
      }
      int want = md <= 2 ? md : brute_count(md, D), got = count2d(m, P);
      AS_EXPECT(got == want, "random set %d (m = %d): %d vertices, brute force %d", rep, m, got,
                want);
    }
    /* Many points on a circle: every one a vertex (n log n path at a size brute force cannot). */
    const int nc = 20000;
    double *circ = malloc(2 * (size_t)nc * sizeof *circ);
    for (int i = 0; i < nc; i++) {
      circ[2 * i] = cos(2.0 * 3.14159265358979323846 * i / nc);
      circ[2 * i + 1] = sin(2.0 * 3.14159265358979323846 * i / nc);
    }
    AS_EXPECT(count2d(nc, circ) == nc, "circle of %d points: %d vertices", nc, count2d(nc, circ));
    free(circ);
  }

  /* ---- W1 */
  {
    double w = -1.0;
    double A1[] = {0.0, 0.0}, a1[] = {1.0};
    double B1[] = {3.0, 4.0}, b1[] = {2.0}; /* weights are normalised */
    AS_EXPECT(as_measure_w1(2, 1, A1, a1, 1, B1, b1, &w) == AS_OK, "two Diracs");
    AS_EXPECT_CLOSE(w, 5.0, 1e-12, 0.0);
    /* Dirac at 0 against half at (1, 0), half at (0, 1): every unit of mass moves 1. */
    double B2[] = {1, 0, 0, 1}, b2[] = {1, 1};
    AS_EXPECT(as_measure_w1(2, 1, A1, a1, 2, B2, b2, &w) == AS_OK, "split");
    AS_EXPECT_CLOSE(w, 1.0, 1e-9, 0.0);
    /* Two clusters far apart, masses (0.7, 0.3) against (0.5, 0.5): 0.5 stays near each, 0.2
     * crosses the distance 10 between them, the rest moves by the small offsets. */
    double A3[] = {0, 0, 10, 0}, a3[] = {0.7, 0.3};
    double B3[] = {0, 0.1, 10, 0.1}, b3[] = {0.5, 0.5};
    AS_EXPECT(as_measure_w1(2, 2, A3, a3, 2, B3, b3, &w) == AS_OK, "far clusters");
    double want3 = 0.5 * 0.1 + 0.3 * 0.1 + 0.2 * sqrt(100.0 + 0.01);
    AS_EXPECT_CLOSE(w, want3, 1e-9, 0.0);
    /* Identical measures (atoms permuted): 0. */
    double A4[] = {1, 2, -3, 4, 5, -6}, a4[] = {0.2, 0.5, 0.3};
    double B4[] = {5, -6, 1, 2, -3, 4}, b4[] = {0.3, 0.2, 0.5};
    AS_EXPECT(as_measure_w1(2, 3, A4, a4, 3, B4, b4, &w) == AS_OK, "same measure");
    AS_EXPECT(fabs(w) <= 1e-9, "W1 of a measure with itself: %g", w);
    /* The line: closed form by hand, and the LP on the same atoms embedded in R^2. */
    double L1[] = {0.0, 1.0, 3.0}, l1[] = {0.5, 0.25, 0.25};
    double L2[] = {2.0, 0.5}, l2[] = {0.5, 0.5};
    /* F1 - F2 on the intervals [0,.5) .5, [.5,1) 0, [1,2) .25, [2,3) -.25: W1 = .25 + .25 + .25 */
    AS_EXPECT(as_measure_w1(1, 3, L1, l1, 2, L2, l2, &w) == AS_OK, "line");
    AS_EXPECT_CLOSE(w, 0.75, 1e-15, 0.0);
    double E1[6], E2[4];
    for (int i = 0; i < 3; i++) E1[2 * i] = L1[i], E1[2 * i + 1] = 0.0;
    for (int j = 0; j < 2; j++) E2[2 * j] = L2[j], E2[2 * j + 1] = 0.0;
    double wl = -1.0;
    AS_EXPECT(as_measure_w1(2, 3, E1, l1, 2, E2, l2, &wl) == AS_OK, "line as LP");
    AS_EXPECT_CLOSE(wl, w, 1e-9, 0.0);
    /* Random line measures: LP against the closed form. */
    as_rng r;
    as_rng_init(&r, 9, 1, AS_PURPOSE_TEST);
    for (int rep = 0; rep < 20; rep++) {
      int ma = 1 + rep % 7, mb = 1 + (rep * 3) % 5;
      double xa[8], xb[8], wa[8], wb[8], ea[16], eb[16];
      as_rng_fill_uniform(&r, xa, ma, -5.0, 5.0);
      as_rng_fill_uniform(&r, xb, mb, -5.0, 5.0);
      as_rng_fill_uniform(&r, wa, ma, 0.1, 1.0);
      as_rng_fill_uniform(&r, wb, mb, 0.1, 1.0);
      for (int i = 0; i < ma; i++) ea[2 * i] = xa[i], ea[2 * i + 1] = 0.0;
      for (int j = 0; j < mb; j++) eb[2 * j] = xb[j], eb[2 * j + 1] = 0.0;
      double w1 = -1.0, w2 = -2.0;
      AS_EXPECT(as_measure_w1(1, ma, xa, wa, mb, xb, wb, &w1) == AS_OK, "line %d", rep);
      AS_EXPECT(as_measure_w1(2, ma, ea, wa, mb, eb, wb, &w2) == AS_OK, "LP %d", rep);
      /* GLPK's simplex: primal feasibility to 1e-7 times the costs (at most 10 here) */
      AS_EXPECT(as_close(w1, w2, 1e-7, 1e-6), "random line %d: closed form %.17g, LP %.17g", rep,
                w1, w2);
    }
    double z[] = {0.0};
    AS_EXPECT(as_measure_w1(2, 1, A1, z, 1, B1, b1, &w) == AS_ERR_ARG, "zero mass rejected");
    double nanp[] = {NAN, 0};
    AS_EXPECT(as_measure_w1(2, 1, nanp, a1, 1, B1, b1, &w) == AS_ERR_DATA, "NaN atom rejected");
  }

  /* ---- the pipeline: fields of a trial, and ref_w1 against itself and a smaller n */
  {
    as_pipeline *pl = NULL;
    AS_EXPECT(as_pipeline_create(NULL, NULL, &pl) == AS_OK, "pipeline");
    as_trial t;
    as_trial_defaults(&t);
    t.index = 3;
    t.master_seed = 18;
    t.token_key = t.triple_key = 3;
    t.n = 40;
    t.integ.T = 10.0;
    as_record a, b;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &a, NULL) == AS_OK, "run");
    double sum = a.mass_rest + a.mass_1 + a.mass_2 + a.mass_3 + a.mass_4 + a.mass_5 + a.mass_6 +
                 a.mass_7 + a.mass_8;
    AS_EXPECT_CLOSE(sum, 1.0, 1e-15, 0.0);
    AS_EXPECT(a.mass_1 >= a.mass_2 && a.mass_2 >= a.mass_3, "masses sorted");
    AS_EXPECT(a.n_unresolved > 0 || a.n_clusters > AS_MEASURE_K || a.mass_rest == 0.0,
              "rest 0 when resolved into <= 8 clusters: %g", a.mass_rest);
    AS_EXPECT(a.hull_vertices >= 3 && a.hull_vertices <= t.n && a.hull_vertices_init >= 3 &&
                  a.hull_vertices_init <= t.n,
              "hull vertices %d, initially %d", a.hull_vertices, a.hull_vertices_init);
    AS_EXPECT(isnan(a.ref_w1) && a.ref_n_clusters == -1 && a.reference_n == 0, "no reference");
    t.reference_n = t.n; /* the reference is the trial itself: distance exactly 0 */
    AS_EXPECT(as_trial_run(pl, &t, NULL, &b, NULL) == AS_OK, "run with itself as reference");
    AS_EXPECT(b.ref_w1 == 0.0 && b.ref_n_clusters == a.n_clusters, "ref_w1 %g, clusters %d / %d",
              b.ref_w1, b.ref_n_clusters, a.n_clusters);
    t.reference_n = 10;
    AS_EXPECT(as_trial_run(pl, &t, NULL, &b, NULL) == AS_OK, "run with a smaller reference");
    AS_EXPECT(b.ref_w1 > 0.0 && b.ref_w1 <= 2.0 * sqrt(2.0) * t.init.scale,
              "ref_w1 %g within the box's diameter", b.ref_w1);
    AS_EXPECT(b.mass_1 == a.mass_1 && b.n_clusters == a.n_clusters, "the trial itself unchanged");
    /* Explicit tokens: the reference cannot have more tokens than given. */
    double X0[3 * 2] = {0, 0, 1, 0, 0, 1};
    as_trial e = t;
    e.n = 3;
    e.init.kind = AS_INIT_EXPLICIT;
    e.init.data.data = X0;
    e.init.data.rows = 3;
    e.init.data.cols = 2;
    e.reference_n = 4;
    AS_EXPECT(as_trial_run(pl, &e, NULL, &b, NULL) == AS_OK, "explicit run");
    AS_EXPECT(b.outcome == AS_OUT_FAILED && strstr(b.message, "reference_n") != NULL,
              "reference_n > n with explicit tokens fails the trial: '%s'", b.message);
    /* d = 3 (V = I: the classified coordinates at t = 0 are the tokens themselves): the cube's
     * 8 corners, a corner again, its centre, an edge midpoint, a face centre and an interior
     * point have 8 hull vertices (distinct, strict); the final hull has 4 to 12 (12 distinct
     * tokens). d = 4: not counted (-1, measure.h), whatever the tokens. */
    double C[13 * 4];
    for (int i = 0; i < 8; i++)
      for (int c = 0; c < 3; c++) C[3 * i + c] = (i >> c) & 1 ? 1.0 : -1.0;
    const double extra[5 * 3] = {0, 0, 0, -1, -1, -1, 1, 1, 0, 0, 0, 1, 0.5, -0.25, 0.125};
    memcpy(C + 24, extra, sizeof extra);
    as_trial c3 = t;
    c3.d = 3;
    c3.n = 13;
    c3.reference_n = 0;
    c3.integ.T = 1.0;
    c3.init.kind = AS_INIT_EXPLICIT;
    c3.init.data.data = C;
    c3.init.data.rows = 13;
    c3.init.data.cols = 3;
    AS_EXPECT(as_trial_run(pl, &c3, NULL, &b, NULL) == AS_OK, "cube run");
    AS_EXPECT(b.n_clusters > 0 && b.hull_vertices_init == 8 && b.hull_vertices >= 4 &&
                  b.hull_vertices <= 12,
              "cube (classified, %d clusters): hull vertices %d initially (want 8), %d at T",
              b.n_clusters, b.hull_vertices_init, b.hull_vertices);
    for (int i = 0; i < 13; i++)
      for (int c = 0; c < 4; c++) C[4 * i + c] = (double)((i * 7 + c * 3) % 5) - 2.0 + 0.1 * c;
    c3.d = 4;
    c3.init.data.cols = 4;
    AS_EXPECT(as_trial_run(pl, &c3, NULL, &b, NULL) == AS_OK, "4-D run");
    AS_EXPECT(b.n_clusters > 0 && b.hull_vertices_init == -1 && b.hull_vertices == -1,
              "4-D (classified, %d clusters): hull vertices %d, %d (want -1: not counted)",
              b.n_clusters, b.hull_vertices_init, b.hull_vertices);
    as_pipeline_destroy(&pl);
  }
  return as_test_finish("test_measure");
}
