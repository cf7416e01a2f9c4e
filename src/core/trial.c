/* trial.c: defaults of a trial (the paper's geometry-figure settings). */
#include "attnsweep/trial.h"

#include <math.h>
#include <string.h>

void as_trial_defaults(as_trial *t) {
  memset(t, 0, sizeof *t);
  t->case_name = "default";
  t->d = 2;
  t->n = 20;
  t->triple.vfamily = AS_V_IDENTITY;
  t->triple.v_scale = 1.0;
  t->triple.v_lambda = 1.0;
  t->triple.v_dim_f = 1;
  t->triple.v_radius = 0.5;
  t->triple.v_gap = 0.5;
  t->triple.v_imag = 1.0;
  t->triple.mfamily = AS_M_IDENTITY;
  t->triple.m_scale = 1.0;
  t->triple.m_cond = 1.0;
  t->triple.margin = NAN;
  t->triple.file_mscale = 1.0;
  t->init.kind = AS_INIT_BOX;
  t->init.scale = 5.0;
  t->integ.method = AS_METHOD_RK4;
  t->integ.vars = AS_VARS_Z;
  t->integ.T = 5.0;
  t->integ.dt = 0.1;
  t->integ.rtol = 1e-6;
  t->integ.atol = 1e-9;
  t->integ.max_steps = 1000000;
  t->integ.settle_tol = 1e-8;
  t->integ.settle_window = 0.0;
}
