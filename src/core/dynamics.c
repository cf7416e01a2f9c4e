/* dynamics.c: workspace, right-hand sides and integrators of the attention dynamics
 * (see dynamics.h for the model and the contracts). */
#include "attnsweep/dynamics.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/attention.h"
#include "attnsweep/batch.h"
#include "attnsweep/blocks.h"
#include "attnsweep/expm.h"
#include "attnsweep/tableau.h"
#include "linalg_dyn.h"

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
  rk_plan rk;                 /* the Runge-Kutta method of the last continuous run */
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
  double *skw;     /* Sinkhorn scratch, n*n + 3n (allocated on first use, kept) */
  double sk_dev;   /* largest remaining Sinkhorn deviation over the run (NaN: none) */
  as_dyn_snapshot_fn step_cb; /* called after every step (and at t = 0), NULL: none */
  void *step_ctx;
  /* transformer blocks (blocks.h): the field or the inside hook, NULL: the base model */
  as_blocks *blocks;
  as_blocks_kind bkind;
};

as_status as_dyn_set_blocks(as_dyn *w, as_blocks *b) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL, AS_ERR_ARG, "as_dyn_set_blocks: NULL workspace");
  w->blocks = b;
  w->bkind = b ? as_blocks_kind_get(b) : AS_BLOCKS_OFF;
  w->ran = 0;
cleanup:
  return st;
}

/* ---------------------------------------------------------------- create / destroy */

/* The streaming kernel's workspace. */
static as_status stream_buffers(as_dyn *w) {
  as_status st = AS_OK;
  if (w->sw) return AS_OK;
  w->sw = malloc(as_attention_stream_doubles(w->d) * sizeof(double));
  w->swi = malloc(2 * (size_t)AS_STREAM_TILE * sizeof(int));
  AS_CHECK_ALLOC(w->sw);
  AS_CHECK_ALLOC(w->swi);
cleanup:
  if (st != AS_OK) {
    free(w->sw);
    free(w->swi);
    w->sw = NULL;
    w->swi = NULL;
  }
  return st;
}

/* AT and PT of the small-shape kernel (n x ld doubles: allocated only where it runs). */
static as_status small_buffers(as_dyn *w) {
  as_status st = AS_OK;
  if (w->PT) return AS_OK;
  w->AT = calloc((size_t)w->d * w->ld, sizeof(double));
  w->PT = calloc((size_t)w->n * w->ld, sizeof(double));
  AS_CHECK_ALLOC(w->AT);
  AS_CHECK_ALLOC(w->PT);
cleanup:
  if (st != AS_OK) {
    free(w->AT);
    free(w->PT);
    w->AT = w->PT = NULL;
  }
  return st;
}

as_status as_dyn_create(int n, int d, as_dyn **out) {
  as_status st = AS_OK;
  as_dyn *w = NULL;
  AS_CHECK(n >= 1 && d >= 1 && out != NULL, AS_ERR_ARG, "as_dyn_create: n = %d, d = %d", n, d);
  w = calloc(1, sizeof *w);
  AS_CHECK_ALLOC(w);
  w->n = n;
  w->d = d;
  w->e_k = -1;
  w->rlo = 0;
  w->rhi = n;
  AS_TRY(as_expm_create(d, &w->ex));
  const size_t dd = (size_t)d * d, nd = (size_t)n * d, nn = (size_t)n * n;
  double **mats[] = {&w->V, &w->M, &w->Mt, &w->Lt, &w->Rn, &w->E, &w->Ec[0], &w->Ec[1]};
  for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
    *mats[i] = calloc(dd, sizeof(double));
    AS_CHECK_ALLOC(*mats[i]);
  }
  double **vecs[] = {&w->GT, &w->Z, &w->Zn, &w->Ys, &w->G, &w->A, &w->H};
  for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
    *vecs[i] = calloc(nd, sizeof(double));
    AS_CHECK_ALLOC(*vecs[i]);
  }
  for (int i = 0; i < AS_RK_MAX_STAGES; i++) {
    w->K[i] = calloc(nd, sizeof(double));
    AS_CHECK_ALLOC(w->K[i]);
  }
  w->stream = n > AS_ATTENTION_STREAM_N;
  if (w->stream) {
    AS_TRY(stream_buffers(w));
  } else { /* P is also what callers read at the end: allocated whenever it is formed */
    w->S = calloc(nn, sizeof(double));
    w->P = calloc(nn, sizeof(double));
    AS_CHECK_ALLOC(w->S);
    AS_CHECK_ALLOC(w->P);
  }
  w->bd = calloc((size_t)d, sizeof(double));
  w->bo = calloc((size_t)d, sizeof(double));
  w->ipiv = calloc((size_t)d, sizeof(int));
  w->hot = calloc((size_t)n, sizeof(int));
  w->ld = (n + 7) / 8 * 8;
  w->small = AS_DYN_HAVE_SMALL && d <= AS_SMALL_DMAX && n <= AS_SMALL_NMAX;
  if (w->small) AS_TRY(small_buffers(w)); /* else only when a test forces the kernel */
  AS_CHECK_ALLOC(w->hot);
  AS_CHECK_ALLOC(w->bd);
  AS_CHECK_ALLOC(w->bo);
  AS_CHECK_ALLOC(w->ipiv);
  *out = w;
  w = NULL;
cleanup:
  as_dyn_destroy(&w);
  return st;
}

double as_dyn_bytes(int n, int d) {
  const double nd = (double)n * d, dd = (double)d * d, ld = (double)((n + 7) / 8 * 8);
  double b = 8.0 * dd * 8.0;                /* V, M, Mt, Lt, Rn, E, Ec[2] */
  b += 8.0 * nd * (7.0 + AS_RK_MAX_STAGES); /* GT, Z, Zn, Ys, G, A, H, K[] */
  if (n > AS_ATTENTION_STREAM_N)            /* the streaming workspace */
    b += 8.0 * (double)as_attention_stream_doubles(d) + 4.0 * 2.0 * AS_STREAM_TILE;
  else
    b += 8.0 * 2.0 * (double)n * n; /* S, P */
  if (AS_DYN_HAVE_SMALL && d <= AS_SMALL_DMAX && n <= AS_SMALL_NMAX)
    b += 8.0 * (ld * d + (double)n * ld);           /* AT, PT */
  b += 4.0 * n;                                     /* hot */
  b += 8.0 * (2.0 * d) + 4.0 * d + 8.0 * 16.0 * dd; /* bd, bo, ipiv, the e^{tV} plan */
  return b + (double)sizeof(as_dyn);
}

void as_dyn_destroy(as_dyn **p) {
  if (!p || !*p) return;
  as_dyn *w = *p;
  as_expm_destroy(&w->ex);
  free(w->V);
  free(w->M);
  free(w->Mt);
  free(w->Lt);
  free(w->Rn);
  free(w->E);
  free(w->Ec[0]);
  free(w->Ec[1]);
  free(w->ipiv);
  free(w->hot);
  free(w->bd);
  free(w->bo);
  free(w->Z);
  free(w->Zn);
  free(w->Ys);
  for (int i = 0; i < AS_RK_MAX_STAGES; i++) free(w->K[i]);
  free(w->G);
  free(w->GT);
  free(w->A);
  free(w->H);
  free(w->S);
  free(w->P);
  free(w->AT);
  free(w->PT);
  free(w->skw);
  free(w->sw);
  free(w->swi);
  free(w);
  *p = NULL;
}

const double *as_dyn_state(const as_dyn *w) {
  return w->Z;
}
const double *as_dyn_attention(const as_dyn *w) {
  return w->P;
}

static void invalidate_caches(as_dyn *w) {
  w->ec_valid[0] = w->ec_valid[1] = 0;
  w->ec_next = 0;
  w->e_k = -1;
}

as_status as_dyn_set_triple(as_dyn *w, const double *V, const double *M, as_expm *path) {
  as_status st = AS_OK;
  const int d = w->d;
  const size_t dd = (size_t)d * d;
  AS_CHECK(V != NULL && M != NULL, AS_ERR_ARG, "as_dyn_set_triple: NULL matrix");
  w->have_triple = 0;
  w->ran = 0;
  for (size_t i = 0; i < dd; i++)
    AS_CHECK(isfinite(M[i]), AS_ERR_DATA, "M[%zu][%zu] = %g is not finite", i / (size_t)d,
             i % (size_t)d, M[i]);
  AS_TRY(as_expm_set(w->ex, V, AS_EXPM_NONE, &w->path));
  memcpy(w->V, V, dd * sizeof(double));
  memcpy(w->M, M, dd * sizeof(double));
  if (w->path == AS_EXPM_EIGEN)
    as_expm_congruence(w->ex, w->M, w->Mt);
  else
    memcpy(w->Mt, M, dd * sizeof(double));
  w->mu = as_expm_mu(w->ex);
  invalidate_caches(w);
  w->have_triple = 1;
  if (path) *path = w->path;
cleanup:
  return st;
}

/* ---------------------------------------------------------------- right-hand side */

/* e^{t(V - mu I)} on the Pade path, cached for the last two times (RK4 asks for each stage
 * time twice: t + h/2 in two stages, t + h again as the next step's first stage). */
static as_status pade_at(as_dyn *w, double t, const double **E) {
  as_status st = AS_OK;
  for (int i = 0; i < 2; i++)
    if (w->ec_valid[i] && w->tc[i] == t) {
      *E = w->Ec[i];
      return AS_OK;
    }
  int slot = w->ec_next;
  AS_TRY(as_expm_eval(w->ex, t, w->mu, w->Ec[slot]));
  w->tc[slot] = t;
  w->ec_valid[slot] = 1;
  w->ec_next = 1 - slot;
  *E = w->Ec[slot];
cleanup:
  return st;
}

/* (R / rho)^k into w->E on the Pade path: one product per consecutive layer. */
static as_status layer_power(as_dyn *w, long k) {
  as_status st = AS_OK;
  const int d = w->d;
  if (w->e_k == k) return AS_OK;
  if (w->e_k >= 0 && k == w->e_k + 1) {
    double *T = w->Ec[0]; /* the time cache is unused in layer mode */
    as_mm(0, 0, d, d, d, 1.0, w->E, d, w->Rn, d, 0.0, T, d);
    memcpy(w->E, T, (size_t)d * d * sizeof(double));
  } else {
    AS_TRY(as_expm_eval_layers(w->ex, w->ldt, k, w->rho, w->E));
  }
  w->e_k = k;
cleanup:
  return st;
}

/* Transformed tokens before normalisation: G = Y E~^T (rows in the eigenbasis on the eigen
 * path). Returns in *logscale the log of the factor taken out (mu t or k log rho). */
static as_status transformed(as_dyn *w, int mode, double t, long k, const double *Y,
                             double *logscale) {
  as_status st = AS_OK;
  const int n = w->n, d = w->d;
  *logscale = 0.0;
  if (mode == MODE_X || mode == MODE_LX) {
    memcpy(w->G, Y, (size_t)n * d * sizeof(double));
    return AS_OK;
  }
  if (w->path == AS_EXPM_EIGEN) {
    as_expm_to_eigen(w->ex, n, Y, w->G);
    if (mode == MODE_Z)
      as_expm_blocks(w->ex, t, w->mu, w->bd, w->bo);
    else
      as_expm_layer_blocks(w->ex, w->ldt, k, w->rho, w->bd, w->bo);
    int unit = 1; /* e.g. V = I: the blocks are the identity at every time */
    for (int j = 0; j < d; j++) unit &= w->bd[j] == 1.0 && w->bo[j] == 0.0;
    if (!unit) as_expm_apply_blocks(w->ex, n, w->bd, w->bo, w->G);
  } else {
    const double *E = w->E;
    if (mode == MODE_Z) {
      AS_TRY(pade_at(w, t, &E));
    } else {
      AS_TRY(layer_power(w, k));
    }
    as_mm(0, 1, n, d, d, 1.0, Y, d, E, d, 0.0, w->G, d);
  }
  *logscale = mode == MODE_Z ? w->mu * t : (double)k * log(w->rho);
cleanup:
  return st;
}

/* Scaled transformed tokens at state Y: G = G~ / 2^e exactly (max |G| in [1/2, 1)), and the
 * log of the temperature c of S = c G Mt G^T. */
static as_status scaled_tokens(as_dyn *w, int mode, double t, long k, const double *Y,
                               double *logc) {
  as_status st = AS_OK;
  const size_t nd = (size_t)w->n * w->d;
  double ls = 0.0;
  AS_TRY(transformed(w, mode, t, k, Y, &ls));
  double smax = 0.0;
  for (size_t i = 0; i < nd; i++) {
    double a = fabs(w->G[i]);
    smax = a > smax ? a : smax; /* a NaN entry is caught by the finiteness checks of the run */
  }
  *logc = 2.0 * ls;
  if (smax > 0.0 && isfinite(smax)) {
    int e = 0;
    (void)frexp(smax, &e);
    double f = ldexp(1.0, -e);
    for (size_t i = 0; i < nd; i++) w->G[i] *= f;
    *logc += 2.0 * (double)e * AS_LN2;
  }
cleanup:
  return st;
}

/* ---- attention normalisations and layer normalisation (docs/variants.md) */

/* P from the scores w->S (temperature logc) for a non-base model: the causal mask (row i over
 * its first i + 1 columns, the rest exactly 0), Sinkhorn, or the plain softmax (hardmax and
 * the sphere only change logc and the output). */
static void model_weights(as_dyn *w, double logc) {
  const int n = w->n;
  if (w->am.mask == AS_MASK_CAUSAL) {
    int oh = 0;
    for (int i = 0; i < n; i++) {
      double *p = w->P + (size_t)i * n;
      oh += as_attention_softmax_hot(1, i + 1, w->S + (size_t)i * n, logc, p, w->hot + i);
      for (int j = i + 1; j < n; j++) p[j] = 0.0;
    }
    w->n_hot = oh;
  } else if (w->am.attention == AS_ATTN_SINKHORN) {
    double dev = 0.0;
    w->n_hot = as_attention_sinkhorn(n, w->S, logc, w->am.sinkhorn_iters, w->am.sinkhorn_tol, w->P,
                                     w->hot, w->skw, &dev, NULL);
    if (isnan(w->sk_dev) || dev > w->sk_dev) w->sk_dev = dev;
  } else {
    w->n_hot = as_attention_softmax_hot(n, n, w->S, logc, w->P, w->hot);
  }
}

/* usa on the sphere: weights e^{s_ij} / n instead of P_ij, i.e. row i of H times
 * Z_i / n with Z_i = sum_j e^{s_ij} = e^{s_i,max} / P_i,argmax (s = c S~; c finite). */
static void usa_rescale(as_dyn *w, double logc) {
  const int n = w->n, d = w->d;
  const double c = exp(logc);
  for (int i = 0; i < n; i++) {
    const int m = w->am.mask == AS_MASK_CAUSAL ? i + 1 : n;
    const double *s = w->S + (size_t)i * n, *p = w->P + (size_t)i * n;
    int arg = 0;
    for (int j = 1; j < m; j++)
      if (s[j] > s[arg]) arg = j;
    const double f = exp(c * s[arg] - log(p[arg]) - log((double)n));
    for (int k = 0; k < d; k++) w->H[(size_t)i * d + k] *= f;
  }
}

/* Rows of F projected on the tangent spaces at the rows of X: F_i -= <x_i, F_i> / |x_i|^2 x_i. */
static void tangent_project(int n, int d, const double *X, double *F) {
  for (int i = 0; i < n; i++) {
    const double *x = X + (size_t)i * d;
    double *f = F + (size_t)i * d;
    double xf = 0.0, xx = 0.0;
    for (int k = 0; k < d; k++) xf += x[k] * f[k], xx += x[k] * x[k];
    const double a = xx > 0.0 ? xf / xx : 0.0;
    for (int k = 0; k < d; k++) f[k] -= a * x[k];
  }
}

/* Every row of X to the unit sphere (a zero row becomes NaN: the run ends as non-finite). */
static void sphere_normalise(int n, int d, double *X) {
  for (int i = 0; i < n; i++) {
    double *x = X + (size_t)i * d, s = 0.0;
    for (int k = 0; k < d; k++) s += x[k] * x[k];
    const double inv = 1.0 / sqrt(s);
    for (int k = 0; k < d; k++) x[k] = s > 0.0 ? x[k] * inv : NAN;
  }
}

as_status as_dyn_set_model(as_dyn *w, const as_attn_spec *am, int hardmax) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL, AS_ERR_ARG, "as_dyn_set_model: NULL workspace");
  as_attn_spec base = {AS_ATTN_SOFTMAX, 1, 0.0, AS_MASK_NONE, AS_NORM_NONE, AS_NFORM_SA};
  if (!am) am = &base;
  AS_CHECK(am->attention >= 0 && am->attention < AS_ATTN_COUNT && am->mask >= 0 &&
               am->mask < AS_MASK_COUNT && am->norm >= 0 && am->norm < AS_NORM_COUNT &&
               am->norm_form >= 0 && am->norm_form < AS_NFORM_COUNT,
           AS_ERR_INTERNAL, "unknown attention/mask/norm setting (%d, %d, %d, %d)",
           (int)am->attention, (int)am->mask, (int)am->norm, (int)am->norm_form);
  AS_CHECK(am->attention != AS_ATTN_SINKHORN ||
               (am->sinkhorn_iters >= 1 && am->sinkhorn_tol >= 0.0 && !isnan(am->sinkhorn_tol)),
           AS_ERR_SPEC, "Sinkhorn needs sinkhorn_iters >= 1 and sinkhorn_tol >= 0 (got %d, %g)",
           am->sinkhorn_iters, am->sinkhorn_tol);
  /* Combinations of the rules of rules.h (validate refuses them): a caller's bug here. */
  AS_CHECK(!(am->attention == AS_ATTN_SINKHORN && am->mask == AS_MASK_CAUSAL), AS_ERR_ARG,
           "a causal mask with Sinkhorn attention breaks rule causal_sinkhorn");
  AS_CHECK(!(hardmax && am->norm == AS_NORM_SPHERE && am->norm_form == AS_NFORM_USA), AS_ERR_ARG,
           "norm_form usa with hardmax breaks rule usa_beta");
  if (am->attention == AS_ATTN_SINKHORN && !w->skw) {
    w->skw = calloc((size_t)w->n * w->n + 3 * (size_t)w->n, sizeof(double));
    AS_CHECK_ALLOC(w->skw);
  }
  w->am = *am;
  w->hardmax = hardmax ? 1 : 0;
  w->variant = w->hardmax || am->attention != AS_ATTN_SOFTMAX || am->mask != AS_MASK_NONE ||
               am->norm != AS_NORM_NONE;
cleanup:
  return st;
}

as_status as_dyn_set_step_hook(as_dyn *w, as_dyn_snapshot_fn cb, void *ctx) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL, AS_ERR_ARG, "as_dyn_set_step_hook: NULL workspace");
  w->step_cb = cb;
  w->step_ctx = ctx;
cleanup:
  return st;
}

double as_dyn_sinkhorn_dev(const as_dyn *w) {
  return w->sk_dev;
}

const double *as_dyn_velocity(const as_dyn *w) {
  return w->Ys;
}

/* H = P Y with P at state Y, general shapes: S = c G Mm G^T, P = rowsoftmax(S) into w->P. */
static void attention_general(as_dyn *w, const double *Mm, double logc, const double *Y) {
  const int n = w->n, d = w->d;
  as_mm(0, 0, n, d, d, 1.0, w->G, d, Mm, d, 0.0, w->A, d);
  if ((double)n * n * d > 4096.0) {
    as_mm(0, 1, n, n, d, 1.0, w->A, d, w->G, d, 0.0, w->S, n);
  } else {
    for (int i = 0; i < n; i++)
      for (int j = 0; j < d; j++) w->GT[(size_t)j * n + i] = w->G[(size_t)i * d + j];
    as_mm(0, 0, n, n, d, 1.0, w->A, d, w->GT, n, 0.0, w->S, n);
  }
  if (w->variant)
    model_weights(w, logc);
  else
    w->n_hot = as_attention_softmax_hot(n, n, w->S, logc, w->P, w->hot);
  w->pt_newer = 0;
  /* A one-hot row is a copy of its leader's token (exact, and O(d)); once every row is
   * one-hot (the hardmax regime of long runs) the product costs O(n d). */
  if (w->n_hot == n || (double)n * n * d <= 4096.0) {
    for (int i = 0; i < n; i++) {
      double *h = w->H + (size_t)i * d;
      if (w->hot[i] >= 0) {
        const double *y = Y + (size_t)w->hot[i] * d;
        for (int j = 0; j < d; j++) h[j] = y[j];
      } else {
        as_mm(0, 0, 1, d, n, 1.0, w->P + (size_t)i * n, n, Y, d, 0.0, h, d);
      }
    }
  } else {
    as_mm(0, 0, n, d, n, 1.0, w->P, n, Y, d, 0.0, w->H, d);
  }
}

/* The same with the small-shape kernel (c finite): A^T = (G Mm)^T with the dot products of
 * as_mm's few-column path (four partial sums, same order), then as_attention_small; P^T is
 * left in w->PT. */
static void attention_small(as_dyn *w, const double *Mm, double c, const double *Y) {
  const int n = w->n, d = w->d, ld = w->ld;
  for (int i = 0; i < n; i++) {
    const double *g = w->G + (size_t)i * d;
    for (int col = 0; col < d; col++) {
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
      int l = 0;
      for (; l + 4 <= d; l += 4) {
        s0 += g[l] * Mm[(size_t)l * d + col];
        s1 += g[l + 1] * Mm[(size_t)(l + 1) * d + col];
        s2 += g[l + 2] * Mm[(size_t)(l + 2) * d + col];
        s3 += g[l + 3] * Mm[(size_t)(l + 3) * d + col];
      }
      for (; l < d; l++) s0 += g[l] * Mm[(size_t)l * d + col];
      w->AT[(size_t)col * ld + i] = (s0 + s1) + (s2 + s3);
    }
  }
#if AS_DYN_HAVE_SMALL
  as_attention_small(n, d, ld, w->AT, w->G, c, Y, w->PT, w->H);
#else
  (void)c;
  (void)Y;
#endif
  w->pt_newer = 1;
}

/* F from H = P Y for small shapes: the products of rhs_mode's general path (as_mm's few-column
 * arithmetic, same order), in one pass without calls. */
static void small_output(as_dyn *w, int mode, const double *Y, double *F) {
  const int n = w->n, d = w->d;
  const int minus_y = mode == MODE_Z || mode == MODE_LZ;
  for (int i = 0; i < n; i++) {
    double h[AS_SMALL_DMAX];
    for (int l = 0; l < d; l++)
      h[l] = minus_y ? w->H[(size_t)i * d + l] - Y[(size_t)i * d + l] : w->H[(size_t)i * d + l];
    double *f = F + (size_t)i * d;
    if (mode == MODE_LZ) { /* F = H Lt: four partial sums over l */
      for (int j = 0; j < d; j++) {
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        int l = 0;
        for (; l + 4 <= d; l += 4) {
          s0 += h[l] * w->Lt[(size_t)l * d + j];
          s1 += h[l + 1] * w->Lt[(size_t)(l + 1) * d + j];
          s2 += h[l + 2] * w->Lt[(size_t)(l + 2) * d + j];
          s3 += h[l + 3] * w->Lt[(size_t)(l + 3) * d + j];
        }
        for (; l < d; l++) s0 += h[l] * w->Lt[(size_t)l * d + j];
        f[j] = (s0 + s1) + (s2 + s3);
      }
    } else { /* F = alpha H V^T: one sum over l */
      const double alpha = mode == MODE_LX ? w->ldt : 1.0;
      for (int j = 0; j < d; j++) {
        const double *v = w->V + (size_t)j * d;
        double s = 0.0;
        for (int l = 0; l < d; l++) s += h[l] * v[l];
        f[j] = alpha * s;
      }
    }
  }
}

/* P = (P^T)^T into w->P after the small kernel: done only where a caller may read P. */
static void publish_attention(as_dyn *w) {
  if (!w->pt_newer) return;
  const int n = w->n, ld = w->ld;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) w->P[(size_t)i * n + j] = w->PT[(size_t)j * ld + i];
  w->pt_newer = 0;
}

void as_dyn_part_rows(int n, int part, int parts, int *lo, int *hi) {
  const long long tiles = ((long long)n + AS_STREAM_TILE - 1) / AS_STREAM_TILE;
  const long long t0 = tiles * part / parts, t1 = tiles * (part + 1) / parts;
  const long long r0 = t0 * AS_STREAM_TILE, r1 = t1 * AS_STREAM_TILE;
  *lo = (int)(r0 < n ? r0 : n);
  *hi = (int)(r1 < n ? r1 : n);
}

as_status as_dyn_set_rows(as_dyn *w, int lo, int hi, as_dyn_exchange_fn fn, void *ctx) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL, AS_ERR_ARG, "as_dyn_set_rows: NULL workspace");
  AS_CHECK(0 <= lo && lo <= hi && hi <= w->n && lo % AS_STREAM_TILE == 0 &&
               (hi % AS_STREAM_TILE == 0 || hi == w->n),
           AS_ERR_ARG, "as_dyn_set_rows: rows [%d, %d) of %d are not whole tiles of %d", lo, hi,
           w->n, AS_STREAM_TILE);
  AS_CHECK(w->stream || (lo == 0 && hi == w->n && fn == NULL), AS_ERR_ARG,
           "as_dyn_set_rows: rows [%d, %d) of %d need the streamed kernel", lo, hi, w->n);
  AS_CHECK(fn != NULL || (lo == 0 && hi == w->n), AS_ERR_ARG,
           "as_dyn_set_rows: rows [%d, %d) of %d without an exchange", lo, hi, w->n);
  w->rlo = lo;
  w->rhi = hi;
  w->xchg = fn;
  w->xctx = ctx;
  w->ran = 0;
cleanup:
  return st;
}

as_status as_dyn_set_kernel(as_dyn *w, as_dyn_kernel kernel) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL && kernel >= AS_DYN_KERNEL_AUTO && kernel <= AS_DYN_KERNEL_STREAM &&
               !(kernel == AS_DYN_KERNEL_SMALL && (w->d > AS_SMALL_DMAX || !AS_DYN_HAVE_SMALL)),
           AS_ERR_ARG, "as_dyn_set_kernel: kernel %d", (int)kernel);
  AS_CHECK(kernel != AS_DYN_KERNEL_GENERAL || w->P != NULL, AS_ERR_ARG,
           "as_dyn_set_kernel: the dense kernel needs n <= %d (n = %d)", AS_ATTENTION_STREAM_N,
           w->n);
  const int small = kernel == AS_DYN_KERNEL_AUTO
                        ? (AS_DYN_HAVE_SMALL && w->d <= AS_SMALL_DMAX && w->n <= AS_SMALL_NMAX)
                        : kernel == AS_DYN_KERNEL_SMALL;
  const int stream =
      kernel == AS_DYN_KERNEL_AUTO ? w->n > AS_ATTENTION_STREAM_N : kernel == AS_DYN_KERNEL_STREAM;
  if (small) AS_TRY(small_buffers(w));
  if (stream) AS_TRY(stream_buffers(w));
  w->small = small;
  w->stream = stream;
  if (!stream) { /* rows of a group need the streamed kernel (as_dyn_set_rows) */
    w->rlo = 0;
    w->rhi = w->n;
    w->xchg = NULL;
    w->xctx = NULL;
  }
cleanup:
  return st;
}

/* F = right-hand side (continuous modes) or layer increment (layer modes); leaves P at Y
 * (in w->P, or transposed in w->PT after the small kernel: see publish_attention). */
static as_status rhs_mode(as_dyn *w, int mode, double t, long k, const double *Y, double *F) {
  as_status st = AS_OK;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  double logc = 0.0;
  if (w->bkind == AS_BLOCKS_FIELD) { /* transformer blocks: their own field (blocks.h) */
    w->pt_newer = 0;
    return as_blocks_field(w->blocks, mode == MODE_LZ || mode == MODE_LX,
                           mode == MODE_Z || mode == MODE_LZ, t, k, Y, F, w->P);
  }
  AS_TRY(scaled_tokens(w, mode, t, k, Y, &logc));
  if (w->hardmax) logc = INFINITY;
  const double *Mm = (mode == MODE_Z || mode == MODE_LZ) ? w->Mt : w->M;
  const double c = exp(logc); /* +inf: hardmax, handled by the general softmax */
  if (w->small && c < INFINITY && !w->variant) {
    attention_small(w, Mm, c, Y);
    small_output(w, mode, Y, F);
    goto cleanup;
  }
  if (w->stream) {
    /* A for every row (O(n d^2)), so each row's A has the bits of the one-rank run; the
     * O(n^2 d) rows of H only for this workspace's rows, the others from the exchange. */
    as_mm(0, 0, n, d, d, 1.0, w->G, d, Mm, d, 0.0, w->A, d);
    w->n_hot = as_attention_stream_rows(n, d, w->rlo, w->rhi, w->A, w->G, logc, Y, w->H, w->hot,
                                        w->sw, w->swi);
    w->pt_newer = 0;
    if (w->xchg) AS_TRY(w->xchg(w->H, n, d, w->rlo, w->rhi, w->xctx));
  } else {
    attention_general(w, Mm, logc, Y);
    if (w->am.norm == AS_NORM_SPHERE && w->am.norm_form == AS_NFORM_USA) usa_rescale(w, logc);
  }
  switch (mode) {
  case MODE_Z:
    for (size_t i = 0; i < nd; i++) w->H[i] -= Y[i];
    as_mm(0, 1, n, d, d, 1.0, w->H, d, w->V, d, 0.0, F, d);
    break;
  case MODE_X:
    as_mm(0, 1, n, d, d, 1.0, w->H, d, w->V, d, 0.0, F, d);
    if (w->am.norm == AS_NORM_SPHERE) tangent_project(n, d, Y, F); /* x_i' = Proj_{x_i}(...) */
    break;
  case MODE_LZ:
    for (size_t i = 0; i < nd; i++) w->H[i] -= Y[i];
    as_mm(0, 0, n, d, d, 1.0, w->H, d, w->Lt, d, 0.0, F, d);
    break;
  default: /* MODE_LX */
    as_mm(0, 1, n, d, d, w->ldt, w->H, d, w->V, d, 0.0, F, d);
    break;
  }
cleanup:
  if (st == AS_OK && w->bkind == AS_BLOCKS_INSIDE) as_blocks_inside(w->blocks, n, F);
  return st;
}

as_status as_dyn_rhs(as_dyn *w, as_vars vars, double t, const double *Z, double *F) {
  as_status st = AS_OK;
  AS_CHECK(w->have_triple, AS_ERR_ARG, "as_dyn_rhs: no triple set");
  AS_CHECK(vars == AS_VARS_Z || vars == AS_VARS_X, AS_ERR_ARG, "as_dyn_rhs: vars = %d", (int)vars);
  AS_TRY(rhs_mode(w, vars == AS_VARS_Z ? MODE_Z : MODE_X, t, 0, Z, F));
  publish_attention(w);
cleanup:
  return st;
}

/* ---------------------------------------------------------------- measures */

static double max_row_norm(int n, int d, const double *F) {
  double best = 0.0;
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < d; j++) s += F[(size_t)i * d + j] * F[(size_t)i * d + j];
    if (!(s <= best)) best = s; /* NaN propagates */
  }
  return sqrt(best);
}

/* Radius about the mean: max_i |Z_i - mean| (mean: d entries of scratch). */
static double radius_of(int n, int d, const double *Z, double *mean) {
  for (int j = 0; j < d; j++) mean[j] = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < d; j++) mean[j] += Z[(size_t)i * d + j];
  for (int j = 0; j < d; j++) mean[j] /= n;
  double best = 0.0;
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < d; j++) {
      double e = Z[(size_t)i * d + j] - mean[j];
      s += e * e;
    }
    if (!(s <= best)) best = s;
  }
  return sqrt(best);
}

static int all_finite(size_t len, const double *x) {
  double acc = 0.0;
  for (size_t i = 0; i < len; i++) acc += x[i] * 0.0; /* NaN iff some entry is inf or NaN */
  return acc == 0.0;
}

static void swap(double **a, double **b) {
  double *t = *a;
  *a = *b;
  *b = t;
}

/* ---------------------------------------------------------------- steps */

/* Rational x - y (entries left out read as 0) rounded once to a double. */
static double rational_diff(as_rational x, as_rational y) {
  int64_t xn = x.num, xd = x.num == 0 ? 1 : x.den, yn = y.num, yd = y.num == 0 ? 1 : y.den;
  int64_t num = xn * yd - yn * xd, den = xd * yd; /* |num|, den < 2^53 for int32 parts */
  return num == 0 ? 0.0 : (double)num / (double)den;
}

static void comb_add(rk_comb *cb, int j, double v) {
  if (v == 0.0) return;
  cb->idx[cb->nt] = j;
  cb->co[cb->nt] = v;
  cb->nt++;
}

/* The plan of tableau tb into w->rk (kept while the method stays the same). */
static as_status rk_prepare(as_dyn *w, const as_tableau *tb) {
  as_status st = AS_OK;
  rk_plan *rk = &w->rk;
  if (rk->tb == tb) return AS_OK;
  AS_CHECK(tb->stages >= 1 && tb->stages <= AS_RK_MAX_STAGES && tb->order >= 1 &&
               tb->order_hat >= 0 && (!tb->fsal || tb->stages >= 2),
           AS_ERR_ARG, "tableau of method %d: %d stages, order %d(%d), fsal %d", (int)tb->method,
           tb->stages, tb->order, tb->order_hat, tb->fsal);
  memset(rk, 0, sizeof *rk);
  rk->s = tb->stages;
  rk->fsal = tb->fsal;
  rk->embedded = tb->order_hat > 0;
  for (int i = 0; i < rk->s; i++) {
    rk->c[i] = as_rational_value(tb->c[i]);
    for (int j = 0; j < i; j++) comb_add(&rk->a[i], j, as_rational_value(tb->a[i][j]));
    comb_add(&rk->b, i, as_rational_value(tb->b[i]));
    if (rk->embedded) comb_add(&rk->e, i, rational_diff(tb->b[i], tb->bhat[i]));
  }
  int q = tb->order_hat > 0 && tb->order_hat < tb->order ? tb->order_hat : tb->order;
  rk->expo = -1.0 / (double)(q + 1);
  rk->tb = tb;
cleanup:
  return st;
}

/* Y = Z + h sum_q co[q] K[idx[q]]: per entry the sum from 0.0 in the tableau's stage order,
 * one pass over the vectors. */
static void rk_combine(size_t nd, const double *restrict Z, double h, const rk_comb *cb,
                       double *const *K, double *restrict Y) {
  const int nt = cb->nt;
  const double *Kq[AS_RK_MAX_STAGES];
  double co[AS_RK_MAX_STAGES];
  for (int q = 0; q < nt; q++) Kq[q] = K[cb->idx[q]], co[q] = cb->co[q];
  switch (nt) { /* the common short sums unrolled */
  case 0:
    memcpy(Y, Z, nd * sizeof *Y);
    return;
  case 1:
    for (size_t i = 0; i < nd; i++) Y[i] = Z[i] + h * (0.0 + co[0] * Kq[0][i]);
    return;
  default:
    for (size_t i = 0; i < nd; i++) {
      double acc = 0.0;
      for (int q = 0; q < nt; q++) acc += co[q] * Kq[q][i];
      Y[i] = Z[i] + h * acc;
    }
  }
}

/* One step of the current tableau from (t, Z) with K[0] = f(t, Z): Zn = the solution (with
 * fsal its derivative f(t + h, Zn) is left in K[s - 1]); *err = scaled RMS norm of the error
 * estimate when controlled, else 0. */
static as_status step_rk(as_dyn *w, double t, double h, int controlled, double rtol, double atol,
                         double *err) {
  as_status st = AS_OK;
  const rk_plan *rk = &w->rk;
  const size_t nd = (size_t)w->n * w->d;
  double *Z = w->Z;
  for (int s = 1; s < rk->s; s++) {
    double *Y = rk->fsal && s == rk->s - 1 ? w->Zn : w->Ys;
    rk_combine(nd, Z, h, &rk->a[s], w->K, Y);
    AS_TRY(rhs_mode(w, w->mode, t + rk->c[s] * h, 0, Y, w->K[s]));
  }
  if (!rk->fsal) rk_combine(nd, Z, h, &rk->b, w->K, w->Zn);
  *err = 0.0;
  if (controlled) {
    const rk_comb *e = &rk->e;
    double sum = 0.0;
    for (size_t i = 0; i < nd; i++) {
      double ei = 0.0;
      for (int q = 0; q < e->nt; q++) ei += e->co[q] * w->K[e->idx[q]][i];
      ei *= h;
      double sc = atol + rtol * fmax(fabs(Z[i]), fabs(w->Zn[i]));
      double r = ei / sc;
      sum += r * r;
    }
    *err = sqrt(sum / (double)nd);
    if (isnan(*err)) *err = INFINITY;
  }
cleanup:
  return st;
}

as_status as_dyn_set_tableau(as_dyn *w, const as_tableau *tb) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL, AS_ERR_ARG, "as_dyn_set_tableau: NULL workspace");
  w->tb_force = tb;
  w->rk.tb = NULL; /* a test may change a tableau in place between runs */
cleanup:
  return st;
}

/* ---------------------------------------------------------------- run */

typedef struct run_ctx {
  const as_integ_spec *in;
  const volatile sig_atomic_t *stop;
  const double *snap;
  int n_snap;
  as_dyn_snapshot_fn cb;
  void *cb_ctx;
  as_dyn_stats *stats;
} run_ctx;

/* Settling bookkeeping at time t with velocity v and radius r: returns 1 when settled. */
static int settle_update(const as_integ_spec *in, double t, double v, double r, double *since) {
  int cond = v == 0.0 || v < in->settle_tol * r;
  if (!cond) {
    *since = NAN;
    return 0;
  }
  if (isnan(*since)) *since = t;
  return in->settle_window > 0.0 && t - *since >= in->settle_window;
}

/* The outcome that ends a run before its next step, from the velocity v and radius r at t
 * (AS_OUT_PENDING: go on). Shared by the continuous and the layer loops. */
static as_outcome step_guard(const run_ctx *rc, double t, double v, double r, double *since) {
  if (!isfinite(v)) return AS_OUT_NONFINITE;
  if (settle_update(rc->in, t, v, r, since)) return AS_OUT_SETTLED;
  if (rc->stats->steps >= rc->in->max_steps) return AS_OUT_MAX_STEPS;
  return AS_OUT_PENDING;
}

static as_status run_continuous(as_dyn *w, const run_ctx *rc) {
  as_status st = AS_OK;
  const as_integ_spec *in = rc->in;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  const rk_plan *rk = &w->rk;
  const int controlled = rk->embedded && (in->rtol > 0.0 || in->atol > 0.0);
  const double T = in->T, hmin = 1e-12 * T;
  as_dyn_stats *s = rc->stats;
  double t = 0.0, since = NAN, h_ctrl = in->dt;
  int si = 0, have_k1 = 0;
  as_outcome out = AS_OUT_PENDING;
  for (;;) {
    if (rc->stop && *rc->stop) {
      out = AS_OUT_INTERRUPTED;
      break;
    }
    if (!have_k1) {
      AS_TRY(rhs_mode(w, w->mode, t, 0, w->Z, w->K[0]));
      have_k1 = 1;
    }
    double v = max_row_norm(n, d, w->K[0]), r = radius_of(n, d, w->Z, w->bd);
    if ((out = step_guard(rc, t, v, r, &since)) != AS_OUT_PENDING) break;
    const double target = si < rc->n_snap ? rc->snap[si] : T;
    double h = controlled ? h_ctrl : in->dt;
    int land = 0;
    if (target - t <= h * (1.0 + 1e-9)) {
      h = target - t;
      land = 1;
    }
    double err = 0.0;
    AS_TRY(step_rk(w, t, h, controlled, in->rtol, in->atol, &err));
    s->steps++;
    if (controlled) {
      double fac = err == 0.0 ? 5.0 : fmin(5.0, fmax(0.2, 0.9 * pow(err, rk->expo)));
      if (err > 1.0 && h > hmin) { /* reject; K[0] still holds f(t, Z) */
        s->rejected++;
        h_ctrl = fmax(h * fac, hmin);
        continue;
      }
      /* A step we shortened to land says nothing about the controller's step. */
      if (!(land && h < h_ctrl)) h_ctrl = fmax(h * fac, hmin);
    }
    if (!all_finite(nd, w->Zn)) {
      out = AS_OUT_NONFINITE;
      break;
    }
    swap(&w->Z, &w->Zn);
    t = land ? target : t + h;
    if (w->am.norm == AS_NORM_SPHERE) { /* back onto the sphere after every step */
      sphere_normalise(n, d, w->Z);
      have_k1 = 0; /* the derivative at the normalised state */
    }
    if (w->step_cb) w->step_cb(t, w->Z, w->step_ctx);
    if (rk->fsal) {
      swap(&w->K[0], &w->K[rk->s - 1]); /* first same as last */
    } else {
      have_k1 = 0;
    }
    while (land && si < rc->n_snap && rc->snap[si] <= t) {
      if (rc->cb) rc->cb(t, w->Z, rc->cb_ctx);
      si++;
    }
    if (land && t >= T) {
      out = AS_OUT_REACHED_T;
      break;
    }
  }
  w->t = t;
  s->outcome = out;
  s->t_final = t;
  s->settle_time = since;
cleanup:
  return st;
}

static as_status run_layers(as_dyn *w, const run_ctx *rc) {
  as_status st = AS_OK;
  const as_integ_spec *in = rc->in;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  const long K = (long)llround(in->T / in->dt);
  as_dyn_stats *s = rc->stats;
  double since = NAN;
  long k = 0;
  int si = 0;
  as_outcome out = AS_OUT_PENDING;
  for (;;) {
    const double t = (double)k * in->dt;
    if (k >= K) {
      out = AS_OUT_REACHED_T;
      break;
    }
    if (rc->stop && *rc->stop) {
      out = AS_OUT_INTERRUPTED;
      break;
    }
    AS_TRY(rhs_mode(w, w->mode, t, k, w->Z, w->K[0]));
    double v = max_row_norm(n, d, w->K[0]) / in->dt, r = radius_of(n, d, w->Z, w->bd);
    if ((out = step_guard(rc, t, v, r, &since)) != AS_OUT_PENDING) break;
    for (size_t i = 0; i < nd; i++) w->Zn[i] = w->Z[i] + w->K[0][i];
    if (w->am.norm == AS_NORM_SPHERE) sphere_normalise(n, d, w->Zn); /* x <- normalise(x + dt A) */
    s->steps++;
    if (!all_finite(nd, w->Zn)) {
      out = AS_OUT_NONFINITE;
      break;
    }
    swap(&w->Z, &w->Zn);
    k++;
    const double tk = (double)k * in->dt;
    if (w->step_cb) w->step_cb(tk, w->Z, w->step_ctx);
    while (si < rc->n_snap && rc->snap[si] <= tk + 1e-9 * in->dt) {
      if (rc->cb) rc->cb(tk, w->Z, rc->cb_ctx);
      si++;
    }
  }
  w->k = k;
  w->t = (double)k * in->dt;
  s->outcome = out;
  s->t_final = w->t;
  s->settle_time = since;
cleanup:
  return st;
}

/* z-layers: Lt = (dt R^{-1} V)^T, rho, and R / rho for the Pade path. */
static as_status layer_setup(as_dyn *w, double dt) {
  as_status st = AS_OK;
  const int d = w->d;
  w->ldt = dt;
  if (w->bkind == AS_BLOCKS_FIELD) { /* the blocks field rescales by itself */
    w->rho = 1.0;
    goto cleanup;
  }
  w->rho = as_expm_layer_radius(w->ex, dt);
  if (!(w->rho > 0.0) || !isfinite(w->rho)) w->rho = 1.0; /* R nilpotent-like: no factor */
  if (w->mode != MODE_LZ) return AS_OK;
  /* Column-major R is the row-major R^T; the solution of R X = dt V read row-major is X^T. */
  double *Rc = w->Ec[0];
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      Rc[(size_t)j * d + i] = (i == j ? 1.0 : 0.0) + dt * w->V[(size_t)i * d + j];
      w->Lt[(size_t)j * d + i] = dt * w->V[(size_t)i * d + j];
      w->Rn[(size_t)i * d + j] = ((i == j ? 1.0 : 0.0) + dt * w->V[(size_t)i * d + j]) / w->rho;
    }
  int info = 0;
  dgesv_(&d, &d, Rc, &d, w->ipiv, w->Lt, &d, &info);
  AS_LAPACK_CHECK("dgesv", info);
  AS_CHECK(info == 0, AS_ERR_SPEC,
           "layers in z variables need I + dt V invertible (dt = %g makes it singular); use "
           "vars: x",
           dt);
cleanup:
  invalidate_caches(w);
  return st;
}

/* The checks and the set-up of a run (as_dyn_run up to its loop): the state at t = 0 in w->Z,
 * the method prepared, stats reset. */
static as_status begin_run(as_dyn *w, const as_integ_spec *in, const double *X0,
                           const double *snap_times, int n_snap, as_dyn_stats *stats) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL && in != NULL && X0 != NULL && stats != NULL, AS_ERR_ARG,
           "as_dyn_run: NULL argument");
  stats->outcome = AS_OUT_PENDING;
  stats->steps = stats->rejected = 0;
  stats->t_final = 0.0;
  stats->settle_time = stats->velocity = stats->radius = NAN;
  AS_CHECK(w->have_triple, AS_ERR_ARG, "as_dyn_run: no triple set");
  w->ran = 0;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  AS_CHECK(in->method >= 0 && in->method < AS_METHOD_COUNT, AS_ERR_INTERNAL, "unknown method %d",
           (int)in->method);
  AS_CHECK(in->vars == AS_VARS_Z || in->vars == AS_VARS_X, AS_ERR_INTERNAL, "unknown vars %d",
           (int)in->vars);
  AS_CHECK(isfinite(in->T) && in->T > 0.0, AS_ERR_SPEC, "horizon T = %g must be > 0 and finite",
           in->T);
  AS_CHECK(isfinite(in->dt) && in->dt > 0.0, AS_ERR_SPEC, "step dt = %g must be > 0 and finite",
           in->dt);
  AS_CHECK(in->max_steps >= 1, AS_ERR_SPEC, "max_steps = %lld must be >= 1",
           (long long)in->max_steps);
  AS_CHECK(isfinite(in->rtol) && isfinite(in->atol) && in->rtol >= 0.0 && in->atol >= 0.0,
           AS_ERR_SPEC, "rtol = %g, atol = %g must be >= 0", in->rtol, in->atol);
  AS_CHECK(!(in->settle_tol < 0.0) && !(in->settle_window < 0.0) && isfinite(in->settle_window),
           AS_ERR_SPEC, "settle_tol = %g, settle_window = %g must be >= 0", in->settle_tol,
           in->settle_window);
  AS_CHECK(in->method != AS_METHOD_LAYERS || llround(in->T / in->dt) >= 1, AS_ERR_SPEC,
           "layers: T / dt = %g rounds to no layer", in->T / in->dt);
  AS_CHECK(n_snap >= 0 && (n_snap == 0 || snap_times != NULL), AS_ERR_ARG,
           "as_dyn_run: n_snap = %d", n_snap);
  for (int i = 0; i < n_snap; i++) {
    /* validate refuses these (output.snapshots, rule snapshots_le_t): a caller's bug here */
    AS_CHECK(isfinite(snap_times[i]) && snap_times[i] > 0.0 && snap_times[i] <= in->T, AS_ERR_ARG,
             "snapshot time %d = %g is outside (0, T = %g]", i, snap_times[i], in->T);
    AS_CHECK(i == 0 || snap_times[i] >= snap_times[i - 1], AS_ERR_ARG,
             "snapshot times must be sorted (time %d = %g < %g)", i, snap_times[i],
             snap_times[i - 1]);
  }
  for (size_t i = 0; i < nd; i++)
    AS_CHECK(isfinite(X0[i]), AS_ERR_DATA, "initial token %zu, coordinate %zu = %g is not finite",
             i / (size_t)d, i % (size_t)d, X0[i]);

  AS_CHECK(w->am.norm != AS_NORM_SPHERE || in->vars == AS_VARS_X, AS_ERR_ARG,
           "norm: sphere with vars z breaks rule sphere_vars (it integrates the tokens x)");
  w->sk_dev = NAN;
  const int layers = in->method == AS_METHOD_LAYERS;
  w->mode = layers ? (in->vars == AS_VARS_Z ? MODE_LZ : MODE_LX)
                   : (in->vars == AS_VARS_Z ? MODE_Z : MODE_X);
  w->k = 0;
  w->t = 0.0;
  invalidate_caches(w);
  if (layers) {
    AS_TRY(layer_setup(w, in->dt));
  } else {
    const as_tableau *tb = w->tb_force ? w->tb_force : as_tableau_of(in->method);
    AS_CHECK(tb != NULL, AS_ERR_INTERNAL, "method %s has no Butcher tableau",
             as_enum_label(&as_method_table, (int)in->method));
    AS_TRY(rk_prepare(w, tb));
  }
  memcpy(w->Z, X0, nd * sizeof(double));
  if (w->am.norm == AS_NORM_SPHERE) {
    for (int i = 0; i < n; i++) {
      double s2 = 0.0;
      for (int j = 0; j < d; j++) s2 += X0[(size_t)i * d + j] * X0[(size_t)i * d + j];
      AS_CHECK(s2 > 0.0, AS_ERR_DATA, "token %d is zero: norm: sphere needs nonzero tokens", i);
    }
    sphere_normalise(n, d, w->Z);
  }
  if (w->step_cb) w->step_cb(0.0, w->Z, w->step_ctx);
cleanup:
  return st;
}

/* The end of a run (after its loop): attention, velocity and radius at the final state. */
static as_status finish_run(as_dyn *w, const as_integ_spec *in, as_dyn_stats *stats) {
  as_status st = AS_OK;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  const int layers = in->method == AS_METHOD_LAYERS;
  AS_TRY(rhs_mode(w, w->mode, w->t, w->k, w->Z, w->K[0]));
  publish_attention(w);
  double v = max_row_norm(n, d, w->K[0]) / (layers ? in->dt : 1.0);
  double r = radius_of(n, d, w->Z, w->bd);
  /* The final velocity (as_dyn_velocity): the derivative, or a layer's increment / dt, on the
   * sphere its tangent part. */
  for (size_t i = 0; i < nd; i++) w->Ys[i] = w->K[0][i] / (layers ? in->dt : 1.0);
  if (w->am.norm == AS_NORM_SPHERE && layers) tangent_project(n, d, w->Z, w->Ys);
  stats->radius = r;
  stats->velocity = v == 0.0 ? 0.0 : v / r;
  if (stats->outcome != AS_OUT_SETTLED) settle_update(in, w->t, v, r, &stats->settle_time);
  if (w->stream && w->P && w->bkind != AS_BLOCKS_FIELD) {
    /* Streamed below AS_ATTENTION_STREAM_N (AS_DYN_KERNEL_STREAM: a trial with
     * ranks_per_trial): P at the final state, formed once, densely, for the callers that read
     * it (the classifier) -- from the final state alone, so the same bits for any rows. */
    double logc = 0.0;
    AS_TRY(scaled_tokens(w, w->mode, w->t, w->k, w->Z, &logc));
    if (w->hardmax) logc = INFINITY;
    attention_general(w, (w->mode == MODE_Z || w->mode == MODE_LZ) ? w->Mt : w->M, logc, w->Z);
  }
  w->ran = 1;
cleanup:
  return st;
}

as_status as_dyn_run(as_dyn *w, const as_integ_spec *in, const double *X0,
                     const volatile sig_atomic_t *stop, const double *snap_times, int n_snap,
                     as_dyn_snapshot_fn cb, void *cb_ctx, as_dyn_stats *stats) {
  as_status st = AS_OK;
  AS_TRY(begin_run(w, in, X0, snap_times, n_snap, stats));
  run_ctx rc = {in, stop, snap_times, n_snap, cb, cb_ctx, stats};
  if (in->method == AS_METHOD_LAYERS) {
    AS_TRY(run_layers(w, &rc));
  } else {
    AS_TRY(run_continuous(w, &rc));
  }
  AS_TRY(finish_run(w, in, stats));
cleanup:
  return st;
}

/* ---------------------------------------------------------------- batches (batch.h)
 * Up to AS_BATCH_LANES trials of one shape integrated in lock-step: the loop of
 * run_continuous without step control, snapshots or hooks, run for every lane at once. The
 * state stays lane-interleaved from the first stage to the last; each lane's stages are
 * formed with the arithmetic of the one-trial functions in their order (rk_combine,
 * scaled_tokens, the A^T products, small_output, max_row_norm, radius_of, all_finite: as
 * vector passes over all lanes, dyn_batch_lanes.h), the attention kernel runs once for all
 * lanes (as_attention_small_lanes, the same arithmetic per lane as as_attention_small), and a
 * lane leaves the batch at the step where it would have stopped alone. So every lane ends with
 * the bits of as_dyn_run. */

int as_dyn_batchable(const as_dyn *w, const as_integ_spec *in, int n_snap) {
  if (!w || !in || !AS_DYN_HAVE_SMALL) return 0;
  if (!w->small || w->stream || w->variant || w->bkind != AS_BLOCKS_OFF || w->step_cb ||
      w->tb_force || n_snap != 0 || w->n > AS_SMALL_NMAX || w->d > AS_SMALL_DMAX)
    return 0;
  if (in->method == AS_METHOD_LAYERS || in->method < 0 || in->method >= AS_METHOD_COUNT) return 0;
  const as_tableau *tb = as_tableau_of(in->method);
  if (!tb) return 0;
  return !(tb->order_hat > 0 && (in->rtol > 0.0 || in->atol > 0.0)); /* no step control */
}

#if AS_DYN_HAVE_SMALL
/* The batch's state lives lane-interleaved for the whole run (entry q of lane l at
 * [q AS_BATCH_LANES + l]: the layout of the lane kernel), so the stages, the scaling, the
 * products around the kernel and the step's measures are vector passes over all lanes
 * (dyn_batch_lanes.h), each lane with the bits of the one-trial function. What the vectors do
 * not follow (a basis change, a Pade exponential, an infinite temperature) runs per lane
 * through the one-trial functions on a copy of the lane. */
typedef struct batch {
  int n, d;          /* tokens, coordinates */
  size_t nd;         /* n d */
  int mode;          /* MODE_Z or MODE_X (the same in every lane) */
  const rk_plan *rk; /* the method (the same tableau in every lane) */
  int nst;           /* its stages */
  as_dyn *const *w;  /* the lanes' workspaces, B of them (lanes >= B idle) */
  int B;
  /* nd AS_BATCH_LANES doubles each (e: n AS_BATCH_LANES; Mm, V: d d AS_BATCH_LANES) */
  double *Z, *Zn, *Ys, *K[AS_RK_MAX_STAGES]; /* the lanes' run state */
  double *G, *A, *H, *e;                     /* the kernel's inputs, output, scratch */
  double *Mm, *V;                            /* each lane's score matrix and V */
  double *mem;                               /* the block they live in (64-byte aligned) */
  int act[AS_BATCH_LANES];                   /* the lane is integrating */
  int fast[AS_BATCH_LANES];  /* its transformed tokens are Y, or Y with scaled columns:
                              * MODE_X, or MODE_Z with an identity eigenbasis */
  int unit[AS_BATCH_LANES];  /* MODE_Z, fast: V = mu I, the blocks are 1 at every time */
  int all_unit;              /* every lane fast and unit (or MODE_X) */
  int alone[AS_BATCH_LANES]; /* this stage: infinite temperature, rhs_mode on its own */
  /* MODE_Z, fast lanes: the blocks at the last two stage times (RK4 asks for t + h/2 twice
   * and for t + h again as the next step's t) */
  double bt[2];
  int bvalid[2], bnext;
  double bd[2][AS_BATCH_LANES][AS_SMALL_DMAX];
  int bunit[2][AS_BATCH_LANES]; /* the identity: transformed() skips it */
  int bpair[2][AS_BATCH_LANES]; /* an off-diagonal entry (not for an identity basis) */
  /* c = exp(logc) per lane at its last two logc (the same call: the same bits) */
  double elog[AS_BATCH_LANES][2], ec[AS_BATCH_LANES][2];
  int enext[AS_BATCH_LANES];
} batch;

/* Lane l of lane-interleaved entries [0, len) from / into a plain vector x. */
static void lane_pack(size_t len, const double *x, double *v, int l) {
  for (size_t q = 0; q < len; q++) v[q * AS_BATCH_LANES + l] = x[q];
}

static void lane_unpack(size_t len, const double *v, int l, double *x) {
  for (size_t q = 0; q < len; q++) x[q] = v[q * AS_BATCH_LANES + l];
}

/* Lane l leaves the batch with state Z: its tokens back into its workspace and, unless the
 * batch ends (last), its lane of every state vector zeroed (a zero lane stays exactly zero
 * through the stages: harmless values). */
static void lane_leave(batch *b, int l, int last) {
  lane_unpack(b->nd, b->Z, l, b->w[l]->Z);
  b->act[l] = 0;
  if (last) return;
  double *vs[3 + AS_RK_MAX_STAGES] = {b->Z, b->Zn, b->Ys};
  for (int s = 0; s < b->nst; s++) vs[3 + s] = b->K[s];
  for (int k = 0; k < 3 + b->nst; k++)
    for (size_t q = 0; q < b->nd; q++) vs[k][q * AS_BATCH_LANES + l] = 0.0;
}

/* c = exp(logc) for lane l: remembered for its last two logc, and shared with the lanes of the
 * same stage (seen: nseen pairs logc, c; lanes with equal V and scale have equal logc). */
static double lane_exp(batch *b, int l, double logc, double (*seen)[2], int *nseen) {
  for (int k = 0; k < 2; k++)
    if (b->elog[l][k] == logc) return b->ec[l][k];
  const int k = b->enext[l];
  double c = 0.0;
  int found = 0;
  for (int q = 0; q < *nseen && !found; q++)
    if (seen[q][0] == logc) c = seen[q][1], found = 1;
  if (!found) {
    c = exp(logc);
    seen[*nseen][0] = logc;
    seen[*nseen][1] = c;
    ++*nseen;
  }
  b->elog[l][k] = logc;
  b->ec[l][k] = c;
  b->enext[l] = 1 - k;
  return c;
}

/* Exponent e of frexp(s) (s = m 2^e, m in [1/2, 1)) and f = 2^-e, for finite s > 0. */
static void pow2_scale(double s, int *e, double *f) {
  uint64_t u;
  memcpy(&u, &s, sizeof u);
  const int bexp = (int)((u >> 52) & 0x7ff);
  if (bexp >= 1 && bexp <= 2044) { /* s normal, and 2^-e normal too */
    *e = bexp - 1022;
    const uint64_t fb = (uint64_t)(1023 - *e) << 52;
    memcpy(f, &fb, sizeof *f);
    return;
  }
  (void)frexp(s, e);
  *f = ldexp(1.0, -*e);
}

/* The first part of a batched right-hand side at time t (MODE_Z): per fast lane the blocks
 * of transformed() (cached per stage time) as column multipliers mul (d x AS_BATCH_LANES, 1
 * in the other lanes); slow[l] = 1 for the active lanes that take scaled_tokens itself.
 * Returns 1 when some lane's multipliers are not the identity. */
static int batch_rhs_blocks(batch *b, double t, double *mul, int *slow) {
  const int d = b->d, L = AS_BATCH_LANES;
  int need = 0;
  for (int l = 0; l < L; l++) slow[l] = b->act[l] && !b->fast[l];
  for (int q = 0; q < d * L; q++) mul[q] = 1.0;
  if (b->mode != MODE_Z || b->all_unit) return 0; /* G = Y: transformed() copies */
  int k = -1;
  for (int s = 0; s < 2; s++)
    if (b->bvalid[s] && b->bt[s] == t) k = s;
  if (k < 0) {
    k = b->bnext;
    b->bnext = 1 - k;
    b->bt[k] = t;
    b->bvalid[k] = 1;
    for (int l = 0; l < b->B; l++) {
      if (!b->fast[l] || b->unit[l]) continue;
      as_dyn *wl = b->w[l];
      as_expm_blocks(wl->ex, t, wl->mu, wl->bd, wl->bo); /* as transformed() */
      int unit = 1, pair = 0;
      for (int j = 0; j < d; j++) {
        unit &= wl->bd[j] == 1.0 && wl->bo[j] == 0.0;
        pair |= wl->bo[j] != 0.0;
        b->bd[k][l][j] = wl->bd[j];
      }
      b->bunit[k][l] = unit;
      b->bpair[k][l] = pair;
    }
  }
  for (int l = 0; l < b->B; l++) {
    if (!b->act[l] || !b->fast[l] || b->unit[l] || b->bunit[k][l]) continue;
    if (b->bpair[k][l]) { /* a rotation block: apply_blocks' pair formula, per lane */
      slow[l] = 1;
      continue;
    }
    for (int j = 0; j < d; j++) mul[j * L + l] = b->bd[k][l][j];
    need = 1;
  }
  return need;
}

/* The per-lane scalars of scaled_tokens and rhs_mode from the largest |entry| smax of each
 * lane's G~: the scale f = 2^-e (1: none) and the temperature c = exp(logc) (0: the lane is
 * not in the kernel). The slow lanes (*nslow of them) run scaled_tokens on a copy of their Y
 * (f = 1, their G packed by batch_rhs_slow); a lane whose c is infinite leaves the small
 * kernel as rhs_mode does (rhs_mode on the copy, its F in its Zn, packed by
 * batch_rhs_alone). *any: some lane is in the kernel. */
static as_status batch_rhs_lanes(batch *b, double t, const double *Y, const double *smax,
                                 const int *slow, double *f, double *c, int *nslow, int *any) {
  as_status st = AS_OK;
  double seen[AS_BATCH_LANES][2];
  int nseen = 0;
  *nslow = *any = 0;
  for (int l = 0; l < AS_BATCH_LANES; l++) {
    f[l] = 1.0;
    c[l] = 0.0;
    b->alone[l] = 0;
    if (!b->act[l]) continue;
    as_dyn *wl = b->w[l];
    double logc = 0.0;
    if (slow[l]) {
      ++*nslow;
      lane_unpack(b->nd, Y, l, wl->Ys);
      AS_TRY(scaled_tokens(wl, b->mode, t, 0, wl->Ys, &logc));
    } else {
      const double ls = b->mode == MODE_Z ? wl->mu * t : 0.0, s = smax[l];
      logc = 2.0 * ls;
      if (s > 0.0 && isfinite(s)) {
        int e = 0;
        pow2_scale(s, &e, &f[l]);
        logc += 2.0 * (double)e * AS_LN2;
      }
    }
    const double cl = lane_exp(b, l, logc, seen, &nseen);
    if (!(cl < INFINITY)) {
      b->alone[l] = 1;
      if (!slow[l]) lane_unpack(b->nd, Y, l, wl->Ys);
      AS_TRY(rhs_mode(wl, b->mode, t, 0, wl->Ys, wl->Zn));
      continue;
    }
    c[l] = cl;
    *any = 1;
  }
cleanup:
  return st;
}

/* The slow lanes' G (scaled_tokens' output) into the batch's G. */
static void batch_rhs_slow(batch *b, const int *slow) {
  for (int l = 0; l < AS_BATCH_LANES; l++)
    if (slow[l]) lane_pack(b->nd, b->w[l]->G, b->G, l);
}

static void batch_rhs_alone(batch *b, double *F) {
  for (int l = 0; l < AS_BATCH_LANES; l++)
    if (b->alone[l]) lane_pack(b->nd, b->w[l]->Zn, F, l);
}

/* The vector passes, 2 doubles per vector (SSE2, NEON, or split by the compiler) ... */
#define BW 2
#define BFN(x) batch_##x##_w2
#define BATTR
#include "dyn_batch_lanes.h"
#undef BATTR
#undef BFN
#undef BW
#if defined(__x86_64__) && !defined(__clang__)
#define AS_BATCH_X86 1
/* ... and 4 with AVX2 (no FMA: the same bits) */
#define BW 4
#define BFN(x) batch_##x##_w4
#define BATTR __attribute__((target("avx2")))
#include "dyn_batch_lanes.h"
#undef BATTR
#undef BFN
#undef BW
#endif

as_status as_dyn_run_batch(as_dyn *const *w, int B, const as_integ_spec *const *in,
                           const double *const *X0, const volatile sig_atomic_t *stop,
                           as_dyn_stats *stats, int *ok) {
  as_status st = AS_OK;
  batch b;
  memset(&b, 0, sizeof b);
  AS_CHECK(w != NULL && in != NULL && X0 != NULL && stats != NULL && ok != NULL && B >= 1 &&
               B <= AS_BATCH_LANES,
           AS_ERR_ARG, "as_dyn_run_batch: B = %d", B);
  const int n = w[0]->n, d = w[0]->d;
  for (int l = 0; l < B; l++) {
    AS_CHECK(w[l] && w[l]->n == n && w[l]->d == d && in[l] && in[l]->method == in[0]->method &&
                 in[l]->vars == in[0]->vars && in[l]->T == in[0]->T && in[l]->dt == in[0]->dt &&
                 as_dyn_batchable(w[l], in[l], 0),
             AS_ERR_ARG, "as_dyn_run_batch: lane %d does not fit the batch", l);
    for (int q = 1; q < l; q++) AS_CHECK(w[q] != w[l], AS_ERR_ARG, "as_dyn_run_batch: shared lane");
  }
  b.n = n;
  b.d = d;
  b.nd = (size_t)n * d;
  b.w = w;
  b.B = B;
  double since[AS_BATCH_LANES];
  for (int l = 0; l < B; l++) {
    since[l] = NAN;
    ok[l] = 0;
    as_status bs = begin_run(w[l], in[l], X0[l], NULL, 0, &stats[l]);
    if (bs != AS_OK) { /* this lane's problem: the caller runs it alone, which says why */
      if (bs == AS_ERR_NOMEM || bs == AS_ERR_INTERNAL) AS_TRY(bs);
      as_error_clear();
      continue;
    }
    ok[l] = b.act[l] = 1;
    if (!b.rk) { /* the same tableau and mode in every lane */
      b.rk = &w[l]->rk;
      b.mode = w[l]->mode;
    }
  }
  if (b.rk) {
    const size_t nd = b.nd, dd = (size_t)d * d;
    b.nst = b.rk->s;
    const size_t L = AS_BATCH_LANES, len = (nd * (6 + (size_t)b.nst) + (size_t)n + 2 * dd) * L;
    b.mem = aligned_alloc(64, len * sizeof(double)); /* a multiple of 64 bytes */
    AS_CHECK_ALLOC(b.mem);
    memset(b.mem, 0, len * sizeof(double)); /* idle lanes: zeros throughout */
    double *p = b.mem;
    b.Z = p, p += nd * L;
    b.Zn = p, p += nd * L;
    b.Ys = p, p += nd * L;
    for (int s = 0; s < b.nst; s++) b.K[s] = p, p += nd * L;
    b.G = p, p += nd * L;
    b.A = p, p += nd * L;
    b.H = p, p += nd * L;
    b.e = p, p += (size_t)n * L;
    b.Mm = p, p += dd * L;
    b.V = p;
    for (int l = 0; l < B; l++) {
      b.elog[l][0] = b.elog[l][1] = NAN;
      if (!b.act[l]) continue;
      as_dyn *wl = w[l];
      lane_pack(nd, wl->Z, b.Z, l);
      lane_pack(dd, b.mode == MODE_Z ? wl->Mt : wl->M, b.Mm, l);
      lane_pack(dd, wl->V, b.V, l);
      b.fast[l] = b.mode == MODE_X || (wl->path == AS_EXPM_EIGEN && as_expm_identity_basis(wl->ex));
      b.unit[l] = b.fast[l] && b.mode == MODE_Z && as_expm_scalar(wl->ex);
      wl->pt_newer = 0; /* P^T is not formed in a batch: finish_run forms P alone */
    }
    b.all_unit = 1;
    for (int l = 0; l < B; l++) b.all_unit &= !b.act[l] || b.mode == MODE_X || b.unit[l];
#ifdef AS_BATCH_X86
    /* 256-bit vectors where the CPU has them and the kernels are not capped to the baseline
     * (as_attention_isa, ATTNSWEEP_ISA); never wider, whatever the CPU. */
    if (__builtin_cpu_supports("avx2") && strncmp(as_attention_isa(), "baseline", 8) != 0) {
      AS_TRY(batch_loop_w4(&b, in, stop, stats, since));
    } else {
      AS_TRY(batch_loop_w2(&b, in, stop, stats, since));
    }
#else
    AS_TRY(batch_loop_w2(&b, in, stop, stats, since));
#endif
  }
  for (int l = 0; l < B; l++) {
    if (!ok[l]) continue;
    stats[l].t_final = w[l]->t;
    stats[l].settle_time = since[l];
    AS_TRY(finish_run(w[l], in[l], &stats[l]));
  }
cleanup:
  free(b.mem);
  return st;
}
#else  /* no vector extensions: nothing batches (as_dyn_batchable) */
as_status as_dyn_run_batch(as_dyn *const *w, int B, const as_integ_spec *const *in,
                           const double *const *X0, const volatile sig_atomic_t *stop,
                           as_dyn_stats *stats, int *ok) {
  (void)w, (void)in, (void)X0, (void)stop, (void)stats, (void)ok;
  as_status st = AS_OK;
  AS_CHECK(0, AS_ERR_ARG, "as_dyn_run_batch: B = %d lanes, but this build has no batches", B);
cleanup:
  return st;
}
#endif /* AS_DYN_HAVE_SMALL */

as_status as_dyn_attention_apply(as_dyn *w, const double *S, double *PS) {
  as_status st = AS_OK;
  AS_CHECK(w->ran && S != NULL && PS != NULL, AS_ERR_ARG, "as_dyn_attention_apply: no run");
  AS_TRY(stream_buffers(w));
  double logc = 0.0;
  AS_TRY(scaled_tokens(w, w->mode, w->t, w->k, w->Z, &logc));
  const double *Mm = (w->mode == MODE_Z || w->mode == MODE_LZ) ? w->Mt : w->M;
  as_mm(0, 0, w->n, w->d, w->d, 1.0, w->G, w->d, Mm, w->d, 0.0, w->A, w->d);
  (void)as_attention_stream(w->n, w->d, w->A, w->G, logc, S, PS, w->hot, w->sw, w->swi);
cleanup:
  return st;
}

as_status as_dyn_state_x(as_dyn *w, double *X) {
  as_status st = AS_OK;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  AS_CHECK(w->ran && X != NULL, AS_ERR_ARG, "as_dyn_state_x: no completed run");
  if (w->mode == MODE_X || w->mode == MODE_LX) {
    memcpy(X, w->Z, nd * sizeof(double));
    return AS_OK;
  }
  double ls = 0.0;
  if (w->bkind == AS_BLOCKS_FIELD) { /* x = e^{ls} z with a scalar ls (blocks.h) */
    ls = as_blocks_logscale(w->blocks, w->mode == MODE_LZ, 1, w->t, w->k);
    memcpy(X, w->Z, nd * sizeof(double));
  } else {
    AS_TRY(transformed(w, w->mode, w->t, w->k, w->Z, &ls));
  }
  if (w->bkind != AS_BLOCKS_FIELD && w->path == AS_EXPM_EIGEN)
    as_expm_from_eigen(w->ex, n, w->G, X);
  else if (w->bkind != AS_BLOCKS_FIELD)
    memcpy(X, w->G, nd * sizeof(double));
  /* Multiply by e^{ls} = f 2^e without forming it: overflow gives +-inf, never 0 * inf. */
  double l2 = ls / AS_LN2, e = floor(l2);
  double f = exp((l2 - e) * AS_LN2);
  int ei = e > 4000.0 ? 4000 : (e < -4000.0 ? -4000 : (int)e);
  for (size_t i = 0; i < nd; i++) X[i] = ldexp(X[i] * f, ei);
cleanup:
  return st;
}
