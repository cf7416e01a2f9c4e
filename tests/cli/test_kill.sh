#!/usr/bin/env bash
# Hard kills (issue 8, part 2): SIGKILL one rank, and separately the whole job, at random
# moments; then `attnsweep repair`, then `run --resume`; the file must equal an uninterrupted
# run record for record (wall_time and rank aside), and the resume must compute exactly the
# trials that were not journaled (the only ones computed twice are those in flight or not yet
# flushed to the journal when the kill came). Also:
#   * a file damaged after the kill (truncated: what a kill in the middle of HDF5 metadata
#     writes leaves) is rebuilt from OUT.h5.spec and the journals;
#   * the same with bulk data (final tokens): journaled trials whose bulk data went down with
#     the old file are recomputed, and the bulk data equal the reference too;
#   * a real damaged file: SIGKILL while the results file of a large sweep is being created
#     leaves a file without a superblock; repair rebuilds it;
#   * `attnsweep reproduce` of a restored trial says identical.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init kill

# h5check complete FILE           every row pending or whole
# h5check same REF FILE [bulk]    FILE complete, every row and bulk slab equal to REF's
h5check() {
  case $1 in
  complete) "$py" "$tools/compare_results.py" --complete "$2" ;;
  same) "$py" "$tools/compare_results.py" --complete "$3" &&
    "$py" "$tools/compare_results.py" "$2" "$3" --require-complete ;;
  *) return 2 ;;
  esac
}

write_spec() { # write_spec FILE [output line]
  cat >"$1" <<EOF
name: kill
seed: 5
replicates: 12
flush_interval: 0.2
${2:-}
sweep:
  concat:
    - {case: id, vfamily: identity, mfamily: identity, d: [2, 3], n: 40, T: 240, dt: 0.02,
       init: {kind: box, scale: 5}}
    - {case: cx, vfamily: complex, mfamily: identity, d: 3, n: 32, T: 160, dt: 0.02,
       init: {kind: gauss, scale: 2}}
EOF
}
write_spec "$tmp/sweep.yaml"
write_spec "$tmp/bulk.yaml" "output: {final: true}"
total=36
"$mpiexec" -n 2 "$bin" run "$tmp/sweep.yaml" -o "$tmp/ref.h5" -q >"$tmp/ref.log" 2>&1
check "reference run: exit 0" test $? -eq 0
"$mpiexec" -n 2 "$bin" run "$tmp/bulk.yaml" -o "$tmp/refb.h5" -q >"$tmp/refb.log" 2>&1
check "reference run with bulk data: exit 0" test $? -eq 0

summary=()
# scenario NAME WHAT(one|all) DAMAGE(none|truncate) SPEC REF [bulk]
scenario() {
  local name=$1 what=$2 damage=$3 spec=$4 ref=$5 bulk=${6:-}
  local out="$tmp/$name.h5" np=$((2 + RANDOM % 2))
  local delay; delay=$(printf '0.%02d' $((5 + RANDOM % 60)))
  # A damaged file should have journaled records to restore: kill later.
  [ "$damage" = truncate ] && delay=$(printf '0.%02d' $((35 + RANDOM % 30)))
  # On a loaded machine the sweep may complete and close (journals, spec copy removed after a
  # verified close) before the kill lands: try again with a shorter delay, twice at most; if it
  # is still too late, nothing is journaled and every row must be done.
  local early=0 victim attempt
  for attempt in 1 2 3; do
    rm -f "$out" "$out".*
    "$mpiexec" -n "$np" "$bin" run "$spec" -o "$out" -q >"$tmp/run.log" 2>&1 &
    job=$!
    if ! wait_running "$job" "$out"; then
      wait "$job"; job=
      if [ $attempt -lt 3 ] && grep -q "^state: complete" <("$bin" status "$out" 2>&1); then
        continue # it completed before the running state was even seen
      fi
      echo "FAIL: $name: the run never reached the running state"; cat "$tmp/run.log"; fail=1
      return
    fi
    sleep "$delay"
    local ranks=($(pgrep -P "$job"))
    if [ ${#ranks[@]} -eq 0 ]; then # the job has ended by itself: nothing to kill
      victim="nobody (the job had ended)"
    elif [ "$what" = one ]; then
      local r=$((RANDOM % ${#ranks[@]}))
      victim="rank $r of $np"
      kill -KILL "${ranks[$r]}"
    else
      victim="the whole job ($np ranks)"
      kill -KILL "$job" "${ranks[@]}"
    fi
    wait "$job" 2>/dev/null; job=
    sleep 0.2 # let mpiexec's teardown of the other ranks finish (one-rank case)
    early=0
    "$bin" status "$out" 2>/dev/null | grep -q "^state: complete" && early=1
    [ $early = 0 ] && break
    echo "note: $name: attempt $attempt: the sweep completed before the kill after ${delay}s"
    delay=$(printf '0.%02d' $((10#${delay#0.} / 2)))
  done
  local in_file
  in_file=$("$py" -c "import h5py; print(int((h5py.File('$out','r')['trials']['outcome'][:] != 0).sum()))" 2>/dev/null || echo unreadable)
  if [ "$damage" = truncate ] && [ $early = 0 ]; then
    truncate -s $(($(stat -c %s "$out") / 2)) "$out"
    in_file="unreadable (truncated)"
  fi
  local rep; rep=$("$bin" repair "$out" 2>&1); local rc=$?
  echo "$rep"
  check "$name: repair after SIGKILL of $victim after ${delay}s: exit 0" test $rc -eq 0
  local journaled restored done lost
  journaled=$(sed -n 's/.* for \([0-9]*\) distinct trials.*/\1/p' <<<"$rep")
  done=$(sed -n 's/^trials: \([0-9]*\) \/ .*/\1/p' <<<"$rep")
  lost=$(sed -n 's/^bulk data lost with the old file: \([0-9]*\) .*/\1/p' <<<"$rep")
  lost=${lost:-0}
  if [ $early = 1 ]; then
    echo "note: $name: the sweep completed before the kill landed"
    check "$name: completed before the kill: every row done ($done = $total)" \
      test -n "$done" -a "$done" = "$total"
    victim="$victim (too late: the sweep had completed)"
  else
    check "$name: after repair the rows done are the journaled trials ($done = $journaled - $lost)" \
      test -n "$done" -a "$done" = "$((journaled - lost))"
  fi
  if [ "$damage" = truncate ] && [ $early = 0 ]; then
    check "$name: the damaged file was rebuilt" grep -q "rebuilt from its spec copy" <<<"$rep"
    check "$name: the damaged file was kept" test -e "$out.damaged"
  fi
  check "$name: repaired file opens, records complete" h5check complete "$out"
  np=$((1 + RANDOM % 3))
  local res; res=$("$mpiexec" -n "$np" "$bin" run "$spec" -o "$out" --resume --progress 0 2>&1)
  rc=$?
  local ran; ran=$(sed -n 's/^attnsweep run: \([0-9]*\) trials run.*/\1/p' <<<"$res")
  check "$name: resume on $np rank(s): exit 0 ($rc)" test $rc -eq 0
  check "$name: resume computed exactly the unjournaled trials ($ran = $total - $done)" \
    test -n "$ran" -a "$ran" = "$((total - done))"
  check "$name: records identical to the uninterrupted run" h5check same "$ref" "$out" $bulk
  summary+=("$name: SIGKILL $victim after ${delay}s: rows in the file $in_file, journaled $journaled, recomputed $((total - done)) (not journaled: in flight or unflushed$([ "$lost" != 0 ] && echo "; $lost more whose bulk data were in the damaged file")), lost after repair+resume: nothing")
}

scenario one1 one none "$tmp/sweep.yaml" "$tmp/ref.h5"
scenario one2 one none "$tmp/sweep.yaml" "$tmp/ref.h5"
scenario all1 all none "$tmp/sweep.yaml" "$tmp/ref.h5"
scenario all2 all none "$tmp/sweep.yaml" "$tmp/ref.h5"
scenario dmg1 all truncate "$tmp/sweep.yaml" "$tmp/ref.h5"
scenario dmgb one truncate "$tmp/bulk.yaml" "$tmp/refb.h5" bulk

# reproduce: a trial of a rebuilt and resumed file reruns bit for bit.
out=$("$bin" reproduce "$tmp/dmg1.h5" 7 2>&1); rc=$?
echo "$out"
check "reproduce of a trial of a rebuilt file: exit 0" test $rc -eq 0
check "reproduce says identical" grep -q "^identical" <<<"$out"
out=$("$mpiexec" -n 2 "$bin" reproduce "$tmp/dmgb.h5" 30 2>&1); rc=$?
check "reproduce with bulk data on 2 ranks: identical, bulk compared ($rc)" \
  grep -q "^identical: .*and the bulk data" <<<"$out"

# A real damaged file: SIGKILL while a large results file is being created (its superblock
# is written by the final flush of the creation).
cat >"$tmp/big.yaml" <<'EOF'
name: big
seed: 3
replicates: 30000
sweep: {vfamily: identity, mfamily: identity, d: 2, n: 4, T: 0.1, dt: 0.1}
EOF
"$mpiexec" -n 1 "$bin" run "$tmp/big.yaml" -o "$tmp/big.h5" -q >/dev/null 2>&1 &
job=$!
for _ in $(seq 1 3000); do [ -e "$tmp/big.h5" ] && break; sleep 0.002; done
kill -KILL "$job" $(pgrep -P "$job") 2>/dev/null
wait "$job" 2>/dev/null; job=
if "$bin" status "$tmp/big.h5" >/dev/null 2>&1; then
  echo "note: the kill came after the creation finished; the file is readable (merge path)"
  real="readable"
else
  real="unreadable"
fi
rep=$("$bin" repair "$tmp/big.h5" 2>&1); rc=$?
echo "$rep"
check "real damage ($real after SIGKILL during creation): repair exit 0" test $rc -eq 0
[ "$real" = unreadable ] && check "real damage: rebuilt" grep -q "rebuilt from its spec copy" <<<"$rep"
# On a slow machine the creation may finish and some trials run before the kill lands.
check "real damage: the repaired file reads, 30000 rows" \
  grep -Eq "trials: [0-9]+ / 30000 done" <("$bin" status "$tmp/big.h5" 2>&1)
summary+=("big: SIGKILL during creation: file $real; repair $([ "$real" = unreadable ] && echo rebuilt || echo merged) it; lost: nothing")
rm -f "$tmp"/big.h5*

echo "fault injections (SIGKILL):"
for s in "${summary[@]}"; do echo "  $s"; done
exit $fail
