/* attnsweep/tableau.h: the explicit Runge-Kutta methods as data (Butcher tableaus).
 *
 * A method with s stages advances y' = f(t, y) by one step h from (t, y):
 *   k_i  = f(t + c_i h, y + h sum_{j<i} a_ij k_j),     i = 0 .. s-1
 *   y+   = y + h sum_i b_i k_i                         (order `order`)
 *   y^   = y + h sum_i bhat_i k_i                      (embedded solution, order `order_hat`)
 * and y+ - y^ = h sum_i (b_i - bhat_i) k_i estimates the local error (step control).
 * fsal ("first same as last"): the last row of a is b and c_{s-1} = 1, so y+ is the state of
 * the last stage and k_{s-1} = f(t + h, y+) is the next step's k_0; a step then costs s - 1
 * new evaluations of f (the first step one more).
 *
 * Coefficients are exact rationals, so the order conditions can be checked exactly
 * (tests/unit/test_tableau.c) and derived weights such as b - bhat are rounded only once.
 * The one stepper of core/dynamics.c runs every tableau; `method: layers` is a discrete map
 * (a residual network), not a Runge-Kutta method, and has no tableau.
 * Everything here is constant data: nothing allocates, nothing is collective.
 */
#ifndef ATTNSWEEP_TABLEAU_H
#define ATTNSWEEP_TABLEAU_H

#include <stdint.h>

#include "attnsweep/enums.h"

/* Most stages of any tableau (dopri5: 7). Workspaces hold this many stage derivatives. */
#define AS_RK_MAX_STAGES 7

/* num / den, den > 0. An entry left out of an initialiser ({0, 0}) reads as 0. */
typedef struct as_rational {
  int32_t num, den;
} as_rational;

typedef struct as_tableau {
  as_method method; /* the label it runs (enums.h) */
  int stages;       /* s, 1 .. AS_RK_MAX_STAGES */
  int order;        /* order of y+ (b) */
  int order_hat;    /* order of the embedded y^ (bhat); 0: no embedded solution (bhat unused) */
  int fsal;         /* 1: first same as last (see above) */
  as_rational c[AS_RK_MAX_STAGES];                   /* nodes, c_0 = 0 */
  as_rational a[AS_RK_MAX_STAGES][AS_RK_MAX_STAGES]; /* strictly lower triangular */
  as_rational b[AS_RK_MAX_STAGES];                   /* weights of y+ */
  as_rational bhat[AS_RK_MAX_STAGES];                /* weights of y^ */
} as_tableau;

/* The tableau of method m; NULL for a method that is not a Runge-Kutta method (layers) or a
 * value outside the list. The pointer is to static data. */
const as_tableau *as_tableau_of(as_method m);

/* The value of r as the double nearest to it (num and den are exact doubles, so one
 * correctly rounded division); 0 for an entry left out. */
double as_rational_value(as_rational r);

/* Evaluations of the right-hand side (attention) per step of method m, the figure the cost
 * model uses: stages - fsal for a tableau (rk4 4, dopri5 6, euler 1), 1 for layers, 0 for a
 * value outside the list. */
int as_method_stages(as_method m);

#endif /* ATTNSWEEP_TABLEAU_H */
