/* tableau.c: the Butcher tableaus of the explicit Runge-Kutta methods (tableau.h). Adding a
 * method is a label in AS_METHOD_LIST (enums.h) and one entry here; the stepper, the cost
 * model and the order tests pick it up. */
#include "attnsweep/tableau.h"

#include <stddef.h>

#define Q(p, q) \
  { (p), (q) }

static const as_tableau tableaus[] = {
    /* Forward Euler. */
    {.method = AS_METHOD_EULER, .stages = 1, .order = 1, .c = {Q(0, 1)}, .b = {Q(1, 1)}},
    /* The classic fourth-order method (Kutta 1901). */
    {.method = AS_METHOD_RK4,
     .stages = 4,
     .order = 4,
     .c = {Q(0, 1), Q(1, 2), Q(1, 2), Q(1, 1)},
     .a = {{Q(0, 1)}, {Q(1, 2)}, {Q(0, 1), Q(1, 2)}, {Q(0, 1), Q(0, 1), Q(1, 1)}},
     .b = {Q(1, 6), Q(1, 3), Q(1, 3), Q(1, 6)}},
    /* Dormand and Prince, "A family of embedded Runge-Kutta formulae", J. Comput. Appl. Math.
     * 6 (1980), the 5(4) pair RK5(4)7M: fifth-order solution, fourth-order error estimate. */
    {.method = AS_METHOD_DOPRI5,
     .stages = 7,
     .order = 5,
     .order_hat = 4,
     .fsal = 1,
     .c = {Q(0, 1), Q(1, 5), Q(3, 10), Q(4, 5), Q(8, 9), Q(1, 1), Q(1, 1)},
     .a = {{Q(0, 1)},
           {Q(1, 5)},
           {Q(3, 40), Q(9, 40)},
           {Q(44, 45), Q(-56, 15), Q(32, 9)},
           {Q(19372, 6561), Q(-25360, 2187), Q(64448, 6561), Q(-212, 729)},
           {Q(9017, 3168), Q(-355, 33), Q(46732, 5247), Q(49, 176), Q(-5103, 18656)},
           {Q(35, 384), Q(0, 1), Q(500, 1113), Q(125, 192), Q(-2187, 6784), Q(11, 84)}},
     .b = {Q(35, 384), Q(0, 1), Q(500, 1113), Q(125, 192), Q(-2187, 6784), Q(11, 84), Q(0, 1)},
     .bhat = {Q(5179, 57600), Q(0, 1), Q(7571, 16695), Q(393, 640), Q(-92097, 339200), Q(187, 2100),
              Q(1, 40)}},
};

const as_tableau *as_tableau_of(as_method m) {
  for (size_t i = 0; i < sizeof tableaus / sizeof tableaus[0]; i++)
    if (tableaus[i].method == m) return &tableaus[i];
  return NULL;
}

double as_rational_value(as_rational r) {
  return r.num == 0 ? 0.0 : (double)r.num / (double)r.den;
}

int as_method_stages(as_method m) {
  const as_tableau *tb = as_tableau_of(m);
  if (tb) return tb->stages - tb->fsal;
  return m == AS_METHOD_LAYERS ? 1 : 0;
}
