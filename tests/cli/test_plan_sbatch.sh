#!/usr/bin/env bash
# attnsweep plan SPEC --sbatch: the site options reach the rendered job script, tasks are rounded
# to whole nodes, plan's suggested walltime is the script's --time, bash accepts the script, the
# size estimate counts the journals, and the script (run with a stand-in srun that records its
# arguments and environment) creates the directory of OUT.h5, as the quick start of
# docs/slurm.md needs; --ntasks covers ranks_per_trial, values with a newline are refused, the
# array's merge job has --kill-on-invalid-dep=yes, the memory request comes from the estimate;
# the template reads run's options by run's rules (a requeued `--sha 01/2` segment resumes);
# --calibrate saves its fit (SPEC.cost or --calibration FILE, with the machine) and later plans,
# --sbatch and --array included, size the walltime with it; a corrupt calibration file is
# exit 2 naming the file.
set -euo pipefail
: "${ATTNSWEEP:?set ATTNSWEEP to the attnsweep binary}"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1" >&2; fail=1; fi; }
export ATTNSWEEP_JOBS_DIR=$src/jobs
spec=$src/jobs/examples/identity.yaml

mkdir -p "$tmp/wd"
cd "$tmp/wd"
"$ATTNSWEEP" plan "$spec" --sbatch -o results/id.h5 --account acct7 --partition part7 \
  --qos qos7 --mem 3G --cpus-per-task 2 --ntasks-per-node 3 --mpi pmi2 \
  --setup 'echo setup-ran >"$SETUP_MARK"' --setup 'export AS_FROM_SETUP=yes' \
  >"$tmp/s.sbatch" 2>"$tmp/plan" && rc=0 || rc=$?
check "plan --sbatch with site options exits 0 (rc $rc: $(tail -n 1 "$tmp/plan"))" '[ $rc -eq 0 ]'
s=$tmp/s.sbatch
for opt in account=acct7 partition=part7 qos=qos7 mem=3G cpus-per-task=2 ntasks-per-node=3; do
  check "script has #SBATCH --$opt" "grep -qx -- '#SBATCH --$opt' '$s'"
done
check "bash -n accepts the script" "bash -n '$s'"
check "OPENBLAS_NUM_THREADS=1 exported" "grep -qx 'export OPENBLAS_NUM_THREADS=1' '$s'"
check "--mpi reaches the script" "grep -qx 'AS_RENDERED_MPI=pmi2' '$s'"
# Tasks: a multiple of 3 and (the default estimate of this small spec asks for less) 3 on 1 node.
ntasks=$(sed -n 's/^#SBATCH --ntasks=//p' "$s")
nodes=$(sed -n 's/^#SBATCH --nodes=//p' "$s")
check "ntasks ($ntasks) is a whole number of nodes of 3 ($nodes)" \
  '[ $((ntasks % 3)) -eq 0 ] && [ "$ntasks" -eq $((nodes * 3)) ]'
ranks=$(sed -n 's/^suggested for a .* target: \([0-9]*\) ranks\{0,1\} .*/\1/p' "$tmp/plan")
check "plan's ranks ($ranks) are the script's ($ntasks)" '[ "$ranks" = "$ntasks" ]'
# Walltime: the text's is the script's, and it includes the template's warning lead.
wall=$(sed -n 's/^suggested.* walltime \([0-9:]*\) .*/\1/p' "$tmp/plan")
time=$(sed -n 's/^#SBATCH --time=//p' "$s")
check "plan's walltime ($wall) equals the script's --time ($time)" '[ -n "$wall" ] && [ "$wall" = "$time" ]'
check "walltime covers the 300 s signal lead" '[ "$time" \> "00:05:59" ]'
out=$("$ATTNSWEEP" plan "$spec" 2>&1)
check "plan without --sbatch suggests the same walltime" \
  "grep -q 'walltime $time ' <<<\"\$out\""
# Journals: one entry per trial in the estimate (120 trials of identity.yaml).
eb=$(sed -n 's/.* journals (\([0-9]*\) bytes per trial).*/\1/p' <<<"$out")
check "estimate names the journals' size per trial ($eb)" '[ -n "$eb" ] && [ "$eb" -gt 100 ]'
# Site options are refused without --sbatch, and bad values are usage errors.
"$ATTNSWEEP" plan "$spec" --account a >/dev/null 2>&1 && rc=0 || rc=$?
check "--account without --sbatch: exit 2 ($rc)" '[ $rc -eq 2 ]'
"$ATTNSWEEP" plan "$spec" --sbatch --ntasks-per-node 0 >/dev/null 2>&1 && rc=0 || rc=$?
check "--ntasks-per-node 0: exit 2 ($rc)" '[ $rc -eq 2 ]'
"$ATTNSWEEP" plan "$spec" --sbatch --partition 'a b' >/dev/null 2>&1 && rc=0 || rc=$?
check "--partition with a blank: exit 2 ($rc)" '[ $rc -eq 2 ]'
"$ATTNSWEEP" plan "$spec" --sbatch --mpi 'pmix;x' >/dev/null 2>&1 && rc=0 || rc=$?
check "--mpi with a bad name: exit 2 ($rc)" '[ $rc -eq 2 ]'
# Default plugin: pmix in the script when --mpi is not given.
"$ATTNSWEEP" plan "$spec" --sbatch -o x.h5 >"$tmp/d.sbatch" 2>/dev/null
check "default script runs srun --mpi=pmix" \
  "grep -qx 'AS_RENDERED_MPI=' '$tmp/d.sbatch' && grep -q 'mpi=\${AS_SRUN_MPI:-\${AS_RENDERED_MPI:-pmix}}' '$tmp/d.sbatch'"

# Run the rendered script outside Slurm with a stand-in srun: it records its arguments and
# OPENBLAS_NUM_THREADS, then runs the command on one rank. results/ does not exist yet.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/srun" <<'SRUN'
#!/usr/bin/env bash
printf '%s\n' "$*" >"$SRUN_LOG"
echo "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-unset} AS_FROM_SETUP=${AS_FROM_SETUP:-unset}" >>"$SRUN_LOG"
while [ $# -gt 0 ] && [[ $1 == --* ]]; do shift; done
exec "$@"
SRUN
chmod +x "$tmp/bin/srun"
check "results/ does not exist before the job" '[ ! -e results ]'
rc=0
env -u ATTNSWEEP PATH="$tmp/bin:$PATH" SRUN_LOG="$tmp/srun.log" SETUP_MARK="$tmp/setup.mark" \
  SLURM_CPUS_PER_TASK=2 OPENBLAS_NUM_THREADS=8 bash "$s" >"$tmp/job.out" 2>&1 || rc=$?
check "the rendered script completes the sweep (rc $rc: $(tail -n 3 "$tmp/job.out"))" '[ $rc -eq 0 ]'
check "it created results/id.h5" '[ -s results/id.h5 ]'
check "the set-up hooks ran before the run" '[ -s "$tmp/setup.mark" ] && grep -q "AS_FROM_SETUP=yes" "$tmp/srun.log"'
check "srun got --mpi=pmi2 and --cpus-per-task=2 ($(head -n 1 "$tmp/srun.log"))" \
  'grep -q -- "^--mpi=pmi2 --cpus-per-task=2 " "$tmp/srun.log"'
check "the ranks saw OPENBLAS_NUM_THREADS=1" 'grep -q "OPENBLAS_NUM_THREADS=1 " "$tmp/srun.log"'
# A failing set-up command stops the job before the run, naming the command.
"$ATTNSWEEP" plan "$spec" --sbatch -o y.h5 --setup 'false' >"$tmp/f.sbatch" 2>/dev/null
rc=0
env -u ATTNSWEEP PATH="$tmp/bin:$PATH" SRUN_LOG="$tmp/srun2.log" bash "$tmp/f.sbatch" >"$tmp/f.out" 2>&1 || rc=$?
check "failing --setup: exit 2 ($rc) naming the command" \
  '[ $rc -eq 2 ] && grep -q "set-up command failed.*false" "$tmp/f.out" && [ ! -e "$tmp/srun2.log" ]'

# Issue 36 items 11 and 14, issue 34 item 2: tasks cover the largest ranks_per_trial (also in an
# array); nothing put into the script can start a line of its own; the merge job goes away with
# a failed task; the memory request comes from the plan's estimate unless --mem is given.
cat >"$tmp/g.yaml" <<'EOF2'
name: groups
seed: 1
replicates: 1
defaults: {T: 1, dt: 0.1}
sweep:
  concat:
    - {case: g, vfamily: identity, mfamily: identity, d: 2, n: 8, ranks_per_trial: [1, 16]}
EOF2
for arr in "" "--array 2"; do
  # shellcheck disable=SC2086
  "$ATTNSWEEP" plan "$tmp/g.yaml" --sbatch -o g.h5 $arr >"$tmp/g.sbatch" 2>/dev/null
  nt=$(sed -n 's/^#SBATCH --ntasks=//p' "$tmp/g.sbatch" | head -n 1)
  check "ranks_per_trial 16${arr:+ ($arr)}: --ntasks=$nt >= 16" '[ "$nt" -ge 16 ]'
done
check "array: the merge job is removed when a task fails for good (--kill-on-invalid-dep=yes)" \
  'grep -q -- "--dependency=afterok:\"\$array\" --kill-on-invalid-dep=yes" "$tmp/g.sbatch"'
check "no --mem: #SBATCH --mem-per-cpu from the estimate" \
  'grep -qE "^#SBATCH --mem-per-cpu=[0-9]+M$" "$tmp/g.sbatch" && ! grep -q "^#SBATCH --mem=" "$tmp/g.sbatch"'
check "--mem given: no --mem-per-cpu" '! grep -q "^#SBATCH --mem-per-cpu" "$tmp/s.sbatch"'
# Issue 36 item 13: the template reads run's options by run's rules (a unique prefix, --opt=V,
# -qo FILE, 01/2 = 1/2): a requeued segment of `--sha 01/2` resumes OUT.h5.shard-1-of-2
# (first segment stopped early), and --forc (= --force) is not passed again.
mkdir -p "$tmp/t13"
(
  cd "$tmp/t13" || exit 1
  env -u ATTNSWEEP PATH="$tmp/bin:$PATH" SRUN_LOG="$tmp/t13/seg1.log" \
    bash "$src/jobs/attnsweep.sbatch" --bin "$ATTNSWEEP" "$spec" --out=r.h5 --sha 01/2 \
    --time-limit 0.0001 -q >seg1.out 2>&1 && rc1=0 || rc1=$?
  echo "$rc1" >seg1.rc
  env -u ATTNSWEEP PATH="$tmp/bin:$PATH" SRUN_LOG="$tmp/t13/seg2.log" SLURM_RESTART_COUNT=1 \
    bash "$src/jobs/attnsweep.sbatch" --bin "$ATTNSWEEP" "$spec" -qo r.h5 --sha 01/2 --forc \
    >seg2.out 2>&1 && rc2=0 || rc2=$?
  echo "$rc2" >seg2.rc
) || true
check "template: segment 1 of --sha 01/2 stops early (exit $(cat "$tmp/t13/seg1.rc"))" \
  '[ "$(cat "$tmp/t13/seg1.rc")" = 99 ] && [ -e "$tmp/t13/r.h5.shard-1-of-2" ]'
check "template: the requeued segment resumes r.h5.shard-1-of-2 without --forc (exit $(cat "$tmp/t13/seg2.rc"))" \
  '[ "$(cat "$tmp/t13/seg2.rc")" = 0 ] && grep -q -- " --sha 01/2 --resume$" "$tmp/t13/seg2.log" && ! grep -q -- "--forc" "$tmp/t13/seg2.log"'

nl=$'x\nAS_MERGE_JOB\ntouch pwned\n'
for o in "-o" "--setup"; do
  if [ "$o" = -o ]; then args=(-o "$nl.h5"); else args=(-o ok.h5 --setup "true$nl"); fi
  "$ATTNSWEEP" plan "$tmp/g.yaml" --sbatch --array 2 "${args[@]}" >"$tmp/n.sbatch" 2>"$tmp/n.err" && rc=0 || rc=$?
  check "$o with a newline: exit 2 ($rc), no script" '[ $rc -eq 2 ] && [ ! -s "$tmp/n.sbatch" ]'
done
# Issue 37 item 3: the calibration is saved beside the spec and used by --sbatch and --array.
mkdir -p "$tmp/cal"
cp "$spec" "$tmp/cal/id.yaml"
(cd "$tmp/cal" && "$ATTNSWEEP" plan id.yaml --calibrate 4 >cal.out 2>&1) && rc=0 || rc=$?
check "plan --calibrate 4 exits 0 ($rc)" '[ $rc -eq 0 ]'
check "it saved id.yaml.cost with a, b and the machine" \
  'grep -q "^attnsweep-cost 1$" "$tmp/cal/id.yaml.cost" && grep -qE "^a [0-9.e+-]+$" "$tmp/cal/id.yaml.cost" && grep -qE "^b [0-9.e+-]+$" "$tmp/cal/id.yaml.cost" && grep -q "^machine $(hostname), " "$tmp/cal/id.yaml.cost"'
a_saved=$(sed -n 's/^a //p' "$tmp/cal/id.yaml.cost")
out=$(cd "$tmp/cal" && "$ATTNSWEEP" plan id.yaml 2>&1)
a_used=$(sed -n 's/^cost model: \([0-9.e+-]*\) s per unit.*/\1/p' <<<"$out")
check "a later plan reads it (a = $a_used printed to 3 digits, saved $a_saved)" \
  "grep -q 'read from id.yaml.cost' <<<\"\$out\" && awk -v u=$a_used -v s=$a_saved 'BEGIN { exit !(u > 0 && u / s > 0.995 && u / s < 1.005) }'"
# A fit 10^4 times slower than the default: the walltime of --sbatch and of --array grows.
printf 'attnsweep-cost 1\na 2e-5\nb 0\ntrials 4\nmachine slow\nspec_sha256 x\n' >"$tmp/cal/slow.cost"
for arr in "" "--array 2"; do
  # shellcheck disable=SC2086
  t0=$("$ATTNSWEEP" plan "$tmp/cal/id.yaml" --sbatch $arr --cost 2e-9,0 2>/dev/null | sed -n 's/^#SBATCH --time=//p' | head -n 1)
  # shellcheck disable=SC2086
  t1=$("$ATTNSWEEP" plan "$tmp/cal/id.yaml" --sbatch $arr --calibration "$tmp/cal/slow.cost" 2>/dev/null | sed -n 's/^#SBATCH --time=//p' | head -n 1)
  check "--sbatch $arr: the slow calibration's --time ($t1) is longer than the default's ($t0)" \
    '[ -n "$t0" ] && [ -n "$t1" ] && [[ $t1 > $t0 ]]'
done
# Corrupt files: exit 2, the file named (and the line).
printf 'attnsweep-cost 1\na banana\nb 0\n' >"$tmp/cal/bad.cost"
printf 'attnsweep-cost 1\nb 0\n' >"$tmp/cal/short.cost"
printf '\x00\x01garbage\n' >"$tmp/cal/bin.cost"
for f in bad.cost:2 short.cost bin.cost:1 missing.cost; do
  file=${f%%:*}
  out=$("$ATTNSWEEP" plan "$tmp/cal/id.yaml" --calibration "$tmp/cal/$file" 2>&1) && rc=0 || rc=$?
  check "calibration $file: exit 2 ($rc) naming it ($out)" \
    "[ $rc -eq 2 ] && grep -q '$tmp/cal/$f' <<<\"\$out\""
done
printf 'attnsweep-cost 1\na -1\nb 0\n' >"$tmp/cal/id.yaml.cost"
out=$(cd "$tmp/cal" && "$ATTNSWEEP" plan id.yaml --sbatch 2>&1 >/dev/null) && rc=0 || rc=$?
check "a corrupt id.yaml.cost beside the spec: exit 2 ($rc) naming it" \
  "[ $rc -eq 2 ] && grep -q 'id.yaml.cost:2: a (seconds per unit of work) must be a number > 0' <<<\"\$out\""
exit $fail
