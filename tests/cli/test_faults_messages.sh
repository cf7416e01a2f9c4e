#!/usr/bin/env bash
# Fault injection, issue 21 point 8: every refusal names the file, the item and the real
# bound, never an HDF5 error stack or a source location:
#   * a string `mscale` attribute in a matrix file, a group where /triples/V should be a
#     dataset: validate (exit 2) and run (the trial is recorded failed with that message,
#     exit 4) name the file and the item;
#   * T: 1e308 names the real upper bound of T (AS_BIG = 1e300 in params.h), not "> 0";
#   * --flush 1e10 names the accepted range, 0 to 1e+09;
#   * issue 36: validate of 2^31 - 1 replicates within seconds; a truncated results file in
#     status, reproduce and run --resume: exit 3 naming it, HDF5's cause and repair; a damaged
#     object header met after the open: the HDF5 failure names the file.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init faults_messages
T="timeout -k 2 30"
cd "$tmp" || exit 1
"$py" - <<'PYEOF'
import h5py, numpy as np
with h5py.File("ms.h5", "w") as f:
    f["triples/V"] = np.eye(2)[None]
    f["triples/M"] = np.eye(2)[None]
    f["triples"].attrs["mscale"] = "two"
with h5py.File("grp.h5", "w") as f:
    f.create_group("triples/V")
PYEOF
mk() { # mk NAME FILE T
  cat >"$1.yaml" <<EOF
name: $1
seed: 1
sweep: {vfamily: file, mfamily: file, file: $2, d: 2, n: 6, T: $3, dt: 0.1,
        init: {kind: box, scale: 1}}
EOF
}
mk ms ms.h5 1
mk grp grp.h5 1
noise='HDF5:|H5[A-Z][a-z]|\.c:[0-9]'
err=$($T "$bin" validate ms.yaml 2>&1); rc=$?
echo "$err"
check "string mscale: validate exit 2 ($rc)" test $rc -eq 2
check "string mscale: names file and attribute, no HDF5 stack" bash -c \
  "grep -q '$tmp/ms.h5: attribute /triples mscale must be one number (a float), not a string' <<<\"\$1\" && ! grep -Eq '$noise' <<<\"\$1\"" _ "$err"
err=$($T "$bin" validate grp.yaml 2>&1); rc=$?
echo "$err"
check "group for a dataset: validate exit 2 ($rc)" test $rc -eq 2
check "group for a dataset: names file and item, no HDF5 stack" bash -c \
  "grep -q '$tmp/grp.h5: /triples/V is a group where a dataset is expected' <<<\"\$1\" && ! grep -Eq '$noise' <<<\"\$1\"" _ "$err"
err=$($T "$bin" run ms.yaml -o ms_out.h5 -q 2>&1); rc=$?
check "string mscale: run records the failed trial, exit 4 ($rc)" test $rc -eq 4
msg=$("$py" -c "import h5py; print(h5py.File('ms_out.h5','r')['trials']['message'][0].decode())")
check "string mscale: the row's message names the file and the attribute" \
  grep -q "ms.h5: attribute /triples mscale must be one number" <<<"$msg"
mk big grp.h5 1e308
err=$($T "$bin" validate --no-files big.yaml 2>&1); rc=$?
echo "$err"
check "T: 1e308: exit 2 ($rc)" test $rc -eq 2
check "T: 1e308: names the upper bound" grep -Eq 'T = 1e308 is out of range: must be in \(0, 1e\+300\]' <<<"$err"
err=$($T "$bin" run big.yaml -o x.h5 --flush 1e10 2>&1); rc=$?
echo "$err"
check "--flush 1e10: exit 2 ($rc), names the range 0 to 1e+09" \
  bash -c "test $rc -eq 2 && grep -qF -- '--flush needs SECONDS, a number from 0 to 1e+09' <<<\"\$1\"" _ "$err"
# Issue 36 point 15: 2^31 - 1 replicates validate at once (the files are checked per point);
# a truncated results file is named, with HDF5's cause and `repair`, never a raw stack.
printf 'name: many\nseed: 1\nreplicates: 2147483647\nsweep: {vfamily: identity, mfamily: identity, d: [2, 3], n: 8, T: 1, dt: 0.1, init: {kind: box, scale: 1}}\n' >many.yaml
start=$(date +%s)
$T "$bin" validate many.yaml >out 2>&1; rc=$?
took=$(($(date +%s) - start))
check "validate of 2^31 - 1 replicates: exit 0 ($rc) within 10 s (${took}s)" test $rc -eq 0 -a $took -le 10
printf 'name: tr\nseed: 1\nreplicates: 4\nsweep: {vfamily: identity, mfamily: identity, d: 2, n: 8, T: 1, dt: 0.1, init: {kind: box, scale: 1}}\n' >tr.yaml
$T "$bin" run tr.yaml -o tr.h5 -q >/dev/null 2>&1
truncate -s 3000 tr.h5
for c in "status tr.h5" "reproduce tr.h5 0" "run -o tr.h5 --resume"; do
  # shellcheck disable=SC2086
  err=$($T "$bin" $c 2>&1); rc=$?
  check "$c of a truncated file: exit 3 ($rc), names it, the cause and repair, no stack" \
    bash -c "test $rc -eq 3 && grep -q 'tr.h5 cannot be opened: HDF5 says \"truncated file.*attnsweep repair tr.h5' <<<\"\$1\" && ! grep -q 'H5Fopen\\|#1' <<<\"\$1\"" _ "$err"
done
# An HDF5 failure after the file opened (the object header of /segments damaged, its checksum
# wrong) names the file too, for every command that reads it.
$T "$bin" run tr.yaml -o seg.h5 -q >/dev/null 2>&1
"$py" - seg.h5 <<'PYEOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    addr = h5py.h5o.get_info(f["segments"].id).addr
with open(sys.argv[1], "r+b") as f:
    f.seek(addr + 20)
    b = f.read(1)
    f.seek(addr + 20)
    f.write(bytes([b[0] ^ 0xFF]))
PYEOF
err=$($T "$bin" status seg.h5 2>&1); rc=$?
check "status of a damaged /segments: exit 3 ($rc), the HDF5 failure names the file" \
  bash -c "test $rc -eq 3 && grep -q 'segments.* failed on seg.h5 | HDF5: ' <<<\"\$1\"" _ "$err"
exit $fail
