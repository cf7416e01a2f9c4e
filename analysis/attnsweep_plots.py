#!/usr/bin/python3
"""attnsweep_plots.py: figures of attnsweep results (PNG, matplotlib with the Agg backend).

The drawing functions take plain numpy arrays, so they work on any source of tokens:
  plot_tokens(ax, tokens, ...)      end state in d = 2 or 3: tokens, convex hull, hyperplanes
                                    l_1^T z = level (good triples), leaders, trajectories
  plot_p(ax, P)                     heat map of an attention matrix
  plot_phase(phase, png)            verdict fractions against a swept parameter (from
                                    attnsweep_summarize.summary_tables(..., phase=PARAM))
  plot_trial_file(rf, trial, png)   one trial of a results file (its /bulk data), used by
                                    `attnsweep summarize OUT.h5 --plot TRIAL --png FILE`
Geometry helpers (convex hulls in 2-D and 3-D, the left leading eigenvector, leaders read off
P) are here too and are tested on their own.
"""

import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402,F401 (registers 3d)


# ---------------------------------------------------------------- geometry
def convex_hull_2d(points):
    """Indices of the vertices of the convex hull of points (m, 2), counter-clockwise, by
    Andrew's monotone chain; collinear boundary points are not vertices."""
    pts = np.asarray(points, dtype=float)
    m = len(pts)
    if m < 3:
        return list(range(m))
    order = sorted(range(m), key=lambda i: (pts[i, 0], pts[i, 1]))

    def cross(o, a, b):
        return (pts[a, 0] - pts[o, 0]) * (pts[b, 1] - pts[o, 1]) - \
            (pts[a, 1] - pts[o, 1]) * (pts[b, 0] - pts[o, 0])

    lower, upper = [], []
    for i in order:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= 0:
            lower.pop()
        lower.append(i)
    for i in reversed(order):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= 0:
            upper.pop()
        upper.append(i)
    hull = lower[:-1] + upper[:-1]
    return hull if len(hull) >= 2 else order[:1]


def convex_hull_3d(points, tol=1e-9):
    """Triangular faces (index triples) of the convex hull of points (m, 3): every triple whose
    plane leaves all points on one side (brute force, vectorised; meant for the paper's small
    n). Coplanar facets come back as several triangles. Returns (faces, vertex indices)."""
    pts = np.asarray(points, dtype=float)
    m = len(pts)
    if m < 4:
        return [], list(range(m))
    scale = max(np.ptp(pts, axis=0).max(), 1e-300)
    tri = np.array(list(itertools.combinations(range(m), 3)))
    a, b, c = pts[tri[:, 0]], pts[tri[:, 1]], pts[tri[:, 2]]
    nrm = np.cross(b - a, c - a)
    keep = np.linalg.norm(nrm, axis=1) > tol * scale * scale
    tri, a, nrm = tri[keep], a[keep], nrm[keep]
    faces = []
    step = max(1, 2_000_000 // max(m, 1))
    for s in range(0, len(tri), step):
        # side[t, j] = n_t . (p_j - a_t): the signed distance (times |n_t|) of point j
        side = np.einsum("tk,tmk->tm", nrm[s:s + step], pts[None, :, :] - a[s:s + step, None, :])
        lim = tol * scale * np.linalg.norm(nrm[s:s + step], axis=1)[:, None]
        ok = np.all(side <= lim, axis=1) | np.all(side >= -lim, axis=1)
        faces.extend(tuple(int(i) for i in t) for t in tri[s:s + step][ok])
    verts = sorted({i for f in faces for i in f})
    return faces, verts


def left_leading_eigvec(V):
    """(lambda_1, l_1, phi_1): the eigenvalue of V of largest modulus (taken real), the left
    eigenvector l_1 (V^T l_1 = lambda_1 l_1) and the right one phi_1 (|phi_1| = 1) scaled so
    that l_1^T phi_1 = 1, as theory.md section 2 defines them."""
    V = np.asarray(V, dtype=float)
    w, R = np.linalg.eig(V)
    k = int(np.argmax(np.abs(w)))
    phi = np.real(R[:, k])
    phi /= np.linalg.norm(phi)
    wl, L = np.linalg.eig(V.T)
    kl = int(np.argmin(np.abs(wl - w[k])))
    l1 = np.real(L[:, kl])
    l1 = l1 / float(l1 @ phi)
    return float(np.real(w[k])), l1, phi


def leaders_from_p(P, threshold=0.9):
    """Tokens that receive a whole row of P: columns j with P_ij >= threshold for some i."""
    P = np.asarray(P, dtype=float)
    return sorted(int(j) for j in np.nonzero(P.max(axis=0) >= threshold)[0])


# ---------------------------------------------------------------- output
def save_figure(fig, path, dpi=110):
    """Write fig to path and close it: PNG, or the format its extension names when matplotlib
    knows it (pdf, svg, ...). An unwritable path raises schema.FileAccessError naming it
    (exit 3 in attnsweep summarize)."""
    ext = os.path.splitext(path)[1][1:].lower()
    fmt = ext if ext in fig.canvas.get_supported_filetypes() else "png"
    try:
        fig.savefig(path, dpi=dpi, format=fmt)
    except OSError as e:
        raise schema.FileAccessError("cannot write the figure %s: %s" % (
            path, e.strerror or e))
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- drawing
def plot_tokens(ax, tokens, trajectory=None, hull=True, leaders=(), normal=None, levels=(),
                initial=None, title=None):
    """Draw an end state in d = 2 (ax a 2-D axes) or d = 3 (ax with projection='3d').
    tokens: (n, d) final tokens; trajectory: (s, n, d) snapshots (lines); initial: (n, d)
    starting tokens (hollow markers); leaders: indices drawn as stars; normal, levels: the
    hyperplanes normal^T z = level (lines in 2-D, translucent planes in 3-D)."""
    X = np.asarray(tokens, dtype=float)
    d = X.shape[1]
    if d not in (2, 3):
        raise ValueError("end states are drawn for d = 2 or 3, not %d" % d)
    coords = lambda A: [A[..., k] for k in range(d)]  # noqa: E731
    if trajectory is not None:
        T = np.asarray(trajectory, dtype=float)
        for i in range(T.shape[1]):
            ax.plot(*coords(T[:, i, :]), color="0.6", lw=0.7, zorder=1)
    if initial is not None:
        ax.scatter(*coords(np.asarray(initial, dtype=float)), facecolors="none",
                   edgecolors="0.5", s=18, label="initial")
    ax.scatter(*coords(X), color="C0", s=22, zorder=3, label="tokens")
    if hull and len(X) >= d + 1:
        if d == 2:
            h = convex_hull_2d(X)
            if len(h) >= 3:
                loop = X[h + h[:1]]
                ax.plot(loop[:, 0], loop[:, 1], color="C1", lw=1.2, label="hull")
        else:
            faces, _ = convex_hull_3d(X)
            if faces:
                ax.add_collection3d(Poly3DCollection([X[list(f)] for f in faces], alpha=0.15,
                                                     facecolor="C1", edgecolor="C1",
                                                     linewidths=0.3))
    if len(leaders):
        L = X[list(leaders)]
        ax.scatter(*coords(L), marker="*", color="C3", s=120, zorder=4, label="leaders")
    if normal is not None and len(levels):
        nv = np.asarray(normal, dtype=float)
        lo, hi = X.min(axis=0), X.max(axis=0)
        pad = 0.1 * max(float(np.max(hi - lo)), 1e-12)
        lo, hi = lo - pad, hi + pad
        for k, c in enumerate(levels):
            if not np.isfinite(c):
                continue
            lab = "l_1^T z = level" if k == 0 else None
            if d == 2:
                if abs(nv[1]) >= abs(nv[0]):
                    xs = np.array([lo[0], hi[0]])
                    ax.plot(xs, (c - nv[0] * xs) / nv[1], "--", color="C2", lw=1, label=lab)
                else:
                    ys = np.array([lo[1], hi[1]])
                    ax.plot((c - nv[1] * ys) / nv[0], ys, "--", color="C2", lw=1, label=lab)
            else:
                j = int(np.argmax(np.abs(nv)))
                o = [i for i in range(3) if i != j]
                g1, g2 = np.meshgrid(np.linspace(lo[o[0]], hi[o[0]], 2),
                                     np.linspace(lo[o[1]], hi[o[1]], 2))
                gj = (c - nv[o[0]] * g1 - nv[o[1]] * g2) / nv[j]
                grid = [None, None, None]
                grid[o[0]], grid[o[1]], grid[j] = g1, g2, gj
                ax.plot_surface(*grid, alpha=0.2, color="C2")
        if d == 2:
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[1], hi[1])
    if d == 2:
        ax.set_aspect("equal", adjustable="datalim")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="best")


def plot_p(ax, P, title="attention matrix P"):
    """Heat map of P (n, n) on [0, 1]."""
    im = ax.imshow(np.asarray(P, dtype=float), vmin=0.0, vmax=1.0, cmap="viridis",
                   interpolation="nearest")
    ax.set_xlabel("j (key token)")
    ax.set_ylabel("i (query token)")
    ax.set_title(title, fontsize=9)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


def plot_phase(phase, png):
    """Verdict fractions (with their Wilson 95% intervals as bars) against the parameter, one
    panel per group. phase: {'param': name, 'series': {group: {'x', 'consistent': (f, lo, hi),
    ...}}} as attnsweep_summarize.phase_series builds it."""
    series = phase["series"]
    k = max(1, len(series))
    ncol = min(k, 3)
    nrow = (k + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.4 * nrow), squeeze=False,
                             sharey=True)
    flat = axes.ravel()
    for ax in flat[k:]:
        ax.set_visible(False)
    colors = {"consistent": "C2", "violated": "C3", "unresolved": "C7"}
    for ax, (group, ser) in zip(flat, series.items()):
        x = np.asarray(ser["x"], dtype=float)
        numeric = np.all(np.isfinite(x)) and len(x) > 0
        xs = x if numeric else np.arange(len(x))
        for v, col in colors.items():
            f, lo, hi = (np.asarray(a, dtype=float) for a in ser[v])
            ok = np.isfinite(f)
            if not ok.any():
                continue
            ax.errorbar(xs[ok], f[ok], yerr=[f[ok] - lo[ok], hi[ok] - f[ok]], color=col,
                        marker="o", ms=3, capsize=2, lw=1, label=v)
        if numeric and np.all(x > 0) and x.max() / x.min() > 100:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(xs)
            ax.set_xticklabels(ser["label"], rotation=45, fontsize=7)
        ax.set_xlabel(phase["param"])
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(group or "all trials", fontsize=9)
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("fraction of judged trials")
    flat[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, png)


def plot_end_state(png, tokens, P=None, **kw):
    """A PNG of one end state (plot_tokens) with, when P is given, its heat map beside it."""
    d = np.asarray(tokens).shape[1]
    fig = plt.figure(figsize=(9.5 if P is not None else 5, 4.4))
    ax = fig.add_subplot(1, 2 if P is not None else 1, 1,
                         projection="3d" if d == 3 else None)
    plot_tokens(ax, tokens, **kw)
    if P is not None:
        plot_p(fig.add_subplot(1, 2, 2), P)
    fig.tight_layout()
    save_figure(fig, png)


def plot_trial_file(rf, trial, png):
    """The figure of trial `trial` of an open results file (schema.Results): its stored final
    tokens (and snapshots, initial tokens, V, final P when stored), hull, hyperplanes
    l_1^T z in {level_a, 0, level_b} for good triples, leaders read off P."""
    bulk = rf.load_bulk(trial)
    want = [f for f in ("d", "n", "theorem", "observed", "verdict", "level_a", "level_b")
            if f in rf.fields]
    rec = {k: v[int(trial)] for k, v in rf.read(want).items()}
    tokens = bulk.get("final_tokens")
    if tokens is None and "snapshots" in bulk:
        tokens = bulk["snapshots"][-1]
    if tokens is None:
        raise schema.SchemaError(
            "trial %d has no stored tokens (not run yet, or /bulk has only: %s); switch on "
            "final tokens or snapshots in the spec" % (trial, ", ".join(rf.bulk_names()) or
                                                        "nothing"))
    d = tokens.shape[1]
    if d not in (2, 3):
        raise schema.SchemaError("trial %d has d = %d: end-state figures are drawn for d = 2 "
                                 "and 3" % (trial, d))
    kw = {"trajectory": bulk.get("snapshots"), "initial": bulk.get("initial_tokens")}
    if "final_attention" in bulk:
        kw["leaders"] = leaders_from_p(bulk["final_attention"])
    if "V" in bulk and rf.is_enum("theorem") and \
            rf.label("theorem", rec.get("theorem", -1)) == "good":
        _, l1, _ = left_leading_eigvec(bulk["V"])
        kw["normal"] = l1
        kw["levels"] = [rec.get("level_a", np.nan), 0.0, rec.get("level_b", np.nan)]
    parts = ["trial %d" % trial]
    for f in ("theorem", "observed", "verdict"):
        if f in rec and rf.is_enum(f):
            parts.append("%s %s" % (f, rf.label(f, rec[f])))
    kw["title"] = ", ".join(parts)
    plot_end_state(png, tokens, P=bulk.get("final_attention"), **kw)
