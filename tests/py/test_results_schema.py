#!/usr/bin/python3
"""The documented schema (docs/results.md) against a file written by this build.

Runs io_test_results ($AS_BUILD_DIR/tests/io_test_results, under $MPIEXEC) to write the
example file (10 trials, 9 done, trial 5 failed, final_tokens and V bulk data), then
  * executes the h5py example of docs/results.md on it and checks what it computed against
    what the writer wrote (tests/io/test_results.c: make_record, make_bulk);
  * checks that the field table of the doc lists exactly the fields of /trials, in order;
  * checks that the enum tables of the doc match the named types in /types;
  * checks the root attributes the doc promises;
  * counts a copy whose /trials has one more field (read as two columns, not as packed rows)
    with `attnsweep status`: the same counts as the writer's.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

failures = 0


def check(what, cond):
    global failures
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures += 1


src = os.environ.get("AS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
build = os.environ.get("AS_BUILD_DIR")
if not build:
    sys.exit("AS_BUILD_DIR must be set (ctest sets it)")
writer = os.path.join(build, "tests", "io_test_results")
mpiexec = os.environ.get("MPIEXEC") or "mpiexec"
doc = open(os.path.join(src, "docs", "results.md")).read()

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "example.h5")
    env = dict(os.environ, AS_RESULTS_EXAMPLE=path)
    run = subprocess.run([mpiexec, "-n", "1", writer], env=env, capture_output=True, text=True,
                         timeout=120)
    check("the example writer ran (%s)" % run.stdout.strip(), run.returncode == 0)
    if run.returncode != 0:
        print(run.stderr)
        sys.exit(1)

    # 1. The documented example runs and computes the right things.
    m = re.search(r"<!-- tested example: begin -->\s*```python\n(.*?)```", doc, re.S)
    check("docs/results.md has the tested example", m is not None)
    ns = {"__name__": "__main__"}
    os.environ["RESULTS"] = path
    exec(compile(m.group(1), "docs/results.md (example)", "exec"), ns)
    check("example: 9 of 10 done", int(ns["done"].sum()) == 9 and len(ns["t"]) == 10)
    check("example: verdict counts %s" % ns["verdicts"],
          ns["verdicts"] == {"consistent": 7, "violated": 1, "failed": 1})
    check("example: failed trial 5 with its message",
          ns["failures"] == {5: "synthetic failure of trial 5"})
    check("example: spec text", ns["spec"].startswith("# example sweep"))
    ok = len(ns["tokens"]) == 9
    for i, x in ns["tokens"].items():
        n, d = 4 + i, 2 + i % 3  # make_record in tests/io/test_results.c
        want = (i * 1000.0 + np.arange(n * d) + 0.5).reshape(n, d)  # make_bulk
        ok = ok and x.shape == (n, d) and np.array_equal(x, want)
    check("example: bulk final tokens of every done trial, shaped n x d", ok)
    check("example: two segments", len(ns["segments"]) == 2
          and [int(s) for s in ns["segments"]["trials_done"]] == [5, 9])

    with h5py.File(path, "r") as f:
        # 2. The field table lists exactly the fields of /trials, in order.
        table = doc[doc.index("## `/trials`"):doc.index("### Bits of `flags`")]
        documented = re.findall(r"^\| `(\w+)` \|", table, re.M)
        names = list(f["trials"].dtype.names)
        check("field table matches /trials (%d fields)" % len(names), documented == names)
        # Types: enums where the doc says enum.
        kinds = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", table, re.M))
        enum_ok = all((h5py.check_enum_dtype(f["trials"].dtype[n]) is not None)
                      == kinds[n].startswith("enum") for n in names)
        check("enum fields are HDF5 enums exactly where the doc says so", enum_ok)

        # The nearest theorem's hypotheses: the file's near_hypotheses states the map of the
        # prose in the section on the hypothesis distances, theorem by theorem.
        near = doc[doc.index("### The nearest theorem and the hypothesis distances"):]
        near = near[near.index("The distance of a theorem"):near.index("The file states")]
        prose = {t: re.findall(r"`(dist_\w+)`", fs) for t, fs in
                 re.findall(r"(\w+)(?: \(d = 1 only\))?:\s+((?:`dist_\w+`[,;.]?\s*)+)", near)}
        attr = f["trials"].attrs["near_hypotheses"]
        attr = attr.decode() if isinstance(attr, bytes) else str(attr)
        stated = {t.strip(): fs.split() for t, _, fs in
                  (part.partition(":") for part in attr.split(";"))}
        check("near_hypotheses (%s) states the documented map %s" % (attr, prose),
              len(prose) == 5 and {t: sorted(v) for t, v in prose.items()}
              == {t: sorted(v) for t, v in stated.items()})

        # 3. Enum tables match the named types.
        section = doc[doc.index("### Enumerations"):doc.index("## `/bulk`")]
        tables = re.findall(r"`(\w+)` \(`/types/\w+`\):\s*\n\n\|.*?\n\|.*?\n((?:\|.*\n)+)",
                            section)
        check("20 enum tables documented", len(tables) == 20)
        for name, rows in tables:
            doc_map = {lab: int(v) for v, lab in re.findall(r"^\| (-?\d+) \| `([^`]+)` \|", rows,
                                                            re.M)}
            file_map = h5py.check_enum_dtype(f["types"][name].dtype)
            check("enum %s matches /types/%s" % (name, name), doc_map == file_map)

        # 4. Root attributes promised by the doc exist.
        attr_table = doc[doc.index("## Root attributes"):doc.index("## `/trials`")]
        promised = re.findall(r"^\| `(\w+)` \|", attr_table, re.M)
        missing = [a for a in promised if a not in f.attrs]
        check("root attributes present (missing: %s)" % missing, not missing)
        check("schema_version is 4", int(f.attrs["schema_version"]) == 4)
        off = f["bulk/final_tokens_offset"][:]
        t = f["trials"][:]
        check("offsets are prefix sums of n*d",
              off[0] == 0 and np.array_equal(np.diff(off), [(4 + i) * (2 + i % 3)
                                                            for i in range(10)]))

    # 5. A /trials of another layout (one more field: written by a newer attnsweep, say) is
    # counted by its columns, not as packed rows, to the same counts (docs/results.md).
    wide = os.path.join(tmp, "wide.h5")
    shutil.copy(path, wide)
    with h5py.File(wide, "r+") as f:
        old = f["trials"]
        rows, attrs = old[:], dict(old.attrs)
        del f["trials"]
        dt = np.dtype([(n, rows.dtype[n]) for n in rows.dtype.names] + [("later_field", "<f8")])
        new = np.zeros(rows.shape, dt)
        for name in rows.dtype.names:
            new[name] = rows[name]
        d = f.create_dataset("trials", data=new)
        for k, v in attrs.items():
            d.attrs[k] = v
    st = subprocess.run([os.path.join(build, "attnsweep"), "status", wide], capture_output=True,
                        text=True, timeout=120)
    check("status of the wider file: 9 of 10 done (%s)" % st.stdout.strip().replace("\n", "; "),
          "trials: 9 / 10 done" in st.stdout)
    check("status of the wider file: the writer's verdict counts",
          re.search(r"^verdicts:.*consistent 7", st.stdout, re.M) is not None
          and re.search(r"^verdicts:.*violated 1", st.stdout, re.M) is not None)

print("test_results_schema: %d failed" % failures)
sys.exit(1 if failures else 0)
