#!/usr/bin/python3
"""Every shipped sweep in pandas and xarray (issue 48, point 3 and fault 1).

The default sweep (`attnsweep run -o default.h5`, no spec) and every spec of jobs/examples are
run by the built attnsweep (each stopped after a second of work with --time-limit: a partial
file has every field; the mean-field sweeps with fewer tokens, as tests/py/test_doc_tables.py
shrinks them; specs that read files this checkout does not have leave failed trials, which
is fine here). For each file:

* load_trials reads it: every field of /trials is a column (case_name as `case`), the uint64
  fields (matrix hashes: at or above 2^63 in the default sweep) stay uint64 with their values;
* to_xarray makes a Dataset of each case (of the whole file when it has no cases);

and for jobs/examples/perturbed.yaml, run whole, the eps = 0 baseline joins each perturb curve:
every (d, replicate, perturb) cell at eps = 0 holds a baseline trial, the k-th baseline trial
of a (d, replicate) in plan order is the k-th perturb value's, and the verdicts there are
those of the rows.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optional  # noqa: E402

pd = __import__("pandas") if optional.have("pandas") else None
xr = __import__("xarray") if optional.have("xarray") else None
if pd is not None:
    from attnsweep import load_trials, to_xarray  # noqa: E402

#: spec text substitutions that make a sweep small enough for a test (the mean field: n and
#: its reference runs by the thousand, as tests/py/test_doc_tables.py shrinks them)
SHRINK = {
    "meanfield": [(r"n: \[100000, 10000, 1000, 100\]", "n: [400, 200, 100, 50]"),
                  (r"reference_n: \[10000, 1000, 100, 10\]", "reference_n: [40, 20, 10, 5]")],
    "meanfield_seeds": [(r"n: \[10000, 1000, 100\]", "n: [200, 100, 50]"),
                        (r"reference_n: \[1000, 100, 10\]", "reference_n: [20, 10, 5]")],
}


def run(exe, spec, out, cwd, limit=True):
    argv = [exe, "run"] + ([spec] if spec else []) + ["-o", out] + \
        (["--time-limit", "1"] if limit else [])
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300)
    # 0 done, 4 done with failed trials (a file the spec reads is missing here), 99 stopped
    if p.returncode not in (0, 4, 99):
        raise AssertionError("%s: exit %d: %s" % (" ".join(argv), p.returncode, p.stderr))
    return out


@unittest.skipIf(pd is None, optional.missing("pandas"))
class ExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exe = os.environ.get("ATTNSWEEP")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_file(self, path):
        df = load_trials(path)
        with h5py.File(path, "r") as f:
            raw = f["trials"][:]
        names = raw.dtype.names
        cols = set(df.columns) | {"trial"}
        for n in names:
            self.assertIn("case" if n == "case_name" else n, cols, "%s: %s" % (path, n))
        for n in names:
            if raw.dtype[n].kind == "u" and n != "trial":
                self.assertEqual(str(df[n].dtype), "uint64", "%s: %s" % (path, n))
                np.testing.assert_array_equal(df[n].to_numpy(), raw[n], "%s: %s" % (path, n))
        if xr is None:
            return df
        cases = list(df["case"].cat.categories) if "case" in df.columns else [None]
        for c in cases:
            sub = df if c is None else df[df["case"] == c]
            if len(sub) and sub[[k for k in df.attrs["coordinates"]
                                 if k in sub.columns]].nunique(dropna=True).max() > 1:
                with self.subTest(file=os.path.basename(path), case=c):
                    ds = to_xarray(sub)
                    self.assertGreater(len(ds.sizes), 0)
        return df

    def test_default_sweep(self):
        if not self.exe:
            self.skipTest("ATTNSWEEP (the built executable) not given")
        path = run(self.exe, None, os.path.join(self.tmp.name, "default.h5"), self.tmp.name,
                   limit=False)
        df = self.check_file(path)
        hashes = [n for n in df.columns if n.endswith("_hash")]
        self.assertTrue(hashes)
        # the default sweep's explicit matrices: hashes at or above 2^63 (fault 1)
        self.assertTrue(any(int(df[n].max()) >= 2 ** 63 for n in hashes))

    def test_every_example(self):
        if not self.exe:
            self.skipTest("ATTNSWEEP (the built executable) not given")
        specs = sorted(glob.glob(os.path.join(SRC, "jobs", "examples", "*.yaml")))
        self.assertGreaterEqual(len(specs), 20)
        for spec in specs:
            name = os.path.basename(spec)[:-5]
            with open(spec) as fh:
                text = fh.read()
            for pat, rep in SHRINK.get(name, []):
                text, k = re.subn(pat, rep, text)
                self.assertEqual(k, 1, "%s: %s" % (name, pat))
            local = os.path.join(self.tmp.name, name + ".yaml")  # the shrunk text
            with open(local, "w") as fh:
                fh.write(text)
            with self.subTest(example=name):
                path = run(self.exe, spec if name not in SHRINK else local,
                           os.path.join(self.tmp.name, name + ".h5"), self.tmp.name)
                self.check_file(path)

    @unittest.skipIf(xr is None, optional.missing("xarray"))
    def test_perturbed_baseline(self):
        if not self.exe:
            self.skipTest("ATTNSWEEP (the built executable) not given")
        path = run(self.exe, os.path.join(SRC, "jobs", "examples", "perturbed.yaml"),
                   os.path.join(self.tmp.name, "perturbed_whole.h5"), self.tmp.name,
                   limit=False)
        df = load_trials(path)
        ds = to_xarray(df)
        self.assertEqual(set(ds.sizes), {"replicate", "d", "eps", "perturb"})
        self.assertIn("eps = 0", ds.attrs["baseline"])
        base = df[df["eps"] == 0]
        values = list(pd.unique(df.loc[df["eps"] != 0, "perturb"]))
        for (d, rep), g in base.groupby(["d", "replicate"]):
            trials = sorted(g.index)
            self.assertEqual(len(trials), len(values))
            for k, v in enumerate(values):
                cell = ds.sel(d=d, replicate=rep, eps=0.0, perturb=v)
                self.assertEqual(int(cell["trial"]), trials[k], (d, rep, v))
                self.assertEqual(str(cell["verdict"].values), str(df.loc[trials[k], "verdict"]))
        # every cell of the grid holds a trial
        self.assertFalse(bool(ds["trial"].isnull().any()))


if __name__ == "__main__":
    optional.main(verbosity=1)
