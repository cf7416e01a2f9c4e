"""attnsweep_plots: figures of results files (matplotlib); the older name of the module attnsweep.figures of the package beside this
file (analysis/attnsweep/). `import attnsweep_plots` gives that module itself."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnsweep.figures  # noqa: E402

sys.modules[__name__] = attnsweep.figures
