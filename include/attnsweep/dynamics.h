/* attnsweep/dynamics.h: the self-attention particle dynamics of one trial and its integrators.
 *
 * Model (docs/theory.md sections 1 and 3), tokens as rows (n x d):
 *   x variables   X' = P X V^T,           P = rowsoftmax(X M X^T),           M = Q^T K
 *   z variables   Z' = (P Z - Z) V^T,     P = rowsoftmax(Y M Y^T), Y = Z e^{tV}^T (default)
 *   layers, x     X <- X + dt P(X) X V^T                           (a residual network)
 *   layers, z     Z <- Z + (P Z - Z) (dt R^{-1} V)^T, Y = Z (R^k)^T, R = I + dt V
 *
 * Scores are formed as S = c S~ with S~ bounded: the growing temperature e^{2 mu t} (mu the
 * largest real part of the spectrum of V; for layers rho^{2k}) and a power of two that
 * normalises the transformed tokens are factored out exactly, so the softmax
 * (as_attention_softmax, attention.h) never overflows: rows whose gap times c exceeds 708 are
 * exact one-hot rows, and exact ties are split equally. Any horizon is safe for the z variables;
 * the x variables themselves may overflow, which ends the run with outcome AS_OUT_NONFINITE.
 *
 * A workspace (as_dyn) is made once per shape (n, d); set_triple and run allocate nothing.
 * Methods (as_integ_spec.method):
 *   rk4, dopri5, euler  explicit Runge-Kutta methods, each a Butcher tableau (tableau.h) run
 *           by one stepper; attention is recomputed at every stage (time and state). Fixed
 *           step dt, except for a method with an embedded pair (dopri5: Dormand-Prince 5(4)),
 *           which controls its step with rtol, atol (initial step dt); with rtol = atol = 0
 *           it takes fixed steps dt without control (used by order tests);
 *   layers  round(T/dt) discrete layers (a map, not a Runge-Kutta method).
 * Steps are shortened to land exactly on snapshot times and on T (not for layers: a layer
 * snapshot is delivered at the first layer time >= the requested time, with that time).
 * Settling: the run stops early (AS_OUT_SETTLED) once max_i |z_i'| < settle_tol * radius
 * (radius = max_i |z_i - mean|, in the integrated variables) has held throughout a window of
 * length settle_window > 0.
 * Nothing here is collective; a workspace must not be shared between threads.
 */
#ifndef ATTNSWEEP_DYNAMICS_H
#define ATTNSWEEP_DYNAMICS_H

#include <signal.h>
#include <stdint.h>

#include "attnsweep/enums.h"
#include "attnsweep/status.h"
#include "attnsweep/trial.h"

/* ---------------------------------------------------------------- workspace */

typedef struct as_dyn as_dyn; /* workspace for shape (n, d) */

/* Workspace for n >= 1 tokens in dimension d >= 1. *out set on success.
 * Statuses: AS_ERR_ARG, AS_ERR_NOMEM. */
as_status as_dyn_create(int n, int d, as_dyn **out);
/* Free; accepts NULL and *p == NULL; sets *p to NULL. */
void as_dyn_destroy(as_dyn **p);
/* Bytes as_dyn_create(n, d) allocates (its arrays; the e^{tV} plan estimated as 16 d^2
 * doubles). Pure function; the memory model of cost.h. */
double as_dyn_bytes(int n, int d);

/* Set the triple: V (d x d) and M = Q^T K (d x d), row-major, copied. Chooses the e^{tV} path
 * (expm.h) and reports it in *path (may be NULL): AS_EXPM_EIGEN or AS_EXPM_PADE.
 * Statuses: AS_ERR_DATA (non-finite entries, named), AS_ERR_INTERNAL (a bug). */
as_status as_dyn_set_triple(as_dyn *w, const double *V, const double *M, as_expm *path);

/* Transformer blocks (blocks.h): the field of b replaces the base one, or (inside form) its
 * hook is applied to the base field; NULL: the base model. b is borrowed (outlives the runs).
 * Set after as_dyn_set_triple (which the field trials still call, with sum_h V_h and M_0).
 * Per-layer weights under a continuous method: as_dyn_run ends every step on the block
 * switches and evaluates all stages of a step with its block; the final attention uses the
 * block of the last step (blocks.h); as_dyn_rhs uses the block in force at t. */
struct as_blocks;
as_status as_dyn_set_blocks(as_dyn *w, struct as_blocks *b);

typedef struct as_dyn_stats {
  as_outcome outcome; /* reached_T, settled, max_steps, nonfinite, interrupted */
  int64_t steps;      /* steps taken (accepted + rejected) */
  int64_t rejected;   /* rejected steps (dopri5) */
  double t_final;     /* time of the final state (layers: number of layers times dt) */
  double settle_time; /* start of the window over which the state has been settled; NaN if never
                         (or no longer) settled at the end */
  double velocity;    /* final max_i |z_i'| / radius (0 when both are 0) */
  double radius;      /* final max_i |z_i - mean| (integrated variables), the settling scale;
                         not the record's `spread` (the classifier's diameter, classify.h) */
} as_dyn_stats;

/* Snapshot callback: time and the state in the integrated variables (n x d, borrowed for the
 * call only). */
typedef void (*as_dyn_snapshot_fn)(double t, const double *Z, void *ctx);

/* Integrate from X0 (n x d; x(0) = z(0)) with the settings in integ.
 * stop (may be NULL) is polled once per step: nonzero ends the run with AS_OUT_INTERRUPTED.
 * snap_times: n_snap times, non-decreasing, within (0, T]; cb (may be NULL) is called at each.
 * On AS_OUT_NONFINITE the final state is the last finite one (t_final its time).
 * Outcomes go to stats; the status is an error only for bad arguments or data
 * (AS_ERR_ARG / AS_ERR_SPEC / AS_ERR_DATA with a message: non-finite X0, T <= 0, dt <= 0,
 * unsorted snapshots, z-layers with a singular I + dt V) or a bug (AS_ERR_INTERNAL).
 * Requires as_dyn_set_triple first. */
as_status as_dyn_run(as_dyn *w, const as_integ_spec *integ, const double *X0,
                     const volatile sig_atomic_t *stop, const double *snap_times, int n_snap,
                     as_dyn_snapshot_fn cb, void *cb_ctx, as_dyn_stats *stats);

/* Final state in the integrated variables (z or x), n x d, owned by w (valid until the next run).
 */
const double *as_dyn_state(const as_dyn *w);
/* Final x = e^{tV} z (R^k z for layers; a copy for the x variables) into X (n x d). Entries may
 * overflow to +-inf for large t (never NaN from the scaling). Statuses: AS_ERR_ARG (no run). */
as_status as_dyn_state_x(as_dyn *w, double *X);
/* Attention P at the final state, n x n, owned by w; NULL for n > AS_ATTENTION_STREAM_N
 * (attention.h: streamed, never formed). */
const double *as_dyn_attention(const as_dyn *w);
/* PS = P S with P the attention at the final state of the last run, without forming P (the
 * streaming kernel): S, PS n x d row-major. For the classifier of trials whose P is not
 * formed. AS_ERR_ARG (no completed run), AS_ERR_NOMEM. */
as_status as_dyn_attention_apply(as_dyn *w, const double *S, double *PS);

/* ---------------------------------------------------------------- the attention kernel
 * Which kernel computes the attention of a workspace. AUTO (the default) chooses by shape: the
 * small-shape kernel where d and n allow it, the general one (BLAS for large products, P
 * formed) up to AS_ATTENTION_STREAM_N tokens, the streamed one (P never formed) above. A trial
 * spread over a group of ranks needs the streamed kernel at any n (as_dyn_set_rows); tests
 * choose the others to compare them. All give the same dynamics to rounding. */
typedef enum as_dyn_kernel {
  AS_DYN_KERNEL_AUTO = -1,   /* by shape (above) */
  AS_DYN_KERNEL_GENERAL = 0, /* needs n <= AS_ATTENTION_STREAM_N (P is allocated) */
  AS_DYN_KERNEL_SMALL = 1,   /* the small-shape kernel; needs d <= the kernel's largest d */
  AS_DYN_KERNEL_STREAM = 2   /* streamed: P is not updated (as_dyn_attention is stale) */
} as_dyn_kernel;
/* Use kernel k from the next run on. AS_ERR_ARG for a kernel the shape does not allow,
 * AS_ERR_NOMEM. Not collective. */
as_status as_dyn_set_kernel(as_dyn *w, as_dyn_kernel k);

/* ---------------------------------------------------------------- one trial over several ranks
 * The streamed kernel computes only rows [lo, hi) of H = P Y at every stage; exchange (called
 * right after, on every stage) must fill the other rows of H (n x d row-major) with the
 * values the other parts computed, and may return an error status (which ends the run with
 * it). Everything else (the transformed tokens, the reductions of the step guard, the
 * integrator) runs on the whole n x d state, identically, on every part, so a run split into
 * whole tiles gives the bits of the one-part run (par/group.c does the exchange with MPI).
 * lo a multiple of AS_ATTENTION_STREAM_TILE, hi one too or n; a partial range needs fn and
 * the streamed kernel (AS_DYN_KERNEL_STREAM below the threshold). (0, n, NULL): all rows, no
 * exchange (the default; also set by choosing a non-streamed kernel). AS_ERR_ARG otherwise.
 * as_dyn_attention_apply always computes every row, without exchange. The callback also gets
 * the time t of the evaluation and the horizon T of the run (0 outside as_dyn_run), for a
 * progress line within a long trial. */
typedef as_status (*as_dyn_exchange_fn)(double *H, int n, int d, int lo, int hi, double t, double T,
                                        void *ctx);
as_status as_dyn_set_rows(as_dyn *w, int lo, int hi, as_dyn_exchange_fn fn, void *ctx);
/* The rows [*lo, *hi) of part `part` (0 <= part < parts) of n rows split into parts blocks of
 * whole tiles (tile t of ceil(n / TILE) goes to the part p with floor(t parts / tiles) <= ...:
 * tiles [tiles p / parts, tiles (p + 1) / parts)); a part may be empty when parts > tiles.
 * Pure. */
void as_dyn_part_rows(int n, int part, int parts, int *lo, int *hi);

/* Right-hand side at (t, Z) in the integrated variables of `vars` (continuous time):
 * F = Z' (n x d), also leaves P(t, Z) in as_dyn_attention. For tests and benchmarks. */
as_status as_dyn_rhs(as_dyn *w, as_vars vars, double t, const double *Z, double *F);

/* ---------------------------------------------------------------- model variants
 * Attention normalisations and layer normalisation (docs/variants.md). The base model
 * (as_dyn_create's default, and am = NULL) is the row softmax without mask in R^d.
 *   hardmax   beta = +inf: the temperature is +inf, every row one-hot on its maximum score,
 *             tied maxima share the row equally (as_attention_softmax's rule); M is used
 *             unscaled (only its argmax matters).
 *   attention sinkhorn: P by as_attention_sinkhorn_warm (sinkhorn_iters, sinkhorn_tol) at
 *             every evaluation, each warm-started from the potentials of the one before in
 *             the same run (the first of a run cold); the largest remaining deviation over
 *             the run: as_dyn_sinkhorn_dev, the evaluations that missed sinkhorn_tol:
 *             as_dyn_sinkhorn_stats_of.
 *   attention sinkhorn_fixed: P by as_attention_sinkhorn_fixed, exactly sinkhorn_iters
 *             iterations from the scores at every evaluation (nothing carried between
 *             evaluations; sinkhorn_tol unused); the largest deviation over the run:
 *             as_dyn_sinkhorn_dev (a property of the model, never "missed"). With transformer
 *             blocks (as_dyn_set_blocks) every head's P^h is this map (blocks.h).
 *   mask      causal: row i is the softmax of its first i + 1 scores, P_ij = 0 for j > i
 *             (x_1' = V x_1 exactly; z_1 constant).
 *   norm      sphere: tokens on the unit sphere, vars x only (AS_ERR_SPEC otherwise).
 *             Continuous: x_i' = Proj_{x_i}(sum_j W_ij V x_j) with W = P (sa) or
 *             W_ij = e^{s_ij} / n (usa, s the scores; finite beta only); every row is
 *             renormalised after every step (the projection method: |x_i| = 1 to rounding at
 *             every step end; stages are not renormalised). Layers: x <- normalise(x + dt
 *             sum_j W_ij V x_j). X0 rows are normalised first; a zero row is AS_ERR_DATA.
 * Statuses: AS_ERR_ARG (NULL w; causal, usa or hardmax with either Sinkhorn attention,
 * hardmax + usa: combinations rules.h refuses), AS_ERR_SPEC (out-of-range settings),
 * AS_ERR_NOMEM (the Sinkhorn scratch, the usa weights: allocated once per workspace). */
as_status as_dyn_set_model(as_dyn *w, const as_attn_spec *am, int hardmax);
/* Largest remaining |row or column sum - 1| of the Sinkhorn P (either kind; every head's with
 * blocks) over the last run (NaN: none). */
double as_dyn_sinkhorn_dev(const as_dyn *w);
/* The Sinkhorn evaluations of the last run (every stage, rejected ones and the final P
 * included): how many, how many ended above sinkhorn_tol, the iterations they took in all
 * and at most. Zeros when the run had no converged Sinkhorn attention (sinkhorn_fixed does
 * sinkhorn_iters at every evaluation and misses nothing: not counted). */
typedef struct as_dyn_sinkhorn_stats {
  long evals;    /* evaluations of P */
  long missed;   /* of them, left above sinkhorn_tol (the iteration cap reached) */
  long iters;    /* iterations, summed over the evaluations */
  int max_iters; /* iterations of the longest evaluation */
} as_dyn_sinkhorn_stats;
void as_dyn_sinkhorn_stats_of(const as_dyn *w, as_dyn_sinkhorn_stats *out);
/* norm_form usa on the sphere: the weights W_ij = e^{s_ij} / n = P_ij Z_i / n that moved the
 * tokens at the final state of the last run (n x n, owned by w, valid until the next call on
 * w); NULL for any other model or before a run (then as_dyn_attention is the matrix used). */
const double *as_dyn_usa_weights(as_dyn *w);
/* Called with (t, state) at t = 0 and after every step of every later run (NULL: none). */
as_status as_dyn_set_step_hook(as_dyn *w, as_dyn_snapshot_fn cb, void *ctx);
/* Velocity at the final state of the last run (n x d, owned by w): the derivative, or a
 * layer's increment / dt (tangent part on the sphere). */
const double *as_dyn_velocity(const as_dyn *w);

#endif /* ATTNSWEEP_DYNAMICS_H */
