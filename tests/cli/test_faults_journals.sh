#!/usr/bin/env bash
# Fault injection, issue 21 points 5 and 7: repair and resume never mix, move or block.
#   5  repair of a file that is not ours (a text file, a foreign HDF5 file; with --spec):
#      exit 2, the file byte-identical, nothing set aside, no lock file left;
#      repair --spec OTHER of an unreadable file whose journals carry another spec's SHA-256:
#      exit 2 naming the journal, nothing moved; with the sweep's own spec copy it rebuilds;
#   7  two bytes overwritten in a journal header: repair reads its entries one by one (exit
#      0, reported) and --resume sets the journal aside and goes on (exit 0, warning); the
#      final file equals an uninterrupted run; a matrix file changed between segments:
#      --resume refuses (exit 2, naming the file), --allow-input-change goes on.
# Issue 36 point 3: a copy of the spec in another directory, whose relative `file:` names
#   another matrix file, is refused on --resume (exit 2, naming both paths), the results
#   untouched; the spec-less resume (what `status` prints), run from another directory on 2
#   ranks, reads the first run's matrix file: no trial failed, the file equals a reference run.
# Every command runs under `timeout`: a hang fails the test.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init faults_journals
T="timeout -k 2 60"
cd "$tmp" || exit 1
cat >a.yaml <<'EOF'
name: fjournals
seed: 4
replicates: 100
flush_interval: 0.05
sweep: {vfamily: identity, mfamily: identity, d: [2, 3], n: 16, T: 30, dt: 0.01,
        init: {kind: box, scale: 2}}
EOF
sed 's/flush_interval: 0.05/flush_interval: 0.06/' a.yaml >b.yaml # another SHA-256
$T "$bin" run a.yaml -o ref.h5 -q >log 2>&1
check "reference run: exit 0" test $? -eq 0
same() { "$py" "$tools/compare_results.py" ref.h5 "$1" --require-complete; }
same_as() { "$py" "$tools/compare_results.py" "$1" "$2" --require-complete; }
stop_early() { # stop_early OUT: a run stopped by its time limit, journals kept
  rm -f "$1" "$1".*
  $T "$bin" run a.yaml -o "$1" -q --time-limit 0.6 >log 2>&1
  local rc=$?
  [ $rc -eq 99 ] || { echo "stop_early: exit $rc"; cat log; return 1; }
}

# ---- 5: a file that is not ours is never touched
echo "my notes" >notes.h5; cp notes.h5 notes.keep
"$py" -c "import h5py; h5py.File('foreign.h5','w')['x'] = [1, 2, 3]"; cp foreign.h5 foreign.keep
for f in notes foreign; do
  err=$($T "$bin" repair "$f.h5" --spec a.yaml 2>&1); rc=$?
  echo "$err"
  check "repair of $f.h5 (not ours) --spec: exit 2 ($rc)" test $rc -eq 2
  check "...says it refuses and leaves it" grep -q "refusing to repair $f.h5: .*left untouched" <<<"$err"
  check "...the file is byte-identical, nothing set aside, no lock" \
    bash -c "cmp -s $f.h5 $f.keep && ! ls $f.h5.* >/dev/null 2>&1"
done
stop_early s.h5 && {
  truncate -s 1000 s.h5; cp s.h5 s.keep
  err=$($T "$bin" repair s.h5 --spec b.yaml 2>&1); rc=$?
  echo "$err"
  check "repair --spec OTHER with journals of this sweep: exit 2 ($rc)" test $rc -eq 2
  check "...names the journal of another sweep" grep -q "journal .*s.h5.journal.0 belongs to another sweep" <<<"$err"
  check "...nothing moved" bash -c "cmp -s s.h5 s.keep && ! ls s.h5.damaged* >/dev/null 2>&1"
  $T "$bin" repair s.h5 >log 2>&1; rc=$?
  check "repair with the spec copy: rebuilt, exit 0 ($rc)" bash -c "test $rc -eq 0 && grep -q rebuilt log"
  $T "$bin" run a.yaml -o s.h5 --resume -q >log 2>&1
  check "...and the resume completes it like the reference" same s.h5
}

# ---- 7: a damaged journal header is no dead end
stop_early h.h5 && {
  printf 'XY' | dd of=h.h5.journal.0 bs=1 seek=12 conv=notrunc 2>/dev/null
  $T "$bin" repair h.h5 >log 2>&1; rc=$?
  check "repair with a damaged journal header: exit 0 ($rc), reported" \
    bash -c "test $rc -eq 0 && grep -q 'journals with a damaged header: 1' log"
  $T "$bin" run a.yaml -o h.h5 --resume -q >log 2>&1; rc=$?
  check "--resume with a damaged journal header: exit 0 ($rc), warns" \
    bash -c "test $rc -eq 0 && grep -q 'journal was damaged: it was set aside' log"
  check "...the final file equals the reference" same h.h5
}

# ---- 7: a changed input file between segments
"$py" -c "import h5py, numpy as np; h5py.File('mv.h5','w')['triples/V'] = np.eye(3)[None]"
cat >mv.yaml <<'EOF'
name: fjournals_mv
seed: 4
replicates: 200
flush_interval: 0.05
sweep: {vfamily: file, mfamily: identity, file: mv.h5, d: 3, n: 16, T: 40, dt: 0.01,
        init: {kind: box, scale: 2}}
EOF
$T "$bin" run mv.yaml -o i.h5 -q --time-limit 0.6 >log 2>&1; rc=$?
check "matrix-file sweep stopped early: exit 99 ($rc)" test $rc -eq 99
"$py" -c "import h5py, numpy as np; h5py.File('mv.h5','w')['triples/V'] = 2 * np.eye(3)[None]"
before=$("$bin" status i.h5 | grep '^trials:')
err=$($T "$bin" run mv.yaml -o i.h5 --resume -q 2>&1); rc=$?
echo "$err"
check "--resume after the matrix file changed: exit 2 ($rc)" test $rc -eq 2
check "...names the file and the override" \
  bash -c "grep -q 'input file $tmp/mv.h5 changed since the sweep was started' <<<\"\$1\" && grep -q -- --allow-input-change <<<\"\$1\"" _ "$err"
check "...the results file is untouched ($before)" test "$("$bin" status i.h5 | grep '^trials:')" = "$before"
$T "$bin" run mv.yaml -o i.h5 --resume --allow-input-change -q >log 2>&1; rc=$?
check "--allow-input-change: exit 0 ($rc)" test $rc -eq 0
# ---- issue 36 point 3: inputs compared by content, wherever the spec lives
mkdir -p da db elsewhere
"$py" -c "
import h5py, numpy as np
h5py.File('da/m.h5','w')['triples/V'] = np.eye(3)[None]
h5py.File('db/m.h5','w')['triples/V'] = 2 * np.eye(3)[None]"
cat >da/m.yaml <<'EOF'
name: fjournals_where
seed: 5
replicates: 300
flush_interval: 0.05
sweep: {vfamily: file, mfamily: identity, file: m.h5, d: 3, n: 12, T: 20, dt: 0.01,
        init: {kind: box, scale: 2}}
EOF
cp da/m.yaml db/m.yaml
$T "$bin" run da/m.yaml -o w_ref.h5 -q >log 2>&1
$T "$bin" run da/m.yaml -o w.h5 -q --time-limit 0.3 >log 2>&1; rc=$?
check "input sweep stopped early: exit 99 ($rc)" test $rc -eq 99
before=$("$bin" status w.h5 | grep '^trials:')
err=$($T "$bin" run db/m.yaml -o w.h5 --resume -q 2>&1); rc=$?
echo "$err"
check "--resume with a copy of the spec reading another m.h5: exit 2 ($rc)" test $rc -eq 2
check "...names the label, both paths and the override" \
  bash -c "grep -q 'input file m.h5 is not the one the sweep was started with: $tmp/db/m.h5.*was $tmp/da/m.h5' <<<\"\$1\" && grep -q -- --allow-input-change <<<\"\$1\"" _ "$err"
check "...the results file is untouched ($before)" test "$("$bin" status w.h5 | grep '^trials:')" = "$before"
resume=$("$bin" status w.h5 | sed -n 's/.*(resume: \(.*\))$/\1/p')
check "status prints the spec-less resume ($resume)" test "$resume" = "attnsweep run -o w.h5 --resume"
err=$(cd elsewhere && $T "$mpiexec" -n 2 "$bin" run -o ../w.h5 --resume -q 2>&1); rc=$?
check "spec-less resume from another directory, 2 ranks: exit 0 ($rc)" test $rc -eq 0
[ $rc -eq 0 ] || echo "$err"
check "...no trial failed, equal to the reference run" same_as w_ref.h5 w.h5
exit $fail
