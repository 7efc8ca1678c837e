"""Multimodal RoPE (M-RoPE, Qwen2-VL): each rotary pair turns with one of three coordinates (time, height, width).

A token of a video (or image) has three coordinates: its frame t, its row h and its column w. M-RoPE
splits the d/2 rotary pairs of a head among the three axes and turns pair i by ``p_i * theta_i``,
where ``p_i`` is the token's coordinate on the axis pair i belongs to, and theta_i is the plain RoPE
frequency of that pair. A score between tokens then depends on the three offsets (dt, dh, dw), each
seen through its own pairs. A text token gets t = h = w = its index, and then every pair turns by
``m * theta_i``: M-RoPE reduces to 1-D RoPE, whatever the assignment of pairs to axes.

Which pair reads which axis, with ``mrope_section = (s_t, s_h, s_w)`` (s_t + s_h + s_w = d/2):

* sectioned (Qwen2-VL, Qwen2.5-VL): the first s_t pairs read t, the next s_h read h, the last s_w
  read w. So time gets the fastest frequencies and width the slowest.
* interleaved (Qwen3-VL, ``mrope_interleaved=True``, the name of Hugging Face's config key): pairs cycle
  t, h, w, t, h, w, ...; pair i reads h when i % 3 == 1 and
  i < 3 s_h, w when i % 3 == 2 and i < 3 s_w, t otherwise. Every axis gets fast and slow
  frequencies alike.

This is the order in which pairs are given to the axes, not the pair layout (``layout``: "half" or
"interleaved", which dimensions form a pair): posenc_lib 0.3's ``interleaved=`` flag is therefore
called ``mrope_interleaved=`` (0.3's name still works, with a DeprecationWarning, until 0.4).

The cos and sin tables have the shape and meaning of :func:`~posenc_lib.rotary.rope.rope_cos_sin`'s
(half width, one column per pair), so :func:`~posenc_lib.rotary.rope.apply_rope` rotates
with them unchanged, in either layout.

Where the coordinates come from (:func:`mrope_positions`, Hugging Face's ``get_rope_index``): text
tokens count 0, 1, 2, ...; a vision block that starts at index s gives its token (f, r, c) the
coordinates (s + f, s + r, s + c); the text after it resumes at s + max(H, W) (the spatial extent of
the block, transformers 5.x; the original Qwen2-VL code resumed at 1 + the block's largest
coordinate, which differs for videos with more frames than max(H, W)).

Shapes:
    positions (coordinates)  (3, batch, seq) or (3, seq) integer: rows t, h, w
    inv_freq                 (d // 2,) float
    cos, sin                 (batch, seq, d // 2) or (seq, d // 2)
    coordinates table        (n_tokens, 3) integer: one (t, h, w) row per token of a fixed layout
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import warnings

import torch
from torch import Tensor

from posenc_lib.checks import (
    check_choice,
    check_even_int,
    check_float_dtype,
    check_float_tensor,
    check_int,
    check_integer_tensor,
    check_number,
    check_position_range,
    check_positions,
    is_int,
)
from posenc_lib.rotary.rope import LAYOUTS, Layout, apply_rope_qk, rope_cos_sin, rope_inv_freq
from posenc_lib.scheme import PositionScheme

__all__ = ["mrope_axes", "default_mrope_section", "mrope_cos_sin", "mrope_positions", "MRoPE"]


def _renamed_flag(mrope_interleaved: bool, interleaved: bool | None, stacklevel: int) -> bool:
    """``mrope_interleaved``, or 0.3's name for it, ``interleaved``, with a DeprecationWarning at the caller's line."""
    if interleaved is None:
        return mrope_interleaved
    warnings.warn("interleaved= is now called mrope_interleaved= (Hugging Face's config key; layout= is the pair "
                  "layout); interleaved= will be removed in posenc_lib 0.4", DeprecationWarning, stacklevel=stacklevel + 1)
    return interleaved

def mrope_axes(
    n_pairs: int, mrope_section: Sequence[int], mrope_interleaved: bool = False, *, interleaved: bool | None = None
) -> Tensor:
    """The axis each rotary pair reads: (n_pairs,) int64, 0 = t, 1 = h, 2 = w.

    Args:
        n_pairs: rotary pairs per head (head_dim // 2).
        mrope_section: (s_t, s_h, s_w), pairs per axis, summing to n_pairs.
        mrope_interleaved: Qwen3-VL's cycling order instead of Qwen2-VL's consecutive sections (module
            docstring). ``interleaved``: 0.3's name for it (deprecated).

    Raises ValueError naming ``mrope_section`` unless it is three non-negative ints that sum to
    n_pairs and (mrope_interleaved) that the cycling order can honour: 3 s_h <= n_pairs + 1, 3 s_w <= n_pairs.
    """
    mrope_interleaved = _renamed_flag(mrope_interleaved, interleaved, stacklevel=2)
    check_int("n_pairs", n_pairs)
    section = _check_section(mrope_section, n_pairs)
    if not mrope_interleaved:
        axes = [axis for axis, count in enumerate(section) for _ in range(count)]
    else:  # plain Python, so that torch.compile sees a constant
        axes = [1 if i % 3 == 1 and i < 3 * section[1] else 2 if i % 3 == 2 and i < 3 * section[2] else 0
                for i in range(n_pairs)]
        counts = [axes.count(axis) for axis in range(3)]
        if counts != section:
            raise ValueError(
                f"mrope_section = {section} cannot be interleaved over {n_pairs} pairs (t, h, w cycling gives "
                f"{counts} pairs per axis); needs 3 * mrope_section[1] <= {n_pairs + 1} and 3 * mrope_section[2] <= {n_pairs}"
            )
    return torch.tensor(axes, dtype=torch.int64)


def default_mrope_section(n_pairs: int, mrope_interleaved: bool = False, *, interleaved: bool | None = None) -> list[int]:
    """The published split of the pairs scaled to n_pairs: Qwen2-VL's 16:24:24 (s_h = s_w = 3n // 8), or
    Qwen3-VL's 24:20:20 for the interleaved order (s_h = s_w = 5n // 16); t takes the rest.

    For 64 pairs (head_dim 128) these are exactly (16, 24, 24) and (24, 20, 20). ``interleaved``: 0.3's
    name for ``mrope_interleaved`` (deprecated).
    """
    mrope_interleaved = _renamed_flag(mrope_interleaved, interleaved, stacklevel=2)
    check_int("n_pairs", n_pairs)
    spatial = 5 * n_pairs // 16 if mrope_interleaved else 3 * n_pairs // 8
    return [n_pairs - 2 * spatial, spatial, spatial]


def mrope_cos_sin(
    positions: Tensor,
    inv_freq: Tensor,
    mrope_section: Sequence[int],
    mrope_interleaved: bool = False,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
    *,
    interleaved: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """Half-width cos and sin of M-RoPE's angles: pair i turns by ``positions[axis(i)] * inv_freq[i]``.

    Args:
        positions: (3, batch, seq) or (3, seq) integer coordinates, rows (t, h, w).
        inv_freq: (n_pairs,) frequencies theta_i, e.g. ``rope_inv_freq(head_dim, base)``.
        mrope_section: (s_t, s_h, s_w) pairs per axis, summing to n_pairs (:func:`mrope_axes`).
        mrope_interleaved: Qwen3-VL's cycling assignment instead of Qwen2-VL's sections.
        attention_factor: multiplies cos and sin (as in :func:`rope_cos_sin`).
        dtype: dtype of the result (angles in float32, or float64 for float64).
        interleaved: 0.3's name for ``mrope_interleaved`` (deprecated).

    Returns:
        ``(cos, sin)``, each (batch, seq, n_pairs) or (seq, n_pairs): the tables
        :func:`~posenc_lib.rotary.rope.apply_rope` takes. Each column is exactly the
        column of :func:`rope_cos_sin` for the positions of its axis (the same float32 products).
    """
    mrope_interleaved = _renamed_flag(mrope_interleaved, interleaved, stacklevel=2)
    check_integer_tensor("positions", positions)
    if positions.dim() not in (2, 3) or positions.shape[0] != 3:
        raise ValueError(
            f"positions must have shape (3, batch, seq) or (3, seq): one row per axis (t, h, w), "
            f"got {tuple(positions.shape)}"
        )
    check_float_tensor("inv_freq", inv_freq)
    if inv_freq.dim() != 1:
        raise ValueError(f"inv_freq must have shape (n_pairs,), got {tuple(inv_freq.shape)}")
    axes = mrope_axes(inv_freq.numel(), mrope_section, mrope_interleaved).to(positions.device)
    per_axis = positions.reshape(3 * positions.shape[1], -1) if positions.dim() == 3 else positions
    cos, sin = rope_cos_sin(per_axis, inv_freq, attention_factor, dtype)  # (3 * batch | 3, seq, n_pairs)
    cos, sin = cos.unflatten(0, (3, -1)), sin.unflatten(0, (3, -1))  # (3, batch | 1, seq, n_pairs)
    index = axes.expand(1, *cos.shape[1:])  # column i from the table of its axis
    cos, sin = cos.gather(0, index)[0], sin.gather(0, index)[0]
    return (cos, sin) if positions.dim() == 3 else (cos[0], sin[0])


def mrope_positions(frames: int, height: int, width: int, n_text_before: int = 0, n_text_after: int = 0) -> Tensor:
    """(t, h, w) coordinates of text, then a video grid, then text, as Hugging Face's Qwen2-VL ``get_rope_index``.

    Args:
        frames, height, width: the grid of vision tokens the language model sees (after any
            spatial merge: Hugging Face's ``video_grid_thw`` divided by ``spatial_merge_size``).
            One frame is an image.
        n_text_before: text tokens before the grid: coordinates (m, m, m), m = 0 .. n_text_before - 1.
        n_text_after: text tokens after it: they resume at s + max(height, width), s = n_text_before.

    Returns:
        (n_text_before + frames * height * width + n_text_after, 3) int64, one (t, h, w) row per
        token in sequence order; the grid frame by frame, each frame row by row: token (f, r, c)
        gets (s + f, s + r, s + c).
    """
    for name, value in (("frames", frames), ("height", height), ("width", width)):
        check_int(name, value)
    check_int("n_text_before", n_text_before, minimum=0)
    check_int("n_text_after", n_text_after, minimum=0)
    start = n_text_before
    grid = torch.stack(
        torch.meshgrid(torch.arange(frames), torch.arange(height), torch.arange(width), indexing="ij"), dim=-1
    ).reshape(-1, 3)
    resume = start + max(height, width)
    before = torch.arange(n_text_before).unsqueeze(-1).expand(-1, 3)
    after = torch.arange(resume, resume + n_text_after).unsqueeze(-1).expand(-1, 3)
    return torch.cat((before, grid + start, after))


class MRoPE(PositionScheme):
    """M-RoPE as a position scheme, for sequences of one fixed token layout (a table of coordinates).

    The attention layers pass 1-D positions (token indices); this scheme looks each index up in its
    (n_tokens, 3) table of (t, h, w) coordinates and rotates q and k by :func:`mrope_cos_sin`. So
    :class:`~posenc_lib.models.TinyTransformer` and :class:`~posenc_lib.attention.MultiHeadAttention`
    run it unchanged, KV cache included (a decode step's index is looked up like any other).

    Args:
        head_dim: width of one head (even); every pair rotates.
        coordinates: (n_tokens, 3) integer table, row j = the (t, h, w) of token j, e.g. from
            :func:`mrope_positions`. Kept as a non-persistent buffer (a constant of the layout, not a
            parameter: never in ``state_dict``; ``.to(device)`` moves it).
        mrope_section: (s_t, s_h, s_w), pairs per axis, summing to head_dim // 2 (Qwen2-VL: (16, 24, 24)
            for head_dim 128; Qwen3-VL interleaved: (24, 20, 20)). ``None``: those published
            proportions scaled to this head (:func:`default_mrope_section`).
        base: rope_theta (Qwen2-VL: 1e6).
        mrope_interleaved: Qwen3-VL's cycling assignment instead of Qwen2-VL's sections.
        layout: the pairing of dims, "half" (Hugging Face's Qwen models) or "interleaved".

    Positions must index the table: 0 <= position < n_tokens (checked in eager mode). The frequencies
    are a non-persistent buffer ``inv_freq`` (head_dim // 2,) float32, as :class:`~posenc_lib.rotary.rope.RotaryPE`'s
    (float32 in a module cast to 16 bits too); a model computes cos and sin once per forward pass
    (:meth:`rotation_tables`) for all its layers.
    """

    kind = "rotary"
    float32_buffers = ("inv_freq",)

    def __init__(
        self,
        head_dim: int,
        coordinates: Tensor,
        mrope_section: Sequence[int] | None = None,
        base: float = 10000.0,
        mrope_interleaved: bool = False,
        layout: Layout = "half",
        *,
        interleaved: bool | None = None,
    ):
        super().__init__()
        mrope_interleaved = _renamed_flag(mrope_interleaved, interleaved, stacklevel=2)
        check_even_int("head_dim", head_dim)
        check_integer_tensor("coordinates", coordinates)
        if coordinates.dim() != 2 or coordinates.shape[1] != 3 or coordinates.shape[0] < 1:
            raise ValueError(f"coordinates must have shape (n_tokens, 3): one (t, h, w) row per token, "
                             f"got {tuple(coordinates.shape)}")
        if not isinstance(mrope_interleaved, bool):
            raise TypeError(f"mrope_interleaved must be a bool, got {type(mrope_interleaved).__name__}")
        check_choice("layout", layout, LAYOUTS)
        self.base = check_number("base", base, above=1)
        self.head_dim, self.layout, self.mrope_interleaved = head_dim, layout, mrope_interleaved
        if mrope_section is None:
            mrope_section = default_mrope_section(head_dim // 2, mrope_interleaved)
        self.mrope_section = _check_section(mrope_section, head_dim // 2)
        mrope_axes(head_dim // 2, self.mrope_section, mrope_interleaved)  # a section the cycling order can honour
        self.register_buffer("coordinates", coordinates.to(torch.int64), persistent=False)  # the layout's constants
        self.register_buffer("inv_freq", rope_inv_freq(head_dim, self.base), persistent=False)

    @property
    def interleaved(self) -> bool:
        """0.3's name for ``mrope_interleaved`` (deprecated: removed in posenc_lib 0.4)."""
        warnings.warn("MRoPE.interleaved is now called MRoPE.mrope_interleaved; interleaved will be removed in "
                      "posenc_lib 0.4", DeprecationWarning, stacklevel=2)
        return self.mrope_interleaved

    def extra_repr(self) -> str:
        order = "mrope_interleaved" if self.mrope_interleaved else "sectioned"
        return (f"head_dim={self.head_dim}, n_tokens={self.coordinates.shape[0]}, mrope_section={self.mrope_section}, "
                f"{order}, base={self.base:g}, layout={self.layout!r}")

    def cos_sin(self, positions: Tensor, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
        """Half-width (cos, sin) for token indices ``positions`` (batch, seq): each (batch, seq, head_dim // 2)."""
        check_integer_tensor("positions", positions)
        if positions.dim() != 2:
            raise ValueError(f"positions must have shape (batch, seq) (token indices), got {tuple(positions.shape)}")
        check_float_dtype("dtype", dtype)
        n = self.coordinates.shape[0]
        check_position_range("positions", positions, n, f"the rows of the {n}-token coordinate table")
        coords = self.coordinates.to(positions.device)[positions].movedim(-1, 0)  # (3, batch, seq)
        return mrope_cos_sin(coords, self.inv_freq, self.mrope_section, self.mrope_interleaved, 1.0, dtype)

    def rotation_tables(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """cos and sin at token indices ``positions`` (batch|1, seq) for every layer of one forward pass: :meth:`cos_sin`."""
        return self.cos_sin(positions, dtype)

    def rotate_qk(
        self, q: Tensor, k: Tensor, positions: Tensor, tables: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        """Rotate q (batch, heads, seq, head_dim) and k (batch, kv_heads, seq, head_dim) at token indices (batch|1, seq).

        ``tables``: :meth:`rotation_tables` of these positions, computed once for all layers; None computes them here.
        """
        check_float_tensor("q", q)
        if q.dim() != 4 or q.shape[-1] != self.head_dim:
            raise ValueError(f"q must have shape (batch, heads, seq, head_dim={self.head_dim}), got {tuple(q.shape)}")
        check_positions(positions, q.shape[0], q.shape[2])
        cos, sin = self.cos_sin(positions, q.dtype) if tables is None else tables
        return apply_rope_qk(q, k, cos, sin, self.layout)


def _check_section(mrope_section: Any, n_pairs: int) -> list[int]:
    """mrope_section as a list of three ints >= 0 summing to n_pairs; ValueError naming it otherwise."""
    if (not isinstance(mrope_section, (list, tuple)) or len(mrope_section) != 3
            or not all(is_int(s) and s >= 0 for s in mrope_section) or sum(mrope_section) != n_pairs):
        raise ValueError(
            f"mrope_section must be 3 ints >= 0 (pairs for t, h, w) summing to the number of rotary pairs "
            f"{n_pairs} (head_dim // 2), got {mrope_section!r}"
        )
    return [int(s) for s in mrope_section]
