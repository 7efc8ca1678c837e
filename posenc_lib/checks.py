"""Argument checks shared by the whole library: each raises an error that names the parameter,
the value received and what is allowed.

    check_int(name, value)               an int (not a bool) >= minimum, even when asked
    check_even_int(name, value)          an even int >= 2 (a width made of sin/cos or rotary pairs)
    check_number(name, value, above)     a real number (not a bool) > above, finite when asked
    check_choice(name, value, allowed)   one of a few strings
    check_grid(grid_h, grid_w, n_prefix) a patch grid and its leading class-like tokens
    check_integer_tensor(name, t)        a tensor of an integer dtype (positions, indices)
    check_float_tensor(name, t)          a tensor of a floating-point dtype
    check_float_dtype(name, dtype)       a floating-point torch.dtype
    check_positions(positions, b, s)     integer positions of shape (batch|1, seq)
    check_position_range(...)            positions inside a table or a grid
    check_attn_mask(mask, b, k_len)      a boolean attention mask

``is_int`` and ``is_number`` are the tests behind them, for the few checks whose message says
more (``"n_test must be an int in [1, 1796]"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real

import torch
from torch import Tensor

__all__ = [
    "is_int",
    "is_number",
    "check_int",
    "check_even_int",
    "check_number",
    "check_choice",
    "check_grid",
    "check_integer_tensor",
    "check_float_tensor",
    "check_float_dtype",
    "check_positions",
    "check_position_range",
    "check_attn_mask",
]


def is_int(value: object) -> bool:
    """True for an int (numpy and torch integer scalars too), False for a bool (an int subclass in Python)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """True for a real number (int or float), False for a bool."""
    return isinstance(value, Real) and not isinstance(value, bool)


def check_int(name: str, value: object, minimum: int = 1, even: bool = False) -> int:
    """Return ``value`` if it is an int >= ``minimum`` (and even when asked); raise naming ``name`` otherwise.

    TypeError for a value that is not an int (bool excluded), ValueError for an int out of range or odd.
    """
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    if even and value % 2:
        raise ValueError(f"{name} must be even (sin/cos come in pairs), got {value}")
    return int(value)


def check_even_int(name: str, value: object) -> int:
    """:func:`check_int` for a width of rotary or sin/cos pairs: an even int >= 2."""
    return check_int(name, value, minimum=2, even=True)


def check_number(name: str, value: object, above: float, finite: bool = False) -> float:
    """Return ``value`` as a float if it is a real number > ``above`` (and finite when asked); raise ValueError."""
    if not is_number(value) or not value > above or (finite and not math.isfinite(value)):
        raise ValueError(f"{name} must be a {'finite ' if finite else ''}number > {above:g}, got {value!r}")
    return float(value)


def check_choice(name: str, value: object, allowed: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``allowed``; raise ValueError listing them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def check_grid(grid_h: object, grid_w: object, n_prefix: object) -> None:
    """Raise unless grid_h, grid_w are ints >= 1 and n_prefix an int >= 0."""
    check_int("grid_h", grid_h)
    check_int("grid_w", grid_w)
    check_int("n_prefix", n_prefix, minimum=0)


def check_integer_tensor(name: str, t: object) -> None:
    """Raise TypeError naming ``name`` unless ``t`` is a tensor of an integer dtype (bool excluded).

    The one check behind every "positions" argument of the library.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be an integer tensor (torch.long), got {type(t).__name__}")
    if t.dtype.is_floating_point or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor (torch.long), got dtype {t.dtype}")


def check_float_tensor(name: str, t: object) -> None:
    """Raise TypeError naming ``name`` unless ``t`` is a tensor of a floating-point dtype."""
    if not isinstance(t, Tensor) or not t.dtype.is_floating_point:
        got = f"dtype {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
        raise TypeError(f"{name} must be a floating-point tensor, got {got}")


def check_float_dtype(name: str, dtype: object) -> torch.dtype:
    """Return ``dtype`` if it is a floating-point torch.dtype; raise TypeError naming ``name``."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def check_positions(positions: Tensor, batch: int, seq: int) -> None:
    """Raise a clear error unless ``positions`` is an integer (batch|1, seq) tensor."""
    check_integer_tensor("positions", positions)
    if positions.dim() != 2 or positions.shape[1] != seq or positions.shape[0] not in (1, batch):
        raise ValueError(
            f"positions must have shape (batch, seq) = ({batch}, {seq}) or (1, {seq}), "
            f"got {tuple(positions.shape)}"
        )


def check_position_range(name: str, positions: Tensor, size: int, what: str) -> None:
    """Raise ValueError unless every position lies in [0, size); ``what`` says what the size counts.

    Eager mode only: skipped under torch.compile, where reading the values would break the graph.
    """
    if torch.compiler.is_compiling() or positions.numel() == 0:
        return
    lo, hi = int(positions.min()), int(positions.max())
    if lo < 0 or hi >= size:
        raise ValueError(f"{name} must lie in [0, {size - 1}] ({what}), got values in [{lo}, {hi}]")


def check_attn_mask(attn_mask: Tensor, batch: int, k_len: int) -> None:
    """Raise a clear error unless ``attn_mask`` is a bool tensor; a 2-D one must be (batch, k_len)."""
    if not isinstance(attn_mask, Tensor) or attn_mask.dtype != torch.bool:
        dtype = attn_mask.dtype if isinstance(attn_mask, Tensor) else type(attn_mask).__name__
        raise TypeError(f"attn_mask must be a bool tensor (True = may attend), got dtype {dtype}")
    if attn_mask.dim() == 2 and tuple(attn_mask.shape) != (batch, k_len):
        raise ValueError(
            f"attn_mask of dim 2 must have shape (batch, k_len) = ({batch}, {k_len}), got {tuple(attn_mask.shape)}"
        )
