"""MultiHeadAttention: permutation symmetry, shapes, masks, KV cache, explicit weights, input errors.

Each property is checked together with its counter-case (a position-aware scheme breaks the
symmetry, a missing mask changes the output, ...), so every test can fail.
"""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from posenc_lib.attention import KVCache, MultiHeadAttention
from posenc_lib.scheme import NoPosition

pytestmark = pytest.mark.usefixtures("single_thread")

POSITION_AWARE = ["rotary", "bias"]  # the schemes MultiHeadAttention itself applies


def mha(d_model: int, n_heads: int, scheme=None, seed: int = 0, window: int | None = None) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(d_model, n_heads, scheme, window=window).double().eval()


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --- permutation equivariance -------------------------------------------------------------------


@settings(max_examples=40)
@given(
    batch=st.integers(1, 3),
    seq=st.integers(1, 9),
    n_heads=st.integers(1, 4),
    head_dim=st.integers(1, 8),
    seed=st.integers(0, 2**16),
)
def test_no_position_attention_is_permutation_equivariant(batch, seq, n_heads, head_dim, seed):
    layer = mha(n_heads * head_dim, n_heads, NoPosition(), seed)
    x = randn(batch, seq, n_heads * head_dim, seed=seed)
    perm = torch.randperm(seq, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        assert_close(layer(x[:, perm]), layer(x)[:, perm])


@pytest.mark.parametrize("name", POSITION_AWARE)
def test_position_aware_attention_is_not_equivariant(make_scheme, name):
    layer = mha(16, 2, make_scheme(name, 16))
    x = randn(2, 6, 16)
    perm = torch.tensor([2, 0, 5, 1, 4, 3])  # not a reversal, which keeps every |i - j|
    with torch.no_grad():
        assert not torch.allclose(layer(x[:, perm]), layer(x)[:, perm], atol=1e-4)


# --- shapes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch, seq, d_model, n_heads", [(1, 1, 4, 1), (3, 7, 12, 3), (2, 5, 32, 8)])
def test_shapes(batch, seq, d_model, n_heads):
    layer = mha(d_model, n_heads)
    y, w = layer(randn(batch, seq, d_model), return_weights=True)
    assert y.shape == (batch, seq, d_model)
    assert w.shape == (batch, n_heads, seq, seq)
    assert layer.head_dim == d_model // n_heads


# --- padding and causal masks ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["none", *POSITION_AWARE])
def test_padding_mask_gives_the_unpadded_outputs(make_scheme, name):
    layer = mha(16, 4, make_scheme(name, 16))
    long, short = randn(1, 6, 16, seed=1), randn(1, 4, 16, seed=2)
    padded = torch.cat([short, randn(1, 2, 16, seed=3)], dim=1)  # right padding with junk vectors
    x = torch.cat([long, padded])
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    with torch.no_grad():
        y = layer(x, attn_mask=mask)
        assert_close(y[0], layer(long)[0])
        assert_close(y[1, :4], layer(short)[0])
        assert not torch.allclose(layer(x)[1, :4], layer(short)[0], atol=1e-4)  # without the mask, pads leak in


@pytest.mark.parametrize("name", ["none", *POSITION_AWARE])
@pytest.mark.parametrize("t", [0, 3])
def test_causal_output_ignores_future_tokens(make_scheme, name, t):
    layer = mha(16, 2, make_scheme(name, 16))
    x = randn(2, 6, 16, seed=1)
    changed = x.clone()
    changed[:, t + 1 :] = randn(2, 6 - t - 1, 16, seed=2)
    with torch.no_grad():
        y, y_changed = layer(x, causal=True), layer(changed, causal=True)
        assert_close(y_changed[:, : t + 1], y[:, : t + 1])
        assert not torch.allclose(y_changed[:, t + 1 :], y[:, t + 1 :], atol=1e-4)
        # Without the causal mask the past does see the change.
        assert not torch.allclose(layer(changed)[:, : t + 1], layer(x)[:, : t + 1], atol=1e-4)


# --- KV cache -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["none", *POSITION_AWARE])
def test_kv_cache_decode_equals_full_recomputation(make_scheme, name):
    layer = mha(16, 2, make_scheme(name, 16))
    x = randn(2, 7, 16)
    cache = KVCache()
    with torch.no_grad():
        full = layer(x, causal=True)
        steps = [layer(x[:, :3], causal=True, cache=cache)]  # a prompt, then one token at a time
        steps += [layer(x[:, i : i + 1], causal=True, cache=cache) for i in range(3, 7)]
    assert len(cache) == 7
    assert_close(torch.cat(steps, dim=1), full)
    assert_close(cache.positions, torch.arange(7).expand(2, 7))


@pytest.mark.parametrize("name", POSITION_AWARE)
def test_kv_cache_step_with_wrong_position_differs(make_scheme, name):
    """The decode step must use the new token's absolute position; position 0 gives another answer."""
    layer = mha(16, 2, make_scheme(name, 16))
    x = randn(1, 5, 16)
    cache = KVCache()
    with torch.no_grad():
        full = layer(x, causal=True)
        layer(x[:, :4], causal=True, cache=cache)
        wrong = layer(x[:, 4:], positions=torch.zeros(1, 1, dtype=torch.long), causal=True, cache=cache)
    assert not torch.allclose(wrong[:, 0], full[:, 4], atol=1e-4)


# --- explicit weights (return_weights=True) -------------------------------------------------------


@pytest.mark.parametrize("name", ["none", *POSITION_AWARE])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_explicit_weights_path_equals_sdpa(make_scheme, name, causal, padded):
    layer = mha(16, 4, make_scheme(name, 16))
    x = randn(2, 5, 16)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2]) if padded else None
    with torch.no_grad():
        y, w = layer(x, attn_mask=mask, causal=causal, return_weights=True)
        assert_close(y, layer(x, attn_mask=mask, causal=causal))
    assert_close(w.sum(-1), torch.ones(2, 4, 5, dtype=w.dtype))
    assert (w >= 0).all()
    if causal:
        assert (w.triu(diagonal=1) == 0).all()
    if padded:
        assert (w[1, :, :, 3:] == 0).all()


def test_query_that_sees_no_key_gets_zero_weights_not_nan():
    """Left padding under a causal mask: the pads see no key at all. Both paths give zeros, no NaN."""
    layer = mha(8, 2)
    x = randn(1, 4, 8)
    mask = torch.tensor([[False, False, True, True]])
    with torch.no_grad():
        y, w = layer(x, attn_mask=mask, causal=True, return_weights=True)
        assert_close(y, layer(x, attn_mask=mask, causal=True))
    assert not y.isnan().any()
    assert (w[0, :, :2] == 0).all()
    assert_close(w[0, :, 2:].sum(-1), torch.ones(2, 2, dtype=w.dtype))


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model, n_heads", [(10, 3)])
def test_d_model_not_a_multiple_of_n_heads(d_model, n_heads):
    with pytest.raises(ValueError, match=rf"d_model must be a positive multiple of n_heads, got d_model={d_model}, n_heads={n_heads}"):
        MultiHeadAttention(d_model, n_heads)


@pytest.mark.parametrize("d_model, n_heads, name, value", [(8, 0, "n_heads", 0), (0, 2, "d_model", 0), (-4, 2, "d_model", -4)])
def test_d_model_and_n_heads_positive_ints(d_model, n_heads, name, value):
    with pytest.raises(ValueError, match=rf"^{name} must be an int >= 1, got {value}$"):
        MultiHeadAttention(d_model, n_heads)


@pytest.mark.parametrize("shape", [(5, 8), (2, 5, 6), (1, 2, 5, 8)])
def test_x_of_wrong_shape(shape):
    with pytest.raises(ValueError, match=re.escape(f"x must have shape (batch, seq, d_model=8), got {shape}")):
        MultiHeadAttention(8, 2)(torch.zeros(shape))


def test_x_of_integer_dtype():
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor, got dtype torch.int64"):
        MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8, dtype=torch.long))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_positions_of_non_integer_dtype(dtype):
    with pytest.raises(TypeError, match=rf"positions must be an integer tensor \(torch.long\), got dtype {dtype}"):
        MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8), positions=torch.zeros(1, 3, dtype=dtype))


@pytest.mark.parametrize("shape", [(3,), (2, 3), (1, 4), (1, 1, 3)])
def test_positions_of_wrong_shape(shape):
    with pytest.raises(ValueError, match=r"positions must have shape \(batch, seq\) = \(3, 3\) or \(1, 3\), got"):
        MultiHeadAttention(8, 2)(torch.zeros(3, 3, 8), positions=torch.zeros(shape, dtype=torch.long))


def test_attn_mask_not_bool():
    with pytest.raises(TypeError, match=r"attn_mask must be a bool tensor \(True = may attend\), got dtype torch.float32"):
        MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8), attn_mask=torch.ones(1, 3))


def test_attn_mask_of_wrong_length():
    with pytest.raises(ValueError, match=r"attn_mask of dim 2 must have shape \(batch, k_len\) = \(1, 3\), got \(1, 4\)"):
        MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8), attn_mask=torch.ones(1, 4, dtype=torch.bool))


@pytest.mark.parametrize("bias_shape", [(1, 4, 3, 3), (2, 1, 3, 4), (3, 3, 3)])
def test_score_bias_that_does_not_fit_the_scores(bias_shape):
    class WrongBias(NoPosition):
        def score_bias(self, q_positions, k_positions):
            return torch.zeros(bias_shape)

    expected = re.escape(f"score_bias of WrongBias must broadcast to (batch, heads, q_len, k_len) = (2, 2, 3, 3), got shape {bias_shape}")
    with pytest.raises(ValueError, match=expected):
        MultiHeadAttention(8, 2, WrongBias())(torch.zeros(2, 3, 8))


@pytest.mark.parametrize("bias_shape", [(3, 3), (2, 1, 3, 3), (1, 2, 1, 3)])
def test_score_bias_may_broadcast(bias_shape):
    class SmallBias(NoPosition):
        def score_bias(self, q_positions, k_positions):
            return torch.zeros(bias_shape)

    assert MultiHeadAttention(8, 2, SmallBias())(torch.zeros(2, 3, 8)).shape == (2, 3, 8)



# --- a per-key bias reaches SDPA as one more q/k column ------------------------------------------


class PerKeyBias(NoPosition):
    """A bias that depends on the key only, (1, heads, 1, k_len), like compact ALiBi."""

    def __init__(self, n_heads: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_heads, generator=torch.Generator().manual_seed(3)))

    def score_bias(self, q_positions, k_positions):
        return self.weight[None, :, None, None] * k_positions[:, None, None, :].to(self.weight.dtype) * 0.1


def test_fold_key_bias_equals_the_additive_mask():
    from posenc_lib.attention import fold_key_bias

    q, k, v = randn(2, 3, 7, 4, seed=1), randn(2, 3, 7, 4, seed=2), randn(2, 3, 7, 4, seed=3)
    bias = randn(1, 3, 1, 7, seed=4)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=bias.expand(2, 3, 7, 7).masked_fill(~causal, float("-inf")))
    q2, k2, v2 = fold_key_bias(q, k, v, bias, scale=0.5)
    assert q2.shape == k2.shape == v2.shape == (2, 3, 7, 5)
    y = torch.nn.functional.scaled_dot_product_attention(q2, k2, v2, is_causal=True, scale=0.5)
    assert_close(y[..., :4], expected)
    assert (y[..., 4] == 0).all()
    with pytest.raises(ValueError, match="key_bias must have shape"):
        fold_key_bias(q, k, v, randn(1, 3, 7, 7), scale=0.5)


def test_per_key_bias_layer_matches_explicit_weights_and_gets_gradients():
    layer = mha(12, 3, PerKeyBias(3))
    x = randn(2, 9, 12, seed=5).requires_grad_(True)
    y = layer(x, causal=True)  # folded into q/k, SDPA applies the causal mask itself
    y_ref, _ = layer(x, causal=True, return_weights=True)  # explicit scores + bias + mask
    assert_close(y, y_ref)
    y.sum().backward()
    assert layer.scheme.weight.grad is not None and layer.scheme.weight.grad.abs().sum() > 0


def test_per_key_bias_under_causal_attention_never_builds_a_heads_l_l_mask():
    from torch.profiler import ProfilerActivity, profile

    n_heads, seq = 4, 512
    layer = MultiHeadAttention(32, n_heads, PerKeyBias(n_heads)).eval()
    x = torch.randn(1, seq, 32)
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        layer(x, causal=True)
    largest = max(e.cpu_memory_usage for e in prof.events())
    assert largest < n_heads * seq * seq, f"largest allocation {largest} B; a (heads, L, L) float mask is {n_heads * seq * seq * 4} B"


# --- sliding window -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["none", *POSITION_AWARE])
@pytest.mark.parametrize("causal", [False, True])
def test_window_equals_the_band_mask_and_its_weights_stay_in_the_band(make_scheme, name, causal):
    """window=w is the boolean band |i - j| < w given as attn_mask, and no weight falls outside it."""
    scheme = make_scheme(name, 16)
    local = mha(16, 2, scheme, window=3)
    plain = mha(16, 2, scheme)
    plain.load_state_dict(local.state_dict())
    x = randn(2, 7, 16)
    i, j = torch.arange(7)[:, None], torch.arange(7)[None, :]
    band = ((i - j).abs() < 3)[None, None]
    with torch.no_grad():
        y, w = local(x, causal=causal, return_weights=True)
        assert_close(y, plain(x, attn_mask=band, causal=causal))
        assert_close(local(x, causal=causal), y)
    assert (w[..., ~band[0, 0]] == 0).all()
    assert (w[..., band[0, 0] & ((j <= i) | (not causal))] > 0).all()


@pytest.mark.parametrize("name", ["none", "rotary"])
def test_window_with_kv_cache_equals_full_recomputation(make_scheme, name):
    layer = mha(16, 2, make_scheme(name, 16), window=2)
    x = randn(2, 6, 16)
    cache = KVCache()
    with torch.no_grad():
        full = layer(x, causal=True)
        steps = [layer(x[:, :3], causal=True, cache=cache)] + [layer(x[:, i : i + 1], causal=True, cache=cache)
                                                                 for i in range(3, 6)]
    assert_close(torch.cat(steps, dim=1), full)


def test_window_as_wide_as_the_sequence_changes_nothing():
    local, wide = mha(16, 2, window=5), mha(16, 2)
    wide.load_state_dict(local.state_dict())
    x = randn(1, 5, 16)
    with torch.no_grad():
        assert_close(local(x, causal=True), wide(x, causal=True))
