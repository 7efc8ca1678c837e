"""Build any position scheme of the library from its name and the model's sizes.

    build_scheme("rope", d_model=64, n_heads=4)                      # RotaryPE(head_dim=16)
    build_scheme("alibi", d_model=64, n_heads=4, causal=False)       # ALiBi(4, causal=False)
    build_scheme("transformer-xl", d_model=64, n_heads=4)            # TransformerXLRelative(64, 4)
    build_scheme("learnable", d_model=64, n_heads=4, max_len=128)    # LearnablePE(64, 128)
    build_scheme("axial-rope-2d", d_model=64, n_heads=4, grid=(4, 4), n_prefix=1)
    build_scheme("mrope", d_model=64, n_heads=4, grid=(4, 4), n_prefix=2, frames=3)  # 2 text tokens, a 3x4x4 video

The sizes say what each constructor needs from the model: ``d_model`` (tables, PEG, Transformer-XL's ``r``),
``head_dim = d_model // n_heads`` (rotary), ``n_heads`` (score biases, mixed 2-D RoPE),
``max_len`` (the tables; with a grid, ``n_prefix + H*W`` by default), ``grid`` (the 2-D schemes, PEG, Swin's
window; M-RoPE's video frames, after ``n_prefix`` text tokens). Any other keyword goes to the constructor as it
is (``layout=``, ``base=``, ``scaling=``, ``causal=``, ...), except M-RoPE's ``frames`` and ``n_text_after``
(its layout) and decoupled RoPE's ``rope_dim``. One entry of :data:`SCHEMES` per scheme.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from posenc_lib.checks import check_grid, check_int
from posenc_lib.conditional.peg import PEG
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative
from posenc_lib.rotary.decoupled import DecoupledRoPE
from posenc_lib.rotary.mrope import MRoPE, mrope_positions
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.rotary.rope_2d import AxialRoPE2D, MixedRoPE2D
from posenc_lib.rotary.temperature import QueryTemperature
from posenc_lib.scheme import NoPosition, PositionScheme
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.swin import SwinRelativeBias
from posenc_lib.score_bias.t5 import T5RelativeBias

__all__ = ["Sizes", "SCHEMES", "build_scheme"]


@dataclass(frozen=True)
class Sizes:
    """The model's sizes a scheme is built for."""

    d_model: int
    n_heads: int
    max_len: int | None = None
    grid: tuple[int, int] | None = None
    n_prefix: int = 0

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def table_len(self, name: str) -> int:
        """Rows of a position table: ``max_len``, or the tokens of the grid (prefix included)."""
        if self.max_len is not None:
            return self.max_len
        if self.grid is not None:
            return self.n_prefix + self.grid[0] * self.grid[1]
        raise ValueError(f"scheme {name!r} is a table: give max_len (or grid), got neither")

    def grid_hw(self, name: str) -> tuple[int, int]:
        """(grid_h, grid_w), required by the 2-D schemes."""
        if self.grid is None:
            raise ValueError(f"scheme {name!r} works on a patch grid: give grid=(grid_h, grid_w), got None")
        return self.grid


Builder = Callable[[Sizes, dict[str, Any]], PositionScheme]


def _mrope(s: Sizes, kw: dict[str, Any]) -> MRoPE:
    """M-RoPE over ``n_prefix`` text tokens then a video of ``frames`` (option, default 1: an image) x the grid."""
    frames, after = kw.pop("frames", 1), kw.pop("n_text_after", 0)
    coordinates = mrope_positions(frames, *s.grid_hw("mrope"), n_text_before=s.n_prefix, n_text_after=after)
    return MRoPE(s.head_dim, coordinates, **kw)


def _decoupled(s: Sizes, kw: dict[str, Any]) -> DecoupledRoPE:
    """Decoupled RoPE: the head's last ``rope_dim`` dims rotate (option, default half the head), the rest do not."""
    rope_dim = kw.pop("rope_dim", s.head_dim // 2)
    return DecoupledRoPE(s.head_dim - rope_dim, rope_dim, **kw)


#: name -> how to build that scheme from the sizes and the constructor's other keywords.
SCHEMES: dict[str, Builder] = {
    "none": lambda s, kw: NoPosition(**kw),
    "sinusoidal": lambda s, kw: SinusoidalPE(s.d_model, s.table_len("sinusoidal"), **kw),
    "learnable": lambda s, kw: LearnablePE(s.d_model, s.table_len("learnable"), **kw),
    "rope": lambda s, kw: RotaryPE(s.head_dim, **kw),
    "mrope": _mrope,
    "decoupled-rope": _decoupled,
    "query-temperature": lambda s, kw: QueryTemperature(**kw),
    "t5": lambda s, kw: T5RelativeBias(s.n_heads, **kw),
    "alibi": lambda s, kw: ALiBi(s.n_heads, **kw),
    "transformer-xl": lambda s, kw: TransformerXLRelative(s.d_model, s.n_heads, **kw),
    "swin": lambda s, kw: SwinRelativeBias(s.n_heads, *s.grid_hw("swin"), n_prefix=s.n_prefix, **kw),
    "peg": lambda s, kw: PEG(s.d_model, *s.grid_hw("peg"), n_prefix=s.n_prefix, **kw),
    "sincos-2d": lambda s, kw: SinCos2DPE(s.d_model, *s.grid_hw("sincos-2d"), n_prefix=s.n_prefix, **kw),
    "learnable-2d": lambda s, kw: Learnable2DPE(s.d_model, *s.grid_hw("learnable-2d"), n_prefix=s.n_prefix, **kw),
    "axial-rope-2d": lambda s, kw: AxialRoPE2D(s.head_dim, *s.grid_hw("axial-rope-2d"), n_prefix=s.n_prefix, **kw),
    "mixed-rope-2d": lambda s, kw: MixedRoPE2D(
        s.head_dim, s.n_heads, *s.grid_hw("mixed-rope-2d"), n_prefix=s.n_prefix, **kw
    ),
}


def build_scheme(
    name: str,
    d_model: int,
    n_heads: int,
    max_len: int | None = None,
    grid: tuple[int, int] | None = None,
    n_prefix: int = 0,
    **options: Any,
) -> PositionScheme:
    """A fresh scheme ``name`` (one of :data:`SCHEMES`) for a model of width d_model with n_heads heads.

    Args:
        name: "none", "sinusoidal", "learnable", "rope", "mrope", "decoupled-rope", "query-temperature", "t5",
            "alibi", "transformer-xl", "swin", "peg", "sincos-2d", "learnable-2d", "axial-rope-2d" or "mixed-rope-2d".
        d_model, n_heads: the model's width and heads (d_model divisible by n_heads).
        max_len: rows of a position table (a sinusoidal one still grows on demand past it).
        grid: (grid_h, grid_w) of the patch grid, for the 2-D schemes, PEG, Swin and M-RoPE.
        n_prefix: class-like tokens before the patches (with ``grid``); M-RoPE: text tokens before the video.
        options: passed on to the scheme's constructor.
    """
    if name not in SCHEMES:
        raise ValueError(f"name must be one of {list(SCHEMES)}, got {name!r}")
    check_int("d_model", d_model)
    check_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model must be a multiple of n_heads, got d_model={d_model}, n_heads={n_heads}")
    if max_len is not None:
        check_int("max_len", max_len)
    if grid is not None:
        if not (isinstance(grid, (tuple, list)) and len(grid) == 2):
            raise ValueError(f"grid must be a (grid_h, grid_w) pair, got {grid!r}")
        check_grid(grid[0], grid[1], n_prefix)
        grid = (grid[0], grid[1])
    return SCHEMES[name](Sizes(d_model, n_heads, max_len, grid, n_prefix), options)
