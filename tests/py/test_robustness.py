#!/usr/bin/python3
"""Tests of `attnsweep summarize --robustness` and of Table 1's near-miss columns on synthetic
results files (dtype from include/attnsweep/record.h): the counts of every point add up to the
trials selected, and each point's counts and fraction are recomputed here from the rows'
near_verdict and distances, independently of the program's tables."""

import csv
import io
import math
import os
import statistics
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optional  # noqa: E402

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
import schema  # noqa: E402
from attnsweep import layout  # noqa: E402
import attnsweep_summarize as summ  # noqa: E402

INCLUDE = os.path.join(SRC, "include")
LABELS = layout.enum_labels()
Z = statistics.NormalDist().inv_cdf(0.975)
JUDGED = ("consistent", "violated", "unresolved")


def theorem_table():
    """The /trials attribute theorem_table as the C writer states it (`attnsweep help
    theorem_table`, from src/core/theorem.c): synthetic files carry the real table."""
    exe = os.environ.get("ATTNSWEEP") or os.path.join(
        os.environ.get("AS_BUILD_DIR") or os.path.join(SRC, "build", "test"), "attnsweep")
    return subprocess.run([exe, "help", "theorem_table"], check=True, capture_output=True,
                          text=True).stdout.rstrip("\n")


THEOREM_TABLE = theorem_table()


def code(field, label):
    return LABELS[field].index(label)


def wilson_ref(k, n):
    p = k / n
    den = 1 + Z * Z / n
    c = p + Z * Z / (2 * n)
    h = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return p, max(0.0, (c - h) / den), min(1.0, (c + h) / den)


def build(rng, n=400):
    """Rows: theorem none / identity / good, near theorem identity or good, distances spread
    over decades on both sides of 0, and a verdict that is never the near verdict (so a
    fraction read from `verdict` would be wrong)."""
    dt = layout.record_dtype()
    a = np.zeros(n, dtype=dt)
    for f in dt.names:
        if dt[f].kind == "f":
            a[f] = np.nan
    a["trial"] = np.arange(n)
    a["d"] = 2
    a["n"] = 20
    a["outcome"] = code("outcome", "reached_T")
    near = rng.choice(["identity", "good"], size=n)
    theorem = np.where(rng.random(n) < 0.3, near, "none")
    nv = rng.choice(["consistent", "violated", "unresolved", "failed"], size=n,
                    p=[0.55, 0.2, 0.2, 0.05])
    # distances: exact 0, negatives and positives over four decades
    sign = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.3, 0.2, 0.5])
    mag = 10.0 ** rng.uniform(-4, 0, size=n)
    a["dist_m_posdef"] = sign * mag
    a["dist_margin"] = np.where(near == "good", -sign * mag[::-1], np.nan)
    a["near_dist"] = np.where(theorem == near, 0.0, np.abs(sign * mag))
    for i in range(n):
        a["near_theorem"][i] = code("theorem", near[i])
        a["theorem"][i] = code("theorem", theorem[i])
        a["near_verdict"][i] = code("verdict", nv[i])
        a["verdict"][i] = code("verdict", "no_prediction" if theorem[i] == "none"
                               else "failed" if nv[i] == "consistent" else "consistent")
    return a


#: The proved theorems and their hypotheses (docs/theory.md 2.11, docs/results.md), as the
#: /trials attribute near_hypotheses states them.
THEORY = ("d1: dist_m_posdef dist_gap; identity: dist_v_identity dist_m_symmetric dist_m_posdef; "
          "minus_identity: dist_v_minus_identity dist_m_identity; paranormal: dist_m_symmetric "
          "dist_m_posdef dist_paranormal; good: dist_lead_real dist_gap dist_margin")


def write(path, a, near_hypotheses=THEORY):
    with h5py.File(path, "w") as f:
        f.create_dataset("trials", data=a)
        if near_hypotheses is not None:
            f["trials"].attrs["near_hypotheses"] = near_hypotheses
        f["trials"].attrs["theorem_table"] = THEOREM_TABLE
        f.attrs["n_trials"] = np.uint64(len(a))
        f.attrs["tool_version"] = "0.1.0"


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = summ.main(argv)
    return rc, out.getvalue(), err.getvalue()


def csv_tables(text):
    """The csv output, one table in long format (a `distance` column), as {distance field:
    [rows as dicts]}, each row with its bin under the distance's name as well."""
    rows = list(csv.DictReader(io.StringIO(text)))
    out = {}
    for r in rows:
        r["near theorem"] = r["near_theorem"]
        r[r["distance"]] = r["bin"]
        out.setdefault(r["distance"], []).append(r)
    return out


def check_csv_is_one_table(self, text):
    """pandas reads the csv as one table with numeric columns."""
    import pandas as pd
    df = pd.read_csv(io.StringIO(text))
    for c in ("x", "lo", "hi", "consistent_frac"):
        self.assertEqual(df[c].dtype.kind, "f", c)
    for c in ("trials", "judged", "consistent"):
        self.assertEqual(df[c].dtype.kind, "i", c)
    self.assertEqual(list(df.columns[:3]), ["near_theorem", "distance", "bin"])


def in_bin(row, v, last):
    """Whether v (rounded as the program rounds, to 10 digits) lies in the point of a csv row:
    [lo, hi), or [lo, hi] for the last bin of its side and for a single value."""
    v = float("%.10g" % v)
    lo, hi = float(row["lo"]), float(row["hi"])
    return lo <= v < hi or ((last or lo == hi) and v == hi)


class RobustnessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.a = build(np.random.default_rng(16))
        cls.path = os.path.join(cls.tmp.name, "r.h5")
        write(cls.path, cls.a)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_field(self, rows, field, theorems, bins):
        a = self.a
        near = np.array([LABELS["theorem"][c] for c in a["near_theorem"]])
        nv = np.array([LABELS["verdict"][c] for c in a["near_verdict"]])
        sel = np.isin(near, theorems)
        # every selected trial is in exactly one point: the counts add up
        self.assertEqual(sum(int(r["trials"]) for r in rows), int(sel.sum()))
        for th in theorems:
            mine = [r for r in rows if r["near theorem"] == th]
            self.assertEqual(sum(int(r["trials"]) for r in mine), int((near == th).sum()))
            per_side = {}
            for j, r in enumerate(mine):
                label = r[field]
                vals = a[field]
                # the last bin of a side (< 0, = 0, > 0) is closed: the next row starts a new
                # side or a new theorem
                nxt = mine[j + 1] if j + 1 < len(mine) else None
                last = nxt is None or nxt["lo"] == "" or r["lo"] == "" or \
                    np.sign(float(nxt["lo"])) != np.sign(float(r["hi"])) or \
                    float(nxt["lo"]) != float(r["hi"])
                members = sel & (near == th) & np.array(
                    [label == "n/a" if math.isnan(v) else (label != "n/a" and in_bin(r, v, last))
                     for v in vals])
                self.assertEqual(int(r["trials"]), int(members.sum()), (field, th, label))
                fin = vals[members & np.isfinite(vals)]
                if len(fin):  # x: the median distance of the point's own trials
                    self.assertAlmostEqual(float(r["x"]), float(np.median(fin)), places=12)
                k = {v: int((members & (nv == v)).sum()) for v in JUDGED}
                for v in JUDGED:
                    self.assertEqual(int(r[v]), k[v], (field, th, label, v))
                judged = sum(k.values())
                self.assertEqual(int(r["judged"]), judged)
                self.assertEqual(int(r["other"]), int(members.sum()) - judged)
                if judged:
                    p, lo, hi = wilson_ref(k["consistent"], judged)
                    self.assertAlmostEqual(float(r["consistent_frac"]), p, places=12)
                    self.assertAlmostEqual(float(r["consistent_lo"]), lo, places=9)
                    self.assertAlmostEqual(float(r["consistent_hi"]), hi, places=9)
                    self.assertTrue(0 <= float(r["consistent_lo"]) <= float(
                        r["consistent_frac"]) <= float(r["consistent_hi"]) <= 1)
                # no bin mixes values inside (< 0), on (= 0) and outside (> 0)
                v = a[field][members]
                v = v[np.isfinite(v)]
                if len(v):
                    self.assertEqual(len(set(np.sign(v))), 1, (field, label))
                    per_side.setdefault(float(np.sign(v[0])), 0)
                    per_side[float(np.sign(v[0]))] += 1
            self.assertLessEqual(sum(per_side.values()), bins + 3)

    @unittest.skipIf(not optional.have("pandas"), optional.missing("pandas"))
    def test_csv_is_one_table_in_pandas(self):
        rc, out, err = run([self.path, "--robustness", "--format", "csv", "--bins", "4"])
        self.assertEqual(rc, 0, err)
        check_csv_is_one_table(self, out)

    def test_counts_and_fractions_from_the_rows(self):
        for bins in (12, 4):
            rc, out, err = run([self.path, "--robustness", "--format", "csv", "--bins",
                                str(bins)])
            self.assertEqual(rc, 0, err)
            tabs = csv_tables(out)
            self.check_field(tabs["dist_m_posdef"], "dist_m_posdef", ["identity"], bins)
            self.check_field(tabs["dist_margin"], "dist_margin", ["good"], bins)
            self.check_field(tabs["near_dist"], "near_dist", ["identity", "good"], bins)

    def test_few_values_are_points(self):
        a = self.a.copy()
        a["dist_m_posdef"] = np.where(np.arange(len(a)) % 2, 0.1, -0.5)
        p = os.path.join(self.tmp.name, "few.h5")
        write(p, a)
        rc, out, err = run([p, "--robustness", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_tables(out)["dist_m_posdef"]
        self.assertEqual(sorted({r["dist_m_posdef"] for r in rows}), ["-0.5", "0.1"])
        self.addCleanup(os.remove, p)

    def test_markdown_and_figure(self):
        png = os.path.join(self.tmp.name, "rob.png")
        rc, out, err = run([self.path, "--robustness", "--png", png])
        self.assertEqual(rc, 0, err)
        self.assertIn("near verdict against dist_m_posdef", out)
        self.assertTrue(os.path.getsize(png) > 1000)
        import attnsweep_plots
        with schema.open_results(self.path) as rf:
            _, _, data = summ.robustness_tables(rf, [], None)
        fig = attnsweep_plots.plot_robustness(data, os.path.join(self.tmp.name, "r2.png"))
        axes = [ax for ax in fig.axes if ax.get_visible()]
        self.assertEqual(len(axes), len([p for p in data["panels"] if p["series"]]))
        for ax in axes:
            self.assertTrue(ax.get_xlabel())
            lo, hi = ax.get_ylim()
            self.assertLessEqual(lo, 0)
            self.assertGreaterEqual(hi, 1)
            for line in ax.lines:  # error bars stay within [0, 1]
                y = np.asarray(line.get_ydata(), dtype=float)
                self.assertTrue(np.all((y >= -1e-12) & (y <= 1 + 1e-12)))
        self.assertTrue(axes[0].get_ylabel())
        scales = {ax.get_title(): ax.get_xscale() for ax in axes}
        self.assertEqual(scales["dist_m_posdef"], "symlog")  # both signs over four decades

    def test_table1_near_miss_columns(self):
        rc, out, err = run([self.path, "--table1", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = {r["theorem"]: r for r in csv.DictReader(io.StringIO(out))}
        a = self.a
        near = np.array([LABELS["theorem"][c] for c in a["near_theorem"]])
        th = np.array([LABELS["theorem"][c] for c in a["theorem"]])
        nv = np.array([LABELS["verdict"][c] for c in a["near_verdict"]])
        for t in ("identity", "good"):
            miss = (near == t) & (th != t)
            self.assertEqual(int(rows[t]["near_miss_trials"]), int(miss.sum()))
            self.assertEqual(int(rows[t]["hypotheses_hold"]), int((th == t).sum()))
            k = int((miss & (nv == "consistent")).sum())
            m = int((miss & np.isin(nv, JUDGED)).sum())
            self.assertEqual(int(rows[t]["near_miss_judged"]), m)
            self.assertAlmostEqual(float(rows[t]["near_miss_consistent_frac"]), k / m, places=12)
            self.assertAlmostEqual(float(rows[t]["near_miss_dist_median"]),
                                   float(np.median(a["near_dist"][miss])), places=12)
        self.assertEqual(rows["codim_k"]["near_miss_trials"], "")  # no theorem: no near miss

    def test_the_map_is_the_files(self):
        # A file whose near_hypotheses gives dist_margin to identity as well: the margin panel
        # then covers the identity trials too (summarize holds no map of its own).
        p = os.path.join(self.tmp.name, "map.h5")
        self.addCleanup(os.remove, p)
        write(p, self.a, THEORY.replace("identity: dist_v_identity",
                                        "identity: dist_margin dist_v_identity", 1))
        rc, out, err = run([p, "--robustness", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        tabs = csv_tables(out)
        self.check_field(tabs["dist_margin"], "dist_margin", ["identity", "good"], 12)
        write(p, self.a, None)
        rc, out, err = run([p, "--robustness"])
        self.assertEqual(rc, 2)
        self.assertIn("near_hypotheses", err)

    def test_file_without_near_fields(self):
        dt = self.a.dtype
        keep = [f for f in dt.names if not f.startswith(("near_", "dist_"))]
        b = np.zeros(len(self.a), dtype=[(f, dt[f]) for f in keep])
        for f in keep:
            b[f] = self.a[f]
        p = os.path.join(self.tmp.name, "old.h5")
        write(p, b)
        rc, out, err = run([p, "--robustness"])
        self.assertEqual(rc, 2)
        self.assertIn("near_theorem", err)
        self.assertEqual(len(err.strip().splitlines()), 1)
        rc, out, err = run([p, "--table1", "--format", "csv"])  # Table 1 still works
        self.assertEqual(rc, 0, err)


if __name__ == "__main__":
    optional.main()
