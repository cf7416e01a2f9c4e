"""The functions of `attnsweep summarize` under one name, for the page builders (report.py,
jobs/referees/referees.py) and scripts: the tables, the rule's verdict sets and the errors."""

from .errors import UsageError
from .measure import measure_tables, series_tables
from .render import Table
from .robustness import robustness_tables
from .rule import JUDGED
from .selection import completeness, where_mask
from .stattables import parse_stat_tokens, stat_tables
from .tables import summary_tables

__all__ = ["UsageError", "measure_tables", "series_tables", "Table", "robustness_tables",
           "JUDGED", "completeness", "where_mask", "parse_stat_tokens", "stat_tables",
           "summary_tables"]
