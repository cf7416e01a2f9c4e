#!/usr/bin/env bash
# attnsweep validate / plan: every example spec validates (exit 0, one line); broken specs exit 2
# and print every problem as SPEC:LINE:COL: message.
set -euo pipefail
: "${ATTNSWEEP:?set ATTNSWEEP to the attnsweep binary}"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1" >&2; fail=1; fi; }

# The examples' structure (their matrix files need not exist here: --no-files).
n=0
for f in "$src"/jobs/examples/*.yaml; do
  out=$("$ATTNSWEEP" validate --no-files "$f" 2>&1) && rc=0 || rc=$?
  check "$f validates (rc $rc: $out)" '[ $rc -eq 0 ]'
  check "$f: one summary line" '[ "$(printf "%s\n" "$out" | wc -l)" -eq 1 ] && [[ $out == *"valid:"* ]]'
  n=$((n + 1))
done
check "examples found" '[ $n -ge 9 ]'

# Files a spec reads are loaded by validate: missing -> exit 2 naming the file and the trial;
# present and well-shaped -> valid; a d that does not match the file -> exit 2.
cp "$src/jobs/examples/from_file_small.yaml" "$tmp/"
out=$(cd "$tmp" && "$ATTNSWEEP" validate from_file_small.yaml 2>&1) && rc=0 || rc=$?
check "missing matrix file: exit 2 ($rc)" '[ $rc -eq 2 ]'
check "missing matrix file named with its trial ($out)" \
  '[[ $out == *"example_matrices.h5"* && $out == *"trial 0"* ]]'
(cd "$tmp" && /usr/bin/python3 "$src/jobs/make_example_matrices.py" >/dev/null)
out=$(cd "$tmp" && "$ATTNSWEEP" validate from_file_small.yaml 2>&1) && rc=0 || rc=$?
check "matrix file present: valid ($rc: $out)" '[ $rc -eq 0 ] && [[ $out == *"valid:"* ]]'
sed 's/^  d: 64$/  d: 32/' "$tmp/from_file_small.yaml" >"$tmp/wrong_d.yaml"
check "wrong_d.yaml differs from the example" '! cmp -s "$tmp/wrong_d.yaml" "$tmp/from_file_small.yaml"'
out=$(cd "$tmp" && "$ATTNSWEEP" validate wrong_d.yaml 2>&1) && rc=0 || rc=$?
check "matrix file of another d: exit 2 ($rc: $out)" '[ $rc -eq 2 ]'

# Broken spec: several problems, all reported, each as SPEC:LINE:COL.
cat > "$tmp/bad.yaml" <<'YAML'
name: bad
sed: 3
sweep:
  vfamily: identiy
  d: [2, 3]
  n: []
  zip:
    - {T: [1, 2]}
    - {dt: [0.1, 0.2, 0.3]}
YAML
out=$("$ATTNSWEEP" validate "$tmp/bad.yaml" 2>&1) && rc=0 || rc=$?
check "bad spec exits 2 (got $rc)" '[ $rc -eq 2 ]'
check "unknown key with did-you-mean" 'grep -q "^$tmp/bad.yaml:2:1: unknown key .sed.*did you mean .seed." <<<"$out"'
check "bad label" 'grep -q "^$tmp/bad.yaml:4:12: vfamily: unknown value .identiy." <<<"$out"'
check "empty axis" 'grep -q "^$tmp/bad.yaml:6:6: n: empty axis" <<<"$out"'
check "zip lengths" 'grep -q "^$tmp/bad.yaml:9:7: zip: lengths differ" <<<"$out"'

printf 'sweep: {d: [2, 3}\n' > "$tmp/syntax.yaml"
out=$("$ATTNSWEEP" validate "$tmp/syntax.yaml" 2>&1) && rc=0 || rc=$?
check "syntax error exits 2" '[ $rc -eq 2 ]'
check "syntax error place" 'grep -q "^$tmp/syntax.yaml:1:17: YAML syntax error" <<<"$out"'

out=$("$ATTNSWEEP" validate "$tmp/missing.yaml" 2>&1) && rc=0 || rc=$?
check "missing file exits 2" '[ $rc -eq 2 ] && grep -q "cannot open" <<<"$out"'
out=$("$ATTNSWEEP" validate 2>&1) && rc=0 || rc=$?
check "no SPEC is a usage error" '[ $rc -eq 2 ]'

# plan: tables and an estimate for an example.
out=$("$ATTNSWEEP" plan "$src/jobs/examples/identity.yaml" 2>&1) && rc=0 || rc=$?
check "plan exits 0 (rc $rc)" '[ $rc -eq 0 ]'
check "plan case table" 'grep -q "^| identity | 2 | 40 |" <<<"$out"'
check "plan axis table" 'grep -q "^| identity_spd | m_cond | 2 | 40 |" <<<"$out"'
check "plan estimate" 'grep -q "core-hours" <<<"$out" && grep -q "suggested" <<<"$out"'
out=$("$ATTNSWEEP" plan "$tmp/bad.yaml" 2>&1) && rc=0 || rc=$?
check "plan of a bad spec exits 2" '[ $rc -eq 2 ]'

[ $fail -eq 0 ] && echo "test_validate: ok"
exit $fail
