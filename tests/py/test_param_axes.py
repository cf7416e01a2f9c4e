"""test_param_axes.py: every sweep key reaches /trials and can be grouped on.

For every key of the key table (`attnsweep help keys`, generated from include/attnsweep/params.h)
that has a record field, the spec below sweeps two values of it in a case of its own; after one
real run, `attnsweep summarize --by FIELD --where "case_name == 'KEY'"` must give exactly two
groups. A key of the table without an entry in AXES fails the test: adding a key means adding
its two values here. Also checks that parameters that do not apply are NaN / -1 / 0, that
matrix hashes tell two matrices apart, and that case names and file names are enum labels.
"""

import csv
import hashlib
import io
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

BIN = os.environ.get("ATTNSWEEP", "attnsweep")
MPIEXEC = os.environ.get("MPIEXEC", "mpiexec")
failures = 0


def check(what, ok):
    global failures
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        failures += 1


I2 = "[[1, 0], [0, 1]]"
A2 = "[[2, 0], [0, 1]]"
# key (as `attnsweep help keys` names it) -> YAML body of a case sweeping two of its values.
AXES = {
    "vfamily": "vfamily: [identity, perron]",
    "mfamily": "mfamily: [identity, uniform]",
    "d": "d: [2, 3]",
    "n": "n: [4, 5]",
    "m_rows": "mfamily: uniform, m_rows: [2, 3]",
    "v_scale": "v_scale: [1, 2]",
    "v_kpos": "vfamily: symmetric, v_kpos: [1, 2]",
    "v_lambda": "vfamily: good, v_lambda: [1, 2]",
    "v_dim_f": "vfamily: paranormal, d: 3, v_dim_f: [1, 2]",
    "v_radius": "vfamily: paranormal, v_radius: [0.25, 0.5]",
    "v_oblique": "vfamily: paranormal, v_oblique: [true, false]",
    "v_gap": "vfamily: good, v_gap: [0.25, 0.5]",
    "v_imag": "vfamily: complex, v_imag: [1, 2]",
    "m_scale": "m_scale: [1, 2]",
    "m_cond": "mfamily: spd, m_cond: [1, 4]",
    "margin": "vfamily: good, margin: [0.5, 1]",
    "beta": "beta: [1, 2]",
    "V": "V: [%s, %s]" % (I2, A2),
    "Q": "Q: [%s, %s], K: %s" % (I2, A2, I2),
    "K": "Q: %s, K: [%s, %s]" % (I2, I2, A2),
    "M": "M: [%s, %s]" % (I2, A2),
    "file": "vfamily: file, mfamily: file, file: [w1.h5, w2.h5]",
    "file_index": "vfamily: file, file: w1.h5, file_index: [0, 1]",
    "file_mscale": "mfamily: file, file: w1.h5, file_mscale: [1, 2]",
    "eps": "eps: [0.01, 0.1]",
    "perturb": "eps: 0.1, perturb: [v, m]",
    "init_kind": "init_kind: [box, gauss]",
    "init_scale": "init_scale: [1, 2]",
    "init.data": "init: [{kind: explicit, data: [[0, 1], [1, 0], [2, 2], [3, 1]]}, "
                 "{kind: explicit, data: [[0, 2], [1, 0], [2, 2], [3, 1]]}]",
    "init.file": "init: [{kind: file, file: t1.h5, dataset: a}, {kind: file, file: t2.h5, dataset: a}]",
    "init.dataset": "init: [{kind: file, file: t1.h5, dataset: a}, {kind: file, file: t1.h5, dataset: b}]",
    "method": "method: [rk4, euler]",
    "vars": "vars: [z, x]",
    "T": "T: [0.2, 0.3]",
    "T_decide": "T_decide: [0, 1.5]",
    "dt": "dt: [0.1, 0.05]",
    "rtol": "method: dopri5, rtol: [1.0e-6, 1.0e-4]",
    "atol": "method: dopri5, atol: [1.0e-9, 1.0e-6]",
    "max_steps": "max_steps: [100, 200]",
    "settle_tol": "settle_window: 0.1, settle_tol: [1.0e-8, 1.0e-6]",
    "settle_window": "settle_window: [0, 0.1]",
    "triple_seed": "triple_seed: [per_trial, per_parameters]",
    "attention": "attention: [softmax, sinkhorn]",
    # (one iteration is the row softmax: not doubly stochastic, not_converged, not summarised)
    "sinkhorn_iters": "attention: sinkhorn, sinkhorn_iters: [20, 50]",
    "sinkhorn_tol": "attention: sinkhorn, sinkhorn_tol: [1.0e-9, 1.0e-6]",
    "mask": "mask: [none, causal]",
    "norm": "norm: [none, sphere], vars: x",
    "norm_form": "norm: sphere, norm_form: [sa, usa]",
    "heads": "heads: [1, 2]",
    "skip": "method: layers, skip: [true, false]",
    "ffn": "ffn: [relu, tanh]",
    "ffn_form": "ffn: relu, ffn_form: [inside, block]",
    "ffn_width": "ffn: relu, ffn_form: block, ffn_width: [2, 3]",
    "ffn_w": "ffn: relu, ffn_w: [identity, random]",
    "ffn_bias": "ffn: relu, ffn_form: block, ffn_bias: [true, false]",
    "weights": "weights: [shared, per_layer]",
    "weights_every": "weights: per_layer, weights_every: [1, 2]",
    "ranks_per_trial": "ranks_per_trial: [0, 1]",
    "reference_n": "reference_n: [2, 3]",
}


def key_table():
    """(key, record field) of every key with a record field, from `attnsweep help keys`."""
    out = subprocess.run([BIN, "help", "keys"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        key, field = cells[0].strip("`"), cells[3].strip("`")
        if field != "-":
            rows.append((key, field))
    return rows


def write_inputs(tmp):
    rng = np.random.default_rng(1)
    for name in ("w1.h5", "w2.h5"):
        with h5py.File(os.path.join(tmp, name), "w") as f:
            g = f.create_group("triples")
            g["V"] = np.eye(2)[None].repeat(2, 0) * (1.0 if name == "w1.h5" else 1.5)
            g["V"][1] = rng.uniform(0, 1, (2, 2))
            g["M"] = np.eye(2)[None].repeat(2, 0)
    for name in ("t1.h5", "t2.h5"):
        with h5py.File(os.path.join(tmp, name), "w") as f:
            f["tokens/a"] = rng.uniform(-1, 1, (4, 2))
            f["tokens/b"] = rng.uniform(-1, 1, (4, 2))


def main():
    table = key_table()
    check("the key table lists the keys (%d with a record field)" % len(table), len(table) > 30)
    missing = [k for k, _ in table if k not in AXES]
    check("every recorded key has two values in this test (missing: %s)" % missing, not missing)
    with tempfile.TemporaryDirectory(prefix="as_param_axes_") as tmp:
        write_inputs(tmp)
        cases = "\n".join("    - {case: %s, %s}" % (k.replace(".", "_"), AXES[k])
                          for k, _ in table if k in AXES)
        spec = ("name: param_axes\nseed: 3\ndefaults: {n: 4, T: 0.2, dt: 0.1, "
                "init: {kind: box, scale: 1}}\nsweep:\n  concat:\n%s\n" % cases)
        with open(os.path.join(tmp, "axes.yaml"), "w") as fh:
            fh.write(spec)
        r = subprocess.run([MPIEXEC, "-n", "1", BIN, "run", "axes.yaml", "-o", "axes.h5", "-q"],
                           cwd=tmp, capture_output=True, text=True)
        check("the sweep runs (rc %d: %s)" % (r.returncode, r.stderr.strip()[:600]),
              r.returncode == 0)
        if r.returncode != 0:
            print("test_param_axes: %d failed" % failures)
            sys.exit(1)
        for key, field in table:
            if key not in AXES:
                continue
            case = key.replace(".", "_")
            r = subprocess.run([BIN, "summarize", "axes.h5", "--by", field, "--where",
                                "case_name == '%s'" % case, "--format", "csv"], cwd=tmp,
                               capture_output=True, text=True)
            rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.returncode == 0 else []
            check("summarize --by %s gives two groups for key %s (rc %d, %d groups%s)"
                  % (field, key, r.returncode, len(rows), r.stderr.strip()[-200:]),
                  len(rows) == 2)
            if key in ("ffn", "weights"):  # enum keys of their own: labels, not codes
                got = sorted(row.get(field, "") for row in rows)
                want = ["relu", "tanh"] if key == "ffn" else ["per_layer", "shared"]
                check("summarize --by %s shows labels %s (got %s)" % (field, want, got),
                      got == want)
        with h5py.File(os.path.join(tmp, "axes.h5"), "r") as f:
            t = f["trials"][:]
            cmap = h5py.check_enum_dtype(f["trials"].dtype["case_name"])
            names = {v: k for k, v in cmap.items()}
            check("case_name is an enum of the case names",
                  names.get(0) == "vfamily" and "init_dataset" in cmap)
            fmap = h5py.check_enum_dtype(f["trials"].dtype["file"])
            check("file is an enum of the file names", set(fmap) >= {"w1.h5", "w2.h5", "-"})
            for field, want in (("ffn", {"none", "relu", "tanh", "identity", "-"}),
                                ("ffn_form", {"inside", "block", "-"}),
                                ("ffn_w", {"identity", "random", "-"}),
                                ("weights", {"shared", "per_layer", "-"})):
                emap = h5py.check_enum_dtype(f["trials"].dtype[field]) or {}
                check("%s is an HDF5 enum of its key's labels (%s)" % (field, sorted(emap)),
                      set(emap) == want and "types/" + field in f)
            check("ffn_form is '-' (-1) where ffn is none",
                  all(r["ffn_form"] == -1 for r in t if r["ffn"] == 0))
            check("/labels/case_name lists the cases in order",
                  [x.decode() for x in f["labels/case_name"][:]][:2] == ["vfamily", "mfamily"])

            def rows_of(case):
                return t[t["case_name"] == cmap[case]]
            perron = rows_of("vfamily")
            perron = perron[perron["vfamily"] == 3]
            check("v_gap is NaN where V is not a good triple",
                  len(perron) == 1 and np.isnan(perron["v_gap"][0]))
            check("v_kpos is -1 where V is not symmetric", perron["v_kpos"][0] == -1)
            check("rtol is NaN without dopri5", np.isnan(perron["rtol"][0]))
            check("V_hash is 0 where V is not explicit", perron["V_hash"][0] == 0)
            check("perturb is '-' (-1) where eps = 0", perron["perturb"][0] == -1)
            vh = rows_of("V")["V_hash"]
            check("two explicit V give two non-zero hashes", len(set(vh)) == 2 and 0 not in vh)
            sym = rows_of("v_kpos")
            check("v_kpos is recorded where it applies", sorted(sym["v_kpos"]) == [1, 2])
            inputs = f.attrs.get("input_sha256")
            inputs = inputs.decode() if isinstance(inputs, bytes) else str(inputs)
            with open(os.path.join(tmp, "w1.h5"), "rb") as fh:
                want = hashlib.sha256(fh.read()).hexdigest()
            # The path resolved against the spec's directory (docs/spec.md, Input file paths).
            w1 = os.path.join(os.path.realpath(tmp), "w1.h5")
            check("input files hashed into the provenance",
                  "%s  %s\n" % (want, w1) in inputs and "t2.h5" in inputs)
            check("/trials names the bits of flags (flag:good = 5, flag:m_spd = 7)",
                  int(f["trials"].attrs.get("flag:good", -1)) == 5
                  and int(f["trials"].attrs.get("flag:m_spd", -1)) == 7)
            descr = f["trials"].attrs.get("description:v_gap")
            check("/trials describes its fields", descr is not None and b"good" in
                  (descr if isinstance(descr, bytes) else descr.encode()))
    print("test_param_axes: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
