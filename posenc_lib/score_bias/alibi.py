"""ALiBi (Press et al. 2022): a fixed penalty, slope times distance, per head; no learned parameter."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from posenc_lib.checks import check_float_tensor, check_int
from posenc_lib.scheme import PositionScheme
from posenc_lib.score_bias.common import check_qk_positions, shared_rows

__all__ = ["alibi_slopes", "alibi_bias", "ALiBi"]


def _power_of_two_slopes(n: int) -> list[float]:
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(n_heads: int) -> Tensor:
    """ALiBi's fixed head slopes ``m_h``: shape (n_heads,), float32, all in (0, 1).

    For ``n`` a power of two, ``m_h = 2^(-8h/n)`` for ``h = 1..n`` (a geometric sequence from
    ``2^(-8/n)`` down to ``2^-8``). Otherwise (Press et al., reference code): the slopes of the
    nearest lower power of two ``p``, followed by every other slope of ``2p`` (the 1st, 3rd,
    5th, ...), which interleave between them, until there are ``n_heads``.
    """
    check_int("n_heads", n_heads)
    p = 2 ** math.floor(math.log2(n_heads))
    slopes = _power_of_two_slopes(p) + _power_of_two_slopes(2 * p)[0::2][: n_heads - p]
    return torch.tensor(slopes, dtype=torch.float64).float()


def alibi_bias(slopes: Tensor, q_positions: Tensor, k_positions: Tensor, compact: bool = False) -> Tensor:
    """ALiBi bias from the slopes (heads,) and integer positions (batch|1, q_len), (batch|1, k_len).

    ``compact=False``: the symmetric ``-m_h * |i - j|``, shape (batch|1, heads, q_len, k_len);
    right for any mask. ``compact=True``: the per-key ``m_h * j``, shape (batch|1, heads, 1, k_len),
    which gives the same softmax *only under a causal mask* (each row differs from the full
    form by the constant ``m_h * i``). Its values grow with the position, so at very long
    positions in low precision the compact form loses digits that the full one keeps; the
    bias is computed in at least float32 (the attention casts it to the model dtype).
    """
    check_float_tensor("slopes", slopes)
    if slopes.dim() != 1:
        raise ValueError(f"slopes must have shape (heads,), got {tuple(slopes.shape)}")
    check_qk_positions(q_positions, k_positions)
    dtype = torch.promote_types(slopes.dtype, torch.float32)  # never multiply positions in 16-bit
    m = slopes.to(dtype)[None, :, None, None]
    if compact:
        return m * k_positions[:, None, None, :].to(dtype)
    distance = (k_positions[:, None, :] - q_positions[:, :, None]).abs()
    return -m * distance[:, None].to(dtype)


class ALiBi(PositionScheme):
    """Attention with Linear Biases (Press et al. 2022): no position vector, a fixed linear penalty.

    Args:
        n_heads: number of heads; slopes from :func:`alibi_slopes` (a non-persistent buffer).
        causal: use the compact per-key bias ``m_h * j`` (batch|1, heads, 1, k_len), exact
            only when the model applies a causal mask (a decoder; attention without
            ``causal=True`` then raises ValueError). ``causal=False`` gives the symmetric
            ``-m_h * |i - j|`` for encoders.
    """

    kind = "bias"

    def __init__(self, n_heads: int, causal: bool = True):
        super().__init__()
        self.causal = self.requires_causal = causal
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def check_layer(self, n_heads: int, head_dim: int) -> None:
        """Raise ValueError unless the scheme has one slope per head of the layer."""
        if self.slopes.numel() != n_heads:
            raise ValueError(f"ALiBi(n_heads={self.slopes.numel()}) does not fit an attention layer of n_heads={n_heads}: "
                             f"build it with n_heads={n_heads} (one slope per head)")

    def score_bias(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """(batch|1, heads, 1, k_len) when causal, else (batch|1, heads, q_len, k_len)."""
        check_qk_positions(q_positions, k_positions)
        q_positions, k_positions = shared_rows(q_positions, k_positions)
        return alibi_bias(self.slopes, q_positions, k_positions, compact=self.causal)

    def extra_repr(self) -> str:
        return f"n_heads={self.slopes.numel()}, causal={self.causal}"
