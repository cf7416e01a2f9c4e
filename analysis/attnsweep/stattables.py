"""`summarize --stat`: statistics of any record field per group (and file), the default
columns for what a sweep holds, and --columns KEY (a column per value of a key). A fraction of
a verdict (`verdict:=consistent`, `near_verdict:=violated`) is of the judged trials, by the
rule (rule.py)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from . import rule, schema
from . import stats as fstat
from .errors import UsageError
from .groups import Axis, make_groups
from .render import TEX_TEXT, Table, fnum, g, latex_escape
from .schema import Results
from .selection import (check_axes, completeness, filter_line, not_converged_mask, stat_rows,
                        where_mask)

#: the verdict fields whose fractions the rule judges, and the family of each
VERDICT_FIELDS = {"verdict": "exact", "near_verdict": "near"}

def _stat_field_kind(rf: Results) -> Any:
    def kind(field: str) -> str:
        try:
            return rf.field_kind(field)
        except schema.SchemaError as e:
            raise UsageError("--stat: %s" % e)
    return kind


def parse_stat_tokens(rfs: Sequence[Results], tokens: Sequence[str]) -> List[fstat.Stat]:
    """[Stat] of --stat tokens, checked against every file."""
    stats = None
    for rf in rfs:
        try:
            st = fstat.parse_stats(tokens, _stat_field_kind(rf), rf.labels)
        except fstat.StatError as e:
            raise UsageError(str(e))
        stats = st if stats is None else stats
    return stats or []


def stat_values(rf: Results, stat: fstat.Stat, cols: Dict[str, np.ndarray],
                keep: np.ndarray) -> np.ndarray:
    """The per-trial values a Stat summarises, NaN where not applicable, not run or not kept
    (keep: stat_rows). A fraction of a judged verdict label (verdict:=consistent, violated,
    unresolved; near_verdict alike) is NaN on every trial the rule does not judge: its
    denominator is the judged trials (rule.py); another label of a verdict (=no_prediction,
    =failed, ...) is a fraction of the trials that ran."""
    kind = rf.field_kind(stat.field)
    fill = fstat.fill_value(stat.field, rf.description(stat.field)) if kind == "int" else None
    v = fstat.field_values(cols[stat.field], kind, fill)
    v[~keep] = np.nan
    code = None
    if stat.kind == "frac" and stat.param[0] == "=":
        code = rf.code(stat.field, stat.param[1])
        which = VERDICT_FIELDS.get(rf._name(stat.field))
        if which and stat.param[1] in rule.JUDGED:
            v[~rule.judge(rf, cols, which).mask("judged")] = np.nan
    return fstat.per_trial(stat, v, code)


def stat_mask(rf: Results, where: Optional[str]) -> np.ndarray:
    """The rows a --stat table groups: those of --where, less the not_converged trials (in no
    statistic; the header counts them)."""
    return where_mask(rf, where) & ~not_converged_mask(rf)


def stat_fields(rf: Results, stats: Sequence[fstat.Stat]) -> List[str]:
    """The fields stat_values reads for these statistics (the rule's among them)."""
    need = [s.field for s in stats] + (["outcome"] if "outcome" in rf.fields else [])
    for s in stats:
        which = VERDICT_FIELDS.get(rf._name(s.field))
        if which:
            need += rule.fields(rf, which)
    return list(dict.fromkeys(need))


def _features(rf: Results, cols: Dict[str, np.ndarray], mask: np.ndarray) -> Set[str]:
    """What the selected trials hold (default columns, attnsweep_stat.default_fields)."""
    def lab(field: str, labels: Sequence[str]) -> bool:
        if field not in cols or not rf.is_enum(field):
            return False
        codes = [rf.code(field, l) for l in labels if rf.has_code(field, l)]
        return bool(np.isin(cols[field][mask], codes).any())

    feats = set()
    if lab("method", ["layers"]) or lab("ffn", ["relu", "tanh", "identity"]) or \
            lab("weights", ["per_layer"]) or \
            ("heads" in cols and (cols["heads"][mask] > 1).any()):
        feats.add("blocks")
    if lab("attention", ["sinkhorn", "sinkhorn_fixed"]):
        feats.add("sinkhorn")
    if lab("norm", ["sphere"]) or lab("mask", ["causal"]):
        feats.add("sphere")
    if ("reference_n" in cols and (cols["reference_n"][mask] > 0).any()):
        feats.add("measure")
    return feats


FEATURE_FIELDS = ["method", "ffn", "weights", "heads", "attention", "norm", "mask",
                  "reference_n"]


def default_stats(rfs: Sequence[Results], masks: Sequence[np.ndarray]) -> List[fstat.Stat]:
    """The default statistic columns of the selected trials of every file: those
    attnsweep_stat.default_fields names for what the sweep holds, for fields some selected
    trial fills."""
    feats = set()
    for rf, mask in zip(rfs, masks):
        cols = rf.read([f for f in FEATURE_FIELDS if f in rf.fields])
        feats |= _features(rf, cols, mask)
    tokens = fstat.default_fields(feats.__contains__)
    out = []
    for tok in tokens:
        field = tok.partition(":")[0]
        if all(field in rf.fields for rf in rfs):
            out += parse_stat_tokens(rfs, [tok])
    keep = []
    for st in out:
        for rf, mask in zip(rfs, masks):
            cols = rf.read(stat_fields(rf, [st]))
            v = stat_values(rf, st, cols, stat_rows(rf, cols))
            if (~np.isnan(v[mask])).any():
                keep.append(st)
                break
    return keep


def _stat_cell(r: Dict[str, Any], st: fstat.Stat) -> str:
    if math.isnan(r["value"]):
        return "-"
    if st.kind == "frac":
        return "%.3f [%.3f, %.3f] (%d/%d)" % (r["value"], r["lo"], r["hi"], r["k"], r["n"])
    if st.kind == "n":
        return str(int(r["value"]))
    text = g(r["value"], 4)
    if st.has_interval:
        text += " [%s, %s]" % (g(r["lo"], 3), g(r["hi"], 3))
    return text


def stat_columns(stats: Sequence[fstat.Stat], results: Sequence[Sequence[Dict[str, Any]]],
                 with_n: bool = True) -> Tuple[List[str], List[str], List[List[str]],
                                               List[List[str]]]:
    """Headers and cells of statistic columns: results[j][i] is summarise() of stats[j] in
    group i. Returns (md header, csv header, md cells per group, csv cells per group)."""
    head, chead = [], []
    fields_n = []
    for st in stats:
        head.append(st.title + (" [95% CI]" if st.has_interval else ""))
        chead += [st.name] + ([st.name + "_lo", st.name + "_hi"] if st.has_interval else [])
        if with_n and st.field not in fields_n:
            fields_n.append(st.field)
    chead += ["%s_n" % f for f in fields_n]
    ng = len(results[0]) if results else 0
    rows, crows = [], []
    for i in range(ng):
        cells: List[str] = []
        ccells: List[str] = []
        nby: Dict[str, Any] = {}
        for st, res in zip(stats, results):
            r = res[i]
            cells.append(_stat_cell(r, st))
            ccells += [fnum(r["value"])] + \
                ([fnum(r["lo"]), fnum(r["hi"])] if st.has_interval else [])
            nby.setdefault(st.field, r["n"])
        ccells += [str(nby[f]) for f in fields_n]
        rows.append(cells)
        crows.append(ccells)
    return head, chead, rows, crows


def compute_stat_results(rf: Results, stats: Sequence[fstat.Stat], mask: np.ndarray,
                         gid: np.ndarray, ngroups: int) -> List[List[Dict[str, Any]]]:
    """[[summarise() per group] per stat] over the rows in mask."""
    cols = rf.read(stat_fields(rf, stats))
    keep = stat_rows(rf, cols)
    out = []
    for st in stats:
        v = stat_values(rf, st, cols, keep)[mask]
        out.append(fstat.grouped(st, v, gid, ngroups))
    return out


def file_labels(rfs: Sequence[Results]) -> List[str]:
    """A label per file: the spec names when they tell the files apart, else the paths."""
    names = [rf.attrs.get("spec_name") for rf in rfs]
    if all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names):
        return [str(n) for n in names]
    return [rf.path for rf in rfs]


def stat_tables(rfs: Sequence[Results], by: Sequence[str], where: Optional[str],
                stats: Sequence[fstat.Stat],
                columns: Optional[str] = None) -> Tuple[List[str], List[Table]]:
    """--stat: the statistics per --by group (and per file when there are several). columns:
    a key whose values become columns (--columns; pivot_stat_table). Returns (preamble lines,
    [Table])."""
    if columns is not None:
        for rf in rfs:
            check_columns(rf, columns, by)
        lines, tables = stat_tables(rfs, list(by) + [columns], where, stats)
        return lines, [pivot_stat_table(tables[0], len(rfs) > 1, by, columns, stats)]
    labels = file_labels(rfs)
    multi = len(rfs) > 1
    pre: List[str] = []
    rows: List[List[str]] = []
    crows: List[List[str]] = []
    head: List[str] = []
    chead: List[str] = []
    key_names = (["file"] if multi else []) + list(by)
    for rf, flabel in zip(rfs, labels):
        check_axes(rf, by, "--by")
        mask = stat_mask(rf, where)
        cols = rf.read(list(dict.fromkeys(list(by))))
        pre += completeness(rf) + filter_line(rf, where, mask)
        axes = [Axis(rf, a, cols[a]) for a in by]
        gid, keys = make_groups(axes, mask)
        res = compute_stat_results(rf, stats, mask, gid, len(keys))
        head, chead, r, c = stat_columns(stats, res)
        n = np.bincount(gid, minlength=len(keys))
        for i, k in enumerate(keys):
            kl = ([flabel] if multi else []) + [ax.labels[k[j]] for j, ax in enumerate(axes)]
            rows.append(kl + [str(int(n[i]))] + r[i])
            crows.append(kl + [str(int(n[i]))] + c[i])
    header = key_names + ["trials"] + head
    notes = ["Statistics over the trials that ran and fill the field (NaN, and an integer "
             "field's fill value such as -1: none, are left out; not_converged trials are in "
             "none); a fraction of a verdict (verdict:=consistent, ...) is of the judged trials "
             "(consistent + violated + unresolved: no_prediction, nonfinite and failed trials "
             "are counted in FIELD_n of no such fraction); intervals 95%: quantiles exact (order "
             "statistics), means percentile bootstrap, fractions Wilson (docs/analysis.md, "
             "\"Any field: --stat\")."]
    tex_cols = [(latex_escape(h), TEX_TEXT) for h in header]
    trows = [[latex_escape(c) for c in r] for r in rows]
    title = ("statistics by " + ", ".join(key_names)) if key_names else "statistics, all trials"
    return pre, [Table(title, header, rows, key_names + ["trials"] + chead, crows, notes,
                       tex_cols, trows)]


def pivot_stat_table(t: Table, multi: bool, by: Sequence[str], key: str,
                     stats: Sequence[fstat.Stat]) -> Table:
    """--stat --columns KEY: the long table of --by AXES,KEY with one row per --by group (and
    file) and, per value of KEY, a column of each statistic (headed "KEY = value", or
    "STAT, KEY = value" for several statistics); trials: the row's total. The csv stays the
    long table (tidy: DataFrame.pivot gives this layout back)."""
    nk = len(by) + (1 if multi else 0)
    values = column_order(dict.fromkeys(r[nk] for r in t.rows))
    ns = len(t.header) - nk - 2
    order, cells, total = [], {}, {}
    for r in t.rows:
        ident = tuple(r[:nk])
        if ident not in total:
            order.append(ident)
            total[ident] = 0
        total[ident] += int(r[nk + 1])
        cells[ident, r[nk]] = r[nk + 2:]
    heads = t.header[nk + 2:]
    header = t.header[:nk] + ["trials"] + \
        [("%s = %s" % (key, v)) if ns == 1 else "%s, %s = %s" % (h, key, v)
         for v in values for h in heads]
    rows = [list(ident) + [str(total[ident])] +
            [c for v in values for c in cells.get((ident, v), ["-"] * ns)] for ident in order]
    notes = ["Columns: %s at each value of %s; trials: the row's total. csv: the same cells in "
             "long format (the table of --by %s)." % (
                 ", ".join(st.title for st in stats), key, ",".join(list(by) + [key]))] + \
        t.notes
    keys = (["file"] if multi else []) + list(by)
    title = "statistics%s, a column per %s: %s" % (
        (" by " + ", ".join(keys)) if keys else "", key, ", ".join(st.title for st in stats))
    return Table(title, header, rows, t.csv_header, t.csv_rows, notes,
                 [(latex_escape(h), TEX_TEXT) for h in header],
                 [[latex_escape(c) for c in r] for r in rows])


def append_stat_columns(table: Table, stats: Sequence[fstat.Stat],
                        results: Sequence[Sequence[Dict[str, Any]]]) -> None:
    """Adds default statistic columns to a --by table (same groups, same order)."""
    head, chead, rows, crows = stat_columns(stats, results)
    table.header = table.header + head
    table.csv_header = table.csv_header + chead
    table.rows = [r + c for r, c in zip(table.rows, rows)]
    table.csv_rows = [r + c for r, c in zip(table.csv_rows, crows)]
    if table.tex_cols is not None:  # page width only: one column holds no more columns
        table.tex_wide |= set(range(len(table.tex_cols), len(table.tex_cols) + len(head)))
        table.tex_cols = table.tex_cols + [(latex_escape(h), TEX_TEXT) for h in head]
        table.tex_rows = [r + [latex_escape(c) for c in cs]
                          for r, cs in zip(table.tex_rows, rows)]
    table.notes.append("Columns after the wall time: %s (the default statistics for what this "
                       "sweep holds; --stat FIELD:STAT chooses others), over the trials that "
                       "ran, with 95%% intervals (docs/analysis.md); LaTeX shows them at "
                       "--width page." %
                       ", ".join(s.title for s in stats))


def check_columns(rf: Results, key: str, by: Sequence[str]) -> None:
    """--columns KEY: one axis of the file, not also a --by axis."""
    if "," in key:
        raise UsageError("--columns takes one key, not %s" % key)
    try:
        rf.field_kind(key)
    except schema.SchemaError as e:
        raise UsageError("--columns: %s" % e)
    if key in by:
        raise UsageError("--columns %s: %s is also a --by axis" % (key, key))


def column_order(labels: Any) -> List[Any]:
    """The column values in order: numerically when every one is a number, else as met."""
    try:
        return sorted(labels, key=float)
    except ValueError:
        return list(labels)


