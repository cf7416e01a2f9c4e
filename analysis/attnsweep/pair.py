"""`summarize --pair`: trials matched one to one (several files trial by trial, or within one
file the trials that differ only in the pair keys) and their paired differences with paired
tests; --phase/--robustness --pair: the curves paired on the common axes. A verdict fraction
is tested on the pairs judged on both sides (rule.py); the others are counted (`excluded`)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import rule, schema
from . import stats as fstat
from .errors import UsageError
from .groups import fmt_num
from .render import TEX_TEXT, Table, fnum, g, latex_escape, tex_num
from .schema import Results
from .selection import check_axes, completeness, filter_line, parse_by, stat_rows, where_mask
from .stattables import (VERDICT_FIELDS, default_stats, file_labels, parse_stat_tokens,
                         stat_fields, stat_values)
from .tables import phase_verdict

def _as_key(rf: Results, field: str, col: np.ndarray) -> Any:
    """A coordinate as comparable values across files: enum labels as text (looked up once
    per distinct value), numbers as floats."""
    if rf.is_enum(field):
        uniq, inv = np.unique(np.asarray(col), return_inverse=True)
        labs = np.array([rf.label(field, v) for v in uniq], dtype=str)
        return labs[inv.ravel()] if len(uniq) else np.array([], dtype=str)
    return np.asarray(col, dtype=float)


def _codes(values: np.ndarray) -> np.ndarray:
    _, inv = np.unique(values, return_inverse=True)
    return inv.astype(np.int64).ravel()


def _row_ids(columns: Sequence[np.ndarray], n: int) -> np.ndarray:
    """One id per distinct combination of the given code columns (non-negative int64): the
    columns are combined as mixed-radix numbers, refactorised to 0..k-1 before they could
    overflow."""
    ids = np.zeros(n, dtype=np.int64)
    k = 1
    for c in columns:
        radix = int(c.max()) + 1 if len(c) else 1
        if k * radix >= 1 << 62:
            ids = _codes(ids)
            k = int(ids.max()) + 1 if n else 1
        ids = ids * radix + c
        k *= radix
    return _codes(ids) if columns else ids


def pair_tables(rfs: Sequence[Results], pair_keys: Sequence[str], by: Sequence[str],
                where: Optional[str], stats: Sequence[fstat.Stat]) -> Tuple[List[str], List[Table]]:
    """--pair: trials matched one to one and their paired differences. With several files,
    the trial with the same index in each file (its sweep coordinates equal too, except those
    that are constant within each file); with one file, the trials that differ only in the
    pair keys (equal in every other sweep coordinate, the replicate included, except the
    coordinates that are functions of the pair keys). Each level of the pair keys (each file)
    is compared with the first. Returns (preamble lines, [Table])."""
    multi = len(rfs) > 1
    labels = file_labels(rfs)
    pair_keys = [rfs[0]._name(k) for k in pair_keys]  # case: the field case_name
    by_names = list(by)  # as the user wrote them (case), for the headers
    by = [rfs[0]._name(b) for b in by]
    coords = [c for c in rfs[0].coordinates() if all(c in rf.fields for rf in rfs)]
    if not multi:
        rf = rfs[0]
        if not pair_keys:
            pair_keys = [k for k in rf.common_keys() if k in rf.fields]
        if not pair_keys:
            raise UsageError("--pair: name the keys to pair on in one file (--pair T or "
                             "--pair attention,T), or give several files")
        for k in pair_keys:
            if k not in coords:
                raise UsageError("--pair: '%s' is not a sweep coordinate of %s (coordinates: "
                                 "%s)" % (k, rf.path, ", ".join(coords)))
    elif pair_keys:
        raise UsageError("--pair KEYS pairs within one file; with several files give --pair "
                         "alone (the files are paired trial by trial)")
    for rf in rfs:
        check_axes(rf, by, "--by")
    for b in by:
        if b in pair_keys:
            raise UsageError("--by %s: a pair key is not a group" % b)
    pre: List[str] = []
    keycols: Dict[str, List[Any]] = {c: [] for c in coords}
    masks: List[np.ndarray] = []
    vals: List[Any] = [[] for _ in stats]
    file_idx: List[np.ndarray] = []
    trial_idx: List[np.ndarray] = []
    for fi, rf in enumerate(rfs):
        mask = where_mask(rf, where)
        cols = rf.read(list(dict.fromkeys(coords + by + stat_fields(rf, stats))))
        pre += completeness(rf) + filter_line(rf, where, mask)
        done = stat_rows(rf, cols)
        for c in coords:
            col = np.asarray(cols[c])
            if len(col) and (col == col[0]).all() and c not in pair_keys and c not in by:
                # constant in this file: its one value (a coordinate constant in every file
                # with the same value is dropped below, before the costly factorisation)
                keycols[c].append(("const", _as_key(rf, c, col[:1])[0], len(col)))
            elif len(col) and col.dtype.kind == "f" and np.isnan(col).all() and \
                    c not in pair_keys and c not in by:
                keycols[c].append(("const", np.nan, len(col)))
            else:
                keycols[c].append(_as_key(rf, c, col))
        for j, st in enumerate(stats):
            vals[j].append(stat_values(rf, st, cols, done))
        masks.append(mask)
        file_idx.append(np.full(rf.n_rows, fi, dtype=np.int64))
        trial_idx.append(np.arange(rf.n_rows, dtype=np.int64))
    sel = np.concatenate(masks)

    def same(parts: List[Any]) -> bool:  # every file constant with one value (NaN equal to NaN)
        vals_ = [p[1] for p in parts]
        return all(isinstance(p, tuple) for p in parts) and all(
            (v == vals_[0]) or (isinstance(v, float) and isinstance(vals_[0], float) and
                                math.isnan(v) and math.isnan(vals_[0])) for v in vals_)

    def column(parts: List[Any]) -> np.ndarray:
        out = []
        for p in parts:
            if isinstance(p, tuple):
                v = p[1]
                out.append(np.full(p[2], v, dtype=float if isinstance(v, float) else
                                   np.asarray([v]).dtype))
            else:
                out.append(p)
        return np.concatenate(out)
    coords = [c for c in coords if not same(keycols[c])]
    key = {c: column(keycols[c])[sel] for c in coords}
    vals = [np.concatenate(v)[sel] for v in vals]
    fidx = np.concatenate(file_idx)[sel]
    tidx = np.concatenate(trial_idx)[sel]
    n = int(sel.sum())
    codes = {c: _codes(v) for c, v in key.items()}
    varying = {c for c in coords if n and codes[c].max() > 0}
    if multi:
        level = fidx
        level_text: Dict[int, str] = dict(enumerate(labels))
        levels = list(range(len(rfs)))
        pair_names = ["file"]
    else:
        # levels in the order of the stored values (enum values, numbers), not of labels
        raw = rfs[0].read(pair_keys)
        level = _row_ids([_codes(np.asarray(raw[k])[sel]) for k in pair_keys], n)
        level_text = {}
        for lv in np.unique(level):
            r = int(np.nonzero(level == lv)[0][0])
            level_text[int(lv)] = ", ".join("%s = %s" % (k, fmt_num(key[k][r])
                                                         if key[k].dtype.kind == "f"
                                                         else key[k][r]) for k in pair_keys)
        levels = sorted(level_text)
        pair_names = list(pair_keys)
    if len(levels) < 2:
        raise UsageError("--pair: the selected trials have one value of %s: nothing to pair" %
                         ", ".join(pair_names))
    nlev = len(np.unique(level))
    dependent, match = [], []
    for c in coords:
        if c in pair_keys or c not in varying:  # constant: nothing to match
            continue
        nboth = len(np.unique(level * (int(codes[c].max()) + 1) + codes[c]))
        if nboth == nlev:  # a function of the pair keys: not matched on
            dependent.append(c)
        else:
            match.append(c)
    mcols = [codes[c] for c in match] + ([tidx] if multi else [])
    mid = _row_ids(mcols, n)
    cell = mid * (max(levels) + 1) + level
    uc, cnt = np.unique(cell, return_counts=True)
    if (cnt > 1).any():
        bad = uc[cnt > 1][0]
        twice = np.nonzero(cell == bad)[0][:2]
        raise UsageError("--pair: trials %s are equal in every coordinate matched on (%s) and "
                         "in %s: the pairing is not one to one; pair on more keys" % (
                             " and ".join(str(int(tidx[r])) for r in twice),
                             ", ".join(match) or "none", ", ".join(pair_names)))
    nmid = int(mid.max()) + 1 if n else 0

    def rows_of(lv: int) -> np.ndarray:  # the row of each match id at this level, -1 where none
        out = np.full(nmid, -1, dtype=np.int64)
        at = np.nonzero(level == lv)[0]
        out[mid[at]] = at
        return out
    base = levels[0]
    base_rows = rows_of(base)
    for b in by:
        if b not in match:
            raise UsageError("--by %s: pair groups are sweep coordinates matched on (%s)" %
                             (b, ", ".join(match) or "none"))
    stats_p = []
    seen = set()
    for st in stats:  # one paired analysis per per-trial value
        k = st.name if st.indicator else st.field
        if k not in seen:
            seen.add(k)
            stats_p.append(st)
    idx = {id(st): j for j, st in enumerate(stats)}
    header = ["a", "b"] + by_names + ["pairs", "unpaired"]
    chead = list(header)
    for st in stats_p:
        nm = st.name if st.indicator else st.field
        tt = st.title if st.indicator else st.field
        test = "McNemar p" if st.indicator else "sign test p"
        header += ["%s: a, b mean" % tt, "%s: b - a mean [95%% CI]" % tt] + \
            ([] if st.indicator else ["%s: b - a median [95%% CI]" % tt]) + \
            ["%s: b>a/b<a/=" % tt, "%s: %s" % (tt, test)] + \
            (["%s: pairs not judged on both sides" % tt] if _judged_fraction(rfs[0], st)
             else [])
        chead += ["%s_%s" % (nm, c) for c in fstat.PAIR_COLUMNS]
    rows: List[List[str]] = []
    crows: List[List[str]] = []
    trows: List[List[str]] = []
    unpaired_total = 0
    for lv in levels[1:]:
        other = rows_of(lv)
        both = (base_rows >= 0) & (other >= 0)
        ia, ib = base_rows[both], other[both]
        una = int((level == base).sum()) - len(ia)
        unb = int((level == lv).sum()) - len(ib)
        unpaired_total += una + unb
        if by:
            gcols = [_codes(key[b][ia]) for b in by]
            gid = _row_ids(gcols, len(ia))
        else:
            gid = np.zeros(len(ia), dtype=np.int64)
        for gi in (np.unique(gid) if len(ia) else []):
            sa, sb = ia[gid == gi], ib[gid == gi]
            glab = [fmt_num(key[b][sa[0]]) if key[b].dtype.kind == "f" else str(key[b][sa[0]])
                    for b in by]
            la, lb = level_text[base], level_text[lv]
            row = [la, lb] + glab + [str(len(sa)), str(una + unb) if not by else "-"]
            crow = [la, lb] + glab + [str(len(sa)), str(una + unb) if not by else ""]
            gtex = r"\newline ".join(latex_escape(t) for t in
                                     ["%s $\to$ %s" % (la, lb)] +
                                     ["%s = %s" % nv for nv in zip(by_names, glab)])
            gtex = gtex.replace(r"\$\textbackslash{}to\$", r"$\to$")
            for st in stats_p:
                j = idx[id(st)]
                p = fstat.paired(st, vals[j][sa], vals[j][sb])
                trows.append([gtex, latex_escape(st.title if st.indicator else st.field),
                              str(int(p["pairs"])),
                              r"%s\newline %s" % (g(p["mean_a"], 3), g(p["mean_b"], 3)),
                              "--" if math.isnan(p["diff_mean"]) else
                              r"%s\newline (%s, %s)" % (g(p["diff_mean"], 2),
                                                        g(p["diff_mean_lo"], 2),
                                                        g(p["diff_mean_hi"], 2)),
                              g(p["p"], 2)])
                gtex = ""
                dm = "-" if math.isnan(p["diff_mean"]) else "%s [%s, %s]" % (
                    g(p["diff_mean"], 4), g(p["diff_mean_lo"]), g(p["diff_mean_hi"]))
                row += ["%s, %s" % (g(p["mean_a"], 4), g(p["mean_b"], 4)), dm]
                if not st.indicator:
                    row.append("-" if math.isnan(p["diff_median"]) else "%s [%s, %s]" % (
                        g(p["diff_median"], 4), g(p["diff_median_lo"]),
                        g(p["diff_median_hi"])))
                row += ["%d/%d/%d" % (p["pos"], p["neg"], p["zero"]), g(p["p"], 3)] + \
                    ([str(p["excluded"])] if _judged_fraction(rfs[0], st) else [])
                crow += [fnum(p[c]) for c in fstat.PAIR_COLUMNS]
            rows.append(row)
            crows.append(crow)
    if multi:
        how = "the trial index" + (" and the coordinates %s" % ", ".join(match) if match
                                   else "")
    else:
        how = "the coordinates %s" % ", ".join(match) if match else "nothing (one trial each)"
    notes = ["Pairs: trials matched on %s; a is %s (the first), b each other %s. Left out of "
             "the matching as functions of %s: %s. Differences b - a per pair; mean with its "
             "bootstrap 95%% interval, median with its exact interval, counts b > a / b < a / "
             "equal and the two-sided exact sign test (McNemar's exact test for a fraction: "
             "the mean difference is the difference of the paired proportions). A fraction of "
             "a verdict is tested on the pairs judged on both sides (consistent, violated or "
             "unresolved: the rule); the pairs where a side is not judged (no_prediction, "
             "not_converged, nonfinite, failed) are counted beside (csv FIELD_excluded)." % (
                 how, labels[0] if multi else level_text[base],
                 "file" if multi else "value of " + ", ".join(pair_names),
                 ", ".join(pair_names), ", ".join(dependent) or "none")]
    if unpaired_total:
        notes.append("%d selected trials have no partner and are left out." % unpaired_total)
    # LaTeX: one row per group and quantity (a table of many columns would not fit)
    tex_cols = [(r"pair $a \to b$, group", TEX_TEXT), ("quantity", TEX_TEXT),
                ("pairs", tex_num("2.6em")), (r"mean\newline $a$, $b$", tex_num("3.2em")),
                (r"$b - a$ mean\newline (95\,\% CI)", tex_num("5.4em")),
                ("$p$", tex_num("2.4em"))]
    title = "paired by %s" % ", ".join(pair_names)
    return pre, [Table(title, header, rows, chead, crows, notes, tex_cols, trows)]


def _judged_fraction(rf: Results, st: fstat.Stat) -> bool:
    """Whether a statistic is a fraction of a judged verdict label (the rule decides its
    pairs)."""
    return st.kind == "frac" and st.param[0] == "=" and rf._name(st.field) in VERDICT_FIELDS \
        and st.param[1] in rule.JUDGED


def default_pair_stats(rfs: Sequence[Results],
                       masks: Sequence[np.ndarray]) -> List[fstat.Stat]:
    """--pair without --stat: the default statistics of the sweep, the fraction consistent
    when some trial was judged, and the cluster count."""
    stats = default_stats(rfs, masks)
    judged = False
    for rf, mask in zip(rfs, masks):
        judged |= bool((rule.judge(rf, rf.read(rule.fields(rf))).mask("judged") & mask).any())
    extra = (["verdict:=consistent"] if judged else []) + ["n_clusters:median"]
    return parse_stat_tokens(rfs, extra) + stats



def paired_curves(args: Any) -> Tuple[List[str], List[Table]]:
    """--phase PARAM --pair [KEYS] and --robustness --pair [KEYS]: the curves' trials paired
    on the common axes (KEYS, default the file's common_keys) inside one file, as --pair
    pairs them, with the fraction consistent as the paired statistic (McNemar's exact test):
    per --by group, and per value of PARAM for --phase. --phase judges as phase_verdict
    chooses (--verdict), --robustness near_verdict (or verdict with --verdict exact). Returns
    (preamble lines, [Table])."""
    if len(args.files) > 1 or args.stat or args.table1 or args.series or args.measure or \
            args.png or args.plot is not None:
        raise UsageError("--pair with --phase or --robustness takes one file and no --stat, "
                         "--table1, --series, --measure, --plot or --png")
    if args.phase and args.robustness:
        raise UsageError("--robustness goes without --phase")
    rf = schema.open_results(args.files[0])
    try:
        by = parse_by(args.by) or []
        mask = where_mask(rf, args.where)
        if args.robustness:
            if "near_verdict" not in rf.fields:
                raise UsageError("--robustness needs the field near_verdict, which this file "
                                 "lacks")
            field = rule.family(rule.choose(rf, mask, args.verdict, "near"))[0]
        else:
            if rf._name(args.phase) not in rf.coordinates():
                raise UsageError("--phase %s --pair: pairs are grouped by sweep coordinates, "
                                 "and %s is not one (coordinates: %s)" % (
                                     args.phase, args.phase, ", ".join(rf.coordinates())))
            field = "near_verdict" if phase_verdict(rf, mask, args.verdict) == "near" \
                else "verdict"
            by = [b for b in by if b != args.phase] + [args.phase]
        stats = parse_stat_tokens([rf], ["%s:=consistent" % field])
        pre, tables = pair_tables([rf], parse_by(args.pair) or [], by, args.where, stats)
        pre.append("%s paired on the common axes: the fraction of trials whose %s is "
                   "consistent, b against a%s" % (
                       "--robustness" if args.robustness else "--phase " + args.phase, field,
                       "" if args.robustness else ", at each value of " + args.phase))
        return pre, tables
    finally:
        rf.close()


