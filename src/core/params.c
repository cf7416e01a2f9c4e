/* params.c: the run-time view of the key table (params.h). */
#include "attnsweep/params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attnsweep/trial.h"

/* One predicate per key: the table's `applies` column. */
#define AS_X_APPLIES(C, key, KIND, etab, lo, hi, flags, dflt, slot, RKIND, rname, applies, doc) \
  static int applies_##key(const as_trial *t) {                                                 \
    (void)t;                                                                                    \
    return (applies) ? 1 : 0;                                                                   \
  }
AS_PARAM_LIST(AS_X_APPLIES)
#undef AS_X_APPLIES

const as_param as_params[AS_PARAM_COUNT] = {
#define AS_X_ENTRY(C, key, KIND, etab, lo, hi, flags, dflt, slot, RKIND, rname, applies, doc) \
  {#key,   AS_PK_##KIND, etab,          lo, hi, flags, offsetof(as_trial, slot),              \
   #RKIND, #rname,       applies_##key, doc},
    AS_PARAM_LIST(AS_X_ENTRY)
#undef AS_X_ENTRY
};

const as_param *as_param_find(const char *key) {
  for (int i = 0; i < AS_PARAM_COUNT; i++)
    if (strcmp(as_params[i].key, key) == 0) return &as_params[i];
  return NULL;
}

void as_param_default_text(const as_param *p, char *buf, size_t len) {
  as_trial t;
  as_trial_defaults(&t);
  const char *slot = (const char *)&t + p->offset;
  double x;
  int v;
  switch (p->kind) {
  case AS_PK_NUM:
    memcpy(&x, slot, sizeof x);
    if (isnan(x))
      snprintf(buf, len, ".nan");
    else
      snprintf(buf, len, "%g", x);
    break;
  case AS_PK_INT:
    memcpy(&v, slot, sizeof v);
    snprintf(buf, len, "%d", v);
    break;
  case AS_PK_I64: {
    int64_t w;
    memcpy(&w, slot, sizeof w);
    snprintf(buf, len, "%lld", (long long)w);
    break;
  }
  case AS_PK_BOOL:
    snprintf(buf, len, "%s", *(const _Bool *)(const void *)slot ? "true" : "false");
    break;
  case AS_PK_ENUM:
    memcpy(&v, slot, sizeof v);
    snprintf(buf, len, "%s", as_enum_label(p->etab, v));
    break;
  default:
    snprintf(buf, len, "%s", "");
    break;
  }
}

static void num_text(double x, int integer, char *buf, size_t len) {
  if (integer)
    snprintf(buf, len, "%.0f", x);
  else
    snprintf(buf, len, "%g", x);
}

void as_param_range_text(const as_param *p, char *buf, size_t len) {
  char lo[32], hi[32];
  int integer = p->kind == AS_PK_INT || p->kind == AS_PK_I64;
  switch (p->kind) {
  case AS_PK_NUM:
  case AS_PK_INT:
  case AS_PK_I64:
    num_text(p->lo, integer, lo, sizeof lo);
    num_text(p->hi, integer, hi, sizeof hi);
    if (p->lo <= -AS_BIG && p->hi >= AS_BIG)
      snprintf(buf, len, "%s%s", integer ? "integer" : "number",
               p->flags & AS_PF_NAN_OK ? " or .nan" : "");
    else if (p->hi >= AS_BIG)
      snprintf(buf, len, "%s %s%s", p->flags & AS_PF_LO_OPEN ? ">" : ">=", lo,
               p->flags & AS_PF_INF_OK ? " or .inf" : "");
    else if (integer && !(p->flags & AS_PF_LO_OPEN))
      snprintf(buf, len, "%s..%s", lo, hi);
    else
      snprintf(buf, len, "%s%s, %s]", p->flags & AS_PF_LO_OPEN ? "(" : "[", lo, hi);
    break;
  case AS_PK_BOOL:
    snprintf(buf, len, "true, false");
    break;
  case AS_PK_ENUM: {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->etab->count && used + 1 < len; i++) {
      int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", p->etab->labels[i]);
      if (w < 0) break;
      used += (size_t)w;
    }
    break;
  }
  case AS_PK_TEXT:
    snprintf(buf, len, "string");
    break;
  case AS_PK_MAT:
    snprintf(buf, len, "matrix");
    break;
  case AS_PK_GROUP:
    snprintf(buf, len, "mapping or label");
    break;
  }
}
