#!/usr/bin/python3
"""Tests of `attnsweep summarize --stat`, several files and `--pair` (analysis/attnsweep_stat.py
and its use in attnsweep_summarize.py) on synthetic results files written with the dtype of
include/attnsweep/record.h. Expected values are computed here from the rows by hand (lists,
math.comb, a brute-force convex hull), not by the module. attnsweep_stat computes binomial
quantiles and the sign test with scipy.stats where it is installed and with its own sums where
not, and the bootstrap interval of a mean only with scipy: each test of them runs both ways
(scipy hidden for the second), the first skipped, naming python3-scipy, where it is missing.
"""

import contextlib
import csv
import io
import itertools
import math
import os
import statistics
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock

import numpy as np
import h5py

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402
from attnsweep import layout  # noqa: E402
import attnsweep_stat as fstat  # noqa: E402
import attnsweep_summarize as summ  # noqa: E402
import optional  # noqa: E402

INCLUDE = os.path.join(SRC, "include")
LABELS = layout.enum_labels()
DTYPE = layout.record_dtype()


def code(field, label):
    return LABELS[field].index(label)


@contextlib.contextmanager
def scipy_path(with_scipy):
    """One way of attnsweep_stat: with scipy.stats (SkipTest naming the package where it is
    missing) or with scipy hidden (its fallback). Use inside a subTest:
    `for s in (True, False): with self.subTest(scipy=s), scipy_path(s): ...`."""
    if with_scipy:
        if not optional.have("scipy.stats"):
            raise unittest.SkipTest(optional.missing("scipy.stats"))
        yield
    else:
        with mock.patch.dict(sys.modules, {"scipy": None, "scipy.stats": None}):
            yield


def hull_vertices_2d(X):
    """The vertices of the convex hull of points in general position in the plane, by brute
    force: a point is one unless it lies in a triangle of three others."""
    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def inside(p, a, b, c):
        s = [cross(a, b, p), cross(b, c, p), cross(c, a, p)]
        return all(x > 0 for x in s) or all(x < 0 for x in s)

    return sum(1 for i, p in enumerate(X)
               if not any(inside(p, *t) for t in itertools.combinations(
                   [q for j, q in enumerate(X) if j != i], 3)))


def binom_cdf(k, n, q):
    return sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(0, k + 1))


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = summ.main(argv)
    return rc, out.getvalue(), err.getvalue()


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def write(path, a, spec_name=None, common=None):
    with h5py.File(path, "w") as f:
        f.create_dataset("trials", data=a)
        f.attrs["n_trials"] = np.uint64(len(a))
        if spec_name:
            f.attrs["spec_name"] = spec_name
        if common is not None:
            f.attrs["common_keys"] = common


def sweep(rng, replicates=6, Ts=(5.0, 50.0)):
    """A sweep replicate x d x T x attention (sinkhorn_iters a function of attention): rows
    and, per row, the facts the references use. residual ~ U(0, 1); n_clusters 1..6;
    n_plateaus -1 (none) on every third row; verdict consistent or violated."""
    rows = []
    for r in range(replicates):
        for d in (2, 3):
            for T in Ts:
                for att in ("softmax", "sinkhorn"):
                    rows.append((r, d, T, att))
    a = np.zeros(len(rows), dtype=DTYPE)
    for f in DTYPE.names:
        if DTYPE[f].kind == "f":
            a[f] = np.nan
    for i, (r, d, T, att) in enumerate(rows):
        a["trial"][i] = i
        a["replicate"][i] = r
        a["d"][i] = d
        a["n"][i] = 20
        a["T"][i] = T
        a["attention"][i] = code("attention", att)
        a["sinkhorn_iters"][i] = 100 if att == "sinkhorn" else -1
        a["outcome"][i] = code("outcome", "reached_T")
        a["verdict"][i] = code("verdict", "consistent" if rng.random() < 0.6 else "violated")
        a["theorem"][i] = code("theorem", "identity")
        a["residual"][i] = rng.random()
        a["n_clusters"][i] = rng.integers(1, 7)
        a["n_plateaus"][i] = -1 if i % 3 == 0 else rng.integers(0, 4)
    return a


class StatMathTest(unittest.TestCase):
    def test_quantile_interval_coverage(self):
        for with_scipy in (True, False):
            with self.subTest(scipy=with_scipy), scipy_path(with_scipy):
                self.check_quantile_interval_coverage()

    def check_quantile_interval_coverage(self):
        # the order statistics (l, u) cover the q-quantile with P(l <= B <= u - 1) >= 95%,
        # B ~ Binomial(m, q): computed here with math.comb
        for q in (0.25, 0.5, 0.9):
            for m in range(1, 61):
                s = np.arange(1.0, m + 1)  # x_(k) = k
                lo, hi = fstat.quantile_ci(s, q)
                l = 0 if math.isnan(lo) else int(lo)
                u = m + 1 if math.isnan(hi) else int(hi)
                cover = binom_cdf(u - 1, m, q) - (binom_cdf(l - 1, m, q) if l >= 1 else 0.0)
                self.assertGreaterEqual(cover, 0.95 - 1e-12, (q, m, l, u))
                if l >= 1 and u <= m:
                    self.assertLess(l, u)
        # textbook: the 95% interval of the median of 10 values is (x_(2), x_(9))
        self.assertEqual(fstat.quantile_ci(np.arange(1.0, 11), 0.5), (2.0, 9.0))
        # five values cannot bound the median at 95% (P(B = 0) = 1/32 > 0.025)
        lo, hi = fstat.quantile_ci(np.arange(1.0, 6), 0.5)
        self.assertTrue(math.isnan(lo) and math.isnan(hi))

    def test_one_wilson(self):
        # the one Wilson interval of the analysis (issue 48, fault 9: it was written twice):
        # the --stat fractions, the verdict tables and the older names all use it, vectorised
        # and on scalars, and scipy.stats' Wilson bounds are its bounds
        import attnsweep.stats
        import attnsweep_summarize as summ
        self.assertIs(fstat.wilson, attnsweep.stats.wilson)
        self.assertIs(summ.wilson, attnsweep.stats.wilson)
        ks, ns = np.meshgrid(np.arange(0, 41), np.arange(1, 41))
        ok = ks <= ns
        p, lo, hi = fstat.wilson(ks[ok], ns[ok])
        for k, n, pv, lv, hv in zip(ks[ok], ns[ok], p, lo, hi):
            self.assertEqual(fstat.wilson(int(k), int(n)), (pv, lv, hv))
        self.assertTrue(all(math.isnan(x) for x in fstat.wilson(0, 0)))
        if not optional.have("scipy.stats"):
            self.skipTest(optional.missing("scipy.stats"))
        from scipy.stats import binomtest
        for k, n, lv, hv in zip(ks[ok], ns[ok], lo, hi):
            ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=0.95,
                                                         method="wilson")
            self.assertAlmostEqual(lv, ci.low, places=12, msg="%d/%d" % (k, n))
            self.assertAlmostEqual(hv, ci.high, places=12, msg="%d/%d" % (k, n))

    def test_fill_values_follow_record_h(self):
        # every integer field whose description (record.h, as `attnsweep help fields --json`
        # prints it) names a fill value "(-1: none)" or "(-1: not counted)" has that fill
        # value, also in a file without descriptions
        import re
        found = [(f["name"], m.group(1)) for f in layout.fields() if f["kind"] == "I32"
                 for m in [re.search(r"\((-1): (?:none|not counted)", f["doc"])] if m]
        self.assertGreaterEqual(len(found), 5)
        for field, fill in found:
            self.assertEqual(fstat.fill_value(field, None), int(fill), field)
        self.assertEqual(fstat.fill_value("rank_p", None), 0)

    def test_sign_test(self):
        for with_scipy in (True, False):
            with self.subTest(scipy=with_scipy), scipy_path(with_scipy):
                for pos, neg in ((0, 0), (3, 0), (7, 2), (10, 10), (1, 12)):
                    n = pos + neg
                    if n == 0:
                        self.assertTrue(math.isnan(fstat.sign_test(pos, neg)))
                        continue
                    k = min(pos, neg)
                    ref = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
                    self.assertAlmostEqual(fstat.sign_test(pos, neg), ref, places=12)

    def test_mean_interval(self):
        rng = np.random.default_rng(1)
        v = rng.normal(3.0, 1.0, 200)
        half = 1.96 * np.std(v, ddof=1) / math.sqrt(len(v))
        big = rng.normal(3.0, 1.0, fstat.BOOT_MAX + 1)
        for with_scipy in (True, False):
            with self.subTest(scipy=with_scipy), scipy_path(with_scipy):
                lo, hi = fstat.mean_ci(v)
                if not with_scipy:  # no bootstrap: no interval (docs/analysis.md)
                    self.assertTrue(math.isnan(lo) and math.isnan(hi))
                else:
                    # percentile bootstrap ~ normal interval for 200 normal values: within 20%
                    self.assertLess(lo, np.mean(v))
                    self.assertGreater(hi, np.mean(v))
                    self.assertAlmostEqual((hi - lo) / 2, half, delta=0.2 * half)
                    self.assertEqual(fstat.mean_ci(v), (lo, hi))  # seeded: reproducible
                # beyond BOOT_MAX values the normal interval, with or without scipy
                lo, hi = fstat.mean_ci(big)
                h = fstat.Z95 * np.std(big, ddof=1) / math.sqrt(len(big))
                self.assertAlmostEqual(lo, np.mean(big) - h, places=12)
                self.assertAlmostEqual(hi, np.mean(big) + h, places=12)

    def test_parse(self):
        kinds = {"residual": "float", "n_clusters": "int", "verdict": "enum", "message": "bytes"}

        def kind(f):
            if f not in kinds:
                raise summ.UsageError("no field '%s'" % f)
            return kinds[f]
        st = fstat.parse_stats(["residual:median,q90,gt0.5,>=0.25", "n_clusters"], kind,
                               lambda f: LABELS[f])
        self.assertEqual([s.name for s in st],
                         ["residual_median", "residual_q90", "residual_gt0.5",
                          "residual_ge0.25", "n_clusters_median", "n_clusters_mean"])
        st = fstat.parse_stats(["verdict:=consistent"], kind, lambda f: LABELS[f])
        self.assertEqual(st[0].name, "verdict_eq_consistent")
        for bad in ("residual:mode", "verdict", "verdict:=nope", "message", "residual:q150",
                    "residual:gtx"):
            with self.assertRaises(fstat.StatError, msg=bad):
                fstat.parse_stats([bad], kind, lambda f: LABELS[f])


class SummarizeStatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(5)
        cls.a = sweep(rng)
        cls.path = os.path.join(cls.tmp.name, "sweep.h5")
        write(cls.path, cls.a)
        cls.common = os.path.join(cls.tmp.name, "common.h5")
        write(cls.common, cls.a, common="T, attention")
        # two files of the same trials: b = a with residual + 0.1 on even trials
        cls.fa = os.path.join(cls.tmp.name, "softmax.h5")
        cls.fb = os.path.join(cls.tmp.name, "sinkhorn.h5")
        one = cls.a[cls.a["attention"] == code("attention", "softmax")].copy()
        one["trial"] = np.arange(len(one))
        two = one.copy()
        two["attention"] = code("attention", "sinkhorn")
        two["sinkhorn_iters"] = 100
        two["residual"] = one["residual"] + np.where(np.arange(len(one)) % 2 == 0, 0.1, -0.05)
        cls.one, cls.two = one, two
        write(cls.fa, one, spec_name="softmax")
        write(cls.fb, two, spec_name="sinkhorn")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_stat_by_group(self):
        for with_scipy in (True, False):
            with self.subTest(scipy=with_scipy), scipy_path(with_scipy):
                self.check_stat_by_group(with_scipy)

    def check_stat_by_group(self, with_scipy):
        rc, out, _ = run_main([self.path, "--stat", "residual:median,mean,q90,gt0.5,max",
                               "n_plateaus:mean", "verdict:=consistent", "--by", "d",
                               "--format", "csv"])
        self.assertEqual(rc, 0)
        rows = csv_rows(out)
        self.assertEqual([r["d"] for r in rows], ["2", "3"])
        for r in rows:
            sel = self.a[self.a["d"] == int(r["d"])]
            res = sorted(sel["residual"])
            self.assertEqual(int(r["trials"]), len(sel))
            self.assertAlmostEqual(float(r["residual_median"]), statistics.median(res), 12)
            self.assertAlmostEqual(float(r["residual_mean"]), statistics.fmean(res), 12)
            self.assertAlmostEqual(float(r["residual_max"]), max(res), 12)
            self.assertAlmostEqual(float(r["residual_q90"]),
                                   statistics.quantiles(res, n=10, method="inclusive")[-1], 12)
            self.assertAlmostEqual(float(r["residual_gt0.5"]),
                                   sum(x > 0.5 for x in res) / len(res), 12)
            self.assertLessEqual(float(r["residual_median_lo"]), float(r["residual_median"]))
            self.assertGreaterEqual(float(r["residual_median_hi"]),
                                    float(r["residual_median"]))
            if with_scipy:
                self.assertLess(float(r["residual_mean_lo"]), float(r["residual_mean"]))
            else:  # the bootstrap interval needs scipy: an empty cell without it
                self.assertEqual(r["residual_mean_lo"], "")
            # -1 (none) is not a value of n_plateaus
            pl = [x for x in sel["n_plateaus"] if x != -1]
            self.assertEqual(int(r["n_plateaus_n"]), len(pl))
            self.assertAlmostEqual(float(r["n_plateaus_mean"]), statistics.fmean(pl), 12)
            cons = sum(v == code("verdict", "consistent") for v in sel["verdict"])
            self.assertAlmostEqual(float(r["verdict_eq_consistent"]), cons / len(sel), 12)
        for fmt in ("md", "latex"):
            rc, out, _ = run_main([self.path, "--stat", "residual", "--format", fmt])
            self.assertEqual(rc, 0)
            self.assertIn("residual", out)

    def test_output_format_from_extension(self):
        for ext, probe in ((".csv", "trials,residual_median"), (".tex", "\\begin{tabularx}"),
                           (".md", "| trials |")):
            out = os.path.join(self.tmp.name, "t" + ext)
            rc, _, _ = run_main([self.path, "--stat", "residual:median", "-o", out])
            self.assertEqual(rc, 0)
            with open(out) as fh:
                self.assertIn(probe, fh.read())

    def test_pair_within_one_file(self):
        rc, out, err = run_main([self.path, "--pair", "attention", "--stat", "residual",
                                 "verdict:=consistent", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual((r["a"], r["b"]), ("attention = softmax", "attention = sinkhorn"))
        # the reference pairs: same replicate, d, T (sinkhorn_iters is not matched on)
        idx = {}
        for row in self.a:
            idx[(row["replicate"], row["d"], row["T"], row["attention"])] = row
        diffs, va, vb = [], [], []
        for (rep, d, T, att), row in idx.items():
            if att == code("attention", "softmax"):
                other = idx[(rep, d, T, code("attention", "sinkhorn"))]
                diffs.append(other["residual"] - row["residual"])
                va.append(row["verdict"] == code("verdict", "consistent"))
                vb.append(other["verdict"] == code("verdict", "consistent"))
        self.assertEqual(int(r["pairs"]), len(diffs))
        self.assertAlmostEqual(float(r["residual_diff_mean"]), statistics.fmean(diffs), 12)
        self.assertAlmostEqual(float(r["residual_diff_median"]), statistics.median(diffs), 12)
        pos, neg = sum(x > 0 for x in diffs), sum(x < 0 for x in diffs)
        self.assertEqual((int(r["residual_pos"]), int(r["residual_neg"])), (pos, neg))
        n = pos + neg
        p = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(pos, neg) + 1)) / 2 ** n)
        self.assertAlmostEqual(float(r["residual_p"]), p, 12)
        b = sum(x and not y for x, y in zip(va, vb))  # consistent -> not
        c = sum(y and not x for x, y in zip(va, vb))
        self.assertEqual((int(r["verdict_eq_consistent_pos"]),
                          int(r["verdict_eq_consistent_neg"])), (c, b))
        self.assertAlmostEqual(float(r["verdict_eq_consistent_diff_mean"]),
                               (c - b) / len(va), 12)
        # grouped by a matched coordinate: the pairs split by d
        rc, out, _ = run_main([self.path, "--pair", "attention", "--stat", "residual",
                               "--by", "d", "--format", "csv"])
        self.assertEqual([int(x["pairs"]) for x in csv_rows(out)], [len(diffs) // 2] * 2)
        # two keys: three comparisons against the first level
        rc, out, _ = run_main([self.path, "--pair", "T,attention", "--stat", "residual",
                               "--format", "csv"])
        rows = csv_rows(out)
        self.assertEqual([x["b"] for x in rows],
                         ["T = 5, attention = sinkhorn", "T = 50, attention = softmax",
                          "T = 50, attention = sinkhorn"])
        self.assertTrue(all(x["a"] == "T = 5, attention = softmax" for x in rows))
        # the file's common_keys are the default pair keys
        rc, out2, _ = run_main([self.common, "--pair", "--stat", "residual", "--format", "csv"])
        self.assertEqual(rc, 0)
        self.assertEqual([x["b"] for x in csv_rows(out2)], [x["b"] for x in rows])

    def test_pair_errors(self):
        for argv, words in (([self.path, "--pair"], "name the keys"),
                            ([self.path, "--pair", "residual"], "not a sweep coordinate"),
                            ([self.path, "--pair", "d", "--where", "d == 2"], "one value"),
                            ([self.path, "--pair", "d", "--stat", "residual", "--by", "T"],
                             "not one to one"),
                            ([self.path, "--stat", "nope"], "no field 'nope'"),
                            ([self.path, self.fa, "--table1"], "goes with one file")):
            rc, out, err = run_main(argv)
            if words == "not one to one":
                # d pairs trials on replicate, T, attention: one to one, no error
                self.assertEqual(rc, 0, err)
                continue
            self.assertEqual(rc, 2, argv)
            self.assertIn(words, err)
            self.assertEqual(err.count("\n"), 1)
        # trials that the coordinates do not tell apart cannot be paired
        dup = self.a.copy()
        dup["replicate"] = 0
        path = os.path.join(self.tmp.name, "dup.h5")
        write(path, dup)
        rc, _, err = run_main([path, "--pair", "attention"])
        self.assertEqual(rc, 2)
        self.assertIn("not one to one", err)

    def test_two_files(self):
        rc, out, err = run_main([self.fa, self.fb, "--pair", "--stat", "residual",
                                 "--format", "csv"])
        self.assertEqual(rc, 0, err)
        r = csv_rows(out)[0]
        self.assertEqual((r["a"], r["b"]), ("softmax", "sinkhorn"))
        d = self.two["residual"] - self.one["residual"]
        self.assertEqual(int(r["pairs"]), len(d))
        self.assertEqual((int(r["residual_pos"]), int(r["residual_neg"])),
                         (int((d > 0).sum()), int((d < 0).sum())))
        self.assertAlmostEqual(float(r["residual_diff_mean"]), float(np.mean(d)), 12)
        self.assertIn("attention, sinkhorn_iters", err)  # named as not matched on
        # one table for both files, the file as the first column
        rc, out, _ = run_main([self.fa, self.fb, "--by", "d", "--format", "csv"])
        rows = csv_rows(out)
        self.assertEqual([(x["file"], x["d"]) for x in rows],
                         [("softmax", "2"), ("softmax", "3"), ("sinkhorn", "2"),
                          ("sinkhorn", "3")])
        self.assertTrue("sinkhorn_dev_median" not in rows[0] or rows[0]["sinkhorn_dev_median"]
                        == "")
        rc, out, _ = run_main([self.fa, self.fb, "--stat", "residual:median", "--format",
                               "csv"])
        rows = csv_rows(out)
        self.assertAlmostEqual(float(rows[1]["residual_median"]),
                               statistics.median(self.two["residual"]), 12)


class SeriesTest(unittest.TestCase):
    """--series on a synthetic file: 8 trials of n = 4 tokens in d = 2, snapshots at t = 1, 3
    (times in /bulk/snapshots@times) with known residuals and diameters, initial tokens for
    t = 0, snapshot cluster counts."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(9)
        m, n, d = 8, 4, 2
        a = np.zeros(m, dtype=DTYPE)
        for f in DTYPE.names:
            if DTYPE[f].kind == "f":
                a[f] = np.nan
        a["trial"] = np.arange(m)
        a["n"], a["d"] = n, d
        a["skip"] = np.arange(m) % 2
        a["outcome"] = code("outcome", "reached_T")
        a["outcome"][7] = code("outcome", "pending")  # not run: left out
        a["verdict"] = code("verdict", "no_prediction")
        a["verdict"][7] = code("verdict", "pending")
        cls.X = rng.normal(size=(m, 3, n, d))  # t = 0, 1, 3
        cls.clusters = rng.integers(1, 5, size=(m, 2)).astype(float)
        cls.a = a
        cls.path = os.path.join(cls.tmp.name, "series.h5")
        with h5py.File(cls.path, "w") as f:
            f.create_dataset("trials", data=a)
            f.attrs["n_trials"] = np.uint64(m)
            g = f.create_group("bulk")
            g["initial_tokens"] = cls.X[:, 0].ravel()
            g["initial_tokens_offset"] = np.arange(m + 1, dtype=np.uint64) * n * d
            g["snapshots"] = cls.X[:, 1:].ravel()
            g["snapshots"].attrs["times"] = [1.0, 3.0]
            g["snapshots_offset"] = np.arange(m + 1, dtype=np.uint64) * 2 * n * d
            g["snapshot_clusters"] = cls.clusters.ravel()
            g["snapshot_clusters_offset"] = np.arange(m + 1, dtype=np.uint64) * 2

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_values(self):
        png = os.path.join(self.tmp.name, "series.png")
        rc, out, err = run_main([self.path, "--series", "residual,diameter,clusters,hull",
                                 "--by", "skip", "--format", "csv", "--png", png])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual(len(rows), 2 * 4 * 3)  # groups x observables x times
        for r in rows:
            sk, t = {"false": 0, "true": 1}[r["skip"]], float(r["t"])
            j = {0.0: 0, 1.0: 1, 3.0: 2}[t]
            trials = [i for i in range(7) if i % 2 == sk]
            vals = []
            for i in trials:
                X = self.X[i, j]
                if r["observable"] == "residual":
                    c = X - X.mean(axis=0)
                    vals.append(math.sqrt((c * c).sum() / (X * X).sum()))
                elif r["observable"] == "diameter":
                    vals.append(max(math.dist(p, q) for p in X for q in X))
                elif r["observable"] == "hull":
                    vals.append(hull_vertices_2d(X))
                elif j > 0:
                    vals.append(self.clusters[i, j - 1])
            self.assertEqual(int(r["trials"]), len(vals), r)
            if vals:
                self.assertAlmostEqual(float(r["median"]), statistics.median(vals), 12)
                self.assertAlmostEqual(float(r["mean"]), statistics.fmean(vals), 12)
        self.assertTrue(os.path.getsize(png) > 1000)

    def test_figure_and_errors(self):
        import attnsweep_plots
        _, _, series = summ.series_tables(schema.open_results(self.path), ["skip"], None,
                                          ["residual"])
        fig = attnsweep_plots.plot_series(series, os.path.join(self.tmp.name, "s.svg"))
        ax = fig.axes[0]
        self.assertEqual(ax.get_xlabel(), "time $t$")
        self.assertIn("residual", ax.get_ylabel())
        self.assertEqual(len(ax.get_lines()), 2)  # one line per group
        self.assertEqual(list(ax.get_lines()[0].get_xdata()), [0.0, 1.0, 3.0])
        for argv, words in (([self.path, "--series", "nope"], "not an observable"),
                            ([self.path, "--series", "residual", "--phase", "d"],
                             "--series goes without")):
            rc, _, err = run_main(argv)
            self.assertEqual(rc, 2)
            self.assertIn(words, err)
        plain = os.path.join(self.tmp.name, "plain.h5")
        write(plain, self.a)
        rc, _, err = run_main([plain, "--series", "residual"])
        self.assertEqual(rc, 2)
        self.assertIn("needs snapshots", err)

if __name__ == "__main__":
    optional.main()
