#!/usr/bin/python3
"""bench_summarize.py: `attnsweep summarize` and `attnsweep report` on a merged results file of
10^6 trials: wall time and peak memory of each command (issue 48: within 60 s and 4 GB).

usage: /usr/bin/python3 analysis/bench_summarize.py [--rows N] [--keep FILE] [--binary PATH]
                                                    [--in-process]

The file is fabricated in the results-file layout, as `attnsweep merge` leaves a job array's
shards merged: a small real sweep is run by the binary (every field, its HDF5 types, the
/trials attributes a summary reads: descriptions, flags, theorem_table, near_hypotheses; the
root attributes and /spec), and its /trials is then written with N rows (the row layout from
`attnsweep help fields --json`), contiguous as the writer makes it, with every verdict,
outcome (not_converged included), reason and horizon, nearest theorems and hypothesis
distances, and a few sweep axes (case, d, n, eps, perturb, T) drawn at random; the root
attribute merged_from says it is one. Then it runs, through the binary (the checksum check in
C, then the Python), `attnsweep summarize FILE` and `attnsweep report FILE -o FILE.html`, each
in a process of its own, and prints its wall time and peak resident memory (the child's
ru_maxrss: the binary execs the interpreter, so one process). --in-process adds the seconds of
a few more summaries run in this interpreter. Prints the machine (CPU, cores, memory). Not a
test: it prints figures (docs/analysis.md, "Speed"; bench/summarize_1m.sh runs it).
"""

import argparse
import io
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import h5py  # noqa: E402
from attnsweep import cli, layout  # noqa: E402

SPEC = """name: bench
seed: 11
replicates: 1
sweep:
  concat:
    - {case: polytope, vfamily: identity, mfamily: identity, d: 2, n: 6, T: 2,
       eps: [0, 0.01], perturb: [v]}
    - {case: good, vfamily: good, mfamily: spd, d: 2, n: 6, T: 2}
"""


def machine():
    """One line: CPU model, cores, memory, Python."""
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return "%s, %d cores, %.0f GiB memory, Python %s, numpy %s, h5py %s" % (
        cpu, os.cpu_count() or 0, mem, platform.python_version(), np.__version__,
        h5py.__version__)


def template(binary, directory):
    """A tiny real results file of the binary: its types, attributes and spec."""
    spec = os.path.join(directory, "bench.yaml")
    with open(spec, "w") as fh:
        fh.write(SPEC)
    path = os.path.join(directory, "template.h5")
    subprocess.run([binary, "run", spec, "-o", path], check=True, capture_output=True,
                   cwd=directory)
    return path


def write_synthetic(path, rows, binary, directory, seed=1):
    """N rows in the layout of the template's /trials, its attributes copied (module doc)."""
    tpath = template(binary, directory)
    rng = np.random.default_rng(seed)
    with h5py.File(tpath, "r") as t:
        cases = [k for k, _ in sorted(h5py.check_enum_dtype(t["trials"].dtype["case_name"])
                                      .items(), key=lambda kv: kv[1]) if k != "-"]
        dt = layout.record_dtype(binary, labels={"case_name": cases})
        if dt.names != t["trials"].dtype.names:
            raise SystemExit("the binary's layout differs from its file's")
        dt = t["trials"].dtype  # the file's own types (labels of this spec included)
        lab = {f: h5py.check_enum_dtype(dt[f]) for f in dt.names
               if h5py.check_enum_dtype(dt[f])}
        a = np.zeros(rows, dtype=dt)
        for f in dt.names:
            if dt[f].kind == "f":
                a[f] = np.nan

        def pick(field, labels, p=None):
            return np.array([lab[field][x] for x in labels])[rng.choice(len(labels), rows, p=p)]
        a["trial"] = np.arange(rows)
        a["case_name"] = rng.integers(0, len(cases), rows)
        a["replicate"] = rng.integers(0, 50, rows)
        a["d"] = rng.choice([2, 3, 8, 32], rows)
        a["n"] = rng.choice([10, 20, 50], rows)
        a["T"] = rng.choice([5.0, 15.0, 45.0], rows)
        a["eps"] = rng.choice([0.0, 1e-3, 1e-2, 1e-1, 0.3], rows)
        a["perturb"] = np.where(a["eps"] == 0, -1, pick("perturb", ["v", "both"]))
        a["vfamily"] = pick("vfamily", ["identity", "good", "gaussian"])
        a["mfamily"] = pick("mfamily", ["identity", "spd", "gaussian"])
        a["theorem"] = pick("theorem", [k for k in lab["theorem"]])
        a["near_theorem"] = pick("near_theorem", [k for k in lab["near_theorem"]])
        a["flags"] = rng.integers(0, 1 << 15, rows)
        for f in dt.names:
            if f.startswith("dist_") or f in ("near_dist", "gap", "margin"):
                a[f] = rng.standard_normal(rows) * 10.0 ** rng.integers(-6, 1, rows)
        verdicts = ["pending", "consistent", "violated", "unresolved", "no_prediction",
                    "nonfinite", "failed"]
        p = [0.02, 0.6, 0.1, 0.15, 0.09, 0.02, 0.02]
        for vf, rf_, tf in (("verdict", "reason", "t_decide"),
                            ("near_verdict", "near_reason", "near_t_decide")):
            a[vf] = pick(vf, verdicts, p)
            unres = a[vf] == lab[vf]["unresolved"]
            a[rf_] = np.where(unres, pick(rf_, ["moving", "metastable", "precision"]),
                              lab[rf_]["none"])
            a[tf] = np.where(unres & (rng.random(rows) < 0.8), rng.uniform(10, 500, rows),
                             np.nan)
        pending = a["verdict"] == lab["verdict"]["pending"]
        a["near_verdict"][pending] = lab["near_verdict"]["pending"]
        out = {"pending": "pending", "failed": "failed", "nonfinite": "nonfinite"}
        vname = {v: k for k, v in lab["verdict"].items()}
        a["outcome"] = [lab["outcome"][out.get(vname[v], "reached_T")] for v in a["verdict"]]
        nc = (~pending) & (rng.random(rows) < 0.01)
        a["outcome"][nc] = lab["outcome"]["not_converged"]
        done = ~pending
        a["n_clusters"] = np.where(done, rng.integers(1, 12, rows), 0)
        a["n_clusters_all"] = np.where(done, a["n_clusters"] + rng.integers(0, 3, rows), -1)
        a["rank_p"] = np.where(done, rng.integers(1, 6, rows), 0)
        a["p_uniform_dist"] = np.where(done, rng.uniform(0, 1, rows), np.nan)
        a["settle_time"] = np.where(done & (rng.random(rows) < 0.8),
                                    rng.exponential(3.0, rows), np.nan)
        a["wall_time"] = np.where(done, rng.exponential(0.5, rows), np.nan)
        for k in ("n_clusters_track", "n_plateaus", "hull_vertices", "hull_vertices_init",
                  "ref_n_clusters", "rank_p_head_min", "rank_p_head_max"):
            if k in dt.names:
                a[k] = -1
        with h5py.File(path, "w") as f:
            for k, v in t.attrs.items():
                f.attrs[k] = v
            f.attrs["n_trials"] = np.uint64(rows)
            f.attrs["merged_from"] = "bench_summarize.py: %d synthetic rows in the layout " \
                "of template.h5" % rows
            ds = f.create_dataset("trials", shape=(rows,), dtype=dt)  # contiguous
            step = 1 << 16
            for s in range(0, rows, step):
                ds[s:s + step] = a[s:s + step]
            for k, v in t["trials"].attrs.items():
                ds.attrs[k] = v
            if "spec" in t:
                f.create_dataset("spec", data=t["spec"][()])


def measure(argv, cwd):
    """(wall seconds, peak RSS in MiB, exit code, stderr) of a command in its own process."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read() if p.stderr else b""
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t, ru.ru_maxrss / 1024.0, p.returncode, err.decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10 ** 6)
    ap.add_argument("--keep", help="write the synthetic file here and keep it")
    ap.add_argument("--binary", default=os.environ.get("ATTNSWEEP") or
                    shutil.which("attnsweep"), help="the attnsweep binary ($ATTNSWEEP)")
    ap.add_argument("--in-process", action="store_true",
                    help="also time a few summaries inside this interpreter")
    args = ap.parse_args()
    if not args.binary:
        raise SystemExit("bench_summarize.py: give --binary or set ATTNSWEEP")
    tmpdir = tempfile.TemporaryDirectory(prefix="bench_summarize_")
    path = args.keep or os.path.join(tmpdir.name, "merged.h5")
    print("machine: %s" % machine())
    t0 = time.perf_counter()
    write_synthetic(path, args.rows, args.binary, tmpdir.name)
    print("wrote %d rows (%.0f MB) in %.1f s: %s" % (
        args.rows, os.path.getsize(path) / 1e6, time.perf_counter() - t0, path))
    cmds = [("summarize", [args.binary, "summarize", path]),
            ("report", [args.binary, "report", path, "-o",
                        os.path.join(tmpdir.name, "report.html")])]
    worst = 0
    for name, argv in cmds:
        wall, rss, rc, err = measure(argv, tmpdir.name)
        worst = max(worst, rc)
        print("%-10s wall %6.1f s  peak RSS %7.0f MiB  exit %d%s" % (
            name, wall, rss, rc, ("  " + err.strip().splitlines()[-1]) if rc and err else ""))
    if args.in_process:
        runs = [("--by d,n --where \"eps < 0.2 and flag_good\"",
                 [path, "--by", "d,n", "--where", "eps < 0.2 and flag_good"]),
                ("--table1 --format latex", [path, "--table1", "--format", "latex"]),
                ("--phase gap --by theorem --format csv",
                 [path, "--phase", "gap", "--by", "theorem", "--format", "csv"]),
                ("--robustness --format csv", [path, "--robustness", "--format", "csv"]),
                ("--stat verdict:=consistent --by eps,perturb",
                 [path, "--stat", "verdict:=consistent", "--by", "eps,perturb"])]
        for name, argv in runs:
            t = time.perf_counter()
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                rc = cli.main(argv)
            print("in process: summarize %-45s %.2f s (exit %d)" % (
                name, time.perf_counter() - t, rc))
        print("in process: peak RSS %.0f MiB" %
              (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
    if not args.keep:
        tmpdir.cleanup()
    return worst


if __name__ == "__main__":
    sys.exit(main())
