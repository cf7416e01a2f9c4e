/* Bugs are not data, through the whole sweep (issue 13, point 6): the test hook of pipeline.h
 * (ATTNSWEEP_TEST_INTERNAL_ERROR) puts a real bug into one trial. With more than one rank the
 * coordinator only coordinates, so the bug is met on a worker. Checked on every rank:
 * as_sweep_run returns AS_ERR_INTERNAL (exit code 70) with the failing check's file:line, the
 * worker's rank and the trial in the error; the results file stays resumable (that trial
 * pending, nothing recorded as failed); a resume without the hook completes it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "as_test.h"
#include "attnsweep/par.h"
#include "attnsweep/results.h"
#include "attnsweep/spec.h"
#include "attnsweep/sweep.h"

static const char spec_text[] = "name: internal\n"
                                "seed: 3\n"
                                "replicates: 3\n"
                                "sweep: {vfamily: identity, mfamily: identity, d: [2, 3],\n"
                                "        n: [5, 9], T: 2}\n";
enum { BUG_TRIAL = 5, N_TRIALS = 12 };

/* Rows pending and failed, read by this process alone (rank 0). */
static void count_rows(const char *path, uint64_t *pending, uint64_t *failed, int *bug_pending) {
  as_results *rf = NULL;
  as_results_counts c;
  as_record r;
  *pending = *failed = UINT64_MAX;
  *bug_pending = 0;
  if (as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, &rf) != AS_OK) return;
  if (as_results_count(rf, &c, NULL) == AS_OK) {
    *pending = c.outcome[AS_OUT_PENDING];
    *failed = c.outcome[AS_OUT_FAILED];
  }
  if (as_results_read_records(rf, BUG_TRIAL, 1, &r) == AS_OK)
    *bug_pending = r.outcome == AS_OUT_PENDING;
  as_results_close(&rf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  as_par_setup(MPI_COMM_WORLD);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[256] = "";
  if (rank == 0) snprintf(path, sizeof path, "/tmp/as_sweep_internal_%ld.h5", (long)getpid());
  MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);

  as_spec *spec = NULL;
  AS_EXPECT(as_spec_parse(spec_text, strlen(spec_text), "internal.yaml", NULL, &spec) == AS_OK,
            "spec");
  AS_EXPECT(spec && as_spec_trial_count(spec) == N_TRIALS, "trials");
  as_sweep_opts o;
  as_sweep_opts_default(&o);
  o.progress = NULL;
  o.progress_interval = 0;
  o.flush_interval = 0;
  o.coordinator_runs = size > 1 ? 0 : -1; /* a worker meets the bug */

  char hook[32];
  snprintf(hook, sizeof hook, "%d", BUG_TRIAL);
  setenv("ATTNSWEEP_TEST_INTERNAL_ERROR", hook, 1);
  as_error_clear();
  as_sweep_result res;
  as_status st = as_sweep_run(MPI_COMM_WORLD, spec, path, &o, &res);
  AS_EXPECT(st == AS_ERR_INTERNAL && as_status_exit_code(st) == 70, "rank %d: status %s", rank,
            as_status_name(st));
  char buf[4 * AS_ERRMSG_MAX], where[64];
  as_error_format(buf, sizeof buf);
  snprintf(where, sizeof where, "[rank %d, trial %d]", size > 1 ? 1 : 0, BUG_TRIAL);
  if (size > 2) snprintf(where, sizeof where, ", trial %d]", BUG_TRIAL); /* any worker */
  AS_EXPECT(strstr(buf, "tokens.c:") && strstr(buf, "as_tokens_init") && strstr(buf, where) &&
                strstr(buf, "in trial 5 (case 'case0'"),
            "rank %d: error names file:line, the worker and the trial: %s", rank, buf);
  if (size > 1) AS_EXPECT(!strstr(buf, "[rank 0,"), "the worker's rank, not 0: %s", buf);
  if (rank == 0) printf("reported: %s\n", buf);
  as_error_clear();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    uint64_t pending, failed;
    int bug_pending;
    count_rows(path, &pending, &failed, &bug_pending);
    AS_EXPECT(bug_pending && pending >= 1 && pending <= N_TRIALS && failed == 0,
              "after the bug: trial %d pending (%d), %llu pending, %llu failed", BUG_TRIAL,
              bug_pending, (unsigned long long)pending, (unsigned long long)failed);
  }

  /* Fixed: the resume completes the sweep, nothing failed. */
  unsetenv("ATTNSWEEP_TEST_INTERNAL_ERROR");
  o.resume = 1;
  st = as_sweep_run(MPI_COMM_WORLD, spec, path, &o, &res);
  AS_EXPECT(st == AS_OK && res.failed == 0, "resume: %s, %llu failed", as_status_name(st),
            (unsigned long long)res.failed);
  as_error_clear();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    uint64_t pending, failed;
    int bug_pending;
    count_rows(path, &pending, &failed, &bug_pending);
    AS_EXPECT(pending == 0 && failed == 0, "resumed: %llu pending, %llu failed",
              (unsigned long long)pending, (unsigned long long)failed);
    char side[320];
    const char *suffix[] = {"", ".lock", ".spec"};
    for (int k = 0; k < 3; k++) {
      snprintf(side, sizeof side, "%s%s", path, suffix[k]);
      unlink(side);
    }
    for (int r = 0; r < size; r++) {
      snprintf(side, sizeof side, "%s.journal.%d", path, r);
      unlink(side);
    }
  }
  as_spec_destroy(&spec);
  int local = as_test_finish("test_sweep_internal"), any = 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
