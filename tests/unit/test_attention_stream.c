/* Streaming attention (attention_stream.c, issue 17 point 3).
 * 1. The kernel against the dense softmax (as_attention_softmax_hot, then H = P Y summed here)
 *    on 700 tokens (three row and column tiles, the last partial) for temperatures from 0
 *    (uniform rows) through saturation to +inf (hardmax), with duplicated tokens so that
 *    exact ties occur: H to 1e-13, and the same one-hot rows.
 * 2. Whole runs at the threshold n = AS_ATTENTION_STREAM_N: the dense and the streaming
 *    kernel give the same final tokens to 1e-13 (RK4 on spread-out tokens with a
 *    non-symmetric M, and Euler in the saturated regime of the paper's box [-5, 5]).
 * 3. Above the threshold no n x n matrix exists: as_dyn_attention is NULL and the workspace
 *    of n = 100,000, d = 2 is far below 1 GB. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/attention.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/rng.h"
#include "attnsweep/trial.h"
#include "linalg_dyn.h"

static double max_rel_diff(size_t len, const double *a, const double *b) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < len; i++) {
    diff = fmax(diff, fabs(a[i] - b[i]));
    scale = fmax(scale, fabs(b[i]));
  }
  return isnan(diff) ? INFINITY : diff / (scale > 0.0 ? scale : 1.0);
}

static void test_kernel(void) {
  enum { N = 700, D = 3 };
  static double A[N * D], G[N * D], Y[N * D], S[N * N], P[N * N], Hd[N * D], Hs[N * D];
  static int hot_d[N], hot_s[N], iws[2 * AS_STREAM_TILE];
  double *ws = malloc(as_attention_stream_doubles(D) * sizeof *ws);
  AS_EXPECT(ws != NULL, "workspace");
  if (!ws) return;
  as_rng g;
  as_rng_init(&g, 5, 1, AS_PURPOSE_TEST);
  as_rng_fill_uniform(&g, G, N * D, -1, 1);
  as_rng_fill_uniform(&g, Y, N * D, -2, 2);
  /* Every 7th token repeats token 0 (and A = G), so many rows have exact ties at the top. */
  for (int i = 7; i < N; i += 7) memcpy(G + i * D, G, D * sizeof *G);
  memcpy(A, G, sizeof A);
  const double logcs[] = {-INFINITY, 0.0, 1.5, 4.0, 12.0, INFINITY};
  for (size_t t = 0; t < sizeof logcs / sizeof logcs[0]; t++) {
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double s = 0.0;
        for (int k = 0; k < D; k++) s += A[i * D + k] * G[j * D + k];
        S[i * N + j] = s;
      }
    int od = as_attention_softmax_hot(N, N, S, logcs[t], P, hot_d);
    for (int i = 0; i < N; i++)
      for (int k = 0; k < D; k++) {
        double h = 0.0;
        for (int j = 0; j < N; j++) h += P[i * N + j] * Y[j * D + k];
        Hd[i * D + k] = h;
      }
    int os = as_attention_stream(N, D, A, G, logcs[t], Y, Hs, hot_s, ws, iws);
    double rel = max_rel_diff(N * D, Hs, Hd);
    AS_EXPECT(rel <= 1e-13, "logc %g: H differs from the dense path by %g (relative)", logcs[t],
              rel);
    /* Saturated rows are one-hot in both, with the same column (the stream reports no
     * one-hot row that the dense path only finds after its exponentials underflow). */
    int agree = 1;
    for (int i = 0; i < N; i++) agree &= hot_s[i] < 0 || hot_s[i] == hot_d[i];
    AS_EXPECT(agree && os <= od, "logc %g: one-hot rows %d (dense %d)", logcs[t], os, od);
    if (logcs[t] == INFINITY || logcs[t] == 12.0)
      AS_EXPECT(os > 0, "logc %g: saturated rows exist (%d)", logcs[t], os);
  }
  free(ws);
}

/* Final tokens of one run with the given kernel. */
static int run(int n, as_dyn_kernel kernel, const double *V, const double *M, const double *X0,
               as_method method, double T, double *out) {
  as_dyn *w = NULL;
  int ok = as_dyn_create(n, 2, &w) == AS_OK && as_dyn_set_kernel(w, kernel) == AS_OK &&
           as_dyn_set_triple(w, V, M, NULL) == AS_OK;
  as_integ_spec in;
  memset(&in, 0, sizeof in);
  in.method = method;
  in.vars = AS_VARS_Z;
  in.T = T;
  in.dt = 0.1;
  in.max_steps = 100;
  as_dyn_stats s;
  ok = ok && as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &s) == AS_OK &&
       s.outcome == AS_OUT_REACHED_T;
  if (ok) memcpy(out, as_dyn_state(w), (size_t)n * 2 * sizeof *out);
  as_dyn_destroy(&w);
  return ok;
}

static void test_runs(void) {
  const int n = AS_ATTENTION_STREAM_N;
  double *X0 = malloc((size_t)n * 2 * sizeof *X0), *a = malloc((size_t)n * 2 * sizeof *a),
         *b = malloc((size_t)n * 2 * sizeof *b);
  AS_EXPECT(X0 && a && b, "buffers");
  if (X0 && a && b) {
    as_rng g;
    as_rng_init(&g, 6, 2, AS_PURPOSE_TEST);
    const double V[4] = {1.0, 0.3, -0.2, 0.8}, M[4] = {1.0, 0.4, -0.3, 0.7}, Id[4] = {1, 0, 0, 1};
    as_rng_fill_uniform(&g, X0, (long)n * 2, -1.0, 1.0);
    AS_EXPECT(run(n, AS_DYN_KERNEL_AUTO, V, M, X0, AS_METHOD_RK4, 0.2, a) &&
                  run(n, AS_DYN_KERNEL_STREAM, V, M, X0, AS_METHOD_RK4, 0.2, b),
              "RK4 runs");
    double rel = max_rel_diff((size_t)n * 2, b, a);
    AS_EXPECT(rel <= 1e-13, "RK4, spread tokens: stream vs dense %g (relative)", rel);
    as_rng_fill_uniform(&g, X0, (long)n * 2, -5.0, 5.0);
    AS_EXPECT(run(n, AS_DYN_KERNEL_AUTO, Id, Id, X0, AS_METHOD_EULER, 0.2, a) &&
                  run(n, AS_DYN_KERNEL_STREAM, Id, Id, X0, AS_METHOD_EULER, 0.2, b),
              "Euler runs");
    rel = max_rel_diff((size_t)n * 2, b, a);
    AS_EXPECT(rel <= 1e-13, "Euler, box [-5, 5]: stream vs dense %g (relative)", rel);
  }
  free(X0);
  free(a);
  free(b);
}

static void test_memory(void) {
  as_dyn *w = NULL;
  const int n = AS_ATTENTION_STREAM_N + 1;
  AS_EXPECT(as_dyn_create(n, 2, &w) == AS_OK, "create above the threshold");
  AS_EXPECT(w && as_dyn_attention(w) == NULL, "no P above the threshold");
  AS_EXPECT(w && as_dyn_set_kernel(w, AS_DYN_KERNEL_GENERAL) == AS_ERR_ARG,
            "no dense kernel without P");
  as_error_clear();
  as_dyn_destroy(&w);
  AS_EXPECT(as_dyn_bytes(100000, 2) < 64e6, "n = 100,000, d = 2: %g bytes",
            as_dyn_bytes(100000, 2));
  AS_EXPECT(as_dyn_bytes(AS_ATTENTION_STREAM_N, 2) >
                16.0 * AS_ATTENTION_STREAM_N * (double)AS_ATTENTION_STREAM_N,
            "at the threshold: the dense S and P");
}

int main(void) {
  test_kernel();
  test_runs();
  test_memory();
  return as_test_finish("test_attention_stream");
}
