/* rules.c: the rules between sweep keys (rules.h), one function per X of AS_RULE_LIST. */
#include "attnsweep/rules.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "attnsweep/attention.h"
#include "attnsweep/blocks.h"
#include "attnsweep/triple.h"

const as_rule as_rules[AS_RULE_COUNT] = {
#define AS_X_RULE_ENTRY(name, doc) {#name, doc},
    AS_RULE_LIST(AS_X_RULE_ENTRY)
#undef AS_X_RULE_ENTRY
};

/* Fills h: up to three keys (-1 ends the list) and the message. Returns 1 (broken). */
static int hit(as_rule_hit *h, int k0, int k1, int k2, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int hit(as_rule_hit *h, int k0, int k1, int k2, const char *fmt, ...) {
  const int k[AS_RULE_MAX_KEYS] = {k0, k1, k2};
  h->nkeys = 0;
  for (int i = 0; i < AS_RULE_MAX_KEYS && k[i] >= 0; i++) h->keys[h->nkeys++] = (as_param_id)k[i];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(h->message, sizeof h->message, fmt, ap);
  va_end(ap);
  return 1;
}

#define RULE(name) static int rule_##name(const as_trial *t, const as_rule_env *env, as_rule_hit *h)
#define K(key) AS_P_##key
#define VF(f) (t->triple.vfamily == AS_V_##f)
#define MF(f) (t->triple.mfamily == AS_M_##f)

/* Matrices given with several heads may stack one per head (docs/spec.md). */
static int rows_ok(int rows, int one, int heads) {
  return rows == one || rows == heads * one;
}

/* The trial uses a transformer-block key: heads, ffn, skip false or per-layer weights (also
 * per_layer with a single block, which runs as shared weights: the rules go by the keys). */
static int uses_blocks(const as_trial *t) {
  return as_blocks_kind_of(t) != AS_BLOCKS_OFF || t->blocks.weights == AS_WEIGHTS_PER_LAYER;
}

/* The first block key the trial sets (heads, ffn, skip, weights): the key a message names. */
static int block_key(const as_trial *t) {
  const as_blocks_spec *b = &t->blocks;
  if (b->heads > 1) return K(heads);
  if (b->ffn != AS_FFN_NONE) return K(ffn);
  if (b->weights == AS_WEIGHTS_PER_LAYER) return K(weights);
  return K(skip);
}

/* The first attention key the trial sets away from the base model (beta .inf, attention,
 * mask, norm), -1 for none; with fixed = 1 attention sinkhorn_fixed counts as the base. */
static int model_key(const as_trial *t, int fixed) {
  if (isinf(t->triple.beta)) return K(beta);
  if (t->attn.attention != AS_ATTN_SOFTMAX &&
      !(fixed && t->attn.attention == AS_ATTN_SINKHORN_FIXED))
    return K(attention);
  if (t->attn.mask != AS_MASK_NONE) return K(mask);
  if (t->attn.norm != AS_NORM_NONE) return K(norm);
  return -1;
}

/* The attention transformer blocks compute per head (blocks.h): the base model's row softmax,
 * or its fixed Sinkhorn iterations (sinkhorn_fixed), without hardmax, mask or sphere. */
static int blocks_attention(const as_trial *t) {
  return model_key(t, 1) < 0;
}

/* The label of the trial's attention (the value a message names). */
static const char *attention_label(const as_trial *t) {
  return as_enum_label(&as_attn_table, (int)t->attn.attention);
}

/* The base model's row softmax (no hardmax, Sinkhorn, mask, sphere) and no blocks. */
static int plain_model(const as_trial *t) {
  return as_attn_is_base(&t->attn, isinf(t->triple.beta)) && !uses_blocks(t);
}

RULE(scalar_d) {
  (void)env;
  if (!(VF(SCALAR) || MF(SCALAR)) || t->d == 1) return 0;
  return hit(h, K(d), VF(SCALAR) ? K(vfamily) : K(mfamily), -1,
             "the scalar families need d = 1, got d = %d", t->d);
}

RULE(symmetric_kpos) {
  (void)env;
  if (!VF(SYMMETRIC) || t->triple.v_kpos <= t->d) return 0;
  return hit(h, K(v_kpos), K(d), -1, "v_kpos = %d exceeds d = %d", t->triple.v_kpos, t->d);
}

RULE(paranormal_dim_f) {
  (void)env;
  if (!VF(PARANORMAL) || t->triple.v_dim_f <= t->d) return 0;
  return hit(h, K(v_dim_f), K(d), -1, "v_dim_f = %d exceeds d = %d", t->triple.v_dim_f, t->d);
}

RULE(paranormal_radius) {
  (void)env;
  if (!VF(PARANORMAL) || t->triple.v_radius < t->triple.v_lambda) return 0;
  return hit(h, K(v_radius), K(v_lambda), -1,
             "paranormal V needs v_radius < v_lambda, got %g >= %g", t->triple.v_radius,
             t->triple.v_lambda);
}

RULE(good_gap) {
  (void)env;
  if (!VF(GOOD) || t->triple.v_gap <= t->triple.v_lambda) return 0;
  return hit(h, K(v_gap), K(v_lambda), -1,
             "good V needs v_gap <= v_lambda (|lambda_2| = v_lambda - v_gap >= 0), got %g > %g",
             t->triple.v_gap, t->triple.v_lambda);
}

RULE(complex_d) {
  (void)env;
  if (!VF(COMPLEX) || t->d >= 2) return 0;
  return hit(h, K(d), K(vfamily), -1, "a complex leading pair needs d >= 2");
}

RULE(complex_imag) {
  (void)env;
  if (!VF(COMPLEX) || t->triple.v_imag != 0) return 0;
  return hit(h, K(v_imag), K(vfamily), -1, "vfamily complex needs v_imag != 0");
}

RULE(explicit_v) {
  (void)env;
  if (!VF(EXPLICIT) || t->triple.V.data) return 0;
  return hit(h, K(vfamily), -1, -1, "vfamily explicit needs V");
}

RULE(v_shape) {
  (void)env;
  const as_matref *V = &t->triple.V;
  const int H = t->blocks.heads;
  if (!VF(EXPLICIT) || !V->data || (rows_ok(V->rows, t->d, H) && V->cols == t->d)) return 0;
  return hit(h, K(V), -1, -1, "V is %d x %d but d = %d%s", V->rows, V->cols, t->d,
             H > 1 ? " (one d x d matrix, or the heads' stacked: H d x d)" : "");
}

RULE(explicit_m) {
  (void)env;
  const as_triple_spec *tr = &t->triple;
  if (!MF(EXPLICIT) || tr->M.data || (tr->Q.data && tr->K.data)) return 0;
  return hit(h, K(mfamily), tr->Q.data ? K(Q) : K(K), -1,
             "mfamily explicit needs M, or both Q and K");
}

RULE(m_or_qk) {
  (void)env;
  const as_triple_spec *tr = &t->triple;
  if (!MF(EXPLICIT) || !tr->M.data || !(tr->Q.data || tr->K.data)) return 0;
  return hit(h, K(M), -1, -1, "give either M or Q and K, not both");
}

RULE(q_without_k) {
  (void)env;
  if (!MF(EXPLICIT) || !t->triple.Q.data || t->triple.K.data) return 0;
  return hit(h, K(Q), -1, -1, "Q is given without K");
}

RULE(k_without_q) {
  (void)env;
  if (!MF(EXPLICIT) || !t->triple.K.data || t->triple.Q.data) return 0;
  return hit(h, K(K), -1, -1, "K is given without Q");
}

RULE(m_shape) {
  (void)env;
  const as_matref *M = &t->triple.M;
  const int H = t->blocks.heads;
  if (!MF(EXPLICIT) || !M->data || (rows_ok(M->rows, t->d, H) && M->cols == t->d)) return 0;
  return hit(h, K(M), -1, -1, "M is %d x %d but d = %d%s", M->rows, M->cols, t->d,
             H > 1 ? " (one d x d matrix, or the heads' stacked: H d x d)" : "");
}

RULE(q_shape) {
  (void)env;
  const as_matref *Q = &t->triple.Q;
  const int m = t->triple.m_rows;
  if (!MF(EXPLICIT) || !Q->data) return 0;
  if (Q->cols == t->d && (m <= 0 || rows_ok(Q->rows, m, t->blocks.heads))) return 0;
  return hit(h, K(Q), -1, -1, "Q is %d x %d but must be m x d = %d x %d", Q->rows, Q->cols,
             m > 0 ? m : t->d, t->d);
}

RULE(k_shape) {
  (void)env;
  const as_matref *Q = &t->triple.Q, *Km = &t->triple.K;
  if (!MF(EXPLICIT) || !Q->data || !Km->data || (Km->rows == Q->rows && Km->cols == Q->cols))
    return 0;
  return hit(h, K(K), -1, -1, "K is %d x %d but Q is %d x %d", Km->rows, Km->cols, Q->rows,
             Q->cols);
}

RULE(square_m) {
  (void)env;
  const as_triple_spec *tr = &t->triple;
  const int m = tr->m_rows;
  if (m <= 0 || m == t->d) return 0;
  if (MF(IDENTITY) || MF(SPD) || MF(SCALAR))
    return hit(h, K(m_rows), K(mfamily), -1,
               "mfamily %s needs square Q and K: m_rows = %d differs from d = %d",
               as_enum_label(&as_mfamily_table, (int)tr->mfamily), m, t->d);
  if (MF(EXPLICIT) && tr->M.data && !(tr->Q.data && tr->K.data))
    return hit(h, K(m_rows), K(M), -1,
               "mfamily explicit with only M: Q and K are square, so m_rows = %d must equal "
               "d = %d (or be 0)",
               m, t->d);
  return 0;
}

RULE(spd_d1) {
  (void)env;
  if (!MF(SPD) || t->d != 1 || t->triple.m_cond == 1.0) return 0;
  return hit(h, K(m_cond), K(d), -1,
             "mfamily spd with d = 1 has condition number 1, got m_cond = %g", t->triple.m_cond);
}

RULE(file_family) {
  (void)env;
  if (!(VF(FILE) || MF(FILE)) || t->triple.file.text) return 0;
  return hit(h, VF(FILE) ? K(vfamily) : K(mfamily), K(mfamily), -1,
             "the file families need `file`");
}

RULE(init_explicit) {
  (void)env;
  const as_matref *x = &t->init.data;
  if (t->init.kind != AS_INIT_EXPLICIT) return 0;
  if (!x->data) return hit(h, K(init), K(init_kind), -1, "init kind explicit needs data");
  if (x->rows == t->n && x->cols == t->d) return 0;
  return hit(h, K(init_data), K(init), -1, "init data is %d x %d but must be n x d = %d x %d",
             x->rows, x->cols, t->n, t->d);
}

RULE(init_file) {
  (void)env;
  if (t->init.kind != AS_INIT_FILE || (t->init.file.text && t->init.dataset.text)) return 0;
  return hit(h, K(init), K(init_kind), -1, "init kind file needs file and dataset");
}

RULE(reference_n) {
  (void)env;
  const int given = t->init.kind == AS_INIT_EXPLICIT || t->init.kind == AS_INIT_FILE;
  if (!given || t->reference_n <= t->n) return 0;
  return hit(h, K(reference_n), K(n), -1,
             "reference_n = %d exceeds the n = %d tokens given by init (its first rows are the "
             "reference run's tokens)",
             t->reference_n, t->n);
}

RULE(sphere_vars) {
  (void)env;
  if (t->attn.norm != AS_NORM_SPHERE || t->integ.vars == AS_VARS_X) return 0;
  return hit(h, K(vars), K(norm), -1,
             "norm: sphere integrates the tokens themselves: use vars: x (the default with "
             "norm: sphere)");
}

RULE(causal_sinkhorn) {
  (void)env;
  if (t->attn.mask != AS_MASK_CAUSAL || !as_attn_is_sinkhorn(t->attn.attention)) return 0;
  return hit(h, K(mask), K(attention), -1,
             "mask: causal and attention: %s do not combine (the only lower-triangular "
             "doubly stochastic matrix is the identity)",
             attention_label(t));
}

RULE(usa_beta) {
  (void)env;
  if (t->attn.norm != AS_NORM_SPHERE || t->attn.norm_form != AS_NFORM_USA || !isinf(t->triple.beta))
    return 0;
  return hit(h, K(beta), K(norm_form), -1,
             "norm_form: usa needs a finite beta (weights e^{beta <Qx_i, Kx_j>} / n)");
}

/* usa's weights are e^{s_ij} / n, unnormalised; Sinkhorn's are a doubly stochastic scaling:
 * no documented model is both (the code would integrate a hybrid of the two). */
RULE(usa_sinkhorn) {
  (void)env;
  if (t->attn.norm != AS_NORM_SPHERE || t->attn.norm_form != AS_NFORM_USA ||
      !as_attn_is_sinkhorn(t->attn.attention))
    return 0;
  return hit(h, K(norm_form), K(attention), -1,
             "norm_form: usa (weights e^{beta <Qx_i, Kx_j>} / n, unnormalised) and attention: "
             "%s (doubly stochastic weights) do not combine: use norm_form: sa with "
             "Sinkhorn",
             attention_label(t));
}

/* At beta = inf every Sinkhorn log-sum-exp is a maximum: the alternate normalisations of
 * one-hot rows do not converge (column sums off by several units), and their limit, an optimal
 * assignment, is not what the iteration computes. sinkhorn_fixed is Sinkformers' map of
 * e^{beta S} at a finite temperature, which beta .inf is not. */
RULE(sinkhorn_beta) {
  (void)env;
  if (!as_attn_is_sinkhorn(t->attn.attention) || !isinf(t->triple.beta)) return 0;
  return hit(h, K(beta), K(attention), -1,
             "attention: %s needs a finite beta: at beta .inf (hardmax) the alternate "
             "normalisations of one-hot rows do not scale e^{beta <Qx_i, Kx_j>} to a doubly "
             "stochastic matrix",
             attention_label(t));
}

/* Above AS_ATTENTION_STREAM_N tokens, and at any n with ranks_per_trial >= 1
 * (docs/meanfield.md), the attention is streamed (attention_stream.c), which computes the base
 * model's row softmax only. */
RULE(streamed_base) {
  (void)env;
  if (plain_model(t)) return 0;
  if (t->n > AS_ATTENTION_STREAM_N)
    return hit(h, K(n), K(attention), -1,
               "n = %d tokens is streamed (n > %d), which runs the base model's row softmax "
               "only: no hardmax, Sinkhorn, mask, sphere, heads, ffn, skip or weights",
               t->n, AS_ATTENTION_STREAM_N);
  if (t->ranks_per_trial >= 1)
    return hit(h, K(ranks_per_trial), K(attention), -1,
               "ranks_per_trial = %d streams the attention, which runs the base model's row "
               "softmax only: no hardmax, Sinkhorn, mask, sphere, heads, ffn, skip or weights",
               t->ranks_per_trial);
  return 0;
}

RULE(dt_le_t) {
  (void)env;
  if (!(t->integ.dt > t->integ.T)) return 0;
  return hit(h, K(dt), K(T), -1, "dt = %g exceeds T = %g", t->integ.dt, t->integ.T);
}

RULE(snapshots_le_t) {
  (void)env;
  for (int i = 0; i < t->output.n_snapshots; i++)
    if (t->output.snapshot_times[i] > t->integ.T)
      return hit(h, K(T), -1, -1, "output snapshot time %g is beyond T = %g",
                 t->output.snapshot_times[i], t->integ.T);
  return 0;
}

RULE(blocks_base) {
  (void)env;
  if (!uses_blocks(t) || blocks_attention(t)) return 0;
  const int bk = block_key(t), mk = model_key(t, 1);
  return hit(h, bk, mk, -1,
             "%s with %s: heads, ffn, skip and weights run with the row softmax only, or its "
             "fixed Sinkhorn iterations (attention: sinkhorn_fixed): no hardmax, converged "
             "Sinkhorn, mask or sphere",
             as_params[bk].key, mk >= 0 ? as_params[mk].key : "this attention");
}

RULE(ffn_inside) {
  (void)env;
  const as_blocks_spec *b = &t->blocks;
  const int layers = t->integ.method == AS_METHOD_LAYERS;
  if (b->ffn == AS_FFN_NONE || b->ffn_form != AS_FFN_INSIDE ||
      !(b->heads > 1 || b->weights == AS_WEIGHTS_PER_LAYER || layers))
    return 0;
  return hit(h, K(ffn_form), K(ffn), -1,
             "ffn_form inside is the one-head experiment of an ODE method with shared weights "
             "(heads %d, weights %s, method %s): use ffn_form: block",
             b->heads, as_enum_label(&as_weights_table, b->weights),
             as_enum_label(&as_method_table, t->integ.method));
}

RULE(blocks_threshold) {
  if (!env || !uses_blocks(t) || t->d < env->spectral_threshold) return 0;
  return hit(h, K(d), K(heads), -1,
             "heads, ffn, skip and weights are not available for d = %d >= spectral_threshold %d "
             "(the distributed large-d path runs the base model only)",
             t->d, env->spectral_threshold);
}

RULE(per_layer_file) {
  (void)env;
  if (t->blocks.weights != AS_WEIGHTS_PER_LAYER || !(VF(FILE) || MF(FILE))) return 0;
  return hit(h, K(weights), -1, -1,
             "weights per_layer draws its triples from a random family; a file family holds one "
             "triple per trial (sweep file_index instead)");
}

RULE(blocks_count) {
  (void)env;
  if (t->blocks.weights != AS_WEIGHTS_PER_LAYER) return 0;
  const long nb = as_blocks_count(t);
  if (nb <= AS_MAX_BLOCKS) return 0;
  return hit(h, K(weights_every), K(weights), -1,
             "weights per_layer makes %ld blocks, more than %d (raise weights_every)", nb,
             AS_MAX_BLOCKS);
}

typedef int (*rule_fn)(const as_trial *t, const as_rule_env *env, as_rule_hit *h);
static const rule_fn rule_fns[AS_RULE_COUNT] = {
#define AS_X_RULE_FN(name, doc) rule_##name,
    AS_RULE_LIST(AS_X_RULE_FN)
#undef AS_X_RULE_FN
};

int as_rule_broken(as_rule_id r, const as_trial *t, const as_rule_env *env, as_rule_hit *hit_out) {
  if ((int)r < 0 || r >= AS_RULE_COUNT || !t || !hit_out) return 0;
  hit_out->rule = r;
  hit_out->nkeys = 0;
  hit_out->message[0] = '\0';
  return rule_fns[r](t, env, hit_out);
}

as_status as_rules_check(const as_trial *t, const as_rule_env *env) {
  as_status st = AS_OK;
  AS_CHECK(t != NULL, AS_ERR_ARG, "as_rules_check: NULL trial");
  for (int r = 0; r < AS_RULE_COUNT; r++) {
    as_rule_hit h;
    AS_CHECK(!as_rule_broken((as_rule_id)r, t, env, &h), AS_ERR_INTERNAL,
             "trial %llu breaks rule %s, which validate should have refused: %s",
             (unsigned long long)t->index, as_rules[r].name, h.message);
  }
cleanup:
  return st;
}

/* ---------------------------------------------------------------- variant combinations */

const as_variant as_variants[AS_VARIANT_COUNT] = {
#define AS_X_VARIANT_ENTRY(name, alt, keys) {#name, alt, keys},
    AS_VARIANT_LIST(AS_X_VARIANT_ENTRY)
#undef AS_X_VARIANT_ENTRY
};

/* The keys of variant v (as_variants[v].keys) applied to t. */
static void variant_apply(as_variant_id v, as_trial *t) {
  switch (v) {
  case AS_VARIANT_hardmax:
    t->triple.beta = INFINITY;
    break;
  case AS_VARIANT_sinkhorn:
    t->attn.attention = AS_ATTN_SINKHORN;
    break;
  case AS_VARIANT_sinkhorn_fixed:
    t->attn.attention = AS_ATTN_SINKHORN_FIXED;
    break;
  case AS_VARIANT_causal:
    t->attn.mask = AS_MASK_CAUSAL;
    break;
  case AS_VARIANT_usa: /* a form of the sphere */
  case AS_VARIANT_sphere:
    t->attn.norm = AS_NORM_SPHERE;
    t->attn.norm_form = v == AS_VARIANT_usa ? AS_NFORM_USA : AS_NFORM_SA;
    t->integ.vars = AS_VARS_X; /* the default vars with norm: sphere */
    break;
  case AS_VARIANT_heads:
    t->blocks.heads = 2;
    break;
  case AS_VARIANT_ffn_inside:
  case AS_VARIANT_ffn_block:
    t->blocks.ffn = AS_FFN_RELU;
    t->blocks.ffn_form = v == AS_VARIANT_ffn_block ? AS_FFN_BLOCK : AS_FFN_INSIDE;
    break;
  case AS_VARIANT_per_layer:
    t->blocks.weights = AS_WEIGHTS_PER_LAYER;
    t->blocks.weights_every = 1;
    break;
  case AS_VARIANT_layers:
  case AS_VARIANT_no_skip:
    t->integ.method = AS_METHOD_LAYERS;
    if (v == AS_VARIANT_no_skip) t->blocks.skip = false;
    break;
  case AS_VARIANT_zvars:
    t->integ.vars = AS_VARS_Z;
    break;
  default:
    break;
  }
}

int as_variant_pair_broken(as_variant_id a, as_variant_id b, as_rule_hit *hit_out) {
  as_trial t;
  as_trial_defaults(&t);
  t.d = 3;
  t.n = 8;
  t.integ.T = 10.0;
  t.integ.dt = 0.1;
  t.integ.vars = AS_VARS_X; /* zvars sets z; the sphere's own default is x */
  if ((int)a < 0 || a >= AS_VARIANT_COUNT || (int)b < 0 || b >= AS_VARIANT_COUNT) return -1;
  if (a != b && as_variants[a].alt > 0 && as_variants[a].alt == as_variants[b].alt) return -1;
  /* vars z last: it is the one key that a sphere variant also sets */
  if (a == AS_VARIANT_zvars) {
    variant_apply(b, &t);
    variant_apply(a, &t);
  } else {
    variant_apply(a, &t);
    variant_apply(b, &t);
  }
  for (int r = 0; r < AS_RULE_COUNT; r++)
    if (as_rule_broken((as_rule_id)r, &t, NULL, hit_out)) return 1;
  return 0;
}
