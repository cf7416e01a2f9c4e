#!/usr/bin/env bash
# plan_accuracy.sh: `attnsweep plan`'s predicted CPU time of a one-rank run (default cost
# model, no --calibrate) against the measured CPU time (user + sys, /usr/bin/time) of
# `attnsweep run` on one rank, for every spec of jobs/examples (issue 37). Prints one row per
# spec: predicted s, measured s, predicted / measured. CPU time, not wall time: the machine
# may be shared.
#   ATTNSWEEP=build/x/attnsweep bench/plan_accuracy.sh [SPEC.yaml ...]
# Specs that read matrices or checkpoints get them made first in a scratch directory
# (jobs/make_example_matrices.py, jobs/examples/make_test_checkpoint.py + import-weights);
# from_file.yaml runs at the small size of tests/cli/test_census.sh (d = 64 ALBERT heads of
# the test checkpoint instead of d = 2048), as a real ALBERT checkpoint is not available here.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${ATTNSWEEP:-$src/build/h/attnsweep}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
py=${PYTHON:-/usr/bin/python3}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$py" "$src/jobs/make_example_matrices.py" >/dev/null
"$py" "$src/jobs/examples/make_test_checkpoint.py" test_checkpoint >/dev/null
"$bin" import-weights test_checkpoint -o imported_heads.h5 >/dev/null
"$py" "$src/jobs/examples/make_test_checkpoint.py" albert --albert >/dev/null 2>&1
"$bin" import-weights albert -o albert_heads.h5 >/dev/null
if [ $# -gt 0 ]; then specs=("$@"); else specs=("$src"/jobs/examples/*.yaml); fi
printf '| spec | trials | predicted CPU s | measured CPU s | predicted / measured |\n'
printf '|---|---:|---:|---:|---:|\n'
worst=1
for spec in "${specs[@]}"; do
  name=$(basename "$spec" .yaml)
  sets=()
  if [ "$name" = from_file ]; then sets=(--set d=64 --set m_rows=16); fi
  cp "$spec" "$tmp/$name.yaml"
  plan=$("$bin" plan "$name.yaml" "${sets[@]}" 2>&1) || {
    echo "| $name | plan failed: $(tail -n 1 <<<"$plan") | | | |"
    continue
  }
  pred=$(sed -n 's/^one-rank run: about \([0-9.e+-]*\) CPU seconds.*/\1/p' <<<"$plan")
  trials=$(sed -n 's/^\([0-9]*\) trials = .*/\1/p' <<<"$plan")
  rm -f "$name.h5"
  if ! /usr/bin/time -f '%U %S' -o time.txt "$bin" run "$name.yaml" "${sets[@]}" -o "$name.h5" \
    >run.log 2>&1; then
    echo "| $name | run failed: $(tail -n 1 run.log) | | | |"
    continue
  fi
  meas=$(awk '{printf "%.3f", $1 + $2}' time.txt)
  ratio=$(awk -v p="$pred" -v m="$meas" 'BEGIN { printf "%.2f", p / m }')
  printf '| %s | %s | %.3g | %s | %s |\n' "$name" "$trials" "$pred" "$meas" "$ratio"
  rm -f "$name.h5" "$name.h5".journal.*
done
