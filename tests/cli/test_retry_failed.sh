#!/usr/bin/env bash
# A sweep whose trials failed (a missing matrix file) completes with exit 4 and the count, and
# `status` says so; `run --resume --retry-failed` once the file is in place runs those trials
# again, keeps every other row bit for bit, and exits 0; a fresh run with the file present
# gives the same records. --retry-failed without --resume is a usage error (exit 2). A retry
# after a stop whose trials fail again gives no false "journal entries differ" warning.
set -u
source "$(dirname "$0")/lib.sh"
as_test_init retry_failed

cat >"$tmp/spec.yaml" <<YAML
name: retry
seed: 11
replicates: 2
sweep:
  concat:
    - {case: plain, vfamily: identity, mfamily: identity, d: [2, 3], n: 6, T: 3}
    - {case: from_file, vfamily: file, mfamily: identity, file: $tmp/mats.h5, d: 2, n: 5, T: 3}
YAML
# 3 points x 2 replicates = 6 trials; the 2 of case from_file fail while mats.h5 is missing.
rows() { # rows FILE: "failed nonfinite pending" counts
  "$py" - "$1" <<'PY'
import sys, h5py
t = h5py.File(sys.argv[1], "r")["trials"]
lab = {v: k for k, v in h5py.check_enum_dtype(t.dtype["outcome"]).items()}
o = [lab[x] for x in t["outcome"]]
print(o.count("failed"), o.count("nonfinite"), o.count("pending"))
PY
}

err=$("$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/out.h5" -q 2>&1); rc=$?
echo "$err"
check "failed trials: exit 4 ($rc)" test $rc -eq 4
check "failed trials: the count is printed" grep -q "complete, but 2 of its 6 trials failed or are non-finite (exit 4)" <<<"$err"
check "failed trials: the rerun command is named" grep -q -- "--resume --retry-failed" <<<"$err"
check "failed trials: 2 rows failed" test "$(rows "$tmp/out.h5")" = "2 0 0"
st=$("$bin" status "$tmp/out.h5" 2>&1)
echo "$st" | grep state
check "status: complete, but 2 failed" grep -q "state: complete, but 2 trial(s) failed or non-finite" <<<"$st"

# A plain resume changes nothing and still says 4.
"$mpiexec" -n 1 "$bin" run "$tmp/spec.yaml" -o "$tmp/out.h5" --resume -q >/dev/null 2>&1; rc=$?
check "resume without retry: still exit 4 ($rc)" test $rc -eq 4

err=$("$mpiexec" -n 1 "$bin" run "$tmp/spec.yaml" -o "$tmp/out.h5" --retry-failed 2>&1); rc=$?
check "--retry-failed without --resume: exit 2 ($rc)" test $rc -eq 2
check "--retry-failed without --resume: says so" grep -q "needs --resume" <<<"$err"

cp "$tmp/out.h5" "$tmp/before.h5"
"$py" - "$tmp/mats.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["/triples/V"] = np.array([[[1.0, 0.2], [0.0, 0.5]]])
PY
err=$("$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/out.h5" --resume --retry-failed 2>&1); rc=$?
echo "$err"
check "retry with the file present: exit 0 ($rc)" test $rc -eq 0
check "retry: says 2 were run again" grep -q "2 failed or non-finite trials were run again" <<<"$err"
check "retry: no row failed or pending" test "$(rows "$tmp/out.h5")" = "0 0 0"
"$mpiexec" -n 1 "$bin" run "$tmp/spec.yaml" -o "$tmp/ref.h5" -q >/dev/null 2>&1; rc=$?
check "fresh run with the file: exit 0 ($rc)" test $rc -eq 0
check "retried file equals a fresh run" "$py" "$tools/compare_results.py" "$tmp/ref.h5" "$tmp/out.h5" --require-complete
check "the kept rows are those of the first run" "$py" - "$tmp/before.h5" "$tmp/out.h5" <<'PY'
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1], "r")["trials"][...]
b = h5py.File(sys.argv[2], "r")["trials"][...]
lab = {v: k for k, v in h5py.check_enum_dtype(a.dtype["outcome"]).items()}
keep = np.array([lab[x] != "failed" for x in a["outcome"]])
sys.exit(0 if keep.sum() == 4 and a[keep].tobytes() == b[keep].tobytes() else 1)
PY
st=$("$bin" status "$tmp/out.h5" 2>&1)
check "status after the retry: complete" grep -q "^state: complete$" <<<"$st"

# Issue 36 item 15: a run stopped early keeps its journals; `--resume --retry-failed` whose
# trials fail again (the file still missing) must not call the earlier attempts' journal entries
# "differing" (they differ from the new rows in wall_time only), and tidies the journals. The
# failing case is costed high (n 500, T 100), so the scheduler runs it first.
cat >"$tmp/stop.yaml" <<YAML
name: retry_stop
seed: 11
replicates: 40
sweep:
  concat:
    - {case: from_file, vfamily: file, mfamily: identity, file: $tmp/none.h5, d: 2, n: 500, T: 100}
    - {case: plain, vfamily: identity, mfamily: identity, d: [2, 3], n: [40, 80], T: 50}
YAML
"$bin" run "$tmp/stop.yaml" -o "$tmp/stop.h5" -q --time-limit 0.3 >/dev/null 2>&1; rc=$?
check "stopped early with its failed trials in: exit 99 ($rc), journals kept" \
  bash -c "[ $rc -eq 99 ] && ls '$tmp'/stop.h5.journal.* >/dev/null"
err=$("$bin" run "$tmp/stop.yaml" -o "$tmp/stop.h5" -q --resume --retry-failed 2>&1); rc=$?
check "retry whose trials fail again: exit 4 ($rc), no 'journal entries differ'" \
  bash -c "[ $rc -eq 4 ] && ! grep -q 'journal entries differ' <<<\"\$1\"" _ "$err"
check "and the journals are tidied" bash -c "! ls '$tmp'/stop.h5.journal.* 2>/dev/null"
exit $fail
