/* attnsweep/enums.h: the enumerations that are data (families, outcomes, verdicts...).
 *
 * Each list is X(NAME, "label", "meaning"). The same list generates the C enum, the label
 * used in YAML specs and in the HDF5 enum types of the results file, and the documentation.
 * Values are the list positions and are part of the results-file contract: append only.
 */
#ifndef ATTNSWEEP_ENUMS_H
#define ATTNSWEEP_ENUMS_H

/* Family of the value matrix V. */
#define AS_VFAMILY_LIST(X)                                                                  \
  X(AS_V_IDENTITY, "identity", "V = s I")                                                   \
  X(AS_V_MINUS_IDENTITY, "minus_identity", "V = -s I")                                      \
  X(AS_V_EXPLICIT, "explicit", "V written in the spec")                                     \
  X(AS_V_PERRON, "perron", "i.i.d. U[0,1) entries times s (Perron-Frobenius: good triple)") \
  X(AS_V_SYMMETRIC, "symmetric", "random symmetric V with k positive eigenvalues")          \
  X(AS_V_PARANORMAL, "paranormal", "lambda I on F, spectral radius < lambda on G")          \
  X(AS_V_GOOD, "good", "simple dominant real eigenvalue with a chosen gap")                 \
  X(AS_V_COMPLEX, "complex", "leading complex-conjugate pair")                              \
  X(AS_V_GAUSSIAN, "gaussian", "i.i.d. N(0, s^2/d) entries (generic V)")                    \
  X(AS_V_SCALAR, "scalar", "d = 1: V = v")                                                  \
  X(AS_V_FILE, "file", "read from an HDF5 file")

/* Family of the query/key pair (the model uses M = Q^T K only). */
#define AS_MFAMILY_LIST(X)                                                                  \
  X(AS_M_IDENTITY, "identity", "Q = K = sqrt(s) I, M = s I")                                \
  X(AS_M_EXPLICIT, "explicit", "Q and K (or M) written in the spec")                        \
  X(AS_M_SPD, "spd", "random symmetric positive definite M with a chosen condition number") \
  X(AS_M_UNIFORM, "uniform", "i.i.d. U[0,1) entries of Q and K times s (generic M)")        \
  X(AS_M_GAUSSIAN, "gaussian", "i.i.d. N(0,1) entries of Q and K times s (generic M)")      \
  X(AS_M_ZERO, "zero", "M = 0: uniform attention, linear dynamics (exact solutions)")       \
  X(AS_M_SCALAR, "scalar", "d = 1: Q K = q k")                                              \
  X(AS_M_FILE, "file", "read from an HDF5 file")

/* What an eps perturbation of a triple touches. */
#define AS_PERTURB_LIST(X)                 \
  X(AS_PERTURB_V, "v", "V only")           \
  X(AS_PERTURB_M, "m", "M (Q and K) only") \
  X(AS_PERTURB_BOTH, "both", "V and M")

/* Whether the replicates of a parameter point share its triple. */
#define AS_TSEED_LIST(X)                                                 \
  X(AS_TSEED_PER_TRIAL, "per_trial", "every trial draws its own triple") \
  X(AS_TSEED_PER_PARAMETERS, "per_parameters",                           \
    "replicates share the triple of their "                              \
    "parameters")

/* Initial token distribution. */
#define AS_INIT_LIST(X)                                            \
  X(AS_INIT_BOX, "box", "uniform on [-s, s]^d")                    \
  X(AS_INIT_GAUSS, "gauss", "i.i.d. N(0, s^2)")                    \
  X(AS_INIT_SPHERE, "sphere", "uniform on the sphere of radius s") \
  X(AS_INIT_EXPLICIT, "explicit", "written in the spec")           \
  X(AS_INIT_FILE, "file", "read from an HDF5 file")

/* Time integration. */
#define AS_METHOD_LIST(X)                                                     \
  X(AS_METHOD_RK4, "rk4", "classic RK4, attention recomputed at every stage") \
  X(AS_METHOD_DOPRI5, "dopri5", "Dormand-Prince 5(4), adaptive step")         \
  X(AS_METHOD_EULER, "euler", "forward Euler on the ODE")                     \
  X(AS_METHOD_LAYERS, "layers", "discrete layers x <- x + dt P V x (residual network)")

/* Variables integrated. */
#define AS_VARS_LIST(X)                                                    \
  X(AS_VARS_Z, "z", "rescaled tokens z = e^{-tV} x (R^{-k} x for layers)") \
  X(AS_VARS_X, "x", "original tokens x")

/* How e^{tV} is computed for a triple. */
#define AS_EXPM_LIST(X)                                                 \
  X(AS_EXPM_NONE, "none", "not computed")                               \
  X(AS_EXPM_EIGEN, "eigen", "real eigenbasis with 2x2 rotation blocks") \
  X(AS_EXPM_PADE, "pade", "scaling and squaring Pade")

/* Which theorem's hypotheses the triple satisfies (the most specific one). */
#define AS_THEOREM_LIST(X)                                                                 \
  X(AS_THM_NONE, "none", "no theorem applies")                                             \
  X(AS_THM_D1, "d1", "d = 1, V > 0, QK > 0 [Thm 2.1]")                                     \
  X(AS_THM_IDENTITY, "identity", "V = I, M SPD [Thm 3.1]")                                 \
  X(AS_THM_GOOD, "good", "good triple [Thm 4.1]")                                          \
  X(AS_THM_PARANORMAL, "paranormal", "paranormal V, M SPD [Thm 5.1]")                      \
  X(AS_THM_MINUS_IDENTITY, "minus_identity", "V = -I, M = I [Thm C.5]")                    \
  X(AS_THM_CODIM, "codim_k", "conjecture: 1 <= k < d eigenvalues with positive real part") \
  X(AS_THM_COMPLEX, "complex", "complex leading pair: no clustering expected")             \
  X(AS_THM_SPHERE, "sphere", "sphere, Q = K = V = I, d >= 3: one cluster [GLPR 2023]")     \
  X(AS_THM_CAUSAL, "causal", "sphere, causal mask, V = I, any Q, K: one cluster [KPR 2024]")

/* Geometry of an end state (predicted or observed). */
#define AS_GEOM_LIST(X)                                                                      \
  X(AS_GEOM_NONE, "none", "no prediction, or not classified")                                \
  X(AS_GEOM_POLYTOPE, "polytope", "clusters at the vertices of a polytope (and 0/boundary)") \
  X(AS_GEOM_HYPERPLANES, "hyperplanes", "at most 3 parallel hyperplanes l1^T z in {a,0,b}")  \
  X(AS_GEOM_POLYTOPE_SUBSPACE, "polytope_x_subspace", "polytope in F times G")               \
  X(AS_GEOM_COLLAPSE, "collapse", "all tokens to 0 and P to J/n")                            \
  X(AS_GEOM_BOOLEAN, "boolean_lowrank", "d = 1: P Boolean, rank <= 3")                       \
  X(AS_GEOM_SUBSPACES, "affine_subspaces", "at most 3 parallel affine subspaces, codim k")   \
  X(AS_GEOM_SINGLE, "single_cluster", "one cluster")                                         \
  X(AS_GEOM_CLUSTERS, "clusters", "finitely many clusters, no predicted shape")              \
  X(AS_GEOM_UNCLUSTERED, "unclustered", "no clustering")                                     \
  X(AS_GEOM_UNRESOLVED, "unresolved", "not settled: no geometry can be read")

/* Verdict of an end state against its theorem. */
#define AS_VERDICT_LIST(X)                                                            \
  X(AS_VERDICT_PENDING, "pending", "trial not run yet")                               \
  X(AS_VERDICT_CONSISTENT, "consistent", "the end state matches the prediction")      \
  X(AS_VERDICT_VIOLATED, "violated", "the end state contradicts the prediction")      \
  X(AS_VERDICT_UNRESOLVED, "unresolved", "not settled enough to decide")              \
  X(AS_VERDICT_NO_PREDICTION, "no_prediction", "no theorem applies")                  \
  X(AS_VERDICT_NONFINITE, "nonfinite", "the integration produced non-finite numbers") \
  X(AS_VERDICT_FAILED, "failed", "the trial could not be set up")

/* Why a verdict is what it is (docs/theory.md 2.2, "Reasons and horizons"): for an unresolved
 * verdict what keeps it from being decided, for a violated one where the theorem's conclusion
 * fails; "none" for consistent verdicts and those without a theorem. Each doc string is
 * "VERDICT: what decides it[; t_decide]": `attnsweep help reasons` prints them as the table of
 * docs/theory.md 2.2 (tests/cli/test_docs_tables.sh keeps the two equal). New reasons go at the
 * end: the values are stored in results files. */
#define AS_REASON_LIST(X)                                                                        \
  X(AS_REASON_NONE, "none",                                                                      \
    "consistent, no_prediction, nonfinite, failed: nothing held back and nothing contradicted")  \
  X(AS_REASON_MOVING, "moving",                                                                  \
    "unresolved: a token's remaining travel r_i = u_i / rho exceeds cluster_tol (it has not "    \
    "settled); t_decide from the measured approach rates, at least 3.912 / sep")                 \
  X(AS_REASON_METASTABLE, "metastable",                                                          \
    "unresolved: settled in a geometry the theorem excludes while sep t < 3.912 (ln 50 = "       \
    "3.91202 to 4 digits: e^{-sep t} > 2%; good, paranormal, codim_k): its geometry has not "    \
    "emerged yet; t_decide = 3.912 / sep")                                                       \
  X(AS_REASON_MERGING, "merging",                                                                \
    "unresolved: settled in several clusters the theorem merges into one (sphere, causal, "      \
    "and the models without a theorem); no horizon")                                             \
  X(AS_REASON_MIXING, "mixing",                                                                  \
    "unresolved: d = 1, an exceptional row of P not yet Boolean; no horizon")                    \
  X(AS_REASON_PRECISION, "precision",                                                            \
    "unresolved: moving, and the rounding error of reading the state, d eps max_i sum_a "        \
    "|z_ia| max_c |W_ac| over the coordinates the reading uses, reaches cluster_tol (or a "      \
    "coordinate exceeds 2^500): no horizon decides it in double precision; none")                \
  X(AS_REASON_INTERIOR, "interior",                                                              \
    "violated: a cluster centre inside the hull of the others, neither a vertex nor at 0 "       \
    "(identity, paranormal)")                                                                    \
  X(AS_REASON_LEVELS, "levels",                                                                  \
    "violated: more than three settled limits (good: levels of l_1^T z; codim_k: points of "     \
    "pi_F z)")                                                                                   \
  X(AS_REASON_MIDDLE, "middle", "violated: good, three levels with the middle one away from 0")  \
  X(AS_REASON_STALLED, "stalled", "violated: minus_identity, x stalled away from 0")             \
  X(AS_REASON_NOT_BOOLEAN, "not_boolean",                                                        \
    "violated: d1, rows of P settled off the two extreme tokens, or rank P > 3")                 \
  X(AS_REASON_PRECISION_VARS_X, "precision_vars_x",                                              \
    "unresolved: as precision, in a run that integrated z, where integrating x (vars: x) reads " \
    "the part of z the theorem needs without forming the part that grows: rerun with vars: x; "  \
    "none")

/* How a trial's integration ended (an outcome is data, not an error). */
#define AS_OUTCOME_LIST(X)                                             \
  X(AS_OUT_PENDING, "pending", "not run yet")                          \
  X(AS_OUT_REACHED_T, "reached_T", "integrated to the horizon")        \
  X(AS_OUT_SETTLED, "settled", "stopped early: configuration settled") \
  X(AS_OUT_MAX_STEPS, "max_steps", "step limit reached")               \
  X(AS_OUT_NONFINITE, "nonfinite", "non-finite state")                 \
  X(AS_OUT_INTERRUPTED, "interrupted", "stopped by a signal")          \
  X(AS_OUT_FAILED, "failed", "set-up failed (see message)")            \
  X(AS_OUT_NOT_CONVERGED, "not_converged",                             \
    "integrated on, but Sinkhorn attention missed sinkhorn_tol at some evaluation")

/* ---- attention normalisations and layer normalisation (docs/variants.md) */
/* How a row of scores becomes attention weights. */
/* Appended only (the values are recorded): sinkhorn_fixed after sinkhorn. */
#define AS_ATTN_LIST(X)                                                       \
  X(AS_ATTN_SOFTMAX, "softmax", "row softmax")                                \
  X(AS_ATTN_SINKHORN, "sinkhorn", "doubly stochastic (Sinkhorn, log domain)") \
  X(AS_ATTN_SINKHORN_FIXED, "sinkhorn_fixed",                                 \
    "exactly sinkhorn_iters Sinkhorn iterations from the row softmax (Sinkformers' map)")

/* Which tokens a token attends to. */
#define AS_MASK_LIST(X)                  \
  X(AS_MASK_NONE, "none", "every token") \
  X(AS_MASK_CAUSAL, "causal", "tokens j <= i only")

/* Layer normalisation. */
#define AS_NORM_LIST(X)                    \
  X(AS_NORM_NONE, "none", "tokens in R^d") \
  X(AS_NORM_SPHERE, "sphere", "tokens on the unit sphere")

/* Weights of the sphere dynamics. */
#define AS_NFORM_LIST(X)                                      \
  X(AS_NFORM_SA, "sa", "x_i' = Proj_{x_i}(sum_j P_ij V x_j)") \
  X(AS_NFORM_USA, "usa", "unnormalised weights e^{beta <Q x_i, K x_j>} / n")

/* ---- transformer blocks (blocks.h, docs/variants.md "Transformer blocks") */
/* Feed-forward activation sigma. */
#define AS_FFN_LIST(X)                           \
  X(AS_FFN_NONE, "none", "no feed-forward part") \
  X(AS_FFN_RELU, "relu", "sigma = max(0, .)")    \
  X(AS_FFN_TANH, "tanh", "sigma = tanh")         \
  X(AS_FFN_IDENTITY, "identity", "sigma = identity")

/* Where the feed-forward part sits. */
#define AS_FFN_FORM_LIST(X)                                                        \
  X(AS_FFN_INSIDE, "inside", "z_i' = W sigma(V sum_j P_ij (z_j - z_i)) (authors)") \
  X(AS_FFN_BLOCK, "block", "attention plus a per-token MLP W_2 sigma(W_1 x + b)")

/* The feed-forward weights. */
#define AS_FFN_W_LIST(X)                                         \
  X(AS_FFN_W_IDENTITY, "identity", "W = I (W_1, W_2: I padded)") \
  X(AS_FFN_W_RANDOM, "random", "i.i.d. N(0, 1/fan_in) entries")

/* Weights over depth. */
#define AS_WEIGHTS_LIST(X)                                             \
  X(AS_WEIGHTS_SHARED, "shared", "one triple for all layers (ALBERT)") \
  X(AS_WEIGHTS_PER_LAYER, "per_layer", "a fresh triple every weights_every layers")

#define AS_X_ENUM_ENTRY(name, label, doc) name,
typedef enum as_vfamily { AS_VFAMILY_LIST(AS_X_ENUM_ENTRY) AS_V_COUNT } as_vfamily;
typedef enum as_mfamily { AS_MFAMILY_LIST(AS_X_ENUM_ENTRY) AS_M_COUNT } as_mfamily;
typedef enum as_perturb { AS_PERTURB_LIST(AS_X_ENUM_ENTRY) AS_PERTURB_COUNT } as_perturb;
typedef enum as_tseed { AS_TSEED_LIST(AS_X_ENUM_ENTRY) AS_TSEED_COUNT } as_tseed;
typedef enum as_init { AS_INIT_LIST(AS_X_ENUM_ENTRY) AS_INIT_COUNT } as_init;
typedef enum as_method { AS_METHOD_LIST(AS_X_ENUM_ENTRY) AS_METHOD_COUNT } as_method;
typedef enum as_vars { AS_VARS_LIST(AS_X_ENUM_ENTRY) AS_VARS_COUNT } as_vars;
typedef enum as_expm { AS_EXPM_LIST(AS_X_ENUM_ENTRY) AS_EXPM_COUNT } as_expm;
typedef enum as_theorem { AS_THEOREM_LIST(AS_X_ENUM_ENTRY) AS_THM_COUNT } as_theorem;
typedef enum as_geom { AS_GEOM_LIST(AS_X_ENUM_ENTRY) AS_GEOM_COUNT } as_geom;
typedef enum as_verdict { AS_VERDICT_LIST(AS_X_ENUM_ENTRY) AS_VERDICT_COUNT } as_verdict;
typedef enum as_outcome { AS_OUTCOME_LIST(AS_X_ENUM_ENTRY) AS_OUT_COUNT } as_outcome;
typedef enum as_reason { AS_REASON_LIST(AS_X_ENUM_ENTRY) AS_REASON_COUNT } as_reason;
typedef enum as_attn { AS_ATTN_LIST(AS_X_ENUM_ENTRY) AS_ATTN_COUNT } as_attn;
typedef enum as_mask { AS_MASK_LIST(AS_X_ENUM_ENTRY) AS_MASK_COUNT } as_mask;
typedef enum as_norm { AS_NORM_LIST(AS_X_ENUM_ENTRY) AS_NORM_COUNT } as_norm;
typedef enum as_nform { AS_NFORM_LIST(AS_X_ENUM_ENTRY) AS_NFORM_COUNT } as_nform;
typedef enum as_ffn { AS_FFN_LIST(AS_X_ENUM_ENTRY) AS_FFN_COUNT } as_ffn;
typedef enum as_ffn_form { AS_FFN_FORM_LIST(AS_X_ENUM_ENTRY) AS_FFN_FORM_COUNT } as_ffn_form;
typedef enum as_ffn_w { AS_FFN_W_LIST(AS_X_ENUM_ENTRY) AS_FFN_W_COUNT } as_ffn_w;
typedef enum as_weights { AS_WEIGHTS_LIST(AS_X_ENUM_ENTRY) AS_WEIGHTS_COUNT } as_weights;
#undef AS_X_ENUM_ENTRY

/* A table of one enumeration: labels[i] is the label of value i. */
typedef struct as_enum_table {
  const char *type_name;     /* e.g. "outcome" */
  int count;                 /* number of values */
  const char *const *labels; /* count labels */
  const char *const *docs;   /* count one-line meanings */
} as_enum_table;

extern const as_enum_table as_vfamily_table, as_mfamily_table, as_perturb_table, as_tseed_table,
    as_init_table, as_method_table, as_vars_table, as_expm_table, as_theorem_table, as_geom_table,
    as_verdict_table, as_outcome_table, as_reason_table;
extern const as_enum_table as_attn_table, as_mask_table, as_norm_table, as_nform_table;
extern const as_enum_table as_ffn_table, as_ffn_form_table, as_ffn_w_table, as_weights_table;

/* Define `const as_enum_table var` from an X-list of (name, label, doc) entries: the one way a
 * .c file turns a list into its label table (enums.c, theorem.c). */
#define AS_ENUM_X_LABEL(name, label, doc) label,
#define AS_ENUM_X_DOC(name, label, doc) doc,
#define AS_ENUM_TABLE_DEFINE(var, list, tname, count)                \
  static const char *const var##_labels[] = {list(AS_ENUM_X_LABEL)}; \
  static const char *const var##_docs[] = {list(AS_ENUM_X_DOC)};     \
  const as_enum_table var = {tname, count, var##_labels, var##_docs};

/* Label of value v in table t ("?" when out of range). */
const char *as_enum_label(const as_enum_table *t, int v);
/* Value whose label is `label`, or -1. */
int as_enum_parse(const as_enum_table *t, const char *label);

#endif /* ATTNSWEEP_ENUMS_H */
