/* bench_group: strong scaling of one trial over several ranks (ranks_per_trial; group.h,
 * docs/meanfield.md "Scaling").
 *
 *   mpiexec -n R bench_group [n] [d] [stages]       (defaults 50000 2 3)
 *
 * One z right-hand side (a stage: the streamed attention of as_dyn_rhs, V = M = I, tokens
 * uniform in [-5, 5]^d) timed `stages` times, first on rank 0 alone (the others wait in a
 * barrier), then split over all R ranks in whole tiles (as_dyn_part_rows), the rows of H
 * all-gathered after every stage as the sweep's group phase does (one Allreduce of four ints,
 * then an Allgatherv of n x d doubles). Prints the wall seconds per stage for 1 and R ranks,
 * the part spent in the exchange, the speed-up and the efficiency T1 / (R T_R), the bytes
 * gathered per rank and stage (8 n d), and whether the R-rank stage gave the 1-rank bits; and
 * the replicated part of a stage (everything every part does besides its own rows: the
 * transformed tokens, A = G M, F from H; timed with no attention rows at all), the serial
 * fraction of the projection.
 *
 *   bench_group --model N0 D T1 TREP [B ALPHA]
 *
 * prints, without MPI, the projection of docs/meanfield.md ("Projection to thousands of
 * ranks") from a measurement of the above at n = N0, d = D: T1 seconds per stage on one rank,
 * TREP seconds of its replicated part; B bytes/s and ALPHA s latency of the interconnect
 * (default 10 GB/s, 2 us). Per stage and rank, t_s = T1 / N0^2 and t_r = TREP / N0:
 *   compute t_s n^2 / R, replicated t_r n, exchange (R - 1) / R 8 n d / B + a(R),
 *   a(R) = R alpha + 2 log2(R) alpha (a ring all-gather and an all-reduce),
 *   E(R) = 1 / (1 + R (t_r n + 8 n d / B + a(R)) / (t_s n^2)),
 * and E again with t_s / 5 (a core 5 times faster), as a markdown table with a row per (n, R)
 * of model_rows[], R = 0 standing for ceil(n / AS_ATTENTION_STREAM_TILE) (one tile per rank,
 * the most ranks a trial can use). */
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/dynamics.h"
#include "linalg_dyn.h"

typedef struct bx {
  MPI_Comm comm;
  int parts;
  int *counts, *displs;
  double seconds; /* in the exchange */
} bx;

static as_status no_exchange(double *H, int n, int d, int lo, int hi, double t, double T,
                             void *vctx) {
  (void)H, (void)n, (void)d, (void)lo, (void)hi, (void)t, (void)T, (void)vctx;
  return AS_OK;
}

static as_status bench_exchange(double *H, int n, int d, int lo, int hi, double t_eval, double T,
                                void *vctx) {
  bx *x = vctx;
  (void)lo;
  (void)hi;
  (void)t_eval;
  (void)T;
  double t = MPI_Wtime();
  int off = 0;
  for (int p = 0; p < x->parts; p++) {
    int plo = 0, phi = 0;
    as_dyn_part_rows(n, p, x->parts, &plo, &phi);
    x->counts[p] = (phi - plo) * d;
    x->displs[p] = off;
    off += x->counts[p];
  }
  int v[4] = {0, 0, 1, 0}, r[4];
  if (MPI_Allreduce(v, r, 4, MPI_INT, MPI_MAX, x->comm) != MPI_SUCCESS ||
      MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, H, x->counts, x->displs, MPI_DOUBLE,
                     x->comm) != MPI_SUCCESS)
    return AS_ERR_MPI;
  x->seconds += MPI_Wtime() - t;
  return AS_OK;
}

/* Seconds per stage of `stages` right-hand sides on the ranks of comm (parts = its size);
 * F receives the last one. */
static int time_stages(MPI_Comm comm, int n, int d, int stages, int none, const double *Z,
                       double *F, double *per_stage, double *xchg) {
  int rank = 0, parts = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &parts);
  as_dyn *w = NULL;
  double *eye = calloc((size_t)d * d, sizeof *eye);
  for (int i = 0; i < d; i++) eye[(size_t)i * d + i] = 1.0;
  bx x = {comm, parts, calloc((size_t)parts, sizeof(int)), calloc((size_t)parts, sizeof(int)), 0};
  int lo = 0, hi = n;
  as_dyn_part_rows(n, rank, parts, &lo, &hi);
  if (none) lo = hi = 0; /* no attention rows: what every part does besides its own rows */
  if (as_dyn_create(n, d, &w) != AS_OK || as_dyn_set_triple(w, eye, eye, NULL) != AS_OK ||
      as_dyn_set_kernel(w, AS_DYN_KERNEL_STREAM) != AS_OK ||
      as_dyn_set_rows(w, lo, hi,
                      none        ? no_exchange
                      : parts > 1 ? bench_exchange
                                  : NULL,
                      parts > 1 ? &x : NULL) != AS_OK) {
    fprintf(stderr, "bench_group: set-up failed: %s\n", as_error_get()->message);
    return 1;
  }
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  for (int s = 0; s < stages; s++)
    if (as_dyn_rhs(w, AS_VARS_Z, 0.0, Z, F) != AS_OK) {
      fprintf(stderr, "bench_group: stage failed: %s\n", as_error_get()->message);
      return 1;
    }
  double mine[2] = {MPI_Wtime() - t0, x.seconds}, all[2];
  MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, comm);
  *per_stage = all[0] / stages;
  *xchg = all[1] / stages;
  as_dyn_destroy(&w);
  free(eye);
  free(x.counts);
  free(x.displs);
  return 0;
}

/* The (n, R) rows of the projection table; R = 0: one tile per rank. */
static const struct {
  double n;
  int R;
} model_rows[] = {{5e4, 2}, {5e4, 16},  {5e4, 64},   {5e4, 0},    {1e5, 128},
                  {1e5, 0}, {1e6, 512}, {1e6, 1024}, {1e6, 2048}, {1e6, 0}};

/* n with thousands separators (50,000). */
static void thousands(double n, char *buf, size_t len) {
  char digits[32];
  snprintf(digits, sizeof digits, "%.0f", n);
  size_t k = strlen(digits), o = 0;
  for (size_t i = 0; i < k && o + 2 < len; i++) {
    if (i && (k - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = '\0';
}

static double model_efficiency(double ts, double tr, double n, double d, double R, double B,
                               double alpha) {
  double a = R * alpha + 2.0 * log2(R) * alpha;
  return 1.0 / (1.0 + R * (tr * n + 8.0 * n * d / B + a) / (ts * n * n));
}

static int model(int argc, char **argv) {
  if (argc != 6 && argc != 8) {
    fprintf(stderr, "usage: bench_group --model N0 D T1 TREP [B ALPHA]\n");
    return 2;
  }
  char *end = NULL;
  double v[6] = {0, 0, 0, 0, 1e10, 2e-6};
  for (int i = 2; i < argc; i++) {
    v[i - 2] = strtod(argv[i], &end);
    if (end == argv[i] || *end || !(v[i - 2] > 0) || !isfinite(v[i - 2])) {
      fprintf(stderr, "bench_group --model: argument %d (%s) is not a positive number\n", i,
              argv[i]);
      return 2;
    }
  }
  const double n0 = v[0], d = v[1], ts = v[2] / (n0 * n0), tr = v[3] / n0, B = v[4], alpha = v[5];
  printf("bench_group --model: t_s = %.3g s per score (T1 %g s / n0^2, n0 = %g), t_r = %.3g s "
         "per token (%g s / n0), d = %g, B = %g bytes/s, alpha = %g s\n\n",
         ts, v[2], n0, tr, v[3], d, B, alpha);
  printf("| n | R | compute [s] | replicated [ms] | exchange [ms] | E(R) | E(R), t_s / 5 |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof model_rows / sizeof model_rows[0]; i++) {
    const double n = model_rows[i].n;
    const double R = model_rows[i].R ? model_rows[i].R : ceil(n / AS_ATTENTION_STREAM_TILE);
    const double xchg = (R - 1.0) / R * 8.0 * n * d / B + R * alpha + 2.0 * log2(R) * alpha;
    char nb[32];
    thousands(n, nb, sizeof nb);
    printf("| %s | %.0f | %.3g | %.3g | %.2g | %.3f | %.3f |\n", nb, R, ts * n * n / R,
           1e3 * tr * n, 1e3 * xchg, model_efficiency(ts, tr, n, d, R, B, alpha),
           model_efficiency(ts / 5.0, tr, n, d, R, B, alpha));
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--model") == 0) return model(argc, argv);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 50000, d = argc > 2 ? atoi(argv[2]) : 2,
            stages = argc > 3 ? atoi(argv[3]) : 3;
  const size_t nd = (size_t)n * d;
  double *Z = malloc(nd * sizeof *Z), *F1 = calloc(nd, sizeof *F1), *FR = calloc(nd, sizeof *FR);
  uint64_t s = 88172645463325252ull; /* xorshift: the same tokens on every rank */
  for (size_t i = 0; i < nd; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    Z[i] = -5.0 + 10.0 * (double)(s >> 11) / 9007199254740992.0;
  }
  double t1 = 0, x1 = 0, tR = 0, xR = 0, t0 = 0, x0 = 0;
  int bad = 0;
  MPI_Comm one = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &one);
  if (rank == 0) bad |= time_stages(one, n, d, stages, 0, Z, F1, &t1, &x1);
  if (rank == 0) bad |= time_stages(one, n, d, 5 * stages, 1, Z, FR, &t0, &x0);
  MPI_Barrier(MPI_COMM_WORLD); /* the others wait (sleeping in a barrier would be kinder) */
  if (size > 1) bad |= time_stages(MPI_COMM_WORLD, n, d, stages, 0, Z, FR, &tR, &xR);
  if (rank == 0) {
    printf("bench_group: n = %d, d = %d, %d stages (streamed attention, tiles of %d)\n", n, d,
           stages, AS_ATTENTION_STREAM_TILE);
    printf("  1 rank : %.3f s per stage; the replicated part (the whole stage but the "
           "attention rows): %.5f s\n",
           t1, t0);
    if (size > 1) {
      printf("  %d ranks: %.3f s per stage, of which %.4f s exchange (%.0f bytes gathered per "
             "rank)\n",
             size, tR, xR, 8.0 * (double)nd);
      printf("  speed-up %.2f, efficiency %.2f; R-rank stage identical to the 1-rank one: %s\n",
             t1 / tR, t1 / (size * tR), memcmp(F1, FR, nd * sizeof *F1) == 0 ? "yes" : "NO");
    }
  }
  if (one != MPI_COMM_NULL) MPI_Comm_free(&one);
  free(Z);
  free(F1);
  free(FR);
  MPI_Finalize();
  return bad;
}
