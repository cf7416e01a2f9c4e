#!/usr/bin/python3
"""attnsweep summarize: the script `attnsweep summarize` runs (docs/analysis.md).

The code is the package attnsweep beside this file (analysis/attnsweep/, attnsweep.cli); this
script runs it with the same arguments, and as a module it gives the names the older single
script had (summary_tables, robustness_tables, wilson, Table, ...) to code that imports it.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    __import__("numpy")
except ImportError:
    sys.stderr.write("attnsweep summarize: Python module numpy is missing: apt-get install "
                     "python3-numpy python3-h5py (and run with /usr/bin/python3)\n")
    sys.exit(3)

from attnsweep import schema  # noqa: E402
from attnsweep.cli import entry, main, many_tables, output_format, stat_curves  # noqa: E402
from attnsweep.errors import UsageError  # noqa: E402
from attnsweep.export import BINARY_FORMATS, write_table_file  # noqa: E402
from attnsweep.groups import Axis, DistanceAxis, join_baselines, make_groups  # noqa: E402
from attnsweep.measure import SERIES, measure_tables, series_tables  # noqa: E402
from attnsweep.pair import default_pair_stats, pair_tables, paired_curves  # noqa: E402
from attnsweep.render import (LATEX_PACKAGES, LATEX_WIDTHS, Table, latex_escape,  # noqa: E402
                              render, tex_eq, tex_name)
from attnsweep.robustness import pivot_robustness, robustness_tables  # noqa: E402
from attnsweep.rule import CLASSIFIED, EXCLUDED, JUDGED, VERDICTS  # noqa: E402
from attnsweep.selection import (completeness, not_converged_mask, parse_by,  # noqa: E402
                                 where_mask)
from attnsweep.stats import Z95, group_quantiles, wilson  # noqa: E402
from attnsweep.stattables import (default_stats, parse_stat_tokens, stat_tables,  # noqa: E402
                                  stat_values)
from attnsweep.table1 import hypotheses, proved_theorems, table1_rows  # noqa: E402
from attnsweep.tables import phase_verdict, summary_tables  # noqa: E402
from attnsweep.verdicts import (RANK_RTOL, STAT_FIELDS, UNRESOLVED_REASONS,  # noqa: E402
                                compute_stats, stats_table)

__all__ = ["schema", "entry", "main", "many_tables", "output_format", "stat_curves",
           "UsageError", "BINARY_FORMATS", "write_table_file", "Axis", "DistanceAxis",
           "join_baselines", "make_groups", "SERIES", "measure_tables", "series_tables",
           "default_pair_stats", "pair_tables", "paired_curves", "LATEX_PACKAGES",
           "LATEX_WIDTHS", "Table", "latex_escape", "render", "tex_eq", "tex_name",
           "pivot_robustness", "robustness_tables", "CLASSIFIED", "EXCLUDED", "JUDGED",
           "VERDICTS", "completeness", "not_converged_mask", "parse_by", "where_mask", "Z95",
           "group_quantiles", "wilson", "default_stats", "parse_stat_tokens", "stat_tables",
           "stat_values", "hypotheses", "proved_theorems", "table1_rows", "phase_verdict",
           "summary_tables", "RANK_RTOL", "STAT_FIELDS", "UNRESOLVED_REASONS", "compute_stats",
           "stats_table"]

if __name__ == "__main__":
    sys.exit(entry())
