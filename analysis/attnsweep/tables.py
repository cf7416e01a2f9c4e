"""`summarize` without --stat: the verdict table by --by groups (with the default columns of
what the sweep holds), Table 1, and the phase diagram (--phase): every fraction by the rule
(rule.py), one verdict family per table (--verdict)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import rule, schema
from .errors import UsageError
from .groups import Axis, baseline_note, join_baselines, make_groups
from .render import Table
from .schema import Results
from .selection import completeness, filter_line, where_mask
from .stattables import append_stat_columns, compute_stat_results, default_stats
from .table1 import near_miss_stats, proved_theorems, table1_rows, table1_tables
from .verdicts import STAT_FIELDS, compute_stats, stats_table

def show_settle(cols: Dict[str, np.ndarray], mask: np.ndarray) -> bool:
    """Whether tables show the settle-time column: some selected trial has early stopping on
    (settle_window > 0, when the file records the key) or a finite settle_time."""
    if "settle_time" not in cols:
        return False
    if "settle_window" in cols and np.any(cols["settle_window"][mask] > 0):
        return True
    return bool(np.isfinite(cols["settle_time"][mask].astype(float)).any())


def phase_verdict(rf: Results, mask: np.ndarray, choice: Optional[str] = None) -> str:
    """Which verdict --phase judges (rule.choose): --verdict, else near_verdict when the file
    has it and a selected trial is a near miss, else verdict."""
    return rule.choose(rf, mask, choice)


def summary_tables(rf: Results, by: Sequence[str], where: Optional[str], table1: bool = False,
                   phase: Optional[str] = None, bins: int = 12, defaults: bool = False,
                   settle: Optional[bool] = None, verdict: Optional[str] = None,
                   drop_empty: bool = False
                   ) -> Tuple[List[str], List[Table], Optional[Dict[str, Any]]]:
    """Compute the tables. Returns (preamble lines, [Table], phase data or None). verdict:
    'near', 'exact' or None: with --phase phase_verdict chooses, else exact (the --by tables
    and Table 1 judge `verdict`; Table 1's near misses `near_verdict`)."""
    mask = where_mask(rf, where)
    axes_names = list(by)
    if phase:
        axes_names = [a for a in axes_names if a != phase] + [phase]
    if table1:  # one Table 1 per combination of the --by axes
        axes_names = [a for a in axes_names if a != "theorem"] + ["theorem"]
    for a in axes_names:
        try:
            rf.field_kind(a)
        except schema.SchemaError as e:
            raise UsageError("--by/--phase: %s" % e)
    want = [f for f in STAT_FIELDS + ["settle_window"] if f in rf.fields]
    near_fields = ["theorem", "near_theorem", "near_verdict", "near_dist"]
    judge = phase_verdict(rf, mask, verdict) if phase else rule.choose(rf, mask, verdict,
                                                                       "exact")
    if table1 and all(f in rf.fields for f in near_fields):
        want += near_fields + [f for f in rule.family("near") if f in rf.fields]
    want += [f for f in rule.family(judge) if f in rf.fields]
    cols = rf.read(list(dict.fromkeys(want + axes_names)))
    pre = completeness(rf) + filter_line(rf, where, mask)
    axes = [Axis(rf, a, cols[a], bins=(bins if a == phase else None)) for a in axes_names]
    gmask, gcols = mask, cols
    joined: Dict[str, int] = {}
    if phase or judge == "near":
        pre.append(rule.verdict_line(judge, "chosen by --verdict" if verdict else
                                     "the default of --phase: near_verdict when some selected "
                                     "trial is a near miss" if phase else "the default"))
    if phase:
        rows, axes, joined = join_baselines(rf, axes, range(len(axes) - 1), mask)
        gcols = {k: v[rows] for k, v in gcols.items()}
        gmask = np.ones(len(rows), dtype=bool)
        if joined:
            pre += baseline_note(joined)
    gid, keys = make_groups(axes, gmask)
    s = compute_stats(rf, gcols, gmask, gid, len(keys), which=judge)
    key_labels = [tuple(ax.labels[k[j]] for j, ax in enumerate(axes)) for k in keys]
    if settle is None:
        settle = show_settle(cols, mask) and not table1

    notes = ["Fractions are over the judged trials (consistent + violated + unresolved; "
             "the rule of docs/analysis.md), with Wilson score 95% intervals; " +
             ("clusters, rank P and settle time" if settle else "clusters and rank P") +
             " over classified trials ('clusters': every cluster at T, settled or not; "
             "'settled clusters': those of settled tokens); 'unresolved by reason' splits the "
             "unresolved trials (docs/theory.md 2.2) and 'rerun at' is the largest t_decide "
             "among them, the horizon that decides them; 'other' "
             "counts the trials no fraction counts: no_prediction, not_converged, nonfinite "
             "and failed" + ("" if judge == "exact" else
                             "; verdict, reasons and horizons are near_verdict, near_reason "
                             "and near_t_decide") + "."]
    if table1:
        near = near_miss_stats(rf, cols, mask, axes[:-1]) if "near_theorem" in cols else None
        if near is not None and where:
            every = near_miss_stats(rf, cols, np.ones(rf.n_rows, dtype=bool), [])
            tot = sum(int(st["n"][i]) for st, i in every.values())
            kept = sum(int(st["n"][i]) for st, i in near.values())
            notes.append("--where %s filters the near-miss columns too: %d of the file's %d "
                         "near-miss trials are in them (--drop-empty leaves out the theorem "
                         "rows without trials without filtering)" % (where, kept, tot))
        return pre, table1_tables(axes, key_labels, s, notes, table1_rows(rf),
                                  near, proved_theorems(rf), drop_empty), None
    title = "by " + ", ".join(axes_names) if axes_names else "all trials"
    tables = [stats_table(title, axes_names, key_labels, s, notes, settle=settle)]
    if defaults:  # the columns for what the sweep holds (heads, Sinkhorn, sphere, measure)
        dstats = default_stats([rf], [mask])
        if dstats:
            append_stat_columns(tables[0], dstats,
                                compute_stat_results(rf, dstats, mask, gid, len(keys)))
    phase_data = None
    if phase:
        phase_data = phase_series(rf, axes, keys, s)
        phase_data["where"] = where
    return pre, tables, phase_data



def phase_series(rf: Results, axes: Sequence[Any], keys: Sequence[Tuple[int, ...]],
                 s: Dict[str, Any]) -> Dict[str, Any]:
    """Series of the phase diagram: {'param': name, 'xlabel': its human label, 'series':
    {group label: {'x', 'label' (x as text), 'judged' (the n of each point), verdict: (frac,
    lo, hi)}}}."""
    px = axes[-1]
    series: Dict[str, Dict[str, Any]] = {}
    for i, k in enumerate(keys):
        glabel = ", ".join("%s = %s" % (a.name, a.labels[k[j]])
                           for j, a in enumerate(axes[:-1]))
        x = px.values[k[-1]]
        ser = series.setdefault(glabel, dict({"x": [], "judged": [], "label": []},
                                             **{v: ([], [], []) for v in rule.JUDGED}))
        ser["x"].append(x)
        ser["label"].append(px.labels[k[-1]])
        ser["judged"].append(int(s["judged"][i]))
        for v in rule.JUDGED:
            for arr, key in zip(ser[v], ("frac", "lo", "hi")):
                arr.append(float(s["%s_%s" % (v, key)][i]))
    return {"param": px.name, "xlabel": rf.axis_label(px.name), "series": series,
            "categorical": px.kind in ("enum", "flag")}


