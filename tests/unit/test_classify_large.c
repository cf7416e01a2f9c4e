/* The classifier above AS_CLASSIFY_SVD_NMAX tokens (issue 17): rank_p from the randomised
 * estimate against an independent full SVD of the same P (known ranks 1, 3, 40; a rank-3 P
 * perturbed far below the tolerance; a full-rank P, where the estimate is a lower bound), the
 * same answer twice, and the stop flag: a set flag ends as_classify with AS_ERR_INTERRUPTED at
 * both sizes. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/classify.h"
#include "attnsweep/rng.h"
#include "attnsweep/trial.h"
#include "linalg.h"

enum { N = AS_CLASSIFY_SVD_NMAX + 88, D = 2 };

static double Z0[N * D], Z[N * D], P[N * N], Pc[N * N], sv[N], work[40 * N], V[D * D];
static double wr[D], wi[D];

/* P with rows i copied from r random stochastic rows (row i = row i mod r), each entry then
 * multiplied by (1 + eps u), u uniform on [-1, 1], and the row renormalised. */
static void make_p(as_rng *g, int r, double eps) {
  for (int i = 0; i < r; i++) {
    double s = 0.0;
    for (int j = 0; j < N; j++) s += P[(size_t)i * N + j] = as_rng_uniform(g);
    for (int j = 0; j < N; j++) P[(size_t)i * N + j] /= s;
  }
  for (int i = r; i < N; i++) memcpy(P + (size_t)i * N, P + (size_t)(i % r) * N, N * sizeof *P);
  if (eps == 0.0) return;
  for (int i = 0; i < N; i++) {
    double s = 0.0;
    for (int j = 0; j < N; j++)
      s += P[(size_t)i * N + j] *= 1.0 + eps * (2.0 * as_rng_uniform(g) - 1.0);
    for (int j = 0; j < N; j++) P[(size_t)i * N + j] /= s;
  }
}

/* The reference: singular values of P by dgesvd, counted above AS_CLASSIFY_RANK_RTOL. */
static int exact_rank(void) {
  memcpy(Pc, P, sizeof P);
  int n = N, one = 1, lw = (int)(sizeof work / sizeof work[0]), info = 0;
  double u = 0, vt = 0;
  dgesvd_("N", "N", &n, &n, Pc, &n, sv, &u, &one, &vt, &one, work, &lw, &info, 1, 1);
  AS_EXPECT(info == 0, "dgesvd info %d", info);
  int r = 0;
  for (int i = 0; i < N; i++) r += sv[i] > AS_CLASSIFY_RANK_RTOL * sv[0];
  return r;
}

static as_status classify(as_classify_ws *ws, int n, as_record *rec) {
  as_spectral sp;
  memset(&sp, 0, sizeof sp);
  sp.d = D;
  sp.wr = wr;
  sp.wi = wi;
  sp.theorem = AS_THM_NONE;
  as_classify_input in = {n,   D,   Z0,   Z, NULL, P,    V,    &sp, AS_OUT_REACHED_T,
                          5.0, 5.0, NULL, 0, NULL, NULL, NULL, 0};
  as_record_init(rec, NULL);
  return as_classify(&in, ws, rec);
}

int main(void) {
  as_rng g;
  as_rng_init(&g, 17, 0, AS_PURPOSE_TEST);
  as_rng_fill_uniform(&g, Z0, N * D, -5, 5);
  as_rng_fill_uniform(&g, Z, N * D, -1, 1);
  V[0] = V[3] = 1.0;
  wr[0] = wr[1] = 1.0;
  as_classify_ws *ws = NULL, *small = NULL;
  AS_EXPECT(as_classify_ws_create(N, D, &ws) == AS_OK, "workspace");
  AS_EXPECT(as_classify_ws_create(20, D, &small) == AS_OK, "small workspace");
  if (!ws || !small) return as_test_finish("test_classify_large");
  as_record rec;

  const struct {
    int r;
    double eps;
  } cases[] = {{1, 0.0}, {3, 0.0}, {40, 0.0}, {3, 1e-12}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    make_p(&g, cases[c].r, cases[c].eps);
    int want = exact_rank();
    AS_EXPECT(want == cases[c].r, "reference rank %d for %d copied rows", want, cases[c].r);
    AS_EXPECT(classify(ws, N, &rec) == AS_OK, "classify");
    AS_EXPECT(rec.rank_p == want, "rank %d (eps %g): estimate %d", want, cases[c].eps,
              (int)rec.rank_p);
    int first = rec.rank_p;
    AS_EXPECT(classify(ws, N, &rec) == AS_OK && rec.rank_p == first, "same estimate twice");
  }
  /* Full rank (every row its own): the estimate is a lower bound between the block's decision
   * limit and the largest block. */
  make_p(&g, N, 0.0);
  AS_EXPECT(exact_rank() == N, "reference: full rank");
  AS_EXPECT(classify(ws, N, &rec) == AS_OK, "classify");
  AS_EXPECT(rec.rank_p > AS_CLASSIFY_RANK_BMAX - AS_CLASSIFY_RANK_OVER &&
                rec.rank_p <= AS_CLASSIFY_RANK_BMAX,
            "full rank: lower bound %d", (int)rec.rank_p);

  /* The stop flag, large and small. */
  volatile sig_atomic_t stop = 1;
  as_classify_set_stop(ws, &stop);
  AS_EXPECT(classify(ws, N, &rec) == AS_ERR_INTERRUPTED, "stop honoured (n = %d)", N);
  as_classify_set_stop(small, &stop);
  make_p(&g, 2, 0.0);
  for (int i = 0; i < 20; i++) memcpy(P + (size_t)i * 20, P + (size_t)i * N, 20 * sizeof *P);
  AS_EXPECT(classify(small, 20, &rec) == AS_ERR_INTERRUPTED, "stop honoured (n = 20)");
  stop = 0;
  AS_EXPECT(classify(small, 20, &rec) == AS_OK, "cleared flag: classified");
  as_error_clear();
  as_classify_ws_destroy(&ws);
  as_classify_ws_destroy(&small);
  return as_test_finish("test_classify_large");
}
