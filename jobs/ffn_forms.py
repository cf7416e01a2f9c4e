#!/usr/bin/python3
"""Independent numpy reference for the authors' feed-forward experiment (docs/variants.md).

Two readings of "the MLP inside the attention dynamics" of arXiv 2305.05465v6 (concluding
section, equation (mlp.transfo)):

  z form (the equation as printed; attnsweep `ffn_form: inside`):
      z_i' = W sigma(V sum_j P_ij (z_j - z_i)),  P = softmax_j <Q e^{tV} z_i, K e^{tV} z_j>
  x form (sigma on the attention output in the original variables, observed in z = e^{-tV} x):
      x_i' = W sigma(sum_j P_ij V x_j),            P = softmax_j <Q x_i, K x_j>

Both are integrated with classical RK4 (P recomputed at every stage, max-subtracted softmax),
fixed step dt. With sigma = identity and W = I both are the base model (the same trajectory:
checked by --selftest). Nothing here shares code with attnsweep.

Usage:
  ffn_forms.py --selftest      the two forms agree for sigma = identity; RK4's order
  ffn_forms.py table [--reps R] [--seed S] [--forms z,x] [--d 2,3] [--T 15,30,50]
                     [--inits box5,box05,pos5,sphere,gauss] [--Vs paper,perron,good] [--markdown]
                               both forms integrated here from draws of its own
  ffn_forms.py summary FILE.h5 [--rerun K] [--markdown]
  ffn_forms.py hyperplanes FILE.h5 [--markdown]
                               jobs/examples/ffn.yaml's file: the "Feed-forward parts" table
  ffn_forms.py paper2d FILE.h5 [--markdown]
                               the ffn_paper2d file (spec in docs/variants.md): the table of
                               "The authors' feed-forward experiment, in their setting"
  ffn_forms.py check FILE.h5 [--rerun K] [--markdown]
                               an attnsweep results file (rk4; bulk initial, final, matrices;
                               vars z: the printed form, vars x: the x form): the tables of
                               docs/variants.md (summary) or every group (check); the W = I
                               trials of replicates < K (default 1) are rerun here and the
                               largest relative difference printed (exit 1 above 1e-6)
"""
import argparse
import sys

import numpy as np

PAPER_V = np.array([[0.64709742, 0.81911926], [0.61210449, 0.63263484]])


def expm_eig(V):
    """t -> e^{tV} for a diagonalisable V (its eigenbasis, complex arithmetic, real part)."""
    lam, R = np.linalg.eig(V)
    Rinv = np.linalg.inv(R)
    return lambda t: np.real((R * np.exp(lam * t)) @ Rinv)


def softmax_rows(S):
    S = S - S.max(axis=1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=1, keepdims=True)


SIGMA = {
    "none": lambda u: u,
    "relu": lambda u: np.maximum(u, 0.0),
    "tanh": np.tanh,
}


def rhs_z(t, Z, V, M, W, sig, etv):
    Y = Z @ etv(t).T
    P = softmax_rows(Y @ M @ Y.T)
    return sig((P @ Z - Z) @ V.T) @ W.T


def rhs_x(t, X, V, M, W, sig, etv):
    P = softmax_rows(X @ M @ X.T)
    return sig(P @ X @ V.T) @ W.T


def rk4(rhs, y0, T, dt, *args):
    y = y0.copy()
    steps = int(round(T / dt))
    for k in range(steps):
        t = k * dt
        k1 = rhs(t, y, *args)
        k2 = rhs(t + dt / 2, y + dt / 2 * k1, *args)
        k3 = rhs(t + dt / 2, y + dt / 2 * k2, *args)
        k4 = rhs(t + dt, y + dt * k3, *args)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if not np.all(np.isfinite(y)):
            return None
    return y


def run(form, Z0, V, M, W, sigma, T, dt=0.1):
    """Final (z, x) of one trial; Z0 = X0 (t = 0)."""
    etv = expm_eig(V)
    sig = SIGMA[sigma]
    if form == "z":
        Z = rk4(rhs_z, Z0, T, dt, V, M, W, sig, etv)
        if Z is None:
            return None, None
        return Z, Z @ etv(T).T
    X = rk4(rhs_x, Z0, T, dt, V, M, W, sig, etv)
    if X is None:
        return None, None
    return X @ etv(-T).T, X


def leading(V):
    """(lambda_1, phi_1, l_1, eigenvalues): V phi_1 = lambda_1 phi_1, V^T l_1 = lambda_1 l_1,
    l_1^T phi_1 = 1, sum(phi_1) >= 0."""
    lam, R = np.linalg.eig(V)
    k = int(np.argmax(np.abs(lam)))
    phi = np.real(R[:, k])
    # the sign of phi_1 is free; point it to the side of the positive orthant (for a positive
    # V: phi_1 > 0), so that "b", the top level of l_1^T z, is the side where ReLU passes
    if np.sum(phi) < 0:
        phi = -phi
    lamT, L = np.linalg.eig(V.T)
    kk = int(np.argmin(np.abs(lamT - lam[k])))
    l1 = np.real(L[:, kk])
    l1 = l1 / (l1 @ phi)
    return float(np.real(lam[k])), phi, l1, lam


def levels(c, tol):
    """Distinct values of c: sorted, a new level where the gap exceeds tol * max |c|."""
    c = np.sort(np.asarray(c, dtype=float))
    scale = np.max(np.abs(c))
    if scale == 0.0:
        return 1
    return 1 + int(np.sum(np.diff(c) > tol * scale))


def lines(Z, tol):
    """A greedy cover of the tokens Z (n x d) by lines: each step takes, among the lines
    through two tokens not yet covered, the one that holds the most tokens not yet covered (the
    first such pair in index order), a token being on a line when its distance to it is at most
    tol * the diameter of Z; tokens left that no such line holds (one token, or tokens closer
    than that to each other) take one more line. The number of lines."""
    Z = np.asarray(Z, dtype=float)
    diam = np.max(np.linalg.norm(Z[:, None] - Z[None], axis=2)) if len(Z) > 1 else 0.0
    eps = tol * diam
    left = np.ones(len(Z), dtype=bool)
    count = 0
    while left.any():
        idx = np.flatnonzero(left)
        I, J = np.triu_indices(len(idx), 1)
        I, J = idx[I], idx[J]
        U = Z[J] - Z[I]
        nu = np.linalg.norm(U, axis=1)
        keep = nu > eps  # coincident tokens give no direction
        if not keep.any():
            return count + 1
        I, U = I[keep], U[keep] / nu[keep, None]
        R = Z[None, :, :] - Z[I][:, None, :]  # pairs x tokens x d
        dist = np.linalg.norm(R - np.einsum("pn,pd->pnd", np.einsum("pnd,pd->pn", R, U), U),
                              axis=2)
        on = dist <= eps
        best = int(np.argmax((on & left).sum(axis=1)))
        left &= ~on[best]
        count += 1
    return count


def init_tokens(rng, kind, n, d):
    if kind == "box5":
        return rng.uniform(-5, 5, size=(n, d))
    if kind == "box05":
        return rng.uniform(-0.5, 0.5, size=(n, d))
    if kind == "pos5":
        return rng.uniform(0, 5, size=(n, d))
    if kind == "sphere":
        G = rng.standard_normal((n, d))
        return G / np.linalg.norm(G, axis=1, keepdims=True)
    if kind == "gauss":
        return rng.standard_normal((n, d))
    raise ValueError(kind)


def draw_V(rng, kind, d):
    if kind == "paper":
        if d != 2:
            return None
        return PAPER_V.copy()
    if kind == "perron":
        return rng.uniform(0, 1, size=(d, d))
    if kind == "good":
        # a good triple (with M = I) whose eigenvectors point anywhere: lambda_1 = 1, the rest
        # real in (-1/2, 1/2), Gaussian eigenvector matrix
        R = rng.standard_normal((d, d))
        lam = np.concatenate([[1.0], rng.uniform(-0.5, 0.5, size=d - 1)])
        return (R * lam) @ np.linalg.inv(R)
    raise ValueError(kind)


VKEYS = ["paper", "perron", "good"]
IKEYS = ["box5", "box05", "pos5", "sphere", "gauss"]
CASES = [("none", "I"), ("relu", "I"), ("tanh", "I"), ("relu", "W"), ("tanh", "W")]


def measure(form, X0, Z, X, l1, V, T):
    """The numbers of one trial (docs/variants.md): levels of l_1^T z(T) at 1e-3 and 1e-2 of
    max |l_1^T z(T)|, levels of l_1^T relu(z(T)), the max-norm ratios of l_1^T z, z and x
    (end over start), whether every level is 0 or the top one, and the tokens at rest."""
    lam1 = leading(V)[0]
    # l_1^T z = e^{-lambda_1 T} l_1^T x exactly; from x it is computed that way (no cancellation)
    c = Z @ l1 if form == "z" else np.exp(-lam1 * T) * (X @ l1)
    c0 = X0 @ l1
    cr = np.maximum(Z, 0.0) @ l1
    m = {
        "lev3": levels(c, 1e-3),
        "lev2": levels(c, 1e-2),
        "rlev2": levels(cr, 1e-2),
        "cratio": np.max(np.abs(c)) / np.max(np.abs(c0)),
        "zratio": np.max(np.abs(Z)) / np.max(np.abs(X0)),
        "xratio": np.max(np.abs(X)) / np.max(np.abs(X0)),
        # every token on the hyperplane of the largest level or on l_1^T z = 0 (1e-2 of max)
        "zero_b": bool(np.all((np.abs(c - np.max(c)) <= 1e-2 * np.max(np.abs(c)))
                              | (np.abs(c) <= 1e-2 * np.max(np.abs(c))))),
        "rest": int(np.sum(np.linalg.norm(Z - X0, axis=1)
                           <= 1e-6 * np.max(np.linalg.norm(X0[:, None] - X0[None], axis=2)))),
    }
    if form == "x":
        # z = e^{-TV} x loses |x| ||e^{-TV}|| 1e-16 to rounding in x: the full z (and its relu)
        # is meaningless once that reaches 1e-3 of |z|; l_1^T z = e^{-lambda_1 T} l_1^T x is not
        # affected (the left eigenvector), so the levels of l_1^T z are always kept.
        err = np.max(np.abs(X)) * np.linalg.norm(expm_eig(V)(-T), 2) * 1e-15
        if err > 1e-3 * np.max(np.abs(Z)):
            m["zratio"] = m["rlev2"] = float("nan")
    return m


def fmt(v):
    if not np.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 1e3 or abs(v) < 1e-2:
        return "%.1e" % v
    return "%.3g" % v


def table(args):
    n = args.n
    rows = []
    for form in args.forms.split(","):
        for d in [int(s) for s in args.d.split(",")]:
            for vk in args.Vs.split(","):
                for ik in args.inits.split(","):
                    for T in [float(s) for s in args.T.split(",")]:
                        res = {case: [] for case in CASES}
                        fails = {case: 0 for case in CASES}
                        if vk == "paper" and d != 2:
                            continue
                        for r in range(args.reps):
                            # one stream per (d, V, init, replicate): every form, horizon and
                            # sigma of a replicate starts from the same tokens and matrices
                            key = [args.seed, d, VKEYS.index(vk), IKEYS.index(ik), r]
                            rng = np.random.default_rng(key)
                            V = draw_V(rng, vk, d)
                            X0 = init_tokens(rng, ik, n, d)
                            Wr = rng.standard_normal((d, d)) / np.sqrt(d)
                            lam1, phi, l1, lam = leading(V)
                            for sigma, wk in CASES:
                                W = np.eye(d) if wk == "I" else Wr
                                Z, X = run(form, X0, V, np.eye(d), W, sigma, T)
                                if Z is None:
                                    fails[(sigma, wk)] += 1
                                    continue
                                res[(sigma, wk)].append(measure(form, X0, Z, X, l1, V, T))
                        for case in CASES:
                            ms = res[case]
                            if not ms:
                                continue
                            def med(k):
                                v = [m[k] for m in ms if np.isfinite(m[k])]
                                return float(np.median(v)) if v else float("nan")

                            def ext(k, f):
                                v = [m[k] for m in ms if np.isfinite(m[k])]
                                return float(f(v)) if v else float("nan")

                            def le3(k):
                                return sum(1 for m in ms if m[k] <= 3)

                            def na(s, k):
                                return "-" if not np.isfinite(med(k)) else s

                            rows.append([
                                form, str(d), vk, ik, "%g" % T,
                                case[0] + (", " + case[1] if case[0] != "none" else ""),
                                "%g [%g] / %g [%g]" % (med("lev3"), ext("lev3", np.max),
                                                       med("lev2"), ext("lev2", np.max)),
                                "%d / %d" % (le3("lev3"), le3("lev2")),
                                na("%g [%g] (%d)" % (med("rlev2"), ext("rlev2", np.max),
                                                     le3("rlev2")), "rlev2"),
                                "%s [%s]" % (fmt(med("cratio")), fmt(ext("cratio", np.max))),
                                na("%s [%s, %s]" % (fmt(med("zratio")),
                                                    fmt(ext("zratio", np.min)),
                                                    fmt(ext("zratio", np.max))), "zratio"),
                                fmt(med("xratio")),
                                "%d/%d" % (len(ms), len(ms) + fails[case]),
                            ])
    head = ["form", "d", "V", "x0", "T", "sigma, W", "levels l1.z med [max] (1e-3 / 1e-2)",
            "<= 3 levels (1e-3 / 1e-2)", "levels l1.relu(z) med [max] (<= 3)",
            "max abs l1.z(T) / max abs l1.z(0) med [max]",
            "max abs z(T) / max abs z(0) med [min, max]", "max abs x(T) / max abs x(0) med",
            "finite"]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        for r in rows:
            print("\t".join(r))


def selftest():
    rng = np.random.default_rng(7)
    d, n = 2, 8
    X0 = rng.uniform(-1, 1, size=(n, d))
    V = PAPER_V
    M = np.eye(d)
    # the two forms are the same base model with sigma = identity, W = I
    Zz, Xz = run("z", X0, V, M, np.eye(d), "none", 3.0, 0.01)
    Zx, Xx = run("x", X0, V, M, np.eye(d), "none", 3.0, 0.01)
    err = np.max(np.abs(Xz - Xx)) / np.max(np.abs(Xx))
    # RK4 order: halving dt divides the error by about 16
    Z1, _ = run("z", X0, V, M, np.eye(d), "tanh", 1.0, 0.1)
    Z2, _ = run("z", X0, V, M, np.eye(d), "tanh", 1.0, 0.05)
    Z4, _ = run("z", X0, V, M, np.eye(d), "tanh", 1.0, 0.025)
    ratio = np.max(np.abs(Z1 - Z2)) / np.max(np.abs(Z2 - Z4))
    ok = err < 1e-8 and 12 < ratio < 20
    print("z/x forms agree to %.1e; RK4 error ratio per halving %.1f: %s"
          % (err, ratio, "ok" if ok else "FAILED"))
    return 0 if ok else 1


def read_trials(path):
    """The trials of an attnsweep results file, one dict each: every field of /trials (enum
    fields as their labels), and the bulk arrays the file stores ("initial_tokens",
    "final_tokens" as n x d, "V", "M" as d x d; absent ones left out)."""
    import h5py

    with h5py.File(path, "r") as f:
        tr = f["/trials"][...]
        enums = {}
        for k in tr.dtype.names:
            e = h5py.check_enum_dtype(tr.dtype[k])
            if e is not None:
                enums[k] = {v: n for n, v in e.items()}
        shapes = {"initial_tokens": "nd", "final_tokens": "nd", "V": "dd", "M": "dd"}
        bulk = {}
        for k in shapes:
            if "/bulk/" + k in f and "/bulk/%s_offset" % k in f:
                bulk[k] = (f["/bulk/" + k][...], f["/bulk/%s_offset" % k][...])
    out = []
    for i, r in enumerate(tr):
        t = {k: enums[k][r[k]] if k in enums else r[k].item() for k in tr.dtype.names}
        dims = {"n": int(r["n"]), "d": int(r["d"])}
        for k, (data, off) in bulk.items():
            t[k] = data[off[i]:off[i + 1]].reshape(dims[shapes[k][0]], dims[shapes[k][1]])
        out.append(t)
    return out


def v_label(t):
    """The V of a trial as the spec named it: its family, "paperV" for the paper's matrix."""
    fam = t["vfamily"]
    if fam == "explicit" and "V" in t and t["V"].shape == PAPER_V.shape \
            and np.allclose(t["V"], PAPER_V, rtol=0, atol=1e-12):
        return "paperV"
    return fam


def ffn_case(t):
    """base, or sigma_I / sigma_W (the feed-forward nonlinearity and W = I or random)."""
    if t["ffn"] == "none":
        return "base"
    return "%s_%s" % (t["ffn"], "I" if t["ffn_w"] == "identity" else "W")


def load(path, rerun_replicates):
    """One dict per trial of an attnsweep results file (rk4, z or x variables, base model or
    the inside form; bulk initial and final tokens and matrices): the coordinates, measure()'s
    numbers, and for W = I trials of replicate < rerun_replicates the relative difference to a
    rerun here (of l_1^T z at every T, of the tokens for T <= 20)."""
    trials = read_trials(path)
    out = []
    for i, r in enumerate(trials):
        n, d = int(r["n"]), int(r["d"])
        form = r["vars"]  # z: the printed equation; x: the x form
        method = r["method"]
        assert method in ("rk4", "euler"), method
        assert r["outcome"] in ("reached_T", "settled"), (i, r["outcome"])
        X0, F, V, M = r["initial_tokens"], r["final_tokens"], r["V"], r["M"]
        T, dt = float(r["t_final"]), float(r["dt"])
        sigma = r["ffn"]
        wk = r["ffn_w"]
        if form == "z":
            Z, X = F, F @ expm_eig(V)(T).T
        else:
            Z, X = F @ expm_eig(V)(-T).T, F
        lam1, phi, l1, lam = leading(V)
        m = measure(form, X0, Z, X, l1, V, T)
        m["diff"] = m["cdiff"] = m["sens"] = float("nan")
        if wk != "random" and method == "rk4" and int(r["replicate"]) < rerun_replicates:
            # full tokens only up to T = 20: later, near-ties between tokens on one hyperplane
            # make z along the other eigenvectors depend on rounding (a 1e-13 change of x0
            # moves it by 3 to 5% at T = 30 and 50, in either program); l_1^T z stays well
            # conditioned
            Zr, Xr = run(form, X0, V, M, np.eye(d), sigma, T, dt)
            Fr = Zr if form == "z" else Xr
            m["cdiff"] = np.max(np.abs((Fr - F) @ l1)) / np.max(np.abs(F @ l1))
            if T <= 20:
                m["diff"] = np.max(np.abs(Fr - F)) / np.max(np.abs(F))
            m["sens"] = 0.0
            if m["cdiff"] > 1e-6 or m["diff"] > 1e-6:
                # the problem's own conditioning: the same rerun from x0 changed by 1e-13
                # relative (a common factor, and a fixed random one per entry)
                prng = np.random.default_rng(13)
                for P0 in (X0 * (1 + 1e-13), X0 * (1 + 1e-13 * prng.standard_normal(X0.shape))):
                    Zp, Xp = run(form, P0, V, M, np.eye(d), sigma, T, dt)
                    Fp = Zp if form == "z" else Xp
                    m["sens"] = max(m["sens"],
                                    np.max(np.abs((Fp - Fr) @ l1)) / np.max(np.abs(Fr @ l1)),
                                    np.max(np.abs(Fp - Fr)) / np.max(np.abs(Fr)) if T <= 20
                                    else 0.0)
        # the V and the case from the trial's own coordinates (not from positions in the case
        # label, which differ between specs)
        m.update(form=form, vfam=v_label(r), d=d, n=n,
                 init="%s %g" % (r["init"], float(r["init_scale"])),
                 T=T, sigma=sigma, W=wk, case=ffn_case(r),
                 phi_orthant=bool(np.all(phi > 0) or np.all(phi < 0)),
                 up=bool(np.all(Z >= X0)) if form == "z" else False)
        out.append(m)
    return out


def agg(ms, k, f):
    v = [m[k] for m in ms if np.isfinite(m[k])]
    return float(f(v)) if v else float("nan")


def print_table(head, rows, markdown):
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print("\t".join(head))
        for r in rows:
            print("\t".join(r))
    print()


def check(path, markdown, rerun):
    """Every group (case, d, initial law, T) of a results file, and the reruns."""
    ts = load(path, rerun)
    groups = {}
    for m in ts:
        key = (m["form"], m["vfam"], m["d"], m["init"], m["T"], m["case"])
        groups.setdefault(key, []).append(m)
    head = ["form", "V", "d", "x0", "T", "case", "levels l1.z med [max] (1e-3 / 1e-2)",
            "<= 3 levels (1e-3 / 1e-2)", "levels l1.relu(z) med [max] (<= 3)",
            "max abs l1.z(T) / max abs l1.z(0) med [max]",
            "max abs z(T) / max abs z(0) med [min, max]", "max abs x(T) / max abs x(0) med",
            "rerun: max rel. diff of l1.z [of the tokens, T <= 20]"]
    rows = []
    for key in sorted(groups):
        ms = groups[key]
        med = lambda k: agg(ms, k, np.median)
        mx = lambda k: agg(ms, k, np.max)
        mn = lambda k: agg(ms, k, np.min)
        le3 = lambda k: sum(1 for m in ms if m[k] <= 3)
        rows.append([key[0], key[1], str(key[2]), key[3], "%g" % key[4], key[5],
                     "%g [%g] / %g [%g]" % (med("lev3"), mx("lev3"), med("lev2"), mx("lev2")),
                     "%d / %d of %d" % (le3("lev3"), le3("lev2"), len(ms)),
                     "-" if not np.isfinite(med("rlev2")) else
                     "%g [%g] (%d)" % (med("rlev2"), mx("rlev2"), le3("rlev2")),
                     "%s [%s]" % (fmt(med("cratio")), fmt(mx("cratio"))),
                     "-" if not np.isfinite(med("zratio")) else
                     "%s [%s, %s]" % (fmt(med("zratio")), fmt(mn("zratio")), fmt(mx("zratio"))),
                     fmt(med("xratio")),
                     "%s [%s]" % (fmt(mx("cdiff")), fmt(mx("diff")))])
    print_table(head, rows, markdown)
    return rerun_verdict(ts)


def rerun_verdict(ts):
    """Agreement of the reruns: within 1e-6, or within 10 times the change a 1e-13 relative
    change of x0 makes (where the problem itself is that ill-conditioned)."""
    rr = [m for m in ts if np.isfinite(m["cdiff"])]
    cd = agg(rr, "cdiff", np.max)
    fd = agg(rr, "diff", np.max)
    bad = [m for m in rr if max(m["cdiff"], m["diff"] if np.isfinite(m["diff"]) else 0)
           > max(1e-6, 10 * m["sens"])]
    ill = [m for m in rr if m["sens"] > 1e-6]
    print("reruns here (W = I): %d trials; largest relative difference of l_1^T z %s, of the "
          "tokens (T <= 20) %s; %d trials where a 1e-13 relative change of x0 moves the result "
          "by more than 1e-6 (largest %s); %d beyond max(1e-6, 10 x that change)"
          % (len(rr), fmt(cd), fmt(fd), len(ill), fmt(agg(rr, "sens", np.max)), len(bad)))
    return 1 if bad else 0


def summary(path, markdown, rerun):
    """The tables of docs/variants.md ("Which reading reproduces the caption")."""
    ts = load(path, rerun)
    forms = [f for f in ("z", "x") if any(m["form"] == f for m in ts)]
    Ts = sorted({m["T"] for m in ts})
    cases = ["base", "relu_I", "tanh_I", "relu_W", "tanh_W"]

    def count(ms, pred):
        return "%d/%d" % (sum(1 for m in ms if pred(m)), len(ms))

    # 1. every setting together, per form, case and horizon
    head = ["form", "case", "T", "<= 3 levels of l1.z (1e-2)", "levels within {0, max} (1e-2)",
            "l1.z collapsed (max abs l1.z(T) <= 1e-3 max abs l1.z(0))",
            "z collapsed (max abs z(T) <= 1e-3 max abs z(0))", "x collapsed (same in x)",
            "median max abs l1.z(T) / max abs l1.z(0)"]
    rows = []
    for f in forms:
        for c in cases:
            for T in Ts:
                ms = [m for m in ts if m["form"] == f and m["case"] == c and m["T"] == T]
                if not ms:
                    continue
                rows.append([f, c, "%g" % T, count(ms, lambda m: m["lev2"] <= 3),
                             count(ms, lambda m: m["zero_b"]),
                             count(ms, lambda m: m["cratio"] <= 1e-3),
                             count(ms, lambda m: m["zratio"] <= 1e-3),
                             count(ms, lambda m: m["xratio"] <= 1e-3),
                             fmt(agg(ms, "cratio", np.median))])
    print_table(head, rows, markdown)
    # 2. per V family, d and initial law (T = max), for the cases that carry the caption
    T = Ts[-1]
    head = ["form", "V", "d", "x0"] + ["%s: <= 3 levels, l1 collapsed" % c for c in cases]
    rows = []
    keys = sorted({(m["form"], m["vfam"], m["d"], m["init"]) for m in ts},
                  key=lambda k: (forms.index(k[0]), k[1], k[2], k[3]))
    for k in keys:
        row = [k[0], k[1], str(k[2]), k[3]]
        for c in cases:
            ms = [m for m in ts if (m["form"], m["vfam"], m["d"], m["init"]) == k
                  and m["case"] == c and m["T"] == T]
            row.append("%d, %d of %d" % (sum(1 for m in ms if m["lev2"] <= 3),
                                         sum(1 for m in ms if m["cratio"] <= 1e-3), len(ms)))
        rows.append(row)
    print("T = %g" % T)
    print_table(head, rows, markdown)
    # 3. the mechanisms
    zr = [m for m in ts if m["form"] == "z" and m["case"] == "relu_I"]
    zb = [m for m in zr if m["init"] == "box 5"]
    print("z form, relu, W = I: z(T) >= z(0) componentwise in %s trials; tokens at rest "
          "(|z_i(T) - z_i(0)| <= 1e-6 of the initial diameter) median %g of %d, with x0 "
          "U[-5, 5]^d %g" % (count(zr, lambda m: m["up"]), agg(zr, "rest", np.median),
                             ts[0]["n"], agg(zb, "rest", np.median)))
    zs = [m for m in ts if m["form"] == "z"]
    print("z form: smallest max |l_1^T z(T)| / max |l_1^T z(0)| %s (with x0 U[-5, 5]^d %s)"
          % (fmt(agg(zs, "cratio", np.min)),
             fmt(agg([m for m in zs if m["init"] == "box 5"], "cratio", np.min))))
    for fam in sorted({m["vfam"] for m in ts}):
        ms = [m for m in ts if m["form"] == "x" and m["case"] == "relu_I" and m["vfam"] == fam]
        print("x form, relu, W = I, V %s, every T: levels {0, b} %s, <= 3 levels %s"
              % (fam, count(ms, lambda m: m["zero_b"]), count(ms, lambda m: m["lev2"] <= 3)))
    rw = [m for m in ts if m["form"] == "x" and m["case"] == "relu_W" and m["cratio"] > 1e-3]
    print("x form, relu, random W, every T: %d trials not collapsed along l_1, in %s of them "
          "max |l_1^T z| grew (largest ratio %s)" % (len(rw), count(rw, lambda m: m["cratio"] > 1),
                                                     fmt(agg(rw, "cratio", np.max))))
    for f in forms:
        for fam in sorted({m["vfam"] for m in ts}):
            ms = [m for m in ts if m["form"] == f and m["case"] == "relu_I" and m["vfam"] == fam
                  and m["T"] == T]
            ins = [m for m in ms if m["phi_orthant"]]
            out = [m for m in ms if not m["phi_orthant"]]
            print("%s form, relu, W = I, V %s, T = %g: <= 3 levels with phi_1 in +-(R_>0)^d %s, "
                  "outside %s" % (f, fam, T, count(ins, lambda m: m["lev2"] <= 3),
                                  count(out, lambda m: m["lev2"] <= 3)))
    print()
    return rerun_verdict(ts)


def groups_in_order(trials, key):
    """[(key, trials)] in the order the keys first appear (the sweep's order)."""
    out = {}
    for t in trials:
        out.setdefault(key(t), []).append(t)
    return list(out.items())


def z_final(t):
    """The final tokens in the rescaled variables z (vars x: z = e^{-TV} x)."""
    F = t["final_tokens"]
    if t["vars"] == "x":
        return F @ expm_eig(t["V"])(-float(t["t_final"])).T
    return F


def hyperplanes(path, markdown):
    """docs/variants.md, "Feed-forward parts" (jobs/examples/ffn.yaml): per case, sigma, form,
    W and method of the file, the hyperplanes (levels of l_1^T z(T), l_1 the left leading
    eigenvector of the stored V, levels closer than 1e-3 max abs(l_1^T z) merged), how many
    trials end on at most three, and max_i abs(z_i(T)) (largest entry) over the initial box's
    scale. Needs final tokens and matrices in the file."""
    trials = read_trials(path)
    for t in trials:
        if "final_tokens" not in t or "V" not in t:
            print("%s: trial %d: no stored final tokens or V (output: {final: true, "
                  "matrices: true})" % (path, t["trial"]), file=sys.stderr)
            return 2
    scales = sorted({float(t["init_scale"]) for t in trials})
    rows = []
    for key, ts in groups_in_order(trials, lambda t: (
            t["case_name"].split("/")[0], t["ffn"],
            "-" if t["ffn"] == "none" else t["ffn_form"],
            "-" if t["ffn"] == "none" else t["ffn_w"], t["method"])):
        hp, big = [], []
        for t in ts:
            Z = z_final(t)
            if not np.all(np.isfinite(Z)):
                continue
            hp.append(levels(Z @ leading(t["V"])[2], 1e-3))
            big.append(np.max(np.abs(Z)) / float(t["init_scale"]))
        rows.append(list(key) + [
            "%g [%g]" % (np.median(hp), np.max(hp)) if hp else "-",
            "%d/%d" % (sum(1 for h in hp if h <= 3), len(ts)),
            "%.2g" % np.median(big) if big else "-"])
    head = ["case", "sigma", "form", "W", "method", "hyperplanes l_1^T z med [max]",
            "<= 3 hyperplanes", "max_i abs(z_i) / %s med" % "/".join("%g" % s for s in scales)]
    print_table(head, rows, markdown)
    return 0


def paper2d(path, markdown):
    """docs/variants.md, "The authors' feed-forward experiment, in their setting" (the spec
    ffn_paper2d written out there): per V, sigma, W and T, the levels of l_1^T z(T) and the
    greedy line cover of z(T) at 1e-3 and 1e-2, max_i |z_i(T)| / max_i |z_i(0)| (Euclidean
    norms of the tokens) and the tokens that never moved (abs(z_i(T) - z_i(0)) <= 1e-6 of the
    diameter of z(T)). Needs initial and final tokens and matrices in the file."""
    trials = read_trials(path)
    for t in trials:
        if any(k not in t for k in ("initial_tokens", "final_tokens", "V")):
            print("%s: trial %d: no stored initial or final tokens or V (output: {initial: "
                  "true, final: true, matrices: true})" % (path, t["trial"]), file=sys.stderr)
            return 2
    rows = []
    for key, ts in groups_in_order(trials, lambda t: (
            "paper V" if v_label(t) == "paperV" else "%s V" % v_label(t).capitalize(),
            "base" if t["ffn"] == "none" else "%s, %s" % (
                t["ffn"], "I" if t["ffn_w"] == "identity" else t["ffn_w"]),
            float(t["t_final"]))):
        ms = []
        for t in ts:
            Z, X0 = z_final(t), t["initial_tokens"]
            c = Z @ leading(t["V"])[2]
            diam = np.max(np.linalg.norm(Z[:, None] - Z[None], axis=2))
            ms.append({"lev3": levels(c, 1e-3), "lev2": levels(c, 1e-2),
                       "lin3": lines(Z, 1e-3), "lin2": lines(Z, 1e-2),
                       "zratio": np.max(np.linalg.norm(Z, axis=1)) /
                       np.max(np.linalg.norm(X0, axis=1)),
                       "still": int(np.sum(np.linalg.norm(Z - X0, axis=1) <= 1e-6 * diam))})
        med = lambda k: agg(ms, k, np.median)
        mx = lambda k: agg(ms, k, np.max)
        le3 = lambda k: sum(1 for m in ms if m[k] <= 3)
        rows.append(["%s, %s" % key[:2], "%g" % key[2],
                     "%g [%g] / %g [%g]" % (med("lev3"), mx("lev3"), med("lev2"), mx("lev2")),
                     "%d / %d" % (le3("lev3"), le3("lev2")),
                     "%g [%g] / %g [%g]" % (med("lin3"), mx("lin3"), med("lin2"), mx("lin2")),
                     "%d / %d" % (le3("lin3"), le3("lin2")),
                     "%s [%s, %s]" % (fmt(med("zratio")), fmt(agg(ms, "zratio", np.min)),
                                      fmt(mx("zratio"))),
                     "%g [%g]" % (med("still"), mx("still"))])
    # by (V, sigma, W) in the order the sweep first has them, then by T
    first = list(dict.fromkeys(r[0] for r in rows))
    rows.sort(key=lambda r: (first.index(r[0]), float(r[1])))
    head = ["V, sigma, W", "T", "levels l_1^T z med [max] (1e-3 / 1e-2)",
            "<= 3 levels (1e-3 / 1e-2)", "lines med [max] (1e-3 / 1e-2)",
            "<= 3 lines (1e-3 / 1e-2)", "max abs(z(T)) / max abs(z(0)) med [min, max]",
            "tokens that never moved med [max]"]
    print_table(head, rows, markdown)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", default="table")
    ap.add_argument("file", nargs="?")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=2305)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--forms", default="z,x")
    ap.add_argument("--d", default="2,3")
    ap.add_argument("--T", default="15,50")
    ap.add_argument("--inits", default="box5")
    ap.add_argument("--Vs", default="paper,perron")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--rerun", type=int, default=1,
                    help="check, summary: rerun the W = I trials of replicates below this here")
    args = ap.parse_args()
    if args.selftest:
        return selftest()
    if args.what == "check":
        return check(args.file, args.markdown, args.rerun)
    if args.what == "summary":
        return summary(args.file, args.markdown, args.rerun)
    if args.what == "hyperplanes":
        return hyperplanes(args.file, args.markdown)
    if args.what == "paper2d":
        return paper2d(args.file, args.markdown)
    table(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
