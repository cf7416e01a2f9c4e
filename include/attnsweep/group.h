/* attnsweep/group.h: trials that span several ranks (the sweep key ranks_per_trial;
 * docs/meanfield.md, "Scaling").
 *
 * as_group_run runs a list of trials, each on its own group of R ranks of a communicator, in a
 * phase of its own before the coordinator/worker scheduling of the single-rank trials
 * (sweep.c). The plan is static and made identically on every rank from the list: trials
 * longest first (ties by index), each to the R ranks that become free first by the cost
 * estimate (ties to the lower rank), its leader the lowest of them; every rank then runs its
 * own trials in plan order. A trial's communicator comes from MPI_Comm_create_group, which is
 * collective over its members only, so groups run side by side; since every rank meets its
 * trials in one global order, the earliest unfinished trial always has all its members at
 * hand: no two groups ever wait on each other.
 *
 * Inside a trial (pipeline.h, as_pipeline_set_group) every member integrates the whole n x d
 * state and computes its rows of the streamed attention; as_group_exchange all-gathers the
 * rows of H = P Y (n x d doubles, never n x n) and agrees on the stop flag at every stage, so
 * every member stops at the same step. The leader classifies and sinks the record.
 *
 * Stops: a member that saw a stop (signal, time limit) before a trial makes the whole group
 * skip it (the trial stays pending, resumable); at the end every rank knows of any stop
 * (as_signals_request_stop), so the scheduling phase that follows stops at once. Failures:
 * the status of a trial is agreed in its group; the first failing rank's error is relayed to
 * every rank at the end. A machine failure (out of memory, MPI) inside one member's stage may
 * leave the others of its group waiting, like any MPI failure (sched.h).
 */
#ifndef ATTNSWEEP_GROUP_H
#define ATTNSWEEP_GROUP_H

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "attnsweep/pipeline.h"
#include "attnsweep/record.h"
#include "attnsweep/status.h"

/* One trial of the group phase. */
typedef struct as_group_item {
  uint64_t trial;
  int ranks;   /* its group size R, 2 <= R <= the communicator's size */
  double cost; /* estimated work (as_cost_work): the plan's order and load */
} as_group_item;

typedef struct as_group_ops {
  /* Run `trial` as this rank's part (g: part, parts, exchange) and fill rec on the leader
   * (part 0). Collective over the group: every member calls it for the same trial. stop is
   * the group's agreed flag (pass it to the integrator). Trial failures are outcomes in the
   * record; another status aborts the sweep. Required. */
  as_status (*run)(uint64_t trial, const as_pipeline_group *g, const volatile sig_atomic_t *stop,
                   as_record *rec, void *ctx);
  /* The leader's finished record (one at a time, as soon as it is done). Required. */
  as_status (*sink)(const as_record *recs, int count, void *ctx);
  void *ctx;
  /* Rank 0's progress lines (NULL or interval <= 0: none): a line when a trial of one of its
   * groups starts, one every interval while it runs (its time so far and attention
   * evaluations), and the totals at the end; the other groups' trials are counted there. */
  FILE *progress;
  double progress_interval;
} as_group_ops;

typedef struct as_group_summary {
  uint64_t done;        /* records sunk (every rank's leaders together) */
  uint64_t failed;      /* ... failed or non-finite */
  uint64_t interrupted; /* ... interrupted (cut short by a stop) */
  uint64_t skipped;     /* trials not started because of a stop */
  int stopped;          /* a stop was seen on some rank */
} as_group_summary;

/* Which rank runs which trial: the static plan above (pure, identical on every rank).
 * items (n, borrowed) in any order; size ranks; member[i * size + k] for k < items[i].ranks:
 * the ranks of the trial at position i of order (increasing; member 0 is the leader);
 * order[i]: the item index of the i-th trial of the plan. member holds n * size ints, order n.
 * AS_ERR_ARG for a group larger than size or smaller than 2. */
as_status as_group_plan(const as_group_item *items, uint64_t n, int size, int *member,
                        uint64_t *order);

/* Run every item (the same list on every rank) on its group. Collective on comm.
 * time_limit (s, 0: none) counts from t0 (MPI_Wtime, the same on every rank to within the
 * barrier before the sweep). out (may be NULL) is filled identically on every rank. Returns
 * the same status on every rank: AS_OK (also when a stop left trials pending: the caller
 * reads out->stopped), the first failure (relayed), AS_ERR_ARG, AS_ERR_MPI, AS_ERR_NOMEM. */
as_status as_group_run(MPI_Comm comm, const as_group_item *items, uint64_t n, double t0,
                       double time_limit, const as_group_ops *ops, as_group_summary *out);

#endif /* ATTNSWEEP_GROUP_H */
