/* cmd_merge.c: attnsweep merge OUT.h5 SHARD... — the shard files of one sweep (job array
 * tasks, `run --shard I/N`) joined into the results file a single job would write (merge.h).
 * One process does it; under mpiexec the other ranks only wait for its exit code. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/merge.h"
#include "cli.h"

/* Every option of `attnsweep merge`, once (values into as_merge_opts). */
static const as_opt merge_opts[] = {
    AS_OPT_FLAG("partial", 0, as_merge_opts, partial,
                "merge the shards that exist; the other rows stay pending"),
    AS_OPT_FLAG("force", 0, as_merge_opts, force, "replace an existing OUT.h5"),
};
const as_optset as_opts_merge = AS_OPTSET(merge_opts, "OUT.h5 SHARD...");

int as_cmd_merge(int argc, char **argv) {
  as_merge_opts opts = {0, 0};
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
    as_merge_report rep;
    as_status st = as_merge_run(out, inputs, n, &opts, &rep);
    if (st != AS_OK) {
      code = as_cli_report("merge", st);
    } else {
      fprintf(stderr, "attnsweep merge: %s: %llu of %llu trials from %u file%s%s%s\n", out,
              (unsigned long long)rep.done, (unsigned long long)rep.n_trials, rep.inputs,
              rep.inputs == 1 ? "" : "s", rep.overlaps ? " (rows found twice were identical)" : "",
              rep.done == rep.n_trials ? "; the sweep is complete" : "");
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
