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
from attnsweep import layout  # noqa: E402
import attnsweep_plots as plots  # noqa: E402
import attnsweep_summarize as summ  # noqa: E402
import matplotlib.image as mpimg  # noqa: E402

INCLUDE = os.path.join(SRC, "include")
LABELS = layout.enum_labels()
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


def figure_dir(tmp):
    """Where the tests leave every figure they draw, for a person to look at:
    $AS_BUILD_DIR/figures under ctest, else the test's temporary directory."""
    b = os.environ.get("AS_BUILD_DIR")
    if not b:
        return tmp
    d = os.path.join(b, "figures")
    os.makedirs(d, exist_ok=True)
    return d


def lines_by_gid(ax, gid):
    return [l for l in ax.get_lines() if l.get_gid() == gid]


def scatter_by_label(ax, label):
    hits = [c for c in ax.collections if c.get_label() == label]
    return hits[0] if hits else None


def check_equal_aspect(test, ax):
    """One data unit is as long on every axis (2-D: aspect 1; 3-D: limits proportional to the
    box after drawing)."""
    ax.figure.canvas.draw()
    if hasattr(ax, "get_zlim"):
        test.assertEqual(ax.get_aspect(), "equal")
        spans = [np.ptp(ax.get_xlim()), np.ptp(ax.get_ylim()), np.ptp(ax.get_zlim())]
        ratio = np.array(spans) / np.array(ax.get_box_aspect())
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-6)
    else:
        test.assertEqual(ax.get_aspect(), 1.0)


def check_integer_ticks(test, ax):
    ax.figure.canvas.draw()
    for ticks, lim in ((ax.get_xticks(), ax.get_xlim()), (ax.get_yticks(), ax.get_ylim())):
        shown = [t for t in ticks if min(lim) <= t <= max(lim)]
        test.assertGreater(len(shown), 1)
        test.assertTrue(all(float(t).is_integer() for t in shown), shown)
    labels = [t.get_text().replace("\u2212", "-") for t in ax.get_xticklabels()]
    test.assertTrue(all(l == "" or l.lstrip("-").isdigit() for l in labels), labels)


class ProjectorTest(unittest.TestCase):
    def test_oblique_projector(self):
        # V = S D S^-1 with D = diag(1, 1, -1/2): F = span(S e_1, S e_2), G = span(S e_3)
        S = np.array([[1.0, 0.3, 0.5], [0.0, 1.0, 0.8], [0.2, 0.0, 1.0]])
        Si = np.linalg.inv(S)
        V = S @ np.diag([1.0, 1.0, -0.5]) @ Si
        proj = plots.spectral_projector(V, 2)
        exact = S @ np.diag([1.0, 1.0, 0.0]) @ Si
        np.testing.assert_allclose(proj["Pi"], exact, atol=1e-12)
        np.testing.assert_allclose(proj["Pi"] @ proj["Pi"], proj["Pi"], atol=1e-12)
        np.testing.assert_allclose(proj["B"].T @ proj["B"], np.eye(2), atol=1e-12)
        np.testing.assert_allclose(proj["B"] @ proj["B"].T @ exact, exact, atol=1e-12)  # range
        # pi_F z from x at time t: pi_F e^{-tV} x, e^{-tV} = S diag(e^{-t D}) S^-1
        rng = np.random.default_rng(8)
        X = rng.normal(size=(6, 3))
        t = 1.7
        E = S @ np.diag(np.exp(-t * np.array([1.0, 1.0, -0.5]))) @ Si
        want = (X @ E.T) @ exact.T @ proj["B"]
        np.testing.assert_allclose(plots.observable_coords(proj, X, t), want, atol=1e-12)
        np.testing.assert_allclose(plots.observable_coords(proj, X), X @ exact.T @ proj["B"],
                                   atol=1e-12)
        # F spanned by axes: the basis is e_1, e_2
        proj = plots.spectral_projector(np.diag([1.0, 1.0, -0.5]), 2)
        np.testing.assert_allclose(proj["B"], np.eye(3)[:, :2], atol=1e-12)
        with self.assertRaises(ValueError):  # a complex pair cannot be split
            plots.spectral_projector(np.array([[0.0, -1.0, 0], [1.0, 0.0, 0], [0, 0, -1.0]]), 1)

    def test_path_through(self):
        a, b, c = np.zeros((2, 2)), np.ones((2, 2)), 2 * np.ones((2, 2))
        p = plots.path_through(a, np.array([b, c]), c)
        self.assertEqual(p.shape, (3, 2, 2))  # the final state equal to the last snapshot
        np.testing.assert_array_equal(p[0], a)
        self.assertIsNone(plots.path_through(None, None, a))


class FigureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = figure_dir(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def png(self, name):
        return os.path.join(self.out, "plots_" + name + ".png")

    def test_end_state_2d_good(self):
        import matplotlib.pyplot as plt
        rng = np.random.default_rng(4)
        X0 = rng.uniform(-1, 1, (12, 2))
        traj, P = dynamics(V_PAPER, X0, T=3.0)
        lam, l1, _ = plots.left_leading_eigvec(V_PAPER)
        c = traj[-1] @ l1
        fig, ax = plt.subplots()
        plots.plot_tokens(ax, traj[-1], trajectory=traj[1:], initial=X0,
                          leaders=plots.leaders_from_p(P), normal=l1,
                          levels=[c.min(), 0.0, c.max()], title="good triple, d = 2")
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), ("$z_1$", "$z_2$"))
        check_equal_aspect(self, ax)
        paths = lines_by_gid(ax, plots.TRAJECTORY)
        self.assertEqual(len(paths), 12)
        for i, line in enumerate(paths):  # each path starts at its initial token
            xy = line.get_xydata()
            np.testing.assert_array_equal(xy[0], X0[i])
            np.testing.assert_array_equal(xy[-1], traj[-1][i])
            self.assertEqual(len(xy), len(traj))  # initial + snapshots (the last is final)
        plots.save_figure(fig, self.png("tokens_2d_good"))
        png = self.png("end_state_2d_good")
        plots.plot_end_state(png, traj[-1], P=P, trajectory=traj[1:], initial=X0,
                             leaders=plots.leaders_from_p(P), normal=l1,
                             levels=[c.min(), 0.0, c.max()], title="good triple, d = 2")
        self.assertTrue(is_png(png, min_w=600))

    def test_end_state_3d_identity(self):
        import matplotlib.pyplot as plt
        rng = np.random.default_rng(5)
        X0 = rng.uniform(-1, 1, (10, 3))
        traj, P = dynamics(np.eye(3), X0, T=2.0)
        fig = plt.figure()
        ax = fig.add_subplot(projection="3d")
        plots.plot_tokens(ax, traj[-1], trajectory=traj[1:], initial=X0, leaders=[0, 1],
                          var="x", normal=np.array([0.2, 0.3, 1.0]), levels=[-0.5, 0.0, 0.5])
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()),
                         ("$x_1$", "$x_2$", "$x_3$"))
        check_equal_aspect(self, ax)
        paths = lines_by_gid(ax, plots.TRAJECTORY)
        self.assertEqual(len(paths), 10)
        for i, line in enumerate(paths):
            xs, ys, zs = line.get_data_3d()
            np.testing.assert_array_equal([xs[0], ys[0], zs[0]], X0[i])
        plots.save_figure(fig, self.png("tokens_3d_identity"))
        self.assertTrue(is_png(self.png("tokens_3d_identity")))

    def test_p_heatmap_and_bad_dimension(self):
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        im = plots.plot_p(ax, np.eye(5))
        self.assertEqual(im.get_array().shape, (5, 5))
        check_integer_ticks(self, ax)
        self.assertEqual(ax.get_xlabel(), "key token $j$")
        png = self.png("p_heatmap")
        plots.save_figure(fig, png)
        self.assertTrue(is_png(png))
        fig, ax = plt.subplots()
        with self.assertRaises(ValueError):
            plots.plot_tokens(ax, np.zeros((5, 4)))
        plt.close(fig)

    def test_phase_png(self):
        phase = {"param": "eps", "xlabel": "perturbation size eps", "where": "d == 2",
                 "series": {}}
        for g, slope in (("theorem = good", 1.0), ("theorem = identity", 0.5)):
            x = [0.001, 0.01, 0.1, 1.0]
            ser = {"x": x, "label": [str(v) for v in x], "judged": [10, 11, 12, 13]}
            for v in summ.JUDGED:
                f = np.clip(np.array([0.9, 0.7, 0.4, 0.1]) * slope, 0, 1)
                p, lo, hi = summ.wilson(np.round(f * 10), np.full(4, 10))
                ser[v] = (list(p), list(lo), list(hi))
            phase["series"][g] = ser
        png = self.png("phase")
        fig = plots.plot_phase(phase, png)
        self.assertTrue(is_png(png, min_w=700))
        ax = fig.axes[0]
        # the quantity and its symbol; one panel per verdict, one line per group
        self.assertEqual(ax.get_xlabel(), "perturbation $\\varepsilon$")
        self.assertEqual([a.get_title() for a in fig.axes if a.get_title()],
                         list(summ.JUDGED[:1]) + ["unresolved", "violated"])
        self.assertEqual(len(ax.containers), 2)  # the two groups' error bars
        labels = [t.get_text() for a in fig.axes if a.get_legend()
                  for t in a.get_legend().get_texts()]
        self.assertEqual(labels, ["theorem = good", "theorem = identity"])
        self.assertIn("d == 2", fig._suptitle.get_text())
        self.assertNotIn("all trials", [a.get_title() for a in fig.axes])


    def test_phase_categorical_and_empty(self):
        import warnings
        labels = ["identity", "good", "complex"]
        ser = {"x": [1, 3, 7], "label": labels, "judged": [40, 12, 0]}
        for v in summ.JUDGED:
            p, lo, hi = summ.wilson(np.array([10, 3, 0]), np.array([40, 12, 0]))
            ser[v] = (list(p), list(lo), list(hi))
        phase = {"param": "theorem", "xlabel": "theorem whose hypotheses hold",
                 "categorical": True, "series": {"": ser}}
        fig = plots.plot_phase(phase, self.png("phase_categorical"))
        ax = fig.axes[0]
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], labels)
        lo, hi = ax.get_xlim()
        self.assertTrue(lo < 0 and hi > 2, (lo, hi))  # the last category (n=0) is inside
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "No artists with labels" warning
            fig = plots.plot_phase({"param": "eps", "where": "d == 7", "series": {}},
                                   self.png("phase_empty"))
        self.assertIn("no trials selected", [t.get_text() for t in fig.axes[0].texts])


class TrialFileTest(unittest.TestCase):
    """A results file with bulk data for trials of several kinds (the figure of each is checked
    and left in the figure directory):
      0: d = 3, V = I            1: good triple, d = 2      2: d = 8 (cannot be drawn)
      3: pending, nothing stored 4: d = 1                   5: paranormal, oblique V, d = 3
      6: paranormal without V    7: V = I in the x variables, d = 2
    Snapshots exclude t = 0 (as the C writer stores them) at the times of /bulk/snapshots."""

    T, SNAPS = 2.0, 5

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = figure_dir(cls.tmp.name)
        dt = layout.record_dtype(labels={"case_name": ["c%d" % k for k in range(64)]})
        S = np.array([[1.0, 0.3, 0.5], [0.0, 1.0, 0.8], [0.2, 0.0, 1.0]])
        cls.S = S
        V_obl = S @ np.diag([1.0, 1.0, -0.5]) @ np.linalg.inv(S)
        kinds = [(5, 3, np.eye(3), "identity"), (12, 2, V_PAPER, "good"),
                 (4, 8, np.eye(8), "identity"), None, (6, 1, np.eye(1), "d1"),
                 (12, 3, V_obl, "paranormal"), (12, 3, V_obl, "paranormal"),
                 (8, 2, np.eye(2), "identity")]
        a = np.zeros(len(kinds), dtype=dt)
        for f in dt.names:
            if dt[f].kind == "f":
                a[f] = np.nan
        rng = np.random.default_rng(6)
        bulk = {k: [] for k in ("final_tokens", "initial_tokens", "final_attention", "V",
                                "snapshots")}
        cls.arrays = []
        for i, kind in enumerate(kinds):
            a["trial"][i] = i
            if kind is None:  # pending: nothing stored
                a["n"][i], a["d"][i] = 6, 2
                for k in bulk:
                    bulk[k].append(np.zeros(0))
                cls.arrays.append({})
                continue
            n, d, V, theorem = kind
            a["n"][i], a["d"][i], a["case_name"][i] = n, d, i
            a["verdict"][i] = LABELS["verdict"].index("consistent")
            a["outcome"][i] = LABELS["outcome"].index("reached_T")
            a["theorem"][i] = LABELS["theorem"].index(theorem)
            a["t_final"][i] = cls.T
            a["vars"][i] = LABELS["vars"].index("x" if i == 7 else "z")
            X0 = rng.uniform(-1, 1, (n, d))
            traj, P = dynamics(V, X0, T=cls.T, snaps=cls.SNAPS)
            if i == 7:  # the x variables: x = e^{tV} z = e^{t} z for V = I
                times = np.linspace(0, cls.T, cls.SNAPS)
                traj = traj * np.exp(times)[:, None, None]
            if theorem == "good":
                _, l1, _ = plots.left_leading_eigvec(V)
                c = traj[-1] @ l1
                a["level_a"][i], a["level_b"][i] = c.min(), c.max()
            if theorem == "paranormal":
                a["dim_f"][i] = 2
            arr = {"final_tokens": traj[-1], "initial_tokens": X0, "final_attention": P,
                   "V": V, "snapshots": traj[1:]}
            if i == 6:
                del arr["V"]
            for k in bulk:
                bulk[k].append(arr[k].ravel() if k in arr else np.zeros(0))
            cls.arrays.append(arr)
        cls.path = os.path.join(cls.tmp.name, "bulk.h5")
        with h5py.File(cls.path, "w") as f:
            f.create_dataset("trials", data=a)
            g = f.create_group("bulk")
            for name, parts in bulk.items():
                g[name] = np.concatenate(parts)
                g[name + "_offset"] = np.concatenate(
                    [[0], np.cumsum([len(p) for p in parts])]).astype(np.uint64)
            g["snapshots"].attrs["times"] = np.linspace(0, cls.T, cls.SNAPS)[1:]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def figure(self, trial):
        with schema.open_results(self.path) as rf:
            return plots.trial_figure(rf, trial)

    def save(self, fig, name):
        png = os.path.join(self.out, "plots_trial_%s.png" % name)
        plots.save_figure(fig, png)
        self.assertTrue(is_png(png))

    def test_load_bulk_offsets(self):
        with schema.open_results(self.path) as rf:
            for i, want in enumerate(self.arrays):
                got = rf.load_bulk(i)
                self.assertEqual(sorted(got), sorted(want))
                for k, v in want.items():
                    np.testing.assert_array_equal(got[k], v, err_msg="trial %d %s" % (i, k))

    def check_tokens_panel(self, ax, trial, names):
        arr = self.arrays[trial]
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), names[:2])
        check_equal_aspect(self, ax)
        paths = lines_by_gid(ax, plots.TRAJECTORY)
        self.assertEqual(len(paths), len(arr["initial_tokens"]))
        for i, line in enumerate(paths):
            data = line.get_data_3d() if hasattr(ax, "get_zlim") else line.get_data()
            start = [c[0] for c in data]
            np.testing.assert_allclose(start, arr["initial_tokens"][i], rtol=0, atol=0)

    def test_good_2d(self):
        fig = self.figure(1)
        ax, axp = fig.axes[0], fig.axes[1]
        self.check_tokens_panel(ax, 1, ("$z_1$", "$z_2$"))
        check_integer_ticks(self, axp)
        self.assertIn("theorem good", fig._suptitle.get_text())
        self.assertEqual(len([l for l in ax.get_lines() if l.get_linestyle() == "--"]), 3)
        self.save(fig, "good_2d")

    def test_identity_3d(self):
        fig = self.figure(0)
        self.check_tokens_panel(fig.axes[0], 0, ("$z_1$", "$z_2$"))
        self.assertEqual(fig.axes[0].get_zlabel(), "$z_3$")
        self.save(fig, "identity_3d")

    def test_x_variables(self):
        fig = self.figure(7)
        self.check_tokens_panel(fig.axes[0], 7, ("$x_1$", "$x_2$"))
        self.save(fig, "identity_x")

    def test_d1_in_time(self):
        fig = self.figure(4)
        ax = fig.axes[0]
        arr = self.arrays[4]
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), ("time $t$", "$z$"))
        paths = lines_by_gid(ax, plots.TRAJECTORY)
        self.assertEqual(len(paths), 6)
        times = np.linspace(0, self.T, self.SNAPS)
        for i, line in enumerate(paths):
            t, z = line.get_data()
            np.testing.assert_allclose(t, times, atol=1e-12)
            self.assertEqual(z[0], arr["initial_tokens"][i, 0])
            np.testing.assert_array_equal(z[1:], arr["snapshots"][:, i, 0])
        check_integer_ticks(self, fig.axes[1])
        self.save(fig, "d1")

    def test_paranormal_observable(self):
        # the panel shows pi_F z in an orthonormal basis of F: its pairwise distances are those
        # of pi_F z computed from the exact projector S diag(1, 1, 0) S^-1
        fig = self.figure(5)
        ax = fig.axes[0]
        arr = self.arrays[5]
        exact = self.S @ np.diag([1.0, 1.0, 0.0]) @ np.linalg.inv(self.S)
        self.assertFalse(hasattr(ax, "get_zlim"))  # a 2-D panel: F has dimension 2
        self.assertIn("pi_F z", ax.get_xlabel())
        check_equal_aspect(self, ax)

        def dists(A):
            return np.linalg.norm(A[:, None, :] - A[None, :, :], axis=2)
        final = scatter_by_label(ax, "final tokens").get_offsets()
        np.testing.assert_allclose(dists(np.asarray(final)),
                                   dists(arr["final_tokens"] @ exact.T), atol=1e-9)
        init = scatter_by_label(ax, "initial tokens").get_offsets()
        np.testing.assert_allclose(dists(np.asarray(init)),
                                   dists(arr["initial_tokens"] @ exact.T), atol=1e-9)
        for i, line in enumerate(lines_by_gid(ax, plots.TRAJECTORY)):  # paths from the start
            np.testing.assert_allclose(line.get_xydata()[0], init[i], atol=0)
        self.save(fig, "paranormal_pi_F")

    def test_paranormal_without_v_says_so(self):
        fig = self.figure(6)
        notes = [t.get_text() for t in fig.texts]
        self.assertTrue(any("V not stored" in t for t in notes), notes)
        self.assertEqual(fig.axes[0].get_zlabel(), "$z_3$")
        self.save(fig, "paranormal_no_V")

    def test_plot_trial_command(self):
        png = os.path.join(self.out, "plots_cmd_trial1.png")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = summ.main([self.path, "--plot", "1", "--png", png])
        self.assertEqual(rc, 0, err.getvalue())
        self.assertTrue(is_png(png, min_w=600))
        for trial, needle in ((2, "d = 8"), (7 + 5, "not in"), (3, "not run yet")):
            err = io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                rc = summ.main([self.path, "--plot", str(trial), "--png", png])
            self.assertEqual(rc, 2, err.getvalue())
            self.assertIn(needle, err.getvalue())
        with redirect_stdout(out), redirect_stderr(err):
            rc = summ.main([self.path, "--plot", "1"])
        self.assertEqual(rc, 2)

    def test_plot_trial_cli(self):
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        png = os.path.join(self.out, "plots_cli_trial5.png")
        p = subprocess.run([exe, "summarize", self.path, "--plot", "5", "--png", png],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(is_png(png))


REAL_SPEC = """\
name: figures
seed: 11
replicates: 1
output: {initial: true, final: true, attention: true, matrices: true,
         snapshots: [0.5, 1, 2, 4, 8]}
defaults: {n: 12, T: 8, dt: 0.1, init: {kind: box, scale: 5}}
sweep:
  concat:
    - {case: identity, vfamily: identity, mfamily: identity, d: [2, 3]}
    - {case: paper_matrix, mfamily: identity,
       V: [[0.64709742, 0.81911926], [0.61210449, 0.63263484]]}
    - {case: paper_diag, mfamily: identity, V: [[1, 0, 0], [0, 1, 0], [0, 0, -0.5]]}
    - {case: oblique, vfamily: paranormal, v_lambda: 1, v_dim_f: 2, v_radius: 0.5,
       v_oblique: true, mfamily: identity, d: 3}
    - {case: d1, vfamily: scalar, mfamily: scalar, d: 1, v_scale: 1, m_scale: 1}
    - {case: x_variables, vfamily: identity, mfamily: identity, d: 2, vars: x}
"""


class RealRunTest(unittest.TestCase):
    """The figure of every trial of a small sweep run by the built attnsweep (the layout the C
    writer produces: snapshot times from the stored spec, snapshots without t = 0)."""

    def test_every_trial(self):
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        spec = os.path.join(tmp.name, "figures.yaml")
        with open(spec, "w") as fh:
            fh.write(REAL_SPEC)
        out = os.path.join(tmp.name, "figures.h5")
        p = subprocess.run([exe, "run", spec, "-o", out, "-q"], capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:  # -q may not exist in this build: run without it
            p = subprocess.run([exe, "run", spec, "-o", out], capture_output=True, text=True,
                               timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        dest = figure_dir(tmp.name)
        with h5py.File(out, "r") as f:  # the C writer stores the times (not only the spec)
            np.testing.assert_array_equal(f["bulk/snapshots"].attrs["times"],
                                          [0.5, 1, 2, 4, 8])
        with schema.open_results(out) as rf:
            self.assertIsNotNone(rf.snapshot_times())
            cols = rf.read(["d", "theorem", "vars"])
            seen = set()
            for trial in range(rf.n_rows):
                fig = plots.trial_figure(rf, trial)
                ax = fig.axes[0]
                bulk = rf.load_bulk(trial)
                thm = rf.label("theorem", cols["theorem"][trial])
                var = rf.label("vars", cols["vars"][trial])
                seen.add(thm)
                paths = lines_by_gid(ax, plots.TRAJECTORY)
                self.assertEqual(len(paths), len(bulk["initial_tokens"]), trial)
                if cols["d"][trial] == 1:
                    self.assertEqual(ax.get_xlabel(), "time $t$")
                    for i, line in enumerate(paths):
                        t, z = line.get_data()
                        self.assertEqual((t[0], z[0]), (0.0, bulk["initial_tokens"][i, 0]))
                        self.assertEqual(list(t[1:-1]), rf.snapshot_times()[:len(t) - 2])
                elif thm == "paranormal":
                    self.assertIn("pi_F z", ax.get_xlabel())
                    check_equal_aspect(self, ax)
                else:
                    self.assertEqual(ax.get_xlabel(), "$%s_1$" % var)
                    check_equal_aspect(self, ax)
                    for i, line in enumerate(paths):
                        data = line.get_data_3d() if hasattr(ax, "get_zlim") else \
                            line.get_data()
                        np.testing.assert_array_equal([c[0] for c in data],
                                                      bulk["initial_tokens"][i])
                check_integer_ticks(self, [a for a in fig.axes  # the heat map of P
                                           if a.get_title() == "final attention matrix $P$"][0])
                png = os.path.join(dest, "plots_run_trial%d_%s.png" % (trial, thm))
                plots.save_figure(fig, png)
                self.assertTrue(is_png(png))
            self.assertTrue({"identity", "good", "paranormal", "d1"} <= seen, seen)


D1_SPEC = """\
name: d1_small
seed: 5
replicates: 1
output: {attention: true}
sweep: {vfamily: scalar, mfamily: scalar, d: 1, v_scale: [0.5, 1], n: 8, T: 3, dt: 0.1,
        init: {kind: box, scale: 5}}
"""


class ReproduceSaveTest(unittest.TestCase):
    """`attnsweep reproduce OUT.h5 TRIAL --save T.h5` regenerates the bulk data of a trial whose
    sweep stored only P, bit for bit (its P and its record equal the stored ones), so the
    trial can be drawn (the d = 1 figure: z(t) and the final P)."""

    def test_save_and_plot(self):
        exe = os.environ.get("ATTNSWEEP")
        if not exe or not os.access(exe, os.X_OK):
            self.skipTest("ATTNSWEEP (the built executable) not given")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        spec = os.path.join(tmp.name, "d1.yaml")
        with open(spec, "w") as fh:
            fh.write(D1_SPEC)
        out = os.path.join(tmp.name, "d1.h5")
        p = subprocess.run([exe, "run", spec, "-o", out], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        png = os.path.join(tmp.name, "x.png")
        with schema.open_results(out) as rf:  # the message says how to regenerate
            with self.assertRaisesRegex(schema.SchemaError, "reproduce .* --save"):
                plots.trial_figure(rf, 1)
        saved = os.path.join(tmp.name, "t1.h5")
        p = subprocess.run([exe, "reproduce", out, "1", "--save", saved],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("identical", p.stdout)
        with h5py.File(out, "r") as a, h5py.File(saved, "r") as b:
            ra, rb = a["trials"][1], b["trials"][0]
            self.assertEqual(b["trials"].shape, (1,))
            for f in a["trials"].dtype.names:
                if f in ("trial", "wall_time", "rank"):
                    continue
                self.assertEqual(ra[f].tobytes(), rb[f].tobytes(), f)
            self.assertEqual(int(rb["trial"]), 0)
            self.assertEqual(b.attrs["source_trial"], b"1" if isinstance(
                b.attrs["source_trial"], bytes) else "1")
            off = a["bulk/final_attention_offset"]
            pa = a["bulk/final_attention"][off[1]:off[2]]
            np.testing.assert_array_equal(pa, b["bulk/final_attention"][()])  # bit for bit
            for k in ("initial_tokens", "final_tokens", "V", "M"):
                self.assertIn(k, b["bulk"], k)
            self.assertEqual(b["bulk/initial_tokens"].shape, (8,))
        p = subprocess.run([exe, "summarize", saved, "--plot", "0", "--png", png],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        # --snapshots K: the trajectory at T (k + 1) / K (rk4 shortens the steps that land on
        # them, so the record may differ in the last bits: exit 0 or 1, the file is written)
        saved = os.path.join(tmp.name, "t1s.h5")
        p = subprocess.run([exe, "reproduce", out, "1", "--save", saved, "--snapshots", "6"],
                           capture_output=True, text=True, timeout=120)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        with h5py.File(saved, "r") as b:
            np.testing.assert_array_equal(b["bulk/snapshots"].attrs["times"],
                                          [0.5, 1, 1.5, 2, 2.5, 3])
            # the last snapshot is at T: the final tokens
            np.testing.assert_array_equal(b["bulk/snapshots"][-8:], b["bulk/final_tokens"][()])
        with schema.open_results(saved) as rf:
            fig = plots.trial_figure(rf, 0)
            self.assertEqual(fig.axes[0].get_xlabel(), "time $t$")
            self.assertIn("trial 1 of d1.h5", fig._suptitle.get_text())
            t, _ = lines_by_gid(fig.axes[0], plots.TRAJECTORY)[0].get_data()
            self.assertEqual(list(t), [0.0, 0.5, 1, 1.5, 2, 2.5, 3])
        p = subprocess.run([exe, "reproduce", out, "1", "--save", saved],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2)  # an existing file is not replaced
        self.assertIn("exists", p.stderr)

if __name__ == "__main__":
    import optional
    optional.main(verbosity=1)
