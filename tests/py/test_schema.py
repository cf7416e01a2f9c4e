#!/usr/bin/python3
"""Tests of analysis/schema.py beyond what the summaries exercise: the file's self-description
(description:/units:/flag: attributes of /trials, snapshot times), the fallbacks for files
without it, and the parsing of the C record definition for kinds the analysis does not know by
name (a per-spec enumeration such as the case names, a fixed-length string)."""

import os
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
import optional  # noqa: E402

INCLUDE = os.path.join(SRC, "include")


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


class HeaderParsingTest(unittest.TestCase):
    """parse_headers/dtype_from_headers on the real headers and on a synthetic record.h with
    kinds they do not know by name."""

    def test_real_headers(self):
        fields, enums, flags, msg_len = schema.parse_headers(INCLUDE)
        dt = schema.dtype_from_headers(INCLUDE)
        self.assertEqual(list(dt.names), [n for _, n in fields])
        self.assertEqual(flags, schema.FLAG_BITS)
        self.assertEqual(dt["message"], np.dtype("S%d" % msg_len))
        for kind, name in fields:
            mapping = h5py.check_enum_dtype(dt[name])
            if kind in ("U64", "I64", "I32", "F64", "HASH") or dt[name].kind == "S":
                self.assertIsNone(mapping, name)  # numbers and fixed strings
            else:
                self.assertIsNotNone(mapping, name)
            if kind in enums:
                self.assertEqual(sorted(mapping, key=mapping.get), enums[kind], name)

    def test_bool_keys(self):
        # schema.BOOL_FIELDS mirrors the BOOL keys of the parameter table
        bools = tuple(p["rname"] for p in schema.parse_params(INCLUDE)
                      if p["kind"] == "BOOL" and p["rkind"] != "NONE")
        self.assertEqual(bools, schema.BOOL_FIELDS)

    def test_unknown_kinds(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        inc = os.path.join(tmp.name, "attnsweep")
        os.makedirs(inc)
        with open(os.path.join(inc, "record.h"), "w") as fh:
            fh.write("""
#define AS_RECORD_MSG 40
#define AS_HASH_LEN 16
enum { AS_FLAG_ONE = 1 << 0, AS_FLAG_TWO = 1 << 3 };
#define AS_RECORD_FIELDS(X)                    \\
  /* coordinates */                            \\
  X(U64, trial, "row")                         \\
  X(CASE, case, "case name")                   \\
  X(VERDICT, verdict, "verdict")               \\
  X(HASH, v_hash, "content hash of V")         \\
  X(F64, eps, "size [1]")                      \\
  X(MSG, message, "text")
#define AS_CT_U64 uint64_t
#define AS_CT_F64 double
#define AS_CT_CASE int32_t
#define AS_CT_VERDICT int32_t
#define AS_CT_HASH char
#define AS_CT_MSG char
#define AS_DIM_U64
#define AS_DIM_F64
#define AS_DIM_CASE
#define AS_DIM_VERDICT
#define AS_DIM_HASH [AS_HASH_LEN]
#define AS_DIM_MSG [AS_RECORD_MSG]
""")
        with open(os.path.join(inc, "enums.h"), "w") as fh:
            fh.write("""
#define AS_VERDICT_LIST(X) \\
  X(AS_VERDICT_PENDING, "pending", "not run") \\
  X(AS_VERDICT_OK, "consistent", "fine")
""")
        fields, enums, flags, msg_len = schema.parse_headers(tmp.name)
        self.assertEqual(fields, [("U64", "trial"), ("CASE", "case"), ("VERDICT", "verdict"),
                                  ("HASH", "v_hash"), ("F64", "eps"), ("MSG", "message")])
        self.assertEqual(enums, {"VERDICT": ["pending", "consistent"]})
        self.assertEqual(flags, {"one": 0, "two": 3})
        self.assertEqual(msg_len, 40)
        dt = schema.dtype_from_headers(tmp.name, labels={"case": ["a", "b/x"]})
        self.assertEqual(h5py.check_enum_dtype(dt["case"]), {"a": 0, "b/x": 1})
        self.assertEqual(h5py.check_enum_dtype(dt["verdict"]), {"pending": 0, "consistent": 1})
        self.assertEqual(dt["v_hash"], np.dtype("S16"))
        self.assertEqual(dt["message"], np.dtype("S40"))
        self.assertEqual(dt["trial"], np.dtype("<u8"))
        self.assertEqual(schema.enum_labels_from_headers(tmp.name),
                         {"verdict": ["pending", "consistent"]})


if __name__ == "__main__":
    optional.main(verbosity=1)
