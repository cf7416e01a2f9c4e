/* trial.c: defaults of a trial (the `dflt` column of the key table) and matrix hashes. */
#include "attnsweep/trial.h"

#include <math.h>
#include <string.h>

#include "attnsweep/params.h"

/* One default assignment per key kind; TEXT, MAT and GROUP have none (no value). */
#define AS_DEFAULT_NUM(slot, dflt) t->slot = (dflt);
#define AS_DEFAULT_INT(slot, dflt) t->slot = (dflt);
#define AS_DEFAULT_I64(slot, dflt) t->slot = (dflt);
#define AS_DEFAULT_BOOL(slot, dflt) t->slot = (dflt) != 0;
#define AS_DEFAULT_ENUM(slot, dflt) t->slot = (dflt);
#define AS_DEFAULT_TEXT(slot, dflt) t->slot.id = -1;
#define AS_DEFAULT_MAT(slot, dflt)
#define AS_DEFAULT_GROUP(slot, dflt)

void as_trial_defaults(as_trial *t) {
  memset(t, 0, sizeof *t);
  t->case_name = "default";
#define AS_X_DEFAULT(C, key, KIND, etab, lo, hi, flags, dflt, slot, ...) \
  AS_DEFAULT_##KIND(slot, dflt)
  AS_PARAM_LIST(AS_X_DEFAULT)
#undef AS_X_DEFAULT
}

uint64_t as_matref_hash(const double *data, int rows, int cols) {
  /* FNV-1a over (rows, cols, entries as little-endian bytes), then a 64-bit finaliser
   * (splitmix64) so that nearby matrices spread over the whole range. */
  uint64_t h = 1469598103934665603ull;
  const uint64_t prime = 1099511628211ull;
  uint64_t head[2] = {(uint64_t)(uint32_t)rows, (uint64_t)(uint32_t)cols};
  for (int w = 0; w < 2; w++)
    for (int b = 0; b < 8; b++) h = (h ^ ((head[w] >> (8 * b)) & 0xff)) * prime;
  size_t n = (size_t)(rows > 0 ? rows : 0) * (size_t)(cols > 0 ? cols : 0);
  for (size_t i = 0; data && i < n; i++) {
    uint64_t u;
    double x = data[i] == 0.0 ? 0.0 : data[i]; /* -0 and 0 are the same value */
    memcpy(&u, &x, sizeof u);
    for (int b = 0; b < 8; b++) h = (h ^ ((u >> (8 * b)) & 0xff)) * prime;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h ? h : 1;
}

int as_attn_is_base(const as_attn_spec *am, int hardmax) {
  return !hardmax && am->attention == AS_ATTN_SOFTMAX && am->mask == AS_MASK_NONE &&
         am->norm == AS_NORM_NONE;
}

int as_attn_is_sinkhorn(as_attn a) {
  return a == AS_ATTN_SINKHORN || a == AS_ATTN_SINKHORN_FIXED;
}
