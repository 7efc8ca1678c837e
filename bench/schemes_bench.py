"""Time and memory of every position scheme inside one attention layer, as the sequence grows.

One call = the scheme's ``add_to_embeddings`` (a no-op for schemes of other kinds) followed by
``MultiHeadAttention.forward`` with that scheme, batch 1, under ``torch.inference_mode``. Two
settings: bidirectional (an encoder, no mask) and causal (a decoder, ``causal=True``). A scheme
is run only in the settings it is meant for: the compact ALiBi form is exact only under a
causal mask; Swin, PEG and the 2-D schemes belong to (bidirectional) vision encoders.

Memory, per (scheme, setting, length):

* resident: bytes the scheme still holds after it is built and has run one forward (its
  parameters, buffers and caches such as RoPE's cos/sin table), measured with the profiler
  from before the scheme is built to after that first forward;
* forward peak: the largest number of bytes held by tensors allocated during one later
  forward (activations, bias tables, masks, the output), see :func:`bench.common.allocation_profile`.

The figure plots their sum. What grows as L is a table or activation per position; what grows
as L^2 is a (heads, L, L) bias or an (L, L) mask materialised in memory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import torch
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from torch import Tensor

from posenc_lib.attention import MultiHeadAttention
from posenc_course.plotting import COLORS, LINESTYLES, MARKERS, use_style
from posenc_lib.registry import SCHEMES, build_scheme
from posenc_lib.scheme import PositionScheme

from .common import Timing, allocation_profile, format_bytes, format_seconds, interleaved_times

__all__ = [
    "LENGTHS",
    "SETTINGS",
    "SchemeSpec",
    "SPECS",
    "grid_shape",
    "discover_schemes",
    "SchemeResult",
    "prepare",
    "scheme_memory",
    "run_schemes_bench",
    "growth_exponent",
    "schemes_markdown",
    "schemes_figure",
]

LENGTHS: tuple[int, ...] = (128, 256, 512, 1024, 2048)
SETTINGS: tuple[str, ...] = ("bidirectional", "causal")
BOTH, ENCODER, DECODER = SETTINGS, ("bidirectional",), ("causal",)


def grid_shape(length: int) -> tuple[int, int]:
    """The most square (rows, cols) grid with rows * cols = length and rows <= cols (length a power of two)."""
    if length < 1 or length & (length - 1):
        raise ValueError(f"length must be a power of two to form a patch grid, got {length}")
    rows = 1 << (length.bit_length() - 1) // 2
    return rows, length // rows


@dataclass(frozen=True)
class SchemeSpec:
    """One benchmarked scheme: a name of :func:`~posenc_lib.registry.build_scheme` and its options."""

    name: str
    scheme: str  # the factory's name, e.g. "alibi"
    settings: tuple[str, ...]
    options: Callable[[bool], dict[str, Any]] = lambda causal: {}  # constructor keywords for causal or not
    on_grid: bool = False  # built on the most square patch grid of the length (grid_shape)

    def build(self, length: int, causal: bool, d_model: int, n_heads: int) -> PositionScheme:
        """The scheme for a sequence of ``length`` tokens (a table of that length, or its grid)."""
        grid = grid_shape(length) if self.on_grid else None
        return build_scheme(self.scheme, d_model, n_heads, max_len=length, grid=grid, **self.options(causal))


SPECS: tuple[SchemeSpec, ...] = (
    SchemeSpec("NoPosition", "none", BOTH),
    SchemeSpec("SinusoidalPE", "sinusoidal", BOTH),
    SchemeSpec("LearnablePE", "learnable", BOTH),
    SchemeSpec("RotaryPE half", "rope", BOTH, lambda causal: {"layout": "half"}),
    SchemeSpec("RotaryPE interleaved", "rope", BOTH, lambda causal: {"layout": "interleaved"}),
    SchemeSpec("T5RelativeBias", "t5", BOTH, lambda causal: {"bidirectional": not causal}),
    SchemeSpec("ALiBi full (h, L, L)", "alibi", BOTH, lambda causal: {"causal": False}),
    SchemeSpec("ALiBi compact (h, 1, L)", "alibi", DECODER, lambda causal: {"causal": True}),
    SchemeSpec("Transformer-XL (relative shift)", "transformer-xl", BOTH),
    SchemeSpec("SwinRelativeBias", "swin", ENCODER, on_grid=True),
    SchemeSpec("PEG (conv)", "peg", ENCODER, on_grid=True),
    SchemeSpec("SinCos2DPE", "sincos-2d", ENCODER, on_grid=True),
    SchemeSpec("Learnable2DPE", "learnable-2d", ENCODER, on_grid=True),
    SchemeSpec("AxialRoPE2D", "axial-rope-2d", ENCODER, on_grid=True),
    SchemeSpec("MixedRoPE2D", "mixed-rope-2d", ENCODER, on_grid=True),
)


def discover_schemes() -> tuple[list[SchemeSpec], list[str]]:
    """The benchmarked schemes the library's factory provides now, and a note for each one it lacks."""
    found = [spec for spec in SPECS if spec.scheme in SCHEMES]
    missing = [f"{spec.name}: build_scheme({spec.scheme!r}) not available" for spec in SPECS if spec.scheme not in SCHEMES]
    return found, missing


@dataclass(frozen=True)
class SchemeResult:
    """One (scheme, setting, length) measurement."""

    scheme: str
    kind: str
    setting: str
    length: int
    timing: Timing
    resident_bytes: int
    forward_peak_bytes: int

    @property
    def memory_bytes(self) -> int:
        return self.resident_bytes + self.forward_peak_bytes


def prepare(
    spec: SchemeSpec, length: int, setting: str, d_model: int, n_heads: int
) -> tuple[Callable[[], Tensor], str, int]:
    """Build one scheme into an attention layer and run it once.

    Returns the forward to measure (a zero-argument function), the scheme's kind, and its resident
    bytes: what building the scheme and running that first forward left allocated.
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {list(SETTINGS)}, got {setting!r}")
    causal = setting == "causal"
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model, n_heads)
    x = torch.randn(1, length, d_model, generator=torch.Generator().manual_seed(length))
    positions = torch.arange(length)[None]

    def forward() -> Tensor:
        with torch.inference_mode():
            return mha(mha.scheme.add_to_embeddings(x, positions), positions, causal=causal)

    def build_and_run() -> None:
        mha.scheme = spec.build(length, causal, d_model, n_heads)
        forward()

    resident = allocation_profile(build_and_run)[1]
    return forward, mha.scheme.kind, resident


def scheme_memory(spec: SchemeSpec, length: int, setting: str, d_model: int, n_heads: int) -> tuple[int, int]:
    """(resident, forward peak) bytes of one scheme at one length and setting."""
    forward, _, resident = prepare(spec, length, setting, d_model, n_heads)
    return resident, allocation_profile(forward)[0]  # prepare() already ran the warm-up forward


def run_schemes_bench(
    lengths: Sequence[int] = LENGTHS,
    d_model: int = 128,
    n_heads: int = 4,
    rounds: int = 3,
    threads: int = 2,
    min_block_s: float = 0.02,
    log: Callable[[str], None] = print,
    max_other_cores: float | None = None,
) -> tuple[list[SchemeResult], list[str]]:
    """Measure every available scheme at every length and setting; also return the notes on missing ones."""
    found, missing = discover_schemes()
    results = []
    for setting in SETTINGS:
        for length in lengths:
            calls, memory, kinds = {}, {}, {}
            for spec in found:
                if setting in spec.settings:
                    forward, kinds[spec.name], resident = prepare(spec, length, setting, d_model, n_heads)
                    calls[spec.name], memory[spec.name] = forward, (resident, allocation_profile(forward)[0])
            times = interleaved_times(calls, rounds, threads, min_block_s, max_other_cores=max_other_cores)
            for name, t in times.items():
                results.append(SchemeResult(name, kinds[name], setting, length, t, *memory[name]))
            log(f"schemes {setting} L={length}: " + ", ".join(
                f"{name} {format_seconds(t.median)} {format_bytes(sum(memory[name]))}" for name, t in times.items()))
    return results, missing


def growth_exponent(lengths: Sequence[int], values: Sequence[float]) -> float:
    """Slope of log(value) against log(length) over the last doubling-or-more step (1 = grows as L, 2 = as L^2)."""
    if len(lengths) < 2:
        return math.nan
    (l0, l1), (v0, v1) = lengths[-2:], values[-2:]
    if v0 <= 0 or v1 <= 0:
        return math.nan
    return math.log(v1 / v0) / math.log(l1 / l0)


def _series(results: Sequence[SchemeResult], setting: str, value: Callable[[SchemeResult], float]) -> dict[str, tuple[list[int], list[float]]]:
    series: dict[str, tuple[list[int], list[float]]] = {}
    for r in sorted((r for r in results if r.setting == setting), key=lambda r: r.length):
        lengths, values = series.setdefault(r.scheme, ([], []))
        lengths.append(r.length)
        values.append(value(r))
    return series


def schemes_markdown(results: Sequence[SchemeResult], d_model: int, n_heads: int) -> str:
    """Per setting: a time table and a memory table (rows = schemes, columns = lengths) with growth exponents."""
    kinds = {r.scheme: r.kind for r in results}
    parts = []
    for setting in SETTINGS:
        rows = [r for r in results if r.setting == setting]
        if not rows:
            continue
        lengths = sorted({r.length for r in rows})
        head = "| scheme | kind | " + " | ".join(f"L={n}" for n in lengths) + " | exponent |"
        rule = "|---|---|" + "---:|" * (len(lengths) + 1)
        for title, value, fmt in (
            ("time per forward (median over rounds)", lambda r: r.timing.median, format_seconds),
            ("memory: resident + forward peak", lambda r: r.memory_bytes, format_bytes),
        ):
            lines = [head, rule]
            for name, (ls, vs) in _series(rows, setting, value).items():
                cells = [fmt(v) for v in vs]
                lines.append(f"| {name} | {kinds[name]} | " + " | ".join(cells) + f" | {growth_exponent(ls, vs):.2f} |")
            parts.append(f"### {setting}: {title}\n\n" + "\n".join(lines))
        resident = [r for r in rows if r.length == lengths[-1]]
        lines = ["| scheme | resident | forward peak |", "|---|---:|---:|"] + [
            f"| {r.scheme} | {format_bytes(r.resident_bytes)} | {format_bytes(r.forward_peak_bytes)} |" for r in resident
        ]
        parts.append(f"### {setting}: the memory at L={lengths[-1]}, split\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def schemes_figure(results: Sequence[SchemeResult], d_model: int, n_heads: int, path: str | os.PathLike) -> None:
    """Log-log figure, time (top) and memory (bottom) against length, one column per setting; saved to ``path`` as PNG.

    Drawn on a bare ``matplotlib.figure.Figure`` inside ``rc_context``: no pyplot backend, and the
    caller's matplotlib settings are left as they were.
    """
    settings = [s for s in SETTINGS if any(r.setting == s for r in results)]
    names = list(dict.fromkeys(r.scheme for r in results))
    lengths = sorted({r.length for r in results})
    style = {name: _style(i) | {"label": name} for i, name in enumerate(names)}
    rows = (("time", "time per forward (s)", lambda r: r.timing.median),
            ("memory", "memory: resident + forward peak (MiB)", lambda r: r.memory_bytes / 2**20))
    with matplotlib.rc_context():
        use_style()
        fig = Figure(figsize=(5.2 * len(settings) + 2.6, 8.0))
        axes = fig.subplots(2, len(settings), squeeze=False, sharex=True)
        for col, setting in enumerate(settings):
            for row, (what, ylabel, value) in enumerate(rows):
                ax = axes[row][col]
                series = _series(results, setting, value)
                for name, (ls, vs) in series.items():
                    ax.plot(ls, vs, **style[name])
                _guides(ax, series)
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_xticks(lengths, [str(n) for n in lengths])
                ax.minorticks_off()
                ax.set_title(f"{setting}: {what}")
                ax.set_ylabel(ylabel)
                if row == len(rows) - 1:
                    ax.set_xlabel("sequence length L (tokens)")
        fig.legend(handles=[Line2D([], [], **style[name]) for name in names], loc="outside right center", fontsize=8)
        fig.suptitle(f"Position schemes inside one attention layer (d_model={d_model}, {n_heads} heads, batch 1, CPU)")
        fig.savefig(path, format="png")


def _style(i: int) -> dict:
    """Line i's colour, dash and marker. Past the 8 of each, the three are shifted by different amounts, so
    any two lines differ in at least two of the three (always in dash or marker: black-and-white safe)."""
    n = len(COLORS)
    shift = (4, 2, 3) if i >= n else (0, 0, 0)
    return dict(color=COLORS[(i + shift[0]) % n], linestyle=LINESTYLES[(i + shift[1]) % n],
                marker=MARKERS[(i + shift[2]) % n], markersize=5)


def _guides(ax, series: dict[str, tuple[list[int], list[float]]]) -> None:
    """Thin grey lines ∝ L and ∝ L², labelled at their right end, through the smallest first value: slopes to read against."""
    first = [(ls[0], vs[0]) for ls, vs in series.values() if vs]
    if not first:
        return
    l0 = min(l for l, _ in first)
    v0 = min(v for l, v in first if l == l0)
    l1 = max(ls[-1] for ls, _ in series.values())
    for power, label in ((1, "∝ L"), (2, "∝ L²")):
        end = v0 * (l1 / l0) ** power
        ax.plot([l0, l1], [v0, end], color="0.6", linestyle="-", linewidth=0.8, zorder=0)
        ax.annotate(label, (l1, end), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8, color="0.4")
