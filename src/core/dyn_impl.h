/* dyn_impl.h (private to core): the workspace of the dynamics (struct as_dyn) and the functions
 * its three files share: dynamics.c (workspace, right-hand sides, integrators, one run),
 * dyn_model.c (the attention normalisations and layer normalisation of the model variants)
 * and dyn_batch.c (small trials of one shape in lock-step, batch.h). dynamics.h is the
 * contract; nothing outside src/core includes this. */
#ifndef AS_DYN_IMPL_H
#define AS_DYN_IMPL_H

#include <signal.h>
#include <stdint.h>

#include "attnsweep/attention.h"
#include "attnsweep/batch.h"
#include "attnsweep/blocks.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/expm.h"
#include "attnsweep/tableau.h"

/* The small-shape kernel (as_attention_small): few coordinates and few tokens, where BLAS calls
 * and per-row loops of length n cost more than the arithmetic. Measured per right-hand side
 * (V = M = I, one core, AVX-512): n = 20, d = 2: 1.9 us against 8.0 us for the general path;
 * n = 64: 1.4x to 1.5x faster for d = 2, 3, even for d = 8; n = 128: even for d = 2, slower
 * for d = 8 (0.7x); beyond, the general path wins (it walks P row by row, the kernel column by
 * column). Hence its range AS_SMALL_NMAX x AS_SMALL_DMAX (batch.h, the one definition). */
#if defined(__GNUC__) /* the kernel uses GNU C vector extensions (GCC, Clang) */
#define AS_DYN_HAVE_SMALL 1
#else
#define AS_DYN_HAVE_SMALL 0
#endif

/* What a right-hand side evaluates. */
enum { MODE_Z, MODE_X, MODE_LZ, MODE_LX };

#define AS_LN2 0.69314718055994530942

/* One linear combination of the stage derivatives, Y = Z + h sum_q co[q] K[idx[q]], with the
 * zero coefficients of the tableau dropped (fewer passes; identical sums for finite K). */
typedef struct rk_comb {
  int nt;                      /* terms */
  int idx[AS_RK_MAX_STAGES];   /* stage of each term */
  double co[AS_RK_MAX_STAGES]; /* its coefficient */
} rk_comb;

/* A tableau (tableau.h) in the doubles the stepper uses: made once per method, in place. */
typedef struct rk_plan {
  const as_tableau *tb;        /* the tableau it was made from, NULL: none yet */
  int s;                       /* stages */
  int fsal;                    /* the last stage's state is the solution */
  int embedded;                /* an error estimate exists (order_hat > 0) */
  double c[AS_RK_MAX_STAGES];  /* nodes */
  rk_comb a[AS_RK_MAX_STAGES]; /* state of stage i (row 0 unused) */
  rk_comb b;                   /* the solution (unused when fsal) */
  rk_comb e;                   /* error weights b - bhat, each rounded once from the rationals */
  double expo;                 /* step-size controller exponent -1 / (min(order, order_hat) + 1) */
} rk_plan;

struct as_dyn {
  int n, d;
  as_expm_plan *ex; /* e^{tV} of the current V */
  int have_triple;
  as_expm path;  /* chosen e^{tV} path */
  double mu;     /* largest real part of the spectrum of V (temperature exponent) */
  double *V;     /* d*d row-major */
  double *M;     /* d*d, Q^T K */
  double *Mt;    /* d*d, W^T M W on the eigen path (scores in the eigenbasis), else M */
  double *Lt;    /* d*d, (dt R^{-1} V)^T for z-layers */
  double *Rn;    /* d*d, R / rho for z-layers on the Pade path */
  double *E;     /* d*d, e^{t(V - mu I)} or (R/rho)^k on the Pade path */
  double *Ec[2]; /* d*d each: cache of e^{t(V - mu I)} at two times (Pade path) */
  double tc[2];  /* their times */
  int ec_valid[2];
  int ec_next;
  long e_k;                    /* layer power held in E (Pade path), -1 none */
  int *ipiv;                   /* d */
  double *bd;                  /* d: block coefficients */
  double *bo;                  /* d */
  double *Z;                   /* n*d current state */
  double *Zn;                  /* n*d next state */
  double *Ys;                  /* n*d stage state */
  double *K[AS_RK_MAX_STAGES]; /* n*d stage derivatives */
  double *G;                   /* n*d transformed, normalised tokens */
  double *GT;   /* d*n its transpose (small shapes: S = A G^T with a contiguous inner loop) */
  double *A;    /* n*d G Mt */
  double *H;    /* n*d P Z */
  double *S;    /* n*n scores */
  double *P;    /* n*n attention */
  int *hot;     /* n: column of the single nonzero of each row of P, -1 if several */
  int n_hot;    /* rows of P that are one-hot */
  int small;    /* use the small-shape kernel (as_attention_small) */
  int ld;       /* its lane count: n rounded up to a multiple of 8 */
  double *AT;   /* d*ld: (G Mt)^T, lanes >= n zero */
  double *PT;   /* n*ld: P^T from the small kernel */
  int pt_newer; /* P^T in PT is newer than P (P is written when a caller may read it) */
  int stream;   /* use the streaming kernel (as_attention_stream): n > AS_ATTENTION_STREAM_N */
  double *sw;   /* its workspace (as_attention_stream_doubles), NULL until needed */
  int *swi;     /* 2 AS_STREAM_TILE ints */
  int rlo, rhi; /* rows of H this workspace computes (as_dyn_set_rows; default 0, n) */
  /* fills the other rows of H after each streamed stage (with xctx), NULL: none */
  as_dyn_exchange_fn xchg;
  void *xctx;
  double run_T; /* the horizon of the run in progress (for the exchange; 0 outside a run) */
  rk_plan rk;   /* the Runge-Kutta method of the last continuous run */
  const as_tableau *tb_force; /* test hook: run this tableau whatever the method (NULL: none) */
  /* the last run */
  int ran;
  int mode;
  double t;   /* final time */
  long k;     /* final layer */
  double ldt; /* layer step */
  double rho; /* spectral radius of I + dt V (layers) */
  /* ---- attention normalisations and layer normalisation (as_dyn_set_model) */
  int variant;     /* the model differs from the base one: general attention kernel only */
  int hardmax;     /* beta = inf: logc = +inf (rows one-hot on the maximum, ties shared) */
  as_attn_spec am; /* attention, Sinkhorn settings, mask, norm */
  double *skw;     /* Sinkhorn scratch, as_attention_sinkhorn_doubles (allocated once, kept) */
  double sk_dev;   /* largest Sinkhorn deviation over the run, either kind (NaN: none) */
  int sk_warm;     /* skw holds the potentials of the last evaluation of this run */
  double *uf; /* usa: per row the factor Z_i / n of the last evaluation (n; set_model), or NULL */
  double *uw; /* usa: the weights of the final state (n*n, as_dyn_usa_weights; set_model) */
  as_dyn_sinkhorn_stats sk_stats; /* the run's Sinkhorn evaluations */
  as_dyn_snapshot_fn step_cb;     /* called after every step (and at t = 0), NULL: none */
  void *step_ctx;
  /* transformer blocks (blocks.h): the field or the inside hook, NULL: the base model */
  as_blocks *blocks;
  as_blocks_kind bkind;
  long blk; /* the weight block the field uses (the step's, ODE), -1: the one at (t, k) */
};

/* ---------------------------------------------------------------- shared by the three files */

/* What one run needs besides the workspace (as_dyn_run's arguments). */
typedef struct run_ctx {
  const as_integ_spec *in;
  const volatile sig_atomic_t *stop;
  const double *snap;
  int n_snap;
  as_dyn_snapshot_fn cb;
  void *cb_ctx;
  as_dyn_stats *stats;
} run_ctx;

/* The outcome that ends a run before its next step, from the velocity v and radius r at t
 * (AS_OUT_PENDING: go on). Shared by the continuous and the layer loops and the batch.
 * dynamics.c. */
as_outcome dyn_step_guard(const run_ctx *rc, double t, double v, double r, double *since);

/* Exchange two buffers. */
static inline void dyn_swap(double **a, double **b) {
  double *t = *a;
  *a = *b;
  *b = t;
}

/* Transformed tokens before normalisation: G = Y E~^T (rows in the eigenbasis on the eigen
 * path). *logscale: the log of the factor taken out (mu t or k log rho). dynamics.c. */
as_status dyn_transformed(as_dyn *w, int mode, double t, long k, const double *Y, double *logscale);
/* Scaled transformed tokens at state Y: G = G~ / 2^e exactly (max |G| in [1/2, 1)), and the
 * log of the temperature c of S = c G Mt G^T. dynamics.c. */
as_status dyn_scaled_tokens(as_dyn *w, int mode, double t, long k, const double *Y, double *logc);
/* F = right-hand side (continuous modes) or layer increment (layer modes) at state Y.
 * dynamics.c. */
as_status dyn_rhs_mode(as_dyn *w, int mode, double t, long k, const double *Y, double *F);
/* The checks and the set-up of a run (as_dyn_run up to its loop), and its end (final P,
 * velocity, stats). dynamics.c. */
as_status dyn_begin_run(as_dyn *w, const as_integ_spec *in, const double *X0,
                        const double *snap_times, int n_snap, as_dyn_stats *stats);
as_status dyn_finish_run(as_dyn *w, const as_integ_spec *in, as_dyn_stats *stats);

/* P from the scores w->S (temperature logc) for a non-base model (causal mask, Sinkhorn
 * converged or with fixed iterations, or the plain softmax). dyn_model.c. */
void dyn_model_weights(as_dyn *w, double logc);
/* The run's largest Sinkhorn deviation (as_dyn_sinkhorn_dev) raised to dev where that is
 * larger (or the first). dyn_model.c. */
void dyn_sinkhorn_dev_add(as_dyn *w, double dev);
/* usa on the sphere: rows of H rescaled to the weights e^{s_ij} / n. dyn_model.c. */
void dyn_usa_rescale(as_dyn *w, double logc);
/* Rows of F projected on the tangent spaces at the rows of X. dyn_model.c. */
void dyn_tangent_project(int n, int d, const double *X, double *F);
/* Every row of X to the unit sphere (a zero row becomes NaN). dyn_model.c. */
void dyn_sphere_normalise(int n, int d, double *X);

#endif /* AS_DYN_IMPL_H */
