#!/usr/bin/python3
"""The LaTeX tables of every kind (the --by table of one file and of two, Table 1 with and
without --by and --drop-empty, the robustness tables, the phase table, --stat, --pair,
--measure, --series) compile with pdflatex in
a two-column article: `--width column` inside `table` within \\columnwidth, `--width page`
inside `table*` within the text width; the log has no error and no "Overfull \\hbox". Also:
--drop-empty leaves out exactly the theorem rows without trials or near misses, the rank-P
cell is the modal rank with its share and range, and --where says what it filters of the
near-miss columns. Synthetic files of test_summarize, test_robustness and test_curves."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_summarize as ts  # noqa: E402
import test_robustness as tr  # noqa: E402
import test_curves as tc  # noqa: E402
import test_meanfield as tm  # noqa: E402
import test_stat as tst  # noqa: E402

summ = ts.summ


@unittest.skipIf(shutil.which("pdflatex") is None, "pdflatex is not installed "
                 "(tests/deps.sh --test installs texlive-latex-base, -recommended)")
class TwoColumnTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        cls.by = os.path.join(t, "by.h5")
        a, _ = ts.build_rows(ts.layout.record_dtype())
        ts.write_file(cls.by, a)
        cls.rob = os.path.join(t, "rob.h5")
        tr.write(cls.rob, tr.build(np.random.default_rng(16), n=200))
        cls.pert = os.path.join(t, "pert.h5")
        pa, _ = tc.build(np.random.default_rng(3))
        tr.write(cls.pert, pa)
        import h5py
        with h5py.File(cls.pert, "a") as f:
            f.attrs["common_keys"] = "T"
            f["trials"].attrs["coordinates"] = np.array(
                [b"eps", b"perturb", b"T", b"replicate"])

        # a sphere sweep: the --by table gains the sphere's default columns
        cls.sph = os.path.join(t, "sph.h5")
        pa["norm"] = tc.LABELS["norm"].index("sphere")
        pa["n_plateaus"], pa["plateau_length"] = 2, 1.5
        pa["t_last_merge"], pa["n_clusters_track"] = 3.25, 3
        tr.write(cls.sph, pa)
        cls.mf = os.path.join(t, "mf.h5")
        tm.write(cls.mf)
        tst.SeriesTest.setUpClass()  # snapshots of 8 trials: the --series table
        cls.series = tst.SeriesTest.path

    @classmethod
    def tearDownClass(cls):
        tst.SeriesTest.tearDownClass()
        cls.tmp.cleanup()

    KINDS = [("by", ["--by", "theorem,d"]), ("by", ["--by", "theorem,d,eps,flag_good"]),
             ("by", ["--by", ""]), ("by", ["--table1"]), ("by", ["--table1", "--by", "d"]),
             ("by", ["--table1", "--drop-empty"]), ("rob", ["--table1"]),
             ("rob", ["--robustness"]), ("rob", ["--robustness", "--bins", "1"]),
             ("pert", ["--robustness", "--by", "perturb", "--bins", "1"]),
             ("pert", ["--phase", "eps", "--by", "perturb"]),
             ("pert", ["--by", "perturb,eps", "--stat", "near_dist:median,max"]),
             ("pert", ["--pair", "T", "--by", "perturb"]),
             ("sph", ["--by", "perturb,eps"]), ("sph", ["@pert", "--by", "perturb"]),
             ("sph", ["@pert", "--by", ""]), ("mf", ["--measure"]),
             ("series", ["--series", "residual,diameter,clusters,hull", "--by", "skip"])]

    def tables(self, width):
        parts = []
        for f, args in self.KINDS:
            more = [getattr(self, a[1:]) for a in args if a.startswith("@")]  # more files
            args = [a for a in args if not a.startswith("@")]
            rc, out, err = ts.run_main([getattr(self, f)] + more + ["--format", "latex",
                                                                    "--width", width] + args)
            self.assertEqual(rc, 0, (args, err))
            self.assertIn("begin{tabularx}{%s}" % ("\\columnwidth" if width == "column"
                                                   else "\\linewidth"), out)
            env = "table" if width == "column" else "table*"
            parts.append("\\begin{%s}\\centering\n%s\\caption{%s}\\end{%s}\n\\clearpage\n" % (
                env, out, summ.latex_escape(" ".join(args)), env))
        return "".join(parts)

    def compile(self, name, body):
        doc = os.path.join(self.tmp.name, name + ".tex")
        with open(doc, "w") as fh:
            fh.write("\\documentclass[twocolumn]{article}\n\\usepackage{%s}\n"
                     "\\begin{document}\n%s\n\\end{document}\n" %
                     (",".join(summ.LATEX_PACKAGES), body))
        p = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                            name + ".tex"], cwd=self.tmp.name, capture_output=True,
                           text=True, timeout=300)
        with open(os.path.join(self.tmp.name, name + ".log"), errors="replace") as fh:
            log = fh.read()
        self.assertEqual(p.returncode, 0, log[-3000:])
        self.assertEqual([ln for ln in log.splitlines() if ln.startswith("!")], [])
        over = [ln for ln in log.splitlines() if "Overfull \\hbox" in ln]
        self.assertEqual(over, [], "%s: tables wider than their width" % name)
        self.assertGreaterEqual(log.count("[%d" % len(self.KINDS)), 1)  # every page shipped
        shutil.copy(os.path.join(self.tmp.name, name + ".pdf"),
                    os.path.join(ts.figure_dir(self.tmp.name), "latex_" + name + ".pdf"))

    def test_column_width(self):
        self.compile("column", self.tables("column"))

    def test_page_width(self):
        self.compile("page", self.tables("page"))

    def test_default_columns_at_page_width(self):
        # the sphere's default columns (plateaus, last merge) need the page; a column omits them
        outs = {}
        for w in ("column", "page"):
            rc, outs[w], err = ts.run_main([self.sph, "--by", "perturb,eps", "--format",
                                            "latex", "--width", w])
            self.assertEqual(rc, 0, err)
        body = {w: o.split("\\toprule")[1].split("\\bottomrule")[0] for w, o in outs.items()}
        self.assertIn("plateaus", body["page"])
        self.assertNotIn("plateaus", body["column"])

    def test_drop_empty_and_rank_cells(self):
        rc, full, _ = ts.run_main([self.by, "--table1", "--format", "csv"])
        rc2, kept, _ = ts.run_main([self.by, "--table1", "--format", "csv", "--drop-empty"])
        self.assertEqual((rc, rc2), (0, 0))
        rows, krows = ts.csv_rows(full), ts.csv_rows(kept)
        empty = [r["theorem"] for r in rows if r["trials"] == "0" and
                 r["near_miss_trials"] in ("", "0")]
        self.assertTrue(empty)
        self.assertEqual([r["theorem"] for r in krows],
                         [r["theorem"] for r in rows if r["theorem"] not in empty])
        for r in krows:  # the rows kept are unchanged
            self.assertIn(r, rows)
        # rank P in md: mode (share) [range], from the csv's full distribution
        rc, md, _ = ts.run_main([self.by, "--by", "theorem"])
        rc, cs, _ = ts.run_main([self.by, "--by", "theorem", "--format", "csv"])
        for r in ts.csv_rows(cs):
            if not r["rank_p_dist"]:
                continue
            dist = dict(tuple(int(x) for x in t.split(":")) for t in r["rank_p_dist"].split(";"))
            tot = sum(dist.values())
            mode = min(dist, key=lambda k: (-dist[k], k))
            cell = "%d (%.0f%%)" % (mode, 100.0 * dist[mode] / tot)
            if min(dist) != max(dist):
                cell += " [%d, %d]" % (min(dist), max(dist))
            line = [ln for ln in md.splitlines() if ln.startswith("| %s |" % r["theorem"])][0]
            self.assertIn("| %s |" % cell, line)

    def test_where_names_what_it_filters(self):
        rc, out, _ = ts.run_main([self.rob, "--table1", "--where", "theorem == 'good'"])
        self.assertEqual(rc, 0)
        m = re.search(r"filters the near-miss columns too: (\d+) of the file's (\d+)", out)
        self.assertIsNotNone(m, out[-2000:])
        a = tr.build(np.random.default_rng(16), n=200)
        miss = (a["near_theorem"] != a["theorem"])
        good = a["theorem"] == tr.code("theorem", "good")
        self.assertEqual((int(m.group(1)), int(m.group(2))),
                         (int((miss & good).sum()), int(miss.sum())))


if __name__ == "__main__":
    import optional
    optional.main()
