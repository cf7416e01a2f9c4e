/* cmd_bench.c: attnsweep bench (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_bench(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("bench");
}
