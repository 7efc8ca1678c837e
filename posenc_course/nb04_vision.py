"""The position schemes of notebook 04's tiny ViT, by name, and carrying them to another grid."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from posenc_lib.checks import check_grid
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.grid import Coords, check_regrid
from posenc_lib.registry import build_scheme
from posenc_lib.scheme import NoPosition, PositionScheme

__all__ = ["VIT_SCHEMES", "vit_scheme", "regrid_scheme", "grid_similarity"]

#: The position schemes notebook 04 compares: its label -> the scheme's name in posenc_lib.registry.SCHEMES.
VIT_SCHEMES: dict[str, str] = {
    "none": "none",
    "1-D learnable": "learnable",
    "1-D sinusoidal": "sinusoidal",
    "2-D learnable": "learnable-2d",
    "2-D sin-cos": "sincos-2d",
    "axial RoPE": "axial-rope-2d",
    "mixed RoPE": "mixed-rope-2d",
    "PEG": "peg",
}


def vit_scheme(name: str, d_model: int, n_heads: int, grid_h: int, grid_w: int, n_prefix: int = 1) -> PositionScheme:
    """A fresh position scheme for a ViT over a ``grid_h x grid_w`` patch grid with ``n_prefix`` class tokens.

    name (one of :data:`VIT_SCHEMES`): "none" (:class:`NoPosition`); "1-D learnable" (ViT's
    table: :class:`LearnablePE` over the row-major sequence, class token included); "1-D sinusoidal"
    (:class:`SinusoidalPE` over the same index); "2-D learnable" (:class:`Learnable2DPE`, row +
    column tables added); "2-D sin-cos" (:class:`SinCos2DPE`); "axial RoPE" (:class:`AxialRoPE2D`,
    base 100) and "mixed RoPE" (:class:`MixedRoPE2D`, base 10), the last two with head_dim =
    d_model / n_heads; "PEG" (:class:`PEG`, CPVT's 3x3 depthwise convolution over the grid). Built by :func:`~posenc_lib.registry.build_scheme`.
    """
    if name not in VIT_SCHEMES:
        raise ValueError(f"name must be one of {list(VIT_SCHEMES)}, got {name!r}")
    return build_scheme(VIT_SCHEMES[name], d_model, n_heads, grid=(grid_h, grid_w), n_prefix=n_prefix)


def regrid_scheme(
    scheme: PositionScheme, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int = 1,
    coords: Coords = "extrapolate",
) -> PositionScheme:
    """The same scheme for another patch grid, carrying over what was learned: each scheme's ``regrid``.

    coords: how the computed 2-D schemes (sin-cos, RoPE) place the new grid: "extrapolate" (the
    indices 0 .. H' - 1, beyond the trained ones) or "interpolate" (rescaled into the trained
    range by :func:`~posenc_lib.grid.coordinate_scale`). The learned tables
    are always resampled, an interpolation; the others ignore it.

    - :class:`LearnablePE` (a 1-D table over prefix + patches): its patch rows are resampled
      bicubically as an (H, W) grid, the prefix rows kept apart.
    - :class:`Learnable2DPE`: the row table and the column table are each resampled along their axis.
    - :class:`SinCos2DPE`: recomputed for the new grid (same base); nothing was learned.
    - :class:`AxialRoPE2D`, :class:`MixedRoPE2D`: the same frequencies, applied to the new grid's
      row and column indices (which now run further), as Heo et al. do at a new resolution, or to
      interpolated coordinates.
    - :class:`PEG`: the same convolution on the new grid (it only looks at neighbours).
    - :class:`NoPosition`, :class:`SinusoidalPE`: unchanged (a sinusoid is defined for every index).
    """
    if type(scheme) in (NoPosition, SinusoidalPE):  # computed from the index alone: the same on any grid
        check_regrid(scheme, old_hw, new_hw, n_prefix, coords)
        return scheme
    if not hasattr(scheme, "regrid"):
        raise TypeError(f"scheme must be one of the schemes of vit_scheme, got {type(scheme).__name__}")
    return scheme.regrid(old_hw, new_hw, n_prefix, coords=coords)


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
