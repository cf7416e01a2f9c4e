/* HDF5 triples and tokens: a file written here with the HDF5 C API is read back into trials
 * (values, mscale, file_mscale), and every kind of bad file gets AS_ERR_DATA naming the file
 * and the dataset. */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "as_test.h"
#include "attnsweep/matfile.h"
#include "attnsweep/tokens.h"
#include "attnsweep/triple.h"

static void write_ds(hid_t fid, const char *name, int rank, const hsize_t *dims,
                     const double *data) {
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t ds = H5Dcreate2(fid, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  AS_EXPECT(ds >= 0 && H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0,
            "write %s", name);
  H5Dclose(ds);
  H5Sclose(sp);
}

static void write_file(const char *path, int variant) {
  hid_t fid = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(fid, "/triples", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g2 = H5Gcreate2(fid, "/tokens", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  double V[2 * 9], M[2 * 9], X[4 * 3];
  for (int k = 0; k < 18; k++) {
    V[k] = 1 + k;
    M[k] = 100 + k;
  }
  for (int k = 0; k < 12; k++) X[k] = 0.5 * k;
  if (variant == 1) V[4] = NAN; /* triple 0, entry (1, 1) */
  hsize_t d3[3] = {2, 3, 3}, dx[2] = {4, 3};
  write_ds(fid, "/triples/V", 3, d3, V);
  if (variant == 2) {
    hsize_t dq[3] = {2, 2, 3};
    write_ds(fid, "/triples/Q", 3, dq, M); /* Q without K */
  } else if (variant == 3) {
    hsize_t dq[3] = {2, 2, 3};
    write_ds(fid, "/triples/Q", 3, dq, V);
    write_ds(fid, "/triples/K", 3, dq, M);
  } else {
    write_ds(fid, "/triples/M", 3, d3, M);
  }
  write_ds(fid, "/tokens/start", 2, dx, X);
  double ms = 0.5;
  hid_t as = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate2(g, "mscale", H5T_IEEE_F64LE, as, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(at, H5T_NATIVE_DOUBLE, &ms);
  H5Aclose(at);
  H5Sclose(as);
  H5Gclose(g2);
  H5Gclose(g);
  H5Fclose(fid);
}

static as_trial file_trial(const char *path, int d) {
  as_trial t;
  as_trial_defaults(&t);
  t.d = d;
  t.n = 4;
  t.triple.vfamily = AS_V_FILE;
  t.triple.mfamily = AS_M_FILE;
  t.triple.file.text = path;
  t.triple.file_index = 1;
  t.init.kind = AS_INIT_FILE;
  t.init.file.text = path;
  t.init.dataset.text = "start";
  return t;
}

/* Loading t fails with AS_ERR_DATA and a message containing a and b. */
static void expect_bad(as_trial *t, const char *a, const char *b, const char *what) {
  as_matfile *mf = NULL;
  as_error_clear();
  as_status st = as_matfile_load(t, &mf);
  const char *msg = as_error_get()->message;
  AS_EXPECT(st == AS_ERR_DATA && mf == NULL, "%s: status %d", what, (int)st);
  AS_EXPECT(strstr(msg, a) != NULL && strstr(msg, b) != NULL, "%s: message '%s'", what, msg);
  AS_EXPECT(t->triple.V.data == NULL && t->init.data.data == NULL, "%s: no dangling pointers",
            what);
  as_error_clear();
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char path[256];
  snprintf(path, sizeof path, "/tmp/as_test_matfile_%d.h5", (int)getpid());
  write_file(path, 0);

  int k = 0, d = 0, m = 0;
  AS_EXPECT(as_matfile_info(path, &k, &d, &m) == AS_OK && k == 2 && d == 3 && m == 3,
            "info %d %d %d", k, d, m);

  as_trial t = file_trial(path, 3);
  t.triple.file_mscale = 2.0;
  as_matfile *mf = NULL;
  AS_EXPECT(as_matfile_load(&t, &mf) == AS_OK, "load: %s", as_error_get()->message);
  AS_EXPECT(t.triple.V.data && t.triple.V.data[0] == 10 && t.triple.V.data[8] == 18, "V[1]");
  AS_EXPECT(t.triple.M.data && t.triple.M.data[0] == 0.5 * 109, "M[1] times mscale");
  AS_EXPECT(t.init.data.data && t.init.data.data[11] == 5.5, "tokens");
  as_triple *tr = NULL;
  AS_EXPECT(as_triple_create(3, 3, &tr) == AS_OK && as_triple_build(&t, tr) == AS_OK, "build");
  AS_EXPECT(tr && tr->M[4] == 2.0 * 0.5 * 113 && tr->V[4] == 14, "file_mscale on top: %g",
            tr ? tr->M[4] : 0);
  double X[12];
  AS_EXPECT(as_tokens_init(&t, X) == AS_OK && X[3] == 1.5, "tokens copied");
  as_triple_destroy(&tr);

  /* Reuse: another trial asking for exactly the same data gets the loaded buffers; a trial
   * that differs in triple index, dataset, n or family does not, and is left untouched. */
  as_trial u = file_trial(path, 3);
  AS_EXPECT(as_matfile_reuse(mf, &u) == 1 && u.triple.V.data == t.triple.V.data &&
                u.triple.M.data == t.triple.M.data && u.init.data.data == t.init.data.data,
            "same request reuses the buffers");
  const char other_name[] = "/tmp/other.h5"; /* same path text in another buffer */
  char same_path[256];
  snprintf(same_path, sizeof same_path, "%s", path);
  u = file_trial(same_path, 3);
  AS_EXPECT(as_matfile_reuse(mf, &u) == 1, "equal file name in another string reuses");
  for (int c = 0; c < 5; c++) {
    u = file_trial(path, 3);
    if (c == 0) u.triple.file_index = 0;
    if (c == 1) u.init.dataset.text = "other";
    if (c == 2) u.n = 5;
    if (c == 3) u.triple.vfamily = AS_V_IDENTITY;
    if (c == 4) u.triple.file.text = other_name;
    AS_EXPECT(as_matfile_reuse(mf, &u) == 0 && u.triple.V.data == NULL && u.init.data.data == NULL,
              "different request %d is not served from the loaded data", c);
  }
  AS_EXPECT(as_matfile_reuse(NULL, &u) == 0, "nothing loaded: no reuse");
  as_matfile_destroy(&mf);
  as_matfile_destroy(&mf);

  /* bad requests on a good file */
  t = file_trial(path, 3);
  t.triple.file_index = 2;
  expect_bad(&t, path, "index 2", "index out of range");
  t = file_trial(path, 4);
  expect_bad(&t, "/triples/V", "3 x 3", "d mismatch");
  t = file_trial(path, 3);
  t.init.dataset.text = "nothere";
  expect_bad(&t, path, "/tokens/nothere", "missing tokens dataset");
  t = file_trial(path, 3);
  t.n = 5;
  expect_bad(&t, "/tokens/start", "n x d", "n mismatch");
  t = file_trial("/nonexistent/dir/w.h5", 3);
  expect_bad(&t, "/nonexistent/dir/w.h5", "cannot open", "missing file");
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("not hdf5\n", f);
    fclose(f);
  }
  t = file_trial(path, 3);
  expect_bad(&t, path, "not an HDF5 file", "text file");

  /* bad files */
  write_file(path, 1);
  t = file_trial(path, 3);
  t.triple.file_index = 0;
  expect_bad(&t, "/triples/V", "(1, 1)", "NaN entry");
  write_file(path, 2);
  t = file_trial(path, 3);
  t.triple.vfamily = AS_V_IDENTITY;
  expect_bad(&t, "/triples/Q", "without /triples/K", "Q without K");
  /* Q and K with m = 2 rows (item 1 of K = entries 6.. of the M data): fine when the trial
   * says m_rows = 2, bad otherwise */
  write_file(path, 3);
  t = file_trial(path, 3);
  expect_bad(&t, "/triples/Q", "2 x 3", "m mismatch");
  t = file_trial(path, 3);
  t.triple.m_rows = 2;
  AS_EXPECT(as_matfile_load(&t, &mf) == AS_OK && t.triple.Q.data && t.triple.K.data &&
                t.triple.K.data[0] == 0.5 * 106 && t.triple.M.data == NULL,
            "Q K loaded, K scaled: %s", as_error_get()->message);
  AS_EXPECT(as_matfile_info(path, &k, &d, &m) == AS_OK && m == 2, "info m = %d", m);
  as_matfile_destroy(&mf);
  /* non-square V */
  hid_t fid = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(fid, "/triples", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  double v6[6] = {1, 2, 3, 4, 5, 6};
  hsize_t dn[3] = {1, 3, 2};
  write_ds(fid, "/triples/V", 3, dn, v6);
  H5Gclose(g);
  H5Fclose(fid);
  AS_EXPECT(as_matfile_info(path, &k, &d, &m) == AS_ERR_DATA &&
                strstr(as_error_get()->message, "not square"),
            "non-square: %s", as_error_get()->message);
  as_error_clear();
  t = file_trial(path, 3);
  t.triple.file_index = 0;
  t.init.kind = AS_INIT_BOX;
  expect_bad(&t, "/triples/V", "3 x 2", "non-square load");
  t.triple.vfamily = AS_V_IDENTITY; /* only M from this file: missing */
  expect_bad(&t, path, "/triples/M", "no M");
  remove(path);
  int rc = as_test_finish("test_matfile");
  MPI_Finalize();
  return rc;
}
