#!/usr/bin/python3
"""attnsweep import-weights: the attention heads of a checkpoint -> a matrix file (docs/analysis.md, docs/weights.md): the script the command runs. The code is the
module attnsweep.import_weights of the package beside this file (analysis/attnsweep/); `import import_weights`
gives that module itself."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnsweep.import_weights  # noqa: E402

if __name__ == "__main__":
    sys.exit(attnsweep.import_weights.main(sys.argv[1:]))
sys.modules[__name__] = attnsweep.import_weights
