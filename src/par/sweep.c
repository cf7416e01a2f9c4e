/* sweep.c: a whole sweep, from a parsed spec to a complete results file (sweep.h). */
#include "attnsweep/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnsweep/batch.h"
#include "attnsweep/cost.h"
#include "attnsweep/group.h"
#include "attnsweep/iocheck.h"
#include "attnsweep/journal.h"
#include "attnsweep/matfile.h"
#include "attnsweep/outset.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/pspectral.h"
#include "attnsweep/results.h"
#include "attnsweep/shard.h"
#include "attnsweep/signals.h"

/* Records per sink call (and per journal batch). */
#define SWEEP_BATCH 1024
#define SWEEP_BATCH_WORK 2.5e6 /* largest as_cost_work of a batched trial: about 5 ms */

void as_sweep_opts_default(as_sweep_opts *o) {
  memset(o, 0, sizeof *o);
  o->progress_interval = 10.0;
  o->progress = stderr;
  o->progress_tty = -1;
  o->flush_interval = -1.0;
  o->coordinator_runs = -1;
}

/* Spectral analyses of large triples, made collectively before the sweep (ScaLAPACK needs every
 * rank of the grid at once, which a worker running one trial cannot have). Sorted by trial. */
typedef struct big_cache {
  uint64_t *trial;  /* trial indices, increasing */
  as_spectral **sp; /* their analyses */
  int *failed;      /* the status of a failed collective analysis (AS_OK: none; a trial problem
                       of status.h: the trial is recorded as failed) */
  char (*msg)[AS_RECORD_MSG]; /* its message */
  uint64_t count;
} big_cache;

/* Rank 0's one pass over the to-do list (phase_todo): what the later phases ask of each trial,
 * its d (the analyses of large triples), its ranks (the group phase) and its cost (the order of
 * the scheduler and the width of its runs), each trial expanded once (as_spec_trial, and a
 * T_decide trial's horizon analysed once by as_cost_work): four passes over the trials used to
 * expand each one again. In todo's order, compacted with it. */
typedef struct trial_plan {
  int32_t d;     /* -1: the trial did not expand (the phase that needs it asks again) */
  int32_t ranks; /* as_cost_trial_ranks */
  double cost;   /* as_cost_work; NaN when the trial did not expand */
} trial_plan;

typedef struct sweep_ctx {
  const as_spec *spec;
  big_cache big;
  int threshold;    /* d from which analyses come from the cache */
  uint64_t current; /* trial being run (for the spectral hook) */
  as_matfile *mf;   /* matrices and tokens of the last file trial (reused while they fit) */
  as_results *rf;
  as_journal *journal;
  as_pipeline *pl;
  int rank;
  double *buf[AS_BULK_COUNT]; /* bulk buffers, grown to the largest trial seen */
  size_t cap[AS_BULK_COUNT];  /* their capacities [doubles] */
  int job_ranks;              /* ranks of the sweep (a trial asking for more fails); 0: no check */
  int part;                   /* this rank's part of the trial over several ranks (0: leader) */
  const trial_plan *plan;     /* rank 0, the scheduler's order: the plan of plan_todo's trials */
  const uint64_t *plan_todo;
  uint64_t plan_n, plan_at; /* entries; the next one the scheduler is expected to ask for */
} sweep_ctx;

/* The index of trial in the increasing list a[0..n), or -1. */
static int64_t find_trial(const uint64_t *a, uint64_t n, uint64_t trial) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < trial)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && a[lo] == trial ? (int64_t)lo : -1;
}

static int64_t big_find(const big_cache *b, uint64_t trial) {
  return find_trial(b->trial, b->count, trial);
}

static void big_free(big_cache *b) {
  for (uint64_t i = 0; i < b->count; i++) as_spectral_destroy(&b->sp[i]);
  free(b->trial);
  free(b->sp);
  free(b->failed);
  free(b->msg);
  memset(b, 0, sizeof *b);
}

/* The pipeline's spectral hook: large triples from the collective pre-pass. The pipeline
 * analyses those below the threshold itself (as_pipeline_set_spectral_below); should one reach
 * the hook, it is analysed with LAPACK here. */
static as_status spectral_hook(const as_triple *tr, double tol, as_spectral *sp, void *vctx) {
  as_status st = AS_OK;
  sweep_ctx *c = vctx;
  if (tr->d < c->threshold) return as_spectral_analyze(tr, tol, sp);
  int64_t k = big_find(&c->big, c->current);
  AS_CHECK(k >= 0, AS_ERR_INTERNAL, "trial %llu: no collective spectral analysis for d = %d",
           (unsigned long long)c->current, tr->d);
  AS_CHECK(c->big.failed[k] == AS_OK, (as_status)c->big.failed[k], "%s", c->big.msg[k]);
  AS_TRY(as_spectral_copy(c->big.sp[k], sp));
cleanup:
  return st;
}

/* The pre-pass's builder: the triple of big trial k, from (spec, index) alone, on the first
 * rank of the grid that analyses it. A bad matrix file is that trial's failure. */
typedef struct big_build {
  const as_spec *spec;
  const uint64_t *trial;
} big_build;

static as_status build_big(uint64_t k, void *vctx, as_triple **out) {
  as_status st = AS_OK;
  const big_build *bb = vctx;
  as_matfile *mf = NULL;
  as_triple *tr = NULL;
  as_trial t;
  AS_TRY(as_spec_trial(bb->spec, bb->trial[k], &t));
  AS_TRY(as_matfile_load(&t, &mf));
  AS_TRY(as_triple_create(t.d, t.triple.m_rows > 0 ? t.triple.m_rows : t.d, &tr));
  AS_TRY(as_triple_build(&t, tr));
  *out = tr;
  tr = NULL;
cleanup:
  as_triple_destroy(&tr);
  as_matfile_destroy(&mf);
  return st;
}

static as_status agree(MPI_Comm comm, as_status st);

/* Rank 0 of a resume: the done rows that are failed or non-finite (as_outset_is_retryable).
 * They count into r->failed_total, or with retry they become to-do again (done[i] = 0, no
 * longer skipped; r->retried). Reads /trials in blocks. */
static as_status scan_retryable(as_results *rf, uint8_t *done, uint64_t n_trials, int retry,
                                as_sweep_result *r) {
  as_status st = AS_OK;
  enum { BLOCK = 4096 };
  as_record *buf = malloc(BLOCK * sizeof *buf);
  AS_CHECK_ALLOC(buf);
  for (uint64_t b = 0; b < n_trials; b += BLOCK) {
    size_t k = n_trials - b < BLOCK ? (size_t)(n_trials - b) : BLOCK;
    AS_TRY(as_results_read_records(rf, b, k, buf));
    for (size_t i = 0; i < k; i++) {
      if (!done[b + i] || !as_outset_is_retryable(&buf[i])) continue;
      if (retry) {
        done[b + i] = 0;
        r->retried++;
        if (r->skipped) r->skipped--;
      } else {
        r->failed_total++;
      }
    }
  }
cleanup:
  free(buf);
  return st;
}

/* Rank 0 of a resume: n_rows pending fill records for the rows listed (the records of
 * damaged rows are not results: nothing is journaled). */
static as_status reset_rows(as_results *rf, const uint64_t *rows, size_t n_rows) {
  as_status st = AS_OK;
  enum { BLOCK = 256 };
  as_record *buf = malloc(BLOCK * sizeof *buf);
  AS_CHECK_ALLOC(buf);
  for (size_t b = 0; b < n_rows; b += BLOCK) {
    size_t k = n_rows - b < BLOCK ? n_rows - b : BLOCK;
    for (size_t i = 0; i < k; i++) {
      as_record_init(&buf[i], NULL);
      buf[i].trial = rows[b + i];
    }
    AS_TRY(as_results_write_records(rf, buf, k));
  }
cleanup:
  free(buf);
  return st;
}

/* Rank 0 of a resume, before the journals' records are put back: every row and bulk slab is
 * checked against its checksum (results.h). A damaged row becomes pending (reset in the file,
 * done[i] = 0): a valid journal entry restores it, else it runs again. A row whose bulk data
 * are damaged becomes pending too and must run again (a journal holds no bulk data): flags[i]
 * = AS_VERIFY_BULK, done[i] stays 1 until the caller has recovered the journals. */
static as_status verify_rows(as_results *rf, uint8_t *done, uint8_t *flags, uint64_t n_trials,
                             as_sweep_result *r) {
  as_status st = AS_OK;
  uint64_t *rows = NULL;
  size_t n_rows = 0;
  as_results_verify_counts vc;
  AS_TRY(as_results_verify(rf, 0, n_trials, flags, &vc));
  r->unverified = !vc.verified;
  r->damaged_rows = vc.rows_bad;
  r->damaged_bulk = vc.bulk_bad;
  if (!vc.rows_bad && !vc.bulk_bad) goto cleanup;
  rows = malloc((size_t)(vc.rows_bad + vc.bulk_bad) * sizeof *rows);
  AS_CHECK_ALLOC(rows);
  for (uint64_t i = 0; i < n_trials; i++) {
    if (!flags[i]) continue;
    rows[n_rows++] = i;
    if (flags[i] == AS_VERIFY_ROW) done[i] = 0;
  }
  AS_TRY(reset_rows(rf, rows, n_rows));
cleanup:
  free(rows);
  return st;
}

/* Rank 0 of a resume, after the journals' records were put back: the rows restored (pending
 * before: before[i] == 0) whose bulk data fail their checksum (a row reset by repair) go back
 * to pending and run again. */
static as_status verify_recovered(as_results *rf, uint8_t *done, const uint8_t *before,
                                  uint64_t n_trials, as_sweep_result *r) {
  as_status st = AS_OK;
  for (uint64_t i = 0; i < n_trials; i++) {
    if (!done[i] || before[i]) continue;
    uint8_t f = 0;
    as_results_verify_counts vc;
    AS_TRY(as_results_verify(rf, i, 1, &f, &vc));
    if (!f) continue;
    AS_TRY(reset_rows(rf, &i, 1));
    done[i] = 0;
    r->recovered--;
    r->damaged_bulk++;
  }
cleanup:
  return st;
}

/* Collective: analyse on the spec's BLACS grids (pspectral.h) every trial of todo (rank 0's
 * list) whose d reaches the threshold, before the sweep. A failure of one analysis is that
 * trial's failure, not the sweep's; a stop signal ends it with AS_ERR_INTERRUPTED. */
static as_status big_prepass(MPI_Comm comm, sweep_ctx *c, const uint64_t *todo,
                             const trial_plan *plan, uint64_t n_todo, FILE *progress,
                             double progress_interval) {
  as_status st = AS_OK, lst = AS_OK;
  int rank = 0;
  uint64_t nbig = 0;
  uint64_t *list = NULL;
  as_status *ist = NULL;
  as_pspectral *ps = NULL;
  AS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  as_error_context_set(rank, -1);
  if (rank == 0) {
    list = malloc((n_todo ? n_todo : 1) * sizeof *list);
    if (!list) lst = as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "big trials list");
    for (uint64_t i = 0; i < n_todo && lst == AS_OK; i++) {
      as_trial t;
      if (plan && plan[i].d >= 0) {
        t.d = plan[i].d;
      } else {
        lst = as_spec_trial(c->spec, todo[i], &t);
      }
      if (lst == AS_OK && t.d >= c->threshold) list[nbig++] = todo[i];
    }
  }
  AS_TRY(agree(comm, lst));
  AS_MPI_CHECK(MPI_Bcast(&nbig, 1, MPI_UINT64_T, 0, comm));
  if (nbig == 0) goto cleanup;
  big_cache *b = &c->big;
  if (rank != 0) list = malloc(nbig * sizeof *list);
  b->sp = calloc(nbig, sizeof *b->sp);
  b->failed = calloc(nbig, sizeof *b->failed);
  b->msg = calloc(nbig, sizeof *b->msg);
  ist = calloc(nbig, sizeof *ist);
  lst = list && b->sp && b->failed && b->msg && ist
            ? AS_OK
            : as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "big trials cache");
  AS_TRY(agree(comm, lst));
  AS_MPI_CHECK(MPI_Bcast(list, (int)nbig, MPI_UINT64_T, 0, comm));
  /* todo is in index order, so list is sorted. */
  b->trial = list;
  list = NULL;
  b->count = nbig;
  for (uint64_t i = 0; i < nbig && lst == AS_OK; i++) {
    as_trial t;
    lst = as_spec_trial(c->spec, b->trial[i], &t);
    if (lst == AS_OK) lst = as_spectral_create(t.d, &b->sp[i]);
  }
  AS_TRY(agree(comm, lst));
  int nprow = 1, npcol = 1;
  as_spec_spectral_grid(c->spec, &nprow, &npcol);
  AS_TRY(as_pspectral_create(comm, c->threshold, nprow, npcol, &ps));
  char what[64];
  snprintf(what, sizeof what, "d >= %d", c->threshold);
  big_build bb = {c->spec, b->trial};
  as_pspectral_batch batch = {nbig,     build_big,         &bb, 1e-10, as_signals_flag(),
                              progress, progress_interval, what};
  AS_TRY(as_pspectral_run(ps, &batch, b->sp, ist, b->msg));
  for (uint64_t i = 0; i < nbig; i++) {
    b->failed[i] = (int)ist[i];
    /* Bugs are not data: an analysis that failed for another reason than the trial's own
     * numbers or files stops the run, on every rank alike (the statuses are the same). */
    AS_CHECK(ist[i] == AS_OK || as_status_is_trial_problem(ist[i]), ist[i],
             "trial %llu: large-d spectral analysis: %s", (unsigned long long)b->trial[i],
             b->msg[i]);
  }
cleanup:
  as_error_context_set(rank, -1);
  as_pspectral_destroy(&ps);
  free(list);
  free(ist);
  return st;
}

/* A job smaller than the spec's spectral grid cannot analyse its large triples: refused before
 * anything is written (AS_ERR_ARG, exit 2). Only when it has a large trial at all. */
static as_status check_grid_ranks(MPI_Comm comm, const as_spec *spec, int threshold) {
  as_status st = AS_OK, lst = AS_OK;
  int rank = 0, size = 1, nprow = 1, npcol = 1, big = 0;
  AS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  AS_MPI_CHECK(MPI_Comm_size(comm, &size));
  as_spec_spectral_grid(spec, &nprow, &npcol);
  if (size >= nprow * npcol) goto cleanup;
  if (rank == 0) {
    uint64_t n = as_spec_trial_count(spec), first = 0;
    for (uint64_t i = 0; i < n && !big && lst == AS_OK; i++) {
      as_trial t;
      lst = as_spec_trial(spec, i, &t);
      if (lst == AS_OK && t.d >= threshold) {
        big = 1;
        first = i;
      }
    }
    if (big)
      lst = as_error_set(AS_ERR_ARG, __FILE__, __LINE__, __func__,
                         "spectral_grid %dx%d needs at least %d MPI ranks for the trials with d >= "
                         "%d (the first is trial %llu); this job has %d: run it with mpiexec -n %d "
                         "or more",
                         nprow, npcol, nprow * npcol, threshold, (unsigned long long)first, size,
                         nprow * npcol);
  }
  AS_TRY(agree(comm, lst));
cleanup:
  return st;
}

/* A trial that cannot fit in memory is refused before anything is written (AS_ERR_SPEC, exit
 * 2, the trial named): the limit is the spec's memory_limit, else MemAvailable / ranks on the
 * node (the smallest over the nodes); unknown (no /proc/meminfo): not checked. */
static as_status check_memory(MPI_Comm comm, const as_spec *spec) {
  as_status st = AS_OK, lst = AS_OK;
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0, local = 1;
  double limit = as_spec_memory_limit(spec);
  AS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  if (!(limit > 0.0)) {
    AS_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    AS_MPI_CHECK(MPI_Comm_size(node, &local));
    double mine = as_cost_memory_available(local), all = 0.0;
    if (!(mine > 0.0)) mine = INFINITY;
    AS_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MIN, comm));
    limit = isfinite(all) ? all : 0.0;
  }
  if (rank == 0) {
    as_cost_memory_info mi;
    lst = as_cost_memory_scan(spec, limit, &mi);
  }
  AS_TRY(agree(comm, lst));
cleanup:
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  return st;
}

/* The plan's cost of trial (rank 0, once the scheduler runs), or as_cost_work of t (expanded
 * here when t is NULL). The scheduler asks in to-do order: the next entry first, else a binary
 * search. */
static double trial_cost(sweep_ctx *c, uint64_t trial, const as_trial *t) {
  if (c->plan) {
    int64_t i = (int64_t)c->plan_at;
    if (c->plan_at >= c->plan_n || c->plan_todo[i] != trial)
      i = find_trial(c->plan_todo, c->plan_n, trial);
    if (i >= 0) {
      c->plan_at = (uint64_t)i + 1;
      return c->plan[i].cost;
    }
  }
  as_trial mine;
  if (!t) {
    if (as_spec_trial(c->spec, trial, &mine) != AS_OK) return NAN;
    t = &mine;
  }
  return as_cost_work(t);
}

static double cost_cb(uint64_t trial, void *vctx) {
  return trial_cost(vctx, trial, NULL);
}

/* One trial on this rank (the whole of it, or its part c->part of a group: group_run_cb) with
 * the stop flag the integrator polls. */
static as_status run_trial(sweep_ctx *c, uint64_t trial, as_record *rec,
                           const volatile sig_atomic_t *stop) {
  as_status st = AS_OK;
  as_trial t;
  as_error_context_set(c->rank, (int64_t)trial);
  AS_TRY(as_spec_trial(c->spec, trial, &t));
  c->current = trial;

  /* More ranks per trial than the job has: this trial's failure (plan --ranks refuses it). */
  if (c->job_ranks > 0 && t.ranks_per_trial > c->job_ranks) {
    as_status fs = as_error_set(AS_ERR_SPEC, __FILE__, __LINE__, __func__,
                                "trial %llu asks for ranks_per_trial = %d, more than the %d ranks "
                                "of this job",
                                (unsigned long long)trial, t.ranks_per_trial, c->job_ranks);
    AS_TRY(as_trial_failure(&t, fs, 0, rec));
    rec->rank = c->rank;
    goto cleanup;
  }

  /* Matrices and tokens from files, read once for a run of trials that use the same ones; a
   * missing or bad file is this trial's failure, with its message (as_trial_failure). */
  as_status ls = AS_OK;
  if (!as_matfile_reuse(c->mf, &t)) {
    as_matfile_destroy(&c->mf);
    ls = as_matfile_load(&t, &c->mf);
  }
  if (ls != AS_OK) {
    AS_TRY(as_trial_failure(&t, ls, 1, rec));
    rec->rank = c->rank;
    goto cleanup;
  }

  uint64_t counts[AS_BULK_COUNT];
  as_outset_bulk_counts(&t, counts);
  int any = 0;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    if (counts[k] > c->cap[k]) {
      double *p = realloc(c->buf[k], counts[k] * sizeof *p);
      if (!p) { /* this trial's output does not fit: its failure, the sweep goes on */
        as_status fs =
            as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                         "trial %llu: allocation of %.3g GiB of bulk output failed",
                         (unsigned long long)trial, 8.0 * (double)counts[k] / 1073741824.0);
        AS_TRY(as_trial_failure(&t, fs, 0, rec));
        rec->rank = c->rank;
        goto cleanup;
      }
      c->buf[k] = p;
      c->cap[k] = counts[k];
    }
    any |= counts[k] > 0;
  }
  as_bulk bulk = {counts[AS_BULK_INITIAL] ? c->buf[AS_BULK_INITIAL] : NULL,
                  counts[AS_BULK_FINAL] ? c->buf[AS_BULK_FINAL] : NULL,
                  counts[AS_BULK_ATTENTION] ? c->buf[AS_BULK_ATTENTION] : NULL,
                  counts[AS_BULK_V] ? c->buf[AS_BULK_V] : NULL,
                  counts[AS_BULK_M] ? c->buf[AS_BULK_M] : NULL,
                  counts[AS_BULK_SNAPSHOTS] ? c->buf[AS_BULK_SNAPSHOTS] : NULL,
                  counts[AS_BULK_SNAP_CLUSTERS] ? c->buf[AS_BULK_SNAP_CLUSTERS] : NULL};
  AS_TRY(as_trial_run(c->pl, &t, stop, rec, any ? &bulk : NULL));
  rec->rank = c->rank;

  /* Bulk data go to the file before the record: a record in /trials means its data are there.
   * A failed or interrupted trial has none worth keeping; a group's leader writes them. */
  if (any && c->rf && c->part == 0 && rec->outcome != AS_OUT_FAILED &&
      rec->outcome != AS_OUT_INTERRUPTED)
    for (int k = 0; k < AS_BULK_COUNT; k++)
      if (counts[k])
        AS_TRY(as_results_write_bulk(c->rf, (as_bulk_kind)k, trial, c->buf[k], counts[k]));
cleanup:
  as_error_context_set(c->rank, -1);
  return st;
}

static as_status run_cb(uint64_t trial, as_record *rec, void *vctx) {
  return run_trial(vctx, trial, rec, as_signals_flag());
}

/* The group phase's run (group.h): this rank's part of a trial over several ranks. */
static as_status group_run_cb(uint64_t trial, const as_pipeline_group *g,
                              const volatile sig_atomic_t *stop, as_record *rec, void *vctx) {
  sweep_ctx *c = vctx;
  as_pipeline_set_group(c->pl, g);
  c->part = g->part;
  as_status st = run_trial(c, trial, rec, stop);
  as_pipeline_set_group(c->pl, NULL);
  c->part = 0;
  return st;
}

/* The scheduler's batch runner (batch.h): the leading trials of trials[] that batch together
 * (small, base model, no bulk output, no file input, LAPACK spectral analysis) in one
 * as_trial_run_batch call; a trial that does not batch runs alone through run_cb. */
static int plain_small(const sweep_ctx *c, const as_trial *t) {
  uint64_t counts[AS_BULK_COUNT];
  as_outset_bulk_counts(t, counts);
  for (int k = 0; k < AS_BULK_COUNT; k++)
    if (counts[k]) return 0;
  return as_trial_batchable(t) && t->d < c->threshold && t->triple.vfamily != AS_V_FILE &&
         t->triple.mfamily != AS_M_FILE && t->init.kind != AS_INIT_FILE;
}

static as_status run_batch_cb(const uint64_t *trials, int count, as_record *recs, int *used,
                              void *vctx) {
  as_status st = AS_OK;
  sweep_ctx *c = vctx;
  as_trial t[AS_BATCH_LANES];
  int e = 0;
  *used = 1;
  if (count > AS_BATCH_LANES) count = AS_BATCH_LANES;
  for (; e < count; e++) {
    as_error_context_set(c->rank, (int64_t)trials[e]);
    AS_TRY(as_spec_trial(c->spec, trials[e], &t[e]));
    if (!plain_small(c, &t[e]) || !(trial_cost(c, trials[e], &t[e]) <= SWEEP_BATCH_WORK) ||
        (e > 0 && !as_trial_same_batch(&t[0], &t[e])))
      break;
  }
  if (e < 2) {
    AS_TRY(run_cb(trials[0], &recs[0], vctx));
  } else {
    as_pipeline_set_rank(c->pl, c->rank);
    AS_TRY(as_trial_run_batch(c->pl, t, e, as_signals_flag(), recs, NULL));
    for (int k = 0; k < e; k++) recs[k].rank = c->rank;
    *used = e;
  }
cleanup:
  as_error_context_set(c->rank, -1);
  return st;
}

/* The scheduler's sink: a plain call of the one path of records into the set (outset.h:
 * journal, durable, then /trials; an interrupted trial stays pending). The scheduler already
 * decides when (batch_max records, flush_interval seconds), so no second buffer sits here. */
static as_status sink_cb(const as_record *recs, int count, void *vctx) {
  sweep_ctx *c = vctx;
  return as_outset_store(c->rf, c->journal, recs, (size_t)count);
}

/* The same status on every rank: the first failure (most negative code) wins. A rank that
 * did not fail itself records which status the others reported. */
static as_status agree(MPI_Comm comm, as_status st) {
  int mine = (int)st, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return AS_ERR_MPI;
  if (all != AS_OK && st == AS_OK)
    as_error_set((as_status)all, __FILE__, __LINE__, __func__, "another rank failed: %s",
                 as_status_message((as_status)all));
  return (as_status)all;
}

/* Rank 0: which shard path is (opts, or on a resume what the file says it is; a resume with
 * another shard than the file's is refused), and its owners (owner[i] == index: to do). A
 * whole sweep leaves *owner NULL. */
static as_status shard_select(const as_spec *spec, as_results *rf, const char *path,
                              const as_sweep_opts *o, as_sweep_result *r, uint32_t **owner) {
  as_status st = AS_OK;
  uint32_t index = o->shard_index, count = o->shard_count;
  if (o->resume) {
    uint32_t fi = 0, fn = 0;
    AS_TRY(as_shard_identify(rf, path, &fi, &fn));
    AS_CHECK(!count || fn, AS_ERR_MISMATCH,
             "%s is the file of a whole sweep, not shard %u of %u: resume it without --shard", path,
             index, count);
    AS_CHECK(!count || (fi == index && fn == count), AS_ERR_MISMATCH,
             "%s is shard %u of %u, not shard %u of %u: resume it with --shard %u/%u", path, fi, fn,
             index, count, fi, fn);
    index = fi;
    count = fn;
  }
  r->shard_index = index;
  r->shard_count = count;
  if (!count) goto cleanup;
  const uint64_t n = as_spec_trial_count(spec);
  *owner = malloc((n ? n : 1) * sizeof **owner);
  AS_CHECK_ALLOC(*owner);
  AS_TRY(as_shard_owners(spec, count, *owner, NULL));
  for (uint64_t i = 0; i < n; i++) r->shard_trials += (*owner)[i] == index;
cleanup:
  return st;
}

/* ------------------------------------------------------------------ the phases of a sweep
 * as_sweep_run is a sequence of named phases over one state: check the job, claim the output,
 * create the file (or reopen it to resume), list what is left, set up the workers, run the
 * trials over groups of ranks, schedule the rest, close. Each phase is collective on the
 * sweep's communicator and returns the same status on every rank. */
typedef struct sweep_run {
  MPI_Comm comm;
  const as_spec *spec;
  as_sweep_opts opts;
  int rank, size;
  uint64_t n_trials;
  char path[AS_OUTSET_PATH_MAX]; /* the results file under its own name */
  char file_sha[80];             /* the file's spec SHA-256: what its journals are tagged with */
  int respec; /* resume --allow-spec-change with another spec: stored at the close (store_spec) */
  as_outset *claim; /* rank 0: the lock on the output set */
  as_results *rf;
  as_journal *journal;
  as_pipeline *pl;
  sweep_ctx *ctx;
  uint64_t *bulk[AS_BULK_COUNT];
  uint8_t *done, *flags, *done_before; /* rank 0: per trial */
  uint64_t *todo;                      /* rank 0: the trials to run */
  trial_plan *plan;                    /* rank 0: what the phases ask of them (trial_plan) */
  uint64_t n_todo;
  uint32_t *owner;      /* shard runs: the shard of each trial */
  uint64_t *shard_rows; /* shard runs: the trials whose rows this shard's file holds */
  as_sched_summary sum;
  as_group_summary gsum;
  double sched_limit; /* the scheduler's time limit, what the group phase left of it */
  as_sweep_result r;
} sweep_run;

/* Check the job: the BLACS grids of large triples fit the ranks, every trial fits memory. */
static as_status phase_check(sweep_run *w) {
  as_status st = AS_OK;
  int thr = as_spec_spectral_threshold(w->spec);
  AS_TRY(check_grid_ranks(w->comm, w->spec, thr > 0 ? thr : AS_SPECTRAL_THRESHOLD_DEFAULT));
  AS_TRY(check_memory(w->comm, w->spec));
cleanup:
  return st;
}

/* Claim the output: its own name, never one of the sweep's inputs, one run per file. */
static as_status phase_claim(sweep_run *w, const char *given) {
  as_status st = AS_OK;
  MPI_Comm comm = w->comm;
  const int rank = w->rank;
  /* The file under its own name: a symbolic link is followed, so an alias and its target are
   * one set (one lock, one set of journals). Rank 0 decides, every rank uses its answer. */
  as_status lst = AS_OK;
  if (rank == 0) lst = as_outset_resolve(given, w->path, sizeof w->path);
  AS_TRY(agree(comm, lst));
  AS_MPI_CHECK(MPI_Bcast(w->path, (int)sizeof w->path, MPI_CHAR, 0, comm));

  /* Never write the results over a file the sweep reads (the spec, a matrix or token file),
   * whatever the names. */
  if (rank == 0) lst = as_outset_guard_inputs(w->path, w->spec, w->opts.spec_path, w->opts.resume);
  AS_TRY(agree(comm, lst));

  /* One run per results file: rank 0 claims the set (the lock, and for a new sweep no journal
   * of a replaced one) for the whole sweep. */
  if (rank == 0)
    lst = as_outset_claim(w->path,
                          w->opts.resume  ? AS_OUTSET_RESUME
                          : w->opts.force ? AS_OUTSET_REPLACE
                                          : AS_OUTSET_NEW,
                          &w->claim);
  AS_TRY(agree(comm, lst));
cleanup:
  return st;
}

/* A new sweep: the file at its final size from the plan, its spec side copy, the shard. */
static as_status phase_create(sweep_run *w) {
  as_status st = AS_OK;
  MPI_Comm comm = w->comm;
  const int rank = w->rank;
  const char *path = w->path;
  as_status lst = AS_OK;
  /* Layout from the plan (identical on every rank). The spec text also goes beside the
   * file, before the file exists: `attnsweep repair` rebuilds from it when a hard kill left
   * OUT.h5 unreadable (docs/robustness.md). */
  as_results_info info;
  AS_TRY(as_outset_layout(w->spec, &info, w->bulk));
  info.overwrite = w->opts.force;
  snprintf(w->file_sha, sizeof w->file_sha, "%s", as_spec_sha256(w->spec));
  if (w->opts.shard_count) {
    /* A shard's file holds its own rows only (a pure function of spec and split: every
     * rank computes the same list). */
    as_status hst = shard_select(w->spec, NULL, path, &w->opts, &w->r, &w->owner);
    if (hst == AS_OK)
      hst = as_shard_rows(w->owner, w->n_trials, w->opts.shard_index, &w->shard_rows);
    AS_TRY(agree(comm, hst));
    info.rows = w->shard_rows;
    info.n_rows = w->r.shard_trials;
  }
  as_status sst_ = AS_OK;
  if (rank == 0) {
    size_t len = 0;
    const char *text = as_spec_text(w->spec, &len);
    sst_ = as_outset_spec_save(path, text, len);
  }
  AS_TRY(agree(comm, sst_));
  struct stat before;
  int existed = rank == 0 && stat(path, &before) == 0;
  as_status crst = as_results_create(comm, path, &info, &w->rf);
  if (crst != AS_OK && rank == 0) {
    /* Nothing half-made stays behind that a later run or repair could take for results: the
     * new file (unless it is the untouched file --force would have replaced), the spec copy
     * (a resume of an untouched file writes it again from /spec) and the lock file. */
    struct stat now;
    if (stat(path, &now) == 0 && (!existed || now.st_ino != before.st_ino ||
                                  now.st_size != before.st_size || now.st_mtime != before.st_mtime))
      unlink(path);
    char side[AS_OUTSET_PATH_MAX];
    if (as_outset_name(path, AS_SIDE_SPEC, -1, side, sizeof side) == AS_OK) unlink(side);
    if (as_outset_name(path, AS_SIDE_LOCK, -1, side, sizeof side) == AS_OK) unlink(side);
  }
  AS_TRY(crst);
  /* Held by identity from now on, so a hard link to it cannot start a second run. */
  if (rank == 0) lst = as_outset_hold(w->claim, path);
  AS_TRY(agree(comm, lst));
  if (w->opts.shard_count) {
    /* Which shard this file is (collective attribute writes). */
    uint64_t n_shard = w->r.shard_trials;
    AS_TRY(as_results_set_attr_u64(w->rf, AS_SHARD_ATTR_INDEX, w->opts.shard_index));
    AS_TRY(as_results_set_attr_u64(w->rf, AS_SHARD_ATTR_COUNT, w->opts.shard_count));
    AS_TRY(as_results_set_attr_u64(w->rf, AS_SHARD_ATTR_TRIALS, n_shard));
  }
cleanup:
  return st;
}

/* --allow-spec-change: the new spec may change what trials do (the expert's call), never their
 * random draws (docs/robustness.md, "Guards"): the rows done would come from other draws than
 * the rest, and reproduce could not tell. The file's spec is parsed as stored. */
static as_status same_draws(as_results *rf, const char *path, const as_spec *spec) {
  as_status st = AS_OK;
  char *text = NULL;
  as_spec *old = NULL;
  as_spec_diags dg = {0, 0, NULL};
  char why[512] = "";
  AS_TRY(as_results_spec_text(rf, &text));
  if (as_spec_parse(text, strlen(text), path, &dg, &old) != AS_OK) {
    as_error_clear();
    AS_CHECK(0, AS_ERR_MISMATCH,
             "%s: --allow-spec-change: the spec stored in the file does not parse (%s), so "
             "whether this spec keeps the trials' random draws cannot be checked: resume with the "
             "original spec",
             path, dg.count ? dg.items[0].message : "unknown problem");
  }
  AS_CHECK(!as_spec_draws_differ(old, spec, why, sizeof why), AS_ERR_MISMATCH,
           "%s: --allow-spec-change cannot change the trials' random draws (from the file's "
           "spec to this one: %s): the rows done would come from other draws than the rest. "
           "Resume with the original spec, or write a new results file",
           path, why);
cleanup:
  as_spec_destroy(&old);
  as_spec_diags_free(&dg);
  free(text);
  return st;
}

/* Resume: reopen the file, refuse another spec, changed inputs or another shape. */
static as_status phase_reopen(sweep_run *w) {
  as_status st = AS_OK;
  MPI_Comm comm = w->comm;
  const char *path = w->path;
  const as_spec *spec = w->spec;
  AS_TRY(as_results_open(comm, path, AS_RESULTS_WRITE, &w->rf));
  as_status cst = AS_OK;
  if (w->rank == 0) {
    char sha[80] = "";
    uint64_t rows = as_results_n_trials(w->rf);
    cst = as_results_attr_string(w->rf, "spec_sha256", sha, sizeof sha);
    if (cst == AS_OK && strcmp(sha, as_spec_sha256(spec)) != 0 && !w->opts.allow_spec_change)
      cst = as_error_set(AS_ERR_MISMATCH, __FILE__, __LINE__, __func__,
                         "%s was written by another spec (SHA-256 %.12s..., this spec "
                         "%.12s...): resume with the original spec, or pass "
                         "--allow-spec-change if you know the trials are unchanged",
                         path, sha, as_spec_sha256(spec));
    else if (cst == AS_OK && rows != w->n_trials)
      cst = as_error_set(AS_ERR_MISMATCH, __FILE__, __LINE__, __func__,
                         "%s has %llu trials, the spec %llu: cannot resume", path,
                         (unsigned long long)rows, (unsigned long long)w->n_trials);
    else if (cst == AS_OK && strcmp(sha, as_spec_sha256(spec)) != 0)
      cst = same_draws(w->rf, path, spec);
    if (cst == AS_OK) cst = as_outset_inputs_check(w->rf, spec, path, w->opts.allow_input_change);
    /* A file from before the spec side file existed: give it one, from /spec. */
    if (cst == AS_OK) cst = as_outset_spec_ensure(path, w->rf);
    if (cst == AS_OK) cst = shard_select(spec, w->rf, path, &w->opts, &w->r, &w->owner);
    if (cst == AS_OK) snprintf(w->file_sha, sizeof w->file_sha, "%s", sha);
  }
  AS_TRY(agree(comm, cst));
  AS_MPI_CHECK(MPI_Bcast(w->file_sha, (int)sizeof w->file_sha, MPI_CHAR, 0, comm));
  w->respec = strcmp(w->file_sha, as_spec_sha256(spec)) != 0;
cleanup:
  return st;
}

/* What is left to do (rank 0 decides; the scheduler reads todo there only): on a resume, the
 * damaged rows and bulk data become pending, journaled records come back, failed rows stay
 * (or run again with retry_failed). */
static as_status phase_todo(sweep_run *w) {
  as_status st = AS_OK;
  const uint64_t n_trials = w->n_trials;
  as_sweep_result *r = &w->r;
  as_status dst = AS_OK;
  if (w->rank == 0) {
    w->done = calloc(n_trials ? n_trials : 1, 1);
    w->todo = malloc((n_trials ? n_trials : 1) * sizeof *w->todo);
    uint8_t *done = w->done;
    if (!done || !w->todo) {
      dst = as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "to-do list");
    } else if (w->opts.resume) {
      as_results_counts counts;
      dst = as_results_count(w->rf, &counts, done);
      /* Damaged rows and bulk data (checksums) first: they become pending. */
      w->flags = calloc(n_trials ? n_trials : 1, 1);
      w->done_before = calloc(n_trials ? n_trials : 1, 1);
      if (dst == AS_OK && (!w->flags || !w->done_before))
        dst = as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "verification flags");
      if (dst == AS_OK) dst = verify_rows(w->rf, done, w->flags, n_trials, r);
      if (dst == AS_OK) {
        for (uint64_t i = 0; i < n_trials; i++) r->skipped += done[i] && !w->flags[i];
        memcpy(w->done_before, done, n_trials);
        /* done[i] = 1 for a row with damaged bulk data keeps its journal entry out. */
        dst = as_outset_recover_also(w->path, w->rf, w->respec ? as_spec_sha256(w->spec) : NULL,
                                     done, n_trials, &r->recovered);
      }
      if (dst == AS_OK) {
        for (uint64_t i = 0; i < n_trials; i++)
          if (w->flags[i] == AS_VERIFY_BULK) done[i] = 0;
        dst = verify_recovered(w->rf, done, w->done_before, n_trials, r);
      }
      /* The failed and non-finite rows that stay (or, with retry_failed, run again). */
      if (dst == AS_OK) dst = scan_retryable(w->rf, done, n_trials, w->opts.retry_failed, r);
    }
    if (dst == AS_OK)
      for (uint64_t i = 0; i < n_trials; i++)
        if (!done[i] && (!w->owner || w->owner[i] == r->shard_index)) w->todo[w->n_todo++] = i;
    if (dst == AS_OK) {
      w->plan = malloc((w->n_todo ? w->n_todo : 1) * sizeof *w->plan);
      if (!w->plan) dst = as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "trial plan");
    }
    /* A trial's plan is its point's whatever its replicate (trial = replicate * points +
     * point), except where T_decide analyses each trial's own triple: with fewer points than
     * trials to do, each point is expanded once, not once per replicate. An entry of by_point
     * with ranks 0 is not known yet (a plan has ranks >= 1). */
    const uint64_t points = as_spec_point_count(w->spec);
    trial_plan *by_point =
        dst == AS_OK && points < w->n_todo ? calloc(points, sizeof *by_point) : NULL;
    for (uint64_t i = 0; dst == AS_OK && i < w->n_todo; i++) {
      trial_plan *known = by_point ? &by_point[w->todo[i] % points] : NULL;
      if (known && known->ranks > 0) {
        w->plan[i] = *known;
        continue;
      }
      as_trial t;
      if (as_spec_trial(w->spec, w->todo[i], &t) == AS_OK) {
        w->plan[i] = (trial_plan){t.d, as_cost_trial_ranks(&t, w->size), as_cost_work(&t)};
        if (known && !(t.integ.T_decide > 0.0)) *known = w->plan[i];
      } else {
        as_error_clear();
        w->plan[i] = (trial_plan){-1, 1, NAN};
      }
    }
    free(by_point);
  }
  AS_TRY(agree(w->comm, dst));
cleanup:
  return st;
}

/* This rank's journal and pipeline, and the collective analyses of large triples. */
static as_status phase_workers(sweep_run *w) {
  as_status st = AS_OK;
  MPI_Comm comm = w->comm;
  const int rank = w->rank;
  char aside[AS_OUTSET_PATH_MAX + 64] = "", tags[2 * sizeof w->file_sha] = "";
  /* The file's spec tags the journals; while a changed spec is not stored yet (store_spec),
   * a journal already tagged with it (a store that was interrupted) is this sweep's too. */
  snprintf(tags, sizeof tags, "%s%s%s", w->file_sha, w->respec ? "," : "",
           w->respec ? as_spec_sha256(w->spec) : "");
  as_status wst = as_outset_journal_open_spec(
      w->path, rank, SWEEP_BATCH, 3600.0, tags[0] ? tags : NULL, aside, sizeof aside, &w->journal);
  if (wst == AS_OK && aside[0])
    fprintf(stderr,
            "attnsweep run: warning: [rank %d] the header of %s's journal was damaged: it was "
            "set aside as %s (its entries with valid checksums are still read) and a new "
            "journal begun\n",
            rank, w->path, aside);
  if (wst == AS_OK) {
    w->ctx = calloc(1, sizeof *w->ctx);
    if (!w->ctx) wst = as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "sweep context");
  }
  if (wst == AS_OK) wst = as_pipeline_create(spectral_hook, w->ctx, &w->pl);
  AS_TRY(agree(comm, wst));
  sweep_ctx *ctx = w->ctx;
  ctx->spec = w->spec;
  ctx->rf = w->rf;
  ctx->journal = w->journal;
  ctx->pl = w->pl;
  ctx->rank = rank;
  ctx->threshold = as_spec_spectral_threshold(w->spec);
  if (ctx->threshold <= 0) ctx->threshold = AS_SPECTRAL_THRESHOLD_DEFAULT;
  as_pipeline_set_spectral_below(w->pl, ctx->threshold);
  AS_TRY(big_prepass(comm, ctx, w->todo, w->plan, w->n_todo, w->opts.progress,
                     w->opts.progress_interval));
  ctx->job_ranks = w->size;
cleanup:
  return st;
}

/* Trials over several ranks (ranks_per_trial, group.h): a phase of their own, first; rank 0
 * takes them out of todo, every rank learns the list. Leaves the scheduler what is left of the
 * time limit. */
static as_status phase_groups(sweep_run *w) {
  as_status st = AS_OK;
  MPI_Comm comm = w->comm;
  const int rank = w->rank, size = w->size;
  const as_sweep_opts *opts = &w->opts;
  w->sched_limit = opts->time_limit;
  as_group_item *gi = NULL;
  uint64_t ng = 0;
  as_status pst = AS_OK;
  if (rank == 0) {
    gi = malloc((w->n_todo ? w->n_todo : 1) * sizeof *gi);
    if (!gi) pst = as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "group list");
    uint64_t keep = 0;
    for (uint64_t i = 0; i < w->n_todo && pst == AS_OK; i++) {
      const trial_plan p = w->plan[i];
      if (p.ranks >= 2 && p.ranks <= size) {
        gi[ng++] = (as_group_item){w->todo[i], p.ranks, p.cost};
      } else { /* one rank, or more than the job: run_trial records it */
        w->todo[keep] = w->todo[i];
        w->plan[keep++] = p;
      }
    }
    if (pst == AS_OK) w->n_todo = keep;
  }
  as_status gst = agree(comm, pst);
  if (gst == AS_OK && MPI_Bcast(&ng, 1, MPI_UINT64_T, 0, comm) != MPI_SUCCESS)
    gst = as_error_set(AS_ERR_MPI, __FILE__, __LINE__, __func__, "group list: MPI_Bcast");
  if (gst == AS_OK && ng > 0) {
    if (rank != 0) gi = malloc(ng * sizeof *gi);
    gst = agree(comm, gi ? AS_OK
                         : as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "group list"));
    if (gst == AS_OK && MPI_Bcast(gi, (int)(ng * sizeof *gi), MPI_BYTE, 0, comm) != MPI_SUCCESS)
      gst = as_error_set(AS_ERR_MPI, __FILE__, __LINE__, __func__, "group list: MPI_Bcast");
    if (gst == AS_OK && MPI_Barrier(comm) != MPI_SUCCESS)
      gst = as_error_set(AS_ERR_MPI, __FILE__, __LINE__, __func__, "group phase: MPI_Barrier");
    double g0 = MPI_Wtime();
    if (gst == AS_OK && rank == 0 && opts->progress && opts->progress_interval > 0)
      fprintf(opts->progress, "attnsweep: %llu trials on groups of ranks (ranks_per_trial)\n",
              (unsigned long long)ng);
    as_group_ops gops = {group_run_cb, sink_cb, w->ctx, opts->progress, opts->progress_interval};
    if (gst == AS_OK) gst = as_group_run(comm, gi, ng, g0, opts->time_limit, &gops, &w->gsum);
    if (opts->time_limit > 0) {
      w->sched_limit = opts->time_limit - (MPI_Wtime() - g0);
      if (w->sched_limit < 1e-3) w->sched_limit = 1e-3;
    }
  }
  free(gi);
  AS_TRY(gst);
cleanup:
  return st;
}

/* The rest through the coordinator/worker scheduler (sched.h); the run's counts. */
static as_status phase_schedule(sweep_run *w) {
  as_status st = AS_OK;
  const as_sweep_opts *opts = &w->opts;
  as_sched_opts so;
  as_sched_opts_default(&so);
  so.batch_max = SWEEP_BATCH;
  so.flush_interval =
      opts->flush_interval >= 0 ? opts->flush_interval : as_spec_flush_interval(w->spec);
  so.progress_interval = opts->progress_interval;
  so.progress = opts->progress;
  so.progress_tty = opts->progress_tty;
  so.coordinator_runs = opts->coordinator_runs;
  so.time_limit = w->sched_limit;
  /* Small trials of one shape run as batches (batch.h), chunks in multiples of the batch:
   * only where every trial is cheap (sampled: work <= SWEEP_BATCH_WORK, about 5 ms), so that
   * a batch is never the long pole of a drain or a --time-limit stop. */
  so.run_width = AS_BATCH_LANES;
  const uint64_t stride = w->n_todo > 4096 ? w->n_todo / 4096 : 1;
  for (uint64_t i = 0; w->rank == 0 && i < w->n_todo && so.run_width > 1; i += stride)
    if (!(w->plan[i].cost <= SWEEP_BATCH_WORK)) so.run_width = 1;
  if (w->rank == 0) {
    w->ctx->plan = w->plan;
    w->ctx->plan_todo = w->todo;
    w->ctx->plan_n = w->n_todo;
    w->ctx->plan_at = 0;
  }
  as_sched_ops ops = {cost_cb, run_cb, sink_cb, NULL, w->ctx, run_batch_cb};
  as_status sst = as_sched_run(w->comm, w->todo, w->n_todo, &so, &ops, &w->sum);
  const as_sched_summary *sum = &w->sum;
  const as_group_summary *gsum = &w->gsum;
  w->r.done = sum->done - sum->interrupted + gsum->done - gsum->interrupted;
  w->r.failed = sum->failed + gsum->failed;
  w->r.failed_total += w->r.failed;
  st = sst;
  /* A stop in the group phase left its trials pending even when the scheduler had none. */
  if (st == AS_OK && gsum->stopped && gsum->skipped + gsum->interrupted > 0)
    st = as_error_set(AS_ERR_INTERRUPTED, __FILE__, __LINE__, __func__,
                      "sweep stopped: %llu trials over several ranks not done",
                      (unsigned long long)(gsum->skipped + gsum->interrupted));
  return st;
}

/* Close in order; the first failure is the one reported (st is the sweep's status so far).
 * Collective close on every path that opened the file. A clean close of a complete sweep:
 * the side files go, once every journaled record is verified in the file (outset.h). Still
 * under the lock; a failure here leaves them and is reported, but the sweep is complete. */
/* A resume with --allow-spec-change stores the new spec once the file is closed (cleanly:
 * done, or stopped and resumable), so that the file says what ran: a later resume, repair,
 * reproduce and status read it. By rank 0 under the lock, no process having the file open
 * (a collective rewrite of /spec meets HDF5's collective metadata reads with caches that
 * differ between ranks). The journals are tagged with it first, then the spec copy, then the
 * file: interrupted in between, the same resume command completes it (its recovery and its
 * journals take either spec's tag). */
static as_status store_spec(sweep_run *w) {
  as_status st = AS_OK;
  size_t len = 0;
  const char *text = as_spec_text(w->spec, &len);
  const char *sha = as_spec_sha256(w->spec);
  AS_TRY(as_outset_retag(w->path, sha));
  AS_TRY(as_outset_spec_save(w->path, text, len));
  AS_TRY(as_results_store_spec(w->path, text, sha, as_spec_name(w->spec)));
  snprintf(w->file_sha, sizeof w->file_sha, "%s", sha);
cleanup:
  return st;
}

static as_status phase_close(sweep_run *w, as_status st) {
  as_status cst = as_journal_close(&w->journal);
  if (st == AS_OK && cst != AS_OK) st = cst;
  if (w->rf) {
    as_results_counts counts;
    cst = as_results_close_counted(&w->rf, &counts);
    if (st == AS_OK && cst != AS_OK) st = cst;
    w->r.counted = cst == AS_OK && counts.total > 0;
    w->r.not_converged = counts.outcome[AS_OUT_NOT_CONVERGED];
    if (w->respec && w->claim && cst == AS_OK && (st == AS_OK || st == AS_ERR_INTERRUPTED)) {
      const as_status sst = store_spec(w);
      if (sst != AS_OK) st = sst;
    }
  }
  if (st == AS_OK && w->claim) {
    w->r.tidy_status = as_outset_tidy(w->path, &w->r.journal_differing);
    w->r.tidied = w->r.tidy_status == AS_OK && w->r.journal_differing == 0;
    if (w->r.tidy_status != AS_OK) as_error_clear();
  }
  as_outset_release(&w->claim);
  as_pipeline_destroy(&w->pl);
  if (w->ctx) {
    for (int k = 0; k < AS_BULK_COUNT; k++) free(w->ctx->buf[k]);
    big_free(&w->ctx->big);
    as_matfile_destroy(&w->ctx->mf);
  }
  free(w->ctx);
  w->ctx = NULL;
  as_outset_layout_free(w->bulk);
  free(w->done);
  free(w->flags);
  free(w->done_before);
  free(w->todo);
  free(w->plan);
  free(w->owner);
  free(w->shard_rows);
  as_sched_summary_clear(&w->sum);
  return st;
}

as_status as_sweep_run(MPI_Comm comm, const as_spec *spec, const char *given,
                       const as_sweep_opts *opts_in, as_sweep_result *res) {
  as_status st = AS_OK;
  const double t0 = MPI_Wtime();
  sweep_run *w = calloc(1, sizeof *w);
  if (!w) return as_error_set(AS_ERR_NOMEM, __FILE__, __LINE__, __func__, "sweep state");
  w->comm = comm;
  w->spec = spec;
  if (opts_in)
    w->opts = *opts_in;
  else
    as_sweep_opts_default(&w->opts);
  AS_MPI_CHECK(MPI_Comm_rank(comm, &w->rank));
  AS_MPI_CHECK(MPI_Comm_size(comm, &w->size));
  w->n_trials = as_spec_trial_count(spec);
  w->r.total = w->n_trials;

  AS_TRY(phase_check(w));
  AS_TRY(phase_claim(w, given));
  AS_TRY(w->opts.resume ? phase_reopen(w) : phase_create(w));
  AS_TRY(phase_todo(w));
  AS_TRY(phase_workers(w));
  AS_TRY(phase_groups(w));
  st = phase_schedule(w);

cleanup:
  st = phase_close(w, st);
  w->r.elapsed = MPI_Wtime() - t0;
  if (res) *res = w->r;
  free(w);
  return st;
}

as_status as_sweep_trial(MPI_Comm comm, const as_spec *spec, uint64_t trial, as_record *rec,
                         double *bulk[AS_BULK_COUNT], uint64_t counts[AS_BULK_COUNT]) {
  as_status st = AS_OK;
  sweep_ctx *ctx = NULL;
  as_pipeline *pl = NULL;
  int rank = 0;
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    bulk[k] = NULL;
    counts[k] = 0;
  }
  AS_CHECK(spec && rec && trial < as_spec_trial_count(spec), AS_ERR_ARG,
           "trial %llu is not in the sweep (%llu trials)", (unsigned long long)trial,
           (unsigned long long)(spec ? as_spec_trial_count(spec) : 0));
  AS_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  ctx = calloc(1, sizeof *ctx);
  AS_CHECK_ALLOC(ctx);
  ctx->spec = spec;
  ctx->rank = rank;
  ctx->threshold = as_spec_spectral_threshold(spec);
  if (ctx->threshold <= 0) ctx->threshold = AS_SPECTRAL_THRESHOLD_DEFAULT;
  AS_TRY(as_pipeline_create(spectral_hook, ctx, &pl));
  as_pipeline_set_spectral_below(pl, ctx->threshold);
  ctx->pl = pl;
  /* Exactly what a worker does: the collective analysis of a large triple first, then the
   * trial with the same pipeline and hook (ctx->rf NULL: nothing is written). */
  AS_TRY(big_prepass(comm, ctx, &trial, NULL, 1, NULL, 0));
  memset(rec, 0, sizeof *rec);
  AS_TRY(run_cb(trial, rec, ctx));
  as_trial t;
  AS_TRY(as_spec_trial(spec, trial, &t));
  as_outset_bulk_counts(&t, counts);
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    if (!counts[k]) continue;
    bulk[k] = ctx->buf[k];
    ctx->buf[k] = NULL;
  }
cleanup:
  as_pipeline_destroy(&pl);
  if (ctx) {
    for (int k = 0; k < AS_BULK_COUNT; k++) free(ctx->buf[k]);
    big_free(&ctx->big);
    as_matfile_destroy(&ctx->mf);
  }
  free(ctx);
  if (st != AS_OK)
    for (int k = 0; k < AS_BULK_COUNT; k++) {
      free(bulk[k]);
      bulk[k] = NULL;
    }
  return st;
}
