/* cmd_run.c: attnsweep run (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_run(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("run");
}
