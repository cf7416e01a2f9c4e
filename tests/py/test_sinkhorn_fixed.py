#!/usr/bin/python3
"""attention: sinkhorn_fixed against an independent implementation (numpy only).

A small sweep (a good triple with a Gaussian M, n = 8, d = 2, T = 1, dt = 0.05, RK4, vars x and
vars z, K = sinkhorn_iters 1 and 3) runs through the attnsweep binary with its initial and final
tokens, final attention and matrices stored. This test integrates the same ODE from the stored
initial tokens and matrices with its own RK4 and its own log-domain Sinkhorn (Sinkformers'
map: the row softmax, then K - 1 times the columns normalised and then the rows, written here
on log P directly, not on potentials as attention.c does) and compares:

* the final attention with the map at the stored final state, to 1e-12 (entries are <= 1);
* the final tokens with its own integration, to 1e-9 relative (the bound is derived below);
* the records: outcome reached_T, sinkhorn_missed -1 (not applicable), sinkhorn_dev the
  largest |row or column sum - 1| of the map, at least that of the final P.

x variables: x_i' = sum_j P_ij V x_j, P the map of the scores x_i^T M x_j (M = Q^T K, with
beta in it, as stored). z variables (docs/theory.md section 1): z = e^{-tV} x,
z_i' = V (sum_j P_ij z_j - z_i), P the map of the scores y_i^T M y_j with y = e^{tV} z
(the same P: the rows of the map sum to 1, its last step being a row normalisation).
"""

import os
import subprocess
import tempfile
import unittest

import h5py
import numpy as np

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

SPEC = """name: sinkhorn_fixed_reference
seed: 3
replicates: 2
common: [sinkhorn_iters]
output: {initial: true, final: true, attention: true, matrices: true}
sweep:
  vfamily: good
  mfamily: gaussian
  attention: sinkhorn_fixed
  sinkhorn_iters: [1, 3]
  vars: [x, z]
  method: rk4
  d: 2
  n: 8
  T: 1
  dt: 0.05
  init: {kind: gauss, scale: 1}
"""


def binary():
    exe = os.environ.get("ATTNSWEEP")
    if not exe and os.environ.get("AS_BUILD_DIR"):
        exe = os.path.join(os.environ["AS_BUILD_DIR"], "attnsweep")
    return exe


def lse(a, axis):
    """log sum exp along axis, kept as a dimension (the maximum subtracted first)."""
    m = np.max(a, axis=axis, keepdims=True)
    return m + np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True))


def sinkhorn_fixed(S, K):
    """Sinkformers' map of the log-weights S: row softmax, then K - 1 times columns, rows."""
    L = S - lse(S, 1)
    for _ in range(K - 1):
        L = L - lse(L, 0)
        L = L - lse(L, 1)
    return np.exp(L)


def expm(A):
    """e^A by scaling and squaring of its Taylor series (about 1e-15 relative here)."""
    norm = np.max(np.sum(np.abs(A), axis=0))
    s = max(0, int(np.ceil(np.log2(norm))) + 1) if norm > 0 else 0
    B = A / 2.0 ** s
    E, term = np.eye(len(A)), np.eye(len(A))
    for k in range(1, 25):
        term = term @ B / k
        E = E + term
    for _ in range(s):
        E = E @ E
    return E


def attention(Y, V, M, t, K, zvars):
    """P at the state Y of the integrated variables at time t."""
    X = Y @ expm(t * V).T if zvars else Y
    return sinkhorn_fixed(X @ M @ X.T, K)


def field(Y, V, M, t, K, zvars):
    P = attention(Y, V, M, t, K, zvars)
    return (P @ Y - Y) @ V.T if zvars else P @ Y @ V.T


def integrate(Y0, V, M, T, dt, K, zvars):
    """Classical RK4 with the fixed step dt to T (steps = T / dt)."""
    Y, t = Y0.copy(), 0.0
    for k in range(int(round(T / dt))):
        t = k * dt
        k1 = field(Y, V, M, t, K, zvars)
        k2 = field(Y + 0.5 * dt * k1, V, M, t + 0.5 * dt, K, zvars)
        k3 = field(Y + 0.5 * dt * k2, V, M, t + 0.5 * dt, K, zvars)
        k4 = field(Y + dt * k3, V, M, t + dt, K, zvars)
        Y = Y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return Y


def deviation(P):
    return max(np.max(np.abs(P.sum(axis=0) - 1)), np.max(np.abs(P.sum(axis=1) - 1)))


class SinkhornFixedReference(unittest.TestCase):
    def test_against_numpy(self):
        exe = binary()
        self.assertTrue(exe and os.access(exe, os.X_OK),
                        "needs the built attnsweep: set ATTNSWEEP (ctest does)")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        spec, out = os.path.join(tmp.name, "s.yaml"), os.path.join(tmp.name, "s.h5")
        with open(spec, "w") as fh:
            fh.write(SPEC)
        p = subprocess.run([exe, "run", spec, "-o", out], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with h5py.File(out, "r") as f:
            t = f["trials"][...]
            bulk = {k: (f["bulk"][k + "_offset"][...], f["bulk"][k][...])
                    for k in ("initial_tokens", "final_tokens", "final_attention", "V", "M")}
            label = {k: {v: n for n, v in h5py.check_enum_dtype(t.dtype[k]).items()}
                     for k in ("attention", "outcome", "vars")}

        def slab(kind, i, shape):
            off, data = bulk[kind]
            return data[off[i]:off[i + 1]].reshape(shape)

        self.assertEqual(len(t), 8)
        seen = set()
        for i, r in enumerate(t):
            n, d, K = int(r["n"]), int(r["d"]), int(r["sinkhorn_iters"])
            zvars = label["vars"][r["vars"]] == "z"
            where = "trial %d (K = %d, vars %s)" % (i, K, "z" if zvars else "x")
            seen.add((K, zvars))
            self.assertEqual(label["attention"][r["attention"]], "sinkhorn_fixed", where)
            self.assertEqual(label["outcome"][r["outcome"]], "reached_T", where)
            self.assertEqual(int(r["sinkhorn_missed"]), -1, where)
            self.assertTrue(np.isnan(r["sinkhorn_tol"]), where)
            X0, Yc = slab("initial_tokens", i, (n, d)), slab("final_tokens", i, (n, d))
            Pc = slab("final_attention", i, (n, n))
            V, M = slab("V", i, (d, d)), slab("M", i, (d, d))
            T, dt = float(r["T"]), float(r["dt"])
            self.assertEqual(float(r["t_final"]), T, where)

            # The attention at the stored final state: the map to 1e-12. The scores of both
            # programs agree to rounding (a few 1e-16 of |s| <= 10 here: 1e-14 in the exponents).
            Pp = attention(Yc, V, M, T, K, zvars)
            self.assertLess(np.max(np.abs(Pc - Pp)), 1e-12, where + ": final attention")
            if K > 1:  # the map is not the softmax: the check above tells them apart
                self.assertGreater(np.max(np.abs(Pp - attention(Yc, V, M, T, 1, zvars))), 1e-6,
                                   where)
            # sinkhorn_dev: the largest deviation over every evaluation, the final one included
            self.assertTrue(np.isfinite(r["sinkhorn_dev"]), where)
            self.assertGreaterEqual(r["sinkhorn_dev"] + 1e-15, deviation(Pp), where)

            # The final tokens: both programs take the same 20 RK4 steps of the same field, so
            # their truncation errors are the same and they differ by rounding alone: about
            # 2^-52 per operation, some tens of operations per stage, 4 stages, 20 steps,
            # amplified by the flow's sensitivity A = |dY(T)| / |dY(0)|, measured here by a
            # perturbation of the start. With A below 1e3 that is below 1e3 * 80 * 50 * 2.2e-16
            # ~ 1e-9 relative, the tolerance; a wrong P (another K, a row or column step less)
            # moves the tokens by 1e-3 or more.
            Yp = integrate(X0, V, M, T, dt, K, zvars)
            eps = 1e-8 * np.max(np.abs(X0))
            rng = np.random.default_rng(i)
            dY0 = eps * rng.standard_normal(X0.shape)
            A = np.max(np.abs(integrate(X0 + dY0, V, M, T, dt, K, zvars) - Yp)) / eps
            self.assertLess(A, 1e3, where + ": the flow amplifies perturbations by %g" % A)
            err = np.max(np.abs(Yc - Yp)) / np.max(np.abs(Yp))
            self.assertLess(err, 1e-9, where + ": final tokens (%g relative)" % err)
            if K > 1:
                other = integrate(X0, V, M, T, dt, 1, zvars)
                self.assertGreater(np.max(np.abs(other - Yp)) / np.max(np.abs(Yp)), 1e-6, where)
        self.assertEqual(seen, {(1, False), (1, True), (3, False), (3, True)})


if __name__ == "__main__":
    unittest.main()
