/* iocheck.c: turning MPI return codes and HDF5 error stacks into the error record. */
#include "attnsweep/iocheck.h"

#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

as_status as_error_from_mpi(int rc, const char *file, int line, const char *func,
                            const char *call) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
  return as_error_set(AS_ERR_MPI, file, line, func, "%s: %s", call, msg);
}

typedef struct h5_walk {
  char *buf;
  size_t len;
  size_t used;
} h5_walk;

/* Appends one frame of the HDF5 error stack: "HDF5 func (file:line): description". */
static herr_t h5_walk_cb(unsigned n, const H5E_error2_t *e, void *data) {
  h5_walk *w = data;
  if (w->used + 1 >= w->len) return 0;
  int k = snprintf(w->buf + w->used, w->len - w->used, "%s#%u %s(): %s", n ? "; " : " | HDF5: ", n,
                   e->func_name ? e->func_name : "?", e->desc ? e->desc : "");
  if (k > 0) w->used += (size_t)k < w->len - w->used ? (size_t)k : w->len - w->used - 1;
  return 0;
}

/* " on A" or " on one of A, B, C" for the HDF5 files this process has open, into buf ("" when
 * none): the failing call is on one of them, almost always the only one. Called after the error
 * stack was read; clears what these queries push. */
static void open_file_names(char *buf, size_t len) {
  enum { MAXF = 4 };
  hid_t ids[MAXF];
  buf[0] = '\0';
  ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE);
  ssize_t got = n > 0 ? H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_FILE, MAXF, ids) : 0;
  size_t used = 0;
  for (ssize_t i = 0; i < got && used + 1 < len; i++) {
    char name[512];
    if (H5Fget_name(ids[i], name, sizeof name) <= 0) continue;
    int k = snprintf(buf + used, len - used, "%s%s",
                     used > 0 ? ", "
                     : n > 1  ? " on one of "
                              : " on ",
                     name);
    if (k > 0) used += (size_t)k < len - used ? (size_t)k : len - used - 1;
  }
  if (used > 0 && n > got && used + 1 < len) snprintf(buf + used, len - used, ", ...");
  H5Eclear2(H5E_DEFAULT);
}

/* Creating or opening a file names it in HDF5's own stack ("name = ..."), and the files open
 * then are others. */
static int opens_a_file(const char *call) {
  return strncmp(call, "H5Fcreate", 9) == 0 || strncmp(call, "H5Fopen", 7) == 0;
}

as_status as_error_from_h5(const char *file, int line, const char *func, const char *call) {
  char stack[AS_ERRMSG_MAX] = "", where[768] = "";
  h5_walk w = {stack, sizeof stack, 0};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, h5_walk_cb, &w);
  H5Eclear2(H5E_DEFAULT);
  if (!opens_a_file(call)) open_file_names(where, sizeof where);
  return as_error_set(AS_ERR_HDF5, file, line, func, "%s failed%s%s", call, where, stack);
}

void as_h5_quiet(void) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

/* Keeps the description of the innermost frame of the HDF5 error stack (the cause). */
static herr_t h5_last_cb(unsigned n, const H5E_error2_t *e, void *data) {
  (void)n;
  if (e->desc && e->desc[0]) snprintf((char *)data, 256, "%s", e->desc);
  return 0;
}

as_status as_error_from_h5_open(const char *file, int line, const char *func, const char *path) {
  char cause[256] = "";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, h5_last_cb, cause);
  H5Eclear2(H5E_DEFAULT);
  return as_error_set(AS_ERR_HDF5, file, line, func,
                      "%s cannot be opened: HDF5 says \"%s\" (a truncated or damaged file?): "
                      "`attnsweep repair %s` rebuilds it from its journals and spec copy",
                      path, cause[0] ? cause : "unable to open file", path);
}
