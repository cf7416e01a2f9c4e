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

# ---------------------------------------------------------------- journal style
#: Okabe & Ito's colour-blind-safe palette (2008), black last; each series also has its own
#: marker, so a figure reads in grey too
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<")
#: at most this many series share a panel; more are split over panels (facets)
MAX_SERIES = len(PALETTE)
#: figure widths: one column of a two-column journal, and the page (inches)
COLUMN_IN, PAGE_IN = 3.3, 6.9
#: text between 7 and 9 pt at those widths; vector output keeps text as text
STYLE = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
         "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 9,
         "legend.title_fontsize": 7, "lines.linewidth": 1.0, "lines.markersize": 3.5,
         "axes.linewidth": 0.6, "grid.linewidth": 0.4, "pdf.fonttype": 42, "ps.fonttype": 42,
         "svg.fonttype": "none", "savefig.dpi": 300, "figure.dpi": 100,
         "axes.prop_cycle": matplotlib.cycler(color=PALETTE)}
matplotlib.rcParams.update(STYLE)


def series_style(k):
    """Colour and marker of the k-th series of a panel."""
    return {"color": PALETTE[k % len(PALETTE)], "marker": MARKERS[k % len(MARKERS)]}


#: The quantity and its symbol for each numeric sweep key (include/attnsweep/params.h; the
#: record's name where it differs, margin -> margin_target) and the measured fields figures
#: put on an axis. tests/py/test_figures.py checks that every numeric key of the key table
#: has its line here.
SYMBOLS = {
    "d": ("dimension", "d"), "n": ("tokens", "n"), "m_rows": ("rows of Q, K", "m"),
    "v_scale": ("scale of V", "s_V"), "v_kpos": ("positive eigenvalues of V", "k_+"),
    "v_lambda": ("leading eigenvalue of V", r"\lambda"), "v_dim_f": ("dimension of F", "k"),
    "v_radius": ("spectral radius of V on G", r"\rho"),
    "v_gap": ("spectral gap of V", r"\lambda_1 - |\lambda_2|"),
    "v_imag": ("imaginary part of the leading eigenvalue", r"\mathrm{Im}\,\lambda_1"),
    "m_scale": ("scale of M", "s_M"), "m_cond": ("condition number of M", r"\kappa(M)"),
    "margin": ("imposed margin", r"\langle Q\varphi_1, K\varphi_1\rangle"),
    "margin_target": ("imposed margin", r"\langle Q\varphi_1, K\varphi_1\rangle"),
    "beta": ("inverse temperature", r"\beta"), "file_index": ("layer of the file", "i"),
    "file_mscale": ("scale of the file's M", "s_M"), "eps": ("perturbation", r"\varepsilon"),
    "init_scale": ("scale of the initial tokens", "r_0"), "T": ("horizon", "T"),
    "T_decide": ("horizon factor over the separation time", "f_T"),
    "dt": ("time step", r"\Delta t"), "rtol": ("relative tolerance", r"\mathrm{rtol}"),
    "atol": ("absolute tolerance", r"\mathrm{atol}"), "max_steps": ("step limit", "N"),
    "settle_tol": ("settle tolerance", r"\delta"), "settle_window": ("settle window", "w"),
    "sinkhorn_iters": ("Sinkhorn iterations", "K"),
    "sinkhorn_tol": ("Sinkhorn tolerance", r"\tau"), "heads": ("heads", "H"),
    "ffn_width": ("feed-forward width", "m"), "weights_every": ("layers per weight", "L"),
    "ranks_per_trial": ("ranks per trial", "r"), "reference_n": ("reference tokens", "N"),
    # measured fields
    "gap": ("spectral gap", r"\lambda_1 - |\lambda_2|"),
    "lambda1_re": ("leading eigenvalue", r"\mathrm{Re}\,\lambda_1"),
    "near_dist": ("distance to the nearest theorem", r"\delta"),
    "t_final": ("time reached", "t"), "settle_time": ("settle time", "t_s"),
    "n_clusters": ("clusters", "k"), "rank_p": ("rank of P", r"\mathrm{rank}\,P"),
    "wall_time": ("wall time", r"t_\mathrm{wall}"),
}


def quantity_label(field, fallback=None):
    """The axis label of a field: its quantity and symbol ("perturbation $\\varepsilon$"),
    for a hypothesis distance "distance to <hypothesis>"; else fallback, else the name."""
    if field in SYMBOLS:
        q, sym = SYMBOLS[field]
        return "%s $%s$" % (q, sym)
    if field.startswith("dist_"):
        return "distance %s" % field[5:].replace("_", " ")
    return fallback or field


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
                initial=None, title=None, var="z", labels=None, legend=True, sphere=False):
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
    if sphere:  # the unit sphere (circle) the tokens live on
        if d == 2:
            th = np.linspace(0, 2 * np.pi, 200)
            ax.plot(np.cos(th), np.sin(th), color="0.75", lw=0.6, zorder=0, label="unit circle")
        else:
            u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 25), np.linspace(0, np.pi, 13))
            ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v),
                              color="0.8", lw=0.3)
    names = labels or coord_labels(var, d)
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    if d == 3:
        ax.set_zlabel(names[2])
        ax.set_aspect("equal")
    else:
        ax.set_aspect("equal", adjustable="datalim")
    if title:
        ax.set_title(title)
    if legend:  # outside the data, right of the axes
        ax.legend(loc="upper left", bbox_to_anchor=(1.04, 1.0), frameon=False,
                  borderaxespad=0.0)


def plot_lines_in_time(ax, times, values, var="z", leaders=None, title=None, ylabel=None,
                       follow=None, levels=None, legend=True):
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
    for k, c in enumerate(levels or []):  # the hyperplanes of a good triple, as lines
        if np.isfinite(c):
            ax.axhline(c, ls="--", color="0.35", lw=0.8,
                       label=r"levels $a$, $0$, $b$" if k == 0 else None)
    if legend and labelled and len(labelled) <= 8:
        ax.legend(loc="upper left", bbox_to_anchor=(1.04, 1.0), frameon=False,
                  borderaxespad=0.0)
    ax.set_xlabel("time $t$")
    ax.set_ylabel(ylabel or "$%s$" % var)
    ax.set_xlim(t.min(), t.max())
    if title:
        ax.set_title(title)
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
    ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="$P_{ij}$")
    return im


def chunks(items, size=MAX_SERIES):
    """items split into runs of at most size (the series of each facet)."""
    items = list(items)
    return [items[k:k + size] for k in range(0, len(items), size)] or [[]]


def draw_curve(ax, k, x, y, lo=None, hi=None, label=None, clamp=None, band=False):
    """One series in the k-th style: markers joined by a line, its 95% intervals as error
    bars (or a band), clamped to clamp=(a, b) when given. Returns its handle or None."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.any():
        return None
    st = series_style(k)
    lo_ = hi_ = None
    if lo is not None and hi is not None:
        lo_ = np.asarray(lo, dtype=float)[ok]
        hi_ = np.asarray(hi, dtype=float)[ok]
        if clamp:
            lo_, hi_ = np.clip(lo_, *clamp), np.clip(hi_, *clamp)
    if band:
        h, = ax.plot(x[ok], y[ok], color=st["color"], marker=st["marker"], label=label)
        if lo_ is not None:
            good = np.isfinite(lo_) & np.isfinite(hi_)
            if good.any():
                ax.fill_between(x[ok][good], lo_[good], hi_[good], color=st["color"],
                                alpha=0.18, lw=0)
        return h
    yerr = None
    if lo_ is not None:
        good = np.isfinite(lo_) & np.isfinite(hi_)
        yerr = np.maximum(np.array([np.where(good, y[ok] - lo_, 0),
                                    np.where(good, hi_ - y[ok], 0)]), 0)
    return ax.errorbar(x[ok], y[ok], yerr=yerr, color=st["color"], marker=st["marker"],
                       capsize=1.5, elinewidth=0.7, label=label)


def _x_scale(ax, x):
    """Log x when the values are positive and span more than two decades; symmetric log when
    they reach 0 or below and the rest spans decades (_distance_scale)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return
    _distance_scale(ax, x)


def panels_figure(panels, xlabel, ylabel, ylim=None, title=None, band=False):
    """The figure of a list of panels, each {'title', 'series': [(label, x, y, lo, hi)],
    'categories' (optional: x tick labels at 0, 1, ...), 'xlabel' (optional)}: at most
    MAX_SERIES series per panel (a panel with more is split), one column (COLUMN_IN) for one
    panel and two (PAGE_IN) for more, every axis labelled, the legend outside the data: one
    legend under all panels when they draw the same series, else one right of each panel.
    Returns the figure."""
    split = []
    for p in panels:
        parts = chunks(p["series"])
        for j, part in enumerate(parts):
            q = dict(p, series=part)
            if len(parts) > 1:
                q["title"] = "%s (%d of %d)" % (p.get("title") or "series", j + 1, len(parts))
            split.append(q)
    panels = split or [{"title": "", "series": []}]
    names = [[s[0] for s in p["series"]] for p in panels]
    shared = all(n == names[0] for n in names) and any(names[0])
    labels = names[0] if shared else []
    ncol = 1 if len(panels) == 1 else 2
    wide = ncol == 2
    longest = max([len(lab) for lab in labels] or [0])  # legend entries per row that fit
    per_row = (4 if longest <= 18 else 2 if longest <= 40 else 1) if wide else \
        (2 if longest <= 18 else 1)
    lrows = (len(labels) + per_row - 1) // per_row if shared else 0
    nrow = (len(panels) + ncol - 1) // ncol
    height = 2.0 if shared or not any(any(n) for n in names) else 2.2
    lh = 0.17 * lrows + 0.12 if lrows else 0
    fig = plt.figure(figsize=(PAGE_IN if wide else COLUMN_IN,
                              height * nrow + lh + (0.25 if title else 0)))
    gs = fig.add_gridspec(nrow + (1 if lrows else 0), ncol,
                          height_ratios=[height] * nrow + ([lh] if lrows else []))
    # one style per series label across the panels when they fit the palette
    every = list(dict.fromkeys(s_[0] for p in panels for s_ in p["series"]))
    style_of = {lab: j for j, lab in enumerate(every)} if len(every) <= MAX_SERIES else None
    axes, handles = [], []
    for k, p in enumerate(panels):
        ax = fig.add_subplot(gs[k // ncol, k % ncol], sharey=axes[0] if axes else None)
        axes.append(ax)
        allx, hs = [], []
        cats = p.get("categories")
        for j, (lab, x, y, lo, hi) in enumerate(p["series"]):
            x = np.arange(len(x)) if cats is not None else np.asarray(x, dtype=float)
            allx.extend(np.asarray(x, dtype=float))
            h = draw_curve(ax, style_of[lab] if style_of else j, x, y, lo, hi, label=lab,
                           clamp=ylim, band=band)
            hs.append(h)
        if cats is not None:
            ax.set_xticks(np.arange(len(cats)))
            ax.set_xticklabels(cats, rotation=30 if len(cats) > 3 else 0,
                               ha="right" if len(cats) > 3 else "center")
            ax.set_xlim(-0.5, len(cats) - 0.5)
        else:
            _x_scale(ax, allx)
            ax.margins(x=0.05)
        if not p["series"] or not any(h is not None for h in hs):
            ax.text(0.5, 0.5, "no trials selected", ha="center", va="center",
                    transform=ax.transAxes, color="0.4")
        ax.set_xlabel(p.get("xlabel") or xlabel)
        if k % ncol == 0 or not shared:
            ax.set_ylabel(ylabel)
        if ylim:
            a, b = ylim
            ax.set_ylim(a - 0.04 * (b - a), b + 0.04 * (b - a))
        if p.get("title"):
            ax.set_title(p["title"])
        ax.grid(alpha=0.3)
        pairs = [(h, lab) for h, (lab, *_r) in zip(hs, p["series"]) if h is not None and lab]
        if shared:
            if not handles:
                handles = pairs
        elif pairs:
            ax.legend([h for h, _ in pairs], [lab for _, lab in pairs], loc="upper left",
                      bbox_to_anchor=(1.02, 1.0), frameon=False, borderaxespad=0.0,
                      handlelength=1.6)
    if lrows and handles:
        lax = fig.add_subplot(gs[nrow, :])
        lax.axis("off")
        lax.legend([h for h, _ in handles], [lab for _, lab in handles], loc="center",
                   ncol=min(per_row, len(handles)), frameon=False, handlelength=1.6,
                   columnspacing=1.2)
    if title:
        fig.suptitle(title)
    fig.tight_layout(pad=0.3, h_pad=0.6, w_pad=0.8)
    return fig


def plot_lines(curves, path=None):
    """A line figure of a fraction or statistic against a sweep key: one line per group with
    its 95% intervals (error bars; 'band': True for bands), at most MAX_SERIES lines per panel
    (more: further panels), the legend under the panel. curves: {'x': the key (its quantity
    and symbol label the axis, SYMBOLS), 'xlabel' (optional, for a field without a symbol),
    'ylabel', 'ylim' (optional, e.g. (0, 1) for a fraction), 'title' (optional), 'series':
    {group: {'x', 'y', 'lo', 'hi'}}}. Written to path when given (PNG, or PDF/SVG by the
    extension); returns the figure."""
    series = [(g, s["x"], s["y"], s.get("lo"), s.get("hi"))
              for g, s in curves["series"].items()]
    fig = panels_figure([{"title": "", "series": series}],
                        quantity_label(curves["x"], curves.get("xlabel")),
                        curves.get("ylabel", ""), ylim=curves.get("ylim"),
                        title=curves.get("title"), band=curves.get("band", False))
    if path:
        save_figure(fig, path)
    return fig


def plot_series(series, png=None):
    """Time series of --series: one panel per observable, one line per group (the median over
    the trials at each time) with its exact 95% interval as a band, time on x, the
    observable on y (log y for the residual and the diameter when positive and spanning more
    than two decades). series: {'names', 'where', 'series': {observable: {group: {'t',
    'median', 'lo', 'hi', 'trials'}}}} as attnsweep_summarize.series_tables builds it."""
    names = [n for n in series["names"] if n in series["series"]]
    panels = []
    for nm in names:
        panels.append({"title": "", "ylabel": nm, "series": [
            (group, ser["t"], ser["median"], ser["lo"], ser["hi"])
            for group, ser in series["series"][nm].items()]})
    fig = panels_figure(panels, "time $t$", "", band=True,
                        title=("trials where %s" % series["where"]) if series.get("where")
                        else None)
    for ax, nm in zip(fig.axes, names):
        ax.set_ylabel("%s (median, 95%% CI)" % nm)
        vals = np.concatenate([np.asarray(s["median"], dtype=float)
                               for s in series["series"][nm].values()] or [np.zeros(0)])
        vals = vals[np.isfinite(vals)]
        if nm in ("residual", "diameter") and len(vals) and vals.min() > 0 and \
                vals.max() / vals.min() > 100:
            ax.set_yscale("log")
    fig.tight_layout(pad=0.3, h_pad=0.6, w_pad=0.8)
    if png:
        save_figure(fig, png)
    return fig


#: verdict fractions of the phase diagram, in this order
PHASE_VERDICTS = ("consistent", "unresolved", "violated")


def plot_phase(phase, png=None):
    """The phase diagram: verdict fractions (Wilson 95% intervals as bars) against the
    parameter. Without groups one panel with a line per verdict; with --by groups one panel
    per verdict that occurs (consistent always) with a line per group (more than MAX_SERIES
    groups: further panels). The x axis is the parameter's quantity and symbol. phase:
    {'param', 'xlabel' (used for a field without a symbol), 'where', 'categorical',
    'series': {group label: {'x', 'label', 'judged', verdict: (f, lo, hi)}}} as
    attnsweep_summarize.phase_series builds it."""
    series = phase["series"]
    where = phase.get("where")
    cat = bool(phase.get("categorical"))

    def xs(ser):
        x = np.asarray(ser["x"], dtype=float)
        return x if not cat and np.all(np.isfinite(x)) else np.arange(len(x))
    cats = None
    if series and (cat or not all(np.all(np.isfinite(np.asarray(s["x"], dtype=float)))
                                  for s in series.values())):
        cats = list(next(iter(series.values()))["label"])
    groups = [g for g in series if g]
    panels = []
    if not groups:
        ser = next(iter(series.values()), None)
        sl = []
        if ser is not None:
            for v in PHASE_VERDICTS:
                f, lo, hi = ser[v]
                if v == "consistent" or np.nansum(np.asarray(f, dtype=float)) > 0:
                    sl.append((v, xs(ser), f, lo, hi))
        panels.append({"title": "", "series": sl, "categories": cats})
    else:
        for v in PHASE_VERDICTS:
            sl = [(g, xs(series[g]), *series[g][v]) for g in groups]
            if v == "consistent" or any(np.nansum(np.asarray(s[2], dtype=float)) > 0
                                        for s in sl):
                panels.append({"title": v, "series": sl, "categories": cats})
    ylabel = "fraction of judged trials" if not groups else "fraction (judged trials)"
    fig = panels_figure(panels, quantity_label(phase["param"], phase.get("xlabel")), ylabel,
                        ylim=(0.0, 1.0), title=("trials where %s" % where) if where else None)
    if png:
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
        # ticks at 0 and at every other decade outside the linear range: at 7 pt a label
        # per decade would touch its neighbours
        lo, hi = int(np.ceil(np.log10(lt))), int(np.floor(np.log10(nz.max()))) + 1
        dec = [10.0 ** e for e in range(lo, hi + 1)]
        pos = [t for t in dec if t <= 10 * x.max()]
        neg = [t for t in dec if -t >= 10 * x.min()]
        step = max(1, int(np.ceil((len(pos) + len(neg)) / 4.0)))  # at most about 5 labels
        ticks = [0.0] + pos[::-step][::-1] + [-t for t in neg[::-step]]
        from matplotlib.ticker import FixedLocator, NullLocator
        ax.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
        ax.xaxis.set_minor_locator(NullLocator())
        return "symlog"
    return "linear"


def plot_robustness(robust, png=None):
    """The fraction of trials consistent with their nearest theorem (near_verdict) against each
    hypothesis distance: one panel per distance (its name as the title, the distance's
    quantity on x), one line per near theorem (and --by group), Wilson 95% intervals as bars
    clamped to [0, 1], log or symmetric-log x where the distances span decades, the legend
    outside the data. robust: {'panels': [{'param', 'xlabel', 'series': {group: {'x',
    'trials', 'judged', 'consistent': (f, lo, hi)}}}], 'where'} as
    attnsweep_summarize.robustness_tables builds it."""
    panels = [p for p in robust["panels"] if p["series"]] or robust["panels"][:1]
    where = robust.get("where")
    by_key = _single_point_key(panels)
    if by_key:  # one point per group (--bins 1): the fraction against the sweep key instead
        return _robustness_by_key(panels[0], by_key, where, png)
    spec = []
    for p in panels:
        spec.append({"title": p["param"], "xlabel": quantity_label(p["param"], p["xlabel"]),
                     "series": [(g, s["x"], *s["consistent"])
                                for g, s in p["series"].items()]})
    fig = panels_figure(spec, "distance", "fraction consistent", ylim=(0.0, 1.0),
                        title=("trials where %s" % where) if where else None)
    if png:
        save_figure(fig, png)
    return fig


def _single_point_key(panels):
    """The --by key to put on x when every series of the robustness panels is one point (as
    with --bins 1) and some numeric --by key has several values (the last such key), else
    None."""
    sers = [s for p in panels for s in p["series"].values()]
    if not sers or any(len(s["x"]) > 1 for s in sers) or "keys" not in sers[0]:
        return None
    for k in reversed(list(sers[0]["keys"])):
        vals = set()
        for s in sers:
            try:
                vals.add(float(s["keys"].get(k)))
            except (TypeError, ValueError):
                vals = None
                break
        if vals and len(vals) > 1:
            return k
    return None


def _robustness_by_key(panel, key, where, png):
    """The robustness figure of single-point series: the fraction consistent with the nearest
    theorem against the sweep key, a line per combination of the other keys (the first
    distance's panel; every distance gives the same points)."""
    lines = {}
    for s in panel["series"].values():
        g = ", ".join(("%s = %s" % (k, v)) if k != "near theorem" else v
                      for k, v in s["keys"].items() if k != key)
        ln = lines.setdefault(g, {"x": [], "y": [], "lo": [], "hi": []})
        ln["x"].append(float(s["keys"][key]))
        for arr, v in zip(("y", "lo", "hi"), s["consistent"]):
            ln[arr].append(v[0])
    for ln in lines.values():
        o = np.argsort(ln["x"])
        for k in ln:
            ln[k] = list(np.asarray(ln[k], dtype=float)[o])
    return plot_lines({"x": key, "ylabel": "fraction consistent", "ylim": (0.0, 1.0),
                       "series": lines, "title": ("trials where %s" % where) if where
                       else None}, png)


def plot_end_state(png, tokens, P=None, **kw):
    """A PNG of one end state (plot_tokens) with, when P is given, its heat map beside it."""
    d = np.asarray(tokens).shape[1]
    fig = plt.figure(figsize=(PAGE_IN if P is not None else COLUMN_IN, 3.0))
    ax = fig.add_subplot(1, 2 if P is not None else 1, 1,
                         projection="3d" if d == 3 else None)
    plot_tokens(ax, tokens, **kw)
    if P is not None:
        plot_p(fig.add_subplot(1, 2, 2), P)
    fig.tight_layout(pad=0.5)
    if png:
        save_figure(fig, png)
    return fig


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
                        "vars", "t_final", "dim_f", "kpos", "case", "case_id", "norm")
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
    sphere = "norm" in rec and rf.is_enum("norm") and rf.label("norm", rec["norm"]) == "sphere"
    good = "V" in bulk and theorem == "good"
    ncol = (2 if P is not None else 1) + (1 if good else 0)
    fig = plt.figure(figsize=(PAGE_IN if ncol > 1 else COLUMN_IN, 3.1))
    note = None
    if d == 1:
        ax = fig.add_subplot(1, ncol, 1)
        times, states = _states_in_time(bulk, rec, rf.snapshot_times())
        follow = list(np.argmax(P, axis=1)) if P is not None else None
        plot_lines_in_time(ax, times, states[:, :, 0], var=var, leaders=leaders,
                           follow=follow, title="$%s(t)$ of each token" % var, legend=False)
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
        sub = "$\\pi_F z$ in $F$ (top-%d eigenspace of $V$)" % k
        if proj["cond"] > 1e8:
            note = "V's eigenvectors are ill-conditioned (cond %.1e): pi_F is unreliable" % \
                proj["cond"]
        if k == 1:
            ax = fig.add_subplot(1, ncol, 1)
            plot_lines_in_time(ax, times, obs[:, :, 0], leaders=leaders, title=sub,
                               ylabel=names[0], legend=False)
        else:
            ax = fig.add_subplot(1, ncol, 1, projection="3d" if k == 3 else None)
            plot_tokens(ax, obs[-1], trajectory=obs[1:-1] if len(obs) > 2 else None,
                        initial=obs[0] if "initial_tokens" in bulk else None,
                        leaders=leaders, title=sub, labels=names, legend=False)
    else:
        ax = fig.add_subplot(1, ncol, 1, projection="3d" if d == 3 else None)
        traj = bulk.get("snapshots")
        if sphere and traj is not None:  # paths along the sphere, not chords through it
            traj = sphere_path(bulk.get("initial_tokens"), traj, tokens)
        kw = {"trajectory": traj, "initial": bulk.get("initial_tokens"),
              "leaders": leaders, "var": var, "sphere": sphere, "legend": False,
              "title": "tokens on the sphere" if sphere else
              "rescaled tokens $z$" if var == "z" else "tokens $x$"}
        if observable:
            note = ("V not stored (output: {matrices: true}): the observable pi_F z of %s "
                    "cannot be computed; raw %s tokens shown" % (theorem, var))
        if good and var == "z" and d == 2:
            _, l1, _ = left_leading_eigvec(bulk["V"])
            kw["normal"] = l1
            kw["levels"] = [rec.get("level_a", np.nan), 0.0, rec.get("level_b", np.nan)]
        if good:  # the hyperplane theorem says nothing of the hull
            kw["hull"] = False
        plot_tokens(ax, tokens, **kw)
    if P is not None:
        plot_p(fig.add_subplot(1, ncol, 2), P)
    if good:  # the theorem's coordinate: l_1^T z(t) against the levels a, 0, b
        lam, l1, _ = left_leading_eigvec(bulk["V"])
        times, states = _states_in_time(bulk, rec, rf.snapshot_times())
        c = states @ l1
        if var == "x":  # l_1^T z = e^{-lambda_1 t} l_1^T x
            c = c * np.exp(-lam * times)[:, None]
        axl = fig.add_subplot(1, ncol, ncol)
        plot_lines_in_time(axl, times, c, leaders=leaders, ylabel=r"$l_1^\top z$",
                           follow=list(np.argmax(P, axis=1)) if P is not None else None,
                           levels=[rec.get("level_a", np.nan), 0.0,
                                   rec.get("level_b", np.nan)],
                           title="the hyperplane coordinate", legend=False)
    nsnap = len(bulk["snapshots"]) if "snapshots" in bulk else 0
    if 0 < nsnap < SPARSE_SNAPSHOTS:  # straight segments between few states misdraw paths
        sparse = ("%d snapshots stored: paths are %s between them; `attnsweep reproduce "
                  "%s %d --save T.h5 --snapshots 50` stores them densely" % (
                      nsnap, "great-circle arcs" if sphere else "straight",
                      os.path.basename(str(rf.path)), trial))
        note = "%s. %s" % (note, sparse) if note else sparse
    handles = {}
    for a in fig.axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            if not lab.startswith("_"):
                handles.setdefault(lab, h)
    if len(handles) > 10:  # one entry per leader: keep the first ones
        handles = dict(list(handles.items())[:10])
    per = 5 if ncol > 1 else 2
    import textwrap
    if note:
        note = "\n".join(textwrap.wrap(note, 120 if ncol > 1 else 58))
    low = (0.14 * (note.count("\n") + 1) + 0.04) if note else 0.02  # inches under the legend
    bottom = low / fig.get_figheight()
    if handles:  # under the panels, outside the data; the panels start above it
        lg = fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=per,
                        frameon=False, bbox_to_anchor=(0.5, bottom), handlelength=1.6,
                        columnspacing=1.0)
        bottom += (lg.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi +
                   0.05) / fig.get_figheight()
    lines = textwrap.wrap(title, 100 if ncol > 1 else 48)
    fig.suptitle("\n".join(lines))
    top = 1 - (0.17 * len(lines) + 0.05) / fig.get_figheight()
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color=PALETTE[3], ha="left", va="bottom")
    fig.tight_layout(rect=(0.01, bottom, 0.99, top), pad=0.5, w_pad=1.0)
    return fig


#: fewer stored snapshots than this: the trial figure says the paths are drawn coarsely
SPARSE_SNAPSHOTS = 8


def sphere_path(initial, snapshots, final, steps=8):
    """The states of a trajectory on the unit sphere with `steps` points on the great circle
    between consecutive states (the tokens move on the sphere, so a chord through the ball
    would misdraw the path); the first and last states are those given."""
    path = path_through(initial, snapshots, final)
    if path is None:
        return snapshots
    out = [path[0]]
    for a, b in zip(path[:-1], path[1:]):
        cos = np.clip(np.sum(a * b, axis=1) / np.maximum(
            np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-300), -1, 1)
        ang = np.arccos(cos)[:, None]
        for u in np.linspace(0, 1, steps + 1)[1:]:
            w = np.where(ang > 1e-9, np.sin((1 - u) * ang) / np.maximum(np.sin(ang), 1e-300),
                         1 - u)
            v = np.where(ang > 1e-9, np.sin(u * ang) / np.maximum(np.sin(ang), 1e-300), u)
            out.append(w * a + v * b)
    return np.array(out[1:-1])


def plot_trial_file(rf, trial, png):
    """Write trial_figure(rf, trial) to png (`attnsweep summarize OUT.h5 --plot TRIAL`)."""
    save_figure(trial_figure(rf, trial), png)
