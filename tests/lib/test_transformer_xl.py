"""Transformer-XL relative attention: the shift trick against the direct formula, the paper's four
terms one by one, translation invariance, memory, and conformance with Hugging Face's XLNet.

The conformance test prints its maximum observed error (run with ``-s`` to see it).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from posenc_lib.attention import KVCache, MultiHeadAttention
from posenc_lib.models import TinyTransformer, last_token_logits_two_ways
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative, relative_shift
from posenc_lib.registry import build_scheme

pytestmark = pytest.mark.usefixtures("single_thread")


def _rows(n: int, offset: int = 0, batch: int = 1) -> torch.Tensor:
    return torch.arange(offset, offset + n).repeat(batch, 1)


def _scheme(d_model: int, n_heads: int, seed: int = 0) -> TransformerXLRelative:
    torch.manual_seed(seed)
    scheme = TransformerXLRelative(d_model, n_heads).double()
    with torch.no_grad():  # u, v of order 1, so that terms (c) and (d) are not negligible
        scheme.u.normal_()
        scheme.v.normal_()
    return scheme


def _randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def direct_terms(scheme: TransformerXLRelative, q, k, q_positions, k_positions) -> dict[str, torch.Tensor]:
    """Dai et al. 2019, §3.3, written out with ``W_r r_{i-j}`` gathered for every pair: O(L^2 d) memory.

    Returns the four unscaled terms, each (batch, heads, q_len, k_len).
    """
    b, h, q_len, d = q.shape
    k_len = k.shape[-2]
    distance = q_positions[:, :, None] - k_positions[:, None, :]  # (batch|1, q_len, k_len): i - j
    wr = scheme.r_proj(scheme.relative_encoding(distance))  # (batch|1, q_len, k_len, d_model)
    wr = wr.view(*wr.shape[:3], h, d).expand(b, q_len, k_len, h, d)
    return {
        "a": q @ k.transpose(-1, -2),
        "b": torch.einsum("bhid,bijhd->bhij", q, wr),
        "c": torch.einsum("hd,bhjd->bhj", scheme.u, k)[:, :, None, :].expand(b, h, q_len, k_len),
        "d": torch.einsum("hd,bijhd->bhij", scheme.v, wr),
    }


# --- the relative shift ----------------------------------------------------------------------------


@settings(max_examples=30)
@given(lead=st.lists(st.integers(1, 3), min_size=0, max_size=2), q_len=st.integers(1, 9), k_len=st.integers(1, 9))
def test_relative_shift_picks_the_column_of_each_distance(lead, q_len, k_len):
    scores = _randn(*lead, q_len, q_len + k_len - 1, seed=q_len * 10 + k_len)
    shifted = relative_shift(scores, k_len)
    i = torch.arange(q_len)[:, None]
    j = torch.arange(k_len)[None, :]
    assert shifted.shape == (*lead, q_len, k_len)
    assert torch.equal(shifted, scores[..., i, q_len - 1 - i + j])
    assert shifted.untyped_storage().data_ptr() == scores.untyped_storage().data_ptr(), "a view, not a copy"


# --- the shift trick equals the direct formula -----------------------------------------------------


@settings(max_examples=40)
@given(
    batch=st.integers(1, 3),
    n_heads=st.integers(1, 3),
    half_head=st.integers(1, 4),
    q_len=st.integers(1, 8),
    extra_keys=st.integers(0, 6),
    q_offset=st.integers(0, 50),
    k_offset=st.integers(0, 50),
    seed=st.integers(0, 2**16),
)
def test_shift_trick_equals_direct_formula(batch, n_heads, half_head, q_len, extra_keys, q_offset, k_offset, seed):
    head_dim = 2 * half_head
    d_model = n_heads * head_dim
    k_len = q_len + extra_keys
    scheme = _scheme(d_model, n_heads, seed)
    q, k = _randn(batch, n_heads, q_len, head_dim, seed=seed), _randn(batch, n_heads, k_len, head_dim, seed=seed + 1)
    qp, kp = _rows(q_len, q_offset, batch), _rows(k_len, k_offset, batch)
    terms = direct_terms(scheme, q, k, qp, kp)
    expected = (terms["b"] + terms["c"] + terms["d"]) / math.sqrt(head_dim)
    with torch.no_grad():
        assert_close(scheme.qk_bias(q, k, qp, kp), expected)


@settings(max_examples=25)
@given(
    causal=st.booleans(),
    past=st.integers(0, 6),
    seq=st.integers(1, 7),
    n_heads=st.sampled_from([1, 2, 4]),
    seed=st.integers(0, 2**16),
)
def test_attention_layer_equals_the_paper_formula(causal, past, seq, n_heads, seed):
    """softmax(s (a + b + c + d) + mask) V, written out, equals the layer (with a KV cache of ``past`` tokens)."""
    d_model = 8 * n_heads
    scheme = _scheme(d_model, n_heads, seed)
    torch.manual_seed(seed)
    layer = MultiHeadAttention(d_model, n_heads, scheme).double().eval()
    x = _randn(2, past + seq, d_model, seed=seed)
    cache = KVCache()
    with torch.no_grad():
        if past:
            layer(x[:, :past], causal=causal, cache=cache)
        got = layer(x[:, past:], causal=causal, cache=cache)
        b, n = x.shape[:2]  # (batch, seq, d_model) -> (batch, heads, seq, head_dim), as the layer splits heads
        q, k, v = (t.view(b, n, n_heads, d_model // n_heads).transpose(1, 2) for t in layer.qkv(x).chunk(3, dim=-1))
        q = q[:, :, past:]
        terms = direct_terms(scheme, q, k, _rows(seq, past), _rows(past + seq))
        scores = sum(terms.values()) / math.sqrt(d_model // n_heads)
        if causal:
            allowed = torch.ones(seq, past + seq, dtype=torch.bool).tril(diagonal=past)
            scores = scores.masked_fill(~allowed, float("-inf"))
        expected = layer.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, seq, d_model))
    assert_close(got, expected)


# --- the paper's terms one by one --------------------------------------------------------------------


def _qk(n_heads=2, head_dim=4, q_len=5, k_len=7, seed=3):
    return _randn(2, n_heads, q_len, head_dim, seed=seed), _randn(2, n_heads, k_len, head_dim, seed=seed + 1)


@torch.no_grad()
def test_zero_projection_leaves_the_global_content_bias_u_dot_k():
    scheme = _scheme(8, 2)
    scheme.r_proj.weight.zero_()  # W_r = 0: terms (b) and (d) vanish
    q, k = _qk()
    bias = scheme.qk_bias(q, k, _rows(5, 2), _rows(7))
    expected = torch.einsum("hd,bhjd->bhj", scheme.u, k)[:, :, None, :] / 2.0  # s = 1/sqrt(4)
    assert_close(bias, expected.expand_as(bias))
    scheme.u.zero_()
    assert torch.equal(scheme.qk_bias(q, k, _rows(5, 2), _rows(7)), torch.zeros_like(bias))


@torch.no_grad()
def test_zero_u_and_v_leave_the_content_position_term():
    scheme = _scheme(8, 2)
    scheme.u.zero_()
    scheme.v.zero_()
    q, k = _qk()
    bias = scheme.qk_bias(q, k, _rows(5, 2), _rows(7))
    for i in range(5):
        for j in range(7):
            wr = scheme.r_proj(scheme.relative_encoding(torch.tensor(i + 2 - j))).view(2, 4)  # W_r r_{i-j}, per head
            assert_close(bias[:, :, i, j], (q[:, :, i] * wr).sum(-1) / 2.0)
    assert not torch.equal(bias, torch.zeros_like(bias))


@torch.no_grad()
def test_zero_query_and_u_leave_the_global_position_bias_a_function_of_i_minus_j():
    scheme = _scheme(8, 2)
    scheme.u.zero_()
    q, k = _qk()
    bias = scheme.qk_bias(torch.zeros_like(q), k, _rows(5), _rows(7))
    for i in range(5):
        for j in range(7):
            wr = scheme.r_proj(scheme.relative_encoding(torch.tensor(i - j))).view(2, 4)
            assert_close(bias[:, :, i, j], (scheme.v * wr).sum(-1).expand(2, 2) / 2.0)
    assert torch.equal(bias[..., 1:, 1:], bias[..., :-1, :-1])  # constant along diagonals: depends on i - j only


@torch.no_grad()
def test_r_is_transformer_xl_sinusoid_sin_then_cos():
    scheme = TransformerXLRelative(6, 1, base=100.0)
    t = torch.tensor([-3, 0, 5])
    w = 100.0 ** (-torch.arange(0, 6, 2, dtype=torch.float64) / 6)
    expected = torch.cat([torch.sin(t[:, None] * w), torch.cos(t[:, None] * w)], dim=-1).float()
    assert_close(scheme.relative_encoding(t), expected)


# --- translation invariance ---------------------------------------------------------------------------


@settings(max_examples=20)
@given(shift=st.integers(1, 10_000), seed=st.integers(0, 2**16))
def test_shifting_every_position_changes_nothing(shift, seed):
    scheme = _scheme(8, 2, seed)
    q, k = _qk(seed=seed)
    with torch.no_grad():
        base = scheme.qk_bias(q, k, _rows(5, 2), _rows(7))
        moved = scheme.qk_bias(q, k, _rows(5, 2 + shift), _rows(7, shift))
        assert torch.equal(moved, base)  # only distances enter, and they are the same integers
        assert not torch.equal(scheme.qk_bias(q, k, _rows(5, 3), _rows(7)), base)  # a relative move does change it


@torch.no_grad()
def test_tiny_transformer_runs_past_the_trained_length_and_is_shift_invariant():
    torch.manual_seed(0)
    model = TinyTransformer(11, 3, d_model=16, n_heads=2, scheme=build_scheme("transformer-xl", 16, 2)).eval()
    tokens = torch.randint(0, 11, (2, 40))
    assert torch.equal(model(tokens), model(tokens, positions=_rows(40, 5000, 2)))
    causal = TinyTransformer(11, 11, d_model=16, n_heads=2, scheme=build_scheme("transformer-xl", 16, 2),
                             causal=True, pool="none").eval()
    full, cached = last_token_logits_two_ways(causal, tokens)
    assert_close(cached, full, rtol=1e-5, atol=1e-5)


# --- cost --------------------------------------------------------------------------------------------


def test_shift_trick_never_builds_a_pairwise_position_tensor():
    """The direct formula needs (q_len, k_len, d_model) floats for W_r r_{i-j}; the shift trick, none."""
    from torch.profiler import ProfilerActivity, profile

    n_heads, seq, d_model = 4, 256, 64
    torch.manual_seed(0)
    layer = MultiHeadAttention(d_model, n_heads, TransformerXLRelative(d_model, n_heads)).eval()
    x = torch.randn(1, seq, d_model)
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        layer(x, causal=True)
    largest = max(e.cpu_memory_usage for e in prof.events())
    pairwise = seq * seq * d_model * 4
    assert largest <= n_heads * seq * (2 * seq - 1) * 4, f"largest allocation {largest} B"
    assert largest < pairwise / 4, f"largest allocation {largest} B; the gathered W_r r_(i-j) is {pairwise} B"


# --- conformance with Hugging Face XLNet (Transformer-XL's relative attention) ------------------------


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("mlen", [0, 4], ids=["no_memory", "memory"])
def test_matches_xlnet_relative_attention(causal, mlen):
    from transformers import XLNetConfig
    from transformers.models.xlnet.modeling_xlnet import XLNetModel

    config = XLNetConfig(vocab_size=10, d_model=32, n_layer=1, n_head=4, d_inner=64, attn_type="bi",
                         bi_data=False, clamp_len=-1, dropout=0.0)
    torch.manual_seed(0)
    xlnet = XLNetModel(config).eval()
    ref = xlnet.layer[0].rel_attn
    ref.layer_norm = torch.nn.Identity()  # post_attention then returns h + o(attention)
    with torch.no_grad():
        for p in (ref.q, ref.k, ref.v, ref.o, ref.r, ref.r_w_bias, ref.r_r_bias):
            p.normal_(0.0, 0.3)
    ours = MultiHeadAttention(32, 4, TransformerXLRelative(32, 4), bias=False).eval()
    flat = lambda w: w.reshape(32, 32)  # (d_model, heads, head_dim) -> (d_model, heads * head_dim)
    with torch.no_grad():
        ours.qkv.weight.copy_(torch.cat([flat(ref.q).T, flat(ref.k).T, flat(ref.v).T]))
        ours.out.weight.copy_(flat(ref.o))
        ours.scheme.r_proj.weight.copy_(flat(ref.r).T)
        ours.scheme.u.copy_(ref.r_w_bias)  # XLNet's r_w_bias is u (content), r_r_bias is v (position)
        ours.scheme.v.copy_(ref.r_r_bias)

    qlen, batch = 9, 2
    klen = mlen + qlen
    h = torch.randn(qlen, batch, 32, generator=torch.Generator().manual_seed(1))  # XLNet is sequence-first
    mems = torch.randn(mlen, batch, 32, generator=torch.Generator().manual_seed(2)) if mlen else None
    mask = None
    if causal:  # 1 = may not attend, (q_len, k_len, batch|1, heads|1)
        mask = (torch.arange(klen)[None, :] > torch.arange(qlen)[:, None] + mlen).float()[:, :, None, None]
    with torch.no_grad():
        r = xlnet.relative_positional_encoding(qlen, klen, bsz=batch)  # distances klen .. -qlen+1
        expected = ref(h, None, mask, None, r, None, mems=mems)[0] - h
        cache = KVCache()
        if mlen:
            ours(mems.transpose(0, 1), cache=cache)
        got = ours(h.transpose(0, 1), causal=causal, cache=cache).transpose(0, 1)
    err = (got - expected).abs().max().item()
    print(f"[conformance] Transformer-XL vs XLNetRelativeAttention causal={causal} mlen={mlen}: max abs err {err:.3g}")
    assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_gradients_reach_q_k_u_v_and_w_r():
    scheme = _scheme(4, 2)
    q, k = _qk(head_dim=2, q_len=3, k_len=4)
    q.requires_grad_(True)
    k.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda q, k: scheme.qk_bias(q, k, _rows(3, 1), _rows(4)), (q, k))
    scheme.qk_bias(q, k, _rows(3, 1), _rows(4)).square().sum().backward()
    for p in (scheme.u, scheme.v, scheme.r_proj.weight):
        assert p.grad is not None and p.grad.abs().sum() > 0
