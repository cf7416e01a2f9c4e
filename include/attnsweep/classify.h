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
 * n; k >= 3: -1, not counted);
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

/* ------------------------------------------------------------------ the nearest theorem
 *
 * Hypothesis distances of a triple (docs/theory.md section 2.11), computed once per triple from
 * the triple and its spectral analysis, all relative (dimensionless). Sign convention: a value
 * > 0 is how far the hypothesis is missed; an equality hypothesis (V = cI, M = cI, M symmetric,
 * lambda_1 real) holds at 0 (set to exactly 0 when the flag of spectral.h holds, within its
 * tolerance); a strict one (positive definite, dominant, positive margin, radius on G below
 * lambda) holds at values < 0 (below -tol, the flag's tolerance, where the flag has one), is on
 * its boundary at 0, and < 0 measures the depth inside. NaN: not defined for this triple.
 *   v_identity        ||V - cI||_F / ||V||_F with c = max(tr V / d, 0) (the nearest cI, c >= 0)
 *   v_minus_identity  the same with c = min(tr V / d, 0)
 *   m_identity        ||M - cI||_F / ||M||_F with c = max(tr M / d, 0)
 *   m_symmetric       ||M - M^T||_F / ||M||_F                       (= m_asym)
 *   m_posdef          -m_min_sym_eig / ||M||_F                      (0 for M = 0)
 *   lead_real         |Im lambda_1| / |lambda_1|
 *   gap               (|lambda_2| - Re lambda_1) / |lambda_1|: < 0 exactly when lambda_1 is real,
 *                     positive, simple and strictly dominant (a complex lambda_1 has its
 *                     conjugate as lambda_2, so >= 0); d = 1: -sign(v)
 *   margin            -<Q phi_1, K phi_1> / ||M||_F (NaN when phi_1 is undetermined)
 *   paranormal        min over 2 <= f < d of max(spread_f, sep_f) with the eigenvalues sorted by
 *                     modulus: spread_f = max_{i<=f} |lambda_i - lambda_1| / |lambda_1| (the f
 *                     leading eigenvalues as one real lambda: V = lambda I on F), sep_f =
 *                     (|lambda_{f+1}| - Re lambda_1) / |lambda_1| (radius on G below lambda);
 *                     when spread_f is within tol the value is sep_f (< 0 inside) if the flag
 *                     PARANORMAL holds with dim_f = f, and max(sep_f, 0) otherwise (a defective
 *                     lambda_1). NaN for d < 3 (no 2 <= f < d). paranormal_f: the f chosen.
 * The distance of a theorem D_T = max(0, its hypotheses' distances), NaN ones left out; which
 * hypotheses a theorem has is AS_NEAR_THEOREMS below (the one declaration: the results file
 * states it per theorem, /trials attribute "hypotheses:<theorem>", and summarize reads it).
 * A theorem can be read on the triple when its coordinates exist: good needs a finite l_1
 * (lambda_1 real and simple), paranormal needs the projector of the analysis onto an F of
 * dimension paranormal_f (sp->dim_f), d1 needs d = 1; identity and minus_identity always.
 * The nearest theorem (precedence: d1, identity, minus_identity, paranormal, good):
 *   when a proved theorem H holds (sp->theorem): among the readable theorems that precede H
 *       and whose hypotheses do not hold, those with D_T < AS_NEAR_REACH; none: H itself, D = 0;
 *   otherwise: among the readable theorems with D_T < 1; none: AS_THM_NONE (D NaN);
 *   of the candidates, the first in precedence order with D_T <= AS_NEAR_SLACK * min D_T (the
 *       most specific of the near ones: V = I + eps N is near V = I and, in d = 3, about as
 *       near a paranormal V with dim F = 2; the polytope theorem is the one meant).
 * A relative distance of 1 is as far as a matrix can be from the ray {cI, c >= 0}.
 */
#define AS_NEAR_REACH 0.5
#define AS_NEAR_SLACK 2.0

/* The hypothesis distances (above), in record order: as_near field h, record field dist_h. */
#define AS_NEAR_HYPOTHESES(X) \
  X(v_identity)               \
  X(v_minus_identity)         \
  X(m_identity)               \
  X(m_symmetric)              \
  X(m_posdef)                 \
  X(lead_real)                \
  X(gap)                      \
  X(margin)                   \
  X(paranormal)

#define AS_X_NEAR_INDEX(h) AS_NEAR_I_##h,
enum { AS_NEAR_HYPOTHESES(AS_X_NEAR_INDEX) AS_NEAR_NHYP };
#undef AS_X_NEAR_INDEX
#define AS_NEAR_HYP(h) (1u << AS_NEAR_I_##h)

/* The theorems the nearest-theorem analysis reads, in precedence order, and their hypotheses. */
#define AS_NEAR_THEOREMS(X)                                                                        \
  X(AS_THM_D1, AS_NEAR_HYP(gap) | AS_NEAR_HYP(m_posdef))                                           \
  X(AS_THM_IDENTITY, AS_NEAR_HYP(v_identity) | AS_NEAR_HYP(m_symmetric) | AS_NEAR_HYP(m_posdef))   \
  X(AS_THM_MINUS_IDENTITY, AS_NEAR_HYP(v_minus_identity) | AS_NEAR_HYP(m_identity))                \
  X(AS_THM_PARANORMAL, AS_NEAR_HYP(paranormal) | AS_NEAR_HYP(m_symmetric) | AS_NEAR_HYP(m_posdef)) \
  X(AS_THM_GOOD, AS_NEAR_HYP(lead_real) | AS_NEAR_HYP(gap) | AS_NEAR_HYP(margin))

/* The name of hypothesis i (0 <= i < AS_NEAR_NHYP; NULL outside), as in as_near and, after
 * "dist_", in the record. Pure. */
const char *as_near_hypothesis_name(int i);

/* The hypotheses of theorem th (a mask of AS_NEAR_HYP bits; 0 for a theorem not in
 * AS_NEAR_THEOREMS). Pure. */
unsigned as_near_theorem_hypotheses(as_theorem th);

#define AS_X_NEAR_FIELD(h) double h;
typedef struct as_near {
  AS_NEAR_HYPOTHESES(AS_X_NEAR_FIELD) /* hypothesis distances (above) */
  int paranormal_f;                   /* dim F of the paranormal distance (0: none) */
  as_theorem theorem;                 /* the nearest theorem */
  as_geom predicted;                  /* its prediction */
  double dist;                        /* its D_T (NaN for AS_THM_NONE) */
} as_near;
#undef AS_X_NEAR_FIELD

/* Hypothesis distances and the nearest theorem of triple tr with analysis sp (as_spectral_analyze
 * with tolerance tol, or the ScaLAPACK path). AS_ERR_ARG for NULL or mismatched d. Not collective;
 * allocates nothing. */
as_status as_near_analyze(const as_triple *tr, const as_spectral *sp, double tol, as_near *nr);

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
 * block of the rank estimate (none above AS_ATTENTION_STREAM_N: P is not formed). The hull LPs
 * are left out (they depend on the end state). */
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

/* ------------------------------------------------------------------ model variants
 * The theorems of the variants (docs/variants.md) enter the same table: the paper's theorems
 * speak about the base model (row softmax, no mask, tokens in R^d, finite beta) only.
 *   sphere  norm sphere, softmax, no mask, finite beta, V = a I and M = b I (a, b > 0),
 *           d >= 3: almost every start ends in ONE cluster (Geshkovski, Letrouit,
 *           Polyanskiy, Rigollet 2023, "A mathematical perspective on Transformers"; after
 *           metastable phases when beta is large: Geshkovski, Koubbi, Polyanskiy, Rigollet
 *           2024). Both sa and usa.
 *   causal  norm sphere, softmax, causal mask, finite beta, V = a I (a > 0), any Q, K,
 *           d >= 2: every token converges to x_1(0) (Karagodin, Polyanskiy, Rigollet 2024,
 *           "Clustering in causal attention masking", on the sphere).
 * Any other variant: theorem none. Prediction: single_cluster. Classified in x (the state on
 * the sphere), identity reading, rate a; one cluster: consistent; unsettled tokens:
 * unresolved; several settled clusters: unresolved too (the theorems are asymptotic: a
 * metastable configuration), observed clusters, verdict_margin = n_clusters. */
struct as_attn_spec;
/* The theorem and prediction of a trial whose model is am (hardmax: beta = inf) on the triple
 * (V, M: d x d, row-major, the built matrices), given the base model's analysis sp. Pure. */
void as_theorem_for_model(const as_spectral *sp, const struct as_attn_spec *am, int hardmax, int d,
                          const double *V, const double *M, as_theorem *thm, as_geom *pred);

/* ------------------------------------------------------------------ metastability
 * Cluster counts along a run: single linkage of the tokens at the distance
 * tol = AS_META_TOL * (diameter of the initial tokens), counted after every step; a plateau
 * is a maximal stretch of constant count >= 2 lasting at least AS_PLATEAU_MIN time units, other
 * than the first stretch (from t = 0 until the first pair comes within tol: the approach). */
#define AS_META_TOL 1e-3
#define AS_PLATEAU_MIN 2.0
typedef struct as_meta as_meta;
/* Workspace for n tokens in dimension d. AS_ERR_ARG, AS_ERR_NOMEM. */
as_status as_meta_create(int n, int d, as_meta **out);
void as_meta_destroy(as_meta **p);
/* Start a run from the initial tokens X0 (n x d): sets tol, clears the plateaus. */
void as_meta_reset(as_meta *m, const double *X0);
/* Clusters of X (n x d) at the tolerance of the last reset. */
int as_meta_count(as_meta *m, const double *X);
/* Count X at time t (non-decreasing t) and update the plateaus. */
void as_meta_step(as_meta *m, double t, const double *X);
/* Close the run at its last time: n_plateaus, plateau_start, plateau_length, t_last_merge,
 * n_clusters_track into rec. */
void as_meta_finish(as_meta *m, as_record *rec);

#endif /* ATTNSWEEP_CLASSIFY_H */
