"""posenc_lib.frequencies: the ladder base^(-2i/d) against its formula, and the encodings that use it."""

from __future__ import annotations

import ast
import inspect
import math

import pytest
import torch

from posenc_lib import frequencies
from posenc_lib.embeddings.sinusoidal import sinusoidal_frequencies, sinusoidal_layout_permutation
from posenc_lib.embeddings.tables_2d import sincos_2d_table
from posenc_lib.frequencies import even_odd_permutation, inverse_frequencies, wavelengths
from posenc_lib.rotary import scaling
from posenc_lib.rotary.rope import RotaryPE, rope_inv_freq, rope_layout_permutation
from posenc_lib.rotary.scaling import rope_frequencies

CASES = [(dim, base) for dim in (2, 8, 64, 128, 130) for base in (10.0, 100.0, 10000.0, 500000.0)]


@pytest.mark.parametrize("dim, base", CASES)
def test_the_ladder_is_base_to_the_minus_2i_over_d(dim, base):
    exact = torch.tensor([base ** (-2 * i / dim) for i in range(dim // 2)], dtype=torch.float64)
    torch.testing.assert_close(inverse_frequencies(dim, base, dtype=torch.float64), exact, rtol=1e-14, atol=0)
    torch.testing.assert_close(inverse_frequencies(dim, base).double(), exact, rtol=1e-6, atol=0)
    torch.testing.assert_close(wavelengths(dim, base).double(), 1 / exact, rtol=1e-6, atol=0)
    theta = inverse_frequencies(dim, base)
    assert theta.dtype == torch.float32 and theta.shape == (dim // 2,) and theta[0] == 1.0
    assert (theta[1:] < theta[:-1]).all()  # each pair slower than the one before


@pytest.mark.parametrize("dim, base", CASES)
def test_float32_is_hugging_face_arithmetic_and_float64_is_log_space(dim, base):
    """Bit for bit: float32 as transformers' default RoPE init, float64 as exp(-(2i/d) ln base)."""
    hf = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    assert torch.equal(inverse_frequencies(dim, base), hf)
    log_space = torch.exp(-(torch.arange(0, dim, 2, dtype=torch.float64) / dim) * math.log(base))
    assert torch.equal(inverse_frequencies(dim, base, dtype=torch.float64), log_space)


@pytest.mark.parametrize("dim, base", CASES)
def test_sinusoid_and_rope_use_the_one_ladder(dim, base):
    assert torch.equal(sinusoidal_frequencies(dim, base), inverse_frequencies(dim, base, dtype=torch.float64))
    assert torch.equal(rope_inv_freq(dim, base), inverse_frequencies(dim, base))
    assert torch.equal(rope_frequencies(dim, {"rope_theta": base})[0], inverse_frequencies(dim, base))
    scheme = RotaryPE(dim, base=base)
    positions = torch.tensor([[0, 1, 7, 1000]])
    angles = positions.double()[..., None] * inverse_frequencies(dim, base, dtype=torch.float64)
    torch.testing.assert_close(scheme.cos_sin(positions, torch.float64), (angles.cos(), angles.sin()), atol=0, rtol=0)


def test_2d_sincos_table_uses_the_ladder_of_a_quarter_width():
    """Each axis of the 2-D table gets d/4 frequencies: the ladder of width d/2."""
    d, base = 32, 10000.0
    table = sincos_2d_table(3, 4, d, base=base, dtype=torch.float64)
    omega = inverse_frequencies(d // 2, base, dtype=torch.float64)
    row = 2  # patch (2, 0): its row coordinate is 2
    assert torch.equal(table[row * 4, : d // 4], (2.0 * omega).sin())


@pytest.mark.parametrize("dim", [2, 8, 10, 64])
def test_even_odd_permutation_is_the_layout_change_of_both_families(dim):
    perm = even_odd_permutation(dim)
    assert perm.tolist() == list(range(0, dim, 2)) + list(range(1, dim, 2))
    assert torch.equal(sinusoidal_layout_permutation(dim), perm)
    assert torch.equal(rope_layout_permutation(dim), perm)


def test_scaling_builds_on_frequencies_not_on_rope():
    """The old cycle (rope imports scaling, scaling imported rope) is gone: scaling imports the ladder only."""
    imported = set()
    for node in ast.walk(ast.parse(inspect.getsource(scaling))):
        if isinstance(node, ast.ImportFrom):
            imported |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    assert "posenc_lib.frequencies" in imported
    assert not any(name.startswith("posenc_lib.rotary") for name in imported), imported
    assert frequencies.__all__ == ["LAYOUTS", "Layout", "inverse_frequencies", "wavelengths", "even_odd_permutation"]
