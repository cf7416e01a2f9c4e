/* cmd_report.c: attnsweep report FILE... -o report.html: hands over to
 * analysis/attnsweep_report.py (as_cli_exec_script of cmd_summarize.c), which writes one
 * self-contained HTML page from the files with the summarize machinery (docs/analysis.md,
 * "One HTML page: attnsweep report"). As summarize, the checksums of every row and bulk slab of
 * each results file are verified here first: damaged rows are never reported (issue 36); a
 * file that does not open as results is left to the script, which says why (exit 2 or 3). */
#include <string.h>

#include "attnsweep/outset.h"
#include "attnsweep/results.h"
#include "cli.h"

/* Whether argv[i] is an option of the script that takes the next argument as its value (also
 * as a unique prefix: --out, --tri). */
static int takes_value(const char *a) {
  static const char *const valued[] = {"output", "bins", "trials", "title"};
  if (strcmp(a, "-o") == 0) return 1;
  if (strncmp(a, "--", 2) != 0 || !a[2] || strchr(a, '=')) return 0;
  for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
    if (strncmp(valued[k], a + 2, strlen(a + 2)) == 0) return 1;
  return 0;
}

int as_cmd_report(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (takes_value(a)) {
      i++;
      continue;
    }
    if (a[0] == '-') continue;
    as_results *rf = NULL;
    if (as_results_open(MPI_COMM_NULL, a, AS_RESULTS_READ, &rf) == AS_OK) {
      as_status st = as_outset_refuse_damage(rf, a, 0, as_results_n_trials(rf));
      as_results_close(&rf);
      if (st != AS_OK) return as_cli_report("report", st);
    }
    as_error_clear();
  }
  return as_cli_exec_script("report", "attnsweep_report.py", argc, argv);
}
