#!/usr/bin/env bash
# vs_peer.sh: `attnsweep bench trials` against the compiled one-trial-at-a-time peer
# (bench/peer_numba.py, python3-numba) in alternating pairs on one core (issue 37).
#
# usage: bench/vs_peer.sh ATTNSWEEP [PAIRS [PEER_TRIALS PEER_SECONDS]]
#        (default 3 pairs; the peer times rounds of 2000 trials for 3 s: bench/peer_numba.py)
#
# Each pair: the whole batched trials of `attnsweep bench trials` (the worker's path: triple,
# spectral analysis, tokens, integration, classifier, record), then the peer's trials/s on
# the same core; prints both figures and their ratio per pair, and the CPU and ISA line of
# the bench. Both pinned to the same core (taskset) with one BLAS thread.
set -euo pipefail
bin=$1
pairs=${2:-3}
peer_trials=${3:-2000}
peer_seconds=${4:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1
core=$(($(nproc) - 1))
/usr/bin/python3 -c "import numba" 2>/dev/null || {
  echo "vs_peer.sh: python3-numba is not installed (apt-get install python3-numba)" >&2
  exit 77
}
grep -m1 "model name" /proc/cpuinfo
for p in $(seq 1 "$pairs"); do
  out=$(taskset -c "$core" "$bin" bench trials)
  [ "$p" = 1 ] && head -n 1 <<<"$out"
  ours=$(sed -n 's/.* \([0-9][0-9]*\) trials\/s batched.*/\1/p' <<<"$out")
  peer_line=$(taskset -c "$core" /usr/bin/python3 "$here/peer_numba.py" "$peer_trials" \
    "$peer_seconds")
  peer=$(sed -n 's/.*, \([0-9][0-9]*\) trials\/s (fastest.*/\1/p' <<<"$peer_line")
  if [ -z "$ours" ] || [ -z "$peer" ] || [ "$peer" = 0 ]; then
    printf 'vs_peer.sh: no figure in "%s" or "%s"\n' "$(tail -n 1 <<<"$out")" "$peer_line" >&2
    exit 1
  fi
  awk -v p="$p" -v a="$ours" -v b="$peer" 'BEGIN {
    printf "pair %d: attnsweep whole trials batched %d /s, peer %d /s, ratio %.1fx\n", p, a, b, a / b }'
done
