#!/usr/bin/python3
"""The analysis as a package (issue 48, point 2): analysis/ is the installable package
`attnsweep` (analysis/pyproject.toml) with modules by concern, usable from a notebook, with
type hints on every public function; the scripts the commands run and the older module names
still work.

* every public function and method of analysis/attnsweep has type hints on every parameter and
  its return (read from the source, so a new function without them fails here; mypy checks
  them: ctest lint_python);
* no module of the package is over 800 lines;
* `from attnsweep import load_trials, to_xarray, summarize` in a fresh interpreter outside the
  tree, the package found by PYTHONPATH=analysis as a notebook would, and summarize's table
  against an independent count of the file's rows;
* `pip install -e analysis --no-build-isolation --no-index` into a temporary prefix (offline,
  Debian's setuptools): the package imports from there, outside the tree, is the tree's
  (editable) and has its template;
* the older names: attnsweep_summarize, attnsweep_frame, attnsweep_plots, attnsweep_stat,
  attnsweep_report, schema and import_weights import, and `python3 analysis/SCRIPT --help`
  runs each script.
"""

import ast
import glob
import os
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ANALYSIS = os.path.join(SRC, "analysis")
sys.path.insert(0, ANALYSIS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optional  # noqa: E402
from attnsweep import layout  # noqa: E402

PY = "/usr/bin/python3"
MODULES = sorted(glob.glob(os.path.join(ANALYSIS, "attnsweep", "*.py")))


def unannotated(path):
    """'name: what is missing' for each public function or method of a module without a type
    hint on a parameter or its return (nested functions and _private ones aside)."""
    with open(path) as fh:
        tree = ast.parse(fh.read())
    out = []

    def visit(node, prefix, public):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if public and (not n.name.startswith("_") or n.name == "__init__"):
                    args = n.args.posonlyargs + n.args.args + n.args.kwonlyargs
                    miss = [a.arg for a in args if a.annotation is None and
                            a.arg not in ("self", "cls")]
                    for va in (n.args.vararg, n.args.kwarg):
                        if va is not None and va.annotation is None:
                            miss.append(va.arg)
                    if n.returns is None:
                        miss.append("return")
                    if miss:
                        out.append("%s%s: %s" % (prefix, n.name, ", ".join(miss)))
            elif isinstance(n, ast.ClassDef):
                visit(n, prefix + n.name + ".", public and not n.name.startswith("_"))
    visit(tree, "", True)
    return out


def write_results(path, verdicts, outcomes, theorems):
    """A results file in the documented layout (the binary's), one row per verdict."""
    dt = layout.record_dtype()
    a = np.zeros(len(verdicts), dtype=dt)
    lab = {f: {l: v for l, v in h5py.check_enum_dtype(dt[f]).items()}
           for f in ("verdict", "outcome", "theorem")}
    a["trial"] = np.arange(len(a))
    for i, (v, o, t) in enumerate(zip(verdicts, outcomes, theorems)):
        a["verdict"][i], a["outcome"][i], a["theorem"][i] = (lab["verdict"][v],
                                                             lab["outcome"][o],
                                                             lab["theorem"][t])
    for f in dt.names:
        if dt[f].kind == "f":
            a[f] = np.nan
    with h5py.File(path, "w") as f:
        f.create_dataset("trials", data=a)
        f.attrs["n_trials"] = np.uint64(len(a))
        f.attrs["schema_version"] = np.uint64(4)


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "r.h5")
        cls.verdicts = ["consistent"] * 5 + ["violated"] * 2 + ["unresolved"] * 3 + \
            ["no_prediction"] * 4 + ["failed", "nonfinite", "consistent", "pending"]
        cls.outcomes = ["reached_T"] * 14 + ["failed", "nonfinite", "not_converged",
                                             "pending"]
        cls.theorems = ["identity"] * 10 + ["none"] * 4 + ["identity"] * 4
        write_results(cls.path, cls.verdicts, cls.outcomes, cls.theorems)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_type_hints_on_every_public_function(self):
        self.assertGreaterEqual(len(MODULES), 20)
        missing = {os.path.basename(p): unannotated(p) for p in MODULES}
        missing = {k: v for k, v in missing.items() if v}
        self.assertEqual(missing, {})

    def test_modules_by_concern(self):
        for p in MODULES:
            with open(p) as fh:
                n = sum(1 for _ in fh)
            self.assertLessEqual(n, 800, p)
        names = {os.path.basename(p)[:-3] for p in MODULES}
        for m in ("frame", "stats", "tables", "figures", "report", "cli", "schema", "rule",
                  "layout", "render", "pair", "robustness"):
            self.assertIn(m, names)

    def test_notebook(self):
        code = ("from attnsweep import load_trials, to_xarray, summarize\n"
                "import sys\n"
                "df = load_trials(sys.argv[1])\n"
                "t = summarize(sys.argv[1])\n"
                "r = t[t.theorem == 'identity'].iloc[0]\n"
                "print(len(df), int(r.trials), int(r.judged), int(r.consistent),"
                " int(r.not_converged), repr(float(r.consistent_frac)))\n")
        env = dict(os.environ, PYTHONPATH=ANALYSIS)
        res = subprocess.run([PY, "-c", code, self.path], capture_output=True, text=True,
                             cwd=self.tmp.name, env=env)
        if res.returncode and "pandas" in res.stderr and not optional.have("pandas"):
            self.skipTest(optional.missing("pandas"))
        self.assertEqual(res.returncode, 0, res.stderr)
        n, trials, judged, cons, nc, frac = res.stdout.split()
        # the rule, counted here: identity rows are 10 judged (5 + 2 + 3), failed, nonfinite,
        # a not_converged consistent one and a pending one
        ident = [i for i, t in enumerate(self.theorems) if t == "identity"]
        jud = [i for i in ident if self.verdicts[i] in ("consistent", "violated", "unresolved")
               and self.outcomes[i] not in ("not_converged", "pending")]
        con = [i for i in jud if self.verdicts[i] == "consistent"]
        self.assertEqual(int(n), len(self.verdicts))
        self.assertEqual(int(trials), len(ident))
        self.assertEqual((int(judged), int(cons), int(nc)), (len(jud), len(con), 1))
        self.assertAlmostEqual(float(frac), len(con) / len(jud), places=15)

    def test_pip_install_editable(self):
        prefix = os.path.join(self.tmp.name, "prefix")
        res = subprocess.run([PY, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                              "--no-deps", "--prefix", prefix, "-e", ANALYSIS],
                             capture_output=True, text=True)
        if res.returncode and "No module named pip" in res.stderr:
            self.skipTest("pip is not installed (Debian: python3-pip)")
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        site = glob.glob(os.path.join(prefix, "**", "site-packages", "__editable__*attnsweep*"),
                         recursive=True) + \
            glob.glob(os.path.join(prefix, "**", "dist-packages", "__editable__*attnsweep*"),
                      recursive=True)
        self.assertTrue(site, "no editable hook under %s" % prefix)
        sitedir = os.path.dirname(site[0])
        code = ("import site, sys; site.addsitedir(sys.argv[1]); import attnsweep, os; "
                "from attnsweep import load_trials, to_xarray, summarize; "
                "print(attnsweep.__file__); "
                "print(os.path.exists(os.path.join(os.path.dirname(attnsweep.__file__), "
                "'templates', 'report.html.j2')))")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        res = subprocess.run([PY, "-c", code, sitedir], capture_output=True, text=True,
                             cwd=self.tmp.name, env=env)
        self.assertEqual(res.returncode, 0, res.stderr)
        where, template = res.stdout.split()
        self.assertEqual(os.path.realpath(where),
                         os.path.realpath(os.path.join(ANALYSIS, "attnsweep", "__init__.py")))
        self.assertEqual(template, "True")
        for leftover in ("build", "attnsweep.egg-info"):  # an editable install leaves none
            self.assertFalse(os.path.exists(os.path.join(ANALYSIS, leftover)), leftover)

    def test_older_names(self):
        import attnsweep.figures
        import attnsweep.frame
        import attnsweep.schema
        import attnsweep.stats
        import attnsweep_plots
        import attnsweep_stat
        import schema
        self.assertIs(schema, attnsweep.schema)
        self.assertIs(attnsweep_plots, attnsweep.figures)
        self.assertIs(attnsweep_stat, attnsweep.stats)
        import attnsweep_frame
        self.assertIs(attnsweep_frame, attnsweep.frame)
        import attnsweep_summarize as summ
        for name in summ.__all__:
            self.assertTrue(hasattr(summ, name), name)
        env = dict(os.environ, PYTHONPATH="")
        for script in ("attnsweep_summarize.py", "attnsweep_report.py", "import_weights.py"):
            res = subprocess.run([PY, os.path.join(ANALYSIS, script), "--help"],
                                 capture_output=True, text=True, cwd=self.tmp.name, env=env)
            self.assertEqual(res.returncode, 0, script + res.stderr)
            self.assertIn("usage", res.stdout.lower() + res.stderr.lower(), script)


if __name__ == "__main__":
    optional.main(verbosity=1)
