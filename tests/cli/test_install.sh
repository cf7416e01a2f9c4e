#!/usr/bin/env bash
# The installed layout (issue 48, fault 8): `cmake --install` puts the binary in PREFIX/bin and
# the analysis and the Slurm job template in PREFIX/share/attnsweep, and an installed binary
# (moved elsewhere with its prefix, as a copied tree would be) uses those, not the source tree
# it was built from, whose path is compiled in; `attnsweep --version` says which it uses. The
# build tree's binary keeps its source tree, and ATTNSWEEP_ANALYSIS_DIR / ATTNSWEEP_JOBS_DIR
# win over both.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
as_test_init install
build=$(dirname "$bin")

out=$(cmake --install "$build" --prefix "$tmp/prefix" 2>&1); rc=$?
check "cmake --install into a temporary prefix (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || { echo "$out"; exit 1; }
check "the binary is PREFIX/bin/attnsweep" test -x "$tmp/prefix/bin/attnsweep"
check "the analysis is PREFIX/share/attnsweep/analysis" \
  test -f "$tmp/prefix/share/attnsweep/analysis/attnsweep_summarize.py" -a \
  -f "$tmp/prefix/share/attnsweep/analysis/attnsweep/rule.py" -a \
  -f "$tmp/prefix/share/attnsweep/analysis/attnsweep/templates/report.html.j2"
check "the job template is PREFIX/share/attnsweep/jobs/attnsweep.sbatch" \
  test -f "$tmp/prefix/share/attnsweep/jobs/attnsweep.sbatch"
check "no bytecode or build leftovers are installed" \
  test -z "$(find "$tmp/prefix/share/attnsweep" -name __pycache__ -o -name '*.egg-info')"

# The prefix moved elsewhere: the compiled-in install prefix and source tree both differ from
# where the binary now is.
mv "$tmp/prefix" "$tmp/moved"
moved=$(cd "$tmp/moved" && pwd -P)
ver=$("$moved/bin/attnsweep" --version); rc=$?
check "--version of the moved binary exits 0" test $rc -eq 0
check "--version names the installed analysis ($(grep analysis: <<<"$ver"))" \
  grep -qF "analysis: $moved/share/attnsweep/analysis (installed beside the executable)" <<<"$ver"
check "--version names the installed job template" \
  grep -qF "jobs:     $moved/share/attnsweep/jobs/attnsweep.sbatch (installed beside the executable)" <<<"$ver"
ver=$("$bin" --version)
srcreal=$(cd "$src" && pwd -P)
check "the build tree's binary names its source tree ($(grep analysis: <<<"$ver"))" \
  grep -qF "analysis: $srcreal/analysis (the source tree it was built from)" <<<"$ver"
ver=$(ATTNSWEEP_ANALYSIS_DIR=$moved/share/attnsweep/analysis "$bin" --version)
check "ATTNSWEEP_ANALYSIS_DIR wins" grep -qF "analysis: $moved/share/attnsweep/analysis (ATTNSWEEP_ANALYSIS_DIR)" <<<"$ver"

# The installed copy, marked: summarize and report run it, plan --sbatch renders it.
sed -i '1a import sys; sys.stderr.write("INSTALLED-ANALYSIS\\n")' \
  "$moved/share/attnsweep/analysis/attnsweep_summarize.py"
sed -i '1a # INSTALLED-TEMPLATE' "$moved/share/attnsweep/jobs/attnsweep.sbatch"
cat >"$tmp/s.yaml" <<'YAML'
name: install
seed: 1
replicates: 2
sweep: {vfamily: identity, mfamily: identity, d: 2, n: 6, T: 2}
YAML
(cd "$tmp" && "$moved/bin/attnsweep" run s.yaml -o r.h5 >/dev/null 2>&1)
check "the moved binary runs a sweep" test -s "$tmp/r.h5"
err=$(cd "$tmp" && "$moved/bin/attnsweep" summarize r.h5 2>&1 >/dev/null); rc=$?
check "summarize of the moved binary runs the installed analysis (exit $rc)" \
  bash -c '[ "$1" -eq 0 ] && grep -q INSTALLED-ANALYSIS <<<"$2"' _ "$rc" "$err"
err=$(cd "$tmp" && "$bin" summarize r.h5 2>&1 >/dev/null)
check "summarize of the build tree's binary runs the source tree's" \
  bash -c '! grep -q INSTALLED-ANALYSIS <<<"$1"' _ "$err"
out=$(cd "$tmp" && "$moved/bin/attnsweep" report r.h5 -o r.html 2>&1); rc=$?
check "report of the moved binary writes its page (exit $rc)" test $rc -eq 0 -a -s "$tmp/r.html"
script=$(cd "$tmp" && "$moved/bin/attnsweep" plan s.yaml --sbatch 2>/dev/null); rc=$?
check "plan --sbatch of the moved binary renders the installed template (exit $rc)" \
  grep -q INSTALLED-TEMPLATE <<<"$script"
exit $fail
