/* theorem.c: the theorem table (theorem.h), each theorem's hypotheses and verdict. */
#include "attnsweep/theorem.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

#include "attnsweep/near.h"
#include "attnsweep/trial.h"
#include "verdict.h"

AS_ENUM_TABLE_DEFINE(as_thm_model_table, AS_THM_MODEL_LIST, "model", AS_THM_MODEL_COUNT)
AS_ENUM_TABLE_DEFINE(as_thm_reading_table, AS_THM_READING_LIST, "reading", AS_READ_COUNT)
AS_ENUM_TABLE_DEFINE(as_thm_rate_table, AS_THM_RATE_LIST, "rate", AS_RATE_COUNT)
AS_ENUM_TABLE_DEFINE(as_thm_sep_table, AS_THM_SEP_LIST, "separation", AS_SEP_COUNT)

/* ------------------------------------------------------------------ hypotheses */

static int has(const as_spectral *sp, uint32_t bits) {
  return (sp->flags & bits) == bits;
}

static int holds_d1(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)sp, (void)tol;
  return tr->d == 1 && tr->V[0] > 0 && tr->M[0] > 0;
}
static int holds_identity(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)tr, (void)tol;
  return has(sp, AS_FLAG_V_IDENTITY | AS_FLAG_M_SPD);
}
static int holds_minus_identity(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)tr, (void)tol;
  return has(sp, AS_FLAG_V_MINUS_IDENTITY | AS_FLAG_M_IDENTITY);
}
static int holds_paranormal(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)tr, (void)tol;
  return has(sp, AS_FLAG_PARANORMAL | AS_FLAG_M_SPD) && sp->dim_f >= 2;
}
static int holds_good(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)tr, (void)tol;
  return has(sp, AS_FLAG_GOOD);
}
static int holds_complex(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)tr, (void)tol;
  return has(sp, AS_FLAG_COMPLEX_LEAD);
}

/* Where the codimension conjecture is judged (docs/theory.md 2.8): read literally, "pi_F z
 * approaches at most three parallel affine subspaces of codimension k" says "at most three
 * points" at k = d, which Thm 3.1 contradicts (V = I, M = I ends at 4 to 8 vertices), and for
 * a V that is lambda I on F with dim F >= 2 it contradicts Thm 5.1 (a polytope in F). So it
 * applies for 1 <= k < d only, and not when the k eigenvalues of positive real part are one
 * repeated real value. */
static int holds_codim(const as_triple *tr, const as_spectral *sp, double tol) {
  const int d = tr->d;
  const double et = tol * as_spectral_eig_scale(sp);
  if (sp->kpos < 1 || sp->kpos >= d) return 0;
  if (sp->kpos == 1) return 1;
  double lo = INFINITY, hi = -INFINITY, im = 0;
  for (int i = 0; i < d; i++)
    if (sp->wr[i] > et) {
      lo = fmin(lo, sp->wr[i]);
      hi = fmax(hi, sp->wr[i]);
      im = fmax(im, fabs(sp->wi[i]));
    }
  return !(hi - lo <= et && im <= et);
}

/* Whether A (d x d) is a I with a > 0 (relative tolerance 1e-12). */
static int positive_scalar(int d, const double *A) {
  double tr = 0.0, off = 0.0;
  for (int i = 0; i < d; i++) tr += A[(size_t)i * d + i];
  tr /= d;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) off = fmax(off, fabs(A[(size_t)i * d + j] - (i == j ? tr : 0.0)));
  return tr > 0.0 && off <= 1e-12 * tr;
}
static int holds_sphere(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)sp, (void)tol;
  return tr->d >= 3 && positive_scalar(tr->d, tr->V) && positive_scalar(tr->d, tr->M);
}
static int holds_causal(const as_triple *tr, const as_spectral *sp, double tol) {
  (void)sp, (void)tol;
  return tr->d >= 2 && positive_scalar(tr->d, tr->V);
}

/* Coordinates of the near-miss analysis (near.h): good needs a finite l_1 (lambda_1 real and
 * simple), paranormal the projector onto an F of dimension paranormal_f, d1 needs d = 1. */
static int readable_d1(const as_triple *tr, const as_spectral *sp, int pf) {
  (void)sp, (void)pf;
  return tr->d == 1;
}
static int readable_paranormal(const as_triple *tr, const as_spectral *sp, int pf) {
  (void)tr;
  return pf >= 2 && sp->dim_f == pf;
}
static int readable_good(const as_triple *tr, const as_spectral *sp, int pf) {
  (void)tr, (void)pf;
  return has(sp, AS_FLAG_LEAD_REAL | AS_FLAG_LEAD_SIMPLE) && isfinite(sp->l1[0]);
}

/* ------------------------------------------------------------------ verdicts (classify.h) */

/* Some token not settled: unresolved, whatever the theorem. Returns 1 when it applied. */
static int unsettled(const as_verdict_ctx *c, as_record *rec) {
  if (c->n_unresolved == 0) return 0;
  rec->verdict = AS_VERDICT_UNRESOLVED;
  rec->reason = AS_REASON_MOVING;
  rec->observed = AS_GEOM_UNRESOLVED;
  rec->verdict_margin = c->unresolved_margin;
  return 1;
}

/* identity, paranormal: every centre a vertex, at zero, or not interior. */
static as_status verdict_polytope(as_verdict_ctx *c, as_record *rec) {
  as_status st = AS_OK;
  int nv = 0;
  double worst = 0.0;
  if (unsettled(c, rec)) goto cleanup;
  AS_TRY(as_verdict_hull(c, 1, &nv, &worst));
  rec->n_vertices = nv;
  rec->verdict_margin = worst;
  if (worst > 1.0 && !(c->sep_t >= AS_CLASSIFY_SEP)) {
    rec->verdict = AS_VERDICT_UNRESOLVED; /* too early to call it (classify.h: separation) */
    rec->reason = AS_REASON_METASTABLE;
    rec->observed = as_verdict_generic(c);
    rec->verdict_margin = AS_CLASSIFY_SEP / c->sep_t;
  } else if (worst > 1.0) {
    rec->verdict = AS_VERDICT_VIOLATED;
    rec->reason = AS_REASON_INTERIOR;
    rec->observed = as_verdict_generic(c);
  } else {
    rec->verdict = AS_VERDICT_CONSISTENT;
    rec->observed = c->n_clusters == 1 ? AS_GEOM_SINGLE : c->row->predicted;
  }
cleanup:
  return st;
}

/* good (levels of l_1^T z, the middle one at zero) and codim_k: at most 3 limits. */
static as_status verdict_levels(as_verdict_ctx *c, as_record *rec, int middle_at_zero) {
  as_status st = AS_OK;
  int nv = 0;
  double worst = 0.0;
  if (unsettled(c, rec)) goto cleanup;
  AS_TRY(as_verdict_hull(c, 0, &nv, &worst));
  rec->n_vertices = nv;
  rec->n_levels = c->n_clusters;
  rec->verdict_margin = c->n_clusters / 3.0;
  int ok = c->n_clusters <= 3;
  as_reason why = ok ? AS_REASON_NONE : AS_REASON_LEVELS;
  if (middle_at_zero) {
    const double *C = c->centres;
    double lo = C[0], hi = C[0], mid = 0.0;
    for (int k = 1; k < c->n_clusters; k++) lo = fmin(lo, C[k]), hi = fmax(hi, C[k]);
    rec->level_a = lo;
    rec->level_b = hi;
    if (c->n_clusters == 3) {
      for (int k = 0; k < 3; k++)
        if (C[k] != lo && C[k] != hi) mid = C[k];
      double ratio = fabs(mid) / c->cluster_tol;
      if (ratio > 1.0) ok = 0, why = AS_REASON_MIDDLE;
      rec->verdict_margin = fmax(1.0, ratio);
    }
  }
  rec->verdict = ok ? AS_VERDICT_CONSISTENT : AS_VERDICT_VIOLATED;
  rec->reason = why;
  rec->observed = ok ? c->row->predicted : as_verdict_generic(c);
  if (!ok && !(c->sep_t >= AS_CLASSIFY_SEP)) {
    rec->verdict = AS_VERDICT_UNRESOLVED; /* too early to call it (classify.h: separation) */
    rec->reason = AS_REASON_METASTABLE;
    rec->verdict_margin = AS_CLASSIFY_SEP / c->sep_t;
  }
cleanup:
  return st;
}
static as_status verdict_hyperplanes(as_verdict_ctx *c, as_record *rec) {
  return verdict_levels(c, rec, 1);
}
static as_status verdict_subspaces(as_verdict_ctx *c, as_record *rec) {
  return verdict_levels(c, rec, 0);
}

/* sphere, causal: one cluster, eventually; several settled clusters are metastable. */
static as_status verdict_one_cluster(as_verdict_ctx *c, as_record *rec) {
  if (unsettled(c, rec)) return AS_OK;
  rec->verdict_margin = c->n_clusters;
  rec->verdict = c->n_clusters == 1 ? AS_VERDICT_CONSISTENT : AS_VERDICT_UNRESOLVED;
  rec->reason = c->n_clusters == 1 ? AS_REASON_NONE : AS_REASON_MERGING;
  rec->observed = as_verdict_generic(c);
  return AS_OK;
}

/* minus_identity: collapsed when max_i |x_i| <= tau_x (classify.h, collapse). */
static as_status verdict_collapse(as_verdict_ctx *c, as_record *rec) {
  const double t = c->t;
  double tau = fmin(1.0, sqrt((double)c->n * c->d / (2.0 * fmax(t, DBL_MIN))));
  double mx = rec->max_norm_x;
  rec->verdict_margin = mx / tau;
  if (mx <= tau) {
    rec->verdict = AS_VERDICT_CONSISTENT;
    rec->observed = AS_GEOM_COLLAPSE;
    rec->n_clusters = 1;
    rec->n_unresolved = 0;
    rec->cluster_tol = tau;
    as_verdict_clear_labels(c);
  } else if (c->vmax < AS_CLASSIFY_STALL * mx / (2.0 * t + 1.0)) {
    rec->verdict = AS_VERDICT_VIOLATED;
    rec->reason = AS_REASON_STALLED;
    rec->observed = as_verdict_generic(c);
  } else {
    rec->verdict = AS_VERDICT_UNRESOLVED;
    rec->reason = AS_REASON_MOVING;
    rec->observed = AS_GEOM_UNRESOLVED;
  }
  return AS_OK;
}

/* d1: every row of P is e_argmin(x0) or e_argmax(x0) except at most one, rank_p <= 3. */
static as_status verdict_boolean(as_verdict_ctx *c, as_record *rec) {
  as_status st = AS_OK;
  const as_classify_input *in = c->in;
  const int n = c->n, d = c->d;
  if (!in->P) { /* the rows of P decide; not formed for this many tokens */
    rec->verdict = AS_VERDICT_NO_PREDICTION;
    rec->observed = as_verdict_generic(c);
    goto cleanup;
  }
  int lo = 0, hi = 0;
  for (int i = 1; i < n; i++) {
    if (in->Z0[(size_t)i * d] < in->Z0[(size_t)lo * d]) lo = i;
    if (in->Z0[(size_t)i * d] > in->Z0[(size_t)hi * d]) hi = i;
  }
  int exc = 0, unsat = 0;
  for (int i = 0; i < n; i++) {
    const double *row = in->P + (size_t)i * n;
    if (row[lo] >= 1.0 - AS_CLASSIFY_BOOL_TOL || row[hi] >= 1.0 - AS_CLASSIFY_BOOL_TOL) continue;
    exc++;
    double mx = 0.0;
    for (int j = 0; j < n; j++) mx = fmax(mx, row[j]);
    if (mx < 1.0 - AS_CLASSIFY_BOOL_TOL) unsat++;
  }
  int nv = 0;
  double worst = 0.0;
  AS_TRY(as_verdict_hull(c, 0, &nv, &worst));
  rec->n_vertices = nv;
  rec->verdict_margin = fmax((double)exc, rec->rank_p / 3.0);
  if (exc <= 1 && rec->rank_p <= 3) {
    rec->verdict = AS_VERDICT_CONSISTENT;
    rec->observed = AS_GEOM_BOOLEAN;
  } else if ((unsat > 0 && exc - unsat <= 1) ||
             (exc <= 1 && rec->p_bool_dist > AS_CLASSIFY_RANK_RTOL)) {
    rec->verdict = AS_VERDICT_UNRESOLVED; /* rows still mixing: P not yet at its limit */
    rec->reason = AS_REASON_MIXING;
    rec->observed = AS_GEOM_UNRESOLVED;
  } else {
    rec->verdict = AS_VERDICT_VIOLATED;
    rec->reason = AS_REASON_NOT_BOOLEAN;
    rec->observed = as_verdict_generic(c);
  }
cleanup:
  return st;
}

/* none, complex: no theorem, label what is seen. */
static as_status verdict_none(as_verdict_ctx *c, as_record *rec) {
  as_status st = AS_OK;
  if (c->n_unresolved == 0 && c->n_clusters > 1) {
    int nv = 0;
    double worst = 0.0;
    AS_TRY(as_verdict_hull(c, 0, &nv, &worst));
    rec->n_vertices = nv;
  }
  rec->verdict = AS_VERDICT_NO_PREDICTION;
  rec->observed = as_verdict_generic(c);
cleanup:
  return st;
}

/* ------------------------------------------------------------------ the table */

#define HYP(h) AS_NEAR_HYP(h)
static const as_theorem_row rows[] = {
    {AS_THM_D1, AS_THM_MODEL_BASE, 0, HYP(gap) | HYP(m_posdef), AS_GEOM_BOOLEAN, AS_READ_Z,
     AS_RATE_LAMBDA1, AS_SEP_NONE, holds_d1, readable_d1, verdict_boolean, "V > 0 (d = 1)",
     "QK > 0", "P Boolean, rank P <= 3", "Thm 2.1",
     "exceptional rows of P, `rank_p`, `p_bool_dist`", "Thm~2.1", "$d = 1$, $V > 0$; $QK > 0$",
     "$P$ Boolean, $\\mathrm{rank}\\,P \\le 3$"},
    {AS_THM_IDENTITY, AS_THM_MODEL_BASE, AS_FLAG_V_IDENTITY | AS_FLAG_M_SPD,
     HYP(v_identity) | HYP(m_symmetric) | HYP(m_posdef), AS_GEOM_POLYTOPE, AS_READ_Z,
     AS_RATE_LAMBDA1, AS_SEP_NONE, holds_identity, NULL, verdict_polytope, "V = I", "Q^T K SPD",
     "polytope (clusters at its vertices, 0, boundary)", "Thm 3.1", "`n_clusters`, `n_vertices`",
     "Thm~3.1", "$V = I$; $Q^\\top K$ SPD",
     "polytope: clusters at its vertices, at $0$ or on its boundary"},
    {AS_THM_MINUS_IDENTITY, AS_THM_MODEL_BASE, AS_FLAG_V_MINUS_IDENTITY | AS_FLAG_M_IDENTITY,
     HYP(v_minus_identity) | HYP(m_identity), AS_GEOM_COLLAPSE, AS_READ_X, AS_RATE_UNIT,
     AS_SEP_NONE, holds_minus_identity, NULL, verdict_collapse, "V = -I", "Q^T K = I",
     "collapse: x -> 0, P -> J/n", "Thm C.5", "`max_norm_x`", "Thm~C.5",
     "$V = -I$; $Q^\\top K = I$", "collapse: $x \\to 0$, $P \\to J/n$"},
    {AS_THM_PARANORMAL, AS_THM_MODEL_BASE, AS_FLAG_PARANORMAL | AS_FLAG_M_SPD,
     HYP(paranormal) | HYP(m_symmetric) | HYP(m_posdef), AS_GEOM_POLYTOPE_SUBSPACE, AS_READ_F,
     AS_RATE_LAMBDA1, AS_SEP_PARANORMAL, holds_paranormal, readable_paranormal, verdict_polytope,
     "paranormal: lambda I on F, rho < lambda on G", "Q^T K SPD", "polytope in F x subspace G",
     "Thm 5.1", "`n_clusters`, `n_vertices`, `dim_f`", "Thm~5.1",
     "paranormal: $V = \\lambda I$ on $F$, $\\rho(V|_G) < \\lambda$; $Q^\\top K$ SPD",
     "$\\pi_F z$ on a polytope in $F$ (or $0$); $G$ free"},
    {AS_THM_GOOD, AS_THM_MODEL_BASE, AS_FLAG_GOOD, HYP(lead_real) | HYP(gap) | HYP(margin),
     AS_GEOM_HYPERPLANES, AS_READ_L1, AS_RATE_LAMBDA1, AS_SEP_GOOD, holds_good, readable_good,
     verdict_hyperplanes, "good: lambda_1 real > 0, simple, dominant", "<Q phi_1, K phi_1> > 0",
     "<= 3 parallel hyperplanes l_1^T z in {a, 0, b}", "Thm 4.1",
     "`n_levels`, `level_a`, `level_b`", "Thm~4.1",
     "good: $\\lambda_1$ real, $> 0$, simple, dominant; $\\langle Q\\varphi_1,$ "
     "$K\\varphi_1\\rangle > 0$",
     "$\\le 3$ parallel hyperplanes $l_1^\\top z \\in \\{a, 0, b\\}$"},
    {AS_THM_COMPLEX, AS_THM_MODEL_BASE, AS_FLAG_COMPLEX_LEAD, 0, AS_GEOM_UNCLUSTERED, AS_READ_SEEN,
     AS_RATE_SEEN, AS_SEP_NONE, holds_complex, NULL, verdict_none, "complex leading pair", "any",
     "no clustering expected", "-", "no verdict", "complex",
     "leading eigenvalues of $V$ a complex pair", "no clustering expected"},
    {AS_THM_CODIM, AS_THM_MODEL_BASE, 0, 0, AS_GEOM_SUBSPACES, AS_READ_POS, AS_RATE_MIN_POSITIVE,
     AS_SEP_CODIM, holds_codim, NULL, verdict_subspaces, "1 <= k < d eigenvalues with Re > 0",
     "any", "<= 3 parallel affine subspaces, codim k", "conjecture", "`n_levels`", "conjecture",
     "$k$ eigenvalues of $V$ with $\\mathrm{Re} > 0$",
     "$\\le 3$ parallel affine subspaces of codimension $k$"},
    {AS_THM_SPHERE, AS_THM_MODEL_SPHERE, 0, 0, AS_GEOM_SINGLE, AS_READ_Z, AS_RATE_LAMBDA1,
     AS_SEP_NONE, holds_sphere, NULL, verdict_one_cluster, "sphere (layer norm), V = I, d >= 3",
     "Q = K = I", "one cluster (metastable phases first)", "GLPR 2023", "`n_clusters`", "GLPR~2023",
     "tokens on the sphere, $d \\ge 3$; $Q = K = V = I$",
     "one cluster (after metastable phases for large $\\beta$)"},
    {AS_THM_CAUSAL, AS_THM_MODEL_CAUSAL, 0, 0, AS_GEOM_SINGLE, AS_READ_Z, AS_RATE_LAMBDA1,
     AS_SEP_NONE, holds_causal, NULL, verdict_one_cluster, "sphere, causal mask, V = I", "any",
     "one cluster (at x_1(0))", "KPR 2024", "`n_clusters`", "KPR~2024",
     "sphere, causal mask; $V = I$, any $Q, K$", "one cluster at $x_1(0)$"},
    {AS_THM_NONE, AS_THM_MODEL_OTHER, 0, 0, AS_GEOM_NONE, AS_READ_SEEN, AS_RATE_SEEN, AS_SEP_NONE,
     NULL, NULL, verdict_none, "otherwise", "-", "no prediction", "-", "no verdict", "none",
     "otherwise", "no prediction"},
};
#undef HYP
enum { N_ROWS = sizeof rows / sizeof rows[0] };

const as_theorem_row *as_theorem_rows(int *count) {
  if (count) *count = N_ROWS;
  return rows;
}

const as_theorem_row *as_theorem_row_of(as_theorem id) {
  for (int i = 0; i < N_ROWS; i++)
    if (rows[i].id == id) return &rows[i];
  return NULL;
}

as_thm_model as_theorem_model_of(const as_attn_spec *am, int hardmax, int field) {
  if (field) return AS_THM_MODEL_OTHER;
  if (as_attn_is_base(am, hardmax)) return AS_THM_MODEL_BASE;
  if (hardmax || am->attention != AS_ATTN_SOFTMAX || am->norm != AS_NORM_SPHERE)
    return AS_THM_MODEL_OTHER;
  return am->mask == AS_MASK_CAUSAL ? AS_THM_MODEL_CAUSAL : AS_THM_MODEL_SPHERE;
}

as_theorem as_theorem_select(as_thm_model m, const as_triple *tr, const as_spectral *sp, double tol,
                             as_geom *pred) {
  for (int i = 0; i < N_ROWS; i++)
    if (rows[i].model == m && rows[i].holds && rows[i].holds(tr, sp, tol)) {
      if (pred) *pred = rows[i].predicted;
      return rows[i].id;
    }
  if (pred) *pred = AS_GEOM_NONE;
  return AS_THM_NONE;
}

/* Smallest positive real part of the spectrum (0 if none). */
static double min_positive_rate(const as_spectral *sp) {
  double best = 0.0;
  for (int i = 0; i < sp->d; i++)
    if (sp->wr[i] > 0.0 && (best == 0.0 || sp->wr[i] < best)) best = sp->wr[i];
  return best;
}

double as_theorem_rate(const as_theorem_row *r, const as_spectral *sp) {
  double rho = 1.0;
  switch (r->rate) {
  case AS_RATE_LAMBDA1:
    rho = sp->lambda1_re;
    break;
  case AS_RATE_MIN_POSITIVE:
    rho = min_positive_rate(sp);
    break;
  case AS_RATE_UNIT: /* only labels use it: collapse is algebraic (classify.h) */
    rho = 1.0;
    break;
  case AS_RATE_SEEN:
  case AS_RATE_COUNT:
    rho = min_positive_rate(sp);
    if (!(rho > 0.0)) rho = fmax(hypot(sp->lambda1_re, sp->lambda1_im), 1e-300);
    break;
  }
  return rho > 0.0 && isfinite(rho) ? rho : 1.0;
}

double as_theorem_separation(const as_theorem_row *r, const as_spectral *sp) {
  const int d = sp->d;
  const double l1 = sp->lambda1_re;
  if (r->sep == AS_SEP_NONE) return INFINITY;
  if (r->sep == AS_SEP_CODIM) {
    double fmin_re = INFINITY, gmax_re = -INFINITY;
    for (int i = 0; i < d; i++) {
      if (sp->wr[i] > 0.0)
        fmin_re = fmin(fmin_re, sp->wr[i]);
      else
        gmax_re = fmax(gmax_re, sp->wr[i]);
    }
    if (!isfinite(fmin_re)) return 0.0;
    return isfinite(gmax_re) ? fmin_re - gmax_re : fmin_re;
  }
  /* good: skip one copy of lambda_1; paranormal: skip every copy (F is its eigenspace). */
  double scale = fabs(l1) > 0.0 ? fabs(l1) : 1.0, other = 0.0;
  int skipped = 0;
  for (int i = 0; i < d; i++) {
    int is_l1 = fabs(sp->wr[i] - l1) <= 1e-10 * scale && fabs(sp->wi[i]) <= 1e-10 * scale;
    if (is_l1 && (r->sep == AS_SEP_PARANORMAL || !skipped)) {
      skipped = 1;
      continue;
    }
    other = fmax(other, hypot(sp->wr[i], sp->wi[i]));
  }
  return l1 - other;
}

double as_theorem_horizon(as_theorem id, const as_spectral *sp) {
  const as_theorem_row *r = as_theorem_row_of(id);
  if (!r || r->sep == AS_SEP_NONE) return NAN;
  const double sep = as_theorem_separation(r, sp);
  return sep > 0.0 && isfinite(sep) ? AS_CLASSIFY_SEP / sep : NAN;
}

size_t as_theorem_table_text(char *buf, size_t len) {
  size_t need = 0;
  for (int i = 0; i < N_ROWS; i++) {
    const as_theorem_row *r = &rows[i];
    int w = snprintf(need < len ? buf + need : NULL, need < len ? len - need : 0,
                     "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", i ? "\n" : "",
                     as_enum_label(&as_theorem_table, (int)r->id),
                     as_enum_label(&as_thm_model_table, (int)r->model), r->hyp_v, r->hyp_m,
                     r->prediction, r->reference, r->tex_name, r->tex_hyp, r->tex_pred);
    if (w > 0) need += (size_t)w;
  }
  return need;
}
