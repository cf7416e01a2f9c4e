#!/usr/bin/python3
"""Tests of analysis/attnsweep_summarize.py and analysis/schema.py on synthetic results files.

The files are written here with h5py following the results-file contract: the compound dtype
comes from parsing include/attnsweep/record.h and enums.h (so the test follows the C
definition), with known verdict counts, cluster counts, ranks and times. Expected values
(Wilson intervals, quantiles, fractions) are computed here independently of the module.
"""

import csv
import io
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import h5py

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
import schema  # noqa: E402
from attnsweep import layout  # noqa: E402
import attnsweep_summarize as summ  # noqa: E402


def theorem_table():
    """The /trials attribute theorem_table as the C writer states it (`attnsweep help
    theorem_table`, from src/core/theorem.c): synthetic files carry the real table."""
    exe = os.path.join(os.environ.get("AS_BUILD_DIR") or os.path.join(SRC, "build", "test"),
                       "attnsweep")
    return subprocess.run([exe, "help", "theorem_table"], check=True, capture_output=True,
                          text=True).stdout.rstrip("\n")


THEOREM_TABLE = theorem_table()
#: the theorem labels of Table 1 in precedence order
TABLE1_LABELS = [line.split("\t")[0] for line in THEOREM_TABLE.split("\n")]

INCLUDE = os.path.join(SRC, "include")
LABELS = layout.enum_labels()
Z = statistics.NormalDist().inv_cdf(0.975)


def code(field, label):
    return LABELS[field].index(label)


def wilson_ref(k, n):
    """Wilson score interval, textbook form (Wilson 1927; Newcombe 1998, method 3)."""
    p = k / n
    den = 1 + Z * Z / n
    c = p + Z * Z / (2 * n)
    h = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return p, max(0.0, (c - h) / den), min(1.0, (c + h) / den)


def quantile7(xs, q):
    """Hyndman-Fan type 7 quantile of a list, by hand."""
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    lo = int(math.floor(h))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


# Groups of the synthetic sweep: (theorem, d, eps, flags, verdict counts)
GOOD_BITS = (1 << 5) | (1 << 0) | (1 << 1)
GROUPS = [
    ("identity", 2, 0.0, 1 << 7,
     {"consistent": 30, "violated": 5, "unresolved": 5, "nonfinite": 2, "failed": 1,
      "pending": 7}),
    ("good", 3, 0.0, GOOD_BITS, {"consistent": 8, "violated": 2}),
    ("good", 3, 0.1, GOOD_BITS, {"consistent": 5, "violated": 4, "unresolved": 1}),
    ("good", 3, 0.3, GOOD_BITS, {"consistent": 1, "violated": 7, "unresolved": 4,
                                 "pending": 3}),
    ("none", 2, 0.0, 0, {"no_prediction": 10}),
]


def build_rows(dtype):
    """The rows of the synthetic sweep and, per row, python-side facts for the references."""
    rows = []
    rng = np.random.default_rng(7)
    for theorem, d, eps, flags, counts in GROUPS:
        for verdict, cnt in counts.items():
            for _ in range(cnt):
                rows.append((theorem, d, eps, flags, verdict))
    a = np.zeros(len(rows), dtype=dtype)
    for f in dtype.names:
        if dtype[f].kind == "f":
            a[f] = np.nan
    ref = []
    for i, (theorem, d, eps, flags, verdict) in enumerate(rows):
        a["trial"][i] = i
        a["theorem"][i] = code("theorem", theorem)
        a["d"][i] = d
        a["n"][i] = 20
        a["eps"][i] = eps
        a["flags"][i] = flags
        a["verdict"][i] = code("verdict", verdict)
        run = verdict != "pending"
        a["outcome"][i] = code("outcome", "reached_T" if run else "pending")
        r = {"theorem": theorem, "d": d, "eps": eps, "verdict": verdict, "flags": flags}
        if run and verdict not in ("failed", "nonfinite"):
            r["n_clusters"] = int(rng.integers(1, 9))
            r["rank_p"] = int(rng.integers(1, 4))
            r["settle"] = float(rng.uniform(0.5, 5)) if rng.random() < 0.7 else None
            a["n_clusters"][i] = r["n_clusters"]
            # every cluster at T: the settled ones and those of tokens still moving
            r["n_clusters_all"] = r["n_clusters"] + int(rng.integers(0, 3))
            a["n_clusters_all"][i] = r["n_clusters_all"]
            a["rank_p"][i] = r["rank_p"]
            a["settle_time"][i] = np.nan if r["settle"] is None else r["settle"]
        if verdict == "unresolved":  # a reason, and a horizon unless none is known
            r["reason"] = ("moving", "metastable", "merging")[i % 3]
            a["reason"][i] = code("reason", r["reason"])
            r["t_decide"] = float(rng.uniform(5, 50)) if i % 3 != 2 else None
            a["t_decide"][i] = np.nan if r["t_decide"] is None else r["t_decide"]
        if run:
            r["wall"] = float(rng.uniform(0.01, 2.0))
            a["wall_time"][i] = r["wall"]
        if verdict == "failed":
            a["message"][i] = b"could not build the triple"
        ref.append(r)
    return a, ref


def write_file(path, a, n_trials=None, enum_override=None):
    dt = a.dtype
    if enum_override:  # same labels, other values: the analysis must read them from the file
        field, mapping = enum_override
        spec = [(f, h5py.enum_dtype(mapping, basetype="i4") if f == field else dt[f])
                for f in dt.names]
        b = np.zeros(len(a), dtype=np.dtype(spec))
        for f in dt.names:
            b[f] = a[f]
        labels = LABELS[field]
        b[field] = np.array([mapping[labels[v]] for v in a[field]])
        a = b
    with h5py.File(path, "w") as f:
        f.create_dataset("trials", data=a)
        f["trials"].attrs["theorem_table"] = THEOREM_TABLE
        f.attrs["n_trials"] = np.uint64(len(a) if n_trials is None else n_trials)
        f.attrs["spec_sha256"] = "ab" * 32
        f.attrs["master_seed"] = np.uint64(12345)
        f.attrs["tool_version"] = "0.1.0"


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = summ.main(argv)
    return rc, out.getvalue(), err.getvalue()


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def expected(ref, pred):
    sel = [r for r in ref if pred(r)]
    e = {"trials": len(sel)}
    for v in ("pending",) + summ.VERDICTS:
        e[v] = sum(r["verdict"] == v for r in sel)
    e["done"] = e["trials"] - e["pending"]
    e["judged"] = e["consistent"] + e["violated"] + e["unresolved"]
    e["clusters"] = [r["n_clusters_all"] for r in sel if "n_clusters_all" in r]
    e["settled_clusters"] = [r["n_clusters"] for r in sel if "n_clusters" in r]
    e["reasons"] = {k: sum(r.get("reason") == k for r in sel) for k in summ.UNRESOLVED_REASONS}
    e["rerun"] = [r["t_decide"] for r in sel if r.get("t_decide") is not None]
    e["rank_p"] = [r["rank_p"] for r in sel if "rank_p" in r]
    e["settle"] = [r["settle"] for r in sel if r.get("settle") is not None]
    e["wall"] = [r["wall"] for r in sel if "wall" in r]
    return e


class SummarizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dtype = layout.record_dtype()
        cls.a, cls.ref = build_rows(cls.dtype)
        cls.path = os.path.join(cls.tmp.name, "out.h5")
        write_file(cls.path, cls.a)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_row(self, row, e):
        for k in ("trials", "done", "pending", "judged") + summ.VERDICTS:
            self.assertEqual(int(row[k]), e[k], k)
        for v in summ.JUDGED:
            if e["judged"] == 0:
                self.assertEqual(row[v + "_frac"], "")
                continue
            p, lo, hi = wilson_ref(e[v], e["judged"])
            self.assertAlmostEqual(float(row[v + "_frac"]), p, places=12)
            self.assertAlmostEqual(float(row[v + "_lo"]), lo, places=12)
            self.assertAlmostEqual(float(row[v + "_hi"]), hi, places=12)
        for k, count in e["reasons"].items():
            self.assertEqual(int(row["unresolved_" + k] or 0), count, k)
        if e["rerun"]:
            self.assertAlmostEqual(float(row["rerun_T"]), max(e["rerun"]), places=12)
        else:
            self.assertEqual(row["rerun_T"], "")
        for name, xs in (("clusters", e["clusters"]), ("settle", e["settle"]),
                         ("settled_clusters", e["settled_clusters"])):
            if not xs:
                self.assertEqual(row[name + "_median"], "")
                continue
            self.assertAlmostEqual(float(row[name + "_median"]), quantile7(xs, 0.5), places=12)
            self.assertAlmostEqual(float(row[name + "_q1"]), quantile7(xs, 0.25), places=12)
            self.assertAlmostEqual(float(row[name + "_q3"]), quantile7(xs, 0.75), places=12)
        self.assertEqual(int(row["settled"]), len(e["settle"]))
        dist = {}
        for r in e["rank_p"]:
            dist[r] = dist.get(r, 0) + 1
        got = dict(tuple(int(x) for x in t.split(":")) for t in row["rank_p_dist"].split(";")) \
            if row["rank_p_dist"] else {}
        self.assertEqual(got, dist)
        self.assertAlmostEqual(float(row["wall_total"]), sum(e["wall"]), places=9)
        self.assertAlmostEqual(float(row["wall_median"]), statistics.median(e["wall"]),
                               places=12)

    # ------------------------------------------------------------ statistics
    def test_wilson_reference_values(self):
        # Newcombe (1998), Stat. Med. 17:857, Table I, method 3 (Wilson score, no correction)
        for k, n, lo, hi in ((81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
                             (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718),
                             (29, 29, 0.8830, 1.0)):
            p, l, h = summ.wilson(np.array([k]), np.array([n]))
            self.assertAlmostEqual(float(l[0]), lo, places=4)
            self.assertAlmostEqual(float(h[0]), hi, places=4)
        p, l, h = summ.wilson(np.array([0]), np.array([0]))
        self.assertTrue(math.isnan(p[0]) and math.isnan(l[0]) and math.isnan(h[0]))

    def test_wilson_bounds_contain_p(self):
        # lo <= p <= hi for every k <= n <= 300: at k = 0 and k = n the bound equal to p in
        # exact arithmetic is one rounding away from it (80/80 gave hi = 1 - 2^-53 < p = 1)
        n = np.repeat(np.arange(1, 301), np.arange(2, 302))
        k = np.concatenate([np.arange(m + 1) for m in range(1, 301)])
        p, lo, hi = summ.wilson(k, n)
        self.assertTrue(np.all(lo <= p) and np.all(p <= hi), "an interval misses its p")
        self.assertTrue(np.all(lo >= 0) and np.all(hi <= 1))
        self.assertTrue(np.all(hi[k == n] == 1.0) and np.all(lo[k == 0] == 0.0))
        # and away from the ends the interval is the textbook one (the clamp changes nothing)
        mid = (k > 0) & (k < n)
        for i in np.nonzero(mid)[0][::997]:
            _, l, h = wilson_ref(int(k[i]), int(n[i]))
            self.assertAlmostEqual(lo[i], l, places=12)
            self.assertAlmostEqual(hi[i], h, places=12)

    def test_group_quantiles(self):
        rng = np.random.default_rng(3)
        vals = rng.normal(size=200)
        gid = rng.integers(0, 5, 200)
        vals[::7] = np.nan
        q, cnt = summ.group_quantiles(vals, gid, 6, [0.25, 0.5, 0.9])
        for g in range(6):
            xs = [v for v, gg in zip(vals, gid) if gg == g and not math.isnan(v)]
            self.assertEqual(cnt[g], len(xs))
            for j, qq in enumerate((0.25, 0.5, 0.9)):
                if xs:
                    self.assertAlmostEqual(q[g, j], quantile7(xs, qq), places=12)
                else:
                    self.assertTrue(math.isnan(q[g, j]))

    # ------------------------------------------------------------ tables
    def test_default_by_theorem(self):
        rc, out, err = run_main([self.path, "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual([r["theorem"] for r in rows], ["none", "identity", "good"])
        for r in rows:
            self.check_row(r, expected(self.ref, lambda x, t=r["theorem"]: x["theorem"] == t))
        self.assertIn("10 pending", err)
        self.assertIn("INCOMPLETE", err)

    def test_by_two_axes_and_flag(self):
        rc, out, err = run_main([self.path, "--by", "d,eps", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual([(r["d"], r["eps"]) for r in rows],
                         [("2", "0"), ("3", "0"), ("3", "0.1"), ("3", "0.3")])
        for r in rows:
            self.check_row(r, expected(self.ref, lambda x, r=r: x["d"] == int(r["d"]) and
                                       x["eps"] == float(r["eps"])))
        rc, out, err = run_main([self.path, "--by", "flag_good", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual([r["flag_good"] for r in rows], ["no", "yes"])
        self.check_row(rows[1], expected(self.ref, lambda x: x["flags"] & (1 << 5)))

    def test_where(self):
        cases = [
            ("d == 2", lambda x: x["d"] == 2),
            ("theorem in ('good', 'none') and not eps > 0.2",
             lambda x: x["theorem"] in ("good", "none") and not x["eps"] > 0.2),
            ("flag_good and eps >= 0.1", lambda x: x["flags"] & 32 and x["eps"] >= 0.1),
            ("verdict != 'pending' and (d == 3 or theorem == 'identity')",
             lambda x: x["verdict"] != "pending" and (x["d"] == 3 or x["theorem"] == "identity")),
            ("isnan(settle_time)", None),
        ]
        for expr, pred in cases:
            rc, out, err = run_main([self.path, "--by", "", "--where", expr, "--format", "csv"])
            self.assertEqual(rc, 0, expr + ": " + err)
            rows = csv_rows(out)
            self.assertEqual(len(rows), 1)
            if pred is None:
                self.assertEqual(int(rows[0]["settled"]), 0, expr)
                continue
            self.check_row(rows[0], expected(self.ref, pred))
        for bad, needle in (("theorem == 'godo'", "one of"), ("nosuchfield > 1", "nosuchfield"),
                            ("d ==", "cannot parse"), ("__import__('os')", "may be called"),
                            ("d + 1", "not a condition")):
            rc, out, err = run_main([self.path, "--where", bad])
            self.assertEqual(rc, 2, bad)
            self.assertIn(needle, err, bad)

    def ref_classified(self):
        return [r for r in self.ref if "n_clusters" in r]

    def test_not_converged_excluded(self):
        """Trials with outcome not_converged (Sinkhorn attention that missed sinkhorn_tol) are in
        no fraction and no statistic (the rule): the verdict table counts them beside, in the
        column not_converged and in trials and done, and the preamble says how many."""
        a = self.a.copy()
        done = [i for i, r in enumerate(self.ref)
                if r["verdict"] not in ("pending", "failed") and "n_clusters" in r]
        drop = set(done[::5])  # every fifth classified trial, in every theorem group
        for i in drop:
            a["outcome"][i] = code("outcome", "not_converged")
        path = os.path.join(self.tmp.name, "not_converged.h5")
        write_file(path, a)
        kept = [r for i, r in enumerate(self.ref) if i not in drop]
        rc, out, err = run_main([path, "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        for r in rows:
            e = expected(kept, lambda x, t=r["theorem"]: x["theorem"] == t)
            mine = [self.ref[i] for i in sorted(drop) if self.ref[i]["theorem"] == r["theorem"]]
            nc = len(mine)
            self.assertEqual(int(r["not_converged"]), nc, r["theorem"])
            e["trials"] += nc
            e["done"] += nc
            e["wall"] += [x["wall"] for x in mine if "wall" in x]  # they ran
            self.check_row(r, e)
        self.assertIn("not_converged %d" % len(drop), err)
        self.assertIn("counted beside", err)
        rc, out, err = run_main([path, "--by", "", "--stat", "n_clusters:n,median",
                                 "--format", "csv"])
        self.assertEqual(rc, 0, err)
        row = csv_rows(out)[0]
        rc, out, err = run_main([self.path, "--by", "", "--stat", "n_clusters:n,median",
                                 "--format", "csv"])
        whole = csv_rows(out)[0]  # the same file with every trial converged
        self.assertEqual(int(float(row["n_clusters_n"])),
                         int(float(whole["n_clusters_n"])) - len(drop))
        # the dropped trials' counts are not in the median: it moves as the kept ones say
        xs = [r["n_clusters"] for r in kept if "n_clusters" in r]
        zeros = int(float(whole["n_clusters_n"])) - len(self.ref_classified())
        self.assertAlmostEqual(float(row["n_clusters_median"]),
                               statistics.median(xs + [0] * zeros))
        rc, out, err = run_main([self.path, "--format", "csv"])  # none: no such line
        self.assertNotIn("not_converged", err)

    def test_formats_parse(self):
        for fmt in ("md", "csv", "latex"):
            rc, out, err = run_main([self.path, "--by", "theorem,d", "--format", fmt])
            self.assertEqual(rc, 0, err)
            if fmt == "csv":
                rows = list(csv.reader(io.StringIO(out)))
                self.assertEqual(len(rows), 1 + 3)
                self.assertTrue(all(len(r) == len(rows[0]) for r in rows))
            elif fmt == "md":
                tab = [l for l in out.splitlines() if l.startswith("|")]
                self.assertEqual(len(tab), 2 + 3)
                ncol = tab[0].count(" | ")
                self.assertTrue(all(l.replace("\\|", "").count("|") == tab[0].count("|")
                                    for l in tab), out)
                self.assertGreater(ncol, 5)
                self.assertIn("10 pending", out)
            else:
                self.assertIn("\\begin{tabularx}{\\columnwidth}", out)  # --width column
                self.assertIn("\\end{tabularx}", out)
                body = out.split("\\begin{tabularx}")[1].split("\\end{tabularx}")[0]
                lines = [l for l in body.splitlines() if l.endswith("\\\\")
                         and "multicolumn" not in l]
                self.assertEqual(len(lines), 1 + 3)  # header + 3 groups
                amp = {l.replace("\\&", "").count("&") for l in lines}
                self.assertEqual(len(amp), 1, lines)
                self.assertNotIn("_", body.replace("\\_", ""))
                for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
                    self.assertIn(rule, body)

    def test_table1(self):
        rc, out, err = run_main([self.path, "--table1", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual([r["theorem"] for r in rows], TABLE1_LABELS)
        by = {r["theorem"]: r for r in rows}
        self.assertEqual(by["identity"]["reference"], "Thm 3.1")
        self.assertEqual(by["d1"]["trials"], "0")
        e = expected(self.ref, lambda x: x["theorem"] == "good")
        self.assertEqual(int(by["good"]["trials"]), e["trials"])
        p, lo, hi = wilson_ref(e["violated"], e["judged"])
        self.assertAlmostEqual(float(by["good"]["violated_lo"]), lo, places=12)
        rc, out, err = run_main([self.path, "--table1"])
        self.assertEqual(rc, 0, err)
        self.assertIn("Q^T K SPD", out)

    def test_table1_minus_identity_distance_to_uniform(self):
        # The V = -I row shows the distance of P to J/n (its observable), not rank P: a nearly
        # uniform P has a nearly full numerical rank, which would contradict the prediction.
        a = self.a.copy()
        rows = np.nonzero(a["verdict"] == code("verdict", "consistent"))[0][:5]
        dist = np.array([0.004, 0.012, 0.007, 0.009, 0.010])
        a["theorem"][rows] = code("theorem", "minus_identity")
        a["p_uniform_dist"][rows] = dist
        a["rank_p"][rows] = 18
        path = os.path.join(self.tmp.name, "minus.h5")
        write_file(path, a)
        rc, out, err = run_main([path, "--table1", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        by = {r["theorem"]: r for r in csv_rows(out)}
        self.assertAlmostEqual(float(by["minus_identity"]["p_uniform_dist_median"]),
                               float(np.median(dist)), places=12)
        self.assertAlmostEqual(float(by["minus_identity"]["p_uniform_dist_max"]), 0.012,
                               places=12)
        rc, out, err = run_main([path, "--table1"])
        self.assertEqual(rc, 0, err)
        row = [l for l in out.splitlines() if l.startswith("| minus_identity")][0]
        self.assertIn("dist to J/n 0.009 (0.012)", row)
        self.assertNotIn("18:5", row)
        self.assertIn("above 1e-06 sigma_1", out)  # rank P's tolerance is stated

    def test_table1_by(self):
        # --table1 --by d: one Table 1 per value of d (md, LaTeX), one csv table with a d column
        rc, out, err = run_main([self.path, "--table1", "--by", "d", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual(len(rows), 2 * len(TABLE1_LABELS))
        self.assertEqual(sorted({r["d"] for r in rows}), ["2", "3"])
        for r in rows:
            e = expected(self.ref, lambda x, r=r: x["d"] == int(r["d"]) and
                         x["theorem"] == r["theorem"])
            self.assertEqual(int(r["trials"]), e["trials"], (r["d"], r["theorem"]))
            self.assertEqual(int(r["judged"]), e["judged"], (r["d"], r["theorem"]))
        rc, out, err = run_main([self.path, "--table1", "--by", "d"])
        self.assertEqual(rc, 0, err)
        self.assertIn("measured verdicts (d = 2)", out)
        self.assertIn("measured verdicts (d = 3)", out)
        rc, out, err = run_main([self.path, "--table1", "--by", "d", "--format", "latex"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("\\begin{tabularx}"), 2)
        self.assertIn("{$d = 2$}", out)

    def test_csv_rank_distribution_whole(self):
        # nine distinct ranks: the display shows the mode and the range, the csv all nine
        a = self.a.copy()
        done = np.nonzero(a["n_clusters"] > 0)[0]
        ranks = (np.arange(len(done)) % 9) + 1
        a["rank_p"][done] = ranks
        path = os.path.join(self.tmp.name, "ranks.h5")
        write_file(path, a)
        rc, out, err = run_main([path, "--by", "", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        row = csv_rows(out)[0]
        got = dict(tuple(int(x) for x in t.split(":")) for t in row["rank_p_dist"].split(";"))
        want = {r: int((ranks == r).sum()) for r in range(1, 10)}
        self.assertEqual(got, want)
        rc, out, err = run_main([path, "--by", "", "--table1", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("+", "".join(r["rank_p_dist"] for r in csv_rows(out)))
        rc, out, err = run_main([path, "--by", ""])
        # md: the modal rank (the smallest of the most frequent) with its share and the range
        mode = min(want, key=lambda r: (-want[r], r))
        self.assertIn("| %d (%.0f%%) [1, 9] |" % (mode, 100.0 * want[mode] / len(ranks)), out)

    def test_settle_column_only_when_settling(self):
        rc, out, err = run_main([self.path])
        self.assertIn("settle time", out)  # some trials settled
        a = self.a.copy()
        a["settle_time"] = np.nan
        path = os.path.join(self.tmp.name, "nosettle.h5")
        write_file(path, a)
        for fmt, needle in (("md", "settle time"), ("latex", "settle time")):
            rc, out, err = run_main([path, "--format", fmt])
            self.assertEqual(rc, 0, err)
            self.assertNotIn(needle, out, fmt)
        rc, out, err = run_main([path, "--format", "csv"])
        self.assertEqual([r["settled"] for r in csv_rows(out)], ["0", "0", "0"])  # csv keeps it
        # a file that records settle_window: the key decides even when nothing settled
        if "settle_window" in a.dtype.names:
            b = a
        else:
            dt = np.dtype([(n, self.a.dtype[n]) for n in self.a.dtype.names] +
                          [("settle_window", "<f8")])
            b = np.zeros(len(a), dtype=dt)
            for n in a.dtype.names:
                b[n] = a[n]
        b["settle_window"] = 0.5
        path = os.path.join(self.tmp.name, "window.h5")
        write_file(path, b)
        rc, out, err = run_main([path])
        self.assertIn("settle time", out)
        self.assertIn("(0 settled)", out)

    def test_phase(self):
        png = os.path.join(figure_dir(self.tmp.name), "summarize_phase_eps_good.png")
        rc, out, err = run_main([self.path, "--phase", "eps", "--where", "theorem == 'good'",
                                 "--format", "csv", "--png", png])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual([r["eps"] for r in rows], ["0", "0.1", "0.3"])
        fr = [float(r["consistent_frac"]) for r in rows]
        self.assertEqual(fr, sorted(fr, reverse=True))
        for r in rows:
            self.check_row(r, expected(self.ref, lambda x, r=r: x["theorem"] == "good" and
                                       x["eps"] == float(r["eps"])))
        with open(png, "rb") as fh:
            self.assertEqual(fh.read(8), b"\x89PNG\r\n\x1a\n")
        # a continuous parameter is binned into quantile bins
        rc, out, err = run_main([self.path, "--phase", "wall_time", "--bins", "4", "--by", "",
                                 "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rows = csv_rows(out)
        self.assertEqual(len(rows), 5)  # 4 bins + n/a (pending rows)
        self.assertEqual(sum(int(r["trials"]) for r in rows), len(self.ref))

    def test_enum_labels_come_from_the_file(self):
        # verdict labels with shuffled values: the counts must follow the labels
        labels = LABELS["verdict"]
        mapping = {l: (i * 3 + 2) % 11 + 20 for i, l in enumerate(labels)}
        path = os.path.join(self.tmp.name, "shuffled.h5")
        write_file(path, self.a, enum_override=("verdict", mapping))
        rc, out, err = run_main([path, "--format", "csv"])
        self.assertEqual(rc, 0, err)
        for r in csv_rows(out):
            self.check_row(r, expected(self.ref, lambda x, t=r["theorem"]: x["theorem"] == t))

    def test_schema_tracks_record_h(self):
        self.assertEqual(layout.flag_bits(), schema.FLAG_BITS)
        names = [f["name"] for f in layout.fields()]
        for f in summ.STAT_FIELDS + list(schema.REQUIRED_FIELDS) + ["theorem", "flags"]:
            self.assertIn(f, names)
        for v in summ.VERDICTS + ("pending",):
            self.assertIn(v, LABELS["verdict"])
        for t in TABLE1_LABELS:
            self.assertIn(t, LABELS["theorem"])
        with schema.open_results(self.path) as rf:
            self.assertEqual(rf.fields, names)
            self.assertEqual(rf.labels("theorem"), LABELS["theorem"])
            self.assertEqual(rf.attrs["master_seed"], 12345)

    def test_n_trials_mismatch_and_bad_files(self):
        path = os.path.join(self.tmp.name, "short.h5")
        write_file(path, self.a, n_trials=len(self.a) + 5)
        rc, out, err = run_main([path])
        self.assertEqual(rc, 0, err)
        self.assertIn("differs", out)
        rc, out, err = run_main([os.path.join(self.tmp.name, "missing.h5")])
        self.assertEqual(rc, 2)
        self.assertIn("no such file", err)
        notres = os.path.join(self.tmp.name, "other.h5")
        with h5py.File(notres, "w") as f:
            f.create_dataset("x", data=np.arange(3))
        rc, out, err = run_main([notres])
        self.assertEqual(rc, 2)
        self.assertIn("/trials", err)
        txt = os.path.join(self.tmp.name, "text.h5")
        with open(txt, "w") as fh:
            fh.write("not hdf5\n")
        rc, out, err = run_main([txt])
        self.assertEqual(rc, 3)
        rc, out, err = run_main([self.path, "--by", "nosuch"])
        self.assertEqual(rc, 2)
        self.assertIn("nosuch", err)
        rc, out, err = run_main([self.path, "--by", "message"])
        self.assertEqual(rc, 2)
        rc, out, err = run_main([self.path, "--format", "xml"])
        self.assertEqual(rc, 2)

    def test_output_file(self):
        dest = os.path.join(self.tmp.name, "table.tex")
        rc, out, err = run_main([self.path, "--format", "latex", "-o", dest])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "")
        with open(dest) as fh:
            self.assertIn("\\begin{tabularx}", fh.read())

    def test_cli(self):
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        p = subprocess.run([exe, "summarize", self.path, "--by", "d", "--format", "csv"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = csv_rows(p.stdout)
        self.assertEqual([r["d"] for r in rows], ["2", "3"])
        p = subprocess.run([exe, "summarize", os.path.join(self.tmp.name, "missing.h5")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        env = dict(os.environ, ATTNSWEEP_PYTHON="/nonexistent/python3")
        p = subprocess.run([exe, "summarize", self.path], capture_output=True, text=True,
                           timeout=60, env=env)
        self.assertEqual(p.returncode, 3)
        self.assertIn("python3", p.stderr)
        env = dict(os.environ, ATTNSWEEP_PYTHON="/usr/bin/python3")
        p = subprocess.run([exe, "summarize", self.path, "--where", "d =="],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 2)


SCRIPT = os.path.join(SRC, "analysis", "attnsweep_summarize.py")


def figure_dir(tmp):
    """Where the tests leave what they draw, for a person to look at: $AS_BUILD_DIR/figures
    under ctest, else the test's temporary directory."""
    b = os.environ.get("AS_BUILD_DIR")
    if not b:
        return tmp
    d = os.path.join(b, "figures")
    os.makedirs(d, exist_ok=True)
    return d


@unittest.skipIf(shutil.which("pdflatex") is None, "pdflatex is not installed "
                 "(tests/deps.sh --test installs texlive-latex-base, -recommended)")
class LatexRenderTest(unittest.TestCase):
    """The LaTeX tables compile in a plain article (with booktabs and tabularx) and fit its
    text width: no error and no "Overfull \\hbox" in the log."""

    def test_tables_fit_the_article(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        dtype = layout.record_dtype()
        a, _ = build_rows(dtype)
        path = os.path.join(tmp.name, "out.h5")
        write_file(path, a)
        parts = []
        for args in (["--table1"], ["--table1", "--by", "d"], ["--by", "theorem,d"],
                     ["--by", "eps"], ["--by", "theorem,d,eps,flag_good"], ["--by", ""]):
            rc, out, err = run_main([path, "--format", "latex"] + args)
            self.assertEqual(rc, 0, err)
            parts.append(out)
        tex = "\n".join(parts)
        # mathematics in math mode, not escaped text
        self.assertIn(r"$Q^\top K$ SPD", tex)
        self.assertIn(r"$\lambda_1$", tex)
        for bad in (r"\^{}", r"lambda\_1", r"Q\^", "$<$="):
            self.assertNotIn(bad, tex)
        doc = os.path.join(tmp.name, "tables.tex")
        with open(doc, "w") as fh:
            fh.write("\\documentclass{article}\n\\usepackage{%s}\n\\begin{document}\n%s\n"
                     "\\end{document}\n" % (",".join(summ.LATEX_PACKAGES), tex))
        p = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                            "tables.tex"], cwd=tmp.name, capture_output=True, text=True,
                           timeout=300)
        with open(os.path.join(tmp.name, "tables.log"), errors="replace") as fh:
            log = fh.read()
        self.assertEqual(p.returncode, 0, log[-3000:])
        errors = [l for l in log.splitlines() if l.startswith("!")]
        self.assertEqual(errors, [])
        overfull = [l for l in log.splitlines() if "Overfull \\hbox" in l]
        self.assertEqual(overfull, [], "tables wider than their column")
        self.assertGreaterEqual(log.count("[1"), 1)  # a page was shipped out
        shutil.copy(os.path.join(tmp.name, "tables.pdf"),
                    os.path.join(figure_dir(tmp.name), "summarize_tables.pdf"))


class ExitPathTest(unittest.TestCase):
    """Every way attnsweep summarize can fail ends in ONE line on stderr and a documented exit
    status (2 bad arguments or fields, 3 I/O or a missing module or an internal error, 130
    interrupted), never a traceback. Run as the user runs it: a subprocess of the script."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        dtype = layout.record_dtype()
        a, _ = build_rows(dtype)
        cls.path = os.path.join(t, "out.h5")
        write_file(cls.path, a)
        cls.big = os.path.join(t, "big.h5")  # tables larger than a pipe buffer
        big = np.concatenate([a] * 40)
        big["trial"] = np.arange(len(big))
        write_file(cls.big, big)
        cls.other = os.path.join(t, "other.h5")
        with h5py.File(cls.other, "w") as f:
            f.create_dataset("x", data=np.arange(3))
        cls.text = os.path.join(t, "text.h5")
        with open(cls.text, "w") as fh:
            fh.write("not hdf5\n")
        cls.cut = os.path.join(t, "cut.h5")
        with open(cls.big, "rb") as fh:
            data = fh.read()
        with open(cls.cut, "wb") as fh:
            fh.write(data[:len(data) // 3])
        # Python modules that fail to import, shadowing the real ones
        for mod in ("numpy", "h5py", "matplotlib"):
            d = os.path.join(t, "no_" + mod, mod)
            os.makedirs(d)
            with open(os.path.join(d, "__init__.py"), "w") as fh:
                fh.write("raise ImportError(\"No module named '%s' (test)\")\n" % mod)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_script(self, args, env=None):
        p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, **(env or {})))
        return p.returncode, p.stdout, p.stderr

    def check_failure(self, args, rc, needle=None, env=None):
        got, out, err = self.run_script(args, env)
        what = " ".join(args)
        self.assertEqual(got, rc, "%s: rc %d, stderr %r" % (what, got, err))
        self.assertNotIn("Traceback", err, what)
        lines = [l for l in err.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, "%s: not one line: %r" % (what, err))
        self.assertTrue(lines[0].startswith("attnsweep summarize: "), lines[0])
        if needle:
            self.assertIn(needle, lines[0], what)

    def test_bad_arguments(self):
        t = self.tmp.name
        png = os.path.join(t, "f.png")
        for args, needle in (
                ([], "file"), ([self.path, "--bogus"], "--bogus"),
                ([self.path, "--format", "xml"], "xml"), ([self.path, "--bins", "0"], "bins"),
                ([self.path, "--bins", "x"], "bins"), ([self.path, "--plot", "x"], "plot"),
                ([self.path, "--by", "nosuch"], "nosuch"), ([self.path, "--by", "message"], "text"),
                ([self.path, "--where", "d =="], "cannot parse"),
                ([self.path, "--where", "theorem == 'x'"], "one of"),
                ([self.path, "--phase", "nosuch"], "nosuch"),
                ([self.path, "--plot", "1"], "--png"), ([self.path, "--png", png], "--phase"),
                ([self.path, "--plot", "9999", "--png", png], "9999"),
                ([self.path, "--plot", "0", "--png", png], "no stored tokens"),
                ([self.other], "/trials")):
            self.check_failure(args, 2, needle)

    def test_io_failures(self):
        t = self.tmp.name
        self.check_failure([os.path.join(t, "missing.h5")], 2, "no such file")
        self.check_failure([self.text], 3, self.text)
        self.check_failure([self.cut], 3, self.cut)
        for dest in (os.path.join(t, "no", "such", "dir", "f.png"), t):
            self.check_failure([self.path, "--phase", "eps", "--png", dest, "-o", os.devnull],
                               3, dest)
        self.check_failure([self.path, "-o", os.path.join(t, "no", "table.txt")], 3,
                           os.path.join(t, "no", "table.txt"))

    def test_missing_modules(self):
        png = os.path.join(self.tmp.name, "m.png")
        for mod, args in (("numpy", [self.path]), ("h5py", [self.path]),
                          ("matplotlib", [self.path, "--phase", "eps", "--png", png])):
            env = {"PYTHONPATH": os.path.join(self.tmp.name, "no_" + mod)}
            self.check_failure(args, 3, "python3-" + mod, env=env)

    def test_broken_pipe(self):
        p = subprocess.Popen([sys.executable, SCRIPT, self.big, "--by", "trial"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()  # the reader went away (| head -0)
        err = p.stderr.read().decode()
        p.stderr.close()
        rc = p.wait(timeout=120)
        self.assertNotIn("Traceback", err)
        self.assertNotIn("Exception ignored", err)
        self.assertEqual(rc, 3, err)

    def test_internal_error_and_interrupt(self):
        import attnsweep.cli as cli
        real = cli.summary_tables

        def boom(*a, **k):
            raise ValueError("synthetic bug")

        def interrupted(*a, **k):
            raise KeyboardInterrupt

        try:
            for fake, rc, needle in ((boom, 3, "internal error"), (interrupted, 130,
                                                                   "interrupted")):
                cli.summary_tables = fake
                got, out, err = run_main([self.path])
                self.assertEqual(got, rc, err)
                lines = err.strip().splitlines()
                self.assertEqual(len(lines), 1, err)
                self.assertIn(needle, lines[0])
            cli.summary_tables = boom
            got, out, err = run_main([self.path])
            self.assertIn("synthetic bug", err)
            self.assertRegex(err, r"test_summarize\.py:\d+")  # where the bug is
        finally:
            cli.summary_tables = real

    def test_full_group_phase_png(self):
        # the case of issue 20: a phase point with 80 of 80 consistent drew no error bars
        dtype = layout.record_dtype()
        a = np.zeros(160, dtype=dtype)
        a["theorem"] = code("theorem", "identity")
        a["outcome"] = code("outcome", "reached_T")
        a["eps"][80:] = 0.1
        a["verdict"][:80] = code("verdict", "consistent")
        a["verdict"][80:] = [code("verdict", "violated" if i % 3 else "consistent")
                             for i in range(80)]
        path = os.path.join(self.tmp.name, "full.h5")
        write_file(path, a)
        png = os.path.join(figure_dir(self.tmp.name), "summarize_phase_full_group.png")
        rc, out, err = self.run_script([path, "--phase", "eps", "--png", png])
        self.assertEqual(rc, 0, err)
        with open(png, "rb") as fh:
            self.assertEqual(fh.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    import optional
    optional.main(verbosity=1)
