/* blocks_spec.c: what a trial's transformer-block keys mean before anything is built (the kind
 * of dynamics, the number of weight blocks, the workspace size): pure functions of as_trial,
 * used by the spec checks (io) without the numerics of blocks.c. Contracts in blocks.h. */
#include <math.h>

#include "attnsweep/attention.h"
#include "attnsweep/blocks.h"
#include "attnsweep/triple.h"

as_blocks_kind as_blocks_kind_of(const as_trial *t) {
  const as_blocks_spec *b = &t->blocks;
  const int layers = t->integ.method == AS_METHOD_LAYERS;
  /* per_layer weights with one block in the horizon are the shared weights: the same path,
   * so the same bits (the reduction of docs/variants.md). */
  const int fresh = b->weights == AS_WEIGHTS_PER_LAYER && as_blocks_count(t) > 1;
  if (b->heads > 1 || (layers && !b->skip) || fresh ||
      (b->ffn != AS_FFN_NONE && b->ffn_form == AS_FFN_BLOCK))
    return AS_BLOCKS_FIELD;
  if (b->ffn != AS_FFN_NONE) return AS_BLOCKS_INSIDE;
  return AS_BLOCKS_OFF;
}

long as_blocks_count(const as_trial *t) {
  const as_blocks_spec *b = &t->blocks;
  if (b->weights != AS_WEIGHTS_PER_LAYER) return 1;
  const double k = b->weights_every > 0 ? b->weights_every : 1;
  double nb;
  if (t->integ.method == AS_METHOD_LAYERS)
    nb = ceil((double)llround(t->integ.T / t->integ.dt) / k);
  else /* blocks [b k dt, (b + 1) k dt) that meet [0, T): none starts at T itself */
    nb = ceil(t->integ.T / (k * t->integ.dt) - 1e-9);
  if (!(nb >= 1.0)) nb = 1.0;
  return nb > (double)AS_MAX_BLOCKS ? AS_MAX_BLOCKS + 1L : (long)nb;
}

static int width_of(const as_trial *t) {
  return t->blocks.ffn_width > 0 ? t->blocks.ffn_width : t->d;
}

double as_blocks_bytes(const as_trial *t) {
  as_blocks_kind kind = as_blocks_kind_of(t);
  if (kind == AS_BLOCKS_OFF) return 0.0;
  const double n = t->n, d = t->d, H = t->blocks.heads, nb = (double)as_blocks_count(t);
  const double w = width_of(t);
  double doubles = nb * H * 2.0 * d * d + nb * d * d * 2.0 + nb * (2.0 * w * d + w) + 7.0 * n * d +
                   n * w + n * n * (1.0 + H);
  if (kind == AS_BLOCKS_FIELD && t->attn.attention == AS_ATTN_SINKHORN_FIXED) /* P^h scratch */
    doubles += (double)as_attention_sinkhorn_doubles(t->n);
  return 8.0 * doubles + 4.0 * n;
}
