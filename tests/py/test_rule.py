#!/usr/bin/python3
"""THE rule of every fraction (issue 48, point 1), checked on every consumer against one
independent recount written here.

judged = consistent + violated + unresolved; no_prediction, not_converged (an outcome, whatever
the verdict), nonfinite and failed are excluded from every fraction and counted beside; pending
trials are neither. A synthetic results file (the row layout from the binary, `attnsweep help
fields --json`) holds every outcome, every reason and every verdict, in `verdict` and in
`near_verdict` (never the same one on a row, with their own reasons and horizons, so a consumer
that mixes the two families is caught); a second file pairs with it trial by trial. recount()
below counts the rows by the rule; each consumer's numbers must equal it:

* the verdict table (--by theorem, csv): every count, judged, the fractions with their Wilson
  intervals, the unresolved trials by reason and the horizon to rerun at;
* Table 1 (csv): the trials whose hypotheses hold and the near misses (judged by near_verdict);
* --phase eps --by perturb with --verdict exact and near: fractions, reasons and horizons of one
  family, the eps = 0 baseline in each perturb curve (fault 3);
* --robustness --bins 1 with the default (near) and --verdict exact;
* --stat verdict:=consistent near_verdict:=violated (fault 5's statistic);
* --pair between the two files: the paired test on the pairs judged on both sides, the others
  counted (fault 2), McNemar's p recomputed from binomial sums;
* the phase figure's plotted points; the report's verdict table; jobs/referees' records and its
  sentence's denominator;
* --stat ... --by eps,perturb,d --png: each line's eps = 0 point is the baseline of its own d
  (fault 4), read back from the figure.
"""

import csv
import html.parser
import io
import math
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import h5py
import numpy as np

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
sys.path.insert(0, os.path.join(SRC, "jobs", "referees"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optional  # noqa: E402
from attnsweep import cli, figures, layout, schema, tables  # noqa: E402

Z = 1.959963984540054
VERDICTS = ("consistent", "violated", "unresolved", "no_prediction", "nonfinite", "failed",
            "pending")
JUDGED = ("consistent", "violated", "unresolved")
EXCLUDED = ("no_prediction", "not_converged", "nonfinite", "failed")
#: the outcomes a trial with an ordinary verdict may have
RAN = ("reached_T", "settled", "max_steps", "not_converged")
NEAR_HYPOTHESES = ("d1: dist_m_posdef dist_gap; identity: dist_v_identity dist_m_symmetric "
                   "dist_m_posdef; minus_identity: dist_v_minus_identity dist_m_identity; "
                   "paranormal: dist_m_symmetric dist_m_posdef dist_paranormal; good: "
                   "dist_lead_real dist_gap dist_margin")


def wilson(k, n):
    """The Wilson score interval, written out (Newcombe 1998, method 3)."""
    p = k / n
    a = 2 * n * p + Z * Z
    b = Z * math.sqrt(Z * Z + 4 * n * p * (1 - p))
    return p, max(0.0, (a - b) / (2 * (n + Z * Z))), min(1.0, (a + b) / (2 * (n + Z * Z)))


def outcome_of(verdict, k):
    return {"failed": "failed", "nonfinite": "nonfinite", "pending": "pending"}.get(
        verdict, RAN[k % len(RAN)])


def build(seed, n=900):
    """Rows as dicts (labels) covering every verdict x outcome x reason of both families."""
    rng = np.random.default_rng(seed)
    reasons = layout.enum_labels()["reason"]
    unres_reasons = ["moving", "metastable", "merging", "mixing", "precision",
                     "precision_vars_x"]
    viol_reasons = [r for r in reasons if r not in unres_reasons + ["none"]] or ["none"]
    rows = []
    for i in range(n):
        v = VERDICTS[i % len(VERDICTS)]
        # near_verdict: another verdict of the same kind of trial (never the same label)
        if v in ("failed", "nonfinite", "pending"):
            nv = v
        else:
            pool = [x for x in ("consistent", "violated", "unresolved", "no_prediction")
                    if x != v]
            nv = pool[(i // len(VERDICTS)) % len(pool)]
        r = {"trial": i, "verdict": v, "near_verdict": nv,
             "outcome": outcome_of(v, i // len(VERDICTS)),
             "theorem": ("identity", "good", "none")[(i // 3) % 3],
             "d": (2, 3)[(i // 5) % 2], "eps": (0.0, 0.01, 0.1)[(i // 11) % 3]}
        r["near_theorem"] = r["theorem"] if r["theorem"] != "none" else \
            ("identity", "good")[(i // 13) % 2]
        r["perturb"] = "-" if r["eps"] == 0 else ("v", "both")[(i // 17) % 2]
        for fam, verdict in (("", v), ("near_", nv)):
            if verdict == "unresolved":
                r[fam + "reason"] = unres_reasons[(i // 7 + len(fam)) % len(unres_reasons)]
                r[fam + "t_decide"] = float(rng.uniform(10, 100)) if i % 4 else math.nan
            elif verdict == "violated":
                r[fam + "reason"] = viol_reasons[i % len(viol_reasons)]
                r[fam + "t_decide"] = math.nan
            else:
                r[fam + "reason"] = "none"
                r[fam + "t_decide"] = math.nan
        r["near_dist"] = 0.0 if r["theorem"] == r["near_theorem"] else \
            float(10 ** rng.uniform(-3, 0))
        r["dist_m_posdef"] = float(10 ** rng.uniform(-3, 0))
        r["n_clusters"] = int(rng.integers(1, 6))
        rows.append(r)
    return rows


def write(path, rows, spec_name):
    dt = layout.record_dtype()
    lab = {f: h5py.check_enum_dtype(dt[f]) for f in dt.names if h5py.check_enum_dtype(dt[f])}
    a = np.zeros(len(rows), dtype=dt)
    for f in dt.names:
        if dt[f].kind == "f":
            a[f] = np.nan
    for i, r in enumerate(rows):
        for k, v in r.items():
            if k in lab:
                a[k][i] = lab[k][v]
            else:
                a[k][i] = v
        a["n"][i] = 8
        a["replicate"][i] = i
        a["n_clusters_all"][i] = r["n_clusters"]
        a["wall_time"][i] = 0.001 if r["outcome"] != "pending" else math.nan
    with h5py.File(path, "w") as f:
        f.create_dataset("trials", data=a)
        f["trials"].attrs["near_hypotheses"] = NEAR_HYPOTHESES
        import subprocess
        f["trials"].attrs["theorem_table"] = subprocess.run(
            [layout.binary_path(), "help", "theorem_table"], check=True, capture_output=True,
            text=True).stdout.rstrip("\n")
        f.attrs["n_trials"] = np.uint64(len(a))
        f.attrs["tool_version"] = "0.1.0"
        f.attrs["schema_version"] = np.uint64(4)
        f.attrs["spec_name"] = spec_name


def category(r, family=""):
    """THE rule, written again: the category of one row for a verdict family."""
    if r["outcome"] == "pending" or r["verdict"] == "pending":
        return "pending"
    if r["outcome"] == "not_converged":
        return "not_converged"
    return r[family + "verdict"]


def recount(rows, family=""):
    """Counts of every category, judged, the fractions with Wilson intervals, the unresolved
    by reason and the largest horizon of the unresolved ones, for a verdict family."""
    c = {k: 0 for k in JUDGED + EXCLUDED + ("pending",)}
    by_reason, horizons = {}, []
    for r in rows:
        cat = category(r, family)
        c[cat] += 1
        if cat == "unresolved":
            by_reason[r[family + "reason"]] = by_reason.get(r[family + "reason"], 0) + 1
            if not math.isnan(r[family + "t_decide"]):
                horizons.append(r[family + "t_decide"])
    c["trials"] = len(rows)
    c["judged"] = sum(c[v] for v in JUDGED)
    c["excluded"] = sum(c[v] for v in EXCLUDED)
    for v in JUDGED:
        c[v + "_ci"] = wilson(c[v], c["judged"]) if c["judged"] else None
    c["by_reason"] = by_reason
    c["rerun"] = max(horizons) if horizons else None
    return c


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


class RuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.rows = build(1)
        cls.path = os.path.join(cls.tmp.name, "a.h5")
        write(cls.path, cls.rows, "a.yaml")
        # the pair: the same trials (coordinates), the verdicts and outcomes of another
        # file's rows in a random order
        other = build(2)
        cls.rows_b = [other[j] for j in np.random.default_rng(3).permutation(len(other))]
        for i, (ra, rb) in enumerate(zip(cls.rows, cls.rows_b)):
            rb["trial"] = i
            for k in ("theorem", "near_theorem", "d", "eps", "perturb", "near_dist",
                      "dist_m_posdef"):
                rb[k] = ra[k]
        cls.path_b = os.path.join(cls.tmp.name, "b.h5")
        write(cls.path_b, cls.rows_b, "b.yaml")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assertCounts(self, row, e, names=JUDGED + ("no_prediction", "nonfinite", "failed"),
                     where=""):
        for k in names:
            self.assertEqual(int(row[k]), e[k], "%s %s" % (where, k))

    def assertFractions(self, row, e, prefix="", where=""):
        for v in JUDGED:
            if e["judged"] == 0:
                self.assertEqual(row[prefix + v + "_frac"], "", where)
                continue
            for got, want in zip((row[prefix + v + "_frac"], row[prefix + v + "_lo"],
                                  row[prefix + v + "_hi"]), e[v + "_ci"]):
                self.assertAlmostEqual(float(got), want, places=12, msg="%s %s" % (where, v))

    def test_file_covers_everything(self):
        cats = {category(r) for r in self.rows} | {category(r, "near_") for r in self.rows}
        self.assertEqual(cats, set(JUDGED + EXCLUDED + ("pending",)))
        self.assertEqual({r["outcome"] for r in self.rows},
                         set(RAN) | {"failed", "nonfinite", "pending"})
        self.assertTrue(all(r["verdict"] != r["near_verdict"] for r in self.rows
                            if r["verdict"] in JUDGED))
        reasons = {r["reason"] for r in self.rows} | {r["near_reason"] for r in self.rows}
        self.assertTrue({"moving", "metastable", "merging", "mixing", "precision",
                         "precision_vars_x", "none"} <= reasons)

    def test_verdict_table(self):
        rc, out, err = run([self.path, "--by", "theorem", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        got = csv_rows(out)
        self.assertEqual(len(got), 3)
        for row in got:
            sel = [r for r in self.rows if r["theorem"] == row["theorem"]]
            e = recount(sel)
            self.assertCounts(row, e, where=row["theorem"])
            self.assertEqual(int(row["not_converged"]), e["not_converged"])
            self.assertEqual(int(row["trials"]), e["trials"])
            self.assertEqual(int(row["judged"]), e["judged"])
            self.assertEqual(int(row["done"]), e["trials"] - e["pending"])
            self.assertFractions(row, e, where=row["theorem"])
            for reason, k in e["by_reason"].items():
                self.assertEqual(int(row["unresolved_" + reason]), k, reason)
            if e["rerun"] is None:
                self.assertEqual(row["rerun_T"], "")
            else:
                self.assertAlmostEqual(float(row["rerun_T"]), e["rerun"], places=12)
        total = recount(self.rows)
        self.assertIn("judged = consistent + violated + unresolved: %d" % total["judged"], err)
        for v in EXCLUDED:
            self.assertIn("%s %d" % (v, total[v]), err)

    def test_table1(self):
        rc, out, err = run([self.path, "--table1", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        by = {r["theorem"]: r for r in csv_rows(out)}
        for th in ("identity", "good"):
            e = recount([r for r in self.rows if r["theorem"] == th])
            self.assertEqual(int(by[th]["trials"]), e["trials"], th)
            self.assertEqual(int(by[th]["judged"]), e["judged"], th)
            self.assertFractions(by[th], e, where=th)
            for v in EXCLUDED:
                self.assertEqual(int(by[th][v]), e[v], th + " " + v)
            near = recount([r for r in self.rows if r["near_theorem"] == th and
                            r["theorem"] != th], "near_")
            self.assertEqual(int(by[th]["near_miss_trials"]), near["trials"], th)
            self.assertEqual(int(by[th]["near_miss_judged"]), near["judged"], th)
            self.assertEqual(int(by[th]["near_miss_consistent"]), near["consistent"], th)
            self.assertEqual(int(by[th]["near_miss_excluded"]), near["excluded"], th)
            p, lo, hi = near["consistent_ci"]
            self.assertAlmostEqual(float(by[th]["near_miss_consistent_frac"]), p, places=12)
            self.assertAlmostEqual(float(by[th]["near_miss_consistent_lo"]), lo, places=12)

    def test_phase_one_family(self):
        for choice, fam in (("exact", ""), ("near", "near_")):
            rc, out, err = run([self.path, "--phase", "eps", "--by", "perturb", "--verdict",
                                choice, "--format", "csv"])
            self.assertEqual(rc, 0, err)
            got = csv_rows(out)
            self.assertTrue(got)
            for row in got:
                eps = float(row["eps"])
                # the eps = 0 baseline (perturb `-`) is in every perturb curve
                sel = [r for r in self.rows if r["eps"] == eps and
                       (eps == 0 or r["perturb"] == row["perturb"])]
                e = recount(sel, fam)
                where = "%s eps %s %s" % (choice, row["eps"], row["perturb"])
                self.assertCounts(row, e, where=where)
                self.assertFractions(row, e, where=where)
                # reasons and horizons of the same family (fault 3)
                for reason, k in e["by_reason"].items():
                    self.assertEqual(int(row["unresolved_" + reason]), k, where + reason)
                if e["rerun"] is None:
                    self.assertEqual(row["rerun_T"], "", where)
                else:
                    self.assertAlmostEqual(float(row["rerun_T"]), e["rerun"], places=12)
            self.assertIn("verdict: %s" % ("near_verdict" if fam else "verdict"), err)

    def test_robustness_one_family(self):
        for argv, fam in (([], "near_"), (["--verdict", "exact"], ""),
                          (["--verdict", "near"], "near_")):
            rc, out, err = run([self.path, "--robustness", "--bins", "1", "--format", "csv"] +
                               argv)
            self.assertEqual(rc, 0, err)
            for row in csv_rows(out):
                if row["distance"] != "near_dist":
                    continue
                lo, hi = float(row["lo"]), float(row["hi"])
                sel = [r for r in self.rows if r["near_theorem"] == row["near_theorem"] and
                       lo <= float("%.10g" % r["near_dist"]) <= hi and
                       (r["near_dist"] > 0) == (float(row["x"]) > 0)]
                e = recount(sel, fam)
                where = "%s %s %s" % (argv, row["near_theorem"], row["bin"])
                self.assertEqual(int(row["trials"]), e["trials"], where)
                self.assertEqual(int(row["judged"]), e["judged"], where)
                for v in JUDGED:
                    self.assertEqual(int(row[v]), e[v], where + v)
                self.assertEqual(int(row["other"]), e["excluded"], where)
                if e["judged"]:
                    self.assertAlmostEqual(float(row["consistent_frac"]),
                                           e["consistent_ci"][0], places=12)

    def test_stat_fractions(self):
        rc, out, err = run([self.path, "--stat", "verdict:=consistent", "near_verdict:=violated",
                            "--by", "theorem", "--format", "csv"])
        self.assertEqual(rc, 0, err)
        for row in csv_rows(out):
            sel = [r for r in self.rows if r["theorem"] == row["theorem"]]
            e, en = recount(sel), recount(sel, "near_")
            self.assertEqual(int(row["verdict_n"]), e["judged"])
            self.assertEqual(int(row["near_verdict_n"]), en["judged"])
            p, lo, hi = e["consistent_ci"]
            self.assertAlmostEqual(float(row["verdict_eq_consistent"]), p, places=12)
            self.assertAlmostEqual(float(row["verdict_eq_consistent_lo"]), lo, places=12)
            self.assertAlmostEqual(float(row["verdict_eq_consistent_hi"]), hi, places=12)
            self.assertAlmostEqual(float(row["near_verdict_eq_violated"]),
                                   en["violated_ci"][0], places=12)

    def test_pair_between_files(self):
        rc, out, err = run([self.path, self.path_b, "--pair", "--stat", "verdict:=consistent",
                            "--format", "csv"])
        self.assertEqual(rc, 0, err)
        row, = csv_rows(out)
        both = [(ra, rb) for ra, rb in zip(self.rows, self.rows_b)
                if category(ra) in JUDGED and category(rb) in JUDGED]
        self.assertGreater(len(both), 50)
        pos = sum(1 for ra, rb in both if category(ra) != "consistent" and
                  category(rb) == "consistent")
        neg = sum(1 for ra, rb in both if category(ra) == "consistent" and
                  category(rb) != "consistent")
        n = pos + neg
        pval = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(pos, neg) + 1)) / 2 ** n)
        self.assertEqual(int(row["verdict_eq_consistent_pairs"]), len(both))
        self.assertEqual(int(row["verdict_eq_consistent_pos"]), pos)
        self.assertEqual(int(row["verdict_eq_consistent_neg"]), neg)
        self.assertAlmostEqual(float(row["verdict_eq_consistent_p"]), pval, places=12)
        # every other matched pair (a side pending, not_converged, no_prediction, nonfinite
        # or failed) is counted beside
        self.assertGreater(pos, 10)
        self.assertGreater(neg, 10)
        self.assertEqual(int(row["verdict_eq_consistent_excluded"]),
                         len(self.rows) - len(both))
        ma = sum(category(ra) == "consistent" for ra, _ in both) / len(both)
        self.assertAlmostEqual(float(row["verdict_eq_consistent_mean_a"]), ma, places=12)
        rc, out, err = run([self.path, self.path_b, "--pair", "--stat", "verdict:=consistent"])
        self.assertEqual(rc, 0, err)
        self.assertIn("pairs not judged on both sides", out)

    def test_phase_figure(self):
        with schema.open_results(self.path) as rf:
            _, _, phase = tables.summary_tables(rf, ["perturb"], None, phase="eps",
                                                verdict="exact")
        fig = figures.plot_phase(phase)
        seen = 0
        for ax in fig.axes:
            if ax.get_title() != "consistent":
                continue
            for c in ax.containers:
                label = c.get_label()
                x, y = c.lines[0].get_data()
                for xi, yi in zip(x, y):
                    sel = [r for r in self.rows if r["eps"] == xi and
                           (xi == 0 or label == "perturb = %s" % r["perturb"])]
                    e = recount(sel)
                    self.assertAlmostEqual(yi, e["consistent_ci"][0], places=12, msg=label)
                    seen += 1
        self.assertGreaterEqual(seen, 6)
        figures.plt.close(fig)

    def test_report(self):
        page = os.path.join(self.tmp.name, "r.html")
        from attnsweep import report
        with redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([self.path, "-o", page, "--trials", "0"]), 0)

        class Tables(html.parser.HTMLParser):
            def __init__(self):
                super().__init__()
                self.tables, self.cell, self.caption = [], None, None

            def handle_starttag(self, tag, attrs):
                if tag == "table":
                    self.tables.append({"caption": "", "rows": []})
                elif tag == "tr":
                    self.tables[-1]["rows"].append([])
                elif tag in ("td", "th"):
                    self.cell = ""
                elif tag == "caption":
                    self.caption = ""

            def handle_endtag(self, tag):
                if tag in ("td", "th") and self.cell is not None:
                    self.tables[-1]["rows"][-1].append(self.cell)
                    self.cell = None
                elif tag == "caption":
                    self.tables[-1]["caption"], self.caption = self.caption, None

            def handle_data(self, data):
                if self.cell is not None:
                    self.cell += data
                if self.caption is not None:
                    self.caption += data
        p = Tables()
        with open(page) as fh:
            p.feed(fh.read())
        t = next(t for t in p.tables if t["caption"] == "by theorem")
        head = t["rows"][0]
        for r in t["rows"][1:]:
            cells = dict(zip(head, r))
            e = recount([x for x in self.rows if x["theorem"] == cells["theorem"]])
            self.assertEqual(int(cells["trials"]), e["trials"])
            for v in JUDGED:
                want = "-" if not e["judged"] else "%.3f [%.3f, %.3f]" % e[v + "_ci"]
                self.assertEqual(cells["%s [95%% CI]" % v], want, cells["theorem"])
            other = ", ".join("%s %d" % (v, e[v]) for v in EXCLUDED if e[v]) or "-"
            self.assertEqual(cells["other"], other)

    def test_referees(self):
        import referees
        with schema.open_results(self.path) as rf:
            _, rec = referees.stat_records(rf, ["theorem"], ["verdict:=consistent"])
        for r in rec:
            e = recount([x for x in self.rows if x["theorem"] == r["theorem"]])
            self.assertEqual(int(r["verdict_n"]), e["judged"])
            self.assertAlmostEqual(r["verdict_eq_consistent"], e["consistent_ci"][0],
                                   places=12)
            self.assertEqual(referees.judged(r), "%.0f%% (of %d judged)" % (
                100 * e["consistent_ci"][0], e["judged"]))
        self.assertEqual(referees.judged({"verdict_eq_consistent": None, "verdict_n": 0}),
                         "none judged")


class StatFigureBaselineTest(unittest.TestCase):
    """--stat FIELD --by eps,perturb,d --png (fault 4): each line's eps = 0 point is the
    baseline of its own d, read back from the drawn figure."""

    def test_each_line_its_own_baseline(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        rows = []
        for i in range(240):
            eps = (0.0, 0.01, 0.1)[i % 3]
            d = (2, 3)[(i // 3) % 2]
            rows.append({"trial": i, "eps": eps, "d": d,
                         "perturb": "-" if eps == 0 else ("v", "both")[(i // 6) % 2],
                         "verdict": "consistent", "near_verdict": "consistent",
                         "outcome": "reached_T", "theorem": "identity",
                         "near_theorem": "identity", "reason": "none",
                         "near_reason": "none", "t_decide": math.nan,
                         "near_t_decide": math.nan, "near_dist": 0.0, "dist_m_posdef": 0.1,
                         # the d = 2 and d = 3 baselines differ by far
                         "n_clusters": (1 if d == 2 else 5) if eps == 0 else 3})
        path = os.path.join(tmp.name, "p.h5")
        write(path, rows, "p.yaml")
        png = os.path.join(tmp.name, "p.png")
        figs = []
        orig = figures.plot_lines
        figures.plot_lines = lambda c, p: figs.append(orig(c, None)) or figs[-1]
        try:
            rc, out, err = run([path, "--stat", "n_clusters:mean", "--by", "eps,perturb,d",
                                "--png", png])
        finally:
            figures.plot_lines = orig
        self.assertEqual(rc, 0, err)
        ax = figs[0].axes[0]
        lines = {c.get_label(): c.lines[0].get_data() for c in ax.containers}
        self.assertEqual(len(lines), 4)  # perturb v, both x d 2, 3; no `-` line
        for label, (x, y) in lines.items():
            d = 2 if "d = 2" in label else 3
            self.assertEqual(x[0], 0.0, label)
            self.assertEqual(list(x).count(0.0), 1, label)
            self.assertAlmostEqual(y[0], 1.0 if d == 2 else 5.0, msg=label)
            self.assertTrue(np.allclose(y[1:], 3.0), label)
        figures.plt.close(figs[0])


if __name__ == "__main__":
    optional.main(verbosity=1)
