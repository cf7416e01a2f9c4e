#!/usr/bin/env bash
# Fault injection, issue 21 point 4: silent corruption of the results file.
#   checksums   every row of /trials and every bulk slab has the CRC-32 that docs/results.md
#               defines: recomputed here with Python's zlib, independently of attnsweep;
#   complete    bytes flipped in three rows (a float, the outcome, the message) and in two
#               bulk slabs of a complete file (no journals left): status names exactly those
#               five trials and says "damaged", not "complete"; --resume runs exactly those
#               five and the file equals the reference (records and bulk data);
#   journals    a stopped run: one row flipped together with its journal entry, another row
#               alone: repair restores the second from its journal and resets the first to
#               pending (never "kept without journal entry"); --resume (without repair) does
#               the same, runs exactly the pending trials and that one, and ends equal to the
#               reference;
#               Before that (issue 36 point 1), summarize refuses the damaged file and reproduce
#               a damaged row or slab (exit 3, naming the file, the trials and repair);
#               reproduce of an intact row of it still agrees (exit 0);
#   older file  a file without /checksums: status says "not verified", --resume goes on.
# Every command runs under `timeout`: a hang fails the test.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init faults_corrupt
T="timeout -k 2 60"
cd "$tmp" || exit 1
cat >c.yaml <<'EOF'
name: fcorrupt
seed: 5
replicates: 12
output: {final: true, initial: true}
sweep: {vfamily: identity, mfamily: identity, d: [2, 3], n: 8, T: 2, dt: 0.05,
        init: {kind: box, scale: 2}}
EOF
cat >j.yaml <<'EOF'
name: fcorrupt_j
seed: 6
replicates: 60
flush_interval: 0.05
sweep: {vfamily: identity, mfamily: identity, d: 2, n: 32, T: 100, dt: 0.01,
        init: {kind: box, scale: 2}}
EOF
# flip FILE row:R:FIELD | bulk:NAME:TRIAL | journal:PATH:TRIAL ...: XOR one byte at each place
# (file offsets from the datasets' own storage, so the HDF5 structure stays intact).
cat >flip.py <<'EOF'
import struct, sys, h5py
path, spots = sys.argv[1], []
with h5py.File(path, "r") as f:
    for a in sys.argv[2:]:
        kind, where, what = a.split(":")
        if kind == "row":
            ds = f["trials"]
            spots.append((path, ds.id.get_offset() + int(where) * ds.dtype.itemsize
                          + ds.dtype.fields[what][1]))
        elif kind == "bulk":
            ds, off = f["bulk"][where], f["bulk"][where + "_offset"]
            spots.append((path, ds.id.get_offset() + 8 * int(off[int(what)]) + 3))
        else:  # a journal entry: 64-byte header (entry size at byte 12), trial at entry + 8
            data = open(where, "rb").read()
            size = struct.unpack_from("<I", data, 12)[0]
            hits = [p for p in range(64, len(data) - size + 1, size)
                    if struct.unpack_from("<Q", data, p + 8)[0] == int(what)]
            assert hits, "no journal entry for trial " + what
            spots += [(where, p + 40) for p in hits]
for file, p in spots:
    with open(file, "r+b") as fh:
        fh.seek(p)
        b = fh.read(1)
        fh.seek(p)
        fh.write(bytes([b[0] ^ 0x5A]))
EOF
# sums FILE: the checksums of every row and every done row's slabs, by zlib
cat >sums.py <<'EOF'
import sys, zlib, h5py
with h5py.File(sys.argv[1], "r") as f:
    t, c = f["trials"][...], f["checksums/trials"][...]
    bad = [i for i in range(len(t)) if zlib.crc32(t[i].tobytes()) != c[i]]
    slabs = 0
    for k in f["bulk"]:
        if k.endswith("_offset"):
            continue
        off, d, ck = f["bulk"][k + "_offset"][...], f["bulk"][k], f["checksums"][k][...]
        for i in range(len(t)):
            slabs += 1
            if zlib.crc32(d[off[i]:off[i + 1]].astype("<f8").tobytes()) != ck[i]:
                bad.append((k, i))
    print("rows", len(t), "slabs", slabs, "mismatches", bad)
    sys.exit(1 if bad else 0)
EOF
same() { "$py" "$tools/compare_results.py" "$1" "$2" --require-complete; }

# The reference of the journal case runs meanwhile.
$T "$bin" run j.yaml -o jref.h5 -q >jlog 2>&1 &
jref=$!

# ---- the checksums are the documented CRC-32
$T "$bin" run c.yaml -o ref.h5 -q >log 2>&1
check "reference run: exit 0" test $? -eq 0
check "row and slab checksums are zlib's CRC-32 of the documented bytes" "$py" sums.py ref.h5

# ---- a complete file: three rows and two slabs damaged
cp ref.h5 c.h5
"$py" flip.py c.h5 row:3:gap row:7:outcome row:11:message bulk:final_tokens:5 bulk:initial_tokens:15
out=$($T "$bin" status c.h5 2>&1)
echo "$out" | grep -E "state|checksums|trial [0-9]+:"
check "status: damaged, not complete" grep -q "^state: damaged: 5 row(s)" <<<"$out"
check "...3 damaged rows, 2 with damaged bulk data" \
  grep -q "3 damaged row(s), 2 row(s) with damaged bulk data" <<<"$out"
check "...names exactly trials 3 5 7 11 15" \
  test "$(grep -oE '^  trial [0-9]+' <<<"$out" | awk '{printf "%s ", $2}')" = "3 5 7 11 15 "
# issue 36 point 1: summarize and reproduce verify the checksums they rely on
err=$($T "$bin" summarize c.h5 2>&1); rc=$?
check "summarize of the damaged file: exit 3 ($rc)" test $rc -eq 3
check "...names the file, the trials and repair" \
  grep -q "c.h5: 3 damaged row(s) (trial 3, 7, 11) and 2 row(s) with damaged bulk data (trial 5, 15) fail their checksums: .*attnsweep repair c.h5" <<<"$err"
err=$($T "$bin" reproduce c.h5 7 2>&1); rc=$?
check "reproduce of a damaged row: exit 3 ($rc), names trial 7 and repair" \
  bash -c "test $rc -eq 3 && grep -q 'c.h5: 1 damaged row(s) (trial 7) .*attnsweep repair c.h5' <<<\"\$1\"" _ "$err"
err=$($T "$bin" reproduce c.h5 15 2>&1); rc=$?
check "reproduce of a row with damaged bulk data: exit 3 ($rc)" test $rc -eq 3
$T "$bin" reproduce c.h5 4 >log 2>&1; rc=$?
check "reproduce of an intact row of that file: exit 0 ($rc)" test $rc -eq 0
$T "$bin" run c.yaml -o c.h5 --resume >log 2>&1; rc=$?
grep "attnsweep run:" log
check "--resume: exit 0 ($rc)" test $rc -eq 0
check "...reports them, naming the file" \
  grep -q "c.h5: 3 damaged row(s) and 2 row(s) with damaged bulk data" log
check "...runs exactly those five trials" grep -q "attnsweep run: 5 trials run" log
check "...the file equals the reference" same ref.h5 c.h5
check "...and its checksums hold" "$py" sums.py c.h5
check "...status: complete again" bash -c "'$bin' status c.h5 | grep -q '^state: complete'"

# ---- a stopped run with journals: a row damaged with its journal entry, another alone
wait $jref
check "journal reference run: exit 0" test $? -eq 0
# About 4 s of CPU in all (batched): a 1.5 s limit stops it with some rows done, even on a
# machine twice as fast.
$T "$bin" run j.yaml -o j.h5 -q --time-limit 1.5 >log 2>&1; rc=$?
check "a run stopped by its time limit: exit 99 ($rc)" test $rc -eq 99
read -r r1 r2 < <("$py" -c "
import h5py
t = h5py.File('j.h5', 'r')['trials']
p = h5py.check_enum_dtype(t.dtype['outcome'])['pending']
print(*[i for i, o in enumerate(t['outcome']) if o != p][:2])")
echo "damaged with its journal entry: trial ${r1:-?}; alone: trial ${r2:-?}"
if [ -n "${r2:-}" ]; then
  "$py" flip.py j.h5 "row:$r1:gap" "row:$r2:velocity" "journal:j.h5.journal.0:$r1"
  cp j.h5 j2.h5; cp j.h5.journal.0 j2.h5.journal.0; cp j.h5.spec j2.h5.spec
  $T "$bin" repair j.h5 >log 2>&1; rc=$?
  grep -E "journals|checksums|rows:" log
  check "repair: exit 0 ($rc)" test $rc -eq 0
  check "...2 damaged rows, one damaged journal entry skipped" \
    bash -c "grep -q 'checksums: 2 damaged row(s): 1 restored from the journal, 1 reset' log \
             && grep -q '1 damaged skipped' log"
  check "...trial $r1 (row and entry damaged) is pending, trial $r2 restored" "$py" -c "
import sys, h5py
a, b = h5py.File('j.h5', 'r')['trials'], h5py.File('jref.h5', 'r')['trials']
p = h5py.check_enum_dtype(a.dtype['outcome'])['pending']
sys.exit(not (a[$r1]['outcome'] == p and a[$r2]['velocity'] == b[$r2]['velocity']))"
  pending=$("$py" -c "
import h5py
t = h5py.File('j2.h5', 'r')['trials']
print(int((t['outcome'] == h5py.check_enum_dtype(t.dtype['outcome'])['pending']).sum()))")
  $T "$bin" run j.yaml -o j2.h5 --resume >log 2>&1; rc=$?
  grep "attnsweep run:" log
  check "--resume without repair: exit 0 ($rc), 2 damaged rows reported" \
    bash -c "test $rc -eq 0 && grep -q 'j2.h5: 2 damaged row(s) and 0' log"
  check "...runs the $pending pending trials and trial $r1, restores trial $r2" \
    bash -c "grep -q 'attnsweep run: $((pending + 1)) trials run' log && grep -q ', 1 recovered' log"
  check "...equal to the reference" same jref.h5 j2.h5
else
  check "the stopped run left two done rows" false
fi

# ---- an older file, without checksums
cp ref.h5 old.h5
"$py" -c "import h5py; del h5py.File('old.h5', 'r+')['checksums']"
check "a file without checksums: status says not verified, state complete" \
  bash -c "'$bin' status old.h5 >log 2>&1 && grep -q 'checksums: none .*not verified' log \
           && grep -q '^state: complete' log"
$T "$bin" run c.yaml -o old.h5 --resume >log 2>&1; rc=$?
check "...--resume goes on (exit $rc) with a note" \
  bash -c "test $rc -eq 0 && grep -q 'old.h5 has no checksums' log"
exit $fail
