#!/usr/bin/env bash
# --set KEY=VALUE where `attnsweep help keys` says the key lives (issue 49 items 1 to 4, 14 and
# the YAML tags of 15; docs/spec.md "Overrides"), checked on the records of runs:
#   1. plan --sbatch and --array render the overrides into the job: the script runs the sweep
#      the plan sized (4 trials at T = 3, not the spec's 40 at T = 15), the array's shards too;
#   2. --set file=B.h5 changes the matrix file only, --set init.file=B.h5 the token file only;
#   3. --set init_scale / init_kind reach a sweep's own init: mapping (they went to defaults,
#      shadowed: no effect, exit 0);
#   4. one value per --set: 'n=6, T: 7' (two keys pasted into a flow mapping) is exit 2;
#      a --set that has no effect (shadowed by a later --set or by a key that wins over it,
#      read by no trial) is exit 2 naming the option and the place that wins;
#  14. no limit of 256 places or 4,096 bytes: 300 mappings with T, a value of 5,000 bytes; a
#      spec with a UTF-8 byte order mark or non-ASCII text takes overrides;
#  15. YAML tags (!!binary, !foo) are refused at SPEC:LINE:COL, exit 2.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
as_test_init overrides
cd "$tmp" || exit 1
export ATTNSWEEP_JOBS_DIR=$src/jobs

run1() { "$mpiexec" -n 1 "$bin" run "$@" -q >>run.log 2>&1; }
# field FILE EXPR: prints sorted distinct values of a numpy expression over the rows t.
field() {
  "$py" -c "
import h5py, numpy as np
with h5py.File('$1', 'r') as f:
    t = f['trials'][...]
    print(len(t), sorted(set(np.atleast_1d($2).tolist())))"
}

# ---- 1: the rendered job scripts carry the overrides
cp "$src/jobs/examples/readme.yaml" readme.yaml
mkdir -p bin
cat >bin/srun <<'SRUN'
#!/usr/bin/env bash
while [ $# -gt 0 ] && [[ $1 == --* ]]; do shift; done
exec "$@"
SRUN
chmod +x bin/srun
"$bin" plan readme.yaml --sbatch -o one/r.h5 --set T=3 --set replicates=2 >one.sbatch 2>plan.txt
rc=$?
check "plan --sbatch --set T=3 --set replicates=2: exit 0 ($rc), a plan of 4 trials" \
  bash -c '[ "$1" -eq 0 ] && grep -q "^4 trials = 2 replicates" plan.txt' _ "$rc"
check "the script passes both overrides to attnsweep run" \
  grep -q "^AS_RENDERED_ARGS=(.* --set 'T=3' --set 'replicates=2')$" one.sbatch
env -u ATTNSWEEP PATH="$tmp/bin:$PATH" bash one.sbatch >one.out 2>&1
rc=$?
out=$(field one/r.h5 "t['T']")
check "the job runs the planned sweep: exit 0 ($rc), 4 rows all at T = 3 ($out)" \
  bash -c '[ "$1" -eq 0 ] && [ "$2" = "4 [3.0]" ]' _ "$rc" "$out"
"$bin" plan readme.yaml --sbatch --array 2 -o arr/r.h5 --set T=3 --set replicates=2 \
  >arr.sh 2>/dev/null
# The array task: the here-document of the submit script, run as tasks 1 and 2.
sed -n "/<<'AS_ARRAY_TASK'$/,/^AS_ARRAY_TASK$/p" arr.sh | sed '1d;$d' >task.sbatch
check "--array: the task script passes the overrides and its shard" \
  grep -q "^AS_RENDERED_ARGS=(.* --set 'T=3' --set 'replicates=2' --shard " task.sbatch
for i in 1 2; do
  env -u ATTNSWEEP PATH="$tmp/bin:$PATH" SLURM_ARRAY_TASK_ID=$i bash task.sbatch >>arr.out 2>&1
done
"$bin" merge arr/r.h5 arr/r.h5.shard-1-of-2 arr/r.h5.shard-2-of-2 >>arr.out 2>&1
rc=$?
out=$(field arr/r.h5 "t['T']")
check "--array: the shards merge into the planned sweep: exit 0 ($rc), 4 rows at T = 3 ($out)" \
  bash -c '[ "$1" -eq 0 ] && [ "$2" = "4 [3.0]" ]' _ "$rc" "$out"

# ---- 2: file and init.file are two keys
"$py" -c "
import h5py, numpy as np
for name, s in (('A.h5', 1.0), ('B.h5', 2.0)):
    with h5py.File(name, 'w') as f:
        f['triples/V'] = s * np.eye(2)[None]
        f['tokens/X'] = s * np.arange(8.0).reshape(4, 2) / 8.0
"
cat >files.yaml <<'YAML'
name: files
seed: 2
output: {initial: true, matrices: true}
sweep: {vfamily: file, file: A.h5, d: 2, n: 4, T: 0.5, dt: 0.1,
        init: {kind: file, file: A.h5, dataset: X}}
YAML
# scale of V (its [0, 0]) and of the initial tokens (their largest entry) of the one row
scales() {
  "$py" -c "
import h5py
with h5py.File('$1', 'r') as f:
    print(f['bulk/V'][0], max(f['bulk/initial_tokens'][...]))"
}
rm -f run.log
run1 files.yaml -o f1.h5 --set file=B.h5
check "--set file=B.h5: V from B.h5 (2), tokens still from A.h5 (0.875): $(scales f1.h5 2>&1)" \
  test "$(scales f1.h5 2>&1)" = "2.0 0.875"
run1 files.yaml -o f2.h5 --set init.file=B.h5
check "--set init.file=B.h5: V from A.h5 (1), tokens from B.h5 (1.75): $(scales f2.h5 2>&1)" \
  test "$(scales f2.h5 2>&1)" = "1.0 1.75"

# ---- 3: init_scale and init_kind reach the sweep's own init: mapping
cat >init.yaml <<'YAML'
name: init
seed: 3
replicates: 2
defaults: {T: 0.5, dt: 0.1}
sweep:
  vfamily: identity
  d: 2
  n: 4
  init: {kind: box, scale: 5}
YAML
run1 init.yaml -o i1.h5 --set init_scale=3
out=$(field i1.h5 "t['init_scale']")
check "--set init_scale=3: every row has init_scale 3 ($out)" test "$out" = "2 [3.0]"
run1 init.yaml -o i2.h5 --set init_kind=gauss --set init.scale=2
out=$("$py" -c "
import h5py
with h5py.File('i2.h5', 'r') as f:
    e = h5py.check_enum_dtype(f['trials'].dtype['init'])
    names = {v: k for k, v in e.items()}
    t = f['trials'][...]
    print(sorted({names[v] for v in t['init']}), sorted(set(t['init_scale'].tolist())))")
check "--set init_kind=gauss --set init.scale=2: rows gauss at scale 2 ($out)" \
  test "$out" = "['gauss'] [2.0]"

# ---- 4: one value per --set; no effect is an error
cat >flow.yaml <<'YAML'
name: flow
seed: 1
defaults: {dt: 0.1}
sweep: {vfamily: identity, d: 2, n: 5, T: 1}
YAML
"$bin" validate flow.yaml --set 'n=6, T: 7' >err.txt 2>&1
rc=$?
check "--set 'n=6, T: 7': exit 2 ($rc), one YAML value" \
  bash -c '[ "$1" -eq 2 ] && grep -q -- "--set n=6, T: 7: the value must be one YAML value" err.txt' _ "$rc"
"$bin" validate flow.yaml --set 'init_scale=3, T: 7' >err.txt 2>&1
rc=$?
check "--set 'init_scale=3, T: 7' (a key the spec lacks): exit 2 ($rc)" test "$rc" -eq 2
"$bin" validate flow.yaml --set T=3 --set T=4 >err.txt 2>&1
rc=$?
check "--set T=3 --set T=4: exit 2 ($rc), the first has no effect" \
  bash -c '[ "$1" -eq 2 ] && grep -q -- "--set T=3 has no effect.*from --set T=4" err.txt' _ "$rc"
cat >shadow.yaml <<'YAML'
name: shadow
seed: 1
sweep:
  init_kind: sphere
  concat:
    - {case: a, vfamily: identity, d: 2, n: 5, T: 1, dt: 0.1, init: box}
YAML
"$bin" validate shadow.yaml --set init=gauss >err.txt 2>&1
rc=$?
check "--set init=gauss where init_kind: sphere wins: exit 2 ($rc) naming shadow.yaml:4:14" \
  bash -c '[ "$1" -eq 2 ] && grep -q "no effect.*shadow.yaml:4:14" err.txt' _ "$rc"
"$bin" validate flow.yaml --set rtol=1e-8 >err.txt 2>&1
rc=$?
check "--set rtol=1e-8 with rk4 only: exit 2 ($rc)" \
  bash -c '[ "$1" -eq 2 ] && grep -q -- "--set rtol=1e-8" err.txt' _ "$rc"
for bad in "init.nope=1|unknown key 'init.nope'" "sweep={T: 1}|the sweep's structure" \
  "T=|needs a value" "init.file=[a.h5, b.h5]|takes one value"; do
  set_arg=${bad%%|*}
  "$bin" validate flow.yaml --set "$set_arg" >err.txt 2>&1
  rc=$?
  check "--set $set_arg: exit 2 ($rc) naming the option" \
    bash -c '[ "$1" -eq 2 ] && grep -qF -- "$2" err.txt && grep -qF -- "--set $3" err.txt' _ \
    "$rc" "${bad#*|}" "$set_arg"
done

# ---- 14: no limits of 256 places or 4,096 bytes; byte order mark, UTF-8
{
  printf 'name: many\nseed: 1\nsweep:\n  concat:\n'
  for j in 1 2 3 4 5; do
    printf '    - case: g%d\n      concat:\n' "$j"
    for i in $(seq 1 60); do printf '        - {case: c%d, T: 1, dt: 0.1, n: 3}\n' "$i"; done
  done
} >many.yaml
"$bin" validate many.yaml --set T=2 >err.txt 2>&1
rc=$?
check "--set T=2 in 300 mappings: exit 0 ($rc)" test "$rc" -eq 0
run1 many.yaml -o many.h5 --set T=2
out=$(field many.h5 "t['T']")
check "... every one of the 300 rows at T = 2 ($out)" test "$out" = "300 [2.0]"
cat >long.yaml <<'YAML'
name: long
seed: 1
sweep: {vfamily: identity, d: 2, n: 3, dt: 0.1}
YAML
long=$(printf '%05000d' 3)
run1 long.yaml -o long.h5 --set "T=$long"
out=$(field long.h5 "t['T']")
check "--set T=<5,000 digits of 3>: the row at T = 3 ($out)" test "$out" = "1 [3.0]"
printf '\xef\xbb\xbf' >bom.yaml
cat flow.yaml >>bom.yaml
run1 bom.yaml -o bom.h5 --set T=3
out=$(field bom.h5 "t['T']")
check "a spec with a UTF-8 byte order mark takes --set T=3 ($out)" test "$out" = "1 [3.0]"
check "... its stored spec keeps the mark first, then the header" "$py" -c "
import h5py, sys
with h5py.File('bom.h5', 'r') as f:
    s = f['spec'][()]
sys.exit(0 if s.startswith(b'\xef\xbb\xbf# attnsweep --set T=3\n') else 1)"
sed 's/^name: flow/name: flöw  # é/' flow.yaml >utf8.yaml
run1 utf8.yaml -o utf8.h5 --set 'n=7'
out=$(field utf8.h5 "t['n']")
check "a spec with non-ASCII text takes --set n=7 ($out)" test "$out" = "1 [7]"

# ---- 15: YAML tags
cat >tags.yaml <<'YAML'
name: !foo tags
seed: 1
sweep: {vfamily: identity, d: 2, n: 5, T: 1, dt: 0.1, description_x: 1}
YAML
sed -i 's/, description_x: 1//' tags.yaml
printf 'description: !!binary aGVsbG8=\n' >>tags.yaml
"$bin" validate tags.yaml >err.txt 2>&1
rc=$?
check "tags !foo and !!binary: exit 2 ($rc) at tags.yaml:1:7 and tags.yaml:4:14" \
  bash -c '[ "$1" -eq 2 ] && grep -q "^tags.yaml:1:7: YAML tag .!foo. is not supported" err.txt &&
    grep -q "^tags.yaml:4:14: YAML tag .!!binary. is not supported" err.txt' _ "$rc"
printf 'name: !!str 12\nseed: 1\nsweep: {vfamily: identity, d: 2, n: 5, T: 1, dt: 0.1}\n' >str.yaml
"$bin" validate str.yaml >err.txt 2>&1
rc=$?
check "!!str (a string) is still read: exit 0 ($rc)" test "$rc" -eq 0

[ $fail -eq 0 ] || { tail -n 30 run.log; cat err.txt one.out arr.out 2>/dev/null | tail -n 30; }
echo "test_overrides: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
