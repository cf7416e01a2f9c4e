#!/usr/bin/python3
"""Compare the records of two attnsweep results files (tests/slurm).

usage: compare.py A.h5 B.h5
       compare.py --segments F.h5   (one line per /segments row:
                                     segment job_id restart ranks start end trials_done)
Every row of /trials must be done in both and equal field by field (NaN equals NaN), except
the bookkeeping fields wall_time and rank; bulk datasets (/bulk/*) must be equal too.
Exit 0 when identical, 1 with the first differences printed otherwise.
"""
import os
import sys

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

SKIP = {"wall_time", "rank"}


def main(a_path, b_path):
    bad = []
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        ta, tb = a["trials"][:], b["trials"][:]
        if ta.shape != tb.shape:
            print(f"row counts differ: {ta.shape[0]} vs {tb.shape[0]}")
            return 1
        for name, t in (("A", ta), ("B", tb)):
            rows = np.nonzero(t["outcome"] == 0)[0]
            if rows.size:
                bad.append(f"{name}: {rows.size} rows pending (first {rows[:5].tolist()})")
        for field in ta.dtype.names:
            if field in SKIP:
                continue
            x, y = ta[field], tb[field]
            if x.dtype.kind == "f":
                same = (x == y) | (np.isnan(x) & np.isnan(y))
            else:
                same = x == y
            if same.ndim > 1:
                same = same.reshape(same.shape[0], -1).all(axis=1)
            rows = np.nonzero(~same)[0]
            if rows.size:
                r = rows[0]
                bad.append(f"field {field}: {rows.size} rows differ, first row {r}: "
                           f"{x[r]!r} vs {y[r]!r}")
        ka = set(a["bulk"].keys()) if "bulk" in a else set()
        kb = set(b["bulk"].keys()) if "bulk" in b else set()
        if ka != kb:
            bad.append(f"bulk datasets differ: {sorted(ka)} vs {sorted(kb)}")
        for k in sorted(ka & kb):
            x, y = a["bulk"][k][:], b["bulk"][k][:]
            if x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                bad.append(f"bulk/{k} differs")
        n = ta.shape[0]
    for line in bad[:20]:
        print(line)
    if bad:
        return 1
    print(f"identical records: {n} rows, {len(ka)} bulk datasets")
    return 0


def segments(path):
    with h5py.File(path, "r") as f:
        for s in f["segments"][:]:
            print(s["segment"], s["job_id"].decode() or "-", s["restart"], s["ranks"],
                  s["start"].decode() or "-", s["end"].decode() or "-", s["trials_done"])
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--segments":
        sys.exit(segments(sys.argv[2]))
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
