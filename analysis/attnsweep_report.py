#!/usr/bin/python3
"""attnsweep report: one self-contained HTML page from results files (docs/analysis.md, docs/weights.md): the script the command runs. The code is the
module attnsweep.report of the package beside this file (analysis/attnsweep/); `import attnsweep_report`
gives that module itself."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import attnsweep.report  # noqa: E402
except ImportError as e:  # numpy, h5py or matplotlib: one line, exit 3
    if __name__ != "__main__":
        raise
    sys.stderr.write("attnsweep report: a Python module is missing (%s): apt-get install "
                     "python3-numpy python3-h5py python3-matplotlib python3-jinja2 (and run "
                     "with /usr/bin/python3)\n" % e)
    sys.exit(3)

if __name__ == "__main__":
    sys.exit(attnsweep.report.main(sys.argv[1:]))
sys.modules[__name__] = attnsweep.report
