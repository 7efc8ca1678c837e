"""The textbook RoPE formulas the tests hold the library's one rotation against: references, not library code.

    rotate_half_formula(x, cos, sin)            Hugging Face's x * [cos | cos] + rotate_half(x) * [sin | sin], in x's dtype
    complex_formula(x, positions, inv_freq)     Meta's: pairs (x[2i], x[2i+1]) as complex numbers times e^(j m theta_i)

Both rotate the first 2c dims of x (batch, heads, seq, head_dim) and pass the rest through; tables
cos, sin are half width (batch|1, seq, c), inv_freq (c,).
"""

from __future__ import annotations

import torch
from torch import Tensor


def rotate_half_formula(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The half layout as Hugging Face writes it: full-width tables, every product and sum rounded to x's dtype."""
    if cos.dim() == 2:
        cos, sin = cos[None], sin[None]
    rot = 2 * cos.shape[-1]
    cos = torch.cat((cos, cos), dim=-1).unsqueeze(1).to(x.dtype)  # (batch|1, 1, seq, rot): over heads
    sin = torch.cat((sin, sin), dim=-1).unsqueeze(1).to(x.dtype)
    x1, x2 = x[..., : rot // 2], x[..., rot // 2 : rot]
    rotated = x[..., :rot] * cos + torch.cat((-x2, x1), dim=-1) * sin
    return torch.cat((rotated, x[..., rot:]), dim=-1)


def complex_formula(x: Tensor, positions: Tensor, inv_freq: Tensor) -> Tensor:
    """The interleaved layout as Meta's Llama writes it: angles and the complex multiply in float32 (float64 for
    float64 x), then back to x's dtype. positions (batch, seq) or (seq,)."""
    c = inv_freq.shape[-1]
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = positions.to(compute).unsqueeze(-1) * inv_freq.to(compute)
    turn = torch.polar(torch.ones_like(angles), angles)
    if turn.dim() == 3:
        turn = turn.unsqueeze(1)  # (batch, 1, seq, c): over heads
    z = torch.view_as_complex(x[..., : 2 * c].to(compute).unflatten(-1, (c, 2)).contiguous())
    rotated = torch.view_as_real(z * turn).flatten(-2)
    return torch.cat((rotated, x[..., 2 * c :].to(compute)), dim=-1).to(x.dtype)
