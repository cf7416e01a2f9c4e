#!/usr/bin/python3
"""Check and compare attnsweep results files: the one tool the shell tests use.

usage: compare_results.py A.h5 B.h5 [--require-complete] [--rows-done-only]
                          [--allow=FIELD:LABEL[,LABEL...] ...]
       compare_results.py --complete F.h5 [--closed]
       compare_results.py --segments F.h5

A B: the /trials records must be byte-identical except the bookkeeping fields wall_time and
     rank (machine and scheduling dependent; floats compared bit for bit, so NaN equals NaN);
     bulk datasets under /bulk must be identical where the rows are done (failed trials store
     none). --allow=FIELD:LABEL,...: rows whose enum FIELD holds one of the labels in A or in B
     (e.g. --allow=theorem:codim_k --allow=reason:precision) may differ: a change that concerns
     them is compared on every other row, and the rows it changed are counted by field. --require-complete: no row may be pending in either file. --rows-done-only:
     compare only the rows done in both (a partial run against a reference).
--complete F: every done row is a whole record (its trial index, a valid outcome other than
     interrupted, a valid verdict, d and n >= 1); --closed: and the last segment was closed.
--segments F: one line per /segments row (segment job_id restart ranks start end trials_done).

A sparse file (a shard's: /trial_index gives the trial of each row) is read in trial space:
the trials it does not hold are pending rows (the dataset's fill value) without bulk data.

Exit 0 when the check holds, 1 when it does not (the first differences are named), 2 for
unreadable input. Enum values come from the files' HDF5 enum types, never from numbers here.
"""
import os
import sys

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

IGNORED = ("wall_time", "rank")


def enum(t, field):
    return h5py.check_enum_dtype(t.dtype[field])


def load(f):
    """/trials in trial space, and per bulk name (offsets, data) with n_trials + 1 offsets."""
    t = f["trials"][...]
    bulk = {}
    names = [n for n in f["bulk"].keys() if not n.endswith("_offset")] if "bulk" in f else []
    for name in names:
        bulk[name] = (f["bulk"][name + "_offset"][...], f["bulk"][name][...])
    if "trial_index" not in f:
        return t, bulk
    idx = f["trial_index"][...]
    n = int(f.attrs["n_trials"])
    full = np.empty(n, dtype=t.dtype)
    full[:] = f["trials"].fillvalue
    full[idx] = t
    for name, (off, data) in bulk.items():
        counts = np.zeros(n, dtype=np.uint64)
        counts[idx] = np.diff(off)
        off_full = np.concatenate(([0], np.cumsum(counts))).astype(np.uint64)
        out = np.empty(int(off_full[-1]), dtype=data.dtype)
        for j, i in enumerate(int(i) for i in idx):
            out[int(off_full[i]):int(off_full[i + 1])] = data[int(off[j]):int(off[j + 1])]
        bulk[name] = (off_full, out)
    return full, bulk


def complete(path, closed):
    with h5py.File(path, "r") as f:
        t, _ = load(f)
        seg = f["segments"][...]
    out, ver = enum(t, "outcome"), enum(t, "verdict")
    done = t["outcome"] != out["pending"]
    valid_out = set(out.values()) - {out["pending"], out["interrupted"]}
    valid_ver = set(ver.values()) - {ver["pending"]}
    rows = np.flatnonzero(done)
    bad = [int(i) for i in rows
           if not (t["trial"][i] == i and t["outcome"][i] in valid_out
                   and t["verdict"][i] in valid_ver and t["d"][i] >= 1 and t["n"][i] >= 1)]
    is_closed = len(seg) > 0 and seg[-1]["end"] != b""
    print(f"{path}: rows {len(t)}, done {int(done.sum())}, incomplete {len(bad)} {bad[:10]}, "
          f"last segment {'closed' if is_closed else 'OPEN'}")
    return not bad and (is_closed or not closed)


def segments(path):
    with h5py.File(path, "r") as f:
        for s in f["segments"][...]:
            print(int(s["segment"]), s["job_id"].decode() or "-", int(s["restart"]), int(s["ranks"]),
                  s["start"].decode() or "-", s["end"].decode() or "-", int(s["trials_done"]))
    return True


def same_bits(a, b):
    if a.dtype.kind == "f":
        return a.view(np.uint64 if a.dtype.itemsize == 8 else np.uint32) == \
            b.view(np.uint64 if b.dtype.itemsize == 8 else np.uint32)
    return a == b


def allowed_rows(ta, tb, allow):
    """Rows that --allow exempts: the enum field holds one of the labels in either file."""
    out = np.zeros(len(ta), dtype=bool)
    for spec in allow:
        field, _, labels = spec.partition(":")
        codes_a, codes_b = enum(ta, field), enum(tb, field)
        unknown = [lab for lab in labels.split(",") if lab not in codes_a and lab not in codes_b]
        if unknown:  # a typo would exempt nothing and pass unnoticed
            raise KeyError(f"--allow: {field} has no label {unknown} in either file")
        for t, codes in ((ta, codes_a), (tb, codes_b)):
            for lab in labels.split(","):
                if lab in codes:
                    out |= t[field] == codes[lab]
    return out


def compare(path_a, path_b, require_complete, rows_done_only, allow=()):
    fa, fb = h5py.File(path_a, "r"), h5py.File(path_b, "r")
    (ta, bulk_a), (tb, bulk_b) = load(fa), load(fb)
    if ta.dtype != tb.dtype or ta.shape != tb.shape:
        print(f"different layouts or sizes: {ta.shape} vs {tb.shape}")
        return False
    pending = enum(ta, "outcome")["pending"]
    failed = enum(ta, "outcome")["failed"]
    pa, pb = ta["outcome"] == pending, tb["outcome"] == pending
    if require_complete and (pa.any() or pb.any()):
        print(f"incomplete: {int(pa.sum())} and {int(pb.sum())} rows pending")
        return False
    rows = ~pa & ~pb if rows_done_only else np.ones(len(ta), dtype=bool)
    exempt = allowed_rows(ta, tb, allow) & rows if allow else np.zeros(len(ta), dtype=bool)
    if allow:
        changed = np.zeros(len(ta), dtype=bool)
        for name in ta.dtype.names:
            if name not in IGNORED:
                changed |= exempt & ~same_bits(ta[name], tb[name])
        print(f"allowed to differ ({' '.join(allow)}): {int(exempt.sum())} rows, "
              f"{int(changed.sum())} of them changed, e.g. trials {list(np.flatnonzero(changed)[:8])}")
        rows = rows & ~exempt
    bad = []
    for name in ta.dtype.names:
        if name in IGNORED:
            continue
        same = same_bits(ta[name][rows], tb[name][rows])
        if not np.all(same):
            idx = np.flatnonzero(rows)[~same][:5]
            bad.append(f"field {name}: {int((~same).sum())} rows differ, e.g. trials {list(idx)}")
    names_a, names_b = set(bulk_a), set(bulk_b)
    if names_a != names_b:
        bad.append(f"bulk datasets differ: {sorted(names_a)} vs {sorted(names_b)}")
    sparse = "trial_index" in fa or "trial_index" in fb
    for name in sorted(names_a & names_b):
        (off_a, da), (off_b, db) = bulk_a[name], bulk_b[name]
        if not sparse and not np.array_equal(off_a, off_b):
            bad.append(f"bulk offsets of {name} differ")
            continue
        for i in np.flatnonzero(rows & ~pa & ~pb & (ta["outcome"] != failed)):
            sa = da[int(off_a[i]):int(off_a[i + 1])]
            sb = db[int(off_b[i]):int(off_b[i + 1])]
            if len(sa) != len(sb) or not np.all(same_bits(sa, sb)):
                bad.append(f"bulk {name} of trial {i} differs")
                break
    if bad:
        print("\n".join(bad))
        return False
    print(f"identical: {int(rows.sum())} records compared ({', '.join(IGNORED)} ignored)"
          f"{', bulk: ' + ', '.join(sorted(names_a)) if names_a else ''}")
    return True


def main(argv):
    flags = {a for a in argv[1:] if a.startswith("--")}
    args = [a for a in argv[1:] if not a.startswith("--")]
    try:
        if "--complete" in flags and len(args) == 1:
            ok = complete(args[0], "--closed" in flags)
        elif "--segments" in flags and len(args) == 1:
            ok = segments(args[0])
        elif len(args) == 2 and all(f in ("--require-complete", "--rows-done-only") or
                                    f.startswith("--allow=") for f in flags):
            ok = compare(args[0], args[1], "--require-complete" in flags,
                         "--rows-done-only" in flags,
                         sorted(f[len("--allow="):] for f in flags if f.startswith("--allow=")))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (OSError, KeyError) as e:
        print(f"compare_results: cannot read: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
