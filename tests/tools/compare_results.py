#!/usr/bin/python3
"""Compare the /trials records (and bulk data) of two attnsweep results files.

usage: compare_results.py A.h5 B.h5 [--require-complete] [--rows-done-only]

Records must be byte-identical except the bookkeeping fields wall_time and rank, which
depend on the machine and the scheduling. Bulk datasets under /bulk must be identical where
the corresponding rows are done. Exit 0 when equal, 1 when different (the first differences
are named), 2 for unreadable input.
"""
import sys

import h5py
import numpy as np

IGNORED = ("wall_time", "rank")


def load(path):
    try:
        f = h5py.File(path, "r", locking=False)
    except (OSError, TypeError):
        f = h5py.File(path, "r")
    return f


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    require_complete = "--require-complete" in argv
    rows_done_only = "--rows-done-only" in argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        fa, fb = load(args[0]), load(args[1])
        ta, tb = fa["trials"][...], fb["trials"][...]
    except Exception as e:  # noqa: BLE001 - any failure to read is bad input here
        print(f"compare_results: cannot read: {e}", file=sys.stderr)
        return 2
    if ta.dtype != tb.dtype or ta.shape != tb.shape:
        print(f"different layouts or sizes: {ta.dtype} {ta.shape} vs {tb.dtype} {tb.shape}")
        return 1
    pending_a = ta["outcome"] == 0
    pending_b = tb["outcome"] == 0
    if require_complete and (pending_a.any() or pending_b.any()):
        print(f"incomplete: {int(pending_a.sum())} and {int(pending_b.sum())} rows pending")
        return 1
    rows = np.ones(len(ta), dtype=bool)
    if rows_done_only:
        rows = ~pending_a & ~pending_b
    bad = []
    for name in ta.dtype.names:
        if name in IGNORED:
            continue
        a, b = ta[name][rows], tb[name][rows]
        if a.dtype.kind == "f":
            same = (a.view(np.uint64) == b.view(np.uint64)) if a.dtype.itemsize == 8 else (a == b)
        else:
            same = a == b
        if not np.all(same):
            idx = np.nonzero(rows)[0][~same][:5]
            bad.append(f"field {name}: {int((~same).sum())} rows differ, e.g. trials {list(idx)}")
    if "bulk" in fa or "bulk" in fb:
        names_a = set(fa["bulk"].keys()) if "bulk" in fa else set()
        names_b = set(fb["bulk"].keys()) if "bulk" in fb else set()
        if names_a != names_b:
            bad.append(f"bulk datasets differ: {sorted(names_a)} vs {sorted(names_b)}")
        for name in sorted(names_a & names_b):
            if name.endswith("_offset"):
                if not np.array_equal(fa["bulk"][name][...], fb["bulk"][name][...]):
                    bad.append(f"bulk offsets {name} differ")
                continue
            off = fa["bulk"][name + "_offset"][...]
            da, db = fa["bulk"][name][...], fb["bulk"][name][...]
            for i in np.nonzero(rows & ~pending_a & ~pending_b)[0]:
                if ta["outcome"][i] == 6:  # failed trials store no bulk data
                    continue
                sa, sb = da[off[i]:off[i + 1]], db[off[i]:off[i + 1]]
                if not np.array_equal(sa.view(np.uint64), sb.view(np.uint64)):
                    bad.append(f"bulk {name} of trial {i} differs")
                    break
    if bad:
        print("\n".join(bad))
        return 1
    print(f"identical: {int(rows.sum())} records compared ({', '.join(IGNORED)} ignored)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
