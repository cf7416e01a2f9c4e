"""attnsweep summarize: summary tables (and figures) from an attnsweep results file.

usage: attnsweep summarize OUT.h5 [--by AXIS[,AXIS...]] [--where EXPR]
                           [--format md|csv|latex|netcdf|parquet]
                           [--width column|page] [--table1 [--drop-empty]]
                           [--phase PARAM [--verdict near|exact] [--bins N] [--png FILE]]
                           [--robustness [--bins N] [--png FILE]] [--measure]
                           [--series OBS[,OBS...] [--png FILE]]
                           [--plot TRIAL --png FILE] [-o FILE]
       attnsweep summarize OUT.h5 [OUT2.h5 ...] [--stat FIELD[:STAT,...] ...] [--by ...]
       attnsweep summarize OUT.h5 --pair KEY[,KEY...] [--stat ...] [--by ...]   (one file)
       attnsweep summarize OUT.h5 --phase PARAM|--robustness --pair [KEY,...] [--by ...]
       attnsweep summarize A.h5 B.h5 ... --pair [--stat ...] [--by ...]      (file by file)

Reads the file through schema.py only; every fraction counts the trials the rule of rule.py
judges (docs/analysis.md describes every column). Runs with
Debian's /usr/bin/python3 (python3-numpy, python3-h5py; python3-matplotlib for figures;
python3-scipy for the bootstrap intervals of means). Without --format, -o FILE's extension
(.csv, .tex, .md; .nc and .parquet: the csv's table as netCDF or Parquet) chooses the format.
Exit codes: 0 done; 2 bad arguments, an unknown field or label, or not a results file; 3 the
file cannot be read, an output (-o, --png) cannot be written, a needed Python module is
missing, or an internal error (ATTNSWEEP_DEBUG=1 shows its traceback); 130 interrupted. Every
failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import schema
from .errors import UsageError
from .export import BINARY_FORMATS, write_table_file
from .groups import Axis, make_groups
from .measure import measure_tables, series_tables
from .pair import default_pair_stats, pair_tables, paired_curves
from .render import TEX_TEXT, Table, latex_escape, render
from .robustness import robustness_tables
from .schema import Results
from .selection import parse_by, where_mask
from .stattables import (append_stat_columns, compute_stat_results, default_stats, file_labels,
                         parse_stat_tokens, stat_tables)
from .tables import show_settle, summary_tables

class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument as a UsageError (one line, exit 2) instead of
    printing the usage block and exiting by itself."""

    def error(self, message: str) -> Any:
        raise UsageError("%s (attnsweep summarize --help lists the options)" % message)


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _fail(msg: Any, rc: int) -> int:
    print("attnsweep summarize: %s" % _one_line(msg), file=sys.stderr)
    return rc


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (docs/analysis.md): 0 done, 2 bad arguments or not
    a results file, 3 the file or an output cannot be read/written, a Python module is
    missing, or an internal error (a bug; ATTNSWEEP_DEBUG=1 prints its traceback), 130
    interrupted. Every failure is one line on stderr, never a traceback."""
    ap = _Parser(
        prog="attnsweep summarize",
        description="Summary tables and figures from an attnsweep results file.")
    ap.add_argument("files", nargs="+", metavar="file",
                    help="results file(s) (OUT.h5); several: one table, grouped by file")
    ap.add_argument("--stat", nargs="+", action="extend", metavar="FIELD[:STAT,...]",
                    help="statistics of any numeric field per --by group: median, mean, sd, "
                    "min, max, n, qNN, gtX/geX/ltX/leX/eqX/neX (fraction), =LABEL (enum)")
    ap.add_argument("--pair", nargs="?", const="", metavar="KEY[,KEY...]",
                    help="paired differences: several files trial by trial, or in one file "
                    "the trials that differ only in these sweep keys (default: the file's "
                    "common_keys)")
    ap.add_argument("--by", help="group by these axes, comma separated: any /trials field "
                    "(theorem, d, n, eps, vfamily, ...) or flag_<name>; default theorem")
    ap.add_argument("--where", help="filter rows, e.g. \"d == 2 and theorem == 'good'\"")
    ap.add_argument("--format", choices=("md", "csv", "latex", "parquet", "netcdf"),
                    help="md (default), csv or latex; without it, -o FILE's extension "
                    "(.csv, .tex, .md) chooses")
    ap.add_argument("--width", choices=("column", "page"), default="column",
                    help="LaTeX tables: fit one column of a two-column article (\\columnwidth, "
                    "in a table environment; default) or the page (table*)")
    ap.add_argument("--drop-empty", action="store_true",
                    help="--table1: leave out the theorem rows without trials and without "
                    "near misses")
    ap.add_argument("--table1", action="store_true",
                    help="the paper's Table 1 with the measured columns beside it (one table "
                    "per value of --by)")
    ap.add_argument("--phase", metavar="PARAM",
                    help="phase diagram: verdict fractions against PARAM (eps, v_gap, gap...)")
    ap.add_argument("--bins", type=int, default=12,
                    help="bins for a continuous --phase parameter with more distinct values")
    ap.add_argument("--png", metavar="FILE", help="write the figure (--phase, --robustness, --series, "
                    "--stat or --plot) here (PNG; PDF or SVG when FILE ends in .pdf or .svg)")
    ap.add_argument("--verdict", choices=("near", "exact"),
                    help="--phase, --robustness: judge near_verdict (against the nearest "
                    "theorem, with near_reason and near_t_decide) or verdict (with reason and "
                    "t_decide); default: --robustness near, --phase near when the selection "
                    "has near misses, else exact")
    ap.add_argument("--robustness", action="store_true",
                    help="verdict against the nearest theorem (near_verdict) against each "
                    "hypothesis distance (dist_*, near_dist): a table each, --png a figure")
    ap.add_argument("--columns", metavar="KEY",
                    help="--robustness or --stat: one column per value of KEY (e.g. T), the "
                    "rows the --by groups (csv: long format)")
    ap.add_argument("--measure", action="store_true",
                    help="the empirical measure (cluster masses, hull vertices, ref_w1) per "
                         "--by group (default n)")
    ap.add_argument("--plot", metavar="TRIAL", type=int,
                    help="figure of one trial's stored end state / trajectory and P (needs "
                    "--png and bulk data in the file)")
    ap.add_argument("--series", metavar="OBS[,OBS...]",
                    help="time series from the stored snapshots: residual, diameter, "
                    "clusters, hull per --by group and time (--png: line figures)")
    ap.add_argument("-o", "--output", metavar="FILE", help="write the tables here, not stdout")
    try:
        args = ap.parse_args(argv)
        return _run(args)
    except SystemExit as e:  # --help
        return 2 if e.code else 0
    except (UsageError, schema.SchemaError) as e:
        return _fail(e, 2)
    except schema.FileAccessError as e:
        return _fail(e, 3)
    except ImportError as e:
        return _fail("a Python module is missing (%s): apt-get install python3-numpy "
                     "python3-h5py python3-matplotlib (and run with /usr/bin/python3)" % e, 3)
    except BrokenPipeError:
        # the reader of stdout went away (| head): nothing more can be said there
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 3
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except MemoryError:
        return _fail("out of memory", 3)
    except OSError as e:  # an I/O failure that no layer above named (HDF5 read, stdout)
        return _fail("I/O failure: %s" % e, 3)
    except Exception as e:  # a bug: say where, and how to get the whole story
        if os.environ.get("ATTNSWEEP_DEBUG"):
            raise
        import traceback
        tb = traceback.extract_tb(e.__traceback__)
        where = " at %s:%s" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else ""
        return _fail("internal error (a bug in the analysis, please report it): %s: %s%s; "
                     "ATTNSWEEP_DEBUG=1 prints the traceback" % (type(e).__name__, e, where), 3)


def _run(args: argparse.Namespace) -> int:
    if args.bins < 1:
        raise UsageError("--bins must be >= 1")
    if args.plot is not None and not args.png:
        raise UsageError("--plot needs --png FILE")
    if args.png and args.plot is None and not args.phase and not args.robustness and \
            not args.series and not (args.stat and args.pair is None):
        raise UsageError("--png goes with --phase, --robustness, --series, --stat or --plot")
    if args.series and (args.phase or args.table1 or args.robustness or args.measure):
        raise UsageError("--series goes without --phase, --table1, --robustness, --measure")
    if args.robustness and (args.phase or args.table1):
        raise UsageError("--robustness goes without --phase and --table1")
    if args.measure and (args.phase or args.table1 or args.robustness or args.png):
        raise UsageError("--measure goes without --phase, --table1, --robustness and --png")
    if args.columns is not None and not (args.robustness or args.stat) or \
            args.columns is not None and args.pair is not None:
        raise UsageError("--columns goes with --robustness or --stat, without --pair")
    if args.columns is not None and args.png:
        raise UsageError("--columns goes without --png (the figure of --by ...,%s draws the "
                         "same curves)" % args.columns)
    if args.verdict and not (args.phase or args.robustness):
        raise UsageError("--verdict goes with --phase or --robustness")
    if args.drop_empty and not args.table1:
        raise UsageError("--drop-empty goes with --table1")
    if args.pair is not None and (args.phase or args.robustness):
        return _emit(args, output_format(args), *paired_curves(args))
    special = [o for o, on in (("--series", args.series), ("--table1", args.table1),
                                ("--phase", args.phase),
                                ("--robustness", args.robustness), ("--measure", args.measure),
                                ("--plot", args.plot is not None)) if on]
    if special and (args.stat or args.pair is not None or len(args.files) > 1):
        raise UsageError("%s goes with one file and without --stat and --pair" % special[0])
    if args.pair is None and len(args.files) > 1 and len(set(args.files)) < len(args.files):
        raise UsageError("a file is named twice")
    fmt = output_format(args)
    if len(args.files) > 1 or args.stat or args.pair is not None:
        rfs = []
        try:
            for path in args.files:
                rfs.append(schema.open_results(path))
            pre, tables = many_tables(rfs, args)
            curves = stat_curves(rfs, args, tables[0]) if args.png else None
        finally:
            for rf in rfs:
                rf.close()
        rc = _emit(args, fmt, pre, tables)
        if curves:
            from . import figures
            figures.plot_lines(curves, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
        return rc
    args.format = fmt
    with schema.open_results(args.files[0]) as rf:
        if args.plot is not None:
            from . import figures
            figures.plot_trial_file(rf, args.plot, args.png)
            print("wrote %s" % args.png)
            return 0
        by = parse_by(args.by)
        robust = series = None
        if args.series:
            pre, tables, series = series_tables(rf, by or [], args.where,
                                                parse_by(args.series) or [])
            phase = None
        elif args.robustness:
            pre, tables, robust = robustness_tables(rf, by or [], args.where, bins=args.bins,
                                                     columns=args.columns,
                                                     verdict=args.verdict)
            phase = None
        elif args.measure:
            pre, tables = measure_tables(rf, ["n"] if by is None else by, args.where)
            phase = None
        else:
            if by is None:
                by = [] if args.phase else ["theorem"]
            pre, tables, phase = summary_tables(rf, by, args.where, table1=args.table1,
                                                phase=args.phase, bins=args.bins,
                                                defaults=not args.table1 and not args.phase,
                                                verdict=args.verdict,
                                                drop_empty=args.drop_empty)
        if args.format in BINARY_FORMATS:
            write_table_file(tables, args.format, pre, args.output)
            for line in pre:
                print(line, file=sys.stderr)
            text = None
        else:
            text = render(tables, args.format, pre, args.width)
        if args.format == "csv":
            for line in pre:
                print(line, file=sys.stderr)
        if text is None:
            pass
        elif args.output:
            try:
                with open(args.output, "w") as fh:
                    fh.write(text)
            except OSError as e:
                raise schema.FileAccessError("cannot write %s: %s" % (args.output, e))
        else:
            sys.stdout.write(text)
        if phase and args.png:
            from . import figures
            figures.plot_phase(phase, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
        if series and args.png:
            from . import figures
            figures.plot_series(series, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
        if robust and args.png:
            from . import figures
            figures.plot_robustness(robust, args.png)
            print("wrote %s" % args.png, file=sys.stderr)
    return 0


def stat_curves(rfs: Sequence[Results], args: argparse.Namespace, table: Table) -> Dict[str, Any]:
    """--stat FIELD:STAT --by KEY[,AXIS...] --png FILE: the line figure of the first statistic
    against the first --by axis (a numeric sweep key), one line per combination of the other
    axes (and file), with its 95% interval (figures.plot_lines)."""
    by = parse_by(args.by) or []
    if not by:
        raise UsageError("--stat with --png draws the statistic against the first --by axis: "
                         "give --by KEY[,AXIS...]")
    x = by[0]
    if rfs[0].field_kind(x) not in ("int", "float"):
        raise UsageError("--stat with --png: the first --by axis (%s) must be numeric" % x)
    head = table.csv_header
    lead = head.index("trials")
    name = head[lead + 1]
    keys = head[:lead]
    lo, hi = (head.index(name + "_lo"), head.index(name + "_hi")) if name + "_lo" in head \
        else (None, None)
    series: Dict[str, Dict[str, List[float]]] = {}
    keyvals: Dict[str, Dict[str, str]] = {}

    def num(c: Any) -> float:
        return float(c) if c not in ("", None) else np.nan
    for r in table.csv_rows:
        kv = {k: v for k, v in zip(keys, r) if k != x}
        group = ", ".join("%s = %s" % kv_ for kv_ in kv.items())
        keyvals[group] = kv
        ser = series.setdefault(group, {"x": [], "y": [], "lo": [], "hi": []})
        ser["x"].append(num(r[keys.index(x)]))
        ser["y"].append(num(r[lead + 1]))
        ser["lo"].append(num(r[lo]) if lo is not None else np.nan)
        ser["hi"].append(num(r[hi]) if hi is not None else np.nan)
    # the eps = 0 baseline: trials at eps = 0 record the keys that say what eps perturbs as not
    # applicable (`-`); such a group is the first point of each line that agrees with it on
    # every other key (the d = 2 baseline joins the d = 2 lines only: issue 48)
    base = [gr for gr, v in series.items() if x == "eps" and "-" in keyvals[gr].values() and
            all(e == 0 for e in v["x"])]
    lines = [gr for gr in series if gr not in base]
    if base and lines:
        pts = {gr: series.pop(gr) for gr in base}
        for gr in lines:
            v = series[gr]
            if 0.0 in v["x"]:
                continue
            for b in base:
                if all(bv == "-" or keyvals[gr].get(k) == bv for k, bv in keyvals[b].items()):
                    for k in ("x", "y", "lo", "hi"):
                        v[k][:0] = pts[b][k]
                    break
    frac = any(t in name for t in ("_eq_", "_gt", "_ge", "_lt", "_le", "_ne"))
    return {"x": x, "xlabel": rfs[0].axis_label(x),
            "ylabel": "\n".join(textwrap.wrap(table.header[lead + 1].replace(" [95% CI]", ""),
                                              26)),
            "ylim": (0.0, 1.0) if frac else None, "series": series,
            "title": ("trials where %s" % args.where) if args.where else None}


def output_format(args: argparse.Namespace) -> str:
    """The output format: --format, else the extension of -o (.csv, .tex, .md, .parquet,
    .nc), else md."""
    if args.format:
        fmt = args.format
    elif args.output:
        ext = os.path.splitext(args.output)[1].lower()
        fmt = {".csv": "csv", ".tex": "latex", ".md": "md", ".parquet": "parquet",
               ".nc": "netcdf"}.get(ext, "md")
    else:
        fmt = "md"
    if fmt in BINARY_FORMATS and not args.output:
        raise UsageError("--format %s writes a file: give -o FILE" % fmt)
    return fmt


def many_tables(rfs: Sequence[Results], args: argparse.Namespace) -> Tuple[List[str], List[Table]]:
    """Tables of several files, --stat or --pair: (preamble lines, [Table])."""
    by = parse_by(args.by) or []
    masks = [where_mask(rf, args.where) for rf in rfs]
    if args.pair is not None:
        pkeys = parse_by(args.pair) or []
        stats = parse_stat_tokens(rfs, args.stat) if args.stat else \
            default_pair_stats(rfs, masks)
        return pair_tables(rfs, pkeys, by, args.where, stats)
    if args.stat:
        return stat_tables(rfs, by, args.where, parse_stat_tokens(rfs, args.stat),
                           columns=args.columns)
    # several files, the default table: one table, the file as the first key
    labels = file_labels(rfs)
    if args.by is None:
        by = ["theorem"]
    merged: Optional[Table] = None
    settle = False
    for rf, mask in zip(rfs, masks):
        cols = rf.read([f for f in ("settle_time", "settle_window") if f in rf.fields])
        settle |= show_settle(cols, mask)
    dstats = default_stats(rfs, masks)
    pre: List[str] = []
    for rf, label in zip(rfs, labels):
        p, tables, _ = summary_tables(rf, by, args.where, settle=settle)
        pre += p
        t = tables[0]
        if dstats:
            mask = where_mask(rf, args.where)
            axes = [Axis(rf, a, rf.read([a])[a]) for a in by]
            gid, keys = make_groups(axes, mask)
            append_stat_columns(t, dstats, compute_stat_results(rf, dstats, mask, gid,
                                                                len(keys)))
        t.rows = [[label] + r for r in t.rows]
        t.csv_rows = [[label] + r for r in t.csv_rows]
        # LaTeX: the file (its name, not its directories) over the group in one text column
        tlab = latex_escape(os.path.basename(label) if os.sep in label else label)
        grouped = bool(by)
        t.tex_rows = [[r"%s\newline %s" % (tlab, r[0])] + r[1:] if grouped else [tlab] + r
                      for r in t.tex_rows]
        if merged is None:
            merged = t
            merged.header = ["file"] + t.header
            merged.csv_header = ["file"] + t.csv_header
            if grouped:
                merged.tex_cols = [(r"file\newline %s" % t.tex_cols[0][0], TEX_TEXT)] + \
                    t.tex_cols[1:]
            else:
                merged.tex_cols = [("file", TEX_TEXT)] + t.tex_cols
                merged.tex_span = (t.tex_span[0] + 1, t.tex_span[1] + 1, t.tex_span[2])
                merged.tex_wide = {j + 1 for j in t.tex_wide}
            merged.title = "by file, " + t.title
        else:
            merged.rows += t.rows
            merged.csv_rows += t.csv_rows
            merged.tex_rows += t.tex_rows
    assert merged is not None  # one file at least (argparse: nargs="+")
    return pre, [merged]


def _emit(args: argparse.Namespace, fmt: str, pre: List[str], tables: List[Table]) -> int:
    if fmt in BINARY_FORMATS:
        write_table_file(tables, fmt, pre, args.output)
        for line in pre + [n for t in tables for n in t.notes]:
            print(line, file=sys.stderr)
        return 0
    text = render(tables, fmt, pre, args.width)
    if fmt == "csv":  # the csv is the table alone; what explains it goes to stderr
        for line in pre + [n for t in tables for n in t.notes]:
            print(line, file=sys.stderr)
    if args.output:
        try:
            with open(args.output, "w") as fh:
                fh.write(text)
        except OSError as e:
            raise schema.FileAccessError("cannot write %s: %s" % (args.output, e))
    else:
        sys.stdout.write(text)
    return 0


def entry(argv: Optional[List[str]] = None) -> int:
    """The command `attnsweep summarize`: main(), then a quiet exit when stdout was closed
    (| head)."""
    rc = main(argv)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # keep the interpreter's exit flush from printing a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        rc = rc or 3
    return rc


if __name__ == "__main__":
    sys.exit(entry())
