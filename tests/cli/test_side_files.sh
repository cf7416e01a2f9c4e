#!/usr/bin/env bash
# Side files: after a clean, complete close only OUT.h5 remains (journals verified against
# /trials, then removed with the spec copy and the lock file); a stopped sweep keeps them all
# (repair needs the journals); a journal entry that differs from its row keeps the journals,
# with a warning. Issue 36 point 5: a symbolic link planted at the name of the lock file, the
# spec copy, a journal, repair's .rebuild, .rebuild-journal or .damaged is never followed.
set -u
source "$(dirname "$0")/lib.sh"
as_test_init side_files
slow_spec side 4 >"$tmp/spec.yaml"
side() { (cd "$tmp" && ls -1 "$1".* 2>/dev/null | tr '\n' ' '); }

mkdir "$tmp/a"
"$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/a/out.h5" -q >/dev/null 2>&1; rc=$?
check "complete run: exit 0 ($rc)" test $rc -eq 0
check "complete run: only out.h5 remains ($(ls "$tmp/a" | tr '\n' ' '))" test "$(ls "$tmp/a")" = "out.h5"

"$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/s.h5" -q --time-limit 0.05 >/dev/null 2>&1; rc=$?
check "stopped run: exit 99 ($rc)" test $rc -eq 99
have=$(side s.h5)
check "stopped run: journals, spec copy and lock stay ($have)" \
  test "$have" = "s.h5.journal.0 s.h5.journal.1 s.h5.lock s.h5.spec "
"$bin" repair "$tmp/s.h5" --dry-run >"$tmp/repair.log" 2>&1; rc=$?
check "stopped run: repair --dry-run reads them (exit $rc)" test $rc -eq 0
# A row that no longer matches its journal entry: the journals must stay, with a warning.
# Its checksum is rewritten too (docs/results.md), else it would be a damaged row that the
# resume restores from its journal entry (test_faults_corrupt.sh).
"$py" - "$tmp/s.h5" <<'PY'
import sys, zlib, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    t = f["trials"]
    lab = {v: k for k, v in h5py.check_enum_dtype(t.dtype["outcome"]).items()}
    done = [i for i, o in enumerate(t["outcome"]) if lab[o] != "pending"]
    row = t[done[0]]
    row["n_clusters"] += 7
    t[done[0]] = row
    f["checksums/trials"][done[0]] = zlib.crc32(t[done[0]].tobytes())
PY
err=$("$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/s.h5" --resume -q 2>&1); rc=$?
check "resume over a changed row: exit 0 ($rc)" test $rc -eq 0
check "resume over a changed row: warns" grep -q "warning: 1 journal entries differ from their rows" <<<"$err"
check "resume over a changed row: journals kept" test -e "$tmp/s.h5.journal.0"

"$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/t.h5" -q --time-limit 0.05 >/dev/null 2>&1
"$mpiexec" -n 1 "$bin" run "$tmp/spec.yaml" -o "$tmp/t.h5" --resume -q >/dev/null 2>&1; rc=$?
check "stopped, then resumed to the end: exit 0 ($rc)" test $rc -eq 0
check "stopped, then resumed: no side file left ($(side t.h5))" test -z "$(side t.h5)"
check "the tidied file is complete and readable" bash -c "'$bin' status '$tmp/t.h5' | grep -q '^state: complete$'"
# A resume of the tidied file rewrites the spec copy and runs nothing.
"$mpiexec" -n 1 "$bin" run -o "$tmp/t.h5" --resume -q >/dev/null 2>&1; rc=$?
check "resume of a tidied file: exit 0 ($rc), nothing left beside it" test $rc -eq 0 -a -z "$(side t.h5)"
# ---- issue 36 point 5: a symbolic link planted at a side file's name is never followed.
# Victims must keep their bytes, dangling links' targets must not appear, and every command
# refuses or goes on without writing through the link. Four commands in all.
mkdir "$tmp/l" && cd "$tmp/l" || exit 1
T="timeout -k 2 60"
victim() { printf 'victim %s\n' "$1" >"v_$1"; cp "v_$1" "k_$1"; }
intact() { cmp -s "v_$1" "k_$1"; }
ln -s nowhere_lock o1.h5.lock
err=$($T "$bin" run ../spec.yaml -o o1.h5 -q 2>&1); rc=$?
check "lock file a dangling symlink: exit 2 ($rc), says so" \
  bash -c "test $rc -eq 2 && grep -q 'lock file o1.h5.lock is a symbolic link: refusing to follow it' <<<\"\$1\"" _ "$err"
check "...its target not created, no results file" test ! -e nowhere_lock -a ! -e o1.h5
# the spec copy is replaced by a rename; a new sweep removes a linked journal, never its target
victim spec; ln -s v_spec o3.h5.spec; ln -s nowhere_journal o3.h5.journal.0
$T "$bin" run ../spec.yaml -o o3.h5 -q --time-limit 0.05 >/dev/null 2>&1; rc=$?
check "spec copy and journal symlinks, new sweep: goes on (exit $rc)" test $rc -eq 99 -o $rc -eq 0
check "...the spec victim intact, the copy a file, the journal's target not created" \
  bash -c "cmp -s v_spec k_spec && test -f o3.h5.spec -a ! -L o3.h5.spec -a ! -e nowhere_journal"
check "...no temporary spec copy left" bash -c "! ls o3.h5.spec.tmp* >/dev/null 2>&1"
# a resume refuses a linked journal
victim journal; rm -f o3.h5.journal.0; ln -s v_journal o3.h5.journal.0
err=$($T "$bin" run ../spec.yaml -o o3.h5 --resume -q 2>&1); rc=$?
check "resume with a journal a symlink: exit 2 ($rc), says so" \
  bash -c "test $rc -eq 2 && grep -q 'journal \(./\)\?o3.h5.journal.0 is a symbolic link: refusing to follow it' <<<\"\$1\"" _ "$err"
check "...the victim is intact" intact journal
# repair's rebuild: the new file and its journal never go through a link, and the results
# file that takes the place of the damaged one is a regular file
rm -f o3.h5.journal.0; truncate -s 1000 o3.h5
victim rebuild; victim rjournal
ln -s v_rebuild o3.h5.rebuild; ln -s v_rjournal o3.h5.rebuild-journal; ln -s nowhere_damaged o3.h5.damaged
$T "$bin" repair o3.h5 >log 2>&1; rc=$?
check "repair with links at .rebuild, .rebuild-journal, .damaged: exit 0 ($rc), rebuilt" grep -q rebuilt log
check "...both victims intact" bash -c "cmp -s v_rebuild k_rebuild && cmp -s v_rjournal k_rjournal"
check "...o3.h5 a regular file that opens, the damaged file set aside beside the link" \
  bash -c "test -f o3.h5 -a ! -L o3.h5 && test -L o3.h5.damaged -a -f o3.h5.damaged.1 && '$bin' status o3.h5 >/dev/null"
cd "$tmp" || exit 1
exit $fail
