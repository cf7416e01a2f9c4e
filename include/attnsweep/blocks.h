/* attnsweep/blocks.h: transformer blocks beyond the bare model (docs/variants.md
 * "Transformer blocks"; docs/theory.md section 4.6): several heads, feed-forward sublayers, skip
 * connections and per-layer weights (the sweep keys heads, ffn*, skip, weights*).
 *
 * Tokens are rows (n x d). The vector field of a trial whose keys leave the base model
 * ("field" trials: heads > 1, skip false, ffn_form block, or weights per_layer):
 *   ODE, x variables   X' = sum_h P^h X V_h^T + MLP(X),   P^h = rowsoftmax(X M_h X^T)
 *                      (attention sinkhorn_fixed: P^h = as_attention_sinkhorn_fixed of the
 *                      head's scores, sinkhorn_iters iterations; the only other attention the
 *                      blocks take, rule blocks_base of rules.h)
 *   ODE, z variables   z = e^{-mu t} x with the scalar mu = max over blocks of sum_h mu_h
 *                      (mu_h the largest real part of the spectrum of V_h; one head: the base
 *                      model's mu): Z' = -mu Z + sum_h P^h Z V_h^T + e^{-mu t} MLP(e^{mu t} Z),
 *                      P^h from the scores e^{2 mu t} <Q_h z_i, K_h z_j>, the factor kept out of
 *                      the softmax (as_attention_softmax: never overflows)
 *   layers             A(X) = X + dt sum_h P^h X V_h^T (skip) or sum_h P^h X V_h^T (no skip),
 *                      then (ffn_form block) X + dt MLP(X) (skip) or MLP(X) (no skip): the two
 *                      sublayers in turn (Lie-Trotter); z variables z_k = x_k / r^k with
 *                      r = max over blocks of (skip: 1 + dt sum_h max(mu_h, 0); no skip:
 *                      sum_h rho(V_h), rho the spectral radius; 1 when that is 0)
 *   MLP(x_i)           W_2 sigma(W_1 x_i + b), W_1: w x d, W_2: d x w (w = ffn_width or d);
 *                      ffn_w identity: W_1 = [I; 0], W_2 = [I 0]; random: N(0, 1/fan_in)
 *                      entries; b ~ N(0, 1) with ffn_bias, else 0. In z variables the
 *                      rescaling is exact for relu and identity (positively homogeneous:
 *                      sigma(s u + b) / s = sigma(u + b / s)); for tanh the term is
 *                      e^{-mu t} W_2 tanh(W_1 e^{mu t} z + b) while e^{mu t} is finite, else 0.
 * The inside form (ffn_form inside, one head, shared weights, ODE methods) keeps the base
 * field and applies the hook F <- sigma(F) W^T to it: z_i' = W sigma(V sum_j P_ij (z_j - z_i))
 * in z variables (the authors' experiment), x_i' = W sigma(V sum_j P_ij x_j) in x variables.
 * W = I (ffn_w identity) with sigma identity is the base model.
 *
 * Weights: head h of block b is as_triple_build_at(t, h, b) (triple.h): head 0 of block 0 is
 * the base model's triple; block b covers layers [b k, (b + 1) k) or times
 * [b k dt, (b + 1) k dt) (k = weights_every), blocks 0 .. count-1 where count is the number
 * of blocks that meet [0, T) (layers: ceil(K / k) of K = T / dt layers; ODE: ceil(T / (k dt));
 * none starts at T). For the ODE methods the weights are a piecewise-constant vector field:
 * every step ends on the switch times (b + 1) k dt (as_blocks_switch_after; dopri5 cuts its
 * controlled steps there too), and every stage of a step, its end included, uses the block
 * of the step's interval, so each method keeps its order (tests/unit/test_blocks_time.c: RK4
 * and dopri5 against the exact piecewise solution). One block in the horizon is the shared
 * weights (as_blocks_kind_of: the same path, bit for bit). The feed-forward weights of
 * block b come from (master_seed, triple_key, as_purpose_of(AS_PURPOSE_FFN, 0, b)): W (inside)
 * or W_1, W_2, b (block) in that order.
 * Nothing here is collective; no file I/O.
 */
#ifndef ATTNSWEEP_BLOCKS_H
#define ATTNSWEEP_BLOCKS_H

#include <stddef.h>

#include "attnsweep/status.h"
#include "attnsweep/trial.h"

/* How a trial uses this module. */
typedef enum as_blocks_kind {
  AS_BLOCKS_OFF,    /* the base model */
  AS_BLOCKS_INSIDE, /* the base field with the inside feed-forward hook */
  AS_BLOCKS_FIELD   /* the field above */
} as_blocks_kind;

as_blocks_kind as_blocks_kind_of(const as_trial *t);
/* Number of weight blocks of t (1 for shared weights). */
long as_blocks_count(const as_trial *t);
/* Bytes the blocks workspace of t needs (0 for AS_BLOCKS_OFF): for the memory check. */
double as_blocks_bytes(const as_trial *t);

typedef struct as_blocks as_blocks;

/* Workspace and weights for trial t (kind != OFF), drawn at once (as_triple_build_at per head
 * and block, the feed-forward weights; attention sinkhorn_fixed: its scratch). *out set on
 * success. Statuses: AS_ERR_ARG, AS_ERR_NOMEM, AS_ERR_DATA (a family's impossible request,
 * non-finite matrices), AS_ERR_LAPACK. */
as_status as_blocks_create(const as_trial *t, as_blocks **out);
/* Free; accepts NULL and *p == NULL; sets *p to NULL. */
void as_blocks_destroy(as_blocks **p);

as_blocks_kind as_blocks_kind_get(const as_blocks *b);
int as_blocks_heads(const as_blocks *b);
/* The rescaling exponent mu (ODE) or log r (layers) of the z variables. */
double as_blocks_mu(const as_blocks *b);
/* sum_h V_h of block `block` (d x d; the effective V of the classifier and of the record). */
const double *as_blocks_veff(const as_blocks *b, long block);
/* V_h and M_h of head h of block `block` (d x d each). */
const double *as_blocks_v(const as_blocks *b, int head, long block);
const double *as_blocks_m(const as_blocks *b, int head, long block);
/* The block in force at time t (ODE: the b with t in [b k dt, (b + 1) k dt)) or layer k
 * (layers: k / weights_every), clamped to 0..count-1 (so t = T is in the last block). */
long as_blocks_block_at(const as_blocks *b, double t, long k);
/* The block of the step that ended at time t (ODE: the b with t in (b k dt, (b + 1) k dt]) or
 * of layer k - 1 (layers), clamped to 0..count-1; 0 before any step: the weights that moved
 * the tokens last (the final attention and the record use it). */
long as_blocks_block_last(const as_blocks *b, double t, long k);
/* ODE: the time where block blk ends and the next begins, (blk + 1) k dt; +inf for the last
 * block and for layers. The integrators end a step there. */
double as_blocks_switch_after(const as_blocks *b, long blk);

/* The field (dynamics.c): F = Z' (ODE) or the layer increment Z_{k+1} - Z_k (layers) at
 * (t, k, Y) in the integrated variables, with the weights of block `block` (0..count-1; a
 * negative value: as_blocks_block_at(t, k)); P (n x n) receives the mean of the heads'
 * attention (per head in as_blocks_head_attention). */
as_status as_blocks_field(as_blocks *b, int layers, int zvars, double t, long k, long block,
                          const double *Y, double *F, double *P);
/* The inside hook on the base field: F <- sigma(F) W^T (n x d). */
void as_blocks_inside(const as_blocks *b, int n, double *F);
/* log of the factor x = e^{ls} z at (t, k) (0 in x variables). */
double as_blocks_logscale(const as_blocks *b, int layers, int zvars, double t, long k);
/* Attention of head h at the last field evaluation (n x n). */
const double *as_blocks_head_attention(const as_blocks *b, int head);
/* attention sinkhorn_fixed: the largest |row or column sum - 1| of a head's P^h at the last
 * field evaluation; NaN for the softmax or before any evaluation. */
double as_blocks_sinkhorn_dev(const as_blocks *b);

/* Smallest and largest numerical rank over the heads of their attention at the last field
 * evaluation (singular values above rtol * sigma_1, dgesvd). AS_ERR_LAPACK. */
as_status as_blocks_head_ranks(as_blocks *b, double rtol, int *rmin, int *rmax);

/* res(X) = ||X - 1 mean(X)^T||_F / ||X||_F (0 for X = 0): the residual of Dong, Cordonnier,
 * Loukas 2021. Scale invariant, so z and x give the same value. */
double as_blocks_residual(int n, int d, const double *X);

#endif /* ATTNSWEEP_BLOCKS_H */
