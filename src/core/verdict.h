/* verdict.h (private to core): what a theorem's verdict function (theorem.h) reads of an end
 * state that classify.c has read and clustered, and the helpers it may call. Shared by
 * classify.c (which fills it) and theorem.c (whose rows judge it). */
#ifndef ATTNSWEEP_VERDICT_H
#define ATTNSWEEP_VERDICT_H

#include "attnsweep/classify.h"
#include "attnsweep/theorem.h"

typedef struct as_verdict_ctx {
  const as_classify_input *in; /* the end state */
  as_classify_ws *ws;          /* the classifier's workspace (centres, labels) */
  const as_theorem_row *row;   /* the theorem judged */
  int n, d, k;                 /* tokens, dimension, classified dimension */
  double t;                    /* time reached */
  double sep_t;                /* separation x t (INFINITY: the theorem has none) */
  double sep;                  /* the separation (NaN: the theorem has none) */
  double rho;                  /* the approach rate of the tolerance law (classify.h) */
  double vmax;                 /* fastest token speed, in the classified coordinates */
  double cluster_tol;          /* the resolution (classify.h) */
  double unresolved_margin;    /* max_i r_i / cluster_tol */
  int n_clusters;              /* clusters of settled tokens */
  int n_unresolved;            /* tokens not settled */
  int max_size;                /* largest cluster */
  const double *centres;       /* n_clusters x k */
  const double *r;             /* n: remaining travel of each token */
  const double *q;             /* n: measured approach rate of each token (NULL: rho) */
} as_verdict_ctx;

/* rec->t_decide from rec->reason (classify.h, t_decide); decide.c. */
void as_verdict_decide(const as_verdict_ctx *c, as_record *rec);
/* Clusters of every token of Y (n x k) at distance tol, single linkage; parent: n ints of
 * scratch. decide.c. */
int as_verdict_count_all(const double *Y, int n, int k, double tol, int *parent);

/* Vertices among the centres, and the largest interior depth relative to sqrt(k) cluster_tol
 * of a centre that is neither a vertex nor at zero (want_depth; else *worst = 0). Statuses of
 * as_hull_is_vertex / as_hull_depth_l1, AS_ERR_INTERRUPTED. */
as_status as_verdict_hull(as_verdict_ctx *c, int want_depth, int *n_vertices, double *worst);
/* What is seen, without a theorem to compare with (classify.h, no_prediction). */
as_geom as_verdict_generic(const as_verdict_ctx *c);
/* Every token's cluster label cleared (a collapse has no clusters of its own). */
void as_verdict_clear_labels(as_verdict_ctx *c);

#endif /* ATTNSWEEP_VERDICT_H */
