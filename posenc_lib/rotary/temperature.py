"""Attention temperature tuning (Llama 4's NoPE layers): queries scaled by a slowly growing function of position.

In a layer without RoPE nothing tells a query how far it has read, and as the number of keys grows
a softmax over them flattens: the largest score must grow like log(n) to keep its weight. Llama 4
counters this on its NoPE layers by multiplying each query by a temperature that grows with the
query's position m, in steps of ``floor_scale`` tokens:

    q_m  <-  q_m * (1 + attn_scale * ln(1 + floor((m + 1) / floor_scale)))

so every score q_m . k_j is multiplied by the same factor (keys untouched). The factor is 1 for
m + 1 < floor_scale (Llama 4: the first 8191 positions), 1 + 0.1 ln 2 = 1.069 from position 8191,
1 + 0.1 ln 17 = 1.283 at position 131071. Hugging Face's ``Llama4TextAttention`` cites
"Scalable-Softmax Is Superior for Attention" (Nakanishi 2025, arXiv 2501.19399), whose softmax
multiplies the scores by s log n.

It transforms q by position, so it lives with the other transforms of q and k
(:meth:`PositionScheme.rotate_qk`), although it rotates nothing.

Shapes:
    positions  (batch, seq) integer (the queries' absolute positions)
    q, k       (batch, heads, seq, head_dim)
    scales     (batch, seq)
"""

from __future__ import annotations

import torch
from torch import Tensor

from posenc_lib.checks import (
    check_float_dtype,
    check_float_tensor,
    check_int,
    check_integer_tensor,
    check_number,
)
from posenc_lib.scheme import PositionScheme

__all__ = ["query_temperature", "QueryTemperature"]


def query_temperature(
    positions: Tensor, floor_scale: int = 8192, attn_scale: float = 0.1, dtype: torch.dtype = torch.float32
) -> Tensor:
    """The factor 1 + attn_scale * ln(1 + floor((m + 1) / floor_scale)) for each position m: positions' shape, in dtype.

    Computed as Hugging Face's ``Llama4TextAttention`` computes it (float32 for float32 and lower
    precisions; float64 for float64).
    """
    check_integer_tensor("positions", positions)
    check_int("floor_scale", floor_scale)
    check_number("attn_scale", attn_scale, above=float("-inf"), finite=True)
    check_float_dtype("dtype", dtype)
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    steps = torch.floor((positions.to(compute) + 1.0) / floor_scale)
    return (torch.log1p(steps) * attn_scale + 1.0).to(dtype)


class QueryTemperature(PositionScheme):
    """Llama 4's attention temperature tuning as a position scheme: q scaled by :func:`query_temperature`, k untouched.

    Args:
        floor_scale: tokens per step of the temperature (Llama 4: 8192).
        attn_scale: strength (Llama 4: 0.1).

    A layer with this scheme has no other position information (a NoPE layer). The factor uses the
    positions the attention layer passes; Hugging Face's Llama 4 uses the cache length plus the
    index in the sequence instead of ``position_ids``, which is the same for unpadded sequences and
    differs under left padding.
    """

    kind = "rotary"

    def __init__(self, floor_scale: int = 8192, attn_scale: float = 0.1):
        super().__init__()
        self.floor_scale = check_int("floor_scale", floor_scale)
        self.attn_scale = check_number("attn_scale", attn_scale, above=float("-inf"), finite=True)

    def extra_repr(self) -> str:
        return f"floor_scale={self.floor_scale}, attn_scale={self.attn_scale:g}"

    def rotation_tables(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        """The factor of every position (batch|1, seq), float32 (float64 for float64), for every layer of one forward pass."""
        check_integer_tensor("positions", positions)
        compute = torch.float64 if dtype == torch.float64 else torch.float32
        return query_temperature(positions, self.floor_scale, self.attn_scale, compute)

    def rotate_qk(self, q: Tensor, k: Tensor, positions: Tensor, tables: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Return (q * temperature(positions), k). q: (batch, heads, seq, head_dim); positions: (batch|1, seq).

        ``tables``: :meth:`rotation_tables` of these positions (None: computed here)."""
        check_float_tensor("q", q)
        if q.dim() != 4:
            raise ValueError(f"q must have shape (batch, heads, seq, head_dim), got {tuple(q.shape)}")
        check_integer_tensor("positions", positions)
        if positions.dim() != 2 or positions.shape[-1] != q.shape[2]:
            raise ValueError(f"positions must have shape (batch|1, seq={q.shape[2]}), got {tuple(positions.shape)}")
        scales = self.rotation_tables(positions, q.dtype) if tables is None else tables
        return (q * scales[:, None, :, None]).to(q.dtype), k
