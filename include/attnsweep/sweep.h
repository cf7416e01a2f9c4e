/* attnsweep/sweep.h: a whole sweep from a parsed spec to a complete results file.
 *
 * What `attnsweep run` does, as a function the tests can call:
 *   lock OUT.h5 (rank 0) -> create it, or reopen it (resume: the spec's SHA-256 must match,
 *   journaled records are put back first) -> the trials still pending -> coordinator/worker
 *   scheduling (sched.h): each rank runs trials with its pipeline, writes their bulk data and
 *   sinks their records into its journal and /trials -> close (collective) -> unlock.
 * A trial is a pure function of (spec, index): records are identical for any rank count.
 * A shard (opts.shard_*, shard.h) is the same with only the shard's trials to do; its file
 * records which shard it is (root attributes), and a resume continues that shard.
 */
#ifndef ATTNSWEEP_SWEEP_H
#define ATTNSWEEP_SWEEP_H

#include <mpi.h>
#include <stdio.h>

#include "attnsweep/results.h"
#include "attnsweep/sched.h"
#include "attnsweep/spec.h"
#include "attnsweep/status.h"

typedef struct as_sweep_opts {
  int resume;               /* 1: continue an existing OUT.h5 (run only what it lacks) */
  int force;                /* 1: replace an existing OUT.h5 (without resume) */
  int allow_spec_change;    /* 1: resume although the spec's SHA-256 differs (experts) */
  int retry_failed;         /* 1 (with resume): run the failed and non-finite trials again
                               (as_outset_is_retryable); their rows are overwritten */
  double progress_interval; /* seconds between progress lines (0: none) */
  FILE *progress;           /* where progress goes (rank 0), NULL: none */
  int progress_tty;         /* as as_sched_opts.progress_tty: 1 live bar, 0 lines, -1 auto */
  double time_limit;        /* stop handing out work after so many seconds (0: none) */
  double flush_interval;    /* bound on the delay before a record reaches the file [s];
                               < 0: the spec's flush_interval */
  int coordinator_runs;     /* as as_sched_opts.coordinator_runs (-1 auto) */
  uint32_t shard_index;     /* with shard_count > 0: run only the trials of shard         */
  uint32_t shard_count;     /* shard_index of shard_count (shard.h); path is the shard's file.
                               0: the whole sweep, or on resume whatever shard path is */
  const char *spec_path;    /* the spec file read (NULL: none); never written over */
  int allow_input_change;   /* 1: resume although an input file's SHA-256 changed (experts) */
} as_sweep_opts;

/* Defaults: no resume, progress every 10 s to stderr (bar or lines: auto), no time limit, the
 * spec's flush interval, coordinator mode automatic. */
void as_sweep_opts_default(as_sweep_opts *o);

typedef struct as_sweep_result {
  uint64_t total;        /* trials of the spec */
  uint64_t shard_trials; /* rank 0: trials of the shard run (0: not a shard) */
  uint32_t shard_index;  /* rank 0: the shard run, I of N (0 of 0: the whole sweep) */
  uint32_t shard_count;
  uint64_t skipped;           /* already done (resume) */
  uint64_t recovered;         /* records put back from journals (resume) */
  uint64_t done;              /* trials run by this call */
  uint64_t failed;            /* ... of which failed or non-finite */
  uint64_t retried;           /* failed or non-finite rows run again (retry_failed) */
  uint64_t failed_total;      /* rows of the file failed or non-finite after this call (rank 0;
                                 the ones kept from before plus `failed`) */
  double elapsed;             /* seconds */
  int tidied;                 /* rank 0: 1 when the side files were removed (as_outset_tidy) */
  uint64_t journal_differing; /* rank 0: journal entries that differ from their rows (kept) */
  as_status tidy_status;      /* rank 0: a failure of the tidy (the sweep is still complete) */
  uint64_t damaged_rows;      /* rank 0, resume: rows that failed their checksum, set to pending
                                 (restored from a journal entry where one is valid, else run) */
  uint64_t damaged_bulk;      /* rank 0, resume: done rows whose bulk data failed their
                                 checksum, set to pending and run again */
  int unverified;             /* rank 0, resume: the file has no checksums (an older file) */
  int counted;                /* 1: the close counted the file's rows (the next field holds) */
  uint64_t not_converged;     /* rows of the file with outcome not_converged at the close */
} as_sweep_result;

/* Run spec into path. Collective on comm; every rank parsed the same spec. Returns the same
 * status on every rank: AS_OK (the file is complete), AS_ERR_INTERRUPTED (a stop left trials
 * pending; resumable), AS_ERR_BUSY (another run holds the file), AS_ERR_ARG (the file exists
 * and neither resume nor force), AS_ERR_MISMATCH (resume with another spec), I/O errors. */
as_status as_sweep_run(MPI_Comm comm, const as_spec *spec, const char *path,
                       const as_sweep_opts *opts, as_sweep_result *res);

/* Run one trial exactly as a worker of as_sweep_run does (same pipeline, same spectral path,
 * the collective ScaLAPACK analysis for d >= the spec's threshold), without any file: what
 * `attnsweep reproduce` compares with a stored record. Collective on comm (every rank runs
 * the trial; use the result of any). rec receives the record (rank = the calling rank,
 * wall_time as the pipeline left it). bulk[k]: allocated arrays of counts[k] doubles for the
 * bulk kinds the spec stores for this trial (NULL, 0 otherwise); the caller frees them. A
 * failed or interrupted trial may leave them unset (uninitialised values are never read by
 * a comparison that checks the outcome first). Statuses: AS_OK, AS_ERR_ARG (trial outside
 * the sweep), system failures (AS_ERR_NOMEM, AS_ERR_MPI, ...). */
as_status as_sweep_trial(MPI_Comm comm, const as_spec *spec, uint64_t trial, as_record *rec,
                         double *bulk[AS_BULK_COUNT], uint64_t counts[AS_BULK_COUNT]);

#endif
