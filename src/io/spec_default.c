/* spec_default.c: the built-in default sweep (attnsweep run without a SPEC).
 *
 * The paper's cases at the paper's settings (docs/theory.md sect. 5): n = 20 tokens uniform on
 * [-5, 5]^d, RK4 with dt = 0.1, T = 15, Q = K = I unless a case says otherwise, plus three
 * cases outside the theorems' assumptions. 17 parameter points x 25 replicates = 425 small
 * trials (well under 2 minutes on 2 ranks). Documented in docs/spec.md. */
#include "attnsweep/spec.h"

static const char default_text[] =
    "# attnsweep built-in default sweep: the paper's theorems at paper settings.\n"
    "name: default\n"
    "description: >\n"
    "  Geshkovski et al., The emergence of clusters in self-attention dynamics:\n"
    "  one case per theorem at the paper's settings, and three cases outside the assumptions.\n"
    "seed: 20230509\n"
    "replicates: 25\n"
    "output: {final: true}\n"
    "sweep:\n"
    "  product:\n"
    "    - {n: 20, T: 15, dt: 0.1, method: rk4, init: {kind: box, scale: 5}}\n"
    "    - concat:\n"
    "        - {case: identity, vfamily: identity, mfamily: identity, d: [2, 3]}\n"
    "        - {case: good, vfamily: perron, mfamily: identity, d: [2, 3]}\n"
    "        - case: paranormal\n"
    "          mfamily: identity\n"
    "          V: [[1, 0, 0], [0, 1, 0], [0, 0, -0.5]]\n"
    "        - {case: minus_identity, vfamily: minus_identity, mfamily: identity, d: [2, 3],\n"
    "           vars: x}\n"
    "        - {case: d1, vfamily: scalar, mfamily: scalar, d: 1, v_scale: [0.5, 1, 2]}\n"
    "        - {case: codim, vfamily: symmetric, v_kpos: 2, mfamily: identity, d: 3}\n"
    "        - {case: complex, vfamily: complex, v_lambda: 1, v_imag: 1, mfamily: identity,\n"
    "           d: [2, 3]}\n"
    "        - {case: generic_m, vfamily: identity, mfamily: uniform, d: [2, 3]}\n"
    "        - {case: perturbed, vfamily: identity, mfamily: identity, d: 2, eps: [0.01, 0.1],\n"
    "           perturb: v}\n";

const char *as_spec_default_text(void) {
  return default_text;
}
