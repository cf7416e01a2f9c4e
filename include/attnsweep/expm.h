/* attnsweep/expm.h: e^{tV} for one value matrix V, computed without per-token work.
 *
 * A plan is made once per dimension d and set once per matrix V. Setting it computes the
 * eigen-decomposition of V and chooses the path:
 *   AS_EXPM_EIGEN  V = W B W^{-1} with W real (a complex pair a +- ib with eigenvector u +- iv
 *                  contributes the columns u, v and the 2x2 block [[a, b], [-b, a]]) and
 *                  kappa_1(W) <= AS_EXPM_COND_MAX: e^{tV} = W e^{tB} W^{-1}, and e^{tB} costs O(d);
 *   AS_EXPM_PADE   otherwise (defective or ill-conditioned eigenvectors, or the eigenvalue
 *                  iteration failed): scaling and squaring with the [13/13] Pade approximant
 *                  (Higham 2005), O(d^3) per time.
 * Every evaluation accepts a shift s and returns e^{t(V - s I)}: with s the largest real part
 * of the spectrum (as_expm_mu) the result stays bounded for all t, which is how the dynamics
 * factors the growing temperature out (docs/theory.md section 3).
 *
 * Discrete layers use R = I + dt V instead: R^k = W (I + dt B)^k W^{-1}, normalised by
 * rho^k with rho the spectral radius of R.
 *
 * Matrices are row-major d x d. No function allocates except create. Nothing is collective.
 */
#ifndef ATTNSWEEP_EXPM_H
#define ATTNSWEEP_EXPM_H

#include "attnsweep/enums.h"
#include "attnsweep/status.h"

/* Largest kappa_1(W) for which the eigenbasis path is chosen automatically. Its relative error
 * is about kappa * 1e-16. */
#define AS_EXPM_COND_MAX 1e5

typedef struct as_expm_plan as_expm_plan;

/* Workspace for dimension d >= 1 (all memory of later calls). *out set on success.
 * Statuses: AS_ERR_ARG (d < 1), AS_ERR_NOMEM. */
as_status as_expm_create(int d, as_expm_plan **out);
/* Free; accepts NULL and *p == NULL; sets *p to NULL. */
void as_expm_destroy(as_expm_plan **p);

/* Set V (d x d row-major, copied). force = AS_EXPM_NONE chooses the path automatically;
 * AS_EXPM_EIGEN or AS_EXPM_PADE imposes it (tests). *path (may be NULL) receives the path.
 * Statuses: AS_ERR_DATA (non-finite V; eigen path forced on a numerically singular eigenvector
 * matrix, kappa_1(W) > 1e12),
 * AS_ERR_INTERNAL (illegal LAPACK argument: a bug). */
as_status as_expm_set(as_expm_plan *p, const double *V, as_expm force, as_expm *path);

as_expm as_expm_path(const as_expm_plan *p); /* path chosen by the last set */
double as_expm_mu(const as_expm_plan *p);    /* largest real part of the spectrum of V */
double as_expm_cond(const as_expm_plan *p);  /* kappa_1(W); +inf when W is singular */
int as_expm_dim(const as_expm_plan *p);      /* d */
/* 1 when the last set found W exactly the identity (a diagonal V): the basis changes
 * (as_expm_to_eigen, as_expm_from_eigen, as_expm_congruence) are copies and every eigenvalue is
 * real, so the blocks are a diagonal (bo = 0). 0 otherwise. */
int as_expm_identity_basis(const as_expm_plan *p);
/* 1 when moreover every eigenvalue equals mu (V = mu I): the blocks of as_expm_blocks(p, t,
 * as_expm_mu(p)) are exactly 1 (e^{0 t}) at every finite t. 0 otherwise. */
int as_expm_scalar(const as_expm_plan *p);

/* E = e^{t (V - shift I)}, d x d row-major (caller's buffer). Statuses: AS_OK;
 * AS_ERR_INTERNAL for an illegal argument (a bug); a singular Pade denominator (not
 * possible for finite input in exact arithmetic) fills E with NaN and returns AS_OK. */
as_status as_expm_eval(as_expm_plan *p, double t, double shift, double *E);

/* Spectral radius of R = I + dt V (from the eigenvalues). */
double as_expm_layer_radius(const as_expm_plan *p, double dt);
/* E = (R / rho)^k, R = I + dt V, k >= 0 (rho > 0; pass 1 for the plain power). */
as_status as_expm_eval_layers(as_expm_plan *p, double dt, long k, double rho, double *E);

/* ---------------------------------------------------------------- eigenbasis (EIGEN path only)
 * Used by the dynamics to work with the scores in the eigenbasis: with U = Z W^{-T} (rows
 * u_i = W^{-1} z_i), G = rows B(t) u_i, the transformed tokens are Y = Z E^T = G W^T. */

/* U = Z W^{-T} for Z n x d (U may not alias Z). */
void as_expm_to_eigen(const as_expm_plan *p, int n, const double *Z, double *U);
/* Y = G W^T for G n x d (Y may not alias G). */
void as_expm_from_eigen(const as_expm_plan *p, int n, const double *G, double *Y);
/* Mt = W^T M W (M, Mt d x d; may not alias). */
void as_expm_congruence(const as_expm_plan *p, const double *M, double *Mt);
/* Block coefficients of e^{t(B - shift I)}: bd[j] the diagonal, bo[j] the off-diagonal entry
 * of row j inside its 2x2 block (0 for a real eigenvalue). bd, bo have d entries. */
void as_expm_blocks(const as_expm_plan *p, double t, double shift, double *bd, double *bo);
/* Same for ((I + dt B) / rho)^k. */
void as_expm_layer_blocks(const as_expm_plan *p, double dt, long k, double rho, double *bd,
                          double *bo);
/* U <- rows B u_i in place, for the blocks of as_expm_blocks (n x d). */
void as_expm_apply_blocks(const as_expm_plan *p, int n, const double *bd, const double *bo,
                          double *U);

/* Zp = rows e^{-tV} Pi x_i of the n x d tokens X, Pi the spectral projector onto the invariant
 * subspace of the eigenvalues with real part > cut, along the others: the part of z = e^{-tV} x
 * that a theorem reading the positive spectrum reads (docs/theory.md 2.2, "precision"),
 * computed in the eigenbasis (u_i = W^{-1} x_i, the other components dropped, the kept ones
 * times e^{-tB}, back with W) so that the components along eigenvalues with real part <= 0,
 * which grow like e^{|Re| t} in z, are never formed. U: n x d scratch; Zp may not alias X or U.
 * AS_ERR_ARG when the plan has no eigenbasis (path not AS_EXPM_EIGEN). Allocates nothing. */
as_status as_expm_positive_part(as_expm_plan *p, double t, double cut, int n, const double *X,
                                double *U, double *Zp);

#endif /* ATTNSWEEP_EXPM_H */
