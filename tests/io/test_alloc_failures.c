/* Allocation-failure loops (docs/architecture.md section 5): for N = 1, 2, ... the N-th
 * allocation fails; every constructor must then return AS_ERR_NOMEM (or succeed, once N is past
 * its allocations), leave *out untouched, and leak nothing. Also the spec parser (libyaml
 * allocates through the same malloc): never a crash, and no leak whatever it returns.
 *
 * malloc, calloc, realloc and free are interposed for the whole process (glibc's __libc_*
 * underneath). This test is not part of the sanitizer build (ASan owns the allocator there). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/expm.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/spec.h"
#include "attnsweep/spectral.h"
#include "attnsweep/triple.h"

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);

static long fail_at = 0; /* 0: never; else the allocation number that fails */
static long count = 0;   /* allocations attempted while armed */
static long live = 0;    /* allocations minus frees while armed */
static int armed = 0;

static int should_fail(void) {
  if (!armed) return 0;
  count++;
  return fail_at > 0 && count == fail_at;
}

void *malloc(size_t n) {
  if (should_fail()) return NULL;
  void *p = __libc_malloc(n);
  if (armed && p) live++;
  return p;
}
void *calloc(size_t a, size_t b) {
  if (should_fail()) return NULL;
  void *p = __libc_calloc(a, b);
  if (armed && p) live++;
  return p;
}
void *realloc(void *q, size_t n) {
  if (should_fail()) return NULL;
  void *p = __libc_realloc(q, n);
  if (armed && p && !q) live++;
  return p;
}
void free(void *p) {
  if (armed && p) live--;
  __libc_free(p);
}

static void arm(long n) {
  fail_at = n;
  count = 0;
  live = 0;
  armed = 1;
}
static void disarm(void) {
  armed = 0;
}

/* Runs make() with the N-th allocation failing, for N = 1 .. until it succeeds. */
typedef as_status (*make_fn)(void **obj);
typedef void (*drop_fn)(void **obj);

static void loop(const char *name, make_fn make, drop_fn drop) {
  long n;
  int failures = 0;
  for (n = 1; n < 10000; n++) {
    void *obj = (void *)0x1; /* must stay untouched on failure */
    arm(n);
    as_status st = make(&obj);
    if (st == AS_OK) drop(&obj);
    disarm();
    as_error_clear();
    if (st == AS_OK) break;
    failures++;
    AS_EXPECT(st == AS_ERR_NOMEM, "%s: allocation %ld failing gave %s", name, n,
              as_status_name(st));
    AS_EXPECT(obj == (void *)0x1, "%s: allocation %ld failing: out was set", name, n);
    AS_EXPECT(live == 0, "%s: allocation %ld failing: %ld blocks leaked", name, n, live);
  }
  AS_EXPECT(n < 10000 && failures >= 1, "%s: never succeeded (%d failures)", name, failures);
  printf("%s: %d failing allocations, each a clean AS_ERR_NOMEM without leak\n", name, failures);
}

static as_status make_triple(void **o) {
  return as_triple_create(5, 3, (as_triple **)o);
}
static void drop_triple(void **o) {
  as_triple_destroy((as_triple **)o);
}
static as_status make_spectral(void **o) {
  return as_spectral_create(6, (as_spectral **)o);
}
static void drop_spectral(void **o) {
  as_spectral_destroy((as_spectral **)o);
}
static as_status make_expm(void **o) {
  return as_expm_create(6, (as_expm_plan **)o);
}
static void drop_expm(void **o) {
  as_expm_destroy((as_expm_plan **)o);
}
static as_status make_dyn(void **o) {
  return as_dyn_create(20, 3, (as_dyn **)o);
}
static void drop_dyn(void **o) {
  as_dyn_destroy((as_dyn **)o);
}
static as_status make_pipeline(void **o) {
  return as_pipeline_create(NULL, NULL, (as_pipeline **)o);
}
static void drop_pipeline(void **o) {
  as_pipeline_destroy((as_pipeline **)o);
}

static const char spec_text[] = "name: alloc\n"
                                "seed: 3\n"
                                "replicates: 2\n"
                                "sweep:\n"
                                "  concat:\n"
                                "    - {case: a, vfamily: identity, d: [2, 3], n: 10}\n"
                                "    - {case: b, V: [[1, 0.5], [0, 0.25]], n: [4, 8], T: 2}\n";

static as_status make_spec(void **o) {
  as_spec_diags diags = {0, 0, NULL};
  as_status st =
      as_spec_parse(spec_text, sizeof spec_text - 1, "alloc.yaml", &diags, (as_spec **)o);
  as_spec_diags_free(&diags);
  return st;
}
static void drop_spec(void **o) {
  as_spec_destroy((as_spec **)o);
}

int main(void) {
  loop("as_triple_create", make_triple, drop_triple);
  loop("as_spectral_create", make_spectral, drop_spectral);
  loop("as_expm_create", make_expm, drop_expm);
  loop("as_dyn_create", make_dyn, drop_dyn);
  loop("as_pipeline_create", make_pipeline, drop_pipeline);
  loop("as_spec_parse", make_spec, drop_spec);
  return as_test_finish("test_alloc_failures");
}
