/* attnsweep/shard.h: one sweep as N independent shards (shard.c; docs/scheduling.md).
 *
 * The split: every trial of the spec gets an owner 1..N by the longest-first greedy rule over
 * the cost model (as_cost_work, cost.h): trials sorted by decreasing work (ties, and NaN work
 * which goes last, by increasing trial index), each given to the shard with the least work so
 * far (ties: the lowest shard number). A pure function of (spec, N): every job of an array,
 * `merge` and `status` compute the same owners, for any rank count.
 *
 * Shard I of N of the results path OUT.h5 is the file OUT.h5.shard-I-of-N: a sparse results
 * file (results.h) holding shard I's rows only, so its size is its share of the sweep's; the
 * trials it does not hold read as pending. Its root attributes shard_index, shard_count and
 * shard_trials say which shard it is (as_shard_identify falls back on the file name for a file that
 * lacks them, e.g. one rebuilt by repair). Nothing here uses MPI.
 */
#ifndef ATTNSWEEP_SHARD_H
#define ATTNSWEEP_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/results.h"
#include "attnsweep/spec.h"
#include "attnsweep/status.h"

/* Most shards of one sweep. */
#define AS_SHARD_MAX 100000u

/* Root attribute names of a shard file. */
#define AS_SHARD_ATTR_INDEX "shard_index"
#define AS_SHARD_ATTR_COUNT "shard_count"
#define AS_SHARD_ATTR_TRIALS "shard_trials"

/* Parse "I/N" (1 <= I <= N <= AS_SHARD_MAX, decimal, nothing else). AS_ERR_ARG. */
as_status as_shard_parse(const char *text, uint32_t *index, uint32_t *count);

/* "<results>.shard-I-of-N" into buf. AS_ERR_ARG when it does not fit or I/N are bad. */
as_status as_shard_path(const char *results, uint32_t index, uint32_t count, char *buf, size_t len);

/* Whether path ends in ".shard-I-of-N": 1 with *index, *count and the length of the results
 * path before the suffix in *base_len (any may be NULL), else 0. */
int as_shard_path_parse(const char *path, uint32_t *index, uint32_t *count, size_t *base_len);

/* The owner 1..count of every trial of spec into owner[0 .. trial count) (the split above).
 * loads, if not NULL, receives count work totals (loads[I - 1]). AS_ERR_ARG, AS_ERR_NOMEM. */
as_status as_shard_owners(const as_spec *spec, uint32_t count, uint32_t *owner, double *loads);

/* The trials whose owner is index, increasing, into *rows (allocated, caller frees; at least
 * one entry allocated). AS_ERR_NOMEM. */
as_status as_shard_rows(const uint32_t *owner, uint64_t n_trials, uint32_t index, uint64_t **rows);

/* Which shard a results file is: its attributes, else its name; *index = *count = 0 for a
 * file that is neither (a whole run). rf open in any mode, path its name. Not collective. */
as_status as_shard_identify(as_results *rf, const char *path, uint32_t *index, uint32_t *count);

#endif /* ATTNSWEEP_SHARD_H */
