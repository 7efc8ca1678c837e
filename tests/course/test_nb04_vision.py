"""Notebook 04's scheme catalogue (posenc_course.nb04_vision): a tiny ViT for each scheme, carried to
another grid with each scheme's regrid, and the similarity maps the notebook draws."""

from __future__ import annotations

import torch

from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE, sincos_2d_table
from posenc_lib.grid import resample_grid
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope_2d import MixedRoPE2D


# ----------------------------------------------------------------------------- a tiny ViT's schemes


def _vit(name: str, grid: int = 3):
    from posenc_course.nb04_vision import vit_scheme
    from posenc_lib.grid import PatchEmbed

    scheme = vit_scheme(name, 16, 2, grid, grid, n_prefix=1)
    return TinyTransformer(None, 4, d_model=16, n_heads=2, n_layers=2, scheme=scheme, pool="first",
                           embed=PatchEmbed(1, 16, 2, n_prefix=1))


def test_vit_schemes_are_the_eight_kinds():
    from posenc_course.nb04_vision import VIT_SCHEMES

    kinds = {name: _vit(name).scheme.kind for name in VIT_SCHEMES}
    assert kinds == {"none": "none", "1-D learnable": "embedding", "1-D sinusoidal": "embedding", "2-D learnable": "embedding",
                     "2-D sin-cos": "embedding", "axial RoPE": "rotary", "mixed RoPE": "rotary", "PEG": "embedding"}


def test_regrid_to_the_same_grid_changes_nothing_and_set_scheme_reaches_every_layer():
    from posenc_course.nb04_vision import VIT_SCHEMES, regrid_scheme

    torch.manual_seed(0)
    images = torch.randn(3, 2, 3, 3)
    for name in VIT_SCHEMES:
        model = _vit(name)
        before = model(images)
        new = regrid_scheme(model.scheme, (3, 3), (3, 3), n_prefix=1)
        model.set_scheme(new)
        assert model.scheme is new and all(block.attn.scheme is new for block in model.blocks)
        torch.testing.assert_close(model(images), before, msg=name)


def test_regrid_to_a_larger_grid():
    from posenc_course.nb04_vision import regrid_scheme

    torch.manual_seed(0)
    model = _vit("1-D learnable")
    table = model.scheme.weight.detach()
    new = regrid_scheme(model.scheme, (3, 3), (5, 4), n_prefix=1)
    torch.testing.assert_close(new.weight.detach(), resample_grid(table, (3, 3), (5, 4), n_prefix=1))
    two_d = Learnable2DPE(8, 3, 3, n_prefix=1)
    big = regrid_scheme(two_d, (3, 3), (6, 6), n_prefix=1)
    assert big.row.shape == (6, 8) and big.col.shape == (6, 8)
    torch.testing.assert_close(big.prefix, two_d.prefix)
    sincos = regrid_scheme(SinCos2DPE(8, 3, 3, n_prefix=1, base=50.0), (3, 3), (5, 5), n_prefix=1)
    torch.testing.assert_close(sincos.table(), sincos_2d_table(5, 5, 8, base=50.0, n_prefix=1))
    mixed = MixedRoPE2D(8, 2, 3, 3, n_prefix=1)
    moved = regrid_scheme(mixed, (3, 3), (5, 5), n_prefix=1)
    torch.testing.assert_close(moved.freqs, mixed.freqs)
    assert (moved.grid_h, moved.grid_w) == (5, 5)
    model = _vit("axial RoPE")
    model.set_scheme(regrid_scheme(model.scheme, (3, 3), (5, 5), n_prefix=1))
    assert model(torch.randn(2, 2, 5, 5)).shape == (2, 4)


def test_grid_similarity_of_a_2d_table():
    from posenc_course.nb04_vision import grid_similarity

    table = sincos_2d_table(3, 4, 16, n_prefix=1)
    sim = grid_similarity(table, 3, 4, n_prefix=1)
    assert sim.shape == (3, 4, 3, 4)
    torch.testing.assert_close(sim[1, 2, 1, 2], torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(sim, sim.permute(2, 3, 0, 1))  # symmetric
    assert sim[0, 0, 0, 1] > sim[0, 0, 0, 3]  # nearer columns are more alike


def test_attention_weights_are_those_of_the_layer():
    torch.manual_seed(0)
    model = _vit("axial RoPE")
    images = torch.randn(2, 2, 3, 3)
    weights = model.attention_weights(images)[1]
    assert weights.shape == (2, 2, 10, 10)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 10))
    # recompute layer 1's weights by hand from the model's pieces
    x = model.embed(images)
    pos = torch.arange(10)[None]
    x = model.blocks[0](x, pos, None, False, None)
    _, w = model.blocks[1].attn(model.blocks[1].ln1(x), pos, return_weights=True)
    torch.testing.assert_close(weights, w)




# ----------------------------------------------------------------------------- the column-gap control


def test_column_gap_labels_pairs_by_the_column_offset_in_patches():
    from posenc_course.nb04_vision import ColumnGap

    task = ColumnGap(4, 4, gap=2)
    cells, labels = task.pairs()
    assert len(labels) == 16 * 15 and labels.sum().item() == 3 * 16  # column pairs (0,2) (1,3) (0,3), any rows
    offsets = task.column_offsets(cells)
    assert torch.equal(labels, (offsets >= 2).long())
    images = task.render(cells[:5])
    assert images.shape == (5, 2, 4, 4) and torch.equal(images.sum((2, 3)), torch.ones(5, 2))
    # the same offset keeps its label on a larger canvas: the rule is in patch units, not image units
    big_cells, big_labels = ColumnGap(6, 6, gap=2).pairs()
    assert torch.equal(big_labels, (ColumnGap(6, 6).column_offsets(big_cells) >= 2).long())
    assert big_labels.sum().item() == (4 + 3 + 2 + 1) * 36


def test_column_gap_split_is_balanced_disjoint_and_seeded():
    from posenc_course.nb04_vision import ColumnGap

    task = ColumnGap(4, 4)
    (train_cells, train_y), (test_cells, test_y) = task.split(16, None, torch.Generator().manual_seed(0))
    assert torch.bincount(test_y).tolist() == [16, 16] and torch.bincount(train_y).tolist() == [32, 32]
    assert not {tuple(c) for c in train_cells.tolist()} & {tuple(c) for c in test_cells.tolist()}
    again = task.split(16, None, torch.Generator().manual_seed(0))
    assert torch.equal(again[1][0], test_cells)
    (few, few_y), _ = task.split(16, 10, torch.Generator().manual_seed(0))
    assert torch.bincount(few_y).tolist() == [10, 10]


def test_column_gap_rejects_bad_input():
    import pytest

    from posenc_course.nb04_vision import ColumnGap

    with pytest.raises(ValueError, match="grid_w must be an int >= 2"):
        ColumnGap(4, 1)
    with pytest.raises(ValueError, match="gap must be an int from 1 to grid_w - 1 = 3"):
        ColumnGap(4, 4, gap=4)
    task = ColumnGap(4, 4)
    with pytest.raises(ValueError, match="n_test must be an int from 1 to 47"):
        task.split(48, None, torch.Generator())
    with pytest.raises(ValueError, match="n_train must be None or an int from 1 to 32"):
        task.split(16, 33, torch.Generator())
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        task.split(16, None, 0)
