"""Conditional position encoding: the Position Encoding Generator (PEG) of CPVT (Chu et al. 2021).

Instead of a table indexed by position, PEG computes the encoding from the tokens themselves:
the patch tokens are put back on their (H, W) grid, a depthwise ``k x k`` convolution looks at
each token's neighbourhood, and the result is added to the tokens as a residual. The
convolution alone is translation-equivariant, so it would only give *relative* position; it
is the **zero padding** at the image border that tells a border token where it is, and from
there the stack can work out absolute position. (CPVT applies PEG after the first encoder
block; here it acts through the ``add_to_embeddings`` hook, before the first block, which
keeps the same mechanism.)

Tokens are the patches in row-major order, optionally preceded by ``n_prefix`` class-like
tokens, which pass through unchanged. PEG reads the token *order*, not the ``positions``
tensor: the sequence must be exactly ``n_prefix + grid_h * grid_w`` tokens long.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc_lib.checks import check_float_tensor, check_int
from posenc_lib.grid import Coords, check_regrid
from posenc_lib.scheme import PositionScheme

Padding = Literal["zeros", "circular"]

__all__ = ["peg", "PEG"]


def peg(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    grid_h: int,
    grid_w: int,
    n_prefix: int = 0,
    padding: Padding = "zeros",
) -> Tensor:
    """Apply a PEG: ``x + depthwise_conv(grid(x))`` on the patch tokens, prefix tokens unchanged.

    Args:
        x: (batch, n_prefix + grid_h*grid_w, d_model) float tokens.
        weight: (d_model, 1, k, k) depthwise kernel, k odd; padding of k // 2 keeps the grid size.
        bias: (d_model,) or None.
        grid_h, grid_w: patch grid; tokens are its cells in row-major order.
        n_prefix: leading tokens (class token, registers) left as they are.
        padding: "zeros" (CPVT: the border leaks absolute position) or "circular" (the grid wraps
            around like a torus: no border, so the convolution is exactly translation-equivariant
            and carries no absolute position; for experiments).

    Returns (batch, n_prefix + grid_h*grid_w, d_model).
    """
    if padding not in ("zeros", "circular"):
        raise ValueError(f"padding must be 'zeros' or 'circular', got {padding!r}")
    check_float_tensor("x", x)
    n = n_prefix + grid_h * grid_w
    if x.dim() != 3 or x.shape[1] != n:
        raise ValueError(
            f"x must have shape (batch, n_prefix + grid_h*grid_w = {n_prefix} + {grid_h}*{grid_w} = {n}, d_model), "
            f"got {tuple(x.shape)}"
        )
    d, k = x.shape[-1], weight.shape[-1]
    if weight.shape != (d, 1, k, k) or k % 2 == 0:
        raise ValueError(f"weight must have shape (d_model={d}, 1, k, k) with k odd, got {tuple(weight.shape)}")
    prefix, patches = x[:, :n_prefix], x[:, n_prefix:]
    grid = patches.transpose(1, 2).reshape(x.shape[0], d, grid_h, grid_w)
    if padding == "circular":
        r = k // 2
        encoded = F.conv2d(F.pad(grid, (r, r, r, r), mode="circular"), weight, bias, groups=d)
    else:
        encoded = F.conv2d(grid, weight, bias, padding=k // 2, groups=d)
    return torch.cat([prefix, patches + encoded.flatten(2).transpose(1, 2)], dim=1)


class PEG(PositionScheme):
    """Position Encoding Generator as a scheme (kind "embedding"): a learned depthwise conv on the grid.

    Args:
        d_model: token width (one ``kernel_size x kernel_size`` filter per channel).
        grid_h, grid_w: patch grid; the sequence must be ``n_prefix + grid_h*grid_w`` tokens.
        kernel_size: odd filter size (3 in CPVT).
        n_prefix: leading class-like tokens, passed through unchanged.
        padding: "zeros" as in CPVT, or "circular" (no border, no absolute position; see :func:`peg`).

    ``add_to_embeddings(x, positions)`` ignores ``positions`` (see the module docstring).
    """

    kind = "embedding"

    def __init__(
        self, d_model: int, grid_h: int, grid_w: int, kernel_size: int = 3, n_prefix: int = 0, padding: Padding = "zeros"
    ):
        super().__init__()
        for name, value in (("d_model", d_model), ("grid_h", grid_h), ("grid_w", grid_w), ("kernel_size", kernel_size)):
            check_int(name, value)
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd (symmetric zero padding), got {kernel_size}")
        check_int("n_prefix", n_prefix, minimum=0)
        if padding not in ("zeros", "circular"):
            raise ValueError(f"padding must be 'zeros' or 'circular', got {padding!r}")
        self.grid_h, self.grid_w, self.n_prefix, self.padding = grid_h, grid_w, n_prefix, padding
        self.conv = nn.Conv2d(d_model, d_model, kernel_size, padding=kernel_size // 2, groups=d_model)

    def add_to_embeddings(self, x: Tensor, positions: Tensor) -> Tensor:
        """x: (batch, n_prefix + grid_h*grid_w, d_model) -> same shape."""
        return peg(x, self.conv.weight, self.conv.bias, self.grid_h, self.grid_w, self.n_prefix, self.padding)

    def regrid(
        self, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int, coords: Coords = "extrapolate"
    ) -> PEG:
        """The same convolution on a ``new_hw`` grid: it only looks at neighbours, so nothing is resampled.

        ``coords`` is accepted for the one signature of every grid scheme's ``regrid``; a neighbourhood
        has no coordinates to place, so both choices give the same PEG.
        """
        check_regrid(self, old_hw, new_hw, n_prefix, coords)
        conv = self.conv
        new = PEG(conv.in_channels, new_hw[0], new_hw[1], conv.kernel_size[0], n_prefix, self.padding)
        new.load_state_dict(self.state_dict())
        return new

    def extra_repr(self) -> str:
        return f"grid=({self.grid_h}, {self.grid_w}), n_prefix={self.n_prefix}, padding={self.padding!r}"
