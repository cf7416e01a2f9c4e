#!/usr/bin/python3
"""Tests of analysis/attnsweep_plots.py: the geometry helpers against exact answers, the
figures (PNG files that decode, with the expected size), and the figure of one trial read from
a synthetic results file with /bulk data (flat, offsets from the plan)."""

import io
import math
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import h5py

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "analysis"))
import schema  # noqa: E402
import attnsweep_plots as plots  # noqa: E402
import attnsweep_summarize as summ  # noqa: E402
import matplotlib.image as mpimg  # noqa: E402

INCLUDE = os.path.join(SRC, "include")
LABELS = schema.enum_labels_from_headers(INCLUDE)
# The paper's good-triple example (docs/theory.md section 5): eigenvalues 1.348 and -0.068.
V_PAPER = np.array([[0.64709742, 0.81911926], [0.61210449, 0.63263484]])


def is_png(path, min_w=200, min_h=150):
    with open(path, "rb") as fh:
        if fh.read(8) != b"\x89PNG\r\n\x1a\n":
            return False
    img = mpimg.imread(path)
    return img.shape[0] >= min_h and img.shape[1] >= min_w


def inside_hull_2d(p, hull_pts):
    """p inside or on the counter-clockwise polygon hull_pts."""
    m = len(hull_pts)
    for i in range(m):
        a, b = hull_pts[i], hull_pts[(i + 1) % m]
        if (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]) < -1e-12:
            return False
    return True


class GeometryTest(unittest.TestCase):
    def test_hull_2d(self):
        ang = np.linspace(0, 2 * np.pi, 9)[:-1]
        circle = np.c_[np.cos(ang), np.sin(ang)]
        rng = np.random.default_rng(1)
        inner = rng.uniform(-0.5, 0.5, (30, 2))
        pts = np.vstack([inner, circle])
        pts = np.vstack([pts, [[0.5 * (circle[0, 0] + circle[1, 0]),
                                0.5 * (circle[0, 1] + circle[1, 1])]]])  # on an edge
        h = plots.convex_hull_2d(pts)
        self.assertEqual(sorted(h), list(range(30, 38)))
        hp = pts[h]
        area = 0.5 * sum(hp[i, 0] * hp[(i + 1) % 8, 1] - hp[(i + 1) % 8, 0] * hp[i, 1]
                         for i in range(8))
        self.assertAlmostEqual(area, 8 * 0.5 * math.sin(2 * math.pi / 8), places=12)  # ccw
        # random cloud: every point inside the hull, every hull vertex extreme
        pts = rng.normal(size=(200, 2))
        h = plots.convex_hull_2d(pts)
        for p in pts:
            self.assertTrue(inside_hull_2d(p, pts[h]))
        for k in h:
            others = np.delete(pts, k, axis=0)
            hk = plots.convex_hull_2d(others)
            self.assertFalse(inside_hull_2d(pts[k], others[hk]))

    def test_hull_3d(self):
        cube = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
        rng = np.random.default_rng(2)
        pts = np.vstack([rng.uniform(0.1, 0.9, (12, 3)), cube])
        faces, verts = plots.convex_hull_3d(pts)
        self.assertEqual(verts, list(range(12, 20)))
        # each square side holds its 4 corners: all 4 of their triangles are supporting
        self.assertEqual(len(faces), 6 * 4)
        # a tetrahedron: exactly its 4 faces
        tet = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.1, 0.1, 0.1]], float)
        faces, verts = plots.convex_hull_3d(tet)
        self.assertEqual(sorted(faces), [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)])

    def test_left_eigenvector(self):
        tr, det = np.trace(V_PAPER), np.linalg.det(V_PAPER)
        lam_exact = 0.5 * (tr + math.sqrt(tr * tr - 4 * det))
        lam, l1, phi = plots.left_leading_eigvec(V_PAPER)
        self.assertAlmostEqual(lam, lam_exact, places=12)
        self.assertAlmostEqual(lam, 1.348, places=3)
        np.testing.assert_allclose(V_PAPER.T @ l1, lam * l1, atol=1e-12)
        np.testing.assert_allclose(V_PAPER @ phi, lam * phi, atol=1e-12)
        self.assertAlmostEqual(float(l1 @ phi), 1.0, places=12)
        self.assertAlmostEqual(float(np.linalg.norm(phi)), 1.0, places=12)
        # left and right differ for this non-symmetric V (docs/theory.md sect. 2.5: 8 to 29 degrees)
        c = abs(l1 @ phi) / np.linalg.norm(l1)
        ang = math.degrees(math.acos(min(1.0, c)))
        self.assertTrue(1.0 < ang < 45.0, ang)

    def test_leaders(self):
        P = np.full((4, 4), 0.25)
        P[0] = [0, 0, 1, 0]
        P[1] = [0.05, 0, 0.95, 0]
        P[3] = [0.92, 0, 0.08, 0]
        self.assertEqual(plots.leaders_from_p(P), [0, 2])


def dynamics(V, X0, T=4.0, dt=0.01, snaps=9):
    """A small forward-Euler run of the rescaled dynamics with M = I (only to get realistic
    trajectories for the figures; its accuracy is irrelevant here)."""
    Z = X0.copy()
    out = [Z.copy()]
    steps = int(round(T / dt))
    E = np.eye(len(V))
    for k in range(1, steps + 1):
        t = k * dt
        w, R = np.linalg.eig(V)
        E = np.real(R @ np.diag(np.exp(w * t)) @ np.linalg.inv(R))
        Y = Z @ E.T
        S = Y @ Y.T
        S -= S.max(axis=1, keepdims=True)
        P = np.exp(S)
        P /= P.sum(axis=1, keepdims=True)
        Z = Z + dt * (P @ Z - Z) @ V.T
        if k % (steps // (snaps - 1)) == 0:
            out.append(Z.copy())
    return np.array(out), P


class FigureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_end_state_2d_good(self):
        rng = np.random.default_rng(4)
        X0 = rng.uniform(-1, 1, (12, 2))
        traj, P = dynamics(V_PAPER, X0, T=3.0)
        lam, l1, _ = plots.left_leading_eigvec(V_PAPER)
        c = traj[-1] @ l1
        png = os.path.join(self.tmp.name, "good2d.png")
        plots.plot_end_state(png, traj[-1], P=P, trajectory=traj, initial=X0,
                             leaders=plots.leaders_from_p(P), normal=l1,
                             levels=[c.min(), 0.0, c.max()], title="good triple, d = 2")
        self.assertTrue(is_png(png, min_w=600))

    def test_end_state_3d_identity(self):
        rng = np.random.default_rng(5)
        X0 = rng.uniform(-1, 1, (10, 3))
        traj, P = dynamics(np.eye(3), X0, T=2.0)
        png = os.path.join(self.tmp.name, "id3d.png")
        plots.plot_end_state(png, traj[-1], trajectory=traj, leaders=[0, 1],
                             normal=np.array([0.2, 0.3, 1.0]), levels=[-0.5, 0.0, 0.5])
        self.assertTrue(is_png(png))

    def test_p_heatmap_and_bad_dimension(self):
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        im = plots.plot_p(ax, np.eye(5))
        self.assertEqual(im.get_array().shape, (5, 5))
        png = os.path.join(self.tmp.name, "p.png")
        fig.savefig(png)
        plt.close(fig)
        self.assertTrue(is_png(png))
        fig, ax = plt.subplots()
        with self.assertRaises(ValueError):
            plots.plot_tokens(ax, np.zeros((5, 4)))
        plt.close(fig)

    def test_phase_png(self):
        phase = {"param": "eps", "series": {}}
        for g, slope in (("theorem=good", 1.0), ("theorem=identity", 0.5)):
            x = [0.001, 0.01, 0.1, 1.0]
            ser = {"x": x, "label": [str(v) for v in x], "judged": [10] * 4}
            for v in summ.JUDGED:
                f = np.clip(np.array([0.9, 0.7, 0.4, 0.1]) * slope, 0, 1)
                p, lo, hi = summ.wilson(np.round(f * 10), np.full(4, 10))
                ser[v] = (list(p), list(lo), list(hi))
            phase["series"][g] = ser
        png = os.path.join(self.tmp.name, "phase.png")
        plots.plot_phase(phase, png)
        self.assertTrue(is_png(png, min_w=700))


class TrialFileTest(unittest.TestCase):
    """A results file with bulk data for 3 trials of different shapes; trial 1 is a good
    triple in d = 2 with every bulk array stored."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        dt = schema.dtype_from_headers(INCLUDE)
        shapes = [(5, 3), (12, 2), (4, 8)]  # (n, d) per trial
        a = np.zeros(4, dtype=dt)
        for f in dt.names:
            if dt[f].kind == "f":
                a[f] = np.nan
        rng = np.random.default_rng(6)
        final, init, pmat, vmat, snaps = [], [], [], [], []
        cls.arrays = []
        for i, (n, d) in enumerate(shapes):
            a["trial"][i], a["n"][i], a["d"][i] = i, n, d
            a["verdict"][i] = LABELS["verdict"].index("consistent")
            a["outcome"][i] = LABELS["outcome"].index("reached_T")
            a["observed"][i] = LABELS["observed"].index("hyperplanes")
            V = V_PAPER if d == 2 else np.eye(d)
            X0 = rng.uniform(-1, 1, (n, d))
            traj, P = dynamics(V, X0, T=2.0, snaps=5)
            if d == 2:
                a["theorem"][i] = LABELS["theorem"].index("good")
                _, l1, _ = plots.left_leading_eigvec(V)
                c = traj[-1] @ l1
                a["level_a"][i], a["level_b"][i] = c.min(), c.max()
            final.append(traj[-1].ravel())
            init.append(X0.ravel())
            pmat.append(P.ravel())
            vmat.append(V.ravel())
            snaps.append(traj.ravel())
            cls.arrays.append({"final_tokens": traj[-1], "initial_tokens": X0,
                               "final_attention": P, "V": V, "snapshots": traj})
        a["trial"][3], a["n"][3], a["d"][3] = 3, 6, 2
        # trial 3: not run yet (pending), nothing stored
        cls.path = os.path.join(cls.tmp.name, "bulk.h5")
        with h5py.File(cls.path, "w") as f:
            f.create_dataset("trials", data=a)
            g = f.create_group("bulk")
            for name, parts in (("final_tokens", final), ("initial_tokens", init),
                                ("final_attention", pmat), ("V", vmat),
                                ("snapshots", snaps)):
                parts = parts + [np.zeros(0)]
                g[name] = np.concatenate(parts)
                g[name + "_offset"] = np.concatenate(
                    [[0], np.cumsum([len(p) for p in parts])]).astype(np.uint64)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_load_bulk_offsets(self):
        with schema.open_results(self.path) as rf:
            for i in range(3):
                got = rf.load_bulk(i)
                self.assertEqual(sorted(got), sorted(self.arrays[i]))
                for k, v in self.arrays[i].items():
                    np.testing.assert_array_equal(got[k], v, err_msg="trial %d %s" % (i, k))
            self.assertEqual(rf.load_bulk(3), {})

    def test_plot_trial(self):
        png = os.path.join(self.tmp.name, "trial1.png")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = summ.main([self.path, "--plot", "1", "--png", png])
        self.assertEqual(rc, 0, err.getvalue())
        self.assertTrue(is_png(png, min_w=600))
        png3 = os.path.join(self.tmp.name, "trial0.png")
        with schema.open_results(self.path) as rf:
            plots.plot_trial_file(rf, 0, png3)
        self.assertTrue(is_png(png3))
        with redirect_stdout(out), redirect_stderr(err):
            rc = summ.main([self.path, "--plot", "2", "--png", png])
        self.assertEqual(rc, 2)
        self.assertIn("d = 8", err.getvalue())
        with redirect_stdout(out), redirect_stderr(err):
            rc = summ.main([self.path, "--plot", "7", "--png", png])
        self.assertEqual(rc, 2)
        with redirect_stdout(out), redirect_stderr(err):
            rc = summ.main([self.path, "--plot", "3", "--png", png])
        self.assertEqual(rc, 2)
        self.assertIn("not run yet", err.getvalue())
        with redirect_stdout(out), redirect_stderr(err):
            rc = summ.main([self.path, "--plot", "1"])
        self.assertEqual(rc, 2)

    def test_plot_trial_cli(self):
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        png = os.path.join(self.tmp.name, "cli.png")
        p = subprocess.run([exe, "summarize", self.path, "--plot", "1", "--png", png],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(is_png(png))


if __name__ == "__main__":
    prog = unittest.main(exit=False, verbosity=1)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
