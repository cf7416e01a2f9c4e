#!/usr/bin/env bash
# Relative input files of a spec (matrix `file:`, token file `init: {file: ...}`) resolve against
# the spec file's directory: validate, run and reproduce work from another working directory,
# the provenance (input_sha256) names the resolved paths, the labels stay as written, and a
# reproduce whose input file is gone says so in one line with exit 2.
set -euo pipefail
: "${ATTNSWEEP:?set ATTNSWEEP to the attnsweep binary}"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1" >&2; fail=1; fi; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1

mkdir -p "$tmp/proj/data" "$tmp/elsewhere"
(cd "$tmp/proj/data" && $py "$src/jobs/make_example_matrices.py" >/dev/null)
mv "$tmp/proj/data/example_matrices.h5" "$tmp/proj/data/m.h5"
cp "$tmp/proj/data/m.h5" "$tmp/proj/data/t.h5"
cat >"$tmp/proj/s.yaml" <<'YAML'
name: paths
seed: 3
sweep:
  vfamily: file
  mfamily: file
  file: data/m.h5
  file_index: 0
  m_rows: 16
  d: 64
  n: 32
  T: 1
  dt: 0.05
  init: [{kind: gauss, scale: 1}, {kind: file, file: data/t.h5, dataset: start}]
YAML
cd "$tmp/elsewhere"
out=$("$ATTNSWEEP" validate ../proj/s.yaml 2>&1) && rc=0 || rc=$?
check "validate from another directory: exit 0 ($rc: $out)" '[ $rc -eq 0 ]'
out=$("$ATTNSWEEP" run ../proj/s.yaml -o r.h5 -q 2>&1) && rc=0 || rc=$?
check "run from another directory: exit 0 ($rc: $out)" '[ $rc -eq 0 ]'
read -r outcomes inputs labels < <($py - r.h5 <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    names = h5py.check_enum_dtype(f["trials"].dtype["outcome"]) or {}
    inv = {v: k for k, v in names.items()}
    oc = ",".join(sorted({inv.get(int(o), str(o)) for o in t["outcome"]}))
    inp = f.attrs["input_sha256"]
    inp = inp.decode() if isinstance(inp, bytes) else inp
    paths = "|".join(l.split("  ", 1)[1] for l in inp.strip().splitlines())
    lab = []
    for k in ("file", "init_file"):
        e = h5py.check_enum_dtype(f["trials"].dtype[k])
        lab += sorted(n for n in (e or {}) if n != "-")
    print(oc, paths, "|".join(lab))
PY
)
check "both trials ran (outcomes: $outcomes)" '[[ $outcomes != *failed* && -n $outcomes ]]'
check "input_sha256 names the resolved paths ($inputs)" \
  '[ "$inputs" = "$tmp/proj/data/m.h5|$tmp/proj/data/t.h5" ]'
check "the labels stay as written ($labels)" '[ "$labels" = "data/m.h5|data/t.h5" ]'
sums=$($py - r.h5 <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    v = f.attrs["input_sha256"]
    print(v.decode() if isinstance(v, bytes) else v, end="")
PY
)
check "input_sha256 is sha256sum -c compatible" '(cd / && sha256sum -c --quiet <<<"$sums")'
# reproduce from a third directory. Without `name:` the spec_name attribute is the spec's path
# as given to run (../proj/s2.yaml, which names the spec from third/ too): its directory.
mkdir -p "$tmp/third"
sed '/^name:/d' "$tmp/proj/s.yaml" >"$tmp/proj/s2.yaml"
"$ATTNSWEEP" run ../proj/s2.yaml -o r2.h5 -q >/dev/null 2>&1 && rc=0 || rc=$?
check "run of the unnamed spec: exit 0 ($rc)" '[ $rc -eq 0 ]'
cd "$tmp/third"
for i in 0 1; do
  out=$("$ATTNSWEEP" reproduce ../elsewhere/r2.h5 $i 2>&1) && rc=0 || rc=$?
  check "reproduce trial $i from a third directory: identical ($rc: $out)" \
    '[ $rc -eq 0 ] && grep -q "^identical" <<<"$out"'
done
# A results file beside its inputs: spec_name is no file, so the results file's directory.
cp "$tmp/elsewhere/r.h5" "$tmp/proj/r.h5"
out=$("$ATTNSWEEP" reproduce ../proj/r.h5 1 2>&1) && rc=0 || rc=$?
check "reproduce resolves against the results file's directory ($rc: $out)" \
  '[ $rc -eq 0 ] && grep -q "^identical" <<<"$out"'
# The token file gone: one line naming it, exit 2.
mv "$tmp/proj/data/t.h5" "$tmp/proj/data/t.h5.away"
out=$("$ATTNSWEEP" reproduce ../elsewhere/r2.h5 1 2>&1) && rc=0 || rc=$?
check "reproduce with a missing token file: exit 2 ($rc)" '[ $rc -eq 2 ]'
check "one line naming the file ($out)" \
  '[ "$(wc -l <<<"$out")" -eq 1 ] && [[ $out == *"$tmp/proj/data/t.h5"* ]] && [[ $out != *differ* ]]'
exit $fail
