"""attnsweep: the analysis of attnsweep results files (the Python side of the tool).

    from attnsweep import load_trials, to_xarray, summarize

    df = load_trials("out.h5")                 # /trials as a pandas DataFrame
    ds = to_xarray(df[df.case == "gap"])       # the sweep as an xarray Dataset
    t = summarize("out.h5", by=["theorem", "d"])   # the table of `attnsweep summarize`

Every fraction counts the trials THE rule (attnsweep.rule) judges: judged = consistent +
violated + unresolved; no_prediction, not_converged, nonfinite and failed trials are excluded
and counted beside. Modules by concern (docs/analysis.md, "The package"): schema (the file),
layout (the row layout from the binary), rule, stats, selection, groups, verdicts, tables,
table1, stattables, robustness, pair, measure, render, export, figures (figstyle, geometry,
trialfig), frame, report, cli (`attnsweep summarize`), import_weights (and checkpoint).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence

from .errors import FileAccessError, SchemaError, UsageError
from .frame import from_netcdf, load_bulk, load_trials, sweep_axes, to_xarray
from .rule import EXCLUDED, JUDGED, judge
from .schema import Results, open_results

if TYPE_CHECKING:
    import pandas

__version__ = "0.1.0"

__all__ = ["load_trials", "to_xarray", "sweep_axes", "from_netcdf", "load_bulk", "summarize",
           "open_results", "Results", "judge", "JUDGED", "EXCLUDED", "UsageError",
           "SchemaError", "FileAccessError", "__version__"]


def summarize(path: str, by: Optional[Sequence[str]] = None, where: Optional[str] = None, *,
              stat: Optional[Sequence[str]] = None, table1: bool = False,
              phase: Optional[str] = None, robustness: bool = False,
              verdict: Optional[str] = None, bins: int = 12) -> "pandas.DataFrame":
    """The table `attnsweep summarize PATH ... --format csv` prints, as a pandas DataFrame (one
    row per group, numeric columns numeric): by default the verdict table by theorem; with
    stat (["residual:median", "verdict:=consistent"]) the --stat table; table1, phase=PARAM
    or robustness=True those tables (--verdict near|exact: verdict). df.attrs holds the
    header lines (`preamble`) and the notes under the tables (`notes`). Raises UsageError,
    SchemaError (exit 2 of the command) and FileAccessError (exit 3)."""
    import io

    import pandas as pd

    from .render import render
    from .robustness import robustness_tables
    from .stattables import parse_stat_tokens, stat_tables
    from .tables import summary_tables
    with open_results(path) as rf:
        tables: List[Any]
        if stat:
            pre, tables = stat_tables([rf], list(by or []), where,
                                      parse_stat_tokens([rf], list(stat)))
        elif robustness:
            pre, tables, _ = robustness_tables(rf, list(by or []), where, bins=bins,
                                               verdict=verdict)
        else:
            axes = list(by) if by is not None else ([] if phase else ["theorem"])
            pre, tables, _ = summary_tables(rf, axes, where, table1=table1, phase=phase,
                                            bins=bins, defaults=not table1 and not phase,
                                            verdict=verdict)
        df = pd.read_csv(io.StringIO(render(tables, "csv", pre)))
        df.attrs["preamble"] = list(pre)
        df.attrs["notes"] = [n for t in tables for n in t.notes]
        return df
