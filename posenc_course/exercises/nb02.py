"""Checkers for notebook 02 (learnable absolute encoding).

Each checker and the function it expects::

    check_exercise_1(fn)  fn(table) -> (max_len,) mean cosine similarity of rows p and p+k, for k = 0 .. max_len-1
    check_exercise_2(fn)  fn(pe, new_max_len) -> a new LearnablePE of new_max_len rows, row p = pe row (p mod max_len)
    check_exercise_3(fn)  fn(d_model) -> std of N(0, std) token embeddings that, once multiplied by sqrt(d_model),
                          have the same mean squared norm as a sinusoidal row (d_model / 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import sinusoidal_table

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3"]


def _profile(table: Tensor, normalise: bool = True, wrap: bool = False) -> Tensor:
    """Reference (and the wrong variants the hints recognise) for exercise 1, in float64."""
    t = table.detach().to(torch.float64)
    if normalise:
        t = torch.nn.functional.normalize(t, dim=-1)
    n = t.shape[0]
    if wrap:
        return torch.stack([(t * t.roll(-k, dims=0)).sum(-1).mean() for k in range(n)])
    return torch.stack([(t[: n - k] * t[k:]).sum(-1).mean() for k in range(n)])


@checker("Exercise 1 (similarity by distance)")
def check_exercise_1(ex: Exercise, fn: Callable[[Tensor], Tensor]) -> None:
    """fn(table (max_len, d)) must return (max_len,): entry k = mean over p of cos(table[p], table[p + k])."""
    gen = torch.Generator().manual_seed(2)
    scaled = torch.randn(9, 6, generator=gen) * torch.linspace(0.1, 5.0, 9)[:, None]  # rows of very different norms
    tables = [torch.randn(5, 4, generator=gen), scaled, sinusoidal_table(40, 16), torch.randn(1, 3, generator=gen)]
    for table in tables:
        got = ex.call(fn, table.clone())
        ex.expect(isinstance(got, Tensor), f"return a torch.Tensor, got {type(got).__name__}")
        n = table.shape[0]
        ex.expect(tuple(got.shape) == (n,), f"for a ({n}, {table.shape[1]}) table expected shape ({n},), "
                  f"got {tuple(got.shape)} (one value per distance k = 0 .. max_len-1)")
        got = got.detach().to(torch.float64)
        want = _profile(table)
        if torch.allclose(got, want, rtol=0, atol=1e-5):
            continue
        ex.expect(not torch.allclose(got, _profile(table, normalise=False), rtol=0, atol=1e-5),
                  "these are mean dot products; divide each row by its norm first (cosine similarity)")
        ex.expect(not torch.allclose(got, _profile(table, wrap=True), rtol=0, atol=1e-5),
                  "do not wrap around (roll): for distance k, only pairs (p, p+k) with p + k < max_len exist")
        ex.expect(abs(got[0].item() - 1.0) < 1e-5, f"at distance 0 every row is compared with itself: expected "
                  f"1.0, got {got[0].item():.4f}")
        k = (got - want).abs().argmax().item()
        ex.fail(f"for a ({n}, {table.shape[1]}) table, distance k={k} gives {got[k].item():.5f}, "
                f"expected {want[k].item():.5f} (mean over p = 0 .. max_len-1-k of cos(table[p], table[p+k]))")
    ex.passed(f"matches the reference on {len(tables)} tables, sinusoidal included")


@checker("Exercise 2 (extend a table by copying)")
def check_exercise_2(ex: Exercise, fn: Callable[[LearnablePE, int], LearnablePE]) -> None:
    """fn(pe, new_max_len) must return a new, independent LearnablePE whose row p is pe.weight[p % pe.max_len]."""
    torch.manual_seed(5)
    for old_len, new_len, d in [(4, 10, 3), (6, 6, 2), (8, 16, 8)]:
        pe = LearnablePE(d, old_len, init_std=0.5)
        before = pe.weight.detach().clone()
        new = ex.call(fn, pe, new_len)
        ex.expect(isinstance(new, LearnablePE), f"return a LearnablePE, got {type(new).__name__}")
        ex.expect(new is not pe, "return a new module; the trained one must stay as it is")
        ex.expect(torch.equal(pe.weight.detach(), before), "the original table was modified; copy its rows instead")
        ex.expect(new.max_len == new_len and tuple(new.weight.shape) == (new_len, d),
                  f"for new_max_len={new_len}, d_model={d} expected max_len {new_len} and weight shape "
                  f"({new_len}, {d}), got max_len {new.max_len} and shape {tuple(new.weight.shape)}")
        ex.expect(isinstance(new.weight, torch.nn.Parameter) and new.weight.requires_grad,
                  "the new weight must be a trainable nn.Parameter (the copied rows are a starting point)")
        want = before[torch.arange(new_len) % old_len]
        got = new.weight.detach()
        ex.expect(torch.equal(got[:old_len], before), "the first max_len rows must be the trained rows, unchanged")
        ex.expect(torch.equal(got, want), f"row p must be a copy of row p % {old_len} "
                  f"(positions {old_len}.. start again at row 0, as Longformer initialised its longer table)")
        with torch.no_grad():
            new.weight.add_(1.0)
        ex.expect(torch.equal(pe.weight.detach(), before),
                  "the new table shares memory with the old one; copy the data (clone) into a new parameter")
    ex.passed("rows copied periodically into a new, independent table for 3 sizes")


@checker("Exercise 3 (matching the scales)")
def check_exercise_3(ex: Exercise, fn: Callable[[int], float]) -> None:
    """fn(d_model) must return 1 / sqrt(2 d_model): then sqrt(d)-scaled token rows match sinusoidal rows in mean norm."""
    for d in (16, 64, 512):
        std = ex.call(fn, d)
        ex.expect(isinstance(std, (int, float)) and not isinstance(std, bool),
                  f"return a Python float, got {type(std).__name__}")
        want = 1.0 / math.sqrt(2 * d)
        if math.isclose(std, want, rel_tol=1e-6):
            continue
        ex.expect(not math.isclose(std, 1.0 / math.sqrt(d), rel_tol=1e-6),
                  "d_model^-1/2 is the initialisation of Vaswani et al.: the scaled token rows then have squared "
                  f"norm d_model = {d}, but a sinusoidal row has squared norm d_model/2 = {d // 2} (each sin/cos pair "
                  "adds sin^2 + cos^2 = 1)")
        ex.expect(not math.isclose(std, 1.0 / math.sqrt(2), rel_tol=1e-6),
                  "this ignores the multiplication by sqrt(d_model) and the d_model entries of a row")
        table = sinusoidal_table(8, d, dtype=torch.float64)
        target = table.pow(2).sum(-1).mean().item()
        ex.fail(f"for d_model={d}: token rows with std {std:.5g}, times sqrt(d_model), have mean squared "
                f"norm std^2 * d_model^2 = {std**2 * d * d:.4g}; a sinusoidal row has {target:.4g}")
    ex.passed("std = 1/sqrt(2 d_model) for d_model in (16, 64, 512)")
