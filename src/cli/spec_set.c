/* spec_set.c: `--set KEY=VALUE` for run, validate and plan (cli.h, override.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/iocheck.h"
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
  as_status st = AS_OK;
  char *t = NULL;
  size_t tl = 0;
  as_spec *probe = NULL;
  as_spec_diags d = {0, 0, NULL};
  *printed = 0;
  if (!sets || sets->n == 0) return as_spec_parse(text, len, name, diags, out);
  /* The spec itself first: its own problems are reported as usual. */
  AS_TRY(as_spec_parse(text, len, name, diags, &probe));
  as_spec_destroy(&probe);
  /* Then the overrides one by one: the first that makes it fail is named. */
  for (int k = 1; k <= sets->n; k++) {
    free(t);
    t = NULL;
    AS_TRY(as_override_apply(text, len, sets->v, k, &t, &tl));
    as_spec_diags_free(&d);
    as_status pst = as_spec_parse(t, tl, name, &d, k == sets->n ? out : &probe);
    as_spec_destroy(&probe);
    if (pst == AS_OK) continue;
    if (pst != AS_ERR_SPEC || d.count == 0) AS_TRY(pst);
    as_error_clear();
    if (loud) {
      for (int i = 0; i < d.count; i++)
        fprintf(stderr, "attnsweep %s: --set %s: %s\n", cmd, sets->v[k - 1], d.items[i].message);
    }
    *printed = 1;
    st = AS_ERR_ARG;
    goto cleanup;
  }
cleanup:
  as_spec_destroy(&probe);
  as_spec_diags_free(&d);
  free(t);
  return st;
}
