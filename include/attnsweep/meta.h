/* attnsweep/meta.h: metastability, the cluster count along a run (docs/theory.md, docs/variants.md
 * sphere). meta.c. */
#ifndef ATTNSWEEP_META_H
#define ATTNSWEEP_META_H

#include "attnsweep/record.h"
#include "attnsweep/status.h"

/*
 * Cluster counts along a run: single linkage of the tokens at the distance
 * tol = AS_META_TOL * (diameter of the initial tokens), counted after every step; a plateau
 * is a maximal stretch of constant count >= 2 lasting at least AS_PLATEAU_MIN time units, other
 * than the first stretch (from t = 0 until the first pair comes within tol: the approach). */
#define AS_META_TOL 1e-3
#define AS_PLATEAU_MIN 2.0
typedef struct as_meta as_meta;
/* Workspace for n tokens in dimension d. AS_ERR_ARG, AS_ERR_NOMEM. */
as_status as_meta_create(int n, int d, as_meta **out);
void as_meta_destroy(as_meta **p);
/* Start a run from the initial tokens X0 (n x d): sets tol, clears the plateaus. */
void as_meta_reset(as_meta *m, const double *X0);
/* Clusters of X (n x d) at the tolerance of the last reset. */
int as_meta_count(as_meta *m, const double *X);
/* Count X at time t (non-decreasing t) and update the plateaus. */
void as_meta_step(as_meta *m, double t, const double *X);
/* Close the run at its last time: n_plateaus, plateau_start, plateau_length, t_last_merge,
 * n_clusters_track into rec. */
void as_meta_finish(as_meta *m, as_record *rec);

#endif /* ATTNSWEEP_META_H */
