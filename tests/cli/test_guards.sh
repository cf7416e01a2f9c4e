#!/usr/bin/env bash
# Guards (issue 8, parts 3 and 4) and `attnsweep reproduce`:
#   * resume with a changed spec (SHA-256 differs) is refused, exit 2, clear message, file
#     untouched; --allow-spec-change accepts it;
#   * resume with another rank count (1 -> 3, 3 -> 1) gives the reference records;
#   * a second run on a file that a run is writing is refused, exit 3, naming the holder
#     (with --force it would otherwise have replaced the file; with --resume, and repair);
#     the first run goes on undisturbed (then it is stopped with SIGUSR1, exit 99);
#   * an unwritable directory: a path through a regular file (ENOTDIR: works for root, who
#     ignores permission bits, so chmod 555 would prove nothing) and, where mount is allowed,
#     a read-only tmpfs: exit 3 with the path named;
#   * a full disk: a small tmpfs (where mount is allowed) filled up while the sweep runs:
#     exit 3 naming ENOSPC, and the records written before stay intact (each equals the
#     reference's); once space is freed, --resume completes the sweep with the reference
#     records;
#   * reproduce: identical -> 0; a tampered row (its checksum rewritten) -> 1 naming the
#     fields; pending trial or out of range -> 2.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mounts=()
cleanup_extra() { for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done; }
as_test_init guards

# h5check same REF FILE [partial]   rows equal to REF's (timing aside); partial: only the
#                                   done rows are compared and pending rows are allowed
h5check() {
  if [ "${4:-}" = partial ]; then
    "$py" "$tools/compare_results.py" "$2" "$3" --rows-done-only
  else
    "$py" "$tools/compare_results.py" "$2" "$3" --require-complete
  fi
}
done_rows() { sed -n 's/^trials: \([0-9]*\) \/.*/\1/p' <("$bin" status "$1" 2>&1); }

spec() { # spec FILE FLUSH REPLICATES
  cat >"$1" <<EOF
name: guards
seed: 9
replicates: $3
flush_interval: $2
sweep:
  concat:
    - {case: id, vfamily: identity, mfamily: identity, d: [2, 3], n: 40, T: 120, dt: 0.01,
       init: {kind: box, scale: 5}}
    - {case: cx, vfamily: complex, mfamily: identity, d: 3, n: 32, T: 80, dt: 0.01,
       init: {kind: gauss, scale: 2}}
EOF
}
spec "$tmp/a.yaml" 0.2 8
spec "$tmp/b.yaml" 0.5 8 # another flush interval: another SHA-256, the same trials
spec "$tmp/long.yaml" 0.2 200 # far longer than the checks: stopped by SIGUSR1
"$mpiexec" -n 2 "$bin" run "$tmp/a.yaml" -o "$tmp/ref.h5" -q >"$tmp/log" 2>&1
check "reference run: exit 0" test $? -eq 0

# ---- changed spec, rank counts
"$mpiexec" -n 1 "$bin" run "$tmp/a.yaml" -o "$tmp/p.h5" -q --time-limit 0.4 >"$tmp/log" 2>&1
rc=$?
check "partial run (time limit, 1 rank): exit 99 ($rc)" test $rc -eq 99
before=$(done_rows "$tmp/p.h5")
err=$("$mpiexec" -n 2 "$bin" run "$tmp/b.yaml" -o "$tmp/p.h5" --resume -q 2>&1); rc=$?
echo "$err" | grep "attnsweep run:"
check "changed spec: exit 2 ($rc)" test $rc -eq 2
check "changed spec: clear message" grep -q "was written by another spec (SHA-256" <<<"$err"
check "changed spec: names the override" grep -q -- "--allow-spec-change" <<<"$err"
check "changed spec: file untouched ($before done)" test "$(done_rows "$tmp/p.h5")" = "$before"
"$mpiexec" -n 3 "$bin" run "$tmp/b.yaml" -o "$tmp/p.h5" --resume --allow-spec-change -q \
  >"$tmp/log" 2>&1
rc=$?
check "--allow-spec-change on 3 ranks (created on 1): exit 0 ($rc)" test $rc -eq 0
check "--allow-spec-change, 1 -> 3 ranks: reference records" h5check same "$tmp/ref.h5" "$tmp/p.h5"
"$mpiexec" -n 3 "$bin" run "$tmp/a.yaml" -o "$tmp/q.h5" -q --time-limit 0.4 >"$tmp/log" 2>&1
rc=$?
check "partial run on 3 ranks: exit 99 ($rc)" test $rc -eq 99
"$mpiexec" -n 1 "$bin" run "$tmp/a.yaml" -o "$tmp/q.h5" --resume -q >"$tmp/log" 2>&1
check "resume 3 -> 1 rank: exit 0" test $? -eq 0
check "resume 3 -> 1 rank: reference records" h5check same "$tmp/ref.h5" "$tmp/q.h5"

# ---- reproduce
out=$("$bin" reproduce "$tmp/q.h5" 5 2>&1); rc=$?
check "reproduce: identical, exit 0 ($rc)" test $rc -eq 0
"$py" - "$tmp/q.h5" <<'PYEOF'
import sys, zlib, h5py
with h5py.File(sys.argv[1], "r+") as f:
    row = f["trials"][5]
    row["n_clusters"] += 1
    row["lambda1_re"] = row["lambda1_re"] * (1 + 2 ** -50)
    f["trials"][5] = row
    # A row that differs but carries its checksum (docs/results.md): a damaged row is refused
    # before any comparison (exit 3, test_faults_corrupt.sh).
    f["checksums/trials"][5] = zlib.crc32(f["trials"][5].tobytes())
PYEOF
out=$("$bin" reproduce "$tmp/q.h5" 5 2>&1); rc=$?
echo "$out"
check "reproduce of a tampered row: exit 1 ($rc)" test $rc -eq 1
check "reproduce names the differing fields" \
  bash -c "grep -q '^  n_clusters ' <<<'$out' && grep -q '^  lambda1_re ' <<<'$out' && grep -q '2 field(s)' <<<'$out'"
out=$("$bin" reproduce "$tmp/q.h5" 999 2>&1); rc=$?
check "reproduce of a trial outside the sweep: exit 2 ($rc)" test $rc -eq 2
"$mpiexec" -n 1 "$bin" run "$tmp/a.yaml" -o "$tmp/r.h5" -q --time-limit 0.2 >"$tmp/log" 2>&1
pending=$("$py" -c "import h5py,numpy as np; print(int(np.flatnonzero(h5py.File('$tmp/r.h5','r')['trials']['outcome'][:] == 0)[0]))")
out=$("$bin" reproduce "$tmp/r.h5" "$pending" 2>&1); rc=$?
check "reproduce of a pending trial: exit 2, says so ($rc)" \
  bash -c "test $rc -eq 2 && grep -q 'has not been run yet' <<<'$out'"

# ---- two runs on one file
"$mpiexec" -n 2 "$bin" run "$tmp/long.yaml" -o "$tmp/c.h5" -q >"$tmp/first.log" 2>&1 &
job=$!
if wait_running "$job" "$tmp/c.h5"; then
  err=$("$mpiexec" -n 1 "$bin" run "$tmp/long.yaml" -o "$tmp/c.h5" --force -q 2>&1); rc=$?
  echo "$err" | grep "attnsweep run:"
  check "second run (--force): exit 3 ($rc)" test $rc -eq 3
  check "second run: names the holder" grep -Eq "c.h5 is in use by another run \(pid [0-9]+ on host" <<<"$err"
  err=$("$mpiexec" -n 1 "$bin" run "$tmp/long.yaml" -o "$tmp/c.h5" --resume -q 2>&1); rc=$?
  check "second run (--resume): exit 3 ($rc)" test $rc -eq 3
  err=$("$bin" repair "$tmp/c.h5" 2>&1); rc=$?
  check "repair while running: exit 3, in use ($rc)" \
    bash -c "test $rc -eq 3 && grep -q 'in use by another run' <<<'$err'"
else
  echo "FAIL: the first run never reached the running state"; fail=1
fi
check "the first run is still running, undisturbed" kill -0 "$job"
kill -USR1 "$job"
wait "$job"; rc=$?; job=
check "the first run then drains on SIGUSR1: exit 99 ($rc)" test $rc -eq 99
check "the first run: its file is stopped cleanly, lock free" \
  grep -q "state: stopped" <("$bin" status "$tmp/c.h5")

# ---- unwritable directory
echo "a file" >"$tmp/plain"
err=$("$mpiexec" -n 1 "$bin" run "$tmp/a.yaml" -o "$tmp/plain/out.h5" -q 2>&1); rc=$?
echo "$err" | grep "attnsweep run:"
check "directory is a regular file: exit 3 ($rc)" test $rc -eq 3
check "directory is a regular file: the path is named" grep -q "$tmp/plain/out.h5" <<<"$err"
mkdir -p "$tmp/ro" "$tmp/small"
if mount -t tmpfs -o ro,size=64k tmpfs "$tmp/ro" 2>/dev/null; then
  mounts+=("$tmp/ro")
  err=$("$mpiexec" -n 2 "$bin" run "$tmp/a.yaml" -o "$tmp/ro/out.h5" -q 2>&1); rc=$?
  echo "$err" | grep "attnsweep run:"
  check "read-only file system: exit 3 ($rc)" test $rc -eq 3
  check "read-only file system: the path is named" grep -q "$tmp/ro/out.h5" <<<"$err"
else
  echo "skip: read-only tmpfs (mount not permitted here)"
fi

# ---- full disk: the file system fills up while the sweep runs (a 4 MiB tmpfs, filled by
# dd once the sweep is running); the next journal write fails with ENOSPC.
if mount -t tmpfs -o size=4m tmpfs "$tmp/small" 2>/dev/null; then
  mounts+=("$tmp/small")
  "$mpiexec" -n 2 "$bin" run "$tmp/a.yaml" -o "$tmp/small/out.h5" -q --flush 0 \
    >"$tmp/full.log" 2>&1 &
  job=$!
  wait_running "$job" "$tmp/small/out.h5"
  # Until a first record is journaled (journals longer than their 64-byte headers): workers
  # finish small trials 8 at a time, so the first records can take a while under load.
  for _ in $(seq 1 400); do
    [ "$(cat "$tmp"/small/out.h5.journal.* 2>/dev/null | wc -c)" -gt 128 ] && break
    sleep 0.05
  done
  dd if=/dev/zero of="$tmp/small/fill" bs=64k >/dev/null 2>&1
  wait "$job"; rc=$?; job=
  grep "attnsweep run:" "$tmp/full.log"
  check "full disk: exit 3 ($rc)" test $rc -eq 3
  check "full disk: says so" grep -q "No space left on device" "$tmp/full.log"
  n=$(done_rows "$tmp/small/out.h5")
  check "full disk: the file opens, some records were written before ($n)" test "${n:-0}" -gt 0
  check "full disk: the records written read back intact" \
    h5check same "$tmp/ref.h5" "$tmp/small/out.h5" partial
  rm -f "$tmp/small/fill"
  "$mpiexec" -n 2 "$bin" run "$tmp/a.yaml" -o "$tmp/small/out.h5" --resume -q >"$tmp/log" 2>&1
  rc=$?
  check "full disk, space freed: resume exit 0 ($rc)" test $rc -eq 0
  check "full disk, space freed: reference records" h5check same "$tmp/ref.h5" "$tmp/small/out.h5"
else
  echo "skip: full disk (mount of a small tmpfs not permitted here)"
fi
exit $fail
