#!/usr/bin/env bash
# A guard for a refactoring that must not change a single record: runs the built-in default
# sweep and the given example specs with two attnsweep binaries (the one before the change and
# the one after) and compares every /trials record and bulk dataset bit for bit
# (tests/tools/compare_results.py; wall_time and rank aside).
#
# usage: tests/tools/guard_records.sh OLD_BIN NEW_BIN [SPEC...]
#   SPEC defaults to the examples of jobs/examples that run in under a minute on one rank.
#   AS_GUARD_DIR: where the files go (default: a temporary directory, removed at the end).
#   AS_GUARD_ALLOW: --allow=FIELD:LABEL,... arguments of compare_results.py (space separated):
#     the rows a change concerns (their enum field holds one of the labels in either build's
#     file) may differ, every other row must not; the changed rows are counted.
# Exit 0 when every pair is identical, 1 otherwise.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
old=$1 new=$2
shift 2
specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  for s in approximate causal codim d1 ffn generic_m good hardmax identity initial layers \
    minus_identity multihead paranormal per_layer perturbed readme sinkhorn skip sphere \
    zip_horizons; do
    specs+=("$root/jobs/examples/$s.yaml")
  done
fi
dir=${AS_GUARD_DIR:-$(mktemp -d)}
[ -n "${AS_GUARD_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/old" "$dir/new"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_btl=self,vader OMPI_MCA_oob_tcp_if_include=lo
fail=0
one() { # name, then the run arguments
  local name=$1
  shift
  for side in old new; do
    local bin=$old
    [ $side = new ] && bin=$new
    rm -f "$dir/$side/$name.h5"*
    timeout -s KILL 300 "$bin" run "$@" -o "$dir/$side/$name.h5" >"$dir/$side/$name.log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 4 ]; then # 4: complete, with failed trials (records all the same)
      echo "guard: $name: the $side binary exited $rc (see $dir/$side/$name.log)"
      fail=1
      return
    fi
  done
  # shellcheck disable=SC2086
  if /usr/bin/python3 "$root/tests/tools/compare_results.py" "$dir/old/$name.h5" "$dir/new/$name.h5" \
    ${AS_GUARD_ALLOW:-} >"$dir/$name.cmp" 2>&1; then
    echo "guard: $name: identical$(grep '^allowed to differ' "$dir/$name.cmp" | sed 's/^/; /')"
  else
    echo "guard: $name: DIFFERS"
    sed 's/^/  /' "$dir/$name.cmp" | head -20
    fail=1
  fi
}
one default
for s in "${specs[@]}"; do
  one "$(basename "${s%.yaml}")" "$s"
done
exit $fail
