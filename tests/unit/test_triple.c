/* Triple families do what they claim (checked through independent LAPACK calls and the
 * spectral analysis), bad data are AS_ERR_DATA naming the parameter, combinations that break a
 * rule of rules.h (validate refuses them) AS_ERR_ARG naming the rule, and a triple is a
 * pure function of (seed, triple key): order of generation does not matter. */
#include <math.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/triple.h"
#include "linalg.h"

#define TOL 1e-10

static as_triple *tr_;
static as_spectral *sp_;

/* Build and analyse t; returns the status of the build. */
static as_status build(const as_trial *t) {
  as_triple_destroy(&tr_);
  as_spectral_destroy(&sp_);
  int m = t->triple.m_rows > 0 ? t->triple.m_rows : t->d;
  if (as_triple_create(t->d, m, &tr_) != AS_OK || as_spectral_create(t->d, &sp_) != AS_OK)
    return AS_ERR_NOMEM;
  as_error_clear();
  as_status st = as_triple_build(t, tr_);
  if (st != AS_OK) return st;
  as_status s2 = as_spectral_analyze(tr_, TOL, sp_);
  AS_EXPECT(s2 == AS_OK, "analyze: %s", as_error_get()->message);
  return st;
}

static as_trial base(int d, as_vfamily vf, as_mfamily mf) {
  as_trial t;
  as_trial_defaults(&t);
  t.d = d;
  t.master_seed = 20240601;
  t.triple_key = 7;
  t.triple.vfamily = vf;
  t.triple.mfamily = mf;
  return t;
}

/* Eigenvalues (ascending) of a symmetric d x d matrix. */
static void sym_eigs(int d, const double *A, double *w) {
  double a[64 * 64], work[64 * 64];
  int lw = 64 * 64, info = 0;
  memcpy(a, A, sizeof(double) * (size_t)d * d);
  dsyev_("N", "U", &d, a, &d, w, work, &lw, &info, 1, 1);
  AS_EXPECT(info == 0, "dsyev info %d", info);
}

static double asym(int d, const double *A) {
  double m = 0;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) m = fmax(m, fabs(A[i * d + j] - A[j * d + i]));
  return m;
}

static void test_identity_scalar_explicit(void) {
  as_trial t = base(3, AS_V_IDENTITY, AS_M_IDENTITY);
  t.triple.v_scale = 2.5;
  t.triple.m_scale = 4;
  AS_EXPECT(build(&t) == AS_OK, "identity");
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      AS_EXPECT(tr_->V[i * 3 + j] == (i == j ? 2.5 : 0), "V = 2.5 I");
      AS_EXPECT(tr_->M[i * 3 + j] == (i == j ? 4.0 : 0), "M = 4 I");
      AS_EXPECT(tr_->Q[i * 3 + j] == (i == j ? 2.0 : 0), "Q = 2 I");
    }
  AS_EXPECT(sp_->theorem == AS_THM_IDENTITY, "identity theorem");
  t.triple.vfamily = AS_V_MINUS_IDENTITY;
  t.triple.v_scale = 1;
  t.triple.m_scale = 1;
  AS_EXPECT(build(&t) == AS_OK && tr_->V[0] == -1 && sp_->theorem == AS_THM_MINUS_IDENTITY,
            "minus identity");
  /* d = 1 scalars; a d = 1 family asked for d > 1 is bad data naming the family */
  t = base(1, AS_V_SCALAR, AS_M_SCALAR);
  t.triple.v_scale = 0.7;
  t.triple.m_scale = -2;
  AS_EXPECT(build(&t) == AS_OK && tr_->V[0] == 0.7 && tr_->M[0] == -2.0, "scalars");
  AS_EXPECT_CLOSE(tr_->Q[0] * tr_->K[0], -2.0, 1e-15, 0);
  t.triple.m_scale = 2;
  AS_EXPECT(build(&t) == AS_OK && sp_->theorem == AS_THM_D1, "d1");
  t.d = 2;
  AS_EXPECT(build(&t) == AS_ERR_ARG && strstr(as_error_get()->message, "scalar_d"),
            "scalar with d = 2");
  AS_EXPECT(strstr(as_error_get()->message, "scalar") && strstr(as_error_get()->message, "d = 2"),
            "message: %s", as_error_get()->message);
  t = base(2, AS_V_IDENTITY, AS_M_SCALAR);
  AS_EXPECT(build(&t) == AS_ERR_ARG, "M scalar with d = 2");
  /* explicit V and M (M only: Q = I, K = M) */
  const double V[4] = {1, 2, 3, 4}, M[4] = {5, 6, 7, 8};
  t = base(2, AS_V_EXPLICIT, AS_M_EXPLICIT);
  t.triple.V.data = V;
  t.triple.M.data = M;
  AS_EXPECT(build(&t) == AS_OK, "explicit");
  AS_EXPECT(memcmp(tr_->V, V, sizeof V) == 0 && memcmp(tr_->M, M, sizeof M) == 0 &&
                memcmp(tr_->K, M, sizeof M) == 0 && tr_->Q[0] == 1 && tr_->Q[1] == 0,
            "explicit copied");
  /* explicit Q, K (m = 3 rows, d = 2): M = Q^T K */
  const double Q[6] = {1, 0, 0, 1, 1, 1}, K[6] = {2, 0, 0, 3, 1, -1};
  t.triple.Q.data = Q;
  t.triple.K.data = K;
  t.triple.m_rows = 3;
  AS_EXPECT(build(&t) == AS_OK, "explicit Q K");
  AS_EXPECT(tr_->M[0] == 3 && tr_->M[1] == -1 && tr_->M[2] == 1 && tr_->M[3] == 2,
            "Q^T K = %g %g %g %g", tr_->M[0], tr_->M[1], tr_->M[2], tr_->M[3]);
  /* only M with m != d: impossible */
  t.triple.Q.data = NULL;
  AS_EXPECT(build(&t) == AS_ERR_DATA, "M only with m != d");
  /* NaN / infinite entries and missing data */
  t = base(2, AS_V_EXPLICIT, AS_M_IDENTITY);
  const double Vbad[4] = {1, 0, INFINITY, 1};
  t.triple.V.data = Vbad;
  AS_EXPECT(build(&t) == AS_ERR_DATA, "inf entry");
  AS_EXPECT(strstr(as_error_get()->message, "(1, 0)") != NULL, "names the entry: %s",
            as_error_get()->message);
  t.triple.V.data = NULL;
  AS_EXPECT(build(&t) == AS_ERR_DATA, "missing V");
  /* file family: the file's factor file_mscale multiplies M */
  t = base(2, AS_V_FILE, AS_M_FILE);
  t.triple.V.data = V;
  t.triple.M.data = M;
  t.triple.file.text = "weights.h5";
  t.triple.file_mscale = 0.5;
  AS_EXPECT(build(&t) == AS_OK && tr_->M[3] == 4.0 && tr_->M[0] == 2.5, "file mscale");
  const double Mbad[4] = {1, NAN, 0, 1};
  t.triple.M.data = Mbad;
  AS_EXPECT(build(&t) == AS_ERR_DATA && strstr(as_error_get()->message, "weights.h5"),
            "file named: %s", as_error_get()->message);
}

static void test_spd_and_generic_m(void) {
  double w[64];
  as_trial t = base(6, AS_V_IDENTITY, AS_M_SPD);
  t.triple.m_cond = 50;
  t.triple.m_scale = 3;
  AS_EXPECT(build(&t) == AS_OK, "spd");
  AS_EXPECT(asym(6, tr_->M) == 0, "M symmetric");
  sym_eigs(6, tr_->M, w);
  AS_EXPECT_CLOSE(w[0], 3.0, 1e-12, 0);
  AS_EXPECT_CLOSE(w[5] / w[0], 50.0, 1e-12, 0);
  AS_EXPECT_CLOSE(w[2], 3.0 * pow(50.0, 2.0 / 5), 1e-12, 0); /* geometric spacing */
  AS_EXPECT(sp_->theorem == AS_THM_IDENTITY && (sp_->flags & AS_FLAG_M_SPD), "SPD flag");
  t.triple.m_cond = 0.5;
  AS_EXPECT(build(&t) == AS_ERR_DATA && strstr(as_error_get()->message, "m_cond"), "cond < 1");
  /* generic uniform M, m = 3 < d = 5: rank 3, Q K entries in [0, sqrt s) */
  t = base(5, AS_V_IDENTITY, AS_M_UNIFORM);
  t.triple.m_rows = 3;
  t.triple.m_scale = 4;
  AS_EXPECT(build(&t) == AS_OK, "uniform");
  int inrange = 1;
  for (int k = 0; k < 15; k++) inrange &= tr_->Q[k] >= 0 && tr_->Q[k] < 2 && tr_->K[k] >= 0;
  AS_EXPECT(inrange, "entries in [0, sqrt(s))");
  double s[5], a[25], work[500];
  int d = 5, lw = 500, info = 0;
  memcpy(a, tr_->M, sizeof a);
  dgesvd_("N", "N", &d, &d, a, &d, s, NULL, &d, NULL, &d, work, &lw, &info, 1, 1);
  AS_EXPECT(info == 0 && s[3] < 1e-12 * s[0] && s[2] > 1e-6 * s[0], "rank 3: %g %g", s[2], s[3]);
  AS_EXPECT(!(sp_->flags & AS_FLAG_M_SYMMETRIC) && sp_->theorem != AS_THM_IDENTITY,
            "generic M is not symmetric: V = I gives no theorem 3.1");
  t.triple.mfamily = AS_M_ZERO;
  AS_EXPECT(build(&t) == AS_OK && tr_->M[0] == 0 && tr_->M[24] == 0, "zero");
  t = base(5, AS_V_IDENTITY, AS_M_IDENTITY);
  t.triple.m_rows = 3;
  AS_EXPECT(build(&t) == AS_ERR_ARG && strstr(as_error_get()->message, "m_rows"),
            "identity needs m = d");
}

static void test_symmetric_perron_gaussian(void) {
  double w[64];
  for (int k = 0; k <= 5; k += 2) {
    as_trial t = base(5, AS_V_SYMMETRIC, AS_M_IDENTITY);
    t.triple.v_kpos = k;
    AS_EXPECT(build(&t) == AS_OK, "symmetric");
    AS_EXPECT(asym(5, tr_->V) == 0, "V symmetric");
    sym_eigs(5, tr_->V, w);
    int pos = 0;
    for (int i = 0; i < 5; i++) {
      pos += w[i] > 0;
      AS_EXPECT(fabs(w[i]) >= 0.5 - 1e-12 && fabs(w[i]) <= 1.5 + 1e-12, "|eig| %g", w[i]);
    }
    AS_EXPECT(pos == k && sp_->kpos == k, "k = %d: %d positive, kpos %d", k, pos, sp_->kpos);
    if (k == 0) AS_EXPECT(sp_->theorem == AS_THM_NONE, "k = 0: no theorem");
    if (k >= 1)
      AS_EXPECT(sp_->theorem == AS_THM_CODIM || sp_->theorem == AS_THM_GOOD ||
                    sp_->theorem == AS_THM_PARANORMAL,
                "k >= 1: %d", sp_->theorem);
  }
  as_trial t = base(5, AS_V_SYMMETRIC, AS_M_IDENTITY);
  t.triple.v_kpos = 6;
  AS_EXPECT(build(&t) == AS_ERR_ARG && strstr(as_error_get()->message, "v_kpos"), "k > d");
  /* Perron: positive entries -> good triple with a positive phi_1 (GOOD for M = I) */
  t = base(6, AS_V_PERRON, AS_M_IDENTITY);
  t.triple.v_scale = 2;
  AS_EXPECT(build(&t) == AS_OK, "perron");
  int ok = 1;
  for (int k = 0; k < 36; k++) ok &= tr_->V[k] >= 0 && tr_->V[k] < 2;
  AS_EXPECT(ok, "entries in [0, 2)");
  AS_EXPECT((sp_->flags & AS_FLAG_GOOD) && sp_->theorem == AS_THM_GOOD, "perron is good 0x%x",
            sp_->flags);
  for (int i = 0; i < 6; i++) AS_EXPECT(sp_->phi1[i] > 0, "Perron vector positive");
  /* Gaussian: entries N(0, s^2/d); mean of squares within 6 sigma of s^2/d */
  t = base(64, AS_V_GAUSSIAN, AS_M_IDENTITY);
  t.triple.v_scale = 3;
  as_triple *g = NULL;
  AS_EXPECT(as_triple_create(64, 64, &g) == AS_OK && as_triple_build(&t, g) == AS_OK, "gauss");
  double ms = 0;
  for (int k = 0; k < 4096; k++) ms += g->V[k] * g->V[k];
  ms /= 4096;
  AS_EXPECT(fabs(ms / (9.0 / 64) - 1) < 6 * sqrt(2.0 / 4096), "variance ratio %g", ms / (9.0 / 64));
  as_triple_destroy(&g);
}

static void test_paranormal_family(void) {
  for (int oblique = 0; oblique <= 1; oblique++) {
    as_trial t = base(6, AS_V_PARANORMAL, AS_M_IDENTITY);
    t.triple.v_lambda = 1.5;
    t.triple.v_dim_f = 3;
    t.triple.v_radius = 0.9;
    t.triple.v_oblique = oblique;
    AS_EXPECT(build(&t) == AS_OK, "paranormal");
    AS_EXPECT((sp_->flags & AS_FLAG_PARANORMAL) && sp_->dim_f == 3 &&
                  sp_->theorem == AS_THM_PARANORMAL,
              "oblique %d: flags 0x%x dim %d", oblique, sp_->flags, sp_->dim_f);
    for (int i = 0; i < 3; i++) AS_EXPECT_CLOSE(sp_->wr[i], 1.5, 1e-12, 0);
    AS_EXPECT_CLOSE(hypot(sp_->wr[3], sp_->wi[3]), 0.9, 1e-12, 0); /* radius on G attained */
    /* V = lambda on F: V P = lambda P; P is a projector of rank 3 */
    double R = 0, P2 = 0, tr = 0;
    const double *P = sp_->proj_f;
    for (int i = 0; i < 6; i++) {
      tr += P[i * 6 + i];
      for (int j = 0; j < 6; j++) {
        double vp = 0, pp = 0;
        for (int k = 0; k < 6; k++) {
          vp += tr_->V[i * 6 + k] * P[k * 6 + j];
          pp += P[i * 6 + k] * P[k * 6 + j];
        }
        R = fmax(R, fabs(vp - 1.5 * P[i * 6 + j]));
        P2 = fmax(P2, fabs(pp - P[i * 6 + j]));
      }
    }
    AS_EXPECT(R < 1e-12 && P2 < 1e-12, "V P = lambda P (%g), P^2 = P (%g)", R, P2);
    AS_EXPECT_CLOSE(tr, 3.0, 1e-12, 0);
    if (oblique)
      AS_EXPECT(asym(6, P) > 1e-3, "oblique: F and G not orthogonal (%g)", asym(6, P));
    else
      AS_EXPECT(asym(6, P) < 1e-12 && asym(6, tr_->V) == 0, "orthogonal: P, V symmetric");
  }
  as_trial t = base(4, AS_V_PARANORMAL, AS_M_IDENTITY);
  t.triple.v_dim_f = 5;
  AS_EXPECT(build(&t) == AS_ERR_ARG && strstr(as_error_get()->message, "v_dim_f"), "f > d");
  t.triple.v_dim_f = 2;
  t.triple.v_radius = 1.2; /* > lambda = 1: builds, but the analysis says not paranormal */
  /* the F of lambda = 1 is lost; V may still be paranormal for the eigenvalue +1.2 */
  AS_EXPECT(build(&t) == AS_OK, "radius > lambda");
  AS_EXPECT(!(sp_->flags & AS_FLAG_PARANORMAL) || (sp_->dim_f == 1 && sp_->wr[0] > 1.1),
            "radius > lambda: not paranormal with dim F 2 (0x%x, %d)", sp_->flags, sp_->dim_f);
}

static void test_good_complex(void) {
  as_trial t = base(5, AS_V_GOOD, AS_M_UNIFORM);
  t.triple.v_lambda = 2;
  t.triple.v_gap = 0.25;
  t.triple.margin = 0.3;
  AS_EXPECT(build(&t) == AS_OK, "good");
  AS_EXPECT_CLOSE(sp_->lambda1_re, 2.0, 1e-12, 0);
  AS_EXPECT_CLOSE(sp_->gap, 0.25, 1e-11, 0);
  AS_EXPECT_CLOSE(sp_->margin, 0.3, 1e-10, 0);
  AS_EXPECT((sp_->flags & AS_FLAG_GOOD) && sp_->theorem == AS_THM_GOOD, "good flags 0x%x",
            sp_->flags);
  AS_EXPECT(sp_->angle_l1_phi1 > 1e-3, "oblique basis: l1 and phi1 differ (%g deg)",
            sp_->angle_l1_phi1);
  t.triple.margin = -0.3;
  AS_EXPECT(build(&t) == AS_OK && !(sp_->flags & AS_FLAG_GOOD), "negative margin: not good");
  AS_EXPECT_CLOSE(sp_->margin, -0.3, 1e-10, 0);
  /* m != d: the margin goes into K, M = Q^T K stays consistent */
  t.triple.m_rows = 2;
  t.triple.margin = 0.7;
  AS_EXPECT(build(&t) == AS_OK, "good m = 2");
  AS_EXPECT_CLOSE(sp_->margin, 0.7, 1e-10, 0);
  t.triple.m_rows = 0;
  t.triple.v_gap = 3;
  AS_EXPECT(build(&t) == AS_ERR_ARG && strstr(as_error_get()->message, "v_gap"), "gap > lam");
  /* complex leading pair */
  t = base(5, AS_V_COMPLEX, AS_M_IDENTITY);
  t.triple.v_lambda = 0.8;
  t.triple.v_imag = 0.6;
  AS_EXPECT(build(&t) == AS_OK, "complex");
  AS_EXPECT_CLOSE(sp_->lambda1_re, 0.8, 1e-12, 0);
  AS_EXPECT_CLOSE(fabs(sp_->lambda1_im), 0.6, 1e-12, 0);
  AS_EXPECT_CLOSE(sp_->mu, 0.8, 1e-12, 0);
  AS_EXPECT((sp_->flags & AS_FLAG_COMPLEX_LEAD) && sp_->theorem == AS_THM_COMPLEX, "complex");
  t.d = 1;
  AS_EXPECT(build(&t) == AS_ERR_ARG, "complex with d = 1");
}

static void test_perturbed(void) {
  as_trial t = base(16, AS_V_IDENTITY, AS_M_IDENTITY);
  t.triple.eps = 1e-3;
  t.triple.perturb = AS_PERTURB_BOTH;
  AS_EXPECT(build(&t) == AS_OK, "perturbed");
  double ev = 0, em = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      double e = tr_->V[i * 16 + j] - (i == j), f = tr_->M[i * 16 + j] - (i == j);
      ev += e * e;
      em += f * f;
    }
  /* ||E||_F^2 = eps^2 d on average, 256 terms: 30 % is > 6 sigma */
  AS_EXPECT(fabs(sqrt(ev) / (1e-3 * 4) - 1) < 0.3 && fabs(sqrt(em) / (1e-3 * 4) - 1) < 0.3,
            "noise sizes %g %g", sqrt(ev), sqrt(em));
  AS_EXPECT(!(sp_->flags & AS_FLAG_V_IDENTITY) && sp_->theorem != AS_THM_IDENTITY,
            "assumptions hold only approximately");
  /* Q, K stay consistent with the perturbed M */
  double mx = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      double qk = 0;
      for (int a = 0; a < 16; a++) qk += tr_->Q[a * 16 + i] * tr_->K[a * 16 + j];
      mx = fmax(mx, fabs(qk - tr_->M[i * 16 + j]));
    }
  AS_EXPECT(mx < 1e-15, "M = Q^T K (%g)", mx);
  t.triple.perturb = AS_PERTURB_V;
  AS_EXPECT(build(&t) == AS_OK && tr_->M[1] == 0 && tr_->M[0] == 1, "V only");
  t.triple.eps = -1;
  AS_EXPECT(build(&t) == AS_ERR_DATA && strstr(as_error_get()->message, "eps"), "eps < 0");
}

/* A trial's numbers depend on (seed, triple key) only: build a list of trials in two orders,
 * with others interleaved, and compare bit for bit. V does not depend on the M family. */
static void test_reproducible(void) {
  const as_vfamily vf[] = {AS_V_PERRON, AS_V_SYMMETRIC, AS_V_PARANORMAL,
                           AS_V_GOOD,   AS_V_COMPLEX,   AS_V_GAUSSIAN};
  enum { NF = 6, D = 7 };
  double first[NF][2][D * D];
  for (int pass = 0; pass < 2; pass++) {
    for (int q = 0; q < NF; q++) {
      int f = pass == 0 ? q : NF - 1 - q;
      as_trial t = base(D, vf[f], AS_M_GAUSSIAN);
      t.triple.v_kpos = 3;
      t.triple_key = 100 + (uint64_t)f;
      t.triple.eps = 0.01;
      t.triple.perturb = AS_PERTURB_BOTH;
      as_triple *a = NULL;
      AS_EXPECT(as_triple_create(D, D, &a) == AS_OK && as_triple_build(&t, a) == AS_OK, "b");
      if (pass == 0) {
        memcpy(first[f][0], a->V, sizeof first[f][0]);
        memcpy(first[f][1], a->M, sizeof first[f][1]);
      } else {
        AS_EXPECT(memcmp(first[f][0], a->V, sizeof first[f][0]) == 0 &&
                      memcmp(first[f][1], a->M, sizeof first[f][1]) == 0,
                  "family %d bitwise identical in another order", f);
        t.triple.mfamily = AS_M_SPD;
        t.triple.m_cond = 3;
        AS_EXPECT(as_triple_build(&t, a) == AS_OK, "b2");
        AS_EXPECT(memcmp(first[f][0], a->V, sizeof first[f][0]) == 0, "V independent of M family");
        t.triple_key++;
        AS_EXPECT(as_triple_build(&t, a) == AS_OK, "b3");
        AS_EXPECT(memcmp(first[f][0], a->V, sizeof first[f][0]) != 0, "another key differs");
      }
      as_triple_destroy(&a);
    }
  }
}

int main(void) {
  test_identity_scalar_explicit();
  test_spd_and_generic_m();
  test_symmetric_perron_gaussian();
  test_paranormal_family();
  test_good_complex();
  test_perturbed();
  test_reproducible();
  as_triple *t = NULL;
  AS_EXPECT(as_triple_create(0, 0, &t) == AS_ERR_ARG && t == NULL, "d = 0 refused");
  as_error_clear();
  as_triple_destroy(&tr_);
  as_spectral_destroy(&sp_);
  return as_test_finish("test_triple");
}
