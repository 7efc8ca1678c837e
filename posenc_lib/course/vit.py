"""The position schemes of notebook 04's tiny ViT, by name, and carrying them to another grid."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ..checks import check_grid, check_int
from ..scheme import NoPosition, PositionScheme
from ..encodings.absolute.learnable import LearnablePE
from ..encodings.absolute.sinusoidal import SinusoidalPE
from ..encodings.vision.grid import resample_grid
from ..encodings.vision.rope_2d import AxialRoPE2D, MixedRoPE2D, _GridRoPE
from ..encodings.vision.tables_2d import Learnable2DPE, SinCos2DPE, _GridTable

__all__ = ["VIT_SCHEMES", "vit_scheme", "regrid_scheme", "grid_similarity"]

#: The position schemes notebook 04 compares, by name (see :func:`vit_scheme`).
VIT_SCHEMES = ("none", "1-D learnable", "1-D sinusoidal", "2-D learnable", "2-D sin-cos", "axial RoPE", "mixed RoPE")


def vit_scheme(name: str, d_model: int, n_heads: int, grid_h: int, grid_w: int, n_prefix: int = 1) -> PositionScheme:
    """A fresh position scheme for a ViT over a ``grid_h x grid_w`` patch grid with ``n_prefix`` class tokens.

    name (one of :data:`VIT_SCHEMES`): "none" (:class:`NoPosition`); "1-D learnable" (ViT's
    table: :class:`LearnablePE` over the row-major sequence, class token included); "1-D sinusoidal"
    (:class:`SinusoidalPE` over the same index); "2-D learnable" (:class:`Learnable2DPE`, row +
    column tables added); "2-D sin-cos" (:class:`SinCos2DPE`); "axial RoPE" (:class:`AxialRoPE2D`,
    base 100) and "mixed RoPE" (:class:`MixedRoPE2D`, base 10), the last two with head_dim =
    d_model / n_heads.
    """
    check_grid(grid_h, grid_w, n_prefix)
    check_int("d_model", d_model)
    check_int("n_heads", n_heads)
    n = n_prefix + grid_h * grid_w
    makers = {
        "none": lambda: NoPosition(),
        "1-D learnable": lambda: LearnablePE(d_model, n),
        "1-D sinusoidal": lambda: SinusoidalPE(d_model, n),
        "2-D learnable": lambda: Learnable2DPE(d_model, grid_h, grid_w, n_prefix=n_prefix),
        "2-D sin-cos": lambda: SinCos2DPE(d_model, grid_h, grid_w, n_prefix=n_prefix),
        "axial RoPE": lambda: AxialRoPE2D(d_model // n_heads, grid_h, grid_w, n_prefix=n_prefix),
        "mixed RoPE": lambda: MixedRoPE2D(d_model // n_heads, n_heads, grid_h, grid_w, n_prefix=n_prefix),
    }
    if name not in makers:
        raise ValueError(f"name must be one of {list(makers)}, got {name!r}")
    return makers[name]()


def regrid_scheme(scheme: PositionScheme, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int = 1) -> PositionScheme:
    """The same scheme for another patch grid, carrying over what was learned (a new module).

    - :class:`LearnablePE` (a 1-D table over prefix + patches): its patch rows are resampled
      bicubically as an (H, W) grid by :func:`resample_grid`, the prefix rows kept apart.
    - :class:`Learnable2DPE`: the row table and the column table are each resampled along their axis.
    - :class:`SinCos2DPE`: recomputed for the new grid (same base); nothing was learned.
    - :class:`AxialRoPE2D`, :class:`MixedRoPE2D`: the same frequencies, applied to the new grid's
      row and column indices (which now run further), as Heo et al. do at a new resolution.
    - :class:`NoPosition`, :class:`SinusoidalPE`: unchanged (a sinusoid is defined for every index).
    """
    for name, hw in (("old_hw", old_hw), ("new_hw", new_hw)):
        if not (isinstance(hw, (tuple, list)) and len(hw) == 2):
            raise ValueError(f"{name} must be a (height, width) pair, got {hw!r}")
        check_grid(hw[0], hw[1], n_prefix)
    (h, w), (new_h, new_w) = old_hw, new_hw
    if isinstance(scheme, (_GridTable, _GridRoPE)) and (scheme.grid_h, scheme.grid_w, scheme.n_prefix) != (h, w, n_prefix):
        raise ValueError(
            f"old_hw={tuple(old_hw)}, n_prefix={n_prefix} must match the scheme's grid "
            f"({scheme.grid_h}, {scheme.grid_w}), n_prefix={scheme.n_prefix}"
        )
    if isinstance(scheme, LearnablePE):
        new = LearnablePE(scheme.d_model, n_prefix + new_h * new_w, scheme.init_std)
        with torch.no_grad():
            new.weight.copy_(resample_grid(scheme.weight.detach(), (h, w), (new_h, new_w), n_prefix))
        return new
    if isinstance(scheme, Learnable2DPE):
        new = Learnable2DPE(scheme.prefix.shape[1], new_h, new_w, scheme.mode, n_prefix)
        with torch.no_grad():
            new.row.copy_(resample_grid(scheme.row.detach(), (h, 1), (new_h, 1), n_prefix=0))
            new.col.copy_(resample_grid(scheme.col.detach(), (w, 1), (new_w, 1), n_prefix=0))
            new.prefix.copy_(scheme.prefix)
        return new
    if isinstance(scheme, SinCos2DPE):
        return SinCos2DPE(scheme.d_model, new_h, new_w, n_prefix, scheme.base)
    if isinstance(scheme, AxialRoPE2D):
        new = AxialRoPE2D(scheme.head_dim, new_h, new_w, n_prefix=n_prefix, layout=scheme.layout)
        new.inv_freq.copy_(scheme.inv_freq)
        return new
    if isinstance(scheme, MixedRoPE2D):
        new = MixedRoPE2D(scheme.head_dim, scheme.n_heads, new_h, new_w, n_prefix=n_prefix, layout=scheme.layout)
        with torch.no_grad():
            new.freqs.copy_(scheme.freqs)
        return new
    if type(scheme) in (NoPosition, SinusoidalPE):
        return scheme
    raise TypeError(f"scheme must be one of the schemes of vit_scheme, got {type(scheme).__name__}")


def grid_similarity(table: Tensor, grid_h: int, grid_w: int, n_prefix: int = 0) -> Tensor:
    """Cosine similarity of every patch's position vector with every other: (grid_h, grid_w, grid_h, grid_w).

    table: (n_prefix + grid_h*grid_w, d) with the patches row-major after the prefix rows.
    ``out[r, c]`` is the (grid_h, grid_w) map of patch (r, c): the panels of the familiar ViT figure.
    """
    check_grid(grid_h, grid_w, n_prefix)
    if not isinstance(table, Tensor) or table.dim() != 2 or table.shape[0] != n_prefix + grid_h * grid_w:
        raise ValueError(
            f"table must have shape (n_prefix + grid_h*grid_w, d) = ({n_prefix} + {grid_h}*{grid_w}, d), "
            f"got {tuple(getattr(table, 'shape', ()))}"
        )
    patches = F.normalize(table[n_prefix:].detach().double(), dim=-1)
    return (patches @ patches.T).reshape(grid_h, grid_w, grid_h, grid_w)
