#!/usr/bin/env bash
# plan_accuracy.sh: `attnsweep plan`'s predicted CPU time of a one-rank run (the default cost
# model: no --calibrate, no saved fit) against the measured CPU time (user + sys, /usr/bin/time)
# of `attnsweep run` on one rank, for every spec of jobs/examples (issue 37). Prints one row per
# spec: trials, predicted s, measured s, predicted / measured. CPU time, not wall time: the
# machine may be shared. A spec predicted under 2 s runs 3 times and shows the median (its
# time is mostly the rank's start, which moves with the machine's load).
#   bench/plan_accuracy.sh [--fit] [SPEC.yaml ...]      (ATTNSWEEP=path/to/attnsweep)
# --fit also prints the AS_COST_NS_* figures of cost.h (and AS_COST_RANK_START_S) that fit the
# measured times best (least squares in log(predicted / measured), from `plan --cost-kinds`);
# AS_COST_NS_CLASSIFY is kept (refit it from `attnsweep bench` when the classifier changes).
# FIT_FREE="RANK_START_S NS_SMALL ..." fits only the figures named (the others kept): the
# examples are too few and too small to pin every figure at once.
# Specs that read matrices or checkpoints get them made first in a scratch directory
# (jobs/make_example_matrices.py, jobs/examples/make_test_checkpoint.py + import-weights);
# from_file.yaml runs at the small size of tests/cli/test_census.sh (the d = 64 ALBERT heads of
# the test checkpoint instead of d = 2048: no real ALBERT checkpoint here).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${ATTNSWEEP:-$src/build/h/attnsweep}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
py=${PYTHON:-/usr/bin/python3}
fit=0
if [ "${1:-}" = --fit ]; then
  fit=1
  shift
fi
export OPENBLAS_NUM_THREADS=1
# --fit is a least-squares fit by scipy: say so before the runs, not after them (exit 77, as
# vs_peer.sh without numba)
if [ $fit -eq 1 ] && ! "$py" -c "import scipy.optimize" 2>/dev/null; then
  echo "plan_accuracy.sh: --fit needs python3-scipy (apt-get install python3-scipy)" >&2
  exit 77
fi
if [ $# -gt 0 ]; then
  specs=()
  for f in "$@"; do specs+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
else
  specs=("$src"/jobs/examples/*.yaml)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$py" "$src/jobs/make_example_matrices.py" >/dev/null
"$py" "$src/jobs/examples/make_test_checkpoint.py" test_checkpoint >/dev/null 2>&1
"$bin" import-weights test_checkpoint -o imported_heads.h5 >/dev/null 2>&1
"$py" "$src/jobs/examples/make_test_checkpoint.py" albert --albert >/dev/null 2>&1
"$bin" import-weights albert -o albert_heads.h5 >/dev/null 2>&1
isa=
for f in avx512f avx2; do
  if [ -z "$isa" ] && grep -qw "$f" /proc/cpuinfo; then isa=$f; fi
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p') (${isa:-no AVX2}), $(nproc) CPUs; $(date -u +%F)"
printf '| spec | trials | predicted CPU s | measured CPU s | predicted / measured |\n'
printf '|---|---:|---:|---:|---:|\n'
: >rows.txt
for spec in "${specs[@]}"; do
  name=$(basename "$spec" .yaml)
  sets=()
  if [ "$name" = from_file ]; then sets=(--set d=64 --set m_rows=16); fi
  cp "$spec" "$tmp/$name.yaml"
  plan=$("$bin" plan "$name.yaml" "${sets[@]}" --cost-kinds 2>&1) || {
    echo "| $name | plan failed: $(tail -n 1 <<<"$plan") | | | |"
    continue
  }
  pred=$(sed -n 's/^one-rank run: about \([0-9.e+-]*\) CPU seconds.*/\1/p' <<<"$plan")
  kinds=$(sed -n 's/^cost kinds: //p' <<<"$plan")
  trials=$(sed -n 's/^\([0-9]*\) trials = .*/\1/p' <<<"$plan")
  runs=$(awk -v p="$pred" 'BEGIN { print (p < 2) ? 3 : 1 }')
  : >times.txt
  for _ in $(seq "$runs"); do
    rm -f "$name.h5" "$name.h5".journal.*
    if ! /usr/bin/time -f '%U %S' -o time.txt "$bin" run "$name.yaml" "${sets[@]}" -o "$name.h5" \
      >run.log 2>&1; then
      break
    fi
    awk '{printf "%.3f\n", $1 + $2}' time.txt >>times.txt
  done
  if [ "$(wc -l <times.txt)" -ne "$runs" ]; then
    echo "| $name | run failed: $(tail -n 1 run.log) | | | |"
    continue
  fi
  meas=$(sort -n times.txt | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }')
  ratio=$(awk -v p="$pred" -v m="$meas" 'BEGIN { printf "%.2f", p / m }')
  printf '| %s | %s | %.3g | %s | %s |\n' "$name" "$trials" "$pred" "$meas" "$ratio"
  echo "$name $meas $kinds $pred" >>rows.txt
  rm -f "$name.h5" "$name.h5".journal.*
done
awk '{ r = $NF / $2; lo = (NR == 1 || r < lo) ? r : lo; hi = (r > hi) ? r : hi }
  END { if (NR) printf "%d specs, predicted / measured from %.2f to %.2f\n", NR, lo, hi }' rows.txt
if [ $fit -eq 1 ]; then
  FIT_FREE=${FIT_FREE:-} "$py" - "$src/include/attnsweep/cost.h" rows.txt <<'PY'
import os, re, sys
import numpy as np
from scipy.optimize import least_squares
header, rows = sys.argv[1], sys.argv[2]
text = open(header).read()
def const(name):
    return float(re.search(r"#define %s ([0-9.e+-]+)" % name, text).group(1))
names = ["NS_BATCH", "NS_SMALL", "NS_MODEL", "NS_BLOCKS", "NS_STREAM", "NS_DENSE",
         "NS_SINKHORN", "NS_NEWTON", "NS_SPECTRAL", "NS_CLASSIFY", "NS_TRIAL", "NS_BYTE"]
p0 = np.array([const("AS_COST_RANK_START_S")] + [const("AS_COST_" + n) for n in names])
y, X = [], []
for line in open(rows):
    f = line.split()
    y.append(float(f[1]))
    X.append([float(v) * 1e-9 for v in f[2:-1]])  # ns -> s (the last field: the prediction)
y, X = np.array(y), np.array(X)
free = [0] + [i + 1 for i, n in enumerate(names) if X[:, i].any() and n != "NS_CLASSIFY"]
only = os.environ.get("FIT_FREE", "").split()
if only:
    unknown = [n for n in only if n not in ["RANK_START_S"] + names]
    if unknown:
        sys.exit("FIT_FREE: unknown figure(s) %s" % " ".join(unknown))
    free = [i for i in free if (["RANK_START_S"] + names)[i] in only]
def pred(p):
    return p[0] + X @ p[1:]
def res(lp):
    p = p0.copy()
    p[free] = np.exp(lp)
    return np.log(pred(p) / y)
r = least_squares(res, np.log(p0[free]))
p = p0.copy()
p[free] = np.exp(r.x)
print("fitted (cost.h; kept: figures without data, NS_CLASSIFY):")
for n, v, v0, i in zip(["RANK_START_S"] + names, p, p0, range(len(p))):
    print("  AS_COST_%-12s %.3g  (now %.3g%s)" % (n, v, v0, "" if i in free else ", kept"))
q = pred(p) / y
print("fitted ratios: %.2f to %.2f" % (q.min(), q.max()))
PY
fi
