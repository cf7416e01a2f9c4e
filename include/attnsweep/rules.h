/* attnsweep/rules.h: THE list of rules between sweep keys (cross-key validity), beside the key
 * table (params.h). The table says what one key accepts; a rule says which combinations of
 * keys a trial may have (v_gap <= v_lambda, dt <= T, explicit V of the right size, ...).
 *
 * One list, two users:
 *   validate (io/spec.c)  evaluates every rule on every point of the sweep it checks and
 *                         reports each broken rule at SPEC:LINE:COL of the first key of the
 *                         rule's hit that the spec writes (all problems at once, exit 2);
 *   run (io/spec.c, as_spec_trial)  evaluates the same list on every trial it hands out, as a
 *                         defence: a broken rule there means validate missed it, a bug, so it
 *                         is AS_ERR_INTERNAL (the run stops with file:line), never a failed
 *                         trial.
 *
 * Not here: a key given where it does not apply (the table's `applies` column decides, one
 * policy for every key: docs/spec.md, "Keys that do not apply"), and limits of the machine
 * (memory), which are not properties of a trial.
 *
 * Adding a rule: one X(...) line below, its function rule_<name> in rules.c (same order), a
 * spec that breaks it in tests/io/test_spec.c (test_rules fails for a rule no spec reaches),
 * and the table of combinations of docs/variants.md refreshed from `attnsweep help
 * combinations` (tests/cli/test_docs_tables.sh diffs it). Pure, no MPI, no I/O.
 */
#ifndef ATTNSWEEP_RULES_H
#define ATTNSWEEP_RULES_H

#include <stddef.h>

#include "attnsweep/params.h"
#include "attnsweep/status.h"
#include "attnsweep/trial.h"

/* X(name, doc): one rule per line; the order is the order of evaluation and of reports. */
#define AS_RULE_LIST(X)                                                                  \
  X(scalar_d, "the scalar families (vfamily or mfamily scalar) need d = 1")              \
  X(symmetric_kpos, "symmetric V: v_kpos <= d")                                          \
  X(paranormal_dim_f, "paranormal V: v_dim_f <= d")                                      \
  X(paranormal_radius, "paranormal V: v_radius < v_lambda")                              \
  X(good_gap, "good V: v_gap <= v_lambda")                                               \
  X(complex_d, "complex V: d >= 2")                                                      \
  X(complex_imag, "complex V: v_imag != 0")                                              \
  X(explicit_v, "vfamily explicit needs V")                                              \
  X(v_shape, "V is d x d (or H d x d: one per head)")                                    \
  X(explicit_m, "mfamily explicit needs M, or Q and K")                                  \
  X(m_or_qk, "M, or Q and K, not both")                                                  \
  X(q_without_k, "Q needs K")                                                            \
  X(k_without_q, "K needs Q")                                                            \
  X(m_shape, "M is d x d (or H d x d)")                                                  \
  X(q_shape, "Q is m x d (or H m x d)")                                                  \
  X(k_shape, "K has the shape of Q")                                                     \
  X(square_m, "identity, spd, scalar and M-only explicit M need m_rows = d (or 0)")      \
  X(spd_d1, "spd M with d = 1: m_cond = 1")                                              \
  X(file_family, "the file families need `file`")                                        \
  X(init_explicit, "init kind explicit needs data, n x d")                               \
  X(init_file, "init kind file needs file and dataset")                                  \
  X(reference_n, "reference_n <= n for explicit and file tokens")                        \
  X(sphere_vars, "norm sphere integrates x (vars: x)")                                   \
  X(causal_sinkhorn, "mask causal and attention sinkhorn(_fixed) do not combine")        \
  X(usa_beta, "norm_form usa needs a finite beta")                                       \
  X(usa_sinkhorn, "norm_form usa and attention sinkhorn(_fixed) do not combine")         \
  X(sinkhorn_beta, "attention sinkhorn(_fixed) needs a finite beta")                     \
  X(streamed_base, "n > AS_ATTENTION_STREAM_N, or ranks_per_trial >= 1: the base model") \
  X(dt_le_t, "dt <= T")                                                                  \
  X(snapshots_le_t, "output snapshot times <= T")                                        \
  X(blocks_base, "heads, ffn, skip, weights: the row softmax or sinkhorn_fixed only")    \
  X(ffn_inside, "ffn_form inside: one head, shared weights, an ODE method")              \
  X(blocks_threshold, "heads, ffn, skip, weights: d < spectral_threshold")               \
  X(per_layer_file, "weights per_layer: not with the file families")                     \
  X(blocks_count, "weights per_layer: at most AS_MAX_BLOCKS blocks")

typedef enum as_rule_id {
#define AS_X_RULE_ID(name, doc) AS_RULE_##name,
  AS_RULE_LIST(AS_X_RULE_ID)
#undef AS_X_RULE_ID
      AS_RULE_COUNT
} as_rule_id;

/* What the rules read besides the trial: the spec-level settings. */
typedef struct as_rule_env {
  int spectral_threshold; /* d at and above which the distributed analysis runs */
} as_rule_env;

/* A broken rule: the keys it involves, the one to name first first (AS_PARAM_COUNT ends the
 * list early), and the message (no place, no case: the caller adds them). */
#define AS_RULE_MAX_KEYS 3
typedef struct as_rule_hit {
  as_rule_id rule;
  int nkeys;
  as_param_id keys[AS_RULE_MAX_KEYS];
  char message[320];
} as_rule_hit;

typedef struct as_rule {
  const char *name; /* the X name: identifier, used in messages of the defence and tests */
  const char *doc;  /* one line */
} as_rule;

/* The list (AS_RULE_COUNT entries, in list order). */
extern const as_rule as_rules[AS_RULE_COUNT];

/* Evaluates rule r on t. Returns 1 and fills *hit when t breaks it, 0 when t keeps it (or r is
 * not a rule: r outside 0..AS_RULE_COUNT-1). Pure, not collective. */
int as_rule_broken(as_rule_id r, const as_trial *t, const as_rule_env *env, as_rule_hit *hit);

/* The defence of run: every rule on t. AS_OK, or AS_ERR_INTERNAL recorded with the first
 * broken rule's name and message (validate should have refused the spec: a bug). Pure apart
 * from the error record; not collective. */
as_status as_rules_check(const as_trial *t, const as_rule_env *env);

/* ---- The combinations of the model variants (docs/variants.md, `attnsweep help
 * combinations`): each variant is the keys a spec writes for it; a pair of variants is allowed
 * exactly when a trial with both keeps every rule above. The table of docs/variants.md is
 * computed from the rules, never written by hand. X(name, alt, keys): variants with the same
 * alt > 0 are alternatives (other values of the same key): no pair. */
#define AS_VARIANT_LIST(X)                          \
  X(hardmax, 0, "beta: .inf")                       \
  X(sinkhorn, 4, "attention: sinkhorn")             \
  X(sinkhorn_fixed, 4, "attention: sinkhorn_fixed") \
  X(causal, 0, "mask: causal")                      \
  X(sphere, 1, "norm: sphere")                      \
  X(usa, 1, "norm: sphere, norm_form: usa")         \
  X(heads, 0, "heads: 2")                           \
  X(ffn_inside, 2, "ffn: relu")                     \
  X(ffn_block, 2, "ffn: relu, ffn_form: block")     \
  X(per_layer, 0, "weights: per_layer")             \
  X(layers, 3, "method: layers")                    \
  X(no_skip, 3, "method: layers, skip: false")      \
  X(zvars, 0, "vars: z")

typedef enum as_variant_id {
#define AS_X_VARIANT_ID(name, alt, keys) AS_VARIANT_##name,
  AS_VARIANT_LIST(AS_X_VARIANT_ID)
#undef AS_X_VARIANT_ID
      AS_VARIANT_COUNT
} as_variant_id;

typedef struct as_variant {
  const char *name; /* the X name */
  int alt;          /* > 0: alternatives of one key share it */
  const char *keys; /* what a spec writes for it */
} as_variant;

/* The list (AS_VARIANT_COUNT entries, in list order). */
extern const as_variant as_variants[AS_VARIANT_COUNT];

/* Variants a and b (a == b: a alone) on the default trial (d 3, n 8, T 10, dt 0.1, vars x):
 * returns 1 and fills *hit with the first rule the pair breaks, 0 when it keeps every rule,
 * -1 when a and b are alternatives (as_variants[].alt) or not variants. Pure. */
int as_variant_pair_broken(as_variant_id a, as_variant_id b, as_rule_hit *hit);

#endif /* ATTNSWEEP_RULES_H */
