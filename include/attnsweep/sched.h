/* attnsweep/sched.h: coordinator/worker scheduling of trial indices over MPI.
 *
 * Generic over the work: the caller gives the trial indices to run and three callbacks (cost
 * estimate, run one trial into a record, sink a batch of finished records). Rank 0 is the
 * coordinator. It orders the indices by decreasing estimated cost (stable: ties by
 * increasing index) and hands them out in chunks by guided self-scheduling:
 *
 *     chunk = clamp(ceil(remaining / (k * P)), min_chunk, max_chunk)
 *
 * with P the number of ranks that run trials. Workers ask for their next chunk while they
 * still hold `prefetch` trials, so the request latency is hidden behind a trial. For small
 * rank counts the coordinator also runs trials itself, one at a time, servicing requests
 * between them; for large rank counts it only coordinates and sleeps between messages
 * (MPI_Iprobe + nanosleep backoff: it never burns a core waiting). With one rank, rank 0
 * does everything. Records never travel to the coordinator: each rank sinks the records it
 * produced (the results file is written independently by every rank).
 *
 * Stops. The scheduler polls as_signals_flag() (signals.h) between trials. A stop seen on
 * any rank (signal, as_signals_request_stop(), opts.time_limit) stops the assignment of work
 * everywhere: a worker reports it to the coordinator, the coordinator tells every worker
 * that still holds work, each rank abandons the trials it has not started, sets its own
 * stop flag, sinks every finished record and returns AS_ERR_INTERRUPTED (exit 99). A trial
 * already running finishes, unless it polls the flag itself (the integrator does) and ends
 * early with outcome AS_OUT_INTERRUPTED; such a record is still sunk, and counted as not
 * done for the purpose of "interrupted". docs/scheduling.md has the details and figures.
 */
#ifndef ATTNSWEEP_SCHED_H
#define ATTNSWEEP_SCHED_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "attnsweep/record.h"
#include "attnsweep/status.h"

/* Above this many ranks the coordinator (auto mode) stops running trials itself. */
#define AS_SCHED_COORD_RUNS_MAX 32

typedef struct as_sched_opts {
  int k;                    /* guided self-scheduling divisor (chunk ~ remaining / (k P)); >= 1 */
  int min_chunk;            /* smallest chunk handed to a worker [trials]; >= 1 */
  int max_chunk;            /* largest chunk [trials]; >= min_chunk (bounds message size) */
  int prefetch;             /* a worker asks for more while it holds this many trials; >= 0 */
  int batch_max;            /* records per sink call at most; >= 1 */
  double flush_interval;    /* a finished record waits at most this long for its sink [s];
                               0 = sink every record at once */
  double progress_interval; /* progress line on rank 0 every so many seconds; 0 = none */
  FILE *progress;           /* stream for progress lines (rank 0); NULL = none */
  int progress_tty;         /* 1: live \r bar, 0: plain lines, -1: bar iff progress is a
                               terminal, or the stderr of the mpiexec that started this rank is
                               (docs/scheduling.md) */
  int coordinator_runs;     /* 1: rank 0 also runs trials, 0: it only coordinates (when there
                               are other ranks), -1: runs iff size <= AS_SCHED_COORD_RUNS_MAX */
  double time_limit;        /* seconds after the start at which the coordinator stops handing
                               out work, like a signal (AS_ERR_INTERRUPTED); 0 = none */
  int run_width;            /* trials offered to ops->run_batch at a time (1..batch_max); chunks
                               are rounded up to a multiple of it so that they batch well */
} as_sched_opts;

/* Defaults: k 2, min_chunk 1, max_chunk 256, prefetch 1, batch_max 64, flush_interval 1 s,
 * progress_interval 0 (none), progress NULL, progress_tty -1, coordinator_runs -1,
 * time_limit 0, run_width 1. Not collective. */
void as_sched_opts_default(as_sched_opts *o);

typedef struct as_sched_ops {
  /* Estimated cost of a trial (any unit; only the order matters). Called on rank 0 once per
   * index before the sweep. NULL: keep the order of todo. NaN sorts last. */
  double (*cost)(uint64_t trial, void *ctx);
  /* Run one trial on the calling rank and fill rec (zeroed before the call). Must set
   * rec->trial = trial. Trial failures are outcomes in the record (AS_OUT_FAILED ...) and
   * return AS_OK; any other status aborts the sweep on all ranks. The scheduler then sets
   * rec->rank, and rec->wall_time when the callback left it NaN or 0. Required. */
  as_status (*run)(uint64_t trial, as_record *rec, void *ctx);
  /* Receive finished records on the rank that ran them, in batches of 1..batch_max, no
   * record older than flush_interval (checked between trials), and at the end. Every record
   * produced is sunk exactly once, also when the sweep stops early or aborts. The pointer is
   * valid only during the call. An error status aborts the sweep. Required. */
  as_status (*sink)(const as_record *recs, int count, void *ctx);
  /* Optional trace, called on rank 0 in assignment order for every chunk handed out (to
   * `rank`, 0 for the coordinator's own trials). NULL = none. */
  void (*assigned)(int rank, const uint64_t *trials, int count, void *ctx);
  void *ctx; /* passed to every callback; borrowed */
  /* Optional: run the leading trials of trials[0..count) together (batch.h) and fill
   * recs[0..*used) like `run` would, 1 <= *used <= count (a trial that does not batch with the
   * next is run alone, *used = 1). Called instead of `run` with the trials a rank holds, up to
   * run_width (opts) at a time. NULL: `run` only. */
  as_status (*run_batch)(const uint64_t *trials, int count, as_record *recs, int *used, void *ctx);
} as_sched_ops;

typedef struct as_sched_summary {
  int nranks;           /* ranks of comm */
  uint64_t total;       /* trials in the to-do list */
  uint64_t done;        /* records produced and sunk, all ranks */
  uint64_t failed;      /* ... with outcome failed or nonfinite */
  uint64_t interrupted; /* ... with outcome interrupted (cut short by the stop flag) */
  uint64_t not_run;     /* total - done */
  uint64_t chunks;      /* chunks handed out (the coordinator's own trials count 1 each) */
  uint64_t my_done;     /* records produced by the calling rank */
  int stopped;          /* 1 if a stop (signal, request, time limit) was seen on any rank */
  double elapsed;       /* wall seconds of the sweep on rank 0 */
  double coord_service; /* seconds rank 0 spent servicing worker messages */
  uint64_t *rank_done;  /* rank 0: records per rank, nranks entries (owned; freed by
                           as_sched_summary_clear); NULL on other ranks */
} as_sched_summary;

/* Free what a summary owns and zero it. Accepts a zeroed summary. */
void as_sched_summary_clear(as_sched_summary *s);

/* Run the trials of todo across the ranks of comm. Collective on comm.
 *   todo, n_todo  trial indices (e.g. only the missing ones when resuming); read on rank 0
 *                 only (others may pass NULL, 0). Duplicates are AS_ERR_ARG.
 *   opts          the values on rank 0 are used everywhere (broadcast); NULL = defaults.
 *   ops           callbacks, on every rank.
 *   out           summary (may be NULL), filled on every rank, also on an error or a stop;
 *                 clear it with as_sched_summary_clear.
 * Returns, identically on every rank: AS_OK when every trial produced a record; the status of
 * the first failing callback (lowest rank; its message is relayed to all ranks) after every
 * rank has stopped cleanly; AS_ERR_INTERRUPTED when a stop left trials not done;
 * AS_ERR_ARG for bad arguments; AS_ERR_MPI/AS_ERR_NOMEM for system failures (an MPI failure
 * may leave other ranks waiting). Communicates on a duplicate of comm. */
as_status as_sched_run(MPI_Comm comm, const uint64_t *todo, uint64_t n_todo,
                       const as_sched_opts *opts, const as_sched_ops *ops, as_sched_summary *out);

#endif /* ATTNSWEEP_SCHED_H */
