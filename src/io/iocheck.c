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

as_status as_error_from_h5(const char *file, int line, const char *func, const char *call) {
  char stack[AS_ERRMSG_MAX] = "";
  h5_walk w = {stack, sizeof stack, 0};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, h5_walk_cb, &w);
  H5Eclear2(H5E_DEFAULT);
  return as_error_set(AS_ERR_HDF5, file, line, func, "%s failed%s", call, stack);
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
