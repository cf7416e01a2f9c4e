/* Exact convex-hull predicates (hull.c): known answers in d = 2, 3, 4, 5, a brute-force 2-D
 * hull on random points, exactness at 2^-40, the planar test against the LP at tolerances
 * (exactly at the distance, an ulp off), the 3-D vertex count against the LP, degenerate and
 * bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/hull.h"
#include "attnsweep/rng.h"
#include "attnsweep/trial.h"

/* Strict hull vertices of 2-D points by brute force: i is a vertex iff some line through it has
 * every other point strictly on one side, i.e. the points other than i do not surround it. We
 * use: i is NOT a vertex iff it lies in a triangle (closed) of three other points. */
static int in_triangle(const double *a, const double *b, const double *c, const double *p) {
  double d1 = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]);
  double d2 = (c[0] - b[0]) * (p[1] - b[1]) - (c[1] - b[1]) * (p[0] - b[0]);
  double d3 = (a[0] - c[0]) * (p[1] - c[1]) - (a[1] - c[1]) * (p[0] - c[0]);
  int neg = d1 < 0 || d2 < 0 || d3<0, pos = d1> 0 || d2 > 0 || d3 > 0;
  return !(neg && pos);
}

static int brute_vertex(const double *Q, int m, int i) {
  for (int a = 0; a < m; a++)
    for (int b = a + 1; b < m; b++)
      for (int c = b + 1; c < m; c++) {
        if (a == i || b == i || c == i) continue;
        if (in_triangle(Q + 2 * a, Q + 2 * b, Q + 2 * c, Q + 2 * i)) return 0;
      }
  return 1;
}

/* The 3-D vertex test without LP (k = 3, dist NULL) against the exact LP on the same numbers
 * (as_hull_dist_inf on the rows different from row i, > tol), for every row of Q (m x 3).
 * Returns the number of disagreements; counts the rows the LP calls non-vertices in *nonv and
 * the rows tested in *tested. Where the LP's distance d of a row is positive and an exact
 * multiple of 2^-20 scale (the unit of the data, so d is the exact distance, not a rounding of
 * a non-dyadic rational), the boundary is checked too: tol = d is "not a vertex" and the double
 * below d is "vertex" (*edge counts those rows). */
static int spatial_vs_lp(as_hull *h, int m, const double *Q, double tol, double scale, int *nonv,
                         int *tested, int *edge) {
  double O[3 * 64];
  int bad = 0;
  for (int i = 0; i < m; i++) {
    const double *p = Q + 3 * i;
    int v = -1, mo = 0;
    AS_EXPECT(as_hull_is_vertex(h, 3, m, Q, i, tol, &v, NULL) == AS_OK, "spatial vertex");
    for (int j = 0; j < m; j++)
      if (Q[3 * j] != p[0] || Q[3 * j + 1] != p[1] || Q[3 * j + 2] != p[2])
        memcpy(O + 3 * mo++, Q + 3 * j, 3 * sizeof *O);
    int ref = 1;
    double d = INFINITY;
    if (mo > 0) {
      AS_EXPECT(as_hull_dist_inf(h, 3, mo, O, p, &d) == AS_OK, "LP distance");
      ref = d > tol;
    }
    bad += v != ref;
    if (v != ref)
      fprintf(stderr, "spatial: m = %d row %d tol %.17g: test %d, LP %d (distance %.17g)\n", m, i,
              tol, v, ref, d);
    *nonv += !ref;
    (*tested)++;
    double du = d / scale * 0x1p20;
    if (mo > 0 && d > 0.0 && du == floor(du) && du < 0x1p40) {
      int vb = -1, vu = -1;
      AS_EXPECT(as_hull_is_vertex(h, 3, m, Q, i, d, &vb, NULL) == AS_OK, "at the distance");
      AS_EXPECT(as_hull_is_vertex(h, 3, m, Q, i, nextafter(d, 0.0), &vu, NULL) == AS_OK, "below");
      bad += vb != 0 || vu != 1;
      if (vb != 0 || vu != 1)
        fprintf(stderr, "spatial: m = %d row %d at distance %.17g: %d, just below: %d\n", m, i, d,
                vb, vu);
      (*edge)++;
    }
  }
  return bad;
}

/* m rows of 3-D test points (q, m x 3) of kind rep % 8 (integers in [-4, 4], coplanar,
 * collinear, dyadic, on a cube's faces, repeated cube corners, 53-bit doubles, far from the
 * origin; from kind 3 on midpoints of two rows, from kind 6 on rows rounded from the centroid
 * of three others, every fourth set a copy of row 1) at scale 2^-200, 1 or 2^200 (rep % 5);
 * returns the scale. */
static double points3(as_rng *g, int rep, int m, double *q) {
  const int kind = rep % 8;
  double o[3], u[3], w[3];
  for (int a = 0; a < 3; a++) {
    o[a] = floor(as_rng_uniform(g) * 5.0) - 2.0;
    u[a] = floor(as_rng_uniform(g) * 5.0) - 2.0;
    w[a] = floor(as_rng_uniform(g) * 5.0) - 2.0;
  }
  for (int j = 0; j < m; j++) {
    double s = floor(as_rng_uniform(g) * 7.0) - 3.0, t = floor(as_rng_uniform(g) * 7.0) - 3.0;
    for (int a = 0; a < 3; a++) {
      double x = floor(as_rng_uniform(g) * 9.0) - 4.0;
      switch (kind) {
      case 0:
        break; /* integers in [-4, 4] */
      case 1:
        x = o[a] + s * u[a] + t * w[a];
        break; /* coplanar */
      case 2:
        x = o[a] + s * u[a];
        break; /* collinear */
      case 3:
        x = floor(as_rng_uniform(g) * 64.0) / 8.0 - 4.0;
        break; /* dyadic */
      case 4:
        x = a == j % 3 ? (j % 2 ? 4.0 : -4.0) : x;
        break; /* on the faces of a cube */
      case 5:
        x = as_rng_uniform(g) < 0.5 ? -4.0 : 4.0;
        break; /* cube corners, repeated */
      case 6:
        x = 8.0 * as_rng_uniform(g) - 4.0;
        break; /* 53-bit doubles */
      default:
        x = 1e6 * o[a] + as_rng_uniform(g);
        break; /* far from the origin */
      }
      q[3 * j + a] = x;
    }
  }
  /* midpoints of two rows (on an edge or a face, or inside) and exact copies */
  for (int j = 0; j + 2 < m && kind >= 3; j += 5)
    for (int a = 0; a < 3; a++) q[3 * j + a] = 0.5 * (q[3 * (j + 1) + a] + q[3 * (j + 2) + a]);
  /* rows rounded from the centroid of three others: on or within a few ulps of their plane */
  for (int j = 1; j + 3 < m && kind >= 6; j += 4)
    for (int a = 0; a < 3; a++)
      q[3 * j + a] = (q[3 * (j + 1) + a] + q[3 * (j + 2) + a] + q[3 * (j + 3) + a]) / 3.0;
  if (m > 4 && rep % 4 == 1) memcpy(q + 3 * (m - 1), q + 3, 3 * sizeof *q);
  const double scale = rep % 5 == 3 ? 0x1p-200 : rep % 5 == 4 ? 0x1p200 : 1.0;
  for (int e = 0; e < 3 * m; e++) q[e] *= scale;
  return scale;
}

/* The 3-D count and flags (as_hull_vertices_3d) against the exact LP on the same numbers: a
 * distinct point is a vertex iff its distance to the hull of the other distinct points is
 * positive (as_hull_dist_inf, exact), and a row is flagged iff its point is. Returns the
 * disagreements; adds the rows the LP calls non-vertices to *nonv. */
static int count3_vs_lp(as_hull *h, int m, const double *Q, int *nonv) {
  double O[3 * 128];
  int flags[128], count = -2, ref = 0, bad = 0, distinct = 0;
  AS_EXPECT(m <= 128, "count3_vs_lp: m = %d", m);
  AS_EXPECT(as_hull_vertices_3d(h, m, Q, flags, &count) == AS_OK, "vertices_3d");
  for (int i = 0; i < m; i++) {
    const double *p = Q + 3 * i;
    int mo = 0, firstcopy = 1;
    for (int j = 0; j < m; j++) {
      const int same = Q[3 * j] == p[0] && Q[3 * j + 1] == p[1] && Q[3 * j + 2] == p[2];
      if (same && j < i) firstcopy = 0;
      if (!same) memcpy(O + 3 * mo++, Q + 3 * j, 3 * sizeof *O);
    }
    double d = INFINITY;
    if (mo > 0) AS_EXPECT(as_hull_dist_inf(h, 3, mo, O, p, &d) == AS_OK, "LP distance");
    const int vertex = d > 0.0;
    ref += vertex && firstcopy;
    distinct += firstcopy;
    *nonv += !vertex;
    if (flags[i] != vertex) {
      bad++;
      fprintf(stderr, "3-D hull: m = %d row %d: flag %d, LP %d (distance %.17g)\n", m, i, flags[i],
              vertex, d);
    }
  }
  if (count != ref) {
    bad++;
    fprintf(stderr, "3-D hull: m = %d (%d distinct): count %d, LP %d\n", m, distinct, count, ref);
  }
  return bad;
}

int main(void) {
  as_hull *h = NULL;
  AS_EXPECT(as_hull_create(0, 4, &h) == AS_ERR_ARG && h == NULL, "k = 0 rejected");
  AS_EXPECT(as_hull_create(6, 64, &h) == AS_OK && h != NULL, "create");
  int v = -1;
  double dist = -1.0, r = -1.0;

  /* ---- d = 2: square [0,2]^2 with its centre and an edge midpoint. */
  double sq[] = {0, 0, 2, 0, 2, 2, 0, 2, 1, 1, 1, 0};
  for (int i = 0; i < 6; i++) {
    AS_EXPECT(as_hull_is_vertex(h, 2, 6, sq, i, 0.0, &v, &dist) == AS_OK, "vertex %d", i);
    AS_EXPECT(v == (i < 4), "square point %d vertex = %d", i, v);
  }
  double outside[] = {4, 1};
  AS_EXPECT(as_hull_dist_inf(h, 2, 4, sq, outside, &dist) == AS_OK, "dist");
  AS_EXPECT(dist == 2.0, "L-inf distance of (4,1) to the square: %.17g", dist);
  double corner_out[] = {3, 5};
  AS_EXPECT(as_hull_dist_inf(h, 2, 4, sq, corner_out, &dist) == AS_OK && dist == 3.0,
            "L-inf distance of (3,5): %.17g", dist);
  AS_EXPECT(as_hull_depth_l1(h, 2, 4, sq, sq + 8, &dist) == AS_OK && dist == 1.0,
            "depth of the centre: %.17g", dist);
  AS_EXPECT(as_hull_depth_l1(h, 2, 4, sq, sq + 10, &dist) == AS_OK && dist == 0.0,
            "depth of an edge point: %.17g", dist);
  AS_EXPECT(as_hull_depth_l1(h, 2, 4, sq, outside, &dist) == AS_OK && dist == -1.0,
            "depth outside: %.17g", dist);
  AS_EXPECT(as_hull_ray(h, 2, 4, sq, sq + 8, 0, 1, &r) == AS_OK && r == 1.0, "ray %.17g", r);
  double p25[] = {0.5, 1.5};
  AS_EXPECT(as_hull_ray(h, 2, 4, sq, p25, 1, 1, &r) == AS_OK && r == 0.5, "ray up %.17g", r);
  AS_EXPECT(as_hull_ray(h, 2, 4, sq, p25, 0, -1, &r) == AS_OK && r == 0.5, "ray left %.17g", r);
  /* tolerance: the edge midpoint pushed out by 0.25 is a vertex at tol 0.1, not at tol 0.3 */
  double sq2[] = {0, 0, 2, 0, 2, 2, 0, 2, 1, -0.25};
  AS_EXPECT(as_hull_is_vertex(h, 2, 5, sq2, 4, 0.1, &v, &dist) == AS_OK && v == 1, "tol 0.1");
  AS_EXPECT(dist > 0.1 && dist <= 0.25, "certified distance in (0.1, 0.25]: %.17g", dist);
  AS_EXPECT(as_hull_dist_inf(h, 2, 4, sq2, sq2 + 8, &dist) == AS_OK && dist == 0.25,
            "exact distance 0.25: %.17g", dist);
  AS_EXPECT(as_hull_is_vertex(h, 2, 5, sq2, 4, 0.3, &v, NULL) == AS_OK && v == 0, "tol 0.3");

  /* ---- d = 2: random points against a brute-force hull. */
  as_rng g;
  as_rng_init(&g, 12345, 0, AS_PURPOSE_TEST);
  double pts[2 * 40];
  for (int rep = 0; rep < 5; rep++) {
    int m = 10 + 7 * rep;
    as_rng_fill_uniform(&g, pts, 2 * m, -5.0, 5.0);
    int bad = 0, nv = 0;
    for (int i = 0; i < m; i++) {
      AS_EXPECT(as_hull_is_vertex(h, 2, m, pts, i, 0.0, &v, NULL) == AS_OK, "random vertex");
      bad += v != brute_vertex(pts, m, i);
      nv += v;
    }
    AS_EXPECT(bad == 0, "rep %d: %d disagreements with the brute-force hull", rep, bad);
    AS_EXPECT(nv >= 3, "rep %d: %d vertices", rep, nv);
  }

  /* ---- d = 3: unit cube, face centre, body centre, and a point 2^-40 outside a face. */
  double cube[3 * 11];
  for (int c = 0; c < 8; c++)
    for (int a = 0; a < 3; a++) cube[3 * c + a] = (c >> a) & 1;
  double extra[] = {0.5, 0.5, 1.0, 0.5, 0.5, 0.5, 0.25, 0.75, 1.0 + ldexp(1.0, -40)};
  memcpy(cube + 24, extra, sizeof extra);
  int expect3[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1};
  for (int i = 0; i < 11; i++) {
    AS_EXPECT(as_hull_is_vertex(h, 3, 11, cube, i, 0.0, &v, &dist) == AS_OK, "cube %d", i);
    AS_EXPECT(v == expect3[i], "cube point %d vertex = %d", i, v);
  }
  AS_EXPECT(as_hull_is_vertex(h, 3, 11, cube, 10, 0.0, &v, &dist) == AS_OK && v == 1, "tiny");
  AS_EXPECT(dist > 0.0 && dist <= ldexp(1.0, -40), "certified bound %.17g", dist);
  AS_EXPECT(as_hull_dist_inf(h, 3, 10, cube, cube + 30, &dist) == AS_OK, "tiny distance");
  AS_EXPECT(dist == ldexp(1.0, -40), "exact distance 2^-40, got %.17g", dist);
  /* 2^-60 outside: below double resolution of the float pass relative to 1, still exact */
  cube[32] = 1.0 + ldexp(1.0, -52);
  AS_EXPECT(as_hull_is_vertex(h, 3, 11, cube, 10, 0.0, &v, &dist) == AS_OK && v == 1,
            "one ulp outside is a vertex (dist %.17g)", dist);
  cube[32] = 1.0;
  AS_EXPECT(as_hull_is_vertex(h, 3, 11, cube, 10, 0.0, &v, &dist) == AS_OK && v == 0,
            "on the face: not a vertex (dist %.17g)", dist);
  /* the face centre is on the boundary (depth 0), the body centre at L1 depth 1/2 */
  AS_EXPECT(as_hull_depth_l1(h, 3, 8, cube, cube + 24, &dist) == AS_OK && dist == 0.0,
            "face centre depth %.17g", dist);
  AS_EXPECT(as_hull_depth_l1(h, 3, 8, cube, cube + 27, &dist) == AS_OK && dist == 0.5,
            "body centre depth %.17g", dist);
  /* lower-dimensional hull: the square z = 0 inside R^3 has no interior */
  AS_EXPECT(as_hull_depth_l1(h, 3, 4, (double[]){0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0},
                             (double[]){0.5, 0.5, 0}, &dist) == AS_OK &&
                dist == 0.0,
            "flat hull depth %.17g", dist);

  /* ---- d = 5: cross-polytope +-e_a with random points of L1 norm < 0.9 inside. */
  double cp[5 * 30];
  memset(cp, 0, sizeof cp);
  for (int a = 0; a < 5; a++) cp[5 * (2 * a) + a] = 1.0, cp[5 * (2 * a + 1) + a] = -1.0;
  for (int i = 10; i < 30; i++) {
    double l1 = 0.0;
    as_rng_fill_uniform(&g, cp + 5 * i, 5, -1.0, 1.0);
    for (int a = 0; a < 5; a++) l1 += fabs(cp[5 * i + a]);
    for (int a = 0; a < 5; a++) cp[5 * i + a] *= 0.9 / l1 * as_rng_uniform(&g);
  }
  int nv5 = 0, wrong5 = 0;
  for (int i = 0; i < 30; i++) {
    AS_EXPECT(as_hull_is_vertex(h, 5, 30, cp, i, 0.0, &v, NULL) == AS_OK, "cross %d", i);
    nv5 += v;
    wrong5 += v != (i < 10);
  }
  AS_EXPECT(nv5 == 10 && wrong5 == 0, "cross-polytope: %d vertices, %d wrong", nv5, wrong5);
  double o5[5] = {0}, h5[5] = {0.5, 0, 0, 0, 0};
  AS_EXPECT(as_hull_depth_l1(h, 5, 10, cp, o5, &dist) == AS_OK && dist == 1.0, "depth 0: %.17g",
            dist);
  AS_EXPECT(as_hull_depth_l1(h, 5, 10, cp, h5, &dist) == AS_OK && dist == 0.5,
            "depth (0.5,0..): %.17g", dist);

  /* ---- d = 4: hypercube [-1,1]^4 and its centre (L1 depth 1). */
  double hc[4 * 17];
  for (int c = 0; c < 16; c++)
    for (int a = 0; a < 4; a++) hc[4 * c + a] = ((c >> a) & 1) ? 1.0 : -1.0;
  memset(hc + 64, 0, 4 * sizeof *hc);
  AS_EXPECT(as_hull_depth_l1(h, 4, 16, hc, hc + 64, &dist) == AS_OK && dist == 1.0,
            "hypercube depth %.17g", dist);
  AS_EXPECT(as_hull_is_vertex(h, 4, 17, hc, 16, 0.0, &v, NULL) == AS_OK && v == 0, "centre");
  AS_EXPECT(as_hull_is_vertex(h, 4, 17, hc, 5, 0.0, &v, NULL) == AS_OK && v == 1, "corner");

  /* ---- scale invariance: the square at 1e-200 and at 1e200 */
  for (int sc = 0; sc < 2; sc++) {
    double f = sc ? 1e200 : 1e-200, s5[10];
    for (int e = 0; e < 10; e++) s5[e] = sq2[e] * f;
    AS_EXPECT(as_hull_dist_inf(h, 2, 4, s5, s5 + 8, &dist) == AS_OK, "scaled");
    AS_EXPECT_CLOSE(dist, 0.25 * f, 1e-15, 0);
    AS_EXPECT(as_hull_is_vertex(h, 2, 5, s5, 4, 0.1 * f, &v, NULL) == AS_OK && v == 1, "scaled v");
  }

  /* ---- duplicates and single points */
  double dup[] = {0, 0, 1, 0, 1, 0, 0, 1};
  AS_EXPECT(as_hull_is_vertex(h, 2, 4, dup, 1, 0.0, &v, NULL) == AS_OK && v == 1, "dup 1");
  AS_EXPECT(as_hull_is_vertex(h, 2, 4, dup, 2, 0.0, &v, NULL) == AS_OK && v == 1, "dup 2");
  AS_EXPECT(as_hull_is_vertex(h, 2, 2, dup + 2, 0, 0.0, &v, &dist) == AS_OK && v == 1 &&
                isinf(dist),
            "a single distinct point is a vertex");

  /* ---- the planar test (k = 2, dist NULL: no LP) against the LP path (dist wanted), random
   * points with repeated rows, at several tolerances; and as_hull_vertices_2d's flags against
   * the brute-force hull. */
  {
    double q[2 * 24], scr[3 * 24]; /* brute_vertex takes degenerate triangles for the hull:
                                      only for distinct points in general position */
    int flags[24], isc[4 * 24 + 2], stk[2 * 24 + 2];
    int disagree = 0, tested = 0, nonv = 0;
    for (int rep = 0; rep < 10; rep++) {
      int m = 4 + 2 * rep; /* at most 22 */
      as_rng_fill_uniform(&g, q, 2 * m, -5.0, 5.0);
      if (rep % 3 == 1) memcpy(q + 2 * (m - 1), q, 2 * sizeof *q); /* a repeated row */
      if (rep % 3 == 2)                                            /* on a grid: collinear */
        for (int e = 0; e < 2 * m; e++) q[e] = floor(q[e]);
      const double tols[] = {0.0, 0.1, 0.5, 1.5};
      for (int ti = 0; ti < 4; ti++)
        for (int i = 0; i < m; i++) {
          int vp = -1, vl = -1;
          double dd = 0.0;
          AS_EXPECT(as_hull_is_vertex(h, 2, m, q, i, tols[ti], &vp, NULL) == AS_OK, "planar");
          AS_EXPECT(as_hull_is_vertex(h, 2, m, q, i, tols[ti], &vl, &dd) == AS_OK, "LP path");
          disagree += vp != vl;
          nonv += !vp;
          tested++;
        }
      int cnt = -1, cnt2 = -2, bad = 0;
      AS_EXPECT(as_hull_vertices_2d(m, q, scr, isc, flags, &cnt) == AS_OK, "vertices_2d");
      AS_EXPECT(as_hull_count_2d(m, q, scr, stk, &cnt2) == AS_OK && cnt == cnt2,
                "rep %d: vertices_2d counts %d, count_2d %d", rep, cnt, cnt2);
      for (int i = 0; i < m; i++) { /* the reference: the exact LP (dist wanted) */
        double dd = 0.0;
        AS_EXPECT(as_hull_is_vertex(h, 2, m, q, i, 0.0, &v, &dd) == AS_OK, "LP vertex");
        bad += flags[i] != v;
        if (rep % 3 == 0) bad += flags[i] != brute_vertex(q, m, i); /* distinct, not collinear */
      }
      AS_EXPECT(bad == 0, "rep %d: %d flags differ from the LP or the brute-force hull", rep, bad);
    }
    AS_EXPECT(disagree == 0 && nonv > 0 && nonv < tested,
              "planar vs LP: %d of %d disagree (%d not vertices)", disagree, tested, nonv);
    /* above AS_HULL_WRAP_MAX (64) points: the sort and the monotone chain, on a grid */
    {
      double big[2 * 80], bscr[3 * 80];
      int bfl[80], bisc[4 * 80 + 2], bstk[2 * 80 + 2], bc = -1, bc2 = -2, bbad = 0;
      as_rng_fill_uniform(&g, big, 2 * 80, -4.0, 4.0);
      for (int e = 0; e < 2 * 80; e++) big[e] = floor(big[e]);
      AS_EXPECT(as_hull_vertices_2d(80, big, bscr, bisc, bfl, &bc) == AS_OK, "80 points");
      AS_EXPECT(as_hull_count_2d(80, big, bscr, bstk, &bc2) == AS_OK && bc == bc2 && bc >= 3,
                "80 points: %d and %d vertices", bc, bc2);
      as_hull *h80 = NULL;
      AS_EXPECT(as_hull_create(2, 80, &h80) == AS_OK, "create 80");
      for (int i = 0; h80 && i < 80; i++) {
        double dd = 0.0;
        AS_EXPECT(as_hull_is_vertex(h80, 2, 80, big, i, 0.0, &v, &dd) == AS_OK, "LP vertex");
        bbad += bfl[i] != v;
      }
      as_hull_destroy(&h80);
      AS_EXPECT(bbad == 0, "80 points: %d flags differ from the LP", bbad);
    }
    /* exactly at the tolerance: the distance from (1.5, 1.5) to the triangle (0,0), (2,0),
     * (0,2) is 0.5 in L-inf (the box corner touches the edge x + y = 2); from (1, -0.25) to the
     * square 0.25 (an axis direction) */
    double tri[] = {0, 0, 2, 0, 0, 2, 1.5, 1.5};
    AS_EXPECT(as_hull_is_vertex(h, 2, 4, tri, 3, 0.5, &v, NULL) == AS_OK && v == 0, "tol = d");
    AS_EXPECT(as_hull_is_vertex(h, 2, 4, tri, 3, nextafter(0.5, 0.0), &v, NULL) == AS_OK && v == 1,
              "tol just below the distance");
    AS_EXPECT(as_hull_is_vertex(h, 2, 5, sq2, 4, 0.25, &v, NULL) == AS_OK && v == 0, "axis tol");
    AS_EXPECT(as_hull_is_vertex(h, 2, 5, sq2, 4, nextafter(0.25, 0.0), &v, NULL) == AS_OK && v == 1,
              "axis tol just below");
    /* an ulp off the edge x + y = 1 of the triangle (0,0), (1,0), (0,1) */
    double t2[] = {0, 0, 1, 0, 0, 1, 0.5, 0.5};
    AS_EXPECT(as_hull_is_vertex(h, 2, 4, t2, 3, 0.0, &v, NULL) == AS_OK && v == 0, "on the edge");
    t2[7] = nextafter(0.5, 1.0);
    AS_EXPECT(as_hull_is_vertex(h, 2, 4, t2, 3, 0.0, &v, NULL) == AS_OK && v == 1, "an ulp out");
    t2[7] = nextafter(0.5, 0.0);
    AS_EXPECT(as_hull_is_vertex(h, 2, 4, t2, 3, 0.0, &v, NULL) == AS_OK && v == 0, "an ulp in");
    /* out of the planar range (1e-200): the LP path answers, the same */
    double tiny[8];
    for (int e = 0; e < 8; e++) tiny[e] = tri[e] * 1e-200;
    AS_EXPECT(as_hull_is_vertex(h, 2, 4, tiny, 3, 0.4e-200, &v, NULL) == AS_OK && v == 1, "tiny");
    AS_EXPECT(as_hull_planar_exact(tiny + 2, 1) == 0 && as_hull_planar_exact(tri, 8) == 1,
              "planar range");
  }

  /* ---- d = 3 without LP (k = 3, dist NULL: the exact spatial test) against the exact LP:
   * integer and dyadic points, coplanar, collinear, with repeated rows, points on faces and
   * edges (midpoints), at 2^-200, 1 and 2^200, 2 to 31 rows (1 to 30 others), several tol. */
  {
    double q[3 * 40];
    int bad = 0, nonv = 0, tested = 0, edge = 0;
    for (int rep = 0; rep < 320; rep++) {
      const int m = 2 + rep % 30;
      const double scale = points3(&g, rep, m, q);
      const double tols[] = {0.0, 0.5, 1.0, 2.5};
      for (int ti = 0; ti < 4; ti++)
        bad += spatial_vs_lp(h, m, q, tols[ti] * scale, scale, &nonv, &tested, &edge);
    }
    AS_EXPECT(bad == 0 && nonv > tested / 10 && nonv < tested - tested / 10 && edge > 100,
              "spatial vs LP: %d disagreements in %d rows (%d not vertices, %d boundaries)", bad,
              tested, nonv, edge);
    /* known distances: the tetrahedron 4 conv(0, e_1, e_2, e_3); (2, 2, 3) is at distance 1
     * from its face x + y + z = 4 (the box corner (1, 1, 2) touches it), (3, 3, -1) at distance 1
     * from its edge (4, 0, 0)-(0, 4, 0), (1, 1, 2) on the face, an ulp above it outside */
    double tet[] = {0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 2, 2, 3};
    AS_EXPECT(as_hull_is_vertex(h, 3, 5, tet, 4, 1.0, &v, NULL) == AS_OK && v == 0, "face tol");
    AS_EXPECT(as_hull_is_vertex(h, 3, 5, tet, 4, nextafter(1.0, 0.0), &v, NULL) == AS_OK && v == 1,
              "face tol just below");
    tet[12] = 3, tet[13] = 3, tet[14] = -1;
    AS_EXPECT(as_hull_is_vertex(h, 3, 5, tet, 4, 1.0, &v, NULL) == AS_OK && v == 0, "edge tol");
    AS_EXPECT(as_hull_is_vertex(h, 3, 5, tet, 4, nextafter(1.0, 0.0), &v, NULL) == AS_OK && v == 1,
              "edge tol just below");
    tet[12] = 1, tet[13] = 1, tet[14] = 2;
    AS_EXPECT(as_hull_is_vertex(h, 3, 5, tet, 4, 0.0, &v, NULL) == AS_OK && v == 0, "on the face");
    tet[14] = nextafter(2.0, 3.0);
    AS_EXPECT(as_hull_is_vertex(h, 3, 5, tet, 4, 0.0, &v, NULL) == AS_OK && v == 1, "an ulp out");
    tet[14] = nextafter(2.0, 0.0);
    AS_EXPECT(as_hull_is_vertex(h, 3, 5, tet, 4, 0.0, &v, NULL) == AS_OK && v == 0, "an ulp in");
    /* an ulp off a slanted face far from the origin: the plane's degree-3 sign in expansions */
    double sl[] = {1e6, 3e6, 7, 5e6 + 1, 2, 9, 3, 7e6 - 5, 11, 0, 0, 0};
    for (int a = 0; a < 3; a++) sl[9 + a] = (sl[a] + sl[3 + a]) / 2.0; /* an edge midpoint */
    AS_EXPECT(as_hull_is_vertex(h, 3, 4, sl, 3, 0.0, &v, NULL) == AS_OK && v == 0, "on an edge");
    sl[11] = nextafter(sl[11], 100.0);
    int vl = -1;
    double dd = 0.0;
    AS_EXPECT(as_hull_is_vertex(h, 3, 4, sl, 3, 0.0, &v, NULL) == AS_OK &&
                  as_hull_is_vertex(h, 3, 4, sl, 3, 0.0, &vl, &dd) == AS_OK && v == 1 && vl == 1,
              "an ulp off the edge: %d, LP %d", v, vl);
    /* beyond the exact range (2^-300) and beyond 32 other rows: the LP answers, alike */
    int lbad = 0, ltested = 0, lnonv = 0, ledge = 0;
    for (int e = 0; e < 15; e++) tet[e] = ldexp(tet[e], -300);
    lbad += spatial_vs_lp(h, 5, tet, 0.0, 0x1p-300, &lnonv, &ltested, &ledge);
    as_rng_fill_uniform(&g, q, 3 * 40, -4.0, 4.0);
    for (int e = 0; e < 3 * 40; e++) q[e] = floor(q[e]);
    lbad += spatial_vs_lp(h, 40, q, 0.5, 1.0, &lnonv, &ltested, &ledge);
    AS_EXPECT(lbad == 0 && lnonv > 0, "LP range: %d of %d disagree", lbad, ltested);
  }

  /* ---- the 3-D vertex count without LP (as_hull_vertices_3d) against the exact LP: the
   * generators above (integers, coplanar, collinear, dyadic, on a cube's faces, repeated cube
   * corners, 53-bit doubles, far from the origin; midpoints, near-plane centroids, copies) at
   * 2^-200, 1 and 2^200, 1 to 100 rows; then known counts and the edges of its range. */
  {
    double q[3 * 129]; /* 128 rows for the comparisons, 129 for the count beyond the object */
    int bad = 0, nonv = 0, sets = 0;
    as_hull *h3 = NULL;
    AS_EXPECT(as_hull_create(3, 128, &h3) == AS_OK, "create 3 x 128");
    for (int rep = 0; rep < 480; rep++) {
      const int m = rep % 40 == 39 ? 60 + rep % 41 : 1 + rep % 40;
      (void)points3(&g, rep, m, q);
      bad += count3_vs_lp(h3, m, q, &nonv);
      sets++;
    }
    AS_EXPECT(bad == 0 && nonv > 1000,
              "3-D count vs LP: %d disagreements in %d sets (%d rows not "
              "vertices)",
              bad, sets, nonv);
    /* the 3 x 3 x 3 grid: its 8 corners (12 edge midpoints, 6 face centres, the centre: none) */
    double grid[81];
    for (int j = 0; j < 27; j++)
      grid[3 * j] = j % 3, grid[3 * j + 1] = j / 3 % 3, grid[3 * j + 2] = j / 9;
    int c = -2, fl[128];
    AS_EXPECT(as_hull_count_3d(h3, 27, grid, &c) == AS_OK && c == 8, "grid: %d vertices", c);
    /* a slanted 4 x 4 grid in the plane x + 2y - z = 1: 4; collinear: 2; one point: 1 */
    for (int j = 0; j < 16; j++)
      grid[3 * j] = j % 4, grid[3 * j + 1] = j / 4,
               grid[3 * j + 2] = grid[3 * j] + 2 * grid[3 * j + 1] - 1;
    AS_EXPECT(as_hull_count_3d(h3, 16, grid, &c) == AS_OK && c == 4, "plane grid: %d", c);
    for (int j = 0; j < 5; j++) grid[3 * j] = j, grid[3 * j + 1] = 2 * j, grid[3 * j + 2] = -j;
    AS_EXPECT(as_hull_vertices_3d(h3, 5, grid, fl, &c) == AS_OK && c == 2 && fl[0] && fl[4] &&
                  !fl[1] && !fl[2] && !fl[3],
              "line: %d", c);
    for (int j = 0; j < 4; j++) grid[3 * j] = 1, grid[3 * j + 1] = 2, grid[3 * j + 2] = 3;
    AS_EXPECT(as_hull_vertices_3d(h3, 4, grid, fl, &c) == AS_OK && c == 1 && fl[0] && fl[3],
              "one point 4 times: %d", c);
    AS_EXPECT(as_hull_count_3d(h3, 0, NULL, &c) == AS_OK && c == 0, "no point: %d", c);
    /* an ulp off a face of the tetrahedron 4 conv(0, e_1, e_2, e_3): out, a vertex; in, none */
    double tt[] = {0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 1, 1, 2};
    AS_EXPECT(as_hull_count_3d(h3, 5, tt, &c) == AS_OK && c == 4, "on the face: %d", c);
    tt[14] = nextafter(2.0, 3.0);
    AS_EXPECT(as_hull_count_3d(h3, 5, tt, &c) == AS_OK && c == 5, "an ulp out: %d", c);
    tt[14] = nextafter(2.0, 0.0);
    AS_EXPECT(as_hull_count_3d(h3, 5, tt, &c) == AS_OK && c == 4, "an ulp in: %d", c);
    /* beyond its range (2^-300; more rows than the object holds): -1, flags untouched */
    for (int e = 0; e < 15; e++) tt[e] = ldexp(tt[e], -300);
    fl[0] = 7;
    AS_EXPECT(as_hull_vertices_3d(h3, 5, tt, fl, &c) == AS_OK && c == -1 && fl[0] == 7,
              "2^-300: %d", c);
    for (int e = 0; e < 3 * 129; e++) q[e] = (double)(e % 7);
    AS_EXPECT(as_hull_count_3d(h3, 129, q, &c) == AS_OK && c == -1, "129 rows: %d", c);
    tt[1] = NAN;
    AS_EXPECT(as_hull_count_3d(h3, 5, tt, &c) == AS_ERR_DATA, "NaN is data");
    as_error_clear();
    as_hull *h2 = NULL;
    AS_EXPECT(as_hull_create(2, 8, &h2) == AS_OK && as_hull_count_3d(h2, 4, grid, &c) == AS_ERR_ARG,
              "a 2-D object refused");
    as_error_clear();
    as_hull_destroy(&h2);
    as_hull_destroy(&h3);
  }

  /* ---- bad input is refused before GLPK sees it */
  double nanpt[] = {0, 0, NAN, 1, 1, 1};
  AS_EXPECT(as_hull_is_vertex(h, 2, 3, nanpt, 0, 0.0, &v, NULL) == AS_ERR_DATA,
            "NaN point is data");
  AS_EXPECT(as_hull_dist_inf(h, 7, 3, nanpt, nanpt, &dist) == AS_ERR_ARG, "k beyond object");
  AS_EXPECT(as_hull_ray(h, 2, 3, sq, sq, 2, 1, &r) == AS_ERR_ARG, "bad axis");
  AS_EXPECT(as_hull_is_vertex(h, 2, 4, sq, 0, -1.0, &v, NULL) == AS_ERR_ARG, "negative tol");
  as_error_clear();

  as_hull_destroy(&h);
  AS_EXPECT(h == NULL, "destroy sets NULL");
  as_hull_destroy(&h);
  return as_test_finish("test_hull");
}
