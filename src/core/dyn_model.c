/* dyn_model.c: the attention normalisations and layer normalisation of the model variants
 * (docs/variants.md): the causal mask, Sinkhorn attention, hardmax, tokens on the sphere (sa and
 * usa), set per workspace by as_dyn_set_model (dynamics.h). */
#include <math.h>
#include <stdlib.h>

#include "dyn_impl.h"
#include "linalg_dyn.h"

void dyn_sinkhorn_dev_add(as_dyn *w, double dev) {
  if (isnan(w->sk_dev) || dev > w->sk_dev) w->sk_dev = dev;
}

/* P from the scores w->S (temperature logc) for a non-base model: the causal mask (row i over
 * its first i + 1 columns, the rest exactly 0), Sinkhorn (converged, or its fixed iterations),
 * or the plain softmax (hardmax and the sphere only change logc and the output). */
void dyn_model_weights(as_dyn *w, double logc) {
  const int n = w->n;
  if (w->am.mask == AS_MASK_CAUSAL) {
    int oh = 0;
    for (int i = 0; i < n; i++) {
      double *p = w->P + (size_t)i * n;
      oh += as_attention_softmax_hot(1, i + 1, w->S + (size_t)i * n, logc, p, w->hot + i);
      for (int j = i + 1; j < n; j++) p[j] = 0.0;
    }
    w->n_hot = oh;
  } else if (w->am.attention == AS_ATTN_SINKHORN) {
    double dev = 0.0;
    int it = 0;
    w->n_hot = as_attention_sinkhorn_warm(n, w->S, logc, w->am.sinkhorn_iters, w->am.sinkhorn_tol,
                                          w->P, w->hot, w->skw, &w->sk_warm, &dev, &it);
    dyn_sinkhorn_dev_add(w, dev);
    w->sk_stats.evals++;
    w->sk_stats.missed += !(dev <= w->am.sinkhorn_tol);
    w->sk_stats.iters += it;
    if (it > w->sk_stats.max_iters) w->sk_stats.max_iters = it;
  } else if (w->am.attention == AS_ATTN_SINKHORN_FIXED) {
    /* A model: exactly sinkhorn_iters iterations, nothing missed, nothing carried over. */
    double dev = 0.0;
    w->n_hot = as_attention_sinkhorn_fixed(n, w->S, logc, w->am.sinkhorn_iters, w->P, w->hot,
                                           w->skw, &dev);
    dyn_sinkhorn_dev_add(w, dev);
  } else {
    w->n_hot = as_attention_softmax_hot(n, n, w->S, logc, w->P, w->hot);
  }
}

/* usa on the sphere: weights e^{s_ij} / n instead of P_ij, i.e. row i of H times
 * Z_i / n with Z_i = sum_j e^{s_ij} = e^{s_i,max} / P_i,argmax (s = c S~; c finite). */
void dyn_usa_rescale(as_dyn *w, double logc) {
  const int n = w->n, d = w->d;
  const double c = exp(logc);
  for (int i = 0; i < n; i++) {
    const int m = w->am.mask == AS_MASK_CAUSAL ? i + 1 : n;
    const double *s = w->S + (size_t)i * n, *p = w->P + (size_t)i * n;
    int arg = 0;
    for (int j = 1; j < m; j++)
      if (s[j] > s[arg]) arg = j;
    const double f = exp(c * s[arg] - log(p[arg]) - log((double)n));
    for (int k = 0; k < d; k++) w->H[(size_t)i * d + k] *= f;
    if (w->uf) w->uf[i] = f;
  }
}

/* Rows of F projected on the tangent spaces at the rows of X: F_i -= <x_i, F_i> / |x_i|^2 x_i. */
void dyn_tangent_project(int n, int d, const double *X, double *F) {
  for (int i = 0; i < n; i++) {
    const double *x = X + (size_t)i * d;
    double *f = F + (size_t)i * d;
    double xf = 0.0, xx = 0.0;
    for (int k = 0; k < d; k++) xf += x[k] * f[k], xx += x[k] * x[k];
    const double a = xx > 0.0 ? xf / xx : 0.0;
    for (int k = 0; k < d; k++) f[k] -= a * x[k];
  }
}

/* Every row of X to the unit sphere (a zero row becomes NaN: the run ends as non-finite). */
void dyn_sphere_normalise(int n, int d, double *X) {
  for (int i = 0; i < n; i++) {
    double *x = X + (size_t)i * d, s = 0.0;
    for (int k = 0; k < d; k++) s += x[k] * x[k];
    const double inv = 1.0 / sqrt(s);
    for (int k = 0; k < d; k++) x[k] = s > 0.0 ? x[k] * inv : NAN;
  }
}

as_status as_dyn_set_model(as_dyn *w, const as_attn_spec *am, int hardmax) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL, AS_ERR_ARG, "as_dyn_set_model: NULL workspace");
  as_attn_spec base = {AS_ATTN_SOFTMAX, 1, 0.0, AS_MASK_NONE, AS_NORM_NONE, AS_NFORM_SA};
  if (!am) am = &base;
  AS_CHECK(am->attention >= 0 && am->attention < AS_ATTN_COUNT && am->mask >= 0 &&
               am->mask < AS_MASK_COUNT && am->norm >= 0 && am->norm < AS_NORM_COUNT &&
               am->norm_form >= 0 && am->norm_form < AS_NFORM_COUNT,
           AS_ERR_INTERNAL, "unknown attention/mask/norm setting (%d, %d, %d, %d)",
           (int)am->attention, (int)am->mask, (int)am->norm, (int)am->norm_form);
  AS_CHECK(am->attention != AS_ATTN_SINKHORN ||
               (am->sinkhorn_iters >= 1 && am->sinkhorn_tol >= 0.0 && !isnan(am->sinkhorn_tol)),
           AS_ERR_SPEC, "Sinkhorn needs sinkhorn_iters >= 1 and sinkhorn_tol >= 0 (got %d, %g)",
           am->sinkhorn_iters, am->sinkhorn_tol);
  AS_CHECK(am->attention != AS_ATTN_SINKHORN_FIXED || am->sinkhorn_iters >= 1, AS_ERR_SPEC,
           "sinkhorn_fixed needs sinkhorn_iters >= 1 (got %d)", am->sinkhorn_iters);
  /* Combinations of the rules of rules.h (validate refuses them): a caller's bug here. Both
   * Sinkhorn attentions (as_attn_is_sinkhorn) share them. */
  const int sk = as_attn_is_sinkhorn(am->attention);
  const char *skname = as_enum_label(&as_attn_table, (int)am->attention);
  AS_CHECK(!(sk && am->mask == AS_MASK_CAUSAL), AS_ERR_ARG,
           "a causal mask with attention %s breaks rule causal_sinkhorn", skname);
  AS_CHECK(!(hardmax && am->norm == AS_NORM_SPHERE && am->norm_form == AS_NFORM_USA), AS_ERR_ARG,
           "norm_form usa with hardmax breaks rule usa_beta");
  AS_CHECK(!(sk && am->norm == AS_NORM_SPHERE && am->norm_form == AS_NFORM_USA), AS_ERR_ARG,
           "norm_form usa with attention %s breaks rule usa_sinkhorn", skname);
  AS_CHECK(!(hardmax && sk), AS_ERR_ARG, "attention %s with hardmax breaks rule sinkhorn_beta",
           skname);
  if (sk && !w->skw) {
    w->skw = calloc(as_attention_sinkhorn_doubles(w->n), sizeof(double));
    AS_CHECK_ALLOC(w->skw);
  }
  if (am->norm == AS_NORM_SPHERE && am->norm_form == AS_NFORM_USA) {
    if (!w->uf) w->uf = calloc((size_t)w->n, sizeof(double));
    AS_CHECK_ALLOC(w->uf);
    if (!w->uw) w->uw = malloc((size_t)w->n * w->n * sizeof(double));
    AS_CHECK_ALLOC(w->uw);
  }
  w->am = *am;
  w->hardmax = hardmax ? 1 : 0;
  w->variant = w->hardmax || am->attention != AS_ATTN_SOFTMAX || am->mask != AS_MASK_NONE ||
               am->norm != AS_NORM_NONE;
cleanup:
  return st;
}

as_status as_dyn_set_step_hook(as_dyn *w, as_dyn_snapshot_fn cb, void *ctx) {
  as_status st = AS_OK;
  AS_CHECK(w != NULL, AS_ERR_ARG, "as_dyn_set_step_hook: NULL workspace");
  w->step_cb = cb;
  w->step_ctx = ctx;
cleanup:
  return st;
}

double as_dyn_sinkhorn_dev(const as_dyn *w) {
  return w->sk_dev;
}

const double *as_dyn_usa_weights(as_dyn *w) {
  const int n = w->n;
  if (!(w->am.norm == AS_NORM_SPHERE && w->am.norm_form == AS_NFORM_USA) || !w->uw || !w->P ||
      !w->ran)
    return NULL;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) w->uw[(size_t)i * n + j] = w->P[(size_t)i * n + j] * w->uf[i];
  return w->uw;
}

void as_dyn_sinkhorn_stats_of(const as_dyn *w, as_dyn_sinkhorn_stats *out) {
  *out = w->sk_stats;
}

const double *as_dyn_velocity(const as_dyn *w) {
  return w->Ys;
}
