#!/usr/bin/env bash
# A results file behind a user block (h5jam puts bytes in front of the HDF5 data, and every
# address in the file moves by the block's size). Rows of /trials are read and written at
# their place in the file, past the HDF5 layer (results.c, rows_direct): `status` of a jammed
# complete file counts every row and finds no damaged one; a stopped file, jammed, counts the
# rows its unjammed self counts, and `run --resume` on 2 ranks completes it with the records
# of an uninterrupted run, the user block kept.
set -u
source "$(dirname "$0")/lib.sh"
as_test_init userblock
cd "$tmp" || exit 1
if ! command -v h5jam >/dev/null; then
  echo "skip: h5jam (hdf5-tools) is not installed"
  exit 0
fi
slow_spec userblock 5 >spec.yaml
printf 'a user block: %0986d\n' 0 >ub.txt # 1,001 bytes: h5jam pads the block to 1,024
done_of() { "$bin" status "$1" 2>&1 | sed -n 's/^trials: \([0-9]*\) \/ 30 done.*/\1/p'; }

"$mpiexec" -n 1 "$bin" run spec.yaml -o ref.h5 -q >/dev/null 2>&1
h5jam -i ref.h5 -u ub.txt -o refj.h5 >/dev/null 2>&1
check "h5jam: a 1,024-byte user block" bash -c 'h5dump -B "$1" | grep -q "USERBLOCK_SIZE 1024"' _ refj.h5
st=$("$bin" status refj.h5 2>&1)
check "jammed complete file: 30 of 30 done" grep -q "^trials: 30 / 30 done" <<<"$st"
check "jammed complete file: no damaged row" grep -q "30 rows and 0 bulk slabs checked, 0 damaged row" <<<"$st"

"$mpiexec" -n 2 "$bin" run spec.yaml -o s.h5 -q --time-limit 0.05 >a.log 2>&1; rc=$?
check "first segment stopped early: exit 99 ($rc)" test $rc -eq 99
h5jam -i s.h5 -u ub.txt -o j.h5 >/dev/null 2>&1
n=$(done_of s.h5) m=$(done_of j.h5)
check "jammed stopped file: $m done, as the file itself ($n), fewer than 30" \
  test -n "$n" -a "$n" = "$m" -a "${n:-30}" -lt 30
"$mpiexec" -n 2 "$bin" run spec.yaml -o j.h5 --resume -q >b.log 2>&1; rc=$?
check "resume of the jammed file on 2 ranks: exit 0 ($rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat b.log
check "resumed jammed file equals an uninterrupted run" \
  "$py" "$tools/compare_results.py" ref.h5 j.h5 --require-complete
check "resumed jammed file: the user block kept" \
  bash -c 'h5dump -B "$1" | grep -q "USERBLOCK_SIZE 1024"' _ j.h5
exit $fail
