# tests/cli/lib.sh: the common preamble of the shell tests that drive sweeps (sourced).
#   bin, mpiexec, py, tools      the attnsweep binary, mpiexec, Debian's python3, tests/tools
#   check DESCRIPTION CMD...     runs CMD; prints ok/FAIL and sets fail=1 on failure
#   py_has MODULE                whether Debian's python3 imports MODULE (an optional package)
#   skip WHAT REASON             prints "SKIPPED: <test> WHAT: REASON" (tests/run.sh lists them)
#   as_test_init NAME            private temp dir $tmp, removed at exit together with a job
#                                still running ($job, killed with its children) and whatever
#                                the test's optional cleanup_extra function undoes; seeds
#                                $RANDOM from AS_TEST_SEED (printed, so a failure can be replayed)
#   wait_running PID FILE        waits (12 s at most) until FILE's run is in state running: the
#                                file exists and its run lock is held (signal handlers are
#                                installed before the lock is taken); 1 if PID exits first
#   watchdog SECONDS PID         kills PID (SIGKILL) after SECONDS, so a hang fails the test;
#                                sets $dog. watchdog_stop ends it. The watchdog holds none of
#                                the test's output: ctest waits for every holder of the test's
#                                stdout, and a bare (sleep N; kill) & made each test last N s.
#   slow_spec NAME SEED          prints a spec of 30 trials of 4,000 RK4 steps each (n = 24,
#                                T = 40, dt = 0.01, about 10 ms each): long enough that
#                                --time-limit 0.05 stops a 2-rank run before its end, and
#                                twice the largest trial the sweep batches (sweep.c,
#                                SWEEP_BATCH_WORK, about 5 ms by the cost figures), so that a
#                                refit of those figures does not batch them
bin=${ATTNSWEEP:?ATTNSWEEP must point at the attnsweep binary}
mpiexec=${MPIEXEC:-mpiexec}
py=/usr/bin/python3
tools=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
export HDF5_USE_FILE_LOCKING=FALSE
fail=0
job=
tmp=

check() { # check DESCRIPTION CMD...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

py_has() { # py_has MODULE
  "$py" -c "import $1" 2>/dev/null
}

skip() { # skip WHAT REASON
  echo "SKIPPED: $(basename "$0") $1: $2"
}

as_test_cleanup() {
  # shellcheck disable=SC2046
  [ -n "$job" ] && kill -KILL "$job" $(pgrep -P "$job") 2>/dev/null
  [ -n "${dog:-}" ] && kill "$dog" 2>/dev/null
  if declare -F cleanup_extra >/dev/null; then cleanup_extra; fi
  [ -n "$tmp" ] && rm -rf "$tmp"
}

as_test_init() { # as_test_init NAME
  tmp=$(mktemp -d "/tmp/as_$1_XXXXXX") || exit 1
  trap as_test_cleanup EXIT
  RANDOM=${AS_TEST_SEED:-$$}
  echo "random seed: ${AS_TEST_SEED:-$$} (set AS_TEST_SEED to replay)"
}

wait_running() { # wait_running PID FILE
  for _ in $(seq 1 400); do
    kill -0 "$1" 2>/dev/null || return 1
    [ -e "$2" ] && "$bin" status "$2" 2>/dev/null | grep -q "state: running" && return 0
    sleep 0.03
  done
  return 1
}

watchdog() { # watchdog SECONDS PID
  (
    exec >/dev/null 2>&1 </dev/null
    sleep "$1" &
    s=$!
    trap 'kill $s; exit 0' TERM
    wait $s && kill -KILL "$2"
  ) &
  dog=$!
}

watchdog_stop() {
  [ -n "${dog:-}" ] && kill "$dog" 2>/dev/null && wait "$dog" 2>/dev/null
  dog=
}

slow_spec() { # slow_spec NAME SEED
  cat <<YAML
name: $1
seed: $2
replicates: 30
sweep:
  concat:
    - {case: id, vfamily: identity, mfamily: identity, d: 2, n: 24, T: 40, dt: 0.01,
       init: {kind: box, scale: 3}}
YAML
}
