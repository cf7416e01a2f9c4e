/* attnsweep/rng.h: counter-based random streams (Random123 Philox4x32-10).
 *
 * A stream is keyed by (master seed, index, purpose): the numbers of a trial depend only on
 * the spec's seed, the trial (or triple) index and what they are for, never on the rank, the
 * order of work or restarts. Streams are cheap values: init, draw, drop. Not thread-shared.
 */
#ifndef ATTNSWEEP_RNG_H
#define ATTNSWEEP_RNG_H

#include <stdint.h>

typedef struct as_rng {
  uint32_t key[2]; /* master seed */
  uint32_t ctr[4]; /* block counter, purpose, index (low, high) */
  uint32_t buf[4]; /* the current block of output */
  int used;        /* words of buf already consumed (4: empty) */
  int has_spare;   /* a second normal deviate is cached */
  double spare;    /* the cached deviate */
} as_rng;

/* Start the stream (master_seed, index, purpose) at its beginning. */
void as_rng_init(as_rng *r, uint64_t master_seed, uint64_t index, uint32_t purpose);
/* Next 32 random bits. */
uint32_t as_rng_u32(as_rng *r);
/* Uniform on [0, 1) with 53 random bits. */
double as_rng_uniform(as_rng *r);
/* Standard normal (Box-Muller on two uniforms; the pair's second value is cached). */
double as_rng_normal(as_rng *r);
/* Fill x[0..len) with uniforms on [lo, hi). */
void as_rng_fill_uniform(as_rng *r, double *x, long len, double lo, double hi);
/* Fill x[0..len) with normals of mean 0 and standard deviation sd. */
void as_rng_fill_normal(as_rng *r, double *x, long len, double sd);

#endif
