"""Makes the Python packages named in AS_HIDE_MODULES (comma-separated top-level names, e.g.
"netCDF4,h5netcdf") look uninstalled: `import netCDF4` raises ModuleNotFoundError and
importlib.util.find_spec("netCDF4") gives None, as on a machine without python3-netcdf4.
Put this directory first on PYTHONPATH; child processes inherit both variables (Debian's
own sitecustomize, an apport hook, is then not loaded). Used by tests/CMakeLists.txt (the
py_nodeps_* runs: every optional package hidden), tests/py/test_export.py (summarize without
netCDF4, without any netCDF library) and by hand:

    AS_HIDE_MODULES=netCDF4 PYTHONPATH=tests/tools/hide_modules /usr/bin/python3 tests/py/...
"""

import os
import sys

for _name in filter(None, (n.strip() for n in os.environ.get("AS_HIDE_MODULES", "").split(","))):
    sys.modules[_name] = None  # the import system's own "not importable" marker
