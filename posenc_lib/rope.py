"""Rotary position embedding (RoPE, Su et al. "RoFormer"): turn query/key pairs by an angle that grows with position.

Split a head of width d into d/2 pairs. At position m, pair i is rotated by the angle
``m * theta_i`` with ``theta_i = base^(-2i/d)``. Because a rotation by m followed by the
inverse of a rotation by n is a rotation by m - n, the score <R_m q, R_n k> depends on the
positions only through m - n: relative position, obtained with absolute angles.

Two layouts say which dims form a pair, and a checkpoint only works in its own one:

* ``"half"`` (Hugging Face ``rotate_half``): pair i is (x[i], x[i + d/2]).
* ``"interleaved"`` (Meta's LLaMA reference, complex numbers): pair i is (x[2i], x[2i+1]).

:func:`rope_layout_permutation` and :func:`convert_qk_weight` translate between them.

Tables are *half width*: ``cos, sin`` have shape (batch|1, seq, rot_dim // 2), one column
per pair, and broadcast over heads. The angles and their cos/sin are computed in float32
and cast to the model dtype last: in bfloat16 a position like 3000 is not even representable
(spacing 16), so bf16 angles are wrong by whole radians. Float64 tables (a model moved to
float64) are computed in float64 throughout, frequencies included.

Speed. RoPE does a few multiply-adds per byte it reads, so its cost is memory traffic and the
floor is copying q and k. :func:`apply_rope` writes into ``out`` (``out=x`` rotates in place:
a fresh buffer over ~32 MB is page-faulted by the OS on first touch, which can cost more than
the rotation). Interleaved pairs in float32/float64 are one complex multiply, straight into
``out``: one pass, copy speed. Eager PyTorch has no one-pass op for half-layout pairs (complex
numbers need adjacent pairs), so the eager half path takes four element-wise ops on the two
halves (five in place), walking a large tensor in blocks of 4 MiB that stay in the
last-level cache between those ops. bfloat16/float16 blocks are copied to float32, rotated there
and rounded once on the way back, faster and more accurate than ops in those dtypes. The
backward pass is the inverse rotation of the gradient (one more pass), and q and k share one
autograd node.

``compiled=True`` (opt-in) hands the half layout to inductor as one loop that reads x once
and writes out once: x is viewed as (..., 2, c), two rows of pair members, and every output
row is ``row * cos + other_row * (-sin | sin)``; ``flip`` reads the other row at the same
columns, so all loads are contiguous and vectorised (see :func:`_turn_half`). q and k go
through one compiled call. The first call per input signature compiles (seconds; at most 64
signatures, then eager), and in place goes through a temporary, since one loop cannot
overwrite a pair's first half before reading it for the second. The interleaved layout stays
eager with ``compiled=True``: inductor loads swapped neighbours one element at a time.
Inside a model that is itself under ``torch.compile``, the plain differentiable formula is
traced instead and inductor fuses it with its neighbours.

Measured with ``make bench`` (2 threads of an AMD EPYC; multiples of the time to copy q and k;
(8, 8, 256, 64) / (1, 32, 2048, 128); ranges over the last runs, bench/results/rope.md has the
latest): interleaved float32 in place 1.7-1.9x / 0.7-1.1x; half float32 eager in place
3.6-4.1x / 1.8-2.0x, compiled (out= or new output) 1.8-2.5x / 1.1-1.6x; bfloat16 half compiled
5.2-6.1x / 1.5-2.6x, eager 13-18x / 4.6-6x; bfloat16 interleaved (eager) 9x / 3.3x. A bfloat16
copy moves half the bytes of a float32 one, while rotating converts every element to float32
and rounds it back; PyTorch's CPU rounding (no AVX512-BF16 instruction) alone costs 1.7-2.5x a
bfloat16 copy, so bfloat16 is bound by arithmetic, not memory, wherever the data is in cache.

Shapes:
    x, q, k         (batch, heads, seq, head_dim)
    positions       (batch, seq) or (seq,) integer
    inv_freq        (rot_dim // 2,) float32
    cos, sin        (batch|1, seq, rot_dim // 2) or (seq, rot_dim // 2); rot_dim <= head_dim
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import torch
from torch import Tensor

from .attention import PositionScheme, check_integer_tensor
from .rope_scaling import rope_frequencies, rope_inv_freq

__all__ = [
    "LAYOUTS",
    "rope_inv_freq",
    "rope_cos_sin",
    "apply_rope",
    "apply_rope_qk",
    "apply_rope_complex",
    "rotate_half",
    "rotate_half_reference",
    "rope_layout_permutation",
    "convert_qk_weight",
    "RotaryPE",
]

Layout = Literal["half", "interleaved"]
LAYOUTS: tuple[str, ...] = ("half", "interleaved")

# Elements of x per block in the eager kernel: 2**20 (4 MiB of float32), so a block and its
# temporary stay in the last-level cache between the ops while each op still has enough work
# to hide its ~5 us of dispatch. Measured at (1, 32, 2048, 128), 2 threads, times a copy of q
# and k: blocks of 2**17 / 2**18 / 2**19 / 2**20 / 2**21 elements gave 2.7 / 2.0 / 1.7-2.0 /
# 1.7 / 2.2x (float32, half, in place) and 5.7 / 4.1 / 3.2-3.5 / 3.3 / 4.9x (bfloat16,
# interleaved). Tensors up to _WHOLE_ELEMENTS (8 MiB of float32) are one block.
_BLOCK_ELEMENTS = 2**20
_WHOLE_ELEMENTS = 2**21


# ----------------------------------------------------------------------------- validation


def _check_layout(layout: str, name: str = "layout") -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"{name} must be one of {list(LAYOUTS)}, got {layout!r}")


def _check_float(name: str, t: Any) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor (float16/bfloat16/float32/float64), got {t.dtype}")


def _check_positions(positions: Any) -> None:
    check_integer_tensor("positions", positions)
    if positions.dim() not in (1, 2):
        raise ValueError(f"positions must have shape (seq,) or (batch, seq), got {tuple(positions.shape)}")


def _check_x(name: str, x: Any) -> None:
    _check_float(name, x)
    if x.dim() != 4:
        raise ValueError(f"{name} must have shape (batch, heads, seq, head_dim), got {tuple(x.shape)}")
    if x.shape[-1] % 2:
        raise ValueError(f"{name}.shape[-1] (head_dim) must be even, got {x.shape[-1]}")


def _check_out(name: str, out: Any, x: Tensor) -> None:
    """out (if given) must be a tensor with x's shape, dtype and device."""
    if out is not None and (
        not isinstance(out, Tensor) or out.shape != x.shape or out.dtype != x.dtype or out.device != x.device
    ):
        got = (tuple(out.shape), out.dtype, out.device) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(f"{name} must be a tensor of the shape, dtype and device {tuple(x.shape), x.dtype, x.device}, "
                         f"got {got}")


def _table_3d(cos: Tensor, sin: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """Check half-width cos/sin against x (batch, heads, seq, head_dim); return them as (batch|1, seq, c)."""
    _check_float("cos", cos)
    _check_float("sin", sin)
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}")
    if cos.dim() == 2:
        cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)
    batch, _, seq, head_dim = x.shape
    if cos.dim() != 3 or cos.shape[0] not in (1, batch) or cos.shape[1] != seq or not 1 <= cos.shape[2] <= head_dim // 2:
        raise ValueError(
            f"cos and sin must have shape (batch|1, seq, rot_dim // 2) = ({batch}|1, {seq}, 1..{head_dim // 2}) "
            f"for x of shape {tuple(x.shape)}, got {tuple(cos.shape)}"
        )
    return cos, sin


# ----------------------------------------------------------------------------- tables


def rope_cos_sin(
    positions: Tensor, inv_freq: Tensor, attention_factor: float = 1.0, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Tensor]:
    """Half-width cos and sin of the angles ``positions * inv_freq``.

    Args:
        positions: (batch, seq) or (seq,) integer positions (any integers, negative ones too).
        inv_freq: (rot_dim // 2,) frequencies, e.g. from :func:`rope_inv_freq`.
        attention_factor: multiplies cos and sin (YaRN's temperature; 1.0 otherwise).
        dtype: dtype of the result. The angles, cos and sin are computed in float32 for
            float32 and lower precisions, and cast at the very end; in float64 for float64
            (then pass float64 frequencies too: float32 ones are off by up to 6e-8 relative,
            1e-3 rad at position 1e5 for theta = 0.2).

    Returns:
        ``(cos, sin)``, each (batch, seq, rot_dim // 2) or (seq, rot_dim // 2), on positions' device.

    Precision. The float32 angle m * theta is off the exact one by at most 2**-24 |m theta|
    (2e-3 rad at m = 32768, theta = 1); casting cos and sin to bfloat16/float16 adds the unit
    roundoff u (2**-8 / 2**-11) and the rotation about 3u more. So for positions up to M the
    rotated pair is within (2**-23 * M * max(theta) + 4u) |pair| of the exact rotation:
    0.0195 |pair| in bfloat16 and 0.0059 |pair| in float16 at M = 32768 (tests check both).
    Angles computed in bfloat16 instead are off by up to 128 theta rad at m ~ 32768 (the
    spacing of bfloat16 numbers there is 256): the rotation becomes noise.
    """
    _check_positions(positions)
    _check_float("inv_freq", inv_freq)
    if inv_freq.dim() != 1:
        raise ValueError(f"inv_freq must have shape (rot_dim // 2,), got {tuple(inv_freq.shape)}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    angles = positions.to(compute).unsqueeze(-1) * inv_freq.to(device=positions.device, dtype=compute)
    cos, sin = angles.cos(), angles.sin()
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos.to(dtype), sin.to(dtype)


# ----------------------------------------------------------------------------- readable references


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dim: the 90-degree turn of every half-layout pair."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_half_reference(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The textbook half-layout formula ``x * cat(cos, cos) + rotate_half(x) * cat(sin, sin)``.

    Readable and slow (it materialises full-width tables and four temporaries); the fast
    :func:`apply_rope` is tested against it. x: (batch, heads, seq, head_dim); cos, sin:
    (batch|1, seq, c) half width. Only the first 2c dims are rotated, the rest pass through.
    """
    _check_x("x", x)
    cos, sin = _table_3d(cos, sin, x)
    rot = 2 * cos.shape[-1]
    cos = torch.cat((cos, cos), dim=-1).unsqueeze(1)  # (batch|1, 1, seq, rot): broadcast over heads
    sin = torch.cat((sin, sin), dim=-1).unsqueeze(1)
    rotated = x[..., :rot] * cos + rotate_half(x[..., :rot]) * sin
    return torch.cat((rotated, x[..., rot:]), dim=-1).to(x.dtype)


def apply_rope_complex(x: Tensor, positions: Tensor, inv_freq: Tensor) -> Tensor:
    """Interleaved-layout RoPE with complex numbers, as in Meta's LLaMA reference.

    Pairs (x[2i], x[2i+1]) are read as complex numbers z_i and multiplied by
    ``exp(i * m * theta_i)`` (``torch.polar``); computed in float32 (float64 for float64 x) and
    cast back to x's dtype.
    x: (batch, heads, seq, head_dim); positions: (batch, seq) or (seq,); inv_freq: (c,) with
    2c <= head_dim (dims from 2c on pass through).
    """
    _check_x("x", x)
    _check_positions(positions)
    c = inv_freq.shape[-1]
    if not 1 <= c <= x.shape[-1] // 2:
        raise ValueError(f"inv_freq must have 1..head_dim // 2 = {x.shape[-1] // 2} entries, got {c}")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = positions.to(compute).unsqueeze(-1) * inv_freq.to(device=x.device, dtype=compute)
    turn = torch.polar(torch.ones_like(angles), angles)  # (batch|seq..., c) unit complex numbers
    if turn.dim() == 3:
        turn = turn.unsqueeze(1)  # broadcast over heads
    z = torch.view_as_complex(x[..., : 2 * c].to(compute).unflatten(-1, (c, 2)).contiguous())
    rotated = torch.view_as_real(z * turn).flatten(-2)
    return torch.cat((rotated, x[..., 2 * c :].to(compute)), dim=-1).to(x.dtype)


# ----------------------------------------------------------------------------- fast path


def _pairs(x: Tensor, c: int, layout: str) -> tuple[Tensor, Tensor]:
    """Views (first, second) of the c rotated pairs of x: half = (x[:c], x[c:2c]), interleaved = (x[0::2], x[1::2])."""
    if layout == "half":
        return x[..., :c], x[..., c : 2 * c]
    return x[..., 0 : 2 * c : 2], x[..., 1 : 2 * c : 2]


def _rotate_pairs(
    x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, o1: Tensor, o2: Tensor, inverse: bool, inplace: bool
) -> None:
    """o1 = x1 cos - x2 sin, o2 = x2 cos + x1 sin (sin negated when ``inverse``), with o1, o2 preallocated.

    Four element-wise ops into o1, o2; in place (o1 is x1, o2 is x2) a fifth one first saves
    ``x1 * sin``, which writing o1 would overwrite.
    """
    sign = -1.0 if inverse else 1.0
    x1_sin = x1 * sin if inplace else None
    torch.mul(x1, cos, out=o1)
    o1.addcmul_(x2, sin, value=-sign)
    torch.mul(x2, cos, out=o2)
    if inplace:
        o2.add_(x1_sin, alpha=sign)
    else:
        o2.addcmul_(x1, sin, value=sign)


def _blocks(batch: int, heads: int, seq: int, head_dim: int) -> list[tuple[slice, slice]]:
    """(batch slice, seq slice) blocks of about _BLOCK_ELEMENTS elements each, all heads included.

    A tensor that fits in the last-level cache anyway (<= _WHOLE_ELEMENTS) is one block: fewer ops.
    """
    per_position = heads * head_dim
    if batch * seq * per_position <= _WHOLE_ELEMENTS:
        return [(slice(None), slice(None))]
    if seq * per_position >= _BLOCK_ELEMENTS:
        step = max(1, _BLOCK_ELEMENTS // per_position)
        return [(slice(b, b + 1), slice(s, s + step)) for b in range(batch) for s in range(0, seq, step)]
    step = max(1, _BLOCK_ELEMENTS // (seq * per_position))
    return [(slice(b, b + step), slice(None)) for b in range(0, batch, step)]


def _complex_view(t: Tensor, c: int) -> Tensor | None:
    """The first c interleaved pairs of t as a complex tensor sharing t's memory, or None if impossible."""
    strides = t.stride()
    if t.dtype not in (torch.float32, torch.float64) or strides[-1] != 1 or t.storage_offset() % 2:
        return None
    if any(stride % 2 for stride in strides[:-1]):
        return None
    pairs = t if 2 * c == t.shape[-1] else t[..., : 2 * c]
    return torch.view_as_complex(pairs.view(*pairs.shape[:-1], c, 2))


def _turn(cos: Tensor, sin: Tensor, dtype: torch.dtype, inverse: bool) -> Tensor:
    """exp(i angle) (exp(-i angle) when ``inverse``) as a complex table, in float64 for float64 x, else float32."""
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    return torch.complex(cos.to(compute), (-sin if inverse else sin).to(compute))


def _rotate_interleaved(x: Tensor, turn: Tensor, out: Tensor) -> None:
    """Interleaved pairs as complex numbers times ``turn``: one pass when x and out can be viewed as complex.

    Otherwise (bfloat16/float16, odd strides) each block is copied to a float32 (float64 for
    float64 x) buffer, turned there, and written back: three contiguous ops, one rounding.
    turn: (batch|1, 1, seq, c) complex, from :func:`_turn`.
    """
    c = turn.shape[-1]
    z = _complex_view(x, c)
    z_out = z if out is x else _complex_view(out, c)
    if z is not None and z_out is not None:
        torch.mul(z, turn, out=z_out)
        return
    for b, s in _blocks(*x.shape):
        block = x[b, :, s, : 2 * c]
        buffer = torch.empty(block.shape, dtype=turn.real.dtype, device=x.device).copy_(block)  # always a fresh copy
        torch.view_as_complex(buffer.unflatten(-1, (c, 2))).mul_(turn[b if turn.shape[0] > 1 else slice(None), :, s])
        out[b, :, s, : 2 * c].copy_(buffer)


def _rotate_half(x: Tensor, cos: Tensor, sin: Tensor, out: Tensor, inverse: bool) -> None:
    """Half-layout pairs, block by block so the ops of a block stay in cache. cos, sin: (batch|1, 1, seq, c).

    bfloat16/float16 blocks are copied to float32, rotated there in place and rounded once on
    the way back: faster than element-wise ops in those dtypes (each converts on the fly), and
    more accurate. One float32 scratch block, not two: glibc hands memory freed above its trim
    threshold back to the OS, and a second 4 MB scratch made every call page-fault ~8 MB anew
    (15 ms instead of 1.6 ms for q and k of shape (8, 8, 256, 64), 1 thread).
    """
    c = cos.shape[-1]
    low_precision = x.dtype in (torch.bfloat16, torch.float16)
    if low_precision:
        cos, sin = cos.float(), sin.float()
    for b, s in _blocks(*x.shape):
        tb = b if cos.shape[0] > 1 else slice(None)
        src = x[b, :, s, : 2 * c].float() if low_precision else x[b, :, s]
        dst = src if low_precision else out[b, :, s]
        x1, x2 = _pairs(src, c, "half")
        o1, o2 = _pairs(dst, c, "half")
        _rotate_pairs(x1, x2, cos[tb, :, s], sin[tb, :, s], o1, o2, inverse, inplace=low_precision or out is x)
        if low_precision:
            out[b, :, s, : 2 * c].copy_(src)


def _rotate_into(
    x: Tensor, cos: Tensor, sin: Tensor, layout: str, out: Tensor, inverse: bool, turn: Tensor | None
) -> Tensor:
    """Rotate x (batch, heads, seq, head_dim) into out (may be x), eagerly, without autograd.

    cos, sin: (batch|1, 1, seq, c), broadcast over heads; turn: their :func:`_turn` table,
    used by the interleaved layout (None for the half layout).
    """
    c = cos.shape[-1]
    if out is not x and 2 * c < x.shape[-1]:
        out[..., 2 * c :].copy_(x[..., 2 * c :])
    if layout == "interleaved":
        _rotate_interleaved(x, turn, out)
    else:
        _rotate_half(x, cos, sin, out, inverse)
    return out


def _rotate_formula(x: Tensor, cos: Tensor, sin: Tensor, layout: str) -> Tensor:
    """The same rotation as plain differentiable tensor ops (for torch.compile and learnable frequencies)."""
    c = cos.shape[-1]
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    x1, x2 = _pairs(x, c, layout)
    r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    rotated = torch.cat((r1, r2), dim=-1) if layout == "half" else torch.stack((r1, r2), dim=-1).flatten(-2)
    return torch.cat((rotated, x[..., 2 * c :]), dim=-1).to(x.dtype)


def _turn_half(x: Tensor, cos: Tensor, sin: Tensor, sign: Tensor, out: Tensor) -> None:
    """Half-layout rotation written for inductor's one-pass loop: out = x turned (out may not be x).

    x, out: (batch, heads, seq, 2c), viewed as (..., 2, c): row 0 holds the first members of the
    c pairs, row 1 the second. cos, sin: (batch|1, seq, c); sign: (2, 1), (-1, 1) to turn
    forward or (1, -1) to turn back. Each output row is ``row * cos + other_row * sign * sin``:
    ``flip`` reads the other row at the same columns, so every load is contiguous, and inductor
    fuses it all into one vectorised loop that reads x once and writes out once, converting
    to the tables' dtype and rounding once.
    """
    c = cos.shape[-1]
    cos, sin = cos[:, None, :, None, :], sin[:, None, :, None, :]  # broadcast over heads and the two rows
    pairs = x.unflatten(-1, (2, c)).to(cos.dtype)
    out.unflatten(-1, (2, c)).copy_(pairs * cos + pairs.flip(-2) * (sign * sin))


def _turn_half_qk(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, sign: Tensor, q_out: Tensor, k_out: Tensor) -> None:
    """:func:`_turn_half` on q and k in one compiled call: one call overhead (~25 us) instead of two."""
    _turn_half(q, cos, sin, sign, q_out)
    _turn_half(k, cos, sin, sign, k_out)


# The compiled kernels (built on first use), the (2, 1) sign tensors, and "error": why the
# compiled path is off. Each kernel compiles for at most _MAX_SIGNATURES input signatures
# (shapes, strides, dtypes; its own count, not dynamo's global default of 8); past that,
# dynamo refuses (fullgraph=True) and the eager path is used.
_COMPILED: dict[Any, Any] = {}
_KERNELS = {1: _turn_half, 2: _turn_half_qk}
_MAX_SIGNATURES = 64


def _sign(inverse: bool, dtype: torch.dtype, device: torch.device) -> Tensor:
    key = ("sign", inverse, dtype, device)
    if key not in _COMPILED:
        _COMPILED[key] = torch.tensor([[1.0], [-1.0]] if inverse else [[-1.0], [1.0]], dtype=dtype, device=device)
    return _COMPILED[key]


def _rotate_half_compiled(
    xs: tuple[Tensor, ...], cos: Tensor, sin: Tensor, outs: tuple[Tensor, ...], inverse: bool = False
) -> bool:
    """Turn each x of xs (half layout) into the matching out with inductor's fused loop.

    cos, sin: (batch|1, seq, c). Returns False, and the caller uses the eager path, when
    torch.compile does not work here (warned once) or too many signatures were compiled.
    In place (out is x) goes through a temporary and a copy: one loop cannot overwrite a
    pair's first half before it has read it for the second.
    """
    if "error" in _COMPILED:
        return False
    compute = torch.float64 if xs[0].dtype == torch.float64 else torch.float32
    c = cos.shape[-1]
    tables = (cos, sin) if cos.dtype == sin.dtype == compute else (cos.to(compute), sin.to(compute))
    targets = tuple(torch.empty_like(x) if o is x else o for x, o in zip(xs, outs))
    partial = 2 * c < xs[0].shape[-1]
    args = [*(t[..., : 2 * c] if partial else t for t in xs), *tables, _sign(inverse, compute, cos.device),
            *(t[..., : 2 * c] if partial else t for t in targets)]
    try:
        kernel = _COMPILED.get(len(xs))
        if kernel is None:
            kernel = _COMPILED[len(xs)] = torch.compile(
                _KERNELS[len(xs)], dynamic=False, fullgraph=True, recompile_limit=_MAX_SIGNATURES,
                isolate_recompiles=True)
        if torch.is_grad_enabled():
            with torch.no_grad():  # one grad mode: dynamo would compile again for the other
                kernel(*args)
        else:
            kernel(*args)
    except torch._dynamo.exc.FailOnRecompileLimitHit:  # too many signatures: eager from here on for new ones
        return False
    except Exception as error:  # no C++ compiler, unsupported platform, ...: eager is always available
        _COMPILED["error"] = error
        warnings.warn(f"apply_rope(compiled=True): torch.compile failed ({type(error).__name__}: {error}); "
                      "using the eager path from now on", RuntimeWarning, stacklevel=4)
        return False
    for x, o, t in zip(xs, outs, targets):
        if t is not o:  # in place: copy the turned pairs back
            o[..., : 2 * c].copy_(t[..., : 2 * c])
        elif partial:  # partial rotary: the other dims pass through
            o[..., 2 * c :].copy_(x[..., 2 * c :])
    return True


class _Rotate(torch.autograd.Function):
    """RoPE of one or more tensors (q, k) with the same tables, as one autograd node.

    The backward pass is one more pass: the gradient of a rotation is the inverse rotation of
    the gradient (not autograd through the formula's four ops).
    """

    @staticmethod
    def forward(ctx: Any, cos: Tensor, sin: Tensor, layout: str, compiled: bool, *xs: Tensor) -> tuple[Tensor, ...]:
        ctx.save_for_backward(cos, sin)
        ctx.layout, ctx.compiled = layout, compiled
        xs = tuple(x.detach() for x in xs)
        return _rotate_many(xs, cos, sin, layout, tuple(torch.empty_like(x) for x in xs), compiled)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor | None, ...]:
        cos, sin = ctx.saved_tensors
        outs = tuple(torch.empty_like(g) for g in grads)
        return (None, None, None, None, *_rotate_many(grads, cos, sin, ctx.layout, outs, ctx.compiled, inverse=True))


def _rotate_many(
    xs: tuple[Tensor, ...], cos: Tensor, sin: Tensor, layout: str, outs: tuple[Tensor, ...], compiled: bool,
    inverse: bool = False,
) -> tuple[Tensor, ...]:
    """Rotate each x into its out: one inductor call for the half layout when ``compiled`` (and it works), else eager."""
    if compiled and layout == "half" and _rotate_half_compiled(xs, cos, sin, outs, inverse):
        return outs
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # (batch|1, 1, seq, c): broadcast over heads
    turn = _turn(cos, sin, xs[0].dtype, inverse) if layout == "interleaved" else None  # one table for q and k
    return tuple(_rotate_into(x, cos, sin, layout, out, inverse, turn) for x, out in zip(xs, outs))


def apply_rope(
    x: Tensor, cos: Tensor, sin: Tensor, layout: Layout = "half", out: Tensor | None = None, compiled: bool = False
) -> Tensor:
    """Rotate the pairs of x by the angles whose cos and sin are given.

    Args:
        x: (batch, heads, seq, head_dim) float tensor (any strides).
        cos, sin: (batch|1, seq, c) or (seq, c) half-width tables from :func:`rope_cos_sin`,
            broadcast over heads. With 2c < head_dim only the first 2c dims are rotated
            (partial rotary, as GPT-NeoX); the rest pass through unchanged.
        layout: "half" (pairs (x[i], x[i + c])) or "interleaved" (pairs (x[2i], x[2i+1])).
        out: tensor like x to write into; ``out=x`` rotates x in place (no new buffer; the
            fastest eager call, while with ``compiled=True`` a separate ``out`` is faster).
            Not allowed while autograd records x.
        compiled: rotate the half layout with inductor's one-pass loop (``torch.compile``)
            instead of the eager ops, forward and backward. The first call per input signature
            compiles (seconds); if compiling fails (no C++ compiler), a warning is given once
            and the eager path is used. The interleaved layout stays eager. See the module
            docstring for measured speeds.

    Returns:
        The rotated tensor, x's shape and dtype (``out`` itself when given).

    Accuracy. Against the textbook formulas (:func:`rotate_half_reference`,
    :func:`apply_rope_complex`) the result differs only by rounding: at most 1e-6 in float32
    for standard-normal x. bfloat16/float16 x is rotated here in float32 and rounded once, so
    the result is within about 1.5u |pair| of the exact rotation of the same x and tables
    (u the unit roundoff: 2**-8 for bfloat16, 2**-11 for float16; |pair| the length of the
    pair an element belongs to); the textbook formula, which rounds every product and sum to
    x's dtype, is within about 3u |pair|. The tests check |fast - textbook| <= 6u |pair|
    (0.023 |pair| in bfloat16, 0.0029 |pair| in float16) element by element. For long
    positions see :func:`rope_cos_sin`.
    """
    _check_layout(layout)
    _check_x("x", x)
    cos, sin = _table_3d(cos, sin, x)
    _check_out("out", out, x)
    grad = torch.is_grad_enabled() and (x.requires_grad or cos.requires_grad or sin.requires_grad)
    if grad and out is not None:
        raise ValueError("out= cannot be used while autograd records x, cos or sin; call apply_rope without out")
    if torch.compiler.is_compiling() or (grad and (cos.requires_grad or sin.requires_grad)):
        rotated = _rotate_formula(x, cos, sin, layout)
        return rotated if out is None else out.copy_(rotated)
    if grad:
        return _Rotate.apply(cos, sin, layout, compiled, x)[0]
    return _rotate_many((x,), cos, sin, layout, (torch.empty_like(x) if out is None else out,), compiled)[0]


def apply_rope_qk(
    q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, layout: Layout = "half", inplace: bool = False,
    compiled: bool = False, out: tuple[Tensor, Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """:func:`apply_rope` on queries and keys with the same tables; ``inplace=True`` overwrites q and k.

    ``out=(q_out, k_out)`` writes into preallocated tensors instead (not with ``inplace``).

    q: (batch, heads, seq, head_dim); k: (batch, kv_heads, seq, head_dim) (kv_heads may differ,
    as in grouped-query attention); cos, sin: (batch|1, seq, c). With ``compiled=True`` and the
    half layout, q and k go through one compiled call (outside autograd).
    """
    _check_x("q", q)
    _check_x("k", k)
    if (q.shape[0], q.shape[2], q.shape[3]) != (k.shape[0], k.shape[2], k.shape[3]) or q.dtype != k.dtype:
        raise ValueError(
            f"q and k must agree in batch, seq, head_dim and dtype, got q {tuple(q.shape)} {q.dtype} "
            f"and k {tuple(k.shape)} {k.dtype}"
        )
    if out is not None and (inplace or not isinstance(out, (tuple, list)) or len(out) != 2):
        raise ValueError(f"out must be a pair (q_out, k_out), and not given with inplace=True; got {type(out).__name__} "
                         f"with inplace={inplace}")
    q_out, k_out = (q, k) if inplace else (None, None) if out is None else out
    for name, x, o in (("q_out", q, q_out), ("k_out", k, k_out)):
        _check_out(name, o, x)
    _check_layout(layout)
    cos3, sin3 = _table_3d(cos, sin, q)
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, cos3, sin3))
    if torch.compiler.is_compiling() or (grad and (cos3.requires_grad or sin3.requires_grad or q_out is not None)):
        return (  # the differentiable formula, or apply_rope's error for out= under autograd
            apply_rope(q, cos, sin, layout, out=q_out, compiled=compiled),
            apply_rope(k, cos, sin, layout, out=k_out, compiled=compiled),
        )
    if grad:
        return _Rotate.apply(cos3, sin3, layout, compiled, q, k)
    outs = (torch.empty_like(q) if q_out is None else q_out, torch.empty_like(k) if k_out is None else k_out)
    return _rotate_many((q, k), cos3, sin3, layout, outs, compiled)


# ----------------------------------------------------------------------------- layouts and checkpoints


def rope_layout_permutation(head_dim: int) -> Tensor:
    """perm = cat(arange(0, d, 2), arange(1, d, 2)): evens then odds.

    With it, ``half(x[..., perm]) == interleaved(x)[..., perm]``: the interleaved pair
    (x[2i], x[2i+1]) lands at (i, i + d/2), where the half layout looks for it.
    """
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim must be an even int >= 2, got {head_dim!r}")
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))


def convert_qk_weight(weight: Tensor, n_heads: int, to: Layout = "half", rotary_dim: int | None = None) -> Tensor:
    """Reorder the rows of W_q or W_k (or their bias) within each head for the other RoPE layout.

    A model trained with one layout gives the same attention scores with the other layout
    once its query and key projections are converted (values and output projection stay).
    to="half" converts an interleaved checkpoint (Meta) for the half layout (Hugging Face);
    to="interleaved" is the inverse.

    Args:
        weight: (n_heads * head_dim, in_features) projection weight, or (n_heads * head_dim,) bias.
        n_heads: number of heads the rows are split into.
        to: the layout the result is for.
        rotary_dim: rotated width per head (default head_dim); rows after it are left in place.
    """
    _check_layout(to, "to")
    _check_float("weight", weight)
    if weight.dim() not in (1, 2):
        raise ValueError(f"weight must be (out_features, in_features) or a (out_features,) bias, got {tuple(weight.shape)}")
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1 or weight.shape[0] % n_heads:
        raise ValueError(f"n_heads must be a positive int dividing out_features={weight.shape[0]}, got {n_heads!r}")
    head_dim = weight.shape[0] // n_heads
    rotary_dim = head_dim if rotary_dim is None else rotary_dim
    if isinstance(rotary_dim, bool) or not isinstance(rotary_dim, int) or not 2 <= rotary_dim <= head_dim or rotary_dim % 2:
        raise ValueError(f"rotary_dim must be an even int in [2, head_dim={head_dim}], got {rotary_dim!r}")
    perm = rope_layout_permutation(rotary_dim)
    if to == "interleaved":
        perm = torch.argsort(perm)
    perm = torch.cat((perm, torch.arange(rotary_dim, head_dim))).to(weight.device)
    per_head = weight.unflatten(0, (n_heads, head_dim))
    return per_head[:, perm].flatten(0, 1)


# ----------------------------------------------------------------------------- the position scheme


class RotaryPE(PositionScheme):
    """RoPE as a position scheme: rotates q and k after the head split, values untouched.

    Args:
        head_dim: width of one head (even).
        base: rope_theta, the base of the frequencies (10000 in most models).
        layout: "half" or "interleaved" (see the module docstring).
        rotary_fraction: fraction of each head that is rotated (GPT-NeoX style partial rotary);
            the rotated width ``int(head_dim * rotary_fraction)`` must be even.
        scaling: a Hugging Face style rope-parameter dict for longer contexts, e.g.
            ``{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}``
            (see :func:`posenc_lib.rope_scaling.rope_frequencies`).
        compiled: rotate through :func:`apply_rope_qk`'s ``compiled=True`` path (one inductor
            loop for q and k in the half layout; each new input shape compiles first, seconds).

    Half-width cos/sin tables are cached per (device, dtype) in a plain dict - not buffers,
    so never in ``state_dict`` and free to change with ``base`` - and grown on demand to the
    next power of two above the largest position seen. Positions may be anything (KV-cache
    offsets, left padding, negative): negative ones are computed directly. "dynamic" scaling
    recomputes the frequencies from the largest position of each call (no cache), and under
    ``torch.compile`` the tables are computed inside the graph instead of looked up. Float32
    and lower precisions share the float32 angles (cast last); float64 q and k get tables
    computed in float64, frequencies included (unscaled RoPE), so a float64 model is exact to
    float64 rounding at any position.
    """

    kind = "rotary"

    def __init__(
        self,
        head_dim: int,
        base: float = 10000.0,
        layout: Layout = "half",
        rotary_fraction: float = 1.0,
        scaling: dict[str, Any] | None = None,
        compiled: bool = False,
    ):
        super().__init__()
        _check_layout(layout)
        if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2 or head_dim % 2:
            raise ValueError(f"head_dim must be an even int >= 2, got {head_dim!r}")
        if scaling is not None and not isinstance(scaling, dict):
            raise TypeError(f"scaling must be a dict of rope parameters or None, got {type(scaling).__name__}")
        config = dict(scaling or {})
        for key, value in (("rope_theta", base), ("partial_rotary_factor", rotary_fraction)):
            if config.setdefault(key, value) != value:
                raise ValueError(f"scaling[{key!r}] = {config[key]!r} contradicts the argument given as {value!r}")
        if not isinstance(compiled, bool):
            raise TypeError(f"compiled must be a bool, got {type(compiled).__name__}")
        self.head_dim, self.layout, self.config, self.compiled = head_dim, layout, config, compiled
        self.dynamic = config.get("rope_type") == "dynamic"
        # validates the config; for "dynamic" this is the unscaled set (lengths <= L0)
        length = config.get("original_max_position_embeddings") if self.dynamic else None
        inv_freq, self.attention_factor = rope_frequencies(head_dim, config, seq_len=length)
        self.inv_freq = inv_freq  # plain attribute: a table of constants, not model state
        self.rotary_dim = 2 * inv_freq.numel()
        # float64 frequencies for a model moved to float64 (default RoPE: base^(-2i/rotary_dim)
        # computed in float64; a scaled variant keeps its float32 frequencies, angles in float64)
        plain = config.get("rope_type", "default") == "default"
        exponent = torch.arange(0, self.rotary_dim, 2, dtype=torch.float64) / self.rotary_dim
        self.inv_freq64 = 1.0 / float(config["rope_theta"]) ** exponent if plain else inv_freq.double()
        self._tables: dict[tuple[torch.device, torch.dtype], tuple[Tensor, Tensor]] = {}

    def extra_repr(self) -> str:
        compiled = ", compiled=True" if self.compiled else ""
        return f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, layout={self.layout!r}, config={self.config}{compiled}"

    def _table(self, length: int, device: torch.device, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """Cached (cos, sin) for positions 0 .. >= length-1: each (n, rotary_dim // 2) in dtype on device."""
        cached = self._tables.get((device, dtype))
        if cached is not None and cached[0].shape[0] >= length:
            return cached
        if dtype in (torch.float32, torch.float64):
            n = max(256, 1 << (length - 1).bit_length())
            positions = torch.arange(n, device=device)
            table = rope_cos_sin(positions, self._frequencies(dtype), self.attention_factor, dtype)
        else:
            table = tuple(t.to(dtype) for t in self._table(length, device, torch.float32))
        self._tables[(device, dtype)] = table
        return table

    def _frequencies(self, dtype: torch.dtype) -> Tensor:
        """The frequencies the angles are computed with: float64 ones for float64 tables, else float32."""
        return self.inv_freq64 if dtype == torch.float64 else self.inv_freq

    def cos_sin(self, positions: Tensor, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
        """Half-width (cos, sin) at ``positions`` (batch, seq): each (batch, seq, rotary_dim // 2) in dtype."""
        _check_positions(positions)
        if self.dynamic:
            seq_len = int(positions.max()) + 1
            inv_freq, factor = rope_frequencies(self.head_dim, self.config, seq_len=seq_len)
            return rope_cos_sin(positions, inv_freq, factor, dtype)
        if torch.compiler.is_compiling():
            return rope_cos_sin(positions, self._frequencies(dtype), self.attention_factor, dtype)
        low, high = torch.aminmax(positions)
        if int(low) < 0:
            return rope_cos_sin(positions, self._frequencies(dtype), self.attention_factor, dtype)
        cos, sin = self._table(int(high) + 1, positions.device, dtype)
        return cos[positions], sin[positions]

    def rotate_qk(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Rotate q (batch, heads, seq, head_dim) and k (batch, kv_heads, seq, head_dim) by ``positions`` (batch|1, seq)."""
        if q.shape[-1] != self.head_dim:
            raise ValueError(f"q.shape[-1] must be head_dim={self.head_dim}, got {tuple(q.shape)}")
        cos, sin = self.cos_sin(positions, q.dtype)
        return apply_rope_qk(q, k, cos, sin, self.layout, compiled=self.compiled)
