/* fuzz_set.c: libFuzzer harness for `--set KEY=VALUE` (override.h), built and run under
 * ASan/UBSan by tests/fuzz.sh. An input is the options, one per line, then a NUL byte, then
 * the spec text (no NUL: the options alone, on a small built-in spec). Any input must give a
 * spec, or diagnostics blamed on the spec or on one option, or a message naming an option: no
 * crash, leak or hang. A spec obtained with overrides is checked further: its text starts with
 * the header that records them (after a byte order mark), parses again to the same SHA-256,
 * and its trials resolve. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/override.h"
#include "attnsweep/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SETS 8

static const char base_spec[] = "name: f\n"
                                "seed: 1\n"
                                "defaults: {n: 4, T: 1, dt: 0.1}\n"
                                "sweep:\n"
                                "  concat:\n"
                                "    - {case: a, vfamily: identity, d: [2, 3]}\n"
                                "    - case: b\n"
                                "      vfamily: file\n"
                                "      mfamily: file\n"
                                "      file: m.h5\n"
                                "      init: {kind: file, file: t.h5, dataset: X}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  const size_t head = nul ? (size_t)(nul - data) : size;
  const char *spec = nul ? (const char *)nul + 1 : base_spec;
  const size_t slen = nul ? size - head - 1 : sizeof base_spec - 1;
  char *opts = malloc(head + 1);
  if (!opts) return 0;
  memcpy(opts, data, head);
  opts[head] = '\0';
  const char *sets[MAX_SETS];
  int n = 0;
  for (char *p = opts; n < MAX_SETS;) { /* one option per line (an empty line too) */
    char *eol = strchr(p, '\n');
    if (eol) *eol = '\0';
    sets[n++] = p;
    if (!eol) break;
    p = eol + 1;
  }
  as_spec_diags dg = {0, 0, NULL};
  as_spec *s = NULL;
  int blame = -2;
  as_error_clear();
  const as_status st = as_override_parse(spec, slen, "fuzz.yaml", sets, n, &dg, &blame, &s);
  if (st == AS_OK) {
    size_t len = 0;
    const char *text = as_spec_text(s, &len);
    const size_t bom = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    if (len < bom + 11 || memcmp(text + bom, "# attnsweep", 11) != 0)
      __builtin_trap(); /* the overrides are recorded in the text */
    as_spec_diags d2 = {0, 0, NULL};
    as_spec *again = NULL;
    if (as_spec_parse(text, len, "fuzz.yaml", &d2, &again) != AS_OK ||
        strcmp(as_spec_sha256(again), as_spec_sha256(s)) != 0)
      __builtin_trap(); /* the stored text is the spec that ran */
    as_spec_destroy(&again);
    as_spec_diags_free(&d2);
    const uint64_t trials = as_spec_trial_count(s);
    for (uint64_t k = 0; k < 8 && trials > 0; k++) {
      as_trial t;
      if (as_spec_trial(s, (k * 2654435761u) % trials, &t) != AS_OK) __builtin_trap();
    }
  } else if (st == AS_ERR_SPEC) {
    if (dg.count == 0 || blame < -1 || blame >= n) __builtin_trap(); /* says why, and whose */
  } else if (st == AS_ERR_ARG) {
    if (!as_error_get()->message[0]) __builtin_trap(); /* names the option */
  } else if (st != AS_ERR_NOMEM) {
    __builtin_trap();
  }
  as_spec_diags_free(&dg);
  as_spec_destroy(&s);
  free(opts);
  return 0;
}
