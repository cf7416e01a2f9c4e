/* attnsweep/spectral.h: spectral analysis of a triple and which theorem applies.
 *
 * Everything the hypotheses of docs/theory.md section 2 need, kept as numbers and flags, plus the
 * vectors and projector the classifier uses. Small d: LAPACK on one rank (this module, core).
 * Large d (>= the spec's threshold): par/pspectral computes the same struct with ScaLAPACK.
 */
#ifndef ATTNSWEEP_SPECTRAL_H
#define ATTNSWEEP_SPECTRAL_H

#include <stdint.h>

#include "attnsweep/enums.h"
#include "attnsweep/status.h"
#include "attnsweep/triple.h"

/* The d from which a triple's spectral analysis is distributed over the ranks (ScaLAPACK,
 * par/pspectral.h) unless the spec sets `spectral_threshold`: the one definition of that
 * default (spec parsing, the sweep, pspectral and the docs refer to it). */
#define AS_SPECTRAL_THRESHOLD_DEFAULT 512

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
  int dim_pos;                   /* kpos when proj_pos holds the projector onto the invariant
                                    subspace of the eigenvalues with Re > tol*scale (the F of the
                                    codimension conjecture), else 0 (below) */
  double *proj_pos;              /* d x d row-major, meaningful when dim_pos > 0 */
  uint32_t flags;                /* AS_FLAG_* of record.h */
  as_theorem theorem;            /* the most specific theorem whose hypotheses hold */
  as_geom predicted;             /* the geometry it predicts */
} as_spectral;

/* Above this 2-norm condition number of the (column-normalised) eigenvector matrix, V is not
 * treated as diagonalisable (AS_FLAG_V_DIAGONALISABLE off): e^{tV} in the eigenbasis would lose
 * more than ~6 digits. */
#define AS_SPECTRAL_DIAG_COND_MAX 1e6

/* Paranormal semisimplicity test: ||V P - lambda P||_F <= AS_SPECTRAL_SEMISIMPLE_TOL *
 * |lambda| ||P||_F for the spectral projector P onto the eigenspace of lambda. A Jordan block
 * gives O(1); a semisimple eigenvalue gives O(eps * cond). */
#define AS_SPECTRAL_SEMISIMPLE_TOL 1e-6

/* Allocate for dimension d; *out set on success. */
as_status as_spectral_create(int d, as_spectral **out);
void as_spectral_destroy(as_spectral **p);

/* Copy every field of src into dst (both created for the same d). AS_ERR_ARG otherwise. */
as_status as_spectral_copy(const as_spectral *src, as_spectral *dst);

/* Analyse tr with LAPACK (one rank). tol: relative tolerance for symmetry, simplicity,
 * dominance and identity tests (e.g. 1e-10). Fills every field. A LAPACK convergence
 * failure (info > 0) is returned as AS_ERR_LAPACK with the routine named. Not collective. */
as_status as_spectral_analyze(const as_triple *tr, double tol, as_spectral *sp);

/* The same analysis of a triple whose V is given factored, V = VL VR (VL d x r, VR r x d,
 * row-major; tr->V holds their product, tr->M as for as_spectral_analyze), at the cost of r x r
 * problems instead of d x d ones (census of import-weights' factored heads, r = d_k << d).
 * The nonzero eigenvalues of V are those of C = VR VL (same Jordan structure), the other d - r
 * are exactly 0; phi1 = VL y and l1 = VR^T z from C's eigenvectors y, z; the projector onto F is
 * VL C^{-1} P_C VR with P_C C's own projector at the same shift c > 0 (both groups of the split
 * put V's zero eigenvalues on the G side). m_min_sym_eig and every flag and the theorem come from
 * the shared steps below, as on the other paths. eig_cond is NaN and AS_FLAG_V_DIAGONALISABLE
 * off, as on the ScaLAPACK path (the eigenvector matrix is never formed: for a rank-deficient V
 * it depends on the basis LAPACK happens to pick in the null space). Needs 1 <= r < d.
 * Not collective. */
as_status as_spectral_analyze_factored(const as_triple *tr, int r, const double *VL,
                                       const double *VR, double tol, as_spectral *sp);

/* ---------------------------------------------------------------- definitions and precedence
 *
 * Tolerances: scale = max |eigenvalue of V| (1 if V = 0); "equal" eigenvalues differ by at most
 * tol * scale. LEAD_REAL: |Im lambda_1| <= tol*scale. LEAD_SIMPLE: no other eigenvalue within
 * tol*scale of lambda_1. LEAD_DOMINANT: lambda_1 - |lambda_2| > tol*scale. kpos counts
 * Re > tol*scale. COMPLEX_LEAD: some eigenvalue with real part within tol*scale of mu has
 * |Im| > tol*scale.
 * V_IDENTITY / V_MINUS_IDENTITY / M_IDENTITY mean V = c I with c > 0 / c < 0 and M = c I with
 * c > 0 (entrywise within tol*|c|): a positive multiple is a time (or token) rescaling of the
 * theorem's I. M_SYMMETRIC: m_asym <= tol; M_SPD: symmetric and m_min_sym_eig > tol * ||M||_F.
 * PARANORMAL: lambda_1 real > 0, every eigenvalue other than the copies of lambda_1 has modulus <
 * lambda_1 - tol*scale, and lambda_1 is semisimple (AS_SPECTRAL_SEMISIMPLE_TOL); F is its
 * eigenspace, dim_f its multiplicity (V = c I, c > 0 is paranormal with F = R^d). phi1, l1, margin
 * and angle_l1_phi1 are computed only when lambda_1 is real and simple (NaN otherwise: the
 * eigenvector is not determined). phi1 has unit norm and its first component of largest magnitude
 * (within a factor 1 - 1e-8) positive; l1^T phi1 = 1. proj_f: paranormal -> projector onto the
 * eigenspace of lambda_1 along the other invariant subspaces; otherwise kpos >= 1 -> onto the
 * invariant subspace of the eigenvalues with Re > tol*scale along the rest; both as (I + sign(V -
 * cI))/2 by the scaled Newton iteration, c halfway between the two groups' real parts. dim_f = 0
 * and proj_f = 0 when the iteration fails (a clean split is impossible).
 * proj_pos, dim_pos: the projector onto the Re > tol*scale subspace whatever the paranormal test
 * says (the codimension conjecture reads pi_F z on that F of dimension kpos, never on the
 * eigenspace of lambda_1 alone): a copy of proj_f when proj_f is it (dim_f = kpos >= 1), else
 * formed by the same iteration when the theorem is codim_k (its only reader); dim_pos = 0 when
 * neither applies or the iteration fails.
 *
 * Theorem precedence: the rows of the theorem table (theorem.h, `attnsweep help theorems`) in
 * their order, the first base-model row whose hypotheses hold wins (d1, identity,
 * minus_identity, paranormal, good, complex, codim_k; none when no row holds).
 * V = I with M SPD is also paranormal (F = R^d) and, for d = 1, good: the identity theorem is
 * the more specific statement. A paranormal V with dim F = 1 and M SPD is always good (simple,
 * dominant, margin phi^T M phi > 0) and a polytope in a line is a segment, i.e. the levels
 * {a, 0, b} of l_1^T z: the two theorems say the same and GOOD is reported (this is the paper's
 * Perron "hyperplanes" example, V with U[0,1) entries and Q = K = I).
 *
 * ---------------------------------------------------------------- shared steps
 * The LAPACK path (as_spectral_analyze) and the ScaLAPACK path (par/pspectral) compute the
 * heavy parts differently but derive every flag with these functions, so both agree. */

/* Sort (wr, wi)[0..d) by decreasing modulus, then real part, then imaginary part. */
void as_spectral_sort_eigs(int d, double *wr, double *wi);

/* From sorted sp->wr, sp->wi and the triple: lambda1_re/im, lambda2_abs, gap, mu, kpos,
 * m_asym, and the flags LEAD_REAL, LEAD_POSITIVE, LEAD_SIMPLE, LEAD_DOMINANT, COMPLEX_LEAD,
 * V_IDENTITY, V_MINUS_IDENTITY, M_IDENTITY, M_SYMMETRIC (sp->flags is reset first). */
void as_spectral_from_eigs(const as_triple *tr, double tol, as_spectral *sp);

/* Normalise raw eigenvectors in sp->phi1 (right) and sp->l1 (left) of a real simple lambda_1
 * as documented above and set margin and angle_l1_phi1. Vectors of the wrong kind (lambda_1
 * complex or multiple) or with l1^T phi1 = 0 become NaN. */
void as_spectral_set_vectors(const as_triple *tr, double tol, as_spectral *sp);

/* Which spectral projector to form. paranormal != 0 asks for the eigenspace of lambda_1
 * (returns 1 if the eigenvalue pattern allows it), else for the Re > tol*scale subspace
 * (returns 2 when 1 <= kpos). *shift is c, *dim the expected dim F (trace of P); a return of 3
 * means F = R^d (P = I, no iteration). Returns 0 when no projector applies. */
int as_spectral_projector_plan(const as_spectral *sp, double tol, int paranormal, double *shift,
                               int *dim);

/* After as_spectral_decide: proj_pos from proj_f when proj_f is the projector onto the Re > 0
 * subspace (dim_f = kpos >= 1; returns 0), else dim_pos = 0 and returns 1 when the caller must
 * form proj_pos itself (as_spectral_projector_plan with paranormal = 0: the theorem is codim_k,
 * whose reading needs it), 0 when nothing needs it. */
int as_spectral_pos_from_f(as_spectral *sp);

/* The scale of the spectrum: |lambda_1| (1 when it is 0). Pure. */
double as_spectral_eig_scale(const as_spectral *sp);

/* Flags MARGIN_POSITIVE, M_SPD, GOOD from the numbers, then theorem and predicted: the first
 * base-model row of the theorem table (theorem.h) whose hypotheses hold. Call last. */
void as_spectral_decide(const as_triple *tr, double tol, as_spectral *sp);

/* Sign-function Newton iteration settings shared by both paths. */
#define AS_SIGN_MAX_ITERS 100
#define AS_SIGN_RTOL 1e-12   /* stop when ||S_{k+1} - S_k||_F <= rtol ||S_{k+1}||_F */
#define AS_SIGN_UNSCALE 1e-2 /* determinant scaling switched off below this change */

#endif
