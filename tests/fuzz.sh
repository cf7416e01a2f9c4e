#!/usr/bin/env bash
# Fuzz the spec parser and the `--set KEY=VALUE` grammar: builds fuzz/fuzz_spec.c and
# fuzz/fuzz_set.c with clang -fsanitize=fuzzer,address,undefined in their own build directory
# and runs each for half of the bounded time on a copy of its committed seed corpus
# (fuzz/corpus, fuzz/corpus_set). Exits non-zero on any crash, leak, timeout or out-of-memory.
#
# Environment: AS_FUZZ_DIR (build dir, default build/fuzz), AS_FUZZ_SECONDS (both harnesses
#              together, default 60), AS_FUZZ_JOBS (parallel fuzzing processes, default 1).
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
for h in spec set; do
  echo "== building the $h fuzzer with $cc"
  extra=()
  [ "$h" = set ] && extra=("$root/src/io/override.c")
  # shellcheck disable=SC2046
  "$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L -std=c11 \
    -I"$root/include" -I"$root/src/io" \
    "$root/fuzz/fuzz_$h.c" "${extra[@]}" "$root"/src/io/spec*.c "$root/src/io/sha256.c" \
    "$root/src/core/status.c" "$root/src/core/enums.c" "$root/src/core/trial.c" \
    "$root/src/core/params.c" "$root/src/core/record.c" "$root/src/core/blocks_spec.c" \
    "$root/src/core/rules.c" \
    $(pkg-config --cflags --libs yaml-0.1) -lm -o "$dir/fuzz_$h"
done

# Work on copies: new inputs found by the fuzzers do not touch the committed corpora. The
# --set harness reads the options, a NUL byte, then the spec: its corpus adds every example
# spec under a few options.
rm -rf "$dir/corpus" "$dir/corpus_set" "$dir/artifacts"
mkdir -p "$dir/corpus" "$dir/corpus_set" "$dir/artifacts"
cp "$root"/fuzz/corpus/* "$dir/corpus/"
cp "$root"/jobs/examples/*.yaml "$dir/corpus/"
cp "$root"/fuzz/corpus_set/* "$dir/corpus_set/"
for f in "$root"/jobs/examples/*.yaml; do
  { printf 'T=3\nn=[4, 6]\ninit.scale=2\0'; cat "$f"; } >"$dir/corpus_set/$(basename "$f")"
done
cat "$root/fuzz/spec.dict" "$root/fuzz/set.dict" >"$dir/set.dict"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$dir" # with -jobs libFuzzer writes fuzz-<i>.log into the current directory
half=$((secs / 2 > 0 ? secs / 2 : 1))
for h in spec set; do
  t=$half
  [ "$h" = set ] && t=$((secs - half > 0 ? secs - half : 1))
  corpus=$dir/corpus dict=$root/fuzz/spec.dict
  [ "$h" = set ] && corpus=$dir/corpus_set dict=$dir/set.dict
  echo "== fuzzing $h for ${t} s"
  rc=0
  rm -f "$dir"/fuzz-*.log
  "$dir/fuzz_$h" -max_total_time="$t" -timeout=5 -rss_limit_mb=1024 -max_len=8192 \
    -dict="$dict" -jobs="$jobs" -workers="$jobs" -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/$h-" "$corpus" >"$dir/fuzz_$h.log" 2>&1 || rc=$?
  tail -n 25 "$dir/fuzz_$h.log" "$dir"/fuzz-*.log 2>/dev/null || true
  if [ "$rc" -ne 0 ] || ls "$dir"/artifacts/* >/dev/null 2>&1; then
    echo "tests/fuzz.sh: the $h fuzzer found a problem (rc $rc); inputs in $dir/artifacts:" >&2
    ls -l "$dir/artifacts" >&2 || true
    exit 1
  fi
done
echo "tests/fuzz.sh: no crash, leak or hang in ${secs} s (spec parser and --set)"
