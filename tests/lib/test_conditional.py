"""PEG (conditional position encoding): a depthwise conv on the token grid, and the absolute
position that its zero padding leaks."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from posenc_lib.conditional.peg import PEG, peg
from posenc_lib.models import TinyTransformer


def _peg(d=4, h=4, w=5, kernel_size=3, n_prefix=0, seed=0) -> PEG:
    torch.manual_seed(seed)
    return PEG(d, h, w, kernel_size=kernel_size, n_prefix=n_prefix)


def test_peg_equals_residual_depthwise_conv2d():
    module = _peg(d=6, h=3, w=4, kernel_size=3, n_prefix=1)
    x = torch.randn(2, 1 + 12, 6)
    out = module.add_to_embeddings(x, torch.arange(13)[None])
    grid = x[:, 1:].transpose(1, 2).reshape(2, 6, 3, 4)
    conv = nn.Conv2d(6, 6, 3, padding=1, groups=6)
    conv.load_state_dict(module.conv.state_dict())
    expected = x[:, 1:] + conv(grid).flatten(2).transpose(1, 2)
    torch.testing.assert_close(out[:, 1:], expected)
    torch.testing.assert_close(out[:, 0], x[:, 0], rtol=0, atol=0)  # prefix passes through
    torch.testing.assert_close(peg(x, module.conv.weight, module.conv.bias, 3, 4, n_prefix=1), out)


@pytest.mark.parametrize("kernel_size", [3, 5])
def test_zero_padding_leaks_absolute_position(kernel_size):
    """A constant grid comes out position-dependent: borders differ from the interior by the kernel
    weights that fall on the zero padding. With circular padding the same conv gives a constant."""
    h, w, d, value = 7, 8, 3, 1.5
    module = _peg(d=d, h=h, w=w, kernel_size=kernel_size)
    x = torch.full((1, h * w, d), value)
    with torch.no_grad():
        out = module.add_to_embeddings(x, torch.arange(h * w)[None]).reshape(h, w, d)
        weight, bias = module.conv.weight[:, 0], module.conv.bias  # (d, k, k), (d,)
    r = kernel_size // 2
    interior = out[r : h - r, r : w - r]
    torch.testing.assert_close(interior, (value + value * weight.sum((1, 2)) + bias).expand_as(interior))
    corner = value + value * weight[:, r:, r:].sum((1, 2)) + bias  # top-left: only the lower-right part sees tokens
    torch.testing.assert_close(out[0, 0], corner)
    assert (out[0, 0] - out[h // 2, w // 2]).abs().min() > 1e-3, "corner and centre must differ"
    distinct_vectors = torch.unique(out.reshape(-1, d), dim=0).shape[0]
    assert distinct_vectors == (2 * r + 1) ** 2, "each border band (and the interior) gets its own vector"
    circular = nn.Conv2d(d, d, kernel_size, padding=r, groups=d, padding_mode="circular")
    circular.load_state_dict(module.conv.state_dict())
    with torch.no_grad():
        y = circular(torch.full((1, d, h, w), value))
    torch.testing.assert_close(y, y[..., :1, :1].expand_as(y))  # no border, no position


def test_peg_is_translation_equivariant_away_from_borders():
    h, w, d = 8, 8, 2
    module = _peg(d=d, h=h, w=w)
    grid = torch.zeros(1, h, w, d)
    grid[0, 3, 3] = torch.tensor([1.0, -2.0])
    moved = grid.roll(shifts=(1, 2), dims=(1, 2))
    with torch.no_grad():
        a = module.add_to_embeddings(grid.reshape(1, -1, d), torch.arange(h * w)[None]).reshape(h, w, d)
        b = module.add_to_embeddings(moved.reshape(1, -1, d), torch.arange(h * w)[None]).reshape(h, w, d)
    torch.testing.assert_close(b[2:7, 2:7], a[1:6, 0:5])


def test_peg_in_a_model_and_errors():
    torch.manual_seed(0)
    model = TinyTransformer(9, 3, d_model=16, n_heads=2, n_layers=1, scheme=PEG(16, 2, 3, n_prefix=1), pool="first")
    assert model(torch.randint(0, 9, (2, 7))).shape == (2, 3)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, n_prefix \+ grid_h\*grid_w"):
        model(torch.randint(0, 9, (2, 8)))
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        PEG(16, 2, 3, kernel_size=4)


def test_circular_padding_is_exactly_translation_equivariant_and_leaks_nothing():
    h, w, d = 5, 6, 3
    module = PEG(d, h, w, padding="circular")
    x = torch.randn(2, h * w, d)
    with torch.no_grad():
        out = module.add_to_embeddings(x, torch.arange(h * w)[None]).reshape(2, h, w, d)
        rolled = x.reshape(2, h, w, d).roll(shifts=(2, 3), dims=(1, 2)).reshape(2, h * w, d)
        out_rolled = module.add_to_embeddings(rolled, torch.arange(h * w)[None]).reshape(2, h, w, d)
        constant = module.add_to_embeddings(torch.full((1, h * w, d), 1.5), None)
    torch.testing.assert_close(out_rolled, out.roll(shifts=(2, 3), dims=(1, 2)))
    torch.testing.assert_close(constant, constant[:, :1].expand_as(constant))  # no border, no position
    conv = nn.Conv2d(d, d, 3, padding=1, groups=d, padding_mode="circular")
    conv.load_state_dict(module.conv.state_dict())
    grid = x.transpose(1, 2).reshape(2, d, h, w)
    with torch.no_grad():
        torch.testing.assert_close(out, (grid + conv(grid)).permute(0, 2, 3, 1))
    assert "padding='circular'" in repr(module)
    with pytest.raises(ValueError, match="padding must be"):
        PEG(d, h, w, padding="reflect")
    with pytest.raises(ValueError, match="padding must be"):
        peg(x, module.conv.weight, None, h, w, padding="same")
