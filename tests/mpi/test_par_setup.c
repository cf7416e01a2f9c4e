/* Each rank pins its own BLAS threads (par.h): as_par_setup brings an OpenBLAS that runs
 * several threads down to one whatever OPENBLAS_NUM_THREADS says, ATTNSWEEP_BLAS_THREADS
 * overrides it, and a malformed override is a named error. Pass/fail is reduced over ranks. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/par.h"

/* OpenBLAS's own controls (declared in its cblas.h; by hand here, as in par.c). */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    /* A rank started with several BLAS threads (as OPENBLAS_NUM_THREADS=2 would do). */
    setenv("OPENBLAS_NUM_THREADS", "2", 1);
    unsetenv(AS_PAR_BLAS_THREADS_ENV);
    openblas_set_num_threads(2);
    AS_EXPECT(openblas_get_num_threads() == 2, "set-up of the test: %d threads",
              openblas_get_num_threads());
    AS_EXPECT(as_par_setup(MPI_COMM_WORLD) == AS_OK, "as_par_setup");
    AS_EXPECT(openblas_get_num_threads() == 1, "after as_par_setup: %d BLAS threads, expected 1",
              openblas_get_num_threads());

    /* The documented override. */
    int t = -1;
    setenv(AS_PAR_BLAS_THREADS_ENV, "2", 1);
    AS_EXPECT(as_par_blas_threads(&t) == AS_OK && t == 2 && openblas_get_num_threads() == 2,
              "override 2: status, reported %d, OpenBLAS %d", t, openblas_get_num_threads());
    setenv(AS_PAR_BLAS_THREADS_ENV, "", 1); /* empty: as if unset */
    AS_EXPECT(as_par_blas_threads(&t) == AS_OK && t == 1 && openblas_get_num_threads() == 1,
              "empty override: reported %d, OpenBLAS %d", t, openblas_get_num_threads());

    /* Malformed values are refused with the variable named, and change nothing. */
    const char *bad[] = {"0", "-1", "two", "2x", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      setenv(AS_PAR_BLAS_THREADS_ENV, bad[i], 1);
      as_error_clear();
      as_status st = as_par_blas_threads(&t);
      char buf[2 * AS_ERRMSG_MAX];
      as_error_format(buf, sizeof buf);
      AS_EXPECT(st == AS_ERR_ARG && t == 0 && strstr(buf, AS_PAR_BLAS_THREADS_ENV) &&
                    strstr(buf, bad[i]) && openblas_get_num_threads() == 1,
                "'%s': status %d, threads %d, message: %s", bad[i], (int)st, t, buf);
    }
    unsetenv(AS_PAR_BLAS_THREADS_ENV);
    as_error_clear();
  }

  int local = as_test_failures_, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rc = total ? 1 : 0;
  if (rank == 0) rc = as_test_finish("test_par_setup") || rc;
  MPI_Finalize();
  return rank == 0 ? rc : (total ? 1 : 0);
}
