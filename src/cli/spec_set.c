/* spec_set.c: `--set KEY=VALUE` for run, validate and plan (cli.h, override.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/override.h"
#include "attnsweep/spec.h"
#include "cli.h"

int as_cli_opt_set(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap) {
  as_cli_sets *s = (as_cli_sets *)(void *)((char *)dst + o->at);
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg) {
    snprintf(msg, cap, "needs KEY=VALUE (e.g. --set T=200 or --set 'n=[20,40]')");
    return -1;
  }
  if (s->n == (int)(sizeof s->v / sizeof s->v[0]) || s->n == AS_OVERRIDE_MAX) {
    snprintf(msg, cap, "can be given at most %d times", AS_OVERRIDE_MAX);
    return -1;
  }
  s->v[s->n++] = arg;
  return 0;
}

as_status as_cli_spec_parse(const char *cmd, const char *text, size_t len, const char *name,
                            const as_cli_sets *sets, int loud, as_spec_diags *diags, as_spec **out,
                            int *printed) {
  int blame = -1;
  *printed = 0;
  const int n = sets ? sets->n : 0;
  as_status st = as_override_parse(text, len, name, n ? sets->v : NULL, n, diags, &blame, out);
  /* The spec's own problems are the caller's to print (SPEC:LINE:COL); those an override
   * brought are named by the first --set that made the spec fail (positions in the edited
   * text would mislead). */
  if (st == AS_ERR_SPEC && blame >= 0 && diags && diags->count > 0) {
    as_error_clear();
    if (loud)
      for (int i = 0; i < diags->count; i++)
        fprintf(stderr, "attnsweep %s: --set %s: %s\n", cmd, sets->v[blame],
                diags->items[i].message);
    as_spec_diags_free(diags);
    *printed = 1;
    st = AS_ERR_ARG;
  }
  return st;
}
