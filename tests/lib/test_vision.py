"""2-D encodings for vision: sin-cos tables (vs ViT-MAE), learned row/column tables, axial and mixed
2-D RoPE, and resampling a learned grid. Conformance tests print their max error (``-s``)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE, learnable_2d_table, sincos_2d_table
from posenc_lib.grid import grid_coordinates, resample_grid
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope import rope_inv_freq
from posenc_lib.rotary.rope_2d import (
    AxialRoPE2D,
    MixedRoPE2D,
    apply_axial_rope_2d,
    apply_mixed_rope_2d,
    mixed_rope_init,
)


def _arange(n: int, offset: int = 0) -> torch.Tensor:
    return torch.arange(offset, offset + n)[None]


# ----------------------------------------------------------------------------- coordinates


def test_grid_coordinates_row_major_with_prefix():
    rows, cols = grid_coordinates(_arange(2 + 6), grid_h=2, grid_w=3, n_prefix=2)
    assert rows.tolist() == [[0, 0, 0, 0, 0, 1, 1, 1]]
    assert cols.tolist() == [[0, 0, 0, 1, 2, 0, 1, 2]]
    with pytest.raises(ValueError, match=r"positions must lie in \[0, 7\]"):
        grid_coordinates(_arange(9), 2, 3, n_prefix=2)


# ----------------------------------------------------------------------------- sin-cos


@pytest.mark.parametrize("hw,d,n_prefix", [((3, 5), 16, 0), ((4, 4), 32, 1), ((7, 2), 8, 1), ((1, 9), 64, 0)])
def test_sincos_2d_matches_transformers_builder(hw, d, n_prefix):
    from transformers.models.vit_mae.modeling_vit_mae import build_2d_sinusoidal_position_embedding

    ref = build_2d_sinusoidal_position_embedding(*hw, embed_dim=d, cls_token=bool(n_prefix))
    ours = sincos_2d_table(*hw, d, n_prefix=n_prefix)
    err = (ours - ref).abs().max().item()
    print(f"[conformance] 2-D sin-cos {hw} d={d} vs build_2d_sinusoidal_position_embedding: max abs err {err:.3g}")
    assert ours.dtype == torch.float32 and err <= 1e-6


@pytest.mark.parametrize("grid,d", [(5, 32), (3, 16)])
def test_sincos_2d_matches_vit_mae_up_to_documented_half_swap(grid, d):
    """MAE's first half encodes the column; ours the row: a fixed permutation of the channels."""
    from transformers import ViTMAEConfig
    from transformers.models.vit_mae.modeling_vit_mae import ViTMAEEmbeddings

    config = ViTMAEConfig(hidden_size=d, image_size=4 * grid, patch_size=4, num_attention_heads=4)
    embeddings = ViTMAEEmbeddings(config)
    embeddings.initialize_weights()
    mae = embeddings.position_embeddings[0].detach()
    ours = sincos_2d_table(grid, grid, d, n_prefix=1)
    perm = torch.cat([torch.arange(d // 2, d), torch.arange(0, d // 2)])
    err = (ours[:, perm] - mae).abs().max().item()
    print(f"[conformance] 2-D sin-cos vs ViTMAEEmbeddings grid {grid} d={d} (halves swapped): max abs err {err:.3g}")
    assert err <= 1e-6
    assert (ours - mae).abs().max() > 0.5, "without the permutation the orders really differ"


def test_sincos_2d_structure():
    h, w, d = 4, 6, 24
    table = sincos_2d_table(h, w, d, n_prefix=2, dtype=torch.float64).reshape(-1, d)
    assert (table[:2] == 0).all(), "prefix rows are zero"
    grid = table[2:].reshape(h, w, d)
    row_half, col_half = grid[..., : d // 2], grid[..., d // 2 :]
    assert (row_half - row_half[:, :1]).abs().max() == 0, "first half depends on the row only"
    assert (col_half - col_half[:1]).abs().max() == 0, "second half depends on the column only"
    torch.testing.assert_close(row_half[:, 0], col_half[0, :h])  # row r and column r get the same code
    # each (sin, cos) pair is a point on the unit circle
    sin, cos = row_half[..., : d // 4], row_half[..., d // 4 :]
    torch.testing.assert_close(sin**2 + cos**2, torch.ones_like(sin))


def test_sincos_2d_scheme_buffer_is_not_saved():
    scheme = SinCos2DPE(16, 3, 4, n_prefix=1)
    assert scheme.kind == "embedding" and len(scheme.state_dict()) == 0
    pos = torch.tensor([[0, 1, 12], [5, 6, 7]])
    torch.testing.assert_close(scheme(pos), sincos_2d_table(3, 4, 16, n_prefix=1)[pos])
    x = torch.randn(2, 3, 16)
    torch.testing.assert_close(scheme.add_to_embeddings(x, pos), x + scheme(pos))


# ----------------------------------------------------------------------------- learned row/column tables


@pytest.mark.parametrize("mode", ["add", "concat"])
def test_learnable_2d_table_structure(mode):
    torch.manual_seed(0)
    h, w, d = 3, 4, 8
    scheme = Learnable2DPE(d, h, w, mode=mode, n_prefix=1)
    dim = d if mode == "add" else d // 2
    assert scheme.row.shape == (h, dim) and scheme.col.shape == (w, dim) and scheme.prefix.shape == (1, d)
    assert set(scheme.state_dict()) == {"row", "col", "prefix"}
    assert sum(p.numel() for p in scheme.parameters()) == (h + w) * dim + d
    table = scheme.table()
    assert table.shape == (1 + h * w, d)
    torch.testing.assert_close(table[0], scheme.prefix[0])
    r, c = 2, 1
    patch = table[1 + r * w + c]
    expected = scheme.row[r] + scheme.col[c] if mode == "add" else torch.cat([scheme.row[r], scheme.col[c]])
    torch.testing.assert_close(patch, expected)
    # the learned table is trained: gradients reach both axis tables and the prefix row
    scheme(_arange(1 + h * w)).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in scheme.parameters())


def test_learnable_2d_function_form_and_range():
    row, col, prefix = torch.randn(2, 4), torch.randn(3, 4), torch.zeros(0, 8)
    assert learnable_2d_table(row, col, prefix, mode="concat").shape == (6, 8)
    scheme = Learnable2DPE(8, 2, 3)
    with pytest.raises(ValueError, match=r"positions must lie in \[0, 5\]"):
        scheme(_arange(7))


# ----------------------------------------------------------------------------- 2-D RoPE


def _rotate_reference(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Independent oracle: half-layout pairs (x[i], x[i+d/2]) as complex numbers times exp(i angle)."""
    d = x.shape[-1]
    z = torch.complex(x[..., : d // 2].double(), x[..., d // 2 :].double()) * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


def test_axial_rope_matches_complex_reference():
    torch.manual_seed(0)
    h, w, hd, n_prefix = 3, 4, 16, 1
    scheme = AxialRoPE2D(hd, h, w, n_prefix=n_prefix)
    q, k = torch.randn(2, 3, n_prefix + h * w, hd), torch.randn(2, 3, n_prefix + h * w, hd)
    pos = _arange(n_prefix + h * w)
    rq, rk = scheme.rotate_qk(q, k, pos)
    rows, cols = grid_coordinates(pos, h, w, n_prefix)
    theta = 100.0 ** (-torch.arange(hd // 4, dtype=torch.float64) / (hd // 4))
    angles = torch.cat([cols[..., None] * theta, rows[..., None] * theta], dim=-1)[:, None]  # (1, 1, seq, hd/2)
    err = max((rq - _rotate_reference(q, angles)).abs().max().item(),
              (rk - _rotate_reference(k, angles)).abs().max().item())
    print(f"[conformance] axial 2-D RoPE vs complex-number reference: max abs err {err:.3g}")
    assert err <= 1e-5
    torch.testing.assert_close(rq[:, :, 0], q[:, :, 0], rtol=0, atol=0)  # prefix token unrotated
    torch.testing.assert_close(rq.norm(dim=-1), q.norm(dim=-1))  # rotations keep norms


@pytest.mark.parametrize("make", [lambda: AxialRoPE2D(8, 5, 5), lambda: MixedRoPE2D(8, 2, 5, 5)], ids=["axial", "mixed"])
@settings(max_examples=15, deadline=None)
@given(dr=st.integers(0, 2), dc=st.integers(0, 2), seed=st.integers(0, 1000))
def test_2d_rope_scores_depend_only_on_2d_offset(make, dr, dc, seed):
    """Moving every token by (dr, dc) on the grid leaves every q.k score unchanged."""
    torch.manual_seed(seed)
    scheme = make()
    cells = torch.tensor([(0, 0), (1, 2), (2, 1), (0, 2)])  # (row, col) of 4 tokens, then shifted
    pos = (cells[:, 0] * 5 + cells[:, 1])[None]
    shifted = ((cells[:, 0] + dr) * 5 + cells[:, 1] + dc)[None]
    q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)
    with torch.no_grad():
        rq, rk = scheme.rotate_qk(q, k, pos)
        sq, sk = scheme.rotate_qk(q, k, shifted)
    torch.testing.assert_close(sq @ sk.transpose(-1, -2), rq @ rk.transpose(-1, -2), rtol=1e-5, atol=1e-5)


def test_mixed_rope_with_axis_aligned_frequencies_is_axial():
    torch.manual_seed(0)
    hd, heads, h, w = 16, 2, 3, 4
    axial, mixed = AxialRoPE2D(hd, h, w, base=10.0), MixedRoPE2D(hd, heads, h, w, base=10.0)
    theta = rope_inv_freq(hd // 2, 10.0)
    zeros = torch.zeros_like(theta)
    with torch.no_grad():  # pairs 0..hd/4-1 follow the column (x) only, the rest the row (y) only
        mixed.freqs.copy_(torch.stack([torch.cat([theta, zeros]), torch.cat([zeros, theta])])[:, None].expand(2, heads, -1))
    q, k, pos = torch.randn(2, heads, h * w, hd), torch.randn(2, heads, h * w, hd), _arange(h * w)
    for a, b in zip(mixed.rotate_qk(q, k, pos), axial.rotate_qk(q, k, pos), strict=True):
        torch.testing.assert_close(a, b)


def test_mixed_rope_init_and_learning():
    torch.manual_seed(0)
    hd, heads = 16, 3
    freqs = mixed_rope_init(hd, heads, base=10.0)
    assert freqs.shape == (2, heads, hd // 2)
    magnitude = rope_inv_freq(hd // 2, 10.0).repeat(2)
    torch.testing.assert_close(freqs.norm(dim=0), magnitude.expand(heads, -1))  # |(f_row, f_col)| = base^(-k/(d/4))
    first, second = freqs[:, :, : hd // 4], freqs[:, :, hd // 4 :]
    torch.testing.assert_close((first * second).sum(0), torch.zeros(heads, hd // 4), atol=1e-6, rtol=0)  # orthogonal
    directions = torch.atan2(freqs[1, :, 0], freqs[0, :, 0])
    assert len(set(directions.tolist())) == heads, "each head draws its own direction"
    scheme = MixedRoPE2D(hd, heads, 2, 2)
    q = torch.randn(1, heads, 4, hd)
    rq, rk = scheme.rotate_qk(q, q, _arange(4))
    (rq * rk.roll(1, dims=2)).sum().backward()
    assert scheme.freqs.grad is not None and scheme.freqs.grad.abs().sum() > 0
    # function form, per-head angles
    rows, cols = grid_coordinates(_arange(4), 2, 2)
    angles = cols[:, None, :, None] * scheme.freqs[0, None, :, None] + rows[:, None, :, None] * scheme.freqs[1, None, :, None]
    torch.testing.assert_close(apply_mixed_rope_2d(q, rows, cols, scheme.freqs), _rotate_reference(q, angles.detach().double()))


def test_axial_function_form_equals_scheme():
    q = torch.randn(1, 2, 6, 8)
    scheme = AxialRoPE2D(8, 2, 3)
    rows, cols = grid_coordinates(_arange(6), 2, 3)
    torch.testing.assert_close(apply_axial_rope_2d(q, rows, cols, scheme.inv_freq), scheme.rotate_qk(q, q, _arange(6))[0])
    assert len(scheme.state_dict()) == 0 and len(MixedRoPE2D(8, 2, 2, 3).state_dict()) == 1


def test_2d_rope_in_a_vit_sized_model():
    torch.manual_seed(0)
    for scheme in (AxialRoPE2D(8, 3, 3, n_prefix=1), MixedRoPE2D(8, 4, 3, 3, n_prefix=1)):
        model = TinyTransformer(7, 5, d_model=32, n_heads=4, n_layers=1, scheme=scheme, pool="first")
        tokens = torch.randint(0, 7, (2, 10))
        assert model(tokens).shape == (2, 5)


# ----------------------------------------------------------------------------- resample_grid


def test_resample_grid_identity_and_prefix():
    torch.manual_seed(0)
    table = torch.randn(1 + 4 * 5, 6)
    torch.testing.assert_close(resample_grid(table, (4, 5), (4, 5)), table, rtol=0, atol=0)
    bigger = resample_grid(table, (4, 5), (7, 3), n_prefix=1)
    assert bigger.shape == (1 + 21, 6)
    torch.testing.assert_close(bigger[0], table[0], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("new_hw", [(6, 6), (3, 5), (9, 2)])
def test_resample_grid_matches_interpolate_bicubic(dtype, new_hw):
    torch.manual_seed(0)
    h, w, d, n_prefix = 4, 4, 5, 2
    table = torch.randn(n_prefix + h * w, d).to(dtype)
    out = resample_grid(table, (h, w), new_hw, n_prefix=n_prefix)
    grid = table[n_prefix:].float().reshape(1, h, w, d).permute(0, 3, 1, 2)
    expected = F.interpolate(grid, size=new_hw, mode="bicubic", align_corners=False)[0].permute(1, 2, 0).reshape(-1, d)
    assert out.dtype == dtype and out.shape == (n_prefix + math.prod(new_hw), d)
    torch.testing.assert_close(out[n_prefix:], expected.to(dtype), rtol=0, atol=0)
    torch.testing.assert_close(out[:n_prefix], table[:n_prefix], rtol=0, atol=0)


def test_resample_grid_keeps_a_constant_grid_constant():
    """Bicubic weights sum to one, so a constant table stays constant, borders included."""
    table = torch.cat([torch.full((1, 3), 7.0), torch.full((16, 3), 0.25)])
    out = resample_grid(table, (4, 4), (11, 5), n_prefix=1)
    torch.testing.assert_close(out[1:], torch.full((55, 3), 0.25))
    assert (out[0] == 7.0).all()


# ----------------------------------------------------------------------------- vs Heo et al.'s official code
# An independent re-derivation, in complex numbers, of the formulas of naver-ai/rope-vit
# (models/vit_rope.py: init_t_xy, compute_axial_cis, init_random_2d_freqs, compute_mixed_cis,
# apply_rotary_emb): x is the column index, y the row index, pairs are interleaved (x[2i], x[2i+1]),
# and the class token (position 0) is not rotated.


def _heo_t_xy(end_x: int, end_y: int) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.arange(end_x * end_y, dtype=torch.float64)
    return t % end_x, torch.div(t, end_x, rounding_mode="floor")


def _heo_magnitudes(dim: int, theta: float) -> torch.Tensor:
    return theta ** (-torch.arange(0, dim, 4)[: dim // 4].double() / dim)


def _heo_axial_cis(dim: int, end_x: int, end_y: int, theta: float) -> torch.Tensor:
    """(end_x*end_y, dim/2) unit complex numbers: the x (column) table first, then the y (row) table."""
    t_x, t_y = _heo_t_xy(end_x, end_y)
    f = _heo_magnitudes(dim, theta)
    return torch.cat([torch.polar(torch.ones(len(t_x), len(f), dtype=torch.float64), torch.outer(t_x, f)),
                      torch.polar(torch.ones(len(t_y), len(f), dtype=torch.float64), torch.outer(t_y, f))], dim=-1)


def _heo_init_freqs(dim: int, num_heads: int, theta: float) -> torch.Tensor:
    """(2, heads, dim/2): row 0 the x frequencies, row 1 the y frequencies; one torch.rand(1) per head."""
    mag = _heo_magnitudes(dim, theta).float()
    fx, fy = [], []
    for _ in range(num_heads):
        a = torch.rand(1) * 2 * torch.pi
        fx.append(torch.cat([mag * torch.cos(a), mag * torch.cos(torch.pi / 2 + a)]))
        fy.append(torch.cat([mag * torch.sin(a), mag * torch.sin(torch.pi / 2 + a)]))
    return torch.stack([torch.stack(fx), torch.stack(fy)])


def _heo_mixed_cis(freqs: torch.Tensor, end_x: int, end_y: int) -> torch.Tensor:
    """(heads, end_x*end_y, dim/2): pair j of head h turns by t_x * fx[h, j] + t_y * fy[h, j]."""
    t_x, t_y = _heo_t_xy(end_x, end_y)
    f = freqs.double()
    angles = t_x[None, :, None] * f[0][:, None, :] + t_y[None, :, None] * f[1][:, None, :]
    return torch.polar(torch.ones_like(angles), angles)


def _heo_rotate_patches(x: torch.Tensor, cis: torch.Tensor) -> torch.Tensor:
    """x (batch, heads, 1 + N, dim): the class token is left alone, patch pairs (x[2i], x[2i+1]) times cis."""
    patches = x[:, :, 1:].double()
    z = torch.view_as_complex(patches.reshape(*patches.shape[:-1], -1, 2).contiguous()) * cis
    return torch.cat([x[:, :, :1].double(), torch.view_as_real(z).flatten(-2)], dim=2).to(x.dtype)


@pytest.mark.parametrize("grid_h,grid_w", [(2, 5), (4, 3)])
def test_axial_rope_matches_heo_reference(grid_h, grid_w):
    """Interleaved layout: equal to the reference; half layout: equal up to the fixed layout permutation."""
    from posenc_lib.rotary.rope import rope_layout_permutation

    torch.manual_seed(0)
    hd, seq = 16, 1 + grid_h * grid_w
    q, k = torch.randn(2, 3, seq, hd), torch.randn(2, 3, seq, hd)
    cis = _heo_axial_cis(hd, end_x=grid_w, end_y=grid_h, theta=100.0)
    scheme = AxialRoPE2D(hd, grid_h, grid_w, base=100.0, n_prefix=1, layout="interleaved")
    rq, rk = scheme.rotate_qk(q, k, _arange(seq))
    err = max((rq - _heo_rotate_patches(q, cis)).abs().max().item(), (rk - _heo_rotate_patches(k, cis)).abs().max().item())
    print(f"[conformance] axial 2-D RoPE {grid_h}x{grid_w} vs rope-vit compute_axial_cis: max abs err {err:.3g}")
    assert err <= 1e-5
    perm = rope_layout_permutation(hd)
    half = AxialRoPE2D(hd, grid_h, grid_w, base=100.0, n_prefix=1)
    torch.testing.assert_close(half.rotate_qk(q[..., perm], k[..., perm], _arange(seq))[0], rq[..., perm])
    # the other order (rows first) really is different on this non-square grid
    swapped = torch.cat([cis[:, hd // 4 :], cis[:, : hd // 4]], dim=-1)
    assert (_heo_rotate_patches(q, swapped) - rq).abs().max() > 0.1


def test_mixed_rope_init_matches_heo_reference():
    torch.manual_seed(3)
    ours = mixed_rope_init(16, 4, base=10.0)
    torch.manual_seed(3)
    ref = _heo_init_freqs(16, 4, theta=10.0)
    torch.testing.assert_close(ours, ref)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_mixed_rope_matches_heo_reference(layout):
    from posenc_lib.rotary.rope import rope_layout_permutation

    torch.manual_seed(0)
    hd, heads, grid_h, grid_w = 16, 4, 3, 5
    seq = 1 + grid_h * grid_w
    scheme = MixedRoPE2D(hd, heads, grid_h, grid_w, n_prefix=1, layout=layout)
    q, k = torch.randn(2, heads, seq, hd), torch.randn(2, heads, seq, hd)
    cis = _heo_mixed_cis(scheme.freqs.detach(), end_x=grid_w, end_y=grid_h)
    perm = rope_layout_permutation(hd) if layout == "half" else torch.arange(hd)
    with torch.no_grad():
        rq, rk = scheme.rotate_qk(q[..., perm], k[..., perm], _arange(seq))
    err = max((rq - _heo_rotate_patches(q, cis)[..., perm]).abs().max().item(),
              (rk - _heo_rotate_patches(k, cis)[..., perm]).abs().max().item())
    print(f"[conformance] mixed 2-D RoPE ({layout}) vs rope-vit compute_mixed_cis: max abs err {err:.3g}")
    assert err <= 1e-5


# ----------------------------------------------------------------------------- patch embedding


def test_patch_embed_is_a_strided_convolution_in_row_major_order():
    from posenc_lib.grid import PatchEmbed

    torch.manual_seed(0)
    embed = PatchEmbed(patch_size=2, d_model=6, in_channels=3, n_prefix=1)
    images = torch.randn(2, 3, 4, 6)
    tokens = embed(images)
    assert tokens.shape == (2, 1 + 2 * 3, 6) and embed.grid_size(4, 6) == (2, 3)
    torch.testing.assert_close(tokens[:, 0], embed.prefix[0].expand(2, -1))
    weight = embed.proj.weight.reshape(6, 3, 2, 2)
    conv = F.conv2d(images, weight, embed.proj.bias, stride=2)  # (2, 6, 2, 3)
    torch.testing.assert_close(tokens[:, 1:], conv.flatten(2).transpose(1, 2))
    single = PatchEmbed(2, 4)
    assert single(torch.randn(5, 4, 4)).shape == (5, 4, 4)
    assert single(torch.randn(5, 8, 6)).shape == (5, 12, 4), "a larger image gives a larger grid"


def test_patch_embed_vit_trains_with_every_2d_scheme():
    from posenc_lib.grid import PatchEmbed

    torch.manual_seed(0)
    for scheme in (SinCos2DPE(16, 2, 2, n_prefix=1), Learnable2DPE(16, 2, 2, n_prefix=1),
                   AxialRoPE2D(8, 2, 2, n_prefix=1), MixedRoPE2D(8, 2, 2, 2, n_prefix=1)):
        model = TinyTransformer(None, 3, d_model=16, n_heads=2, n_layers=1, scheme=scheme, pool="first",
                                embed=PatchEmbed(2, 16, n_prefix=1))
        out = model(torch.randn(4, 4, 4))
        assert out.shape == (4, 3)
        out.square().sum().backward()
        assert model.embed.prefix.grad.abs().sum() > 0


# ----------------------------------------------------------------------------- interpolated coordinates


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), seed=st.integers(0, 1000))
def test_interpolating_to_the_trained_grid_is_the_identity(h, w, seed):
    """At the trained size coordinate_scale is (1, 1), so "interpolate" changes nothing for any computed scheme."""
    from posenc_lib.grid import coordinate_scale

    assert coordinate_scale((h, w), (h, w)) == (1.0, 1.0)
    torch.manual_seed(seed)
    sincos = SinCos2DPE(8, h, w, n_prefix=1)
    torch.testing.assert_close(sincos.regrid((h, w), (h, w), 1, coords="interpolate").table(), sincos.table(),
                               rtol=0, atol=0)
    q, k = torch.randn(2, 2, 2, 1 + h * w, 8).unbind(0)
    positions = _arange(1 + h * w)
    for rope in (AxialRoPE2D(8, h, w, n_prefix=1), MixedRoPE2D(8, 2, h, w, n_prefix=1)):
        same = rope.regrid((h, w), (h, w), 1, coords="interpolate")
        for a, b in zip(same.rotate_qk(q, k, positions), rope.rotate_qk(q, k, positions), strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@settings(max_examples=25, deadline=None)
@given(old=st.integers(2, 5), extra=st.integers(1, 4))
def test_interpolated_coordinates_span_the_trained_range(old, extra):
    """A grid grown from old to new rows: its first and last rows land on rows 0 and old - 1, the others between."""
    from posenc_lib.grid import coordinate_scale

    new = old + extra
    row_scale, col_scale = coordinate_scale((old, old), (new, new))
    coords = torch.arange(new) * row_scale
    assert row_scale == col_scale < 1 and coords[0] == 0
    assert coords[-1] == pytest.approx(old - 1) and (coords.diff() > 0).all()
    big = sincos_2d_table(new, new, 16, scale=(row_scale, col_scale))
    small = sincos_2d_table(old, old, 16)
    # the four corner patches get exactly the trained corners' encodings
    for (r, c), (r0, c0) in {(0, 0): (0, 0), (0, new - 1): (0, old - 1), (new - 1, 0): (old - 1, 0),
                             (new - 1, new - 1): (old - 1, old - 1)}.items():
        torch.testing.assert_close(big[r * new + c], small[r0 * old + c0], atol=1e-6, rtol=0)


def test_interpolated_rope_turns_like_the_fractional_coordinate():
    """A 2-D RoPE regridded with "interpolate" rotates patch (r, c) of the new grid by the angles of (r s, c s)."""

    torch.manual_seed(0)
    for rope in (AxialRoPE2D(8, 4, 4, n_prefix=1), MixedRoPE2D(8, 2, 4, 4, n_prefix=1)):
        big = rope.regrid((4, 4), (6, 6), 1, coords="interpolate")
        assert big.scale == (0.6, 0.6)
        q, k = torch.randn(2, 1, 2, 1 + 36, 8).unbind(0)
        rows = torch.cat([torch.zeros(1), torch.arange(6).repeat_interleave(6) * 0.6])[None]
        cols = torch.cat([torch.zeros(1), torch.arange(6).repeat(6) * 0.6])[None]
        expected = (apply_axial_rope_2d(q, rows, cols, rope.inv_freq) if isinstance(rope, AxialRoPE2D)
                    else apply_mixed_rope_2d(q, rows, cols, rope.freqs))
        torch.testing.assert_close(big.rotate_qk(q, k, _arange(37))[0], expected)
        extrapolated = rope.regrid((4, 4), (6, 6), 1)
        assert extrapolated.scale == (1.0, 1.0)


def test_peg_is_carried_to_a_larger_grid_with_its_convolution():
    from posenc_lib.conditional.peg import PEG

    torch.manual_seed(0)
    small = PEG(8, 4, 4, n_prefix=1)
    big = small.regrid((4, 4), (6, 6), 1)
    assert (big.grid_h, big.grid_w, big.n_prefix) == (6, 6, 1)
    torch.testing.assert_close(big.conv.weight, small.conv.weight)
    torch.testing.assert_close(big.conv.bias, small.conv.bias)
    assert big.add_to_embeddings(torch.randn(2, 37, 8), _arange(37)).shape == (2, 37, 8)
