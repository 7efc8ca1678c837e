"""Tests of posenc_lib.embeddings.sinusoidal: the formula, its layouts, the shift map, the module, reference code."""

from __future__ import annotations

import importlib

import io
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_lib.embeddings.sinusoidal import (
    SinusoidalPE,
    shift_matrix,
    sinusoidal_frequencies,
    sinusoidal_layout_permutation,
    sinusoidal_table,
)
from posenc_lib.models import TinyTransformer

even_dims = st.integers(1, 24).map(lambda h: 2 * h)
bases = st.sampled_from([10.0, 100.0, 10000.0, 500000.0])
layouts = st.sampled_from(["interleaved", "half"])
FAST = settings(max_examples=40, deadline=None)


def loop_table(max_len: int, d_model: int, base: float, layout: str) -> torch.Tensor:
    """The formula written out element by element with Python floats (an independent oracle)."""
    rows = []
    for pos in range(max_len):
        sines = [math.sin(pos / base ** (2 * i / d_model)) for i in range(d_model // 2)]
        cosines = [math.cos(pos / base ** (2 * i / d_model)) for i in range(d_model // 2)]
        if layout == "interleaved":
            rows.append([v for pair in zip(sines, cosines) for v in pair])
        else:
            rows.append(sines + cosines)
    return torch.tensor(rows, dtype=torch.float64)


# ----------------------------------------------------------------------------- the formula


@FAST
@given(max_len=st.integers(1, 40), d_model=even_dims, base=bases, layout=layouts)
def test_table_equals_elementwise_formula(max_len, d_model, base, layout):
    ours = sinusoidal_table(max_len, d_model, base, layout, dtype=torch.float64)
    torch.testing.assert_close(ours, loop_table(max_len, d_model, base, layout), rtol=0, atol=1e-12)


@FAST
@given(max_len=st.integers(1, 3000), d_model=even_dims, base=bases, layout=layouts)
def test_values_lie_in_unit_interval_and_pairs_on_unit_circle(max_len, d_model, base, layout):
    t = sinusoidal_table(max_len, d_model, base, layout, dtype=torch.float64)
    assert t.shape == (max_len, d_model)
    assert t.abs().max() <= 1.0
    sin, cos = (t[:, 0::2], t[:, 1::2]) if layout == "interleaved" else t.chunk(2, dim=1)
    torch.testing.assert_close(sin**2 + cos**2, torch.ones_like(sin), rtol=0, atol=1e-14)


def test_position_zero_and_column_meaning():
    t = sinusoidal_table(100, 8)
    torch.testing.assert_close(t[0], torch.tensor([0.0, 1.0] * 4))  # sin 0 = 0, cos 0 = 1
    torch.testing.assert_close(t[:, 0], torch.arange(100.0).sin())  # pair 0 turns at 1 rad/position
    torch.testing.assert_close(t[:, 1], torch.arange(100.0).cos())
    assert sinusoidal_table(3, 4).dtype == torch.float32


def test_frequencies_are_log_spaced_from_one_to_base_inverse():
    w = sinusoidal_frequencies(64)
    assert w.dtype == torch.float64 and w.shape == (32,)
    assert w[0] == 1.0
    assert torch.all(w[1:] < w[:-1])  # frequency falls with i, so wavelength grows
    torch.testing.assert_close(w[-1], torch.tensor(10000.0 ** (-62 / 64), dtype=torch.float64))
    ratios = w[1:] / w[:-1]
    torch.testing.assert_close(ratios, torch.full_like(ratios, 10000.0 ** (-2 / 64)))
    wavelength = 2 * math.pi / w
    assert wavelength[0] == pytest.approx(2 * math.pi) and wavelength[-1] < 10000 * 2 * math.pi


def test_float64_angles_beat_float32_angles_at_large_positions():
    d, pos = 64, torch.arange(0, 100_001, 1000)
    ours = sinusoidal_table(100_001, d)[pos]  # float64 angles, float32 values
    angles = [[p / 10000.0 ** (2 * i / d) for i in range(d // 2)] for p in pos.tolist()]
    exact = torch.tensor([[f(a) for a in row for f in (math.sin, math.cos)] for row in angles], dtype=torch.float64)
    naive_angles = pos[:, None].float() * sinusoidal_frequencies(d).float()[None, :]  # angles in float32
    naive = torch.stack([naive_angles.sin(), naive_angles.cos()], dim=-1).reshape(len(pos), d)
    assert (ours.double() - exact).abs().max() < 1e-7  # only the float32 rounding of the value
    assert (naive.double() - exact).abs().max() > 1e-3  # float32 angles: wrong in the third decimal


# ----------------------------------------------------------------------------- layouts


@FAST
@given(max_len=st.integers(1, 50), d_model=even_dims, base=bases)
def test_half_is_a_column_permutation_of_interleaved(max_len, d_model, base):
    inter = sinusoidal_table(max_len, d_model, base, "interleaved", dtype=torch.float64)
    half = sinusoidal_table(max_len, d_model, base, "half", dtype=torch.float64)
    perm = sinusoidal_layout_permutation(d_model)
    assert perm.dtype == torch.int64 and torch.equal(perm.sort().values, torch.arange(d_model))
    assert torch.equal(half, inter[:, perm])
    assert torch.equal(inter, half[:, torch.argsort(perm)])


def test_layout_permutation_small_case():
    assert sinusoidal_layout_permutation(6).tolist() == [0, 2, 4, 1, 3, 5]


# ----------------------------------------------------------------------------- the shift map


@FAST
@given(k=st.integers(-300, 300), d_model=even_dims, base=bases, layout=layouts)
def test_shift_map_moves_every_position_by_k(k, d_model, base, layout):
    n = 400
    table = sinusoidal_table(n, d_model, base, layout, dtype=torch.float64)
    m = shift_matrix(k, d_model, base, layout)
    p = torch.arange(max(0, -k), n - max(0, k))
    # PE(p + k) = M_k PE(p) as column vectors; for rows of the table: table[p + k] = table[p] @ M_k^T.
    torch.testing.assert_close(table[p + k], table[p] @ m.T, rtol=0, atol=1e-12)
    torch.testing.assert_close(table[p[0] + k], m @ table[p[0]], rtol=0, atol=1e-12)


@FAST
@given(a=st.integers(-500, 500), b=st.integers(-500, 500), d_model=even_dims, layout=layouts)
def test_shift_maps_are_rotations_that_compose(a, b, d_model, layout):
    ma, mb = shift_matrix(a, d_model, layout=layout), shift_matrix(b, d_model, layout=layout)
    eye = torch.eye(d_model, dtype=torch.float64)
    torch.testing.assert_close(ma @ ma.T, eye, rtol=0, atol=1e-12)  # orthogonal: norms preserved
    torch.testing.assert_close(shift_matrix(-a, d_model, layout=layout), ma.T, rtol=0, atol=1e-12)
    torch.testing.assert_close(ma @ mb, shift_matrix(a + b, d_model, layout=layout), rtol=0, atol=1e-11)


def test_shift_matrix_is_block_diagonal_in_interleaved_layout():
    m = shift_matrix(7, 8)
    blocks = torch.block_diag(*[m[i : i + 2, i : i + 2] for i in range(0, 8, 2)])
    assert torch.equal(m, blocks)
    w = sinusoidal_frequencies(8)
    torch.testing.assert_close(m[2:4, 2:4], torch.tensor([[math.cos(7 * w[1]), math.sin(7 * w[1])],
                                                          [-math.sin(7 * w[1]), math.cos(7 * w[1])]],
                                                         dtype=torch.float64))
    assert torch.equal(shift_matrix(0, 8), torch.eye(8, dtype=torch.float64))
    assert shift_matrix(3, 8, dtype=torch.float32).dtype == torch.float32


# ----------------------------------------------------------------------------- reference implementations


def _atol_float32_angles(n: int) -> torch.Tensor:
    """Bound for a reference whose angles p*w are float32: w and the product each round by <= 2^-24 relative,
    so |angle error| <= 2 * 2^-24 * p (w <= 1), plus 1e-6 for the value itself. Shape (n, 1)."""
    return (1e-6 + 2 * 2.0**-24 * torch.arange(n, dtype=torch.float64))[:, None]


@pytest.mark.parametrize("n, d", [(64, 32), (512, 64), (1000, 128)])
def test_matches_transformers_distilbert_interleaved(n, d):
    """XLM/DistilBERT build the interleaved table with NumPy float64 angles, then cast to float32."""
    distilbert = importlib.import_module("transformers.models.distilbert.modeling_distilbert")
    ref = torch.empty(n, d)
    distilbert._create_sinusoidal_embeddings(n, d, ref)
    torch.testing.assert_close(sinusoidal_table(n, d, layout="interleaved"), ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize("n, d", [(64, 32), (512, 64), (1000, 128)])
def test_matches_transformers_marian_half(n, d):
    """Marian builds [sin | cos] (concatenated, not interleaved) with NumPy float64 angles."""
    marian = importlib.import_module("transformers.models.marian.modeling_marian")
    ref = marian.MarianSinusoidalPositionalEmbedding(n, d).create_weight()
    torch.testing.assert_close(sinusoidal_table(n, d, layout="half"), ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize("n, d", [(16, 32), (1024, 64), (4096, 128)])
def test_matches_fairseq_tensor2tensor_variant_with_rescaled_base(n, d):
    """fairseq / tensor2tensor (M2M100 in transformers) use [sin | cos] with w_i = 10000^(-i/(h-1)), h = d/2,
    i.e. our formula with base' = 10000^(h/(h-1)), so the last pair reaches exactly 1/10000.
    Their angles are float32, so the agreement is 1e-6 near the start and degrades linearly with p."""
    m2m = importlib.import_module("transformers.models.m2m_100.modeling_m2m_100")
    ref = m2m.M2M100SinusoidalPositionalEmbedding.get_embedding(n, d).double()
    h = d // 2
    ours = sinusoidal_table(n, d, base=10000.0 ** (h / (h - 1)), layout="half", dtype=torch.float64)
    err = (ours - ref).abs()
    assert torch.all(err <= _atol_float32_angles(n)), f"max excess {(err - _atol_float32_angles(n)).max():.3g}"
    assert err[:16].max() < 1e-6


# ----------------------------------------------------------------------------- the module


def test_module_is_a_buffer_not_a_parameter():
    pe = SinusoidalPE(16, max_len=32)
    assert pe.kind == "embedding"
    assert list(pe.parameters()) == []
    assert dict(pe.named_buffers()).keys() == {"table"}
    assert pe.state_dict() == {}
    assert torch.equal(pe.table, sinusoidal_table(32, 16))
    assert not pe.table.requires_grad


def test_forward_and_add_to_embeddings():
    pe = SinusoidalPE(16, max_len=32, layout="half")
    pos = torch.tensor([[0, 5, 31], [2, 2, 9]])
    out = pe(pos)
    assert out.shape == (2, 3, 16) and out.dtype == torch.float32
    assert torch.equal(out[1, 2], sinusoidal_table(32, 16, layout="half")[9])
    x = torch.randn(2, 3, 16, dtype=torch.float64)
    y = pe.add_to_embeddings(x, pos)
    assert y.dtype == torch.float64
    torch.testing.assert_close(y - x, out.double())
    broadcast = pe.add_to_embeddings(x, pos[:1])  # (1, seq) positions serve the whole batch
    torch.testing.assert_close(broadcast[1] - x[1], out[0].double())


def test_table_extends_itself_past_max_len():
    pe = SinusoidalPE(8, max_len=10)
    before = pe.table.clone()
    out = pe(torch.tensor([[3, 25]]))
    assert pe.table.shape == (26, 8)  # at least the needed rows, and at least double the old size
    assert torch.equal(pe.table, sinusoidal_table(26, 8))
    assert torch.equal(pe.table[:10], before)
    assert torch.equal(out[0, 1], sinusoidal_table(26, 8)[25])
    pe(torch.tensor([[27]]))
    assert pe.table.shape == (52, 8)  # doubling keeps repeated one-step growth cheap
    assert pe.state_dict() == {}


def test_to_dtype_moves_the_table_and_extension_keeps_it():
    pe = SinusoidalPE(8, max_len=4).to(torch.float64)
    assert pe.table.dtype == torch.float64 and pe(torch.tensor([[1]])).dtype == torch.float64
    pe(torch.tensor([[100]]))
    assert pe.table.dtype == torch.float64 and pe.table.shape == (101, 8)
    torch.testing.assert_close(pe.table, sinusoidal_table(101, 8, dtype=torch.float64), rtol=0, atol=0)
    half = SinusoidalPE(8, max_len=4).to(torch.bfloat16)
    half(torch.tensor([[9]]))
    assert half.table.dtype == torch.bfloat16


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_extension_keeps_device():
    pe = SinusoidalPE(8, max_len=4).to("cuda")
    out = pe(torch.tensor([[50]], device="cuda"))
    assert pe.table.device.type == "cuda" and out.device.type == "cuda"
    torch.testing.assert_close(pe.table.cpu(), sinusoidal_table(51, 8), rtol=0, atol=0)


def test_table_function_honours_device_and_dtype():
    t = sinusoidal_table(5, 4, dtype=torch.float16, device="meta")
    assert t.device.type == "meta" and t.dtype == torch.float16 and t.shape == (5, 4)


def test_save_load_round_trip_in_a_model():
    torch.manual_seed(0)
    model = TinyTransformer(11, 3, d_model=16, n_heads=2, n_layers=1, scheme=SinusoidalPE(16, max_len=8))
    tokens = torch.randint(0, 11, (2, 12))  # longer than max_len: the table extends
    expected = model(tokens)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert not any("table" in key for key in state)
    torch.manual_seed(1)
    fresh = TinyTransformer(11, 3, d_model=16, n_heads=2, n_layers=1, scheme=SinusoidalPE(16, max_len=8))
    fresh.load_state_dict(state)  # strict: no missing or unexpected keys
    assert torch.equal(fresh(tokens), expected)


def test_optimizer_never_sees_the_table():
    model = TinyTransformer(11, 3, d_model=16, n_heads=2, n_layers=1, scheme=SinusoidalPE(16, max_len=8))
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    params = {id(p) for group in optim.param_groups for p in group["params"]}
    assert id(model.scheme.table) not in params
    before = model.scheme.table.clone()
    model(torch.randint(0, 11, (2, 8))).sum().backward()
    optim.step()
    assert torch.equal(model.scheme.table, before)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: sinusoidal_table(4, 7), ValueError, ["d_model", "7", "even"]),
        (lambda: sinusoidal_table(4, 0), ValueError, ["d_model", "0", ">= 2"]),
        (lambda: sinusoidal_table(4, -2), ValueError, ["d_model", "-2"]),
        (lambda: sinusoidal_table(0, 4), ValueError, ["max_len", "0", ">= 1"]),
        (lambda: sinusoidal_table(-3, 4), ValueError, ["max_len", "-3"]),
        (lambda: sinusoidal_table(4.0, 4), TypeError, ["max_len", "4.0", "int"]),
        (lambda: sinusoidal_table(4, 8.0), TypeError, ["d_model", "8.0", "int"]),
        (lambda: sinusoidal_table(4, True), TypeError, ["d_model", "True", "int"]),
        (lambda: sinusoidal_table(4, 4, layout="halves"), ValueError, ["layout", "'halves'", "interleaved", "half"]),
        (lambda: sinusoidal_table(4, 4, base=1.0), ValueError, ["base", "1.0", "> 1"]),
        (lambda: sinusoidal_table(4, 4, base=float("nan")), ValueError, ["base", "nan"]),
        (lambda: sinusoidal_table(4, 4, dtype=torch.int64), TypeError, ["dtype", "torch.int64", "floating"]),
        (lambda: sinusoidal_layout_permutation(5), ValueError, ["d_model", "5"]),
        (lambda: shift_matrix(1.5, 4), TypeError, ["k", "1.5", "int"]),
        (lambda: shift_matrix(1, 3), ValueError, ["d_model", "3"]),
        (lambda: shift_matrix(1, 4, layout="rows"), ValueError, ["layout", "'rows'"]),
        (lambda: SinusoidalPE(9), ValueError, ["d_model", "9", "even"]),
        (lambda: SinusoidalPE(8, max_len=0), ValueError, ["max_len", "0"]),
        (lambda: SinusoidalPE(8, layout="x"), ValueError, ["layout", "'x'"]),
        (lambda: SinusoidalPE(8)(torch.tensor([[0.0, 1.0]])), TypeError, ["positions", "torch.float32", "integer"]),
        (lambda: SinusoidalPE(8)(torch.tensor([[True]])), TypeError, ["positions", "torch.bool", "integer"]),
        (lambda: SinusoidalPE(8)([[0, 1]]), TypeError, ["positions", "list"]),
        (lambda: SinusoidalPE(8)(torch.tensor([[0, -1]])), ValueError, ["positions", "-1", ">= 0"]),
        (lambda: SinusoidalPE(8).add_to_embeddings(torch.zeros(1, 2, 6), torch.tensor([[0, 1]])), ValueError,
         ["d_model=8", "(1, 2, 6)"]),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} missing from: {info.value}"


def test_empty_positions_give_an_empty_result():
    out = SinusoidalPE(8)(torch.zeros(2, 0, dtype=torch.long))
    assert out.shape == (2, 0, 8)


def test_the_old_name_concat_still_works_with_a_deprecation_warning_at_the_callers_line():
    """0.3 renamed the layout "concat" to "half", RoPE's name for the same order of pairs; "concat" stays until 0.4."""
    with pytest.warns(DeprecationWarning, match='"concat" is now called "half"') as caught:
        table = sinusoidal_table(9, 8, layout="concat")
    assert torch.equal(table, sinusoidal_table(9, 8, layout="half")) and caught[0].filename == __file__
    with pytest.warns(DeprecationWarning) as caught:
        matrix = shift_matrix(3, 8, layout="concat")
    assert torch.equal(matrix, shift_matrix(3, 8, layout="half")) and caught[0].filename == __file__
    with pytest.warns(DeprecationWarning) as caught:
        scheme = SinusoidalPE(8, max_len=9, layout="concat")
    assert scheme.layout == "half" and torch.equal(scheme.table, table) and caught[0].filename == __file__
