#!/usr/bin/python3
"""bench_summarize.py: time `attnsweep summarize` on a synthetic results file.

usage: /usr/bin/python3 analysis/bench_summarize.py [--rows N] [--keep FILE]

Writes N (default 10^6) synthetic /trials records (dtype from include/attnsweep/record.h and
enums.h, a few sweep axes, random verdicts, cluster counts, rank P, settle and wall times; 5%
of the rows pending as in an interrupted sweep) and prints the seconds taken by the default
summary, a two-axis summary with a filter, Table 1 and a phase table. Not a test: it prints.
"""

import argparse
import io
import os
import sys
import tempfile
import time
from contextlib import redirect_stdout, redirect_stderr

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import h5py  # noqa: E402
import schema  # noqa: E402
import attnsweep_summarize as summ  # noqa: E402


def write_synthetic(path, rows, seed=1):
    dt = schema.dtype_from_headers(os.path.join(here, "..", "include"))
    labels = schema.enum_labels_from_headers(os.path.join(here, "..", "include"))
    rng = np.random.default_rng(seed)
    a = np.zeros(rows, dtype=dt)
    for f in dt.names:
        if dt[f].kind == "f":
            a[f] = np.nan
    a["trial"] = np.arange(rows)
    a["theorem"] = rng.integers(0, len(labels["theorem"]), rows)
    a["d"] = rng.choice([2, 3, 8, 32], rows)
    a["n"] = rng.choice([10, 20, 50], rows)
    a["eps"] = rng.choice([0.0, 1e-3, 1e-2, 1e-1, 0.3], rows)
    a["gap"] = rng.uniform(0, 2, rows)
    a["flags"] = rng.integers(0, 1 << 15, rows)
    verdict = rng.choice([1, 2, 3, 4, 5, 6], rows, p=[0.7, 0.1, 0.1, 0.06, 0.02, 0.02])
    verdict[rng.random(rows) < 0.05] = 0
    a["verdict"] = verdict
    a["outcome"] = np.where(verdict == 0, 0, 1)
    a["n_clusters"] = rng.integers(1, 12, rows)
    a["rank_p"] = rng.integers(1, 6, rows)
    a["settle_time"] = np.where(rng.random(rows) < 0.8, rng.exponential(3.0, rows), np.nan)
    a["wall_time"] = np.where(verdict == 0, np.nan, rng.exponential(0.5, rows))
    with h5py.File(path, "w") as f:
        f.create_dataset("trials", data=a, chunks=(min(rows, 8192),))
        f.attrs["n_trials"] = np.uint64(rows)
        f.attrs["tool_version"] = "bench"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10 ** 6)
    ap.add_argument("--keep", help="write the synthetic file here and keep it")
    args = ap.parse_args()
    tmpdir = None
    path = args.keep
    if not path:
        tmpdir = tempfile.TemporaryDirectory()
        path = os.path.join(tmpdir.name, "bench.h5")
    t0 = time.perf_counter()
    write_synthetic(path, args.rows)
    print("wrote %d records (%.0f MB) in %.2f s" % (
        args.rows, os.path.getsize(path) / 1e6, time.perf_counter() - t0))
    runs = [
        ("default (by theorem)", [path]),
        ("--by d,n --where \"eps < 0.2 and flag_good\"",
         [path, "--by", "d,n", "--where", "eps < 0.2 and flag_good"]),
        ("--table1 --format latex", [path, "--table1", "--format", "latex"]),
        ("--phase gap --by theorem --format csv",
         [path, "--phase", "gap", "--by", "theorem", "--format", "csv"]),
    ]
    for name, argv in runs:
        t = time.perf_counter()
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            rc = summ.main(argv)
        print("summarize %-45s %.2f s (rc %d)" % (name, time.perf_counter() - t, rc))
    if tmpdir:
        tmpdir.cleanup()


if __name__ == "__main__":
    main()
