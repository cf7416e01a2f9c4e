#!/usr/bin/python3
"""Tests of `attnsweep summarize -o FILE.nc` and `-o FILE.parquet` (docs/analysis.md, "pandas
and xarray"): the netCDF file holds the tidy csv's table column by column (numbers equal, NaN
where the csv is empty, text as text), for the default table and the long robustness table;
Parquet writes the same frame where pyarrow or fastparquet is installed and otherwise fails
with exit 3 naming what is missing, leaving no file; a binary format without -o is a usage
error (exit 2). The synthetic results file is test_robustness's."""

import io
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_robustness as tr  # noqa: E402

try:
    import pandas as pd
    import xarray as xr
except ImportError:  # pragma: no cover (Debian's python3-pandas and python3-xarray)
    pd = xr = None


def have_parquet_engine():
    for mod in ("pyarrow", "fastparquet"):
        try:
            __import__(mod)
            return True
        except ImportError:
            pass
    return False


@unittest.skipIf(pd is None, "python3-pandas and python3-xarray are needed")
class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.h5 = os.path.join(cls.tmp.name, "exp.h5")
        tr.write(cls.h5, tr.build(np.random.default_rng(7)))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def csv_frame(self, args):
        rc, out, err = tr.run([self.h5] + args + ["--format", "csv"])
        self.assertEqual(rc, 0, err)
        return pd.read_csv(io.StringIO(out))

    def same_frame(self, got, want, ordered=True):
        if ordered:
            self.assertEqual(list(got.columns), list(want.columns))
        else:  # (a netCDF file's variables have no order that a reader must keep)
            self.assertEqual(sorted(got.columns), sorted(want.columns))
        self.assertEqual(len(got), len(want))
        self.assertGreater(len(want), 0)
        for c in want.columns:
            w, g = want[c], got[c]
            if w.dtype == object:
                self.assertEqual(list(g.astype(str)), list(w.fillna("").astype(str)), c)
            else:
                wv, gv = w.to_numpy(dtype=float), g.to_numpy(dtype=float)
                self.assertTrue(np.array_equal(np.isnan(wv), np.isnan(gv)), c)
                ok = ~np.isnan(wv)
                self.assertTrue(np.array_equal(wv[ok], gv[ok]), c)

    def test_netcdf_tables(self):
        for args in (["--by", "theorem"], ["--robustness", "--by", "case_name", "--bins", "2"]):
            with self.subTest(args=args):
                nc = os.path.join(self.tmp.name, "t.nc")
                rc, _, err = tr.run([self.h5] + args + ["-o", nc])
                self.assertEqual(rc, 0, err)
                with xr.open_dataset(nc) as ds:
                    self.assertEqual(list(ds.dims), ["row"])
                    got = ds.to_dataframe().reset_index(drop=True)
                self.same_frame(got, self.csv_frame(args), ordered=False)
                os.remove(nc)

    def test_parquet(self):
        pq = os.path.join(self.tmp.name, "t.parquet")
        rc, _, err = tr.run([self.h5, "--by", "theorem", "-o", pq])
        if have_parquet_engine():
            self.assertEqual(rc, 0, err)
            self.same_frame(pd.read_parquet(pq), self.csv_frame(["--by", "theorem"]))
            os.remove(pq)
        else:
            self.assertEqual(rc, 3, err)
            self.assertIn("pyarrow", err)
            self.assertIn(pq, err)
        self.assertEqual([f for f in os.listdir(self.tmp.name) if "parquet" in f], [])

    def test_binary_format_needs_output(self):
        rc, out, err = tr.run([self.h5, "--format", "netcdf"])
        self.assertEqual(rc, 2)
        self.assertIn("-o FILE", err)
        self.assertEqual(out, "")


if __name__ == "__main__":
    unittest.main()
