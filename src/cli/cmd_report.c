/* cmd_report.c: attnsweep report FILE... -o report.html: hands over to
 * analysis/attnsweep_report.py (as_cli_exec_script of cmd_summarize.c), which writes one
 * self-contained HTML page from the files with the summarize machinery (docs/analysis.md,
 * "One HTML page: attnsweep report"). As summarize, the checksums of every row and bulk slab of
 * each results file are verified here first (as_cli_gate_files): damaged rows are never
 * reported (issue 36), and a file the gate cannot open or verify is refused, never passed on
 * (issue 49). */
#include "cli.h"

/* The options of analysis/attnsweep_report.py (its argparse declarations, in order). */
static const as_script_opt report_opts[] = {
    {"help", 'h', 'h'}, {"output", 'o', 1}, {"bins", 0, 1}, {"trials", 0, 1}, {"title", 0, 1},
};

int as_cmd_report(int argc, char **argv) {
  const int gated = as_cli_gate_files("report", report_opts,
                                      sizeof report_opts / sizeof report_opts[0], argc, argv);
  if (gated) return gated;
  return as_cli_exec_script("report", "attnsweep_report.py", argc, argv);
}
