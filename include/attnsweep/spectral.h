/* attnsweep/spectral.h: spectral analysis of a triple and which theorem applies.
 *
 * Everything the hypotheses of theory.md section 2 need, kept as numbers and flags, plus the
 * vectors and projector the classifier uses. Small d: LAPACK on one rank (this module, core).
 * Large d (>= the spec's threshold): par/pspectral computes the same struct with ScaLAPACK.
 */
#ifndef ATTNSWEEP_SPECTRAL_H
#define ATTNSWEEP_SPECTRAL_H

#include <stdint.h>

#include "attnsweep/enums.h"
#include "attnsweep/status.h"
#include "attnsweep/triple.h"

typedef struct as_spectral {
  int d;
  double *wr, *wi;               /* d eigenvalues of V, sorted by decreasing modulus (ties: real
                                    part, then imaginary part, decreasing) */
  double lambda1_re, lambda1_im; /* eigenvalue of largest modulus */
  double lambda2_abs;            /* second largest modulus (0 when d = 1) */
  double gap;                    /* lambda1_re - lambda2_abs (meaningful when lambda_1 is real) */
  double mu;                     /* max real part of the spectrum (temperature growth rate) */
  double *phi1;                  /* d: right eigenvector of lambda_1 (real case), |phi1|_2 = 1 */
  double *l1;                    /* d: left eigenvector, V^T l1 = lambda_1 l1, l1^T phi1 = 1 */
  double margin;                 /* <Q phi1, K phi1> = phi1^T M phi1 */
  double angle_l1_phi1;          /* degrees */
  double m_min_sym_eig;          /* smallest eigenvalue of (M + M^T)/2 */
  double m_asym;                 /* ||M - M^T||_F / ||M||_F (0 for M = 0) */
  double eig_cond;               /* 2-norm condition number estimate of the eigenvector matrix */
  int kpos;                      /* eigenvalues with positive real part */
  int dim_f;                     /* dimension of F (paranormal: eigenspace of lambda; codim-k
                                    conjecture: the span of the kpos eigenvalues); 0 if none */
  double *proj_f;                /* d x d row-major projector onto F along G (NULL-free; zero when
                                    dim_f = 0) */
  uint32_t flags;                /* AS_FLAG_* of record.h */
  as_theorem theorem;            /* the most specific theorem whose hypotheses hold */
  as_geom predicted;             /* the geometry it predicts */
} as_spectral;

/* Allocate for dimension d; *out set on success. */
as_status as_spectral_create(int d, as_spectral **out);
void as_spectral_destroy(as_spectral **p);

/* Analyse tr with LAPACK (one rank). tol: relative tolerance for symmetry, simplicity,
 * dominance and identity tests (e.g. 1e-10). Fills every field. A LAPACK convergence
 * failure (info > 0) is returned as AS_ERR_LAPACK with the routine named. Not collective. */
as_status as_spectral_analyze(const as_triple *tr, double tol, as_spectral *sp);

#endif
