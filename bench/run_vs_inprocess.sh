#!/usr/bin/env bash
# run_vs_inprocess.sh: `attnsweep run` on one rank against the same kind of trials in process.
#
# usage: bench/run_vs_inprocess.sh ATTNSWEEP [TRIALS] [PAIRS]   (defaults 16000 and 3)
#
# The paper's setting (n = 20, d = 2, V = Q = K = I, tokens uniform on [-5, 5]^2, T = 5, RK4
# dt = 0.1) as `replicates` TRIALS and as 4,000 replicates, no output beyond the records.
# PAIRS times in turn: the CPU seconds (user + sys of the process, from wait4, to the
# microsecond) of each run, the run's rate over the whole run and at the margin (TRIALS - 4000
# trials / the difference: start-up, the file's creation and the closing checks left out),
# and `attnsweep bench trials`' in-process batched rate of the same process (the worker's
# path), read just before and just after the runs and averaged (a shared machine's speed
# drifts within seconds: both readings are printed), and the ratios; then the median ratios
# over the pairs (read the median). One core: OpenBLAS pinned to one thread.
set -euo pipefail
bin=$1
trials=${2:-16000}
pairs=${3:-3}
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
cpu_cmd() { # COMMAND... -> CPU seconds of the command (its exit status must be 0)
  python3 - "$@" <<'PY'
import os, sys
# posix_spawn (a vfork and exec): a fork would copy this interpreter's page tables into the
# child and charge it the page faults of that copy before the command even starts.
fd = os.open(os.devnull, os.O_WRONLY)
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1), (os.POSIX_SPAWN_DUP2, fd, 2)])
os.close(fd)
_, status, ru = os.wait4(pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit("failed: %s" % " ".join(sys.argv[1:]))
print("%.4f" % (ru.ru_utime + ru.ru_stime))
PY
}
inproc() { # `attnsweep bench trials`' whole trials in process, batched, trials/s
  "$bin" bench trials | sed -n 's/.* \([0-9][0-9]*\) trials\/s batched.*/\1/p'
}
cpu_of() { # replicates -> CPU seconds of `attnsweep run` on one rank
  spec "$1" >"$dir/s$1.yaml"
  rm -f "$dir/r$1.h5"*
  cpu_cmd "$bin" run "$dir/s$1.yaml" -o "$dir/r$1.h5"
}
: >"$dir/ratios"
for p in $(seq "$pairs"); do
  before=$(inproc)
  start=$(cpu_cmd "$bin" --version)
  one=$(cpu_of 1)
  small=$(cpu_of 4000)
  big=$(cpu_of "$trials")
  after=$(inproc)
  inproc=$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.0f", (a + b) / 2 }')
  awk -v p="$p" -v s="$small" -v b="$big" -v n="$trials" -v ip="$inproc" -v v="$start" \
    -v o="$one" -v ib="$before" -v ia="$after" 'BEGIN {
    whole = n / b; margin = (n - 4000) / (b - s); fixed = s - 4000 / margin;
    printf "pair %d: run, 4000 trials: %.3f s CPU; run, %d trials: %.3f s CPU\n", p, s, n, b;
    printf "  run: %.0f trials/s over the whole run, %.0f trials/s at the margin\n", whole, margin;
    printf "  in process (bench trials, batched): %s trials/s (%s before the runs, %s after)\n",
           ip, ib, ia;
    printf "  run / in process: %.1f%% whole run, %.1f%% at the margin\n",
           100 * whole / ip, 100 * margin / ip;
    printf "  fixed part: %.3f s (a one-trial run: %.3f s, of which `attnsweep --version`, the\n", fixed, o, v;
    printf "  process and its libraries alone: %.3f s); 90%% over the whole run at this margin\n", v;
    printf "  rate needs a fixed part <= %.3f s\n", n / (0.9 * ip) - n / margin }'
  awk -v s="$small" -v b="$big" -v n="$trials" -v ip="$inproc" \
    'BEGIN { printf "%.6f %.6f\n", 100 * n / b / ip, 100 * (n - 4000) / (b - s) / ip }' \
    >>"$dir/ratios"
done
sort -n -k1,1 "$dir/ratios" | awk '{ w[NR] = $1 } END { m = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2;
  printf "median over %d pairs: %.1f%% of the in-process rate over the whole run", NR, m }'
sort -n -k2,2 "$dir/ratios" | awk '{ w[NR] = $2 } END { m = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2;
  printf ", %.1f%% at the margin (target >= 90%%)\n", m }'
