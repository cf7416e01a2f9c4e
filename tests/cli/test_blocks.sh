#!/usr/bin/env bash
# Transformer blocks (issue 14, docs/variants.md): `heads: 1` and `skip: true` give records
# byte-identical to the specs without them; a spec that uses every new key gives identical
# records with 1, 2, 3 and 4 ranks; a key without effect is an error at SPEC:LINE:COL (exit 2);
# per-head files of the wrong shape (or with a non-finite entry) fail their trial with a message
# naming the file, the dataset and the head; the stacked explicit form of two heads with V/2
# equals one head with V; the four examples run at small size.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init blocks
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$tmp" || exit 1

# ---- reductions: heads: 1, skip: true
base='    - {case: id, vfamily: identity, mfamily: identity, d: 2, n: 8, T: 2}
    - {case: rnd, vfamily: gaussian, mfamily: gaussian, d: 3, n: 6, T: 1, method: dopri5}
    - {case: lay, vfamily: symmetric, v_kpos: 1, mfamily: spd, d: 3, n: 6, T: 2, method: layersSKIP}'
spec() { # spec FILE DEFAULTS SKIP
  { printf 'name: red\nseed: 5\nreplicates: 2\noutput: {final: true, attention: true}\n'
    printf 'defaults: {init: {kind: box, scale: 2}%s}\nsweep:\n  concat:\n' "$2"
    printf '%s\n' "${base/SKIP/$3}"; } >"$1"
}
spec plain.yaml "" ""
spec heads1.yaml ", heads: 1" ", skip: true"
for s in plain heads1; do
  "$mpiexec" -n 1 "$bin" run $s.yaml -o $s.h5 --quiet >$s.log 2>&1
  check "run $s" test $? -eq 0
done
out=$("$py" "$tools/compare_results.py" plain.h5 heads1.h5 --require-complete)
check "heads: 1, skip: true: records byte-identical to the base model: $out" test $? -eq 0

# ---- every new key, 1..4 ranks
cat >all.yaml <<'YAML'
name: blocks_ranks
seed: 21
replicates: 2
output: {final: true, attention: true, matrices: true, snapshots: [0.5]}
defaults: {d: 3, n: 6, T: 1, dt: 0.1, vfamily: gaussian, mfamily: gaussian,
           init: {kind: box, scale: 2}}
sweep:
  concat:
    - {case: heads, heads: [1, 3], method: [rk4, layers]}
    - {case: noskip, heads: 2, method: layers, skip: false, vars: [z, x]}
    - {case: inside, ffn: [relu, tanh], ffn_form: inside, ffn_w: [identity, random]}
    - {case: block, heads: 2, ffn: relu, ffn_form: block, ffn_width: 5, ffn_w: random,
       ffn_bias: true, method: [dopri5, layers]}
    - {case: per_layer, heads: 2, weights: per_layer, weights_every: [1, 3], method: [euler, layers]}
YAML
for np in 1 2 3 4; do
  "$mpiexec" -n $np "$bin" run all.yaml -o all$np.h5 --quiet >all$np.log 2>&1
  rc=$?
  check "every new key, $np rank(s): run completes (rc $rc)" test $rc -eq 0
  [ $rc -eq 0 ] || cat all$np.log
done
for np in 2 3 4; do
  out=$("$py" "$tools/compare_results.py" all1.h5 all$np.h5 --require-complete)
  check "every new key: $np ranks identical to 1: $out" test $? -eq 0
done
"$py" - all1.h5 <<'PY'
import sys, h5py
t = h5py.File(sys.argv[1], "r")["trials"][...]
ver = {v: k for k, v in h5py.check_enum_dtype(t.dtype["verdict"]).items()}
bad = [r["message"] for r in t if ver[r["verdict"]] in ("failed", "nonfinite")]
assert not bad, bad
assert set(t["heads"]) == {1, 2, 3}, set(t["heads"])
assert (t["residual"] >= 0).all() and (t["residual"] <= 1).all(), t["residual"]
field = t["heads"] > 1
assert ((t["rank_p_head_min"] >= 1) & (t["rank_p_head_min"] <= t["rank_p_head_max"])
        & (t["rank_p_head_max"] <= t["n"]))[field].all(), t[["rank_p_head_min", "rank_p_head_max"]]
base = (t["heads"] == 1) & (t["ffn"] == 0) & (t["weights"] == 0) & (t["skip"] != 0)
assert (t["rank_p_head_min"][base] == -1).all(), t["rank_p_head_min"][base]
print("ok: no failed trial; residual in [0, 1]; head ranks in 1..n for several heads, -1 for the base")
PY
check "every new key: trials classified" test $? -eq 0

# ---- bad input: SPEC:LINE:COL, exit 2
cat >bad.yaml <<'YAML'
name: bad
sweep:
  concat:
    - {case: a, method: rk4, skip: false}
    - {case: b, ffn_width: 4}
    - {case: c, weights_every: 3}
YAML
"$bin" validate bad.yaml >bad.out 2>&1
rc=$?
check "keys without effect: exit 2 (rc $rc)" test $rc -eq 2
check "skip with an ODE method named at 4:36" grep -q "^bad.yaml:4:36: .*skip has no effect" bad.out
check "ffn_width with ffn: none named at 5:28" grep -q "^bad.yaml:5:28: .*ffn_width has no effect" bad.out
check "weights_every with shared weights named" grep -q "^bad.yaml:6:.*weights_every has no effect" bad.out
printf 'name: mem\nsweep: {heads: 64, n: 100000, d: 64, weights: per_layer, T: 100, dt: 0.01}\n' >mem.yaml
"$bin" validate mem.yaml >mem.out 2>&1
rc=$?
check "a workspace larger than memory: exit 2 (rc $rc)" test $rc -eq 2
check "a workspace larger than memory is named at its place" grep -q 'mem.yaml:2:.*workspace.*GB' mem.out

# ---- per-head files: wrong shape, non-finite entry
"$py" - <<'PY'
import h5py, numpy as np
with h5py.File("heads2.h5", "w") as f:
    f["triples/V"] = np.stack([np.eye(2), 0.5 * np.eye(2)])[None]      # [1][2][2][2]
    f["triples/M"] = np.stack([np.eye(2), np.eye(2)])[None]
with h5py.File("nan.h5", "w") as f:
    V = np.stack([np.eye(2), np.eye(2)])[None].copy()
    V[0, 1, 1, 0] = np.nan
    f["triples/V"] = V
    f["triples/M"] = np.stack([np.eye(2), np.eye(2)])[None]
PY
cat >files.yaml <<'YAML'
name: files
output: {final: true}
sweep:
  concat:
    - {case: ok, vfamily: file, mfamily: file, file: heads2.h5, heads: 2, d: 2, n: 5, T: 1}
    - {case: wrong_h, vfamily: file, mfamily: file, file: heads2.h5, heads: 3, d: 2, n: 5, T: 1}
    - {case: no_axis, vfamily: file, mfamily: file, file: heads2.h5, d: 2, n: 5, T: 1}
    - {case: nan, vfamily: file, mfamily: file, file: nan.h5, heads: 2, d: 2, n: 5, T: 1}
    # the stacked explicit form: two heads with V/2 each against one head with V (x variables)
    - {case: one, V: [[1.2, 0.1], [0.05, 0.6]], M: [[0.8, 0.2], [-0.1, 0.6]], vars: x, T: 1,
       init: {data: [[1, 0.5], [-2, 1], [0.3, -1.7], [2.2, 2], [-1, -1]]}}
    - {case: two, heads: 2, V: [[0.6, 0.05], [0.025, 0.3], [0.6, 0.05], [0.025, 0.3]],
       M: [[0.8, 0.2], [-0.1, 0.6], [0.8, 0.2], [-0.1, 0.6]], vars: x, T: 1,
       init: {data: [[1, 0.5], [-2, 1], [0.3, -1.7], [2.2, 2], [-1, -1]]}}
YAML
"$mpiexec" -n 1 "$bin" run files.yaml -o files.h5 --quiet >files.log 2>&1
rc=$?
check "per-head files: the sweep completes with failed trials: exit 4 (rc $rc)" test $rc -eq 4
"$py" - files.h5 <<'PY'
import sys, h5py
t = h5py.File(sys.argv[1], "r")["trials"][...]
msg = [r["message"].decode() for r in t]
ver = {v: k for k, v in h5py.check_enum_dtype(t.dtype["verdict"]).items()}
assert ver[t[0]["verdict"]] != "failed", msg[0]
for i, words in ((1, ["heads2.h5", "/triples/V", "heads = 3"]), (2, ["heads2.h5", "/triples/V", "head axis"]),
                 (3, ["nan.h5", "/triples/V", "head 1"])):
    assert ver[t[i]["verdict"]] == "failed", (i, msg[i])
    assert all(w in msg[i] for w in words), (i, msg[i])
print("ok: messages name file, dataset, head:", msg[1], "|", msg[3])
PY
check "per-head file failures name the file, the dataset and the head" test $? -eq 0
"$bin" validate files.yaml >files_val.out 2>&1
rc=$?
check "per-head files of the wrong shape: refused at validate, exit 2 (rc $rc)" test $rc -eq 2
check "validate names the file, the dataset and the heads" \
  grep -q "heads2.h5: dataset /triples/V holds another number of heads; heads = 3" files_val.out
"$py" - files.h5 <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
t, v, o = f["trials"][...], f["bulk/final_tokens"][...], f["bulk/final_tokens_offset"][...]
a, b = v[o[4]:o[5]], v[o[5]:o[6]]
assert t[5]["heads"] == 2 and t[5]["d"] == 2 and len(a) == len(b) == 10, (t[5]["d"], len(a))
err = np.abs(a - b).max() / np.abs(a).max()
assert err <= 1e-12, err
print("ok: stacked explicit heads V/2, V/2 equal one head V: relative difference %.2g" % err)
PY
check "the stacked explicit form: two heads V/2 equal one head V to 1e-12" test $? -eq 0

# ---- the examples at small size
for e in multihead ffn skip per_layer; do
  sed -e 's/^replicates: .*/replicates: 1/' -e 's/n: 32, d: 8, T: 12/n: 8, d: 4, T: 3/' \
    -e 's/{n: 32, d: 2, T: 15/{n: 8, d: 2, T: 2/' -e 's/{n: 20, d: 3, T: 15/{n: 6, d: 3, T: 1/' \
    -e 's/{n: 20, d: 3, T: 30/{n: 6, d: 3, T: 4/' -e 's/snapshots: \[1, 2, 3.*\]/snapshots: [1, 2, 3]/' \
    "$src/jobs/examples/$e.yaml" >ex_$e.yaml
  check "example $e is made small" test "$(diff "$src/jobs/examples/$e.yaml" ex_$e.yaml | grep -c '^>')" -ge 2
  "$mpiexec" -n 1 "$bin" run ex_$e.yaml -o ex_$e.h5 --quiet >ex_$e.log 2>&1
  rc=$?
  check "example $e runs (rc $rc)" test $rc -eq 0
  out=$("$py" "$tools/compare_results.py" --complete ex_$e.h5)
  check "example $e: every row complete: $out" test $? -eq 0
done
exit $fail
