/* attnsweep/near.h: how far a triple is from each theorem's hypotheses, and the nearest theorem
 * (docs/theory.md section 2.11). near.c. */
#ifndef ATTNSWEEP_NEAR_H
#define ATTNSWEEP_NEAR_H

#include "attnsweep/enums.h"
#include "attnsweep/spectral.h"
#include "attnsweep/status.h"
#include "attnsweep/theorem.h"
#include "attnsweep/triple.h"

/*
 * Hypothesis distances of a triple (docs/theory.md section 2.11), computed once per triple from
 * the triple and its spectral analysis, all relative (dimensionless). Sign convention: a value
 * > 0 is how far the hypothesis is missed; an equality hypothesis (V = cI, M = cI, M symmetric,
 * lambda_1 real) holds at 0 (set to exactly 0 when the flag of spectral.h holds, within its
 * tolerance); a strict one (positive definite, dominant, positive margin, radius on G below
 * lambda) holds at values < 0 (below -tol, the flag's tolerance, where the flag has one), is on
 * its boundary at 0, and < 0 measures the depth inside. NaN: not defined for this triple.
 *   v_identity        ||V - cI||_F / ||V||_F with c = max(tr V / d, 0) (the nearest cI, c >= 0)
 *   v_minus_identity  the same with c = min(tr V / d, 0)
 *   m_identity        ||M - cI||_F / ||M||_F with c = max(tr M / d, 0)
 *   m_symmetric       ||M - M^T||_F / ||M||_F                       (= m_asym)
 *   m_posdef          -m_min_sym_eig / ||M||_F                      (0 for M = 0)
 *   lead_real         |Im lambda_1| / |lambda_1|
 *   gap               (|lambda_2| - Re lambda_1) / |lambda_1|: < 0 exactly when lambda_1 is real,
 *                     positive, simple and strictly dominant (a complex lambda_1 has its
 *                     conjugate as lambda_2, so >= 0); d = 1: -sign(v)
 *   margin            -<Q phi_1, K phi_1> / ||M||_F (NaN when phi_1 is undetermined)
 *   paranormal        min over 2 <= f < d of max(spread_f, sep_f) with the eigenvalues sorted by
 *                     modulus: spread_f = max_{i<=f} |lambda_i - lambda_1| / |lambda_1| (the f
 *                     leading eigenvalues as one real lambda: V = lambda I on F), sep_f =
 *                     (|lambda_{f+1}| - Re lambda_1) / |lambda_1| (radius on G below lambda);
 *                     when spread_f is within tol the value is sep_f (< 0 inside) if the flag
 *                     PARANORMAL holds with dim_f = f, and max(sep_f, 0) otherwise (a defective
 *                     lambda_1). NaN for d < 3 (no 2 <= f < d). paranormal_f: the f chosen.
 * The distance of a theorem D_T = max(0, its hypotheses' distances), NaN ones left out; which
 * hypotheses a theorem has is the `near` column of the theorem table (theorem.h: the one
 * declaration; the results file states it, /trials attribute "near_hypotheses", and summarize
 * reads it).
 * A theorem can be read on the triple when its coordinates exist: good needs a finite l_1
 * (lambda_1 real and simple), paranormal needs the projector of the analysis onto an F of
 * dimension paranormal_f (sp->dim_f), d1 needs d = 1; identity and minus_identity always.
 * The nearest theorem (the table's precedence among its rows with near hypotheses: d1,
 * identity, minus_identity, paranormal, good):
 *   when a proved theorem H holds (sp->theorem): among the readable theorems that precede H
 *       and whose hypotheses do not hold, those with D_T < AS_NEAR_REACH; none: H itself, D = 0;
 *   otherwise: among the readable theorems with D_T < 1; none: AS_THM_NONE (D NaN);
 *   of the candidates, the first in precedence order with D_T <= AS_NEAR_SLACK * min D_T (the
 *       most specific of the near ones: V = I + eps N is near V = I and, in d = 3, about as
 *       near a paranormal V with dim F = 2; the polytope theorem is the one meant).
 * A relative distance of 1 is as far as a matrix can be from the ray {cI, c >= 0}.
 */
#define AS_NEAR_REACH 0.5
#define AS_NEAR_SLACK 2.0

/* The hypothesis distances (above), in record order: as_near field h, record field dist_h. */
#define AS_NEAR_HYPOTHESES(X) \
  X(v_identity)               \
  X(v_minus_identity)         \
  X(m_identity)               \
  X(m_symmetric)              \
  X(m_posdef)                 \
  X(lead_real)                \
  X(gap)                      \
  X(margin)                   \
  X(paranormal)

#define AS_X_NEAR_INDEX(h) AS_NEAR_I_##h,
enum { AS_NEAR_HYPOTHESES(AS_X_NEAR_INDEX) AS_NEAR_NHYP };
#undef AS_X_NEAR_INDEX
#define AS_NEAR_HYP(h) (1u << AS_NEAR_I_##h)

/* The name of hypothesis i (0 <= i < AS_NEAR_NHYP; NULL outside), as in as_near and, after
 * "dist_", in the record. Pure. */
const char *as_near_hypothesis_name(int i);

/* The hypotheses of theorem th (a mask of AS_NEAR_HYP bits; 0 for a theorem not in
 * the table's near column). Pure. */
unsigned as_near_theorem_hypotheses(as_theorem th);

#define AS_X_NEAR_FIELD(h) double h;
typedef struct as_near {
  AS_NEAR_HYPOTHESES(AS_X_NEAR_FIELD) /* hypothesis distances (above) */
  int paranormal_f;                   /* dim F of the paranormal distance (0: none) */
  as_theorem theorem;                 /* the nearest theorem */
  as_geom predicted;                  /* its prediction */
  double dist;                        /* its D_T (NaN for AS_THM_NONE) */
} as_near;
#undef AS_X_NEAR_FIELD

/* Hypothesis distances and the nearest theorem of triple tr with analysis sp (as_spectral_analyze
 * with tolerance tol, or the ScaLAPACK path; sp->theorem the theorem of the trial's model) among
 * the rows of model (theorem.h). A model without rows that have near hypotheses (every variant)
 * has its own theorem as the nearest, D = 0 (NaN for none). AS_ERR_ARG for NULL or mismatched
 * d. Not collective; allocates nothing. */
as_status as_near_analyze(const as_triple *tr, const as_spectral *sp, double tol,
                          as_thm_model model, as_near *nr);

#endif /* ATTNSWEEP_NEAR_H */
