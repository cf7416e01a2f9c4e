#!/usr/bin/python3
"""The measured tables of docs/variants.md, docs/robustness-of-theorems.md and docs/meanfield.md
are printed by a shipped command, written next to them as `<!-- table: attnsweep summarize
ARGS -->`. This test reruns every such command on small versions of the sweeps (one replicate,
fewer tokens, shorter horizons: their specs are the doc's or jobs/examples', reduced here) and
checks the structure of what it prints against the doc's table: the same columns, and the same
rows (the values of the grouping columns). Values are not compared: they come from the full
runs. Needs the built attnsweep ($ATTNSWEEP) to run the sweeps.
"""

import io
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
import attnsweep_summarize as summ  # noqa: E402

DOCS = ["docs/variants.md", "docs/robustness-of-theorems.md", "docs/meanfield.md"]
MARK = re.compile(r"^<!-- table: attnsweep summarize (.*) -->$")
#: columns after which a row's cells are values, not the row's identity
VALUE_START = ("trials", "pairs", "observable")


def small(text, subs):
    """A spec text with the given (pattern, replacement) substitutions, each of which must
    apply (the test fails when a spec changes under it)."""
    for pat, rep in subs:
        new, k = re.subn(pat, rep, text, flags=re.M)
        if not k:
            raise AssertionError("pattern %r not in the spec" % pat)
        text = new
    return text


def example(name, subs):
    with open(os.path.join(SRC, "jobs", "examples", name + ".yaml")) as fh:
        return small(fh.read(), subs)


def doc_base_yaml(name="base"):
    """The NAME.yaml heredoc of docs/variants.md (base: the Sinkformer and causal-mask sweeps;
    sphere_beta: the sphere's metastability)."""
    with open(os.path.join(SRC, "docs", "variants.md")) as fh:
        text = fh.read()
    m = re.search(r"cat >%s\.yaml <<'YAML'\n(.*?)\n\s*YAML\n" % re.escape(name), text, re.S)
    assert m, "docs/variants.md has no %s.yaml" % name
    lines = m.group(1).split("\n")
    indent = min(len(l) - len(l.lstrip()) for l in lines if l.strip())
    return "\n".join(l[indent:] for l in lines) + "\n"


def doc_yaml(doc, name):
    """The ```yaml block of docs/DOC whose spec is named NAME."""
    with open(os.path.join(SRC, "docs", doc)) as fh:
        text = fh.read()
    m = re.search(r"```yaml\n(name: %s\n.*?)```" % re.escape(name), text, re.S)
    assert m, "docs/%s has no spec named %s" % (doc, name)
    return m.group(1)


def specs():
    """File name -> small spec text."""
    base = small(doc_base_yaml(), [(r"replicates: 10", "replicates: 1"), (r"T: 10", "T: 2"),
                                   (r"T: 40", "T: 4")])
    keys = {"softmax": "attention: softmax",
            "sinkhorn": "attention: sinkhorn, sinkhorn_iters: 100, sinkhorn_tol: 1.0e-9",
            "nomask": "mask: none", "causal": "mask: causal"}
    out = {n + ".h5": base.replace("NAME", n).replace("KEYS", k) for n, k in keys.items()}
    # the snapshot times (the --series columns) need T = 3000: one start of 6 tokens per beta,
    # a coarser step
    out["sphere_beta.h5"] = small(doc_base_yaml("sphere_beta"), [
        (r"^replicates: 6$", "replicates: 1"),
        (r"n: 32, T: 3000, dt: 0.1", "n: 6, T: 3000, dt: 0.5")])
    out["skip.h5"] = example("skip", [(r"^replicates: 10", "replicates: 1"),
                                      (r"n: 32, d: 8", "n: 8, d: 3")])
    out["multihead.h5"] = example("multihead", [(r"^replicates: 20", "replicates: 1"),
                                                (r"n: 32, d: 2, T: 15", "n: 8, d: 2, T: 3")])
    out["per_layer.h5"] = example("per_layer", [(r"^replicates: 10", "replicates: 1"),
                                                (r"n: 20, d: 3, T: 30", "n: 6, d: 3, T: 6")])
    # softmax, converged Sinkhorn and sinkhorn_fixed K = 3 on common draws (--pair attention)
    out["sinkformers.h5"] = example("sinkformers", [(r"^replicates: 10", "replicates: 2"),
                                                    (r"^  n: 20$", "  n: 6"),
                                                    (r"^  T: 10$", "  T: 2")])
    # cheap enough at full size (340 and 400 trials, about 1 s each)
    out["approximate.h5"] = example("approximate", [(r"^name: ", "name: ")])
    out["perturbed.h5"] = example("perturbed", [(r"^name: ", "name: ")])
    # past t_decide (issue 30): the same sweeps with T_decide, fewer starts
    out["perturbed_decided.h5"] = example("perturbed", [(r"^replicates: 20", "replicates: 2"),
                                                        (r"^  T: 15$", "  T: 15\n  T_decide: 1.05")])
    out["approximate_decided.h5"] = example("approximate", [
        (r"^replicates: 20", "replicates: 2"), (r"T: 15, ", "T: 15, T_decide: 1.05, ")])
    # the same in x variables (issue 47: the remedy of reason precision_vars_x)
    out["approximate_decided_x.h5"] = example("approximate", [
        (r"^replicates: 20", "replicates: 2"),
        (r"T: 15, ", "T: 15, T_decide: 1.05, vars: x, ")])
    out["horizons.h5"] = example("horizons", [(r"^replicates: 10", "replicates: 1")])
    out["horizons_fixed.h5"] = example("horizons", [(r"^replicates: 10", "replicates: 1"),
                                                    (r"^  T_decide: 1.05", "  T_decide: 0")])
    out["horizon.h5"] = small(doc_yaml("robustness-of-theorems.md", "horizon"),
                              [(r"^replicates: 20", "replicates: 2")])
    out["meanfield.h5"] = example("meanfield", [
        (r"n: \[100000, 10000, 1000, 100\]", "n: [400, 200, 100, 50]"),
        (r"reference_n: \[10000, 1000, 100, 10\]", "reference_n: [40, 20, 10, 5]")])
    out["meanfield_seeds.h5"] = example("meanfield_seeds", [
        (r"^replicates: 8", "replicates: 1"), (r"n: \[10000, 1000, 100\]", "n: [200, 100, 50]"),
        (r"reference_n: \[1000, 100, 10\]", "reference_n: [20, 10, 5]")])
    return out


#: files whose sweep ends with non-finite trials by design (x beyond the range of a double)
NONFINITE_OK = ("approximate_decided_x.h5",)
#: files whose small version has other values of a grouping column (the number of rows and
#: the other columns are still compared)
SCALED = {"meanfield_seeds.h5": ("n",), "meanfield.h5": ("n",),
          # two starts per point: the distance bin's bounds and medians are the sample's
          "horizon.h5": ("near_dist", "x (median)")}


def table_after(lines, i):
    """The lines of the first markdown table after line i (0-based; [] when none follows)."""
    j = i + 1
    while j < len(lines) and not lines[j].startswith("|"):
        j += 1
    table = []
    while j < len(lines) and lines[j].startswith("|"):
        table.append(lines[j])
        j += 1
    return table


def doc_tables():
    """[(doc, line, argv, header, rows)] of every marked table."""
    found = []
    for doc in DOCS:
        with open(os.path.join(SRC, doc)) as fh:
            lines = fh.read().split("\n")
        for i, line in enumerate(lines):
            m = MARK.match(line)
            if not m:
                continue
            table = table_after(lines, i)
            assert len(table) >= 3, "%s:%d: no table after the marker" % (doc, i + 1)
            found.append((doc, i + 1, shlex.split(m.group(1)), cells(table[0]),
                          [cells(r) for r in table[2:]]))
    return found


#: a table printed by a shipped script (jobs/): `<!-- table: /usr/bin/python3 jobs/... -->`
SCRIPT_MARK = re.compile(r"^<!-- table: (/usr/bin/python3 jobs/.*) -->$")
#: the key columns of those tables (the leading ones with these names)
SCRIPT_KEYS = ("form", "case", "T", "V", "d", "x0", "sigma", "W", "method", "V, sigma, W")


def script_specs():
    """Results file of a script table -> small spec text: ffn_authors.yaml with one start of 6
    tokens per setting; jobs/examples/ffn.yaml and the doc's ffn_paper2d.yaml with two starts
    of 6 tokens (ffn.yaml: T = 3)."""
    return {
        "ffn_authors.h5": example("ffn_authors", [(r"^replicates: 10", "replicates: 1"),
                                                  (r"n: 20, dt", "n: 6, dt")]),
        "ffn.h5": example("ffn", [(r"^replicates: 10", "replicates: 2"),
                                  (r"n: 20, d: 3, T: 15", "n: 6, d: 3, T: 3")]),
        "ffn_paper2d.h5": small(doc_base_yaml("ffn_paper2d"), [
            (r"^replicates: 20", "replicates: 2"), (r"n: 20, d: 2", "n: 6, d: 2")]),
    }


def all_md_tables(text):
    """Every md table of an output, each as a list of rows of cells."""
    tables, cur = [], []
    for line in text.split("\n") + [""]:
        if line.startswith("|"):
            cur.append(cells(line))
        elif cur:
            tables.append(cur)
            cur = []
    return tables


def cells(row):
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def md_table(text):
    """Header and rows of the first md table in summarize's output (--robustness prints one
    per distance: the docs show the first)."""
    rows = []
    for line in text.split("\n"):
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return cells(rows[0]), [cells(r) for r in rows[2:]]


def columns(header):
    """The columns, the mass columns of --measure (m1, m2, ...: as many as the data have
    nonzero masses, docs/analysis.md) as one."""
    out = []
    for c in header:
        c = re.sub(r"^m\d+ mean \(sd\)$", "mK mean (sd)", c)
        if not out or out[-1] != c:
            out.append(c)
    return out


def keys(header, rows, scaled=()):
    """The identity of each row: the cells before the first value column (a scaled column
    as *)."""
    n = min([header.index(c) for c in VALUE_START if c in header] + [len(header)])
    if "observable" in header:
        n = header.index("observable") + 1
    if not any(c in header for c in VALUE_START + ("observable",)):
        n = 1  # a table without a count column (--measure): its first column
    return sorted(tuple("*" if header[k] in scaled else r[k] for k in range(n)) for r in rows)


class DocTablesTest(unittest.TestCase):
    def test_every_marked_table(self):
        tables = doc_tables()
        self.assertGreaterEqual(len(tables), 9)
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        made = {}
        sp = specs()
        for doc, line, argv, header, rows in tables:
            where = "%s:%d" % (doc, line)
            args = []
            for a in argv:
                if a.endswith(".h5"):
                    self.assertIn(a, sp, "%s: no small spec for %s" % (where, a))
                    if a not in made:
                        spec = os.path.join(tmp.name, a[:-3] + ".yaml")
                        with open(spec, "w") as fh:
                            fh.write(sp[a])
                        made[a] = os.path.join(tmp.name, a)
                        p = subprocess.run([exe, "run", spec, "-o", made[a]],
                                           capture_output=True, text=True, timeout=300)
                        # 4: complete with non-finite trials, which some tables count
                        want = (0, 4) if a in NONFINITE_OK else (0,)
                        self.assertIn(p.returncode, want, "%s: %s" % (a, p.stderr[-2000:]))
                    a = made[a]
                args.append(a)
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                rc = summ.main(args + ["--format", "md"])
            self.assertEqual(rc, 0, "%s: %s" % (where, err.getvalue()))
            h, r = md_table(out.getvalue())
            self.assertEqual(columns(h), columns(header), "%s: the columns differ" % where)
            scaled = [c for a in argv for c in SCALED.get(a, ())]
            self.assertEqual(keys(h, r, scaled), keys(header, rows, scaled),
                             "%s: the rows differ" % where)

    def test_script_tables(self):
        """docs/variants.md's tables of `jobs/ffn_forms.py summary FILE --markdown` (the Nth
        such marker shows the Nth table it prints; `summary`, `hyperplanes ffn.h5`, `paper2d
        ffn_paper2d.h5`): rerun on small versions of their sweeps (script_specs; --rerun 0:
        summary's numpy cross-check is not a table), the same columns and the same rows (the
        leading key columns)."""
        marked = []
        with open(os.path.join(SRC, "docs", "variants.md")) as fh:
            lines = fh.read().split("\n")
        for i, line in enumerate(lines):
            m = SCRIPT_MARK.match(line)
            if m:
                table = [cells(r) for r in table_after(lines, i)]
                marked.append((i + 1, shlex.split(m.group(1)), table))
        self.assertEqual(len(marked), 4)
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        sp = script_specs()
        made = {}
        for line, argv, table in marked:
            for a in argv:
                if not a.endswith(".h5") or a in made:
                    continue
                self.assertIn(a, sp, "docs/variants.md:%d: no small spec for %s" % (line, a))
                spec = os.path.join(tmp.name, a[:-3] + ".yaml")
                with open(spec, "w") as fh:
                    fh.write(sp[a])
                made[a] = os.path.join(tmp.name, a)
                p = subprocess.run([exe, "run", spec, "-o", made[a]], capture_output=True,
                                   text=True, timeout=300)
                self.assertEqual(p.returncode, 0, "%s: %s" % (a, p.stderr[-2000:]))
        outputs = {}
        for k, (line, argv, table) in enumerate(marked):
            where = "docs/variants.md:%d" % line
            self.assertEqual(argv[:2], ["/usr/bin/python3", "jobs/ffn_forms.py"], where)
            args = [made.get(a, a) for a in argv[2:]]
            key = tuple(args)
            if key not in outputs:
                p = subprocess.run([sys.executable, os.path.join(SRC, "jobs", "ffn_forms.py")] +
                                   args + ["--rerun", "0"], capture_output=True, text=True,
                                   timeout=300)
                self.assertEqual(p.returncode, 0, "%s: %s" % (where, p.stderr[-2000:]))
                outputs[key] = all_md_tables(p.stdout)
            nth = sum(1 for m in marked[:k] if m[1] == argv)
            self.assertGreater(len(outputs[key]), nth, where)
            got = outputs[key][nth]
            self.assertEqual(got[0], table[0], "%s: the columns differ" % where)
            nk = next(c for c, h in enumerate(table[0]) if h not in SCRIPT_KEYS)
            self.assertGreaterEqual(nk, 2, where)
            self.assertEqual(sorted(r[:nk] for r in got[2:]), sorted(r[:nk] for r in table[2:]),
                             "%s: the rows differ" % where)

    def test_projection_table(self):
        """docs/meanfield.md's projection table is `bench_group --model ...` (the marker): the
        same columns and (n, R) rows, and every E(R) the formula of the doc's text gives,
        recomputed here; one of them, E(196) at n = 50,000, derived by hand."""
        with open(os.path.join(SRC, "docs", "meanfield.md")) as fh:
            lines = fh.read().split("\n")
        marks = [i for i, l in enumerate(lines) if l.startswith("<!-- table: bench_group ")]
        self.assertEqual(len(marks), 1)
        argv = shlex.split(lines[marks[0]][len("<!-- table: "):-len(" -->")])
        self.assertIn("build/dev/bench/" + " ".join(argv), lines[marks[0] + 1])
        doc = [cells(r) for r in table_after(lines, marks[0])]
        self.assertGreaterEqual(len(doc), 3)
        exe = os.environ.get("ATTNSWEEP")
        bench = os.path.join(os.path.dirname(exe or ""), "bench", "bench_group")
        if not exe or not os.access(bench, os.X_OK):
            self.skipTest("bench_group (next to $ATTNSWEEP) not built")
        p = subprocess.run([bench] + argv[1:], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = [cells(l) for l in p.stdout.split("\n") if l.startswith("|")]
        self.assertEqual(out[0], doc[0], "the columns differ")
        self.assertEqual([r[:2] for r in out[2:]], [r[:2] for r in doc[2:]], "the rows differ")
        n0, d, t1, trep, B, alpha = (float(a) for a in argv[2:8])
        ts, tr = t1 / n0 ** 2, trep / n0
        for r in out[2:]:
            n, R = float(r[0].replace(",", "")), float(r[1])
            a = R * alpha + 2 * math.log2(R) * alpha
            for t, cell in ((ts, r[5]), (ts / 5, r[6])):
                e = 1 / (1 + R * (tr * n + 8 * n * d / B + a) / (t * n * n))
                self.assertAlmostEqual(float(cell), e, delta=5e-4, msg=r)
        # by hand: t_r n = 8.22e-3, 8 n d / B = 8e-5, a(196) = 196 * 2e-6 + 2 * 7.615 * 2e-6
        # = 4.22e-4; R times their sum = 1.7095 against t_s n^2 = 50.343: E = 1 / 1.03396
        row = [r for r in out if r[:2] == ["50,000", "196"]]
        self.assertEqual(len(row), 1)
        self.assertEqual(row[0][5], "0.967")


if __name__ == "__main__":
    import optional
    optional.main()
