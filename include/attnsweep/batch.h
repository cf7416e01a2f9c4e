/* attnsweep/batch.h: small trials of one shape integrated together (docs/performance.md).
 *
 * For few tokens and coordinates (n <= AS_SMALL_NMAX, d <= AS_SMALL_DMAX) the cost of a trial is
 * its attention kernel, and one trial fills the vector lanes badly when n is not a multiple of
 * the vector width (n = 20 rows in lanes of 8 on AVX-512F leave 4 of 24 idle; n = 5 wastes 3
 * of 8 on AVX2). A
 * batch integrates up to AS_BATCH_LANES trials that share (n, d, method, vars, T, dt) in lock-step,
 * one trial per vector lane of the attention kernel. The records are bitwise those of the
 * one-at-a-time path: every lane performs the operations of as_dyn_run on its trial in the same
 * order (tests/unit/test_batch.c compares full records and final tokens).
 *
 * What a batch takes: the base model (row softmax, finite beta, no mask, no layer
 * normalisation, no transformer blocks), an explicit Runge-Kutta method without step control
 * (rk4, euler; dopri5 with rtol = atol = 0), no snapshots. Anything else runs alone; callers
 * need not sort: as_trial_run_batch runs what does not fit one trial at a time.
 * Nothing here is collective.
 */
#ifndef ATTNSWEEP_BATCH_H
#define ATTNSWEEP_BATCH_H

#include <signal.h>

#include "attnsweep/pipeline.h"
#include "attnsweep/status.h"
#include "attnsweep/trial.h"

#define AS_BATCH_LANES 8 /* trials per batch: one per lane of a 512-bit vector */
/* The small-shape attention kernel's range, the one definition: a trial alone takes that
 * kernel (dynamics.c) and a trial batches (below) only for n <= AS_SMALL_NMAX tokens and
 * d <= AS_SMALL_DMAX coordinates. */
#define AS_SMALL_NMAX 64
#define AS_SMALL_DMAX 8

struct as_dyn;
struct as_dyn_stats;

/* 1 when a run of w with these settings (and n_snap snapshots) can join a batch: the
 * workspace uses the small-shape kernel for the base model, no step control, no hooks.
 * Pure. */
int as_dyn_batchable(const struct as_dyn *w, const as_integ_spec *in, int n_snap);

/* as_dyn_run of B <= AS_BATCH_LANES distinct workspaces at once (each with its triple set),
 * no snapshots: lane l integrates from X0[l] with in[l] (method, vars, T and dt the same in
 * every lane; max_steps and the settling settings may differ) into w[l] and stats[l], with the
 * bits as_dyn_run would give. A lane whose settings or initial tokens as_dyn_run would refuse
 * gets ok[l] = 0 and is left alone (run it alone to get its message); ok[l] = 1 otherwise.
 * stop is polled once per step for all lanes. Statuses: AS_ERR_ARG (lanes that do not fit
 * one batch: as_dyn_batchable, shared settings), AS_ERR_NOMEM, AS_ERR_INTERNAL. */
as_status as_dyn_run_batch(struct as_dyn *const *w, int B, const as_integ_spec *const *in,
                           const double *const *X0, const volatile sig_atomic_t *stop,
                           struct as_dyn_stats *stats, int *ok);

/* 1 when trial t can join a batch (the list at the top, from the trial's settings alone). */
int as_trial_batchable(const as_trial *t);

/* 1 when batchable trials a and b can share a batch: the same n, d, method, vars, T and dt.
 * Pure. */
int as_trial_same_batch(const as_trial *a, const as_trial *b);

/* Trials t[0..count) (any count >= 0) into rec[0..count), each exactly as as_trial_run would
 * fill it (the timing field wall_time aside: a batched trial gets its share of the batch's
 * integration time). Consecutive trials that fit one batch (as_trial_batchable, the same n,
 * d, method, vars, T, dt) are integrated together, the others alone. bulk: count entries
 * (NULL entries or bulk NULL: none). Statuses as as_trial_run's: on an error that stops the
 * run, the records are unspecified. */
as_status as_trial_run_batch(as_pipeline *pl, const as_trial *t, int count,
                             const volatile sig_atomic_t *stop, as_record *rec,
                             as_bulk *const *bulk);

/* The rank the error context (status.h) names while as_trial_run_batch runs each trial of a
 * batch: it sets the context (rank, trial index) before each trial, as the scheduler does for a
 * trial alone. -1 (the default): the context is left as the caller set it. */
void as_pipeline_set_rank(as_pipeline *pl, int rank);

#endif /* ATTNSWEEP_BATCH_H */
