#!/usr/bin/env bash
# The command line's contract: --version names the tool, git revision and library versions;
# --help and `help CMD` describe the commands; unknown commands and options exit 2 with usage;
# a malformed ATTNSWEEP_BLAS_THREADS stops any command at start-up with exit 2.
set -u
bin=${ATTNSWEEP:?ATTNSWEEP must point at the attnsweep binary}
fail=0
check() { # check DESCRIPTION CONDITION...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

out=$("$bin" --version); rc=$?
check "--version exits 0" test $rc -eq 0
for word in "attnsweep" "git" "MPI:" "HDF5:" "libyaml:" "BLAS:"; do
  check "--version mentions $word" grep -q "$word" <<<"$out"
done
check "--version shows the HDF5 library is parallel" grep -q "parallel" <<<"$out"
check "--version shows a git revision" grep -Eq "git [0-9a-f]{7,}|git unknown" <<<"$out"

out=$("$bin" --help); rc=$?
check "--help exits 0" test $rc -eq 0
for cmd in validate plan run status summarize report reproduce repair; do
  check "--help lists $cmd" grep -q "^  $cmd" <<<"$out"
  h=$("$bin" help "$cmd"); rc=$?
  check "help $cmd exits 0 and shows its usage" bash -c "[ $rc -eq 0 ] && grep -q 'usage: .*attnsweep $cmd' <<<\"\$0\"" "$h"
done

err=$("$bin" frobnicate 2>&1 >/dev/null); rc=$?
check "unknown command exits 2" test $rc -eq 2
check "unknown command prints usage" grep -q "usage: attnsweep" <<<"$err"
check "unknown command is named" grep -q "frobnicate" <<<"$err"

err=$("$bin" --frobnicate 2>&1 >/dev/null); rc=$?
check "unknown option exits 2" test $rc -eq 2
check "unknown option is named" grep -q -- "--frobnicate" <<<"$err"

"$bin" >/dev/null 2>&1; rc=$?
check "no command exits 2" test $rc -eq 2
"$bin" help frobnicate >/dev/null 2>&1; rc=$?
check "help for an unknown command exits 2" test $rc -eq 2

# Every process pins its BLAS threads at start-up (docs/scheduling.md): a malformed override
# stops any command there, exit 2, naming the variable.
spec=$(mktemp /tmp/as_basics_XXXXXX.yaml)
trap 'rm -f "$spec"' EXIT
printf 'sweep: {vfamily: identity, mfamily: identity, d: 2, n: 4, T: 1}\n' >"$spec"
err=$(ATTNSWEEP_BLAS_THREADS=two "$bin" validate "$spec" 2>&1 >/dev/null); rc=$?
check "ATTNSWEEP_BLAS_THREADS=two exits 2" test $rc -eq 2
check "ATTNSWEEP_BLAS_THREADS=two is named" grep -q "ATTNSWEEP_BLAS_THREADS = 'two'" <<<"$err"
ATTNSWEEP_BLAS_THREADS=2 "$bin" validate "$spec" >/dev/null 2>&1; rc=$?
check "ATTNSWEEP_BLAS_THREADS=2 is accepted" test $rc -eq 0

exit $fail
