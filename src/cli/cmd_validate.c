/* cmd_validate.c: attnsweep validate SPEC...: every problem of each spec as SPEC:LINE:COL. */
#include <stdio.h>
#include <string.h>

#include "attnsweep/spec.h"
#include "cli.h"

int as_cmd_validate(int argc, char **argv) {
  int quiet = 0, nspecs = 0, worst = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0)
      quiet = 1;
    else if (argv[i][0] == '-' && argv[i][1] != '\0')
      return as_cli_usage_error("validate", "unknown option '%s'", argv[i]);
    else
      nspecs++;
  }
  if (nspecs == 0) return as_cli_usage_error("validate", "missing SPEC");
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1] != '\0') continue;
    const char *path = argv[i];
    as_spec_diags diags = {0, 0, NULL};
    as_spec *spec = NULL;
    as_error_clear();
    as_status st = as_spec_load(path, &diags, &spec);
    int code = 0;
    if (st == AS_OK) {
      if (!quiet)
        printf("%s: valid: %llu trials (%d case%s, %llu points x %u replicate%s), sha256 %.16s\n",
               path, (unsigned long long)as_spec_trial_count(spec), as_spec_case_count(spec),
               as_spec_case_count(spec) == 1 ? "" : "s",
               (unsigned long long)as_spec_point_count(spec), as_spec_replicates(spec),
               as_spec_replicates(spec) == 1 ? "" : "s", as_spec_sha256(spec));
    } else if (st == AS_ERR_SPEC && diags.count > 0) {
      for (int k = 0; k < diags.count; k++)
        fprintf(stderr, "%s:%d:%d: %s\n", path, diags.items[k].line, diags.items[k].col,
                diags.items[k].message);
      fprintf(stderr, "%s: %d problem%s\n", path, diags.count, diags.count == 1 ? "" : "s");
      code = 2;
    } else {
      code = as_cli_report("validate", st);
    }
    if (code > worst) worst = code;
    as_spec_diags_free(&diags);
    as_spec_destroy(&spec);
  }
  return worst;
}
