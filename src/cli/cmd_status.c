/* cmd_status.c: attnsweep status OUT.h5 — progress of a running or stopped sweep.
 *
 * Reads the results file without MPI (sec2 driver, HDF5 file locking off), so it works on a
 * login node while the sweep runs. "running" means another process holds OUT.h5.lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/outset.h"
#include "attnsweep/results.h"
#include "cli.h"

enum { MAX_FAILURES_SHOWN = 5, MAX_SEGMENTS_SHOWN = 20 };

/* Open read-only; a writer that is in its open or close may have metadata in flight for a
 * moment, so an HDF5 failure is retried a few times. Bad-input errors are not retried. */
static as_status open_with_retry(const char *path, as_results **rf) {
  as_status st = AS_OK;
  for (int attempt = 0; attempt < 5; attempt++) {
    as_error_clear();
    st = as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, rf);
    if (st != AS_ERR_HDF5) break;
    struct timespec pause = {0, 200000000};
    nanosleep(&pause, NULL);
  }
  return st;
}

static void print_counts(const char *what, const as_enum_table *tab, const uint64_t *n) {
  printf("%s:", what);
  int first = 1;
  for (int v = 0; v < tab->count; v++) {
    if (!n[v]) continue;
    printf("%s %s %llu", first ? "" : ",", tab->labels[v], (unsigned long long)n[v]);
    first = 0;
  }
  printf("%s\n", first ? " none" : "");
}

/* Lists the first failed trials with their messages (reads /trials in blocks). */
static as_status print_failures(as_results *rf, uint64_t n_failed) {
  as_status st = AS_OK;
  enum { BLOCK = 4096 };
  as_record *buf = NULL;
  printf("failures: %llu\n", (unsigned long long)n_failed);
  if (!n_failed) return AS_OK;
  buf = malloc(BLOCK * sizeof *buf);
  AS_CHECK_ALLOC(buf);
  uint64_t n = as_results_n_trials(rf), shown = 0;
  for (uint64_t b = 0; b < n && shown < MAX_FAILURES_SHOWN; b += BLOCK) {
    size_t k = n - b < BLOCK ? (size_t)(n - b) : BLOCK;
    AS_TRY(as_results_read_records(rf, b, k, buf));
    for (size_t i = 0; i < k && shown < MAX_FAILURES_SHOWN; i++) {
      if (buf[i].outcome != AS_OUT_FAILED && buf[i].verdict != AS_VERDICT_FAILED) continue;
      printf("  trial %llu (d %d, n %d): %.*s\n", (unsigned long long)(b + i), buf[i].d, buf[i].n,
             AS_RECORD_MSG, buf[i].message[0] ? buf[i].message : "(no message)");
      shown++;
    }
  }
  if (n_failed > shown) printf("  ... and %llu more\n", (unsigned long long)(n_failed - shown));
cleanup:
  free(buf);
  return st;
}

int as_cmd_status(int argc, char **argv) {
  as_status st = AS_OK;
  as_results *rf = NULL;
  as_results_segment *segs = NULL;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1] != '\0')
      return as_cli_usage_error("status", "unknown option '%s'", argv[i]);
    if (path) return as_cli_usage_error("status", "one results file only ('%s')", argv[i]);
    path = argv[i];
  }
  if (!path) return as_cli_usage_error("status", "missing the results file");
  as_h5_quiet();
  AS_TRY(open_with_retry(path, &rf));

  char tool[64] = "?", git[64] = "?", name[512] = "", sha[80] = "", start[40] = "", end[40] = "";
  uint64_t seed = 0;
  as_results_attr_string(rf, "tool_version", tool, sizeof tool);
  as_results_attr_string(rf, "git_revision", git, sizeof git);
  as_results_attr_string(rf, "spec_name", name, sizeof name);
  as_results_attr_string(rf, "spec_sha256", sha, sizeof sha);
  as_results_attr_string(rf, "start_time", start, sizeof start);
  as_results_attr_string(rf, "end_time", end, sizeof end);
  as_results_attr_u64(rf, "master_seed", &seed);
  as_error_clear(); /* a missing descriptive attribute is not a reason to fail */

  as_results_counts c;
  AS_TRY(as_results_count(rf, &c, NULL));
  size_t nseg = 0;
  AS_TRY(as_results_segments(rf, NULL, 0, &nseg));
  if (nseg) {
    segs = calloc(nseg, sizeof *segs);
    AS_CHECK_ALLOC(segs);
    AS_TRY(as_results_segments(rf, segs, nseg, &nseg));
  }
  int held = 0;
  long pid = -1;
  char host[256] = "";
  {
    /* The lock of the file itself: a symlink names its target's set (outset.h). */
    char real[AS_OUTSET_PATH_MAX];
    AS_TRY(as_outset_resolve(path, real, sizeof real));
    AS_TRY(as_outset_probe(real, &held, &pid, host, sizeof host));
  }

  printf("results: %s\n", path);
  printf("written by: attnsweep %s (git %s)\n", tool, git);
  printf("spec: %s (sha256 %.16s...), seed %llu\n", name[0] ? name : "(built-in)",
         sha[0] ? sha : "?", (unsigned long long)seed);
  printf("started: %s, last closed: %s\n", start[0] ? start : "?", end[0] ? end : "never");
  double pct = c.total ? 100.0 * (double)c.done / (double)c.total : 0.0;
  printf("trials: %llu / %llu done (%.1f%%)\n", (unsigned long long)c.done,
         (unsigned long long)c.total, pct);
  const uint64_t n_bad = c.outcome[AS_OUT_FAILED] + c.outcome[AS_OUT_NONFINITE];
  if (c.done == c.total && n_bad)
    printf("state: complete, but %llu trial(s) failed or non-finite (run exits %d; rerun them: "
           "attnsweep run -o %s --resume --retry-failed)\n",
           (unsigned long long)n_bad, AS_EXIT_TRIALS_FAILED, path);
  else if (c.done == c.total)
    printf("state: complete\n");
  else if (held)
    printf("state: running (pid %ld on host %s)\n", pid, host[0] ? host : "?");
  else if (name[0] && access(name, R_OK) == 0)
    printf("state: stopped, %llu trial(s) left (resume: attnsweep run %s -o %s --resume)\n",
           (unsigned long long)(c.total - c.done), name, path);
  else
    printf("state: stopped, %llu trial(s) left (resume: attnsweep run -o %s --resume)\n",
           (unsigned long long)(c.total - c.done), path);
  print_counts("outcomes", &as_outcome_table, c.outcome);
  print_counts("verdicts", &as_verdict_table, c.verdict);
  uint64_t failed = c.outcome[AS_OUT_FAILED];
  AS_TRY(print_failures(rf, failed));
  printf("segments: %zu\n", nseg);
  for (size_t i = 0; i < nseg; i++) {
    if (nseg > MAX_SEGMENTS_SHOWN && i == MAX_SEGMENTS_SHOWN / 2) {
      printf("  ...\n");
      i = nseg - MAX_SEGMENTS_SHOWN / 2;
    }
    const as_results_segment *s = &segs[i];
    if (s->end[0])
      printf("  #%d job %s restart %d, %d ranks, %s -> %s, %llu done at end\n", s->segment,
             s->job_id, s->restart, s->ranks, s->start, s->end, (unsigned long long)s->trials_done);
    else
      printf("  #%d job %s restart %d, %d ranks, %s -> (%s)\n", s->segment, s->job_id, s->restart,
             s->ranks, s->start,
             i + 1 == nseg && held ? "running" : "did not close: killed or running");
  }
cleanup:
  free(segs);
  as_results_close(&rf);
  if (st != AS_OK) return as_cli_report("status", st);
  return 0;
}
