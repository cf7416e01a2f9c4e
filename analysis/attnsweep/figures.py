"""Figures of attnsweep results (matplotlib, Agg backend): the line figures of the tables
(--phase, --robustness, --series, --stat --png) drawn in the journal style of figstyle.py.
The trial figures (trialfig.py) and the geometry helpers (geometry.py) are here too, so that
`from attnsweep import figures` (or the script-side name attnsweep_plots) has every figure:

  plot_tokens(ax, tokens, ...)      end state in d = 2 or 3: tokens, convex hull, hyperplanes
                                    l_1^T z = level (good triples), leaders, trajectories
  plot_p(ax, P)                     heat map of an attention matrix
  plot_phase(phase, png)            verdict fractions against a swept parameter (from
                                    tables.summary_tables(..., phase=PARAM))
  plot_trial_file(rf, trial, png)   one trial of a results file (its /bulk data), used by
                                    `attnsweep summarize OUT.h5 --plot TRIAL --png FILE`
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from .figstyle import (COLUMN_IN, MARKERS, MAX_SERIES, PAGE_IN, PALETTE, STYLE, SYMBOLS, plt,
                       quantity_label, save_figure, series_style)
from .geometry import (convex_hull_2d, convex_hull_3d, leaders_from_p, left_leading_eigvec,
                       observable_coords, spectral_projector)
from .trialfig import (TRAJECTORY, coord_labels, path_through, plot_end_state,
                       plot_lines_in_time, plot_p, plot_tokens, plot_trial_file, sphere_path,
                       trial_figure)

__all__ = [
    # the figures of the tables (this module)
    "chunks", "draw_curve", "panels_figure", "plot_lines", "plot_series", "plot_phase",
    "plot_robustness", "PHASE_VERDICTS",
    # the journal style (figstyle.py)
    "COLUMN_IN", "MARKERS", "MAX_SERIES", "PAGE_IN", "PALETTE", "STYLE", "SYMBOLS", "plt",
    "quantity_label", "save_figure", "series_style",
    # geometry (geometry.py)
    "convex_hull_2d", "convex_hull_3d", "leaders_from_p", "left_leading_eigvec",
    "observable_coords", "spectral_projector",
    # one trial (trialfig.py)
    "TRAJECTORY", "coord_labels", "path_through", "plot_end_state", "plot_lines_in_time",
    "plot_p", "plot_tokens", "plot_trial_file", "sphere_path", "trial_figure"]



def chunks(items: Sequence[Any], size: int = MAX_SERIES) -> List[List[Any]]:
    """items split into runs of at most size (the series of each facet)."""
    items = list(items)
    return [items[k:k + size] for k in range(0, len(items), size)] or [[]]


def draw_curve(ax: Any, k: int, x: Any, y: Any, lo: Any = None, hi: Any = None,
                 label: Optional[str] = None, clamp: Optional[Tuple[float, float]] = None,
                 band: bool = False) -> Any:
    """One series in the k-th style: markers joined by a line, its 95% intervals as error
    bars (or a band), clamped to clamp=(a, b) when given. Returns its handle or None."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.any():
        return None
    st = series_style(k)
    lo_: Any = None
    hi_: Any = None
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


def _x_scale(ax: Any, x: Any) -> None:
    """Log x when the values are positive and span more than two decades; symmetric log when
    they reach 0 or below and the rest spans decades (_distance_scale)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return
    _distance_scale(ax, x)


def panels_figure(panels: Sequence[Dict[str, Any]], xlabel: str, ylabel: str,
                    ylim: Optional[Tuple[float, float]] = None, title: Optional[str] = None,
                    band: bool = False) -> Any:
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
    axes: List[Any] = []
    handles: List[Tuple[Any, str]] = []
    for k, p in enumerate(panels):
        ax = fig.add_subplot(gs[k // ncol, k % ncol], sharey=axes[0] if axes else None)
        axes.append(ax)
        allx: List[float] = []
        hs: List[Any] = []
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


def plot_lines(curves: Dict[str, Any], path: Optional[str] = None) -> Any:
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


def plot_series(series: Dict[str, Any], png: Optional[str] = None) -> Any:
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


def plot_phase(phase: Dict[str, Any], png: Optional[str] = None) -> Any:
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
    panels: List[Dict[str, Any]] = []
    sl: List[Tuple[Any, ...]]
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


def _distance_scale(ax: Any, x: Any) -> str:
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


def plot_robustness(robust: Dict[str, Any], png: Optional[str] = None) -> Any:
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


def _single_point_key(panels: Sequence[Dict[str, Any]]) -> Optional[str]:
    """The --by key to put on x when every series of the robustness panels is one point (as
    with --bins 1) and some numeric --by key has several values (the last such key), else
    None."""
    sers = [s for p in panels for s in p["series"].values()]
    if not sers or any(len(s["x"]) > 1 for s in sers) or "keys" not in sers[0]:
        return None
    for k in reversed(list(sers[0]["keys"])):
        vals: Set[float] = set()
        numeric = True
        for s in sers:
            try:
                vals.add(float(s["keys"].get(k)))
            except (TypeError, ValueError):
                numeric = False
                break
        if numeric and len(vals) > 1:
            return k
    return None


def _robustness_by_key(panel: Dict[str, Any], key: str, where: Optional[str], png: Optional[str]
                        ) -> Any:
    """The robustness figure of single-point series: the fraction consistent with the nearest
    theorem against the sweep key, a line per combination of the other keys (the first
    distance's panel; every distance gives the same points)."""
    lines: Dict[str, Dict[str, List[float]]] = {}
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


