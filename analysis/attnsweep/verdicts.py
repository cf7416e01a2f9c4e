"""The verdict statistics of a group of trials and their table (`summarize --by`): counts by
the rule (rule.py), the fractions of the judged trials with Wilson intervals, the unresolved
trials by reason and the horizon that decides them, clusters, rank P, settle and wall time."""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, Sequence

import numpy as np

from . import rule
from .render import (TEX_TEXT, Table, g, latex_escape, num_getter, tex_eq, tex_name, tex_num,
                     tex_p)
from .rule import CLASSIFIED, EXCLUDED, JUDGED, VERDICTS
from .schema import Results
from .stats import group_quantiles, wilson

__all__ = ["JUDGED", "EXCLUDED", "VERDICTS", "CLASSIFIED", "STAT_FIELDS", "UNRESOLVED_REASONS",
           "RANK_RTOL", "compute_stats", "stats_table", "rank_dist_text", "rank_mode",
           "rank_mode_text", "reason_text", "rerun_text", "frac_cell", "mid_cell", "tex_frac",
           "tex_mid", "tex_ranks", "tex_count", "TEX_FRACS", "TEX_SPAN", "other_text"]

#: the fields compute_stats reads (those the file has); the near family beside
STAT_FIELDS = ["verdict", "outcome", "n_clusters", "rank_p", "p_uniform_dist", "settle_time",
               "wall_time", "reason", "t_decide", "n_clusters_all", "n_clusters_track",
               "n_plateaus", "plateau_length"]
#: The reasons an unresolved verdict gives (enums.h AS_REASON_LIST, docs/theory.md 2.2), in the
#: order the tables print them; violated verdicts carry the others.
UNRESOLVED_REASONS = ("moving", "metastable", "merging", "mixing", "precision",
                      "precision_vars_x")
#: rank P counts the singular values of P above this fraction of the largest (AS_CLASSIFY_RANK_RTOL
#: of include/attnsweep/classify.h): a nearly uniform P has a nearly full numerical rank.
RANK_RTOL = 1e-6


def compute_stats(rf: Results, cols: Dict[str, np.ndarray], mask: np.ndarray, gid: np.ndarray,
                  ngroups: int, which: str = "exact") -> Dict[str, Any]:
    """Per-group statistics (dict of arrays of length ngroups) over the rows in mask, with the
    verdict family `which` ("exact": verdict, reason, t_decide; "near": near_verdict,
    near_reason, near_t_decide) judged by the rule (rule.py): the count of each category, the
    fractions of the judged trials, the unresolved ones by reason and their horizon."""
    _, reason_f, horizon_f = rule.family(which)
    jd = rule.judge(rf, cols, which, rows=mask)
    s: Dict[str, Any] = dict(jd.counts(gid, ngroups))
    for v in JUDGED:
        s[v + "_frac"], s[v + "_lo"], s[v + "_hi"] = wilson(s[v], s["judged"])
    classified = jd.mask("judged") | jd.mask("no_prediction")
    # clusters: every cluster at T (n_clusters_all, settled or not) where the file has it, and
    # the settled ones beside; the step-wise count and the plateaus when the sweep tracks them
    for base, field in (("clusters", "n_clusters_all" if "n_clusters_all" in cols
                         else "n_clusters"), ("settled_clusters", "n_clusters"),
                        ("track", "n_clusters_track"), ("plateau", "plateau_length")):
        if field not in cols:
            continue
        nc = cols[field][mask].astype(float)
        nc[~classified | (nc < 0)] = np.nan
        if not np.isfinite(nc).any() and base in ("track", "plateau"):
            continue
        q, _ = group_quantiles(nc, gid, ngroups, [0.5, 0.25, 0.75])
        s[base + "_median"], s[base + "_q1"], s[base + "_q3"] = q[:, 0], q[:, 1], q[:, 2]
    unres = jd.mask("unresolved")
    if reason_f in cols:
        reason = cols[reason_f][mask]
        s["unresolved_by"] = {}
        for r in UNRESOLVED_REASONS:
            if rf.has_code(reason_f, r):
                s["unresolved_by"][r] = np.bincount(
                    gid[unres & (reason == rf.code(reason_f, r))], minlength=ngroups)
    if horizon_f in cols:  # the horizon to rerun at: the largest t_decide of the group
        td = cols[horizon_f][mask].astype(float)
        td[~unres] = np.nan
        q, cnt = group_quantiles(td, gid, ngroups, [1.0])
        s["rerun_T"] = q[:, 0]
        s["rerun_unknown"] = np.bincount(gid[unres], minlength=ngroups) - cnt
    if "rank_p" in cols:
        rp = cols["rank_p"][mask].astype(np.int64)
        ok = classified & (rp >= 1)  # 0: not measured (the fill value)
        top = int(rp[ok].max()) + 1 if ok.any() else 1
        # counts[g, r] = number of classified rows of group g with rank P = r
        s["rank_p_counts"] = np.bincount(gid[ok] * top + rp[ok],
                                         minlength=ngroups * top).reshape(ngroups, top)
        q, _ = group_quantiles(np.where(ok, rp, np.nan).astype(float), gid, ngroups, [0.5])
        s["rank_p_median"] = q[:, 0]
    if "p_uniform_dist" in cols:
        pu = cols["p_uniform_dist"][mask].astype(float)
        pu[~classified] = np.nan
        q, cnt = group_quantiles(pu, gid, ngroups, [0.5, 1.0])
        s["p_uniform_median"], s["p_uniform_max"] = q[:, 0], q[:, 1]
    if "settle_time" in cols:
        st = cols["settle_time"][mask].astype(float)
        st[~classified] = np.nan
        q, cnt = group_quantiles(st, gid, ngroups, [0.5, 0.25, 0.75])
        s["settled"] = cnt
        s["settle_median"], s["settle_q1"], s["settle_q3"] = q[:, 0], q[:, 1], q[:, 2]
    if "wall_time" in cols:
        wt = cols["wall_time"][mask].astype(float)
        wt[~jd.mask("done") | ~np.isfinite(wt)] = np.nan
        q, _ = group_quantiles(wt, gid, ngroups, [0.5])
        s["wall_median"] = q[:, 0]
        s["wall_total"] = np.bincount(gid, weights=np.nan_to_num(wt, nan=0.0),
                                      minlength=ngroups)
    return s


def other_text(s: Dict[str, Any], i: int, tex: bool = False) -> str:
    """The "other" cell: the trials of group i the rule excludes, by category."""
    abbrev = {"no_prediction": "no pred.", "not_converged": "not conv.",
              "nonfinite": "non-finite", "failed": "failed"}
    parts = [(r"%s\ %d" % (abbrev[v], s[v][i])) if tex else "%s %d" % (v, s[v][i])
             for v in EXCLUDED if v in s and s[v][i]]
    return ", ".join(parts) or ("--" if tex else "-")


def rank_dist_text(counts_row: Sequence[int], limit: Any = 5) -> str:
    """The rank-P distribution as "value:count" pairs, in value order: the `limit` most
    frequent values and "+k" for the k rows with other values (limit None: all of them)."""
    nz = [(r, int(c)) for r, c in enumerate(counts_row) if c > 0]
    if not nz:
        return "-"
    nz.sort(key=lambda t: (-t[1], t[0]))
    if limit is None:
        limit = len(nz)
    shown = sorted(nz[:limit])
    text = " ".join("%d:%d" % t for t in shown)
    if len(nz) > limit:
        text += " +%d" % sum(c for _, c in nz[limit:])
    return text


def reason_text(s: Dict[str, Any], i: int) -> str:
    """The unresolved trials of group i by reason: "moving 3, metastable 2" ("-": none)."""
    by = s.get("unresolved_by", {})
    parts = ["%s %d" % (r, by[r][i]) for r in UNRESOLVED_REASONS if r in by and by[r][i]]
    return ", ".join(parts) or "-"


def rerun_text(s: Dict[str, Any], i: int) -> str:
    """The horizon that decides the unresolved trials of group i: "T >= 41.2" (+ how many have
    no estimate), "-" when none is unresolved; "; vars x for 3" when trials of reason
    precision_vars_x are among them (docs/theory.md 2.2: rerun those with vars: x)."""
    if "rerun_T" not in s or s["unresolved"][i] == 0:
        return "-"
    t, unknown = s["rerun_T"][i], int(s["rerun_unknown"][i])
    text = ("T >= %s" % g(t, 4)) if not math.isnan(t) else "none known"
    text += " (%d without)" % unknown if unknown and not math.isnan(t) else ""
    vx = s.get("unresolved_by", {}).get("precision_vars_x")
    return text + ("; vars x for %d" % vx[i] if vx is not None and vx[i] else "")


def frac_cell(s: Dict[str, Any], v: str, i: int) -> str:
    """md cell of a fraction of the judged trials: "0.750 [0.412, 0.928]", "-" for none."""
    if s["judged"][i] == 0:
        return "-"
    return "%.3f [%.3f, %.3f]" % (s[v + "_frac"][i], s[v + "_lo"][i], s[v + "_hi"][i])


def mid_cell(s: Dict[str, Any], base: str, i: int) -> str:
    """md cell of a median with its quartiles, "2 [1, 3]"."""
    if base + "_median" not in s or math.isnan(s[base + "_median"][i]):
        return "-"
    return "%s [%s, %s]" % (g(s[base + "_median"][i]), g(s[base + "_q1"][i]),
                             g(s[base + "_q3"][i]))


def tex_frac(s: Dict[str, Any], v: str, i: int) -> str:
    """LaTeX cell of a fraction over its interval."""
    if s["judged"][i] == 0:
        return "--"
    return r"%s\newline%s--%s" % (tex_p(s[v + "_frac"][i]), tex_p(s[v + "_lo"][i]),
                                 tex_p(s[v + "_hi"][i]))


def tex_mid(s: Dict[str, Any], base: str, i: int) -> str:
    """LaTeX cell of a median over its quartiles."""
    if base + "_median" not in s or math.isnan(s[base + "_median"][i]):
        return "--"
    # two significant digits: the quartiles of counts interpolate (4.25), and the cell must
    # stay within its column
    return r"%s\newline%s--%s" % (g(s[base + "_median"][i], 2), g(s[base + "_q1"][i], 2),
                                 g(s[base + "_q3"][i], 2))


def rank_mode(counts_row: Sequence[int]) -> Any:
    """The rank-P distribution as a reader reads it: (modal rank, its share of the trials,
    smallest, largest rank), the smallest mode on a tie; None without a measured rank."""
    c = np.asarray(counts_row, dtype=np.int64)
    c = c.copy()
    if len(c):
        c[0] = 0  # rank 0: the fill value (not measured)
    tot = int(c.sum())
    if tot == 0:
        return None
    nz = np.nonzero(c)[0]
    mode = int(np.argmax(c))
    return mode, float(c[mode]) / tot, int(nz.min()), int(nz.max())


def rank_mode_text(counts_row: Sequence[int]) -> str:
    """md cell of rank P: "2 (83%) [2, 4]" (mode, its share, range); "2 (100%)" when one."""
    m = rank_mode(counts_row)
    if m is None:
        return "-"
    mode, share, lo, hi = m
    t = "%d (%.0f%%)" % (mode, 100 * share)
    return t if lo == hi else t + " [%d, %d]" % (lo, hi)


def tex_ranks(s: Dict[str, Any], i: int) -> str:
    """LaTeX cell of rank P: its mode and share over the range."""
    if "rank_p_counts" not in s:
        return "--"
    m = rank_mode(s["rank_p_counts"][i])
    if m is None:
        return "--"
    mode, share, lo, hi = m
    t = r"%d\,(%s)" % (mode, tex_p(share))
    return t if lo == hi else t + r"\newline%d--%d" % (lo, hi)


def tex_count(s: Dict[str, Any], i: int) -> str:
    """LaTeX cell of the trials of a group (done/all when some are pending)."""
    done, n = int(s["done"][i]), int(s["n"][i])
    return str(n) if done == n else r"%d/\allowbreak{}%d" % (done, n)

#: The measured columns shared by Table 1 and the --by tables: (header, column type, cell).
TEX_ABBREV = {"consistent": "cons.", "violated": "viol.", "unresolved": "unres."}
TEX_FRACS = [(TEX_ABBREV[v], tex_num("3.5em"), lambda s, i, v=v: tex_frac(s, v, i))
              for v in JUDGED]
#: the header over the fraction columns
TEX_SPAN = r"fraction (95\,\% CI)"
#: rank-P values shown in LaTeX (the most frequent; the csv has all)
TEX_RANKS = 3
def stats_table(title: str, key_names: Sequence[str], key_labels: Sequence[Sequence[str]],
                s: Dict[str, Any], notes: Iterable[str] = (), settle: bool = True) -> Table:
    """The table of --by groups. settle: show the settle-time column (md, LaTeX; the csv
    columns are always there)."""
    track = "track_median" in s
    header = list(key_names) + ["trials", "done", "consistent [95% CI]", "violated [95% CI]",
                                "unresolved [95% CI]", "unresolved by reason", "rerun at",
                                "other", "clusters med [IQR]", "settled clusters med [IQR]"] + \
        (["tracked clusters med [IQR]", "plateau length med [IQR]"] if track else []) + \
        ["rank P mode (share) [range]"] + \
        (["settle time med [IQR]"] if settle else []) + ["wall s total", "wall s med"]
    csv_header = list(key_names) + ["trials", "done", "pending"] + list(VERDICTS) + \
        ["not_converged", "judged"] + ["%s_%s" % (v, x) for v in JUDGED for x in ("frac", "lo", "hi")] + \
        ["clusters_median", "clusters_q1", "clusters_q3", "rank_p_median", "rank_p_dist",
         "settled", "settle_median", "settle_q1", "settle_q3", "wall_total", "wall_median"] + \
        ["unresolved_%s" % r for r in UNRESOLVED_REASONS] + \
        ["rerun_T", "settled_clusters_median", "settled_clusters_q1", "settled_clusters_q3",
         "track_median", "plateau_median"]
    # one text column for the group: its key, or "key = value" lines for several keys
    tex_cols = ([(tex_name(key_names[0]) if len(key_names) == 1 else "group",
                  TEX_TEXT)] if key_names else []) + \
        [("trials", tex_num("2.4em"))] + [(h, c) for h, c, _ in TEX_FRACS] + \
        [("other", r">{\raggedright\arraybackslash}p{4.2em}"),
         (r"clusters\newline med.\ (IQR)", tex_num("3.5em")),
         (r"rank $P$:\newline mode", tex_num("3.4em"))] + \
        ([(r"settle time\newline med.\ (IQR),\newline $n$ settled", tex_num("4.1em"))]
         if settle else [])
    rows, crows, trows = [], [], []
    for i, keys in enumerate(key_labels):
        rdist = rank_mode_text(s["rank_p_counts"][i]) if "rank_p_counts" in s else "-"
        rfull = rank_dist_text(s["rank_p_counts"][i], None) if "rank_p_counts" in s else "-"
        settle_txt = mid_cell(s, "settle", i)
        if "settled" in s and s["done"][i]:
            settle_txt += " (%d settled)" % s["settled"][i]
        rows.append(list(keys) + [
            str(s["n"][i]), str(s["done"][i]), frac_cell(s, "consistent", i),
            frac_cell(s, "violated", i), frac_cell(s, "unresolved", i),
            reason_text(s, i), rerun_text(s, i),
            other_text(s, i), mid_cell(s, "clusters", i),
            mid_cell(s, "settled_clusters", i)] +
            ([mid_cell(s, "track", i), mid_cell(s, "plateau", i)] if track else []) +
            [rdist] +
            ([settle_txt] if settle else []) + [
            g(s["wall_total"][i], 4) if "wall_total" in s else "-",
            g(s["wall_median"][i]) if "wall_median" in s else "-"])
        tsettle = tex_mid(s, "settle", i)
        if "settled" in s and s["done"][i]:
            tsettle += r"\newline$n = %d$" % s["settled"][i]
        if len(keys) == 1:
            tkeys = [latex_escape(keys[0])]
        else:
            tkeys = [r"\newline ".join(tex_eq(n, k) for n, k in zip(key_names, keys))] \
                if keys else []
        trows.append(tkeys + [tex_count(s, i)] +
                     [f(s, i) for _, _, f in TEX_FRACS] +
                     [other_text(s, i, tex=True), tex_mid(s, "clusters", i),
                      tex_ranks(s, i)] + ([tsettle] if settle else []))
        num = num_getter(s, i)
        crow = list(keys) + [num("n"), num("done"), num("pending")] + \
            [num(v) for v in VERDICTS] + [num("not_converged"), num("judged")] + \
            [num("%s_%s" % (v, x)) for v in JUDGED for x in ("frac", "lo", "hi")] + \
            [num("clusters_median"), num("clusters_q1"), num("clusters_q3"),
             num("rank_p_median"),
             rfull.replace(" ", ";") if rfull != "-" else "", num("settled"),
             num("settle_median"), num("settle_q1"), num("settle_q3"), num("wall_total"),
             num("wall_median")] + \
            [str(int(s["unresolved_by"][r][i])) if r in s.get("unresolved_by", {}) else ""
             for r in UNRESOLVED_REASONS] + \
            [num("rerun_T"), num("settled_clusters_median"), num("settled_clusters_q1"),
             num("settled_clusters_q3"), num("track_median"),
             num("plateau_median")]
        crows.append(crow)
    first = min(len(key_names), 1) + 1
    other = first + len(JUDGED)  # column mode: "other" and the settle time left out
    return Table(title, header, rows, csv_header, crows, notes, tex_cols, trows,
                 (first, first + len(JUDGED) - 1, TEX_SPAN),
                 tex_wide=[other] + ([len(tex_cols) - 1] if settle else []))


