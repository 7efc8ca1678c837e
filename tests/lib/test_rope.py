"""posenc_lib.rotary.rope: the RoPE properties, the rotation against the textbook formulas, gradients, precision, errors."""

from __future__ import annotations

import copy
import io
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rope_reference import complex_formula, rotate_half_formula
from torch.utils._python_dispatch import TorchDispatchMode

from posenc_lib.attention import MultiHeadAttention
from posenc_lib.rotary import scaling as rope_scaling
from posenc_lib.rotary.mrope import MRoPE
from posenc_lib.frequencies import inverse_frequencies
from posenc_lib.models import LayerSpec, TinyTransformer, last_token_logits_two_ways
from posenc_lib.rotary.rope import (
    LAYOUTS,
    RotaryPE,
    apply_rope,
    apply_rope_qk,
    convert_qk_weight,
    rope_cos_sin,
    rope_inv_freq,
    rope_layout_permutation,
)

HYPOTHESIS = settings(max_examples=30, deadline=None)
U_BF16, U_FP16 = 2.0**-8, 2.0**-11  # unit roundoff (half an ulp at 1)

shapes = st.tuples(
    st.integers(1, 3),  # batch
    st.integers(1, 4),  # heads
    st.integers(1, 19),  # seq
    st.sampled_from([2, 4, 8, 14, 32]),  # head_dim
)


def random_case(shape, seed, rotary_halves=None, batched_table=True, max_position=5000):
    """x (batch, heads, seq, head_dim), positions (batch, seq), inv_freq (c,), float32."""
    gen = torch.Generator().manual_seed(seed)
    batch, _, seq, head_dim = shape
    c = head_dim // 2 if rotary_halves is None else rotary_halves
    x = torch.randn(shape, generator=gen)
    positions = torch.randint(0, max_position, (batch if batched_table else 1, seq), generator=gen)
    return x, positions, rope_inv_freq(2 * c)


def exact_tables(positions, inv_freq):
    """float64 cos/sin of float64 angles (positions * float32 frequencies): the 'exact' reference tables."""
    angles = positions.double().unsqueeze(-1) * inv_freq.double()
    return angles.cos(), angles.sin()


def pair_norm(x, c, layout):
    """For every element of x, the length of the pair it belongs to (|x| for pass-through dims)."""
    x = x.double()
    if layout == "half":
        first, second = x[..., :c], x[..., c : 2 * c]
        norm = torch.cat([first.hypot(second)] * 2, dim=-1)
    else:
        norm = x[..., 0 : 2 * c : 2].hypot(x[..., 1 : 2 * c : 2]).repeat_interleave(2, dim=-1)
    return torch.cat((norm, x[..., 2 * c :].abs()), dim=-1)


def reference(x, positions, inv_freq, layout, cos=None, sin=None):
    """The readable formula of each layout: rotate_half (half) or complex numbers (interleaved)."""
    if layout == "half":
        if cos is None:
            cos, sin = rope_cos_sin(positions, inv_freq, dtype=x.dtype)
        return rotate_half_formula(x, cos, sin)
    return complex_formula(x, positions, inv_freq)


# ----------------------------------------------------------------------------- properties


@HYPOTHESIS
@given(m=st.integers(0, 3000), n=st.integers(0, 3000), shift=st.integers(-500, 3000), head_dim=st.sampled_from([2, 8, 32]),
       layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16))
def test_score_depends_only_on_relative_position(m, n, shift, head_dim, layout, seed):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, 1, 1, head_dim, generator=gen, dtype=torch.float64)
    inv_freq = rope_inv_freq(head_dim)

    def score(pos_q, pos_k):
        rq = apply_rope(q, *exact_tables(torch.tensor([[pos_q]]), inv_freq), layout)
        rk = apply_rope(k, *exact_tables(torch.tensor([[pos_k]]), inv_freq), layout)
        return (rq * rk).sum().item()

    assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-9)


@HYPOTHESIS
@given(shape=shapes, layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16))
def test_rotation_preserves_every_pair_norm(shape, layout, seed):
    x, positions, inv_freq = random_case(shape, seed)
    y = apply_rope(x.double(), *exact_tables(positions, inv_freq), layout)
    c = inv_freq.numel()
    torch.testing.assert_close(pair_norm(y, c, layout), pair_norm(x, c, layout), atol=1e-12, rtol=1e-12)


@HYPOTHESIS
@given(shape=shapes, seed=st.integers(0, 2**16), partial=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_complex_path_equals_real_path(shape, seed, partial, dtype):
    c = max(1, shape[-1] // 4) if partial else None
    x, positions, inv_freq = random_case(shape, seed, c)
    x = x.to(dtype)
    expected = complex_formula(x, positions, inv_freq)
    cos, sin = rope_cos_sin(positions, inv_freq, dtype=dtype)
    # contiguous x takes the complex-multiply fast path; an odd-strided view forces the real-pairs blocks
    odd_strided = torch.zeros(*x.shape[:-1], x.shape[-1] + 1, dtype=dtype)[..., :-1].copy_(x)
    for candidate in (x, odd_strided):
        torch.testing.assert_close(apply_rope(candidate, cos, sin, "interleaved", rotary_dim=2 * cos.shape[-1]), expected, atol=1e-6, rtol=0)


@HYPOTHESIS
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_layout_permutation_identity(shape, seed):
    x, positions, inv_freq = random_case(shape, seed)
    perm = rope_layout_permutation(shape[-1])
    cos, sin = rope_cos_sin(positions, inv_freq)
    torch.testing.assert_close(
        apply_rope(x[..., perm], cos, sin, "half"), apply_rope(x, cos, sin, "interleaved")[..., perm], atol=1e-6, rtol=0
    )


def test_layout_permutation_values():
    assert rope_layout_permutation(8).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]


def test_layouts_differ_without_conversion():
    """The silent bug: the same tensor rotated in the two layouts gives different scores."""
    x, positions, inv_freq = random_case((1, 2, 16, 32), seed=0)
    cos, sin = rope_cos_sin(positions, inv_freq)
    assert (apply_rope(x, cos, sin, "half") - apply_rope(x, cos, sin, "interleaved")).abs().max() > 0.5


@pytest.mark.parametrize("to", LAYOUTS)
@pytest.mark.parametrize("rotary_fraction", [1.0, 0.5])
def test_convert_qk_weight_makes_two_attention_layers_agree(to, rotary_fraction):
    torch.manual_seed(0)
    d_model, n_heads = 32, 4
    head_dim = d_model // n_heads
    source = "half" if to == "interleaved" else "interleaved"
    original = MultiHeadAttention(d_model, n_heads, RotaryPE(head_dim, layout=source, rotary_fraction=rotary_fraction))
    converted = MultiHeadAttention(d_model, n_heads, RotaryPE(head_dim, layout=to, rotary_fraction=rotary_fraction))
    rotary_dim = int(head_dim * rotary_fraction)
    state = original.state_dict()
    w_q, w_k, w_v = state["qkv.weight"].chunk(3)
    b_q, b_k, b_v = state["qkv.bias"].chunk(3)
    state["qkv.weight"] = torch.cat([convert_qk_weight(w, n_heads, to, rotary_dim) for w in (w_q, w_k)] + [w_v])
    state["qkv.bias"] = torch.cat([convert_qk_weight(b, n_heads, to, rotary_dim) for b in (b_q, b_k)] + [b_v])
    converted.load_state_dict(state)
    x = torch.randn(2, 11, d_model)
    positions = torch.randint(0, 1000, (2, 11))
    y0, w0 = original(x, positions, return_weights=True)
    y1, w1 = converted(x, positions, return_weights=True)
    torch.testing.assert_close(w1, w0, atol=1e-6, rtol=1e-5)  # identical attention scores
    torch.testing.assert_close(y1, y0, atol=1e-6, rtol=1e-5)
    # without the conversion the scores differ
    converted.load_state_dict(original.state_dict())
    assert (converted(x, positions, return_weights=True)[1] - w0).abs().max() > 1e-2


def test_convert_qk_weight_round_trip_and_rows():
    w = torch.arange(2 * 8 * 3, dtype=torch.float32).reshape(16, 3)
    half = convert_qk_weight(w, n_heads=2, to="half")
    assert half[:8, 0].tolist() == [w[i, 0].item() for i in (0, 2, 4, 6, 1, 3, 5, 7)]
    torch.testing.assert_close(convert_qk_weight(half, 2, to="interleaved"), w, atol=0, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("scaling", [None, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}])
def test_kv_cache_offsets_match_full_positions(layout, scaling):
    torch.manual_seed(0)
    model = TinyTransformer(40, 40, d_model=32, n_heads=4, n_layers=2, causal=True, pool="none",
                            scheme=RotaryPE(8, layout=layout, scaling=scaling))
    tokens = torch.randint(0, 40, (3, 14))
    full, cached = last_token_logits_two_ways(model, tokens)
    torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_left_padding_with_cumsum_positions(layout):
    """Positions cumsum(mask) - 1 (pads get -1): a left-padded row gives the same outputs as the unpadded one."""
    torch.manual_seed(0)
    model = TinyTransformer(40, 40, d_model=32, n_heads=4, n_layers=2, causal=True, pool="none",
                            scheme=RotaryPE(8, layout=layout)).eval()
    tokens = torch.randint(1, 40, (1, 6))
    padded = torch.cat((torch.zeros(1, 3, dtype=torch.long), tokens), dim=1)
    mask = padded != 0
    positions = mask.long().cumsum(-1) - 1
    allowed = mask[:, None, None, :] & torch.ones(9, 9, dtype=torch.bool).tril()  # causal and no pads
    allowed = allowed | torch.eye(9, dtype=torch.bool)  # pad queries see themselves (no all -inf row)
    with torch.no_grad():
        expected = model(tokens)
        got = model(padded, positions=positions, attn_mask=allowed)[:, 3:]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- the rotation == the formulas


@HYPOTHESIS
@given(shape=shapes, layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16), partial=st.booleans(),
       batched_table=st.booleans(), strided=st.booleans())
def test_rotation_equals_the_formula_fp32(shape, layout, seed, partial, batched_table, strided):
    """rotate_half (half layout) or complex numbers (interleaved), any table batch, partial rotary, any strides;
    x itself is left as it was."""
    c = max(1, shape[-1] // 4) if partial else None
    x, positions, inv_freq = random_case(shape, seed, c, batched_table)
    cos, sin = rope_cos_sin(positions, inv_freq)
    expected = reference(x, positions, inv_freq, layout)
    if strided:  # (batch, seq, heads, head_dim) memory seen as (batch, heads, seq, head_dim), as after a head split
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
    before = x.clone()
    got = apply_rope(x, cos, sin, layout, rotary_dim=2 * cos.shape[-1])
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    assert torch.equal(x, before) and got.shape == x.shape and got.dtype == x.dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_odd_strides_and_offsets(dtype):
    """A head_dim slice of a wider buffer (odd row strides, so no complex view of its memory) and a slice at an
    odd offset rotate like a contiguous x, with a table per row or one shared by the batch."""
    x, positions, inv_freq = random_case((3, 2, 37, 16), seed=5, rotary_halves=6)
    x = x.to(dtype)
    odd_strided = torch.zeros(3, 2, 37, 17, dtype=dtype)[..., :16].copy_(x)
    odd_offset = torch.zeros(3, 2, 37, 17, dtype=dtype)[..., 1:].copy_(x)
    tol = {"atol": 1e-6, "rtol": 0} if dtype == torch.float32 else {"atol": 0.05, "rtol": 0}
    for table in (slice(None), slice(0, 1)):  # a table per row, or one shared by the batch
        cos, sin = rope_cos_sin(positions[table], inv_freq, dtype=dtype)
        for layout in LAYOUTS:
            expected = reference(x, positions[table], inv_freq, layout, cos, sin)
            for candidate in (x, odd_strided, odd_offset):
                torch.testing.assert_close(apply_rope(candidate, cos, sin, layout, rotary_dim=2 * cos.shape[-1]), expected, **tol)


@pytest.mark.parametrize("dtype, u", [(torch.bfloat16, U_BF16), (torch.float16, U_FP16)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_low_precision_is_rotated_in_float32_and_cast_back(dtype, u, layout):
    """Documented in apply_rope: ours (float32, rounded once) and the textbook formula differ by at most 6u |pair|."""
    x, positions, inv_freq = random_case((2, 3, 64, 32), seed=7, max_position=32768)
    x = x.to(dtype)
    cos, sin = rope_cos_sin(positions, inv_freq, dtype=dtype)
    got = apply_rope(x, cos, sin, layout)
    assert got.dtype == dtype
    expected = reference(x, positions, inv_freq, layout, cos, sin)
    norm = pair_norm(x, 16, layout)
    assert ((got.double() - expected.double()).abs() - 6 * u * norm).max() <= 0
    # rotated in float32 and rounded once: within 1.5u |pair| of the exact rotation of the same x and tables
    exact = apply_rope(x.double(), cos.double(), sin.double(), layout)
    assert ((got.double() - exact).abs() - 1.5 * u * norm).max() <= 0
    if layout == "half":  # the textbook formula rounds every op: within 3u |pair|
        assert ((expected.double() - exact).abs() - 3 * u * norm).max() <= 0


def test_float32_tables_with_low_precision_x():
    """cos/sin may stay float32 for bf16 x: output is bf16, and at least as close to the exact rotation."""
    x, positions, inv_freq = random_case((2, 2, 32, 16), seed=8, max_position=32768)
    x = x.bfloat16()
    exact = apply_rope(x.double(), *exact_tables(positions, inv_freq))
    err = {}
    for table_dtype in (torch.float32, torch.bfloat16):
        got = apply_rope(x, *rope_cos_sin(positions, inv_freq, dtype=table_dtype))
        assert got.dtype == torch.bfloat16
        err[table_dtype] = ((got.double() - exact).abs() / pair_norm(x, 8, "half")).max().item()
    assert err[torch.float32] <= err[torch.bfloat16]


# ----------------------------------------------------------------------------- precision at long positions


def naive_low_precision_rope(x, positions, inv_freq):
    """The pitfall: positions and frequencies cast to x's dtype before the product (angles in bf16/fp16)."""
    angles = positions.to(x.dtype).unsqueeze(-1) * inv_freq.to(x.dtype)
    return apply_rope(x, angles.cos(), angles.sin())


@pytest.mark.parametrize("dtype, u", [(torch.bfloat16, U_BF16), (torch.float16, U_FP16)])
def test_long_positions_low_precision_bound(dtype, u):
    """Positions up to 32768: error <= (2**-23 * max angle + 4u) |pair| against float64; bf16 angles are far worse.

    float32 angles m * theta carry a rounding error of 2**-24 |m theta| (2e-3 rad at m = 32768),
    float32 -> dtype rounds cos, sin (u each) and the rotation adds about 3u: see rope_cos_sin.
    """
    x, _, inv_freq = random_case((1, 4, 256, 64), seed=9)
    positions = torch.linspace(0, 32767, 256).long().unsqueeze(0)
    x = x.to(dtype)
    exact = apply_rope(x.double(), *exact_tables(positions, inv_freq))
    norm = pair_norm(x, 32, "half")
    ours = apply_rope(x, *rope_cos_sin(positions, inv_freq, dtype=dtype))
    relative = ((ours.double() - exact).abs() / norm).max().item()
    bound = 2**-23 * 32767 * inv_freq.max().item() + 4 * u
    assert relative <= bound, (relative, bound)
    naive = ((naive_low_precision_rope(x, positions, inv_freq).double() - exact).abs() / norm).max().item()
    assert naive > 0.5 > 20 * bound  # angles off by radians: the rotation is meaningless
    # and at a short position the naive version is fine: the harm grows with position
    assert ((naive_low_precision_rope(x[:, :, :2], positions[:, :2] * 0 + 3, inv_freq).double()
             - apply_rope(x[:, :, :2].double(), *exact_tables(positions[:, :2] * 0 + 3, inv_freq))).abs()
            / norm[:, :, :2]).max() < 8 * u


# ----------------------------------------------------------------------------- autograd


@pytest.mark.parametrize("layout", LAYOUTS)
def test_backward_is_inverse_rotation(layout):
    x, positions, inv_freq = random_case((2, 3, 9, 8), seed=10, rotary_halves=3)
    x = x.double().requires_grad_()
    cos, sin = exact_tables(positions, inv_freq)
    assert torch.autograd.gradcheck(lambda t: apply_rope(t, cos, sin, layout, rotary_dim=2 * cos.shape[-1]), (x,))
    grad = torch.randn_like(x)
    (g_fast,) = torch.autograd.grad(apply_rope(x, cos, sin, layout, rotary_dim=2 * cos.shape[-1]), x, grad)
    if layout == "half":
        expected = rotate_half_formula(x, cos, sin)
    else:  # the layout identity: interleaved(x) = half(x[perm])[inverse perm], perm on the rotated 6 dims
        perm = torch.cat((rope_layout_permutation(6), torch.tensor([6, 7])))
        expected = rotate_half_formula(x[..., perm], cos, sin)[..., torch.argsort(perm)]
    (g_ref,) = torch.autograd.grad(expected, x, grad)
    torch.testing.assert_close(g_fast, g_ref, atol=1e-6, rtol=0)


def test_learnable_tables_get_gradients():
    """cos/sin that require grad (learned frequencies) use the differentiable formula."""
    x, positions, _ = random_case((1, 2, 5, 8), seed=11, max_position=50)
    freq = torch.tensor([1.0, 0.1, 0.01, 0.001], requires_grad=True)

    def rotated():
        angles = positions.float().unsqueeze(-1) * freq
        return apply_rope(x, angles.cos(), angles.sin())

    (grad,) = torch.autograd.grad(rotated().square().sum(), freq)
    assert grad.abs().max() < 1e-4  # the rotation keeps norms: this loss does not depend on freq
    (grad,) = torch.autograd.grad((rotated() * x).sum(), freq)
    assert grad.abs().max() > 1e-2  # <R x, x> = sum |pair|^2 cos(angle) does
    angles = positions.float().unsqueeze(-1) * freq
    torch.testing.assert_close(rotated(), rotate_half_formula(x, angles.cos(), angles.sin()), atol=1e-6, rtol=0)


# ----------------------------------------------------------------------------- bad input


def cos_sin_for(x):
    return rope_cos_sin(torch.arange(x.shape[2]), rope_inv_freq(x.shape[-1]))


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: rope_inv_freq(7), ValueError, ["head_dim", "7", "even"]),
        (lambda: rope_inv_freq(8, base=1.0), ValueError, ["base", "> 1"]),
        (lambda: RotaryPE(9), ValueError, ["head_dim", "9", "even"]),
        (lambda: RotaryPE(8, rotary_fraction=0.1), ValueError, ["partial_rotary_factor", "int(8 * 0.1) = 0", "even"]),
        (lambda: RotaryPE(12, rotary_fraction=0.25), ValueError, ["partial_rotary_factor", "= 3", "even"]),
        (lambda: RotaryPE(8, layout="meta"), ValueError, ["layout", "'meta'", "half", "interleaved"]),
        (lambda: RotaryPE(8, scaling={"rope_type": "su"}), ValueError, ["rope_type", "'su'", "yarn"]),
        (lambda: RotaryPE(8, scaling={"rope_type": "yarn", "factor": 2.0}), ValueError,
         ["original_max_position_embeddings", "yarn"]),
        (lambda: RotaryPE(8, base=500.0, scaling={"rope_theta": 10000.0}), ValueError, ["rope_theta", "contradicts"]),
        (lambda: RotaryPE(8, scaling="yarn"), TypeError, ["scaling", "dict", "str"]),
        (lambda: rope_cos_sin(torch.arange(4.0), rope_inv_freq(8)), TypeError, ["positions", "integer", "float32"]),
        (lambda: rope_cos_sin(torch.arange(4), rope_inv_freq(8), dtype=torch.int32), TypeError, ["dtype", "int32"]),
        (lambda: apply_rope(torch.ones(1, 1, 4, 8, dtype=torch.int64), *cos_sin_for(torch.ones(1, 1, 4, 8))),
         TypeError, ["x", "floating-point", "int64"]),
        (lambda: apply_rope(torch.ones(1, 4, 8), *cos_sin_for(torch.ones(1, 1, 4, 8))), ValueError,
         ["x", "(batch, heads, seq, head_dim)", "(1, 4, 8)"]),
        (lambda: apply_rope(torch.ones(1, 1, 4, 7), *cos_sin_for(torch.ones(1, 1, 4, 8))), ValueError, ["head_dim", "even", "7"]),
        (lambda: apply_rope(torch.ones(1, 1, 5, 8), *cos_sin_for(torch.ones(1, 1, 4, 8))), ValueError,
         ["cos and sin", "(1|1, 5, 4)", "got (1, 4, 4)"]),
        (lambda: apply_rope(torch.ones(1, 1, 4, 16), *cos_sin_for(torch.ones(1, 1, 4, 8))), ValueError,
         ["8 columns", "got 4", "rotary_dim=8", "partial", "cos[..., :2]"]),
        (lambda: apply_rope(torch.ones(1, 1, 4, 8), *(torch.cat([t, t], -1) for t in cos_sin_for(torch.ones(1, 1, 4, 8)))),
         ValueError, ["4 columns", "got 8", "full-width", "cos[..., :4]"]),
        (lambda: apply_rope(torch.ones(1, 1, 4, 8), *cos_sin_for(torch.ones(1, 1, 4, 8)), rotary_dim=16), ValueError,
         ["rotary_dim", "head_dim=8", "16"]),
        (lambda: apply_rope(torch.ones(1, 4, 1, 8), *cos_sin_for(torch.ones(1, 1, 4, 8))), ValueError,
         ["cos and sin", "x.transpose(1, 2)"]),
        (lambda: apply_rope(torch.ones(1, 1, 4, 8), *cos_sin_for(torch.ones(1, 1, 4, 8)), layout="llama"), ValueError,
         ["layout", "'llama'", "half", "interleaved"]),
        (lambda: apply_rope_qk(torch.ones(1, 2, 4, 8), torch.ones(1, 2, 5, 8), *cos_sin_for(torch.ones(1, 1, 4, 8))),
         ValueError, ["q and k", "(1, 2, 4, 8)", "(1, 2, 5, 8)"]),
        (lambda: RotaryPE(8).rotate_qk(torch.ones(1, 1, 3, 16), torch.ones(1, 1, 3, 16), torch.arange(3)[None]),
         ValueError, ["head_dim=8", "(1, 1, 3, 16)"]),
        (lambda: convert_qk_weight(torch.ones(10, 4), n_heads=3), ValueError, ["n_heads", "10", "3"]),
        (lambda: convert_qk_weight(torch.ones(8, 4), n_heads=1, to="rotate_half"), ValueError, ["to", "half"]),
    ],
)
def test_bad_input_names_parameter_and_allowed_values(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


# ----------------------------------------------------------------------------- the scheme: tables, state, dtypes


def test_scheme_tables_at_any_position_and_dtype():
    """cos_sin equals rope_cos_sin at every position (before and after a far one), float16/bfloat16 tables are the
    float32 ones cast, float64 tables come from float64 frequencies, negative positions are computed too."""
    scheme = RotaryPE(16)
    inv_freq64 = inverse_frequencies(16, 10000.0, dtype=torch.float64)
    for positions in (torch.tensor([[0, 1, 2]]), torch.tensor([[5000, 5001, 9000]]), torch.tensor([[9000, 3, -7]]),
                      torch.tensor([[0, 1, 2]])):
        direct = rope_cos_sin(positions, rope_inv_freq(16))
        torch.testing.assert_close(scheme.cos_sin(positions), direct, atol=0, rtol=0)
        for dtype in (torch.float16, torch.bfloat16):
            torch.testing.assert_close(scheme.cos_sin(positions, dtype), tuple(t.to(dtype) for t in direct), atol=0, rtol=0)
        torch.testing.assert_close(scheme.cos_sin(positions, torch.float64),
                                   rope_cos_sin(positions, inv_freq64, dtype=torch.float64), atol=0, rtol=0)
    assert len(scheme.state_dict()) == 0  # tables are not model state


# ----------------------------------------------------------------------------- the frequencies as a buffer, as Hugging Face and torchtune keep them


def _llama_rotary(head_dim=16, **rope):
    import transformers
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0, **rope})
    return LlamaRotaryEmbedding(config)


def test_to_moves_inv_freq_and_a_16_bit_cast_keeps_it_float32():
    """inv_freq is a buffer: .to(device) moves it, as Hugging Face's LlamaRotaryEmbedding's inv_freq (a buffer too).
    A cast to bfloat16/float16 leaves it float32 (Hugging Face's .to(bfloat16) rounds its own, and its angles use the
    rounded values); .double() widens it, as Hugging Face's. The angles are then those of the float32 model, cast."""
    ours, theirs = RotaryPE(16), _llama_rotary(16)
    assert dict(ours.named_buffers()).keys() == {"inv_freq"} and "inv_freq" in dict(theirs.named_buffers())
    assert torch.equal(ours.inv_freq, theirs.inv_freq) and ours.inv_freq.dtype == torch.float32
    positions = torch.tensor([[0, 7, 3000, 32767]])
    float32 = ours.cos_sin(positions)
    for target in (torch.float64, torch.bfloat16, torch.float16, "meta", ("meta", torch.bfloat16)):
        args = target if isinstance(target, tuple) else (target,)
        moved, moved_theirs = copy.deepcopy(ours).to(*args), copy.deepcopy(theirs).to(*args)
        assert moved.inv_freq.device == moved_theirs.inv_freq.device
        if moved_theirs.inv_freq.dtype in (torch.bfloat16, torch.float16):  # theirs lost bits; ours did not
            assert moved.inv_freq.dtype == torch.float32
            if moved.inv_freq.device.type == "cpu":
                assert torch.equal(moved.inv_freq, ours.inv_freq)
                assert not torch.equal(moved_theirs.inv_freq.float(), ours.inv_freq)
                torch.testing.assert_close(moved.cos_sin(positions, target), tuple(t.to(target) for t in float32),
                                           atol=0, rtol=0)
        else:
            assert moved.inv_freq.dtype == moved_theirs.inv_freq.dtype
    for cast in (torch.nn.Module.half, torch.nn.Module.bfloat16):
        assert cast(copy.deepcopy(ours)).inv_freq.dtype == torch.float32
    longrope = RotaryPE(8, scaling={"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
                                    "original_max_position_embeddings": 8, "factor": 4.0})
    assert {buffer.dtype for buffer in longrope.bfloat16().buffers()} == {torch.float32}
    mrope = MRoPE(8, torch.zeros(4, 3, dtype=torch.long)).half()
    assert mrope.inv_freq.dtype == torch.float32 and mrope.coordinates.dtype == torch.int64
    on_meta = copy.deepcopy(ours).to("meta").cos_sin(positions.to("meta"))  # computed where the buffer is
    assert on_meta[0].device.type == "meta" and on_meta[0].shape == (1, 4, 8)
    exact = positions.double()[..., None] * inverse_frequencies(16, 10000.0, dtype=torch.float64)
    torch.testing.assert_close(copy.deepcopy(ours).double().cos_sin(positions, torch.float64)[1], exact.sin(), atol=0, rtol=0)


class _Devices(TorchDispatchMode):
    """Records the device of every tensor an aten op returns (creation, copies and arithmetic alike)."""

    def __init__(self):
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.seen.append((str(func), t.device.type))
        return out


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("name", ["rope", "longrope"])
def test_a_16_bit_forward_computes_nothing_on_the_host(dtype, name, monkeypatch):
    """A bf16/fp16 model computes no tensor on another device than its own (0.3 recomputed the float32 frequencies
    on the CPU and copied them to the device in every forward pass: on a GPU, a blocking copy, a host sync). The model
    runs on the meta device; every tensor any aten op returns during the forward pass is recorded, and none may be
    on the CPU. The frequencies are not recomputed either."""
    scaling = {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
               "original_max_position_embeddings": 8, "factor": 2.0} if name == "longrope" else None
    scheme = RotaryPE(8, scaling=scaling)
    model = TinyTransformer(30, 30, d_model=32, n_heads=4, n_layers=2, causal=True, pool="none", scheme=scheme)
    model = model.to(device="meta", dtype=dtype)
    monkeypatch.setattr(rope_scaling, "rope_frequencies", lambda *args, **kw: pytest.fail("frequencies recomputed"))
    tokens = torch.zeros(2, 10, dtype=torch.long, device="meta")
    layer = MultiHeadAttention(32, 4, scheme).to(device="meta", dtype=dtype)  # a layer alone computes its own tables
    x = torch.zeros(2, 10, 32, device="meta", dtype=dtype)
    with torch.no_grad(), _Devices() as devices:
        out = model(tokens)
        layer(x)
    assert out.shape == (2, 10, 30) and out.dtype == dtype
    assert devices.seen and {device for _, device in devices.seen} == {"meta"}, [s for s in devices.seen if s[1] != "meta"]


def test_state_dict_holds_no_frequencies_as_hugging_face_and_torchtune():
    """inv_freq is non-persistent (persistent=False in Hugging Face and torchtune too): never in a state_dict, so a
    model saved with 0.2 (frequencies a plain attribute) or with another base loads strictly, and the loaded model
    keeps the base it was built with (LongRoPE's two sets too)."""
    theirs = _llama_rotary(16)
    longrope = {"rope_type": "longrope", "short_factor": [1.0, 1.1, 1.2, 1.3], "long_factor": [1.0, 2.0, 3.0, 4.0],
                "original_max_position_embeddings": 8, "factor": 4.0}
    for ours in (RotaryPE(16), RotaryPE(8, scaling=longrope)):
        assert ours.state_dict() == {} and theirs.state_dict() == {}
    torch.manual_seed(0)
    model = TinyTransformer(30, 30, d_model=32, n_heads=4, causal=True, pool="none", scheme=RotaryPE(8, base=500.0))
    state = model.state_dict()
    assert not any("inv_freq" in key for key in state)
    other_base = TinyTransformer(30, 30, d_model=32, n_heads=4, causal=True, pool="none", scheme=RotaryPE(8))
    assert other_base.load_state_dict(state, strict=True).missing_keys == []
    assert torch.equal(other_base.scheme.inv_freq, rope_inv_freq(8))  # its own frequencies: they are not state


def test_cos_sin_once_per_forward_pass_for_every_layer(monkeypatch):
    """A model computes its schemes' cos and sin once per forward pass (per scheme object), not once per layer, and
    hands them to every layer; a layer alone computes its own."""
    calls = []
    real = RotaryPE.cos_sin
    monkeypatch.setattr(RotaryPE, "cos_sin", lambda self, *args: calls.append(self) or real(self, *args))
    shared = RotaryPE(8)
    model = TinyTransformer(30, 30, d_model=32, n_heads=4, n_layers=3, causal=True, pool="none", scheme=shared)
    tokens = torch.randint(0, 30, (2, 10))
    with torch.no_grad():
        model(tokens)
        assert calls == [shared]
        cache = model.new_cache()
        model(tokens[:, :6], cache=cache)
        model(tokens[:, 6:7], cache=cache)
        assert len(calls) == 3  # one per forward pass, with a cache too
        two = [LayerSpec(RotaryPE(8)), LayerSpec(RotaryPE(8, base=500.0))]
        mixed = TinyTransformer(30, 30, d_model=32, n_heads=4, n_layers=4, causal=True, pool="none",
                                layer_specs=[two[0], two[1], two[0], two[1]])
        calls.clear()
        mixed(tokens)
        assert calls == [two[0].scheme, two[1].scheme]
        calls.clear()
        MultiHeadAttention(32, 4, shared)(torch.randn(2, 10, 32))
        assert calls == [shared]


@pytest.mark.parametrize("scaling", [None, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8},
                                     {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
                                      "original_max_position_embeddings": 8, "factor": 2.0}])
def test_no_position_is_read_back_to_the_host(scaling):
    """Positions never leave the device (0.2 read their min and max in every layer): the model runs on the meta
    device, where reading a value raises. Dynamic NTK alone reads the largest position, once per forward pass."""
    model = TinyTransformer(30, 30, d_model=32, n_heads=4, n_layers=2, causal=True, pool="none",
                            scheme=RotaryPE(8, scaling=scaling)).to("meta")
    assert model(torch.zeros(2, 10, dtype=torch.long, device="meta")).shape == (2, 10, 30)


def test_yarn_scheme_scales_cos_and_sin_by_attention_factor():
    scheme = RotaryPE(16, scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32})
    cos, sin = scheme.cos_sin(torch.arange(100)[None])
    torch.testing.assert_close(cos.square() + sin.square(), torch.full_like(cos, (0.1 * math.log(4) + 1) ** 2))


def test_state_dict_round_trip_and_no_tables_in_it():
    torch.manual_seed(0)

    def build():
        return TinyTransformer(30, 30, d_model=32, n_heads=4, causal=True, pool="none", scheme=RotaryPE(8, base=500.0))

    model = build()
    tokens = torch.randint(0, 30, (2, 10))
    expected = model(tokens)
    state = model.state_dict()
    assert not any("scheme" in key or "inv_freq" in key or "table" in key for key in state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    restored = build()
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    torch.testing.assert_close(restored(tokens), expected, atol=0, rtol=0)


def test_module_to_float64_and_bfloat16():
    torch.manual_seed(0)
    model = TinyTransformer(30, 30, d_model=32, n_heads=4, causal=True, pool="none", scheme=RotaryPE(8))
    tokens = torch.randint(0, 30, (2, 10))
    expected = model(tokens).double()
    torch.testing.assert_close(model.to(torch.float64)(tokens), expected, atol=1e-5, rtol=1e-5)
    low = model.to(torch.bfloat16)(tokens)
    assert low.dtype == torch.bfloat16
    assert (low.double() - expected).abs().max() < 0.5


def test_hugging_face_partial_tables_raise_and_their_first_half_matches_gpt_neox():
    """GPT-NeoX rotates a quarter of a 64-wide head; Hugging Face's cos/sin are full width (16 columns), the shape of a
    half-width table of a 32-dim rotation. 0.3 took them so, silently (5.2 from NeoX's result); now the call raises,
    naming rotary_dim and cos[..., :8], and the first half with rotary_dim=16 is NeoX's rotation."""
    import transformers
    from transformers.models.gpt_neox import modeling_gpt_neox as neox

    config = transformers.GPTNeoXConfig(hidden_size=256, num_attention_heads=4, rotary_pct=0.25, num_hidden_layers=1,
                                        intermediate_size=16, vocab_size=8)
    x, positions, _ = random_case((2, 4, 7, 64), seed=3)
    cos, sin = neox.GPTNeoXRotaryEmbedding(config)(x, positions)
    assert cos.shape == (2, 7, 16)
    with pytest.raises(ValueError, match=r"rotary_dim=32 .*cos\[\.\.\., :8\]"):
        apply_rope(x, cos, sin)
    expected, _ = neox.apply_rotary_pos_emb(x, x, cos, sin)
    torch.testing.assert_close(apply_rope(x, cos[..., :8], sin[..., :8], rotary_dim=16), expected, atol=1e-6, rtol=0)


def test_rotary_scheme_matches_functional_api():
    scheme = RotaryPE(32, base=1000.0, layout="interleaved", rotary_fraction=0.5)
    x, positions, _ = random_case((2, 3, 7, 32), seed=13)
    q, k = scheme.rotate_qk(x, x * 2, positions)
    cos, sin = rope_cos_sin(positions, rope_inv_freq(16, 1000.0))
    torch.testing.assert_close(q, apply_rope(x, cos, sin, "interleaved", rotary_dim=2 * cos.shape[-1]), atol=0, rtol=0)
    torch.testing.assert_close(k, 2 * q, atol=1e-6, rtol=0)
    assert scheme.kind == "rotary" and scheme.rotary_dim == 16


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("rotary_halves", [None, 3])
def test_gradcheck_float64(layout, rotary_halves):
    """Autograd's backward pass passes gradcheck and gradgradcheck in float64, partial rotary too."""
    x, positions, inv_freq = random_case((2, 3, 5, 8), seed=18, rotary_halves=rotary_halves)
    cos, sin = rope_cos_sin(positions, inv_freq.double(), dtype=torch.float64)
    x = x.double().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: apply_rope(t, cos, sin, layout, rotary_dim=2 * cos.shape[-1]), (x,))
    assert torch.autograd.gradgradcheck(lambda t: apply_rope(t, cos, sin, layout, rotary_dim=2 * cos.shape[-1]), (x,))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_backward_equals_autograd_of_the_formula(layout, dtype):
    """Gradients of q and of grouped-query k equal autograd through the textbook formula (and the inverse rotation
    of the output gradient); an unused output sends no gradient; low precision gradients keep their dtype."""
    x, positions, inv_freq = random_case((2, 4, 9, 16), seed=18)
    x = x.to(dtype)
    cos, sin = rope_cos_sin(positions, inv_freq, dtype=dtype)
    seed = torch.randn(x.shape, generator=torch.Generator().manual_seed(2)).to(dtype)
    q, k = x.clone().requires_grad_(), x[:, :2].clone().requires_grad_()
    q_out, k_out = apply_rope_qk(q, k, cos, sin, layout)
    q_out.backward(seed)
    leaf = x.double().requires_grad_()
    perm = rope_layout_permutation(16) if layout == "interleaved" else torch.arange(16)  # interleaved as half
    rotate_half_formula(leaf[..., perm], cos.double(), sin.double())[..., torch.argsort(perm)].backward(seed.double())
    tol = {"atol": 1e-6, "rtol": 0} if dtype == torch.float32 else {"atol": 0.05, "rtol": 0}
    assert q.grad.dtype == dtype
    torch.testing.assert_close(q.grad.double(), leaf.grad, **tol)
    torch.testing.assert_close(q.grad.double(), _inverse(seed, cos, sin, layout).double(), **tol)  # a rotation's transpose
    assert k.grad is None


def _inverse(x, cos, sin, layout="half"):
    """The inverse rotation (sin negated)."""
    return apply_rope(x, cos, -sin, layout)


# ----------------------------------------------------------------------------- torch.compile


@pytest.mark.slow
def test_torch_compile_fullgraph():
    """Inductor compiles apply_rope (forward and backward) and an attention layer using RotaryPE as one graph
    each, with eager's results up to rounding."""
    torch._dynamo.reset()
    x, positions, inv_freq = random_case((2, 4, 16, 16), seed=14)
    cos, sin = rope_cos_sin(positions, inv_freq)
    compiled = torch.compile(apply_rope, fullgraph=True, backend="inductor")
    seed = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    for layout in LAYOUTS:
        torch.testing.assert_close(compiled(x, cos, sin, layout), apply_rope(x, cos, sin, layout), atol=1e-6, rtol=0)
        leaf = x.clone().requires_grad_()
        compiled(leaf, cos, sin, layout).backward(seed)
        torch.testing.assert_close(leaf.grad, _inverse(seed, cos, sin, layout), atol=1e-6, rtol=0)
    torch.manual_seed(0)
    attention = MultiHeadAttention(64, 4, RotaryPE(16))
    h = torch.randn(2, 16, 64)
    compiled_attention = torch.compile(attention, fullgraph=True, backend="inductor")
    with torch.no_grad():
        torch.testing.assert_close(compiled_attention(h, positions, causal=True), attention(h, positions, causal=True),
                                   atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- float64 means float64


def test_float64_tables_are_computed_in_float64():
    positions = torch.tensor([0, 3, 100_000, 100_003])
    inv_freq64 = inverse_frequencies(64, 10000.0, dtype=torch.float64)
    cos, sin = rope_cos_sin(positions, inv_freq64, dtype=torch.float64)
    exact = torch.tensor([[math.cos(p * float(f)) for f in inv_freq64] for p in positions.tolist()], dtype=torch.float64)
    torch.testing.assert_close(cos, exact, rtol=0, atol=1e-9)
    scheme = RotaryPE(head_dim=64).double()
    cos_pe, sin_pe = scheme.cos_sin(positions[None], torch.float64)
    torch.testing.assert_close(cos_pe[0], exact, rtol=0, atol=1e-9)
    torch.testing.assert_close(sin_pe[0], sin, rtol=0, atol=1e-9)
    # float32 tables keep float32 angles (as Hugging Face does): off by ~1e-3 at position 1e5
    cos32, _ = rope_cos_sin(positions, rope_inv_freq(64), dtype=torch.float64)
    assert (cos32 - exact).abs().max() > 1e-5


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_float64_relative_offset_invariance_near_1e5(layout):
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 1, 64, dtype=torch.float64, generator=gen)
    k = torch.randn(1, 2, 1, 64, dtype=torch.float64, generator=gen)
    scheme = RotaryPE(head_dim=64, layout=layout).double()

    def score(m: int, n: int) -> torch.Tensor:
        q_r, _ = scheme.rotate_qk(q, q, torch.tensor([[m]]))
        _, k_r = scheme.rotate_qk(k, k, torch.tensor([[n]]))
        return (q_r * k_r).sum(-1)

    for offset in (99_997, 100_000, 123_457):
        torch.testing.assert_close(score(offset + 3, offset), score(3, 0), rtol=0, atol=1e-9)


def test_dynamic_ntk_cached_decoding_differs_past_l0_and_static_scalings_agree():
    """The documented exception to the cache contract: dynamic NTK picks its frequencies from each call's largest
    position, so past L0 a cached decode step and a full pass differ; default RoPE and YaRN agree."""
    tokens = torch.randint(0, 30, (2, 12), generator=torch.Generator().manual_seed(0))
    gaps = {}
    for name, scaling in [("default", None),
                          ("yarn", {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4}),
                          ("dynamic", {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4})]:
        torch.manual_seed(0)
        model = TinyTransformer(30, 30, d_model=32, n_heads=4, causal=True, pool="none", scheme=RotaryPE(8, scaling=scaling))
        full, cached = last_token_logits_two_ways(model, tokens)
        gaps[name] = (full - cached).abs().max().item()
    assert gaps["default"] < 1e-5 and gaps["yarn"] < 1e-5 and gaps["dynamic"] > 1e-4, gaps


def test_hugging_face_dicts_and_configs_as_they_come():
    """RotaryPE(scaling=) takes a rope_parameters dict whole (its rope_theta and partial_rotary_factor, base left
    out); transformers 4.x's "type" reads as rope_type; rotary_scheme reads a v4 config object, dynamic NTK's L0 and
    YaRN's missing factor from max_position_embeddings, and its frequencies equal Hugging Face's."""
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from posenc_lib.interop.hf_config import rope_theta, rotary_scheme

    llama3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 64, "partial_rotary_factor": 0.5}
    ours = RotaryPE(16, scaling=llama3)
    assert ours.config["rope_theta"] == 500000.0 and ours.rotary_dim == 8
    assert RotaryPE(16, scaling={"type": "linear", "factor": 4.0}).config["rope_type"] == "linear"

    class V4Config:  # a transformers 4.x config: base and scaling apart, the scaling's type under "type"
        model_type, hidden_size, num_attention_heads, num_hidden_layers = "llama", 64, 4, 1
        rope_theta, rope_scaling, max_position_embeddings = 500000.0, {"type": "linear", "factor": 2.0}, 128

    assert rope_theta(V4Config()) == 500000.0 and rotary_scheme(V4Config()).config["factor"] == 2.0
    legacy = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, rope_scaling={"type": "linear", "factor": 4.0})
    assert rotary_scheme(legacy).config["rope_type"] == "linear"
    for rope, key in (({"rope_type": "dynamic", "factor": 2.0}, "original_max_position_embeddings"),
                      ({"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 32}, "factor")):
        config = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, max_position_embeddings=128,
                                          rope_parameters={"rope_theta": 10000.0, **rope})
        scheme = rotary_scheme(config)
        assert scheme.config[key] == (128 if key != "factor" else 4.0)
        theirs, factor = ROPE_INIT_FUNCTIONS[rope["rope_type"]](config, "cpu")
        assert torch.equal(scheme.inv_freq, theirs) and scheme.attention_factor == pytest.approx(factor)
