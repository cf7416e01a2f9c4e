#!/usr/bin/env bash
# Fault injection, issue 21 point 1: a full disk, on 1 and 2 ranks, in a small tmpfs (skipped
# with a note where mount is not permitted; no file-size limit is used: ulimit -f also breaks
# the shared-memory files of MPI's start-up).
#   at creation   2 MiB, 50 000 trials: exit 3 within the time limit (no deadlock, no
#                 SIGSEGV), the message names the file and ENOSPC, and nothing is left in the
#                 directory (no half-made file, spec copy or lock a later run could take for
#                 results);
#   during a run  8 MiB, 512 KiB of bulk data per trial (the final attention matrix), the file
#                 system filled by dd while the sweep runs up to 300 KiB, so that it fills inside
#                 the HDF5 write of a slab: exit 3 naming the file and the slab, the records
#                 written before equal the reference's, and (space freed) --resume completes
#                 the sweep with the records and bulk data of a reference run.
# A watchdog kills a hung command: its exit code (137) fails the check.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mounts=()
cleanup_extra() { for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done; }
as_test_init faults_disk
cd "$tmp" || exit 1
mkdir small mid
if ! mount -t tmpfs -o size=2m tmpfs small 2>/dev/null; then
  echo "skip: mount of a small tmpfs not permitted here"
  exit 0
fi
mounts+=("$tmp/small")
mount -t tmpfs -o size=8m tmpfs mid && mounts+=("$tmp/mid")
cat >big.yaml <<'EOF'
name: fdisk_big
seed: 1
replicates: 50000
sweep: {vfamily: identity, mfamily: identity, d: 2, n: 4, T: 0.1, dt: 0.1,
        init: {kind: box, scale: 1}}
EOF
cat >bulk.yaml <<'EOF'
name: fdisk_bulk
seed: 2
replicates: 12
flush_interval: 0.05
output: {attention: true}
sweep: {vfamily: identity, mfamily: identity, d: 2, n: 256, T: 2, dt: 0.05,
        init: {kind: box, scale: 2}}
EOF
run_dog() { # run_dog SECONDS LOG CMD...: CMD in the background under a watchdog; sets rc
  local secs=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1 &
  job=$!
  watchdog "$secs" "$job"
  wait "$job"; rc=$?; job=
  watchdog_stop
}

for np in 1 2; do
  run_dog 60 log "$mpiexec" -n $np "$bin" run big.yaml -o small/big.h5 -q
  grep "attnsweep run:" log
  check "creation on a full disk, $np rank(s): exit 3 ($rc)" test $rc -eq 3
  check "...names the file and ENOSPC" grep -q "cannot create small/big.h5: .*No space left on device" log
  check "...nothing left behind" test -z "$(ls -A small)"
done

"$mpiexec" -n 2 "$bin" run bulk.yaml -o ref.h5 -q >log 2>&1
check "bulk reference run: exit 0" test $? -eq 0
for np in 1 2; do
  rm -f mid/*
  "$mpiexec" -n $np "$bin" run bulk.yaml -o mid/b.h5 -q --flush 0 >log 2>&1 &
  job=$!
  watchdog 90 "$job"
  # Until a first record is journaled (a journal longer than its 64-byte header).
  for _ in $(seq 1 400); do
    [ "$(cat mid/b.h5.journal.* 2>/dev/null | wc -c)" -gt $((64 * np)) ] && break
    sleep 0.05
  done
  # Leave 300 KiB: less than one 512 KiB attention slab, room for many 1 KiB journal entries,
  # so the disk fills inside the H5Dwrite of a slab.
  avail=$(df --output=avail -B1 mid | tail -n 1)
  dd if=/dev/zero of=mid/fill bs=64k count=$(((avail - 300 * 1024) / 65536)) >/dev/null 2>&1
  wait "$job"; rc=$?; job=
  watchdog_stop
  grep "attnsweep run:" log | cut -c1-200
  check "disk full during the run, $np rank(s): exit 3 ($rc)" test $rc -eq 3
  check "...the message names the file" grep -q "mid/b.h5" log
  check "...inside the HDF5 write of a slab" grep -q "cannot write final_attention of trial" log
  "$py" "$tools/compare_results.py" ref.h5 mid/b.h5 --rows-done-only >cmp 2>&1
  cat cmp
  check "...the records written before (at least one) are intact" \
    bash -c "grep -q '^identical: [1-9]' cmp"
  rm -f mid/fill
  run_dog 90 log "$mpiexec" -n $np "$bin" run bulk.yaml -o mid/b.h5 --resume -q
  check "...space freed: --resume exit 0 ($rc)" test $rc -eq 0
  check "...records and bulk data equal the reference" \
    "$py" "$tools/compare_results.py" ref.h5 mid/b.h5 --require-complete
done
exit $fail
