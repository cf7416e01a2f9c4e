/* Large shapes run (n = 2048, d = 512): two Euler steps, finite, attention stochastic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/rng.h"

int main(void) {
  const int n = 2048, d = 512;
  as_rng r;
  as_rng_init(&r, 1, 0, AS_PURPOSE_TEST);
  double *V = calloc((size_t)d * d, sizeof(double)), *M = calloc((size_t)d * d, sizeof(double));
  double *X0 = malloc((size_t)n * d * sizeof(double));
  as_dyn *w = NULL;
  AS_EXPECT(V && M && X0, "allocation");
  if (!V || !M || !X0) goto done;
  for (int i = 0; i < d; i++) {
    V[(size_t)i * d + i] = i % 2 ? 1.0 : -0.5; /* mixed signs, diagonal: cheap eigensolver */
    M[(size_t)i * d + i] = 1.0;
  }
  as_rng_fill_uniform(&r, X0, (long)n * d, -0.1, 0.1);
  AS_EXPECT(as_dyn_create(n, d, &w) == AS_OK, "create");
  if (!w) goto done;
  as_expm path;
  AS_EXPECT(as_dyn_set_triple(w, V, M, &path) == AS_OK && path == AS_EXPM_EIGEN, "set");
  as_integ_spec in;
  memset(&in, 0, sizeof in);
  in.method = AS_METHOD_EULER;
  in.vars = AS_VARS_Z;
  in.T = 0.2;
  in.dt = 0.1;
  in.max_steps = 10;
  as_dyn_stats st;
  AS_EXPECT(as_dyn_run(w, &in, X0, NULL, NULL, 0, NULL, NULL, &st) == AS_OK, "run");
  AS_EXPECT(st.outcome == AS_OUT_REACHED_T && st.steps == 2, "outcome %d steps %lld",
            (int)st.outcome, (long long)st.steps);
  const double *Z = as_dyn_state(w), *P = as_dyn_attention(w);
  int bad = 0;
  for (size_t i = 0; i < (size_t)n * d; i++) bad += !isfinite(Z[i]);
  AS_EXPECT(bad == 0, "%d non-finite entries", bad);
  for (int i = 0; i < n; i += 97) {
    double s = 0.0;
    for (int j = 0; j < n; j++) s += P[(size_t)i * n + j];
    AS_EXPECT_CLOSE(s, 1.0, 1e-12, 0);
  }
  AS_EXPECT(isfinite(st.velocity) && st.radius > 0.0, "velocity %g radius %g", st.velocity,
            st.radius);
done:
  as_dyn_destroy(&w);
  free(V);
  free(M);
  free(X0);
  return as_test_finish("test_dynamics_size");
}
