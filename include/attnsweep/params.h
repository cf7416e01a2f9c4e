/* attnsweep/params.h: THE table of sweep keys. One entry per key; everything else derives.
 *
 * AS_PARAM_TABLE(X, C) holds one X(C, ...) per sweep key, in enumeration order (within one mapping
 * of a spec, axes vary in this order, first slowest; part of the contract: append new keys
 * where they belong and never reorder released ones without bumping the results schema):
 *
 *   X(C, key, KIND, etab, lo, hi, flags, dflt, slot, RKIND, rname, applies, doc)
 *
 *   C        passed through (a context for nested expansions: record.h passes its own X)
 *   key      the YAML key (also the C identifier of generated names)
 *   KIND     NUM (double) | INT (int) | I64 (int64_t) | BOOL (bool) | ENUM (an enum of
 *            enums.h, int sized) | TEXT (as_text: a string; labels of its values come from
 *            the spec) | MAT (as_matref: a matrix written in the spec) | GROUP (a mapping whose
 *            members are other keys: `init`)
 *   etab     ENUM: its label table (&as_..._table), else NULL
 *   lo, hi   NUM/INT/I64: the accepted range (flags say whether lo is open, NaN/inf allowed)
 *   dflt     the default (NUM/INT/I64/BOOL/ENUM; ignored for TEXT/MAT/GROUP: "none")
 *   slot     where the value lands in as_trial (a member designator: triple.v_gap)
 *   RKIND    the kind of its record field in /trials (record.h kinds: F64 I32 I64 HASH LABEL
 *            and the enum kinds), or NONE: not recorded (the doc says why)
 *   rname    the record field (a C identifier; usually the key itself)
 *   applies  C expression on `const as_trial *t`: whether the key means anything for this
 *            trial (its family, its method...). Where it does not, the record holds NaN (F64)
 *            or -1 (I32, LABEL) or 0 (HASH) instead of the default, so a group-by never
 *            mixes real values with unused defaults. One policy for every key (validate,
 *            docs/spec.md "Keys that do not apply"): a value written in the spec that no
 *            trial reading it from there applies to is an error at its SPEC:LINE:COL.
 *
 * Rules between keys (v_gap <= v_lambda, dt <= T, ...) are the list of rules.h.
 *   doc      one line for docs/spec.md (`attnsweep help keys` prints the table from this)
 *
 * Adding a scalar key: one entry here, the code that uses the value (reading t->slot), and a
 * test (tests/cli/test_param_axes.sh fails for a key it does not sweep). Parsing, range
 * checks, defaults, the record field, its NaN rule, plan's axis table and docs/spec.md
 * follow from the entry.
 */
#ifndef ATTNSWEEP_PARAMS_H
#define ATTNSWEEP_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/enums.h"

/* Range flags. */
enum {
  AS_PF_LO_OPEN = 1,   /* lo itself is excluded */
  AS_PF_NAN_OK = 2,    /* .nan is a value (margin: "not imposed") */
  AS_PF_INF_OK = 4,    /* .inf is a value */
  AS_PF_INIT_PART = 8, /* only inside `init: {...}` (as the member named after "init_") */
  AS_PF_NO_AXIS = 16   /* a GROUP: recorded through its members */
};

#define AS_BIG 1e300
/* The largest dimension (and m, k, dim F) a trial may have: the core's limit. */
#define AS_MAX_D 32768

#define AS_VF_IS(f) (t->triple.vfamily == AS_V_##f)
#define AS_MF_IS(f) (t->triple.mfamily == AS_M_##f)
#define AS_FILE_FAMILY (AS_VF_IS(FILE) || AS_MF_IS(FILE))

/* clang-format off */
#define AS_PARAM_TABLE(X, C)                                                                       \
  X(C, vfamily, ENUM, &as_vfamily_table, 0, 0, 0, AS_V_IDENTITY, triple.vfamily, ENUM,          \
    vfamily, 1, "family of V (default explicit when V is given)")                                  \
  X(C, mfamily, ENUM, &as_mfamily_table, 0, 0, 0, AS_M_IDENTITY, triple.mfamily, ENUM,          \
    mfamily, 1, "family of Q, K (default explicit when Q, K or M is given)")                       \
  X(C, d, INT, NULL, 1, AS_MAX_D, 0, 2, d, I32, d, 1,                                                 \
    "dimension (default: the size of V or M when given; 1 for the scalar families)")               \
  X(C, n, INT, NULL, 1, 100000, 0, 20, n, I32, n, 1,                                               \
    "number of tokens (default: the rows of init.data when given)")                                \
  X(C, m_rows, INT, NULL, 0, AS_MAX_D, 0, 0, triple.m_rows, I32, m_rows, 1,                           \
    "rows m of Q and K (0: m = d; default the rows of Q when given)")                              \
  X(C, v_scale, NUM, NULL, -AS_BIG, AS_BIG, 0, 1.0, triple.v_scale, F64, v_scale,                  \
    AS_VF_IS(IDENTITY) || AS_VF_IS(MINUS_IDENTITY) || AS_VF_IS(PERRON) ||                          \
        AS_VF_IS(GAUSSIAN) || AS_VF_IS(SYMMETRIC) || AS_VF_IS(SCALAR),                             \
    "s multiplying V (identity, minus_identity, perron, gaussian, symmetric; v for scalar)")       \
  X(C, v_kpos, INT, NULL, 0, AS_MAX_D, 0, 0, triple.v_kpos, I32, v_kpos, AS_VF_IS(SYMMETRIC),         \
    "symmetric V: number of positive eigenvalues (0..d)")                                          \
  X(C, v_lambda, NUM, NULL, 0, AS_BIG, AS_PF_LO_OPEN, 1.0, triple.v_lambda, F64, v_lambda,         \
    AS_VF_IS(PARANORMAL) || AS_VF_IS(GOOD) || AS_VF_IS(COMPLEX),                                   \
    "leading eigenvalue (paranormal, good; complex: its real part)")                               \
  X(C, v_dim_f, INT, NULL, 1, AS_MAX_D, 0, 1, triple.v_dim_f, I32, v_dim_f, AS_VF_IS(PARANORMAL),     \
    "paranormal V: dim F (1..d)")                                                                  \
  X(C, v_radius, NUM, NULL, 0, AS_BIG, 0, 0.5, triple.v_radius, F64, v_radius,                     \
    AS_VF_IS(PARANORMAL), "paranormal V: spectral radius of V on G (< v_lambda)")                  \
  X(C, v_oblique, BOOL, NULL, 0, 1, 0, 0, triple.v_oblique, I32, v_oblique, AS_VF_IS(PARANORMAL),  \
    "paranormal V: F and G oblique (true) or orthogonal (false)")                                  \
  X(C, v_gap, NUM, NULL, 0, AS_BIG, AS_PF_LO_OPEN, 0.5, triple.v_gap, F64, v_gap, AS_VF_IS(GOOD),  \
    "good V: lambda_1 - abs(lambda_2)")                                                            \
  X(C, v_imag, NUM, NULL, -AS_BIG, AS_BIG, 0, 1.0, triple.v_imag, F64, v_imag, AS_VF_IS(COMPLEX),  \
    "complex V: imaginary part of the leading pair (!= 0, d >= 2)")                                \
  X(C, m_scale, NUM, NULL, -AS_BIG, AS_BIG, 0, 1.0, triple.m_scale, F64, m_scale,                  \
    AS_MF_IS(IDENTITY) || AS_MF_IS(UNIFORM) || AS_MF_IS(GAUSSIAN) || AS_MF_IS(SPD) ||              \
        AS_MF_IS(SCALAR),                                                                          \
    "s multiplying M (identity, uniform, gaussian, spd; q k for scalar)")                          \
  X(C, m_cond, NUM, NULL, 1, AS_BIG, 0, 1.0, triple.m_cond, F64, m_cond, AS_MF_IS(SPD),            \
    "spd M: condition number")                                                                     \
  X(C, margin, NUM, NULL, -AS_BIG, AS_BIG, AS_PF_NAN_OK, NAN, triple.margin, F64, margin_target,   \
    AS_VF_IS(GOOD), "good V: imposed <Q phi_1, K phi_1> (.nan: not imposed)")                      \
  X(C, beta, NUM, NULL, 0, AS_BIG, AS_PF_LO_OPEN | AS_PF_INF_OK, 1.0, triple.beta, F64, beta, 1, \
    "inverse temperature: scores beta <Q x_i, K x_j> (M -> beta M); .inf: hardmax")             \
  X(C, V, MAT, NULL, 0, 0, 0, 0, triple.V, HASH, V_hash, AS_VF_IS(EXPLICIT),                       \
    "explicit V, d x d, a list of rows: [[1, 0], [0, 1]] (sets vfamily explicit)")                 \
  X(C, Q, MAT, NULL, 0, 0, 0, 0, triple.Q, HASH, Q_hash, AS_MF_IS(EXPLICIT),                       \
    "explicit Q, m x d (with K; sets mfamily explicit)")                                           \
  X(C, K, MAT, NULL, 0, 0, 0, 0, triple.K, HASH, K_hash, AS_MF_IS(EXPLICIT),                       \
    "explicit K, m x d (with Q; sets mfamily explicit)")                                           \
  X(C, M, MAT, NULL, 0, 0, 0, 0, triple.M, HASH, M_hash, AS_MF_IS(EXPLICIT),                       \
    "explicit M = Q^T K, d x d (instead of Q and K)")                                              \
  X(C, file, TEXT, NULL, 0, 0, 0, 0, triple.file, LABEL, file, AS_FILE_FAMILY,                     \
    "HDF5 file of the file families (layout: docs/matrices.md)")                                   \
  X(C, file_index, INT, NULL, 0, 2147483647.0, 0, 0, triple.file_index, I32, file_index,           \
    AS_FILE_FAMILY, "which triple of the file (0-based)")                                          \
  X(C, file_mscale, NUM, NULL, -AS_BIG, AS_BIG, 0, 1.0, triple.file_mscale, F64, file_mscale,      \
    AS_MF_IS(FILE), "factor applied to the M read (e.g. 1/sqrt(d_k))")                             \
  X(C, eps, NUM, NULL, 0, AS_BIG, 0, 0.0, triple.eps, F64, eps, 1,                                 \
    "perturbation: adds eps N(0,1)/sqrt(d) noise (0: none)")                                       \
  X(C, perturb, ENUM, &as_perturb_table, 0, 0, 0, AS_PERTURB_V, triple.perturb, ENUM, perturb,  \
    t->triple.eps > 0, "what eps perturbs")                                                        \
  X(C, init, GROUP, NULL, 0, 0, AS_PF_NO_AXIS, 0, init, NONE, init_group, 1,                       \
    "initial tokens: {kind, scale, data, file, dataset} (recorded as init, init_scale, "           \
    "init_hash, init_file, init_dataset); `init: gauss` is short for {kind: gauss}; data "         \
    "implies kind explicit, file implies kind file")                                               \
  X(C, init_kind, ENUM, &as_init_table, 0, 0, 0, AS_INIT_BOX, init.kind, ENUM, init, 1,            \
    "initial distribution (init.kind)")                                                            \
  X(C, init_scale, NUM, NULL, 0, AS_BIG, AS_PF_LO_OPEN, 5.0, init.scale, F64, init_scale,          \
    t->init.kind == AS_INIT_BOX || t->init.kind == AS_INIT_GAUSS ||                                \
        t->init.kind == AS_INIT_SPHERE,                                                            \
    "scale s of the distribution (init.scale: box half-width, std, radius)")                       \
  X(C, init_data, MAT, NULL, 0, 0, AS_PF_INIT_PART, 0, init.data, HASH, init_hash,                 \
    t->init.kind == AS_INIT_EXPLICIT, "init.data: explicit tokens, n x d")                         \
  X(C, init_file, TEXT, NULL, 0, 0, AS_PF_INIT_PART, 0, init.file, LABEL, init_file,               \
    t->init.kind == AS_INIT_FILE, "init.file: HDF5 file of the tokens")                            \
  X(C, init_dataset, TEXT, NULL, 0, 0, AS_PF_INIT_PART, 0, init.dataset, LABEL, init_dataset,      \
    t->init.kind == AS_INIT_FILE, "init.dataset: dataset (n x d) in init.file")                    \
  X(C, method, ENUM, &as_method_table, 0, 0, 0, AS_METHOD_RK4, integ.method, ENUM, method, 1,    \
    "integrator")                                                                                  \
  X(C, vars, ENUM, &as_vars_table, 0, 0, 0, AS_VARS_Z, integ.vars, ENUM, vars, 1,                  \
    "integrated variables: z (rescaled) or x")                                                     \
  X(C, T, NUM, NULL, 0, AS_BIG, AS_PF_LO_OPEN, 5.0, integ.T, F64, T, 1,                            \
    "horizon (layers: T/dt layers)")                                                               \
  X(C, T_decide, NUM, NULL, 0, 1e6, 0, 0.0, integ.T_decide, F64, T_decide, 1,                      \
    "0: T as given; f > 0: horizon max(T, f 3.912 / sep) of the theorem and the nearest one")      \
  X(C, dt, NUM, NULL, 0, AS_BIG, AS_PF_LO_OPEN, 0.1, integ.dt, F64, dt, 1,                         \
    "step, <= T (initial step for dopri5)")                                                        \
  X(C, rtol, NUM, NULL, 0, AS_BIG, AS_PF_LO_OPEN, 1e-6, integ.rtol, F64, rtol,                     \
    t->integ.method == AS_METHOD_DOPRI5, "dopri5 relative tolerance")                              \
  X(C, atol, NUM, NULL, 0, AS_BIG, 0, 1e-9, integ.atol, F64, atol,                                 \
    t->integ.method == AS_METHOD_DOPRI5, "dopri5 absolute tolerance")                              \
  X(C, max_steps, I64, NULL, 1, 1e15, 0, 1000000, integ.max_steps, I64, max_steps, 1,              \
    "step limit (accepted + rejected steps)")                                                      \
  X(C, settle_tol, NUM, NULL, 0, AS_BIG, 0, 1e-8, integ.settle_tol, F64, settle_tol,               \
    t->integ.settle_window > 0,                                                                    \
    "settled when the max speed < settle_tol * radius throughout settle_window")                   \
  X(C, settle_window, NUM, NULL, 0, AS_BIG, 0, 0.0, integ.settle_window, F64, settle_window, 1,    \
    "length of the settling window (0: never stop early)")                                         \
  X(C, triple_seed, ENUM, &as_tseed_table, 0, 0, 0, AS_TSEED_PER_TRIAL, triple_seed, ENUM,        \
    triple_seed, 1, "whether the replicates of a point share its triple")                        \
  AS_PARAM_ATTN_TABLE(X, C)                                                                       \
  AS_BLOCKS_PARAMS(X, C)                                                                          \
  AS_PARAM_GROUP_TABLE(X, C)                                                                      \
  AS_PARAM_MEASURE_TABLE(X, C)

/* Attention normalisations and layer normalisation (docs/variants.md), one block. */
#define AS_ATTN_IS_SINKHORN (t->attn.attention == AS_ATTN_SINKHORN)
#define AS_ATTN_ITERATES (AS_ATTN_IS_SINKHORN || t->attn.attention == AS_ATTN_SINKHORN_FIXED)
#define AS_PARAM_ATTN_TABLE(X, C)                                                                  \
  X(C, attention, ENUM, &as_attn_table, 0, 0, 0, AS_ATTN_SOFTMAX, attn.attention, ENUM, attention, \
    1,                                                                                             \
    "attention weights: softmax (rows), sinkhorn (doubly stochastic) or sinkhorn_fixed "           \
    "(sinkhorn_iters iterations)")                                                                 \
  X(C, sinkhorn_iters, INT, NULL, 1, 10000, 0, 100, attn.sinkhorn_iters, I32, sinkhorn_iters,      \
    AS_ATTN_ITERATES,                                                                              \
    "sinkhorn: iteration cap per evaluation of P; sinkhorn_fixed: exactly this many (1: the row "  \
    "softmax)")                                                                                    \
  X(C, sinkhorn_tol, NUM, NULL, 0, AS_BIG, 0, 1e-9, attn.sinkhorn_tol, F64, sinkhorn_tol,          \
    AS_ATTN_IS_SINKHORN, "sinkhorn: stop when rows and columns sum to 1 within this")              \
  X(C, mask, ENUM, &as_mask_table, 0, 0, 0, AS_MASK_NONE, attn.mask, ENUM, mask, 1,                \
    "attention mask: none or causal (P_ij = 0 for j > i)")                                         \
  X(C, norm, ENUM, &as_norm_table, 0, 0, 0, AS_NORM_NONE, attn.norm, ENUM, norm, 1,                \
    "layer normalisation: none or sphere (tokens on the unit sphere)")                             \
  X(C, norm_form, ENUM, &as_nform_table, 0, 0, 0, AS_NFORM_SA, attn.norm_form, ENUM, norm_form,   \
    t->attn.norm == AS_NORM_SPHERE, "sphere: sa (softmax weights) or usa (e^{beta<.,.>} / n)")

/* Transformer blocks (blocks.h). Their enumerations are recorded as HDF5 enums of their etab (record kind ENUM, record.h). */
#define AS_BLOCKS_PARAMS(X, C)                                                                     \
  X(C, heads, INT, NULL, 1, 64, 0, 1, blocks.heads, I32, heads, 1,                                 \
    "attention heads H: x_i' = sum_h sum_j P^h_ij V_h x_j (1: the base model)")                   \
  X(C, skip, BOOL, NULL, 0, 1, 0, 1, blocks.skip, I32, skip,                            \
    t->integ.method == AS_METHOD_LAYERS,                                                           \
    "layers: x <- x + dt Attn(x) (true) or x <- Attn(x) = P V x (false)")                          \
  X(C, ffn, ENUM, &as_ffn_table, 0, 0, 0, AS_FFN_NONE, blocks.ffn, ENUM, ffn, 1,                    \
    "feed-forward activation sigma (none: no feed-forward part)")                                  \
  X(C, ffn_form, ENUM, &as_ffn_form_table, 0, 0, 0, AS_FFN_INSIDE, blocks.ffn_form,     \
    ENUM, ffn_form, t->blocks.ffn != AS_FFN_NONE,                                                   \
    "inside: W sigma(attention term); block: plus a per-token MLP W_2 sigma(W_1 x + b)")          \
  X(C, ffn_width, INT, NULL, 0, AS_MAX_D, 0, 0, blocks.ffn_width, I32, ffn_width,       \
    t->blocks.ffn != AS_FFN_NONE && t->blocks.ffn_form == AS_FFN_BLOCK,                           \
    "ffn_form block: hidden width of the MLP (0: d)")                                             \
  X(C, ffn_w, ENUM, &as_ffn_w_table, 0, 0, 0, AS_FFN_W_IDENTITY, blocks.ffn_w, ENUM,    \
    ffn_w, t->blocks.ffn != AS_FFN_NONE, "feed-forward weights W (W_1, W_2)")                      \
  X(C, ffn_bias, BOOL, NULL, 0, 1, 0, 0, blocks.ffn_bias, I32, ffn_bias,                \
    t->blocks.ffn != AS_FFN_NONE && t->blocks.ffn_form == AS_FFN_BLOCK,                           \
    "ffn_form block: a random bias b ~ N(0, 1) (false: b = 0)")                                    \
  X(C, weights, ENUM, &as_weights_table, 0, 0, 0, AS_WEIGHTS_SHARED, blocks.weights, ENUM, weights, \
    1, "shared: one triple; per_layer: a fresh triple from the family per block of layers")       \
  X(C, weights_every, INT, NULL, 1, 2147483647.0, 0, 1, blocks.weights_every, I32,      \
    weights_every, t->blocks.weights == AS_WEIGHTS_PER_LAYER,                                      \
    "per_layer: layers per triple (ODE methods: every weights_every * dt of time)")

/* One trial over several ranks (docs/meanfield.md, "Scaling"), one block. */
#define AS_PARAM_GROUP_TABLE(X, C)                                                                 \
  X(C, ranks_per_trial, INT, NULL, 0, 65536, 0, 0, ranks_per_trial, I32, ranks_per_trial, 1,       \
    "ranks sharing one trial's rows (0: auto, groups above 4096 tokens; >= 1: streamed, any n)")

/* The empirical measure (measure.h, docs/meanfield.md). */
#define AS_PARAM_MEASURE_TABLE(X, C)                                                               \
  X(C, reference_n, INT, NULL, 0, 100000, 0, 0, reference_n, I32, reference_n, 1,                  \
    "tokens of the reference run for ref_w1: the first reference_n of this trial's stream (0: none)")
/* clang-format on */

/* Expand the table with X(C, key, ...) and no context. */
#define AS_PARAM_LIST(X) AS_PARAM_TABLE(X, _)

/* Generated ids AS_P_<key>, in table order, and the count. */
#define AS_X_PARAM_ID(C, key, ...) AS_P_##key,
typedef enum as_param_id { AS_PARAM_LIST(AS_X_PARAM_ID) AS_PARAM_COUNT } as_param_id;
#undef AS_X_PARAM_ID

typedef enum as_param_kind {
  AS_PK_NUM,
  AS_PK_INT,
  AS_PK_I64,
  AS_PK_BOOL,
  AS_PK_ENUM,
  AS_PK_TEXT,
  AS_PK_MAT,
  AS_PK_GROUP
} as_param_kind;

struct as_trial;

/* The run-time view of one table entry. */
typedef struct as_param {
  const char *key;
  as_param_kind kind;
  const as_enum_table *etab; /* ENUM */
  double lo, hi;             /* NUM/INT/I64 */
  int flags;                 /* AS_PF_* */
  size_t offset;             /* of the slot in as_trial */
  const char *rkind;         /* record kind ("NONE": not recorded) */
  const char *rname;         /* record field */
  int (*applies)(const struct as_trial *t);
  const char *doc;
} as_param;

/* The table (AS_PARAM_COUNT entries, in table order). */
extern const as_param as_params[AS_PARAM_COUNT];
/* The entry of a key, or NULL. */
const as_param *as_param_find(const char *key);
/* Text of the default value of p ("" for TEXT/MAT/GROUP) into buf. */
void as_param_default_text(const as_param *p, char *buf, size_t len);
/* Text of the accepted range of p (e.g. "1..65536", "> 0", "label: a, b") into buf. */
void as_param_range_text(const as_param *p, char *buf, size_t len);

#endif /* ATTNSWEEP_PARAMS_H */
