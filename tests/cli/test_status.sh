#!/usr/bin/env bash
# `attnsweep status`: bad paths exit 2 with a clear message; a sweep that is running (another
# process holds the results file open for writing and holds the run lock) is read while it
# runs, with its progress; then the same file complete; then a stopped (unfinished) file;
# then --json of both (exit 0 complete, 1 incomplete, 2 missing).
# The writer is the io_test_results program (tests/io/test_results.c) in its hold mode.
set -u
bin=${ATTNSWEEP:?ATTNSWEEP must point at the attnsweep binary}
writer=${AS_BUILD_DIR:?AS_BUILD_DIR must be set}/tests/io_test_results
mpiexec=${MPIEXEC:-mpiexec}
fail=0
check() { # check DESCRIPTION CONDITION...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
tmp=$(mktemp -d /tmp/as_status_XXXXXX)
holder=
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

err=$("$bin" status 2>&1); rc=$?
check "no file: exit 2" test $rc -eq 2
check "no file: says so" grep -q "missing the results file" <<<"$err"
err=$("$bin" status "$tmp/none.h5" 2>&1); rc=$?
check "missing file: exit 2" test $rc -eq 2
check "missing file: names it" grep -q "$tmp/none.h5: no such file" <<<"$err"
echo "not a results file" >"$tmp/text.h5"
err=$("$bin" status "$tmp/text.h5" 2>&1); rc=$?
check "text file: exit 2" test $rc -eq 2
check "text file: clear message" grep -q "is not an attnsweep results file" <<<"$err"

# A running sweep: half the rows written, file open for writing, run lock held.
mkdir "$tmp/hold"
AS_RESULTS_HOLD="$tmp/hold" AS_RESULTS_EXAMPLE="$tmp/run.h5" "$mpiexec" -n 1 "$writer" \
  >"$tmp/writer.log" 2>&1 &
holder=$!
for _ in $(seq 1 300); do [ -e "$tmp/hold/ready" ] && break; sleep 0.1; done
check "the writer started" test -e "$tmp/hold/ready"
out=$("$bin" status "$tmp/run.h5" 2>&1); rc=$?
echo "$out"
check "running: exit 0" test $rc -eq 0
check "running: progress 5 / 10" grep -q "trials: 5 / 10 done (50.0%)" <<<"$out"
check "running: state running with the writer's pid" grep -Eq "state: running \(pid [0-9]+ on host" <<<"$out"
check "running: outcomes counted" grep -q "outcomes: pending 5, reached_T 3, settled 2" <<<"$out"
check "running: open segment" grep -q "#0 job .*(running)" <<<"$out"
touch "$tmp/hold/go"
wait "$holder"; rc=$?
holder=
check "the writer finished cleanly" test $rc -eq 0
out=$("$bin" status "$tmp/run.h5" 2>&1); rc=$?
echo "$out"
check "complete: exit 0" test $rc -eq 0
check "complete: 10 / 10" grep -q "trials: 10 / 10 done (100.0%)" <<<"$out"
check "complete: state" grep -q "state: complete" <<<"$out"
check "complete: failure listed with its message" grep -q "trial 5 (d 4, n 9): synthetic failure of trial 5" <<<"$out"
check "complete: verdicts" grep -q "verdicts: consistent 8, violated 1, failed 1" <<<"$out"
check "complete: closed segment" grep -q "#0 job .* 10 done at end" <<<"$out"

# A stopped sweep: 9 of 10 done, nobody holds the lock.
AS_RESULTS_EXAMPLE="$tmp/stopped.h5" "$mpiexec" -n 1 "$writer" >"$tmp/writer2.log" 2>&1
check "example writer ran" test $? -eq 0
out=$("$bin" status "$tmp/stopped.h5" 2>&1); rc=$?
echo "$out"
check "stopped: exit 0" test $rc -eq 0
check "stopped: state and resume hint" grep -q "state: stopped, 1 trial(s) left (resume:" <<<"$out"
check "stopped: two segments" grep -q "segments: 2" <<<"$out"

# --json (issue 34 item 4): one object a script can read; exit 0 complete, 1 incomplete, 2 bad
# input (3 damaged: tests/cli/test_shards.sh).
py=/usr/bin/python3
json_is() { # json_is FILE PYTHON-CONDITION-ON-d
  "$py" -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"
}
"$bin" status "$tmp/run.h5" --json >"$tmp/c.json" 2>&1; rc=$?
check "--json complete: exit 0 ($rc), counts by outcome, last segment closed" json_is "$tmp/c.json" \
  "$rc == 0 and d['state'] == 'complete_with_failures' and d['done'] == d['trials'] == 10 and
   d['failed'] == 1 and sum(d['outcomes'].values()) == 10 and
   d['last_segment']['ended'] == 'closed'"
"$bin" status "$tmp/stopped.h5" --json >"$tmp/s.json" 2>&1; rc=$?
check "--json stopped: exit 1 ($rc), 9 of 10, the resume command" json_is "$tmp/s.json" \
  "$rc == 1 and d['state'] == 'stopped' and d['done'] == 9 and d['exit'] == 1 and
   d['resume'].endswith('-o $tmp/stopped.h5 --resume') and d['segments'] == 2"
"$bin" status "$tmp/none.h5" --json >/dev/null 2>&1; rc=$?
check "--json missing file: exit 2 ($rc)" test $rc -eq 2
exit $fail
