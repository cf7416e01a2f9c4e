/* cmd_reproduce.c: attnsweep reproduce (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_reproduce(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("reproduce");
}
