/* outset.c: the set of files of one results file: side-file names, the run lock, the spec
 * copy, the layout from the plan, the path of records into journal and file (outset.h). */
#define _GNU_SOURCE /* F_OFD_SETLK: a lock on the results file itself, whatever its name */
#include "attnsweep/outset.h"

#include "attnsweep/iocheck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Rows written per call when records are put back from journals. */
#define OUTSET_BLOCK 256

#define AS_X_SIDE_SUFFIX(name, suffix, per_rank, doc) suffix,
static const char *const side_suffix[] = {AS_SIDE_LIST(AS_X_SIDE_SUFFIX)};
#undef AS_X_SIDE_SUFFIX
#define AS_X_SIDE_RANK(name, suffix, per_rank, doc) per_rank,
static const int side_per_rank[] = {AS_SIDE_LIST(AS_X_SIDE_RANK)};
#undef AS_X_SIDE_RANK

/* ---------------------------------------------------------------- small file helpers */

static int write_all(int fd, const char *p, size_t len) {
  while (len > 0) {
    ssize_t k = write(fd, p, len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

/* Directory of path ("." when none, "/" for the root) and its last component. */
static void split_path(const char *path, char *dir, size_t dlen, const char **base) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(dir, dlen, ".");
    *base = path;
  } else if (slash == path) {
    snprintf(dir, dlen, "/");
    *base = slash + 1;
  } else {
    snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
    *base = slash + 1;
  }
}

void as_outset_sync_dir(const char *path) {
  char dir[AS_OUTSET_PATH_MAX];
  const char *base = NULL;
  split_path(path, dir, sizeof dir, &base);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

/* A name that does not exist yet: base, else base.1, base.2, ... */
static void fresh_name(const char *base, char *buf, size_t len) {
  snprintf(buf, len, "%s", base);
  struct stat sb; /* lstat: a link (even a dangling one) at a name takes it, never replaced */
  for (int k = 1; lstat(buf, &sb) == 0 && k < 10000; k++) {
    int w = snprintf(buf, len, "%s.%d", base, k);
    if (w < 0 || (size_t)w >= len) break; /* does not fit: keep trying would loop on one name */
  }
}

static as_status rename_checked(const char *from, const char *to) {
  as_status st = AS_OK;
  AS_CHECK(rename(from, to) == 0, AS_ERR_IO, "cannot rename %s to %s: %s", from, to,
           strerror(errno));
cleanup:
  return st;
}

/* ---------------------------------------------------------------- names */

as_status as_outset_name(const char *results, as_side side, int rank, char *buf, size_t len) {
  as_status st = AS_OK;
  AS_CHECK(results && buf && (int)side >= 0 && side < AS_SIDE_COUNT, AS_ERR_ARG,
           "as_outset_name: bad arguments");
  int k = 0;
  if (side_per_rank[side]) {
    AS_CHECK(rank >= 0, AS_ERR_ARG, "as_outset_name: rank %d", rank);
    k = snprintf(buf, len, "%s%s%d", results, side_suffix[side], rank);
  } else {
    k = snprintf(buf, len, "%s%s", results, side_suffix[side]);
  }
  AS_CHECK(k > 0 && (size_t)k < len, AS_ERR_ARG, "the name of %s's %s file is too long", results,
           side_suffix[side]);
cleanup:
  return st;
}

void as_outset_list_free(char ***paths, size_t n) {
  if (!paths || !*paths) return;
  for (size_t i = 0; i < n; i++) free((*paths)[i]);
  free(*paths);
  *paths = NULL;
}

as_status as_outset_list(const char *results, as_side side, char ***paths, size_t *n) {
  as_status st = AS_OK;
  DIR *dir = NULL;
  char **list = NULL;
  size_t count = 0, cap = 0;
  char dname[AS_OUTSET_PATH_MAX], prefix[AS_OUTSET_PATH_MAX];
  const char *base = NULL;
  AS_CHECK(results && paths && n && (int)side >= 0 && side < AS_SIDE_COUNT && side_per_rank[side],
           AS_ERR_ARG, "as_outset_list: bad arguments");
  split_path(results, dname, sizeof dname, &base);
  int k = snprintf(prefix, sizeof prefix, "%s%s", base, side_suffix[side]);
  AS_CHECK(k > 0 && (size_t)k < sizeof prefix, AS_ERR_ARG, "%s: name too long", results);
  dir = opendir(dname);
  AS_CHECK(dir != NULL, AS_ERR_IO, "%s: cannot list the directory: %s", dname, strerror(errno));
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (strncmp(e->d_name, prefix, (size_t)k) != 0) continue;
    if (count == cap) {
      size_t c2 = cap ? 2 * cap : 8;
      char **p = realloc(list, c2 * sizeof *p);
      AS_CHECK_ALLOC(p);
      list = p;
      cap = c2;
    }
    size_t len = strlen(dname) + strlen(e->d_name) + 2;
    list[count] = malloc(len);
    AS_CHECK_ALLOC(list[count]);
    snprintf(list[count], len, "%s/%s", dname, e->d_name);
    count++;
  }
  *paths = list;
  *n = count;
  list = NULL;
cleanup:
  if (dir) closedir(dir);
  as_outset_list_free(&list, count);
  return st;
}

/* ---------------------------------------------------------------- identity of the set */

as_status as_outset_resolve(const char *given, char *buf, size_t len) {
  as_status st = AS_OK;
  char cur[AS_OUTSET_PATH_MAX], link[AS_OUTSET_PATH_MAX], dir[AS_OUTSET_PATH_MAX];
  AS_CHECK(given && buf && len > 0, AS_ERR_ARG, "as_outset_resolve: NULL argument");
  AS_CHECK(given[0] != '\0', AS_ERR_ARG, "the results file name is empty");
  AS_CHECK(strlen(given) < sizeof cur, AS_ERR_ARG, "the results file name is too long");
  snprintf(cur, sizeof cur, "%s", given);
  /* Follow the last component while it is a symbolic link (a directory reached through a link
   * is the same directory, so its side files are the same files; only the last name matters). */
  for (int hops = 0;; hops++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) break;
    AS_CHECK(hops < 40, AS_ERR_ARG, "%s: too many levels of symbolic links", given);
    ssize_t k = readlink(cur, link, sizeof link - 1);
    AS_CHECK(k > 0, AS_ERR_IO, "%s: cannot read the symbolic link: %s", cur, strerror(errno));
    link[k] = '\0';
    const char *base = NULL;
    split_path(cur, dir, sizeof dir, &base);
    if (link[0] == '/' || strcmp(dir, ".") == 0 || !strchr(cur, '/')) {
      snprintf(cur, sizeof cur, "%s", link);
    } else {
      int w = snprintf(cur, sizeof cur, "%s/%s", dir, link);
      AS_CHECK(w > 0 && (size_t)w < sizeof cur, AS_ERR_ARG, "%s: resolved name too long", given);
    }
  }
  AS_CHECK(strlen(cur) < len, AS_ERR_ARG, "%s: resolved name too long", given);
  snprintf(buf, len, "%s", cur);
cleanup:
  return st;
}

as_status as_outset_guard_output(const char *output, const char *input, const char *what) {
  as_status st = AS_OK;
  struct stat o, i;
  if (!output || !input || stat(output, &o) != 0 || stat(input, &i) != 0) goto cleanup;
  AS_CHECK(!(o.st_dev == i.st_dev && o.st_ino == i.st_ino), AS_ERR_ARG,
           "refusing to write %s over %s %s, which this command reads (the same file): choose "
           "another output name",
           output, what ? what : "the input", input);
cleanup:
  return st;
}

/* One input the sweep reads against the files it writes: AS_ERR_ARG when they are one file. */
static as_status guard_one(const char *results, const char *input, const char *what,
                           const struct stat *tgt, const char *const *tname, int ntgt) {
  as_status st = AS_OK;
  struct stat sb;
  if (!input || stat(input, &sb) != 0) goto cleanup; /* a missing input is the trial's failure */
  for (int k = 0; k < ntgt; k++)
    AS_CHECK(!(tgt[k].st_dev == sb.st_dev && tgt[k].st_ino == sb.st_ino), AS_ERR_ARG,
             "%s: refusing to write %s over %s %s, which the sweep reads (the same file): choose "
             "another output name",
             results, tname[k], what, input);
cleanup:
  return st;
}

as_status as_outset_guard_inputs(const char *results, const as_spec *spec, const char *spec_path,
                                 int resume) {
  as_status st = AS_OK;
  char names[3][AS_OUTSET_PATH_MAX];
  char **journals[2] = {NULL, NULL};
  size_t nj[2] = {0, 0};
  struct stat *tgt = NULL;
  const char **tname = NULL;
  int ntgt = 0;
  AS_CHECK(results && spec, AS_ERR_ARG, "as_outset_guard_inputs: NULL argument");
  /* What the run writes: the file, its lock, (for a new sweep) its spec copy, and its journals
   * (appended to, or removed by a new sweep). */
  snprintf(names[0], sizeof names[0], "%s", results);
  AS_TRY(as_outset_name(results, AS_SIDE_LOCK, -1, names[1], sizeof names[1]));
  AS_TRY(as_outset_name(results, AS_SIDE_SPEC, -1, names[2], sizeof names[2]));
  /* A directory that cannot be listed has no journals to guard; the claim reports it. */
  static const as_side kinds[2] = {AS_SIDE_JOURNAL, AS_SIDE_DAMAGED_JOURNAL};
  for (int s = 0; s < 2; s++)
    if (as_outset_list(results, kinds[s], &journals[s], &nj[s]) != AS_OK) {
      as_error_clear();
      nj[s] = 0;
    }
  const size_t cap = 3 + nj[0] + nj[1];
  tgt = calloc(cap, sizeof *tgt);
  tname = calloc(cap, sizeof *tname);
  AS_CHECK_ALLOC(tgt);
  AS_CHECK_ALLOC(tname);
  for (int k = 0; k < (resume ? 2 : 3); k++)
    if (stat(names[k], &tgt[ntgt]) == 0) tname[ntgt++] = names[k];
  for (int s = 0; s < 2; s++)
    for (size_t k = 0; k < nj[s]; k++)
      if (stat(journals[s][k], &tgt[ntgt]) == 0) tname[ntgt++] = journals[s][k];
  if (ntgt == 0) goto cleanup;
  AS_TRY(guard_one(results, spec_path, "the spec", tgt, tname, ntgt));
  const char *const *fields = NULL;
  int nf = as_results_label_fields(&fields);
  for (int i = 0; i < nf; i++) {
    const char *const *paths = NULL;
    int np = as_spec_input_paths(spec, fields[i], &paths);
    for (int j = 0; j < np; j++) AS_TRY(guard_one(results, paths[j], "input", tgt, tname, ntgt));
  }
cleanup:
  free(tgt);
  free(tname);
  for (int s = 0; s < 2; s++) as_outset_list_free(&journals[s], nj[s]);
  return st;
}

/* ---------------------------------------------------------------- claim and lock */

struct as_outset {
  int fd;      /* the lock file, holding the fcntl write lock */
  int retries; /* lock files found replaced while taking the lock */
  int hold_fd; /* the results file itself, holding an open-file-description lock (or -1) */
};

/* The byte of the results file whose open-file-description lock marks it in use: far beyond
 * any offset MPI-IO or HDF5 lock or write, so it never meets their range locks, and tied to
 * the file (device and inode), not to a name: a hard link or another path cannot miss it. */
#define OUTSET_HOLD_BYTE ((off_t)1 << 62)

/* Reads "pid P host H" from the lock file. */
static void read_owner(int fd, long *pid, char *host, size_t hostlen) {
  char text[512] = "";
  ssize_t k = pread(fd, text, sizeof text - 1, 0);
  if (k < 0) k = 0;
  text[k] = '\0';
  long p = -1;
  char h[256] = "?";
  if (sscanf(text, "pid %ld host %255s", &p, h) < 1) p = -1;
  if (pid) *pid = p;
  if (host && hostlen) snprintf(host, hostlen, "%s", h);
}

static as_status lock_take(const char *results, as_outset *os) {
  as_status st = AS_OK;
  char path[AS_OUTSET_PATH_MAX];
  AS_TRY(as_outset_name(results, AS_SIDE_LOCK, -1, path, sizeof path));
  /* Never through a link planted at its name (issue 36): its bytes would land in the target. */
  /* Nothing but a regular file of that name (as_path_open: a FIFO or device is refused by
   * type, never waited on). */
  AS_TRY(as_path_open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0644, "the lock file", 0, &os->fd));
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(os->fd, F_SETLK, &fl) != 0) {
    int err = errno;
    if (err == EACCES || err == EAGAIN) {
      long pid = -1;
      char host[256];
      read_owner(os->fd, &pid, host, sizeof host);
      AS_CHECK(0, AS_ERR_BUSY, "%s is in use by another run (pid %ld on host %s)", results, pid,
               host);
    }
    AS_CHECK(0, AS_ERR_IO, "cannot lock %s: %s", path, strerror(err));
  }
  /* The holder of a complete set removes the lock file before it lets go (as_outset_tidy): a
   * lock won on a file no longer at the path locks nothing. Take it again on the new one. */
  {
    struct stat a, b;
    if (fstat(os->fd, &a) == 0 &&
        (stat(path, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
      close(os->fd);
      os->fd = -1;
      AS_CHECK(++os->retries < 100, AS_ERR_BUSY, "%s: its lock file keeps changing", results);
      return lock_take(results, os);
    }
  }
  char host[256] = "?";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = '\0';
  char text[400];
  int k = snprintf(text, sizeof text, "pid %ld host %s\n", (long)getpid(), host);
  AS_CHECK(ftruncate(os->fd, 0) == 0 && pwrite(os->fd, text, (size_t)k, 0) == k, AS_ERR_IO,
           "cannot write the lock file %s: %s", path, strerror(errno));
cleanup:
  return st;
}

/* Delete the journals of results, also those an earlier repair set aside (a rebuild reads
 * them): a new sweep must never get back records of the file it replaces. */
static as_status remove_journals(const char *results) {
  as_status st = AS_OK;
  char **names = NULL;
  size_t n = 0;
  const as_side kinds[] = {AS_SIDE_JOURNAL, AS_SIDE_DAMAGED_JOURNAL};
  for (size_t s = 0; s < sizeof kinds / sizeof kinds[0]; s++) {
    AS_TRY(as_outset_list(results, kinds[s], &names, &n));
    for (size_t i = 0; i < n; i++)
      AS_CHECK(unlink(names[i]) == 0 || errno == ENOENT, AS_ERR_IO,
               "%s: cannot remove the journal of a replaced sweep: %s", names[i], strerror(errno));
    as_outset_list_free(&names, n);
    n = 0;
  }
cleanup:
  as_outset_list_free(&names, n);
  return st;
}

as_status as_outset_hold(as_outset *os, const char *results) {
  as_status st = AS_OK;
  AS_CHECK(os && results, AS_ERR_ARG, "as_outset_hold: NULL argument");
  if (os->hold_fd >= 0) goto cleanup;
  struct stat sb;
  if (stat(results, &sb) != 0 || !S_ISREG(sb.st_mode)) goto cleanup; /* nothing to hold */
  os->hold_fd = open(results, O_RDONLY | O_CLOEXEC);
  AS_CHECK(os->hold_fd >= 0, AS_ERR_IO, "cannot open %s: %s", results, strerror(errno));
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = F_RDLCK; /* a read lock: the file is opened read-only here */
  fl.l_whence = SEEK_SET;
  fl.l_start = OUTSET_HOLD_BYTE;
  fl.l_len = 1;
  /* Another holder's read lock does not conflict with a read lock: ask for a write lock. */
  struct flock probe = fl;
  probe.l_type = F_WRLCK;
  if (fcntl(os->hold_fd, F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK)
    AS_CHECK(0, AS_ERR_BUSY,
             "%s is in use by another run under another name (a hard link or another path to "
             "the same file)",
             results);
  if (fcntl(os->hold_fd, F_OFD_SETLK, &fl) != 0 && errno != EINVAL && errno != ENOLCK)
    AS_CHECK(0, AS_ERR_IO, "cannot lock %s: %s", results, strerror(errno));
cleanup:
  return st;
}

/* The files of an existing set that a resume or repair reads are regular files: the spec copy
 * and every journal (also the set-aside ones) are looked at by type before the lock is taken
 * and before anything is written (issue 49: a FIFO journal was met only after the resume had
 * added its segment row to the file). AS_ERR_DATA naming the first that is not. */
static as_status check_set_types(const char *results) {
  as_status st = AS_OK;
  char path[AS_OUTSET_PATH_MAX];
  char **names = NULL;
  size_t n = 0;
  AS_TRY(as_outset_name(results, AS_SIDE_SPEC, -1, path, sizeof path));
  AS_TRY(as_path_check(path, "the spec copy", 0));
  const as_side kinds[] = {AS_SIDE_JOURNAL, AS_SIDE_DAMAGED_JOURNAL};
  for (size_t s = 0; s < sizeof kinds / sizeof kinds[0]; s++) {
    if (as_outset_list(results, kinds[s], &names, &n) != AS_OK) { /* the claim reports it */
      as_error_clear();
      n = 0;
      continue;
    }
    for (size_t i = 0; i < n; i++) AS_TRY(as_path_check(names[i], "the journal", 0));
    as_outset_list_free(&names, n);
    n = 0;
  }
cleanup:
  as_outset_list_free(&names, n);
  return st;
}

as_status as_outset_claim(const char *results, as_outset_mode mode, as_outset **out) {
  as_status st = AS_OK;
  as_outset *os = NULL;
  AS_CHECK(results && out && mode >= AS_OUTSET_NEW && mode <= AS_OUTSET_REPAIR, AS_ERR_ARG,
           "as_outset_claim: bad arguments");
  struct stat sb;
  int exists = stat(results, &sb) == 0;
  AS_CHECK(!exists || S_ISREG(sb.st_mode), AS_ERR_ARG,
           "%s is not a regular file (a %s): refusing to write results over it", results,
           S_ISDIR(sb.st_mode)    ? "directory"
           : S_ISCHR(sb.st_mode)  ? "character device"
           : S_ISBLK(sb.st_mode)  ? "block device"
           : S_ISFIFO(sb.st_mode) ? "pipe"
                                  : "special file");
  AS_CHECK(!(exists && mode == AS_OUTSET_NEW), AS_ERR_ARG,
           "%s already exists: pass --resume to continue that sweep or --force to replace it",
           results);
  AS_CHECK(exists || mode != AS_OUTSET_RESUME, AS_ERR_ARG, "%s does not exist: nothing to resume",
           results);
  if (mode == AS_OUTSET_RESUME || mode == AS_OUTSET_REPAIR) AS_TRY(check_set_types(results));
  os = calloc(1, sizeof *os);
  AS_CHECK_ALLOC(os);
  os->fd = -1;
  os->hold_fd = -1;
  AS_TRY(lock_take(results, os));
  if (exists) AS_TRY(as_outset_hold(os, results));
  if (mode == AS_OUTSET_NEW || mode == AS_OUTSET_REPLACE) AS_TRY(remove_journals(results));
  *out = os;
  os = NULL;
cleanup:
  as_outset_release(&os);
  return st;
}

void as_outset_release(as_outset **os) {
  if (!os || !*os) return;
  if ((*os)->fd >= 0) close((*os)->fd); /* closing drops the fcntl lock */
  if ((*os)->hold_fd >= 0) close((*os)->hold_fd);
  free(*os);
  *os = NULL;
}

as_status as_outset_probe(const char *results, int *held, long *pid, char *host, size_t hostlen) {
  as_status st = AS_OK;
  int fd = -1;
  char path[AS_OUTSET_PATH_MAX];
  AS_CHECK(results && held, AS_ERR_ARG, "as_outset_probe: NULL argument");
  *held = 0;
  if (pid) *pid = -1;
  if (host && hostlen) host[0] = '\0';
  AS_TRY(as_outset_name(results, AS_SIDE_LOCK, -1, path, sizeof path));
  if (access(path, F_OK) != 0 && errno == ENOENT) goto cleanup;
  /* A FIFO there blocked `status` for ever (issue 49): refused by its type, never opened. */
  AS_TRY(as_path_open(path, O_RDONLY, 0, "the lock file", 0, &fd));
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  AS_CHECK(fcntl(fd, F_GETLK, &fl) == 0, AS_ERR_IO, "cannot query the lock %s: %s", path,
           strerror(errno));
  if (fl.l_type != F_UNLCK) {
    *held = 1;
    read_owner(fd, pid, host, hostlen);
    if (pid && *pid < 0) *pid = (long)fl.l_pid;
  }
cleanup:
  if (fd >= 0) close(fd);
  return st;
}

/* ---------------------------------------------------------------- the spec copy */

as_status as_outset_spec_save(const char *results, const char *text, size_t len) {
  as_status st = AS_OK;
  int fd = -1;
  int made = 0; /* tmp exists */
  char dst[AS_OUTSET_PATH_MAX], tmp[AS_OUTSET_PATH_MAX + 32] = "";
  AS_CHECK(text || len == 0, AS_ERR_ARG, "as_outset_spec_save: NULL text");
  AS_TRY(as_outset_name(results, AS_SIDE_SPEC, -1, dst, sizeof dst));
  /* A new name of our own beside it (mkstemp: O_CREAT | O_EXCL), never an existing file or a
   * link planted at a predictable name; renamed over the copy, which replaces a link there
   * instead of following it. */
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", dst);
  fd = mkostemp(tmp, O_CLOEXEC);
  AS_CHECK(fd >= 0, AS_ERR_IO, "cannot write the spec copy %s.tmp.*: %s", dst, strerror(errno));
  made = 1;
  (void)fchmod(fd, 0644); /* mkstemp makes 0600; the copy is as readable as the results */
  AS_CHECK(write_all(fd, text ? text : "", len) == 0 && fdatasync(fd) == 0, AS_ERR_IO,
           "cannot write the spec copy %s: %s", tmp, strerror(errno));
  AS_CHECK(close(fd) == 0, AS_ERR_IO, "cannot write the spec copy %s: %s", tmp, strerror(errno));
  fd = -1;
  AS_CHECK(rename(tmp, dst) == 0, AS_ERR_IO, "cannot rename %s to %s: %s", tmp, dst,
           strerror(errno));
  as_outset_sync_dir(dst);
cleanup:
  if (fd >= 0) close(fd);
  if (st != AS_OK && made) unlink(tmp);
  return st;
}

as_status as_outset_spec_load(const char *results, char **text, size_t *len) {
  as_status st = AS_OK;
  char path[AS_OUTSET_PATH_MAX];
  char *buf = NULL;
  FILE *f = NULL;
  AS_CHECK(text, AS_ERR_ARG, "as_outset_spec_load: NULL text");
  AS_TRY(as_outset_name(results, AS_SIDE_SPEC, -1, path, sizeof path));
  /* A FIFO there blocked a resume for ever (issue 49): refused by its type, never opened, as
   * bad input of its own (AS_ERR_ARG), not as a missing copy that /spec would stand in for. */
  int fd = -1;
  AS_CHECK(access(path, F_OK) == 0 || errno != ENOENT, AS_ERR_DATA, "%s: no such file", path);
  if (as_path_check(path, "the spec copy", 0) != AS_OK) {
    st = as_error_promote(AS_ERR_ARG);
    goto cleanup;
  }
  AS_TRY(as_path_open(path, O_RDONLY, 0, "the spec copy", 0, &fd));
  f = fdopen(fd, "rb");
  if (!f) close(fd);
  AS_CHECK(f, AS_ERR_IO, "cannot read %s: %s", path, strerror(errno));
  AS_CHECK(fseek(f, 0, SEEK_END) == 0, AS_ERR_IO, "cannot read %s", path);
  long n = ftell(f);
  AS_CHECK(n >= 0 && fseek(f, 0, SEEK_SET) == 0, AS_ERR_IO, "cannot read %s", path);
  buf = malloc((size_t)n + 1);
  AS_CHECK_ALLOC(buf);
  AS_CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n, AS_ERR_IO, "cannot read %s", path);
  buf[n] = '\0';
  *text = buf;
  if (len) *len = (size_t)n;
  buf = NULL;
cleanup:
  if (f) fclose(f);
  free(buf);
  return st;
}

as_status as_outset_spec_ensure(const char *results, as_results *rf) {
  as_status st = AS_OK;
  char path[AS_OUTSET_PATH_MAX];
  char *text = NULL;
  AS_CHECK(rf, AS_ERR_ARG, "as_outset_spec_ensure: NULL file");
  AS_TRY(as_outset_name(results, AS_SIDE_SPEC, -1, path, sizeof path));
  if (access(path, F_OK) == 0) goto cleanup;
  AS_TRY(as_results_spec_text(rf, &text));
  AS_TRY(as_outset_spec_save(results, text, strlen(text)));
cleanup:
  free(text);
  return st;
}

/* ---------------------------------------------------------------- layout from the plan */

void as_outset_bulk_counts(const as_trial *t, uint64_t counts[AS_BULK_COUNT]) {
  const uint64_t n = (uint64_t)t->n, d = (uint64_t)t->d;
  const as_output_spec *o = &t->output;
  counts[AS_BULK_INITIAL] = o->initial ? n * d : 0;
  counts[AS_BULK_FINAL] = o->final ? n * d : 0;
  counts[AS_BULK_ATTENTION] = o->attention ? n * n : 0;
  counts[AS_BULK_V] = o->matrices ? d * d : 0;
  counts[AS_BULK_M] = o->matrices ? d * d : 0;
  counts[AS_BULK_SNAPSHOTS] = (uint64_t)o->n_snapshots * n * d;
  counts[AS_BULK_SNAP_CLUSTERS] = (uint64_t)o->n_snapshots;
}

void as_outset_layout_free(uint64_t *bulk[AS_BULK_COUNT]) {
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    free(bulk[k]);
    bulk[k] = NULL;
  }
}

as_status as_outset_layout(const as_spec *spec, as_results_info *info,
                           uint64_t *bulk[AS_BULK_COUNT]) {
  as_status st = AS_OK;
  memset(info, 0, sizeof *info);
  for (int k = 0; k < AS_BULK_COUNT; k++) bulk[k] = NULL;
  const uint64_t n_trials = as_spec_trial_count(spec);
  const as_output_spec *out = as_spec_output(spec);
  int want = out->initial || out->final || out->attention || out->matrices || out->n_snapshots > 0;
  if (want) {
    for (int k = 0; k < AS_BULK_COUNT; k++) {
      bulk[k] = calloc(n_trials ? n_trials : 1, sizeof *bulk[k]);
      AS_CHECK_ALLOC(bulk[k]);
    }
    int used[AS_BULK_COUNT] = {0};
    for (uint64_t i = 0; i < n_trials; i++) {
      as_trial t;
      AS_TRY(as_spec_trial(spec, i, &t));
      uint64_t c[AS_BULK_COUNT];
      as_outset_bulk_counts(&t, c);
      for (int k = 0; k < AS_BULK_COUNT; k++) {
        bulk[k][i] = c[k];
        used[k] |= c[k] > 0;
      }
    }
    for (int k = 0; k < AS_BULK_COUNT; k++) {
      if (!used[k]) {
        free(bulk[k]);
        bulk[k] = NULL;
      }
      info->bulk_counts[k] = bulk[k];
    }
  }
  size_t len = 0;
  info->n_trials = n_trials;
  info->master_seed = as_spec_seed(spec);
  info->spec_sha256 = as_spec_sha256(spec);
  info->spec_text = as_spec_text(spec, &len);
  info->spec_name = as_spec_name(spec);
  info->common_keys = as_spec_common_keys(spec);
  info->snapshot_times = out->snapshot_times;
  info->n_snapshot_times = out->n_snapshots;
  /* The labels of the record's LABEL fields (case names, file names) come from the spec. */
  const char *const *fields = NULL;
  int nf = as_results_label_fields(&fields);
  for (int i = 0; i < nf && i < AS_RESULTS_MAX_LABELS; i++) {
    as_label_set *ls = &info->labels[info->n_labels++];
    ls->field = fields[i];
    ls->count = as_spec_labels(spec, fields[i], &ls->names);
    if (as_spec_input_paths(spec, fields[i], &ls->paths) != ls->count) ls->paths = NULL;
  }
cleanup:
  if (st != AS_OK) as_outset_layout_free(bulk);
  return st;
}

/* ---------------------------------------------------------------- records and journals */

as_status as_outset_journal_open(const char *results, int rank, int batch, double max_delay_s,
                                 as_journal **out) {
  return as_outset_journal_open_spec(results, rank, batch, max_delay_s, NULL, NULL, 0, out);
}

as_status as_outset_journal_open_spec(const char *results, int rank, int batch, double max_delay_s,
                                      const char *spec_sha256, char *aside, size_t aside_len,
                                      as_journal **out) {
  as_status st = AS_OK;
  char path[AS_OUTSET_PATH_MAX], base[AS_OUTSET_PATH_MAX + 32], target[AS_OUTSET_PATH_MAX + 48];
  if (aside && aside_len) aside[0] = '\0';
  AS_TRY(as_outset_name(results, AS_SIDE_JOURNAL, rank, path, sizeof path));
  /* A device at a journal's name is refused too (as_journal_open itself takes /dev/full). */
  AS_TRY(as_path_check(path, "the journal", 0));
  st = as_journal_open_spec(path, rank, batch, max_delay_s, spec_sha256, out);
  if (st == AS_ERR_DATA) {
    /* A damaged header: the journal cannot be appended to, but its entries are still read
     * (as_journal_salvage) under a name that keeps the journal prefix. A new one is begun. */
    as_error_clear();
    st = AS_OK;
    snprintf(base, sizeof base, "%s.damaged-header", path);
    fresh_name(base, target, sizeof target);
    AS_TRY(rename_checked(path, target));
    as_outset_sync_dir(path);
    if (aside && aside_len) snprintf(aside, aside_len, "%s", target);
    AS_TRY(as_journal_open_spec(path, rank, batch, max_delay_s, spec_sha256, out));
  }
  AS_TRY(st);
cleanup:
  return st;
}

int as_outset_is_result(const as_record *rec) {
  return rec->outcome != AS_OUT_PENDING && rec->outcome != AS_OUT_INTERRUPTED;
}

int as_outset_is_retryable(const as_record *rec) {
  return rec->outcome == AS_OUT_FAILED || rec->outcome == AS_OUT_NONFINITE;
}

as_status as_outset_store(as_results *rf, as_journal *j, const as_record *recs, size_t count) {
  as_status st = AS_OK;
  size_t kept = 0;
  AS_CHECK(rf && (recs || count == 0), AS_ERR_ARG, "as_outset_store: NULL argument");
  for (size_t i = 0; i < count; i++) {
    if (!as_outset_is_result(&recs[i])) continue;
    if (j) AS_TRY(as_journal_append(j, &recs[i]));
    kept++;
  }
  if (kept == 0) goto cleanup;
  /* Durable first: a row in /trials is always also in a journal. */
  if (j) AS_TRY(as_journal_flush(j));
  /* Rows in runs of consecutive results, straight from recs. */
  for (size_t i = 0; i < count;) {
    if (!as_outset_is_result(&recs[i])) {
      i++;
      continue;
    }
    size_t first = i;
    while (i < count && as_outset_is_result(&recs[i])) i++;
    AS_TRY(as_results_write_records(rf, recs + first, i - first));
  }
cleanup:
  return st;
}

as_status as_outset_journals_read(const char *results, as_side side, as_journal_visit_fn visit,
                                  void *ctx, as_outset_scan *sum) {
  return as_outset_journals_read_for(results, side, NULL, visit, ctx, sum);
}

as_status as_outset_journals_read_for(const char *results, as_side side, const char *spec_sha256,
                                      as_journal_visit_fn visit, void *ctx, as_outset_scan *sum) {
  as_status st = AS_OK;
  char **names = NULL;
  size_t n = 0;
  as_outset_scan tot;
  memset(&tot, 0, sizeof tot);
  AS_TRY(as_outset_list(results, side, &names, &n));
  for (size_t i = 0; i < n; i++) {
    as_journal_scan scan;
    memset(&scan, 0, sizeof scan);
    /* A FIFO or device at a journal's name is never read (issue 49: a device reads forever). */
    AS_TRY(as_path_check(names[i], "the journal", 0));
    /* The header first (only the header: reading the whole journal twice was 8% of a
     * 16,000-trial run's close): a journal of another sweep is never mixed in; a damaged
     * header does not hide the entries whose own checksums hold. */
    as_status hst = as_journal_read_header(names[i], &scan);
    if (hst == AS_ERR_DATA) {
      as_error_clear();
      AS_TRY(as_journal_salvage(names[i], visit, ctx, &scan));
      tot.damaged_headers++;
    } else {
      AS_TRY(hst);
      AS_CHECK(!spec_sha256 || !scan.spec[0] || as_journal_tag_in(scan.spec, spec_sha256),
               AS_ERR_MISMATCH,
               "journal %s belongs to another sweep (spec SHA-256 %s...), not to %s (%.*s...): "
               "use the spec of that sweep, or move the journal away",
               names[i], scan.spec, results, AS_JOURNAL_SPEC_CHARS, spec_sha256);
      memset(&scan, 0, sizeof scan);
      AS_TRY(as_journal_read(names[i], visit, ctx, &scan));
    }
    tot.files++;
    tot.entries_ok += scan.entries_ok;
    tot.entries_bad += scan.entries_bad;
    tot.torn_bytes += scan.torn_bytes;
  }
cleanup:
  if (sum) *sum = tot;
  as_outset_list_free(&names, n);
  return st;
}

typedef struct recover_ctx {
  as_results *rf;
  uint8_t *done; /* 1 done in the file, 2 recovered from a retryable entry (may be superseded) */
  uint64_t n_trials;
  as_record batch[OUTSET_BLOCK];
  size_t count;
  uint64_t recovered;
} recover_ctx;

static as_status recover_flush(recover_ctx *r) {
  as_status st = AS_OK;
  if (r->count) AS_TRY(as_results_write_records(r->rf, r->batch, r->count));
  r->count = 0;
cleanup:
  return st;
}

static as_status recover_visit(const as_record *rec, void *vctx) {
  as_status st = AS_OK;
  recover_ctx *r = vctx;
  if (rec->trial >= r->n_trials || !as_outset_is_result(rec)) return AS_OK;
  /* A retryable entry recovered earlier gives way to a result of a retry (as_outset_is_retryable).
   */
  if (r->done[rec->trial] && !(r->done[rec->trial] == 2 && !as_outset_is_retryable(rec)))
    return AS_OK;
  if (r->done[rec->trial] == 2) r->recovered--; /* counted once */
  r->done[rec->trial] = as_outset_is_retryable(rec) ? 2 : 1;
  AS_ASSERT(r->count < OUTSET_BLOCK); /* a full batch is flushed below */
  r->batch[r->count++] = *rec;
  r->recovered++;
  if (r->count == OUTSET_BLOCK) AS_TRY(recover_flush(r));
cleanup:
  return st;
}

as_status as_outset_recover(const char *results, as_results *rf, uint8_t *done, uint64_t n_trials,
                            uint64_t *recovered) {
  return as_outset_recover_also(results, rf, NULL, done, n_trials, recovered);
}

as_status as_outset_retag(const char *results, const char *spec_sha256) {
  as_status st = AS_OK;
  static const as_side kinds[] = {AS_SIDE_JOURNAL, AS_SIDE_DAMAGED_JOURNAL};
  char **names = NULL;
  size_t n = 0;
  for (size_t s = 0; s < sizeof kinds / sizeof kinds[0]; s++) {
    as_outset_list_free(&names, n);
    n = 0;
    AS_TRY(as_outset_list(results, kinds[s], &names, &n));
    for (size_t i = 0; i < n; i++) AS_TRY(as_journal_retag(names[i], spec_sha256));
  }
cleanup:
  as_outset_list_free(&names, n);
  return st;
}

as_status as_outset_recover_also(const char *results, as_results *rf, const char *spec_sha256,
                                 uint8_t *done, uint64_t n_trials, uint64_t *recovered) {
  as_status st = AS_OK;
  recover_ctx *r = NULL;
  AS_CHECK(rf && (done || n_trials == 0) && recovered, AS_ERR_ARG,
           "as_outset_recover: NULL argument");
  r = calloc(1, sizeof *r);
  AS_CHECK_ALLOC(r);
  r->rf = rf;
  r->done = done;
  r->n_trials = n_trials;
  char sha[160] = "";
  if (as_results_attr_string(rf, "spec_sha256", sha, 80) != AS_OK) {
    as_error_clear();
    sha[0] = '\0';
  }
  if (sha[0] && spec_sha256) { /* either spec's journals */
    const size_t k = strlen(sha);
    snprintf(sha + k, sizeof sha - k, ",%.70s", spec_sha256);
  }
  AS_TRY(as_outset_journals_read_for(results, AS_SIDE_JOURNAL, sha[0] ? sha : NULL, recover_visit,
                                     r, NULL));
  AS_TRY(recover_flush(r));
  for (uint64_t i = 0; i < n_trials; i++)
    if (done[i]) done[i] = 1;
  *recovered = r->recovered;
cleanup:
  free(r);
  return st;
}

/* ---------------------------------------------------------------- tidy after a clean close */

/* Rows of /trials read at a time by the tidy check: one HDF5 read per block instead of one per
 * journal entry (each read finds its type conversion path and clears its conversion buffer:
 * per row, that cost more than the trial itself in the paper's setting). The rows are read
 * packed, in the file's own row type (no conversion: the conversion of the large compound type
 * was 4% of a 16,000-trial paper-setting run), each checked against its stored checksum, and
 * an entry is compared with its row as packed bytes (as_results_row_pack). */
#define AS_TIDY_BLOCK 1024

typedef struct tidy_ctx {
  as_results *rf;
  uint64_t n_trials, differing;
  unsigned char *rows;  /* the packed rows held: trials of [first, first + AS_TIDY_BLOCK) */
  unsigned char *entry; /* one entry, packed */
  uint64_t *trials;     /* trials of the rows held (a sparse file holds some only) */
  uint32_t *crcs;
  uint8_t *bad; /* 1: the row fails its checksum or holds another trial's record */
  uint64_t first;
  size_t held; /* rows held (0: none read yet) */
  int have;    /* a block is held */
} tidy_ctx;

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The index among the rows held of trial t (their trials increase), or -1 when the file holds
 * no row for it. */
static long tidy_find(const tidy_ctx *c, uint64_t t) {
  const uint64_t *at = c->held ? bsearch(&t, c->trials, c->held, sizeof t, cmp_u64) : NULL;
  return at ? (long)(at - c->trials) : -1;
}

static as_status tidy_visit(const as_record *rec, void *vctx) {
  as_status st = AS_OK;
  tidy_ctx *c = vctx;
  const size_t rb = as_results_row_bytes();
  if (rec->trial >= c->n_trials) {
    c->differing++;
    return AS_OK;
  }
  if (!c->rows) {
    c->rows = malloc(AS_TIDY_BLOCK * rb);
    AS_CHECK_ALLOC(c->rows);
    c->entry = malloc(rb);
    AS_CHECK_ALLOC(c->entry);
    c->trials = malloc(AS_TIDY_BLOCK * sizeof *c->trials);
    AS_CHECK_ALLOC(c->trials);
    c->crcs = malloc(AS_TIDY_BLOCK * sizeof *c->crcs);
    AS_CHECK_ALLOC(c->crcs);
    c->bad = malloc(AS_TIDY_BLOCK);
    AS_CHECK_ALLOC(c->bad);
  }
  if (!c->have || rec->trial < c->first || rec->trial - c->first >= AS_TIDY_BLOCK) {
    c->first = rec->trial / AS_TIDY_BLOCK * AS_TIDY_BLOCK;
    const size_t count =
        c->n_trials - c->first < AS_TIDY_BLOCK ? (size_t)(c->n_trials - c->first) : AS_TIDY_BLOCK;
    int verified = 0;
    AS_TRY(as_results_read_rows_raw(c->rf, c->rf, c->first, count, c->rows, c->trials, c->crcs,
                                    c->bad, &c->held, &verified));
    c->have = 1;
  }
  const long j = tidy_find(c, rec->trial);
  if (j < 0 || c->bad[j]) { /* no row, or a damaged one: the journal is kept */
    c->differing++;
    return AS_OK;
  }
  const unsigned char *row = c->rows + (size_t)j * rb;
  uint64_t rt = 0;
  int routcome = 0;
  as_results_row_key(row, &rt, &routcome);
  as_results_row_pack(rec, c->entry);
  /* A failed or non-finite entry is an earlier attempt that a retry (--retry-failed) replaced
   * whenever the row holds a finished attempt, also one that failed again: the two then differ
   * in wall_time and rank only, and the entry is no loss (issue 36 item 15: the false "journal
   * entries differ" after a retry whose trials failed again). */
  if (memcmp(row, c->entry, rb) != 0 &&
      !(as_outset_is_retryable(rec) && routcome != AS_OUT_PENDING))
    c->differing++;
cleanup:
  return st;
}

static void tidy_free(tidy_ctx *c) {
  free(c->rows);
  free(c->entry);
  free(c->trials);
  free(c->crcs);
  free(c->bad);
  c->rows = c->entry = NULL;
  c->trials = NULL;
  c->crcs = NULL;
  c->bad = NULL;
}

as_status as_outset_tidy(const char *results, uint64_t *differing) {
  as_status st = AS_OK;
  tidy_ctx c;
  char **names = NULL;
  size_t n = 0;
  char path[AS_OUTSET_PATH_MAX];
  memset(&c, 0, sizeof c);
  AS_CHECK(results && differing, AS_ERR_ARG, "as_outset_tidy: NULL argument");
  *differing = 0;
  AS_TRY(as_results_open(MPI_COMM_NULL, results, AS_RESULTS_READ, &c.rf));
  c.n_trials = as_results_n_trials(c.rf);
  AS_TRY(as_outset_journals_read(results, AS_SIDE_JOURNAL, tidy_visit, &c, NULL));
  tidy_free(&c);
  AS_TRY(as_results_close(&c.rf));
  *differing = c.differing;
  if (c.differing) goto cleanup;
  AS_TRY(as_outset_list(results, AS_SIDE_JOURNAL, &names, &n));
  for (size_t i = 0; i < n; i++)
    AS_CHECK(unlink(names[i]) == 0 || errno == ENOENT, AS_ERR_IO, "cannot remove %s: %s", names[i],
             strerror(errno));
  const as_side rest[] = {AS_SIDE_SPEC, AS_SIDE_LOCK};
  for (size_t k = 0; k < sizeof rest / sizeof rest[0]; k++) {
    AS_TRY(as_outset_name(results, rest[k], -1, path, sizeof path));
    AS_CHECK(unlink(path) == 0 || errno == ENOENT, AS_ERR_IO, "cannot remove %s: %s", path,
             strerror(errno));
  }
  as_outset_sync_dir(results);
cleanup:
  tidy_free(&c);
  if (c.rf) as_results_close(&c.rf);
  as_outset_list_free(&names, n);
  return st;
}

/* ---------------------------------------------------------------- rebuild (repair) */

as_status as_outset_set_aside(const char *results) {
  as_status st = AS_OK;
  char **old = NULL;
  size_t n_old = 0;
  char base[AS_OUTSET_PATH_MAX], target[AS_OUTSET_PATH_MAX + 16], dname[AS_OUTSET_PATH_MAX];
  if (access(results, F_OK) == 0) {
    AS_TRY(as_outset_name(results, AS_SIDE_DAMAGED, -1, base, sizeof base));
    fresh_name(base, target, sizeof target);
    AS_TRY(rename_checked(results, target));
  }
  /* Each journal keeps what follows its prefix (the rank): OUT.h5.journal.<r> ->
   * OUT.h5.damaged.journal.<r>[.k]. */
  const char *rbase = NULL;
  split_path(results, dname, sizeof dname, &rbase);
  const size_t plen = strlen(rbase) + strlen(side_suffix[AS_SIDE_JOURNAL]);
  AS_TRY(as_outset_list(results, AS_SIDE_JOURNAL, &old, &n_old));
  for (size_t k = 0; k < n_old; k++) {
    const char *name = strrchr(old[k], '/');
    name = name ? name + 1 : old[k];
    AS_ASSERT(strlen(name) >= plen); /* as_outset_list returns names with the prefix only */
    int w = snprintf(base, sizeof base, "%s%s%s", results, side_suffix[AS_SIDE_DAMAGED_JOURNAL],
                     name + plen);
    AS_CHECK(w > 0 && (size_t)w < sizeof base, AS_ERR_ARG, "%s: name too long", old[k]);
    fresh_name(base, target, sizeof target);
    AS_TRY(rename_checked(old[k], target));
  }
cleanup:
  as_outset_list_free(&old, n_old);
  return st;
}

as_status as_outset_swap_in(const char *results) {
  as_status st = AS_OK;
  char from[AS_OUTSET_PATH_MAX], to[AS_OUTSET_PATH_MAX];
  AS_TRY(as_outset_name(results, AS_SIDE_REBUILD_JOURNAL, -1, from, sizeof from));
  AS_TRY(as_outset_name(results, AS_SIDE_JOURNAL, 0, to, sizeof to));
  AS_TRY(rename_checked(from, to));
  AS_TRY(as_outset_name(results, AS_SIDE_REBUILD, -1, from, sizeof from));
  {
    struct stat sb; /* only the file built here: a link would become the results file */
    AS_CHECK(lstat(from, &sb) == 0 && S_ISREG(sb.st_mode), AS_ERR_IO,
             "%s is not the regular file repair built (a symbolic link?): refusing to put it in "
             "place of %s",
             from, results);
  }
  AS_TRY(rename_checked(from, results));
  as_outset_sync_dir(results);
cleanup:
  return st;
}

/* ---------------------------------------------------------------- inputs of a resume */

/* One line of an input_sha256 list: "<sha256 hex or 'unreadable: why'>  <path>". */
typedef struct input_line {
  const char *hash; /* NUL terminated in the list's buffer */
  const char *path;
} input_line;

/* Split list (modified in place) into lines; *lines allocated (caller frees), *n their count. */
static as_status input_lines(char *list, input_line **lines, size_t *n) {
  as_status st = AS_OK;
  size_t cap = 1, k = 0;
  for (const char *c = list; *c; c++) cap += *c == '\n';
  input_line *v = calloc(cap, sizeof *v);
  AS_CHECK_ALLOC(v);
  for (char *line = list; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *sep = strstr(line, "  ");
    if (sep && k < cap) {
      *sep = '\0';
      v[k].hash = line;
      v[k].path = sep + 2;
      k++;
    }
    line = nl ? nl + 1 : NULL;
  }
  *lines = v;
  *n = k;
cleanup:
  return st;
}

/* The labels of the input files of spec in the order of as_results_input_hashes: the `file`
 * labels, then the `init_file` labels. *labels allocated (caller frees), *n their count. */
static as_status input_labels(const as_spec *spec, const char ***labels, size_t *n) {
  as_status st = AS_OK;
  static const char *const fields[] = {"file", "init_file"};
  const char *const *names[2] = {NULL, NULL};
  int counts[2] = {0, 0};
  for (int k = 0; k < 2; k++) counts[k] = as_spec_labels(spec, fields[k], &names[k]);
  const char **v = calloc((size_t)(counts[0] + counts[1]) + 1, sizeof *v);
  AS_CHECK_ALLOC(v);
  size_t m = 0;
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < counts[k]; i++) v[m++] = names[k][i];
  *labels = v;
  *n = m;
cleanup:
  return st;
}

/* Length of the directory part of path when path is label resolved against a directory
 * ("<dir>/<label>"), else -1. An absolute label resolves to itself: -1. */
static long resolved_dir_len(const char *path, const char *label) {
  size_t pl = strlen(path), ll = strlen(label);
  if (label[0] == '/' || ll == 0 || pl < ll + 1) return -1;
  if (strcmp(path + pl - ll, label) != 0 || path[pl - ll - 1] != '/') return -1;
  return (long)(pl - ll - 1);
}

/* Whether stored path p is what label resolves to in some directory (or the label itself). */
static int resolves_from(const char *p, const char *label) {
  return strcmp(p, label) == 0 || resolved_dir_len(p, label) >= 0;
}

/* The file's input_sha256 list (allocated; NULL without provenance, not an error). */
static as_status stored_inputs(as_results *rf, char **out) {
  as_status st = AS_OK;
  enum { CAP = 1 << 20 };
  *out = NULL;
  char *buf = malloc(CAP);
  AS_CHECK_ALLOC(buf);
  if (as_results_attr_string(rf, "input_sha256", buf, CAP) != AS_OK) {
    as_error_clear(); /* a file without provenance: nothing to compare */
    free(buf);
    buf = NULL;
  }
  *out = buf;
cleanup:
  return st;
}

as_status as_outset_inputs_check(as_results *rf, const as_spec *spec, const char *path, int allow) {
  as_status st = AS_OK;
  char *stored = NULL, *now = NULL;
  input_line *sl = NULL, *nl = NULL;
  const char **labels = NULL;
  size_t ns = 0, nn = 0, nlab = 0;
  uint64_t *bulk[AS_BULK_COUNT] = {NULL};
  AS_CHECK(rf && spec && path, AS_ERR_ARG, "as_outset_inputs_check: NULL argument");
  AS_TRY(stored_inputs(rf, &stored));
  if (!stored) goto cleanup;
  as_results_info info;
  AS_TRY(as_outset_layout(spec, &info, bulk));
  AS_TRY(as_results_input_hashes(&info, &now));
  AS_TRY(input_lines(stored, &sl, &ns));
  AS_TRY(input_lines(now, &nl, &nn));
  AS_TRY(input_labels(spec, &labels, &nlab));
  for (size_t i = 0; i < ns; i++) {
    /* A file that was unreadable when the sweep started gave failed trials only: putting it
     * in place for --retry-failed is the documented fix, not a change. */
    if (strncmp(sl[i].hash, "unreadable", 10) == 0) continue;
    /* Which input of this spec line i was: the same label at the same place (the spec's
     * labels are the file's when its SHA-256 is; the spec may live elsewhere and resolve it
     * elsewhere), else the same resolved path; an input this spec no longer has is not
     * compared. */
    long j = -1;
    if (ns == nn && nn == nlab && resolves_from(sl[i].path, labels[i])) j = (long)i;
    for (size_t k = 0; j < 0 && k < nn; k++)
      if (strcmp(nl[k].path, sl[i].path) == 0) j = (long)k;
    if (j < 0 || allow || strcmp(nl[j].hash, sl[i].hash) == 0) continue;
    if (strcmp(nl[j].path, sl[i].path) == 0)
      AS_CHECK(0, AS_ERR_MISMATCH,
               "%s: the input file %s changed since the sweep was started (SHA-256 %.12s..., "
               "now %.12s): resume with the original file, or pass --allow-input-change if you "
               "know the trials are unchanged",
               path, sl[i].path, sl[i].hash, nl[j].hash);
    AS_CHECK(0, AS_ERR_MISMATCH,
             "%s: the input file %s is not the one the sweep was started with: %s, with SHA-256 "
             "%.12s..., was %s (SHA-256 %.12s...) when the sweep was started; resume with the "
             "original spec and files, or pass --allow-input-change if you know the trials are "
             "unchanged",
             path, labels && (size_t)j < nlab ? labels[j] : nl[j].path, nl[j].path, nl[j].hash,
             sl[i].path, sl[i].hash);
  }
cleanup:
  as_outset_layout_free(bulk);
  free(sl);
  free(nl);
  free(labels);
  free(stored);
  free(now);
  return st;
}

as_status as_outset_inputs_base(const char *results, const as_spec *spec, char *dir, size_t len) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  char *stored = NULL;
  input_line *sl = NULL;
  const char **labels = NULL;
  size_t ns = 0, nlab = 0;
  AS_CHECK(results && spec && dir && len > 0, AS_ERR_ARG, "as_outset_inputs_base: bad arguments");
  dir[0] = '\0';
  AS_TRY(as_results_open(MPI_COMM_NULL, results, AS_RESULTS_READ, &rf));
  AS_TRY(stored_inputs(rf, &stored));
  if (!stored) goto cleanup;
  AS_TRY(input_lines(stored, &sl, &ns));
  AS_TRY(input_labels(spec, &labels, &nlab));
  /* Line i of the list is label i (as_results_input_hashes): the first relative label gives
   * the directory it was resolved against. */
  for (size_t i = 0; i < ns && i < nlab && ns == nlab; i++) {
    long dl = resolved_dir_len(sl[i].path, labels[i]);
    if (dl < 0) continue;
    AS_CHECK((size_t)dl + 1 < len, AS_ERR_ARG, "%s: the directory of its inputs is too long",
             results);
    snprintf(dir, len, "%.*s", dl == 0 ? 1 : (int)dl, sl[i].path);
    break;
  }
cleanup:
  as_results_close(&rf);
  free(sl);
  free(labels);
  free(stored);
  return st;
}

/* ---------------------------------------------------------------- fresh side files */

as_status as_outset_side_create(const char *results, as_side side, char *path, size_t len,
                                as_outset_file *id) {
  as_status st = AS_OK;
  int fd = -1;
  AS_CHECK(results && path && id, AS_ERR_ARG, "as_outset_side_create: NULL argument");
  AS_TRY(as_outset_name(results, side, 0, path, len));
  /* Whatever is at the name goes (a leftover of an interrupted command, or a link planted
   * there: unlink removes the link, never its target); then the name is ours alone. */
  AS_CHECK(unlink(path) == 0 || errno == ENOENT, AS_ERR_IO, "cannot remove the stale %s: %s", path,
           strerror(errno));
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  AS_CHECK(fd >= 0, AS_ERR_IO, "cannot create %s: %s", path, strerror(errno));
  struct stat sb;
  AS_CHECK(fstat(fd, &sb) == 0, AS_ERR_IO, "%s: stat failed: %s", path, strerror(errno));
  id->dev = (uint64_t)sb.st_dev;
  id->ino = (uint64_t)sb.st_ino;
cleanup:
  if (fd >= 0) close(fd);
  return st;
}

as_status as_outset_side_verify(const char *path, const as_outset_file *id) {
  as_status st = AS_OK;
  struct stat sb;
  AS_CHECK(path && id, AS_ERR_ARG, "as_outset_side_verify: NULL argument");
  AS_CHECK(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_dev == id->dev &&
               (uint64_t)sb.st_ino == id->ino,
           AS_ERR_IO, "%s was replaced while it was being written (not the file created here)",
           path);
cleanup:
  return st;
}

/* ---------------------------------------------------------------- damage refused */

/* Appends " t1, t2, ..." (the first 8, then " ...") of the rows flagged f among flags[0..n):
 * their trials, first + i, or trials[i] for a sparse file's rows (trials not NULL). */
static void list_flagged(char *buf, size_t len, const uint8_t *flags, uint64_t first, uint64_t n,
                         const uint64_t *trials, uint8_t f) {
  size_t used = strlen(buf);
  int shown = 0;
  for (uint64_t i = 0; i < n && used + 24 < len; i++) {
    if (flags[i] != f) continue;
    if (shown == 8) {
      snprintf(buf + used, len - used, " ...");
      return;
    }
    int k = snprintf(buf + used, len - used, "%s%llu", shown ? ", " : " ",
                     (unsigned long long)(trials ? trials[i] : first + i));
    if (k > 0) used += (size_t)k;
    shown++;
  }
}

/* The refusal of damage found by a verification (AS_ERR_IO, exit 3), or AS_OK for none. */
static as_status refuse_flagged(const char *path, const as_results_verify_counts *vc,
                                const uint8_t *flags, uint64_t first, uint64_t count,
                                const uint64_t *trials) {
  as_status st = AS_OK;
  char rows[256] = "", bulk[256] = "";
  if (vc->rows_bad == 0 && vc->bulk_bad == 0) goto cleanup;
  if (vc->rows_bad) {
    snprintf(rows, sizeof rows, "%llu damaged row(s) (trial", (unsigned long long)vc->rows_bad);
    list_flagged(rows, sizeof rows - 2, flags, first, count, trials, AS_VERIFY_ROW);
    strcat(rows, ")");
  }
  if (vc->bulk_bad) {
    snprintf(bulk, sizeof bulk, "%s%llu row(s) with damaged bulk data (trial",
             vc->rows_bad ? " and " : "", (unsigned long long)vc->bulk_bad);
    list_flagged(bulk, sizeof bulk - 2, flags, first, count, trials, AS_VERIFY_BULK);
    strcat(bulk, ")");
  }
  AS_CHECK(0, AS_ERR_IO,
           "%s: %s%s fail their checksums: refusing to use damaged results; `attnsweep repair "
           "%s` restores them from the journals or sets them to pending (then `attnsweep run "
           "-o %s --resume` runs them again)",
           path, rows, bulk, path, path);
cleanup:
  return st;
}

as_status as_outset_refuse_damage(as_results *rf, const char *path, uint64_t first,
                                  uint64_t count) {
  as_status st = AS_OK;
  uint8_t *flags = NULL;
  AS_CHECK(rf && path, AS_ERR_ARG, "as_outset_refuse_damage: NULL argument");
  const uint64_t n = as_results_n_trials(rf);
  if (first >= n) goto cleanup;
  if (count > n - first) count = n - first;
  flags = calloc(count ? count : 1, 1);
  AS_CHECK_ALLOC(flags);
  as_results_verify_counts vc;
  AS_TRY(as_results_verify(rf, first, count, flags, &vc));
  /* A row a running sweep is writing may read as damaged for a moment: look once more. */
  for (uint64_t i = 0; i < count && (vc.rows_bad || vc.bulk_bad); i++) {
    if (!flags[i]) continue;
    as_results_verify_counts one;
    uint8_t f = 0;
    AS_TRY(as_results_verify(rf, first + i, 1, &f, &one));
    if (f) continue;
    if (flags[i] == AS_VERIFY_ROW) vc.rows_bad--;
    if (flags[i] == AS_VERIFY_BULK) vc.bulk_bad--;
    flags[i] = 0;
  }
  AS_TRY(refuse_flagged(path, &vc, flags, first, count, NULL));
cleanup:
  free(flags);
  return st;
}

as_status as_outset_gate(const char *path) {
  as_status st = AS_OK;
  uint8_t *flags = NULL;
  uint64_t *trials = NULL, n = 0;
  as_results_verify_counts vc;
  AS_CHECK(path, AS_ERR_ARG, "as_outset_gate: NULL path");
  AS_TRY(as_results_verify_file(path, &n, &flags, &trials, &vc));
  AS_TRY(refuse_flagged(path, &vc, flags, 0, n, trials));
cleanup:
  free(flags);
  free(trials);
  return st;
}
