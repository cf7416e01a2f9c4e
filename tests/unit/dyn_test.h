/* dyn_test.h: integration settings shared by the dynamics tests. */
#ifndef AS_DYN_TEST_H
#define AS_DYN_TEST_H

#include <string.h>

#include "attnsweep/trial.h"

/* Settings for method m in variables v to horizon T with step dt: no error control (rtol =
 * atol = 0: dopri5 takes fixed steps dt), no early stop, a step limit no test reaches. */
static inline as_integ_spec dyn_test_spec(as_method m, as_vars v, double T, double dt) {
  as_integ_spec s;
  memset(&s, 0, sizeof s);
  s.method = m;
  s.vars = v;
  s.T = T;
  s.dt = dt;
  s.max_steps = 10000000;
  return s;
}

#endif
