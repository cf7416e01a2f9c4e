"""Table 1 of the paper (docs/theory.md section 2) with the measured columns beside it: per
theorem the trials whose hypotheses hold and the near misses (nearest theorem the row's,
judged by near_verdict), both counted by the rule (rule.py)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .groups import Axis, make_groups
from .render import TEX_TEXT, Table, g, latex_escape, num_getter, tex_eq, tex_num
from .rule import EXCLUDED, JUDGED
from .schema import Results
from .stats import group_quantiles
from .verdicts import (RANK_RTOL, TEX_FRACS, TEX_SPAN, compute_stats, frac_cell, mid_cell,
                       rank_dist_text, rank_mode_text, tex_count, tex_mid, tex_ranks)

def table1_rows(rf: Results) -> Tuple[List[Tuple[str, str, str, str, str]],
                                      Dict[str, Tuple[str, str, str]]]:
    """The paper's Table 1 as the file states it (/trials attribute theorem_table, written from
    the C theorem table, docs/theory.md section 2): ([(label, V, QtK, prediction, reference)],
    {label: (LaTeX name, LaTeX hypotheses, LaTeX prediction)}) in precedence order. A file
    written before the attribute existed gives no rows: its theorems are then listed with "?"
    texts."""
    if rf.theorem_table is None:
        return [], {}
    rows = [(r["label"], r["hyp_v"], r["hyp_m"], r["prediction"], r["reference"])
            for r in rf.theorem_table]
    tex = {r["label"]: (r["tex_name"], r["tex_hyp"], r["tex_pred"]) for r in rf.theorem_table}
    return rows, tex


def hypotheses(rf: Results) -> List[Tuple[str, Tuple[str, ...]]]:
    """The hypothesis distances of the file and the proved theorems whose hypothesis each
    measures, [(field, (theorem, ...))], from the file's own near_hypotheses (the table
    AS_NEAR_THEOREMS of include/attnsweep/classify.h): first near_dist, the distance of a trial
    to its nearest theorem, for every theorem; then each dist_ field in the order the theorems
    first name it. [] for a file written without it."""
    table = rf.near_hypotheses or []
    out = [("near_dist", tuple(t for t, _ in table))] if table else []
    for field in dict.fromkeys(f for _, fs in table for f in fs):
        out.append((field, tuple(t for t, fs in table if field in fs)))
    return out


def proved_theorems(rf: Results) -> Tuple[str, ...]:
    """The theorems the nearest-theorem analysis of the file reads (precedence order)."""
    return tuple(t for t, _ in rf.near_hypotheses or [])


def near_miss_stats(rf: Results, cols: Dict[str, np.ndarray], mask: np.ndarray,
                    outer: Sequence[Any]) -> Dict[Tuple[str, ...], Tuple[Dict[str, Any], int]]:
    """Table 1's near misses: per combination of the outer (--by) axes and proved theorem T,
    the trials whose nearest theorem is T although T's hypotheses do not hold (near_theorem = T,
    theorem != T), counted by near_verdict, with the median of near_dist. Returns {(outer
    labels..., T): (stats, index)}."""
    near, th = cols["near_theorem"], cols["theorem"]
    sel = mask & (near != th) & np.isin(near, [rf.code("near_theorem", t)
                                               for t in proved_theorems(rf)
                                               if rf.has_code("near_theorem", t)])
    axes = list(outer) + [Axis(rf, "near_theorem", near)]
    gid, keys = make_groups(axes, sel)
    st = compute_stats(rf, cols, sel, gid, len(keys), which="near")
    q, _ = group_quantiles(cols["near_dist"][sel].astype(float), gid, len(keys), [0.5])
    st["near_dist_median"] = q[:, 0]
    return {tuple(ax.labels[k[j]] for j, ax in enumerate(axes)): (st, i)
            for i, k in enumerate(keys)}


def _near_cell(near: Optional[Dict[Tuple[str, ...], Tuple[Dict[str, Any], int]]],
               key: Tuple[str, ...]) -> str:
    if near is None:
        return "-"
    if key not in near:
        return "0"
    st, i = near[key]
    return "%d: %s, dist med %s" % (st["n"][i], frac_cell(st, "consistent", i),
                                    g(st["near_dist_median"][i], 2))


def table1_tables(axes: Sequence[Any], key_labels: Sequence[Tuple[str, ...]], s: Dict[str, Any],
                  notes: List[str], theorems: Tuple[Any, Any],
                  near: Optional[Dict[Tuple[str, ...], Tuple[Dict[str, Any], int]]] = None,
                  proved: Sequence[str] = (), drop_empty: bool = False) -> List[Table]:
    """Table 1 of the paper with the measured columns, one table per combination of the
    outer axes (the --by axes; the last axis is the theorem); proved: the theorems that can
    have near misses."""
    outer = [a.name for a in axes[:-1]]
    groups: Dict[Tuple[str, ...], Dict[str, int]] = {}
    for j, k in enumerate(key_labels):
        groups.setdefault(k[:-1], {})[k[-1]] = j
    if not groups:
        groups = {(): {}}
    header = ["theorem", "V", "condition on Q^T K", "predicted geometry", "reference",
              "trials", "done", "consistent [95% CI]", "violated [95% CI]",
              "unresolved [95% CI]", "clusters med [IQR]",
              "rank P mode (share) [range]; V = -I: max dist of P to J/n, med (max)",
              "hypotheses hold", "near miss: trials: consistent [95% CI], near_dist"]
    notes = notes + ["rank P: singular values of the final P above %g sigma_1; for V = -I "
                     "(prediction P -> J/n) the column shows max_ij |P_ij - 1/n| instead: "
                     "the median and the largest over the classified trials." % RANK_RTOL,
                     "hypotheses hold: the trials whose theorem is the row's (its hypotheses "
                     "hold). near miss: the trials whose nearest theorem is the row's although "
                     "its hypotheses do not hold (near_theorem, docs/results.md), judged by "
                     "near_verdict, with the median of their distance near_dist; only proved "
                     "theorems have near misses."]
    csv_header = outer + ["theorem", "V", "condition_QtK", "predicted", "reference", "trials",
                          "done", "judged"] + \
        ["%s_%s" % (v, x) for v in JUDGED for x in ("frac", "lo", "hi")] + \
        ["clusters_median", "clusters_q1", "clusters_q3", "rank_p_dist",
         "p_uniform_dist_median", "p_uniform_dist_max", "hypotheses_hold", "near_miss_trials",
         "near_miss_judged", "near_miss_consistent", "near_miss_consistent_frac",
         "near_miss_consistent_lo", "near_miss_consistent_hi", "near_miss_dist_median"] + \
        list(EXCLUDED) + ["near_miss_excluded"]
    tex_cols = [("case: hypotheses", TEX_TEXT),
                ("prediction", TEX_TEXT), ("trials", tex_num("2.4em"))] + \
        [(h, c) for h, c, _ in TEX_FRACS] + \
        [(r"clusters\newline med.\ (IQR)", tex_num("3.5em")),
         (r"rank $P$:\newline mode", tex_num("3.4em"))]
    table1, table1_tex = theorems
    known = [t[0] for t in table1]
    tables = []
    for ok, pos in groups.items():
        extra = [(k, "?", "?", "?", "?") for k in pos if k not in known]
        rows, crows, trows = [], [], []
        for label, v, m, geom, ref in table1 + extra:
            name, hyp, pred = table1_tex.get(label, (latex_escape(label), "?", "?"))
            hyp = r"\textbf{%s}\newline %s" % (name, hyp)
            i = pos.get(label)
            is_proved = label in proved
            ncell = _near_cell(near, tuple(ok) + (label,)) if is_proved else "-"
            nst = near.get(tuple(ok) + (label,)) if (near and is_proved) else None
            if nst:
                nnum = num_getter(*nst)
                ncsv = [nnum("n"), nnum("judged"), nnum("consistent"),
                        nnum("consistent_frac"), nnum("consistent_lo"), nnum("consistent_hi"),
                        nnum("near_dist_median")]
                nexcl = nnum("excluded")
            else:
                ncsv = ["0" if (near is not None and is_proved) else ""] + [""] * 6
                nexcl = ncsv[0]
            if i is None and drop_empty and not nst:
                continue  # --drop-empty: no trial has the row's theorem, none is a near miss
            if i is None:
                rows.append([label, v, m, geom, ref, "0", "0", "-", "-", "-", "-", "-", "0",
                             ncell])
                crows.append(list(ok) + [label, v, m, geom, ref, "0", "0", "0"] +
                             [""] * (len(csv_header) - len(ok) - 8 - 8 - len(EXCLUDED) - 1) +
                             ["0"] + ncsv + ["0"] * len(EXCLUDED) + [nexcl])
                trows.append([hyp, pred, "0"] + ["--"] * 5)
                continue
            rd = rank_mode_text(s["rank_p_counts"][i]) if "rank_p_counts" in s else "-"
            rfull = rank_dist_text(s["rank_p_counts"][i], None) if "rank_p_counts" in s \
                else "-"
            uniform = label == "minus_identity" and "p_uniform_median" in s and \
                not math.isnan(s["p_uniform_median"][i])
            if uniform:  # the observable of Thm C.5 is the distance to J/n, not rank P
                rd = "dist to J/n %s (%s)" % (g(s["p_uniform_median"][i], 2),
                                           g(s["p_uniform_max"][i], 2))
            rows.append([label, v, m, geom, ref, str(s["n"][i]), str(s["done"][i]),
                         frac_cell(s, "consistent", i), frac_cell(s, "violated", i),
                         frac_cell(s, "unresolved", i), mid_cell(s, "clusters", i), rd,
                         str(s["n"][i]), ncell])
            num = num_getter(s, i)
            crows.append(list(ok) + [label, v, m, geom, ref, num("n"), num("done"),
                                     num("judged")] +
                         [num("%s_%s" % (vv, x)) for vv in JUDGED
                          for x in ("frac", "lo", "hi")] +
                         [num("clusters_median"), num("clusters_q1"), num("clusters_q3"),
                          rfull.replace(" ", ";") if rfull != "-" else "",
                          num("p_uniform_median"), num("p_uniform_max"), num("n")] + ncsv +
                         [num(x) for x in EXCLUDED] + [nexcl])
            trows.append([hyp, pred, tex_count(s, i)] +
                         [f(s, i) for _, _, f in TEX_FRACS] +
                         [tex_mid(s, "clusters", i),
                          r"to $J/n$:\newline %s" % g(
                              s["p_uniform_median"][i], 2) if uniform else tex_ranks(s, i)])
        title = "Table 1 of the paper with the measured verdicts"
        if ok:
            title += " (%s)" % ", ".join("%s = %s" % nv for nv in zip(outer, ok))
        heading = ", ".join(tex_eq(n, v) for n, v in zip(outer, ok)) or None
        tables.append(Table(title, header, rows, csv_header, crows, notes, tex_cols, trows,
                            (3, 2 + len(JUDGED), TEX_SPAN), heading, tex_merge=(0, 1)))
    return tables


