"""One plotting style for the whole series, and the few figure types it uses again and again.

Lines differ by colour *and* by line style/marker, so figures stay readable in black and white.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler
from matplotlib.axes import Axes

from posenc_lib.checks import is_int

__all__ = ["use_style", "heatmap", "line_plot", "moving_average", "COLORS", "LINESTYLES", "MARKERS", "MAX_WIDTH_IN"]

#: The widest figure the series draws, in inches. The site's text column is about 700 px wide; at
#: 150 dpi a 7.5-inch figure (1125 px) is shown at 0.6 of its size or more, so 10-pt labels stay
#: above 12 px on screen. Wider layouts are stacked or wrapped into rows of at most two or three
#: panels (``plt.subplot_mosaic``), not stretched into one long row. ``tests/course/test_figures.py``
#: checks every figure of the executed notebooks against it.
MAX_WIDTH_IN = 7.5

# Okabe-Ito colour-blind-safe palette, paired with distinct dash patterns and markers.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (8, 2, 2, 2))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def use_style() -> None:
    """Set the series' matplotlib style (call once at the top of a notebook).

    150 dpi, so figures stay sharp on high-density screens and in print; no text smaller than
    the axis labels (10 pt), legends included.
    """
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 150,
            "savefig.dpi": 150,
            "figure.constrained_layout.use": True,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.titlesize": 11,
            "axes.titleweight": "bold",
            "axes.labelsize": 10,
            "legend.fontsize": 10,
            "legend.frameon": False,
            "image.cmap": "viridis",
            "lines.linewidth": 1.8,
            "axes.prop_cycle": cycler(color=COLORS) + cycler(linestyle=LINESTYLES),
            "svg.hashsalt": "posenc",
        }
    )


def heatmap(
    ax: Axes,
    matrix: np.ndarray,
    title: str,
    xlabel: str,
    ylabel: str,
    colorbar_label: str | None = None,
    cmap: str = "viridis",
    center: bool = False,
    extent: Sequence[float] | None = None,
) -> mpl.image.AxesImage:
    """Draw ``matrix`` (rows = y, columns = x) with a titled, labelled colour bar.

    center=True uses a diverging map symmetric around 0 (for signed values such as biases).
    """
    m = np.asarray(matrix, dtype=float)
    kwargs = {}
    if center:
        lim = float(np.nanmax(np.abs(m))) or 1.0
        kwargs = {"vmin": -lim, "vmax": lim}
        cmap = "RdBu_r" if cmap == "viridis" else cmap
    im = ax.imshow(m, aspect="auto", cmap=cmap, interpolation="nearest", extent=extent,
                   origin="upper", **kwargs)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    cb = ax.figure.colorbar(im, ax=ax)
    if colorbar_label:
        cb.set_label(colorbar_label)
    return im


def line_plot(
    ax: Axes,
    x: Sequence[float] | np.ndarray,
    series: Mapping[str, Sequence[float] | np.ndarray],
    title: str,
    xlabel: str,
    ylabel: str,
    logx: bool = False,
    logy: bool = False,
    markers: bool = False,
) -> None:
    """One line per entry of ``series`` against ``x``, each with its own colour, dash and marker."""
    for i, (name, y) in enumerate(series.items()):
        ax.plot(x, y, label=name, color=COLORS[i % len(COLORS)], linestyle=LINESTYLES[i % len(LINESTYLES)],
                marker=MARKERS[i % len(MARKERS)] if markers else None, markersize=4)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()


def moving_average(values: Sequence[float], window: int = 10) -> np.ndarray:
    """Mean of each run of ``window`` consecutive values (len(values) - window + 1 of them), for readable loss curves."""
    if not is_int(window) or not 1 <= window <= len(values):
        raise ValueError(f"window must be an int in [1, len(values)={len(values)}], got {window!r}")
    return np.convolve(np.asarray(values, dtype=float), np.ones(window) / window, mode="valid")
