"""`summarize --measure` (the empirical measure of the tokens per group, docs/meanfield.md) and
`--series` (observables of the stored snapshots in time)."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import rule, schema
from . import stats as fstat
from .errors import UsageError
from .groups import Axis, make_groups
from .render import TEX_TEXT, Table, fnum, g, latex_escape, tex_eq, tex_num
from .schema import Results
from .selection import (check_axes, completeness, filter_line, not_converged_mask, stat_rows,
                        where_mask)
from .stats import group_quantiles

#: The empirical-measure fields of the record (include/attnsweep/record.h, measure.h).
MASS_FIELDS = ["mass_%d" % j for j in range(1, 9)]
MEASURE_FIELDS = MASS_FIELDS + ["mass_rest", "hull_vertices", "hull_vertices_init", "ref_w1",
                                "ref_n_clusters", "reference_n", "n", "n_unresolved",
                                "n_clusters", "verdict"]


def measure_tables(rf: Results, by: Sequence[str],
                   where: Optional[str]) -> Tuple[List[str], List[Table]]:
    """--measure: the empirical measure per --by group (default n; docs/meanfield.md). Over the
    classified trials of each group: the mean of each sorted cluster mass (mass_1..mass_8,
    then mass_rest) with its standard deviation across the group's trials, the L1 distance
    of the group's mean mass vector to that of the LAST group (the largest n when grouping by
    n alone: a convergence check across rows), the mean unresolved fraction, the medians of
    the cluster count and of the hull vertex counts (final and initial tokens), and the
    median of ref_w1 with its reference_n. Returns (preamble lines, [Table])."""
    mask = where_mask(rf, where)
    missing = [f for f in MEASURE_FIELDS if f not in rf.fields]
    if missing:
        raise UsageError("--measure needs the fields %s, which this file lacks (written by an "
                         "attnsweep without the empirical-measure observables)" %
                         ", ".join(missing))
    check_axes(rf, by, "--by")
    by = list(by)
    cols = rf.read(list(dict.fromkeys(MEASURE_FIELDS + by + rule.fields(rf))))
    pre = completeness(rf) + filter_line(rf, where, mask)
    jd = rule.judge(rf, cols)  # classified: judged or no_prediction (not not_converged)
    sel = mask & (jd.mask("judged") | jd.mask("no_prediction")) & \
        np.isfinite(cols["mass_1"].astype(float))
    axes = [Axis(rf, a, cols[a]) for a in by]
    gid, keys = make_groups(axes, sel)
    ng = len(keys)
    cnt = np.bincount(gid, minlength=ng).astype(float)

    def mean_sd(name: str) -> Tuple[np.ndarray, np.ndarray]:
        v = cols[name][sel].astype(float)
        s1 = np.bincount(gid, weights=v, minlength=ng)
        s2 = np.bincount(gid, weights=v * v, minlength=ng)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = s1 / cnt
            var = np.maximum(s2 - cnt * m * m, 0.0) / (cnt - 1)
        sd = np.where(cnt >= 2, np.sqrt(var), np.nan)
        return m, sd

    def median(values: np.ndarray) -> np.ndarray:
        q, _ = group_quantiles(values, gid, ng, [0.5])
        return q[:, 0]

    masses = [mean_sd(f) for f in MASS_FIELDS + ["mass_rest"]]
    mvec = np.array([m for m, _ in masses]).T  # ng x 9
    # shown: the masses up to the last one that is nonzero in some group
    nz = [j for j in range(len(MASS_FIELDS)) if np.any(mvec[:, j] > 0)]
    shown = (max(nz) + 1) if nz else 1
    ref = mvec[-1] if ng else None
    l1 = np.abs(mvec - ref).sum(axis=1) if ng else np.zeros(0)
    unres = cols["n_unresolved"][sel].astype(float) / cols["n"][sel].astype(float)
    unres_m = np.bincount(gid, weights=unres, minlength=ng) / np.maximum(cnt, 1)
    hv = cols["hull_vertices"][sel].astype(float)
    hv[hv < 0] = np.nan
    hvi = cols["hull_vertices_init"][sel].astype(float)
    hvi[hvi < 0] = np.nan
    rn = cols["reference_n"][sel].astype(float)
    rn[rn <= 0] = np.nan
    stat = {"clusters": median(cols["n_clusters"][sel].astype(float)), "hull": median(hv),
            "hull_init": median(hvi), "ref_n": median(rn),
            "ref_w1": median(cols["ref_w1"][sel].astype(float)),
            "ref_clusters": median(np.where(cols["ref_n_clusters"][sel] >= 0,
                                            cols["ref_n_clusters"][sel], -1).astype(float))}
    stat["ref_clusters"][stat["ref_clusters"] < 0] = np.nan
    key_labels = [tuple(ax.labels[k[j]] for j, ax in enumerate(axes)) for k in keys]
    mnames = ["m%d" % j for j in range(1, shown + 1)] + ["rest"]
    header = list(by) + ["trials"] + ["%s mean (sd)" % m for m in mnames] + \
        ["masses L1 to last", "unresolved", "clusters med", "hull vertices med",
         "initial hull med", "reference_n", "ref_w1 med"]
    csv_header = list(by) + ["trials"] + \
        ["%s_%s" % (f, x) for f in MASS_FIELDS + ["mass_rest"] for x in ("mean", "sd")] + \
        ["mass_l1_to_last", "unresolved_mean", "clusters_median", "hull_vertices_median",
         "hull_vertices_init_median", "reference_n_median", "ref_w1_median",
         "ref_n_clusters_median"]
    idx = list(range(shown)) + [len(MASS_FIELDS)]
    rows, crows, trows = [], [], []
    for i, kl in enumerate(key_labels):
        def cell(j: int) -> str:
            m, sd = masses[j][0][i], masses[j][1][i]
            return g(m) + ("" if math.isnan(sd) else " (%s)" % g(sd, 2))
        tail = [g(l1[i]), g(unres_m[i]), g(stat["clusters"][i]), g(stat["hull"][i]),
                g(stat["hull_init"][i]), g(stat["ref_n"][i], 6), g(stat["ref_w1"][i])]
        rows.append(list(kl) + [str(int(cnt[i]))] + [cell(j) for j in idx] + tail)
        trows.append([latex_escape(c) for c in rows[-1]])

        def num(v: float) -> str:
            return "" if math.isnan(v) else repr(float(v))
        crows.append(list(kl) + [str(int(cnt[i]))] +
                     [num(x) for j in range(len(masses)) for x in (masses[j][0][i],
                                                                    masses[j][1][i])] +
                     [num(l1[i]), num(unres_m[i]), num(stat["clusters"][i]),
                      num(stat["hull"][i]), num(stat["hull_init"][i]), num(stat["ref_n"][i]),
                      num(stat["ref_w1"][i]), num(stat["ref_clusters"][i])])
    # LaTeX: transposed, a row per quantity and a column per group (18 columns fit no page)
    nb = len(by)
    tex_cols = [("quantity", TEX_TEXT)] + \
        [(r"\newline ".join(tex_eq(n, v) for n, v in zip(by, kl)) or "all", tex_num("4.2em"))
         for kl in key_labels]
    trows = [[latex_escape(h)] + [r.replace(" (", r"\newline(") for r in
                                  (latex_escape(row[nb + k]) for row in rows)]
             for k, h in enumerate(header[nb:])]
    notes = ["Over the classified trials of each group; masses are the sorted cluster masses "
             "(fractions of n; rest: smaller clusters and unresolved tokens), their mean and "
             "standard deviation across the group's trials; 'masses L1 to last' is the L1 "
             "distance of the mean mass vector to the last group's; ref_w1 is W1 between the "
             "cluster measures of a trial and of its reference_n run (docs/meanfield.md)."]
    title = "empirical measure by " + ", ".join(by) if by else "empirical measure, all trials"
    return pre, [Table(title, header, rows, csv_header, crows, notes, tex_cols, trows)]


# ---------------------------------------------------------------- --series
#: observables of a snapshot X (n x d) that --series computes: name -> (meaning, function)
def _res(X: np.ndarray) -> np.ndarray:
    c = X - X.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt((c * c).sum(axis=(1, 2))) / np.sqrt((X * X).sum(axis=(1, 2)))


def _diam(X: np.ndarray) -> np.ndarray:
    diff = X[:, :, None, :] - X[:, None, :, :]
    return np.sqrt((diff * diff).sum(axis=-1)).max(axis=(1, 2))


def _hull(X: np.ndarray) -> np.ndarray:
    from . import geometry
    out = np.full(len(X), np.nan)
    for k, x in enumerate(X):
        if x.shape[1] == 2:
            out[k] = len(geometry.convex_hull_2d(x))
        elif x.shape[1] == 3:
            out[k] = len(geometry.convex_hull_3d(x)[1])
        elif x.shape[1] == 1:
            out[k] = 1 if np.ptp(x) == 0 else 2
    return out


SERIES: Dict[str, Tuple[str, Optional[Callable[[np.ndarray], np.ndarray]]]] = {
    "residual": ("res(X) = ||X - 1 mean(X)^T||_F / ||X||_F", _res),
    "diameter": ("diameter max_ij |x_i - x_j|", _diam),
    "clusters": ("cluster count (/bulk/snapshot_clusters)", None),
    "hull": ("vertices of the convex hull of the tokens (d <= 3)", _hull),
}


def series_tables(rf: Results, by: Sequence[str], where: Optional[str],
                  names: Sequence[str]) -> Tuple[List[str], List[Table], Dict[str, Any]]:
    """--series: per --by group and time, the median [exact 95% CI], mean and count of each
    observable over the trials whose snapshots are stored: t = 0 from the initial tokens when
    those are stored, then the snapshot times (/bulk/snapshots@times, else the stored spec).
    Returns (preamble lines, [Table], plot data)."""
    for nm in names:
        if nm not in SERIES:
            raise UsageError("--series: '%s' is not an observable (one of: %s)" % (
                nm, ", ".join(SERIES)))
    check_axes(rf, by, "--by")
    by = list(by)
    mask = where_mask(rf, where) & ~not_converged_mask(rf)
    cols = rf.read(list(dict.fromkeys(by + ["n", "d"])))
    pre = completeness(rf) + filter_line(rf, where, mask)
    snaps = rf.bulk_slabs("snapshots")
    if snaps is None:
        raise UsageError("--series needs snapshots: %s has no /bulk/snapshots (add "
                         "output: {snapshots: [t1, t2, ...]} to the spec)" % rf.path)
    clus = rf.bulk_slabs("snapshot_clusters")
    if "clusters" in names and clus is None:
        raise UsageError("--series clusters: %s has no /bulk/snapshot_clusters" % rf.path)
    init = rf.bulk_slabs("initial_tokens")
    times = rf.snapshot_times()
    done = stat_rows(rf)
    axes = [Axis(rf, a, cols[a]) for a in by]
    gid, keys = make_groups(axes, mask)
    rows_sel = np.nonzero(mask)[0]
    # values[name][group] -> list per time index of values
    nt: Optional[int] = None
    with_t0 = False
    data: Dict[str, Dict[int, List[np.ndarray]]] = {nm: {} for nm in names}
    for k, trial in enumerate(rows_sel):
        if not done[trial]:
            continue
        flat = snaps(int(trial))
        if flat is None:
            continue
        n, d = int(cols["n"][trial]), int(cols["d"][trial])
        X = flat.reshape(-1, n, d)
        x0 = init(int(trial)) if init is not None else None
        with_zero = x0 is not None and len(x0) == n * d
        if x0 is not None and with_zero:
            X = np.concatenate([x0.reshape(1, n, d), X])
        if nt is None:
            nt = len(X)
            with_t0 = with_zero
        if len(X) != nt:
            raise schema.SchemaError("%s: trial %d has %d snapshots, others %d" % (
                rf.path, trial, len(X) - with_zero, nt - with_t0))
        for nm in names:
            fn = SERIES[nm][1]
            if nm == "clusters" or fn is None:
                c = clus(int(trial)) if clus is not None else None
                v = np.full(nt, np.nan)
                if c is not None:
                    v[nt - len(c):] = c
                    if with_t0:
                        v[0] = np.nan
            else:
                v = fn(X)
            data[nm].setdefault(int(gid[k]), []).append(v)
    if nt is None:
        raise UsageError("--series: no selected trial that ran has snapshots stored")
    snap_t = list(times) if times is not None else list(range(1, nt - with_t0 + 1))
    tvals = ([0.0] if with_t0 else []) + [float(t) for t in snap_t[:nt - with_t0]]
    med = fstat.Stat("x", "median")
    # md and LaTeX: one row per group and observable, the medians in a column per time; the
    # csv: long (one row per time) with the intervals and the mean
    header = list(by) + ["observable", "trials"] + ["t = %s" % g(t, 6) for t in tvals]
    chead = list(by) + ["observable", "t", "trials", "median", "median_lo", "median_hi",
                        "mean"]
    rows: List[List[str]] = []
    crows: List[List[str]] = []
    pseries: Dict[str, Dict[str, Dict[str, List[Any]]]] = {}
    plot: Dict[str, Any] = {"names": names, "series": pseries, "where": where}
    for nm in names:
        for gi, key in enumerate(keys):
            vals = data[nm].get(gi)
            if not vals:
                continue
            arr = np.array(vals)  # trials x times
            glabel = [ax.labels[key[j]] for j, ax in enumerate(axes)]
            ser = pseries.setdefault(nm, {}).setdefault(
                ", ".join("%s = %s" % nv for nv in zip(by, glabel)) or "all trials",
                {"t": [], "median": [], "lo": [], "hi": [], "trials": []})
            wide = []
            for j, t in enumerate(tvals):
                v = arr[:, j]
                v = v[np.isfinite(v)]
                r = fstat.summarise(med, v)
                mean = float(np.mean(v)) if len(v) else np.nan
                wide.append(g(r["value"], 2))
                crows.append(glabel + [nm, fnum(t), str(len(v)), fnum(r["value"]),
                                       fnum(r["lo"]), fnum(r["hi"]), fnum(mean)])
                for key2, val in (("t", t), ("median", r["value"]), ("lo", r["lo"]),
                                  ("hi", r["hi"]), ("trials", len(v))):
                    ser[key2].append(val)
            rows.append(glabel + [nm, str(len(arr))] + wide)
    notes = ["Per time: the observable of each trial's tokens (%s), over the trials that ran "
             "with stored snapshots; the median at each time (the csv, long, adds its exact "
             "95%% interval and the mean). t = 0: the initial tokens%s." % (
                 "; ".join("%s: %s" % (nm, SERIES[nm][0]) for nm in names),
                 "" if with_t0 else " (not stored: the series starts at the first snapshot)")]
    # LaTeX: the groups and the observable wrap, the numbers (trials, a column per time) are
    # narrow fixed columns
    nt = header.index("trials") if "trials" in header else len(header)
    tex_cols = [(latex_escape(h), TEX_TEXT) for h in header[:nt]] + \
        [(("$%s$" % h) if h.startswith("t = ") else latex_escape(h), tex_num("2.8em"))
         for h in header[nt:]]
    trows = [[latex_escape(c) for c in r] for r in rows]
    title = "time series of %s%s" % (", ".join(names), (" by " + ", ".join(by)) if by else "")
    return pre, [Table(title, header, rows, chead, crows, notes, tex_cols, trows)], plot


