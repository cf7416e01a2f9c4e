#!/usr/bin/env bash
# The referees' campaign (README.md beside this script): runs every spec of jobs/referees/ and
# writes one referees.html with each question's answer, table and figure.
#
# usage: jobs/referees/run.sh [--scale local|cluster] [--slurm] [--out DIR] [--only A,B]
#                             [--ranks N]
#   --scale local    (default; or REFEREES_SCALE=local) the specs as written: all of them in
#                    minutes on a laptop (README.md gives the measured time).
#   --scale cluster  each spec with the --set overrides of its "# scale cluster:" line (more
#                    replicates, larger n and d).
#   --slurm          submit one job per spec (jobs/attnsweep.sbatch, with the spec's --set
#                    overrides; `attnsweep plan` prints each estimate first) and a last job,
#                    after all of them, that writes the page. RANKS and WALLTIME (sbatch -n,
#                    --time) size the jobs: defaults 32 and 04:00:00.
#   --out DIR        where the results files, times.tsv and referees.html go (default
#                    results/referees-<scale>).
#   --only A,B       only these specs (names without .yaml).
#   --ranks N        MPI ranks of a local run (default: the cores of this machine).
# Environment: MPIEXEC (default mpiexec), ATTNSWEEP (the binary; default
# build/release/attnsweep, built as jobs/local.sh does when missing), PYTHON (/usr/bin/python3).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
scale=${REFEREES_SCALE:-local}
slurm=0
out=""
only=""
ranks=$(nproc)
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=${2:?--scale needs local or cluster}; shift 2 ;;
    --scale=*) scale=${1#*=}; shift ;;
    --slurm) slurm=1; shift ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --only) only=${2:?--only needs spec names}; shift 2 ;;
    --ranks) ranks=${2:?--ranks needs a number}; shift 2 ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (run.sh --help)" >&2; exit 2 ;;
  esac
done
case $scale in local|cluster) ;; *) echo "run.sh: --scale is local or cluster, not '$scale'" >&2; exit 2 ;; esac
case $ranks in ''|*[!0-9]*|0) echo "run.sh: --ranks needs a positive number" >&2; exit 2 ;; esac
out=${out:-$root/results/referees-$scale}
python=${PYTHON:-/usr/bin/python3}

bin=${ATTNSWEEP:-$root/build/release/attnsweep}
if [ ! -x "$bin" ]; then
  bash "$root/tests/deps.sh"
  cmake -S "$root" -B "$root/build/release" -DCMAKE_BUILD_TYPE=Release -DAS_BUILD_TESTS=OFF >/dev/null
  cmake --build "$root/build/release" -j "$(nproc)"
  bin=$root/build/release/attnsweep
fi
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
export OPENBLAS_NUM_THREADS=1

specs=()
for f in "$here"/*.yaml; do
  name=$(basename "$f" .yaml)
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
  specs+=("$name")
done
[ ${#specs[@]} -gt 0 ] || { echo "run.sh: no spec matches --only $only" >&2; exit 2; }
mkdir -p "$out"

# The --set overrides of a spec at the chosen scale (its "# scale cluster:" line).
sets_of() {
  sets=()
  [ "$scale" = cluster ] || return 0
  local line
  line=$(sed -n 's/^# scale cluster: *//p' "$here/$1.yaml")
  eval "sets=($line)"
}

if [ $slurm -eq 1 ]; then
  command -v sbatch >/dev/null || { echo "run.sh: --slurm needs sbatch on PATH" >&2; exit 2; }
  ids=()
  for name in "${specs[@]}"; do
    sets_of "$name"
    echo "== $name: attnsweep plan ${sets[*]}"
    "$bin" plan "$here/$name.yaml" "${sets[@]}" || exit $?
    rm -f "$out/$name.h5"
    id=$(ATTNSWEEP=$bin sbatch --parsable -n "${RANKS:-32}" --time="${WALLTIME:-04:00:00}" \
         -J "referees-$name" "$root/jobs/attnsweep.sbatch" "$here/$name.yaml" -o "$out/$name.h5" \
         "${sets[@]}")
    ids+=("${id%%;*}")
  done
  dep=$(IFS=:; echo "${ids[*]}")
  sbatch --parsable --dependency="afterany:$dep" -J referees-page -n 1 \
    --wrap "$python $here/referees.py $out -o $out/referees.html"
  echo "run.sh: submitted ${#ids[@]} sweeps and the page job; the page will be $out/referees.html"
  exit 0
fi

times=$out/times.tsv
printf 'spec\twall_s\tcpu_s\n' >"$times"
TIMEFORMAT='%R %U %S'
for name in "${specs[@]}"; do
  sets_of "$name"
  rm -f "$out/$name.h5" "$out/$name.h5".*
  echo "== $name (${scale}${sets[*]:+: ${sets[*]}})"
  rc=0
  { t=$( { time "${MPIEXEC:-mpiexec}" -n "$ranks" "$bin" run "$here/$name.yaml" -o "$out/$name.h5" \
           "${sets[@]}" >"$out/$name.log" 2>&1; } 2>&1 ); } || rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 4 ]; then
    echo "run.sh: $name: attnsweep run exited $rc (see $out/$name.log)" >&2
    exit $rc
  fi
  read -r wall user sys <<<"$t"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  printf '%s\t%s\t%s\n' "$name" "$wall" "$cpu" >>"$times"
  echo "   $wall s wall, $cpu s CPU"
done
awk 'NR > 1 { w += $2; c += $3 } END { printf "run.sh: all sweeps: %.1f s wall, %.1f s CPU\n", w, c }' "$times"
"$python" "$here/referees.py" "$out" -o "$out/referees.html" --times "$times" \
  ${only:+--only "$only"}
