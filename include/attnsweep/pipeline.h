/* attnsweep/pipeline.h: one trial from its parameters to its record.
 *
 *   triple (families, Philox) -> spectral analysis (hypotheses, prediction)
 *   -> initial tokens -> integrate -> classify -> record (+ optional bulk data)
 *
 * A trial is a pure function of its as_trial: the record (timing fields aside) and the bulk
 * data are bitwise identical whichever process runs it, in whatever order.
 * Workspaces are kept per shape (n, d) and reused; the pipeline owns them.
 */
#ifndef ATTNSWEEP_PIPELINE_H
#define ATTNSWEEP_PIPELINE_H

#include <signal.h>

#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/status.h"
#include "attnsweep/trial.h"

/* Spectral analysis hook: the parallel layer substitutes its ScaLAPACK path for large d.
 * Must fill sp exactly like as_spectral_analyze. */
typedef as_status (*as_spectral_fn)(const as_triple *tr, double tol, as_spectral *sp, void *ctx);

/* Buffers for bulk data, provided by the caller for one trial; NULL = not wanted.
 * Sizes: initial, final: n*d; attention: n*n; V, M: d*d; snapshots: n_snapshots*n*d. */
typedef struct as_bulk {
  double *initial;
  double *final;
  double *attention;
  double *V;
  double *M;
  double *snapshots;
} as_bulk;

typedef struct as_pipeline as_pipeline;

/* Create a pipeline; spectral may be NULL (LAPACK everywhere). *out set on success. */
as_status as_pipeline_create(as_spectral_fn spectral, void *spectral_ctx, as_pipeline **out);
void as_pipeline_destroy(as_pipeline **p);

/* Run trial t and fill rec (as_record_init is applied first). Problems of the trial itself
 * (bad explicit data, a d = 1 family asked for d > 1, a LAPACK convergence failure) are
 * recorded as outcome AS_OUT_FAILED with the message and return AS_OK; numerical outcomes
 * (non-finite, max steps, interrupted by *stop) are recorded likewise. Only system failures
 * (out of memory, internal bugs) return an error. Not collective (the spectral hook may be). */
as_status as_trial_run(as_pipeline *pl, const as_trial *t, const volatile sig_atomic_t *stop,
                       as_record *rec, as_bulk *bulk);

#endif
