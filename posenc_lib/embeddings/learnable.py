"""Learnable absolute position embeddings: one trained vector per position (BERT, GPT-2, ViT).

The encoding is a parameter table ``weight`` of shape (max_len, d_model); position ``p``
looks up row ``p`` and adds it to the token embedding. Nothing ties row ``p`` to row
``p + 1``: any structure the table has comes from training. The table has no row for a
position ``>= max_len``, so such a position is an error here rather than a silent wrap.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc_lib.checks import check_integer_tensor, is_int, is_number
from posenc_lib.grid import Coords, check_regrid, resample_grid
from posenc_lib.scheme import PositionScheme

__all__ = ["LearnablePE"]


class LearnablePE(PositionScheme):
    """A trained (max_len, d_model) table added to the token embeddings.

    Args:
        d_model: width of each position vector (the model width).
        max_len: number of rows; valid positions are ``0 .. max_len - 1``.
        init_std: standard deviation of the N(0, init_std) initialisation (GPT-2 and
            BERT use 0.02); must be > 0.

    ``forward(positions)`` with integer positions (batch, seq) returns (batch, seq, d_model).
    """

    kind = "embedding"

    def __init__(self, d_model: int, max_len: int, init_std: float = 0.02):
        super().__init__()
        for name, value in (("d_model", d_model), ("max_len", max_len)):
            if not is_int(value):
                raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
            if value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value}")
        if not is_number(init_std):
            raise TypeError(f"init_std must be a float, got {type(init_std).__name__} {init_std!r}")
        if not (math.isfinite(init_std) and init_std > 0):
            raise ValueError(f"init_std must be a finite float > 0, got {init_std}")
        self.d_model, self.max_len, self.init_std = d_model, max_len, float(init_std)
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every row again from N(0, init_std)."""
        nn.init.normal_(self.weight, mean=0.0, std=self.init_std)

    def forward(self, positions: Tensor) -> Tensor:
        """Look up the rows of ``positions``: integer (batch, seq) -> (batch, seq, d_model)."""
        check_integer_tensor("positions", positions)
        # The range check reads the positions' values, which torch.compile cannot do inside one
        # graph; compiled, an out-of-range index fails in the embedding lookup instead.
        if positions.numel() > 0 and not torch.compiler.is_compiling():
            low, high = int(positions.min()), int(positions.max())
            if low < 0 or high >= self.max_len:
                bad = f"max position {high}" if high >= self.max_len else f"min position {low}"
                raise ValueError(
                    f"positions must lie in [0, max_len) = [0, {self.max_len}), got {bad}: a learnable "
                    f"table has no row for it. Raise max_len (and train on such positions) or use an "
                    f"encoding that extends to any position (sinusoidal, RoPE, ALiBi)."
                )
        return F.embedding(positions.long(), self.weight)

    def add_to_embeddings(self, x: Tensor, positions: Tensor) -> Tensor:
        """x + table[positions], in x's dtype. x: (batch, seq, d_model); positions: (batch|1, seq)."""
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")
        return x + self.forward(positions).to(x.dtype)

    def regrid(
        self, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int, coords: Coords = "extrapolate"
    ) -> LearnablePE:
        """A table over ``n_prefix`` + a ``new_hw`` grid of patches (ViT at a new resolution).

        This table's rows are read as ``n_prefix`` prefix rows and an ``old_hw`` grid, row-major;
        the grid is resampled bicubically (:func:`~posenc_lib.grid.resample_grid`),
        the prefix rows kept as they are. ``coords`` is accepted for the one signature of every grid
        scheme's ``regrid``: resampling a learned table is an interpolation whatever it says.
        """
        check_regrid(self, old_hw, new_hw, n_prefix, coords)
        if self.max_len != n_prefix + old_hw[0] * old_hw[1]:
            raise ValueError(f"old_hw={tuple(old_hw)}, n_prefix={n_prefix} must give this table's max_len={self.max_len} "
                             f"rows, got {n_prefix + old_hw[0] * old_hw[1]}")
        new = LearnablePE(self.d_model, n_prefix + new_hw[0] * new_hw[1], self.init_std)
        with torch.no_grad():
            new.weight.copy_(resample_grid(self.weight.detach(), old_hw, new_hw, n_prefix))
        return new

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}, init_std={self.init_std}"
