"""posenc_lib.rotary.scaling: each rope_type does what its paper says (conformance with transformers is in
test_rope_conformance.py), and bad configs are refused with a clear message."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_lib.rotary.rope import rope_inv_freq
from posenc_lib.rotary.scaling import ROPE_TYPES, rope_frequencies

D = 64
DEFAULT = rope_inv_freq(D)


def wavelengths(inv_freq):
    return 2 * math.pi / inv_freq.double()


def test_default_and_none():
    for config in (None, {}, {"rope_type": "default"}):
        inv_freq, factor = rope_frequencies(D, config)
        assert torch.equal(inv_freq, DEFAULT) and factor == 1.0
    assert torch.equal(rope_frequencies(D, {"rope_theta": 500.0})[0], rope_inv_freq(D, 500.0))
    assert DEFAULT[0] == 1.0 and DEFAULT.dtype == torch.float32 and DEFAULT.shape == (D // 2,)


def test_linear_divides_every_frequency():
    inv_freq, factor = rope_frequencies(D, {"rope_type": "linear", "factor": 4.0})
    torch.testing.assert_close(inv_freq, DEFAULT / 4)
    assert factor == 1.0


def test_ntk_keeps_fast_dims_and_stretches_the_slowest_by_factor():
    inv_freq, _ = rope_frequencies(D, {"rope_type": "ntk", "factor": 8.0})
    assert inv_freq[0] == 1.0  # the fastest pair is untouched
    assert inv_freq[-1].item() == pytest.approx(DEFAULT[-1].item() / 8, rel=1e-5)  # slowest stretched by exactly s
    stretch = (DEFAULT / inv_freq).double()
    assert torch.all(stretch[1:] > stretch[:-1])  # monotone in between


def test_dynamic_is_default_up_to_l0_then_ntk_with_effective_factor():
    config = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 100}
    for length in (1, 50, 100):
        assert torch.equal(rope_frequencies(D, config, seq_len=length)[0], DEFAULT)
    for length in (101, 250, 1000):
        effective = 4.0 * length / 100 - 3.0
        torch.testing.assert_close(rope_frequencies(D, config, seq_len=length)[0],
                                   rope_frequencies(D, {"rope_type": "ntk", "factor": effective})[0])
    with pytest.raises(ValueError, match="seq_len"):
        rope_frequencies(D, config)


def test_yarn_ramp_between_extrapolation_and_interpolation():
    config = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}
    inv_freq, factor = rope_frequencies(D, config)
    rotations = 256 / wavelengths(DEFAULT)  # turns each pair makes over the trained length
    fast, slow = rotations > 32, rotations < 1  # beta_fast = 32, beta_slow = 1
    assert fast.any() and slow.any()
    torch.testing.assert_close(inv_freq[fast], DEFAULT[fast])  # extrapolated: kept
    torch.testing.assert_close(inv_freq[slow], DEFAULT[slow] / 4)  # interpolated: divided by s
    ratio = (DEFAULT / inv_freq).double()
    assert torch.all(ratio[1:] >= ratio[:-1] - 1e-6) and ratio.min() >= 1 - 1e-6 and ratio.max() <= 4 + 1e-5
    assert factor == pytest.approx(0.1 * math.log(4.0) + 1)


def test_yarn_attention_factor_options():
    base = {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 64}
    assert rope_frequencies(D, {**base, "attention_factor": 1.5})[1] == 1.5
    with_mscale = rope_frequencies(D, {**base, "mscale": 1.0, "mscale_all_dim": 1.0})[1]
    assert with_mscale == pytest.approx(1.0)  # equal mscales cancel (DeepSeek-V3 style)
    assert rope_frequencies(D, {**base, "factor": 1.0})[1] == 1.0  # no scaling, no temperature
    truncated = rope_frequencies(D, base)[0]
    untruncated = rope_frequencies(D, {**base, "truncate": False})[0]
    assert not torch.equal(truncated, untruncated)


def test_llama3_three_bands():
    config = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 8192, "rope_theta": 500000.0}
    inv_freq, factor = rope_frequencies(128, config)
    theta = rope_inv_freq(128, 500000.0)
    wave = wavelengths(theta)
    short, long = wave < 8192 / 4, wave > 8192 / 1
    medium = ~short & ~long
    assert short.any() and long.any() and medium.any()
    assert torch.equal(inv_freq[short], theta[short])
    torch.testing.assert_close(inv_freq[long], theta[long] / 8)
    ratio = (theta / inv_freq)[medium]
    assert torch.all((ratio > 1) & (ratio < 8))
    assert factor == 1.0


def test_partial_rotary_factor_shortens_the_table():
    inv_freq, _ = rope_frequencies(D, {"partial_rotary_factor": 0.25})
    torch.testing.assert_close(inv_freq, rope_inv_freq(16))


@pytest.mark.parametrize(
    "config, words",
    [
        ({"rope_type": "su"}, ["rope_type", "'su'", "default", "yarn", "llama3", "ntk"]),
        ({"rope_type": "linear"}, ["'linear'", "needs", "factor"]),
        ({"rope_type": "yarn", "factor": 2.0}, ["'yarn'", "original_max_position_embeddings"]),
        ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 64},
         ["high_freq_factor", "low_freq_factor"]),
        ({"rope_type": "linear", "factor": 2.0, "beta_fast": 32}, ["beta_fast", "'linear'", "allowed keys"]),
        ({"rope_type": "default", "factr": 2.0}, ["factr", "allowed keys"]),
        ({"rope_type": "linear", "factor": -1.0}, ["factor", "> 0", "-1.0"]),
        ({"rope_theta": 1.0}, ["rope_theta", "> 1", "1.0"]),
        ({"partial_rotary_factor": 0.3}, ["partial_rotary_factor", "int(64 * 0.3) = 19", "even"]),
        ({"partial_rotary_factor": 1.5}, ["partial_rotary_factor", "(0, 1]", "1.5"]),
        ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
          "original_max_position_embeddings": 64}, ["low_freq_factor", "high_freq_factor", "4.0"]),
    ],
)
def test_bad_config_names_key_and_allowed_values(config, words):
    with pytest.raises(ValueError) as info:
        rope_frequencies(D, config)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_config_must_be_a_dict():
    with pytest.raises(TypeError, match="config must be a dict"):
        rope_frequencies(D, "yarn")


def test_all_types_listed():
    assert set(ROPE_TYPES) == {"default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional"}
