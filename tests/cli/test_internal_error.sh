#!/usr/bin/env bash
# Bugs are not data (issue 13, point 6). An internal error inside a trial (the test hook
# ATTNSWEEP_TEST_INTERNAL_ERROR=<trial>[:lapack] of pipeline.h: a core function called with an
# invalid argument, or a LAPACK call with an illegal one) stops the run, with 1 and 2 ranks:
#   * exit 70 (AS_EXIT_INTERNAL), within a time limit (no hang);
#   * the message, printed once, names file:line of the failing check and the trial (index,
#     case and parameters);
#   * nothing is recorded for that trial (its row stays pending), no row is stored as failed
#     but the missing-file trials, every done row is a whole record equal to the reference's,
#     the file was closed cleanly, and `run --resume` completes it with the reference records.
# A missing matrix file stays the trial's own failure: recorded as failed with its message,
# exit 0, as before.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init internal

cat >"$tmp/spec.yaml" <<'YAML'
name: internal
seed: 5
replicates: 2
sweep:
  concat:
    - {case: plain, vfamily: identity, mfamily: identity, d: [2, 3], n: [6, 10], T: 3}
    - {case: missing_file, vfamily: file, mfamily: file, file: does_not_exist.h5, d: 2, n: 5,
       T: 3}
YAML
# 5 points x 2 replicates: trials 4 and 9 read the missing file; trial 2 is (plain, d 3, n 6).

# rows FILE: "pending failed failed-with-the-file-message" counts and the pending rows.
rows() {
  "$py" - "$1" <<'PY'
import sys, h5py
t = h5py.File(sys.argv[1], "r")["trials"][...]
out = {v: k for k, v in h5py.check_enum_dtype(t.dtype["outcome"]).items()}
pend = [i for i, r in enumerate(t) if out[r["outcome"]] == "pending"]
failed = [r for r in t if out[r["outcome"]] == "failed"]
nfile = sum(b"does_not_exist.h5" in r["message"] for r in failed)
print(len(pend), len(failed), nfile, " ".join(map(str, pend)))
PY
}

"$mpiexec" -n 1 "$bin" run "$tmp/spec.yaml" -o "$tmp/ref.h5" --quiet >"$tmp/ref.log" 2>&1
rc=$?
check "reference run (2 failed trials) exits 4 ($rc)" test $rc -eq 4
read -r np_ nf nfile _ < <(rows "$tmp/ref.h5")
check "missing matrix file: recorded failed trials with the file named ($np_ pending, $nf failed, $nfile naming the file)" \
  test "$np_ $nf $nfile" = "0 2 2"

for np in 1 2; do
  out=$tmp/bug$np.h5
  ATTNSWEEP_TEST_INTERNAL_ERROR=2 timeout 120 "$mpiexec" -n $np "$bin" run "$tmp/spec.yaml" \
    -o "$out" --quiet >"$tmp/bug$np.log" 2>&1
  rc=$?
  check "$np rank(s): internal error exits 70 ($rc; 124 would be a hang)" test $rc -eq 70
  check "$np rank(s): the message is printed once" \
    test "$(grep -c 'internal error (a bug in attnsweep)' "$tmp/bug$np.log")" -eq 1
  check "$np rank(s): it names file:line of the failing check" \
    grep -Eq 'tokens\.c:[0-9]+: as_tokens_init: \[rank [01], trial 2\] tokens: NULL argument' \
    "$tmp/bug$np.log"
  check "$np rank(s): it names the trial and its parameters" \
    grep -q "in trial 2 (case 'plain', replicate 0, d 3, n 6, V identity, M identity" \
    "$tmp/bug$np.log"
  [ $rc -eq 70 ] || cat "$tmp/bug$np.log"
  read -r npend nf _ pending < <(rows "$out")
  check "$np rank(s): trial 2 is pending, not failed (pending: $pending)" \
    bash -c "[[ ' $pending ' == *' 2 '* ]]"
  check "$np rank(s): no row stored as failed but the missing-file ones ($nf failed)" \
    test "$(rows "$out" | awk '{print ($2 == $3)}')" = 1
  check "$np rank(s): every done row is a whole record, the file was closed" \
    "$py" "$tools/compare_results.py" --complete "$out" --closed
  check "$np rank(s): done rows equal the reference" \
    "$py" "$tools/compare_results.py" "$tmp/ref.h5" "$out" --rows-done-only
  timeout 120 "$mpiexec" -n $np "$bin" run "$tmp/spec.yaml" -o "$out" --resume --quiet \
    >"$tmp/resume$np.log" 2>&1
  rc=$?
  check "$np rank(s): --resume without the bug exits 4, the 2 missing-file trials ($rc)" test $rc -eq 4
  check "$np rank(s): the resumed file equals the reference" \
    "$py" "$tools/compare_results.py" "$tmp/ref.h5" "$out" --require-complete
done

# A LAPACK illegal argument in a trial on a worker (2 ranks): the same stop, LAPACK named.
ATTNSWEEP_TEST_INTERNAL_ERROR=7:lapack timeout 120 "$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" \
  -o "$tmp/lapack.h5" --quiet >"$tmp/lapack.log" 2>&1
rc=$?
check "LAPACK illegal argument: exit 70 ($rc)" test $rc -eq 70
check "LAPACK illegal argument: named with file:line and the trial" \
  grep -Eq 'pipeline\.c:[0-9]+: inject_fault: \[rank [01], trial 7\] dgesv .*argument 4 had an illegal value; in trial 7 ' \
  "$tmp/lapack.log"
read -r _ nf nfile pending < <(rows "$tmp/lapack.h5")
check "LAPACK illegal argument: trial 7 pending, nothing else failed but the file ($pending)" \
  bash -c "[[ ' $pending ' == *' 7 '* ]] && [ $nf -eq $nfile ]"
[ $fail -eq 0 ] || cat "$tmp/lapack.log"
exit $fail
