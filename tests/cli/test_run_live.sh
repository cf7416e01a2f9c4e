#!/usr/bin/env bash
# Records reach the results file while the sweep runs, within the configured delay: a sweep of
# slow trials is watched with `attnsweep status` from another process; finished trials must show
# up long before the sweep ends, no later than trial time + flush interval + slack. Then the
# rank is sent SIGTERM (it drains, exit 99) and the sweep is resumed to completion.
set -u
bin=${ATTNSWEEP:?}
mpi=${MPIEXEC:-mpiexec}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi; }

# Each trial: n = 96 tokens in d = 24 for 3000 RK4 steps, a few tenths of a second.
cat >"$work/slow.yaml" <<'YAML'
name: slow
seed: 3
replicates: 30
sweep: {vfamily: symmetric, v_kpos: 12, mfamily: spd, m_cond: 4, d: 24, n: 96, T: 30, dt: 0.01,
        init: {kind: gauss, scale: 1}}
YAML
flush=0.5
start=$(date +%s.%N)
"$mpi" -n 1 "$bin" run "$work/slow.yaml" -o "$work/slow.h5" --flush $flush --progress 0 \
  >"$work/run.log" 2>&1 &
pid=$!

# Wait for the first records while the run is still going.
first=
for _ in $(seq 1 300); do
  sleep 0.1
  if [ -e "$work/slow.h5" ]; then
    done_now=$("$bin" status "$work/slow.h5" 2>/dev/null | sed -n 's/^trials: \([0-9]*\) \/.*/\1/p')
    if [ -n "$done_now" ] && [ "$done_now" -gt 0 ]; then
      first=$(date +%s.%N)
      break
    fi
  fi
  kill -0 $pid 2>/dev/null || break
done
check "records visible while the sweep runs" test -n "$first"
alive=0
kill -0 $pid 2>/dev/null && alive=1
check "the sweep was still running when they appeared" test $alive -eq 1
state=$("$bin" status "$work/slow.h5" 2>/dev/null | sed -n 's/^state: //p')
check "status reports a running sweep ($state)" grep -q "running" <<<"$state"
if [ -n "$first" ]; then
  wait_s=$(awk -v a="$first" -v b="$start" 'BEGIN { printf "%.2f", a - b }')
  echo "first record visible after ${wait_s} s (flush interval ${flush} s)"
  # Generous bound: start-up + one trial + the flush interval + slack for a loaded machine.
  check "first record within 20 s" awk -v w="$wait_s" 'BEGIN { exit !(w < 20) }'
fi

# As Slurm does for a job step: the signal goes to the rank, mpiexec passes its exit code on.
pkill -TERM -f "^$bin run $work/slow.yaml"
wait $pid
rc=$?
pid=
check "SIGTERM drains and exits 99 (rc $rc)" test $rc -eq 99
"$bin" status "$work/slow.h5" >"$work/status" 2>&1
check "status says stopped" grep -q "^state: stopped" "$work/status"

"$mpi" -n 2 "$bin" run "$work/slow.yaml" -o "$work/slow.h5" --resume --quiet --flush 0.5 \
  >"$work/resume.log" 2>&1
rc=$?
check "resume completes (rc $rc)" test $rc -eq 0
"$bin" status "$work/slow.h5" >"$work/status" 2>&1
check "status says complete" grep -q "^state: complete" "$work/status"
check "two segments recorded" grep -q "^segments: 2" "$work/status"
exit $fail
