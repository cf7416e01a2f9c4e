#!/usr/bin/python3
"""`attnsweep report` (analysis/attnsweep_report.py) on a real, tiny sweep.

The sweep (two cases, an eps axis, a failing case, stored tokens and snapshots) runs in about a
second. The page must hold the file's provenance (its spec SHA-256 and every root attribute, as
h5py reads them), its completeness, the failure with its message, a verdict table whose counts
per theorem are those h5py counts in /trials, Table 1, the near-miss robustness, a section per
varied key and the figures (as many <figure> elements as the command reports, each an inline
PNG); nothing that loads from elsewhere (no script, no http(s) URL). Bad arguments and files are
exit 2 with one line. tests/py/test_report_browser.py loads the same page in Chromium.
"""

import base64
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

BIN = os.environ.get("ATTNSWEEP", "attnsweep")
MPIEXEC = os.environ.get("MPIEXEC", "mpiexec")

SPEC = """\
name: report_test
seed: 33
replicates: 3
output: {final: true, snapshots: [1, 2]}
defaults: {n: 6, T: 3, dt: 0.2, mfamily: identity, init: {kind: box, scale: 3}}
sweep:
  concat:
    - {case: id, vfamily: identity, d: 2, eps: [0, 0.1], perturb: v,
       triple_seed: per_parameters}
    - {case: good, vfamily: perron, d: 3}
    - {case: bad, vfamily: identity, d: 2, ranks_per_trial: 2}
"""

#: names that must never appear as a URL the page loads (src, href, url(), @import)
REMOTE = re.compile(r"""(?:src|href|srcset)\s*=\s*["']?\s*(?:https?:|ftp:|//)|"""
                    r"""url\(\s*["']?\s*(?:https?:|//)|@import""", re.I)


def make_results(tmp):
    """Runs the tiny sweep into tmp/r.h5 on one rank: exit 4, the 'bad' case (a trial that
    needs 2 ranks per trial) fails on purpose with its message."""
    spec = os.path.join(tmp, "s.yaml")
    out = os.path.join(tmp, "r.h5")
    with open(spec, "w") as fh:
        fh.write(SPEC)
    p = subprocess.run([MPIEXEC, "-n", "1", BIN, "run", spec, "-o", out],
                       capture_output=True, text=True)
    assert p.returncode == 4, p.stderr
    return out


def report(files, out, *extra):
    return subprocess.run([BIN, "report", *files, "-o", out, *extra], capture_output=True,
                          text=True)


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="as_report_")
        cls.h5 = make_results(cls.tmp)
        cls.page = os.path.join(cls.tmp, "report.html")
        p = report([cls.h5], cls.page)
        cls.rc, cls.stdout, cls.stderr = p.returncode, p.stdout, p.stderr
        with open(cls.page, encoding="utf-8") as fh:
            cls.html = fh.read()
        cls.text = html.unescape(re.sub(r"<[^>]+>", " ", cls.html))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_written(self):
        self.assertEqual(self.rc, 0, self.stderr)
        self.assertRegex(self.stdout, r"wrote .*report\.html: 1 files, \d+ figures")

    def test_provenance(self):
        with h5py.File(self.h5, "r") as f:
            attrs = {k: f.attrs[k] for k in f.attrs}
        for k, v in attrs.items():
            v = v.decode() if isinstance(v, bytes) else str(v)
            self.assertIn(k, self.text)
            if v and len(v) < 200:
                self.assertIn(" ".join(v.split()), " ".join(self.text.split()), k)
        self.assertRegex(attrs["spec_sha256"].decode() if isinstance(
            attrs["spec_sha256"], bytes) else attrs["spec_sha256"], r"^[0-9a-f]{64}$")
        self.assertIn("name: report_test", self.text)  # the stored spec

    def test_completeness_and_failures(self):
        with h5py.File(self.h5, "r") as f:
            t = f["trials"][:]
            labels = h5py.check_enum_dtype(f["trials"].dtype["verdict"])
        n = len(t)
        self.assertIn("trials: %d rows, %d done" % (n, n), self.text)
        failed = t["verdict"] == labels["failed"]
        self.assertEqual(int(failed.sum()), 3)  # the 'bad' case's three replicates
        msg = t["message"][np.nonzero(failed)[0][0]].decode().strip("\0")
        self.assertTrue(msg)
        self.assertIn(" ".join(msg.split()), " ".join(self.text.split()))
        self.assertIn("failed and non-finite trials, by message", self.text)
        self.assertNotIn("No trial failed", self.text)

    def test_verdict_counts(self):
        """The 'by theorem' table: trials per theorem as h5py counts them."""
        with h5py.File(self.h5, "r") as f:
            t = f["trials"][:]
            th = {v: k for k, v in h5py.check_enum_dtype(f["trials"].dtype["theorem"]).items()}
        m = re.search(r"<caption>by theorem</caption>.*?<tbody>(.*?)</tbody>", self.html, re.S)
        self.assertIsNotNone(m)
        rows = {}
        for r in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S):
            cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", r, re.S)]
            rows[cells[0]] = int(cells[1])
        want = {}
        for v in t["theorem"]:
            want[th[int(v)]] = want.get(th[int(v)], 0) + 1
        self.assertEqual(rows, want)
        self.assertIn("consistent [95% CI]", self.text)

    def test_sections(self):
        for s in ("Provenance", "Completeness and failures", "Verdicts",
                  "Table 1 of the paper", "Near-miss robustness", "What the sweep varies",
                  "Time series from the snapshots", "Trials"):
            self.assertIn(s, self.text)
        self.assertIn("by eps", self.text)  # the numeric axis's phase table
        self.assertIn("by vfamily", self.text)  # the enum axis's table

    def test_figures_inline(self):
        n = int(re.search(r"(\d+) figures", self.stdout).group(1))
        self.assertGreaterEqual(n, 3)  # robustness, phase (eps), series, trials
        figs = re.findall(r'<figure id="(fig-\d+)"[^>]*><img [^>]*src="data:image/png;base64,'
                          r'([A-Za-z0-9+/=]+)"', self.html)
        self.assertEqual(len(figs), n)
        self.assertEqual(len(re.findall(r"<figure\b", self.html)), n)
        for _, data in figs:
            self.assertEqual(base64.b64decode(data)[:8], b"\x89PNG\r\n\x1a\n")

    def test_self_contained(self):
        self.assertNotRegex(self.html, r"<script\b")
        self.assertNotRegex(self.html, r"<link\b")
        self.assertIsNone(REMOTE.search(self.html))
        # the check itself finds a remote image
        self.assertIsNotNone(REMOTE.search('<img src="https://x.org/a.png">'))

    def test_bad_arguments(self):
        out = os.path.join(self.tmp, "x.html")
        for args in ([self.h5], [os.path.join(self.tmp, "none.h5"), "-o", out],
                     [self.h5, "-o", out, "--bins", "0"], [self.h5, "-o", out, "--frob"],
                     [self.h5, self.h5, "-o", out]):
            p = subprocess.run([BIN, "report", *args], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith("attnsweep report: "), p.stderr)
        self.assertFalse(os.path.exists(out))
        p = subprocess.run([BIN, "report", self.h5, "-o", self.h5], capture_output=True,
                           text=True)  # never over its input
        self.assertEqual(p.returncode, 2, p.stderr)
        p = subprocess.run([BIN, "help", "report"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("usage: attnsweep report", p.stdout)
        self.assertIn("--trials", p.stdout)


if __name__ == "__main__":
    import optional
    optional.main(argv=sys.argv[:1] + ["-v"])
