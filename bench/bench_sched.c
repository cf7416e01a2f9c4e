/* bench_sched: figures of the coordinator/worker scheduler (sched.h).
 *
 *   mpiexec -n R bench_sched [coord|speedup|all] [ms_per_trial] [trials]
 *
 * coord    The coordinator alone: trials that do nothing, rank 0 only coordinates (when
 *          R > 1). Chunks of one trial (the guided self-scheduling tail, the worst case)
 *          and default chunks. Prints assignments/s and chunks/s achieved with the R ranks
 *          given, the coordinator's service time per chunk (CPU it spends per request), and
 *          from it the rank count at which one coordinator saturates for trial costs of 1,
 *          10 and 100 ms: ranks_sat = trial_cost / service_time_per_chunk (each worker asks
 *          once per trial when chunks are single trials).
 * speedup  A sweep of small CPU-bound trials (a fixed compute loop calibrated to
 *          ms_per_trial, default 2 ms; `trials` of them, default 1000), first on rank 0
 *          alone (the other ranks sleep), then on all R ranks with the default options
 *          (rank 0 coordinates and runs trials). Prints trials/s for 1 and R ranks and the
 *          ratio.
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/sched.h"

typedef struct bctx {
  long iters;        /* compute loop length per trial (0: the trial does nothing) */
  uint64_t sunk;     /* records sunk here */
  volatile double x; /* keeps the loop alive */
} bctx;

static double b_cost(uint64_t trial, void *ctx) {
  (void)ctx;
  (void)trial;
  return 1.0; /* equal costs: the order is the index order */
}

static as_status b_run(uint64_t trial, as_record *rec, void *ctx) {
  bctx *b = ctx;
  double x = (double)trial * 1e-9 + 1.0;
  for (long k = 0; k < b->iters; k++) x = x * 0.999999999 + 1e-9; /* a latency-bound chain */
  b->x = x;
  rec->trial = trial;
  rec->outcome = AS_OUT_REACHED_T;
  rec->wall_time = 0;
  return AS_OK;
}

static as_status b_sink(const as_record *recs, int count, void *ctx) {
  bctx *b = ctx;
  (void)recs;
  b->sunk += (uint64_t)count;
  return AS_OK;
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleeping_barrier(MPI_Comm comm) {
  MPI_Request rq;
  MPI_Ibarrier(comm, &rq);
  for (;;) {
    int flag = 0;
    MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
    if (flag) break;
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
}

static int sweep(MPI_Comm comm, bctx *b, uint64_t n, const as_sched_opts *o, as_sched_summary *s) {
  uint64_t *todo = malloc((size_t)n * sizeof *todo);
  if (!todo) return 1;
  for (uint64_t i = 0; i < n; i++) todo[i] = i;
  as_sched_ops ops = {b_cost, b_run, b_sink, NULL, b, NULL};
  as_status st = as_sched_run(comm, todo, n, o, &ops, s);
  free(todo);
  if (st != AS_OK) {
    char buf[2 * AS_ERRMSG_MAX];
    as_error_format(buf, sizeof buf);
    fprintf(stderr, "bench_sched: %s\n", buf);
    return 1;
  }
  return 0;
}

static int bench_coord(int rank, int size) {
  bctx b;
  memset(&b, 0, sizeof b);
  as_sched_opts o;
  as_sched_summary s;
  const uint64_t n1 = 60000, n2 = 400000;

  /* Single-trial chunks: one request, one reply per trial. */
  as_sched_opts_default(&o);
  o.coordinator_runs = size > 1 ? 0 : 1;
  o.max_chunk = 1;
  o.prefetch = 1;
  o.flush_interval = 1e9;
  o.batch_max = 4096;
  if (sweep(MPI_COMM_WORLD, &b, n1, &o, &s)) return 1;
  double svc = s.chunks ? s.coord_service / (double)s.chunks : 0.0;
  if (rank == 0) {
    printf("coord: ranks %d (coordinator %s), %" PRIu64 " empty trials, chunks of 1\n", size,
           size > 1 ? "only coordinates" : "alone runs everything", s.done);
    printf("coord: assignments/s %.0f  chunks/s %.0f  elapsed %.3f s\n", (double)s.done / s.elapsed,
           (double)s.chunks / s.elapsed, s.elapsed);
    if (size > 1) {
      printf(
          "coord: coordinator service time %.2f us/chunk (capacity %.0f chunks/s, busy %.0f%%)\n",
          1e6 * svc, svc > 0 ? 1.0 / svc : 0.0, 100.0 * s.coord_service / s.elapsed);
      const double costs[3] = {1e-3, 1e-2, 1e-1};
      for (int k = 0; k < 3; k++)
        printf("coord: saturation at trial cost %5.0f ms: ~%.0f ranks (chunks of 1; x min_chunk "
               "beyond)\n",
               1e3 * costs[k], svc > 0 ? costs[k] / svc : 0.0);
    } else {
      printf("coord: scheduler overhead on one rank %.2f us/trial\n",
             1e6 * s.elapsed / (double)s.done);
    }
  }
  as_sched_summary_clear(&s);

  /* Default guided self-scheduling chunks. */
  as_sched_opts_default(&o);
  o.coordinator_runs = size > 1 ? 0 : 1;
  o.flush_interval = 1e9;
  o.batch_max = 4096;
  if (sweep(MPI_COMM_WORLD, &b, n2, &o, &s)) return 1;
  if (rank == 0)
    printf("coord: default chunks (k 2, max 256): %" PRIu64 " empty trials in %" PRIu64
           " chunks: assignments/s %.0f  chunks/s %.0f\n",
           s.done, s.chunks, (double)s.done / s.elapsed, (double)s.chunks / s.elapsed);
  as_sched_summary_clear(&s);
  return 0;
}

static int bench_speedup(int rank, int size, double ms, uint64_t n) {
  bctx b;
  memset(&b, 0, sizeof b);
  /* Calibrate the loop to ms milliseconds of CPU time on rank 0 (CPU time, not wall time:
   * the neighbours on a shared machine must not shorten the trials). */
  if (rank == 0) {
    long it = 100000;
    for (;;) {
      b.iters = it;
      double t = cpu_seconds();
      as_record r;
      for (int k = 0; k < 5; k++) b_run((uint64_t)k, &r, &b);
      double per = (cpu_seconds() - t) / 5;
      if (per > 2e-4) {
        b.iters = (long)((double)it * ms * 1e-3 / per);
        break;
      }
      it *= 4;
    }
  }
  MPI_Bcast(&b.iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);

  as_sched_opts o;
  as_sched_opts_default(&o);
  MPI_Comm solo;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
  /* Alternate 1 rank and all ranks, best of `reps` each: load from neighbours only ever
   * slows a run down, so the fastest run is the closest to the machine's own figure. */
  const int reps = 3;
  double best1 = 0, best2 = 0, cpu_best = 0, wall_best = 0;
  uint64_t *rank_done = NULL;
  double *cpu = malloc((size_t)size * sizeof *cpu);
  if (rank == 0) rank_done = calloc((size_t)size, sizeof *rank_done);
  for (int rep = 0; rep < reps; rep++) {
    as_sched_summary s1, s2;
    memset(&s1, 0, sizeof s1);
    int rc = 0;
    if (rank == 0) rc = sweep(solo, &b, n, &o, &s1);
    sleeping_barrier(MPI_COMM_WORLD);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc) return 1;
    double c0 = cpu_seconds();
    if (sweep(MPI_COMM_WORLD, &b, n, &o, &s2)) return 1;
    double mycpu = cpu_seconds() - c0;
    MPI_Gather(&mycpu, 1, MPI_DOUBLE, cpu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double r1 = (double)s1.done / s1.elapsed, r2 = (double)s2.done / s2.elapsed;
      printf("speedup: run %d: 1 rank %.1f trials/s, %d ranks %.1f trials/s\n", rep + 1, r1, size,
             r2);
      if (r1 > best1) best1 = r1;
      if (r2 > best2) {
        best2 = r2;
        wall_best = s2.elapsed;
        cpu_best = 0;
        for (int q = 0; q < size; q++) {
          cpu_best += cpu[q];
          rank_done[q] = s2.rank_done[q];
        }
      }
    }
    as_sched_summary_clear(&s1);
    as_sched_summary_clear(&s2);
  }
  if (solo != MPI_COMM_NULL) MPI_Comm_free(&solo);
  if (rank == 0) {
    printf("speedup: %" PRIu64 " trials of %.2f ms CPU (loop %ld iterations), best of %d\n", n, ms,
           b.iters, reps);
    printf("speedup: 1 rank  %.1f trials/s\n", best1);
    printf("speedup: %d ranks %.1f trials/s (per rank:", size, best2);
    for (int q = 0; q < size; q++) printf(" %" PRIu64, rank_done[q]);
    printf(")\n");
    printf("speedup: ratio %.3f (ideal %d)\n", best2 / best1, size);
    /* On a shared machine the wall-clock ratio also measures the neighbours; the CPU time
     * shows what the ranks spent beyond their trials, and how much CPU they were given. */
    printf("speedup: %d ranks: CPU %.3f s in %.3f s wall (%.2f cores); CPU per trial %.3f ms "
           "(trial alone %.3f ms)\n",
           size, cpu_best, wall_best, cpu_best / wall_best, 1e3 * cpu_best / (double)n, ms);
  }
  free(cpu);
  free(rank_done);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const char *what = argc > 1 ? argv[1] : "all";
  double ms = argc > 2 ? atof(argv[2]) : 2.0;
  uint64_t n = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
  int rc = 0;
  if (!(ms > 0) || n == 0 ||
      (strcmp(what, "all") && strcmp(what, "coord") && strcmp(what, "speedup"))) {
    if (rank == 0)
      fprintf(stderr, "usage: mpiexec -n R bench_sched [coord|speedup|all] [ms_per_trial > 0] "
                      "[trials > 0]\n");
    MPI_Finalize();
    return 2;
  }
  if (!strcmp(what, "all") || !strcmp(what, "coord")) rc |= bench_coord(rank, size);
  if (!rc && (!strcmp(what, "all") || !strcmp(what, "speedup")))
    rc |= bench_speedup(rank, size, ms, n);
  MPI_Finalize();
  return rc;
}
