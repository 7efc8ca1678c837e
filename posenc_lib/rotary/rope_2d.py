"""2-D RoPE for a grid of patches (kind "rotary", Heo et al. 2024): rotations of q and k by row and column.

    apply_axial_rope_2d / AxialRoPE2D   half the rotary pairs turn with the column, half with the row
    apply_mixed_rope_2d / MixedRoPE2D   every pair turns with a learned per-head mix of both axes

Both follow the official code of Heo et al. (naver-ai/rope-vit, ``models/vit_rope.py``): x (the
column) comes first, in the axial tables (first pairs turned by the column) and in the mixed
frequencies (``freqs[0]`` multiplies the column). Their default pair layout is this library's
"half" one; ``layout="interleaved"`` rotates exactly as the reference code does, so a RoPE-ViT
checkpoint loads as it is (or convert its q/k weights with :func:`posenc_lib.rotary.rope.convert_qk_weight`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from posenc_lib.checks import check_choice, check_float_tensor, check_grid, check_int, check_integer_tensor
from posenc_lib.grid import Coords, check_regrid, check_scale, coordinate_scale, grid_coordinates
from posenc_lib.rotary.rope import LAYOUTS, Layout, apply_rope, rope_inv_freq
from posenc_lib.scheme import PositionScheme

__all__ = ["apply_axial_rope_2d", "apply_mixed_rope_2d", "mixed_rope_init", "AxialRoPE2D", "MixedRoPE2D"]


def _check_qk(q: Tensor, k: Tensor, head_dim: int, positions: Tensor) -> None:
    for name, t in (("q", q), ("k", k)):
        check_float_tensor(name, t)
        if t.dim() != 4 or t.shape[-1] != head_dim:
            raise ValueError(f"{name} must have shape (batch, heads, seq, head_dim={head_dim}), got {tuple(t.shape)}")
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
    if positions.dim() != 2 or positions.shape[-1] != q.shape[-2] or positions.shape[0] not in (1, q.shape[0]):
        raise ValueError(
            f"positions must have shape (batch, seq) = ({q.shape[0]}, {q.shape[-2]}) or (1, {q.shape[-2]}), "
            f"got {tuple(positions.shape)}"
        )


def apply_axial_rope_2d(x: Tensor, rows: Tensor, cols: Tensor, inv_freq: Tensor, layout: Layout = "half") -> Tensor:
    """Axial 2-D RoPE of x (batch, heads, seq, head_dim) at coordinates rows, cols (batch|1, seq).

    inv_freq: (head_dim // 4,) frequencies shared by both axes. Pairs 0 .. head_dim/4 - 1 turn
    by ``col * inv_freq`` (the x axis), the next head_dim/4 by ``row * inv_freq`` (the y axis):
    the order of Heo et al.'s official code (``compute_axial_cis`` concatenates the x table,
    then the y table). Pair i is (x[i], x[i + head_dim/2]) in the "half" layout and
    (x[2i], x[2i+1]) in the "interleaved" layout of :func:`posenc_lib.rotary.rope.apply_rope`; the
    reference code uses "interleaved". The score of a query at (r, c) and a key at (r', c')
    depends only on (r - r', c - c'). rows and cols are the integer patch indices, or real
    coordinates (interpolated ones, see :func:`~.grid.coordinate_scale`). Angles are computed in
    float32 (float64 for a float64 x) and cos/sin cast to x's dtype at the end.
    """
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    freq = inv_freq.to(device=x.device, dtype=compute)
    angles = torch.cat([cols.to(compute)[..., None] * freq, rows.to(compute)[..., None] * freq], dim=-1)
    return apply_rope(x, angles.cos().to(x.dtype), angles.sin().to(x.dtype), layout=layout)


def apply_mixed_rope_2d(x: Tensor, rows: Tensor, cols: Tensor, freqs: Tensor, layout: Layout = "half") -> Tensor:
    """Mixed 2-D RoPE (Heo et al. 2024) of x (batch, heads, seq, head_dim).

    freqs: (2, heads, head_dim // 2) learned frequencies, x component first as in the official
    code's ``freqs`` (``compute_mixed_cis``): pair i of head h turns by
    ``cols * freqs[0, h, i] + rows * freqs[1, h, i]``, a frequency along any direction of the
    image plane, not only along the axes. rows, cols: (batch|1, seq) integer patch indices or
    real (interpolated) coordinates. layout: "half"
    or "interleaved" (the reference's), as in :func:`apply_axial_rope_2d`.
    Angles are computed in at least float32 and cos/sin cast to x's dtype at the end.
    """
    b, h, s, d = x.shape
    f = freqs.to(torch.promote_types(freqs.dtype, torch.float32))  # angles never in 16-bit
    angles = cols[:, None, :, None].to(f.dtype) * f[0, None, :, None, :]
    angles = angles + rows[:, None, :, None].to(f.dtype) * f[1, None, :, None, :]  # (b|1, h, s, d/2)
    angles = angles.expand(b, h, s, d // 2).reshape(b * h, s, d // 2)
    # one "batch" row per (batch, head) pair, so the per-head tables broadcast over a single head
    out = apply_rope(x.reshape(b * h, 1, s, d), angles.cos().to(x.dtype), angles.sin().to(x.dtype), layout=layout)
    return out.reshape(b, h, s, d)


def mixed_rope_init(head_dim: int, n_heads: int, base: float = 10.0) -> Tensor:
    """Initial frequencies (2, n_heads, head_dim // 2) for :func:`apply_mixed_rope_2d`, as in Heo et al.

    Magnitudes ``base^(-k/(head_dim/4))``, k = 0 .. head_dim/4 - 1; each head draws a random
    direction phi (uses the global torch RNG): its first head_dim/4 pairs point along phi, the
    others along phi + pi/2. Row component = magnitude * sin, column component = magnitude * cos.
    """
    check_int("head_dim", head_dim, minimum=4)
    check_int("n_heads", n_heads)
    if head_dim % 4:
        raise ValueError(f"head_dim must be divisible by 4 (pairs split between two axes), got {head_dim}")
    magnitude = rope_inv_freq(head_dim // 2, base)  # (head_dim/4,)
    phi = torch.rand(n_heads, 1) * 2 * math.pi
    direction = torch.cat([phi.expand(-1, head_dim // 4), (phi + math.pi / 2).expand(-1, head_dim // 4)], dim=1)
    magnitude = magnitude.repeat(2)[None, :]
    return torch.stack([magnitude * direction.cos(), magnitude * direction.sin()])


class _GridRoPE(PositionScheme):
    """Shared plumbing of the 2-D RoPE schemes: validate, map positions to (row, col), rotate q and k."""

    kind = "rotary"
    head_dim: int
    grid_h: int
    grid_w: int
    n_prefix: int
    layout: Layout
    #: (row, column) factors of the patch coordinates: patch (r, c) turns as if at (r * scale[0], c * scale[1]).
    scale: tuple[float, float]

    def _rotate(self, x: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
        raise NotImplementedError

    def rotate_qk(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """q, k: (batch, heads, seq, head_dim); positions: integer (batch|1, seq)."""
        check_integer_tensor("positions", positions)
        _check_qk(q, k, self.head_dim, positions)
        rows, cols = grid_coordinates(positions, self.grid_h, self.grid_w, self.n_prefix)
        if self.scale != (1.0, 1.0):
            rows, cols = rows.double() * self.scale[0], cols.double() * self.scale[1]
        return self._rotate(q, rows, cols), self._rotate(k, rows, cols)

    def _new_scale(self, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int, coords: Coords) -> tuple[float, float]:
        """The coordinate scale of this scheme carried to ``new_hw`` (see :meth:`AxialRoPE2D.regrid`)."""
        check_regrid(self, old_hw, new_hw, n_prefix, coords)
        factor = coordinate_scale(old_hw, new_hw) if coords == "interpolate" else (1.0, 1.0)
        return self.scale[0] * factor[0], self.scale[1] * factor[1]

    def extra_repr(self) -> str:
        scale = "" if self.scale == (1.0, 1.0) else f", scale={self.scale}"
        return (f"head_dim={self.head_dim}, grid=({self.grid_h}, {self.grid_w}), n_prefix={self.n_prefix}, "
                f"layout={self.layout!r}{scale}")


class AxialRoPE2D(_GridRoPE):
    """Axial 2-D RoPE (:func:`apply_axial_rope_2d`): the first half of the pairs use the column, the rest the row.

    Args:
        head_dim: per-head width, divisible by 4.
        grid_h, grid_w: patch grid; positions index the row-major token sequence.
        base: frequency base (100 in Heo et al. for images, since grids are short).
        n_prefix: leading class-like tokens, left unrotated.
        layout: "half" (default) or "interleaved" (the pairs of the reference code).
        scale: (row, column) factors of the patch coordinates; (1, 1) turns patch (r, c) by its
            indices, :meth:`regrid` with ``coords="interpolate"`` sets fractional ones.

    ``inv_freq`` (head_dim // 4,) is a non-persistent buffer.
    """

    def __init__(
        self, head_dim: int, grid_h: int, grid_w: int, base: float = 100.0, n_prefix: int = 0, layout: Layout = "half",
        scale: tuple[float, float] = (1.0, 1.0),
    ):
        super().__init__()
        check_grid(grid_h, grid_w, n_prefix)
        check_choice("layout", layout, LAYOUTS)
        self.layout, self.scale = layout, check_scale(scale)
        check_int("head_dim", head_dim, minimum=4)
        if head_dim % 4:
            raise ValueError(f"head_dim must be divisible by 4 (pairs split between two axes), got {head_dim}")
        self.head_dim, self.grid_h, self.grid_w, self.n_prefix = head_dim, grid_h, grid_w, n_prefix
        self.register_buffer("inv_freq", rope_inv_freq(head_dim // 2, base), persistent=False)

    def _rotate(self, x: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
        return apply_axial_rope_2d(x, rows, cols, self.inv_freq, self.layout)

    def regrid(
        self, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int, coords: Coords = "extrapolate"
    ) -> AxialRoPE2D:
        """The same frequencies on a ``new_hw`` grid.

        coords: "extrapolate" (the new grid's row and column indices run further than the trained
        ones, as in Heo et al.) or "interpolate" (the coordinate scale is multiplied by
        :func:`~.grid.coordinate_scale`, so the new grid spans the trained coordinates).
        """
        scale = self._new_scale(old_hw, new_hw, n_prefix, coords)
        new = AxialRoPE2D(self.head_dim, new_hw[0], new_hw[1], n_prefix=n_prefix, layout=self.layout, scale=scale)
        new.inv_freq.copy_(self.inv_freq)
        return new


class MixedRoPE2D(_GridRoPE):
    """Mixed-frequency 2-D RoPE (:func:`apply_mixed_rope_2d`) with learned per-head frequencies.

    Args:
        head_dim: per-head width, divisible by 4.
        n_heads: number of heads (each learns its own frequencies).
        grid_h, grid_w: patch grid.
        base: base of the initial magnitudes (10 in Heo et al. for the mixed variant).
        n_prefix: leading class-like tokens, left unrotated.
        layout: "half" (default) or "interleaved" (the pairs of the reference code).
        scale: (row, column) factors of the patch coordinates, as in :class:`AxialRoPE2D`.

    Parameter ``freqs`` (2, n_heads, head_dim // 2), x (column) component first, initialised by
    :func:`mixed_rope_init`. The reference code learns one such tensor per layer; here one
    scheme (one ``freqs``) is shared by all layers, like every scheme of the library.
    """

    def __init__(
        self, head_dim: int, n_heads: int, grid_h: int, grid_w: int, base: float = 10.0, n_prefix: int = 0,
        layout: Layout = "half", scale: tuple[float, float] = (1.0, 1.0),
    ):
        super().__init__()
        check_grid(grid_h, grid_w, n_prefix)
        check_choice("layout", layout, LAYOUTS)
        self.layout, self.scale = layout, check_scale(scale)
        self.freqs = nn.Parameter(mixed_rope_init(head_dim, n_heads, base))
        self.head_dim, self.n_heads = head_dim, n_heads
        self.grid_h, self.grid_w, self.n_prefix = grid_h, grid_w, n_prefix

    def _rotate(self, x: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
        if x.shape[1] != self.n_heads:
            raise ValueError(f"q and k must have n_heads={self.n_heads} heads, got {x.shape[1]}")
        return apply_mixed_rope_2d(x, rows, cols, self.freqs, self.layout)

    def regrid(
        self, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int, coords: Coords = "extrapolate"
    ) -> MixedRoPE2D:
        """The same learned frequencies on a ``new_hw`` grid, as Heo et al. do at a new resolution.

        coords: "extrapolate" or "interpolate", as in :meth:`AxialRoPE2D.regrid`.
        """
        scale = self._new_scale(old_hw, new_hw, n_prefix, coords)
        new = MixedRoPE2D(self.head_dim, self.n_heads, new_hw[0], new_hw[1], n_prefix=n_prefix, layout=self.layout,
                          scale=scale)
        with torch.no_grad():
            new.freqs.copy_(self.freqs)
        return new
