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
    that l_1^T phi_1 = 1, as docs/theory.md section 2.5 defines them."""
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


def spectral_projector(V, k):
    """The spectral projector pi_F of V onto the invariant subspace F of its k eigenvalues of
    largest real part, along the invariant subspace G of the others (theory.md section 2: the
    observable of Thm 5.1 and of the codimension conjecture; oblique unless V is normal).
    Returns a dict: 'Pi' (d, d) real with Pi^2 = Pi, 'B' (d, k) an orthonormal basis of F (the
    coordinates of pi_F z in F are B^T Pi z), 'w' the k eigenvalues, 'R_F', 'L_F' (right
    eigenvectors of F as columns, the matching rows of the inverse eigenvector matrix, so
    Pi = R_F L_F and pi_F e^{-tV} = R_F diag(e^{-t w}) L_F), 'cond' (condition number of the
    eigenvector matrix: large means the projector is unreliable). ValueError when k splits a
    complex-conjugate pair."""
    V = np.asarray(V, dtype=float)
    d = V.shape[0]
    if not 1 <= k <= d:
        raise ValueError("dim F = %d is not in 1..%d" % (k, d))
    w, R = np.linalg.eig(V)
    order = np.argsort(-w.real, kind="stable")
    S = order[:k]
    if k < d and abs(w[order[k - 1]].real - w[order[k]].real) <= 1e-12 * max(1, abs(w).max()) \
            and abs(w[order[k - 1]].imag) > 0:
        raise ValueError("dim F = %d splits a complex-conjugate pair of eigenvalues" % k)
    L = np.linalg.inv(R)
    Pi = R[:, S] @ L[S, :]
    if np.abs(Pi.imag).max() > 1e-8 * max(1.0, np.abs(Pi.real).max()):
        raise ValueError("the projector onto the top %d eigenvalues is not real" % k)
    # an orthonormal basis of F: QR of a real basis of span(R_F), each column signed so that
    # its largest entry is positive (F = span(e_1, e_2) gives e_1, e_2)
    real = []
    for j in S:
        v = R[:, j]
        real.append(v.real if np.abs(v.real).max() >= np.abs(v.imag).max() else v.imag)
    Q, _ = np.linalg.qr(np.array(real).T)
    for c in range(Q.shape[1]):
        if Q[np.argmax(np.abs(Q[:, c])), c] < 0:
            Q[:, c] = -Q[:, c]
    return {"Pi": Pi.real, "B": Q, "w": w[S], "R_F": R[:, S], "L_F": L[S, :],
            "cond": float(np.linalg.cond(R))}


def observable_coords(proj, X, t=0.0):
    """Coordinates in F (basis proj['B']) of pi_F z for tokens X (n, d): X are rescaled tokens
    z when t = 0, original tokens x at time t otherwise (pi_F z = pi_F e^{-tV} x =
    R_F diag(e^{-t w}) L_F x). Returns (n, k)."""
    X = np.asarray(X, dtype=float)
    if t == 0.0:
        Y = X @ proj["Pi"].T
    else:
        E = proj["R_F"] @ np.diag(np.exp(-t * proj["w"])) @ proj["L_F"]
        Y = np.real(X @ E.T)
    return Y @ proj["B"]


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
#: gid of the trajectory lines (tests and users find them with ax.get_lines())
TRAJECTORY = "trajectory"


def coord_labels(var, d):
    """Axis labels of the token coordinates: $z_1$, $z_2$ (rescaled tokens) or $x_1$, ..."""
    return ["$%s_%d$" % (var, k + 1) for k in range(d)]


def path_through(initial, snapshots, final):
    """The states of a trajectory in order: the initial tokens, the snapshots, the final tokens
    (each when given; a state equal to the one before it is not repeated). Returns (s, n, d)
    or None."""
    states = []
    for part in ([initial] if initial is not None else []) + \
            (list(np.asarray(snapshots, dtype=float)) if snapshots is not None else []) + \
            ([final] if final is not None else []):
        part = np.asarray(part, dtype=float)
        if states and part.shape == states[-1].shape and np.array_equal(part, states[-1]):
            continue
        states.append(part)
    return np.array(states) if len(states) >= 2 else None


def plot_tokens(ax, tokens, trajectory=None, hull=True, leaders=(), normal=None, levels=(),
                initial=None, title=None, var="z", labels=None):
    """Draw an end state in d = 2 (ax a 2-D axes) or d = 3 (ax with projection='3d').
    tokens: (n, d) final tokens; trajectory: (s, n, d) snapshots: each token's path is drawn
    from its initial token (when initial is given) through the snapshots to its final token;
    initial: (n, d) starting tokens (hollow markers); leaders: indices drawn as stars; normal,
    levels: the hyperplanes normal^T z = level (lines in 2-D, translucent planes in 3-D).
    var names the coordinates on the axes ($z_1$, $z_2$ or $x_1$, ...), labels replaces those
    names. Both axes use one scale (equal aspect)."""
    X = np.asarray(tokens, dtype=float)
    d = X.shape[1]
    if d not in (2, 3):
        raise ValueError("end states are drawn for d = 2 or 3, not %d" % d)
    coords = lambda A: [A[..., k] for k in range(d)]  # noqa: E731
    path = path_through(initial, trajectory, X) if trajectory is not None else None
    if path is not None:
        for i in range(path.shape[1]):
            ax.plot(*coords(path[:, i, :]), color="0.6", lw=0.7, zorder=1, gid=TRAJECTORY,
                    label="trajectories" if i == 0 else None)
    if initial is not None:
        ax.scatter(*coords(np.asarray(initial, dtype=float)), facecolors="none",
                   edgecolors="0.45", s=18, lw=0.8, label="initial tokens")
    ax.scatter(*coords(X), color="C0", s=22, zorder=3, label="final tokens")
    if hull and len(X) >= d + 1:
        if d == 2:
            h = convex_hull_2d(X)
            if len(h) >= 3:
                loop = X[h + h[:1]]
                ax.plot(loop[:, 0], loop[:, 1], color="C1", lw=1.2, label="convex hull")
        else:
            faces, _ = convex_hull_3d(X)
            if faces:
                ax.add_collection3d(Poly3DCollection([X[list(f)] for f in faces], alpha=0.07,
                                                     facecolor="C1", edgecolor="C1",
                                                     linewidths=0.4))
    if len(leaders):
        L = X[list(leaders)]
        ax.scatter(*coords(L), marker="*", color="C3", s=110, zorder=4, label="leaders")
    if normal is not None and len(levels):
        nv = np.asarray(normal, dtype=float)
        drawn = [X] + ([np.asarray(initial, dtype=float)] if initial is not None else []) + \
            ([path.reshape(-1, d)] if path is not None else [])
        drawn = np.concatenate(drawn)  # the lines span everything drawn, and so do the limits
        lo, hi = drawn.min(axis=0), drawn.max(axis=0)
        pad = 0.1 * max(float(np.max(hi - lo)), 1e-12)
        lo, hi = lo - pad, hi + pad
        for k, c in enumerate(levels):
            if not np.isfinite(c):
                continue
            lab = r"$l_1^\top z \in \{a, 0, b\}$" if k == 0 else None
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
                ax.plot_surface(*grid, alpha=0.15, color="C2")
        if d == 2:
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[1], hi[1])
    names = labels or coord_labels(var, d)
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    if d == 3:
        ax.set_zlabel(names[2])
        ax.set_aspect("equal")
    else:
        ax.set_aspect("equal", adjustable="datalim")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="best", framealpha=0.8)


def plot_lines_in_time(ax, times, values, var="z", leaders=None, title=None, ylabel=None,
                       follow=None):
    """Scalar token paths against time: values (s, n) at times (s,). follow: for each token
    the leader it ends up attending to (its colour; leaders drawn as thick lines)."""
    t = np.asarray(times, dtype=float)
    Y = np.asarray(values, dtype=float)
    colours = {}
    for j in sorted(set(int(f) for f in follow)) if follow is not None else []:
        colours[j] = "C%d" % (len(colours) % 10)
    labelled = set()
    for i in range(Y.shape[1]):
        j = int(follow[i]) if follow is not None else None
        col = colours.get(j, "0.5")
        lead = leaders is not None and i in leaders
        lab = None
        if j is not None and j not in labelled:
            lab = "attends to token %d" % j
            labelled.add(j)
        ax.plot(t, Y[:, i], color=col, lw=1.8 if lead else 0.8, gid=TRAJECTORY,
                marker="o" if len(t) <= 2 else None, ms=3, label=lab)
    if labelled and len(labelled) <= 8:
        ax.legend(fontsize=7, loc="best", framealpha=0.8)
    ax.set_xlabel("time $t$")
    ax.set_ylabel(ylabel or "$%s$" % var)
    ax.set_xlim(t.min(), t.max())
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)


def plot_p(ax, P, title="final attention matrix $P$"):
    """Heat map of P (n, n) on [0, 1]; token indices as integer ticks."""
    from matplotlib.ticker import MaxNLocator
    im = ax.imshow(np.asarray(P, dtype=float), vmin=0.0, vmax=1.0, cmap="viridis",
                   interpolation="nearest")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("key token $j$")
    ax.set_ylabel("query token $i$")
    ax.set_title(title, fontsize=9)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="$P_{ij}$")
    return im


def plot_series(series, png):
    """Time series of --series: one panel per observable, one line per group (the median over
    the trials at each time) with its exact 95% interval as a band, time on x, the
    observable on y (log y for the residual and the diameter when positive and spanning more
    than two decades). series: {'names', 'where', 'series': {observable: {group: {'t',
    'median', 'lo', 'hi', 'trials'}}}} as attnsweep_summarize.series_tables builds it."""
    names = [n for n in series["names"] if n in series["series"]]
    k = max(1, len(names))
    fig, axes = plt.subplots(1, k, figsize=(4.6 * k, 3.6), squeeze=False)
    for ax, nm in zip(axes[0], names):
        for c, (group, ser) in enumerate(series["series"][nm].items()):
            t = np.asarray(ser["t"], dtype=float)
            m = np.asarray(ser["median"], dtype=float)
            lo = np.asarray(ser["lo"], dtype=float)
            hi = np.asarray(ser["hi"], dtype=float)
            ax.plot(t, m, marker="o", ms=3, lw=1.2, color="C%d" % (c % 10), label=group)
            band = np.isfinite(lo) & np.isfinite(hi)
            if band.any():
                ax.fill_between(t[band], lo[band], hi[band], color="C%d" % (c % 10),
                                alpha=0.2, lw=0)
        ax.set_xlabel("time $t$")
        ax.set_ylabel("%s (median, 95%% CI)" % nm)
        vals = np.concatenate([np.asarray(s["median"], dtype=float)
                               for s in series["series"][nm].values()])
        vals = vals[np.isfinite(vals)]
        if nm in ("residual", "diameter") and len(vals) and vals.min() > 0 and \
                vals.max() / vals.min() > 100:
            ax.set_yscale("log")
        if len(series["series"][nm]) > 1:
            ax.legend(fontsize=7)
    if series.get("where"):
        fig.suptitle("trials where %s" % series["where"], fontsize=9)
    fig.tight_layout()
    save_figure(fig, png)
    return fig


def plot_phase(phase, png):
    """Verdict fractions (with their Wilson 95% intervals as bars) against the parameter, one
    panel per group, the number of judged trials of each point written above it. phase:
    {'param': name, 'xlabel': axis label, 'where': filter or None, 'series': {group: {'x',
    'label', 'judged', 'consistent': (f, lo, hi), ...}}} as
    attnsweep_summarize.phase_series builds it."""
    series = phase["series"]
    where = phase.get("where")
    k = max(1, len(series))
    ncol = min(k, 3)
    nrow = (k + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 3.6 * nrow + (0.3 if where
                                                                              else 0)),
                             squeeze=False, sharey=True)
    flat = axes.ravel()
    for ax in flat[k:]:
        ax.set_visible(False)
    colors = {"consistent": "C2", "violated": "C3", "unresolved": "C7"}
    for ax, (group, ser) in zip(flat, series.items()):
        x = np.asarray(ser["x"], dtype=float)
        numeric = np.all(np.isfinite(x)) and len(x) > 0 and not phase.get("categorical")
        xs = x if numeric else np.arange(len(x))
        for v, col in colors.items():
            f, lo, hi = (np.asarray(a, dtype=float) for a in ser[v])
            ok = np.isfinite(f)
            if not ok.any():
                continue
            ax.errorbar(xs[ok], f[ok], yerr=[f[ok] - lo[ok], hi[ok] - f[ok]], color=col,
                        marker="o", ms=3, capsize=2, lw=1, label=v)
        for xi, n in zip(xs, ser["judged"]):
            ax.annotate("n=%d" % n, (xi, 1.0), xytext=(0, 6), textcoords="offset points",
                        ha="center", va="bottom", fontsize=6, color="0.35",
                        rotation=90 if len(xs) > 8 else 0)
        if numeric and np.all(x > 0) and x.max() / x.min() > 100:
            ax.set_xscale("log")
        elif numeric and len(x) > 1 and x.min() >= 0 and x.min() < 1e-3 * x.max() and \
                np.sum(x > 0) >= 2 and x[x > 0].max() / x[x > 0].min() > 100:
            ax.set_xscale("symlog", linthresh=x[x > 0].min())
        ax.margins(x=0.06)  # room for the n= of the outer points
        if not numeric:
            ax.set_xlim(-0.5, len(xs) - 0.5)  # every category, even one without a fraction
            ax.set_xticks(xs)
            ax.set_xticklabels(ser["label"], rotation=45, fontsize=7)
        ax.set_xlabel(phase.get("xlabel") or phase["param"])
        ax.set_ylim(-0.02, 1.2 if len(xs) > 8 else 1.12)
        ax.set_yticks(np.linspace(0, 1, 6))
        ax.set_title(group or ("selected trials" if where else "all trials"), fontsize=9)
        ax.grid(alpha=0.3)
    if not series:
        flat[0].text(0.5, 0.5, "no trials selected", ha="center", va="center",
                     transform=flat[0].transAxes, color="0.4")
        flat[0].set_xlabel(phase.get("xlabel") or phase["param"])
        flat[0].set_title("selected trials" if where else "all trials", fontsize=9)
    for row in axes:
        row[0].set_ylabel("fraction of judged trials")
    handles = {}
    for ax in flat[:k]:  # one legend for all panels, below them (it hides no point or n=)
        for h, l in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(l, h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="lower center",
                   ncol=len(handles), fontsize=8, frameon=False)
    if where:
        fig.suptitle("trials where %s" % where, fontsize=9)
    fig.tight_layout(rect=(0, 0.06 / nrow if handles else 0, 1, 1))
    save_figure(fig, png)
    return fig


def _distance_scale(ax, x):
    """Log x when the distances are positive and span more than two decades; symmetric log
    when they reach 0 or below (the hypothesis holds there) and the rest spans decades, with
    the linear range up to the smallest nonzero |x|; else linear."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    nz = np.abs(x[x != 0])
    if len(x) < 2 or len(nz) == 0:
        return "linear"
    if np.all(x > 0):
        if x.max() / x.min() > 100:
            ax.set_xscale("log")
            return "log"
        return "linear"
    if nz.max() / nz.min() > 100:
        lt = float(nz.min())
        ax.set_xscale("symlog", linthresh=lt, linscale=1.0)
        # ticks at 0 and at the decades outside the linear range only: one inside it would
        # sit on top of the 0 label
        lo, hi = int(np.ceil(np.log10(lt))), int(np.floor(np.log10(nz.max()))) + 1
        dec = [10.0 ** e for e in range(lo, hi + 1)]
        ticks = [0.0] + [t for t in dec if t <= 10 * x.max()] + \
            [-t for t in dec if -t >= 10 * x.min()]
        from matplotlib.ticker import FixedLocator, NullLocator
        ax.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
        ax.xaxis.set_minor_locator(NullLocator())
        return "symlog"
    return "linear"


def plot_robustness(robust, png):
    """The fraction of trials consistent with their nearest theorem (near_verdict) against each
    hypothesis distance: one panel per distance, one series per near theorem (and --by group),
    Wilson 95% intervals as bars (clamped to [0, 1]), the number of trials of each point above
    it ("n=trials/judged"), log or symmetric-log x where the distances span decades. robust:
    {'panels': [{'param', 'xlabel', 'series': {group: {'x', 'trials', 'judged', 'consistent':
    (f, lo, hi)}}}], 'where'} as attnsweep_summarize.robustness_tables builds it."""
    panels = [p for p in robust["panels"] if p["series"]] or robust["panels"][:1]
    where = robust.get("where")
    k = max(1, len(panels))
    ncol = min(k, 3)
    nrow = (k + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.8 * nrow + (0.3 if where
                                                                              else 0)),
                             squeeze=False, sharey=True)
    flat = axes.ravel()
    for ax in flat[k:]:
        ax.set_visible(False)
    for ax, panel in zip(flat, panels):
        allx = []
        for j, (group, ser) in enumerate(panel["series"].items()):
            x = np.asarray(ser["x"], dtype=float)
            f, lo, hi = (np.asarray(a, dtype=float) for a in ser["consistent"])
            ok = np.isfinite(f) & np.isfinite(x)
            allx.extend(x[np.isfinite(x)])
            if ok.any():
                lo_c, hi_c = np.clip(lo[ok], 0, 1), np.clip(hi[ok], 0, 1)
                ax.errorbar(x[ok], f[ok], yerr=[f[ok] - lo_c, hi_c - f[ok]],
                            color="C%d" % j, marker="o", ms=3, capsize=2, lw=1, label=group)
            for xi, fi, n, m in zip(x, f, ser["trials"], ser["judged"]):
                ax.annotate("n=%d/%d" % (n, m), (xi, fi if np.isfinite(fi) else 0.0),
                            xytext=(0, 5), textcoords="offset points", ha="center",
                            va="bottom", fontsize=5.5, color="C%d" % j, rotation=90)
        _distance_scale(ax, allx)
        ax.margins(x=0.08)
        ax.set_xlabel("%s (%s)" % (panel["xlabel"], panel["param"])
                      if panel["xlabel"] != panel["param"] else panel["param"], fontsize=8)
        ax.set_ylim(-0.02, 1.25)
        ax.set_yticks(np.linspace(0, 1, 6))
        ax.set_title(panel["param"], fontsize=9)
        ax.grid(alpha=0.3)
        if panel["series"]:
            ax.legend(fontsize=6, loc="lower left", frameon=False)
        else:
            ax.text(0.5, 0.5, "no trials selected", ha="center", va="center",
                    transform=ax.transAxes, color="0.4")
    for row in axes:
        row[0].set_ylabel("fraction consistent with\nthe nearest theorem")
    if where:
        fig.suptitle("trials where %s" % where, fontsize=9)
    fig.tight_layout()
    save_figure(fig, png)
    return fig


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


# ---------------------------------------------------------------- one trial of a file
def _trial_title(rf, rec, trial):
    parts = ["trial %d" % trial]
    if "source_trial" in rf.attrs:  # a trial written by `attnsweep reproduce --save`
        parts = ["trial %s of %s (reproduced)" % (rf.attrs["source_trial"],
                                                  os.path.basename(str(rf.attrs.get(
                                                      "source_file", "?"))))]
    if "case" in rec:
        c = rec["case"]
        parts.append("case %s" % (rf.label("case", c) if rf.is_enum("case") else
                                  schema.text(c)))
    elif "case_id" in rec:
        parts.append("case %d" % int(rec["case_id"]))
    for f in ("theorem", "observed", "verdict"):
        if f in rec and rf.is_enum(f):
            parts.append("%s %s" % (f, rf.label(f, rec[f])))
    return ", ".join(parts)


def _states_in_time(bulk, rec, times):
    """(times, states) of a trial from t = 0 to t_final: the initial tokens, the snapshots at
    their times (those not after t_final), the final tokens. times None: the snapshots are
    spread evenly (their times are unknown)."""
    t_final = float(rec.get("t_final", np.nan))
    snaps = bulk.get("snapshots")
    ts, xs = [], []
    if "initial_tokens" in bulk:
        ts.append(0.0)
        xs.append(bulk["initial_tokens"])
    if snaps is not None:
        st = list(times) if times is not None and len(times) == len(snaps) else \
            list(np.linspace(0, t_final if np.isfinite(t_final) else 1.0, len(snaps) + 1)[1:])
        for t, x in zip(st, snaps):
            if np.isfinite(t_final) and t > t_final * (1 + 1e-12):
                break
            ts.append(float(t))
            xs.append(x)
    if "final_tokens" in bulk and (not ts or not np.isfinite(t_final) or t_final > ts[-1]):
        ts.append(t_final if np.isfinite(t_final) else (ts[-1] + 1 if ts else 1.0))
        xs.append(bulk["final_tokens"])
    return np.array(ts), (np.array(xs) if xs else None)


def trial_figure(rf, trial):
    """The figure (a matplotlib Figure, not saved) of trial `trial` of an open results file
    (schema.Results), from its /bulk data:
    * d = 1: z(t) (or x(t)) against time from the initial tokens through the snapshots to the
      final tokens, each token coloured by the leader it attends to at the end;
    * paranormal (Thm 5.1) and codim_k triples with V stored: the observable pi_F z (the
      oblique projection onto F along G) in coordinates of F, its hull (the polytope of the
      theorem) and its paths; without V the figure says why it shows raw tokens;
    * otherwise d = 2, 3: the tokens with their paths from the initial tokens, the hull,
      leaders read off P, and for a good triple the hyperplanes l_1^T z in {a, 0, b};
    and the final P as a heat map beside it. SchemaError when the trial cannot be drawn."""
    bulk = rf.load_bulk(trial)
    want = [f for f in ("d", "n", "theorem", "observed", "verdict", "level_a", "level_b",
                        "vars", "t_final", "dim_f", "kpos", "case", "case_id")
            if f in rf.fields]
    rec = {k: v[int(trial)] for k, v in rf.read(want).items()}
    var = rf.label("vars", rec["vars"]) if "vars" in rec and rf.is_enum("vars") else "z"
    if var not in ("x", "z"):
        var = "z"
    tokens = bulk.get("final_tokens")
    if tokens is None and "snapshots" in bulk:
        tokens = bulk["snapshots"][-1]
    if tokens is None:
        raise schema.SchemaError(
            "trial %d has no stored tokens (not run yet, or /bulk has only: %s); regenerate "
            "them with `attnsweep reproduce %s %d --save T.h5 [--snapshots 20]` and draw "
            "`attnsweep summarize T.h5 --plot 0`, or switch on final tokens or snapshots in "
            "the spec" % (trial, ", ".join(rf.bulk_names()) or "nothing", rf.path, trial))
    d = tokens.shape[1]
    theorem = rf.label("theorem", rec["theorem"]) if "theorem" in rec and \
        rf.is_enum("theorem") else ""
    title = _trial_title(rf, rec, trial)
    P = bulk.get("final_attention")
    leaders = leaders_from_p(P) if P is not None else []
    k = 0
    if theorem == "paranormal":
        k = int(rec.get("dim_f", 0))
    elif theorem == "codim_k":
        k = int(rec.get("kpos", 0))
    observable = 0 < k < d and theorem in ("paranormal", "codim_k")
    if d not in (1, 2, 3) and not (observable and k <= 3 and "V" in bulk):
        raise schema.SchemaError("trial %d has d = %d: end-state figures are drawn for d = 1, 2 "
                                 "and 3 (and pi_F z of paranormal/codim_k triples with dim F "
                                 "<= 3 and V stored)" % (trial, d))
    fig = plt.figure(figsize=(10, 4.5) if P is not None else (5.5, 4.5))
    ncol = 2 if P is not None else 1
    note = None
    if d == 1:
        ax = fig.add_subplot(1, ncol, 1)
        times, states = _states_in_time(bulk, rec, rf.snapshot_times())
        follow = list(np.argmax(P, axis=1)) if P is not None else None
        plot_lines_in_time(ax, times, states[:, :, 0], var=var, leaders=leaders,
                           follow=follow, title="$%s(t)$ of each token" % var)
        if "snapshots" not in bulk:
            note = "no snapshots stored: start and end only"
    elif observable and "V" in bulk:
        proj = spectral_projector(bulk["V"], k)
        times, states = _states_in_time(bulk, rec, rf.snapshot_times())
        if var == "z":
            obs = np.array([observable_coords(proj, X) for X in states])
        else:
            obs = np.array([observable_coords(proj, X, t) for X, t in zip(states, times)])
        names = [r"$f_%d^\top \pi_F z$" % (j + 1) for j in range(k)]
        for j in range(k):  # F spanned by coordinate axes: name them
            e = np.nonzero(np.isclose(np.abs(proj["B"][:, j]), 1.0, atol=1e-12))[0]
            if len(e) == 1:
                names[j] = r"$(\pi_F z)_%d$" % (e[0] + 1)
        sub = ("$\\pi_F z$ in $F$ (the top-%d eigenspace of $V$; $f_j$ an orthonormal basis)"
               % k)
        if proj["cond"] > 1e8:
            note = "V's eigenvectors are ill-conditioned (cond %.1e): pi_F is unreliable" % \
                proj["cond"]
        if k == 1:
            ax = fig.add_subplot(1, ncol, 1)
            plot_lines_in_time(ax, times, obs[:, :, 0], leaders=leaders, title=sub,
                               ylabel=names[0])
        else:
            ax = fig.add_subplot(1, ncol, 1, projection="3d" if k == 3 else None)
            plot_tokens(ax, obs[-1], trajectory=obs[1:-1] if len(obs) > 2 else None,
                        initial=obs[0] if "initial_tokens" in bulk else None,
                        leaders=leaders, title=sub, labels=names)
    else:
        ax = fig.add_subplot(1, ncol, 1, projection="3d" if d == 3 else None)
        kw = {"trajectory": bulk.get("snapshots"), "initial": bulk.get("initial_tokens"),
              "leaders": leaders, "var": var,
              "title": "rescaled tokens $z$" if var == "z" else "tokens $x$"}
        if observable:
            note = ("V not stored (output: {matrices: true}): the observable pi_F z of %s "
                    "cannot be computed; raw %s tokens shown" % (theorem, var))
        if "V" in bulk and theorem == "good" and var == "z":
            _, l1, _ = left_leading_eigvec(bulk["V"])
            kw["normal"] = l1
            kw["levels"] = [rec.get("level_a", np.nan), 0.0, rec.get("level_b", np.nan)]
        plot_tokens(ax, tokens, **kw)
    if P is not None:
        plot_p(fig.add_subplot(1, 2, 2), P)
    fig.suptitle(title, fontsize=10)
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="C3", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    return fig


def plot_trial_file(rf, trial, png):
    """Write trial_figure(rf, trial) to png (`attnsweep summarize OUT.h5 --plot TRIAL`)."""
    save_figure(trial_figure(rf, trial), png)
