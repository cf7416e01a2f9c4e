#!/usr/bin/python3
"""The referees' campaign page: one referees.html from the results of jobs/referees/*.yaml.

usage: referees.py RESULTS_DIR -o referees.html [--times TIMES.tsv]

For each spec of jobs/referees/ (its header comment states the question, cited as in the
referees' list, and what the sweep does) the page shows the question, an answer sentence whose
numbers are read from the tables of this run, the table and a figure. Every number comes from
the analysis package (analysis/attnsweep: summary_tables, stat_tables, series_tables,
robustness_tables, measure_tables, gathered in attnsweep.summ) and every figure from
attnsweep.figures, through the page builder of attnsweep.report: nothing here computes a
statistic of its own, and no sentence is frozen to a result. A fraction of a verdict
(verdict:=consistent) is of the judged trials, by the analysis' one rule (attnsweep.rule):
no_prediction, not_converged, nonfinite and failed trials are in no denominator, and the
sentences say of how many judged trials. --times (written by run.sh) adds the wall and CPU seconds of each run.

Exit codes as attnsweep report: 0 written, 2 bad arguments or a missing results file, 3 an
unreadable file or an unwritable output.
"""

import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.environ.get("ATTNSWEEP_ANALYSIS_DIR") or os.path.join(HERE, "..", "..",
                                                                    "analysis")
sys.path.insert(0, ANALYSIS)
from attnsweep import figures, schema, summ  # noqa: E402
from attnsweep import report as rep  # noqa: E402


# ---------------------------------------------------------------- reading the tables
def stat_records(rf, by, tokens, where=None):
    """(Table, records) of `summarize --stat TOKENS --by BY [--where]`."""
    stats = summ.parse_stat_tokens([rf], tokens)
    _, tables = summ.stat_tables([rf], by, where, stats)
    return tables[0], rep.table_records(tables[0])


def verdict_records(rf, by, where=None):
    """(Table, records) of the verdict table `summarize --by BY` (with its default columns)."""
    _, tables, _ = summ.summary_tables(rf, by, where, defaults=True)
    return tables[0], rep.table_records(tables[0])


def num(x, digits=3):
    """A number of a sentence: '-' when the table has none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float) and x == int(x) and abs(x) < 1e9:
        return "%d" % int(x)
    return "%.*g" % (digits, x)


def pct(x):
    return "-" if x is None else "%.0f%%" % (100.0 * x)


def ci(r, name, f=pct):
    """'value [lo, hi]' of a statistic with its interval."""
    return "%s [%s, %s]" % (f(r.get(name)), f(r.get(name + "_lo")), f(r.get(name + "_hi")))


def judged(r, name="verdict_eq_consistent", interval=False):
    """A verdict fraction of a sentence with its denominator: '75% (of 20 judged)', with its
    interval '75% [51%, 90%] (of 20 judged)'; 'none judged' when no trial was (the rule:
    no_prediction, not_converged, nonfinite and failed trials are in no denominator)."""
    n = r.get(name.split("_eq_")[0] + "_n")
    if not n:
        return "none judged"
    return "%s (of %s judged)" % (ci(r, name) if interval else pct(r.get(name)), num(n))


def groups(records, keys, fmt):
    """'; '-joined phrases, one per group: 'k1 = v1, k2 = v2: <fmt(record)>'."""
    return "; ".join("%s: %s" % (", ".join("%s = %s" % (
        k, num(r[k]) if isinstance(r[k], float) else r[k]) for k in keys), fmt(r))
        for r in records)


def by_key(records, key):
    """{value of key: record} (the value as the table prints it)."""
    return {(num(r[key]) if isinstance(r[key], float) else r[key]): r for r in records}


def cmp_word(a, b, more, less, same="the same as"):
    """'more' when a > b, 'less' when a < b, else 'same' (None: 'not comparable with')."""
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or \
            (isinstance(b, float) and math.isnan(b)):
        return "not comparable with"
    return more if a > b else less if a < b else same


# ---------------------------------------------------------------- the questions
# Each entry: the spec (jobs/referees/<spec>.yaml), the table (by, statistics), the sentence
# made from its records, and the figure: ("trial", WHERE), ("phase", KEY, BY),
# ("series", OBS, BY), ("robustness",).
def _a_q1(rf):
    t, rec = stat_records(rf, ["case", "init"], [
        "hull_vertices_init:median", "n_clusters:median", "n_vertices:median",
        "verdict:=consistent"])
    s = ("From each initial distribution the end state has the median numbers of clusters "
         "and cluster vertices shown here, with the vertices of the initial hull (V = I, d = 2)"
         " or the levels (good triple, d = 3) they came from: " + groups(
             rec, ["case", "init"], lambda r: "%s clusters (%s vertices) from %s initial "
             "hull vertices, %s consistent with the theorem" % (
                 num(r["n_clusters_median"]), num(r["n_vertices_median"]),
                 num(r["hull_vertices_init_median"]), judged(r))) + ".")
    return t, s


def _a_q2(rf):
    t, rec = stat_records(rf, ["n"], [
        "leaders_init_vertices:median", "n_leaders:median", "n_vertices:median",
        "mean_shift:median", "mass_1:mean"])
    s = ("Under V = I the leaders (tokens that receive whole rows of P) are vertices of the "
         "initial hull: " + groups(rec, ["n"], lambda r: "median %s leaders of which %s were "
                                   "initial hull vertices, %s cluster vertices, the largest "
                                   "cluster holds %s of the tokens on average, and the mean "
                                   "moves by %s of the initial diameter (median)" % (
                                       num(r["n_leaders_median"]),
                                       num(r["leaders_init_vertices_median"]),
                                       num(r["n_vertices_median"]), num(r["mass_1_mean"]),
                                       num(r["mean_shift_median"]))) +
         ". A mean shift well above 0 says the mean is not preserved (docs/theory.md, "
         "section 2.10: it is conserved only for M = 0).")
    return t, s


def _a_q3(rf):
    t, rec = stat_records(rf, ["vfamily", "d"], [
        "sep_gap:gt0", "sep_gap:median", "n_clusters:median"])
    s = ("The fraction of the end states with at least two clusters whose clusters are "
         "pairwise linearly separable along their centre lines (sep_gap > 0, a certificate; "
         "docs/theory.md section 2.12): " + groups(
             rec, ["vfamily", "d"], lambda r: "%s of %s (median gap %s of the diameter, %s "
             "clusters)" % (ci(r, "sep_gap_gt0"), num(r["sep_gap_n"]),
                            num(r["sep_gap_median"]), num(r["n_clusters_median"]))) + ".")
    return t, s


def _a_q4(rf):
    t, rec = stat_records(rf, ["vfamily"], [
        "n_clusters:median", "p_uniform_dist:median", "max_norm_x:median",
        "verdict:=consistent"])
    s = ("Flipping V from I to -I on the same starts: " + groups(
        rec, ["vfamily"], lambda r: "median %s clusters, P at %s from uniform (max |P_ij - "
        "1/n|), max |x_i(T)| %s, %s consistent with the theorem" % (
            num(r["n_clusters_median"]), num(r["p_uniform_dist_median"]),
            num(r["max_norm_x_median"]), judged(r))) + ".")
    g = by_key(rec, "vfamily")
    if "identity" in g and "minus_identity" in g:
        a, b = g["minus_identity"], g["identity"]
        s += (" Under V = -I the median cluster count is %s that under V = I, and P is %s "
              "uniform attention (smaller distance: closer)." % (
                  cmp_word(a["n_clusters_median"], b["n_clusters_median"], "above", "below"),
                  cmp_word(b["p_uniform_dist_median"], a["p_uniform_dist_median"],
                           "closer to", "farther from", "as close to")))
    return t, s


def _a_q5(rf):
    _, tables = summ.measure_tables(rf, ["n"], None)
    t = tables[0]
    rec = rep.table_records(t)
    s = ("As n grows the cluster masses settle: " + groups(
        rec, ["n"], lambda r: "mean largest mass %s, L1 distance of the mean mass vector to "
        "the largest n %s, W1 to the reference run %s" % (
            num(r.get("mass_1_mean")), num(r.get("mass_l1_to_last")),
            num(r.get("ref_w1_median")))) + ".")
    w = [r.get("ref_w1_median") for r in rec if r.get("ref_w1_median") is not None]
    if len(w) >= 2:
        s += (" The W1 distance to the reference run %s from the smallest to the largest n "
              "(%s to %s); a mean-field limit predicts that it shrinks." % (
                  cmp_word(w[0], w[-1], "shrinks", "grows", "stays"), num(w[0]), num(w[-1])))
    return t, s


def _a_q6(rf):
    t, rec = stat_records(rf, ["mfamily", "d"], [
        "rank_p:median", "n_clusters:median", "n_leaders:median"])
    s = ("The rank of P against the clusters, by d: " + groups(
        rec, ["mfamily", "d"], lambda r: "rank %s, %s clusters, %s leaders (medians)" % (
            num(r["rank_p_median"]), num(r["n_clusters_median"]),
            num(r["n_leaders_median"]))) + ".")
    _, same = stat_records(rf, [], ["rank_p:n"], where="rank_p == n_clusters")
    _, alln = stat_records(rf, [], ["rank_p:n"])
    if same and alln and alln[0]["rank_p_n"]:
        k, m = same[0]["rank_p_n"], alln[0]["rank_p_n"]
        s += (" In %s of the %s trials the rank of P equals the number of clusters (n = %s "
              "tokens): %s." % (num(k), num(m), num(float(rf.read(["n"])["n"][0])),
                                "the rank of P is the cluster count" if k == m else
                                "the two differ in %s trials" % num(m - k)))
    return t, s


def _a_q7(rf):
    t, rec = stat_records(rf, ["skip"], ["residual:median", "n_clusters_track:median"])
    s = ("After the last layer the residual res(X) = ||X - 1 mean(X)^T|| / ||X|| is: " +
         groups(rec, ["skip"], lambda r: "%s (median, 95%% CI [%s, %s])" % (
             num(r["residual_median"]), num(r["residual_median_lo"]),
             num(r["residual_median_hi"]))) + ".")
    g = by_key(rec, "skip")
    if "true" in g and "false" in g:
        s += (" Without the skip connection the residual is %s that with it: %s." % (
            cmp_word(g["false"]["residual_median"], g["true"]["residual_median"],
                     "above", "below"),
            "rank collapse" if g["false"]["residual_median"] < 1e-6 else
            "no collapse to one point"))
    return t, s


def _a_w2(rf):
    t, rec = stat_records(rf, ["attention"], [
        "n_clusters:median", "n_clusters:gt1", "sinkhorn_dev:max", "verdict:=consistent"])
    s = ("On the same starts: " + groups(
        rec, ["attention"], lambda r: "median %s clusters, %s of the trials with more than "
        "one, %s consistent with the theorem" % (
            num(r["n_clusters_median"]), ci(r, "n_clusters_gt1"),
            judged(r))) + ".")
    g = by_key(rec, "attention")
    if "softmax" in g and "sinkhorn" in g:
        sk, sm = g["sinkhorn"]["n_clusters_median"], g["softmax"]["n_clusters_median"]
        s += (" Sinkhorn attention ends with a median cluster count %s softmax's, %s." % (
            cmp_word(sk, sm, "above", "below", "equal to"),
            "into more groups" if sk > sm else "into as few or fewer"))
    return t, s


def _a_w4(rf):
    t, rec = stat_records(rf, ["case", "beta"], [
        "n_clusters:median", "n_plateaus:median", "plateau_length:median",
        "t_last_merge:median"])
    s = ("With tokens on the sphere (layer normalisation) against the rescaled dynamics: " +
         groups(rec, ["case", "beta"], lambda r: "%s clusters at the end, %s plateaus, the "
                "longest %s time units, last merge at t = %s (medians)" % (
                    num(r["n_clusters_median"]), num(r["n_plateaus_median"]),
                    num(r["plateau_length_median"]), num(r["t_last_merge_median"]))) + ".")
    return t, s


def _b_q1(rf):
    t, rec = stat_records(rf, ["vfamily", "vars"], [
        "n_clusters:median", "max_norm_x:median", "verdict:=consistent"])
    s = ("The same starts in the rescaled z and in x: " + groups(
        rec, ["vfamily", "vars"], lambda r: "%s clusters, max |x_i(T)| %s, %s consistent" % (
            num(r["n_clusters_median"]), num(r["max_norm_x_median"]),
            judged(r))) +
        ". Without the rescaling x grows like e^{t lambda_1}; the clusters are read in z.")
    return t, s


def _b_q3(rf):
    _, tables, robust = summ.robustness_tables(rf, [], None, bins=4)
    t, rec = verdict_records(rf, ["case"])
    s = ("Judged against the theorem whose hypotheses hold (or no_prediction when none "
         "does): " + groups(
        rec, ["case"], lambda r: "%s [%s, %s] consistent of %s judged" % (
            pct(r["consistent_frac"]), pct(r["consistent_lo"]), pct(r["consistent_hi"]),
            num(r["judged"]))) +
        "; the robustness tables below judge every trial against its nearest theorem instead,"
        " point by point of each hypothesis distance.")
    return t, s, tables


def _b_w2(rf):
    t, rec = stat_records(rf, ["case", "weights", "weights_every"], [
        "n_clusters:median", "n_clusters_track:median", "residual:median"])
    s = ("Shared against per-layer weights: " + groups(
        rec, ["case", "weights", "weights_every"], lambda r: "%s clusters (median), residual "
        "%s" % (num(r["n_clusters_median"]), num(r["residual_median"]))) + ".")
    return t, s


def _c_2(rf):
    t, rec = stat_records(rf, ["method", "dt"], [
        "n_clusters:median", "verdict:=consistent", "verdict:=violated"])
    s = ("Layers against RK4 on the ODE: " + groups(
        rec, ["method", "dt"], lambda r: "%s consistent, %s violated, %s clusters" % (
            judged(r, interval=True), judged(r, "verdict_eq_violated"),
            num(r["n_clusters_median"]))) +
        ". The theorems carry over while dt lambda_1 <= 1 (docs/theory.md section 2.10); the "
        "table shows where they stop.")
    return t, s


def _c_5(rf):
    t, rec = stat_records(rf, ["case", "ffn"], [
        "n_clusters:median", "verdict:=consistent", "residual:median"])
    s = ("A good triple without and with a feed-forward part: " + groups(
        rec, ["case", "ffn"], lambda r: "%s consistent with the three hyperplanes, %s clusters"
        % (judged(r, interval=True), num(r["n_clusters_median"]))) + ".")
    return t, s


def _d_w1(rf):
    t, rec = stat_records(rf, ["case", "m_rows"], [
        "n_clusters:median", "n_vertices:median", "m_asym:median", "verdict:=consistent"])
    s = ("V = I with M = Q^T K of rank m_rows (0: full) and non-symmetric: " + groups(
        rec, ["case", "m_rows"], lambda r: "%s clusters, %s vertices, asymmetry %s, %s "
        "consistent with the polytope" % (
            num(r["n_clusters_median"]), num(r["n_vertices_median"]),
            num(r["m_asym_median"]), judged(r))) + ".")
    return t, s


QUESTIONS = [
    ("a_q1_embedding", _a_q1, ("trial", "init == 'sphere' and vfamily == 'identity'")),
    ("a_q2_vertices_mean", _a_q2, ("trial", "n == 20")),
    ("a_q3_separability", _a_q3, ("trial", "vfamily == 'gaussian' and d == 2")),
    ("a_q4_minus_v", _a_q4, ("phase", "vfamily", [])),
    ("a_q5_many_tokens", _a_q5, ("phase", "n", [])),
    ("a_q6_rank_p", _a_q6, ("phase", "d", ["mfamily"])),
    ("a_q7_skip", _a_q7, ("series", ["residual", "clusters"], ["skip"])),
    ("a_w2_sinkhorn", _a_w2, ("phase", "attention", [])),
    ("a_w4_layernorm", _a_w4, ("series", ["clusters"], ["case", "beta"])),
    ("b_q1_rescaling", _b_q1, ("phase", "vars", ["vfamily"])),
    ("b_q3_approximate", _b_q3, ("robustness",)),
    ("b_w2_time_dependent", _b_w2, ("trial", "weights == 'per_layer' and d == 3")),
    ("c_2_step_size", _c_2, ("phase", "dt", ["method"])),
    ("c_5_ffn", _c_5, ("trial", "ffn == 'relu'")),
    ("d_w1_low_rank", _d_w1, ("trial", "m_rows == 1")),
]


def spec_question(name):
    """(question, what the sweep does) from the header comment of jobs/referees/NAME.yaml:
    the text up to the last '?' is the question, the rest the method; the '# scale' lines and
    the campaign's pointer are left out."""
    words = []
    with open(os.path.join(HERE, name + ".yaml")) as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            if line.startswith("# scale"):
                continue
            words.append(line[1:].strip())
    text = " ".join(w for w in words if w)
    text = text.replace("Referees' campaign (jobs/referees/README.md). ", "")
    k = text.rfind("?")
    return (text[:k + 1], text[k + 1:].strip()) if k >= 0 else (text, "")


def draw(page, rf, fig):
    import numpy as np
    plots = figures
    kind = fig[0]
    if kind == "trial":
        where = fig[1]
        mask = summ.where_mask(rf, where)
        v = rf.read(["verdict"])["verdict"]
        ok = mask & (v != rf.code("verdict", "pending"))
        hit = np.nonzero(ok)[0]
        if not len(hit):
            page.p("no trial where %s to draw" % where, "note")
            return
        t = int(hit[0])
        page.figure(lambda p: plots.plot_trial_file(rf, t, p),
                    "trial %d (%s): end state, paths and the final attention matrix" % (
                        t, where), "trial")
    elif kind == "phase":
        _, _, phase = summ.summary_tables(rf, fig[2], None, phase=fig[1])
        page.figure(lambda p: plots.plot_phase(phase, p),
                    "verdict fractions against %s%s (Wilson 95%% bars)" % (
                        fig[1], " by " + ", ".join(fig[2]) if fig[2] else ""), "phase")
    elif kind == "series":
        _, _, series = summ.series_tables(rf, fig[2], None, fig[1])
        page.figure(lambda p: plots.plot_series(series, p),
                    "%s in time by %s (median, 95%% band)" % (
                        " and ".join(fig[1]), ", ".join(fig[2])), "series")
    elif kind == "robustness":
        _, _, robust = summ.robustness_tables(rf, [], None, bins=4)
        page.figure(lambda p: plots.plot_robustness(robust, p),
                    "verdict against the nearest theorem against each hypothesis distance",
                    "robustness")


def read_times(path):
    out = {}
    if path and os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                p = line.split()
                if len(p) >= 3 and p[0] != "spec":
                    out[p[0]] = (float(p[1]), float(p[2]))
    return out


def build(results, out, times=None, only=None):
    tm = read_times(times)
    with tempfile.TemporaryDirectory(prefix="attnsweep-referees-") as tmp:
        page = rep.Page("The referees' questions, answered by attnsweep sweeps", tmp)
        page.p("Each section states a referee's question (in our words, cited by reviewer and "
               "item), the sweep of jobs/referees/ that addresses it, an answer whose numbers "
               "are read from this run's tables, the table and a figure. Rerun with "
               "jobs/referees/run.sh; nothing here is frozen to a result.")
        if tm:
            rows = [(k, "%.1f" % w, "%.1f" % c) for k, (w, c) in sorted(tm.items())]
            tot = (sum(w for w, _ in tm.values()), sum(c for _, c in tm.values()))
            rows.append(("total", "%.1f" % tot[0], "%.1f" % tot[1]))
            page.table(summ.Table("time of each sweep (run.sh)", ["spec", "wall s", "CPU s"],
                                  rows, [], []))
        for name, answer, fig in QUESTIONS:
            if only and name not in only:
                continue
            path = os.path.join(results, name + ".h5")
            question, method = spec_question(name)
            page.h(2, name, name)
            page.p(question, "question")
            page.p("The sweep (jobs/referees/%s.yaml): %s" % (name, method))
            if not os.path.exists(path):
                page.p("not run: %s is missing" % path, "warn")
                continue
            with schema.open_results(path) as rf:
                for line in summ.completeness(rf, rf.read(["verdict"]))[1:]:
                    page.p(line, "note")
                got = answer(rf)
                page.box(got[1], "answer")
                page.table(got[0])
                for t in (got[2] if len(got) > 2 else []):
                    page.table(t)
                draw(page, rf, fig)
        page.h(2, "Not answered by a sweep here", "others")
        page.p("B-W1, C-3 and D-Q3 (do trained heads, ALBERT's among them, satisfy the "
               "hypotheses) need imported checkpoints: `attnsweep import-weights` then "
               "`attnsweep census` (docs/weights.md); a sweep over the imported file "
               "(vfamily: file) gets the weights section of `attnsweep report`.")
        rep.write_page(page, out)
    return page


def main(argv=None):
    ap = rep._Parser(prog="referees.py", description=__doc__.split("\n")[1])
    ap.add_argument("results", help="the directory run.sh wrote the results files into")
    ap.add_argument("-o", "--output", required=True, help="the page (referees.html)")
    ap.add_argument("--times", help="wall and CPU seconds per spec (run.sh's times.tsv)")
    ap.add_argument("--only", help="comma-separated specs (default: all)")
    try:
        args = ap.parse_args(argv)
        if not os.path.isdir(args.results):
            raise summ.UsageError("%s is not a directory" % args.results)
        only = set(args.only.split(",")) if args.only else None
        page = build(args.results, args.output, args.times, only)
        print("wrote %s: %d figures" % (args.output, len(page.figures)))
        return 0
    except SystemExit as e:
        return 2 if e.code else 0
    except (summ.UsageError, schema.SchemaError) as e:
        return rep._fail(e, 2)
    except schema.FileAccessError as e:
        return rep._fail(e, 3)


if __name__ == "__main__":
    sys.exit(main())
