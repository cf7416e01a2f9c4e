#!/usr/bin/env bash
# Signals drain a sweep (issue 8, part 1): 20 signals at random moments over small sweeps on
# 1 to 3 ranks, SIGTERM / SIGUSR1 / SIGINT mixed, sent to one rank process or to mpiexec.
# Four chains of five: run, signal, check, resume (another random rank count), signal, ...,
# then a last resume without a signal; the final file must equal an uninterrupted reference
# run record for record (wall_time and rank aside).
#
# What is asserted after each signal:
#   * the results file opens, every row is either pending or a whole record (row index =
#     trial field, outcome and verdict real values, d and n set), and the last segment has an
#     end time: the file was closed cleanly, nothing was killed mid-write;
#   * nobody holds the run lock any more;
#   * exit status: a signal to a rank, or SIGUSR1 to mpiexec (forwarded as such), gives exit
#     99 (0 when the sweep had already finished: then the file must be complete). SIGTERM or
#     SIGINT to mpiexec: Open MPI forwards SIGTERM to the ranks, which drain and exit 99, and
#     mpiexec itself then exits 1 (docs/scheduling.md), so 1 or 99 (or 0 as above) is
#     accepted there; the clean close above is what shows that the ranks drained.
# The test fails if fewer than 12 of the 20 signals landed while trials were still running
# (they would then test nothing). The sweep takes a few seconds on 2 ranks so that they land:
# its 384 trials take about a second on 2 ranks once the run holds its lock, so that a run
# resumed after two or three signals still has work when the next one comes (with 192, a
# faster start left 11 of 20 landed in one CI run).
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init signals

# h5check complete FILE         every row pending or whole; last segment closed
# h5check same REF FILE         FILE complete and every row equal to REF's (timing aside)
h5check() {
  case $1 in
  complete) "$py" "$tools/compare_results.py" --complete "$2" --closed ;;
  same) "$py" "$tools/compare_results.py" --complete "$3" --closed &&
    "$py" "$tools/compare_results.py" "$2" "$3" --require-complete ;;
  *) return 2 ;;
  esac
}

cat >"$tmp/sweep.yaml" <<'EOF'
name: signals
seed: 11
replicates: 96
flush_interval: 0.2
sweep:
  concat:
    - {case: id, vfamily: identity, mfamily: identity, d: [2, 3], n: 40, T: 60, dt: 0.02,
       init: {kind: box, scale: 5}}
    - {case: cx, vfamily: complex, mfamily: identity, d: 3, n: 32, T: 40, dt: 0.02,
       init: {kind: gauss, scale: 2}}
    - {case: good, vfamily: perron, mfamily: spd, m_cond: 3, d: 3, n: 24, T: 20, dt: 0.02}
EOF

"$mpiexec" -n 2 "$bin" run "$tmp/sweep.yaml" -o "$tmp/ref.h5" -q >"$tmp/ref.log" 2>&1
check "reference run: exit 0" test $? -eq 0
check "reference run: complete" h5check complete "$tmp/ref.h5"

signals=(TERM USR1 INT)
landed=0
n_sig=0
for chain in 1 2 3 4; do
  out="$tmp/c$chain.h5"
  resume=""
  for k in 1 2 3 4 5; do
    n_sig=$((n_sig + 1))
    np=$((1 + RANDOM % 3))
    sig=${signals[$((RANDOM % 3))]}
    delay=$(printf '0.%02d' $((5 + RANDOM % 30)))
    "$mpiexec" -n "$np" "$bin" run "$tmp/sweep.yaml" -o "$out" $resume -q \
      >"$tmp/run.log" 2>&1 &
    job=$!
    if ! wait_running "$job" "$out"; then
      wait "$job"; rc=$?; job=
      # Only acceptable if the sweep was already (or quickly) complete.
      check "signal $n_sig: not sent, the run finished first (exit $rc) with a complete file" \
        test $rc -eq 0 -a -n "$("$bin" status "$out" | grep "state: complete")"
      resume=--resume; continue
    fi
    sleep "$delay"
    # Target: mpiexec, or one of its rank processes.
    ranks=($(pgrep -P "$job"))
    if [ $((RANDOM % 2)) -eq 0 ] || [ ${#ranks[@]} -eq 0 ]; then
      target=mpiexec; pid=$job
    else
      r=$((RANDOM % ${#ranks[@]})); target="rank $r"; pid=${ranks[$r]}
    fi
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$job"; rc=$?; job=
    what="signal $n_sig: SIG$sig to $target of $np rank(s) after ${delay}s"
    if [ "$target" = mpiexec ] && [ "$sig" != USR1 ]; then
      check "$what: exit 0, 1 or 99 (got $rc)" test $rc -eq 0 -o $rc -eq 1 -o $rc -eq 99
    else
      check "$what: exit 0 or 99 (got $rc)" test $rc -eq 0 -o $rc -eq 99
    fi
    [ $rc -ne 0 ] && landed=$((landed + 1))
    check "$what: the file opens and every record in it is complete" h5check complete "$out"
    check "$what: the run lock is free" bash -c "! '$bin' status '$out' | grep -q 'state: running'"
    if [ $rc -eq 0 ]; then
      check "$what: finished before the signal, so complete" \
        grep -q "state: complete" <("$bin" status "$out")
    fi
    [ $fail -ne 0 ] && [ -z "${shown:-}" ] && { cat "$tmp/run.log"; shown=1; }
    resume=--resume
  done
  np=$((1 + RANDOM % 3))
  "$mpiexec" -n "$np" "$bin" run "$tmp/sweep.yaml" -o "$out" --resume -q >"$tmp/run.log" 2>&1
  rc=$?
  check "chain $chain: final resume on $np rank(s) completes (exit $rc)" test $rc -eq 0
  check "chain $chain: records identical to the uninterrupted run" h5check same "$tmp/ref.h5" "$out"
done
echo "fault injections: $n_sig signals, $landed landed while trials were running; lost: nothing"
check "at least 12 of the 20 signals stopped a running sweep ($landed)" test "$landed" -ge 12
exit $fail
