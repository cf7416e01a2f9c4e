/* Hypothesis distances and the nearest theorem (as_near_analyze, near.h) on triples whose
 * distances are known in closed form: for each proved theorem a triple inside it, one exactly on
 * a hypothesis boundary and one just outside, with the expected nearest theorem and the signs
 * (and values) of the distances. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/near.h"
#include "attnsweep/spectral.h"

#define TOL 1e-10

typedef struct fixture {
  as_triple *tr;
  as_spectral *sp;
  as_near nr;
} fixture;

/* Analyse (V, M) of dimension d (M NULL: I) and fill fx->nr. Returns 0 on failure. */
static int near_of(fixture *fx, int d, const double *V, const double *M) {
  as_triple_destroy(&fx->tr);
  as_spectral_destroy(&fx->sp);
  if (as_triple_create(d, d, &fx->tr) != AS_OK || as_spectral_create(d, &fx->sp) != AS_OK) return 0;
  memcpy(fx->tr->V, V, sizeof(double) * (size_t)d * d);
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) fx->tr->M[i * d + j] = M ? M[i * d + j] : (i == j ? 1.0 : 0.0);
  as_status st = as_spectral_analyze(fx->tr, TOL, fx->sp);
  AS_EXPECT(st == AS_OK, "analyze: %s", as_error_get()->message);
  if (st != AS_OK) return 0;
  st = as_near_analyze(fx->tr, fx->sp, TOL, AS_THM_MODEL_BASE, &fx->nr);
  AS_EXPECT(st == AS_OK, "near: %s", as_error_get()->message);
  return st == AS_OK;
}

static void diag(int d, const double *v, double *A) {
  memset(A, 0, sizeof(double) * (size_t)d * d);
  for (int i = 0; i < d; i++) A[i * d + i] = v[i];
}

#define EXPECT_THM(fx, th, near)                                        \
  do {                                                                  \
    AS_EXPECT((fx)->sp->theorem == (th), "theorem %s, want %s",         \
              as_enum_label(&as_theorem_table, (int)(fx)->sp->theorem), \
              as_enum_label(&as_theorem_table, (int)(th)));             \
    AS_EXPECT((fx)->nr.theorem == (near), "near theorem %s, want %s",   \
              as_enum_label(&as_theorem_table, (int)(fx)->nr.theorem),  \
              as_enum_label(&as_theorem_table, (int)(near)));           \
  } while (0)

/* Polytope theorem [Thm 3.1]: V = I, M symmetric positive definite. */
static void test_identity(fixture *fx) {
  const double I2[4] = {1, 0, 0, 1};
  double M[4];
  /* inside: M = diag(1, 0.5); every distance of the theorem <= 0, the nearest is itself */
  diag(2, (double[]){1, 0.5}, M);
  if (!near_of(fx, 2, I2, M)) return;
  EXPECT_THM(fx, AS_THM_IDENTITY, AS_THM_IDENTITY);
  AS_EXPECT(fx->nr.dist == 0.0, "near_dist %g", fx->nr.dist);
  AS_EXPECT(fx->nr.v_identity == 0.0 && fx->nr.m_symmetric == 0.0, "equalities hold at 0");
  AS_EXPECT_CLOSE(fx->nr.m_posdef, -0.5 / sqrt(1.25), 1e-14, 0);
  AS_EXPECT(fx->nr.predicted == AS_GEOM_POLYTOPE, "prediction polytope");
  /* on the boundary: M = diag(1, 0) is positive semidefinite only: distance exactly 0, the
   * theorem does not hold, its distance is 0 and it is the nearest */
  diag(2, (double[]){1, 0}, M);
  if (!near_of(fx, 2, I2, M)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_IDENTITY);
  AS_EXPECT(fx->nr.m_posdef == 0.0, "dist_m_posdef %g on the boundary", fx->nr.m_posdef);
  AS_EXPECT(fx->nr.dist == 0.0, "near_dist %g", fx->nr.dist);
  /* just outside: M = diag(1, -0.1): -min eig / ||M||_F */
  diag(2, (double[]){1, -0.1}, M);
  if (!near_of(fx, 2, I2, M)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_IDENTITY);
  AS_EXPECT_CLOSE(fx->nr.m_posdef, 0.1 / sqrt(1.01), 1e-14, 0);
  AS_EXPECT_CLOSE(fx->nr.dist, 0.1 / sqrt(1.01), 1e-14, 0);
  /* just outside the symmetry: M = [[1, a], [-a, 1]], ||M - M^T|| / ||M|| = 2a / sqrt(1 + a^2) */
  const double a = 1e-6;
  const double Ma[4] = {1, a, -a, 1};
  if (!near_of(fx, 2, I2, Ma)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_IDENTITY);
  AS_EXPECT_CLOSE(fx->nr.m_symmetric, 2 * a / sqrt(1 + a * a), 1e-9, 0);
  AS_EXPECT(fx->nr.m_posdef < 0.0, "sym(M) = I stays definite: %g", fx->nr.m_posdef);
  AS_EXPECT_CLOSE(fx->nr.dist, fx->nr.m_symmetric, 1e-15, 0);
  AS_EXPECT(isnan(fx->nr.margin), "lambda_1 = 1 double: margin undefined");
  /* V just outside V = I: V = diag(1 + delta, 1) is a good triple with M = I, and the polytope
   * theorem it misses is the nearest: ||V - cI|| / ||V|| with c = 1 + delta / 2 */
  const double delta = 1e-3;
  double V[4];
  diag(2, (double[]){1 + delta, 1}, V);
  if (!near_of(fx, 2, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_GOOD, AS_THM_IDENTITY);
  double want = (delta / sqrt(2.0)) / sqrt(1 + (1 + delta) * (1 + delta));
  AS_EXPECT_CLOSE(fx->nr.v_identity, want, 1e-9, 0);
  AS_EXPECT_CLOSE(fx->nr.dist, want, 1e-9, 0);
  AS_EXPECT_CLOSE(fx->nr.gap, -delta / (1 + delta), 1e-9, 0);
  AS_EXPECT(fx->nr.margin < 0.0, "margin 1 > 0: dist_margin %g", fx->nr.margin);
}

/* Three hyperplanes [Thm 4.1]: lambda_1 real, positive, simple, dominant; margin > 0. */
static void test_good(fixture *fx) {
  double V[4];
  diag(2, (double[]){1, 0.1}, V);
  /* inside: far from V = cI (0.63 > AS_NEAR_REACH), so the nearest is good itself */
  if (!near_of(fx, 2, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_GOOD, AS_THM_GOOD);
  AS_EXPECT_CLOSE(fx->nr.gap, -0.9, 1e-14, 0);
  AS_EXPECT_CLOSE(fx->nr.margin, -1.0 / sqrt(2.0), 1e-14, 0);
  AS_EXPECT_CLOSE(fx->nr.v_identity, sqrt(2 * 0.45 * 0.45) / sqrt(1.01), 1e-14, 0);
  AS_EXPECT(fx->nr.lead_real == 0.0 && fx->nr.dist == 0.0, "inside: 0");
  /* a good triple near V = cI: V = diag(2, 1) is within AS_NEAR_REACH of 1.5 I */
  double V2[4];
  diag(2, (double[]){2, 1}, V2);
  if (!near_of(fx, 2, V2, NULL)) return;
  EXPECT_THM(fx, AS_THM_GOOD, AS_THM_IDENTITY);
  AS_EXPECT_CLOSE(fx->nr.dist, sqrt(0.5 / 5.0), 1e-14, 0);
  /* margin exactly 0: M = [[0, 1], [1, 1]] with phi_1 = e_1 */
  const double M0[4] = {0, 1, 1, 1};
  if (!near_of(fx, 2, V, M0)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_GOOD);
  AS_EXPECT(fx->nr.margin == 0.0, "dist_margin %g on the boundary", fx->nr.margin);
  AS_EXPECT(fx->nr.dist == 0.0, "near_dist %g", fx->nr.dist);
  AS_EXPECT(fx->nr.predicted == AS_GEOM_HYPERPLANES, "prediction hyperplanes");
  /* margin just below 0 */
  const double Mm[4] = {-0.01, 1, 1, 1};
  if (!near_of(fx, 2, V, Mm)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_GOOD);
  AS_EXPECT_CLOSE(fx->nr.margin, 0.01 / sqrt(3.0001), 1e-12, 0);
  AS_EXPECT_CLOSE(fx->nr.dist, 0.01 / sqrt(3.0001), 1e-12, 0);
  /* gap exactly 0: V = diag(1, -1) (|lambda_2| = lambda_1) */
  diag(2, (double[]){1, -1}, V);
  if (!near_of(fx, 2, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_CODIM, AS_THM_GOOD);
  AS_EXPECT(fx->nr.gap == 0.0, "dist_gap %g on the boundary", fx->nr.gap);
  AS_EXPECT(fx->nr.v_identity == 1.0, "tr V = 0: no positive multiple of I nearer than 0");
  /* gap just inside: V = diag(1, -0.999) */
  diag(2, (double[]){1, -0.999}, V);
  if (!near_of(fx, 2, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_GOOD, AS_THM_GOOD);
  AS_EXPECT_CLOSE(fx->nr.gap, -0.001, 1e-12, 0);
  /* just outside "lambda_1 real": V = [[1, w], [-w, 1]] has lambda = 1 +- i w; the left
   * eigenvector does not exist, so good cannot be read and the polytope theorem is nearest */
  const double w = 1e-3;
  const double Vc[4] = {1, w, -w, 1};
  if (!near_of(fx, 2, Vc, NULL)) return;
  EXPECT_THM(fx, AS_THM_COMPLEX, AS_THM_IDENTITY);
  AS_EXPECT_CLOSE(fx->nr.lead_real, w / sqrt(1 + w * w), 1e-9, 0);
  AS_EXPECT(fx->nr.gap > 0.0, "complex lead: dist_gap %g >= 0", fx->nr.gap);
  AS_EXPECT_CLOSE(fx->nr.gap, 1.0 - 1.0 / sqrt(1 + w * w), 1e-6, 0);
  AS_EXPECT_CLOSE(fx->nr.dist, w / sqrt(1 + w * w), 1e-9, 0);
}

/* Collapse [Thm C.5]: V = -I, M = I. */
static void test_minus_identity(fixture *fx) {
  double V[4], M[4];
  diag(2, (double[]){-1, -1}, V);
  if (!near_of(fx, 2, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_MINUS_IDENTITY, AS_THM_MINUS_IDENTITY);
  AS_EXPECT(fx->nr.v_minus_identity == 0.0 && fx->nr.m_identity == 0.0, "equalities hold at 0");
  AS_EXPECT(fx->nr.v_identity == 1.0, "tr V < 0: dist_v_identity 1");
  AS_EXPECT(fx->nr.predicted == AS_GEOM_COLLAPSE, "prediction collapse");
  /* just outside M = I: M = diag(1, 1.01) */
  diag(2, (double[]){1, 1.01}, M);
  if (!near_of(fx, 2, V, M)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_MINUS_IDENTITY);
  double want = sqrt(2 * 0.005 * 0.005) / sqrt(1 + 1.01 * 1.01);
  AS_EXPECT_CLOSE(fx->nr.m_identity, want, 1e-12, 0);
  AS_EXPECT_CLOSE(fx->nr.dist, want, 1e-12, 0);
  /* just outside V = -I: V = diag(-1, -1.001) */
  diag(2, (double[]){-1, -1.001}, V);
  if (!near_of(fx, 2, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_MINUS_IDENTITY);
  want = sqrt(2 * 0.0005 * 0.0005) / sqrt(1 + 1.001 * 1.001);
  AS_EXPECT_CLOSE(fx->nr.v_minus_identity, want, 1e-9, 0);
}

/* Polytope x subspace [Thm 5.1]: V = lambda I on F (2 <= dim F < d), radius on G < lambda. */
static void test_paranormal(fixture *fx) {
  double V[9], M[9];
  diag(3, (double[]){1, 1, -0.5}, V);
  if (!near_of(fx, 3, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_PARANORMAL, AS_THM_PARANORMAL);
  AS_EXPECT_CLOSE(fx->nr.paranormal, -0.5, 1e-14, 0);
  AS_EXPECT(fx->nr.paranormal_f == 2, "dim F %d", fx->nr.paranormal_f);
  AS_EXPECT(fx->nr.dist == 0.0, "near_dist %g", fx->nr.dist);
  /* on the boundary: radius on G = lambda (V = diag(1, 1, -1)) */
  diag(3, (double[]){1, 1, -1}, V);
  if (!near_of(fx, 3, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_PARANORMAL);
  AS_EXPECT(fx->nr.paranormal == 0.0, "dist_paranormal %g on the boundary", fx->nr.paranormal);
  AS_EXPECT(fx->nr.dist == 0.0, "near_dist %g", fx->nr.dist);
  AS_EXPECT(fx->nr.predicted == AS_GEOM_POLYTOPE_SUBSPACE, "prediction polytope x subspace");
  /* just outside in M: M = diag(1, 1, -0.01) is not positive definite */
  diag(3, (double[]){1, 1, -0.5}, V);
  diag(3, (double[]){1, 1, -0.01}, M);
  if (!near_of(fx, 3, V, M)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_PARANORMAL);
  AS_EXPECT_CLOSE(fx->nr.m_posdef, 0.01 / sqrt(2.0001), 1e-12, 0);
  AS_EXPECT_CLOSE(fx->nr.dist, 0.01 / sqrt(2.0001), 1e-12, 0);
  AS_EXPECT(fx->nr.paranormal < 0.0, "V itself paranormal: %g", fx->nr.paranormal);
  /* just outside in V: lambda split into 1.001 and 1: spread 0.001 / 1.001; the analysis' F is
   * then the eigenspace of 1.001 (dim 1), so the paranormal reading is not available and the
   * (good) triple stays with its own theorem */
  diag(3, (double[]){1.001, 1, -0.5}, V);
  if (!near_of(fx, 3, V, NULL)) return;
  EXPECT_THM(fx, AS_THM_GOOD, AS_THM_GOOD);
  AS_EXPECT_CLOSE(fx->nr.paranormal, 0.001 / 1.001, 1e-9, 0);
  /* d = 2 has no 2 <= dim F < d */
  double V2[4];
  diag(2, (double[]){1, 0.5}, V2);
  if (!near_of(fx, 2, V2, NULL)) return;
  AS_EXPECT(isnan(fx->nr.paranormal), "d = 2: dist_paranormal NaN, got %g", fx->nr.paranormal);
}

/* One dimension [Thm 2.1]: V > 0, QK > 0 (signs only: distances are +-1 or 0). */
static void test_d1(fixture *fx) {
  double v = 2, m = 0.5;
  if (!near_of(fx, 1, &v, &m)) return;
  EXPECT_THM(fx, AS_THM_D1, AS_THM_D1);
  AS_EXPECT(fx->nr.gap == -1.0 && fx->nr.m_posdef == -1.0, "inside: -1, -1 (%g, %g)", fx->nr.gap,
            fx->nr.m_posdef);
  m = 0;
  if (!near_of(fx, 1, &v, &m)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_D1);
  AS_EXPECT(fx->nr.m_posdef == 0.0 && fx->nr.dist == 0.0, "QK = 0 on the boundary");
  m = -0.01;
  if (!near_of(fx, 1, &v, &m)) return;
  EXPECT_THM(fx, AS_THM_NONE, AS_THM_NONE);
  AS_EXPECT(fx->nr.m_posdef == 1.0, "QK < 0: distance 1, got %g", fx->nr.m_posdef);
  AS_EXPECT(isnan(fx->nr.dist) && fx->nr.predicted == AS_GEOM_NONE, "no theorem within reach");
}

static void test_arguments(fixture *fx) {
  double v = 1;
  if (!near_of(fx, 1, &v, NULL)) return;
  AS_EXPECT(as_near_analyze(NULL, fx->sp, TOL, AS_THM_MODEL_BASE, &fx->nr) == AS_ERR_ARG,
            "NULL triple");
  as_error_clear();
}

int main(void) {
  fixture fx = {0};
  test_identity(&fx);
  test_good(&fx);
  test_minus_identity(&fx);
  test_paranormal(&fx);
  test_d1(&fx);
  test_arguments(&fx);
  as_triple_destroy(&fx.tr);
  as_spectral_destroy(&fx.sp);
  return as_test_finish("test_near");
}
