#!/usr/bin/python3
"""Tests of the curves of `summarize --phase` and `--robustness` on a tiny perturbation sweep
(synthetic rows, dtype from include/attnsweep/record.h): the eps = 0 baseline (perturb
recorded as not applicable, `-`) is the first point of every perturb curve and no curve of
its own; --phase judges near misses by near_verdict by default and by verdict with
--verdict exact; --pair T pairs the curves' trials on the common axis (root attribute
common_keys) with McNemar's exact test. Every number is recomputed here from the rows."""

import csv
import io
import math
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_robustness as tr  # noqa: E402  (synthetic-file helpers, the real theorem table)

summ = tr.summ
code = tr.code
LABELS = tr.LABELS

EPS = (0.0, 0.001, 0.01)
PERTURB = ("v", "both")
TS = (5.0, 50.0)
REPS = 9


def build(rng):
    """One row per (eps, perturb, T, replicate): at eps = 0 perturb is `-` (-1) and the
    triple is V = I (theorem identity, its own nearest theorem); at eps > 0 theorem none,
    nearest theorem identity (a near miss) with near_dist = eps. verdict and near_verdict
    are drawn independently so that a table of one cannot be read as the other. The two
    horizons T share their draws (common: [T]): the pairs differ in T only."""
    dt = schema_dtype()
    rows = []
    for e in EPS:
        for p in (("-",) if e == 0 else PERTURB):
            for t in TS:
                for r in range(REPS):
                    rows.append((e, p, t, r))
    a = np.zeros(len(rows), dtype=dt)
    for f in dt.names:
        if dt[f].kind == "f":
            a[f] = np.nan
    a["trial"] = np.arange(len(rows))
    a["d"], a["n"] = 2, 8
    a["outcome"] = code("outcome", "reached_T")
    nv = rng.choice(["consistent", "unresolved", "violated"], size=len(rows), p=[.6, .3, .1])
    for i, (e, p, t, r) in enumerate(rows):
        a["eps"][i] = e
        a["perturb"][i] = -1 if p == "-" else code("perturb", p)
        a["T"][i] = t
        a["replicate"][i] = r
        a["near_theorem"][i] = code("theorem", "identity")
        a["theorem"][i] = code("theorem", "identity" if e == 0 else "none")
        a["near_dist"][i] = e
        a["dist_v_identity"][i] = e
        a["near_verdict"][i] = code("verdict", nv[i])
        a["verdict"][i] = code("verdict", nv[i] if e == 0 else
                               ("no_prediction" if r % 3 else "unresolved"))
    return a, rows


def schema_dtype():
    return tr.layout.record_dtype()


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = summ.main(argv)
    return rc, out.getvalue(), err.getvalue()


class CurvesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.a, cls.rows = build(np.random.default_rng(3))
        cls.path = os.path.join(cls.tmp.name, "pert.h5")
        tr.write(cls.path, cls.a)
        with h5py.File(cls.path, "a") as f:
            f.attrs["common_keys"] = "T"
            f["trials"].attrs["coordinates"] = np.array(
                [b"eps", b"perturb", b"T", b"replicate"])
        cls.nv = np.array([LABELS["verdict"][c] for c in cls.a["near_verdict"]])
        cls.v = np.array([LABELS["verdict"][c] for c in cls.a["verdict"]])
        cls.pert = np.array([r[1] for r in cls.rows])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def expect(self, verdicts, perturb, eps):
        """(trials, consistent, judged) of a curve's point: the curve's own trials at eps,
        and at eps = 0 the baseline (perturb `-`)."""
        sel = (self.a["eps"] == eps) & ((self.pert == perturb) | (self.pert == "-"))
        k = verdicts[sel]
        judged = int(np.isin(k, tr.JUDGED).sum())
        return int(sel.sum()), int((k == "consistent").sum()), judged

    def phase_rows(self, extra):
        rc, out, err = run([self.path, "--phase", "eps", "--by", "perturb", "--format",
                            "csv"] + extra)
        self.assertEqual(rc, 0, err)
        return list(csv.DictReader(io.StringIO(out))), err

    def check_phase(self, rows, verdicts):
        self.assertEqual(sorted({r["perturb"] for r in rows}), sorted(PERTURB))  # no `-`
        self.assertEqual(len(rows), len(PERTURB) * len(EPS))
        for r in rows:
            n, k, m = self.expect(verdicts, r["perturb"], float(r["eps"]))
            self.assertEqual((int(r["trials"]), int(r["consistent"]), int(r["judged"])),
                             (n, k, m), r)
            p, lo, hi = tr.wilson_ref(k, m)
            self.assertAlmostEqual(float(r["consistent_frac"]), p, places=12)
            self.assertAlmostEqual(float(r["consistent_lo"]), lo, places=9)

    def test_phase_baseline_joins_every_curve_near_by_default(self):
        rows, err = self.phase_rows([])
        self.check_phase(rows, self.nv)
        self.assertIn("verdict: near_verdict", err)
        self.assertIn("baseline", err)
        base = [r for r in rows if float(r["eps"]) == 0]
        self.assertEqual([int(r["trials"]) for r in base], [REPS * len(TS)] * len(PERTURB))

    def test_phase_exact_verdict(self):
        rows, err = self.phase_rows(["--verdict", "exact"])
        self.check_phase(rows, self.v)
        self.assertIn("verdict: verdict", err)
        rows, _ = self.phase_rows(["--verdict", "near"])
        self.check_phase(rows, self.nv)

    def test_phase_figure_has_no_baseline_panel(self):
        import attnsweep_plots as plots
        with summ.schema.open_results(self.path) as rf:
            _, _, phase = summ.summary_tables(rf, ["perturb"], None, phase="eps")
        self.assertEqual(sorted(phase["series"]), ["perturb = both", "perturb = v"])
        for ser in phase["series"].values():
            self.assertEqual(ser["x"][0], 0.0)
        fig = plots.plot_phase(phase, os.path.join(self.tmp.name, "phase.pdf"))
        self.assertTrue(os.path.getsize(os.path.join(self.tmp.name, "phase.pdf")) > 0)
        self.assertTrue(fig.axes)

    def test_robustness_baseline(self):
        rc, out, err = run([self.path, "--robustness", "--by", "perturb", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = [r for r in csv.DictReader(io.StringIO(out)) if r["distance"] == "near_dist"]
        self.assertEqual(sorted({r["perturb"] for r in rows}), sorted(PERTURB))
        for r in rows:
            n, k, m = self.expect(self.nv, r["perturb"], float(r["x"]))
            self.assertEqual((int(r["trials"]), int(r["consistent"]), int(r["judged"])),
                             (n, k, m), r)
        self.assertIn("baseline", err)

    def test_baseline_with_two_axes(self):
        # perturb and T: the eps = 0 trials of each T join both perturb curves of that T
        rc, out, err = run([self.path, "--phase", "eps", "--by", "perturb,T", "--format",
                            "csv"])
        self.assertEqual(rc, 0, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), len(PERTURB) * len(TS) * len(EPS))
        for r in rows:
            t, e = float(r["T"]), float(r["eps"])
            sel = (self.a["eps"] == e) & (self.a["T"] == t) & (
                (self.pert == r["perturb"]) | (self.pert == "-"))
            k = self.nv[sel]
            self.assertEqual((int(r["trials"]), int(r["consistent"])),
                             (int(sel.sum()), int((k == "consistent").sum())), r)

    def paired_expect(self, mask_b, lo_t, hi_t):
        """pairs (T = lo_t, T = hi_t) of equal eps, perturb, replicate within mask_b, and the
        counts of the McNemar table: b consistent and a not, and the reverse."""
        key = {}
        for i, (e, p, t, r) in enumerate(self.rows):
            if mask_b[i]:
                key.setdefault((e, p, r), {})[t] = i
        pos = neg = pairs = 0
        for d in key.values():
            if lo_t in d and hi_t in d:
                pairs += 1
                a = self.nv[d[lo_t]] == "consistent"
                b = self.nv[d[hi_t]] == "consistent"
                pos += b and not a
                neg += a and not b
        return pairs, pos, neg

    def test_phase_pair_on_common_axis(self):
        rc, out, err = run([self.path, "--phase", "eps", "--by", "perturb", "--pair",
                            "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), 1 + len(PERTURB) * (len(EPS) - 1))  # `-` only at eps = 0
        for r in rows:
            sel = (self.a["eps"] == float(r["eps"])) & (self.pert == r["perturb"])
            pairs, pos, neg = self.paired_expect(sel, TS[0], TS[1])
            pre = "near_verdict_eq_consistent_"
            self.assertEqual((int(r[pre + "pairs"]), int(r[pre + "pos"]), int(r[pre + "neg"])),
                             (pairs, pos, neg), r)
            m = pos + neg
            p = min(1.0, 2 * sum(math.comb(m, j) for j in range(min(pos, neg) + 1)) / 2 ** m) \
                if m else 1.0
            self.assertAlmostEqual(float(r[pre + "p"]), p, places=12)

    def test_robustness_pair(self):
        rc, out, err = run([self.path, "--robustness", "--pair", "T", "--by", "eps",
                            "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), len(EPS))
        for r in rows:
            sel = self.a["eps"] == float(r["eps"])
            pairs, pos, neg = self.paired_expect(sel, TS[0], TS[1])
            pre = "near_verdict_eq_consistent_"
            self.assertEqual((int(r[pre + "pairs"]), int(r[pre + "pos"]), int(r[pre + "neg"])),
                             (pairs, pos, neg), r)

    def test_errors(self):
        rc, _, err = run([self.path, "--verdict", "near"])
        self.assertEqual(rc, 2)
        self.assertIn("--verdict goes with --phase or --robustness", err)
        rc, _, err = run([self.path, "--phase", "near_dist", "--pair", "T"])
        self.assertEqual(rc, 2)
        self.assertIn("not one", err)


if __name__ == "__main__":
    import optional
    optional.main()
