/* bench_pspectral: spectral analysis of d x d triples (default d = 2048, V and M Gaussian)
 * with ScaLAPACK on the job's grids against LAPACK on rank 0.
 *   mpiexec -n R ./bench/bench_pspectral [d] [--grid PxQ] [--count K] [--family F]
 *                                        [--no-lapack]
 * --grid: the shape of every grid (the spec's spectral_grid; default 1x1); the job holds
 *   floor(R / (P Q)) grids. --count K: K triples (triple keys 1..K) as one batch
 *   (as_pspectral_run, the sweep's pre-pass), which prints the batch's wall time and its
 *   throughput; with K = 1 the phases of the analysis are printed too. --family: the V family
 *   (gaussian, perron, paranormal, symmetric, good, complex...; M Gaussian).
 * The LAPACK run (K = 1 only) happens first, with the other ranks waiting in a barrier; it also
 * checks agreement (eigenvalues, flags) and prints the largest eigenvalue difference.
 * CPU seconds (clock(), largest over the ranks for ScaLAPACK) are printed beside the wall
 * time: on a loaded machine they are the steadier figure (a rank waiting in a ScaLAPACK
 * receive busy-polls, so its CPU time also counts communication waits). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/cost.h"
#include "attnsweep/pspectral.h"
#include "attnsweep/record.h"

typedef struct bctx {
  int d;
  as_vfamily vf;
} bctx;

static void trial_of(const bctx *c, uint64_t key, as_trial *t) {
  as_trial_defaults(t);
  t->d = c->d;
  t->master_seed = 2048;
  t->triple_key = key;
  t->triple.vfamily = c->vf;
  t->triple.mfamily = AS_M_GAUSSIAN;
  t->triple.v_lambda = 1.5;
  t->triple.v_gap = 0.4;
  t->triple.v_dim_f = 3;
  t->triple.v_radius = 1.0;
  t->triple.v_kpos = c->d / 2;
}

static as_status build(uint64_t k, void *vctx, as_triple **out) {
  as_status st = AS_OK;
  const bctx *c = vctx;
  as_triple *tr = NULL;
  as_trial t;
  trial_of(c, 1 + k, &t);
  AS_TRY(as_triple_create(c->d, c->d, &tr));
  AS_TRY(as_triple_build(&t, tr));
  *out = tr;
  tr = NULL;
cleanup:
  as_triple_destroy(&tr);
  return st;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, d = 2048, lapack = 1, gp = 1, gq = 1, count = 1;
  bctx c = {0, AS_V_GAUSSIAN};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-lapack") == 0) {
      lapack = 0;
    } else if (strcmp(argv[i], "--grid") == 0 && i + 1 < argc) {
      if (sscanf(argv[++i], "%dx%d", &gp, &gq) != 2) gp = gq = 0;
    } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      count = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--family") == 0 && i + 1 < argc) {
      int v = as_enum_parse(&as_vfamily_table, argv[++i]);
      if (v >= 0) c.vf = (as_vfamily)v;
    } else {
      d = atoi(argv[i]);
    }
  }
  c.d = d;
  if (count > 1) lapack = 0;
  as_triple *tr = NULL;
  as_spectral *a = NULL;
  as_spectral **b = NULL;
  as_status *ist = NULL;
  char(*msg)[AS_RECORD_MSG] = NULL;
  as_pspectral *ps = NULL;
  int rc = 1;
  if (d < 1 || count < 1) {
    if (rank == 0) fprintf(stderr, "usage: bench_pspectral [d] [--grid PxQ] [--count K] ...\n");
    goto done;
  }
  b = calloc((size_t)count, sizeof *b);
  ist = calloc((size_t)count, sizeof *ist);
  msg = calloc((size_t)count, sizeof *msg);
  if (!b || !ist || !msg || as_triple_create(d, d, &tr) != AS_OK ||
      as_spectral_create(d, &a) != AS_OK)
    goto done;
  for (int k = 0; k < count; k++)
    if (as_spectral_create(d, &b[k]) != AS_OK) goto done;
  if (as_pspectral_create(MPI_COMM_WORLD, 1, gp, gq, &ps) != AS_OK) {
    if (rank == 0) fprintf(stderr, "grid: %s\n", as_error_get()->message);
    goto done;
  }
  double tl = NAN, cl = NAN;
  if (lapack && rank == 0) {
    as_trial t;
    trial_of(&c, 1, &t);
    if (as_triple_build(&t, tr) != AS_OK) goto done;
    double t0 = MPI_Wtime();
    clock_t c0 = clock();
    if (as_spectral_analyze(tr, 1e-10, a) != AS_OK) {
      fprintf(stderr, "LAPACK: %s\n", as_error_get()->message);
      goto done;
    }
    tl = MPI_Wtime() - t0;
    cl = (double)(clock() - c0) / CLOCKS_PER_SEC;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  clock_t c0 = clock();
  as_pspectral_batch batch = {(uint64_t)count, build, &c, 1e-10, NULL, NULL, 0, NULL};
  as_status st = as_pspectral_run(ps, &batch, b, ist, msg);
  double tp = MPI_Wtime() - t0, cp = (double)(clock() - c0) / CLOCKS_PER_SEC;
  MPI_Allreduce(MPI_IN_PLACE, &cp, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (st != AS_OK || ist[0] != AS_OK) {
    if (rank == 0)
      fprintf(stderr, "ScaLAPACK: %s\n", st != AS_OK ? as_error_get()->message : msg[0]);
    goto done;
  }
  if (rank == 0) {
    as_pspectral_times tm = as_pspectral_last_times(ps);
    printf("d = %d, V %s, M Gaussian, theorem %s, kpos %d, dim F %d\n", d,
           as_enum_label(&as_vfamily_table, c.vf), as_enum_label(&as_theorem_table, b[0]->theorem),
           b[0]->kpos, b[0]->dim_f);
    if (lapack) {
      double e = 0;
      for (int i = 0; i < d; i++)
        e = fmax(e, hypot(a->wr[i] - b[0]->wr[i], a->wi[i] - b[0]->wi[i]));
      const uint32_t mask = ~(uint32_t)(AS_FLAG_DISTRIBUTED | AS_FLAG_V_DIAGONALISABLE);
      printf("LAPACK, 1 rank:          %8.2f s, cpu %8.2f s (dgeev + dgesvd + dsyev + sign "
             "iteration)\n",
             tl, cl);
      printf("agreement: max |eig diff| / |lambda_1| = %.2e, flags %s\n",
             e / hypot(a->wr[0], a->wi[0]),
             (a->flags & mask) == (b[0]->flags & mask) ? "equal" : "DIFFER");
    }
    if (count == 1)
      printf("ScaLAPACK, grid %dx%d on %d rank(s): %8.2f s, cpu %8.2f s (eigenvalues %.2f, "
             "vectors %.2f, sym(M) %.2f, projector %.2f in %d Newton steps); model %.2f s\n",
             gp, gq, size, tp, cp, tm.eig, tm.vec, tm.sym, tm.proj, tm.sign_iters,
             as_cost_spectral_seconds(d, gp, gq));
    else
      printf("ScaLAPACK, %d triples on %d grid(s) of %dx%d (%d ranks): %8.2f s, %.3f triples/s, "
             "cpu %8.2f s; model %.2f s per triple\n",
             count, as_pspectral_grids(ps), gp, gq, size, tp, count / tp, cp,
             as_cost_spectral_seconds(d, gp, gq));
  }
  rc = 0;
done:
  as_pspectral_destroy(&ps);
  as_triple_destroy(&tr);
  as_spectral_destroy(&a);
  for (int k = 0; b && k < count; k++) as_spectral_destroy(&b[k]);
  free(b);
  free(ist);
  free(msg);
  MPI_Finalize();
  return rc;
}
