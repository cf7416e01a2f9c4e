#!/usr/bin/env bash
# merge and the build of its inputs (issue 49 item 6; docs/slurm.md "merge"): shards written by
# different builds (git revision, tool, BLAS, ... versions: merge.h AS_MERGE_BUILD_ATTRS) are
# refused, exit 2 naming both files and the attributes, nothing written; with
# --allow-mixed-builds they merge and merged_from records every input's revision and versions
# (merge_mixed_builds = 1). Shards of one build merge as before, their build recorded too. An
# attribute rewritten as a variable-length string (as h5py writes one) is read.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init merge_builds
cd "$tmp" || exit 1

cat >s.yaml <<'YAML'
name: builds
seed: 7
replicates: 4
sweep: {vfamily: identity, mfamily: identity, d: 2, n: 5, T: 1, dt: 0.1}
YAML
for i in 1 2; do "$mpiexec" -n 1 "$bin" run s.yaml -o m.h5 --shard "$i/2" -q >>run.log 2>&1; done
a=m.h5.shard-1-of-2 b=m.h5.shard-2-of-2
"$bin" merge same.h5 "$a" "$b" >merge.log 2>&1
rc=$?
check "shards of one build merge: exit 0 ($rc)" test "$rc" -eq 0
check "merged_from records each input's build, merge_mixed_builds = 0" "$py" -c "
import h5py, sys
with h5py.File('same.h5', 'r') as f:
    m = f.attrs['merged_from'].decode()
    rev = f.attrs['git_revision'].decode()
    ok = m.count('git_revision=' + rev) == 2 and m.count('blas_version=') == 2
    sys.exit(0 if ok and f.attrs['merge_mixed_builds'] == 0 else 1)"

# Shard 2 "from another build": its revision and BLAS as fixed-length strings (the file's own
# type), its HDF5 version as a variable-length one (h5py's type for a str).
"$py" -c "
import h5py, numpy as np
with h5py.File('$b', 'r+') as f:
    f.attrs['git_revision'] = np.bytes_('0123456789ab-other')
    f.attrs['blas_version'] = np.bytes_('OpenBLAS 9.9.9 other build')
    f.attrs['hdf5_version'] = '1.99.0 (variable-length)'
"
"$bin" merge mixed.h5 "$a" "$b" >merge.log 2>&1
rc=$?
check "shards of two builds: exit 2 ($rc), nothing written" \
  bash -c '[ "$1" -eq 2 ] && [ ! -e mixed.h5 ] && [ ! -e mixed.h5.merging ]' _ "$rc"
check "the refusal names both files, the differing attributes and --allow-mixed-builds" \
  bash -c 'grep -q "m.h5.shard-1-of-2 and m.h5.shard-2-of-2 were written by different builds" merge.log &&
    grep -q "git_revision .*0123456789ab-other" merge.log && grep -q "blas_version" merge.log &&
    grep -q "hdf5_version .*1.99.0 (variable-length)" merge.log && grep -q -- "--allow-mixed-builds" merge.log'
"$bin" merge mixed.h5 "$a" "$b" --allow-mixed-builds >merge.log 2>&1
rc=$?
check "--allow-mixed-builds: exit 0 ($rc)" test "$rc" -eq 0
check "merged_from records both revisions and versions, merge_mixed_builds = 1" "$py" -c "
import h5py, sys
with h5py.File('mixed.h5', 'r') as f:
    m = f.attrs['merged_from'].decode().splitlines()
    with h5py.File('$a', 'r') as g:
        rev, blas = g.attrs['git_revision'].decode(), g.attrs['blas_version'].decode()
    ok = len(m) == 2 and 'git_revision=' + rev in m[0] and 'blas_version=' + blas in m[0]
    ok = ok and 'git_revision=0123456789ab-other' in m[1]
    ok = ok and 'blas_version=OpenBLAS 9.9.9 other build' in m[1]
    ok = ok and 'hdf5_version=1.99.0 (variable-length)' in m[1]
    ok = ok and all('tool_version=' in x and 'mpi_version=' in x and 'rng_algorithm=' in x for x in m)
    sys.exit(0 if ok and f.attrs['merge_mixed_builds'] == 1 else 1)"
check "the merged rows are the shards' (4 done)" "$py" -c "
import h5py, sys
with h5py.File('mixed.h5', 'r') as f:
    sys.exit(0 if len(f['trials']) == 4 and f.attrs['merge_partial'] == 0 else 1)"

[ $fail -eq 0 ] || { cat merge.log; tail -n 20 run.log; }
echo "test_merge_builds: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
