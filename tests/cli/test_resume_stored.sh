#!/usr/bin/env bash
# `run -o OUT.h5 --resume` without SPEC resumes with the spec stored with OUT.h5 (its .spec
# copy, or /spec when the copy is gone), not the built-in default; `status` of a stopped sweep
# prints a real resume command (no literal SPEC), and that command completes the sweep with the
# records of an uninterrupted run.
set -u
source "$(dirname "$0")/lib.sh"
as_test_init resume_stored
cd "$tmp" || exit 1

slow_spec stored 21 >"$tmp/spec.yaml"
# Stop early: a time limit shorter than the sweep leaves trials pending (exit 99).
"$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/s2.h5" -q --time-limit 0.05 >"$tmp/a.log" 2>&1; rc=$?
check "first segment stopped early: exit 99 ($rc)" test $rc -eq 99
[ $rc -eq 99 ] || cat "$tmp/a.log"
st=$("$bin" status "$tmp/s2.h5" 2>&1)
echo "$st" | grep state
check "status: no literal SPEC" bash -c "! grep -q 'run SPEC' <<<\"\$1\"" _ "$st"
check "status: the stored-spec resume command" grep -q "resume: attnsweep run -o $tmp/s2.h5 --resume" <<<"$st"

rm -f "$tmp/s2.h5.spec" # the copy gone: /spec is read
err=$("$mpiexec" -n 2 "$bin" run -o "$tmp/s2.h5" --resume 2>&1); rc=$?
echo "$err" | grep -v "^--\|^ \|^$\|mpiexec\|Primary\|a non-zero"
check "resume without SPEC: exit 0 ($rc)" test $rc -eq 0
check "resume without SPEC: the stored spec, named" grep -q "stored: 30 trials on 2 ranks .*(resume, with the spec stored in the file)" <<<"$err"
check "resume without SPEC: no spec-change refusal" bash -c "! grep -q allow-spec-change <<<\"\$1\"" _ "$err"
"$mpiexec" -n 1 "$bin" run "$tmp/spec.yaml" -o "$tmp/ref.h5" -q >/dev/null 2>&1
check "resumed file equals an uninterrupted run" "$py" "$tools/compare_results.py" "$tmp/ref.h5" "$tmp/s2.h5" --require-complete

# spec_name naming a readable file: status prints it.
cp "$tmp/spec.yaml" "$tmp/stored"
"$mpiexec" -n 2 "$bin" run "$tmp/spec.yaml" -o "$tmp/s3.h5" -q --time-limit 0.05 >/dev/null 2>&1; rc=$?
if [ $rc -eq 99 ]; then
  st=$(cd "$tmp" && "$bin" status s3.h5 2>&1)
  check "status: the spec file named by spec_name" grep -q "resume: attnsweep run stored -o s3.h5 --resume" <<<"$st"
fi
exit $fail
