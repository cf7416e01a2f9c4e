/* attnsweep/triple.h: the matrices of a trial (Q, K, V and M = Q^T K) and their families.
 *
 * All matrices are row-major. Tokens are rows (n x d), so the dynamics reads
 * Z' = (P Z - Z) V^T. M is what the dynamics uses; Q and K are kept when known (the margin
 * <Q phi_1, K phi_1> = phi_1^T M phi_1 needs only M).
 */
#ifndef ATTNSWEEP_TRIPLE_H
#define ATTNSWEEP_TRIPLE_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/status.h"
#include "attnsweep/trial.h"

typedef struct as_triple {
  int d;     /* dimension */
  int m;     /* rows of Q and K */
  double *V; /* d x d */
  double *Q; /* m x d */
  double *K; /* m x d */
  double *M; /* d x d, = Q^T K (or given directly) */
} as_triple;

/* Allocate a triple of shape (d, m) (m <= 0 means m = d), zero filled. *out set on success. */
as_status as_triple_create(int d, int m, as_triple **out);
/* Free; accepts NULL and *p == NULL; sets *p to NULL. */
void as_triple_destroy(as_triple **p);

/* Fill tr (created with the trial's d and m) from the trial's families, parameters and
 * random stream (master_seed, triple_key, AS_PURPOSE_TRIPLE) plus the perturbation stream.
 * Explicit and file families read t->triple.{v,q,k,m}_data (io loads files into these).
 * Returns AS_ERR_DATA with a message naming the parameter for impossible requests
 * (a d = 1 family with d > 1, k > d, NaN entries...). Not collective. */
as_status as_triple_build(const as_trial *t, as_triple *tr);

/* ---- heads and per-layer blocks (blocks.h) */
/* Blocks of per-layer weights a trial may have (purposes stay below 2^32). */
#define AS_MAX_BLOCKS 65536
/* The Philox purpose of head h of block b for the base purpose (AS_PURPOSE_TRIPLE or
 * AS_PURPOSE_PERTURB): the base itself for (0, 0), else base + 256 (h + 64 b). Pure. */
uint32_t as_purpose_of(uint32_t base, int head, long block);
/* as_triple_build for head `head` (0..63) of block `block` (0..AS_MAX_BLOCKS-1): the random
 * families draw from the purposes of as_purpose_of; explicit and file matrices stacked by
 * heads (V: H d x d, Q and K: H m x d, M: H d x d) give head h its slice h. (0, 0) is
 * as_triple_build exactly. */
as_status as_triple_build_at(const as_trial *t, int head, long block, as_triple *tr);

#endif
