"""The speed machinery behind :func:`posenc_lib.rotary.rope.apply_rope`: the same rotation, arranged to be fast.

One entry point, :func:`rotate`; every other function here is one of its paths:

    _rotate_interleaved_complex   interleaved pairs as complex numbers, one multiply (eager)
    _rotate_half_blocked          half-layout pairs by four element-wise ops, cache-sized blocks (eager)
    _rotate_members               those four ops on the two members of each pair
    _fused_half_rotation(_qk)     half-layout pairs in one pass, the loop inductor compiles
    _rotate_compiled              runs that loop (compiled once per input signature), in place by blocks
    Rotate                        the autograd node: backward is the inverse rotation

:mod:`posenc_lib.rotary.rope` holds the idea and the readable formulas; this module rotates with the
same arithmetic (tests compare the two: ``tests/lib/test_rope.py``). Nothing here changes what is
computed, only how memory is walked. Measured speeds: ``bench/results/rope.md`` (``make bench``).

RoPE does a few multiply-adds per byte it reads, so its cost is memory traffic and the
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
columns, so all loads are contiguous and vectorised (see :func:`_fused_half_rotation`). q and k go
through one compiled call. The loop is traced to an ATen graph and compiled by
``torch._inductor.compile`` directly, not through TorchDynamo: this module's own cache of input
signatures replaces dynamo's guards and saves about 30 us per call (see :data:`_COMPILED`).
The first call per signature compiles (about a second when inductor's on-disk cache has the
loop, several seconds otherwise; at most 64 signatures, then eager). In place goes block by
block through a scratch block that stays in the cache and is copied back: the loop stores the
first row of a pair before it loads that row for the second, so it cannot overwrite its own
input, and inductor writes a loop that keeps both rows in registers (two stores per iteration)
only into a buffer of its own, never into its input, when the tables are broadcast over
heads. The interleaved layout stays eager with ``compiled=True``: inductor loads swapped
neighbours one element at a time (each formulation tried ran 1.4 to 37 times slower than the
complex multiply).
Inside a model that is itself under ``torch.compile``, the plain differentiable formula is
traced instead and inductor fuses it with its neighbours.

Where the time goes (the numbers are in ``bench/results/rope.md``): in float32 the interleaved
layout in place costs one to two copies of q and k, the eager half layout about twice as much,
and ``compiled=True`` brings the half layout close to the interleaved one. A bfloat16 copy
moves half the bytes of a float32 one, while rotating converts every element to float32 and
rounds it back; PyTorch's CPU rounding (without AVX512-BF16 instructions) is itself slower than
the copy, so bfloat16 is bound by arithmetic, not memory, wherever the data is in cache.

Shapes: x, out (batch, heads, seq, head_dim); cos, sin (batch|1, 1, seq, c) inside the eager
kernels (broadcast over heads), (batch|1, seq, c) at :func:`rotate`; c pairs rotated,
2c <= head_dim.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import Tensor
from torch.fx.experimental.proxy_tensor import make_fx

__all__ = ["rotate"]

# Elements of x per block in the eager kernel: 2**20 (4 MiB of float32), so a block and its
# temporary stay in the last-level cache between the ops while each op still has enough work
# to hide its dispatch cost. Chosen by timing blocks of 2**17 to 2**21 elements at
# (1, 32, 2048, 128) with make bench's settings: smaller blocks paid for dispatch, larger ones
# fell out of the cache. Tensors up to _WHOLE_ELEMENTS (8 MiB of float32) are one block.
_BLOCK_ELEMENTS = 2**20
_WHOLE_ELEMENTS = 2**21


def _pair_views(x: Tensor, c: int, layout: str) -> tuple[Tensor, Tensor]:
    """Views (first, second) of the c rotated pairs of x: half = (x[:c], x[c:2c]), interleaved = (x[0::2], x[1::2])."""
    if layout == "half":
        return x[..., :c], x[..., c : 2 * c]
    return x[..., 0 : 2 * c : 2], x[..., 1 : 2 * c : 2]


def _rotate_members(
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


def _unit_complex(cos: Tensor, sin: Tensor, dtype: torch.dtype, inverse: bool) -> Tensor:
    """exp(i angle) (exp(-i angle) when ``inverse``) as a complex table, in float64 for float64 x, else float32."""
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    return torch.complex(cos.to(compute), (-sin if inverse else sin).to(compute))


def _rotate_interleaved_complex(x: Tensor, turn: Tensor, out: Tensor) -> None:
    """Interleaved pairs as complex numbers times ``turn``: one pass when x and out can be viewed as complex.

    Otherwise (bfloat16/float16, odd strides) each block is copied to a float32 (float64 for
    float64 x) buffer, turned there, and written back: three contiguous ops, one rounding.
    turn: (batch|1, 1, seq, c) complex, from :func:`_unit_complex`.
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


def _rotate_half_blocked(x: Tensor, cos: Tensor, sin: Tensor, out: Tensor, inverse: bool) -> None:
    """Half-layout pairs, block by block so the ops of a block stay in cache. cos, sin: (batch|1, 1, seq, c).

    bfloat16/float16 blocks are copied to float32, rotated there in place and rounded once on
    the way back: faster than element-wise ops in those dtypes (each converts on the fly), and
    more accurate. One float32 scratch block, not two: glibc hands memory freed above its trim
    threshold back to the OS, and a second 4 MB scratch made every call page-fault ~8 MB anew,
    several times slower than the rotation itself.
    """
    c = cos.shape[-1]
    low_precision = x.dtype in (torch.bfloat16, torch.float16)
    if low_precision:
        cos, sin = cos.float(), sin.float()
    for b, s in _blocks(*x.shape):
        tb = b if cos.shape[0] > 1 else slice(None)
        src = x[b, :, s, : 2 * c].float() if low_precision else x[b, :, s]
        dst = src if low_precision else out[b, :, s]
        x1, x2 = _pair_views(src, c, "half")
        o1, o2 = _pair_views(dst, c, "half")
        _rotate_members(x1, x2, cos[tb, :, s], sin[tb, :, s], o1, o2, inverse, inplace=low_precision or out is x)
        if low_precision:
            out[b, :, s, : 2 * c].copy_(src)


def _rotate_eager(
    x: Tensor, cos: Tensor, sin: Tensor, layout: str, out: Tensor, inverse: bool, turn: Tensor | None
) -> Tensor:
    """Rotate x (batch, heads, seq, head_dim) into out (may be x), eagerly, without autograd.

    cos, sin: (batch|1, 1, seq, c), broadcast over heads; turn: their :func:`_unit_complex` table,
    used by the interleaved layout (None for the half layout).
    """
    c = cos.shape[-1]
    if out is not x and 2 * c < x.shape[-1]:
        out[..., 2 * c :].copy_(x[..., 2 * c :])
    if layout == "interleaved":
        _rotate_interleaved_complex(x, turn, out)
    else:
        _rotate_half_blocked(x, cos, sin, out, inverse)
    return out


def _fused_half_rotation(x: Tensor, cos: Tensor, sin: Tensor, sign: Tensor, out: Tensor) -> None:
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


def _fused_half_rotation_qk(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, sign: Tensor, q_out: Tensor, k_out: Tensor) -> None:
    """:func:`_fused_half_rotation` on q and k in one compiled call: one call overhead (~25 us) instead of two."""
    _fused_half_rotation(q, cos, sin, sign, q_out)
    _fused_half_rotation(k, cos, sin, sign, k_out)


# The compiled kernels, one per input signature (shapes, strides, dtypes, device, thread count),
# and "error": why the compiled path is off. Past _MAX_SIGNATURES signatures, new ones take the
# eager path. Each kernel is built by tracing :func:`_fused_half_rotation` (or its q-and-k form)
# to an ATen graph with ``make_fx`` and handing that graph to ``torch._inductor.compile``, without
# TorchDynamo: our own cache key replaces dynamo's guards. On this project's 2-core machine, the
# compiled out= call on one position of q and k (1, 32, 1, 128) took 37 us this way against 69 us
# through ``torch.compile`` (2 threads, median of 7 interleaved rounds).
_COMPILED: dict[Any, Any] = {}
_KERNELS = {1: _fused_half_rotation, 2: _fused_half_rotation_qk}
_MAX_SIGNATURES = 64
_SIGNS: dict[tuple[bool, torch.dtype, torch.device], Tensor] = {}  # the (2, 1) sign tensors


def _sign(inverse: bool, dtype: torch.dtype, device: torch.device) -> Tensor:
    key = (inverse, dtype, device)
    if key not in _SIGNS:
        _SIGNS[key] = torch.tensor([[1.0], [-1.0]] if inverse else [[-1.0], [1.0]], dtype=dtype, device=device)
    return _SIGNS[key]


def _compiled_kernel(args: list[Tensor], count: int) -> Any:
    """The inductor loop for these arguments (``count`` tensors to turn), compiled on first use; None past the limit.

    The graph is traced from stand-ins with the arguments' shapes and strides (fake tensors), so
    tracing computes nothing, and the stand-ins never share memory: the loop is compiled for
    distinct inputs and outputs, as the callers use it.
    """
    key = (count, torch.get_num_threads(), *((tuple(a.shape), a.stride(), a.dtype, a.device) for a in args))
    kernel = _COMPILED.get(key)
    if kernel is None:
        if len(_COMPILED) - ("error" in _COMPILED) >= _MAX_SIGNATURES:
            return None
        stand_ins = [torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device) for a in args]
        graph = make_fx(_KERNELS[count], tracing_mode="fake")(*stand_ins)
        kernel = _COMPILED[key] = torch._inductor.compile(graph, stand_ins)
    return kernel


def _view(t: Tensor, block: tuple[slice, slice] | None, width: int) -> Tensor:
    """The first ``width`` dims of t (batch, heads, seq, head_dim) in a (batch, seq) block of :func:`_blocks` (None: all)."""
    if block is None:
        return t if t.shape[-1] == width else t[..., :width]
    return t[block[0], :, block[1], :width]


def _rotate_compiled(
    xs: tuple[Tensor, ...], cos: Tensor, sin: Tensor, outs: tuple[Tensor, ...], inverse: bool = False
) -> bool:
    """Turn each x of xs (half layout) into the matching out with inductor's fused loop.

    cos, sin: (batch|1, seq, c). Returns False, and the caller uses the eager path, when
    compiling does not work here (warned once) or too many signatures were compiled;
    nothing has been written then. In place (out is x), the loop writes each block (see
    :func:`_blocks`) into a scratch block that stays in the cache, which is copied back: one loop
    cannot overwrite a pair's first half before it has read it for the second (its inner loop
    runs over one half, then over the other), so x is read from memory and written back once.
    """
    if "error" in _COMPILED:
        return False
    compute = torch.float64 if xs[0].dtype == torch.float64 else torch.float32
    c = cos.shape[-1]
    if not cos.dtype == sin.dtype == compute:
        cos, sin = cos.to(compute), sin.to(compute)
    sign = _sign(inverse, compute, cos.device)
    in_place = [o is x for x, o in zip(xs, outs)]
    batch, _, seq, head_dim = xs[0].shape
    if any(in_place):
        blocks = _blocks(batch, sum(x.shape[1] for x in xs), seq, head_dim)
    else:  # out of place, one loop over everything: no views to build (a few us each, the call's main cost)
        blocks = [None]
    scratch: dict[tuple, Tensor] = {}  # per tensor and block shape, reused block after block: it stays in the cache

    def scratch_like(i: int, source: Tensor) -> Tensor:
        if (i, source.shape) not in scratch:
            scratch[(i, source.shape)] = torch.empty_like(source)
        return scratch[(i, source.shape)]

    calls = []
    for block in blocks:
        b, s = block or (slice(None), slice(None))
        sources = tuple(_view(x, block, 2 * c) for x in xs)
        targets = tuple(scratch_like(i, v) if inside else _view(o, block, 2 * c)
                        for i, (v, o, inside) in enumerate(zip(sources, outs, in_place)))
        tb = b if cos.shape[0] > 1 else slice(None)
        tables = (cos, sin) if block is None else (cos[tb, s], sin[tb, s])
        calls.append((sources, [*sources, *tables, sign, *targets], targets))
    try:  # every block's loop first, so that a refusal leaves x untouched for the eager path
        kernels = [_compiled_kernel(args, len(xs)) for _, args, _ in calls]
    except Exception as error:  # no C++ compiler, unsupported platform, ...: eager is always available
        _COMPILED["error"] = error
        warnings.warn(f"apply_rope(compiled=True): compiling with inductor failed ({type(error).__name__}: {error}); "
                      "using the eager path from now on", RuntimeWarning, stacklevel=4)
        return False
    if any(kernel is None for kernel in kernels):  # too many signatures: eager from here on for new ones
        return False
    with torch.no_grad():  # the loop writes into its arguments: nothing for autograd to record
        for kernel, (sources, args, targets) in zip(kernels, calls):
            kernel(*args)
            for source, target, inside in zip(sources, targets, in_place):
                if inside:
                    source.copy_(target)
    for x, o, inside in zip(xs, outs, in_place):
        if not inside and 2 * c < head_dim:  # partial rotary: the other dims pass through
            o[..., 2 * c :].copy_(x[..., 2 * c :])
    return True


class Rotate(torch.autograd.Function):
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
    if compiled and layout == "half" and _rotate_compiled(xs, cos, sin, outs, inverse):
        return outs
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # (batch|1, 1, seq, c): broadcast over heads
    turn = _unit_complex(cos, sin, xs[0].dtype, inverse) if layout == "interleaved" else None  # one table for q and k
    return tuple(_rotate_eager(x, cos, sin, layout, out, inverse, turn) for x, out in zip(xs, outs))


def rotate(
    xs: tuple[Tensor, ...], cos: Tensor, sin: Tensor, layout: str, outs: tuple[Tensor | None, ...], compiled: bool
) -> tuple[Tensor, ...]:
    """Rotate each x of xs (q, or q and k) by the same half-width tables: the one call into this module.

    xs: tensors (batch, heads, seq, head_dim) of one dtype; cos, sin: (batch|1, seq, c), checked
    by the caller, with no gradient; outs: a tensor like each x to write into, or None for a new
    one (out may be x: in place). Under autograd (some x requires grad) the rotation is one
    :class:`Rotate` node and outs must be None. ``compiled``: the half layout through inductor's
    fused loop, when torch.compile works here.
    """
    if torch.is_grad_enabled() and any(x.requires_grad for x in xs):
        return Rotate.apply(cos, sin, layout, compiled, *xs)
    outs = tuple(torch.empty_like(x) if out is None else out for x, out in zip(xs, outs))
    return _rotate_many(xs, cos, sin, layout, outs, compiled)
