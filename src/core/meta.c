/* meta.c: the cluster count along a run, its plateaus (meta.h). */
#include "attnsweep/meta.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "linkage.h"

struct as_meta {
  int n, d;
  double tol;           /* linkage distance */
  int *parent;          /* n */
  int k_run;            /* count of the current run (-1: none yet) */
  double t_run, t_last; /* start of the current run, last time seen */
  double t_first;       /* time of the first count (the start of the run) */
  int n_plateaus;
  double best_start, best_len, t_merge;
};

as_status as_meta_create(int n, int d, as_meta **out) {
  as_status st = AS_OK;
  as_meta *m = NULL;
  AS_CHECK(out != NULL && n >= 1 && d >= 1, AS_ERR_ARG, "as_meta_create: n = %d, d = %d", n, d);
  m = calloc(1, sizeof *m);
  AS_CHECK_ALLOC(m);
  m->n = n;
  m->d = d;
  m->parent = malloc((size_t)n * sizeof *m->parent);
  AS_CHECK_ALLOC(m->parent);
  m->k_run = -1;
  *out = m;
  m = NULL;
cleanup:
  as_meta_destroy(&m);
  return st;
}

void as_meta_destroy(as_meta **p) {
  if (!p || !*p) return;
  free((*p)->parent);
  free(*p);
  *p = NULL;
}

void as_meta_reset(as_meta *m, const double *X0) {
  m->tol = AS_META_TOL * fmax(as_diameter(X0, m->n, m->d, NULL), DBL_MIN);
  m->k_run = -1;
  m->t_run = m->t_last = 0.0;
  m->n_plateaus = 0;
  m->best_start = m->best_len = m->t_merge = NAN;
}

int as_meta_count(as_meta *m, const double *X) {
  const int n = m->n, d = m->d;
  const double tol2 = m->tol * m->tol;
  for (int i = 0; i < n; i++) m->parent[i] = i;
  int k = n;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (as_dist2(X + (size_t)i * d, X + (size_t)j * d, d) <= tol2) {
        int a = as_find_root(m->parent, i), b = as_find_root(m->parent, j);
        if (a != b) {
          m->parent[a > b ? a : b] = a < b ? a : b;
          k--;
        }
      }
  return k;
}

/* Close the current run at m->t_last. The first run (from t = 0, every token its own cluster
 * until the first pair comes within tol) is the approach, not a plateau. */
static void meta_close(as_meta *m) {
  const double len = m->t_last - m->t_run;
  if (m->k_run >= 2 && len >= AS_PLATEAU_MIN && m->t_run > m->t_first) {
    m->n_plateaus++;
    if (!(len <= m->best_len)) m->best_len = len, m->best_start = m->t_run;
  }
}

void as_meta_step(as_meta *m, double t, const double *X) {
  const int k = as_meta_count(m, X);
  if (m->k_run < 0) {
    m->k_run = k;
    m->t_run = m->t_last = m->t_first = t;
    return;
  }
  if (k != m->k_run) {
    m->t_last = t;
    meta_close(m);
    if (k < m->k_run) m->t_merge = t;
    m->k_run = k;
    m->t_run = t;
  }
  m->t_last = t;
}

void as_meta_finish(as_meta *m, as_record *rec) {
  if (m->k_run >= 0) meta_close(m);
  rec->n_plateaus = m->n_plateaus;
  rec->plateau_start = m->best_start;
  rec->plateau_length = m->best_len;
  rec->t_last_merge = m->k_run >= 0 && isnan(m->t_merge) ? 0.0 : m->t_merge;
  rec->n_clusters_track = m->k_run;
}
