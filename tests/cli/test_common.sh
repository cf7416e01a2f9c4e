#!/usr/bin/env bash
# Common random numbers (docs/spec.md, "Enumeration and seeds"): under `common: [T, attention]`
# every pair of trials that differ only in T and the attention has the same initial tokens and
# the same triple (V, M from /bulk), trials that differ in another key or the replicate do not;
# the file names the keys (root attribute common_keys), plan shows them; 1 and 2 ranks and a
# resume give identical records; a spec without `common` keys its draws by the trial index as
# before (its tokens differ across T); a common key zipped with one that is not is refused.
source "$(dirname "$0")/lib.sh"
as_test_init common
cd "$tmp" || exit 1

spec() { # spec NAME COMMON-LINE
  cat >"$1.yaml" <<YAML
name: $1
seed: 7
replicates: 2
$2
output: {initial: true, matrices: true}
sweep:
  vfamily: gaussian
  mfamily: gaussian
  d: 2
  n: 6
  dt: 0.1
  T: [0.5, 5]
  attention: [softmax, sinkhorn]
  v_scale: [1, 2]
YAML
}
spec crn "common: [attention, T]"
spec plain ""

out=$("$bin" plan crn.yaml 2>&1)
check "plan shows the common keys" grep -q "differ only in T,attention share" <<<"$out"
check "run 1 rank" "$mpiexec" -n 1 "$bin" run -q crn.yaml -o one.h5
check "run 2 ranks" "$mpiexec" -n 2 "$bin" run -q crn.yaml -o two.h5
check "run without common" "$mpiexec" -n 1 "$bin" run -q plain.yaml -o plain.h5
check "1 and 2 ranks: identical records" "$py" "$tools/compare_results.py" one.h5 two.h5 \
  --require-complete
# A resume of a run stopped early: the remaining trials keyed the same way.
"$mpiexec" -n 1 "$bin" run -q crn.yaml -o part.h5 --time-limit=0.001 >/dev/null 2>&1
"$mpiexec" -n 2 "$bin" run -q crn.yaml -o part.h5 --resume >/dev/null 2>&1
check "resumed: identical records" "$py" "$tools/compare_results.py" one.h5 part.h5 \
  --require-complete

cat >pairs.py <<'PY'
import sys
import h5py
import numpy as np

def slabs(f, kind):
    off = f["bulk/%s_offset" % kind][:]
    data = f["bulk/" + kind][:]
    return [data[off[i]:off[i + 1]] for i in range(len(off) - 1)]

def load(path):
    with h5py.File(path, "r") as f:
        t = f["trials"][...]
        att = h5py.check_enum_dtype(t.dtype["attention"])
        name = {v: k for k, v in att.items()}
        rows = [(int(r["replicate"]), float(r["T"]), name[r["attention"]], float(r["v_scale"]))
                for r in t]
        common = f.attrs["common_keys"]
        common = common.decode() if isinstance(common, bytes) else str(common)
        return rows, common, slabs(f, "initial_tokens"), slabs(f, "V"), slabs(f, "M")

rows, common, X, V, M = load(sys.argv[1])
bad = 0
if common != "T,attention":
    print("FAIL: common_keys = %r" % common)
    bad += 1
same = differ = 0
for i in range(len(rows)):
    for j in range(i + 1, len(rows)):
        (ri, _, _, si), (rj, _, _, sj) = rows[i], rows[j]
        eq = (np.array_equal(X[i], X[j]) and np.array_equal(V[i], V[j])
              and np.array_equal(M[i], M[j]))
        if ri == rj and si == sj:  # differ only in T and attention
            same += 1
            if not eq:
                print("FAIL: trials %d and %d differ only in T/attention but not in draws" % (i, j))
                bad += 1
        elif eq:
            print("FAIL: trials %d and %d differ in replicate or v_scale yet share draws" % (i, j))
            bad += 1
        else:
            differ += 1
# 2 replicates x 2 v_scale groups of 4 trials: 6 pairs each.
if same != 24 or differ != 96:
    print("FAIL: %d sharing pairs (24 expected), %d differing (96)" % (same, differ))
    bad += 1
rows0, common0, X0, _, _ = load(sys.argv[2])
if common0 != "":
    print("FAIL: common_keys of a spec without it = %r" % common0)
    bad += 1
# Without common: keyed by the trial index, so T = 0.5 and T = 5 draw different tokens.
if np.array_equal(X0[0], X0[4]):
    print("FAIL: without common, trials 0 and 4 share their tokens")
    bad += 1
print("pairs sharing draws: %d, pairs not: %d" % (same, differ))
sys.exit(1 if bad else 0)
PY
check "pairs that differ only in common keys share tokens and triples" "$py" pairs.py one.h5 \
  plain.h5

cat >zip.yaml <<'YAML'
common: [T]
sweep:
  zip: [{T: [1, 2]}, {dt: [0.1, 0.05]}]
YAML
out=$("$bin" validate zip.yaml 2>&1) && rc=0 || rc=$?
check "a common key zipped with another: exit 2 ($rc)" test "$rc" -eq 2
check "  named at 3:10 ($out)" grep -q "^zip.yaml:3:10: common: 'T' is zipped with 'dt'" <<<"$out"
printf 'common: [Tt]\n' >typo.yaml
out=$("$bin" validate typo.yaml 2>&1) && rc=0 || rc=$?
check "an unknown common key: exit 2 with a suggestion ($out)" \
  grep -q "^typo.yaml:1:10: unknown key 'Tt' in common (did you mean 'T'?)" <<<"$out"
exit $fail
