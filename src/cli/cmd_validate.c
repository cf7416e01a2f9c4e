/* cmd_validate.c: attnsweep validate (not implemented yet: says so, runs nothing). */
#include "cli.h"

int as_cmd_validate(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return as_cli_not_implemented("validate");
}
