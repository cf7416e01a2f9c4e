/* MPI and HDF5 checking macros: a failing MPI call and a failing HDF5 call on every rank are
 * recorded with file, line, function, rank and the library's own message. Pass/fail is
 * reduced over ranks. */
#include <hdf5.h>
#include <mpi.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/iocheck.h"

static as_status bad_send(MPI_Comm comm, int size) {
  as_status st = AS_OK;
  int x = 1;
  AS_MPI_CHECK(MPI_Send(&x, 1, MPI_INT, size + 5, 0, comm)); /* rank out of range */
cleanup:
  return st;
}

static as_status bad_open(void) {
  as_status st = AS_OK;
  hid_t f = H5I_INVALID_HID;
  AS_H5_ID(f, H5Fopen("/nonexistent/dir/file.h5", H5F_ACC_RDONLY, H5P_DEFAULT));
cleanup:
  if (f >= 0) H5Fclose(f);
  return st;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  as_h5_quiet();

  as_error_context_set(rank, -1);
  as_error_clear();
  as_status st = bad_send(MPI_COMM_WORLD, size);
  AS_EXPECT(st == AS_ERR_MPI, "MPI failure status %d", (int)st);
  char buf[2 * AS_ERRMSG_MAX];
  as_error_format(buf, sizeof buf);
  char want[32];
  snprintf(want, sizeof want, "[rank %d]", rank);
  AS_EXPECT(strstr(buf, want) && strstr(buf, "bad_send") && strstr(buf, "MPI_Send") &&
                strstr(buf, "test_iocheck.c"),
            "message: %s", buf);

  as_error_clear();
  st = bad_open();
  AS_EXPECT(st == AS_ERR_HDF5, "HDF5 failure status %d", (int)st);
  as_error_format(buf, sizeof buf);
  AS_EXPECT(strstr(buf, "H5Fopen") && strstr(buf, "HDF5:") && strstr(buf, "bad_open") &&
                strstr(buf, want),
            "message: %s", buf);

  int local = as_test_failures_, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rc = total ? 1 : 0;
  if (rank == 0) rc = as_test_finish("test_iocheck") || rc;
  MPI_Finalize();
  return rank == 0 ? rc : (total ? 1 : 0);
}
