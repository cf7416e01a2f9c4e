/* cmd_summarize.c: attnsweep summarize (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_summarize(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("summarize");
}
