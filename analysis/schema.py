"""schema: the one place that knows the layout of a results file; the older name of the module attnsweep.schema of the package beside this
file (analysis/attnsweep/). `import schema` gives that module itself."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnsweep.schema  # noqa: E402

sys.modules[__name__] = attnsweep.schema
