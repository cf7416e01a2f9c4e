/* cmd_plan.c: attnsweep plan (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_plan(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("plan");
}
