/* attnsweep/classify.h: the end state of a trial, its geometry and its verdict.
 *
 * classify.c: observables of the final state, the observed geometry, and the verdict against
 * the theorem the spectral analysis selected (docs/theory.md sections 2 and 3). The vertex and
 * interior tests below are the exact convex-hull predicates of hull.h.
 *
 * ------------------------------------------------------------------ coordinates
 * Every theorem is read in its own coordinates ("classified coordinates" Y, n x k), never on
 * the whole of z (components of z along eigenvalues with negative real part grow without bound):
 *   identity        Y = z                               k = d
 *   good            Y = c = l_1^T z                     k = 1   (l_1: left eigenvector, sp->l1)
 *   paranormal      Y = B^T pi_F z                      k = dim F (B: orthonormal basis of F)
 *   codim_k         Y = B^T pi_F z                      k = dim F
 *   d1              Y = z                               k = 1
 *   minus_identity  Y = x = e^{tV} z                    k = d
 *   complex, none   Y = B^T pi_F z when sp->dim_f > 0, else Y = z
 * pi_F is sp->proj_f (oblique when V is not normal). The per-token speed is computed from the
 * state itself: z_i' = V (sum_j P_ij z_j - z_i) (x_i' = V sum_j P_ij x_j for minus_identity),
 * read in the same coordinates: u_i = |W^T z_i'|.
 *
 * ------------------------------------------------------------------ thresholds
 * rho     rate at which a saturated token nears its limit (docs/theory.md section 2.2): lambda_1
 *         (identity, good, paranormal, d1); the smallest positive real part of the spectrum
 *         (codim_k, and complex/none when one exists; else max(|lambda_1|, 1e-300)).
 * r_i     = u_i / rho: the remaining travel of token i (exact in the hardmax regime, where
 *         Y_i' = rho (Y_leader - Y_i)).
 * s0, s   spread (diameter) of Y(0) and Y(T); L = max(s0, s) is the length scale.
 * eps_T   = e^{-rho t_final}, the theory's relative residual at the end.
 * cluster_tol = L * clamp(AS_CLASSIFY_TOL_C * eps_T, AS_CLASSIFY_TOL_MIN, AS_CLASSIFY_TOL_MAX).
 *         The factor 1000 allows saturation times up to ln(1000) ~ 6.9 / rho; the floor keeps
 *         round-off out; the ceiling keeps short runs from merging genuinely distinct clusters.
 * settled token i: r_i <= cluster_tol (its limit is within the resolution). A token that is not
 *         settled is "unresolved" and belongs to no cluster.
 * clusters: single linkage of the settled tokens at distance cluster_tol (Euclidean, in Y);
 *         centres are the means of the members.
 * at zero: a centre c with |c| <= cluster_tol.
 * vertex:  a centre whose L-infinity distance to the hull of the other centres exceeds
 *         cluster_tol (certified separating direction, else exact LP); k = 1: the lowest and
 *         highest centre.
 * interior depth of a centre: radius r_1 of the largest L1 ball about it inside the hull of the
 *         centres (2k ray LPs, exact); the Euclidean distance to the boundary lies in
 *         [r_1 / sqrt(k), r_1]. A centre is "interior" when r_1 / sqrt(k) > cluster_tol.
 * leader:  token j with P_ij >= 1 - AS_CLASSIFY_LEADER_TOL for some row i.
 * rank_p:  number of singular values of P above AS_CLASSIFY_RANK_RTOL * sigma_1: dgesvd of P for
 *         n <= AS_CLASSIFY_SVD_NMAX (O(n^3)); above, a randomised estimate in O(n^2) (range
 *         finder on blocks of 16, 32, 64 Gaussian columns with an a-posteriori residual check,
 *         classify.c rank_randomized): exact with probability >= 1 - 1e-8 up to a count of
 *         AS_CLASSIFY_RANK_BMAX - AS_CLASSIFY_RANK_OVER (every value not counted is below
 *         2 AS_CLASSIFY_RANK_RTOL sigma_1), a lower bound (at most AS_CLASSIFY_RANK_BMAX) above.
 * Boolean row (d1): P_ik >= 1 - AS_CLASSIFY_BOOL_TOL for the expected k.
 * collapse (minus_identity, M = I): linearising at x = 0 gives y_i' = -Sigma y_i for the
 *         deviations from the mean with Sigma' = -2 Sigma^2, so Sigma ~ I / (2t) and
 *         max_i |x_i| <= sqrt(n d / (2t)) (whitened deviations have sum of squares n d); the
 *         linearisation needs scores <x_i, x_j> <= 1. Hence tau_x = min(1, sqrt(n d / (2 t))).
 *         Collapsed when max_i |x_i| <= tau_x. Not collapsed and max_i |x_i'| below
 *         AS_CLASSIFY_STALL * max_i|x_i| / (2 t) (far slower than the theorem's decay): settled
 *         away from 0 (violated); otherwise still collapsing (unresolved).
 *
 * ------------------------------------------------------------------ verdicts
 * nonfinite      outcome AS_OUT_NONFINITE, or a non-finite entry in Z or P (or in X for
 *                minus_identity). observed = none.
 * failed         outcome AS_OUT_FAILED (nothing to classify).
 * unresolved     some token not settled (d1: an exceptional row of P not saturated; minus_identity:
 *                still collapsing). observed = unresolved.
 * no_prediction  theorem none or complex (no theorem proves a geometry); observed is labelled:
 *                unresolved tokens and no cluster of two -> unclustered; unresolved tokens ->
 *                unresolved; one cluster -> single_cluster; n singleton clusters ->
 *                unclustered; else clusters.
 * consistent / violated, per theorem (observed = the predicted geometry when consistent, the
 * generic label when violated; one cluster is reported as single_cluster for identity and
 * paranormal):
 *   identity, paranormal: every centre is a vertex, at zero, or not interior.
 *   good:     at most 3 levels of c; with 3 levels the middle one is at zero.
 *   codim_k:  at most 3 distinct limits of pi_F z.
 *   minus_identity: collapsed (above).
 *   d1:       every row of P is e_argmin(x0) or e_argmax(x0) except at most one, rank_p <= 3.
 * separation (good, paranormal, codim_k): the theorem's geometry emerges only once the leading
 *         part of e^{tV} dominates the rest, on the time scale 1/sep with sep = lambda_1 -
 *         max|lambda_k| (good), lambda - spectral radius on G (paranormal), min Re on F - max Re
 *         off F (codim_k). While sep t < AS_CLASSIFY_SEP (e^{-sep t} > 2%) tokens can sit in a
 *         metastable configuration (e.g. the polytope of V = I + eps N, whose gap is ~eps): an
 *         end state that would be "violated" is then "unresolved", with verdict_margin =
 *         AS_CLASSIFY_SEP / (sep t) > 1 (raise T to decide). A consistent one stays consistent.
 * reason (enums.h AS_REASON_LIST): why an unresolved verdict is not decided (moving tokens,
 *         metastable by the rule above, several clusters the theorem merges, P still mixing) or
 *         where a violated one fails (an interior cluster, too many levels, a middle level off
 *         zero, x stalled, P not Boolean); none otherwise.
 * t_decide: the horizon that would decide an unresolved verdict: metastable AS_CLASSIFY_SEP /
 *         sep; moving the largest as_classify_horizon of its unsettled tokens with their
 *         measured approach rates (in->A), and at least AS_CLASSIFY_SEP / sep when the theorem
 *         has a separation; NaN when decided or when the theory gives none (merging, mixing,
 *         a collapse still under way, a token not approaching).
 * n_clusters_all: single linkage of every token, settled or not, at max(cluster_tol,
 *         AS_CLASSIFY_ALL_TOL L): what a picture of the end state shows.
 * verdict_margin is dimensionless, "deciding quantity / its threshold": <= 1 means the test
 * passed. unresolved: max_i r_i / cluster_tol; identity/paranormal: largest interior depth
 * r_1 / (sqrt(k) cluster_tol) among non-vertex centres not at zero (0 if none); good: n_levels/3
 * (with 3 levels: max(1, |middle| / cluster_tol) when the middle level decides); codim_k:
 * n_levels / 3; minus_identity: max|x| / tau_x; d1: number of exceptional rows (max(that,
 * rank_p / 3) when the rank decides). NaN for no_prediction, nonfinite, failed.
 */
#ifndef ATTNSWEEP_CLASSIFY_H
#define ATTNSWEEP_CLASSIFY_H

#include <signal.h>

#include "attnsweep/enums.h"
#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/status.h"

#define AS_CLASSIFY_TOL_C 1000.0
#define AS_CLASSIFY_TOL_MIN 1e-9
#define AS_CLASSIFY_TOL_MAX 2e-2
#define AS_CLASSIFY_LEADER_TOL 1e-3
#define AS_CLASSIFY_BOOL_TOL 1e-6
#define AS_CLASSIFY_RANK_RTOL 1e-6
#define AS_CLASSIFY_STALL 1e-3
#define AS_CLASSIFY_SEP 3.912     /* ln(1 / AS_CLASSIFY_TOL_MAX): e^{-sep t} <= 2% */
#define AS_CLASSIFY_ALL_TOL 1e-3  /* n_clusters_all: linkage at max(cluster_tol, 1e-3 L) */
#define AS_CLASSIFY_SVD_NMAX 512  /* rank_p by a full SVD up to this n, estimated above */
#define AS_CLASSIFY_RANK_BMAX 64  /* largest block of the rank estimate */
#define AS_CLASSIFY_RANK_OVER 8   /* oversampling: a block of b decides ranks <= b - 8 */
#define AS_CLASSIFY_RANK_PROBES 8 /* probe vectors of the residual check */

/* What the integration leaves for the classifier (all arrays row-major, borrowed). */
typedef struct as_classify_input {
  int n, d;
  const double *Z0;      /* n x d initial tokens (z(0) = x(0)) */
  const double *Z;       /* n x d final rescaled tokens z(t_final) */
  const double *X;       /* n x d final x = e^{t V} z, may contain inf; required (finite) for
                            minus_identity, else may be NULL */
  const double *P;       /* n x n final attention matrix (rows sum to 1); NULL: not formed
                            (n > AS_ATTENTION_STREAM_N, see as_classify_set_product) */
  const double *V;       /* d x d value matrix (for the token speeds) */
  const as_spectral *sp; /* spectral analysis of the triple (theorem, l1, proj_f...) */
  as_outcome outcome;    /* how the integration ended */
  double t_final;        /* time reached (NaN: use T) */
  double T;              /* horizon */
  /* ---- model variants (docs/variants.md); zero for the base model */
  const double *F; /* n x d final velocity of the state Z (as_dyn_velocity), or NULL:
                      computed from P, Z, V as above. Required when sphere is set */
  int sphere;      /* Z holds x on the unit sphere: read in the identity reading */
  /* ---- horizons (t_decide); NULL: a token nears its limit at the theorem's rate rho */
  const double *A; /* n x d: z'' at the end (d/dt of the velocity of Z), for the measured
                      approach rate of each token still moving (ignored with F) */
  /* ---- precision (docs/theory.md 2.2); NULL / 0: none */
  const double *E;  /* d x d: e^{-tV} when Z was formed from an integrated X as X E^T (its
                       rounding counts in the reading's error bound); NULL: Z integrated */
  const double *Zp; /* n x d: the positive part of z (as_expm_positive_part) computed from an
                       integrated x, read in place of Z where Z is beyond double precision (or
                       not finite) and the theorem reads only that part; needs P */
  int x_decides;    /* z was integrated, and integrating x instead would give Zp (base model,
                       continuous time, eigenbasis path of e^{tV}, x finite at the end): a loss
                       of resolution says so (reason precision_vars_x) */
} as_classify_input;

typedef struct as_classify_ws as_classify_ws;

/* Workspace for n tokens in dimension d (n, d >= 1), allocated once and reused for every trial
 * of that shape. *out set on success. AS_ERR_ARG, AS_ERR_NOMEM. Not collective. */
as_status as_classify_ws_create(int n, int d, as_classify_ws **out);
/* Free; accepts NULL and *p == NULL; sets *p to NULL. */
void as_classify_ws_destroy(as_classify_ws **p);

/* Classify the end state in and write into rec the fields observed, verdict, n_clusters,
 * n_unresolved, n_leaders, rank_p, n_vertices, n_levels, cluster_tol, p_bool_dist,
 * p_uniform_dist, max_norm_x, level_a, level_b, verdict_margin, leaders_init_vertices,
 * mean_shift (|mean Y(T) - mean Y(0)| / s0, in the classified coordinates), spread (s), and the
 * empirical-measure fields mass_1..mass_8, mass_rest (as_measure_masses of the clusters),
 * hull_vertices, hull_vertices_init (distinct vertices of the hull of Y(T), Y(0): k = 1, 2 any
 * n; k = 3 up to AS_HULL_3D_MAX tokens in the range of as_hull_count_3d; else -1: not counted);
 * other fields are untouched. Fields that do not apply are NaN (F64) or 0 (I32).
 * Outcomes (non-finite state, failed set-up, unsettled tokens) are verdicts, not errors.
 * Returns AS_ERR_ARG for NULL or mis-shaped input (n, d not those of ws; sp->d != d; Z0 not
 * finite; outcome pending: the caller's bug), AS_ERR_DATA when the analysis or the end state
 * cannot be read (a non-finite projector, left eigenvector or token speed), AS_ERR_LAPACK when
 * dgesvd does not converge, AS_ERR_INTERNAL for a LAPACK illegal argument or a GLPK failure.
 * AS_ERR_INTERRUPTED when the stop flag of as_classify_set_stop is set (polled between phases,
 * inside the loops quadratic in n and between LP solves): rec is then incomplete (the caller
 * records the trial as interrupted).
 * Not collective. Allocates nothing itself (GLPK does, inside each LP solve). */
as_status as_classify(const as_classify_input *in, as_classify_ws *ws, as_record *rec);

/* Bytes as_classify_ws_create(n, d) allocates (GLPK's own problem object aside). Pure. */
double as_classify_ws_bytes(int n, int d);

/* P S for the next calls when in->P is NULL (trials above AS_ATTENTION_STREAM_N tokens, whose
 * P is never formed): n x d row-major, S the state read (Z, or X for minus_identity),
 * borrowed. Without P, rank_p = -1, n_leaders = 0, leaders_init_vertices = 0, p_bool_dist and
 * p_uniform_dist NaN, and the d1 theorem (decided by the rows of P) gives no_prediction. */
void as_classify_set_product(as_classify_ws *ws, const double *PS);

/* The stop flag as_classify polls (a signal handler's flag; NULL: never stop). Borrowed: it
 * must outlive the calls. ws NULL: nothing. */
void as_classify_set_stop(as_classify_ws *ws, const volatile sig_atomic_t *stop);

/* Work of classifying n tokens in dimension d, in the cost model's units (cost.h: about one
 * multiply-add each): n^2 (2 d + 6) for P Z, the distances of P, the diameters and the single
 * linkage, plus 4/3 n^3 for the SVD of P (n <= AS_CLASSIFY_SVD_NMAX) or 48 n^2 for the first
 * block of the rank estimate (none above AS_ATTENTION_STREAM_N: P is not formed), plus, at
 * d = 3 up to AS_HULL_3D_MAX tokens, 200 n for the two 3-D hull counts (hull_vertices,
 * hull_vertices_init: each token tested against the facets of a hull of some 20 vertices). The
 * hull LPs are left out (they depend on the end state). */
double as_classify_work(int n, int d);

/* Per-token results of the last successful as_classify on ws (n entries, owned by ws, valid
 * until the next call; unspecified before the first): leaders[j] = 1 if token j received a whole
 * row of P (AS_CLASSIFY_LEADER_TOL), else 0. labels[i] = cluster of token i (0-based, numbered by
 * lowest member index), -1 for an unresolved token; all -1 for nonfinite/failed verdicts and for
 * a collapse. */
const int *as_classify_leaders(const as_classify_ws *ws);
/* The clusters of the last successful as_classify on ws (owned by ws, valid until the next
 * call): returns their number m (0: none, e.g. a failed or non-finite end state), *k the
 * classified dimension, *centres m x k centres (row-major), *sizes m token counts; each
 * pointer may be NULL. These are the clusters of the masses (measure.h): the single linkage
 * of the settled tokens at cluster_tol, also for a minus_identity collapse. */
int as_classify_clusters(const as_classify_ws *ws, int *k, const double **centres,
                         const int **sizes);
const int *as_classify_labels(const as_classify_ws *ws);

/* The horizon at which a token still moving would be settled (docs/theory.md 2.2, "Reasons and
 * horizons"): its remaining travel at t is m cluster_tol(t) (m > 1); from t on it decays like
 * e^{-q (t' - t)} (q: its measured approach rate) while cluster_tol follows L clamp(1000
 * e^{-rho t'}, 1e-9, 2e-2). Returns the least t' >= t with travel <= cluster_tol(t'): t when
 * m <= 1, NaN when q <= 0 or an argument is not finite (no estimate). Pure. */
double as_classify_horizon(double m, double t, double rho, double q);

#endif /* ATTNSWEEP_CLASSIFY_H */
