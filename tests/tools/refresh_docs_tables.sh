#!/usr/bin/env bash
# Rewrite the generated tables of the docs from their one declaration (the inverse of
# tests/cli/test_docs_tables.sh): between <!-- BEGIN TOPIC: ... --> and <!-- END TOPIC --> each
# doc gets the output of `attnsweep help TOPIC`.
# usage: tests/tools/refresh_docs_tables.sh ATTNSWEEP_BINARY
set -euo pipefail
bin=${1:?usage: refresh_docs_tables.sh ATTNSWEEP_BINARY}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for pair in "keys docs/spec.md" "fields docs/results.md" "theorems docs/theory.md" \
  "reasons docs/theory.md" "combinations docs/variants.md"; do
  read -r topic doc <<<"$pair"
  gen=$(mktemp)
  "$bin" help "$topic" >"$gen"
  awk -v n="$topic" -v gen="$gen" '
    index($0, "<!-- END " n " -->") == 1 { while ((getline l < gen) > 0) print l; p = 0 }
    !p { print }
    index($0, "<!-- BEGIN " n ":") == 1 { p = 1 }' "$root/$doc" >"$root/$doc.new"
  mv "$root/$doc.new" "$root/$doc"
  rm -f "$gen"
done
