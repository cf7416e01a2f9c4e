#!/usr/bin/python3
"""attnsweep summarize: summary tables (and figures) from an attnsweep results file.

usage: attnsweep summarize OUT.h5 [--by AXIS[,AXIS...]] [--where EXPR]
                           [--format md|csv|latex|netcdf|parquet]
                           [--width column|page] [--table1 [--drop-empty]]
                           [--phase PARAM [--verdict near|exact] [--bins N] [--png FILE]]
                           [--robustness [--bins N] [--png FILE]] [--measure]
                           [--series OBS[,OBS...] [--png FILE]]
                           [--plot TRIAL --png FILE] [-o FILE]
       attnsweep summarize OUT.h5 [OUT2.h5 ...] [--stat FIELD[:STAT,...] ...] [--by ...]
       attnsweep summarize OUT.h5 --pair KEY[,KEY...] [--stat ...] [--by ...]   (one file)
       attnsweep summarize OUT.h5 --phase PARAM|--robustness --pair [KEY,...] [--by ...]
       attnsweep summarize A.h5 B.h5 ... --pair [--stat ...] [--by ...]      (file by file)

Reads the file through schema.py only (docs/analysis.md describes every column). Runs with
Debian's /usr/bin/python3 (python3-numpy, python3-h5py; python3-matplotlib for figures;
python3-scipy for the bootstrap intervals of means). Without --format, -o FILE's extension
(.csv, .tex, .md; .nc and .parquet: the csv's table as netCDF or Parquet) chooses the format.
Exit codes: 0 done; 2 bad arguments, an unknown field or label, or not a results file; 3 the
file cannot be read, an output (-o, --png) cannot be written, a needed Python module is
missing, or an internal error (ATTNSWEEP_DEBUG=1 shows its traceback); 130 interrupted. Every
failure is one line on stderr.
"""

import argparse
import ast
import io
import math
import os
import re
import sys
import textwrap

try:
    import numpy as np
except ImportError:
    sys.stderr.write("attnsweep summarize: Python module numpy is missing: apt-get install "
                     "python3-numpy python3-h5py (and run with /usr/bin/python3)\n")
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402
import attnsweep_stat as fstat  # noqa: E402

#: two-sided 95% normal quantile, Phi^{-1}(0.975)
Z95 = 1.959963984540054

#: verdict labels counted in every table, in this order
VERDICTS = ("consistent", "violated", "unresolved", "no_prediction", "nonfinite", "failed")
#: verdicts that are a judgement of an end state: the denominator of the fractions
JUDGED = ("consistent", "violated", "unresolved")
#: verdicts whose end state was classified (cluster counts, rank P are read on these rows)
CLASSIFIED = ("consistent", "violated", "unresolved", "no_prediction")

def table1_rows(rf):
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


def hypotheses(rf):
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


def proved_theorems(rf):
    """The theorems the nearest-theorem analysis of the file reads (precedence order)."""
    return tuple(t for t, _ in rf.near_hypotheses or [])


class UsageError(Exception):
    """Bad arguments (exit 2)."""


# ---------------------------------------------------------------- statistics
def wilson(k, n, z=Z95):
    """Wilson score interval for k successes in n trials (vectorised): (p, lo, hi); NaN where
    n = 0. Always 0 <= lo <= p <= hi <= 1: at k = 0 or k = n the bound that equals p in exact
    arithmetic can land one ulp on the wrong side of it (80/80 gives hi = 1 - 2^-53), so the
    bounds are clamped to p as well as to [0, 1]."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        z2 = z * z
        den = 1.0 + z2 / n
        center = (p + z2 / (2 * n)) / den
        half = z / den * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        lo = np.clip(np.minimum(center - half, p), 0.0, 1.0)
        hi = np.clip(np.maximum(center + half, p), 0.0, 1.0)
    bad = n <= 0
    for a in (p, lo, hi):
        a[bad] = np.nan
    return p, lo, hi


def group_quantiles(values, gid, ngroups, qs):
    """Quantiles (linear interpolation between order statistics, Hyndman-Fan type 7, numpy's
    default) of `values` within each group. values: float array (NaN = excluded); gid: group
    of each value. Returns (ngroups, len(qs)) array (NaN for empty groups) and the counts."""
    ok = ~np.isnan(values)
    v = values[ok]
    g = gid[ok]
    order = np.lexsort((v, g))
    vs = v[order]
    counts = np.bincount(g, minlength=ngroups)
    starts = np.cumsum(counts) - counts
    out = np.full((ngroups, len(qs)), np.nan)
    has = counts > 0
    for j, q in enumerate(qs):
        pos = starts[has] + q * (counts[has] - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, starts[has] + counts[has] - 1)
        frac = pos - lo
        out[has, j] = vs[lo] + (vs[hi] - vs[lo]) * frac
    return out, counts


# ---------------------------------------------------------------- --where
class _Where:
    """A safe evaluator of filter expressions over columns: comparisons, and/or/not, + - * /,
    `in (...)`, isnan/isfinite/abs. Enum fields compare against their labels as strings."""

    FUNCS = {"isnan": np.isnan, "isfinite": np.isfinite, "abs": np.abs, "log10": np.log10}

    def __init__(self, rf, expr):
        self.rf = rf
        self.expr = expr
        try:
            self.tree = ast.parse(expr.strip(), mode="eval")
        except SyntaxError as e:
            raise UsageError("--where: cannot parse '%s': %s" % (expr, e.msg))
        called = {id(n.func) for n in ast.walk(self.tree) if isinstance(n, ast.Call)}
        names = sorted({n.id for n in ast.walk(self.tree)
                        if isinstance(n, ast.Name) and id(n) not in called} -
                       {"nan", "inf", "True", "False"})
        for nm in names:
            try:
                rf.field_kind(nm)
            except schema.SchemaError as e:
                raise UsageError("--where: %s" % e)
        self.cols = rf.read(names)

    def fail(self, node, what):
        raise UsageError("--where: %s in '%s'" % (what, ast.unparse(node)))

    def run(self):
        r = self.ev(self.tree.body)
        r = np.asarray(r)
        if r.dtype != bool:
            raise UsageError("--where: '%s' is not a condition" % self.expr)
        if r.shape == ():
            r = np.full(self.rf.n_rows, bool(r))
        return r

    def enum_field(self, node):
        if isinstance(node, ast.Name) and self.rf.is_enum(node.id):
            return node.id
        return None

    def operand(self, node, enum):
        """Evaluate a comparison operand; strings become codes of `enum` (the other side)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if enum is None:
                self.fail(node, "a string compares only with an enumeration field")
            try:
                return self.rf.code(enum, node.value)
            except schema.SchemaError as e:
                raise UsageError("--where: %s" % e)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return np.array([self.operand(e, enum) for e in node.elts])
        return self.ev(node)

    def ev(self, node):
        if isinstance(node, ast.BoolOp):
            vals = [np.asarray(self.ev(v), dtype=bool) for v in node.values]
            r = vals[0]
            for v in vals[1:]:
                r = (r & v) if isinstance(node.op, ast.And) else (r | v)
            return r
        if isinstance(node, ast.UnaryOp):
            v = self.ev(node.operand)
            if isinstance(node.op, ast.Not):
                return ~np.asarray(v, dtype=bool)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Invert):
                return ~v
        if isinstance(node, ast.Compare):
            result = None
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                enum = self.enum_field(left) or self.enum_field(right)
                a = self.operand(left, enum)
                b = self.operand(right, enum)
                if isinstance(op, (ast.In, ast.NotIn)):
                    if np.ndim(b) != 1:
                        self.fail(node, "'in' needs a list like (1, 2)")
                    r = np.isin(a, b)
                    if isinstance(op, ast.NotIn):
                        r = ~r
                else:
                    fn = {ast.Eq: np.equal, ast.NotEq: np.not_equal, ast.Lt: np.less,
                          ast.LtE: np.less_equal, ast.Gt: np.greater,
                          ast.GtE: np.greater_equal}.get(type(op))
                    if fn is None:
                        self.fail(node, "unsupported comparison")
                    r = fn(a, b)
                result = r if result is None else (result & r)
                left = right
            return result
        if isinstance(node, ast.BinOp):
            a, b = self.ev(node.left), self.ev(node.right)
            ops = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                   ast.Div: np.true_divide, ast.Mod: np.mod, ast.Pow: np.power,
                   ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or}
            fn = ops.get(type(node.op))
            if fn is None:
                self.fail(node, "unsupported operator")
            with np.errstate(all="ignore"):
                return fn(a, b)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in self.FUNCS \
                    or len(node.args) != 1 or node.keywords:
                self.fail(node, "only isnan(x), isfinite(x), abs(x), log10(x) may be called")
            with np.errstate(all="ignore"):
                return self.FUNCS[node.func.id](self.ev(node.args[0]))
        if isinstance(node, ast.Name):
            if node.id in self.cols:
                return self.cols[node.id]
            return {"nan": np.nan, "inf": np.inf, "True": True, "False": False}[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.fail(node, "a string compares only with an enumeration field")
        self.fail(node, "unsupported expression")


def not_converged_mask(rf):
    """Rows whose outcome is not_converged: Sinkhorn attention that missed sinkhorn_tol at some
    evaluation (docs/variants.md). No table or statistic counts them; completeness() says how
    many were left out."""
    if "outcome" not in rf.fields or not rf.has_code("outcome", "not_converged"):
        return np.zeros(rf.n_rows, dtype=bool)
    return np.asarray(rf.read(["outcome"])["outcome"]) == rf.code("outcome", "not_converged")


def where_mask(rf, expr):
    """The rows a table selects: those of --where, less the not_converged trials."""
    keep = ~not_converged_mask(rf)
    if not expr:
        return keep
    return _Where(rf, expr).run() & keep


# ---------------------------------------------------------------- grouping
def _fmt_num(v):
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "n/a"
        return "%g" % v
    return str(v)


class Axis:
    """One grouping axis: codes per row, and the label of each code."""

    def __init__(self, rf, name, col, bins=None):
        self.name = name
        kind = rf.field_kind(name)
        if kind == "bytes":
            raise UsageError("--by: '%s' is text, not an axis" % name)
        self.kind = kind
        self.centers = None
        if kind == "float":
            col = col.astype(float)
            nan = np.isnan(col)
            finite = col[~nan]
            uniq = np.unique(finite)
            if bins and len(uniq) > bins:
                edges = np.unique(np.quantile(finite, np.linspace(0, 1, bins + 1)))
                idx = np.clip(np.searchsorted(edges, col, side="right") - 1, 0, len(edges) - 2)
                self.labels = ["[%s, %s%s" % (_fmt_num(edges[i]), _fmt_num(edges[i + 1]),
                                               "]" if i == len(edges) - 2 else ")")
                               for i in range(len(edges) - 1)]
                codes = idx.astype(np.int64)
                # x of each bin: the median of the values in it
                meds, _ = group_quantiles(np.where(nan, np.nan, col), codes, len(self.labels),
                                          [0.5])
                self.values = list(meds[:, 0])
            else:
                codes = np.searchsorted(uniq, col).astype(np.int64)
                self.labels = [_fmt_num(u) for u in uniq]
                self.values = list(uniq)
            if nan.any():
                codes[nan] = len(self.labels)
                self.labels.append("n/a")
                self.values.append(np.nan)
            self.codes = codes
        elif kind == "flag":
            self.codes = col.astype(np.int64)
            self.labels = ["no", "yes"]
            self.values = [0, 1]
        else:
            uniq, inv = np.unique(col, return_inverse=True)
            self.codes = inv.astype(np.int64)
            if kind == "enum":
                self.labels = [rf.label(name, u) for u in uniq]
            elif name in schema.BOOL_FIELDS:  # true/false keys: 1, 0, -1 not applicable
                self.labels = [{1: "true", 0: "false"}.get(int(u), "-") for u in uniq]
            else:  # -1 in a sweep coordinate: not applicable
                na = name in rf.coordinates()
                self.labels = ["-" if na and u == -1 else str(int(u)) for u in uniq]
            self.values = [int(u) for u in uniq]


class DistanceAxis:
    """A hypothesis distance as an axis (--robustness): values equal to 10 significant digits
    are one point; with more than `bins` points the values < 0 (the hypothesis holds), == 0 (on
    it or on its boundary) and > 0 (missed) are binned separately, each side in quantile bins
    (at least one, together about `bins`), so no bin mixes inside and outside. x of a bin: the
    median of its values. NaN rows: the last label, n/a."""

    def __init__(self, name, col, bins):
        self.name, self.kind, self.centers = name, "float", None
        col = np.asarray(col, dtype=float)
        nan = np.isnan(col)
        r = np.where(nan, np.nan, np.array([float("%.10g" % v) if not math.isnan(v) else v
                                            for v in col]))
        uniq = np.unique(r[~nan])
        codes = np.zeros(len(col), dtype=np.int64)
        self.labels, self.values = [], []
        self.bounds = []  # (lo, hi) of each point, exact: a bin [lo, hi), the last [lo, hi]
        if len(uniq) <= bins:
            codes[~nan] = np.searchsorted(uniq, r[~nan])
            self.labels = [_fmt_num(u) for u in uniq]
            self.values = list(uniq)
            self.bounds = [(u, u) for u in uniq]
        else:
            fin = r[~nan]
            parts = [(fin < 0, r < 0), (fin == 0, r == 0), (fin > 0, r > 0)]
            for sel_fin, sel_all in parts:
                sel_all = sel_all & ~nan
                v = fin[sel_fin]
                if not len(v):
                    continue
                u = np.unique(v)
                nb = 1 if len(u) == 1 else max(1, int(round(bins * len(v) / len(fin))))
                if len(u) <= nb:
                    edges = None
                    idx = np.searchsorted(u, r[sel_all])
                    labs = [_fmt_num(x) for x in u]
                    meds = list(u)
                    bnds = [(x, x) for x in u]
                else:
                    edges = np.unique(np.quantile(v, np.linspace(0, 1, nb + 1)))
                    idx = np.clip(np.searchsorted(edges, r[sel_all], side="right") - 1, 0,
                                  len(edges) - 2)
                    labs = ["[%s, %s%s" % (_fmt_num(edges[i]), _fmt_num(edges[i + 1]),
                                           "]" if i == len(edges) - 2 else ")")
                            for i in range(len(edges) - 1)]
                    m, _ = group_quantiles(r[sel_all], idx.astype(np.int64), len(labs), [0.5])
                    meds = list(m[:, 0])
                    bnds = [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
                codes[sel_all] = len(self.labels) + idx
                self.labels += labs
                self.values += meds
                self.bounds += bnds
        if nan.any():
            codes[nan] = len(self.labels)
            self.labels.append("n/a")
            self.values.append(np.nan)
            self.bounds.append((np.nan, np.nan))
        self.codes = codes


def join_baselines(rf, axes, which, mask):
    """The baseline of a perturbation belongs to every curve it is the baseline of: a trial at
    eps = 0 records the keys that say what eps perturbs (`perturb`) as not applicable (`-`),
    and for each axis among `which` (indices into axes) such trials are counted once in each
    of the axis' other values instead of a `-` group of their own (--phase, --robustness).
    Returns (rows: the selected row indices, a baseline row repeated once per curve, the axes
    re-coded over those rows, {axis name: baseline trials joined}). Axes without `-` rows at
    eps = 0, or without another value, are left as they are."""
    rows = np.nonzero(mask)[0]
    codes = [np.asarray(a.codes)[rows] for a in axes]
    joined = {}
    if "eps" not in rf.fields or not len(rows):
        return rows, axes, joined
    eps_all = rf.read(["eps"])["eps"].astype(float)
    for j in which:
        eps0 = eps_all[rows] == 0
        a = axes[j]
        na = [c for c, lab in enumerate(a.labels) if lab in ("-", "n/a")]
        base = np.isin(codes[j], na) & eps0
        others = [int(c) for c in np.unique(codes[j][~np.isin(codes[j], na)])]
        if not base.any() or not others:
            continue
        keep = ~base
        parts_r = [rows[keep]] + [rows[base]] * len(others)
        parts_c = [[c[keep]] + [np.full(int(base.sum()), o, dtype=np.int64) if k == j
                                else c[base] for o in others]
                   for k, c in enumerate(codes)]
        rows = np.concatenate(parts_r)
        codes = [np.concatenate(pc) for pc in parts_c]
        joined[a.name] = int(base.sum())
    out = []
    for a, c in zip(axes, codes):
        b = object.__new__(type(a))
        b.__dict__.update(a.__dict__)
        b.codes = c
        out.append(b)
    return rows, out, joined


def baseline_note(joined):
    return ["baseline: the %s trials at eps = 0 (%s not applicable, `-`) are counted in every "
            "curve of that axis, as its eps = 0 point" % (
                " and ".join("%d" % n for n in joined.values()), ", ".join(joined))]


def make_groups(axes, mask):
    """Combine axes into groups over the rows in mask. Returns (gid per selected row, keys: list
    of tuples of axis code indices, in lexicographic order of the axes)."""
    n = int(mask.sum())
    if not axes:
        return np.zeros(n, dtype=np.int64), [()]
    dims = [len(a.labels) for a in axes]
    combo = np.ravel_multi_index([a.codes[mask] for a in axes], dims)
    uniq, gid = np.unique(combo, return_inverse=True)
    keys = list(zip(*np.unravel_index(uniq, dims))) if len(uniq) else []
    return gid.astype(np.int64), [tuple(int(i) for i in k) for k in keys]


# ---------------------------------------------------------------- the statistics table
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


def compute_stats(rf, cols, mask, gid, ngroups):
    """Per-group statistics (dict of arrays of length ngroups) over the rows in mask."""
    verdict = cols["verdict"][mask]
    s = {"n": np.bincount(gid, minlength=ngroups)}
    codes = {}
    for v in ("pending",) + VERDICTS:
        codes[v] = rf.code("verdict", v) if rf.has_code("verdict", v) else None
        if codes[v] is None:
            s[v] = np.zeros(ngroups, dtype=np.int64)
        else:
            s[v] = np.bincount(gid[verdict == codes[v]], minlength=ngroups)
    s["done"] = s["n"] - s["pending"]
    s["judged"] = s["consistent"] + s["violated"] + s["unresolved"]
    for v in JUDGED:
        s[v + "_frac"], s[v + "_lo"], s[v + "_hi"] = wilson(s[v], s["judged"])
    classified = np.isin(verdict, [codes[v] for v in CLASSIFIED if codes[v] is not None])
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
    if "reason" in cols:
        reason = cols["reason"][mask]
        unres = verdict == codes["unresolved"] if codes["unresolved"] is not None else \
            np.zeros(len(verdict), bool)
        s["unresolved_by"] = {}
        for r in UNRESOLVED_REASONS:
            if rf.has_code("reason", r):
                s["unresolved_by"][r] = np.bincount(gid[unres & (reason == rf.code("reason", r))],
                                                    minlength=ngroups)
        if "t_decide" in cols:  # the horizon to rerun at: the largest t_decide of the group
            td = cols["t_decide"][mask].astype(float)
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
        run = verdict != codes["pending"] if codes["pending"] is not None else \
            np.ones(len(verdict), bool)
        wt[~run | ~np.isfinite(wt)] = np.nan
        q, _ = group_quantiles(wt, gid, ngroups, [0.5])
        s["wall_median"] = q[:, 0]
        s["wall_total"] = np.bincount(gid, weights=np.nan_to_num(wt, nan=0.0),
                                      minlength=ngroups)
    return s


def rank_dist_text(counts_row, limit=5):
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


def reason_text(s, i):
    """The unresolved trials of group i by reason: "moving 3, metastable 2" ("-": none)."""
    by = s.get("unresolved_by", {})
    parts = ["%s %d" % (r, by[r][i]) for r in UNRESOLVED_REASONS if r in by and by[r][i]]
    return ", ".join(parts) or "-"


def rerun_text(s, i):
    """The horizon that decides the unresolved trials of group i: "T >= 41.2" (+ how many have
    no estimate), "-" when none is unresolved; "; vars x for 3" when trials of reason
    precision_vars_x are among them (docs/theory.md 2.2: rerun those with vars: x)."""
    if "rerun_T" not in s or s["unresolved"][i] == 0:
        return "-"
    t, unknown = s["rerun_T"][i], int(s["rerun_unknown"][i])
    text = ("T >= %s" % _g(t, 4)) if not math.isnan(t) else "none known"
    text += " (%d without)" % unknown if unknown and not math.isnan(t) else ""
    vx = s.get("unresolved_by", {}).get("precision_vars_x")
    return text + ("; vars x for %d" % vx[i] if vx is not None and vx[i] else "")


def _g(v, digits=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "%.*g" % (digits, v)


def _frac_cell(s, v, i):
    if s["judged"][i] == 0:
        return "-"
    return "%.3f [%.3f, %.3f]" % (s[v + "_frac"][i], s[v + "_lo"][i], s[v + "_hi"][i])


def _mid_cell(s, base, i):
    if base + "_median" not in s or math.isnan(s[base + "_median"][i]):
        return "-"
    return "%s [%s, %s]" % (_g(s[base + "_median"][i]), _g(s[base + "_q1"][i]),
                             _g(s[base + "_q3"][i]))


# ---------------------------------------------------------------- LaTeX cells
def latex_escape(t):
    """Text for LaTeX: special characters escaped; a line may break after _ and /."""
    rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
           "_": r"\_\allowbreak{}", "/": r"/\allowbreak{}", "{": r"\{", "}": r"\}",
           "~": r"\textasciitilde{}", "^": r"\^{}", "<": r"$<$", ">": r"$>$"}
    return "".join(rep.get(c, c) for c in str(t))


#: sweep axes typeset as the symbols of the paper (LaTeX tables)
TEX_NAMES = {"d": "$d$", "n": "$n$", "T": "$T$", "dt": r"$\Delta t$", "eps": r"$\varepsilon$"}


def tex_name(field):
    return TEX_NAMES.get(field) or latex_escape(field)


def tex_eq(field, value):
    """"field = value" for LaTeX: all in math mode for a symbol and a number ($d = 2$)."""
    sym = TEX_NAMES.get(field)
    try:
        float(value)
        numeric = True
    except ValueError:
        numeric = False
    if sym and numeric:
        return "%s = %s$" % (sym[:-1], value)
    return "%s = %s" % (tex_name(field), latex_escape(value))


def _tex_p(x):
    """A proportion in the style of journals: two decimals without the leading zero."""
    t = "%.2f" % x
    return t[1:] if t.startswith("0.") else t


def _tex_frac(s, v, i):
    if s["judged"][i] == 0:
        return "--"
    return r"%s\newline%s--%s" % (_tex_p(s[v + "_frac"][i]), _tex_p(s[v + "_lo"][i]),
                                 _tex_p(s[v + "_hi"][i]))


def _tex_mid(s, base, i):
    if base + "_median" not in s or math.isnan(s[base + "_median"][i]):
        return "--"
    # two significant digits: the quartiles of counts interpolate (4.25), and the cell must
    # stay within its column
    return r"%s\newline%s--%s" % (_g(s[base + "_median"][i], 2), _g(s[base + "_q1"][i], 2),
                                 _g(s[base + "_q3"][i], 2))


def rank_mode(counts_row):
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


def rank_mode_text(counts_row):
    """md cell of rank P: "2 (83%) [2, 4]" (mode, its share, range); "2 (100%)" when one."""
    m = rank_mode(counts_row)
    if m is None:
        return "-"
    mode, share, lo, hi = m
    t = "%d (%.0f%%)" % (mode, 100 * share)
    return t if lo == hi else t + " [%d, %d]" % (lo, hi)


def _tex_ranks(s, i):
    if "rank_p_counts" not in s:
        return "--"
    m = rank_mode(s["rank_p_counts"][i])
    if m is None:
        return "--"
    mode, share, lo, hi = m
    t = r"%d\,(%s)" % (mode, _tex_p(share))
    return t if lo == hi else t + r"\newline%d--%d" % (lo, hi)


def _tex_count(s, i):
    done, n = int(s["done"][i]), int(s["n"][i])
    return str(n) if done == n else r"%d/\allowbreak{}%d" % (done, n)


#: LaTeX column types (tabularx, whose array package gives >{...}): text that wraps, and
#: numbers set flush right in a fixed width (a value over its interval, one per line).
_TEX_TEXT = r">{\raggedright\arraybackslash}X"


def _tex_num(width):
    return r">{\raggedleft\arraybackslash}p{%s}" % width


#: The measured columns shared by Table 1 and the --by tables: (header, column type, cell).
_TEX_ABBREV = {"consistent": "cons.", "violated": "viol.", "unresolved": "unres."}
_TEX_FRACS = [(_TEX_ABBREV[v], _tex_num("3.5em"), lambda s, i, v=v: _tex_frac(s, v, i))
              for v in JUDGED]
#: the header over the fraction columns
_TEX_SPAN = r"fraction (95\,\% CI)"
#: rank-P values shown in LaTeX (the most frequent; the csv has all)
_TEX_RANKS = 3


class Table:
    """A table with display cells (md), machine-readable cells (csv) and typeset cells (LaTeX:
    tex_cols = [(header, column type)], tex_rows, tex_span = (first, last, header) for a
    header over a run of columns)."""

    def __init__(self, title, header, rows, csv_header, csv_rows, notes=(), tex_cols=None,
                 tex_rows=None, tex_span=None, tex_heading=None, tex_wide=(), tex_merge=None):
        self.title, self.header, self.rows = title, header, rows
        self.csv_header, self.csv_rows, self.notes = csv_header, csv_rows, list(notes)
        self.tex_cols, self.tex_rows, self.tex_span = tex_cols, tex_rows, tex_span
        self.tex_heading = tex_heading  # a first line across the table (the group)
        # --width column: the columns (indices) left out, and (a, b): column b's cell
        # written under column a's (a text column) instead of a column of its own
        self.tex_wide, self.tex_merge = set(tex_wide), tex_merge


def _num_getter(s, i):
    def num(name):
        if name not in s:
            return ""
        v = s[name][i]
        if isinstance(v, (float, np.floating)):
            return "" if math.isnan(v) else repr(float(v))
        return str(int(v))
    return num


def stats_table(title, key_names, key_labels, s, notes=(), settle=True):
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
        ["judged"] + ["%s_%s" % (v, x) for v in JUDGED for x in ("frac", "lo", "hi")] + \
        ["clusters_median", "clusters_q1", "clusters_q3", "rank_p_median", "rank_p_dist",
         "settled", "settle_median", "settle_q1", "settle_q3", "wall_total", "wall_median"] + \
        ["unresolved_%s" % r for r in UNRESOLVED_REASONS] + \
        ["rerun_T", "settled_clusters_median", "settled_clusters_q1", "settled_clusters_q3",
         "track_median", "plateau_median"]
    # one text column for the group: its key, or "key = value" lines for several keys
    tex_cols = ([(tex_name(key_names[0]) if len(key_names) == 1 else "group",
                  _TEX_TEXT)] if key_names else []) + \
        [("trials", _tex_num("2.4em"))] + [(h, c) for h, c, _ in _TEX_FRACS] + \
        [("other", r">{\raggedright\arraybackslash}p{4.2em}"),
         (r"clusters\newline med.\ (IQR)", _tex_num("3.5em")),
         (r"rank $P$:\newline mode", _tex_num("3.4em"))] + \
        ([(r"settle time\newline med.\ (IQR),\newline $n$ settled", _tex_num("4.1em"))]
         if settle else [])
    abbrev = {"no_prediction": "no pred.", "nonfinite": "non-finite", "failed": "failed"}
    rows, crows, trows = [], [], []
    for i, keys in enumerate(key_labels):
        other, tother = [], []
        for v in ("no_prediction", "nonfinite", "failed"):
            if s[v][i]:
                other.append("%s %d" % (v, s[v][i]))
                tother.append(r"%s\ %d" % (abbrev[v], s[v][i]))
        rdist = rank_mode_text(s["rank_p_counts"][i]) if "rank_p_counts" in s else "-"
        rfull = rank_dist_text(s["rank_p_counts"][i], None) if "rank_p_counts" in s else "-"
        settle_txt = _mid_cell(s, "settle", i)
        if "settled" in s and s["done"][i]:
            settle_txt += " (%d settled)" % s["settled"][i]
        rows.append(list(keys) + [
            str(s["n"][i]), str(s["done"][i]), _frac_cell(s, "consistent", i),
            _frac_cell(s, "violated", i), _frac_cell(s, "unresolved", i),
            reason_text(s, i), rerun_text(s, i),
            ", ".join(other) or "-", _mid_cell(s, "clusters", i),
            _mid_cell(s, "settled_clusters", i)] +
            ([_mid_cell(s, "track", i), _mid_cell(s, "plateau", i)] if track else []) +
            [rdist] +
            ([settle_txt] if settle else []) + [
            _g(s["wall_total"][i], 4) if "wall_total" in s else "-",
            _g(s["wall_median"][i]) if "wall_median" in s else "-"])
        tsettle = _tex_mid(s, "settle", i)
        if "settled" in s and s["done"][i]:
            tsettle += r"\newline$n = %d$" % s["settled"][i]
        if len(keys) == 1:
            tkeys = [latex_escape(keys[0])]
        else:
            tkeys = [r"\newline ".join(tex_eq(n, k) for n, k in zip(key_names, keys))] \
                if keys else []
        trows.append(tkeys + [_tex_count(s, i)] +
                     [f(s, i) for _, _, f in _TEX_FRACS] +
                     [", ".join(tother) or "--", _tex_mid(s, "clusters", i),
                      _tex_ranks(s, i)] + ([tsettle] if settle else []))
        num = _num_getter(s, i)
        crow = list(keys) + [num("n"), num("done"), num("pending")] + \
            [num(v) for v in VERDICTS] + [num("judged")] + \
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
                 (first, first + len(JUDGED) - 1, _TEX_SPAN),
                 tex_wide=[other] + ([len(tex_cols) - 1] if settle else []))


# ---------------------------------------------------------------- rendering
#: The LaTeX of a table: packages it needs, and the layout that fits \linewidth of an article
#: (footnotesize, narrow column gaps, text columns that share what the numbers leave).
LATEX_PACKAGES = ("booktabs", "tabularx")


#: --width: the LaTeX layout of each width: font size, column gap, the width to fill, and
#: the float to \input the table in
LATEX_WIDTHS = {
    "column": (r"\scriptsize", "2pt", r"\columnwidth", "table"),
    "page": (r"\footnotesize", "2.5pt", r"\linewidth", "table*"),
}


def tex_layout(t, width):
    """(columns, rows, span) of a table at a width: for `column`, t.tex_merge folds a column
    into a text column and t.tex_wide columns are left out."""
    cols, rows, span = list(t.tex_cols), [list(r) for r in t.tex_rows], t.tex_span
    if width != "column":
        return cols, rows, span
    drop = set(t.tex_wide)
    if t.tex_merge:
        a, b = t.tex_merge
        for r in rows:
            if r[b] not in ("", "--"):
                r[a] = r"%s\newline %s" % (r[a], r[b])
        drop.add(b)
    keep = [j for j in range(len(cols)) if j not in drop]
    if span:
        first, last, text = span
        inside = [j for j in keep if first <= j <= last]
        span = (keep.index(inside[0]), keep.index(inside[-1]), text) if inside else None
    return [cols[j] for j in keep], [[r[j] for j in keep] for r in rows], span


def render_latex_table(t, out, width="column"):
    size, sep, fill, env = LATEX_WIDTHS[width]
    cols, tex_rows, span = tex_layout(t, width)
    out.write("%% %s\n" % t.title)
    out.write("%% needs \\usepackage{%s}; \\input it in a %s environment (--width %s)\n" %
              (",".join(LATEX_PACKAGES), env, width))
    out.write("\\begingroup%s\\setlength{\\tabcolsep}{%s}%%\n" % (size, sep))
    out.write("\\noindent\\begin{tabularx}{%s}{@{}%s@{}}\n\\toprule\n" %
              (fill, "".join(c for _, c in cols)))
    if t.tex_heading:
        out.write("\\multicolumn{%d}{@{}l}{%s} \\\\\n\\midrule\n" % (len(cols), t.tex_heading))
    if span:
        a, b, text = span
        out.write(" & " * a + "\\multicolumn{%d}{c}{%s}" % (b - a + 1, text) +
                  " & " * (len(cols) - 1 - b) + " \\\\\n")
        out.write("\\cmidrule(lr){%d-%d}\n" % (a + 1, b + 1))
    out.write(" & ".join(h for h, _ in cols) + " \\\\\n\\midrule\n")
    for k, r in enumerate(tex_rows):
        out.write(("\\addlinespace[2pt]\n" if k else "") + " & ".join(r) + " \\\\\n")
    out.write("\\bottomrule\n\\end{tabularx}\n\\endgroup\n")
    for n in t.notes:
        out.write("% " + n + "\n")


def render(tables, fmt, preamble, width="column"):
    out = io.StringIO()
    if fmt == "csv":
        import csv
        w = csv.writer(out, lineterminator="\n")
        # one csv is one table: the tables of one command share their columns (Table 1 per
        # --by group, the robustness table per distance in long format)
        heads = {tuple(t.csv_header) for t in tables}
        if len(heads) > 1:
            raise AssertionError("csv of tables with different columns")
        if tables:
            w.writerow(tables[0].csv_header)
        for t in tables:
            w.writerows(t.csv_rows)
        return out.getvalue()
    if fmt == "md":
        for line in preamble:
            out.write(line + "  \n")
        for t in tables:
            out.write("\n## %s\n\n" % t.title)
            out.write("| " + " | ".join(t.header) + " |\n")
            out.write("|" + "|".join("---" for _ in t.header) + "|\n")
            for r in t.rows:
                out.write("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |\n")
            for n in t.notes:
                out.write("\n" + n + "\n")
        return out.getvalue()
    # latex
    for line in preamble:
        out.write("% " + line + "\n")
    for t in tables:
        out.write("\n")
        render_latex_table(t, out, width)
    return out.getvalue()


# ---------------------------------------------------------------- the commands
def completeness(rf, cols):
    """Lines of the preamble: file identity and how complete the data are."""
    lines = ["attnsweep summary of %s" % rf.path]
    ident = []
    for k in ("tool_version", "git_revision", "spec_sha256", "master_seed", "start_time",
              "end_time"):
        if k in rf.attrs:
            ident.append("%s %s" % (k, rf.attrs[k]))
    if ident:
        lines.append("; ".join(ident))
    sv = rf.attrs.get("schema_version")
    if sv is not None and int(sv) > schema.SCHEMA_VERSION:
        lines.append("WARNING: schema_version %d is newer than this analysis knows (%d); "
                     "columns it does not know are ignored" % (int(sv), schema.SCHEMA_VERSION))
    n = rf.n_rows
    pend = int((cols["verdict"] == rf.code("verdict", "pending")).sum()) \
        if rf.has_code("verdict", "pending") else 0
    done = n - pend
    expected = rf.attrs.get("n_trials")
    line = "trials: %d rows, %d done (%.1f%%), %d pending" % (
        n, done, 100.0 * done / n if n else 100.0, pend)
    if expected is not None and int(expected) != n:
        line += "; root attribute n_trials = %d differs from the rows of /trials" % int(expected)
    lines.append(line)
    if pend:
        lines.append("INCOMPLETE: the sweep was interrupted or is still running; fractions are "
                     "over the %d trials done (resume with `attnsweep run ... --resume`)" % done)
    nc = int(not_converged_mask(rf).sum())
    if nc:
        lines.append("excluded: %d not_converged trial(s) (Sinkhorn attention missed "
                     "sinkhorn_tol; docs/variants.md): in no table or statistic below" % nc)
    return lines


def parse_by(text):
    if text is None:
        return None
    names = [b.strip() for b in text.split(",") if b.strip()]
    return names


def show_settle(cols, mask):
    """Whether tables show the settle-time column: some selected trial has early stopping on
    (settle_window > 0, when the file records the key) or a finite settle_time."""
    if "settle_time" not in cols:
        return False
    if "settle_window" in cols and np.any(cols["settle_window"][mask] > 0):
        return True
    return bool(np.isfinite(cols["settle_time"][mask].astype(float)).any())


def phase_verdict(rf, mask, choice=None):
    """Which verdict --phase judges: 'near' (near_verdict, the verdict against the nearest
    theorem) or 'exact' (verdict). choice None: near when the file has the near fields and a
    selected trial is a near miss (its nearest theorem is a proved one whose hypotheses do
    not hold: near_theorem != theorem), else exact. UsageError for near without the field."""
    has = all(f in rf.fields for f in ("near_verdict", "near_theorem", "theorem"))
    if choice == "near" and not has:
        raise UsageError("--verdict near needs the field near_verdict, which this file lacks "
                         "(written by an attnsweep without the nearest theorem)")
    if choice:
        return choice
    if not has:
        return "exact"
    c = rf.read(["near_theorem", "theorem"])
    none = rf.code("near_theorem", "none") if rf.has_code("near_theorem", "none") else None
    miss = mask & (c["near_theorem"] != c["theorem"])
    if none is not None:
        miss &= c["near_theorem"] != none
    return "near" if miss.any() else "exact"


def summary_tables(rf, by, where, table1=False, phase=None, bins=12, defaults=False,
                   settle=None, verdict=None, drop_empty=False):
    """Compute the tables. Returns (preamble lines, [Table], phase data or None). verdict
    (--phase): 'near', 'exact' or None (phase_verdict chooses)."""
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
    if table1 and all(f in rf.fields for f in near_fields):
        want += near_fields
    judge = phase_verdict(rf, mask, verdict) if phase else "exact"
    if judge == "near":
        want.append("near_verdict")
    cols = rf.read(list(dict.fromkeys(want + axes_names)))
    pre = completeness(rf, cols)
    if where:
        pre.append("filter: %s (%d of %d rows)" % (where, int(mask.sum()), rf.n_rows))
    axes = [Axis(rf, a, cols[a], bins=(bins if a == phase else None)) for a in axes_names]
    gmask, gcols, joined = mask, cols, {}
    if phase:
        pre.append("verdict: %s" % (
            "near_verdict (against the nearest theorem; --verdict exact judges `verdict`)"
            if judge == "near" else "verdict (--verdict near judges near misses against "
            "their nearest theorem)"))
        if judge == "near":
            gcols = dict(cols)
            gcols["verdict"] = cols["near_verdict"]
        rows, axes, joined = join_baselines(rf, axes, range(len(axes) - 1), mask)
        gcols = {k: v[rows] for k, v in gcols.items()}
        gmask = np.ones(len(rows), dtype=bool)
        if joined:
            pre += baseline_note(joined)
    gid, keys = make_groups(axes, gmask)
    s = compute_stats(rf, gcols, gmask, gid, len(keys))
    key_labels = [tuple(ax.labels[k[j]] for j, ax in enumerate(axes)) for k in keys]
    if settle is None:
        settle = show_settle(cols, mask) and not table1

    notes = ["Fractions are over the judged trials (consistent + violated + unresolved), "
             "with Wilson score 95% intervals; " +
             ("clusters, rank P and settle time" if settle else "clusters and rank P") +
             " over classified trials ('clusters': every cluster at T, settled or not; "
             "'settled clusters': those of settled tokens); 'unresolved by reason' splits the "
             "unresolved trials (docs/theory.md 2.2) and 'rerun at' is the largest t_decide "
             "among them, the horizon that decides them; 'other' "
             "counts no_prediction, nonfinite and failed trials."]
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


#: The empirical-measure fields of the record (include/attnsweep/record.h, measure.h).
MASS_FIELDS = ["mass_%d" % j for j in range(1, 9)]
MEASURE_FIELDS = MASS_FIELDS + ["mass_rest", "hull_vertices", "hull_vertices_init", "ref_w1",
                                "ref_n_clusters", "reference_n", "n", "n_unresolved",
                                "n_clusters", "verdict"]


def measure_tables(rf, by, where):
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
    for a in by:
        try:
            rf.field_kind(a)
        except schema.SchemaError as e:
            raise UsageError("--by: %s" % e)
    cols = rf.read(list(dict.fromkeys(MEASURE_FIELDS + by)))
    pre = completeness(rf, cols)
    if where:
        pre.append("filter: %s (%d of %d rows)" % (where, int(mask.sum()), rf.n_rows))
    codes = [rf.code("verdict", v) for v in CLASSIFIED if rf.has_code("verdict", v)]
    sel = mask & np.isin(cols["verdict"], codes) & np.isfinite(cols["mass_1"].astype(float))
    axes = [Axis(rf, a, cols[a]) for a in by]
    gid, keys = make_groups(axes, sel)
    ng = len(keys)
    cnt = np.bincount(gid, minlength=ng).astype(float)

    def mean_sd(name):
        v = cols[name][sel].astype(float)
        s1 = np.bincount(gid, weights=v, minlength=ng)
        s2 = np.bincount(gid, weights=v * v, minlength=ng)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = s1 / cnt
            var = np.maximum(s2 - cnt * m * m, 0.0) / (cnt - 1)
        sd = np.where(cnt >= 2, np.sqrt(var), np.nan)
        return m, sd

    def median(values):
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
        def cell(j):
            m, sd = masses[j][0][i], masses[j][1][i]
            return _g(m) + ("" if math.isnan(sd) else " (%s)" % _g(sd, 2))
        tail = [_g(l1[i]), _g(unres_m[i]), _g(stat["clusters"][i]), _g(stat["hull"][i]),
                _g(stat["hull_init"][i]), _g(stat["ref_n"][i], 6), _g(stat["ref_w1"][i])]
        rows.append(list(kl) + [str(int(cnt[i]))] + [cell(j) for j in idx] + tail)
        trows.append([latex_escape(c) for c in rows[-1]])

        def num(v):
            return "" if math.isnan(v) else repr(float(v))
        crows.append(list(kl) + [str(int(cnt[i]))] +
                     [num(x) for j in range(len(masses)) for x in (masses[j][0][i],
                                                                    masses[j][1][i])] +
                     [num(l1[i]), num(unres_m[i]), num(stat["clusters"][i]),
                      num(stat["hull"][i]), num(stat["hull_init"][i]), num(stat["ref_n"][i]),
                      num(stat["ref_w1"][i]), num(stat["ref_clusters"][i])])
    # LaTeX: transposed, a row per quantity and a column per group (18 columns fit no page)
    nb = len(by)
    tex_cols = [("quantity", _TEX_TEXT)] + \
        [(r"\newline ".join(tex_eq(n, v) for n, v in zip(by, kl)) or "all", _tex_num("4.2em"))
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


# ---------------------------------------------------------------- --stat, default columns
def _stat_field_kind(rf):
    def kind(field):
        try:
            return rf.field_kind(field)
        except schema.SchemaError as e:
            raise UsageError("--stat: %s" % e)
    return kind


def parse_stat_tokens(rfs, tokens):
    """[Stat] of --stat tokens, checked against every file."""
    stats = None
    for rf in rfs:
        try:
            st = fstat.parse_stats(tokens, _stat_field_kind(rf), rf.labels)
        except fstat.StatError as e:
            raise UsageError(str(e))
        stats = st if stats is None else stats
    return stats or []


def _done_mask(rf, cols):
    """Rows of trials that ran (outcome not pending)."""
    if "outcome" in cols and rf.has_code("outcome", "pending"):
        return cols["outcome"] != rf.code("outcome", "pending")
    return np.ones(rf.n_rows, dtype=bool)


def stat_values(rf, stat, cols, done):
    """The per-trial values a Stat summarises, NaN where not applicable or not run."""
    kind = rf.field_kind(stat.field)
    fill = fstat.fill_value(stat.field, rf.description(stat.field)) if kind == "int" else None
    v = fstat.field_values(cols[stat.field], kind, fill)
    v[~done] = np.nan
    code = None
    if stat.kind == "frac" and stat.param[0] == "=":
        code = rf.code(stat.field, stat.param[1])
    return fstat.per_trial(stat, v, code)


def _features(rf, cols, mask):
    """What the selected trials hold (default columns, attnsweep_stat.default_fields)."""
    def lab(field, labels):
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


def default_stats(rfs, masks):
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
            cols = rf.read([st.field, "outcome"])
            v = stat_values(rf, st, cols, _done_mask(rf, cols))
            if (~np.isnan(v[mask])).any():
                keep.append(st)
                break
    return keep


def _stat_cell(r, st):
    if math.isnan(r["value"]):
        return "-"
    if st.kind == "frac":
        return "%.3f [%.3f, %.3f] (%d/%d)" % (r["value"], r["lo"], r["hi"], r["k"], r["n"])
    if st.kind == "n":
        return str(int(r["value"]))
    text = _g(r["value"], 4)
    if st.has_interval:
        text += " [%s, %s]" % (_g(r["lo"], 3), _g(r["hi"], 3))
    return text


def _fnum(v):
    if v is None:
        return ""
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return "" if math.isnan(v) else repr(float(v))


def stat_columns(stats, results, with_n=True):
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
        cells, ccells, nby = [], [], {}
        for st, res in zip(stats, results):
            r = res[i]
            cells.append(_stat_cell(r, st))
            ccells += [_fnum(r["value"])] + \
                ([_fnum(r["lo"]), _fnum(r["hi"])] if st.has_interval else [])
            nby.setdefault(st.field, r["n"])
        ccells += [str(nby[f]) for f in fields_n]
        rows.append(cells)
        crows.append(ccells)
    return head, chead, rows, crows


def compute_stat_results(rf, stats, mask, gid, ngroups):
    """[[summarise() per group] per stat] over the rows in mask."""
    need = list(dict.fromkeys([s.field for s in stats] + ["outcome"]))
    cols = rf.read(need)
    done = _done_mask(rf, cols)
    out = []
    for st in stats:
        v = stat_values(rf, st, cols, done)[mask]
        out.append(fstat.grouped(st, v, gid, ngroups))
    return out


def file_labels(rfs):
    """A label per file: the spec names when they tell the files apart, else the paths."""
    names = [rf.attrs.get("spec_name") for rf in rfs]
    if all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names):
        return names
    return [rf.path for rf in rfs]


def _check_axes(rf, names, what):
    for a in names:
        try:
            rf.field_kind(a)
        except schema.SchemaError as e:
            raise UsageError("%s: %s" % (what, e))


def stat_tables(rfs, by, where, stats, columns=None):
    """--stat: the statistics per --by group (and per file when there are several). columns:
    a key whose values become columns (--columns; pivot_stat_table). Returns (preamble lines,
    [Table])."""
    if columns is not None:
        for rf in rfs:
            _check_columns(rf, columns, by)
        pre, tables = stat_tables(rfs, list(by) + [columns], where, stats)
        return pre, [pivot_stat_table(tables[0], len(rfs) > 1, by, columns, stats)]
    labels = file_labels(rfs)
    multi = len(rfs) > 1
    pre, rows, crows = [], [], []
    head = chead = None
    key_names = (["file"] if multi else []) + list(by)
    for rf, flabel in zip(rfs, labels):
        _check_axes(rf, by, "--by")
        mask = where_mask(rf, where)
        cols = rf.read(list(dict.fromkeys(by + ["verdict", "outcome"])))
        pre += completeness(rf, cols)
        if where:
            pre.append("filter: %s (%d of %d rows)" % (where, int(mask.sum()), rf.n_rows))
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
             "field's fill value such as -1: none, are left out); intervals 95%: quantiles "
             "exact (order statistics), means percentile bootstrap, fractions Wilson "
             "(docs/analysis.md, \"Any field: --stat\")."]
    tex_cols = [(latex_escape(h), _TEX_TEXT) for h in header]
    trows = [[latex_escape(c) for c in r] for r in rows]
    title = ("statistics by " + ", ".join(key_names)) if key_names else "statistics, all trials"
    return pre, [Table(title, header, rows, key_names + ["trials"] + chead, crows, notes,
                       tex_cols, trows)]


def pivot_stat_table(t, multi, by, key, stats):
    """--stat --columns KEY: the long table of --by AXES,KEY with one row per --by group (and
    file) and, per value of KEY, a column of each statistic (headed "KEY = value", or
    "STAT, KEY = value" for several statistics); trials: the row's total. The csv stays the
    long table (tidy: DataFrame.pivot gives this layout back)."""
    nk = len(by) + (1 if multi else 0)
    values = _column_order(dict.fromkeys(r[nk] for r in t.rows))
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
                 [(latex_escape(h), _TEX_TEXT) for h in header],
                 [[latex_escape(c) for c in r] for r in rows])


def append_stat_columns(table, stats, results):
    """Adds default statistic columns to a --by table (same groups, same order)."""
    head, chead, rows, crows = stat_columns(stats, results)
    table.header = table.header + head
    table.csv_header = table.csv_header + chead
    table.rows = [r + c for r, c in zip(table.rows, rows)]
    table.csv_rows = [r + c for r, c in zip(table.csv_rows, crows)]
    if table.tex_cols is not None:  # page width only: one column holds no more columns
        table.tex_wide |= set(range(len(table.tex_cols), len(table.tex_cols) + len(head)))
        table.tex_cols = table.tex_cols + [(latex_escape(h), _TEX_TEXT) for h in head]
        table.tex_rows = [r + [latex_escape(c) for c in cs]
                          for r, cs in zip(table.tex_rows, rows)]
    table.notes.append("Columns after the wall time: %s (the default statistics for what this "
                       "sweep holds; --stat FIELD:STAT chooses others), over the trials that "
                       "ran, with 95%% intervals (docs/analysis.md); LaTeX shows them at "
                       "--width page." %
                       ", ".join(s.title for s in stats))


# ---------------------------------------------------------------- --pair
def _as_key(rf, field, col):
    """A coordinate as comparable values across files: enum labels as text (looked up once
    per distinct value), numbers as floats."""
    if rf.is_enum(field):
        uniq, inv = np.unique(np.asarray(col), return_inverse=True)
        labs = np.array([rf.label(field, v) for v in uniq], dtype=str)
        return labs[inv.ravel()] if len(uniq) else np.array([], dtype=str)
    return np.asarray(col, dtype=float)


def _codes(values):
    _, inv = np.unique(values, return_inverse=True)
    return inv.astype(np.int64).ravel()


def _row_ids(columns, n):
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


def pair_tables(rfs, pair_keys, by, where, stats):
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
        _check_axes(rf, by, "--by")
    for b in by:
        if b in pair_keys:
            raise UsageError("--by %s: a pair key is not a group" % b)
    pre, keycols, masks = [], {c: [] for c in coords}, []
    vals = [[] for _ in stats]
    file_idx, trial_idx = [], []
    for fi, rf in enumerate(rfs):
        mask = where_mask(rf, where)
        cols = rf.read(list(dict.fromkeys(coords + by + ["verdict", "outcome"] +
                                          [s.field for s in stats])))
        pre += completeness(rf, cols)
        if where:
            pre.append("filter: %s (%d of %d rows)" % (where, int(mask.sum()), rf.n_rows))
        done = _done_mask(rf, cols)
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

    def same(parts):  # every file constant with one value (NaN equal to NaN)
        vals_ = [p[1] for p in parts]
        return all(isinstance(p, tuple) for p in parts) and all(
            (v == vals_[0]) or (isinstance(v, float) and isinstance(vals_[0], float) and
                                math.isnan(v) and math.isnan(vals_[0])) for v in vals_)

    def column(parts):
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
        level_text = labels
        levels = list(range(len(rfs)))
        pair_names = ["file"]
    else:
        # levels in the order of the stored values (enum values, numbers), not of labels
        raw = rfs[0].read(pair_keys)
        level = _row_ids([_codes(np.asarray(raw[k])[sel]) for k in pair_keys], n)
        level_text = {}
        for lv in np.unique(level):
            r = int(np.nonzero(level == lv)[0][0])
            level_text[int(lv)] = ", ".join("%s = %s" % (k, _fmt_num(key[k][r])
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
        both = len(np.unique(level * (int(codes[c].max()) + 1) + codes[c]))
        if both == nlev:  # a function of the pair keys: not matched on
            dependent.append(c)
        else:
            match.append(c)
    mcols = [codes[c] for c in match] + ([tidx] if multi else [])
    mid = _row_ids(mcols, n)
    cell = mid * (max(levels) + 1) + level
    uc, cnt = np.unique(cell, return_counts=True)
    if (cnt > 1).any():
        bad = uc[cnt > 1][0]
        rows = np.nonzero(cell == bad)[0][:2]
        raise UsageError("--pair: trials %s are equal in every coordinate matched on (%s) and "
                         "in %s: the pairing is not one to one; pair on more keys" % (
                             " and ".join(str(int(tidx[r])) for r in rows),
                             ", ".join(match) or "none", ", ".join(pair_names)))
    nmid = int(mid.max()) + 1 if n else 0

    def rows_of(lv):  # the row of each match id at this level, -1 where none
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
            ["%s: b>a/b<a/=" % tt, "%s: %s" % (tt, test)]
        chead += ["%s_%s" % (nm, c) for c in fstat.PAIR_COLUMNS]
    rows, crows, trows = [], [], []
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
        for g in (np.unique(gid) if len(ia) else []):
            sa, sb = ia[gid == g], ib[gid == g]
            glab = [_fmt_num(key[b][sa[0]]) if key[b].dtype.kind == "f" else str(key[b][sa[0]])
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
                              r"%s\newline %s" % (_g(p["mean_a"], 3), _g(p["mean_b"], 3)),
                              "--" if math.isnan(p["diff_mean"]) else
                              r"%s\newline (%s, %s)" % (_g(p["diff_mean"], 2),
                                                        _g(p["diff_mean_lo"], 2),
                                                        _g(p["diff_mean_hi"], 2)),
                              _g(p["p"], 2)])
                gtex = ""
                dm = "-" if math.isnan(p["diff_mean"]) else "%s [%s, %s]" % (
                    _g(p["diff_mean"], 4), _g(p["diff_mean_lo"]), _g(p["diff_mean_hi"]))
                row += ["%s, %s" % (_g(p["mean_a"], 4), _g(p["mean_b"], 4)), dm]
                if not st.indicator:
                    row.append("-" if math.isnan(p["diff_median"]) else "%s [%s, %s]" % (
                        _g(p["diff_median"], 4), _g(p["diff_median_lo"]),
                        _g(p["diff_median_hi"])))
                row += ["%d/%d/%d" % (p["pos"], p["neg"], p["zero"]), _g(p["p"], 3)]
                crow += [_fnum(p[c]) for c in fstat.PAIR_COLUMNS]
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
             "the mean difference is the difference of the paired proportions)." % (
                 how, labels[0] if multi else level_text[base],
                 "file" if multi else "value of " + ", ".join(pair_names),
                 ", ".join(pair_names), ", ".join(dependent) or "none")]
    if unpaired_total:
        notes.append("%d selected trials have no partner and are left out." % unpaired_total)
    # LaTeX: one row per group and quantity (a table of many columns would not fit)
    tex_cols = [(r"pair $a \to b$, group", _TEX_TEXT), ("quantity", _TEX_TEXT),
                ("pairs", _tex_num("2.6em")), (r"mean\newline $a$, $b$", _tex_num("3.2em")),
                (r"$b - a$ mean\newline (95\,\% CI)", _tex_num("5.4em")),
                ("$p$", _tex_num("2.4em"))]
    title = "paired by %s" % ", ".join(pair_names)
    return pre, [Table(title, header, rows, chead, crows, notes, tex_cols, trows)]


def default_pair_stats(rfs, masks):
    """--pair without --stat: the default statistics of the sweep, the fraction consistent
    when some trial was judged, and the cluster count."""
    stats = default_stats(rfs, masks)
    judged = False
    for rf, mask in zip(rfs, masks):
        cols = rf.read(["verdict"])
        codes = [rf.code("verdict", v) for v in JUDGED if rf.has_code("verdict", v)]
        judged |= bool(np.isin(cols["verdict"][mask], codes).any())
    extra = (["verdict:=consistent"] if judged else []) + ["n_clusters:median"]
    return parse_stat_tokens(rfs, extra) + stats


# ---------------------------------------------------------------- --series
#: observables of a snapshot X (n x d) that --series computes: name -> (meaning, function)
def _res(X):
    c = X - X.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt((c * c).sum(axis=(1, 2))) / np.sqrt((X * X).sum(axis=(1, 2)))


def _diam(X):
    diff = X[:, :, None, :] - X[:, None, :, :]
    return np.sqrt((diff * diff).sum(axis=-1)).max(axis=(1, 2))


def _hull(X):
    import attnsweep_plots
    out = np.full(len(X), np.nan)
    for k, x in enumerate(X):
        if x.shape[1] == 2:
            out[k] = len(attnsweep_plots.convex_hull_2d(x))
        elif x.shape[1] == 3:
            out[k] = len(attnsweep_plots.convex_hull_3d(x)[1])
        elif x.shape[1] == 1:
            out[k] = 1 if np.ptp(x) == 0 else 2
    return out


SERIES = {
    "residual": ("res(X) = ||X - 1 mean(X)^T||_F / ||X||_F", _res),
    "diameter": ("diameter max_ij |x_i - x_j|", _diam),
    "clusters": ("cluster count (/bulk/snapshot_clusters)", None),
    "hull": ("vertices of the convex hull of the tokens (d <= 3)", _hull),
}


def series_tables(rf, by, where, names):
    """--series: per --by group and time, the median [exact 95% CI], mean and count of each
    observable over the trials whose snapshots are stored: t = 0 from the initial tokens when
    those are stored, then the snapshot times (/bulk/snapshots@times, else the stored spec).
    Returns (preamble lines, [Table], plot data)."""
    for nm in names:
        if nm not in SERIES:
            raise UsageError("--series: '%s' is not an observable (one of: %s)" % (
                nm, ", ".join(SERIES)))
    _check_axes(rf, by, "--by")
    mask = where_mask(rf, where)
    cols = rf.read(list(dict.fromkeys(by + ["n", "d", "verdict", "outcome"])))
    pre = completeness(rf, cols)
    if where:
        pre.append("filter: %s (%d of %d rows)" % (where, int(mask.sum()), rf.n_rows))
    snaps = rf.bulk_slabs("snapshots")
    if snaps is None:
        raise UsageError("--series needs snapshots: %s has no /bulk/snapshots (add "
                         "output: {snapshots: [t1, t2, ...]} to the spec)" % rf.path)
    clus = rf.bulk_slabs("snapshot_clusters")
    if "clusters" in names and clus is None:
        raise UsageError("--series clusters: %s has no /bulk/snapshot_clusters" % rf.path)
    init = rf.bulk_slabs("initial_tokens")
    times = rf.snapshot_times()
    done = _done_mask(rf, cols)
    axes = [Axis(rf, a, cols[a]) for a in by]
    gid, keys = make_groups(axes, mask)
    rows_sel = np.nonzero(mask)[0]
    # values[name][group] -> list per time index of values
    nt = None
    data = {nm: {} for nm in names}
    for k, trial in enumerate(rows_sel):
        if not done[trial]:
            continue
        flat = snaps(trial)
        if flat is None:
            continue
        n, d = int(cols["n"][trial]), int(cols["d"][trial])
        X = flat.reshape(-1, n, d)
        x0 = init(trial) if init is not None else None
        with_zero = x0 is not None and len(x0) == n * d
        if with_zero:
            X = np.concatenate([x0.reshape(1, n, d), X])
        if nt is None:
            nt = len(X)
            with_t0 = with_zero
        if len(X) != nt:
            raise schema.SchemaError("%s: trial %d has %d snapshots, others %d" % (
                rf.path, trial, len(X) - with_zero, nt - with_t0))
        for nm in names:
            if nm == "clusters":
                c = clus(trial)
                v = np.full(nt, np.nan)
                if c is not None:
                    v[nt - len(c):] = c
                    if with_t0:
                        v[0] = np.nan
            else:
                v = SERIES[nm][1](X)
            data[nm].setdefault(int(gid[k]), []).append(v)
    if nt is None:
        raise UsageError("--series: no selected trial that ran has snapshots stored")
    snap_t = list(times) if times is not None else list(range(1, nt - with_t0 + 1))
    tvals = ([0.0] if with_t0 else []) + [float(t) for t in snap_t[:nt - with_t0]]
    med = fstat.Stat("x", "median")
    # md and LaTeX: one row per group and observable, the medians in a column per time; the
    # csv: long (one row per time) with the intervals and the mean
    header = list(by) + ["observable", "trials"] + ["t = %s" % _g(t, 6) for t in tvals]
    chead = list(by) + ["observable", "t", "trials", "median", "median_lo", "median_hi",
                        "mean"]
    rows, crows, plot = [], [], {"names": names, "series": {}, "where": where}
    for nm in names:
        for g, key in enumerate(keys):
            vals = data[nm].get(g)
            if not vals:
                continue
            arr = np.array(vals)  # trials x times
            glabel = [ax.labels[key[j]] for j, ax in enumerate(axes)]
            ser = plot["series"].setdefault(nm, {}).setdefault(
                ", ".join("%s = %s" % nv for nv in zip(by, glabel)) or "all trials",
                {"t": [], "median": [], "lo": [], "hi": [], "trials": []})
            wide = []
            for j, t in enumerate(tvals):
                v = arr[:, j]
                v = v[np.isfinite(v)]
                r = fstat.summarise(med, v)
                mean = float(np.mean(v)) if len(v) else np.nan
                wide.append(_g(r["value"], 2))
                crows.append(glabel + [nm, _fnum(t), str(len(v)), _fnum(r["value"]),
                                       _fnum(r["lo"]), _fnum(r["hi"]), _fnum(mean)])
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
    tex_cols = [(latex_escape(h), _TEX_TEXT) for h in header[:nt]] + \
        [(("$%s$" % h) if h.startswith("t = ") else latex_escape(h), _tex_num("2.8em"))
         for h in header[nt:]]
    trows = [[latex_escape(c) for c in r] for r in rows]
    title = "time series of %s%s" % (", ".join(names), (" by " + ", ".join(by)) if by else "")
    return pre, [Table(title, header, rows, chead, crows, notes, tex_cols, trows)], plot


def robustness_tables(rf, by, where, bins=12, columns=None):
    """--robustness: for each hypothesis distance of hypotheses(rf) the file has, the verdict
    against the nearest theorem (near_verdict) against that distance, over the trials whose
    nearest theorem has the hypothesis, grouped by the --by axes and near_theorem. columns: a
    key whose values become columns (--columns; pivot_robustness). Returns (preamble lines,
    [Table], plot data {'panels': [...], 'where'})."""
    if columns is not None:
        return pivot_robustness(rf, by, where, bins, columns)
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
    for a in by:
        try:
            rf.field_kind(a)
        except schema.SchemaError as e:
            raise UsageError("--by: %s" % e)
    by = [a for a in by if a != "near_theorem"]
    want = [f for f in STAT_FIELDS if f in rf.fields]
    cols = rf.read(list(dict.fromkeys(want + need + by + [h for h, _ in hyps])))
    pre = completeness(rf, cols)
    if where:
        pre.append("filter: %s (%d of %d rows)" % (where, int(mask.sum()), rf.n_rows))
    # The statistics of the tables are those of --by, with near_verdict as the verdict.
    ncols = dict(cols)
    ncols["verdict"] = cols["near_verdict"]
    near = cols["near_theorem"]
    tables, panels, joined_all = [], [], {}
    header_tail = ["x (median)", "trials", "judged", "consistent", "violated", "unresolved",
                   "other", "consistent [95% CI]"]
    csv_tail = ["x", "lo", "hi", "trials", "judged", "consistent", "violated", "unresolved", "other",
                "consistent_frac", "consistent_lo", "consistent_hi"]
    for h, theorems in hyps:
        codes = [rf.code("near_theorem", t) for t in theorems if rf.has_code("near_theorem", t)]
        sel = mask & np.isin(near, codes)
        axes = [Axis(rf, a, cols[a]) for a in by] + [Axis(rf, "near_theorem", near)] + \
            [DistanceAxis(h, np.where(sel, cols[h].astype(float), np.nan), bins)]
        rows, axes, joined = join_baselines(rf, axes, range(len(by)), sel)
        gsel = np.ones(len(rows), dtype=bool)
        gid, keys = make_groups(axes, gsel)
        st = compute_stats(rf, {k: v[rows] for k, v in ncols.items()}, gsel, gid, len(keys))
        # x of a point: the median distance of its own trials (a bin is shared by the groups)
        xmed, _ = group_quantiles(cols[h][rows].astype(float), gid, len(keys), [0.5])
        names = by + ["near theorem", h]
        rows, crows, trows, series = [], [], [], {}
        for i, k in enumerate(keys):
            labels = [ax.labels[k[j]] for j, ax in enumerate(axes)]
            x = float(xmed[i, 0])
            other = int(st["no_prediction"][i] + st["nonfinite"][i] + st["failed"][i])
            cells = [str(int(st["n"][i])), str(int(st["judged"][i])),
                     str(int(st["consistent"][i])), str(int(st["violated"][i])),
                     str(int(st["unresolved"][i])), str(other)]
            rows.append(labels + [_g(x, 3)] + cells + [_frac_cell(st, "consistent", i)])
            num = _num_getter(st, i)
            fnum = lambda v: "" if v is None or math.isnan(v) else repr(float(v))  # noqa: E731
            blo, bhi = axes[-1].bounds[k[-1]]
            # long format: one csv table for every distance (the distance a column)
            crows.append(labels[:-1] + [h, labels[-1]] + [fnum(x), fnum(blo), fnum(bhi)] +
                         cells + [num("consistent_frac"), num("consistent_lo"),
                                  num("consistent_hi")])
            trows.append([latex_escape(l) for l in labels[:-1]] + [_g(x, 2)] +
                         [r"%s\newline (%s)" % tuple(cells[:2])] +
                         [_tex_frac(st, "consistent", i)])
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
        title = "near verdict against %s (%s)" % (h, ", ".join(theorems))
        notes = ["%s: %s. Rows: the trials whose nearest theorem (near_theorem) has this "
                 "hypothesis, by near_theorem%s and distance (with more than %d distinct values: "
                 "quantile bins, separately for < 0, = 0 and > 0; x = the median distance of "
                 "the point's trials). Counts are of near_verdict; the "
                 "fraction is consistent / judged (consistent + violated + unresolved) with its "
                 "Wilson score 95%% interval; 'other' counts no_prediction, nonfinite, failed." %
                 (h, rf.axis_label(h), (", " + ", ".join(by)) if by else "", bins)] + \
            (baseline_note(joined) if joined else [])
        # the point's label is left out of LaTeX: its x (the median) says where it is
        tex_cols = [(latex_escape(n), _TEX_TEXT) for n in names[:-1]] + \
            [(r"%s\newline median" % latex_escape(h), _tex_num("5.6em")),
             (r"trials\newline (judged)", _tex_num("4em")),
             (r"consistent\newline (95\,\% CI)", _tex_num("4.8em"))]
        for k, v in joined.items():
            joined_all[k] = max(joined_all.get(k, 0), v)
        tables.append(Table(title, names + header_tail, rows,
                            by + ["near_theorem", "distance", "bin"] + csv_tail, crows, notes,
                            tex_cols, trows))
        panels.append({"param": h, "xlabel": rf.axis_label(h), "theorems": theorems,
                       "series": {g: v for g, v in series.items() if v["x"]}})
    if joined_all:
        pre += baseline_note(joined_all)
    return pre, tables, {"panels": panels, "where": where}


def _check_columns(rf, key, by):
    """--columns KEY: one axis of the file, not also a --by axis."""
    if "," in key:
        raise UsageError("--columns takes one key, not %s" % key)
    try:
        rf.field_kind(key)
    except schema.SchemaError as e:
        raise UsageError("--columns: %s" % e)
    if key in by:
        raise UsageError("--columns %s: %s is also a --by axis" % (key, key))


def _column_order(labels):
    """The column values in order: numerically when every one is a number, else as met."""
    try:
        return sorted(labels, key=float)
    except ValueError:
        return list(labels)


def pivot_robustness(rf, by, where, bins, key):
    """--robustness --columns KEY: the robustness tables with one row per --by group, nearest
    theorem and distance point, and one column per value of KEY: consistent/judged = fraction
    [Wilson 95% CI] of the row's trials at that value (e.g. KEY = T: the same curve at each
    horizon side by side). x (median) and trials are over the whole row (every value of KEY).
    The distance points are those of the table without --columns (bins over all selected
    trials). csv: the tidy long form, the table of --by AXES,KEY (one row per row and value;
    pandas' DataFrame.pivot gives this layout back). Returns robustness_tables' triple."""
    _check_columns(rf, key, by)
    pre, long_tables, robust = robustness_tables(rf, list(by) + [key], where, bins)
    _, row_tables, _ = robustness_tables(rf, list(by), where, bins)
    nb = len(by)
    tables = []
    for lt, rt in zip(long_tables, row_tables):
        # the long table's rows: by..., KEY, near theorem, point, x, trials, judged, counts
        head = lt.header
        ix = {h: j for j, h in enumerate(head)}
        values = _column_order(dict.fromkeys(r[nb] for r in lt.rows))
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
        tex_cols = [("group" if nb else "near theorem", _TEX_TEXT),
                    (rt.tex_cols[nb + 1][0], _tex_num("5.2em")), ("trials", _tex_num("2.4em"))] + \
            [(latex_escape("%s = %s" % (key, v)), _tex_num("4.2em")) for v in values]
        notes = ["Columns: the values of %s; a cell is consistent/judged = the fraction "
                 "consistent [Wilson 95%% CI] of the row's trials at that value (near_verdict); "
                 "x (median) and trials are over the whole row. csv: the same cells in long "
                 "format (the table of --by %s)." % (key, ",".join(list(by) + [key]))] + \
            rt.notes
        tables.append(Table(rt.title + ", by " + key, header, rows, lt.csv_header,
                            lt.csv_rows, notes, tex_cols, trows))
    return pre, tables, robust


def _tex_pivot_cell(cell):
    """LaTeX of a pivot cell "k/n = f [lo, hi]": the fraction over its interval and counts."""
    m = re.match(r"^(\d+)/(\d+) = ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]$", cell)
    if not m:
        return "--"
    k, n, f, lo, hi = m.groups()
    return r"%s\newline%s--%s\newline(%s/%s)" % (_tex_p(float(f)), _tex_p(float(lo)),
                                                  _tex_p(float(hi)), k, n)


def near_miss_stats(rf, cols, mask, outer):
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
    ncols = dict(cols)
    ncols["verdict"] = cols["near_verdict"]
    st = compute_stats(rf, ncols, sel, gid, len(keys))
    q, _ = group_quantiles(cols["near_dist"][sel].astype(float), gid, len(keys), [0.5])
    st["near_dist_median"] = q[:, 0]
    return {tuple(ax.labels[k[j]] for j, ax in enumerate(axes)): (st, i)
            for i, k in enumerate(keys)}


def _near_cell(near, key):
    if near is None:
        return "-"
    if key not in near:
        return "0"
    st, i = near[key]
    return "%d: %s, dist med %s" % (st["n"][i], _frac_cell(st, "consistent", i),
                                    _g(st["near_dist_median"][i], 2))


def table1_tables(axes, key_labels, s, notes, theorems, near=None, proved=(),
                  drop_empty=False):
    """Table 1 of the paper with the measured columns, one table per combination of the
    outer axes (the --by axes; the last axis is the theorem); proved: the theorems that can
    have near misses."""
    outer = [a.name for a in axes[:-1]]
    groups = {}
    for i, k in enumerate(key_labels):
        groups.setdefault(k[:-1], {})[k[-1]] = i
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
         "near_miss_consistent_lo", "near_miss_consistent_hi", "near_miss_dist_median"]
    tex_cols = [("case: hypotheses", _TEX_TEXT),
                ("prediction", _TEX_TEXT), ("trials", _tex_num("2.4em"))] + \
        [(h, c) for h, c, _ in _TEX_FRACS] + \
        [(r"clusters\newline med.\ (IQR)", _tex_num("3.5em")),
         (r"rank $P$:\newline mode", _tex_num("3.4em"))]
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
                nnum = _num_getter(*nst)
                ncsv = [nnum("n"), nnum("judged"), nnum("consistent"),
                        nnum("consistent_frac"), nnum("consistent_lo"), nnum("consistent_hi"),
                        nnum("near_dist_median")]
            else:
                ncsv = ["0" if (near is not None and is_proved) else ""] + [""] * 6
            if i is None and drop_empty and not nst:
                continue  # --drop-empty: no trial has the row's theorem, none is a near miss
            if i is None:
                rows.append([label, v, m, geom, ref, "0", "0", "-", "-", "-", "-", "-", "0",
                             ncell])
                crows.append(list(ok) + [label, v, m, geom, ref, "0", "0", "0"] +
                             [""] * (len(csv_header) - len(ok) - 8 - 8) + ["0"] + ncsv)
                trows.append([hyp, pred, "0"] + ["--"] * 5)
                continue
            rd = rank_mode_text(s["rank_p_counts"][i]) if "rank_p_counts" in s else "-"
            rfull = rank_dist_text(s["rank_p_counts"][i], None) if "rank_p_counts" in s \
                else "-"
            uniform = label == "minus_identity" and "p_uniform_median" in s and \
                not math.isnan(s["p_uniform_median"][i])
            if uniform:  # the observable of Thm C.5 is the distance to J/n, not rank P
                rd = "dist to J/n %s (%s)" % (_g(s["p_uniform_median"][i], 2),
                                           _g(s["p_uniform_max"][i], 2))
            rows.append([label, v, m, geom, ref, str(s["n"][i]), str(s["done"][i]),
                         _frac_cell(s, "consistent", i), _frac_cell(s, "violated", i),
                         _frac_cell(s, "unresolved", i), _mid_cell(s, "clusters", i), rd,
                         str(s["n"][i]), ncell])
            num = _num_getter(s, i)
            crows.append(list(ok) + [label, v, m, geom, ref, num("n"), num("done"),
                                     num("judged")] +
                         [num("%s_%s" % (vv, x)) for vv in JUDGED
                          for x in ("frac", "lo", "hi")] +
                         [num("clusters_median"), num("clusters_q1"), num("clusters_q3"),
                          rfull.replace(" ", ";") if rfull != "-" else "",
                          num("p_uniform_median"), num("p_uniform_max"), num("n")] + ncsv)
            trows.append([hyp, pred, _tex_count(s, i)] +
                         [f(s, i) for _, _, f in _TEX_FRACS] +
                         [_tex_mid(s, "clusters", i),
                          r"to $J/n$:\newline %s" % _g(
                              s["p_uniform_median"][i], 2) if uniform else _tex_ranks(s, i)])
        title = "Table 1 of the paper with the measured verdicts"
        if ok:
            title += " (%s)" % ", ".join("%s = %s" % nv for nv in zip(outer, ok))
        heading = ", ".join(tex_eq(n, v) for n, v in zip(outer, ok)) or None
        tables.append(Table(title, header, rows, csv_header, crows, notes, tex_cols, trows,
                            (3, 2 + len(JUDGED), _TEX_SPAN), heading, tex_merge=(0, 1)))
    return tables


def phase_series(rf, axes, keys, s):
    """Series of the phase diagram: {'param': name, 'xlabel': its human label, 'series':
    {group label: {'x', 'label' (x as text), 'judged' (the n of each point), verdict: (frac,
    lo, hi)}}}."""
    px = axes[-1]
    series = {}
    for i, k in enumerate(keys):
        glabel = ", ".join("%s = %s" % (a.name, a.labels[k[j]])
                           for j, a in enumerate(axes[:-1]))
        x = px.values[k[-1]]
        ser = series.setdefault(glabel, {"x": [], "judged": [], "label": [],
                                         **{v: ([], [], []) for v in JUDGED}})
        ser["x"].append(x)
        ser["label"].append(px.labels[k[-1]])
        ser["judged"].append(int(s["judged"][i]))
        for v in JUDGED:
            for arr, key in zip(ser[v], ("frac", "lo", "hi")):
                arr.append(float(s["%s_%s" % (v, key)][i]))
    return {"param": px.name, "xlabel": rf.axis_label(px.name), "series": series,
            "categorical": px.kind in ("enum", "flag")}


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument as a UsageError (one line, exit 2) instead of
    printing the usage block and exiting by itself."""

    def error(self, message):
        raise UsageError("%s (attnsweep summarize --help lists the options)" % message)


def _one_line(text):
    return " ".join(str(text).split())


def _fail(msg, rc):
    print("attnsweep summarize: %s" % _one_line(msg), file=sys.stderr)
    return rc


def main(argv=None):
    """Entry point; returns the exit status (docs/analysis.md): 0 done, 2 bad arguments or not
    a results file, 3 the file or an output cannot be read/written, a Python module is
    missing, or an internal error (a bug; ATTNSWEEP_DEBUG=1 prints its traceback), 130
    interrupted. Every failure is one line on stderr, never a traceback."""
    ap = _Parser(
        prog="attnsweep summarize",
        description="Summary tables and figures from an attnsweep results file.")
    ap.add_argument("files", nargs="+", metavar="file",
                    help="results file(s) (OUT.h5); several: one table, grouped by file")
    ap.add_argument("--stat", nargs="+", action="extend", metavar="FIELD[:STAT,...]",
                    help="statistics of any numeric field per --by group: median, mean, sd, "
                    "min, max, n, qNN, gtX/geX/ltX/leX/eqX/neX (fraction), =LABEL (enum)")
    ap.add_argument("--pair", nargs="?", const="", metavar="KEY[,KEY...]",
                    help="paired differences: several files trial by trial, or in one file "
                    "the trials that differ only in these sweep keys (default: the file's "
                    "common_keys)")
    ap.add_argument("--by", help="group by these axes, comma separated: any /trials field "
                    "(theorem, d, n, eps, vfamily, ...) or flag_<name>; default theorem")
    ap.add_argument("--where", help="filter rows, e.g. \"d == 2 and theorem == 'good'\"")
    ap.add_argument("--format", choices=("md", "csv", "latex", "parquet", "netcdf"),
                    help="md (default), csv or latex; without it, -o FILE's extension "
                    "(.csv, .tex, .md) chooses")
    ap.add_argument("--width", choices=("column", "page"), default="column",
                    help="LaTeX tables: fit one column of a two-column article (\\columnwidth, "
                    "in a table environment; default) or the page (table*)")
    ap.add_argument("--drop-empty", action="store_true",
                    help="--table1: leave out the theorem rows without trials and without "
                    "near misses")
    ap.add_argument("--table1", action="store_true",
                    help="the paper's Table 1 with the measured columns beside it (one table "
                    "per value of --by)")
    ap.add_argument("--phase", metavar="PARAM",
                    help="phase diagram: verdict fractions against PARAM (eps, v_gap, gap...)")
    ap.add_argument("--bins", type=int, default=12,
                    help="bins for a continuous --phase parameter with more distinct values")
    ap.add_argument("--png", metavar="FILE", help="write the figure (--phase, --robustness, --series, "
                    "--stat or --plot) here (PNG; PDF or SVG when FILE ends in .pdf or .svg)")
    ap.add_argument("--verdict", choices=("near", "exact"),
                    help="--phase: judge near_verdict (against the nearest theorem) or "
                    "verdict; default near when the selection has near misses")
    ap.add_argument("--robustness", action="store_true",
                    help="verdict against the nearest theorem (near_verdict) against each "
                    "hypothesis distance (dist_*, near_dist): a table each, --png a figure")
    ap.add_argument("--columns", metavar="KEY",
                    help="--robustness or --stat: one column per value of KEY (e.g. T), the "
                    "rows the --by groups (csv: long format)")
    ap.add_argument("--measure", action="store_true",
                    help="the empirical measure (cluster masses, hull vertices, ref_w1) per "
                         "--by group (default n)")
    ap.add_argument("--plot", metavar="TRIAL", type=int,
                    help="figure of one trial's stored end state / trajectory and P (needs "
                    "--png and bulk data in the file)")
    ap.add_argument("--series", metavar="OBS[,OBS...]",
                    help="time series from the stored snapshots: residual, diameter, "
                    "clusters, hull per --by group and time (--png: line figures)")
    ap.add_argument("-o", "--output", metavar="FILE", help="write the tables here, not stdout")
    try:
        args = ap.parse_args(argv)
        return _run(args)
    except SystemExit as e:  # --help
        return 2 if e.code else 0
    except (UsageError, schema.SchemaError) as e:
        return _fail(e, 2)
    except schema.FileAccessError as e:
        return _fail(e, 3)
    except ImportError as e:
        return _fail("a Python module is missing (%s): apt-get install python3-numpy "
                     "python3-h5py python3-matplotlib (and run with /usr/bin/python3)" % e, 3)
    except BrokenPipeError:
        # the reader of stdout went away (| head): nothing more can be said there
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 3
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except MemoryError:
        return _fail("out of memory", 3)
    except OSError as e:  # an I/O failure that no layer above named (HDF5 read, stdout)
        return _fail("I/O failure: %s" % e, 3)
    except Exception as e:  # a bug: say where, and how to get the whole story
        if os.environ.get("ATTNSWEEP_DEBUG"):
            raise
        import traceback
        tb = traceback.extract_tb(e.__traceback__)
        where = " at %s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else ""
        return _fail("internal error (a bug in the analysis, please report it): %s: %s%s; "
                     "ATTNSWEEP_DEBUG=1 prints the traceback" % (type(e).__name__, e, where), 3)


def _run(args):
    if args.bins < 1:
        raise UsageError("--bins must be >= 1")
    if args.plot is not None and not args.png:
        raise UsageError("--plot needs --png FILE")
    if args.png and args.plot is None and not args.phase and not args.robustness and \
            not args.series and not (args.stat and args.pair is None):
        raise UsageError("--png goes with --phase, --robustness, --series, --stat or --plot")
    if args.series and (args.phase or args.table1 or args.robustness or args.measure):
        raise UsageError("--series goes without --phase, --table1, --robustness, --measure")
    if args.robustness and (args.phase or args.table1):
        raise UsageError("--robustness goes without --phase and --table1")
    if args.measure and (args.phase or args.table1 or args.robustness or args.png):
        raise UsageError("--measure goes without --phase, --table1, --robustness and --png")
    if args.columns is not None and not (args.robustness or args.stat) or \
            args.columns is not None and args.pair is not None:
        raise UsageError("--columns goes with --robustness or --stat, without --pair")
    if args.columns is not None and args.png:
        raise UsageError("--columns goes without --png (the figure of --by ...,%s draws the "
                         "same curves)" % args.columns)
    if args.verdict and not args.phase:
        raise UsageError("--verdict goes with --phase")
    if args.drop_empty and not args.table1:
        raise UsageError("--drop-empty goes with --table1")
    if args.pair is not None and (args.phase or args.robustness):
        return _emit(args, output_format(args), *paired_curves(args))
    special = [o for o, on in (("--series", args.series), ("--table1", args.table1),
                                ("--phase", args.phase),
                                ("--robustness", args.robustness), ("--measure", args.measure),
                                ("--plot", args.plot is not None)) if on]
    if special and (args.stat or args.pair is not None or len(args.files) > 1):
        raise UsageError("%s goes with one file and without --stat and --pair" % special[0])
    if args.pair is None and len(args.files) > 1 and len(set(args.files)) < len(args.files):
        raise UsageError("a file is named twice")
    fmt = output_format(args)
    if len(args.files) > 1 or args.stat or args.pair is not None:
        rfs = []
        try:
            for path in args.files:
                rfs.append(schema.open_results(path))
            pre, tables = many_tables(rfs, args)
            curves = stat_curves(rfs, args, tables[0]) if args.png else None
        finally:
            for rf in rfs:
                rf.close()
        rc = _emit(args, fmt, pre, tables)
        if curves:
            import attnsweep_plots
            attnsweep_plots.plot_lines(curves, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
        return rc
    args.format = fmt
    with schema.open_results(args.files[0]) as rf:
        if args.plot is not None:
            import attnsweep_plots
            attnsweep_plots.plot_trial_file(rf, args.plot, args.png)
            print("wrote %s" % args.png)
            return 0
        by = parse_by(args.by)
        robust = series = None
        if args.series:
            pre, tables, series = series_tables(rf, by or [], args.where,
                                                parse_by(args.series) or [])
            phase = None
        elif args.robustness:
            pre, tables, robust = robustness_tables(rf, by or [], args.where, bins=args.bins,
                                                     columns=args.columns)
            phase = None
        elif args.measure:
            pre, tables = measure_tables(rf, ["n"] if by is None else by, args.where)
            phase = None
        else:
            if by is None:
                by = [] if args.phase else ["theorem"]
            pre, tables, phase = summary_tables(rf, by, args.where, table1=args.table1,
                                                phase=args.phase, bins=args.bins,
                                                defaults=not args.table1 and not args.phase,
                                                verdict=args.verdict,
                                                drop_empty=args.drop_empty)
        if args.format in BINARY_FORMATS:
            write_table_file(tables, args.format, pre, args.output)
            for line in pre:
                print(line, file=sys.stderr)
            text = None
        else:
            text = render(tables, args.format, pre, args.width)
        if args.format == "csv":
            for line in pre:
                print(line, file=sys.stderr)
        if text is None:
            pass
        elif args.output:
            try:
                with open(args.output, "w") as fh:
                    fh.write(text)
            except OSError as e:
                raise schema.FileAccessError("cannot write %s: %s" % (args.output, e))
        else:
            sys.stdout.write(text)
        if phase and args.png:
            import attnsweep_plots
            attnsweep_plots.plot_phase(phase, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
        if series and args.png:
            import attnsweep_plots
            attnsweep_plots.plot_series(series, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
        if robust and args.png:
            import attnsweep_plots
            attnsweep_plots.plot_robustness(robust, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
    return 0


def stat_curves(rfs, args, table):
    """--stat FIELD:STAT --by KEY[,AXIS...] --png FILE: the line figure of the first statistic
    against the first --by axis (a numeric sweep key), one line per combination of the other
    axes (and file), with its 95% interval (attnsweep_plots.plot_lines)."""
    by = parse_by(args.by) or []
    if not by:
        raise UsageError("--stat with --png draws the statistic against the first --by axis: "
                         "give --by KEY[,AXIS...]")
    x = by[0]
    if rfs[0].field_kind(x) not in ("int", "float"):
        raise UsageError("--stat with --png: the first --by axis (%s) must be numeric" % x)
    head = table.csv_header
    lead = head.index("trials")
    name = head[lead + 1]
    keys = head[:lead]
    lo, hi = (head.index(name + "_lo"), head.index(name + "_hi")) if name + "_lo" in head \
        else (None, None)
    series = {}
    for r in table.csv_rows:
        group = ", ".join("%s = %s" % (k, v) for k, v in zip(keys, r) if k != x)
        ser = series.setdefault(group, {"x": [], "y": [], "lo": [], "hi": []})

        def num(c):
            return float(c) if c not in ("", None) else np.nan
        ser["x"].append(num(r[keys.index(x)]))
        ser["y"].append(num(r[lead + 1]))
        ser["lo"].append(num(r[lo]) if lo is not None else np.nan)
        ser["hi"].append(num(r[hi]) if hi is not None else np.nan)
    # the eps = 0 baseline (an axis not applicable there, `-`) is the first point of each line
    base = [g for g, v in series.items() if "= -" in g and x == "eps" and
            all(e == 0 for e in v["x"])]
    if base and len(series) > len(base):
        pts = [series.pop(g) for g in base]
        for v in series.values():
            for b in pts:
                for k in ("x", "y", "lo", "hi"):
                    v[k][:0] = b[k]
    frac = any(t in name for t in ("_eq_", "_gt", "_ge", "_lt", "_le", "_ne"))
    return {"x": x, "xlabel": rfs[0].axis_label(x), "ylabel": "\n".join(textwrap.wrap(table.header[lead + 1].replace(" [95% CI]", ""),
                                          26)),
            "ylim": (0.0, 1.0) if frac else None, "series": series,
            "title": ("trials where %s" % args.where) if args.where else None}


def paired_curves(args):
    """--phase PARAM --pair [KEYS] and --robustness --pair [KEYS]: the curves' trials paired
    on the common axes (KEYS, default the file's common_keys) inside one file, as --pair
    pairs them, with the fraction consistent as the paired statistic (McNemar's exact test):
    per --by group, and per value of PARAM for --phase. --phase judges as phase_verdict
    chooses (--verdict), --robustness near_verdict. Returns (preamble lines, [Table])."""
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
            field = "near_verdict"
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


def output_format(args):
    """The output format: --format, else the extension of -o (.csv, .tex, .md, .parquet,
    .nc), else md."""
    if args.format:
        fmt = args.format
    elif args.output:
        ext = os.path.splitext(args.output)[1].lower()
        fmt = {".csv": "csv", ".tex": "latex", ".md": "md", ".parquet": "parquet",
               ".nc": "netcdf"}.get(ext, "md")
    else:
        fmt = "md"
    if fmt in BINARY_FORMATS and not args.output:
        raise UsageError("--format %s writes a file: give -o FILE" % fmt)
    return fmt


BINARY_FORMATS = ("parquet", "netcdf")


def write_table_file(tables, fmt, pre, path):
    """The csv of the tables (one table: the tidy csv) as a pandas frame, written as Parquet
    (pandas' to_parquet: needs pyarrow or fastparquet) or netCDF (xarray, one dimension `row`;
    netCDF 4 with python3-netcdf4, else netCDF 3 through python3-scipy, else netCDF 4 through
    python3-h5netcdf: xarray's own default never takes h5netcdf). Strings stay strings, empty
    cells of a text column become "", numbers keep NaN."""
    import io
    import pandas as pd
    df = pd.read_csv(io.StringIO(render(tables, "csv", pre)))
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].fillna("").astype(str)
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        if fmt == "parquet":
            try:
                df.to_parquet(tmp)
            except ImportError as e:
                raise schema.FileAccessError(
                    "cannot write %s: Parquet needs pyarrow or fastparquet (%s), which Debian 12 "
                    "does not package; write -o FILE.csv (or .nc) and convert it where pyarrow "
                    "is installed" % (path, str(e).split("\n")[0]))
        else:
            import attnsweep_frame
            engines = attnsweep_frame.netcdf_engines()
            engine = next((e for e in ("netcdf4", "scipy", "h5netcdf") if e in engines), None)
            if engine is None:
                raise schema.FileAccessError(
                    "cannot write %s: netCDF needs python3-netcdf4, python3-scipy or "
                    "python3-h5netcdf (apt-get install python3-netcdf4); or write -o FILE.csv"
                    % path)
            ds = df.rename_axis("row").to_xarray()
            ds.to_netcdf(tmp, engine=engine)
        os.replace(tmp, path)
    except OSError as e:
        raise schema.FileAccessError("cannot write %s: %s" % (path, e))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def many_tables(rfs, args):
    """Tables of several files, --stat or --pair: (preamble lines, [Table])."""
    by = parse_by(args.by) or []
    masks = [where_mask(rf, args.where) for rf in rfs]
    if args.pair is not None:
        keys = parse_by(args.pair) or []
        stats = parse_stat_tokens(rfs, args.stat) if args.stat else \
            default_pair_stats(rfs, masks)
        return pair_tables(rfs, keys, by, args.where, stats)
    if args.stat:
        return stat_tables(rfs, by, args.where, parse_stat_tokens(rfs, args.stat),
                           columns=args.columns)
    # several files, the default table: one table, the file as the first key
    labels = file_labels(rfs)
    if args.by is None:
        by = ["theorem"]
    settle = False
    for rf, mask in zip(rfs, masks):
        cols = rf.read([f for f in ("settle_time", "settle_window") if f in rf.fields])
        settle |= show_settle(cols, mask)
    dstats = default_stats(rfs, masks)
    pre, merged = [], None
    for rf, label in zip(rfs, labels):
        p, tables, _ = summary_tables(rf, by, args.where, settle=settle)
        pre += p
        t = tables[0]
        if dstats:
            mask = where_mask(rf, args.where)
            axes = [Axis(rf, a, rf.read([a])[a]) for a in by]
            gid, keys = make_groups(axes, mask)
            append_stat_columns(t, dstats, compute_stat_results(rf, dstats, mask, gid,
                                                                len(keys)))
        t.rows = [[label] + r for r in t.rows]
        t.csv_rows = [[label] + r for r in t.csv_rows]
        # LaTeX: the file (its name, not its directories) over the group in one text column
        tlab = latex_escape(os.path.basename(label) if os.sep in label else label)
        grouped = bool(by)
        t.tex_rows = [[r"%s\newline %s" % (tlab, r[0])] + r[1:] if grouped else [tlab] + r
                      for r in t.tex_rows]
        if merged is None:
            merged = t
            merged.header = ["file"] + t.header
            merged.csv_header = ["file"] + t.csv_header
            if grouped:
                merged.tex_cols = [(r"file\newline %s" % t.tex_cols[0][0], _TEX_TEXT)] + \
                    t.tex_cols[1:]
            else:
                merged.tex_cols = [("file", _TEX_TEXT)] + t.tex_cols
                merged.tex_span = (t.tex_span[0] + 1, t.tex_span[1] + 1, t.tex_span[2])
                merged.tex_wide = {j + 1 for j in t.tex_wide}
            merged.title = "by file, " + t.title
        else:
            merged.rows += t.rows
            merged.csv_rows += t.csv_rows
            merged.tex_rows += t.tex_rows
    return pre, [merged]


def _emit(args, fmt, pre, tables):
    if fmt in BINARY_FORMATS:
        write_table_file(tables, fmt, pre, args.output)
        for line in pre + [n for t in tables for n in t.notes]:
            print(line, file=sys.stderr)
        return 0
    text = render(tables, fmt, pre, args.width)
    if fmt == "csv":  # the csv is the table alone; what explains it goes to stderr
        for line in pre + [n for t in tables for n in t.notes]:
            print(line, file=sys.stderr)
    if args.output:
        try:
            with open(args.output, "w") as fh:
                fh.write(text)
        except OSError as e:
            raise schema.FileAccessError("cannot write %s: %s" % (args.output, e))
    else:
        sys.stdout.write(text)
    return 0


def _entry():
    rc = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # keep the interpreter's exit flush from printing a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        rc = rc or 3
    return rc


if __name__ == "__main__":
    sys.exit(_entry())
