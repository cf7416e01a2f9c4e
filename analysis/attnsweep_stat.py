"""attnsweep_stat: the statistics of --stat and --pair; the older name of the module attnsweep.stats of the package beside this
file (analysis/attnsweep/). `import attnsweep_stat` gives that module itself."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnsweep.stats  # noqa: E402

sys.modules[__name__] = attnsweep.stats
