/* bench_classify: the classifier alone on the end states of paper-setting trials (n = 20,
 * d = 2, V = Q = K = I, tokens uniform on [-5, 5]^2, T = 5, RK4 dt = 0.1: as_trial_defaults),
 * as_dyn_bench_classify (dyn_bench.h): the end states computed once, then as_classify over all
 * of them ROUNDS times.
 * Usage: bench_classify [TRIALS [ROUNDS]]   (default 2000 trials, 5 rounds)
 * Prints the CPU time per classification of the fastest round and the digest (FNV-1a) of the
 * records without their timing fields, which a faster classifier must leave unchanged (compare
 * with a build of the previous commit). One core (OpenBLAS threads set to 1); a driver for
 * `perf record` too.
 * Usage: bench_classify hull3 [SETS [M]]   (default 200 sets of M = 20 points)
 * The 3-D vertex test alone (as_hull_is_vertex, k = 3, tol = 0, as leaders_init runs it): SETS
 * sets of M points uniform on [-5, 5]^3, every point tested, once without the distance (the
 * classifier's call; hull.c chooses the method) and once with it (always the certified
 * direction, else GLPK's exact LP). Prints the CPU microseconds per test of each and the
 * vertices each found, which must be equal; then the CPU microseconds per set of the whole
 * count (as_hull_count_3d, as the classifier counts hull_vertices at k = 3) and the vertices it
 * found, which must be the tests' too (uniform points: no two equal). */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/hull.h"
#include "attnsweep/rng.h"
#include "attnsweep/trial.h"
#include "dyn_bench.h"

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The 3-D vertex test with (want_dist = 1) or without the distance over every point of every
 * set: *us CPU microseconds per test, *vertices the vertices found. */
static as_status time_vertex3(as_hull *h, long sets, int m, const double *pts, int want_dist,
                              double *us, long *vertices) {
  as_status st = AS_OK;
  *vertices = 0;
  double t0 = cpu_seconds();
  for (long s = 0; s < sets; s++)
    for (int i = 0; i < m; i++) {
      int v = 0;
      double d = 0.0;
      AS_TRY(
          as_hull_is_vertex(h, 3, m, pts + (size_t)s * 3 * m, i, 0.0, &v, want_dist ? &d : NULL));
      *vertices += v;
    }
  *us = 1e6 * (cpu_seconds() - t0) / ((double)sets * m);
cleanup:
  return st;
}

static int bench_hull3(long sets, int m) {
  as_hull *h = NULL;
  double *pts = malloc((size_t)sets * 3 * m * sizeof *pts);
  double us_exact = 0.0, us_lp = 0.0;
  long v_exact = -1, v_lp = -2;
  as_rng g;
  as_rng_init(&g, 1, 0, AS_PURPOSE_TOKENS);
  if (pts) as_rng_fill_uniform(&g, pts, sets * 3 * m, -5.0, 5.0);
  as_status st = pts ? as_hull_create(3, m, &h) : AS_ERR_NOMEM;
  if (st == AS_OK) st = time_vertex3(h, sets, m, pts, 0, &us_exact, &v_exact);
  if (st == AS_OK) st = time_vertex3(h, sets, m, pts, 1, &us_lp, &v_lp);
  as_hull_destroy(&h);
  long v_count = 0;
  double us_count = 0.0;
  if (st == AS_OK && pts) {
    as_hull *h3 = NULL;
    st = as_hull_create(3, m, &h3);
    double t0 = cpu_seconds();
    for (long s = 0; s < sets && st == AS_OK; s++) {
      int c = -1;
      st = as_hull_count_3d(h3, m, pts + (size_t)s * 3 * m, &c);
      v_count += c;
    }
    us_count = 1e6 * (cpu_seconds() - t0) / (double)sets;
    as_hull_destroy(&h3);
  }
  free(pts);
  if (st != AS_OK || v_exact != v_lp || v_count != v_exact) {
    fprintf(stderr, "bench_classify hull3: failed (vertices %ld, %ld and counted %ld)\n", v_exact,
            v_lp, v_count);
    return 3;
  }
  printf("3-D vertex test, %ld sets of %d points uniform on [-5, 5]^3, tol 0: without the "
         "distance %.2f us per test, with it (certified direction or exact LP) %.2f us per test "
         "(CPU); %ld vertices either way\n",
         sets, m, us_exact, us_lp, v_exact);
  printf("3-D vertex count (as_hull_count_3d), the same sets: %.2f us per set of %d points (CPU); "
         "%ld vertices, as the tests found\n",
         us_count, m, v_count);
  return 0;
}

int main(int argc, char **argv) {
  openblas_set_num_threads(1);
  if (argc > 1 && strcmp(argv[1], "hull3") == 0) {
    long sets = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
    long m = argc > 3 ? strtol(argv[3], NULL, 10) : 20;
    if (sets < 1 || m < 1 || m > 4096) {
      fprintf(stderr, "bench_classify: SETS must be positive, M in 1..4096\n");
      return 2;
    }
    return bench_hull3(sets, (int)m);
  }
  long trials = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
  long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 5;
  if (trials < 1 || rounds < 1) {
    fprintf(stderr, "bench_classify: TRIALS and ROUNDS must be positive integers\n");
    return 2;
  }
  double us = 0.0;
  uint64_t digest = 0;
  if (as_dyn_bench_classify(trials, rounds, &us, &digest) != AS_OK) {
    fprintf(stderr, "bench_classify: failed\n");
    return 3;
  }
  printf("classify: n = 20, d = 2, V = Q = K = I, T = 5, rk4 dt = 0.1: %.2f us per trial at best "
         "(%ld trials x %ld rounds, CPU); record digest %016llx\n",
         us, trials, rounds, (unsigned long long)digest);
  return 0;
}
