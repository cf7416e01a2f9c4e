/* repair.c: rebuilding a results file from its journals after a hard kill (repair.h). */
#include "attnsweep/repair.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnsweep/journal.h"
#include "attnsweep/outset.h"
#include "attnsweep/results.h"
#include "attnsweep/spec.h"

/* Rows read or written per HDF5 call. */
#define REPAIR_BLOCK 256
#define NO_SLOT UINT64_MAX

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

/* Usable journal entries, one per trial (the last one read wins, except that a failed or
 * non-finite entry never replaces another: as_outset_is_retryable). */
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
    as_record *old = &t->recs[t->slot[rec->trial]];
    /* A failed or non-finite entry is superseded by the result of a retry, in any order. */
    if (!(as_outset_is_retryable(rec) && !as_outset_is_retryable(old))) *old = *rec;
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

/* Read every journal of kind side of path into t; a journal whose header names another spec
 * SHA-256 than sha (NULL: unknown) is refused, so a repair never mixes sweeps. */
static as_status read_journals(const char *path, as_side side, const char *sha, jtab *t,
                               as_repair_report *rep) {
  as_status st = AS_OK;
  as_outset_scan sum;
  memset(&sum, 0, sizeof sum);
  AS_TRY(as_outset_journals_read_for(path, side, sha, jtab_visit, t, &sum));
  rep->journals += sum.files;
  rep->journal_damaged_headers += sum.damaged_headers;
  rep->journal_entries += sum.entries_ok;
  rep->journal_bad += sum.entries_bad;
  rep->journal_torn_bytes += sum.torn_bytes;
  rep->journaled = t->count;
cleanup:
  return st;
}

/* ---------------------------------------------------------------- readable file: merge */

/* A pending row for trial i (what a damaged row is reset to). */
static void pending_row(as_record *out, uint64_t i) {
  as_record_init(out, NULL);
  out->trial = i;
}

static as_status merge(as_results *rf, const jtab *t, int dry_run, as_repair_report *rep) {
  as_status st = AS_OK;
  as_record *rows = NULL, *out = NULL;
  size_t n_out = 0;
  uint8_t flags[REPAIR_BLOCK];
  rows = malloc(REPAIR_BLOCK * sizeof *rows);
  out = malloc(REPAIR_BLOCK * sizeof *out);
  AS_CHECK_ALLOC(rows);
  AS_CHECK_ALLOC(out);
  for (uint64_t first = 0; first < t->n_trials; first += REPAIR_BLOCK) {
    size_t cnt = (size_t)(t->n_trials - first < REPAIR_BLOCK ? t->n_trials - first : REPAIR_BLOCK);
    AS_TRY(as_results_read_records(rf, first, cnt, rows));
    as_results_verify_counts vc;
    AS_TRY(as_results_verify(rf, first, cnt, flags, &vc));
    rep->unverified = !vc.verified;
    n_out = 0;
    for (size_t k = 0; k < cnt; k++) {
      const uint64_t i = first + k;
      const as_record *row = &rows[k];
      if (flags[k] == AS_VERIFY_BULK) {
        /* The journal cannot give bulk data back: the trial runs again. */
        rep->damaged_bulk++;
        pending_row(&out[n_out++], i);
      } else if (flags[k] == AS_VERIFY_ROW) {
        /* Never kept: the journal's record, else pending (a trial whose row and journal
         * entry are both damaged runs again). */
        rep->damaged++;
        if (t->slot[i] != NO_SLOT) {
          out[n_out++] = t->recs[t->slot[i]];
          rep->damaged_restored++;
          rep->done++;
        } else {
          pending_row(&out[n_out++], i);
        }
      } else if (t->slot[i] != NO_SLOT) {
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
          pending_row(&out[n_out++], i);
        }
      }
    }
    if (!n_out || dry_run) continue;
    AS_TRY(as_results_write_records(rf, out, n_out));
    /* A row put back from the journal is only as good as its bulk data in the file. */
    for (size_t k = 0; k < n_out; k++) {
      if (out[k].outcome == AS_OUT_PENDING) continue;
      uint8_t f = 0;
      AS_TRY(as_results_verify(rf, out[k].trial, 1, &f, &vc));
      if (f != AS_VERIFY_BULK) continue;
      rep->damaged_bulk++;
      rep->done--;
      as_record p;
      pending_row(&p, out[k].trial);
      AS_TRY(as_results_write_records(rf, &p, 1));
    }
  }
cleanup:
  free(rows);
  free(out);
  return st;
}

/* ---------------------------------------------------------------- unreadable file: rebuild */

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
  char newfile[AS_OUTSET_PATH_MAX], newjournal[AS_OUTSET_PATH_MAX], name[AS_OUTSET_PATH_MAX];
  as_outset_file newid, jid;

  rep->rebuilt = 1;
  /* The spec: the one given, else the side file written when the sweep started. */
  if (spec_path) {
    AS_TRY(as_spec_load(spec_path, &diags, &spec));
  } else {
    as_status ls = as_outset_spec_load(path, &text, &len);
    if (ls == AS_ERR_DATA) {
      as_error_clear();
      AS_CHECK(0, AS_ERR_DATA,
               "%s cannot be used (%s) and %s.spec, the copy of the sweep's spec, is missing: "
               "pass --spec SPEC with the spec the sweep was run with",
               path, rep->reason, path);
    }
    AS_TRY(ls);
    AS_TRY(as_outset_name(path, AS_SIDE_SPEC, -1, name, sizeof name));
    AS_TRY(as_spec_parse(text, len, name, &diags, &spec));
  }
  const uint64_t n_trials = as_spec_trial_count(spec);
  rep->n_trials = n_trials;
  AS_TRY(jtab_init(&t, n_trials, rep));
  /* Journals moved aside by an earlier, interrupted rebuild count too: in this mode records
   * with bulk data are never restored, so every journaled record is safe to use. */
  AS_TRY(read_journals(path, AS_SIDE_JOURNAL, as_spec_sha256(spec), &t, rep));
  AS_TRY(read_journals(path, AS_SIDE_DAMAGED_JOURNAL, as_spec_sha256(spec), &t, rep));
  as_results_info info;
  AS_TRY(as_outset_layout(spec, &info, bulk));

  if (!dry_run) {
    info.overwrite = 1;
    /* Both made here first (O_EXCL | O_NOFOLLOW): a link planted at either name is removed,
     * never written through; HDF5 then truncates the file made here, checked after. */
    AS_TRY(as_outset_side_create(path, AS_SIDE_REBUILD, newfile, sizeof newfile, &newid));
    AS_TRY(
        as_outset_side_create(path, AS_SIDE_REBUILD_JOURNAL, newjournal, sizeof newjournal, &jid));
    AS_TRY(as_results_create(MPI_COMM_SELF, newfile, &info, &rf));
    AS_TRY(as_outset_side_verify(newfile, &newid));
    AS_TRY(as_journal_open_spec(newjournal, 0, REPAIR_BLOCK, 3600.0, as_spec_sha256(spec), &j));
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
    out[n_out++] = t.recs[t.slot[i]];
    if (n_out == REPAIR_BLOCK) {
      AS_TRY(as_outset_store(rf, j, out, n_out)); /* journal before rows, as in a sweep */
      n_out = 0;
    }
  }
  if (dry_run) goto cleanup;
  AS_TRY(as_outset_store(rf, j, out, n_out));
  AS_TRY(as_journal_close(&j));
  AS_TRY(as_results_close(&rf));
  AS_TRY(as_outset_side_verify(newfile, &newid));
  AS_TRY(as_outset_side_verify(newjournal, &jid));
  {
    /* Keep the spec beside the file (it may have come from --spec). */
    size_t slen = 0;
    const char *stext = as_spec_text(spec, &slen);
    AS_TRY(as_outset_spec_save(path, stext, slen));
  }
  /* Swap in: the damaged file and the old journals go aside first, then the new journal and
   * the new file take their names. Interrupted anywhere, a rerun of repair finds no readable
   * OUT.h5 and rebuilds again from both journal sets. */
  AS_TRY(as_outset_set_aside(path));
  AS_TRY(as_outset_swap_in(path));

cleanup:
  if (j) as_journal_close(&j);
  if (rf) as_results_close(&rf);
  free(out);
  as_outset_layout_free(bulk);
  jtab_free(&t);
  as_spec_destroy(&spec);
  as_spec_diags_free(&diags);
  free(text);
  return st;
}

/* ---------------------------------------------------------------- entry point */

/* Whether any side file of path exists that only a run of attnsweep makes (a journal, the
 * spec copy, the lock, a set-aside journal). */
static int has_side_files(const char *path) {
  char name[AS_OUTSET_PATH_MAX];
  const as_side single[] = {AS_SIDE_SPEC, AS_SIDE_LOCK};
  for (size_t k = 0; k < sizeof single / sizeof single[0]; k++)
    if (as_outset_name(path, single[k], -1, name, sizeof name) == AS_OK && access(name, F_OK) == 0)
      return 1;
  const as_side multi[] = {AS_SIDE_JOURNAL, AS_SIDE_DAMAGED_JOURNAL};
  for (size_t k = 0; k < sizeof multi / sizeof multi[0]; k++) {
    char **names = NULL;
    size_t n = 0;
    if (as_outset_list(path, multi[k], &names, &n) != AS_OK) as_error_clear();
    as_outset_list_free(&names, n);
    if (n) return 1;
  }
  return 0;
}

/* Repair only ever touches one of ours: a file that opens as an attnsweep results file, or
 * one that has side files of a run (a file killed while it was created has no superblock
 * yet, but its spec copy was written first). Anything else is the user's file: AS_ERR_ARG,
 * before the lock file is made, and it is never moved. */
static as_status check_ours(const char *path) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  struct stat sb;
  if (stat(path, &sb) != 0) goto cleanup; /* missing: rebuilt from the spec and journals */
  AS_CHECK(S_ISREG(sb.st_mode), AS_ERR_ARG,
           "%s is not a regular file: refusing to repair it (it is left untouched)", path);
  if (has_side_files(path)) goto cleanup;
  as_status ost = as_results_open(MPI_COMM_SELF, path, AS_RESULTS_READ, &rf);
  if (ost == AS_OK) goto cleanup;
  char why[512];
  snprintf(why, sizeof why, "%.400s", as_error_get()->message);
  as_error_clear();
  /* The way out a damaged file's message gives is this command: keep only the cause (issue
   * 49: a truncated complete file was refused "with the advice to run repair"). */
  char *hint = strstr(why, ": `attnsweep repair");
  if (hint) *hint = '\0';
  AS_CHECK(ost != AS_ERR_HDF5, AS_ERR_ARG,
           "refusing to repair %s: %s, and no journal, spec copy or lock of a run is beside it, "
           "so nothing here can rebuild its records (the file is left untouched). A complete "
           "sweep keeps no journals: restore the file from a copy, or run the sweep again "
           "(attnsweep run SPEC -o %s --force)",
           path, why, path);
  AS_CHECK(0, AS_ERR_ARG,
           "refusing to repair %s: %s, and no journal, spec copy or lock of a run is beside it "
           "(the file is left untouched)",
           path, why);
cleanup:
  if (rf) as_results_close(&rf);
  return st;
}

as_status as_repair_run(const char *given, const char *spec_path, int dry_run,
                        as_repair_report *rep) {
  as_status st = AS_OK;
  char path[AS_OUTSET_PATH_MAX];
  as_outset *claim = NULL;
  as_results *rf = NULL;
  jtab t;
  memset(&t, 0, sizeof t);
  AS_CHECK(given && rep, AS_ERR_ARG, "as_repair_run: NULL argument");
  memset(rep, 0, sizeof *rep);
  /* A symbolic link names the same set as its target (outset.h). */
  AS_TRY(as_outset_resolve(given, path, sizeof path));
  AS_TRY(check_ours(path));
  if (!dry_run) AS_TRY(as_outset_claim(path, AS_OUTSET_REPAIR, &claim));

  as_status ost = AS_ERR_DATA;
  if (access(path, F_OK) == 0) {
    ost = as_results_open(MPI_COMM_SELF, path, dry_run ? AS_RESULTS_READ : AS_RESULTS_WRITE, &rf);
    /* Readable means: it opens and its outcome column reads back. */
    if (ost == AS_OK) {
      as_results_counts c;
      ost = as_results_count(rf, &c, NULL);
    }
    /* A file that cannot be written (a filtered dataset: as_results_open) is refused with its
     * remedy, never rebuilt. */
    if (ost == AS_ERR_NOMEM || ost == AS_ERR_MISMATCH || ost == AS_ERR_UNSUPPORTED) AS_TRY(ost);
    if (ost != AS_OK) {
      snprintf(rep->reason, sizeof rep->reason, "%s", as_error_get()->message);
      /* The way out that message gives is this command itself: keep only the cause. */
      char *hint = strstr(rep->reason, ": `attnsweep repair");
      if (hint) *hint = '\0';
    }
  } else {
    snprintf(rep->reason, sizeof rep->reason, "%.900s: no such file", path);
  }

  if (ost == AS_OK) {
    rep->n_trials = as_results_n_trials(rf);
    AS_TRY(jtab_init(&t, rep->n_trials, rep));
    char sha[80] = "";
    if (as_results_attr_string(rf, "spec_sha256", sha, sizeof sha) != AS_OK) {
      as_error_clear();
      sha[0] = '\0';
    }
    AS_TRY(read_journals(path, AS_SIDE_JOURNAL, sha[0] ? sha : NULL, &t, rep));
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
  as_outset_release(&claim);
  return st;
}
