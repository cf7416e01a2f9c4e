#!/usr/bin/python3
"""Tests of attnsweep.schema beyond what the summaries exercise: the file's self-description
(description:/units:/flag: attributes of /trials, snapshot times), the fallbacks for files
without it, and the row layout the binary states (`attnsweep help fields --json`, read by
attnsweep.layout) against a file the binary writes."""

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
import optional  # noqa: E402


def minimal_file(path, attrs=None, spec=None, snap_times=None):
    """A /trials with verdict, outcome, eps, flags, wall_time (and optional attributes)."""
    vt = h5py.enum_dtype({"pending": 0, "consistent": 1}, basetype="i4")
    ot = h5py.enum_dtype({"pending": 0, "reached_T": 1}, basetype="i4")
    dt = np.dtype([("verdict", vt), ("outcome", ot), ("eps", "<f8"), ("flags", "<i4"),
                   ("wall_time", "<f8")])
    a = np.zeros(4, dtype=dt)
    a["flags"] = [0b01, 0b10, 0b11, 0]
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("trials", data=a)
        for k, v in (attrs or {}).items():
            ds.attrs[k] = v
        if spec is not None:
            f["spec"] = spec
        if snap_times is not None:
            g = f.create_group("bulk")
            g["snapshots"] = np.zeros(0)
            g["snapshots"].attrs["times"] = np.asarray(snap_times, float)


class SelfDescriptionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_attributes_win(self):
        path = os.path.join(self.tmp.name, "described.h5")
        minimal_file(path, attrs={"description:eps": "size of the perturbation of V",
                                  "description:wall_time": "seconds spent [s]",
                                  "units:eps": "1", "flag:alpha": 1, "flag:beta": 0,
                                  "unrelated": 3})
        with schema.open_results(path) as rf:
            self.assertEqual(rf.description("eps"), "size of the perturbation of V")
            self.assertEqual(rf.axis_label("eps"), "size of the perturbation of V [1]")
            # the unit in brackets at the end of the description
            self.assertEqual(rf.description("wall_time"), "seconds spent")
            self.assertEqual(rf.unit("wall_time"), "s")
            self.assertEqual(rf.flag_bits, {"alpha": 1, "beta": 0})
            cols = rf.read(["flag_alpha", "flag_beta"])
            np.testing.assert_array_equal(cols["flag_alpha"], [False, True, True, False])
            np.testing.assert_array_equal(cols["flag_beta"], [True, False, True, False])
            with self.assertRaises(schema.SchemaError):  # the built-in legend is not used
                rf.read(["flag_good"])

    def test_coordinates(self):
        path = os.path.join(self.tmp.name, "coords.h5")
        minimal_file(path)
        with schema.open_results(path) as rf:  # the fields before flags
            self.assertEqual(rf.coordinates(), ["verdict", "outcome", "eps"])
        minimal_file(path, attrs={"coordinates": np.array([b"eps", b"nosuch"])})
        with schema.open_results(path) as rf:  # the writer's list, fields it has
            self.assertEqual(rf.coordinates(), ["eps"])
        self.assertEqual(schema.text(np.bytes_(b"abc\0\0")), "abc")

    def test_fallbacks(self):
        path = os.path.join(self.tmp.name, "bare.h5")
        minimal_file(path)
        with schema.open_results(path) as rf:
            self.assertEqual(rf.axis_label("eps"), schema.FIELD_TEXT["eps"][0])
            self.assertEqual(rf.axis_label("wall_time"), "wall time [s]")
            self.assertEqual(rf.axis_label("flags"), "flags")  # nothing known: the name
            self.assertEqual(rf.flag_bits, schema.FLAG_BITS)
            good = rf.read(["flag_good"])["flag_good"]
            self.assertFalse(good.any())
            self.assertIsNone(rf.snapshot_times())

    def test_snapshot_times(self):
        path = os.path.join(self.tmp.name, "snap_attr.h5")
        minimal_file(path, snap_times=[0.5, 2.0], spec="output: {snapshots: [9, 10]}\n")
        with schema.open_results(path) as rf:
            self.assertEqual(rf.snapshot_times(), [0.5, 2.0])  # the attribute wins
        path = os.path.join(self.tmp.name, "snap_spec.h5")
        minimal_file(path, spec="name: x\noutput: {final: true, snapshots: [1, 2.5, 4]}\n")
        with schema.open_results(path) as rf:
            if not optional.have("yaml"):
                self.skipTest(optional.missing("yaml"))
            self.assertEqual(rf.spec_text().splitlines()[0], "name: x")
            self.assertEqual(rf.snapshot_times(), [1.0, 2.5, 4.0])


class LayoutTest(unittest.TestCase):
    """The row layout the binary states (`attnsweep help fields --json`, cmd_tables.c, from
    AS_RECORD_FIELDS) against a results file the binary writes (results.c builds its HDF5
    types from the same list by another path), and the fallback tables of schema.py against
    the layout."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        spec = os.path.join(cls.tmp.name, "s.yaml")
        with open(spec, "w") as fh:
            fh.write("name: layout\nseed: 3\nreplicates: 1\nsweep:\n  concat:\n"
                     "    - {case: a, vfamily: identity, mfamily: identity, d: 2, n: 4, T: 1}\n"
                     "    - {case: b, vfamily: good, mfamily: spd, d: 2, n: 4, T: 1}\n")
        cls.path = os.path.join(cls.tmp.name, "l.h5")
        subprocess.run([os.environ["ATTNSWEEP"], "run", spec, "-o", cls.path], check=True,
                       capture_output=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_layout_is_the_files(self):
        dt = layout.record_dtype(labels={"case_name": ["a", "b"]})
        with h5py.File(self.path, "r") as f:
            fdt = f["trials"].dtype
        self.assertEqual(list(dt.names), list(fdt.names))
        self.assertEqual(dt.itemsize, fdt.itemsize)
        for name in fdt.names:
            self.assertEqual(dt.fields[name][1], fdt.fields[name][1], name)  # packed offsets
            a, b = h5py.check_enum_dtype(dt[name]), h5py.check_enum_dtype(fdt[name])
            self.assertEqual(a is None, b is None, name)
            if a is None:
                self.assertEqual(dt[name].str, fdt[name].str, name)
            elif name not in ("file", "init_file", "init_dataset"):  # labels of the spec
                self.assertEqual(a, b, name)
        for name, labels in layout.enum_labels().items():
            with h5py.File(self.path, "r") as f:
                m = h5py.check_enum_dtype(f["trials"].dtype[name])
            self.assertEqual([k for k, v in sorted(m.items(), key=lambda t: t[1]) if v >= 0],
                             labels, name)

    def test_fallback_tables(self):
        # schema.FLAG_BITS (the legend of a file without flag: attributes) and BOOL_FIELDS
        # mirror the binary's record
        self.assertEqual(layout.flag_bits(), schema.FLAG_BITS)
        self.assertEqual(tuple(layout.bool_fields()), schema.BOOL_FIELDS)
        with schema.open_results(self.path) as rf:
            self.assertEqual(rf.flag_bits, schema.FLAG_BITS)
        self.assertEqual(layout.describe()["schema_version"], schema.SCHEMA_VERSION)

    def test_json_errors(self):
        bin_ = os.environ["ATTNSWEEP"]
        r = subprocess.run([bin_, "help", "keys", "--json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--json goes with the topic fields", r.stderr)
        with self.assertRaises(schema.FileAccessError):
            layout.describe(os.path.join(self.tmp.name, "no-such-binary"))


if __name__ == "__main__":
    optional.main(verbosity=1)
