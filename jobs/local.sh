#!/usr/bin/env bash
# Set up, build, run the built-in default sweep on all cores of this machine, and print its
# summary table. Usage: jobs/local.sh [OUT.h5]   (default results/default-<time>.h5: a new
# file each time, so earlier results are never overwritten)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash tests/deps.sh

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_oob_tcp_if_include=lo OPENBLAS_NUM_THREADS=1
export OMPI_MCA_mpi_yield_when_idle=1
# A SIGINT or SIGTERM to mpiexec reaches the ranks as SIGTERM after this many seconds and is
# followed by SIGKILL as many seconds later (Open MPI's default 1 s can cut the file's close
# short: docs/scheduling.md).
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-10}

build=${AS_BUILD_DIR:-$root/build/release}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DAS_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
bin="$build/attnsweep"

out=${1:-$root/results/default-$(date -u +%Y%m%dT%H%M%SZ).h5}
mkdir -p "$(dirname "$out")"
ranks=$(nproc)
echo "== attnsweep run (built-in default sweep) on $ranks ranks -> $out"
rc=0
mpiexec -n "$ranks" "$bin" run -o "$out" || rc=$?
if [ $rc -ne 0 ]; then
  echo "jobs/local.sh: 'attnsweep run' exited $rc; no results to summarize." >&2
  exit $rc
fi
echo "== attnsweep summarize $out"
"$bin" summarize "$out"
