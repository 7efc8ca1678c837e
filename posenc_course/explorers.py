"""Explorers: move a slider and watch an encoding change, in JupyterLab and on the course site.

An explorer is one question asked of the library with a few knobs turned: the sinusoidal
encoding as the position and the base move, RoPE's rotated pairs as the query and key positions
move, T5's buckets and ALiBi's slopes as the head count and length change, and what each
context-extension rule does to RoPE's pairs as the factor grows. Every number it shows is
computed by ``posenc_lib``; nothing here re-implements a formula. An :class:`Explorer` has

- a **values function** (``sinusoidal_values``, ``rope_values``, ``relative_values``,
  ``context_values``): the library's numbers for one setting of the controls, a dict of arrays;
  pure, and tested against the library and the properties the notebooks state;
- **controls** (:class:`Control`): the grid of values each slider or menu offers;
- **panels** (:class:`Panel` of :class:`Series`): what is drawn from those arrays, as one
  description that two renderers read: :func:`explorer_figure` (matplotlib: the static figure of an
  executed notebook, its print version) and the course site's script
  (``tools/site/_static/posenc_explorer.js``), which draws the values the build exports with
  :func:`export_explorer` for every point of the control grid and only looks them up.

In a notebook, ``sinusoidal_explorer()`` shows sliders (ipywidgets) where a widget frontend is
live (JupyterLab) and the static figure at the default setting everywhere else; see
:func:`show_explorer`.

Value arrays and their shapes are listed in each values function's docstring; ``P`` = pairs.
"""

from __future__ import annotations

import base64
import functools
import io
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import PIL.Image
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from posenc_course.plotting import COLORS, LINESTYLES, MARKERS, use_style
from posenc_lib.checks import check_choice, check_int, check_number
from posenc_lib.embeddings.sinusoidal import sinusoidal_frequencies, sinusoidal_table
from posenc_lib.rotary.rope import apply_rope, rope_cos_sin, rope_inv_freq
from posenc_lib.rotary.scaling import rope_frequencies
from posenc_lib.score_bias.alibi import alibi_bias, alibi_slopes
from posenc_lib.score_bias.t5 import t5_relative_bucket

__all__ = [
    "Control",
    "Series",
    "Panel",
    "Explorer",
    "sinusoidal_values",
    "rope_values",
    "ROPE_QUERY",
    "ROPE_KEY",
    "relative_values",
    "context_values",
    "CONTEXT_METHODS",
    "EXPLORERS",
    "axis_ticks",
    "panel_arrays",
    "explorer_figure",
    "LIVE_DPI",
    "LiveFigure",
    "explorer_widget",
    "export_explorer",
    "show_explorer",
    "sinusoidal_explorer",
    "rope_explorer",
    "relative_explorer",
    "context_explorer",
]

Array = np.ndarray
Values = dict[str, Any]


# ----------------------------------------------------------------------------- the description


@dataclass(frozen=True)
class Control:
    """One slider or menu: the keyword ``name`` of the values function and the grid it offers.

    ``kind`` "slider" moves through ``options`` in order; "menu" picks one. ``option_labels`` is
    the text shown for each option (default: the option itself).
    """

    name: str
    label: str
    options: tuple[Any, ...]
    default: Any
    kind: Literal["slider", "menu"] = "slider"
    option_labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.default not in self.options:
            raise ValueError(f"Control {self.name!r}: default {self.default!r} is not one of its options")
        if self.option_labels is not None and len(self.option_labels) != len(self.options):
            raise ValueError(f"Control {self.name!r}: {len(self.option_labels)} labels for {len(self.options)} options")

    def text(self, value: Any) -> str:
        """The label of the option ``value``."""
        labels = self.option_labels or tuple(_plain_number(v) for v in self.options)
        return labels[self.options.index(value)]


@dataclass(frozen=True)
class Series:
    """Something drawn in a panel from value arrays (named by their keys).

    ``kind`` is one of

    - "line": y against x, one polyline (``markers`` adds a marker at each point);
    - "lines": one polyline per row of the 2-D array y, against x (one legend entry, or one per
      row when ``row_labels`` names a (rows,) array: ``row_format.format(value)`` each);
    - "points": markers only, y against x;
    - "arrow": an arrow from the origin to row ``row`` of the (P, 2) array y;
    - "hline": a horizontal line at each value of y; "vline": a vertical line at each value of x.

    ``style`` indexes the colours, dashes and markers (``plotting.COLORS``, ``LINESTYLES``, ``MARKERS``).
    """

    kind: Literal["line", "lines", "points", "arrow", "hline", "vline"]
    y: str | None = None
    x: str | None = None
    label: str | None = None
    style: int = 0
    markers: bool = False
    row: int | None = None
    row_labels: str | None = None
    row_format: str = "{}"


@dataclass(frozen=True)
class Panel:
    """One set of axes: title, labelled axes, scales, limits, ticks and the series drawn.

    ``xlim``/``ylim``: fixed (low, high), or the key of a (2,) value array when the limits depend on
    the controls. ``xticks``/``yticks``: explicit (values, labels); by default :func:`axis_ticks`.
    ``equal``: one unit is as long on both axes (for arrows). ``legend``: where the legend of the
    labelled series goes (a matplotlib location such as "upper right", in ``legend_columns``
    columns; "figure": one row under the whole figure), or None.
    """

    key: str
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    xlim: tuple[float, float] | str
    ylim: tuple[float, float] | str
    xscale: Literal["linear", "log"] = "linear"
    yscale: Literal["linear", "log"] = "linear"
    xticks: tuple[tuple[float, ...], tuple[str, ...]] | None = None
    yticks: tuple[tuple[float, ...], tuple[str, ...]] | None = None
    equal: bool = False
    legend: str | None = "upper right"
    legend_columns: int = 1


@dataclass(frozen=True)
class Explorer:
    """A values function, its controls and its panels (laid out as ``mosaic``, as plt.subplot_mosaic).

    ``figsize`` is the static figure's size (the notebook's committed output, the site); ``live_figsize``,
    when given, the live figure's in JupyterLab (:class:`LiveFigure`), wider and shorter so that the
    sliders and the figure fit one screen."""

    name: str
    title: str
    function: Callable[..., Values]
    params: Mapping[str, Any]
    controls: tuple[Control, ...]
    panels: tuple[Panel, ...]
    mosaic: tuple[tuple[str, ...], ...]
    figsize: tuple[float, float]
    call: str  # the function a notebook calls to show it, e.g. "sinusoidal_explorer"
    live_figsize: tuple[float, float] | None = None

    @property
    def default_state(self) -> dict[str, Any]:
        return {c.name: c.default for c in self.controls}

    def values(self, state: Mapping[str, Any]) -> Values:
        """The values function at ``state`` (one option of every control), with the explorer's params."""
        return self.function(**self.params, **state)

    def caption(self, state: Mapping[str, Any]) -> str:
        """The figure's title: the explorer's title and the setting drawn."""
        return f"{self.title}: " + ", ".join(f"{c.label} = {c.text(state[c.name])}" for c in self.controls)


# ----------------------------------------------------------------------------- the values (library calls only)


def sinusoidal_values(position: int, base: float, d_model: int = 64, n_positions: int = 64) -> Values:
    """The sinusoidal encoding of ``position`` with frequencies ``base^(-2i/d)`` (notebook 01).

    The values, a dict of arrays (float64 unless said otherwise):

    - ``pair`` (d/2,) int; ``sine``, ``cosine`` (d/2,): PE(p)[2i] = sin(p theta_i) and
      PE(p)[2i+1] = cos(p theta_i), the row of ``sinusoidal_table`` split into its sines and cosines;
    - ``position`` (n_positions,) int; ``similarity`` (n_positions,): cos(PE(p), PE(q)) =
      PE(p).PE(q) / (d/2) for q = 0 .. n_positions-1 (every encoding has squared norm d/2);
    - ``marker`` (1,): p, where the similarity is 1;
    - ``wavelength`` (d/2,): 2 pi / theta_i, in positions;
    - ``shown`` (1,): n_positions, the positions the similarity panel shows.
    """
    d_model = check_int("d_model", d_model, 2, even=True)
    n_positions = check_int("n_positions", n_positions, 1)
    position = check_int("position", position, 0)
    if position >= n_positions:
        raise ValueError(f"position must be < n_positions={n_positions}, got {position}")
    table = sinusoidal_table(n_positions, d_model, base=base, dtype=torch.float64)  # (n_positions, d_model)
    encoding = table[position]
    return {
        "pair": np.arange(d_model // 2),
        "sine": encoding[0::2].numpy(),
        "cosine": encoding[1::2].numpy(),
        "position": np.arange(n_positions),
        "similarity": (table @ encoding / (d_model / 2)).numpy(),
        "marker": np.array([position]),
        "wavelength": (2 * math.pi / sinusoidal_frequencies(d_model, base)).numpy(),
        "shown": np.array([n_positions]),
    }


#: The query and key the RoPE explorer rotates, 4 pairs each (head_dim 8), every pair of length about 1.
ROPE_QUERY = (1.0, 0.2, 0.6, 0.8, 0.9, -0.4, 0.3, 0.95)
ROPE_KEY = (0.7, 0.7, -0.2, 0.98, 0.5, 0.85, 0.99, -0.1)


def rope_values(query_position: int, key_position: int, query: Sequence[float] = ROPE_QUERY,
                key: Sequence[float] = ROPE_KEY, base: float = 10000.0, n_positions: int = 48) -> Values:
    """RoPE of one query at position m and one key at position n (interleaved pairs, notebook 03).

    The rotation is the library's ``apply_rope`` with ``rope_cos_sin`` of ``rope_inv_freq`` (float64),
    applied to q and k at every position once per (query, key, base, n_positions) and remembered
    (:func:`_rotations`): the site's export asks for every (m, n) of the grid.

    The values, a dict of float64 arrays (offsets int):

    - ``q_rotated``, ``k_rotated`` (P, 2): pair i of R_m q and of R_n k;
    - ``offset`` (n_positions,): n' - m for every key position n' = 0 .. n_positions-1;
    - ``score`` (n_positions,): the score (R_m q) . (R_n' k) of the query at m with a key at n';
    - ``marker_offset``, ``marker_score`` (1,): n - m, and the score of the key at n;
    - ``score_limits`` (2,): minus and plus the product of the norms of q and k, widened by 5%
      (no score leaves that range).
    """
    n_positions = check_int("n_positions", n_positions, 1)
    for name, value in (("query_position", query_position), ("key_position", key_position)):
        check_int(name, value, 0)
        if value >= n_positions:
            raise ValueError(f"{name} must be < n_positions={n_positions}, got {value}")
    rq, rk = _rotations(tuple(map(float, query)), tuple(map(float, key)), float(base), n_positions)
    q_at_m = rq[query_position]
    score = rk @ q_at_m  # (seq,): the query at m against a key at every position
    bound = 1.05 * float(np.linalg.norm(query) * np.linalg.norm(key))
    return {
        "q_rotated": q_at_m.reshape(-1, 2).copy(),
        "k_rotated": rk[key_position].reshape(-1, 2).copy(),
        "offset": np.arange(n_positions) - query_position,
        "score": score,
        "marker_offset": np.array([key_position - query_position]),
        "marker_score": score[key_position : key_position + 1].copy(),
        "score_limits": np.array([-bound, bound]),
    }


@functools.lru_cache(maxsize=8)
def _rotations(query: tuple[float, ...], key: tuple[float, ...], base: float, n_positions: int) -> tuple[Array, Array]:
    """R_p q and R_p k for every position p: two read-only (n_positions, head_dim) float64 arrays."""
    q = torch.tensor(query, dtype=torch.float64)
    k = torch.tensor(key, dtype=torch.float64)
    if q.dim() != 1 or q.shape != k.shape:
        raise ValueError(f"query and key must be 1-D and of one length, got shapes {tuple(q.shape)} and {tuple(k.shape)}")
    head_dim = q.numel()
    cos, sin = rope_cos_sin(torch.arange(n_positions), rope_inv_freq(head_dim, base).double(), dtype=torch.float64)
    both = torch.stack([q, k])[None, :, None, :].expand(1, 2, n_positions, head_dim)  # (1, 2 heads, seq, head_dim)
    rotated = apply_rope(both, cos[None], sin[None], layout="interleaved")[0].numpy()  # (2, seq, head_dim)
    rotated.flags.writeable = False  # shared by every call: nobody may change it
    return rotated[0], rotated[1]


def relative_values(n_heads: int, length: int, num_buckets: int = 32, max_distance: int = 128,
                    n_keys: int = 17) -> Values:
    """T5 buckets for a sequence of ``length`` tokens and ALiBi for ``n_heads`` heads (notebook 05).

    The values, a dict of arrays (ids, offsets and positions int, the rest float64):

    - ``offset`` (2L-1,): key minus query, -(L-1) .. L-1; ``offset_limits`` (2,);
    - ``t5_bidirectional``, ``t5_causal`` (2L-1,): ``t5_relative_bucket`` of each offset;
    - ``max_distance`` (0, 1 or 2 values): the offsets -max_distance and max_distance that fall
      inside the sequence;
    - ``head`` (n_heads,): 1 .. n_heads; ``slope`` (n_heads,): ``alibi_slopes``;
    - ``key`` (K,): up to ``n_keys`` key positions from 0 to L-1, evenly spread (all when L <= n_keys);
    - ``alibi_bias`` (n_heads, K): ``alibi_bias`` of the last query (position L-1) against those keys;
    - ``key_limits``, ``bias_limits`` (2,): the ranges drawn.
    """
    n_heads = check_int("n_heads", n_heads)
    length = check_int("length", length, 2)
    n_keys = check_int("n_keys", n_keys, 2)
    offsets = torch.arange(-(length - 1), length)
    slopes = alibi_slopes(n_heads)
    keys = torch.linspace(0, length - 1, min(n_keys, length), dtype=torch.float64).round().long()
    bias = alibi_bias(slopes, torch.tensor([[length - 1]]), keys[None])[0, :, 0, :]  # (heads, K)
    low = float(bias.min())
    marks = [d for d in (-max_distance, max_distance) if abs(d) <= length - 1]
    return {
        "offset": offsets.numpy(),
        "offset_limits": np.array([-(length - 1), length - 1]),
        "t5_bidirectional": t5_relative_bucket(offsets, True, num_buckets, max_distance).numpy(),
        "t5_causal": t5_relative_bucket(offsets, False, num_buckets, max_distance).numpy(),
        "max_distance": np.array(marks, dtype=np.int64),
        "head": np.arange(1, n_heads + 1),
        "slope": slopes.double().numpy(),
        "key": keys.numpy(),
        "alibi_bias": bias.double().numpy(),
        "key_limits": np.array([0, length - 1]),
        "bias_limits": np.array([1.05 * low, -0.05 * low]),
    }


#: The context-extension methods of the explorer, rope_type to the name shown.
CONTEXT_METHODS = {"linear": "PI (linear)", "ntk": "NTK-aware", "dynamic": "dynamic NTK", "yarn": "YaRN",
                   "llama3": "Llama 3"}


def context_values(method: str, factor: float, head_dim: int = 128, base: float = 10000.0,
                   original_length: int = 4096) -> Values:
    """RoPE's pairs after a context-extension rule, from ``rope_frequencies`` (notebook 06).

    ``method`` is a rope_type of :data:`CONTEXT_METHODS`, ``factor`` s the extension: PI, NTK-aware,
    YaRN and Llama 3 are configured for s (Llama 3 with Llama 3.1's low/high frequency factors 1 and
    4); dynamic NTK (configured factor 1) is evaluated at the length s * L0, where it equals NTK-aware
    at factor s.

    The values, a dict of float64 arrays (``pair`` int):

    - ``pair`` (P,); ``wavelength`` (P,): 2 pi / theta_i of plain RoPE;
    - ``scaled_wavelength`` (P,): the same after the rule;
    - ``ratio`` (P,): new frequency / old frequency (1 = unchanged, 1/s = fully interpolated);
    - ``trained`` (1,): L0; ``target`` (1,): s * L0.
    """
    method = check_choice("method", method, tuple(CONTEXT_METHODS))
    factor = float(check_number("factor", factor, above=0))
    if factor < 1:
        raise ValueError(f"factor must be >= 1 (an extension), got {factor}")
    original_length = check_int("original_length", original_length)
    config: dict[str, Any] = {"rope_type": method, "rope_theta": base, "factor": factor,
                              "original_max_position_embeddings": original_length}
    seq_len = None
    if method == "linear" or method == "ntk":
        del config["original_max_position_embeddings"]
    elif method == "dynamic":
        config["factor"], seq_len = 1.0, round(factor * original_length)
    elif method == "llama3":
        config.update(low_freq_factor=1.0, high_freq_factor=4.0)
    inv_freq, _ = rope_frequencies(head_dim, config, seq_len)
    theta, _ = rope_frequencies(head_dim, {"rope_theta": base})
    return {
        "pair": np.arange(head_dim // 2),
        "wavelength": (2 * math.pi / theta.double()).numpy(),
        "scaled_wavelength": (2 * math.pi / inv_freq.double()).numpy(),
        "ratio": (inv_freq.double() / theta.double()).numpy(),
        "trained": np.array([original_length]),
        "target": np.array([factor * original_length]),
    }


# ----------------------------------------------------------------------------- the four explorers


def _plain_number(value: Any) -> str:
    """A number as a label: 10000 -> "10000", 1.5 -> "1.5", -3 -> "−3" (a typographic minus)."""
    text = str(int(value)) if isinstance(value, (int, np.integer)) or float(value).is_integer() else f"{float(value):g}"
    return text.replace("-", "−")


_SIN_POSITIONS = 64  # the positions the sinusoidal explorer's similarity panel shows (and p's range)
_ROPE_POSITIONS = 48  # the query and key positions of the RoPE explorer

SINUSOIDAL = Explorer(
    name="sinusoidal",
    title="Sinusoidal encoding",
    function=sinusoidal_values,
    params={"d_model": 64, "n_positions": _SIN_POSITIONS},
    controls=(Control("position", "position p", tuple(range(_SIN_POSITIONS)), 10),
              Control("base", "base", (10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0), 10000.0)),
    panels=(
        Panel("encoding", "The encoding PE(p): d_model = 64, one sine and one cosine per pair",
              "pair index i (dimensions 2i and 2i+1)", "PE(p)[2i], PE(p)[2i+1]",
              (Series("line", "sine", "pair", "sin(p θ_i)", markers=True),
               Series("line", "cosine", "pair", "cos(p θ_i)", style=1, markers=True)),
              (-0.5, 31.5), (-1.1, 1.1), legend="lower right", legend_columns=2),
        Panel("similarity", "Similarity of p to every position", "position q (tokens)", "cos(PE(p), PE(q))",
              (Series("line", "similarity", "position", "cos(PE(p), PE(q))"),
               Series("vline", x="marker", label="q = p", style=6)), (0, _SIN_POSITIONS - 1), (-1.05, 1.05),
              legend="lower right"),
        Panel("wavelength", "Wavelength of each pair", "pair index i", "wavelength (positions)",
              (Series("line", "wavelength", "pair", "2π / θ_i", markers=True),
               Series("hline", "shown", label=f"the {_SIN_POSITIONS} positions shown", style=3)),
              (-1, 32), (1.0, 1e7), yscale="log", legend="upper left"),
    ),
    mosaic=(("encoding", "encoding"), ("similarity", "wavelength")),
    figsize=(7.5, 5.8),
    call="sinusoidal_explorer",
    # 826 x 442 px at 96 dpi (720 x 557 at the static size): with its sliders, about 500 px of a screen
    live_figsize=(8.6, 4.6),
)

ROPE = Explorer(
    name="rope",
    title="RoPE",
    function=rope_values,
    params={"query": ROPE_QUERY, "key": ROPE_KEY, "base": 10000.0, "n_positions": _ROPE_POSITIONS},
    controls=(Control("query_position", "query position m", tuple(range(_ROPE_POSITIONS)), 5),
              Control("key_position", "key position n", tuple(range(_ROPE_POSITIONS)), 12)),
    panels=tuple(
        Panel(f"pair{i}", f"pair {i}: θ = {_plain_number(float(rope_inv_freq(len(ROPE_QUERY))[i]))}", f"coordinate {2 * i}",
              f"coordinate {2 * i + 1}",
              (Series("arrow", "q_rotated", label="query pair of R_m q" if i == 0 else None, row=i),
               Series("arrow", "k_rotated", label="key pair of R_n k" if i == 0 else None, style=1, row=i)),
              (-1.35, 1.35), (-1.35, 1.35), xticks=((-1, 0, 1), ("−1", "0", "1")), yticks=((-1, 0, 1), ("−1", "0", "1")),
              equal=True, legend="figure" if i == 0 else None)
        for i in range(len(ROPE_QUERY) // 2)
    ) + (
        Panel("score", "Score of the query at m with a key at every position n'",
              "key position minus query position n' − m (tokens)", "score (R_m q) · (R_n' k)",
              (Series("line", "score", "offset", "keys at every position n'"),
               Series("points", "marker_score", "marker_offset", "the key at n", style=1)),
              (1 - _ROPE_POSITIONS, _ROPE_POSITIONS - 1), "score_limits", legend="upper center", legend_columns=2),
    ),
    mosaic=(("pair0", "pair1", "pair2", "pair3"), ("score", "score", "score", "score")),
    figsize=(7.5, 5.2),
    call="rope_explorer",
)

RELATIVE = Explorer(
    name="relative",
    title="T5 buckets and ALiBi",
    function=relative_values,
    params={"num_buckets": 32, "max_distance": 128, "n_keys": 17},
    controls=(Control("n_heads", "heads", tuple(range(1, 17)), 8),
              Control("length", "length L", (8, 16, 32, 64, 128, 256), 64)),
    panels=(
        Panel("t5", "T5 bucket of each offset (32 buckets, max_distance 128)", "offset j − i (key minus query, tokens)",
              "bucket id",
              (Series("line", "t5_bidirectional", "offset", "bidirectional (encoder)"),
               Series("line", "t5_causal", "offset", "causal (decoder)", style=1),
               Series("vline", x="max_distance", label="± max_distance", style=6)),
              "offset_limits", (-1, 43), yticks=((0, 8, 16, 24, 32), ("0", "8", "16", "24", "32")),
              legend="upper center", legend_columns=3),
        Panel("slopes", "ALiBi slope of each head", "head h", "slope m_h",
              (Series("line", "slope", "head", "m_h", markers=True),), (0.5, 16.5), (0.002, 1.5),
              yscale="log", xticks=((1, 4, 8, 12, 16), ("1", "4", "8", "12", "16")), legend=None),
        Panel("alibi", "ALiBi bias of the last query", "key position j (tokens)", "bias −m_h (L−1−j)",
              (Series("lines", "alibi_bias", "key", "one line per head (slope m_h)", row_labels="slope",
                      row_format="m = {:.3g}"),),
              "key_limits", "bias_limits", legend="lower right", legend_columns=2),
    ),
    mosaic=(("t5", "t5"), ("slopes", "alibi")),
    figsize=(7.5, 6.0),
    call="relative_explorer",
)

_FACTORS = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0)
_RATIO_TICKS = tuple(2.0**-k for k in range(6))
CONTEXT = Explorer(
    name="context",
    title="Context extension",
    function=context_values,
    params={"head_dim": 128, "base": 10000.0, "original_length": 4096},
    controls=(Control("method", "method", tuple(CONTEXT_METHODS), "yarn", kind="menu",
                      option_labels=tuple(CONTEXT_METHODS.values())),
              Control("factor", "factor s", _FACTORS, 8.0, option_labels=tuple(f"×{_plain_number(f)}" for f in _FACTORS))),
    panels=(
        Panel("wavelength", "Wavelength of each pair against the context (head_dim 128, base 10000)", "pair index i",
              "wavelength (tokens)",
              (Series("line", "wavelength", "pair", "plain RoPE"),
               Series("line", "scaled_wavelength", "pair", "after the rule", style=1),
               Series("hline", "trained", label="trained context L0 = 4096", style=6),
               Series("hline", "target", label="extended context s·L0", style=3)),
              (-1, 64), (2.0, 4e6), yscale="log", legend="lower right"),
        Panel("ratio", "Rotation ratio per pair: new frequency / old", "pair index i", "new / old frequency",
              (Series("line", "ratio", "pair", "new / old", markers=True),),
              (-1, 64), (1 / 48, 1.4), yscale="log",
              yticks=(_RATIO_TICKS, ("1", "1/2", "1/4", "1/8", "1/16", "1/32")), legend=None),
    ),
    mosaic=(("wavelength",), ("ratio",)),
    figsize=(7.5, 6.4),
    call="context_explorer",
)

#: Every explorer, by name.
EXPLORERS: dict[str, Explorer] = {e.name: e for e in (SINUSOIDAL, ROPE, RELATIVE, CONTEXT)}


# ----------------------------------------------------------------------------- axes: limits and ticks


@functools.lru_cache(maxsize=1024)
def axis_ticks(low: float, high: float, scale: str) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """Tick values and labels for an axis from ``low`` to ``high``: the same for matplotlib and the site.

    Linear: matplotlib's ``MaxNLocator`` (at most 6 steps of 1, 2, 2.5 or 5 times a power of ten).
    Log: the powers of ten inside the range, every other one when there are more than 7, labelled
    "10^k". A label's minus is the typographic one.
    """
    if scale == "log":
        first, last = math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9)
        step = 1 if last - first < 7 else 2
        powers = list(range(first, last + 1, step))
        return tuple(10.0**k for k in powers), tuple(f"10^{k}".replace("-", "−") for k in powers)
    ticks = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
    span = 1e-9 * (high - low)
    values = tuple(float(t) + 0.0 for t in ticks if low - span <= t <= high + span)  # + 0.0: no negative zero
    return values, tuple(_plain_number(v) for v in values)


def _limits(values: Values, limits: tuple[float, float] | str) -> tuple[float, float]:
    low, high = (values[limits] if isinstance(limits, str) else limits)
    return float(low), float(high)


def panel_arrays(explorer: Explorer, values: Values) -> Values:
    """What the explorer draws at one setting: the value arrays its series read, and for every panel
    its limits and ticks (``"<panel>:xlim"``, ``"<panel>:xticks"`` = (values, labels), and y alike).

    Both renderers draw from this dict: :func:`explorer_figure` and the site's script (through
    :func:`export_explorer`).
    """
    drawn: Values = {}
    for panel in explorer.panels:
        for series in panel.series:
            for key in (series.x, series.y, series.row_labels):
                if key is not None:
                    drawn[key] = values[key]
        for axis, limits, scale, explicit in (("x", panel.xlim, panel.xscale, panel.xticks),
                                               ("y", panel.ylim, panel.yscale, panel.yticks)):
            low, high = _limits(values, limits)
            drawn[f"{panel.key}:{axis}lim"] = [low, high]
            ticks = (list(explicit[0]), list(explicit[1])) if explicit else axis_ticks(low, high, scale)
            drawn[f"{panel.key}:{axis}ticks"] = [list(ticks[0]), list(ticks[1])]
    return drawn


# ----------------------------------------------------------------------------- the static figure (matplotlib)


#: Line width of reference lines (hline, vline), in points.
REFERENCE_WIDTH = 1.2


def _style(index: int) -> dict[str, Any]:
    return {"color": COLORS[index % len(COLORS)], "linestyle": LINESTYLES[index % len(LINESTYLES)]}


def _tex(label: str) -> str:
    """An axis_ticks label for matplotlib: "10^−3" as mathtext."""
    if "^" not in label:
        return label
    mantissa, exponent = label.split("^")
    return f"${mantissa}^{{{exponent.replace('−', '-')}}}$"


def _draw_series(ax: Any, series: Series, arrays: Values) -> Any:
    """Draw one series on ``ax``; return the artist the legend shows for it."""
    style = _style(series.style)
    marker = MARKERS[series.style % len(MARKERS)]
    x = None if series.x is None else np.asarray(arrays[series.x])
    y = None if series.y is None else np.asarray(arrays[series.y])
    if series.kind == "line":
        return ax.plot(x, y, marker=marker if series.markers else None, markersize=3.5, **style)[0]
    if series.kind == "lines":
        drawn = [ax.plot(x, row, **_style(series.style + i))[0] for i, row in enumerate(y)]
        return drawn if series.row_labels else Line2D([], [], **style)
    if series.kind == "points":
        return ax.plot(x, y, linestyle="none", marker=marker, markersize=7, color=style["color"])[0]
    if series.kind == "arrow":
        tip = y[series.row]
        ax.annotate("", xy=(float(tip[0]), float(tip[1])), xytext=(0, 0),
                    arrowprops={"arrowstyle": "-|>", "color": style["color"], "linestyle": style["linestyle"],
                                "lw": mpl.rcParams["lines.linewidth"], "shrinkA": 0, "shrinkB": 0})
        return Line2D([], [], **style)
    line = ax.axhline if series.kind == "hline" else ax.axvline
    for value in (y if series.kind == "hline" else x):
        line(float(value), linewidth=REFERENCE_WIDTH, **style)
    return Line2D([], [], linewidth=REFERENCE_WIDTH, **style)


def explorer_figure(explorer: Explorer, state: Mapping[str, Any] | None = None) -> Figure:
    """The static figure of ``explorer`` at ``state`` (default: the controls' defaults), from its values.

    Drawn with the series' style (call ``setup_notebook`` or ``plotting.use_style`` first); at most
    ``plotting.MAX_WIDTH_IN`` wide. The caller shows or closes it.
    """
    fig = plt.figure(figsize=explorer.figsize)
    _draw(explorer, fig, _axes(explorer, fig), _full_state(explorer, state))
    return fig


def _full_state(explorer: Explorer, state: Mapping[str, Any] | None) -> dict[str, Any]:
    return explorer.default_state if state is None else {**explorer.default_state, **state}


def _axes(explorer: Explorer, fig: Figure) -> dict[str, Any]:
    """The explorer's panels on ``fig``: the axes with what no control changes (scales, titles, labels)."""
    axes = fig.subplot_mosaic([list(row) for row in explorer.mosaic])
    for panel in explorer.panels:
        ax = axes[panel.key]
        ax.set_xscale(panel.xscale)
        ax.set_yscale(panel.yscale)
        if panel.equal:
            ax.set_aspect("equal")
        ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.ylabel)
    return axes


def _draw(explorer: Explorer, fig: Figure, axes: Mapping[str, Any], state: Mapping[str, Any]) -> Values:
    """Draw ``explorer`` at ``state`` on the panels ``axes`` (from :func:`_axes`): the title, the series,
    limits, ticks and legends, in place of what an earlier call drew (a live explorer redraws this way).
    Returns what was drawn (:func:`panel_arrays`)."""
    arrays = panel_arrays(explorer, explorer.values(state))
    caption = [t for t in fig.texts if t.get_gid() == "caption"]
    if caption:  # a redraw: a new text, where the layout put the title
        caption[0].set_text(explorer.caption(state))
    else:
        title_size = FontProperties(size=mpl.rcParams["axes.titlesize"]).get_size_in_points()
        fig.suptitle(explorer.caption(state), fontsize=title_size + 1, fontweight="bold", gid="caption")
    for legend in list(fig.legends):
        legend.remove()
    figure_legend = []
    for panel in explorer.panels:
        ax = axes[panel.key]
        for artist in [*ax.lines, *ax.texts, *ax.patches, *ax.collections]:
            artist.remove()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        handles = []
        for s in (s for s in panel.series if _shown(s, arrays)):
            drawn = _draw_series(ax, s, arrays)
            if s.kind == "lines" and s.row_labels:
                handles += [(h, s.row_format.format(v)) for h, v in zip(drawn, arrays[s.row_labels])]
            elif s.label:
                handles.append((drawn, s.label))
        for axis in ("x", "y"):
            getattr(ax, f"set_{axis}lim")(*arrays[f"{panel.key}:{axis}lim"])
            ticks, labels = arrays[f"{panel.key}:{axis}ticks"]
            getattr(ax, f"set_{axis}ticks")(ticks, [_tex(t) for t in labels])
        ax.minorticks_off()
        if panel.legend == "figure":
            figure_legend += handles
        elif panel.legend and handles:
            ax.legend(*zip(*handles), loc=panel.legend, ncols=panel.legend_columns)
    if figure_legend:
        fig.legend(*zip(*figure_legend), loc="outside lower center", ncols=len(figure_legend))
    return arrays


def _shown(series: Series, arrays: Values) -> bool:
    """False for a reference line with no value at this setting (nothing drawn, no legend entry)."""
    key = series.x if series.kind == "vline" else series.y
    return len(arrays[key]) > 0


def _png(fig: Figure) -> bytes:
    """The figure as the inline backend shows it (PNG at the figure's dpi, tight bounding box)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


# ----------------------------------------------------------------------------- JupyterLab: ipywidgets


#: Resolution of a live explorer's figure: 96 px per inch, a screen's CSS pixel, so its text shows at its
#: point size (the 01 explorer, at its live size, fits one screen with its sliders). The static figure keeps 150 dpi.
LIVE_DPI = 96


class LiveFigure:
    """One explorer's figure, kept open and redrawn in place: the panels are made once, and a new setting
    replaces only what the controls change (see :func:`_draw`).

    ``png(state)`` is the figure at ``state`` as PNG at :data:`LIVE_DPI`. The text-heavy part of a
    drawing (frames, ticks, axis labels, panel titles) is drawn once and kept as a background while
    the limits and ticks stay the same; a new setting restores it and draws only the series, the
    legends and the figure's title over it (matplotlib's blitting). Constrained layout runs only when
    the widest tick label of an axis changes its length (digits are equally wide in the series' font). The PNG is written at zlib level 1 (several times faster than the default
    level; a local frontend does not miss the bytes). The figure is not pyplot's, so no notebook
    shows it by itself.
    """

    def __init__(self, explorer: Explorer, dpi: float = LIVE_DPI) -> None:
        self.explorer = explorer
        self.figure = Figure(figsize=explorer.live_figsize or explorer.figsize, dpi=dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        self.axes = _axes(explorer, self.figure)
        self._background: Any = None
        self._drawn_for: tuple | None = None  # the limits and ticks of the background
        self._laid_out_for: tuple | None = None  # the widest tick label of each axis, in characters

    def png(self, state: Mapping[str, Any] | None = None) -> bytes:
        arrays = _draw(self.explorer, self.figure, self.axes, _full_state(self.explorer, state))
        changing = [artist for panel in self.explorer.panels for artist in _changing(self.axes[panel.key])]
        changing += [*self.figure.legends, *self.figure.texts]
        for artist in changing:
            artist.set_animated(True)  # left out of canvas.draw(): drawn over the background below
        frame = tuple(_flat(arrays[key]) for key in arrays if key.endswith(("lim", "ticks")))
        if frame != self._drawn_for:
            labels = tuple(max(map(len, arrays[key][1]), default=0) for key in arrays if key.endswith("ticks"))
            self.figure.set_layout_engine("constrained" if labels != self._laid_out_for else "none")
            self.canvas.draw()
            self._background = self.canvas.copy_from_bbox(self.figure.bbox)
            self._drawn_for, self._laid_out_for = frame, labels
        else:
            self.canvas.restore_region(self._background)
        for artist in changing:
            self.figure.draw_artist(artist)
        buffer = io.BytesIO()
        PIL.Image.fromarray(np.asarray(self.canvas.buffer_rgba())).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


def _changing(ax: Any) -> list[Any]:
    """What :func:`_draw` puts on ``ax``, in drawing order: the series by z-order, then the legend."""
    drawn = sorted([*ax.lines, *ax.patches, *ax.collections, *ax.texts], key=lambda a: a.get_zorder())
    return drawn + ([ax.get_legend()] if ax.get_legend() is not None else [])


def _flat(value: Any) -> tuple:
    return tuple(float(v) if isinstance(v, (int, float, np.number)) else v for v in np.ravel(np.asarray(value, dtype=object)))


def explorer_widget(explorer: Explorer) -> Any:
    """The explorer as ipywidgets: one slider (or menu) per control above the figure.

    Moving a control recomputes the values with the library and redraws the figure in place
    (:class:`LiveFigure`) into the image widget, while the slider moves (``continuous_update``);
    ipywidgets sends a change only when the kernel has answered the previous one, so a fast drag
    is not queued up behind redraws. Returns the ``ipywidgets.VBox``.
    """
    import ipywidgets as widgets

    controls = {}
    for c in explorer.controls:
        options = [(c.text(v), v) for v in c.options]
        common = {"options": options, "value": c.default, "description": c.label,
                  "style": {"description_width": "initial"}}
        controls[c.name] = (widgets.Dropdown(**common) if c.kind == "menu" else
                            widgets.SelectionSlider(continuous_update=True, **common))
    figure = LiveFigure(explorer)
    image = widgets.Image(value=figure.png(), format="png", layout=widgets.Layout(max_width="100%", height="auto"))

    def redraw(_change: Any) -> None:
        image.value = figure.png({name: w.value for name, w in controls.items()})

    for w in controls.values():
        w.observe(redraw, names="value")
    row = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
    return widgets.VBox([row, image])


#: The live widget each explorer shows now, by name: showing an explorer again closes the earlier one.
_SHOWN: dict[str, Any] = {}


def show_explorer(explorer: Explorer, interactive: bool | None = None) -> None:
    """Show ``explorer`` in a notebook: sliders where a widget frontend is live, else the static figure.

    ``interactive=None`` decides as the progress bars do (``training.live_widgets``): widgets in a
    Jupyter kernel with ``ipywidgets`` installed, unless ``POSENC_DETERMINISTIC`` is set (``make
    execute`` and nbval set it), where the output is the static figure at the default setting,
    byte-identical run to run, and no widget state is written. The widget output also carries that
    figure (PNG) and the figure's text: a frontend without widgets (nbconvert's HTML, a notebook
    viewer, a saved notebook whose widget state was not kept: see tools/lab.py) shows the figure,
    and nbval, which skips the widget and the image, compares the same text.

    Showing an explorer again (re-running its cell) closes the widgets shown before, so the kernel
    keeps, and JupyterLab saves with the notebook, one live copy of each explorer.
    """
    from IPython.display import display

    from posenc_course.training import close_widgets, live_widgets

    fig = explorer_figure(explorer)
    try:
        if not (live_widgets() if interactive is None else interactive):
            display(fig)
            return
        if explorer.name in _SHOWN:
            close_widgets(_SHOWN.pop(explorer.name))
        widget = _SHOWN[explorer.name] = explorer_widget(explorer)
        bundle = widget._repr_mimebundle_()
        bundle.update({"image/png": base64.b64encode(_png(fig)).decode("ascii"), "text/plain": repr(fig)})
        display(bundle, raw=True)
    finally:
        plt.close(fig)


def sinusoidal_explorer(interactive: bool | None = None) -> None:
    """Notebook 01's explorer: the encoding of position p, its similarity to every position and the
    wavelength of each pair, as p and the base move (see :func:`show_explorer`)."""
    show_explorer(SINUSOIDAL, interactive)


def rope_explorer(interactive: bool | None = None) -> None:
    """Notebook 03's explorer: the rotated pairs of a query at m and a key at n, and the score as m and
    n move (see :func:`show_explorer`)."""
    show_explorer(ROPE, interactive)


def relative_explorer(interactive: bool | None = None) -> None:
    """Notebook 05's explorer: T5's buckets for a length and ALiBi's slopes and biases for a head count
    (see :func:`show_explorer`)."""
    show_explorer(RELATIVE, interactive)


def context_explorer(interactive: bool | None = None) -> None:
    """Notebook 06's explorer: each RoPE pair's wavelength and rotation ratio under PI, NTK-aware, dynamic
    NTK, YaRN and Llama 3 scaling, as the factor grows (see :func:`show_explorer`)."""
    show_explorer(CONTEXT, interactive)


# ----------------------------------------------------------------------------- the site: values on the control grid


def _listed(value: Any) -> Any:
    """Arrays as nested lists (ints stay ints)."""
    return value.tolist() if isinstance(value, np.ndarray) else value


def _fingerprint(value: Any) -> bytes:
    """Equal exactly when two drawn values are equal (an array's dtype, shape and bytes; else its repr)."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype.str}{value.shape}".encode() + value.tobytes()
    return repr(value).encode()


def _rounded(value: Any) -> Any:
    """JSON-ready, floats to 4 significant digits (a drawing needs no more; the site stays small)."""
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.4g}")
    return value


def _dash(index: int, linewidth: float) -> list[float]:
    """The dash pattern of plotting.LINESTYLES[index] in points, as matplotlib scales it (x line width)."""
    style = LINESTYLES[index]
    named = {"--": "lines.dashed_pattern", "-.": "lines.dashdot_pattern", ":": "lines.dotted_pattern"}
    if style == "-":
        return []
    pattern = mpl.rcParams[named[style]] if isinstance(style, str) else style[1]
    return [round(p * linewidth, 2) for p in pattern]


def export_explorer(explorer: Explorer) -> dict[str, Any]:
    """Everything the site's script needs to draw ``explorer`` at every point of its control grid.

    The values are computed by the library at every combination of the controls' options and
    stored once per distinct array: each key lists the controls it depends on (found by comparing
    the arrays) and its arrays in row-major order over those controls' options, so the script finds
    the array of a setting by index arithmetic alone. Floats keep 4 significant digits.

    Returns a JSON-ready dict: name, title, caption parts (controls with options and labels), the
    panels and mosaic, the figure size, the style (colours, dash patterns in points, markers, line
    width), the params of the values function, and ``values``: key -> {"controls": [...], "arrays": [...]}.
    """
    with mpl.rc_context():  # the series' line widths and dash patterns, whatever the caller's style
        use_style()
        linewidth = float(mpl.rcParams["lines.linewidth"])
        dashes = [_dash(i, linewidth) for i in range(len(LINESTYLES))]
    names = [c.name for c in explorer.controls]
    shape = tuple(len(c.options) for c in explorer.controls)
    drawn = [panel_arrays(explorer, explorer.values(dict(zip(names, state))))
             for state in itertools.product(*(c.options for c in explorer.controls))]  # row-major
    values = {}
    for key in drawn[0]:
        exact = np.empty(len(drawn), dtype=object)
        exact[:] = [_fingerprint(d[key]) for d in drawn]
        exact = exact.reshape(shape)
        depends = [axis for axis in range(len(shape)) if not (exact == np.take(exact, [0], axis=axis)).all()]
        chosen = np.arange(len(drawn)).reshape(shape)[tuple(slice(None) if axis in depends else 0
                                                             for axis in range(len(shape)))]
        values[key] = {"controls": [names[axis] for axis in depends],
                       "arrays": [_rounded(_listed(drawn[i][key])) for i in np.ravel(chosen)]}
    return {
        "name": explorer.name,
        "title": explorer.title,
        "size": list(explorer.figsize),
        "mosaic": [list(row) for row in explorer.mosaic],
        "controls": [{"name": c.name, "label": c.label, "kind": c.kind, "options": list(c.options),
                      "labels": [c.text(v) for v in c.options], "default": c.options.index(c.default)}
                     for c in explorer.controls],
        "panels": [{"key": p.key, "title": p.title, "xlabel": p.xlabel, "ylabel": p.ylabel, "xscale": p.xscale,
                    "yscale": p.yscale, "equal": p.equal, "legend": p.legend, "legend_columns": p.legend_columns,
                    "series": [{"kind": s.kind, "x": s.x, "y": s.y, "label": s.label, "style": s.style,
                                "markers": s.markers, "row": s.row} for s in p.series]}
                   for p in explorer.panels],
        "style": {"colors": COLORS, "dashes": dashes,
                  "markers": MARKERS, "linewidth": linewidth, "reference_width": REFERENCE_WIDTH},
        "params": {k: _rounded(v) for k, v in explorer.params.items()},
        "values": values,
    }
