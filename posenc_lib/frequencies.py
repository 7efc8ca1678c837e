"""The one geometric ladder of sinusoids and RoPE: frequencies ``base^(-2i/d)``, i = 0 .. d/2 - 1.

Pair i of a width-d encoding turns at ``theta_i = base^(-2i/d)`` radians per position: theta_0 = 1
(wavelength 2 pi), each next pair a constant factor slower, the last almost ``base`` times slower.
The sinusoidal table (:mod:`posenc_lib.embeddings.sinusoidal`, its 2-D form in
:mod:`posenc_lib.embeddings.tables_2d`) writes sin and cos of ``p * theta_i``; RoPE
(:mod:`posenc_lib.rotary.rope`, its scalings, M-RoPE, 2-D RoPE) turns pair i by that angle.

Two precisions, one formula each:

* float32 (RoPE's tables): ``1 / base ** (2i/d)`` with the exponent in float32, exactly as
  Hugging Face computes it, so RoPE tables agree with it bit for bit.
* float64 (the sinusoidal tables, and RoPE in a float64 model): in log space,
  ``exp(-(2i/d) * ln base)``.

Both families also share the two orders of the pairs, :data:`LAYOUTS`, one name each across the library:
"interleaved" puts pair i at dims (2i, 2i+1) (the paper's sinusoid, Meta's RoPE), "half" at (i, i + d/2)
(tensor2tensor's and Marian's sinusoid, Hugging Face's ``rotate_half``). :func:`even_odd_permutation`
is the column order that takes the first to the second.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor

from posenc_lib.checks import check_even_int, check_number

__all__ = ["LAYOUTS", "Layout", "inverse_frequencies", "wavelengths", "even_odd_permutation"]

# The type of a ``layout`` argument.
Layout = Literal["half", "interleaved"]
#: The names of the two orders of the d/2 pairs of a width-d vector ("half" puts pair i at (i, i + d/2),
#: "interleaved" at (2i, 2i+1)).
LAYOUTS: tuple[str, ...] = ("half", "interleaved")


def _exponents(dim: int, dtype: torch.dtype, device: torch.device | str | None) -> Tensor:
    """2i/dim, i = 0 .. dim/2 - 1, in ``dtype``."""
    return torch.arange(0, dim, 2, dtype=torch.int64, device=device).to(dtype) / dim


def inverse_frequencies(
    dim: int, base: float = 10000.0, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
) -> Tensor:
    """theta_i = base^(-2i/dim), i = 0 .. dim/2 - 1: shape (dim // 2,), in ``dtype`` (float32 or float64).

    float32: ``1 / base ** (2i/dim)`` (Hugging Face's arithmetic); float64: ``exp(-(2i/dim) * ln base)``.
    """
    dim = check_even_int("dim", dim)
    base = check_number("base", base, above=1, finite=True)
    if dtype == torch.float64:
        return torch.exp(-_exponents(dim, dtype, device) * math.log(base))
    if dtype != torch.float32:
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    return 1.0 / wavelengths(dim, base, device=device)


def wavelengths(dim: int, base: float = 10000.0, device: torch.device | str | None = None) -> Tensor:
    """base^(2i/dim) = 1 / theta_i, float32 (Hugging Face's arithmetic): positions per radian of pair i.

    One full turn of pair i takes ``2 pi * wavelengths(dim, base)[i]`` positions.
    """
    dim = check_even_int("dim", dim)
    base = check_number("base", base, above=1, finite=True)
    return base ** _exponents(dim, torch.float32, device)


def even_odd_permutation(dim: int) -> Tensor:
    """perm = cat(arange(0, dim, 2), arange(1, dim, 2)) (dim,) int64: the even columns, then the odd ones.

    ``split == interleaved[..., perm]`` for a layout of pairs (2i, 2i+1) against one of pairs (i, i + dim/2);
    ``torch.argsort(perm)`` goes back.
    """
    dim = check_even_int("dim", dim)
    return torch.cat((torch.arange(0, dim, 2), torch.arange(1, dim, 2)))
