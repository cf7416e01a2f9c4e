#!/usr/bin/python3
"""Tests of analysis/attnsweep_frame.py (pandas/xarray access to a results file): enum fields
as Categoricals of the file's labels, case names, flag columns, strings without padding, the
file's field descriptions in df.attrs, --where filters, the xarray Dataset over the swept
axes with its refusals, and its netCDF files: written by each netCDF backend of xarray that is
installed (netCDF4 in both formats, h5netcdf, scipy's netCDF 3) and read back by from_netcdf
with booleans as booleans. Skips what needs a missing package, naming it (tests/deps.sh --test
installs python3-pandas, -xarray, -yaml, -scipy, -netcdf4 and -h5netcdf)."""

import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import h5py

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402
from attnsweep import layout  # noqa: E402
import attnsweep_frame as frame  # noqa: E402
import optional  # noqa: E402

try:
    import pandas as pd
except ImportError:
    pd = None
try:
    import xarray as xr
except ImportError:
    xr = None

#: (engine, format) of every netCDF writer the tests try: each engine's default format, and
#: netCDF 3 through the netCDF4 library (the limits of scipy's, on another code path).
NETCDF_WRITERS = (("netcdf4", "NETCDF4"), ("netcdf4", "NETCDF3_64BIT"), ("h5netcdf", None),
                  ("scipy", None))
MODULE_OF_ENGINE = {e: m for e, m, _ in frame.NETCDF_ENGINES}

INCLUDE = os.path.join(SRC, "include")
LABELS = layout.enum_labels()
CASES = ["alpha", "beta/x", "beta/y"]


def case_field_name(a):
    return "case_name" if "case_name" in a.dtype.names else "case_id"


def cid_of(a):
    """The case numbers of synthetic rows (case_name in schema 2, case_id before)."""
    return a[case_field_name(a)]


def synthetic(path, case_field=True, shuffle_verdict=False, spec=None):
    """A grid d x eps x replicate (2 x 3 x 4 = 24 trials) in three cases, every field of the C
    definition plus (case_field) a `case` enum and a fixed-string hash when record.h has none.
    Returns the rows written."""
    dt = layout.record_dtype(labels={"case_name": CASES})
    if not case_field:  # a file of schema 1: case_id numbers, no case names
        dt = np.dtype([("case_id", np.dtype("<i4")) if n == "case_name" else (n, dt[n])
                       for n in dt.names])
    extra = []
    if "v_hash" not in dt.names:
        extra.append(("v_hash", np.dtype("S16")))
    dt = np.dtype([(n, dt[n]) for n in dt.names] + extra)
    n = 24
    a = np.zeros(n, dtype=dt)
    for f in dt.names:
        if dt[f].kind == "f":
            a[f] = np.nan
    i = np.arange(n)
    a["trial"] = i
    a["d"] = 2 + i % 2
    a["eps"] = np.array([0.0, 0.1, 0.3])[(i // 2) % 3]
    a["replicate"] = i // 6
    a[case_field_name(a)] = (i // 2) % 3
    verdicts = ["consistent", "violated", "unresolved", "failed"]
    a["verdict"] = [LABELS["verdict"].index(verdicts[k % 4]) for k in i]
    a["theorem"] = LABELS["theorem"].index("good")
    a["outcome"] = LABELS["outcome"].index("reached_T")
    a["flags"] = np.where(i % 3 == 0, (1 << 5) | (1 << 0), 1 << 7)
    a["wall_time"] = 0.5 + i
    a["message"] = [b"bad triple %d" % k if k % 4 == 3 else b"" for k in i]
    a["v_hash"] = [b"%016x" % (k % 2) for k in i]
    b = a
    if shuffle_verdict:
        mapping = {l: (k * 3 + 2) % 11 + 20 for k, l in enumerate(LABELS["verdict"])}
        spec_ = [(f, h5py.enum_dtype(mapping, basetype="i4") if f == "verdict" else dt[f])
                 for f in dt.names]
        b = np.zeros(n, dtype=np.dtype(spec_))
        for f in dt.names:
            b[f] = a[f]
        b["verdict"] = [mapping[LABELS["verdict"][v]] for v in a["verdict"]]
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("trials", data=b)
        ds.attrs["description:eps"] = "size of the perturbation of V"
        ds.attrs["description:wall_time"] = "seconds spent on the trial [s]"
        f.attrs["tool_version"] = "0.1.0"
        if spec is not None:
            f["spec"] = spec
    return a


def is_netcdf3(engine, fmt):
    return engine == "scipy" or (fmt or "").startswith("NETCDF3")


def check_netcdf_round_trip(test, ds, directory, tag):
    """ds written by every netCDF writer installed here (a subtest each; skipped, naming the
    package, where one is missing), then read back by from_netcdf with the same engine: the
    same Dataset (int64 as int32 in netCDF 3, as docs/analysis.md says), booleans
    stored as int8 with their flag attributes and read back as bool or 1/0/NaN floats, a
    text variable's holes as ""."""
    want_bool = [n for n in ds.variables if ds[n].dtype == bool]
    want_nullable = [n for n in ds.variables if "flag_meanings" in ds[n].attrs and
                     ds[n].dtype != bool]
    test.assertTrue(want_bool or want_nullable, "%s: no boolean to check" % tag)
    for engine, fmt in NETCDF_WRITERS:
        with test.subTest(data=tag, engine=engine, format=fmt):
            if engine not in frame.netcdf_engines():
                test.skipTest(optional.missing(MODULE_OF_ENGINE[engine]))
            path = os.path.join(directory, "%s_%s_%s.nc" % (tag, engine, fmt))
            ds.to_netcdf(path, engine=engine, format=fmt)
            plain = xr.load_dataset(path, engine=engine)  # xarray alone
            for n in want_bool + want_nullable:  # stored as int8 with the CF flag attributes
                test.assertEqual(plain[n].encoding["dtype"], np.int8, n)
                test.assertEqual(list(plain[n].attrs["flag_values"]), [0, 1], n)
                test.assertEqual(plain[n].attrs["flag_meanings"], "false true", n)
            for n in want_nullable:
                test.assertEqual(int(plain[n].encoding["_FillValue"]), -1, n)
            for n in want_bool:  # xarray reads a complete boolean as bool (its dtype attribute)
                test.assertEqual(plain[n].dtype, bool, n)
            want = ds.copy()
            for n in want.variables:  # text (not labels): a hole is "" (no missing string)
                v = want[n].values
                if v.dtype == object and "missing_label" not in want[n].attrs:
                    want[n].values = np.where(pd.isna(v), "", v).astype(object)
            if is_netcdf3(engine, fmt):  # no 64-bit integers in netCDF 3
                for n in want.variables:
                    if want[n].dtype in (np.int64, np.uint64):
                        want[n] = want[n].astype(np.int32)
            back = frame.from_netcdf(path, engine=engine)
            test.assertEqual(sorted(back.variables), sorted(want.variables))
            test.assertEqual(dict(back.sizes), dict(want.sizes))
            for n in want.variables:
                test.assertEqual(back[n].dtype, want[n].dtype, n)
            xr.testing.assert_identical(back, want)
            for n in want_nullable:  # the unknown cells are NaN again
                np.testing.assert_array_equal(np.isnan(back[n].values), np.isnan(ds[n].values))
            os.remove(path)


@unittest.skipIf(pd is None, optional.missing("pandas"))
class FrameTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "grid.h5")
        cls.a = synthetic(cls.path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_columns(self):
        df = frame.load_trials(self.path)
        a = self.a
        self.assertEqual(len(df), len(a))
        self.assertEqual(df.index.name, "trial")
        np.testing.assert_array_equal(df.index.to_numpy(), a["trial"])
        # enums: Categoricals of every label of the file's type, in value order
        for f in ("theorem", "verdict", "vfamily"):
            self.assertIsInstance(df[f].dtype, pd.CategoricalDtype, f)
            self.assertEqual(list(df[f].cat.categories), LABELS[f], f)
        self.assertEqual(list(df["verdict"].astype(str)),
                         [LABELS["verdict"][v] for v in a["verdict"]])
        self.assertEqual(df["verdict"].value_counts()["pending"], 0)  # unused labels count 0
        # case names
        self.assertEqual(list(df["case"].cat.categories), CASES)
        self.assertEqual(list(df["case"].astype(str)), [CASES[c] for c in cid_of(a)])
        # flags
        for name, bit in schema.FLAG_BITS.items():
            np.testing.assert_array_equal(df["flag_" + name].to_numpy(),
                                          (a["flags"] >> bit) & 1 == 1, name)
            self.assertEqual(df["flag_" + name].dtype, bool)
        # strings without NUL padding
        self.assertEqual(list(df["message"]), [m.decode() for m in a["message"]])
        self.assertTrue(all("\0" not in m for m in df["message"]))
        self.assertEqual(df["v_hash"].iloc[1], "0000000000000001")
        # numbers unchanged
        np.testing.assert_array_equal(df["eps"].to_numpy(), a["eps"])
        # what the columns mean: the file's descriptions win, the built-in table fills in
        self.assertEqual(df.attrs["descriptions"]["eps"], "size of the perturbation of V")
        self.assertEqual(df.attrs["units"]["wall_time"], "s")
        self.assertEqual(df.attrs["descriptions"]["gap"], schema.FIELD_TEXT["gap"][0])
        self.assertEqual(df.attrs["root"]["tool_version"], "0.1.0")
        self.assertIn("eps", df.attrs["coordinates"])
        self.assertNotIn("flags", df.attrs["coordinates"])

    def test_labels_from_the_file(self):
        path = os.path.join(self.tmp.name, "shuffled.h5")
        a = synthetic(path, shuffle_verdict=True)
        df = frame.load_trials(path)
        self.assertEqual(list(df["verdict"].astype(str)),
                         [LABELS["verdict"][v] for v in a["verdict"]])

    def test_fields_and_where(self):
        df = frame.load_trials(self.path, fields=["d", "eps", "verdict", "flags"],
                               where="d == 3 and verdict != 'failed' and flag_good")
        a = self.a
        sel = (a["d"] == 3) & (a["verdict"] != LABELS["verdict"].index("failed")) & \
            ((a["flags"] >> 5) & 1 == 1)
        np.testing.assert_array_equal(df.index.to_numpy(), a["trial"][sel])
        self.assertEqual(sorted(c for c in df.columns if not c.startswith("flag_")),
                         ["d", "eps", "flags", "verdict"])
        with self.assertRaises(schema.SchemaError):
            frame.load_trials(self.path, fields=["nosuch"])
        with self.assertRaises(schema.SchemaError):
            frame.load_trials(self.path, where="theorem == 'godo'")

    def test_case_names_from_the_spec(self):
        spec = ("name: s\nsweep:\n  concat:\n    - {case: alpha, d: [2, 3]}\n"
                "    - case: beta\n      concat:\n        - {case: x, eps: 0.1}\n"
                "        - {case: y, eps: 0.3}\n")
        path = os.path.join(self.tmp.name, "nocase.h5")
        a = synthetic(path, case_field=False, spec=spec)
        df = frame.load_trials(path)
        if not optional.have("yaml"):  # the spec is not read: no names invented
            self.assertNotIn("case", df.columns)
            np.testing.assert_array_equal(df["case_id"].to_numpy(), cid_of(a))
            self.skipTest(optional.missing("yaml") + ": case names from the spec")
        self.assertEqual(list(df["case"].cat.categories), CASES)
        self.assertEqual(list(df["case"].astype(str)), [CASES[c] for c in cid_of(a)])
        # a spec of another shape: no names invented
        path = os.path.join(self.tmp.name, "product.h5")
        synthetic(path, case_field=False, spec="sweep:\n  product:\n    - {d: [2, 3]}\n")
        self.assertNotIn("case", frame.load_trials(path).columns)

    @unittest.skipIf(xr is None, optional.missing("xarray"))
    def test_xarray(self):
        df = frame.load_trials(self.path)
        self.assertEqual(frame.sweep_axes(df), ["case", "replicate", "d", "eps"])
        # case and eps go together in this grid: the axes that index it are d, eps, replicate
        ds = frame.to_xarray(df, dims=["d", "eps", "replicate"])
        self.assertEqual(dict(ds.sizes), {"d": 2, "eps": 3, "replicate": 4})
        a = self.a
        for k in range(len(a)):
            cell = ds.sel(d=a["d"][k], eps=a["eps"][k], replicate=a["replicate"][k])
            self.assertEqual(int(cell["trial"]), k)
            self.assertEqual(str(cell["verdict"].item()), LABELS["verdict"][a["verdict"][k]])
        self.assertEqual(ds["eps"].attrs["description"], "size of the perturbation of V")
        self.assertEqual(ds["wall_time"].attrs["units"], "s")
        self.assertEqual(ds.attrs["tool_version"], "0.1.0")
        # the default dims of one case
        ds = frame.to_xarray(df[df.case == "beta/x"])
        self.assertEqual(dict(ds.sizes), {"replicate": 4, "d": 2})
        # refusals: rows the dims do not tell apart, NaN on some rows only, a sparse grid
        with self.assertRaisesRegex(ValueError, "do not identify"):
            frame.to_xarray(df, dims=["d", "eps"])
        b = df.copy()
        b.loc[b["eps"] == 0.0, "eps"] = np.nan
        with self.assertRaisesRegex(ValueError, "NaN"):
            frame.to_xarray(b, dims=["d", "eps", "replicate"])
        with self.assertRaisesRegex(ValueError, "cells"):
            frame.to_xarray(df, dims=["d", "eps", "replicate", "wall_time"], max_cells=100)

    @unittest.skipIf(xr is None, optional.missing("xarray"))
    def test_netcdf(self):
        # every field of the record (labels, text, the flag booleans, the true/false keys) on
        # a grid with a hole (one trial left out): the flags are 1/0 with NaN there
        df = frame.load_trials(self.path)
        ds = frame.to_xarray(df, dims=["d", "eps", "replicate"])
        self.assertEqual(ds["flag_good"].dtype, bool)
        self.assertEqual(ds["skip"].dtype, bool)
        self.assertEqual(ds["verdict"].attrs["missing_label"], "")
        ds = frame.to_xarray(df[df.index != 5], dims=["d", "eps", "replicate"])
        self.assertEqual(ds["flag_good"].dtype, np.float64)
        self.assertEqual(int(ds["flag_good"].isnull().sum()), 1)
        self.assertEqual(int(ds["verdict"].isnull().sum()), 1)
        check_netcdf_round_trip(self, ds, self.tmp.name, "holes")

    @unittest.skipIf(xr is None, optional.missing("xarray"))
    def test_documented_example(self):
        import re
        with open(os.path.join(SRC, "docs", "analysis.md")) as fh:
            doc = fh.read()
        m = re.search(r"<!-- tested example: begin -->\s*```python\n(.*?)```", doc, re.S)
        self.assertIsNotNone(m, "docs/analysis.md lost its tested example")
        code = m.group(1).replace('"analysis"', repr(os.path.join(SRC, "analysis"))) \
            .replace('"out.h5"', repr(self.path))
        ns = {"__name__": "__main__"}
        exec(compile(code, "docs/analysis.md (example)", "exec"), ns)
        a = self.a
        good = ((a["flags"] >> 5) & 1 == 1) & (a["verdict"] == LABELS["verdict"].index(
            "violated"))
        self.assertEqual(len(ns["bad"]), int(good.sum()))
        self.assertEqual(ns["meaning"], schema.FIELD_TEXT["margin"][0])
        sel = cid_of(a) == 0
        want = {}
        for k in np.nonzero(sel)[0]:
            want.setdefault(int(a["d"][k]), []).append(
                LABELS["verdict"][a["verdict"][k]] == "consistent")
        for d, vals in want.items():
            self.assertAlmostEqual(float(ns["consistent"].sel(d=d).item()), np.mean(vals))
        self.assertAlmostEqual(float(ns["frac"].sum()), 2.0)  # two (theorem, d) groups

    def test_real_run(self):
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        spec = os.path.join(self.tmp.name, "grid.yaml")
        with open(spec, "w") as fh:  # a seed beyond 64-bit signed: a string in the Dataset
            fh.write("name: grid\nseed: 18446744073709551557\nreplicates: 3\n"
                     "defaults: {n: 8, T: 2, dt: 0.1, init: {kind: box, scale: 5}}\n"
                     "sweep:\n  concat:\n"
                     "    - {case: ident, vfamily: identity, mfamily: identity, d: [2, 3],"
                     " eps: [0, 0.1]}\n"
                     "    - {case: scalar, vfamily: scalar, mfamily: scalar, d: 1}\n")
        out = os.path.join(self.tmp.name, "grid_run.h5")
        p = subprocess.run([exe, "run", spec, "-o", out], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        df = frame.load_trials(out)
        self.assertEqual(len(df), 3 * (4 + 1))
        self.assertEqual(list(df["case"].cat.categories), ["ident", "scalar"])
        self.assertEqual(int((df["case"] == "ident").sum()), 12)
        self.assertFalse(df["verdict"].isna().any())
        self.assertTrue(all("\0" not in m for m in df["message"]))
        if xr is None:
            self.skipTest(optional.missing("xarray") + ": the Dataset of the run")
        ident = df[df.case == "ident"]
        self.assertEqual(sorted(frame.sweep_axes(ident)), ["d", "eps", "replicate"])
        ds = frame.to_xarray(ident)
        self.assertEqual(dict(ds.sizes), {"replicate": 3, "d": 2, "eps": 2})
        for trial, row in ident.iterrows():
            cell = ds.sel(replicate=row["replicate"], d=row["d"], eps=row["eps"])
            self.assertEqual(int(cell["trial"]), trial)
            self.assertEqual(int(cell["n_clusters"]), row["n_clusters"])
        self.assertEqual(ds.attrs["master_seed"], "18446744073709551557")
        check_netcdf_round_trip(self, ds, self.tmp.name, "run")


class TidyTest(unittest.TestCase):
    """NA conventions, booleans, zipped axes and the bulk loader, on a synthetic sweep
    replicate x (heads zip v_scale) x skip with 2 snapshots per trial."""

    @classmethod
    def setUpClass(cls):
        for mod in ("pandas", "xarray"):
            if not optional.have(mod):
                raise unittest.SkipTest(optional.missing(mod))
        cls.tmp = tempfile.TemporaryDirectory()
        dt = layout.record_dtype()
        rows = [(r, h, vs, sk) for r in range(3) for h, vs in ((1, 1.0), (4, 0.25))
                for sk in (1, 0)]
        a = np.zeros(len(rows), dtype=dt)
        for f in dt.names:
            if dt[f].kind == "f":
                a[f] = np.nan
        a["sinkhorn_iters"] = -1
        for i, (r, h, vs, sk) in enumerate(rows):
            a["trial"][i], a["replicate"][i], a["heads"][i] = i, r, h
            a["v_scale"][i], a["skip"][i], a["n"][i], a["d"][i] = vs, sk, 3, 2
            a["outcome"][i] = LABELS["outcome"].index("reached_T")
            a["n_plateaus"][i] = -1 if i % 2 else 2
            a["residual"][i] = 0.1 * i
        a["skip"][0] = -1  # not applicable
        a["perturb"] = [-1 if i % 4 == 0 else 1 for i in range(len(a))]  # -1: not applicable
        cls.a = a
        cls.path = os.path.join(cls.tmp.name, "tidy.h5")
        cls.snaps = np.arange(len(a) * 2 * 3 * 2, dtype=float)
        with h5py.File(cls.path, "w") as f:
            f.create_dataset("trials", data=a)
            f.attrs["n_trials"] = np.uint64(len(a))
            f.attrs["master_seed"] = np.uint64(2 ** 64 - 59)
            g = f.create_group("bulk")
            g["snapshots"] = cls.snaps
            g["snapshots"].attrs["times"] = [0.5, 2.0]
            g["snapshots_offset"] = np.arange(len(a) + 1, dtype=np.uint64) * 12
            g["initial_tokens"] = -np.arange(len(a) * 6, dtype=float)
            g["initial_tokens_offset"] = np.arange(len(a) + 1, dtype=np.uint64) * 6

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_na_and_booleans(self):
        df = frame.load_trials(self.path)
        self.assertIsInstance(df["skip"].dtype, pd.BooleanDtype)
        self.assertTrue(pd.isna(df["skip"].iloc[0]))
        self.assertEqual(df["skip"].iloc[1:].tolist(),
                         [bool(v) for v in self.a["skip"][1:]])
        self.assertEqual(str(df["n_plateaus"].dtype), "Int32")
        self.assertEqual(int(df["n_plateaus"].isna().sum()),
                         int((self.a["n_plateaus"] == -1).sum()))
        self.assertEqual(str(df["sinkhorn_iters"].dtype), "Int32")  # -1 coordinate: <NA>
        self.assertTrue(df["sinkhorn_iters"].isna().all())
        self.assertEqual(df["steps"].dtype, np.int64)  # a count without fill: plain int
        self.assertEqual(df["residual"].dtype, np.float64)

    def test_zipped_axes_are_one_dimension(self):
        df = frame.load_trials(self.path)
        df = df[df.skip.notna()]
        ds = frame.to_xarray(df[df.replicate > 0])
        self.assertEqual(dict(ds.sizes), {"replicate": 2, "v_scale": 2, "skip": 2})
        # heads goes along v_scale, one value each
        self.assertEqual(ds["heads"].dims, ("v_scale",))
        self.assertEqual(dict(zip(ds["v_scale"].values, ds["heads"].values)),
                         {0.25: 4, 1.0: 1})
        r = ds["residual"].sel(replicate=2, v_scale=0.25, skip=False).item()
        i = [k for k in range(len(self.a)) if self.a["replicate"][k] == 2 and
             self.a["heads"][k] == 4 and self.a["skip"][k] == 0][0]
        self.assertAlmostEqual(r, self.a["residual"][i])
        self.assertEqual(ds["skip"].dtype, bool)  # a boolean axis stays bool

    def test_netcdf(self):
        """The Dataset of the issue (a boolean axis, nullable booleans with <NA>, labels with
        "not applicable", a uint64 seed) through every netCDF backend and back."""
        df = frame.load_trials(self.path)
        df = df[df.skip.notna()].copy()
        # a nullable boolean column with <NA> (an analysis' own, or a true/false key that is
        # not applicable on some rows)
        df["checked"] = pd.array([None if i % 3 == 0 else i % 2 == 1 for i in df.index],
                                 dtype="boolean")
        ds = frame.to_xarray(df)
        self.assertEqual(dict(ds.sizes), {"replicate": 3, "v_scale": 2, "skip": 2})
        self.assertEqual(ds["heads"].dims, ("v_scale",))  # a zipped axis: a coordinate
        self.assertEqual(ds["skip"].dtype, bool)
        self.assertEqual(ds["checked"].dtype, np.float64)  # <NA>: 1/0 with NaN
        self.assertTrue(bool(ds["checked"].isnull().any()))
        self.assertEqual(ds["checked"].attrs["flag_meanings"], "false true")
        self.assertTrue(bool(ds["perturb"].isnull().any()))
        self.assertEqual(ds.attrs["master_seed"], "18446744073709551557")
        self.assertEqual(ds.attrs["n_trials"], len(self.a))
        check_netcdf_round_trip(self, ds, self.tmp.name, "tidy")
        # the default writer (netCDF4, else scipy), as a user calls it
        if not {"netcdf4", "scipy"} & set(frame.netcdf_engines()):
            self.skipTest("no default netCDF writer: " + optional.missing("netCDF4") + "; " +
                          optional.missing("scipy.io"))
        path = os.path.join(self.tmp.name, "default.nc")
        ds.to_netcdf(path)
        back = frame.from_netcdf(path)
        self.assertEqual(back["skip"].dtype, bool)
        self.assertEqual(back["checked"].dtype, np.float64)
        np.testing.assert_array_equal(back["checked"].values, ds["checked"].values)
        np.testing.assert_array_equal(pd.isna(back["perturb"].values),
                                      pd.isna(ds["perturb"].values))

    def test_load_bulk(self):
        b = frame.load_bulk(self.path, 5)
        self.assertEqual(b["snapshots"].dims, ("time", "token", "dim"))
        self.assertEqual(b["snapshots"]["time"].values.tolist(), [0.5, 2.0])
        np.testing.assert_array_equal(b["snapshots"].values.ravel(), self.snaps[60:72])
        self.assertEqual(b["trajectory"]["time"].values.tolist(), [0.0, 0.5, 2.0])
        np.testing.assert_array_equal(b["trajectory"].values[0].ravel(),
                                      -np.arange(30, 36, dtype=float))
        plain = frame.load_bulk(self.path, 5, xarray=False)
        self.assertIsInstance(plain["snapshots"], np.ndarray)

if __name__ == "__main__":
    optional.main(verbosity=1)
