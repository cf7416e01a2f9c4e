#!/usr/bin/env bash
# Slurm integration test: one private single-node Slurm (tests/slurm/lib.sh), three scenarios.
#   (a) `attnsweep plan SPEC --sbatch` renders a job script; submitted with sbatch from another
#       directory, without ATTNSWEEP set, it runs the sweep to completion (exit 0, 1 segment).
#   (b) jobs/attnsweep.sbatch with --time=1 --signal=B:USR1@55: Slurm's own time-limit warning
#       reaches the batch shell, the ranks drain (exit 99), the job requeues itself and finishes
#       in later segments (same job id, restart 0, 1, ...).
#   (c) scancel in the middle: the ranks drain on SIGTERM, the file closes cleanly, the job is
#       not requeued; the same sbatch command again resumes and completes the sweep.
#   (d) `plan --sbatch --array 3`: a job array of 3 shards and a merge job (afterok); task 2
#       gets a real 1 minute time limit: it drains at Slurm's warning and requeues itself, the
#       others complete at once; the merge job joins the 3 shard files into OUT.h5.
#   (e) USR1 then TERM to the batch shell (a time limit's warning, then its TERM): the script
#       passes both to the tasks, never TERM to srun (which would SIGKILL them): exit 99, the
#       segment closed, no requeue.
# Every results file is compared with a local mpiexec run of the same spec, record by record
# (tests/tools/compare_results.py: all fields but wall_time and rank, and the bulk data).
# Environment: ATTNSWEEP (the binary; ctest sets it), AS_SOURCE_DIR, AS_SLURM_TESTS="a b c"
# to run a subset, AS_SLURM_KEEP=1 to keep the Slurm directory (logs, files) for inspection.
set -uo pipefail
: "${ATTNSWEEP:?set ATTNSWEEP to the attnsweep binary}"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
here="$src/tests/slurm"
py=/usr/bin/python3
ATTNSWEEP=$(readlink -f "$ATTNSWEEP")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} OMPI_MCA_oob_tcp_if_include=lo
export HDF5_USE_FILE_LOCKING=FALSE
tests=${AS_SLURM_TESTS:-a b c d e}
t_all=$(date +%s)

# shellcheck source=tests/slurm/lib.sh
source "$here/lib.sh"
"$py" -c 'import h5py, numpy' 2>/dev/null || slurm_die "/usr/bin/python3 lacks h5py/numpy"
slurm_start
w=$AS_SLURM_DIR/work
mkdir -p "$w/elsewhere"
chmod 755 "$w"
cd "$w" || exit 1

fail=0
check() {
  if eval "$2"; then
    echo "ok: $1"
  else
    echo "FAIL: $1" >&2
    fail=1
  fi
}
# Results of `sbatch` jobs: the job's final state once it has left the queue.
wait_done() { # id timeout
  local id=$1 t=$2 start st
  start=$(date +%s)
  while :; do
    st=$(squeue -h -j "$id" -o %T 2>/dev/null || true)
    [ -z "$st" ] && break
    if [ $(($(date +%s) - start)) -ge "$t" ]; then
      echo "job $id still '$st' after $t s" >&2
      return 1
    fi
    sleep 0.5
  done
  slurm_job_field "$id" JobState
}
segments() { "$py" "$here/../tools/compare_results.py" --segments "$1"; }
# Replicates that make SPEC (written with replicates: 1) cost about $2 core-seconds, from the
# calibrated cost model of `attnsweep plan` (at least $3).
replicates_for() {
  local est
  est=$("$ATTNSWEEP" plan "$1" --calibrate=12 | sed -n 's/^estimate[^:]*: \([0-9.e+-]*\) core-hours.*/\1/p')
  "$py" -c "import math; print(max($3, math.ceil($2 / ($est * 3600))))"
}
local_run() { # spec out [ranks]
  mpiexec -n "${3:-1}" "$ATTNSWEEP" run "$1" -o "$2" -q >"$2.log" 2>&1
}
# Two cores: pin the Slurm job's ranks to core 0 and the local reference runs to core 1, so
# that a job that must outlive Slurm's time-limit check costs half the CPU time.
ncpu=$(nproc)
pin_job=() pin_ref=()
if [ "$ncpu" -ge 2 ]; then
  pin_job=(taskset -c 0) pin_ref=(taskset -c 1)
fi

# ---------------------------------------------------------------------------------------------
if [[ " $tests " == *" a "* ]]; then
  t0=$(date +%s)
  cat >"$w/a.yaml" <<'YAML'
name: slurm_a
seed: 21
replicates: 3
output: {final: true}
defaults: {n: 16, T: 8, dt: 0.1, init: {kind: box, scale: 5}}
sweep:
  concat:
    - {case: identity, vfamily: identity, mfamily: identity, d: [2, 3]}
    - {case: good, vfamily: perron, mfamily: identity, d: 3}
YAML
  "$ATTNSWEEP" plan "$w/a.yaml" --sbatch -o "$w/a.h5" >"$w/a.sbatch" 2>"$w/a.plan" && rc=0 || rc=$?
  check "(a) plan --sbatch exits 0 (rc $rc: $(tail -n 1 "$w/a.plan"))" '[ $rc -eq 0 ]'
  ntasks=$(sed -n 's/^#SBATCH --ntasks=//p' "$w/a.sbatch")
  check "(a) rendered --ntasks ($ntasks) and --time" \
    '[ "$ntasks" -ge 1 ] && grep -q "^#SBATCH --time=[0-9][0-9]:[0-9][0-9]:00$" "$w/a.sbatch"'
  check "(a) rendered paths are absolute" \
    "grep -qF \"AS_RENDERED_ARGS=('$w/a.yaml' -o '$w/a.h5')\" \"$w/a.sbatch\""
  if [ "$ntasks" -gt "$AS_SLURM_CPUS" ]; then ntasks=$AS_SLURM_CPUS; fi
  # From another directory, without ATTNSWEEP: the rendered script knows the binary.
  id=$(cd "$w/elsewhere" && env -u ATTNSWEEP sbatch --parsable -n "$ntasks" -o "$w/a.out" \
    "$w/a.sbatch") || id=
  check "(a) sbatch accepted the rendered script" '[ -n "$id" ]'
  local_run "$w/a.yaml" "$w/a_ref.h5" 1
  st=$(wait_done "$id" 120)
  check "(a) job $id COMPLETED with exit 0 (got $st $(slurm_job_field "$id" ExitCode))" \
    '[ "$st" = COMPLETED ] && [ "$(slurm_job_field "$id" ExitCode)" = 0:0 ]'
  seg=$(segments "$w/a.h5")
  check "(a) one segment: job $id, restart 0, $ntasks ranks, closed, 9 done ($seg)" \
    '[ "$(wc -l <<<"$seg")" -eq 1 ] && read -r _ j r k _ e d <<<"$seg" &&
     [ "$j" = "$id" ] && [ "$r" = 0 ] && [ "$k" = "$ntasks" ] && [ "$e" != - ] && [ "$d" = 9 ]'
  check "(a) records identical to the local run" \
    '"$py" "$here/../tools/compare_results.py" "$w/a.h5" "$w/a_ref.h5" --require-complete'
  check "(a) status: complete" '"$ATTNSWEEP" status "$w/a.h5" | grep -q "state: complete"'
  echo "(a) took $(($(date +%s) - t0)) s"
fi

# ---------------------------------------------------------------------------------------------
if [[ " $tests " == *" b "* ]]; then
  t0=$(date +%s)
  spec_b() {
    cat <<YAML
name: slurm_b
seed: 22
replicates: $1
output: {final: true}
defaults: {T: 20, dt: 0.1, settle_window: 0, init: {kind: box, scale: 5}}
sweep:
  concat:
    - {case: identity, vfamily: identity, mfamily: identity, d: [2, 3], n: [40, 80]}
    - {case: paranormal, V: [[1, 0, 0], [0, 1, 0], [0, 0, -0.5]], mfamily: identity, n: 60}
YAML
  }
  spec_b 1 >"$w/b.yaml"
  # About 50 core-seconds: longer than the 35 s after which Slurm's time-limit check (every
  # 30 s) has surely sent the warning asked for 55 s before a 1 minute limit.
  R=$(replicates_for "$w/b.yaml" 50 40)
  spec_b "$R" >"$w/b.yaml"
  printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${pin_job[*]}" "$ATTNSWEEP" >"$w/pinned.sh"
  chmod 755 "$w/pinned.sh"
  id=$(AS_MAX_SEGMENTS=8 ATTNSWEEP="$w/pinned.sh" sbatch --parsable -n 2 --time=1 \
    --signal=B:USR1@55 -o "$w/b.out" -D "$w" "$src/jobs/attnsweep.sbatch" b.yaml -o b.h5 \
    --progress 5) || id=
  check "(b) sbatch accepted jobs/attnsweep.sbatch" '[ -n "$id" ]'
  echo "(b) job $id: $((R * 5)) trials, local reference runs meanwhile"
  "${pin_ref[@]}" mpiexec -n 1 "$ATTNSWEEP" run "$w/b.yaml" -o "$w/b_ref.h5" -q >"$w/b_ref.log" 2>&1
  st=$(wait_done "$id" 400)
  restarts=$(slurm_job_field "$id" Restarts)
  check "(b) job $id COMPLETED with exit 0 after $restarts requeues (got $st $(slurm_job_field "$id" ExitCode))" \
    '[ "$st" = COMPLETED ] && [ "$(slurm_job_field "$id" ExitCode)" = 0:0 ] && [ "$restarts" -ge 1 ]'
  check "(b) the batch shell got Slurm's SIGUSR1 and requeued" \
    'grep -q "SIGUSR1 (time limit near)" "$w/b.out" && grep -q "requeueing job $id" "$w/b.out"'
  check "(b) the ranks drained: exit 99 before each requeue" \
    '[ "$(grep -c "attnsweep run exited 99" "$w/b.out")" -eq "$restarts" ]'
  seg=$(segments "$w/b.h5")
  echo "$seg" | sed 's/^/    segment /'
  nseg=$(wc -l <<<"$seg")
  segs_ok() { # one row per run: segment k, this job, restart k, 2 ranks, closed
    local k=0 s j r n e
    while read -r s j r n _ e _; do
      [ "$s" = $k ] && [ "$j" = "$id" ] && [ "$r" = $k ] && [ "$n" = 2 ] && [ "$e" != - ] || return 1
      k=$((k + 1))
    done <<<"$seg"
    [ $k -eq $((restarts + 1)) ]
  }
  check "(b) $nseg segments = requeues + 1, job $id, restart 0.., 2 ranks, all closed" segs_ok
  first=$(head -n 1 <<<"$seg" | awk '{print $7}')
  last=$(tail -n 1 <<<"$seg" | awk '{print $7}')
  check "(b) the first segment stopped early ($first of $((R * 5))), the last completed ($last)" \
    '[ "$first" -gt 0 ] && [ "$first" -lt $((R * 5)) ] && [ "$last" -eq $((R * 5)) ]'
  check "(b) records identical to the local run" '"$py" "$here/../tools/compare_results.py" "$w/b.h5" "$w/b_ref.h5" --require-complete'
  echo "(b) took $(($(date +%s) - t0)) s"
fi

# ---------------------------------------------------------------------------------------------
if [[ " $tests " == *" c "* ]]; then
  t0=$(date +%s)
  spec_c() {
    cat <<YAML
name: slurm_c
seed: 23
replicates: $1
output: {final: true}
defaults: {T: 20, dt: 0.1, settle_window: 0, init: {kind: box, scale: 5}}
sweep:
  concat:
    - {case: identity, vfamily: identity, mfamily: spd, m_cond: 4, d: [2, 3], n: 50}
    - {case: good, vfamily: good, v_lambda: 1, v_gap: 0.5, mfamily: identity, d: 3, n: 50}
YAML
  }
  spec_c 1 >"$w/c.yaml"
  R=$(replicates_for "$w/c.yaml" 16 20)
  spec_c "$R" >"$w/c.yaml"
  N=$((R * 3))
  submit_c() {
    sbatch --parsable -n 2 -o "$w/c.out" -D "$w" "$src/jobs/attnsweep.sbatch" --bin "$ATTNSWEEP" \
      c.yaml -o c.h5 --progress 2
  }
  id=$(submit_c) || id=
  check "(c) first job submitted" '[ -n "$id" ]'
  # Cancel once some trials are in the file (records reach it within flush_interval = 10 s).
  done_c=0
  for ((i = 0; i < 150; i++)); do
    done_c=$("$ATTNSWEEP" status "$w/c.h5" 2>/dev/null | sed -n 's/^trials: \([0-9]*\) \/.*/\1/p')
    [ "${done_c:-0}" -gt 0 ] && break
    sleep 0.2
  done
  scancel "$id"
  st=$(wait_done "$id" 60)
  check "(c) job $id CANCELLED after $done_c trials were written (got $st)" '[ "$st" = CANCELLED ]'
  check "(c) not requeued (Restarts=$(slurm_job_field "$id" Restarts))" \
    '[ "$(slurm_job_field "$id" Restarts)" = 0 ] && grep -q "no requeue" "$w/c.out"'
  seg=$(segments "$w/c.h5")
  check "(c) the cancelled segment closed cleanly with some trials done ($seg)" \
    'read -r _ j _ _ _ e d <<<"$seg" && [ "$j" = "$id" ] && [ "$e" != - ] && [ "$d" -gt 0 ] && [ "$d" -lt $N ]'
  id2=$(submit_c) || id2=
  "${pin_ref[@]}" mpiexec -n 1 "$ATTNSWEEP" run "$w/c.yaml" -o "$w/c_ref.h5" -q >"$w/c_ref.log" 2>&1
  st=$(wait_done "$id2" 200)
  check "(c) resubmitted job $id2 COMPLETED with exit 0 (got $st)" \
    '[ "$st" = COMPLETED ] && [ "$(slurm_job_field "$id2" ExitCode)" = 0:0 ]'
  check "(c) it resumed: --resume on its command line" 'grep -q "c.h5 --progress 2 --resume" "$w/c.out"'
  seg=$(segments "$w/c.h5")
  echo "$seg" | sed 's/^/    segment /'
  check "(c) two segments: job $id, then job $id2 complete" \
    '[ "$(wc -l <<<"$seg")" -eq 2 ] && [ "$(sed -n 2p <<<"$seg" | awk "{print \$2, \$7}")" = "$id2 $N" ]'
  check "(c) records identical to the local run" '"$py" "$here/../tools/compare_results.py" "$w/c.h5" "$w/c_ref.h5" --require-complete'
  echo "(c) took $(($(date +%s) - t0)) s"
fi

# ---------------------------------------------------------------------------------------------
if [[ " $tests " == *" d "* ]]; then
  t0=$(date +%s)
  spec_d() {
    cat <<YAML
name: slurm_d
seed: 24
replicates: $1
output: {final: true}
defaults: {T: 20, dt: 0.1, settle_window: 0, init: {kind: box, scale: 5}}
sweep:
  concat:
    - {case: identity, vfamily: identity, mfamily: identity, d: [2, 3], n: [40, 80]}
    - {case: good, vfamily: good, v_lambda: 1, v_gap: 0.5, mfamily: identity, d: 3, n: 60}
YAML
  }
  spec_d 1 >"$w/d.yaml"
  # About 90 core-seconds (the calibrated model overestimates: about 65 measured): a shard is
  # a third, and two tasks share core 0, so task 2 runs about 45 s, past the 32 s by which
  # Slurm's time-limit warning (58 s before 1 minute, checked every 30 s) has come.
  R=$(replicates_for "$w/d.yaml" 90 45)
  spec_d "$R" >"$w/d.yaml"
  N=$((R * 5))
  printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${pin_job[*]}" "$ATTNSWEEP" >"$w/pinned.sh"
  chmod 755 "$w/pinned.sh"
  "$ATTNSWEEP" plan "$w/d.yaml" --sbatch --array 3 -o "$w/d.h5" >"$w/d_submit.sh" 2>"$w/d.plan" &&
    rc=0 || rc=$?
  check "(d) plan --sbatch --array 3 exits 0 (rc $rc: $(tail -n 1 "$w/d.plan"))" '[ $rc -eq 0 ]'
  # Held, so that task 2 gets its 1 minute limit before anything starts.
  sub=$(cd "$w/elsewhere" && AS_MAX_SEGMENTS=8 ATTNSWEEP="$w/pinned.sh" bash "$w/d_submit.sh" \
    --hold -n 1 --signal=B:USR1@58 -D "$w" 2>&1) || true
  arr=$(sed -n 's/.*job array \([0-9]*\) .*/\1/p' <<<"$sub")
  mrg=$(sed -n 's/.* merge job \([0-9]*\) .*/\1/p' <<<"$sub")
  check "(d) the submit script submitted the array and the merge job ($sub)" \
    '[ -n "$arr" ] && [ -n "$mrg" ]'
  scontrol update JobId="${arr}_2" TimeLimit=1 || echo "(d) scontrol update of ${arr}_2 failed" >&2
  scontrol release "$arr" 2>/dev/null
  scontrol release "${arr}_2" 2>/dev/null
  echo "(d) array $arr: $N trials in 3 shards, merge job $mrg; local reference runs meanwhile"
  "${pin_ref[@]}" mpiexec -n 1 "$ATTNSWEEP" run "$w/d.yaml" -o "$w/d_ref.h5" -q >"$w/d_ref.log" 2>&1
  st=$(wait_done "$mrg" 500)
  check "(d) merge job $mrg COMPLETED with exit 0 (got $st $(slurm_job_field "$mrg" ExitCode))" \
    '[ "$st" = COMPLETED ] && [ "$(slurm_job_field "$mrg" ExitCode)" = 0:0 ]'
  for i in 1 2 3; do
    tst=$(slurm_job_field "${arr}_$i" JobState) trs=$(slurm_job_field "${arr}_$i" Restarts)
    if [ "$i" = 2 ]; then
      check "(d) task 2 COMPLETED after $trs requeues (got $tst)" '[ "$tst" = COMPLETED ] && [ "${trs:-0}" -ge 1 ]'
    else
      check "(d) task $i COMPLETED without requeue (got $tst, $trs requeues)" '[ "$tst" = COMPLETED ] && [ "$trs" = 0 ]'
    fi
  done
  out2="$w/attnsweep-${arr}_2.out"
  check "(d) task 2 got Slurm's SIGUSR1, drained (exit 99) and requeued itself" \
    'grep -q "SIGUSR1 (time limit near)" "$out2" && grep -q "attnsweep run exited 99" "$out2" &&
     grep -q "requeueing job" "$out2" && grep -q -- "--shard 2/3" "$out2"'
  seg=$(segments "$w/d.h5.shard-2-of-3")
  echo "$seg" | sed 's/^/    shard 2 segment /'
  check "(d) shard 2 has a segment per run of task 2, the first stopped early" \
    '[ "$(wc -l <<<"$seg")" -ge 2 ] && [ "$(head -n 1 <<<"$seg" | awk "{print \$3}")" = 0 ]'
  check "(d) merged file identical to the local run" \
    '"$py" "$here/../tools/compare_results.py" "$w/d.h5" "$w/d_ref.h5" --require-complete'
  check "(d) status of the merged file: complete" '"$ATTNSWEEP" status "$w/d.h5" | grep -q "state: complete"'
  echo "(d) took $(($(date +%s) - t0)) s"
fi

# ---------------------------------------------------------------------------------------------
if [[ " $tests " == *" e "* ]]; then
  t0=$(date +%s)
  cat >"$w/e.yaml" <<'YAML'
name: slurm_e
seed: 25
replicates: 400
flush_interval: 0.2
sweep: {vfamily: identity, mfamily: identity, d: [2, 3], n: 16, T: 30, dt: 0.01,
        init: {kind: box, scale: 2}}
YAML
  id=$(sbatch --parsable -n 2 -o "$w/e.out" -D "$w" "$src/jobs/attnsweep.sbatch" --bin "$ATTNSWEEP" \
    e.yaml -o e.h5 --progress 0) || id=
  check "(e) job submitted" '[ -n "$id" ]'
  # USR1 then TERM to the batch shell, as at a time limit, once trials reach the file (the
  # ranks' handlers are installed by then).
  done_e=0
  for ((i = 0; i < 150; i++)); do
    done_e=$("$ATTNSWEEP" status "$w/e.h5" 2>/dev/null | sed -n 's/^trials: \([0-9]*\) \/.*/\1/p')
    [ "${done_e:-0}" -gt 0 ] && break
    sleep 0.2
  done
  # At once: the TERM reaches the script before the ranks have drained (a TERM to srun itself
  # would SIGKILL them now).
  scancel --batch --signal=USR1 "$id"
  scancel --batch --signal=TERM "$id"
  st=$(wait_done "$id" 60)
  ec=$(slurm_job_field "$id" ExitCode)
  check "(e) USR1 then TERM: the ranks drained, exit 99, not requeued ($st $ec)" \
    '[ "$ec" = 99:0 ] && grep -q "attnsweep run exited 99" "$w/e.out" && grep -q "no requeue" "$w/e.out"'
  check "(e) the segment closed cleanly: no rank was killed" \
    '"$py" "$here/../tools/compare_results.py" --complete --closed "$w/e.h5"'
  echo "(e) took $(($(date +%s) - t0)) s"
fi

echo "test_slurm: $([ $fail -eq 0 ] && echo ok || echo FAILED) in $(($(date +%s) - t_all)) s (scenarios: $tests)"
exit $fail
