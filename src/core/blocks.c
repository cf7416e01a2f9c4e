/* blocks.c: several heads, feed-forward sublayers, skip connections, per-layer weights
 * (the model and the contracts are in blocks.h). */
#include "attnsweep/blocks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/attention.h"
#include "attnsweep/params.h"
#include "attnsweep/rng.h"
#include "attnsweep/triple.h"
#include "linalg_dyn.h"

#define AS_LN2 0.69314718055994530942

struct as_blocks {
  as_blocks_kind kind;
  int n, d, m, H, w; /* tokens, dimension, rows of Q/K, heads, MLP width */
  long nb;           /* weight blocks */
  int every;         /* layers per block */
  double span;       /* ODE: time per block (every * dt) */
  int skip, layers;
  as_ffn ffn;
  as_ffn_form form;
  int bias;
  double dt;
  double mu;    /* ODE z: the exponent; layers z: log r */
  double *V;    /* nb * H * d * d */
  double *M;    /* nb * H * d * d */
  double *Veff; /* nb * d * d */
  double *W;    /* inside: nb * d * d */
  double *W1;   /* block: nb * w * d */
  double *W2;   /* block: nb * d * w */
  double *b;    /* block: nb * w */
  /* scratch */
  double *G, *A, *Hh, *acc, *X1, *U, *O; /* n*d (U: n*w) */
  double *S;                             /* n*n */
  double *Ph;                            /* H*n*n */
  int *hot;                              /* n */
  double *sv, *svwork;                   /* n, 8 n: singular values of P^h */
  /* attention sinkhorn_fixed: each P^h is as_attention_sinkhorn_fixed with sk_iters */
  int fixed;     /* 1: sinkhorn_fixed, 0: the row softmax */
  int sk_iters;  /* its iterations K */
  double *skw;   /* its scratch (as_attention_sinkhorn_doubles(n)), NULL for the softmax */
  double sk_dev; /* largest deviation of a head's P^h at the last field evaluation (NaN: none) */
};

static int width_of(const as_trial *t) {
  return t->blocks.ffn_width > 0 ? t->blocks.ffn_width : t->d;
}

void as_blocks_destroy(as_blocks **p) {
  if (!p || !*p) return;
  as_blocks *b = *p;
  double **all[] = {&b->V, &b->M,  &b->Veff, &b->W,  &b->W1, &b->W2, &b->b, &b->G,
                    &b->A, &b->Hh, &b->acc,  &b->X1, &b->U,  &b->O,  &b->S, &b->Ph};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(*all[i]);
  free(b->hot);
  free(b->sv);
  free(b->svwork);
  free(b->skw);
  free(b);
  *p = NULL;
}

static double *zalloc(size_t count) {
  return calloc(count ? count : 1, sizeof(double));
}

/* Largest real part and spectral radius of the d x d matrix V (dgeev on a copy in work). */
static as_status spectrum_of(int d, const double *V, double *work, double *mu, double *rho) {
  as_status st = AS_OK;
  const size_t dd = (size_t)d * d;
  double *A = work, *wr = work + dd, *wi = wr + d, *wk = wi + d, dummy = 0.0;
  int lw = 8 * d, info = 0, one = 1;
  memcpy(A, V, dd * sizeof *A);
  dgeev_("N", "N", &d, A, &d, wr, wi, &dummy, &one, &dummy, &one, wk, &lw, &info, 1, 1);
  AS_LAPACK_CHECK("dgeev", info);
  AS_CHECK(info == 0, AS_ERR_LAPACK, "dgeev: the QR algorithm did not converge (V of a head)");
  *mu = -INFINITY;
  *rho = 0.0;
  for (int i = 0; i < d; i++) {
    if (wr[i] > *mu) *mu = wr[i];
    double r = hypot(wr[i], wi[i]);
    if (r > *rho) *rho = r;
  }
cleanup:
  return st;
}

/* The feed-forward weights of block blk. */
static void draw_ffn(as_blocks *b, const as_trial *t, long blk) {
  as_rng r;
  as_rng_init(&r, t->master_seed, t->triple_key, as_purpose_of(AS_PURPOSE_FFN, 0, blk));
  const int d = b->d, w = b->w, rnd = t->blocks.ffn_w == AS_FFN_W_RANDOM;
  if (b->form == AS_FFN_INSIDE) {
    double *W = b->W + (size_t)blk * d * d;
    if (rnd)
      as_rng_fill_normal(&r, W, (long)d * d, 1.0 / sqrt((double)d));
    else
      for (int i = 0; i < d; i++) W[(size_t)i * d + i] = 1.0;
    return;
  }
  double *W1 = b->W1 + (size_t)blk * w * d, *W2 = b->W2 + (size_t)blk * d * w;
  double *bb = b->b + (size_t)blk * w;
  if (rnd) {
    as_rng_fill_normal(&r, W1, (long)w * d, 1.0 / sqrt((double)d));
    as_rng_fill_normal(&r, W2, (long)d * w, 1.0 / sqrt((double)w));
  } else {
    for (int i = 0; i < w && i < d; i++) {
      W1[(size_t)i * d + i] = 1.0;
      W2[(size_t)i * w + i] = 1.0;
    }
  }
  if (b->bias) as_rng_fill_normal(&r, bb, (long)w, 1.0);
}

as_status as_blocks_create(const as_trial *t, as_blocks **out) {
  as_status st = AS_OK;
  as_blocks *b = NULL;
  as_triple *tr = NULL;
  double *work = NULL;
  AS_CHECK(t != NULL && out != NULL, AS_ERR_ARG, "as_blocks_create: NULL argument");
  AS_CHECK(as_blocks_kind_of(t) != AS_BLOCKS_OFF, AS_ERR_ARG, "as_blocks_create: a base trial");
  const int n = t->n, d = t->d, H = t->blocks.heads;
  const int m = t->triple.m_rows > 0 ? t->triple.m_rows : d;
  const long nb = as_blocks_count(t);
  /* The key table's range of heads and rule blocks_count (rules.h): validate refuses both. */
  AS_CHECK(H >= 1 && H <= 64, AS_ERR_ARG, "heads = %d is outside 1..64", H);
  AS_CHECK(nb >= 1 && nb <= AS_MAX_BLOCKS, AS_ERR_ARG,
           "weights per_layer: %ld blocks exceed the limit %d (rule blocks_count)", nb,
           AS_MAX_BLOCKS);
  b = calloc(1, sizeof *b);
  AS_CHECK_ALLOC(b);
  b->kind = as_blocks_kind_of(t);
  b->n = n;
  b->d = d;
  b->m = m;
  b->H = H;
  b->nb = nb;
  b->w = width_of(t);
  b->every = t->blocks.weights == AS_WEIGHTS_PER_LAYER ? t->blocks.weights_every : 1 << 30;
  b->dt = t->integ.dt;
  b->span = (double)b->every * t->integ.dt;
  b->layers = t->integ.method == AS_METHOD_LAYERS;
  b->skip = !b->layers || t->blocks.skip;
  b->ffn = t->blocks.ffn;
  b->form = t->blocks.ffn_form;
  b->bias = t->blocks.ffn_bias && b->ffn != AS_FFN_NONE && b->form == AS_FFN_BLOCK;
  /* (the inside form keeps the base field, whose attention the dynamics computes) */
  b->fixed = t->attn.attention == AS_ATTN_SINKHORN_FIXED && b->kind == AS_BLOCKS_FIELD;
  b->sk_iters = t->attn.sinkhorn_iters;
  b->sk_dev = NAN;
  /* The key table's range of sinkhorn_iters (params.h): validate refuses the rest. */
  AS_CHECK(!b->fixed || b->sk_iters >= 1, AS_ERR_ARG, "sinkhorn_fixed: sinkhorn_iters = %d < 1",
           b->sk_iters);
  if (b->fixed) {
    b->skw = zalloc(as_attention_sinkhorn_doubles(n));
    AS_CHECK_ALLOC(b->skw);
  }
  const size_t dd = (size_t)d * d, nd = (size_t)n * d, nn = (size_t)n * n;
  b->V = zalloc((size_t)nb * H * dd);
  b->M = zalloc((size_t)nb * H * dd);
  b->Veff = zalloc((size_t)nb * dd);
  AS_CHECK_ALLOC(b->V);
  AS_CHECK_ALLOC(b->M);
  AS_CHECK_ALLOC(b->Veff);
  if (b->ffn != AS_FFN_NONE) {
    if (b->form == AS_FFN_INSIDE) {
      b->W = zalloc((size_t)nb * dd);
      AS_CHECK_ALLOC(b->W);
    } else {
      b->W1 = zalloc((size_t)nb * b->w * d);
      b->W2 = zalloc((size_t)nb * b->w * d);
      b->b = zalloc((size_t)nb * b->w);
      b->U = zalloc((size_t)n * b->w);
      AS_CHECK_ALLOC(b->W1);
      AS_CHECK_ALLOC(b->W2);
      AS_CHECK_ALLOC(b->b);
      AS_CHECK_ALLOC(b->U);
    }
  }
  double **vecs[] = {&b->G, &b->A, &b->Hh, &b->acc, &b->X1, &b->O};
  for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
    *vecs[i] = zalloc(nd);
    AS_CHECK_ALLOC(*vecs[i]);
  }
  b->S = zalloc(nn);
  b->Ph = zalloc((size_t)H * nn);
  b->hot = calloc((size_t)n, sizeof *b->hot);
  b->sv = zalloc((size_t)n);
  b->svwork = zalloc(8 * (size_t)n + 16);
  AS_CHECK_ALLOC(b->sv);
  AS_CHECK_ALLOC(b->svwork);
  AS_CHECK_ALLOC(b->S);
  AS_CHECK_ALLOC(b->Ph);
  AS_CHECK_ALLOC(b->hot);

  /* The weights and the rescaling exponent. */
  AS_TRY(as_triple_create(d, m, &tr));
  work = zalloc(dd + 10 * (size_t)d);
  AS_CHECK_ALLOC(work);
  double best = -INFINITY;
  for (long blk = 0; blk < nb; blk++) {
    double sum_mu = 0.0, sum_mu_pos = 0.0, sum_rho = 0.0;
    double *Ve = b->Veff + (size_t)blk * dd;
    for (int h = 0; h < H; h++) {
      AS_TRY(as_triple_build_at(t, h, blk, tr));
      double *Vh = b->V + ((size_t)blk * H + h) * dd, *Mh = b->M + ((size_t)blk * H + h) * dd;
      memcpy(Vh, tr->V, dd * sizeof *Vh);
      memcpy(Mh, tr->M, dd * sizeof *Mh);
      for (size_t i = 0; i < dd; i++) Ve[i] += Vh[i];
      double mu = 0.0, rho = 0.0;
      AS_TRY(spectrum_of(d, Vh, work, &mu, &rho));
      sum_mu += mu;
      sum_mu_pos += mu > 0.0 ? mu : 0.0;
      sum_rho += rho;
    }
    double e;
    if (!b->layers)
      e = sum_mu;
    else if (b->skip)
      e = log1p(b->dt * sum_mu_pos);
    else
      e = sum_rho > 0.0 && isfinite(sum_rho) ? log(sum_rho) : 0.0;
    if (e > best) best = e;
    if (b->ffn != AS_FFN_NONE) draw_ffn(b, t, blk);
  }
  b->mu = isfinite(best) ? best : 0.0;
  *out = b;
  b = NULL;
cleanup:
  as_triple_destroy(&tr);
  free(work);
  as_blocks_destroy(&b);
  return st;
}

as_blocks_kind as_blocks_kind_get(const as_blocks *b) {
  return b->kind;
}
int as_blocks_heads(const as_blocks *b) {
  return b->H;
}
double as_blocks_mu(const as_blocks *b) {
  return b->mu;
}
const double *as_blocks_veff(const as_blocks *b, long block) {
  return b->Veff + (size_t)block * b->d * b->d;
}
const double *as_blocks_v(const as_blocks *b, int head, long block) {
  return b->V + ((size_t)block * b->H + head) * b->d * b->d;
}
const double *as_blocks_m(const as_blocks *b, int head, long block) {
  return b->M + ((size_t)block * b->H + head) * b->d * b->d;
}
const double *as_blocks_head_attention(const as_blocks *b, int head) {
  return b->Ph + (size_t)head * b->n * b->n;
}
double as_blocks_sinkhorn_dev(const as_blocks *b) {
  return b->sk_dev;
}

static long clamp_block(const as_blocks *b, double blk) {
  if (!(blk > 0.0)) return 0; /* also NaN */
  return blk >= (double)b->nb ? b->nb - 1 : (long)blk;
}

long as_blocks_block_at(const as_blocks *b, double t, long k) {
  return clamp_block(b, b->layers ? (double)(k / b->every) : floor(t / b->span + 1e-9));
}

long as_blocks_block_last(const as_blocks *b, double t, long k) {
  if (b->layers) return k > 0 ? clamp_block(b, (double)((k - 1) / b->every)) : 0;
  return clamp_block(b, ceil(t / b->span - 1e-9) - 1.0);
}

double as_blocks_switch_after(const as_blocks *b, long blk) {
  if (b->layers || blk + 1 >= b->nb) return INFINITY;
  return (double)(blk + 1) * b->span;
}

double as_blocks_logscale(const as_blocks *b, int layers, int zvars, double t, long k) {
  if (!zvars) return 0.0;
  return layers ? (double)k * b->mu : b->mu * t;
}

static double act(as_ffn f, double u) {
  switch (f) {
  case AS_FFN_RELU:
    return u > 0.0 ? u : 0.0;
  case AS_FFN_TANH:
    return tanh(u);
  default:
    return u;
  }
}

void as_blocks_inside(const as_blocks *b, int n, double *F) {
  const int d = b->d;
  for (size_t i = 0; i < (size_t)n * d; i++) b->O[i] = act(b->ffn, F[i]);
  as_mm(0, 1, n, d, d, 1.0, b->O, d, b->W, d, 0.0, F, d);
}

/* Out += alpha e^{-ls} W_2 sigma(W_1 e^{ls} X + b) of block blk (rows are tokens). */
static void mlp_add(as_blocks *b, long blk, const double *X, double ls, double alpha, double *Out) {
  const int n = b->n, d = b->d, w = b->w;
  const double *W1 = b->W1 + (size_t)blk * w * d, *W2 = b->W2 + (size_t)blk * d * w;
  const double *bb = b->b + (size_t)blk * w;
  as_mm(0, 1, n, w, d, 1.0, X, d, W1, d, 0.0, b->U, w); /* U = X W_1^T */
  double post = alpha;
  if (b->ffn == AS_FFN_TANH) {
    const double s = exp(ls);
    if (!(s < INFINITY)) return; /* tanh is bounded: the rescaled term is 0 */
    for (int i = 0; i < n; i++)
      for (int j = 0; j < w; j++) {
        double *u = b->U + (size_t)i * w + j;
        *u = tanh(s * *u + bb[j]);
      }
    post = alpha / s;
  } else {
    const double binv = exp(-ls); /* relu, identity: positively homogeneous */
    for (int i = 0; i < n; i++)
      for (int j = 0; j < w; j++) {
        double *u = b->U + (size_t)i * w + j;
        *u = act(b->ffn, *u + bb[j] * binv);
      }
  }
  as_mm(0, 1, n, d, w, post, b->U, w, W2, w, 1.0, Out, d); /* Out += U W_2^T */
}

as_status as_blocks_field(as_blocks *b, int layers, int zvars, double t, long k, long block,
                          const double *Y, double *F, double *P) {
  as_status st = AS_OK;
  const int n = b->n, d = b->d, H = b->H;
  const size_t nd = (size_t)n * d, nn = (size_t)n * n, dd = (size_t)d * d;
  AS_CHECK(b->kind == AS_BLOCKS_FIELD, AS_ERR_ARG, "as_blocks_field: not a field trial");
  const long blk = block >= 0 && block < b->nb ? block : as_blocks_block_at(b, t, k);
  const double ls = as_blocks_logscale(b, layers, zvars, t, k);
  /* G = Y / 2^e with max |G| in [1/2, 1): scores c G M_h G^T, log c = 2 ls + 2 e ln 2. */
  double smax = 0.0;
  for (size_t i = 0; i < nd; i++) {
    double a = fabs(Y[i]);
    smax = a > smax ? a : smax;
  }
  double logc = 2.0 * ls, f = 1.0;
  if (smax > 0.0 && isfinite(smax)) {
    int e = 0;
    (void)frexp(smax, &e);
    f = ldexp(1.0, -e);
    logc += 2.0 * (double)e * AS_LN2;
  }
  for (size_t i = 0; i < nd; i++) b->G[i] = Y[i] * f;
  memset(b->acc, 0, nd * sizeof *b->acc);
  if (P) memset(P, 0, nn * sizeof *P);
  b->sk_dev = NAN;
  for (int h = 0; h < H; h++) {
    const double *Mh = b->M + ((size_t)blk * H + h) * dd, *Vh = b->V + ((size_t)blk * H + h) * dd;
    double *Ph = b->Ph + (size_t)h * nn;
    as_mm(0, 0, n, d, d, 1.0, b->G, d, Mh, d, 0.0, b->A, d);
    as_mm(0, 1, n, n, d, 1.0, b->A, d, b->G, d, 0.0, b->S, n);
    if (b->fixed) { /* Sinkformers' map per head: K iterations from this head's scores */
      double dev = 0.0;
      (void)as_attention_sinkhorn_fixed(n, b->S, logc, b->sk_iters, Ph, b->hot, b->skw, &dev);
      if (!(dev <= b->sk_dev)) b->sk_dev = dev; /* the first head, or a larger deviation */
    } else {
      (void)as_attention_softmax_hot(n, n, b->S, logc, Ph, b->hot);
    }
    as_mm(0, 0, n, d, n, 1.0, Ph, n, Y, d, 0.0, b->Hh, d);      /* P^h Y */
    as_mm(0, 1, n, d, d, 1.0, b->Hh, d, Vh, d, 1.0, b->acc, d); /* += P^h Y V_h^T */
    if (P)
      for (size_t i = 0; i < nn; i++) P[i] += Ph[i] / H;
  }
  const int mlp = b->ffn != AS_FFN_NONE && b->form == AS_FFN_BLOCK;
  if (!layers) {
    for (size_t i = 0; i < nd; i++) F[i] = zvars ? b->acc[i] - b->mu * Y[i] : b->acc[i];
    if (mlp) mlp_add(b, blk, Y, ls, 1.0, F);
    goto cleanup;
  }
  /* Layers: the attention sublayer, then the MLP sublayer, in z units of layer k + 1. */
  const double rinv = zvars ? exp(-b->mu) : 1.0;
  for (size_t i = 0; i < nd; i++)
    b->X1[i] = (b->skip ? Y[i] + b->dt * b->acc[i] : b->acc[i]) * rinv;
  if (mlp) {
    const double ls1 = zvars ? ls + b->mu : 0.0;
    if (b->skip) {
      mlp_add(b, blk, b->X1, ls1, b->dt, b->X1);
    } else {
      memcpy(b->O, b->X1, nd * sizeof *b->O);
      memset(b->X1, 0, nd * sizeof *b->X1);
      mlp_add(b, blk, b->O, ls1, 1.0, b->X1);
    }
  }
  for (size_t i = 0; i < nd; i++) F[i] = b->X1[i] - Y[i];
cleanup:
  return st;
}

as_status as_blocks_head_ranks(as_blocks *b, double rtol, int *rmin, int *rmax) {
  as_status st = AS_OK;
  const int n = b->n;
  const size_t nn = (size_t)n * n;
  *rmin = *rmax = -1;
  for (int h = 0; h < b->H; h++) {
    memcpy(b->S, b->Ph + (size_t)h * nn, nn * sizeof *b->S);
    int info = 0, one = 1, lw = 8 * n + 16;
    double dummy = 0.0;
    dgesvd_("N", "N", &n, &n, b->S, &n, b->sv, &dummy, &one, &dummy, &one, b->svwork, &lw, &info, 1,
            1);
    AS_LAPACK_CHECK("dgesvd", info);
    AS_CHECK(info == 0, AS_ERR_LAPACK, "dgesvd: no convergence on the attention of head %d", h);
    int rank = 0;
    for (int i = 0; i < n; i++)
      if (b->sv[i] > rtol * b->sv[0]) rank++;
    if (*rmin < 0 || rank < *rmin) *rmin = rank;
    if (rank > *rmax) *rmax = rank;
  }
cleanup:
  return st;
}

double as_blocks_residual(int n, int d, const double *X) {
  double num = 0.0, den = 0.0;
  for (int j = 0; j < d; j++) {
    double mean = 0.0;
    for (int i = 0; i < n; i++) mean += X[(size_t)i * d + j];
    mean /= n;
    for (int i = 0; i < n; i++) {
      double x = X[(size_t)i * d + j], e = x - mean;
      num += e * e;
      den += x * x;
    }
  }
  return den > 0.0 ? sqrt(num / den) : 0.0;
}
