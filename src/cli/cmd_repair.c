/* cmd_repair.c: attnsweep repair OUT.h5 [--spec SPEC] [--dry-run]
 *
 * Puts every journaled record back into OUT.h5 after a hard kill, or rebuilds OUT.h5 from the
 * spec copy OUT.h5.spec and the journals when the file itself is unreadable (repair.h,
 * docs/robustness.md). Runs in one process: under mpiexec only rank 0 works, the others wait
 * and exit with its code. Exit 0 repaired (or nothing to do), 2 bad input (nothing to repair
 * from, no spec for a rebuild), 3 I/O failure or a run holds the file.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "attnsweep/repair.h"
#include "cli.h"

static void print_report(const char *path, const as_repair_report *r, int dry_run) {
  const char *verb = dry_run ? "would be " : "";
  printf("repair: %s%s\n", path, dry_run ? " (dry run: nothing written)" : "");
  if (r->rebuilt)
    printf("file: unreadable (%s)\n  -> %srebuilt from its spec copy and the journals%s\n",
           r->reason, verb, dry_run ? "" : "; the old file and journals were kept as *.damaged*");
  else
    printf("file: readable; journaled records merged into it\n");
  printf("journals: %llu file(s), %llu valid entries for %llu distinct trials, %llu damaged "
         "skipped, %llu torn bytes skipped, %llu outside the plan\n",
         (unsigned long long)r->journals, (unsigned long long)r->journal_entries,
         (unsigned long long)r->journaled, (unsigned long long)r->journal_bad,
         (unsigned long long)r->journal_torn_bytes, (unsigned long long)r->journal_outside);
  if (r->journal_damaged_headers)
    printf("journals with a damaged header: %llu (read entry by entry: only entries whose own "
           "checksum holds were used)\n",
           (unsigned long long)r->journal_damaged_headers);
  printf("rows: %llu restored from the journal, %llu corrected, %llu cleared (incomplete, not "
         "journaled), %llu kept without journal entry\n",
         (unsigned long long)r->restored, (unsigned long long)r->corrected,
         (unsigned long long)r->cleared, (unsigned long long)r->unjournaled);
  if (r->unverified)
    printf("checksums: none (a file written by an older attnsweep): rows not verified\n");
  else if (!r->rebuilt)
    printf("checksums: %llu damaged row(s): %llu %srestored from the journal, %llu %sreset to "
           "pending; %llu row(s) with damaged bulk data %sreset to pending\n",
           (unsigned long long)r->damaged, (unsigned long long)r->damaged_restored, verb,
           (unsigned long long)(r->damaged - r->damaged_restored), verb,
           (unsigned long long)r->damaged_bulk, verb);
  if (r->bulk_lost)
    printf("bulk data lost with the old file: %llu journaled trial(s) left pending (resume "
           "computes them again)\n",
           (unsigned long long)r->bulk_lost);
  printf("trials: %llu / %llu done %s\n", (unsigned long long)r->done,
         (unsigned long long)r->n_trials, dry_run ? "after the repair" : "now");
  if (r->done < r->n_trials)
    printf("next: attnsweep run SPEC -o %s --resume   (SPEC: the sweep's spec, also in %s.spec)\n",
           path, path);
}

/* The arguments of `attnsweep repair`; its options land here (repair_opts). */
typedef struct repair_args {
  const char *spec; /* --spec SPEC, NULL: OUT.h5.spec */
  int dry_run;      /* -n */
} repair_args;

/* Every option of `attnsweep repair`, once. */
static const as_opt repair_opts[] = {
    AS_OPT_TEXT("spec", 0, "SPEC", repair_args, spec,
                "the sweep's spec for a rebuild (default: the copy OUT.h5.spec)"),
    AS_OPT_FLAG("dry-run", 'n', repair_args, dry_run, "report what would be done; write nothing"),
};
const as_optset as_opts_repair = AS_OPTSET(repair_opts, "OUT.h5");

int as_cmd_repair(int argc, char **argv) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  repair_args args = {NULL, 0};
  int npos = 0, code = 0;
  if (as_opts_parse("repair", &as_opts_repair, argc, argv, &args, rank == 0, &npos, &code))
    return code;
  if (npos > 1) return rank == 0 ? as_cli_usage_error("repair", "more than one results file") : 2;
  if (npos == 0) return rank == 0 ? as_cli_usage_error("repair", "missing the results file") : 2;
  const char *path = argv[1], *spec = args.spec;
  const int dry_run = args.dry_run;

  if (rank == 0) {
    as_repair_report rep;
    as_status st = as_repair_run(path, spec, dry_run, &rep);
    if (st == AS_OK) {
      print_report(path, &rep, dry_run);
      fflush(stdout);
    } else {
      code = as_cli_report("repair", st);
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}
