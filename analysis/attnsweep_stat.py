"""Statistics of any record field for `attnsweep summarize --stat` and `--pair`.

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

import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402

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

    def __init__(self, field, kind, param=None, text=None):
        self.field, self.kind, self.param = field, kind, param
        self.text = text or kind

    @property
    def name(self):
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
    def title(self):
        """The md column header."""
        if self.kind == "frac":
            op, x = self.param
            return "%s %s %s" % (self.field, "==" if op == "=" else op, x)
        return "%s %s" % (self.field, self.text)

    @property
    def has_interval(self):
        return self.kind in ("median", "q", "mean", "frac")

    @property
    def indicator(self):
        return self.kind == "frac"


def _num_text(x):
    t = "%g" % x
    return t


def parse_stats(tokens, field_kind, labels=None, default=("median", "mean")):
    """[Stat] from FIELD[:STAT,...] tokens. field_kind(field) -> 'int', 'float', 'flag',
    'enum', 'bytes' (raises for an unknown field); labels(field) -> the labels of an enum."""
    out = []
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
    for s in out:
        if s.name not in seen:
            seen.add(s.name)
            uniq.append(s)
    return uniq


def _parse_one(field, kind, s, labels):
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


def fill_value(field, description):
    """The integer fill value of a field ("not applicable"), or None."""
    if field in schema.INT_FILL:
        return schema.INT_FILL[field]
    m = _FILL_RE.search(description or "")
    return int(m.group(1)) if m else None


def field_values(col, kind, fill=None):
    """A column as floats with NaN for "not applicable": flags as 0/1, integer fill values
    as NaN, enum codes as floats (compared by frac_values)."""
    v = np.asarray(col)
    if kind == "flag":
        return v.astype(float)
    out = v.astype(float)
    if kind == "int" and fill is not None:
        out[v == fill] = np.nan
    return out


def per_trial(stat, values, code=None):
    """The per-trial value a statistic summarises: the value itself, or for a fraction the
    0/1 indicator (NaN where the value is NaN). code: the enum code of '=LABEL'."""
    if stat.kind != "frac":
        return values
    op, x = stat.param
    with np.errstate(invalid="ignore"):
        if op == "=":
            ind = values == code
        else:
            ind = {">": np.greater, ">=": np.greater_equal, "<": np.less,
                   "<=": np.less_equal, "==": np.equal, "!=": np.not_equal}[op](values, x)
    out = ind.astype(float)
    out[np.isnan(values)] = np.nan
    return out


# ---------------------------------------------------------------- intervals
def _binom_ppf(p, m, q):
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


def quantile_ci(sorted_v, q, alpha=ALPHA):
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


def mean_ci(v):
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


def wilson(k, n, z=Z95):
    if n <= 0:
        return np.nan, np.nan, np.nan
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return p, min(max(c - h, 0.0), p), max(min(c + h, 1.0), p)


def sign_test(pos, neg):
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


def summarise(stat, v):
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


def grouped(stat, values, gid, ngroups):
    """summarise() for every group: list of dicts (values NaN are left out)."""
    ok = ~np.isnan(values)
    order = np.argsort(gid[ok], kind="stable")
    v = values[ok][order]
    g = gid[ok][order]
    bounds = np.searchsorted(g, np.arange(ngroups + 1))
    return [summarise(stat, v[bounds[i]:bounds[i + 1]]) for i in range(ngroups)]


def paired(stat, a, b):
    """Paired differences b - a of a statistic's per-trial values over the pairs where both
    are known: dict with pairs, mean_a, mean_b, diff_mean (+ lo, hi), diff_median (+ lo, hi)
    (not for indicators), pos, neg, zero, p (sign test; McNemar for indicators)."""
    ok = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[ok], b[ok]
    d = b - a
    m = len(d)
    out = {"pairs": m}
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
                "diff_median", "diff_median_lo", "diff_median_hi", "pos", "neg", "zero", "p")


# ---------------------------------------------------------------- default columns
def default_fields(present):
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
