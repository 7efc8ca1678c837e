"""posenc_lib.analysis.cost: exact byte counts of a scheme's position part, timing, log-log slopes."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_lib.analysis.cost import allocated_bytes, best_time, loglog_slope, position_part
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative
from posenc_lib.scheme import NoPosition
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.t5 import T5RelativeBias


def test_allocated_bytes_counts_new_storages_only():
    x = torch.zeros(10, 10)
    assert allocated_bytes(lambda: x + 1) == 400
    assert allocated_bytes(lambda: (x + 1) * 2) == 800  # a temporary counts too
    assert allocated_bytes(lambda: x.t()[2:5]) == 0  # views allocate nothing
    assert allocated_bytes(lambda: x.add_(1)) == 0  # neither do in-place operations
    assert allocated_bytes(lambda: torch.empty(3, dtype=torch.int64)) == 24


def test_position_part_bytes_are_exact_and_deterministic():
    length, heads = 64, 4
    compact = allocated_bytes(position_part(ALiBi(heads), length, n_heads=heads))
    assert compact == (heads + 1) * length * 4  # the (1, heads, 1, L) bias and positions as float32
    full = allocated_bytes(position_part(ALiBi(heads, causal=False), length, n_heads=heads))
    assert full >= heads * length * length * 4
    t5 = allocated_bytes(position_part(T5RelativeBias(heads), length, n_heads=heads))
    assert t5 >= heads * length * length * 4  # the full (1, heads, L, L) bias: no compact form
    assert t5 == allocated_bytes(position_part(T5RelativeBias(heads), length, n_heads=heads))  # a fresh scheme, same count
    assert allocated_bytes(position_part(NoPosition(), length)) == 0
    txl = allocated_bytes(position_part(TransformerXLRelative(64, heads), length, n_heads=heads))
    assert heads * length * length * 4 <= txl < length * length * 64 * 4  # score-sized, never (L, L, d_model)
    sin = SinusoidalPE(64, 128)
    assert allocated_bytes(position_part(sin, length, d_model=64)) >= length * 64 * 4


def test_position_part_bad_input():
    with pytest.raises(ValueError, match="d_model must be a multiple of n_heads"):
        position_part(NoPosition(), 8, d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="length"):
        position_part(NoPosition(), 0)

    class Odd(NoPosition):
        kind = "somewhere"

    with pytest.raises(ValueError, match="scheme.kind"):
        position_part(Odd(), 8)
    with pytest.raises(TypeError, match="fn must be a callable"):
        allocated_bytes(3)


def test_loglog_slope_and_best_time():
    lengths = [8, 16, 32, 64]
    assert math.isclose(loglog_slope(lengths, [3 * n for n in lengths]), 1.0)
    assert math.isclose(loglog_slope(lengths, [n * n + 0.0 for n in lengths]), 2.0)
    with pytest.raises(ValueError, match="positive"):
        loglog_slope([1, 2], [0, 1])
    with pytest.raises(ValueError, match="same length"):
        loglog_slope([1, 2], [1])
    assert 0 < best_time(lambda: torch.zeros(10).sum(), repeats=2) < 1
