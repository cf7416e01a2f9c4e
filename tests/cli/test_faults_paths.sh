#!/usr/bin/env bash
# Fault injection, issue 21 points 2, 3 and 6: the user gives odd paths.
#   2  results written over a file the sweep reads (the spec, a matrix file, a spec reached
#      as the .spec or .lock side file through a symlink or a hard link): refused, exit 2,
#      the input byte-identical afterwards;
#   3  a second run on a live file through another name (a symlink, a hard link, a path
#      through a directory symlink): refused, exit 3, and --force through the alias neither
#      truncates the file nor disturbs the first run (which is then stopped: exit 99, and a
#      resume completes it equal to a reference run);
#   6  the one spec reader: a named FIFO is refused by type at once (exit 2, issue 49); the
#      pipe of a command with no writer yet is left at SIGTERM (exit 99 within 3 s), and a
#      process substitution is read like a file (records equal the reference's); a
#      directory and a character device as SPEC are refused with a message
#      without a source path (exit 2), in run and validate alike; a spec over 64 MiB is
#      refused by run as by validate; -o "" and --resume of a missing file leave no side
#      file; results onto a character device are refused (exit 2, no crash).
# Issue 36 point 4: summarize and import-weights refuse an output that is their input (the
#   same name, a symlink, a hard link; -o, --output=, -oFILE, an abbreviation, --png), exit 2,
#   the file byte-identical; run refuses a journal of OUT that is the spec (a hard link).
# Every command runs under `timeout`: a hang fails the test.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init faults_paths
T="timeout -k 2 30"
cd "$tmp" || exit 1

cat >a.yaml <<'EOF'
name: fpaths
seed: 5
replicates: 3
sweep: {vfamily: identity, mfamily: identity, d: [2, 3], n: 8, T: 2, dt: 0.1,
        init: {kind: box, scale: 1}}
EOF
cat >long.yaml <<'EOF'
name: fpaths_long
seed: 5
replicates: 400
flush_interval: 0.1
sweep: {vfamily: identity, mfamily: identity, d: 3, n: 24, T: 80, dt: 0.01,
        init: {kind: box, scale: 3}}
EOF
$T "$bin" run a.yaml -o ref.h5 -q >log 2>&1
check "reference run: exit 0" test $? -eq 0
"$py" - <<'PYEOF'
import h5py, numpy as np
with h5py.File("m.h5", "w") as f:
    f["V"] = np.eye(2)
PYEOF
cat >mat.yaml <<'EOF'
name: fpaths_mat
seed: 5
sweep: {vfamily: file, mfamily: identity, file: m.h5, d: 2, n: 6, T: 1, dt: 0.1,
        init: {kind: box, scale: 1}}
EOF
no_side() { ! ls "$1".* >/dev/null 2>&1; }

# ---- 2: never over an input
cp a.yaml a.keep; cp m.h5 m.keep
err=$($T "$bin" run a.yaml -o a.yaml --force -q 2>&1); rc=$?
check "-o SPEC --force: exit 2 ($rc)" test $rc -eq 2
check "-o SPEC --force: message names the spec" grep -q "refusing to write a.yaml over the spec a.yaml" <<<"$err"
ln m.h5 hard.h5
err=$($T "$bin" run mat.yaml -o hard.h5 --force -q 2>&1); rc=$?
check "-o a hard link of the MATRIX file --force: exit 2 ($rc)" test $rc -eq 2
check "...the message names the input" grep -q "over input .*m.h5" <<<"$err"
ln -s a.yaml s.h5.lock
err=$($T "$bin" run a.yaml -o s.h5 -q 2>&1); rc=$?
check "OUT.lock is a symlink to the spec: exit 2 ($rc)" test $rc -eq 2
check "the spec and the matrix file are intact" bash -c "cmp -s a.yaml a.keep && cmp -s m.h5 m.keep"
check "no results file was made" bash -c "! test -e s.h5"

# issue 36 point 4: no command writes over its input, by any name (device and inode)
cp ref.h5 ref.keep; ln -s ref.h5 ref_sym.h5; ln ref.h5 ref_hard.h5
for o in "-o ref.h5" "--output=ref_sym.h5" "-oref_hard.h5" "--out ref.h5" "--png ref_sym.h5"; do
  # shellcheck disable=SC2086
  err=$($T "$bin" summarize ref.h5 $o 2>&1); rc=$?
  check "summarize ref.h5 $o: exit 2 ($rc), says so" \
    bash -c "test $rc -eq 2 && grep -q 'refusing to write ref[_a-z]*.h5 over the input ref.h5' <<<\"\$1\"" _ "$err"
done
err=$($T "$bin" import-weights ref.h5 -o ref_hard.h5 2>&1); rc=$?
check "import-weights CKPT -o (a hard link of CKPT): exit 2 ($rc)" \
  bash -c "test $rc -eq 2 && grep -q 'refusing to write ref_hard.h5 over the input ref.h5' <<<\"\$1\"" _ "$err"
check "...the results file is byte-identical" cmp -s ref.h5 ref.keep
ln a.yaml j.h5.journal.0
err=$($T "$bin" run a.yaml -o j.h5 --force -q 2>&1); rc=$?
check "-o OUT whose journal is a hard link of the spec, --force: exit 2 ($rc), the spec kept" \
  bash -c "test $rc -eq 2 && grep -q 'refusing to write .*j.h5.journal.0 over the spec a.yaml' <<<\"\$1\" && cmp -s a.yaml a.keep" _ "$err"

# ---- 3: one run per file, whatever its name
"$mpiexec" -n 2 "$bin" run long.yaml -o live.h5 -q >first.log 2>&1 &
job=$!
watchdog 60 "$job" # a hang fails the test (exit 137 below)
up=0
for _ in $(seq 1 300); do
  "$bin" status live.h5 2>/dev/null | grep -q "state: running" && { up=1; break; }
  sleep 0.03
done
check "the first run is running" test $up -eq 1
ln -s live.h5 alias.h5; ln live.h5 hlink.h5; mkdir sub; ln -s "$tmp" dlink
size0=$(stat -c %s live.h5)
for m in "alias.h5 --force" "hlink.h5 --force" "dlink/live.h5 --resume"; do
  read -r o mode <<<"$m"
  err=$($T "$bin" run long.yaml -o "$o" "$mode" -q 2>&1); rc=$?
  check "$mode via $o: exit 3 ($rc)" bash -c "test $rc -eq 3 && grep -q 'in use by another run' <<<'$err'"
done
check "the refusals via the symlink made no side file of its own" no_side alias.h5
err=$($T "$bin" repair hlink.h5 2>&1); rc=$?
check "repair via the hard link: exit 3 ($rc)" test $rc -eq 3
check "the live file was not truncated" test "$(stat -c %s live.h5)" -ge "$size0"
check "the first run is undisturbed" kill -0 "$job"
kill -USR1 "$job"; wait "$job"; rc=$?; job=
watchdog_stop
check "the first run drains on SIGUSR1: exit 99 ($rc)" test $rc -eq 99

# ---- 6: the one spec reader
# A named FIFO is refused by its type at once (issue 49: one without a writer kept run waiting
# until a signal); the pipe of a command is read, and while it waits for its writer a SIGTERM
# ends it: exit 99 within 3 s.
mkfifo ff
err=$($T "$bin" run ff -o fifo.h5 -q 2>&1); rc=$?
check "named FIFO as SPEC: exit 2 at once, refused by type ($rc: $err)" \
  bash -c "test $rc -eq 2 && grep -q 'ff: cannot read the spec: it is a FIFO (named pipe), not a regular file' <<<\"\$1\"" _ "$err"
check "named FIFO as SPEC: nothing made" bash -c "! test -e fifo.h5 && ! ls fifo.h5.* >/dev/null 2>&1"
"$bin" run <(exec sleep 60 2>/dev/null) -o fifo.h5 -q >fifo.log 2>&1 &
pid=$!
watchdog 40 "$pid" # a hang fails the test (exit 137)
for _ in $(seq 1 400); do # until it waits on the pipe (its spec read polls it)
  grep -q 'poll' "/proc/$pid/wchan" 2>/dev/null && break
  sleep 0.05
done
start=$(date +%s.%N)
kill -TERM "$pid"; wait "$pid"; rc=$?
watchdog_stop
el=$(echo "$(date +%s.%N) - $start" | bc)
check "pipe without writer: SIGTERM gives exit 99 ($rc) in $el s" bash -c "test $rc -eq 99 && (( \$(echo '$el < 3' | bc) ))"
check "pipe without writer: nothing made" bash -c "! test -e fifo.h5 && no_side() { ! ls \"\$1\".* >/dev/null 2>&1; }; no_side fifo.h5"
$T "$bin" run <(cat a.yaml) -o subst.h5 -q >log 2>&1
check "process substitution: exit 0" test $? -eq 0
check "process substitution: records equal the reference" "$py" "$tools/compare_results.py" ref.h5 subst.h5 --require-complete
# run and validate share the reader: run is checked once (a directory), validate for each
truncate -s 65M big.yaml
for cmd in "run sub" "validate sub" "validate /dev/zero" "run big.yaml" "validate big.yaml"; do
  read -r c f <<<"$cmd"
  o=(); [ "$c" = run ] && o=(-o d.h5 -q)
  case $f in
    sub) want='sub: cannot read the spec: it is a directory' ;;
    /dev/zero) want='not a regular file or a pipe (a character device)' ;;
    *) want='larger than 64 MiB' ;;
  esac
  err=$($T "$bin" "$c" "$f" "${o[@]}" 2>&1); rc=$?
  check "$c of $f: exit 2 ($rc), '$want', no source path" \
    bash -c "test $rc -eq 2 && grep -qF '$want' <<<'$err' && ! grep -q '\.c:' <<<'$err'"
done
rm -f big.yaml
mkdir empty; cd empty || exit 1
err=$($T "$bin" run ../a.yaml -o "" -q 2>&1); rc=$?
check "-o \"\": exit 2 ($rc), no side file" bash -c "test $rc -eq 2 && test -z \"\$(ls -A)\""
err=$($T "$bin" run -o nosuch.h5 --resume -q 2>&1); rc=$?
check "--resume without SPEC of a missing file: exit 2 ($rc), no side file" bash -c "test $rc -eq 2 && test -z \"\$(ls -A)\""
cd .. || exit 1
mknod chr c 1 3 2>/dev/null || cp -a /dev/null chr
err=$($T "$bin" run a.yaml -o chr --force -q 2>&1); rc=$?
check "--force onto a character device: exit 2 ($rc), refused" \
  bash -c "test $rc -eq 2 && grep -q 'not a regular file (a character device)' <<<'$err'"
check "...and no side file" no_side chr
exit $fail
