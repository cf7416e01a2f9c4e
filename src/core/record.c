/* record.c: initialisation of a record from its trial. */
#include "attnsweep/record.h"

#include <math.h>
#include <string.h>

#include "attnsweep/trial.h"

/* F64 fields start as NaN ("not measured"); everything else as 0. */
#define AS_NAN_U64(name)
#define AS_NAN_I64(name)
#define AS_NAN_I32(name)
#define AS_NAN_F64(name) r->name = NAN;
#define AS_NAN_VFAMILY(name)
#define AS_NAN_MFAMILY(name)
#define AS_NAN_INIT(name)
#define AS_NAN_METHOD(name)
#define AS_NAN_VARS(name)
#define AS_NAN_EXPM(name)
#define AS_NAN_THEOREM(name)
#define AS_NAN_GEOM(name)
#define AS_NAN_VERDICT(name)
#define AS_NAN_OUTCOME(name)
#define AS_NAN_MSG(name)

void as_record_init(as_record *r, const as_trial *t) {
  memset(r, 0, sizeof *r); /* also zeroes padding, so records compare bytewise */
#define AS_X_NAN(kind, name, doc) AS_NAN_##kind(name)
  AS_RECORD_FIELDS(AS_X_NAN)
#undef AS_X_NAN
  r->outcome = AS_OUT_PENDING;
  r->verdict = AS_VERDICT_PENDING;
  if (!t) return;
  const as_triple_spec *tr = &t->triple;
  r->trial = t->index;
  r->case_id = (int32_t)t->case_id;
  r->replicate = (int32_t)t->replicate;
  r->d = t->d;
  r->n = t->n;
  r->vfamily = (int32_t)tr->vfamily;
  r->mfamily = (int32_t)tr->mfamily;
  r->init = (int32_t)t->init.kind;
  r->method = (int32_t)t->integ.method;
  r->vars = (int32_t)t->integ.vars;
  r->v_scale = tr->v_scale;
  r->v_kpos = tr->v_kpos;
  r->v_lambda = tr->v_lambda;
  r->v_dim_f = tr->v_dim_f;
  r->v_radius = tr->v_radius;
  r->v_gap = tr->v_gap;
  r->v_imag = tr->v_imag;
  r->m_scale = tr->m_scale;
  r->m_cond = tr->m_cond;
  r->m_rows = tr->m_rows;
  r->margin_target = tr->margin;
  r->eps = tr->eps;
  r->init_scale = t->init.scale;
  r->T = t->integ.T;
  r->dt = t->integ.dt;
}

void as_record_strip_timing(as_record *r) {
  r->wall_time = 0.0;
  r->rank = 0;
}
