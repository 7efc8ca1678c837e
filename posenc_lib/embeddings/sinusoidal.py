"""Sinusoidal positional encoding (Vaswani et al. 2017), as a table and as a position scheme.

Position ``p`` (counted from 0) gets a ``d_model``-vector made of ``d_model/2`` sin/cos pairs.
Pair ``i`` turns at the angular frequency ``w_i = base^(-2i/d_model)`` (radians per position):

    PE[p, 2i]   = sin(p * w_i)
    PE[p, 2i+1] = cos(p * w_i)

Small ``i`` = high frequency (wavelength ``2*pi``), large ``i`` = low frequency (wavelength up
to ``base * 2*pi``). Two column orders circulate and both are offered, under the names RoPE
uses for the same two orders of pairs (:data:`posenc_lib.frequencies.LAYOUTS`):

    "interleaved"  [sin_0, cos_0, sin_1, cos_1, ...]   (the paper; XLM / DistilBERT)
    "half"         [sin_0, sin_1, ... | cos_0, cos_1, ...]   (concatenated: tensor2tensor, fairseq, Marian)

They hold the same numbers: ``half == interleaved[:, sinusoidal_layout_permutation(d)]``. The
name "concat" (posenc_lib 0.2) still works for "half", with a DeprecationWarning, until 0.4.

Because each pair is a point on a circle, moving ``k`` positions is a rotation of every pair
by ``k * w_i``: there is one fixed matrix ``M_k`` with ``PE(p + k) = M_k @ PE(p)`` for every p
(:func:`shift_matrix`).

Precision: frequencies are computed in log space, ``exp(-2i/d * ln base)``, and angles
``p * w_i`` in float64, then the sines are cast to the requested dtype. With float32 angles,
position 10^4 would already be off by up to ~3e-4 rad (d_model 64); with float64, by ~1e-12.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor

from posenc_lib.checks import (
    check_choice,
    check_float_dtype,
    check_int,
    check_integer_tensor,
    check_number,
    is_int,
)
from posenc_lib.frequencies import LAYOUTS, Layout, even_odd_permutation, inverse_frequencies
from posenc_lib.scheme import PositionScheme

__all__ = [
    "LAYOUTS",
    "sinusoidal_frequencies",
    "sinusoidal_table",
    "sinusoidal_layout_permutation",
    "shift_matrix",
    "SinusoidalPE",
]



def _check_layout(layout: object, stacklevel: int) -> str:
    """``layout`` checked against :data:`LAYOUTS`; the 0.2 name "concat" becomes "half", with a DeprecationWarning
    pointing ``stacklevel`` frames up (at the caller's line)."""
    if layout == "concat":
        warnings.warn('layout="concat" is now called "half" (the name RoPE uses for the same order of pairs); '
                      '"concat" will be removed in posenc_lib 0.4', DeprecationWarning, stacklevel=stacklevel + 1)
        return "half"
    return check_choice("layout", layout, LAYOUTS)


def _check_table_args(base: object, layout: object, dtype: object) -> tuple[float, str, torch.dtype]:
    """The base, layout and dtype shared by every table function, checked (a warning names the function's caller)."""
    base = check_number("base", base, above=1, finite=True)
    return base, _check_layout(layout, stacklevel=3), check_float_dtype("dtype", dtype)


def sinusoidal_frequencies(d_model: int, base: float = 10000.0) -> Tensor:
    """Angular frequencies ``w_i = base^(-2i/d_model)``, i = 0 .. d_model/2 - 1: shape (d_model//2,), float64.

    :func:`posenc_lib.frequencies.inverse_frequencies` in float64: computed in log space,
    ``exp(-(2i/d_model) * ln base)``, the same ladder as RoPE's theta_i. Wavelength of pair i: ``2*pi / w_i``.
    """
    d_model = check_int("d_model", d_model, 2, even=True)
    base = check_number("base", base, above=1, finite=True)
    return inverse_frequencies(d_model, base, dtype=torch.float64)


def _sinusoids(positions: Tensor, d_model: int, base: float, layout: str) -> Tensor:
    """Encodings of float64 ``positions`` (n,): shape (n, d_model), float64."""
    angles = positions[:, None] * sinusoidal_frequencies(d_model, base)[None, :]  # (n, d_model/2)
    sin, cos = angles.sin(), angles.cos()
    if layout == "interleaved":
        return torch.stack([sin, cos], dim=-1).reshape(len(positions), d_model)
    return torch.cat([sin, cos], dim=-1)


def sinusoidal_table(
    max_len: int,
    d_model: int,
    base: float = 10000.0,
    layout: Layout = "interleaved",
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """The encodings of positions 0 .. max_len-1: shape (max_len, d_model).

    Angles are computed in float64 on the CPU and the result is cast to ``dtype`` and moved to
    ``device`` at the end. ``layout`` is "interleaved" (sin, cos, sin, cos, ...) or "half"
    ([all sines | all cosines]).
    """
    max_len = check_int("max_len", max_len, 1)
    d_model = check_int("d_model", d_model, 2, even=True)
    base, layout, dtype = _check_table_args(base, layout, dtype)
    positions = torch.arange(max_len, dtype=torch.float64)
    return _sinusoids(positions, d_model, base, layout).to(device=device, dtype=dtype)


def sinusoidal_layout_permutation(d_model: int) -> Tensor:
    """Column permutation ``perm`` (d_model,) int64 with ``half_table == interleaved_table[:, perm]``.

    ``perm = [0, 2, 4, ..., 1, 3, 5, ...]``: first the sine columns, then the cosine columns.
    The inverse, ``torch.argsort(perm)``, maps a half table back to interleaved.
    """
    d_model = check_int("d_model", d_model, 2, even=True)
    return even_odd_permutation(d_model)


def shift_matrix(
    k: int,
    d_model: int,
    base: float = 10000.0,
    layout: Layout = "interleaved",
    dtype: torch.dtype = torch.float64,
) -> Tensor:
    """The fixed linear map ``M_k`` (d_model, d_model) with ``PE(p + k) = M_k @ PE(p)`` for every p.

    In the interleaved layout it is block-diagonal; block i rotates the pair (sin, cos) of
    frequency ``w_i`` by the angle ``k * w_i``:

        [sin((p+k)w)]   [ cos(kw)  sin(kw)] [sin(pw)]
        [cos((p+k)w)] = [-sin(kw)  cos(kw)] [cos(pw)]

    It depends on k but not on p. For a table (rows = positions) the identity reads
    ``table[p + k] = table[p] @ M_k.T``. ``k`` may be negative (``M_{-k} = M_k.T``).
    In the "half" layout the same map is the permuted matrix ``M[perm][:, perm]``.
    """
    if not is_int(k):
        raise TypeError(f"k must be an int (an offset in positions), got {k!r} of type {type(k).__name__}")
    d_model = check_int("d_model", d_model, 2, even=True)
    base, layout, dtype = _check_table_args(base, layout, dtype)
    angle = int(k) * sinusoidal_frequencies(d_model, base)  # (d_model/2,) float64
    cos, sin = angle.cos(), angle.sin()
    even = torch.arange(0, d_model, 2)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[even, even] = cos
    m[even, even + 1] = sin
    m[even + 1, even] = -sin
    m[even + 1, even + 1] = cos
    if layout == "half":
        perm = sinusoidal_layout_permutation(d_model)
        m = m[perm][:, perm]
    return m.to(dtype)


class SinusoidalPE(PositionScheme):
    """Fixed sinusoidal encoding added to the token embeddings (kind "embedding").

    Args:
        d_model: width of the encoding; a positive even int.
        max_len: number of rows computed up front (positions 0 .. max_len-1).
        base: the ``10000`` of the formula; must be > 1.
        layout: "interleaved" (Vaswani et al.) or "half" ([sin | cos]; "concat" before 0.3).

    The table is a *non-persistent buffer* ``table`` (max_len, d_model): it is not a parameter
    (the optimizer never sees it), it is not saved in ``state_dict`` (it is recomputed from the
    four arguments above), and it follows ``.to(device)`` / ``.to(dtype)`` like any buffer.

    Past ``max_len`` the table **extends itself**: the formula is defined for every position, so
    when a position >= len(table) is requested, the table is recomputed (float64 angles, cast
    to the buffer's current dtype, on its current device) with room for at least twice as many
    rows. ``max_len`` is therefore only the size of the initial cache, not a limit.

    ``forward(positions)``: positions (batch, seq) int64 >= 0 (any integer shape works) ->
    (batch, seq, d_model) in the buffer's dtype. Under ``torch.compile`` the rows are computed
    from the formula directly (same values), so the module compiles with ``fullgraph=True``.
    """

    kind = "embedding"

    def __init__(self, d_model: int, max_len: int = 512, base: float = 10000.0, layout: Layout = "interleaved"):
        super().__init__()
        self.d_model = check_int("d_model", d_model, 2, even=True)
        self.max_len = check_int("max_len", max_len, 1)
        self.base = check_number("base", base, above=1, finite=True)
        self.layout = _check_layout(layout, stacklevel=2)
        self.table: Tensor
        self.register_buffer("table", sinusoidal_table(max_len, d_model, base, self.layout), persistent=False)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base}, layout={self.layout!r}"

    def _extend(self, needed: int) -> None:
        """Recompute the table with at least ``needed`` rows (and at least double the current size)."""
        new_len = max(needed, 2 * self.table.shape[0])
        self.table = sinusoidal_table(
            new_len, self.d_model, self.base, self.layout, dtype=self.table.dtype, device=self.table.device
        )

    def forward(self, positions: Tensor) -> Tensor:
        """Encodings of ``positions`` (batch, seq) int -> (batch, seq, d_model), in the table's dtype."""
        check_integer_tensor("positions", positions)
        if torch.compiler.is_compiling():
            # No data-dependent checks or table growth inside a graph: the same float64 formula
            # the table is built with, evaluated at the positions themselves.
            flat = _sinusoids(positions.reshape(-1).to(torch.float64), self.d_model, self.base, self.layout)
            return flat.reshape(*positions.shape, self.d_model).to(self.table.dtype)
        if positions.numel() == 0:
            return self.table.new_zeros(*positions.shape, self.d_model)
        low, high = int(positions.min()), int(positions.max())
        if low < 0:
            raise ValueError(f"positions must be >= 0 (sinusoidal positions count from 0), got minimum {low}")
        if high >= self.table.shape[0]:
            self._extend(high + 1)
        return self.table[positions]

    def add_to_embeddings(self, x: Tensor, positions: Tensor) -> Tensor:
        """x (batch, seq, d_model) + PE(positions), positions (batch|1, seq); result in x's dtype."""
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")
        return x + self(positions).to(x.dtype)
