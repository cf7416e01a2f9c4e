"""The optional Python packages of the py tests: whether one is here, the reason a test gives
when it is not, and the unittest entry point of the tests, which prints every skipped test
with its reason (ctest shows a passing test's output only in its log,
Testing/Temporary/LastTest.log; tests/run.sh lists the SKIPPED lines after the run).

The packages the tests touch beyond the required ones (python3-numpy, -h5py, -matplotlib,
-mpmath: tests/deps.sh), with the Debian 12 package that brings each (None: not packaged):
tests/deps.sh --test installs the packaged ones but torch (no test needs it), so that CI runs
every test that one of them enables; the py_nodeps_* runs of tests/CMakeLists.txt hide them
all (tests/tools/hide_modules), so that CI also sees each test pass or skip without them."""

import os
import sys
import unittest

#: import name -> Debian 12 package (None: Debian 12 has none).
PACKAGES = {
    "pandas": "python3-pandas",
    "xarray": "python3-xarray",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "netCDF4": "python3-netcdf4",
    "h5netcdf": "python3-h5netcdf",
    "numba": "python3-numba",
    "torch": "python3-torch",
    "pyarrow": None,
    "fastparquet": None,
    "safetensors": None,
}


def have(module):
    """Whether `module` imports here (a submodule such as scipy.io imports its package)."""
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def missing(module):
    """The reason a test names when `module` does not import: the package that brings it."""
    top = module.split(".")[0]
    if top in os.environ.get("AS_HIDE_MODULES", "").split(","):
        return "%s is hidden (AS_HIDE_MODULES)" % top
    pkg = PACKAGES.get(top)
    if pkg is None:
        return "%s is not installed (no Debian 12 package)" % top
    return "%s is not installed (Debian: %s; tests/deps.sh --test installs it)" % (top, pkg)


def main(**kwargs):
    """unittest.main for a test file: runs its tests, prints "SKIPPED: FILE TEST: REASON" for
    each skipped test (subtests included), exits 0 when all passed (skips included), else 1.
    kwargs go to unittest.main (verbosity, argv)."""
    prog = unittest.main(exit=False, **kwargs)
    name = os.path.basename(sys.argv[0])
    for test, reason in prog.result.skipped:
        print("SKIPPED: %s %s: %s" % (name, test.id().replace("__main__.", ""), reason))
    sys.stdout.flush()
    sys.exit(0 if prog.result.wasSuccessful() else 1)
