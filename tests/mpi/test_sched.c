/* The coordinator/worker scheduler (sched.h) with a deterministic dummy trial that fills a
 * record from its index:
 *   - every index of the to-do list runs exactly once across ranks and its record is sunk
 *     exactly once, on the rank that ran it, with the content the index determines (so the
 *     results do not depend on the rank count), with and without a working coordinator;
 *   - the coordinator hands the work out longest first (the assignment trace);
 *   - sink batches respect batch_max and the flush interval;
 *   - SIGUSR1 raised on the last rank mid-sweep stops every rank with AS_ERR_INTERRUPTED,
 *     every executed trial still sunk; a failing run callback aborts every rank with its
 *     status and message;
 *   - bad arguments are rejected on every rank.
 * Pass/fail is reduced over ranks. */
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "as_test.h"
#include "attnsweep/sched.h"
#include "attnsweep/signals.h"

#define MAXLIST 8192

typedef struct tctx {
  int rank, size;
  double sleep_s;             /* per trial (nanosleep), 0: a short compute loop */
  int raise_at;               /* raise SIGUSR1 at this trial of the last rank (0: never) */
  int fail_at;                /* return AS_ERR_IO at this trial of the last rank (0: never) */
  uint64_t ran[MAXLIST];      /* trials run to a record here, in order */
  double finished[MAXLIST];   /* when each returned (MPI_Wtime) */
  int nran;                   /* entries in ran */
  int ncalls;                 /* run calls here */
  uint64_t sunk[MAXLIST];     /* trials sunk here */
  int nsunk;                  /* entries in sunk */
  int sink_calls;             /* sink calls here */
  int batch_counts[MAXLIST];  /* records per sink call */
  double max_age;             /* largest (sink time - finish time) of a record */
  int bad_records;            /* sunk records whose content is not what the index gives */
  uint64_t hash;              /* sum of hashes of the sunk records (timing stripped) */
  uint64_t assigned[MAXLIST]; /* rank 0: trials in assignment order */
  int nassigned;              /* entries in assigned */
} tctx;

static double cost_of(uint64_t i) {
  return (double)((i * 7919u) % 23u); /* many ties */
}

static double t_cost(uint64_t trial, void *ctx) {
  (void)ctx;
  return cost_of(trial);
}

/* The record of trial i: a pure function of i. */
static void fill_record(uint64_t i, as_record *r) {
  memset(r, 0, sizeof *r);
  r->trial = i;
  r->case_name = -1;
  r->d = (int32_t)(2 + i % 7);
  r->n = (int32_t)(3 + i % 11);
  r->lambda1_re = cos((double)i);
  r->gap = sqrt((double)i);
  r->steps = (int64_t)((i * i) % 1000);
  r->wall_time = NAN;
  if (i % 13 == 5) {
    r->outcome = AS_OUT_FAILED;
    snprintf(r->message, sizeof r->message, "dummy failure of trial %" PRIu64, i);
  } else if (i % 17 == 3) {
    r->outcome = AS_OUT_NONFINITE;
  } else {
    r->outcome = AS_OUT_REACHED_T;
  }
}

static int is_failure(uint64_t i) {
  return i % 13 == 5 || i % 17 == 3;
}

static uint64_t hash_record(const as_record *r) {
  as_record c = *r;
  c.wall_time = 0;
  c.rank = 0;
  const unsigned char *p = (const unsigned char *)&c;
  uint64_t h = 1469598103934665603u;
  for (size_t k = 0; k < sizeof c; k++) h = (h ^ p[k]) * 1099511628211u;
  return h;
}

static as_status t_run(uint64_t trial, as_record *rec, void *ctx) {
  tctx *t = ctx;
  t->ncalls++;
  if (t->fail_at && t->rank == t->size - 1 && t->ncalls == t->fail_at)
    return as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__, "injected failure");
  if (t->sleep_s > 0) {
    struct timespec ts = {0, (long)(t->sleep_s * 1e9)};
    nanosleep(&ts, NULL);
  } else {
    volatile double x = 1.0;
    for (int k = 0; k < 200; k++) x = x * 1.0000001 + 1e-9;
  }
  fill_record(trial, rec);
  if (t->raise_at && t->rank == t->size - 1 && t->ncalls == t->raise_at) raise(SIGUSR1);
  if (t->nran < MAXLIST) {
    t->ran[t->nran] = trial;
    t->finished[t->nran] = MPI_Wtime();
    t->nran++;
  }
  return AS_OK;
}

static as_status t_sink(const as_record *recs, int count, void *ctx) {
  tctx *t = ctx;
  double now = MPI_Wtime();
  if (t->sink_calls < MAXLIST) t->batch_counts[t->sink_calls] = count;
  t->sink_calls++;
  for (int k = 0; k < count; k++) {
    const as_record *r = &recs[k];
    as_record want;
    fill_record(r->trial, &want);
    as_record got = *r;
    int ok = got.rank == t->rank && got.wall_time > 0;
    got.rank = 0;
    got.wall_time = NAN;
    if (!ok || memcmp(&got.trial, &want.trial, offsetof(as_record, wall_time)) != 0 ||
        strcmp(got.message, want.message) != 0)
      t->bad_records++;
    t->hash += hash_record(r);
    for (int j = 0; j < t->nran; j++) {
      if (t->ran[j] == r->trial) {
        if (now - t->finished[j] > t->max_age) t->max_age = now - t->finished[j];
        break;
      }
    }
    if (t->nsunk < MAXLIST) t->sunk[t->nsunk++] = r->trial;
  }
  return AS_OK;
}

static void t_assigned(int rank, const uint64_t *trials, int count, void *ctx) {
  tctx *t = ctx;
  (void)rank;
  for (int k = 0; k < count && t->nassigned < MAXLIST; k++) t->assigned[t->nassigned++] = trials[k];
}

/* Gather a list of indices from every rank to rank 0 (*all malloc'd there). */
static int gather_list(const uint64_t *list, int n, uint64_t **all, int size, int rank) {
  int *counts = calloc((size_t)size, sizeof *counts),
      *displs = calloc((size_t)size, sizeof *displs);
  MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  if (rank == 0)
    for (int r = 0; r < size; r++) {
      displs[r] = total;
      total += counts[r];
    }
  *all = malloc((size_t)(total ? total : 1) * sizeof **all);
  MPI_Gatherv(list, n, MPI_UINT64_T, *all, counts, displs, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  free(counts);
  free(displs);
  return total;
}

/* Rank 0: each index of todo occurs exactly once in all[0..n), nothing else occurs. */
static int exactly_once(const uint64_t *todo, uint64_t ntodo, uint64_t N, const uint64_t *all,
                        int n, const char *what) {
  int *seen = calloc((size_t)N, sizeof *seen), bad = 0;
  unsigned char *want = calloc((size_t)N, 1);
  for (uint64_t k = 0; k < ntodo; k++) want[todo[k]] = 1;
  for (int k = 0; k < n; k++) {
    if (all[k] >= N || !want[all[k]]) {
      bad++;
      continue;
    }
    seen[all[k]]++;
  }
  for (uint64_t i = 0; i < N; i++)
    if (want[i] && seen[i] != 1) {
      if (bad < 5) fprintf(stderr, "%s: trial %" PRIu64 " seen %d times\n", what, i, seen[i]);
      bad++;
    }
  free(seen);
  free(want);
  return bad;
}

/* Same multiset on this rank: every executed trial sunk once, nothing else. */
static int same_set(const uint64_t *a, int na, const uint64_t *b, int nb) {
  if (na != nb) return 0;
  for (int i = 0; i < na; i++) {
    int c = 0;
    for (int j = 0; j < nb; j++) c += b[j] == a[i];
    if (c != 1) return 0;
  }
  return 1;
}

static void reset_ctx(tctx *t, int rank, int size) {
  memset(t, 0, sizeof *t);
  t->rank = rank;
  t->size = size;
}

static const as_sched_ops *make_ops(tctx *t) {
  static as_sched_ops ops;
  ops.cost = t_cost;
  ops.run = t_run;
  ops.sink = t_sink;
  ops.assigned = t_assigned;
  ops.ctx = t;
  return &ops;
}

/* A full sweep of the indices in [0, N) not divisible by 3. */
static void test_full(tctx *t, int rank, int size, int coordinator_runs, int prefetch,
                      int max_chunk) {
  const uint64_t N = 900;
  uint64_t *todo = malloc(N * sizeof *todo), ntodo = 0, nfail = 0;
  for (uint64_t i = 0; i < N; i++)
    if (i % 3 != 0) {
      todo[ntodo++] = i;
      nfail += (uint64_t)is_failure(i);
    }
  reset_ctx(t, rank, size);
  as_sched_opts o;
  as_sched_opts_default(&o);
  o.coordinator_runs = coordinator_runs;
  o.prefetch = prefetch;
  o.max_chunk = max_chunk;
  o.batch_max = 16;
  o.flush_interval = 0.05;
  as_sched_summary sum;
  /* Only rank 0's to-do list counts. */
  as_status st = as_sched_run(MPI_COMM_WORLD, rank == 0 ? todo : NULL, rank == 0 ? ntodo : 0, &o,
                              make_ops(t), &sum);
  AS_EXPECT(st == AS_OK, "full sweep (coordinator_runs %d): %s", coordinator_runs,
            as_status_name(st));
  AS_EXPECT(sum.total == ntodo && sum.done == ntodo && sum.not_run == 0 && !sum.stopped,
            "summary total %" PRIu64 " done %" PRIu64 " not_run %" PRIu64 " stopped %d", sum.total,
            sum.done, sum.not_run, sum.stopped);
  AS_EXPECT(sum.failed == nfail, "failed %" PRIu64 ", want %" PRIu64, sum.failed, nfail);
  AS_EXPECT(sum.my_done == (uint64_t)t->nran, "my_done %" PRIu64 " vs %d", sum.my_done, t->nran);
  AS_EXPECT(t->bad_records == 0, "%d sunk records differ from their index's", t->bad_records);
  AS_EXPECT(same_set(t->ran, t->nran, t->sunk, t->nsunk), "rank %d: ran %d, sunk %d", rank, t->nran,
            t->nsunk);
  for (int k = 0; k < t->sink_calls && k < MAXLIST; k++)
    AS_EXPECT(t->batch_counts[k] >= 1 && t->batch_counts[k] <= o.batch_max, "batch of %d",
              t->batch_counts[k]);
  if (coordinator_runs == 0 && size > 1)
    AS_EXPECT(t->nran == 0 || rank != 0, "a non-working coordinator ran %d trials", t->nran);

  /* Rank-count independence: the sum of record hashes equals the serial one. */
  uint64_t h = 0;
  MPI_Reduce(&t->hash, &h, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);

  uint64_t *all_ran = NULL, *all_sunk = NULL;
  int nr = gather_list(t->ran, t->nran, &all_ran, size, rank);
  int ns = gather_list(t->sunk, t->nsunk, &all_sunk, size, rank);
  if (rank == 0) {
    AS_EXPECT(exactly_once(todo, ntodo, N, all_ran, nr, "ran") == 0, "executed exactly once");
    AS_EXPECT(exactly_once(todo, ntodo, N, all_sunk, ns, "sunk") == 0, "sunk exactly once");
    uint64_t want = 0, sumr = 0;
    as_record r;
    for (uint64_t k = 0; k < ntodo; k++) {
      fill_record(todo[k], &r);
      want += hash_record(&r);
    }
    AS_EXPECT(h == want, "record hash %" PRIx64 ", serial %" PRIx64, h, want);
    for (int q = 0; q < size; q++) sumr += sum.rank_done[q];
    AS_EXPECT(sum.rank_done && sumr == ntodo, "per-rank counts sum to %" PRIu64, sumr);
    /* Longest first: the assignment trace is the to-do list ordered by decreasing cost,
     * ties by increasing index. */
    AS_EXPECT((uint64_t)t->nassigned == ntodo, "assigned %d of %" PRIu64, t->nassigned, ntodo);
    int order_bad = 0;
    for (int k = 1; k < t->nassigned; k++) {
      double c0 = cost_of(t->assigned[k - 1]), c1 = cost_of(t->assigned[k]);
      if (c1 > c0 || (c1 == c0 && t->assigned[k] <= t->assigned[k - 1])) order_bad++;
    }
    AS_EXPECT(order_bad == 0, "%d assignments out of longest-first order", order_bad);
    printf("full sweep, %d ranks, coordinator_runs %d, prefetch %d, max_chunk %d: %" PRIu64
           " trials in %" PRIu64 " chunks, per rank:",
           size, coordinator_runs, prefetch, max_chunk, sum.done, sum.chunks);
    for (int q = 0; q < size; q++) printf(" %" PRIu64, sum.rank_done[q]);
    printf("\n");
  }
  free(all_ran);
  free(all_sunk);
  as_sched_summary_clear(&sum);
  free(todo);
}

/* SIGUSR1 on the last rank at its 3rd trial. */
static void test_stop(tctx *t, int rank, int size) {
  const uint64_t N = 2000;
  uint64_t *todo = malloc(N * sizeof *todo);
  for (uint64_t i = 0; i < N; i++) todo[i] = i;
  reset_ctx(t, rank, size);
  t->sleep_s = 0.002; /* the whole sweep would take >= 4 s / size: a stop must cut it short */
  t->raise_at = 3;
  as_sched_opts o;
  as_sched_opts_default(&o);
  o.flush_interval = 10.0; /* records of abandoned runs must still be sunk at the end */
  as_sched_summary sum;
  as_signals_reset();
  as_status st = as_sched_run(MPI_COMM_WORLD, todo, N, &o, make_ops(t), &sum);
  AS_EXPECT(st == AS_ERR_INTERRUPTED, "stop: status %s on rank %d", as_status_name(st), rank);
  AS_EXPECT(as_status_exit_code(st) == 99, "exit code %d", as_status_exit_code(st));
  AS_EXPECT(sum.stopped && sum.done < N && sum.not_run == N - sum.done,
            "stopped %d done %" PRIu64 " not_run %" PRIu64, sum.stopped, sum.done, sum.not_run);
  AS_EXPECT(as_signals_caught() != 0, "stop flag not set on rank %d", rank);
  if (rank == size - 1)
    AS_EXPECT(as_signals_caught() == SIGUSR1 && t->nran == 3,
              "raising rank: flag %d, ran %d (must start nothing after the signal)",
              as_signals_caught(), t->nran);
  if (size == 1) AS_EXPECT(sum.done == 3, "one rank stops right after trial 3: %" PRIu64, sum.done);
  AS_EXPECT(same_set(t->ran, t->nran, t->sunk, t->nsunk), "stop: rank %d ran %d, sunk %d", rank,
            t->nran, t->nsunk);
  AS_EXPECT(t->bad_records == 0, "%d bad records", t->bad_records);
  uint64_t tot = 0, nr = (uint64_t)t->nran;
  MPI_Allreduce(&nr, &tot, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  AS_EXPECT(tot == sum.done, "executed %" PRIu64 " vs summary %" PRIu64, tot, sum.done);
  if (rank == 0) printf("stop: %" PRIu64 " of %" PRIu64 " trials done\n", sum.done, N);
  as_signals_reset();
  as_error_clear();
  as_sched_summary_clear(&sum);
  free(todo);
}

/* The run callback fails on the last rank at its 2nd trial. */
static void test_error(tctx *t, int rank, int size) {
  const uint64_t N = 600;
  uint64_t *todo = malloc(N * sizeof *todo);
  for (uint64_t i = 0; i < N; i++) todo[i] = N - 1 - i;
  reset_ctx(t, rank, size);
  t->sleep_s = 0.001;
  t->fail_at = 2;
  as_sched_summary sum;
  as_error_clear();
  as_status st = as_sched_run(MPI_COMM_WORLD, todo, N, NULL, make_ops(t), &sum);
  AS_EXPECT(st == AS_ERR_IO, "error: status %s on rank %d", as_status_name(st), rank);
  char buf[4 * AS_ERRMSG_MAX];
  as_error_format(buf, sizeof buf);
  AS_EXPECT(strstr(buf, "injected failure") != NULL, "rank %d message: %s", rank, buf);
  /* Every rank reports the failing rank's own place and context, not the relay's. */
  char where[64];
  snprintf(where, sizeof where, "[rank %d, trial ", size - 1);
  AS_EXPECT(strstr(buf, "test_sched.c:") && strstr(buf, where) && !strstr(buf, "sched.c: relay"),
            "rank %d names the failing rank's place: %s", rank, buf);
  AS_EXPECT(sum.done < N && same_set(t->ran, t->nran, t->sunk, t->nsunk),
            "error: done %" PRIu64 ", rank %d ran %d sunk %d", sum.done, rank, t->nran, t->nsunk);
  as_error_clear();
  as_signals_reset();
  as_sched_summary_clear(&sum);
  free(todo);
}

/* Sink batching: full batches when the interval is long; bounded record age when short. */
static void test_flush(tctx *t, int rank, int size) {
  const uint64_t N = 120;
  uint64_t *todo = malloc(N * sizeof *todo);
  for (uint64_t i = 0; i < N; i++) todo[i] = i;
  as_sched_opts o;
  as_sched_summary sum;

  reset_ctx(t, rank, size);
  t->sleep_s = 0.0005;
  as_sched_opts_default(&o);
  o.batch_max = 7;
  o.flush_interval = 1e6;
  as_status st = as_sched_run(MPI_COMM_WORLD, todo, N, &o, make_ops(t), &sum);
  AS_EXPECT(st == AS_OK, "flush (full batches): %s", as_status_name(st));
  for (int k = 0; k + 1 < t->sink_calls; k++)
    AS_EXPECT(t->batch_counts[k] == 7, "batch %d of %d has %d records (want 7)", k, t->sink_calls,
              t->batch_counts[k]);
  AS_EXPECT(t->nsunk == t->nran, "sunk %d ran %d", t->nsunk, t->nran);
  as_sched_summary_clear(&sum);

  reset_ctx(t, rank, size);
  t->sleep_s = 0.002;
  as_sched_opts_default(&o);
  o.batch_max = 1000;
  o.flush_interval = 0.02;
  st = as_sched_run(MPI_COMM_WORLD, todo, N, &o, make_ops(t), &sum);
  AS_EXPECT(st == AS_OK, "flush (interval): %s", as_status_name(st));
  /* Checked between trials: a record waits at most the interval plus one trial; 0.1 s of
   * slack for a loaded, oversubscribed machine. */
  AS_EXPECT(t->max_age <= o.flush_interval + 0.1, "a record waited %.3f s for its sink",
            t->max_age);
  /* ... and batching happened: fewer sink calls than records on a rank that ran many. */
  if (t->nran >= 30)
    AS_EXPECT(t->sink_calls < t->nran, "%d sink calls for %d records", t->sink_calls, t->nran);
  AS_EXPECT(t->nsunk == t->nran, "sunk %d ran %d", t->nsunk, t->nran);
  as_sched_summary_clear(&sum);
  free(todo);
}

/* Progress lines on rank 0: plain lines parse, counts never decrease, the last line says
 * everything is done with the right failure count; the tty form draws a \r bar. */
static void test_progress(tctx *t, int rank, int size) {
  const uint64_t N = 150;
  uint64_t *todo = malloc(N * sizeof *todo), nfail = 0;
  for (uint64_t i = 0; i < N; i++) {
    todo[i] = i;
    nfail += (uint64_t)is_failure(i);
  }
  for (int tty = 0; tty <= 1; tty++) {
    reset_ctx(t, rank, size);
    t->sleep_s = 0.001;
    FILE *f = rank == 0 ? tmpfile() : NULL;
    as_sched_opts o;
    as_sched_opts_default(&o);
    o.progress = f;
    o.progress_tty = tty;
    o.progress_interval = 0.02;
    as_sched_summary sum;
    as_status st = as_sched_run(MPI_COMM_WORLD, todo, N, &o, make_ops(t), &sum);
    AS_EXPECT(st == AS_OK, "progress sweep: %s", as_status_name(st));
    as_sched_summary_clear(&sum);
    if (rank != 0) continue;
    AS_EXPECT(f != NULL, "tmpfile");
    if (!f) continue;
    rewind(f);
    char line[512];
    int nlines = 0, bad = 0;
    unsigned long prev = 0, done = 0, total = 0, fails = 0;
    if (!tty) {
      while (fgets(line, sizeof line, f)) {
        double pct, rate;
        char eta[32];
        nlines++;
        if (sscanf(line, "attnsweep: %lu/%lu (%lf%%) %lf trials/s ETA %31s failures %lu", &done,
                   &total, &pct, &rate, eta, &fails) != 6 ||
            done < prev || total != N) {
          bad++;
          fprintf(stderr, "progress line: %s", line);
        }
        prev = done;
      }
      AS_EXPECT(nlines >= 2 && bad == 0, "%d progress lines, %d bad", nlines, bad);
      AS_EXPECT(done == N && fails == nfail, "last line: %lu/%lu, failures %lu (want %lu)", done,
                total, fails, (unsigned long)nfail);
    } else {
      size_t n = fread(line, 1, sizeof line - 1, f);
      line[n] = '\0';
      AS_EXPECT(line[0] == '\r' && strchr(line, '#') && strstr(line, "trials/s"),
                "tty progress: %s", line);
    }
    fclose(f);
  }
  free(todo);
}

static void test_args(tctx *t, int rank, int size) {
  uint64_t todo[4] = {3, 1, 3, 2};
  as_sched_summary sum;
  reset_ctx(t, rank, size);
  as_error_clear();
  as_status st = as_sched_run(MPI_COMM_WORLD, todo, 4, NULL, make_ops(t), &sum);
  AS_EXPECT(st == AS_ERR_ARG, "duplicate trial: %s", as_status_name(st));
  if (rank == 0) {
    char buf[2 * AS_ERRMSG_MAX];
    as_error_format(buf, sizeof buf);
    AS_EXPECT(strstr(buf, "trial 3 appears twice") != NULL, "message: %s", buf);
  }
  AS_EXPECT(t->ncalls == 0, "ran %d trials of a rejected list", t->ncalls);
  as_error_clear();

  as_sched_opts o;
  as_sched_opts_default(&o);
  o.max_chunk = 0;
  st = as_sched_run(MPI_COMM_WORLD, todo, 2, &o, make_ops(t), &sum);
  AS_EXPECT(st == AS_ERR_ARG, "max_chunk 0: %s", as_status_name(st));
  as_error_clear();

  st = as_sched_run(MPI_COMM_WORLD, NULL, 0, NULL, make_ops(t), &sum);
  AS_EXPECT(st == AS_OK && sum.done == 0 && sum.total == 0, "empty list: %s", as_status_name(st));
  as_sched_summary_clear(&sum);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  as_error_context_set(rank, -1);
  if (as_signals_install() != AS_OK) MPI_Abort(MPI_COMM_WORLD, 1);

  tctx *t = malloc(sizeof *t);
  test_args(t, rank, size);
  test_full(t, rank, size, -1, 1, 256);
  test_full(t, rank, size, 0, 2, 8);
  test_flush(t, rank, size);
  test_progress(t, rank, size);
  test_error(t, rank, size);
  test_stop(t, rank, size);
  free(t);
  as_signals_restore();

  int local = as_test_failures_, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rc = total ? 1 : 0;
  if (rank == 0) rc = as_test_finish("test_sched") || rc;
  MPI_Finalize();
  return rank == 0 ? rc : (total ? 1 : 0);
}
