/* cmd_repair.c: attnsweep repair (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_repair(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("repair");
}
