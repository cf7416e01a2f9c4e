/* cmd_merge.c: attnsweep merge OUT.h5 SHARD... — the shard files of one sweep (job array
 * tasks, `run --shard I/N`) joined into the results file a single job would write (merge.h).
 * One process does it; under mpiexec the other ranks only wait for its exit code. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/merge.h"
#include "attnsweep/signals.h"
#include "cli.h"

/* Every option of `attnsweep merge`, once (values into as_merge_opts). */
static const as_opt merge_opts[] = {
    AS_OPT_FLAG("partial", 0, as_merge_opts, partial,
                "merge the shards that exist; the other rows stay pending"),
    AS_OPT_FLAG("force", 0, as_merge_opts, force, "replace an existing OUT.h5"),
    AS_OPT_FLAG("allow-mixed-builds", 0, as_merge_opts, allow_mixed_builds,
                "merge shards written by different builds (versions, git revision, BLAS); "
                "merged_from then records each input's build"),
};
const as_optset as_opts_merge = AS_OPTSET(merge_opts, "OUT.h5 SHARD...");

int as_cmd_merge(int argc, char **argv) {
  as_merge_opts opts = {0, 0, NULL, 0};
  const char *out = NULL;
  const char **inputs = calloc((size_t)argc, sizeof *inputs);
  int n = 0, rank = 0, code = 0, npos = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!inputs) {
    fprintf(stderr, "attnsweep merge: out of memory\n");
    return 3;
  }
  if (as_opts_parse("merge", &as_opts_merge, argc, argv, &opts, rank == 0, &npos, &code)) {
    free(inputs);
    return code;
  }
  if (npos >= 1) out = argv[1];
  for (int i = 2; i <= npos; i++) inputs[n++] = argv[i];
  if (code == 0 && (!out || n == 0))
    code = rank == 0 ? as_cli_usage_error("merge", "needs OUT.h5 and at least one shard file") : 2;
  if (code == 0 && rank == 0) {
    as_h5_quiet();
    /* SIGTERM (a job's time limit), SIGINT: the merge stops between blocks, leaving an
     * existing OUT.h5 untouched and no partial file (exit 99). */
    as_status sst = as_signals_install();
    if (sst != AS_OK) as_error_clear();
    opts.stop = as_signals_flag();
    as_merge_report rep;
    const double t0 = MPI_Wtime();
    as_status st = as_merge_run(out, inputs, n, &opts, &rep);
    const double secs = MPI_Wtime() - t0;
    as_signals_restore();
    if (st != AS_OK) {
      code = as_cli_report("merge", st);
    } else {
      fprintf(stderr,
              "attnsweep merge: %s: %llu of %llu trials from %u file%s%s%s (%llu rows checked, "
              "%.1f s, %.0f rows/s)\n",
              out, (unsigned long long)rep.done, (unsigned long long)rep.n_trials, rep.inputs,
              rep.inputs == 1 ? "" : "s", rep.overlaps ? " (rows found twice were identical)" : "",
              rep.done == rep.n_trials ? "; the sweep is complete" : "",
              (unsigned long long)rep.rows_checked, secs,
              secs > 0 ? (double)rep.n_trials / secs : 0.0);
      if (rep.unverified)
        fprintf(stderr,
                "attnsweep merge: warning: %d input%s without checksums (written by an older "
                "attnsweep): not verified\n",
                rep.unverified, rep.unverified == 1 ? "" : "s");
      if (rep.missing)
        fprintf(stderr, "attnsweep merge: --partial: missing %s; their rows are pending\n",
                rep.missing_names);
      if (rep.unfinished)
        fprintf(stderr,
                "attnsweep merge: --partial: %u shard file%s unfinished; their pending rows are "
                "pending here too\n",
                rep.unfinished, rep.unfinished == 1 ? " was" : "s were");
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(inputs);
  return code;
}
