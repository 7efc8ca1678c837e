"""Relative biases (T5, ALiBi, Swin): properties, and conformance with Hugging Face transformers.

The conformance tests print their maximum observed error (run with ``-s`` to see it); the
coordinator collects these numbers.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_lib.attention import MultiHeadAttention
from posenc_lib.models import TinyTransformer, last_token_logits_two_ways
from posenc_lib.score_bias.alibi import ALiBi, alibi_bias, alibi_slopes
from posenc_lib.score_bias.swin import SwinRelativeBias, swin_relative_position_index
from posenc_lib.score_bias.t5 import T5RelativeBias, t5_relative_bucket

T5_CONFIGS = [(32, 128), (8, 20), (16, 64), (64, 1000), (4, 3), (6, 7), (33, 50)]


def _arange(n: int, offset: int = 0) -> torch.Tensor:
    return torch.arange(offset, offset + n)[None]


# ----------------------------------------------------------------------------- T5


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", T5_CONFIGS)
def test_t5_buckets_match_transformers(bidirectional, num_buckets, max_distance):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-3000, 3001)
    ours = t5_relative_bucket(rel, bidirectional, num_buckets, max_distance)
    ref = T5Attention._relative_position_bucket(rel, bidirectional, num_buckets, max_distance)
    mismatches = int((ours != ref).sum())
    print(f"[conformance] T5 buckets nb={num_buckets} md={max_distance} bi={bidirectional}: mismatches {mismatches}")
    assert ours.dtype == torch.long
    assert mismatches == 0


@pytest.mark.parametrize("is_decoder", [False, True])
def test_t5_bias_matches_t5attention_compute_bias(is_decoder):
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    config = T5Config(d_model=32, d_kv=8, num_heads=4, relative_attention_num_buckets=16,
                      relative_attention_max_distance=40, is_decoder=is_decoder)
    ref = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    ours = T5RelativeBias(4, num_buckets=16, max_distance=40, bidirectional=not is_decoder)
    with torch.no_grad():
        ours.table.weight.copy_(torch.randn(16, 4))
        ref.relative_attention_bias.weight.copy_(ours.table.weight)
        q_len, k_len, past = 7, 60, 53  # a decode chunk after 53 cached tokens
        expected = ref.compute_bias(q_len, k_len, past_seen_tokens=past)
        got = ours.score_bias(_arange(q_len, past), _arange(k_len))
    err = (got - expected).abs().max().item()
    print(f"[conformance] T5 bias vs T5Attention.compute_bias decoder={is_decoder}: max abs err {err:.3g}")
    assert got.shape == (1, 4, q_len, k_len)
    assert err == 0.0


def _t5_reference_attention(is_decoder: bool):
    """Hugging Face's T5Attention from a tiny config (eager attention, no downloads)."""
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    config = T5Config(d_model=32, d_kv=8, num_heads=4, relative_attention_num_buckets=16,
                      relative_attention_max_distance=20, is_decoder=is_decoder, dropout_rate=0.0)
    config._attn_implementation = "eager"
    torch.manual_seed(1)
    return T5Attention(config, has_relative_attention_bias=True, layer_idx=0).eval()


@pytest.mark.parametrize("is_decoder", [False, True], ids=["encoder_bidirectional", "decoder_causal"])
@pytest.mark.parametrize("return_weights", [False, True], ids=["sdpa", "explicit_weights"])
def test_t5_layer_matches_t5attention_end_to_end(is_decoder, return_weights):
    """Our attention + T5 bias with T5's weights = T5Attention: same output, so no 1/sqrt(d) scale."""
    ref = _t5_reference_attention(is_decoder)
    with torch.no_grad():
        ref.relative_attention_bias.weight.normal_(0.0, 1.0)  # large enough that a wrong bucket shows
    ours = MultiHeadAttention(32, 4, T5RelativeBias(4, 16, 20, bidirectional=not is_decoder), bias=False).eval()
    with torch.no_grad():
        ours.qkv.weight.copy_(torch.cat([ref.q.weight, ref.k.weight, ref.v.weight]))
        ours.out.weight.copy_(ref.o.weight)
        ours.scheme.table.weight.copy_(ref.relative_attention_bias.weight)
    x = torch.randn(2, 30, 32, generator=torch.Generator().manual_seed(2))  # 30 > max_distance: far buckets too
    mask = None
    if is_decoder:  # T5 takes its causal mask as an additive (batch, 1, q_len, k_len) float tensor
        mask = torch.zeros(30, 30).masked_fill(~torch.ones(30, 30, dtype=torch.bool).tril(), float("-inf"))[None, None]
    with torch.no_grad():
        expected = ref(x, mask=mask)[0]
        got = ours(x, causal=is_decoder, return_weights=return_weights)
        got = got[0] if return_weights else got
        scaled = ours.scheme.score_scale  # the same layer with the usual 1/sqrt(d) would differ
        ours.scheme.score_scale = lambda head_dim: head_dim**-0.5
        wrong = ours(x, causal=is_decoder)
        ours.scheme.score_scale = scaled
    err = (got - expected).abs().max().item()
    print(f"[conformance] T5 layer vs T5Attention decoder={is_decoder} weights={return_weights}: max abs err {err:.3g}")
    torch.testing.assert_close(got, expected)
    assert (wrong - expected).abs().max() > 1e-2


def test_t5_scheme_scores_are_unscaled_and_the_scale_is_in_the_query_init():
    """score_scale is 1 for T5 and 1/sqrt(d) otherwise; at init a T5 layer gives the scaled layer's output."""
    class ScaledT5(T5RelativeBias):  # T5's bias with the usual scale: the course's former layer
        def score_scale(self, head_dim: int) -> float:
            return ALiBi.score_scale(self, head_dim)

    assert T5RelativeBias(2).score_scale(16) == 1.0
    assert ALiBi(2).score_scale(16) == 0.25 and SwinRelativeBias(2, 2, 2).score_scale(9) == 1 / 3
    torch.manual_seed(0)
    t5 = MultiHeadAttention(24, 3, T5RelativeBias(3))
    torch.manual_seed(0)
    scaled = MultiHeadAttention(24, 3, ScaledT5(3))
    d = 24
    torch.testing.assert_close(t5.qkv.weight[:d], scaled.qkv.weight[:d] * (1.0 / math.sqrt(8)), rtol=0, atol=0)
    torch.testing.assert_close(t5.qkv.bias[:d], scaled.qkv.bias[:d] * (1.0 / math.sqrt(8)), rtol=0, atol=0)
    assert torch.equal(t5.qkv.weight[d:], scaled.qkv.weight[d:]) and torch.equal(t5.qkv.bias[d:], scaled.qkv.bias[d:])
    x = torch.randn(2, 11, d)
    for causal in (False, True):
        torch.testing.assert_close(t5(x, causal=causal), scaled(x, causal=causal), rtol=1e-5, atol=1e-6)
    # a scheme with the usual scale keeps PyTorch's init untouched
    scheme = ScaledT5(3)
    torch.manual_seed(0)
    untouched = MultiHeadAttention(24, 3, scheme)
    torch.manual_seed(0)
    plain = MultiHeadAttention(24, 3, ALiBi(3, causal=False))
    assert torch.equal(plain.qkv.weight, untouched.qkv.weight) and torch.equal(plain.qkv.bias, untouched.qkv.bias)




@settings(max_examples=60, deadline=None)
@given(
    num_buckets=st.integers(4, 128),
    max_distance=st.integers(2, 2000),
    bidirectional=st.booleans(),
)
def test_t5_buckets_range_and_monotone_per_direction(num_buckets, max_distance, bidirectional):
    n = num_buckets // 2 if bidirectional else num_buckets
    if max_distance <= n // 2:
        with pytest.raises(ValueError, match="max_distance"):
            t5_relative_bucket(torch.zeros(1, dtype=torch.long), bidirectional, num_buckets, max_distance)
        return
    d = torch.arange(0, 3 * max_distance + 10)
    before = t5_relative_bucket(-d, bidirectional, num_buckets, max_distance)  # key at or before the query
    assert before.min() >= 0 and before.max() <= n - 1
    assert (before.diff() >= 0).all(), "bucket must not decrease as the distance grows"
    assert torch.equal(before[: n // 2], d[: n // 2]), "distances below n/2 get exact buckets"
    assert (before[d >= max_distance] == n - 1).all(), "at or beyond max_distance: the last bucket"
    after = t5_relative_bucket(d[1:], bidirectional, num_buckets, max_distance)  # key after the query
    if bidirectional:
        assert after.min() >= n and after.max() <= 2 * n - 1
        assert (after.diff() >= 0).all()
        assert torch.equal(after - n, before[1:]), "the two directions mirror each other"
    else:
        assert (after == 0).all(), "causal: keys after the query fall in bucket 0 (they are masked)"


def test_t5_bias_depends_only_on_offset_and_has_no_compact_form():
    torch.manual_seed(0)
    scheme = T5RelativeBias(2, num_buckets=8, max_distance=16)
    full = scheme.score_bias(_arange(12), _arange(12))
    shifted = scheme.score_bias(_arange(12, 100), _arange(12, 100))
    torch.testing.assert_close(full, shifted, rtol=0, atol=0)
    # A per-key form exists iff b(i, j) - b(i, 0) is the same for every query row i: it is not.
    row_differences = full - full[..., :1]
    assert (row_differences - row_differences[..., :1, :]).abs().max() > 1e-3


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", T5_CONFIGS)
def test_t5_gathered_bias_equals_bucketing_every_pair(bidirectional, num_buckets, max_distance):
    """score_bias buckets the offsets in [-max_distance, max_distance] once and gathers; the result
    is bit-identical to looking up the bucket of every pair, also for offsets far beyond
    max_distance, uneven positions, a batch of position rows and int32 positions."""
    torch.manual_seed(0)
    scheme = T5RelativeBias(3, num_buckets, max_distance, bidirectional)
    gen = torch.Generator().manual_seed(1)
    span = 3 * max_distance + 5
    q_pos = torch.randint(0, span, (2, 17), generator=gen)
    k_pos = torch.randint(0, span, (2, 23), generator=gen)
    for q, k in ((q_pos, k_pos), (q_pos[:1], k_pos), (_arange(40), _arange(40)), (q_pos.int(), k_pos.int())):
        expected = scheme.table(scheme.buckets(q, k)).permute(0, 3, 1, 2)
        assert torch.equal(scheme.score_bias(q, k), expected)
    assert scheme.offset_bias().shape == (2 * max_distance + 1, 3)


@settings(max_examples=40, deadline=None)
@given(
    num_buckets=st.integers(4, 64),
    max_distance=st.integers(4, 300),
    bidirectional=st.booleans(),
    offset=st.integers(0, 1000),
    seed=st.integers(0, 2**16),
)
def test_t5_gathered_bias_equals_every_pair_property(num_buckets, max_distance, bidirectional, offset, seed):
    n = num_buckets // 2 if bidirectional else num_buckets
    if max_distance <= n // 2:
        return  # rejected by the constructor (tested above)
    torch.manual_seed(seed)
    scheme = T5RelativeBias(2, num_buckets, max_distance, bidirectional)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 700, (1, 9), generator=gen) + offset
    k = torch.randint(0, 700, (1, 11), generator=gen)
    assert torch.equal(scheme.score_bias(q, k), scheme.table(scheme.buckets(q, k)).permute(0, 3, 1, 2))


def test_t5_gathered_bias_trains_the_same_table_rows():
    torch.manual_seed(0)
    scheme = T5RelativeBias(2, num_buckets=8, max_distance=16)
    pos = _arange(30)
    scheme.score_bias(pos, pos).square().sum().backward()
    got = scheme.table.weight.grad.clone()
    scheme.table.weight.grad = None
    scheme.table(scheme.buckets(pos, pos)).permute(0, 3, 1, 2).square().sum().backward()
    torch.testing.assert_close(got, scheme.table.weight.grad)


# ----------------------------------------------------------------------------- ALiBi


def test_alibi_slopes_paper_values_for_8_heads():
    expected = torch.tensor([2.0**-k for k in range(1, 9)])  # 1/2, 1/4, ..., 1/256
    torch.testing.assert_close(alibi_slopes(8), expected, rtol=0, atol=0)


@pytest.mark.parametrize("n_heads", range(1, 65))
def test_alibi_slopes_properties(n_heads):
    m = alibi_slopes(n_heads)
    assert m.shape == (n_heads,) and m.dtype == torch.float32
    assert (m > 0).all() and (m < 1).all() and len(set(m.tolist())) == n_heads
    p = 2 ** (n_heads.bit_length() - 1)
    if p == n_heads:
        assert (m.diff() < 0).all(), "power of two: geometric, strictly decreasing"
        torch.testing.assert_close(m[1:] / m[:-1], torch.full((n_heads - 1,), 2.0 ** (-8 / n_heads)))
    else:
        torch.testing.assert_close(m[:p], alibi_slopes(p), rtol=0, atol=0)
        torch.testing.assert_close(m[p:], alibi_slopes(2 * p)[0::2][: n_heads - p], rtol=0, atol=0)


def test_alibi_slopes_match_bloom():
    from transformers.models.bloom.modeling_bloom import _get_alibi_slopes

    err = max((alibi_slopes(n) - _get_alibi_slopes(n, "cpu")).abs().max().item() for n in range(1, 65))
    print(f"[conformance] ALiBi slopes vs Bloom _get_alibi_slopes (1..64 heads): max abs err {err:.3g}")
    assert err <= 1e-6


@pytest.mark.parametrize("n_heads", [1, 3, 5, 8, 12, 16, 24, 40])
def test_alibi_compact_matches_bloom_build_alibi_tensor(n_heads):
    """Bloom stores the compact per-key form m_h * j, with j counted over real tokens (left padding)."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.ones(3, 10, dtype=torch.long)
    mask[1, :4] = 0  # left padding
    mask[2, :1] = 0
    ref = build_alibi_tensor(mask, n_heads, torch.float32).reshape(3, n_heads, 1, 10)
    positions = (mask.cumsum(-1) - 1) * mask
    ours = alibi_bias(alibi_slopes(n_heads), positions, positions, compact=True)
    assert ours.shape == (3, n_heads, 1, 10)
    err = (ours - ref).abs().max().item()
    print(f"[conformance] ALiBi compact vs Bloom build_alibi_tensor ({n_heads} heads): max abs err {err:.3g}")
    assert err <= 1e-6
    assert ALiBi(n_heads, causal=True).score_bias(positions, positions).shape == (3, n_heads, 1, 10)


@settings(max_examples=40, deadline=None)
@given(
    n_heads=st.integers(1, 12),
    q_len=st.integers(1, 24),
    past=st.integers(0, 40),
    seed=st.integers(0, 2**31 - 1),
)
def test_alibi_compact_equals_full_softmax_under_causal_mask(n_heads, q_len, past, seed):
    gen = torch.Generator().manual_seed(seed)
    k_len = past + q_len
    q_pos, k_pos = _arange(q_len, past), _arange(k_len)
    scores = torch.randn(2, n_heads, q_len, k_len, generator=gen) * 3
    causal = k_pos[:, None, :] <= q_pos[:, :, None]  # (1, q, k)
    slopes = alibi_slopes(n_heads)
    full = (scores + alibi_bias(slopes, q_pos, k_pos)).masked_fill(~causal[:, None], float("-inf")).softmax(-1)
    compact = (scores + alibi_bias(slopes, q_pos, k_pos, compact=True)).masked_fill(~causal[:, None], float("-inf"))
    torch.testing.assert_close(compact.softmax(-1), full, rtol=1e-5, atol=1e-6)


def test_alibi_compact_differs_without_causal_mask():
    """The compact form is only valid under a causal mask: without it, it favours later keys."""
    slopes, pos = alibi_slopes(4), _arange(6)
    full = alibi_bias(slopes, pos, pos).softmax(-1)
    compact = alibi_bias(slopes, pos, pos, compact=True).expand(1, 4, 6, 6).softmax(-1)
    assert (full - compact).abs().max() > 0.1
    bias = alibi_bias(slopes, pos, pos)
    torch.testing.assert_close(bias, bias.transpose(-1, -2), rtol=0, atol=0)  # symmetric -m|i-j|
    assert (bias <= 0).all() and (bias.diagonal(dim1=-2, dim2=-1) == 0).all()


def test_alibi_full_and_compact_schemes_agree_in_a_causal_model():
    torch.manual_seed(0)
    attn = MultiHeadAttention(32, 4, ALiBi(4, causal=False))
    x = torch.randn(2, 9, 32)
    full = attn(x, causal=True)
    attn.scheme = ALiBi(4, causal=True)
    torch.testing.assert_close(attn(x, causal=True), full, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "scheme", [ALiBi(4, causal=True), T5RelativeBias(4, 16, 32, bidirectional=False)], ids=["alibi", "t5_causal"]
)
def test_bias_schemes_kv_cache_step_matches_full_pass(scheme):
    torch.manual_seed(0)
    model = TinyTransformer(11, 11, d_model=32, n_heads=4, n_layers=2, scheme=scheme, causal=True, pool="none")
    tokens = torch.randint(0, 11, (2, 13))
    full, cached = last_token_logits_two_ways(model, tokens)
    torch.testing.assert_close(cached, full, rtol=1e-5, atol=1e-5)


def test_alibi_slopes_are_a_non_persistent_buffer():
    scheme = ALiBi(6)
    assert "slopes" not in scheme.state_dict()
    assert torch.equal(scheme.slopes, alibi_slopes(6))


# ----------------------------------------------------------------------------- Swin


@pytest.mark.parametrize("window", [1, 2, 3, 7])
def test_swin_index_matches_swin_attention_buffer(window):
    from transformers import SwinConfig
    from transformers.models.swin.modeling_swin import SwinAttention

    config = SwinConfig(embed_dim=16, num_heads=[2], depths=[1], window_size=window)
    ref = SwinAttention(config, hidden_size=16, num_attention_heads=2, window_size=window)
    expected = ref.relative_position_bias.relative_position_index.view(window * window, window * window)
    ours = swin_relative_position_index(window, window)
    mismatches = int((ours != expected).sum())
    print(f"[conformance] Swin index window {window}: mismatches {mismatches}")
    assert ours.dtype == torch.long and mismatches == 0


@pytest.mark.parametrize("hw", [(2, 5), (4, 3), (1, 6)])
def test_swin_rectangular_window_and_bias_match_transformers(hw):
    from transformers.models.swin.modeling_swin import SwinRelativePositionBias

    ref = SwinRelativePositionBias(3, hw)
    ours = SwinRelativeBias(3, *hw)
    n = hw[0] * hw[1]
    assert torch.equal(ours.index, ref.relative_position_index.view(n, n))
    with torch.no_grad():
        ref.relative_position_bias_table.copy_(ours.table)
        err = (ours.score_bias(_arange(n), _arange(n)) - ref()).abs().max().item()
    print(f"[conformance] Swin bias window {hw}: max abs err {err:.3g}")
    assert err == 0.0


@pytest.mark.parametrize("hw", [(3, 3), (2, 5)])
def test_swin_index_with_class_token_matches_beit(hw):
    from transformers.models.beit.modeling_beit import BeitRelativePositionBias

    expected = BeitRelativePositionBias.generate_relative_position_index(hw)
    ours = swin_relative_position_index(*hw, n_prefix=1)
    mismatches = int((ours != expected).sum())
    print(f"[conformance] BEiT index (with class token) window {hw}: mismatches {mismatches}")
    assert mismatches == 0


@pytest.mark.parametrize("hw", [(1, 1), (2, 3), (4, 4)])
def test_swin_index_covers_every_offset_exactly(hw):
    h, w = hw
    index = swin_relative_position_index(h, w)
    rows = torch.arange(h).repeat_interleave(w)
    cols = torch.arange(w).repeat(h)
    offsets = {(int(rows[i] - rows[j]), int(cols[i] - cols[j])): int(index[i, j]) for i in range(h * w) for j in range(h * w)}
    assert len(set(offsets.values())) == len(offsets) == (2 * h - 1) * (2 * w - 1)  # one row per 2-D offset
    assert index.min() == 0 and index.max() == (2 * h - 1) * (2 * w - 1) - 1
    assert torch.equal(index.diagonal(), torch.full((h * w,), (h - 1) * (2 * w - 1) + w - 1))


def test_swin_scheme_state_dict_and_prefix_and_range():
    scheme = SwinRelativeBias(2, 2, 3, n_prefix=2)
    assert set(scheme.state_dict()) == {"table"}, "index must be a non-persistent buffer"
    assert scheme.table.shape == (3 * 5 + 3, 2)
    bias = scheme.score_bias(_arange(8), _arange(8))
    assert bias.shape == (1, 2, 8, 8)
    torch.testing.assert_close(bias[0, :, 0, 3], scheme.table[15])  # prefix query -> patch key
    torch.testing.assert_close(bias[0, :, 4, 1], scheme.table[16])  # patch query -> prefix key
    torch.testing.assert_close(bias[0, :, 1, 0], scheme.table[17])  # prefix -> prefix
    with pytest.raises(ValueError, match=r"k_positions must lie in \[0, 7\]"):
        scheme.score_bias(_arange(8), _arange(9))


@pytest.mark.parametrize("scheme", [T5RelativeBias(2, 8, 16), ALiBi(2, causal=False), ALiBi(2)], ids=["t5", "alibi", "alibi_compact"])
def test_expanded_positions_give_one_bias_for_the_whole_batch(scheme):
    """default_positions expands one row over the batch: the bias is built once and broadcast."""
    from posenc_lib.scheme import default_positions

    shared = scheme.score_bias(default_positions(5, 9), default_positions(5, 9))
    assert shared.shape[0] == 1
    copies = torch.arange(9).repeat(5, 1)  # the same rows, but real copies: one bias per row
    separate = scheme.score_bias(copies, copies)
    assert separate.shape[0] == 5
    assert torch.equal(separate, shared.expand_as(separate))
