/* tokens.c: initial tokens X0 (n x d, rows are tokens) from the trial's init spec (tokens.h).
 *
 * Random kinds draw from the Philox stream (master_seed, token_key, AS_PURPOSE_TOKENS), row
 * by row: token i's numbers do not depend on n beyond the first i rows, so a larger n extends
 * a smaller one. sphere: a Gaussian vector normalised to radius s (uniform on the sphere).
 */
#include <math.h>
#include <string.h>

#include "attnsweep/rng.h"
#include "attnsweep/tokens.h"

as_status as_tokens_init(const as_trial *t, double *X0) {
  as_status st = AS_OK;
  AS_CHECK(t != NULL && X0 != NULL, AS_ERR_ARG, "tokens: NULL argument");
  AS_CHECK(t->n >= 1 && t->d >= 1, AS_ERR_ARG, "tokens: n = %d, d = %d must be >= 1", t->n, t->d);
  int n = t->n, d = t->d;
  size_t nd = (size_t)n * d;
  double s = t->init.scale;
  const char *kind = as_enum_label(&as_init_table, (int)t->init.kind);
  as_rng r;
  as_rng_init(&r, t->master_seed, t->token_key, AS_PURPOSE_TOKENS);
  switch (t->init.kind) {
  case AS_INIT_BOX:
  case AS_INIT_GAUSS:
  case AS_INIT_SPHERE:
    AS_CHECK(isfinite(s) && s > 0, AS_ERR_DATA, "init %s: scale = %g must be > 0", kind, s);
    break;
  default:
    break;
  }
  switch (t->init.kind) {
  case AS_INIT_BOX:
    as_rng_fill_uniform(&r, X0, (long)nd, -s, s);
    break;
  case AS_INIT_GAUSS:
    as_rng_fill_normal(&r, X0, (long)nd, s);
    break;
  case AS_INIT_SPHERE:
    for (int i = 0; i < n; i++) {
      double *x = X0 + (size_t)i * d, nrm = 0;
      do { /* a zero Gaussian vector has probability 0; redraw rather than divide by 0 */
        as_rng_fill_normal(&r, x, d, 1.0);
        nrm = 0;
        for (int j = 0; j < d; j++) nrm += x[j] * x[j];
      } while (nrm == 0);
      nrm = s / sqrt(nrm);
      for (int j = 0; j < d; j++) x[j] *= nrm;
    }
    break;
  case AS_INIT_EXPLICIT:
  case AS_INIT_FILE: {
    const char *origin =
        t->init.kind == AS_INIT_FILE && t->init.file.text ? t->init.file.text : "explicit";
    AS_CHECK(t->init.data.data != NULL, AS_ERR_DATA, "init %s (%s%s%s): no tokens were given", kind,
             origin, t->init.dataset.text ? ", dataset " : "",
             t->init.dataset.text ? t->init.dataset.text : "");
    for (size_t k = 0; k < nd; k++)
      AS_CHECK(isfinite(t->init.data.data[k]), AS_ERR_DATA,
               "init %s (%s): token %zu, coordinate %zu is %g, not a finite number", kind, origin,
               k / d, k % d, t->init.data.data[k]);
    memcpy(X0, t->init.data.data, nd * sizeof(double));
    break;
  }
  default:
    AS_CHECK(0, AS_ERR_DATA, "init kind %d is not known", (int)t->init.kind);
  }
cleanup:
  return st;
}
