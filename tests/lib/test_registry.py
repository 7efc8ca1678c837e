"""posenc_lib.registry: every scheme by name, built as its constructor builds it."""

from __future__ import annotations

import pytest
import torch

from posenc_lib.conditional.peg import PEG
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative
from posenc_lib.registry import SCHEMES, build_scheme
from posenc_lib.rotary.decoupled import DecoupledRoPE
from posenc_lib.rotary.mrope import MRoPE, mrope_positions
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.rotary.rope_2d import AxialRoPE2D, MixedRoPE2D
from posenc_lib.rotary.temperature import QueryTemperature
from posenc_lib.scheme import NoPosition
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.swin import SwinRelativeBias
from posenc_lib.score_bias.t5 import T5RelativeBias

D, H, L, GRID = 32, 4, 16, (3, 4)
DIRECT = {
    "none": lambda: NoPosition(),
    "sinusoidal": lambda: SinusoidalPE(D, L),
    "learnable": lambda: LearnablePE(D, L),
    "rope": lambda: RotaryPE(D // H),
    "mrope": lambda: MRoPE(D // H, mrope_positions(1, *GRID, n_text_before=1)),
    "decoupled-rope": lambda: DecoupledRoPE(D // H // 2, D // H // 2),
    "query-temperature": lambda: QueryTemperature(),
    "t5": lambda: T5RelativeBias(H),
    "alibi": lambda: ALiBi(H),
    "transformer-xl": lambda: TransformerXLRelative(D, H),
    "swin": lambda: SwinRelativeBias(H, *GRID, n_prefix=1),
    "peg": lambda: PEG(D, *GRID, n_prefix=1),
    "sincos-2d": lambda: SinCos2DPE(D, *GRID, n_prefix=1),
    "learnable-2d": lambda: Learnable2DPE(D, *GRID, n_prefix=1),
    "axial-rope-2d": lambda: AxialRoPE2D(D // H, *GRID, n_prefix=1),
    "mixed-rope-2d": lambda: MixedRoPE2D(D // H, H, *GRID, n_prefix=1),
}


def test_every_scheme_has_a_name():
    assert set(SCHEMES) == set(DIRECT)


@pytest.mark.parametrize("name", list(DIRECT))
def test_build_scheme_equals_the_constructor(name):
    torch.manual_seed(0)
    expected = DIRECT[name]()
    torch.manual_seed(0)
    built = build_scheme(name, D, H, max_len=L, grid=GRID, n_prefix=1)
    assert type(built) is type(expected)
    assert repr(built) == repr(expected)
    for (key, a), (key_b, b) in zip(expected.state_dict().items(), built.state_dict().items(), strict=True):
        assert key == key_b and torch.equal(a, b)


def test_options_reach_the_constructor():
    assert build_scheme("rope", D, H, layout="interleaved", base=500.0).layout == "interleaved"
    assert build_scheme("alibi", D, H, causal=False).requires_causal is False
    assert build_scheme("learnable", D, H, grid=GRID, n_prefix=1).max_len == 1 + 12
    video = build_scheme("mrope", D, H, grid=GRID, n_prefix=2, frames=3, n_text_after=1, mrope_interleaved=True)
    assert torch.equal(video.coordinates, mrope_positions(3, *GRID, n_text_before=2, n_text_after=1)) and video.mrope_interleaved
    assert build_scheme("decoupled-rope", D, H, rope_dim=2).nope_dim == D // H - 2


@pytest.mark.parametrize("call, message", [
    (lambda: build_scheme("nope", D, H), r"name must be one of \[.*'rope'.*\], got 'nope'"),
    (lambda: build_scheme("learnable", D, H), r"scheme 'learnable' is a table: give max_len \(or grid\)"),
    (lambda: build_scheme("peg", D, H), r"scheme 'peg' works on a patch grid: give grid=\(grid_h, grid_w\), got None"),
    (lambda: build_scheme("rope", 30, 4), r"d_model must be a multiple of n_heads, got d_model=30, n_heads=4"),
    (lambda: build_scheme("swin", D, H, grid=(3, 0)), r"grid_w must be an int >= 1, got 0"),
])
def test_bad_arguments_name_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()
