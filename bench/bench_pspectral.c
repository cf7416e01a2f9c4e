/* bench_pspectral: spectral analysis of one non-symmetric d x d triple (default d = 2048,
 * V Gaussian, M Gaussian) with ScaLAPACK on all ranks of the run against LAPACK on rank 0.
 *   mpiexec -n 2 ./bench/bench_pspectral [d] [--no-lapack]
 * Prints both times and the phases of each; the LAPACK run happens first, with the other
 * ranks waiting in a barrier (on a machine with as many cores as ranks it has a core alone).
 * Also checks agreement (eigenvalues, flags) and prints the largest eigenvalue difference.
 * CPU seconds (clock(), largest over the ranks for ScaLAPACK) are printed beside the wall
 * time: on a loaded machine they are the steadier figure (an MPI rank waiting in a receive
 * busy-polls, so ScaLAPACK CPU time also counts communication waits). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/pspectral.h"
#include "attnsweep/record.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, d = 2048, lapack = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-lapack") == 0)
      lapack = 0;
    else
      d = atoi(argv[i]);
  }
  as_trial t;
  as_trial_defaults(&t);
  t.d = d;
  t.master_seed = 2048;
  t.triple_key = 1;
  t.triple.vfamily = AS_V_GAUSSIAN;
  t.triple.mfamily = AS_M_GAUSSIAN;
  as_triple *tr = NULL;
  as_spectral *a = NULL, *b = NULL;
  as_pspectral *ps = NULL;
  int rc = 1;
  if (as_triple_create(d, d, &tr) != AS_OK || as_spectral_create(d, &a) != AS_OK ||
      as_spectral_create(d, &b) != AS_OK || as_pspectral_create(MPI_COMM_WORLD, 1, &ps) != AS_OK)
    goto done;
  if (rank == 0 && as_triple_build(&t, tr) != AS_OK) goto done;
  double tl = NAN, cl = NAN;
  if (lapack && rank == 0) {
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
  as_status st = as_pspectral_analyze(ps, tr, 1e-10, b);
  double tp = MPI_Wtime() - t0, cp = (double)(clock() - c0) / CLOCKS_PER_SEC;
  MPI_Allreduce(MPI_IN_PLACE, &cp, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (st != AS_OK) {
    fprintf(stderr, "rank %d ScaLAPACK: %s\n", rank, as_error_get()->message);
    goto done;
  }
  if (rank == 0) {
    as_pspectral_times tm = as_pspectral_last_times(ps);
    printf("d = %d, V and M Gaussian (non-symmetric), theorem %s, kpos %d, dim F %d\n", d,
           as_enum_label(&as_theorem_table, b->theorem), b->kpos, b->dim_f);
    if (lapack) {
      double e = 0;
      for (int i = 0; i < d; i++) e = fmax(e, hypot(a->wr[i] - b->wr[i], a->wi[i] - b->wi[i]));
      const uint32_t mask = ~(uint32_t)(AS_FLAG_DISTRIBUTED | AS_FLAG_V_DIAGONALISABLE);
      printf("LAPACK, 1 rank:          %8.2f s, cpu %8.2f s (dgeev + dgesvd + dsyev + sign "
             "iteration)\n",
             tl, cl);
      printf("agreement: max |eig diff| / |lambda_1| = %.2e, flags %s\n",
             e / hypot(a->wr[0], a->wi[0]),
             (a->flags & mask) == (b->flags & mask) ? "equal" : "DIFFER");
    }
    printf("ScaLAPACK, %d rank(s):    %8.2f s, cpu %8.2f s (eigenvalues %.2f, vectors %.2f, "
           "sym(M) %.2f, projector %.2f in %d Newton steps)\n",
           size, tp, cp, tm.eig, tm.vec, tm.sym, tm.proj, tm.sign_iters);
  }
  rc = 0;
done:
  as_pspectral_destroy(&ps);
  as_triple_destroy(&tr);
  as_spectral_destroy(&a);
  as_spectral_destroy(&b);
  MPI_Finalize();
  return rc;
}
