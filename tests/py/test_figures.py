#!/usr/bin/python3
"""Every figure kind, as a journal would take it: rendered, no text leaves the canvas or
overlaps another text (the window extent of every drawn Text, with a renderer), every axis
labelled, text between 7 and 9 pt, the figure one column (3.3 in) or a page (6.9 in) wide,
at most MAX_SERIES series per panel (more: facets), the legend outside the data (no legend
box meets a data axes), vector output chosen by the extension. Kinds: phase (no group, groups,
more groups than a panel holds), robustness, series, lines, and the trial figure of every
drawable trial of test_plots' bulk file, a sphere trial and a good triple's l_1 coordinate.
Also: every numeric sweep key of include/attnsweep/params.h has its quantity and symbol."""

import os
import re
import shutil
import sys
import tempfile
import unittest

import numpy as np
import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_plots as tp  # noqa: E402
import test_robustness as tr  # noqa: E402
import test_curves as tc  # noqa: E402

plots = tp.plots
summ = tp.summ
schema = tp.schema


#: the figures also written as PDF and as SVG (vector output by extension; a few of each
#: layout: writing every one would double the test's time)
PDF = ("phase_groups", "robustness", "trial_5", "trial_sphere", "stat_lines")
SVG = ("phase_groups", "lines", "trial_1")


def drawn_texts(fig):
    """(Text, where) of everything drawn with text: titles, axis labels, the tick labels
    drawn, texts, legends, figure texts."""
    out = []
    fig.canvas.draw()
    for t in fig.texts + ([fig._suptitle] if fig._suptitle and fig._suptitle not in fig.texts
                          else []):
        out.append((t, "figure"))
    for lg in fig.legends:
        out += [(t, "legend") for t in lg.get_texts()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        axis = [ax.xaxis, ax.yaxis] + ([ax.zaxis] if hasattr(ax, "zaxis") else [])
        for a in axis:
            if ax.axison:
                out.append((a.label, "label"))
                for tick in a._update_ticks():  # the ticks drawn (inside the view)
                    for lab in (tick.label1, tick.label2):
                        if lab.get_visible():
                            out.append((lab, "tick"))
                if a.offsetText.get_visible():
                    out.append((a.offsetText, "offset"))
        out += [(t, "title") for t in (ax.title, ax._left_title, ax._right_title)]
        out += [(t, "text") for t in ax.texts]
        if ax.get_legend():
            out += [(t, "legend") for t in ax.get_legend().get_texts()]
            if ax.get_legend().get_title().get_text():
                out.append((ax.get_legend().get_title(), "legend"))
    return [(t, w) for t, w in out if t.get_visible() and t.get_text().strip()]


def is_colorbar(ax):
    return hasattr(ax, "_colorbar")


def check_figure(test, fig, name, out_dir):
    """The journal checks of one figure; it is also written as PDF and SVG."""
    r = fig.canvas.get_renderer()
    w_in = fig.get_figwidth()
    test.assertTrue(abs(w_in - plots.COLUMN_IN) < 1e-9 or abs(w_in - plots.PAGE_IN) < 1e-9,
                    (name, w_in))
    texts = drawn_texts(fig)
    test.assertTrue(texts, name)
    W, H = fig.bbox.width, fig.bbox.height
    boxes = []
    for t, where in texts:
        size = t.get_fontsize()
        test.assertTrue(7 - 1e-9 <= size <= 9 + 1e-9, (name, t.get_text(), size))
        bb = t.get_window_extent(r)
        test.assertTrue(bb.x0 >= -1 and bb.y0 >= -1 and bb.x1 <= W + 1 and bb.y1 <= H + 1,
                        "%s: %r (%s) leaves the canvas: %s in %gx%g" % (
                            name, t.get_text(), where, bb.bounds, W, H))
        boxes.append((bb.expanded(1.0, 1.0).padded(-0.5), t.get_text(), where))
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i][0], boxes[j][0]
            if a.width <= 0 or b.width <= 0:
                continue
            test.assertFalse(a.overlaps(b), "%s: %r (%s) overlaps %r (%s)" % (
                name, boxes[i][1], boxes[i][2], boxes[j][1], boxes[j][2]))
    data_axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison and
                 not is_colorbar(ax)]
    for ax in data_axes:
        test.assertTrue(ax.get_xlabel().strip(), (name, "x label"))
        test.assertTrue(ax.get_ylabel().strip() or any(
            o.get_ylabel().strip() for o in data_axes
            if o.get_shared_y_axes().joined(o, ax)), (name, "y label"))
        if hasattr(ax, "get_zlabel"):
            test.assertTrue(ax.get_zlabel().strip(), (name, "z label"))
        test.assertLessEqual(len(ax.containers) + len([ln for ln in ax.lines if
                                                       ln.get_label().startswith("_") is False
                                                       and ln.get_gid() is None]),
                             plots.MAX_SERIES + 4, name)
        test.assertLessEqual(len(ax.containers), plots.MAX_SERIES, name)
    for ax in fig.axes:  # colour bars name their quantity too
        if is_colorbar(ax):
            test.assertTrue(ax.get_ylabel().strip() or ax.get_xlabel().strip(), name)
    # legends outside the data: no legend box meets a data axes' box
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    for lg in legends:
        lb = lg.get_window_extent(r)
        for ax in data_axes:
            if hasattr(ax, "get_zlim"):
                continue  # a 3-D axes' box is its whole panel
            test.assertFalse(lb.overlaps(ax.get_window_extent(r).padded(-1)),
                             "%s: a legend over the data" % name)
    for ext in (("pdf",) if name in PDF else ()) + (("svg",) if name in SVG else ()):
        path = os.path.join(out_dir, "fig_%s.%s" % (name, ext))
        fig.savefig(path, format=ext)
        with open(path, "rb") as fh:
            head = fh.read(200)
        test.assertTrue(head.startswith(b"%PDF") if ext == "pdf" else b"<svg" in head or
                        b"<?xml" in head, (name, ext))


class FiguresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = tp.figure_dir(cls.tmp.name)
        tp.TrialFileTest.setUpClass()  # test_plots' bulk file: one trial of each kind
        cls.bulk = tp.TrialFileTest.path
        cls.pert = os.path.join(cls.tmp.name, "pert.h5")
        a, _ = tc.build(np.random.default_rng(3))
        tr.write(cls.pert, a)
        cls.pert_rows = a
        cls.rob = os.path.join(cls.tmp.name, "rob.h5")
        tr.write(cls.rob, tr.build(np.random.default_rng(16), n=200))

    @classmethod
    def tearDownClass(cls):
        tp.TrialFileTest.tearDownClass()
        cls.tmp.cleanup()

    def check(self, fig, name):
        check_figure(self, fig, name, self.out)

    def path(self, name):
        return os.path.join(self.tmp.name, name + ".png")

    def test_phase(self):
        with schema.open_results(self.pert) as rf:
            _, _, ph = summ.summary_tables(rf, ["perturb"], None, phase="eps")
            _, _, one = summ.summary_tables(rf, [], "T > 10", phase="eps")
            _, _, cat = summ.summary_tables(rf, [], None, phase="perturb")
        fig = plots.plot_phase(ph, self.path("phase"))
        self.assertEqual(fig.axes[0].get_xlabel(), r"perturbation $\varepsilon$")
        self.check(fig, "phase_groups")
        self.check(plots.plot_phase(one, self.path("phase1")), "phase_one")
        self.check(plots.plot_phase(cat, self.path("phase_cat")), "phase_categorical")

    def test_phase_facets(self):
        # twelve groups: no panel holds more than MAX_SERIES lines
        x = [0.001, 0.01, 0.1]
        series = {}
        for g in range(12):
            ser = {"x": x, "label": [str(v) for v in x], "judged": [10, 10, 10]}
            for v in summ.JUDGED:
                p, lo, hi = summ.wilson(np.array([g % 10, 5, 10 - g % 10]),
                                        np.array([10, 10, 10]))
                ser[v] = (list(p), list(lo), list(hi))
            series["group = %d" % g] = ser
        fig = plots.plot_phase({"param": "beta", "series": series}, self.path("facets"))
        self.assertEqual(fig.axes[0].get_xlabel(), r"inverse temperature $\beta$")
        drawn = sum(len(ax.containers) for ax in fig.axes)
        self.assertEqual(drawn, 12 * len(plots.PHASE_VERDICTS))  # every line somewhere
        self.check(fig, "phase_facets")

    def test_robustness(self):
        with schema.open_results(self.rob) as rf:
            _, _, data = summ.robustness_tables(rf, [], None)
        with schema.open_results(self.pert) as rf:
            _, _, pdata = summ.robustness_tables(rf, ["perturb"], None, bins=1)
        self.check(plots.plot_robustness(data, self.path("rob")), "robustness")
        self.check(plots.plot_robustness(pdata, self.path("rob_p")), "robustness_perturb")
        # one point per group (--bins 1, three keys): the fraction against the numeric key,
        # a line per other combination, long legend entries
        with schema.open_results(self.pert) as rf:
            _, _, kdata = summ.robustness_tables(rf, ["perturb", "T", "eps"], None, bins=1)
        fig = plots.plot_robustness(kdata, self.path("rob_k"))
        self.assertEqual(fig.axes[0].get_xlabel(), r"perturbation $\varepsilon$")
        self.assertEqual(len(fig.axes[0].containers), 4)  # perturb v, both x T 5, 50
        self.check(fig, "robustness_by_key")

    def test_series_and_lines(self):
        t = np.linspace(0, 5, 6)
        ser = {"names": ["residual", "clusters"], "where": None, "series": {}}
        for nm in ser["names"]:
            ser["series"][nm] = {"skip = %s" % s: {"t": t, "median": np.exp(-t * k),
                                                  "lo": np.exp(-t * k) * 0.8,
                                                  "hi": np.exp(-t * k) * 1.2, "trials": [9] * 6}
                                 for k, s in ((1.0, "true"), (3.0, "false"))}
        self.check(plots.plot_series(ser, self.path("series")), "series")
        curves = {"x": "T", "ylabel": "fraction consistent", "ylim": (0, 1), "series": {}}
        for g in range(10):
            y = np.clip(np.array([0.2, 0.5, 0.9]) + 0.01 * g, 0, 1)
            curves["series"]["d = %d" % (g + 2)] = {"x": [5, 15, 45], "y": y, "lo": y - 0.1,
                                                    "hi": y + 0.1}
        fig = plots.plot_lines(curves, os.path.join(self.tmp.name, "lines.svg"))
        self.assertEqual(fig.axes[0].get_xlabel(), "horizon $T$")
        self.check(fig, "lines")
        one = dict(curves, series=dict(list(curves["series"].items())[:3]))
        self.check(plots.plot_lines(one), "lines_column")

    def test_stat_figure(self):
        # --stat --png: the statistic against the first --by key, a line per other group; the
        # eps = 0 baseline (perturb `-`) is the first point of every line
        import attnsweep_plots
        png = os.path.join(self.tmp.name, "stat.pdf")
        figs = []
        orig = attnsweep_plots.plot_lines
        attnsweep_plots.plot_lines = lambda c, p: figs.append(orig(c, p)) or figs[-1]
        try:
            rc, _, err = tc.run([self.pert, "--stat", "near_verdict:=consistent", "--by",
                                 "eps,perturb", "--png", png])
        finally:
            attnsweep_plots.plot_lines = orig
        self.assertEqual(rc, 0, err)
        fig = figs[0]
        ax = fig.axes[0]
        self.assertEqual(ax.get_xlabel(), r"perturbation $\varepsilon$")
        self.assertEqual(len(ax.containers), 2)  # perturb v and both, no `-` line
        nv = np.array([tc.LABELS["verdict"][c] for c in self.pert_rows["near_verdict"]])
        for c in ax.containers:
            x, y = c.lines[0].get_data()
            self.assertEqual(x[0], 0.0)
            base = self.pert_rows["eps"] == 0
            self.assertAlmostEqual(y[0], float(np.mean(nv[base] == "consistent")), places=12)
        self.check(fig, "stat_lines")

    def test_end_state(self):
        X = tp.TrialFileTest.arrays[1]
        fig = plots.plot_end_state(self.path("end"), X["final_tokens"],
                                   P=X["final_attention"], initial=X["initial_tokens"],
                                   trajectory=X["snapshots"])
        self.check(fig, "end_state")

    def test_trial_figures(self):
        with schema.open_results(self.bulk) as rf:
            for trial in (0, 1, 4, 5, 6, 7):
                fig = plots.trial_figure(rf, trial)
                self.check(fig, "trial_%d" % trial)
                # 4 snapshots: the figure says its paths are coarse and how to redraw them
                self.assertTrue(any("--snapshots 50" in t.get_text() for t in fig.texts))
                if trial == 1:  # good: the l_1 coordinate with the levels a, 0, b as lines
                    axl = fig.axes[-1]
                    self.assertEqual(axl.get_ylabel(), r"$l_1^\top z$")
                    self.assertEqual(len([ln for ln in axl.get_lines()
                                          if ln.get_linestyle() == "--"]), 3)
                    V = tp.TrialFileTest.arrays[1]["V"]
                    _, l1, _ = plots.left_leading_eigvec(V)
                    paths = tp.lines_by_gid(axl, plots.TRAJECTORY)
                    z0 = tp.TrialFileTest.arrays[1]["initial_tokens"]
                    np.testing.assert_allclose([p.get_ydata()[0] for p in paths], z0 @ l1,
                                               rtol=1e-12, atol=1e-12)

    def test_sphere_trial(self):
        path = os.path.join(self.tmp.name, "sphere.h5")
        shutil.copy(self.bulk, path)
        with h5py.File(path, "a") as f:  # trial 0 (d = 3) on the unit sphere
            tr_ = f["trials"][...]
            tr_["norm"][0] = tp.LABELS["norm"].index("sphere")
            f["trials"][...] = tr_
            for name in ("final_tokens", "initial_tokens", "snapshots"):
                off = f["bulk/%s_offset" % name][...]
                x = f["bulk/" + name][int(off[0]):int(off[1])].reshape(-1, 3)
                x = x / np.linalg.norm(x, axis=1)[:, None]
                f["bulk/" + name][int(off[0]):int(off[1])] = x.ravel()
        with schema.open_results(path) as rf:
            fig = plots.trial_figure(rf, 0)
        ax = fig.axes[0]
        self.assertEqual(ax.get_title(), "tokens on the sphere")
        for line in tp.lines_by_gid(ax, plots.TRAJECTORY):  # paths stay on the sphere
            xyz = np.array(line.get_data_3d())
            np.testing.assert_allclose(np.linalg.norm(xyz, axis=0), 1.0, atol=1e-9)
        self.check(fig, "trial_sphere")

    def test_every_numeric_key_has_a_symbol(self):
        with open(os.path.join(tp.SRC, "include", "attnsweep", "params.h")) as fh:
            text = fh.read()
        keys = re.findall(r"X\(C, (\w+), (NUM|INT|I64),", text)
        self.assertGreater(len(keys), 20)
        missing = [k for k, _ in keys if k not in plots.SYMBOLS]
        self.assertEqual(missing, [])
        for k, _ in keys:
            lab = plots.quantity_label(k)
            self.assertRegex(lab, r"^[A-Za-z][^$]* \$[^$]+\$$", k)  # "quantity $symbol$"


if __name__ == "__main__":
    import optional
    optional.main()
