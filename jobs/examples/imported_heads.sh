#!/usr/bin/env bash
# Trained weights end to end (docs/weights.md): checkpoint -> triples -> census -> sweep.
# usage: jobs/examples/imported_heads.sh DIR
# Writes into DIR: the BERT-style test checkpoint of make_test_checkpoint.py (2 layers x 4 heads,
# d = 64), imported_heads.h5 (import-weights), the census tables (markdown, CSV), and the sweep
# imported_small.yaml over the 8 heads -> imported_small.h5, then prints census and summary.
# Environment: ATTNSWEEP (default: attnsweep on PATH), MPIEXEC (mpiexec), RANKS (2).
# For a real checkpoint: `attnsweep import-weights CKPT -o heads.h5`, `attnsweep census heads.h5`,
# and a spec like from_file.yaml with its d, m_rows (= d_k) and file_index.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:?usage: imported_heads.sh DIR}
bin=${ATTNSWEEP:-attnsweep}
mpiexec=${MPIEXEC:-mpiexec}
ranks=${RANKS:-2}
mkdir -p "$dir"
/usr/bin/python3 "$here/make_test_checkpoint.py" "$dir/test_checkpoint"
"$bin" import-weights "$dir/test_checkpoint" -o "$dir/imported_heads.h5"
"$bin" census "$dir/imported_heads.h5" -o "$dir/census.md"
"$bin" census "$dir/imported_heads.h5" --csv -o "$dir/census.csv" 2>/dev/null
cat "$dir/census.md"
cp "$here/imported_small.yaml" "$dir/"
cd "$dir"
"$mpiexec" -n "$ranks" "$bin" run imported_small.yaml -o imported_small.h5
"$bin" summarize imported_small.h5
