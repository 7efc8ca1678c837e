"""Checkers for notebook 08 (position in today's models).

1. ``llama3_frequencies(inv_freq, factor, low_freq_factor, high_freq_factor, original)``: Llama 3.1's bands.
2. ``pair_axes(n_pairs, section, interleaved)``: which coordinate (t, h, w) each M-RoPE pair reads.
3. ``no_rope_layers(n_layers, interval)``: SmolLM3's per-layer RoPE flags (1 = the layer uses RoPE).

Each checker tests the answer on fixed inputs against the library (or ``transformers``' own config)
and prints a hint when it is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker
from posenc_lib.rotary.mrope import mrope_axes
from posenc_lib.rotary.rope import rope_inv_freq
from posenc_lib.rotary.scaling import rope_frequencies

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3"]


@checker("Exercise 1 (Llama 3's frequency bands)")
def check_exercise_1(ex: Exercise, llama3_frequencies: Callable[..., Tensor]) -> None:
    """llama3_frequencies(inv_freq, factor, low, high, original) -> Llama 3.1's rescaled frequencies."""
    for head_dim, base, factor, low, high, original in [(128, 500000.0, 8.0, 1.0, 4.0, 8192), (16, 10000.0, 4.0, 1.0, 4.0, 64),
                                                        (64, 10000.0, 8.0, 2.0, 8.0, 256)]:
        plain = rope_inv_freq(head_dim, base)
        got = ex.call(llama3_frequencies, plain.clone(), factor, low, high, original)
        want = rope_frequencies(head_dim, {"rope_type": "llama3", "rope_theta": base, "factor": factor, "low_freq_factor": low,
                                           "high_freq_factor": high, "original_max_position_embeddings": original})[0]
        ex.expect(isinstance(got, Tensor) and got.shape == want.shape,
                  f"for head_dim={head_dim} return a tensor of shape {tuple(want.shape)}, got "
                  f"{tuple(got.shape) if isinstance(got, Tensor) else type(got).__name__}")
        got = got.double()
        if torch.allclose(got, plain.double() / factor, rtol=1e-5):
            ex.fail("every frequency divided by the factor is PI (linear); Llama 3 keeps the short wavelengths")
        if torch.allclose(got, plain.double(), rtol=1e-5):
            ex.fail("these are the unscaled frequencies; the long wavelengths must be divided by the factor")
        wavelength = 2 * math.pi / plain.double()
        long_ok = torch.allclose(got[wavelength > original / low], (plain.double() / factor)[wavelength > original / low], rtol=1e-5)
        short_ok = torch.allclose(got[wavelength < original / high], plain.double()[wavelength < original / high], rtol=1e-5)
        ex.expect(long_ok and short_ok, f"for original={original}, low={low}, high={high}: wavelengths above "
                  f"original/low must be divided by factor and those below original/high kept")
        ex.expect(torch.allclose(got, want.double(), rtol=1e-5),
                  f"the band between original/high and original/low differs from the blend (head_dim={head_dim}): "
                  f"s = (original/wavelength - low) / (high - low), (1 - s) theta/factor + s theta")
    ex.passed("short wavelengths kept, long ones divided by the factor, a smooth blend between")


@checker("Exercise 2 (which coordinate each M-RoPE pair reads)")
def check_exercise_2(ex: Exercise, pair_axes: Callable[[int, list[int], bool], list[int]]) -> None:
    """pair_axes(n_pairs, section, interleaved) -> the axis (0 t, 1 h, 2 w) of each pair, as mrope_axes."""
    for n_pairs, section, interleaved in [(64, [16, 24, 24], False), (64, [24, 20, 20], True), (12, [4, 4, 4], True),
                                          (12, [4, 4, 4], False), (8, [4, 2, 2], True)]:
        got = ex.call(pair_axes, n_pairs, list(section), interleaved)
        want = mrope_axes(n_pairs, section, interleaved).tolist()
        try:
            got = [int(a) for a in got]
        except (TypeError, ValueError):
            ex.fail(f"return a list of {n_pairs} ints (0, 1 or 2), got {type(got).__name__}")
        ex.expect(len(got) == n_pairs, f"return one axis per pair ({n_pairs}), got {len(got)}")
        counts = [got.count(a) for a in range(3)]
        ex.expect(counts == list(section), f"{'interleaved' if interleaved else 'sectioned'} {section}: each axis must get "
                  f"its section's number of pairs {list(section)}, got {counts}")
        if interleaved and got == [a for a, c in enumerate(section) for _ in range(c)]:
            ex.fail("that is the sectioned order; interleaved cycles t, h, w, t, h, w, ...")
        ex.expect(got == want, f"{'interleaved' if interleaved else 'sectioned'} {section} over {n_pairs} pairs: expected "
                  f"{want[:9]}..., got {got[:9]}...")
    ex.passed("sectioned: t, then h, then w; interleaved: t, h, w cycling")


@checker("Exercise 3 (SmolLM3's NoPE layers)")
def check_exercise_3(ex: Exercise, no_rope_layers: Callable[[int, int], list[int]]) -> None:
    """no_rope_layers(n_layers, interval) -> SmolLM3Config's no_rope_layers (1 = the layer uses RoPE)."""
    from transformers import SmolLM3Config  # the reference: transformers' own derivation

    for n_layers, interval in [(36, 4), (8, 4), (10, 3), (5, 1)]:
        got = ex.call(no_rope_layers, n_layers, interval)
        want = list(SmolLM3Config(num_hidden_layers=n_layers, no_rope_layer_interval=interval).no_rope_layers)
        try:
            got = [int(v) for v in got]
        except (TypeError, ValueError):
            ex.fail(f"return a list of {n_layers} flags (0 or 1), got {type(got).__name__}")
        ex.expect(len(got) == n_layers, f"return one flag per layer ({n_layers}), got {len(got)}")
        if got == want:
            continue
        if got == [1 - v for v in want]:
            ex.fail("the flags are the wrong way round: 1 means the layer USES RoPE (despite the name)")
        if got == [int(layer % interval != 0) for layer in range(n_layers)]:
            ex.fail("off by one: the NoPE layers are layers interval-1, 2*interval-1, ... (the last of each group)")
        ex.expect(got == want, f"for {n_layers} layers, interval {interval}: expected {want}, got {got}")
    ex.passed("every interval-th layer without RoPE, as SmolLM3Config derives it")
