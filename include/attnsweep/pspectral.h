/* attnsweep/pspectral.h: spectral analysis of large triples on BLACS process grids.
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
 * the two paths agree (eigenvalues to ~1e-12 relative, identical flags, theorem, dim F)
 * wherever a quantity is not on a decision threshold. Differences: AS_FLAG_DISTRIBUTED is set;
 * the eigenvector matrix is never formed, so eig_cond is NaN and AS_FLAG_V_DIAGONALISABLE is
 * off (e^{tV} for such a V goes through Pade).
 *
 * Grids. The shape nprow x npcol is the caller's (the spec's `spectral_grid`), never the
 * job's: ScaLAPACK's rounding depends on the grid, so a fixed shape makes every analysis, and
 * every record built on it, bitwise independent of the number of ranks (docs/matrices.md says
 * exactly what is guaranteed). A communicator of R ranks holds G = floor(R / (nprow npcol))
 * grids (ranks 0..P Q - 1 the first, row-major within it, and so on); the grids analyse
 * different triples at the same time, and the R - G P Q ranks left over only receive results.
 * R < nprow npcol is refused (AS_ERR_ARG): a grid needs that many processes.
 * Supported shapes: 1 x 1, 1 x 2, 2 x 1 and every P x Q with P, Q >= 2 (as_pspectral_grid_ok).
 * On a one-dimensional grid of three or more processes, ScaLAPACK 2.2.1's pdhseqr deadlocks:
 * in PDLAQR5's cross-border broadcast both owners of a window, (0, c) and (0, c + 1), lie in
 * process row 0 and both call DGEBS2D on that row (ranks in dgebs2d_ and igamx2d_ for ever).
 * Blocks are square, AS_PSPECTRAL_NB (pdhseqr and pdlahqr need square blocks >= 6 and
 * RSRC = CSRC = 0); a matrix smaller than one block is one block of size max(d, 6).
 * BLACS combines use the repeatable, coherent 1-tree topology (BLACS_SET 15 and 16), not MPI's
 * reductions: the result depends on the grid shape only, not on MPI's choice of algorithm or
 * on where the ranks sit.
 * Memory: besides the replicated V, M and projector (3 d^2 doubles), about 7 d^2 / (P Q) local
 * doubles per grid rank (three local matrices plus pdhseqr's workspace); every rank keeps the
 * results it receives (d^2 + 4 d doubles each).
 *
 * Stops. The analysis polls a stop flag (signals.h) between its phases and between Newton
 * steps, agreed over the grid, and every rank polls it between rounds (one triple per grid),
 * agreed over the communicator: a stop ends a batch after at most one phase on the grid that
 * saw it and one triple on the others, with AS_ERR_INTERRUPTED on every rank. */
#ifndef ATTNSWEEP_PSPECTRAL_H
#define ATTNSWEEP_PSPECTRAL_H

#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/status.h"
#include "attnsweep/triple.h"

#define AS_PSPECTRAL_NB 64
/* The threshold default is AS_SPECTRAL_THRESHOLD_DEFAULT of spectral.h (its one definition). */
/* Default grid of the spec's `spectral_grid` (docs/spec.md says why). */
#define AS_PSPECTRAL_GRID_ROWS_DEFAULT 1
#define AS_PSPECTRAL_GRID_COLS_DEFAULT 1
/* Largest number of processes of one grid accepted. */
#define AS_PSPECTRAL_GRID_MAX 4096

typedef struct as_pspectral as_pspectral;

/* Seconds spent by the last analysis of this rank's grid in its phases (rank-local wall
 * clock), and the work of its sign iteration. */
typedef struct as_pspectral_times {
  double eig;  /* pdgehrd + pdhseqr (pdlahqr if pdhseqr fails) */
  double vec;  /* inverse iteration for phi_1 and l_1 */
  double sym;  /* pdsyev of the symmetric part of M */
  double proj; /* sign iteration and residual */
  double total;
  int sign_iters; /* Newton steps of the sign iteration, both passes together */
} as_pspectral_times;

/* 1 when ScaLAPACK's pdhseqr can run on an nprow x npcol grid (see above), else 0 with the
 * reason in why (len bytes, may be NULL). Not collective. */
int as_pspectral_grid_ok(int nprow, int npcol, char *why, size_t len);

/* Collective on comm. Builds the grids of nprow x npcol processes over comm (duplicated
 * internally). threshold: the smallest d analysed collectively by as_pspectral_hook (<= 0:
 * AS_SPECTRAL_THRESHOLD_DEFAULT). AS_ERR_ARG (same on every rank) for an unsupported shape or a
 * communicator smaller than one grid. */
as_status as_pspectral_create(MPI_Comm comm, int threshold, int nprow, int npcol,
                              as_pspectral **out);
/* Collective on the communicator given to create. Accepts NULL and *p == NULL. */
void as_pspectral_destroy(as_pspectral **p);

/* Builds triple k of a batch into *out (created by the callee, destroyed by pspectral).
 * Called on the first rank of the grid that analyses k only. A failure (its status and
 * recorded message) is triple k's failure, except AS_ERR_NOMEM, which ends the batch. */
typedef as_status (*as_pspectral_build_fn)(uint64_t k, void *ctx, as_triple **out);

typedef struct as_pspectral_batch {
  uint64_t count;                    /* triples 0..count-1 */
  as_pspectral_build_fn build;       /* see above */
  void *ctx;                         /* its context */
  double tol;                        /* as for as_spectral_analyze */
  const volatile sig_atomic_t *stop; /* stop flag polled as described above (NULL: none) */
  FILE *progress;                    /* rank 0: progress lines (NULL: none) */
  double progress_interval;          /* seconds between them (<= 0: none) */
  const char *what;                  /* progress label, e.g. "d >= 512" (may be NULL) */
} as_pspectral_batch;

/* Collective on the communicator given to create: analyses the batch's triples, triple k on
 * grid k mod G in round k / G, and hands every result to every rank. sp[k] (created by the
 * caller, on every rank, for triple k's d) receives the result, identical on every rank;
 * status[k] is AS_OK or triple k's failure (AS_ERR_DATA non-finite entries, AS_ERR_LAPACK a
 * ScaLAPACK failure, or the build's status) with its message in msg[k] (NUL terminated).
 * Returns AS_OK, AS_ERR_INTERRUPTED (a stop, see above), AS_ERR_NOMEM, AS_ERR_MPI or
 * AS_ERR_ARG (sp[k] of the wrong d); all ranks return the same status. */
as_status as_pspectral_run(as_pspectral *ps, const as_pspectral_batch *b, as_spectral *const *sp,
                           as_status *status, char (*msg)[AS_RECORD_MSG]);

/* One triple: as_pspectral_run on a batch of one, analysed by grid 0. tr: read on rank 0 only
 * (it may be NULL elsewhere). sp (created for tr's d) is filled identically on every rank.
 * Statuses: those of a triple's failure and of as_pspectral_run; all ranks return the same
 * status and record the same message. stop: as in the batch (NULL: none). */
as_status as_pspectral_analyze(as_pspectral *ps, const as_triple *tr, double tol, as_spectral *sp);

/* The as_spectral_fn of pipeline.h: d >= threshold -> as_pspectral_analyze (collective: every
 * rank of the communicator must make the same call), else as_spectral_analyze (not
 * collective). ctx is the as_pspectral. */
as_status as_pspectral_hook(const as_triple *tr, double tol, as_spectral *sp, void *ctx);

/* Threshold in use, grids in the communicator, and the phase times of the last analysis
 * of this rank's grid (zero on a rank in no grid). */
int as_pspectral_threshold(const as_pspectral *ps);
int as_pspectral_grids(const as_pspectral *ps);
as_pspectral_times as_pspectral_last_times(const as_pspectral *ps);

/* The wall time of one analysis on a grid is priced by as_cost_spectral_seconds (cost.h). */

#endif
