#!/usr/bin/env bash
# The benchmarks whose figures docs/performance.md states, each rerun at small scale (besides
# bench/run_vs_inprocess.sh: cli_test_run_vs_inprocess). Each exits 0 and prints its figures,
# and the figures hold together:
#   * bench/plan_accuracy.sh --fit on d1.yaml and sinkhorn.yaml: one row per spec whose ratio is
#     its predicted over its measured CPU time, within a factor 10 (the docs' tables: 1.5 on a
#     quiet core; with Sinkhorn's iterations unpriced sinkhorn.yaml reads 0.08), the range
#     line of those ratios, and a fit of AS_COST_RANK_START_S alone whose squared log ratios
#     sum to no more than before (a least-squares fit that starts from the figures of cost.h
#     cannot end worse), the other figures kept; an unknown FIT_FREE figure is refused by name;
#     without python3-scipy, --fit exits 77 naming it and the rows are checked without a fit;
#   * bench/vs_peer.sh, one pair, the peer's rounds shortened: both rates and their ratio;
#     without python3-numba, it exits 77 naming it (each such part prints SKIPPED and why);
#   * bench_classify, bench_pipeline: the same record digest on two runs (a trial is a pure
#     function of its parameters), and the paper's setting consistent with its theorem;
#     bench_classify hull3: the exact 3-D vertex test, the LP and the 3-D count agree (it exits
#     3 otherwise);
#   * bench_crc: both paths give the same CRC for every size;
#   * `attnsweep bench all`: every benchmark of `help bench` prints its line, a share of dgemm
#     that is its two rates' ratio, the high-d trial to T, Sinkhorn within its tolerance;
#   * bench/summarize_1m.sh at 2,000 rows: both commands' wall time and peak memory.
# Speed is not judged here (the benchmarks' figures are for a quiet core).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init bench_scripts
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
benchdir=$(dirname "$bin")/bench
export OPENBLAS_NUM_THREADS=1

# --- bench/plan_accuracy.sh
fit=--fit
if ! py_has scipy.optimize; then
  err=$(bash "$src/bench/plan_accuracy.sh" --fit 2>&1 >/dev/null)
  rc=$?
  check "plan_accuracy.sh --fit without scipy: exit 77 naming python3-scipy (rc $rc: $err)" \
    bash -c '[ "$1" -eq 77 ] && grep -q "python3-scipy" <<<"$2"' _ "$rc" "$err"
  skip "plan_accuracy.sh --fit" "python3-scipy is not installed (tests/deps.sh --test installs it)"
  fit=
fi
ATTNSWEEP=$bin FIT_FREE=RANK_START_S bash "$src/bench/plan_accuracy.sh" $fit \
  "$src/jobs/examples/d1.yaml" "$src/jobs/examples/sinkhorn.yaml" >"$tmp/pa" 2>"$tmp/pa.err"
rc=$?
cat "$tmp/pa"
check "plan_accuracy.sh ${fit:-without --fit} exits 0 (rc $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/pa.err"
$py - "$tmp/pa" "$fit" <<'PY' || fail=1
import math, re, sys
out = open(sys.argv[1]).read()
bad = []
if not re.search(r"^machine: .* \((avx512f|avx2|no AVX2)\), [0-9]+ CPUs; 20[0-9-]+$", out, re.M):
    bad.append("no machine line")
rows = {}
row = r"^\| (\w+) \| ([0-9]+) \| ([0-9.e+-]+) \| ([0-9.]+) \| ([0-9.]+) \|$"
for m in re.finditer(row, out, re.M):
    rows[m.group(1)] = [float(x) for x in m.groups()[1:]]
if sorted(rows) != ["d1", "sinkhorn"]:
    bad.append("rows %s, not d1 and sinkhorn" % sorted(rows))
for name, (trials, pred, meas, ratio) in rows.items():
    if trials < 1 or pred <= 0 or meas <= 0:
        bad.append("%s: trials %g, predicted %g, measured %g" % (name, trials, pred, meas))
        continue
    if abs(pred / meas - ratio) > 0.006 + 0.01 * ratio:  # 3 significant digits of pred
        bad.append("%s: ratio %g is not %g / %g" % (name, ratio, pred, meas))
    if not 0.1 <= ratio <= 10:
        bad.append("%s: predicted / measured %g, beyond a factor 10" % (name, ratio))
m = re.search(r"^2 specs, predicted / measured from ([0-9.]+) to ([0-9.]+)$", out, re.M)
ratios = sorted(r[3] for r in rows.values())
if not m:
    bad.append("no range line for 2 specs")
elif ratios and [float(m.group(1)), float(m.group(2))] != [ratios[0], ratios[-1]]:
    bad.append("range %s-%s is not the rows' %s" % (m.group(1), m.group(2), ratios))
fit = {} if sys.argv[2] != "--fit" else {f[0]: f[1:] for f in re.findall(
    r"^  AS_COST_(\w+) +([0-9.e+-]+)  \(now ([0-9.e+-]+)(, kept)?\)$", out, re.M)}
if sys.argv[2] != "--fit":
    pass  # no fit to check (no scipy)
elif "RANK_START_S" not in fit or fit["RANK_START_S"][2]:
    bad.append("RANK_START_S not fitted: %s" % fit.get("RANK_START_S"))
elif not 0 < float(fit["RANK_START_S"][0]) < 10:
    bad.append("fitted start %s s" % fit["RANK_START_S"][0])
kept = [n for n, (v, now, k) in fit.items() if n != "RANK_START_S" and not (k and v == now)]
if sys.argv[2] == "--fit" and (len(fit) < 5 or kept):
    bad.append("figures not kept as they were: %s (of %d)" % (kept, len(fit)))
m = re.search(r"^fitted ratios: ([0-9.]+) to ([0-9.]+)$", out, re.M)
if sys.argv[2] != "--fit":
    if m:
        bad.append("fitted ratios without --fit")
elif not m:
    bad.append("no fitted ratios")
elif len(ratios) == 2:
    # every ratio is printed to 2 decimals: its log is within 0.005 / r of the true one
    def ss(rs):
        return sum(math.log(r) ** 2 for r in rs)
    def slack(rs):
        return sum(2 * abs(math.log(r)) * 0.005 / r + (0.005 / r) ** 2 for r in rs)
    fitted = [float(r) for r in m.groups()]
    if ss(fitted) > ss(ratios) + slack(fitted) + slack(ratios):
        bad.append("the fit ends worse: sum of squared log ratios %.4f before, %.4f after"
                   % (ss(ratios), ss(fitted)))
for b in bad:
    print("FAIL: " + b)
print("ok: plan_accuracy's figures hold together" if not bad else "FAIL: %d problems" % len(bad))
sys.exit(1 if bad else 0)
PY
if [ -n "$fit" ]; then
  err=$(ATTNSWEEP=$bin FIT_FREE="RANK_START_S NOPE" bash "$src/bench/plan_accuracy.sh" --fit \
    "$src/jobs/examples/d1.yaml" 2>&1 >/dev/null)
  rc=$?
  check "plan_accuracy.sh --fit with FIT_FREE NOPE fails naming it (rc $rc: $err)" \
    bash -c '[ "$1" -ne 0 ] && grep -q "unknown figure(s) NOPE" <<<"$2"' _ "$rc" "$err"
fi

# --- bench/vs_peer.sh
bash "$src/bench/vs_peer.sh" "$bin" 1 200 0.2 >"$tmp/vp" 2>"$tmp/vp.err"
rc=$?
cat "$tmp/vp"
if ! py_has numba; then
  check "vs_peer.sh without numba: exit 77 naming python3-numba (rc $rc)" \
    bash -c '[ "$1" -eq 77 ] && grep -q "python3-numba" "$2"' _ "$rc" "$tmp/vp.err"
  skip "vs_peer.sh" "python3-numba is not installed (tests/deps.sh --test installs it)"
else
  check "vs_peer.sh exits 0 (rc $rc)" test $rc -eq 0
  [ $rc -eq 0 ] || cat "$tmp/vp.err"
  check "vs_peer.sh names the kernels of the bench" \
    grep -q "^attnsweep bench: one core, CPU time; kernels for " "$tmp/vp"
  line=$(grep "^pair 1: " "$tmp/vp")
  check "vs_peer.sh: both rates and their ratio ($line)" $py -c '
import re, sys
m = re.fullmatch(r"pair 1: attnsweep whole trials batched ([0-9]+) /s, peer ([0-9]+) /s, "
                 r"ratio ([0-9.]+)x", sys.argv[1])
a, b, r = (float(x) for x in m.groups())
sys.exit(0 if a > 0 and b > 0 and abs(a / b - r) <= 0.051 else 1)' "$line"
fi

# --- bench_classify, bench_pipeline, bench_crc
for b in bench_classify bench_pipeline bench_crc; do
  check "$b is built next to attnsweep" test -x "$benchdir/$b"
done
twice() { # twice NAME ARGS...: runs the bench twice; exit 0 and the same record digest
  local b=$1 rc d1 d2
  shift
  "$benchdir/$b" "$@" >"$tmp/$b.1" && "$benchdir/$b" "$@" >"$tmp/$b.2"
  rc=$?
  cat "$tmp/$b.1"
  check "$b exits 0 (rc $rc)" test $rc -eq 0
  d1=$(grep -o "record digest [0-9a-f]*" "$tmp/$b.1")
  d2=$(grep -o "record digest [0-9a-f]*" "$tmp/$b.2")
  check "$b: the same digest twice ($d1, $d2)" bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$d1" "$d2"
}
twice bench_classify 100 1
check "bench_classify: a time per trial" grep -Eq " [0-9.]+ us per trial at best" "$tmp/bench_classify.1"
"$benchdir/bench_classify" hull3 10 12 >"$tmp/h3"
rc=$?
cat "$tmp/h3"
check "bench_classify hull3: exact test, LP and the 3-D count agree (rc $rc)" \
  bash -c '[ "$1" -eq 0 ] && grep -Eq "; [0-9]+ vertices either way$" "$2" &&
    grep -Eq ": [0-9.]+ us per set of 12 points \(CPU\); [0-9]+ vertices, as the tests found$" "$2"' \
  _ "$rc" "$tmp/h3"
twice bench_pipeline 100
check "bench_pipeline: the paper's setting (V = I) consistent in all 100 trials" \
  grep -q "verdicts: consistent 100$" "$tmp/bench_pipeline.1"
"$benchdir/bench_crc" 0.02 >"$tmp/crc"
rc=$?
cat "$tmp/crc"
check "bench_crc exits 0 (rc $rc)" test $rc -eq 0
check "bench_crc: every path gives the same CRC for each size" $py -c '
import re, sys
crc, out = {}, open(sys.argv[1]).read()
for size, c in re.findall(r" ([0-9]+) bytes +[0-9.]+ GB/s +\(crc ([0-9a-f]+)\)", out):
    crc.setdefault(size, set()).add(c)
sys.exit(0 if len(crc) >= 2 and all(len(v) == 1 for v in crc.values()) and
         out.count("GB/s") >= 4 else 1)' "$tmp/crc"

# --- attnsweep bench all (trials: vs_peer.sh above)
"$bin" bench all >"$tmp/all" 2>"$tmp/all.err"
rc=$?
cat "$tmp/all"
check "attnsweep bench all exits 0 (rc $rc)" test $rc -eq 0
names=$("$bin" help bench | sed -n '/^benchmarks/,$p' | awk 'NR > 1 && $1 != "all" {print $1}')
$py - "$tmp/all" $names <<'PY' || fail=1
import re, sys
out = open(sys.argv[1]).read()
bad = []
for name in sys.argv[2:]:
    if not re.search(r"^%s +\S" % name, out, re.M):
        bad.append("no line of %s" % name)
for name, a, b, share in re.findall(r"^(\w+) .*: ([0-9.]+) GFLOP/s .*, dgemm ([0-9.]+) GFLOP/s, "
                                    r"([0-9]+)% of dgemm", out, re.M):
    if abs(100 * float(a) / float(b) - float(share)) > 1:
        bad.append("%s: %s%% of dgemm is not %s / %s" % (name, share, a, b))
    if not float(a) > 0:
        bad.append("%s: %s GFLOP/s" % (name, a))
if len(re.findall(r"% of dgemm", out)) < 3:
    bad.append("fewer than 3 shares of dgemm (stage, stream, heads)")
for name, a, b, x in re.findall(r"^(\w+) +n = d = 256: ([0-9.]+) ms per right-hand side .*, "
                                r"plain ([0-9.]+) ms in the same run: ([0-9.]+)x", out, re.M):
    if abs(float(a) / float(b) - float(x)) > 0.012:  # both times and the ratio rounded
        bad.append("%s: %sx is not %s / %s" % (name, x, a, b))
if not re.search(r"^highdim .*outcome reached_T\)$", out, re.M):
    bad.append("the high-d trial did not reach T")
if not re.search(r"^sinkhorn .*: iterations per stage mean [0-9.]+, max [0-9]+ over [0-9]+ stages; "
                 r"0 above tol", out, re.M):
    bad.append("Sinkhorn iterations above the tolerance, or no such line")
for b in bad:
    print("FAIL: " + b)
print("ok: bench all's figures hold together" if not bad else "FAIL: %d problems" % len(bad))
sys.exit(1 if bad else 0)
PY
# --- bench/summarize_1m.sh at 2,000 rows: the file is written, both commands exit 0 and print
# their wall time and peak memory, and the machine is named
out=$(ATTNSWEEP=$bin bash "$src/bench/summarize_1m.sh" --rows 2000 2>&1)
rc=$?
check "summarize_1m.sh --rows 2000 exits 0 ($rc)" test $rc -eq 0
check "summarize_1m.sh names the machine" grep -q "^machine: .* cores" <<<"$out"
check "summarize_1m.sh wrote 2000 rows" grep -q "^wrote 2000 rows" <<<"$out"
for cmd in summarize report; do
  check "summarize_1m.sh: $cmd's wall time and peak RSS, exit 0" \
    grep -Eq "^$cmd +wall +[0-9.]+ s +peak RSS +[0-9]+ MiB +exit 0" <<<"$out"
done

exit $fail
