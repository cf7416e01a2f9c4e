/* record.c: initialisation of a record from its trial. */
#include "attnsweep/record.h"

#include <math.h>
#include <string.h>

#include "attnsweep/trial.h"

/* Fill values: F64 NaN ("not measured"), LABEL -1 ("-"), everything else 0. */
#define AS_FILL_U64(name)
#define AS_FILL_I64(name)
#define AS_FILL_I32(name)
#define AS_FILL_F64(name) r->name = NAN;
#define AS_FILL_HASH(name)
#define AS_FILL_LABEL(name) r->name = -1;
#define AS_FILL_EXPM(name)
#define AS_FILL_THEOREM(name)
#define AS_FILL_GEOM(name)
#define AS_FILL_VERDICT(name)
#define AS_FILL_REASON(name)
#define AS_FILL_OUTCOME(name)
#define AS_FILL_ENUM(name)
#define AS_FILL_MSG(name)

/* The value of a key in its record field, by the key's kind (KIND) and the field's (RKIND);
 * where the key does not apply the field keeps "not applicable" (NaN, -1, 0). */
#define AS_REC_NUM(rname, slot) r->rname = t->slot;
#define AS_REC_INT(rname, slot) r->rname = (int32_t)t->slot;
#define AS_REC_I64(rname, slot) r->rname = (int64_t)t->slot;
#define AS_REC_BOOL(rname, slot) r->rname = t->slot ? 1 : 0;
#define AS_REC_ENUM(rname, slot) r->rname = (int32_t)t->slot;
#define AS_REC_TEXT(rname, slot) r->rname = t->slot.id;
#define AS_REC_MAT(rname, slot) r->rname = t->slot.hash;
#define AS_REC_GROUP(rname, slot)
#define AS_NA_F64(rname) r->rname = NAN;
#define AS_NA_I32(rname) r->rname = -1;
#define AS_NA_I64(rname) r->rname = -1;
#define AS_NA_LABEL(rname) r->rname = -1;
#define AS_NA_HASH(rname) r->rname = 0;
#define AS_NA_NONE(rname)
#define AS_NA_ENUM(rname) r->rname = -1;

void as_record_init(as_record *r, const as_trial *t) {
  memset(r, 0, sizeof *r); /* also zeroes padding, so records compare bytewise */
#define AS_X_FILL(kind, name, doc) AS_FILL_##kind(name)
  AS_RECORD_FIELDS(AS_X_FILL)
#undef AS_X_FILL
  r->outcome = AS_OUT_PENDING;
  r->verdict = AS_VERDICT_PENDING;
  if (!t) return;
  r->trial = t->index;
  r->case_name = (int32_t)t->case_id;
  r->replicate = (int32_t)t->replicate;
#define AS_X_COORD(C, key, KIND, etab, lo, hi, flags, dflt, slot, RKIND, rname, app, doc) \
  if (as_params[AS_P_##key].applies(t)) {                                                 \
    AS_REC_##KIND(rname, slot)                                                            \
  } else {                                                                                \
    AS_NA_##RKIND(rname)                                                                  \
  }
  AS_PARAM_LIST(AS_X_COORD)
#undef AS_X_COORD
}

const as_enum_table *as_record_enum_table(const char *field) {
  for (int i = 0; field && i < AS_PARAM_COUNT; i++) {
    const as_param *p = &as_params[i];
    if (p->etab && strcmp(p->rkind, "ENUM") == 0 && strcmp(p->rname, field) == 0) return p->etab;
  }
  return NULL;
}

void as_record_strip_timing(as_record *r) {
  r->wall_time = 0.0;
  r->rank = 0;
}
