/* bench_classify: the classifier alone on the end states of paper-setting trials (n = 20,
 * d = 2, V = Q = K = I, tokens uniform on [-5, 5]^2, T = 5, RK4 dt = 0.1: as_trial_defaults),
 * as_dyn_bench_classify (dyn_bench.h): the end states computed once, then as_classify over all
 * of them ROUNDS times.
 * Usage: bench_classify [TRIALS [ROUNDS]]   (default 2000 trials, 5 rounds)
 * Prints the CPU time per classification of the fastest round and the digest (FNV-1a) of the
 * records without their timing fields, which a faster classifier must leave unchanged (compare
 * with a build of the previous commit). One core (OpenBLAS threads set to 1); a driver for
 * `perf record` too. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dyn_bench.h"

int main(int argc, char **argv) {
  openblas_set_num_threads(1);
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
