#!/usr/bin/python3
"""jobs/ffn_forms.py's measures and its docs/variants.md tables, on hand-built tokens: levels
of l_1^T z and the greedy line cover on point sets whose counts are known by construction, and
one cell of each of `hyperplanes` and `paper2d` recomputed by hand after replacing the final
tokens of one trial of a tiny real results file with such a set; `check` groups the two V
of the doc's ffn_paper2d spec apart. Needs the built attnsweep ($ATTNSWEEP) for the file
tests.
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "jobs"))
import ffn_forms  # noqa: E402

PAPER_V = np.array([[0.64709742, 0.81911926], [0.61210449, 0.63263484]])


def left_leading_2x2(V):
    """l_1 of a 2 x 2 V with real eigenvalues, by the formula: lambda_1 = tr/2 + sqrt(disc),
    l^T V = lambda_1 l^T holds for l = (c, lambda_1 - a) (V = [[a, b], [c, d]])."""
    (a, b), (c, d) = V
    lam = (a + d) / 2 + np.sqrt(((a - d) / 2) ** 2 + b * c)
    return np.array([c, lam - a])


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def md_rows(text):
    rows = [cells(r) for r in text.split("\n") if r.startswith("|")]
    return rows[0], rows[2:]


class MeasuresTest(unittest.TestCase):
    def test_levels(self):
        # two levels; a gap of 1e-4 of the largest value merged at 1e-3, kept at 1e-5
        self.assertEqual(ffn_forms.levels([1.0, 1.0, 3.0, 3.0, 1.0], 1e-3), 2)
        self.assertEqual(ffn_forms.levels([0.0, 1e-4, 1.0], 1e-3), 2)
        self.assertEqual(ffn_forms.levels([0.0, 1e-4, 1.0], 1e-5), 3)
        self.assertEqual(ffn_forms.levels([-2.0, 0.0, 2.0, 2.0], 1e-3), 3)

    def test_lines(self):
        s = np.array([-2.0, -0.5, 1.0, 3.0])
        two = np.concatenate([np.c_[s, 0 * s], np.c_[s + 0.3, 0 * s + 1.0]])
        self.assertEqual(ffn_forms.lines(two, 1e-3), 2)  # two parallel lines
        # a cross: the lines y = x and y = -x share the origin, 4 + 4 more tokens
        t = np.array([-2.0, -1.0, 1.0, 2.5])
        cross = np.concatenate([[[0.0, 0.0]], np.c_[t, t], np.c_[t, -t]])
        self.assertEqual(ffn_forms.lines(cross, 1e-3), 2)
        # a triangle: one line through two vertices, the third alone on another
        self.assertEqual(ffn_forms.lines([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], 1e-3), 2)
        # one token off a line by 1e-2 of the diameter (5): on it at tolerance 1e-2, not 1e-3
        near = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [5.0, 0.0], [3.0, 0.04]])
        self.assertEqual(ffn_forms.lines(near, 1e-2), 1)
        self.assertEqual(ffn_forms.lines(near, 1e-3), 2)
        self.assertEqual(ffn_forms.lines([[1.0, 2.0]] * 3, 1e-3), 1)  # one point


class TablesTest(unittest.TestCase):
    def setUp(self):
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        self.exe = exe
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_spec(self, name, text):
        spec = os.path.join(self.tmp.name, name + ".yaml")
        with open(spec, "w") as fh:
            fh.write(text)
        h5 = os.path.join(self.tmp.name, name + ".h5")
        p = subprocess.run([self.exe, "run", spec, "-o", h5], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        return h5

    def script(self, *args):
        p = subprocess.run([sys.executable, os.path.join(SRC, "jobs", "ffn_forms.py")] +
                           list(args), capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        return p.stdout

    def replace_final(self, h5, pick, build):
        """Final tokens of the trial(s) pick(fields) selects <- build(trial's bulk)."""
        import h5py
        with h5py.File(h5, "r+") as f:
            tr = f["/trials"][...]
            lab = {k: {v: n for n, v in h5py.check_enum_dtype(tr.dtype[k]).items()}
                   for k in ("ffn", "vfamily", "case_name")}
            hit = 0
            for i, r in enumerate(tr):
                if not pick({k: lab[k][r[k]] for k in lab} | {"T": float(r["t_final"])}):
                    continue
                n, d = int(r["n"]), int(r["d"])
                bulk = {}
                for k in ("initial_tokens", "V"):
                    if "/bulk/" + k in f:
                        o = f["/bulk/%s_offset" % k][i:i + 2]
                        bulk[k] = f["/bulk/" + k][o[0]:o[1]]
                bulk["V"] = bulk["V"].reshape(d, d)
                if "initial_tokens" in bulk:
                    bulk["initial_tokens"] = bulk["initial_tokens"].reshape(n, d)
                Z = build(bulk, n, d)
                o = f["/bulk/final_tokens_offset"][i:i + 2]
                f["/bulk/final_tokens"][o[0]:o[1]] = Z.ravel()
                hit += 1
        self.assertGreater(hit, 0)

    def test_paper2d_cell(self):
        """paper V, base, T = 5, one start of 6 tokens: the final tokens replaced by token 0 at
        its start and five more on two lines normal to l_1 (levels h and h + 2 of l_1^T z):
        2 levels and 2 lines at both tolerances, 1 token never moved."""
        with open(os.path.join(SRC, "docs", "variants.md")) as fh:
            m = re.search(r"cat >ffn_paper2d\.yaml <<'YAML'\n(.*?)\n\s*YAML\n", fh.read(), re.S)
        spec = "\n".join(l[4:] for l in m.group(1).split("\n")) + "\n"
        spec = spec.replace("replicates: 20", "replicates: 1").replace("n: 20, d: 2",
                                                                        "n: 6, d: 2")
        h5 = self.run_spec("ffn_paper2d", spec)
        l1 = left_leading_2x2(PAPER_V)
        u = np.array([-l1[1], l1[0]])  # l_1^T u = 0
        got = {}

        def build(b, n, d):
            X0 = b["initial_tokens"]
            s = [0.0, 0.7, -1.3, 0.4, 1.9, -0.6]
            h = [0, 0, 0, 2, 2, 2]
            Z = np.array([X0[0] + s[i] * u + h[i] * l1 / (l1 @ l1) for i in range(n)])
            got["ratio"] = np.max(np.linalg.norm(Z, axis=1)) / np.max(np.linalg.norm(X0, axis=1))
            return Z

        self.replace_final(h5, lambda r: r["vfamily"] == "explicit" and r["ffn"] == "none"
                           and r["T"] == 5.0, build)
        head, rows = md_rows(self.script("paper2d", h5, "--markdown"))
        row = [r for r in rows if r[:2] == ["paper V, base", "5"]]
        self.assertEqual(len(row), 1, rows)
        r = row[0]
        self.assertEqual(r[2], "2 [2] / 2 [2]")
        self.assertEqual(r[3], "1 / 1")
        self.assertEqual(r[4], "2 [2] / 2 [2]")
        self.assertEqual(r[5], "1 / 1")
        v = ffn_forms.fmt(got["ratio"])
        self.assertEqual(r[6], "%s [%s, %s]" % (v, v, v))
        self.assertEqual(r[7], "1 [1]")
        # check groups by the trial's V: paper V and Perron V apart, 5 cases x 2 T each
        head, rows = md_rows(self.script("check", h5, "--markdown", "--rerun", "0"))
        vs = [r[head.index("V")] for r in rows]
        self.assertEqual(sorted(set(vs)), ["paperV", "perron"])
        self.assertEqual((vs.count("paperV"), vs.count("perron")), (10, 10))

    def test_hyperplanes_cell(self):
        """jobs/examples/ffn.yaml's base case, one start of 6 tokens: the final tokens replaced
        by tokens on 3 levels of l_1^T z (l_1 from numpy's eig of V^T), largest entry 10:
        hyperplanes 3, on at most three 1 of 1, max_i abs(z_i) / 5 = 2."""
        with open(os.path.join(SRC, "jobs", "examples", "ffn.yaml")) as fh:
            spec = fh.read()
        spec = spec.replace("replicates: 10", "replicates: 1").replace(
            "n: 20, d: 3, T: 15", "n: 6, d: 3, T: 2")
        h5 = self.run_spec("ffn", spec)

        def build(b, n, d):
            lam, L = np.linalg.eig(b["V"].T)
            l1 = np.real(L[:, np.argmax(np.abs(lam))])
            rng = np.random.default_rng(3)
            W = rng.uniform(-1, 1, size=(n, d))
            W -= np.outer(W @ l1, l1) / (l1 @ l1)  # on l_1^T z = 0
            Z = W + np.outer([0, 1, 1, 2, 2, 2], l1) / (l1 @ l1)  # levels 0, 1, 2
            # scaled so that the largest entry is 10 (the levels stay three)
            return Z * (10.0 / np.max(np.abs(Z)))

        self.replace_final(h5, lambda r: r["case_name"] == "base", build)
        head, rows = md_rows(self.script("hyperplanes", h5, "--markdown"))
        row = [r for r in rows if r[0] == "base"]
        self.assertEqual(len(row), 1, rows)
        self.assertEqual(row[0][5:], ["3 [3]", "1/1", "2"])
        self.assertEqual(head[7], "max_i abs(z_i) / 5 med")


if __name__ == "__main__":
    import optional
    optional.main()
