"""How an image becomes a sequence of tokens on a grid, and how a learned grid table is resized.

An image of ``grid_h x grid_w`` patches becomes a sequence of tokens in row-major order
(patch (r, c) is token ``r * grid_w + c``), optionally preceded by ``n_prefix`` class-like
tokens. Positions index into that sequence: position ``p < n_prefix`` is a prefix token,
position ``n_prefix + r * grid_w + c`` is patch (r, c). A 1-D encoding sees patch
(r, grid_w - 1) and (r + 1, 0) as neighbours; the 2-D encodings (:mod:`.tables_2d`,
:mod:`.rope_2d`) know rows and columns through :func:`grid_coordinates`.

:class:`PatchEmbed` turns images into that token sequence; :func:`resample_grid` carries a
learned (n_prefix + H*W, d) table to another grid size.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc_lib.checks import (
    check_float_tensor,
    check_grid,
    check_int,
    check_integer_tensor,
    check_position_range,
    is_number,
)

__all__ = ["grid_coordinates", "COORDS", "Coords", "check_scale", "coordinate_scale", "check_same_grid", "resample_grid", "PatchEmbed"]

#: The ways a computed 2-D scheme (sin-cos, RoPE) can meet a larger grid. ``"extrapolate"``: the new
#: rows and columns get the indices 0 .. H' - 1, beyond the trained ones. ``"interpolate"``:
#: the indices are rescaled into the trained range (see :func:`coordinate_scale`).
COORDS = ("extrapolate", "interpolate")
Coords = Literal["extrapolate", "interpolate"]


def grid_coordinates(positions: Tensor, grid_h: int, grid_w: int, n_prefix: int = 0) -> tuple[Tensor, Tensor]:
    """Row and column of each token: two int64 tensors shaped like ``positions``.

    positions: integer (batch, seq) in ``[0, n_prefix + grid_h*grid_w)``. Prefix tokens get
    row = column = 0, which a 2-D RoPE turns into "no rotation" (as Heo et al. treat the class token).
    """
    check_integer_tensor("positions", positions)
    check_grid(grid_h, grid_w, n_prefix)
    what = f"{n_prefix} prefix tokens + a {grid_h}x{grid_w} grid"
    check_position_range("positions", positions, n_prefix + grid_h * grid_w, what)
    patch = positions.long() - n_prefix
    is_patch = patch >= 0
    # torch.where rather than patch.clamp_min(0): in torch 2.13, inductor fails on
    # clamp_min followed by // of an in-graph arange ("vr must not be None for symbol q2")
    return torch.where(is_patch, patch // grid_w, 0), torch.where(is_patch, patch % grid_w, 0)



# --------------------------------------------------------------------------- resizing


def check_scale(scale: object) -> tuple[float, float]:
    """A (row scale, column scale) pair of finite numbers > 0, returned as floats; else ValueError naming ``scale``."""
    if not (
        isinstance(scale, (tuple, list)) and len(scale) == 2
        and all(is_number(v) and math.isfinite(v) and v > 0 for v in scale)
    ):
        raise ValueError(f"scale must be a (row scale, column scale) pair of finite numbers > 0, got {scale!r}")
    return float(scale[0]), float(scale[1])


def coordinate_scale(old_hw: tuple[int, int], new_hw: tuple[int, int]) -> tuple[float, float]:
    """Per-axis factors that map a ``new_hw`` grid's indices onto the range a ``old_hw`` grid was trained on.

    Row r of the new grid gets the coordinate ``r * (H - 1) / (H' - 1)``, so the first and last
    rows keep the coordinates 0 and H - 1 of the trained grid and the rows between fall at
    fractional coordinates inside it: the image counterpart of position interpolation (Chen et
    al. 2023), and of the normalised patch coordinates of recent ViTs. An axis of one patch
    gets the factor 1. Returns (row factor, column factor); ``coordinate_scale(hw, hw) == (1, 1)``.
    """
    for name, hw in (("old_hw", old_hw), ("new_hw", new_hw)):
        if not (isinstance(hw, (tuple, list)) and len(hw) == 2):
            raise ValueError(f"{name} must be a (height, width) pair, got {hw!r}")
        check_int(f"{name}[0]", hw[0])
        check_int(f"{name}[1]", hw[1])
    return tuple((old - 1) / (new - 1) if new > 1 else 1.0 for old, new in zip(old_hw, new_hw, strict=True))


def check_same_grid(scheme: object, old_hw: tuple[int, int], n_prefix: int) -> None:
    """Raise ValueError unless a grid scheme (grid_h, grid_w, n_prefix attributes) is on ``old_hw`` with ``n_prefix``."""
    grid = (scheme.grid_h, scheme.grid_w, scheme.n_prefix)
    if grid != (old_hw[0], old_hw[1], n_prefix):
        raise ValueError(
            f"old_hw={tuple(old_hw)}, n_prefix={n_prefix} must match the scheme's grid "
            f"({scheme.grid_h}, {scheme.grid_w}), n_prefix={scheme.n_prefix}"
        )


def check_regrid(scheme: object, old_hw: object, new_hw: object, n_prefix: object, coords: object) -> None:
    """The checks of every grid scheme's ``regrid(old_hw, new_hw, n_prefix, coords)``, raising ValueError.

    ``old_hw`` and ``new_hw`` are (height, width) grids that hold ``n_prefix`` prefix tokens before their
    patches, ``coords`` one of :data:`COORDS`, and a scheme with a grid of its own (``grid_h``, ``grid_w``,
    ``n_prefix`` attributes) must be on ``old_hw``.
    """
    for name, hw in (("old_hw", old_hw), ("new_hw", new_hw)):
        if not (isinstance(hw, (tuple, list)) and len(hw) == 2):
            raise ValueError(f"{name} must be a (height, width) pair, got {hw!r}")
        check_grid(hw[0], hw[1], n_prefix)
    if coords not in COORDS:
        raise ValueError(f"coords must be one of {list(COORDS)}, got {coords!r}")
    if all(hasattr(scheme, a) for a in ("grid_h", "grid_w", "n_prefix")):
        check_same_grid(scheme, old_hw, n_prefix)


def resample_grid(table: Tensor, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int = 1) -> Tensor:
    """Resize a learned position table to another patch grid by bicubic interpolation.

    table: ``(n_prefix + H*W, d)`` with the prefix rows first and the patches row-major. The prefix
    rows are kept as they are; the (H, W, d) grid is interpolated in float32 with
    ``F.interpolate(mode="bicubic", align_corners=False)`` to exactly ``new_hw`` (the target
    size is passed, never a scale factor, which can round to the wrong size), and the result
    is cast back to the table's dtype. Returns ``(n_prefix + H'*W', d)``.
    """
    check_float_tensor("table", table)
    for name, hw in (("old_hw", old_hw), ("new_hw", new_hw)):
        if not (isinstance(hw, (tuple, list)) and len(hw) == 2):
            raise ValueError(f"{name} must be a (height, width) pair, got {hw!r}")
        check_int(f"{name}[0]", hw[0])
        check_int(f"{name}[1]", hw[1])
    check_int("n_prefix", n_prefix, minimum=0)
    (h, w), (new_h, new_w) = old_hw, new_hw
    if table.dim() != 2 or table.shape[0] != n_prefix + h * w:
        raise ValueError(
            f"table must have shape (n_prefix + H*W, d) = ({n_prefix} + {h}*{w}, d) for old_hw={tuple(old_hw)}, "
            f"got {tuple(table.shape)}"
        )
    d = table.shape[1]
    grid = table[n_prefix:].float().reshape(h, w, d).permute(2, 0, 1)[None]
    grid = F.interpolate(grid, size=(new_h, new_w), mode="bicubic", align_corners=False)
    return torch.cat([table[:n_prefix], grid[0].permute(1, 2, 0).reshape(new_h * new_w, d).to(table.dtype)])


# --------------------------------------------------------------------------- patch embedding


class PatchEmbed(nn.Module):
    """Cut images into square patches, project each to ``d_model``, optionally prepend class tokens.

    Input (batch, H, W) for one channel or (batch, C, H, W); output (batch, n_prefix + (H/p)*(W/p),
    d_model) with the patches in row-major order, the order every 2-D scheme of this module
    expects. It is ViT's strided convolution written as a reshape and one ``nn.Linear`` over the
    ``C * p * p`` pixels of a patch. Pass it to ``TinyTransformer(None, ..., embed=PatchEmbed(...))``.

    Args:
        patch_size: side p of a patch in pixels; must divide H and W of every input.
        d_model: width of a token.
        in_channels: C.
        n_prefix: learned class-like tokens put before the patches (0 or 1 in ViT), each
            N(0, 0.02) initialised; use the schemes with the same ``n_prefix`` and ``pool="first"``.

    Any image size works (a larger image gives a larger grid); the position scheme decides whether
    the model can use it.
    """

    def __init__(self, patch_size: int, d_model: int, in_channels: int = 1, n_prefix: int = 0):
        super().__init__()
        self.patch_size = check_int("patch_size", patch_size)
        self.in_channels = check_int("in_channels", in_channels)
        check_int("d_model", d_model)
        self.n_prefix = check_int("n_prefix", n_prefix, minimum=0)
        self.proj = nn.Linear(in_channels * patch_size * patch_size, d_model)
        self.prefix = nn.Parameter(torch.randn(n_prefix, d_model) * 0.02)

    def grid_size(self, height: int, width: int) -> tuple[int, int]:
        """(grid_h, grid_w) of an image of this size; raises if the patch size does not divide it."""
        p = self.patch_size
        if height % p or width % p:
            raise ValueError(
                f"images must have height and width divisible by patch_size={p}, got image size ({height}, {width})"
            )
        return height // p, width // p

    def forward(self, images: Tensor) -> Tensor:
        check_float_tensor("images", images)
        if images.dim() == 3 and self.in_channels == 1:
            images = images[:, None]
        if images.dim() != 4 or images.shape[1] != self.in_channels:
            raise ValueError(
                f"images must have shape (batch, {self.in_channels}, H, W)"
                + (" or (batch, H, W)" if self.in_channels == 1 else "")
                + f", got {tuple(images.shape)}"
            )
        b, c, h, w = images.shape
        gh, gw = self.grid_size(h, w)
        p = self.patch_size
        patches = images.reshape(b, c, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5).reshape(b, gh * gw, c * p * p)
        tokens = self.proj(patches)
        return torch.cat([self.prefix.expand(b, -1, -1), tokens], dim=1)

    def extra_repr(self) -> str:
        return f"patch_size={self.patch_size}, in_channels={self.in_channels}, n_prefix={self.n_prefix}"

