#!/usr/bin/env bash
# Exit codes through the launchers (issue 34 point 5; the table in docs/slurm.md "Exit codes
# through the launchers"). attnsweep's own code of each failure case reaches the shell
# unchanged through `mpiexec -n 2`: 0 complete, 2 bad spec, 2 an output that exists, 3 an
# output that cannot be created, 4 complete with failed trials, 70 an internal error (the test
# hook), 99 stopped by --time-limit; SIGUSR1 to mpiexec drains (99). jobs/attnsweep.sbatch run
# outside Slurm, with `srun` a stub that runs the binary on one rank, maps them as its header
# says: 0, 2, 4, 70 passed on, 99 for a time-limit stop ("nothing to requeue") and for SIGTERM
# to the batch shell (forwarded to the step, which drains; not requeued). SIGINT or SIGTERM to
# mpiexec itself gives Open MPI's own 1 (docs/robustness.md); that case is tested, with 1 or 99
# accepted, by test_signals.sh.
set -u
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cli/lib.sh
. "$src/tests/cli/lib.sh"
as_test_init exit_codes
cd "$tmp" || exit 1
T="timeout -k 5 120"
printf 'name: ok\nsweep: {d: 2, n: 4, T: 1}\nreplicates: 2\n' >ok.yaml
printf 'name: bad\nsweep: {d: 2, n: 4, T: -1}\n' >bad.yaml
cat >fail.yaml <<YAML
name: fail
sweep:
  concat:
    - {case: missing, vfamily: file, mfamily: identity, file: $tmp/none.h5, d: 2, n: 5, T: 1}
    - {case: plain, d: 2, n: 4, T: 1}
YAML
# Long enough that a 0.3 s limit or a signal after the first rows always stops it.
printf 'name: long\nsweep: {d: [2, 3], n: [40, 80], T: 50}\nreplicates: 400\n' >long.yaml

code() { # code CMD...: the exit status
  "$@" >/dev/null 2>&1
  echo $?
}
for launcher in direct mpiexec; do
  L=()
  [ $launcher = mpiexec ] && L=("$mpiexec" -n 2)
  k=$launcher
  check "$k: complete: 0" test "$(code $T "${L[@]}" "$bin" run ok.yaml -o "$k-ok.h5")" -eq 0
  check "$k: bad spec: 2" test "$(code $T "${L[@]}" "$bin" run bad.yaml -o "$k-bad.h5")" -eq 2
  check "$k: output exists: 2" test "$(code $T "${L[@]}" "$bin" run ok.yaml -o "$k-ok.h5")" -eq 2
  check "$k: output not creatable: 3" \
    test "$(code $T "${L[@]}" "$bin" run ok.yaml -o "/proc/$k.h5")" -eq 3
  check "$k: failed trials: 4" test "$(code $T "${L[@]}" "$bin" run fail.yaml -o "$k-fail.h5")" -eq 4
  if [ $launcher = mpiexec ]; then
    c=$(code $T "$mpiexec" -x ATTNSWEEP_TEST_INTERNAL_ERROR=1 -n 2 "$bin" run ok.yaml -o "$k-int.h5")
  else
    c=$(ATTNSWEEP_TEST_INTERNAL_ERROR=1 code $T "$bin" run ok.yaml -o "$k-int.h5")
  fi
  check "$k: internal error: 70 ($c)" test "$c" -eq 70
  c=$(code $T "${L[@]}" "$bin" run long.yaml -o "$k-long.h5" --time-limit 0.3)
  check "$k: --time-limit stop: 99 ($c)" test "$c" -eq 99
done

# SIGUSR1 to mpiexec: forwarded to the ranks, which drain: 99, and the file resumable.
"$mpiexec" -n 2 "$bin" run long.yaml -o usr1.h5 -q >/dev/null 2>&1 &
p=$!
job=$p
for _ in $(seq 600); do
  "$bin" status usr1.h5 2>/dev/null | grep -Eq '^trials: [1-9]' && break
  sleep 0.1
done
kill -USR1 $p
wait $p
c=$?
job=
check "SIGUSR1 to mpiexec: 99 ($c)" test $c -eq 99
"$bin" status usr1.h5 --json >/dev/null 2>&1
c=$?
check "and status --json says incomplete (exit 1, got $c)" test $c -eq 1

# jobs/attnsweep.sbatch outside Slurm, srun a stub: the script's own mapping.
mkdir -p stub
cat >stub/srun <<'SH'
#!/bin/bash
while [ "${1#--}" != "$1" ]; do shift; done # srun's own options (--mpi=..., --cpus-per-task)
exec "$@"
SH
chmod +x stub/srun
sb() { # sb ARGS...: the script's exit status
  env -u SLURM_JOB_ID PATH="$tmp/stub:$PATH" ATTNSWEEP="$bin" $T bash "$src/jobs/attnsweep.sbatch" \
    "$@" >>sbatch.log 2>&1
  echo $?
}
check "sbatch script: complete: 0" test "$(sb ok.yaml -o sb-ok.h5)" -eq 0
check "sbatch script: bad spec: 2" test "$(sb bad.yaml -o sb-bad.h5)" -eq 2
check "sbatch script: failed trials: 4, not requeued" test "$(sb fail.yaml -o sb-fail.h5)" -eq 4
c=$(ATTNSWEEP_TEST_INTERNAL_ERROR=1 sb ok.yaml -o sb-int.h5)
check "sbatch script: internal error: 70 ($c)" test "$c" -eq 70
c=$(sb long.yaml -o sb-long.h5 --time-limit 0.3)
check "sbatch script: time-limit stop outside Slurm: 99 ($c)" \
  bash -c "[ $c -eq 99 ] && grep -q 'not inside a Slurm job: nothing to requeue' sbatch.log"
env -u SLURM_JOB_ID PATH="$tmp/stub:$PATH" ATTNSWEEP="$bin" bash "$src/jobs/attnsweep.sbatch" \
  long.yaml -o sb-term.h5 -q >>sbatch.log 2>&1 &
p=$!
job=$p
for _ in $(seq 600); do
  "$bin" status sb-term.h5 2>/dev/null | grep -Eq '^trials: [1-9]' && break
  sleep 0.1
done
kill -TERM $p
wait $p
c=$?
job=
check "sbatch script: SIGTERM drains the step, no requeue: 99 ($c)" \
  bash -c "[ $c -eq 99 ] && grep -q 'stopped by SIGTERM/SIGINT: resumable' sbatch.log"
exit $fail
