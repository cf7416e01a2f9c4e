#!/usr/bin/env bash
# The Python of the project, checked without running it: pyflakes (undefined names, unused
# imports, shadowed functions) over the analysis package and scripts, jobs/, bench/ and the py
# tests, and mypy over the package (analysis/pyproject.toml: the bodies of every function;
# tests/py/test_package.py checks that every public function has type hints). Both are
# Debian's (python3-pyflakes, mypy: tests/deps.sh --test). Registered in ctest as lint_python
# (labels py, lint) and run by tests/run.sh; exit 0 clean, 1 a finding, 77 a tool missing
# (ctest: skipped, named).
set -u
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
py=${AS_PYTHON:-/usr/bin/python3}
cd "$src" || exit 1
for tool in pyflakes mypy; do
  if ! "$py" -m "$tool" --version >/dev/null 2>&1; then
    pkg=$([ "$tool" = mypy ] && echo mypy || echo python3-pyflakes)
    echo "SKIPPED: lint_python: $tool is not installed (Debian: $pkg; tests/deps.sh --test installs it)"
    exit 77
  fi
done
rc=0
echo "== pyflakes"
"$py" -m pyflakes analysis/*.py analysis/attnsweep/*.py jobs/*.py jobs/referees/*.py \
  jobs/examples/*.py bench/*.py tests/py/*.py tests/tools/*.py || rc=1
echo "== mypy (analysis/pyproject.toml)"
# The cache outside the tree: the source may be read-only, and two runs must not share it.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
(cd analysis && "$py" -m mypy --cache-dir "$cache") || rc=1
exit $rc
