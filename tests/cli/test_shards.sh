#!/usr/bin/env bash
# Job arrays (issue 23): `run --shard I/N` and `merge`.
#   * every shard file is a valid results file whose rows outside the shard are pending, its
#     done rows identical to a single run's (a trial is a pure function of spec and index);
#     the shards of one N are disjoint and cover the sweep;
#   * merge of N = 1, 3, 7 shards, run on 1 to 3 ranks, equals a single run: every
#     /trials record (wall_time and rank aside) and the bulk data (tests/tools/compare_results.py);
#   * a shard stopped early (--time-limit, exit 99) is refused by merge as unfinished, resumes
#     by its own name, and a resume with another shard is refused;
#   * merge refuses (exit 2, the file named) a shard of another spec, a missing shard
#     (--partial merges what exists: rows pending), rows two overlapping files disagree on,
#     an existing output without --force; overlapping files that agree merge;
#   * the merged file names its inputs (root attribute merged_from);
#   * a shard file holds its own rows only (/trials has shard_trials rows, /trial_index);
#   * merge verifies every input's checksums: a damaged row is refused (exit 3, the file, the
#     trial and `repair` named, no output); inputs whose recorded input_sha256 differ are
#     refused (exit 2); the merged file carries the inputs' recorded input_sha256 verbatim;
#   * status of a shard set verifies each file's checksums (exit 3, the file, trials, repair);
#   * a failed `merge --force` leaves the file it was to replace byte for byte, and no
#     OUT.h5.merging behind.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init shards
cmp() { "$py" "$tools/compare_results.py" "$@" >>"$tmp/cmp.log" 2>&1; }
run() { # run RANKS ARGS...
  local np=$1
  shift
  "$mpiexec" -n "$np" "$bin" run "$@" -q >>"$tmp/run.log" 2>&1
}
done_rows() { "$bin" status "$1" | sed -n 's/^trials: \([0-9]*\) \/.*/\1/p'; }

write_spec() { # write_spec FILE SEED
  cat >"$1" <<EOF
name: shards
seed: $2
replicates: 3
output: {final: true}
defaults: {T: 4, dt: 0.1, init: {kind: box, scale: 5}}
sweep:
  concat:
    - {case: id, vfamily: identity, mfamily: identity, d: [2, 3], n: [6, 12, 24]}
    - {case: good, vfamily: perron, mfamily: identity, d: 3, n: 10}
EOF
}
write_spec "$tmp/s.yaml" 7
write_spec "$tmp/other.yaml" 8
total=21
cd "$tmp" || exit 1
run 1 s.yaml -o ref.h5
check "reference run: exit 0" test $? -eq 0

# N = 1, 3, 7 on rank counts 1..3 in turn; shards of one N disjoint, covering the sweep.
for N in 1 3 7; do
  sum=0 ok=1
  for ((I = 1; I <= N; I++)); do
    np=$((I % 3 == 2 ? 2 : 1)) # 1, 2 and 3 ranks: 1 2 1 | 3 1 | 1 2 1 1 2 1 1
    [ "$N$I" = 31 ] && np=3
    run "$np" s.yaml -o "m$N.h5" --shard "$I/$N" || ok=0
    f=m$N.h5.shard-$I-of-$N
    if [ "$N" = 3 ]; then # the merge below checks every row of N = 1 and 7 anyway
      cmp --complete "$f" --closed || ok=0
      cmp "$f" ref.h5 --rows-done-only || ok=0
    fi
    sum=$((sum + $(done_rows "$f")))
  done
  check "N = $N: every shard exits 0, is a valid results file and equals the reference" \
    test $ok -eq 1
  check "N = $N: the shards' done rows add up to the sweep ($sum of $total)" test $sum -eq $total
  "$bin" merge "m$N.h5" m$N.h5.shard-*-of-$N >>"$tmp/merge.log" 2>&1
  check "N = $N: merge exits 0" test $? -eq 0
  check "N = $N: merged file identical to the single run (records and bulk)" \
    cmp "m$N.h5" ref.h5 --require-complete
done
check "N = 3: shard 1 is smaller than the sweep (a real split)" \
  test "$(done_rows m3.h5.shard-1-of-3)" -lt $total
check "a shard file holds its own rows only (rows = shard_trials, /trial_index increasing)" \
  "$py" -c "
import h5py, numpy as np, sys
ok = True
for i in range(1, 8):
    with h5py.File(f'm7.h5.shard-{i}-of-7', 'r') as f:
        idx = f['trial_index'][...]
        ok &= len(f['trials']) == int(f.attrs['shard_trials']) == len(idx) > 0
        ok &= bool(np.all(np.diff(idx.astype(np.int64)) > 0)) and int(idx[-1]) < $total
sys.exit(0 if ok else 1)"
check "merged_from names the inputs" "$py" -c "
import h5py, sys
m = h5py.File('m3.h5', 'r').attrs['merged_from']
m = m.decode() if isinstance(m, bytes) else m
sys.exit(0 if all(f'm3.h5.shard-{i}-of-3: shard {i} of 3' in m for i in (1, 2, 3)) else 1)"

# Drain and resume of one shard; refusals around it.
run 2 s.yaml -o t.h5 --shard 2/3 --time-limit 0.0001
rc=$?
check "a shard stopped by --time-limit exits 99 (got $rc)" test $rc -eq 99
"$bin" merge tm.h5 m3.h5.shard-1-of-3 t.h5.shard-2-of-3 m3.h5.shard-3-of-3 >merge.err 2>&1
rc=$?
check "merge refuses an unfinished shard, naming it (exit $rc)" \
  eval '[ $rc -eq 2 ] && grep -q "t.h5.shard-2-of-3: shard 2 of 3 has" merge.err && [ ! -e tm.h5 ]'
"$bin" status t.h5 >status.out 2>&1
check "status of the shard set: shard 2 stopped with its count, shards 1 and 3 missing" \
  eval 'grep -q "^  shard 2/3 t.h5.shard-2-of-3: [0-9]* / $(done_rows m3.h5.shard-2-of-3) done.*stopped (resume: attnsweep run -o t.h5.shard-2-of-3 --resume)" status.out &&
    grep -q "^  shard 1/3 t.h5.shard-1-of-3: missing" status.out &&
    grep -q "^  shard 3/3 t.h5.shard-3-of-3: missing" status.out && grep -q "0 of 3 shards complete" status.out'
"$bin" status m7.h5.shard-*-of-7 >status.out 2>&1
check "status of 7 shard files: each complete, total $total" \
  eval '[ "$(grep -c "^  shard [1-7]/7 .*complete" status.out)" = 7 ] &&
    grep -q "^trials: $total / $total done" status.out && grep -q "every shard complete" status.out'
cp t.h5.shard-2-of-3 wrong.h5.shard-1-of-3
run 1 s.yaml -o wrong.h5 --shard 1/3 --resume
check "resume with another shard than the file's: exit 2" test $? -eq 2
run 1 -o t.h5.shard-2-of-3 --resume
check "the shard resumes by its own name (spec stored): exit 0" test $? -eq 0
check "the resumed shard equals the first run's shard 2" \
  eval 'cmp t.h5.shard-2-of-3 m3.h5.shard-2-of-3 &&
    [ "$(done_rows t.h5.shard-2-of-3)" = "$(done_rows m3.h5.shard-2-of-3)" ]'

# Refusals, --partial, overlaps.
run 1 other.yaml -o o.h5 --shard 2/3
"$bin" merge x.h5 m3.h5.shard-1-of-3 o.h5.shard-2-of-3 m3.h5.shard-3-of-3 >merge.err 2>&1
rc=$?
check "merge refuses a shard of another spec, naming it (exit $rc)" \
  eval '[ $rc -eq 2 ] && grep -q "o.h5.shard-2-of-3 is not a shard of the same sweep" merge.err'
"$bin" merge x.h5 m3.h5.shard-1-of-3 m3.h5.shard-3-of-3 >merge.err 2>&1
rc=$?
check "merge refuses a missing shard, naming it (exit $rc)" \
  eval '[ $rc -eq 2 ] && grep -q "missing shard: m3.h5.shard-2-of-3" merge.err && [ ! -e x.h5 ]'
"$bin" merge x.h5 m3.h5.shard-1-of-3 m3.h5.shard-3-of-3 --partial >>merge.log 2>&1
check "--partial merges what exists: exit 0" test $? -eq 0
left=$((total - $(done_rows x.h5)))
check "--partial: shard 2's rows pending ($left)" test $left -eq "$(done_rows m3.h5.shard-2-of-3)"
check "--partial: the rows present equal the reference" cmp x.h5 ref.h5 --rows-done-only
"$bin" merge x.h5 m3.h5.shard-2-of-3 >merge.err 2>&1
rc=$?
check "merge refuses an existing output without --force (exit $rc)" \
  eval '[ $rc -eq 2 ] && grep -q "already exists" merge.err'
"$bin" merge x.h5 m3.h5.shard-*-of-3 m7.h5.shard-*-of-7 --force >>merge.log 2>&1
check "overlapping shard sets (N = 3 and N = 7) that agree merge: exit 0" test $? -eq 0
check "... into the single run's file" cmp x.h5 ref.h5 --require-complete
# bad.h5: shard 1 with one done row changed; with --crc its checksum is made to match (a
# file computed differently), without it the row is damage.
damage() { # damage FILE [--crc]
  "$py" - "$@" <<'PY'
import h5py, numpy as np, sys, zlib
with h5py.File(sys.argv[1], "r+") as f:
    t = f["trials"]
    out = h5py.check_enum_dtype(t.dtype["outcome"])
    rows = np.flatnonzero(t["outcome"][...] != out["pending"])
    r = t[rows[0]]
    r["n_clusters"] += 1
    t[rows[0]] = r
    if "--crc" in sys.argv:  # the CRC-32 of the row's bytes in the file's packed type
        f["checksums/trials"][rows[0]] = zlib.crc32(t[rows[0]].tobytes()) & 0xFFFFFFFF
    print(int(f["trial_index"][rows[0]]) if "trial_index" in f else int(rows[0]))
PY
}
cp m3.h5.shard-1-of-3 bad.h5
damage bad.h5 --crc >/dev/null
"$bin" merge y.h5 m3.h5.shard-*-of-3 bad.h5 >merge.err 2>&1
rc=$?
check "merge refuses overlapping files that disagree, naming both (exit $rc)" \
  eval '[ $rc -eq 2 ] && grep -q "differs between m3.h5.shard-1-of-3 and bad.h5" merge.err && [ ! -e y.h5 ]'
cp m3.h5.shard-1-of-3 dmg.h5.shard-1-of-3
trial=$(damage dmg.h5.shard-1-of-3)
"$bin" merge y.h5 dmg.h5.shard-1-of-3 m3.h5.shard-2-of-3 m3.h5.shard-3-of-3 >merge.err 2>&1
rc=$?
check "merge refuses a damaged shard: exit 3 naming the file, trial $trial and repair (exit $rc)" \
  eval '[ $rc -eq 3 ] && grep -q "dmg.h5.shard-1-of-3 is damaged: 1 row(s) fail their checksums (trials $trial)" merge.err &&
    grep -q "attnsweep repair dmg.h5.shard-1-of-3" merge.err && [ ! -e y.h5 ] && [ ! -e y.h5.merging ]'
"$bin" status dmg.h5.shard-1-of-3 m3.h5.shard-2-of-3 m3.h5.shard-3-of-3 >status.out 2>&1
rc=$?
check "status of a shard set verifies checksums: exit 3, the damaged file, trial and repair named" \
  eval '[ $rc -eq 3 ] && grep -q "dmg.h5.shard-1-of-3: .*DAMAGED: 1 row(s) fail their checksums (trials $trial): attnsweep repair dmg.h5.shard-1-of-3" status.out'
cp x.h5 x.before
"$bin" merge x.h5 dmg.h5.shard-1-of-3 m3.h5.shard-2-of-3 m3.h5.shard-3-of-3 --force >merge.err 2>&1
rc=$?
check "a failed merge --force leaves the old file byte for byte, no .merging (exit $rc)" \
  eval '[ $rc -eq 3 ] && command cmp -s x.h5 x.before && [ ! -e x.h5.merging ]'

# Rows without bulk data are checked as merge streams them (issue 36 point 4): a sweep with
# no bulk output, merged in blocks of 4 trials read 3 rows at a time (the test hook), its
# shards together with the whole run (every row found twice, a dense input read in pieces),
# equals the whole run; a damaged row of one shard is refused as pass 1 refuses it.
sed '/^output:/d' s.yaml >nb.yaml
run 1 nb.yaml -o nbref.h5
for I in 1 2 3; do run 1 nb.yaml -o nb.h5 --shard "$I/3"; done
ATTNSWEEP_TEST_MERGE_BLOCK=4:3 "$bin" merge nbm.h5 nbref.h5 nb.h5.shard-*-of-3 >merge.err 2>&1
rc=$?
check "no bulk data, blocks of 4 trials, reads of 3 rows, overlapping inputs: exit 0 ($rc)" \
  eval '[ $rc -eq 0 ] && grep -q "$total of $total trials from 4 files (rows found twice were identical)" merge.err'
check "... into the single run's file" cmp nbm.h5 nbref.h5 --require-complete
check "... whose checksums verify" bash -c "'$bin' status nbm.h5 | grep -q ' 0 damaged row(s)'"
cp nb.h5.shard-2-of-3 nbd.h5.shard-2-of-3
trial=$(damage nbd.h5.shard-2-of-3)
ATTNSWEEP_TEST_MERGE_BLOCK=4:3 "$bin" merge nby.h5 nb.h5.shard-1-of-3 nbd.h5.shard-2-of-3 \
  nb.h5.shard-3-of-3 >merge.err 2>&1
rc=$?
check "no bulk data: a damaged row is refused as read, exit 3 naming the file, trial $trial (exit $rc)" \
  eval '[ $rc -eq 3 ] && grep -q "nbd.h5.shard-2-of-3 is damaged: 1 row(s) fail their checksums (trials $trial)" merge.err &&
    [ ! -e nby.h5 ] && [ ! -e nby.h5.merging ]'

# Input hashes: recorded ones compared and carried, never the files at the paths now.
for i in 1 2 3; do
  cp "m3.h5.shard-$i-of-3" "h.h5.shard-$i-of-3"
  sha=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  "$py" -c "
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], 'r+') as f:
    f.attrs.create('input_sha256', np.bytes_(sys.argv[2] + '  /nonexistent/dir/V.npy\n'))" \
    "h.h5.shard-$i-of-3" "$sha"
done
"$bin" merge h.h5 h.h5.shard-*-of-3 >>merge.log 2>&1
check "merge carries the recorded input_sha256 (the file at the path is gone): exit 0" \
  "$py" -c "
import h5py, sys
a = h5py.File('h.h5', 'r').attrs['input_sha256']
a = a.decode() if isinstance(a, bytes) else a
sys.exit(0 if a == '$sha  /nonexistent/dir/V.npy\n' else 1)"
"$py" -c "
import h5py, numpy as np
with h5py.File('h.h5.shard-2-of-3', 'r+') as f:
    f.attrs.create('input_sha256', np.bytes_('f' * 64 + '  /nonexistent/dir/V.npy\n'))"
"$bin" merge h2.h5 h.h5.shard-*-of-3 >merge.err 2>&1
rc=$?
check "merge refuses shards whose recorded input hashes differ, naming both (exit $rc)" \
  eval '[ $rc -eq 2 ] && grep -q "h.h5.shard-1-of-3 and h.h5.shard-2-of-3 read different contents of input file 1" merge.err && [ ! -e h2.h5 ]'

# plan --sbatch --array: the submit script (its run under Slurm: tests/slurm/test_slurm.sh).
"$bin" plan s.yaml --sbatch --array 3 -o arr/out.h5 >submit.sh 2>plan.err
check "plan --sbatch --array 3 renders a bash script" eval 'bash -n submit.sh'
check "... an array of 3 tasks, each its shard of OUT.h5" \
  eval 'grep -q "^#SBATCH --array=1-3$" submit.sh &&
    grep -qF -- "-o '"'$tmp/arr/out.h5'"' --shard \"\${SLURM_ARRAY_TASK_ID:-0}/3\")" submit.sh'
check "... and a merge job after all of them (afterok) merging the 3 shard files" \
  eval 'grep -q "sbatch --parsable --dependency=afterok:\"\$array\"" submit.sh &&
    grep -qF "\"\$bin\" merge \"\$out\" \"\${shards[@]}\"" submit.sh &&
    grep -qF "shards+=(\"\$out.shard-\$i-of-3\")" submit.sh'

[ $fail -eq 0 ] || tail -n 30 "$tmp/run.log" "$tmp/cmp.log" "$tmp/merge.log" merge.err 2>/dev/null
echo "test_shards: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
