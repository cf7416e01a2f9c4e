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
#include "dyn_impl.h"
#include "linalg_dyn.h"

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
  w->blk = -1;
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
  free(w->uf);
  free(w->uw);
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
as_status dyn_transformed(as_dyn *w, int mode, double t, long k, const double *Y,
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
as_status dyn_scaled_tokens(as_dyn *w, int mode, double t, long k, const double *Y, double *logc) {
  as_status st = AS_OK;
  const size_t nd = (size_t)w->n * w->d;
  double ls = 0.0;
  AS_TRY(dyn_transformed(w, mode, t, k, Y, &ls));
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
    dyn_model_weights(w, logc);
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
as_status dyn_rhs_mode(as_dyn *w, int mode, double t, long k, const double *Y, double *F) {
  as_status st = AS_OK;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  double logc = 0.0;
  if (w->bkind == AS_BLOCKS_FIELD) { /* transformer blocks: their own field (blocks.h) */
    w->pt_newer = 0;
    st = as_blocks_field(w->blocks, mode == MODE_LZ || mode == MODE_LX,
                         mode == MODE_Z || mode == MODE_LZ, t, k, w->blk, Y, F, w->P);
    /* sinkhorn_fixed: the heads' deviation joins the run's (as for one head) */
    if (st == AS_OK && w->am.attention == AS_ATTN_SINKHORN_FIXED)
      dyn_sinkhorn_dev_add(w, as_blocks_sinkhorn_dev(w->blocks));
    return st;
  }
  AS_TRY(dyn_scaled_tokens(w, mode, t, k, Y, &logc));
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
    if (w->xchg) AS_TRY(w->xchg(w->H, n, d, w->rlo, w->rhi, t, w->run_T, w->xctx));
  } else {
    attention_general(w, Mm, logc, Y);
    if (w->am.norm == AS_NORM_SPHERE && w->am.norm_form == AS_NFORM_USA) dyn_usa_rescale(w, logc);
  }
  switch (mode) {
  case MODE_Z:
    for (size_t i = 0; i < nd; i++) w->H[i] -= Y[i];
    as_mm(0, 1, n, d, d, 1.0, w->H, d, w->V, d, 0.0, F, d);
    break;
  case MODE_X:
    as_mm(0, 1, n, d, d, 1.0, w->H, d, w->V, d, 0.0, F, d);
    if (w->am.norm == AS_NORM_SPHERE) dyn_tangent_project(n, d, Y, F); /* x_i' = Proj_{x_i}(...) */
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
  AS_TRY(dyn_rhs_mode(w, vars == AS_VARS_Z ? MODE_Z : MODE_X, t, 0, Z, F));
  publish_attention(w);
cleanup:
  return st;
}

/* ---------------------------------------------------------------- measures */

/* The largest row norm of the n x d rows of F (about the mean, or 0), its entries scaled by a
 * power of two first. The slow path of max_row_norm and radius_of when their sum of squares
 * overflows: tokens along eigenvalues of V with negative real part grow like e^{|Re lambda| t}
 * in z, and past t ~ 354 / |Re lambda| their squares overflow although they do not
 * (docs/theory.md 3: any horizon in z). dyn_batch_lanes.h has the same path, bit for bit. */
#define Z_MODE(w) ((w)->mode == MODE_Z || (w)->mode == MODE_LZ)
static double row_norm_scaled(int n, int d, const double *F, const double *mean) {
  double amax = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < d; j++) {
      double a = fabs(F[(size_t)i * d + j] - (mean ? mean[j] : 0.0));
      if (!(a <= amax)) amax = a;
    }
  int e = 0;
  if (amax > 0x1p500 && isfinite(amax)) (void)frexp(amax, &e);
  const double f = ldexp(1.0, -e);
  double best = 0.0;
  for (int i = 0; i < n; i++) {
    double sum = 0.0;
    for (int j = 0; j < d; j++) {
      const double v = (F[(size_t)i * d + j] - (mean ? mean[j] : 0.0)) * f;
      sum += v * v;
    }
    if (!(sum <= best)) best = sum;
  }
  return ldexp(sqrt(best), e);
}

/* safe: z variables, where the tokens may grow past the square root of the largest double
 * and any horizon is safe (the slow path below); in x variables an overflowing norm ends the
 * run as nonfinite, as the tokens themselves soon overflow (docs/theory.md 3). */
static double max_row_norm(int n, int d, const double *F, int safe) {
  double best = 0.0;
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < d; j++) s += F[(size_t)i * d + j] * F[(size_t)i * d + j];
    if (!(s <= best)) best = s; /* NaN propagates */
  }
  return best == INFINITY && safe ? row_norm_scaled(n, d, F, NULL) : sqrt(best);
}

/* Radius about the mean: max_i |Z_i - mean| (mean: d entries of scratch). */
static double radius_of(int n, int d, const double *Z, double *mean, int safe) {
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
  return best == INFINITY && safe ? row_norm_scaled(n, d, Z, mean) : sqrt(best);
}

static int all_finite(size_t len, const double *x) {
  double acc = 0.0;
  for (size_t i = 0; i < len; i++) acc += x[i] * 0.0; /* NaN iff some entry is inf or NaN */
  return acc == 0.0;
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
    AS_TRY(dyn_rhs_mode(w, w->mode, t + rk->c[s] * h, 0, Y, w->K[s]));
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
as_outcome dyn_step_guard(const run_ctx *rc, double t, double v, double r, double *since) {
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
  const int field = w->bkind == AS_BLOCKS_FIELD;
  as_outcome out = AS_OUT_PENDING;
  for (;;) {
    if (rc->stop && *rc->stop) {
      out = AS_OUT_INTERRUPTED;
      break;
    }
    /* Per-layer weights: every stage of a step uses the block of the step's interval, and
     * steps end on the switch times (blocks.h), so the field is smooth within each step. */
    double t_switch = INFINITY;
    if (field) {
      const long blk = as_blocks_block_at(w->blocks, t, 0);
      if (blk != w->blk) have_k1 = 0; /* a new block: f(t, Z) with its weights */
      w->blk = blk;
      t_switch = as_blocks_switch_after(w->blocks, blk);
    }
    if (!have_k1) {
      AS_TRY(dyn_rhs_mode(w, w->mode, t, 0, w->Z, w->K[0]));
      have_k1 = 1;
    }
    double v = max_row_norm(n, d, w->K[0], Z_MODE(w)), r = radius_of(n, d, w->Z, w->bd, Z_MODE(w));
    if ((out = dyn_step_guard(rc, t, v, r, &since)) != AS_OUT_PENDING) break;
    const double target = fmin(si < rc->n_snap ? rc->snap[si] : T, t_switch);
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
    dyn_swap(&w->Z, &w->Zn);
    t = land ? target : t + h;
    if (w->am.norm == AS_NORM_SPHERE) { /* back onto the sphere after every step */
      dyn_sphere_normalise(n, d, w->Z);
      have_k1 = 0; /* the derivative at the normalised state */
    }
    if (w->step_cb) w->step_cb(t, w->Z, w->step_ctx);
    if (rk->fsal) {
      dyn_swap(&w->K[0], &w->K[rk->s - 1]); /* first same as last */
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
    AS_TRY(dyn_rhs_mode(w, w->mode, t, k, w->Z, w->K[0]));
    double v = max_row_norm(n, d, w->K[0], Z_MODE(w)) / in->dt,
           r = radius_of(n, d, w->Z, w->bd, Z_MODE(w));
    if ((out = dyn_step_guard(rc, t, v, r, &since)) != AS_OUT_PENDING) break;
    for (size_t i = 0; i < nd; i++) w->Zn[i] = w->Z[i] + w->K[0][i];
    if (w->am.norm == AS_NORM_SPHERE)
      dyn_sphere_normalise(n, d, w->Zn); /* x <- normalise(x + dt A) */
    s->steps++;
    if (!all_finite(nd, w->Zn)) {
      out = AS_OUT_NONFINITE;
      break;
    }
    dyn_swap(&w->Z, &w->Zn);
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
as_status dyn_begin_run(as_dyn *w, const as_integ_spec *in, const double *X0,
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
  w->run_T = in->T;
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
  w->sk_warm = 0; /* each run starts its Sinkhorn potentials cold: a function of the trial */
  memset(&w->sk_stats, 0, sizeof w->sk_stats);
  const int layers = in->method == AS_METHOD_LAYERS;
  w->mode = layers ? (in->vars == AS_VARS_Z ? MODE_LZ : MODE_LX)
                   : (in->vars == AS_VARS_Z ? MODE_Z : MODE_X);
  w->blk = -1; /* layers: the block of layer k; the ODE loop sets its step's */
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
    dyn_sphere_normalise(n, d, w->Z);
  }
  if (w->step_cb) w->step_cb(0.0, w->Z, w->step_ctx);
cleanup:
  return st;
}

/* The end of a run (after its loop): attention, velocity and radius at the final state. */
as_status dyn_finish_run(as_dyn *w, const as_integ_spec *in, as_dyn_stats *stats) {
  w->run_T = 0.0;
  as_status st = AS_OK;
  const int n = w->n, d = w->d;
  const size_t nd = (size_t)n * d;
  const int layers = in->method == AS_METHOD_LAYERS;
  /* The final attention with the weights of the last step (block of the last step or layer
   * taken), never a block that starts at T. */
  if (w->bkind == AS_BLOCKS_FIELD) w->blk = as_blocks_block_last(w->blocks, w->t, w->k);
  AS_TRY(dyn_rhs_mode(w, w->mode, w->t, w->k, w->Z, w->K[0]));
  publish_attention(w);
  double v = max_row_norm(n, d, w->K[0], Z_MODE(w)) / (layers ? in->dt : 1.0);
  double r = radius_of(n, d, w->Z, w->bd, Z_MODE(w));
  /* The final velocity (as_dyn_velocity): the derivative, or a layer's increment / dt, on the
   * sphere its tangent part. */
  for (size_t i = 0; i < nd; i++) w->Ys[i] = w->K[0][i] / (layers ? in->dt : 1.0);
  if (w->am.norm == AS_NORM_SPHERE && layers) dyn_tangent_project(n, d, w->Z, w->Ys);
  stats->radius = r;
  stats->velocity = v == 0.0 ? 0.0 : v / r;
  if (stats->outcome != AS_OUT_SETTLED) settle_update(in, w->t, v, r, &stats->settle_time);
  if (w->stream && w->P && w->bkind != AS_BLOCKS_FIELD) {
    /* Streamed below AS_ATTENTION_STREAM_N (AS_DYN_KERNEL_STREAM: a trial with
     * ranks_per_trial): P at the final state, formed once, densely, for the callers that read
     * it (the classifier) -- from the final state alone, so the same bits for any rows. */
    double logc = 0.0;
    AS_TRY(dyn_scaled_tokens(w, w->mode, w->t, w->k, w->Z, &logc));
    if (w->hardmax) logc = INFINITY;
    attention_general(w, (w->mode == MODE_Z || w->mode == MODE_LZ) ? w->Mt : w->M, logc, w->Z);
  }
  w->ran = 1;
cleanup:
  w->blk = -1; /* as_dyn_rhs after the run: the block at t */
  return st;
}

as_status as_dyn_run(as_dyn *w, const as_integ_spec *in, const double *X0,
                     const volatile sig_atomic_t *stop, const double *snap_times, int n_snap,
                     as_dyn_snapshot_fn cb, void *cb_ctx, as_dyn_stats *stats) {
  as_status st = AS_OK;
  AS_TRY(dyn_begin_run(w, in, X0, snap_times, n_snap, stats));
  run_ctx rc = {in, stop, snap_times, n_snap, cb, cb_ctx, stats};
  if (in->method == AS_METHOD_LAYERS) {
    AS_TRY(run_layers(w, &rc));
  } else {
    AS_TRY(run_continuous(w, &rc));
  }
  AS_TRY(dyn_finish_run(w, in, stats));
cleanup:
  return st;
}

as_status as_dyn_attention_apply(as_dyn *w, const double *S, double *PS) {
  as_status st = AS_OK;
  AS_CHECK(w->ran && S != NULL && PS != NULL, AS_ERR_ARG, "as_dyn_attention_apply: no run");
  AS_TRY(stream_buffers(w));
  double logc = 0.0;
  AS_TRY(dyn_scaled_tokens(w, w->mode, w->t, w->k, w->Z, &logc));
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
    AS_TRY(dyn_transformed(w, w->mode, w->t, w->k, w->Z, &ls));
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
