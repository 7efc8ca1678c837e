"""What the position part of a scheme costs: bytes it allocates and time it takes, against length.

Every scheme acts in one place (see :mod:`posenc_lib.attention`); its *position part* is that
hook alone, on inputs shaped as inside one attention layer:

    embedding  ``add_to_embeddings(x, positions)``, x (batch, L, d_model)
    rotary     ``rotate_qk(q, k, positions)``, q and k (batch, heads, L, head_dim)
    bias       ``score_bias(positions, positions)``, the bias the scores receive
    none       nothing at all

Bytes are counted by :func:`allocated_bytes`, which watches every tensor operation and adds up
the storage of each tensor an operation creates (views and in-place results create none). The
count is exact and the same on every run, unlike a wall-clock time; it includes temporaries
(such as a bucket index of every (query, key) pair), so a count that grows as L^2 reveals an
(L, L) tensor even when the function returns a small one. For whole-layer time and peak memory,
measured with the profiler, see ``make bench`` (bench/results/schemes.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from posenc_lib.checks import check_int
from posenc_lib.scheme import PositionScheme, default_positions

__all__ = ["allocated_bytes", "position_part", "best_time", "loglog_slope"]


class _StorageCounter(TorchDispatchMode):
    """Adds up the bytes of every new storage that an operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        seen = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, Tensor):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in seen:  # new storage (a view or an in-place result shares its input's)
                    seen.add(ptr)
                    self.bytes += t.untyped_storage().nbytes()
        return out


def allocated_bytes(fn: Callable[[], object]) -> int:
    """Total bytes of all tensors that ``fn()`` creates, temporaries included (run without autograd)."""
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking no arguments, got {type(fn).__name__}")
    counter = _StorageCounter()
    with torch.inference_mode(), counter:
        fn()
    return counter.bytes


def position_part(
    scheme: PositionScheme, length: int, d_model: int = 64, n_heads: int = 4, batch: int = 1, seed: int = 0
) -> Callable[[], object]:
    """A no-argument function that runs only ``scheme``'s position hook at sequence length ``length``.

    The inputs (random x, or q and k, and positions ``0 .. length-1``) are made once, here, so
    that timing or counting the returned function measures the hook alone. The hook is chosen by
    ``scheme.kind`` ("embedding", "rotary", "bias", "qk-bias", "none").
    """
    for name, value in (("length", length), ("d_model", d_model), ("n_heads", n_heads), ("batch", batch)):
        check_int(name, value)
    if d_model % n_heads:
        raise ValueError(f"d_model must be a multiple of n_heads, got d_model={d_model}, n_heads={n_heads}")
    gen = torch.Generator().manual_seed(seed)
    positions = default_positions(batch, length)
    if scheme.kind == "embedding":
        x = torch.randn(batch, length, d_model, generator=gen)
        return lambda: scheme.add_to_embeddings(x, positions)
    if scheme.kind == "rotary":
        q, k = torch.randn(2, batch, n_heads, length, d_model // n_heads, generator=gen)
        return lambda: scheme.rotate_qk(q, k, positions)
    if scheme.kind == "bias":
        return lambda: scheme.score_bias(positions, positions)
    if scheme.kind == "qk-bias":
        q, k = torch.randn(2, batch, n_heads, length, d_model // n_heads, generator=gen)
        return lambda: scheme.qk_bias(q, k, positions, positions)
    if scheme.kind == "none":
        return lambda: None
    raise ValueError(f"scheme.kind must be 'embedding', 'rotary', 'bias', 'qk-bias' or 'none', got {scheme.kind!r}")


def best_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """Fastest of ``repeats`` timed calls of ``fn()``, in seconds, after one warm-up call (no autograd).

    The minimum is the least disturbed by other work on the machine; it still varies run to run.
    """
    check_int("repeats", repeats)
    with torch.inference_mode():
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return min(times)


def loglog_slope(lengths: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) against log(length): about 1 for O(L) growth, 2 for O(L^2)."""
    if len(lengths) != len(values) or len(lengths) < 2:
        raise ValueError(f"lengths and values must have the same length >= 2, got {len(lengths)} and {len(values)}")
    if min(lengths) <= 0 or min(values) <= 0:
        raise ValueError("lengths and values must all be positive (their logarithms are taken)")
    xs, ys = [math.log(v) for v in lengths], [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("lengths must not all be equal")
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
