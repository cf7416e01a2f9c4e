#!/usr/bin/env bash
# Fuzz the spec parser: builds fuzz/fuzz_spec.c with clang -fsanitize=fuzzer,address,undefined
# in its own build directory and runs it for a bounded time on a copy of the committed seed
# corpus (fuzz/corpus). Exits non-zero on any crash, leak, timeout or out-of-memory.
#
# Environment: AS_FUZZ_DIR (build dir, default build/fuzz), AS_FUZZ_SECONDS (default 60),
#              AS_FUZZ_JOBS (parallel fuzzing processes, default 1).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${AS_FUZZ_DIR:-$root/build/fuzz}
secs=${AS_FUZZ_SECONDS:-60}
jobs=${AS_FUZZ_JOBS:-1}
cc=${AS_FUZZ_CC:-clang}
mkdir -p "$dir"

if ! command -v "$cc" >/dev/null; then
  echo "tests/fuzz.sh: $cc not found (apt-get install clang)" >&2
  exit 1
fi
echo "== building the spec fuzzer with $cc"
# shellcheck disable=SC2046
"$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L -std=c11 \
  -I"$root/include" -I"$root/src/io" \
  "$root/fuzz/fuzz_spec.c" "$root"/src/io/spec*.c "$root/src/io/sha256.c" \
  "$root/src/core/status.c" "$root/src/core/enums.c" "$root/src/core/trial.c" \
  "$root/src/core/params.c" "$root/src/core/record.c" "$root/src/core/blocks_spec.c" \
  "$root/src/core/rules.c" \
  $(pkg-config --cflags --libs yaml-0.1) -lm -o "$dir/fuzz_spec"

# Work on a copy: new inputs found by the fuzzer do not touch the committed corpus.
rm -rf "$dir/corpus" "$dir/artifacts"
mkdir -p "$dir/corpus" "$dir/artifacts"
cp "$root"/fuzz/corpus/* "$dir/corpus/"
cp "$root"/jobs/examples/*.yaml "$dir/corpus/"

echo "== fuzzing for ${secs} s"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
cd "$dir" # with -jobs libFuzzer writes fuzz-<i>.log into the current directory
"$dir/fuzz_spec" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 -max_len=8192 \
  -dict="$root/fuzz/spec.dict" -jobs="$jobs" -workers="$jobs" -print_final_stats=1 \
  -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/fuzz.log" 2>&1 || rc=$?
tail -n 25 "$dir/fuzz.log" "$dir"/fuzz-*.log 2>/dev/null || true
if [ "$rc" -ne 0 ] || ls "$dir"/artifacts/* >/dev/null 2>&1; then
  echo "tests/fuzz.sh: the fuzzer found a problem (rc $rc); inputs in $dir/artifacts:" >&2
  ls -l "$dir/artifacts" >&2 || true
  exit 1
fi
echo "tests/fuzz.sh: no crash, leak or hang in ${secs} s"
