"""Checkers for notebook 03 (RoPE).

1. ``rotate_half(x)``: the half-split 90-degree turn ``[x1 | x2] -> [-x2 | x1]``.
2. ``interleaved_to_half(weight, n_heads)``: a q/k projection converted between layouts.
3. ``decode_positions(cache_len, n_new)``: the positions of the tokens of a KV-cache decode step.
4. ``safe_cos_sin(positions, inv_freq, dtype)``: cos/sin tables accurate in bf16/fp16 at large positions.

Each checker tests the answer on fresh random inputs (fixed seeds) against the library or a
property, and prints a hint when it is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope import RotaryPE, apply_rope, convert_qk_weight, rope_cos_sin, rope_inv_freq

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4"]


def _same(a: Any, b: Tensor) -> bool:
    return isinstance(a, Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, atol=1e-6)


@checker("Exercise 1 (rotate_half)")
def check_exercise_1(ex: Exercise, rotate_half: Callable[[Tensor], Tensor]) -> None:
    """rotate_half(x) for x (..., d): returns cat(-x[..., d/2:], x[..., :d/2])."""
    gen = torch.Generator().manual_seed(3)
    for shape in [(8,), (2, 3, 5, 8), (1, 4, 7, 64)]:
        x = torch.randn(shape, generator=gen)
        original = x.clone()
        out = ex.call(rotate_half, x)
        ex.expect(torch.equal(x, original), "it changed its input in place; return a new tensor")
        ex.expect(isinstance(out, Tensor) and out.shape == x.shape,
                  f"for x of shape {tuple(x.shape)} return a tensor of the same shape, got "
                  f"{tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__}")
        x1, x2 = x.chunk(2, dim=-1)
        if _same(out, torch.cat([x2, -x1], dim=-1)):
            ex.fail("the signs are swapped: that turns by -90 degrees; the first half must be -x2")
        if _same(out, torch.cat([x2, x1], dim=-1)):
            ex.fail("you swapped the halves but forgot the minus sign on x2")
        interleaved = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
        if _same(out, interleaved):
            ex.fail("that turns neighbouring pairs (x[2i], x[2i+1]); the half layout pairs x[i] with x[i + d/2]")
        ex.expect(_same(out, torch.cat([-x2, x1], dim=-1)),
                  f"for x of shape {tuple(x.shape)} the result is not [-x2 | x1] (x1, x2 = the two halves of the last dim)")
    # the formula it exists for: half-split RoPE = x * [cos | cos] + rotate_half(x) * [sin | sin]
    x = torch.randn(2, 3, 9, 16, generator=gen)
    cos, sin = rope_cos_sin(torch.arange(9)[None], rope_inv_freq(16))
    full = x * torch.cat([cos, cos], -1)[:, None] + ex.call(rotate_half, x) * torch.cat([sin, sin], -1)[:, None]
    ex.expect(torch.allclose(full, apply_rope(x, cos, sin, layout="half"), atol=1e-5),
              "x * cos + rotate_half(x) * sin does not match the library's half-split RoPE")
    ex.passed("x * cos + rotate_half(x) * sin is the half-split RoPE")


def _scores(w_q: Tensor, w_k: Tensor, n_heads: int, layout: str, x: Tensor) -> Tensor:
    """RoPE attention scores (batch, heads, seq, seq) of inputs x (batch, seq, d_in) projected by w_q, w_k."""
    b, s, _ = x.shape
    q = (x @ w_q.T).view(b, s, n_heads, -1).transpose(1, 2)
    k = (x @ w_k.T).view(b, s, n_heads, -1).transpose(1, 2)
    cos, sin = rope_cos_sin(torch.arange(s)[None], rope_inv_freq(q.shape[-1]))
    return apply_rope(q, cos, sin, layout) @ apply_rope(k, cos, sin, layout).transpose(-2, -1)


@checker("Exercise 2 (interleaved_to_half)")
def check_exercise_2(ex: Exercise, interleaved_to_half: Callable[[Tensor, int], Tensor]) -> None:
    """interleaved_to_half(weight (n_heads*head_dim, d_in), n_heads) -> the weight for the half layout."""
    gen = torch.Generator().manual_seed(4)
    for n_heads, head_dim, d_in in [(2, 8, 12), (4, 16, 32), (1, 6, 5)]:
        w_q = torch.randn(n_heads * head_dim, d_in, generator=gen)
        w_k = torch.randn(n_heads * head_dim, d_in, generator=gen)
        out_q = ex.call(interleaved_to_half, w_q.clone(), n_heads)
        out_k = ex.call(interleaved_to_half, w_k.clone(), n_heads)
        ex.expect(isinstance(out_q, Tensor) and out_q.shape == w_q.shape,
                  f"return a tensor of the input's shape {tuple(w_q.shape)}, got "
                  f"{tuple(out_q.shape) if isinstance(out_q, Tensor) else type(out_q).__name__}")
        ex.expect(not torch.equal(out_q, w_q), "the weight came back unchanged; the half layout needs its rows reordered")
        global_perm = torch.cat([torch.arange(0, n_heads * head_dim, 2), torch.arange(1, n_heads * head_dim, 2)])
        if n_heads > 1 and torch.equal(out_q, w_q[global_perm]):
            ex.fail("you reordered all rows at once; reorder within each head (reshape to (n_heads, head_dim, d_in))")
        backwards = convert_qk_weight(w_q, n_heads, to="interleaved")
        if head_dim > 4 and torch.equal(out_q, backwards):
            ex.fail("that is the inverse permutation (half -> interleaved); take the even rows first, then the odd")
        x = torch.randn(2, 7, d_in, generator=gen)
        want = _scores(w_q, w_k, n_heads, "interleaved", x)
        got = _scores(out_q, out_k, n_heads, "half", x)
        ex.expect(torch.allclose(got, want, atol=1e-4, rtol=1e-4),
                  f"with n_heads={n_heads}, head_dim={head_dim} the half-layout scores differ from the interleaved ones "
                  f"by up to {(got - want).abs().max().item():.3g}")
    ex.passed("attention scores of the converted weights match the interleaved model")


@checker("Exercise 3 (decode_positions)")
def check_exercise_3(ex: Exercise, decode_positions: Callable[[int, int], Tensor]) -> None:
    """decode_positions(cache_len, n_new) -> (1, n_new) int64 positions cache_len .. cache_len + n_new - 1."""
    for cache_len, n_new in [(0, 1), (0, 4), (5, 1), (31, 1), (7, 3)]:
        out = ex.call(decode_positions, cache_len, n_new)
        ex.expect(isinstance(out, Tensor) and out.dtype == torch.long,
                  f"return an int64 tensor, got {out.dtype if isinstance(out, Tensor) else type(out).__name__}")
        ex.expect(out.shape == (1, n_new), f"for n_new={n_new} return shape (1, {n_new}), got {tuple(out.shape)}")
        want = torch.arange(cache_len, cache_len + n_new)[None]
        if cache_len > 0 and torch.equal(out, want - cache_len):
            ex.fail(f"positions restart at 0, but the cache already holds {cache_len} tokens at positions "
                               f"0..{cache_len - 1}: the new tokens come after them")
        ex.expect(torch.equal(out, want),
                  f"with cache_len={cache_len}, n_new={n_new} expected {want.tolist()}, got {out.tolist()}")
    # the property it serves: a cached decode equals full recomputation in a RoPE model
    with torch.random.fork_rng():  # a fixed model without touching the caller's random state
        torch.manual_seed(5)
        model = TinyTransformer(20, 20, d_model=16, n_heads=2, n_layers=2, causal=True, pool="none",
                                scheme=RotaryPE(head_dim=8)).eval()
    tokens = torch.randint(0, 20, (2, 12), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        full = model(tokens)[:, -3:]
        cache = model.new_cache()
        model(tokens[:, :9], positions=ex.call(decode_positions, 0, 9), cache=cache)
        step = model(tokens[:, 9:], positions=ex.call(decode_positions, 9, 3), cache=cache)
    ex.expect(torch.allclose(step, full, atol=1e-5), "a cached decode with these positions differs from full recomputation")
    ex.passed("a cached decode step with these positions equals full recomputation")


@checker("Exercise 4 (safe_cos_sin)")
def check_exercise_4(ex: Exercise, safe_cos_sin: Callable[[Tensor, Tensor, torch.dtype], tuple[Tensor, Tensor]]) -> None:
    """safe_cos_sin(positions (batch, seq), inv_freq (c,), dtype) -> (cos, sin), each (batch, seq, c) in dtype."""
    head_dim = 128
    inv_freq = rope_inv_freq(head_dim)
    small = torch.tensor([[0, 1, 2], [5, 6, 7]])
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        out = ex.call(safe_cos_sin, small, inv_freq, dtype)
        ex.expect(isinstance(out, tuple) and len(out) == 2, f"return a tuple (cos, sin), got {type(out).__name__}")
        for name, t in zip(("cos", "sin"), out):
            ex.expect(isinstance(t, Tensor) and t.shape == (2, 3, head_dim // 2),
                      f"{name} must have shape (batch, seq, head_dim/2) = (2, 3, {head_dim // 2}), got "
                      f"{tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
            ex.expect(t.dtype == dtype, f"with dtype={dtype} {name} must be {dtype}, got {t.dtype}")
    positions = torch.arange(32768)[None]
    exact = positions[0].double()[:, None] * (10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    for dtype in (torch.bfloat16, torch.float16):
        cos, sin = ex.call(safe_cos_sin, positions, inv_freq, dtype)
        error = torch.hypot(cos[0].double() - exact.cos(), sin[0].double() - exact.sin()).amax(-1)
        worst = int(error.argmax())
        ex.expect(float(error.max()) < 0.01,
                  f"with dtype={dtype} the (cos, sin) at position {worst} is off by {float(error.max()):.3f} on the unit "
                  "circle (allowed 0.01); compute the angles in float32 and cast only cos and sin")
    ex.passed("cos/sin within 0.01 of exact at every position < 32768, in bf16 and in fp16")
