#!/usr/bin/env bash
# Install the Debian packages attnsweep needs, if any are missing.
# One apt-get update, --no-install-recommends, nothing when all are present.
# Usage: tests/deps.sh [--slurm]   (sourced by jobs/local.sh and tests/run.sh)
set -euo pipefail

pkgs=(build-essential cmake pkg-config git
      openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
      libscalapack-openmpi-dev liblapack-dev libopenblas-dev
      libyaml-dev librandom123-dev libglpk-dev
      python3 python3-h5py python3-numpy python3-matplotlib python3-mpmath
      # the page of `attnsweep report` is rendered by Jinja2 with autoescaping (issue 48):
      # required by the analysis, so installed for users too (jobs/local.sh)
      python3-jinja2)
if [ "${1:-}" = "--test" ]; then
  pkgs+=(clang clang-format libclang-rt-14-dev slurm-wlm munge
         # analysis tests: the LaTeX tables compile (pdflatex, booktabs, tabularx), the
         # pandas/xarray loader (about 100 s to install on the CI machine, mostly format
         # building by texlive-latex-base), scipy.stats for the intervals and tests of
         # summarize --stat/--pair
         texlive-latex-base texlive-latex-recommended python3-pandas python3-xarray
         python3-yaml python3-scipy
         # the netCDF backends of xarray besides scipy's netCDF 3 (tests/py/test_frame.py,
         # test_export.py): python3-netcdf4 is xarray's default writer wherever it is
         # installed, and the one users have (issue 55: without it here the suite never wrote
         # netCDF 4); python3-h5netcdf (small, pure Python on h5py) is the third backend
         python3-netcdf4 python3-h5netcdf
         # the compiled peer of bench/vs_peer.sh (tests/cli/test_bench_scripts.sh)
         python3-numba
         # the HTML page of `attnsweep report` is loaded in a real headless browser
         # (tests/py/test_report_browser.py)
         chromium
         # the Python is checked without running it (tests/tools/lint_python.sh, ctest
         # lint_python, tests/run.sh; issue 48): pyflakes over every file, mypy over the type
         # hints of the analysis package; setuptools so that `pip install -e analysis
         # --no-build-isolation` works offline (tests/py/test_package.py)
         python3-pyflakes mypy python3-setuptools)
fi

missing=()
for p in "${pkgs[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "attnsweep: missing Debian packages: ${missing[*]}" >&2
  echo "attnsweep: run as root, or: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "attnsweep: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
