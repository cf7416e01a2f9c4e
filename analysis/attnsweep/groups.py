"""Grouping: the axes of a table (--by, --phase, a hypothesis distance), the baseline of a
perturbation joined to every curve, and the groups that combinations of axes make."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import schema
from .errors import UsageError
from .schema import Results
from .stats import group_quantiles


def round10(values: np.ndarray) -> np.ndarray:
    """Values rounded to 10 significant digits (as float("%.10g" % v)), NaN kept: distances
    equal to 10 digits are one value. Exact through the text of each distinct value; beyond
    10^5 distinct values (a 10^6-trial sweep) by scaling, which agrees but at exact halves."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    out = v.copy()
    if not ok.any():
        return out
    u, inv = np.unique(v[ok], return_inverse=True)
    if len(u) <= 100000:
        r = np.array([float("%.10g" % x) for x in u])
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            e = np.floor(np.log10(np.abs(u)))
            scale = np.power(10.0, 9 - np.where(np.isfinite(e), e, 0))
            r = np.where(u == 0, 0.0, np.round(u * scale) / scale)
    out[ok] = r[inv.ravel()]
    return out


def fmt_num(v: Any) -> str:
    """A value as a table shows it: %g for floats, "n/a" for NaN."""
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "n/a"
        return "%g" % v
    return str(v)


class Axis:
    """One grouping axis: codes per row, and the label of each code."""

    def __init__(self, rf: Results, name: str, col: np.ndarray,
                 bins: Optional[int] = None) -> None:
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
                self.labels = ["[%s, %s%s" % (fmt_num(edges[i]), fmt_num(edges[i + 1]),
                                               "]" if i == len(edges) - 2 else ")")
                               for i in range(len(edges) - 1)]
                codes = idx.astype(np.int64)
                # x of each bin: the median of the values in it
                meds, _ = group_quantiles(np.where(nan, np.nan, col), codes, len(self.labels),
                                          [0.5])
                self.values = list(meds[:, 0])
            else:
                codes = np.searchsorted(uniq, col).astype(np.int64)
                self.labels = [fmt_num(u) for u in uniq]
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

    def __init__(self, name: str, col: np.ndarray, bins: int) -> None:
        self.name, self.kind, self.centers = name, "float", None
        col = np.asarray(col, dtype=float)
        nan = np.isnan(col)
        r = round10(col)
        uniq = np.unique(r[~nan])
        codes = np.zeros(len(col), dtype=np.int64)
        self.labels, self.values = [], []
        self.bounds = []  # (lo, hi) of each point, exact: a bin [lo, hi), the last [lo, hi]
        if len(uniq) <= bins:
            codes[~nan] = np.searchsorted(uniq, r[~nan])
            self.labels = [fmt_num(u) for u in uniq]
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
                    labs = [fmt_num(x) for x in u]
                    meds = list(u)
                    bnds = [(x, x) for x in u]
                else:
                    edges = np.unique(np.quantile(v, np.linspace(0, 1, nb + 1)))
                    idx = np.clip(np.searchsorted(edges, r[sel_all], side="right") - 1, 0,
                                  len(edges) - 2)
                    labs = ["[%s, %s%s" % (fmt_num(edges[i]), fmt_num(edges[i + 1]),
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


def join_baselines(rf: Results, axes: List[Any], which: Sequence[int],
                   mask: np.ndarray) -> Tuple[np.ndarray, List[Any], Dict[str, int]]:
    """The baseline of a perturbation belongs to every curve it is the baseline of: a trial at
    eps = 0 records the keys that say what eps perturbs (`perturb`) as not applicable (`-`),
    and for each axis among `which` (indices into axes) such trials are counted once in each
    of the axis' other values instead of a `-` group of their own (--phase, --robustness).
    Returns (rows: the selected row indices, a baseline row repeated once per curve, the axes
    re-coded over those rows, {axis name: baseline trials joined}). Axes without `-` rows at
    eps = 0, or without another value, are left as they are."""
    rows = np.nonzero(mask)[0]
    codes = [np.asarray(a.codes)[rows] for a in axes]
    joined: Dict[str, int] = {}
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


def baseline_note(joined: Dict[str, int]) -> List[str]:
    """The header line that says which baselines joined which curves."""
    return ["baseline: the %s trials at eps = 0 (%s not applicable, `-`) are counted in every "
            "curve of that axis, as its eps = 0 point" % (
                " and ".join("%d" % n for n in joined.values()), ", ".join(joined))]


def make_groups(axes: Sequence[Any], mask: np.ndarray) -> Tuple[np.ndarray, List[Tuple[int, ...]]]:
    """Combine axes into groups over the rows in mask. Returns (gid per selected row, keys: list
    of tuples of axis code indices, in lexicographic order of the axes)."""
    n = int(mask.sum())
    if not axes:
        return np.zeros(n, dtype=np.int64), [()]
    dims = [len(a.labels) for a in axes]
    combo = np.ravel_multi_index([a.codes[mask] for a in axes], dims)
    uniq, gid = np.unique(combo, return_inverse=True)
    unravel: Any = np.unravel_index(uniq, dims)
    keys = list(zip(*unravel)) if len(uniq) else []
    return gid.astype(np.int64), [tuple(int(i) for i in k) for k in keys]


