#!/usr/bin/python3
"""Tests of `attnsweep summarize -o FILE.nc` and `-o FILE.parquet` (docs/analysis.md, "pandas
and xarray"): the netCDF file holds the tidy csv's table column by column (numbers equal, NaN
where the csv is empty, text as text), for the default table and the long robustness table,
written by each netCDF library summarize can use (netCDF4, else scipy, else h5netcdf: each run
with the ones before it hidden, tests/tools/hide_modules) and read back by each engine that
reads that format; without any, exit 3 naming the packages. Parquet writes the same frame
with each of pyarrow and fastparquet that is installed (the other hidden) and without both
fails with exit 3 naming what is missing, leaving no file; a binary format without -o is a
usage error (exit 2). A library that is not installed is a skipped subtest naming its
package. The synthetic results file is test_robustness's."""

import io
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import optional  # noqa: E402
import test_robustness as tr  # noqa: E402

try:
    import pandas as pd
    import xarray as xr
except ImportError:  # pragma: no cover (Debian's python3-pandas and python3-xarray)
    pd = xr = None

SCRIPT = os.path.join(tr.SRC, "analysis", "attnsweep_summarize.py")
HIDE = os.path.join(HERE, "..", "tools", "hide_modules")
#: the netCDF writers summarize takes, in its order: (engine, module, modules hidden so that
#: it takes this one, the magic bytes of the file: netCDF 4 is HDF5, netCDF 3 "CDF")
NETCDF_WRITERS = (("netcdf4", "netCDF4", (), b"\x89HDF"),
                  ("scipy", "scipy.io", ("netCDF4",), b"CDF"),
                  ("h5netcdf", "h5netcdf", ("netCDF4", "scipy"), b"\x89HDF"))
PARQUET_ENGINES = ("pyarrow", "fastparquet")


def run_hidden(args, hide):
    """summarize ARGS in a child /usr/bin/python3 with the modules `hide` hidden (on top of
    any AS_HIDE_MODULES of this run): (rc, stdout, stderr)."""
    hidden = [m for m in os.environ.get("AS_HIDE_MODULES", "").split(",") if m] + list(hide)
    env = dict(os.environ, AS_HIDE_MODULES=",".join(hidden),
               PYTHONPATH=os.pathsep.join([HIDE] + [p for p in [
                   os.environ.get("PYTHONPATH")] if p]))
    p = subprocess.run(["/usr/bin/python3", SCRIPT] + args, capture_output=True, text=True,
                       timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


@unittest.skipIf(pd is None, optional.missing("pandas") if not optional.have("pandas") else
                 optional.missing("xarray"))
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
        engines = __import__("attnsweep_frame").netcdf_engines()
        tables = (["--by", "theorem"], ["--robustness", "--by", "case_name", "--bins", "2"])
        want = [self.csv_frame(args) for args in tables]
        for engine, module, hide, magic in NETCDF_WRITERS:
            with self.subTest(writer=engine):
                if engine not in engines:
                    self.skipTest(optional.missing(module))
                for args, csv in zip(tables, want):
                    nc = os.path.join(self.tmp.name, "t.nc")
                    rc, _, err = run_hidden([self.h5] + args + ["-o", nc], hide)
                    self.assertEqual(rc, 0, err)
                    with open(nc, "rb") as fh:
                        self.assertEqual(fh.read(len(magic)), magic, args)
                    nc3 = magic == b"CDF"
                    readers = [e for e in engines if e in (
                        ("netcdf4", "scipy") if nc3 else ("netcdf4", "h5netcdf"))]
                    for reader in readers:
                        with xr.open_dataset(nc, engine=reader) as ds:
                            self.assertEqual(list(ds.dims), ["row"])
                            got = ds.to_dataframe().reset_index(drop=True)
                        self.same_frame(got, csv, ordered=False)
                    os.remove(nc)

    def test_netcdf_needs_a_library(self):
        nc = os.path.join(self.tmp.name, "none.nc")
        rc, _, err = run_hidden([self.h5, "--by", "theorem", "-o", nc],
                                ("netCDF4", "scipy", "h5netcdf"))
        self.assertEqual(rc, 3, err)
        self.assertIn("python3-netcdf4", err)
        self.assertIn(nc, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual([f for f in os.listdir(self.tmp.name) if "none" in f], [])

    def test_parquet(self):
        pq = os.path.join(self.tmp.name, "t.parquet")
        for engine in PARQUET_ENGINES:
            with self.subTest(engine=engine):
                if not optional.have(engine):
                    self.skipTest(optional.missing(engine))
                other = [e for e in PARQUET_ENGINES if e != engine]
                rc, _, err = run_hidden([self.h5, "--by", "theorem", "-o", pq], other)
                self.assertEqual(rc, 0, err)
                self.same_frame(pd.read_parquet(pq, engine=engine),
                                self.csv_frame(["--by", "theorem"]))
                os.remove(pq)
        # without either: exit 3 naming what is missing, no file left
        rc, _, err = run_hidden([self.h5, "--by", "theorem", "-o", pq], PARQUET_ENGINES)
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
    optional.main()
