#!/usr/bin/env bash
# bench/run_vs_inprocess.sh at small scale (docs/performance.md states its figures): one pair of
# 4,000 and 6,000 trials. The script exits 0 and prints, with numbers that hold together:
#   * the CPU seconds of the two runs, the larger for more trials;
#   * the fixed part, a one-trial run, and `attnsweep --version` below that run (the process
#     start is part of every run) and the one-trial run below the 4,000-trial run;
#   * the ratios to the in-process rate, and their median over the pair (the same values).
# Speed is not judged here (the benchmark's figures are for a quiet core).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init run_vs_inprocess
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bash "$src/bench/run_vs_inprocess.sh" "$bin" 6000 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
check "the benchmark exits 0 (rc $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$tmp/err"
$py - "$tmp/out" <<'PY' || fail=1
import re, sys
out = open(sys.argv[1]).read()
bad = []
def num(pat):
    m = re.search(pat, out)
    if not m:
        bad.append("no line matching %r" % pat)
        return None
    return [float(x) for x in m.groups()]
runs = num(r"run, 4000 trials: ([0-9.]+) s CPU; run, 6000 trials: ([0-9.]+) s CPU")
fixed = num(r"fixed part: (-?[0-9.]+) s \(a one-trial run: ([0-9.]+) s, of which")
start = num(r"libraries alone: ([0-9.]+) s\)")
ratios = num(r"run / in process: ([0-9.]+)% whole run, (-?[0-9.]+)% at the margin")
median = num(r"median over 1 pairs: ([0-9.]+)% of the in-process rate over the whole run, "
             r"(-?[0-9.]+)% at the margin")
if runs and not 0 < runs[0] < runs[1]:
    bad.append("CPU of 4,000 and 6,000 trials: %s" % runs)
if fixed and start and runs and not 0 < start[0] < fixed[1] < runs[0]:
    bad.append("--version %s, one trial %s, 4,000 trials %s" % (start, fixed[1], runs[0]))
if ratios and median and (abs(ratios[0] - median[0]) > 0.051 or abs(ratios[1] - median[1]) > 0.051):
    bad.append("median of one pair %s is not its ratios %s" % (median, ratios))
if ratios and not 0 < ratios[0] < 1000:
    bad.append("whole-run ratio %s" % ratios[0])
for b in bad:
    print("FAIL: " + b)
print("ok: the figures hold together" if not bad else "FAIL: %d problems" % len(bad))
sys.exit(1 if bad else 0)
PY
exit $fail
