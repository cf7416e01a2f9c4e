"""The statistics of the analysis: intervals and tests (one Wilson interval, order-statistic
intervals of quantiles, the bootstrap interval of a mean, the exact sign and McNemar tests,
from scipy.stats where it is installed and from their own sums where not), grouped quantiles,
and the statistics of any record field for `attnsweep summarize --stat` and `--pair`.

A statistic is asked for as FIELD[:STAT,...] (docs/analysis.md, "Any field: --stat"):

    median  mean  sd  min  max  n      qNN (the NN-th percentile: q25, q90, q99.5)
    gtX geX ltX leX eqX neX            the fraction of the values > X, >= X, < X, ... (also
                                       written >X, >=X, <X, <=X, ==X, !=X)
    =LABEL                             for an enumeration field: the fraction equal to LABEL

The values of a field are those of the trials that ran (outcome not pending) that the field
fills: NaN is "not applicable" for floats; for integers the fill value the field's description
names ("-1: none", "-1: not counted"; rank_p: 0) is left out. Intervals (95%):

* quantiles and the median: the distribution-free interval between two order statistics
  (x_(l), x_(u)) with l = F^-1(0.025), u = F^-1(0.975) + 1 for F the Binomial(m, q) cdf: it
  covers the true quantile with probability >= 95% for any continuous distribution; with too
  few values a bound does not exist and is left empty;
* the mean: the percentile bootstrap of scipy.stats.bootstrap (2000 resamples, seed 0, so the
  tables are reproducible); above 5000 values the normal interval mean +- 1.96 sd / sqrt(m);
* fractions: the Wilson score interval;
* sd, min, max, n: none.

Paired differences (--pair) are the per-pair differences b - a of the same per-trial value
(for a fraction: the 0/1 indicator, so the mean difference is the difference of the paired
proportions); their mean and median with the intervals above, and the two-sided exact sign
test (for indicators: the exact McNemar test, the same binomial test on the discordant pairs).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import schema

#: two-sided 95% normal quantile, Phi^{-1}(0.975)
Z95 = 1.959963984540054
ALPHA = 0.05
#: bootstrap resamples of the mean, and the sample size above which the normal interval is used
BOOT_RESAMPLES = 2000
BOOT_MAX = 5000

_NAMED = ("median", "mean", "sd", "min", "max", "n")
_CMP = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}
_CMP_RE = re.compile(r"^(gt|ge|lt|le|eq|ne|>=|<=|==|!=|>|<)(.+)$")
_Q_RE = re.compile(r"^q(\d+(?:\.\d+)?)$")
#: integer fill values ("not applicable") of the record fields: schema.INT_FILL; a file's own
#: description:<field> attribute "(-1: none)" is read for fields not listed there
_FILL_RE = re.compile(r"\((-?\d+): (?:none|not counted|not measured)")


class StatError(Exception):
    """A bad --stat or --pair (exit 2)."""


class Stat:
    """One statistic of one field: kind is one of _NAMED, 'q' (param: q in [0, 1]), 'frac'
    (param: (operator, threshold) or ('=', label))."""

    def __init__(self, field: str, kind: str, param: Any = None,
                 text: Optional[str] = None) -> None:
        self.field, self.kind, self.param = field, kind, param
        self.text = text or kind

    @property
    def name(self) -> str:
        """The column name: FIELD_STAT (csv), e.g. residual_median, residual_q90,
        n_clusters_gt1, verdict_eq_consistent."""
        if self.kind == "frac":
            op, x = self.param
            if op == "=":
                return "%s_eq_%s" % (self.field, x)
            inv = {v: k for k, v in _CMP.items()}
            return "%s_%s%s" % (self.field, inv[op], _num_text(x))
        if self.kind == "q":
            return "%s_q%s" % (self.field, _num_text(self.param * 100))
        return "%s_%s" % (self.field, self.kind)

    @property
    def title(self) -> str:
        """The md column header."""
        if self.kind == "frac":
            op, x = self.param
            return "%s %s %s" % (self.field, "==" if op == "=" else op, x)
        return "%s %s" % (self.field, self.text)

    @property
    def has_interval(self) -> bool:
        return self.kind in ("median", "q", "mean", "frac")

    @property
    def indicator(self) -> bool:
        return self.kind == "frac"


def _num_text(x: float) -> str:
    t = "%g" % x
    return t


def parse_stats(tokens: Iterable[str], field_kind: Callable[[str], str],
                labels: Optional[Callable[[str], List[str]]] = None,
                default: Sequence[str] = ("median", "mean")) -> List["Stat"]:
    """[Stat] from FIELD[:STAT,...] tokens. field_kind(field) -> 'int', 'float', 'flag',
    'enum', 'bytes' (raises for an unknown field); labels(field) -> the labels of an enum."""
    out: List[Stat] = []
    for tok in tokens:
        for part in [t for t in tok.split() if t]:
            field, sep, rest = part.partition(":")
            if not field:
                raise StatError("--stat '%s': no field before ':'" % part)
            kind = field_kind(field)
            if kind == "bytes":
                raise StatError("--stat: '%s' is text, not a number" % field)
            stats = [s.strip() for s in rest.split(",")] if sep else []
            if sep and not all(stats):
                raise StatError("--stat '%s': an empty statistic" % part)
            if not stats:
                if kind == "enum":
                    raise StatError("--stat: '%s' is an enumeration: ask for the fraction of "
                                    "a label, e.g. %s:=%s" % (
                                        field, field, (labels(field) if labels else ["L"])[0]))
                stats = list(default)
            for s in stats:
                out.append(_parse_one(field, kind, s, labels))
    seen = set()
    uniq = []
    for st in out:
        if st.name not in seen:
            seen.add(st.name)
            uniq.append(st)
    return uniq


def _parse_one(field: str, kind: str, s: str,
               labels: Optional[Callable[[str], List[str]]]) -> "Stat":
    if kind == "enum":
        if not s.startswith("="):
            raise StatError("--stat %s:%s: an enumeration has only fractions of a label, "
                            "%s:=LABEL" % (field, s, field))
        lab = s[1:].lstrip("=")
        valid = labels(field) if labels else []
        if lab not in valid:
            raise StatError("--stat %s:=%s: '%s' is not a value of %s (one of: %s)" % (
                field, lab, lab, field, ", ".join(valid)))
        return Stat(field, "frac", ("=", lab))
    if s in _NAMED:
        return Stat(field, s)
    m = _Q_RE.match(s)
    if m:
        q = float(m.group(1)) / 100.0
        if not 0.0 <= q <= 1.0:
            raise StatError("--stat %s:%s: a percentile is between q0 and q100" % (field, s))
        if q == 0.5:
            return Stat(field, "median")
        return Stat(field, "q", q, "q" + m.group(1))
    m = _CMP_RE.match(s)
    if m:
        op = _CMP.get(m.group(1), m.group(1))
        try:
            x = float(m.group(2))
        except ValueError:
            raise StatError("--stat %s:%s: '%s' is not a number" % (field, s, m.group(2)))
        return Stat(field, "frac", (op, x))
    raise StatError("--stat %s:%s: unknown statistic (median, mean, sd, min, max, n, qNN, "
                    "gtX, geX, ltX, leX, eqX, neX, or =LABEL for an enumeration)" % (field, s))


def fill_value(field: str, description: Optional[str]) -> Optional[int]:
    """The integer fill value of a field ("not applicable"), or None."""
    if field in schema.INT_FILL:
        return schema.INT_FILL[field]
    m = _FILL_RE.search(description or "")
    return int(m.group(1)) if m else None


def field_values(col: np.ndarray, kind: str, fill: Optional[int] = None) -> np.ndarray:
    """A column as floats with NaN for "not applicable": flags as 0/1, integer fill values
    as NaN, enum codes as floats (compared by frac_values)."""
    v = np.asarray(col)
    if kind == "flag":
        return v.astype(float)
    out = v.astype(float)
    if kind == "int" and fill is not None:
        out[v == fill] = np.nan
    return out


def per_trial(stat: "Stat", values: np.ndarray, code: Optional[int] = None) -> np.ndarray:
    """The per-trial value a statistic summarises: the value itself, or for a fraction the
    0/1 indicator (NaN where the value is NaN). code: the enum code of '=LABEL'."""
    if stat.kind != "frac":
        return values
    op, x = stat.param
    with np.errstate(invalid="ignore"):
        if op == "=":
            ind = values == code
        else:
            fns: Dict[str, Any] = {">": np.greater, ">=": np.greater_equal, "<": np.less,
                                   "<=": np.less_equal, "==": np.equal, "!=": np.not_equal}
            ind = fns[op](values, x)
    out = ind.astype(float)
    out[np.isnan(values)] = np.nan
    return out


# ---------------------------------------------------------------- intervals
def _binom_ppf(p: float, m: int, q: float) -> int:
    """Smallest k with P(Binomial(m, q) <= k) >= p."""
    try:
        from scipy.stats import binom
        return int(binom.ppf(p, m, q))
    except ImportError:
        acc = 0.0
        for k in range(m + 1):
            acc += math.comb(m, k) * q ** k * (1 - q) ** (m - k)
            if acc >= p - 1e-12:
                return k
        return m


def quantile_ci(sorted_v: np.ndarray, q: float, alpha: float = ALPHA) -> Tuple[float, float]:
    """The distribution-free (1 - alpha) interval of the q-quantile from sorted values:
    (x_(l), x_(u)), 1-based, l = F^-1(alpha/2), u = F^-1(1 - alpha/2) + 1 for the
    Binomial(m, q) cdf F; NaN for a bound that needs an order statistic outside 1..m."""
    m = len(sorted_v)
    if m == 0:
        return np.nan, np.nan
    lo_i = _binom_ppf(alpha / 2, m, q)
    hi_i = _binom_ppf(1 - alpha / 2, m, q) + 1
    lo = sorted_v[lo_i - 1] if lo_i >= 1 else np.nan
    hi = sorted_v[hi_i - 1] if hi_i <= m else np.nan
    return float(lo), float(hi)


def mean_ci(v: np.ndarray) -> Tuple[float, float]:
    """(1 - ALPHA) interval of the mean: percentile bootstrap (scipy.stats.bootstrap, seed 0)
    up to BOOT_MAX values, else the normal interval; NaN for fewer than 2 values or without
    scipy."""
    m = len(v)
    if m < 2:
        return np.nan, np.nan
    if np.all(v == v[0]):
        return float(v[0]), float(v[0])
    if m > BOOT_MAX:
        h = Z95 * float(np.std(v, ddof=1)) / math.sqrt(m)
        mu = float(np.mean(v))
        return mu - h, mu + h
    try:
        from scipy.stats import bootstrap
    except ImportError:
        return np.nan, np.nan
    res = bootstrap((v,), np.mean, n_resamples=BOOT_RESAMPLES, method="percentile",
                    confidence_level=1 - ALPHA, vectorized=True, axis=-1,
                    random_state=np.random.default_rng(0))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def wilson(k: Any, n: Any, z: float = Z95) -> Tuple[Any, Any, Any]:
    """THE Wilson score interval of the analysis, for k successes in n trials: (p, lo, hi) with
    lo, hi = (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n) (Wilson 1927; the same
    bounds as scipy.stats.binomtest(k, n).proportion_ci(method="wilson"), which the tests
    check), NaN where n = 0. Vectorised: arrays in, arrays out; scalars in, floats out. Always
    0 <= lo <= p <= hi <= 1: at k = 0 or k = n the bound that equals p in exact arithmetic can
    land one ulp on the wrong side of it (80/80 gives hi = 1 - 2^-53), so the bounds are
    clamped to p as well as to [0, 1]."""
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    kk = np.atleast_1d(np.asarray(k, dtype=float))
    nn = np.atleast_1d(np.asarray(n, dtype=float))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = kk / nn
        z2 = z * z
        den = 1.0 + z2 / nn
        center = (p + z2 / (2 * nn)) / den
        half = z / den * np.sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn))
        lo = np.clip(np.minimum(center - half, p), 0.0, 1.0)
        hi = np.clip(np.maximum(center + half, p), 0.0, 1.0)
    bad = np.broadcast_to(nn <= 0, p.shape)
    p, lo, hi = (np.where(bad, np.nan, a) for a in (p, lo, hi))
    if scalar:
        return float(p[0]), float(lo[0]), float(hi[0])
    return p, lo, hi


def group_quantiles(values: np.ndarray, gid: np.ndarray, ngroups: int,
                    qs: Sequence[float]) -> Tuple[np.ndarray, np.ndarray]:
    """Quantiles (linear interpolation between order statistics, Hyndman-Fan type 7, numpy's
    default) of `values` within each group. values: float array (NaN = excluded); gid: group
    of each value. Returns (ngroups, len(qs)) array (NaN for empty groups) and the counts."""
    ok = ~np.isnan(values)
    v = values[ok]
    g = gid[ok]
    counts = np.bincount(g, minlength=ngroups)
    starts = np.cumsum(counts) - counts
    if ngroups < 1 << 15:
        # the rows in group order (a stable radix sort of 16-bit group ids), then each group's
        # values sorted alone: two to three times faster than lexsort on 10^6 rows
        vs = v[np.argsort(g.astype(np.int16), kind="stable")]
        for i in np.nonzero(counts > 1)[0]:
            a, b = starts[i], starts[i] + counts[i]
            vs[a:b] = np.sort(vs[a:b])
    else:
        vs = v[np.lexsort((v, g))]
    out = np.full((ngroups, len(qs)), np.nan)
    has = counts > 0
    for j, q in enumerate(qs):
        pos = starts[has] + q * (counts[has] - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, starts[has] + counts[has] - 1)
        frac = pos - lo
        out[has, j] = vs[lo] + (vs[hi] - vs[lo]) * frac
    return out, counts


def sign_test(pos: int, neg: int) -> float:
    """Two-sided exact binomial test of pos successes in pos + neg trials at 1/2."""
    n = pos + neg
    if n == 0:
        return np.nan
    try:
        from scipy.stats import binomtest
        return float(binomtest(pos, n, 0.5).pvalue)
    except ImportError:
        k = min(pos, neg)
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
        return min(1.0, 2 * tail)


def summarise(stat: "Stat", v: Any) -> Dict[str, Any]:
    """A statistic of one sample v (finite values only; NaN already removed): dict with
    value, lo, hi, n (and k for fractions)."""
    v = np.asarray(v, dtype=float)
    m = len(v)
    out = {"n": m, "value": np.nan, "lo": np.nan, "hi": np.nan}
    if m == 0:
        return out
    if stat.kind == "n":
        out["value"] = m
    elif stat.kind in ("median", "q"):
        q = 0.5 if stat.kind == "median" else stat.param
        s = np.sort(v)
        out["value"] = float(np.quantile(s, q))
        out["lo"], out["hi"] = quantile_ci(s, q)
    elif stat.kind == "mean":
        out["value"] = float(np.mean(v))
        out["lo"], out["hi"] = mean_ci(v)
    elif stat.kind == "sd":
        out["value"] = float(np.std(v, ddof=1)) if m >= 2 else np.nan
    elif stat.kind == "min":
        out["value"] = float(np.min(v))
    elif stat.kind == "max":
        out["value"] = float(np.max(v))
    elif stat.kind == "frac":
        k = int(np.sum(v))
        out["k"] = k
        out["value"], out["lo"], out["hi"] = wilson(k, m)
    return out


def grouped(stat: "Stat", values: np.ndarray, gid: np.ndarray,
            ngroups: int) -> List[Dict[str, Any]]:
    """summarise() for every group: list of dicts (values NaN are left out)."""
    ok = ~np.isnan(values)
    order = np.argsort(gid[ok], kind="stable")
    v = values[ok][order]
    g = gid[ok][order]
    bounds = np.searchsorted(g, np.arange(ngroups + 1))
    return [summarise(stat, v[bounds[i]:bounds[i + 1]]) for i in range(ngroups)]


def paired(stat: "Stat", a: np.ndarray, b: np.ndarray) -> Dict[str, Any]:
    """Paired differences b - a of a statistic's per-trial values over the pairs where both
    are known (for a verdict fraction: judged on both sides, rule.py): dict with pairs,
    excluded (the pairs left out: a value unknown on a side, a verdict not judged), mean_a, mean_b, diff_mean (+ lo, hi), diff_median (+ lo, hi)
    (not for indicators), pos, neg, zero, p (sign test; McNemar for indicators)."""
    ok = ~np.isnan(a) & ~np.isnan(b)
    excluded = int(np.sum(~ok))
    a, b = a[ok], b[ok]
    d = b - a
    m = len(d)
    out: Dict[str, Any] = {"pairs": m, "excluded": excluded}
    nan = np.nan
    out["mean_a"] = float(np.mean(a)) if m else nan
    out["mean_b"] = float(np.mean(b)) if m else nan
    out["diff_mean"] = float(np.mean(d)) if m else nan
    out["diff_mean_lo"], out["diff_mean_hi"] = mean_ci(d) if m else (nan, nan)
    if stat.indicator:
        out["diff_median"] = out["diff_median_lo"] = out["diff_median_hi"] = nan
    else:
        s = np.sort(d)
        out["diff_median"] = float(np.median(s)) if m else nan
        out["diff_median_lo"], out["diff_median_hi"] = quantile_ci(s, 0.5) if m else (nan, nan)
    out["pos"] = int(np.sum(d > 0))
    out["neg"] = int(np.sum(d < 0))
    out["zero"] = int(np.sum(d == 0))
    out["p"] = sign_test(out["pos"], out["neg"])
    return out


PAIR_COLUMNS = ("pairs", "mean_a", "mean_b", "diff_mean", "diff_mean_lo", "diff_mean_hi",
                "diff_median", "diff_median_lo", "diff_median_hi", "pos", "neg", "zero", "p",
                "excluded")


# ---------------------------------------------------------------- default columns
def default_fields(present: Callable[[str], bool]) -> List[str]:
    """The fields a summary shows without --stat for what the sweep holds: present(name) says
    whether the selection has a feature. Returns [FIELD[:STAT]] tokens."""
    out = []
    if present("blocks"):  # heads, skip, feed-forward, per-layer weights, layers
        out += ["residual:median", "n_clusters_track:median", "rank_p_head_min:median"]
    if present("sinkhorn"):
        out += ["sinkhorn_dev:median,max", "residual:median"]
    if present("sphere"):
        out += ["n_plateaus:median", "plateau_length:median", "t_last_merge:median",
                "n_clusters_track:median"]
    if present("measure"):
        out += ["mass_1:mean", "mass_2:mean", "hull_vertices:median", "ref_w1:median"]
    return out
