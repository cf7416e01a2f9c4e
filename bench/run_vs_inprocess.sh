#!/usr/bin/env bash
# run_vs_inprocess.sh: `attnsweep run` on one rank against the same kind of trials in process.
#
# usage: bench/run_vs_inprocess.sh ATTNSWEEP [TRIALS]   (default 16000)
#
# The paper's setting (n = 20, d = 2, V = Q = K = I, tokens uniform on [-5, 5]^2, T = 5, RK4
# dt = 0.1) as `replicates` TRIALS and as 4,000 replicates, no output beyond the records.
# Prints the CPU seconds (user + sys, /usr/bin/time) of each run, the run's rate over the whole
# run and at the margin (TRIALS - 4000 trials / the difference: start-up, the file's creation
# and the closing checks left out), then `attnsweep bench trials`' in-process batched rate of
# the same process (the worker's path) and the ratios. One core: OpenBLAS pinned to one thread.
set -euo pipefail
bin=$1
trials=${2:-16000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
spec() { # replicates
  cat <<SPEC
name: run_vs_inprocess
seed: 1
replicates: $1
sweep:
  vfamily: identity
  mfamily: identity
  n: 20
  d: 2
  T: 5
  dt: 0.1
  method: rk4
  init: {kind: box, scale: 5}
SPEC
}
cpu_of() { # replicates -> CPU seconds of `attnsweep run` on one rank
  spec "$1" >"$dir/s$1.yaml"
  rm -f "$dir/r$1.h5"*
  /usr/bin/time -f "%U %S" -o "$dir/t$1" "$bin" run "$dir/s$1.yaml" -o "$dir/r$1.h5" >/dev/null
  awk '{printf "%.3f", $1 + $2}' "$dir/t$1"
}
small=$(cpu_of 4000)
big=$(cpu_of "$trials")
inproc=$("$bin" bench trials | sed -n 's/.* \([0-9][0-9]*\) trials\/s batched.*/\1/p')
awk -v s="$small" -v b="$big" -v n="$trials" -v ip="$inproc" 'BEGIN {
  whole = n / b; margin = (n - 4000) / (b - s);
  printf "run, 4000 trials: %.2f s CPU; run, %d trials: %.2f s CPU\n", s, n, b;
  printf "run: %.0f trials/s over the whole run, %.0f trials/s at the margin\n", whole, margin;
  printf "in process (bench trials, batched): %s trials/s\n", ip;
  printf "run / in process: %.0f%% whole run, %.0f%% at the margin (target >= 90%%)\n",
         100 * whole / ip, 100 * margin / ip }'
