#!/usr/bin/env bash
# run --resume --allow-spec-change (issue 49 item 7; docs/robustness.md "Guards"): a spec that
# changes the trials' random draws is refused even so, exit 2 naming what changed, the file and
# its side files untouched: another seed, another common:, another layout of replicates and
# points with the same trial count, another triple_seed. A change that keeps the draws
# (flush_interval) goes on and stores the new spec (/spec, spec_sha256, spec_name, OUT.h5.spec;
# the journals tagged with it), so that a resume without SPEC, status, repair and reproduce
# read the spec that ran, and a resume with the new spec needs no override any more.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init spec_change
cd "$tmp" || exit 1

slow_spec change 5 >a.yaml # 30 trials of about 10 ms
sed 's/^seed: 5$/seed: 6/' a.yaml >seed.yaml
sed 's/^sweep:$/common: [T]\nsweep:/' a.yaml >common.yaml
sed 's/^replicates: 30$/replicates: 15/; s/T: 40,/T: [40, 41],/' a.yaml >layout.yaml
sed 's/T: 40,/T: 40, triple_seed: per_parameters,/' a.yaml >tseed.yaml
sed 's/^seed: 5$/seed: 5\nflush_interval: 2/' a.yaml >flush.yaml

run() { "$mpiexec" -n 1 "$bin" run "$@" -q >>run.log 2>&1; }
state() { # the file's rows, its spec and its side copy, as bytes
  "$py" -c "
import h5py, hashlib
with h5py.File('r.h5', 'r') as f:
    h = hashlib.sha256(f['trials'][...].tobytes() + f['spec'][()] + f.attrs['spec_sha256'])
print(h.hexdigest()[:16])"
  sha256sum r.h5.spec | cut -c1-16
}

run a.yaml -o r.h5 --time-limit 0.05
rc=$?
check "first segment stopped early: exit 99 ($rc)" test "$rc" -eq 99
before=$(state)
for s in seed common layout tseed; do
  run "$s.yaml" -o r.h5 --resume --allow-spec-change
  rc=$?
  check "$s.yaml with --allow-spec-change: refused, exit 2 ($rc), nothing changed" \
    bash -c '[ "$1" -eq 2 ] && [ "$(cat)" = "$2" ]' _ "$rc" "$before" < <(state)
done
check "the refusals say what changed" \
  bash -c 'grep -q "random draws (from the file.s spec to this one: seed 5 -> 6)" run.log &&
    grep -q "common: \[\] -> \[T\]" run.log && grep -q "replicates x points 30 x 1 -> 15 x 2" run.log &&
    grep -q "triple_seed or the points changed" run.log'
sha_new=$("$bin" validate flush.yaml | sed -n 's/.*sha256 \([0-9a-f]*\)$/\1/p')
run flush.yaml -o r.h5 --resume --allow-spec-change --time-limit 0.05
rc=$?
check "flush.yaml (the same draws) with --allow-spec-change: goes on ($rc)" \
  bash -c '[ "$1" -eq 0 ] || [ "$1" -eq 99 ]' _ "$rc"
check "the file stores the new spec: /spec, spec_sha256, spec_name, OUT.h5.spec" "$py" -c "
import h5py, sys
new = open('flush.yaml', 'rb').read()
with h5py.File('r.h5', 'r') as f:
    ok = f['spec'][()] == new and f.attrs['spec_sha256'].decode().startswith('$sha_new')
    ok = ok and f.attrs['spec_name'].decode() == 'change'
ok = ok and open('r.h5.spec', 'rb').read() == new
sys.exit(0 if ok else 1)"
check "status names the new spec" bash -c '"$1" status r.h5 | grep -q "sha256 $2"' _ "$bin" "$sha_new"
check "repair --dry-run reads the journals (exit 0)" bash -c '"$1" repair r.h5 --dry-run >repair.log 2>&1' _ "$bin"
run flush.yaml -o r.h5 --resume --time-limit 0.05
rc=$?
check "a resume with the new spec needs no --allow-spec-change ($rc)" \
  bash -c '[ "$1" -eq 0 ] || [ "$1" -eq 99 ]' _ "$rc"
run -o r.h5 --resume
rc=$?
check "the resume without SPEC (the stored spec) completes the sweep: exit 0 ($rc)" test "$rc" -eq 0
for t in 0 29; do
  "$mpiexec" -n 1 "$bin" reproduce r.h5 "$t" >rep.log 2>&1
  rc=$?
  check "reproduce trial $t: identical, exit 0 ($rc)" test "$rc" -eq 0
done
run a.yaml -o r.h5 --resume
rc=$?
check "the original spec is now another spec: refused without the override, exit 2 ($rc)" \
  test "$rc" -eq 2

[ $fail -eq 0 ] || grep -v "^---\|^Primary\|^a non-zero\|^mpiexec\|^the job\|^ *Process\|^ *Exit code\|^$" run.log | tail -n 30
echo "test_spec_change: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
