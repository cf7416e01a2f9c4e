/* fuzz_spec.c: libFuzzer harness for the spec parser (tests/fuzz.sh builds and runs it under
 * ASan/UBSan). Any input must give either a spec or diagnostics: no crash, leak or hang. A
 * parsed spec is exercised further: trials (first, last, a few in between), axes, accessors. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnsweep/record.h"
#include "attnsweep/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  as_spec_diags dg = {0, 0, NULL};
  as_spec *s = NULL;
  as_error_clear();
  as_status st = as_spec_parse((const char *)data, size, "fuzz.yaml", &dg, &s);
  if (st == AS_OK) {
    uint64_t n = as_spec_trial_count(s);
    for (uint64_t k = 0; k < 64 && n > 0; k++) {
      as_trial t;
      uint64_t idx = k < 32 ? k % n : n - 1 - (k * 2654435761u) % n;
      if (as_spec_trial(s, idx, &t) == AS_OK) {
        as_record rec; /* the sweep coordinates of every key (params.h) */
        as_record_init(&rec, &t);
        volatile double w = rec.T + (double)rec.d;
        (void)w;
        /* A borrowed V that the trial reads (vfamily explicit) is readable and at least
         * d x d (heads stacked). Elsewhere it may be another case's matrix of another shape
         * that this trial ignores (a V beside a concat whose cases set their own vfamily and
         * d): reading it as d x d ran past it (found by this fuzzer). */
        if (t.triple.V.data && t.triple.vfamily == AS_V_EXPLICIT) {
          if ((size_t)t.triple.V.rows * (size_t)t.triple.V.cols < (size_t)t.d * (size_t)t.d)
            __builtin_trap(); /* the spec let through a V smaller than its trials' d */
          volatile double x = t.triple.V.data[(size_t)t.d * (size_t)t.d - 1];
          (void)x;
        }
      }
    }
    char buf[128];
    for (int i = 0; i < as_spec_axis_count(s); i++) {
      as_spec_axis ax;
      if (as_spec_axis_get(s, i, &ax) == AS_OK)
        as_spec_axis_value(s, i, ax.values - 1, buf, sizeof buf);
    }
    for (int c = 0; c < as_spec_case_count(s); c++) (void)as_spec_case_name(s, c);
    if (strlen(as_spec_sha256(s)) != 64) __builtin_trap();
  } else if (st == AS_ERR_SPEC && dg.count == 0) {
    __builtin_trap(); /* a rejected spec must say why */
  }
  as_spec_diags_free(&dg);
  as_spec_destroy(&s);
  return 0;
}
