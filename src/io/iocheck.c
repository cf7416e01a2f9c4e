/* iocheck.c: turning MPI return codes and HDF5 error stacks into the error record; files
 * refused by their type before they are opened (iocheck.h). */
#include "attnsweep/iocheck.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---------------------------------------------------------------- files by type */

const char *as_file_kind(unsigned mode) {
  const mode_t m = (mode_t)mode;
  return S_ISREG(m)    ? "a regular file"
         : S_ISDIR(m)  ? "a directory"
         : S_ISFIFO(m) ? "a FIFO (named pipe)"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
         : S_ISLNK(m)  ? "a symbolic link"
                       : "a special file";
}

/* Whether a file of mode m may be opened by a caller that accepts the kinds in allow. */
static int kind_allowed(mode_t m, int allow) {
  return S_ISREG(m) || ((allow & AS_PATH_PIPE) && S_ISFIFO(m)) ||
         ((allow & AS_PATH_DEVICE) && S_ISCHR(m));
}

/* "what " (with its space), or "" for no role. */
static const char *role(const char *what) {
  return what && what[0] ? what : "";
}

as_status as_path_check(const char *path, const char *what, int allow) {
  as_status st = AS_OK;
  struct stat sb;
  if (!path || stat(path, &sb) != 0) goto cleanup; /* missing: the caller's open says so */
  AS_CHECK(kind_allowed(sb.st_mode, allow), AS_ERR_DATA,
           "%s%s%s is %s, not a regular file: refusing to open it", role(what),
           what && what[0] ? " " : "", path, as_file_kind(sb.st_mode));
cleanup:
  return st;
}

as_status as_path_open(const char *path, int flags, unsigned mode, const char *what, int allow,
                       int *fd) {
  as_status st = AS_OK;
  const char *sp = what && what[0] ? " " : "";
  AS_CHECK(path && fd, AS_ERR_ARG, "as_path_open: NULL argument");
  *fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, (mode_t)mode);
  if (*fd < 0) {
    const int err = errno;
    AS_CHECK(err != ENOENT || (flags & O_CREAT), AS_ERR_DATA, "%s%s%s: no such file", role(what),
             sp, path);
    AS_CHECK(err != ELOOP || !(flags & O_NOFOLLOW), AS_ERR_ARG,
             "%s%s%s is a symbolic link: refusing to follow it (remove it)", role(what), sp, path);
    AS_CHECK(0, AS_ERR_IO, "cannot %s %s%s%s: %s", (flags & O_CREAT) ? "create" : "open",
             role(what), sp, path, strerror(err));
  }
  struct stat sb;
  AS_CHECK(fstat(*fd, &sb) == 0, AS_ERR_IO, "cannot look at %s%s%s: %s", role(what), sp, path,
           strerror(errno));
  AS_CHECK(kind_allowed(sb.st_mode, allow), AS_ERR_DATA,
           "%s%s%s is %s, not a regular file: refusing to open it", role(what), sp, path,
           as_file_kind(sb.st_mode));
  /* Back to blocking I/O: O_NONBLOCK only kept a FIFO or device from blocking the open. */
  const int fl = fcntl(*fd, F_GETFL);
  AS_CHECK(fl >= 0 && fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) == 0, AS_ERR_IO, "%s: fcntl: %s", path,
           strerror(errno));
cleanup:
  if (st != AS_OK && fd && *fd >= 0) {
    close(*fd);
    *fd = -1;
  }
  return st;
}
