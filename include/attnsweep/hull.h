/* attnsweep/hull.h: exact convex-hull predicates (hull.c).
 *
 * Each predicate is one small linear program built from the given doubles (which are exact
 * rationals) and solved by glp_simplex followed by glp_exact (rational arithmetic), so the
 * answer is exact for the data given; only the returned optimum is rounded to double (the
 * vertex test in 2-D and 3-D and the 2-D hulls decide without LP where the data allow: exact
 * signs of polynomials in the coordinates, see as_hull_is_vertex). The
 * data are scaled by one power of two into integers first, which glp_exact converts exactly
 * (hull.c says why and where that stops holding: coordinates below 2^-1000 or more than
 * about 2^970 apart).
 *
 * Points are rows of a row-major m x k array Q (m points, k coordinates); p is one point of
 * k coordinates. Every pointer is borrowed for the call only; nothing is kept.
 * The object (as_hull) holds the GLPK problem and the index and scratch arrays for up to
 * kmax coordinates and mmax points, allocated once; GLPK allocates internally per solve.
 * Nothing here is collective; an object must not be shared between threads.
 */
#ifndef ATTNSWEEP_HULL_H
#define ATTNSWEEP_HULL_H

#include <stddef.h>

#include "attnsweep/status.h"

typedef struct as_hull as_hull;

/* The most points as_hull_count_3d takes (beyond: -1, not counted). Its cost grows as the points
 * times the facets of the hull (each point is tested against every facet), at most about 2 n^2
 * plane tests. */
#define AS_HULL_3D_MAX 4096

/* Object for up to kmax coordinates and mmax points (kmax, mmax >= 1). *out set on success.
 * Switches GLPK terminal output off (glp_term_out(GLP_OFF)). AS_ERR_ARG, AS_ERR_NOMEM. */
as_status as_hull_create(int kmax, int mmax, as_hull **out);
/* Free; accepts NULL and *p == NULL; sets *p to NULL. */
void as_hull_destroy(as_hull **p);

/* L-infinity distance from p (k) to the convex hull of the m rows of Q (m x k, row-major):
 * min over convex weights w of max_a |p_a - sum_j w_j Q_ja|. *dist = 0 exactly iff p lies in
 * the hull. Statuses: AS_ERR_ARG for NULL pointers or sizes beyond the object (a bug of the
 * caller), AS_ERR_DATA for non-finite coordinates (named), AS_ERR_INTERNAL when GLPK fails
 * or ends in a state a bounded LP cannot reach. */
as_status as_hull_dist_inf(as_hull *h, int k, int m, const double *Q, const double *p,
                           double *dist);

/* Largest r >= 0 with p + sign * r * e_axis inside the hull of the rows of Q; -1 when p is not
 * in the hull. sign is +1 or -1, 0 <= axis < k. Statuses as as_hull_dist_inf. */
as_status as_hull_ray(as_hull *h, int k, int m, const double *Q, const double *p, int axis,
                      int sign, double *r);

/* Radius of the largest L1 ball centred at p inside the hull of the rows of Q (the minimum of
 * the 2k rays); 0 when p is on the boundary (always when the hull is not full-dimensional);
 * -1 when p is outside. Statuses as as_hull_dist_inf. */
as_status as_hull_depth_l1(as_hull *h, int k, int m, const double *Q, const double *p,
                           double *depth);

/* Is row i of Q a vertex of the hull of the rows of Q, at resolution tol >= 0? Tested against
 * the rows different from row i (exact duplicates of row i are left out, so both copies of a
 * repeated vertex count): vertex iff the L-infinity distance from row i to their hull is > tol
 * (tol = 0: the exact extreme-point test). A single distinct point is a vertex.
 * k = 2 with dist NULL and every coordinate and tol 0 or of magnitude in [2^-450, 2^450]: no
 * LP, an exact planar test (the hull of the other rows by the monotone chain with exact
 * orientations, then the separating axes of that polygon and the box row i +- tol, each sign
 * from an exact expansion; hull.c, planar_separated). k = 3 with dist NULL, at most 32 other
 * distinct rows and every coordinate and tol 0 or of magnitude in [2^-280, 2^280]: no LP either,
 * the certified direction below, else an exact spatial test (the box against the axes, the
 * planar test of the three axis projections, and the normals of the planes through three other
 * rows, each sign by a floating-point filter with a proven bound, else an exact expansion;
 * hull.c, spatial_separated). Otherwise a separating direction found
 * in floating point and checked with a rigorous bound on its rounding errors proves "vertex"
 * without the rational solver; anything it cannot prove goes to the exact LP. *dist receives the
 * exact distance when the LP decided, the certified lower bound (> tol) when the fast path did,
 * +inf when no other distinct row exists; dist may be NULL. Statuses as as_hull_dist_inf;
 * AS_ERR_ARG also for tol < 0 or i outside 0..m-1. */
as_status as_hull_is_vertex(as_hull *h, int k, int m, const double *Q, int i, double tol,
                            int *is_vertex, double *dist);

/* Vertices of the convex hull of the n rows of P (n x 2, row-major), for any n (no LP):
 * distinct points only (exact duplicates are one point) and strict vertices (a point inside
 * an edge is none): 0 for n = 0, 1 when all points coincide, 2 when all are collinear.
 * Andrew's monotone chain, O(n log n), with an exact orientation test (a floating-point filter,
 * then an exact expansion of the determinant; exact unless a product of two coordinate
 * differences underflows, |differences| below about 1e-154). scratch: 2 n doubles; stack:
 * 2 n + 2 ints. AS_ERR_ARG for NULL or n < 0, AS_ERR_DATA for a non-finite coordinate. */
as_status as_hull_count_2d(int n, const double *P, double *scratch, int *stack, int *count);

/* The same hull, and which rows are its vertices: flags[i] = 1 iff row i is (a copy of) a
 * strict vertex, i.e. exactly as_hull_is_vertex(..., i, 0.0, ...) says (0: row i lies in the
 * hull of the rows different from it). One sort and one chain for all rows. *count as
 * as_hull_count_2d. scratch: 3 n doubles; iscratch: 4 n + 2 ints; flags: n ints. Statuses as
 * as_hull_count_2d (AS_ERR_NOMEM above 64 distinct points when out of memory). */
as_status as_hull_vertices_2d(int n, const double *P, double *scratch, int *iscratch, int *flags,
                              int *count);

/* Vertices of the convex hull of the n rows of P (n x 3, row-major), counted as
 * as_hull_count_2d counts (distinct points only, strict vertices: a point inside an edge or a
 * face is none), exactly, without LP: the distinct points sorted, then the hull built one point
 * at a time (a point that sees no facet strictly, by the exact orientation of hull.c, lies in
 * the hull of the points before it; the facets it sees go and their horizon is joined to it),
 * then a vertex of that triangulated hull counts iff its facets lie in at least three distinct
 * planes (exact). Coplanar points: the exact 2-D count of their projection; collinear: 2.
 * At most about 2 n^2 plane tests. *count = -1 (not counted) when n exceeds the object's points
 * or AS_HULL_3D_MAX or a coordinate is nonzero and of magnitude outside
 * [2^-280, 2^280] (the range where every sign is exact); 0 for n = 0. The object must come
 * from as_hull_create with kmax >= 3. AS_ERR_ARG for NULL or n < 0, AS_ERR_DATA for a
 * non-finite coordinate. */
as_status as_hull_count_3d(as_hull *h, int n, const double *P, int *count);

/* The same hull, and which rows are its vertices: flags[i] = 1 iff row i is (a copy of) a
 * strict vertex, exactly what as_hull_is_vertex(..., i, 0.0, ...) says (as_hull_vertices_2d in
 * 3-D); flags (n ints) untouched when *count is -1. */
as_status as_hull_vertices_3d(as_hull *h, int n, const double *P, int *flags, int *count);

/* 1 when every one of the len values is 0 or of magnitude in [2^-450, 2^450]: then the planar
 * predicates (as_hull_count_2d, as_hull_vertices_2d, the planar as_hull_is_vertex) are exact,
 * no product of coordinate differences underflowing. */
int as_hull_planar_exact(const double *x, size_t len);

#endif /* ATTNSWEEP_HULL_H */
