"""Swin's 2-D relative bias: a learned scalar per head and per (row offset, column offset) in a window."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from posenc_lib.checks import check_int, check_position_range
from posenc_lib.scheme import PositionScheme
from posenc_lib.score_bias.common import check_qk_positions

__all__ = ["swin_relative_position_index", "SwinRelativeBias"]


def swin_relative_position_index(window_h: int, window_w: int, n_prefix: int = 0) -> Tensor:
    """Row of the bias table used by each (query, key) pair in a ``window_h x window_w`` window.

    Tokens are the window's patches in row-major order, optionally preceded by ``n_prefix``
    class-like tokens. For two patches with coordinates (r_i, c_i), (r_j, c_j), the index is
    ``(r_i - r_j + window_h - 1) * (2*window_w - 1) + (c_i - c_j + window_w - 1)``: the 2-D
    difference shifted to be non-negative, then flattened, so it lies in
    ``[0, (2*window_h - 1)(2*window_w - 1))``. With prefix tokens, three more rows follow, as
    in BEiT: prefix->patch, patch->prefix and prefix->prefix (shared by all prefix tokens).

    Returns (n_prefix + window_h*window_w, n_prefix + window_h*window_w) int64.
    """
    check_int("window_h", window_h)
    check_int("window_w", window_w)
    check_int("n_prefix", n_prefix, minimum=0)
    rows = torch.arange(window_h).repeat_interleave(window_w)
    cols = torch.arange(window_w).repeat(window_h)
    dr = rows[:, None] - rows[None, :] + window_h - 1
    dc = cols[:, None] - cols[None, :] + window_w - 1
    patch_index = dr * (2 * window_w - 1) + dc
    if n_prefix == 0:
        return patch_index
    n_rel = (2 * window_h - 1) * (2 * window_w - 1)
    n = n_prefix + window_h * window_w
    index = torch.empty(n, n, dtype=torch.long)
    index[n_prefix:, n_prefix:] = patch_index
    index[:n_prefix, :] = n_rel  # prefix query -> any key
    index[:, :n_prefix] = n_rel + 1  # any query -> prefix key
    index[:n_prefix, :n_prefix] = n_rel + 2  # prefix -> prefix
    return index


class SwinRelativeBias(PositionScheme):
    """Swin's learned 2-D relative position bias inside one attention window.

    Args:
        n_heads: number of heads.
        window_h, window_w: window size in patches; the sequence is its patches in row-major
            order, positions ``n_prefix .. n_prefix + window_h*window_w - 1``.
        n_prefix: class-like tokens before the patches (positions ``0 .. n_prefix-1``); they
            get BEiT's three extra learned entries (see :func:`swin_relative_position_index`).

    Parameters: ``table`` of shape ((2*window_h-1)(2*window_w-1) [+3 with prefix], heads),
    truncated normal with std 0.02 as in Swin. The index is a non-persistent buffer: it is
    fully determined by the window size, so it stays out of the state_dict.
    """

    kind = "bias"

    def __init__(self, n_heads: int, window_h: int, window_w: int, n_prefix: int = 0):
        super().__init__()
        check_int("n_heads", n_heads)
        index = swin_relative_position_index(window_h, window_w, n_prefix)
        n_rows = (2 * window_h - 1) * (2 * window_w - 1) + (3 if n_prefix else 0)
        self.window_h, self.window_w, self.n_prefix = window_h, window_w, n_prefix
        self.table = nn.Parameter(torch.empty(n_rows, n_heads))
        nn.init.trunc_normal_(self.table, std=0.02)
        self.register_buffer("index", index, persistent=False)

    def score_bias(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """Bias (batch|1, heads, q_len, k_len); positions index into the window's token sequence."""
        check_qk_positions(q_positions, k_positions)
        n = self.index.shape[0]
        what = f"{self.n_prefix} prefix tokens + a {self.window_h}x{self.window_w} window"
        check_position_range("q_positions", q_positions, n, what)
        check_position_range("k_positions", k_positions, n, what)
        pair_index = self.index[q_positions[:, :, None], k_positions[:, None, :]]
        return self.table[pair_index].permute(0, 3, 1, 2)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.table.shape[1]}, window=({self.window_h}, {self.window_w}), "
            f"n_prefix={self.n_prefix}"
        )
