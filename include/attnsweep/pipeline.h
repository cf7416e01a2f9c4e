/* attnsweep/pipeline.h: one trial from its parameters to its record.
 *
 *   triple (families, Philox) -> spectral analysis (hypotheses, prediction)
 *   -> initial tokens -> integrate -> classify -> record (+ optional bulk data)
 *
 * A trial is a pure function of its as_trial: the record (timing fields aside) and the bulk
 * data are bitwise identical whichever process runs it, in whatever order.
 * Workspaces are kept per shape (n, d) and reused; the pipeline owns them.
 * A trial with ranks_per_trial >= 1 streams its attention whatever n (the kernel then does not
 * depend on how many ranks share it); ranks_per_trial 0 (auto) keeps the kernels chosen by shape.
 *
 * Bugs are not data (status.h). A failure inside a trial is either the trial's own problem
 * (as_status_is_trial_problem: bad explicit or file data, a family that cannot be built at
 * this d, a LAPACK routine that did not converge) and becomes the trial's record with outcome
 * and verdict "failed" and the message, or it stops the run: a bug (AS_ERR_INTERNAL: a LAPACK
 * illegal argument; an invalid argument, AS_ERR_ARG, promoted to internal) or the machine
 * (out of memory). A status that stops the run carries file:line of the failing check and
 * the trial's index and parameters in its message; no record is made for that trial.
 *
 * Test hook: with the environment variable ATTNSWEEP_TEST_INTERNAL_ERROR=<trial index> the
 * pipeline meets a real bug in that trial (a core function called with an invalid argument);
 * with ATTNSWEEP_TEST_INTERNAL_ERROR=<trial index>:lapack, a LAPACK call with an illegal
 * argument. Read once by as_pipeline_create. For the tests of the internal-error path only;
 * unset in normal use (any other value is ignored).
 */
#ifndef ATTNSWEEP_PIPELINE_H
#define ATTNSWEEP_PIPELINE_H

#include <signal.h>

#include "attnsweep/dynamics.h"
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
  double *snapshot_clusters; /* cluster count at each snapshot time (as_meta_count) */
} as_bulk;

typedef struct as_pipeline as_pipeline;

/* Create a pipeline; spectral may be NULL (LAPACK everywhere; spectral_ctx is passed to it,
 * borrowed). Reads the test hook (above). *out set on success. AS_ERR_ARG, AS_ERR_NOMEM. */
as_status as_pipeline_create(as_spectral_fn spectral, void *spectral_ctx, as_pipeline **out);
/* Triples with d < d_below are analysed by the pipeline itself (as_spectral_analyze, the last
 * analysis reused while the triple keeps its bits), the others by the hook. Default 0: the
 * hook analyses every triple (a pipeline without a hook analyses every triple itself). */
void as_pipeline_set_spectral_below(as_pipeline *pl, int d_below);
/* Free the pipeline and its workspaces; accepts NULL and *p == NULL; sets *p to NULL. */
void as_pipeline_destroy(as_pipeline **p);
/* Bytes of the workspaces of one trial of shape (n, d, m rows of Q and K): the dynamics, the
 * classifier, the tokens and the triple (as_dyn_bytes, as_classify_ws_bytes). An estimate of
 * what as_trial_run allocates (the small d^2 parts approximately). Pure. */
double as_pipeline_bytes(int n, int d, int m);

/* One trial over several ranks (ranks_per_trial, docs/meanfield.md): this rank computes part
 * `part` of `parts` of the rows (as_dyn_part_rows) and exchange (with ctx) fills the others at
 * every stage (as_dyn_set_rows; par/group.c does it with MPI). Part 0 is the leader: it
 * classifies and its record is the trial's; the other parts stop after the integration (their
 * record holds the set-up and integration fields only and is not the trial's). Every part must
 * run the same trial with the same stop flag values at every step (the exchange is where a
 * stop is agreed). g NULL or parts 1: the whole trial on this rank (the default). Borrowed
 * until the next call. Not collective. */
typedef struct as_pipeline_group {
  int part, parts; /* 0 <= part < parts */
  as_dyn_exchange_fn exchange;
  void *ctx;
} as_pipeline_group;
void as_pipeline_set_group(as_pipeline *pl, const as_pipeline_group *g);

/* Run trial t (borrowed) and fill rec (as_record_init is applied first). Problems of the
 * trial itself are recorded as outcome AS_OUT_FAILED with the message and return AS_OK;
 * numerical outcomes (non-finite, max steps, interrupted by *stop) are recorded likewise.
 * Returns an error only when the run must stop (see the top): AS_ERR_INTERNAL for a bug,
 * AS_ERR_NOMEM, or what the spectral hook returned that is not the trial's problem (e.g.
 * AS_ERR_MPI); rec is then unspecified. bulk (may be NULL) receives the bulk data the caller
 * asked for. Not collective (the spectral hook may be). */
as_status as_trial_run(as_pipeline *pl, const as_trial *t, const volatile sig_atomic_t *stop,
                       as_record *rec, as_bulk *bulk);

/* The horizon as_trial_run integrates trial t to, into *T: t->integ.T, or with T_decide > 0
 * max(T, T_decide * AS_CLASSIFY_SEP / sep), the later separation time (theorem.h
 * as_theorem_horizon) of the trial's theorem and of its nearest one (near.h); T when neither
 * has a separation. For T_decide > 0 it builds t's triple (the blocks field: block 0's
 * effective V) and analyses it as as_trial_run does (LAPACK: O(d^3), allocates d x d
 * workspaces); the same function decides the horizon there. Statuses: the trial's own
 * problems in building or analysing the triple (a file family whose matrix is not loaded,
 * AS_ERR_DATA; as_status_is_trial_problem), with *T = t->integ.T; AS_ERR_NOMEM; AS_ERR_ARG
 * for NULL. Not collective. */
as_status as_trial_horizon(const as_trial *t, double *T);

/* CPU seconds (of the calling thread) this pipeline has spent classifying end states (as_classify,
 * with the nearest theorem's second classification) in the trials it timed, and in *trials (may be
 * NULL) how many trials it timed (one in 16: a thread CPU clock read is a system call, which cost
 * 1.5 us CPU a read on the machine of docs/performance.md): the classifier's cost per trial for
 * `attnsweep bench`. Not collective. */
double as_pipeline_classify_seconds(const as_pipeline *pl, int64_t *trials);

/* The one decision for a failure met while running trial t (t may be NULL outside a trial),
 * with status st and its error recorded (status.h), also for steps outside as_trial_run (the
 * io layer reading a trial's matrix or token file: reading_input = 1, so that an HDF5 or I/O
 * failure there counts as the file's problem, AS_ERR_DATA).
 *   the trial's problem (as_status_is_trial_problem) and rec != NULL: rec is initialised from
 *       t and marked failed with the recorded message, the error is cleared, returns AS_OK;
 *   otherwise the run must stop: AS_ERR_ARG is promoted to AS_ERR_INTERNAL, the trial's index
 *       and parameters are appended to the message, and the status is returned.
 * AS_OK passes through. Not collective. */
as_status as_trial_failure(const as_trial *t, as_status st, int reading_input, as_record *rec);

#endif
