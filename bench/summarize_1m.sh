#!/usr/bin/env bash
# `attnsweep summarize` and `attnsweep report` on a merged results file of 10^6 trials (issue
# 48: each within 60 s and 4 GB): builds the file in the results layout from a small real sweep
# of the binary (analysis/bench_summarize.py says how), runs both commands through the binary
# and prints the machine, then each command's wall time and peak resident memory.
#   ATTNSWEEP=build/rel/attnsweep bash bench/summarize_1m.sh [--rows N] [--keep FILE] [--in-process]
# Figures for a quiet machine: docs/analysis.md, "Speed". tests/cli/test_bench_scripts.sh runs
# it at 2,000 rows.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${ATTNSWEEP:?set ATTNSWEEP to the attnsweep binary}"
export ATTNSWEEP OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
exec /usr/bin/python3 "$src/analysis/bench_summarize.py" --binary "$ATTNSWEEP" "$@"
