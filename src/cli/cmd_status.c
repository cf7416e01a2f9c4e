/* cmd_status.c: attnsweep status (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_status(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("status");
}
