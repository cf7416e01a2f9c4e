"""`summarize --robustness`: how robust the theorems are when their hypotheses hold only
approximately. For each hypothesis distance, the verdict of the trials whose nearest theorem
has the hypothesis against that distance; every fraction by the rule (rule.py), one verdict
family per table (--verdict near, the default, or exact)."""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import rule
from .errors import UsageError
from .groups import Axis, DistanceAxis, baseline_note, join_baselines, make_groups
from .render import TEX_TEXT, Table, g, latex_escape, num_getter, tex_eq, tex_num, tex_p
from .schema import Results
from .selection import check_axes, completeness, filter_line, where_mask
from .stats import group_quantiles
from .stattables import check_columns, column_order
from .table1 import hypotheses
from .verdicts import STAT_FIELDS, compute_stats, frac_cell, tex_frac

def robustness_tables(rf: Results, by: Sequence[str], where: Optional[str], bins: int = 12,
                      columns: Optional[str] = None, verdict: Optional[str] = None
                      ) -> Tuple[List[str], List[Table], Dict[str, Any]]:
    """--robustness: for each hypothesis distance of hypotheses(rf) the file has, the verdict
    (verdict="near", the default: near_verdict, against the nearest theorem, with near_reason
    and near_t_decide; "exact": verdict, reason, t_decide) against that distance, over the
    trials whose nearest theorem has the hypothesis, grouped by the --by axes and near_theorem.
    columns: a key whose values become columns (--columns; pivot_robustness). Returns
    (preamble lines, [Table], plot data {'panels': [...], 'where', 'verdict'})."""
    if columns is not None:
        return pivot_robustness(rf, by, where, bins, columns, verdict)
    mask = where_mask(rf, where)
    need = ["near_theorem", "near_verdict"]
    missing = [f for f in need if f not in rf.fields]
    if missing:
        raise UsageError("--robustness needs the fields %s, which this file lacks (written by "
                         "an attnsweep without the nearest theorem)" % ", ".join(missing))
    if rf.near_hypotheses is None:
        raise UsageError("--robustness needs the /trials attribute near_hypotheses, which this "
                         "file lacks (written by an older attnsweep)")
    hyps = [(h, th) for h, th in hypotheses(rf) if h in rf.fields]
    check_axes(rf, by, "--by")
    by = [a for a in by if a != "near_theorem"]
    which = rule.choose(rf, mask, verdict, "near")
    vfield = rule.family(which)[0]
    want = [f for f in STAT_FIELDS + list(rule.family(which)) if f in rf.fields]
    cols = rf.read(list(dict.fromkeys(want + need + by + [h for h, _ in hyps])))
    pre = completeness(rf) + filter_line(rf, where, mask)
    pre.append(rule.verdict_line(which, "chosen by --verdict" if verdict else
                                 "the default of --robustness"))
    near = cols["near_theorem"]
    tables: List[Table] = []
    panels: List[Dict[str, Any]] = []
    joined_all: Dict[str, int] = {}
    header_tail = ["x (median)", "trials", "judged", "consistent", "violated", "unresolved",
                   "other", "consistent [95% CI]"]
    csv_tail = ["x", "lo", "hi", "trials", "judged", "consistent", "violated", "unresolved", "other",
                "consistent_frac", "consistent_lo", "consistent_hi"]
    for h, theorems in hyps:
        codes = [rf.code("near_theorem", t) for t in theorems if rf.has_code("near_theorem", t)]
        sel = mask & np.isin(near, codes)
        dist = DistanceAxis(h, np.where(sel, cols[h].astype(float), np.nan), bins)
        axes: List[Any] = [Axis(rf, a, cols[a]) for a in by] + \
            [Axis(rf, "near_theorem", near), dist]
        at, axes, joined = join_baselines(rf, axes, range(len(by)), sel)
        gsel = np.ones(len(at), dtype=bool)
        gid, keys = make_groups(axes, gsel)
        st = compute_stats(rf, {k: v[at] for k, v in cols.items()}, gsel, gid, len(keys),
                           which=which)
        # x of a point: the median distance of its own trials (a bin is shared by the groups)
        xmed, _ = group_quantiles(cols[h][at].astype(float), gid, len(keys), [0.5])
        names = by + ["near theorem", h]
        rows: List[List[str]] = []
        crows: List[List[str]] = []
        trows: List[List[str]] = []
        series: Dict[str, Dict[str, Any]] = {}
        for i, k in enumerate(keys):
            labels = [ax.labels[k[j]] for j, ax in enumerate(axes)]
            x = float(xmed[i, 0])
            other = int(st["excluded"][i])
            cells = [str(int(st["n"][i])), str(int(st["judged"][i])),
                     str(int(st["consistent"][i])), str(int(st["violated"][i])),
                     str(int(st["unresolved"][i])), str(other)]
            rows.append(labels + [g(x, 3)] + cells + [frac_cell(st, "consistent", i)])
            num = num_getter(st, i)
            fnum = lambda v: "" if v is None or math.isnan(v) else repr(float(v))  # noqa: E731
            blo, bhi = dist.bounds[k[-1]]
            # long format: one csv table for every distance (the distance a column)
            crows.append(labels[:-1] + [h, labels[-1]] + [fnum(x), fnum(blo), fnum(bhi)] +
                         cells + [num("consistent_frac"), num("consistent_lo"),
                                  num("consistent_hi")])
            trows.append([latex_escape(l) for l in labels[:-1]] + [g(x, 2)] +
                         [r"%s\newline (%s)" % tuple(cells[:2])] +
                         [tex_frac(st, "consistent", i)])
            glabel = ", ".join("%s = %s" % (n, l) for n, l in zip(by, labels[:len(by)]))
            glabel = (glabel + ", " if glabel else "") + labels[len(by)]
            ser = series.setdefault(glabel, {"x": [], "trials": [], "judged": [],
                                             "consistent": ([], [], []),
                                             "keys": dict(zip(by + ["near theorem"],
                                                              labels[:len(by) + 1]))})
            if x is None or math.isnan(x):
                continue  # the n/a bin: in the table, not on an axis
            ser["x"].append(float(x))
            ser["trials"].append(int(st["n"][i]))
            ser["judged"].append(int(st["judged"][i]))
            for arr, key in zip(ser["consistent"], ("frac", "lo", "hi")):
                arr.append(float(st["consistent_%s" % key][i]))
        title = "%s against %s (%s)" % ("near verdict" if which == "near" else "verdict", h,
                                        ", ".join(theorems))
        notes = ["%s: %s. Rows: the trials whose nearest theorem (near_theorem) has this "
                 "hypothesis, by near_theorem%s and distance (with more than %d distinct values: "
                 "quantile bins, separately for < 0, = 0 and > 0; x = the median distance of "
                 "the point's trials). Counts are of %s; the "
                 "fraction is consistent / judged (consistent + violated + unresolved) with its "
                 "Wilson score 95%% interval; 'other' counts the trials no fraction counts "
                 "(no_prediction, not_converged, nonfinite, failed)." %
                 (h, rf.axis_label(h), (", " + ", ".join(by)) if by else "", bins,
                  vfield)] + \
            (baseline_note(joined) if joined else [])
        # the point's label is left out of LaTeX: its x (the median) says where it is
        tex_cols = [(latex_escape(n), TEX_TEXT) for n in names[:-1]] + \
            [(r"%s\newline median" % latex_escape(h), tex_num("5.6em")),
             (r"trials\newline (judged)", tex_num("4em")),
             (r"consistent\newline (95\,\% CI)", tex_num("4.8em"))]
        for a, v in joined.items():
            joined_all[a] = max(joined_all.get(a, 0), v)
        tables.append(Table(title, names + header_tail, rows,
                            by + ["near_theorem", "distance", "bin"] + csv_tail, crows, notes,
                            tex_cols, trows))
        panels.append({"param": h, "xlabel": rf.axis_label(h), "theorems": theorems,
                       "series": {gl: v for gl, v in series.items() if v["x"]}})
    if joined_all:
        pre += baseline_note(joined_all)
    return pre, tables, {"panels": panels, "where": where, "verdict": vfield}


def pivot_robustness(rf: Results, by: Sequence[str], where: Optional[str], bins: int, key: str,
                     verdict: Optional[str] = None
                     ) -> Tuple[List[str], List[Table], Dict[str, Any]]:
    """--robustness --columns KEY: the robustness tables with one row per --by group, nearest
    theorem and distance point, and one column per value of KEY: consistent/judged = fraction
    [Wilson 95% CI] of the row's trials at that value (e.g. KEY = T: the same curve at each
    horizon side by side). x (median) and trials are over the whole row (every value of KEY).
    The distance points are those of the table without --columns (bins over all selected
    trials). csv: the tidy long form, the table of --by AXES,KEY (one row per row and value;
    pandas' DataFrame.pivot gives this layout back). Returns robustness_tables' triple."""
    check_columns(rf, key, by)
    pre, long_tables, robust = robustness_tables(rf, list(by) + [key], where, bins,
                                                 verdict=verdict)
    _, row_tables, _ = robustness_tables(rf, list(by), where, bins, verdict=verdict)
    nb = len(by)
    tables = []
    for lt, rt in zip(long_tables, row_tables):
        # the long table's rows: by..., KEY, near theorem, point, x, trials, judged, counts
        head = lt.header
        ix = {h: j for j, h in enumerate(head)}
        values = column_order(dict.fromkeys(r[nb] for r in lt.rows))
        cells = {}
        for r in lt.rows:
            ident = tuple(r[:nb] + r[nb + 1:nb + 3])
            k, j = int(r[ix["consistent"]]), int(r[ix["judged"]])
            frac = r[ix["consistent [95% CI]"]]
            cells[ident, r[nb]] = "%d/%d = %s" % (k, j, frac) if j else \
                "- (%s trials, none judged)" % r[ix["trials"]]
        rows, trows = [], []
        rix = {h: j for j, h in enumerate(rt.header)}
        for r in rt.rows:
            ident = tuple(r[:nb + 2])
            rows.append(r[:nb + 3] + [r[rix["trials"]]] +
                        [cells.get((ident, v), "-") for v in values])
            # LaTeX: the group (its keys and the nearest theorem) in one text column
            trows.append([r"\newline ".join([tex_eq(n, k) for n, k in zip(by, r[:nb])] +
                                             [latex_escape(r[nb])])] + [r[rix["x (median)"]]] +
                         [r[rix["trials"]]] +
                         [_tex_pivot_cell(cells.get((ident, v), "-")) for v in values])
        header = rt.header[:nb + 3] + ["trials"] + ["%s = %s" % (key, v) for v in values]
        # narrower than the table without --columns: the text columns need the room
        tex_cols = [("group" if nb else "near theorem", TEX_TEXT),
                    (rt.tex_cols[nb + 1][0], tex_num("5.2em")), ("trials", tex_num("2.4em"))] + \
            [(latex_escape("%s = %s" % (key, v)), tex_num("4.2em")) for v in values]
        notes = ["Columns: the values of %s; a cell is consistent/judged = the fraction "
                 "consistent [Wilson 95%% CI] of the row's trials at that value (%s); "
                 "x (median) and trials are over the whole row. csv: the same cells in long "
                 "format (the table of --by %s)." % (key, robust["verdict"],
                                                     ",".join(list(by) + [key]))] + \
            rt.notes
        tables.append(Table(rt.title + ", by " + key, header, rows, lt.csv_header,
                            lt.csv_rows, notes, tex_cols, trows))
    return pre, tables, robust


def _tex_pivot_cell(cell: str) -> str:
    """LaTeX of a pivot cell "k/n = f [lo, hi]": the fraction over its interval and counts."""
    m = re.match(r"^(\d+)/(\d+) = ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]$", cell)
    if not m:
        return "--"
    k, n, f, lo, hi = m.groups()
    return r"%s\newline%s--%s\newline(%s/%s)" % (tex_p(float(f)), tex_p(float(lo)),
                                                  tex_p(float(hi)), k, n)


