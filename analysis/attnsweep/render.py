"""A table and its three renderings: md (GitHub markdown), csv (one machine-readable table)
and LaTeX (booktabs tabularx at --width column or page), with the cell formats they share."""

from __future__ import annotations

import io
import math
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

def g(v: Any, digits: int = 3) -> str:
    """A number with `digits` significant digits, "-" for None or NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "%.*g" % (digits, v)


def fnum(v: Any) -> str:
    """A csv cell: an integer as such, a float with every digit, "" for None or NaN."""
    if v is None:
        return ""
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return "" if math.isnan(v) else repr(float(v))


def latex_escape(t: Any) -> str:
    """Text for LaTeX: special characters escaped; a line may break after _ and /."""
    rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
           "_": r"\_\allowbreak{}", "/": r"/\allowbreak{}", "{": r"\{", "}": r"\}",
           "~": r"\textasciitilde{}", "^": r"\^{}", "<": r"$<$", ">": r"$>$"}
    return "".join(rep.get(c, c) for c in str(t))


#: sweep axes typeset as the symbols of the paper (LaTeX tables)
TEX_NAMES = {"d": "$d$", "n": "$n$", "T": "$T$", "dt": r"$\Delta t$", "eps": r"$\varepsilon$"}


def tex_name(field: str) -> str:
    """A field in LaTeX: the paper's symbol of a sweep axis, else the name escaped."""
    return TEX_NAMES.get(field) or latex_escape(field)


def tex_eq(field: str, value: Any) -> str:
    """"field = value" for LaTeX: all in math mode for a symbol and a number ($d = 2$)."""
    sym = TEX_NAMES.get(field)
    try:
        float(value)
        numeric = True
    except ValueError:
        numeric = False
    if sym and numeric:
        return "%s = %s$" % (sym[:-1], value)
    return "%s = %s" % (tex_name(field), latex_escape(value))


def tex_p(x: float) -> str:
    """A proportion in the style of journals: two decimals without the leading zero."""
    t = "%.2f" % x
    return t[1:] if t.startswith("0.") else t


#: LaTeX column types (tabularx, whose array package gives >{...}): text that wraps, and
#: numbers set flush right in a fixed width (a value over its interval, one per line).
TEX_TEXT = r">{\raggedright\arraybackslash}X"


def tex_num(width: str) -> str:
    """A LaTeX column of numbers set flush right in a fixed width."""
    return r">{\raggedleft\arraybackslash}p{%s}" % width


class Table:
    """A table with display cells (md), machine-readable cells (csv) and typeset cells (LaTeX:
    tex_cols = [(header, column type)], tex_rows, tex_span = (first, last, header) for a
    header over a run of columns)."""

    def __init__(self, title: str, header: List[str], rows: List[List[str]],
                 csv_header: List[str], csv_rows: List[List[str]], notes: Iterable[str] = (),
                 tex_cols: Optional[List[Tuple[str, str]]] = None,
                 tex_rows: Optional[List[List[str]]] = None,
                 tex_span: Optional[Tuple[int, int, str]] = None,
                 tex_heading: Optional[str] = None, tex_wide: Iterable[int] = (),
                 tex_merge: Optional[Tuple[int, int]] = None) -> None:
        self.title, self.header, self.rows = title, header, rows
        self.csv_header, self.csv_rows, self.notes = csv_header, csv_rows, list(notes)
        self.tex_cols: List[Tuple[str, str]] = list(tex_cols or [])
        self.tex_rows: List[List[str]] = list(tex_rows or [])
        self.tex_span: Any = tex_span
        self.tex_heading = tex_heading  # a first line across the table (the group)
        # --width column: the columns (indices) left out, and (a, b): column b's cell
        # written under column a's (a text column) instead of a column of its own
        self.tex_wide, self.tex_merge = set(tex_wide), tex_merge


def num_getter(s: Dict[str, Any], i: int) -> Callable[[str], str]:
    """The csv cell of statistic `name` of group i (num(name)), "" where s has none."""
    def num(name: str) -> str:
        if name not in s:
            return ""
        v = s[name][i]
        if isinstance(v, (float, np.floating)):
            return "" if math.isnan(v) else repr(float(v))
        return str(int(v))
    return num


# ---------------------------------------------------------------- rendering
#: The LaTeX of a table: packages it needs, and the layout that fits \linewidth of an article
#: (footnotesize, narrow column gaps, text columns that share what the numbers leave).
LATEX_PACKAGES = ("booktabs", "tabularx")


#: --width: the LaTeX layout of each width: font size, column gap, the width to fill, and
#: the float to \input the table in
LATEX_WIDTHS = {
    "column": (r"\scriptsize", "2pt", r"\columnwidth", "table"),
    "page": (r"\footnotesize", "2.5pt", r"\linewidth", "table*"),
}


def tex_layout(t: Table, width: str) -> Tuple[List[Tuple[str, str]], List[List[str]],
                                          Optional[Tuple[int, int, str]]]:
    """(columns, rows, span) of a table at a width: for `column`, t.tex_merge folds a column
    into a text column and t.tex_wide columns are left out."""
    cols, rows, span = list(t.tex_cols), [list(r) for r in t.tex_rows], t.tex_span
    if width != "column":
        return cols, rows, span
    drop = set(t.tex_wide)
    if t.tex_merge:
        a, b = t.tex_merge
        for r in rows:
            if r[b] not in ("", "--"):
                r[a] = r"%s\newline %s" % (r[a], r[b])
        drop.add(b)
    keep = [j for j in range(len(cols)) if j not in drop]
    if span:
        first, last, text = span
        inside = [j for j in keep if first <= j <= last]
        span = (keep.index(inside[0]), keep.index(inside[-1]), text) if inside else None
    return [cols[j] for j in keep], [[r[j] for j in keep] for r in rows], span


def render_latex_table(t: Table, out: io.StringIO, width: str = "column") -> None:
    """One table as a booktabs tabularx at a --width (docs/analysis.md, "LaTeX tables")."""
    size, sep, fill, env = LATEX_WIDTHS[width]
    cols, tex_rows, span = tex_layout(t, width)
    out.write("%% %s\n" % t.title)
    out.write("%% needs \\usepackage{%s}; \\input it in a %s environment (--width %s)\n" %
              (",".join(LATEX_PACKAGES), env, width))
    out.write("\\begingroup%s\\setlength{\\tabcolsep}{%s}%%\n" % (size, sep))
    out.write("\\noindent\\begin{tabularx}{%s}{@{}%s@{}}\n\\toprule\n" %
              (fill, "".join(c for _, c in cols)))
    if t.tex_heading:
        out.write("\\multicolumn{%d}{@{}l}{%s} \\\\\n\\midrule\n" % (len(cols), t.tex_heading))
    if span:
        a, b, text = span
        out.write(" & " * a + "\\multicolumn{%d}{c}{%s}" % (b - a + 1, text) +
                  " & " * (len(cols) - 1 - b) + " \\\\\n")
        out.write("\\cmidrule(lr){%d-%d}\n" % (a + 1, b + 1))
    out.write(" & ".join(h for h, _ in cols) + " \\\\\n\\midrule\n")
    for k, r in enumerate(tex_rows):
        out.write(("\\addlinespace[2pt]\n" if k else "") + " & ".join(r) + " \\\\\n")
    out.write("\\bottomrule\n\\end{tabularx}\n\\endgroup\n")
    for n in t.notes:
        out.write("% " + n + "\n")


def render(tables: Sequence[Table], fmt: str, preamble: Sequence[str],
           width: str = "column") -> str:
    """The tables as md, csv (one table: the tables share their columns) or latex."""
    out = io.StringIO()
    if fmt == "csv":
        import csv
        w = csv.writer(out, lineterminator="\n")
        # one csv is one table: the tables of one command share their columns (Table 1 per
        # --by group, the robustness table per distance in long format)
        heads = {tuple(t.csv_header) for t in tables}
        if len(heads) > 1:
            raise AssertionError("csv of tables with different columns")
        if tables:
            w.writerow(tables[0].csv_header)
        for t in tables:
            w.writerows(t.csv_rows)
        return out.getvalue()
    if fmt == "md":
        for line in preamble:
            out.write(line + "  \n")
        for t in tables:
            out.write("\n## %s\n\n" % t.title)
            out.write("| " + " | ".join(t.header) + " |\n")
            out.write("|" + "|".join("---" for _ in t.header) + "|\n")
            for r in t.rows:
                out.write("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |\n")
            for n in t.notes:
                out.write("\n" + n + "\n")
        return out.getvalue()
    # latex
    for line in preamble:
        out.write("% " + line + "\n")
    for t in tables:
        out.write("\n")
        render_latex_table(t, out, width)
    return out.getvalue()


