#!/usr/bin/env bash
# attnsweep run: records are byte-identical (wall_time and rank aside) with 1, 2, 3 and 4
# ranks, bulk data included; a trial whose set-up fails (a missing matrix file) and a trial
# that overflows are recorded with their outcome and message while the sweep goes on; the
# built-in default sweep completes; a file that exists is not overwritten without --force.
set -u
bin=${ATTNSWEEP:?}
mpi=${MPIEXEC:-mpiexec}
src=${AS_SOURCE_DIR:?}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi; }

cat >"$work/spec.yaml" <<'YAML'
name: ranks
seed: 11
replicates: 3
output: {initial: true, final: true, attention: true, matrices: true, snapshots: [1.0, 2.5]}
sweep:
  concat:
    - {case: identity, vfamily: identity, mfamily: identity, d: [2, 3], n: [8, 20], T: 5}
    - {case: good, vfamily: perron, mfamily: identity, d: 3, n: 12, T: 5, method: [rk4, dopri5]}
    - {case: layers, vfamily: symmetric, v_kpos: 1, mfamily: spd, m_cond: 10, d: 4, n: 10,
       T: 3, method: layers}
    - {case: missing_file, vfamily: file, mfamily: file, file: does_not_exist.h5, d: 2, n: 5,
       T: 3}
    - {case: overflow, vfamily: identity, v_scale: 400, mfamily: identity, vars: x, d: 2,
       n: 5, T: 5}
YAML

for np in 1 2 3 4; do
  "$mpi" -n $np "$bin" run "$work/spec.yaml" -o "$work/r$np.h5" --quiet --flush 0.2 \
    >"$work/log$np" 2>&1
  rc=$?
  check "run with $np rank(s) exits 4: complete, with failed and non-finite trials (rc $rc)" test $rc -eq 4
  [ $rc -eq 0 ] || cat "$work/log$np"
done
for np in 2 3 4; do
  out=$($py "$src/tests/tools/compare_results.py" "$work/r1.h5" "$work/r$np.h5" --require-complete)
  rc=$?
  check "records with $np ranks identical to 1 rank: $out" test $rc -eq 0
done

# The failed and the overflowing trials are records, with outcome and message.
$py - "$work/r2.h5" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
t = f["trials"][...]
out = {v: k for k, v in h5py.check_enum_dtype(t.dtype["outcome"]).items()}
ver = {v: k for k, v in h5py.check_enum_dtype(t.dtype["verdict"]).items()}
fails = [r for r in t if out[r["outcome"]] == "failed"]
nonf = [r for r in t if out[r["outcome"]] == "nonfinite"]
ok = [r for r in t if out[r["outcome"]] in ("reached_T", "settled")]
assert len(fails) == 3, f"{len(fails)} failed trials, expected 3 (one per replicate)"
for r in fails:
    assert b"does_not_exist.h5" in r["message"], r["message"]
    assert ver[r["verdict"]] == "failed"
assert len(nonf) == 3, f"{len(nonf)} non-finite trials, expected 3"
for r in nonf:
    assert ver[r["verdict"]] == "nonfinite"
assert len(ok) == len(t) - 6, "every other trial ran"
hosts = f.attrs["hosts"]
print("ok: failures recorded:", len(fails), "non-finite:", len(nonf), "others:", len(ok))
PY
check "failed and non-finite trials recorded, others complete" test $? -eq 0

# An existing results file is never overwritten by accident.
"$mpi" -n 1 "$bin" run "$work/spec.yaml" -o "$work/r1.h5" --quiet >"$work/again" 2>&1
rc=$?
check "existing file refused without --resume/--force (rc $rc)" test $rc -eq 2
check "refusal names the file and the options" grep -q -- "--resume" "$work/again"
out=$($py "$src/tests/tools/compare_results.py" "$work/r1.h5" "$work/r2.h5" --require-complete)
check "refused run left the file intact" test $? -eq 0

# --force replaces a file together with its journals: a resume of the new sweep must never put
# back records of the replaced one. Sweep B differs from the spec above only by its seed.
sed 's/^seed: 11$/seed: 12/' "$work/spec.yaml" >"$work/specB.yaml"
"$mpi" -n 2 "$bin" run "$work/specB.yaml" -o "$work/fresh.h5" --quiet >/dev/null 2>&1
cp "$work/r1.h5" "$work/replaced.h5"
cp "$work/r1.h5.journal.0" "$work/replaced.h5.journal.0"
"$mpi" -n 1 "$bin" run "$work/specB.yaml" -o "$work/replaced.h5" --force --quiet \
  --time-limit 0.001 >/dev/null 2>&1
rc=$?
check "forced run stopped by its time limit (rc $rc)" test $rc -eq 99 -o $rc -eq 0
"$mpi" -n 2 "$bin" run "$work/specB.yaml" -o "$work/replaced.h5" --resume --quiet >/dev/null 2>&1
out=$($py "$src/tests/tools/compare_results.py" "$work/fresh.h5" "$work/replaced.h5" --require-complete)
check "forced, stopped and resumed sweep equals a fresh one: $out" test $? -eq 0

# The built-in default sweep (what jobs/local.sh runs) completes on 2 ranks.
"$mpi" -n 2 "$bin" run -o "$work/default.h5" --quiet >"$work/default.log" 2>&1
rc=$?
check "default sweep completes on 2 ranks (rc $rc)" test $rc -eq 0
"$bin" summarize "$work/default.h5" >"$work/summary.md" 2>&1
check "default sweep summarizes" grep -q "identity" "$work/summary.md"

# Bad input: a broken spec names its line and exits 2 on every rank.
printf 'name: x\nsweep: {vfamily: identityy, d: 2}\n' >"$work/bad.yaml"
"$mpi" -n 2 "$bin" run "$work/bad.yaml" -o "$work/bad.h5" >"$work/bad.log" 2>&1
rc=$?
check "bad spec exits 2 (rc $rc)" test $rc -eq 2
check "bad spec names SPEC:LINE:COL" grep -q "bad.yaml:2:" "$work/bad.log"
check "bad spec wrote no results file" test ! -e "$work/bad.h5"
exit $fail
