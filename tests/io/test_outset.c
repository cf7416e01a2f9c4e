/* The set of files of one results file (outset.h): the side-file names of docs/robustness.md;
 * listing journals; the claim rules (a new sweep refuses an existing file and removes every
 * journal of a replaced one, a resume needs the file, a second holder of the lock gets
 * AS_ERR_BUSY naming the first, an unwritable directory is AS_ERR_IO); the spec copy (save,
 * load, ensure); the layout from a spec; the record path (results journaled and durable,
 * interrupted and pending records neither journaled nor written); recovery of journaled
 * records on resume; setting a damaged set aside and swapping a rebuilt one in. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "as_test.h"
#include "attnsweep/outset.h"
#include "attnsweep/par.h"

enum { NT = 12 };

static void touch(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static int exists(const char *path) {
  return access(path, F_OK) == 0;
}

/* Contents of a small text file into buf ("" when missing). */
static void slurp(const char *path, char *buf, size_t len) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t k = fread(buf, 1, len - 1, f);
  buf[k] = '\0';
  fclose(f);
}

static void make_record(uint64_t i, as_record *r) {
  as_record_init(r, NULL);
  r->trial = i;
  r->d = 2;
  r->n = 3 + (int32_t)i;
  r->outcome = AS_OUT_REACHED_T;
  r->verdict = AS_VERDICT_CONSISTENT;
  r->gap = 0.5 + (double)i;
  snprintf(r->message, sizeof r->message, "trial %llu", (unsigned long long)i);
}

static as_status create_file(const char *path, as_results **rf) {
  as_results_info info;
  memset(&info, 0, sizeof info);
  info.n_trials = NT;
  info.master_seed = 1;
  info.spec_text = "name: outset\nseed: 1\n";
  info.overwrite = 1;
  return as_results_create(MPI_COMM_WORLD, path, &info, rf);
}

static void test_names(void) {
  char buf[AS_OUTSET_PATH_MAX];
  struct {
    as_side side;
    int rank;
    const char *want;
  } cases[] = {{AS_SIDE_LOCK, -1, "/x/out.h5.lock"},
               {AS_SIDE_SPEC, -1, "/x/out.h5.spec"},
               {AS_SIDE_JOURNAL, 3, "/x/out.h5.journal.3"},
               {AS_SIDE_DAMAGED, -1, "/x/out.h5.damaged"},
               {AS_SIDE_DAMAGED_JOURNAL, 12, "/x/out.h5.damaged.journal.12"},
               {AS_SIDE_REBUILD, -1, "/x/out.h5.rebuild"},
               {AS_SIDE_REBUILD_JOURNAL, -1, "/x/out.h5.rebuild-journal"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    AS_EXPECT(as_outset_name("/x/out.h5", cases[k].side, cases[k].rank, buf, sizeof buf) == AS_OK &&
                  strcmp(buf, cases[k].want) == 0,
              "name %zu: %s, want %s", k, buf, cases[k].want);
  AS_EXPECT(as_outset_name("/x/out.h5", AS_SIDE_JOURNAL, -1, buf, sizeof buf) == AS_ERR_ARG,
            "a journal needs a rank");
  AS_EXPECT(as_outset_name("/x/out.h5", AS_SIDE_LOCK, -1, buf, 8) == AS_ERR_ARG, "too long");
  as_error_clear();
}

static void test_lock(const char *dir) {
  char res[4200];
  snprintf(res, sizeof res, "%s/locked.h5", dir);
  as_outset *l = NULL;
  AS_EXPECT(as_outset_claim(res, AS_OUTSET_NEW, &l) == AS_OK && l, "first claim: %s",
            as_error_get()->message);
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    /* Another process: refused with a message naming the holder, in every mode; probe sees
     * it. */
    as_outset *l2 = NULL;
    int ok = 1;
    for (int mode = AS_OUTSET_REPLACE; mode <= AS_OUTSET_REPAIR; mode++) {
      if (mode == AS_OUTSET_RESUME) continue; /* the file does not exist: refused earlier */
      as_error_clear();
      as_status st = as_outset_claim(res, (as_outset_mode)mode, &l2);
      char want[64];
      snprintf(want, sizeof want, "(pid %ld on host ", (long)getppid());
      ok = ok && st == AS_ERR_BUSY && l2 == NULL &&
           strstr(as_error_get()->message, "is in use by another run") &&
           strstr(as_error_get()->message, want);
      if (!ok) fprintf(stderr, "child: status %d message '%s'\n", (int)st, as_error_get()->message);
    }
    int held = 0;
    long pid = 0;
    char host[256];
    ok = ok && as_outset_probe(res, &held, &pid, host, sizeof host) == AS_OK && held &&
         pid == (long)getppid() && host[0];
    _exit(ok ? 0 : 1);
  }
  int wst = 0;
  waitpid(child, &wst, 0);
  AS_EXPECT(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "second process refused with AS_ERR_BUSY");
  as_outset_release(&l);
  AS_EXPECT(l == NULL, "release sets NULL");
  child = fork();
  if (child == 0) {
    as_outset *l2 = NULL;
    int held = 1;
    int ok = as_outset_probe(res, &held, NULL, NULL, 0) == AS_OK && !held &&
             as_outset_claim(res, AS_OUTSET_NEW, &l2) == AS_OK;
    as_outset_release(&l2);
    _exit(ok ? 0 : 1);
  }
  waitpid(child, &wst, 0);
  AS_EXPECT(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "lock free again after release");
  as_error_clear();
  AS_EXPECT(as_outset_claim("/nonexistent-dir/out.h5", AS_OUTSET_NEW, &l) == AS_ERR_IO &&
                strstr(as_error_get()->message, "cannot create the lock file"),
            "unwritable directory: %s", as_error_get()->message);
  as_error_clear();
  char lockfile[4300];
  snprintf(lockfile, sizeof lockfile, "%s.lock", res);
  unlink(lockfile);
}

/* Claim rules and the journal list. */
static void test_claim(const char *dir) {
  char res[4200], p[4300];
  snprintf(res, sizeof res, "%s/c.h5", dir);
  const char *mine[] = {".journal.0", ".journal.1", ".journal.10", ".damaged.journal.0",
                        ".damaged.journal.1.1"};
  const char *kept[] = {".spec", ".damaged", ".journalX"};
  for (size_t k = 0; k < 5; k++) {
    snprintf(p, sizeof p, "%s%s", res, mine[k]);
    touch(p, "j");
  }
  for (size_t k = 0; k < 3; k++) {
    snprintf(p, sizeof p, "%s%s", res, kept[k]);
    touch(p, "k");
  }
  snprintf(p, sizeof p, "%s/other.h5.journal.0", dir);
  touch(p, "other");
  char **names = NULL;
  size_t n = 0;
  AS_EXPECT(as_outset_list(res, AS_SIDE_JOURNAL, &names, &n) == AS_OK && n == 3,
            "three journals listed (%zu)", n);
  as_outset_list_free(&names, n);
  AS_EXPECT(names == NULL, "list freed");
  AS_EXPECT(as_outset_list(res, AS_SIDE_DAMAGED_JOURNAL, &names, &n) == AS_OK && n == 2,
            "two set-aside journals listed (%zu)", n);
  as_outset_list_free(&names, n);
  AS_EXPECT(as_outset_list(res, AS_SIDE_SPEC, &names, &n) == AS_ERR_ARG, "not a per-rank kind");
  as_error_clear();

  as_outset *os = NULL;
  AS_EXPECT(as_outset_claim(res, AS_OUTSET_RESUME, &os) == AS_ERR_ARG && !os &&
                strstr(as_error_get()->message, "does not exist: nothing to resume"),
            "resume needs the file: %s", as_error_get()->message);
  as_error_clear();
  touch(res, "not hdf5");
  AS_EXPECT(as_outset_claim(res, AS_OUTSET_NEW, &os) == AS_ERR_ARG && !os &&
                strstr(as_error_get()->message, "already exists: pass --resume"),
            "a new sweep refuses an existing file: %s", as_error_get()->message);
  as_error_clear();
  for (int mode = AS_OUTSET_RESUME; mode <= AS_OUTSET_REPAIR; mode++) {
    AS_EXPECT(as_outset_claim(res, (as_outset_mode)mode, &os) == AS_OK && os, "claim %d", mode);
    as_outset_release(&os);
    AS_EXPECT(as_outset_list(res, AS_SIDE_JOURNAL, &names, &n) == AS_OK && n == 3,
              "mode %d keeps the journals (%zu)", mode, n);
    as_outset_list_free(&names, n);
  }
  AS_EXPECT(as_outset_claim(res, AS_OUTSET_REPLACE, &os) == AS_OK && os, "replace");
  as_outset_release(&os);
  for (size_t k = 0; k < 5; k++) {
    snprintf(p, sizeof p, "%s%s", res, mine[k]);
    AS_EXPECT(!exists(p), "replace removed %s", p);
  }
  for (size_t k = 0; k < 3; k++) {
    snprintf(p, sizeof p, "%s%s", res, kept[k]);
    AS_EXPECT(exists(p), "replace kept %s", p);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/other.h5.journal.0", dir);
  AS_EXPECT(exists(p), "another file's journal is not touched");
  unlink(p);
  unlink(res);
  snprintf(p, sizeof p, "%s.lock", res);
  unlink(p);
}

static void test_spec_copy(const char *dir) {
  char res[4200], p[4300], buf[256];
  snprintf(res, sizeof res, "%s/s.h5", dir);
  char *text = NULL;
  size_t len = 0;
  AS_EXPECT(as_outset_spec_load(res, &text, &len) == AS_ERR_DATA &&
                strstr(as_error_get()->message, "no such file"),
            "missing copy: %s", as_error_get()->message);
  as_error_clear();
  const char spec[] = "name: s\nseed: 4\n";
  AS_EXPECT(as_outset_spec_save(res, spec, sizeof spec - 1) == AS_OK, "save");
  AS_EXPECT(as_outset_spec_load(res, &text, &len) == AS_OK && len == sizeof spec - 1 &&
                strcmp(text, spec) == 0,
            "load gives what was saved");
  free(text);
  text = NULL;
  /* ensure: an existing copy stays, a missing one comes from /spec. */
  as_results *rf = NULL;
  AS_EXPECT(create_file(res, &rf) == AS_OK, "create: %s", as_error_get()->message);
  if (!rf) return;
  AS_EXPECT(as_outset_spec_ensure(res, rf) == AS_OK, "ensure with a copy");
  snprintf(p, sizeof p, "%s.spec", res);
  slurp(p, buf, sizeof buf);
  AS_EXPECT(strcmp(buf, spec) == 0, "the existing copy is kept: %s", buf);
  unlink(p);
  AS_EXPECT(as_outset_spec_ensure(res, rf) == AS_OK, "ensure without a copy");
  slurp(p, buf, sizeof buf);
  AS_EXPECT(strcmp(buf, "name: outset\nseed: 1\n") == 0, "copy written from /spec: %s", buf);
  as_results_close(&rf);
  unlink(p);
  unlink(res);
}

/* Records: results go to the journal (durable) and the file; others to neither. Resume puts
 * journaled records back only into rows that are not done. */
static void test_records(const char *dir) {
  char res[4200], jp[4300];
  snprintf(res, sizeof res, "%s/r.h5", dir);
  as_results *rf = NULL;
  as_journal *j = NULL;
  AS_EXPECT(create_file(res, &rf) == AS_OK, "create: %s", as_error_get()->message);
  AS_EXPECT(as_outset_journal_open(res, 0, 64, 1e9, &j) == AS_OK, "journal: %s",
            as_error_get()->message);
  if (!rf || !j) return;
  as_record recs[6];
  for (int i = 0; i < 6; i++) make_record((uint64_t)i, &recs[i]);
  recs[1].outcome = AS_OUT_INTERRUPTED;
  recs[4].outcome = AS_OUT_PENDING;
  recs[5].outcome = AS_OUT_FAILED;
  AS_EXPECT(as_outset_store(rf, j, recs, 6) == AS_OK, "store: %s", as_error_get()->message);
  AS_EXPECT(as_journal_pending(j) == 0, "the journal is durable after store");
  snprintf(jp, sizeof jp, "%s.journal.0", res);
  as_journal_scan sc;
  AS_EXPECT(as_journal_read(jp, NULL, NULL, &sc) == AS_OK && sc.entries_ok == 4,
            "four results journaled (%llu)", (unsigned long long)sc.entries_ok);
  as_record back[6];
  as_results_read_records(rf, 0, 6, back);
  for (int i = 0; i < 6; i++) {
    int result = i != 1 && i != 4;
    AS_EXPECT(result ? memcmp(&back[i], &recs[i], sizeof back[i]) == 0
                     : back[i].outcome == AS_OUT_PENDING,
              "row %d: %s", i, result ? "the record" : "still pending");
  }
  as_record far;
  make_record(NT, &far);
  AS_EXPECT(as_outset_store(rf, NULL, &far, 1) == AS_ERR_ARG, "a trial beyond the rows");
  as_error_clear();
  AS_EXPECT(as_outset_store(rf, j, recs + 1, 1) == AS_OK, "nothing to store is fine");

  /* Recovery: journal more results (7, 8 and a different 0), then put back into rows not done:
   * 7 and 8 come back, 0 (done) keeps its row. */
  as_record more[3];
  make_record(7, &more[0]);
  make_record(8, &more[1]);
  make_record(0, &more[2]);
  more[2].gap = -1.0;
  for (int i = 0; i < 3; i++) as_journal_append(j, &more[i]);
  AS_EXPECT(as_journal_close(&j) == AS_OK, "journal closed");
  uint8_t done[NT] = {0};
  done[0] = done[2] = done[3] = done[5] = 1;
  uint64_t recovered = 0;
  AS_EXPECT(as_outset_recover(res, rf, done, NT, &recovered) == AS_OK && recovered == 2,
            "recovered %llu", (unsigned long long)recovered);
  AS_EXPECT(done[7] && done[8] && !done[1] && !done[4], "done flags of the recovered rows");
  as_record row;
  as_results_read_records(rf, 7, 1, &row);
  AS_EXPECT(memcmp(&row, &more[0], sizeof row) == 0, "row 7 from the journal");
  as_results_read_records(rf, 0, 1, &row);
  AS_EXPECT(row.gap == recs[0].gap, "a done row is not replaced (gap %g)", row.gap);
  as_results_close(&rf);
  unlink(jp);
  unlink(res);
}

/* Set aside and swap in: names of docs/robustness.md, fresh names when taken. */
static void test_rebuild_names(const char *dir) {
  char res[4200], p[4300], buf[64];
  snprintf(res, sizeof res, "%s/d.h5", dir);
  touch(res, "damaged file");
  snprintf(p, sizeof p, "%s.damaged", res);
  touch(p, "an older damaged file");
  snprintf(p, sizeof p, "%s.journal.0", res);
  touch(p, "j0");
  snprintf(p, sizeof p, "%s.journal.3", res);
  touch(p, "j3");
  AS_EXPECT(as_outset_set_aside(res) == AS_OK, "set aside: %s", as_error_get()->message);
  AS_EXPECT(!exists(res), "the file moved");
  const char *want[][2] = {{".damaged", "an older damaged file"},
                           {".damaged.1", "damaged file"},
                           {".damaged.journal.0", "j0"},
                           {".damaged.journal.3", "j3"}};
  for (size_t k = 0; k < 4; k++) {
    snprintf(p, sizeof p, "%s%s", res, want[k][0]);
    slurp(p, buf, sizeof buf);
    AS_EXPECT(strcmp(buf, want[k][1]) == 0, "%s holds '%s' (want '%s')", p, buf, want[k][1]);
  }
  snprintf(p, sizeof p, "%s.journal.0", res);
  AS_EXPECT(!exists(p), "no journal left under the old name");
  snprintf(p, sizeof p, "%s.rebuild", res);
  touch(p, "new file");
  snprintf(p, sizeof p, "%s.rebuild-journal", res);
  touch(p, "new journal");
  AS_EXPECT(as_outset_swap_in(res) == AS_OK, "swap in: %s", as_error_get()->message);
  slurp(res, buf, sizeof buf);
  AS_EXPECT(strcmp(buf, "new file") == 0, "the rebuilt file took the name");
  snprintf(p, sizeof p, "%s.journal.0", res);
  slurp(p, buf, sizeof buf);
  AS_EXPECT(strcmp(buf, "new journal") == 0, "its journal is journal 0");
  const char *all[] = {
      "", ".damaged", ".damaged.1", ".damaged.journal.0", ".damaged.journal.3", ".journal.0"};
  for (size_t k = 0; k < 6; k++) {
    snprintf(p, sizeof p, "%s%s", res, all[k]);
    unlink(p);
  }
}

/* Layout: bulk counts per trial from the output options (docs/results.md: initial and final
 * n x d, attention n x n, V and M d x d each, snapshots k x n x d). */
static void test_layout(void) {
  const char text[] = "name: lay\nseed: 2\noutput: {final: true, matrices: true, snapshots: "
                      "[1.0, 2.0]}\nsweep: {d: [2, 3], n: [4, 5], T: 3}\n";
  as_spec *spec = NULL;
  AS_EXPECT(as_spec_parse(text, sizeof text - 1, "lay.yaml", NULL, &spec) == AS_OK, "spec");
  if (!spec) return;
  as_results_info info;
  uint64_t *bulk[AS_BULK_COUNT];
  AS_EXPECT(as_outset_layout(spec, &info, bulk) == AS_OK, "layout");
  AS_EXPECT(info.n_trials == 4 && info.master_seed == 2 && info.overwrite == 0 &&
                strcmp(info.spec_sha256, as_spec_sha256(spec)) == 0,
            "info");
  AS_EXPECT(!bulk[AS_BULK_INITIAL] && !bulk[AS_BULK_ATTENTION] && bulk[AS_BULK_FINAL] &&
                bulk[AS_BULK_V] && bulk[AS_BULK_M] && bulk[AS_BULK_SNAPSHOTS],
            "kinds stored");
  for (uint64_t i = 0; i < 4 && bulk[AS_BULK_FINAL]; i++) {
    as_trial t;
    as_spec_trial(spec, i, &t);
    uint64_t n = (uint64_t)t.n, d = (uint64_t)t.d;
    AS_EXPECT(bulk[AS_BULK_FINAL][i] == n * d && bulk[AS_BULK_V][i] == d * d &&
                  bulk[AS_BULK_M][i] == d * d && bulk[AS_BULK_SNAPSHOTS][i] == 2 * n * d &&
                  info.bulk_counts[AS_BULK_FINAL] == bulk[AS_BULK_FINAL],
              "trial %llu (d %llu, n %llu)", (unsigned long long)i, (unsigned long long)d,
              (unsigned long long)n);
  }
  as_outset_layout_free(bulk);
  AS_EXPECT(bulk[AS_BULK_FINAL] == NULL, "freed");
  as_spec_destroy(&spec);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  as_par_setup(MPI_COMM_WORLD);
  char dir[] = "/tmp/as_outset_XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_names();
  test_lock(dir);
  test_claim(dir);
  test_spec_copy(dir);
  test_records(dir);
  test_rebuild_names(dir);
  test_layout();
  if (rmdir(dir) != 0) AS_EXPECT(0, "files left in %s: %s", dir, strerror(errno));
  int rc = as_test_finish("test_outset");
  MPI_Finalize();
  return rc;
}
