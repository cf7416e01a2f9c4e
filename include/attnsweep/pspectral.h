/* attnsweep/pspectral.h: spectral analysis of large triples on a BLACS process grid.
 *
 * Same result as as_spectral_analyze (spectral.h), computed with ScaLAPACK:
 *   eigenvalues of V      pdgehrd (Hessenberg) + pdhseqr (multishift QR with aggressive
 *                         early deflation, JOB = 'S'); the eigenvalues are read from the Schur
 *                         form here, replicated (pdlahqr, WANTT true, if pdhseqr fails). See
 *                         pspectral.c for the ScaLAPACK 2.2.1 defects this avoids.
 *   phi_1, l_1            inverse iteration with one pdgetrf of V - sigma I, sigma = lambda_1
 *                         (1 + 1e-12): pdgetrs ('N' for phi_1, 'T' for l_1), three sweeps each
 *   min eig (M + M^T)/2   pdsyev (eigenvalues only)
 *   proj_f                the same sign-function Newton iteration (pdgetrf + pdgetri), the
 *                         paranormal semisimplicity residual with pdgemm
 * and every flag, the theorem and the prediction through the shared steps of spectral.h, so
 * the two paths agree (eigenvalues to ~1e-12 relative, identical flags) wherever a quantity is
 * not on a decision threshold. Differences: AS_FLAG_DISTRIBUTED is set; the eigenvector
 * matrix is never formed, so eig_cond is NaN and AS_FLAG_V_DIAGONALISABLE is off (e^{tV} for
 * such a V goes through Pade, or its own eigendecomposition).
 *
 * Grid: nprow x npcol = the communicator's size, as square as possible with nprow <= npcol
 * (2 ranks: 1 x 2), square blocks of AS_PSPECTRAL_NB (pdhseqr and pdlahqr need square blocks
 * >= 6 and RSRC = CSRC = 0; at d = 2048 on 2 ranks NB = 64 and 128 ran alike).
 * Memory: besides the replicated V, M and projector (3 d^2 doubles), about 7 d^2 / P local
 * doubles per rank (three local matrices plus pdhseqr's workspace). */
#ifndef ATTNSWEEP_PSPECTRAL_H
#define ATTNSWEEP_PSPECTRAL_H

#include <mpi.h>

#include "attnsweep/spectral.h"
#include "attnsweep/status.h"
#include "attnsweep/triple.h"

#define AS_PSPECTRAL_NB 64

typedef struct as_pspectral as_pspectral;

/* Seconds spent by the last as_pspectral_analyze in its phases (rank-local wall clock), and
 * the work of its sign iteration. */
typedef struct as_pspectral_times {
  double eig;  /* pdgehrd + pdhseqr (pdlahqr if pdhseqr fails) */
  double vec;  /* inverse iteration for phi_1 and l_1 */
  double sym;  /* pdsyev of the symmetric part of M */
  double proj; /* sign iteration and residual */
  double total;
  int sign_iters; /* Newton steps of the sign iteration, both passes together */
} as_pspectral_times;

/* Collective on comm. Builds a BLACS grid over comm (duplicated internally). threshold: the
 * smallest d analysed collectively by as_pspectral_hook (<= 0: AS_SPECTRAL_THRESHOLD_DEFAULT). */
as_status as_pspectral_create(MPI_Comm comm, int threshold, as_pspectral **out);
/* Collective on the communicator given to create. Accepts NULL and *p == NULL. */
void as_pspectral_destroy(as_pspectral **p);

/* Collective: every rank of the grid calls it with the same d and tol. tr: read on rank 0
 * only (V and M are broadcast); on other ranks it must have the same d (its matrices are
 * ignored). sp (created for d) is filled identically on every rank. Statuses: AS_ERR_DATA for
 * non-finite entries, AS_ERR_LAPACK for a ScaLAPACK numerical failure (named), AS_ERR_INTERNAL
 * for an illegal argument (a bug), AS_ERR_NOMEM, AS_ERR_MPI; all ranks return the same status. */
as_status as_pspectral_analyze(as_pspectral *ps, const as_triple *tr, double tol, as_spectral *sp);

/* The as_spectral_fn of pipeline.h: d >= threshold -> as_pspectral_analyze (collective: every
 * rank of the grid must make the same call), else as_spectral_analyze (not collective).
 * ctx is the as_pspectral. */
as_status as_pspectral_hook(const as_triple *tr, double tol, as_spectral *sp, void *ctx);

/* Threshold in use and the phase times of the last collective analysis. */
int as_pspectral_threshold(const as_pspectral *ps);
as_pspectral_times as_pspectral_last_times(const as_pspectral *ps);

#endif
