/* attnsweep/record.h: one row of /trials, the result of one trial.
 *
 * AS_RECORD_FIELDS is the single definition of the row: it generates the C struct, the HDF5
 * compound type (io/results.c), the journal encoding and the schema documentation. Fields
 * are X(KIND, name, "meaning [units]"). KIND is one of
 *   U64 I64 I32 F64                  plain numbers
 *   EXPM THEOREM GEOM VERDICT REASON OUTCOME
 *                                    the enumerations of enums.h that only results have (int32
 *                                    in C, HDF5 enums)
 *   ENUM                             a sweep key's enumeration, for every enum key: the etab of
 *                                    its entry in params.h (RKIND ENUM) gives the labels; int32
 *                                    in C, an HDF5 enum with "-" = -1 (not applicable: the one
 *                                    place that decides it, record.c) plus the labels. A new
 *                                    enum key needs nothing beyond its table entry.
 *   MSG                              char[AS_RECORD_MSG], NUL padded
 * Append fields at the end of a group; never reorder within a released version.
 * NaN in a F64 field means "not applicable / not measured".
 */
#ifndef ATTNSWEEP_RECORD_H
#define ATTNSWEEP_RECORD_H

#include <stdint.h>

#include "attnsweep/enums.h"
#include "attnsweep/params.h"

#define AS_RECORD_MSG 160

/* A key of the table as a record field: X(RKIND, rname, doc), nothing for RKIND NONE. */
#define AS_X_PARAM_RECORD(X, key, KIND, etab, lo, hi, flags, dflt, slot, RKIND, rname, applies, \
                          doc)                                                                  \
  AS_PREC_##RKIND(X, rname, doc)
#define AS_PREC_NONE(X, rname, doc)
#define AS_PREC_F64(X, rname, doc) X(F64, rname, doc)
#define AS_PREC_I32(X, rname, doc) X(I32, rname, doc)
#define AS_PREC_I64(X, rname, doc) X(I64, rname, doc)
#define AS_PREC_HASH(X, rname, doc) X(HASH, rname, doc)
#define AS_PREC_LABEL(X, rname, doc) X(LABEL, rname, doc)
#define AS_PREC_ENUM(X, rname, doc) X(ENUM, rname, doc)

/* Flags of the triple (field `flags`): X(NAME, bit, "meaning"). The list generates the
 * AS_FLAG_<NAME> bits and the results file's /trials attributes flag:<name> = bit. */
#define AS_FLAG_LIST(X)                                                       \
  X(LEAD_REAL, 0, "eigenvalue of V of largest modulus is real")               \
  X(LEAD_POSITIVE, 1, "... and positive")                                     \
  X(LEAD_SIMPLE, 2, "... and simple")                                         \
  X(LEAD_DOMINANT, 3, "... and strictly dominant: lambda_1 > |lambda_2|")     \
  X(MARGIN_POSITIVE, 4, "<Q phi_1, K phi_1> > 0")                             \
  X(GOOD, 5, "good triple (Def 1): all of the above")                         \
  X(M_SYMMETRIC, 6, "M = Q^T K symmetric (to tolerance)")                     \
  X(M_SPD, 7, "M symmetric positive definite")                                \
  X(M_IDENTITY, 8, "M = I")                                                   \
  X(V_IDENTITY, 9, "V = I")                                                   \
  X(V_MINUS_IDENTITY, 10, "V = -I")                                           \
  X(PARANORMAL, 11, "paranormal V (Def 2)")                                   \
  X(COMPLEX_LEAD, 12, "leading eigenvalue (max real part) is a complex pair") \
  X(DISTRIBUTED, 13, "analysed with ScaLAPACK")                               \
  X(V_DIAGONALISABLE, 14, "eigenvector matrix well conditioned (eigen path)")

#define AS_X_FLAG_BIT(name, bit, doc) AS_FLAG_##name = 1 << bit,
enum { AS_FLAG_LIST(AS_X_FLAG_BIT) };
#undef AS_X_FLAG_BIT

#define AS_RECORD_FIELDS(X)                                                                      \
  /* ---- sweep coordinates: the case, the replicate and every key of params.h */                \
  X(U64, trial, "trial index = row")                                                             \
  X(LABEL, case_name, "case (sub-sweep) of the spec; labels are the case names")                 \
  X(I32, replicate, "seed axis value")                                                           \
  AS_PARAM_TABLE(AS_X_PARAM_RECORD, X)                                                           \
  /* ---- the triple: spectral analysis and hypotheses */                                        \
  X(I32, flags, "AS_FLAG_* bits (see the schema documentation)")                                 \
  X(THEOREM, theorem, "theorem whose hypotheses hold")                                           \
  X(GEOM, predicted, "geometry the theorem predicts")                                            \
  X(EXPM, expm, "how e^{tV} was computed")                                                       \
  X(F64, lambda1_re, "leading eigenvalue of V (largest modulus), real part")                     \
  X(F64, lambda1_im, "leading eigenvalue of V, imaginary part")                                  \
  X(F64, lambda2_abs, "second largest modulus of an eigenvalue of V")                            \
  X(F64, gap, "lambda_1 - |lambda_2|")                                                           \
  X(F64, margin, "<Q phi_1, K phi_1> with the right eigenvector phi_1, |phi_1| = 1")             \
  X(F64, m_min_sym_eig, "smallest eigenvalue of (M + M^T)/2")                                    \
  X(F64, m_asym, "||M - M^T||_F / ||M||_F")                                                      \
  X(F64, angle_l1_phi1, "angle between left and right leading eigenvectors [degrees]")           \
  X(I32, kpos, "number of eigenvalues of V with positive real part")                             \
  X(I32, dim_f, "paranormal: dim F found (0 if not paranormal)")                                 \
  X(F64, eig_cond, "condition number of V's eigenvector matrix")                                 \
  /* ---- nearest theorem, hypothesis distances (classify.h; > 0: missed by) */                  \
  X(THEOREM, near_theorem, "nearest proved theorem (the one that holds if none nearer)")         \
  X(GEOM, near_predicted, "geometry the nearest theorem predicts")                               \
  X(F64, near_dist, "distance of the triple to near_theorem (0: it holds)")                      \
  X(F64, dist_v_identity, "||V - cI||_F / ||V||_F, c >= 0 nearest (0: V = cI)")                  \
  X(F64, dist_v_minus_identity, "||V - cI||_F / ||V||_F, c <= 0 nearest (0: V = -cI)")           \
  X(F64, dist_m_identity, "||M - cI||_F / ||M||_F, c >= 0 nearest (0: M = cI)")                  \
  X(F64, dist_m_symmetric, "||M - M^T||_F / ||M||_F (0: M symmetric)")                           \
  X(F64, dist_m_posdef, "-min eig((M + M^T)/2) / ||M||_F (< 0: definite)")                       \
  X(F64, dist_lead_real, "|Im lambda_1| / |lambda_1| (0: lambda_1 real)")                        \
  X(F64, dist_gap, "(|lambda_2| - Re lambda_1) / |lambda_1| (< 0: dominant)")                    \
  X(F64, dist_margin, "-<Q phi_1, K phi_1> / ||M||_F (< 0: margin positive)")                    \
  X(F64, dist_paranormal, "V to lambda I on F, 2 <= dim F < d (< 0: paranormal)")                \
  X(VERDICT, near_verdict, "verdict against the nearest theorem's prediction")                   \
  X(REASON, near_reason, "why near_verdict is unresolved or violated (none: consistent)")        \
  X(F64, near_t_decide, "horizon that would decide near_verdict (NaN: decided or none known)")   \
  /* ---- integration */                                                                         \
  X(OUTCOME, outcome, "how the integration ended")                                               \
  X(I64, steps, "accepted steps")                                                                \
  X(I64, rejected, "rejected steps (dopri5)")                                                    \
  X(F64, t_final, "time reached")                                                                \
  X(F64, settle_time, "time at which the configuration settled (NaN: never)")                    \
  X(F64, velocity, "final max_i |z_i'| relative to the radius max_i |z_i - mean|")               \
  X(F64, spread, "diameter max_ij |Y_i - Y_j| of the classified coordinates (NaN: none)")        \
  /* ---- classification */                                                                      \
  X(GEOM, observed, "observed geometry")                                                         \
  X(VERDICT, verdict, "verdict against the prediction")                                          \
  X(REASON, reason, "why the verdict is unresolved or violated (none: consistent, no verdict)")  \
  X(F64, t_decide, "horizon that would decide the verdict (NaN: decided or none known)")         \
  X(I32, n_clusters, "clusters of the settled tokens")                                           \
  X(I32, n_clusters_all, "clusters of every token at T, settled or not (-1: not classified)")    \
  X(I32, n_unresolved, "tokens not settled (in no cluster)")                                     \
  X(I32, n_leaders, "tokens that receive whole rows of P")                                       \
  X(I32, rank_p,                                                                                 \
    "numerical rank of P at the end (estimated for n > 512, -1 above 4096: theory.md)")          \
  X(I32, n_vertices, "clusters that are vertices of their convex hull")                          \
  X(I32, n_levels, "distinct limits of l_1^T z (good) or of pi_F z (codim k)")                   \
  X(F64, cluster_tol, "distance under which tokens are one cluster")                             \
  X(F64, p_bool_dist, "max distance of an entry of P from {0, 1}")                               \
  X(F64, p_uniform_dist, "max |P_ij - 1/n|")                                                     \
  X(F64, max_norm_x, "max_i |x_i(T)|")                                                           \
  X(F64, level_a, "lowest level of l_1^T z (good)")                                              \
  X(F64, level_b, "highest level of l_1^T z (good)")                                             \
  X(F64, verdict_margin, "the distance or count that decided the verdict")                       \
  X(I32, leaders_init_vertices, "leaders that were vertices of the initial hull")                \
  X(F64, mean_shift, "|mean Y(T) - mean Y(0)| / initial spread (theorem coordinates)")           \
  X(F64, residual, "res(X) = ||X - 1 mean(X)^T||_F / ||X||_F of the final tokens")               \
  X(I32, rank_p_head_min, "blocks field trials: smallest rank of a head's final P^h (-1: none)") \
  X(I32, rank_p_head_max, "blocks field trials: largest rank of a head's final P^h (-1: none)")  \
  X(F64, sep_gap, "min gap of cluster pairs along their centre line / spread (> 0: separable)")  \
  /* ---- attention normalisations, metastability (docs/variants.md) */                          \
  X(F64, sinkhorn_dev, "Sinkhorn, both kinds: largest |row/column sum - 1| over the run")        \
  X(I32, sinkhorn_missed, "sinkhorn: evaluations of P left above sinkhorn_tol (-1: none)")       \
  X(I32, n_plateaus, "plateaus: >= 2 clusters for >= 2 time units (-1: none)")                   \
  X(F64, plateau_start, "start of the longest plateau (NaN: none)")                              \
  X(F64, plateau_length, "length of the longest plateau (NaN: none)")                            \
  X(F64, t_last_merge, "time the cluster count last dropped (NaN: none)")                        \
  X(I32, n_clusters_track, "cluster count at the end, step-wise count (-1: none)")               \
  /* ---- the empirical measure (measure.h, docs/meanfield.md) */                                \
  X(F64, mass_1, "largest cluster mass: its tokens / n (0: no such cluster, NaN: none)")         \
  X(F64, mass_2, "second largest cluster mass")                                                  \
  X(F64, mass_3, "third largest cluster mass")                                                   \
  X(F64, mass_4, "4th largest cluster mass")                                                     \
  X(F64, mass_5, "5th largest cluster mass")                                                     \
  X(F64, mass_6, "6th largest cluster mass")                                                     \
  X(F64, mass_7, "7th largest cluster mass")                                                     \
  X(F64, mass_8, "8th largest cluster mass")                                                     \
  X(F64, mass_rest, "1 - mass_1 - ... - mass_8: smaller clusters and unresolved tokens")         \
  X(I32, hull_vertices, "vertices of the hull of the final tokens (Y; -1: not counted)")         \
  X(I32, hull_vertices_init, "vertices of the hull of the initial tokens, same coordinates")     \
  X(F64, ref_w1, "W1 of the cluster measures of this trial and its reference_n run")             \
  X(I32, ref_n_clusters, "clusters of the reference_n run (-1: none)")                           \
  /* ---- bookkeeping (excluded from reproducibility comparisons) */                             \
  X(F64, wall_time, "seconds spent on the trial")                                                \
  X(I32, rank, "MPI rank that ran it")                                                           \
  X(MSG, message, "error message of a failed trial, else empty")

#define AS_CT_U64 uint64_t
#define AS_CT_I64 int64_t
#define AS_CT_I32 int32_t
#define AS_CT_F64 double
#define AS_CT_HASH uint64_t
#define AS_CT_LABEL int32_t
#define AS_CT_ENUM int32_t
#define AS_CT_EXPM int32_t
#define AS_CT_THEOREM int32_t
#define AS_CT_GEOM int32_t
#define AS_CT_VERDICT int32_t
#define AS_CT_REASON int32_t
#define AS_CT_OUTCOME int32_t
#define AS_CT_MSG char
#define AS_DIM_U64
#define AS_DIM_I64
#define AS_DIM_I32
#define AS_DIM_F64
#define AS_DIM_HASH
#define AS_DIM_LABEL
#define AS_DIM_ENUM
#define AS_DIM_EXPM
#define AS_DIM_THEOREM
#define AS_DIM_GEOM
#define AS_DIM_VERDICT
#define AS_DIM_REASON
#define AS_DIM_OUTCOME
#define AS_DIM_MSG [AS_RECORD_MSG]

typedef struct as_record {
#define AS_X_FIELD(kind, name, doc) AS_CT_##kind name AS_DIM_##kind;
  AS_RECORD_FIELDS(AS_X_FIELD)
#undef AS_X_FIELD
} as_record;

struct as_trial;
/* Zero a record, set NaN in every F64 field and -1 in every LABEL field, and copy the sweep
 * coordinates of trial t: each recorded key's value where it applies to t (params.h), else
 * NaN (F64), -1 (I32, LABEL) or 0 (HASH). t = NULL: the fill record of a pending row. */
void as_record_init(as_record *r, const struct as_trial *t);
/* The enumeration of an ENUM field (the etab of the key recorded in it), or NULL when `field`
 * is not an ENUM field. */
const as_enum_table *as_record_enum_table(const char *field);
/* Zero the bookkeeping fields (wall_time, rank) so records can be compared bytewise. */
void as_record_strip_timing(as_record *r);

#endif /* ATTNSWEEP_RECORD_H */
