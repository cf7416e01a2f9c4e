#!/usr/bin/env bash
# Memory (issue 17, points 3 and 4): plan prints memory per trial, the largest trial and per
# rank; a trial that cannot fit under memory_limit is refused by validate and by run with the
# trial named and exit 2, before anything is written; a limit it fits passes; a streamed trial
# (n > 4096) cannot ask for the final P.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init memory
cd "$tmp" || exit 1

# n = 4000 with dense attention: S and P alone are 2 x 8 n^2 = 256 MB, above 100 MB.
cat >mix.yaml <<'YAML'
name: mix
seed: 1
replicates: 20
memory_limit: 1e8
defaults: {d: 2, T: 0.5, dt: 0.1, init: {kind: box, scale: 5}}
sweep: {case: mix, vfamily: identity, mfamily: identity, n: [4, 4000, 8]}
YAML
"$bin" validate mix.yaml >out 2>err
check "validate refuses the trial that does not fit (exit 2)" test $? -eq 2
check "validate names the trial, its case and shape" \
  grep -q "trial 1 (case 'mix', n = 4000, d = 2) needs about" err
"$bin" plan mix.yaml >plan 2>&1
check "plan names the largest trial" grep -q "largest: trial 1, case 'mix', n = 4000, d = 2" plan
check "plan prints memory per rank against the limit" \
  grep -q "per rank .* with the process; limit .* per rank (memory_limit)" plan
check "plan says run would refuse" grep -q "memory: run would refuse this spec" plan
"$mpiexec" -n 1 "$bin" run mix.yaml -o mix.h5 >run.out 2>&1
check "run refuses with exit 2" test $? -eq 2
check "run names the trial" grep -q "trial 1 (case 'mix', n = 4000" run.out
check "run wrote no results file" test ! -e mix.h5

sed 's/^memory_limit: 1e8/memory_limit: 1e12/' mix.yaml >fits.yaml
"$bin" validate fits.yaml >out 2>err
check "a limit the sweep fits passes validate" test $? -eq 0

# Above 4096 tokens the attention is streamed: P is never formed, so asking for it is refused,
# while the same trial without it validates (its workspace is O(n d)).
cat >big.yaml <<'YAML'
name: big
output: {attention: true}
defaults: {n: 5000, d: 2, T: 0.1, dt: 0.1}
sweep: {case: big, vfamily: identity, mfamily: identity}
YAML
"$bin" validate big.yaml >out 2>err
check "output attention above the streaming threshold is refused (exit 2)" test $? -eq 2
check "the refusal names the trial and says why" \
  grep -q "trial 0 (case 'big', n = 5000): \`output: attention\` needs the whole final P" err
sed '/^output:/d' big.yaml >big2.yaml
"$bin" validate big2.yaml >out 2>err
check "without it the streamed trial validates" test $? -eq 0
exit $fail
