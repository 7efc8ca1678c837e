"""2-D position tables for a grid of patches (kind "embedding"), each also a plain function.

    sincos_2d_table / SinCos2DPE         fixed: half the channels encode the row, half the column
    learnable_2d_table / Learnable2DPE   a learned row table and column table, added or concatenated

Tokens are the patches in row-major order after ``n_prefix`` class-like tokens (see :mod:`.grid`).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc_lib.checks import (
    check_grid,
    check_int,
    check_integer_tensor,
    check_number,
    check_position_range,
)
from posenc_lib.frequencies import inverse_frequencies
from posenc_lib.grid import Coords, check_regrid, check_scale, coordinate_scale, resample_grid
from posenc_lib.scheme import PositionScheme

__all__ = ["sincos_2d_table", "learnable_2d_table", "SinCos2DPE", "Learnable2DPE"]

Mode = Literal["add", "concat"]


def sincos_2d_table(
    grid_h: int, grid_w: int, d_model: int, base: float = 10000.0, n_prefix: int = 0, dtype: torch.dtype = torch.float32,
    scale: tuple[float, float] = (1.0, 1.0),
) -> Tensor:
    """Fixed 2-D sin-cos encodings (MAE-style): shape (n_prefix + grid_h*grid_w, d_model).

    With ``w_k = base^(-k/(d_model/4))``, k = 0 .. d_model/4 - 1, patch (r, c) at the coordinates
    ``(y, x) = (r * scale[0], c * scale[1])`` gets

        [ sin(y w) | cos(y w) | sin(x w) | cos(x w) ]      (four blocks of d_model/4)

    and prefix tokens get zero rows. Angles are computed in float64, then cast to ``dtype``.
    ``scale`` (1, 1) gives the integer patch indices; :func:`~.grid.coordinate_scale` gives the
    factors that put a larger grid's patches at interpolated coordinates inside a trained grid.

    Channel order: this is the row-first order of Hugging Face's
    ``build_2d_sinusoidal_position_embedding``. The original MAE code (``get_2d_sincos_pos_embed``)
    builds its grid with ``np.meshgrid(grid_w, grid_h)``, so its *first* half encodes the
    column: MAE's table is ours with the two halves swapped,
    ``mae = ours[:, cat(arange(d/2, d), arange(0, d/2))]`` (Hugging Face's ``ViTMAEEmbeddings``
    swaps them too, to load MAE checkpoints). The two orders carry the same information.
    """
    check_grid(grid_h, grid_w, n_prefix)
    check_int("d_model", d_model, minimum=4)
    if d_model % 4:
        raise ValueError(f"d_model must be divisible by 4 (sin and cos for two axes), got {d_model}")
    check_number("base", base, above=1, finite=True)
    row_scale, col_scale = check_scale(scale)
    omega = inverse_frequencies(d_model // 2, base, dtype=torch.float64)  # base^(-k/(d/4)), k < d/4
    rows = (torch.arange(grid_h, dtype=torch.float64) * row_scale).repeat_interleave(grid_w)[:, None] * omega
    cols = (torch.arange(grid_w, dtype=torch.float64) * col_scale).repeat(grid_h)[:, None] * omega
    grid = torch.cat([rows.sin(), rows.cos(), cols.sin(), cols.cos()], dim=1)
    return torch.cat([torch.zeros(n_prefix, d_model, dtype=torch.float64), grid]).to(dtype)


def learnable_2d_table(row: Tensor, col: Tensor, prefix: Tensor, mode: Mode = "add") -> Tensor:
    """Assemble a 2-D table from a row table and a column table: (n_prefix + H*W, d_model).

    row: (H, dim), col: (W, dim), prefix: (n_prefix, d_model) rows for the prefix tokens.
    mode "add": patch (r, c) gets ``row[r] + col[c]`` (dim = d_model);
    mode "concat": ``[row[r] | col[c]]`` (dim = d_model / 2).
    """
    if mode not in ("add", "concat"):
        raise ValueError(f"mode must be 'add' or 'concat', got {mode!r}")
    h, w = row.shape[0], col.shape[0]
    if row.dim() != 2 or col.dim() != 2 or row.shape[1] != col.shape[1]:
        raise ValueError(
            f"row and col must be (H, dim) and (W, dim) tables, got {tuple(row.shape)} and {tuple(col.shape)}"
        )
    r = row[:, None, :].expand(h, w, -1)
    c = col[None, :, :].expand(h, w, -1)
    grid = (r + c) if mode == "add" else torch.cat([r, c], dim=-1)
    grid = grid.reshape(h * w, -1)
    if prefix.dim() != 2 or prefix.shape[1] != grid.shape[1]:
        raise ValueError(f"prefix must be (n_prefix, d_model={grid.shape[1]}), got {tuple(prefix.shape)}")
    return torch.cat([prefix, grid])


class _GridTable(PositionScheme):
    """A scheme that adds ``table()[positions]`` to the embeddings; subclasses define ``table()``."""

    kind = "embedding"
    grid_h: int
    grid_w: int
    n_prefix: int

    def table(self) -> Tensor:
        """The full (n_prefix + grid_h*grid_w, d_model) table."""
        raise NotImplementedError

    def forward(self, positions: Tensor) -> Tensor:
        """Encodings of integer ``positions`` (batch, seq): (batch, seq, d_model)."""
        check_integer_tensor("positions", positions)
        what = f"{self.n_prefix} prefix tokens + a {self.grid_h}x{self.grid_w} grid"
        check_position_range("positions", positions, self.n_prefix + self.grid_h * self.grid_w, what)
        return F.embedding(positions.long(), self.table())

    def add_to_embeddings(self, x: Tensor, positions: Tensor) -> Tensor:
        """x (batch, seq, d_model) + encodings of positions (batch|1, seq)."""
        return x + self(positions)

    def extra_repr(self) -> str:
        return f"grid=({self.grid_h}, {self.grid_w}), n_prefix={self.n_prefix}"


class SinCos2DPE(_GridTable):
    """Fixed 2-D sin-cos encoding (:func:`sincos_2d_table`) as a scheme; ``table`` is a non-persistent buffer.

    Args:
        d_model: width, divisible by 4.
        grid_h, grid_w: patch grid.
        n_prefix: leading class-like tokens (zero rows).
        base: frequency base.
        scale: (row, column) factors of the patch coordinates (see :func:`sincos_2d_table`).
    """

    def __init__(
        self, d_model: int, grid_h: int, grid_w: int, n_prefix: int = 0, base: float = 10000.0,
        scale: tuple[float, float] = (1.0, 1.0),
    ):
        super().__init__()
        table = sincos_2d_table(grid_h, grid_w, d_model, base, n_prefix, scale=scale)
        self.grid_h, self.grid_w, self.n_prefix, self.d_model, self.base = grid_h, grid_w, n_prefix, d_model, base
        self.scale = check_scale(scale)
        self.register_buffer("_table", table, persistent=False)

    def table(self) -> Tensor:
        return self._table

    def regrid(
        self, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int, coords: Coords = "extrapolate"
    ) -> SinCos2DPE:
        """The table recomputed for a ``new_hw`` grid (same base); nothing was learned.

        coords: "extrapolate" keeps the coordinate scale (new patches at indices beyond the
        trained ones); "interpolate" multiplies it by :func:`~.grid.coordinate_scale`, so the new
        grid spans the trained coordinates.
        """
        check_regrid(self, old_hw, new_hw, n_prefix, coords)
        factor = coordinate_scale(old_hw, new_hw) if coords == "interpolate" else (1.0, 1.0)
        scale = (self.scale[0] * factor[0], self.scale[1] * factor[1])
        return SinCos2DPE(self.d_model, new_hw[0], new_hw[1], n_prefix, self.base, scale)


class Learnable2DPE(_GridTable):
    """Learned row and column tables (:func:`learnable_2d_table`) as a scheme.

    Args:
        d_model: width (even for ``mode="concat"``).
        grid_h, grid_w: patch grid.
        mode: "add" (``row`` (H, d), ``col`` (W, d), summed) or "concat" (each d/2 channels).
        n_prefix: leading class-like tokens; each gets its own learned row in ``prefix``.
        init_std: N(0, init_std) initialisation of every table.

    Parameters: ``(grid_h + grid_w) * dim + n_prefix * d_model`` instead of the
    ``grid_h * grid_w * d_model`` of a 1-D table over the patches.
    """

    def __init__(
        self, d_model: int, grid_h: int, grid_w: int, mode: Mode = "add", n_prefix: int = 0, init_std: float = 0.02
    ):
        super().__init__()
        check_grid(grid_h, grid_w, n_prefix)
        check_int("d_model", d_model)
        if mode not in ("add", "concat"):
            raise ValueError(f"mode must be 'add' or 'concat', got {mode!r}")
        if mode == "concat" and d_model % 2:
            raise ValueError(f"d_model must be even for mode='concat' (half row, half column), got {d_model}")
        check_number("init_std", init_std, above=0)
        self.grid_h, self.grid_w, self.n_prefix, self.mode = grid_h, grid_w, n_prefix, mode
        dim = d_model if mode == "add" else d_model // 2
        self.row = nn.Parameter(torch.randn(grid_h, dim) * init_std)
        self.col = nn.Parameter(torch.randn(grid_w, dim) * init_std)
        self.prefix = nn.Parameter(torch.randn(n_prefix, d_model) * init_std)

    def table(self) -> Tensor:
        return learnable_2d_table(self.row, self.col, self.prefix, self.mode)

    def regrid(
        self, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int, coords: Coords = "extrapolate"
    ) -> Learnable2DPE:
        """For a ``new_hw`` grid: the row table and the column table each resampled along their axis.

        ``coords`` is accepted for the one signature of every grid scheme's ``regrid``: resampling a
        learned table is an interpolation whatever it says.
        """
        check_regrid(self, old_hw, new_hw, n_prefix, coords)
        (h, w), (new_h, new_w) = old_hw, new_hw
        new = Learnable2DPE(self.prefix.shape[1], new_h, new_w, self.mode, n_prefix)
        with torch.no_grad():
            new.row.copy_(resample_grid(self.row.detach(), (h, 1), (new_h, 1), n_prefix=0))
            new.col.copy_(resample_grid(self.col.detach(), (w, 1), (new_w, 1), n_prefix=0))
            new.prefix.copy_(self.prefix)
        return new

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, mode={self.mode!r}"
