#!/usr/bin/env bash
# The one option parser (issue 20, point 4; src/cli/opts.c) and the live progress bar under
# mpiexec (point 5; src/par/sched.c).
#
# Options: every command's option table (read from its source, src/cli/cmd_*.c, not from the
# help) is what `attnsweep help CMD` lists, no more and no less; per command an option that
# takes an argument, given last without it, and an unknown option are exit 2 naming them; --long=value, --long value, -x value and -xvalue all work (run -o, plan --target-hours
# and --calibrate N, census --tol); numbers out of bounds are exit 2 naming the option and the
# bound; operands are counted after the options (`plan X --calibrate 5` has one SPEC). `help
# bench` lists the benchmarks of cmd_bench.c's table, `help summarize` the script's options
# (its argparse declarations), `help help` the topics, `help` of an unknown topic exit 2.
#
# Progress on 2 ranks: with --progress-bar, rank 0's stderr (a file here) gets the live bar's
# \r updates; without it plain lines; under a terminal (script(1) gives mpiexec a pty) the bar
# comes on by itself. After a SIGTERM drain during long trials, the last progress line's done
# count equals the done rows of the file, the interrupted trials being named as not done.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init options
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# ------------------------------------------------------------------ tables = help
# The table entries of a command's source: "name letter" per option (letter 0: none).
table_of() { # table_of SOURCE
  grep -ozE 'AS_OPT_(FLAG|VALUE|TEXT|NUM|RANGE|WHOLE|FN)\([[:space:]]*"[a-z0-9-]+",[[:space:]]*('"'"'.'"'"'|0)' "$1" |
    tr '\0' '\n' | sed -E 's/.*"([a-z0-9-]+)",[[:space:]]*'"'"'?([^'"'"']*)'"'"'?$/\1 \2/'
}
for cmd in validate plan run status reproduce repair merge census bench; do
  f=$src/src/cli/cmd_$cmd.c
  tab=$(table_of "$f" | sort)
  h=$("$bin" help "$cmd"); rc=$?
  listed=$(sed -n '/^options:/,/^$/p' <<<"$h" | grep -oE '^  (-[a-zA-Z], |    )--[a-z0-9-]+' |
    sed -E 's/^  -([a-zA-Z]), --/\1 /; s/^      --/0 /' | awk '{print $2, $1}' | grep -v '^help ' | sort)
  check "help $cmd (exit $rc) lists exactly the options of cmd_$cmd.c's table ($(wc -l <<<"$tab") entries)" \
    bash -c '[ "$1" -eq 0 ] && [ "$2" = "$3" ]' _ "$rc" "$tab" "$listed"
  # An option that takes an argument (the first the help lists), given last without one,
  # and an unknown option: exit 2 naming them. (One each: an MPI command's start costs.)
  o=$(sed -n '/^options:/,/^$/p' <<<"$h" | grep -oE -- '--[a-z0-9-]+=' | head -n 1 | tr -d '=')
  if [ -n "$o" ]; then
    err=$("$bin" "$cmd" x "$o" 2>&1 >/dev/null); rc=$?
    check "$cmd $o without its argument: exit 2 naming it ($rc)" \
      bash -c '[ "$1" -eq 2 ] && grep -q -- "$2 needs an argument" <<<"$3"' _ "$rc" "$o" "$err"
  fi
  err=$("$bin" "$cmd" x --frobnicate 2>&1 >/dev/null); rc=$?
  check "$cmd --frobnicate: exit 2 naming it ($rc)" \
    bash -c '[ "$1" -eq 2 ] && grep -q "unknown option '"'"'--frobnicate'"'"'" <<<"$2"' _ "$rc" "$err"
done
[ "$(table_of "$src/src/cli/cmd_run.c" | wc -l)" -ge 10 ]
check "the source grep finds run's table (a grep that finds nothing would prove nothing)" test $? -eq 0

err=$(ATTNSWEEP_ISA=avx3 "$bin" bench trials 2>&1 >/dev/null); rc=$?
check "ATTNSWEEP_ISA=avx3: exit 2 naming the variable and the values it takes ($rc)" \
  bash -c '[ "$1" -eq 2 ] && grep -q "ATTNSWEEP_ISA=avx3: expected avx2 or baseline" <<<"$2"' _ "$rc" "$err"
err=$("$bin" plan x -Z 2>&1 >/dev/null); rc=$?
check "plan -Z: exit 2 naming it" bash -c '[ "$1" -eq 2 ] && grep -q "unknown option '"'"'-Z'"'"'" <<<"$2"' _ "$rc" "$err"
err=$("$bin" plan x --sbatch=1 2>&1 >/dev/null); rc=$?
check "plan --sbatch=1: exit 2, takes no argument" bash -c '[ "$1" -eq 2 ] && grep -q -- "--sbatch takes no argument" <<<"$2"' _ "$rc" "$err"
err=$("$bin" plan x -o 2>&1 >/dev/null); rc=$?
check "plan -o without its argument: exit 2 naming -o" bash -c '[ "$1" -eq 2 ] && grep -q -- "-o needs an argument" <<<"$2"' _ "$rc" "$err"

# ------------------------------------------------------------------ forms and values
cat >"$tmp/s.yaml" <<'EOF'
name: opts
seed: 3
replicates: 4
sweep: {vfamily: identity, mfamily: identity, d: 2, n: 4, T: 1}
EOF
cd "$tmp" || exit 1
for form in "s.yaml --output=f1.h5 -q" "s.yaml --output f2.h5 --quiet" "-q -o f3.h5 s.yaml" \
  "-qof4.h5 s.yaml"; do
  # shellcheck disable=SC2086
  "$bin" run $form >/dev/null 2>&1; rc=$?
  f=$(grep -oE 'f[0-9]\.h5' <<<"$form")
  check "run $form: exit 0 and writes $f ($rc)" bash -c '[ "$1" -eq 0 ] && [ -s "$2" ]' _ "$rc" "$f"
done
for form in "--target-hours=2" "--target-hours 2"; do
  # shellcheck disable=SC2086
  out=$("$bin" plan s.yaml $form 2>&1); rc=$?
  check "plan $form: exit 0, a 2 h target ($rc)" bash -c '[ "$1" -eq 0 ] && grep -q "suggested for a 2 h target" <<<"$2"' _ "$rc" "$out"
done
for args in "s.yaml --calibrate 3" "s.yaml --calibrate=3" "--calibrate 3 s.yaml"; do
  # shellcheck disable=SC2086
  out=$("$bin" plan $args 2>&1); rc=$?
  check "plan $args: one SPEC, 3 calibration trials ($rc)" bash -c '[ "$1" -eq 0 ] && grep -q "calibrated on 3 trials" <<<"$2"' _ "$rc" "$out"
done
err=$("$bin" plan s.yaml --target-hours=-1 2>&1 >/dev/null); rc=$?
check "plan --target-hours=-1: exit 2 naming the option and the bound" \
  bash -c '[ "$1" -eq 2 ] && grep -q -- "--target-hours needs H, a number > 0" <<<"$2"' _ "$rc" "$err"
err=$("$bin" run s.yaml -o f6.h5 --progress abc 2>&1 >/dev/null); rc=$?
check "run --progress abc: exit 2 naming the option and the bound" \
  bash -c '[ "$1" -eq 2 ] && grep -q -- "--progress needs SECONDS, a number from 0 to" <<<"$2" && [ ! -e f6.h5 ]' _ "$rc" "$err"
err=$("$bin" census x.h5 --tol=2 2>&1 >/dev/null); rc=$?
check "census --tol=2: exit 2 naming the bound" \
  bash -c '[ "$1" -eq 2 ] && grep -q -- "--tol needs T, a number > 0 and < 1" <<<"$2"' _ "$rc" "$err"
err=$("$bin" plan s.yaml --sbatch --ntasks-per-node=0 2>&1 >/dev/null); rc=$?
check "plan --ntasks-per-node=0: exit 2, a whole number from 1" \
  bash -c '[ "$1" -eq 2 ] && grep -q -- "--ntasks-per-node needs N, a whole number from 1" <<<"$2"' _ "$rc" "$err"
out=$("$bin" validate -q s.yaml 2>&1); rc=$?
out2=$("$bin" validate s.yaml --quiet 2>&1); rc2=$?
check "validate -q / --quiet: exit 0, silent" bash -c '[ "$1$2" = 00 ] && [ -z "$3$4" ]' _ "$rc" "$rc2" "$out" "$out2"
for form in -n --dry-run; do
  out=$("$bin" repair "$form" f1.h5 2>&1)
  check "repair $form: a dry run" grep -q "dry run" <<<"$out"
done
out=$("$bin" run --help); rc=$?
check "run --help: exit 0, the usage and options" bash -c '[ "$1" -eq 0 ] && grep -q "^usage: .*attnsweep run" <<<"$2" && grep -q -- "--progress-bar" <<<"$2"' _ "$rc" "$out"

# ------------------------------------------------------------------ help topics
names=$(sed -n '/^} benches\[\] = {/,/^};/p' "$src/src/cli/cmd_bench.c" | grep -oE '^ *\{"[a-z]+"' | tr -dc 'a-z\n' | sort)
h=$("$bin" help bench)
listed=$(sed -n '/^benchmarks/,$p' <<<"$h" | awk 'NR > 1 {print $1}' | grep -vx all | sort)
check "help bench lists the benchmarks of cmd_bench.c's table ($(echo $names))" \
  bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$names" "$listed"
err=$("$bin" bench nope 2>&1 >/dev/null); rc=$?
nmiss=$(for nm in $names all; do grep -q "$nm" <<<"$err" || echo "$nm"; done)
check "bench nope: exit 2 naming the benchmarks (missing: $nmiss)" bash -c '[ "$1" -eq 2 ] && [ -z "$2" ]' _ "$rc" "$nmiss"
sopts=$(grep -oE 'add_argument\("(-o", ")?--[a-z0-9-]+"' "$src/analysis/attnsweep/cli.py" | grep -oE -- '--[a-z0-9-]+' | sort)
h=$("$bin" help summarize); rc=$?
missing=$(for o in $sopts; do grep -q -- "$o" <<<"$h" || echo "$o"; done)
check "help summarize (exit $rc) lists the script's $(wc -w <<<"$sopts") options (missing: $missing)" \
  bash -c '[ "$1" -eq 0 ] && [ -n "$2" ] && [ -z "$3" ]' _ "$rc" "$sopts" "$missing"
out=$("$bin" help help); rc=$?
check "help help: exit 0 with the topics" bash -c '[ "$1" -eq 0 ] && grep -q "keys" <<<"$2" && grep -q "commands:.* run" <<<"$2"' _ "$rc" "$out"
err=$("$bin" help nope 2>&1 >/dev/null); rc=$?
check "help nope: exit 2 with the topics" bash -c '[ "$1" -eq 2 ] && grep -q "unknown topic '"'"'nope'"'"'" <<<"$2" && grep -q "fields" <<<"$2"' _ "$rc" "$err"

# ------------------------------------------------------------------ progress under mpiexec
# 4 trials of about 0.3 s on 2 ranks.
cat >"$tmp/p.yaml" <<'EOF'
name: progress
seed: 5
replicates: 4
flush_interval: 0.1
sweep: {vfamily: identity, mfamily: identity, d: 3, n: 40, T: 40, dt: 0.02, init: {kind: box, scale: 5}}
EOF
"$mpiexec" -n 2 "$bin" run p.yaml -o bar.h5 --progress 0.1 --progress-bar >/dev/null 2>bar.err; rc=$?
check "--progress-bar on 2 ranks: exit 0 ($rc)" test $rc -eq 0
check "--progress-bar: rank 0's stderr (a file) gets the bar's \\r updates and the final 4/4" \
  bash -c 'grep -q $'"'"'\r\['"'"' bar.err && grep -q "4/4 (100.0%)" bar.err'
if script -qec true /dev/null >/dev/null 2>&1; then
  script -qec "'$mpiexec' -n 2 '$bin' run p.yaml -o tty.h5 --progress 0.1" /dev/null >tty.out 2>&1 </dev/null
  check "mpiexec on a terminal (script(1)): the bar comes on by itself" grep -q $'\r\[' tty.out
else
  echo "skip: script(1) cannot give mpiexec a terminal here"
fi

# SIGTERM to mpiexec (forwarded to both ranks) while trials run: they end interrupted, and
# the last progress line must count only what the file holds as done.
cat >"$tmp/long.yaml" <<'EOF'
name: long
seed: 6
replicates: 6
flush_interval: 0.1
sweep: {vfamily: identity, mfamily: identity, d: 3, n: 40, T: 4000, dt: 0.02, init: {kind: box, scale: 5}}
EOF
ok=0
for attempt in 1 2; do
  rm -f long.h5*
  # mpiexec turns the SIGTERM into SIGTERM to the ranks, then SIGKILL after
  # odls_base_sigkill_timeout (1 s by default: docs/scheduling.md); 5 s lets the drain finish
  # under load, so the test sees the drain, not the kill.
  OMPI_MCA_odls_base_sigkill_timeout=5 \
    "$mpiexec" -n 2 "$bin" run long.yaml -o long.h5 --progress 0.2 >/dev/null 2>long.err &
  job=$!
  for _ in $(seq 1 200); do grep -q "^attnsweep: " long.err && break; sleep 0.05; done
  sleep 0.3
  kill -TERM "$job"
  wait "$job"; rc=$?
  job=
  last=$(grep '^attnsweep: [0-9]*/' long.err | tail -n 1)
  shown=$(sed -n 's|^attnsweep: \([0-9]*\)/.*|\1|p' <<<"$last")
  intr=$(sed -n 's|.* interrupted \([0-9]*\) (not done).*|\1|p' <<<"$last")
  done_rows=$("$bin" status long.h5 2>/dev/null | sed -n 's|^trials: \([0-9]*\) / .*|\1|p')
  echo "attempt $attempt: rc $rc, last line '$last', status done $done_rows"
  if [ -n "$intr" ] && [ "${intr:-0}" -ge 1 ]; then ok=1; break; fi
done
check "SIGTERM drain: a trial was interrupted (${intr:-none})" test $ok -eq 1
check "stderr a file, no flag: plain lines, no \\r" bash -c '! grep -q $'"'"'\r'"'"' long.err && grep -q "^attnsweep: [0-9]" long.err'
check "SIGTERM drain: the last line's done ($shown) = the done rows of the file ($done_rows)" \
  bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$shown" "$done_rows"

exit $fail
