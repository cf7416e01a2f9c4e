#!/usr/bin/python3
"""Tests of `attnsweep summarize --measure` (analysis/attnsweep_summarize.py, measure_tables) on
a synthetic results file: rows with known sorted cluster masses, hull vertex counts and ref_w1
at several n; the expected means, standard deviations, medians and the L1 distance to the last
group are computed here by hand (statistics module), not by the code under test.
"""

import csv
import io
import os
import statistics
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import h5py
import numpy as np

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
from attnsweep import layout  # noqa: E402
import attnsweep_summarize as summ  # noqa: E402

INCLUDE = os.path.join(SRC, "include")
LABELS = layout.enum_labels()

# n -> list of trials (cluster sizes, unresolved, hull vertices, initial hull, ref_w1)
TRIALS = {
    100: [([30, 26, 18, 14, 12], 0, 12, 9, 3.4), ([33, 30, 20, 17], 0, 22, 15, 3.0),
          ([40, 40, 10], 10, 14, 11, 2.5)],
    1000: [([268, 259, 244, 229], 0, 18, 18, 2.2), ([272, 253, 241, 234], 0, 29, 18, 1.4)],
    10000: [([2510, 2500, 2495, 2490, 1, 1, 1, 1, 1, 1], 0, 40, 25, 0.5)],
}


def write(path, with_measure=True):
    dtype = layout.record_dtype()
    if not with_measure:  # an older file: the measure fields absent
        keep = [f for f in dtype.names if not f.startswith("mass_")]
        dtype = np.dtype([(f, dtype[f]) for f in keep])
    rows = [(n, t) for n in TRIALS for t in TRIALS[n]]
    a = np.zeros(len(rows), dtype=dtype)
    for f in dtype.names:
        if dtype[f].kind == "f":
            a[f] = np.nan
    for i, (n, (sizes, unres, hv, hvi, w1)) in enumerate(rows):
        a["trial"][i] = i
        a["n"][i] = n
        a["d"][i] = 2
        a["verdict"][i] = LABELS["verdict"].index("consistent")
        a["outcome"][i] = LABELS["outcome"].index("reached_T")
        a["n_clusters"][i] = len(sizes)
        a["n_unresolved"][i] = unres
        if with_measure:
            s = sorted(sizes, reverse=True)
            for j in range(8):
                a["mass_%d" % (j + 1)][i] = s[j] / n if j < len(s) else 0.0
            a["mass_rest"][i] = (n - sum(s[:8])) / n
            a["hull_vertices"][i] = hv
            a["hull_vertices_init"][i] = hvi
            a["ref_w1"][i] = w1
            a["ref_n_clusters"][i] = 4
            a["reference_n"][i] = n // 10
    # a pending row is not counted
    b = np.zeros(1, dtype=dtype)
    for f in dtype.names:
        if dtype[f].kind == "f":
            b[f] = np.nan
    b["n"] = 100
    b["verdict"] = LABELS["verdict"].index("pending")
    a = np.concatenate([a, b])
    with h5py.File(path, "w") as f:
        f.create_dataset("trials", data=a)
        f.attrs["n_trials"] = np.uint64(len(a))


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = summ.main(argv)
    return rc, out.getvalue(), err.getvalue()


def masses(n, sizes):
    s = sorted(sizes, reverse=True)
    m = [s[j] / n if j < len(s) else 0.0 for j in range(8)]
    return m + [(n - sum(s[:8])) / n]


class MeasureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "mf.h5")
        write(cls.path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_csv_by_n(self):
        rc, out, err = run_main([self.path, "--measure", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual([r["n"] for r in rows], ["100", "1000", "10000"])
        last = [statistics.mean(c) for c in zip(*(masses(10000, t[0]) for t in TRIALS[10000]))]
        for r in rows:
            n = int(r["n"])
            ts = TRIALS[n]
            self.assertEqual(int(r["trials"]), len(ts))
            ms = [masses(n, t[0]) for t in ts]
            means = [statistics.mean(c) for c in zip(*ms)]
            names = ["mass_%d" % j for j in range(1, 9)] + ["mass_rest"]
            for j, name in enumerate(names):
                self.assertAlmostEqual(float(r[name + "_mean"]), means[j], places=12, msg=name)
                if len(ts) >= 2:
                    sd = statistics.stdev([m[j] for m in ms])
                    self.assertAlmostEqual(float(r[name + "_sd"]), sd, places=12, msg=name)
                else:
                    self.assertEqual(r[name + "_sd"], "")
            # every trial's masses plus rest sum to 1, so do the means
            self.assertAlmostEqual(sum(means), 1.0, places=12)
            self.assertAlmostEqual(float(r["mass_l1_to_last"]),
                                   sum(abs(x - y) for x, y in zip(means, last)), places=12)
            self.assertAlmostEqual(float(r["unresolved_mean"]),
                                   statistics.mean(t[1] / n for t in ts), places=12)
            for col, k in (("hull_vertices_median", 2), ("hull_vertices_init_median", 3),
                           ("ref_w1_median", 4)):
                self.assertAlmostEqual(float(r[col]), statistics.median(t[k] for t in ts),
                                       places=12, msg=col)
            self.assertAlmostEqual(float(r["clusters_median"]),
                                   statistics.median(len(t[0]) for t in ts), places=12)
            self.assertEqual(float(r["reference_n_median"]), n // 10)
        self.assertEqual(float(rows[-1]["mass_l1_to_last"]), 0.0)

    def test_md_and_latex(self):
        rc, out, err = run_main([self.path, "--measure"])
        self.assertEqual(rc, 0, err)
        tab = [l for l in out.splitlines() if l.startswith("|")]
        self.assertEqual(len(tab), 2 + 3)
        self.assertTrue(all(l.count("|") == tab[0].count("|") for l in tab), out)
        # the masses shown go up to the 8th (the n = 10^4 trial has 10 clusters)
        self.assertIn("m8 mean (sd)", tab[0])
        rc, out, err = run_main([self.path, "--measure", "--format", "latex"])
        self.assertEqual(rc, 0, err)
        body = out.split("\\begin{tabularx}")[1].split("\\end{tabularx}")[0]
        lines = [l for l in body.splitlines() if l.endswith("\\\\")]
        # transposed: a header and a row per md column after the group (17), a column per n
        self.assertEqual(len(lines), 1 + len(tab[0].split("|")) - 3)
        self.assertEqual({l.count("&") for l in lines}, {3}, lines)

    def test_where_and_by(self):
        rc, out, err = run_main([self.path, "--measure", "--by", "d", "--where", "n >= 1000",
                                 "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), 1)
        self.assertEqual(int(rows[0]["trials"]), 3)

    def test_errors(self):
        rc, _, err = run_main([self.path, "--measure", "--table1"])
        self.assertEqual(rc, 2)
        self.assertIn("--measure goes without", err)
        old = os.path.join(self.tmp.name, "old.h5")
        write(old, with_measure=False)
        rc, _, err = run_main([old, "--measure"])
        self.assertEqual(rc, 2)
        self.assertIn("mass_1", err)


if __name__ == "__main__":
    import optional
    optional.main()
