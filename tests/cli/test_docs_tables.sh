#!/usr/bin/env bash
# The generated tables of the docs match their one declaration: the key table of docs/spec.md
# is `attnsweep help keys` (include/attnsweep/params.h) and the field table of docs/results.md
# is `attnsweep help fields` (include/attnsweep/record.h), the theorem table of docs/theory.md is
# `attnsweep help theorems` (src/core/theorem.c), its table of reasons is `attnsweep help
# reasons` (AS_REASON_LIST of include/attnsweep/enums.h: every reason a record can hold, and
# what decides it), the table of combinations of docs/variants.md is `attnsweep help
# combinations` (src/core/rules.c), byte for byte between the markers.
# To refresh the tables: tests/tools/refresh_docs_tables.sh ATTNSWEEP_BINARY.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init docs_tables
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

block() { # block FILE NAME: the lines strictly between <!-- BEGIN NAME... --> and <!-- END NAME -->
  awk -v n="$2" 'index($0, "<!-- END " n " -->") == 1 {p = 0}
                 p {print}
                 index($0, "<!-- BEGIN " n ":") == 1 {p = 1}' "$1"
}

for pair in "keys docs/spec.md" "fields docs/results.md" "theorems docs/theory.md" \
  "reasons docs/theory.md" "combinations docs/variants.md"; do
  read -r topic doc <<<"$pair"
  "$bin" help "$topic" >"$tmp/$topic.gen"
  block "$src/$doc" "$topic" >"$tmp/$topic.doc"
  check "$doc has a generated $topic table" test -s "$tmp/$topic.doc"
  check "$doc's $topic table is \`attnsweep help $topic\`" diff -u "$tmp/$topic.doc" "$tmp/$topic.gen"
done
# The generated key table really comes from the table: one row per key, e.g. perturb.
check "help keys lists perturb with its record field" grep -q '^| `perturb` | v, m, both | v | `perturb` |' "$tmp/keys.gen"
# The reason table holds every label of the enumeration (the results file's enum `reason`).
check "help reasons lists every reason once" test "$(grep -c '^| `' "$tmp/reasons.gen")" -eq "$(grep -c 'X(AS_REASON_' "$src/include/attnsweep/enums.h")"
check "docs/theory.md 2.2 names precision_vars_x" grep -q '^| `precision_vars_x` | unresolved |' "$tmp/reasons.doc"
# The theorem table is the table: one row per theorem, precedence order (d1 before identity).
check "help theorems lists every theorem once" test "$(grep -c '^| `' "$tmp/theorems.gen")" -eq "$("$bin" help theorem_table | wc -l)"
check "help theorems: d1 precedes identity" test "$(grep -n '^| `d1`' "$tmp/theorems.gen" | cut -d: -f1)" -lt "$(grep -n '^| `identity`' "$tmp/theorems.gen" | cut -d: -f1)"
# The combinations table is the rules': the refused pairs of issue 31 are refused by name.
check "help combinations: usa with sinkhorn refused" grep -q '^| `usa` | no: `usa_beta` | no: `usa_sinkhorn` |' "$tmp/combinations.gen"
check "help combinations: per_layer with causal refused" grep -q '^| `per_layer` |.*no: `blocks_base`' "$tmp/combinations.gen"
# docs/architecture.md names every source file, and every file it names exists.
arch="$src/docs/architecture.md"
missing=""
while IFS= read -r f; do
  grep -qF "\`$f\`" "$arch" || missing="$missing $f"
done < <(cd "$src" && ls include/attnsweep/*.h src/*/*.[ch] bench/*.[ch] analysis/*.py analysis/attnsweep/*.py)
check "docs/architecture.md lists every source file (missing:${missing:- none})" test -z "$missing"
gone=""
for f in $(grep -o '`\(src\|include\|bench\|analysis\)/[A-Za-z0-9_/.]*\.\(c\|h\|py\)`' "$arch" | tr -d '`' | sort -u); do
  [ -e "$src/$f" ] || gone="$gone $f"
done
check "every file docs/architecture.md names exists (gone:${gone:- none})" test -z "$gone"
exit $fail
