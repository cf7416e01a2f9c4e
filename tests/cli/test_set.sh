#!/usr/bin/env bash
# --set KEY=VALUE (issue 34 item 6) for validate, plan and run:
#   * a single value fixes a key everywhere, a list makes it an axis: trial counts as computed
#     by hand from the spec below;
#   * an unknown key, a value out of range, a malformed option: exit 2 naming the option;
#   * run records the override in the stored spec: every row has the overridden T, a resume
#     without SPEC (the stored spec) finishes with it, a resume with SPEC but without the
#     override is refused (another spec).
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init set
cd "$tmp" || exit 1
cat >s.yaml <<'YAML'
name: set
seed: 4
replicates: 2
defaults:
  T: 2
  dt: 0.1
  init: {kind: box, scale: 5}
sweep:
  concat:
    - {case: a, vfamily: identity, mfamily: identity, d: [2, 3], n: [4, 6]}
    - case: b
      vfamily: identity
      mfamily: identity
      d: 2
      n: 5
YAML
count() { sed -n 's/.*valid: \([0-9]*\) trials.*/\1/p' <<<"$1"; }
out=$("$bin" validate s.yaml 2>&1)
check "the spec: 2 x (4 + 1) = 10 trials ($(count "$out"))" test "$(count "$out")" = 10
out=$("$bin" validate s.yaml --set 'n=[4, 6, 8]' --set T=3 2>&1)
check "n=[4, 6, 8] in both cases: 2 x (2 x 3 + 3) = 18 trials ($(count "$out"))" \
  test "$(count "$out")" = 18
out=$("$bin" validate s.yaml --set 'method=[rk4, euler]' --set replicates=1 2>&1)
check "a new list key is an axis of every case: 1 x (4 + 1) x 2 = 10 trials ($(count "$out"))" \
  test "$(count "$out")" = 10
for bad in "Tx=2:unknown key 'Tx'" "T=-5:T = -5 is out of range" "T:needs KEY=VALUE" \
  "T=[1:one YAML value"; do
  set_arg=${bad%%:*}
  "$bin" validate s.yaml --set "$set_arg" >err.txt 2>&1
  rc=$?
  check "--set $set_arg: exit 2 ($rc) naming the option" \
    bash -c '[ "$1" -eq 2 ] && grep -qF -- "$2" err.txt && grep -qF -- "--set $3" err.txt' _ \
    "$rc" "${bad#*:}" "$set_arg"
done
out=$("$bin" plan s.yaml --set replicates=3 2>&1)
check "plan --set replicates=3: 15 trials" grep -q "^15 trials = 3 replicates" <<<"$out"

"$mpiexec" -n 1 "$bin" run s.yaml -o r.h5 --set T=0.5 --set 'n=[4, 6, 7]' -q --time-limit 0.0001 \
  >run.log 2>&1
rc=$?
check "run --set, stopped early: exit 99 ($rc)" test $rc -eq 99
"$mpiexec" -n 1 "$bin" run s.yaml -o r.h5 --resume -q >>run.log 2>&1
rc=$?
check "resume with SPEC but without the overrides: refused, exit 2 ($rc)" test $rc -eq 2
"$mpiexec" -n 1 "$bin" run -o r.h5 --resume -q >>run.log 2>&1
rc=$?
check "resume without SPEC (the stored spec, overrides included): exit 0 ($rc)" test $rc -eq 0
check "every row has T = 0.5 and n in {4, 6, 7} (case b's n = 5 replaced too); 18 rows; /spec names --set" \
  "$py" -c "
import h5py, numpy as np, sys
with h5py.File('r.h5', 'r') as f:
    t = f['trials'][...]
    spec = f['spec'][()].decode()
ok = len(t) == 18 and np.all(t['T'] == 0.5) and set(t['n'].tolist()) == {4, 6, 7}
ok = ok and spec.startswith('# attnsweep --set T=0.5 --set n=[4, 6, 7]')
sys.exit(0 if ok else 1)"
[ $fail -eq 0 ] || cat run.log
echo "test_set: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
