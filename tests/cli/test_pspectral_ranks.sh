#!/usr/bin/env bash
# The large-d path keeps the promises of the small one (issue 22), through `attnsweep run`:
#   * records of /trials are byte-identical (wall_time and rank aside) for any rank count that
#     holds the spec's spectral_grid: 1x2 with 2, 3 (one rank idle), 4 (two grids) and 6
#     (three grids) ranks; the default 1x1 with 1, 2 and 3 ranks (docs/matrices.md says
#     exactly this);
#   * a job smaller than the grid is refused before anything is written (exit 2, no file);
#     a one-dimensional grid of 3 or more (pdhseqr deadlocks there) is refused by validate
#     (exit 2, SPEC:LINE:COL);
#   * with a low threshold the distributed path gives the LAPACK path's flags (DISTRIBUTED and
#     V_DIAGONALISABLE aside), theorem, prediction, kpos, dim F, observed geometry and verdict
#     on every trial, and no trial fails (the old "dim F = 0 without a projector").
# The large triples are small here (d = 65..200, every V family, sizes on both sides of the
# block size 64) so that a run takes seconds; d = 512 is in tests/mpi/test_pspectral_grids.c.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init pspectral_ranks

spec() { # spec GRID THRESHOLD > file
  cat <<YAML
name: pspectral_ranks
seed: 22
replicates: 2
${2:+spectral_threshold: $2}
${1:+spectral_grid: $1}
defaults: {n: 8, T: 1, dt: 0.1, init: {kind: box, scale: 2}}
sweep:
  concat:
    - {case: big, vfamily: [identity, perron, symmetric, paranormal, good, complex, gaussian],
       v_kpos: 20, v_dim_f: 3, v_lambda: 1.5, v_gap: 0.4, v_imag: 0.5, v_radius: 1,
       mfamily: spd, m_cond: 5, d: [65, 130]}
    - {case: oblique, vfamily: paranormal, v_oblique: [true, false], v_dim_f: 4, v_radius: 0.8,
       mfamily: identity, d: 200}
    - {case: small, vfamily: perron, mfamily: identity, d: 3}
YAML
}
spec 1x2 64 >"$tmp/g12.yaml"
spec "" 64 >"$tmp/g11.yaml"
spec "" "" >"$tmp/lapack.yaml"

cmp_rec() { "$py" "$tools/compare_results.py" "$1" "$2" --require-complete; }

for np in 2 3 4 6; do
  "$mpiexec" -n $np "$bin" run "$tmp/g12.yaml" -o "$tmp/g12_$np.h5" >"$tmp/log" 2>&1
  rc=$?
  check "spectral_grid 1x2 on $np ranks: exit 0 (rc $rc)" test $rc -eq 0
  [ $rc -eq 0 ] || cat "$tmp/log"
  check "spectral_grid 1x2 on $np ranks: the pre-pass shows its progress" \
    grep -q "spectral analysis of 32 large triples (d >= 64) before the sweep, on $((np / 2)) grid" \
    "$tmp/log"
done
for np in 3 4 6; do
  out=$(cmp_rec "$tmp/g12_2.h5" "$tmp/g12_$np.h5")
  check "1x2: records with $np ranks identical to 2 ranks: $out" test $? -eq 0
done

for np in 1 2 3; do
  "$mpiexec" -n $np "$bin" run "$tmp/g11.yaml" -o "$tmp/g11_$np.h5" -q >"$tmp/log" 2>&1
  rc=$?
  check "default grid 1x1 on $np rank(s): exit 0 (rc $rc)" test $rc -eq 0
  [ $rc -eq 0 ] || cat "$tmp/log"
done
for np in 2 3; do
  out=$(cmp_rec "$tmp/g11_1.h5" "$tmp/g11_$np.h5")
  check "1x1: records with $np ranks identical to 1 rank: $out" test $? -eq 0
done

# Too few ranks for the grid: refused up front.
"$mpiexec" -n 1 "$bin" run "$tmp/g12.yaml" -o "$tmp/one.h5" >"$tmp/log" 2>&1
rc=$?
check "1x2 on 1 rank: exit 2 (rc $rc)" test $rc -eq 2
check "1x2 on 1 rank: the message names the grid and the ranks" \
  grep -q "spectral_grid 1x2 needs at least 2 MPI ranks" "$tmp/log"
check "1x2 on 1 rank: no results file" test ! -e "$tmp/one.h5"

# One-dimensional grids of more than 2: refused by validate, where they are written.
sed 's/^spectral_grid: 1x2/spectral_grid: 1x3/' "$tmp/g12.yaml" >"$tmp/g13.yaml"
"$bin" validate "$tmp/g13.yaml" >"$tmp/log" 2>&1
rc=$?
line=$(grep -n '^spectral_grid' "$tmp/g13.yaml" | cut -d: -f1)
check "validate 1x3: exit 2 (rc $rc)" test $rc -eq 2
check "validate 1x3: SPEC:$line:16 and the reason" \
  grep -q "g13.yaml:$line:16: spectral_grid 1x3: ScaLAPACK's pdhseqr deadlocks" "$tmp/log"

# plan prices the large-d phase and never suggests fewer ranks than the grid.
"$bin" plan "$tmp/g12.yaml" >"$tmp/plan" 2>&1
check "plan: exit 0" test $? -eq 0
check "plan: the large-d phase is priced" \
  grep -q "large-d spectral analysis: 32 triples with d >= 64 on spectral_grid 1x2" "$tmp/plan"
check "plan: at least 2 ranks suggested for the 1x2 grid" \
  grep -Eq "^suggested for a 1 h target: ([2-9]|[1-9][0-9]+) ranks" "$tmp/plan"
"$bin" plan "$tmp/lapack.yaml" >"$tmp/plan" 2>&1
check "plan: no large-d phase without large triples" bash -c "! grep -q 'large-d' '$tmp/plan'"

# The same decisions as the LAPACK path, trial by trial.
"$bin" run "$tmp/lapack.yaml" -o "$tmp/lapack.h5" -q >"$tmp/log" 2>&1
check "LAPACK path: exit 0" test $? -eq 0
out=$("$py" - "$tmp/lapack.h5" "$tmp/g12_2.h5" "$tmp/g11_1.h5" <<'PY'
import sys
import h5py
import numpy as np
ref = h5py.File(sys.argv[1], "r")["trials"][...]
out = {v: k for k, v in h5py.check_enum_dtype(ref.dtype["outcome"]).items()}
keep = ~np.uint32((1 << 13) | (1 << 14))  # DISTRIBUTED, V_DIAGONALISABLE
big = ref["d"] >= 64
bad = []
assert big.sum() == 32, big.sum()
for path in sys.argv[2:]:
    t = h5py.File(path, "r")["trials"][...]
    dist = (t["flags"] & (1 << 13)) != 0
    if not np.array_equal(dist, big):
        bad.append(f"{path}: DISTRIBUTED set on {dist.sum()} trials, {big.sum()} large")
    if any(out[o] == "failed" for o in t["outcome"]):
        bad.append(f"{path}: failed trials {[r['message'] for r in t if out[r['outcome']] == 'failed']}")
    diff = np.nonzero((t["flags"] & keep) != (ref["flags"] & keep))[0]
    if len(diff):
        bad.append(f"{path}: flags differ on trials {diff.tolist()}")
    for f in ("theorem", "predicted", "kpos", "dim_f", "observed", "verdict", "outcome"):
        diff = np.nonzero(t[f] != ref[f])[0]
        if len(diff):
            bad.append(f"{path}: {f} differs on trials {diff.tolist()}")
    rel = np.abs(t["lambda1_re"] - ref["lambda1_re"]) / np.maximum(np.abs(ref["lambda1_re"]), 1e-300)
    if rel.max() > 1e-12:
        bad.append(f"{path}: lambda1_re differs by {rel.max():.3g} relative")
print("; ".join(bad) if bad else f"{len(ref)} trials agree")
sys.exit(1 if bad else 0)
PY
)
check "distributed path = LAPACK path (flags, theorem, dim F, verdicts): $out" test $? -eq 0

exit $fail
