#!/usr/bin/env bash
# Verdicts with reasons and horizons (docs/theory.md 2.2, "Reasons and horizons"):
#  1. V = I + eps N at a short horizon: some verdicts are held back by the metastability rule
#     (reason metastable, t_decide = ln 50 / sep). The same sweep with T_decide: 1.01 (each
#     trial's horizon raised past its t_decide) holds none back: every trial held back before
#     is then decided or moving, and its horizon t_final is past the t_decide it had.
#  2. V = I at a horizon too short for the tokens to settle: every such verdict is unresolved
#     for the reason moving; rerun at the largest t_decide that has an estimate, each of them
#     is decided (the measured approach rate of the end state predicts when it settles).
#  3. summarize splits the unresolved trials by reason and prints the horizon to rerun at.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init decide

cat >"$tmp/pert.yaml" <<'Y'
name: decide
seed: 7
replicates: 8
sweep:
  vfamily: identity
  mfamily: identity
  eps: [0.03, 0.1]
  perturb: v
  triple_seed: per_parameters
  d: [2, 3]
  n: 12
  T: 12
  dt: 0.1
  init: {kind: box, scale: 5}
Y
"$bin" run "$tmp/pert.yaml" -o "$tmp/a.h5" >/dev/null 2>&1
"$bin" run "$tmp/pert.yaml" --set T_decide=1.01 -o "$tmp/b.h5" >/dev/null 2>&1
check "both perturbation runs complete" test -s "$tmp/a.h5" -a -s "$tmp/b.h5"
check "held back at T = 12, decided past t_decide" "$py" - "$tmp/a.h5" "$tmp/b.h5" <<'P'
import sys, h5py, numpy as np
def read(p):
    f = h5py.File(p, "r")
    t = f["trials"][:]
    code = h5py.check_enum_dtype(f["trials"].dtype["reason"])
    vcode = h5py.check_enum_dtype(f["trials"].dtype["verdict"])
    return t, code, vcode
a, rc, vc = read(sys.argv[1])
b, _, _ = read(sys.argv[2])
meta = a["reason"] == rc["metastable"]
if meta.sum() < 2:
    sys.exit("only %d verdicts held back at T = 12" % meta.sum())
sep = np.log(50.0) / a["t_decide"][meta]   # t_decide = ln 50 / sep
if not np.all(np.isfinite(sep) & (sep > 0)):
    sys.exit("metastable verdicts without a finite horizon")
if (b["reason"] == rc["metastable"]).any():
    sys.exit("T_decide left verdicts held back by the metastability rule")
if not np.all(b["t_final"][meta] >= a["t_decide"][meta] * (1 - 1e-12)):
    sys.exit("T_decide did not raise the horizon past t_decide")
now = b["verdict"][meta]
decided = np.isin(now, [vc["consistent"], vc["violated"]])
moving = b["reason"][meta] == rc["moving"]
if not np.all(decided | moving):
    sys.exit("held-back verdicts became %s" % sorted(set(now)))
if not decided.any():
    sys.exit("no held-back verdict was decided past its horizon")
# violated exactly with a reason that says where, consistent with none
bad = (b["verdict"] == vc["violated"]) & np.isin(b["reason"], [rc["moving"], rc["metastable"], rc["none"]])
good = (b["verdict"] == vc["consistent"]) & (b["reason"] != rc["none"])
if bad.any() or good.any():
    sys.exit("a verdict and its reason disagree")
print("held back %d; past t_decide: %d decided, %d still moving" % (meta.sum(), decided.sum(), moving.sum()))
P

cat >"$tmp/id.yaml" <<'Y'
name: moving
seed: 3
replicates: 16
sweep:
  vfamily: identity
  mfamily: identity
  d: 2
  n: 12
  T: 3
  dt: 0.05
  init: {kind: box, scale: 1}
Y
"$bin" run "$tmp/id.yaml" -o "$tmp/c.h5" >/dev/null 2>&1
T=$("$py" -c "
import h5py, numpy as np
t = h5py.File('$tmp/c.h5', 'r')['trials'][:]
x = t['t_decide'][np.isfinite(t['t_decide'])]
print(repr(float(x.max()) * 1.0001) if len(x) else 'none')")
check "moving verdicts carry horizons (largest $T)" test "$T" != none
"$bin" run "$tmp/id.yaml" --set "T=$T" -o "$tmp/d.h5" >/dev/null 2>&1
check "each moving verdict is decided at the horizon it gave" "$py" - "$tmp/c.h5" "$tmp/d.h5" <<'P'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r"); a = f["trials"][:]
b = h5py.File(sys.argv[2], "r")["trials"][:]
rc = h5py.check_enum_dtype(f["trials"].dtype["reason"])
vc = h5py.check_enum_dtype(f["trials"].dtype["verdict"])
sel = (a["reason"] == rc["moving"]) & np.isfinite(a["t_decide"])
if sel.sum() < 4:
    sys.exit("only %d moving verdicts with a horizon" % sel.sum())
if not np.all(a["verdict"][sel] == vc["unresolved"]):
    sys.exit("moving but not unresolved")
undecided = ~np.isin(b["verdict"][sel], [vc["consistent"], vc["violated"]])
if undecided.any():
    sys.exit("%d of %d still undecided at their horizon" % (undecided.sum(), sel.sum()))
print("%d moving verdicts, all decided at their horizon" % sel.sum())
P

out=$("$bin" summarize "$tmp/a.h5" --by eps 2>&1)
check "summarize splits unresolved by reason" grep -q "metastable [0-9]" <<<"$out"
check "summarize prints the horizon to rerun at" grep -q "T >= [0-9]" <<<"$out"
exit $fail
