#!/usr/bin/env bash
# mpiexec_signals.sh: what Open MPI's mpiexec does with a SIGINT sent to it (docs/scheduling.md,
# "How a stop propagates"): two ranks of a shell that logs each signal it gets, SIGINT to
# mpiexec 1.5 s after the start, and the delays from the SIGINT to each rank's SIGTERM and to
# mpiexec's exit, with its exit code. The ranks take 3 s to clean up, so a SIGKILL after
# odls_base_sigkill_timeout shows as an exit before they finish.
#
# usage: bench/mpiexec_signals.sh [SIGKILL_TIMEOUT]   (sets OMPI_MCA_odls_base_sigkill_timeout)
set -u
[ -n "${1:-}" ] && export OMPI_MCA_odls_base_sigkill_timeout=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/rank.sh" <<'RANK'
#!/usr/bin/env bash
trap 'echo "rank $OMPI_COMM_WORLD_RANK TERM $(date +%s.%N)"; sleep 3; echo "rank $OMPI_COMM_WORLD_RANK cleaned up $(date +%s.%N)"; exit 0' TERM
while :; do sleep 0.01; done
RANK
chmod +x "$dir/rank.sh"
mpiexec -n 2 "$dir/rank.sh" >"$dir/log" 2>&1 &
job=$!
sleep 1.5
t0=$(date +%s.%N)
kill -INT "$job"
wait "$job"
rc=$?
t1=$(date +%s.%N)
echo "odls_base_sigkill_timeout: ${OMPI_MCA_odls_base_sigkill_timeout:-default (1)}"
awk -v t0="$t0" '/ TERM / { printf "rank %s: SIGTERM %.2f s after the SIGINT\n", $2, $4 - t0 }
  / cleaned up / { printf "rank %s: cleaned up %.2f s after the SIGINT\n", $2, $5 - t0 }' "$dir/log"
awk -v t0="$t0" -v t1="$t1" -v rc="$rc" 'BEGIN {
  printf "mpiexec exited %.2f s after the SIGINT with code %d\n", t1 - t0, rc }'
