/* group.c: trials that span several ranks (group.h).
 *
 * Per trial, on its group's communicator (from MPI_Comm_create_group on a duplicate of the
 * caller's communicator, so nothing meets anyone else's messages):
 *   Allreduce MAX  skip       (a member saw a stop before the start, or failed earlier)
 *   per stage      Allreduce MAX {stop, some part gone, some part running, -status, cut},
 *                  then
 *                  Allgatherv the rows of H (n x d doubles) unless a part is gone
 *   after the run  the same Allreduce with "gone", repeated until no part runs: a part that
 *                  failed (or returned early) answers the others' stages, which then stop
 *                  too, so nobody waits for a gather that will never come; the status
 *                  agreed is the first real failure
 * and at the end, on the whole communicator, the counts, the stop, and the first failure.
 */
#include "attnsweep/group.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/dynamics.h"
#include "attnsweep/iocheck.h"
#include "attnsweep/signals.h"

#define AS_GROUP_TAG 7201

/* ---------------------------------------------------------------- the plan */

typedef struct rank_free {
  double at; /* estimated time at which the rank is free */
  int rank;
} rank_free;

static int cmp_free(const void *a, const void *b) {
  const rank_free *x = a, *y = b;
  if (x->at != y->at) return x->at < y->at ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Items by decreasing cost, ties (and NaN, last) by increasing trial index. */
static const as_group_item *sort_items;
static int cmp_order(const void *a, const void *b) {
  const as_group_item *x = &sort_items[*(const uint64_t *)a],
                      *y = &sort_items[*(const uint64_t *)b];
  int xn = x->cost != x->cost, yn = y->cost != y->cost;
  if (xn != yn) return xn - yn;
  if (!xn && x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
  return (x->trial > y->trial) - (x->trial < y->trial);
}

as_status as_group_plan(const as_group_item *items, uint64_t n, int size, int *member,
                        uint64_t *order) {
  as_status st = AS_OK;
  rank_free *fr = NULL;
  AS_CHECK(size >= 1 && (n == 0 || (items && member && order)), AS_ERR_ARG,
           "as_group_plan: bad arguments");
  for (uint64_t i = 0; i < n; i++)
    AS_CHECK(items[i].ranks >= 2 && items[i].ranks <= size, AS_ERR_ARG,
             "as_group_plan: trial %" PRIu64 " on %d ranks of %d", items[i].trial, items[i].ranks,
             size);
  fr = malloc((size_t)size * sizeof *fr);
  AS_CHECK_ALLOC(fr);
  for (int r = 0; r < size; r++) fr[r] = (rank_free){0.0, r};
  for (uint64_t i = 0; i < n; i++) order[i] = i;
  sort_items = items; /* (qsort has no context argument in C11) */
  qsort(order, (size_t)n, sizeof *order, cmp_order);
  sort_items = NULL;
  for (uint64_t i = 0; i < n; i++) {
    const as_group_item *it = &items[order[i]];
    /* The R ranks free first; the trial starts when the last of them is free. */
    qsort(fr, (size_t)size, sizeof *fr, cmp_free);
    double start = fr[it->ranks - 1].at;
    double cost = it->cost > 0 ? it->cost : 1.0; /* NaN or 0: one unit */
    int *m = member + i * (uint64_t)size;
    for (int k = 0; k < it->ranks; k++) {
      m[k] = fr[k].rank;
      fr[k].at = start + cost / it->ranks;
    }
    qsort(m, (size_t)it->ranks, sizeof *m, cmp_int);
  }
cleanup:
  free(fr);
  return st;
}

/* ---------------------------------------------------------------- waiting */

/* An all-reduce whose members may arrive at very different times (a rank with no trial of
 * the phase, followers while the leader classifies, the start of a trial): nonblocking, and
 * the wait sleeps (a few quick polls, then 20 us growing to 0.5 ms) instead of polling a
 * whole core as a blocking Open MPI wait does. Every all-reduce of a trial's communicator
 * goes through here, the per-stage one included, since a part in finish() may meet it: MPI
 * does not match a blocking collective with a nonblocking one. */
static as_status allreduce_sleeping(const void *in, void *out, int count, MPI_Datatype type,
                                    MPI_Op op, MPI_Comm comm) {
  as_status st = AS_OK;
  MPI_Request rq = MPI_REQUEST_NULL;
  AS_MPI_CHECK(MPI_Iallreduce(in, out, count, type, op, comm, &rq));
  long ns = 20000;
  for (int spins = 0;; spins++) {
    int done = 0;
    AS_MPI_CHECK(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
    if (done) break;
    if (spins < 16) continue;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    ns = ns * 2 > 500000 ? 500000 : ns * 2;
  }
cleanup:
  return st;
}

/* ---------------------------------------------------------------- the exchange */

typedef struct gx {
  MPI_Comm comm;
  int parts;
  int n, d;                   /* shape the counts are for (0: not yet) */
  int *counts, *displs;       /* doubles of each part's rows of H, and their offsets */
  volatile sig_atomic_t stop; /* the group's agreed stop flag */
  int aborted;                /* an exchange saw another part gone */
  double t0, time_limit;
  /* Rank 0's progress (show NULL: none): the trial, its start, the last line, evaluations. */
  FILE *show;
  double interval, started, last;
  uint64_t trial, evals;
} gx;

/* Rank 0, while a trial of its group runs: a line every interval, with the integration time
 * t of the evaluation against the horizon T and the wall time left at the rate so far (the
 * evaluations of a run: its stages; the classification after it has no line). */
static void running_line(gx *x, double t, double T) {
  x->evals++;
  if (!x->show) return;
  double now = MPI_Wtime();
  if (now - x->last < x->interval) return;
  x->last = now;
  const double ran = now - x->started;
  char at[96] = "";
  if (T > 0 && t >= 0 && t <= T) {
    char eta[32] = "?";
    const double left = t > 0 ? ran * (T - t) / t : -1;
    if (left >= 0) snprintf(eta, sizeof eta, left < 10 ? "%.1f s" : "%.0f s", left);
    snprintf(at, sizeof at, "t = %.4g of T = %.4g (%.1f%%, ETA %s), ", t, T, 100.0 * t / T, eta);
  }
  fprintf(x->show,
          "attnsweep: group trial %" PRIu64 " on %d ranks: %srunning %.1f s, %" PRIu64
          " attention evaluations\n",
          x->trial, x->parts, at, ran, x->evals);
  fflush(x->show);
}

/* This rank's own view of a stop: a signal, a request, or the time limit (which becomes a
 * request, as on the coordinator of sched.c). */
static int local_stop(double t0, double time_limit) {
  if (time_limit > 0 && MPI_Wtime() - t0 >= time_limit) as_signals_request_stop();
  return *as_signals_flag() != 0;
}

static as_status exchange(double *H, int n, int d, int lo, int hi, double t, double T, void *vctx) {
  as_status st = AS_OK;
  gx *x = vctx;
  if (x->n != n || x->d != d) {
    AS_CHECK((double)n * d <= (double)INT_MAX, AS_ERR_UNSUPPORTED,
             "n = %d, d = %d: more than 2^31 doubles to gather", n, d);
    int off = 0;
    for (int p = 0; p < x->parts; p++) {
      int plo = 0, phi = 0;
      as_dyn_part_rows(n, p, x->parts, &plo, &phi);
      x->counts[p] = (phi - plo) * d;
      x->displs[p] = off;
      off += x->counts[p];
    }
    x->n = n;
    x->d = d;
  }
  (void)lo;
  (void)hi;
  running_line(x, t, T);
  /* First the state of every part: a part that is gone (failed, or returned early) will not
   * gather; then the rows. */
  int v[5] = {local_stop(x->t0, x->time_limit), 0, 1, 0, 0}, r[5];
  /* (nonblocking and of the same count as its counterpart in finish(): MPI never matches a
   * blocking collective with a nonblocking one) */
  AS_TRY(allreduce_sleeping(v, r, 5, MPI_INT, MPI_MAX, x->comm));
  if (r[0]) x->stop = 1;
  if (r[1]) {
    x->aborted = 1;
    AS_CHECK(0, AS_ERR_MPI, "another part of this trial (over %d ranks) failed", x->parts);
  }
  AS_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, H, x->counts, x->displs,
                              MPI_DOUBLE, x->comm));
cleanup:
  return st;
}

/* After this part's run: answer the exchanges of the parts still running (each sees this part
 * gone and stops) until every part is done, and agree on the status of the trial: the first
 * real failure (a part stopped by another's failure does not count), in *agreed (AS_OK:
 * none), and whether any part was stopped that way, in *cut (then no part has the trial's
 * result: a part returned early without a failure status, e.g. a set-up that failed on that
 * rank only and became its recorded failure). Collective on the group. */
static as_status finish(gx *x, as_status mine, as_status *agreed, int *cut) {
  as_status st = AS_OK;
  int own = x->aborted ? 0 : -(int)mine; /* statuses are <= 0: MAX of -status is the MIN */
  for (;;) {
    int v[5] = {0, 1, 0, own, x->aborted}, r[5];
    AS_TRY(allreduce_sleeping(v, r, 5, MPI_INT, MPI_MAX, x->comm));
    if (r[0]) x->stop = 1;
    if (!r[2]) { /* no part runs any more */
      *agreed = (as_status)(-r[3]);
      *cut = r[4];
      break;
    }
  }
cleanup:
  return st;
}

/* ---------------------------------------------------------------- the phase */

/* The first failure (lowest failing rank) to every rank, as sched.c does for its own. */
static as_status relay_first(MPI_Comm comm, int rank, int size, as_status err, int real) {
  as_status st = AS_OK;
  /* A rank whose own step failed first, before one that only learnt of another's failure. */
  int mine = err == AS_OK ? 2 * size : (real ? rank : size + rank), first = 2 * size;
  AS_TRY(allreduce_sleeping(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == 2 * size) return AS_OK;
  first %= size;
  struct {
    int32_t status, line, rank, pad;
    int64_t trial;
    char file[256], func[128], message[AS_ERRMSG_MAX];
  } e;
  memset(&e, 0, sizeof e);
  if (rank == first) {
    const as_error *me = as_error_get();
    e.status = (int32_t)err;
    e.line = me->line;
    e.rank = me->status != AS_OK ? me->rank : rank;
    e.trial = me->status != AS_OK ? me->trial : -1;
    snprintf(e.file, sizeof e.file, "%s", me->file ? me->file : "?");
    snprintf(e.func, sizeof e.func, "%s", me->func ? me->func : "?");
    snprintf(e.message, sizeof e.message, "%s",
             me->status != AS_OK ? me->message : as_status_message(err));
  }
  AS_MPI_CHECK(MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, comm));
  e.file[sizeof e.file - 1] = e.func[sizeof e.func - 1] = e.message[sizeof e.message - 1] = '\0';
  if (rank != first) {
    as_error_clear(); /* this rank's own "another rank failed" gives way to the real one */
    as_error_relay((as_status)e.status, e.file, e.line, e.func, e.rank, e.trial, e.message);
  }
  st = (as_status)e.status;
cleanup:
  return st;
}

as_status as_group_run(MPI_Comm comm, const as_group_item *items, uint64_t n, double t0,
                       double time_limit, const as_group_ops *ops, as_group_summary *out) {
  as_status st = AS_OK, err = AS_OK;
  MPI_Comm dup = MPI_COMM_NULL, gc = MPI_COMM_NULL;
  MPI_Group wg = MPI_GROUP_NULL, g = MPI_GROUP_NULL;
  int *member = NULL, *counts = NULL, *displs = NULL;
  uint64_t *order = NULL;
  uint64_t cnt[4] = {0, 0, 0, 0}; /* done, failed, interrupted, skipped (by the leaders) */
  int rank = 0, size = 1, stop_seen = 0, err_real = 0;
  if (out) memset(out, 0, sizeof *out);
  AS_CHECK(ops && ops->run && ops->sink && (n == 0 || items), AS_ERR_ARG,
           "as_group_run: bad arguments");
  AS_MPI_CHECK(MPI_Comm_dup(comm, &dup));
  AS_MPI_CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
  AS_MPI_CHECK(MPI_Comm_rank(dup, &rank));
  AS_MPI_CHECK(MPI_Comm_size(dup, &size));
  AS_MPI_CHECK(MPI_Comm_group(dup, &wg));
  member = malloc((size_t)(n ? n : 1) * (size_t)size * sizeof *member);
  order = malloc((size_t)(n ? n : 1) * sizeof *order);
  counts = malloc((size_t)size * sizeof *counts);
  displs = malloc((size_t)size * sizeof *displs);
  AS_CHECK_ALLOC(member); /* (a failure here strands the others, like any MPI failure) */
  AS_CHECK_ALLOC(order);
  AS_CHECK_ALLOC(counts);
  AS_CHECK_ALLOC(displs);
  AS_TRY(as_group_plan(items, n, size, member, order)); /* the same verdict on every rank */

  for (uint64_t i = 0; i < n; i++) {
    const as_group_item *it = &items[order[i]];
    const int *m = member + i * (uint64_t)size;
    int part = -1;
    for (int k = 0; k < it->ranks; k++)
      if (m[k] == rank) part = k;
    if (part < 0) continue;
    AS_MPI_CHECK(MPI_Group_incl(wg, it->ranks, m, &g));
    AS_MPI_CHECK(MPI_Comm_create_group(dup, g, AS_GROUP_TAG, &gc));
    AS_MPI_CHECK(MPI_Group_free(&g));
    AS_MPI_CHECK(MPI_Comm_set_errhandler(gc, MPI_ERRORS_RETURN));
    /* Start only when no member knows of a stop or carries an error. */
    int skip_mine = err != AS_OK ? 2 : local_stop(t0, time_limit), skip = 0;
    AS_TRY(allreduce_sleeping(&skip_mine, &skip, 1, MPI_INT, MPI_MAX, gc));
    if (skip) {
      if (skip == 1) stop_seen = 1;
      if (part == 0) cnt[3]++;
      AS_MPI_CHECK(MPI_Comm_free(&gc));
      continue;
    }
    gx x;
    memset(&x, 0, sizeof x);
    x.comm = gc;
    x.parts = it->ranks;
    x.counts = counts;
    x.displs = displs;
    x.stop = 0;
    x.t0 = t0;
    x.time_limit = time_limit;
    if (rank == 0 && ops->progress && ops->progress_interval > 0) {
      x.show = ops->progress;
      x.interval = ops->progress_interval;
      x.started = x.last = MPI_Wtime();
      x.trial = it->trial;
      fprintf(x.show,
              "attnsweep: group trial %" PRIu64 " (%" PRIu64 " of %" PRIu64
              " in the plan) starts on %d ranks, %.1f s into the phase\n",
              it->trial, i + 1, n, it->ranks, x.started - t0);
      fflush(x.show);
    }
    as_pipeline_group pg = {part, it->ranks, exchange, &x};
    as_record rec;
    memset(&rec, 0, sizeof rec);
    as_error_context_set(rank, (int64_t)it->trial);
    as_status rst = ops->run(it->trial, &pg, &x.stop, &rec, ops->ctx), all = AS_OK;
    int cut = 0;
    AS_TRY(finish(&x, rst, &all, &cut));
    AS_MPI_CHECK(MPI_Comm_free(&gc));
    if (x.stop) stop_seen = 1;
    if (rst != AS_OK && !x.aborted) {
      err = rst;
      err_real = 1;
    } else if (all != AS_OK) {
      as_error_clear(); /* (the exchange's "another part failed") */
      err = as_error_set(all, __FILE__, __LINE__, __func__,
                         "trial %" PRIu64 " failed on another rank of its group: %s", it->trial,
                         as_status_message(all));
    } else if (cut) { /* the parts did not run the same trial: no record is the trial's */
      as_error_clear();
      err_real = part == 0;
      err = as_error_set(AS_ERR_MPI, __FILE__, __LINE__, __func__,
                         "trial %" PRIu64 ": a part of its group of %d ranks returned before "
                         "the others (its set-up failed on that rank only: files readable "
                         "on some nodes only?); the sweep stops, the trial stays pending",
                         it->trial, it->ranks);
    } else if (part == 0) {
      if (rec.trial != it->trial)
        err_real = 1, err = as_error_set(AS_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                                         "group run callback filled the record of trial %" PRIu64
                                         " for trial %" PRIu64,
                                         rec.trial, it->trial);
      rec.rank = rank;
      cnt[0]++;
      if (rec.outcome == AS_OUT_FAILED || rec.outcome == AS_OUT_NONFINITE) cnt[1]++;
      if (rec.outcome == AS_OUT_INTERRUPTED) cnt[2]++;
      if (err == AS_OK) {
        as_status sst = ops->sink(&rec, 1, ops->ctx);
        if (sst != AS_OK) err = sst, err_real = 1;
      }
    }
    as_error_context_set(rank, -1);
  }

  /* Totals and the stop, then the first failure, on every rank. */
  {
    if (*as_signals_flag()) stop_seen = 1;
    uint64_t g4[4];
    int any_stop = 0;
    AS_TRY(allreduce_sleeping(cnt, g4, 4, MPI_UINT64_T, MPI_SUM, dup));
    AS_TRY(allreduce_sleeping(&stop_seen, &any_stop, 1, MPI_INT, MPI_MAX, dup));
    if (any_stop) as_signals_request_stop(); /* the scheduling phase stops at once */
    if (rank == 0 && ops->progress && ops->progress_interval > 0) {
      fprintf(ops->progress,
              "attnsweep: group trials: %" PRIu64 "/%" PRIu64 " done (%" PRIu64
              " failed or non-finite, %" PRIu64 " interrupted, %" PRIu64 " not started)\n",
              g4[0] - g4[2], n, g4[1], g4[2], g4[3]);
      fflush(ops->progress);
    }
    if (out) {
      out->done = g4[0];
      out->failed = g4[1];
      out->interrupted = g4[2];
      out->skipped = g4[3];
      out->stopped = any_stop;
    }
    st = relay_first(dup, rank, size, err, err_real);
  }
cleanup:
  if (gc != MPI_COMM_NULL) MPI_Comm_free(&gc);
  if (g != MPI_GROUP_NULL) MPI_Group_free(&g);
  if (wg != MPI_GROUP_NULL) MPI_Group_free(&wg);
  if (dup != MPI_COMM_NULL) MPI_Comm_free(&dup);
  free(member);
  free(order);
  free(counts);
  free(displs);
  return st;
}
