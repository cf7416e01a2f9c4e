"""The figure of one trial: its end state in d = 2 or 3 (tokens, paths, hull, leaders, the
hyperplanes of a good triple), z(t) for d = 1, the observable pi_F z of paranormal and codim_k
triples, and the final attention matrix beside it; drawn from a results file's /bulk data."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import numpy as np

from . import schema
from .figstyle import COLUMN_IN, PAGE_IN, PALETTE, plt, save_figure
from .geometry import (convex_hull_2d, convex_hull_3d, leaders_from_p, left_leading_eigvec,
                       observable_coords, spectral_projector)

from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402 (registers 3d)

# ---------------------------------------------------------------- drawing
#: gid of the trajectory lines (tests and users find them with ax.get_lines())
TRAJECTORY = "trajectory"


def coord_labels(var: str, d: int) -> List[str]:
    """Axis labels of the token coordinates: $z_1$, $z_2$ (rescaled tokens) or $x_1$, ..."""
    return ["$%s_%d$" % (var, k + 1) for k in range(d)]


def path_through(initial: Any, snapshots: Any, final: Any) -> Optional[np.ndarray]:
    """The states of a trajectory in order: the initial tokens, the snapshots, the final tokens
    (each when given; a state equal to the one before it is not repeated). Returns (s, n, d)
    or None."""
    states: List[np.ndarray] = []
    for part in ([initial] if initial is not None else []) + \
            (list(np.asarray(snapshots, dtype=float)) if snapshots is not None else []) + \
            ([final] if final is not None else []):
        part = np.asarray(part, dtype=float)
        if states and part.shape == states[-1].shape and np.array_equal(part, states[-1]):
            continue
        states.append(part)
    return np.array(states) if len(states) >= 2 else None


def plot_tokens(ax: Any, tokens: Any, trajectory: Any = None, hull: Any = True,
                  leaders: Any = (), normal: Any = None, levels: Any = (), initial: Any = None,
                  title: Any = None, var: Any = "z", labels: Any = None, legend: Any = True,
                  sphere: Any = False) -> Any:
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
        drawn = np.concatenate(  # the lines span everything drawn, and so do the limits
            [X] + ([np.asarray(initial, dtype=float)] if initial is not None else []) +
            ([path.reshape(-1, d)] if path is not None else []))
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
                grid: List[Any] = [None, None, None]
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


def plot_lines_in_time(ax: Any, times: Any, values: Any, var: str = "z", leaders: Any = None,
                         title: Any = None, ylabel: Any = None, follow: Any = None,
                         levels: Any = None, legend: Any = True) -> Any:
    """Scalar token paths against time: values (s, n) at times (s,). follow: for each token
    the leader it ends up attending to (its colour; leaders drawn as thick lines)."""
    t = np.asarray(times, dtype=float)
    Y = np.asarray(values, dtype=float)
    colours: Dict[Optional[int], str] = {}
    for j in sorted(set(int(f) for f in follow)) if follow is not None else []:
        colours[j] = "C%d" % (len(colours) % 10)
    labelled = set()
    for i in range(Y.shape[1]):
        fj = int(follow[i]) if follow is not None else None
        col = colours.get(fj, "0.5")
        lead = leaders is not None and i in leaders
        lab = None
        if fj is not None and fj not in labelled:
            lab = "attends to token %d" % fj
            labelled.add(fj)
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


def plot_p(ax: Any, P: Any, title: str = "final attention matrix $P$") -> Any:
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
def plot_end_state(png: Optional[str], tokens: Any, P: Any = None, **kw: Any) -> Any:
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
def _trial_title(rf: schema.Results, rec: Dict[str, Any], trial: int) -> str:
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


def _states_in_time(bulk: Dict[str, Any], rec: Dict[str, Any], times: Any) -> Any:
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


def trial_figure(rf: schema.Results, trial: int) -> Any:
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
        kw: Dict[str, Any] = {"trajectory": traj, "initial": bulk.get("initial_tokens"),
              "leaders": leaders, "var": var, "sphere": sphere, "legend": False,
              "title": "tokens on the sphere" if sphere else
              "rescaled tokens $z$" if var == "z" else "tokens $x$"}
        if observable:
            note = ("V not stored (output: {matrices: true}): the observable pi_F z of %s "
                    "cannot be computed; raw %s tokens shown" % (theorem, var))
        if good and var == "z" and d == 2:
            _, l1, _ = left_leading_eigvec(bulk["V"])
            kw["normal"] = l1
            kw["levels"] = [float(rec.get("level_a", np.nan)), 0.0,
                            float(rec.get("level_b", np.nan))]
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
    handles: Dict[str, Any] = {}
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


def sphere_path(initial: Any, snapshots: Any, final: Any, steps: int = 8) -> np.ndarray:
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


def plot_trial_file(rf: schema.Results, trial: int, png: str) -> None:
    """Write trial_figure(rf, trial) to png (`attnsweep summarize OUT.h5 --plot TRIAL`)."""
    save_figure(trial_figure(rf, trial), png)

