/* Trials over several ranks (group.h, ranks_per_trial):
 *   - as_dyn_part_rows splits n rows into contiguous blocks of whole tiles covering [0, n);
 *   - as_cost_trial_ranks: the value given, or the documented automatic rule;
 *   - as_group_plan: every trial gets R distinct ranks (sorted, leader the lowest), longest
 *     first, and a rank's trials in plan order;
 *   - as_group_run with a dummy trial that all-gathers its rows through the exchange at every
 *     "stage": each trial runs on exactly its R ranks, every row arrives from its owner, the
 *     leader's record is sunk exactly once; groups of 2..size ranks in one phase (no hang:
 *     the test's timeout); a stop known to one rank skips the trials of its groups and reaches
 *     every rank; a failing part aborts every rank with its status and message.
 * Pass/fail is reduced over ranks. */
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/attention.h"
#include "attnsweep/cost.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/group.h"
#include "attnsweep/signals.h"

#define MAXT 64

typedef struct gctx {
  int rank;
  int n, d;        /* the dummy trial's shape */
  int stages;      /* exchanges per trial */
  int fail_trial;  /* the trial whose part 1 returns AS_ERR_IO (-1: none) */
  int early_trial; /* the trial whose part 1 returns AS_OK at once, no exchange (-1: none) */
  int runs[MAXT];  /* run calls per trial on this rank */
  int sunk[MAXT];  /* sinks per trial on this rank */
  int bad_rows;    /* rows that did not arrive with their owner's value */
  int bad_parts;   /* callbacks whose part/parts were inconsistent */
} gctx;

static double value(uint64_t trial, int stage, int i, int k) {
  return (double)trial * 1e6 + stage * 1e4 + i * 8.0 + k;
}

static as_status g_run(uint64_t trial, const as_pipeline_group *g,
                       const volatile sig_atomic_t *stop, as_record *rec, void *vctx) {
  gctx *c = vctx;
  as_status st = AS_OK;
  double *H = malloc((size_t)c->n * c->d * sizeof *H);
  AS_CHECK_ALLOC(H);
  (void)stop;
  c->runs[trial]++;
  if (!(g->parts >= 2 && g->part >= 0 && g->part < g->parts)) c->bad_parts++;
  if ((int)trial == c->fail_trial && g->part == 1) {
    st = as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__, "injected failure of trial %d",
                      (int)trial);
    goto cleanup;
  }
  if ((int)trial == c->early_trial && g->part == 1) goto cleanup;
  int lo = 0, hi = 0;
  as_dyn_part_rows(c->n, g->part, g->parts, &lo, &hi);
  for (int s = 0; s < c->stages; s++) {
    for (int i = 0; i < c->n; i++)
      for (int k = 0; k < c->d; k++)
        H[(size_t)i * c->d + k] = i >= lo && i < hi ? value(trial, s, i, k) : NAN;
    AS_TRY(g->exchange(H, c->n, c->d, lo, hi, (double)s, (double)c->stages, g->ctx));
    for (int i = 0; i < c->n; i++)
      for (int k = 0; k < c->d; k++)
        c->bad_rows += H[(size_t)i * c->d + k] != value(trial, s, i, k);
  }
  if (g->part == 0) {
    rec->trial = trial;
    rec->outcome = AS_OUT_REACHED_T;
  }
cleanup:
  free(H);
  return st;
}

static as_status g_sink(const as_record *recs, int count, void *vctx) {
  gctx *c = vctx;
  for (int i = 0; i < count; i++) c->sunk[recs[i].trial]++;
  return AS_OK;
}

static void test_rows(void) {
  const int ns[] = {1, 255, 256, 257, 600, 4097, 50000};
  int bad = 0;
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (int parts = 1; parts <= 9; parts++) {
      int next = 0;
      for (int p = 0; p < parts; p++) {
        int lo = -1, hi = -1;
        as_dyn_part_rows(ns[a], p, parts, &lo, &hi);
        bad += lo != next || hi < lo || lo % AS_ATTENTION_STREAM_TILE != 0 ||
               (hi % AS_ATTENTION_STREAM_TILE != 0 && hi != ns[a]);
        next = hi;
      }
      bad += next != ns[a];
    }
  AS_EXPECT(bad == 0, "part rows: %d splits not contiguous whole tiles covering [0, n)", bad);
}

static void test_ranks_rule(void) {
  as_trial t;
  as_trial_defaults(&t);
  t.n = 600;
  AS_EXPECT(as_cost_trial_ranks(&t, 8) == 1, "auto, n = 600: one rank");
  t.ranks_per_trial = 3;
  AS_EXPECT(as_cost_trial_ranks(&t, 2) == 3, "explicit 3 on 2 ranks: 3 (then a failure)");
  t.ranks_per_trial = 0;
  t.n = AS_ATTENTION_STREAM_N;
  AS_EXPECT(as_cost_trial_ranks(&t, 8) == 1, "auto at the threshold: one rank");
  t.n = 50000;
  AS_EXPECT(as_cost_trial_ranks(&t, 64) == (50000 + AS_COST_GROUP_ROWS - 1) / AS_COST_GROUP_ROWS,
            "auto, n = 50000: ceil(n / %d) ranks", AS_COST_GROUP_ROWS);
  AS_EXPECT(as_cost_trial_ranks(&t, 3) == 3, "auto, n = 50000 on 3 ranks: 3");
  AS_EXPECT(as_cost_trial_ranks(&t, 1) == 1, "auto on one rank: 1");
}

static void test_plan(int size) {
  as_group_item it[6];
  for (int i = 0; i < 6; i++)
    it[i] = (as_group_item){(uint64_t)(10 + i), 2 + i % (size > 2 ? size - 1 : 1),
                            (double)((i * 5) % 4)};
  if (size < 2) {
    uint64_t order[1];
    int member[1];
    as_group_item one = {0, 2, 1.0};
    as_status st = as_group_plan(&one, 1, 1, member, order);
    AS_EXPECT(st == AS_ERR_ARG, "plan: a group of 2 on one rank is refused");
    as_error_clear();
    return;
  }
  int *member = malloc(6 * (size_t)size * sizeof *member);
  uint64_t order[6];
  as_status st = as_group_plan(it, 6, size, member, order);
  AS_EXPECT(st == AS_OK, "plan of 6 trials on %d ranks", size);
  int bad = 0;
  for (int i = 0; i < 6 && st == AS_OK; i++) {
    const as_group_item *x = &it[order[i]];
    const int *m = member + (size_t)i * size;
    for (int k = 0; k < x->ranks; k++) bad += m[k] < 0 || m[k] >= size || (k && m[k] <= m[k - 1]);
    if (i) bad += it[order[i - 1]].cost < x->cost;
  }
  AS_EXPECT(bad == 0, "plan: members distinct, sorted, in range; longest first (%d bad)", bad);
  free(member);
}

static void test_run(int rank, int size) {
  if (size < 2) {
    gctx c;
    memset(&c, 0, sizeof c);
    as_group_ops ops = {g_run, g_sink, &c, NULL, 0};
    as_group_summary sum;
    as_status st = as_group_run(MPI_COMM_WORLD, NULL, 0, MPI_Wtime(), 0, &ops, &sum);
    AS_EXPECT(st == AS_OK && sum.done == 0, "an empty group phase on one rank");
    return;
  }
  gctx *c = calloc(1, sizeof *c);
  c->rank = rank;
  c->n = 700; /* three tiles: with R = 4 one part is empty */
  c->d = 3;
  c->stages = 3;
  c->fail_trial = -1;
  c->early_trial = -1;
  enum { NT = 9 };
  as_group_item it[NT];
  for (int i = 0; i < NT; i++)
    it[i] = (as_group_item){(uint64_t)i, 2 + i % (size - 1), 1.0 + i % 3};
  as_group_ops ops = {g_run, g_sink, c, NULL, 0};
  as_group_summary sum;
  as_status st = as_group_run(MPI_COMM_WORLD, it, NT, MPI_Wtime(), 0, &ops, &sum);
  AS_EXPECT(st == AS_OK, "group phase of %d trials on %d ranks: %s", NT, size,
            as_status_message(st));
  int runs[MAXT], sunk[MAXT];
  MPI_Allreduce(c->runs, runs, MAXT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(c->sunk, sunk, MAXT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int bad = 0;
  for (int i = 0; i < NT; i++) bad += runs[i] != it[i].ranks || sunk[i] != 1;
  AS_EXPECT(bad == 0, "each trial ran on exactly its R ranks and was sunk once (%d bad)", bad);
  AS_EXPECT(c->bad_rows == 0 && c->bad_parts == 0,
            "every row arrived from its owner (%d bad rows, %d bad parts)", c->bad_rows,
            c->bad_parts);
  AS_EXPECT(sum.done == NT && sum.failed == 0 && !sum.stopped, "summary: %" PRIu64 " done",
            sum.done);

  /* A stop known to the last rank only: its trials are skipped, every rank learns of it. */
  memset(c->runs, 0, sizeof c->runs);
  memset(c->sunk, 0, sizeof c->sunk);
  if (rank == size - 1) as_signals_request_stop();
  st = as_group_run(MPI_COMM_WORLD, it, NT, MPI_Wtime(), 0, &ops, &sum);
  AS_EXPECT(st == AS_OK && sum.stopped && sum.skipped >= 1 && sum.done + sum.skipped == NT,
            "a stop on rank %d: %" PRIu64 " done, %" PRIu64 " skipped", size - 1, sum.done,
            sum.skipped);
  AS_EXPECT(*as_signals_flag() != 0, "the stop reached rank %d", rank);
  as_signals_reset();
  MPI_Barrier(MPI_COMM_WORLD);

  /* A failing part: every rank returns its status. */
  c->fail_trial = 0;
  st = as_group_run(MPI_COMM_WORLD, it, NT, MPI_Wtime(), 0, &ops, &sum);
  AS_EXPECT(st == AS_ERR_IO, "a failing part aborts every rank with its status (%s)",
            as_status_message(st));
  AS_EXPECT(strstr(as_error_get()->message, "injected failure") != NULL,
            "the failing part's message reaches rank %d: %s", rank, as_error_get()->message);
  as_error_clear();

  /* A part that returns early without a failure (its set-up failed on that rank only): the
   * others stop at their next stage, nobody records the trial, every rank stops. */
  c->fail_trial = -1;
  c->early_trial = 0;
  memset(c->sunk, 0, sizeof c->sunk);
  st = as_group_run(MPI_COMM_WORLD, it, NT, MPI_Wtime(), 0, &ops, &sum);
  int sunk0 = 0;
  MPI_Allreduce(&c->sunk[0], &sunk0, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  AS_EXPECT(st == AS_ERR_MPI && sunk0 == 0,
            "a part returning early: every rank stops (%s), trial 0 not recorded (%d)",
            as_status_message(st), sunk0);
  AS_EXPECT(strstr(as_error_get()->message, "returned before the others") != NULL,
            "and says why on rank %d: %s", rank, as_error_get()->message);
  as_error_clear();
  free(c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  as_error_context_set(rank, -1);
  test_rows();
  test_ranks_rule();
  test_plan(size);
  test_run(rank, size);
  int local = as_test_failures_, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rc = total ? 1 : 0;
  if (rank == 0) rc = as_test_finish("test_group") || rc;
  MPI_Finalize();
  return rank == 0 ? rc : (total ? 1 : 0);
}
