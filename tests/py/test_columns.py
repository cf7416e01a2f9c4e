#!/usr/bin/python3
"""Tests of `attnsweep summarize --columns KEY` (--robustness and --stat with a column per
value of KEY, docs/analysis.md) on the synthetic results file of test_robustness with a T axis
added: each cell's counts and Wilson interval recomputed from the rows, the row totals, the
csv (the long table of --by ...,KEY), the refused combinations, and the LaTeX of both tables
compiled with pdflatex in a two-column article without an overfull box."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_robustness as tr  # noqa: E402

summ = tr.summ


def md_tables(text):
    """{title without its ", by KEY" tail: (header, rows)} of the md tables in the output."""
    out, title, lines = {}, None, []
    for line in text.split("\n") + ["## end"]:
        if line.startswith("## "):
            if title and lines:
                cells = [[c.strip() for c in l.strip().strip("|").split("|")] for l in lines]
                out[title.split(" (")[0].split(", by ")[0]] = (cells[0], cells[2:])
            title, lines = line[3:], []
        elif line.startswith("|") and title:
            lines.append(line)
    return out



class ColumnsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_columns_pivot(self):
        """--columns T: each cell's consistent/judged, recomputed from the rows at that T; the
        row's trials the sum over T; the csv the long table of --by ...,T. --stat --columns:
        each cell's k/n of the trials at that T."""
        a = tr.build(np.random.default_rng(16))
        ts = np.array([5.0, 15.0, 45.0])
        a["T"] = ts[np.arange(len(a)) % 3]
        a["d"] = np.where(np.arange(len(a)) % 7 < 3, 2, 3)
        p = os.path.join(self.tmp.name, "cols.h5")
        tr.write(p, a)
        self.addCleanup(os.remove, p)
        rc, out, err = tr.run([p, "--robustness", "--by", "d", "--columns", "T", "--bins", "1"])
        self.assertEqual(rc, 0, err)
        tabs = md_tables(out)
        head, rows = tabs["near verdict against near_dist"]
        self.assertEqual(head, ["d", "near theorem", "near_dist", "x (median)", "trials",
                                "T = 5", "T = 15", "T = 45"])
        near = np.array([tr.LABELS["theorem"][c] for c in a["near_theorem"]])
        nv = np.array([tr.LABELS["verdict"][c] for c in a["near_verdict"]])
        side = np.sign(a["near_dist"])
        self.assertEqual(sum(int(r[4]) for r in rows), int(np.isin(near, ["identity",
                                                                          "good"]).sum()))
        for r in rows:
            # --bins 1: a point per side of 0 (its label a value or [lo, hi])
            sgn = 0.0 if r[2] == "0" else 1.0
            sel = (a["d"] == int(r[0])) & (near == r[1]) & (side == sgn)
            self.assertEqual(int(r[4]), int(sel.sum()), r)
            for t, cell in zip(ts, r[5:]):
                at = sel & (a["T"] == t)
                k = int((at & (nv == "consistent")).sum())
                j = int((at & np.isin(nv, tr.JUDGED)).sum())
                p_, lo, hi = tr.wilson_ref(k, j)
                self.assertEqual(cell, "%d/%d = %.3f [%.3f, %.3f]" % (k, j, p_, lo, hi), r)
        # csv: the long table of --by d,T, which pandas reads as one table
        rc, out_c, err = tr.run([p, "--robustness", "--by", "d", "--columns", "T", "--bins", "1",
                              "--format", "csv"])
        self.assertEqual(rc, 0, err)
        rc, out_l, err = tr.run([p, "--robustness", "--by", "d,T", "--bins", "1", "--format",
                              "csv"])
        self.assertEqual(out_c, out_l)
        self.assertTrue(out_c.startswith("d,T,near_theorem,distance,bin,"))
        rc, out_t, err = tr.run([p, "--robustness", "--by", "d", "--columns", "T", "--bins", "1",
                              "--format", "latex"])
        self.assertEqual(rc, 0, err)
        self.assertIn("T = 45", out_t)
        # --stat --columns: k/n of near_verdict == consistent among the judged trials at each T
        # (the rule: consistent + violated + unresolved)
        rc, out, err = tr.run([p, "--stat", "near_verdict:=consistent", "--by", "d", "--columns",
                            "T"])
        self.assertEqual(rc, 0, err)
        (head, rows), = md_tables(out).values()
        self.assertEqual(head, ["d", "trials", "T = 5", "T = 15", "T = 45"])
        for r in rows:
            sel = a["d"] == int(r[0])
            self.assertEqual(int(r[1]), int(sel.sum()))
            for t, cell in zip(ts, r[2:]):
                at = sel & (a["T"] == t)
                k = int((at & (nv == "consistent")).sum())
                judged = at & np.isin(nv, ["consistent", "violated", "unresolved"])
                self.assertTrue(cell.endswith("(%d/%d)" % (k, int(judged.sum()))), (r, cell))
        for bad in (["--robustness", "--columns", "T", "--by", "d,T"],
                    ["--columns", "T"], ["--robustness", "--columns", "nosuchkey"],
                    ["--robustness", "--columns", "T", "--png", "x.png"],
                    ["--stat", "n_clusters", "--columns", "T,d"],
                    ["--robustness", "--columns", "T", "--pair"]):
            rc, out, err = tr.run([p] + bad)
            self.assertEqual(rc, 2, bad)
            self.assertIn("--columns", err, bad)


    @unittest.skipIf(shutil.which("pdflatex") is None, "pdflatex is not installed "
                     "(tests/deps.sh --test installs texlive-latex-base, -recommended)")
    def test_latex_compiles(self):
        a = tr.build(np.random.default_rng(16), n=200)
        a["T"] = np.array([5.0, 15.0, 45.0])[np.arange(len(a)) % 3]
        p = os.path.join(self.tmp.name, "tex.h5")
        tr.write(p, a)
        body = []
        # one statistic per value fits a column, two the page (as --stat without --columns:
        # every statistic is a column)
        for width, env, stats in (("column", "table", ["near_verdict:=consistent"]),
                                  ("page", "table*", ["near_verdict:=consistent",
                                                      "near_dist:median"])):
            for args in (["--robustness", "--by", "d", "--columns", "T", "--bins", "1"],
                         ["--stat"] + stats + ["--by", "d", "--columns", "T"]):
                rc, out, err = tr.run([p, "--format", "latex", "--width", width] + args)
                self.assertEqual(rc, 0, err)
                self.assertIn("T = 45", out)
                body.append("\\begin{%s}\\centering\n%s\\end{%s}\n\\clearpage\n" %
                            (env, out, env))
        doc = os.path.join(self.tmp.name, "cols.tex")
        with open(doc, "w") as fh:
            fh.write("\\documentclass[twocolumn]{article}\n\\usepackage{%s}\n"
                     "\\begin{document}\n%s\n\\end{document}\n" %
                     (",".join(summ.LATEX_PACKAGES), "".join(body)))
        r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                            "cols.tex"], cwd=self.tmp.name, capture_output=True, text=True,
                           timeout=300)
        with open(os.path.join(self.tmp.name, "cols.log"), errors="replace") as fh:
            log = fh.read()
        self.assertEqual(r.returncode, 0, log[-3000:])
        self.assertEqual([ln for ln in log.splitlines() if ln.startswith("!")], [])
        self.assertEqual([ln for ln in log.splitlines() if "Overfull \\hbox" in ln], [])


if __name__ == "__main__":
    import optional
    optional.main()
