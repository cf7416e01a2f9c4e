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

int as_cmd_repair(int argc, char **argv) {
  const char *path = NULL, *spec = NULL;
  int dry_run = 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--spec") == 0) {
      if (i + 1 >= argc) return rank == 0 ? as_cli_usage_error("repair", "--spec needs a file") : 2;
      spec = argv[++i];
    } else if (strcmp(a, "--dry-run") == 0 || strcmp(a, "-n") == 0) {
      dry_run = 1;
    } else if (a[0] == '-' && a[1] != '\0') {
      return rank == 0 ? as_cli_usage_error("repair", "unknown option '%s'", a) : 2;
    } else if (!path) {
      path = a;
    } else {
      return rank == 0 ? as_cli_usage_error("repair", "more than one results file") : 2;
    }
  }
  if (!path) return rank == 0 ? as_cli_usage_error("repair", "missing the results file") : 2;

  int code = 0;
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
