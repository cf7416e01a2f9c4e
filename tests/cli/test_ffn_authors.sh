#!/usr/bin/env bash
# The authors' feed-forward experiment (docs/variants.md, "Which reading reproduces the
# caption"): jobs/examples/ffn_authors.yaml at small size (paper V, d = 2, U[-5, 5]^2, T = 15).
# In the x reading (vars x: x_i' = W sigma(sum_j P_ij V x_j)) ReLU with W = I ends on at most
# three hyperplanes of l_1^T z, namely {0, b} (b > 0, on the side of phi_1 > 0), and tanh with
# W = I collapses l_1^T z to 0 within the bound e^{-lambda_1 T} (max |l_1^T x(0)| + |l_1|_1 T)
# that |tanh| <= 1 gives. In the printed z form ReLU with W = I never decreases a coordinate
# (z(T) >= z(0) exactly: RK4's weights are positive) and tanh does not collapse.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init ffn_authors
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$tmp" || exit 1

sed -e 's/^replicates: .*/replicates: 2/' -e 's/n: 20,/n: 10,/' -e 's/T: \[15, 30, 50\]/T: 15/' \
  -e '/case: perron/d' -e '/case: good/d' \
  -e 's/init: \[{kind: box, scale: 5}, .*/init: {kind: box, scale: 5}}/' -e '/{kind: sphere, scale: 1}\]}/d' \
  "$src/jobs/examples/ffn_authors.yaml" >small.yaml
check "the example is made small" test "$(diff "$src/jobs/examples/ffn_authors.yaml" small.yaml | grep -c '^>')" -ge 4
"$bin" validate small.yaml >val.out 2>&1
check "the small example is valid: 20 trials ($(head -c 120 val.out))" grep -q "valid: 20 trials" val.out
"$mpiexec" -n 1 "$bin" run small.yaml -o small.h5 --quiet >run.log 2>&1
rc=$?
check "the small example runs (rc $rc)" test $rc -eq 0

"$py" - small.h5 <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
t = f["trials"][...]
lab = lambda k: {v: n for n, v in h5py.check_enum_dtype(t.dtype[k]).items()}
case, var, obs = lab("case_name"), lab("vars"), lab("observed")
off = {k: f["bulk/%s_offset" % k][...] for k in ("initial_tokens", "final_tokens", "V")}
bulk = {k: f["bulk/" + k][...] for k in off}
seen, fail = {}, 0
for i, r in enumerate(t):
    n, d, T = int(r["n"]), int(r["d"]), float(r["t_final"])
    sl = lambda k: bulk[k][off[k][i]:off[k][i + 1]]
    X0, F, V = sl("initial_tokens").reshape(n, d), sl("final_tokens").reshape(n, d), sl("V").reshape(d, d)
    lam, R = np.linalg.eig(V)
    k = int(np.argmax(np.abs(lam)))
    lam1, phi = float(np.real(lam[k])), np.real(R[:, k])
    phi = phi if phi.sum() > 0 else -phi  # the paper's V is positive: phi_1 > 0, l_1 > 0
    lamT, L = np.linalg.eig(V.T)
    l1 = np.real(L[:, int(np.argmin(np.abs(lamT - lam[k])))])
    l1 /= l1 @ phi
    form, name = var[r["vars"]], case[r["case_name"]].split("/")[-1]
    # l_1^T z(T): z variables as stored; from x exactly as e^{-lambda_1 T} l_1^T x
    c = F @ l1 if form == "z" else np.exp(-lam1 * T) * (F @ l1)
    c0 = X0 @ l1
    s = np.max(np.abs(c))
    key = (form, name)
    seen[key] = seen.get(key, 0) + 1
    why = None
    if key == ("x", "relu_I"):
        on = (np.abs(c - c.max()) <= 1e-2 * s) | (np.abs(c) <= 1e-2 * s)
        if not on.all() or c.max() <= 0:
            why = "tokens off the hyperplanes {0, b}: %s" % np.sort(c[~on] / s)
        elif obs[r["observed"]] != "hyperplanes" or not 1 <= r["n_levels"] <= 3:
            why = "classified %s with %d levels" % (obs[r["observed"]], r["n_levels"])
    elif key == ("x", "tanh_I"):
        bound = np.exp(-lam1 * T) * (np.max(np.abs(X0 @ l1)) + np.abs(l1).sum() * T)
        if s > bound * (1 + 1e-9):
            why = "max |l_1^T z(T)| %.3g above the tanh bound %.3g" % (s, bound)
        elif s > 1e-6 * np.max(np.abs(c0)):
            why = "no collapse: %.3g of the start" % (s / np.max(np.abs(c0)))
        elif np.any(np.abs(F) > np.abs(X0) + T * (1 + 1e-9)):
            why = "|x_ik(T)| above |x_ik(0)| + T"
    elif key == ("z", "relu_I"):
        if not np.all(F >= X0):
            why = "a coordinate decreased: min of z(T) - z(0) = %.3g" % np.min(F - X0)
    elif key == ("z", "tanh_I"):
        if s < 0.5 * np.max(np.abs(c0)):
            why = "collapsed to %.3g of the start" % (s / np.max(np.abs(c0)))
    if why:
        print("FAIL: trial %d (%s form, %s): %s" % (i, form, name, why))
        fail = 1
want = [("x", "relu_I"), ("x", "tanh_I"), ("z", "relu_I"), ("z", "tanh_I")]
if any(seen.get(k, 0) != 2 for k in want):
    print("FAIL: expected 2 trials of each of %s, got %s" % (want, seen))
    fail = 1
sys.exit(fail)
PY
check "x form: relu, W = I on {0, b}; tanh, W = I collapses within its bound; z form: relu never decreases, tanh does not collapse" test $? -eq 0
exit $fail
