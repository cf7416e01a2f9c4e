/* attnsweep/theorem.h: the theorems as data.
 *
 * One row per theorem (docs/theory.md sections 2 and 3, docs/variants.md), in precedence
 * order: the first row of a model whose hypotheses hold is the theorem of a trial. A row says
 * everything the rest of the program needs to know about its theorem:
 *   id          the label (AS_THEOREM_LIST of enums.h: the results file's enum `theorem`)
 *   model       the dynamics it speaks about: the paper's base model, the sphere (layer
 *               normalisation), the sphere with a causal mask; every other model has none
 *   flags       the AS_FLAG_* bits (record.h) its hypotheses require; `holds` decides (some
 *               hypotheses are not flags: d = 1, dim F >= 2, the codimension pattern)
 *   near        its near-miss hypotheses (AS_NEAR_HYP bits of near.h), 0 when the nearest
 *               theorem analysis does not read it
 *   predicted   the geometry it predicts
 *   reading     the coordinates its verdict reads the end state in (classify.h)
 *   rate        the approach rate rho of its settled tokens (classify.h, thresholds)
 *   sep         the spectral separation after which its geometry has emerged (classify.h)
 *   holds       whether its hypotheses hold for a triple and its analysis
 *   readable    whether its coordinates exist on a triple (near.h), NULL for "always"
 *   verdict     its verdict on a clustered end state (classify.c calls it)
 *   Table 1     plain and LaTeX texts of its hypotheses and prediction and its reference:
 *               `attnsweep help theorems` (docs/theory.md holds that table verbatim), the
 *               /trials attribute "theorem_table" that summarize reads.
 * A new theorem is a row here (theorem.c), its holds and verdict functions, its tests and its
 * section of docs/theory.md.
 *
 * The variants' theorems (docs/variants.md): the paper's theorems speak about the base model
 * (row softmax, no mask, tokens in R^d, finite beta) only.
 *   sphere  norm sphere, softmax, no mask, finite beta, V = a I and M = b I (a, b > 0),
 *           d >= 3: almost every start ends in ONE cluster (Geshkovski, Letrouit,
 *           Polyanskiy, Rigollet 2023, "A mathematical perspective on Transformers"; after
 *           metastable phases when beta is large: Geshkovski, Koubbi, Polyanskiy, Rigollet
 *           2024). Both sa and usa.
 *   causal  norm sphere, softmax, causal mask, finite beta, V = a I (a > 0), any Q, K,
 *           d >= 2: every token converges to x_1(0) (Karagodin, Polyanskiy, Rigollet 2024,
 *           "Clustering in causal attention masking", on the sphere).
 * Any other variant: theorem none. Prediction: single_cluster. Classified in x (the state on
 * the sphere), identity reading, rate a; one cluster: consistent; unsettled tokens:
 * unresolved; several settled clusters: unresolved too (the theorems are asymptotic: a
 * metastable configuration), observed clusters, verdict_margin = n_clusters.
 */
#ifndef ATTNSWEEP_THEOREM_H
#define ATTNSWEEP_THEOREM_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/enums.h"
#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/status.h"
#include "attnsweep/triple.h"

/* The dynamics a theorem speaks about. */
#define AS_THM_MODEL_LIST(X)                                                       \
  X(AS_THM_MODEL_BASE, "base", "row softmax, no mask, tokens in R^d, finite beta") \
  X(AS_THM_MODEL_SPHERE, "sphere", "tokens on the sphere (norm: sphere), no mask") \
  X(AS_THM_MODEL_CAUSAL, "causal", "tokens on the sphere, causal mask")            \
  X(AS_THM_MODEL_OTHER, "other", "any other variant: no theorem")

/* The coordinates a verdict reads (classify.h, "coordinates"). */
#define AS_THM_READING_LIST(X)                                         \
  X(AS_READ_Z, "z", "Y = z (the sphere: x)")                           \
  X(AS_READ_L1, "l1", "Y = l_1^T z")                                   \
  X(AS_READ_F, "pi_F z", "Y = B^T pi_F z")                             \
  X(AS_READ_X, "x", "Y = x = e^{tV} z")                                \
  X(AS_READ_SEEN, "seen", "pi_F z when the analysis has an F, else z") \
  X(AS_READ_POS, "pi_+ z", "Y = B^T pi_+ z, F = the Re > 0 subspace (dim kpos)")

/* The approach rate rho (classify.h, "thresholds"). */
#define AS_THM_RATE_LIST(X)                                            \
  X(AS_RATE_LAMBDA1, "lambda_1", "Re lambda_1")                        \
  X(AS_RATE_MIN_POSITIVE, "min Re > 0", "smallest positive real part") \
  X(AS_RATE_UNIT, "1", "1 (the verdict is algebraic)")                 \
  X(AS_RATE_SEEN, "min Re > 0 or |lambda_1|", "smallest positive real part, else |lambda_1|")

/* The separation after which the predicted geometry has emerged (classify.h, "separation"). */
#define AS_THM_SEP_LIST(X)                                                         \
  X(AS_SEP_NONE, "-", "none: a settled geometry is final")                         \
  X(AS_SEP_GOOD, "lambda_1 - max|lambda_k|", "lambda_1 - max |other eigenvalues|") \
  X(AS_SEP_PARANORMAL, "lambda - rho(V|G)", "lambda - spectral radius on G")       \
  X(AS_SEP_CODIM, "min Re on F - max Re off F", "min Re on F - max Re outside F")

#define AS_X_THM_ENUM(name, label, doc) name,
typedef enum as_thm_model { AS_THM_MODEL_LIST(AS_X_THM_ENUM) AS_THM_MODEL_COUNT } as_thm_model;
typedef enum as_thm_reading { AS_THM_READING_LIST(AS_X_THM_ENUM) AS_READ_COUNT } as_thm_reading;
typedef enum as_thm_rate { AS_THM_RATE_LIST(AS_X_THM_ENUM) AS_RATE_COUNT } as_thm_rate;
typedef enum as_thm_sep { AS_THM_SEP_LIST(AS_X_THM_ENUM) AS_SEP_COUNT } as_thm_sep;
#undef AS_X_THM_ENUM

extern const as_enum_table as_thm_model_table, as_thm_reading_table, as_thm_rate_table,
    as_thm_sep_table;

struct as_verdict_ctx; /* classify.c: the clustered end state a verdict reads */

typedef struct as_theorem_row {
  as_theorem id;          /* label and results-file value (enums.h) */
  as_thm_model model;     /* the dynamics it speaks about */
  uint32_t flags;         /* AS_FLAG_* bits its hypotheses require (documentation; holds decides) */
  unsigned near;          /* near-miss hypotheses (AS_NEAR_HYP bits), 0: not a near candidate */
  as_geom predicted;      /* the predicted geometry */
  as_thm_reading reading; /* coordinates of the verdict */
  as_thm_rate rate;       /* approach rate of settled tokens */
  as_thm_sep sep;         /* separation that decides metastability */
  /* Whether the hypotheses hold: tr the built triple, sp its analysis (flags decided), tol the
   * analysis' relative tolerance. NULL: never (the fallback row "none"). */
  int (*holds)(const as_triple *tr, const as_spectral *sp, double tol);
  /* Whether the coordinates exist on a triple (paranormal_f: dim F of the paranormal
   * distance, near.h). NULL: always. */
  int (*readable)(const as_triple *tr, const as_spectral *sp, int paranormal_f);
  /* The verdict on a clustered end state: sets rec->verdict, observed, verdict_margin and
   * the fields of its geometry (classify.h, verdicts). */
  as_status (*verdict)(struct as_verdict_ctx *c, as_record *rec);
  const char *hyp_v, *hyp_m, *prediction, *reference; /* Table 1, plain text */
  const char *decided_by;                             /* record fields its verdict reads */
  const char *tex_name, *tex_hyp, *tex_pred;          /* Table 1, LaTeX */
} as_theorem_row;

/* Rows in precedence order: *count rows. Pure. */
const as_theorem_row *as_theorem_rows(int *count);
/* The row of theorem id; NULL for a value outside the enumeration. Pure. */
const as_theorem_row *as_theorem_row_of(as_theorem id);

/* The model a trial's dynamics is, for the table: attention spec am (attention.h), hardmax
 * (beta = inf), field (the tokens move under a block model: heads, feed-forward, skip, per-layer
 * weights outside the triple's flow; blocks.h). Pure. */
struct as_attn_spec;
as_thm_model as_theorem_model_of(const struct as_attn_spec *am, int hardmax, int field);

/* The theorem of a triple under model m: the first row of that model whose hypotheses hold,
 * else AS_THM_NONE; *pred its prediction. tr, sp as for holds. Pure. */
as_theorem as_theorem_select(as_thm_model m, const as_triple *tr, const as_spectral *sp, double tol,
                             as_geom *pred);

/* The approach rate of row r on analysis sp (> 0 and finite; 1 when the spectrum gives none). */
double as_theorem_rate(const as_theorem_row *r, const as_spectral *sp);
/* The separation of row r on analysis sp (classify.h); INFINITY for AS_SEP_NONE, 0 when
 * undefined. */
double as_theorem_separation(const as_theorem_row *r, const as_spectral *sp);

/* Table 1 as text, one row per theorem in precedence order, fields separated by tabs:
 * label, model, hypotheses on V, on Q^T K, prediction, reference, and the LaTeX name,
 * hypotheses and prediction. Written into buf (len bytes); returns the length it needs
 * (like snprintf). The /trials attribute "theorem_table". Pure. */
size_t as_theorem_table_text(char *buf, size_t len);

/* The separation time AS_CLASSIFY_SEP / sep of theorem id on the analysis sp (classify.h:
 * separation): the horizon past which its metastability rule no longer holds a verdict back.
 * NaN when the theorem has no separation or sep <= 0. */
double as_theorem_horizon(as_theorem id, const as_spectral *sp);

#endif /* ATTNSWEEP_THEOREM_H */
