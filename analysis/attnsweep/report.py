"""attnsweep report: one self-contained HTML page from results files.

usage: attnsweep report FILE.h5 [FILE2.h5 ...] -o report.html [--bins N] [--trials K]

For each file: provenance (the spec, its SHA-256 and the input files' hashes, tool and library
versions, dates, ranks), completeness and the failures with their messages, the verdict tables
with Wilson intervals (split by the verdict's reason when the file records one), Table 1 with
the near misses, the near-miss robustness, the sections that fit what the sweep varies (a table
per varied sweep key with the variants' columns, phase diagrams of numeric keys, the empirical
measure of mean-field sweeps, the hypotheses of imported weights, time series from snapshots)
and the figures (trial figures of stored end states). Every number comes from the functions of
the table functions of the package (tables, robustness, stattables, measure; attnsweep.summ
gathers them) and every figure from attnsweep.figures: the page is another rendering of
`attnsweep summarize`, never a second computation. The page is rendered by Jinja2
(templates/report.html.j2) with autoescaping.

The page is self-contained: inline CSS, figures as inline PNG (data: URLs), no script, no font
and no request to the network. Exit codes as summarize: 0 written; 2 bad arguments or not a
results file; 3 unreadable file or unwritable output, a missing Python module, or an internal
error; 130 interrupted.

The page-building functions (page(), table_html(), figure_html(), file_sections()) are used by
jobs/referees/referees.py for the referees' campaign page.
"""

from __future__ import annotations

import argparse
import base64
import functools
import os
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import figures, schema, summ
from .render import Table

try:
    import jinja2
except ImportError:  # reported by main() with the package to install (exit 3)
    jinja2 = None  # type: ignore[assignment]

#: the page's style sheet (inline; no font from anywhere but the reader's system)
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
 margin:1.5em auto;max-width:78em;padding:0 1em;color:#1b1b1b;background:#fff;line-height:1.4}
h1{font-size:1.6em;border-bottom:2px solid #0b5394;padding-bottom:.2em}
h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #bbb}
h3{font-size:1.1em;margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}
th,td{border:1px solid #c8c8c8;padding:.2em .45em;text-align:left;vertical-align:top}
th{background:#eef3f8}
tr:nth-child(even) td{background:#fafafa}
caption{caption-side:top;text-align:left;font-weight:600;padding:.2em 0}
.note{color:#444;font-size:.85em;margin:.2em 0 .8em}
.warn{color:#8a1c1c;font-weight:600}
.answer{background:#f3f8ee;border-left:4px solid #5a8f29;padding:.5em .8em;margin:.6em 0}
.question{font-style:italic}
figure{margin:1em 0;padding:.4em;border:1px solid #ddd;display:inline-block;max-width:100%}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85em;color:#333;margin-top:.3em}
pre{background:#f6f6f6;border:1px solid #ddd;padding:.5em;overflow-x:auto;font-size:.82em}
nav ul{columns:2;font-size:.9em}
.scroll{overflow-x:auto}
"""

#: the root attributes shown as provenance, in this order (docs/results.md)
PROVENANCE = ("spec_name", "spec_sha256", "input_sha256", "master_seed", "common_keys",
              "tool", "tool_version", "git_revision", "schema_version", "mpi_version",
              "hdf5_version", "yaml_version", "blas_version", "rng_algorithm", "n_trials",
              "ranks", "hosts", "start_time", "end_time", "merged_from")

#: coordinates never treated as a swept axis of their own
NOT_AXES = ("trial", "replicate", "case_name", "case")


class Page:
    """An HTML page being built: its blocks (headings, paragraphs, tables, figures, ...) in
    order, its figures (each an id) and its table of contents. html() renders it through the
    Jinja2 template templates/report.html.j2 with autoescaping: no text is put into the page
    unescaped."""

    def __init__(self, title: str, tmpdir: str) -> None:
        self.title, self.tmpdir = title, tmpdir
        self.blocks: List[Dict[str, Any]] = []
        self.figures: List[str] = []
        self.toc: List[Tuple[int, str, str]] = []

    def h(self, level: int, text: str, anchor: Optional[str] = None) -> None:
        """A heading (level 2 or 3), in the table of contents when it has an anchor."""
        if anchor:
            self.toc.append((level, text, anchor))
        self.blocks.append({"kind": "h", "level": level, "text": text, "anchor": anchor})

    def p(self, text: str, cls: Optional[str] = None) -> None:
        """A paragraph (cls: "note", "warn", "question")."""
        self.blocks.append({"kind": "p", "text": text, "cls": cls})

    def box(self, text: str, cls: str) -> None:
        """A paragraph in a box of its own (cls "answer": a referee's answer)."""
        self.blocks.append({"kind": "div", "text": text, "cls": cls})

    def details(self, summary: str, text: str) -> None:
        """A folded block of preformatted text (the stored spec)."""
        self.blocks.append({"kind": "details", "summary": summary, "text": text})

    def kv(self, title: str, pairs: Sequence[Tuple[str, Any]]) -> None:
        """A two-column table of names and values (provenance)."""
        self.blocks.append({"kind": "kv", "title": title,
                            "pairs": [(str(k), str(v)) for k, v in pairs]})

    def figure(self, draw: Callable[[str], Any], caption: str, kind: str) -> Optional[str]:
        """draw(path) writes a PNG to path (a figures function); the PNG goes inline.
        A figure that cannot be drawn (the trial has no stored tokens, ...) is a note."""
        fid = "fig-%d" % (len(self.figures) + 1)
        path = os.path.join(self.tmpdir, fid + ".png")
        try:
            draw(path)
        except (schema.SchemaError, summ.UsageError) as e:
            self.p("figure not drawn (%s): %s" % (caption, e), "note")
            return None
        with open(path, "rb") as fh:
            data = base64.b64encode(fh.read()).decode("ascii")
        self.figures.append(fid)
        self.blocks.append({"kind": "figure", "id": fid, "fig_kind": kind, "caption": caption,
                            "data": data, "number": len(self.figures)})
        return fid

    def table(self, t: Table) -> None:
        """A summarize Table: its md header and display cells, then its notes."""
        self.blocks.append({"kind": "table", "title": t.title, "header": list(t.header),
                            "rows": [[str(c) for c in r] for r in t.rows],
                            "notes": list(t.notes)})

    def html(self) -> str:
        """The page, rendered by templates/report.html.j2 (Jinja2, autoescaping on)."""
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(__file__),
                                                        "templates")),
            autoescape=True, trim_blocks=False, lstrip_blocks=False, keep_trailing_newline=True)
        return env.get_template("report.html.j2").render(
            title=self.title, css=jinja2.utils.markupsafe.Markup(CSS), toc=self.toc,
            blocks=self.blocks)


def table_records(t: Table) -> List[Dict[str, Any]]:
    """The machine-readable cells of a Table (its csv) as a list of dicts, numbers as floats
    (None where empty): for sentences that quote a table's numbers."""
    out: List[Dict[str, Any]] = []
    for r in t.csv_rows:
        row: Dict[str, Any] = {}
        for h, c in zip(t.csv_header, r):
            try:
                row[h] = float(c) if c != "" else None
            except (TypeError, ValueError):
                row[h] = c
        out.append(row)
    return out


# ---------------------------------------------------------------- what the sweep varies
def varied_axes(rf: schema.Results) -> Tuple[List[str], List[str]]:
    """The sweep coordinates with more than one value among the trials (enum axes and numeric
    axes separately), in coordinate order."""
    import numpy as np
    names = [c for c in rf.coordinates() if c not in NOT_AXES and c in rf.fields]
    cols = rf.read(names)
    enums: List[str] = []
    nums: List[str] = []
    for c in names:
        v = cols[c]
        if v.dtype.kind == "f":
            v = v[~np.isnan(v)]
        if len(np.unique(v)) < 2:
            continue
        (enums if rf.is_enum(c) else nums).append(c)
    return enums, nums


def _has_label(rf: schema.Results, field: str, label: str, col: Any) -> bool:
    return field in rf.fields and rf.has_code(field, label) and \
        bool((col == rf.code(field, label)).any())


# ---------------------------------------------------------------- one file
def file_sections(page: Page, rf: schema.Results, idx: int, bins: int = 12, trials: int = 2
                 ) -> None:
    """The sections of one results file."""
    import numpy as np
    a = "f%d" % idx
    page.h(2, "%s" % rf.path, a)
    # ---- provenance
    page.h(3, "Provenance", a + "-prov")
    root = rf.root_attributes()
    page.kv("root attributes of %s" % os.path.basename(rf.path),
            [(k, root[k]) for k in PROVENANCE if k in root] +
            [(k, v) for k, v in root.items() if k not in PROVENANCE])
    spec = rf.spec_text()
    if spec:
        page.details("the spec stored in the file (/spec)", spec)
    # ---- completeness and failures
    page.h(3, "Completeness and failures", a + "-done")
    want = [f for f in ("verdict", "outcome", "message") if f in rf.fields]
    cols = rf.read(want)
    for line in summ.completeness(rf, cols):
        page.p(line, "warn" if line.startswith(("INCOMPLETE", "WARNING")) else None)
    bad = np.zeros(rf.n_rows, bool)
    for lab in ("failed", "nonfinite"):
        if rf.has_code("verdict", lab):
            bad |= cols["verdict"] == rf.code("verdict", lab)
    if bad.any():
        groups: Dict[Tuple[str, str], List[int]] = {}
        for i in np.nonzero(bad)[0]:
            key = (rf.label("verdict", cols["verdict"][i]),
                   schema.text(cols["message"][i]) if "message" in cols else "")
            groups.setdefault(key, []).append(int(i))
        rows = [(v, m or "(no message)", len(t), ", ".join(map(str, t[:8])) +
                 (" ..." if len(t) > 8 else "")) for (v, m), t in sorted(groups.items())]
        page.table(summ.Table("failed and non-finite trials, by message",
                              ["verdict", "message", "trials", "trial indices"],
                              [[str(c) for c in r] for r in rows], [], []))
    else:
        page.p("No trial failed and none ended non-finite.")
    # ---- verdicts
    page.h(3, "Verdicts", a + "-verdicts")
    pre, tables, _ = summ.summary_tables(rf, ["theorem"], None, defaults=True)
    for t in tables:
        page.table(t)
    if "reason" in rf.fields:  # the verdict's reason (when the writer records it)
        _, tables, _ = summ.summary_tables(rf, ["theorem", "reason"], None)
        tables[0].title = "by theorem, split by the verdict's reason"
        for t in tables:
            page.table(t)
    _, tables, _ = summ.summary_tables(rf, [], None, table1=True)
    for t in tables:
        page.table(t)
    # ---- near-miss robustness
    if rf.near_hypotheses is not None and "near_verdict" in rf.fields:
        page.h(3, "Near-miss robustness", a + "-robust")
        _, tables, robust = summ.robustness_tables(rf, [], None, bins=bins)
        if robust and robust.get("panels"):
            for t in tables:
                page.table(t)
            page.figure(functools.partial(figures.plot_robustness, robust),
                        "verdict against the nearest theorem against each hypothesis "
                        "distance (Wilson 95% bars)", "robustness")
        else:
            page.p("No trial has a nearest theorem with a hypothesis distance to show.")
    # ---- what the sweep varies
    enums, nums = varied_axes(rf)
    page.h(3, "What the sweep varies", a + "-varies")
    page.p("Varied sweep keys: %s." % (", ".join(enums + nums) or "none (one point, "
                                       "replicates only)"))
    for ekey in enums:
        _, tables, _ = summ.summary_tables(rf, [ekey], None, defaults=True)
        for t in tables:
            page.table(t)
    for nkey in nums[:4]:
        _, tables, phase = summ.summary_tables(rf, [], None, phase=nkey, bins=bins)
        for t in tables:
            page.table(t)
        page.figure(functools.partial(figures.plot_phase, phase),
                    "verdict fractions against %s (Wilson 95%% bars)" % nkey, "phase")
    ref = rf.read(["reference_n"])["reference_n"] if "reference_n" in rf.fields else None
    if ref is not None and (ref > 0).any():
        page.h(3, "Mean field: the empirical measure", a + "-measure")
        _, tables = summ.measure_tables(rf, ["n"], None)
        for t in tables:
            page.table(t)
    fam = rf.read([f for f in ("vfamily", "mfamily") if f in rf.fields])
    if any(_has_label(rf, f, "file", c) for f, c in fam.items()):
        page.h(3, "Weights from a file: the hypotheses, head by head", a + "-census")
        toks = [t for t in ("flag_good:gt0", "flag_m_spd:gt0", "flag_m_symmetric:gt0",
                            "margin:median", "m_asym:median", "gap:median", "near_dist:median")]
        toks = [t for t in toks if t.split(":")[0] in rf.fields or t.startswith("flag_")]
        stats = _parse_stats(rf, toks)
        if stats:
            _, tables = summ.stat_tables([rf], ["theorem"], None, stats)
            for t in tables:
                page.table(t)
    if "snapshots" in rf.bulk_names():
        page.h(3, "Time series from the snapshots", a + "-series")
        by = enums[:1]
        _, tables, series = summ.series_tables(rf, by, None, ["residual", "clusters"])
        for t in tables:
            page.table(t)
        page.figure(functools.partial(figures.plot_series, series),
                    "residual and cluster count in time%s (median, 95%% band)" % (
                        " by " + by[0] if by else ""), "series")
    # ---- trial figures
    tr = trial_choice(rf, trials)
    if tr:
        page.h(3, "Trials", a + "-trials")
        for trial, why in tr:
            page.figure(functools.partial(figures.plot_trial_file, rf, trial),
                        "trial %d (%s): end state, paths and the final attention matrix" % (
                            trial, why), "trial")


def _parse_stats(rf: schema.Results, toks: Sequence[str]) -> List[Any]:
    """Statistics of the census section: each token alone, the ones the file cannot give
    (an unknown field or flag) left out."""
    out = []
    for t in toks:
        try:
            out += summ.parse_stat_tokens([rf], [t])
        except (summ.UsageError, schema.SchemaError):
            pass
    return out


def trial_choice(rf: schema.Results, k: int) -> List[Tuple[int, str]]:
    """Up to k trials with stored tokens to draw: the first of each verdict, violated first."""
    if k <= 0 or not ({"final_tokens", "snapshots"} & set(rf.bulk_names())):
        return []
    import numpy as np
    v = rf.read(["verdict"])["verdict"]
    out: List[Tuple[int, str]] = []
    for lab in ("violated", "unresolved", "consistent", "no_prediction"):
        if len(out) >= k or not rf.has_code("verdict", lab):
            continue
        hit = np.nonzero(v == rf.code("verdict", lab))[0]
        if len(hit):
            out.append((int(hit[0]), lab))
    return out


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument as a UsageError (one line, exit 2)."""

    def error(self, message: str) -> Any:
        raise summ.UsageError("%s (attnsweep report --help lists the options)" % message)


def _fail(msg: Any, rc: int) -> int:
    print("attnsweep report: %s" % " ".join(str(msg).split()), file=sys.stderr)
    return rc


def write_page(page: Page, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page.html())
    except OSError as e:
        raise schema.FileAccessError("cannot write %s: %s" % (path, e.strerror or e))


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = _Parser(prog="attnsweep report",
                      description="One self-contained HTML page (inline CSS and figures, no "
                      "script or network) from results files: provenance, completeness and "
                      "failures, verdict tables with intervals, near-miss robustness, the "
                      "sections of what each sweep varies, and figures.")
    ap.add_argument("files", nargs="+", metavar="file", help="results file(s) (OUT.h5)")
    ap.add_argument("-o", "--output", metavar="FILE", required=True,
                    help="the HTML page to write (report.html)")
    ap.add_argument("--bins", type=int, default=12,
                    help="bins of the phase and robustness tables (as summarize)")
    ap.add_argument("--trials", type=int, default=2, metavar="K",
                    help="trial figures per file (first violated, unresolved, consistent "
                    "trial with stored tokens; default 2, 0: none)")
    ap.add_argument("--title", default=None, help="the page title")
    try:
        args = ap.parse_args(argv)
        if jinja2 is None:
            raise ImportError("No module named 'jinja2'")
        if args.bins < 1:
            raise summ.UsageError("--bins must be >= 1")
        if args.trials < 0:
            raise summ.UsageError("--trials must be >= 0")
        if len(set(args.files)) < len(args.files):
            raise summ.UsageError("a file is named twice")
        with tempfile.TemporaryDirectory(prefix="attnsweep-report-") as tmp:
            page = Page(args.title or "attnsweep report: " + ", ".join(
                os.path.basename(f) for f in args.files), tmp)
            for i, path in enumerate(args.files):
                with schema.open_results(path) as rf:
                    file_sections(page, rf, i + 1, bins=args.bins, trials=args.trials)
            write_page(page, args.output)
        print("wrote %s: %d files, %d figures" % (args.output, len(args.files),
                                                   len(page.figures)))
        return 0
    except SystemExit as e:  # --help, or argparse's own usage error (already printed)
        return 2 if e.code else 0
    except (summ.UsageError, schema.SchemaError) as e:
        return _fail(e, 2)
    except schema.FileAccessError as e:
        return _fail(e, 3)
    except ImportError as e:
        return _fail("a Python module is missing (%s): apt-get install python3-numpy "
                     "python3-h5py python3-matplotlib python3-jinja2 (and run with "
                     "/usr/bin/python3)" % e, 3)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except OSError as e:
        return _fail("I/O failure: %s" % e, 3)
    except Exception as e:  # a bug: say where
        if os.environ.get("ATTNSWEEP_DEBUG"):
            raise
        import traceback
        tb = traceback.extract_tb(e.__traceback__)
        where = " at %s:%s" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else ""
        return _fail("internal error (a bug in the analysis, please report it): %s: %s%s;"
                     " ATTNSWEEP_DEBUG=1 prints the traceback" % (type(e).__name__, e, where),
                     3)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
