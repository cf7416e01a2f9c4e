/* The theorem table (theorem.h): every theorem of the enumeration has exactly one row with a
 * verdict; the rows' precedence decides the theorem of triples whose answer the paper gives
 * (V = I, -I, a Perron V, a paranormal V, a rotation, d = 1); each model selects only its own
 * rows (the variants' theorems need their own hypotheses, e.g. d >= 3 and M = b I on the
 * sphere); a variant's nearest theorem is its own; the serialised Table 1 has one line of nine
 * fields per row; rates and separations are the closed forms of classify.h. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/near.h"
#include "attnsweep/spectral.h"
#include "attnsweep/theorem.h"
#include "attnsweep/trial.h"

#define TOL 1e-10

typedef struct fixture {
  as_triple *tr;
  as_spectral *sp;
} fixture;

/* Analyse (V, M) of dimension d (M NULL: I). Returns 0 on failure. */
static int analyse(fixture *fx, int d, const double *V, const double *M) {
  as_triple_destroy(&fx->tr);
  as_spectral_destroy(&fx->sp);
  if (as_triple_create(d, d, &fx->tr) != AS_OK || as_spectral_create(d, &fx->sp) != AS_OK) return 0;
  memcpy(fx->tr->V, V, sizeof(double) * (size_t)d * d);
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) fx->tr->M[i * d + j] = M ? M[i * d + j] : (i == j ? 1.0 : 0.0);
  as_status st = as_spectral_analyze(fx->tr, TOL, fx->sp);
  AS_EXPECT(st == AS_OK, "analyze: %s", as_error_get()->message);
  return st == AS_OK;
}

static void scaled_identity(int d, double s, double *A) {
  memset(A, 0, sizeof(double) * (size_t)d * d);
  for (int i = 0; i < d; i++) A[i * d + i] = s;
}

static const char *label(as_theorem t) {
  return as_enum_label(&as_theorem_table, (int)t);
}

static void test_rows(void) {
  int n = 0;
  const as_theorem_row *rows = as_theorem_rows(&n);
  AS_EXPECT(n == AS_THM_COUNT, "%d rows for %d theorems", n, (int)AS_THM_COUNT);
  for (int t = 0; t < AS_THM_COUNT; t++) {
    int count = 0;
    for (int i = 0; i < n; i++) count += rows[i].id == (as_theorem)t;
    AS_EXPECT(count == 1, "theorem %s has %d rows", label((as_theorem)t), count);
    const as_theorem_row *r = as_theorem_row_of((as_theorem)t);
    AS_EXPECT(r != NULL && r->id == (as_theorem)t, "row_of(%s)", label((as_theorem)t));
  }
  AS_EXPECT(as_theorem_row_of((as_theorem)AS_THM_COUNT) == NULL, "no row outside the enum");
  for (int i = 0; i < n; i++) {
    const as_theorem_row *r = &rows[i];
    AS_EXPECT(r->verdict != NULL, "%s has a verdict function", label(r->id));
    AS_EXPECT((r->holds != NULL) == (r->id != AS_THM_NONE), "%s: holds given unless none",
              label(r->id));
    AS_EXPECT(!r->near || r->model == AS_THM_MODEL_BASE, "%s: near misses only in the base model",
              label(r->id));
    AS_EXPECT(r->hyp_v && r->hyp_m && r->prediction && r->reference && r->decided_by &&
                  r->tex_name && r->tex_hyp && r->tex_pred,
              "%s: every text of Table 1", label(r->id));
    AS_EXPECT(strchr(r->hyp_v, '\t') == NULL && strchr(r->tex_hyp, '\n') == NULL,
              "%s: no separator inside a text", label(r->id));
  }
  AS_EXPECT(rows[n - 1].id == AS_THM_NONE, "none is the last row (the fallback)");
}

/* The base model's precedence on triples the paper answers. */
static void test_precedence(fixture *fx) {
  double V[9], M[9];
  struct {
    int d;
    double v[9], m[9];
    as_theorem want;
    const char *what;
  } cases[] = {
      {1, {2}, {3}, AS_THM_D1, "d = 1, V > 0, QK > 0 (also good: d1 first)"},
      {2, {1, 0, 0, 1}, {2, 0, 0, 1}, AS_THM_IDENTITY, "V = I, M SPD (also paranormal: first)"},
      {2, {-1, 0, 0, -1}, {1, 0, 0, 1}, AS_THM_MINUS_IDENTITY, "V = -I, M = I"},
      {3,
       {2, 0, 0, 0, 2, 0, 0, 0, 1},
       {1, 0, 0, 0, 1, 0, 0, 0, 1},
       AS_THM_PARANORMAL,
       "diag(2, 2, 1): lambda I on a plane"},
      {2, {0.9, 0.2, 0.3, 0.5}, {1, 0, 0, 1}, AS_THM_GOOD, "a Perron V, M = I"},
      {2, {0, -1, 1, 0}, {1, 0, 0, 1}, AS_THM_COMPLEX, "a rotation"},
      {3,
       {1, 0, 0, 0, -1, 0, 0, 0, -2},
       {1, 0, 0, 0, -1, 0, 0, 0, 1},
       AS_THM_CODIM,
       "one positive eigenvalue, M indefinite (not good)"},
      {2, {-1, 0, 0, -2}, {1, 0, 0, 1}, AS_THM_NONE, "every eigenvalue negative, V != -I"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int d = cases[c].d;
    memcpy(V, cases[c].v, sizeof(double) * (size_t)d * d);
    memcpy(M, cases[c].m, sizeof(double) * (size_t)d * d);
    if (!analyse(fx, d, V, M)) return;
    AS_EXPECT(fx->sp->theorem == cases[c].want, "%s: %s, want %s", cases[c].what,
              label(fx->sp->theorem), label(cases[c].want));
    as_geom pred;
    as_theorem t = as_theorem_select(AS_THM_MODEL_BASE, fx->tr, fx->sp, TOL, &pred);
    AS_EXPECT(t == fx->sp->theorem && pred == as_theorem_row_of(t)->predicted,
              "%s: select agrees with the analysis", cases[c].what);
  }
}

/* The model of a trial and the rows it may select. */
static void test_models(fixture *fx) {
  as_attn_spec base = {AS_ATTN_SOFTMAX, 1, 0.0, AS_MASK_NONE, AS_NORM_NONE, AS_NFORM_SA};
  as_attn_spec sphere = base, causal = base, sink = base;
  sphere.norm = causal.norm = AS_NORM_SPHERE;
  causal.mask = AS_MASK_CAUSAL;
  sink.attention = AS_ATTN_SINKHORN;
  AS_EXPECT(as_theorem_model_of(&base, 0, 0) == AS_THM_MODEL_BASE, "base");
  AS_EXPECT(as_theorem_model_of(&base, 1, 0) == AS_THM_MODEL_OTHER, "hardmax");
  AS_EXPECT(as_theorem_model_of(&base, 0, 1) == AS_THM_MODEL_OTHER, "a block field");
  AS_EXPECT(as_theorem_model_of(&sphere, 0, 0) == AS_THM_MODEL_SPHERE, "sphere");
  AS_EXPECT(as_theorem_model_of(&causal, 0, 0) == AS_THM_MODEL_CAUSAL, "causal");
  AS_EXPECT(as_theorem_model_of(&causal, 1, 0) == AS_THM_MODEL_OTHER, "causal hardmax");
  AS_EXPECT(as_theorem_model_of(&sink, 0, 0) == AS_THM_MODEL_OTHER, "sinkhorn");

  double V[9], M[9];
  as_geom pred;
  scaled_identity(3, 2.0, V);
  scaled_identity(3, 0.5, M);
  if (!analyse(fx, 3, V, M)) return;
  AS_EXPECT(as_theorem_select(AS_THM_MODEL_SPHERE, fx->tr, fx->sp, TOL, &pred) == AS_THM_SPHERE &&
                pred == AS_GEOM_SINGLE,
            "sphere: V = 2I, M = I/2, d = 3");
  AS_EXPECT(as_theorem_select(AS_THM_MODEL_CAUSAL, fx->tr, fx->sp, TOL, NULL) == AS_THM_CAUSAL,
            "causal: V = 2I");
  AS_EXPECT(as_theorem_select(AS_THM_MODEL_OTHER, fx->tr, fx->sp, TOL, &pred) == AS_THM_NONE &&
                pred == AS_GEOM_NONE,
            "other models: none");
  /* The variant's own nearest theorem, at distance 0; none at NaN. */
  fx->sp->theorem = AS_THM_SPHERE;
  fx->sp->predicted = AS_GEOM_SINGLE;
  as_near nr;
  AS_EXPECT(as_near_analyze(fx->tr, fx->sp, TOL, AS_THM_MODEL_SPHERE, &nr) == AS_OK &&
                nr.theorem == AS_THM_SPHERE && nr.dist == 0.0 && nr.predicted == AS_GEOM_SINGLE,
            "a sphere trial is nearest to its own theorem");
  fx->sp->theorem = AS_THM_NONE;
  AS_EXPECT(as_near_analyze(fx->tr, fx->sp, TOL, AS_THM_MODEL_OTHER, &nr) == AS_OK &&
                nr.theorem == AS_THM_NONE && isnan(nr.dist),
            "other models: no nearest theorem");
  M[1] = 0.3; /* M not a multiple of I: no sphere theorem; d = 2: none either */
  if (!analyse(fx, 3, V, M)) return;
  AS_EXPECT(as_theorem_select(AS_THM_MODEL_SPHERE, fx->tr, fx->sp, TOL, NULL) == AS_THM_NONE,
            "sphere needs M = b I");
  scaled_identity(2, 1.0, V);
  scaled_identity(2, 1.0, M);
  if (!analyse(fx, 2, V, M)) return;
  AS_EXPECT(as_theorem_select(AS_THM_MODEL_SPHERE, fx->tr, fx->sp, TOL, NULL) == AS_THM_NONE,
            "sphere needs d >= 3");
  AS_EXPECT(as_theorem_select(AS_THM_MODEL_CAUSAL, fx->tr, fx->sp, TOL, NULL) == AS_THM_CAUSAL,
            "causal in d = 2");
  scaled_identity(2, -1.0, V);
  if (!analyse(fx, 2, V, M)) return;
  AS_EXPECT(as_theorem_select(AS_THM_MODEL_CAUSAL, fx->tr, fx->sp, TOL, NULL) == AS_THM_NONE,
            "causal needs V = a I with a > 0");
}

/* Rates and separations against their closed forms on diagonal V. */
static void test_rates(fixture *fx) {
  double V[9], M[9];
  scaled_identity(3, 1.0, M);
  memset(V, 0, sizeof V);
  V[0] = 3, V[4] = 1, V[8] = -2; /* eigenvalues 3, -2, 1 */
  if (!analyse(fx, 3, V, M)) return;
  const as_theorem_row *good = as_theorem_row_of(AS_THM_GOOD);
  const as_theorem_row *codim = as_theorem_row_of(AS_THM_CODIM);
  const as_theorem_row *minus = as_theorem_row_of(AS_THM_MINUS_IDENTITY);
  const as_theorem_row *none = as_theorem_row_of(AS_THM_NONE);
  AS_EXPECT(as_theorem_rate(good, fx->sp) == 3.0, "good: rate lambda_1 = 3");
  AS_EXPECT(as_theorem_rate(codim, fx->sp) == 1.0, "codim: smallest positive real part 1");
  AS_EXPECT(as_theorem_rate(minus, fx->sp) == 1.0, "minus_identity: 1");
  AS_EXPECT(as_theorem_separation(good, fx->sp) == 1.0, "good: 3 - |-2| = 1");
  AS_EXPECT(as_theorem_separation(codim, fx->sp) == 3.0, "codim: min Re on F 1 - max off F -2");
  AS_EXPECT(isinf(as_theorem_separation(none, fx->sp)), "none: no separation");
  scaled_identity(2, -1.0, V);
  V[3] = -3; /* no positive eigenvalue: the fallback |lambda_1| = 3 */
  if (!analyse(fx, 2, V, M)) return;
  AS_EXPECT(as_theorem_rate(none, fx->sp) == 3.0, "none without a positive eigenvalue: |lambda_1|");
}

static void test_text(void) {
  char buf[8192];
  size_t need = as_theorem_table_text(NULL, 0);
  size_t got = as_theorem_table_text(buf, sizeof buf);
  AS_EXPECT(need == got && got < sizeof buf && strlen(buf) == got, "length %zu, %zu", need, got);
  char small[16];
  AS_EXPECT(as_theorem_table_text(small, sizeof small) == got && strlen(small) == 15,
            "truncated like snprintf");
  int lines = 1, tabs = 0, ok = 1;
  for (const char *c = buf;; c++) {
    if (*c == '\t') tabs++;
    if (*c == '\n' || *c == '\0') {
      ok &= tabs == 8;
      tabs = 0;
      if (*c == '\0') break;
      lines++;
    }
  }
  AS_EXPECT(lines == AS_THM_COUNT && ok, "%d lines of 9 fields", lines);
  AS_EXPECT(strncmp(buf, "d1\tbase\t", 8) == 0, "the first row is d1 of the base model");
}

int main(void) {
  fixture fx = {0};
  test_rows();
  test_precedence(&fx);
  test_models(&fx);
  test_rates(&fx);
  test_text();
  as_triple_destroy(&fx.tr);
  as_spectral_destroy(&fx.sp);
  return as_test_finish("test_theorem");
}
