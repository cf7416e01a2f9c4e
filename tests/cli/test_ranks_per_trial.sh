#!/usr/bin/env bash
# ranks_per_trial (docs/meanfield.md): one trial's rows spread over R ranks gives the records
# (ranks_per_trial itself, wall_time and rank aside) and final tokens of R = 1, bit for bit,
# for R = 1, 2, 3 on 2, 3, 4 ranks in the job, with small trials on single ranks in the same
# job; n = 600 is three tiles of the streamed kernel, so every part computes other rows. A
# trial asking for more ranks than the job has (5, in every run) is a recorded failure while
# the others run (never a hang: the timeout), and an error of `plan --ranks N`; a model the
# streamed kernel does not run is an error of validate. Group trials are shown in the progress
# lines and counted by `status`.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init ranks_per_trial

for R in 1 2 3; do
  cat >"$tmp/r$R.yaml" <<YAML
name: ranks_per_trial
seed: 19
output: {final: true}
sweep:
  concat:
    - {case: big, d: 2, n: 600, T: 0.5, dt: 0.1, init: {kind: gauss, scale: 2}, ranks_per_trial: $R}
    - {case: small, d: 2, n: [10, 20], T: 1}
    - {case: toomany, d: 2, n: 10, T: 1, ranks_per_trial: 5}
YAML
done

run() { # run RANKS SPEC OUT: the sweep under a timeout; prints the exit code
  timeout 120 "$mpiexec" -n "$1" "$bin" run "$2" -o "$3" --quiet --flush 0.2 >"$3.log" 2>&1
  echo $?
}
# Exit 4: complete, with a failed trial (toomany).
rc=$(run 2 "$tmp/r1.yaml" "$tmp/a.h5")
check "R = 1 on 2 ranks completes, toomany failed (exit 4, got $rc)" test "$rc" -eq 4
rc=$(run 3 "$tmp/r2.yaml" "$tmp/b.h5")
check "R = 2 on 3 ranks completes, toomany failed (exit 4, got $rc)" test "$rc" -eq 4
rc=$(run 4 "$tmp/r3.yaml" "$tmp/c.h5")
check "R = 3 on 4 ranks completes, toomany failed (exit 4, got $rc)" test "$rc" -eq 4

$py - "$tmp/a.h5" "$tmp/b.h5" "$tmp/c.h5" <<'PY'
import sys, h5py
ref = h5py.File(sys.argv[1], "r")
rt, rf = ref["trials"][...], ref["bulk/final_tokens"][...]
out = {v: k for k, v in h5py.check_enum_dtype(rt.dtype["outcome"]).items()}
bad = 0
for path, ranks in zip(sys.argv[1:], (2, 3, 4)):
    t = h5py.File(path, "r")["trials"][...]
    # rows 0..2 (big, small x 2) ran; row 3 (toomany) failed, saying why.
    ok = all(out[o] == "reached_T" for o in t["outcome"][:3]) and out[t["outcome"][3]] == \
        "failed" and (b"ranks_per_trial = 5, more than the %d ranks" % ranks) in t["message"][3]
    print("%s: on %d ranks the trials ran and toomany failed: %s"
          % ("ok" if ok else "FAIL", ranks, t["message"][3]))
    bad += not ok
for path, R in zip(sys.argv[2:], (2, 3)):
    f = h5py.File(path, "r")
    t, fin = f["trials"][...][:3], f["bulk/final_tokens"][...]
    diff = [k for k in t.dtype.names if k not in ("wall_time", "rank", "ranks_per_trial")
            and t[k].tobytes() != rt[:3][k].tobytes()]
    ok = not diff and fin.tobytes() == rf.tobytes() and int(t["ranks_per_trial"][0]) == R
    print("%s: R = %d identical to R = 1 (records and final tokens)%s"
          % ("ok" if ok else "FAIL", R, "" if ok else ": differ in %s" % diff))
    bad += not ok
sys.exit(1 if bad else 0)
PY
check "records identical for R = 1, 2, 3; the impossible trial recorded as failed" test $? -eq 0

"$bin" plan "$tmp/r3.yaml" --ranks 2 >"$tmp/plan.out" 2>&1
rc=$?
check "plan --ranks 2 refuses ranks_per_trial = 3 (exit 2, got $rc)" test $rc -eq 2
check "plan names the trial and the value" grep -q "ranks_per_trial = 3, more than the 2 ranks" "$tmp/plan.out"
"$bin" plan "$tmp/r3.yaml" --ranks 5 >/dev/null 2>&1
check "plan --ranks 5 accepts it" test $? -eq 0

# Issue 34 point 3: a sweep of group trials only reports them (start, running lines, totals),
# never the empty scheduler's "0/0 (100.0%)", and `status` counts them.
cat >"$tmp/g.yaml" <<'YAML'
name: groups_only
seed: 19
sweep: {d: 2, n: 600, T: [0.5, 1], dt: 0.1, init: {kind: gauss, scale: 2}, ranks_per_trial: 2}
YAML
timeout 120 "$mpiexec" -n 2 "$bin" run "$tmp/g.yaml" -o "$tmp/g.h5" --progress 0.01 \
  --no-progress-bar >"$tmp/g.log" 2>&1
rc=$?
check "group trials only: exit 0 ($rc)" test $rc -eq 0
check "progress: each group trial's start" \
  test "$(grep -c 'group trial [01] (. of 2 in the plan) starts on 2 ranks' "$tmp/g.log")" -eq 2
check "progress: a running line with the integration time and the attention evaluations" \
  grep -Eq 'group trial [01] on 2 ranks: t = [0-9.e+-]+ of T = (0.5|1) \([0-9.]+%, ETA [0-9.?]+( s)?\), running [0-9.]+ s, [0-9]+ attention evaluations' "$tmp/g.log"
# Within each trial the time shown never goes back and never passes T; its share is t / T.
check "progress: t within [0, T], non-decreasing per trial, percent = 100 t / T" "$py" - "$tmp/g.log" <<'PY'
import re, sys
last = {}
bad = 0
for line in open(sys.argv[1]):
    m = re.search(r"group trial (\d+) on 2 ranks: t = (\S+) of T = (\S+) \(([0-9.]+)%", line)
    if not m:
        continue
    k, t, T, pc = m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4))
    bad += not (0 <= t <= T) or t < last.get(k, 0) or abs(pc - 100 * t / T) > 0.1
    last[k] = t
print(f"{len(last)} trial(s) with time lines, {bad} bad")
sys.exit(1 if bad or not last else 0)
PY
check "progress: the totals" grep -q "group trials: 2/2 done (0 failed or non-finite" "$tmp/g.log"
check "progress: no empty 0/0 line" bash -c "! grep -q ' 0/0 ' '$tmp/g.log'"
out=$("$bin" status "$tmp/g.h5" 2>&1)
check "status counts the group trials" grep -q "^group trials (ranks_per_trial >= 2): 2 done, 0 pending$" <<<"$out"
out=$("$bin" status "$tmp/g.h5" --json 2>&1)
check "status --json counts them" grep -q '"group_trials": {"done": 2, "pending": 0}' <<<"$out"

cat >"$tmp/bad.yaml" <<'YAML'
name: bad
sweep: {d: 2, n: 300, mask: causal, ranks_per_trial: 2}
YAML
"$bin" validate "$tmp/bad.yaml" >"$tmp/val.out" 2>&1
rc=$?
check "validate refuses ranks_per_trial with a causal mask (exit 2, got $rc)" test $rc -eq 2
check "validate says where and why" grep -q "bad.yaml:2:.*ranks_per_trial = 2 streams the attention" "$tmp/val.out"
[ $fail -eq 0 ] || cat "$tmp/val.out" "$tmp/plan.out"
exit $fail
