#!/usr/bin/env bash
# User-facing messages carry no source location: an I/O failure (an unwritable output path),
# a refusal (the file exists), a held lock, bad arguments read "attnsweep CMD: message";
# ATTNSWEEP_DEBUG=1 adds file:line: function to each. (Internal errors keep file:line always:
# test_internal_error.sh.)
set -u
source "$(dirname "$0")/lib.sh"
as_test_init messages

spec=$tmp/tiny.yaml
cat >"$spec" <<'YAML'
name: tiny
seed: 3
sweep:
  concat:
    - {case: id, vfamily: identity, mfamily: identity, d: 2, n: 4, T: 1, dt: 0.1,
       init: {kind: box, scale: 1}}
YAML
place='[A-Za-z_]+\.c:[0-9]+:'

# An I/O failure: the lock file cannot be created (a path through a regular file: ENOTDIR).
touch "$tmp/plain"
err=$("$mpiexec" -n 1 "$bin" run "$spec" -o "$tmp/plain/out.h5" -q 2>&1); rc=$?
echo "$err"
check "unwritable: exit 3" test $rc -eq 3
check "unwritable: names the lock file" grep -q "attnsweep run: cannot create the lock file $tmp/plain/out.h5.lock" <<<"$err"
check "unwritable: no source location" bash -c "! grep -Eq '$place' <<<\"\$1\"" _ "$err"
check "unwritable: no [rank 0]" bash -c "! grep -q '\[rank 0\]' <<<\"\$1\"" _ "$err"
err=$(ATTNSWEEP_DEBUG=1 "$mpiexec" -n 1 "$bin" run "$spec" -o "$tmp/plain/out.h5" -q 2>&1); rc=$?
echo "$err"
check "unwritable, ATTNSWEEP_DEBUG=1: exit 3" test $rc -eq 3
check "unwritable, ATTNSWEEP_DEBUG=1: file:line: function" grep -Eq "attnsweep run: .*$place [a-z_]+: .*cannot create the lock file" <<<"$err"

# A refusal: the results file exists.
"$mpiexec" -n 1 "$bin" run "$spec" -o "$tmp/out.h5" -q >/dev/null 2>&1
err=$("$mpiexec" -n 1 "$bin" run "$spec" -o "$tmp/out.h5" -q 2>&1); rc=$?
echo "$err"
check "exists: exit 2" test $rc -eq 2
check "exists: the message alone" grep -q "^attnsweep run: $tmp/out.h5 already exists: pass --resume" <<<"$err"
err=$(ATTNSWEEP_DEBUG=1 "$mpiexec" -n 1 "$bin" run "$spec" -o "$tmp/out.h5" -q 2>&1)
check "exists, ATTNSWEEP_DEBUG=1: file:line" grep -Eq "attnsweep run: .*$place .*already exists" <<<"$err"

# A held lock: another process holds the fcntl lock of OUT.h5.lock.
"$py" - "$tmp/out.h5.lock" "$tmp/held" <<'PY' &
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.ftruncate(fd, 0); os.write(fd, b"pid %d host testhost\n" % os.getpid())
open(sys.argv[2], "w").close()
time.sleep(60)
PY
job=$!
for _ in $(seq 1 100); do [ -e "$tmp/held" ] && break; sleep 0.1; done
err=$("$mpiexec" -n 1 "$bin" run "$spec" -o "$tmp/out.h5" --resume -q 2>&1); rc=$?
echo "$err"
check "busy: exit 3" test $rc -eq 3
check "busy: the message alone" grep -Eq "^attnsweep run: $tmp/out.h5 is in use by another run \(pid [0-9]+ on host testhost\)" <<<"$err"
check "busy: no source location" bash -c "! grep -Eq '$place' <<<\"\$1\"" _ "$err"
kill "$job"; wait "$job" 2>/dev/null; job=

# Bad arguments and a missing spec.
err=$("$mpiexec" -n 1 "$bin" run "$tmp/none.yaml" -o "$tmp/x.h5" 2>&1); rc=$?
echo "$err"
check "missing spec: exit 2" test $rc -eq 2
check "missing spec: names it, no source location" bash -c "grep -q 'attnsweep run: $tmp/none.yaml: cannot read the spec' <<<\"\$1\" && ! grep -Eq '$place' <<<\"\$1\"" _ "$err"
err=$("$bin" status "$tmp/none.h5" 2>&1)
check "status of a missing file: no source location" bash -c "! grep -Eq '$place' <<<\"\$1\"" _ "$err"
exit $fail
