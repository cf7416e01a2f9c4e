/* bench_crc: throughput of CRC-32 (src/io/crc32.c) on 1 KiB buffers (a journal entry or a
 * results row) and on 1 MiB buffers (a bulk slab), through the path the dispatch picks on this
 * CPU and through the tables alone (a child process with ATTNSWEEP_ISA=baseline: the path is
 * chosen once per process).
 *
 *   bench_crc [seconds_per_figure]      (default 0.5)
 *
 * Prints GB/s (10^9 bytes per second of CPU time, one core) per path and size, best of five
 * repetitions, and a checksum of the CRCs (equal for both paths). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crc32.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* GB/s of as_crc32 over the len bytes at b, calls repeated for about secs seconds, best of
 * five; *sum collects the CRCs (so no call is dead code). */
static double rate(const unsigned char *b, size_t len, double secs, uint32_t *sum) {
  long calls = 1;
  double t0 = now();
  while (now() - t0 < 0.02) {
    for (long i = 0; i < calls; i++) *sum ^= as_crc32(b, len);
    calls *= 2;
  }
  calls = (long)((double)calls / (now() - t0) * secs / 5.0) + 1;
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    t0 = now();
    uint32_t acc = 0;
    for (long i = 0; i < calls; i++) acc += as_crc32(b, len);
    const double gbs = (double)len * (double)calls / (now() - t0) * 1e-9;
    *sum ^= acc;
    if (gbs > best) best = gbs;
  }
  return best;
}

static int measure(double secs) {
  const size_t sizes[2] = {1024, 1u << 20};
  unsigned char *b = malloc(sizes[1]);
  if (!b) {
    fprintf(stderr, "bench_crc: out of memory\n");
    return 1;
  }
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < sizes[1]; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    b[i] = (unsigned char)(s >> 56);
  }
  const char *path = as_crc32_accelerated() ? "carry-less multiplication" : "tables (slicing by 8)";
  for (int k = 0; k < 2; k++) {
    uint32_t sum = 0;
    const double gbs = rate(b, sizes[k], secs, &sum);
    printf("%-26s %8zu bytes  %7.2f GB/s  (crc %08x)\n", path, sizes[k], gbs,
           (unsigned)as_crc32(b, sizes[k]));
  }
  free(b);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  double secs = 0.5;
  char *end = NULL;
  if (argc == 2) secs = strtod(argv[1], &end);
  if (argc > 2 || !(secs > 0) || (end && *end)) {
    fprintf(stderr, "usage: bench_crc [seconds_per_figure > 0]\n");
    return 2;
  }
  fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    perror("bench_crc: fork");
    return 1;
  }
  if (pid == 0) {
    setenv("ATTNSWEEP_ISA", "baseline", 1);
    _exit(measure(secs));
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_crc: the tables' run failed\n");
    return 1;
  }
  return measure(secs);
}
