"""attnsweep_frame: the /trials as a pandas DataFrame, the sweep as an xarray Dataset; the older name of the module attnsweep.frame of the package beside this
file (analysis/attnsweep/). `import attnsweep_frame` gives that module itself."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnsweep.frame  # noqa: E402

sys.modules[__name__] = attnsweep.frame
