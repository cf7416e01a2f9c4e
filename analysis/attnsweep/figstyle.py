"""The journal style every figure shares (matplotlib with the Agg backend): palette and
markers, sizes, the quantity and symbol of each axis, and the one way figures are written."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

import matplotlib

from . import schema

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# ---------------------------------------------------------------- journal style
#: Okabe & Ito's colour-blind-safe palette (2008), black last; each series also has its own
#: marker, so a figure reads in grey too
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<")
#: at most this many series share a panel; more are split over panels (facets)
MAX_SERIES = len(PALETTE)
#: figure widths: one column of a two-column journal, and the page (inches)
COLUMN_IN, PAGE_IN = 3.3, 6.9
#: text between 7 and 9 pt at those widths; vector output keeps text as text
STYLE = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
         "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 9,
         "legend.title_fontsize": 7, "lines.linewidth": 1.0, "lines.markersize": 3.5,
         "axes.linewidth": 0.6, "grid.linewidth": 0.4, "pdf.fonttype": 42, "ps.fonttype": 42,
         "svg.fonttype": "none", "savefig.dpi": 300, "figure.dpi": 100,
         "axes.prop_cycle": matplotlib.cycler(color=PALETTE)}
matplotlib.rcParams.update(STYLE)


def series_style(k: int) -> Dict[str, str]:
    """Colour and marker of the k-th series of a panel."""
    return {"color": PALETTE[k % len(PALETTE)], "marker": MARKERS[k % len(MARKERS)]}


#: The quantity and its symbol for each numeric sweep key (include/attnsweep/params.h; the
#: record's name where it differs, margin -> margin_target) and the measured fields figures
#: put on an axis. tests/py/test_figures.py checks that every numeric key of the key table
#: has its line here.
SYMBOLS = {
    "d": ("dimension", "d"), "n": ("tokens", "n"), "m_rows": ("rows of Q, K", "m"),
    "v_scale": ("scale of V", "s_V"), "v_kpos": ("positive eigenvalues of V", "k_+"),
    "v_lambda": ("leading eigenvalue of V", r"\lambda"), "v_dim_f": ("dimension of F", "k"),
    "v_radius": ("spectral radius of V on G", r"\rho"),
    "v_gap": ("spectral gap of V", r"\lambda_1 - |\lambda_2|"),
    "v_imag": ("imaginary part of the leading eigenvalue", r"\mathrm{Im}\,\lambda_1"),
    "m_scale": ("scale of M", "s_M"), "m_cond": ("condition number of M", r"\kappa(M)"),
    "margin": ("imposed margin", r"\langle Q\varphi_1, K\varphi_1\rangle"),
    "margin_target": ("imposed margin", r"\langle Q\varphi_1, K\varphi_1\rangle"),
    "beta": ("inverse temperature", r"\beta"), "file_index": ("layer of the file", "i"),
    "file_mscale": ("scale of the file's M", "s_M"), "eps": ("perturbation", r"\varepsilon"),
    "init_scale": ("scale of the initial tokens", "r_0"), "T": ("horizon", "T"),
    "T_decide": ("horizon factor over the separation time", "f_T"),
    "dt": ("time step", r"\Delta t"), "rtol": ("relative tolerance", r"\mathrm{rtol}"),
    "atol": ("absolute tolerance", r"\mathrm{atol}"), "max_steps": ("step limit", "N"),
    "settle_tol": ("settle tolerance", r"\delta"), "settle_window": ("settle window", "w"),
    "sinkhorn_iters": ("Sinkhorn iterations", "K"),
    "sinkhorn_tol": ("Sinkhorn tolerance", r"\tau"), "heads": ("heads", "H"),
    "ffn_width": ("feed-forward width", "m"), "weights_every": ("layers per weight", "L"),
    "ranks_per_trial": ("ranks per trial", "r"), "reference_n": ("reference tokens", "N"),
    # measured fields
    "gap": ("spectral gap", r"\lambda_1 - |\lambda_2|"),
    "lambda1_re": ("leading eigenvalue", r"\mathrm{Re}\,\lambda_1"),
    "near_dist": ("distance to the nearest theorem", r"\delta"),
    "t_final": ("time reached", "t"), "settle_time": ("settle time", "t_s"),
    "n_clusters": ("clusters", "k"), "rank_p": ("rank of P", r"\mathrm{rank}\,P"),
    "wall_time": ("wall time", r"t_\mathrm{wall}"),
}


def quantity_label(field: str, fallback: Optional[str] = None) -> str:
    """The axis label of a field: its quantity and symbol ("perturbation $\\varepsilon$"),
    for a hypothesis distance "distance to <hypothesis>"; else fallback, else the name."""
    if field in SYMBOLS:
        q, sym = SYMBOLS[field]
        return "%s $%s$" % (q, sym)
    if field.startswith("dist_"):
        return "distance %s" % field[5:].replace("_", " ")
    return fallback or field


# ---------------------------------------------------------------- output
def save_figure(fig: Any, path: str, dpi: int = 110) -> None:
    """Write fig to path and close it: PNG, or the format its extension names when matplotlib
    knows it (pdf, svg, ...). An unwritable path raises schema.FileAccessError naming it
    (exit 3 in attnsweep summarize)."""
    ext = os.path.splitext(path)[1][1:].lower()
    fmt = ext if ext in fig.canvas.get_supported_filetypes() else "png"
    try:
        fig.savefig(path, dpi=dpi, format=fmt)
    except OSError as e:
        raise schema.FileAccessError("cannot write the figure %s: %s" % (
            path, e.strerror or e))
    finally:
        plt.close(fig)


