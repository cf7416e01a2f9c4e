#!/usr/bin/env bash
# The project refers to nothing outside itself (docs/architecture.md, "Invariants"):
#   * no tracked file names a path above the repository or a shared document of its authors,
#     and every document name ending in .md that a tracked file mentions exists inside the
#     repository (resolved from the root, from the file's own directory, or from docs/; a
#     name built at run time such as `$dir/x.md` is not a reference);
#   * README's documentation list links docs/theory.md and docs/architecture.md, and every
#     docs/*.md that README names exists;
#   * every `function()` that docs/theory.md names occurs in src/.
# The scanner is first run on a planted tree whose two bad references it must report.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=${AS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
as_test_init refs

# norm PATH: PATH with "." and ".." components resolved, in $REPLY ("../x" when it climbs
# above its start). Pure bash: the scan below calls it for every reference.
norm() {
  local part
  local -a kept=()
  local IFS=/
  for part in $1; do
    case $part in
      "" | .) ;;
      ..)
        if [ ${#kept[@]} -gt 0 ] && [ "${kept[-1]}" != .. ]; then
          unset 'kept[-1]'
        else
          kept+=(..)
        fi
        ;;
      *) kept+=("$part") ;;
    esac
  done
  REPLY="${kept[*]}"
}

# refs ROOT: file paths relative to ROOT on stdin; prints "FILE:LINE: reason" for every
# reference that leaves ROOT; returns 1 if there was one.
refs() {
  local root=$1 f ln tok dir cand ok hit=0
  local -a files=()
  while IFS= read -r f; do [ -f "$root/$f" ] && files+=("$f"); done
  [ ${#files[@]} -gt 0 ] || return 0
  cd "$root" || return 1
  while IFS= read -r ln; do
    echo "$ln (a path outside the repository)"
    hit=1
  done < <(grep -HInE '[.][.]/shared|(^|/)shared/(theory|design|style|toolchain)[.]md|/work[/]shared' \
    -- "${files[@]}" | cut -c1-160)
  while IFS=: read -r f ln tok; do
    tok=${tok#[!A-Za-z0-9_./-]}
    case $tok in //*) continue ;; esac # a URL
    ok=0 # an absolute path never resolves
    dir=${f%/*}
    [ "$dir" = "$f" ] && dir=.
    if [ "${tok:0:1}" != / ]; then
      for cand in "$tok" "$dir/$tok" "docs/$tok"; do
        norm "$cand"
        case $REPLY in .. | ../*) ;; *) [ -e "$REPLY" ] && ok=1 ;; esac
      done
    fi
    if [ $ok -eq 0 ]; then
      echo "$f:$ln: $tok does not exist in the repository"
      hit=1
    fi
  done < <(grep -HInoE '(^|[^A-Za-z0-9_./${}%-])[A-Za-z0-9_./-]*[A-Za-z0-9_-][.]md\b' \
    -- "${files[@]}")
  cd - >/dev/null || return 1
  return $hit
}

# ---- the scanner finds what it must find
plant=$tmp/plant
mkdir -p "$plant/docs" "$plant/src"
up=..
bad=style
echo "the model: see $up/shared/notes.txt" >"$plant/README.md"
printf '/* as %s.md says */\n' "$bad" >"$plant/src/a.c"
good=ok
printf 'see docs/%s.md and %s.md; "$dir/gone.md" is built at run time\n' "$good" "$good" \
  >"$plant/src/b.c"
echo "# ok" >"$plant/docs/$good.md"
out=$(printf '%s\n' README.md src/a.c src/b.c "docs/$good.md" | refs "$plant")
check "planted: a path above the repository is reported" grep -q "^README.md:1:.*outside" <<<"$out"
check "planted: a missing document is reported" grep -q "^src/a.c:1: $bad.md does not" <<<"$out"
check "planted: nothing else is reported" test "$(wc -l <<<"$out")" -eq 2

# ---- the tracked files
cd "$src" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
  [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
  git ls-files >"$tmp/files"
else
  find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||' | sort >"$tmp/files"
fi
check "the file list is the whole tree ($(wc -l <"$tmp/files") files)" \
  test "$(wc -l <"$tmp/files")" -gt 100
out=$(refs "$src" <"$tmp/files")
rc=$?
[ -n "$out" ] && echo "$out"
check "no tracked file refers to anything outside the repository" test $rc -eq 0

# ---- README's documentation list
docs=$(awk '/^## /{on = ($0 == "## Documentation")} on' README.md)
check "README has a documentation list" test -n "$docs"
for page in docs/theory.md docs/architecture.md; do
  check "README's documentation list links $page" grep -q "$page" <<<"$docs"
done
n=0
for page in $(grep -oE 'docs/[A-Za-z0-9_.-]+[.]md' README.md | sort -u); do
  n=$((n + 1))
  check "README links $page, which exists" test -f "$page"
done
check "README links the documentation ($n pages)" test $n -ge 8

# ---- every function docs/theory.md names exists
n=0
for fn in $(grep -oE '`[A-Za-z_][A-Za-z0-9_]*\(\)`' docs/theory.md | tr -d '`()' | sort -u); do
  n=$((n + 1))
  if ! grep -rqE "(^|[^A-Za-z0-9_])$fn\(" src; then
    echo "FAIL: docs/theory.md names $fn(), which is not in src/"
    fail=1
  fi
done
check "docs/theory.md names the functions that implement its equations ($n)" test $n -ge 20

[ $fail -eq 0 ] && echo "ok: the repository refers only to itself"
exit $fail
