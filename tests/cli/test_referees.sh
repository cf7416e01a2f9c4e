#!/usr/bin/env bash
# The referees' campaign (jobs/referees/): every spec validates at the local scale and at the
# cluster scale of its "# scale cluster:" line, states a question citing a reviewer, and has an
# answer function in referees.py (and every answer its spec); run.sh runs two specs into a
# referees.html whose separability answer carries the numbers h5py reads from the results
# file (the fraction of trials with sep_gap > 0 and their count, per vfamily and d); bad
# arguments of run.sh exit 2.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
as_test_init referees
dir=$src/jobs/referees

n=0
for f in "$dir"/*.yaml; do
  name=$(basename "$f" .yaml)
  n=$((n + 1))
  check "$name validates (local scale)" "$bin" validate "$f" >/dev/null
  line=$(sed -n 's/^# scale cluster: *//p' "$f")
  check "$name has a cluster scale line" test -n "$line"
  eval "sets=($line)"
  check "$name validates at the cluster scale (${sets[*]})" "$bin" validate "$f" "${sets[@]}" >/dev/null
  check "$name states a question citing a reviewer" \
    bash -c "sed -n '/^[^#]/q;p' '$f' | grep -q 'reviewer [A-D]' && sed -n '/^[^#]/q;p' '$f' | grep -q '?'"
done
check "at least 15 specs ($n)" test "$n" -ge 15
specs=$(cd "$dir" && ls -- *.yaml | sed 's/\.yaml$//' | sort | tr '\n' ' ')
answers=$("$py" -c "
import sys; sys.path.insert(0, '$dir')
import referees
print(' '.join(sorted(q[0] for q in referees.QUESTIONS)))" 2>&1)
check "every spec has an answer and every answer a spec" test "$answers " = "$specs"

out=$tmp/c
err=$(ATTNSWEEP=$bin MPIEXEC=$mpiexec bash "$dir/run.sh" --only a_q3_separability,a_q7_skip --out "$out" --ranks 1 2>&1)
rc=$?
check "run.sh --only two specs exits 0 ($rc)" test $rc -eq 0
check "run.sh wrote referees.html" test -s "$out/referees.html"
check "run.sh wrote times.tsv with both specs" test "$(grep -c '^a_q' "$out/times.tsv" 2>/dev/null)" -eq 2
check "the page has two answers" test "$(grep -o 'class="answer"' "$out/referees.html" | wc -l)" -eq 2
check "the page has two figures" test "$(grep -o '<figure id=' "$out/referees.html" | wc -l)" -eq 2
# the separability answer quotes the data: per (vfamily, d), "<pct>% [" and "of <count>"
"$py" - "$out/a_q3_separability.h5" "$out/referees.html" <<'PY'
import html, re, sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r")
t = f["trials"][:]
fam = {v: k for k, v in h5py.check_enum_dtype(f["trials"].dtype["vfamily"]).items()}
page = html.unescape(open(sys.argv[2]).read())
ans = re.search(r'<h2 id="a_q3_separability">.*?<div class="answer">(.*?)</div>', page, re.S)
assert ans, "no answer for a_q3_separability"
ans = " ".join(ans.group(1).split())
bad = []
for v in np.unique(t["vfamily"]):
    for d in np.unique(t["d"]):
        sel = (t["vfamily"] == v) & (t["d"] == d) & np.isfinite(t["sep_gap"])
        m = int(sel.sum())
        frac = float((t["sep_gap"][sel] > 0).mean()) if m else float("nan")
        want = "vfamily = %s, d = %d: %.0f%% [" % (fam[int(v)], d, 100 * frac)
        if want not in ans or ("of %d " % m) not in ans:
            bad.append((want, m))
assert not bad, "the answer does not carry %s: %s" % (bad, ans)
print("ok: the separability answer carries the fractions h5py computes")
PY
check "the separability answer carries the data's numbers" test $? -eq 0
# --slurm at the cluster scale, against a stand-in sbatch that records its arguments: one job
# per spec with the spec's --set overrides, then the page job after all of them.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/sbatch" <<STUB
#!/usr/bin/env bash
echo "\$*" >>"$tmp/sbatch.log"
echo \$((1000 + \$(wc -l <"$tmp/sbatch.log")))
STUB
chmod +x "$tmp/bin/sbatch"
PATH="$tmp/bin:$PATH" ATTNSWEEP=$bin bash "$dir/run.sh" --slurm --scale cluster \
  --only a_q5_many_tokens,a_q7_skip --out "$tmp/s" >"$tmp/slurm.out" 2>&1
check "run.sh --slurm exits 0" test $? -eq 0
check "run.sh --slurm submitted 3 jobs" test "$(wc -l <"$tmp/sbatch.log" 2>/dev/null)" -eq 3
check "the a_q7_skip job carries its cluster --set" \
  grep -q "a_q7_skip.yaml -o $tmp/s/a_q7_skip.h5 --set replicates=100 --set n=64" "$tmp/sbatch.log"
check "the page job waits for both sweeps" \
  grep -q -- "--dependency=afterany:1001:1002 .*referees.py $tmp/s -o $tmp/s/referees.html" "$tmp/sbatch.log"
check "run.sh --slurm printed the plan of each sweep" test "$(grep -c '^estimate:' "$tmp/slurm.out")" -eq 2
bash "$dir/run.sh" --scale huge >/dev/null 2>&1
check "run.sh --scale huge exits 2" test $? -eq 2
bash "$dir/run.sh" --frobnicate >/dev/null 2>&1
check "run.sh with an unknown argument exits 2" test $? -eq 2
[ $fail -eq 0 ] || echo "$err" | tail -20
exit $fail
