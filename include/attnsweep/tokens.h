/* attnsweep/tokens.h: the initial tokens X0 of a trial (tokens.c).
 *
 * X0 is n x d row-major (tokens are rows), a pure function of the trial's init spec
 * (trial.h as_init_spec) and its random stream (master_seed, token_key, AS_PURPOSE_TOKENS):
 *   box       uniform on [-s, s]^d
 *   gauss     N(0, s^2 I)
 *   sphere    uniform on the sphere of radius s (a Gaussian vector, normalised)
 *   explicit  copied from t->init.data (the spec's matrix)
 *   file      copied from t->init.data (io's matfile.h reads the file into it beforehand)
 * Random kinds draw row by row, so token i's numbers depend on no row after it: a larger n
 * extends a smaller one with the same seed.
 * Nothing here allocates, opens a file or is collective.
 */
#ifndef ATTNSWEEP_TOKENS_H
#define ATTNSWEEP_TOKENS_H

#include "attnsweep/status.h"
#include "attnsweep/trial.h"

/* Fill X0 (n x d doubles, owned by the caller, t->n and t->d of the trial) with the initial
 * tokens of trial t (borrowed). Statuses: AS_OK; AS_ERR_ARG for NULL pointers or n, d < 1
 * (a bug of the caller); AS_ERR_DATA, naming the kind and the coordinate, for a scale that is
 * not > 0, explicit or file tokens that were not given, non-finite entries, or an unknown
 * kind. X0 is unspecified on failure. Not collective. */
as_status as_tokens_init(const as_trial *t, double *X0);

#endif /* ATTNSWEEP_TOKENS_H */
