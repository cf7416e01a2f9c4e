/* repair.c: rebuilding a results file from its journals after a hard kill (repair.h). */
#include "attnsweep/repair.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnsweep/journal.h"

/* Rows read or written per HDF5 call. */
#define REPAIR_BLOCK 256
#define NO_SLOT UINT64_MAX
#define PATH_MAX_LEN 4400

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

/* Directory of path ("." when none) and its last component. */
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

/* Make renames in the directory of path durable (best effort: some file systems refuse). */
static void sync_dir_of(const char *path) {
  char dir[PATH_MAX_LEN];
  const char *base = NULL;
  split_path(path, dir, sizeof dir, &base);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

as_status as_repair_spec_path(const char *results_path, char *buf, size_t len) {
  as_status st = AS_OK;
  AS_CHECK(results_path && buf, AS_ERR_ARG, "as_repair_spec_path: NULL argument");
  int k = snprintf(buf, len, "%s.spec", results_path);
  AS_CHECK(k >= 0 && (size_t)k < len, AS_ERR_ARG, "%s: path too long", results_path);
cleanup:
  return st;
}

as_status as_repair_spec_save(const char *results_path, const char *text, size_t len) {
  as_status st = AS_OK;
  int fd = -1;
  char dst[PATH_MAX_LEN], tmp[PATH_MAX_LEN + 32];
  AS_CHECK(text || len == 0, AS_ERR_ARG, "as_repair_spec_save: NULL text");
  AS_TRY(as_repair_spec_path(results_path, dst, sizeof dst));
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dst, (long)getpid());
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  AS_CHECK(fd >= 0, AS_ERR_IO, "cannot write the spec copy %s: %s", tmp, strerror(errno));
  AS_CHECK(write_all(fd, text ? text : "", len) == 0 && fdatasync(fd) == 0, AS_ERR_IO,
           "cannot write the spec copy %s: %s", tmp, strerror(errno));
  AS_CHECK(close(fd) == 0, AS_ERR_IO, "cannot write the spec copy %s: %s", tmp, strerror(errno));
  fd = -1;
  AS_CHECK(rename(tmp, dst) == 0, AS_ERR_IO, "cannot rename %s to %s: %s", tmp, dst,
           strerror(errno));
  sync_dir_of(dst);
cleanup:
  if (fd >= 0) close(fd);
  if (st != AS_OK) unlink(tmp);
  return st;
}

as_status as_repair_spec_load(const char *results_path, char **text, size_t *len) {
  as_status st = AS_OK;
  char path[PATH_MAX_LEN];
  char *buf = NULL;
  FILE *f = NULL;
  AS_CHECK(text, AS_ERR_ARG, "as_repair_spec_load: NULL text");
  AS_TRY(as_repair_spec_path(results_path, path, sizeof path));
  f = fopen(path, "rb");
  AS_CHECK(f || errno != ENOENT, AS_ERR_DATA, "%s: no such file", path);
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

/* ---------------------------------------------------------------- plan -> file layout */

void as_repair_bulk_counts(const as_trial *t, uint64_t counts[AS_BULK_COUNT]) {
  const uint64_t n = (uint64_t)t->n, d = (uint64_t)t->d;
  const as_output_spec *o = &t->output;
  counts[AS_BULK_INITIAL] = o->initial ? n * d : 0;
  counts[AS_BULK_FINAL] = o->final ? n * d : 0;
  counts[AS_BULK_ATTENTION] = o->attention ? n * n : 0;
  counts[AS_BULK_V] = o->matrices ? d * d : 0;
  counts[AS_BULK_M] = o->matrices ? d * d : 0;
  counts[AS_BULK_SNAPSHOTS] = (uint64_t)o->n_snapshots * n * d;
}

void as_repair_info_free(uint64_t *bulk[AS_BULK_COUNT]) {
  for (int k = 0; k < AS_BULK_COUNT; k++) {
    free(bulk[k]);
    bulk[k] = NULL;
  }
}

as_status as_repair_info_from_spec(const as_spec *spec, as_results_info *info,
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
      as_repair_bulk_counts(&t, c);
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
  const char *const *fields = NULL;
  int nf = as_results_label_fields(&fields);
  for (int i = 0; i < nf && i < AS_RESULTS_MAX_LABELS; i++) {
    as_label_set *ls = &info->labels[info->n_labels++];
    ls->field = fields[i];
    ls->count = as_spec_labels(spec, fields[i], &ls->names);
  }
cleanup:
  if (st != AS_OK) as_repair_info_free(bulk);
  return st;
}

/* ---------------------------------------------------------------- record comparison */

int as_repair_row_consistent(const as_record *r, uint64_t row) {
  return r->trial == row && r->outcome > AS_OUT_PENDING && r->outcome < AS_OUT_COUNT &&
         r->outcome != AS_OUT_INTERRUPTED && r->verdict > AS_VERDICT_PENDING &&
         r->verdict < AS_VERDICT_COUNT && r->d >= 1 && r->n >= 1 &&
         memchr(r->message, '\0', sizeof r->message) != NULL;
}

/* Field by field, bitwise (NaN equals the same NaN), timing fields aside. Padding is ignored. */
static int same_result(const as_record *a, const as_record *b) {
  as_record x = *a, y = *b;
  as_record_strip_timing(&x);
  as_record_strip_timing(&y);
#define AS_X_SAME(kind, name, doc) \
  if (memcmp(&x.name, &y.name, sizeof x.name) != 0) return 0;
  AS_RECORD_FIELDS(AS_X_SAME)
#undef AS_X_SAME
  return 1;
}

/* ---------------------------------------------------------------- journals */

/* Usable journal entries, one per trial (the last one read wins). */
typedef struct jtab {
  uint64_t n_trials;
  uint64_t *slot; /* n_trials entries: index into recs, or NO_SLOT */
  as_record *recs;
  uint64_t count, cap;
  as_repair_report *rep;
} jtab;

static void jtab_free(jtab *t) {
  free(t->slot);
  free(t->recs);
  memset(t, 0, sizeof *t);
}

static as_status jtab_init(jtab *t, uint64_t n_trials, as_repair_report *rep) {
  as_status st = AS_OK;
  memset(t, 0, sizeof *t);
  t->n_trials = n_trials;
  t->rep = rep;
  t->slot = malloc((n_trials ? n_trials : 1) * sizeof *t->slot);
  AS_CHECK_ALLOC(t->slot);
  for (uint64_t i = 0; i < n_trials; i++) t->slot[i] = NO_SLOT;
cleanup:
  return st;
}

static as_status jtab_visit(const as_record *rec, void *ctx) {
  as_status st = AS_OK;
  jtab *t = ctx;
  /* Interrupted and pending records are not results (the sweep never journals them). */
  if (rec->outcome == AS_OUT_PENDING || rec->outcome == AS_OUT_INTERRUPTED) return AS_OK;
  if (rec->trial >= t->n_trials) {
    t->rep->journal_outside++;
    return AS_OK;
  }
  if (t->slot[rec->trial] != NO_SLOT) {
    t->recs[t->slot[rec->trial]] = *rec;
    return AS_OK;
  }
  if (t->count == t->cap) {
    uint64_t cap = t->cap ? 2 * t->cap : 256;
    as_record *p = realloc(t->recs, cap * sizeof *p);
    AS_CHECK_ALLOC(p);
    t->recs = p;
    t->cap = cap;
  }
  t->recs[t->count] = *rec;
  t->slot[rec->trial] = t->count++;
cleanup:
  return st;
}

/* Files "<dir>/<base><infix><suffix>" of the directory of path, e.g. infix ".journal.".
 * *names: allocated array of allocated full paths (free with free_names). */
static as_status list_with_infix(const char *path, const char *infix, char ***names, size_t *n) {
  as_status st = AS_OK;
  DIR *dir = NULL;
  char **list = NULL;
  size_t count = 0, cap = 0;
  char dname[PATH_MAX_LEN], prefix[PATH_MAX_LEN];
  const char *base = NULL;
  split_path(path, dname, sizeof dname, &base);
  snprintf(prefix, sizeof prefix, "%s%s", base, infix);
  dir = opendir(dname);
  AS_CHECK(dir != NULL, AS_ERR_IO, "%s: cannot list the directory: %s", dname, strerror(errno));
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
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
  *names = list;
  *n = count;
  list = NULL;
cleanup:
  if (dir) closedir(dir);
  if (list) {
    for (size_t i = 0; i < count; i++) free(list[i]);
    free(list);
  }
  return st;
}

static void free_names(char **names, size_t n) {
  if (!names) return;
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* Read every journal of path with the given infix into t. */
static as_status read_journals(const char *path, const char *infix, jtab *t,
                               as_repair_report *rep) {
  as_status st = AS_OK;
  char **names = NULL;
  size_t n = 0;
  AS_TRY(list_with_infix(path, infix, &names, &n));
  for (size_t i = 0; i < n; i++) {
    as_journal_scan scan;
    memset(&scan, 0, sizeof scan);
    AS_TRY(as_journal_read(names[i], jtab_visit, t, &scan));
    rep->journals++;
    rep->journal_entries += scan.entries_ok;
    rep->journal_bad += scan.entries_bad;
    rep->journal_torn_bytes += scan.torn_bytes;
  }
  rep->journaled = t->count;
cleanup:
  free_names(names, n);
  return st;
}

/* ---------------------------------------------------------------- readable file: merge */

static as_status merge(as_results *rf, const jtab *t, int dry_run, as_repair_report *rep) {
  as_status st = AS_OK;
  as_record *rows = NULL, *out = NULL;
  size_t n_out = 0;
  rows = malloc(REPAIR_BLOCK * sizeof *rows);
  out = malloc(REPAIR_BLOCK * sizeof *out);
  AS_CHECK_ALLOC(rows);
  AS_CHECK_ALLOC(out);
  for (uint64_t first = 0; first < t->n_trials; first += REPAIR_BLOCK) {
    size_t cnt = (size_t)(t->n_trials - first < REPAIR_BLOCK ? t->n_trials - first : REPAIR_BLOCK);
    AS_TRY(as_results_read_records(rf, first, cnt, rows));
    n_out = 0;
    for (size_t k = 0; k < cnt; k++) {
      const uint64_t i = first + k;
      const as_record *row = &rows[k];
      if (t->slot[i] != NO_SLOT) {
        const as_record *jr = &t->recs[t->slot[i]];
        if (row->outcome == AS_OUT_PENDING) {
          rep->restored++;
          out[n_out++] = *jr;
        } else if (!same_result(row, jr)) {
          rep->corrected++;
          out[n_out++] = *jr;
        }
        rep->done++;
      } else if (row->outcome != AS_OUT_PENDING) {
        if (as_repair_row_consistent(row, i)) {
          rep->unjournaled++;
          rep->done++;
        } else {
          /* A row that is neither pending nor a whole record, and no journal to fix it:
           * back to pending, so resume runs the trial again. */
          rep->cleared++;
          as_record_init(&out[n_out], NULL);
          out[n_out].trial = i;
          n_out++;
        }
      }
    }
    if (n_out && !dry_run) AS_TRY(as_results_write_records(rf, out, n_out));
  }
cleanup:
  free(rows);
  free(out);
  return st;
}

/* ---------------------------------------------------------------- unreadable file: rebuild */

/* A name that does not exist yet: base, else base.1, base.2, ... */
static void fresh_name(const char *base, char *buf, size_t len) {
  snprintf(buf, len, "%s", base);
  for (int k = 1; access(buf, F_OK) == 0 && k < 10000; k++) {
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

static as_status rebuild(const char *path, const char *spec_path, int dry_run,
                         as_repair_report *rep) {
  as_status st = AS_OK;
  char *text = NULL;
  size_t len = 0;
  as_spec *spec = NULL;
  as_spec_diags diags = {0, 0, NULL};
  jtab t;
  memset(&t, 0, sizeof t);
  uint64_t *bulk[AS_BULK_COUNT] = {NULL};
  as_results *rf = NULL;
  as_journal *j = NULL;
  as_record *out = NULL;
  char **old = NULL;
  size_t n_old = 0;
  char newfile[PATH_MAX_LEN + 16], newjournal[PATH_MAX_LEN + 32], target[PATH_MAX_LEN + 64];

  rep->rebuilt = 1;
  /* The spec: the one given, else the side file written when the sweep started. */
  if (spec_path) {
    AS_TRY(as_spec_load(spec_path, &diags, &spec));
  } else {
    as_status ls = as_repair_spec_load(path, &text, &len);
    if (ls == AS_ERR_DATA) {
      as_error_clear();
      AS_CHECK(0, AS_ERR_DATA,
               "%s cannot be used (%s) and %s.spec, the copy of the sweep's spec, is missing: "
               "pass --spec SPEC with the spec the sweep was run with",
               path, rep->reason, path);
    }
    AS_TRY(ls);
    char name[PATH_MAX_LEN];
    AS_TRY(as_repair_spec_path(path, name, sizeof name));
    AS_TRY(as_spec_parse(text, len, name, &diags, &spec));
  }
  const uint64_t n_trials = as_spec_trial_count(spec);
  rep->n_trials = n_trials;
  AS_TRY(jtab_init(&t, n_trials, rep));
  /* Journals moved aside by an earlier, interrupted rebuild count too: in this mode records
   * with bulk data are never restored, so every journaled record is safe to use. */
  AS_TRY(read_journals(path, ".journal.", &t, rep));
  AS_TRY(read_journals(path, ".damaged.journal.", &t, rep));
  as_results_info info;
  AS_TRY(as_repair_info_from_spec(spec, &info, bulk));

  if (!dry_run) {
    info.overwrite = 1;
    snprintf(newfile, sizeof newfile, "%s.rebuild", path);
    snprintf(newjournal, sizeof newjournal, "%s.rebuild-journal", path);
    unlink(newjournal);
    AS_TRY(as_results_create(MPI_COMM_SELF, newfile, &info, &rf));
    AS_TRY(as_journal_open(newjournal, 0, REPAIR_BLOCK, 3600.0, &j));
    out = malloc(REPAIR_BLOCK * sizeof *out);
    AS_CHECK_ALLOC(out);
  }
  size_t n_out = 0;
  for (uint64_t i = 0; i < n_trials; i++) {
    if (t.slot[i] == NO_SLOT) continue;
    int has_bulk = 0;
    for (int k = 0; k < AS_BULK_COUNT; k++) has_bulk |= bulk[k] && bulk[k][i] > 0;
    if (has_bulk) {
      rep->bulk_lost++;
      continue;
    }
    rep->restored++;
    rep->done++;
    if (dry_run) continue;
    out[n_out] = t.recs[t.slot[i]];
    AS_TRY(as_journal_append(j, &out[n_out]));
    if (++n_out == REPAIR_BLOCK) {
      AS_TRY(as_journal_flush(j)); /* journal before rows, as in a sweep */
      AS_TRY(as_results_write_records(rf, out, n_out));
      n_out = 0;
    }
  }
  if (dry_run) goto cleanup;
  if (n_out) {
    AS_TRY(as_journal_flush(j));
    AS_TRY(as_results_write_records(rf, out, n_out));
  }
  AS_TRY(as_journal_close(&j));
  AS_TRY(as_results_close(&rf));
  {
    /* Keep the spec beside the file (it may have come from --spec). */
    size_t slen = 0;
    const char *stext = as_spec_text(spec, &slen);
    AS_TRY(as_repair_spec_save(path, stext, slen));
  }
  /* Swap in: the damaged file and the old journals go aside first, then the new journal and
   * the new file take their names. Interrupted anywhere, a rerun of repair finds no readable
   * OUT.h5 and rebuilds again from both journal sets. */
  if (access(path, F_OK) == 0) {
    char base[PATH_MAX_LEN + 16];
    snprintf(base, sizeof base, "%s.damaged", path);
    fresh_name(base, target, sizeof target);
    AS_TRY(rename_checked(path, target));
  }
  AS_TRY(list_with_infix(path, ".journal.", &old, &n_old));
  for (size_t k = 0; k < n_old; k++) {
    const char *suffix = strstr(old[k], ".journal.");
    char base[PATH_MAX_LEN + 64];
    snprintf(base, sizeof base, "%s.damaged%s", path, suffix);
    fresh_name(base, target, sizeof target);
    AS_TRY(rename_checked(old[k], target));
  }
  snprintf(target, sizeof target, "%s.journal.0", path);
  AS_TRY(rename_checked(newjournal, target));
  AS_TRY(rename_checked(newfile, path));
  sync_dir_of(path);

cleanup:
  if (j) as_journal_close(&j);
  if (rf) as_results_close(&rf);
  free_names(old, n_old);
  free(out);
  as_repair_info_free(bulk);
  jtab_free(&t);
  as_spec_destroy(&spec);
  as_spec_diags_free(&diags);
  free(text);
  return st;
}

/* ---------------------------------------------------------------- entry point */

as_status as_repair_run(const char *path, const char *spec_path, int dry_run,
                        as_repair_report *rep) {
  as_status st = AS_OK;
  as_run_lock *lock = NULL;
  as_results *rf = NULL;
  jtab t;
  memset(&t, 0, sizeof t);
  AS_CHECK(path && rep, AS_ERR_ARG, "as_repair_run: NULL argument");
  memset(rep, 0, sizeof *rep);
  if (!dry_run) AS_TRY(as_run_lock_acquire(path, &lock));

  as_status ost = AS_ERR_DATA;
  if (access(path, F_OK) == 0) {
    ost = as_results_open(MPI_COMM_SELF, path, dry_run ? AS_RESULTS_READ : AS_RESULTS_WRITE, &rf);
    /* Readable means: it opens and its outcome column reads back. */
    if (ost == AS_OK) {
      as_results_counts c;
      ost = as_results_count(rf, &c, NULL);
    }
    if (ost == AS_ERR_NOMEM || ost == AS_ERR_MISMATCH) AS_TRY(ost);
    if (ost != AS_OK) snprintf(rep->reason, sizeof rep->reason, "%s", as_error_get()->message);
  } else {
    snprintf(rep->reason, sizeof rep->reason, "%s: no such file", path);
  }

  if (ost == AS_OK) {
    rep->n_trials = as_results_n_trials(rf);
    AS_TRY(jtab_init(&t, rep->n_trials, rep));
    AS_TRY(read_journals(path, ".journal.", &t, rep));
    AS_TRY(merge(rf, &t, dry_run, rep));
    AS_TRY(as_results_close(&rf));
    goto cleanup;
  }
  if (rf) {
    /* Opened but not readable: let go of it without touching it further. */
    as_status ignored = as_results_close(&rf);
    (void)ignored;
  }
  as_error_clear();
  AS_TRY(rebuild(path, spec_path, dry_run, rep));

cleanup:
  if (rf) as_results_close(&rf);
  jtab_free(&t);
  as_run_lock_release(&lock);
  return st;
}
