/* rng.c: Philox4x32-10 streams (Random123 headers provide the bijection). */
#include "attnsweep/rng.h"

#include <Random123/philox.h>
#include <math.h>

void as_rng_init(as_rng *r, uint64_t master_seed, uint64_t index, uint32_t purpose) {
  r->key[0] = (uint32_t)master_seed;
  r->key[1] = (uint32_t)(master_seed >> 32);
  r->ctr[0] = 0;
  r->ctr[1] = purpose;
  r->ctr[2] = (uint32_t)index;
  r->ctr[3] = (uint32_t)(index >> 32);
  r->used = 4;
  r->has_spare = 0;
  r->spare = 0.0;
}

static void next_block(as_rng *r) {
  philox4x32_ctr_t c = {{r->ctr[0], r->ctr[1], r->ctr[2], r->ctr[3]}};
  philox4x32_key_t k = {{r->key[0], r->key[1]}};
  philox4x32_ctr_t out = philox4x32(c, k);
  for (int i = 0; i < 4; i++) r->buf[i] = out.v[i];
  r->ctr[0]++; /* 2^32 blocks = 2^34 words per stream: far beyond any trial's needs */
  r->used = 0;
}

uint32_t as_rng_u32(as_rng *r) {
  if (r->used >= 4) next_block(r);
  return r->buf[r->used++];
}

double as_rng_uniform(as_rng *r) {
  uint64_t hi = as_rng_u32(r) >> 5;                              /* 27 bits */
  uint64_t lo = as_rng_u32(r) >> 6;                              /* 26 bits */
  return (double)((hi << 26) | lo) * (1.0 / 9007199254740992.0); /* / 2^53 */
}

double as_rng_normal(as_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  double u1 = 1.0 - as_rng_uniform(r); /* (0, 1]: log is finite */
  double u2 = as_rng_uniform(r);
  double rad = sqrt(-2.0 * log(u1));
  double th = 6.283185307179586476925 * u2;
  r->spare = rad * sin(th);
  r->has_spare = 1;
  return rad * cos(th);
}

void as_rng_fill_uniform(as_rng *r, double *x, long len, double lo, double hi) {
  for (long i = 0; i < len; i++) x[i] = lo + (hi - lo) * as_rng_uniform(r);
}

void as_rng_fill_normal(as_rng *r, double *x, long len, double sd) {
  for (long i = 0; i < len; i++) x[i] = sd * as_rng_normal(r);
}
